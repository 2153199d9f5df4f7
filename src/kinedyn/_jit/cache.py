"""Numba's on-disk cache of compiled kernels, as kinedyn uses it.

**Never stale, never recompiled for nothing.** Numba's own cache checks only the file that
defines a function: edit a helper module a kernel calls (``util_spatial.quat_product``, say)
and the kernel's cached machine code, which has the old helper compiled into it, keeps
running. So each kinedyn function's cache entry is stamped with the key of its own machine
code (:func:`kinedyn._jit.deps.stamp`): its code and that of every function compiled into
it, the constants they read, and the names and signatures of the units it calls through
their cells. An edit recompiles exactly the functions whose machine code it changes: a
comment or a docstring changes none, an edit to a collider changes that collider's unit, not
the pipeline above it. The stamp is part of the entry's file name, so versions of a function
sit side by side: undoing an edit finds the older code again, and two checkouts (or branches,
or worktrees) of kinedyn that share a cache never overwrite each other's entries. Entries not
loaded for PRUNE_AFTER_DAYS are deleted (checked at most once a day).

**Where.** ``$KINEDYN_CACHE_DIR``, else ``$NUMBA_CACHE_DIR/kinedyn``, else
``$XDG_CACHE_HOME/kinedyn`` (``~/.cache/kinedyn``); a temporary directory if that cannot
be written. Never next to the sources, so a read-only install works too. Inside it, one
directory per *toolchain key* (:func:`toolchain_key`): the Python, Numba, llvmlite and NumPy
versions and the sources of this JIT layer (the handles' field reads and the unit calls are
compiled into every function); another key's directory unused for 30 days is pruned.

**Fixed flags.** The cache key cannot hold the compile flags, and Numba lets a callee
compiled on the way from another function *inherit* that caller's flags (``_nrt``,
``error_model``; ``CPUTargetOptions.finalize``): a function compiled first from an NRT-free
entry and later called from Python would have been cached, or refused, with the wrong
flags. So every decorator in :mod:`kinedyn._jit` states its flags explicitly.

Everything here touches Numba's private caching API (``FunctionCache`` and its
``_load_overload``, ``_CacheLocator``, ``CompileResultCacheImpl``, ``rtsys.initialize``)
or its import-time behaviour; the reason is given at each use.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from types import ModuleType

from numba.core.caching import CompileResultCacheImpl, FunctionCache, _CacheLocator
from numba.core.runtime import rtsys

PACKAGE = Path(__file__).resolve().parents[1]  # src/kinedyn
JIT_LAYER = Path(__file__).resolve().parent  # its sources are in every compiled function's key
PRUNE_AFTER_DAYS = 30  # another key's directory unused this long is deleted


def toolchain_key() -> str:
    """A hash of the code generators' versions and of this JIT layer's sources."""
    import llvmlite
    import numba
    import numpy

    digest = hashlib.sha256(repr((sys.version, numba.__version__, llvmlite.__version__,
                                  numpy.__version__)).encode())
    for path in sorted(JIT_LAYER.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def cache_root() -> Path:
    """The directory holding one sub-directory per source key."""
    if os.environ.get("KINEDYN_CACHE_DIR"):
        return Path(os.environ["KINEDYN_CACHE_DIR"])
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "kinedyn"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinedyn"


@cache
def cache_dir() -> str:
    """``<root>/<toolchain key>``, made (and marked as used) once per process, on the first cache use."""
    key = toolchain_key()
    root = cache_root()
    path = root / key
    try:
        fresh = not path.is_dir()
        path.mkdir(parents=True, exist_ok=True)
        os.utime(path)  # marks the key as used, for pruning
    except OSError:  # no writable home: a per-user temporary directory
        root = Path(tempfile.gettempdir()) / f"kinedyn-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"
        path = root / key
        fresh = not path.is_dir()
        path.mkdir(parents=True, exist_ok=True)
    if fresh:
        _prune(root, keep=path)
    _prune_entries(path)
    return str(path)


def _prune_entries(path: Path) -> None:
    """At most once a day (a marker file's age): delete the entries of ``path`` (index and data
    files) that were neither written nor loaded for PRUNE_AFTER_DAYS: the versions of functions
    that edits left behind. A load marks its index file (``_LazyFunctionCache.load_overload``)."""
    marker = path / ".pruned"
    now = time.time()
    try:
        if marker.exists() and now - marker.stat().st_mtime < 86400:
            return
        marker.touch()
        cutoff = now - PRUNE_AFTER_DAYS * 86400
        for index in path.glob("*.nbi"):  # an entry: NAME.nbi and its data files NAME.<i>.nbc
            if index.stat().st_mtime < cutoff:
                for data in path.glob(glob.escape(index.stem) + ".*.nbc"):
                    data.unlink(missing_ok=True)
                index.unlink(missing_ok=True)
    except OSError:
        return


def _prune(root: Path, keep: Path) -> None:
    """Delete the directories of other keys unused for PRUNE_AFTER_DAYS (other installs may share root)."""
    cutoff = time.time() - PRUNE_AFTER_DAYS * 86400
    for old in root.iterdir():
        try:
            if old.is_dir() and len(old.name) == 20 and old != keep and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue


class _StampLocator(_CacheLocator):
    """Numba's cache locator for kinedyn's functions: the directory of the toolchain key, and as
    freshness stamp the key of the function's machine code (``deps.stamp``; Numba's own stamp
    hashes only the defining file). No line number in the file names: moving a function within
    its file keeps its entry."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._py_func = py_func

    def get_cache_path(self):
        return cache_dir()

    def ensure_cache_path(self):
        os.makedirs(cache_dir(), exist_ok=True)  # made by cache_dir(); again if deleted meanwhile

    def get_source_stamp(self):
        from kinedyn._jit.deps import stamp

        return stamp(self._py_func)

    def get_disambiguator(self):
        # the stamp in the file name: each version of the function has its own entry (see the
        # module docstring); Numba's index check of the stamp then never fails
        from kinedyn._jit.deps import stamp

        return "k" + stamp(self._py_func)[:16]

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)


class _StampCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_StampLocator]

    def get_filename_base(self, fullname, abiflags):
        # one flat directory for the package: prefix the sub-package (engine/forward.py vs a forward.py)
        folder = Path(self._locator._py_file).resolve().parent
        sub = folder.relative_to(PACKAGE).parts if folder.is_relative_to(PACKAGE) else (folder.name,)
        return super().get_filename_base(".".join((*sub, fullname)), abiflags)


class StampFunctionCache(FunctionCache):
    """Numba's FunctionCache, in the directory of the toolchain key, stamped per function."""

    _impl_class = _StampCacheImpl


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
            self._cache = StampFunctionCache(self._py_func)
        return self._cache

    def __getattr__(self, name):
        return getattr(self._function_cache(), name)

    def load_overload(self, sig, target_context):
        cache = self._function_cache()
        rtsys.initialize(target_context)
        with cache._guard_against_spurious_io_errors():
            loaded = cache._load_overload(sig, target_context)
        if loaded is not None:  # in use: kept by _prune_entries
            try:
                os.utime(cache._cache_file._index_path)
            except OSError:
                pass
        return loaded


def cache_lazily(dispatcher):
    """Turn on on-disk caching for ``dispatcher`` (as ``cache=True`` does), set up on first use."""
    dispatcher._cache = _LazyFunctionCache(dispatcher.py_func)
    return dispatcher
