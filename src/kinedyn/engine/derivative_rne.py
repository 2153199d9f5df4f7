"""Analytical derivatives of the rigid-body dynamics (Pinocchio's computeRNEADerivatives,
computeABADerivatives and computeJointTorqueRegressor, over MuJoCo's com-based quantities).

MuJoCo has no analytical derivatives of its inverse dynamics in q (only the velocity
derivative ``mjd_rne_vel`` that its implicit integrator uses); Pinocchio's algorithms
(Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018)
differentiate RNEA in the world frame. This module does the same in MuJoCo's com-based frame
(``cdof``, ``cinert``, ``cvel``: world orientation, the reference point the subtree com of the
tree's root). That point moves with q, but a generalised force is the same in every frame, so
the derivatives are taken in the fixed frame that coincides with it at the current state.

Tangent space (MuJoCo's, ``mj_integratePos``): perturbing dof j by eps moves the bodies after it
by the rigid motion exp(eps S_j), S_j = cdof[j]: a hinge or slide and everything after it;
a ball dof (quat * exp(eps e_j / 2)) the body with all three of its ball axes; a free joint's
translations (world axes) the body, its rotations (body axes) the body and its three rotation
axes but not its translation axes. Hence, with a0_j, v0_j the acceleration and velocity of the
frame before j's joint (before the rotations for a free joint's rotation dofs), v1_j after it:

    d cdof[i] / d q_j = S_j x S_i                      (i moved by j)
    d v_k / d q_j     = S_j x (v_k - v0_j)             (k after j)
    d a_k / d q_j     = S_j x (a_k - a0_j) + (v0_j x S_j) x (v_k - v0_j)
    d v_k / d qd_j    = S_j
    d a_k / d qd_j    = S_j x v_k + (v0_j + v1_j) x S_j

and with f_k = I_k a_k + v_k x* I_k v_k, the force difference from a rigid transport of body k is
I_k b_j + B_k u_j, where u_j = v0_j x S_j, b_j = a0_j x S_j - u_j x v0_j and
B_k u = I_k (u x v_k) + u x* (I_k v_k) + v_k x* (I_k u) (Carpentier & Mansard's B_i). Summed over
a subtree these are the composite inertia (``crb``) and the composite B. Then, F the subtree force:

    dtau_i/dq_j  = S_i . (Ic b_j + Bc u_j)             i moved by j; composite of i's body
                 = S_i . (Ic b_j + Bc u_j + S_j x* F)  i before j, not moved; composite of j's body
    dtau_i/dqd_j = S_i . (Ic e_j + Bc S_j),            e_j = (v0_j + v1_j) x S_j, the deeper body's
    dtau/dqacc   = M (the armature included, as mj_inverse's M qacc).

Gravity enters, as in mj_rne, as the world's acceleration -g (a0 of the root joints).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model, check_model_data
from kinedyn.engine.smooth_inertia import crb_entry, factor_m_entry, full_m_kernel
from kinedyn.engine.smooth_kinematics import com_pos_entry, kinematics_entry
from kinedyn.engine.smooth_rne import com_vel_entry
from kinedyn.engine.types import (
    DSBL_CONSTRAINT,
    DSBL_CONTACT,
    DSBL_DAMPER,
    DSBL_EQUALITY,
    DSBL_FRICTIONLOSS,
    DSBL_GRAVITY,
    DSBL_LIMIT,
    DSBL_SPRING,
    JNT_BALL,
    JNT_FREE,
    OPT_DISABLEFLAGS,
    DisableBit,
    EnableBit,
    IntegratorType,
)
from kinedyn.engine.util_spatial import cross_force, inert_vec, row6

# rows of the per-dof workspace (nv, _NDOF, 6)
_V0, _A0, _V1, _U, _B, _E, _R1, _R2, _P, _W = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
_NDOF = 10
# rows of the per-body workspace (nbody, _NBODY, 6): the body acceleration and the subtree force
_ACC, _FRC = 0, 1
_NBODY = 2


@kernel(inline="always")
def _cross(a, b):
    """a x b for motion vectors given as 6-tuples [rot; lin] (mju_crossMotion)."""
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
            (a[1] * b[5] - a[2] * b[4]) + (a[4] * b[2] - a[5] * b[1]),
            (a[2] * b[3] - a[0] * b[5]) + (a[5] * b[0] - a[3] * b[2]),
            (a[0] * b[4] - a[1] * b[3]) + (a[3] * b[1] - a[4] * b[0]))


@kernel(inline="always")
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


@kernel(inline="always")
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5])


@kernel(inline="always")
def _scaled(a, s):
    return (a[0] * s, a[1] * s, a[2] * s, a[3] * s, a[4] * s, a[5] * s)


@kernel(inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@kernel(inline="always")
def _set(arr, i, r, vec):
    for t in range(6):
        arr[i, r, t] = vec[t]


@kernel(inline="always")
def _get(arr, i, r):
    return (arr[i, r, 0], arr[i, r, 1], arr[i, r, 2], arr[i, r, 3], arr[i, r, 4], arr[i, r, 5])


@kernel(inline="always")
def _row_dot(mat, b, r, vec, transpose):
    acc = 0.0
    for c in range(6):
        acc += (mat[b, c, r] if transpose else mat[b, r, c]) * vec[c]
    return acc


@kernel(inline="always")
def _mat_vec(mat, b, vec, transpose):
    """mat[b] vec (or mat[b]^T vec) for a 6x6 matrix slice, vec a 6-tuple."""
    return (_row_dot(mat, b, 0, vec, transpose), _row_dot(mat, b, 1, vec, transpose),
            _row_dot(mat, b, 2, vec, transpose), _row_dot(mat, b, 3, vec, transpose),
            _row_dot(mat, b, 4, vec, transpose), _row_dot(mat, b, 5, vec, transpose))


@kernel
def dof_groups(jnt_type, dof_jntid, jnt_dofadr, v):
    """(first, count, rotational) of the group of dofs that dof v moves with: a hinge or slide alone,
    a ball's three dofs, a free joint's three translations or its three rotations."""
    j = dof_jntid[v]
    t = jnt_type[j]
    adr = jnt_dofadr[j]
    if t == JNT_BALL:
        return adr, 3, True
    if t == JNT_FREE:
        if v - adr < 3:
            return adr, 3, False
        return adr + 3, 3, True
    return v, 1, False


@kernel
def rne_partials(m, d, qacc, flg_acc, body, dof):
    """Forward pass: each body's acceleration (mj_rne's cacc, with qacc when flg_acc) into
    body[:, _ACC]; for each dof the velocity and acceleration before its group (v0, a0) and the
    velocity after it (v1). Reads cvel, cdof, cdof_dot (com_vel)."""
    cdof, cdof_dot, qvel = d.cdof, d.cdof_dot, d.qvel
    for t in range(6):
        body[0, _ACC, t] = 0.0
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_GRAVITY:
        for k in range(3):
            body[0, _ACC, 3 + k] = -m.opt_gravity[k]
    for b in range(1, m.nbody):
        p = m.body_parentid[b]
        vel = row6(d.cvel, p)
        acc = _get(body, p, _ACC)
        v = m.body_dofadr[b]
        end = v + m.body_dofnum[b]
        while v < end:
            first, n, _ = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, v)
            for k in range(first, first + n):
                _set(dof, k, _V0, vel)
                _set(dof, k, _A0, acc)
            for k in range(first, first + n):
                acc = _add(acc, _scaled(row6(cdof_dot, k), qvel[k]))
                if flg_acc:
                    acc = _add(acc, _scaled(row6(cdof, k), qacc[k]))
                vel = _add(vel, _scaled(row6(cdof, k), qvel[k]))
            for k in range(first, first + n):
                _set(dof, k, _V1, vel)
            v = first + n
        _set(body, b, _ACC, acc)


@kernel(inline="always")
def _unit_cross(k, a0, a1, a2):
    """e_k x a for a unit axis e_k (k in 0..2) and a 3-vector a."""
    if k == 0:
        return 0.0, -a2, a1
    if k == 1:
        return a2, 0.0, -a0
    return -a1, a0, 0.0


@kernel(inline="always")
def _inert_col(c, k):
    """Column k of the 6x6 com-based inertia in cinert layout c (mju_mulInertVec of e_k)."""
    if k == 0:
        return c[0], c[3], c[4], 0.0, -c[8], c[7]
    if k == 1:
        return c[3], c[1], c[5], c[8], 0.0, -c[6]
    if k == 2:
        return c[4], c[5], c[2], -c[7], c[6], 0.0
    if k == 3:
        return 0.0, c[8], -c[7], c[9], 0.0, 0.0
    if k == 4:
        return -c[8], 0.0, c[6], 0.0, c[9], 0.0
    return c[7], -c[6], 0.0, 0.0, 0.0, c[9]


@kernel
def composite_b(m, d, bmat):
    """bmat[b] = sum over b's subtree of B_k, B_k u = I_k (u x v_k) + u x* (I_k v_k) + v_k x* (I_k u)
    (Carpentier & Mansard's B_i, as a 6x6 matrix per body, world at zero), column by column with
    u the unit vectors: u x v_k and u x* h are then a cross product with a unit axis, I_k u a
    column of I_k."""
    for r in range(6):
        for c in range(6):
            bmat[0, r, c] = 0.0
    for b in range(1, m.nbody):
        vel = row6(d.cvel, b)
        h = inert_vec(d.cinert, b, vel)
        ci = d.cinert[b]
        for k in range(6):
            if k < 3:
                # u = (e_k, 0): u x v = (e_k x w, e_k x v_lin); u x* h = (e_k x h_rot, e_k x h_lin)
                a = _unit_cross(k, vel[0], vel[1], vel[2])
                bl = _unit_cross(k, vel[3], vel[4], vel[5])
                x = (a[0], a[1], a[2], bl[0], bl[1], bl[2])
                f1 = _unit_cross(k, h[0], h[1], h[2])
                f2 = _unit_cross(k, h[3], h[4], h[5])
                uh = (f1[0], f1[1], f1[2], f2[0], f2[1], f2[2])
            else:
                # u = (0, e_k): u x v = (0, e_k x w); u x* h = (e_k x h_lin, 0)
                a = _unit_cross(k - 3, vel[0], vel[1], vel[2])
                x = (0.0, 0.0, 0.0, a[0], a[1], a[2])
                f1 = _unit_cross(k - 3, h[3], h[4], h[5])
                uh = (f1[0], f1[1], f1[2], 0.0, 0.0, 0.0)
            col = _add(_add(inert_vec(d.cinert, b, x), uh), cross_force(vel, _inert_col(ci, k)))
            for r in range(6):
                bmat[b, r, k] = col[r]
    for b in range(m.nbody - 1, 0, -1):
        p = m.body_parentid[b]
        if p > 0:
            for r in range(6):
                for c in range(6):
                    bmat[p, r, c] += bmat[b, r, c]


@kernel
def subtree_forces(m, d, body):
    """body[b, _FRC] = sum over b's subtree of I_k a_k + v_k x* I_k v_k (mj_rne's backward pass)."""
    for t in range(6):
        body[0, _FRC, t] = 0.0
    for b in range(1, m.nbody):
        vel = row6(d.cvel, b)
        f = _add(inert_vec(d.cinert, b, _get(body, b, _ACC)), cross_force(vel, inert_vec(d.cinert, b, vel)))
        _set(body, b, _FRC, f)
    for b in range(m.nbody - 1, 0, -1):
        p = m.body_parentid[b]
        if p > 0:
            for t in range(6):
                body[p, _FRC, t] += body[b, _FRC, t]


@kernel
def rne_vel_columns(m, d, bmat, dof):
    """Per dof j: e_j = (v0_j + v1_j) x S_j, W_j = Ic e_j + Bc S_j (j's body), and the rows
    R1_i = Ic S_i, R2_i = Bc^T S_i of the velocity derivative."""
    for j in range(m.nv):
        b = m.dof_bodyid[j]
        s = row6(d.cdof, j)
        e = _cross(_add(_get(dof, j, _V0), _get(dof, j, _V1)), s)
        _set(dof, j, _E, e)
        _set(dof, j, _W, _add(inert_vec(d.crb, b, e), _mat_vec(bmat, b, s, False)))
        _set(dof, j, _R1, inert_vec(d.crb, b, s))
        _set(dof, j, _R2, _mat_vec(bmat, b, s, True))


@kernel
def rne_vel_matrix(m, d, dof, dv, scale, accumulate):
    """dv = scale d qfrc_rne / d qvel (dense; zero between dofs on different branches, so on
    MuJoCo's D pattern), or dv += that when ``accumulate``."""
    if not accumulate:
        for i in range(m.nv):
            for j in range(m.nv):
                dv[i, j] = 0.0
    for i in range(m.nv):
        r1 = _get(dof, i, _R1)
        r2 = _get(dof, i, _R2)
        j = i
        while j >= 0:
            # j before (or is) i: i's body is the deeper one for both entries
            dv[i, j] += scale * (_dot(r1, _get(dof, j, _E)) + _dot(r2, row6(d.cdof, j)))
            if j != i:
                dv[j, i] += scale * _dot(row6(d.cdof, j), _get(dof, i, _W))
            j = m.dof_parentid[j]


@kernel
def rne_vel(m, d, out, scale):
    """out += scale * d qfrc_bias / d qvel at the state of the last forward pass (mjd_rne_vel;
    cvel, cdof_dot and crb as forward left them)."""
    body, bmat, dof = d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof
    rne_partials(m, d, d.qacc, False, body, dof)
    composite_b(m, d, bmat)
    rne_vel_columns(m, d, bmat, dof)
    rne_vel_matrix(m, d, dof, out, scale, True)


@kernel
def rne_pos_matrix(m, d, body, bmat, dof, dq):
    """dq = d qfrc_rne / d qpos on MuJoCo's tangent space (dense)."""
    for j in range(m.nv):
        b = m.dof_bodyid[j]
        s = row6(d.cdof, j)
        v0 = _get(dof, j, _V0)
        u = _cross(v0, s)
        bb = _sub(_cross(_get(dof, j, _A0), s), _cross(u, v0))
        _set(dof, j, _U, u)
        _set(dof, j, _B, bb)
        p = _add(_add(inert_vec(d.crb, b, bb), _mat_vec(bmat, b, u, False)),
                 cross_force(s, _get(body, b, _FRC)))
        _set(dof, j, _P, p)
    for i in range(m.nv):
        for j in range(m.nv):
            dq[i, j] = 0.0
    for i in range(m.nv):
        r1 = _get(dof, i, _R1)
        r2 = _get(dof, i, _R2)
        first, n, rot = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, i)
        j = i
        while j >= 0:
            # dof j (before or at i) moves i's axis: the composite of i's body
            dq[i, j] = _dot(r1, _get(dof, j, _B)) + _dot(r2, _get(dof, j, _U))
            if j != i:
                if rot and first <= j < first + n:
                    # j a rotation of the same ball (or free rotation) group: i moves j's axis too
                    dq[j, i] = _dot(_get(dof, j, _R1), _get(dof, i, _B)) + _dot(_get(dof, j, _R2),
                                                                             _get(dof, i, _U))
                else:
                    dq[j, i] = _dot(row6(d.cdof, j), _get(dof, i, _P))
            j = m.dof_parentid[j]


@kernel
def rne_derivs_qv(m, d, body, bmat, dof, dq, dv):
    """d qfrc_rne / d qpos and / d qvel at d.qpos, d.qvel, d.qacc, the kinematics, crb and com_vel
    done (``_rne_derivs`` without the mass matrix)."""
    rne_partials(m, d, d.qacc, True, body, dof)
    composite_b(m, d, bmat)
    subtree_forces(m, d, body)
    rne_vel_columns(m, d, bmat, dof)
    rne_vel_matrix(m, d, dof, dv, 1.0, False)
    rne_pos_matrix(m, d, body, bmat, dof, dq)


@kernel
def rne_derivs_q(m, d, body, bmat, dof, dq):
    """d qfrc_rne / d qpos alone at d.qacc, after an rne_derivs_qv at the same qpos and qvel (and
    another qacc) whose velocity-only scratch is still in bmat and dof (composite_b,
    rne_vel_columns): only the accelerations, the subtree forces and the position terms depend on
    qacc. (d qfrc_rne / d qvel does not: that call's dv holds.)"""
    rne_partials(m, d, d.qacc, True, body, dof)
    subtree_forces(m, d, body)
    rne_pos_matrix(m, d, body, bmat, dof, dq)


@kernel
def _rne_derivs(m, d, body, bmat, dof, dq, dv, da):
    """The three derivatives at d.qpos, d.qvel, d.qacc, the kinematics, crb and com_vel done."""
    rne_derivs_qv(m, d, body, bmat, dof, dq, dv)
    for i in range(m.nv):
        for j in range(m.nv):
            da[i, j] = 0.0
    full_m_kernel(da, d.M, m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def _smooth_state(m, d):
    """mj_kinematics, mj_comPos, mj_crb, mj_comVel from qpos and qvel (Pinocchio's derivative
    functions also start from q and v)."""
    kinematics_entry(m, d)
    com_pos_entry(m, d)
    crb_entry(m, d)
    com_vel_entry(m, d)


@handle_entry(args="float64[:, ::1], float64[:, ::1], float64[:, ::1]")
def rne_derivatives_entry(m, d, dq, dv, da):
    _smooth_state(m, d)
    _rne_derivs(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, dq, dv, da)


@kernel
def _solve_rows(m, d, a, scale):
    """a <- scale * M^-1 a for an (nv, nv) matrix, with the factor in d.qLD."""
    solve_ld_rows(m, d.qLD, d.qLDiagInv, a, scale)


@kernel
def solve_ld_rows(m, qld, diaginv, a, scale):
    """a <- scale * (L^T D L)^-1 a for an (nv, ncol) a, the factor ``qld`` in M's layout (factor_i):
    mj_solveLD's steps applied to whole rows of a at once (every column a right-hand side;
    contiguous row updates)."""
    nv = m.nv
    ncol = a.shape[1]
    colind = m.M_colind
    # a <- L^-T a
    for i in range(nv - 1, -1, -1):
        start = m.M_rowadr[i]
        for t in range(m.M_rownnz[i] - 1):
            k = colind[start + t]
            f = qld[start + t]
            for c in range(ncol):
                a[k, c] -= f * a[i, c]
    # a <- D^-1 a, the scale with it
    for i in range(nv):
        f = scale * diaginv[i]
        for c in range(ncol):
            a[i, c] *= f
    # a <- L^-1 a
    for i in range(nv):
        start = m.M_rowadr[i]
        for t in range(m.M_rownnz[i] - 1):
            k = colind[start + t]
            f = qld[start + t]
            for c in range(ncol):
                a[i, c] -= f * a[k, c]


@handle_entry(args="float64[:, ::1], float64[:, ::1], float64[:, ::1]")
def forward_derivatives_entry(m, d, dq, dv, da):
    """dqacc/dq = -M^-1 dtau/dq, dqacc/dqvel = -M^-1 dtau/dqvel at qacc, dqacc/dqfrc = M^-1
    (computeABADerivatives' identities)."""
    _smooth_state(m, d)
    _rne_derivs(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, dq, dv, da)
    factor_m_entry(m, d)
    _solve_rows(m, d, dq, -1.0)
    _solve_rows(m, d, dv, -1.0)
    for i in range(m.nv):
        for j in range(m.nv):
            da[i, j] = 1.0 if i == j else 0.0
    _solve_rows(m, d, da, 1.0)


@handle_entry(args="float64[:, ::1], float64[:, ::1]")
def inertia_regressor_entry(m, d, loc, y):
    """y[i, 10 b + c]: dof i's share of body b's parameter c in the rigid-body inverse dynamics."""
    _smooth_state(m, d)
    body = d.scratch_rne_body
    rne_partials(m, d, d.qacc, True, body, d.scratch_rne_dof)
    nv = m.nv
    for i in range(nv):
        for c in range(10 * m.nbody):
            y[i, c] = 0.0
    for b in range(1, m.nbody):
        # the body's velocity and acceleration in its own frame at its origin: from the tree's
        # reference point p to the origin o (lin += rot x (o - p)), then rotated by xmat^T
        root = m.body_rootid[b]
        ox = d.xpos[b, 0] - d.subtree_com[root, 0]
        oy = d.xpos[b, 1] - d.subtree_com[root, 1]
        oz = d.xpos[b, 2] - d.subtree_com[root, 2]
        w, vl = _to_local(d.xmat, b, row6(d.cvel, b), ox, oy, oz)
        aw, al = _to_local(d.xmat, b, _get(body, b, _ACC), ox, oy, oz)
        # phi: the body force (rot; lin) at the origin, per unit of each parameter
        # [m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (Pinocchio's order)
        phi = loc
        for r in range(6):
            for c in range(10):
                phi[r, c] = 0.0
        wxv = _c3(w, vl)
        for k in range(3):
            phi[3 + k, 0] = al[k] + wxv[k]
        for c in range(3):
            ek = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0)
            # f_lin = a_rot x mc + w x (w x mc); n = mc x a_lin + w x (mc x v) + v x (w x mc)
            f = _a3(_c3(aw, ek), _c3(w, _c3(w, ek)))
            n = _a3(_a3(_c3(ek, al), _c3(w, _c3(ek, vl))), _c3(vl, _c3(w, ek)))
            for k in range(3):
                phi[3 + k, 1 + c] = f[k]
                phi[k, 1 + c] = n[k]
        # n = I a_rot + w x (I w), I symmetric from (Ixx, Ixy, Iyy, Ixz, Iyz, Izz)
        for c in range(6):
            imat = _unit_inertia(c)
            ia = _m3(imat, aw)
            n = _a3(ia, _c3(w, _m3(imat, w)))
            for k in range(3):
                phi[k, 4 + c] = n[k]
        # every dof on the path to the root, its axis in the body's frame
        a = b
        while a > 0 and m.body_dofnum[a] == 0:
            a = m.body_parentid[a]
        if a == 0:
            continue
        i = m.body_dofadr[a] + m.body_dofnum[a] - 1
        while i >= 0:
            sw, sl = _to_local(d.xmat, b, row6(d.cdof, i), ox, oy, oz)
            for c in range(10):
                y[i, 10 * b + c] = (sw[0] * phi[0, c] + sw[1] * phi[1, c] + sw[2] * phi[2, c]
                                    + sl[0] * phi[3, c] + sl[1] * phi[4, c] + sl[2] * phi[5, c])
            i = m.dof_parentid[i]


@kernel(inline="always")
def _c3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@kernel(inline="always")
def _a3(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@kernel(inline="always")
def _m3(mat, v):
    return (mat[0] * v[0] + mat[1] * v[1] + mat[2] * v[2],
            mat[3] * v[0] + mat[4] * v[1] + mat[5] * v[2],
            mat[6] * v[0] + mat[7] * v[1] + mat[8] * v[2])


@kernel(inline="always")
def _unit_inertia(c):
    """The symmetric 3x3 matrix (row-major 9-tuple) of one unit parameter in Pinocchio's order
    Ixx, Ixy, Iyy, Ixz, Iyz, Izz."""
    if c == 0:
        return (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if c == 1:
        return (0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if c == 2:
        return (0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0)
    if c == 3:
        return (0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    if c == 4:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0)
    return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


@kernel(inline="always")
def _to_local(xmat, b, vec, ox, oy, oz):
    """(rot, lin) of a com-based motion vector, moved to the point offset (ox, oy, oz) from the
    reference point and expressed in body b's frame (xmat[b]^T)."""
    lx = vec[3] + (vec[1] * oz - vec[2] * oy)
    ly = vec[4] + (vec[2] * ox - vec[0] * oz)
    lz = vec[5] + (vec[0] * oy - vec[1] * ox)
    r = xmat[b]
    w = (r[0, 0] * vec[0] + r[1, 0] * vec[1] + r[2, 0] * vec[2],
         r[0, 1] * vec[0] + r[1, 1] * vec[1] + r[2, 1] * vec[2],
         r[0, 2] * vec[0] + r[1, 2] * vec[1] + r[2, 2] * vec[2])
    v = (r[0, 0] * lx + r[1, 0] * ly + r[2, 0] * lz,
         r[0, 1] * lx + r[1, 1] * ly + r[2, 1] * lz,
         r[0, 2] * lx + r[1, 2] * ly + r[2, 2] * lz)
    return w, v


_RNE_DERIVATIVES = FastEntry(rne_derivatives_entry)
_FORWARD_DERIVATIVES = FastEntry(forward_derivatives_entry)
_INERTIA_REGRESSOR = FastEntry(inertia_regressor_entry)


class RNEDerivatives(NamedTuple):
    """Derivatives of qfrc_inverse (rows: force components; columns: MuJoCo's tangent space)."""

    dqfrc_dq: np.ndarray
    dqfrc_dv: np.ndarray
    dqfrc_dqacc: np.ndarray


class ForwardDerivatives(NamedTuple):
    """Derivatives of qacc (rows: acceleration components; columns: MuJoCo's tangent space)."""

    dqacc_dq: np.ndarray
    dqacc_dv: np.ndarray
    dqacc_dqfrc: np.ndarray


def untreated_terms(m, d=None, forward: bool = False) -> list[str]:
    """The model's terms of qfrc_inverse (or, ``forward``, of forward's qacc) that the rigid-body
    derivatives do not differentiate, by name; empty when they are exact for the whole quantity.

    Judged from the model (and ``d.xfrc_applied``): a term that may act at some state is listed
    even if it is zero at this one (an inactive joint limit), as its derivative can jump there.
    """
    flags = int(m.opt.disableflags)
    out = []
    if not flags & DSBL_SPRING and (np.any(m.jnt_stiffness) or np.any(m.jnt_stiffnesspoly)
                                   or np.any(m.tendon_stiffness) or np.any(m.tendon_stiffnesspoly)):
        out.append("passive springs (joint or tendon stiffness)")
    if not flags & DSBL_DAMPER and (np.any(m.dof_damping) or np.any(m.dof_dampingpoly)
                                   or np.any(m.tendon_damping) or np.any(m.tendon_dampingpoly)
                                   or np.any(m.actuator_damping)):
        out.append("passive dampers (joint, tendon or actuator damping)")
    if np.any(m.body_gravcomp) and not flags & DSBL_GRAVITY:
        out.append("gravity compensation (body gravcomp)")
    if m.opt.density > 0 or m.opt.viscosity > 0:
        out.append("fluid forces (option density/viscosity)")
    if not flags & DSBL_CONSTRAINT:
        if m.neq and not flags & DSBL_EQUALITY:
            out.append("equality constraints")
        if not flags & DSBL_LIMIT and (np.any(m.jnt_limited) or np.any(m.tendon_limited)):
            out.append("joint or tendon limits")
        if not flags & DSBL_FRICTIONLOSS and (np.any(m.dof_frictionloss) or np.any(m.tendon_frictionloss)):
            out.append("friction loss")
        if not flags & DSBL_CONTACT and (m.npair or _may_collide(m)):
            out.append("contacts")
    if m.opt.enableflags & EnableBit.INVDISCRETE and not forward:
        out.append("the discrete-time inverse (enable flag invdiscrete)")
    if forward and m.opt.integrator == IntegratorType.DISCRETE:
        out.append("the discrete integrator (forward's qacc is its step map, in its metric)")
    if forward:
        if m.nactuator and not flags & DisableBit.ACTUATION:
            out.append("actuator forces")
        if d is not None and np.any(d.xfrc_applied):
            out.append("xfrc_applied")
    return out


def _may_collide(m) -> bool:
    """Whether some two geoms on different bodies pass the contype/conaffinity test (MuJoCo's
    other filters, parent-child and exclusions, are not applied: a conservative answer)."""
    if m.ngeom < 2:
        return False
    ct, ca, body = m.geom_contype, m.geom_conaffinity, m.geom_bodyid
    hit = ((ct[:, None] & ca[None, :]) | (ca[:, None] & ct[None, :])) != 0
    hit &= body[:, None] != body[None, :]
    return bool(np.any(hit))


def _refuse(m, d, fname: str, forward: bool) -> None:
    terms = untreated_terms(m, d, forward)
    if terms:
        raise ValueError(f"{fname}: the model has terms these rigid-body derivatives do not differentiate: "
                         f"{'; '.join(terms)}. Pass rigid_body_only=True for the derivatives of the "
                         "rigid-body part alone (M qacc + qfrc_bias), or disable those terms")


def _three_matrices(m, d, fname, rigid_body_only, fast, result):
    """The checks, then ``fast`` filling three (nv, nv) matrices, as the named tuple ``result``."""
    check_model_data(m, d, fname)
    if not rigid_body_only:
        _refuse(m, d, fname, result is ForwardDerivatives)
    nv = m.nv
    dq, dv, da = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    fast.call(m._ptr, d._ptr, dq, dv, da)
    return result(dq, dv, da)


def rne_derivatives(m, d, rigid_body_only: bool = False) -> RNEDerivatives:
    """Analytical derivatives of the rigid-body inverse dynamics M(q) qacc + qfrc_bias(q, qvel)
    (gravity and the armature included) at d.qpos, d.qvel, d.qacc: Pinocchio's
    computeRNEADerivatives, on MuJoCo's tangent space (see docs/derivatives.md).

    Returns ``(dqfrc_dq, dqfrc_dv, dqfrc_dqacc)``, each (nv, nv), rows the force components.
    That is the derivative of ``kd.inverse``'s qfrc_inverse when the model has no passive forces
    and no constraints; otherwise it raises ValueError naming them, unless ``rigid_body_only``.
    Writes the kinematic fields (as kd.kinematics, com_pos, crb, com_vel) from qpos and qvel.
    """
    return _three_matrices(m, d, "rne_derivatives", rigid_body_only, _RNE_DERIVATIVES, RNEDerivatives)


def forward_derivatives(m, d, rigid_body_only: bool = False) -> ForwardDerivatives:
    """Analytical derivatives of the rigid-body forward dynamics at d.qpos, d.qvel and the
    acceleration d.qacc (run ``kd.forward`` first): Pinocchio's computeABADerivatives,
    dqacc/dq = -M^-1 dtau/dq, dqacc/dqvel = -M^-1 dtau/dqvel, dqacc/dqfrc = M^-1, with
    tau = M qacc + qfrc_bias as in :func:`rne_derivatives`.

    Exact for forward's qacc when the only forces are qfrc_applied and the rigid-body ones;
    otherwise raises ValueError naming the others, unless ``rigid_body_only``. Writes the
    kinematic fields, M, qLD and qLDiagInv (the values forward leaves at this state).
    """
    return _three_matrices(m, d, "forward_derivatives", rigid_body_only, _FORWARD_DERIVATIVES,
                           ForwardDerivatives)


def inertia_regressor(m, d) -> np.ndarray:
    """Y, shape (nv, 10 nbody), with M_rigid(q) qacc + qfrc_bias = Y @ theta at d.qpos, d.qvel,
    d.qacc, M_rigid without the armature (Pinocchio's computeJointTorqueRegressor).

    theta (:func:`inertia_parameters`) holds 10 parameters per body, bodies in kinedyn's order with
    the world body first (its columns zero): m, m c (3), and the rotational inertia about the body
    frame's origin Ixx, Ixy, Iyy, Ixz, Iyz, Izz, all in the body frame (xpos, xmat).
    """
    check_model_data(m, d, "inertia_regressor")
    y = np.empty((m.nv, 10 * m.nbody))
    _INERTIA_REGRESSOR.call(m._ptr, d._ptr, np.empty((6, 10)), y)
    return y


def inertia_parameters(m) -> np.ndarray:
    """theta, shape (10 nbody,), for :func:`inertia_regressor` from the model's body_mass, body_ipos,
    body_iquat and body_inertia: per body m, m c, I about the body origin (Ixx Ixy Iyy Ixz Iyz Izz)."""
    check_model(m, "inertia_parameters")
    theta = np.zeros(10 * m.nbody)
    for b in range(1, m.nbody):
        mass, c = float(m.body_mass[b]), np.asarray(m.body_ipos[b], float)
        w, x, y, z = m.body_iquat[b]
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        inertia = r @ np.diag(m.body_inertia[b]) @ r.T + mass * (c @ c * np.eye(3) - np.outer(c, c))
        theta[10 * b:10 * b + 10] = (mass, *(mass * c), inertia[0, 0], inertia[0, 1], inertia[1, 1],
                                     inertia[0, 2], inertia[1, 2], inertia[2, 2])
    return theta
