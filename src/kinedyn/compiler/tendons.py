"""The ``<tendon>`` section: fixed and spatial tendons, their wrap paths and the tendon_*/wrap_* arrays.

xml_native_reader Tendon, mjCTendon::Compile and mjCWrap::ResolveReferences: defaults and
classes, the joint (fixed) or site, geom and pulley (spatial) paths with MuJoCo's checks,
limits under ``autolimits``, and the arrays. The lengths at qpos0 (tendon_length0, a spring
length of -1 -1) are set_const's.
"""

from __future__ import annotations

import numpy as np

from kinedyn.compiler import actuators as act
from kinedyn.compiler import defaults as dflt
from kinedyn.engine.types import NIMP, NPOLY, NREF, GeomType, JointType, WrapType
from kinedyn.xml.mjcf import Node, typed_attrs

# mjs_defaultTendon; springlength -1 -1 means "the length at qpos_spring" (set_const)
_TENDON_DEFAULTS = dict(group=0, limited="auto", actuatorfrclimited="auto", range=[0.0, 0.0],
                        actuatorfrcrange=[0.0, 0.0], frictionloss=0.0, springlength=[-1.0, -1.0],
                        margin=0.0, stiffness=[0.0, 0.0, 0.0], damping=[0.0, 0.0, 0.0], armature=0.0,
                        springyield=0.0, solreflimit=dflt.SOLREF, solimplimit=dflt.SOLIMP,
                        solreffriction=dflt.SOLREF, solimpfriction=dflt.SOLIMP)


class TendonsMixin:
    """The Compiler's ``<tendon>`` reader and arrays (see :class:`kinedyn.compiler.build.Compiler`)."""

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
            # tendon armature (mjCTendon::Compile): not negative; its bias term needs the derivative
            # of the path, which geom wrapping lacks
            if a["armature"] < 0:
                raise node.error(f"tendon '{name}' (id = {tid}): tendon armature cannot be negative",
                                 "armature")
            if spatial and a["armature"] > 0 and any(t in (WrapType.SPHERE, WrapType.CYLINDER)
                                                     for t in wtypes):
                raise node.error(f"tendon '{name}' (id = {tid}): geom wrapping not supported by tendon "
                                 "armature", "armature")
            if a["springyield"] < 0:
                raise node.error("springyield cannot be negative in tendon", "springyield")
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
                armature=a["armature"], springyield=a["springyield"],
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

    def _tendon_arrays(self, arr: dict) -> dict[str, int]:
        """The tendon_* and wrap_* arrays into ``arr`` (CopyObjects); their sizes."""
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
        arr["tendon_armature"] = tcol("armature")
        arr["tendon_frictionloss"] = tcol("frictionloss")
        arr["tendon_solref_lim"] = tcol("solref_lim", NREF)
        arr["tendon_solimp_lim"] = tcol("solimp_lim", NIMP)
        arr["tendon_solref_fri"] = tcol("solref_fri", NREF)
        arr["tendon_solimp_fri"] = tcol("solimp_fri", NIMP)
        arr["tendon_lengthspring"] = tcol("lengthspring", 2)  # -1 -1 resolved by set_const
        arr["tendon_springyield"] = tcol("springyield")
        arr["tendon_length0"] = np.zeros(ntendon)  # set_const
        arr["wrap_type"] = np.array([w for t in tendons for w in t["wtypes"]], dtype=np.int32)
        arr["wrap_objid"] = np.array([w[0] for t in tendons for w in t["wraps"]], dtype=np.int32)
        arr["wrap_prm"] = np.array([w[1] for t in tendons for w in t["wraps"]], dtype=float)
        return dict(ntendon=ntendon, nwrap=nwrap)
