"""Binding: compile the units a model needs, on all cores, and set their cells.

A compiled entry called from Python (``forward``, ``step``, ...) reaches other units through
their cells (:mod:`kinedyn._jit.units`). Before its first call for a model, the binder

1. finds the units the entry can reach for that model: the units its code calls (with its
   static callees, :func:`kinedyn._jit.deps.unit_callees`), then theirs, skipping every unit
   whose ``needed(model)`` is false (a collider for a geom-type pair the model cannot
   produce, a solver it does not select) -- nor what only such a unit calls;
2. compiles those not bound yet, or loads them from the on-disk cache. They do not depend on
   each other's code, so on a cold start they compile at the same time: this process and
   ``KINEDYN_COMPILE_JOBS - 1`` helper processes (default: one per core beyond the first) go
   down the same list, largest first, each taking the next unit no other has claimed, and
   write to the cache; this process then loads the helpers' share;
3. sets their cells.

Each public entry binds once per process on its first call (``FastEntry``), and every model
made afterwards is bound for the entries used so far when it is made (:func:`model_created`),
so a call never finds an empty cell unless a model is changed after it was made in a way that
makes it need another unit (enabling contacts for a geom type it had none of, say): then the
call raises ``NotBound``, and ``forward``/``step`` bind and repeat it (:func:`rebind`).

Helpers can only save time, never change a result: they compile the same functions for the
same types into the same cache, and whatever they did not finish this process compiles itself.
"""

from __future__ import annotations

import base64
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import weakref

from numba import config, njit, typeof
from numba.core.registry import CPUDispatcher

from kinedyn._jit.cache import cache_dir, cache_lazily
from kinedyn._jit.deps import unit_callees
from kinedyn._jit.handles import DataHandleType
from kinedyn._jit.units import UNITS, NotBound, Unit

HELPER_TIMEOUT = 1800  # seconds; a helper that hangs is abandoned, this process compiles the rest

_MODELS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(model handle) -> Model
_ROOTS: dict = {}  # the entries called from Python so far (dict as an ordered set)
_HANDLE_TYPES: list = []  # [(model handle type, data handle type)] once a call has shown them
_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {root: its binding state}


def model_created(model) -> None:
    """Note a new model (its handle is ``model._handle``) and bind what the entries used so far
    need for it."""
    if config.DISABLE_JIT:
        return
    _MODELS[id(model._handle)] = model
    if _ROOTS and _HANDLE_TYPES:
        bind(model, tuple(_ROOTS), *_HANDLE_TYPES[0])


def _model_of(model_handle):
    try:
        return _MODELS[id(model_handle)]
    except KeyError:
        raise RuntimeError("kinedyn: a model handle that no Model registered (make models with "
                           "kd.Model.from_xml_path or its siblings)") from None


def _callees(root):
    func = root.dispatcher.py_func if isinstance(root, Unit) else root.py_func
    return unit_callees(func)


def needed_units(model, roots) -> list[Unit]:
    """The units to bind for ``model`` before ``roots`` (units or jitted functions, called from
    Python) run: every unit a root reaches, skipping units whose ``needed(model)`` is false and
    what only they reach (a root itself only if another root reaches it), and the units declared
    ``prefetch`` for the model (``step``'s entry for the model's integrator: a model's first
    ``forward`` binds it too, so that its first step compiles nothing of its own)."""
    found: dict[str, Unit] = {}
    stack = [callee for root in roots for callee in _callees(root)]
    stack += [u for u in UNITS.values() if u.prefetch is not None and u.prefetch(model)]
    while stack:
        node = stack.pop()
        if node.name in found or (node.needed is not None and not node.needed(model)):
            continue
        found[node.name] = node
        stack.extend(_callees(node))
    return list(found.values())


def bind(model, roots, model_type, data_type) -> None:
    """Compile (in parallel) and bind every unit ``roots`` can reach for ``model``, and the roots
    that are units (Python calls them through their cells, ``dispatch.FastEntry``), so that nothing
    is left to compile after it."""
    units = [u for u in needed_units(model, roots) if not u.is_bound]
    # the roots too (Python calls them through their cells, dispatch.FastEntry)
    units += [r for r in roots if isinstance(r, Unit) and r.extra is not None and not r.is_bound
              and r not in units]
    jobs = {u.name: (u, u.signature(model_type, data_type)) for u in units}
    if not jobs:
        return
    cold = sorted((job for job in jobs.values() if not _is_cached(*job)), key=lambda job: _size(job[0]),
                  reverse=True)
    helpers = _start_helpers(cold)
    try:
        for unit, sig in cold:
            if helpers.claim(unit):
                unit.dispatcher.compile(sig)
    finally:
        helpers.wait()
    for unit, sig in jobs.values():
        unit.dispatcher.compile(sig)  # loads what a helper compiled
    for u in units:
        u.bind(model_type, data_type)


def bind_call(root, args) -> None:
    """Before the first call of ``root`` from Python with ``args`` (handles first): remember the
    handle types and the root, and bind what it needs for the args' model."""
    if config.DISABLE_JIT:
        return
    model = _model_of(args[0])
    # a root called again for an unchanged model (a batch call, say) has nothing to bind: what the
    # units' needed() read is in the model's binding state
    state = model.binding_state()
    done = _BOUND.setdefault(model, {})
    if done.get(root) == state:
        return
    types = (typeof(args[0]), typeof(args[1]))
    if not isinstance(types[1], DataHandleType):  # an entry taking the model handle and arrays
        if not _HANDLE_TYPES:
            raise RuntimeError(f"kinedyn: {root!r} needs units bound before any call with a Data; "
                               "call kd.forward on a Data of this model first")
        types = (types[0], _HANDLE_TYPES[0][1])
    if not _HANDLE_TYPES:
        _HANDLE_TYPES.append(types)
    _ROOTS[root] = None
    bind(model, (root,), *types)
    done[root] = state


