"""Enumerations and constants, with MuJoCo 4.0's integer values.

The values are MuJoCo's own (``mjtJoint``, ``mjtTrn``, ...), so code written
against the ``mujoco`` bindings ports line by line. Kernels never see these
classes: they compare against the plain ``int`` constants at the bottom of this
module, which Numba folds into the compiled code.
"""

from __future__ import annotations

import enum

# sizes of actuator parameter rows (mjNDYN, mjNGAIN, mjNBIAS) and the numeric floor
NDYN = 10
NGAIN = 10
NBIAS = 10
MINVAL = 1e-15
# mju_isBad and mj_fwdActuation's control check: non-finite or beyond this magnitude (mjMAXVAL)
MAXVAL = 1e10
MINMU = 1e-5  # smallest contact friction coefficient (mjMINMU)


class JointType(enum.IntEnum):
    """mjtJoint. ``FREE`` has 7 qpos / 6 dofs, ``BALL`` 4 / 3, the others 1 / 1."""

    FREE = 0
    BALL = 1
    SLIDE = 2
    HINGE = 3

    @property
    def nq(self) -> int:
        return (7, 4, 1, 1)[self.value]

    @property
    def nv(self) -> int:
        return (6, 3, 1, 1)[self.value]


class GeomType(enum.IntEnum):
    """mjtGeom (the physical types)."""

    PLANE = 0
    HFIELD = 1
    SPHERE = 2
    CAPSULE = 3
    ELLIPSOID = 4
    CYLINDER = 5
    BOX = 6
    MESH = 7
    SDF = 8


class SameFrame(enum.IntEnum):
    """mjtSameFrame: a frame that coincides (within 1e-6) with its body's frame or inertial frame.

    Kinematics copies such frames instead of composing them, as MuJoCo does.
    """

    NONE = 0
    BODY = 1
    INERTIA = 2
    BODYROT = 3
    INERTIAROT = 4


class TrnType(enum.IntEnum):
    """mjtTrn: actuator transmission."""

    JOINT = 0
    JOINTINPARENT = 1
    SLIDERCRANK = 2
    TENDON = 3
    SITE = 4
    BODY = 5


class WrapType(enum.IntEnum):
    """mjtWrap: objects in a tendon's path (a fixed tendon's path holds only JOINT)."""

    NONE = 0
    JOINT = 1
    PULLEY = 2
    SITE = 3
    SPHERE = 4
    CYLINDER = 5


class DynType(enum.IntEnum):
    """mjtDyn: activation dynamics."""

    NONE = 0
    INTEGRATOR = 1
    FILTER = 2
    FILTEREXACT = 3
    MUSCLE = 4
    DCMOTOR = 5  # MuJoCo 4.0's <dcmotor> states (inductance, thermal, LuGre, controller): none simulated
    PID = 6  # MuJoCo 4.0's <pid> states: [slew (slewmax > 0), integral (ki > 0)]
    USER = 7


class GainType(enum.IntEnum):
    """mjtGain: actuator gain."""

    FIXED = 0
    AFFINE = 1
    MUSCLE = 2
    DCMOTOR = 3  # MuJoCo 4.0's <dcmotor>: gainprm = [R, K], voltage-commanded
    PID = 5  # MuJoCo 4.0's <pid>: kp, kv from the affine bias, ki = gainprm[0]
    USER = 6


class BiasType(enum.IntEnum):
    """mjtBias: actuator bias."""

    NONE = 0
    AFFINE = 1
    MUSCLE = 2
    DCMOTOR = 3  # MuJoCo 4.0's <dcmotor>: cogging, biasprm = [amplitude, poles, phase]
    USER = 5


class IntegratorType(enum.IntEnum):
    """mjtIntegrator. ``DISCRETE``: MuJoCo 4.0's step map in the effective metric, for models
    without constraint rows (engine.metric)."""

    EULER = 0
    RK4 = 1
    IMPLICIT = 2
    IMPLICITFAST = 3
    DISCRETE = 4


