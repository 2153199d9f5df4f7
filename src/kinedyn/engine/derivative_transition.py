"""Analytical derivatives of one step: A, B, C, D in mjd_transitionFD's layout, by the chain rule.

MuJoCo computes these only by finite differences (mjd_transitionFD, engine_derivative_fd.c); its
analytical pieces are the velocity derivatives of the smooth forces (mjd_smooth_vel) and of the
quaternion integration (mjd_quatIntegrate). Here the whole step is differentiated:

* the rigid-body part by ``derivative_rne`` (Carpentier-Mansard over MuJoCo's com-based quantities),
  evaluated at the acceleration the integrator uses, so that its q-derivative carries dM/dq qacc;
* the actuators: force f = gain(l, v) * input + bias(l, v) (mj_fwdActuation), its partials in the
  transmission's length and velocity, in the input, and the input's in ctrl and act (clamps,
  actearly, filter/filterexact/integrator/muscle activation dynamics);
* the passive springs and dampers of joints (polynomial ones too, mj_springdamper; ball and free
  joints' through the inverse right Jacobian of SO(3), ``_ball_spring_partials``), the springs
  and dampers of fixed tendons; gravity compensation (mj_gravcomp, ``gravcomp_partials_entry``);
  the fluid forces under Euler (derivative_fluid's ``fluid_partials_entry``);
* the integrator's system matrix K (M for Euler; M + h diag(B) with eulerdamp; implicitfast's
  M - h D gathered into M's sparsity as mj_implicitSkip does; implicit's M - h qDeriv with the
  RNE bias's velocity derivative, LU-factored): K qacc = f, hence K dqacc = df - dK qacc, with
  the last term from the damper and actuator derivatives and, for implicit, the bias's
  (``bias_curvature_entry``);
* the position update on MuJoCo's tangent space (mj_integratePos; for a ball or a free joint's
  rotation, q' = q exp(h w'): d' = R(h w')^T d + h Jr(h w') dw', Jr the right Jacobian of SO(3)),
  and the activation update (mj_nextActivation, with its actrange clamp).

* the constraint force at the solver's optimum (``derivative_constraint``: G_q, G_v and
  H = -d qfrc_constraint/d qacc, every row's zone and the contact set held): forward's qacc
  satisfies M qacc + bias = f + qfrc_constraint(q, v, qacc), hence (M + H) dqacc_fwd =
  df - d(M qacc + bias) + G_q dq + G_v dv (the implicit function theorem on MuJoCo's convex
  problem). Plain Euler steps with that qacc; with eulerdamp, implicit or implicitfast the integrator's
  system K qacc = qfrc_smooth + qfrc_constraint takes d qfrc_constraint = G_q dq + G_v dv -
  H dqacc_fwd. (G_q is analytical for the rows and contact geometries derivative_collision
  covers, a central difference of the held-zone force for the others: see that module.)

* what a moment arm moving with the state adds (``derivative_transmission``): xfrc_applied, spatial
  tendons (their springs, dampers and actuators), site, slider-crank and jointinparent
  transmissions, ball/free/site lengths, their terms in implicit's matrix, and the
  actuatorfrcrange clamps.

* the sensors whose value is a function of the position and velocity stages' kinematics
  (``sensor_rows_entry``, ``_frame_rows``, ``_subtree_com_rows``); those that need the
  kinematics' second derivatives (frame sensors with a reference frame, the subtree velocity
  sensors, a spatial tendon's velocity) in derivative_sensor's unit; the acceleration stage's
  (accelerometer, force, torque, frame accelerations) in its other unit, from forward's dqacc
  (``_constrained_forward``, run for them also without constraint rows).

Where the derivative is one-sided (a ctrl, act or force exactly at the edge of its range), the
value inside the range is returned, as mjd_transitionFD's one-sided differences see it; a clamp
strictly engaged gives zero. Anything else the model uses is refused with a ValueError naming it
(``_refusals``, run by the unit on every call): never a wrong number. All of it is dense linear
algebra on (nv, nv) blocks and a few per-actuator scalars, in one unit
(``transition_derivatives_entry``: the refusals, the state copied in, forward, then the chain
rule), compiled the first time transition_derivatives is called; it calls derivative_rne's kernels.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, NotBound, handle_entry, kernel, rebind
from kinedyn.engine.derivative import (
    _free_body_implicit,
    _is_free_body,
    _solve_dense,
    dof_damping_deriv,
    eulerdamp_active,
    free_body_mhat,
    implicit_lu_entry,
    implicit_matrix,
    rne_vel,
)
from kinedyn.engine.derivative_constraint import STATUS_OK, constraint_derivatives_entry, work_shapes
from kinedyn.engine.derivative_fluid import fluid_partials_entry
from kinedyn.engine.derivative_rne import dof_groups, rne_derivs_q, rne_derivs_qv, rne_partials, solve_ld_rows
from kinedyn.engine.derivative_sensor import (
    ACC_SENSORS,
    JAC_ROWS,
    R_SENSOR_EXTERNAL,
    acc_rows,
    more_rows,
    point_velocity_dq,
    sensor_acc_rows_entry,
    sensor_more_rows_entry,
    spatial_tendon_wraps,
)
from kinedyn.engine.derivative_transmission import (
    K_BALL,
    K_CONSTANT,
    K_FREE,
    K_OTHER,
    K_REFSITE,
    K_SITE,
    actfrc_clamped,
    actuator_sensor_rows_entry,
    actuators_on_tendon,
    any_actfrc,
    clamp_gravcomp_rows,
    copy_xfrc,
    inv_right_jacobian,
    moment_kind,
    system_partials,
    tendon_clamp,
    tendon_partials,
    tendon_through_sites,
    transmission_partials,
    xfrc_partials,
)
from kinedyn.engine.forward import forward_entry, forward_skip_sensor_entry
from kinedyn.engine.passive_plastic import rotation_from_ref
from kinedyn.engine.smooth_inertia import factor_i, full_m_kernel, solve_ld
from kinedyn.engine.smooth_rne import com_vel_entry
from kinedyn.engine.smooth_tendon import is_fixed_tendon
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    BIAS_AFFINE,
    BIAS_MUSCLE,
    BIAS_NONE,
    COUNT_NEFC,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DSBL_CONSTRAINT,
    DSBL_DAMPER,
    DSBL_GRAVITY,
    DSBL_SPRING,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_INTEGRATOR,
    DYN_MUSCLE,
    DYN_NONE,
    GAIN_AFFINE,
    GAIN_FIXED,
    GAIN_MUSCLE,
    INT_EULER,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    JNT_BALL,
    JNT_FREE,
    MINVAL,
    OPT_DENSITY,
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    OPT_NOSLIP_ITERATIONS,
    OPT_VISCOSITY,
    TRN_TENDON,
    IntegratorType,
    ObjType,
    SensorType,
)
from kinedyn.engine.util_linalg3 import cross3
from kinedyn.engine.util_poly import dof_damping_poly, poly_force_deriv, tendon_damping_poly
from kinedyn.engine.util_solve import chol_factor, factor_lu_tree, solve_lu_tree
from kinedyn.engine.util_spatial import cross_motion, quat_product, row6

# sensors differentiated here: their value is linear in qpos/qvel, or an actuator quantity
SENSORS_COVERED = frozenset({
    SensorType.JOINTPOS, SensorType.JOINTVEL, SensorType.TENDONPOS, SensorType.TENDONVEL,
    SensorType.ACTUATORPOS, SensorType.ACTUATORVEL, SensorType.ACTUATORFRC, SensorType.JOINTACTFRC,
    SensorType.CLOCK, SensorType.FRAMEPOS, SensorType.FRAMEQUAT, SensorType.FRAMEXAXIS, SensorType.FRAMEYAXIS,
    SensorType.FRAMEZAXIS, SensorType.FRAMELINVEL, SensorType.FRAMEANGVEL, SensorType.VELOCIMETER,
    SensorType.GYRO, SensorType.BALLQUAT, SensorType.BALLANGVEL, SensorType.SUBTREECOM,
    SensorType.SUBTREELINVEL, SensorType.SUBTREEANGMOM, *ACC_SENSORS,
})
_SENSOR_COVERED = np.zeros(max(int(t) for t in SensorType) + 1, dtype=np.bool_)
_SENSOR_COVERED[[int(t) for t in SENSORS_COVERED]] = True
# frame sensors' objects differentiated (bodies, geoms and sites, without a reference frame)
_OBJ_BODY, _OBJ_XBODY, _OBJ_GEOM = int(ObjType.BODY), int(ObjType.XBODY), int(ObjType.GEOM)
_OBJ_SITE = int(ObjType.SITE)


# What the unit refuses, as (code, index) rows written by ``_refusals`` (compiled: checked on
# every call, so a model array changed in place is still caught, at no cost worth measuring);
# the wrapper turns them into the ValueError's text (``refusal_text``). Codes from R_SENSOR on
# are the sensors not differentiated: refused with sensors="analytical", filled by finite
# differences with sensors="fd".
(R_INTEGRATOR, R_NOSLIP, R_FLUID, R_XFRC, R_TENDON_ARMATURE, R_BALL_SPRING, R_TENDON_SPRING,
 R_SPATIAL_TENDON, R_JNT_ACTFRC, R_TRANSMISSION, R_USER, R_MULTI_ACT, R_MUSCLE_IMPLICIT,
 R_ACTGRAVCOMP, R_PLASTIC) = range(1, 16)
R_SENSOR = 20
R_SENSOR_TYPE, R_SENSOR_SPATIAL, R_SENSOR_TRN = 20, 21, 24  # derivative_sensor's R_SENSOR_EXTERNAL: 23


def refusal_text(m, code: int, i: int) -> str:
    """The message of one refusal row (``_refusals``)."""
    if code == R_INTEGRATOR:
        return f"the {IntegratorType(i).name} integrator (Euler, implicit and implicitfast are covered)"
    if code >= R_SENSOR:
        what = {R_SENSOR_TYPE: f"type {SensorType(int(m.sensor_type[i])).name}",
                R_SENSOR_SPATIAL: "TENDONVEL of a spatial tendon wrapping a sphere or cylinder",
                R_SENSOR_TRN: "jointactuatorfrc of a joint with actuatorfrcrange, or with an actuator "
                              "whose moment or length moves (spatial tendon, site, slider-crank, ball or "
                              "free joint)",
                R_SENSOR_EXTERNAL: f"{SensorType(int(m.sensor_type[i])).name} with an external force on its "
                                   "body's subtree at this state (contacts, connect or weld rows, spatial "
                                   "tendons: cfrc_ext)"}[code]
        return f"sensor {i}: {what}"
    return {R_NOSLIP: "the noslip solver (it changes the forces after the optimum)",
            R_FLUID: "fluid forces under the implicit or implicitfast integrator (the derivative of their "
                     "qDeriv part)",
            R_XFRC: "xfrc_applied",
            R_TENDON_ARMATURE: f"tendon {i}: armature of a spatial tendon",
            R_TENDON_SPRING: f"tendon {i}: a spring with plasticity",
            R_PLASTIC: f"joint {i}: a spring with plasticity",
            R_SPATIAL_TENDON: f"tendon {i}: a spatial tendon wrapping a sphere or cylinder with a spring, "
                              "damping or an actuator (its length's Hessian), or a degenerate segment",
            R_JNT_ACTFRC: f"tendon {i}: actuatorfrcrange on a spatial tendon or with several actuators",
            R_TRANSMISSION: f"actuator {i}: its transmission (body (adhesion) transmissions are not "
                            "covered)",
            R_USER: f"actuator {i}: user, pid or dcmotor dynamics, gain or bias",
            R_MULTI_ACT: f"actuator {i}: several activations",
            R_MUSCLE_IMPLICIT: f"actuator {i}: a muscle on a site, ball or free transmission under "
                               "implicit or implicitfast (its velocity slope along the length's gradient)",
            R_ACTGRAVCOMP: f"joint {i}: actuatorgravcomp with the actuators off"}[code]


@kernel
def _refuse(codes, code, i):
    n = codes[0, 0] + 1
    if n < codes.shape[0]:
        codes[n, 0], codes[n, 1] = code, i
        codes[0, 0] = n


@kernel
def _any_nonzero(x):
    for k in range(x.size):
        if x.flat[k] != 0.0:
            return True
    return False


@kernel
def _refusals(m, xfrc_applied, sensors, codes):
    """Rows (code, index) from codes[1] on of what ``transition_derivatives`` does not
    differentiate at this model and applied force (codes[0, 0] their count); the sensor rows
    (codes >= R_SENSOR) only if ``sensors``. The constraint rows are checked after forward."""
    codes[0, 0] = 0
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    integrator = m.opt_flags[OPT_INTEGRATOR]
    implicit = integrator == INT_IMPLICIT or integrator == INT_IMPLICITFAST
    if integrator != INT_EULER and not implicit:
        _refuse(codes, R_INTEGRATOR, integrator)
    if not flags & DSBL_CONSTRAINT and m.opt_flags[OPT_NOSLIP_ITERATIONS] > 0:
        _refuse(codes, R_NOSLIP, 0)
    if m.opt_real[OPT_DENSITY] > 0.0 or m.opt_real[OPT_VISCOSITY] > 0.0:
        # their derivatives under Euler (derivative_fluid.fluid_partials_entry)
        if integrator != INT_EULER:
            _refuse(codes, R_FLUID, 0)
    for t in range(m.ntendon):
        if not is_fixed_tendon(m, t) and (m.tendon_armature[t] != 0.0
                                          or actuators_on_tendon(m, t, True) > 0):
            _refuse(codes, R_TENDON_ARMATURE, t)
    if not flags & DSBL_SPRING:
        for j in range(m.njnt):
            stiff = m.jnt_stiffness[j] != 0.0 or _any_nonzero(m.jnt_stiffnesspoly[j])
            if stiff and m.jnt_plasticadr[j] >= 0:
                _refuse(codes, R_PLASTIC, j)
        for t in range(m.ntendon):
            if m.tendon_stiffness[t] != 0.0 or _any_nonzero(m.tendon_stiffnesspoly[t]):
                if m.tendon_plasticadr[t] >= 0:
                    _refuse(codes, R_TENDON_SPRING, t)
    for t in range(m.ntendon):
        if not is_fixed_tendon(m, t) and not tendon_through_sites(m, t) and (
                m.tendon_damping[t] != 0.0 or _any_nonzero(m.tendon_dampingpoly[t])
                or m.tendon_stiffness[t] != 0.0 or _any_nonzero(m.tendon_stiffnesspoly[t])
                or m.tendon_actuatorid[t] != -1 or actuators_on_tendon(m, t, False) > 0):
            _refuse(codes, R_SPATIAL_TENDON, t)
    act_on = m.nu > 0 and not flags & DSBL_ACTUATION
    for j in range(m.njnt):
        if m.jnt_actgravcomp[j] and not act_on:
            _refuse(codes, R_ACTGRAVCOMP, j)
    if act_on:
        for t in range(m.ntendon):
            if m.tendon_actfrclimited[t] and (not is_fixed_tendon(m, t)
                                              or actuators_on_tendon(m, t, False) > 1):
                _refuse(codes, R_JNT_ACTFRC, t)
        for i in range(m.nu):
            if moment_kind(m, i) == K_OTHER and not (m.actuator_trntype[i] == TRN_TENDON
                                                     and not tendon_through_sites(m, m.actuator_trnid[i, 0])):
                _refuse(codes, R_TRANSMISSION, i)
            dyn, gt, bt = m.actuator_dyntype[i], m.actuator_gaintype[i], m.actuator_biastype[i]
            dyn_ok = dyn == DYN_NONE or dyn == DYN_INTEGRATOR or dyn == DYN_FILTER \
                or dyn == DYN_FILTEREXACT or dyn == DYN_MUSCLE
            gain_ok = gt == GAIN_FIXED or gt == GAIN_AFFINE or gt == GAIN_MUSCLE
            if not (dyn_ok and gain_ok and (bt == BIAS_NONE or bt == BIAS_AFFINE or bt == BIAS_MUSCLE)):
                _refuse(codes, R_USER, i)
            if m.actuator_actnum[i] > 1:
                _refuse(codes, R_MULTI_ACT, i)
            if implicit and gt == GAIN_MUSCLE and _length_not_moment(m, i):
                _refuse(codes, R_MUSCLE_IMPLICIT, i)
    if sensors:
        for s in range(m.nsensor):
            t, obj = m.sensor_type[s], m.sensor_objid[s]
            if t >= _SENSOR_COVERED.shape[0] or not _SENSOR_COVERED[t]:
                _refuse(codes, R_SENSOR_TYPE, s)
            elif t == _TENDONVEL and not is_fixed_tendon(m, obj) and spatial_tendon_wraps(m, obj):
                _refuse(codes, R_SENSOR_SPATIAL, s)
            elif act_on and _moving_actuator_sensor(m, t, obj):
                _refuse(codes, R_SENSOR_TRN, s)


@kernel
def _length_not_moment(m, i):
    """Actuator i's length gradient differs from its moment (site, ball and free transmissions:
    derivative_transmission's _length_gradient), so a muscle's qDeriv slope, a function of the
    length, is not differentiated along the moment."""
    kind = moment_kind(m, i)
    return kind == K_SITE or kind == K_BALL or kind == K_FREE or kind == K_REFSITE


@kernel
def _moving_actuator_sensor(m, t, obj):
    """jointactuatorfrc of a joint with actuatorfrcrange, or with an actuator whose moment or
    length moves (derivative_transmission.moment_kind): its row would need the actuator share of
    the force's derivative alone."""
    if t == _JOINTACTFRC:
        if m.jnt_actfrclimited[obj]:
            return True
        for i in range(m.nu):
            if moment_kind(m, i) != K_CONSTANT:
                return True
    return False


