"""Sensors: the ``<sensor>`` section compiled into MuJoCo 4.0's ``sensor_*`` arrays.

Follows ``mjXReader::Sensor`` (src/xml/xml_native_reader.cc) for the attributes and
``mjCSensor::Compile`` / ``ResolveReferences`` (src/user/user_objects.cc) for the checks,
the data type, the stage each sensor needs and its dimension. ``sensor_adr`` packs the
outputs one after another in document order, as MuJoCo's ``sensordata``.

MuJoCo 4.0 has no ``<default>`` for sensors (and no ``class`` attribute): the reader's
schema refuses both, as MuJoCo's does.

Rangefinders attached to a site are computed (engine.ray); those attached to a camera (one ray
per pixel) are refused. What needs meshes or plugins (tactile, plugin), the geom distance sensors
between geoms MuJoCo measures by GJK/EPA (pairs with an ellipsoid or a cylinder but
plane-ellipsoid, plane-cylinder and sphere-cylinder; box-box) and ``insidesite enclosed`` are
refused with a ModelError naming the element and attribute: kinedyn does not compute them. Sensor
history (``nsample``, ``interp``, ``delay``, ``interval``)
is compiled as MuJoCo 4.0 does (its buffers follow the actuators' in ``Data.history``).
"""

from __future__ import annotations

import numpy as np

from kinedyn.compiler.actuators import INTERP as HISTORY_INTERP
from kinedyn.compiler.actuators import MAX_NSAMPLE
from kinedyn.engine.collision_driver import SUPPORTED_PAIRS, uses_convex_collider
from kinedyn.engine.ray import RAYDATA, RAYDATA_SIZE
from kinedyn.engine.types import GeomType, JointType, ObjType, SensorType
from kinedyn.xml.mjcf import INTERP, Node, typed_attrs

# mjtDataType, mjtStage
REAL, POSITIVE, AXIS, QUATERNION = 0, 1, 2, 3
STAGE_POS, STAGE_VEL, STAGE_ACC = 1, 2, 3

# contact sensor data fields (mjtConData) and their sizes (mjCONDATA_SIZE)
CONDATA = ("found", "force", "torque", "dist", "pos", "normal", "tangent", "linvel", "angvel")
CONDATA_SIZE = (1, 3, 3, 1, 3, 3, 3, 3, 3)
REDUCE = ("none", "mindist", "maxforce", "netforce")

_COMMON = dict(name="s", noise="f", cutoff="f", nsample="i", interp=INTERP,
               interval="f1-2", delay="f", user="f*")
_FRAME_TYPES = ("body", "xbody", "geom", "site", "camera")
_OBJTYPE = {"body": ObjType.BODY, "xbody": ObjType.XBODY, "geom": ObjType.GEOM, "site": ObjType.SITE,
            "camera": ObjType.CAMERA, "joint": ObjType.JOINT, "tendon": ObjType.TENDON,
            "actuator": ObjType.ACTUATOR}