class DisableBit(enum.IntFlag):
    """mjtDisableBit: bits of ``Option.disableflags``."""

    CONSTRAINT = 1
    EQUALITY = 2
    FRICTIONLOSS = 4
    LIMIT = 8
    CONTACT = 16
    SPRING = 32
    DAMPER = 64
    GRAVITY = 128
    CLAMPCTRL = 256
    WARMSTART = 512
    FILTERPARENT = 1024
    ACTUATION = 2048
    REFSAFE = 4096
    SENSOR = 8192
    MIDPHASE = 16384
    EULERDAMP = 32768
    AUTORESET = 65536
    NATIVECCD = 131072
    ISLAND = 262144
    MULTICCD = 524288


class EnableBit(enum.IntFlag):
    """mjtEnableBit: bits of ``Option.enableflags``."""

    OVERRIDE = 1
    ENERGY = 2
    FWDINV = 4
    INVDISCRETE = 8
    SLEEP = 16


class SleepPolicy(enum.IntEnum):
    """mjtSleepPolicy: a tree's ``tree_sleep_policy``. The compiler turns AUTO into AUTO_NEVER or
    AUTO_ALLOWED; NEVER, ALLOWED and INIT are the root body's ``sleep=``."""

    AUTO = 0
    AUTO_NEVER = 1
    AUTO_ALLOWED = 2
    NEVER = 3
    ALLOWED = 4
    INIT = 5


class EqType(enum.IntEnum):
    """mjtEq: equality constraint types (FLEX and later are not supported)."""

    CONNECT = 0
    WELD = 1
    JOINT = 2
    TENDON = 3
    FLEX = 4
    FLEXVERT = 5
    FLEXSTRAIN = 6


class ObjType(enum.IntEnum):
    """mjtObj, the values equality constraints use in ``eq_objtype``."""

    UNKNOWN = 0
    BODY = 1
    XBODY = 2
    JOINT = 3
    DOF = 4
    GEOM = 5
    SITE = 6
    CAMERA = 7
    LIGHT = 8
    FLEX = 9
    MESH = 10
    SKIN = 11
    HFIELD = 12
    TEXTURE = 13
    MATERIAL = 14
    PAIR = 15
    EXCLUDE = 16
    EQUALITY = 17
    TENDON = 18
    ACTUATOR = 19


class SensorType(enum.IntEnum):
    """mjtSensor: ``sensor_type`` values (MuJoCo 4.0)."""

    TOUCH = 0
    ACCELEROMETER = 1
    VELOCIMETER = 2
    GYRO = 3
    FORCE = 4
    TORQUE = 5
    MAGNETOMETER = 6
    RANGEFINDER = 7
    CAMPROJECTION = 8
    JOINTPOS = 9
    JOINTVEL = 10
    TENDONPOS = 11
    TENDONVEL = 12
    ACTUATORPOS = 13
    ACTUATORVEL = 14
    ACTUATORFRC = 15
    JOINTACTFRC = 16
    TENDONACTFRC = 17
    BALLQUAT = 18
    BALLANGVEL = 19
    JOINTLIMITPOS = 20
    JOINTLIMITVEL = 21
    JOINTLIMITFRC = 22
    TENDONLIMITPOS = 23
    TENDONLIMITVEL = 24
    TENDONLIMITFRC = 25
    FRAMEPOS = 26
    FRAMEQUAT = 27
    FRAMEXAXIS = 28
    FRAMEYAXIS = 29
    FRAMEZAXIS = 30
    FRAMELINVEL = 31
    FRAMEANGVEL = 32
    FRAMELINACC = 33
    FRAMEANGACC = 34
    SUBTREECOM = 35
    SUBTREELINVEL = 36
    SUBTREEANGMOM = 37
    INSIDESITE = 38
    GEOMDIST = 39
    GEOMNORMAL = 40
    GEOMFROMTO = 41
    CONTACT = 42
    E_POTENTIAL = 43
    E_KINETIC = 44
    CLOCK = 45
    TACTILE = 46
    PLUGIN = 47
    USER = 48


