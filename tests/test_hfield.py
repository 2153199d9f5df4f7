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
from oracle import assert_model_fields
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
        '<geom type="sphere" size=".1" contype="0" conaffinity="0"/></body>')
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
    with pytest.raises(ValueError):  # MuJoCo refuses it too
        mujoco.MjModel.from_xml_path(str(path))
