"""Ray casting and the rangefinder sensor against MuJoCo 4.0 (mj_ray, mjSENS_RANGEFINDER).

One scene holds every geom type kinedyn has (plane, sphere, capsule, ellipsoid, cylinder, box,
and a non-convex mesh, an L-shaped prism whose notch only its faces have, not its hull) on a
free body, plus geoms that mj_ray's filters drop (alpha 0 by rgba and by material, static
geoms, groups). Rays aimed at each geom from random points (hits, misses, origins inside the
geoms), tangent rays and rays along box faces (grazing) compare distance (1e-9), geom id (exact)
and surface normal; the filters compare on every combination; rangefinder sensordata compares
on states MuJoCo's simulation visits, with every data field.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import assert_close, assert_model_fields, set_simulated_state, simulated_states

import kinedyn as kd

# the L polygon (counter-clockwise) extruded over z in [0, 0.3]: its faces, wound outwards
_L = [(0, 0), (0.4, 0), (0.4, 0.2), (0.2, 0.2), (0.2, 0.4), (0, 0.4)]


def _l_mesh() -> tuple[str, str]:
    vert = [(x, y, 0.0) for x, y in _L] + [(x, y, 0.3) for x, y in _L]
    faces = []
    for a, b, c in ((0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5)):
        faces += [(a + 6, b + 6, c + 6), (a, c, b)]
    for a in range(6):
        b = (a + 1) % 6
        faces += [(a, b, b + 6), (a, b + 6, a + 6)]
    return " ".join(f"{v:g}" for p in vert for v in p), " ".join(str(i) for f in faces for i in f)


VERT, FACE = _l_mesh()
SCENE = f"""<mujoco model="rays">
  <default><default class="ghost"><material rgba="1 1 1 0"/></default></default>
  <asset>
    <mesh name="ell" vertex="{VERT}" face="{FACE}"/>
    <material name="clear" rgba="1 1 1 0"/>
    <material name="ghostly" class="ghost"/>
    <material name="opaque" rgba=".2 .3 .4 .5"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1"/>
    <geom name="wall" type="plane" size=".5 .4 .1" pos="0 -1.5 .5" euler="-90 0 0"/>
    <geom name="pillar" type="box" size=".1 .1 .5" pos="1.5 1.5 .5" group="2"/>
    <body name="thing" pos="0 0 1" euler="10 20 30">
      <freejoint/>
      <geom name="sphere" type="sphere" size=".2" pos=".5 0 0"/>
      <geom name="capsule" type="capsule" size=".1 .3" pos="-.5 0 0" euler="0 40 10" group="1"/>
      <geom name="ellipsoid" type="ellipsoid" size=".1 .2 .3" pos="0 .5 0" euler="30 0 10"/>
      <geom name="cylinder" type="cylinder" size=".15 .2" pos="0 -.5 0" euler="0 70 10" group="3"/>
      <geom name="box" type="box" size=".1 .2 .3" pos="0 0 .5" euler="5 10 15" material="opaque"/>
      <geom name="mesh" type="mesh" mesh="ell" pos=".4 .4 .3" euler="20 0 50" contype="0" conaffinity="0"/>
      <geom name="clear" type="sphere" size=".2" pos="0 0 -.5" material="clear"/>
      <geom name="ghost" type="sphere" size=".2" pos="-.4 -.4 0" material="ghostly"/>
      <geom name="invisible" type="box" size=".1 .1 .1" pos=".5 .5 -.3" rgba="1 0 0 0"/>
      <site name="eye" pos="0 0 .1" euler="180 0 0"/>
    </body>
    <body name="mocap" mocap="true" pos="1 -1 .2">
      <geom name="marker" type="sphere" size=".1" group="5"/>
    </body>
    <body name="scanner" pos="0 1 .6">
      <joint name="pan" type="hinge" axis="0 0 1"/>
      <joint name="tilt" type="hinge" axis="1 0 0"/>
      <geom name="head" type="sphere" size=".05"/>
      <site name="beam" euler="60 0 0"/>
      <site name="beam2" pos=".03 0 0" euler="90 30 0"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="pan" gear=".3"/>
    <motor joint="tilt" gear=".3"/>
  </actuator>
  <sensor>
    <rangefinder name="range" site="beam"/>
    <rangefinder name="all" site="beam2" data="dist dir origin point normal depth"/>
    <rangefinder name="some" site="eye" data="dir normal" cutoff=".4"/>
    <rangefinder name="clipped" site="beam" data="point depth" cutoff=".5"/>
  </sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def scene():
    m = kd.Model.from_xml_string(SCENE)
    d = kd.Data(m)
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    mjd = mujoco.MjData(mjm)
    return m, d, mjm, mjd


