"""MJCF text -> a tree of :class:`Node` with source lines and typed attribute values.

This layer knows XML and the MJCF schema, no physics. It mirrors what MuJoCo's
XML reader (src/xml/xml_native_reader.cc, schema in src/xml/mjcf.schema) checks
before building a spec: well-formed XML, known elements, known attributes, the
number and format of values ("attribute 'pos' does not have enough data").
Every failure is a :class:`~kinedyn.errors.ModelError` naming element,
attribute and line.
"""

from __future__ import annotations

import math
import re
import xml.parsers.expat
from dataclasses import dataclass, field

from kinedyn.errors import ModelError

# ---- attribute value kinds ----------------------------------------------------------------------
# "f"            one float            "f3"        exactly 3 floats
# "f1-3"         1 to 3 floats        "f*"        any number of floats
# "i", "i2", "i*"  integers           "s"         string
# ("e", names)   one keyword of an enum


def _kinds(**attrs):
    return attrs


_FTA = ("e", ("false", "true", "auto"))
_BOOL = ("e", ("false", "true"))
_ENABLE = ("e", ("disable", "enable"))
_ORIENT = _kinds(quat="f4", axisangle="f4", xyaxes="f6", zaxis="f3", euler="f3")
_CAMLIGHT_MODES = ("fixed", "track", "trackcom", "targetbody", "targetbodycom")
_GEOMTYPES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")

_ACT_BASE = _kinds(name="s", **{"class": "s"}, group="i", nsample="i", interp="s", delay="f",
                   ctrlrange="f2", user="f*")
_ACT_DYNAMICS = _kinds(lengthrange="f2", gear="f1-6", damping="f1-3", armature="f", cranklength="f")
_TRANSMISSION = _kinds(joint="s", jointinparent="s", tendon="s", slidersite="s", cranksite="s",
                       site="s", refsite="s")
_LIMITED = _kinds(ctrllimited=_FTA, forcelimited=_FTA, forcerange="f2")

_TENDON = _kinds(name="s", **{"class": "s"}, group="i", limited=_FTA, actuatorfrclimited=_FTA,
                 range="f2", actuatorfrcrange="f2", solreflimit="f1-2", solimplimit="f1-5",
                 solreffriction="f1-2", solimpfriction="f1-5", frictionloss="f", springlength="f1-2",
                 margin="f", stiffness="f1-3", damping="f1-3", armature="f", springyield="f", user="f*")

_EQUALITY = _kinds(name="s", **{"class": "s"}, active=_BOOL, solref="f1-2", solimp="f1-5")

FLAG_BITS_DISABLE = ("constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper",
                     "gravity", "clampctrl", "warmstart", "filterparent", "actuation", "refsafe",
                     "sensor", "midphase", "eulerdamp", "autoreset", "nativeccd", "island", "multiccd")
FLAG_BITS_ENABLE = ("override", "energy", "fwdinv", "invdiscrete", "sleep")

