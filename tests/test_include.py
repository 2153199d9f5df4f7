# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Multi-file models and the XML MuJoCo's parser accepts, against MuJoCo 4.0.

* ``<include>``: nested, relative paths (main model's directory first, then the including
  file's), repeated sections from several files, ``from_xml_string`` (relative to the current
  directory), and the errors (missing file, cycles, a file included twice, children, ...) as
  ModelError naming element, attribute, line and file — each checked against the binary.
* XML as tinyxml2 reads it: what MuJoCo accepts loads with the same attribute values, what it
  refuses is a ModelError.
* A third-party model that uses ``<include>``: dm_control's suite (pinned wheel, cached).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from oracle import assert_model_fields

import kinedyn as kd
from kinedyn.errors import ModelError

NAMED = (("body", "nbody"), ("jnt", "njnt"), ("geom", "ngeom"), ("site", "nsite"), ("actuator", "nu"),
         ("tendon", "ntendon"))


def _names(m, kind: str, size: str) -> list[str]:
    get = getattr(m, "joint" if kind == "jnt" and isinstance(m, kd.Model) else kind)
    return [get(i).name for i in range(getattr(m, size))]


def _same_model(m, mjm) -> None:
    """Every Model field MuJoCo defines, and the names."""
    assert_model_fields(m, mjm)
    for kind, size in NAMED:
        assert _names(m, kind, size) == _names(mjm, kind, size), kind


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _load_both(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kd.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))


# ---- include -------------------------------------------------------------------------------------

FILES = {
    "main.xml": """<mujoco model="multi">
  <include file="parts/options.xml"/>
  <default><geom density="500"/></default>
  <include file="parts/defaults.xml"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <include file="parts/robot.xml"/>
  </worldbody>
  <actuator><include file="parts/actuators.xml"/></actuator>
</mujoco>""",
    "parts/options.xml": """<mujoco><compiler angle="radian"/><option timestep="0.004"/></mujoco>""",
    # a second top-level <default>: "main" again; class "arm" copies "main" as it is here
    "parts/defaults.xml": """<mujoco><default><joint damping="0.5"/>
      <default class="arm"><joint armature="0.1"/><geom size=".04"/></default></default>
      <default><joint damping="0.25"/></default></mujoco>""",
    # nested include found in this file's directory (parts/), not the main one
    "parts/robot.xml": """<mujoco>
  <body name="base" pos="0 0 .5"><freejoint/><geom size=".1 .1 .05" type="box"/>
    <include file="arm.xml"/>
  </body>
  <include file="leg.xml"/>
</mujoco>""",
    "parts/arm.xml": """<robot><body name="upper" childclass="arm" pos=".1 0 0"><joint name="shoulder" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0"/><site name="tip" pos=".3 0 0"/></body></robot>""",
    # leg.xml exists in both directories: the main model's directory comes first (MuJoCo 4.0)
    "leg.xml": """<mujoco><body name="leg_main" pos="1 0 .3"><joint name="hip"/><geom size=".05"/></body></mujoco>""",
    "parts/leg.xml": """<mujoco><body name="leg_parts"><joint/><geom size=".05"/></body></mujoco>""",
    "parts/actuators.xml": """<mujoco><motor name="m_shoulder" joint="shoulder" gear="2"/><position joint="hip" kp="10"/></mujoco>""",
}


def test_nested_includes_match_mujoco(tmp_path):
    _write(tmp_path, FILES)
    m, mjm = _load_both(tmp_path / "main.xml")
    _same_model(m, mjm)
    assert _names(m, "body", "nbody") == ["world", "base", "upper", "leg_main"]
    assert m.opt.timestep == 0.004 and m.nu == 2
    assert m.dof_damping[-2:].tolist() == [0.5, 0.25]  # the class keeps "main" as it was


def test_include_from_string_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    _write(tmp_path, {"body.xml": FILES["leg.xml"]})
    xml = '<mujoco><worldbody><include file="body.xml"/></worldbody></mujoco>'
    monkeypatch.chdir(tmp_path)
    _same_model(kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml))
    monkeypatch.chdir(tmp_path.parent)
    with pytest.raises(ValueError, match="Error opening file"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="Error opening file 'body.xml'"):
        kd.Model.from_xml_string(xml)
    absolute = xml.replace("body.xml", str(tmp_path / "body.xml"))
    assert kd.Model.from_xml_string(absolute).nbody == mujoco.MjModel.from_xml_string(absolute).nbody == 2


