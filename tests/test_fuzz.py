# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Bad MJCF gets a ModelError, never another exception, a hang or a non-finite Model.

* Every file of ``tests/fuzz/corpus/`` (inputs the fuzzer ``tests/fuzz/fuzz_mjcf.py`` or a
  review found to fail once) has its recorded outcome (``CORPUS_OUTCOME``): it compiles, or it
  raises a ModelError with the recorded message; a file named ``*-path.xml``
  is read with ``Model.from_xml_path``, any other is decoded (odd bytes as lone surrogates)
  and given to ``Model.from_xml_string``.
* Number formats follow MuJoCo's strtod/strtol reading, checked against MuJoCo 4.0.
* Deep nesting, huge counts and entity tricks finish quickly.
* No Model holds nan, nor inf outside a range.
* A short hypothesis run mutates attribute values of a small model.
"""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kinedyn as kd
from kinedyn.engine.fields import MODEL_FIELDS
from kinedyn.errors import ModelError
from kinedyn.xml.mjcf import MAX_ELEMENT_DEPTH, Node, parse_floats, parse_ints

CORPUS = sorted((Path(__file__).parent / "fuzz" / "corpus").glob("*.xml"))


def _compile(how: str, data: bytes | str, tmp_path: Path | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "path":
            path = tmp_path / "model.xml"
            path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))
            return kd.Model.from_xml_path(path)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "surrogateescape")
        return kd.Model.from_xml_string(data)


def assert_model_or_model_error(how: str, data, tmp_path=None):
    """The outcome the issue asks for; returns the Model or the ModelError."""
    try:
        m = _compile(how, data, tmp_path)
    except ModelError as err:
        if err.element not in (None, "worldbody"):
            assert err.line is not None, f"ModelError names <{err.element}> but no line: {err}"
        return err
    for spec in MODEL_FIELDS:
        arr = getattr(m, spec.name)
        if arr.dtype.kind == "f":  # ranges may be infinite (unbounded), nothing may be nan
            ok = ~np.isnan(arr) if spec.name.endswith("range") else np.isfinite(arr)
            assert ok.all(), f"{spec.name} is not finite"
    return m


# each corpus file's outcome, found by running it: None compiles, a pattern is the ModelError's message
CORPUS_OUTCOME = {
    "actdim-huge-string": "at most 1000000 activations per actuator",
    "asset-with-attribute-string": "unrecognized attribute: 'childclass'",
    "axisangle-inf-string": "infinite value 'inf' in attribute 'axisangle'",
    "billion-laughs-string": None,
    "body-inside-camera-string": "unrecognized element",
    "body-named-world-in-model-string": "repeated name 'world' in body",
    "bogus-encoding-declaration-path": "malformed XML: no root element",
    "defaults-nested-499-string": "nested too deep",
    "entity-string": None,
    "float-too-large-string": "number is too large in attribute 'size'",
    "hfield-float-overflow-string": None,
    "hfield-huge-string": "could not allocate buffers in hfield",
    "hfield-inf-nan-string": "infinite value 'inf' in attribute 'size'",
    "include-inside-geom-string": "required attribute missing: 'file'",
    "int-too-large-string": "number is too large in attribute 'contype'",
    "latin1-declared-path": None,
    "mass-overflow-string": r"compiled body_mass\[1\] is not finite",
    "motor-inside-damper-string": "unrecognized element",
    "nan-range-string": "nan in attribute 'range'",
    "negative-kp-dampratio-string": "dampratio needs a non-negative kp",
    "nkey-huge-string": "at most 100000 keyframes",
    "nul-utf16be-as-str-string": "malformed XML: empty document",
    "python-only-float-string": "bad format in attribute 'size'",
    "repeated-actuator-name-string": "repeated name 'cyl_area' in actuator",
    "setconst-overflow-string": r"compiled actuator_biasprm\[1\] is not finite",
    "surrogate-string": "invalid character",
    "two-flags-string": "unique element 'flag' found 2 times",
    "utf16-bom-path": "UTF-16/UTF-32 text is not supported",
    "utf16-declared-no-bom-path": "UTF-16/UTF-32 text is not supported",
    "utf8-bom-path": None,
    "zero-quat-string": "zero quaternion is not allowed",
}


def test_corpus_outcomes_cover_the_corpus():
    assert sorted(CORPUS_OUTCOME) == [p.stem for p in CORPUS]


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus(path, tmp_path):
    how = "path" if path.stem.endswith("-path") else "string"
    start = time.perf_counter()
    outcome = assert_model_or_model_error(how, path.read_bytes(), tmp_path)
    assert time.perf_counter() - start < 30
    expected = CORPUS_OUTCOME[path.stem]
    if expected is None:
        assert isinstance(outcome, kd.Model), f"expected a Model, got ModelError: {outcome}"
    else:
        assert isinstance(outcome, ModelError), f"expected a ModelError matching {expected!r}, got a Model"
        assert re.search(expected, str(outcome)), f"{expected!r} not in: {outcome}"


# ---- numbers as MuJoCo 4.0 reads them ------------------------------------------------------------

_NODE = Node("geom", {}, 7)


@pytest.mark.parametrize("text, expected", [
    ("1 2 3", [1.0, 2.0, 3.0]), (" .5\t5.\n+.5 ", [0.5, 5.0, 0.5]), ("-0", [0.0]), ("1e-400", [0.0]),
    ("1e308", [1e308]), ("0x1p-3", [0.125]), ("0X.8P1", [1.0]), ("", []),
])
def test_floats_accepted(text, expected):
    assert parse_floats(_NODE, "size", text) == expected


@pytest.mark.parametrize("text, message", [
    ("1e400", "number is too large"), ("-1.8e308", "number is too large"),
    ("nan", "nan in attribute"), ("nan(12)", "nan in attribute"), ("-inf", "infinite value"),
    ("Infinity", "infinite value"),
    ("1_0", "bad format"), ("\u0661", "bad format"), ("1e", "bad format"), ("1,5", "bad format"),
    ("1.5f", "bad format"), ("1d3", "bad format"), ("e5", "bad format"), ("0x", "bad format"),
])
def test_floats_refused(text, message):
    with pytest.raises(ModelError, match=message) as err:
        parse_floats(_NODE, "size", text)
    assert (err.value.attribute, err.value.line) == ("size", 7)


def test_inf_only_in_ranges():
    assert parse_floats(_NODE, "ctrlrange", "-inf INF") == [-np.inf, np.inf]
    with pytest.raises(ModelError, match="nan in attribute"):
        parse_floats(_NODE, "range", "0 nan")


@pytest.mark.parametrize("actuator, message", [
    ('<position joint="j" kp="-1" dampratio="1"/>', "non-negative kp"),  # was: ValueError from math.sqrt
    ('<general joint="j" gainprm="-1" biasprm="0 1 1" biastype="affine"/>', "non-negative kp"),
    ('<position joint="j" inheritrange="1"/>', "actuator_ctrlrange.* is not finite"),  # MuJoCo: nan ctrlrange
])
def test_actuator_values_that_would_be_nan(actuator, message):
    xml = ('<mujoco><worldbody><body><joint name="j" limited="true" range="-inf inf"/><geom size=".1"/></body>'
           f'</worldbody><actuator>{actuator}</actuator></mujoco>')
    with pytest.raises(ModelError, match=message) as err:
        _compile("string", xml)
    assert err.value.line == 1


@pytest.mark.parametrize("text, ok", [
    ("2147483647", True), ("-2147483648", True), ("+3", True), ("03", True), ("2147483648", False),
    ("-2147483649", False), ("3.0", False), ("3e0", False), ("0x10", False), ("\u0661", False),
])
def test_ints(text, ok):
    if ok:
        assert parse_ints(_NODE, "contype", text) == [int(text)]
    else:
        with pytest.raises(ModelError, match="too large|bad format"):
            parse_ints(_NODE, "contype", text)


# ---- deep, huge, tricky ------------------------------------------------------------------------------

def _chain(n: int, tag: str = "body") -> str:
    opens = '<body><joint/><geom size=".1"/>' if tag == "body" else '<frame pos="0 0 .1">'
    return (f'<mujoco><option><flag contact="disable"/></option><worldbody>{opens * n}'
            f'<body><joint/><geom size=".1"/></body>{f"</{tag}>" * n}</worldbody></mujoco>')


def test_nesting_at_mujocos_limit_compiles():
    # mujoco, worldbody, 495 bodies or frames, body, joint: depth 499, as deep as MuJoCo 4.0 reads
    m = _compile("string", _chain(MAX_ELEMENT_DEPTH - 4, "frame"))
    assert m.nbody == 2
    m = _compile("string", _chain(MAX_ELEMENT_DEPTH - 4))
    assert m.nbody == MAX_ELEMENT_DEPTH - 2


@pytest.mark.parametrize("n", [MAX_ELEMENT_DEPTH, 10_000])
def test_deeper_nesting_is_a_model_error(n):
    start = time.perf_counter()
    with pytest.raises(ModelError, match="nested too deep") as err:
        _compile("string", _chain(n))
    assert err.value.line == 1
    assert time.perf_counter() - start < 10


def test_nested_defaults():
    n = MAX_ELEMENT_DEPTH - 5
    xml = ("<mujoco>" + "".join(f'<default class="c{i}">' if i else "<default>" for i in range(n))
           + '<geom size=".2"/>' + "</default>" * n
           + f'<worldbody><body childclass="c{n - 1}"><joint/><geom/></body></worldbody></mujoco>')
    m = _compile("string", xml)
    assert m.geom_size[0, 0] == 0.2


def test_many_geoms_in_reasonable_time():
    # 20 000 geoms in 2 000 bodies that can all collide (the unsimulated-contacts warning scans pairs)
    start = time.perf_counter()
    body = '<body><joint/>' + '<geom size=".1"/>' * 10 + '</body>'
    m = _compile("string", f"<mujoco><worldbody>{body * 2000}</worldbody></mujoco>")
    assert m.ngeom == 20_000
    assert time.perf_counter() - start < 60


def test_billion_laughs_is_not_expanded():
    # MuJoCo's parser (tinyxml2) skips <!DOCTYPE ...> and <!ENTITY ...> and keeps unknown entities as
    # written: the model loads at once, named "&a12;", as in MuJoCo (checked there)
    ents = '<!ENTITY a "aaaaaaaaaa">' + "".join(f'<!ENTITY a{i + 1} "{("&a%s;" % (i or "")) * 10}">'
                                                for i in range(12))
    xml = f'<!DOCTYPE m [{ents}]><mujoco model="&a12;"/>'
    start = time.perf_counter()
    assert _compile("string", xml).model_name == "&a12;"
    assert time.perf_counter() - start < 1
    assert mujoco.MjModel.from_xml_string(xml).names.startswith(b"&a12;\x00")


@pytest.mark.parametrize("data, message", [
    ("<mujoco/>".encode("utf-16"), "UTF-16"), ("<mujoco/>".encode("utf-16-be"), "UTF-16"),
    (b'<mujoco model="\xe9"/>', "not UTF-8"), (b'<?xml version="1.0" encoding="nope"?><mujoco model="\xe9"/>',
                                                "unknown encoding"),
])
def test_file_encodings_refused(tmp_path, data, message):
    with pytest.raises(ModelError, match=message):
        _compile("path", data, tmp_path)


def test_file_encodings_accepted(tmp_path):
    assert _compile("path", b"\xef\xbb\xbf<mujoco/>", tmp_path).nbody == 1
    latin = '<?xml version="1.0" encoding="latin-1"?><mujoco model="\xe9"/>'.encode("latin-1")
    assert _compile("path", latin, tmp_path).model_name == "\xe9"


def test_odd_strings():
    for text in ("<mujoco model='\ud800'/>", "\x00<\x00m\x00u\x00j\x00o\x00c\x00o\x00/\x00>", "", "\ufeff<mujoco/>"):
        assert_model_or_model_error("string", text)
    with pytest.raises(ModelError):
        kd.Model.from_xml_path("/nonexistent\x00/x.xml")


# ---- hypothesis: garbage attribute values in a small model ------------------------------------------

_TEMPLATE = """<mujoco>
  <compiler {compiler}/>
  <option {option}><flag contact="disable"/></option>
  <default><geom {dgeom}/><default class="c"><joint {djoint}/></default></default>
  <worldbody>
    <body name="a" {body}>
      <joint name="j" {joint}/>
      <geom size=".1" {geom}/>
      <site name="s" {site}/>
      <frame {frame}><body name="b" childclass="c"><joint name="k"/><geom size=".1 .2" type="capsule" {geom2}/></body></frame>
    </body>
  </worldbody>
  <tendon><fixed name="t" {tendon}><joint joint="j" coef="1"/></fixed></tendon>
  <actuator><motor joint="j" {motor}/><position joint="k" {position}/><general tendon="t" {general}/></actuator>
  <keyframe><key {key}/></keyframe>
