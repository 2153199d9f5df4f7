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

Activations advance with ``next_activation`` (exact for filterexact, clamped to
actrange); quaternions advance on the manifold (``integrate_pos``).
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit

from kinedyn._handle import FastEntry, entry, handle_entry, kernel
from kinedyn._linalg3 import cross, mat_mul, mat_t, mat_vec, skew
from kinedyn._math import copy, quat_integrate, sub_quat
from kinedyn.actuation import has_actuator_callbacks, next_activation, wrap_period, wrap_setpoint
from kinedyn.data import reset
from kinedyn.errors import NonFiniteStateWarning
from kinedyn.forward import forward_entry, forward_with_callbacks
from kinedyn.inertia import factor_i, solve_ld
from kinedyn.muscle import muscle_gain_vel
from kinedyn.types import (
    BIAS_AFFINE,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DSBL_DAMPER,
    DSBL_EULERDAMP,
    DYN_INTEGRATOR,
    DYN_NONE,
    GAIN_AFFINE,
    GAIN_MUSCLE,
    INT_EULER,
    INT_IMPLICITFAST,
    INT_RK4,
    JNT_BALL,
    JNT_FREE,
    TRN_TENDON,
    DisableBit,
)

# mju_isBad: non-finite or beyond this magnitude (mjMAXVAL)
MAXVAL = 1e10

# status codes returned by the step kernel: which state field went bad
STATUS_OK, STATUS_BADQPOS, STATUS_BADQVEL, STATUS_BADQACC = 0, 1, 2, 3
_STATUS_FIELD = {STATUS_BADQPOS: "qpos", STATUS_BADQVEL: "qvel", STATUS_BADQACC: "qacc"}

# RK4 tableau: A (stage weights, lower triangular), B (final weights); C = row sums of A
RK4_A = np.array([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
RK4_B = np.array([1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0])


@kernel
def integrate_pos_kernel(jnt_type, jnt_qposadr, jnt_dofadr, qpos, qvel, h, sq, sv):
    """qpos <- qpos (+) h qvel on the joint manifold (mj_integratePos); sq, sv: scratch rows."""
    QUAT, VEL, TMP = 0, 0, 1
    for j in range(jnt_type.shape[0]):
        padr = jnt_qposadr[j]
        vadr = jnt_dofadr[j]
        jtype = jnt_type[j]
        if jtype == JNT_FREE:
            for k in range(3):
                qpos[padr + k] += h * qvel[vadr + k]
            padr += 3
            vadr += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            # body-frame angular velocity: q <- q * exp(h w / 2)
            for k in range(4):
                sq[QUAT, k] = qpos[padr + k]
            for k in range(3):
                sv[VEL, k] = qvel[vadr + k]
            quat_integrate(sq, QUAT, sv, VEL, h, sq, TMP)
            for k in range(4):
                qpos[padr + k] = sq[QUAT, k]
        else:
            qpos[padr] += h * qvel[vadr]


@kernel
def _first_bad(x):
    for i in range(x.shape[0]):
        if not (abs(x[i]) <= MAXVAL):
            return True
    return False


@handle_entry
def _advance(m, d, act_dot, qacc, qvel):
    """Advance act, qvel, qpos and time by one step (mj_advance).

    qpos moves with ``qvel``: the updated d.qvel for Euler-type integrators, the RK4
    combination for RK4.
    """
    h = m.opt_timestep[0]
    # activations, unless actuation is disabled
    if m.na > 0 and not m.opt_flags[1] & DSBL_ACTUATION:
        for i in range(m.nu):
            adr = m.actuator_actadr[i]
            for j in range(adr, adr + m.actuator_actnum[i]):
                d.act[j] = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                           m.actuator_actlimited[i], m.actuator_actrange[i],
                                           d.act[j], act_dot[j], h)
        # rotational setpoints held in act: keep the representative nearest the length
        for i in range(m.nu):
            if m.actuator_dyntype[i] != DYN_INTEGRATOR:
                continue
            period = wrap_period(m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype,
                                 m.actuator_gainprm, m.actuator_biasprm, m.actuator_trntype, m.actuator_trnid,
                                 m.actuator_gear, m.jnt_type, i)
            if period > 0.0:
                adr = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
                d.act[adr] = wrap_setpoint(d.act[adr], d.actuator_length[i], period)
    # velocities, then positions with the new (or the given) velocities: semi-implicit Euler
    new_qvel = d.qvel   # one handle read, outside the loop
    for v in range(m.nv):
        new_qvel[v] += h * qacc[v]
    integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, d.qpos, qvel, h,
                         d.scratch_quat, d.scratch_vec)
    d.time[0] += h


