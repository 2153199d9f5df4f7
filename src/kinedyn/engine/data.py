"""``Data``: the state and every computed quantity (MuJoCo's mjData).

Every array is allocated once, from :data:`kinedyn.engine.fields.DATA_FIELDS`, when the
``Data`` is made; kernels write into these arrays in place and never allocate.
Assigning a whole field (``d.qpos = q``) copies into the existing array and
raises at once if the shape is wrong or the values cannot be cast safely.

A ``Data`` belongs to the ``Model`` it was made for (``d.model``): every public
``f(m, d)`` raises unless ``d.model is m`` (see :mod:`kinedyn.engine.checks`).
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.checks import assign_field, check_model_data, real_number
from kinedyn.engine.fields import DATA_FIELD, DATA_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import handle_pointer, make_handle
from kinedyn.engine.history import reset_history
from kinedyn.engine.model import Model
from kinedyn.engine.sleep import AWAKE
from kinedyn.engine.types import COUNT_NCON, COUNT_NE, COUNT_NEFC, COUNT_NF, COUNT_NL, NWARNING, JointType

# fields with one entry per constraint row or per contact: Data shows their first nefc rows or
# ncon contacts (MuJoCo's d.efc_* and d.contact sizes), the kernels write the whole buffer
_COUNT_OF = {"nefcmax": 3, "nconmax": 4}  # which entry of efc_counts is live
ROW_FIELDS = tuple(spec.name for spec in DATA_FIELDS
                   if spec.shape[:1] in (("nefcmax",), ("nconmax",)) and spec.stage != "scratch")
CONTACT_FIELDS = tuple(name for name in ROW_FIELDS if name.startswith("contact_"))


def _live_rows(name: str) -> property:
    count = _COUNT_OF[DATA_FIELD[name].shape[0]]

    def get(self):
        return self._rows[name][:self.efc_counts[count]]

    def set(self, value):
        assign_field(get(self), value, f"Data.{name}")

    live = "the first nefc rows" if count == 3 else "the first ncon contacts"
    return property(get, set, doc=f"{DATA_FIELD[name].doc} (the live part: {live})")


class Contacts:
    """The live contacts of a Data as MuJoCo's ``d.contact``: ``d.contact.dist`` is
    ``d.contact_dist`` (ncon values), ``d.contact.frame`` ``d.contact_frame``, ..."""

    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        if "contact_" + name in CONTACT_FIELDS:
            return getattr(self._data, "contact_" + name)
        raise AttributeError(f"contact has no field '{name}'; fields: "
                             + ", ".join(n[len("contact_"):] for n in CONTACT_FIELDS))

    def __setattr__(self, name, value):
        if "contact_" + name not in CONTACT_FIELDS:
            raise AttributeError(f"contact has no field '{name}'")
        setattr(self._data, "contact_" + name, value)

    def __len__(self):
        return self._data.ncon

    def __repr__(self):
        return f"<kinedyn contacts ncon={self._data.ncon}>"


class Data:
    """State (``time qpos qvel act ctrl qfrc_applied xfrc_applied``) and results of a ``Model``."""

    _kinedyn_kind = "data"  # what engine.checks recognises it by

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"Data(model) needs a kinedyn.Model, got {type(model).__name__}")
        sizes = {s: getattr(model, s) for s in SIZE_NAMES}
        arrays = {spec.name: np.zeros(spec.resolve(sizes), dtype=spec.dtype) for spec in DATA_FIELDS}
        self._bind(model, arrays, np.zeros(1))
        self.qpos[:] = model.qpos0
        self.eq_active[:] = model.eq_active0
        reset_mocap(model, self.mocap_pos, self.mocap_quat)
        reset_history(model, self.history)
        reset_sleep(model, self)
        plastic_reset(model, self.plastic)

    def _bind(self, model: Model, arrays: dict[str, np.ndarray], time: np.ndarray) -> None:
        """Attach the model and the arrays, and build the kernel handle over exactly these arrays."""
        object.__setattr__(self, "_model", model)  # a strong reference: d.model lives as long as d
        object.__setattr__(self, "_rows", {name: arrays[name] for name in ROW_FIELDS})
        for name, arr in arrays.items():
            if name not in ROW_FIELDS:
                object.__setattr__(self, name, arr)
        object.__setattr__(self, "_time", time)
        # MuJoCo's d.warning: [number, lastinfo] per mjtWarning, counted by the Python wrappers that
        # raise the matching Python warning (step's recovery, dropped contacts); kernels never see it
        object.__setattr__(self, "warning_counts", np.zeros((2, NWARNING), dtype=np.int64))
        object.__setattr__(self, "_handle", make_handle("data", {**arrays, "time": time}))
        object.__setattr__(self, "_ptr", handle_pointer(self._handle))  # what public wrappers pass to kernels

    @property
    def model(self) -> Model:
        """The Model this Data was made for: the only one public functions accept with it."""
        return self._model

    def _array(self, name: str) -> np.ndarray:
        """The whole array of field ``name`` (for a row field, every row, not only the live ones)."""
        return self._rows[name] if name in ROW_FIELDS else getattr(self, name)

    @property
    def ne(self) -> int:
        """Number of equality constraint rows."""
        return int(self.efc_counts[COUNT_NE])

    @property
    def nf(self) -> int:
        """Number of friction-loss rows."""
        return int(self.efc_counts[COUNT_NF])

    @property
    def nl(self) -> int:
        """Number of limit rows."""
        return int(self.efc_counts[COUNT_NL])

    @property
    def nefc(self) -> int:
        """Number of constraint rows (efc_*): equality, friction loss, limits, contacts."""
        return int(self.efc_counts[COUNT_NEFC])

    @property
    def ncon(self) -> int:
        """Number of contacts (contact_*)."""
        return int(self.efc_counts[COUNT_NCON])

    @property
    def contact(self) -> Contacts:
        """The live contacts, with MuJoCo's field names: ``d.contact.dist``, ``d.contact.pos``, ..."""
        return Contacts(self)

    @property
    def time(self) -> float:
        """Simulation time in seconds."""
        return float(self._time[0])

    @time.setter
    def time(self, value: float) -> None:
        self._time[0] = real_number("Data.time", value)

    def __setattr__(self, name, value):
        # the kernel handle holds the arrays made with the Data: fields are written in place,
        # never rebound (object.__setattr__ is the only way around this)
        spec = DATA_FIELD.get(name)
        if name in ROW_FIELDS:
            object.__setattr__(self, name, value)  # the property checks the shape
            return
        if spec is None:
            if name == "time":
                object.__setattr__(self, name, value)  # goes through the property
                return
            if name == "model":
                raise AttributeError("Data.model is fixed: a Data belongs to the Model it was made for")
            raise AttributeError(f"Data has no field '{name}'")
        assign_field(getattr(self, name), value, f"Data.{name}")

    def __delattr__(self, name):
        raise AttributeError(f"Data.{name} cannot be deleted")

    def copy(self) -> Data:
        """A deep copy with its own arrays, for the same Model."""
        other = object.__new__(Data)
        other._bind(self._model, {spec.name: self._array(spec.name).copy() for spec in DATA_FIELDS},
                    self._time.copy())
        other.warning_counts[...] = self.warning_counts
        return other

    def __repr__(self) -> str:
        return f"<kinedyn.Data time={self.time:g} nq={self.qpos.size} nv={self.qvel.size}>"


