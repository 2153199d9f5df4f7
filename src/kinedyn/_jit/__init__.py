"""The JIT layer: the only part of kinedyn that imports Numba.

Kernels and entries are written against this package's decorators and helpers, so the
engine reads as plain Python loops and a Numba upgrade touches only these files:

==================  ===========================================================================
``dispatch``        ``kernel``, ``handle_entry``, ``entry`` decorators; ``FastEntry`` call path
``units``           entries compiled on their own, called through a table of addresses
``bind``            compiling the units a model needs (in parallel) and setting their addresses
``deps``            what a function's machine code is made of: its cache key, the units it calls
``cache``           the on-disk cache (lazily set up; loads without compiler initialisation)
``handles``         the Model/Data handle types (StructRef) and their field reads
``parallel``        ``prange`` kernels, the thread count, an atomic work counter
``progress``        one status line on stderr while kernels compile
``compat``          the Numba versions and private names this layer was written for
==================  ===========================================================================

Numba's private API used, and why (each is also explained where it is used):

* ``numba.core.caching.FunctionCache._load_overload`` and ``rtsys.initialize``
  (``cache``): load cached machine code without the compiler's initialisation (warm start).
* ``numba.core.extending.lower_getattr_generic`` / ``lower_setattr_generic``, ``cgutils``,
  ``imputils``, ``structref._Utils``, the NRT MemInfo layout (``handles``): read handle fields
  without reference counting.
* ``numba.core.runtime._nrt_python.meminfo_new``, ``StructRefProxy._numba_box_``, the data model
  of arrays and StructRef payloads (``handles``): build a handle from Python, without compiling.
* ``numba.core.extending._Intrinsic``, ``call_conv.call_function`` on a function pointer,
  ``llvmlite.binding.add_symbol`` (``units``): call a separately compiled unit through its cell.
* ``numba.core.caching`` index keys (``bind``): whether a unit is already cached.
* ``numba.core.dispatcher._FunctionCompiler._compile_core`` and
  ``CPUCodeLibrary._finalize_final_module`` (``dispatch``): kernels compiled into libraries
  that are only linked into units and never generate machine code of their own.
* ``CPUDispatcher.get_call_template`` (``dispatch``): one compiled version per argument type.
* ``Dispatcher.overloads[sig].entry_point`` (``dispatch.FastEntry``): call compiled code directly.
* ``numba.np.arraymath`` import with a placeholder BLAS module (``cache``): start-up time.

``compat.check_numba`` (run on import) refuses a Numba this layer was not written for, and
names any private name above that is missing.
"""

from __future__ import annotations

from kinedyn._jit.compat import check_numba

check_numba()  # before anything below imports Numba's internals

from numba import config  # noqa: E402

from kinedyn._jit.bind import bind_call, cached_njit, model_created, rebind  # noqa: E402
from kinedyn._jit.dispatch import FastEntry, entry, handle_entry, kernel  # noqa: E402
from kinedyn._jit.handles import handle_pointer  # noqa: E402
from kinedyn._jit.progress import install as _install_compile_progress  # noqa: E402
from kinedyn._jit.units import NotBound  # noqa: E402

_install_compile_progress()

__all__ = ["FastEntry", "NotBound", "bind_call", "cached_njit", "entry", "handle_entry", "handle_pointer",
           "jit_disabled", "kernel", "model_created", "rebind"]


def jit_disabled() -> bool:
    """True under ``NUMBA_DISABLE_JIT=1``: kernels run as plain Python."""
    return bool(config.DISABLE_JIT)
