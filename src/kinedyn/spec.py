"""Build a model in Python, without writing XML: :class:`Spec`, modelled on MuJoCo's ``mjSpec``.

A :class:`Spec` is a tree of MJCF elements held as Python objects. Every ``add_*``
call takes the MJCF attribute names as keyword arguments with Python values
(numbers, tuples or NumPy arrays, bools, strings, or kinedyn enums such as
``kd.JointType.HINGE``) and checks them at once against the same schema the MJCF
reader uses (:data:`kinedyn.xml.mjcf.SCHEMA`): an unknown attribute, a value
with the wrong number of entries, a NaN or a bad keyword raises
:class:`~kinedyn.ModelError` naming the element and the attribute, at the call
that made the mistake.

``spec.compile()`` writes the tree as MJCF (:meth:`Spec.to_xml`) and compiles that
text with kinedyn's MJCF compiler, so a built model and a loaded model go through
one compile path and cannot disagree; MuJoCo loads the same text
(``mujoco.MjModel.from_xml_string(spec.to_xml())``) into the same model. Numbers are
written with ``repr``, which round-trips every float64 exactly.

Example (the bundled 3-joint arm)::

    import kinedyn as kd
    spec = kd.Spec(model="arm3", angle="radian", autolimits=True)
    spec.option.flag.contact = "disable"
    link1 = spec.worldbody.add_body(name="link1")
    link1.add_joint(name="j1", axis=(1, 0, 0), range=(-2.5, 2.5))
    link1.add_geom(type="capsule", size=0.03, fromto=(0, 0, 0, 0, 0, 0.3), mass=1)
    ...
    spec.add_actuator(kind="motor", name="m1", joint="j1")
    m = spec.compile()
"""

from __future__ import annotations

import copy
import enum
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from kinedyn.compiler import compile_mjcf
from kinedyn.compiler.frames import ORIENTATION_ATTRS
from kinedyn.errors import ModelError, close_names, unknown_name_hint
from kinedyn.xml.mjcf import (
    ACTUATOR_TAGS,
    SCHEMA,
    UNSUPPORTED_ELEMENTS,
    Node,
    convert,
    parse_xml,
    typed_attrs,
)

__all__ = ["Body", "DefaultClass", "Element", "Frame", "Spec", "Tendon"]

# MJCF sections and body children the builder does not model; from_xml keeps them verbatim
_VERBATIM_SECTIONS = ("size", "statistic", "visual", "asset", "custom", "contact", "equality", "sensor")
_VERBATIM_BODY_CHILDREN = ("camera", "light")
# attributes a default class cannot set: identity and transmission targets (xml_native_reader Default)
_NOT_IN_DEFAULTS = ("name", "class", "joint", "jointinparent", "tendon", "site", "refsite", "cranksite",
                    "slidersite", "body", "lengthrange")
# the kinds of named things, as mjSpec / Model.name2id spell them; freejoints are joints
_NAME_KIND = {"body": "body", "joint": "joint", "freejoint": "joint", "geom": "geom", "site": "site",
              "fixed": "tendon", "spatial": "tendon", "key": "key", **{t: "actuator" for t in ACTUATOR_TAGS}}


def _error(tag: str, name: str | None, message: str, attribute: str | None = None) -> ModelError:
    return Node(tag, {"name": name} if name else {}, None).error(message, attribute)


