"""Derivatives of the constraint force at the solver's optimum (issue 25: the constraint part of
the analytical step derivatives).

MuJoCo's constraint force is J(q)' f(jar), jar = J(q) qacc - aref(q, qvel), f each row's force law
of the convex problem the solvers minimise (mj_constraintUpdate: -D jar on a quadratic row, 0 on
a satisfied one, +-frictionloss on friction loss's linear zones, the elliptic cone's middle-zone
law). ``inverse`` evaluates it at a given qacc (mj_invConstraint); ``forward``'s qacc is where
M qacc + bias - smooth forces - J' f = 0. So, the zone of every row held as the optimum defines it
(the zone tests of mj_constraintUpdate at d.qacc, as the inverse makes them: not forward's
efc_state, which is that of the solver's last update before its last step; MuJoCo 4.0's too, seen
on a pyramidal contact state: 3 rows satisfied after mj_forward, 28 after mj_inverse at the same
qacc, forces equal to 3e-12) and the contact set held, the derivatives of the force are

    h  = -d qfrc_constraint / d qacc = J' C J,  C = -df/djar, block diagonal: D on quadratic rows,
         0 on satisfied and linear ones, an elliptic contact's cone Hessian in the middle zone
         (the term Newton's Hessian adds, mj_constraintUpdate's contact.H)
    gv =  d qfrc_constraint / d qvel   = -J' C (d jar / d qvel),   d jar/d qvel = B J + d(J̇ qvel)/d qvel
    gq =  d qfrc_constraint / d qpos   (qvel and qacc fixed; on mj_integratePos's tangent space)

and the implicit function theorem gives forward's: (M + h) dqacc = d(smooth forces) - d(bias)
+ gq dq + gv dv.

h is exact. gv is exact: analytical (B J, B = efc_KBIP[:, 1]) for every row, and the J̇ qvel term
of connect and weld rows (mj_referenceConstraint since MuJoCo 3.7), which is a quadratic form in
qvel, by a central difference in qvel, exact for a quadratic up to rounding.

gq is analytical row block by row block (_analytic_position): d(J' f) = dJ' f + J' df, df = -C djar
+ f d ln D (f linear in D on quadratic rows and in the cone's middle zone; R = (1 - imp)/imp diagA,
diagA constant, so d ln D = imp' dpos / (imp (1 - imp))), djar = dJ (qacc + B qvel) + K (imp dpos
+ imp' dpos_imp (pos - margin)) + d(J̇ qvel). Covered: hinge, slide and ball limits, friction loss,
fixed tendons, joint and tendon couplings (_single_row_gq), spatial tendons through sites
(_tendon_gq), connect and weld (_equality_gq), and contacts whose geometry derivative_collision
writes (plane, sphere, capsule and box pairs, box-box, plane- and sphere-cylinder; _contact_gq).
The rows not covered (marked in ibuf[:, _COVERED]) get their part by a central difference of
their held-zone force along each tangent direction (_position_columns): the position stage
(kinematics, tendons, collision, rows, impedance) and the rows' velocity and aref are made again
at qpos (+) eps e_j.
The colliding features are held by requiring the same rows (types, ids, each contact's geom pair
and order); where a row appears or disappears within eps (a contact at its margin, a limit at its
range) that side is dropped and the difference is one-sided, towards the side with the base
state's rows. The entry for method="fd" takes every row's part by that difference.

The work runs on the caller's Data and restores it: after perturbations (differences, the J̇
qvel term) the position and velocity stages are run again at the base state (they are
deterministic: every field they write comes back bit for bit), and what they and the zone tests
clear (efc_force, efc_state, qfrc_constraint, contact_H) is put back.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from kinedyn._jit import FastEntry, NotBound, handle_entry, kernel, rebind
from kinedyn.engine.checks import bad_model_data
from kinedyn.engine.constraint import (
    _jac_dot_point,
    _weld_quats,
    equality_anchors,
    reference_constraint_kernel,
)
from kinedyn.engine.derivative_collision import (
    DDIST,
    DOM,
    JDV,
    JDVR,
    NG,
    TC,
    TQ,
    TT,
    WD,
    body_rot_column,
    chain_capacity,
    connect_row_derivatives,
    contact_row_derivatives,
    tendon_row_derivatives,
)
from kinedyn.engine.derivative_rne import _may_collide
from kinedyn.engine.forward import fwd_position_entry, fwd_velocity_entry
from kinedyn.engine.smooth_rne import com_vel_entry
from kinedyn.engine.smooth_tendon import is_fixed_tendon
from kinedyn.engine.solver import (
    _mul_jt,
    cone_coordinates,
    cone_forces,
    cone_hessian_block,
    constraint_update,
)
from kinedyn.engine.support import integrate_pos_kernel
from kinedyn.engine.types import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_FRICTIONLESS,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_EQUALITY,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    CNSTR_LIMIT_JOINT,
    CNSTR_LIMIT_TENDON,
    CNSTRSTATE_CONE,
    CNSTRSTATE_LINEARNEG,
    CNSTRSTATE_LINEARPOS,
    CNSTRSTATE_QUADRATIC,
    COUNT_NCON,
    COUNT_NE,
    COUNT_NEFC,
    DSBL_CONSTRAINT,
    DSBL_EQUALITY,
    DSBL_FRICTIONLOSS,
    DSBL_LIMIT,
    EQ_CONNECT,
    EQ_JOINT,
    EQ_TENDON,
    EQ_WELD,
    JNT_BALL,
    JNT_HINGE,
    JNT_SLIDE,
    MINVAL,
    OBJ_BODY,
    OPT_NOSLIP_ITERATIONS,
    EnableBit,
)
from kinedyn.engine.util_linalg3 import skew_entry
from kinedyn.engine.util_spatial import quat_product

# rows of the float scratch fbuf (_NROW, max(nq, nv, nefcmax, chain capacity^2))
_QPOS, _QVEL, _BASE, _PLUS, _MINUS, _JAR, _FORCE, _SAVED, _AREF_P, _AREF_M, _DPOS, _QFRC = range(12)
_Y = 12  # 6 rows: a block's C times its J rows
_DJAR = _Y + 6  # 6 rows: d jar / dq of a block's rows (analytical G_q)
_GEO = _DJAR + 6  # derivative_collision's rows
_NROW = _GEO + NG
# columns of the int scratch ibuf (max(nefcmax, chain capacity), _NICOL): the base rows' zone at
# d.qacc, type, id, contact geoms, d.efc_state as the caller left it, whether G_q's part of the row
# is analytical (else a difference), and a contact's chain of dofs (derivative_collision's idx)
_STATE, _TYPE, _ID, _G0, _G1, _SAVED_STATE, _COVERED, _CHAIN = range(8)
_NICOL = 8

# constraint_derivatives_entry's status
STATUS_OK, STATUS_ROWS_CHANGE, STATUS_NOSLIP = 0, 1, 2


@kernel
def _is_contact(t):
    return t == CNSTR_CONTACT_FRICTIONLESS or t == CNSTR_CONTACT_PYRAMIDAL or t == CNSTR_CONTACT_ELLIPTIC


@kernel
def _has_jdotv(m, d, i):
    """Whether row i belongs to a connect or weld constraint (aref carries -J̇ qvel)."""
    return d.efc_type[i] == CNSTR_EQUALITY and (m.eq_type[d.efc_id[i]] == EQ_CONNECT
                                                or m.eq_type[d.efc_id[i]] == EQ_WELD)


@kernel
def _jar(d, jar, qacc, nefc):
    """jar = J qacc - aref."""
    J = d.efc_J
    nv = J.shape[1]
    for i in range(nefc):
        s = 0.0
        for v in range(nv):
            s += J[i, v] * qacc[v]
        jar[i] = s - d.efc_aref[i]


@kernel
def _held_force(d, ibuf, jar, force, nefc):
    """force = each row's force law at jar with the zone held at ibuf's state (the branches of
    mj_constraintUpdate, the zone tests left out)."""
    i = 0
    while i < nefc:
        st = ibuf[i, _STATE]
        if d.efc_type[i] == CNSTR_CONTACT_ELLIPTIC:
            cid = d.efc_id[i]
            dim = d.contact_dim[cid]
            if st == CNSTRSTATE_CONE:
                mu = d.contact_mu[cid]
                N, T = cone_coordinates(d.contact_friction[cid], jar, i, dim, mu)
                cone_forces(force, d.contact_friction[cid], d.efc_D, jar, i, dim, mu, N, T)
            else:
                for j in range(dim):
                    force[i + j] = -d.efc_D[i + j] * jar[i + j] if st == CNSTRSTATE_QUADRATIC else 0.0
            i += dim
            continue
        if st == CNSTRSTATE_QUADRATIC:
            force[i] = -d.efc_D[i] * jar[i]
        elif st == CNSTRSTATE_LINEARNEG:
            force[i] = d.efc_frictionloss[i]
        elif st == CNSTRSTATE_LINEARPOS:
            force[i] = -d.efc_frictionloss[i]
        else:
            force[i] = 0.0
        i += 1


@kernel
def _held_qfrc(d, ibuf, qacc, fbuf, out, nefc, uncovered):
    """out = J' f_held(J qacc - aref) at d's rows (only the rows G_q's analytical part does not
    cover when ``uncovered``)."""
    _jar(d, fbuf[_JAR], qacc, nefc)
    _held_force(d, ibuf, fbuf[_JAR], fbuf[_FORCE], nefc)
    if uncovered:
        for i in range(nefc):
            if ibuf[i, _COVERED]:
                fbuf[_FORCE, i] = 0.0
    _mul_jt(d, out, fbuf[_FORCE], nefc)


@kernel
def _same_rows(d, ibuf, nefc):
    """Whether d's rows are the base rows: the same count, types and ids, each contact row on the
    same geom pair (the collider's contacts in the same order)."""
    if d.efc_counts[COUNT_NEFC] != nefc:
        return False
    for i in range(nefc):
        t = d.efc_type[i]
        if t != ibuf[i, _TYPE] or d.efc_id[i] != ibuf[i, _ID]:
            return False
        if _is_contact(t):
            c = d.efc_id[i]
            if d.contact_geom[c, 0] != ibuf[i, _G0] or d.contact_geom[c, 1] != ibuf[i, _G1]:
                return False
    return True


@kernel
def _block_c(d, ibuf, fbuf, i, H):
    """The block of C = -df/djar at row i: its size (1, or an elliptic contact's dim), H[:n, :n]
    filled. Quadratic rows D, satisfied and linear rows 0, a cone contact its cone Hessian."""
    st = ibuf[i, _STATE]
    if d.efc_type[i] == CNSTR_CONTACT_ELLIPTIC:
        cid = d.efc_id[i]
        dim = d.contact_dim[cid]
        if st == CNSTRSTATE_CONE:
            mu = d.contact_mu[cid]
            jar = fbuf[_JAR]
            N, T = cone_coordinates(d.contact_friction[cid], jar, i, dim, mu)
            dm = d.efc_D[i] / (mu * mu * (1 + mu * mu))
            cone_hessian_block(H, d.contact_friction[cid], jar, i, dim, mu, N, T, dm)
        else:
            for a in range(dim):
                for b in range(dim):
                    H[a, b] = d.efc_D[i + a] if (a == b and st == CNSTRSTATE_QUADRATIC) else 0.0
        return dim
    H[0, 0] = d.efc_D[i] if st == CNSTRSTATE_QUADRATIC else 0.0
    return 1


@kernel
def _hessian_and_velocity(m, d, ibuf, fbuf, hbuf, gv, h, nefc):
    """h = J' C J and gv = -J' C B J, block by block (C at the base jar, in fbuf[_JAR])."""
    nv = m.nv
    J = d.efc_J
    B = d.efc_KBIP
    for a in range(nv):
        for b in range(nv):
            h[a, b] = 0.0
            gv[a, b] = 0.0
    blk = hbuf[hbuf.shape[0] - 1]  # the last 6x6 of hbuf: scratch
    y = fbuf[_Y:_Y + 6]
    i = 0
    while i < nefc:
        n = _block_c(d, ibuf, fbuf, i, blk)
        nz = False
        for a in range(n):
            for b in range(n):
                if blk[a, b] != 0.0:
                    nz = True
        if nz:
            # y = C_blk J_blk, then h += J_blk' y and gv -= J_blk' C_blk B_blk J_blk
            for a in range(n):
                for v in range(nv):
                    s = 0.0
                    for b in range(n):
                        s += blk[a, b] * J[i + b, v]
                    y[a, v] = s
            for a in range(n):
                for c in range(nv):
                    jac = J[i + a, c]
                    if jac == 0.0:
                        continue
                    for v in range(nv):
                        h[c, v] += jac * y[a, v]
            for a in range(n):
                for v in range(nv):
                    s = 0.0
                    for b in range(n):
                        s += blk[a, b] * B[i + b, 1] * J[i + b, v]
                    y[a, v] = s
            for a in range(n):
                for c in range(nv):
                    jac = J[i + a, c]
                    if jac == 0.0:
                        continue
                    for v in range(nv):
                        gv[c, v] -= jac * y[a, v]
        i += n


@kernel
def _jdotv_velocity(m, d, fbuf, gv, nefc):
    """gv's J̇ qvel part on the connect and weld rows: d aref / d qvel by a central difference
    (aref is a quadratic form in qvel, so exact up to rounding), less its -B J part already in gv.
    Runs the velocity quantities aref needs (com_vel, reference_constraint) at the perturbed qvel;
    the caller restores them. Returns whether it did (there are such rows)."""
    nv = m.nv
    ne = d.efc_counts[COUNT_NE]
    any_jdot = False
    for i in range(ne):
        if _has_jdotv(m, d, i):
            any_jdot = True
    if not any_jdot:
        return False
    J = d.efc_J
    vmax = 0.0
    for v in range(nv):
        vmax = max(vmax, abs(d.qvel[v]))
    step = 1.0 + vmax
    for k in range(nv):
        for sgn in range(2):
            for v in range(nv):
                d.qvel[v] = fbuf[_QVEL, v]
            d.qvel[k] += step if sgn == 0 else -step
            com_vel_entry(m, d)
            reference_constraint_kernel(m, d)
            row = _AREF_P if sgn == 0 else _AREF_M
            for i in range(ne):
                fbuf[row, i] = d.efc_aref[i]
        # equality rows are quadratic: C = D; djar/dv = -daref/dv, whose -B J part gv has
        for i in range(ne):
            if not _has_jdotv(m, d, i):
                continue
            extra = -(fbuf[_AREF_P, i] - fbuf[_AREF_M, i]) / (2.0 * step) - d.efc_KBIP[i, 1] * J[i, k]
            w = d.efc_D[i] * extra
            for c in range(nv):
                gv[c, k] -= J[i, c] * w
    for v in range(nv):
        d.qvel[v] = fbuf[_QVEL, v]
    return True


# how a row's Jacobian depends on qpos (_single_row_kind): constant, tau w w' (w = e_dof or a fixed
# tendon's ten_J: a coupling's polynomial), or a ball limit's axis
_T_NONE, _T_DOF, _T_TENDON, _T_BALL = 0, 1, 2, 3


@kernel
def _single_row_kind(m, d, i):
    """How row i's Jacobian and position depend on qpos, for the rows G_q treats one by one:
    (covered, has_pos, kind, wid, tau, ax, ay, az). The position's derivative is the row's J when
    has_pos (limits, joint and tendon couplings; friction loss has pos 0). J's derivative dJ[v]/dq_k:
    _T_DOF, _T_TENDON: tau w[v] w[k], w = e_wid or ten_J[wid] (a coupling pos = y - c0 - poly(x),
    J = dy/dq - poly'(x) dx/dq, tau = -poly''(x)); _T_BALL: the ball limit's J = -a (a the unit axis
    of the rotation vector r = theta a of the joint's quaternion, mju_quat2Vel; pos = rmax -
    theta): on the tangent space q exp(delta) moves r by J_r(r)^-1 delta, so d theta = a.delta and
    da = (tau (I - a a') + [a]x / 2) delta, tau = cot(theta/2) / 2, on the dofs wid..wid+2."""
    t = d.efc_type[i]
    cid = d.efc_id[i]
    if t == CNSTR_FRICTION_DOF:
        return True, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
    if t == CNSTR_LIMIT_JOINT:
        jt = m.jnt_type[cid]
        if jt == JNT_HINGE or jt == JNT_SLIDE:
            return True, True, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        if jt != JNT_BALL:
            return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        adr = m.jnt_dofadr[cid]
        theta = max(m.jnt_range[cid, 0], m.jnt_range[cid, 1]) - d.efc_pos[i]
        if not 1e-6 < theta < math.pi - 1e-6:
            return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        return (True, True, _T_BALL, adr, 0.5 / math.tan(0.5 * theta),
                -d.efc_J[i, adr], -d.efc_J[i, adr + 1], -d.efc_J[i, adr + 2])
    if t == CNSTR_LIMIT_TENDON or t == CNSTR_FRICTION_TENDON:
        return is_fixed_tendon(m, cid), t == CNSTR_LIMIT_TENDON, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
    if t == CNSTR_EQUALITY:
        et = m.eq_type[cid]
        if et != EQ_JOINT and et != EQ_TENDON:
            return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        o1 = m.eq_obj1id[cid]
        o2 = m.eq_obj2id[cid]
        if et == EQ_TENDON and not is_fixed_tendon(m, o1):
            return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        if o2 < 0:
            return True, True, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        if et == EQ_TENDON and not is_fixed_tendon(m, o2):
            return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0
        c = m.eq_data
        if et == EQ_JOINT:
            x = d.qpos[m.jnt_qposadr[o2]] - m.qpos0[m.jnt_qposadr[o2]]
        else:
            x = d.ten_length[o2] - m.tendon_length0[o2]
        tau = -(2 * c[cid, 2] + 6 * c[cid, 3] * x + 12 * c[cid, 4] * x * x)
        if et == EQ_JOINT:
            return True, True, _T_DOF, m.jnt_dofadr[o2], tau, 0.0, 0.0, 0.0
        return True, True, _T_TENDON, o2, tau, 0.0, 0.0, 0.0
    return False, False, _T_NONE, 0, 0.0, 0.0, 0.0, 0.0


@kernel
def _row_t(d, kind, wid, tau, ax, ay, az, v, k):
    """dJ[v] / dq_k of a row of _single_row_kind's kind."""
    if kind == _T_DOF:
        return tau if (v == wid and k == wid) else 0.0
    if kind == _T_TENDON:
        return tau * d.ten_J[wid, v] * d.ten_J[wid, k]
    if kind == _T_BALL:
        a = v - wid
        b = k - wid
        if a < 0 or a > 2 or b < 0 or b > 2:
            return 0.0
        axis = (ax, ay, az)
        # J = -a: dJ = -(tau (I - a a') + [a]x / 2)
        return -(tau * ((1.0 if a == b else 0.0) - axis[a] * axis[b]) + 0.5 * skew_entry(axis, a, b))
    return 0.0


@kernel
def _scale_rate(d, i):
    """d ln D / d pos of row i's block: D = 1/R, R = (1 - imp)/imp diagA (each row of a contact
    scaled alike: impratio, the pyramid's 2 mu^2), so -d ln R = imp' / (imp (1 - imp));
    0 where R is clamped at MINVAL."""
    imp = d.efc_KBIP[i, 2]
    if d.efc_R[i] <= MINVAL or imp <= 0.0 or imp >= 1.0:
        return 0.0
    return d.efc_KBIP[i, 3] / (imp * (1.0 - imp))


@kernel
def _single_row_gq(m, d, ibuf, fbuf, hbuf, gq, i):
    """Row i's part of G_q when it is covered one by one (_single_row_kind); whether it was.
    With a = qacc + B qvel: djar = dJ a + K (imp + imp' (pos - margin)) dpos, df = -C djar +
    f d ln D, and G_q += dJ' f + J' df."""
    covered, has_pos, kind, wid, tau, ax, ay, az = _single_row_kind(m, d, i)
    if not covered:
        return False
    if not has_pos and kind == _T_NONE:
        return True  # J and pos constant: the row's force does not depend on qpos
    nv = m.nv
    J = d.efc_J
    K, B = d.efc_KBIP[i, 0], d.efc_KBIP[i, 1]
    imp, impp = d.efc_KBIP[i, 2], d.efc_KBIP[i, 3]
    blk = hbuf[hbuf.shape[0] - 1]
    _block_c(d, ibuf, fbuf, i, blk)
    cii = blk[0, 0]
    f = fbuf[_FORCE, i]
    st = ibuf[i, _STATE]
    scaled = st != CNSTRSTATE_LINEARNEG and st != CNSTRSTATE_LINEARPOS
    rate = _scale_rate(d, i) if scaled else 0.0
    kpos = K * (imp + impp * (d.efc_pos[i] - d.efc_margin[i]))
    df = fbuf[_DJAR]
    for k in range(nv):
        dpos = J[i, k] if has_pos else 0.0
        djar = kpos * dpos
        if kind != _T_NONE:
            for v in range(nv):
                djar += _row_t(d, kind, wid, tau, ax, ay, az, v, k) * (d.qacc[v] + B * d.qvel[v])
        df[k] = -cii * djar + f * rate * dpos
    for v in range(nv):
        jv = J[i, v]
        for k in range(nv):
            s = jv * df[k]
            if kind != _T_NONE:
                s += _row_t(d, kind, wid, tau, ax, ay, az, v, k) * f
            gq[v, k] += s
    return True


@kernel
def _contact_t(gb, ctype, r, out, fric):
    """d J / dq of a contact's row r (a pyramid edge: normal +- mu_k tangent k) at gb's out."""
    if ctype == CNSTR_CONTACT_PYRAMIDAL:
        j = r // 2
        mu = fric[j] if r % 2 == 0 else -fric[j]
        return gb[TC, out] + mu * gb[TC + 1 + j, out]
    return gb[TC + r, out]


@kernel
def _contact_gq(m, d, ibuf, fbuf, hbuf, gq, i):
    """The part of G_q of the contact whose rows start at i (derivative_collision's geometry and
    Jacobian derivatives); its row count, negated when the contact is not covered."""
    ctype = d.efc_type[i]
    c = d.efc_id[i]
    dim = d.contact_dim[c]
    rows = 1 if ctype == CNSTR_CONTACT_FRICTIONLESS else (
        2 * (dim - 1) if ctype == CNSTR_CONTACT_PYRAMIDAL else dim)
    gb = fbuf[_GEO:_GEO + NG]
    idx = ibuf[:, _CHAIN]
    nc = contact_row_derivatives(m, d, c, idx, gb)
    if nc < 0:
        return -rows
    if nc == 0:
        return rows
    nv = m.nv
    J = d.efc_J
    fric = d.contact_friction[c]
    imp, impp = d.efc_KBIP[i, 2], d.efc_KBIP[i, 3]
    rate = _scale_rate(d, i)
    djar = fbuf[_DJAR:_DJAR + 6]
    # djar_r = dJ_r qacc + B_r dJ_r qvel + K_r (imp dpos_r + imp' dpos (pos_r - margin_r)); the sum
    # over the chain's columns a outermost, so that the inner loop runs along kk (contiguous)
    for r in range(rows):
        K, B = d.efc_KBIP[i + r, 0], d.efc_KBIP[i + r, 1]
        dpos_r = ctype != CNSTR_CONTACT_ELLIPTIC or r == 0
        row = djar[r]
        for kk in range(nc):
            row[kk] = 0.0
        for a in range(nc):
            v = idx[a]
            va = d.qacc[v] + B * d.qvel[v]
            for kk in range(nc):
                row[kk] += _contact_t(gb, ctype, r, a * nc + kk, fric) * va
        depth = d.efc_pos[i + r] - d.efc_margin[i + r]
        for kk in range(nc):
            dp = gb[DDIST, kk]
            row[kk] += K * (impp * dp * depth + (imp * dp if dpos_r else 0.0))
    # df = -C djar + f d ln D (C block by block: an elliptic contact whole, else row by row)
    blk = hbuf[hbuf.shape[0] - 1]
    y = fbuf[_Y:_Y + 6]
    r0 = 0
    while r0 < rows:
        n = _block_c(d, ibuf, fbuf, i + r0, blk)
        for a in range(n):
            f = fbuf[_FORCE, i + r0 + a]
            for kk in range(nc):
                s = f * rate * gb[DDIST, kk]
                for b in range(n):
                    s -= blk[a, b] * djar[r0 + b, kk]
                y[r0 + a, kk] = s
        r0 += n
    # G_q[:, k] += sum_r J_r' df_r + dJ_r' f_r, row r after row r (each entry summed in that
    # order), along G_q's rows: J_r is zero off the chain, so only its columns v where it is not
    for r in range(rows):
        f = fbuf[_FORCE, i + r]
        for v in range(nv):
            jv = J[i + r, v]
            if jv != 0.0:
                g = gq[v]
                for kk in range(nc):
                    g[idx[kk]] += jv * y[r, kk]
        if f != 0.0:
            for a in range(nc):
                g = gq[idx[a]]
                for kk in range(nc):
                    g[idx[kk]] += _contact_t(gb, ctype, r, a * nc + kk, fric) * f
    return rows


@kernel
def _qm(a, b):
    return quat_product(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])


