"""Constraint rows: equality, friction loss, limits and contacts (engine_core_constraint.c).

The position stage makes the rows (``make_constraint``, MuJoCo's ``mj_makeConstraint``):
each row's type, id, Jacobian, position, margin and friction loss, then the approximate
inverse inertia of the row (``mj_diagApprox``), its impedance and the regulariser
(``mj_makeImpedance``); for the dual solvers (PGS, noslip) it also groups the rows into
islands (:mod:`kinedyn.engine.island`) and builds AR = J M^-1 J' + diag(R)
(``project_constraint``, ``mj_projectConstraint``). The velocity stage computes each row's
velocity and reference acceleration (``reference_constraint``, ``mj_referenceConstraint``).
The solvers (:mod:`kinedyn.engine.solver`, :mod:`kinedyn.engine.solver_pgs`) read them.

Rows come in MuJoCo's order: equality (connect 3 rows, weld 6, joint and tendon 1, flex one per
non-rigid edge), friction
loss (dofs, then tendons), limits (joints, lower side first, then tendons), contacts. A row
whose Jacobian is all zero is dropped (but never a contact row). The Jacobian is kept dense
((nefc, nv)); MuJoCo switches to a sparse layout for nv >= 60 with the same values.

The soft-constraint model, per row i (MuJoCo's Computation chapter):

    d = impedance(|pos - margin|)                 the solimp spline, in (0, 1)
    R = max(MINVAL, (1 - d) / d * diagA)          the regulariser, D = 1 / R
    K = 1 / (dmax^2 timeconst^2 dampratio^2),  B = 2 / (dmax timeconst)    (solref > 0)
    K = -solref[0] / dmax^2,                   B = -solref[1] / dmax       (solref <= 0)
    aref = -B vel - K d (pos - margin)
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.island import make_islands
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_FRICTIONLESS,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_EQUALITY,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    CNSTR_LIMIT_JOINT,
    CNSTR_LIMIT_TENDON,
    CONE_PYRAMIDAL,
    COUNT_DROPPED,
    COUNT_NCON,
    COUNT_NE,
    COUNT_NEFC,
    COUNT_NF,
    DSBL_CONSTRAINT,
    DSBL_CONTACT,
    DSBL_EQUALITY,
    DSBL_FRICTIONLOSS,
    DSBL_ISLAND,
    DSBL_LIMIT,
    DSBL_REFSAFE,
    EQ_CONNECT,
    EQ_FLEX,
    EQ_JOINT,
    EQ_WELD,
    INT_DISCRETE,
    JAC_AUTO,
    JAC_SPARSE,
    JNT_BALL,
    JNT_FREE,
    JNT_HINGE,
    JNT_SLIDE,
    MINVAL,
    OBJ_BODY,
    OPT_CONE,
    OPT_DISABLEFLAGS,
    OPT_IMPRATIO,
    OPT_INTEGRATOR,
    OPT_JACOBIAN,
    OPT_NOSLIP_ITERATIONS,
    OPT_SOLVER,
    SOL_NEWTON,
    SOL_PGS,
)
from kinedyn.engine.util_linalg3 import dot_mj, dot_pattern
from kinedyn.engine.util_spatial import quat_product, unsigned_index

# solimp's clamps (mjMINIMP, mjMAXIMP)
MINIMP = 0.0001
MAXIMP = 0.9999

# rows of Data.scratch_cjac: the two Jacobians of an equality and their difference
_J0P, _J0R, _J1P, _J1R, _JDP, _JDR = 0, 1, 2, 3, 4, 5
JAC_DIFF_POS = _JDP  # the row of point_jacobians' output holding the translational difference


# most rows one contact makes: a pyramidal cone of condim 6
MAX_CONTACT_ROWS = 10


def efc_capacity(njnt: int, nv: int, ntendon: int, eq_type, nconmax: int = 0,
                 contact_rows: int | None = None, flex_rows: int = 0) -> int:
    """Rows the efc_* arrays hold (Model.nefcmax).

    Every row a model can make whatever its state and its mutable fields (eq_active,
    jnt_limited, dof_frictionloss, ... can be switched on at run time): 3 per connect,
    6 per weld, 1 per other equality, one friction row per dof and per tendon, two limit
    rows per joint and per tendon, and ``contact_rows`` for contacts (default: up to
    MAX_CONTACT_ROWS per contact). Contact rows beyond the capacity are dropped with a
    warning (see _instantiate_contact). ``flex_rows``: the edges of the flexes that flex
    equalities constrain (one row each, counted here instead of 1 per equality).
    """
    ne = sum(3 if t == EQ_CONNECT else 6 if t == EQ_WELD else 0 if t == EQ_FLEX else 1 for t in eq_type)
    ne += flex_rows
    if contact_rows is None:
        contact_rows = MAX_CONTACT_ROWS * nconmax
    return ne + nv + ntendon + 2 * njnt + 2 * ntendon + contact_rows


# ---- making rows ------------------------------------------------------------------------------


@kernel
def _add_rows(d, size, ctype, cid, pos0, pos1, pos2, margin, frictionloss, check_empty):
    """Keep the ``size`` rows written at d.efc_J[nefc:nefc+size] (mj_addConstraint): set their
    type, id, pos (up to 3 given; more are set by the caller), margin and friction loss and
    count them, unless every entry is zero and ``check_empty`` (non-contact rows)."""
    counts = d.efc_counts
    n = counts[3]
    J = d.efc_J
    nv = J.shape[1]
    if check_empty:
        empty = True
        for r in range(n, n + size):
            for v in range(nv):
                if J[r, v] != 0.0:
                    empty = False
                    break
            if not empty:
                break
        if empty:
            return False
    for r in range(n, n + size):
        d.efc_margin[r] = margin
        d.efc_frictionloss[r] = frictionloss
        d.efc_type[r] = ctype
        d.efc_id[r] = cid
    d.efc_pos[n] = pos0
    if size > 1:
        d.efc_pos[n + 1] = pos1
        d.efc_pos[n + 2] = pos2
    counts[3] = n + size
    if ctype == CNSTR_EQUALITY:
        counts[0] += size
    elif ctype == CNSTR_FRICTION_DOF or ctype == CNSTR_FRICTION_TENDON:
        counts[1] += size
    elif ctype == CNSTR_LIMIT_JOINT or ctype == CNSTR_LIMIT_TENDON:
        counts[2] += size
    return True


@kernel
def equality_anchors(m, d, i):
    """World anchor points and bodies of connect or weld ``i`` (mj_equalityAnchors): returns
    (p1x, p1y, p1z, p2x, p2y, p2z, body1, body2). A connect's anchor is eq_data[0:3] in body 1
    and eq_data[3:6] in body 2; a weld's the other way round; sites use their positions."""
    o1 = m.eq_obj1id[i]
    o2 = m.eq_obj2id[i]
    if m.eq_objtype[i] == OBJ_BODY:
        a1 = 0 if m.eq_type[i] == EQ_CONNECT else 3
        a2 = 3 - a1
        p1x, p1y, p1z = _frame_point(d, o1, m.eq_data, i, a1)
        p2x, p2y, p2z = _frame_point(d, o2, m.eq_data, i, a2)
        return p1x, p1y, p1z, p2x, p2y, p2z, o1, o2
    s = d.site_xpos
    return (s[o1, 0], s[o1, 1], s[o1, 2], s[o2, 0], s[o2, 1], s[o2, 2],
            m.site_bodyid[o1], m.site_bodyid[o2])


