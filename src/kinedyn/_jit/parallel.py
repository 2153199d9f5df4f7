"""Threads for the batch kernels: ``prange`` loops, the thread count, and a lock-free work queue."""

from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np
from numba import config, prange, types
from numba.extending import intrinsic
from numba.typed import List

from kinedyn._jit.bind import cached_njit

__all__ = ["get_thread_id", "parallel_njit", "prange", "take_next", "thread_count", "threads", "typed_list"]

get_thread_id = numba.get_thread_id


def parallel_njit(fn):
    """``njit(parallel=True)`` with the on-disk cache: the function's ``prange`` loops run on threads."""
    return cached_njit(fn, parallel=True)


def typed_list(items: list):
    """``items`` as a Numba typed List (the plain list without the JIT), for a parallel kernel.

    Appended one by one: ``List(items)`` re-types every element, about 60 times slower.
    """
    if config.DISABLE_JIT:
        return items
    out = List()
    for item in items:
        out.append(item)
    return out


def thread_count(nthread) -> int:
    """The count ``threads(nthread)`` runs on (Numba's current count when None), checked."""
    if nthread is None:
        return numba.get_num_threads()
    if not isinstance(nthread, (int, np.integer)) or not 1 <= nthread <= config.NUMBA_NUM_THREADS:
        raise ValueError(f"nthread must be an integer in [1, {config.NUMBA_NUM_THREADS}] "
                         f"(NUMBA_NUM_THREADS), got {nthread!r}")
    return int(nthread)


@contextmanager
def threads(nthread):
    """Run the enclosed parallel kernels on ``nthread`` threads (all of Numba's when None).
    Numba's count is set only when it differs (each set or get costs ~1-2 µs, which a
    derivative of a small model notices)."""
    count = thread_count(nthread)
    previous = count if nthread is None else numba.get_num_threads()
    if previous == count:
        yield count
        return
    numba.set_num_threads(count)
    try:
        yield count
    finally:
        numba.set_num_threads(previous)


if config.DISABLE_JIT:
    def take_next(counter):
        """counter[0] += 1; the value before (one thread without the JIT: no race)."""
        taken = counter[0]
        counter[0] += 1
        return taken
else:
    @intrinsic
    def take_next(typingctx, counter):
        """Atomically counter[0] += 1; the value before (a lock-free queue of work items).

        Numba has no CPU atomics, so this emits LLVM's ``atomicrmw add``. Monotonic order is
        enough: the counter only hands out indices, and the end of the parallel region
        orders every write to the outputs.
        """
        if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
            return None

        def codegen(context, builder, sig, args):
            array = context.make_array(sig.args[0])(context, builder, args[0])
            one = context.get_constant(types.int64, 1)
            return builder.atomic_rmw("add", array.data, one, "monotonic")

        return types.int64(counter), codegen