def _text(tag: str, name: str | None, attr: str, kind, value) -> str:
    """MJCF text of one Python attribute value; numbers by repr (exact float64 round trip)."""
    if isinstance(kind, tuple):  # keyword
        keywords = kind[1]
        if isinstance(value, bool | np.bool_) and set(keywords) >= {"false", "true"}:
            return "true" if value else "false"
        if isinstance(value, bool | np.bool_) and set(keywords) == {"disable", "enable"}:
            return "enable" if value else "disable"
        if isinstance(value, enum.Enum):  # kd.JointType.HINGE -> "hinge", IntegratorType.RK4 -> "RK4"
            match = [k for k in keywords if k.lower() == value.name.lower()]
            if match:
                return match[0]
        if not isinstance(value, str):
            raise _error(tag, name, f"attribute '{attr}' takes one of {', '.join(keywords)}, "
                         f"got {value!r}", attr)
        return value
    if kind == "s":
        if isinstance(value, Element) and value.get("name"):
            return value.get("name")  # a reference given as the element itself
        if not isinstance(value, str):
            raise _error(tag, name, f"attribute '{attr}' takes a name (str), got {value!r}", attr)
        return value
    try:
        array = np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise _error(tag, name, f"attribute '{attr}' takes numbers, got {value!r}", attr) from None
    if np.isnan(array).any():
        raise _error(tag, name, f"attribute '{attr}' contains NaN: {value!r}", attr)
    if kind[0] == "i":
        if not np.all(array == np.round(array)):
            raise _error(tag, name, f"attribute '{attr}' takes integers, got {value!r}", attr)
        return " ".join(str(int(x)) for x in array)
    return " ".join(_number(float(x)) for x in array)


def _mjcf_name(keyword: str) -> str:
    """The MJCF attribute a Python keyword argument stands for (``class_`` -> ``class``)."""
    return "class" if keyword == "class_" else keyword


def _number(x: float) -> str:
    """Shortest text that parses back to exactly ``x`` ("1" rather than "1.0")."""
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


class Element:
    """One MJCF element: its tag, checked attributes and child elements.

    Attributes read and write as Python attributes under their MJCF names
    (``body.pos = (0, 0, 1)``; ``class`` is spelled ``class_``); an attribute that was
    never set reads as None, and setting None removes it. Values come back as MJCF
    holds them: a float, an int, a str, or a tuple for vectors.
    """

    def __init__(self, tag: str, spec: Spec | None, schema_tag: str | None = None,
                 forbidden: tuple[str, ...] = (), **attrs):
        object.__setattr__(self, "_tag", tag)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_schema_tag", schema_tag or tag)
        object.__setattr__(self, "_forbidden", forbidden)
        object.__setattr__(self, "_values", {})  # attr -> (python value, MJCF text)
        object.__setattr__(self, "_children", [])
        object.__setattr__(self, "_attached", False)  # in the spec's tree (and its name index)
        self.set(**attrs)

    # ---- attributes ----------------------------------------------------------------------------

    @property
    def tag(self) -> str:
        """The MJCF element name (``body``, ``joint``, ``motor``, ...)."""
        return self._tag

    @property
    def children(self) -> list[Element]:
        """Child elements in the order they were added (a copy)."""
        return list(self._children)

    def _schema(self) -> dict:
        return SCHEMA[self._schema_tag]

    def get(self, attr: str):
        """The value of MJCF attribute ``attr``, or None when it is not set."""
        entry = self._values.get(attr)
        return None if entry is None else entry[0]

    def set(self, **attrs) -> Element:
        """Set several MJCF attributes (``class`` as ``class_``); returns the element.

        All or nothing: if one value is bad, ModelError is raised and nothing changes.
        """
        values = dict(self._values)
        for key, value in attrs.items():
            attr = _mjcf_name(key)
            if value is None:
                self._check_known(attr, values.get("name", (None,))[0])
                values.pop(attr, None)
            else:
                values[attr] = self._checked(attr, value, values)
        old, new = (v.get("name", (None,))[0] for v in (self._values, values))
        if old != new and self._spec is not None:
            self._spec._rename(self, old, new)  # a repeated name raises here, before anything changes
        object.__setattr__(self, "_values", values)
        return self

    def _check_known(self, attr: str, name: str | None) -> None:
        schema = self._schema()
        if attr not in schema or attr in self._forbidden:
            known = [k for k in schema if k not in self._forbidden]
            raise _error(self._tag, name, f"unknown attribute '{attr}'{close_names(attr, known)}", attr)

    def _checked(self, attr: str, value, values: dict) -> tuple:
        """(Python value, MJCF text) of ``attr=value``, checked against the schema and ``values``."""
        name = value if attr == "name" else values.get("name", (None,))[0]
        self._check_known(attr, name)
        kind = self._schema()[attr]
        text = _text(self._tag, name, attr, kind, value)
        # the XML reader's own check of value counts and keywords, with its messages
        typed = convert(Node(self._tag, {"name": name} if name else {}, None), attr, kind, text)
        if attr in ORIENTATION_ATTRS:
            others = [k for k in ORIENTATION_ATTRS if k != attr and k in values]
            if others:
                raise _error(self._tag, name, f"multiple orientation specifiers ({others[0]}, {attr}); "
                             f"set {others[0]}=None first", attr)
        return (tuple(typed) if isinstance(typed, list) else typed, text)

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        key = _mjcf_name(attr)
        if key in self._schema() and key not in self._forbidden:
            return self.get(key)
        raise AttributeError(f"<{self._tag}> has no attribute '{attr}'{close_names(key, self._schema())}")

    def __setattr__(self, attr: str, value) -> None:
        if attr.startswith("_"):
            object.__setattr__(self, attr, value)
        else:
            self.set(**{attr: value})

    def __repr__(self) -> str:
        attrs = "".join(f" {k}={quoteattr(text)}" for k, (_, text) in self._values.items())
        return f"<{self._tag}{attrs}/>" if not self._children else f"<{self._tag}{attrs}>...</{self._tag}>"

    def _add(self, child: Element) -> Element:
        if self._spec is not None:
            self._spec._register(child)  # a repeated name raises before the child is attached
        self._children.append(child)
        child._attached = True
        return child

    def _emitted_children(self) -> list[Element]:
        return [c for c in self._children if not (isinstance(c, _Section) and c.empty)]

    # ---- MJCF --------------------------------------------------------------------------------

    def _lines(self, indent: str, out: list[tuple[str, Element]]) -> None:
        attrs = "".join(f" {k}={quoteattr(text)}" for k, (_, text) in self._values.items())
        children = self._emitted_children()
        if not children:
            out.append((f"{indent}<{self._tag}{attrs}/>", self))
            return
        out.append((f"{indent}<{self._tag}{attrs}>", self))
        for child in children:
            child._lines(indent + "  ", out)
        out.append((f"{indent}</{self._tag}>", self))