@handle_entry
def _euler(m, d):
    qacc = d.scratch_nv_a
    damped = False
    if not m.opt_flags[1] & DSBL_EULERDAMP and not m.opt_flags[1] & DSBL_DAMPER:
        for v in range(m.nv):
            if m.dof_damping[v] > 0.0:
                damped = True
    if damped:
        # implicit in damping: (M + h diag(damping)) qacc = qfrc_smooth
        qh = d.scratch_nC
        copy(qh, d.M)
        for v in range(m.nv):
            qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += m.opt_timestep[0] * m.dof_damping[v]
        factor_i(qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
        copy(qacc, d.qfrc_smooth)
        solve_ld(qacc, qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    else:
        copy(qacc, d.qacc)
    _advance(m, d, d.act_dot, qacc, d.qvel)


@njit(cache=True)  # calls _free_body_implicit, which allocates
def _implicitfast(m, d):
    h = m.opt_timestep[0]
    qh = d.scratch_nC
    copy(qh, d.M)
    # qH = M - h D, D = d qfrc_smooth / d qvel restricted to M's sparsity
    if not m.opt_flags[1] & DSBL_DAMPER:
        for v in range(m.nv):
            qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += h * m.dof_damping[v]
        # tendon damping: D -= damping * ten_J^T ten_J (mjd_passive_vel)
        for t in range(m.ntendon):
            damping = m.tendon_damping[t]
            if damping == 0.0:
                continue
            jt = d.ten_J[t]
            for r in range(m.nv):
                if jt[r] == 0.0:
                    continue
                for adr in range(m.M_rowadr[r], m.M_rowadr[r] + m.M_rownnz[r]):
                    qh[adr] += h * damping * jt[r] * jt[m.M_colind[adr]]
    if not m.opt_flags[1] & DSBL_ACTUATION:
        for i in range(m.nu):
            deriv = _actuator_force_vel(m, d, i)
            if deriv == 0.0:
                continue
            # D += deriv * moment moment^T
            mom = d.actuator_moment[i]
            for r in range(m.nv):
                if mom[r] == 0.0:
                    continue
                for adr in range(m.M_rowadr[r], m.M_rowadr[r] + m.M_rownnz[r]):
                    c = m.M_colind[adr]
                    qh[adr] -= h * deriv * mom[r] * mom[c]
    factor_i(qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    qacc = d.scratch_nv_a
    copy(qacc, d.qfrc_smooth)
    solve_ld(qacc, qh, d.scratch_nv_b, m.M_rownnz, m.M_rowadr, m.M_colind)
    # standalone free bodies: redo their 6x6 block with the gyroscopic derivative included
    for j in range(m.njnt):
        if _is_free_body(m, j):
            _free_body_implicit(m, d, j, qacc)
    _advance(m, d, d.act_dot, qacc, d.qvel)


@handle_entry
def _is_free_body(m, j):
    """A free joint that is its body's only joint, on a body with no children (mj_isFreeBody)."""
    if m.jnt_type[j] != JNT_FREE:
        return False
    b = m.jnt_bodyid[j]
    if m.body_jntnum[b] != 1 or m.body_subtreemass[b] != m.body_mass[b]:
        return False
    # no other dof in the tree: the next body (if any) must start a new tree
    return b + 1 >= m.nbody or m.body_rootid[b + 1] != m.body_rootid[b]


@njit(cache=True)  # allocates its 6x6 system: keeps Numba's runtime
def _free_body_implicit(m, d, j, qacc):
    """Solve (M - h dqfrc/dqvel) qacc = qfrc_smooth on a free body's 6 dofs, bias derivative included.

    implicitfast drops the Coriolis derivative from the global symmetric solve; for a
    lone free body MuJoCo restores it with a local 6x6 solve (mjd_freeMhat). With
    R = xmat, s = xipos - xpos, w = R w_local and I_w the world inertia about the com,
    the bias derivative w.r.t. the rotational dofs has blocks
        d f / d w_local   = -mass K R,                 K = s w^T - (w.s) E + [w x s]x
        d tau / d w_local = R^T (-mass [s]x K + [w]x I_w - [I_w w]x) R.
    """
    h = m.opt_timestep[0]
    b = m.jnt_bodyid[j]
    adr = m.jnt_dofadr[j]
    a = np.zeros((6, 6))
    # M block (symmetric, from the lower triangle) and damping
    for r in range(6):
        row = m.M_rowadr[adr + r]
        for k in range(m.M_rownnz[adr + r]):
            c = m.M_colind[row + k] - adr
            a[r, c] = d.M[row + k]
            a[c, r] = d.M[row + k]
        if not m.opt_flags[1] & DSBL_DAMPER:
            a[r, r] += h * m.dof_damping[adr + r]
    # actuator velocity derivatives on this block
    if not m.opt_flags[1] & DSBL_ACTUATION:
        for i in range(m.nu):
            deriv = _actuator_force_vel(m, d, i)
            if deriv != 0.0:
                mom = d.actuator_moment[i]
                for r in range(6):
                    for c in range(6):
                        a[r, c] -= h * deriv * mom[adr + r] * mom[adr + c]
    # bias (gyroscopic) derivative
    # (3x3 algebra by loops: Numba's matmul would need SciPy's BLAS at run time)
    mass = m.body_mass[b]
    rmat = d.xmat[b]
    s = np.empty(3)
    w = np.empty(3)
    for k in range(3):
        s[k] = d.xipos[b, k] - d.xpos[b, k]
    for k in range(3):
        w[k] = rmat[k, 0] * d.qvel[adr + 3] + rmat[k, 1] * d.qvel[adr + 4] + rmat[k, 2] * d.qvel[adr + 5]
    # world inertia about the com: I_w = Ri diag(inertia) Ri^T
    ri = d.ximat[b]
    iw = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            iw[r, c] = ri[r, 0] * m.body_inertia[b, 0] * ri[c, 0] \
                + ri[r, 1] * m.body_inertia[b, 1] * ri[c, 1] + ri[r, 2] * m.body_inertia[b, 2] * ri[c, 2]
    ws = cross(w, s)
    iww = mat_vec(iw, w)
    w_dot_s = w[0] * s[0] + w[1] * s[1] + w[2] * s[2]
    kmat = skew(ws)
    for r in range(3):
        for c in range(3):
            kmat[r, c] += s[r] * w[c] - (w_dot_s if r == c else 0.0)
    lin = mat_mul(kmat, rmat)
    cmat = mat_mul(skew(w), iw) - skew(iww) - mass * mat_mul(skew(s), kmat)
    rot = mat_mul(mat_mul(mat_t(rmat), cmat), rmat)
    for r in range(3):
        for c in range(3):
            a[r, 3 + c] += -h * mass * lin[r, c]
            a[3 + r, 3 + c] += h * rot[r, c]
    copy(qacc[adr:adr + 6], d.qfrc_smooth[adr:adr + 6])
    _solve_dense(a, qacc[adr:adr + 6])


@handle_entry
def _solve_dense(a, x):
    """In place x <- a^-1 x by Gaussian elimination with partial pivoting (a is overwritten)."""
    n = x.shape[0]
    for k in range(n):
        p = k
        for r in range(k + 1, n):
            if abs(a[r, k]) > abs(a[p, k]):
                p = r
        if p != k:
            for c in range(n):
                a[k, c], a[p, c] = a[p, c], a[k, c]
            x[k], x[p] = x[p], x[k]
        for r in range(k + 1, n):
            f = a[r, k] / a[k, k]
            for c in range(k, n):
                a[r, c] -= f * a[k, c]
            x[r] -= f * x[k]
    for k in range(n - 1, -1, -1):
        acc = x[k]
        for c in range(k + 1, n):
            acc -= a[k, c] * x[c]
        x[k] = acc / a[k, k]


@handle_entry
def _actuator_force_vel(m, d, i):
    """d actuator_force / d actuator_velocity: affine and muscle gain, affine bias (mjd_actuator_vel)."""
    # a force held at its forcerange does not change with velocity
    if m.actuator_forcelimited[i]:
        f = d.actuator_force[i]
        if f <= m.actuator_forcerange[i, 0] or f >= m.actuator_forcerange[i, 1]:
            return 0.0
    # likewise a tendon actuator whose tendon's summed actuator force is held at its
    # actuatorfrcrange (observed in MuJoCo 4.0.0's implicitfast; the forces were scaled
    # onto the bound by fwd_actuation, so "at the bound" is tested to a few ulps)
    if m.actuator_trntype[i] == TRN_TENDON and m.tendon_actfrclimited[m.actuator_trnid[i, 0]]:
        t = m.actuator_trnid[i, 0]
        total = 0.0
        for k in range(m.nu):
            if m.actuator_trntype[k] == TRN_TENDON and m.actuator_trnid[k, 0] == t:
                total += d.actuator_force[k]
        lo = m.tendon_actfrcrange[t, 0]
        hi = m.tendon_actfrcrange[t, 1]
        if total <= lo + 4e-16 * abs(lo) or total >= hi - 4e-16 * abs(hi):
            return 0.0
    deriv = 0.0
    if m.actuator_biastype[i] == BIAS_AFFINE:
        deriv = m.actuator_biasprm[i, 2]
    if m.actuator_gaintype[i] == GAIN_AFFINE and m.actuator_gainprm[i, 2] != 0.0:
        if m.actuator_dyntype[i] == DYN_NONE:
            inp = d.ctrl[i]
            # the clamped control, as fwd_actuation uses (MuJoCo 4.0.0's implicitfast does too)
            if m.actuator_ctrllimited[i] and not m.opt_flags[1] & DSBL_CLAMPCTRL:
                inp = min(max(inp, m.actuator_ctrlrange[i, 0]), m.actuator_ctrlrange[i, 1])
        else:
            last = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
            inp = d.act[last]
            if m.actuator_actearly[i]:
                inp = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                      m.actuator_actlimited[i], m.actuator_actrange[i],
                                      d.act[last], d.act_dot[last], m.opt_timestep[0])
        deriv += m.actuator_gainprm[i, 2] * inp
    elif m.actuator_gaintype[i] == GAIN_MUSCLE:
        # muscle gain velocity derivative (mjd_muscleGain_vel) times the activation
        gain_vel = muscle_gain_vel(d.actuator_length[i], d.actuator_velocity[i], m.actuator_lengthrange, i,
                                   m.actuator_acc0[i], m.actuator_gainprm, i)
        last = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
        if last >= 0 and m.actuator_dyntype[i] != DYN_NONE:
            inp = d.act[last]
            if m.actuator_actearly[i]:
                inp = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                      m.actuator_actlimited[i], m.actuator_actrange[i],
                                      d.act[last], d.act_dot[last], m.opt_timestep[0])
        else:
            inp = d.ctrl[i]
            if m.actuator_ctrllimited[i] and not m.opt_flags[1] & DSBL_CLAMPCTRL:
                inp = min(max(inp, m.actuator_ctrlrange[i, 0]), m.actuator_ctrlrange[i, 1])
        deriv += gain_vel * inp
    return deriv


@kernel
def _rkmk_stage_rates(jnt_type, jnt_dofadr, vel, h, rate):
    """Runge-Kutta-Munthe-Kaas correction of a stage's ball/free angular velocities, in place.

    A stage orientation is q0 * exp(theta) with theta = h * vel (vel: the stage's weighted
    sum of the corrected rates of earlier stages), taken as the principal logarithm. With
    body-frame angular velocity w,
    theta' = dexp^-1_{-theta}(w) = w + 1/2 theta x w + c(t) theta x (theta x w),
    c(t) = (1 - (t/2) cot(t/2)) / t^2, t = |theta| (the exact inverse of the right-trivialised
    exponential's differential). MuJoCo 4.0.0's RK4 combines these rates instead of the raw w
    (changelog 4.0.0, commit 9a7f240f0; its source is not public yet). Found by black-box
    comparison with mj_step: this form (exact c, principal-log theta, corrected rates inside
    theta) agrees to ~1e-16 per step, while the truncated series (1/12 instead of c) misses by
    7e-9 at |theta| ~ 0.3, raw rates inside theta by 7e-12 at h = 2 ms, and the opposite sign
    of the 1/2 term by 1e-8.
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
        t = np.sqrt(tt)
        if t > np.pi:
            # the stage rotation's principal logarithm: exp(theta) is unchanged by whole turns,
            # and MuJoCo 4.0.0 corrects with the angle in (-pi, pi] (its steps past pi match only so)
            scale = (t - 2.0 * np.pi * np.floor(t / (2.0 * np.pi) + 0.5)) / t
            t0 *= scale
            t1 *= scale
            t2 *= scale
            tt = t0 * t0 + t1 * t1 + t2 * t2
            t = np.sqrt(tt)
        w0, w1, w2 = rate[adr], rate[adr + 1], rate[adr + 2]
        # theta x w, then theta x (theta x w)
        c0 = t1 * w2 - t2 * w1
        c1 = t2 * w0 - t0 * w2
        c2 = t0 * w1 - t1 * w0
        d0 = t1 * c2 - t2 * c1
        d1 = t2 * c0 - t0 * c2
        d2 = t0 * c1 - t1 * c0
        if t < 1e-4:
            # series 1/12 + t^2/720: the closed form loses all digits to cancellation here
            coef = 1.0 / 12.0 + tt / 720.0
        else:
            coef = (1.0 - 0.5 * t / np.tan(0.5 * t)) / tt
        rate[adr] = w0 + 0.5 * c0 + coef * d0
        rate[adr + 1] = w1 + 0.5 * c1 + coef * d1
        rate[adr + 2] = w2 + 0.5 * c2 + coef * d2


@handle_entry
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
        forward_entry(m, d)
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
    _advance(m, d, act_rate, acc, vel)


@entry
def _checked_forward(m, d, check):
    """The forward pass of a step with mj_step's bad-state checks; a STATUS_* code."""
    if check:
        if _first_bad(d.qpos):
            return STATUS_BADQPOS
        if _first_bad(d.qvel):
            return STATUS_BADQVEL
    forward_entry(m, d)
    if check and _first_bad(d.qacc):
        return STATUS_BADQACC
    return STATUS_OK


@njit(cache=True)  # calls _free_body_implicit, which allocates
def step_entry(m, d, check):
    """One mj_step with the integrator chosen at run time; returns a STATUS_* code (the step
    stops at the first bad field). Compiles every integrator: for callers that cannot choose
    in Python (the batch kernels); ``step`` uses the per-integrator entries below."""
    integrator = m.opt_flags[0]
    if integrator == INT_RK4:
        return _step_rk4_entry(m, d, check)
    if integrator == INT_IMPLICITFAST:
        return _step_implicitfast_entry(m, d, check)
    return _step_euler_entry(m, d, check)  # INT_EULER


# One entry per integrator, so that a program compiles only the integrator it steps with:
# RK4 holds four forward passes and implicitfast the free-body solve, each a large share of
# the cold-start compile time of step_entry.
@handle_entry
def _step_euler_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _euler(m, d)
    return status


@njit(cache=True)  # calls _free_body_implicit, which allocates
def _step_implicitfast_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _implicitfast(m, d)
    return status


@handle_entry
def _step_rk4_entry(m, d, check):
    status = _checked_forward(m, d, check)
    if status == STATUS_OK:
        _rk4(m, d, RK4_A, RK4_B)
    return status


# FastEntry per IntegratorType value
_STEP_BY_INTEGRATOR = {INT_EULER: FastEntry(_step_euler_entry), INT_RK4: FastEntry(_step_rk4_entry),
                       INT_IMPLICITFAST: FastEntry(_step_implicitfast_entry)}


@handle_entry
def _integrate_entry(m, d):
    """The integrator part of step_entry, after a forward pass done elsewhere (Euler, implicitfast)."""
    if m.opt_flags[0] == INT_IMPLICITFAST:
        _implicitfast(m, d)
    else:
        _euler(m, d)


_INTEGRATE = FastEntry(_integrate_entry)


def _step_with_callbacks(m, d, check):
    """step_entry for models with user-actuator callbacks: forward runs the callbacks from Python."""
    if m.opt.integrator == INT_RK4:
        raise NotImplementedError("RK4 with user-actuator callbacks: its stages run compiled and cannot call "
                                  "Python; use Euler or implicitfast, or remove the callbacks")
    if check:
        if _first_bad(d.qpos):
            return STATUS_BADQPOS
        if _first_bad(d.qvel):
            return STATUS_BADQVEL
    forward_with_callbacks(m, d)
    if check and _first_bad(d.qacc):
        return STATUS_BADQACC
    _INTEGRATE(m._handle, d._handle)
    return STATUS_OK


def step(m, d, nstep: int = 1) -> None:
    """Advance the simulation by ``nstep`` steps of ``m.opt.timestep`` (mj_step).

    Runs ``forward`` and then the integrator in ``m.opt.integrator``. If qpos, qvel
    or qacc becomes non-finite (or beyond 1e10), a ``NonFiniteStateWarning`` names
    the field, the data is reset as MuJoCo does, and stepping goes on from the reset
    state (with the autoreset flag disabled, the step goes on unchecked instead).
    """
    mh, dh = m._handle, d._handle
    if has_actuator_callbacks(m):
        def one_step(mh, dh, check):
            return _step_with_callbacks(m, d, check)
    else:
        one_step = _STEP_BY_INTEGRATOR[m.opt.integrator].call
    for _ in range(nstep):
        status = one_step(mh, dh, True)
        if status == STATUS_OK:
            continue
        field = _STATUS_FIELD[status]
        bad = getattr(d, field)
        index = int(np.flatnonzero(~(np.abs(bad) <= MAXVAL))[0])
        autoreset = not m.opt.disableflags & DisableBit.AUTORESET
        warnings.warn(
            f"non-finite or huge {field}[{index}] = {bad[index]} at time {d.time:g}; "
            + ("data reset to the model's default state" if autoreset else "autoreset disabled"),
            NonFiniteStateWarning, stacklevel=2)
        if autoreset:
            reset(m, d)
        one_step(mh, dh, False)


@handle_entry
def _integrate_pos_entry(m, qpos, qvel, h, sq, sv):
    integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, qpos, qvel, h, sq, sv)


