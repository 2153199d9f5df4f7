"""``Model``: the constants of a compiled model, as flat arrays (MuJoCo's mjModel).

Arrays are in topological order (a body's parent has a smaller index) and are
declared in :mod:`kinedyn.engine.fields`. A model is built by the MJCF compiler
(:func:`Model.from_xml_path`, :func:`Model.from_xml_string`); it is never
half-built: either every field is filled and checked, or ``ModelError`` is raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kinedyn.engine.fields import MODEL_FIELD, MODEL_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import make_handle
from kinedyn.engine.types import IntegratorType
from kinedyn.errors import ModelError, unknown_name_hint

# object kinds with names, as MuJoCo's mjtObj names them in accessors (m.body("x"))
NAMED_KINDS = ("body", "jnt", "geom", "site", "actuator", "tendon", "key")


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

    def __init__(self, timestep=0.002, gravity=(0.0, 0.0, -9.81), integrator=0,
                 disableflags=0, enableflags=0, wind=(0.0, 0.0, 0.0), density=0.0, viscosity=0.0):
        # the kernels read these arrays through the model handle
        self._timestep = np.array([timestep], dtype=np.float64)
        self._gravity = np.array(gravity, dtype=np.float64)
        self._flags = np.array([integrator, disableflags, enableflags], dtype=np.int32)
        self.wind = np.array(wind, dtype=np.float64)
        self.density = float(density)
        self.viscosity = float(viscosity)

    @property
    def timestep(self) -> float:
        return float(self._timestep[0])

    @timestep.setter
    def timestep(self, value: float) -> None:
        if not value > 0:
            raise ValueError(f"timestep must be positive, got {value}")
        self._timestep[0] = value

    @property
    def gravity(self) -> np.ndarray:
        return self._gravity

    @gravity.setter
    def gravity(self, value) -> None:
        self._gravity[:] = np.broadcast_to(np.asarray(value, dtype=np.float64), (3,))

    @property
    def integrator(self) -> int:
        return int(self._flags[0])

    @integrator.setter
    def integrator(self, value: int) -> None:
        value = int(value)
        if value not in (IntegratorType.EULER, IntegratorType.RK4, IntegratorType.IMPLICITFAST):
            raise ValueError(f"integrator {value} is not supported (Euler=0, RK4=1, implicitfast=3)")
        self._flags[0] = value

    @property
    def disableflags(self) -> int:
        return int(self._flags[1])

    @disableflags.setter
    def disableflags(self, value: int) -> None:
        self._flags[1] = int(value)

    @property
    def enableflags(self) -> int:
        return int(self._flags[2])

    @enableflags.setter
    def enableflags(self, value: int) -> None:
        self._flags[2] = int(value)

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

    # set by Model.set_actuator_callbacks (actuation.set_actuator_callbacks)
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
        object.__setattr__(m, "opt", opt)
        for kind in NAMED_KINDS:
            names.setdefault(kind, [])
        object.__setattr__(m, "names", names)
        object.__setattr__(m, "_name_index", {k: {n: i for i, n in enumerate(v) if n}
                                              for k, v in names.items()})
        object.__setattr__(m, "_handle", m._make_handle())
        return m

    def _make_handle(self):
        values = {s: getattr(self, s) for s in SIZE_NAMES}
        values.update({spec.name: getattr(self, spec.name) for spec in MODEL_FIELDS})
        values.update(opt_timestep=self.opt._timestep, opt_gravity=self.opt._gravity,
                      opt_flags=self.opt._flags)
        return make_handle("model", values)

    def __setattr__(self, name, value):
        spec = MODEL_FIELD.get(name)
        if spec is not None:
            # write in place: kernels hold references to these exact arrays
            target = getattr(self, name)
            value = np.asarray(value)
            if value.shape != target.shape and value.shape != ():
                raise ValueError(f"Model.{name} has shape {target.shape}; cannot assign shape {value.shape}")
            target[...] = value
        elif name in SIZE_NAMES or name in ("opt", "names"):
            raise AttributeError(f"Model.{name} is fixed at compile time")
        else:
            object.__setattr__(self, name, value)

    def set_actuator_callbacks(self, dyn=None, gain=None, bias=None) -> None:
        """Python callbacks ``f(m, d, i) -> float`` for user-type actuators (MuJoCo's mjcb_act_*).

        See :func:`kinedyn.engine.actuation.set_actuator_callbacks`; ``None`` removes a callback.
        """
        from kinedyn.engine.callbacks import set_actuator_callbacks

        set_actuator_callbacks(self, dyn, gain, bias)

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