S = SensorType
# tag -> (type, object attribute: its mjtObj, datatype, stage, dim)
_SIMPLE = {
    "touch": (S.TOUCH, "site", POSITIVE, STAGE_ACC, 1),
    "accelerometer": (S.ACCELEROMETER, "site", REAL, STAGE_ACC, 3),
    "velocimeter": (S.VELOCIMETER, "site", REAL, STAGE_VEL, 3),
    "gyro": (S.GYRO, "site", REAL, STAGE_VEL, 3),
    "force": (S.FORCE, "site", REAL, STAGE_ACC, 3),
    "torque": (S.TORQUE, "site", REAL, STAGE_ACC, 3),
    "magnetometer": (S.MAGNETOMETER, "site", REAL, STAGE_POS, 3),
    "jointpos": (S.JOINTPOS, "joint", REAL, STAGE_POS, 1),
    "jointvel": (S.JOINTVEL, "joint", REAL, STAGE_VEL, 1),
    "tendonpos": (S.TENDONPOS, "tendon", REAL, STAGE_POS, 1),
    "tendonvel": (S.TENDONVEL, "tendon", REAL, STAGE_VEL, 1),
    "actuatorpos": (S.ACTUATORPOS, "actuator", REAL, STAGE_POS, 1),
    "actuatorvel": (S.ACTUATORVEL, "actuator", REAL, STAGE_VEL, 1),
    "actuatorfrc": (S.ACTUATORFRC, "actuator", REAL, STAGE_ACC, 1),
    "jointactuatorfrc": (S.JOINTACTFRC, "joint", REAL, STAGE_ACC, 1),
    "tendonactuatorfrc": (S.TENDONACTFRC, "tendon", REAL, STAGE_ACC, 1),
    "ballquat": (S.BALLQUAT, "joint", QUATERNION, STAGE_POS, 4),
    "ballangvel": (S.BALLANGVEL, "joint", REAL, STAGE_VEL, 3),
    "jointlimitpos": (S.JOINTLIMITPOS, "joint", REAL, STAGE_POS, 1),
    "jointlimitvel": (S.JOINTLIMITVEL, "joint", REAL, STAGE_VEL, 1),
    "jointlimitfrc": (S.JOINTLIMITFRC, "joint", REAL, STAGE_ACC, 1),
    "tendonlimitpos": (S.TENDONLIMITPOS, "tendon", REAL, STAGE_POS, 1),
    "tendonlimitvel": (S.TENDONLIMITVEL, "tendon", REAL, STAGE_VEL, 1),
    "tendonlimitfrc": (S.TENDONLIMITFRC, "tendon", REAL, STAGE_ACC, 1),
    "subtreecom": (S.SUBTREECOM, "body", REAL, STAGE_POS, 3),
    "subtreelinvel": (S.SUBTREELINVEL, "body", REAL, STAGE_VEL, 3),
    "subtreeangmom": (S.SUBTREEANGMOM, "body", REAL, STAGE_VEL, 3),
    "e_potential": (S.E_POTENTIAL, None, REAL, STAGE_POS, 1),
    "e_kinetic": (S.E_KINETIC, None, REAL, STAGE_POS, 1),
    "clock": (S.CLOCK, None, REAL, STAGE_POS, 1),
}
_FRAME = {
    "framepos": (S.FRAMEPOS, REAL, STAGE_POS, 3),
    "framequat": (S.FRAMEQUAT, QUATERNION, STAGE_POS, 4),
    "framexaxis": (S.FRAMEXAXIS, AXIS, STAGE_POS, 3),
    "frameyaxis": (S.FRAMEYAXIS, AXIS, STAGE_POS, 3),
    "framezaxis": (S.FRAMEZAXIS, AXIS, STAGE_POS, 3),
    "framelinvel": (S.FRAMELINVEL, REAL, STAGE_VEL, 3),
    "frameangvel": (S.FRAMEANGVEL, REAL, STAGE_VEL, 3),
    "framelinacc": (S.FRAMELINACC, REAL, STAGE_ACC, 3),
    "frameangacc": (S.FRAMEANGACC, REAL, STAGE_ACC, 3),
}
# the collision sensors (mj_geomDistance): tag -> (type, datatype, dim)
_GEOMDIST = {"distance": (S.GEOMDIST, REAL, 1), "normal": (S.GEOMNORMAL, AXIS, 3),
             "fromto": (S.GEOMFROMTO, REAL, 6)}
# what kinedyn refuses, and why
_REFUSED = {
    "tactile": "tactile sensors need meshes and signed distance fields, which kinedyn does not compute",
    "plugin": "sensor plugins are not supported",
}

SCHEMA = {tag: dict(_COMMON, **{obj: "s"} if obj else {}) for tag, (_, obj, *_r) in _SIMPLE.items()}
SCHEMA.update({tag: dict(_COMMON, objtype=("e", _FRAME_TYPES), objname="s",
                         **({} if tag.endswith("acc") else dict(reftype=("e", _FRAME_TYPES), refname="s")))
               for tag in _FRAME})
SCHEMA["camprojection"] = dict(_COMMON, site="s", camera="s")
SCHEMA["rangefinder"] = dict(_COMMON, site="s", camera="s", data="s")
SCHEMA["insidesite"] = dict(_COMMON, objtype=("e", _FRAME_TYPES), objname="s", site="s", enclosed="s")
SCHEMA["contact"] = dict(_COMMON, geom1="s", geom2="s", body1="s", body2="s", subtree1="s", subtree2="s",
                         site="s", num="i", data="s", reduce=("e", REDUCE))
SCHEMA.update({tag: dict(_COMMON, geom1="s", geom2="s", body1="s", body2="s") for tag in _GEOMDIST})
# MuJoCo 4.0's schema gives <user> no history attributes
_HISTORY_ATTRS = ("nsample", "interp", "delay", "interval")
SCHEMA["user"] = dict({k: v for k, v in _COMMON.items() if k not in _HISTORY_ATTRS},
                      objtype="s", objname="s", datatype=("e", ("real", "positive", "axis", "quaternion")),
                      needstage=("e", ("none", "pos", "vel", "acc")), dim="i")


