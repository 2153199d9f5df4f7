"""MJCF text -> a tree of :class:`Node` with source lines and typed attribute values.

This layer knows XML (as MuJoCo's parser, tinyxml2, reads it) and the MJCF schema, no
physics. It mirrors what MuJoCo's XML reader (src/xml/xml_native_reader.cc, schema in
src/xml/mjcf.schema) checks before building a spec: well-formed XML, known elements, known attributes, the
number and format of values ("attribute 'pos' does not have enough data").
Every failure is a :class:`~kinedyn.errors.ModelError` naming element,
attribute and line.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

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

# <actuator interp> and <sensor interp>: how a history buffer is read
INTERP = ("e", ("zoh", "linear", "cubic"))
_ACT_BASE = _kinds(name="s", **{"class": "s"}, group="i", nsample="i", interp=INTERP, delay="f",
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
                   sleep=("e", ("auto", "never", "allowed", "init")), simple=("e", ("false", "auto")),
                   user="f*"),
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
    "pid": _kinds(**_ACT_BASE, **_LIMITED, inheritrange="f", **_ACT_DYNAMICS, **_TRANSMISSION, kp="f",
                  kv="f", dampratio="f", ki="f", imax="f", slewmax="f", input="s", posrange="f2",
                  velrange="f2", ffrange="f2"),
    "dcmotor": _kinds(**_ACT_BASE, ctrllimited=_FTA, **_ACT_DYNAMICS, **_TRANSMISSION, resistance="f",
                      motorconst="f1-2", nominal="f1-3", inductance="f1-2", thermal="f1-6",
                      saturation="f1-3", cogging="f1-3", lugre="f1-5", input="s", controller="f1-6"),
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
    "equality_flex": _kinds(**_EQUALITY, flex="s"),
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
    # <asset><hfield> (compiler.hfield)
    "hfield": _kinds(name="s", content_type="s", file="s", nrow="i", ncol="i", size="f4", elevation="f*"),
    "keyframe": {},
    "key": _kinds(name="s", time="f", qpos="f*", qvel="f*", act="f*", mpos="f*", mquat="f*", ctrl="f*",
                 plastic="f*"),
}

ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder",
                 "muscle", "adhesion", "pid", "dcmotor")

# elements MuJoCo 4.0 knows that we do not simulate yet: ModelError "not supported yet"
UNSUPPORTED_ELEMENTS = {
    "orientation", "plugin", "replicate", "attach", "composite",
    "extension", "include", "model",
}


@dataclass
class Node:
    """One XML element: tag, raw attributes, children, the 1-based source line and, for elements
    that come from another file than the main document (``<include>``, attached ``<model>``), that file."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)
    file: str | None = None
    # a top-level <default> of an attached model: its class (named with the attach prefix) is a
    # root of its own, as that model's "main", and does not inherit from this model's "main"
    root_class: bool = False
    # a <key> of an attached model: its values for the attached joint and actuator elements, placed
    # into this model's layout by the compiler:
    # {"qpos" | "qvel": [(joint node, [values])], "ctrl": [(actuator node, value)]}
    attached_key: dict | None = None
    # the element holds text, a comment or a CDATA section (nodes to tinyxml2, not kept here)
    has_content: bool = False
    # a URDF <inertial>: its orientation (the origin's rpy) is the frame its fullinertia is given in,
    # as mjXURDF sets a body's iquat and fullinertia together (MJCF's schema allows one of them)
    inertia_frame: bool = False
    # an element of an <include>d file: that file's directory relative to the main model's
    # ("" in the main file); MuJoCo 4.0 also looks for its asset files there (asset_path)
    include_dir: str = ""

    @property
    def label(self) -> str:
        """``tag`` or ``tag 'name'``, as used in error messages."""
        name = self.attrib.get("name")
        return f"{self.tag} '{name}'" if name else self.tag

    def error(self, message: str, attribute: str | None = None) -> ModelError:
        return ModelError(message, element=self.label, attribute=attribute, line=self.line, file=self.file)

    def find_all(self, tag: str) -> list[Node]:
        return [c for c in self.children if c.tag == tag]


