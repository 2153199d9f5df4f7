"""``Data``: the state and every computed quantity (MuJoCo's mjData).

Every array is allocated once, from :data:`kinedyn.engine.fields.DATA_FIELDS`, when the
``Data`` is made; kernels write into these arrays in place and never allocate.
Assigning a whole field (``d.qpos = q``) copies into the existing array and
raises at once if the shape is wrong.
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.fields import DATA_FIELD, DATA_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import make_handle
from kinedyn.engine.model import Model


class Data:
    """State (``time qpos qvel act ctrl qfrc_applied xfrc_applied``) and results of a ``Model``."""

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"Data(model) needs a kinedyn.Model, got {type(model).__name__}")
        sizes = {s: getattr(model, s) for s in SIZE_NAMES}
        self._bind({spec.name: np.zeros(spec.resolve(sizes), dtype=spec.dtype) for spec in DATA_FIELDS},
                   np.zeros(1))
        self.qpos[:] = model.qpos0

    def _bind(self, arrays: dict[str, np.ndarray], time: np.ndarray) -> None:
        """Attach the arrays and build the kernel handle over exactly these arrays."""
        for name, arr in arrays.items():
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "_time", time)
        object.__setattr__(self, "_handle", make_handle("data", {**arrays, "time": time}))

    @property
    def time(self) -> float:
        """Simulation time in seconds."""
        return float(self._time[0])

    @time.setter
    def time(self, value: float) -> None:
        self._time[0] = value

    def __setattr__(self, name, value):
        spec = DATA_FIELD.get(name)
        if spec is None:
            if name == "time":
                object.__setattr__(self, name, value)  # goes through the property
                return
            raise AttributeError(f"Data has no field '{name}'")
        target = getattr(self, name)
        value = np.asarray(value, dtype=target.dtype)
        if value.shape != target.shape and value.shape != ():
            raise ValueError(f"Data.{name} has shape {target.shape}; cannot assign shape {value.shape}")
        target[...] = value

    def copy(self) -> Data:
        """A deep copy with its own arrays."""
        other = object.__new__(Data)
        other._bind({spec.name: getattr(self, spec.name).copy() for spec in DATA_FIELDS}, self._time.copy())
        return other

    def __repr__(self) -> str:
        return f"<kinedyn.Data time={self.time:g} nq={self.qpos.size} nv={self.qvel.size}>"


def reset(m: Model, d: Data, key: int | str | None = None) -> None:
    """Reset ``d`` to the model's default state, or to keyframe ``key`` (id or name).

    Mirrors mj_resetData / mj_resetDataKeyframe: every field is zeroed, then
    qpos = qpos0 (or the keyframe's qpos, qvel, act, ctrl and time).
    """
    for spec in DATA_FIELDS:
        getattr(d, spec.name)[...] = 0
    d.time = 0.0
    d.qpos[:] = m.qpos0
    if key is not None:
        k = m.key(key).id
        d.time = m.key_time[k]
        d.qpos[:] = m.key_qpos[k]
        d.qvel[:] = m.key_qvel[k]
        d.act[:] = m.key_act[k]
        d.ctrl[:] = m.key_ctrl[k]
