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


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
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


@pytest.mark.parametrize("xml, what", [
    (rope().replace('dim="1"', 'dim="2"'), "2-D flexes"),
    (rope().replace('contype="0" conaffinity="0"', 'contype="1"'), "flex collisions"),
    (rope().replace('element=', 'vertex="0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" element='), "'vertex'"),
    (rope(equality=False, extra='<equality><flexvert flex="rope"/></equality>'), "<flexvert>"),
    (rope(integrator="implicitfast", damping=0.1, equality=False), "edge damping"),
])
def test_unbuilt_flex_features_are_refused(xml, what):
    with pytest.raises(kd.ModelError, match=what):
        kd.Model.from_xml_string(xml)