def refusal_capacity(m) -> int:
    """Rows ``_refusals`` can write (the count's row included): every check at most once per element."""
    return 16 + 4 * m.njnt + 4 * m.ntendon + 4 * m.nu + m.nsensor


# ---------------------------------------------------------------------------------------
# scalar partials (each mirrors a function of actuation.py / util_muscle.py)

@kernel
def _muscle_norm(m, i, prm):
    """(F0, l0) of muscle actuator i (mju_muscleGain's preamble)."""
    force = prm[i, 2]
    if force < 0.0:
        force = prm[i, 3] / max(MINVAL, m.actuator_acc0[i])
    lr = m.actuator_lengthrange
    return force, (lr[i, 1] - lr[i, 0]) / max(MINVAL, prm[i, 1] - prm[i, 0])


@kernel
def _fl(x, lmin, lmax):
    """(FL, dFL/dx): mju_muscleGainLength and its derivative."""
    if not lmin <= x <= lmax:
        return 0.0, 0.0
    a, b = 0.5 * (lmin + 1.0), 0.5 * (1.0 + lmax)
    if x <= a:
        w = max(MINVAL, a - lmin)
        y = (x - lmin) / w
        return 0.5 * y * y, y / w
    if x <= 1.0:
        w = max(MINVAL, 1.0 - a)
        y = (1.0 - x) / w
        return 1.0 - 0.5 * y * y, y / w
    if x <= b:
        w = max(MINVAL, b - 1.0)
        y = (x - 1.0) / w
        return 1.0 - 0.5 * y * y, -y / w
    w = max(MINVAL, lmax - b)
    y = (lmax - x) / w
    return 0.5 * y * y, -y / w