def condata_size(dataspec: int) -> int:
    """Numbers per slot of a contact sensor (mju_condataSize)."""
    return sum(size for bit, size in enumerate(CONDATA_SIZE) if dataspec >> bit & 1)


class _Names:
    """Name -> id tables of the compiled objects a sensor can refer to."""

    def __init__(self, c):
        self.joints = c.joints
        self.tendons = c.tendons
        self.ids = {
            "body": {b.name: b.id for b in c.bodies if b.name},
            "xbody": {b.name: b.id for b in c.bodies if b.name},
            "joint": {j.attrs["name"]: j.id for j in c.joints if j.attrs.get("name")},
            "geom": {g.attrs["name"]: g.id for g in c.geoms if g.attrs.get("name")},
            "site": {s.attrs["name"]: s.id for s in c.sites if s.attrs.get("name")},
            "tendon": {t["name"]: i for i, t in enumerate(c.tendons) if t["name"]},
            "actuator": {n: i for i, n in enumerate(c.actuator_names) if n},
            "camera": {x.attrs["name"]: i for i, x in enumerate(c.cameras) if x.attrs.get("name")},
        }
        self.cameras = c.cameras
        self.geom_types = [int(g.type) for g in c.geoms]
        self.body_geoms = {}
        for g in c.geoms:
            self.body_geoms.setdefault(g.body.id if g.body is not None else 0, []).append(g.id)
        self.ids["body"].setdefault("world", 0)
        self.ids["xbody"].setdefault("world", 0)

    def geoms_of(self, objtype: int, objid: int) -> list[int]:
        return [objid] if objtype == ObjType.GEOM else self.body_geoms.get(objid, [])

    @staticmethod
    def analytic(t1: int, t2: int) -> bool:
        """Whether MuJoCo's mj_geomDistance uses an analytic collider for the type pair (t1 <= t2)
        that kinedyn has: not its general convex collider nor box-box (GJK/EPA distance)."""
        return ((t1, t2) in SUPPORTED_PAIRS and not uses_convex_collider(t1, t2)
                and (t1, t2) != (GeomType.BOX, GeomType.BOX)) or (t1, t2) == (GeomType.PLANE, GeomType.PLANE)

    def find(self, node: Node, kind: str, name: str | None, attr: str,
             what: str = "sensorized object") -> int:
        if not name:
            raise node.error(f"missing name of {what} in sensor", attr)
        i = self.ids[kind].get(name)
        if i is None:
            raise node.error(f"unrecognized name '{name}' of {what}", attr)
        return i