def asset_path(node: Node, directory: str, file: str, base: Path | str) -> tuple[Path, bool]:
    """Where the asset file ``file`` of ``node`` (a mesh, texture, height field or skin) is, and
    whether it exists there.

    MuJoCo 4.0 looks first under the compiler's directory (``meshdir``/``texturedir``, else
    ``assetdir``), ``directory/file``; then, for an element of an included file, in that file's
    own folder, ``<the included file's directory>/file`` (without the compiler's directory), so
    that an included file may name its assets relative to itself. Both are taken from ``base``
    (the main model's folder; "" for the working directory); an absolute ``file`` is used as it
    is (measured on MuJoCo 4.0 with files placed at each candidate: tests/test_include.py).
    When neither exists the last tried is returned
    (MuJoCo's "Error opening file" names it).
    """
    if os.path.isabs(file):
        return Path(file), os.path.isfile(file)
    tries = [os.path.join(directory, file)]
    if node.include_dir:
        tries.append(os.path.join(node.include_dir, file))
    for path in tries:
        # the name is simplified as text ("a/../b" is "b" even where a/ does not exist), as MuJoCo does
        full = Path(os.path.normpath(os.path.join(base, path)))
        if full.is_file():
            return full, True
    return full, False


# tinyxml2 (MuJoCo's XML parser) refuses documents nested this deep (TINYXML2_MAX_ELEMENT_DEPTH):
# "XML_ELEMENT_DEPTH_EXCEEDED"; MuJoCo 4.0 reads at most 499 nested elements
MAX_ELEMENT_DEPTH = 499

# ---- XML as MuJoCo's parser (tinyxml2) reads it ------------------------------------------------------
# tinyxml2 is more lenient than a conforming XML parser, and MuJoCo users' files rely on it: comments
# may hold "--", attributes need no white space between them, '<' and '&' may stand in attribute
# values, unknown entities (&foo;) and bad character references stay as written, <!DOCTYPE ...> and
# <!ENTITY ...> are skipped up to their first '>' (nothing is ever expanded), text may stand before the
# root element, further top-level elements are ignored, and a stray closing tag at the top ends the
# document. The scanner below reproduces that grammar (tinyxml2.cpp: XMLDocument::Identify,
# XMLNode::ParseDeep, XMLElement::ParseAttributes, StrPair::GetStr); what tinyxml2 refuses is refused
# here, as "malformed XML" naming the line tinyxml2 names.

_XML_WS = " \t\n\v\f\r"  # isspace() in the C locale
_WS_RE = re.compile(r"[ \t\n\v\f\r]*")
_NAME_RE = re.compile(r"[A-Za-z:_\x80-\U0010ffff][A-Za-z0-9:_.\-\x80-\U0010ffff]*")
_ENTITIES = (("quot", '"'), ("amp", "&"), ("apos", "'"), ("lt", "<"), ("gt", ">"))
_MAX_CODE_POINT = 0x10FFFF


class _Scanner:
    """Position and line (tinyxml2 counts '\n' only) in the text being parsed."""

    def __init__(self, text: str, file: str | None):
        self.text = text
        self.n = len(text)
        self.file = file
        self._pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        # the parser moves forward, so counting from the last position is linear overall
        if pos >= self._pos:
            self._line += self.text.count("\n", self._pos, pos)
        else:
            self._line -= self.text.count("\n", pos, self._pos)
        self._pos = pos
        return self._line

    def error(self, message: str, pos: int) -> ModelError:
        return ModelError(f"malformed XML: {message}", line=self.line_at(pos), file=self.file)


def _char_ref(value: str, i: int) -> tuple[str, int] | None:
    """The character of the reference ``&#...;`` at ``value[i]`` and the index after it, or None when
    tinyxml2 leaves the reference as written (XMLUtil::GetCharacterRef)."""
    j = i + 2
    hexa = j < len(value) and value[j] == "x"
    if hexa:
        j += 1
    if j >= len(value):
        return None
    end = value.find(";", j)
    if end < 0:
        return None
    digits = value[j:end]
    ucs, mult, radix = 0, 1, 16 if hexa else 10
    for c in reversed(digits):  # tinyxml2 reads the digits backwards and caps the multiplier
        if "0" <= c <= "9":
            d = ord(c) - 48
        elif hexa and ("a" <= c <= "f" or "A" <= c <= "F"):
            d = int(c, 16)
        else:
            return None
        ucs = (ucs + mult * d) & 0xFFFFFFFF
        mult = min(mult * radix, _MAX_CODE_POINT)
    if ucs > _MAX_CODE_POINT:
        return None
    return chr(ucs), end + 1


