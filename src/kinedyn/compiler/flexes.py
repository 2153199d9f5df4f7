"""The ``<deformable>`` section's ``<flex>`` elements and the flex_* arrays (mjCFlex::Compile,
the flex part of mjCModel::CopyObjects).

kinedyn builds flexes of every dim (cables, cloth, soft bodies) without elasticity: each
vertex is a body's origin or a point in a body's frame (``body=`` lists one body per vertex, or
one body for all; ``vertex=`` gives the offsets), with edge constraints (``<equality><flex>``,
``<edge equality="true">`` of a flexcomp), edge spring-dampers (``<edge stiffness damping>``;
stiffness for 1-D only, as in MuJoCo) and without flex collisions (``<contact contype="0"
conaffinity="0"/>``); grid ``<flexcomp>`` expand into such flexes. Everything else MuJoCo 4.0
does with flexes is refused with a ModelError naming it (docs/deviations.md "Flexes"):
elasticity (``<elasticity young>``: stretch and bending) and its damping, interpolated
flexes, flex collisions, other flexcomp types, ``<skin>``. Edges come from the elements as
MuJoCo makes them: each element's edges in MuJoCo's simplex order, as (min, max) vertex pairs,
in order of first appearance (``flex_elemedge`` maps them back); tetrahedra are first
reordered to face outwards at qpos0, as MuJoCo reorders them.
"""

from __future__ import annotations

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.compiler.frames import cross, dot3, frame_accum, rot_vec_quat
from kinedyn.engine.types import MINVAL
from kinedyn.xml.mjcf import Node, typed_attrs

_FLEX = dict(name="s", dim="i", body="s", element="s", radius="f", group="i", rgba="f4", flatskin="s",
             material="s", vertex="s", texcoord="s", elemtexcoord="s", node="s", cellcount="s", dof="s")
_EDGE = dict(equality="s", stiffness="f", damping="f")
_ELASTICITY = dict(young="f", poisson="f", damping="f", thickness="f", elastic2d="s")
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
        if dim == 3:
            self._orient_tets(elem, vertbody, vert)
        edges, elemedge = self._flex_edges(node, elem, dim)
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
                # an <elasticity> that sets no stiffness and no damping changes nothing
                el = typed_attrs(child, schema=_ELASTICITY)
                for attr in ("young", "damping"):
                    if el.get(attr, 0.0) != 0.0:
                        raise child.error(f"flex elasticity '{attr}' (MuJoCo's stretch and bending "
                                          "models) is not supported yet", attr)
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
            elem=elem, elemedge=elemedge,
            stiffness=float(stiffness), damping=float(damping), contype=contype, conaffinity=conaffinity,
            rigid=all(b == vertbody[0] for b in vertbody),
            edge_rigid=[weld[i] == weld[j] for i, j in edges]))

    def _orient_tets(self, elem: list[int], vertbody: list[int], vert: list[float]) -> None:
        """Reorder each tetrahedron so that its faces point outwards, as mjCFlex::Compile does:
        with the vertices at their qpos0 positions (body pose at qpos0, offset rotated into the
        world), swap the second and third vertex when (v1 - v0) x (v2 - v0) . (v3 - v0) > 0."""
        poses: dict[int, tuple] = {}

        def pose(b):  # the body's world pose at qpos0, chained from the world
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
        for k in range(0, len(elem), 4):
            x0, x1, x2, x3 = (xpos[v] for v in elem[k:k + 4])
            e1, e2, e3 = ([b[j] - x0[j] for j in range(3)] for b in (x1, x2, x3))
            if dot3(cross(e1, e2), e3) > 0:
                elem[k + 1], elem[k + 2] = elem[k + 2], elem[k + 1]

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
        return dict(nflex=len(fl), nflexvert=sum(nvert), nflexedge=sum(nedge), nflexelem=sum(nelem),
                    nflexelemdata=sum(nelemdata), nflexelemedge=sum(nelemedge))

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