class _Section(Element):
    """A sub-element that is written only when it holds something (``<flag>``, ``<keyframe>``)."""

    @property
    def empty(self) -> bool:
        return not self._values and all(getattr(c, "empty", False) for c in self._children)


class _Settings(Element):
    """``<compiler>`` and ``<option>``, each with its one kind of sub-element (``lengthrange``, ``flag``)."""

    def __init__(self, tag: str, sub: str):
        super().__init__(tag, None)
        object.__setattr__(self, "_sub", sub)
        self._children.append(_Section(sub, None))

    def __getattr__(self, attr: str):
        if not attr.startswith("_") and attr == self._sub:
            return self._children[0]
        return super().__getattr__(attr)


class _Verbatim(Element):
    """An element the builder does not model (assets, cameras, sensors ...), kept as read."""

    def __init__(self, node: Node):
        super().__init__(node.tag, None, schema_tag="worldbody")
        for k, v in node.attrib.items():
            self._values[k] = (v, v)
        for c in node.children:
            self._children.append(_Verbatim(c))


class _Tree(Element):
    """What a body, a frame and the world body can hold."""

    def add_body(self, **attrs) -> Body:
        """A child body (MJCF ``<body>``: name, childclass, pos, an orientation, gravcomp, ...)."""
        return self._add(Body(self._spec, **attrs))

    def add_frame(self, **attrs) -> Frame:
        """A coordinate frame (MJCF ``<frame>``) whose contents are posed relative to it."""
        frame = Frame(self._spec, **attrs)
        frame._parent_world = self._world  # a frame in the world body cannot hold joints either
        return self._add(frame)

    def add_geom(self, **attrs) -> Element:
        """A geom (MJCF ``<geom>``: type, size, fromto, pos, an orientation, mass or density, ...)."""
        return self._add(Element("geom", self._spec, **attrs))

    def add_site(self, **attrs) -> Element:
        """A site (MJCF ``<site>``): a named frame for Jacobians, IK targets and tendons."""
        return self._add(Element("site", self._spec, **attrs))

    def add_joint(self, **attrs) -> Element:
        """A joint (MJCF ``<joint>``: type hinge/slide/ball/free, axis, range, damping, ...)."""
        self._no_joints("joint", attrs)
        return self._add(Element("joint", self._spec, **attrs))

    def add_freejoint(self, **attrs) -> Element:
        """A free joint (MJCF ``<freejoint>``: name, group)."""
        self._no_joints("freejoint", attrs)
        return self._add(Element("freejoint", self._spec, **attrs))

    def add_inertial(self, **attrs) -> Element:
        """The body's explicit inertia (MJCF ``<inertial>``: pos and mass required; diaginertia or
        fullinertia; an orientation). At most one per body."""
        if self._world:
            raise _error("inertial", None, "World body cannot have inertia")
        for required in ("pos", "mass"):
            if attrs.get(required) is None:
                raise _error("inertial", None, f"required attribute missing: '{required}'", required)
        if any(c.tag == "inertial" for c in self._children):
            raise _error("inertial", None, "more than one <inertial> in a body")
        return self._add(Element("inertial", self._spec, **attrs))

    @property
    def _world(self) -> bool:
        return False

    def _no_joints(self, tag: str, attrs: dict) -> None:
        if self._world:
            raise _error(tag, attrs.get("name"), "joint found in world body")


