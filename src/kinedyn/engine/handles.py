"""The Model and Data handles: every registry field, in registry order, in one object for kernels.

A public call passes two handles (model, data) to one jitted entry (see
:mod:`kinedyn._jit.handles` for why); the entry reads ``m.body_parentid``,
``d.qpos``, ... from them as MuJoCo's C reads ``m->body_parentid``.
"""

from __future__ import annotations

from kinedyn._jit.handles import (
    DataHandle,
    DataHandleType,
    ModelHandle,
    ModelHandleType,
    build_handle,
    handle_pointer,
)
from kinedyn.engine.fields import DATA_FIELDS, MODEL_FIELDS, SIZE_NAMES

# what kernels see: sizes, every registry field, and the option arrays (see Option)
MODEL_HANDLE_FIELDS = (*SIZE_NAMES, *(f.name for f in MODEL_FIELDS),
                       "opt_timestep", "opt_gravity", "opt_flags", "opt_real", "opt_magnetic")
DATA_HANDLE_FIELDS = (*(f.name for f in DATA_FIELDS), "time")

__all__ = ["DATA_HANDLE_FIELDS", "MODEL_HANDLE_FIELDS", "handle_pointer", "make_handle"]

def make_handle(kind: str, values: dict):
    """Build a handle of ``kind`` ("model" or "data") from name -> array/scalar, in registry order."""
    if kind == "model":
        return build_handle(ModelHandle, ModelHandleType, MODEL_HANDLE_FIELDS, values)
    return build_handle(DataHandle, DataHandleType, DATA_HANDLE_FIELDS, values)
