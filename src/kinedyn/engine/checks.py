"""Argument checks of the public functions: misuse raises, it never crashes.

Kernels are compiled without bounds checks and index every array by the model's sizes,
so a Data of another model, swapped arguments (``f(d, m)``) or a wrong array handed to a
kernel would read and write out of bounds and kill the process. So:

* a ``Data`` belongs to the ``Model`` it was made for (``d.model``, kept as ``d._model``)
  and every public ``f(m, d)`` starts with one identity test, ``d._model is m``; only when
  it fails does :func:`bad_model_data` work out what is wrong and raise ``TypeError``
  (not a Model / not a Data / arguments swapped) or ``ValueError`` (a Data of another
  model). ``forward`` and ``step`` write the test inline (a call costs more than the test);
  the other wrappers call :func:`check_model_data`.
* arrays from the user are converted to fresh float64 arrays (:func:`float_array`), or,
  when a kernel writes into them, checked (:func:`out_array`); field assignment
  (``d.qpos = x``, ``m.body_mass = x``) goes through :func:`assign_field`.

A copy of a Model (``m.copy()``) is another model: Data made for the original are not
accepted by the copy, even though the sizes agree.
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.fields import SIZE_NAMES


def _is(obj, kind: str) -> bool:
    """Whether ``obj`` is a kinedyn Model ("model") or Data ("data"). The classes say so with a class
    attribute, so this module (which model.py and data.py use) need not import them."""
    return getattr(type(obj), "_kinedyn_kind", None) == kind


# value kinds (numpy dtype.kind) that may be cast into an array of each kind
_CASTABLE = {"f": "biuf", "i": "biu", "u": "biu", "b": "b"}


def _sizes(m, names=("nq", "nv")) -> str:
    return " ".join(f"{s}={getattr(m, s)}" for s in names)


def _describe_mismatch(owner, m, what: str, var: str) -> str:
    """'<what> was made for a model with nq=1 nv=1, not this one (nq=19 nv=18)' and the like."""
    differ = [s for s in SIZE_NAMES if getattr(owner, s) != getattr(m, s)]
    if not differ:
        return (f"{what} was made for another Model object of the same sizes ({_sizes(m)}): a copy, or the "
                f"same file compiled twice; pass the model it was made for ({var}.model), or make a {what} "
                f"for this one")
    names = ("nq", "nv") if {"nq", "nv"} & set(differ) else ("nq", "nv", *differ)
    return (f"{what} was made for a model with {_sizes(owner, names)}, not this one ({_sizes(m, names)}); "
            f"pass the model it was made for ({var}.model), or make a {what} for this one")


def bad_model_data(m, d, fname: str) -> None:
    """Raise the error that says why ``fname(m, d)`` cannot run (called when ``d._model is not m``)."""

    if _is(m, "data") and _is(d, "model"):
        raise TypeError(f"arguments swapped: call {fname}(m, d), the Model first, "
                        f"not {fname}(d, m)") from None
    if not _is(m, "model"):
        hint = "; it is a Data: use d.model" if _is(m, "data") else ""
        raise TypeError(f"{fname}(m, d): m must be a kinedyn.Model, got {type(m).__name__}{hint}") from None
    if not _is(d, "data"):
        hint = ""
        if type(d).__name__ == "BatchData":
            hint = f"; for a batch use kd.batch.{fname}(m, bd) where there is one, or one member bd[i]"
        raise TypeError(f"{fname}(m, d): d must be a kinedyn.Data, got {type(d).__name__}{hint}") from None
    raise ValueError(f"{fname}(m, d): " + _describe_mismatch(d._model, m, "Data", "d")) from None


def check_model_data(m, d, fname: str) -> None:
    """Raise ``TypeError`` / ``ValueError`` unless ``d`` is a Data made for ``m``."""
    if getattr(d, "_model", None) is not m:
        bad_model_data(m, d, fname)


def check_model_batch(m, bd, fname: str) -> None:
    """Raise ``TypeError`` / ``ValueError`` unless ``bd`` is a BatchData made for ``m``."""
    if getattr(bd, "_batch_model", None) is m:
        return

    if _is(m, "model") and _is(bd, "model"):
        raise TypeError(f"{fname}(m, bd): bd must be a kinedyn.tools.batch.BatchData, got Model")
    if type(m).__name__ == "BatchData" and _is(bd, "model"):
        raise TypeError(f"arguments swapped: call {fname}(m, bd), the Model first, not {fname}(bd, m)")
    check_model(m, fname)
    if not hasattr(bd, "_batch_model"):
        hint = "; it is a single Data: use kd.batch.BatchData(m, n)" if _is(bd, "data") else ""
        raise TypeError(f"{fname}(m, bd): expected a kinedyn.tools.batch.BatchData, "
                        f"got {type(bd).__name__}{hint}")
    raise ValueError(f"{fname}(m, bd): " + _describe_mismatch(bd._batch_model, m, "BatchData", "bd"))


def check_model(m, fname: str) -> None:
    """Raise ``TypeError`` unless ``m`` is a kinedyn Model."""

    if not _is(m, "model"):
        hint = "; it is a Data: use d.model" if hasattr(m, "_model") else ""
        raise TypeError(f"{fname} needs a kinedyn.Model as m, got {type(m).__name__}{hint}")


# ---- values from the user -----------------------------------------------------------------------

def real_number(name: str, value) -> float:
    """``value`` as a float; ``TypeError`` naming ``name`` unless it is a real number (bools are not)."""
    if isinstance(value, np.ndarray) and value.shape == ():  # a 0-d array: its element
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def integer(name: str, value) -> int:
    """``value`` as an int; ``TypeError`` naming ``name`` unless it is an integer (bools are not)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def _numeric(arr: np.ndarray, kind: str, name: str) -> None:
    if arr.dtype.kind not in _CASTABLE[kind]:
        raise TypeError(f"{name} must hold {'real numbers' if kind == 'f' else 'integers'}, "
                        f"got dtype {arr.dtype}")