def _pose(m, d, mjm, mjd, rng):
    qpos = mjm.qpos0.copy()
    qpos[:3] += rng.normal(scale=0.05, size=3)
    q = rng.normal(size=4)
    qpos[3:7] = q / np.linalg.norm(q)
    qpos[7:] = rng.uniform(-1, 1, size=2)
    d.qpos[:] = mjd.qpos[:] = qpos
    d.mocap_pos[:] = mjd.mocap_pos[:] = [[0.3, -0.2, 0.4]]
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)


def _both(m, d, mjm, mjd, p, v, geomgroup=None, flg_static=True, bodyexclude=-1):
    n1, n2, gid = np.zeros(3), np.zeros(3), np.zeros(1, np.int32)
    x1, g1 = kd.ray(m, d, p, v, geomgroup, flg_static, bodyexclude, normal=n1)
    grp = None if geomgroup is None else np.asarray(geomgroup, np.uint8)
    x2 = mujoco.mj_ray(mjm, mjd, p, v, grp, int(flg_static), bodyexclude, gid, n2)
    return (x1, g1, n1), (x2, int(gid[0]), n2)


def _check(ours, theirs, what):
    (x1, g1, n1), (x2, g2, n2) = ours, theirs
    assert g1 == g2, f"{what}: geom {g1} vs mujoco {g2} (dist {x1} vs {x2})"
    assert_close(f"{what}: dist", np.array([x1]), np.array([x2]))
    assert_close(f"{what}: normal", n1, n2)


def test_model_alpha_matches_mujoco(scene):
    m, d, mjm, mjd = scene
    matid = mjm.geom_matid
    alpha = np.where(matid >= 0, mjm.mat_rgba[matid, 3], mjm.geom_rgba[:, 3])
    assert_close("geom_alpha", m.geom_alpha, alpha.astype(float))
    assert list(m.geom_alpha == 0).count(True) == 3
    assert_model_fields(m, mjm, ("sensor_type", "sensor_dim", "sensor_adr", "sensor_intprm",
                                 "sensor_datatype", "sensor_objtype", "sensor_objid", "sensor_needstage",
                                 "geom_size", "mesh_face"))


ALPHAS = """<mujoco>
<default><material rgba="1 1 1 .5"/><geom rgba="1 1 1 0"/>
 <default class="a"><geom rgba="1 0 0 1"/><material rgba="0 0 0 0"/>
   <default class="b"><geom material="m2"/></default></default></default>
<asset><material name="m1"/><material name="m2" class="a"/><material name="m3" class="b" rgba="1 1 1 1"/>
<texture name="t" builtin="checker" width="8" height="8"/><material name="m4" texture="t"/></asset>
<worldbody><geom size=".1"/><geom size=".1" class="a"/><geom size=".1" class="b"/>
<geom size=".1" material="m1"/><geom size=".1" material="m3"/><geom size=".1" material="m4"/>
<geom size=".1" material="m2" rgba="1 1 1 1"/>
<body childclass="a"><geom size=".1"/><geom size=".1" class="b" rgba="0 0 0 0"/></body>
</worldbody></mujoco>"""


def test_alpha_from_rgba_materials_and_defaults():
    """geom_alpha: the material's alpha (its own rgba, its class's, the main class's) over the
    geom's rgba (its own or its class's), as mj_ray reads mat_rgba / geom_rgba."""
    m, mjm = kd.Model.from_xml_string(ALPHAS), mujoco.MjModel.from_xml_string(ALPHAS)
    matid = mjm.geom_matid
    alpha = np.where(matid >= 0, mjm.mat_rgba[matid, 3], mjm.geom_rgba[:, 3]).astype(float)
    assert_close("geom_alpha", m.geom_alpha, alpha)
    assert set(alpha) == {0.0, 0.5, 1.0}