class CamLightMode(enum.IntEnum):
    """mjtCamLight: how a camera or a light moves with its body (engine.camlight)."""

    FIXED = 0          # fixed in the body frame
    TRACK = 1          # follows the body's position, keeps its world orientation of qpos0
    TRACKCOM = 2       # follows the subtree com, keeps its world orientation of qpos0
    TARGETBODY = 3     # fixed in the body, looks at the target body
    TARGETBODYCOM = 4  # fixed in the body, looks at the target's subtree com


class ConstraintType(enum.IntEnum):
    """mjtConstraint: the type of each constraint row (``efc_type``)."""

    EQUALITY = 0
    FRICTION_DOF = 1
    FRICTION_TENDON = 2
    LIMIT_JOINT = 3
    LIMIT_TENDON = 4
    CONTACT_FRICTIONLESS = 5
    CONTACT_PYRAMIDAL = 6
    CONTACT_ELLIPTIC = 7


class ConstraintState(enum.IntEnum):
    """mjtConstraintState: the state of each row after the solver (``efc_state``)."""

    SATISFIED = 0
    QUADRATIC = 1
    LINEARNEG = 2
    LINEARPOS = 3
    CONE = 4


class SolverType(enum.IntEnum):
    """mjtSolver: ``Option.solver``."""

    PGS = 0
    CG = 1
    NEWTON = 2


class ConeType(enum.IntEnum):
    """mjtCone: ``Option.cone``."""

    PYRAMIDAL = 0
    ELLIPTIC = 1


class JacobianType(enum.IntEnum):
    """mjtJacobian: ``Option.jacobian`` (auto: sparse when nv >= 60)."""

    DENSE = 0
    SPARSE = 1
    AUTO = 2


# plain ints for kernels (Numba treats module-level ints as compile-time constants)
CAMLIGHT_FIXED = int(CamLightMode.FIXED)
CAMLIGHT_TRACK = int(CamLightMode.TRACK)
CAMLIGHT_TRACKCOM = int(CamLightMode.TRACKCOM)
CAMLIGHT_TARGETBODY = int(CamLightMode.TARGETBODY)
CAMLIGHT_TARGETBODYCOM = int(CamLightMode.TARGETBODYCOM)

JNT_FREE = int(JointType.FREE)
JNT_BALL = int(JointType.BALL)
JNT_SLIDE = int(JointType.SLIDE)
JNT_HINGE = int(JointType.HINGE)

SAMEFRAME_NONE = int(SameFrame.NONE)
SAMEFRAME_BODY = int(SameFrame.BODY)
SAMEFRAME_INERTIA = int(SameFrame.INERTIA)
SAMEFRAME_BODYROT = int(SameFrame.BODYROT)
SAMEFRAME_INERTIAROT = int(SameFrame.INERTIAROT)

TRN_JOINT = int(TrnType.JOINT)
TRN_JOINTINPARENT = int(TrnType.JOINTINPARENT)
TRN_SLIDERCRANK = int(TrnType.SLIDERCRANK)
TRN_TENDON = int(TrnType.TENDON)
TRN_SITE = int(TrnType.SITE)
TRN_BODY = int(TrnType.BODY)

WRAP_JOINT = int(WrapType.JOINT)
WRAP_PULLEY = int(WrapType.PULLEY)
WRAP_SITE = int(WrapType.SITE)
WRAP_SPHERE = int(WrapType.SPHERE)
WRAP_CYLINDER = int(WrapType.CYLINDER)

DYN_NONE = int(DynType.NONE)
DYN_INTEGRATOR = int(DynType.INTEGRATOR)
DYN_FILTER = int(DynType.FILTER)
DYN_FILTEREXACT = int(DynType.FILTEREXACT)
DYN_MUSCLE = int(DynType.MUSCLE)
DYN_DCMOTOR = int(DynType.DCMOTOR)
DYN_PID = int(DynType.PID)
DYN_USER = int(DynType.USER)

