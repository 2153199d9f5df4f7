"""Derivatives the implicit integrator needs (engine_derivative.c).

* ``actuator_force_vel``: d actuator_force / d actuator_velocity (mjd_actuator_vel).
* ``implicit_matrix``: M - h D, implicitfast's system matrix (mjd_smooth_vel, gathered into M).
  Every matrix here includes the fluid forces' derivatives (``derivative_fluid``) in a medium.
* ``free_body_mhat``: the local 6x6 system with the gyroscopic bias derivative that
  implicitfast uses for a lone free body (mjd_freeMhat); ``_free_body_implicit`` solves it.
* ``implicit_lu_matrix``: M - h qDeriv with the full mjd_smooth_vel (flg_bias = 1): the damping
  and actuator terms of ``implicit_matrix`` on the D pattern and the velocity derivative of the
  RNE bias (mjd_rne_vel, from ``derivative_rne``): the ``implicit`` integrator's unsymmetric system.
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.actuation import activation_input, clamped_ctrl
from kinedyn.engine.derivative_fluid import (
    add_fluid_vel,
    fluid_vel_active,
    fluid_vel_entry,
    fluid_vel_m_entry,
    lone_free_body,
)
from kinedyn.engine.derivative_rne import rne_vel
from kinedyn.engine.history import read_ctrl_kernel
from kinedyn.engine.smooth_inertia import full_m_kernel
from kinedyn.engine.types import (
    BIAS_AFFINE,
    DSBL_ACTUATION,
    DSBL_DAMPER,
    DSBL_EULERDAMP,
    DYN_NONE,
    GAIN_AFFINE,
    GAIN_DCMOTOR,
    GAIN_MUSCLE,
    INT_IMPLICIT,
    JNT_FREE,
    MINVAL,
    OPT_DISABLEFLAGS,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_TENDON,
)
from kinedyn.engine.util_dcmotor import controller_held, has_controller, hot_resistance, lugre_force_vel
from kinedyn.engine.util_linalg3 import (
    cross3,
    mat_mul_entry,
    mat_t_mul_entry,
    mat_vec3,
    skew_entry,
    skew_mul_entry,
)
from kinedyn.engine.util_muscle import muscle_gain_vel
from kinedyn.engine.util_poly import dof_damping_deriv, poly_force_deriv, tendon_damping_poly


@kernel
def _is_free_body(m, j):
    """A free joint that is its body's only joint, on a body with no children (mj_isFreeBody)."""
    return m.jnt_type[j] == JNT_FREE and lone_free_body(m, m.jnt_bodyid[j])