def test_random_rays_at_every_geom(scene):
    m, d, mjm, mjd = scene
    rng = np.random.default_rng(1)
    hit = {}
    for k in range(40):
        _pose(m, d, mjm, mjd, rng)
        for g in range(m.ngeom):
            c = d.geom_xpos[g] if m.geom_type[g] != kd.GeomType.PLANE else d.geom_xpos[g] + [0.3, 0.2, 0]
            if m.geom_type[g] == kd.GeomType.MESH:  # aim at the mesh's vertices (the notch too)
                c = d.geom_xpos[g] + d.geom_xmat[g] @ m.mesh_vert[rng.integers(12)] * rng.uniform(0.5, 1)
            outside = c + rng.normal(scale=0.8, size=3)
            inside = c + rng.normal(scale=0.05, size=3)
            for p, u in ((outside, c + rng.normal(scale=0.15, size=3) - outside),  # at it from outside
                         (inside, rng.normal(size=3)),                            # from inside (or near)
                         (outside, rng.normal(size=3))):                          # anywhere
                v = u * rng.uniform(0.3, 3)  # distances in units of |vec|
                ours, theirs = _both(m, d, mjm, mjd, p, v)
                _check(ours, theirs, f"state {k} geom {g} ray {p} {v}")
                hit[theirs[1]] = hit.get(theirs[1], 0) + 1
    visible = [g for g in range(m.ngeom) if m.geom_alpha[g] > 0]
    assert all(hit.get(g, 0) > 10 for g in visible), hit
    assert hit[-1] > 50


def test_mesh_rays_meet_faces_not_hull(scene):
    """From a point of the L's notch (inside its convex hull, outside the mesh): outwards the ray
    misses the mesh, inwards it meets the inner corner."""
    m, d, mjm, mjd = scene
    _pose(m, d, mjm, mjd, np.random.default_rng(5))
    g = m.geom("mesh").id
    v = m.mesh_vert[m.mesh_vertadr[m.geom_dataid[g]]:][:12]
    local = lambda x: d.geom_xpos[g] + d.geom_xmat[g] @ x  # noqa: E731
    # the vertices keep their order: (0.3, 0.3, 0.15) and (0.2, 0.2, 0.15) of the L's own frame
    notch, corner = 0.5 * (v[2] + v[10]), 0.5 * (v[3] + v[9])
    start = local(0.7 * notch + 0.3 * corner)
    out = local(notch) - local(corner)
    for vec, meets in ((out, False), (-out, True)):
        ours, theirs = _both(m, d, mjm, mjd, start, vec)
        _check(ours, theirs, f"notch ray {vec}")
        assert (theirs[1] == g) == meets


def test_grazing_rays(scene):
    """Rays tangent to the round geoms, along box faces and edges, through the plane's border.
    A tangent ray's distance is a square root of a rounding error, so both engines get MuJoCo's
    geom poses bit for bit: what is compared is the ray functions' arithmetic."""
    m, d, mjm, mjd = scene
    rng = np.random.default_rng(2)
    _pose(m, d, mjm, mjd, rng)
    d.geom_xpos[:] = mjd.geom_xpos
    d.geom_xmat[:] = mjd.geom_xmat.reshape(-1, 3, 3)
    count = 0
    for g in range(m.ngeom):
        pos, mat, size, t = d.geom_xpos[g], d.geom_xmat[g], m.geom_size[g], m.geom_type[g]
        for k in range(12):
            u = rng.normal(size=3)
            u /= np.linalg.norm(u)
            if t == kd.GeomType.SPHERE:
                w = np.cross(u, rng.normal(size=3))
                p = pos + size[0] * w / np.linalg.norm(w) - u
            elif t in (kd.GeomType.CAPSULE, kd.GeomType.CYLINDER):
                # tangent to the side, or through a cap's rim
                u = mat @ np.array([0.0, 1.0, 0.0]) if k % 2 else u
                p = pos + mat @ np.array([size[0], 0, rng.uniform(-1, 1) * size[1]]) - u
            elif t == kd.GeomType.BOX:
                corner = size * rng.choice([-1, 1], size=3)
                along = np.zeros(3)
                along[k % 3] = 1.0
                p = pos + mat @ (corner * (1 - along * rng.uniform(0, 2)) - along)
                u = mat @ along
            elif t == kd.GeomType.PLANE and size[0] > 0:
                p = pos + mat @ np.array([size[0], rng.uniform(-1, 1) * size[1], 0.5])
                u = -(mat @ np.array([0, 0, 1.0]))
            else:
                continue
            ours, theirs = _both(m, d, mjm, mjd, p, u)
            _check(ours, theirs, f"grazing geom {g} {k}")
            count += 1
    assert count > 60


