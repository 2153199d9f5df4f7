"""``Model``: the constants of a compiled model, as flat arrays (MuJoCo's mjModel).

Arrays are in topological order (a body's parent has a smaller index) and are
declared in :mod:`kinedyn.engine.fields`. A model is built by the MJCF compiler
(:func:`Model.from_xml_path`, :func:`Model.from_xml_string`); it is never
half-built: either every field is filled and checked, or ``ModelError`` is raised.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kinedyn._jit import model_created
from kinedyn.engine.checks import assign_field, integer, real_number
from kinedyn.engine.fields import MODEL_FIELD, MODEL_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import handle_pointer, make_handle
from kinedyn.engine.types import (
    BIAS_USER,
    DYN_USER,
    GAIN_USER,
    OPT_CCD_ITERATIONS,
    OPT_CCD_TOLERANCE,
    OPT_CONE,
    OPT_DENSITY,
    OPT_IMPRATIO,
    OPT_ITERATIONS,
    OPT_JACOBIAN,
    OPT_LS_ITERATIONS,
    OPT_LS_TOLERANCE,
    OPT_NFLAGS,
    OPT_NOSLIP_ITERATIONS,
    OPT_NOSLIP_TOLERANCE,
    OPT_NREAL,
    OPT_O_FRICTION,
    OPT_O_MARGIN,
    OPT_O_SOLIMP,
    OPT_O_SOLREF,
    OPT_SLEEP_TOLERANCE,
    OPT_SOLVER,
    OPT_TOLERANCE,
    OPT_VISCOSITY,
    OPT_WIND,
    ConeType,
    EnableBit,
    IntegratorType,
    JacobianType,
    SolverType,
)
from kinedyn.errors import ModelError, unknown_name_hint

# object kinds with names, as MuJoCo's mjtObj names them in accessors (m.body("x"))
NAMED_KINDS = ("body", "jnt", "geom", "site", "actuator", "tendon", "key", "equality", "sensor", "camera",
               "light", "mesh")

# integer fields whose values index other arrays (ids, addresses, counts, and the types that
# decide how many coordinates a joint or an actuator's state has): read-only, since a wrong value
# would make kernels read and write out of bounds (whole-field assignment is refused, and the
# public arrays are read-only views, see Model._protect_layout)
LAYOUT_FIELDS = frozenset(
    f.name for f in MODEL_FIELDS
    if f.dtype == np.int32 and not f.name.endswith("_group")
    and f.name not in ("geom_contype", "geom_conaffinity", "geom_condim", "actuator_gaintype",
                       "actuator_biastype", "site_type", "tree_sleep_policy"))




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
      wind, density, viscosity: the medium of the fluid forces (velocity (3,), density,
        viscosity); both zero: no fluid forces.
      magnetic: (3,) global magnetic flux (the magnetometer sensor's input).
      solver, cone, jacobian: ``SolverType``, ``ConeType``, ``JacobianType`` values.
      iterations, tolerance: the constraint solver's iteration cap and tolerance.
      ls_iterations, ls_tolerance: its line search's (Newton and CG).
      noslip_iterations, noslip_tolerance: the noslip post-pass (0 iterations: off).
      impratio: ratio of frictional to normal constraint impedance.
      o_margin, o_solref, o_solimp, o_friction: contact overrides (``EnableBit.OVERRIDE``).
      ccd_iterations, ccd_tolerance: the general convex collider's (GJK/EPA) iteration cap and
        tolerance.
      sleep_tolerance: the velocity under which a tree may fall asleep (MuJoCo's sleeping,
        ``EnableBit.SLEEP``, which kinedyn does not simulate).
    """

    # no other attributes: a misspelt option (m.opt.timestpe = ...) raises instead of doing nothing
    __slots__ = ("_timestep", "_gravity", "_magnetic", "_flags", "_real", "_ccd_capacity",
                 "_dual_capacity")

    # the solver options and their defaults (mjOption's), in the order copy() passes them
    SOLVER_OPTIONS = (
        ("solver", 2), ("cone", 0), ("jacobian", 2), ("iterations", 100), ("ls_iterations", 50),
        ("noslip_iterations", 0), ("impratio", 1.0), ("tolerance", 1e-8), ("ls_tolerance", 0.01),
        ("noslip_tolerance", 1e-6), ("o_margin", 0.0), ("o_solref", (0.02, 1.0)),
        ("o_solimp", (0.9, 0.95, 0.001, 0.5, 2.0)), ("o_friction", (1.0, 1.0, 0.005, 0.0001, 0.0001)),
        ("ccd_iterations", 35), ("ccd_tolerance", 1e-6), ("sleep_tolerance", 1e-3))

    def __init__(self, timestep=0.002, gravity=(0.0, 0.0, -9.81), integrator=0,
                 disableflags=0, enableflags=0, wind=(0.0, 0.0, 0.0), density=0.0, viscosity=0.0,
                 magnetic=(0.0, -0.5, 0.0), **solver_options):
        # the kernels read these arrays through the model handle: they are written in place, never rebound
        object.__setattr__(self, "_timestep", np.array([0.002], dtype=np.float64))
        object.__setattr__(self, "_gravity", np.zeros(3))
        object.__setattr__(self, "_magnetic", np.zeros(3))
        flags = np.zeros(OPT_NFLAGS, dtype=np.int32)
        flags[1:3] = disableflags, enableflags  # the integrator last (below): the medium setters check it
        object.__setattr__(self, "_flags", flags)
        object.__setattr__(self, "_real", np.zeros(OPT_NREAL, dtype=np.float64))
        # the most ccd_iterations the model's convex-collider buffers hold (set by the model)
        object.__setattr__(self, "_ccd_capacity", 2**31 - 1)
        # whether the model's Data hold the dual solvers' matrix (PGS, noslip; set by the model)
        object.__setattr__(self, "_dual_capacity", True)
        unknown = set(solver_options) - {k for k, _ in self.SOLVER_OPTIONS}
        if unknown:
            raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
        for key, default in self.SOLVER_OPTIONS:
            setattr(self, key, solver_options.get(key, default))
        self.timestep = timestep
        self.gravity = gravity
        self.magnetic = magnetic
        self.wind = wind
        self.density = density
        self.viscosity = viscosity
        flags[0] = integrator

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
    def magnetic(self) -> np.ndarray:
        return self._magnetic

    @magnetic.setter
    def magnetic(self, value) -> None:
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != (3,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"magnetic must be 3 finite numbers, got {value!r}")
        self._magnetic[:] = arr

    @property
    def integrator(self) -> int:
        return int(self._flags[0])

    @integrator.setter
    def integrator(self, value: int) -> None:
        value = integer("integrator", value)
        if value == IntegratorType.DISCRETE:
            if self._flags[0] != value:
                # what it covers depends on the model, which the compiler checks (engine.metric)
                raise ValueError('the discrete integrator (4) is chosen in the model file, <option '
                                 'integrator="discrete">, where kinedyn checks that it reproduces the model')
            return
        if value not in (IntegratorType.EULER, IntegratorType.RK4, IntegratorType.IMPLICIT,
                         IntegratorType.IMPLICITFAST):
            raise ValueError(f"integrator {value} is not supported "
                             "(Euler=0, RK4=1, implicit=2, implicitfast=3)")
        self._flags[0] = value

    @property
    def wind(self) -> np.ndarray:
        return self._real[OPT_WIND:OPT_WIND + 3]

    @wind.setter
    def wind(self, value) -> None:
        self._vector(OPT_WIND, 3, "wind", value)

    def _set_medium(self, slot, name, value) -> None:
        value = real_number(name, value)
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
        if value != 0.0 and self._flags[0] == IntegratorType.DISCRETE:
            # the compiler refuses fluid forces under the discrete integrator (engine.metric)
            raise ValueError(f"{name}: fluid forces are not simulated under the discrete integrator "
                             "(docs/deviations.md#the-discrete-integrator)")
        self._real[slot] = value

    @property
    def density(self) -> float:
        return float(self._real[OPT_DENSITY])

    @density.setter
    def density(self, value) -> None:
        self._set_medium(OPT_DENSITY, "density", value)

    @property
    def viscosity(self) -> float:
        return float(self._real[OPT_VISCOSITY])

    @viscosity.setter
    def viscosity(self, value) -> None:
        self._set_medium(OPT_VISCOSITY, "viscosity", value)

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
        value = _flag_bits("enableflags", value)
        if (value ^ int(self._flags[2])) & EnableBit.SLEEP:
            raise ValueError("EnableBit.SLEEP cannot be switched on a compiled model (the compiler checks "
                             "what sleeping covers): set <flag sleep=\"enable\"/> in the MJCF")
        self._flags[2] = value

    def _choice(self, slot, enum_type, name, value) -> None:
        value = integer(name, value)
        try:
            enum_type(value)
        except ValueError:
            choices = ", ".join(f"{e.name}={e.value}" for e in enum_type)
            raise ValueError(f"{name} {value} is not one of {choices}") from None
        self._flags[slot] = value

    def _count(self, slot, name, value) -> None:
        value = integer(name, value)
        if not 0 <= value < 2**31:
            raise ValueError(f"{name} must be a non-negative integer, got {value}")
        self._flags[slot] = value

    def _nonneg(self, slot, name, value, positive=False) -> None:
        value = real_number(name, value)
        if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
            raise ValueError(f"{name} must be finite and {'positive' if positive else 'non-negative'}, "
                             f"got {value}")
        self._real[slot] = value

    def _vector(self, slot, n, name, value) -> None:
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf" or arr.shape != (n,):
            raise ValueError(f"{name} must be {n} real numbers, got {value!r}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite, got {arr.tolist()}")
        self._real[slot:slot + n] = arr

    solver = property(lambda self: int(self._flags[OPT_SOLVER]),
                      lambda self, v: self._set_dual(OPT_SOLVER, v))
    cone = property(lambda self: int(self._flags[OPT_CONE]),
                    lambda self, v: self._choice(OPT_CONE, ConeType, "cone", v))
    jacobian = property(lambda self: int(self._flags[OPT_JACOBIAN]),
                        lambda self, v: self._choice(OPT_JACOBIAN, JacobianType, "jacobian", v))
    iterations = property(lambda self: int(self._flags[OPT_ITERATIONS]),
                          lambda self, v: self._count(OPT_ITERATIONS, "iterations", v))
    ls_iterations = property(lambda self: int(self._flags[OPT_LS_ITERATIONS]),
                             lambda self, v: self._count(OPT_LS_ITERATIONS, "ls_iterations", v))
    noslip_iterations = property(lambda self: int(self._flags[OPT_NOSLIP_ITERATIONS]),
                                 lambda self, v: self._set_dual(OPT_NOSLIP_ITERATIONS, v))

    def _set_dual(self, slot, value) -> None:
        """solver and noslip_iterations: PGS and noslip need the dual matrix, which a model compiled
        for neither does not allocate (it is nefcmax squared)."""
        name = "solver" if slot == OPT_SOLVER else "noslip_iterations"
        dual = (integer(name, value) == SolverType.PGS) if slot == OPT_SOLVER else (integer(name, value) > 0)
        if dual and not self._dual_capacity:
            raise ValueError(f"{name} = {value} needs the dual solvers' matrix, which this model's Data do "
                             "not hold (it was compiled without PGS and noslip): set it in the MJCF <option>")
        if slot == OPT_SOLVER:
            self._choice(OPT_SOLVER, SolverType, "solver", value)
        else:
            self._count(OPT_NOSLIP_ITERATIONS, "noslip_iterations", value)
    impratio = property(lambda self: float(self._real[OPT_IMPRATIO]),
                        lambda self, v: self._nonneg(OPT_IMPRATIO, "impratio", v, positive=True))
    tolerance = property(lambda self: float(self._real[OPT_TOLERANCE]),
                         lambda self, v: self._nonneg(OPT_TOLERANCE, "tolerance", v))
    ls_tolerance = property(lambda self: float(self._real[OPT_LS_TOLERANCE]),
                            lambda self, v: self._nonneg(OPT_LS_TOLERANCE, "ls_tolerance", v))
    noslip_tolerance = property(lambda self: float(self._real[OPT_NOSLIP_TOLERANCE]),
                                lambda self, v: self._nonneg(OPT_NOSLIP_TOLERANCE, "noslip_tolerance", v))
    o_margin = property(lambda self: float(self._real[OPT_O_MARGIN]),
                        lambda self, v: self._vector(OPT_O_MARGIN, 1, "o_margin", np.reshape(v, (1,))))
    ccd_iterations = property(lambda self: int(self._flags[OPT_CCD_ITERATIONS]),
                              lambda self, v: self._set_ccd_iterations(v))

    def _set_ccd_iterations(self, value) -> None:
        if integer("ccd_iterations", value) > self._ccd_capacity:
            raise ValueError(f"ccd_iterations {value} is more than the {self._ccd_capacity} this model's "
                             "convex-collider buffers were sized for: set it in the MJCF <option>")
        self._count(OPT_CCD_ITERATIONS, "ccd_iterations", value)
    ccd_tolerance = property(lambda self: float(self._real[OPT_CCD_TOLERANCE]),
                             lambda self, v: self._nonneg(OPT_CCD_TOLERANCE, "ccd_tolerance", v))
    sleep_tolerance = property(lambda self: float(self._real[OPT_SLEEP_TOLERANCE]),
                               lambda self, v: self._nonneg(OPT_SLEEP_TOLERANCE, "sleep_tolerance", v))
    o_solref = property(lambda self: self._real[OPT_O_SOLREF:OPT_O_SOLREF + 2],
                        lambda self, v: self._vector(OPT_O_SOLREF, 2, "o_solref", v))
    o_solimp = property(lambda self: self._real[OPT_O_SOLIMP:OPT_O_SOLIMP + 5],
                        lambda self, v: self._vector(OPT_O_SOLIMP, 5, "o_solimp", v))
    o_friction = property(lambda self: self._real[OPT_O_FRICTION:OPT_O_FRICTION + 5],
                          lambda self, v: self._vector(OPT_O_FRICTION, 5, "o_friction", v))

    def solver_options(self) -> dict:
        """The solver options by name (what ``Option(**...)`` takes)."""
        return {k: (getattr(self, k).copy() if isinstance(getattr(self, k), np.ndarray) else getattr(self, k))
                for k, _ in self.SOLVER_OPTIONS}

    def __repr__(self) -> str:
        return (f"Option(timestep={self.timestep}, gravity={self.gravity.tolist()}, "
                f"integrator={IntegratorType(self.integrator).name}, "
                f"disableflags={self.disableflags}, enableflags={self.enableflags})")