BODY = '<mujoco><body name="{}"><joint/><geom size=".1"/></body></mujoco>'
# (files, element, attribute, line, file of the line, fragment of the message); "main.xml" is loaded
INCLUDE_ERRORS = {
    "missing": ({"main.xml": '<mujoco>\n<include file="nope.xml"/></mujoco>'},
                "include", "file", 2, None, "Error opening file '.*nope.xml'"),
    "twice": ({"main.xml": '<mujoco><worldbody><include file="sub/a.xml"/>\n<include file="./sub/a.xml"/></worldbody></mujoco>',
               "sub/a.xml": BODY.format("a")}, "include", "file", 2, None, "already included"),
    "twice-through-dotdot": ({"main.xml": '<mujoco><worldbody><include file="sub/a.xml"/><include file="sub/../sub/a.xml"/></worldbody></mujoco>',
                              "sub/a.xml": BODY.format("a")}, "include", "file", 1, None, "already included"),
    "self": ({"main.xml": '<mujoco><include file="main.xml"/></mujoco>'}, "include", "file", 1, None, "already included"),
    "cycle": ({"main.xml": '<mujoco><worldbody><include file="sub/c.xml"/></worldbody></mujoco>',
               "sub/c.xml": '<mujoco><body><geom size=".1"/></body>\n<include file="d.xml"/></mujoco>',
               "sub/d.xml": '<mujoco><include file="c.xml"/></mujoco>'},
              "include", "file", 1, "sub/d.xml", "already included"),
    "children": ({"main.xml": '<mujoco><include file="a.xml"><option/></include></mujoco>', "a.xml": BODY.format("a")},
                 "include", None, 1, None, "cannot have children"),
    "comment-in-include": ({"main.xml": '<mujoco><include file="a.xml"><!-- c --></include></mujoco>', "a.xml": BODY.format("a")},
                           "include", None, 1, None, "cannot have children"),
    "no-file": ({"main.xml": "<mujoco><include/></mujoco>"}, "include", "file", 1, None, "required attribute missing"),
    "empty-include": ({"main.xml": '<mujoco><include file="e.xml"/></mujoco>', "e.xml": "<mujoco/>"},
                      "include", "file", 1, None, "Empty include file"),
    "malformed-include": ({"main.xml": '<mujoco><worldbody><include file="b.xml"/></worldbody></mujoco>',
                           "b.xml": '<mujoco>\n<body>\n</mujoco>'}, "body", None, 2, "b.xml", "malformed XML"),
    "error-in-included-element": ({"main.xml": '<mujoco><worldbody><include file="b.xml"/></worldbody></mujoco>',
                                   "b.xml": '<mujoco>\n<body><geom size=".1" bogus="1"/></body></mujoco>'},
                                  "geom", "bogus", 2, "b.xml", "unrecognized attribute"),
}


@pytest.mark.parametrize("case", INCLUDE_ERRORS, ids=list(INCLUDE_ERRORS))
def test_include_errors(tmp_path, case):
    files, element, attribute, line, file, fragment = INCLUDE_ERRORS[case]
    _write(tmp_path, files)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(tmp_path / "main.xml"))
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_path(tmp_path / "main.xml")
    err = info.value
    assert (err.element, err.attribute, err.line) == (element, attribute, line)
    assert (err.file is None) == (file is None)
    if file is not None:
        assert Path(err.file) == tmp_path / file and f"file '{err.file}'" in str(err)


def test_same_file_through_dotdot_is_compared_as_written(tmp_path, monkeypatch):
    # MuJoCo compares include paths as written under the main model's path, after removing "."
    # and "dir/..": loaded as "main.xml", "../<dir>/o.xml" is another file than "o.xml" (and loads
    # when its content allows it twice); loaded by its absolute path, the two are the same file
    name = tmp_path.name
    _write(tmp_path, {"main.xml": f'<mujoco><include file="o.xml"/><include file="../{name}/o.xml"/></mujoco>',
                      "o.xml": '<mujoco><option timestep="0.003"/></mujoco>'})
    monkeypatch.chdir(tmp_path)
    m, mjm = _load_both(Path("main.xml"))
    assert m.opt.timestep == mjm.opt.timestep == 0.003
    with pytest.raises(ValueError, match="already included"):
        mujoco.MjModel.from_xml_path(str(tmp_path / "main.xml"))
    with pytest.raises(ModelError, match="already included"):
        kd.Model.from_xml_path(tmp_path / "main.xml")