def _attribute_value(raw: str, scanner: _Scanner, pos: int) -> str:
    """An attribute value as tinyxml2 returns it: line ends normalised (CR LF, LF CR and CR become
    LF), the five XML entities and character references replaced, anything else kept as written;
    a reference to character 0 ends the value (a C string)."""
    if "&" not in raw and "\r" not in raw:
        return raw
    out = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\r" or c == "\n":
            out.append("\n")
            i += 2 if i + 1 < n and raw[i + 1] == ("\n" if c == "\r" else "\r") else 1
        elif c == "&":
            if i + 1 < n and raw[i + 1] == "#":
                if i + 2 >= n:  # "&#" at the end: tinyxml2 drops the '&'
                    i += 1
                    continue
                ref = _char_ref(raw, i)
                if ref is None:
                    out.append(c)
                    i += 1
                    continue
                ch, i = ref
                if 0xD800 <= ord(ch) <= 0xDFFF:
                    raise scanner.error(f"character reference to a UTF-16 surrogate in {raw!r}", pos)
                out.append(ch)
            else:
                for pattern, char in _ENTITIES:
                    if raw.startswith(pattern, i + 1) and raw.startswith(";", i + 1 + len(pattern)):
                        out.append(char)
                        i += len(pattern) + 2
                        break
                else:
                    out.append(c)
                    i += 1
        else:
            out.append(c)
            i += 1
    value = "".join(out)
    nul = value.find("\x00")
    return value if nul < 0 else value[:nul]


def parse_xml(text: str | bytes, file: str | None = None) -> Node:
    """Parse XML text into a Node tree as MuJoCo's parser does; malformed XML raises ModelError with its line.

    ``text`` may be ``str`` or the raw bytes of a file (then the XML declaration or a
    byte order mark gives the encoding, UTF-8 otherwise). ``file`` names the text in
    error messages and in the nodes (for included files; None for the main document).
    Entity declarations (``<!ENTITY ...>``) are skipped and entities other than the five of XML are
    kept as written, as by tinyxml2: nothing is ever expanded (no "billion laughs", no external
    entities). A NUL character ends the text, as it ends tinyxml2's buffer.
    """
    if isinstance(text, (bytes, bytearray)):
        text = decode_xml_bytes(bytes(text))
    elif not isinstance(text, str):
        raise TypeError(f"MJCF text must be str or bytes, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ModelError(f"invalid character {text[err.start]!r} in XML text (not encodable as UTF-8)",
                         line=text.count("\n", 0, err.start) + 1, file=file) from None
    if "\x00" in text:
        text = text[:text.index("\x00")]
    sc = _Scanner(text, file)
    n = len(text)
    pos = _WS_RE.match(text, 0).end()
    if text.startswith("\ufeff", pos):
        pos += 1
    if _WS_RE.match(text, pos).end() >= n:
        raise ModelError("malformed XML: empty document", line=1, file=file)
    stack: list[Node] = []     # open elements
    roots: list[Node] = []     # top-level elements
    only_declarations = True   # nothing but <?...?> at the top level so far
    ws = _WS_RE.match
    while True:
        pos = ws(text, pos).end()
        if pos >= n:
            if stack:
                raise stack[-1].error(f"malformed XML: element <{stack[-1].tag}> is not closed")
            break
        if text[pos] != "<":  # text up to the next '<'
            end = text.find("<", pos)
            if end < 0:
                raise sc.error("text at the end of the document (XML_ERROR_PARSING_TEXT)", pos)
            if stack:
                stack[-1].has_content = True
            else:
                only_declarations = False
            pos = end
            continue
        for head, tail, what in (("<?", "?>", "declaration"), ("<!--", "-->", "comment"),
                                 ("<![CDATA[", "]]>", "CDATA section"), ("<!", ">", "<!...> element")):
            if text.startswith(head, pos):
                end = text.find(tail, pos + len(head))
                if end < 0:
                    raise sc.error(f"unterminated {what}", pos)
                if head == "<?":
                    if stack or not only_declarations:
                        raise sc.error("an XML declaration <?...?> is allowed only at the start of the "
                                       "document (XML_ERROR_PARSING_DECLARATION)", pos)
                elif stack:
                    stack[-1].has_content = True
                else:
                    only_declarations = False
                pos = end + len(tail)
                break
        else:
            pos = _element(sc, pos, stack, roots)
            if pos < 0:  # a closing tag at the top level ends the document
                break
            if not stack:
                only_declarations = False
    if not roots:
        raise ModelError("malformed XML: no root element", line=1, file=file)
    return roots[0]


_NAME = r"[A-Za-z:_\x80-\U0010ffff][A-Za-z0-9:_.\-\x80-\U0010ffff]*"
# the common start tag: white space between attributes, values without '&' or CR (nothing to
# decode); names matched whole ("(?=(x))\1" does not backtrack into a name)
_WS = r"[ \t\n\v\f\r]"
_FAST_TAG_RE = re.compile(rf"""<(?=({_NAME}))\1((?:{_WS}+(?=({_NAME}))\3{_WS}*={_WS}*"""
                          rf"""(?:"[^"&\r]*"|'[^'&\r]*'))*){_WS}*(/?)>""")
_FAST_ATTR_RE = re.compile(rf"""({_NAME})[ \t\n\v\f\r]*=[ \t\n\v\f\r]*(?:"([^"]*)"|'([^']*)')""")