def compile_sensor(node: Node, names: _Names) -> dict:
    """One sensor element -> dict of its sensor_* values (mjCSensor::Compile)."""
    tag = node.tag
    if tag in _REFUSED:
        raise node.error(_REFUSED[tag])
    schema = SCHEMA.get(tag)
    if schema is None:
        raise node.error("Schema violation: unrecognized element")
    if node.children:
        raise node.children[0].error("Schema violation: unrecognized element")
    a = typed_attrs(node, schema=schema)
    noise, cutoff = a.get("noise", 0.0), a.get("cutoff", 0.0)
    if noise < 0:
        raise node.error("negative noise in sensor", "noise")
    if cutoff < 0:
        raise node.error("negative cutoff in sensor", "cutoff")
    s = dict(name=a.get("name", ""), node=node, objtype=ObjType.UNKNOWN, objid=-1, reftype=ObjType.UNKNOWN,
             refid=-1, intprm=[0, 0, 0], cutoff=cutoff, noise=noise, **_history(node, a))
    if tag in _SIMPLE:
        stype, obj, datatype, stage, dim = _SIMPLE[tag]
        if obj:
            s["objtype"] = _OBJTYPE[obj]
            s["objid"] = names.find(node, obj, a.get(obj), obj)
            if obj == "joint":
                jtype = names.joints[s["objid"]].type
                limited = names.joints[s["objid"]].compiled.get("limited", 0)
                scalar = jtype in (JointType.SLIDE, JointType.HINGE)
                if tag in ("jointpos", "jointvel", "jointactuatorfrc") and not scalar:
                    raise node.error("joint must be slide or hinge in sensor", "joint")
                if tag.startswith("ball") and jtype != JointType.BALL:
                    raise node.error("joint must be ball in sensor", "joint")
                if tag.startswith("jointlimit") and not limited:
                    raise node.error("joint must be limited in sensor", "joint")
            if tag.startswith("tendonlimit") and not names.tendons[s["objid"]]["limited"]:
                raise node.error("tendon must be limited in sensor", "tendon")
    elif tag in _FRAME:
        stype, datatype, stage, dim = _FRAME[tag]
        s["objtype"] = _OBJTYPE[_required(node, a, "objtype")]
        s["objid"] = names.find(node, a["objtype"], a.get("objname"), "objname")
        if "reftype" in a or "refname" in a:
            if "reftype" not in a:
                raise node.error("missing reftype of the reference frame object in sensor", "reftype")
            s["reftype"] = _OBJTYPE[a["reftype"]]
            s["refid"] = names.find(node, a["reftype"], a.get("refname"), "refname",
                                    "reference frame object")
    elif tag == "insidesite":
        stype, datatype, stage, dim = S.INSIDESITE, POSITIVE, STAGE_POS, 1
        if a.get("enclosed", "false") not in ("false", "true"):
            raise node.error(f"invalid keyword {a['enclosed']!r} in attribute 'enclosed'", "enclosed")
        if a.get("enclosed") == "true":
            raise node.error("insidesite enclosed=\"true\" (directed Hausdorff distance) is not supported",
                             "enclosed")
        s["objtype"] = _OBJTYPE[_required(node, a, "objtype")]
        s["objid"] = names.find(node, a["objtype"], a.get("objname"), "objname")
        s["reftype"] = ObjType.SITE
        s["refid"] = names.find(node, "site", a.get("site"), "site", "site")
    elif tag == "camprojection":
        stype, datatype, stage, dim = S.CAMPROJECTION, REAL, STAGE_POS, 2
        s["objtype"] = ObjType.SITE
        s["objid"] = names.find(node, "site", a.get("site"), "site")
        s["reftype"] = ObjType.CAMERA
        s["refid"] = names.find(node, "camera", a.get("camera"), "camera", "camera")
        res = names.cameras[s["refid"]].attrs.get("resolution", [1, 1])
        if not res[0] or not res[1]:
            raise node.error("camera projection sensor requires camera resolution", "camera")
    elif tag == "rangefinder":
        stype, datatype, stage = S.RANGEFINDER, REAL, STAGE_POS
        if "camera" in a:
            raise node.error("rangefinder sensors attached to a camera (one ray per pixel, mj_multiRay) are "
                             "not computed by kinedyn", "camera")
        s["objtype"] = ObjType.SITE
        s["objid"] = names.find(node, "site", a.get("site"), "site")
        if any(t == GeomType.SDF for t in names.geom_types):
            raise node.error("rangefinder rays do not meet SDF geoms in kinedyn (mj_raySdf is not ported)")
        dataspec, dim = _raydata(node, a.get("data"))
        s["intprm"] = [dataspec, 0, 0]
    elif tag in _GEOMDIST:
        stype, datatype, dim = _GEOMDIST[tag]
        stage = STAGE_POS
        _geom_distance(node, a, s, names)
    elif tag == "contact":
        stype, datatype = S.CONTACT, REAL
        _contact(node, a, s, names)
        dataspec, reduce, num = s["intprm"]
        dim = num * condata_size(dataspec)
        if dataspec & 0b110 or reduce in (2, 3):
            stage = STAGE_ACC
        elif dataspec & 0b110000000:
            stage = STAGE_VEL
        else:
            stage = STAGE_POS
    else:  # user: zeros, as MuJoCo's without a sensor callback (mjcb_sensor), then the cutoff
        stype = S.USER
        datatype = ("real", "positive", "axis", "quaternion").index(a.get("datatype", "real"))
        stage = ("none", "pos", "vel", "acc").index(a.get("needstage", "acc"))
        dim = a.get("dim", 1)
        if dim < 0:
            raise node.error("sensor dim must be non-negative in sensor", "dim")
        if datatype == AXIS and dim != 3:
            raise node.error("datatype AXIS requires dim=3 in sensor", "dim")
        if datatype == QUATERNION and dim != 4:
            raise node.error("datatype QUATERNION requires dim=4 in sensor", "dim")
        if a.get("objtype"):
            kind = a["objtype"]
            if kind not in names.ids:
                raise node.error(f"user sensors on '{kind}' objects are not supported", "objtype")
            s["objtype"] = _OBJTYPE[kind]
            s["objid"] = names.find(node, kind, a.get("objname"), "objname")
    s.update(type=int(stype), datatype=datatype, needstage=stage, dim=dim)
    return s