class Body(_Tree):
    """A body: ``add_body``, ``add_joint``, ``add_geom``, ``add_site``, ``add_inertial``, ``add_frame``."""

    def __init__(self, spec: Spec | None, tag: str = "body", **attrs):
        super().__init__(tag, spec, **attrs)

    @property
    def _world(self) -> bool:
        return self._tag == "worldbody"


class Frame(_Tree):
    """A ``<frame>``: poses what it holds relative to its own pos and orientation."""

    def __init__(self, spec: Spec | None, **attrs):
        super().__init__("frame", spec, **attrs)
        object.__setattr__(self, "_parent_world", False)

    @property
    def _world(self) -> bool:
        return self._parent_world


class Tendon(Element):
    """A fixed or spatial tendon; its path is built with the ``wrap_*`` methods, in order."""

    def wrap_joint(self, joint, coef: float) -> Element:
        """Add ``coef * q[joint]`` to a fixed tendon's length."""
        self._path_kind("fixed", "joint")
        return self._add(Element("joint", None, schema_tag="tendon_joint", joint=joint, coef=coef))

    def wrap_site(self, site) -> Element:
        """Pass a spatial tendon through ``site``."""
        self._path_kind("spatial", "site")
        return self._add(Element("site", None, schema_tag="tendon_site", site=site))

    def wrap_geom(self, geom, sidesite=None) -> Element:
        """Wrap a spatial tendon around ``geom`` (``sidesite`` picks the side)."""
        self._path_kind("spatial", "geom")
        return self._add(Element("geom", None, schema_tag="tendon_geom", geom=geom, sidesite=sidesite))

    def wrap_pulley(self, divisor: float) -> Element:
        """Start a new branch of a spatial tendon whose length is divided by ``divisor``."""
        self._path_kind("spatial", "pulley")
        return self._add(Element("pulley", None, divisor=divisor))

    def _path_kind(self, needed: str, what: str) -> None:
        if self._tag != needed:
            raise _error(self._tag, self.get("name"), f"a {self._tag} tendon cannot hold a <{what}> "
                         f"(only a {needed} tendon can)")