@kernel
def _qrate(w, q):
    """0.5 (0, w) q: the rate of a frame's quaternion q turning at world angular velocity w."""
    return _qm((0.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]), q)


@kernel
def _weld_t1(f2, w2, dw, q1):
    """conj(0.5 (0, w2) f2) (0, dw) q1: _subtract_jdotv's first product-rule term (mju_derivQuat's
    rate 0.5 (0, w) f of a frame turning at world angular velocity w; linear in each argument, as
    are the next two)."""
    a = _qrate(w2, f2)
    return _qm(_qm((a[0], -a[1], -a[2], -a[3]), (0.0, dw[0], dw[1], dw[2])), q1)


@kernel
def _weld_t2(c2, jdr, q1):
    return _qm(_qm(c2, (0.0, jdr[0], jdr[1], jdr[2])), q1)


@kernel
def _weld_t3(c2, dw, f1, w1, rp):
    d1 = _qm(_qrate(w1, f1), rp)
    return _qm(_qm(c2, (0.0, dw[0], dw[1], dw[2])), d1)


@kernel
def _add4(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]


@kernel
def _sub3(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@kernel
def _weld_rotation(m, d, eq, b1, b2, idx, nc, gb):
    """A weld's rotation rows J_rot[v] = ts/2 vec(c2 (0, Jr1 - Jr2)[v] q1) (c2 = conj(q2), q1 with
    relpose; mj_instantiateEquality) and aref's -J̇ qvel there (_subtract_jdotv, 3 terms):
    gb[TC + r, a * nc + j] = d J_rot,r[idx[a]] / dq_j, gb[JDVR + r, j] = d (J̇ qvel)_rot,r / dq_j.
    Along dof j the frames turn at Jr(b_s)[j]: d q1 = 0.5 (0, W1_j) q1, d c2 = -0.5 c2 (0, W2_j);
    each term being multilinear, its derivative is the sum over its arguments of the term with
    that argument differentiated."""
    ts = m.eq_data[eq, 10]
    qw, qx, qy, qz, cw, cx, cy, cz = _weld_quats(m, d, eq, b1, b2)
    q1 = (qw, qx, qy, qz)
    c2 = (cw, cx, cy, cz)
    if m.eq_objtype[eq] == OBJ_BODY:
        xq = d.xquat
        f1 = (xq[b1, 0], xq[b1, 1], xq[b1, 2], xq[b1, 3])
        f2 = (xq[b2, 0], xq[b2, 1], xq[b2, 2], xq[b2, 3])
        rp = (m.eq_data[eq, 6], m.eq_data[eq, 7], m.eq_data[eq, 8], m.eq_data[eq, 9])
    else:
        f1 = q1
        f2 = (cw, -cx, -cy, -cz)
        rp = (1.0, 0.0, 0.0, 0.0)
    cv = d.cvel
    w1 = (cv[b1, 0], cv[b1, 1], cv[b1, 2])
    w2 = (cv[b2, 0], cv[b2, 1], cv[b2, 2])
    dw = _sub3(w1, w2)
    p1x, p1y, p1z, p2x, p2y, p2z, _, _ = equality_anchors(m, d, eq)
    jdv = d.scratch_vec
    _jac_dot_point(m, d, jdv, 0, p1x, p1y, p1z, b1, True)
    _jac_dot_point(m, d, jdv, 1, p2x, p2y, p2z, b2, True)
    jdr = (jdv[0, 3] - jdv[1, 3], jdv[0, 4] - jdv[1, 4], jdv[0, 5] - jdv[1, 5])
    for j in range(nc):
        wj1 = body_rot_column(gb, 0, j)
        wj2 = body_rot_column(gb, 1, j)
        dq1 = _qrate(wj1, q1)
        dc = _qm(c2, (0.0, -0.5 * wj2[0], -0.5 * wj2[1], -0.5 * wj2[2]))
        df1 = _qrate(wj1, f1)
        df2 = _qrate(wj2, f2)
        dw1 = (gb[DOM, j], gb[DOM + 1, j], gb[DOM + 2, j])
        dw2 = (gb[DOM + 3, j], gb[DOM + 4, j], gb[DOM + 5, j])
        ddw = _sub3(dw1, dw2)
        djdr = (gb[JDVR, j], gb[JDVR + 1, j], gb[JDVR + 2, j])
        t = _add4(_add4(_weld_t1(df2, w2, dw, q1), _weld_t1(f2, dw2, dw, q1)),
                  _add4(_weld_t1(f2, w2, ddw, q1), _weld_t1(f2, w2, dw, dq1)))
        t = _add4(t, _add4(_add4(_weld_t2(dc, jdr, q1), _weld_t2(c2, djdr, q1)), _weld_t2(c2, jdr, dq1)))
        t = _add4(t, _add4(_add4(_weld_t3(dc, dw, f1, w1, rp), _weld_t3(c2, ddw, f1, w1, rp)),
                           _add4(_weld_t3(c2, dw, df1, w1, rp), _weld_t3(c2, dw, f1, dw1, rp))))
        for r in range(3):
            gb[JDVR + r, j] = 0.5 * ts * t[1 + r]
        for a in range(nc):
            ja = _sub3(body_rot_column(gb, 0, a), body_rot_column(gb, 1, a))
            out = a * nc + j
            dja = (gb[WD, out], gb[WD + 1, out], gb[WD + 2, out])
            u = _add4(_add4(_weld_t2(dc, ja, q1), _weld_t2(c2, dja, q1)), _weld_t2(c2, ja, dq1))
            for r in range(3):
                gb[TC + r, out] = 0.5 * ts * u[1 + r]


@kernel
def _equality_gq(m, d, ibuf, fbuf, hbuf, gq, i, weld):
    """The part of G_q of the connect (3 rows) or weld (6) whose rows start at i: the translation
    rows J = Jp(b1, p1) - Jp(b2, p2), pos = p1 - p2, a weld's rotation rows (_weld_rotation), pos's
    derivative J; the impedance of the block from |pos| (mj_makeImpedance); aref with -J̇ qvel
    (mj_referenceConstraint). Returns the row count, negated when not covered."""
    n = 6 if weld else 3
    eq = d.efc_id[i]
    p1x, p1y, p1z, p2x, p2y, p2z, b1, b2 = equality_anchors(m, d, eq)
    gb = fbuf[_GEO:_GEO + NG]
    idx = ibuf[:, _CHAIN]
    nc = connect_row_derivatives(m, d, p1x, p1y, p1z, b1, p2x, p2y, p2z, b2, idx, gb)
    if nc < 0:
        return -n
    if nc == 0:
        return n
    if weld:
        _weld_rotation(m, d, eq, b1, b2, idx, nc, gb)
    nv = m.nv
    J = d.efc_J
    imp, impp = d.efc_KBIP[i, 2], d.efc_KBIP[i, 3]
    rate = _scale_rate(d, i)
    norm = 0.0
    for r in range(n):
        norm += d.efc_pos[i + r] ** 2
    norm = math.sqrt(norm)
    dnorm = fbuf[_PLUS]  # d|pos| / dq_idx[j]
    for j in range(nc):
        s = 0.0
        if norm > 0.0:
            for r in range(n):
                s += d.efc_pos[i + r] * J[i + r, idx[j]]
            s /= norm
        dnorm[j] = s
    # djar_r = dJ_r (qacc + B qvel) + K (imp dpos_r + imp' d|pos| pos_r) + d(J̇ qvel)_r
    for r in range(n):
        trow = TQ + r if r < 3 else TC + r - 3
        jrow = JDV + r if r < 3 else JDVR + r - 3
        K, B = d.efc_KBIP[i + r, 0], d.efc_KBIP[i + r, 1]
        for j in range(nc):
            t = 0.0
            for a in range(nc):
                v = idx[a]
                t += gb[trow, a * nc + j] * (d.qacc[v] + B * d.qvel[v])
            fbuf[_DJAR + r, j] = (t + K * (imp * J[i + r, idx[j]] + impp * dnorm[j] * d.efc_pos[i + r])
                                  + gb[jrow, j])
    blk = hbuf[hbuf.shape[0] - 1]
    for r in range(n):
        trow = TQ + r if r < 3 else TC + r - 3
        _block_c(d, ibuf, fbuf, i + r, blk)
        f = fbuf[_FORCE, i + r]
        for j in range(nc):
            k = idx[j]
            dfr = -blk[0, 0] * fbuf[_DJAR + r, j] + f * rate * dnorm[j]
            for v in range(nv):
                gq[v, k] += J[i + r, v] * dfr
            if f != 0.0:
                for a in range(nc):
                    gq[idx[a], k] += gb[trow, a * nc + j] * f
    return n


@kernel
def _tendon_gq(m, d, ibuf, fbuf, hbuf, gq, i):
    """Row i's part of G_q for a spatial tendon's limit or friction loss through sites
    (derivative_collision.tendon_row_derivatives): J = sign ten_J, pos's derivative J for a limit;
    whether it is covered."""
    t = d.efc_id[i]
    gb = fbuf[_GEO:_GEO + NG]
    idx = ibuf[:, _CHAIN]
    nc = tendon_row_derivatives(m, d, t, idx, gb)
    if nc < 0:
        return False
    J = d.efc_J
    nv = m.nv
    # J = sign ten_J (a limit's side; +1 for friction loss)
    num = 0.0
    den = 0.0
    for v in range(nv):
        num += J[i, v] * d.ten_J[t, v]
        den += d.ten_J[t, v] * d.ten_J[t, v]
    sign = 1.0 if den == 0.0 or num >= 0.0 else -1.0
    has_pos = d.efc_type[i] == CNSTR_LIMIT_TENDON
    K, B = d.efc_KBIP[i, 0], d.efc_KBIP[i, 1]
    imp, impp = d.efc_KBIP[i, 2], d.efc_KBIP[i, 3]
    blk = hbuf[hbuf.shape[0] - 1]
    _block_c(d, ibuf, fbuf, i, blk)
    f = fbuf[_FORCE, i]
    st = ibuf[i, _STATE]
    rate = _scale_rate(d, i) if (st != CNSTRSTATE_LINEARNEG and st != CNSTRSTATE_LINEARPOS) else 0.0
    kpos = K * (imp + impp * (d.efc_pos[i] - d.efc_margin[i]))
    for j in range(nc):
        k = idx[j]
        dpos = J[i, k] if has_pos else 0.0
        djar = kpos * dpos
        for a in range(nc):
            v = idx[a]
            djar += sign * gb[TT, a * nc + j] * (d.qacc[v] + B * d.qvel[v])
        df = -blk[0, 0] * djar + f * rate * dpos
        for v in range(nv):
            gq[v, k] += J[i, v] * df
        if f != 0.0:
            for a in range(nc):
                gq[idx[a], k] += sign * gb[TT, a * nc + j] * f
    return True


@kernel
def _analytic_position(m, d, ibuf, fbuf, hbuf, gq, nefc):
    """gq = the analytical part of G_q, row block by row block (the base force and jar in fbuf);
    ibuf[:, _COVERED] marks the rows it covers. Returns whether some row is left to differences."""
    nv = m.nv
    for a in range(nv):
        for b in range(nv):
            gq[a, b] = 0.0
    rest = False
    i = 0
    while i < nefc:
        if _is_contact(d.efc_type[i]):
            n = _contact_gq(m, d, ibuf, fbuf, hbuf, gq, i)
            ok = n > 0
            n = abs(n)
        elif d.efc_type[i] == CNSTR_EQUALITY and (m.eq_type[d.efc_id[i]] == EQ_CONNECT
                                                  or m.eq_type[d.efc_id[i]] == EQ_WELD):
            n = _equality_gq(m, d, ibuf, fbuf, hbuf, gq, i, m.eq_type[d.efc_id[i]] == EQ_WELD)
            ok = n > 0
            n = abs(n)
        else:
            n = 1
            ok = _single_row_gq(m, d, ibuf, fbuf, hbuf, gq, i)
            t = d.efc_type[i]
            if not ok and (t == CNSTR_LIMIT_TENDON or t == CNSTR_FRICTION_TENDON):
                ok = _tendon_gq(m, d, ibuf, fbuf, hbuf, gq, i)
        for r in range(i, i + n):
            ibuf[r, _COVERED] = 1 if ok else 0
        if not ok:
            rest = True
        i += n
    return rest


@kernel
def _position_columns(m, d, eps, ibuf, fbuf, gq, nefc):
    """gq += central differences of the held-zone force of the rows not marked _COVERED, over the
    tangent space (fbuf[_BASE] holds their base force); STATUS_*."""
    nq, nv = m.nq, m.nv
    status = STATUS_OK
    dpos = fbuf[_DPOS, :nv]
    for k in range(nv):
        ok_p = False
        ok_m = False
        for sgn in range(2):
            for q in range(nq):
                d.qpos[q] = fbuf[_QPOS, q]
            for v in range(nv):
                dpos[v] = 0.0
            dpos[k] = 1.0
            integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, d.qpos, dpos,
                                 eps if sgn == 0 else -eps, d.scratch_quat, d.scratch_vec)
            fwd_position_entry(m, d)
            com_vel_entry(m, d)
            reference_constraint_kernel(m, d)
            if _same_rows(d, ibuf, nefc):
                row = _PLUS if sgn == 0 else _MINUS
                _held_qfrc(d, ibuf, d.qacc, fbuf, fbuf[row, :nv], nefc, True)
                if sgn == 0:
                    ok_p = True
                else:
                    ok_m = True
        for v in range(nv):
            if ok_p and ok_m:
                gq[v, k] += (fbuf[_PLUS, v] - fbuf[_MINUS, v]) / (2.0 * eps)
            elif ok_p:
                gq[v, k] += (fbuf[_PLUS, v] - fbuf[_BASE, v]) / eps
            elif ok_m:
                gq[v, k] += (fbuf[_BASE, v] - fbuf[_MINUS, v]) / eps
        if not (ok_p or ok_m):
            status = STATUS_ROWS_CHANGE
    for q in range(nq):
        d.qpos[q] = fbuf[_QPOS, q]
    return status