def _element(sc: _Scanner, pos: int, stack: list[Node], roots: list[Node]) -> int:
    """One tag at ``pos`` ('<'): open, self-closing or closing; returns the position after it
    (-1 for a closing tag at the top level, where tinyxml2 stops reading)."""
    text, n = sc.text, sc.n
    line = sc.line_at(pos)
    fast = _FAST_TAG_RE.match(text, pos)
    if fast is not None:
        pairs = _FAST_ATTR_RE.findall(fast.group(2))
        attrib = {name: dq or sq for name, dq, sq in pairs}
        if len(attrib) == len(pairs):  # else the full reading reports the duplicate
            self_closing = fast.group(4) == "/"
            q = fast.end()
            node = Node(fast.group(1), attrib, line, file=sc.file)
            return _open(sc, node, q, self_closing, stack, roots, pos)
    q = _WS_RE.match(text, pos + 1).end()
    closing = q < n and text[q] == "/"
    if closing:
        q += 1
    m = _NAME_RE.match(text, q)
    if m is None:
        raise sc.error("invalid element name (XML_ERROR_PARSING)", pos)
    tag = m.group()
    q = m.end()
    attrib: dict[str, str] = {}
    self_closing = False
    while True:
        q = _WS_RE.match(text, q).end()
        if q >= n:
            raise sc.error(f"unterminated tag <{tag}> (XML_ERROR_PARSING_ELEMENT)", pos)
        c = text[q]
        if c == ">":
            q += 1
            break
        if c == "/" and text.startswith(">", q + 1):
            self_closing = True
            q += 2
            break
        m = _NAME_RE.match(text, q)
        if m is None:
            raise sc.error(f"unexpected character {c!r} in tag <{tag}> (XML_ERROR_PARSING_ELEMENT)", q)
        attr = m.group()
        q = _WS_RE.match(text, m.end()).end()
        quote = text[q + 1:q + 2] if text.startswith("=", q) else ""
        if quote:
            q = _WS_RE.match(text, q + 1).end()
            quote = text[q:q + 1]
        if quote not in ('"', "'"):
            raise sc.error(f"attribute '{attr}' of <{tag}> has no quoted value (XML_ERROR_PARSING_ATTRIBUTE)",
                           m.start())
        end = text.find(quote, q + 1)
        if end < 0 or attr in attrib:
            raise sc.error(f"{'duplicate attribute' if end >= 0 else 'unterminated value of attribute'} "
                           f"'{attr}' in <{tag}> (XML_ERROR_PARSING_ATTRIBUTE)", m.start())
        attrib[attr] = _attribute_value(text[q + 1:end], sc, m.start())
        q = end + 1
    if closing and not self_closing:  # </tag ...>: tinyxml2 reads (and drops) attributes there too
        if not stack:
            return -1
        if stack[-1].tag != tag:
            raise stack[-1].error(f"malformed XML: <{stack[-1].tag}> closed by </{tag}> "
                                  "(XML_ERROR_MISMATCHED_ELEMENT)")
        stack.pop()
        return q
    # "</tag/>" is an empty element to tinyxml2, as "<tag/>"
    return _open(sc, Node(tag, attrib, line, file=sc.file), q, self_closing, stack, roots, pos)


def _open(sc: _Scanner, node: Node, q: int, self_closing: bool, stack: list[Node], roots: list[Node],
          pos: int) -> int:
    """Add the element ``node`` whose tag ends at ``q``; open it unless ``self_closing``."""
    if q >= sc.n and not self_closing:  # "<tag>" at the very end: tinyxml2 reports a mismatch
        raise sc.error(f"element <{node.tag}> is not closed (XML_ERROR_MISMATCHED_ELEMENT)", pos)
    if not self_closing and len(stack) >= MAX_ELEMENT_DEPTH - 1:
        raise node.error(f"XML elements nested too deep (MuJoCo's parser reads at most "
                         f"{MAX_ELEMENT_DEPTH} levels)")
    (stack[-1].children if stack else roots).append(node)
    if not self_closing:
        stack.append(node)
    return q


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


def typed_attrs(node: Node, tag: str | None = None, schema: dict | None = None) -> dict:
    """Check a node's attributes against ``schema`` (default SCHEMA[tag or node.tag]) and convert
    them; unknown -> ModelError."""
    if schema is None:
        schema = SCHEMA[tag or node.tag]
    out = {}
    for attr, text in node.attrib.items():
        kind = schema.get(attr)
        if kind is None:
            raise node.error(f"Schema violation: unrecognized attribute '{attr}'", attr)
        out[attr] = convert(node, attr, kind, text)
    return out
