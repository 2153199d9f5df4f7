"""``<default>`` classes: parsing, inheritance and application to elements.

MuJoCo semantics (xml_native_reader.cc ``Default``, ``GetClass``; user_model.cc
``AddDefault``): the top-level ``<default>`` is the class "main"; a nested
``<default class="c">`` starts as a copy of its parent class and overrides what
it sets; an element takes its explicit ``class``, else the ``childclass`` of the
innermost enclosing body or frame that has one, else "main".

Joint, geom, site, tendon and equality defaults are attribute dictionaries. An attribute with a
variable number of values (geom ``size``, ``friction``, actuator ``gear``)
overrides only the leading values it gives, as MuJoCo's reader writes into the
default's array in place. Setting any orientation form replaces the inherited
orientation form.

Actuator defaults are kept as the ordered list of (shortcut tag, attributes) the
class chain declares; :mod:`kinedyn.compiler.actuators` replays them with
MuJoCo 4.0's rule that a shortcut inherits shortcut-specific parameters only
from a default of the same shortcut or of ``general``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kinedyn.compiler.frames import ORIENTATION_ATTRS
from kinedyn.compiler.mesh import default_mesh_attrs
from kinedyn.xml.mjcf import ACTUATOR_TAGS, SCHEMA, Node, typed_attrs
from kinedyn.xml.sections import SCHEMA as SECTION_SCHEMA
from kinedyn.xml.sections import check_attributes, check_material_layers

# mj_defaultSolRefImp: the solref and solimp of every constraint that does not set them
SOLREF = [0.02, 1.0]
SOLIMP = [0.9, 0.95, 0.001, 0.5, 2.0]

# <default><material>: checked as MuJoCo checks it (the asset's attributes but name and class, layers);
# only its rgba is kept (its alpha hides geoms from rays, engine.ray)
_DEFAULT_MATERIAL = {k: v for k, v in SECTION_SCHEMA["material"].items() if k not in ("name", "class")}


def _variable_arity(tag: str, attr: str) -> bool:
    kind = SCHEMA[tag].get(attr)
    return isinstance(kind, str) and "-" in kind


def merge(tag: str, base: dict, new: dict) -> dict:
    """``base`` overridden by ``new`` with MuJoCo's partial-array and orientation rules."""
    out = dict(base)
    if tag == "light" and "directional" in new and "type" not in new:
        out.pop("type", None)  # the legacy directional sets the light's type
    if any(k in new for k in ORIENTATION_ATTRS):
        for k in ORIENTATION_ATTRS:
            out.pop(k, None)
    for k, v in new.items():
        if isinstance(v, list) and k in out and _variable_arity(tag, k):
            out[k] = list(v) + list(out[k][len(v):])
        else:
            out[k] = v
    return out


@dataclass
class DefaultClass:
    name: str
    parent: DefaultClass | None
    joint: dict = field(default_factory=dict)
    geom: dict = field(default_factory=dict)
    site: dict = field(default_factory=dict)
    tendon: dict = field(default_factory=dict)
    equality: dict = field(default_factory=dict)  # active, solref, solimp of every equality kind
    pair: dict = field(default_factory=dict)      # <contact><pair> attributes
    mesh: dict = field(default_factory=dict)      # <asset><mesh>: scale, maxhullvert, inertia
    camera: dict = field(default_factory=dict)
    light: dict = field(default_factory=dict)
    material_rgba: str | None = None  # <material rgba>: its alpha hides geoms from rays (engine.ray)
    # [(tag, attrs, node)] from the root class down to this one, in document order
    actuators: list = field(default_factory=list)


def parse_defaults(nodes: Node | list[Node] | None) -> dict[str, DefaultClass]:
    """All classes of the top-level ``<default>`` sections (or just an empty "main").

    Several top-level sections (as ``<include>`` brings them together) all are class "main":
    each one changes "main" where it stands, and a class nested in it starts as a copy of
    "main" as it is at that point (MuJoCo 4.0; a class defined before keeps what it copied).
    """
    classes: dict[str, DefaultClass] = {}
    if isinstance(nodes, Node):
        nodes = [nodes]
    if all(node.root_class for node in nodes):  # none, or only those of attached models
        classes["main"] = DefaultClass("main", None)
    for section in nodes:
        # pre-order with an explicit stack (no recursion: classes may nest deep): a class's own
        # elements first, then its nested classes in document order, as MuJoCo reads them
        todo: list[tuple[Node, DefaultClass | None]] = [(section, None)]
        while todo:
            node, parent = todo.pop()
            cls = _parse(node, parent, classes)
            todo.extend((child, cls) for child in reversed(node.children) if child.tag == "default")
    return classes


