"""The ``<deformable>`` section's ``<flex>`` elements and the flex_* arrays (mjCFlex::Compile,
the flex part of mjCModel::CopyObjects).

kinedyn builds 1-D flexes (cables) whose vertices are bodies' origins (``body=`` lists one body
per vertex, no ``vertex=``), with edge constraints (``<equality><flex>``) or edge
spring-dampers (``<edge stiffness damping>``), and without flex collisions
(``<contact contype="0" conaffinity="0"/>``). Everything else MuJoCo 4.0 does with flexes is
refused with a ModelError naming it (docs/deviations.md "Flexes"): 2-D and 3-D flexes
(their elasticity, bending and collisions), vertex offsets, interpolated flexes, flex
collisions, ``<flexcomp>``, ``<skin>``. Edges come from the elements as MuJoCo makes them:
each element's (min, max) vertex pair, in order of first appearance.
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.types import IntegratorType
from kinedyn.xml.mjcf import Node, typed_attrs

_FLEX = dict(name="s", dim="i", body="s", element="s", radius="f", group="i", rgba="f4", flatskin="s",
             material="s", vertex="s", texcoord="s", elemtexcoord="s", node="s", cellcount="s", dof="s")
_EDGE = dict(equality="s", stiffness="f", damping="f")
_CONTACT = dict(contype="i", conaffinity="i", condim="i", priority="i", friction="f*", solmix="f",
                solref="f*", solimp="f*", margin="f", gap="f", internal="s", selfcollide="s",
                activelayers="i", vertcollide="s", passive="s", tangential="s")
# attributes that change what a 1-D flex of centred vertices computes: refused when given
_UNBUILT_FLEX = ("vertex", "node", "cellcount", "dof")


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
        if dim != 1:
            raise node.error(f"{dim}-D flexes (their elasticity, bending and collisions) are not "
                             "supported yet: kinedyn builds 1-D flexes (cables)", "dim")
        for attr in _UNBUILT_FLEX:
            if attr in a:
                raise node.error(f"flex attribute '{attr}' (vertex offsets, interpolated flexes) is "
                                 "not supported yet: vertices are the listed bodies' origins", attr)
        if "body" not in a:
            raise node.error("required attribute missing: 'body'", "body")
        ids = {b.name: b.id for b in self.bodies if b.name}
        ids["world"] = 0
        vertbody = []
        for bname in a["body"].split():
            if bname not in ids:
                raise node.error(f"unknown body '{bname}' in flex", "body")
            vertbody.append(ids[bname])
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
        edges: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()
        for k in range(0, len(elem), 2):
            if elem[k] == elem[k + 1]:
                raise node.error("repeated vertex in element", "element")
            pair = (min(elem[k], elem[k + 1]), max(elem[k], elem[k + 1]))
            if pair not in seen:
                seen.add(pair)
                edges.append(pair)
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
            else:
                raise child.error(f"<{child.tag}> of a flex (elasticity, plugins) is not supported yet")
        if contype or conaffinity:
            raise node.error("flex collisions are not supported yet: give the flex "
                             '<contact contype="0" conaffinity="0"/>')
        weld = [self.bodies[b].weldid for b in vertbody]
        self.flexes.append(dict(
            node=node, name=name, id=fid, dim=dim, vertbody=vertbody, edges=edges,
            stiffness=float(stiffness), damping=float(damping), contype=contype, conaffinity=conaffinity,
            rigid=all(b == vertbody[0] for b in vertbody),
            edge_rigid=[weld[i] == weld[j] for i, j in edges]))

    def _flex_arrays(self, arr: dict) -> dict[str, int]:
        """The flex_* and flexedge_* arrays into ``arr``; flexedge_length0 and flexedge_invweight0
        are set at qpos0 by setconst. flex_edgeequality is 1 for a flex an <equality><flex> names."""
        fl = self.flexes
        constrained = {e["obj1"] for e in self.equalities if e["type"] == 4}  # mjEQ_FLEX
        if any(f["stiffness"] and f["id"] in constrained for f in fl):
            f = next(f for f in fl if f["stiffness"] and f["id"] in constrained)
            raise f["node"].error("flex constraints and edge stiffness cannot both be present")
        implicit = self.opt["integrator"] in (int(IntegratorType.IMPLICIT), int(IntegratorType.IMPLICITFAST))
        for f in fl:
            if f["damping"] and implicit:
                raise f["node"].error("flex edge damping with the implicit and implicitfast integrators "
                                      "(its term in qDeriv) is not supported yet: use Euler or RK4")
        nvert = [len(f["vertbody"]) for f in fl]
        nedge = [len(f["edges"]) for f in fl]
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
        arr["flex_edge"] = np.array([e for f in fl for e in f["edges"]], i32).reshape(-1, 2)
        arr["flexedge_rigid"] = np.array([int(f["rigid"] or r) for f in fl for r in f["edge_rigid"]],
                                         np.uint8)
        arr["flexedge_length0"] = np.zeros(sum(nedge))
        arr["flexedge_invweight0"] = np.zeros(sum(nedge))
        return dict(nflex=len(fl), nflexvert=sum(nvert), nflexedge=sum(nedge))

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
