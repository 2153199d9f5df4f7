"""Kernel handles: one Numba object carrying every array of a Model or Data.

Passing a hundred arrays to a jitted function costs about 0.1 µs each in
Numba's dispatcher; passing one ``StructRef`` costs about 1 µs in all. So each
public call hands two handles (model, data) to one jitted entry, which reads
the arrays it needs and calls array-only kernels.

This module defines the two StructRef types and how their fields are read and
built in compiled code; the field lists come from the registry and live in
:mod:`kinedyn.engine.handles`. With ``NUMBA_DISABLE_JIT=1`` a plain namespace
stands in for the StructRef: attribute access reads the same, so the kernels run
unchanged as Python.
"""

from __future__ import annotations

import hashlib
import weakref
from types import SimpleNamespace

import numpy as np
from numba import config, typeof, types
from numba.core import cgutils, imputils
from numba.core.datamodel import default_manager, models
from numba.core.errors import TypingError
from numba.core.extending import infer_getattr, intrinsic, lower_getattr_generic, lower_setattr_generic
from numba.core.runtime import _nrt_python
from numba.core.runtime.nrt import MemInfo
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref


class _HandleType(types.StructRef):
    """A StructRef type whose hash and self-equality are O(1).

    Numba's dispatcher hashes and compares the argument types on every call; for a
    type with a hundred fields that costs about 0.3 µs each time, so cache the hash
    and short-cut comparing the (interned) type with itself.
    """

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)

    def __hash__(self):
        try:
            return self._hash
        except AttributeError:
            self._hash = super().__hash__()
            return self._hash

    def __eq__(self, other):
        return self is other or super().__eq__(other)

    def __reduce__(self):
        # The cached hash comes from this process's string hashing (randomised per process), so it
        # must never be pickled: Numba pickles argument types into the cache index, and a stale
        # hash on the unpickled type made index look-ups in the next process miss (and recompile).
        rebuild, (reconstructor, args, state) = super().__reduce__()
        return rebuild, (reconstructor, args, {k: v for k, v in (state or {}).items() if k != "_hash"})


class ModelHandleType(_HandleType):
    pass


class DataHandleType(_HandleType):
    pass


def _register_nrt_free(handle_type):
    """Like ``structref.register``, but reading a field takes no reference.

    Numba's StructRef attribute read increments the field's reference count (an atomic
    call) and the caller decrements it later: ~240 pairs per ``forward`` on the humanoid,
    about a sixth of its time in a profile. A handle outlives every call it is passed to
    and its fields are never reassigned, so entries read fields as borrowed values and
    are compiled without the reference-counting runtime (see ``handle_entry``).
    """
    default_manager.register(handle_type, models.StructRefModel)

    @infer_getattr
    class _FieldType(AttributeTemplate):
        key = handle_type

        def generic_resolve(self, typ, attr):
            return typ.field_dict.get(attr)

    @lower_getattr_generic(handle_type)
    def _read_field(context, builder, typ, val, attr):
        ref = cgutils.create_struct_proxy(typ)(context, builder, value=val)
        # an NRT MemInfo is {refct, dtor, dtor_info, data, ...}: the payload pointer is field 3
        meminfo = builder.bitcast(ref.meminfo, cgutils.voidptr_t.as_pointer())
        data = builder.load(builder.gep(meminfo, [cgutils.int32_t(3)]))
        payload_type = typ.get_data_type()
        ptr_type = context.data_model_manager[payload_type].get_value_type().as_pointer()
        payload_ptr = builder.bitcast(data, ptr_type)
        payload = cgutils.create_struct_proxy(payload_type)(context, builder, ref=payload_ptr)
        value = getattr(payload, attr)
        if context.enable_nrt:
            return imputils.impl_ret_borrowed(context, builder, typ.field_dict[attr], value)
        return imputils.impl_ret_untracked(context, builder, typ.field_dict[attr], value)

    @lower_setattr_generic(handle_type)
    def _write_field(context, builder, sig, args, attr):
        [handle_t, value_t], [handle, value] = sig.args, args
        payload = structref._Utils(context, builder, handle_t).get_data_struct(handle)
        value = context.cast(builder, value, value_t, handle_t.field_dict[attr])
        context.nrt.incref(builder, value_t, value)
        context.nrt.decref(builder, value_t, getattr(payload, attr))
        setattr(payload, attr, value)


_register_nrt_free(ModelHandleType)
_register_nrt_free(DataHandleType)


class ModelHandle(structref.StructRefProxy):
    """Model arrays and sizes for kernels."""


class DataHandle(structref.StructRefProxy):
    """Data arrays for kernels."""


# Boxing only (a handle returned to Python becomes a ModelHandle / DataHandle proxy): jitted code
# never calls ModelHandle(...), the handles are built by the constructors below.
structref.define_boxing(ModelHandleType, ModelHandle)
structref.define_boxing(DataHandleType, DataHandle)


