"""The ``<equality>`` section: connect, weld, joint and tendon equality constraints, the eq_* arrays.

xml_native_reader OneEquality and mjCEquality::ResolveReferences: body or site semantics of
connect and weld, the objects' ids and MuJoCo's checks. eq_data is left as the reader stores
it; ``setconst`` completes it at qpos0 (the connect anchor in body2's frame, the weld's
relative pose when relpose is omitted).
"""

from __future__ import annotations

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.engine.types import NEQDATA, NIMP, NREF, EqType, JointType, ObjType
from kinedyn.xml.mjcf import Node, typed_attrs

# mjs_defaultEquality: active, default solref/solimp; eq_data starts as polycoef (0, 1, 0, 0, 0) with
# torquescale (data[10]) 1, whatever the type: those values survive where nothing overwrites them
_EQUALITY_DEFAULTS = dict(active="true", solref=dflt.SOLREF, solimp=dflt.SOLIMP)
_EQ_DATA0 = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
# equality elements: their schema entry (mjcf.SCHEMA) and type
_EQUALITY_TAGS = {"connect": ("connect", EqType.CONNECT), "weld": ("weld", EqType.WELD),
                  "joint": ("equality_joint", EqType.JOINT), "tendon": ("equality_tendon", EqType.TENDON),
                  "flex": ("equality_flex", EqType.FLEX)}


class EqualitiesMixin:
    """The Compiler's ``<equality>`` reader and arrays (see :class:`kinedyn.compiler.build.Compiler`)."""

    def _equalities(self, section: Node) -> None:
        """One <equality> section (xml_native_reader OneEquality, mjCEquality::ResolveReferences).

        eq_data is left as the reader stores it; ``setconst`` completes it at qpos0 (the
        connect anchor in body2's frame, the weld's relative pose when relpose is omitted).
        """
        names = {e["name"] for e in self.equalities if e["name"]}
        for node in section.children:
            tag = node.tag
            if tag in ("flexvert", "flexstrain"):
                raise node.error(f"<{tag}> equality constraints (2-D and interpolated flexes) are not "
                                 "supported yet")
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
            if eqtype == EqType.FLEX:
                objtype, refs = ObjType.UNKNOWN, []  # MuJoCo leaves eq_objtype 0 for flex equalities
            elif eqtype in (EqType.CONNECT, EqType.WELD):
                objtype, refs = self._connect_or_weld(node, a, eqtype, data)
            else:
                kind = "joint" if eqtype == EqType.JOINT else "tendon"
                if f"{kind}1" not in a:
                    raise node.error(f"required attribute missing: '{kind}1'", f"{kind}1")
                objtype = ObjType.UNKNOWN  # MuJoCo leaves eq_objtype 0 for joint and tendon equalities
                refs = [(f"{kind}{k}", a[f"{kind}{k}"]) for k in (1, 2) if f"{kind}{k}" in a]
                poly = a.get("polycoef", [])
                data[:len(poly)] = poly
            if eqtype == EqType.FLEX:
                obj1, obj2 = self._flex_equality(node, a), -1
            else:
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

    def _equality_arrays(self, arr: dict) -> dict[str, int]:
        """The eq_* arrays into ``arr``; eq_data is completed at qpos0 by setconst."""
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
        return dict(neq=neq)
