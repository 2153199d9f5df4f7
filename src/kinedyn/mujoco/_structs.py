"""``MjModel`` and ``MjData``: MuJoCo's Python structs over kinedyn's native ``Model`` and ``Data``.

The native objects stay what they are; these adapt them. Each field is the native array itself
(or, where MuJoCo's bindings give another shape, a reshaped view of it: ``xmat`` is ``(nbody, 9)``
here as in MuJoCo, ``(nbody, 3, 3)`` on ``kd.Data``), entered in the instance's ``__dict__`` when
the struct is made. So reading ``d.qpos`` costs what it costs on ``kd.Data``, a write such as
``d.ctrl[:] = u`` lands in the arrays the kernels read, and nothing is copied per call.

Named access (``d.body("torso").xpos``, ``m.joint("hinge").range``, ``d.sensor("s").data``)
follows the bindings' accessors: each attribute is a view of one row (one-element arrays for
scalar fields, as MuJoCo's), made on first use and kept.
"""

from __future__ import annotations

import functools

import numpy as np

from kinedyn.engine.checks import assign_field
from kinedyn.engine.data import CONTACT_FIELDS, ROW_FIELDS, Data
from kinedyn.engine.fields import DATA_FIELDS, MODEL_FIELDS, SIZE_NAMES
from kinedyn.engine.forward import fwd_position
from kinedyn.engine.model import LAYOUT_FIELDS, Model
from kinedyn.engine.smooth_inertia import full_m
from kinedyn.engine.types import COUNT_NCON, SOLVER_ITERATIONS, JointType
from kinedyn.errors import ModelError

DOCS = "docs/running-mujoco-code.md"

# fields whose bindings' shape is another view of the same memory: (n, 3, 3) -> (n, 9) and the like
_MJ_SHAPES_DATA = {"xmat": 9, "ximat": 9, "geom_xmat": 9, "site_xmat": 9, "cam_xmat": 9, "wrap_xpos": 6}
_MJ_SHAPES_MODEL = {"cam_mat0": 9, "key_mpos": None, "key_mquat": None}  # None: all but the first axis

_DATA_ARRAYS = tuple(spec.name for spec in DATA_FIELDS
                     if spec.stage != "scratch" and spec.name not in ROW_FIELDS)
_MODEL_ARRAYS = tuple(spec.name for spec in MODEL_FIELDS)
_DATA_SHAPE = {spec.name: spec.shape for spec in DATA_FIELDS if spec.stage != "scratch"}
_MODEL_SHAPE = {spec.name: spec.shape for spec in MODEL_FIELDS}

# mjNISLAND of MuJoCo 4.0 (the length of d.solver_niter)
NISLAND = 20


def _mj_view(arr: np.ndarray, width) -> np.ndarray:
    """The bindings' shape of ``arr`` (a view: the arrays are C-contiguous)."""
    return arr.reshape(arr.shape[0], int(np.prod(arr.shape[1:])) if width is None else width)


# ---- named access ---------------------------------------------------------------------------------

# kind (the native name index's) -> (the accessor's method names, size name, model field prefixes,
# data field prefixes stripped from attribute names; "" for fields used as they are)
_KINDS = {
    "body": (("body",), "nbody", ("body_",), ("",)),
    "jnt": (("joint", "jnt"), "njnt", ("jnt_",), ("",)),
    "geom": (("geom",), "ngeom", ("geom_",), ("geom_",)),
    "site": (("site",), "nsite", ("site_",), ("site_",)),
    "actuator": (("actuator",), "nactuator", ("actuator_",), ("actuator_", "")),
    "tendon": (("tendon", "ten"), "ntendon", ("tendon_",), ("ten_",)),
    "key": (("key", "keyframe"), "nkey", ("key_",), ()),
    "equality": (("equality", "eq"), "neq", ("eq_",), ("eq_",)),
    "sensor": (("sensor",), "nsensor", ("sensor_",), ()),
    "camera": (("camera", "cam"), "ncam", ("cam_",), ("cam_",)),
    "light": (("light",), "nlight", ("light_",), ("light_",)),
    "mesh": (("mesh",), "nmesh", ("mesh_",), ()),
}

_QPOS_WIDTH = {JointType.FREE: 7, JointType.BALL: 4, JointType.SLIDE: 1, JointType.HINGE: 1}
_DOF_WIDTH = {JointType.FREE: 6, JointType.BALL: 3, JointType.SLIDE: 1, JointType.HINGE: 1}


