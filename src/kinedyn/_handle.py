"""Kernel handles: one Numba object carrying every array of a Model or Data.

Passing a hundred arrays to a jitted function costs about 0.1 µs each in
Numba's dispatcher; passing one ``StructRef`` costs about 1 µs in all. So each
public call hands two handles (model, data) to one jitted entry, which reads
the arrays it needs and calls array-only kernels.

The field lists come from the registry (:mod:`kinedyn.fields`), so each kind of
handle has one StructRef type for every model, and the jitted constructors below
are cached on disk like the kernels.

With ``NUMBA_DISABLE_JIT=1`` a plain namespace stands in for the StructRef:
attribute access reads the same, so the kernels run unchanged as Python.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

from numba import config, njit, types
from numba.core import cgutils, imputils
from numba.core.caching import FunctionCache
from numba.core.datamodel import default_manager, models
from numba.core.extending import infer_getattr, lower_getattr_generic, lower_setattr_generic
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref
from numba.extending import intrinsic

from kinedyn.fields import DATA_FIELDS, MODEL_FIELDS, SIZE_NAMES


def _import_numba_arraymath_without_scipy_linalg() -> None:
    """Import Numba's NumPy implementations without importing all of ``scipy.linalg``.

    Numba loads its implementations on the first compile or cache load; one of them
    (``numba.np.arraymath``) checks once whether a BLAS exists by importing
    ``scipy.linalg.cython_blas``, and that pulls in the whole ``scipy.linalg`` package
    (and through it ``numpy.f2py``, ``numpy.testing``, ...): 0.2-0.5 s of the first compile,
    or the first load of an entry not made by ``cached_njit`` (``step``, ``inverse``, ...),
    for a BLAS kinedyn never calls (its kernels are plain loops). So, when SciPy is
    installed (Numba imported it to check its version), that module is imported here
    with a placeholder standing in for ``cython_blas`` during the check, which then
    records "BLAS available", as the real import would. The placeholder is removed at
    once: a later ``np.dot`` in anyone's jitted code imports the real module, as Numba
    always does when it compiles one.
    """
    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or "scipy" not in sys.modules or blas in sys.modules:
        return
    sys.modules[blas] = ModuleType(blas)
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules[blas]


_import_numba_arraymath_without_scipy_linalg()

# what kernels see: sizes, every registry field, and the option arrays (see Option)
MODEL_HANDLE_FIELDS = (*SIZE_NAMES, *(f.name for f in MODEL_FIELDS),
                       "opt_timestep", "opt_gravity", "opt_flags")
DATA_HANDLE_FIELDS = (*(f.name for f in DATA_FIELDS), "time")


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


class _LazyFunctionCache:
    """Numba's on-disk cache of one function (``FunctionCache``), set up when first used, and
    loading compiled code without Numba's compiler initialisation.

    Setting one up finds and probes its directory (creates it, writes and deletes a test
    file): 0.4-0.5 ms per function, about 50 ms for kinedyn's hundred-odd jitted functions on
    every import. A warm start loads only the few entries it calls (their cached code
    contains the kernels they call), so the kernels' own caches are usually never opened.

    Numba's ``load_overload`` first initialises everything its compiler needs (imports and
    registers all of its implementations: 0.1 s and some 40 000 Python objects, which then
    also cost a full garbage collection). Loading machine code needs only the runtime's
    reference-counting functions, which the cached code calls; so ``load_overload`` here
    starts those (``rtsys.initialize``) and loads. Anything compiled later still gets the
    full initialisation: Numba's compiler runs it before every compile.
    """

    def __init__(self, py_func):
        self._py_func = py_func
        self._cache = None

    def _function_cache(self):
        if self._cache is None:
            self._cache = FunctionCache(self._py_func)
        return self._cache

    def __getattr__(self, name):
        return getattr(self._function_cache(), name)

    def load_overload(self, sig, target_context):
        cache = self._function_cache()
        rtsys.initialize(target_context)
        with cache._guard_against_spurious_io_errors():
            return cache._load_overload(sig, target_context)


def _cache_lazily(dispatcher):
    """Turn on on-disk caching for ``dispatcher`` (as ``cache=True`` does), set up on first use."""
    dispatcher._cache = _LazyFunctionCache(dispatcher.py_func)
    return dispatcher


def cached_njit(fn, **options):
    """``njit(cache=True, **options)`` with the cache of ``_LazyFunctionCache``: a warm start
    loads the entries a program calls (``forward``, the handle constructors, ...) without
    Numba's compiler initialisation."""
    jitted = njit(**options)(fn)
    return jitted if config.DISABLE_JIT else _cache_lazily(jitted)


def _handle_packer(handle_typeclass, names):
    """A jit-only intrinsic ``pack(values)`` building a ``handle_typeclass`` handle from a tuple of
    field values in registry order: one allocation, then one store per field.

    Numba's own StructRef constructor (``structref.define_proxy``) sets the fields one
    ``st.field = value`` at a time, each typed and lowered as a generic attribute write that also
    releases the old value. Here the fields are stored straight into the freshly zeroed payload,
    each with one reference taken (the handle keeps its arrays alive); the destructor is Numba's
    own StructRef one (it releases every field when the handle dies), as in ``structref.new``.
    Compiling the humanoid's model handle constructor took 5.9 s CPU that way and 2.3-2.5 s this
    way (data handle 1.9 -> 1.0 s; loaded machine, 2026-11-21). The rest is Numba unboxing the
    hundred arrays of the argument tuple.
    """

    @intrinsic
    def pack(typingctx, values):
        handle_type = handle_typeclass(list(zip(names, values.types, strict=True)))

        def codegen(context, builder, signature, args):
            from numba.experimental.jitclass.base import imp_dtor

            payload_type = handle_type.get_data_type()
            alloc_type = context.data_model_manager[payload_type].get_value_type()
            meminfo = context.nrt.meminfo_alloc_dtor(
                builder, context.get_constant(types.uintp, context.get_abi_sizeof(alloc_type)),
                imp_dtor(context, builder.module, handle_type))
            data = builder.bitcast(context.nrt.meminfo_data(builder, meminfo), alloc_type.as_pointer())
            builder.store(cgutils.get_null_value(alloc_type), data)
            payload = cgutils.create_struct_proxy(payload_type)(context, builder, ref=data)
            for i, (name, typ) in enumerate(zip(names, values.types, strict=True)):
                value = builder.extract_value(args[0], i)
                context.nrt.incref(builder, typ, value)
                setattr(payload, name, value)
            handle = context.make_helper(builder, handle_type)
            handle.meminfo = meminfo
            return handle._getvalue()

        return handle_type(values), codegen

    return pack