@kernel
def _fv(x, fvmax):
    """(FV, dFV/dx, d2FV/dx2) of the normalised velocity (mju_muscleGain); the second derivative
    piecewise constant, with the side a kink's value takes."""
    y = fvmax - 1.0
    if x <= -1.0:
        return 0.0, 0.0, 0.0
    if x <= 0.0:
        return (x + 1.0) * (x + 1.0), 2.0 * x + 2.0, 2.0
    if x <= y:
        w = max(MINVAL, y)
        return fvmax - (y - x) * (y - x) / w, 2.0 * (y - x) / w, -2.0 / w
    return fvmax, 0.0, 0.0


@kernel
def _muscle_gain(m, i, length, vel):
    """A muscle's gain (mju_muscleGain) and its partials: d/d length, d/d vel, and the partials of
    d gain/d vel (mjd_muscleGain_vel = -F0 FL(l) FV'(v) / (l0 vmax), the muscle term of implicit's
    qDeriv) in length and vel: FL' FV' and FL FV''."""
    prm = m.actuator_gainprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    vscale = max(MINVAL, l0 * prm[i, 6])
    lscale = max(MINVAL, l0)
    fl, dfl = _fl(nl, prm[i, 4], prm[i, 5])
    fv, dfv, ddfv = _fv(vel / vscale, prm[i, 8])
    return (-force * fl * fv, -force * dfl * fv / lscale, -force * fl * dfv / vscale,
            -force * dfl * dfv / (lscale * vscale), -force * fl * ddfv / (vscale * vscale))


@kernel
def _muscle_bias_length(m, i, length):
    """d mju_muscleBias / d length."""
    prm = m.actuator_biasprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    b = 0.5 * (1.0 + prm[i, 5])
    w = max(MINVAL, b - 1.0)
    if nl <= 1.0:
        return 0.0
    if nl <= b:
        return -force * prm[i, 7] * (nl - 1.0) / w / w / max(MINVAL, l0)
    return -force * prm[i, 7] / w / max(MINVAL, l0)


@kernel
def _sigmoid(x):
    """(mju_sigmoid, its derivative)."""
    if x <= 0.0:
        return 0.0, 0.0
    if x >= 1.0:
        return 1.0, 0.0
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0), 30.0 * x * x * (x - 1.0) * (x - 1.0)


@kernel
def _muscle_dynamics(m, i, ctrl, act):
    """(d act_dot/d ctrl, d act_dot/d act) of mju_muscleDynamics (ctrl the clamped control)."""
    prm = m.actuator_dynprm
    dc_du = 1.0 if 0.0 <= ctrl <= 1.0 else 0.0   # inside [0, 1] (one-sided at its ends)
    cc = min(max(ctrl, 0.0), 1.0)
    ac = min(max(act, 0.0), 1.0)
    dac = 1.0 if 0.0 <= act <= 1.0 else 0.0
    s = 0.5 + 1.5 * ac
    tau_act, dtau_act = prm[i, 0] * s, prm[i, 0] * 1.5 * dac
    tau_deact, dtau_deact = prm[i, 1] / s, -prm[i, 1] * 1.5 * dac / (s * s)
    width = prm[i, 2]
    dctrl = cc - act
    dtau_du = 0.0
    if width < MINVAL:
        # the timescale switches where dctrl changes sign: the side MuJoCo's value takes
        if dctrl > 0.0:
            tau, dtau_da = tau_act, dtau_act
        else:
            tau, dtau_da = tau_deact, dtau_deact
    else:
        sg, dsg = _sigmoid(dctrl / width + 0.5)
        tau = tau_deact + (tau_act - tau_deact) * sg
        dtau_x = (tau_act - tau_deact) * dsg / width      # d tau / d dctrl
        dtau_da = dtau_deact + (dtau_act - dtau_deact) * sg - dtau_x
        dtau_du = dtau_x * dc_du
    if tau < MINVAL:
        return dc_du / MINVAL, -1.0 / MINVAL
    return (dc_du * tau - dctrl * dtau_du) / (tau * tau), (-tau - dctrl * dtau_da) / (tau * tau)


# rows of the per-actuator partials ``au`` (nu) and ``aa`` (nu, na)
_FL, _FV, _FU, _DVU = 0, 1, 2, 3     # df/dl, df/dv, df/dctrl, d(df/dv)/dctrl
_DVL, _DVV = 4, 5                     # d(df/dv)/dl, d(df/dv)/dv (muscles: implicit's qDeriv term)
_FA, _DVA = 0, 1                      # df/dact, d(df/dv)/dact


@kernel
def _actuator_partials(m, d, au, aa, a_mat, b_mat):
    """Per actuator the force's partials in its length and velocity, ctrl and act (au, aa), and the
    next activation's rows of A and B (mj_fwdActuation, mj_nextActivation)."""
    nu, nv = m.nu, m.nv
    h = m.opt_timestep[0]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    for r in range(au.shape[0]):
        for i in range(nu):
            au[r, i] = 0.0
    for r in range(aa.shape[0]):
        for i in range(nu):
            for k in range(m.na):
                aa[r, i, k] = 0.0
    for k in range(m.na):
        a_mat[2 * nv + k, 2 * nv + k] = 1.0
    if flags & DSBL_ACTUATION:
        return
    for i in range(nu):
        c = d.ctrl[i]
        dc = 1.0
        if m.actuator_ctrllimited[i] and not flags & DSBL_CLAMPCTRL:
            lo, hi = m.actuator_ctrlrange[i, 0], m.actuator_ctrlrange[i, 1]
            if not lo <= c <= hi:
                dc = 0.0
            c = min(max(c, lo), hi)
        dyn = m.actuator_dyntype[i]
        # the input: the control, or the activation (actearly: the next one)
        inp, inp_u, inp_a, k = c, dc, 0.0, -1
        if dyn != DYN_NONE:
            k = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
            a = d.act[k]
            if dyn == DYN_INTEGRATOR:
                adot_u, adot_a = dc, 0.0
            elif dyn == DYN_MUSCLE:
                adot_u, adot_a = _muscle_dynamics(m, i, c, a)
            else:  # filter, filterexact
                tau = max(MINVAL, m.actuator_dynprm[i, 0])
                adot_u, adot_a = dc / tau, -1.0 / tau
            s = h
            if dyn == DYN_FILTEREXACT:
                tau = max(MINVAL, m.actuator_dynprm[i, 0])
                s = tau * (1.0 - math.exp(-h / tau))
            nxt = a + d.act_dot[k] * s
            n_u, n_a = s * adot_u, 1.0 + s * adot_a
            if m.actuator_actlimited[i]:
                lo, hi = m.actuator_actrange[i, 0], m.actuator_actrange[i, 1]
                if not lo <= nxt <= hi:
                    n_u, n_a = 0.0, 0.0
                nxt = min(max(nxt, lo), hi)
            b_mat[2 * nv + k, i] = n_u
            a_mat[2 * nv + k, 2 * nv + k] = n_a
            if m.actuator_actearly[i]:
                inp, inp_u, inp_a = nxt, n_u, n_a
            else:
                inp, inp_u, inp_a = a, 0.0, 1.0
        length, vel = d.actuator_length[i], d.actuator_velocity[i]
        gt, bt = m.actuator_gaintype[i], m.actuator_biastype[i]
        g_vl, g_vv = 0.0, 0.0   # d(d gain/d vel)/d(length, vel): muscles only
        if gt == GAIN_AFFINE:
            gain = m.actuator_gainprm[i, 0] + m.actuator_gainprm[i, 1] * length \
                + m.actuator_gainprm[i, 2] * vel
            g_l, g_v = m.actuator_gainprm[i, 1], m.actuator_gainprm[i, 2]
        elif gt == GAIN_MUSCLE:
            gain, g_l, g_v, g_vl, g_vv = _muscle_gain(m, i, length, vel)
        else:
            gain, g_l, g_v = m.actuator_gainprm[i, 0], 0.0, 0.0
        b_l, b_v = 0.0, 0.0
        if bt == BIAS_AFFINE:
            b_l, b_v = m.actuator_biasprm[i, 1], m.actuator_biasprm[i, 2]
        elif bt == BIAS_MUSCLE:
            b_l = _muscle_bias_length(m, i, length)
        if m.actuator_forcelimited[i]:
            f = d.actuator_force[i]
            if f <= m.actuator_forcerange[i, 0] or f >= m.actuator_forcerange[i, 1]:
                continue   # held at its forcerange: no derivative in anything
        au[_FL, i] = g_l * inp + b_l
        au[_FV, i] = g_v * inp + b_v
        au[_FU, i] = gain * inp_u
        au[_DVU, i] = g_v * inp_u
        au[_DVL, i] = g_vl * inp
        au[_DVV, i] = g_vv * inp
        if k >= 0:
            aa[_FA, i, k] = gain * inp_a
            aa[_DVA, i, k] = g_v * inp_a


@kernel
def _damper(a, b, c, v):
    """(d(v k(v))/dv, its derivative in v) of a damping polynomial (mjd_xPolyForce, odd)."""
    av = abs(v)
    sgn = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
    return a + 2.0 * b * av + 3.0 * c * v * v, 2.0 * b * sgn + 6.0 * c * v


@kernel
def _in_m(m, r, c):
    """Whether (r, c) is in M's sparsity: one is the other's ancestor dof (or itself)."""
    if c > r:
        r, c = c, r
    while r > c:
        r = m.dof_parentid[r]
    return r == c