@kernel
def constraint_force_derivatives(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf):
    """As _force_derivatives, G_q analytical where covered (see the module docstring)."""
    return _force_derivatives(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf, True)


@kernel
def _force_derivatives(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf, analytic):
    """gq, gv, h (each (nv, nv), rows force components) of qfrc_constraint at d's state and
    d.qacc, every row's zone held as d.qacc puts it (see the module docstring). d must hold the
    position and velocity stages at its state (after forward or inverse); it is restored.
    Scratch: fbuf (_NROW, >= max(nq, nv, nefcmax)), ibuf (nefcmax, _NICOL), hbuf (nconmax + 1, 6, 6)
    (``work_shapes``). Returns a STATUS_*."""
    nv = m.nv
    nefc = d.efc_counts[COUNT_NEFC]
    if nefc == 0:
        for a in range(nv):
            for b in range(nv):
                gq[a, b] = 0.0
                gv[a, b] = 0.0
                h[a, b] = 0.0
        return STATUS_OK
    if m.opt_flags[OPT_NOSLIP_ITERATIONS] > 0:
        return STATUS_NOSLIP
    # what the caller's d holds and the work below changes: forces, states, cone Hessians
    for i in range(nefc):
        ibuf[i, _SAVED_STATE] = d.efc_state[i]
        fbuf[_SAVED, i] = d.efc_force[i]
    for v in range(nv):
        fbuf[_QFRC, v] = d.qfrc_constraint[v]
    # the zones at d.qacc (mj_constraintUpdate's tests, as the inverse makes them: forward's
    # efc_state may be the solver's previous iterate's, see the module docstring), then the base rows
    _jar(d, fbuf[_JAR], d.qacc, nefc)
    constraint_update(m, d, fbuf[_JAR], False)
    for i in range(nefc):
        ibuf[i, _STATE] = d.efc_state[i]
        ibuf[i, _TYPE] = d.efc_type[i]
        ibuf[i, _ID] = d.efc_id[i]
        if _is_contact(d.efc_type[i]):
            ibuf[i, _G0] = d.contact_geom[d.efc_id[i], 0]
            ibuf[i, _G1] = d.contact_geom[d.efc_id[i], 1]
    ncon = d.efc_counts[COUNT_NCON]
    for c in range(ncon):
        for a in range(6):
            for b in range(6):
                hbuf[c, a, b] = d.contact_H[c, a, b]
    for q in range(m.nq):
        fbuf[_QPOS, q] = d.qpos[q]
    for v in range(nv):
        fbuf[_QVEL, v] = d.qvel[v]
    # the base force and jar (fbuf[_FORCE], fbuf[_JAR]), then h, gv and G_q's analytical part
    _held_qfrc(d, ibuf, d.qacc, fbuf, fbuf[_BASE, :nv], nefc, False)
    _hessian_and_velocity(m, d, ibuf, fbuf, hbuf, gv, h, nefc)
    if analytic:
        rest = _analytic_position(m, d, ibuf, fbuf, hbuf, gq, nefc)
    else:
        rest = True
        for a in range(nv):
            for b in range(nv):
                gq[a, b] = 0.0
        for i in range(nefc):
            ibuf[i, _COVERED] = 0
    if rest:  # the base force of the rows left to differences
        _held_qfrc(d, ibuf, d.qacc, fbuf, fbuf[_BASE, :nv], nefc, True)
    perturbed = _jdotv_velocity(m, d, fbuf, gv, nefc)
    status = STATUS_OK
    if rest:
        status = _position_columns(m, d, eps, ibuf, fbuf, gq, nefc)
        perturbed = True
    # back to the base state: the position and velocity stages again if they were run elsewhere,
    # then what they and the zone tests clear
    if perturbed:
        fwd_position_entry(m, d)
        fwd_velocity_entry(m, d)
    for i in range(nefc):
        d.efc_state[i] = ibuf[i, _SAVED_STATE]
        d.efc_force[i] = fbuf[_SAVED, i]
    for v in range(nv):
        d.qfrc_constraint[v] = fbuf[_QFRC, v]
    for c in range(ncon):
        for a in range(6):
            for b in range(6):
                d.contact_H[c, a, b] = hbuf[c, a, b]
    return status