@pytest.mark.parametrize("flg_static", [True, False])
def test_filters(scene, flg_static):
    """Every group mask, static geoms on and off (the mocap body is not static), body exclusion:
    rays from the scanner through the scene in a fan."""
    m, d, mjm, mjd = scene
    rng = np.random.default_rng(3)
    _pose(m, d, mjm, mjd, rng)
    origin = np.array([0.2, 1.2, 1.6])
    dirs = [d.geom_xpos[g] - origin for g in range(m.ngeom)]
    dirs += [np.array([0.3, -0.2, -1.0]), np.array([0.0, -1.0, -0.4]), d.mocap_pos[0] - origin]
    seen = set()
    for mask in range(64):
        groups = [(mask >> i) & 1 for i in range(6)]
        for exclude in (-1, 0, m.body("thing").id, m.body("mocap").id):
            for v in dirs:
                ours, theirs = _both(m, d, mjm, mjd, origin, v, groups if mask < 63 else None, flg_static,
                                     exclude)
                _check(ours, theirs, f"groups {groups} static {flg_static} exclude {exclude} ray {v}")
                seen.add(theirs[1])
    assert m.geom("marker").id in seen
    assert (m.geom("floor").id in seen) == (m.geom("pillar").id in seen) == flg_static


def test_rangefinder_on_simulated_states(scene):
    m, d, mjm, mjd = scene
    hits = np.zeros(4)
    for state in simulated_states(mjm, mjd, count=8, steps=25, seed=4, qvel_scale=1.0):
        set_simulated_state(d, mjd, state)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_close("sensordata", d.sensordata, mjd.sensordata)
        hits += [mjd.sensordata[mjm.sensor_adr[i]] >= 0 for i in range(2)] + [0, 0]
    assert hits[0] > 0 and hits[1] > 0


@pytest.mark.parametrize("sensor, attr, message", [
    ('<rangefinder camera="cam"/>', "camera", "camera"),
    ('<rangefinder site="s" data="point dist"/>', "data", "order"),
    ('<rangefinder site="s" data="dist dist"/>', "data", "order"),
    ('<rangefinder site="s" data="range"/>', "data", "invalid keyword"),
    ('<rangefinder site="nope"/>', "site", "unrecognized name"),
])
def test_refused_and_bad_rangefinders(sensor, attr, message):
    xml = (f'<mujoco><worldbody><camera name="cam" resolution="4 3"/><site name="s"/></worldbody>'
           f'<sensor>{sensor}</sensor></mujoco>')
    with pytest.raises(kd.ModelError, match=message) as err:
        kd.Model.from_xml_string(xml)
    assert err.value.attribute == attr


def test_ray_rejects_a_zero_vector(scene):
    m, d, _, _ = scene
    with pytest.raises(ValueError, match="too small"):
        kd.ray(m, d, [0, 0, 1], [0, 0, 0])


# ---- height fields (mj_rayHfield) --------------------------------------------------------------------

