"""The dual solvers: PGS and noslip, and the dual finish (engine_solver.c).

PGS (projected Gauss-Seidel, MuJoCo's mj_solPGS) minimises over the row forces f

    1/2 f' AR f + f' b,    AR = J M^-1 J' + diag(R),  b = J qacc_smooth - aref  (efc_b)

subject to f free for equality rows, |f| <= frictionloss for friction-loss rows, f >= 0 for
limits, frictionless contacts and pyramid edges, and for an elliptic contact (normal N,
friction T) N >= 0 and sum (T_k / mu_k)^2 <= N^2. It works on blocks: one per scalar row, one
per elliptic contact (its dim consecutive rows). Each sweep minimises exactly over one block at
a time and projects: a scalar row along itself; an elliptic contact first along the ray of its
current force (or its normal alone when that is ~0), then over its friction with the normal
held, a small QCQP (mju_QCQP2/3/N) whose solution is put on the ellipsoid when active. The
blocks are visited in a pseudo-random order (a PCG32 generator with MuJoCo's fixed seed
shuffles the list before every sweep); before each sweep the forces are extrapolated with
Nesterov momentum and projected onto the bounds and cones, and the momentum restarts when a
sweep's correction opposes the extrapolation (O'Donoghue-Candes). A sweep whose cost
improvement, scaled by 1/trace(M), is below the tolerance ends the solve. With islands on (the
default) each island is solved on its own, with its own generator, momentum, count and
trace(M) of its dofs (MuJoCo 4.0 verified: per-island and whole-model solves stop at
different sweeps).

Noslip (mj_solNoSlip) runs after any solver when noslip_iterations > 0: Gauss-Seidel on the
friction rows only, without the regulariser (AR - diag(R)), the normal and other forces held:
friction-loss rows, each pair of opposing pyramid edges (their sum fixed), and an elliptic
contact's friction rows by the same QCQP.

Both leave efc_state as MuJoCo's dualState labels it (an elliptic contact's rows share its
cone zone), then ``dual_finish`` maps the forces to joint space: qfrc_constraint = J' f,
qacc = qacc_smooth + M^-1 qfrc_constraint.

The sums replicate mju_dot's order (four interleaved partial sums), so the row residuals
round as MuJoCo's do; given MuJoCo's rows the forces are MuJoCo 4.0's to the last bit.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import handle_entry, jit_disabled, kernel
from kinedyn.engine.constraint import is_sparse
from kinedyn.engine.island import DOF_ISLAND, ISLAND_ADR, ISLAND_NE, ISLAND_NEFC, ISLAND_NF, ISLAND_NITER
from kinedyn.engine.smooth_inertia import solve_ld
from kinedyn.engine.types import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTRSTATE_CONE,
    CNSTRSTATE_LINEARNEG,
    CNSTRSTATE_LINEARPOS,
    CNSTRSTATE_QUADRATIC,
    CNSTRSTATE_SATISFIED,
    COUNT_NEFC,
    MINVAL,
    OPT_NOSLIP_TOLERANCE,
    OPT_TOLERANCE,
    SOL_PGS,
)
from kinedyn.engine.util_linalg3 import dot_mj, dot_nonzero
from kinedyn.engine.util_solve import chol_factor, chol_solve

# rows of Data.scratch_pgs_efc
_ARINV, _PREV, _MOMENTUM = 0, 1, 2
# rows of Data.scratch_vec in an elliptic contact's update: its rows' residuals, old forces, the
# ray (then the QCQP's solution), A times the ray, the force change, the friction subproblem's
# linear term, the QCQP's scaled linear term and its second Cholesky solve
_RES, _OLD, _V, _V1, _DELTA, _BC, _QB, _QT = 0, 1, 2, 3, 4, 5, 6, 7

# PCG32 (O'Neill's pcg32, XSH-RR output): state <- state * MULT + inc (mod 2^64). Compiled, the
# uint64 product wraps mod 2^64 by itself; under NUMBA_DISABLE_JIT (NumPy warns on uint64
# overflow) the multiplication runs on 32-bit halves so that no intermediate overflows.
_MULT = 6364136223846793005
_MULT_U64 = np.uint64(_MULT)
_MULT_LO = np.uint64(_MULT & 0xFFFFFFFF)
_MULT_HI = np.uint64(_MULT >> 32)
_LO32 = np.uint64(0xFFFFFFFF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U18 = np.uint64(18)
_U27 = np.uint64(27)
_U31 = np.uint64(31)
_U32 = np.uint64(32)
_U59 = np.uint64(59)


def _lcg_step_halves(state, inc):
    """(state * MULT + (inc | 1)) mod 2^64 on 32-bit halves (pcg32's state update, plain Python)."""
    inc = inc | _U1
    s_lo = state & _LO32
    s_hi = state >> _U32
    low = s_lo * _MULT_LO  # < 2^64
    lo = (low & _LO32) + (inc & _LO32)  # < 2^33
    hi = (low >> _U32) + ((s_hi * _MULT_LO) & _LO32) + ((s_lo * _MULT_HI) & _LO32) + (inc >> _U32) \
        + (lo >> _U32)
    return ((hi & _LO32) << _U32) | (lo & _LO32)


@kernel(inline="always")
def _lcg_step_wrapping(state, inc):
    """(state * MULT + (inc | 1)) mod 2^64, compiled: the uint64 product wraps (the same bits as
    _lcg_step_halves at a third of its cost; the shuffle draws one per block and sweep)."""
    return state * _MULT_U64 + (inc | _U1)


_lcg_step = _lcg_step_halves if jit_disabled() else _lcg_step_wrapping


@kernel(inline="always")
def pcg32_next(state, inc):
    """One draw of PCG32 (MuJoCo's pcg32_next): (the new state, a 32-bit output)."""
    new = _lcg_step(state, inc)
    xorshifted = (((state >> _U18) ^ state) >> _U27) & _LO32
    rot = state >> _U59
    out = ((xorshifted >> rot) | (xorshifted << ((_U32 - rot) & _U31))) & _LO32
    return new, out


@kernel(inline="always")
def _shuffle(order, n, state, inc):
    """Fisher-Yates shuffle of order[:n] with PCG32 draws (shuffle_int); returns the state."""
    for i in range(n - 1, 0, -1):
        state, r = pcg32_next(state, inc)
        j = int(r % np.uint64(i + 1))
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp
    return state


# Inlined: PGS and noslip call it for every row of every sweep.
@kernel(inline="always")
def _row(rows, adr, c, listed):
    """Global row of list position c: the island's list (map_iefc2efc) or c itself."""
    return rows[adr + c] if listed else c


@kernel
def _scaled_norm(f, i0, fr, cid, n):
    """|t| with t_k = f[i0+k] / fr[cid, k], k < n <= 5, summed in mju_dot's order (mju_norm)."""
    t0 = f[i0] / fr[cid, 0]
    t1 = f[i0 + 1] / fr[cid, 1] if n > 1 else 0.0
    t2 = f[i0 + 2] / fr[cid, 2] if n > 2 else 0.0
    if n == 1:
        s = t0 * t0
    elif n == 2:
        s = t0 * t0 + t1 * t1
    elif n == 3:
        s = t0 * t0 + t1 * t1 + t2 * t2
    else:
        t3 = f[i0 + 3] / fr[cid, 3]
        s = (t0 * t0 + t2 * t2) + (t1 * t1 + t3 * t3)
        if n == 5:
            t4 = f[i0 + 4] / fr[cid, 4]
            s += t4 * t4
    return np.sqrt(s)


@kernel
def _dual_state(d, ne, nf, n, adr, listed):
    """efc_state of the listed rows from their forces (dualState). Friction-loss rows are
    labelled opposite to the primal: LINEARPOS at the lower bound -frictionloss, LINEARNEG at
    the upper; limits, frictionless and pyramidal rows are QUADRATIC when pushing (f > 0),
    SATISFIED otherwise; an elliptic contact's rows all take its cone zone, in the cone
    scaled to a circular one: SATISFIED inside (mu N >= |T|), QUADRATIC in the dual cone's
    opposite (N + mu |T| <= 0), CONE between."""
    rows = d.scratch_efc_island[1]
    force = d.efc_force
    floss = d.efc_frictionloss
    c = 0
    while c < n:
        i = _row(rows, adr, c, listed)
        if c < ne:
            d.efc_state[i] = CNSTRSTATE_QUADRATIC
        elif c < ne + nf:
            if force[i] <= -floss[i]:
                d.efc_state[i] = CNSTRSTATE_LINEARPOS
            elif force[i] >= floss[i]:
                d.efc_state[i] = CNSTRSTATE_LINEARNEG
            else:
                d.efc_state[i] = CNSTRSTATE_QUADRATIC
        elif d.efc_type[i] != CNSTR_CONTACT_ELLIPTIC:
            d.efc_state[i] = CNSTRSTATE_QUADRATIC if force[i] > 0 else CNSTRSTATE_SATISFIED
        else:
            cid = d.efc_id[i]
            dim = d.contact_dim[cid]
            mu = d.contact_mu[cid]
            normal = force[i] / mu
            tangent = _scaled_norm(force, i + 1, d.contact_friction, cid, dim - 1)
            if mu * normal >= tangent:
                zone = CNSTRSTATE_SATISFIED
            elif normal + mu * tangent <= 0:
                zone = CNSTRSTATE_QUADRATIC
            else:
                zone = CNSTRSTATE_CONE
            # the block's rows are consecutive in efc (an island lists them in order)
            for j in range(dim):
                d.efc_state[i + j] = zone
            c += dim - 1
        c += 1


@kernel
def _island_scale(m, d, island, listed):
    """1/trace(M) over the island's dofs, or over all dofs when solved as one block (MuJoCo
    4.0 scales the dual solvers' improvement so; 3.12's source used 1/(meaninertia nv))."""
    tr = 0.0
    dof_island = d.scratch_tree[DOF_ISLAND]
    for v in range(m.nv):
        if not listed or dof_island[v] == island:
            tr += d.M[m.M_rowadr[v] + m.M_rownnz[v] - 1]
    return 1 / tr


# ---- warmstart and finish -----------------------------------------------------------------------


@kernel
def pgs_warmstart(m, d):
    """Keep the warmstart forces in efc_force (the primal forces at qacc_warmstart) only if
    their dual cost f'b + 1/2 f'AR f is not positive; else start from zero (warmstart()'s PGS
    branch in engine_forward.c)."""
    nefc = d.efc_counts[COUNT_NEFC]
    f = d.efc_force
    AR = d.scratch_efc_AR
    arf = d.scratch_pgs_efc[_MOMENTUM]
    for i in range(nefc):
        arf[i] = dot_mj(AR[i], f, nefc)
    cost = dot_mj(f, d.efc_b, nefc)
    cost += 0.5 * dot_mj(f, arf, nefc)
    if cost > 0:
        for i in range(nefc):
            f[i] = 0.0
        for v in range(m.nv):
            d.qfrc_constraint[v] = 0.0


@handle_entry(needed=lambda m: m.opt.solver == SOL_PGS or m.opt.noslip_iterations > 0)
def dual_finish(m, d):
    """qfrc_constraint = J' efc_force, qacc = qacc_smooth + M^-1 qfrc_constraint (mj_dualFinish)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    J = d.efc_J
    res = d.qfrc_constraint
    for v in range(nv):
        res[v] = 0.0
    for i in range(nefc):
        x = d.efc_force[i]
        if x != 0.0:
            for v in range(nv):
                res[v] += J[i, v] * x
    for v in range(nv):
        d.qacc[v] = res[v]
    solve_ld(d.qacc, d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)
    for v in range(nv):
        d.qacc[v] += d.qacc_smooth[v]


# ---- elliptic cones -----------------------------------------------------------------------------


@kernel
def _qcqp2(res, ain, off, bin_, fr, cid, r):
    """min 1/2 x'Ax + x'b subject to sum (x_k / fr_k)^2 <= r^2 in two dimensions, by Newton
    on the multiplier of the scaled problem (mju_QCQP2); True when the constraint is active."""
    d0 = fr[cid, 0]
    d1 = fr[cid, 1]
    b1 = bin_[0] * d0
    b2 = bin_[1] * d1
    a11 = ain[off + 0, off + 0] * d0 * d0
    a22 = ain[off + 1, off + 1] * d1 * d1
    a12 = ain[off + 0, off + 1] * d0 * d1
    la = 0.0
    v1 = 0.0
    v2 = 0.0
    for _ in range(20):
        det = (a11 + la) * (a22 + la) - a12 * a12
        if det < 1e-10:
            res[0] = 0.0
            res[1] = 0.0
            return False
        detinv = 1 / det
        p11 = (a22 + la) * detinv
        p22 = (a11 + la) * detinv
        p12 = -a12 * detinv
        v1 = -p11 * b1 - p12 * b2
        v2 = -p12 * b1 - p22 * b2
        val = v1 * v1 + v2 * v2 - r * r
        if val < 1e-10:
            break
        deriv = -2.0 * (p11 * v1 * v1 + 2.0 * p12 * v1 * v2 + p22 * v2 * v2)
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    res[0] = v1 * d0
    res[1] = v2 * d1
    return la != 0


@kernel
def _qcqp3(res, ain, off, bin_, fr, cid, r):
    """The three-dimensional QCQP (mju_QCQP3), inverse by cofactors."""
    d0 = fr[cid, 0]
    d1 = fr[cid, 1]
    d2 = fr[cid, 2]
    b1 = bin_[0] * d0
    b2 = bin_[1] * d1
    b3 = bin_[2] * d2
    a11 = ain[off + 0, off + 0] * d0 * d0
    a22 = ain[off + 1, off + 1] * d1 * d1
    a33 = ain[off + 2, off + 2] * d2 * d2
    a12 = ain[off + 0, off + 1] * d0 * d1
    a13 = ain[off + 0, off + 2] * d0 * d2
    a23 = ain[off + 1, off + 2] * d1 * d2
    la = 0.0
    v1 = 0.0
    v2 = 0.0
    v3 = 0.0
    for _ in range(20):
        p11 = (a22 + la) * (a33 + la) - a23 * a23
        p22 = (a11 + la) * (a33 + la) - a13 * a13
        p33 = (a11 + la) * (a22 + la) - a12 * a12
        p12 = a13 * a23 - a12 * (a33 + la)
        p13 = a12 * a23 - a13 * (a22 + la)
        p23 = a12 * a13 - a23 * (a11 + la)
        det = (a11 + la) * p11 + a12 * p12 + a13 * p13
        if det < 1e-10:
            res[0] = 0.0
            res[1] = 0.0
            res[2] = 0.0
            return False
        detinv = 1 / det
        p11 *= detinv
        p22 *= detinv
        p33 *= detinv
        p12 *= detinv
        p13 *= detinv
        p23 *= detinv
        v1 = -p11 * b1 - p12 * b2 - p13 * b3
        v2 = -p12 * b1 - p22 * b2 - p23 * b3
        v3 = -p13 * b1 - p23 * b2 - p33 * b3
        val = v1 * v1 + v2 * v2 + v3 * v3 - r * r
        if val < 1e-10:
            break
        deriv = -2.0 * (p11 * v1 * v1 + p22 * v2 * v2 + p33 * v3 * v3) \
            - 4.0 * (p12 * v1 * v2 + p13 * v1 * v3 + p23 * v2 * v3)
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    res[0] = v1 * d0
    res[1] = v2 * d1
    res[2] = v3 * d2
    return la != 0


@kernel
def _qcqpn(res, ain, off, bin_, fr, cid, r, n, ala, b, tmp):
    """The n-dimensional QCQP (mju_QCQP, n <= 5), by Cholesky solves; ala (n x n), b, tmp (n)
    are work arrays (the scaled A is rebuilt in ala every Newton step, with the same bits)."""
    for i in range(n):
        b[i] = bin_[i] * fr[cid, i]
    la = 0.0
    for _ in range(20):
        for i in range(n):
            for j in range(n):
                ala[i, j] = ain[off + i, off + j] * fr[cid, i] * fr[cid, j]
            ala[i, i] += la
        if chol_factor(ala, n, 1e-10) < n:
            for i in range(n):
                res[i] = 0.0
            return False
        chol_solve(res, ala, b, n)
        for i in range(n):
            res[i] = -res[i]
        val = dot_mj(res, res, n) - r * r
        if val < 1e-10:
            break
        chol_solve(tmp, ala, res, n)
        deriv = -2.0 * dot_mj(res, tmp, n)
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    for i in range(n):
        res[i] = res[i] * fr[cid, i]
    return la != 0


@kernel
def _project_ellipsoid(f, i0, normal, fr, cid, n, feasible):
    """Scale the friction forces f[i0:i0+n] onto the ellipsoid sum (f_k / fr_k)^2 = normal^2,
    or, when feasible, only down onto it from outside (projectEllipsoid)."""
    s = 0.0
    for j in range(n):
        s += f[i0 + j] * f[i0 + j] / (fr[cid, j] * fr[cid, j])
    normal2 = normal * normal
    if not feasible or s > normal2:
        scl = np.sqrt(normal2 / max(MINVAL, s))
        for j in range(n):
            f[i0 + j] *= scl


@kernel
def _project_cone(force, i, dim, fr, cid):
    """An elliptic contact's forces onto its cone: no force when pulling, else the friction
    scaled into the ellipsoid (projectCone)."""
    if force[i] < 0:
        for j in range(dim):
            force[i + j] = 0.0
    else:
        _project_ellipsoid(force, i + 1, force[i], fr, cid, dim - 1, True)


@kernel
def _solve_friction(force, i, dim, ac, off, bc, fr, cid, w, ala):
    """The friction forces force[i+1:i+dim] minimising 1/2 f'Ac f + f'bc in the ellipsoid of
    the normal force force[i], put exactly on it when active (solveQCQP); Ac is
    ac[off:off+dim-1, off:off+dim-1]; w: the rows of scratch_vec (_V, _QB, _QT used), ala a
    5x5 work matrix."""
    n = dim - 1
    v = w[_V]
    if dim == 3:
        active = _qcqp2(v, ac, off, bc, fr, cid, force[i])
    elif dim == 4:
        active = _qcqp3(v, ac, off, bc, fr, cid, force[i])
    else:
        active = _qcqpn(v, ac, off, bc, fr, cid, force[i], n, ala, w[_QB], w[_QT])
    if active:
        _project_ellipsoid(v, 0, force[i], fr, cid, n, False)
    for j in range(n):
        force[i + 1 + j] = v[j]


@kernel
def _cost_change(a, force, i0, old, res, n, delta):
    """The cost change of the block force[i0:i0+n] from old, 1/2 d'A d + d'res; a clear
    increase (round-off) restores old and counts as none (costChange, n > 1)."""
    for j in range(n):
        delta[j] = force[i0 + j] - old[j]
    quad = 0.0
    for j in range(n):
        quad += delta[j] * dot_mj(a[j], delta, n)
    change = 0.5 * quad + dot_mj(delta, res, n)
    if change > 1e-10:
        for j in range(n):
            force[i0 + j] = old[j]
        change = 0.0
    return change


# ---- PGS ----------------------------------------------------------------------------------------


# Inlined, on arrays _pgs reads out of the handle once: it runs for every block of every sweep.
@kernel(inline="always")
def _block_dim(efc_type, efc_id, contact_dim, i):
    """Rows of the block starting at row i: an elliptic contact's dim, else 1."""
    if efc_type[i] == CNSTR_CONTACT_ELLIPTIC:
        return contact_dim[efc_id[i]]
    return 1


@kernel
def _pgs_elliptic(d, i, dim, arinv_c):
    """One elliptic contact's update in a PGS sweep (the ellipse branch of solPGS's sweep),
    from its rows' residuals in scratch_vec[_RES]: the normal force alone when it is ~0, else
    a step along the ray of the current force (the normal kept >= 0); then the friction forces
    by the QCQP in the new normal's ellipsoid, the normal held. Returns the cost change."""
    force = d.efc_force
    AR = d.scratch_efc_AR
    fr = d.contact_friction
    cid = d.efc_id[i]
    w = d.scratch_vec
    res = w[_RES]
    old = w[_OLD]
    v = w[_V]
    v1 = w[_V1]
    bc = w[_BC]
    athis = d.scratch_cone[0]
    n = dim - 1
    for r in range(dim):
        old[r] = force[i + r]
        for k in range(dim):
            athis[r, k] = AR[i + r, i + k]
    if force[i] < MINVAL:
        force[i] -= res[0] * arinv_c
        if force[i] < 0:
            force[i] = 0.0
        for j in range(1, dim):
            force[i + j] = 0.0
    else:
        for j in range(dim):
            v[j] = force[i + j]
        for r in range(dim):
            v1[r] = dot_mj(athis[r], v, dim)
        denom = dot_mj(v, v1, dim)
        if denom >= MINVAL:
            x = -dot_mj(v, res, dim) / denom
            if force[i] + x * v[0] < 0:
                x = -v[0] / force[i]
            for j in range(dim):
                force[i + j] += x * v[j]
    # friction subproblem, Ac = the friction rows' block: bc = its residual at the new normal
    # and zero friction
    oldt = old[1:]
    for j in range(n):
        bc[j] = res[j + 1]
        bc[j] -= dot_mj(athis[j + 1, 1:], oldt, n)
        bc[j] += athis[j + 1, 0] * (force[i] - old[0])
    if force[i] < MINVAL:
        for j in range(n):
            force[i + 1 + j] = 0.0
    else:
        _solve_friction(force, i, dim, athis, 1, bc, fr, cid, w, d.scratch_cone[1])
    return _cost_change(athis, force, i, old, res, dim, w[_DELTA])


@kernel
def _pgs(m, d, island, ne, nf, n, adr, listed, maxiter):
    """PGS over the n listed rows (solPGS); returns the sweeps run. The arrays the sweeps read
    are taken out of the handle once, before them."""
    nefc = d.efc_counts[COUNT_NEFC]
    rows = d.scratch_efc_island[1]
    force = d.efc_force
    efc_b = d.efc_b
    efc_type, efc_id, contact_dim = d.efc_type, d.efc_id, d.contact_dim
    floss = d.efc_frictionloss
    AR = d.scratch_efc_AR
    fr = d.contact_friction
    arinv = d.scratch_pgs_efc[_ARINV]
    prev = d.scratch_pgs_efc[_PREV]
    momentum = d.scratch_pgs_efc[_MOMENTUM]
    order = d.scratch_pgs_block
    tol = m.opt_real[OPT_TOLERANCE]
    scale = _island_scale(m, d, island, listed)
    res = d.scratch_vec[_RES]
    for c in range(n):
        i = _row(rows, adr, c, listed)
        arinv[c] = 1 / AR[i, i]
        prev[c] = force[i]
    # the blocks, by their first list position: one per row, one per elliptic contact
    nblock = 0
    c = 0
    while c < n:
        order[nblock] = c
        nblock += 1
        c += _block_dim(efc_type, efc_id, contact_dim, _row(rows, adr, c, listed))
    # PCG32 with MuJoCo's fixed seed: state 0, increment 1, one draw discarded
    inc = _U1
    state, _ = pcg32_next(_U0, inc)
    it = 0
    k = 0  # Nesterov counter, reset by a restart
    while it < maxiter:
        # Nesterov extrapolation f += beta (f - f_prev), then projection onto the bounds/cones
        beta = (k - 1) / (k + 2) if it > 0 else 0.0
        if beta > 0:
            for c in range(n):
                i = _row(rows, adr, c, listed)
                saved = force[i]
                force[i] += beta * (force[i] - prev[c])
                prev[c] = saved
            for c in range(ne, ne + nf):
                i = _row(rows, adr, c, listed)
                if force[i] < -floss[i]:
                    force[i] = -floss[i]
                elif force[i] > floss[i]:
                    force[i] = floss[i]
            c = ne + nf
            while c < n:
                i = _row(rows, adr, c, listed)
                dim = _block_dim(efc_type, efc_id, contact_dim, i)
                if dim > 1:
                    _project_cone(force, i, dim, fr, efc_id[i])
                elif force[i] < 0:
                    force[i] = 0.0
                c += dim
        else:
            for c in range(n):
                prev[c] = force[_row(rows, adr, c, listed)]
        for c in range(n):
            momentum[c] = force[_row(rows, adr, c, listed)]
        improvement = 0.0
        state = _shuffle(order, nblock, state, inc)
        for b in range(nblock):
            c = order[b]
            i = _row(rows, adr, c, listed)
            dim = _block_dim(efc_type, efc_id, contact_dim, i)
            if dim > 1:
                for j in range(dim):
                    res[j] = efc_b[i + j] + dot_mj(AR[i + j], force, nefc)
                improvement -= _pgs_elliptic(d, i, dim, arinv[c])
                continue
            r0 = efc_b[i] + dot_mj(AR[i], force, nefc)
            f0 = force[i]
            # exact minimum along the row, then the row's bounds
            force[i] -= r0 * arinv[c]
            if c >= ne and c < ne + nf:
                if force[i] < -floss[i]:
                    force[i] = -floss[i]
                elif force[i] > floss[i]:
                    force[i] = floss[i]
            elif c >= ne + nf:
                if force[i] < 0:
                    force[i] = 0.0
            # cost change; a clear increase (round-off in the projection) is undone (costChange)
            a = 1 / arinv[c]
            df = force[i] - f0
            change = 0.5 * df * df * a + df * r0
            if change > 1e-10:
                force[i] = f0
                change = 0.0
            improvement -= change
        improvement *= scale
        # gradient restart: the sweep's correction opposes the extrapolation
        restart = False
        if it > 0:
            dot = 0.0
            for c in range(n):
                fc = force[_row(rows, adr, c, listed)]
                dot += (fc - momentum[c]) * (momentum[c] - prev[c])
            restart = dot < 0
        k = 0 if restart else k + 1
        it += 1
        if improvement < tol:
            break
    # the rows' labels (dualState) from the final forces, once: no sweep reads efc_state, so
    # labelling after every sweep left the same labels as this (with maxiter 0: the starting
    # forces' labels)
    _dual_state(d, ne, nf, n, adr, listed)
    return it


@kernel
def solve_pgs(m, d, maxiter):
    """PGS on each island (mj_solPGS_island), or on all rows when islands are off (mj_solPGS),
    from the forces in efc_force; iterations per island in scratch_island[ISLAND_NITER]."""
    nisland = d.scratch_nisland[0]
    isl = d.scratch_island
    if nisland > 0:
        for s in range(nisland):
            isl[ISLAND_NITER, s] = _pgs(m, d, s, isl[ISLAND_NE, s], isl[ISLAND_NF, s], isl[ISLAND_NEFC, s],
                                        isl[ISLAND_ADR, s], True, maxiter)
    else:
        counts = d.efc_counts
        isl[ISLAND_NITER, 0] = _pgs(m, d, 0, counts[0], counts[1], counts[3], 0, False, maxiter)


# ---- noslip -------------------------------------------------------------------------------------


@kernel(inline="always")
def _ar_residual(d, i, nefc, sparse):
    """efc_b[i] + AR_i force (residual() in engine_solver.c): on MuJoCo's sparse path the sum
    runs over the row's pattern of the sparse efc_AR (mju_dotSparse), else over every row
    (mju_dot)."""
    if sparse:
        return d.efc_b[i] + dot_nonzero(d.scratch_efc_AR[i], d.efc_force, nefc)
    return d.efc_b[i] + dot_mj(d.scratch_efc_AR[i], d.efc_force, nefc)


@kernel
def _noslip_block(d, i0, n, ac, sparse):
    """The residuals (scratch_vec[_RES]) and old forces (scratch_vec[_OLD]) of rows i0..i0+n-1
    without the regulariser, ac their block of AR - diag(R), the diagonal at least 1e-10, and
    bc (scratch_vec[_BC]) the residual less the block's own forces (noslip's residual,
    extractBlock and bc)."""
    nefc = d.efc_counts[COUNT_NEFC]
    force = d.efc_force
    AR = d.scratch_efc_AR
    R = d.efc_R
    w = d.scratch_vec
    res = w[_RES]
    old = w[_OLD]
    bc = w[_BC]
    for j in range(n):
        res[j] = _ar_residual(d, i0 + j, nefc, sparse)
    for j in range(n):
        res[j] -= R[i0 + j] * force[i0 + j]
        old[j] = force[i0 + j]
    for j in range(n):
        for k in range(n):
            ac[j, k] = AR[i0 + j, i0 + k]
    for j in range(n):
        ac[j, j] -= R[i0 + j]
        ac[j, j] = max(1e-10, ac[j, j])
    for j in range(n):
        bc[j] = res[j]
        bc[j] -= dot_mj(ac[j], old, n)


@kernel
def _noslip_edges(d, j, sparse):
    """Noslip on the opposing pyramid edges j, j+1 of a contact: their sum (the normal force)
    held, the split minimising the cost over [0, sum]; returns the cost change."""
    force = d.efc_force
    w = d.scratch_vec
    ac = d.scratch_cone[0]
    _noslip_block(d, j, 2, ac, sparse)
    bc = w[_BC]
    mid = 0.5 * (force[j] + force[j + 1])
    k1 = ac[0, 0] + ac[1, 1] - ac[0, 1] - ac[1, 0]
    k0 = mid * (ac[0, 0] - ac[1, 1]) + bc[0] - bc[1]
    if k1 < MINVAL:
        force[j] = mid
        force[j + 1] = mid
    else:
        y = -k0 / k1
        if y < -mid:
            force[j] = 0.0
            force[j + 1] = 2 * mid
        elif y > mid:
            force[j] = 2 * mid
            force[j + 1] = 0.0
        else:
            force[j] = mid + y
            force[j + 1] = mid - y
    return _cost_change(ac, force, j, w[_OLD], w[_RES], 2, w[_DELTA])


@kernel
def _noslip_elliptic(d, i, dim, sparse):
    """Noslip on an elliptic contact's friction rows: the QCQP in the ellipsoid of the held
    normal force (none when the normal is ~0); returns the cost change."""
    force = d.efc_force
    w = d.scratch_vec
    ac = d.scratch_cone[0]
    n = dim - 1
    _noslip_block(d, i + 1, n, ac, sparse)
    if force[i] < MINVAL:
        for j in range(n):
            force[i + 1 + j] = 0.0
    else:
        _solve_friction(force, i, dim, ac, 0, w[_BC], d.contact_friction, d.efc_id[i], w, d.scratch_cone[1])
    return _cost_change(ac, force, i + 1, w[_OLD], w[_RES], n, w[_DELTA])


@kernel
def _noslip(m, d, island, ne, nf, n, adr, listed, maxiter, sparse):
    """Noslip over the n listed rows (solNoSlip); returns the sweeps run."""
    nefc = d.efc_counts[COUNT_NEFC]
    rows = d.scratch_efc_island[1]
    force = d.efc_force
    floss = d.efc_frictionloss
    R = d.efc_R
    AR = d.scratch_efc_AR
    arinv = d.scratch_pgs_efc[_ARINV]
    tol = m.opt_real[OPT_NOSLIP_TOLERANCE]
    scale = _island_scale(m, d, island, listed)
    # 1 / diag(A) without the regulariser, clamped
    for c in range(n):
        i = _row(rows, adr, c, listed)
        arinv[c] = 1 / max(MINVAL, AR[i, i] - R[i])
    _dual_state(d, ne, nf, n, adr, listed)
    it = 0
    while it < maxiter:
        improvement = 0.0
        # the first sweep also gains the regulariser's cost, which noslip drops
        if it == 0:
            for c in range(n):
                i = _row(rows, adr, c, listed)
                improvement += 0.5 * force[i] * force[i] * R[i]
        # dry friction (friction-loss rows), in list order
        for c in range(ne, ne + nf):
            i = _row(rows, adr, c, listed)
            res = _ar_residual(d, i, nefc, sparse) - R[i] * force[i]
            old = force[i]
            force[i] -= res * arinv[c]
            if force[i] < -floss[i]:
                force[i] = -floss[i]
            elif force[i] > floss[i]:
                force[i] = floss[i]
            delta = force[i] - old
            improvement -= 0.5 * delta * delta / arinv[c] + delta * res
        # contact friction, the normal forces held: each pair of opposing pyramid edges, or an
        # elliptic contact's friction rows (limits and frictionless contacts are skipped)
        c = ne + nf
        while c < n:
            i = _row(rows, adr, c, listed)
            t = d.efc_type[i]
            if t == CNSTR_CONTACT_PYRAMIDAL:
                dim = d.contact_dim[d.efc_id[i]]
                for j in range(i, i + 2 * (dim - 1), 2):
                    improvement -= _noslip_edges(d, j, sparse)
                c += 2 * (dim - 1)
            elif t == CNSTR_CONTACT_ELLIPTIC:
                dim = d.contact_dim[d.efc_id[i]]
                improvement -= _noslip_elliptic(d, i, dim, sparse)
                c += dim
            else:
                c += 1
        _dual_state(d, ne, nf, n, adr, listed)
        improvement *= scale
        it += 1
        if improvement < tol:
            break
    return it


@handle_entry(args="int64", needed=lambda m: m.opt.noslip_iterations > 0)
def solve_noslip(m, d, maxiter):
    """Noslip on each island (mj_solNoSlip_island) or on all rows (mj_solNoSlip); its sweeps are
    added to scratch_island[ISLAND_NITER] as MuJoCo adds them to solver_niter."""
    nisland = d.scratch_nisland[0]
    isl = d.scratch_island
    sparse = is_sparse(m)
    if nisland > 0:
        for s in range(nisland):
            isl[ISLAND_NITER, s] += _noslip(m, d, s, isl[ISLAND_NE, s], isl[ISLAND_NF, s],
                                            isl[ISLAND_NEFC, s], isl[ISLAND_ADR, s], True, maxiter, sparse)
    else:
        counts = d.efc_counts
        isl[ISLAND_NITER, 0] += _noslip(m, d, 0, counts[0], counts[1], counts[3], 0, False, maxiter,
                                        sparse)