</mujoco>"""
_SLOTS = {
    "compiler": ["angle", "autolimits", "boundmass", "boundinertia", "inertiafromgeom", "eulerseq",
                 "inertiagrouprange", "balanceinertia"],
    "option": ["timestep", "gravity", "integrator", "density"],
    "dgeom": ["size", "density", "type", "group"], "djoint": ["axis", "range", "damping", "type"],
    "body": ["pos", "quat", "euler", "axisangle", "xyaxes", "zaxis", "childclass", "gravcomp"],
    "joint": ["type", "axis", "pos", "range", "limited", "ref", "armature", "class", "stiffness"],
    "geom": ["size", "type", "mass", "density", "fromto", "pos", "quat", "condim", "contype", "group"],
    "site": ["size", "type", "fromto", "pos", "zaxis"], "frame": ["pos", "quat", "euler", "childclass"],
    "geom2": ["fromto", "size", "shellinertia", "mass"],
    "tendon": ["range", "limited", "springlength", "stiffness", "damping"],
    "motor": ["gear", "ctrlrange", "ctrllimited", "forcerange", "name", "class"],
    "position": ["kp", "kv", "dampratio", "inheritrange", "ctrlrange", "timeconst"],
    "general": ["dyntype", "gaintype", "biastype", "dynprm", "gainprm", "actdim", "actrange"],
    "key": ["qpos", "qvel", "ctrl", "time", "act", "mpos"],
}
_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.integers(-(2**40), 2**40).map(str),
                    st.sampled_from(["0", "-1", "1e400", "1e-400", "nan", "inf", "0x1p3", "1e308", "1e-320"]))
_VALUE = st.one_of(
    st.lists(_NUMBER, min_size=0, max_size=11).map(" ".join),
    st.sampled_from(["", "true", "false", "auto", "c", "nope", "degree", "radian", "xyz", "XYZ", "free", "ball",
                     "slide", "hinge", "box", "capsule", "plane", "mesh", "user", "muscle", "filter", "integrator",
                     "0 0 0 0", "0 0 0", "1 0 0 0", "0 0 1 0 0 1"]),
    st.text(max_size=6),
)


@st.composite
def mutated_models(draw) -> str:
    fills = {}
    for slot, attrs in _SLOTS.items():
        chosen = draw(st.lists(st.sampled_from(attrs), max_size=2, unique=True))
        values = [draw(_VALUE) for _ in chosen]
        fills[slot] = " ".join(f'{a}="{_escape(v)}"' for a, v in zip(chosen, values, strict=True))
    return _TEMPLATE.format(**fills)


def _escape(v: str) -> str:
    return v.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


@settings(max_examples=60)
@given(mutated_models())
def test_mutated_models_give_model_or_model_error(xml):
    assert_model_or_model_error("string", xml)