def _terrain_scene() -> str:
    """A tilted bumpy field, a flat-topped field on a free body, and a scanner with rangefinders
    (every data field) looking at the terrain."""
    rng = np.random.default_rng(8)
    bumps = " ".join(f"{v:.5f}" for v in rng.uniform(0, 1, 6 * 8))
    return f"""<mujoco model="terrain rays">
  <asset>
    <hfield name="bumps" nrow="6" ncol="8" size="1.2 .9 .4 .15" elevation="{bumps}"/>
    <hfield name="tile" nrow="3" ncol="2" size=".3 .2 .1 .05" elevation="0 1 1 0 .5 .5"/>
  </asset>
  <worldbody>
    <geom name="ground" type="hfield" hfield="bumps" pos=".1 -.2 .05" euler="4 -6 25"/>
    <body name="raft" pos=".4 .3 .8" euler="10 -20 40">
      <freejoint/>
      <geom name="tile" type="hfield" hfield="tile" mass="1"/>
    </body>
    <body name="scanner" pos="0 0 1.5">
      <joint name="pan" type="hinge" axis="0 0 1" damping=".1"/>
      <joint name="tilt" type="hinge" axis="1 0 0" damping=".1"/>
      <geom name="head" type="sphere" size=".05" contype="0" conaffinity="0"/>
      <site name="down" euler="170 0 0"/>
      <site name="slant" pos=".05 0 0" euler="120 30 0"/>
    </body>
  </worldbody>
  <sensor>
    <rangefinder site="down" data="dist dir origin point normal depth"/>
    <rangefinder site="slant" data="dist normal"/>
  </sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def terrain():
    xml = _terrain_scene()
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def test_height_field_rays(terrain):
    """Rays at height fields from above, below, the sides and inside the elevations' box, in
    random and axis-aligned directions, at a static field and one on a free body: the nearest of
    the base box, the grid triangles and the elevation box's sides (distance, geom id, normal)."""
    m, d, mjm, mjd = terrain
    rng = np.random.default_rng(9)
    hit = {}
    for k in range(8):
        qpos = mjm.qpos0.copy()
        qpos[:3] = rng.uniform([-1, -0.7, 0.1], [1, 0.7, 0.8])
        q = rng.normal(size=4)
        qpos[3:7] = q / np.linalg.norm(q)
        qpos[7:] = rng.uniform(-0.6, 0.6, 2)
        d.qpos[:] = mjd.qpos[:] = qpos
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        for g, h in ((0, 0), (1, 1)):
            size, pos, mat = m.hfield_size[h], d.geom_xpos[g], d.geom_xmat[g]
            for j in range(60):
                box = rng.uniform(-1.3, 1.3, 3) * [size[0], size[1], size[2] + size[3]]
                aim = pos + mat @ (rng.uniform(-1.1, 1.1, 3) * [size[0], size[1], 0]
                                   + [0, 0, rng.uniform(-size[3], size[2])])
                mid = [0, 0, (size[2] - size[3]) / 2]
                p = pos + mat @ (box + mid) if j % 3 == 0 else aim + rng.normal(size=3)
                v = aim - p if j % 2 == 0 else rng.normal(size=3)
                if j % 5 == 0:
                    v = mat @ (np.eye(3)[j % 3] * rng.choice([-1.0, 1.0]))  # along the field's axes
                ours, theirs = _both(m, d, mjm, mjd, p, v * rng.uniform(0.3, 3))
                _check(ours, theirs, f"state {k} field {g} ray {j}")
                hit[theirs[1]] = hit.get(theirs[1], 0) + 1
    assert hit.get(0, 0) > 300 and hit.get(1, 0) > 60 and hit.get(-1, 0) > 60, hit


def _at_mujoco_poses(terrain):
    """The terrain at qpos0 with MuJoCo's geom poses copied in, bit for bit (so that ties in the
    triangle tests fall the same way)."""
    m, d, mjm, mjd = terrain
    d.qpos[:] = mjd.qpos[:] = mjm.qpos0
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    d.geom_xpos[:] = mjd.geom_xpos
    d.geom_xmat[:] = mjd.geom_xmat.reshape(-1, 3, 3)
    return m, d, mjm, mjd


def test_height_field_rays_through_grid_lines(terrain):
    """Vertical rays through grid points, cell edges and diagonals, and rays along the field's
    border walls, with the geom poses MuJoCo's bit for bit (ties in the triangle tests)."""
    m, d, mjm, mjd = _at_mujoco_poses(terrain)
    size, nrow, ncol = m.hfield_size[0], m.hfield_nrow[0], m.hfield_ncol[0]
    xs = np.linspace(-size[0], size[0], ncol)
    ys = np.linspace(-size[1], size[1], nrow)
    pos, mat = d.geom_xpos[0], d.geom_xmat[0]
    count = 0
    for x in np.concatenate([xs, (xs[1:] + xs[:-1]) / 2]):
        for y in np.concatenate([ys, (ys[1:] + ys[:-1]) / 2]):
            for up in (1.0, -1.0):
                p = pos + mat @ [x, y, up * (size[2] + 0.5 if up > 0 else size[3] + 0.5)]
                ours, theirs = _both(m, d, mjm, mjd, p, mat @ [0, 0, -up])
                _check(ours, theirs, f"vertical ray at {x} {y} {up}")
                count += 1
    for i, x in enumerate((-size[0], size[0])):
        for y in ys[:-1] + 0.3 * (ys[1] - ys[0]):
            for z in np.array([0.2, 0.6]) * size[2]:
                p = pos + mat @ [x + (-0.5 if i == 0 else 0.5), y, z]
                ours, theirs = _both(m, d, mjm, mjd, p, mat @ [1.0 if i == 0 else -1.0, 0, 0])
                _check(ours, theirs, f"side ray at {x} {y} {z}")
                count += 1
    assert count > 300