def build_handle(proxy_class, handle_typeclass, names: tuple[str, ...], values: dict):
    """A handle of ``handle_typeclass`` from name -> array/int, in ``names`` order, built in Python;
    a plain namespace when the JIT is disabled.

    Compiled code reads a handle's fields out of its payload, which holds each field in Numba's
    data model: an int64, or an array's struct ``{meminfo, parent, nitems, itemsize, data,
    shape[ndim], strides[ndim]}`` (8 bytes each). Written here with NumPy, the payload needs no
    compiled constructor: unboxing a few hundred arrays made the two jitted constructors a
    tenth of a cold start (12 s of CPU). Each array's meminfo is null -- compiled code reads
    handle fields without reference counts (``_register_nrt_free``), and Numba's reference
    counting skips a null meminfo -- and its ``parent`` is the array itself, which is what boxing
    a field back to Python returns. The payload and the arrays are kept alive by the handle's
    meminfo, which owns them (``meminfo_new``: released with the last reference to the handle).
    """
    if tuple(values) != names:
        raise RuntimeError("handle fields do not follow the registry")
    if config.DISABLE_JIT:
        return SimpleNamespace(**values)
    field_types, words = [], 0
    for name, value in values.items():
        typ = typeof(value)
        if isinstance(typ, types.Array):
            if typ.layout != "C" or not isinstance(value, np.ndarray):
                raise TypeError(f"handle field {name}: a C-contiguous array expected, got {typ}")
            words += 5 + 2 * typ.ndim
        elif typ == types.int64:
            words += 1
        else:
            raise TypeError(f"handle field {name}: an array or an int expected, got {typ}")
        field_types.append(typ)
    payload = np.empty(words, dtype=np.int64)
    k = 0
    for value in values.values():
        if isinstance(value, np.ndarray):
            n = value.ndim
            payload[k:k + 5] = (0, id(value), value.size, value.itemsize, value.ctypes.data)
            payload[k + 5:k + 5 + n] = value.shape
            payload[k + 5 + n:k + 5 + 2 * n] = value.strides
            k += 5 + 2 * n
        else:
            payload[k] = value
            k += 1
    handle_type = handle_typeclass(list(zip(names, field_types, strict=True)))
    owner = (payload, tuple(values.values()))
    pointer = _nrt_python.meminfo_new(payload.ctypes.data, owner)
    handle = proxy_class._numba_box_(handle_type, MemInfo(pointer))
    handle._pointer = pointer
    _LAYOUTS.setdefault(layout_key(handle_type), handle_type)
    _BY_POINTER[pointer] = handle
    return handle


# ---- a handle passed from Python as an integer -------------------------------------------------------
#
# Numba's Python wrapper unboxes a StructRef argument through Python attribute reads and type
# checks: about 0.15 µs per handle, half of what a small stage costs from Python. An int64
# unboxes in nanoseconds, and a StructRef's value *is* a pointer to its MemInfo. So Python calls a
# compiled entry with the handles' MemInfo addresses (``handle_pointer``), and a small compiled
# function (``dispatch.FastEntry``) turns them back into handles (``handle_at``) before calling the
# entry. The address stays valid while the handle lives: the Model and Data hold theirs.

_LAYOUTS: dict[int, types.Type] = {}  # layout_key(type) -> the handle type, for handle_at's typing
_BY_POINTER: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # pointer -> handle


def layout_key(handle_type) -> int:
    """A number that names a handle type's field layout (its field names and types), the same in
    every process: compiled code that reads a handle at an address is cached under it."""
    digest = hashlib.sha256(repr((type(handle_type).__name__, list(handle_type.field_dict.items()))).encode())
    return int(digest.hexdigest()[:15], 16)


def handle_pointer(handle):
    """What Python passes to compiled code for ``handle``: its MemInfo's address (the handle
    itself when the JIT is disabled, where entries are plain functions)."""
    return handle if config.DISABLE_JIT else handle._pointer


def handle_from_pointer(pointer):
    """The live handle whose ``handle_pointer`` is ``pointer``."""
    try:
        return _BY_POINTER[pointer]
    except KeyError:
        raise RuntimeError(f"kinedyn: no live kernel handle at {pointer:#x}") from None


@intrinsic
def handle_at(typingctx, pointer, key):
    """The handle of layout ``key`` (a constant ``layout_key``) whose MemInfo is at ``pointer``.
    The caller guarantees that a handle of that layout lives there (``handle_pointer``)."""
    if not isinstance(pointer, types.Integer) or not isinstance(key, types.IntegerLiteral):
        return None
    handle_type = _LAYOUTS.get(key.literal_value)
    if handle_type is None:
        raise TypingError(f"handle_at: no handle of layout {key.literal_value} in this process")

    def codegen(context, builder, signature, args):
        ref = cgutils.create_struct_proxy(handle_type)(context, builder)
        ref.meminfo = builder.inttoptr(args[0], cgutils.voidptr_t)
        return ref._getvalue()

    return handle_type(pointer, key), codegen