def _history(node: Node, a: dict) -> dict:
    """The history buffer of a sensor (mjCSensor::Compile's checks, MuJoCo 4.0): ``nsample``,
    ``interp``, ``delay`` and ``interval = "period [phase]"``."""
    nsample, delay = a.get("nsample", 0), a.get("delay", 0.0)
    period, phase = (list(a.get("interval", [0.0])) + [0.0])[:2]
    if delay > 0 and nsample <= 0:
        raise node.error("setting delay > 0 without a history buffer", "delay")
    if nsample > MAX_NSAMPLE:
        raise node.error(f"at most 2^24 samples in sensor history buffer, got {nsample}", "nsample")
    if nsample < 0:
        # MuJoCo 4.0 compiles it without a buffer (sensor_historyadr = -1), then mj_advance writes the
        # sensor's values outside mjData.history (docs/deviations.md)
        raise node.error(f"nsample cannot be negative, got {nsample}", "nsample")
    if period < 0:
        raise node.error("negative interval in sensor", "interval")
    if phase > 0:
        raise node.error("positive phase in sensor", "interval")
    if period > 0 and phase <= -period:
        raise node.error("phase must be greater than -period in sensor", "interval")
    return dict(nsample=nsample, interp=HISTORY_INTERP[a.get("interp", "zoh")], delay=delay,
                interval=[period, phase])


def _required(node: Node, a: dict, attr: str):
    if attr not in a:
        raise node.error(f"attribute '{attr}' is required", attr)
    return a[attr]


def _raydata(node: Node, text: str | None) -> tuple[int, int]:
    """A rangefinder's data fields (mjtRayDataField bits, in their order) and its dimension."""
    if text is None:
        return 1, 1
    words = text.split()
    bits = []
    for w in words:
        if w not in RAYDATA:
            raise node.error(f"invalid keyword {w!r} in attribute 'data'; expected one of "
                             f"{', '.join(RAYDATA)}", "data")
        bits.append(RAYDATA.index(w))
        if len(bits) > 1 and bits[-1] <= bits[-2]:
            raise node.error("data attributes must be in order: " + ", ".join(RAYDATA), "data")
    if not bits:
        return 1, 1
    return sum(1 << b for b in bits), sum(RAYDATA_SIZE[b] for b in bits)


def _geom_distance(node: Node, a: dict, s: dict, names: _Names) -> None:
    """The two geoms or bodies of a distance, normal or fromto sensor; refused unless every geom
    pair goes through one of MuJoCo's analytic colliders (mj_geomDistance sends the pairs of
    its general convex and box-box colliders to GJK/EPA distance queries, not ported)."""
    for (gk, bk), (tk, ik) in ((("geom1", "body1"), ("objtype", "objid")),
                               (("geom2", "body2"), ("reftype", "refid"))):
        if (gk in a) == (bk in a):
            raise node.error(f"exactly one of {gk} and {bk} is required", gk)
        kind, attr = ("geom", gk) if gk in a else ("body", bk)
        s[tk] = _OBJTYPE[kind]
        s[ik] = names.find(node, kind, a[attr], attr, "geom or body")
    if s["objtype"] == s["reftype"] and s["objid"] == s["refid"]:
        raise node.error("1st body/geom must be different from 2nd body/geom")
    geoms1, geoms2 = (names.geoms_of(s[t], s[i]) for t, i in (("objtype", "objid"), ("reftype", "refid")))
    for g1 in geoms1:
        for g2 in geoms2:
            t1, t2 = sorted((names.geom_types[g1], names.geom_types[g2]))
            if t1 == GeomType.HFIELD or t2 == GeomType.HFIELD:  # MuJoCo refuses them too
                raise node.error("height fields are not supported in geom distance sensors",
                                 "geom1" if "geom1" in a else "body1")
            if not names.analytic(t1, t2):
                raise node.error(f"the distance between {GeomType(t1).name.lower()} and "
                                 f"{GeomType(t2).name.lower()} geoms (GJK/EPA in MuJoCo's mj_geomDistance) "
                                 "is not computed by kinedyn", "geom1" if "geom1" in a else "body1")