def _accessor_table(kind: str, shapes: dict, prefixes: tuple, model: bool) -> dict[str, tuple[str, str]]:
    """attribute -> (field, how to index it: "row", "qpos", "dof" or "sensordata") for one kind."""
    size = _KINDS[kind][1]
    table = {}
    for name, shape in shapes.items():
        first = shape[0] if shape else None
        if first == size:
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            if prefix is not None:
                table.setdefault(name[len(prefix):], (name, "row"))
        elif kind == "actuator" and first in ("nout", "nu"):
            # an actuator's force outputs (one each here) and its block of controls (ctrl,
            # ctrlrange, ctrllimited: several or none, MuJoCo 4.0's actuator_ctrladr/ctrlnum)
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            if prefix is not None:
                table.setdefault(name[len(prefix):], (name, "row" if first == "nout" else "ctrl"))
        elif kind == "jnt" and first in ("nq", "nv"):
            # a joint's slice of the per-coordinate fields (qpos, qvel, qfrc_*, dof_armature, ...)
            stripped = name[len("dof_"):] if name.startswith("dof_") else name
            table.setdefault(stripped, (name, "qpos" if first == "nq" else "dof"))
    if kind == "sensor" and not model:
        table["data"] = ("sensordata", "sensordata")
    if kind == "actuator" and not model:
        table.pop("moment", None)  # dense (nout, nv) natively; MuJoCo's is sparse: read d.actuator_moment
    return table


class _Accessor:
    """One named object's fields, as the bindings' ``m.body("x")`` / ``d.body("x")``: ``id``,
    ``name`` and one view per field (made on first read, then an ordinary attribute)."""

    def __init__(self, owner, kind: str, i: int, name: str, table: dict):
        d = self.__dict__
        d["id"], d["name"], d["_owner"], d["_kind"], d["_table"] = i, name, owner, kind, table

    def __getattr__(self, attr):
        try:
            field, how = self._table[attr]
        except KeyError:
            raise AttributeError(f"{self._kind} accessor has no field '{attr}'; fields: "
                                 + ", ".join(sorted(self._table))) from None
        view = self._view(field, how)
        self.__dict__[attr] = view
        return view

    def _view(self, field: str, how: str) -> np.ndarray:
        owner, i = self._owner, self.id
        arr = owner.__dict__[field] if field in owner.__dict__ else getattr(owner, field)
        m = owner if isinstance(owner, MjModel) else owner.model
        if how == "row":
            return arr[i:i + 1] if arr.ndim == 1 else arr[i]
        if how == "ctrl":
            # as the bindings: a matrix's row for one control, else the block (several or none)
            adr, num = int(m.actuator_ctrladr[i]), int(m.actuator_ctrlnum[i])
            return arr[adr] if arr.ndim > 1 and num == 1 else arr[adr:adr + num]
        if how == "sensordata":
            adr = int(m.sensor_adr[i])
            return arr[adr:adr + int(m.sensor_dim[i])]
        jtype = int(m.jnt_type[i])
        if how == "qpos":
            adr = int(m.jnt_qposadr[i])
            return arr[adr:adr + _QPOS_WIDTH[jtype]]
        adr = int(m.jnt_dofadr[i])
        return arr[adr:adr + _DOF_WIDTH[jtype]]

    def __setattr__(self, attr, value):
        view = getattr(self, attr)
        assign_field(view, value, f"{self._kind}('{self.name}').{attr}")

    def __dir__(self):
        return ["id", "name", *sorted(self._table)]

    def __repr__(self):
        return f"<_{self._kind.capitalize()}Accessor id={self.id} name='{self.name}'>"


def _accessor_method(kind: str):
    method = _KINDS[kind][0][0]  # the native Model's method of the same name

    def accessor(self, key=None, *, name=None):
        """Named access, as MuJoCo's bindings: by name (str) or id (int)."""
        key = name if key is None else key
        cache = self.__dict__["_accessors"]
        found = cache.get((kind, key))
        if found is None:
            named = getattr(self._kd_model, method)(key)  # KeyError naming the closest names
            table = self._tables[kind]
            found = cache.get((kind, named.id))  # the same object by name and by id
            if found is None:
                found = cache[(kind, named.id)] = _Accessor(self, kind, named.id, named.name, table)
            cache[(kind, key)] = found
        return found
    accessor.__name__ = method
    return accessor


