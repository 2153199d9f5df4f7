"""Kernel handles: one Numba object carrying every array of a Model or Data.

Passing a hundred arrays to a jitted function costs about 0.1 µs each in
Numba's dispatcher; passing one ``StructRef`` costs about 1 µs in all. So each
public call hands two handles (model, data) to one jitted entry, which unpacks
the arrays it needs and calls array-only kernels.

With ``NUMBA_DISABLE_JIT=1`` a plain namespace stands in for the StructRef:
attribute access reads the same, so the kernels run unchanged as Python.
"""

from __future__ import annotations

from types import SimpleNamespace

from numba import config, types
from numba.experimental import structref


@structref.register
class ModelHandleType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@structref.register
class DataHandleType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class ModelHandle(structref.StructRefProxy):
    """Model arrays and sizes for kernels."""


class DataHandle(structref.StructRefProxy):
    """Data arrays for kernels."""


_proxies: dict[str, tuple] = {}


def make_handle(kind: str, values: dict):
    """Build a handle of ``kind`` ("model" or "data") from name -> array/scalar."""
    if config.DISABLE_JIT:
        return SimpleNamespace(**values)
    names = tuple(values)
    if kind not in _proxies:
        # the field set is fixed by the registry, so each kind has one StructRef
        # type for every model: Numba's on-disk cache stays valid across runs
        proxy, typ = (ModelHandle, ModelHandleType) if kind == "model" else (DataHandle, DataHandleType)
        structref.define_proxy(proxy, typ, list(names))
        _proxies[kind] = (proxy, names)
    proxy, known = _proxies[kind]
    if names != known:
        raise RuntimeError(f"{kind} handle fields changed within one process")
    return proxy(*values.values())
