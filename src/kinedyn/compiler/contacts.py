"""The contact model: geom contact parameters, ``<contact>`` pairs and excludes, capacity.

Mirrors what MuJoCo's compiler does for collisions (user_objects.cc ``mjCGeom::Compile``,
``mjCPair::Compile``, ``mjCBodyPair``; user_model.cc sorting pairs and excludes by body-pair
signature):

* per geom: ``geom_priority``, ``geom_solmix``, ``geom_solref``, ``geom_solimp``,
  ``geom_margin``, ``geom_gap``, ``geom_adhesion``, the bounding sphere ``geom_rbound`` and
  box ``geom_aabb`` (centre, half-sizes in the geom frame);
* per body: ``body_contype`` / ``body_conaffinity`` (OR over its geoms) and ``body_margin``
  (max over its geoms of margin + gap);
* ``<pair>``: geom1/geom2 swapped so that geom1's body has the lower id, unspecified
  attributes from its class or MuJoCo's pair defaults (never from the geoms), stable-sorted by
  ``pair_signature = body1 << 16 | body2``;
* ``<exclude>``: ``exclude_signature``, sorted.

It also sizes the contact arrays (``nconmax``, kinedyn's): the most contacts the model can
ever make, summing MuJoCo's per-pair bound (``mj_maxContact``) over every geom pair the
static filters let through, capped at :data:`NCONMAX_CAP` unless ``<size nconmax>`` says
otherwise (then extra contacts are dropped with a warning, as MuJoCo's legacy nconmax).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.engine.collision_driver import (
    SUPPORTED_PAIRS,
    max_contacts,
    uses_convex_collider,
)
from kinedyn.engine.collision_gjk_common import convex_work_size
from kinedyn.engine.types import DisableBit, GeomType
from kinedyn.errors import ModelError
from kinedyn.xml.mjcf import Node, parse_ints, typed_attrs

SOLREF, SOLIMP = dflt.SOLREF, dflt.SOLIMP  # mj_defaultSolRefImp

# mjs_defaultGeom's contact attributes (merged into the geom defaults of tree.py)
GEOM_CONTACT_DEFAULTS = dict(priority=0, solmix=1.0, solref=SOLREF, solimp=SOLIMP, margin=0.0, gap=0.0,
                             adhesion=0.0, surfacevel=[0.0] * 6)

# mjs_defaultPair: what a <pair> has where neither it nor its class says
_PAIR_FRICTION = [1.0, 1.0, 0.005, 0.0001, 0.0001]
_PAIR_DEFAULTS = dict(condim=3, friction=_PAIR_FRICTION, solref=SOLREF, solimp=SOLIMP,
                      solreffriction=[0.0, 0.0], margin=0.0, gap=0.0, adhesion=0.0)

# contacts kinedyn allocates room for when the model does not say (<size nconmax>): beyond it a
# step keeps the first NCONMAX_CAP contacts and warns, as MuJoCo does when its arena is full
NCONMAX_CAP = 1000

# ccd_iterations the convex collider's buffers hold at least (MuJoCo's default is 35)
CCD_ITERATIONS_CAPACITY = 50

# the plane's bounding box: MuJoCo gives planes an effectively infinite one (mjMAXVAL-like)
_PLANE_AABB = (0.0, 0.0, -5e9, 1e10, 1e10, 5e9)


# type pairs MuJoCo has no collider for (mjCOLLISIONFUNC): never collided, nothing to refuse
NOT_COLLIDED = frozenset({(GeomType.PLANE, GeomType.PLANE), (GeomType.PLANE, GeomType.HFIELD),
                          (GeomType.HFIELD, GeomType.HFIELD)})


def geom_rbound(gtype: int, size) -> float:
    """Radius of the geom's bounding sphere about its centre (mjCGeom::Compile); 0 for planes."""
    if gtype == GeomType.SPHERE:
        return size[0]
    if gtype == GeomType.CAPSULE:
        return size[0] + size[1]
    if gtype == GeomType.CYLINDER:
        return math.sqrt(size[0] * size[0] + size[1] * size[1])
    if gtype == GeomType.ELLIPSOID:
        return max(size[0], size[1], size[2])
    if gtype in (GeomType.BOX, GeomType.MESH):  # a mesh's size is its largest |vertex| per axis
        return math.sqrt(size[0] * size[0] + size[1] * size[1] + size[2] * size[2])
    return 0.0