def _may_have_rows(m) -> bool:
    """Whether the model can make constraint rows at some state (a conservative answer)."""
    flags = int(m.opt.disableflags)
    if flags & DSBL_CONSTRAINT:
        return False
    return bool((m.neq and not flags & DSBL_EQUALITY)
                or (not flags & DSBL_LIMIT and (np.any(m.jnt_limited) or np.any(m.tendon_limited)))
                or (not flags & DSBL_FRICTIONLOSS
                    and (np.any(m.dof_frictionloss) or np.any(m.tendon_frictionloss)))
                or m.npair or _may_collide(m))


@handle_entry(returns="int64",
              args="float64, float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
                   "int64[:, ::1], float64[:, :, ::1]",
              needed=_may_have_rows)
def constraint_derivatives_entry(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf):
    return constraint_force_derivatives(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf)


@handle_entry(returns="int64",
              args="float64, float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
                   "int64[:, ::1], float64[:, :, ::1]",
              needed=_may_have_rows)
def constraint_derivatives_fd_entry(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf):
    """As constraint_derivatives_entry with G_q wholly by differences (method="fd": the check)."""
    return _force_derivatives(m, d, eps, gq, gv, h, fbuf, ibuf, hbuf, False)


_CONSTRAINT_DERIVATIVES = FastEntry(constraint_derivatives_entry)
_CONSTRAINT_DERIVATIVES_FD = FastEntry(constraint_derivatives_fd_entry)


