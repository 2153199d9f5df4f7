"""Height fields against MuJoCo 4.0: ``<asset><hfield>`` (inline elevations, zeros, PNG and
MuJoCo's binary files, paths, errors), the hfield_* Model fields and the geom sizes and bounds;
contacts of every convex geom type with a bumpy field (mjc_ConvexHField); forward dynamics and a
rollout of bodies on terrain.

The files are written by the tests themselves (tmp_path); each model is compiled by kinedyn and
by mujoco from the same file and every Model field MuJoCo also has is compared
(tests/oracle.assert_model_fields).
"""

from __future__ import annotations

import re

import mujoco
import numpy as np
import pytest
from oracle import assert_close, assert_model_fields, load_pair, set_simulated_state, simulated_states
from PIL import Image

import kinedyn as kd
from kinedyn import ModelError

BUMPY = " ".join(f"{v:.6g}" for v in np.random.default_rng(3).uniform(-1, 2, 5 * 6))


def both(path_or_xml, tmp_path=None):
    """(kinedyn Model, MuJoCo model) of an XML string, or of a file when tmp_path is given."""
    if tmp_path is None:
        return kd.Model.from_xml_string(path_or_xml), mujoco.MjModel.from_xml_string(path_or_xml)
    path = tmp_path / "model.xml"
    path.write_text(path_or_xml)
    return kd.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))


def terrain(assets: str, bodies: str = "", compiler: str = "") -> str:
    return (f"<mujoco>{compiler}<asset>{assets}</asset><worldbody>{bodies}</worldbody></mujoco>")


# ---- reading ------------------------------------------------------------------------------------

def test_inline_zero_and_dynamic_fields_match_mujoco():
    """Inline elevations (rows reversed, normalised in float32), a field of zeros, an hfield geom
    on a free body (mass and inertia of its box), an offset/rotated geom: every Model field."""
    xml = terrain(
        f'<hfield name="bumps" nrow="5" ncol="6" size="1.5 2 .7 .2" elevation="{BUMPY}"/>'
        '<hfield name="flat" nrow="3" ncol="4" size="1 2 .5 .1"/>'
        '<hfield name="tall" nrow="2" ncol="2" size=".5 .5 .1 .9" elevation="1 1 1 1"/>',
        '<geom type="hfield" hfield="bumps" pos=".1 .2 -.3" euler="0 0 30"/>'
        '<geom type="hfield" hfield="flat" pos="4 0 0"/>'
        '<body pos="0 0 2"><freejoint/><geom type="hfield" hfield="tall" density="300"/>'
        '<geom type="sphere" size=".1"/></body>')
    m, mjm = both(xml)
    compared = assert_model_fields(m, mjm)
    wanted = {"hfield_data", "hfield_size", "hfield_adr", "geom_rbound", "geom_aabb", "body_inertia"}
    assert wanted <= set(compared)
    assert m.nhfield == 3 and m.nhfielddata == 30 + 12 + 4
    assert m.hfield_data.min() == 0 and m.hfield_data[:30].max() == 1


def _write_png(path, arr, mode):
    Image.fromarray(arr, mode).save(path)


