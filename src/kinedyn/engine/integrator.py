"""Time integration: ``step`` with Euler, RK4 and implicitfast (engine_forward.c).

* Euler (``mj_Euler``) is semi-implicit: qvel is advanced first and qpos with the new
  qvel. With joint damping it is implicit in the damping: it solves
  (M + h diag(damping)) qacc = qfrc_smooth, unless the eulerdamp flag is disabled.
  Tendon damping stays explicit here, as in MuJoCo 4.0's mj_EulerSkip (dof damping only).
* RK4 (``mj_RungeKutta``) is the classic 4-stage tableau on (qpos, qvel, act), with
  ball/free orientations advanced Runge-Kutta-Munthe-Kaas style (``_rkmk_stage_rates``).
* implicitfast (``mj_implicit``) solves (M - h D) qacc = qfrc_smooth, where D is the
  symmetric part of d qfrc_smooth / d qvel from joint and tendon damping and actuators
  with velocity-dependent gain or bias (no Coriolis terms).
* implicit (``mj_implicit`` with mjINT_IMPLICIT) solves (M - h qDeriv) qacc = qfrc_smooth +
  qfrc_constraint with the full qDeriv = d qfrc_smooth / d qvel, the velocity derivative of
  the RNE bias (Coriolis and centrifugal) included: unsymmetric, factored by MuJoCo's sparse LU
  (util_solve.factor_lu_tree) on the D pattern.

Activations advance with ``next_activation`` (exact for filterexact, clamped to
actrange); quaternions advance on the manifold (``integrate_pos``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kinedyn._jit import FastEntry, NotBound, entry, handle_entry, kernel, rebind
from kinedyn.engine.actuation import fwd_actuation_entry, next_activation, wrap_period, wrap_setpoint
from kinedyn.engine.checks import bad_model_data, check_model_data
from kinedyn.engine.collision_driver import COUNT_DROPPED, warn_if_contacts_dropped
from kinedyn.engine.constraint import discrete_rows_supported
from kinedyn.engine.data import reset
from kinedyn.engine.derivative import (
    _free_body_implicit,
    _is_free_body,
    dof_damping_deriv,
    eulerdamp_active,
    implicit_lu_entry,
    implicit_matrix,
)
from kinedyn.engine.forward import (
    forward_entry,
    forward_skip_sensor_entry,
    forward_with_callbacks,
    fwd_acceleration_entry,
    fwd_velocity_entry,
)
from kinedyn.engine.history import advance_history
from kinedyn.engine.inverse import check_discrete_inverse, compare_fwd_inv
from kinedyn.engine.metric import used as metric_used
from kinedyn.engine.passive_plastic import plastic_update_entry
from kinedyn.engine.sensor import advance_sensor_history, sensor_acc_entry, sensor_vel_entry
from kinedyn.engine.sleep import S_ASLEEP, S_AWAKE, sleep_entry, update_sleep_entry
from kinedyn.engine.sleep import enabled as sleep_enabled
from kinedyn.engine.sleep import needed as sleep_needed
from kinedyn.engine.smooth_inertia import factor_i, solve_ld
from kinedyn.engine.solver import fwd_constraint_entry
from kinedyn.engine.support import integrate_pos_kernel
from kinedyn.engine.types import (
    COUNT_NEFC,
    DSBL_ACTUATION,
    DYN_DCMOTOR,
    DYN_INTEGRATOR,
    ENBL_FWDINV,
    INT_DISCRETE,
    INT_EULER,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    INT_RK4,
    JNT_BALL,
    JNT_FREE,
    MAXVAL,
    OPT_DISABLEFLAGS,
    OPT_ENABLEFLAGS,
    OPT_INTEGRATOR,
    WARN_BADQACC,
    WARN_BADQPOS,
    WARN_BADQVEL,
    DisableBit,
)
from kinedyn.engine.util_dcmotor import dcmotor_next_state
from kinedyn.engine.util_solve import factor_lu_tree, solve_lu_tree
from kinedyn.engine.util_spatial import copy
from kinedyn.errors import NonFiniteStateWarning

# status codes returned by the step kernel: which state field went bad, or (STATUS_FWDINV) that
# the fwdinv comparison needs the discrete inverse with RK4, which MuJoCo refuses (mjERROR)
STATUS_OK, STATUS_BADQPOS, STATUS_BADQVEL, STATUS_BADQACC, STATUS_FWDINV = 0, 1, 2, 3, 4
# the discrete integrator met constraint rows, whose solve in its metric kinedyn does not reproduce
STATUS_DISCRETE_ROWS = 5
DISCRETE_ROWS = ('integrator="discrete" with constraint rows (contacts, limits, equalities, friction loss) '
                 "is reproduced by kinedyn with the Newton solver on a dense constraint Jacobian only "
                 "(docs/deviations.md): this forward pass made some")
# returned by the per-integrator entries instead of STATUS_OK when the step's last forward pass
# dropped contacts (efc_counts[COUNT_DROPPED]): step's Python wrapper then needs no read of its own
STATUS_DROPPED = -1
_STATUS_FIELD = {STATUS_BADQPOS: "qpos", STATUS_BADQVEL: "qvel", STATUS_BADQACC: "qacc"}
_STATUS_WARNING = {STATUS_BADQPOS: WARN_BADQPOS, STATUS_BADQVEL: WARN_BADQVEL, STATUS_BADQACC: WARN_BADQACC}

# RK4 tableau: A (stage weights, lower triangular), B (final weights); C = row sums of A
RK4_A = np.array([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
RK4_B = np.array([1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0])


# c(t) = (1 - (t/2) cot(t/2)) / t^2 of the RKMK correction as MuJoCo 4.0.0 evaluates it for
# t^2 < _RKMK_SERIES_TT: a polynomial in t^2, highest power first (Horner). Its coefficients are
# near the Taylor series' (1/12, 1/720, 1/30240, ...) but not equal to them: they are the values
# in libmujoco.so.4.0.0, which bit-identical steps need (see _rkmk_stage_rates).
_RKMK_C = np.array([float.fromhex(x) for x in (
    "0x1.bb4461c12159bp-47", "0x1.63f584ed94b16p-42", "0x1.d96c3e373ff92p-37",
    "0x1.226d7efb1cba7p-31", "0x1.66a9947cefd5bp-26", "0x1.bbd7762ca65dcp-21",
    "0x1.1566abc3ad7b2p-15", "0x1.6c16c16c1379bp-10", "0x1.5555555555559p-4")])
_RKMK_SERIES_TT = 1.75 * 1.75
_PI_SQUARED = np.pi * np.pi
_TWO_PI = 2.0 * np.pi


@kernel
def _first_bad(x):
    for i in range(x.shape[0]):
        if not (abs(x[i]) <= MAXVAL):
            return True
    return False


@kernel
def _total_force(d, qfrc):
    """qfrc = qfrc_smooth + qfrc_constraint: what the implicit integrators solve with."""
    for v in range(qfrc.shape[0]):
        qfrc[v] = d.qfrc_smooth[v] + d.qfrc_constraint[v]


@kernel
def _advance(m, d, act_dot, qacc, qvel, sample_sensors):
    """Advance act, qvel, qpos and time by one step (mj_advance).

    qpos moves with ``qvel``: the updated d.qvel for Euler-type integrators, the RK4
    combination for RK4. ``sample_sensors``: the sensor history buffers take their samples here
    (RK4 has taken them at its start state).
    """
    h = m.opt_timestep[0]
    # history buffers take ctrl and the sensors at the pre-step time
    if m.nhistory > 0:
        advance_history(m, d)
        if sample_sensors:  # RK4 takes them at its start state (_rk4)
            advance_sensor_history(m, d)
    # activations, unless actuation is disabled
    if m.na > 0 and not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        for i in range(m.nactuator):
            adr = m.actuator_actadr[i]
            for j in range(adr, adr + m.actuator_actnum[i]):
                if m.actuator_dyntype[i] == DYN_DCMOTOR:  # its states each integrate their own way
                    d.act[j] = dcmotor_next_state(m, d, i, j, d.act[j], act_dot[j], h)
                else:
                    d.act[j] = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                               m.actuator_actlimited[i], m.actuator_actrange[i],
                                               d.act[j], act_dot[j], h)
        # rotational setpoints held in act: keep the representative nearest the length
        for i in range(m.nactuator):
            if m.actuator_dyntype[i] != DYN_INTEGRATOR:
                continue
            period = wrap_period(m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype,
                                 m.actuator_gainprm, m.actuator_biasprm, m.actuator_trntype, m.actuator_trnid,
                                 m.actuator_gear, m.jnt_type, i)
            if period > 0.0:
                adr = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
                d.act[adr] = wrap_setpoint(d.act[adr], d.actuator_length[i], period)
    if sleep_enabled(m):
        _advance_sleeping_entry(m, d, qacc, qvel, h)
    else:
        # velocities, then positions with the new (or the given) velocities: semi-implicit Euler
        new_qvel = d.qvel   # one handle read, outside the loop
        for v in range(m.nv):
            new_qvel[v] += h * qacc[v]
        integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, d.qpos, qvel, h,
                             d.scratch_quat, d.scratch_vec)
    # springs with a yield: their rest positions follow the new positions (passive_plastic)
    if m.nplastic > 0:
        plastic_update_entry(m, d, qvel)
    d.time[0] += h
    # the next step's constraint solver starts from this step's forward acceleration
    for v in range(m.nv):
        d.qacc_warmstart[v] = d.qacc[v]


# a unit of its own, needed only by models that sleep
@handle_entry(needed=sleep_needed, args="float64[::1], float64[::1], float64")
def _advance_sleeping_entry(m, d, qacc, qvel, h):
    """mj_advance with sleeping enabled: mj_sleep first; if it put trees to sleep (their qvel now
    zero) the velocity-dependent stages run again (mj_forwardSkip from the velocity stage) and
    the sleep arrays are updated; then only the awake trees move."""
    kept = d.scratch_sleep_qacc  # the integrator's qacc, which the new forward must not touch
    for v in range(m.nv):
        kept[v] = qacc[v]
    if sleep_entry(m, d):
        fwd_velocity_entry(m, d)
        sensor_vel_entry(m, d)
        fwd_actuation_entry(m, d)
        fwd_acceleration_entry(m, d)
        fwd_constraint_entry(m, d)
        sensor_acc_entry(m, d)
        update_sleep_entry(m, d)
    for v in range(m.nv):
        if d.body_awake[m.dof_bodyid[v]] == S_AWAKE:
            d.qvel[v] += h * kept[v]
    # joints of sleeping bodies keep their qpos bit for bit (the integration would renormalise
    # their quaternions)
    held = d.scratch_sleep_qpos
    for k in range(m.nq):
        held[k] = d.qpos[k]
    integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, d.qpos, qvel, h,
                         d.scratch_quat, d.scratch_vec)
    for j in range(m.njnt):
        if d.body_awake[m.jnt_bodyid[j]] == S_ASLEEP:
            adr = m.jnt_qposadr[j]
            nq = m.jnt_qposadr[j + 1] - adr if j + 1 < m.njnt else m.nq - adr
            for k in range(adr, adr + nq):
                d.qpos[k] = held[k]


@kernel
def euler_skip(m, d, skipfactor):
    """mj_EulerSkip: with ``skipfactor`` the factorised M + h diag(B) of the previous Euler step on
    this Data is reused (mjd_transitionFD's perturbed steps; engine.derivative_fd)."""
    qacc = d.scratch_nv_a
    if eulerdamp_active(m):
        # implicit in damping: (M + h diag(B)) qacc = qfrc_smooth, B = d(v k(v))/dv of the dampers
        qh = d.scratch_nC
        if not skipfactor:
            copy(qh, d.M)
            for v in range(m.nv):
                qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += m.opt_timestep[0] * dof_damping_deriv(m, d, v)
            factor_i(qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
        _total_force(d, qacc)
        solve_ld(qacc, qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    else:
        copy(qacc, d.qacc)
    _advance(m, d, d.act_dot, qacc, d.qvel, True)


@handle_entry
def _euler(m, d):
    euler_skip(m, d, False)


@handle_entry
def _implicitfast(m, d):
    # qH = M - h D, D = d qfrc_smooth / d qvel restricted to M's sparsity
    qh = d.scratch_nC
    implicit_matrix(m, d, qh)
    factor_i(qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    qacc = d.scratch_nv_a
    _total_force(d, qacc)
    solve_ld(qacc, qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    # standalone free bodies: redo their 6x6 block with the gyroscopic derivative included
    for j in range(m.njnt):
        if _is_free_body(m, j):
            _free_body_implicit(m, d, j, qacc)
    _advance(m, d, d.act_dot, qacc, d.qvel, True)


@handle_entry(needed=metric_used)
def _discrete(m, d):
    # mj_discrete: qacc is already the step map (v+ - v)/h, solved in the effective metric by
    # the forward pass (engine.metric): advance with it as the Euler step does
    _advance(m, d, d.act_dot, d.qacc, d.qvel, True)


@handle_entry(needed=lambda m: m.opt.integrator == INT_IMPLICIT)
def _implicit(m, d):
    # qLU = M - h qDeriv with the bias derivative, factored without pivoting as MuJoCo does
    implicit_lu_entry(m, d)
    a = d.scratch_lu
    qacc = d.scratch_nv_a
    _total_force(d, qacc)
    if factor_lu_tree(a, m.dof_parentid, m.nv):
        solve_lu_tree(a, qacc, m.nv)
    else:
        # a pivot below MINVAL (MuJoCo stops with mjERROR): a non-finite qacc, which the next
        # step's check reports and resets
        for v in range(m.nv):
            qacc[v] = math.nan
    _advance(m, d, d.act_dot, qacc, d.qvel, True)


@kernel
def _rkmk_stage_rates(jnt_type, jnt_dofadr, vel, h, rate):
    """Runge-Kutta-Munthe-Kaas correction of a stage's ball/free angular velocities, in place.

    A stage orientation is q0 * exp(theta) with theta = h * vel (vel: the stage's weighted
    sum of the corrected rates of earlier stages), taken as the principal logarithm. With
    body-frame angular velocity w,
    theta' = dexp^-1_{-theta}(w) = w + 1/2 theta x w + c(t) theta x (theta x w),
    c(t) = (1 - (t/2) cot(t/2)) / t^2, t = |theta| (the exact inverse of the right-trivialised
    exponential's differential). MuJoCo 4.0.0's RK4 combines these rates instead of the raw w
    (changelog 4.0.0, commit 9a7f240f0; its C source is not public yet).

    Bit-identity with mj_RungeKutta needs MuJoCo's exact evaluation, read from the instructions
    of libmujoco.so.4.0.0 (the source being unavailable): the wrap test on t^2 > pi^2 (not on
    t > pi), the wrap as t - 2 pi floor(t / 2pi + 1/2), and c(t) from the degree-8 polynomial
    in t^2 below (``_RKMK_C``, Horner order) whenever t^2 < 1.75^2, the closed form only
    above. The closed form in the polynomial's range differs from it in the last bit for ~1% of
    gymnasium Humanoid's steps, which then shows in a free joint's quaternion (test_integrate.py
    ``test_rk4_free_body_bitwise``).
    """
    for j in range(jnt_type.shape[0]):
        if jnt_type[j] == JNT_FREE:
            adr = jnt_dofadr[j] + 3
        elif jnt_type[j] == JNT_BALL:
            adr = jnt_dofadr[j]
        else:
            continue
        t0 = h * vel[adr]
        t1 = h * vel[adr + 1]
        t2 = h * vel[adr + 2]
        tt = t0 * t0 + t1 * t1 + t2 * t2
        if tt == 0.0:
            continue
        if tt > _PI_SQUARED:
            # the stage rotation's principal logarithm: exp(theta) is unchanged by whole turns,
            # and MuJoCo 4.0.0 corrects with the angle in (-pi, pi] (its steps past pi match only so)
            t = np.sqrt(tt)
            scale = (t - _TWO_PI * np.floor(t / _TWO_PI + 0.5)) / t
            t0 *= scale
            t1 *= scale
            t2 *= scale
            tt = t0 * t0 + t1 * t1 + t2 * t2
        w0, w1, w2 = rate[adr], rate[adr + 1], rate[adr + 2]
        # theta x w, then theta x (theta x w)
        c0 = t1 * w2 - t2 * w1
        c1 = t2 * w0 - t0 * w2
        c2 = t0 * w1 - t1 * w0
        d0 = t1 * c2 - t2 * c1
        d1 = t2 * c0 - t0 * c2
        d2 = t0 * c1 - t1 * c0
        if tt < _RKMK_SERIES_TT:
            # polynomial in t^2: the closed form loses digits to cancellation at small t
            coef = _RKMK_C[0]
            for k in range(1, _RKMK_C.shape[0]):
                coef = coef * tt + _RKMK_C[k]
        else:
            t = np.sqrt(tt)
            coef = (1.0 - 0.5 * t / np.tan(0.5 * t)) / tt
        rate[adr] = w0 + 0.5 * c0 + coef * d0
        rate[adr + 1] = w1 + 0.5 * c1 + coef * d1
        rate[adr + 2] = w2 + 0.5 * c2 + coef * d2


@kernel
def _rk4(m, d, a_tab, b_tab):
    """The RK4 step after the forward pass at the start state (mj_RungeKutta, N = 4).

    Stage i starts from X_0 (+) h sum_j A[i-1, j] F_j, with F_j = (stage velocity, qacc,
    act_dot) of stage j, runs forward there, and the step advances X_0 by h sum_j B[j] F_j.
    Every array is read out of the handles once, into a local, and the loops below index
    2-D scratch rows in place rather than through row views.
    """
    nq, nv, na = m.nq, m.nv, m.na
    jnt_type, jnt_qposadr, jnt_dofadr = m.jnt_type, m.jnt_qposadr, m.jnt_dofadr
    h = m.opt_timestep[0]
    qpos, qvel, act, time = d.qpos, d.qvel, d.act, d.time
    qacc, act_dot = d.qacc, d.act_dot
    sq, sv = d.scratch_quat, d.scratch_vec
    q0 = d.scratch_qpos
    v0 = d.scratch_rk_qvel
    a0 = d.scratch_rk_act
    dq = d.scratch_rk_dq   # stage velocities (the "X" velocities)
    dv = d.scratch_rk_dv   # stage accelerations
    da = d.scratch_rk_da   # stage activation rates
    vel = d.scratch_nv_a   # the weighted sums of one stage
    acc = d.scratch_nv_b
    t0 = time[0]
    # the sensor buffers take their samples at the start state, before the stages overwrite it: a
    # delayed sensor is computed there, not at the last stage's state where mj_advance runs
    # (measured on the 4.0.0 wheel)
    if m.nhistory > 0:
        advance_sensor_history(m, d)
    # stage 0 from the forward pass already done by step
    for k in range(nq):
        q0[k] = qpos[k]
    for v in range(nv):
        v0[v] = qvel[v]
        dq[0, v] = qvel[v]
        dv[0, v] = qacc[v]
    for k in range(na):
        a0[k] = act[k]
        da[0, k] = act_dot[k]
    # with plasticity, MuJoCo 4.0 ends the step with the start state's tendon lengths and
    # Jacobians (the stages' are overwritten): the plastic update of the tendons reads them
    # (passive_plastic); without, the last stage's stay (measured on the 4.0.0 wheel, with and
    # without springyield on the same model)
    plastic = m.nplastic > 0
    ten_length, ten_J = d.ten_length, d.ten_J
    len0, jac0 = d.scratch_rk_tenlen, d.scratch_rk_tenJ
    if plastic:
        for t in range(ten_length.shape[0]):
            len0[t] = ten_length[t]
            for v in range(nv):
                jac0[t, v] = ten_J[t, v]
    for i in range(1, 4):
        # X_i = X_0 (+) h sum_j A[i-1, j] F_j
        for v in range(nv):
            sum_vel = 0.0
            sum_acc = 0.0
            for j in range(i):
                sum_vel += a_tab[i - 1, j] * dq[j, v]
                sum_acc += a_tab[i - 1, j] * dv[j, v]
            vel[v] = sum_vel
            acc[v] = sum_acc
        for k in range(nq):
            qpos[k] = q0[k]
        integrate_pos_kernel(jnt_type, jnt_qposadr, jnt_dofadr, qpos, vel, h, sq, sv)
        for v in range(nv):
            qvel[v] = v0[v] + h * acc[v]
        for k in range(na):
            sum_act = 0.0
            for j in range(i):
                sum_act += a_tab[i - 1, j] * da[j, k]
            act[k] = a0[k] + h * sum_act
        c = 0.0
        for j in range(i):
            c += a_tab[i - 1, j]
        time[0] = t0 + c * h
        forward_skip_sensor_entry(m, d)
        # F_i
        for v in range(nv):
            dq[i, v] = qvel[v]
            dv[i, v] = qacc[v]
        _rkmk_stage_rates(jnt_type, jnt_dofadr, vel, h, dq[i])
        for k in range(na):
            da[i, k] = act_dot[k]
    # final combination with weights B, from the initial state
    for v in range(nv):
        sum_vel = 0.0
        sum_acc = 0.0
        for j in range(4):
            sum_vel += b_tab[j] * dq[j, v]
            sum_acc += b_tab[j] * dv[j, v]
        vel[v] = sum_vel
        acc[v] = sum_acc
    act_rate = da[0]
    for k in range(na):
        sum_act = 0.0
        for j in range(4):
            sum_act += b_tab[j] * da[j, k]
        act_rate[k] = sum_act
    time[0] = t0
    for k in range(nq):
        qpos[k] = q0[k]
    for v in range(nv):
        qvel[v] = v0[v]
    for k in range(na):
        act[k] = a0[k]
    if plastic:
        for t in range(ten_length.shape[0]):
            ten_length[t] = len0[t]
            for v in range(nv):
                ten_J[t, v] = jac0[t, v]
    _advance(m, d, act_rate, acc, vel, False)
    # MuJoCo 4.0 leaves the combined acceleration in qacc (the warmstart keeps the last stage's)
    for v in range(nv):
        qacc[v] = acc[v]


@kernel
def _state_status(check, qpos, qvel):
    """mj_step's check before the forward pass: STATUS_BADQPOS, STATUS_BADQVEL or STATUS_OK."""
    if check:
        if _first_bad(qpos):
            return STATUS_BADQPOS
        if _first_bad(qvel):
            return STATUS_BADQVEL
    return STATUS_OK


@kernel
def _qacc_status(check, qacc):
    """mj_step's check after the forward pass: STATUS_BADQACC or STATUS_OK."""
    if check and _first_bad(qacc):
        return STATUS_BADQACC
    return STATUS_OK


@entry
def _checked_forward(m, d, check):
    """The forward pass of a step with mj_step's bad-state checks; a STATUS_* code."""
    status = _state_status(check, d.qpos, d.qvel)
    if status != STATUS_OK:
        return status
    forward_entry(m, d)
    status = _qacc_status(check, d.qacc)
    if status == STATUS_OK:
        status = _fwdinv_status(m, d)
    return status


@entry
def _fwdinv_status(m, d):
    """mj_step's comparison of forward and inverse dynamics, with the fwdinv enable flag
    (mj_compareFwdInv, into d.solver_fwdinv): STATUS_OK, or STATUS_FWDINV if impossible."""
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_FWDINV and not compare_fwd_inv(m, d):
        return STATUS_FWDINV
    return STATUS_OK


@handle_entry(returns="int64")
def _fwdinv_status_entry(m, d):
    return _fwdinv_status(m, d)


_FWDINV_STATUS = FastEntry(_fwdinv_status_entry)


@handle_entry(returns="int64", args="boolean")
def step_entry(m, d, check):
    """One mj_step with the integrator chosen at run time; returns a STATUS_* code (the step
    stops at the first bad field). Compiles every integrator: for callers that cannot choose
    in Python (the batch kernels); ``step`` uses the per-integrator entries below."""
    integrator = m.opt_flags[OPT_INTEGRATOR]
    if integrator == INT_RK4:
        status = _step_rk4_entry(m, d, check)
    elif integrator == INT_IMPLICITFAST:
        status = _step_implicitfast_entry(m, d, check)
    elif integrator == INT_IMPLICIT:
        status = _step_implicit_entry(m, d, check)
    elif integrator == INT_DISCRETE:
        status = _step_discrete_entry(m, d, check)
    else:
        status = _step_euler_entry(m, d, check)  # INT_EULER
    return STATUS_OK if status == STATUS_DROPPED else status


@kernel(inline="always")
def _dropped_status(d, status):
    """STATUS_DROPPED for a step that went through with contacts dropped, else ``status``."""
    if status == STATUS_OK and d.efc_counts[COUNT_DROPPED]:
        return STATUS_DROPPED
    return status


# One entry per integrator, so that a program compiles only the integrator it steps with:
# RK4 holds four forward passes and implicitfast the free-body solve, each a large share of
# the cold-start compile time of step_entry.
@handle_entry(returns="int64", args="boolean", prefetch=lambda m: m.opt.integrator == INT_EULER)
def _step_euler_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _euler(m, d)
    return _dropped_status(d, status)


@handle_entry(returns="int64", args="boolean", prefetch=lambda m: m.opt.integrator == INT_IMPLICITFAST)
def _step_implicitfast_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _implicitfast(m, d)
    return _dropped_status(d, status)


# a unit of its own, needed only with the implicit integrator: a model that never uses it compiles
# none of its kernels (the bias derivative, the LU factor), step_entry (the batch kernels) included
@handle_entry(returns="int64", args="boolean", prefetch=lambda m: m.opt.integrator == INT_IMPLICIT,
              needed=lambda m: m.opt.integrator == INT_IMPLICIT)
def _step_implicit_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _implicit(m, d)
    return _dropped_status(d, status)


@handle_entry(returns="int64", args="boolean", prefetch=metric_used, needed=metric_used)
def _step_discrete_entry(m, d, check):
    status = _state_status(check, d.qpos, d.qvel)
    if status != STATUS_OK:
        return status
    forward_entry(m, d)
    # rows whose solve in the metric is not reproduced (the forward pass left qacc NaN)
    if d.efc_counts[COUNT_NEFC] > 0 and not discrete_rows_supported(m):
        return STATUS_DISCRETE_ROWS
    status = _qacc_status(check, d.qacc)
    if status == STATUS_OK:
        _discrete(m, d)
    return _dropped_status(d, status)


@handle_entry(returns="int64", args="boolean", prefetch=lambda m: m.opt.integrator == INT_RK4)
def _step_rk4_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _rk4(m, d, RK4_A, RK4_B)
    return _dropped_status(d, status)


# FastEntry per IntegratorType value, indexed by it (a tuple: indexing it with the NumPy integer
# read from opt_flags costs less than hashing that integer into a dict); None: not supported
_STEP_BY_INTEGRATOR = tuple(
    {INT_EULER: FastEntry(_step_euler_entry),
     INT_RK4: FastEntry(_step_rk4_entry),
     INT_IMPLICIT: FastEntry(_step_implicit_entry),
     INT_IMPLICITFAST: FastEntry(_step_implicitfast_entry),
     INT_DISCRETE: FastEntry(_step_discrete_entry)}.get(i)
    for i in range(max(INT_EULER, INT_RK4, INT_IMPLICIT, INT_IMPLICITFAST, INT_DISCRETE) + 1))


@handle_entry
def _integrate_entry(m, d):
    """The integrator part of step_entry, after a forward pass done elsewhere (Euler, implicitfast,
    implicit)."""
    if m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST:
        _implicitfast(m, d)
    elif m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICIT:
        _implicit(m, d)
    elif m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:
        _discrete(m, d)
    else:
        _euler(m, d)


_INTEGRATE = FastEntry(_integrate_entry)


def integrate(m, d) -> None:
    """The integrator alone, after a forward pass made elsewhere: mj_step2's last part.

    Advances time, qpos, qvel and act from d.qacc and d.act_dot with Euler, or with implicitfast
    when the model uses it. As in mj_step2, a model with RK4 is advanced by Euler here (RK4 needs
    forward passes of its own; use ``step``).
    """
    check_model_data(m, d, "integrate")
    try:
        _INTEGRATE.call(m._ptr, d._ptr)
    except NotBound:  # the model changed since it was bound (kinedyn._jit.bind)
        rebind(m, d)
        _INTEGRATE.call(m._ptr, d._ptr)


def _step_with_callbacks(m, d, check):
    """step_entry for models with user-actuator callbacks: forward runs the callbacks from Python."""
    if m.opt.integrator == INT_RK4:
        raise NotImplementedError("RK4 with user-actuator callbacks: its stages run compiled and cannot call "
                                  "Python; use Euler or implicitfast, or remove the callbacks")
    # _checked_forward with the callbacks' forward pass
    status = _state_status(check, d.qpos, d.qvel)
    if status != STATUS_OK:
        return status
    forward_with_callbacks(m, d)
    if m.opt._flags[0] == INT_DISCRETE and d.efc_counts[COUNT_NEFC] and not discrete_rows_supported(m):
        raise ValueError(DISCRETE_ROWS)
    status = _qacc_status(check, d.qacc)
    if status == STATUS_OK:
        status = _FWDINV_STATUS(m._ptr, d._ptr)
    if status == STATUS_OK:
        _INTEGRATE(m._ptr, d._ptr)
        if d.efc_counts[COUNT_DROPPED]:
            status = STATUS_DROPPED
    return status


def step(m, d, nstep: int = 1) -> None:
    """Advance the simulation by ``nstep`` steps of ``m.opt.timestep`` (mj_step).

    Runs ``forward`` and then the integrator in ``m.opt.integrator``. If qpos, qvel
    or qacc becomes non-finite (or beyond 1e10), a ``NonFiniteStateWarning`` names
    the field, the data is reset as MuJoCo does, and stepping goes on from the reset
    state (with the autoreset flag disabled, the step goes on unchecked instead).
    """
    try:  # inline, as in forward: the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "step")
    except AttributeError:
        bad_model_data(m, d, "step")
    # the flag and the integrator are read inline, as in forward: this wrapper is part of every
    # step's cost (m.opt.integrator and has_actuator_callbacks(m) cost 0.35 µs together)
    if m._has_actuator_callbacks:
        def one_step(mh, dh, check):
            return _step_with_callbacks(m, d, check)
    else:
        one_step = _STEP_BY_INTEGRATOR[m.opt._flags[0]].call
    if nstep == 1:  # the common call, without the loop: STATUS_OK (0) needs nothing more
        try:
            status = one_step(m._ptr, d._ptr, True)
        except NotBound:
            status = _step_after_rebind(m, d, one_step)
        if status:
            _after_step(m, d, one_step, status)
        return
    mh, dh = m._ptr, d._ptr
    for _ in range(nstep):
        try:
            status = one_step(mh, dh, True)
        except NotBound:
            status = _step_after_rebind(m, d, one_step)
        if status <= STATUS_OK:  # STATUS_OK or STATUS_DROPPED
            continue
        _recover(m, d, one_step, status)
    if d.efc_counts[COUNT_DROPPED]:
        warn_if_contacts_dropped(m, d)


def _step_after_rebind(m, d, one_step):
    """The step again after a NotBound: the model changed since it was bound (kinedyn._jit.bind).
    The units a step calls are the same in every forward pass of a step, so a missing one shows in
    its first pass, before the state moves, and the step can be repeated. One exception: with RK4,
    a collider family the model did not need when it was bound (contacts enabled later for geoms of
    a new type) whose first pair comes within range in a later stage of the step: that step then
    restarts from the stage's state (a known limitation, docs/architecture.md)."""
    rebind(m, d)
    return one_step(m._ptr, d._ptr, True)


def _after_step(m, d, one_step, status) -> None:
    """After one step that returned a status other than STATUS_OK: warn about dropped contacts
    (STATUS_DROPPED), or recover from a bad state and warn if that step dropped contacts."""
    if status == STATUS_DROPPED:
        warn_if_contacts_dropped(m, d, stacklevel=4)
        return
    _recover(m, d, one_step, status, stacklevel=4)
    if d.efc_counts[COUNT_DROPPED]:
        warn_if_contacts_dropped(m, d, stacklevel=4)


def _recover(m, d, one_step, status, stacklevel: int = 3) -> None:
    """After a step that stopped at a bad state: warn, reset (unless autoreset is disabled)
    and step on unchecked, as mj_step does (mj_checkPos, mj_checkVel, mj_checkAcc)."""
    if status == STATUS_FWDINV:
        check_discrete_inverse(m, "step (fwdinv)")
    if status == STATUS_DISCRETE_ROWS:
        raise ValueError(DISCRETE_ROWS)
    field = _STATUS_FIELD[status]
    bad = getattr(d, field)
    index = int(np.flatnonzero(~(np.abs(bad) <= MAXVAL))[0])
    autoreset = not m.opt.disableflags & DisableBit.AUTORESET
    warnings.warn(
        f"non-finite or huge {field}[{index}] = {bad[index]} at time {d.time:g}; "
        + ("data reset to the model's default state" if autoreset else "autoreset disabled"),
        NonFiniteStateWarning, stacklevel=stacklevel)
    if autoreset:
        reset(m, d)
    # counted after the reset, as mj_checkPos/Vel/Acc count theirs (the reset clears the counters)
    kind = _STATUS_WARNING[status]
    d.warning_counts[0, kind] += 1
    d.warning_counts[1, kind] = index
    one_step(m._ptr, d._ptr, False)
