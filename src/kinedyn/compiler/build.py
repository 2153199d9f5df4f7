"""MJCF tree -> compiled, flat model arrays (MuJoCo's mjCModel::Compile for our feature set).

Order of work, as in src/user/user_model.cc ``TryCompile`` and ``CopyTree``:
parse sections, build the body tree (frames folded into their body), number
bodies depth first in document order (``MakeTreeLists``), compile every body
(orientation, geoms, inertia, joints, sites: ``mjCBody::Compile``), then
tendons (fixed and spatial), actuators and keyframes, then the layout arrays (addresses, parents, the CSR
pattern of M) and ``body_subtreemass`` (``mj_setConst``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from kinedyn.compiler import actuators as act
from kinedyn.compiler import defaults as dflt
from kinedyn.compiler import frames as fr
from kinedyn.compiler import hfield as hfields
from kinedyn.compiler import inertial as inr
from kinedyn.compiler import mesh as meshes
from kinedyn.compiler import sensors as sens
from kinedyn.compiler.contacts import GEOM_CONTACT_DEFAULTS, ContactCompiler
from kinedyn.compiler.fluid import FLUIDCOEF_DEFAULT, NFLUID, geom_fluid
from kinedyn.compiler.fuse import fuse_static
from kinedyn.engine.constraint import efc_capacity
from kinedyn.engine.fields import MODEL_FIELDS
from kinedyn.engine.model import FLUID_IMPLICIT, Model, Option
from kinedyn.engine.types import (
    MINVAL,
    NEQDATA,
    NIMP,
    NPOLY,
    NREF,
    ConeType,
    DisableBit,
    EqType,
    GeomType,
    IntegratorType,
    JacobianType,
    JointType,
    ObjType,
    SolverType,
    TrnType,
    WrapType,
)
from kinedyn.errors import ModelError, UnsimulatedFeatureWarning
from kinedyn.xml.mjcf import (
    ACTUATOR_TAGS,
    FLAG_BITS_DISABLE,
    FLAG_BITS_ENABLE,
    UNSUPPORTED_ELEMENTS,
    Node,
    parse_floats,
    parse_ints,
    typed_attrs,
)

# kinedyn's bounds on sizes that MuJoCo leaves to memory: beyond them compiling would take
# gigabytes (the arrays are allocated up front), so they are refused with a ModelError
MAX_KEYS = 100_000  # (actdim: actuators.MAX_ACTDIM)
_GEOMTYPE = {t.name.lower(): int(t) for t in GeomType}
_JOINTTYPE = {t.name.lower(): int(t) for t in JointType}

# elements of the body tree that have no child elements
_LEAF_ELEMENTS = {"inertial", "joint", "freejoint", "geom", "site", "camera", "light"}
# sections that take no attributes (MuJoCo's schema)
_SECTIONS_WITHOUT_ATTRIBUTES = {"visual", "asset", "custom", "contact", "equality", "sensor", "keyframe",
                                "worldbody", "tendon", "actuator"}
# sections accepted and ignored: they hold nothing kinedyn simulates
_IGNORED_SECTIONS = {"size", "statistic", "visual", "asset", "custom"}

# mj_defaultSolRefImp: the solref and solimp of every constraint that does not set them
_SOLREF = [0.02, 1.0]
_SOLIMP = [0.9, 0.95, 0.001, 0.5, 2.0]
# MuJoCo's own defaults for elements (mjs_defaultJoint / Geom / Site)
_JOINT_DEFAULTS = dict(type="hinge", group=0, pos=[0.0, 0.0, 0.0], axis=[0.0, 0.0, 1.0], limited="auto",
                       actuatorfrclimited="auto", stiffness=[0.0, 0.0, 0.0], range=[0.0, 0.0],
                       actuatorfrcrange=[0.0, 0.0], ref=0.0, springref=0.0, armature=0.0,
                       damping=[0.0, 0.0, 0.0], frictionloss=0.0, springdamper=[0.0, 0.0],
                       actuatorgravcomp="false", margin=0.0, solreflimit=_SOLREF, solimplimit=_SOLIMP,
                       solreffriction=_SOLREF, solimpfriction=_SOLIMP)
_GEOM_DEFAULTS = dict(type="sphere", contype=1, conaffinity=1, condim=3, group=0, size=[0.0, 0.0, 0.0],
                      friction=[1.0, 0.005, 0.0001], density=1000.0, shellinertia="false",
                      pos=[0.0, 0.0, 0.0], fluidshape="none", **GEOM_CONTACT_DEFAULTS)
_SITE_DEFAULTS = dict(type="sphere", group=0, pos=[0.0, 0.0, 0.0], size=[0.005, 0.005, 0.005])
# mjs_defaultTendon; springlength -1 -1 means "the length at qpos_spring" (set_const)
_TENDON_DEFAULTS = dict(group=0, limited="auto", actuatorfrclimited="auto", range=[0.0, 0.0],
                        actuatorfrcrange=[0.0, 0.0], frictionloss=0.0, springlength=[-1.0, -1.0],
                        margin=0.0, stiffness=[0.0, 0.0, 0.0], damping=[0.0, 0.0, 0.0], armature=0.0,
                        springyield=0.0, solreflimit=_SOLREF, solimplimit=_SOLIMP, solreffriction=_SOLREF,
                        solimpfriction=_SOLIMP)
# mjs_defaultEquality: active, default solref/solimp; eq_data starts as polycoef (0, 1, 0, 0, 0) with
# torquescale (data[10]) 1, whatever the type: those values survive where nothing overwrites them
_EQUALITY_DEFAULTS = dict(active="true", solref=_SOLREF, solimp=_SOLIMP)
_EQ_DATA0 = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
# equality elements: their schema entry (mjcf.SCHEMA) and type
_EQUALITY_TAGS = {"connect": ("connect", EqType.CONNECT), "weld": ("weld", EqType.WELD),
                  "joint": ("equality_joint", EqType.JOINT), "tendon": ("equality_tendon", EqType.TENDON)}
# number of size parameters each geom type uses (mjGEOMINFO)
_GEOMINFO = {GeomType.PLANE: 3, GeomType.HFIELD: 0, GeomType.SPHERE: 1, GeomType.CAPSULE: 2,
             GeomType.ELLIPSOID: 3, GeomType.CYLINDER: 2, GeomType.BOX: 3, GeomType.MESH: 0,
             GeomType.SDF: 0}


@dataclass
class Frame:
    """A ``<frame>``: its pose (already composed with enclosing frames) and default class."""

    pos: list
    quat: list


@dataclass
class Joint:
    node: Node
    attrs: dict
    frame: Frame | None
    name: str = ""
    type: int = JointType.HINGE
    id: int = -1
    body: Body | None = None
    range: list = field(default_factory=lambda: [0.0, 0.0])
    compiled: dict = field(default_factory=dict)


@dataclass
class Geom:
    node: Node
    attrs: dict
    frame: Frame | None
    body: Body | None = None
    id: int = -1
    mass: float = 0.0
    inertia: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    pos: list = field(default_factory=list)
    quat: list = field(default_factory=list)
    size: list = field(default_factory=list)
    type: int = GeomType.SPHERE
    mesh: meshes.MeshAsset | None = None  # the mesh of a mesh geom
    aabb: list | None = None  # bounding box from the mesh (primitives: contacts.geom_aabb)
    hfield: hfields.HFieldAsset | None = None  # the height field of an hfield geom
    rbound: float | None = None  # bounding-sphere radius of an hfield geom (else contacts.geom_rbound)


@dataclass
class Site:
    node: Node
    attrs: dict
    frame: Frame | None
    body: Body | None = None
    id: int = -1
    pos: list = field(default_factory=list)
    quat: list = field(default_factory=list)
    size: list = field(default_factory=list)
    type: int = GeomType.SPHERE


@dataclass
class CamLight:
    """A ``<camera>`` or ``<light>`` with its merged attributes (mjCCamera, mjCLight)."""

    node: Node
    attrs: dict
    frame: Frame | None
    body: Body | None = None
    pos: list = field(default_factory=list)
    quat: list = field(default_factory=list)  # camera orientation; a light's direction (3)
    target: Body | None = None  # the target body (targetbody* modes)


@dataclass
class Body:
    node: Node | None
    attrs: dict
    parent: Body | None
    frame: Frame | None
    inertial: tuple | None = None  # (node, attrs)
    joints: list = field(default_factory=list)
    geoms: list = field(default_factory=list)
    sites: list = field(default_factory=list)
    cameras: list = field(default_factory=list)
    lights: list = field(default_factory=list)
    children: list = field(default_factory=list)
    id: int = 0
    weldid: int = 0
    pos: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    quat: list = field(default_factory=lambda: [1.0, 0.0, 0.0, 0.0])
    ipos: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    iquat: list = field(default_factory=lambda: [1.0, 0.0, 0.0, 0.0])
    mass: float = 0.0
    inertia: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    dofnum: int = 0
    mocap: bool = False
    align_inverse: tuple | None = None  # set by free-joint alignment: the inverse of the moved frame

    @property
    def name(self) -> str:
        return self.attrs.get("name", "") if self.node is not None else "world"

    def error(self, message: str, attribute: str | None = None) -> ModelError:
        if self.node is None:
            return ModelError(message, element="worldbody", attribute=attribute)
        return self.node.error(message, attribute)


class Compiler:
    """One compilation of one MJCF document (see module docstring for the order of work)."""

    def __init__(self, root: Node, allow_unsupported: bool = False, fusestatic: bool = False):
        self.root = root
        # load models whose features are not simulated (each one warned about) instead of refusing them
        self.allow_unsupported = allow_unsupported
        self.unsimulated: list[str] = []  # with allow_unsupported: what is left out, warned at the end
        # fuse jointless bodies into their parents (MJCF fusestatic; set by the URDF reader)
        self.fusestatic = fusestatic
        # <compiler> settings (mjs_defaultCompiler)
        self.degree = True
        self.autolimits = True
        self.eulerseq = "xyz"
        self.inertiafromgeom = "auto"
        self.fitaabb = False  # fit primitive geoms to a mesh's bounding box, not its inertia box
        self.inertiagrouprange = (0, 5)
        self.boundmass = 0.0
        self.boundinertia = 0.0
        self.balanceinertia = False
        # <option>
        self.opt = dict(timestep=0.002, gravity=[0.0, 0.0, -9.81], wind=[0.0, 0.0, 0.0],
                        magnetic=[0.0, -0.5, 0.0], density=0.0,
                        viscosity=0.0, integrator=int(IntegratorType.EULER), disableflags=0, enableflags=0)
        self.classes: dict[str, dflt.DefaultClass] = {}
        self.world = Body(None, {}, None, None)
        self.bodies: list[Body] = []
        self.joints: list[Joint] = []
        self.geoms: list[Geom] = []
        self.sites: list[Site] = []
        self.cameras: list[CamLight] = []
        self.lights: list[CamLight] = []
        self.settotalmass = -1.0
        self.discardvisual = False
        self.alignfree = False
        self.tendons: list[dict] = []
        self.actuators: list[dict] = []
        self.actuator_names: list[str] = []
        self.actuator_nodes: list[Node] = []
        self.lropt: dict = {}
        self.keys: list[tuple[Node, dict]] = []
        self.sections: dict[str, list[Node]] = {}
        self.contact_excludes: list[tuple[Node, str, str]] = []
        self.equalities: list[dict] = []
        # the constraint solver's <option> attributes that were given (Option has the defaults)
        self.solver_opt: dict = {}
        self.body_simple: list[int] = []  # set by _assemble, read by setconst (invweight0)
        self.model_dir = None  # directory of the model file (mesh files are found from it)
        self.meshes: list[meshes.MeshAsset] = []

    # ---- sections -------------------------------------------------------------------------------

    def run(self):
        root = self.root
        if root.tag != "mujoco":
            raise root.error("XML root element must be <mujoco>")
        model_name = typed_attrs(root).get("model", "")
        for child in root.children:
            self.sections.setdefault(child.tag, []).append(child)
        known = {"compiler", "option", "size", "statistic", "visual", "default", "asset", "worldbody",
                 "contact", "equality", "tendon", "actuator", "sensor", "custom", "keyframe"}
        for child in root.children:
            if child.tag in UNSUPPORTED_ELEMENTS:
                raise child.error(f"<{child.tag}> is not supported yet")
            if child.tag not in known:
                raise child.error("Schema violation: unrecognized element")
            if child.tag in _SECTIONS_WITHOUT_ATTRIBUTES and child.attrib:
                attr = next(iter(child.attrib))
                raise child.error(f"Schema violation: unrecognized attribute: '{attr}'", attr)
        for node in self.sections.get("compiler", []):
            self._compiler(node)
        for node in self.sections.get("option", []):
            self._option(node)
        self.classes = dflt.parse_defaults(self.sections.get("default", []))
        self.meshes = meshes.read_assets(self.sections, self.classes, self.model_dir)
        for mesh in self.meshes:  # MuJoCo compiles every mesh asset before the bodies
            mesh.processed = meshes.compile_mesh(mesh)
        self.hfields = hfields.read_hfields(self.sections, *meshes.mesh_dir(self.sections), self.model_dir)
        for node in self.sections.get("worldbody", []):
            if node.attrib:
                raise node.error("World body cannot have attributes", next(iter(node.attrib)))
            self._body_children(node, self.world, None, self.classes["main"])
        self._number_tree()
        for body in self.bodies:
            self._compile_body(body)
        self._compile_camlights()
        if self.fusestatic:
            fuse_static(self)
        self._check_moving_masses()
        if self.discardvisual:
            self._discard_visual_geoms()
        for node in self.sections.get("tendon", []):
            self._tendons(node)
        for node in self.sections.get("equality", []):
            self._equalities(node)
        for node in self.sections.get("actuator", []):
            self._actuators(node)
        for node in self.sections.get("keyframe", []):
            for key in node.children:
                if key.tag != "key" or key.children:
                    bad = key.children[0] if key.children else key
                    raise bad.error("Schema violation: unrecognized element")
                self.keys.append((key, typed_attrs(key)))
        # <size nkey="n">: MuJoCo pads the keyframes to n with default ones (qpos0, zeros)
        for node in self.sections.get("size", []):
            if node.children:
                raise node.children[0].error("Schema violation: unrecognized element")
            nkey = parse_ints(node, "nkey", node.attrib.get("nkey", ""))
            if len(nkey) > 1:
                raise node.error("attribute 'nkey' has too much data", "nkey")
            if nkey:
                if nkey[0] > MAX_KEYS:
                    raise node.error(f"nkey={nkey[0]}: kinedyn supports at most {MAX_KEYS} keyframes", "nkey")
                self.keys.extend((None, {}) for _ in range(nkey[0] - len(self.keys)))
        self.contacts = ContactCompiler(self)
        self.contacts.read_sections()
        self.sensors = sens.compile_sensors(self)
        self._unsimulated()
        return self._assemble(model_name)

    def _compiler(self, node: Node) -> None:
        a = typed_attrs(node)
        for child in node.children:
            if child.tag != "lengthrange" or child.children:
                raise (child.children[0] if child.tag == "lengthrange" else child).error(
                    "Schema violation: unrecognized element")
            self.lropt.update(typed_attrs(child))  # <lengthrange>: see setconst.set_length_range
        if a.get("coordinate", "local") != "local":
            # MuJoCo 4.0 accepts coordinate="local" (the only frame it supports) and rejects "global"
            raise node.error("global coordinates are no longer supported by MuJoCo", "coordinate")
        if "angle" in a:
            self.degree = a["angle"] == "degree"
        if "autolimits" in a:
            self.autolimits = a["autolimits"] == "true"
        if "eulerseq" in a:
            seq = a["eulerseq"]
            if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                raise node.error(f"eulerseq must be 3 characters from xyzXYZ, got {seq!r}", "eulerseq")
            self.eulerseq = seq
        if "inertiafromgeom" in a:
            self.inertiafromgeom = a["inertiafromgeom"]
        if "inertiagrouprange" in a:
            self.inertiagrouprange = tuple(a["inertiagrouprange"])
        if "fitaabb" in a:
            self.fitaabb = a["fitaabb"] == "true"
        self.boundmass = a.get("boundmass", self.boundmass)
        self.boundinertia = a.get("boundinertia", self.boundinertia)
        if "balanceinertia" in a:
            self.balanceinertia = a["balanceinertia"] == "true"
        if "fusestatic" in a:
            self.fusestatic = a["fusestatic"] == "true"
        if "alignfree" in a:
            self.alignfree = a["alignfree"] == "true"
        self.settotalmass = a.get("settotalmass", self.settotalmass)
        if "discardvisual" in a:
            self.discardvisual = a["discardvisual"] == "true"

    def _option(self, node: Node) -> None:
        a = typed_attrs(node)
        for key in ("timestep", "density", "viscosity"):
            if key in a:
                self.opt[key] = a[key]
        for key in ("gravity", "wind", "magnetic"):
            if key in a:
                self.opt[key] = list(a[key])
        if "integrator" in a:
            name = a["integrator"]
            if name not in ("Euler", "RK4", "implicitfast"):
                raise node.error(f"integrator '{name}' is not supported yet (use Euler, RK4 or implicitfast)",
                                 "integrator")
            self.opt["integrator"] = int({"Euler": IntegratorType.EULER, "RK4": IntegratorType.RK4,
                                          "implicitfast": IntegratorType.IMPLICITFAST}[name])
        if not self.opt["timestep"] > 0:
            raise node.error("timestep must be positive", "timestep")
        self._solver_options(node, a)
        flags = node.find_all("flag")
        if len(flags) > 1:
            raise flags[1].error(f"Schema violation: unique element 'flag' found {len(flags)} times")
        for child in node.children:
            if child.tag != "flag" or child.children:
                raise (child.children[0] if child.tag == "flag" else child).error(
                    "Schema violation: unrecognized element")
            flags = typed_attrs(child)
            for name, value in flags.items():
                if name == "passive":
                    bits, family = int(DisableBit.SPRING | DisableBit.DAMPER), "disableflags"
                elif name in FLAG_BITS_DISABLE:
                    bits, family = 1 << FLAG_BITS_DISABLE.index(name), "disableflags"
                else:
                    bits, family = 1 << FLAG_BITS_ENABLE.index(name), "enableflags"
                on = (value == "disable") if family == "disableflags" else (value == "enable")
                if name == "sleep" and on:
                    raise child.error("sleeping bodies (<flag sleep=\"enable\"/>) are not simulated by "
                                      "kinedyn: MuJoCo would freeze resting bodies, which changes the "
                                      "dynamics", "sleep")
                self.opt[family] = (self.opt[family] | bits) if on else (self.opt[family] & ~bits)

    def _solver_options(self, node: Node, a: dict) -> None:
        """The constraint solver's <option> attributes (mjOption; xml_native_reader Option).

        Vectors given in part keep the rest of their current value, as MuJoCo's reader writes
        the given leading values in place. MuJoCo takes any number (negative iterations or
        tolerances included); kinedyn's Option refuses what its solver cannot use, and that
        refusal is reported here, on the attribute.
        """
        enums = {"solver": SolverType, "cone": ConeType, "jacobian": JacobianType}
        defaults = dict(Option.SOLVER_OPTIONS)
        scratch = Option()
        for key, _ in Option.SOLVER_OPTIONS:
            if key not in a:
                continue
            value = a[key]
            if key in enums:
                value = int(enums[key][value.upper()])
            elif isinstance(value, list):
                current = list(self.solver_opt.get(key, defaults[key]))
                value = value + current[len(value):]
            try:
                setattr(scratch, key, value)
            except ValueError as err:
                raise node.error(f"{err} (kinedyn's constraint solver cannot use it)", key) from None
            self.solver_opt[key] = value

    # ---- tree -----------------------------------------------------------------------------------

    def _class_of(self, node: Node, attrs: dict, context: dflt.DefaultClass) -> dflt.DefaultClass:
        if "class" in attrs:
            return dflt.lookup(self.classes, node, "class", attrs["class"])
        return context

    def _frame_pose(self, node: Node, attrs: dict, outer: Frame | None) -> Frame:
        quat, err = fr.resolve_orientation(attrs, self.degree, self.eulerseq)
        if err:
            raise node.error(f"orientation specification error '{err}'")
        self._single_orientation(node, attrs)
        pos = list(attrs.get("pos", [0.0, 0.0, 0.0]))
        quat = quat or [1.0, 0.0, 0.0, 0.0]
        if outer is not None:
            pos, quat = fr.frame_accum(outer.pos, outer.quat, pos, quat)
        fr.normvec(quat)
        return Frame(pos, quat)

    @staticmethod
    def _single_orientation(node: Node, attrs: dict) -> None:
        given = [k for k in fr.ORIENTATION_ATTRS if k in attrs]
        if len(given) > 1:
            raise node.error(f"multiple orientation specifiers ({', '.join(given)})", given[1])

    def _body_children(self, node: Node, body: Body, frame: Frame | None,
                       context: dflt.DefaultClass) -> None:
        """Collect a body's (or frame's) sub-elements into ``body`` (xml_native_reader Body).

        Depth first in document order with an explicit stack (no recursion: trees may be deep).
        """
        stack = [(iter(node.children), body, frame, context)]
        while stack:
            children, body, frame, context = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                continue
            is_world = body.node is None
            tag = child.tag
            if tag in UNSUPPORTED_ELEMENTS:
                raise child.error(f"<{tag}> is not supported yet")
            if tag in _LEAF_ELEMENTS and child.children:
                # MuJoCo's schema: these take no child elements (geom's <plugin> is not supported)
                raise child.children[0].error("Schema violation: unrecognized element")
            if tag == "body":
                attrs = typed_attrs(child)
                sub_context = context
                if "childclass" in attrs:
                    sub_context = dflt.lookup(self.classes, child, "childclass", attrs["childclass"])
                sub = Body(child, attrs, body, frame)
                body.children.append(sub)
                stack.append((iter(child.children), sub, None, sub_context))
            elif tag == "frame":
                attrs = typed_attrs(child)
                sub_context = context
                if "childclass" in attrs:
                    sub_context = dflt.lookup(self.classes, child, "childclass", attrs["childclass"])
                stack.append((iter(child.children), body, self._frame_pose(child, attrs, frame), sub_context))
            elif tag == "inertial":
                if is_world:
                    raise child.error("World body cannot have inertia")
                if body.inertial is not None:
                    raise child.error("Schema violation: more than one <inertial> in a body")
                attrs = typed_attrs(child)
                for required in ("pos", "mass"):
                    if required not in attrs:
                        raise child.error(f"required attribute missing: '{required}'", required)
                body.inertial = (child, attrs, frame)
            elif tag in ("joint", "freejoint"):
                if is_world:
                    raise child.error("joint found in world body")
                attrs = typed_attrs(child)
                if tag == "freejoint":
                    merged = dict(_JOINT_DEFAULTS, type="free")
                    merged.update({k: v for k, v in attrs.items() if k in ("name", "group", "align")})
                else:
                    cls = self._class_of(child, attrs, context)
                    merged = dflt.merge("joint", dflt.merge("joint", _JOINT_DEFAULTS, cls.joint), attrs)
                joint = Joint(child, merged, frame, name=attrs.get("name", ""), body=body)
                body.joints.append(joint)
            elif tag == "geom":
                attrs = typed_attrs(child)
                cls = self._class_of(child, attrs, context)
                merged = dflt.merge("geom", dflt.merge("geom", _GEOM_DEFAULTS, cls.geom), attrs)
                body.geoms.append(Geom(child, merged, frame, body))
            elif tag == "site":
                attrs = typed_attrs(child)
                cls = self._class_of(child, attrs, context)
                merged = dflt.merge("site", dflt.merge("site", _SITE_DEFAULTS, cls.site), attrs)
                body.sites.append(Site(child, merged, frame, body))
            elif tag in ("camera", "light"):
                attrs = typed_attrs(child)
                dflt.check_camlight(child, attrs)
                cls = self._class_of(child, attrs, context)
                merged = dflt.merge(tag, getattr(cls, tag), attrs)
                items = body.cameras if tag == "camera" else body.lights
                items.append(CamLight(child, merged, frame, body))
            else:
                raise child.error("Schema violation: unrecognized element")

    def _number_tree(self) -> None:
        """Ids depth first in document order (mjCModel::MakeTreeLists)."""
        order: list[Body] = []
        todo = [self.world]  # pre-order with an explicit stack (no recursion: trees may be deep)
        while todo:
            b = todo.pop()
            b.id = len(order)
            order.append(b)
            for g in b.geoms:
                g.id = len(self.geoms)
                self.geoms.append(g)
            for j in b.joints:
                j.id = len(self.joints)
                self.joints.append(j)
            for s in b.sites:
                s.id = len(self.sites)
                self.sites.append(s)
            self.cameras.extend(b.cameras)
            self.lights.extend(b.lights)
            todo.extend(reversed(b.children))
        self.bodies = order
        for b in order[1:]:
            b.mocap = b.attrs.get("mocap") == "true"
            # a body with joints, or a mocap body, starts a new welded group (mjCBody::Compile)
            b.weldid = b.id if (b.joints or b.mocap) else b.parent.weldid
        names = {"world": self.world}  # the world body's name is taken
        for b in order[1:]:
            if b.name:
                if b.name in names:
                    raise b.error(f"repeated name '{b.name}' in body", "name")
                names[b.name] = b
        for kind, items in (("joint", self.joints), ("geom", self.geoms), ("site", self.sites),
                            ("camera", self.cameras), ("light", self.lights)):
            seen = set()
            for item in items:
                name = item.attrs.get("name", "")
                if name:
                    if name in seen:
                        raise item.node.error(f"repeated name '{name}' in {kind}", "name")
                    seen.add(name)

    # ---- body compilation -----------------------------------------------------------------------

    def _compile_body(self, body: Body) -> None:
        """mjCBody::Compile for one body (world included)."""
        if body.node is not None:
            a = body.attrs
            self._single_orientation(body.node, a)
            quat, err = fr.resolve_orientation(a, self.degree, self.eulerseq)
            if err:
                raise body.error(f"error '{err}' in frame alternative")
            body.quat = quat or [1.0, 0.0, 0.0, 0.0]
            fr.normvec(body.quat)
            body.pos = list(a.get("pos", [0.0, 0.0, 0.0]))
            if body.mocap and (body.parent.id != 0 or body.joints):
                raise body.error(f"mocap body '{body.name}' is not a fixed child of world", "mocap")

        explicit = body.inertial is not None
        ipos_defined = False
        if explicit:
            inode, ia, _ = body.inertial
            self._single_orientation(inode, ia)
            if "fullinertia" in ia:
                frame = None
                if inode.inertia_frame:  # URDF: fullinertia given in the origin's frame
                    frame, _ = fr.resolve_orientation(ia, self.degree, self.eulerseq)
                elif any(k in ia for k in fr.ORIENTATION_ATTRS):
                    raise inode.error("fullinertia and inertial orientation cannot both be specified",
                                      "fullinertia")
                if "diaginertia" in ia:
                    raise inode.error("fullinertia and diagonal inertia cannot both be specified",
                                      "fullinertia")
                res = inr.full_inertia(ia["fullinertia"], frame)
                if res is None:
                    raise inode.error("error 'inertia must have positive eigenvalues' in fullinertia",
                                      "fullinertia")
                body.inertia, body.iquat = res
            else:
                body.inertia = list(ia.get("diaginertia", [0.0, 0.0, 0.0]))
                iquat, err = fr.resolve_orientation(ia, self.degree, self.eulerseq)
                if err:
                    raise inode.error(f"error '{err}' in inertia alternative")
                body.iquat = iquat or [1.0, 0.0, 0.0, 0.0]
                fr.normvec(body.iquat)
            body.ipos = list(ia["pos"])
            body.mass = ia["mass"]
            ipos_defined = True

        for geom in body.geoms:
            infer = (body.id > 0 and (not explicit or self.inertiafromgeom == "true")
                     and self.inertiagrouprange[0] <= geom.attrs["group"] <= self.inertiagrouprange[1])
            self._compile_geom(geom, body, infer)

        if body.id > 0 and (self.inertiafromgeom == "true"
                            or (not ipos_defined and self.inertiafromgeom == "auto")):
            # InertiaFromGeom
            sel = [g for g in body.geoms
                   if self.inertiagrouprange[0] <= g.attrs["group"] <= self.inertiagrouprange[1]
                   and g.mass > fr.EPS]
            if sel:
                res = inr.combine([(g.mass, g.pos, g.quat, g.inertia) for g in sel])
                if res is None:
                    raise body.error("error 'inertia must have positive eigenvalues' in alternative for "
                                     "principal axes")
                body.mass, body.ipos, body.iquat, body.inertia = res
                ipos_defined = True

        if not ipos_defined:
            # no inertial frame: MuJoCo copies the body frame (pos and quat) into it
            body.ipos = list(body.pos)
            body.iquat = list(body.quat)

        if body.id > 0:
            body.mass = max(body.mass, self.boundmass)
            body.inertia = [max(i, self.boundinertia) for i in body.inertia]
            if body.mass < 0 or min(body.inertia) < 0:
                raise (body.inertial[0].error("mass and inertia cannot be negative", "mass")
                       if explicit else body.error("mass and inertia cannot be negative"))
            i0, i1, i2 = body.inertia
            if i0 + i1 < i2 or i0 + i2 < i1 or i1 + i2 < i0:
                if self.balanceinertia:
                    body.inertia = [(i0 + i1 + i2) / 3.0] * 3
                else:
                    raise body.error("inertia must satisfy A + B >= C; use 'balanceinertia' to fix")

        if body.frame is not None:
            body.pos, body.quat = fr.frame_accum(body.frame.pos, body.frame.quat, body.pos, body.quat)

        # free-joint alignment: a lone free body's frame moves onto its inertial frame, and what it
        # holds moves the other way (mjCBody::Compile with freejoint align, or compiler alignfree)
        body.align_inverse = None
        if len(body.joints) == 1 and body.joints[0].attrs["type"] == "free" and not body.children:
            align = body.joints[0].attrs.get("align", "auto")
            if align == "true" or (align == "auto" and self.alignfree):
                body.pos, body.quat = fr.frame_accum(body.pos, body.quat, body.ipos, body.iquat)
                inverse = fr.frame_invert(body.ipos, body.iquat)
                body.ipos, body.iquat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
                for geom in body.geoms:
                    geom.pos, geom.quat = fr.frame_accum(*inverse, geom.pos, geom.quat)
                body.align_inverse = inverse

        nfree = sum(j.attrs["type"] == "free" for j in body.joints)
        if nfree and (len(body.joints) > 1):
            raise body.error("free joint can only appear by itself")
        if nfree and body.parent is not None and body.parent.id != 0 and not self.fusestatic:
            raise body.error("free joint can only be used on top level")  # fuse_static checks it later
        body.dofnum = 0
        hasball = False
        for joint in body.joints:
            self._compile_joint(joint)
            body.dofnum += JointType(joint.type).nv
            if joint.type in (JointType.BALL, JointType.HINGE) and hasball:
                raise body.error(f"ball followed by rotation in body '{body.name}'")
            hasball = hasball or joint.type == JointType.BALL
        if body.dofnum > 6:
            raise body.error(f"more than 6 dofs in body '{body.name}'")
        for site in body.sites:
            self._compile_site(site)
            if body.align_inverse is not None:
                site.pos, site.quat = fr.frame_accum(*body.align_inverse, site.pos, site.quat)

    def _discard_visual_geoms(self) -> None:
        """``discardvisual``: drop the geoms that neither collide (contype = conaffinity = 0) nor are
        named by a contact pair, a spatial tendon, a sensor or a custom tuple, after the bodies'
        masses were computed with them (mjCModel::IndexAssets with discard)."""
        referenced = set()
        for section in ("contact", "tendon", "sensor", "custom"):
            for node in self.sections.get(section, []):
                todo = list(node.children)
                while todo:
                    child = todo.pop()
                    todo.extend(child.children)
                    a = child.attrib
                    referenced.update(a[k] for k in ("geom1", "geom2") if k in a)
                    if child.tag == "geom" and "geom" in a:  # a spatial tendon's wrapping geom
                        referenced.add(a["geom"])
                    if a.get("objtype") == "geom" and "objname" in a:
                        referenced.add(a["objname"])
                    if a.get("reftype") == "geom" and "refname" in a:
                        referenced.add(a["refname"])
        lo, hi = self.inertiagrouprange
        for b in self.bodies:
            kept = [g for g in b.geoms if g.attrs["contype"] or g.attrs["conaffinity"]
                    or g.attrs.get("name", "") in referenced and g.attrs.get("name", "")]
            if self.inertiafromgeom == "true" and b.id > 0 and any(
                    g not in kept and lo <= g.attrs["group"] <= hi and g.mass > fr.EPS for g in b.geoms):
                raise b.error("discarding visual geoms would change the inertia of this body, which "
                              "inertiafromgeom 'true' infers from its geoms; with inertiafromgeom 'auto' it "
                              "is kept as an explicit inertial")
            b.geoms = kept
        self.geoms = [g for b in self.bodies for g in b.geoms]
        for i, g in enumerate(self.geoms):
            g.id = i

    def _camlight_arrays(self) -> dict:
        """The cam_* and light_* arrays (CopyObjects); the qpos0 frames (cam_pos0, ...) by setconst."""
        cams, lights = self.cameras, self.lights
        ncam, nlight = len(cams), len(lights)
        znear = 0.01  # <visual><map znear>: the intrinsic focal lengths without a sensor size
        for node in self.sections.get("visual", []):
            for child in node.children:
                if child.tag == "map" and "znear" in child.attrib:
                    znear = float(parse_floats(child, "znear", child.attrib["znear"])[0])
        out = {}
        out["cam_mode"] = np.array([_CAMLIGHT_MODE[c.attrs.get("mode", "fixed")] for c in cams],
                                   dtype=np.int32)
        out["cam_bodyid"] = np.array([c.body.id for c in cams], dtype=np.int32)
        out["cam_targetbodyid"] = np.array([c.target.id if c.target else -1 for c in cams], dtype=np.int32)
        out["cam_pos"] = np.array([c.pos for c in cams], dtype=float).reshape(ncam, 3)
        out["cam_quat"] = np.array([c.quat for c in cams], dtype=float).reshape(ncam, 4)
        for key in ("cam_poscom0", "cam_pos0"):
            out[key] = np.zeros((ncam, 3))
        out["cam_mat0"] = np.zeros((ncam, 3, 3))
        out["cam_projection"] = np.array([c.attrs.get("projection", "perspective") == "orthographic"
                                          for c in cams], dtype=np.int32)
        out["cam_ipd"] = np.array([c.attrs.get("ipd", 0.068) for c in cams], dtype=float)
        out["cam_resolution"] = np.array([c.attrs.get("resolution", [1, 1]) for c in cams],
                                         dtype=np.int32).reshape(ncam, 2)
        out["cam_output"] = np.array([sum(_CAM_OUTPUT.get(w, 0) for w in c.attrs.get("output", "rgb").split())
                                      for c in cams], dtype=np.int32)
        fovy, sensorsize, intrinsic = [], [], []
        for c in cams:
            a = c.attrs
            f32 = np.float32
            sensor = [f32(x) for x in a.get("sensorsize", [0.0, 0.0])]
            fov = a.get("fovy", 45.0)
            if sensor[0] > 0 and sensor[1] > 0:
                res = a.get("resolution", [1, 1])
                density = [f32(res[0]) / sensor[0], f32(res[1]) / sensor[1]]
                given = {k: [f32(x) for x in a.get(k, [0.0, 0.0])]
                         for k in ("focal", "focalpixel", "principal", "principalpixel")}
                intr = [given["focalpixel"][i] / density[i] if given["focalpixel"][i] else given["focal"][i]
                        for i in range(2)]
                intr += [given["principalpixel"][i] / density[i] if given["principalpixel"][i]
                         else given["principal"][i] for i in range(2)]
                # std::atan2 of two floats is the float overload
                fov = float(np.arctan2(sensor[1] / f32(2), intr[1])) * 360.0 / math.pi
            else:
                intr = [f32(znear), f32(znear), f32(0.0), f32(0.0)]
            fovy.append(fov)
            sensorsize.append(sensor)
            intrinsic.append(intr)
        out["cam_fovy"] = np.array(fovy, dtype=float)
        out["cam_sensorsize"] = np.array(sensorsize, dtype=np.float32).reshape(ncam, 2)
        out["cam_intrinsic"] = np.array(intrinsic, dtype=np.float32).reshape(ncam, 4)

        def lcol(key, default, width=None, dtype=np.float32):
            v = np.array([li.attrs.get(key, default) for li in lights], dtype=dtype)
            return v.reshape(nlight, width) if width else v.reshape(nlight)

        out["light_mode"] = np.array([_CAMLIGHT_MODE[li.attrs.get("mode", "fixed")] for li in lights],
                                     dtype=np.int32)
        out["light_bodyid"] = np.array([li.body.id for li in lights], dtype=np.int32)
        out["light_targetbodyid"] = np.array([li.target.id if li.target else -1 for li in lights],
                                             dtype=np.int32)
        types = []
        for li in lights:
            a = li.attrs  # type overrides the legacy directional (dflt.merge keeps the latest given)
            if "type" in a:
                types.append(_LIGHT_TYPE[a["type"]])
            else:
                types.append(1 if a.get("directional") == "true" else 0)
        out["light_type"] = np.array(types, dtype=np.int32)
        out["light_texid"] = np.full(nlight, -1, dtype=np.int32)
        out["light_castshadow"] = np.array([li.attrs.get("castshadow", "true") == "true" for li in lights],
                                           dtype=np.uint8)
        out["light_active"] = np.array([li.attrs.get("active", "true") == "true" for li in lights],
                                       dtype=np.uint8)
        out["light_pos"] = np.array([li.pos for li in lights], dtype=float).reshape(nlight, 3)
        out["light_dir"] = np.array([li.quat for li in lights], dtype=float).reshape(nlight, 3)
        for key in ("light_poscom0", "light_pos0", "light_dir0"):
            out[key] = np.zeros((nlight, 3))
        out["light_bulbradius"] = lcol("bulbradius", 0.02)
        out["light_intensity"] = lcol("intensity", 0.0)
        out["light_range"] = lcol("range", 10.0)
        out["light_softness"] = lcol("softness", 0.2)
        out["light_attenuation"] = lcol("attenuation", [1.0, 0.0, 0.0], 3)
        out["light_cutoff"] = lcol("cutoff", 45.0)
        out["light_exponent"] = lcol("exponent", 10.0)
        out["light_ambient"] = lcol("ambient", [0.0, 0.0, 0.0], 3)
        out["light_diffuse"] = lcol("diffuse", [0.7, 0.7, 0.7], 3)
        out["light_specular"] = lcol("specular", [0.3, 0.3, 0.3], 3)
        return out

    def _compile_camlights(self) -> None:
        """mjCCamera::Compile and mjCLight::Compile: frames, target bodies, checks."""
        bodies = {b.name: b for b in self.bodies if b.name}
        bodies["world"] = self.world

        def target(item, kind):
            name = item.attrs.get("target")
            if name is None:
                return None
            if name not in bodies:
                raise item.node.error(f"unknown target body in {kind}", "target")
            return bodies[name]

        for cam in self.cameras:
            a, node = cam.attrs, cam.node
            self._single_orientation(node, a)
            quat, err = fr.resolve_orientation(a, self.degree, self.eulerseq)
            if err:
                raise node.error(f"orientation specification error '{err}' in camera")
            pos, quat = list(a.get("pos", [0.0, 0.0, 0.0])), quat or [1.0, 0.0, 0.0, 0.0]
            if cam.frame is not None:
                pos, quat = fr.frame_accum(cam.frame.pos, cam.frame.quat, pos, quat)
            fr.normvec(quat)
            if cam.body.align_inverse is not None:
                pos, quat = fr.frame_accum(*cam.body.align_inverse, pos, quat)
            cam.pos, cam.quat = pos, quat
            cam.target = target(cam, "camera")
            if a.get("fovy", 45.0) >= 180:
                raise node.error("fovy too large in camera", "fovy")
            intrinsic_given = any(any(a.get(k, (0.0, 0.0))) for k in
                                  ("focal", "focalpixel", "principal", "principalpixel"))
            sensor = a.get("sensorsize", [0.0, 0.0])
            has_sensor = sensor[0] > 0 and sensor[1] > 0
            if intrinsic_given and not has_sensor:
                raise node.error("focal/principal require sensorsize in camera", "sensorsize")
            res = a.get("resolution", [1, 1])
            if has_sensor and (res[0] <= 0 or res[1] <= 0):
                raise node.error("sensorsize requires positive resolution in camera", "resolution")
        for light in self.lights:
            a, node = light.attrs, light.node
            pos, direction = list(a.get("pos", [0.0, 0.0, 0.0])), list(a.get("dir", [0.0, 0.0, -1.0]))
            if light.frame is not None:
                pos, _ = fr.frame_accum(light.frame.pos, light.frame.quat, pos, [1.0, 0.0, 0.0, 0.0])
                direction = fr.rot_vec_quat(direction, light.frame.quat)
            if fr.normvec(direction) < fr.EPS:
                raise node.error("zero direction in light", "dir")
            if not 0 <= a.get("softness", 0.2) <= 1:
                raise node.error("light softness must be in [0, 1]", "softness")
            if a.get("texture"):  # texture="" is none, as in MuJoCo
                raise node.error("light textures are not supported (kinedyn reads no texture assets)",
                                 "texture")
            if light.body.align_inverse is not None:
                pos, _ = fr.frame_accum(*light.body.align_inverse, pos, [1.0, 0.0, 0.0, 0.0])
                direction = fr.rot_vec_quat(direction, light.body.align_inverse[1])
            light.pos, light.quat = pos, direction
            light.target = target(light, "light")

    def _compile_geom(self, geom: Geom, body: Body, infer: bool) -> None:
        """mjCGeom::Compile: pose (fromto or orientation), size checks, mass and inertia."""
        a, node = geom.attrs, geom.node
        gtype = _GEOMTYPE[a["type"]]
        geom.type = gtype
        if gtype == GeomType.SDF:
            raise node.error("sdf geoms are not supported yet (SDF assets)", "type")
        geom.mesh = self._geom_mesh(geom, gtype)
        geom.hfield = self._geom_hfield(geom, gtype)
        if a["condim"] not in (1, 3, 4, 6):
            raise node.error("invalid condim in geom", "condim")
        # planes only in bodies without dofs: static, or welded to a mocap body
        if gtype == GeomType.PLANE and body.weldid != 0 and not self.bodies[body.weldid].mocap:
            raise node.error("plane only allowed in static bodies", "type")
        self._single_orientation(node, a)
        size = list(a["size"])
        quat = list(a.get("quat", [1.0, 0.0, 0.0, 0.0]))
        fr.normvec(quat)
        pos = list(a["pos"])
        pos, quat = self._fromto_or_orientation(node, a, "geom", gtype, pos, quat, size)
        if geom.mesh is not None and gtype != GeomType.MESH:
            pos, quat, size = meshes.fit_primitive(geom.mesh.processed, gtype, self.fitaabb,
                                                   a.get("fitscale", 1.0), pos, quat)
            geom.mesh = None
        if geom.hfield is None:
            _check_size(node, gtype, size)
        else:  # mjCGeom::Compile: the field's sizes (mass and inertia are a box's of this size)
            size, geom.aabb, geom.rbound = hfields.geom_size_aabb_rbound(geom.hfield.size)
        shell = a["shellinertia"] == "true"
        volume, inertia = inr.geom_volume, inr.geom_inertia
        if geom.mesh is not None:
            pos, quat, size, geom.aabb = meshes.geom_from_mesh(geom.mesh.processed, pos, quat)
            pm = geom.mesh.processed
            volume = lambda *_: pm.volume  # noqa: E731  (mjCGeom::GetVolume of a mesh)
            inertia = lambda _t, _s, mass, _sh: meshes.mesh_inertia(pm, mass)  # noqa: E731
        if infer:
            if "mass" in a:
                if a["mass"] == 0:
                    geom.mass = 0.0
                else:
                    vol = volume(gtype, size, shell)
                    if vol > fr.EPS:
                        geom.mass = a["mass"]
                        geom.inertia = inertia(gtype, size, geom.mass, shell)
                        if a["mass"] < 0:
                            raise node.error("mass, inertia or density are negative in geom", "mass")
            else:
                density = a["density"]
                if density < 0:
                    raise node.error("mass, inertia or density are negative in geom", "density")
                if density != 0:
                    geom.mass = density * volume(gtype, size, shell)
                    geom.inertia = inertia(gtype, size, geom.mass, shell)
            if geom.mass < 0 or min(geom.inertia) < 0:
                raise node.error("mass, inertia or density are negative in geom", "mass")
        if geom.frame is not None:
            pos, quat = fr.frame_accum(geom.frame.pos, geom.frame.quat, pos, quat)
        geom.pos, geom.quat, geom.size = pos, quat, size

    def _geom_hfield(self, geom: Geom, gtype: int) -> hfields.HFieldAsset | None:
        """The height field an hfield geom references (mjCGeom::Compile's hfield checks)."""
        a, node = geom.attrs, geom.node
        if (gtype == GeomType.HFIELD) != ("hfield" in a):
            raise node.error("hfield geom must have valid hfieldid (an hfield geom names an <hfield> "
                             "asset, and only hfield geoms do)", "hfield" if "hfield" in a else "type")
        if "hfield" not in a:
            return None
        found = next((h for h in self.hfields if h.name == a["hfield"]), None)
        if found is None:
            raise node.error(f"hfield '{a['hfield']}' not found (no <asset><hfield> of that name)", "hfield")
        return found

    def _geom_mesh(self, geom: Geom, gtype: int) -> meshes.MeshAsset | None:
        """The mesh asset a geom references (mjCGeom::Compile's mesh checks); None for primitives."""
        a, node = geom.attrs, geom.node
        if "mesh" not in a:
            if gtype == GeomType.MESH:
                raise node.error("mesh geom must have valid meshid (no 'mesh' attribute)", "mesh")
            return None
        found = next((m for m in self.meshes if m.name == a["mesh"]), None)
        if found is None:
            raise node.error(f"mesh '{a['mesh']}' not found (no <asset><mesh> of that name)", "mesh")
        if "fromto" in a:
            raise node.error("fromto cannot be used with mesh geom", "fromto")
        if gtype in (GeomType.PLANE, GeomType.HFIELD):
            raise node.error(f"invalid geom type in fitting mesh {found.name}", "type")
        if gtype != GeomType.MESH:
            return found  # a primitive fitted to the mesh (_compile_geom); it keeps no reference
        if a["shellinertia"] == "true":
            raise node.error("for mesh geoms, inertia should be specified in the mesh asset", "shellinertia")
        found.geoms.append(geom)
        return found

    def _geom_alpha(self) -> np.ndarray:
        """geom_alpha: the alpha of each geom's material (its rgba, else its class's, else 1) or,
        without one, of the geom's rgba (engine.ray skips geoms at 0, as mj_ray)."""
        materials = {}
        for section in self.sections.get("asset", []):
            for node in section.children:
                if node.tag == "material":
                    rgba = node.attrib.get("rgba")
                    if rgba is None:
                        cls = self.classes.get(node.attrib.get("class", "main"))
                        rgba = cls.material_rgba if cls is not None else None
                    materials[node.attrib.get("name", "")] = rgba
        alpha = []
        for g in self.geoms:
            name = g.attrs.get("material")
            if name:
                rgba = materials.get(name)
                alpha.append(float(rgba.split()[3]) if rgba else 1.0)
            else:
                alpha.append(float(g.attrs.get("rgba", [0.5, 0.5, 0.5, 1.0])[3]))
        return np.array(alpha, dtype=float).reshape(len(self.geoms))

    def _mesh_arrays(self) -> tuple[dict, dict]:
        """mesh_* arrays and geom_dataid. A mesh keeps its convex hull (mesh_graph) when a mesh
        geom that can collide (contype, conaffinity or an explicit pair) uses it, its inertia
        is "convex" (mjCModel::TryCompile's SetNeedHull), or it has no faces (they are the hull's)."""
        in_pair = {p[k] for p in self.contacts.pairs for k in ("geom1", "geom2")}
        for mesh in self.meshes:
            mesh.needhull = mesh.attrs["inertia"] == "convex" or mesh.processed.faceless or any(
                g.attrs["contype"] or g.attrs["conaffinity"] or g.id in in_pair for g in mesh.geoms)
        dataid = [g.mesh.id if g.mesh is not None else g.hfield.id if g.hfield is not None else -1
                  for g in self.geoms]
        arr, sizes = meshes.mesh_arrays(self.meshes, dataid)
        harr, hsizes = hfields.hfield_arrays(self.hfields)
        arr.update(harr)
        sizes.update(hsizes)
        return arr, sizes

    def _fromto_or_orientation(self, node: Node, a: dict, kind: str, gtype: int, pos: list, quat: list,
                               size: list) -> tuple[list, list]:
        """(pos, quat) of a geom or site (``kind``) from ``fromto`` (which also sets size[1], and
        for ellipsoids and boxes moves it to size[2]), else quat from the alternative orientation
        attributes, if any (mjCGeom::Compile, mjCSite::Compile)."""
        if "fromto" in a:
            if gtype not in (GeomType.CAPSULE, GeomType.CYLINDER, GeomType.ELLIPSOID, GeomType.BOX):
                raise node.error(f"fromto requires capsule, cylinder, box or ellipsoid in {kind}", "fromto")
            if pos[0] or pos[1] or pos[2]:
                raise node.error(f"both pos and fromto defined in {kind}", "fromto")
            res = fr.fromto_frame(a["fromto"])
            if res is None:
                raise node.error(f"fromto points too close in {kind}", "fromto")
            pos, quat, size[1] = res
            if gtype in (GeomType.ELLIPSOID, GeomType.BOX):
                size[2], size[1] = size[1], size[0]
        else:
            q, err = fr.resolve_orientation({k: v for k, v in a.items() if k != "quat"},
                                            self.degree, self.eulerseq)
            if err:
                raise node.error(f"orientation specification error '{err}' in {kind}")
            if q is not None:
                quat = q
        return pos, quat

    def _compile_site(self, site: Site) -> None:
        """mjCSite::Compile."""
        a, node = site.attrs, site.node
        stype = _GEOMTYPE[a["type"]]
        site.type = stype
        if stype in (GeomType.MESH, GeomType.HFIELD, GeomType.PLANE, GeomType.SDF):
            raise node.error("meshes, hfields and planes not allowed in site", "type")
        self._single_orientation(node, a)
        size = list(a["size"])
        pos = list(a["pos"])
        quat = list(a.get("quat", [1.0, 0.0, 0.0, 0.0]))
        pos, quat = self._fromto_or_orientation(node, a, "site", stype, pos, quat, size)
        if site.frame is not None:
            pos, quat = fr.frame_accum(site.frame.pos, site.frame.quat, pos, quat)
        fr.normvec(quat)
        _check_size(node, stype, size)
        site.pos, site.quat, site.size = pos, quat, size

    def _compile_joint(self, joint: Joint) -> None:
        """mjCJoint::Compile: limits (autolimits, degrees), axis, pos, ref/springref units."""
        a, node = joint.attrs, joint.node
        jtype = _JOINTTYPE[a["type"]]
        joint.type = jtype
        springdamper = list(a["springdamper"])
        if (springdamper[0] or springdamper[1]) and min(springdamper) <= 0:
            raise node.error("when defined, springdamper values must be positive in joint", "springdamper")
        if a.get("springyield"):
            self._report("joint plasticity (springyield) is not simulated", node, "springyield")
        rng = list(a["range"])
        limited = act.LIMITED[a["limited"]]
        if jtype == JointType.FREE:
            if limited == 1:
                raise node.error("limits should not be defined in free joint", "limited")
            limited = 0
        elif limited == 2 and not self.autolimits and not (rng[0] == 0 and rng[1] == 0):
            raise node.error("joint has `range` but not `limited`; set the autolimits=\"true\" compiler "
                             "option, specify `limited` explicitly (\"true\" or \"false\"), or remove the "
                             "`range` attribute", "range")
        is_limited = limited == 1 or (limited == 2 and rng[0] < rng[1])
        if is_limited:
            if rng[0] >= rng[1] and jtype != JointType.BALL:
                raise node.error("range[0] should be smaller than range[1] in joint", "range")
            if rng[0] and jtype == JointType.BALL:
                raise node.error("range[0] should be 0 in ball joint", "range")
            if self.degree and jtype in (JointType.HINGE, JointType.BALL):
                rng = [r * math.pi / 180.0 if r else r for r in rng]
        frc = list(a["actuatorfrcrange"])
        frclimited = act.LIMITED[a["actuatorfrclimited"]]
        if jtype in (JointType.FREE, JointType.BALL):
            frclimited = 0
        elif frclimited == 2 and not self.autolimits and not (frc[0] == 0 and frc[1] == 0):
            raise node.error("joint has `actuatorfrcrange` but not `actuatorfrclimited`; set the "
                             "autolimits=\"true\" compiler option or specify `actuatorfrclimited`",
                             "actuatorfrcrange")
        is_frclimited = frclimited == 1 or (frclimited == 2 and frc[0] < frc[1])
        if is_frclimited and frc[0] >= frc[1]:
            raise node.error("actfrcrange[0] should be smaller than actfrcrange[1] in joint",
                             "actuatorfrcrange")
        if jtype in (JointType.FREE, JointType.BALL):
            axis = [0.0, 0.0, 1.0]
        else:
            axis = list(a["axis"])
            if joint.frame is not None:
                axis = fr.rot_vec_quat(axis, joint.frame.quat)
        if fr.normvec(axis) < fr.EPS:
            raise node.error("axis too small in joint", "axis")
        if jtype == JointType.FREE:
            pos = [0.0, 0.0, 0.0]
        else:
            pos = list(a["pos"])
            if joint.frame is not None:
                pos, _ = fr.frame_accum(joint.frame.pos, joint.frame.quat, pos, [1.0, 0.0, 0.0, 0.0])
        ref, springref = a["ref"], a["springref"]
        if jtype == JointType.HINGE and self.degree:
            ref *= math.pi / 180.0
            springref *= math.pi / 180.0
        joint.range = rng
        joint.compiled = dict(limited=int(is_limited), actfrclimited=int(is_frclimited), range=rng,
                              actfrcrange=frc, axis=axis, pos=pos, ref=ref, springref=springref,
                              group=a["group"], stiffness=a["stiffness"][0], damping=a["damping"][0],
                              stiffnesspoly=list(a["stiffness"][1:3]), dampingpoly=list(a["damping"][1:3]),
                              armature=a["armature"], frictionloss=a["frictionloss"], margin=a["margin"],
                              solref=list(a["solreflimit"]), solimp=list(a["solimplimit"]),
                              solreffriction=list(a["solreffriction"]),
                              solimpfriction=list(a["solimpfriction"]),
                              actgravcomp=int(a["actuatorgravcomp"] == "true"), springdamper=springdamper)

    def _check_moving_masses(self) -> None:
        # valid: the body, or a body welded to it through jointless children, has mass and inertia;
        # children come after their parent in self.bodies, so one backward sweep settles it
        valid = [False] * len(self.bodies)
        for b in reversed(self.bodies[1:]):
            valid[b.id] = (b.mass >= MINVAL and min(b.inertia) >= MINVAL) or any(
                valid[c.id] for c in b.children if not c.joints)
        for b in self.bodies[1:]:
            if b.joints and not valid[b.id]:
                raise b.error("mass and inertia of moving bodies must be larger than mjMINVAL")

    # ---- tendons --------------------------------------------------------------------------------

    def _tendons(self, section: Node) -> None:
        """One <tendon> section: fixed tendons (xml_native_reader Tendon, mjCTendon::Compile)."""
        if section.attrib:
            raise section.error("Schema violation: unrecognized attribute", next(iter(section.attrib)))
        joint_ids = {j.attrs["name"]: j.id for j in self.joints if j.attrs.get("name")}
        names = {t["name"] for t in self.tendons if t["name"]}
        for node in section.children:
            if node.tag not in ("fixed", "spatial"):
                raise node.error("Schema violation: unrecognized element")
            spatial = node.tag == "spatial"
            attrs = dflt.tendon_attrs(typed_attrs(node))
            cls = self.classes["main"]
            if "class" in attrs:
                cls = dflt.lookup(self.classes, node, "class", attrs["class"])
            a = dflt.merge("tendon", dflt.merge("tendon", _TENDON_DEFAULTS, cls.tendon), attrs)
            name = a.get("name", "")
            tid = len(self.tendons)
            path = []
            for sub in node.children:
                if sub.tag not in (("site", "geom", "pulley") if spatial else ("joint",)) or sub.children:
                    bad = sub.children[0] if sub.children else sub
                    raise bad.error("Schema violation: unrecognized element")
                sa = typed_attrs(sub, {"joint": "tendon_joint", "site": "tendon_site", "geom": "tendon_geom",
                                       "pulley": "pulley"}[sub.tag])
                for required in {"joint": ("joint", "coef"), "site": ("site",), "geom": ("geom",),
                                 "pulley": ("divisor",)}[sub.tag]:
                    if required not in sa:
                        raise sub.error(f"required attribute missing: '{required}'", required)
                path.append((sub, sa))
            if not path:
                raise node.error(f"tendon '{name}' (id = {tid}): path cannot be empty")
            wraps = []
            wtypes = []
            if spatial:
                wraps, wtypes = self._spatial_path(node, name, tid, a, path)
            for k, (sub, sa) in enumerate(path if not spatial else ()):
                jid = joint_ids.get(sa["joint"])
                if jid is None:
                    raise sub.error(f"joint '{sa['joint']}' not found in tendon {tid}, wrap {k}", "joint")
                if self.joints[jid].type not in (JointType.SLIDE, JointType.HINGE):
                    raise sub.error(f"joint '{sa['joint']}' in tendon {tid}, wrap {k} must be slide or hinge",
                                    "joint")
                if any(jid == w[0] for w in wraps):
                    raise node.error(f"tendon '{name}' (id = {tid}): joint {k} is repeated")
                wraps.append((jid, sa["coef"]))
                wtypes.append(int(WrapType.JOINT))
            if a["armature"]:
                self._report("tendon armature is not simulated", node, "armature")
            if a["springyield"]:
                self._report("tendon plasticity (springyield) is not simulated", node, "springyield")
            # limited="auto": limited when a range is given, which needs autolimits (checklimited)
            rng, frc = list(a["range"]), list(a["actuatorfrcrange"])
            for key, attr, values in (("limited", "range", rng),
                                      ("actuatorfrclimited", "actuatorfrcrange", frc)):
                given = not (values[0] == 0 and values[1] == 0)
                if act.LIMITED[a[key]] == 2 and not self.autolimits and given:
                    raise node.error(f"tendon has `{attr}` but not `{key}`; set the autolimits=\"true\" "
                                     f"compiler option, specify `{key}` explicitly (\"true\" or \"false\"), "
                                     f"or remove the `{attr}` attribute", attr)
            limited = act._islimited(act.LIMITED[a["limited"]], rng)
            frclimited = act._islimited(act.LIMITED[a["actuatorfrclimited"]], frc)
            if limited and rng[0] >= rng[1]:
                raise node.error("invalid limits in tendon", "range")
            if frclimited and (frc[0] >= frc[1] or frc[0] > 0 or frc[1] < 0):
                raise node.error("invalid actuatorfrcrange in tendon", "actuatorfrcrange")
            spring = list(a["springlength"])
            if spring[0] > spring[1]:
                raise node.error("invalid springlength in tendon", "springlength")
            if name:
                if name in names:
                    raise node.error(f"repeated name '{name}' in tendon", "name")
                names.add(name)
            self.tendons.append(dict(
                node=node, name=name, wraps=wraps, wtypes=wtypes, group=a["group"], limited=int(limited),
                actfrclimited=int(frclimited), range=rng, actfrcrange=frc, margin=a["margin"],
                stiffness=a["stiffness"][0], damping=a["damping"][0], frictionloss=a["frictionloss"],
                stiffnesspoly=list(a["stiffness"][1:3]), dampingpoly=list(a["damping"][1:3]),
                lengthspring=spring, solref_lim=list(a["solreflimit"]), solimp_lim=list(a["solimplimit"]),
                solref_fri=list(a["solreffriction"]), solimp_fri=list(a["solimpfriction"])))

    def _spatial_path(self, node: Node, name: str, tid: int, a: dict, path: list):
        """Wrap objects of a spatial tendon (mjCWrap::ResolveReferences, mjCTendon::Compile checks)."""
        if len(path) < 2:
            raise node.error(f"tendon '{name}' (id = {tid}): spatial path must contain at least two objects")
        if a.get("width", 0.003) <= 0:
            raise node.error(f"tendon '{name}' (id = {tid}) must have positive width", "width")
        site_ids = {s.attrs["name"]: s.id for s in self.sites if s.attrs.get("name")}
        geom_ids = {g.attrs["name"]: g.id for g in self.geoms if g.attrs.get("name")}
        wraps, wtypes = [], []
        for k, (sub, sa) in enumerate(path):
            if sub.tag == "site":
                sid = site_ids.get(sa["site"])
                if sid is None:
                    raise sub.error(f"site '{sa['site']}' not found in wrap {k}", "site")
                wraps.append((sid, 0.0))
                wtypes.append(int(WrapType.SITE))
            elif sub.tag == "pulley":
                if sa["divisor"] < 0:
                    raise sub.error(f"pulley has negative divisor in tendon {tid}, wrap {k}", "divisor")
                wraps.append((-1, sa["divisor"]))
                wtypes.append(int(WrapType.PULLEY))
            else:
                # mjCWrap::ResolveReferences: sphere or cylinder, optional side site (id kept in wrap_prm)
                geom = geom_ids.get(sa["geom"])
                if geom is None:
                    raise sub.error(f"geom '{sa['geom']}' not found in tendon {tid}, wrap {k}", "geom")
                gtype = self.geoms[geom].type
                if gtype not in (GeomType.SPHERE, GeomType.CYLINDER):
                    raise sub.error(f"geom '{sa['geom']}' in tendon {tid}, wrap {k} is not sphere or "
                                    "cylinder", "geom")
                side = -1
                if sa.get("sidesite"):
                    side = site_ids.get(sa["sidesite"])
                    if side is None:
                        raise sub.error(f"side site '{sa['sidesite']}' not found in tendon {tid}, wrap {k}",
                                        "sidesite")
                wraps.append((geom, float(side)))
                wtypes.append(int(WrapType.SPHERE if gtype == GeomType.SPHERE else WrapType.CYLINDER))
        sz = len(wtypes)
        for i, t in enumerate(wtypes):
            if t in (WrapType.SPHERE, WrapType.CYLINDER):
                if i == 0 or i == sz - 1 or wtypes[i - 1] != WrapType.SITE or wtypes[i + 1] != WrapType.SITE:
                    raise node.error(f"tendon '{name}' (id = {tid}): geom at pos {i} not bracketed by sites")
            elif t == WrapType.PULLEY:
                if i > 0 and wtypes[i - 1] == WrapType.PULLEY:
                    raise node.error(f"tendon '{name}' (id = {tid}): consecutive pulleys (pos {i})")
                if i == sz - 1:
                    raise node.error(f"tendon '{name}' (id = {tid}): path ends with pulley")
            else:
                if ((i == 0 or wtypes[i - 1] == WrapType.PULLEY)
                        and (i == sz - 1 or wtypes[i + 1] == WrapType.PULLEY)):
                    raise node.error(f"tendon '{name}' (id = {tid}): site {i} needs a neighbor that is not a "
                                     "pulley")
                if i < sz - 1 and wtypes[i + 1] == WrapType.SITE and wraps[i][0] == wraps[i + 1][0]:
                    raise node.error(f"tendon '{name}' (id = {tid}): site {i} is repeated")
        return wraps, wtypes

    # ---- equality constraints --------------------------------------------------------------------

    def _equalities(self, section: Node) -> None:
        """One <equality> section (xml_native_reader OneEquality, mjCEquality::ResolveReferences).

        eq_data is left as the reader stores it; ``setconst`` completes it at qpos0 (the
        connect anchor in body2's frame, the weld's relative pose when relpose is omitted).
        """
        names = {e["name"] for e in self.equalities if e["name"]}
        for node in section.children:
            tag = node.tag
            if tag in ("flex", "flexvert", "flexstrain"):
                raise node.error(f"<{tag}> equality constraints act on flexes, which kinedyn does not "
                                 "support")
            if tag not in _EQUALITY_TAGS:
                raise node.error("Schema violation: unrecognized element")
            if node.children:
                raise node.children[0].error("Schema violation: unrecognized element")
            schema, eqtype = _EQUALITY_TAGS[tag]
            attrs = typed_attrs(node, schema)
            cls = self.classes["main"]
            if "class" in attrs:
                cls = dflt.lookup(self.classes, node, "class", attrs["class"])
            a = dflt.merge(schema, dflt.merge("equality", _EQUALITY_DEFAULTS, cls.equality), attrs)
            eid = len(self.equalities)
            data = list(_EQ_DATA0)
            if eqtype in (EqType.CONNECT, EqType.WELD):
                objtype, refs = self._connect_or_weld(node, a, eqtype, data)
            else:
                kind = "joint" if eqtype == EqType.JOINT else "tendon"
                if f"{kind}1" not in a:
                    raise node.error(f"required attribute missing: '{kind}1'", f"{kind}1")
                objtype = ObjType.UNKNOWN  # MuJoCo leaves eq_objtype 0 for joint and tendon equalities
                refs = [(f"{kind}{k}", a[f"{kind}{k}"]) for k in (1, 2) if f"{kind}{k}" in a]
                poly = a.get("polycoef", [])
                data[:len(poly)] = poly
            obj1, obj2 = self._equality_objects(node, eid, eqtype, objtype, refs)
            name = a.get("name", "")
            if name:
                if name in names:
                    raise node.error(f"repeated name '{name}' in equality", "name")
                names.add(name)
            self.equalities.append(dict(
                node=node, name=name, type=int(eqtype), obj1=obj1, obj2=obj2, objtype=int(objtype),
                active=int(a["active"] == "true"), solref=list(a["solref"]), solimp=list(a["solimp"]),
                data=data))

    @staticmethod
    def _connect_or_weld(node: Node, a: dict, eqtype: int, data: list) -> tuple[int, list]:
        """Connect and weld: body or site semantics (the schema's either/or), their eq_data entries.

        Body semantics (body1, with anchor for connect): data[0:3] is the anchor (in body1's
        frame for connect, body2's for weld), a weld's relpose goes to data[3:10]. Site
        semantics (site1 and site2): nothing is read but a weld's torquescale (data[10]).
        """
        body_attrs = ("body1", "body2", "anchor") + (("relpose",) if eqtype == EqType.WELD else ())
        given_sites = [k for k in ("site1", "site2") if k in a]
        given_bodies = [k for k in body_attrs if k in a]
        quoted = ", ".join(f"'{k}'" for k in body_attrs)
        if given_sites and given_bodies:
            raise node.error(f"Schema violation: at most one of ('site1', 'site2'), ({quoted}) can be "
                             "specified", given_sites[0])
        body_semantic = "body1" in a and ("anchor" in a or eqtype == EqType.WELD)
        if not body_semantic and not ("site1" in a and "site2" in a):
            required = "('body1', 'anchor')" if eqtype == EqType.CONNECT else "'body1'"
            raise node.error(f"Schema violation: one of ('site1', 'site2'), {required} must be specified")
        if eqtype == EqType.WELD:
            data[10] = a.get("torquescale", data[10])
        if not body_semantic:
            return ObjType.SITE, [(k, a[k]) for k in ("site1", "site2")]
        data[0:3] = a.get("anchor", [0.0, 0.0, 0.0])
        if "relpose" in a:
            data[3:10] = a["relpose"]
        return ObjType.BODY, [(k, a[k]) for k in ("body1", "body2") if k in a]

    def _equality_objects(self, node: Node, eid: int, eqtype: int, objtype: int,
                          refs: list) -> tuple[int, int]:
        """(obj1, obj2) ids (mjCEquality::ResolveReferences): a missing body2 is the world, a
        missing joint2 or tendon2 is -1; the two must differ; joints must be hinge or slide."""
        if objtype == ObjType.BODY:
            ids = {b.name: b.id for b in self.bodies if b.id and b.name}
            ids["world"] = 0
        elif objtype == ObjType.SITE:
            ids = {s.attrs["name"]: s.id for s in self.sites if s.attrs.get("name")}
        elif eqtype == EqType.JOINT:
            ids = {j.attrs["name"]: j.id for j in self.joints if j.attrs.get("name")}
        else:
            ids = {t["name"]: i for i, t in enumerate(self.tendons) if t["name"]}
        found = []
        for k, (attr, name) in enumerate(refs):
            if name not in ids:
                where = "" if k == 0 else f" {eid}"
                raise node.error(f"unknown element '{name}' in equality constraint{where}", attr)
            found.append(ids[name])
        obj1 = found[0]
        obj2 = found[1] if len(found) > 1 else (0 if objtype == ObjType.BODY else -1)
        if obj1 == obj2:
            raise node.error(f"element '{refs[0][1]}' is repeated in equality constraint {eid}",
                             refs[-1][0])
        if eqtype == EqType.JOINT:
            for (attr, _), jid in zip(refs, found, strict=True):
                if self.joints[jid].type not in (JointType.HINGE, JointType.SLIDE):
                    raise node.error("only HINGE and SLIDE joint allowed in constraint", attr)
        return obj1, obj2

    # ---- actuators ------------------------------------------------------------------------------

    def _actuators(self, section: Node) -> None:
        if section.attrib:
            raise section.error("Schema violation: unrecognized attribute", next(iter(section.attrib)))
        joint_ids = {j.attrs["name"]: j.id for j in self.joints if j.attrs.get("name")}
        tendon_ids = {t["name"]: i for i, t in enumerate(self.tendons) if t["name"]}
        site_ids = {s.attrs["name"]: s.id for s in self.sites if s.attrs.get("name")}
        body_ids = {b.name: b.id for b in self.bodies if b.id and b.name}
        body_ids.setdefault("world", 0)
        for node in section.children:
            tag = node.tag
            if tag in ("orientation", "pid", "dcmotor"):
                self._report(f"<{tag}> actuators are not simulated (left out of the model)", node)
                continue
            if tag == "plugin":
                raise node.error("actuator plugins are not supported")
            if tag not in ACTUATOR_TAGS:
                raise node.error("Schema violation: unrecognized element")
            if node.children:
                raise node.children[0].error("Schema violation: unrecognized element")
            attrs = typed_attrs(node)
            cls = self.classes["main"]
            if "class" in attrs:
                cls = dflt.lookup(self.classes, node, "class", attrs["class"])
            spec = act.expand(tag, attrs, node, cls.actuators, self._report)
            self.actuators.append(act.compile_actuator(spec, node, self.autolimits, self.joints, joint_ids,
                                                       self.tendons, tendon_ids, site_ids, body_ids,
                                                       self._report))
            self.actuator_nodes.append(node)
            self.actuator_names.append(attrs.get("name", ""))
        # names are unique across all <actuator> sections
        seen = set()
        for name, node in zip(self.actuator_names, self.actuator_nodes, strict=True):
            if name and name in seen:
                raise node.error(f"repeated name '{name}' in actuator", "name")
            seen.add(name)

    # ---- unsimulated features -------------------------------------------------------------------

    def _report(self, message: str, node: Node | None = None, attribute: str | None = None) -> None:
        """A feature that changes the dynamics and that kinedyn does not simulate: ModelError, or
        with ``allow_unsupported`` the model loads without it and one warning says so."""
        if not self.allow_unsupported:
            message += " (pass allow_unsupported=True to load the model without it)"
            if node is None:
                raise ModelError(message)
            raise node.error(message, attribute)
        where = ""
        if node is not None:
            attr = f", attribute {attribute!r}" if attribute else ""
            where = f" (element <{node.tag}>{attr}, line {node.line})"
        if message + where not in self.unsimulated:
            self.unsimulated.append(message + where)

    def _unsimulated(self) -> None:
        for message in self.unsimulated:
            # stacklevel: _unsimulated < run < compile_mjcf < Model.from_xml_* < caller
            warnings.warn(message, UnsimulatedFeatureWarning, stacklevel=5)
        fluid = self.opt["density"] or self.opt["viscosity"]
        if fluid and self.opt["integrator"] == IntegratorType.IMPLICITFAST:
            node = self.sections["option"][-1]
            raise node.error(FLUID_IMPLICIT, "integrator")

    # ---- arrays ---------------------------------------------------------------------------------

    def _attached_key(self, node: Node, k: int, key_qpos, key_qvel, key_ctrl, jnt_qposadr,
                      jnt_dofadr) -> None:
        """A keyframe of an attached model (xml/expand.py): its values go to the attached joints
        and actuators; the rest keeps qpos0 / zeros (as mjs_attach places them)."""
        joints = {id(j.node): j.id for j in self.joints}
        actuators = {id(node): i for i, node in enumerate(self.actuator_nodes)}
        for attr, dst, adrs in (("qpos", key_qpos, jnt_qposadr), ("qvel", key_qvel, jnt_dofadr)):
            for joint, values in node.attached_key.get(attr, []):
                if id(joint) not in joints:
                    raise node.error("keyframe of an attached model: its joint is not in the model", attr)
                adr = adrs[joints[id(joint)]]
                dst[k, adr:adr + len(values)] = values
        for actuator, value in node.attached_key.get("ctrl", []):
            if id(actuator) not in actuators:
                raise node.error("keyframe of an attached model: its actuator is not in the model", "ctrl")
            key_ctrl[k, actuators[id(actuator)]] = value

    def _assemble(self, model_name: str):


        bodies, joints, geoms, sites = self.bodies, self.joints, self.geoms, self.sites
        nbody, njnt, ngeom, nsite = len(bodies), len(joints), len(geoms), len(sites)
        nq = sum(JointType(j.type).nq for j in joints)
        nv = sum(JointType(j.type).nv for j in joints)
        nu = len(self.actuators)
        na = sum(a["actdim"] for a in self.actuators)
        arr: dict[str, np.ndarray] = {}

        # bodies
        parent = [b.parent.id if b.parent is not None else 0 for b in bodies]
        arr["body_parentid"] = np.array(parent)
        rootid = [0] * nbody
        for b in bodies[1:]:
            rootid[b.id] = b.id if b.parent.id == 0 else rootid[b.parent.id]
        arr["body_rootid"] = np.array(rootid)
        arr["body_weldid"] = np.array([b.weldid for b in bodies])
        arr["body_pos"] = np.array([b.pos for b in bodies], dtype=float).reshape(nbody, 3)
        arr["body_quat"] = np.array([b.quat for b in bodies], dtype=float).reshape(nbody, 4)
        arr["body_ipos"] = np.array([b.ipos for b in bodies], dtype=float).reshape(nbody, 3)
        arr["body_iquat"] = np.array([b.iquat for b in bodies], dtype=float).reshape(nbody, 4)
        arr["body_mass"] = np.array([b.mass for b in bodies], dtype=float)
        arr["body_gravcomp"] = np.array([b.attrs.get("gravcomp", 0.0) if b.node is not None else 0.0
                                         for b in bodies], dtype=float)
        arr["body_inertia"] = np.array([b.inertia for b in bodies], dtype=float).reshape(nbody, 3)
        if self.settotalmass > 0:
            # mj_setTotalmass: scale every mass and inertia to the given total
            total = sum(float(x) for x in arr["body_mass"][1:])
            scale = max(MINVAL, self.settotalmass / max(MINVAL, total))
            arr["body_mass"][1:] *= scale
            arr["body_inertia"][1:] *= scale
        mocap_bodies = [b for b in bodies if b.mocap]
        nmocap = len(mocap_bodies)
        mocapid = [-1] * nbody
        for k, b in enumerate(mocap_bodies):
            mocapid[b.id] = k
        arr["body_mocapid"] = np.array(mocapid, dtype=np.int32)
        subtree = arr["body_mass"].copy()
        for i in range(nbody - 1, 0, -1):
            subtree[parent[i]] += subtree[i]
        arr["body_subtreemass"] = subtree

        # joints and dofs (CopyTree)
        jnt_qposadr, jnt_dofadr = [], []
        qpos0, qpos_spring = np.zeros(nq), np.zeros(nq)
        dof_bodyid, dof_jntid, dof_parentid = [], [], []
        dof_armature, dof_damping, dof_frictionloss, dof_solref, dof_solimp = [], [], [], [], []
        dof_dampingpoly = []
        body_jntnum, body_jntadr, body_dofnum, body_dofadr = [], [], [], []
        lastdof = [-1] * nbody
        qadr = dadr = jadr = 0
        for b in bodies:
            body_jntnum.append(len(b.joints))
            body_jntadr.append(jadr if b.joints else -1)
            body_dofnum.append(b.dofnum)
            body_dofadr.append(dadr if b.dofnum else -1)
            last = lastdof[b.parent.id] if b.parent is not None else -1
            for j in b.joints:
                c = j.compiled
                jnt_qposadr.append(qadr)
                jnt_dofadr.append(dadr)
                if j.type == JointType.FREE:
                    qpos0[qadr:qadr + 3] = b.pos
                    qpos0[qadr + 3:qadr + 7] = b.quat
                    qpos_spring[qadr:qadr + 7] = qpos0[qadr:qadr + 7]
                elif j.type == JointType.BALL:
                    qpos0[qadr:qadr + 4] = (1.0, 0.0, 0.0, 0.0)
                    qpos_spring[qadr:qadr + 4] = (1.0, 0.0, 0.0, 0.0)
                else:
                    qpos0[qadr] = c["ref"]
                    qpos_spring[qadr] = c["springref"]
                for _ in range(JointType(j.type).nv):
                    dof_bodyid.append(b.id)
                    dof_jntid.append(j.id)
                    dof_parentid.append(last)
                    last = dadr
                    dof_armature.append(c["armature"])
                    dof_damping.append(c["damping"])
                    dof_dampingpoly.append(c["dampingpoly"])
                    dof_frictionloss.append(c["frictionloss"])
                    dof_solref.append(c["solreffriction"])  # mjCModel::CopyTree: each dof of the joint
                    dof_solimp.append(c["solimpfriction"])
                    dadr += 1
                qadr += JointType(j.type).nq
                jadr += 1
            lastdof[b.id] = last
        arr.update(body_jntnum=np.array(body_jntnum), body_jntadr=np.array(body_jntadr),
                   body_dofnum=np.array(body_dofnum), body_dofadr=np.array(body_dofadr))
        arr["body_geomnum"] = np.array([len(b.geoms) for b in bodies])
        arr["body_geomadr"] = np.array([b.geoms[0].id if b.geoms else -1 for b in bodies])
        arr["qpos0"], arr["qpos_spring"] = qpos0, qpos_spring

        def jcol(key, width=None):
            vals = [j.compiled[key] for j in joints]
            a = np.array(vals, dtype=float)
            return a.reshape(njnt, width) if width else a

        arr["jnt_type"] = np.array([j.type for j in joints], dtype=np.int32)
        arr["jnt_qposadr"] = np.array(jnt_qposadr, dtype=np.int32)
        arr["jnt_dofadr"] = np.array(jnt_dofadr, dtype=np.int32)
        arr["jnt_bodyid"] = np.array([j.body.id for j in joints], dtype=np.int32)
        arr["jnt_group"] = np.array([j.compiled["group"] for j in joints], dtype=np.int32)
        arr["jnt_limited"] = np.array([j.compiled["limited"] for j in joints], dtype=np.uint8)
        arr["jnt_actfrclimited"] = np.array([j.compiled["actfrclimited"] for j in joints], dtype=np.uint8)
        arr["jnt_actgravcomp"] = np.array([j.compiled["actgravcomp"] for j in joints], dtype=np.uint8)
        arr["jnt_pos"] = jcol("pos", 3)
        arr["jnt_axis"] = jcol("axis", 3)
        arr["jnt_stiffness"] = jcol("stiffness")
        arr["jnt_stiffnesspoly"] = jcol("stiffnesspoly", NPOLY)
        arr["jnt_range"] = jcol("range", 2)
        arr["jnt_actfrcrange"] = jcol("actfrcrange", 2)
        arr["jnt_margin"] = jcol("margin")
        arr["jnt_solref"] = jcol("solref", NREF)
        arr["jnt_solimp"] = jcol("solimp", NIMP)
        arr["dof_bodyid"] = np.array(dof_bodyid, dtype=np.int32)
        arr["dof_jntid"] = np.array(dof_jntid, dtype=np.int32)
        arr["dof_parentid"] = np.array(dof_parentid, dtype=np.int32)
        arr["dof_armature"] = np.array(dof_armature, dtype=float)
        arr["dof_damping"] = np.array(dof_damping, dtype=float)
        arr["dof_dampingpoly"] = np.array(dof_dampingpoly, dtype=float).reshape(nv, NPOLY)
        arr["dof_frictionloss"] = np.array(dof_frictionloss, dtype=float)
        arr["dof_solref"] = np.array(dof_solref, dtype=float).reshape(nv, NREF)
        arr["dof_solimp"] = np.array(dof_solimp, dtype=float).reshape(nv, NIMP)

        # tree-sparse M (mj_makeDofDofSparse, reduced): row i = ancestors of dof i in ascending
        # order, then i itself; rows of "simple" dofs hold only the diagonal, because MuJoCo 4.0
        # keeps M diagonal for bodies whose inertia cannot couple them to their ancestors
        self.body_simple = _body_simple(bodies)
        simplenum = _dof_simplenum(self.body_simple, dof_bodyid)
        rownnz, rowadr, colind = [], [], []
        for i in range(nv):
            anc = []
            p = dof_parentid[i] if not simplenum[i] else -1
            while p >= 0:
                anc.append(p)
                p = dof_parentid[p]
            row = sorted(anc) + [i]
            rowadr.append(len(colind))
            rownnz.append(len(row))
            colind.extend(row)
        arr["M_rownnz"] = np.array(rownnz, dtype=np.int32)
        arr["M_rowadr"] = np.array(rowadr, dtype=np.int32)
        arr["M_colind"] = np.array(colind, dtype=np.int32)
        nC = len(colind)

        # geoms and sites
        arr["geom_type"] = np.array([g.type for g in geoms], dtype=np.int32)
        for key, attr in (("geom_contype", "contype"), ("geom_conaffinity", "conaffinity"),
                          ("geom_condim", "condim"), ("geom_group", "group")):
            arr[key] = np.array([g.attrs[attr] for g in geoms], dtype=np.int32)
        arr["geom_bodyid"] = np.array([_body_of(bodies, g).id for g in geoms], dtype=np.int32)
        arr["geom_size"] = np.array([g.size for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_alpha"] = self._geom_alpha()
        mesh_arr, mesh_sizes = self._mesh_arrays()
        arr.update(mesh_arr)
        arr["geom_pos"] = np.array([g.pos for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_quat"] = np.array([g.quat for g in geoms], dtype=float).reshape(ngeom, 4)
        arr["geom_friction"] = np.array([g.attrs["friction"] for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_fluid"] = np.array([geom_fluid(g.type, g.size, g.attrs["fluidshape"] == "ellipsoid",
                                                 _fluidcoef(g.attrs)) for g in geoms],
                                     dtype=float).reshape(ngeom, NFLUID)
        arr["site_type"] = np.array([s.type for s in sites], dtype=np.int32)
        arr["site_bodyid"] = np.array([_body_of(bodies, s).id for s in sites], dtype=np.int32)
        arr["site_group"] = np.array([s.attrs["group"] for s in sites], dtype=np.int32)
        arr["site_size"] = np.array([s.size for s in sites], dtype=float).reshape(nsite, 3)
        arr["site_pos"] = np.array([s.pos for s in sites], dtype=float).reshape(nsite, 3)
        arr["site_quat"] = np.array([s.quat for s in sites], dtype=float).reshape(nsite, 4)
        # frames that coincide with their body's frame or inertial frame are copied by kinematics
        arr["body_sameframe"] = fr.same_frame(arr["body_ipos"], arr["body_iquat"], None, None)
        for kind in ("geom", "site"):
            owner = arr[f"{kind}_bodyid"]
            arr[f"{kind}_sameframe"] = fr.same_frame(arr[f"{kind}_pos"], arr[f"{kind}_quat"],
                                                  arr["body_ipos"][owner], arr["body_iquat"][owner])

        # tendons and their paths (CopyObjects): fixed tendons hold (joint, coef) wraps
        tendons = self.tendons
        ntendon = len(tendons)
        nwrap = sum(len(t["wraps"]) for t in tendons)
        tendon_adr, wadr = [], 0
        for t in tendons:
            tendon_adr.append(wadr)
            wadr += len(t["wraps"])

        def tcol(key, width=None, dtype=float):
            v = np.array([t[key] for t in tendons], dtype=dtype)
            return v.reshape(ntendon, width) if width else v.reshape(ntendon)

        arr["tendon_adr"] = np.array(tendon_adr, dtype=np.int32)
        arr["tendon_num"] = np.array([len(t["wraps"]) for t in tendons], dtype=np.int32)
        arr["tendon_group"] = tcol("group", dtype=np.int32)
        arr["tendon_limited"] = tcol("limited", dtype=np.uint8)
        arr["tendon_actfrclimited"] = tcol("actfrclimited", dtype=np.uint8)
        arr["tendon_range"] = tcol("range", 2)
        arr["tendon_actfrcrange"] = tcol("actfrcrange", 2)
        arr["tendon_margin"] = tcol("margin")
        arr["tendon_stiffness"] = tcol("stiffness")
        arr["tendon_damping"] = tcol("damping")
        arr["tendon_stiffnesspoly"] = tcol("stiffnesspoly", NPOLY)
        arr["tendon_dampingpoly"] = tcol("dampingpoly", NPOLY)
        arr["tendon_armature"] = np.zeros(ntendon)  # a tendon armature is refused (_tendons)
        arr["tendon_frictionloss"] = tcol("frictionloss")
        arr["tendon_solref_lim"] = tcol("solref_lim", NREF)
        arr["tendon_solimp_lim"] = tcol("solimp_lim", NIMP)
        arr["tendon_solref_fri"] = tcol("solref_fri", NREF)
        arr["tendon_solimp_fri"] = tcol("solimp_fri", NIMP)
        arr["tendon_lengthspring"] = tcol("lengthspring", 2)  # -1 -1 resolved by set_const
        arr["tendon_length0"] = np.zeros(ntendon)  # set_const
        arr["wrap_type"] = np.array([w for t in tendons for w in t["wtypes"]], dtype=np.int32)
        arr["wrap_objid"] = np.array([w[0] for t in tendons for w in t["wraps"]], dtype=np.int32)
        arr["wrap_prm"] = np.array([w[1] for t in tendons for w in t["wraps"]], dtype=float)

        # actuators
        acts = self.actuators
        actadr, adr = [], 0
        for a in acts:
            actadr.append(adr if a["actdim"] else -1)
            adr += a["actdim"]

        def acol(key, width=None, dtype=float):
            v = np.array([a[key] for a in acts], dtype=dtype)
            return v.reshape(nu, width) if width else v.reshape(nu)

        arr["actuator_trntype"] = acol("trntype", dtype=np.int32)
        arr["actuator_dyntype"] = acol("dyntype", dtype=np.int32)
        arr["actuator_gaintype"] = acol("gaintype", dtype=np.int32)
        arr["actuator_biastype"] = acol("biastype", dtype=np.int32)
        arr["actuator_trnid"] = np.array([[a["trnid"], a["trnid2"]] for a in acts],
                                         dtype=np.int32).reshape(nu, 2)
        arr["actuator_actadr"] = np.array(actadr, dtype=np.int32)
        arr["actuator_actnum"] = acol("actdim", dtype=np.int32)
        arr["actuator_group"] = acol("group", dtype=np.int32)
        for key in ("ctrllimited", "forcelimited", "actlimited", "actearly"):
            arr[f"actuator_{key}"] = acol(key, dtype=np.uint8)
        arr["actuator_dynprm"] = acol("dynprm", 10)
        arr["actuator_gainprm"] = acol("gainprm", 10)
        arr["actuator_biasprm"] = acol("biasprm", 10)
        arr["actuator_ctrlrange"] = acol("ctrlrange", 2)
        arr["actuator_forcerange"] = acol("forcerange", 2)
        arr["actuator_actrange"] = acol("actrange", 2)
        arr["actuator_gear"] = acol("gear", 6)
        arr["actuator_cranklength"] = acol("cranklength")
        arr["actuator_damping"] = acol("damping")
        arr["actuator_dampingpoly"] = acol("dampingpoly", NPOLY)
        arr["actuator_armature"] = acol("armature")
        # the joint or tendon each actuator's damping and armature go to (mj_actuatorDamping reads
        # them there): the actuator's id, or -2 when several actuators add to the same target
        arr["jnt_actuatorid"] = np.full(njnt, -1, dtype=np.int32)
        arr["tendon_actuatorid"] = np.full(ntendon, -1, dtype=np.int32)
        for i, a in enumerate(acts):
            if not (a["damping"] or any(a["dampingpoly"]) or a["armature"]):
                continue
            target = arr["tendon_actuatorid"] if a["trntype"] == TrnType.TENDON else arr["jnt_actuatorid"]
            target[a["trnid"]] = i if target[a["trnid"]] == -1 else -2
        arr["actuator_acc0"] = np.zeros(nu)
        arr["actuator_length0"] = np.zeros(nu)
        arr["actuator_lengthrange"] = acol("lengthrange", 2)

        # keyframes (mjCKey::Compile): missing parts default to qpos0 / zeros
        nkey = len(self.keys)
        key_time, key_qpos = np.zeros(nkey), np.tile(qpos0, (nkey, 1)).reshape(nkey, nq)
        key_qvel, key_act, key_ctrl = np.zeros((nkey, nv)), np.zeros((nkey, na)), np.zeros((nkey, nu))
        # mocap poses default to the mocap bodies' body_pos and body_quat
        key_mpos = np.tile(np.array([b.pos for b in mocap_bodies], dtype=float).reshape(nmocap, 3),
                           (nkey, 1, 1))
        key_mquat = np.tile(np.array([b.quat for b in mocap_bodies], dtype=float).reshape(nmocap, 4),
                            (nkey, 1, 1))
        key_names = []
        for k, (node, a) in enumerate(self.keys):
            key_names.append(a.get("name", ""))
            key_time[k] = a.get("time", 0.0)
            for attr, dst, n in (("qpos", key_qpos, nq), ("qvel", key_qvel, nv), ("act", key_act, na),
                                 ("ctrl", key_ctrl, nu)):
                if attr in a and a[attr]:
                    # MuJoCo 4.0 pads a short vector with the defaults and refuses a long one
                    if len(a[attr]) > n:
                        raise node.error(f"keyframe '{a.get('name', '')}': invalid {attr} size, expected "
                                         f"{n}, got {len(a[attr])}", attr)
                    dst[k, :len(a[attr])] = a[attr]
            if node is not None and node.attached_key is not None:
                self._attached_key(node, k, key_qpos, key_qvel, key_ctrl, jnt_qposadr, jnt_dofadr)
            for attr, dst, width in (("mpos", key_mpos, 3), ("mquat", key_mquat, 4)):
                if attr in a and a[attr]:
                    # a short vector sets the leading mocap bodies it covers whole (the others keep
                    # their body pose); a long one is refused
                    if len(a[attr]) > width * nmocap:
                        raise node.error(f"keyframe '{a.get('name', '')}': invalid {attr} size, expected "
                                         f"{width * nmocap}, got {len(a[attr])}", attr)
                    whole = len(a[attr]) // width
                    dst[k, :whole] = np.reshape(a[attr][:whole * width], (whole, width))
        # mjuu_normvec on the keyframes' mocap quaternions (a tiny one is left as it is)
        for quats in key_mquat:
            for q in quats:
                fr.normvec(q)
        # MuJoCo normalises the quaternions of ball and free joints in keyframes (mju_normalize4)
        for j in joints:
            if j.type in (JointType.FREE, JointType.BALL):
                adr = jnt_qposadr[j.id] + (3 if j.type == JointType.FREE else 0)
                for k in range(nkey):
                    q = key_qpos[k, adr:adr + 4]
                    norm = math.sqrt(float(q @ q))
                    if norm < MINVAL:
                        key_qpos[k, adr:adr + 4] = (1.0, 0.0, 0.0, 0.0)
                    elif abs(norm - 1) > MINVAL:
                        key_qpos[k, adr:adr + 4] = q / norm
        arr.update(key_time=key_time, key_qpos=key_qpos, key_qvel=key_qvel, key_act=key_act,
                   key_ctrl=key_ctrl, key_mpos=key_mpos, key_mquat=key_mquat)
        arr.update(self._camlight_arrays())

        contact_sizes = self.contacts.arrays(arr)

        # equality constraints; eq_data is completed at qpos0 by setconst
        eqs = self.equalities
        neq = len(eqs)

        def ecol(key, width=None, dtype=float):
            v = np.array([e[key] for e in eqs], dtype=dtype)
            return v.reshape(neq, width) if width else v.reshape(neq)

        arr["eq_type"] = ecol("type", dtype=np.int32)
        arr["eq_obj1id"] = ecol("obj1", dtype=np.int32)
        arr["eq_obj2id"] = ecol("obj2", dtype=np.int32)
        arr["eq_objtype"] = ecol("objtype", dtype=np.int32)
        arr["eq_active0"] = ecol("active", dtype=np.uint8)
        arr["eq_solref"] = ecol("solref", NREF)
        arr["eq_solimp"] = ecol("solimp", NIMP)
        arr["eq_data"] = ecol("data", NEQDATA)
        # mj_setConst
        arr["body_invweight0"] = np.zeros((nbody, 2))
        arr["dof_invweight0"] = np.zeros(nv)
        arr["tendon_invweight0"] = np.zeros(ntendon)
        sensor_arrays, sensor_sizes = sens.sensor_arrays(self.sensors)
        arr.update(sensor_arrays)
        sizes = dict(nq=nq, nv=nv, nu=nu, na=na, nbody=nbody, njnt=njnt, ngeom=ngeom, nsite=nsite,
                     ntendon=ntendon, nwrap=nwrap, nkey=nkey, nC=nC, neq=neq, nmocap=nmocap,
                     ncam=len(self.cameras), nlight=len(self.lights), **mesh_sizes,
                     **contact_sizes, **sensor_sizes,
                     nefcmax=efc_capacity(njnt, nv, ntendon, arr["eq_type"],
                                          contact_rows=self.contacts.contact_rows))
        # the dual solvers' dense matrix (nefcmax squared) only for models that use them
        dual = (self.solver_opt.get("solver", SolverType.NEWTON) == SolverType.PGS
                or self.solver_opt.get("noslip_iterations", 0) > 0)
        sizes["nefcdual"] = sizes["nefcmax"] if dual else 0
        names = dict(body=[b.name if b.id else "world" for b in bodies],
                     jnt=[j.attrs.get("name", "") for j in joints],
                     geom=[g.attrs.get("name", "") for g in geoms],
                     site=[s.attrs.get("name", "") for s in sites],
                     actuator=list(self.actuator_names), tendon=[t["name"] for t in tendons],
                     key=key_names, equality=[e["name"] for e in eqs],
                     sensor=[x["name"] for x in self.sensors],
                     camera=[c.attrs.get("name", "") for c in self.cameras],
                     light=[li.attrs.get("name", "") for li in self.lights],
                     mesh=[mesh.name for mesh in self.meshes])
        o = self.opt
        opt = Option(timestep=o["timestep"], gravity=o["gravity"], integrator=o["integrator"],
                     disableflags=o["disableflags"], enableflags=o["enableflags"], wind=o["wind"],
                     density=o["density"], viscosity=o["viscosity"], magnetic=o["magnetic"],
                     **self.solver_opt)
        object.__setattr__(opt, "_ccd_capacity", self.contacts.ccd_capacity)
        model = Model._assemble(sizes, arr, opt, names)
        object.__setattr__(model, "model_name", model_name)
        return model


_CAMLIGHT_MODE = {"fixed": 0, "track": 1, "trackcom": 2, "targetbody": 3, "targetbodycom": 4}
_CAM_OUTPUT = dflt.CAM_OUTPUT
_LIGHT_TYPE = {"spot": 0, "directional": 1, "point": 2, "image": 3}


def auto_spring_damper(model, compiler: Compiler) -> None:
    """Joint ``springdamper="timeconst dampratio"`` -> jnt_stiffness and dof_damping, after set_const.

    As mjCModel::AutoSpringDamper: the joint's mean inertia at qpos0 is I = ndof / sum(dof_invweight0)
    over its dofs, and the stiffness and damping are those of solref's mass-spring-damper,
    k = I / (timeconst^2 dampratio^2), b = 2 I / timeconst (the authored stiffness and damping are
    replaced). It runs after dof_invweight0 is known and before the lengthrange simulation.
    """
    for j in compiler.joints:
        timeconst, dampratio = j.compiled["springdamper"]
        if timeconst <= 0 or dampratio <= 0:
            continue
        adr, ndof = int(model.jnt_dofadr[j.id]), JointType(j.type).nv
        inertia = ndof / max(MINVAL, sum(float(w) for w in model.dof_invweight0[adr:adr + ndof]))
        model.jnt_stiffness[j.id] = inertia / max(MINVAL, timeconst * timeconst * dampratio * dampratio)
        model.dof_damping[adr:adr + ndof] = 2.0 * inertia / max(MINVAL, timeconst)


def check_finite(model, compiler: Compiler) -> None:
    """ModelError when a compiled array holds nan, or inf outside a range, naming its element.

    The reader lets no nan through and inf only in ranges, but finite inputs can still
    overflow when combined (a geom of size 1e300 has infinite mass) and an infinite range
    can make nan (``inheritrange`` of an unbounded joint). MuJoCo 4.0 compiles such a model
    with the non-finite values; kinedyn refuses it rather than simulate with them.
    """
    owners = {"body": [b.node for b in compiler.bodies], "jnt": [j.node for j in compiler.joints],
              "geom": [g.node for g in compiler.geoms], "site": [s.node for s in compiler.sites],
              "tendon": [t["node"] for t in compiler.tendons], "actuator": list(compiler.actuator_nodes),
              "key": [k[0] for k in compiler.keys]}
    owners["eq"] = [e["node"] for e in compiler.equalities]
    owners["cam"] = [c.node for c in compiler.cameras]
    owners["light"] = [li.node for li in compiler.lights]
    owners["dof"] = [owners["jnt"][j] for j in model.dof_jntid]
    owners["wrap"] = [t["node"] for t in compiler.tendons for _ in t["wraps"]]
    qpos_owner = [j.node for j in compiler.joints for _ in range(JointType(j.type).nq)]
    owners["qpos0"] = owners["qpos_spring"] = qpos_owner
    for spec in MODEL_FIELDS:
        arr = getattr(model, spec.name)
        if arr.dtype.kind != "f":
            continue
        # ranges may be infinite (unbounded), as the reader lets them be
        bad = np.isnan(arr) if spec.name.endswith("range") else ~np.isfinite(arr)
        if not bad.any():
            continue
        bad_rows = bad.reshape(len(arr), -1).any(axis=1) if arr.ndim else np.ones(1, bool)
        index = int(np.flatnonzero(bad_rows)[0])
        kind = spec.name if spec.name in owners else spec.name.split("_", 1)[0]
        nodes = owners.get(kind, [])
        node = nodes[index] if index < len(nodes) else None
        message = (f"compiled {spec.name}[{index}] is not finite (the element's values overflow or "
                   "combine infinite ranges); kinedyn requires finite model values")
        if node is None:
            raise ModelError(message)
        raise node.error(message)


def _null_pose(pos, quat) -> bool:
    """IsNullPose (user_model.cc): within 1e-6 of the identity pose, quaternion up to sign."""
    eps = 1e-6
    if pos is not None and any(abs(x) >= eps for x in pos):
        return False
    if quat is None:
        return True
    minus = all(abs(a - b) < eps for a, b in zip(quat, (1.0, 0.0, 0.0, 0.0), strict=True))
    plus = all(abs(a + b) < eps for a, b in zip(quat, (1.0, 0.0, 0.0, 0.0), strict=True))
    return minus or plus


def _body_simple(bodies: list[Body]) -> list[int]:
    """body_simple (mjCModel::CopyTree): 0, or 1 for a "simple" body, 2 for a simple body whose
    joints are all slides (mj_setConst then takes its inverse weights from its mass alone).

    A body is simple when its inertial frame is its body frame, it hangs from the world
    (or from a fixed child of the world), it has no child bodies, and its joints are at
    the body origin, axis-aligned, with at most one rotation; ``simple="false"`` opts out.
    """
    simple = [0] * len(bodies)
    for b in bodies[1:]:
        par = b.parent
        ok = _null_pose(b.ipos, b.iquat) and (
            par.id == 0 or (par.parent is not None and par.parent.id == 0 and par.dofnum == 0))
        if b.attrs.get("simple") == "false":
            ok = False
        rotfound = False
        for j in b.joints:
            axis = j.compiled["axis"]
            aligned = sum(abs(x) > fr.EPS for x in axis) == 1
            if rotfound or not _null_pose(j.compiled["pos"], None) or (
                    j.type in (JointType.HINGE, JointType.SLIDE) and not aligned):
                ok = False
            if j.type in (JointType.BALL, JointType.HINGE):
                rotfound = True
        simple[b.id] = int(ok)
    for b in bodies[1:]:
        if b.parent.id > 0:
            simple[b.parent.id] = 0
    for b in bodies[1:]:
        if simple[b.id] and b.dofnum and all(j.type == JointType.SLIDE for j in b.joints):
            simple[b.id] = 2
    return simple


def _dof_simplenum(body_simple: list[int], dof_bodyid: list[int]) -> list[int]:
    """dof_simplenum (mjCModel::FinalizeSimple): > 0 for dofs of simple bodies (the number of
    consecutive simple dofs from this one on); their rows of M hold only the diagonal."""
    out = [0] * len(dof_bodyid)
    count = 0
    for i in range(len(dof_bodyid) - 1, -1, -1):
        count = count + 1 if body_simple[dof_bodyid[i]] else 0
        out[i] = count
    return out


def _body_of(bodies: list[Body], item) -> Body:
    return item.body


def _fluidcoef(attrs: dict) -> list[float]:
    """The geom's fluidcoef: the values given, then the defaults of the rest."""
    coef = list(FLUIDCOEF_DEFAULT)
    given = attrs.get("fluidcoef", [])
    coef[:len(given)] = given
    return coef


def _tendon_label(t: dict) -> str:
    node = t["node"]
    return f"{node.tag} '{t['name']}' (line {node.line})" if t["name"] else f"{node.tag} at line {node.line}"


def _check_size(node: Node, gtype: int, size: list) -> None:
    """checksize(): the size parameters a type uses must be positive."""
    if gtype == GeomType.PLANE:
        if size[2] <= 0:
            raise node.error("plane size(3) must be positive", "size")
        return
    for i in range(_GEOMINFO[GeomType(gtype)]):
        if size[i] <= 0:
            raise node.error(f"size {i} must be positive in {node.tag}", "size")