def integrate_pos(m, qpos: np.ndarray, qvel: np.ndarray, h: float) -> None:
    """In place qpos <- qpos (+) h qvel on the joint manifold (mj_integratePos)."""
    if qpos.shape != (m.nq,) or qvel.shape != (m.nv,):
        raise ValueError(f"integrate_pos needs qpos ({m.nq},) and qvel ({m.nv},)")
    if qpos.dtype != np.float64 or not qpos.flags.c_contiguous:
        raise ValueError("qpos must be a contiguous float64 array (it is updated in place)")
    _integrate_pos_entry(m._handle, qpos, np.ascontiguousarray(qvel, dtype=np.float64), float(h),
                         np.empty((8, 4)), np.empty((8, 6)))


@handle_entry
def differentiate_pos_kernel(jnt_type, jnt_qposadr, jnt_dofadr, qvel, h, qpos1, qpos2, sq, sv):
    """qvel <- (qpos2 (-) qpos1) / h on the joint manifold (mj_differentiatePos); sq, sv: scratch rows.

    The inverse of ``integrate_pos_kernel``: qpos1 (+) h qvel = qpos2. Rotations are the
    body-frame rotation vector of conj(qpos1) qpos2 (the short way round).
    """
    A, B, TMP, VEL = 0, 1, 2, 0
    for j in range(jnt_type.shape[0]):
        padr = jnt_qposadr[j]
        vadr = jnt_dofadr[j]
        jtype = jnt_type[j]
        if jtype == JNT_FREE:
            for k in range(3):
                qvel[vadr + k] = (qpos2[padr + k] - qpos1[padr + k]) / h
            padr += 3
            vadr += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            for k in range(4):
                sq[A, k] = qpos2[padr + k]
                sq[B, k] = qpos1[padr + k]
            sub_quat(sv, VEL, sq, A, sq, B, sq, TMP)
            for k in range(3):
                qvel[vadr + k] = sv[VEL, k] / h
        else:
            qvel[vadr] = (qpos2[padr] - qpos1[padr]) / h