@kernel
def _force_partials(m, d, au, aa, rhs):
    """rhs[:, x] = d(qfrc_actuator + qfrc_passive)/d[q, v, act, ctrl] (before the rigid body)."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    for r in range(nv):
        for c in range(rhs.shape[1]):
            rhs[r, c] = 0.0
    mom = d.actuator_moment
    clamp = any_actfrc(m)
    for i in range(nu):
        fl, fv, fu = au[_FL, i], au[_FV, i], au[_FU, i]
        for r in range(nv):
            mr = mom[i, r]
            if mr == 0.0 or (clamp and actfrc_clamped(m, d, r)):
                continue
            for c in range(nv):
                mc = mom[i, c]
                if mc != 0.0:
                    rhs[r, c] += mr * fl * mc
                    rhs[r, nv + c] += mr * fv * mc
            for k in range(na):
                rhs[r, 2 * nv + k] += mr * aa[_FA, i, k]
            rhs[r, ndx + i] += mr * fu
    if not flags & DSBL_DAMPER:
        for v in range(nv):
            damping, p0, p1 = dof_damping_poly(m, v)
            dd, _ = _damper(damping, p0, p1, d.qvel[v])
            rhs[v, nv + v] -= dd
        for t in range(m.ntendon):
            damping, p0, p1 = tendon_damping_poly(m, t)
            dd, _ = _damper(damping, p0, p1, d.ten_velocity[t])
            if dd != 0.0:
                for r in range(nv):
                    for c in range(nv):
                        rhs[r, nv + c] -= d.ten_J[t, r] * dd * d.ten_J[t, c]
    if not flags & DSBL_SPRING:
        # fixed-tendon springs beyond their lengthspring deadband: -x k(x) along ten_J (constant);
        # at the deadband's edge the inside value, zero
        for t in range(m.ntendon):
            length = d.ten_length[t]
            lower, upper = m.tendon_lengthspring[t, 0], m.tendon_lengthspring[t, 1]
            if lower <= length <= upper:
                continue
            x = length - upper if length > upper else length - lower
            kx = poly_force_deriv(m.tendon_stiffness[t], m.tendon_stiffnesspoly[t, 0],
                                  m.tendon_stiffnesspoly[t, 1], x, False)
            if kx != 0.0:
                for r in range(nv):
                    for c in range(nv):
                        rhs[r, c] -= d.ten_J[t, r] * kx * d.ten_J[t, c]
        for j in range(m.njnt):
            if m.jnt_type[j] == JNT_BALL or m.jnt_type[j] == JNT_FREE:
                _ball_spring_partials(m, d, j, rhs)
                continue
            adr = m.jnt_qposadr[j]
            x = d.qpos[adr] - m.qpos_spring[adr]
            v = m.jnt_dofadr[j]
            rhs[v, v] -= poly_force_deriv(m.jnt_stiffness[j], m.jnt_stiffnesspoly[j, 0],
                                          m.jnt_stiffnesspoly[j, 1], x, False)


@kernel(inline="always")
def _vector_spring(rhs, adr, x0, x1, x2, k, p0, p1, jr):
    """rhs[adr:adr+3, adr:adr+3] += d(-k(|x|) x)/dx · jr, k(r) = k + p0 r + p1 r^2 (mju_polyForce
    of the vector's norm), jr the derivative of x in the dofs (3x3, as a 9-tuple by rows)."""
    r = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    kr = k + p0 * r + p1 * r * r
    dk = (p0 + 2.0 * p1 * r) / r if r > 0.0 else 0.0   # k'(r) / r: x x' k'(r) / r
    x = (x0, x1, x2)
    for a in range(3):
        for b in range(3):
            acc = 0.0
            for c in range(3):
                dfdx = -kr * (1.0 if a == c else 0.0) - dk * x[a] * x[c]
                acc += dfdx * jr[3 * c + b]
            rhs[adr + a, adr + b] += acc


@kernel
def _ball_spring_partials(m, d, j, rhs):
    """The q-derivative of a ball or free joint's spring (mj_springdamper): -k(|x|) x with x the
    translation from qpos_spring (free joints, world frame: dx = dq) and the rotation vector
    x = log(q_spring^-1 q) (mju_subQuat): a tangent step q exp(δ) moves it by J_r^-1(x) δ, the
    inverse right Jacobian of SO(3), I + [x]/2 + (1/θ² - (1 + cos θ)/(2 θ sin θ)) [x]², θ = |x|."""
    k, p0, p1 = m.jnt_stiffness[j], m.jnt_stiffnesspoly[j, 0], m.jnt_stiffnesspoly[j, 1]
    if k == 0.0 and p0 == 0.0 and p1 == 0.0:
        return
    padr, dadr = m.jnt_qposadr[j], m.jnt_dofadr[j]
    if m.jnt_type[j] == JNT_FREE:
        x = (d.qpos[padr] - m.qpos_spring[padr], d.qpos[padr + 1] - m.qpos_spring[padr + 1],
             d.qpos[padr + 2] - m.qpos_spring[padr + 2])
        _vector_spring(rhs, dadr, x[0], x[1], x[2], k, p0, p1, (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))
        padr += 3
        dadr += 3
    sv = d.scratch_vec
    rotation_from_ref(d.qpos, padr, m.qpos_spring, padr, d.scratch_quat, sv)
    x0, x1, x2 = sv[0, 0], sv[0, 1], sv[0, 2]
    jr = inv_right_jacobian(x0, x1, x2)
    _vector_spring(rhs, dadr, x0, x1, x2, k, p0, p1, jr)


@kernel
def _system(m, d, au, aa, rhs, qacc, mats):
    """The integrator's system K qacc = qfrc_smooth + qfrc_constraint: K = M for Euler without its
    damping, M + h diag(B) with it, implicitfast's M - h D (all factorised in M's layout, returned
    as (qLD, qLDiagInv)), or implicit's M - h qDeriv (mj_implicitSkip with the RNE bias: LU-factorised
    in d.scratch_lu, factor_lu_tree). qacc solved, and rhs -= d(K) qacc: the dampers' and the actuators'
    velocity terms, and for implicit the bias's (``bias_curvature_entry``). Returns (qLD, qLDiagInv, ok),
    ok False where implicit's LU meets a zero pivot (MuJoCo's mjERROR)."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    h = m.opt_timestep[0]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    implicitfast = m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST
    implicit = m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICIT
    if not implicitfast and not implicit and not eulerdamp_active(m):
        for v in range(nv):
            qacc[v] = d.qacc[v]
        return d.qLD, d.qLDiagInv, True
    qh, diaginv = d.scratch_nC, d.scratch_nv_a
    for v in range(nv):
        qacc[v] = d.qfrc_smooth[v] + d.qfrc_constraint[v]
    if implicit:
        # units compiled only for models with the implicit integrator
        implicit_lu_entry(m, d)
        if not factor_lu_tree(d.scratch_lu, m.dof_parentid, nv):
            return qh, diaginv, False
        solve_lu_tree(d.scratch_lu, qacc, nv)
    else:
        if implicitfast:
            implicit_matrix(m, d, qh)
        else:
            # Euler's (M + h diag(B)), as mj_EulerSkip
            for k in range(qh.shape[0]):
                qh[k] = d.M[k]
            for v in range(nv):
                qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += h * dof_damping_deriv(m, d, v)
        factor_i(qh, diaginv, m.M_rownnz, m.M_rowadr, m.M_colind)
        solve_ld(qacc, qh, diaginv, m.M_rownnz, m.M_rowadr, m.M_colind)
        if implicitfast:
            # mj_implicit solves a lone free body's block again with its gyroscopic derivative
            for j in range(m.njnt):
                if _is_free_body(m, j):
                    _free_body_implicit(m, d, j, qacc)
    if not flags & DSBL_DAMPER:
        for v in range(nv):
            damping, p0, p1 = dof_damping_poly(m, v)
            _, ddd = _damper(damping, p0, p1, d.qvel[v])
            rhs[v, nv + v] -= h * ddd * qacc[v]
    if implicitfast or implicit:
        # the outer products on M's pattern (implicitfast) or the D pattern (implicit): both the
        # pairs of dofs on one ancestor chain, which ``_in_m`` tests
        if not flags & DSBL_DAMPER:
            for t in range(m.ntendon):
                damping, p0, p1 = tendon_damping_poly(m, t)
                _, ddd = _damper(damping, p0, p1, d.ten_velocity[t])
                if ddd != 0.0:
                    for r in range(nv):
                        acc = 0.0
                        for c in range(nv):
                            if _in_m(m, r, c):
                                acc += d.ten_J[t, r] * d.ten_J[t, c] * qacc[c]
                        for c in range(nv):
                            rhs[r, nv + c] -= h * ddd * acc * d.ten_J[t, c]
        for i in range(nu):
            if au[_DVU, i] == 0.0 and au[_DVL, i] == 0.0 and au[_DVV, i] == 0.0 \
                    and not _any_row(aa, _DVA, i):
                continue
            for r in range(nv):
                acc = 0.0
                for c in range(nv):
                    if _in_m(m, r, c):
                        acc += d.actuator_moment[i, r] * d.actuator_moment[i, c] * qacc[c]
                if acc == 0.0:
                    continue
                rhs[r, ndx + i] += h * acc * au[_DVU, i]
                # a muscle's slope moves with its length and velocity (l, v = moment . (q, qvel)
                # for the joint, tendon and slider-crank transmissions muscles are covered on)
                if au[_DVL, i] != 0.0 or au[_DVV, i] != 0.0:
                    for c in range(nv):
                        rhs[r, c] += h * acc * au[_DVL, i] * d.actuator_moment[i, c]
                        rhs[r, nv + c] += h * acc * au[_DVV, i] * d.actuator_moment[i, c]
                for a in range(na):
                    rhs[r, 2 * nv + a] += h * acc * aa[_DVA, i, a]
    if implicit or (implicitfast and _lone_free_bodies(m)):
        bias_curvature_entry(m, d, rhs, qacc, mats, implicitfast)
    return qh, diaginv, True


@kernel
def _lone_free_bodies(m):
    """Whether some free joint is a lone free body (mj_isFreeBody): implicitfast's local blocks."""
    for j in range(m.njnt):
        if _is_free_body(m, j):
            return True
    return False


def _curvature_needed(m) -> bool:
    # implicitfast: any free joint (whether one is a lone body is the kernel's test; a model with
    # free joints that are not compiles the unit without calling it)
    if m.opt.integrator == INT_IMPLICIT:
        return True
    return m.opt.integrator == INT_IMPLICITFAST and bool((m.jnt_type == JNT_FREE).any())


@kernel
def _in_lone_block(m, r, c):
    """Dofs r and c both of one lone free body's joint."""
    j = m.dof_jntid[r]
    return m.dof_jntid[c] == j and _is_free_body(m, j)


@handle_entry(args="float64[:, ::1], float64[::1], float64[:, :, ::1], boolean", needed=_curvature_needed)
def bias_curvature_entry(m, d, rhs, qacc, mats, lone_only):
    """rhs -= h d(B(q, v) a)/d[q, v], a = qacc, B = d qfrc_bias/d qvel (mjd_rne_vel, the bias part
    of implicit's qDeriv). Without gravity the bias c(q, v) is a quadratic form Γ(q; v, v), so
    B(q, v) a = 2 Γ(q; v, a): its v-derivative is B(q, a) (mjd_rne_vel at velocity a), its
    q-derivative (∂c/∂q(q, v + a) - ∂c/∂q(q, v - a)) / 2 (gravity cancels), both exact. With
    ``lone_only`` (implicitfast) only the blocks of lone free bodies, where mj_implicit adds B
    (mjd_freeMhat's gyroscopic term: a single-body tree's bias depends on its own dofs only). Uses
    mats[0], mats[1] and mats[5][0]; leaves d's qvel and com_vel as they were, d.qacc zero."""
    nv = m.nv
    h = m.opt_timestep[0]
    tq, tv, saved = mats[0], mats[1], mats[5][0]
    for v in range(nv):
        saved[v] = d.qvel[v]
        d.qvel[v] = qacc[v]
        d.qacc[v] = 0.0
    com_vel_entry(m, d)
    for r in range(nv):
        for c in range(nv):
            tv[r, c] = 0.0
    rne_vel(m, d, tv, 1.0)
    for r in range(nv):
        for c in range(nv):
            if not lone_only or _in_lone_block(m, r, c):
                rhs[r, nv + c] -= h * tv[r, c]
    for sign in (1.0, -1.0):
        for v in range(nv):
            d.qvel[v] = saved[v] + sign * qacc[v]
        com_vel_entry(m, d)
        rne_derivs_qv(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq, tv)
        for r in range(nv):
            for c in range(nv):
                if not lone_only or _in_lone_block(m, r, c):
                    rhs[r, c] -= 0.5 * sign * h * tq[r, c]
    for v in range(nv):
        d.qvel[v] = saved[v]
    com_vel_entry(m, d)


@kernel
def _lone_block_rows(m, d, rhs, saved, a6, x):
    """A lone free body's rows of rhs solved with its local system M - h qDeriv, the gyroscopic
    derivative included (free_body_mhat), as mj_implicit solves its qacc, from ``saved`` (rhs's
    rows before the global solve, whose result there is replaced). a6 (6 x 6 at least) and x (6)
    are scratch."""
    for j in range(m.njnt):
        if not _is_free_body(m, j):
            continue
        adr = m.jnt_dofadr[j]
        free_body_mhat(m, d, j)
        for c in range(rhs.shape[1]):
            for r in range(6):
                x[r] = saved[adr + r, c]
                for k in range(6):
                    a6[r, k] = d.scratch_free_mhat[r, k]
            _solve_dense(a6, x)
            for r in range(6):
                rhs[adr + r, c] = x[r]


@kernel
def _solve_lu_rows(lu, a, col):
    """a <- K^-1 a column by column, K LU-factorised by factor_lu_tree (mju_solveLUSparse)."""
    nv = a.shape[0]
    for c in range(a.shape[1]):
        for r in range(nv):
            col[r] = a[r, c]
        solve_lu_tree(lu, col, nv)
        for r in range(nv):
            a[r, c] = col[r]


@kernel
def _any_row(aa, r, i):
    for k in range(aa.shape[2]):
        if aa[r, i, k] != 0.0:
            return True
    return False


@kernel(inline="always")
def _skew(p0, p1, p2, r, c):
    """[p]x[r, c]."""
    if r == c:
        return 0.0
    if r == 0:
        return -p2 if c == 1 else p1
    if r == 1:
        return p2 if c == 0 else -p0
    return -p1 if c == 0 else p0


@kernel
def _tangent_rows(m, a_mat, b_mat, qvel_next, adr):
    """Rows adr..adr+3 of A and B for a ball (or a free joint's rotation) integrated by
    q' = q exp(phi), phi = h w': d' = R(phi)^T d + h Jr(phi) dw', the velocity rows h dw'."""
    nv = m.nv
    h = m.opt_timestep[0]
    p0, p1, p2 = h * qvel_next[adr], h * qvel_next[adr + 1], h * qvel_next[adr + 2]
    th2 = p0 * p0 + p1 * p1 + p2 * p2
    th = math.sqrt(th2)
    if th < 1e-8:
        a1, a2, b1, b2 = 1.0, 0.5, 0.5, 1.0 / 6.0
    else:
        sn, cs = math.sin(th), math.cos(th)
        a1, a2, b1, b2 = sn / th, (1.0 - cs) / th2, (1.0 - cs) / th2, (th - sn) / (th2 * th)
    p = (p0, p1, p2)
    for r in range(3):
        jr0 = jr1 = jr2 = 0.0
        for t in range(3):
            # Jr = I - b1 K + b2 K^2, K^2 = p p^T - th^2 I
            jr = (1.0 if r == t else 0.0) - b1 * _skew(p0, p1, p2, r, t) \
                + b2 * (p[r] * p[t] - (th2 if r == t else 0.0))
            if t == 0:
                jr0 = jr
            elif t == 1:
                jr1 = jr
            else:
                jr2 = jr
        row = adr + r
        for c in range(a_mat.shape[1]):
            a_mat[row, c] = h * (jr0 * a_mat[nv + adr, c] + jr1 * a_mat[nv + adr + 1, c]
                                 + jr2 * a_mat[nv + adr + 2, c])
        for c in range(b_mat.shape[1]):
            b_mat[row, c] = h * (jr0 * b_mat[nv + adr, c] + jr1 * b_mat[nv + adr + 1, c]
                                 + jr2 * b_mat[nv + adr + 2, c])
        for c in range(3):
            # R^T = I - a1 K + a2 K^2 (K^T = -K)
            a_mat[row, adr + c] += (1.0 if r == c else 0.0) - a1 * _skew(p0, p1, p2, r, c) \
                + a2 * (p[r] * p[c] - (th2 if r == c else 0.0))


@kernel
def _step_rows(m, d, x, qacc, a_mat, b_mat):
    """A and B's qpos and qvel rows from x = dqacc/d[q, v, act, ctrl] (mj_Euler's update)."""
    nv, na = m.nv, m.na
    ndx = 2 * nv + na
    h = m.opt_timestep[0]
    for r in range(nv):
        for c in range(ndx):
            a_mat[nv + r, c] = h * x[r, c]
        a_mat[nv + r, nv + r] += 1.0
        for c in range(m.nu):
            b_mat[nv + r, c] = h * x[r, ndx + c]
        for c in range(ndx):
            a_mat[r, c] = h * a_mat[nv + r, c]
        a_mat[r, r] += 1.0
        for c in range(m.nu):
            b_mat[r, c] = h * b_mat[nv + r, c]
    qvel_next = d.scratch_nv_a
    for v in range(nv):
        qvel_next[v] = d.qvel[v] + h * qacc[v]
    for j in range(m.njnt):
        t = m.jnt_type[j]
        if t == JNT_BALL:
            _tangent_rows(m, a_mat, b_mat, qvel_next, m.jnt_dofadr[j])
        elif t == JNT_FREE:
            _tangent_rows(m, a_mat, b_mat, qvel_next, m.jnt_dofadr[j] + 3)


@kernel
def _object_point(m, d, ot, obj):
    """(body, position) of a frame sensor's object (mj_objectVelocity's point)."""
    if ot == _OBJ_BODY:
        return obj, d.xipos[obj]
    if ot == _OBJ_XBODY:
        return obj, d.xpos[obj]
    if ot == _OBJ_GEOM:
        return m.geom_bodyid[obj], d.geom_xpos[obj]
    return m.site_bodyid[obj], d.site_xpos[obj]


@kernel
def _frame_rows(m, d, s, c_mat, jac):
    """C's rows of a frame sensor without a reference frame (positions, axes, quaternion, linear
    and angular velocity) or of a site's velocimeter or gyro, from the object's Jacobian (mj_jac:
    jacp, jacr its columns' point and angular velocities) and, for velocities, the derivative of
    the body's com-frame velocity v_b along a tangent step S_i of a dof moving it:
    S_i x (v_b - v0_i), v0_i the velocity before i's joint (derivative_rne's rne_partials)."""
    nv = m.nv
    t, obj, adr = m.sensor_type[s], m.sensor_objid[s], m.sensor_adr[s]
    ot = m.sensor_objtype[s]
    if t == _VELOCIMETER or t == _GYRO:
        ot = _OBJ_SITE
    b, p = _object_point(m, d, ot, obj)
    jp, jr = jac[0:3], jac[3:6]
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, p[0], p[1], p[2], b, jp, jr)
    if t == _FRAMEPOS:
        for r in range(3):
            for c in range(nv):
                c_mat[adr + r, c] = jp[r, c]
    elif t == _FRAMEXAXIS or t == _FRAMEYAXIS or t == _FRAMEZAXIS:
        # d axis = (jacr dq) x axis
        ax = (d.sensordata[adr], d.sensordata[adr + 1], d.sensordata[adr + 2])
        for c in range(nv):
            x = cross3((jr[0, c], jr[1, c], jr[2, c]), ax)
            for r in range(3):
                c_mat[adr + r, c] = x[r]
    elif t == _FRAMEQUAT:
        # d quat = (0, jacr dq) quat / 2, the angular velocity in the world frame
        q = (d.sensordata[adr], d.sensordata[adr + 1], d.sensordata[adr + 2], d.sensordata[adr + 3])
        for c in range(nv):
            x = quat_product(0.0, jr[0, c], jr[1, c], jr[2, c], q[0], q[1], q[2], q[3])
            for r in range(4):
                c_mat[adr + r, c] = 0.5 * x[r]
    else:
        body, dof = d.scratch_rne_body, d.scratch_rne_dof
        rne_partials(m, d, d.qacc, False, body, dof)
        o = d.subtree_com[m.body_rootid[b]]
        rp = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
        vb = row6(d.cvel, b)
        w = (vb[0], vb[1], vb[2])
        vp = cross3(w, rp)
        vp = (vb[3] + vp[0], vb[4] + vp[1], vb[5] + vp[2])
        linear = t == _FRAMELINVEL or t == _VELOCIMETER
        local = t == _VELOCIMETER or t == _GYRO
        x = vp if linear else w
        for c in range(nv):
            if jr[0, c] == 0.0 and jr[1, c] == 0.0 and jr[2, c] == 0.0 and jp[0, c] == 0.0 \
                    and jp[1, c] == 0.0 and jp[2, c] == 0.0:
                continue   # dof c does not move the object
            dw, dv = point_velocity_dq(d.cdof, dof, c, vb, rp, (jp[0, c], jp[1, c], jp[2, c]))
            dx = dv if linear else dw
            if local:
                # x_local = R' x: d x_local = R' (dx - w_i' x x), w_i' = jacr's column
                e = cross3((jr[0, c], jr[1, c], jr[2, c]), x)
                dx = (dx[0] - e[0], dx[1] - e[1], dx[2] - e[2])
            for r in range(3):
                c_mat[adr + r, c] = dx[r]
        for c in range(nv):
            for r in range(3):
                c_mat[adr + r, nv + c] = jp[r, c] if linear else jr[r, c]
        if local:
            mat = d.site_xmat[obj]
            for c in range(2 * nv):
                y0, y1, y2 = c_mat[adr, c], c_mat[adr + 1, c], c_mat[adr + 2, c]
                for r in range(3):
                    c_mat[adr + r, c] = mat[0, r] * y0 + mat[1, r] * y1 + mat[2, r] * y2