def test_png_and_binary_files_match_mujoco(tmp_path):
    """PNG files of every common pixel format (grey, 16-bit grey, RGB, RGBA, palette) and MuJoCo's
    binary format, found through meshdir, named after their files; content_type overrides the
    extension."""
    rng = np.random.default_rng(0)
    sub = tmp_path / "terrain"
    sub.mkdir()
    rgb = rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    _write_png(sub / "grey.png", rgb[:, :, 1], "L")
    _write_png(sub / "rgb.png", rgb, "RGB")
    _write_png(sub / "rgba.png", np.dstack([rgb, rgb[:, :, :1]]), "RGBA")
    Image.fromarray(rgb, "RGB").convert("P", palette=Image.Palette.ADAPTIVE, colors=8).save(sub / "pal.png")
    deep = rng.integers(0, 65536, (4, 6)).astype(np.int32)
    Image.fromarray(deep, "I").convert("I;16").save(sub / "deep.png")
    with open(sub / "raw.bin", "wb") as f:
        f.write(np.array([3, 4], "<i4").tobytes() + rng.normal(size=12).astype("<f4").tobytes())
    (sub / "typed.dat").write_bytes((sub / "raw.bin").read_bytes())
    assets = "".join(f'<hfield file="{n}" size="1 2 .3 .1"/>'
                     for n in ("grey.png", "rgb.png", "rgba.png", "pal.png", "deep.png", "raw.bin"))
    assets += '<hfield name="typed" file="typed.dat" content_type="image/vnd.mujoco.hfield" size="1 1 1 1"/>'
    geoms = "".join(f'<geom type="hfield" hfield="{n}"/>'
                    for n in ("grey", "rgb", "rgba", "pal", "deep", "raw", "typed"))
    m, mjm = both(terrain(assets, geoms, '<compiler meshdir="terrain"/>'), tmp_path)
    assert_model_fields(m, mjm)
    assert list(m.hfield_nrow) == [7, 7, 7, 7, 4, 3, 3]


@pytest.mark.parametrize("asset,geom,attribute,message", [
    ('<hfield name="h" nrow="2" ncol="2"/>', "", "size", "required attribute missing: 'size'"),
    ('<hfield name="h" nrow="2" ncol="2" size="1 1 0 1"/>', "", "size", "size parameter is not positive"),
    ('<hfield name="h" nrow="2" ncol="3" size="1 1 1 1" elevation="1 2"/>', "", "elevation",
     "elevation data length must match nrow*ncol"),
    ('<hfield name="h" size="1 1 1 1"/>', "", "file", "hfield not specified"),
    ('<hfield name="h" nrow="1" ncol="3" size="1 1 1 1"/>', "", "nrow", "dimensions must be at least 2"),
    ('<hfield nrow="2" ncol="2" size="1 1 1 1"/>', "", "name", "empty name in height field"),
    ('<hfield name="h" nrow="100000" ncol="100000" size="1 1 1 1"/>', "", "nrow", "could not allocate"),
    ('<hfield name="h" file="x.stl" size="1 1 1 1"/>', "", "file", "unsupported content type"),
    ('<hfield name="h" file="missing.png" size="1 1 1 1"/>', "", "file", "cannot read hfield file"),
    ('<hfield name="h" file="bad.bin" size="1 1 1 1"/>', "", "file", "unexpected file size"),
    ('<hfield name="h" file="bad.png" size="1 1 1 1"/>', "", "file", "error decoding PNG"),
    ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 1" bogus="1"/>', "", "bogus", "unrecognized attribute"),
    ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/>', '<geom type="hfield" hfield="g"/>', "hfield",
     "hfield 'g' not found"),
    ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/>', '<geom type="sphere" size="1" hfield="h"/>',
     "hfield", "must have valid hfieldid"),
])
def test_errors_name_element_attribute_line(tmp_path, asset, geom, attribute, message):
    (tmp_path / "bad.bin").write_bytes(np.array([2, 2, 0], "<i4").tobytes())
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    path = tmp_path / "model.xml"
    path.write_text(f"<mujoco><asset>\n{asset}</asset><worldbody>\n{geom}</worldbody></mujoco>")
    with pytest.raises(ModelError, match=re.escape(message)) as info:
        kd.Model.from_xml_path(path)
    line = 3 if geom else 2
    assert (info.value.attribute, info.value.line) == (attribute, line)
    if "allocate" not in message:  # (MuJoCo tries to allocate 10^10 elevations and crashes)
        with pytest.raises(ValueError):  # MuJoCo refuses it too
            mujoco.MjModel.from_xml_path(str(path))


# ---- contacts -----------------------------------------------------------------------------------

CONVEX = {"sphere": 'size=".15"', "capsule": 'size=".1 .2"', "ellipsoid": 'size=".15 .1 .2"',
          "cylinder": 'size=".15 .1"', "box": 'size=".1 .15 .12"', "mesh": 'mesh="rock"'}