class DefaultClass(Element):
    """A ``<default>`` class. ``joint``, ``geom``, ``site`` and ``tendon`` hold its attribute
    defaults (``cls.joint.damping = 0.1``); :meth:`set` also takes actuator shortcuts
    (``cls.set("motor", gear=2)``); :meth:`add_default` nests a class that inherits this one."""

    _ELEMENTS = ("joint", "geom", "site", "tendon", *ACTUATOR_TAGS)

    def __init__(self, spec: Spec | None, **attrs):
        super().__init__("default", spec, **attrs)

    def element(self, tag: str) -> Element:
        """This class's defaults for element ``tag`` (created empty on first use)."""
        if tag not in self._ELEMENTS:
            raise _error("default", self.get("class"), f"a default class has no <{tag}>"
                         f"{close_names(tag, self._ELEMENTS)}; it takes {', '.join(self._ELEMENTS)}", tag)
        for child in self._children:
            if child.tag == tag:
                return child
        child = _Section(tag, None, forbidden=_NOT_IN_DEFAULTS)
        self._children.append(child)
        return child

    def set(self, tag: str | None = None, **attrs) -> Element:
        """``set("joint", damping=0.1)``: defaults for one element; ``set(class_=...)`` renames."""
        if tag is None:
            return super().set(**attrs)
        return self.element(tag).set(**attrs)

    joint = property(lambda self: self.element("joint"), doc="joint defaults of this class")
    geom = property(lambda self: self.element("geom"), doc="geom defaults of this class")
    site = property(lambda self: self.element("site"), doc="site defaults of this class")
    tendon = property(lambda self: self.element("tendon"), doc="tendon defaults of this class")

    def add_default(self, class_: str, **elements: dict) -> DefaultClass:
        """A nested class named ``class_``; ``elements`` maps element tags to attribute dicts."""
        if self._spec is not None and class_ in self._spec._classes:
            raise _error("default", class_, f"repeated default class name '{class_}'", "class")
        child = DefaultClass(self._spec, class_=class_)
        for tag, attrs in elements.items():
            child.set(tag, **attrs)
        self._children.append(child)
        if self._spec is not None:
            self._spec._classes[class_] = child
        return child

    def _emitted_children(self) -> list[Element]:
        # MuJoCo reads a class's own elements before its nested classes
        children = super()._emitted_children()
        return ([c for c in children if not isinstance(c, DefaultClass)]
                + [c for c in children if isinstance(c, DefaultClass)])