def work_shapes(m, d) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int]]:
    """The shapes of constraint_derivatives_entry's scratch arrays (fbuf, ibuf, hbuf) for d's model,
    from the capacities of its rows and contacts (d's efc_* and contact arrays show only the
    current rows, which a later forward pass may outnumber)."""
    nefcmax = m.nefcmax
    chain = chain_capacity(m)
    return ((_NROW, max(m.nq, m.nv, nefcmax, chain * chain, 1)), (max(nefcmax, chain, 1), _NICOL),
            (m.nconmax + 1, 6, 6))


class ConstraintDerivatives(NamedTuple):
    """Derivatives of qfrc_constraint (rows: force components; columns: MuJoCo's tangent space),
    every row's zone and the contact set held as at the state."""

    dqfrc_dq: np.ndarray
    dqfrc_dv: np.ndarray
    dqfrc_dqacc: np.ndarray


def constraint_derivatives(m, d, eps: float = 1e-7, method: str = "analytic") -> ConstraintDerivatives:
    """Derivatives of the constraint force ``qfrc_constraint = J' f(J qacc - aref)`` with respect to
    qpos (on MuJoCo's tangent space), qvel and qacc, at d's state and d.qacc, every row's zone held
    as it is at d.qacc (run ``kd.forward`` or ``kd.inverse`` first: the rows and aref of d are used). Returns
    ``(dqfrc_dq, dqfrc_dv, dqfrc_dqacc)``, each (nv, nv), rows the force components.

    dqfrc_dqacc = -J' C J (C the force law's Jacobian: the Newton Hessian's constraint term) and
    dqfrc_dv are exact; dqfrc_dq is analytical for the rows it covers (limits, friction loss,
    equalities, spatial tendons through sites, contacts between planes, spheres, capsules and boxes,
    box-box, plane- and sphere-cylinder), the colliding features held, and for the other rows a
    central difference with step ``eps`` of their force with the zones and the contact set held
    (one-sided where a row appears or disappears within eps). ``method="fd"`` takes all of
    dqfrc_dq by that difference.
    d is left as it was. Raises ValueError for the noslip solver, the discrete-time inverse flag,
    or a q column along which the constraint rows change both ways. See docs/derivatives.md.
    """
    try:
        if d._model is not m:
            bad_model_data(m, d, "constraint_derivatives")
    except AttributeError:
        bad_model_data(m, d, "constraint_derivatives")
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)):
        raise TypeError(f"constraint_derivatives: eps must be a number, got {type(eps).__name__}")
    eps = float(eps)
    if method not in ("analytic", "fd"):
        raise ValueError(f'constraint_derivatives: method must be "analytic" or "fd", got {method!r}')
    entry = _CONSTRAINT_DERIVATIVES if method == "analytic" else _CONSTRAINT_DERIVATIVES_FD
    if not 0.0 < eps < np.inf:
        raise ValueError(f"constraint_derivatives: eps must be finite and positive, got {eps!r}")
    if m.opt.noslip_iterations > 0:
        raise ValueError("constraint_derivatives: the noslip solver (noslip_iterations > 0) changes the "
                         "forces after the optimum; its derivatives are not covered")
    if m.opt.enableflags & EnableBit.INVDISCRETE:
        raise ValueError("constraint_derivatives: with the discrete-time inverse (enable flag invdiscrete) "
                         "the rows' zones are those of another acceleration than d.qacc; clear the flag")
    nv = m.nv
    gq, gv, h = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    fs, ishape, hs = work_shapes(m, d)
    args = (eps, gq, gv, h, np.empty(fs), np.empty(ishape, dtype=np.int64), np.empty(hs))
    try:
        status = entry.call(m._ptr, d._ptr, *args)
    except NotBound:
        rebind(m, d)
        status = entry.call(m._ptr, d._ptr, *args)
    if status == STATUS_ROWS_CHANGE:
        raise ValueError("constraint_derivatives: along some qpos direction the constraint rows change "
                         f"on both sides within eps={eps} (a contact or limit switching); try a smaller eps")
    if status == STATUS_NOSLIP:
        raise ValueError("constraint_derivatives: the noslip solver is not covered")
    np.negative(h, out=h)
    return ConstraintDerivatives(gq, gv, h)