def _add_accessors(cls, model: bool) -> None:
    shapes = _MODEL_SHAPE if model else _DATA_SHAPE
    cls._tables = {}
    for kind, (methods, _, mprefix, dprefix) in _KINDS.items():
        if not model and not dprefix and kind != "sensor":
            continue
        cls._tables[kind] = _accessor_table(kind, shapes, mprefix if model else dprefix, model)
        for method in methods:
            setattr(cls, method, _accessor_method(kind))


# ---- MjModel --------------------------------------------------------------------------------------

class MjStatistic:
    """``m.stat``: the model statistics MuJoCo's compiler computes and kinedyn reproduces.

    ``meanmass`` and ``meaninertia`` are MuJoCo's (mean body mass; mean diagonal of the mass
    matrix at qpos0), as MuJoCo's compiler computes them: kinedyn's reader does not keep an MJCF
    ``<statistic>`` override of them. ``extent``, ``center`` and ``meansize`` (used by MuJoCo's
    renderer and its default visual scales) are not computed: reading them raises AttributeError.
    """

    def __init__(self, model: Model):
        masses = model.body_mass[1:]
        self.meanmass = float(masses.mean()) if masses.size else 0.0
        self._model = model

    @functools.cached_property
    def meaninertia(self) -> float:
        # MuJoCo (mj_setConst): the mean of the mass matrix's diagonal, armature included, at qpos0;
        # computed once, on first read, as MuJoCo computes it once when compiling
        m = self._model
        if m.nv == 0:
            return 1.0
        d = Data(m)  # qpos = qpos0
        fwd_position(m, d)
        return float(np.mean(np.diag(full_m(m, d))))

    def __getattr__(self, name):
        if name in ("extent", "center", "meansize"):
            raise AttributeError(f"stat.{name} is not computed by kinedyn (MuJoCo's renderer uses it); "
                                 f"see {DOCS}")
        raise AttributeError(f"MjStatistic has no field '{name}'")


class _Namespace:
    """A plain settable record (``m.vis.global_``)."""

    def __init__(self, **values):
        self.__dict__.update(values)

    def __repr__(self):
        return f"<{', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())}>"


def _visual() -> _Namespace:
    """``m.vis``: MuJoCo's visual defaults, kept for code that sets them (gymnasium sets the
    offscreen size). kinedyn does not render, so nothing reads them."""
    return _Namespace(global_=_Namespace(cameraid=-1, orthographic=0, fovy=45.0, ipd=0.068, azimuth=90.0,
                                         elevation=-45.0, linewidth=1.0, glow=0.3, realtime=1.0,
                                         offwidth=640, offheight=480, ellipsoidinertia=0, bvactive=1),
                      quality=_Namespace(), headlight=_Namespace(), map=_Namespace(), scale=_Namespace(),
                      rgba=_Namespace())


