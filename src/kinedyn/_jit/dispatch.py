"""The decorators kernels and entries are compiled with, and the fast call path.

* ``kernel``: array-only loops, no reference counting, one version per argument type;
  compiled into the unit that calls it.
* ``handle_entry``: a stage entry ``name_entry(m, d, ...)`` reading the handles: a *unit*,
  compiled on its own and called through its cell (:mod:`kinedyn._jit.units`).
* ``entry``: an entry that only chains other entries, inlined into its callers.
* ``cached_njit`` (from :mod:`kinedyn._jit.cache`): ``njit(cache=True)`` with the lazy cache.
* ``FastEntry``: call a compiled entry without Numba's dispatcher.
"""

from __future__ import annotations

import inspect
from types import FunctionType

from numba import config, typeof, types
from numba.core import compiler
from numba.core.codegen import JITCodeLibrary
from numba.core.dispatcher import _FunctionCompiler
from numba.core.registry import CPUDispatcher

from kinedyn._jit.bind import bind_call, cached_njit
from kinedyn._jit.cache import cache_lazily
from kinedyn._jit.compat import UnsupportedNumbaError
from kinedyn._jit.handles import handle_at, handle_from_pointer, layout_key
from kinedyn._jit.units import Unit, unit_name


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


class _LinkOnlyLibrary(JITCodeLibrary):
    """A code library whose code is only ever linked into others: finalising it optimises its
    module but generates no machine code (its callers link the optimised module and generate
    machine code for it there). A kernel is called from compiled code only, so generating its
    own machine code -- and caching it, which needs that code -- was work no one used, in every
    kernel. Asking it for a function address gives 0 (nothing calls one: a kernel called from
    Python runs through a twin compiled the usual way, see ``KernelDispatcher.__call__``)."""

    def _finalize_final_module(self):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        return 0


class _KernelCompiler(_FunctionCompiler):
    """Numba's function compiler, building kernels into a ``_LinkOnlyLibrary``."""

    def _compile_core(self, args, return_type):
        flags = compiler.Flags()
        self.targetdescr.options.parse_as_flags(flags, self.targetoptions)
        flags = self._customize_flags(flags)
        impl = self._get_implementation(args, {})
        target = self.targetdescr.target_context
        library = _LinkOnlyLibrary(target.codegen(), impl.__qualname__)
        cres = compiler.compile_extra(self.targetdescr.typing_context, target, impl, args=args,
                                      return_type=return_type, flags=flags, locals=self.locals,
                                      library=library, pipeline_class=self.pipeline_class)
        if cres.typing_error is not None and not flags.enable_pyobject:
            raise cres.typing_error
        return cres


class KernelDispatcher(CPUDispatcher):
    """Numba's CPU dispatcher compiling one version per argument *type* (see ``_call_type``), into
    link-only libraries (``_LinkOnlyLibrary``) unless it is a kernel's Python twin."""

    _python_twin = None

    def __init__(self, py_func, locals=None, targetoptions=None, **kws):  # noqa: A002 -- Numba's name
        targetoptions = targetoptions or {}
        if targetoptions.get("no_cpython_wrapper"):
            self._compiler_class = _KernelCompiler
        super().__init__(py_func, locals=locals or {}, targetoptions=targetoptions, **kws)

    def get_call_template(self, args, kws):
        args = tuple(_call_type(a) for a in args)
        kws = {name: _call_type(a) for name, a in kws.items()}
        return super().get_call_template(args, kws)

    def __call__(self, *args, **kws):
        """From Python: a twin of this kernel with Numba's Python wrapper (kernels have none)."""
        if self.targetoptions.get("no_cpython_wrapper"):
            if self._python_twin is None:
                options = {k: v for k, v in self.targetoptions.items()
                           if k not in ("no_cpython_wrapper", "no_cfunc_wrapper")}
                # the same code under another name: its cache entry must not be the kernel's (Numba's
                # cache index does not tell compile flags apart, and the kernel's has no wrapper)
                func = self.py_func
                twin = FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__,
                                    func.__closure__)
                twin.__qualname__ = f"{func.__qualname__}.from_python"
                twin.__module__ = func.__module__
                twin.__doc__ = func.__doc__
                self._python_twin = cache_lazily(KernelDispatcher(py_func=twin, locals={},
                                                                  targetoptions=options))
            return self._python_twin(*args, **kws)
        return super().__call__(*args, **kws)


def kernel(fn=None, **options):
    """``njit`` for array-only kernels: linked into the units that call them, without reference
    counting, NumPy error model.

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

    Kernels are compiled without Numba's Python and C call wrappers: they are called from
    compiled code, and generating the wrappers was about a seventh of a cold start. A kernel
    called from Python (a test, say) runs through a twin compiled with the wrappers.
    """
    targetoptions = {"nopython": True, "_nrt": False, "error_model": "numpy", "boundscheck": None,
                     "no_cpython_wrapper": True, "no_cfunc_wrapper": True, **options}

    def decorate(func):
        if config.DISABLE_JIT:
            return func
        # not cached on disk: a kernel has no machine code of its own (_LinkOnlyLibrary); the units
        # that link it are cached with it inside
        return KernelDispatcher(py_func=func, locals={}, targetoptions=targetoptions)

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
    return cached_njit(fn, inline="always", _nrt=False, error_model="numpy")