@kernel
def _frame_point(d, b, data, i, a):
    """xpos[b] + xmat[b] data[i, a:a+3]: a point given in body b's frame, in the world."""
    xm, xp = d.xmat, d.xpos
    x, y, z = data[i, a], data[i, a + 1], data[i, a + 2]
    return ((xm[b, 0, 0] * x + xm[b, 0, 1] * y + xm[b, 0, 2] * z) + xp[b, 0],
            (xm[b, 1, 0] * x + xm[b, 1, 1] * y + xm[b, 1, 2] * z) + xp[b, 1],
            (xm[b, 2, 0] * x + xm[b, 2, 1] * y + xm[b, 2, 2] * z) + xp[b, 2])


@kernel
def _weld_quats(m, d, i, b1, b2):
    """(q1 * relpose) and conj(q2) of weld ``i`` as 8 components; site semantics use the
    site frames (xquat * site_quat) instead of body frame and relpose."""
    o1 = m.eq_obj1id[i]
    o2 = m.eq_obj2id[i]
    xq = d.xquat
    if m.eq_objtype[i] == OBJ_BODY:
        rp = m.eq_data
        qw, qx, qy, qz = quat_product(xq[b1, 0], xq[b1, 1], xq[b1, 2], xq[b1, 3],
                                      rp[i, 6], rp[i, 7], rp[i, 8], rp[i, 9])
        return qw, qx, qy, qz, xq[b2, 0], -xq[b2, 1], -xq[b2, 2], -xq[b2, 3]
    sq = m.site_quat
    qw, qx, qy, qz = quat_product(xq[b1, 0], xq[b1, 1], xq[b1, 2], xq[b1, 3],
                                  sq[o1, 0], sq[o1, 1], sq[o1, 2], sq[o1, 3])
    sw, sx, sy, sz = quat_product(xq[b2, 0], xq[b2, 1], xq[b2, 2], xq[b2, 3],
                                  sq[o2, 0], sq[o2, 1], sq[o2, 2], sq[o2, 3])
    return qw, qx, qy, qz, sw, -sx, -sy, -sz


@kernel
def _moves(m, b):
    """Whether body b has a dof on its path to the world (else its Jacobians are zero)."""
    while b > 0 and m.body_dofnum[b] == 0:
        b = m.body_parentid[b]
    return b > 0


@kernel
def point_jacobians(m, d, jac, p1x, p1y, p1z, b1, p2x, p2y, p2z, b2):
    """jac[_JD*] = Jacobians of point p1 on b1 minus those of p2 on b2 (mj_jacDifPair, dense)."""
    if not _moves(m, b2):
        # b2's Jacobians are +0 (the world, a contact's floor): p1's minus +0 are p1's, bit for bit
        jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                   d.subtree_com, d.cdof, p1x, p1y, p1z, b1, jac[_JDP], jac[_JDR])
        return
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, p1x, p1y, p1z, b1, jac[_J0P], jac[_J0R])
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, p2x, p2y, p2z, b2, jac[_J1P], jac[_J1R])
    nv = jac.shape[2]
    for k in range(3):
        for v in range(nv):
            jac[_JDP, k, v] = jac[_J0P, k, v] - jac[_J1P, k, v]
            jac[_JDR, k, v] = jac[_J0R, k, v] - jac[_J1R, k, v]


@kernel
def _instantiate_equality(m, d):
    """Equality rows (mj_instantiateEquality): connect, weld, joint and tendon couplings."""
    J = d.efc_J
    nv = J.shape[1]
    jac = d.scratch_cjac
    for i in range(m.neq):
        if not d.eq_active[i]:
            continue
        n = d.efc_counts[COUNT_NEFC]
        etype = m.eq_type[i]
        if etype == EQ_CONNECT or etype == EQ_WELD:
            p1x, p1y, p1z, p2x, p2y, p2z, b1, b2 = equality_anchors(m, d, i)
            point_jacobians(m, d, jac, p1x, p1y, p1z, b1, p2x, p2y, p2z, b2)
            for k in range(3):
                for v in range(nv):
                    J[n + k, v] = jac[_JDP, k, v]
            if etype == EQ_CONNECT:
                _add_rows(d, 3, CNSTR_EQUALITY, i, p1x - p2x, p1y - p2y, p1z - p2z, 0.0, 0.0, True)
                continue
            # orientation error: vec(conj(q2) * q1 * relpose), scaled by torquescale
            ts = m.eq_data[i, 10]
            qw, qx, qy, qz, cw, cx, cy, cz = _weld_quats(m, d, i, b1, b2)
            ew, ex, ey, ez = quat_product(cw, cx, cy, cz, qw, qx, qy, qz)
            # rotation rows, column by column: 0.5 vec(conj(q2) * (0, jr1 - jr2) * q1 * relpose)
            for v in range(nv):
                aw, ax, ay, az = quat_product(cw, cx, cy, cz, 0.0, jac[_JDR, 0, v], jac[_JDR, 1, v],
                                              jac[_JDR, 2, v])
                rw, rx, ry, rz = quat_product(aw, ax, ay, az, qw, qx, qy, qz)
                J[n + 3, v] = 0.5 * rx * ts
                J[n + 4, v] = 0.5 * ry * ts
                J[n + 5, v] = 0.5 * rz * ts
            if _add_rows(d, 6, CNSTR_EQUALITY, i, p1x - p2x, p1y - p2y, p1z - p2z, 0.0, 0.0, True):
                d.efc_pos[n + 3] = ex * ts
                d.efc_pos[n + 4] = ey * ts
                d.efc_pos[n + 5] = ez * ts
            continue
        if etype == EQ_FLEX:
            # one row per non-rigid edge of the flex: length - length0, Jacobian flexedge_J
            f = m.eq_obj1id[i]
            for e in range(m.flex_edgeadr[f], m.flex_edgeadr[f] + m.flex_edgenum[f]):
                if m.flexedge_rigid[e]:
                    continue
                n = d.efc_counts[COUNT_NEFC]
                for v in range(nv):
                    J[n, v] = d.flexedge_J[e, v]
                _add_rows(d, 1, CNSTR_EQUALITY, i, d.flexedge_length[e] - m.flexedge_length0[e],
                          0.0, 0.0, 0.0, 0.0, True)
            continue
        # joint or tendon: y - y0 = poly(x - x0), the polynomial's coefficients in eq_data[0:5]
        o1 = m.eq_obj1id[i]
        o2 = m.eq_obj2id[i]
        for v in range(nv):
            J[n, v] = 0.0
        if etype == EQ_JOINT:
            y = d.qpos[m.jnt_qposadr[o1]] - m.qpos0[m.jnt_qposadr[o1]]
            J[n, m.jnt_dofadr[o1]] = 1.0
        else:
            y = d.ten_length[o1] - m.tendon_length0[o1]
            for v in range(nv):
                J[n, v] = d.ten_J[o1, v]
        c = m.eq_data
        if o2 >= 0:
            if etype == EQ_JOINT:
                x = d.qpos[m.jnt_qposadr[o2]] - m.qpos0[m.jnt_qposadr[o2]]
            else:
                x = d.ten_length[o2] - m.tendon_length0[o2]
            pos = y - c[i, 0] - (c[i, 1] * x + c[i, 2] * x * x + c[i, 3] * x * x * x
                                 + c[i, 4] * x * x * x * x)
            deriv = c[i, 1] + 2 * c[i, 2] * x + 3 * c[i, 3] * x * x + 4 * c[i, 4] * x * x * x
            if etype == EQ_JOINT:
                J[n, m.jnt_dofadr[o2]] += -deriv * 1.0
            else:
                for v in range(nv):
                    J[n, v] += -deriv * d.ten_J[o2, v]
        else:
            pos = y - c[i, 0]
        _add_rows(d, 1, CNSTR_EQUALITY, i, pos, 0.0, 0.0, 0.0, 0.0, True)


