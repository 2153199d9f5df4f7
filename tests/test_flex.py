"""1-D flexes (cables) against MuJoCo 4.0: compiled flex fields, edge lengths, the flex equality
rows and edge spring-dampers, forward and a few hundred steps of a swinging rope."""

import numpy as np
import pytest

import kinedyn as kd

mujoco = pytest.importorskip("mujoco")


def rope(n=5, equality=True, stiffness=0.0, damping=0.0, integrator="Euler", extra=""):
    """A rope of n vertex bodies hanging from a static first body, bent so that it swings."""
    bodies = ['<body name="b0" pos="0 0 1"/>']
    for i in range(1, n):
        bodies.append(f'<body name="b{i}" pos="{0.1 * i} 0.01 {1 - 0.02 * i * i}">'
                      '<joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>'
                      '<joint type="slide" axis="0 0 1"/>'
                      f'<inertial pos="0 0 0" mass="{0.1 + 0.01 * i}" diaginertia="1e-4 1e-4 1e-4"/></body>')
    names = " ".join(f"b{i}" for i in range(n))
    elem = " ".join(f"{i} {i + 1}" for i in range(n - 1))
    eq = '<equality><flex flex="rope" solref="0.01 1"/></equality>' if equality else ""
    return (f'<mujoco><option integrator="{integrator}" timestep="0.002"/><worldbody>{"".join(bodies)}'
            f'</worldbody><deformable><flex name="rope" dim="1" body="{names}" element="{elem}">'
            f'<edge stiffness="{stiffness}" damping="{damping}"/><contact contype="0" conaffinity="0"/>'
            f'</flex></deformable>{eq}{extra}</mujoco>')


def _pair(xml):
    return mujoco.MjModel.from_xml_string(xml), kd.Model.from_xml_string(xml)


def _close(a, b, rtol=1e-9, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_flex_fields_and_forward():
    mm, km = _pair(rope())
    for name in ("flex_dim", "flex_vertadr", "flex_vertnum", "flex_edgeadr", "flex_edgenum", "flex_edge",
                 "flex_vertbodyid", "flexedge_rigid", "flex_rigid", "flex_edgeequality",
                 "flexedge_length0", "flexedge_invweight0", "eq_type", "eq_obj1id", "eq_objtype"):
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    md.qvel[:] = kdd.qvel[:] = np.linspace(-0.3, 0.4, mm.nv)
    mujoco.mj_forward(mm, md)
    kd.forward(km, kdd)
    _close(kdd.flexvert_xpos, md.flexvert_xpos)
    _close(kdd.flexedge_length, md.flexedge_length)
    _close(kdd.flexedge_velocity, md.flexedge_velocity)
    assert kdd.efc_counts[0] == md.ne == 4
    nefc = md.nefc
    _close(kdd.efc_J[:nefc], md.efc_J.reshape(nefc, mm.nv))
    _close(kdd.efc_pos[:nefc], md.efc_pos)
    _close(kdd.qacc, md.qacc)
    _close(kdd.qfrc_constraint, md.qfrc_constraint)


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicit", "implicitfast"])
def test_rope_with_edge_constraints_steps(integrator):
    mm, km = _pair(rope(integrator=integrator))
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(300):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicit", "implicitfast"])
def test_rope_with_edge_springs_steps(integrator):
    mm, km = _pair(rope(equality=False, stiffness=200.0, damping=0.5, integrator=integrator))
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(300):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qfrc_spring, md.qfrc_spring, rtol=1e-8, atol=1e-9)
    _close(kdd.qfrc_damper, md.qfrc_damper, rtol=1e-8, atol=1e-9)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# three pendulums (separate trees) joined by a cable through points offset in their frames
OFFSETS = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="a" pos="0 0 1"><joint type="hinge" axis="0 1 0"/>
    <inertial pos="0.1 0 0" mass="0.3" diaginertia="1e-3 2e-3 3e-3"/></body>
  <body name="b" pos="0.3 0 1" euler="0 20 0"><joint type="hinge" axis="0 1 0"/>
    <joint type="hinge" axis="1 0 0"/><inertial pos="0.1 0 0" mass="0.2" diaginertia="1e-3 2e-3 3e-3"/></body>
  <body name="c" pos="0.6 0.05 1"><joint type="ball"/>
    <inertial pos="0 0 -0.1" mass="0.25" diaginertia="2e-3 2e-3 1e-3"/></body>
