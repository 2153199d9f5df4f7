"""The ``<deformable>`` section's ``<flex>`` elements and the flex_* arrays (mjCFlex::Compile,
the flex part of mjCModel::CopyObjects).

kinedyn builds flexes of every dim (cables, cloth, soft bodies), with 2-D elasticity: each
vertex is a body's origin or a point in a body's frame (``body=`` lists one body per vertex, or
one body for all; ``vertex=`` gives the offsets), with edge constraints (``<equality><flex>``,
``<edge equality="true">`` of a flexcomp), edge spring-dampers (``<edge stiffness damping>``;
stiffness for 1-D only, as in MuJoCo) and without flex collisions (``<contact contype="0"
conaffinity="0"/>``); grid ``<flexcomp>`` expand into such flexes. Everything else MuJoCo 4.0
does with flexes is refused with a ModelError naming it (docs/deviations.md "Flexes"):
the rest of elasticity (1-D and 3-D, damping, yield), interpolated
flexes, flex collisions, other flexcomp types, ``<skin>``. Edges come from the elements as
MuJoCo makes them: each element's edges in MuJoCo's simplex order, as (min, max) vertex pairs,
in order of first appearance (``flex_elemedge`` maps them back); tetrahedra are first
reordered to face outwards at qpos0, as MuJoCo reorders them.
"""

from __future__ import annotations

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.compiler.frames import cross, dot3, frame_accum, rot_vec_quat
from kinedyn.engine.types import MINVAL, IntegratorType
from kinedyn.xml.mjcf import Node, typed_attrs

_FLEX = dict(name="s", dim="i", body="s", element="s", radius="f", group="i", rgba="f4", flatskin="s",
             material="s", vertex="s", texcoord="s", elemtexcoord="s", node="s", cellcount="s", dof="s")
_EDGE = dict(equality="s", stiffness="f", damping="f")
_ELASTICITY = {"young": "f", "poisson": "f", "damping": "f", "thickness": "f", "elastic2d": "s",
               "yield": "f*"}
_CONTACT = dict(contype="i", conaffinity="i", condim="i", priority="i", friction="f*", solmix="f",
                solref="f*", solimp="f*", margin="f", gap="f", internal="s", selfcollide="s",
                activelayers="i", vertcollide="s", passive="s", tangential="s")
# attributes that change what a 1-D flex of centred vertices computes: refused when given
_UNBUILT_FLEX = ("node", "cellcount", "dof")
# <flexcomp>: the attributes of the 1-D grid kinedyn expands (mjCFlexcomp's defaults)
_FLEXCOMP = dict(name="s", type="s", dim="i", count="i3", spacing="f3", mass="f", inertiabox="f", pos="f3",
                 quat="f4", radius="f", group="i", rgba="f4", material="s", dof="s")
_FLEXCOMP_EDGE = dict(equality="s", solref="f1-2", solimp="f1-5", stiffness="f", damping="f")


# the edges of a simplex, in MuJoCo's order (mjCFlex::Compile's table): a segment's one edge, a
# triangle's edge opposite each vertex
_ELEM_EDGES = {1: ((0, 1),), 2: ((1, 2), (2, 0), (0, 1)),
               3: ((0, 1), (1, 2), (2, 0), (2, 3), (0, 3), (1, 3))}
# a grid cube's corners (v000, v100, v110, v010, v001, v101, v111, v011) split into six
# tetrahedra, in mjCFlexcomp::MakeGrid's order
_CUBE_TETS = ((0, 3, 1, 7), (0, 1, 4, 7), (1, 3, 2, 7), (1, 2, 6, 7), (1, 5, 4, 7), (1, 6, 5, 7))