# attributes of every element this compiler reads (MuJoCo 4.0's schema, mjcf.schema)
SCHEMA: dict[str, dict] = {
    "mujoco": _kinds(model="s"),
    "compiler": _kinds(
        autolimits=_BOOL, boundmass="f", boundinertia="f", settotalmass="f", balanceinertia=_BOOL,
        strippath=_BOOL, coordinate="s", angle=("e", ("radian", "degree")), fitaabb=_BOOL,
        eulerseq="s", meshdir="s", texturedir="s", discardvisual=_BOOL, usethread=_BOOL,
        fusestatic=_BOOL, inertiafromgeom=_FTA, inertiagrouprange="i2", saveinertial=_BOOL,
        assetdir="s", alignfree=_BOOL),
    "lengthrange": _kinds(mode="s", useexisting=_BOOL, uselimit=_BOOL, accel="f", maxforce="f",
                          timeconst="f", timestep="f", inttotal="f", interval="f", tolrange="f"),
    "option": _kinds(
        timestep="f", impratio="f", tolerance="f", ls_tolerance="f", noslip_tolerance="f",
        ccd_tolerance="f", sleep_tolerance="f", gravity="f3", wind="f3", magnetic="f3", density="f",
        viscosity="f", o_margin="f", o_solref="f1-2", o_solimp="f1-5", o_friction="f1-5",
        integrator=("e", ("Euler", "RK4", "implicit", "implicitfast", "discrete")),
        cone=("e", ("pyramidal", "elliptic")), jacobian=("e", ("dense", "sparse", "auto")),
        solver=("e", ("PGS", "CG", "Newton")), iterations="i", ls_iterations="i",
        noslip_iterations="i", ccd_iterations="i", sdf_iterations="i", sdf_initpoints="i",
        actuatorgroupdisable="i*"),
    # 'passive' is our documented alias for spring + damper (MuJoCo 4.0 rejects it)
    "flag": {**{k: _ENABLE for k in FLAG_BITS_DISABLE + FLAG_BITS_ENABLE}, "passive": _ENABLE},
    "default": _kinds(**{"class": "s"}),
    "body": _kinds(name="s", childclass="s", pos="f3", **_ORIENT, mocap=_BOOL, gravcomp="f",
                   sleep="s", simple=("e", ("false", "auto")), user="f*"),
    "worldbody": {},
    "frame": _kinds(name="s", childclass="s", pos="f3", **_ORIENT),
    "inertial": _kinds(pos="f3", **_ORIENT, mass="f", diaginertia="f3", fullinertia="f6"),
    "joint": _kinds(
        name="s", **{"class": "s"}, type=("e", ("free", "ball", "slide", "hinge")), group="i",
        pos="f3", axis="f3", springdamper="f2", limited=_FTA, actuatorfrclimited=_FTA,
        solreflimit="f1-2", solimplimit="f1-5", solreffriction="f1-2", solimpfriction="f1-5",
        stiffness="f1-3", range="f2", actuatorfrcrange="f2", actuatorgravcomp=_BOOL, margin="f",
        ref="f", springref="f", armature="f", damping="f1-3", frictionloss="f", springyield="f",
        user="f*"),
    "freejoint": _kinds(name="s", group="i", align=_FTA),
    "geom": _kinds(
        name="s", **{"class": "s"}, type=("e", _GEOMTYPES), contype="i", conaffinity="i", condim="i",
        group="i", priority="i", size="f1-3", material="s", friction="f1-3", mass="f", density="f",
        shellinertia=_BOOL, solmix="f", solref="f1-2", solimp="f1-5", margin="f", gap="f",
        surfacevel="f1-6", adhesion="f", fromto="f6", pos="f3", **_ORIENT, hfield="s", mesh="s",
        fitscale="f", rgba="f4", fluidshape=("e", ("none", "ellipsoid")), fluidcoef="f1-5",
        user="f*"),
    "site": _kinds(name="s", **{"class": "s"}, type=("e", _GEOMTYPES), group="i", pos="f3", **_ORIENT,
                   material="s", size="f1-3", fromto="f6", rgba="f4", user="f*"),
    # cameras and lights (kept with their frames: engine.camlight)
    "camera": _kinds(name="s", **{"class": "s"}, projection=("e", ("perspective", "orthographic")),
                     fovy="f", ipd="f", resolution="i2", output="s", pos="f3", **_ORIENT,
                     mode=("e", _CAMLIGHT_MODES), target="s", focal="f2", focalpixel="f2",
                     principal="f2", principalpixel="f2", sensorsize="f2", user="f*"),
    "light": _kinds(name="s", **{"class": "s"}, directional=_BOOL,
                    type=("e", ("spot", "directional", "point", "image")), castshadow=_BOOL, active=_BOOL,
                    pos="f3", dir="f3", bulbradius="f", intensity="f", range="f", attenuation="f3",
                    cutoff="f", softness="f", exponent="f", ambient="f3", diffuse="f3", specular="f3",
                    mode=("e", _CAMLIGHT_MODES), target="s", texture="s"),
    "general": _kinds(**_ACT_BASE, **_LIMITED, actlimited=_FTA, actrange="f2", **_ACT_DYNAMICS,
                      **_TRANSMISSION, body="s", actdim="i", input="s", velrange="f2", ffrange="f2",
                      dyntype="s", gaintype="s", biastype="s", dynprm="f1-10", gainprm="f1-10",
                      biasprm="f1-10", actearly=_BOOL),
    "motor": _kinds(**_ACT_BASE, **_LIMITED, **_ACT_DYNAMICS, **_TRANSMISSION),
    "position": _kinds(**_ACT_BASE, **_LIMITED, inheritrange="f", **_ACT_DYNAMICS, **_TRANSMISSION,
                       kp="f", kv="f", dampratio="f", timeconst="f"),
    "velocity": _kinds(**_ACT_BASE, **_LIMITED, **_ACT_DYNAMICS, **_TRANSMISSION, kv="f"),
    "intvelocity": _kinds(**_ACT_BASE, **_LIMITED, actlimited=_FTA, actrange="f2", inheritrange="f",
                          **_ACT_DYNAMICS, **_TRANSMISSION, kp="f", kv="f", dampratio="f"),
    "damper": _kinds(**_ACT_BASE, forcelimited=_FTA, forcerange="f2", **_ACT_DYNAMICS, **_TRANSMISSION,
                     kv="f"),
    "cylinder": _kinds(**_ACT_BASE, **_LIMITED, **_ACT_DYNAMICS, **_TRANSMISSION, timeconst="f",
                       area="f", diameter="f", bias="f3"),
    "muscle": _kinds(**_ACT_BASE, **_LIMITED, **_ACT_DYNAMICS, joint="s", jointinparent="s", tendon="s",
                     slidersite="s", cranksite="s", timeconst="f2", tausmooth="f", range="f2",
                     force="f", scale="f", lmin="f", lmax="f", vmax="f", fpmax="f", fvmax="f"),
    "adhesion": _kinds(**_ACT_BASE, forcelimited=_FTA, forcerange="f2", body="s", gain="f"),
    # tendons: <fixed> elements, their <joint> path entries ("tendon_joint", to keep the body
    # <joint> schema apart) and <default><tendon> (which also takes the visual attributes of
    # spatial tendons); <spatial> with <site>, <geom> ("tendon_site", "tendon_geom") and <pulley>
    "fixed": _kinds(**_TENDON),
    "tendon_joint": _kinds(joint="s", coef="f"),
    "spatial": _kinds(**_TENDON, rgba="f4", width="f", material="s"),
    "tendon_site": _kinds(site="s"),
    "tendon_geom": _kinds(geom="s", sidesite="s"),
    "pulley": _kinds(divisor="f"),
    "tendon": _kinds(**{k: v for k, v in _TENDON.items() if k not in ("name", "class")},
                     rgba="f4", width="f", material="s"),
    # equality constraints (<equality> children); "equality_joint" and "equality_tendon" keep them
    # apart from the body <joint> and the default <tendon>; "equality" is <default><equality>
    "connect": _kinds(**_EQUALITY, body1="s", body2="s", anchor="f3", site1="s", site2="s"),
    "weld": _kinds(**_EQUALITY, body1="s", body2="s", relpose="f7", anchor="f3", site1="s", site2="s",
                   torquescale="f"),
    "equality_joint": _kinds(**_EQUALITY, joint1="s", joint2="s", polycoef="f1-5"),
    "equality_tendon": _kinds(**_EQUALITY, tendon1="s", tendon2="s", polycoef="f1-5"),
    "equality": _kinds(active=_BOOL, solref="f1-2", solimp="f1-5"),
    # <contact>: explicit geom pairs (and <default><pair>) and excluded body pairs
    "pair": _kinds(name="s", **{"class": "s"}, geom1="s", geom2="s", condim="i", friction="f1-5",
                   solref="f1-2", solreffriction="f1-2", solimp="f1-5", margin="f", gap="f", adhesion="f"),
    "exclude": _kinds(name="s", body1="s", body2="s"),
    # <asset><mesh> (compiler.mesh); <default><mesh> takes scale, maxhullvert and inertia
    "mesh": _kinds(name="s", **{"class": "s"}, content_type="s", file="s", vertex="f*", normal="f*",
                   texcoord="f*", face="i*", refpos="f3", refquat="f4", scale="f3", smoothnormal=_BOOL,
                   maxhullvert="i", inertia=("e", ("convex", "exact", "legacy", "shell")), builtin="s",
                   params="f*", material="s"),
    "keyframe": {},
    "key": _kinds(name="s", time="f", qpos="f*", qvel="f*", act="f*", mpos="f*", mquat="f*", ctrl="f*"),
}

ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder",
                 "muscle", "adhesion")

