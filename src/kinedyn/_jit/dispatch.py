"""The decorators kernels and entries are compiled with, and the fast call path.

* ``kernel``: array-only loops, no reference counting, one version per argument type.
* ``handle_entry``: a stage entry ``name_entry(m, d)`` reading the handles.
* ``entry``: an entry that only chains other entries, inlined into its callers.
* ``cached_njit`` (from :mod:`kinedyn._jit.cache`): ``njit(cache=True)`` with the lazy cache.
* ``FastEntry``: call a compiled entry without Numba's dispatcher.
"""

from __future__ import annotations

from numba import config, types
from numba.core.registry import CPUDispatcher

from kinedyn._jit.cache import cache_lazily, cached_njit
from kinedyn._jit.compat import UnsupportedNumbaError
from kinedyn._jit.warmup import compile_in_parallel


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
        return cache_lazily(dispatcher)

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
    """Call a jitted entry through its compiled entry point.

    Numba's dispatcher types every argument and looks up the overload on each call,
    about 0.9 µs for a (model, data) pair of handles. The public wrappers always pass
    the same argument types, so after the first call (which compiles, or loads the
    cache, through the dispatcher) ``call`` *is* the compiled function: public wrappers
    call ``ENTRY.call(...)``, which skips even this object's own Python frame.

    ``parts``: ``(m, d)`` entries this one calls that do not depend on each other; on a cold
    start they are compiled in parallel before this one (``warmup.compile_in_parallel``).
    """

    def __init__(self, dispatcher, parts=()):
        self.dispatcher = dispatcher
        self.parts = tuple(parts)
        self.call = self._first_call

    def _first_call(self, *args):
        if self.parts:
            compile_in_parallel(self.dispatcher, self.parts, args, args[:2])
        result = self.dispatcher(*args)
        if not config.DISABLE_JIT:
            sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
            try:
                self.call = self.dispatcher.overloads[sig].entry_point
            except (AttributeError, KeyError) as err:  # Numba moved its compiled-overload record
                raise UnsupportedNumbaError(f"FastEntry: no compiled entry point: {err!r}") from err
        return result

    def __call__(self, *args):
        return self.call(*args)


def handle_entry(fn):
    """``njit`` for stage entries reading the handles: cached, without reference counting
    (handle fields are borrowed, see ``_register_nrt_free``); an entry that allocates fails
    to compile, which keeps allocation out of per-step code. NumPy's error model, as the
    kernels: x / 0 gives inf or nan as in MuJoCo's C (and the flags are stated, so an entry
    compiled on the way from another never inherits different ones)."""
    return cached_njit(fn, _nrt=False, error_model="numpy")