class FlexesMixin:
    """The Compiler's ``<deformable>`` reader and flex arrays (see ``compiler.build.Compiler``)."""

    def _deformable(self, section: Node) -> None:
        """One <deformable> section: its <flex> elements (dim 1, centred vertices, no collisions)."""
        for node in section.children:
            if node.tag != "flex":
                raise node.error(f"<{node.tag}> in <deformable> is not supported yet (kinedyn builds "
                                 "1-D <flex> elements only)")
            self._flex(node)

    def _flex(self, node: Node) -> None:
        a = typed_attrs(node, schema=_FLEX)
        fid = len(self.flexes)
        name = a.get("name", "")
        if name and any(f["name"] == name for f in self.flexes):
            raise node.error(f"repeated name '{name}' in flex", "name")
        dim = a.get("dim", 2)
        if dim not in (1, 2, 3):
            raise node.error("dim must be 1, 2 or 3", "dim")
        for attr in _UNBUILT_FLEX:
            if attr in a:
                raise node.error(f"flex attribute '{attr}' (interpolated flexes) is "
                                 "not supported yet", attr)
        if "body" not in a:
            raise node.error("required attribute missing: 'body'", "body")
        ids = {b.name: b.id for b in self.bodies if b.name}
        ids["world"] = 0
        vertbody = []
        for bname in a["body"].split():
            if bname not in ids:
                raise node.error(f"unknown body '{bname}' in flex", "body")
            vertbody.append(ids[bname])
        vert = [0.0] * (3 * len(vertbody))
        if "vertex" in a:
            try:
                vert = [float(x) for x in a["vertex"].split()]
            except ValueError:
                raise node.error("vertex must be numbers (3 per vertex)", "vertex") from None
            if len(vert) % 3:
                raise node.error("vertex must have 3 numbers per vertex", "vertex")
            if len(vertbody) == 1:
                vertbody = vertbody * (len(vert) // 3)
            elif len(vertbody) != len(vert) // 3:
                raise node.error("vertbody size must be 1 or nvert", "body")
        nvert = len(vertbody)
        if nvert < dim + 1:
            raise node.error("not enough vertices", "body")
        try:
            elem = [int(x) for x in a.get("element", "").split()]
        except ValueError:
            raise node.error("element must be vertex ids (integers)", "element") from None
        if not elem or len(elem) % (dim + 1):
            raise node.error(f"element must list {dim + 1} vertex ids per element", "element")
        if any(v < 0 or v >= nvert for v in elem):
            raise node.error("elem vertex id out of range", "element")
        elastic = None
        for child in node.children:
            if child.tag == "elasticity":
                elastic = self._elasticity(child, dim)
        xpos0 = self._vert_xpos0(vertbody, vert) if dim == 3 or elastic else None
        if dim == 3:
            _orient_tets(elem, xpos0)
        edges, elemedge = self._flex_edges(node, elem, dim)
        if elastic:
            # young > 0 allocates the metric (zero without a stretch model, as in MuJoCo)
            young, poisson, thickness, mode = elastic
            stretch, bend = mode in ("stretch", "both"), mode in ("bend", "both")
            elastic = dict(active=stretch or bend,
                           stiffness=_stretch_stiffness(elem, xpos0, young, poisson, thickness, stretch))
            if bend:
                flaps = _flaps(elem, len(edges))
                elastic["flaps"] = [(fl[2], fl[3]) for fl in flaps]
                elastic["bending"] = _bending(flaps, xpos0, young, poisson, thickness)
        stiffness = damping = 0.0
        contype = conaffinity = 1
        for child in node.children:
            if child.tag == "edge":
                e = typed_attrs(child, schema=_EDGE)
                if "equality" in e:
                    raise child.error("edge attribute 'equality' is not supported yet: constrain the "
                                      "edges with <equality><flex flex=.../>", "equality")
                stiffness = e.get("stiffness", 0.0)
                damping = e.get("damping", 0.0)
            elif child.tag == "contact":
                c = typed_attrs(child, schema=_CONTACT)
                contype = c.get("contype", 1)
                conaffinity = c.get("conaffinity", 1)
            elif child.tag == "elasticity":
                pass  # read before the edges (_elasticity)
            else:
                raise child.error(f"<{child.tag}> of a flex (plugins) is not supported yet")
        if stiffness > 0 and dim > 1:
            # mjCFlex::Compile's check
            raise node.error("edge stiffness only available for dim=1, please use <elasticity>")
        if contype or conaffinity:
            raise node.error("flex collisions are not supported yet: give the flex "
                             '<contact contype="0" conaffinity="0"/>')
        weld = [self.bodies[b].weldid for b in vertbody]
        self.flexes.append(dict(
            node=node, name=name, id=fid, dim=dim, vertbody=vertbody, vert=vert, edges=edges,
            elem=elem, elemedge=elemedge, elastic=elastic,
            stiffness=float(stiffness), damping=float(damping), contype=contype, conaffinity=conaffinity,
            rigid=all(b == vertbody[0] for b in vertbody),
            edge_rigid=[weld[i] == weld[j] for i, j in edges]))

    def _vert_xpos0(self, vertbody: list[int], vert: list[float]) -> list[list[float]]:
        """The world positions of a flex's vertices at qpos0 (mjCFlex::Compile's vertxpos): each
        body's pose at qpos0, chained from the world, with the vertex offset rotated into it."""
        poses: dict[int, tuple] = {}

        def pose(b):
            if b not in poses:
                body = self.bodies[b]
                if body.parent is None or body.node is None:
                    poses[b] = ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])
                else:
                    ppos, pquat = pose(body.parent.id)
                    poses[b] = frame_accum(ppos, pquat, body.pos, body.quat)
            return poses[b]

        xpos = []
        for i, b in enumerate(vertbody):
            bpos, bquat = pose(b)
            off = rot_vec_quat(vert[3 * i:3 * i + 3], bquat)
            xpos.append([bpos[k] + off[k] for k in range(3)])
        return xpos

    @staticmethod
    def _elasticity(child: Node, dim: int) -> tuple[float, float, float, str] | None:
        """A flex's <elasticity>: (young, poisson, thickness, elastic2d) of a 2-D flex with young > 0
        (elastic2d "stretch", "bend" or "both"; with MuJoCo's default "none" the flex has a zero
        metric), or None without young. What kinedyn does not build is refused by name: 1-D and
        3-D elasticity, elasticity damping, plastic yield."""
        el = typed_attrs(child, schema=_ELASTICITY)
        if el.get("damping", 0.0) != 0.0:
            raise child.error("flex elasticity 'damping' is not supported yet", "damping")
        if any(el.get("yield", [])):
            raise child.error("flex elasticity 'yield' (plasticity) is not supported yet", "yield")
        young = el.get("young", 0.0)
        mode = el.get("elastic2d", "none")
        if mode not in ("none", "bend", "stretch", "both"):
            raise child.error(f"invalid keyword: '{mode}'", "elastic2d")
        if dim == 2 and mode != "none":
            # mjCFlex::Compile's checks
            if not el.get("thickness", -1.0) > 0:
                raise child.error("2d elasticity requires positive thickness", "thickness")
            if not 0.0 <= el.get("poisson", 0.0) < 0.5:
                raise child.error("Poisson ratio must be in [0, 0.5)", "poisson")
        if young <= 0:
            return None
        if dim != 2:
            raise child.error(f"{dim}-D flex elasticity 'young' (MuJoCo's "
                              f"{'rod bending and twist' if dim == 1 else 'volumetric stretch'} model) "
                              "is not supported yet", "young")
        if not 0.0 <= el.get("poisson", 0.0) < 0.5:
            raise child.error("Poisson ratio must be in [0, 0.5)", "poisson")
        return young, el.get("poisson", 0.0), el.get("thickness", -1.0), mode

    @staticmethod
    def _flex_edges(node: Node, elem: list[int], dim: int) -> tuple[list, list[int]]:
        """The edges of a flex's elements and each element's edge ids (flex_elemedge), as
        mjCFlex::Compile makes them: each element's edges in the simplex order of ``_ELEM_EDGES``
        as (min, max) vertex pairs, numbered in order of first appearance."""
        edges: list[tuple[int, int]] = []
        index: dict[tuple[int, int], int] = {}
        elemedge = []
        for k in range(0, len(elem), dim + 1):
            verts = elem[k:k + dim + 1]
            if len(set(verts)) < len(verts):
                raise node.error("repeated vertex in element", "element")
            for i, j in _ELEM_EDGES[dim]:
                pair = (min(verts[i], verts[j]), max(verts[i], verts[j]))
                if pair not in index:
                    index[pair] = len(edges)
                    edges.append(pair)
                elemedge.append(index[pair])
        return edges, elemedge

    def _flexcomp(self, node: Node, body, frame) -> list[Node]:
        """A grid <flexcomp> (mjCFlexcomp::Make, MakeGrid): the vertex bodies it adds to
        ``body`` (returned as <body> nodes for the tree reader) and the flex (and edge equality) it
        makes, kept for ``_flexcomps``. Points and elements from ``_grid``, moved by the
        flexcomp's pos and quat; each unpinned point a body of mass mass / npoint with three
        slide joints and inertia mass / npoint * 2 inertiabox^2 / 3; pinned points stay in
        ``body`` as vertex offsets. Other types, dims and dofs are refused by name."""
        a = typed_attrs(node, schema=_FLEXCOMP)
        if frame is not None:
            raise node.error("<flexcomp> inside a <frame> is not supported yet")
        if "name" not in a:
            raise node.error("required attribute missing: 'name'", "name")
        dim = a.get("dim", 2)
        if a.get("type", "grid") != "grid":
            raise node.error("only <flexcomp type=\"grid\"> is supported yet: the other flexcomp "
                             "types are not", "type")
        if dim not in (1, 2, 3):
            raise node.error("dim must be 1, 2 or 3", "dim")
        if a.get("dof", "full") != "full":
            raise node.error("flexcomp dof other than 'full' is not supported yet", "dof")
        name = a["name"]
        count = a.get("count", [10, 10, 10])
        spacing = a.get("spacing", [0.02, 0.02, 0.02])
        mass, inertiabox = a.get("mass", 1.0), a.get("inertiabox", 0.005)
        radius = a.get("radius", 0.005)
        if min(count) < 1:
            raise node.error("Count too small", "count")
        if min(spacing) < 2 * radius:
            raise node.error("Spacing must be larger than geometry size", "spacing")
        if mass < MINVAL or inertiabox < MINVAL:
            raise node.error("Mass and inertiabox must be larger than mjMINVAL")
        points, elem = _grid(count, spacing, dim)
        npnt = len(points)
        if not elem:
            raise node.error("No elements were created in grid", "count")
        bad = next((k for k, v in enumerate(elem) if v >= npnt), None)
        if bad is not None:
            # MuJoCo's message counts the entries of the element list
            raise node.error(f"element {bad} has point id {elem[bad]}, number of points is {npnt}",
                             "count")
        if "quat" in a:
            # the quaternion as given, not normalised: mjCFlexcomp::Make rotates the points with it so
            q = np.array(a["quat"], float)
            w, v = q[0], q[1:]
            points = np.array([p + 2 * np.cross(v, np.cross(v, p) + w * p) for p in points])
        points += np.array(a.get("pos", [0.0, 0.0, 0.0]))
        pinned = [False] * npnt
        flex_children, edge = [], {}
        for child in node.children:
            if child.tag == "pin":
                ids = typed_attrs(child, schema=dict(id="s", range="s"))
                for key, step in (("id", 1), ("range", 2)):
                    vals = [int(x) for x in ids.get(key, "").split()]
                    if len(vals) % step:
                        raise child.error("Pin range number must be multiple of 2", key)
                    for k in range(0, len(vals), step):
                        lo, hi = vals[k], vals[k + step - 1]
                        if min(lo, hi) < 0 or max(lo, hi) >= npnt:
                            raise child.error(f"pin{key} out of range", key)
                        for i in range(lo, hi + 1):
                            pinned[i] = True
            elif child.tag == "edge":
                edge = typed_attrs(child, schema=_FLEXCOMP_EDGE)
                if edge.get("equality", "false") not in ("true", "false"):
                    raise child.error("flexcomp edge equality other than 'true'/'false' (vert, strain) is "
                                      "not supported yet", "equality")
                flex_children.append(Node("edge", {k: child.attrib[k] for k in ("stiffness", "damping")
                                                   if k in child.attrib}, child.line, [], child.file))
            elif child.tag in ("contact", "elasticity"):
                flex_children.append(child)
            else:
                raise child.error(f"<{child.tag}> of a flexcomp (plugins) is not supported yet")
        if all(pinned):
            raise node.error("a flexcomp with every point pinned (a rigid flex) is not supported yet")
        if not any(pinned):
            # MuJoCo 4.0 refuses an unpinned flexcomp under a moving body (changelog 4.0.0)
            b = body
            while b is not None and b.node is not None:
                if any(c.tag in ("joint", "freejoint") for c in b.node.children):
                    raise node.error(f"body '{b.name}' has joints but no flex vertices/nodes are "
                                     "pinned to it")
                b = b.parent
        bodymass = mass / npnt
        inertia = bodymass * (2.0 * inertiabox * inertiabox) / 3.0
        parent = body.name if body.node is not None else "world"
        if body.node is not None and not body.name:
            raise node.error("a flexcomp with pinned points needs a named parent body")
        bodies, vertbody = [], []
        fmt = "{:.17g}".format
        for i in range(npnt):
            if pinned[i]:
                vertbody.append(parent)
                continue
            bname = f"{name}_{i}"
            vertbody.append(bname)
            joints = [Node("joint", dict(type="slide", pos="0 0 0", axis=axis), node.line, [], node.file)
                      for axis in ("1 0 0", "0 1 0", "0 0 1")]
            inertial = Node("inertial", dict(pos="0 0 0", mass=fmt(bodymass),
                                             diaginertia=" ".join([fmt(inertia)] * 3)),
                            node.line, [], node.file)
            bodies.append(Node("body", dict(name=bname, pos=" ".join(fmt(x) for x in points[i])),
                               node.line, [*joints, inertial], node.file))
        attrib = dict(name=name, dim=str(dim), body=" ".join(vertbody), element=" ".join(map(str, elem)))
        if any(pinned):
            offsets = [points[i] if pinned[i] else (0, 0, 0) for i in range(npnt)]
            attrib["vertex"] = " ".join(fmt(x) for p in offsets for x in p)
        self.flexcomps.append((Node("flex", attrib, node.line, flex_children, node.file), node, edge))
        return bodies

    def _make_flexcomps(self) -> None:
        """The flexes and edge equalities of the <flexcomp> elements, in document order, before
        those of <deformable> and <equality> (MuJoCo makes them while reading the body tree)."""
        for flex_node, node, edge in self.flexcomps:
            self._flex(flex_node)
            if edge.get("equality") == "true":
                fid = len(self.flexes) - 1
                cls = self.classes["main"].equality
                solref = edge.get("solref", cls.get("solref", dflt.SOLREF))
                solimp = edge.get("solimp", cls.get("solimp", dflt.SOLIMP))
                data = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
                self.equalities.append(dict(node=node, name="", type=4, obj1=fid, obj2=-1, objtype=0,
                                            active=1, solref=list(solref), solimp=list(solimp), data=data))

    def _flex_arrays(self, arr: dict) -> dict[str, int]:
        """The flex_* and flexedge_* arrays into ``arr``; flexedge_length0 and flexedge_invweight0
        are set at qpos0 by setconst. flex_edgeequality is 1 for a flex an <equality><flex> names."""
        fl = self.flexes
        constrained = {e["obj1"] for e in self.equalities if e["type"] == 4}  # mjEQ_FLEX
        if any(f["stiffness"] and f["id"] in constrained for f in fl):
            f = next(f for f in fl if f["stiffness"] and f["id"] in constrained)
            raise f["node"].error("flex constraints and edge stiffness cannot both be present")
        for f in fl:
            if f["elastic"] and f["id"] in constrained:
                raise f["node"].error("flex constraints and elasticity (young) cannot both be present")
            implicit = self.opt["integrator"] in (IntegratorType.IMPLICIT, IntegratorType.IMPLICITFAST)
            if f["elastic"] and f["elastic"]["active"] and implicit:
                # MuJoCo 4.0 refuses it when it makes the data (an engine error)
                raise f["node"].error("flex elasticity is no longer integrated implicitly under "
                                      "integrator='implicit' and 'implicitfast': set integrator='discrete', "
                                      "or 'Euler' with a small timestep")
        nvert = [len(f["vertbody"]) for f in fl]
        nedge = [len(f["edges"]) for f in fl]
        nelem = [len(f["elem"]) // (f["dim"] + 1) for f in fl]
        nelemdata = [len(f["elem"]) for f in fl]
        nelemedge = [len(f["elemedge"]) for f in fl]
        i32 = np.int32
        arr["flex_dim"] = np.array([f["dim"] for f in fl], i32)
        arr["flex_vertadr"] = np.array(np.cumsum([0, *nvert])[:-1], i32)
        arr["flex_vertnum"] = np.array(nvert, i32)
        arr["flex_edgeadr"] = np.array(np.cumsum([0, *nedge])[:-1], i32)
        arr["flex_edgenum"] = np.array(nedge, i32)
        arr["flex_contype"] = np.array([f["contype"] for f in fl], i32)
        arr["flex_conaffinity"] = np.array([f["conaffinity"] for f in fl], i32)
        arr["flex_edgeequality"] = np.array([int(f["id"] in constrained) for f in fl], i32)
        arr["flex_edgestiffness"] = np.array([f["stiffness"] for f in fl], float)
        arr["flex_edgedamping"] = np.array([f["damping"] for f in fl], float)
        arr["flex_rigid"] = np.array([f["rigid"] for f in fl], np.uint8)
        arr["flex_vertbodyid"] = np.array([b for f in fl for b in f["vertbody"]], i32)
        arr["flex_vert"] = np.array([x for f in fl for x in f["vert"]], float).reshape(-1, 3)
        arr["flex_edge"] = np.array([e for f in fl for e in f["edges"]], i32).reshape(-1, 2)
        arr["flexedge_rigid"] = np.array([int(f["rigid"] or r) for f in fl for r in f["edge_rigid"]],
                                         np.uint8)
        arr["flexedge_length0"] = np.zeros(sum(nedge))
        arr["flexedge_invweight0"] = np.zeros(sum(nedge))
        arr["flex_elemadr"] = np.array(np.cumsum([0, *nelem])[:-1], i32)
        arr["flex_elemnum"] = np.array(nelem, i32)
        arr["flex_elemdataadr"] = np.array(np.cumsum([0, *nelemdata])[:-1], i32)
        arr["flex_elemedgeadr"] = np.array(np.cumsum([0, *nelemedge])[:-1], i32)
        arr["flex_elem"] = np.array([v for f in fl for v in f["elem"]], i32)
        arr["flex_elemedge"] = np.array([e for f in fl for e in f["elemedge"]], i32)
        # flex_stiffness: 21 numbers per element of an elastic flex (the packed upper triangle of
        # its edge metric: 6 for a triangle), none for the others (flex_stiffnessadr -1)
        stiff = [f["elastic"]["stiffness"] if f["elastic"] else [] for f in fl]
        adr = np.cumsum([0, *map(len, stiff)])[:-1]
        arr["flex_stiffnessadr"] = np.array([a if k else -1 for a, k in zip(adr, stiff, strict=True)], i32)
        arr["flex_stiffness"] = np.array([x for k in stiff for x in k], float)
        # flex_bending: 17 numbers per edge of a bending flex; flex_edgeflap: the two vertices
        # opposite each of its edges (-1: none; every edge of a flex without bending)
        bend = [f["elastic"]["bending"] if f["elastic"] and "bending" in f["elastic"] else [] for f in fl]
        adr = np.cumsum([0, *map(len, bend)])[:-1]
        arr["flex_bendingadr"] = np.array([a if b else -1 for a, b in zip(adr, bend, strict=True)], i32)
        arr["flex_bending"] = np.array([x for b in bend for x in b], float)
        arr["flex_edgeflap"] = np.array(
            [fp for f in fl for fp in (f["elastic"]["flaps"] if f["elastic"] and "flaps" in f["elastic"]
                                       else [(-1, -1)] * len(f["edges"]))], i32).reshape(-1, 2)
        return dict(nflex=len(fl), nflexvert=sum(nvert), nflexedge=sum(nedge), nflexelem=sum(nelem),
                    nflexelemdata=sum(nelemdata), nflexelemedge=sum(nelemedge),
                    nflexstiffness=sum(map(len, stiff)), nflexbending=sum(map(len, bend)))

    def _flex_rows(self) -> int:
        """Constraint rows the flex equalities can make: one per non-rigid edge of their flex."""
        rows = 0
        for e in self.equalities:
            if e["type"] == 4:  # mjEQ_FLEX
                f = self.flexes[e["obj1"]]
                rows += sum(not (f["rigid"] or r) for r in f["edge_rigid"])
        return rows

    def _flex_equality(self, node: Node, a: dict) -> int:
        """The flex an <equality><flex flex=.../> names (its id)."""
        if "flex" not in a:
            raise node.error("required attribute missing: 'flex'", "flex")
        for f in self.flexes:
            if f["name"] == a["flex"]:
                return f["id"]
        raise node.error(f"unknown element '{a['flex']}' in equality constraint", "flex")


def _grid(count, spacing, dim) -> tuple[np.ndarray, list[int]]:
    """The points and elements of a grid flexcomp (mjCFlexcomp::MakeGrid), before pos and quat.

    dim 1: count[0] points at spacing[0] (i - (count[0] - 1) / 2) along x, segments (i, i + 1).
    dim 2: point ix * count[1] + iy at (spacing[0] (ix - (count[0] - 1) / 2), spacing[1] (iy -
    (count[1] - 1) / 2), 0); each cell's corners v00, v10, v11, v01 make the triangles (v00, v10,
    v11) and (v00, v11, v01). MuJoCo numbers the corners with count[2] as a third stride, so a
    count[2] other than 1 makes ids past the points, which the caller refuses as MuJoCo does."""
    nx, ny, nz = count
    if dim == 3:
        points = np.zeros((nx * ny * nz, 3))
        elem = []
        for ix in range(nx):
            for iy in range(ny):
                for iz in range(nz):
                    points[ix * ny * nz + iy * nz + iz] = (spacing[0] * (ix - 0.5 * (nx - 1)),
                                                           spacing[1] * (iy - 0.5 * (ny - 1)),
                                                           spacing[2] * (iz - 0.5 * (nz - 1)))
                    if ix < nx - 1 and iy < ny - 1 and iz < nz - 1:
                        corner = [nz * ny * (ix + dx) + nz * (iy + dy) + iz + dz for dz in (0, 1)
                                  for dx, dy in ((0, 0), (1, 0), (1, 1), (0, 1))]
                        elem += [corner[c] for tet in _CUBE_TETS for c in tet]
        return points, elem
    if dim == 1:
        points = np.zeros((nx, 3))
        points[:, 0] = [spacing[0] * (i - 0.5 * (nx - 1)) for i in range(nx)]
        return points, [v for i in range(nx - 1) for v in (i, i + 1)]
    points = np.zeros((nx * ny, 3))
    elem = []
    for ix in range(nx):
        for iy in range(ny):
            points[ix * ny + iy, :2] = (spacing[0] * (ix - 0.5 * (nx - 1)),
                                        spacing[1] * (iy - 0.5 * (ny - 1)))
            if ix < nx - 1 and iy < ny - 1:
                v00, v10 = nz * ny * ix + nz * iy, nz * ny * (ix + 1) + nz * iy
                v11, v01 = nz * ny * (ix + 1) + nz * (iy + 1), nz * ny * ix + nz * (iy + 1)
                elem += [v00, v10, v11, v00, v11, v01]
    return points, elem


def _orient_tets(elem: list[int], xpos: list[list[float]]) -> None:
    """Reorder each tetrahedron so that its faces point outwards, as mjCFlex::Compile does: with
    the vertices at qpos0, swap the second and third vertex when (x1 - x0) x (x2 - x0) . (x3 - x0)
    is positive."""
    for k in range(0, len(elem), 4):
        x0, x1, x2, x3 = (xpos[v] for v in elem[k:k + 4])
        e1, e2, e3 = ([b[j] - x0[j] for j in range(3)] for b in (x1, x2, x3))
        if dot3(cross(e1, e2), e3) > 0:
            elem[k + 1], elem[k + 2] = elem[k + 2], elem[k + 1]


def _stretch_stiffness(elem: list[int], xpos: list[list[float]], young: float, poisson: float,
                       thickness: float, stretch: bool) -> list[float]:
    """flex_stiffness of a 2-D flex (mjCFlex::Compile, ComputeStiffness for triangles): for each
    triangle the 3 x 3 metric K of its edges (in the simplex order (1,2), (2,0), (0,1)) such that
    the stretch energy is 1/2 e' K e with e the squared-length changes, packed as its upper
    triangle into 21 numbers. With B_e the symmetrised product of the in-plane normals of the
    other two edges divided by 8 A^2 (the strain of a unit squared-length change of edge e;
    Weischedel's coordinate-free linear element) and A the area at qpos0:

        K_ab = mu tr(B_a B_b) + la tr(B_a) tr(B_b),
        mu = E / (2 (1 + nu)) A t,   la = E nu / (2 (1 - nu^2)) A t

    (MuJoCo 4.0's constants: the shear modulus and half the plane-stress lambda; measured
    against the 4.0.0 wheel's flex_stiffness)."""
    if not stretch:
        return [0.0] * (7 * len(elem))
    out = []
    for k in range(0, len(elem), 3):
        x = [np.array(xpos[v]) for v in elem[k:k + 3]]
        area = 0.5 * np.linalg.norm(np.cross(x[1] - x[0], x[2] - x[0]))
        mu = young / (2 * (1 + poisson)) * area * thickness
        la = young * poisson / (2 * (1 - poisson * poisson)) * area * thickness
        basis = []
        for e in range(3):
            # the two edges of the triangle that meet at vertex e (the other two than edge e)
            left = x[(e + 2) % 3] - x[e]
            right = x[(e + 1) % 3] - x[e]
            normal = np.cross(right, left)
            normal /= np.linalg.norm(normal)
            bl, br = np.cross(normal, left), np.cross(right, normal)
            basis.append((np.outer(bl, br) + np.outer(br, bl)) / (8 * area * area))
        tr = [np.trace(B) for B in basis]
        metric = [mu * np.sum(basis[i] * basis[j].T) + la * tr[i] * tr[j]
                  for i in range(3) for j in range(i, 3)]
        out += metric + [0.0] * 15
    return out


def _flaps(elem: list[int], nedge: int) -> list[list[int]]:
    """The flap of each edge of a 2-D flex (mjCFlex::Compile's CreateFlapStencil): the edge's two
    vertices as its first triangle orders them (simplex edge order (1,2), (2,0), (0,1)), then the
    third vertex of that triangle and of the second triangle on the edge (-1 on the boundary).
    Edges are met in the order the compiler numbered them, so flap k is edge k's."""
    flaps: list[list[int]] = []
    index: dict[tuple[int, int], int] = {}
    for k in range(0, len(elem), 3):
        v = elem[k:k + 3]
        for i, j in _ELEM_EDGES[2]:
            pair = (min(v[i], v[j]), max(v[i], v[j]))
            opposite = v[(j + 1) % 3]
            if pair in index:
                flaps[index[pair]][3] = opposite
            else:
                index[pair] = len(flaps)
                flaps.append([v[i], v[j], opposite, -1])
    assert len(flaps) == nedge
    return flaps


def _cot(x, v0, v1, v2) -> float:
    """The cotangent of the angle at v0 between the edges to v1 and v2."""
    e1, e2 = x[v1] - x[v0], x[v2] - x[v0]
    n = np.cross(e1, e2)
    return float(e1 @ e2) / np.sqrt(n @ n)


def _bending(flaps: list[list[int]], xpos: list[list[float]], young: float, poisson: float,
             thickness: float) -> list[float]:
    """flex_bending (mjCFlex::Compile, ComputeBending): for each interior edge with flap vertices
    (v0, v1, v2, v3), the 4 x 4 matrix c c' cos(theta) D / A and a 17th number for a curved rest
    shape, where c are the cotangent weights of Wardetzky et al.'s discrete quadratic bending
    energy, theta the rest angle between the flap's two edge normals (Garg et al.'s cubic
    shells), A the two triangles' area and D = E t^3 / (12 (1 - nu^2)) the plate bending
    rigidity (MuJoCo 4.0's constant, measured against the wheel). Boundary edges get zeros."""
    x = np.array(xpos, float)
    rigidity = young * thickness ** 3 / (12 * (1 - poisson * poisson))
    out: list[float] = []
    for v in flaps:
        b = [0.0] * 17
        if v[3] >= 0:
            a01, a02 = _cot(x, v[0], v[1], v[2]), _cot(x, v[0], v[3], v[1])
            a03, a04 = _cot(x, v[1], v[2], v[0]), _cot(x, v[1], v[0], v[3])
            c = (a03 + a04, a01 + a02, -(a01 + a03), -(a02 + a04))
            area = (0.5 * np.linalg.norm(np.cross(x[v[1]] - x[v[0]], x[v[2]] - x[v[0]]))
                    + 0.5 * np.linalg.norm(np.cross(x[v[0]] - x[v[1]], x[v[3]] - x[v[1]])))
            stiffness = rigidity / area
            e0, e1, e2 = x[v[1]] - x[v[0]], x[v[2]] - x[v[0]], x[v[3]] - x[v[0]]
            e3, e4 = x[v[2]] - x[v[1]], x[v[3]] - x[v[1]]
            t0, t1 = -(a03 * e1 + a01 * e3), -(a04 * e2 + a02 * e4)
            sqr = float(e0 @ e0)
            cos_theta = -float(t0 @ t1) / sqr
            b[:16] = [c[i] * c[j] * cos_theta * stiffness for i in range(4) for j in range(4)]
            b[16] = (float(np.cross(e0, e1) @ e2) * (a01 - a03) * (a04 - a02) * stiffness
                     / (sqr * np.sqrt(sqr)))
        out += b
    return out
