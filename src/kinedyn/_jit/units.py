"""Units: functions compiled on their own and called through a table of addresses.

Why. Numba links the machine code of every jitted callee into its caller and optimises and
generates the whole result again (``CPUCodeLibrary.finalize``). A pipeline built from
jitted layers (step -> forward -> sensor stage -> geom distance -> collider -> GJK -> ...)
therefore compiles its lowest layers once per layer above them: the cold start grew faster
than the code. A *unit* is a function that is never linked into its callers: its machine code
is generated once, in its own library, and a caller calls it through the address in the unit's
cell of a process-wide table. So:

* each unit compiles once, whoever calls it, and units compile independently of each other
  (a caller needs only the callee's declared signature, not its code): in any order, in
  parallel, and only those a model needs (:mod:`kinedyn._jit.bind`);
* an edit to a unit recompiles that unit only: its callers hold its address, not its code.

How. Every unit owns one 8-byte cell of ``_CELLS`` (a NumPy array allocated once and never
moved). The cell's address is registered with LLVM's dynamic linker as the symbol
``kinedyn.unit.<module>.<name>`` (``llvmlite.binding.add_symbol``), so compiled code
refers to the cell by name, and code loaded from the on-disk cache in a later process finds
that process's cell: no address is ever compiled into code. A call loads the cell; a zero
cell raises :class:`NotBound` (the callee was not bound for this model; the binder binds it
and the call is repeated); otherwise it calls the address with Numba's own calling
convention, so the callee's exceptions propagate as from any jitted call.

A unit takes the model and data handles first (``f(m, d, ...)``); the other arguments and
the result have declared types (``args="int64, float64"``, ``returns="int64"``), which is
what lets a unit be compiled before, after or without its callers. ``needed(model)`` says
whether a model can reach the unit at all (a collider for geom types the model has, the
solver it selects, ...); the binder compiles only those.

Under ``NUMBA_DISABLE_JIT=1`` units are plain functions and calls are plain calls.
"""

from __future__ import annotations

import inspect

import llvmlite.binding as llvm_binding
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, sigutils
from numba.core.errors import TypingError
from numba.core.extending import _Intrinsic

from kinedyn._jit.handles import DataHandleType, ModelHandleType

MAX_UNITS = 2048
# one cell per unit: the address of its compiled code, 0 while unbound. Allocated once: compiled
# code reaches the cells through their symbols, registered below with this array's addresses.
_CELLS = np.zeros(MAX_UNITS, dtype=np.int64)
SYMBOL_PREFIX = "kinedyn.unit."

UNITS: dict[str, Unit] = {}  # name -> unit, in the order they were defined


class NotBound(RuntimeError):  # noqa: N818 -- a state, not an error of the user's
    """A unit was called before it was bound (compiled and its address set) for this model.

    Raised from compiled code with the unit's name; the binder catches it, binds what the model
    needs and repeats the call. It reaches a user only if that fails."""


def unit_name(func) -> str:
    """``engine.sensor.sensor_pos_entry`` for kinedyn.engine.sensor.sensor_pos_entry."""
    module = func.__module__
    if module.startswith("kinedyn."):
        module = module[len("kinedyn."):]
    return f"{module}.{func.__qualname__}"


def _declared(returns: str, args: str):
    """(return type, tuple of argument types after the two handles) from their text."""
    extra, restype = sigutils.normalize_signature(f"{returns}({args})")
    return restype, tuple(extra)