@kernel
def _subtree_com_rows(m, d, b, c_mat, adr):
    """d subtree_com[b] / d qpos: dof i of body bi moves the coms of bi's subtree, so the share
    M_x / M_b of the point velocity at subtree_com[x] under S_i, x = b where bi is b or one of its
    ancestors, else bi (within b's subtree; other dofs do not move it)."""
    mb = m.body_subtreemass[b]
    if mb < MINVAL:
        return
    for i in range(m.nv):
        bi = m.dof_bodyid[i]
        x = -1
        k = b
        while k > 0:
            if k == bi:
                x = b
                break
            k = m.body_parentid[k]
        if x < 0:
            k = bi
            while k > 0 and k != b:
                k = m.body_parentid[k]
            if k != b:
                continue
            x = bi
        o = d.subtree_com[m.body_rootid[bi]]
        c = d.subtree_com[x]
        pv = cross3((d.cdof[i, 0], d.cdof[i, 1], d.cdof[i, 2]), (c[0] - o[0], c[1] - o[1], c[2] - o[2]))
        f = m.body_subtreemass[x] / mb
        for r in range(3):
            c_mat[adr + r, i] = f * (d.cdof[i, 3 + r] + pv[r])


@handle_entry(args="float64[:, ::1], float64[:, :, ::1], float64[:, ::1], float64[:, ::1], boolean, "
                   "float64[:, ::1], float64[:, ::1]", needed=lambda m: m.nsensor > 0)