# ---- XML as tinyxml2 reads it ----------------------------------------------------------------------

G = '<geom name="g" size=".1"/>'


def _doc(inner: str, pre: str = "", post: str = "") -> str:
    return f"{pre}<mujoco><worldbody>{inner}</worldbody></mujoco>{post}"


# each case is loaded by MuJoCo and by kinedyn: both accept it (with the same geom names) or both refuse
XML_CASES = {
    "comment-with-dashes": _doc(G + "<!-- a -- b --->"),
    "attributes-without-space": _doc('<geom name="g"size=".1"type="sphere"/>'),
    "lt-amp-in-attribute": _doc('<geom name="a<b&c" size=".1"/>'),
    "unknown-entity-kept": _doc('<geom name="a&foo;b&amp" size=".1"/>'),
    "entities-and-references": _doc('<geom name="&quot;&apos;&lt;&gt;&amp;&#65;&#x42;&#x110000;&#X41;" size=".1"/>'),
    "reference-to-nul-ends-value": _doc('<geom name="a&#0;b" size=".1"/>'),
    "newlines-in-attribute": _doc('<geom name="a\r\nb\n\rc\rd" size=".1"/>'),
    "control-characters": _doc('<geom name="a\x01b" size=".1"/>\x02\x7f'),
    "declaration-after-space": _doc(G, pre='\n <?xml version="1.0"?><?xml version="1.0"?>'),
    "doctype-with-entities": _doc(G, pre='<!DOCTYPE m [<!ENTITY e "x">]>'),
    "text-before-root": _doc(G, pre="junk"),
    "second-root-ignored": _doc(G, post='<mujoco><worldbody><geom size="1"/></worldbody></mujoco>'),
    "stray-closing-tag-ends-document": _doc(G, post="</x><<<"),
    "space-after-lt": _doc('< geom name="g" size=".1"/>'),
    "closing-tag-with-attributes": '<mujoco><worldbody><geom name="g" size=".1"/></worldbody a="1"></mujoco>',
    "xmlns-on-root": '<mujoco xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="mjcf.xsd"><worldbody><geom name="g" size=".1"/></worldbody></mujoco>',
    "bom": "\ufeff" + _doc(G),
    "nul-ends-text": _doc(G, post="\x00garbage"),
    # refused by both
    "duplicate-attribute": _doc('<geom size=".1" size=".2"/>'),
    "unquoted-value": _doc("<geom size=.1/>"),
    "attribute-without-value": _doc('<geom size=".1" foo/>'),
    "text-after-root": _doc(G, post="junk"),
    "declaration-inside": _doc(G + "<?pi x?>"),
    "declaration-after-comment": _doc(G, pre='<!-- c --><?xml version="1.0"?>'),
    "lt-in-text": _doc(G + "a < b"),
    "mismatched-tag": "<mujoco><worldbody></WorldBody></mujoco>",
    "unclosed-element": "<mujoco><worldbody>",
    "unclosed-comment": _doc(G + "<!-- x"),
    "name-starting-with-digit": _doc('<1geom size=".1"/>'),
    "slash-space-gt": _doc('<geom size=".1" / >'),
    "whitespace-only": " \n\t",
    "nul-inside": _doc(G + "\x00"),
    "namespaced-attribute-off-root": _doc('<geom xsi:x="1" size=".1"/>'),
    "unknown-root-attribute": '<mujoco foo="1"/>',
}


@pytest.mark.parametrize("case", XML_CASES, ids=list(XML_CASES))
def test_xml_leniency_matches_mujoco(case):
    xml = XML_CASES[case]
    try:
        mjm = mujoco.MjModel.from_xml_string(xml)
    except ValueError:
        mjm = None
    if mjm is None:
        with pytest.raises(ModelError):
            kd.Model.from_xml_string(xml)
        return
    m = kd.Model.from_xml_string(xml)
    assert _names(m, "geom", "ngeom") == _names(mjm, "geom", "ngeom")
    assert m.geom_size.tolist() == mjm.geom_size.tolist()


# ---- a third-party model that uses <include>: dm_control's suite ------------------------------------