def rebind(model, data) -> None:
    """After a NotBound from a call on ``model``: bind again what the entries used so far need
    for it (its fields or options have changed since it was made)."""
    bind(model, tuple(_ROOTS), typeof(model._handle), typeof(data._handle))


class BindingDispatcher(CPUDispatcher):
    """Numba's dispatcher for functions Python may call with the handles first: a call that
    reaches a unit not bound for its model (``NotBound``) binds what the function needs and is
    repeated (kinedyn._jit.bind). No cost otherwise (a ``try``)."""

    def __call__(self, *args, **kws):
        try:
            return super().__call__(*args, **kws)
        except NotBound:
            bind_call(self, args)
            return super().__call__(*args, **kws)


def cached_njit(fn=None, **options):
    """``njit`` cached by the key of its machine code (see :mod:`kinedyn._jit.cache`) and set up
    lazily: a warm start loads the entries a program calls (``forward``, the handle
    constructors, ...) without Numba's compiler initialisation. Numba's defaults (reference
    counting on, Python's error model) are stated, not inherited from a caller; ``options``
    override them."""
    if fn is None:
        return lambda f: cached_njit(f, **options)
    if config.DISABLE_JIT:
        return njit(**options)(fn)
    targetoptions = {"nopython": True, "_nrt": True, "error_model": "python", **options}
    return cache_lazily(BindingDispatcher(py_func=fn, locals={}, targetoptions=targetoptions))


# ---- compiling in helper processes ---------------------------------------------------------------


def _is_cached(unit: Unit, sig) -> bool:
    """Whether ``unit`` is compiled or cached for ``sig`` (no compile needed)."""
    dispatcher = unit.dispatcher
    if sig in dispatcher.overloads:
        return True
    function_cache = getattr(getattr(dispatcher, "_cache", None), "_function_cache", None)
    if function_cache is None:
        return False
    impl = function_cache()
    try:  # Numba's cache index: {(sig, target, bytecode hash): data file}; stamped with deps.stamp
        index = impl._cache_file._load_index()
        return impl._index_key(sig, dispatcher.targetctx.codegen()) in index
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError):
        return False


def _size(unit: Unit) -> int:
    """A rough compile cost, to share the work out: the unit's bytecode."""
    return len(unit.dispatcher.py_func.__code__.co_code) + 200


class _Helpers:
    """Helper processes compiling the same list of units as this process, largest first: each
    process takes the next unit no other has claimed (a file created exclusively in a shared
    directory), so the work is shared out as it goes, whatever each unit costs."""

    def __init__(self, processes=(), claims: str | None = None):
        self.processes = list(processes)
        self.claims = claims

    def claim(self, unit) -> bool:
        return self.claims is None or _claim(self.claims, unit.name)

    def wait(self) -> None:
        for p in self.processes:
            try:
                p.wait(timeout=HELPER_TIMEOUT)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.claims is not None:
            shutil.rmtree(self.claims, ignore_errors=True)


def _claim(claims: str, name: str) -> bool:
    """Whether this process is the first to claim ``name`` in the directory ``claims``."""
    try:
        os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False
    except OSError:  # the directory is gone (the caller finished): nothing left to claim
        return False


def compile_jobs() -> int:
    """How many processes compile at once: ``KINEDYN_COMPILE_JOBS``, else the cores."""
    if os.environ.get("KINEDYN_PARALLEL_COMPILE", "1") == "0":
        return 1
    try:
        return max(1, int(os.environ.get("KINEDYN_COMPILE_JOBS") or os.cpu_count() or 1))
    except ValueError:
        return 1


def _start_helpers(cold: list) -> _Helpers:
    """Start ``compile_jobs() - 1`` helper processes on ``cold`` ((unit, signature) pairs, in the
    order to compile them); this process works on the same list (``_Helpers.claim``)."""
    jobs = min(compile_jobs(), len(cold))
    if jobs < 2:
        return _Helpers()
    try:
        claims = tempfile.mkdtemp(prefix="claims-", dir=os.path.dirname(cache_dir()))
    except OSError:
        return _Helpers()
    env = {**os.environ, "KINEDYN_COMPILE_PROGRESS": "0", "KINEDYN_PARALLEL_COMPILE": "0",
           "KINEDYN_CACHE_DIR": os.path.dirname(cache_dir())}
    names = [(u.dispatcher.py_func.__module__, u.dispatcher.py_func.__qualname__, u.name, sig)
             for u, sig in cold]
    payload = base64.b64encode(pickle.dumps((claims, names))).decode()
    processes = []
    for _ in range(jobs - 1):
        try:
            processes.append(subprocess.Popen([sys.executable, "-m", "kinedyn._jit.bind", payload], env=env,
                                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
        except OSError:
            break
    return _Helpers(processes, claims if processes else None)


def _helper(payload: str) -> None:
    claims, names = pickle.loads(base64.b64decode(payload))
    for module, qualname, name, sig in names:
        if _claim(claims, name):
            obj = getattr(importlib.import_module(module), qualname)
            (obj.dispatcher if isinstance(obj, Unit) else obj).compile(sig)


if __name__ == "__main__":
    _helper(sys.argv[1])
