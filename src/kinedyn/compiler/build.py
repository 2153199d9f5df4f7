"""MJCF tree -> compiled, flat model arrays (MuJoCo's mjCModel::Compile for our feature set).

Order of work, as in src/user/user_model.cc ``TryCompile`` and ``CopyTree``: parse the
sections (``<compiler>`` and ``<option>``: :mod:`.options`), build the body tree with frames
folded into their bodies and number it depth first in document order (``MakeTreeLists``:
:mod:`.tree`), compile every body (orientation, geoms, inertia, joints, sites:
``mjCBody::Compile``, and cameras and lights: :mod:`.elements`), then tendons (fixed and
spatial: :mod:`.tendons`), equality constraints (:mod:`.equalities`), actuators
(:mod:`.actuators`), keyframes (:mod:`.keyframes`), contacts (:mod:`.contacts`) and
sensors (:mod:`.sensors`). :meth:`Compiler._assemble` then gathers each part's arrays (the
tree's layout: addresses, parents, the CSR pattern of M, ``body_subtreemass``) into the Model.

Each part is a mixin of :class:`Compiler` in its own module: the parts share the
compiler's state (the bodies, joints, geoms, ... and the settings read from ``<compiler>``).
"""

from __future__ import annotations

import warnings

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.compiler import hfield as hfields
from kinedyn.compiler import mesh as meshes
from kinedyn.compiler import sensors as sens
from kinedyn.compiler.actuators import ActuatorsMixin
from kinedyn.compiler.contacts import ContactCompiler
from kinedyn.compiler.elements import ElementsMixin
from kinedyn.compiler.equalities import EqualitiesMixin
from kinedyn.compiler.flexes import FlexesMixin
from kinedyn.compiler.fuse import fuse_static
from kinedyn.compiler.keyframes import KeyframesMixin
from kinedyn.compiler.options import OptionsMixin
from kinedyn.compiler.tendons import TendonsMixin
from kinedyn.compiler.tree import Body, CamLight, Geom, Joint, Site, TreeMixin
from kinedyn.engine.constraint import efc_capacity
from kinedyn.engine.fields import MODEL_FIELDS
from kinedyn.engine.model import Model
from kinedyn.engine.types import MINVAL, IntegratorType, JointType, SolverType
from kinedyn.errors import ModelError, UnphysicalInertiaWarning, UnsimulatedFeatureWarning
from kinedyn.xml.mjcf import UNSUPPORTED_ELEMENTS, Node, typed_attrs

# sections that take no attributes (MuJoCo's schema)
_SECTIONS_WITHOUT_ATTRIBUTES = {"visual", "asset", "custom", "contact", "equality", "sensor", "keyframe",
                                "worldbody", "tendon", "actuator"}


