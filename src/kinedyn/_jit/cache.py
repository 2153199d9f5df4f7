"""Numba's on-disk cache of compiled kernels, as kinedyn uses it.

Everything here touches Numba's private caching API (``FunctionCache`` and its
``_load_overload``, ``rtsys.initialize``) or its import-time behaviour; the reason is
given at each use. See :mod:`kinedyn._jit` for the list and the supported versions.
"""

from __future__ import annotations

import sys
from types import ModuleType

from numba import config, njit
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys


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


def cache_lazily(dispatcher):
    """Turn on on-disk caching for ``dispatcher`` (as ``cache=True`` does), set up on first use."""
    dispatcher._cache = _LazyFunctionCache(dispatcher.py_func)
    return dispatcher


def cached_njit(fn, **options):
    """``njit(cache=True, **options)`` with the cache of ``_LazyFunctionCache``: a warm start
    loads the entries a program calls (``forward``, the handle constructors, ...) without
    Numba's compiler initialisation."""
    jitted = njit(**options)(fn)
    return jitted if config.DISABLE_JIT else cache_lazily(jitted)