class MjModel:
    """MuJoCo's ``MjModel`` over a native :class:`kinedyn.Model` (``m.kd``).

    Fields, sizes and ``m.opt`` are the native ones (the same arrays; ``cam_mat0`` is
    ``(ncam, 9)`` and ``key_mpos``/``key_mquat`` are ``(nkey, 3 nmocap)``/``(nkey, 4 nmocap)``
    as in MuJoCo). Writes go to the native model: ``m.body_mass[1] = 2`` changes the dynamics.
    """

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError("MjModel is made by MjModel.from_xml_path / from_xml_string (or from a "
                            f"kinedyn.Model), not from {type(model).__name__}")
        d = self.__dict__
        for s in SIZE_NAMES:
            d[s] = getattr(model, s)
        for name in _MODEL_ARRAYS:
            arr = getattr(model, name)
            d[name] = _mj_view(arr, _MJ_SHAPES_MODEL[name]) if name in _MJ_SHAPES_MODEL else arr
        d["opt"] = model.opt
        d["vis"] = _visual()
        d["_kd_model"] = model
        d["_accessors"] = {}
        d["_stat"] = None

    @property
    def kd(self) -> Model:
        """The native kinedyn Model (for ``kd.*`` functions)."""
        return self._kd_model

    @property
    def stat(self) -> MjStatistic:
        if self._stat is None:
            self.__dict__["_stat"] = MjStatistic(self._kd_model)
        return self._stat

    @classmethod
    def from_xml_path(cls, filename, assets=None) -> MjModel:
        """Compile an MJCF (or URDF) file, as ``mujoco.MjModel.from_xml_path``."""
        _no_assets(assets)
        return cls(Model.from_xml_path(filename))

    @classmethod
    def from_xml_string(cls, xml: str, assets=None) -> MjModel:
        """Compile MJCF text, as ``mujoco.MjModel.from_xml_string``."""
        _no_assets(assets)
        return cls(Model.from_xml_string(xml))

    @classmethod
    def from_binary_path(cls, filename, assets=None) -> MjModel:
        raise ModelError(f"MjModel.from_binary_path('{filename}'): MJB files are MuJoCo's own binary "
                         "format, which kinedyn does not read; load the MJCF (or URDF) the model was made "
                         "from with MjModel.from_xml_path")

    def __getattr__(self, name):
        raise AttributeError(f"MjModel has no field '{name}' in kinedyn.mujoco: kinedyn does not "
                             f"compute or store it (see {DOCS})")

    def __setattr__(self, name, value):
        if name in _MJ_SHAPES_MODEL:
            assign_field(self.__dict__[name], value, f"MjModel.{name}")
        elif name in LAYOUT_FIELDS or name in SIZE_NAMES or name in self.__dict__ or name in MjModel.__dict__:
            setattr(self._kd_model, name, value)  # the native model checks (and refuses layout fields)
        else:
            raise AttributeError(f"MjModel has no field '{name}'")

    def __copy__(self) -> MjModel:
        return MjModel(self._kd_model.copy())

    def __deepcopy__(self, memo) -> MjModel:
        return self.__copy__()

    def __repr__(self):
        return f"<kinedyn.mujoco.MjModel nq={self.nq} nv={self.nv} nu={self.nu} nbody={self.nbody}>"


def _no_assets(assets) -> None:
    if assets:
        raise NotImplementedError("the assets= dictionary (in-memory files) is not supported by "
                                  "kinedyn.mujoco: write the files next to the model and load it by path")


_add_accessors(MjModel, model=True)


# ---- MjData ---------------------------------------------------------------------------------------

class MjWarningStat:
    """One entry of ``d.warning`` (MuJoCo's mjWarningStat): views of the native counters."""

    def __init__(self, counts: np.ndarray, i: int):
        self.__dict__["_counts"], self.__dict__["_i"] = counts, i

    number = property(lambda self: int(self._counts[0, self._i]),
                      lambda self, v: self._counts[0].__setitem__(self._i, v))
    lastinfo = property(lambda self: int(self._counts[1, self._i]),
                        lambda self, v: self._counts[1].__setitem__(self._i, v))

    def __repr__(self):
        return f"<MjWarningStat lastinfo={self.lastinfo} number={self.number}>"


class MjWarningStatList:
    """``d.warning``: per mjtWarning, ``number`` (how many times) and ``lastinfo`` (the last
    offending index), as arrays (``d.warning.number``) or entry by entry (``d.warning[i]``).
    kinedyn counts the warnings it raises: bad qpos/qvel/qacc in ``mj_step`` (which also warn
    with ``NonFiniteStateWarning``) and dropped contacts (``ContactFullWarning``)."""

    def __init__(self, counts: np.ndarray):
        self._counts = counts

    number = property(lambda self: self._counts[0])
    lastinfo = property(lambda self: self._counts[1])

    def __len__(self):
        return self._counts.shape[1]

    def __getitem__(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"warning index {i} out of range ({n})")
        return MjWarningStat(self._counts, i % n)


class _Contact:
    """``d.contact[i]``: one contact's fields (views of row i)."""

    def __init__(self, contacts, i: int):
        self.__dict__["_c"], self.__dict__["_i"] = contacts, i

    def __getattr__(self, name):
        return getattr(self._c, name)[self._i]

    def __setattr__(self, name, value):
        getattr(self._c, name)[self._i] = value