def _contact_scene(margin: float) -> str:
    """A tilted, offset bumpy field and one free body per convex type (colliding with the field
    only)."""
    rng = np.random.default_rng(11)
    elev = " ".join(f"{v:.5f}" for v in rng.uniform(0, 1, 7 * 9))
    rock = " ".join(f"{v:.4f}" for v in (rng.normal(size=(14, 3)) * [0.12, 0.09, 0.07]).ravel())
    bodies = "".join(f'<body pos="{3 * i} 0 1"><freejoint/><geom type="{t}" {s} margin="{margin}"/></body>'
                     for i, (t, s) in enumerate(CONVEX.items()))
    return (f'<mujoco><asset><mesh name="rock" vertex="{rock}"/>'
            f'<hfield name="h" nrow="7" ncol="9" size="1 .8 .3 .1" elevation="{elev}"/></asset>'
            '<default><geom contype="1" conaffinity="0"/></default><worldbody>'
            '<geom type="hfield" hfield="h" pos=".1 -.2 .05" euler="3 -4 20" contype="0" conaffinity="1"/>'
            f'{bodies}</worldbody></mujoco>')


# every contact within 1e-9 of MuJoCo's (measured on 2 x 80 poses per margin, docs/hfields.md);
# EPA amplifies last-bit differences of its inputs into another prism face, so this needs the
# geom frames and GJK's arithmetic to be MuJoCo 4.0's bit for bit


@pytest.mark.parametrize("margin", [0.0, 0.03])
def test_contacts_match_mujoco(margin):
    """Every convex type on a random bumpy field at random poses: the same contacts in the same
    order (count, geoms), dist / pos / frame within 1e-9."""
    xml = _contact_scene(margin)
    m, d, mjm, mjd = load_pair(xml, disable=False)
    rng = np.random.default_rng(7)
    errors = {t: [] for t in CONVEX}
    for _ in range(12):
        q = mjm.qpos0.copy()
        for i in range(len(CONVEX)):
            q[7 * i:7 * i + 3] = [rng.uniform(-0.9, 1.1), rng.uniform(-1, 0.6), rng.uniform(0.0, 0.35)]
            quat = rng.normal(size=4)
            q[7 * i + 3:7 * i + 7] = quat / np.linalg.norm(quat)
        mjd.qpos[:] = q
        d.qpos[:] = q
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert d.ncon == mjd.ncon
        np.testing.assert_array_equal(d.contact.geom, mjd.contact.geom)
        for i in range(d.ncon):
            c = mjd.contact[i]
            err = max(abs(c.dist - d.contact.dist[i]), np.abs(c.pos - d.contact.pos[i]).max(),
                      np.abs(c.frame - d.contact.frame[i].ravel()).max())
            errors[list(CONVEX)[c.geom[1] - 1]].append(err)
    for t, found in errors.items():
        errs = np.array(found)
        assert len(errs) >= 10, t
        assert np.all(errs <= 1e-9), (t, np.sort(errs)[-5:])


def test_planes_and_height_fields_do_not_collide():
    """MuJoCo has no plane-hfield or hfield-hfield collider: a field on a free body falls through
    the floor and another field; its sphere still collides with the static field."""
    xml = terrain('<hfield name="h" nrow="3" ncol="3" size=".5 .5 .2 .1" elevation="0 1 0 1 0 1 0 1 0"/>',
                  '<geom type="plane" size="2 2 .1"/><geom type="hfield" hfield="h" pos="0 0 .05"/>'
                  '<body pos="0 0 .1"><freejoint/><geom type="hfield" hfield="h"/>'
                  '<geom type="sphere" size=".1" pos=".2 .2 0"/></body>')
    m, mjm = both(xml)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert d.ncon == mjd.ncon > 0
    np.testing.assert_array_equal(d.contact.geom, mjd.contact.geom)
    assert set(d.contact.geom[:, 1]) == {3}  # the sphere's, with the floor and the static field


# ---- dynamics -----------------------------------------------------------------------------------

