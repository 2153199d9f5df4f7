"""Cold start on several cores: compile independent entries in a helper process at the same time.

A model's first ``forward`` compiles a dozen stage entries (each with its kernels) and then
``forward_entry``, which links them. The stage entries do not depend on each other, so
``compile_in_parallel`` hands every other one to a helper process (``python -m
kinedyn._jit.warmup``) that compiles its share into the on-disk cache while this process
compiles the rest; ``forward_entry`` then loads the helper's share from the cache. Nothing
happens when the top entry is already compiled or cached (a warm start), on one core, under
``NUMBA_DISABLE_JIT`` or with ``KINEDYN_PARALLEL_COMPILE=0``. If the helper fails, this
process compiles what is missing itself: the helper can only save time, never change a result
(it compiles the same functions, for the same types, into the same cache).
"""

from __future__ import annotations

import base64
import importlib
import os
import pickle
import subprocess
import sys

from numba import config, typeof

from kinedyn._jit.cache import cache_dir

HELPER_TIMEOUT = 1800  # seconds; a helper that hangs is abandoned, this process compiles the rest


def is_compiled_or_cached(dispatcher, sig) -> bool:
    """Whether calling ``dispatcher`` with argument types ``sig`` needs no compile."""
    if sig in dispatcher.overloads:
        return True
    cache = getattr(dispatcher, "_cache", None)
    function_cache = getattr(cache, "_function_cache", None)
    if function_cache is None:
        return False
    impl = function_cache()
    try:  # Numba's cache index: {(sig, target, bytecode hash): data file}
        key = impl._index_key(sig, dispatcher.targetctx.codegen())
        return key in impl._cache_file._load_index()
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError):
        return False


def _name(dispatcher) -> str:
    func = dispatcher.py_func
    return f"{func.__module__}:{func.__qualname__}"


def compile_in_parallel(top, parts, args, part_args) -> None:
    """Before ``top`` is first compiled for ``args``: compile ``parts`` (dispatchers ``top`` calls,
    each for the types of ``part_args``), half in this process and half in a helper process, so
    that ``top`` finds them compiled."""
    off = os.environ.get("KINEDYN_PARALLEL_COMPILE", "1") == "0"
    if config.DISABLE_JIT or off or (os.cpu_count() or 1) < 2:
        return
    if is_compiled_or_cached(top, tuple(typeof(a) for a in args)):
        return
    sig = tuple(typeof(a) for a in part_args)
    todo = [p for p in parts if not is_compiled_or_cached(p, sig)]
    if len(todo) < 2:
        return
    mine, theirs = todo[0::2], todo[1::2]
    payload = base64.b64encode(pickle.dumps((sig, [_name(p) for p in theirs]))).decode()
    env = {**os.environ, "KINEDYN_COMPILE_PROGRESS": "0", "KINEDYN_PARALLEL_COMPILE": "0",
           "KINEDYN_CACHE_DIR": os.path.dirname(cache_dir())}
    try:
        helper = subprocess.Popen([sys.executable, "-m", "kinedyn._jit.warmup", payload], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
    except OSError:
        return
    try:
        for part in mine:
            part.compile(sig)
    finally:
        try:
            helper.wait(timeout=HELPER_TIMEOUT)
        except subprocess.TimeoutExpired:
            helper.kill()


def _helper(payload: str) -> None:
    sig, names = pickle.loads(base64.b64decode(payload))
    for name in names:  # importing a module of kinedyn imports the package first, as in the parent
        module, qualname = name.split(":")
        getattr(importlib.import_module(module), qualname).compile(sig)


if __name__ == "__main__":
    _helper(sys.argv[1])