class MjContactList:
    """``d.contact``: the live contacts, field by field (``d.contact.dist`` is (ncon,)) or one at a
    time (``d.contact[i].geom1``). ``frame`` is (ncon, 9) as in MuJoCo."""

    def __init__(self, data: Data):
        self.__dict__["_kd_data"] = data

    def __getattr__(self, name):
        c = self._kd_data.contact
        if name in ("geom1", "geom2"):
            return c.geom[:, 0 if name == "geom1" else 1]
        value = getattr(c, name)
        return value.reshape(value.shape[0], 9) if name == "frame" else value

    def __setattr__(self, name, value):
        setattr(self._kd_data.contact, name, value)

    def __len__(self):
        return int(self._kd_data.efc_counts[COUNT_NCON])

    def __getitem__(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"contact index {i} out of range (ncon = {n})")
        return _Contact(self, i % n)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


class MjData:
    """MuJoCo's ``MjData`` over a native :class:`kinedyn.Data` (``d.kd``).

    Every field is the native array (``xmat``, ``ximat``, ``geom_xmat``, ``site_xmat``,
    ``cam_xmat`` are ``(n, 9)`` views as in MuJoCo); the constraint rows and contacts show
    their live part, as on ``kd.Data``. ``copy.copy(d)`` is an independent copy.
    """

    def __init__(self, model: MjModel, _data: Data | None = None):
        if not isinstance(model, MjModel):
            raise TypeError(f"MjData(model) needs a kinedyn.mujoco.MjModel, got {type(model).__name__}")
        data = Data(model._kd_model) if _data is None else _data
        d = self.__dict__
        for name in _DATA_ARRAYS:
            arr = getattr(data, name)
            d[name] = _mj_view(arr, _MJ_SHAPES_DATA[name]) if name in _MJ_SHAPES_DATA else arr
        d["_kd_data"] = data
        d["_model"] = model
        d["_accessors"] = {}
        d["warning"] = MjWarningStatList(data.warning_counts)

    @property
    def kd(self) -> Data:
        """The native kinedyn Data (for ``kd.*`` functions, with ``m.kd``)."""
        return self._kd_data

    @property
    def model(self) -> MjModel:
        return self._model

    @property
    def _kd_model(self) -> Model:  # named access looks names up in the model
        return self._model._kd_model

    @property
    def time(self) -> float:
        return self._kd_data.time

    @time.setter
    def time(self, value) -> None:
        self._kd_data.time = value

    ncon = property(lambda self: self._kd_data.ncon)
    nefc = property(lambda self: self._kd_data.nefc)
    ne = property(lambda self: self._kd_data.ne)
    nf = property(lambda self: self._kd_data.nf)
    nl = property(lambda self: self._kd_data.nl)

    @property
    def contact(self) -> MjContactList:
        return MjContactList(self._kd_data)

    @property
    def nisland(self) -> int:
        return int(self._kd_data.scratch_nisland[0])

    @property
    def solver_niter(self) -> np.ndarray:
        """Constraint-solver iterations per island (island 0 without islands), as MuJoCo's."""
        kd = self._kd_data
        out = np.zeros(NISLAND, dtype=np.int32)
        nisland = int(kd.scratch_nisland[0])
        if nisland:
            k = min(nisland, NISLAND)
            out[:k] = kd.scratch_island[4, :k]
        elif kd.nefc:
            out[0] = kd.scratch_solver_counts[SOLVER_ITERATIONS]
        return out

    def __getattr__(self, name):
        raise AttributeError(f"MjData has no field '{name}' in kinedyn.mujoco: kinedyn does not "
                             f"compute or store it (see {DOCS})")

    def __setattr__(self, name, value):
        if name in _MJ_SHAPES_DATA:
            assign_field(self.__dict__[name], value, f"MjData.{name}")
        elif name == "time" or name in ROW_FIELDS or name in self.__dict__:
            setattr(self._kd_data, name, value)
        else:
            raise AttributeError(f"MjData has no field '{name}'")

    def __copy__(self) -> MjData:
        return MjData(self._model, self._kd_data.copy())

    def __deepcopy__(self, memo) -> MjData:
        return self.__copy__()

    def __repr__(self):
        return f"<kinedyn.mujoco.MjData time={self.time:g}>"


def _live(name: str) -> property:
    return property(lambda self: getattr(self._kd_data, name),
                    lambda self, value: setattr(self._kd_data, name, value))


for _name in ROW_FIELDS:
    if _name not in CONTACT_FIELDS:
        setattr(MjData, _name, _live(_name))

_add_accessors(MjData, model=False)
