"""``Model``: the constants of a compiled model, as flat arrays (MuJoCo's mjModel).

Arrays are in topological order (a body's parent has a smaller index) and are
declared in :mod:`kinedyn.engine.fields`. A model is built by the MJCF compiler
(:func:`Model.from_xml_path`, :func:`Model.from_xml_string`); it is never
half-built: either every field is filled and checked, or ``ModelError`` is raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kinedyn.engine.checks import assign_field, integer, real_number
from kinedyn.engine.fields import MODEL_FIELD, MODEL_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import make_handle
from kinedyn.engine.types import BIAS_USER, DYN_USER, GAIN_USER, IntegratorType
from kinedyn.errors import ModelError, unknown_name_hint

# object kinds with names, as MuJoCo's mjtObj names them in accessors (m.body("x"))
NAMED_KINDS = ("body", "jnt", "geom", "site", "actuator", "tendon", "key")

# integer fields whose values index other arrays (ids, addresses, counts, and the types that
# decide how many coordinates a joint or an actuator's state has): read-only, since a wrong value
# would make kernels read and write out of bounds (whole-field assignment is refused, and the
# public arrays are read-only views, see Model._protect_layout)
LAYOUT_FIELDS = frozenset(
    f.name for f in MODEL_FIELDS
    if f.dtype == np.int32 and not f.name.endswith("_group")
    and f.name not in ("geom_contype", "geom_conaffinity", "geom_condim", "actuator_gaintype",
                       "actuator_biastype", "site_type"))


def _flag_bits(name: str, value) -> int:
    value = integer(name, value)
    if not 0 <= value < 2**31:
        raise ValueError(f"{name} must be a combination of flag bits (0 <= value < 2**31), got {value}")
    return value


class Option:
    """Simulation options (MuJoCo's mjOption); writes reach the kernels at once.

    Attributes:
      timestep: integration step in seconds.
      gravity: (3,) gravitational acceleration.
      integrator: ``IntegratorType`` value.
      disableflags: ``DisableBit`` bits.
      enableflags: ``EnableBit`` bits.
      wind, density, viscosity: kept from the XML; fluid forces are not simulated.
    """

    # no other attributes: a misspelt option (m.opt.timestpe = ...) raises instead of doing nothing
    __slots__ = ("_timestep", "_gravity", "_flags", "wind", "density", "viscosity")

    def __init__(self, timestep=0.002, gravity=(0.0, 0.0, -9.81), integrator=0,
                 disableflags=0, enableflags=0, wind=(0.0, 0.0, 0.0), density=0.0, viscosity=0.0):
        # the kernels read these arrays through the model handle: they are written in place, never rebound
        object.__setattr__(self, "_timestep", np.array([0.002], dtype=np.float64))
        object.__setattr__(self, "_gravity", np.zeros(3))
        object.__setattr__(self, "_flags", np.array([integrator, disableflags, enableflags], dtype=np.int32))
        self.timestep = timestep
        self.gravity = gravity
        self.wind = np.array(wind, dtype=np.float64)
        self.density = float(density)
        self.viscosity = float(viscosity)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            raise AttributeError(f"Option.{name} is internal (the kernels hold this array); "
                                 f"set the public attribute instead")
        object.__setattr__(self, name, value)  # the properties check; unknown names raise (__slots__)

    @property
    def timestep(self) -> float:
        return float(self._timestep[0])

    @timestep.setter
    def timestep(self, value: float) -> None:
        value = real_number("timestep", value)
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"timestep must be finite and positive, got {value}")
        self._timestep[0] = value

    @property
    def gravity(self) -> np.ndarray:
        return self._gravity

    @gravity.setter
    def gravity(self, value) -> None:
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"gravity must be real numbers, got dtype {arr.dtype}")
        try:
            arr = np.broadcast_to(arr.astype(np.float64), (3,))
        except ValueError:
            raise ValueError(f"gravity must be a 3-vector (or one number for all three), got shape "
                             f"{arr.shape}") from None
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"gravity must be finite, got {arr.tolist()}")
        self._gravity[:] = arr

    @property
    def integrator(self) -> int:
        return int(self._flags[0])

    @integrator.setter
    def integrator(self, value: int) -> None:
        value = integer("integrator", value)
        if value not in (IntegratorType.EULER, IntegratorType.RK4, IntegratorType.IMPLICITFAST):
            raise ValueError(f"integrator {value} is not supported (Euler=0, RK4=1, implicitfast=3)")
        self._flags[0] = value

    @property
    def disableflags(self) -> int:
        return int(self._flags[1])

    @disableflags.setter
    def disableflags(self, value: int) -> None:
        self._flags[1] = _flag_bits("disableflags", value)

    @property
    def enableflags(self) -> int:
        return int(self._flags[2])

    @enableflags.setter
    def enableflags(self, value: int) -> None:
        self._flags[2] = _flag_bits("enableflags", value)

    def __repr__(self) -> str:
        return (f"Option(timestep={self.timestep}, gravity={self.gravity.tolist()}, "
                f"integrator={IntegratorType(self.integrator).name}, "
                f"disableflags={self.disableflags}, enableflags={self.enableflags})")


# The MJCF compiler sits above the engine (it builds Models); it registers itself here when
# ``kinedyn`` is imported, so Model.from_xml_* reach it without the engine importing upward.
_COMPILERS: dict[str, object] = {}


def register_compiler(kind: str, compile_fn) -> None:
    """Make ``compile_fn(text, path=, strict=) -> Model`` the compiler of ``kind`` ("mjcf")."""
    _COMPILERS[kind] = compile_fn


def _mjcf_compiler():
    try:
        return _COMPILERS["mjcf"]
    except KeyError:
        raise RuntimeError("no MJCF compiler registered: import kinedyn (not only kinedyn.engine)") from None


@dataclass(frozen=True)
class Named:
    """What ``m.body("name")`` returns: the object's kind, id and name."""

    kind: str
    id: int
    name: str


class Model:
    """Compiled model: sizes, options, names and the arrays of :data:`MODEL_FIELDS`."""

    _kinedyn_kind = "model"  # what engine.checks recognises it by

    # set by Model.set_actuator_callbacks
    _has_actuator_callbacks = False
    # set by _assemble
    opt: Option
    names: dict[str, list[str]]

    @classmethod
    def from_xml_path(cls, path: str | Path, strict: bool = False) -> Model:
        """Compile an MJCF file. ``strict`` turns unsimulated-feature warnings into errors."""
        path = Path(path)
        try:
            # bytes: the XML declaration or a byte order mark gives the encoding (UTF-8 otherwise)
            text = path.read_bytes()
        except OSError as err:
            raise ModelError(f"cannot read model file '{path}': {err.strerror or err}") from None
        except ValueError as err:  # e.g. a NUL character in the path
            raise ModelError(f"cannot read model file {str(path)!r}: {err}") from None
        return _mjcf_compiler()(text, path=path, strict=strict)

    @classmethod
    def from_xml_string(cls, xml: str, strict: bool = False) -> Model:
        """Compile MJCF text. ``strict`` turns unsimulated-feature warnings into errors."""
        return _mjcf_compiler()(xml, path=None, strict=strict)

    @classmethod
    def _assemble(cls, sizes: dict[str, int], arrays: dict[str, np.ndarray], opt: Option,
                  names: dict[str, list[str]]) -> Model:
        """Build a model from compiler output, checking every field against the registry."""
        m = object.__new__(cls)
        for s in SIZE_NAMES:
            object.__setattr__(m, s, int(sizes[s]))
        for spec in MODEL_FIELDS:
            arr = np.ascontiguousarray(arrays[spec.name], dtype=spec.dtype)
            shape = spec.resolve(sizes)
            if arr.shape != shape:
                raise RuntimeError(f"compiler produced {spec.name} with shape {arr.shape}, expected {shape}")
            object.__setattr__(m, spec.name, arr)
        m._protect_layout()
        object.__setattr__(m, "opt", opt)
        for kind in NAMED_KINDS:
            names.setdefault(kind, [])
        object.__setattr__(m, "names", names)
        object.__setattr__(m, "_name_index", {k: {n: i for i, n in enumerate(v) if n}
                                              for k, v in names.items()})
        object.__setattr__(m, "_handle", m._make_handle())
        return m

    def _protect_layout(self) -> None:
        """Show the LAYOUT_FIELDS as read-only views: an in-place write (``m.jnt_qposadr[0] = 99``)
        raises instead of sending the kernels out of bounds. The kernels' handle holds the
        writable arrays (kept in ``_layout``), so its field types are those of every model."""
        layout = {}
        for name in LAYOUT_FIELDS:
            arr = getattr(self, name)
            layout[name] = arr
            view = arr.view()
            view.flags.writeable = False
            object.__setattr__(self, name, view)
        object.__setattr__(self, "_layout", layout)

    def _field(self, name: str) -> np.ndarray:
        """The array of field ``name`` itself (for a layout field, the writable one under the view)."""
        return self._layout[name] if name in LAYOUT_FIELDS else getattr(self, name)

    def _make_handle(self):
        values = {s: getattr(self, s) for s in SIZE_NAMES}
        values.update({spec.name: self._field(spec.name) for spec in MODEL_FIELDS})
        values.update(opt_timestep=self.opt._timestep, opt_gravity=self.opt._gravity,
                      opt_flags=self.opt._flags)
        return make_handle("model", values)

    def __setattr__(self, name, value):
        spec = MODEL_FIELD.get(name)
        if spec is not None:
            if name in LAYOUT_FIELDS:
                raise AttributeError(f"Model.{name} is fixed at compile time: its values index other arrays, "
                                     f"and kernels do not check the bounds")
            # write in place: kernels hold references to these exact arrays
            assign_field(getattr(self, name), value, f"Model.{name}")
        elif name in SIZE_NAMES or name in ("opt", "names"):
            raise AttributeError(f"Model.{name} is fixed at compile time")
        elif name.startswith("_"):
            raise AttributeError(f"Model.{name} is internal")
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"Model.{name} cannot be deleted")

    def copy(self) -> Model:
        """An independent deep copy: its own arrays, options and kernel handle.

        The copy is another model: a ``Data`` made for this one is not accepted with the
        copy (make one with ``kd.Data(copy)``). User-actuator callbacks are carried over.
        ``copy.copy(m)`` and ``copy.deepcopy(m)`` do the same.
        """
        m = object.__new__(type(self))
        for s in SIZE_NAMES:
            object.__setattr__(m, s, getattr(self, s))
        for spec in MODEL_FIELDS:
            object.__setattr__(m, spec.name, self._field(spec.name).copy())
        m._protect_layout()
        o = self.opt
        opt = Option(o.timestep, o.gravity.copy(), o.integrator, o.disableflags, o.enableflags,
                     o.wind.copy(), o.density, o.viscosity)
        object.__setattr__(m, "opt", opt)
        object.__setattr__(m, "names", {k: list(v) for k, v in self.names.items()})
        object.__setattr__(m, "_name_index", {k: dict(v) for k, v in self._name_index.items()})
        # public attributes the compiler or the user added (model_name, ...); not private caches
        # (the IK solver's scratch Data belongs to this model)
        for k, v in vars(self).items():
            if not k.startswith("_") and k not in vars(m):
                object.__setattr__(m, k, v)
        object.__setattr__(m, "_handle", m._make_handle())
        if "_actuator_callbacks" in vars(self):
            m.set_actuator_callbacks(*self._actuator_callbacks)
        return m

    def __copy__(self) -> Model:
        return self.copy()

    def __deepcopy__(self, memo) -> Model:
        return self.copy()

    def __reduce__(self):
        raise TypeError("a kinedyn.Model cannot be pickled (its kernel handle is process memory); "
                        "pickle the MJCF text and compile it again")

    def set_actuator_callbacks(self, dyn=None, gain=None, bias=None) -> None:
        """Register Python callbacks of the model's user-type actuators (None removes one).

        Each is called as ``f(m, d, i) -> float`` for actuator ``i`` when its dyntype,
        gaintype or biastype is "user", exactly where MuJoCo calls ``mjcb_act_dyn``,
        ``mjcb_act_gain`` and ``mjcb_act_bias``: ``dyn`` returns ``act_dot`` (for an actuator
        with several activations it writes ``d.act_dot[actadr:actadr + actnum]`` itself and
        its return value is ignored), ``gain`` the gain and ``bias`` the bias. During the call
        ``d`` holds the position and velocity stages (actuator_length, actuator_velocity, ...).
        All callbacks run before the compiled actuation kernel, so, unlike in MuJoCo, a gain or
        bias callback does not see this evaluation's act_dot or the other actuators' forces.
        Unlike MuJoCo's global callbacks these belong to the model. With a callback set,
        ``forward`` and ``step`` run the actuation stage from Python (the other stages stay
        compiled); RK4 cannot, and raises.
        """
        for name, f in (("dyn", dyn), ("gain", gain), ("bias", bias)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} callback must be callable or None, got {type(f).__name__}")
        object.__setattr__(self, "_actuator_callbacks", (dyn, gain, bias))
        # actuators each callback applies to, precomputed once
        object.__setattr__(self, "_user_actuators", (
            np.flatnonzero(self.actuator_dyntype == DYN_USER) if dyn is not None else np.zeros(0, int),
            np.flatnonzero(self.actuator_gaintype == GAIN_USER) if gain is not None else np.zeros(0, int),
            np.flatnonzero(self.actuator_biastype == BIAS_USER) if bias is not None else np.zeros(0, int)))
        # one flag for the per-call check in forward and step (a plain attribute read)
        object.__setattr__(self, "_has_actuator_callbacks", any(len(ids) for ids in self._user_actuators))

    # ---- names ----------------------------------------------------------------------------------

    def name2id(self, kind: str, name: str) -> int:
        """Id of the object of ``kind`` ("body", "jnt", "geom", "site", "actuator", ...) named ``name``.

        Raises KeyError naming the closest known names.
        """
        index = self._name_index.get(kind)
        if index is None:
            raise KeyError(f"unknown object kind '{kind}'; known: {', '.join(NAMED_KINDS)}")
        if name in index:
            return index[name]
        raise KeyError(f"no {kind} named '{name}'{unknown_name_hint(name, index, '; the model has none')}")

    def id2name(self, kind: str, i: int) -> str:
        """Name of object ``i`` of ``kind`` ("" when it has none)."""
        return self.names[kind][i]

    def _named(self, kind: str, key: str | int) -> Named:
        if isinstance(key, (int, np.integer)):
            n = len(self.names[kind])
            if not 0 <= key < n:
                raise KeyError(f"{kind} id {key} out of range [0, {n})")
            return Named(kind, int(key), self.names[kind][key])
        return Named(kind, self.name2id(kind, key), key)

    def body(self, key: str | int) -> Named:
        return self._named("body", key)

    def joint(self, key: str | int) -> Named:
        return self._named("jnt", key)

    jnt = joint

    def geom(self, key: str | int) -> Named:
        return self._named("geom", key)

    def site(self, key: str | int) -> Named:
        return self._named("site", key)

    def actuator(self, key: str | int) -> Named:
        return self._named("actuator", key)

    def tendon(self, key: str | int) -> Named:
        return self._named("tendon", key)

    def key(self, key: str | int) -> Named:
        return self._named("key", key)

    def __repr__(self) -> str:
        return (f"<kinedyn.Model nq={self.nq} nv={self.nv} nu={self.nu} na={self.na} "
                f"nbody={self.nbody} njnt={self.njnt} ngeom={self.ngeom} nsite={self.nsite}>")