class FastEntry:
    """Call a compiled entry ``f(m, d, ...)`` from Python for the price of a call with integers.

    Public wrappers call ``ENTRY.call(m._ptr, d._ptr, ...)``: the handles' addresses
    (``handles.handle_pointer``), not the handles. Numba's Python wrapper unboxes an int64 in
    nanoseconds but a handle in about 0.15 µs, and its dispatcher types every argument on each
    call. So the first call (which binds the units the entry needs for the model,
    :func:`kinedyn._jit.bind.bind_call`) compiles or loads a *Python caller*: a small function
    taking the two addresses and the entry's other arguments, turning the addresses back into
    handles (``handles.handle_at``) and calling the entry (a unit: through its cell, so the
    caller contains none of its code). From then on ``call`` *is* that caller's compiled Python
    wrapper: no dispatcher, not even this object's own Python frame. Models made later are bound
    for the entry when they are made (``bind.model_created``).

    Under ``NUMBA_DISABLE_JIT=1`` the "addresses" are the handles themselves and ``call`` is the
    entry as a plain function.
    """

    def __init__(self, entry):
        self.root = entry
        self.call = self._first_call

    def _first_call(self, m_ptr, d_ptr, *args):
        if config.DISABLE_JIT:
            self.call = self.root
            return self.root(m_ptr, d_ptr, *args)
        handles = (handle_from_pointer(m_ptr), handle_from_pointer(d_ptr))
        bind_call(self.root, (*handles, *args))
        caller = python_caller(self.root, typeof(handles[0]), typeof(handles[1]))
        result = caller(m_ptr, d_ptr, *args)
        sig = tuple(caller.typeof_pyval(a) for a in (m_ptr, d_ptr, *args))
        try:
            self.call = caller.overloads[sig].entry_point
        except (AttributeError, KeyError) as err:  # Numba moved its compiled-overload record
            raise UnsupportedNumbaError(f"FastEntry: no compiled entry point: {err!r}") from err
        return result

    def __call__(self, *args):
        return self.call(*args)


def _caller_code(nargs: int):
    """The code of a Python caller with ``nargs`` arguments after the two addresses (each caller
    has its own globals, see ``python_caller``); explicit parameters, not ``*args``, so that the
    compiled signature is the arguments' types as Python passes them."""
    params = "".join(f", a{i}" for i in range(nargs))
    source = (f"def from_python(m, d{params}):\n"
              f"    return TARGET(handle_at(m, MODEL_LAYOUT), handle_at(d, DATA_LAYOUT){params})\n")
    namespace: dict = {}
    exec(compile(source, __file__, "exec"), namespace)  # noqa: S102 -- a fixed template
    return namespace["from_python"].__code__


_PYTHON_CALLERS: dict = {}


def python_caller(target, model_type, data_type):
    """The compiled function ``(model address, data address, *args) -> target(m, d, *args)`` for
    handles of these types (see ``FastEntry``): one per entry and handle layout, cached on disk
    under the entry's name, its signature (a unit's) and the layouts."""
    key = (target, model_type, data_type)
    if key not in _PYTHON_CALLERS:
        py_func = target.dispatcher.py_func if isinstance(target, Unit) else target.py_func
        namespace = {"__name__": __name__, "TARGET": target, "handle_at": handle_at,
                     "MODEL_LAYOUT": layout_key(model_type), "DATA_LAYOUT": layout_key(data_type)}
        nargs = len(inspect.signature(py_func).parameters) - 2
        func = FunctionType(_caller_code(nargs), namespace, "from_python")
        func.__qualname__ = f"{unit_name(py_func)}.from_python"
        func.__module__ = __name__
        _PYTHON_CALLERS[key] = cached_njit(func, _nrt=False, error_model="numpy")
    return _PYTHON_CALLERS[key]


def handle_entry(fn=None, *, returns: str = "none", args: str = "", needed=None, prefetch=None):
    """A stage entry ``f(m, d, ...)`` reading the handles, compiled as a *unit*: on its own,
    called through its cell (:mod:`kinedyn._jit.units`), so no caller re-generates its code.

    ``returns`` and ``args`` declare the result and the arguments after ``(m, d)`` in Numba's
    notation (``"int64"``, ``"float64[::1]"``): callers are compiled against them without
    compiling the entry. ``needed(model)``, if given, says whether a model can call it at all;
    the binder compiles it only for models that can. ``prefetch(model)``, if given and true,
    has the binder compile the unit with the first units it binds for that model, whether or
    not anything called so far reaches it (the step entry of the model's integrator).

    Cached, without reference counting (handle fields are borrowed, see
    ``_register_nrt_free``); an entry that allocates fails to compile, which keeps allocation
    out of per-step code. NumPy's error model, as the kernels: x / 0 gives inf or nan as in
    MuJoCo's C (and the flags are stated, so an entry compiled on the way from another never
    inherits different ones)."""
    if fn is None:
        return lambda f: handle_entry(f, returns=returns, args=args, needed=needed, prefetch=prefetch)
    jitted = cached_njit(fn, _nrt=False, error_model="numpy")
    if config.DISABLE_JIT or list(inspect.signature(fn).parameters)[:2] != ["m", "d"]:
        return jitted  # an entry without the data handle is called from Python only: no cell
    return Unit(jitted, returns=returns, args=args, needed=needed, prefetch=prefetch)