class Compiler(OptionsMixin, TreeMixin, ElementsMixin, TendonsMixin, EqualitiesMixin, ActuatorsMixin,
               KeyframesMixin, FlexesMixin):
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
        # what to do with an inertia MuJoCo's compiler refuses (not positive definite, A + B < C,
        # a moving body without mass): "refuse" (MuJoCo, MJCF); "as_given" (URDF, as Pinocchio reads
        # it); "balance" (balanceinertia) or "nearest_pd" (principal moments raised to a floor) first
        self.inertia_policy = "refuse"
        self.mass_floor = 0.0  # a URDF's mass floor: boundmass's rule, set by the loader
        self.inertia_floor = 0.0  # ... and principal-inertia floor: boundinertia's rule
        self.unphysical: dict[str, list[str]] = {}  # body name -> what is unphysical (warned once)
        # <option>
        self.opt = dict(timestep=0.002, gravity=[0.0, 0.0, -9.81], wind=[0.0, 0.0, 0.0],
                        magnetic=[0.0, -0.5, 0.0], density=0.0,
                        viscosity=0.0, integrator=int(IntegratorType.EULER), disableflags=0, enableflags=0)
        self.sleep_flag = None  # the last <flag> element with a sleep= attribute (compiler.sleep)
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
        self.key_names: list[str] = []  # set by _keyframe_arrays
        self.sections: dict[str, list[Node]] = {}
        self.contact_excludes: list[tuple[Node, str, str]] = []
        self.equalities: list[dict] = []
        self.flexes: list[dict] = []
        self.flexcomps: list = []  # (<flex> node, <flexcomp> node, edge attributes), see compiler.flexes
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
                 "contact", "equality", "tendon", "actuator", "sensor", "custom", "keyframe", "deformable"}
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
            mesh.processed = self._compile_mesh(mesh)
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
        self._make_flexcomps()
        for node in self.sections.get("deformable", []):
            self._deformable(node)
        for node in self.sections.get("equality", []):
            self._equalities(node)
        for node in self.sections.get("actuator", []):
            self._actuators(node)
        self._keyframes()
        self.contacts = ContactCompiler(self)
        self.contacts.read_sections()
        self.sensors = sens.compile_sensors(self)
        self._unsimulated()
        return self._assemble(model_name)

    def _compile_mesh(self, mesh):
        """meshes.compile_mesh; a URDF loaded as given takes a mesh whose volume is too small (a flat
        or open surface, which MuJoCo refuses) as a shell, as MuJoCo's message advises: a link's
        <inertial> gives its mass, the mesh only its geom frame and shape."""
        try:
            return meshes.compile_mesh(mesh)
        except ModelError as err:
            if self.inertia_policy == "refuse" or "volume is too small" not in str(err):
                raise
        mesh.attrs = dict(mesh.attrs, inertia="shell")
        processed = meshes.compile_mesh(mesh)
        what = f"mesh '{mesh.name}': volume too small, its inertia computed as a shell"
        if what not in self.unphysical.setdefault("(meshes)", []):
            self.unphysical["(meshes)"].append(what)
        return processed

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

    def _unphysical(self, body, what: str, error: ModelError) -> None:
        """An inertia MuJoCo's compiler refuses: ``error`` under the "refuse" policy, else recorded
        for the one :class:`UnphysicalInertiaWarning` (the model keeps it as given)."""
        if self.inertia_policy == "refuse":
            raise error
        items = self.unphysical.setdefault(body.name or f"body {body.id}", [])
        if what not in items:
            items.append(what)

    def warn_unphysical(self, model) -> None:
        """After set_const: the one warning about the inertias loaded as given. A singular mass
        matrix (a moving body without mass) leaves the ``*_invweight0`` of what it moves infinite:
        they are set to 0 (no constraint regularisation from them), and the warning says so."""
        if not self.unphysical:
            return
        zeroed = []
        for name in ("body_invweight0", "dof_invweight0", "tendon_invweight0"):
            arr = getattr(model, name)
            bad = ~np.isfinite(arr)
            if bad.any():
                arr[bad] = 0.0
                zeroed.append(name)
        bodies = {k: v for k, v in self.unphysical.items() if k != "(meshes)"}
        parts = []
        if bodies:
            listed = "; ".join(f"{name}: {', '.join(what)}" for name, what in bodies.items())
            parts.append(f"{len(bodies)} bodies have inertias MuJoCo's compiler refuses, loaded as given (as "
                         f"Pinocchio reads them): {listed}. Their mass matrix and inverse dynamics are "
                         "computed; forward dynamics needs a positive-definite mass matrix. Repairs: "
                         "inertia='balance', inertia='nearest_pd', mass_floor=..., inertia_floor=...")
        if zeroed:
            parts.append(f"The mass matrix at qpos0 is singular: {', '.join(zeroed)} set to 0 where infinite")
        parts.extend(f"{what[0].upper()}{what[1:]} (MuJoCo refuses it)"
                     for what in self.unphysical.get("(meshes)", []))
        warnings.warn(". ".join(parts), UnphysicalInertiaWarning, stacklevel=6)

    def _unsimulated(self) -> None:
        for message in self.unsimulated:
            # stacklevel: _unsimulated < run < compile_mjcf < Model.from_xml_* < caller
            warnings.warn(message, UnsimulatedFeatureWarning, stacklevel=5)

    # ---- arrays ---------------------------------------------------------------------------------

    def _assemble(self, model_name: str):
        """The Model: every part's arrays and sizes, in MuJoCo's order, then the names and options."""
        arr: dict[str, np.ndarray] = {}
        sizes = self._tree_arrays(arr)
        sizes.update(self._geom_site_arrays(arr))
        sizes.update(self._tendon_arrays(arr))
        sizes.update(_plastic_layout(arr))
        sizes.update(self._actuator_arrays(arr, sizes))
        sizes.update(self._keyframe_arrays(arr, sizes))
        arr.update(self._camlight_arrays())
        sizes.update(ncam=len(self.cameras), nlight=len(self.lights))
        sizes.update(self.contacts.arrays(arr))
        sizes.update(self._equality_arrays(arr))
        sizes.update(self._flex_arrays(arr))
        # mj_setConst
        arr["body_invweight0"] = np.zeros((sizes["nbody"], 2))
        arr["dof_invweight0"] = np.zeros(sizes["nv"])
        arr["dof_M0"] = np.zeros(sizes["nv"])
        arr["tendon_invweight0"] = np.zeros(sizes["ntendon"])
        sensor_arrays, sensor_sizes = sens.sensor_arrays(self.sensors)
        arr.update(sensor_arrays)
        sizes.update(sensor_sizes)
        sizes["nhistory"] = sens.set_history_addresses(arr, sizes["nhistory"])
        sizes["nefcmax"] = efc_capacity(sizes["njnt"], sizes["nv"], sizes["ntendon"], arr["eq_type"],
                                        contact_rows=self.contacts.contact_rows,
                                        flex_rows=self._flex_rows())
        # the dual solvers' dense matrix (nefcmax squared) only for models that use them
        dual = (self.solver_opt.get("solver", SolverType.NEWTON) == SolverType.PGS
                or self.solver_opt.get("noslip_iterations", 0) > 0)
        sizes["nefcdual"] = sizes["nefcmax"] if dual else 0
        names = dict(body=[b.name if b.id else "world" for b in self.bodies],
                     jnt=[j.attrs.get("name", "") for j in self.joints],
                     geom=[g.attrs.get("name", "") for g in self.geoms],
                     site=[s.attrs.get("name", "") for s in self.sites],
                     actuator=list(self.actuator_names), tendon=[t["name"] for t in self.tendons],
                     key=self.key_names, equality=[e["name"] for e in self.equalities],
                     sensor=[x["name"] for x in self.sensors],
                     camera=[c.attrs.get("name", "") for c in self.cameras],
                     light=[li.attrs.get("name", "") for li in self.lights],
                     mesh=[mesh.name for mesh in self.meshes])
        model = Model._assemble(sizes, arr, self._model_option(), names)
        object.__setattr__(model, "model_name", model_name)
        return model


def _plastic_layout(arr: dict) -> dict[str, int]:
    """jnt_plasticadr, tendon_plasticadr and nplastic: the plastic state of the springs with a yield,
    joints first, then tendons (MuJoCo 4.0's layout): a hinge's or slide's rest position (1), a ball's
    rest quaternion (4), a tendon's lengthspring pair (2); -1 for elastic springs."""
    nplastic = 0
    adrs = {}
    for kind, widths in (("jnt", [4 if t == JointType.BALL else 1 for t in arr["jnt_type"]]),
                         ("tendon", [2] * len(arr["tendon_springyield"]))):
        adr = np.full(len(widths), -1, dtype=np.int32)
        for i, width in enumerate(widths):
            if arr[f"{kind}_springyield"][i] > 0:
                adr[i] = nplastic
                nplastic += width
        adrs[f"{kind}_plasticadr"] = adr
    arr.update(adrs)
    return dict(nplastic=nplastic)


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