</worldbody><deformable><flex name="cable" dim="1" body="a b c"
  vertex="0.2 0 0  0.05 0.02 -0.1  0 0 -0.2" element="0 1 1 2">
  <contact contype="0" conaffinity="0"/></flex></deformable>
<equality><flex flex="cable"/></equality></mujoco>"""


def test_vertex_offsets_in_rotating_bodies():
    mm, km = _pair(OFFSETS)
    _close(km.flex_vert, mm.flex_vert.reshape(-1, 3))
    _close(km.flexedge_length0, mm.flexedge_length0)
    _close(km.flexedge_invweight0, mm.flexedge_invweight0)
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(200):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.flexvert_xpos, md.flexvert_xpos)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# a <flexcomp> cable: one end pinned to a body, moved and turned by pos and quat
FLEXCOMP = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="holder" pos="0 0 1">
    <flexcomp name="cable" type="grid" dim="1" count="6 1 1" spacing="0.05 0.05 0.05" mass="0.3"
        inertiabox="0.01" pos="0.1 0 0" quat="0.9 0 0.3 0.1">
      <pin id="0"/><edge equality="true" solref="0.01 1"/><contact contype="0" conaffinity="0"/>
    </flexcomp>
  </body>
</worldbody></mujoco>"""


def test_flexcomp_cable():
    mm, km = _pair(FLEXCOMP)
    assert km.nbody == mm.nbody and km.neq == mm.neq == 1
    for name in ("body_pos", "body_mass", "body_inertia", "body_parentid", "jnt_type", "flex_vert",
                 "flex_vertbodyid", "flex_edge", "flexedge_length0", "flexedge_invweight0", "eq_solref"):
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(200):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# a pinned cloth: a 4 x 3 grid <flexcomp dim="2"> turned by quat, two corners pinned to the holder
CLOTH = """<mujoco><option timestep="0.002" integrator="{integrator}"/><worldbody>
  <body name="holder" pos="0 0 1">
    <flexcomp name="cloth" type="grid" dim="2" count="4 3 1" spacing="0.05 0.04 0.05" mass="0.3"
        inertiabox="0.01" pos="0.1 0 0" quat="0.9 0.1 0.3 0.1">
      <pin id="0 2"/><edge equality="true" solref="0.01 1" damping="{damping}"/>
      <contact contype="0" conaffinity="0"/><elasticity/>
    </flexcomp>
  </body>
</worldbody></mujoco>"""

FLEX_FIELDS = ("flex_dim", "flex_vertadr", "flex_vertnum", "flex_edgeadr", "flex_edgenum", "flex_edge",
               "flex_elem", "flex_elemadr", "flex_elemnum", "flex_elemdataadr", "flex_elemedge",
               "flex_elemedgeadr", "flex_vert", "flex_vertbodyid", "flexedge_rigid", "flex_rigid",
               "flex_edgeequality", "flex_edgedamping", "flexedge_length0", "flexedge_invweight0")


def test_cloth_fields_and_forward():
    mm, km = _pair(CLOTH.format(integrator="Euler", damping=0.0))
    assert (km.nflexelem, km.nflexelemdata, km.nflexelemedge) == (mm.nflexelem, mm.nflexelemdata,
                                                                  mm.nflexelemedge) == (12, 36, 36)
    for name in (*FLEX_FIELDS, "body_pos", "body_mass", "body_inertia", "eq_type", "eq_obj1id", "eq_solref"):
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    md.qvel[:] = kdd.qvel[:] = np.linspace(-0.3, 0.4, mm.nv)
    mujoco.mj_forward(mm, md)
    kd.forward(km, kdd)
    _close(kdd.flexvert_xpos, md.flexvert_xpos)
    _close(kdd.flexedge_length, md.flexedge_length)
    _close(kdd.flexedge_velocity, md.flexedge_velocity)
    nefc = md.nefc
    assert kdd.efc_counts[0] == md.ne == nefc == 23  # one row per edge
    _close(kdd.efc_J[:nefc], md.efc_J.reshape(nefc, mm.nv))
    _close(kdd.efc_pos[:nefc], md.efc_pos)
    _close(kdd.qacc, md.qacc)


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicit", "implicitfast"])
def test_cloth_steps(integrator):
    """The pinned cloth with edge constraints and edge damping, 300 steps."""
    mm, km = _pair(CLOTH.format(integrator=integrator, damping=0.2))
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(300):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qfrc_damper, md.qfrc_damper, rtol=1e-8, atol=1e-9)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# a 2-D <flex> of two triangles given in an order that makes the edges out of MuJoCo's sorted
# order, over bodies with vertex offsets
TRIANGLES = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="a" pos="0 0 1"/>
  <body name="b" pos="0.2 0 1"><freejoint/><geom size="0.02" mass="0.1"/></body>
  <body name="c" pos="0.1 0.15 1.02"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>
    <geom size="0.02" mass="0.2"/></body>
  <body name="e" pos="0.25 0.2 0.98"><freejoint/><geom type="box" size="0.02 0.01 0.03" mass="0.15"/></body>