GAIN_FIXED = int(GainType.FIXED)
GAIN_AFFINE = int(GainType.AFFINE)
GAIN_MUSCLE = int(GainType.MUSCLE)
GAIN_DCMOTOR = int(GainType.DCMOTOR)
GAIN_PID = int(GainType.PID)
GAIN_USER = int(GainType.USER)

BIAS_NONE = int(BiasType.NONE)
BIAS_AFFINE = int(BiasType.AFFINE)
BIAS_MUSCLE = int(BiasType.MUSCLE)
BIAS_DCMOTOR = int(BiasType.DCMOTOR)
BIAS_USER = int(BiasType.USER)

GEOM_PLANE = int(GeomType.PLANE)
GEOM_HFIELD = int(GeomType.HFIELD)
GEOM_SPHERE = int(GeomType.SPHERE)
GEOM_CAPSULE = int(GeomType.CAPSULE)
GEOM_ELLIPSOID = int(GeomType.ELLIPSOID)
GEOM_CYLINDER = int(GeomType.CYLINDER)
GEOM_BOX = int(GeomType.BOX)
GEOM_MESH = int(GeomType.MESH)

INT_EULER = int(IntegratorType.EULER)
INT_RK4 = int(IntegratorType.RK4)
INT_IMPLICITFAST = int(IntegratorType.IMPLICITFAST)
INT_IMPLICIT = int(IntegratorType.IMPLICIT)
INT_DISCRETE = int(IntegratorType.DISCRETE)

DSBL_GRAVITY = int(DisableBit.GRAVITY)
DSBL_SPRING = int(DisableBit.SPRING)
DSBL_DAMPER = int(DisableBit.DAMPER)
DSBL_ACTUATION = int(DisableBit.ACTUATION)
DSBL_CLAMPCTRL = int(DisableBit.CLAMPCTRL)
DSBL_EULERDAMP = int(DisableBit.EULERDAMP)
DSBL_CONSTRAINT = int(DisableBit.CONSTRAINT)
DSBL_EQUALITY = int(DisableBit.EQUALITY)
DSBL_FRICTIONLOSS = int(DisableBit.FRICTIONLOSS)
DSBL_LIMIT = int(DisableBit.LIMIT)
DSBL_CONTACT = int(DisableBit.CONTACT)
DSBL_WARMSTART = int(DisableBit.WARMSTART)
DSBL_REFSAFE = int(DisableBit.REFSAFE)
DSBL_ISLAND = int(DisableBit.ISLAND)
DSBL_FILTERPARENT = int(DisableBit.FILTERPARENT)
DSBL_MIDPHASE = int(DisableBit.MIDPHASE)
DSBL_MULTICCD = int(DisableBit.MULTICCD)
ENBL_OVERRIDE = int(EnableBit.OVERRIDE)
ENBL_FWDINV = int(EnableBit.FWDINV)
ENBL_INVDISCRETE = int(EnableBit.INVDISCRETE)
ENBL_SLEEP = int(EnableBit.SLEEP)

JAC_SPARSE = int(JacobianType.SPARSE)
JAC_AUTO = int(JacobianType.AUTO)
EQ_CONNECT = int(EqType.CONNECT)
EQ_WELD = int(EqType.WELD)
EQ_JOINT = int(EqType.JOINT)
EQ_TENDON = int(EqType.TENDON)
EQ_FLEX = int(EqType.FLEX)
OBJ_BODY = int(ObjType.BODY)
OBJ_SITE = int(ObjType.SITE)

CNSTR_EQUALITY = int(ConstraintType.EQUALITY)
CNSTR_FRICTION_DOF = int(ConstraintType.FRICTION_DOF)
CNSTR_FRICTION_TENDON = int(ConstraintType.FRICTION_TENDON)
CNSTR_LIMIT_JOINT = int(ConstraintType.LIMIT_JOINT)
CNSTR_LIMIT_TENDON = int(ConstraintType.LIMIT_TENDON)
CNSTR_CONTACT_FRICTIONLESS = int(ConstraintType.CONTACT_FRICTIONLESS)
CNSTR_CONTACT_PYRAMIDAL = int(ConstraintType.CONTACT_PYRAMIDAL)
CNSTR_CONTACT_ELLIPTIC = int(ConstraintType.CONTACT_ELLIPTIC)