# elements MuJoCo 4.0 knows that we do not simulate yet: ModelError "not supported yet"
UNSUPPORTED_ELEMENTS = {
    "orientation", "pid", "dcmotor", "plugin", "replicate", "attach", "composite", "flexcomp",
    "deformable", "extension", "include", "model",
}


@dataclass
class Node:
    """One XML element: tag, raw attributes, children and the 1-based source line."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``tag`` or ``tag 'name'``, as used in error messages."""
        name = self.attrib.get("name")
        return f"{self.tag} '{name}'" if name else self.tag

    def error(self, message: str, attribute: str | None = None) -> ModelError:
        return ModelError(message, element=self.label, attribute=attribute, line=self.line)

    def find_all(self, tag: str) -> list[Node]:
        return [c for c in self.children if c.tag == tag]


# tinyxml2 (MuJoCo's XML parser) refuses documents nested this deep (TINYXML2_MAX_ELEMENT_DEPTH):
# "XML_ELEMENT_DEPTH_EXCEEDED"; MuJoCo 4.0 reads at most 499 nested elements
MAX_ELEMENT_DEPTH = 499


def parse_xml(text: str | bytes) -> Node:
    """Parse XML text into a Node tree; malformed XML raises ModelError with its line.

    ``text`` may be ``str`` or the raw bytes of a file (then the XML declaration or a
    byte order mark gives the encoding, UTF-8 otherwise). Entity declarations
    (``<!ENTITY ...>``, the "billion laughs" and external-entity tricks) are refused:
    MuJoCo's parser (tinyxml2) does not expand them either.
    """
    if isinstance(text, (bytes, bytearray)):
        text = decode_xml_bytes(bytes(text))
    elif not isinstance(text, str):
        raise TypeError(f"MJCF text must be str or bytes, not {type(text).__name__}")
    if "\x00" in text:  # not XML; expat would take the text for UTF-16
        raise ModelError("NUL character in XML text", line=text.count("\n", 0, text.index("\x00")) + 1)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ModelError(f"invalid character {text[err.start]!r} in XML text (not encodable as UTF-8)",
                         line=text.count("\n", 0, err.start) + 1) from None
    # the text is already decoded: UTF-8 it is, whatever an XML declaration says (as in MuJoCo,
    # whose parser reads UTF-8 only), and no guessing of UTF-16 from NUL bytes
    parser = xml.parsers.expat.ParserCreate("utf-8")
    root: list[Node] = []
    stack: list[Node] = []

    def start(tag, attrib):
        node = Node(tag, dict(attrib), parser.CurrentLineNumber)
        # tinyxml2 counts a level for the content of the deepest element unless it is <empty/>
        if len(stack) >= MAX_ELEMENT_DEPTH or (
                len(stack) == MAX_ELEMENT_DEPTH - 1 and not _self_closing(data, parser.CurrentByteIndex)):
            raise node.error(f"XML elements nested too deep (MuJoCo's parser reads at most "
                             f"{MAX_ELEMENT_DEPTH} levels)")
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    def entity_decl(name, *_):
        raise ModelError(f"XML entity declarations are not supported (<!ENTITY {name} ...>)",
                         line=parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = entity_decl
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as err:
        raise ModelError(f"malformed XML: {xml.parsers.expat.ErrorString(err.code)}",
                         line=err.lineno) from None
    if not root:
        raise ModelError("empty XML document")
    return root[0]


def _self_closing(data: bytes, start: int) -> bool:
    """Whether the start tag at byte ``start`` of ``data`` ends with ``/>``."""
    quote = None
    for i in range(start, len(data)):
        c = data[i]
        if quote is not None:
            if c == quote:
                quote = None
        elif c in b"\"'":
            quote = c
        elif c == ord(">"):
            return data[i - 1] == ord("/")
    return False


_DECLARED_ENCODING = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def decode_xml_bytes(data: bytes) -> str:
    """The text of an MJCF file: UTF-8 (a BOM is skipped), else the encoding its XML declaration names.

    UTF-16 and UTF-32 are refused, as by MuJoCo's parser.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or data[:2] in (b"<\x00", b"\x00<"):
        raise ModelError("UTF-16/UTF-32 text is not supported (MuJoCo reads UTF-8): save the file as UTF-8",
                         line=1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = err
    declared = _DECLARED_ENCODING.match(data)
    name = declared.group(1).decode("ascii") if declared else "utf-8"
    if name.lower().replace("_", "-") in ("utf-8", "utf8"):
        raise ModelError(f"not UTF-8 text: {bad.reason} at byte {bad.start}",
                         line=data.count(b"\n", 0, bad.start) + 1)
    try:
        return data.decode(name)
    except LookupError:
        raise ModelError(f"unknown encoding '{name}' in the XML declaration", line=1) from None
    except UnicodeDecodeError as err:
        raise ModelError(f"not {name} text: {err.reason} at byte {err.start}",
                         line=data.count(b"\n", 0, err.start) + 1) from None


# MuJoCo splits number lists at (ASCII) white space and reads each with strtod / strtol
_SPLIT_RE = re.compile(r"[ \t\n\r\f\v]+")
_DEC_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_HEX_RE = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?\Z")
_SPECIAL_RE = re.compile(r"[+-]?(?:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?)\Z", re.IGNORECASE)
_INT_RE = re.compile(r"[+-]?\d+\Z", re.ASCII)
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _split(text: str) -> list[str]:
    return [p for p in _SPLIT_RE.split(text) if p]


def _bad_format(node: Node, attr: str, text: str) -> ModelError:
    return node.error(f"bad format in attribute '{attr}': {text!r}", attr)


def parse_floats(node: Node, attr: str, text: str) -> list[float]:
    """strtod's numbers (decimal, hex, inf, nan), without nan and with inf only in ranges.

    MuJoCo 4.0 rejects a finite literal that overflows ("number is too large") and accepts
    'inf' and 'nan' anywhere (with a warning for nan). kinedyn refuses nan, which would reach
    the model's arrays silently, and inf except in ranges (``range``, ``ctrlrange``, ...),
    where it means "unbounded"; elsewhere it turns into nan or an overflow on the way.
    """
    out = []
    for part in _split(text):
        if _DEC_RE.match(part) and part.isascii():
            value = float(part)
        elif _HEX_RE.match(part):
            try:
                value = float.fromhex(part)
            except OverflowError:
                value = math.inf
        elif _SPECIAL_RE.match(part):
            value = float(part.split("(")[0])
            if math.isnan(value):
                raise node.error(f"nan in attribute '{attr}': kinedyn requires numbers (MuJoCo accepts nan "
                                 "with a warning)", attr)
            if not attr.endswith("range"):
                raise node.error(f"infinite value {part!r} in attribute '{attr}': kinedyn accepts inf only "
                                 "in ranges", attr)
            out.append(value)
            continue
        else:
            raise _bad_format(node, attr, text)
        if not math.isfinite(value):
            raise node.error(f"number is too large in attribute '{attr}': {part!r}", attr)
        out.append(value)
    return out


def parse_ints(node: Node, attr: str, text: str) -> list[int]:
    """strtol's integers, within MuJoCo's int range."""
    out = []
    for part in _split(text):
        if not _INT_RE.match(part):
            raise _bad_format(node, attr, text)
        value = int(part)
        if not _INT_MIN <= value <= _INT_MAX:
            raise node.error(f"number is too large in attribute '{attr}': {part!r}", attr)
        out.append(value)
    return out


def convert(node: Node, attr: str, kind, text: str):
    """Typed value of one attribute (list for vectors, float/int/str for scalars)."""
    if isinstance(kind, tuple):
        names = kind[1]
        value = text.strip()
        if value not in names:
            raise node.error(f"invalid keyword {value!r} in attribute '{attr}'; expected one of "
                             f"{', '.join(names)}", attr)
        return value
    if kind == "s":
        return text
    base, count = kind[0], kind[1:]
    values = parse_floats(node, attr, text) if base == "f" else parse_ints(node, attr, text)
    if count == "":
        count = "1"
    if count == "*":
        return values
    lo, _, hi = count.partition("-")
    lo = int(lo)
    hi = int(hi) if hi else lo
    if len(values) < lo:
        raise node.error(f"attribute '{attr}' does not have enough data "
                         f"(expected {count.replace('-', ' to ')} values, got {len(values)})", attr)
    if len(values) > hi:
        raise node.error(f"attribute '{attr}' has too much data "
                         f"(expected {count.replace('-', ' to ')} values, got {len(values)})", attr)
    if kind in ("f", "i"):
        return values[0]
    if attr == "quat" and kind == "f4" and not any(values):
        raise node.error("zero quaternion is not allowed", attr)
    return values


def typed_attrs(node: Node, tag: str | None = None) -> dict:
    """Check a node's attributes against SCHEMA[tag] and convert them; unknown -> ModelError."""
    schema = SCHEMA[tag or node.tag]
    out = {}
    for attr, text in node.attrib.items():
        kind = schema.get(attr)
        if kind is None:
            raise node.error(f"Schema violation: unrecognized attribute '{attr}'", attr)
        out[attr] = convert(node, attr, kind, text)
    return out