class Unit(_Intrinsic):
    """A separately compiled function (its ``dispatcher``), called from compiled code through its
    cell and from Python as the function itself.

    In compiled code it is an intrinsic: typing checks the call against the declared signature;
    lowering loads the cell and calls the address (see the module docstring)."""

    def __init__(self, dispatcher, returns: str = "none", args: str = "", needed=None, prefetch=None):
        func = dispatcher.py_func
        params = list(inspect.signature(func).parameters)
        if len(params) < 2 or params[:2] != ["m", "d"]:
            raise TypeError(f"a unit takes (m, d, ...): {func.__qualname__}{tuple(params)}")
        self.dispatcher = dispatcher
        self.name = unit_name(func)
        self.returns, self.extra = _declared(returns, args)
        if len(self.extra) != len(params) - 2:
            if args:
                raise TypeError(f"{self.name}: {len(params) - 2} arguments after (m, d), "
                                f"{len(self.extra)} declared")
            self.extra = None  # not declared: callable from Python only
        self.needed = needed
        self.prefetch = prefetch
        self.signature_text = f"{returns}(M, D{', ' if args else ''}{args})"
        earlier = UNITS.get(self.name)
        if earlier is not None:  # its module reloaded: the new function takes over the cell, unbound
            self.index = earlier.index
            _CELLS[self.index] = 0
        else:
            self.index = len(UNITS)
            if self.index >= MAX_UNITS:
                raise RuntimeError("kinedyn._jit.units: raise MAX_UNITS")
        UNITS[self.name] = self
        self.symbol = SYMBOL_PREFIX + self.name
        llvm_binding.add_symbol(self.symbol, _CELLS.ctypes.data + 8 * self.index)
        self.bound_signature = None
        super().__init__(self.name, _typer(self, params))
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__
        self._register()

    # ---- from Python: the function itself --------------------------------------------------------

    def __call__(self, *args):
        # the dispatcher binds what the unit needs if a call finds a cell unbound (bind.BindingDispatcher)
        return self.dispatcher(*args)

    def __getattr__(self, name):  # py_func, compile, overloads, ...: the dispatcher's public names
        # never a private one: Numba's typeof reads ``_numba_type_``, and the dispatcher's would
        # type the unit as a statically linked call
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.__dict__["dispatcher"], name)

    def __repr__(self):
        return f"<unit {self.name} {self.signature_text}>"

    # ---- binding ---------------------------------------------------------------------------------

    def signature(self, model_type, data_type) -> tuple:
        """The argument types the unit is compiled for, given the handles' types."""
        if self.extra is None:
            raise TypeError(f"{self.name} is called from compiled code: declare its arguments after (m, d) "
                            "(handle_entry(args=...))")
        return (model_type, data_type, *self.extra)

    @property
    def is_bound(self) -> bool:
        return bool(_CELLS[self.index])

    def bind(self, model_type, data_type) -> None:
        """Compile (or load from the cache) for the handles' types and set the cell."""
        sig = self.signature(model_type, data_type)
        if self.bound_signature == sig and _CELLS[self.index]:
            return
        if self.bound_signature is not None and self.bound_signature != sig:
            raise RuntimeError(f"{self.name} is bound for other handle types: every model's handles "
                               "must have the same field types")
        self.dispatcher.compile(sig)
        compiled = self.dispatcher.overloads[sig]
        if compiled.signature.return_type != self.returns:
            raise TypeError(f"{self.name} returns {compiled.signature.return_type}, declared {self.returns}")
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        if not address:
            raise RuntimeError(f"{self.name}: no compiled function {compiled.fndesc.llvm_func_name}")
        self.bound_signature = sig
        _CELLS[self.index] = address

    def unbind(self) -> None:
        """Clear the cell (tests: a call then raises NotBound)."""
        _CELLS[self.index] = 0


def _typer(unit: Unit, params: list[str]):
    """The intrinsic's typing function, with the unit's parameters as its own (Numba reads them)."""
    names = ", ".join(params)
    source = f"def call_{unit.index}(typingctx, {names}):\n    return _type_call(unit, ({names},))\n"
    namespace = {"_type_call": _type_call, "unit": unit}
    exec(source, namespace)  # noqa: S102 -- a fixed template with the unit's parameter names
    return namespace[f"call_{unit.index}"]


def _type_call(unit: Unit, argtys: tuple):
    model_type, data_type = argtys[0], argtys[1]
    if unit.extra is None:
        raise TypingError(f"{unit.name} is called from compiled code: declare its arguments after (m, d) "
                          "(handle_entry(args=...))")
    if not isinstance(model_type, ModelHandleType) or not isinstance(data_type, DataHandleType):
        raise TypingError(f"{unit.name} takes the model and data handles first, "
                          f"got ({model_type}, {data_type})")
    for given, declared in zip(argtys[2:], unit.extra, strict=True):
        plain = types.unliteral(given)
        castable = isinstance(declared, types.Number) and isinstance(plain, types.Number | types.Boolean)
        if plain != declared and not castable:
            raise TypingError(f"{unit.name}{unit.signature_text}: argument of type {given}, "
                              f"declared {declared}")
    sig = unit.returns(*unit.signature(model_type, data_type))

    def codegen(context, builder, signature, args):
        return _call_through_cell(context, builder, unit, signature, args)

    return sig, codegen


def _call_through_cell(context, builder, unit: Unit, signature, args):
    """Load the unit's cell; raise NotBound if it is zero; else call the address with Numba's
    calling convention and propagate the callee's exception status."""
    module = builder.module
    cell = module.globals.get(unit.symbol)
    if cell is None:
        cell = ir.GlobalVariable(module, ir.IntType(64), unit.symbol)
        cell.linkage = "external"
    address = builder.load(cell)
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, address)):
        context.call_conv.return_user_exc(builder, NotBound, (unit.name,))
    fnty = context.call_conv.get_function_type(signature.return_type, signature.args)
    callee = builder.inttoptr(address, fnty.as_pointer())
    status, result = context.call_conv.call_function(builder, callee, signature.return_type, signature.args,
                                                     args)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    return result