# The MJCF compiler sits above the engine (it builds Models); it registers itself here when
# ``kinedyn`` is imported, so Model.from_xml_* reach it without the engine importing upward.
_COMPILERS: dict[str, object] = {}


def register_compiler(kind: str, compile_fn) -> None:
    """Make ``compile_fn(text, path=, allow_unsupported=) -> Model`` the compiler of ``kind`` ("mjcf")."""
    _COMPILERS[kind] = compile_fn


def _unsupported_policy(allow_unsupported, strict) -> bool:
    """The ``allow_unsupported`` keyword, checked; the deprecated ``strict`` (refusing unsimulated
    features, now the default) only warns."""
    if strict is not None and not strict:
        warnings.warn("strict is deprecated: unsimulated features raise ModelError unless "
                      "allow_unsupported=True (strict=False no longer loads them)", DeprecationWarning,
                      stacklevel=3)
    if not isinstance(allow_unsupported, bool):
        raise TypeError(f"allow_unsupported must be True or False, got {allow_unsupported!r}")
    return allow_unsupported


def _mjcf_compiler():
    try:
        return _COMPILERS["mjcf"]
    except KeyError:
        raise RuntimeError("no MJCF compiler registered: import kinedyn (not only kinedyn.engine)") from None


def _read_model_file(path: Path) -> bytes:
    try:
        # bytes: the XML declaration or a byte order mark gives the encoding (UTF-8 otherwise)
        return path.read_bytes()
    except OSError as err:
        raise ModelError(f"cannot read model file '{path}': {err.strerror or err}") from None
    except ValueError as err:  # e.g. a NUL character in the path
        raise ModelError(f"cannot read model file {str(path)!r}: {err}") from None


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
    def from_xml_path(cls, path: str | Path, *, allow_unsupported: bool = False,
                      strict: bool | None = None, floating_base: bool = False) -> Model:
        """Compile an MJCF file, or a URDF file (a ``<robot>`` root), as MuJoCo's loader does.

        A model that uses a feature which changes the dynamics and which kinedyn does not
        simulate raises ModelError naming it. ``allow_unsupported=True`` loads it anyway, without
        that feature, with one ``UnsimulatedFeatureWarning`` per feature. ``strict`` is
        deprecated and has no effect (refusing is the default). ``floating_base=True`` adds a
        free joint at the root link of a URDF file (as :meth:`from_urdf`); for an MJCF file it
        raises ValueError. A URDF's inertias MuJoCo's compiler refuses are loaded as given, as by
        :meth:`from_urdf` (whose ``package_dirs``, ``inertia`` and ``mass_floor`` options are
        there only).
        """
        allow_unsupported = _unsupported_policy(allow_unsupported, strict)
        path = Path(path)
        options = {"floating_base": True} if floating_base else {}
        return _mjcf_compiler()(_read_model_file(path), path=path, allow_unsupported=allow_unsupported,
                                **options)

    @classmethod
    def from_urdf(cls, path: str | Path, package_dirs=None, *, floating_base: bool = False,
                  allow_unsupported: bool = False, inertia: str = "as_given",
                  mass_floor: float = 0.0, inertia_floor: float = 0.0) -> Model:
        """Compile a URDF file with MuJoCo 4.0's URDF semantics.

        Args:
          path: the ``.urdf`` file.
          package_dirs: a folder or list of folders searched first for the packages of
            ``package://NAME/...`` mesh URIs (each may be the package or its parent, as
            Pinocchio's ``package_dirs``); then the URDF's own folder and its ancestors,
            ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH`` are searched.
          floating_base: add a free joint named ``root_joint`` at the root link, so the robot
            floats (a URDF gives a fixed base unless it has a ``floating`` joint). This is
            Pinocchio's ``buildModelFromUrdf(path, pin.JointModelFreeFlyer())`` and MuJoCo's
            ``MjSpec.from_file(path)`` with ``add_freejoint()`` on the root body; the
            coordinates follow MuJoCo (``qpos`` position then quaternion w, x, y, z;
            ``qvel`` world linear velocity then body angular velocity).
          allow_unsupported: as for :meth:`from_xml_path`.
          inertia: what to do with a link inertia MuJoCo's compiler refuses (not positive
            definite, principal moments violating A + B >= C, a moving link without mass):
            ``"as_given"`` (the default) loads it as written, as Pinocchio does, with one
            ``UnphysicalInertiaWarning`` naming the links and what is unphysical (M and inverse
            dynamics are Pinocchio's; forward dynamics needs M positive definite);
            ``"balance"`` applies MuJoCo's ``balanceinertia`` (moments violating A + B >= C
            replaced by their mean); ``"nearest_pd"`` raises the principal moments that are not
            positive to 1e-6 of the link's largest (the nearest positive-definite inertia with the
            same axes); ``"strict"`` refuses as MuJoCo 4.0 does (ModelError). With the repairs, what
            they leave unphysical is loaded as given and warned about. A ``<mimic>`` naming a
            missing joint is ignored with a warning (an error under ``"strict"``).
          mass_floor: every link's mass raised to at least this (MuJoCo's ``boundmass``), e.g. for
            massless moving links.
          inertia_floor: every link's principal moments raised to at least this (MuJoCo's
            ``boundinertia``); with ``mass_floor``, what makes M positive definite for a robot
            whose moving links have no mass or inertia (romeo's grippers).
        """
        path = Path(path)
        try:
            compile_urdf = _COMPILERS["urdf"]
        except KeyError:
            raise RuntimeError("no URDF compiler: import kinedyn, not only kinedyn.engine") from None
        return compile_urdf(_read_model_file(path), path=path, allow_unsupported=allow_unsupported,
                            package_dirs=package_dirs, floating_base=floating_base, inertia=inertia,
                            mass_floor=mass_floor, inertia_floor=inertia_floor)

    @classmethod
    def from_xml_string(cls, xml: str, *, allow_unsupported: bool = False,
                        strict: bool | None = None) -> Model:
        """Compile MJCF text; ``allow_unsupported`` and ``strict`` as in :meth:`from_xml_path`."""
        allow_unsupported = _unsupported_policy(allow_unsupported, strict)
        return _mjcf_compiler()(xml, path=None, allow_unsupported=allow_unsupported)

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
        # PGS and noslip need the dual matrix, which only models sized for it hold
        object.__setattr__(opt, "_dual_capacity", sizes["nefcdual"] == sizes["nefcmax"])
        object.__setattr__(m, "opt", opt)
        for kind in NAMED_KINDS:
            names.setdefault(kind, [])
        object.__setattr__(m, "names", names)
        object.__setattr__(m, "_name_index", {k: {n: i for i, n in enumerate(v) if n}
                                              for k, v in names.items()})
        object.__setattr__(m, "_handle", m._make_handle())
        object.__setattr__(m, "_ptr", handle_pointer(m._handle))  # what public wrappers pass to kernels
        model_created(m)
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

    def binding_state(self) -> bytes:
        """What decides which compiled units the model needs (kinedyn._jit.bind): the options,
        which geoms take part in contacts, and the fields below. The same bytes mean the same units."""
        o = self.opt
        # with the fields the units' needed() read that a user may edit after compiling (gravity
        # compensation, adhesion, the actuator types and dynamics parameters)
        return b"".join((o._flags.tobytes(), o._real.tobytes(), self.geom_contype.tobytes(),
                         self.geom_conaffinity.tobytes(), self.body_gravcomp.tobytes(),
                         self.geom_adhesion.tobytes(), self.pair_adhesion.tobytes(),
                         self.actuator_dyntype.tobytes(), self.actuator_gaintype.tobytes(),
                         self.actuator_biastype.tobytes(), self.actuator_dynprm.tobytes()))

    def _field(self, name: str) -> np.ndarray:
        """The array of field ``name`` itself (for a layout field, the writable one under the view)."""
        return self._layout[name] if name in LAYOUT_FIELDS else getattr(self, name)

    def _make_handle(self):
        values = {s: getattr(self, s) for s in SIZE_NAMES}
        values.update({spec.name: self._field(spec.name) for spec in MODEL_FIELDS})
        values.update(opt_timestep=self.opt._timestep, opt_gravity=self.opt._gravity,
                      opt_flags=self.opt._flags, opt_real=self.opt._real, opt_magnetic=self.opt._magnetic)
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
                     o.wind.copy(), o.density, o.viscosity, magnetic=o.magnetic.copy(), **o.solver_options())
        object.__setattr__(opt, "_ccd_capacity", o._ccd_capacity)
        object.__setattr__(opt, "_dual_capacity", o._dual_capacity)
        object.__setattr__(m, "opt", opt)
        object.__setattr__(m, "names", {k: list(v) for k, v in self.names.items()})
        object.__setattr__(m, "_name_index", {k: dict(v) for k, v in self._name_index.items()})
        # public attributes the compiler or the user added (model_name, ...); not private caches
        # (the IK solver's scratch Data belongs to this model)
        for k, v in vars(self).items():
            if not k.startswith("_") and k not in vars(m):
                object.__setattr__(m, k, v)
        object.__setattr__(m, "_handle", m._make_handle())
        object.__setattr__(m, "_ptr", handle_pointer(m._handle))  # what public wrappers pass to kernels
        model_created(m)
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

    def control_names(self) -> list[str]:
        """One label per control (``ctrl``, nu of them): the actuator's name (``actuator<i>``
        unnamed), ``name[k]`` for the k-th control of an actuator with several (MuJoCo 4.0's
        ``actuator_ctrladr``/``actuator_ctrlnum`` blocks; a pid's default "pos vel" has two)."""
        out = []
        for a in range(self.nactuator):
            name = self.names["actuator"][a] or f"actuator{a}"
            num = int(self.actuator_ctrlnum[a])
            out += [name] if num == 1 else [f"{name}[{k}]" for k in range(num)]
        return out

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

    def equality(self, key: str | int) -> Named:
        return self._named("equality", key)

    def sensor(self, key: str | int) -> Named:
        return self._named("sensor", key)

    def camera(self, key: str | int) -> Named:
        return self._named("camera", key)

    cam = camera

    def light(self, key: str | int) -> Named:
        return self._named("light", key)

    def mesh(self, key: str | int) -> Named:
        return self._named("mesh", key)

    def __repr__(self) -> str:
        return (f"<kinedyn.Model nq={self.nq} nv={self.nv} nu={self.nu} na={self.na} "
                f"nbody={self.nbody} njnt={self.njnt} ngeom={self.ngeom} nsite={self.nsite}>")