def test_height_field_grazing_rays(terrain):
    """Rays skimming the terrain: nearly level in the field's frame (tilts down to 1e-6 rad, and
    exactly level), at heights inside the elevations' box, crossing many cells in one segment;
    and rays along a cell's diagonal or edge lying in the triangle's plane."""
    m, d, mjm, mjd = _at_mujoco_poses(terrain)
    rng = np.random.default_rng(10)
    size, pos, mat = m.hfield_size[0], d.geom_xpos[0], d.geom_xmat[0]
    hit = {}
    for j in range(240):
        ang = rng.uniform(0, 2 * np.pi)
        tilt = 0.0 if j % 4 == 0 else 10.0 ** rng.uniform(-6, -1) * rng.choice([-1.0, 1.0])
        u = np.array([np.cos(ang) * np.cos(tilt), np.sin(ang) * np.cos(tilt), np.sin(tilt)])
        start = np.array([-1.6 * size[0] * np.cos(ang), -1.6 * size[1] * np.sin(ang),
                          rng.uniform(0.02, 1.02) * size[2]])
        start[:2] += rng.uniform(-0.5, 0.5, 2) * size[:2]
        ours, theirs = _both(m, d, mjm, mjd, pos + mat @ start, mat @ u)
        _check(ours, theirs, f"grazing ray {j}")
        hit[theirs[1]] = hit.get(theirs[1], 0) + 1
    # along grid edges and diagonals, in the plane of the cell's triangles
    nrow, ncol = m.hfield_nrow[0], m.hfield_ncol[0]
    elev = m.hfield_data[m.hfield_adr[0]:m.hfield_adr[0] + nrow * ncol].astype(float) * size[2]
    dx, dy = 2 * size[0] / (ncol - 1), 2 * size[1] / (nrow - 1)
    for r in range(nrow - 1):
        for c in range(ncol - 1):
            a = np.array([c * dx - size[0], r * dy - size[1], elev[r * ncol + c]])
            for rr, cc in ((r, c + 1), (r + 1, c), (r + 1, c + 1)):
                b = np.array([cc * dx - size[0], rr * dy - size[1], elev[rr * ncol + cc]])
                ours, theirs = _both(m, d, mjm, mjd, pos + mat @ (2 * a - b), mat @ (b - a))
                _check(ours, theirs, f"in-plane ray {r} {c} -> {rr} {cc}")
                hit[theirs[1]] = hit.get(theirs[1], 0) + 1
    assert hit.get(0, 0) > 100 and hit.get(-1, 0) > 10, hit


def test_height_field_rangefinders(terrain):
    m, d, mjm, mjd = terrain
    hits = 0
    for state in simulated_states(mjm, mjd, count=8, steps=25, seed=6, qvel_scale=1.0):
        set_simulated_state(d, mjd, state)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_close("sensordata", d.sensordata, mjd.sensordata)
        hits += mjd.sensordata[0] >= 0
    assert hits > 3


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast"])
def test_height_field_rangefinders_after_steps(integrator):
    """Stepped together from the same state, the scanner sweeping (undamped) over the terrain
    and the tile falling through it: after every mj_step, the rangefinders' sensordata (from
    the step's forward pass at its start state) and the state as MuJoCo's, every integrator."""
    xml = _terrain_scene().replace('damping=".1"', 'damping="0"')
    xml = xml.replace("<asset>", f'<option integrator="{integrator}"/>\n  <asset>', 1)
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    d.qvel[:] = mjd.qvel[:] = [0.5, -0.3, 0.2, 1.0, -2.0, 0.5, 12.0, 9.0]
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    seen, gid = {}, np.zeros(1, np.int32)
    for k in range(100):
        site_pos, site_z = mjd.site_xpos[1].copy(), mjd.site_xmat[1].reshape(3, 3)[:, 2].copy()
        mujoco.mj_ray(mjm, mjd, site_pos, site_z, None, 1, 2, gid)  # which geom the slant sensor sees
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
        assert_close(f"step {k} sensordata", d.sensordata, mjd.sensordata)
        assert_close(f"step {k} qpos", d.qpos, mjd.qpos)
        for key in (("down", mjd.sensordata[0] >= 0), ("slant", int(gid[0]))):
            seen[key] = seen.get(key, 0) + 1
    # both sensors hit and miss; the slant one sees the ground and the falling tile
    assert all(seen.get(k, 0) >= 10 for k in (("down", True), ("down", False),
                                              ("slant", -1), ("slant", 0), ("slant", 1))), seen