def geom_aabb(gtype: int, size) -> tuple:
    """The geom's axis-aligned box in its own frame: (centre, half-sizes)."""
    if gtype == GeomType.PLANE:
        return _PLANE_AABB
    if gtype == GeomType.SPHERE:
        r = size[0]
        return (0.0, 0.0, 0.0, r, r, r)
    if gtype == GeomType.CAPSULE:
        return (0.0, 0.0, 0.0, size[0], size[0], size[0] + size[1])
    if gtype == GeomType.CYLINDER:
        return (0.0, 0.0, 0.0, size[0], size[0], size[1])
    return (0.0, 0.0, 0.0, size[0], size[1], size[2])


def _rows_per_contact(condim: int) -> int:
    """Constraint rows of one contact: 1 frictionless, else the pyramid's 2 (condim - 1), which is
    at least the elliptic cone's condim."""
    return 1 if condim == 1 else 2 * (condim - 1)


class ContactCompiler:
    """Compiles the contact model of one :class:`~kinedyn.compiler.build.Compiler` run."""

    def __init__(self, compiler):
        self.c = compiler
        self.pairs: list[dict] = []
        self.excludes: list[tuple[int, Node]] = []

    # ---- <contact> ---------------------------------------------------------------------------

    def read_sections(self) -> None:
        """Every <contact> section: pairs and excludes, names resolved (mjCPair/mjCBodyPair)."""
        c = self.c
        geoms = {g.attrs["name"]: g for g in c.geoms if g.attrs.get("name")}
        bodies = {b.name: b for b in c.bodies}
        names: set[str] = set()
        for section in c.sections.get("contact", []):
            for node in section.children:
                if node.tag not in ("pair", "exclude"):
                    raise node.error("Schema violation: unrecognized element")
                if node.children:
                    raise node.children[0].error("Schema violation: unrecognized element")
                attrs = typed_attrs(node)
                name = attrs.get("name", "")
                if name:
                    if (node.tag, name) in names:
                        raise node.error(f"repeated name '{name}' in {node.tag}", "name")
                    names.add((node.tag, name))
                if node.tag == "pair":
                    self._pair(node, attrs, geoms)
                else:
                    self._exclude(node, attrs, bodies)
        # stable sort by signature (user_model.cc), so pairs of one body pair keep their order
        self.pairs.sort(key=lambda p: p["signature"])
        self.excludes.sort(key=lambda e: e[0])

    def _pair(self, node: Node, attrs: dict, geoms: dict) -> None:
        cls = self.c.classes["main"]
        if "class" in attrs:
            cls = dflt.lookup(self.c.classes, node, "class", attrs["class"])
        a = dflt.merge("pair", dflt.merge("pair", _PAIR_DEFAULTS, cls.pair), attrs)
        found = []
        for key in ("geom1", "geom2"):
            if key not in a:
                raise node.error(f"required attribute missing: '{key}'", key)
            if a[key] not in geoms:
                raise node.error(f"geom '{a[key]}' not found in collision {len(self.pairs)}", key)
            found.append(geoms[a[key]])
        g1, g2 = found
        if g1.body.id > g2.body.id:
            g1, g2 = g2, g1
        if a["condim"] not in (1, 3, 4, 6):
            raise node.error("invalid condim in contact pair", "condim")
        # MJCF gives every attribute of a <pair> a value (its class's, else mjs_defaultPair's): the
        # geoms' parameters are not consulted (mjCPair::Compile mixes only values left undefined,
        # which only the C API can do)
        friction = list(a["friction"]) + _PAIR_FRICTION[len(a["friction"]):]
        solref = list(a["solref"]) + SOLREF[len(a["solref"]):]
        solimp = list(a["solimp"]) + SOLIMP[len(a["solimp"]):]
        solreffriction = list(a["solreffriction"]) + [0.0, 0.0][len(a["solreffriction"]):]
        margin, gap, condim = a["margin"], a["gap"], a["condim"]
        self.pairs.append(dict(node=node, geom1=g1.id, geom2=g2.id,
                               signature=(g1.body.id << 16) + g2.body.id, dim=condim, solref=solref,
                               solreffriction=solreffriction, solimp=solimp, margin=margin, gap=gap,
                               adhesion=a["adhesion"], friction=friction))

    def _exclude(self, node: Node, attrs: dict, bodies: dict) -> None:
        ids = []
        for key in ("body1", "body2"):
            if key not in attrs:
                raise node.error(f"required attribute missing: '{key}'", key)
            if attrs[key] not in bodies:
                raise node.error(f"body '{attrs[key]}' not found in exclude", key)
            ids.append(bodies[attrs[key]].id)
        b1, b2 = sorted(ids)
        self.excludes.append(((b1 << 16) + b2, node))

    # ---- arrays --------------------------------------------------------------------------------

    def arrays(self, arr: dict) -> dict:
        """Contact fields into ``arr``; returns the sizes npair, nexclude, nconmax."""
        c = self.c
        geoms, bodies = c.geoms, c.bodies
        ngeom, nbody = len(geoms), len(bodies)
        for g in geoms:
            if any(g.attrs["surfacevel"]):
                raise g.node.error("geom surfacevel is not supported yet (it moves contact rows' "
                                   "reference velocity)", "surfacevel")
        col = lambda key: [g.attrs[key] for g in geoms]  # noqa: E731
        arr["geom_priority"] = np.array(col("priority"), dtype=np.int32)
        arr["geom_solmix"] = np.array(col("solmix"), dtype=float)
        arr["geom_solref"] = np.array(col("solref"), dtype=float).reshape(ngeom, 2)
        arr["geom_solimp"] = np.array(col("solimp"), dtype=float).reshape(ngeom, 5)
        arr["geom_margin"] = np.array(col("margin"), dtype=float)
        arr["geom_gap"] = np.array(col("gap"), dtype=float)
        arr["geom_adhesion"] = np.array(col("adhesion"), dtype=float)
        arr["geom_rbound"] = np.array([g.rbound if g.rbound is not None else geom_rbound(g.type, g.size)
                                       for g in geoms], dtype=float)
        arr["geom_aabb"] = np.array([g.aabb if g.aabb is not None else geom_aabb(g.type, g.size)
                                     for g in geoms], dtype=float).reshape(ngeom, 6)

        contype = np.zeros(nbody, dtype=np.int32)
        conaffinity = np.zeros(nbody, dtype=np.int32)
        margin = np.zeros(nbody)
        for g in geoms:
            b = g.body.id
            contype[b] |= g.attrs["contype"]
            conaffinity[b] |= g.attrs["conaffinity"]
            margin[b] = max(margin[b], g.attrs["margin"] + g.attrs["gap"])
        arr["body_contype"], arr["body_conaffinity"], arr["body_margin"] = contype, conaffinity, margin

        pairs = self.pairs
        npair = len(pairs)
        pcol = lambda key, dtype=float: np.array([p[key] for p in pairs], dtype=dtype)  # noqa: E731
        arr["pair_dim"] = pcol("dim", np.int32)
        arr["pair_geom1"] = pcol("geom1", np.int32)
        arr["pair_geom2"] = pcol("geom2", np.int32)
        arr["pair_signature"] = pcol("signature", np.int32)
        arr["pair_solref"] = pcol("solref").reshape(npair, 2)
        arr["pair_solreffriction"] = pcol("solreffriction").reshape(npair, 2)
        arr["pair_solimp"] = pcol("solimp").reshape(npair, 5)
        arr["pair_margin"] = pcol("margin")
        arr["pair_gap"] = pcol("gap")
        arr["pair_adhesion"] = pcol("adhesion")
        arr["pair_friction"] = pcol("friction").reshape(npair, 5)
        arr["exclude_signature"] = np.array([s for s, _ in self.excludes], dtype=np.int32)
        if not c.opt["disableflags"] & (DisableBit.CONSTRAINT | DisableBit.CONTACT):
            self.check_colliders(SUPPORTED_PAIRS)
        nccd, nccdint = self._ccd_buffers()
        nconmax, self.contact_rows = self.capacity()
        return dict(npair=npair, nexclude=len(self.excludes), nconmax=nconmax, nccd=nccd, nccdint=nccdint)

    def _ccd_buffers(self) -> tuple[int, int]:
        """Sizes of the convex collider's scratch buffers: room for max(ccd_iterations,
        CCD_ITERATIONS_CAPACITY) iterations when some geom pair goes through it, else none.
        Sets ``ccd_capacity``, the most ccd_iterations the model then accepts."""
        self.ccd_capacity = 2**31 - 1
        if not any(uses_convex_collider(t1, t2) for t1, t2 in self._pair_scan()["types"]):
            return 1, 1
        if self.c.opt["disableflags"] & DisableBit.NATIVECCD:
            flags = [f for o in self.c.sections.get("option", []) for f in o.children if f.tag == "flag"]
            message = ("<flag nativeccd=\"disable\"/> selects MuJoCo's legacy libccd collider, which kinedyn "
                       "does not have (it has MuJoCo's native GJK/EPA, the default)")
            if flags:
                raise flags[0].error(message, "nativeccd")
            raise ModelError(message)
        self.ccd_capacity = max(self.c.solver_opt.get("ccd_iterations", 35), CCD_ITERATIONS_CAPACITY)
        hull = max((int(m.processed.graph[0]) for m in getattr(self.c, "meshes", []) if m.needhull),
                   default=0)
        if any(t1 == GeomType.HFIELD for t1, _ in self._pair_scan()["types"]):
            hull = max(hull, 5)  # room for a height-field prism's 6 vertices (collision_hfield)
        return convex_work_size(self.ccd_capacity, hull)

    def capacity(self) -> tuple[int, int]:
        """Room for contacts and their rows: the static bound (:meth:`static_bound`), capped
        at NCONMAX_CAP contacts unless <size nconmax> gives the number."""
        given = None
        for node in self.c.sections.get("size", []):
            value = parse_ints(node, "nconmax", node.attrib.get("nconmax", ""))
            if value and value[0] >= 0:
                given = value[0]
        ncon, nrow = self.static_bound()
        widest = self._pair_scan()["widest"]  # the most rows one contact can make
        cap = NCONMAX_CAP if given is None else given
        if ncon > cap:
            nrow = cap * widest
            ncon = cap
        elif given is not None:
            ncon, nrow = given, given * widest
        return ncon, nrow

    def check_colliders(self, supported) -> None:
        """ModelError naming two geoms that could collide but whose type pair the collision stage
        has no collider for (``supported``: set of (lower type, higher type))."""
        types = self._pair_scan()["types"]
        missing = [key for key in types if key not in supported and key not in NOT_COLLIDED]
        if missing:
            # the explicit pairs' types first, then the first pair a geom-by-geom scan would meet
            explicit = [key for key in missing if types[key] is not None]
            if explicit:
                key, (g1, g2) = explicit[0], types[explicit[0]]
            else:
                _, key, g1, g2 = min(self._witness(key) for key in missing)
            raise g2.node.error(f"collisions between {GeomType(key[0]).name.lower()} and "
                                f"{GeomType(key[1]).name.lower()} geoms are not supported yet "
                                f"(with the geom at line {g1.node.line}); disable them with "
                                "contype/conaffinity, <exclude> or <flag contact=\"disable\"/>")

    def static_bound(self) -> tuple[int, int]:
        """(contacts, constraint rows) the model can ever make: mj_maxContact, and the rows of a
        pyramidal cone of the larger condim, summed over every geom pair that can ever collide."""
        scan = self._pair_scan()
        return scan["ncon"], scan["nrow"]

    def _pair_scan(self) -> dict:
        """The geom pairs that can ever be collided, summarised: explicit pairs, and geoms of
        different weld groups (not both dof-less) whose bitmasks match and whose bodies are not
        excluded (the parent filter is left out: it can be switched off at run time). Returns
        the contact and row bounds (``ncon``, ``nrow``), the most rows one contact can make
        (``widest``) and ``types``: per (lower, higher) type pair present, one such pair of geoms
        (the first explicit pair of those types, else None until :meth:`_witness` finds one).

        The count is near-linear in the number of geoms: geoms are grouped into classes (bitmasks,
        type, condim, dof-less weld), the pairs of every two classes counted at once, and the pairs
        within one weld group and between excluded bodies subtracted (sparse products)."""
        if getattr(self, "_scan", None) is not None:
            return self._scan
        c = self.c
        types: dict[tuple[int, int], tuple | None] = {}
        ncon = nrow = 0
        widest = 1
        for p in self.pairs:
            g1, g2 = c.geoms[p["geom1"]], c.geoms[p["geom2"]]
            key = (min(g1.type, g2.type), max(g1.type, g2.type))
            types.setdefault(key, (g1, g2))
            n = _MAXCON[key]
            ncon += n
            nrow += n * _rows_per_contact(p["dim"])
            widest = max(widest, _rows_per_contact(p["dim"]))
        colliding = [g for g in c.geoms if g.attrs["contype"] or g.attrs["conaffinity"]]
        if len(colliding) > 1:
            pairs = _class_pairs(c.bodies, colliding, self.excludes)
            for (lo, hi, dim), count in pairs.items():
                per = int(_MAXCON_TABLE[lo, hi]) * count
                width = _rows_per_contact(dim)
                ncon += per
                nrow += per * width
                widest = max(widest, width)
                types.setdefault((lo, hi), None)
        self._scan = dict(ncon=ncon, nrow=nrow, types=types, widest=widest)
        return self._scan

    def _witness(self, key: tuple[int, int]) -> tuple:
        """(place, key, geom1, geom2): the first two geoms of the types ``key`` that can collide in the
        order of (body, contype, conaffinity, type, condim) groups, and where they are in it."""
        c = self.c
        groups: dict[tuple, list] = {}
        for g in c.geoms:
            a = g.attrs
            if a["contype"] or a["conaffinity"]:
                group = (g.body.id, a["contype"], a["conaffinity"], g.type, a["condim"])
                groups.setdefault(group, []).append(g)
        keys = sorted(groups)
        bodies = c.bodies
        col = lambda k: np.array([gk[k] for gk in keys], dtype=np.int64)  # noqa: E731
        body, ctype, caff, gtype = col(0), col(1), col(2), col(3)
        weld = np.array([bodies[b].weldid for b in body])
        dofless = np.array([bodies[w].dofnum == 0 for w in weld])
        excluded = np.array(sorted(s for s, _ in self.excludes), dtype=np.int64)
        lo_t, hi_t = key
        for i in np.flatnonzero((gtype == lo_t) | (gtype == hi_t)):
            rest = slice(i + 1, None)
            other = hi_t if gtype[i] == lo_t else lo_t
            ok = (gtype[rest] == other) & (weld[rest] != weld[i]) & ~(dofless[rest] & dofless[i])
            ok &= ((ctype[i] & caff[rest]) | (ctype[rest] & caff[i])) != 0
            if excluded.size:
                sig = (np.minimum(body[rest], body[i]) << 16) + np.maximum(body[rest], body[i])
                ok &= ~np.isin(sig, excluded)
            js = np.flatnonzero(ok)
            if js.size:
                j = int(i + 1 + js[0])
                return (int(i), j), key, groups[keys[i]][0], groups[keys[j]][0]
        raise AssertionError(f"no geom pair of types {key}")  # _pair_scan found one