@kernel
def eulerdamp_active(m):
    """Whether the Euler step integrates joint damping implicitly: the eulerdamp and damper
    flags are on and some dof has positive damping, polynomial damping or an actuator adding
    damping or armature to its joint (mj_EulerSkip, mj_discreteAcc)."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    if flags & DSBL_EULERDAMP or flags & DSBL_DAMPER:
        return False
    for v in range(m.nv):
        if m.dof_damping[v] > 0.0 or m.dof_dampingpoly[v, 0] != 0.0 or m.dof_dampingpoly[v, 1] != 0.0 \
                or m.jnt_actuatorid[m.dof_jntid[v]] != -1:
            return True
    return False


@kernel
def tendon_damping_deriv(m, d, t):
    """d(v k(v))/dv of tendon ``t``'s damper at its velocity, the actuators' damping included."""
    damping, p0, p1 = tendon_damping_poly(m, t)
    return poly_force_deriv(damping, p0, p1, d.ten_velocity[t], True)


@kernel
def free_body_mhat(m, d, j):
    """d.scratch_free_mhat = M - h dqfrc_smooth/dqvel on free joint j's 6 dofs, the bias
    (gyroscopic) derivative included (mjd_freeMhat).

    implicitfast drops the Coriolis derivative from the global symmetric system; for a
    lone free body MuJoCo restores it on the body's 6x6 block, unsymmetric. The block is
    M plus h times the dof and tendon damping and minus h times the actuator velocity
    derivatives and the body's fluid derivative, unsymmetrised (the qDeriv block of
    mjd_smooth_vel), plus h times the bias derivative.
    With R = xmat, s = xipos - xpos, w = R w_local and I_w the world inertia about the com,
    the bias derivative w.r.t. the rotational dofs has blocks
        d f / d w_local   = -mass K R,                 K = s w^T - (w.s) E + [w x s]x
        d tau / d w_local = R^T (-mass [s]x K + [w]x I_w - [I_w w]x) R.
    The 3x3 matrices live in scratch rows, the 3-vectors in locals.
    """
    h = m.opt_timestep[0]
    b = m.jnt_bodyid[j]
    adr = m.jnt_dofadr[j]
    a = d.scratch_free_mhat
    for r in range(6):
        for c in range(6):
            a[r, c] = 0.0
    # M block (symmetric, from the lower triangle) and damping
    for r in range(6):
        row = m.M_rowadr[adr + r]
        for k in range(m.M_rownnz[adr + r]):
            c = m.M_colind[row + k] - adr
            a[r, c] = d.M[row + k]
            a[c, r] = d.M[row + k]
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER:
        for r in range(6):
            a[r, r] += h * dof_damping_deriv(m, d, adr + r)
        # tendon damping: qDeriv -= damping ten_J' ten_J, on this block too
        for t in range(m.ntendon):
            damping = tendon_damping_deriv(m, d, t)
            if damping == 0.0:
                continue
            jt = d.ten_J[t]
            for r in range(6):
                if jt[adr + r] == 0.0:
                    continue
                for c in range(6):
                    a[r, c] += h * damping * jt[adr + r] * jt[adr + c]
    # actuator velocity derivatives on this block
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        for i in range(m.nactuator):
            deriv = _actuator_force_vel(m, d, i)
            if deriv != 0.0:
                mom = d.actuator_moment[i]
                for r in range(6):
                    for c in range(6):
                        a[r, c] -= h * deriv * mom[adr + r] * mom[adr + c]
    # the body's fluid forces, their B unsymmetric (mjd_ellipsoidFluid skips the symmetrisation
    # for a lone free body)
    if fluid_vel_active(m):
        fluid_vel_entry(m, d, a, -h, adr, b, b + 1)
    # bias (gyroscopic) derivative
    mass = m.body_mass[b]
    rmat = d.xmat[b]
    xipos, xpos, qvel = d.xipos, d.xpos, d.qvel
    s = (xipos[b, 0] - xpos[b, 0], xipos[b, 1] - xpos[b, 1], xipos[b, 2] - xpos[b, 2])
    w = (rmat[0, 0] * qvel[adr + 3] + rmat[0, 1] * qvel[adr + 4] + rmat[0, 2] * qvel[adr + 5],
         rmat[1, 0] * qvel[adr + 3] + rmat[1, 1] * qvel[adr + 4] + rmat[1, 2] * qvel[adr + 5],
         rmat[2, 0] * qvel[adr + 3] + rmat[2, 1] * qvel[adr + 4] + rmat[2, 2] * qvel[adr + 5])
    mat3 = d.scratch_free_mat3
    iw, kmat, cmat, rt_cmat = mat3[0], mat3[1], mat3[2], mat3[3]
    # world inertia about the com: I_w = Ri diag(inertia) Ri^T
    ri = d.ximat[b]
    for r in range(3):
        for c in range(3):
            iw[r, c] = ri[r, 0] * m.body_inertia[b, 0] * ri[c, 0] \
                + ri[r, 1] * m.body_inertia[b, 1] * ri[c, 1] + ri[r, 2] * m.body_inertia[b, 2] * ri[c, 2]
    ws = cross3(w, s)
    iww = mat_vec3(iw, w)
    w_dot_s = w[0] * s[0] + w[1] * s[1] + w[2] * s[2]
    for r in range(3):
        for c in range(3):
            kmat[r, c] = skew_entry(ws, r, c) + (s[r] * w[c] - (w_dot_s if r == c else 0.0))
    for r in range(3):
        for c in range(3):
            cmat[r, c] = skew_mul_entry(w, iw, r, c) - skew_entry(iww, r, c) \
                - mass * skew_mul_entry(s, kmat, r, c)
    for r in range(3):
        for c in range(3):
            rt_cmat[r, c] = mat_t_mul_entry(rmat, cmat, r, c)
    for r in range(3):
        for c in range(3):
            a[r, 3 + c] += -h * mass * mat_mul_entry(kmat, rmat, r, c)
            a[3 + r, 3 + c] += h * mat_mul_entry(rt_cmat, rmat, r, c)


@kernel
def _free_body_implicit(m, d, j, qacc):
    """Solve (M - h dqfrc/dqvel) qacc = qfrc_smooth + qfrc_constraint on free joint j's 6 dofs,
    with the system of ``free_body_mhat`` (mj_implicit's local solve for a lone free body)."""
    free_body_mhat(m, d, j)
    adr = m.jnt_dofadr[j]
    # right-hand side: the smooth and the constraint force (mj_implicit's qfrc)
    for k in range(6):
        qacc[adr + k] = d.qfrc_smooth[adr + k] + d.qfrc_constraint[adr + k]
    _solve_dense(d.scratch_free_mhat, qacc[adr:adr + 6])


@kernel
def implicit_matrix(m, d, qh):
    """qh = M - h D in M's tree-sparse lower-triangle layout: implicitfast's system matrix.

    D is the symmetric part of d qfrc_smooth / d qvel from joint and tendon damping, from
    actuators with velocity-dependent gain or bias and from the fluid forces (mjd_smooth_vel
    without the bias derivative), restricted to M's sparsity as MuJoCo gathers it (mapD2M).
    """
    h = m.opt_timestep[0]
    for k in range(qh.shape[0]):
        qh[k] = d.M[k]
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER:
        for v in range(m.nv):
            qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += h * dof_damping_deriv(m, d, v)
        # tendon damping: D -= damping * ten_J^T ten_J (mjd_passive_vel)
        for t in range(m.ntendon):
            damping = tendon_damping_deriv(m, d, t)
            if damping == 0.0:
                continue
            jt = d.ten_J[t]
            for r in range(m.nv):
                if jt[r] == 0.0:
                    continue
                for adr in range(m.M_rowadr[r], m.M_rowadr[r] + m.M_rownnz[r]):
                    qh[adr] += h * damping * jt[r] * jt[m.M_colind[adr]]
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        for i in range(m.nactuator):
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
    # fluid forces (mjd_passive_vel), lone free bodies left to their local solve
    if fluid_vel_active(m):
        fluid_vel_m_entry(m, d, qh, -h)


@kernel
def _add_outer_d(a, vec, scale, dof_parentid):
    """a += scale vec vec^T on MuJoCo's D pattern (each dof with its ancestors and descendants)."""
    for r in range(vec.shape[0]):
        if vec[r] == 0.0:
            continue
        c = r
        while c >= 0:
            a[r, c] += scale * vec[r] * vec[c]
            if c != r:
                a[c, r] += scale * vec[c] * vec[r]
            c = dof_parentid[c]


@kernel
def implicit_lu_matrix(m, d, a):
    """a (nv, nv) = M - h qDeriv, qDeriv = d(qfrc_actuator + qfrc_passive - qfrc_bias)/d qvel
    on MuJoCo's D pattern (mjd_smooth_vel with flg_bias, M gathered as mj_implicitSkip does).

    The damping, actuator and fluid terms are implicitfast's (``implicit_matrix``; the fluid
    blocks unsymmetrised), but on the whole D
    pattern, not M's: M leaves out the entries it knows are zero (a free body's translation
    block), which qDeriv's outer products need not be. Then + h d qfrc_bias / d qvel
    (mjd_rne_vel, from derivative_rne), zero off the D pattern."""
    h = m.opt_timestep[0]
    for i in range(m.nv):
        for j in range(m.nv):
            a[i, j] = 0.0
    full_m_kernel(a, d.M, m.M_rownnz, m.M_rowadr, m.M_colind)
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER:
        for v in range(m.nv):
            a[v, v] += h * dof_damping_deriv(m, d, v)
        for t in range(m.ntendon):
            damping = tendon_damping_deriv(m, d, t)
            if damping != 0.0:
                _add_outer_d(a, d.ten_J[t], h * damping, m.dof_parentid)
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        for i in range(m.nactuator):
            deriv = _actuator_force_vel(m, d, i)
            if deriv != 0.0:
                _add_outer_d(a, d.actuator_moment[i], -h * deriv, m.dof_parentid)
    add_fluid_vel(m, d, a, -h)
    rne_vel(m, d, a, h)


# a unit of its own, compiled only for models with the implicit integrator: the step and the
# discrete-time inverse of every other model reach it but never call it
@handle_entry(needed=lambda m: m.opt.integrator == INT_IMPLICIT)
def implicit_lu_entry(m, d):
    """d.scratch_lu = M - h qDeriv (``implicit_lu_matrix``)."""
    implicit_lu_matrix(m, d, d.scratch_lu)


@kernel
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


@kernel
def actuator_deriv_skipped(m, d, i):
    """Whether actuator i's force is held at a bound, so that it does not change with velocity or
    length (mjd_actuatorDerivSkip): its forcerange, or its tendon's actuatorfrcrange."""
    # a force held at its forcerange does not change with velocity
    if m.actuator_forcelimited[i]:
        f = d.actuator_force[i]
        if f <= m.actuator_forcerange[i, 0] or f >= m.actuator_forcerange[i, 1]:
            return True
    # likewise a tendon actuator whose tendon's summed actuator force is held at its
    # actuatorfrcrange (observed in MuJoCo 4.0.0's implicitfast; the forces were scaled
    # onto the bound by fwd_actuation, so "at the bound" is tested to a few ulps)
    if m.actuator_trntype[i] == TRN_TENDON and m.tendon_actfrclimited[m.actuator_trnid[i, 0]]:
        t = m.actuator_trnid[i, 0]
        total = 0.0
        for k in range(m.nactuator):
            if m.actuator_trntype[k] == TRN_TENDON and m.actuator_trnid[k, 0] == t:
                total += d.actuator_force[k]
        lo = m.tendon_actfrcrange[t, 0]
        hi = m.tendon_actfrcrange[t, 1]
        if total <= lo + 4e-16 * abs(lo) or total >= hi - 4e-16 * abs(hi):
            return True
    # and a joint actuator whose joint's summed actuator force was clamped to its actuatorfrcrange
    # (fwd_actuation clamps qfrc_actuator at the joint's first dof; measured on MuJoCo 4.0.0's
    # discrete and implicitfast integrators)
    if m.actuator_trntype[i] == TRN_JOINT or m.actuator_trntype[i] == TRN_JOINTINPARENT:
        j = m.actuator_trnid[i, 0]
        if m.jnt_actfrclimited[j]:
            f = d.qfrc_actuator[m.jnt_dofadr[j]]
            if f <= m.jnt_actfrcrange[j, 0] or f >= m.jnt_actfrcrange[j, 1]:
                return True
    return False


@kernel
def actuator_input(m, d, i):
    """What actuator i's gain multiplies: the clamped control without dynamics, else the activation."""
    if m.actuator_dyntype[i] == DYN_NONE:
        # the clamped control, as fwd_actuation uses (MuJoCo 4.0.0's implicitfast does too)
        return _clamped_ctrl(m, d, i)
    return _activation_input(m, d, i)


@kernel
def _actuator_force_vel(m, d, i):
    """d actuator_force / d actuator_velocity: affine, muscle and DC-motor gain, affine bias
    (mjd_actuator_vel)."""
    if actuator_deriv_skipped(m, d, i):
        return 0.0
    deriv = 0.0
    if m.actuator_biastype[i] == BIAS_AFFINE:
        deriv = m.actuator_biasprm[i, 2]
    if m.actuator_gaintype[i] == GAIN_AFFINE and m.actuator_gainprm[i, 2] != 0.0:
        deriv += m.actuator_gainprm[i, 2] * actuator_input(m, d, i)
    elif m.actuator_gaintype[i] == GAIN_DCMOTOR:
        # a voltage-commanded DC motor: the back-EMF term -(K^2 / R) v; with inductance the force
        # K i reads the current after the step, i + di tau (1 - exp(-h / tau)), whose back-EMF
        # part is -(K / L) v (none while di is held at the current_rate). A controller's voltage
        # adds (R/K) (-kd) + K per unit velocity (util_dcmotor; nothing at its Vmax)
        k = m.actuator_gainprm[i, 1]
        resistance = hot_resistance(m, d, i)
        slope = k * k / resistance
        if has_controller(m, i):
            if not controller_held(m, d, i, _clamped_ctrl(m, d, i)):
                # (K/R)(K - dV/dv) with V = (R0/K) tau + K v at the cold R0: kd R0 / R
                slope = m.actuator_gainprm[i, 6] * m.actuator_gainprm[i, 0] / resistance
        if m.actuator_dynprm[i, 0] > 0.0:  # inductance: the current is the last state
            last = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
            tau = max(MINVAL, m.actuator_dynprm[i, 0])
            rate = m.actuator_dynprm[i, 1]
            if rate > 0.0 and abs(d.act_dot[last]) >= rate:
                slope = 0.0
            else:
                slope *= 1.0 - math.exp(-m.opt_timestep[0] / tau)
        deriv += lugre_force_vel(m, i) - slope
    elif m.actuator_gaintype[i] == GAIN_MUSCLE:
        # muscle gain velocity derivative (mjd_muscleGain_vel) times the activation
        gain_vel = muscle_gain_vel(d.actuator_length[i], d.actuator_velocity[i], m.actuator_lengthrange, i,
                                   m.actuator_acc0[i], m.actuator_gainprm, i)
        last = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
        if last >= 0 and m.actuator_dyntype[i] != DYN_NONE:
            inp = _activation_input(m, d, i)
        else:
            inp = _clamped_ctrl(m, d, i)
        deriv += gain_vel * inp
    return deriv


@kernel
def _clamped_ctrl(m, d, i):
    """actuation.clamped_ctrl of the control the actuation stage reads: d.ctrl, or for a delayed
    actuator its history buffer at time - delay (mj_readCtrl), as MuJoCo 4.0.0's derivative reads
    it (also in an inverse with invdiscrete that no forward pass preceded). The first control of
    the actuator's block; 0 for an actuator without controls."""
    if m.actuator_ctrlnum[i] == 0:
        return 0.0
    c = m.actuator_ctrladr[i]
    ctrl = d.ctrl
    if m.nhistory > 0 and m.actuator_delay[i] != 0.0:
        ctrl = d.scratch_ctrl_delayed
        ctrl[c] = read_ctrl_kernel(m, d, i, d.time[0], m.actuator_history[i, 1])
    return clamped_ctrl(m.actuator_ctrllimited, m.actuator_ctrlrange, m.opt_flags[OPT_DISABLEFLAGS],
                        ctrl, c)


@kernel
def _activation_input(m, d, i):
    """actuation.activation_input of d.act."""
    return activation_input(m.actuator_dyntype, m.actuator_dynprm, m.actuator_actadr, m.actuator_actnum,
                            m.actuator_actlimited, m.actuator_actrange, m.actuator_actearly, d.act, d.act_dot,
                            m.opt_timestep[0], i)