@kernel
def _instantiate_friction(m, d):
    """Friction-loss rows (mj_instantiateFriction): one per dof, then one per tendon, with loss > 0."""
    J = d.efc_J
    nv = J.shape[1]
    for i in range(nv):
        if m.dof_frictionloss[i] == 0.0:
            continue
        n = d.efc_counts[COUNT_NEFC]
        for v in range(nv):
            J[n, v] = 0.0
        J[n, i] = 1.0
        _add_rows(d, 1, CNSTR_FRICTION_DOF, i, 0.0, 0.0, 0.0, 0.0, m.dof_frictionloss[i], True)
    for i in range(m.ntendon):
        if m.tendon_frictionloss[i] > 0.0:
            n = d.efc_counts[COUNT_NEFC]
            for v in range(nv):
                J[n, v] = d.ten_J[i, v]
            _add_rows(d, 1, CNSTR_FRICTION_TENDON, i, 0.0, 0.0, 0.0, 0.0, m.tendon_frictionloss[i], True)


@kernel
def _instantiate_limit(m, d):
    """Limit rows (mj_instantiateLimit): joints (hinge and slide: lower side, then upper; ball:
    the rotation angle), then tendons; a row is made when the distance is below the margin."""
    J = d.efc_J
    nv = J.shape[1]
    for i in range(m.njnt):
        if not m.jnt_limited[i]:
            continue
        margin = m.jnt_margin[i]
        jtype = m.jnt_type[i]
        if jtype == JNT_SLIDE or jtype == JNT_HINGE:
            value = d.qpos[m.jnt_qposadr[i]]
            for side in (-1, 1):
                dist = side * (m.jnt_range[i, (side + 1) // 2] - value)
                if dist < margin:
                    n = d.efc_counts[COUNT_NEFC]
                    for v in range(nv):
                        J[n, v] = 0.0
                    J[n, m.jnt_dofadr[i]] = -float(side)
                    _add_rows(d, 1, CNSTR_LIMIT_JOINT, i, dist, 0.0, 0.0, margin, 0.0, True)
        elif jtype == JNT_BALL:
            # angle of the normalised quaternion, and the unit axis (mju_quat2Vel, mju_normalize3)
            adr = m.jnt_qposadr[i]
            qw, qx, qy, qz = d.qpos[adr], d.qpos[adr + 1], d.qpos[adr + 2], d.qpos[adr + 3]
            norm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
            if norm < MINVAL:
                qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0
            else:
                inv = 1.0 / norm
                qw, qx, qy, qz = qw * inv, qx * inv, qy * inv, qz * inv
            ax, ay, az, angle = _quat_axis_angle(qw, qx, qy, qz)
            dist = max(m.jnt_range[i, 0], m.jnt_range[i, 1]) - angle
            if dist < margin:
                n = d.efc_counts[COUNT_NEFC]
                for v in range(nv):
                    J[n, v] = 0.0
                dof = m.jnt_dofadr[i]
                J[n, dof] = -ax
                J[n, dof + 1] = -ay
                J[n, dof + 2] = -az
                _add_rows(d, 1, CNSTR_LIMIT_JOINT, i, dist, 0.0, 0.0, margin, 0.0, True)
    for i in range(m.ntendon):
        if not m.tendon_limited[i]:
            continue
        value = d.ten_length[i]
        margin = m.tendon_margin[i]
        for side in (-1, 1):
            dist = side * (m.tendon_range[i, (side + 1) // 2] - value)
            if dist < margin:
                n = d.efc_counts[COUNT_NEFC]
                for v in range(nv):
                    J[n, v] = -side * d.ten_J[i, v]
                _add_rows(d, 1, CNSTR_LIMIT_TENDON, i, dist, 0.0, 0.0, margin, 0.0, True)


@kernel
def _instantiate_contact(m, d):
    """Contact rows (mj_instantiateContact), in contact order, for contacts not excluded.

    In the contact frame F (rows: normal, tangent 1, tangent 2) the rows are F (Jp(b1) -
    Jp(b0)) at the contact point, with F (Jr(b1) - Jr(b0)) (spin, rolling) for condim > 3:
    condim 1 gives one frictionless row; a pyramidal cone gives the edge pairs
    J_n +- friction_k J_k; an elliptic cone the condim rows as they are."""
    ncon = d.efc_counts[COUNT_NCON]
    nv = m.nv
    if ncon == 0 or nv == 0:
        return
    pyramid = m.opt_flags[OPT_CONE] == CONE_PYRAMIDAL
    jac = d.scratch_cjac
    J = d.efc_J
    for i in range(ncon):
        if d.contact_exclude[i]:
            continue
        dim = d.contact_dim[i]
        n = d.efc_counts[COUNT_NEFC]
        rows = 1 if dim == 1 else (2 * (dim - 1) if pyramid else dim)
        if n + rows > J.shape[0]:
            d.efc_counts[COUNT_DROPPED] += 1  # no room for the contact's rows: dropped, with a warning
            continue
        d.contact_efc_address[i] = n
        b0 = m.geom_bodyid[d.contact_geom[i, 0]]
        b1 = m.geom_bodyid[d.contact_geom[i, 1]]
        px, py, pz = d.contact_pos[i, 0], d.contact_pos[i, 1], d.contact_pos[i, 2]
        point_jacobians(m, d, jac, px, py, pz, b1, px, py, pz, b0)
        # the Jacobian in the contact frame, rows (n, t1, t2, spin, roll1, roll2)[:dim], kept in
        # jac[0:2] (the per-body Jacobians are no longer needed)
        fr = d.contact_frame
        for r in range(dim if dim > 1 else 1):
            src = _JDP if r < 3 else _JDR
            k = r if r < 3 else r - 3
            for v in range(nv):
                jac[r // 3, r % 3, v] = (fr[i, k, 0] * jac[src, 0, v] + fr[i, k, 1] * jac[src, 1, v]
                                         + fr[i, k, 2] * jac[src, 2, v])
        dist = d.contact_dist[i]
        margin = d.contact_includemargin[i]
        if dim == 1:
            for v in range(nv):
                J[n, v] = jac[0, 0, v]
            _contact_rows(d, n, 1, CNSTR_CONTACT_FRICTIONLESS, i, dist, margin, True)
        elif pyramid:
            for k in range(1, dim):
                mu = d.contact_friction[i, k - 1]
                r = n + 2 * (k - 1)
                for v in range(nv):
                    J[r, v] = jac[0, 0, v] + mu * jac[k // 3, k % 3, v]
                    J[r + 1, v] = jac[0, 0, v] + -mu * jac[k // 3, k % 3, v]
            _contact_rows(d, n, 2 * (dim - 1), CNSTR_CONTACT_PYRAMIDAL, i, dist, margin, True)
        else:
            for r in range(dim):
                for v in range(nv):
                    J[n + r, v] = jac[r // 3, r % 3, v]
            _contact_rows(d, n, dim, CNSTR_CONTACT_ELLIPTIC, i, dist, margin, False)


@kernel
def _contact_rows(d, n, size, ctype, cid, dist, margin, every_row):
    """Type, id, pos and margin of a contact's rows: every row at the contact's distance and
    margin (frictionless, pyramidal), or only the first (elliptic)."""
    for r in range(n, n + size):
        first = every_row or r == n
        d.efc_pos[r] = dist if first else 0.0
        d.efc_margin[r] = margin if first else 0.0
        d.efc_frictionloss[r] = 0.0
        d.efc_type[r] = ctype
        d.efc_id[r] = cid
    d.efc_counts[COUNT_NEFC] = n + size


@kernel
def _quat_axis_angle(qw, qx, qy, qz):
    """Unit rotation axis and the norm of the rotation vector of a unit quaternion, as
    mju_quat2Vel(q, 1) followed by mju_normalize3 computes them."""
    ax, ay, az = qx, qy, qz
    sin_a_2 = math.sqrt(ax * ax + ay * ay + az * az)
    if sin_a_2 < MINVAL:
        ax, ay, az = 1.0, 0.0, 0.0
    else:
        inv = 1.0 / sin_a_2
        ax, ay, az = ax * inv, ay * inv, az * inv
    speed = 2.0 * math.atan2(sin_a_2, qw)
    if speed > math.pi:
        speed -= 2.0 * math.pi
    vx, vy, vz = ax * speed, ay * speed, az * speed
    norm = math.sqrt(vx * vx + vy * vy + vz * vz)
    if norm < MINVAL:
        return 1.0, 0.0, 0.0, norm
    inv = 1.0 / norm
    return vx * inv, vy * inv, vz * inv, norm


# ---- impedance --------------------------------------------------------------------------------


@kernel
def _diag_approx(m, d, nefc):
    """efc_diagA = the row's approximate inverse inertia from the *_invweight0 fields (mj_diagApprox)."""
    weldcnt = 0
    dA = d.efc_diagA
    flexedge = -1  # the edge of a flex equality's row (rows follow the flex's non-rigid edges)
    for i in range(nefc):
        cid = d.efc_id[i]
        t = d.efc_type[i]
        if t == CNSTR_EQUALITY:
            etype = m.eq_type[cid]
            if etype == EQ_FLEX:
                f = m.eq_obj1id[cid]
                if i == 0 or d.efc_type[i - 1] != CNSTR_EQUALITY or d.efc_id[i - 1] != cid:
                    flexedge = m.flex_edgeadr[f] - 1
                flexedge += 1
                while m.flexedge_rigid[flexedge]:
                    flexedge += 1
                dA[i] = m.flexedge_invweight0[flexedge]
            elif etype == EQ_CONNECT or etype == EQ_WELD:
                b1 = m.eq_obj1id[cid]
                b2 = m.eq_obj2id[cid]
                if m.eq_objtype[cid] != OBJ_BODY:
                    b1 = m.site_bodyid[b1]
                    b2 = m.site_bodyid[b2]
                if etype == EQ_CONNECT:
                    dA[i] = m.body_invweight0[b1, 0] + m.body_invweight0[b2, 0]
                else:
                    # weld rows 0-2 translate, 3-5 rotate
                    r = 1 if weldcnt > 2 else 0
                    dA[i] = m.body_invweight0[b1, r] + m.body_invweight0[b2, r]
                    weldcnt = (weldcnt + 1) % 6
            elif etype == EQ_JOINT:
                dA[i] = m.dof_invweight0[m.jnt_dofadr[m.eq_obj1id[cid]]]
                if m.eq_obj2id[cid] >= 0:
                    dA[i] += m.dof_invweight0[m.jnt_dofadr[m.eq_obj2id[cid]]]
            else:
                dA[i] = m.tendon_invweight0[m.eq_obj1id[cid]]
                if m.eq_obj2id[cid] >= 0:
                    dA[i] += m.tendon_invweight0[m.eq_obj2id[cid]]
        elif t == CNSTR_FRICTION_DOF:
            dA[i] = m.dof_invweight0[cid]
        elif t == CNSTR_LIMIT_JOINT:
            dA[i] = m.dof_invweight0[m.jnt_dofadr[cid]]
        elif t == CNSTR_FRICTION_TENDON or t == CNSTR_LIMIT_TENDON:
            dA[i] = m.tendon_invweight0[cid]
        elif i == d.contact_efc_address[cid]:
            # a contact's first row: every row of the contact, from its two bodies
            b0 = m.geom_bodyid[d.contact_geom[cid, 0]]
            b1 = m.geom_bodyid[d.contact_geom[cid, 1]]
            tran = 0.0 + m.body_invweight0[b0, 0] + m.body_invweight0[b1, 0]
            rot = 0.0 + m.body_invweight0[b0, 1] + m.body_invweight0[b1, 1]
            dim = d.contact_dim[cid]
            if t == CNSTR_CONTACT_FRICTIONLESS:
                dA[i] = tran
            elif t == CNSTR_CONTACT_ELLIPTIC:
                for j in range(dim):
                    dA[i + j] = tran if j < 3 else rot
            else:
                for j in range(dim - 1):
                    fri = d.contact_friction[cid, j]
                    dA[i + 2 * j] = tran + fri * fri * (tran if j < 2 else rot)
                    dA[i + 2 * j + 1] = dA[i + 2 * j]


@kernel
def impedance(s0, s1, s2, s3, s4, pos, margin):
    """(d, d'): the solimp spline at pos - margin (getimpedance), solimp already clamped.

    d rises from d0 = solimp[0] to dwidth = solimp[1] over |pos - margin| in [0, width]
    (solimp[2]), along two power curves (solimp[4]) meeting at the midpoint (solimp[3])."""
    if s0 == s1 or s2 <= MINVAL:
        return 0.5 * (s0 + s1), 0.0
    x = (pos - margin) / s2
    sgn = 1.0
    if x < 0:
        x = -x
        sgn = -1.0
    if x >= 1 or x <= 0:
        return (s1 if x >= 1 else s0), 0.0
    if s4 == 1:
        y = x
        yp = 1.0
    elif x <= s3:
        a = 1 / _power(s3, s4 - 1)
        y = a * _power(x, s4)
        yp = s4 * a * _power(x, s4 - 1)
    else:
        b = 1 / _power(1 - s3, s4 - 1)
        y = 1 - b * _power(1 - x, s4)
        yp = s4 * b * _power(1 - x, s4 - 1)
    return s0 + y * (s1 - s0), yp * sgn * (s1 - s0) / s2


@kernel
def _power(a, b):
    # MuJoCo's power(): exact for the common exponents 1 and 2
    if b == 1:
        return a
    if b == 2:
        return a * a
    return a ** b


@kernel
def _solparams(m, d, i, timestep, refsafe):
    """(solref0, solref1, solreffriction0, solreffriction1, solimp0..4) of row i (getsolparam),
    with refsafe and the clamps; solreffriction is (0, 0) except for contacts."""
    t = d.efc_type[i]
    cid = d.efc_id[i]
    f0, f1 = 0.0, 0.0
    if t == CNSTR_CONTACT_FRICTIONLESS or t == CNSTR_CONTACT_PYRAMIDAL or t == CNSTR_CONTACT_ELLIPTIC:
        ref, imp = d.contact_solref, d.contact_solimp
        f0, f1 = d.contact_solreffriction[cid, 0], d.contact_solreffriction[cid, 1]
        # solreffriction of mixed signs is replaced by its default (0, 0) (MuJoCo warns)
        if (f0 > 0) != (f1 > 0):
            f0, f1 = 0.0, 0.0
        if refsafe and f0 > 0:
            f0 = max(f0, 2 * timestep)
    elif t == CNSTR_EQUALITY:
        ref, imp = m.eq_solref, m.eq_solimp
    elif t == CNSTR_LIMIT_JOINT:
        ref, imp = m.jnt_solref, m.jnt_solimp
    elif t == CNSTR_FRICTION_DOF:
        ref, imp = m.dof_solref, m.dof_solimp
    elif t == CNSTR_LIMIT_TENDON:
        ref, imp = m.tendon_solref_lim, m.tendon_solimp_lim
    else:
        ref, imp = m.tendon_solref_fri, m.tendon_solimp_fri
    r0, r1 = ref[cid, 0], ref[cid, 1]
    # a mixed format (one positive, one not) is replaced by the default (MuJoCo warns)
    if (r0 > 0) != (r1 > 0):
        r0, r1 = 0.02, 1.0
    if refsafe and r0 > 0:
        r0 = max(r0, 2 * timestep)
    return (r0, r1, f0, f1,
            min(MAXIMP, max(MINIMP, imp[cid, 0])), min(MAXIMP, max(MINIMP, imp[cid, 1])),
            max(0.0, imp[cid, 2]), min(MAXIMP, max(MINIMP, imp[cid, 3])), max(1.0, imp[cid, 4]))


@kernel
def _make_impedance(m, d, nefc):
    """efc_KBIP, efc_R, efc_D, and efc_diagA made consistent with R (mj_makeImpedance)."""
    timestep = m.opt_timestep[0]
    refsafe = not (m.opt_flags[OPT_DISABLEFLAGS] & DSBL_REFSAFE)
    discrete = m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE
    R, KBIP = d.efc_R, d.efc_KBIP
    i = 0
    while i < nefc:
        # the discrete integrator replaces the 2h floor on timeconst by its own rule below
        r0, r1, f0, f1, s0, s1, s2, s3, s4 = _solparams(m, d, i, timestep, refsafe and not discrete)
        t = d.efc_type[i]
        dim = 1
        pos = d.efc_pos[i]
        if t == CNSTR_CONTACT_ELLIPTIC:
            dim = d.contact_dim[d.efc_id[i]]
        elif t == CNSTR_CONTACT_PYRAMIDAL:
            dim = 2 * (d.contact_dim[d.efc_id[i]] - 1)
        elif t == CNSTR_EQUALITY:
            et = m.eq_type[d.efc_id[i]]
            if et == EQ_WELD or et == EQ_CONNECT:
                # one impedance for the block, from the norm of its position error
                dim = 6 if et == EQ_WELD else 3
                ss = 0.0
                for k in range(dim):
                    ss += d.efc_pos[i + k] * d.efc_pos[i + k]
                pos = math.sqrt(ss)
        imp, impp = impedance(s0, s1, s2, s3, s4, pos, d.efc_margin[i])
        for j in range(dim):
            R[i + j] = max(MINVAL, (1 - imp) * d.efc_diagA[i + j] / imp)
            tj = d.efc_type[i + j]
            # elliptic friction rows use solreffriction when it is given
            elliptic_friction = tj == CNSTR_CONTACT_ELLIPTIC and j > 0
            q0, q1 = r0, r1
            if elliptic_friction and (f0 != 0 or f1 != 0):
                q0, q1 = f0, f1
            if tj == CNSTR_FRICTION_DOF or tj == CNSTR_FRICTION_TENDON or elliptic_friction:
                KBIP[i + j, 0] = 0.0
            elif q0 > 0:
                KBIP[i + j, 0] = 1 / max(MINVAL, s1 * s1 * q0 * q0 * q1 * q1)
            else:
                KBIP[i + j, 0] = -q0 / max(MINVAL, s1 * s1)
            if q1 > 0:
                KBIP[i + j, 1] = 2 / max(MINVAL, s1 * q0)
            else:
                KBIP[i + j, 1] = -q1 / max(MINVAL, s1)
            KBIP[i + j, 2] = imp
            KBIP[i + j, 3] = impp
            if discrete:
                _discrete_row(KBIP, R, i + j, timestep, refsafe and q0 > 0 and tj != CNSTR_EQUALITY, q1)
        i += dim
    # frictional contacts: friction rows get R / impratio, and contact.mu is the friction of the
    # cone made circular; pyramid edges all share 2 mu^2 R (mj_makeImpedance's second pass)
    impratio = max(MINVAL, m.opt_real[OPT_IMPRATIO])
    i = d.efc_counts[COUNT_NE] + d.efc_counts[COUNT_NF]
    while i < nefc:
        t = d.efc_type[i]
        if t == CNSTR_CONTACT_PYRAMIDAL or t == CNSTR_CONTACT_ELLIPTIC:
            cid = d.efc_id[i]
            dim = d.contact_dim[cid]
            fr = d.contact_friction
            R[i + 1] = R[i] / impratio
            mu = fr[cid, 0] * math.sqrt(R[i + 1] / R[i])
            d.contact_mu[cid] = mu
            if t == CNSTR_CONTACT_ELLIPTIC:
                for j in range(1, dim - 1):
                    R[i + j + 1] = R[i + 1] * fr[cid, 0] * fr[cid, 0] / (fr[cid, j] * fr[cid, j])
                i += dim
            else:
                rpy = 2 * mu * mu * R[i]
                for j in range(2 * (dim - 1)):
                    R[i + j] = rpy
                i += 2 * (dim - 1)
        else:
            i += 1
    for i in range(nefc):
        d.efc_D[i] = 1 / R[i]
    for i in range(nefc):
        d.efc_diagA[i] = R[i] * KBIP[i, 2] / (1 - KBIP[i, 2])


@kernel
def _discrete_row(KBIP, R, i, h, floor, dampratio):
    """Row i under the discrete integrator (MuJoCo 4.0's mjINT_DISCRETE, measured on the 4.0.0
    wheel): its spring-damper acts at the end of the step, so it folds into the row's impedance
    like the smooth springs into the metric: R /= f with f = 1 + h B + h^2 K imp (the reference is
    divided by the same f, discrete_reference). refsafe (``floor``: on, a timeconst-dampratio
    solref, and a limit or contact row) limits a row to h^2 K imp <= 1, replacing K, B by those
    of timeconst = h sqrt(imp) / (dmax dampratio): K = 1 / (imp h^2), B = 2 dampratio /
    (h sqrt(imp)). Equality rows and rows without a spring (friction loss, elliptic friction
    directions) keep their solref as given."""
    k = KBIP[i, 0]
    imp = KBIP[i, 2]
    if floor and k * imp * h * h > 1:
        k = 1 / (imp * h * h)
        KBIP[i, 0] = k
        KBIP[i, 1] = 2 * dampratio / (h * math.sqrt(imp))
    R[i] /= 1 + h * KBIP[i, 1] + h * h * k * imp


@kernel
def discrete_rows_supported(m):
    """Whether kinedyn reproduces the discrete integrator's constraint solve in the metric for
    this model's options: the Newton solver on the dense constraint Jacobian, without noslip
    (metric.unsupported refuses the rest at compile time)."""
    return m.opt_flags[OPT_SOLVER] == SOL_NEWTON and not is_sparse(m) \
        and m.opt_flags[OPT_NOSLIP_ITERATIONS] == 0


@kernel
def is_sparse(m):
    """Whether MuJoCo keeps efc_J sparse (mj_isSparse): jacobian="sparse", or "auto" and nv >= 60."""
    jac = m.opt_flags[OPT_JACOBIAN]
    return jac == JAC_SPARSE or (jac == JAC_AUTO and m.nv >= 60)


@kernel
def _mark_chain(m, mark, b):
    """mark[v] += 1 for every dof of body b and its ancestors."""
    while b > 0:
        for k in range(m.body_dofnum[b]):
            mark[m.body_dofadr[b] + k] += 1.0
        b = m.body_parentid[b]


@kernel
def _row_patterns(m, d, nefc):
    """Each row's sparse pattern as MuJoCo 4.0 lays out efc_J on its sparse path (the dofs, in
    ascending order, its sums run over; structural zeros included), in scratch_efc_colind/rownnz.

    A contact's rows: the dofs of exactly one of the two bodies' chains (the common ancestors,
    whose columns cancel at the shared contact point, are left out; measured against 4.0's
    efc_J_colind on dmc-dog, dmc-dog_v2, dmc-humanoid_CMU). A connect or weld: both chains
    (mj_jacDifPair's merged chain; the anchors differ, the common columns do not cancel). Other
    rows (limits, dof friction, joint and tendon couplings): the row's nonzeros."""
    J = d.efc_J
    nv = m.nv
    colind = d.scratch_efc_colind
    rownnz = d.scratch_efc_rownnz
    mark = d.scratch_nv_a  # how many of the two chains hold each dof
    for i in range(nefc):
        t = d.efc_type[i]
        b1 = -1
        b2 = -1
        union = False
        if t == CNSTR_CONTACT_FRICTIONLESS or t == CNSTR_CONTACT_PYRAMIDAL or t == CNSTR_CONTACT_ELLIPTIC:
            g1 = d.contact_geom[d.efc_id[i], 0]
            g2 = d.contact_geom[d.efc_id[i], 1]
            if g1 >= 0 and g2 >= 0:
                b1 = m.geom_bodyid[g1]
                b2 = m.geom_bodyid[g2]
        elif t == CNSTR_EQUALITY and (m.eq_type[d.efc_id[i]] == EQ_CONNECT
                                      or m.eq_type[d.efc_id[i]] == EQ_WELD):
            _, _, _, _, _, _, b1, b2 = equality_anchors(m, d, d.efc_id[i])
            union = True
        n = 0
        if b1 >= 0:
            for v in range(nv):
                mark[v] = 0.0
            _mark_chain(m, mark, b1)
            _mark_chain(m, mark, b2)
            for v in range(nv):
                if mark[v] == 1.0 or (union and mark[v] == 2.0):
                    colind[i, n] = v
                    n += 1
        else:
            for v in range(nv):
                if J[i, v] != 0.0:
                    colind[i, n] = v
                    n += 1
        rownnz[i] = n


@kernel
def mul_j_rows(d, res, vec, nefc, sparse):
    """res[i] = J_i vec for i < nefc (mj_mulJacVec): over the row's pattern in mju_dotSparse's
    order on MuJoCo's sparse path (mju_mulMatVecSparse), else over every dof in mju_dot's
    (mju_mulMatVec)."""
    J = d.efc_J
    nv = J.shape[1]
    if sparse:
        for i in range(nefc):
            res[i] = dot_pattern(J[i], vec, d.scratch_efc_colind[i], d.scratch_efc_rownnz[i])
    else:
        for i in range(nefc):
            res[i] = dot_mj(J[i], vec, nv)


@kernel
def make_constraint_kernel(m, d):
    """Every row, its diagA, impedance and regulariser (mj_makeConstraint)."""
    counts = d.efc_counts
    for k in range(4):  # rows; the contacts (counts[4]) are the collision stage's
        counts[k] = 0
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    if flags & DSBL_CONSTRAINT:
        return
    if not (flags & DSBL_EQUALITY) and m.neq > 0:
        _equality_rows(m, d)
    if not (flags & DSBL_FRICTIONLOSS):
        _instantiate_friction(m, d)
    if not (flags & DSBL_LIMIT):
        _instantiate_limit(m, d)
    if not (flags & DSBL_CONTACT):
        _instantiate_contact(m, d)
    nefc = counts[3]
    if nefc == 0:
        return
    if is_sparse(m):
        _row_patterns(m, d, nefc)
    _diag_approx(m, d, nefc)
    _make_impedance(m, d, nefc)
    # the islands (mj_island), then the dual solvers' matrix (mj_projectConstraint when mj_isDual)
    if flags & DSBL_ISLAND:
        d.scratch_nisland[0] = 0
    else:
        make_islands(m, d)
    if m.opt_flags[OPT_SOLVER] == SOL_PGS or m.opt_flags[OPT_NOSLIP_ITERATIONS] > 0:
        project_constraint(m, d, nefc)


@kernel
def project_constraint(m, d, nefc):
    """The dual solvers' matrix AR = J M^-1 J' + diag(R) (mj_projectConstraint, dense layout).

    First the whitened Jacobian Y = J M^-1/2 = J L^-1 D^-1/2 (M = L' D L, MuJoCo's factor),
    row by row as mj_solveM2 does: y <- L^-T y over the dofs from the last to the second,
    then scaled by 1/sqrt(D). Then AR = Y Y', accumulated over dofs in order for the lower
    triangle and mirrored (mju_sqrMatTD), plus R on the diagonal (mj_makeAR). Rows in
    different islands touch disjoint dofs, so their entries are exact zeros.
    """
    nv = m.nv
    Y = d.scratch_efc_Y
    AR = d.scratch_efc_AR
    J, qLD, R = d.efc_J, d.qLD, d.efc_R
    rowadr, rownnz, colind = m.M_rowadr, m.M_rownnz, m.M_colind
    for i in range(nefc):
        for v in range(nv):
            Y[i, v] = J[i, v]
        for v in range(nv - 1, 0, -1):
            yv = Y[i, v]
            if yv != 0.0:
                start = unsigned_index(rowadr[v])
                for adr in range(start, start + unsigned_index(rownnz[v] - 1)):
                    Y[i, unsigned_index(colind[adr])] -= qLD[adr] * yv
    for v in range(nv):
        s = 1 / math.sqrt(qLD[rowadr[v] + rownnz[v] - 1])
        for i in range(nefc):
            Y[i, v] *= s
    for i in range(nefc):
        for k in range(i + 1):
            AR[i, k] = 0.0
        for v in range(nv):
            y = Y[i, v]
            if y != 0.0:
                for k in range(i + 1):
                    AR[i, k] += Y[k, v] * y
    for i in range(nefc):
        for k in range(i + 1, nefc):
            AR[i, k] = AR[k, i]
    for i in range(nefc):
        AR[i, i] += R[i]


@handle_entry
def make_constraint_entry(m, d):
    make_constraint_kernel(m, d)


# ---- reference acceleration ---------------------------------------------------------------------


@kernel
def _jac_dot_point(m, d, jdv, row, px, py, pz, body, rot):
    """(J̇_p qvel, J̇_r qvel) of world point p on body (mj_jacDot applied to qvel), as 6 values
    in jdv[row, 0:6] (translation, rotation)."""
    for k in range(6):
        jdv[row, k] = 0.0
    r = m.body_rootid[body]
    ox = px - d.subtree_com[r, 0]
    oy = py - d.subtree_com[r, 1]
    oz = pz - d.subtree_com[r, 2]
    # point velocity: linear part of cvel[body] moved to p (mju_transformSpatial, rotation 0)
    cv = d.cvel
    # lin(p) = lin(com) - (p - com) x rot   = lin + rot x (p - com)
    vx = cv[body, 3] - (oy * cv[body, 2] - oz * cv[body, 1])
    vy = cv[body, 4] - (oz * cv[body, 0] - ox * cv[body, 2])
    vz = cv[body, 5] - (ox * cv[body, 1] - oy * cv[body, 0])
    b = m.body_weldid[body]
    if m.body_dofnum[b] == 0:
        return
    i = m.body_dofadr[b] + m.body_dofnum[b] - 1
    while i >= 0:
        c0, c1, c2, c3, c4, c5 = (d.cdof_dot[i, 0], d.cdof_dot[i, 1], d.cdof_dot[i, 2],
                                  d.cdof_dot[i, 3], d.cdof_dot[i, 4], d.cdof_dot[i, 5])
        j = m.dof_jntid[i]
        jt = m.jnt_type[j]
        if jt == JNT_BALL or (jt == JNT_FREE and i >= m.jnt_dofadr[j] + 3):
            # quaternion dofs: cdof_dot from the dof's own body velocity (crossMotion)
            bb = m.dof_bodyid[i]
            w0, w1, w2, u0, u1, u2 = cv[bb, 0], cv[bb, 1], cv[bb, 2], cv[bb, 3], cv[bb, 4], cv[bb, 5]
            a0, a1, a2, l0, l1, l2 = (d.cdof[i, 0], d.cdof[i, 1], d.cdof[i, 2],
                                      d.cdof[i, 3], d.cdof[i, 4], d.cdof[i, 5])
            c0 = -w2 * a1 + w1 * a2
            c1 = w2 * a0 - w0 * a2
            c2 = -w1 * a0 + w0 * a1
            c3 = -w2 * l1 + w1 * l2 - u2 * a1 + u1 * a2
            c4 = w2 * l0 - w0 * l2 + u2 * a0 - u0 * a2
            c5 = -w1 * l0 + w0 * l1 - u1 * a0 + u0 * a1
        q = d.qvel[i]
        if rot:
            jdv[row, 3] += c0 * q
            jdv[row, 4] += c1 * q
            jdv[row, 5] += c2 * q
        a0, a1, a2 = d.cdof[i, 0], d.cdof[i, 1], d.cdof[i, 2]
        # d/dt of (cdof_lin + cdof_rot x offset): cdof_dot_rot x offset + cdof_rot x point velocity
        jdv[row, 0] += (c3 + (c1 * oz - c2 * oy) + (a1 * vz - a2 * vy)) * q
        jdv[row, 1] += (c4 + (c2 * ox - c0 * oz) + (a2 * vx - a0 * vz)) * q
        jdv[row, 2] += (c5 + (c0 * oy - c1 * ox) + (a0 * vy - a1 * vx)) * q
        i = m.dof_parentid[i]


@kernel
def _subtract_jdotv(m, d):
    """aref -= J̇ qvel on the rows of connect and weld constraints (mj_Jdotv)."""
    ne = d.efc_counts[COUNT_NE]
    jdv = d.scratch_vec  # rows 0 and 1: the two anchor points
    aref = d.efc_aref
    row = 0
    while row < ne:
        i = d.efc_id[row]
        et = m.eq_type[i]
        if et != EQ_CONNECT and et != EQ_WELD:
            row += 1
            continue
        weld = et == EQ_WELD
        p1x, p1y, p1z, p2x, p2y, p2z, b1, b2 = equality_anchors(m, d, i)
        _jac_dot_point(m, d, jdv, 0, p1x, p1y, p1z, b1, weld)
        _jac_dot_point(m, d, jdv, 1, p2x, p2y, p2z, b2, weld)
        for k in range(3):
            aref[row + k] -= jdv[0, k] - jdv[1, k]
        row += 3
        if not weld:
            continue
        # d/dt of 0.5 vec(conj(q2) * (J1r - J2r) v * q1 relpose): three product-rule terms
        ts = m.eq_data[i, 10]
        qw, qx, qy, qz, cw, cx, cy, cz = _weld_quats(m, d, i, b1, b2)
        cv = d.cvel
        dw0 = cv[b1, 0] - cv[b2, 0]
        dw1 = cv[b1, 1] - cv[b2, 1]
        dw2 = cv[b1, 2] - cv[b2, 2]
        # quaternion rates 0.5 q (0, omega) of the two frames (mju_derivQuat)
        if m.eq_objtype[i] == OBJ_BODY:
            xq = d.xquat
            f1w, f1x, f1y, f1z = xq[b1, 0], xq[b1, 1], xq[b1, 2], xq[b1, 3]
            f2w, f2x, f2y, f2z = xq[b2, 0], xq[b2, 1], xq[b2, 2], xq[b2, 3]
        else:
            f1w, f1x, f1y, f1z = qw, qx, qy, qz
            f2w, f2x, f2y, f2z = cw, -cx, -cy, -cz
        d1w, d1x, d1y, d1z = _deriv_quat(f1w, f1x, f1y, f1z, cv[b1, 0], cv[b1, 1], cv[b1, 2])
        if m.eq_objtype[i] == OBJ_BODY:
            rp = m.eq_data
            d1w, d1x, d1y, d1z = quat_product(d1w, d1x, d1y, d1z, rp[i, 6], rp[i, 7], rp[i, 8], rp[i, 9])
        d2w, d2x, d2y, d2z = _deriv_quat(f2w, f2x, f2y, f2z, cv[b2, 0], cv[b2, 1], cv[b2, 2])
        d2x, d2y, d2z = -d2x, -d2y, -d2z
        aw, ax, ay, az = quat_product(d2w, d2x, d2y, d2z, 0.0, dw0, dw1, dw2)
        t1w, t1x, t1y, t1z = quat_product(aw, ax, ay, az, qw, qx, qy, qz)
        aw, ax, ay, az = quat_product(cw, cx, cy, cz, 0.0, jdv[0, 3] - jdv[1, 3], jdv[0, 4] - jdv[1, 4],
                                      jdv[0, 5] - jdv[1, 5])
        t2w, t2x, t2y, t2z = quat_product(aw, ax, ay, az, qw, qx, qy, qz)
        aw, ax, ay, az = quat_product(cw, cx, cy, cz, 0.0, dw0, dw1, dw2)
        t3w, t3x, t3y, t3z = quat_product(aw, ax, ay, az, d1w, d1x, d1y, d1z)
        aref[row] -= 0.5 * (t1x + t2x + t3x) * ts
        aref[row + 1] -= 0.5 * (t1y + t2y + t3y) * ts
        aref[row + 2] -= 0.5 * (t1z + t2z + t3z) * ts
        row += 3


@kernel
def _deriv_quat(qw, qx, qy, qz, v0, v1, v2):
    """0.5 q (0, v) (mju_derivQuat)."""
    return (0.5 * (-v0 * qx - v1 * qy - v2 * qz),
            0.5 * (v0 * qw + v1 * qz - v2 * qy),
            0.5 * (-v0 * qz + v1 * qw + v2 * qx),
            0.5 * (v0 * qy - v1 * qx + v2 * qw))


@kernel
def reference_constraint_kernel(m, d):
    """efc_vel = J qvel and efc_aref = -B vel - K d (pos - margin) - J̇ qvel (mj_referenceConstraint)."""
    nefc = d.efc_counts[COUNT_NEFC]
    K = d.efc_KBIP
    mul_j_rows(d, d.efc_vel, d.qvel, nefc, is_sparse(m))
    for i in range(nefc):
        d.efc_aref[i] = -K[i, 1] * d.efc_vel[i] - K[i, 0] * K[i, 2] * (d.efc_pos[i] - d.efc_margin[i])
    if any_adhesive_contact(d):
        _adhesion_reference_entry(m, d)
    if d.efc_counts[COUNT_NE] > 0 and m.neq > 0:
        _jdotv_entry(m, d)
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:
        discrete_reference(m, d, nefc)


@kernel
def discrete_reference(m, d, nefc):
    """The discrete integrator's reference: the row's spring at the end of the step, r + h v,
    and the whole reference divided by the row's f = 1 + h B + h^2 K imp (_discrete_row):
    aref = (-B v - K imp (r + h v) - J̇ qvel) / f (measured on the 4.0.0 wheel)."""
    h = m.opt_timestep[0]
    K = d.efc_KBIP
    for i in range(nefc):
        kimp = K[i, 0] * K[i, 2]
        d.efc_aref[i] = (d.efc_aref[i] - h * kimp * d.efc_vel[i]) / (1 + h * K[i, 1] + h * h * kimp)


# The equality rows, their J̇ qvel, and the adhesion's reference are units of their own, compiled only
# for models with equality constraints / adhesion (``needed``; the guards above and in
# make_constraint_kernel are the same tests in compiled code).

def _has_equality(m) -> bool:
    return m.neq > 0


def has_adhesion(m) -> bool:
    return bool(np.any(m.geom_adhesion != 0.0) or np.any(m.pair_adhesion != 0.0))


@handle_entry(needed=_has_equality)
def _equality_rows(m, d):
    _instantiate_equality(m, d)


@handle_entry(needed=_has_equality)
def _jdotv_entry(m, d):
    _subtract_jdotv(m, d)


@handle_entry(needed=has_adhesion)
def _adhesion_reference_entry(m, d):
    _adhesion_reference(m, d)


@kernel
def any_adhesive_contact(d):
    """Whether a contact carries adhesion: only then is the adhesion unit bound (a contact's
    adhesion is its geoms' or its pair's)."""
    for i in range(d.efc_counts[COUNT_NCON]):
        if d.contact_adhesion[i] != 0.0:
            return True
    return False


@kernel
def _adhesion_reference(m, d):
    """Adhesive contacts: aref += R adhesion on the normal row, or spread evenly over the
    pyramid's edges (mj_adhesionRef), so compression does not depend on the adhesion."""
    pyramid = m.opt_flags[OPT_CONE] == CONE_PYRAMIDAL
    for i in range(d.efc_counts[COUNT_NCON]):
        adhesion = d.contact_adhesion[i]
        adr = d.contact_efc_address[i]
        if adhesion == 0.0 or adr < 0:
            continue
        dim = d.contact_dim[i]
        if dim == 1 or not pyramid:
            d.efc_aref[adr] += d.efc_R[adr] * adhesion
        else:
            edge = adhesion / (2 * (dim - 1))
            for j in range(2 * (dim - 1)):
                d.efc_aref[adr + j] += d.efc_R[adr + j] * edge


@handle_entry
def reference_constraint_entry(m, d):
    reference_constraint_kernel(m, d)