def reset_mocap(m: Model, mocap_pos: np.ndarray, mocap_quat: np.ndarray) -> None:
    """The mocap poses at reset: each mocap body's body_pos and body_quat (mj_resetData).

    ``mocap_pos`` and ``mocap_quat`` may carry leading batch axes.
    """
    bodies = np.flatnonzero(m.body_mocapid >= 0)
    ids = m.body_mocapid[bodies]
    mocap_pos[..., ids, :] = m.body_pos[bodies]
    mocap_quat[..., ids, :] = m.body_quat[bodies]


def reset_sleep(m: Model, d: Data) -> None:
    """The sleep state at reset (mj_resetData): every tree fully awake; bodies of trees and mocap
    bodies awake, the other dof-less bodies static (engine.sleep). ``d`` may be a BatchData."""
    d.tree_asleep[:] = AWAKE
    d.tree_awake[:] = 1
    moving = (m.body_treeid >= 0) | (m.body_mocapid[m.body_rootid] >= 0)
    d.body_awake[:] = np.where(moving, 1, -1)


def plastic_reset(m: Model, plastic: np.ndarray) -> None:
    """The plastic state at reset (mj_resetData): each yielding joint's spring reference from
    qpos_spring (4 numbers for a ball joint's quaternion, else 1), each yielding tendon's
    lengthspring pair. ``plastic`` may carry leading batch axes."""
    for j in np.flatnonzero(m.jnt_plasticadr >= 0):
        adr, qadr = m.jnt_plasticadr[j], m.jnt_qposadr[j]
        width = 4 if m.jnt_type[j] == JointType.BALL else 1
        plastic[..., adr:adr + width] = m.qpos_spring[qadr:qadr + width]
    for t in np.flatnonzero(m.tendon_plasticadr >= 0):
        adr = m.tendon_plasticadr[t]
        plastic[..., adr:adr + 2] = m.tendon_lengthspring[t]