def _contact(node: Node, a: dict, s: dict, names: _Names) -> None:
    """Matching criteria, data spec, reduction and slot count of a contact sensor."""
    first = [k for k in ("site", "geom1", "body1", "subtree1") if k in a]
    second = [k for k in ("geom2", "body2", "subtree2") if k in a]
    if len(first) > 1:
        raise node.error("contact sensor: at most one of site, geom1, body1, subtree1", first[1])
    if len(second) > 1:
        raise node.error("contact sensor: at most one of geom2, body2, subtree2", second[1])
    kinds = {"site": "site", "geom1": "geom", "body1": "body", "subtree1": "xbody", "geom2": "geom",
             "body2": "body", "subtree2": "xbody"}
    if first:
        k = first[0]
        s["objtype"] = _OBJTYPE[kinds[k]]
        s["objid"] = names.find(node, kinds[k], a[k], k, "contact sensor object")
    if second:
        k = second[0]
        s["reftype"] = _OBJTYPE[kinds[k]]
        s["refid"] = names.find(node, kinds[k], a[k], k, "contact sensor object")
    words = a.get("data", "found").split()
    dataspec, last = 0, -1
    for w in words:
        if w not in CONDATA:
            raise node.error(f"invalid keyword {w!r} in attribute 'data'; expected one of "
                             f"{', '.join(CONDATA)}", "data")
        bit = CONDATA.index(w)
        if bit <= last:
            raise node.error("data attributes must be unique and in the order "
                             + " ".join(CONDATA), "data")
        last = bit
        dataspec |= 1 << bit
    if not words:
        raise node.error("contact sensor: empty data", "data")
    reduce = REDUCE.index(a.get("reduce", "none"))
    num = a.get("num", 1)
    if num <= 0:
        raise node.error(f"num (intprm[2]) must be positive in sensor, got {num}", "num")
    if reduce == 3 and dataspec & 0b110000000:
        raise node.error("contact sensor: linvel and angvel cannot be combined with reduce=\"netforce\"",
                         "data")
    if reduce == 3:
        num = 1
    s["intprm"] = [dataspec, reduce, num]


def compile_sensors(compiler) -> list[dict]:
    """Every sensor of the model's <sensor> sections, in document order."""
    names = None
    out: list[dict] = []
    for section in compiler.sections.get("sensor", []):
        for node in section.children:
            if names is None:
                names = _Names(compiler)
            out.append(compile_sensor(node, names))
    seen = set()
    for s in out:
        if s["name"] and s["name"] in seen:
            raise s["node"].error(f"repeated name '{s['name']}' in sensor", "name")
        seen.add(s["name"])
    return out


def sensor_arrays(sensors: list[dict]) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The sensor_* model arrays and the sizes nsensor, nsensordata."""
    n = len(sensors)
    arr = {}

    def col(key, dtype=np.int32):
        return np.array([s[key] for s in sensors], dtype=dtype).reshape(n)

    for key in ("type", "datatype", "needstage", "objtype", "objid", "reftype", "refid", "dim"):
        arr["sensor_" + key] = col(key)
    arr["sensor_intprm"] = np.array([s["intprm"] for s in sensors], dtype=np.int32).reshape(n, 3)
    dims = arr["sensor_dim"]
    arr["sensor_adr"] = (np.cumsum(dims) - dims).astype(np.int32)
    arr["sensor_cutoff"] = col("cutoff", float)
    arr["sensor_noise"] = col("noise", float)
    # history buffers [user, cursor, times (nsample), values (nsample x dim)], after the actuators'
    # (set_history_addresses, once nhistory of the actuators is known)
    arr["sensor_history"] = np.array([[s["nsample"], s["interp"]] for s in sensors],
                                     dtype=np.int32).reshape(n, 2)
    arr["sensor_historyadr"] = np.full(n, -1, dtype=np.int32)
    arr["sensor_delay"] = col("delay", float)
    arr["sensor_interval"] = np.array([s["interval"] for s in sensors], dtype=float).reshape(n, 2)
    arr["sensor_plugin"] = np.full(n, -1, dtype=np.int32)
    return arr, dict(nsensor=n, nsensordata=int(dims.sum()))


def set_history_addresses(arr: dict[str, np.ndarray], nhistory: int) -> int:
    """sensor_historyadr: each buffer of ``2 + nsample (1 + dim)`` numbers, in sensor order after
    the ``nhistory`` numbers of the actuators' buffers (mjModel layout); returns the new nhistory."""
    for i, (nsample, dim) in enumerate(zip(arr["sensor_history"][:, 0], arr["sensor_dim"], strict=True)):
        if nsample > 0:
            arr["sensor_historyadr"][i] = nhistory
            nhistory += 2 + int(nsample) * (1 + int(dim))
    return nhistory