</worldbody><deformable><flex name="sheet" dim="2" body="c a e b"
  vertex="0 0 0  0.01 0 0  0 0.02 0  0.01 0.01 0" element="3 0 1  2 3 0">
  <edge damping="0.3"/><contact contype="0" conaffinity="0"/></flex></deformable>
<equality><flex flex="sheet"/></equality></mujoco>"""


def test_flex_triangles():
    mm, km = _pair(TRIANGLES)
    for name in FLEX_FIELDS:
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(200):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.flexedge_length, md.flexedge_length)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# an elastic cloth: 2-D stretch (MuJoCo 4.0's per-triangle edge metric) and bending (its flap model)
# elasticity, light edge damping
ELASTIC = """<mujoco><option timestep="0.001" integrator="{integrator}"/><worldbody>
  <body name="holder" pos="0 0 1" euler="10 20 0">
    <flexcomp name="cloth" type="grid" dim="2" count="4 3 1" spacing="0.05 0.04 0.05" mass="0.3"
        inertiabox="0.01" pos="0.1 0 0" quat="0.9 0.1 0.3 0.1">
      <pin id="0 2"/><contact contype="0" conaffinity="0"/><edge damping="0.01"/>
      <elasticity young="{young}" poisson="0.3" thickness="0.01" elastic2d="{mode}"/>
    </flexcomp>
  </body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("integrator, young, mode", [("Euler", 1e4, "stretch"), ("RK4", 3e4, "both"),
                                                     ("Euler", 2e4, "bend")])
def test_elastic_cloth(integrator, young, mode):
    mm, km = _pair(ELASTIC.format(integrator=integrator, young=young, mode=mode))
    assert km.nflexstiffness == mm.nflexstiffness == 21 * 12
    assert km.nflexbending == mm.nflexbending == (0 if mode == "stretch" else 17 * 23)
    for name in ("flex_stiffnessadr", "flex_bendingadr", "flex_edgeflap"):
        _close(getattr(km, name), np.asarray(getattr(mm, name)).reshape(np.shape(getattr(km, name))))
    _close(km.flex_stiffness, mm.flex_stiffness, rtol=1e-12, atol=1e-12)
    # the curved-rest term of a flat cloth is rounding noise (~1e-14 of the flap terms) in both
    _close(km.flex_bending, mm.flex_bending, rtol=1e-12, atol=1e-13)
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(300):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qfrc_spring, md.qfrc_spring, rtol=1e-8, atol=1e-9)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# a soft body: a 3 x 2 x 2 grid <flexcomp dim="3"> (12 tetrahedra) in a turned holder, two points pinned
SOFT = """<mujoco><option timestep="0.002" integrator="{integrator}"/><worldbody>
  <body name="holder" pos="0 0 1" euler="10 20 30">
    <flexcomp name="soft" type="grid" dim="3" count="3 2 2" spacing="0.05 0.04 0.06" mass="0.3"
        inertiabox="0.01" pos="0.1 0 0" quat="0.9 0.1 0.3 0.1">
      <pin id="0 1"/><edge equality="true" solref="0.01 1" damping="0.1"/>
      <contact contype="0" conaffinity="0"/>
    </flexcomp>
  </body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_soft_body_grid(integrator):
    mm, km = _pair(SOFT.format(integrator=integrator))
    assert km.nflexelem == mm.nflexelem == 12
    for name in (*FLEX_FIELDS, "body_pos", "body_mass"):
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(300):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


# a 3-D <flex> of two tetrahedra over bodies with vertex offsets, some turned; the second
# tetrahedron is given inside out, so the compiler must reorder it as MuJoCo does
TETS = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="a" pos="0 0 1" euler="0 0 90"/>
  <body name="b" pos="0.2 0 1" euler="180 0 0"><freejoint/><geom size="0.02" mass="0.1"/></body>
  <body name="c" pos="0.1 0.15 1.02"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>
    <geom size="0.02" mass="0.2"/></body>
  <body name="e" pos="0.1 0.05 1.2"><freejoint/><geom type="box" size="0.02 0.01 0.03" mass="0.15"/></body>
  <body name="g" pos="0.1 0.05 0.8"><joint type="slide" axis="0 1 0"/><geom size="0.02" mass="0.12"/></body>
</worldbody><deformable><flex name="blob" dim="3" body="c a e b g"
  vertex="0 0 0  0.01 0 0  0 0.02 0  0.01 0.01 0  0 0 0.01" element="0 1 2 3  0 2 1 4">
  <edge damping="0.3"/><contact contype="0" conaffinity="0"/></flex></deformable>
<equality><flex flex="blob"/></equality></mujoco>"""