@handle_entry
def _differentiate_pos_entry(m, qvel, h, qpos1, qpos2, sq, sv):
    differentiate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, qvel, h, qpos1, qpos2, sq, sv)


def differentiate_pos(m, qpos1: np.ndarray, qpos2: np.ndarray, h: float,
                      out: np.ndarray | None = None) -> np.ndarray:
    """The velocity that moves qpos1 to qpos2 in time h: (qpos2 (-) qpos1) / h (mj_differentiatePos).

    Hinge and slide coordinates and free-joint positions are plain differences; ball and
    free-joint rotations are body-frame rotation vectors, so that
    ``integrate_pos(m, qpos1, qvel, h)`` returns qpos2 (up to the quaternion's norm).
    Returns ``out`` (nv,) if given, else a new array.
    """
    q1 = np.ascontiguousarray(qpos1, dtype=np.float64)
    q2 = np.ascontiguousarray(qpos2, dtype=np.float64)
    if q1.shape != (m.nq,):
        raise ValueError(f"differentiate_pos: qpos1 has shape {q1.shape}, the model needs ({m.nq},)")
    if q2.shape != (m.nq,):
        raise ValueError(f"differentiate_pos: qpos2 has shape {q2.shape}, the model needs ({m.nq},)")
    if not h:
        raise ValueError("differentiate_pos: h must be non-zero")
    if out is None:
        out = np.empty(m.nv)
    elif out.shape != (m.nv,) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"differentiate_pos: out must be a contiguous float64 array of shape ({m.nv},)")
    _differentiate_pos_entry(m._handle, out, float(h), q1, q2, np.empty((8, 4)), np.empty((8, 6)))
    return out
