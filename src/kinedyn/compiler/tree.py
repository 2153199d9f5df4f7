"""The body tree: reading ``<worldbody>`` into bodies and their elements, numbering, layout arrays.

The reader (xml_native_reader Body) collects each body's joints, geoms, sites, cameras and
lights with their default classes merged in and ``<frame>`` poses folded into them; the
numbering is MuJoCo's depth-first document order (``mjCModel::MakeTreeLists``); the arrays
are the tree's layout (mjCModel::CopyTree): body_* (parents, roots, welds, poses, masses,
mocap ids, subtree masses), the joint and dof addresses and parameters, qpos0, and the
tree-sparse pattern of M. Compiling each body (inertia, geoms, joints, sites) is
:mod:`.elements`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.compiler import frames as fr
from kinedyn.compiler import hfield as hfields
from kinedyn.compiler import mesh as meshes
from kinedyn.compiler.contacts import GEOM_CONTACT_DEFAULTS
from kinedyn.engine.types import MINVAL, NIMP, NPOLY, NREF, GeomType, JointType, SleepPolicy, WrapType
from kinedyn.errors import ModelError
from kinedyn.xml.mjcf import UNSUPPORTED_ELEMENTS, Node, typed_attrs

# elements of the body tree that have no child elements
_LEAF_ELEMENTS = {"inertial", "joint", "freejoint", "geom", "site", "camera", "light"}

# MuJoCo's own defaults for elements (mjs_defaultJoint / Geom / Site)
_JOINT_DEFAULTS = dict(type="hinge", group=0, pos=[0.0, 0.0, 0.0], axis=[0.0, 0.0, 1.0], limited="auto",
                       actuatorfrclimited="auto", stiffness=[0.0, 0.0, 0.0], range=[0.0, 0.0],
                       actuatorfrcrange=[0.0, 0.0], ref=0.0, springref=0.0, armature=0.0,
                       damping=[0.0, 0.0, 0.0], frictionloss=0.0, springdamper=[0.0, 0.0],
                       actuatorgravcomp="false", margin=0.0, solreflimit=dflt.SOLREF, solimplimit=dflt.SOLIMP,
                       solreffriction=dflt.SOLREF, solimpfriction=dflt.SOLIMP)
_GEOM_DEFAULTS = dict(type="sphere", contype=1, conaffinity=1, condim=3, group=0, size=[0.0, 0.0, 0.0],
                      friction=[1.0, 0.005, 0.0001], density=1000.0, shellinertia="false",
                      pos=[0.0, 0.0, 0.0], fluidshape="none", **GEOM_CONTACT_DEFAULTS)
_SITE_DEFAULTS = dict(type="sphere", group=0, pos=[0.0, 0.0, 0.0], size=[0.005, 0.005, 0.005])


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


class TreeMixin:
    """The Compiler's body-tree reader, numbering and layout arrays (see
    :class:`kinedyn.compiler.build.Compiler`)."""

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
            if tag == "flexcomp":
                # a 1-D grid flexcomp: its vertex bodies join this body's children (compiler.flexes)
                for sub_node in self._flexcomp(child, body, frame):
                    sub = Body(sub_node, typed_attrs(sub_node), body, None)
                    body.children.append(sub)
                    stack.append((iter(sub_node.children), sub, None, self.classes["main"]))
                continue
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

    def _tree_arrays(self, arr: dict) -> dict[str, int]:
        """The body, joint and dof arrays, qpos0 and the sparsity of M into ``arr``; their sizes."""
        bodies, joints = self.bodies, self.joints
        nbody, njnt = len(bodies), len(joints)
        nq = sum(JointType(j.type).nq for j in joints)
        nv = sum(JointType(j.type).nv for j in joints)

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
        arr["jnt_springyield"] = jcol("springyield")
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
        # a body on the path of a tendon with armature is not simple (mjCModel::FinalizeSimple):
        # the tendon's armature couples its dofs, so its rows of M need their ancestors
        for t in self.tendons:
            if t["armature"] > 0:
                for (obj, _), wtype in zip(t["wraps"], t["wtypes"], strict=True):
                    if wtype == WrapType.SITE:
                        self.body_simple[self.sites[obj].body.id] = 0
                    elif wtype in (WrapType.SPHERE, WrapType.CYLINDER):
                        self.body_simple[self.geoms[obj].body.id] = 0
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
        arr["dof_simplenum"] = np.array(simplenum, dtype=np.int32)
        arr["M_rownnz"] = np.array(rownnz, dtype=np.int32)
        arr["M_rowadr"] = np.array(rowadr, dtype=np.int32)
        arr["M_colind"] = np.array(colind, dtype=np.int32)
        nC = len(colind)
        ntree = _tree_arrays(arr, bodies)
        return dict(nbody=nbody, njnt=njnt, nq=nq, nv=nv, nC=nC, nmocap=nmocap, ntree=ntree)


# <body sleep="..."> keywords -> SleepPolicy (mjCBody::sleep; "auto" is the default)
_BODY_SLEEP = {"auto": SleepPolicy.AUTO, "never": SleepPolicy.NEVER, "allowed": SleepPolicy.ALLOWED,
               "init": SleepPolicy.INIT}


def _tree_arrays(arr: dict, bodies) -> int:
    """The kinematic trees (mjCModel::CopyTree and mj_setConst): a tree starts at each dof without
    a parent; a body belongs to the tree of its weld group's first dof. The sleep policy a root
    body gives (mjCModel::CopyTree's check: only the first body of a movable tree may set one) is
    kept; AUTO is resolved once actuators and tendons are known (compiler.sleep). Returns ntree."""
    dof_parentid, weldid = arr["dof_parentid"], arr["body_weldid"]
    dofnum, dofadr = arr["body_dofnum"], arr["body_dofadr"]
    dof_treeid = np.cumsum(np.asarray(dof_parentid) == -1, dtype=np.int32) - 1
    ntree = int(dof_treeid[-1]) + 1 if len(dof_treeid) else 0
    body_treeid = np.array([dof_treeid[dofadr[w]] if dofnum[w] else -1 for w in weldid], dtype=np.int32)
    tree_bodynum = np.bincount(body_treeid[body_treeid >= 0], minlength=ntree).astype(np.int32)
    tree_dofnum = np.bincount(dof_treeid, minlength=ntree).astype(np.int32)
    tree_bodyadr = np.zeros(ntree, dtype=np.int32)
    tree_dofadr = np.zeros(ntree, dtype=np.int32)
    for t in range(ntree):  # first body, first dof (bodies and dofs of a tree are consecutive)
        tree_bodyadr[t] = np.flatnonzero(body_treeid == t)[0]
        tree_dofadr[t] = np.flatnonzero(dof_treeid == t)[0]
    policy = np.full(ntree, int(SleepPolicy.AUTO), dtype=np.int32)
    for b in bodies[1:]:
        given = _BODY_SLEEP[b.attrs.get("sleep", "auto")]
        if given != SleepPolicy.AUTO:
            t = body_treeid[b.id]
            if t == -1 or t == body_treeid[b.id - 1]:
                raise b.error("sleep policy only allowed for movable root bodies", "sleep")
            policy[t] = int(given)
    arr.update(body_treeid=body_treeid, dof_treeid=dof_treeid, tree_bodyadr=tree_bodyadr,
               tree_bodynum=tree_bodynum, tree_dofadr=tree_dofadr, tree_dofnum=tree_dofnum,
               tree_sleep_policy=policy, dof_length=np.ones(len(dof_treeid)))  # (set_const)
    return ntree


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