def reset(m: Model, d: Data, key: int | str | None = None) -> None:
    """Reset ``d`` to the model's default state, or to keyframe ``key`` (id or name).

    Mirrors mj_resetData / mj_resetDataKeyframe: every field is zeroed, then
    qpos = qpos0, mocap_pos/mocap_quat = the mocap bodies' body_pos/body_quat, the control
    history buffers start (engine.history.reset_history), plastic = the springs' rest positions
    (``plastic_reset``) (and the keyframe's time, qpos, qvel, act, ctrl, mpos, mquat and plastic
    are set).
    """
    _reset(m, d, key, "reset")


def _reset(m: Model, d: Data, key, fname: str) -> None:
    check_model_data(m, d, fname)
    k = None if key is None else m.key(key).id  # an unknown key raises before anything changes
    for spec in DATA_FIELDS:
        d._array(spec.name)[...] = 0
    d.time = 0.0
    d.warning_counts[...] = 0
    d.qpos[:] = m.qpos0
    d.eq_active[:] = m.eq_active0
    reset_mocap(m, d.mocap_pos, d.mocap_quat)
    reset_history(m, d.history)
    reset_sleep(m, d)
    plastic_reset(m, d.plastic)
    if k is not None:
        d.time = m.key_time[k]
        d.qpos[:] = m.key_qpos[k]
        d.qvel[:] = m.key_qvel[k]
        d.act[:] = m.key_act[k]
        d.ctrl[:] = m.key_ctrl[k]
        d.mocap_pos[:] = m.key_mpos[k]
        d.mocap_quat[:] = m.key_mquat[k]
        d.plastic[:] = m.key_plastic[k]


def reset_data_keyframe(m: Model, d: Data, key: int | str) -> None:
    """Reset ``d`` to keyframe ``key`` (its id or name), as mj_resetDataKeyframe.

    Every field is zeroed, then time, qpos, qvel, act, ctrl, mocap_pos and mocap_quat
    are taken from the keyframe (``kd.reset(m, d, key)`` does the same).
    """
    if key is None:
        raise TypeError("reset_data_keyframe needs a keyframe id or name (kd.reset(m, d) resets to qpos0)")
    _reset(m, d, key, "reset_data_keyframe")


for _name in ROW_FIELDS:
    setattr(Data, _name, _live_rows(_name))