def _dm_control_suite() -> Path:
    """dm_control's suite directory, from the corpus's pinned wheel (tests/thirdparty.py: fetched
    once under a lock, sha256-checked, skipped with the reason when offline)."""
    from thirdparty import require

    return require("dm-control") / "dm_control" / "suite"


@pytest.mark.parametrize("name", ["cartpole", "walker"])
def test_dm_control_suite_with_includes(name):
    path = _dm_control_suite() / f"{name}.xml"
    assert '<include file="./common/' in path.read_text()
    m, mjm = _load_both(path)
    _same_model(m, mjm)


def _png(size: int) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x40\x20" * size for _ in range(size))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _tetra(s: float) -> str:
    return f"v 0 0 0\nv {s} 0 0\nv 0 {s} 0\nv 0 0 {s}\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def test_included_files_name_their_assets_from_their_own_folder(tmp_path):
    # issue 26 (myosuite 3's myoarm_bionic_bimanual.xml includes YCB_sim/includes/assets_*.xml,
    # whose texture and mesh are "../textures/..", "../meshes/.."): MuJoCo 4.0 looks for an
    # included element's asset file under meshdir/texturedir first, then in the included file's
    # own folder (relative to the main model's, without meshdir); a nested include in its own.
    _write(tmp_path, {
        "main.xml": """<mujoco><compiler meshdir="md" texturedir="td"/>
          <include file="ycb/includes/assets.xml"/>
          <worldbody><body><freejoint/><geom type="mesh" mesh="own"/><geom type="mesh" mesh="main" pos="1 0 0"/>
            <geom type="mesh" mesh="both" pos="2 0 0"/><geom type="mesh" mesh="nested" pos="3 0 0" material="m"/></body></worldbody>
        </mujoco>""",
        "ycb/includes/assets.xml": """<mujocoinclude><asset>
          <texture name="t" type="2d" file="../textures/box.png"/><material name="m" texture="t"/>
          <mesh name="own" file="../meshes/own.obj"/><mesh name="main" file="main.obj"/>
          <mesh name="both" file="both.obj"/></asset><include file="deeper/more.xml"/></mujocoinclude>""",
        "ycb/includes/deeper/more.xml": """<mujocoinclude><asset><mesh name="nested" file="n.obj"/>
          <texture name="t2" type="2d" file="../../textures/box.png"/></asset></mujocoinclude>""",
        "ycb/meshes/own.obj": _tetra(1), "md/main.obj": _tetra(2), "ycb/includes/deeper/n.obj": _tetra(3),
        "md/both.obj": _tetra(4), "ycb/includes/both.obj": _tetra(5),
        # where MuJoCo does not look: under meshdir joined with the included file's folder
        "md/ycb/meshes/nested.obj": _tetra(6),
    })
    (tmp_path / "ycb/textures").mkdir()
    (tmp_path / "ycb/textures/box.png").write_bytes(_png(4))
    m, mjm = _load_both(tmp_path / "main.xml")
    _same_model(m, mjm)
    both = mjm.mesh("both")
    verts = mjm.mesh_vert[both.vertadr[0]:both.vertadr[0] + both.vertnum[0]]
    diameter = np.linalg.norm(verts[:, None] - verts[None], axis=-1).max()
    assert diameter == pytest.approx(4 * np.sqrt(2), rel=1e-6)  # md/both.obj: meshdir first
    # found nowhere: refused as by MuJoCo
    (tmp_path / "ycb/textures/box.png").rename(tmp_path / "box.png")
    with pytest.raises(ValueError, match="Error opening file"):
        mujoco.MjModel.from_xml_path(str(tmp_path / "main.xml"))
    with pytest.raises(ModelError, match="Error opening file '../textures/box.png'"):
        kd.Model.from_xml_path(tmp_path / "main.xml")
    (tmp_path / "ycb/includes/deeper/more.xml").write_text(
        '<mujocoinclude><asset><mesh name="nested" file="../meshes/nested.obj"/></asset></mujocoinclude>')
    (tmp_path / "box.png").rename(tmp_path / "ycb/textures/box.png")
    with pytest.raises(ValueError, match="Error opening file"):
        mujoco.MjModel.from_xml_path(str(tmp_path / "main.xml"))
    with pytest.raises(ModelError, match="nested.obj"):
        kd.Model.from_xml_path(tmp_path / "main.xml")