CNSTRSTATE_SATISFIED = int(ConstraintState.SATISFIED)
CNSTRSTATE_QUADRATIC = int(ConstraintState.QUADRATIC)
CNSTRSTATE_LINEARNEG = int(ConstraintState.LINEARNEG)
CNSTRSTATE_LINEARPOS = int(ConstraintState.LINEARPOS)
CNSTRSTATE_CONE = int(ConstraintState.CONE)

SOL_PGS = int(SolverType.PGS)
SOL_CG = int(SolverType.CG)
SOL_NEWTON = int(SolverType.NEWTON)
CONE_PYRAMIDAL = int(ConeType.PYRAMIDAL)
CONE_ELLIPTIC = int(ConeType.ELLIPTIC)

# number of eq_data values per equality (mjNEQDATA), of solimp (mjNIMP) and solref (mjNREF)
NEQDATA = 12
NIMP = 5
NREF = 2
# higher-order coefficients of polynomial springs and dampers (mjNPOLY): [b, c] of a x + b x^2 + c x^3
NPOLY = 2

# entries of the model handle's opt_flags (Option): m.opt_flags[OPT_DISABLEFLAGS] is MuJoCo's
# m->opt.disableflags
OPT_INTEGRATOR, OPT_DISABLEFLAGS, OPT_ENABLEFLAGS = 0, 1, 2
# further integer options in opt_flags: mjOption's solver, cone, jacobian and iteration counts
OPT_SOLVER, OPT_CONE, OPT_JACOBIAN = 3, 4, 5
OPT_ITERATIONS, OPT_LS_ITERATIONS, OPT_NOSLIP_ITERATIONS = 6, 7, 8
OPT_CCD_ITERATIONS = 9  # the convex collider's iteration cap
OPT_NFLAGS = 10
# entries of the model handle's opt_real (Option): the solver's real-valued options
OPT_IMPRATIO, OPT_TOLERANCE, OPT_LS_TOLERANCE, OPT_NOSLIP_TOLERANCE, OPT_O_MARGIN = 0, 1, 2, 3, 4
OPT_O_SOLREF = 5      # 2 values
OPT_O_SOLIMP = 7      # 5 values
OPT_O_FRICTION = 12   # 5 values
OPT_CCD_TOLERANCE = 17  # the convex collider's tolerance
OPT_WIND = 18         # 3 values: the medium's velocity (fluid forces)
OPT_DENSITY, OPT_VISCOSITY = 21, 22  # the medium's density and viscosity (fluid forces)
OPT_SLEEP_TOLERANCE = 23  # the velocity under which a tree may fall asleep (EnableBit.SLEEP)
OPT_NREAL = 24


# entries of Data.efc_counts: the live row and contact counts (Data.ne, .nf, .nl, .nefc, .ncon) and the
# geom pairs or contacts the last collision or constraint stage found no room for (mjWARN_CONTACTFULL)
COUNT_NE, COUNT_NF, COUNT_NL, COUNT_NEFC, COUNT_NCON, COUNT_DROPPED = range(6)
# entries of Data.scratch_solver_counts: line-search evaluations, solver iterations, whether the rows have
# elliptic cones, and rank-1 downdates since the Hessian's last full factor
SOLVER_LS_EVALS, SOLVER_ITERATIONS, SOLVER_CONES, SOLVER_DOWNDATES = range(4)

# MuJoCo's warning counters (mjData.warning, indexed by mjtWarning): the ones kinedyn counts, where it
# raises the matching Python warning (Data.warning_counts)
WARN_CONTACTFULL, WARN_BADQPOS, WARN_BADQVEL, WARN_BADQACC = 1, 3, 4, 5
NWARNING = 7  # mjNWARNING