def sensor_rows_entry(m, d, au, aa, c_mat, d_mat, gravcomp, dgrav, jac):
    """C, D for the covered sensors (SENSORS_COVERED); a row whose value sits at its cutoff is zero.
    ``dgrav``: d qfrc_gravcomp / d qpos where ``gravcomp`` acts (a JOINTACTFRC of a joint with
    actuatorgravcomp includes its share). ``jac``: (JAC_ROWS, nv) scratch."""
    nv, na = m.nv, m.na
    ndx = 2 * nv + na
    act_on = not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION
    for r in range(c_mat.shape[0]):
        for c in range(ndx):
            c_mat[r, c] = 0.0
        for c in range(m.nu):
            d_mat[r, c] = 0.0
    mom = d.actuator_moment
    for s in range(m.nsensor):
        t, obj, adr = m.sensor_type[s], m.sensor_objid[s], m.sensor_adr[s]
        if more_rows(m, s):
            # a unit compiled only for models with such sensors (derivative_sensor)
            sensor_more_rows_entry(m, d, s, c_mat, jac)
        elif t == _JOINTPOS:
            c_mat[adr, m.jnt_dofadr[obj]] = 1.0
        elif t == _JOINTVEL:
            c_mat[adr, nv + m.jnt_dofadr[obj]] = 1.0
        elif t == _TENDONPOS or t == _TENDONVEL:
            off = 0 if t == _TENDONPOS else nv
            for c in range(nv):
                c_mat[adr, off + c] = d.ten_J[obj, c]
        elif t == _ACTUATORPOS or t == _ACTUATORVEL:
            off = 0 if t == _ACTUATORPOS else nv
            for c in range(nv):
                c_mat[adr, off + c] = mom[obj, c]
        elif t == _ACTUATORFRC and act_on:
            for c in range(nv):
                c_mat[adr, c] = au[_FL, obj] * mom[obj, c]
                c_mat[adr, nv + c] = au[_FV, obj] * mom[obj, c]
            for k in range(na):
                c_mat[adr, 2 * nv + k] = aa[_FA, obj, k]
            d_mat[adr, obj] = au[_FU, obj]
        elif t == _JOINTACTFRC and act_on:
            # qfrc_actuator at the joint's dof: the moments' column v times each force's partials
            v = m.jnt_dofadr[obj]
            for i in range(m.nu):
                mv = mom[i, v]
                if mv == 0.0:
                    continue
                for c in range(nv):
                    c_mat[adr, c] += mv * au[_FL, i] * mom[i, c]
                    c_mat[adr, nv + c] += mv * au[_FV, i] * mom[i, c]
                for k in range(na):
                    c_mat[adr, 2 * nv + k] += mv * aa[_FA, i, k]
                d_mat[adr, i] += mv * au[_FU, i]
            if gravcomp and m.jnt_actgravcomp[obj]:
                for c in range(nv):
                    c_mat[adr, c] += dgrav[v, c]
        elif t == _FRAMEPOS or t == _FRAMEXAXIS or t == _FRAMEYAXIS or t == _FRAMEZAXIS or t == _FRAMEQUAT \
                or t == _FRAMELINVEL or t == _FRAMEANGVEL or t == _VELOCIMETER or t == _GYRO:
            _frame_rows(m, d, s, c_mat, jac)
        elif t == _BALLQUAT:
            # q' = q exp(eps e_k / 2): d q / d e_k = q (0, e_k) / 2 (mj_integratePos), q normalised
            v = m.jnt_dofadr[obj]
            q = (d.sensordata[adr], d.sensordata[adr + 1], d.sensordata[adr + 2], d.sensordata[adr + 3])
            for k in range(3):
                dq = quat_product(q[0], q[1], q[2], q[3], 0.0, 1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0,
                                  1.0 if k == 2 else 0.0)
                for r in range(4):
                    c_mat[adr + r, v + k] = 0.5 * dq[r]
        elif t == _BALLANGVEL:
            v = m.jnt_dofadr[obj]
            for k in range(3):
                c_mat[adr + k, nv + v + k] = 1.0
        elif t == _SUBTREECOM:
            _subtree_com_rows(m, d, obj, c_mat, adr)
        cutoff = m.sensor_cutoff[s]
        for r in range(adr, adr + m.sensor_dim[s]):
            if cutoff > 0.0 and abs(d.sensordata[r]) >= cutoff:
                for c in range(ndx):
                    c_mat[r, c] = 0.0
                for c in range(m.nu):
                    d_mat[r, c] = 0.0


_JOINTPOS, _JOINTVEL = int(SensorType.JOINTPOS), int(SensorType.JOINTVEL)
_TENDONPOS, _TENDONVEL = int(SensorType.TENDONPOS), int(SensorType.TENDONVEL)
_ACTUATORPOS, _ACTUATORVEL = int(SensorType.ACTUATORPOS), int(SensorType.ACTUATORVEL)
_ACTUATORFRC, _JOINTACTFRC = int(SensorType.ACTUATORFRC), int(SensorType.JOINTACTFRC)
_FRAMEPOS, _FRAMEQUAT = int(SensorType.FRAMEPOS), int(SensorType.FRAMEQUAT)
_FRAMEXAXIS, _FRAMEYAXIS = int(SensorType.FRAMEXAXIS), int(SensorType.FRAMEYAXIS)
_FRAMEZAXIS = int(SensorType.FRAMEZAXIS)
_FRAMELINVEL, _FRAMEANGVEL = int(SensorType.FRAMELINVEL), int(SensorType.FRAMEANGVEL)
_VELOCIMETER, _GYRO = int(SensorType.VELOCIMETER), int(SensorType.GYRO)
_BALLQUAT, _BALLANGVEL = int(SensorType.BALLQUAT), int(SensorType.BALLANGVEL)
_SUBTREECOM = int(SensorType.SUBTREECOM)

