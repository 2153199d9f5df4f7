"""What a compiled function's machine code is made of: the key of its on-disk cache, and the
units it calls.

A function's machine code contains the function and every jitted function it calls
*statically* (kernels, helpers: Numba links them in), but not the units it calls through
their cells (:mod:`kinedyn._jit.units`), of which it knows only the name and the signature.
So its cache key (:func:`stamp`) hashes

* the code of the function and of each function in its static closure: the bytecode, the
  constants, the names -- the compiled objects, not the source text, so an edit to a comment, a
  docstring or the blank lines changes nothing, and an edit anywhere else in the file
  changes only the functions it touches;
* the values of the module-level constants they read (Numba freezes them into the code);
* the Numba options each was compiled with;
* the name and declared signature of each unit they call.

:func:`unit_callees` follows the same references to find the units a function can call, which
is how the binder finds what a model needs (:mod:`kinedyn._jit.bind`).

Everything is computed from objects already in memory (code objects and globals): a warm
start pays microseconds per function, no source file is read.
"""

from __future__ import annotations

import hashlib
import types as pytypes
from functools import cache

import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

from kinedyn._jit.units import Unit

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            yield from _code_objects(const)


def _digest_code(h, code, is_function: bool) -> None:
    """Hash a code object without its line numbers and docstring."""
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    consts = code.co_consts[1:] if is_function else code.co_consts  # [0]: the docstring or None
    for const in consts:
        if isinstance(const, pytypes.CodeType):
            _digest_code(h, const, True)
        else:
            h.update(repr(const).encode())


def _referenced(func):
    """The (name, value) of the globals and closure cells ``func``'s code reads."""
    found = {}
    glob = getattr(func, "__globals__", {})
    for code in _code_objects(func.__code__):
        for name in code.co_names:
            if name in glob:
                found[name] = glob[name]
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return found


def _py_func(value):
    """The Python function compiled into a caller that reads ``value``: a jitted function's (not a
    unit's: units are called through their cells), or a plain function of kinedyn's (an overload's
    implementation); else None."""
    if isinstance(value, Unit):
        return None
    if isinstance(value, Dispatcher):
        return value.py_func
    if isinstance(value, pytypes.FunctionType) and (value.__module__ or "").startswith("kinedyn"):
        return value
    return None


def _constant_digest(value) -> bytes | None:
    if isinstance(value, _SCALARS):
        return repr(value).encode()
    if isinstance(value, np.ndarray):
        return repr((value.dtype.str, value.shape)).encode() + value.tobytes()
    if isinstance(value, tuple) and all(isinstance(v, _SCALARS) for v in value):
        return repr(value).encode()
    return None


def _options(value) -> bytes:
    if isinstance(value, Dispatcher):
        return repr(sorted((k, repr(v)) for k, v in value.targetoptions.items())).encode()
    return b""


@cache
def _walk(func) -> tuple[str, tuple]:
    """(digest of func's static closure, the units it can call) -- memoised per function."""
    h = hashlib.sha256()
    units: dict[str, Unit] = {}
    seen: set = set()
    stack = [func]
    while stack:
        f = stack.pop()
        if f in seen:
            continue
        seen.add(f)
        h.update(f"{f.__module__}.{f.__qualname__}\0".encode())
        _digest_code(h, f.__code__, True)
        for name, value in sorted(_referenced(f).items()):
            if isinstance(value, Unit):
                units[value.name] = value
                h.update(f"unit {name} {value.name} {value.signature_text}\0".encode())
                continue
            inner = _py_func(value)
            if inner is not None:
                h.update(f"call {name}\0".encode() + _options(value))
                stack.append(inner)
                continue
            defined_in = getattr(getattr(value, "_defn", None), "__module__", "") or ""
            if isinstance(value, _Intrinsic) and defined_in.startswith("kinedyn"):
                h.update(f"intrinsic {name}\0".encode())
                stack.append(value._defn)
                continue
            const = _constant_digest(value)
            if const is not None:
                h.update(f"const {name}\0".encode() + const)
    return h.hexdigest(), tuple(units.values())


def stamp(func) -> str:
    """The cache key of ``func``'s machine code (see the module docstring)."""
    return _walk(func)[0][:24]


def unit_callees(func) -> tuple:
    """The units ``func``'s code (with its static callees) can call."""
    return _walk(func)[1]