def _parse(node: Node, parent: DefaultClass | None, classes: dict[str, DefaultClass]) -> DefaultClass:
    """One ``<default>`` element (not its nested classes)."""
    attrs = typed_attrs(node)
    name = attrs.get("class", "")
    if parent is None and node.root_class:  # the "main" of an attached model (xml/expand.py)
        pass
    elif parent is None:
        if name and name != "main":
            raise node.error("top-level default class 'main' cannot be renamed", "class")
        name = "main"
    elif not name:
        raise node.error("empty class name", "class")
    if parent is None and name in classes and classes[name].parent is None:
        cls = classes[name]  # a further top-level section: "main" (or an attached model's) again
    elif name in classes:
        raise node.error(f"repeated default class name '{name}'", "class")
    else:
        cls = DefaultClass(name, parent)
    if parent is not None:
        cls.joint, cls.geom, cls.site = dict(parent.joint), dict(parent.geom), dict(parent.site)
        cls.tendon, cls.equality = dict(parent.tendon), dict(parent.equality)
        cls.pair, cls.mesh = dict(parent.pair), dict(parent.mesh)
        cls.camera, cls.light = dict(parent.camera), dict(parent.light)
        cls.material_rgba = parent.material_rgba
        cls.actuators = list(parent.actuators)
    classes[name] = cls
    seen: set[str] = set()
    for child in node.children:
        tag = child.tag
        if tag == "default":
            continue
        if tag in seen:
            raise child.error(f"Schema violation: more than one <{tag}> in a default class")
        seen.add(tag)
        if tag == "material":
            check_attributes(child, _DEFAULT_MATERIAL)
            check_material_layers(child)
            cls.material_rgba = child.attrib.get("rgba", cls.material_rgba)
            continue
        if child.children:  # every other element of a default class is a leaf in MuJoCo's schema
            raise child.children[0].error("Schema violation: unrecognized element")
        if tag in ("joint", "geom", "site", "pair", "camera", "light"):
            values = typed_attrs(child)
            for forbidden in ("name", "class"):
                if forbidden in values:
                    raise child.error(f"Schema violation: unrecognized attribute '{forbidden}'", forbidden)
            if tag in ("camera", "light"):
                check_camlight(child, values)
            setattr(cls, tag, merge(tag, getattr(cls, tag), values))
        elif tag == "tendon":
            cls.tendon = merge("tendon", cls.tendon, tendon_attrs(typed_attrs(child)))
        elif tag == "mesh":
            cls.mesh = merge("mesh", cls.mesh, default_mesh_attrs(child))
        elif tag == "equality":
            cls.equality = merge("equality", cls.equality, typed_attrs(child))
        elif tag in ACTUATOR_TAGS:
            values = typed_attrs(child)
            for forbidden in ("name", "class", "joint", "jointinparent", "tendon", "site", "refsite",
                              "cranksite", "slidersite", "body", "lengthrange"):
                if forbidden in values:
                    raise child.error(f"Schema violation: unrecognized attribute '{forbidden}'", forbidden)
            cls.actuators.append((tag, values, child))
        elif tag == "orientation":
            raise child.error(f"<{tag}> actuators were added after MuJoCo 3.1.3 and are not supported")
        else:
            raise child.error("Schema violation: unrecognized element")
    return cls


# <camera output> keywords and their bits (mjtCamOutBit)
CAM_OUTPUT = {"rgb": 1, "depth": 2, "distance": 4, "normal": 8, "segmentation": 16}


def check_camlight(node: Node, attrs: dict) -> None:
    """The reader's checks of a ``<camera>`` or ``<light>`` (element or default): the output
    keywords, a light's legacy ``directional`` and ``type`` not both given, nor a camera's ``fovy`` and
    ``sensorsize``."""
    if "directional" in attrs and "type" in attrs:
        raise node.error("Schema violation: at most one of 'directional', 'type' can be specified", "type")
    if node.tag == "camera" and "fovy" in attrs and "sensorsize" in attrs:
        raise node.error("Schema violation: at most one of 'fovy', 'sensorsize' can be specified",
                         "sensorsize")
    bad = [w for w in attrs.get("output", "").split() if w not in CAM_OUTPUT]
    if bad:
        raise node.error(f"invalid keyword: '{bad[0]}'", "output")


def tendon_attrs(attrs: dict) -> dict:
    """Tendon attributes as MuJoCo's reader stores them: one springlength value means both."""
    if "springlength" in attrs and len(attrs["springlength"]) == 1:
        attrs = dict(attrs, springlength=[attrs["springlength"][0]] * 2)
    return attrs


def lookup(classes: dict[str, DefaultClass], node: Node, attribute: str, name: str) -> DefaultClass:
    cls = classes.get(name)
    if cls is None:
        raise node.error(f"unknown default class name '{name}'", attribute)
    return cls