def _class_pairs(bodies, geoms, excludes) -> dict[tuple[int, int, int], int]:
    """{(lower type, higher type, larger condim): number of geom pairs} over the pairs of ``geoms``
    that can ever collide: different weld groups, not both dof-less, bitmasks matching, bodies
    not excluded. Only entries with a positive count.

    Geoms are sorted into classes (contype, conaffinity, type, condim, dof-less); with N_a the
    number of geoms of class a, the ordered geom pairs between classes a and b are N_a N_b (N_a
    (N_a - 1) when a = b), less those within one weld group (summed over weld groups) and those
    between the bodies of an excluded pair (from different weld groups). The work grows with the
    number of geoms and of (weld group, class) pairs, not with the number of geom pairs."""
    ng = len(geoms)
    body = np.array([g.body.id for g in geoms], dtype=np.int64)
    weld = np.array([b.weldid for b in bodies], dtype=np.int64)
    dofless_body = np.array([bodies[w].dofnum == 0 for w in weld], dtype=np.int64)
    rows = np.array([(g.attrs["contype"], g.attrs["conaffinity"], g.type, g.attrs["condim"]) for g in geoms],
                    dtype=np.int64).reshape(ng, 4)
    rows = np.column_stack([rows, dofless_body[body]])
    classes, cls = np.unique(rows, axis=0, return_inverse=True)
    cls = cls.reshape(-1)
    k = len(classes)
    count = np.bincount(cls, minlength=k).astype(np.int64)
    pairs = np.outer(count, count)
    pairs[np.diag_indices(k)] -= count
    # ordered pairs within one weld group: sum over weld groups of the outer product of its class counts
    members, members_count = np.unique(weld[body] * k + cls, return_counts=True)
    group, member_cls = members // k, members % k
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, len(group)])
    per_member = np.repeat(sizes, sizes)  # each (weld group, class) pairs with its group's members
    first = np.repeat(np.arange(len(group)), per_member)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(per_member) - per_member, per_member)
    second = np.repeat(np.repeat(starts, sizes), per_member) + offset
    within = np.zeros((k, k), dtype=np.int64)
    np.add.at(within, (member_cls[first], member_cls[second]), members_count[first] * members_count[second])
    pairs -= within - np.diag(count)
    # ordered pairs between the bodies of an excluded pair (one within a weld group is out already)
    sigs = sorted({s for s, _ in excludes})
    if sigs:
        of_body: dict[int, dict[int, int]] = {}
        for b, c in zip(body.tolist(), cls.tolist(), strict=True):
            counts = of_body.setdefault(b, {})
            counts[c] = counts.get(c, 0) + 1
        for sig in sigs:
            b1, b2 = sig >> 16, sig & 0xFFFF
            if not b1 < b2 < len(bodies) or weld[b1] == weld[b2]:
                continue
            for c1, n1 in of_body.get(b1, {}).items():
                for c2, n2 in of_body.get(b2, {}).items():
                    pairs[c1, c2] -= n1 * n2
                    pairs[c2, c1] -= n1 * n2
    ctype, caff, gtype, condim, dofless = (classes[:, i] for i in range(5))
    ok = ((ctype[:, None] & caff[None, :]) | (ctype[None, :] & caff[:, None])) != 0
    ok &= ~(dofless[:, None].astype(bool) & dofless[None, :].astype(bool))
    ok &= np.triu(np.ones((k, k), dtype=bool))
    out: dict[tuple[int, int, int], int] = {}
    for a, b in zip(*np.nonzero(ok & (pairs > 0)), strict=True):
        n = int(pairs[a, b]) // (2 if a == b else 1)  # unordered pairs
        lo, hi = int(min(gtype[a], gtype[b])), int(max(gtype[a], gtype[b]))
        key = (lo, hi, int(max(condim[a], condim[b])))
        out[key] = out.get(key, 0) + n
    return out


# mj_maxContact for every (lower, higher) type pair, by the engine's own function
_MAXCON_TABLE = np.array([[max_contacts(min(a, b), max(a, b), True, True) for b in range(9)]
                          for a in range(9)], dtype=np.int64)
_MAXCON = {(a, b): int(_MAXCON_TABLE[a, b]) for a in range(9) for b in range(9)}


__all__ = ["GEOM_CONTACT_DEFAULTS", "NCONMAX_CAP", "ContactCompiler", "geom_aabb", "geom_rbound"]