_pack_model_handle = _handle_packer(ModelHandleType, MODEL_HANDLE_FIELDS)
_pack_data_handle = _handle_packer(DataHandleType, DATA_HANDLE_FIELDS)


@cached_njit
def _new_model_handle(values):
    return _pack_model_handle(values)


@cached_njit
def _new_data_handle(values):
    return _pack_data_handle(values)


def make_handle(kind: str, values: dict):
    """Build a handle of ``kind`` ("model" or "data") from name -> array/scalar."""
    names = MODEL_HANDLE_FIELDS if kind == "model" else DATA_HANDLE_FIELDS
    if tuple(values) != names:
        raise RuntimeError(f"{kind} handle fields do not follow the registry")
    if config.DISABLE_JIT:
        return SimpleNamespace(**values)
    build = _new_model_handle if kind == "model" else _new_data_handle
    return build(tuple(values.values()))


def _call_type(typ):
    """The type a kernel is compiled for when called with an argument of type ``typ``.

    Numba types a constant argument in jitted code as a literal (``Literal[int](0)``,
    ``Literal[bool](True)``) and compiles the callee once per distinct constant; it also
    compiles once per integer width (an int32 model index versus an int64 loop counter).
    Each is a full compile of the kernel on a cold start. Kernels never need either
    specialisation, so constants are passed as their plain type and signed integers as int64.
    """
    typ = types.unliteral(typ)
    if isinstance(typ, types.Integer) and typ.signed:
        return types.int64
    return typ


class KernelDispatcher(CPUDispatcher):
    """Numba's CPU dispatcher compiling one version per argument *type* (see ``_call_type``)."""

    def get_call_template(self, args, kws):
        args = tuple(_call_type(a) for a in args)
        kws = {name: _call_type(a) for name, a in kws.items()}
        return super().get_call_template(args, kws)


def kernel(fn=None, **options):
    """``njit`` for array-only kernels: cached, without reference counting, NumPy error model.

    Entries (``*_entry(m, d)``) read arrays out of the handles and pass them to kernels.
    With Numba's runtime (NRT) on, every array passed to or created in a function is
    reference-counted by an out-of-line atomic increment and decrement: about a
    thousand calls per ``forward`` on the humanoid. A kernel that only indexes arrays it
    was given and allocates nothing needs no reference counts (its caller keeps the arrays
    alive), so NRT is off for kernels; compiling one that allocates fails, which keeps
    allocation out of per-step code. ``error_model="numpy"`` drops the zero-division
    checks: x / 0 gives inf or nan as in MuJoCo's C instead of raising.
    Entries read the handles without reference counts too (``handle_entry``).
    Calls from jitted code compile one version per argument type (``KernelDispatcher``).
    """
    targetoptions = {"nopython": True, "_nrt": False, "error_model": "numpy", "boundscheck": None, **options}

    def decorate(func):
        if config.DISABLE_JIT:
            return func
        dispatcher = KernelDispatcher(py_func=func, locals={}, targetoptions=targetoptions)
        return _cache_lazily(dispatcher)

    return decorate(fn) if fn is not None else decorate


def entry(fn):
    """``njit`` for entries that only chain other entries (``fwd_position_entry``): cached,
    and inlined into the entries that call them.

    Numba links the machine code of every callee into each compiled function and
    generates it again there, so each layer of entries (a stage entry inside
    ``fwd_position_entry`` inside ``forward_entry`` inside a step) repeats the code
    generation of everything below it on a cold start. Inlining the chaining layers at
    the Numba-IR level removes those repeats; called from Python, such an entry still
    compiles on its own. (The stage entries stay separate functions: inlining them too
    saved no more compile time and measured slower on the biped.)
    """
    return cached_njit(fn, inline="always", _nrt=False)


class FastEntry:
    """Call a jitted entry through its compiled entry point.

    Numba's dispatcher types every argument and looks up the overload on each call,
    about 0.9 µs for a (model, data) pair of handles. The public wrappers always pass
    the same argument types, so after the first call (which compiles, or loads the
    cache, through the dispatcher) ``call`` *is* the compiled function: public wrappers
    call ``ENTRY.call(...)``, which skips even this object's own Python frame.
    """

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.call = self._first_call

    def _first_call(self, *args):
        result = self.dispatcher(*args)
        if not config.DISABLE_JIT:
            sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
            self.call = self.dispatcher.overloads[sig].entry_point
        return result

    def __call__(self, *args):
        return self.call(*args)


def handle_entry(fn):
    """``njit`` for stage entries reading the handles: cached, without reference counting
    (handle fields are borrowed, see ``_register_nrt_free``); an entry that allocates fails
    to compile, which keeps allocation out of per-step code."""
    return cached_njit(fn, _nrt=False)