def test_flex_tetrahedra():
    mm, km = _pair(TETS)
    assert list(km.flex_elem) == list(mm.flex_elem) == [0, 1, 2, 3, 0, 1, 2, 4]  # the second one reordered
    for name in FLEX_FIELDS:
        _close(np.asarray(getattr(km, name), float).ravel(), np.asarray(getattr(mm, name), float).ravel())
    md, kdd = mujoco.MjData(mm), kd.Data(km)
    for _ in range(200):
        mujoco.mj_step(mm, md)
        kd.step(km, kdd)
    _close(kdd.qpos, md.qpos, rtol=1e-9, atol=1e-10)
    _close(kdd.qvel, md.qvel, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("xml, what", [
    (rope().replace('dim="1"', 'dim="4"'), "dim must be 1, 2 or 3"),
    (TRIANGLES.replace('<edge damping="0.3"/>', '<edge stiffness="10"/>')
     .replace('<equality><flex flex="sheet"/></equality>', ""), "edge stiffness only available for dim=1"),
    (ELASTIC.format(integrator="implicitfast", young=1e4, mode="bend"), "no longer integrated implicitly"),
    (ELASTIC.format(integrator="Euler", young=1e4, mode="stretch")
     .replace('damping="0.01"', 'equality="true"'),
     "flex constraints and elasticity .young. cannot both be present"),
    (SOFT.format(integrator="Euler").replace("<contact", '<elasticity young="1e4"/><contact'),
     "3-D flex elasticity 'young'"),
    (CLOTH.format(integrator="Euler", damping=0).replace('count="4 3 1"', 'count="3 3 2"'),
     "element 8 has point id 10, number of points is 9"),
    (rope().replace('contype="0" conaffinity="0"', 'contype="1"'), "flex collisions"),
    (rope().replace('element=', 'node="b0" element='), "'node'"),
    (rope(equality=False, extra='<equality><flexvert flex="rope"/></equality>'), "<flexvert>"),
    (rope(stiffness=10.0), "edge stiffness"),
    (FLEXCOMP.replace('type="grid"', 'type="box"'), "only <flexcomp type=.grid.>"),
    (TRIANGLES.replace('<edge damping="0.3"/>', '<elasticity damping="0.1"/>'), "elasticity 'damping'"),
    (CLOTH.format(integrator="Euler", damping=0).replace('<pin id="0 2"/>', "")
     .replace('<body name="holder" pos="0 0 1">', '<body name="holder" pos="0 0 1"><freejoint/>'),
     "body 'holder' has joints but no flex vertices/nodes are pinned to it"),
])
def test_unbuilt_flex_features_are_refused(xml, what):
    with pytest.raises(kd.ModelError, match=what):
        kd.Model.from_xml_string(xml)