@kernel
def _any_acc_rows(m):
    for s in range(m.nsensor):
        if acc_rows(m, s):
            return True
    return False


@kernel
def _finite(x):
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            return False
    return True


_MAT = "float64[:, ::1]"
_MAT3 = "float64[:, :, ::1]"
_VEC = "float64[::1]"


@kernel
def _chol_solve_rows(a, x, n):
    """x <- (L L')^-1 x for every column of x (n, ncol) at once, L = a's lower triangle from
    chol_factor: mju_cholSolve's two substitutions (chol_solve) applied to whole rows, so each
    update is a contiguous row operation Numba vectorises, and L's zeros are skipped (used where
    H couples two branches, so that M + H is not tree-sparse). The back substitution subtracts in
    chol_solve's order; the forward one sums row by row instead of in mju_dot's order, and both
    multiply by the pivot's reciprocal rather than divide (round-off)."""
    ncol = x.shape[1]
    for i in range(n):
        xi = x[i]
        for k in range(i):
            f = a[i, k]
            if f != 0.0:
                xk = x[k]
                for c in range(ncol):
                    xi[c] -= f * xk[c]
        inv = 1.0 / a[i, i]
        for c in range(ncol):
            xi[c] *= inv
    for i in range(n - 1, -1, -1):
        xi = x[i]
        for j in range(n - 1, i, -1):
            f = a[j, i]
            if f != 0.0:
                xj = x[j]
                for c in range(ncol):
                    xi[c] -= f * xj[c]
        inv = 1.0 / a[i, i]
        for c in range(ncol):
            xi[c] *= inv


@kernel
def _constrained_forward(m, d, rhs, rhs_f, mats, kdense):
    """rhs_f <- dqacc_fwd/d[q, v, act, ctrl]: (M + H)^-1 (rhs + [G_q, G_v, 0, 0] - d(M qacc +
    bias)/d[q, v]) at forward's qacc (rhs: the smooth forces' partials; mats[2:5]: G_q, G_v, H;
    M + H factorised in M's sparse layout when H lies in M's pattern, else densely by Cholesky in
    kdense, util_solve's chol_factor, then solved for all the columns at once, _chol_solve_rows).
    mats[0:2] are used as scratch."""
    nv = m.nv
    tq, tv, gq, gv, hc = mats[0], mats[1], mats[2], mats[3], mats[4]
    rne_derivs_qv(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq, tv)
    for r in range(nv):
        for c in range(rhs.shape[1]):
            rhs_f[r, c] = rhs[r, c]
        for c in range(nv):
            rhs_f[r, c] += gq[r, c] - tq[r, c]
            rhs_f[r, nv + c] += gv[r, c] - tv[r, c]
    if _gather_in_m(m, d, hc, d.scratch_nC):
        # H within M's pattern (every row's dofs on one ancestor chain: contacts and limits of one
        # branch against the world, the feet on a floor): M + H is tree-sparse too, and its
        # L^T D L factor (mj_factorI's, from the leaves) has no fill-in. _system overwrites the
        # scratch after this.
        factor_i(d.scratch_nC, d.scratch_nv_a, m.M_rownnz, m.M_rowadr, m.M_colind)
        solve_ld_rows(m, d.scratch_nC, d.scratch_nv_a, rhs_f, 1.0)
        return
    for r in range(nv):
        for c in range(nv):
            kdense[r, c] = 0.0
    full_m_kernel(kdense, d.M, m.M_rownnz, m.M_rowadr, m.M_colind)  # M's pattern only
    for r in range(nv):
        for c in range(nv):
            kdense[r, c] += hc[r, c]
    chol_factor(kdense, nv, MINVAL)
    _chol_solve_rows(kdense, rhs_f, nv)


@kernel
def _gather_in_m(m, d, hc, qh):
    """qh = M + H in M's sparse layout (d.M's), if H (dense, symmetric) has no entry outside M's
    pattern; else False (qh then partly written). Counted, not searched: row r's entries left of
    the diagonal in M's pattern (M_colind) against all of row r's entries left of it."""
    colind = m.M_colind
    for r in range(m.nv):
        adr = m.M_rowadr[r]
        n = m.M_rownnz[r]
        total = 0
        for c in range(r):
            if hc[r, c] != 0.0:
                total += 1
        inside = 0
        for t in range(n):
            c = colind[adr + t]
            if c != r and hc[r, c] != 0.0:
                inside += 1
            qh[adr + t] = d.M[adr + t] + hc[r, c]
        if inside != total:
            return False
    return True


@handle_entry(returns="boolean", args="float64[:, ::1], float64[:, :, ::1]",
              needed=lambda m: bool(m.body_gravcomp.any()))
