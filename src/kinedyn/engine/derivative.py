"""Derivatives the implicit integrator needs (engine_derivative.c).

* ``actuator_force_vel``: d actuator_force / d actuator_velocity (mjd_actuator_vel).
* ``free_body_implicit``: the local 6x6 solve with the gyroscopic bias derivative that
  implicitfast uses for a lone free body (mjd_freeMhat).
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import cached_njit, handle_entry
from kinedyn.engine.actuation import next_activation
from kinedyn.engine.types import (
    BIAS_AFFINE,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DSBL_DAMPER,
    DYN_NONE,
    GAIN_AFFINE,
    GAIN_MUSCLE,
    JNT_FREE,
    TRN_TENDON,
)
from kinedyn.engine.util_linalg3 import cross, mat_mul, mat_t, mat_vec, skew
from kinedyn.engine.util_muscle import muscle_gain_vel
from kinedyn.engine.util_spatial import copy


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


@cached_njit  # allocates its 6x6 system: keeps Numba's runtime
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