class Spec:
    """A model under construction, written to MJCF and compiled by kinedyn's MJCF compiler.

    ``Spec(model="name", **settings)``: each setting is an attribute of ``<compiler>``
    (``angle``, ``autolimits``, ``eulerseq``, ``inertiafromgeom``, ...) or of ``<option>``
    (``timestep``, ``gravity``, ``integrator``, ...); ``flag={"contact": "disable"}`` sets
    ``<option><flag>``. The same settings are ``spec.compiler``, ``spec.option`` and
    ``spec.option.flag`` afterwards.

    The tree: ``spec.worldbody`` (add bodies, frames, geoms and sites to it),
    ``spec.default`` (the "main" default class), :meth:`add_actuator`,
    :meth:`add_tendon`, :meth:`add_key`. Named elements are found again with
    :meth:`body`, :meth:`joint`, :meth:`geom`, :meth:`site`, :meth:`actuator`,
    :meth:`tendon` and :meth:`key`.

    There is one compile path: :meth:`compile` is ``Model.from_xml_string(self.to_xml())``,
    so everything the MJCF compiler checks and computes applies unchanged, and MuJoCo
    loading :meth:`to_xml` gets the same model.
    """

    def __init__(self, model: str = "", **settings):
        if not isinstance(model, str):
            raise ValueError(f"model: the model name must be a str, got {model!r}")
        self.modelname = model
        self._names: dict[str, dict[str, Element]] = {k: {} for k in set(_NAME_KIND.values())}
        self._classes: dict[str, DefaultClass] = {}
        self.compiler = _Settings("compiler", "lengthrange")
        self.option = _Settings("option", "flag")
        self.default = DefaultClass(self)
        self._classes["main"] = self.default
        self.worldbody = Body(self, tag="worldbody")
        self._tendons = _Section("tendon", self, schema_tag="worldbody")
        self._actuators = _Section("actuator", self, schema_tag="worldbody")
        self._keyframe = _Section("keyframe", self)
        self._verbatim: list[_Verbatim] = []
        flags = settings.pop("flag", None) or {}
        for key, value in settings.items():
            if key in SCHEMA["compiler"]:
                self.compiler.set(**{key: value})
            elif key in SCHEMA["option"]:
                self.option.set(**{key: value})
            else:
                known = [*SCHEMA["compiler"], *SCHEMA["option"], "flag"]
                raise _error("mujoco", model, f"'{key}' is neither a <compiler> nor an <option> "
                             f"attribute{close_names(key, known)}", key)
        self.option.flag.set(**flags)

    # ---- building ------------------------------------------------------------------------------

    def add_actuator(self, kind: str = "general", **attrs) -> Element:
        """An actuator; ``kind`` is its MJCF element (motor, position, velocity, intvelocity,
        damper, cylinder, muscle, adhesion, general) and ``attrs`` that element's attributes."""
        if kind not in ACTUATOR_TAGS:
            raise _error(str(kind), attrs.get("name"), f"unknown actuator kind '{kind}'"
                         f"{close_names(str(kind), ACTUATOR_TAGS)}; known: {', '.join(ACTUATOR_TAGS)}")
        return self._actuators._add(Element(kind, self, **attrs))

    def add_tendon(self, kind: str = "fixed", **attrs) -> Tendon:
        """A tendon (``kind`` "fixed" or "spatial"); give its path with ``wrap_joint`` (fixed) or
        ``wrap_site`` / ``wrap_geom`` / ``wrap_pulley`` (spatial)."""
        if kind not in ("fixed", "spatial"):
            raise _error(str(kind), attrs.get("name"), f"unknown tendon kind '{kind}'; known: fixed, spatial")
        return self._tendons._add(Tendon(kind, self, **attrs))

    def add_key(self, **attrs) -> Element:
        """A keyframe (MJCF ``<key>``: name, time, qpos, qvel, act, ctrl, mpos, mquat)."""
        return self._keyframe._add(Element("key", self, **attrs))

    def add_default(self, class_: str, **elements: dict) -> DefaultClass:
        """A default class under "main": ``add_default("arm", joint=dict(damping=0.1))``."""
        return self.default.add_default(class_, **elements)

    @property
    def actuators(self) -> list[Element]:
        """The actuators in the order added (a copy)."""
        return self._actuators.children

    @property
    def tendons(self) -> list[Tendon]:
        """The tendons in the order added (a copy)."""
        return self._tendons.children

    @property
    def keys(self) -> list[Element]:
        """The keyframes in the order added (a copy)."""
        return self._keyframe.children

    def copy(self) -> Spec:
        """An independent deep copy (edit it without touching this one)."""
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        counts: dict[str, int] = {}

        def visit(element: Element) -> None:
            for child in element._children:
                kind = _NAME_KIND.get(child.tag, child.tag)
                counts[kind] = counts.get(kind, 0) + 1
                visit(child)

        for section in (self.worldbody, self._tendons, self._actuators, self._keyframe):
            visit(section)
        shown = ("body", "joint", "geom", "site", "tendon", "actuator", "key")
        return (f"<Spec {self.modelname!r}: "
                + ", ".join(f"{kind} x{counts[kind]}" for kind in shown if counts.get(kind)) + ">")

    # ---- names ---------------------------------------------------------------------------------

    def _register(self, element: Element) -> None:
        """Claim the name of an element being attached to the tree (raises if it is taken)."""
        kind, name = _NAME_KIND.get(element.tag), element.get("name")
        if kind is None or not name:
            return
        owner = self._names[kind].get(name)
        if owner is not None and owner is not element:
            raise _error(element.tag, name, f"repeated name '{name}' in {kind}", "name")
        self._names[kind][name] = element

    def _rename(self, element: Element, old: str | None, new: str | None) -> None:
        """Move an attached element from ``old`` to ``new`` in the name index (before the change)."""
        kind = _NAME_KIND.get(element.tag)
        if kind is None or not element._attached:
            return  # detached elements are indexed when they are attached
        table = self._names[kind]
        if new and table.get(new) not in (None, element):
            raise _error(element.tag, new, f"repeated name '{new}' in {kind}", "name")
        if old and table.get(old) is element:
            del table[old]
        if new:
            table[new] = element

    def _find(self, kind: str, name: str) -> Element:
        table = self._names[kind]
        if name not in table:
            hint = unknown_name_hint(name, table, f"; the spec has no named {kind}")
            raise KeyError(f"no {kind} named '{name}'{hint}")
        return table[name]

    def body(self, name: str) -> Body:
        """The body named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("body", name)

    def joint(self, name: str) -> Element:
        """The joint named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("joint", name)

    def geom(self, name: str) -> Element:
        """The geom named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("geom", name)

    def site(self, name: str) -> Element:
        """The site named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("site", name)

    def actuator(self, name: str) -> Element:
        """The actuator named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("actuator", name)

    def tendon(self, name: str) -> Tendon:
        """The tendon named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("tendon", name)

    def key(self, name: str) -> Element:
        """The key named ``name`` (KeyError with the closest names otherwise)."""
        return self._find("key", name)

    # ---- MJCF ----------------------------------------------------------------------------------

    def _lines(self) -> list[tuple[str, Element | None]]:
        head = f"<mujoco model={quoteattr(self.modelname)}>" if self.modelname else "<mujoco>"
        out: list[tuple[str, Element | None]] = [(head, None)]
        sections = [self.compiler, self.option,
                    *[v for v in self._verbatim if v.tag in ("size", "statistic", "visual", "asset")],
                    self.default, self.worldbody, self._tendons, self._actuators,
                    *[v for v in self._verbatim if v.tag in ("custom", "contact", "equality", "sensor")],
                    self._keyframe]
        for section in sections:
            empty = not section._values and not any(
                not (isinstance(c, _Section) and c.empty) for c in section._children)
            if empty and section is not self.worldbody:
                continue
            section._lines("  ", out)
        out.append(("</mujoco>", None))
        return out

    def to_xml(self) -> str:
        """The model as MJCF text; MuJoCo and kinedyn load it to the same model."""
        return "\n".join(line for line, _ in self._lines()) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_xml` to ``path``; returns the path."""
        path = Path(path)
        path.write_text(self.to_xml())
        return path

    def compile(self, *, allow_unsupported: bool = False):
        """Compile to a :class:`kinedyn.Model` through the MJCF compiler (one compile path);
        ``allow_unsupported`` as in :meth:`kinedyn.Model.from_xml_path`.

        A ModelError from the compiler (an unknown joint name in an actuator, a body
        without mass, ...) names the element and the line of :meth:`to_xml`.
        """
        lines = self._lines()
        text = "\n".join(line for line, _ in lines) + "\n"
        try:
            return compile_mjcf(text, allow_unsupported=allow_unsupported)
        except ModelError as err:
            if err.line is None or not 1 <= err.line <= len(lines):
                raise
            element = lines[err.line - 1][1]
            where = f"; built as {element!r}" if element is not None else ""
            raise ModelError(f"{err.reason}{where}", element=err.element, attribute=err.attribute,
                             line=err.line) from None

    # ---- reading MJCF --------------------------------------------------------------------------

    @classmethod
    def from_xml_string(cls, xml: str) -> Spec:
        """A Spec holding an MJCF model, built through the ``add_*`` calls.

        Elements the builder does not model (assets, visual settings, cameras, lights,
        contact pairs, sensors, equality constraints) are kept verbatim and written back
        by :meth:`to_xml`. Comments are not kept.
        """
        root = parse_xml(xml)
        if root.tag != "mujoco":
            raise root.error("XML root element must be <mujoco>")
        spec = cls(model=_attrs(root).get("model", ""))
        for node in root.children:
            tag = node.tag
            if tag in ("compiler", "option"):
                element = getattr(spec, tag)
                element.set(**_attrs(node))
                for sub in node.children:
                    sub_tag = {"compiler": "lengthrange", "option": "flag"}[tag]
                    if sub.tag != sub_tag:
                        raise sub.error("Schema violation: unrecognized element")
                    getattr(element, sub_tag).set(**_attrs(sub))
            elif tag == "default":
                _read_default(node, spec.default)
            elif tag == "worldbody":
                _read_tree(node, spec.worldbody)
            elif tag == "tendon":
                for sub in node.children:
                    if sub.tag not in ("fixed", "spatial"):
                        raise sub.error("Schema violation: unrecognized element")
                    tendon = spec.add_tendon(sub.tag, **_attrs(sub))
                    for part in sub.children:
                        wrap = {"joint": "wrap_joint", "site": "wrap_site", "geom": "wrap_geom",
                                "pulley": "wrap_pulley"}.get(part.tag)
                        if wrap is None:
                            raise part.error("Schema violation: unrecognized element")
                        getattr(tendon, wrap)(**_attrs(part, {"joint": "tendon_joint", "site": "tendon_site",
                                                             "geom": "tendon_geom"}.get(part.tag)))
            elif tag == "actuator":
                for sub in node.children:
                    if sub.tag not in ACTUATOR_TAGS:
                        raise sub.error("Schema violation: unrecognized element")
                    spec.add_actuator(sub.tag, **_attrs(sub))
            elif tag == "keyframe":
                for sub in node.children:
                    if sub.tag != "key":
                        raise sub.error("Schema violation: unrecognized element")
                    spec.add_key(**_attrs(sub))
            elif tag in _VERBATIM_SECTIONS:
                spec._verbatim.append(_Verbatim(node))
            elif tag in UNSUPPORTED_ELEMENTS:
                raise node.error(f"<{tag}> is not supported yet")
            else:
                raise node.error("Schema violation: unrecognized element")
        return spec

    @classmethod
    def from_xml_path(cls, path: str | Path) -> Spec:
        """:meth:`from_xml_string` of a file."""
        return cls.from_xml_string(Path(path).read_text())


def _attrs(node: Node, schema_tag: str | None = None) -> dict:
    """A node's attributes as keyword arguments for the add_* calls (typed and checked)."""
    return {("class_" if k == "class" else k): v for k, v in typed_attrs(node, schema_tag).items()}


def _read_tree(node: Node, tree: _Tree) -> None:
    for child in node.children:
        tag = child.tag
        if tag in ("body", "frame"):
            sub = getattr(tree, f"add_{tag}")(**_attrs(child))
            _read_tree(child, sub)
        elif tag in ("joint", "freejoint", "geom", "site", "inertial"):
            getattr(tree, f"add_{tag}")(**_attrs(child))
        elif tag in _VERBATIM_BODY_CHILDREN:
            tree._children.append(_Verbatim(child))
        elif tag in UNSUPPORTED_ELEMENTS:
            raise child.error(f"<{tag}> is not supported yet")
        else:
            raise child.error("Schema violation: unrecognized element")


def _read_default(node: Node, cls: DefaultClass) -> None:
    for child in node.children:
        if child.tag == "default":
            name = _attrs(child).get("class_", "")
            _read_default(child, cls.add_default(name))
        elif child.tag in DefaultClass._ELEMENTS:
            cls.set(child.tag, **_attrs(child))
        else:
            cls._children.append(_Verbatim(child))  # visual defaults (material, camera, ...)