def gravcomp_partials_entry(m, d, rhs, body):
    """rhs = d qfrc_gravcomp / d qpos, (nv, nv), the passive and actuatorgravcomp parts together;
    returns whether gravity compensation acts (mj_gravcomp's conditions). The force
    f_k = -gravcomp_k mass_k g at each body's com, constant in the world, is mapped by the com's
    Jacobian. With o the com frame's point, M and R the summed gravcomp mass and first moment
    (about o) of a body's subtree, the subtree's wrench about o is W = (g x R, -M g). A tangent
    step along S_j = (w_j, v_j) moves the coms of the bodies after j, changing that torque by
    T_j(b) = v_j x (-M_b g) - (w_j x R_b) x g. So d tau_i/d q_j = (S_j x S_i) . W_bi
    + w_i . T_j(bi) where j moves i's axis (its ancestor, or the same ball/free rotation group),
    and w_i . T_j(bj) where j lies after i. ``body`` (nbody, 2, 6) scratch: [b, 0, 0] M_b,
    [b, 0, 1:4] R_b."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    g = m.opt_gravity
    if flags & DSBL_GRAVITY or (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) == 0.0 \
            or (flags & DSBL_SPRING and flags & DSBL_DAMPER) or not _any_nonzero(m.body_gravcomp):
        return False
    for r in range(m.nv):
        for c in range(m.nv):
            rhs[r, c] = 0.0
    for b in range(m.nbody):
        for k in range(4):
            body[b, 0, k] = 0.0
    for b in range(1, m.nbody):
        mu = m.body_mass[b] * m.body_gravcomp[b]
        o = d.subtree_com[m.body_rootid[b]]
        body[b, 0, 0] += mu
        for k in range(3):
            body[b, 0, 1 + k] += mu * (d.xipos[b, k] - o[k])
    for b in range(m.nbody - 1, 0, -1):
        p = m.body_parentid[b]
        if p > 0:
            for k in range(4):
                body[p, 0, k] += body[b, 0, k]
    for i in range(m.nv):
        bi = m.dof_bodyid[i]
        first, n, rot = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, i)
        j = i
        while j >= 0:
            rhs[i, j] += _gravcomp_moved(d.cdof, body, g, j, i, bi)
            if j != i:
                if rot and first <= j < first + n:
                    rhs[j, i] += _gravcomp_moved(d.cdof, body, g, i, j, m.dof_bodyid[j])
                else:
                    # i (after j) moves the coms of its body's subtree, not j's axis
                    t = _gravcomp_torque(d.cdof, body, g, i, bi)
                    rhs[j, i] += d.cdof[j, 0] * t[0] + d.cdof[j, 1] * t[1] + d.cdof[j, 2] * t[2]
            j = m.dof_parentid[j]
    return True


@kernel(inline="always")
def _gravcomp_torque(cdof, body, g, j, b):
    """T_j(b) = v_j x (-M_b g) - (w_j x R_b) x g (``gravcomp_partials_entry``)."""
    mb = body[b, 0, 0]
    f = (-mb * g[0], -mb * g[1], -mb * g[2])
    w = (cdof[j, 0], cdof[j, 1], cdof[j, 2])
    v = (cdof[j, 3], cdof[j, 4], cdof[j, 5])
    wr = cross3(w, (body[b, 0, 1], body[b, 0, 2], body[b, 0, 3]))
    t1 = cross3(v, f)
    t2 = cross3(wr, g)
    return t1[0] - t2[0], t1[1] - t2[1], t1[2] - t2[2]


@kernel(inline="always")
def _gravcomp_moved(cdof, body, g, j, i, b):
    """d tau_i / d q_j where j moves i's axis and the coms of b (i's body) and after it."""
    mb = body[b, 0, 0]
    r = (body[b, 0, 1], body[b, 0, 2], body[b, 0, 3])
    torque = cross3(g, r)
    force = (-mb * g[0], -mb * g[1], -mb * g[2])
    sj = row6(cdof, j)
    sx = cross_motion(sj, cdof, i)
    t = _gravcomp_torque(cdof, body, g, j, b)
    return (sx[0] * torque[0] + sx[1] * torque[1] + sx[2] * torque[2]
            + sx[3] * force[0] + sx[4] * force[1] + sx[5] * force[2]
            + cdof[i, 0] * t[0] + cdof[i, 1] * t[1] + cdof[i, 2] * t[2])


_SENSORS_NONE, _SENSORS_ANALYTICAL, _SENSORS_FD = 0, 1, 2
STATUS_NONFINITE, STATUS_REFUSED, STATUS_PIVOT = -1, -2, -3


@handle_entry(returns="int64", args=", ".join((
    "float64", "int64", _MAT, _MAT, _MAT, _MAT, _MAT, _MAT3, _MAT, _MAT3, _MAT, _MAT, _MAT, "int64[:, ::1]",
    _MAT3, _MAT, "int64[:, ::1]", _VEC, _VEC, _VEC, _VEC, _VEC, _VEC, _MAT, _VEC)))
def transition_derivatives_entry(m, d, eps, mode, a_mat, b_mat, c_mat, d_mat, au, aa, rhs, mats, rhs_f,
                                 kdense, fbuf, ibuf, hbuf, jac, codes, qpos, qvel, act, ctrl, qfrc_applied,
                                 qacc_warmstart, xfrc_applied, time):
    """A, B (and C, D when c_mat has rows) of one step from the state (qpos ... time: the caller's
    Data's arrays, copied into d, a work Data; d's mocap and equality states as the caller set
    them): forward, then the chain rule (module docstring). ``mode``: the sensors (_SENSORS_*).
    Returns 0; STATUS_REFUSED with codes[0, 0] rows of ``_refusals`` from codes[1] (with
    sensors="fd" the not-differentiated sensors are listed there and 0 returned);
    STATUS_NONFINITE for a non-finite qpos, qvel, act, ctrl or qfrc_applied; STATUS_PIVOT where
    implicit's LU fails; or 1 + the constraint derivatives' status when they fail (the matrices are
    then not meaningful). ``mats``: (6, nv, nv) scratch (dtau/dq, dtau/dv, G_q, G_v, H, rows);
    ``rhs_f`` (like rhs), ``kdense`` (nv, nv), and the constraint derivatives' fbuf, ibuf, hbuf
    (derivative_constraint.work_shapes) for states with constraint rows; ``eps`` their
    position step; ``jac`` (JAC_ROWS, nv) the frame sensors' Jacobians."""
    _refusals(m, xfrc_applied, mode != _SENSORS_NONE, codes)
    if codes[0, 0] > 0:
        if mode != _SENSORS_FD:
            return STATUS_REFUSED
        for k in range(1, codes[0, 0] + 1):
            if codes[k, 0] < R_SENSOR:
                return STATUS_REFUSED
    if not (_finite(qpos) and _finite(qvel) and _finite(act) and _finite(ctrl) and _finite(qfrc_applied)
            and copy_xfrc(d, xfrc_applied)):
        return STATUS_NONFINITE
    for k in range(m.nq):
        d.qpos[k] = qpos[k]
    for k in range(m.nv):
        d.qvel[k] = qvel[k]
        d.qfrc_applied[k] = qfrc_applied[k]
        d.qacc_warmstart[k] = qacc_warmstart[k]
    for k in range(m.na):
        d.act[k] = act[k]
    for k in range(m.nu):
        d.ctrl[k] = ctrl[k]
    d.time[0] = time[0]
    if c_mat.shape[0] > 0:
        forward_entry(m, d)
    else:
        forward_skip_sensor_entry(m, d)
    constrained = d.efc_counts[COUNT_NEFC] > 0
    if constrained:
        status = constraint_derivatives_entry(m, d, eps, mats[2], mats[3], mats[4], fbuf, ibuf, hbuf)
        if status != STATUS_OK:
            return 1 + status
    nv = m.nv
    ndx = 2 * nv + m.na
    # the activation rows (_step_rows writes every entry of the others)
    for r in range(2 * nv, ndx):
        for c in range(ndx):
            a_mat[r, c] = 0.0
        for c in range(m.nu):
            b_mat[r, c] = 0.0
    _actuator_partials(m, d, au, aa, a_mat, b_mat)
    tendon_clamp(m, d, au, aa, _FL, _FV, _FU, _FA)
    _force_partials(m, d, au, aa, rhs)
    # the moving moments and applied wrenches (derivative_transmission), mats[5] scratch
    bad = transmission_partials(m, d, au, _FL, _FV, rhs, mats[5], fbuf, ibuf)
    if bad < 0:
        bad = tendon_partials(m, d, rhs, mats[5], fbuf, ibuf)
    if bad >= 0:
        _refuse(codes, R_SPATIAL_TENDON, bad)
        return STATUS_REFUSED
    xfrc_partials(m, d, rhs)
    tq, tv = mats[0], mats[1]
    # a unit compiled only for models with gravity compensation
    gravcomp = _any_nonzero(m.body_gravcomp) and gravcomp_partials_entry(m, d, tq, d.scratch_rne_body)
    if gravcomp:
        clamp_gravcomp_rows(m, d, tq)
        for r in range(nv):
            for c in range(nv):
                rhs[r, c] += tq[r, c]
    if m.opt_real[OPT_DENSITY] > 0.0 or m.opt_real[OPT_VISCOSITY] > 0.0:
        # a unit compiled only for models in a medium (derivative_fluid)
        fluid_partials_entry(m, d, rhs)
    if c_mat.shape[0] > 0:
        sensor_rows_entry(m, d, au, aa, c_mat, d_mat, gravcomp, tq, jac)
        # the actuator sensors of moving transmissions (derivative_transmission)
        actuator_sensor_rows_entry(m, d, au, aa, c_mat, d_mat, mats[5], fbuf, ibuf, _FL, _FV, _FU, _FA)
    acc_sensors = c_mat.shape[0] > 0 and _any_acc_rows(m)
    if constrained or acc_sensors:
        if not constrained:
            # forward's dqacc for the acceleration-stage sensors: M^-1 (df - d(M qacc + bias))
            for k in range(2, 5):
                for r in range(nv):
                    for c in range(nv):
                        mats[k, r, c] = 0.0
        _constrained_forward(m, d, rhs, rhs_f, mats, kdense)
    # a unit compiled only for models with acceleration-stage sensors (derivative_sensor)
    if acc_sensors and sensor_acc_rows_entry(m, d, rhs_f, c_mat, d_mat, jac, codes) and mode != _SENSORS_FD:
        return STATUS_REFUSED
    qacc = d.scratch_nv_b
    qld, diaginv, ok = _system(m, d, au, aa, rhs, qacc, mats)
    if not ok:
        return STATUS_PIVOT
    system_partials(m, d, au, _FV, rhs, qacc, mats[5], fbuf, ibuf)
    integrator = m.opt_flags[OPT_INTEGRATOR]
    if constrained and integrator == INT_EULER and not eulerdamp_active(m):
        # plain Euler steps with forward's qacc: its derivative is the step's
        _step_rows(m, d, rhs_f, qacc, a_mat, b_mat)
        return 0
    if constrained:
        # K dqacc = ... + d qfrc_constraint, = G_q dq + G_v dv - H dqacc_fwd
        gq, gv, hc = mats[2], mats[3], mats[4]
        ncol = rhs.shape[1]
        for r in range(nv):
            row = rhs[r]
            for c in range(nv):
                row[c] += gq[r, c]
                row[nv + c] += gv[r, c]
            # H is zero outside the rows' dofs: whole contiguous rows for its other entries
            for k in range(nv):
                f = hc[r, k]
                if f != 0.0:
                    row_f = rhs_f[k]
                    for c in range(ncol):
                        row[c] -= f * row_f[c]
    # the rigid body at the integrator's acceleration: d(M qacc + qfrc_bias)/d(q, v)
    for v in range(nv):
        d.qacc[v] = qacc[v]
    if constrained and integrator == INT_EULER:
        # _constrained_forward's call at forward's qacc left tv (it does not depend on qacc) and
        # the velocity-only scratch; Euler's _system uses neither (implicit's bias curvature does)
        rne_derivs_q(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq)
    else:
        rne_derivs_qv(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq, tv)
    for r in range(nv):
        for c in range(nv):
            rhs[r, c] -= tq[r, c]
            rhs[r, nv + c] -= tv[r, c]
    if integrator == INT_IMPLICIT:
        _solve_lu_rows(d.scratch_lu, rhs, mats[5][0])
    else:
        lone = integrator == INT_IMPLICITFAST and _lone_free_bodies(m)
        if lone:
            # rhs_f (forward's dqacc, consumed above) keeps the right-hand side for their blocks
            for r in range(nv):
                for c in range(rhs.shape[1]):
                    rhs_f[r, c] = rhs[r, c]
        solve_ld_rows(m, qld, diaginv, rhs, 1.0)
        if lone:
            _lone_block_rows(m, d, rhs, rhs_f, tq, tv[0, :6])
    _step_rows(m, d, rhs, qacc, a_mat, b_mat)
    return 0


_TRANSITION_DERIVATIVES = FastEntry(transition_derivatives_entry)


def work_arrays(m, w) -> tuple:
    """The unit's scratch arrays for model ``m`` (w: a Data of it), to keep and pass on every call:
    au, aa, rhs, mats, rhs_f, kdense, fbuf, ibuf, hbuf, jac, codes."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    fshape, ishape, hshape = work_shapes(m, w)
    return (np.empty((6, nu)), np.empty((2, nu, na)), np.empty((nv, ndx + nu)), np.empty((6, nv, nv)),
            np.empty((nv, ndx + nu)), np.empty((nv, nv)), np.empty(fshape), np.empty(ishape, dtype=np.int64),
            np.empty(hshape), np.zeros((JAC_ROWS, nv)), np.zeros((refusal_capacity(m), 2), dtype=np.int64))


def step_derivatives(m, w, mode: int, work: tuple, out: tuple, src, eps: float = 1e-7) -> int:
    """Run the unit: A, B, C, D of one step from ``src``'s state (a Data of m: read only) into
    ``out``, on the work Data ``w`` (written: forward's fields, qacc) with ``work`` (work_arrays).
    Returns the unit's status (nonzero: the matrices are void)."""
    args = (eps, mode, *out, *work, src.qpos, src.qvel, src.act, src.ctrl, src.qfrc_applied,
            src.qacc_warmstart, src.xfrc_applied, src._time)
    try:
        return _TRANSITION_DERIVATIVES.call(m._ptr, w._ptr, *args)
    except NotBound:  # the model changed since it was bound (a solver switched, say): as forward
        rebind(m, w)
        return _TRANSITION_DERIVATIVES.call(m._ptr, w._ptr, *args)