def float_array(value, name: str, shape: tuple | None = None) -> np.ndarray:
    """``value`` as a C-contiguous float64 array (a copy when it has to convert), checked.

    Raises ``TypeError`` for values that are not real numbers (complex, strings, objects)
    and ``ValueError`` when ``shape`` is given and not matched; ``name`` is in both messages.
    """
    try:
        arr = np.asarray(value)
    except ValueError as err:  # ragged nested sequences
        raise ValueError(f"{name}: {err}") from None
    _numeric(arr, "f", name)
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    return arr


class OutArgument:
    """The out-array one argument of a public function was last given, once checked.

    A control loop passes the same arrays on every call, and ``out_array``'s checks (shape,
    dtype, layout, writeable: ~0.2 µs per array) cost more than a Jacobian. An array keeps its
    buffer for life, so the same object for the same shape is still safe to write into: it is
    checked once, then recognised by identity."""

    __slots__ = ("array", "name", "shape")

    def __init__(self, name: str):
        self.name, self.array, self.shape = name, None, None

    def check(self, arr, shape: tuple) -> np.ndarray:
        if arr is self.array and shape == self.shape:
            return arr
        out_array(arr, self.name, shape)
        self.array, self.shape = arr, shape
        return arr


def out_array(arr, name: str, shape: tuple) -> np.ndarray:
    """Check an array a kernel writes into: a writeable C-contiguous float64 ndarray of ``shape``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy array (it is written in place), got {type(arr).__name__}")
    if arr.dtype != np.float64:  # ValueError, as before these checks were shared
        raise ValueError(f"{name} must be float64 (it is written in place), got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (it is written in place); "
                         f"pass np.ascontiguousarray(...)")
    if not arr.flags.writeable:
        raise ValueError(f"{name} is read-only; it is written in place")
    return arr


def assign_field(target: np.ndarray, value, where: str) -> None:
    """``target[...] = value`` for a whole-field assignment (``d.qpos = x``), checked first.

    ``value`` must have the field's shape (or be a scalar) and hold values that cast safely
    (numbers into float fields, integers or booleans into integer fields); NaN is allowed.
    """
    try:
        arr = np.asarray(value)
    except ValueError as err:
        raise ValueError(f"{where}: cannot assign {type(value).__name__}: {err}") from None
    if arr.dtype.kind not in _CASTABLE.get(target.dtype.kind, ""):
        raise TypeError(f"{where} holds {target.dtype}; cannot assign values of dtype {arr.dtype}")
    if arr.shape != target.shape and arr.shape != ():
        raise ValueError(f"{where} has shape {target.shape}; cannot assign shape {arr.shape}")
    target[...] = arr


def call_rebinding(fast_entry, m, d, *args):
    """``fast_entry.call`` on m and d; if the model changed since it was bound so that it needs a
    unit not bound yet (``NotBound``: gravity compensation switched on, a medium given, ...),
    bind what it needs now and call again, as ``forward`` and ``step`` do."""
    from kinedyn._jit import NotBound, rebind

    try:
        return fast_entry.call(m._ptr, d._ptr, *args)
    except NotBound:
        rebind(m, d)
        return fast_entry.call(m._ptr, d._ptr, *args)