def _terrain_model(with_box: bool) -> str:
    rng = np.random.default_rng(5)
    elev = " ".join(f"{v:.4f}" for v in rng.uniform(0, 1, 8 * 10))
    box = ('<body pos=".3 .1 .45" euler="10 20 30"><freejoint/><geom type="box" size=".1 .08 .06"/></body>'
           '<body pos=".2 .4 .45" euler="0 10 0"><freejoint/>'
           '<geom type="ellipsoid" size=".1 .07 .05"/></body>'
           if with_box else "")
    return ('<mujoco><option timestep="0.004"/><asset>'
            f'<hfield name="t" nrow="8" ncol="10" size="1.2 1 .15 .1" elevation="{elev}"/></asset><worldbody>'
            '<geom type="hfield" hfield="t" euler="0 3 10"/>'
            '<body pos="-.3 0 .4"><freejoint/><geom type="sphere" size=".12" density="300"/></body>'
            '<body pos="0 -.4 .45" euler="70 0 0"><freejoint/>'
            f'<geom type="capsule" size=".05 .1" margin=".01"/></body>{box}</worldbody></mujoco>')


def test_bodies_on_terrain_forward_and_rollout():
    """A ball, a capsule, a box and an ellipsoid dropped on terrain: qacc at states of MuJoCo's own
    simulation to 1e-9; then the ball and the capsule rolling, 20 steps of both engines."""
    m, mjm = both(_terrain_model(True))
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    touching = 0
    for state in simulated_states(mjm, mjd, count=4, steps=60, qvel_scale=0.5):
        set_simulated_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert d.ncon == mjd.ncon
        touching += d.ncon
        assert_close("qacc", d.qacc, mjd.qacc, atol=1e-12 + 1e-9 * np.abs(mjd.qacc).max())
    assert touching >= 8
    m, mjm = both(_terrain_model(False))
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    for state in simulated_states(mjm, mjd, count=2, steps=60, qvel_scale=1.0):
        set_simulated_state(d, mjd, state)
        for _ in range(20):
            mujoco.mj_step(mjm, mjd)
            kd.step(m, d)
            assert d.ncon == mjd.ncon
            for f in ("qpos", "qvel", "qacc"):
                theirs = getattr(mjd, f)
                assert_close(f, getattr(d, f), theirs, atol=1e-12 + 1e-9 * np.abs(theirs).max(initial=0.0))


def test_viewer_draws_the_surface(tmp_path):
    """The viewer's mesh of a height field: the grid at its elevations, triangles facing up and
    split along the collision prisms' diagonals; a GIF of a terrain scene renders."""
    from kinedyn.viewer import render, scene

    m, _ = both(_terrain_model(False))
    vert, faces = scene.geom_mesh(m, 0)
    assert vert.shape == (80, 3) and faces.shape == (2 * 7 * 9, 3)
    np.testing.assert_allclose(vert[:, 2], m.hfield_data * m.hfield_size[0, 2])
    np.testing.assert_allclose(vert[[0, 79], :2], [[-1.2, -1], [1.2, 1]])
    e1, e2 = vert[faces[:, 1]] - vert[faces[:, 0]], vert[faces[:, 2]] - vert[faces[:, 0]]
    assert np.all(np.cross(e1, e2)[:, 2] > 0)
    assert {0, 11} <= set(faces[0]) and {0, 11} <= set(faces[63])  # diagonal (row 0, col 0)-(1, 1)
    path = render.animate(m, m.qpos0[None], tmp_path / "terrain.gif", fps=5)
    assert path.exists() and path.stat().st_size > 0


def test_distance_sensors_refuse_height_fields():
    """MuJoCo 4.0 has no geom distance for height fields, and says so at compile time."""
    xml = terrain('<hfield name="h" nrow="2" ncol="2" size="1 1 .3 .1"/>',
                  '<geom name="t" type="hfield" hfield="h"/><body pos="0 0 .5"><freejoint/>'
                  '<geom name="s" size=".1"/></body>').replace(
        "</mujoco>", '<sensor>\n<distance geom1="t" geom2="s" cutoff="1"/></sensor></mujoco>')
    with pytest.raises(ValueError, match="height fields are not supported in geom distance sensors"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="height fields are not supported in geom distance sensors") as info:
        kd.Model.from_xml_string(xml)
    assert (info.value.attribute, info.value.line) == ("geom1", 2)
