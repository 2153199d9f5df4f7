"""The constraint solvers: Newton and CG in the primal, PGS in the dual (engine_solver.c).

Newton and CG minimise over accelerations a the convex cost

    cost(a) = 1/2 (a - qacc_smooth)' M (a - qacc_smooth) + sum_rows s(J_i a - aref_i)

where s is 1/2 D jar^2 for equality rows, a Huber function for friction-loss rows (linear
beyond |jar| = R frictionloss) and 1/2 D min(jar, 0)^2 for limits and contact rows; the
force of a row is -s'(jar) (``constraint_update``, MuJoCo's mj_constraintUpdate). Both run
MuJoCo's iteration exactly: the same start (``warmstart``), the same exact line search on
the piecewise-quadratic 1-D cost (``_line_search``, PrimalSearch), the same search
directions (Newton: H^-1 grad with H = M + J' D_active J, Cholesky-factored and updated by
rank-1 up/downdates as rows change state; CG: M^-1-preconditioned Hager-Zhang) and the same
stopping rules, with improvement and gradient scaled by 1/trace(M) as MuJoCo 4.0 does. So
with few iterations or a loose tolerance they stop where MuJoCo stops, not only at the optimum.
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.island import ISLAND_NITER
from kinedyn.engine.smooth_inertia import solve_ld
from kinedyn.engine.solver_pgs import dual_finish, pgs_warmstart, solve_noslip, solve_pgs
from kinedyn.engine.types import (
    CNSTRSTATE_LINEARNEG,
    CNSTRSTATE_LINEARPOS,
    CNSTRSTATE_QUADRATIC,
    CNSTRSTATE_SATISFIED,
    DSBL_ISLAND,
    DSBL_WARMSTART,
    MINVAL,
    OPT_DISABLEFLAGS,
    OPT_ITERATIONS,
    OPT_LS_ITERATIONS,
    OPT_LS_TOLERANCE,
    OPT_NOSLIP_ITERATIONS,
    OPT_SOLVER,
    OPT_TOLERANCE,
    SOL_CG,
    SOL_NEWTON,
    SOL_PGS,
)

# rows of Data.scratch_solver_nv
_MA, _MV, _GRAD, _MGRAD, _SEARCH, _GRADOLD, _MGRADOLD, _GRADDIF, _MGRADDIF, _CHOLUPD = range(10)
# rows of Data.scratch_solver_efc
_JAREF, _JV, _HD = 0, 1, 2


# ---- shared pieces ------------------------------------------------------------------------------


@kernel
def mul_m(m, d, res, r, vec, v):
    """res[r] = M vec[v], with M in its tree-sparse lower-triangle layout (mju_mulSymVecSparse)."""
    nv = m.nv
    M = d.M
    for i in range(nv):
        res[r, i] = 0.0
    for i in range(nv):
        adr = m.M_rowadr[i]
        nnz = m.M_rownnz[i]
        # diagonal, then the off-diagonal entries of row i and their transposes
        res[r, i] += M[adr + nnz - 1] * vec[v, i]
        for k in range(nnz - 1):
            j = m.M_colind[adr + k]
            res[r, i] += M[adr + k] * vec[v, j]
            res[r, j] += M[adr + k] * vec[v, i]


@kernel
def constraint_update(m, d, jar, want_cost):
    """efc_force, efc_state from jar = J a - aref, then qfrc_constraint = J' efc_force; the
    constraint cost when ``want_cost`` (mj_constraintUpdate)."""
    ne, nf, nefc = d.efc_counts[0], d.efc_counts[1], d.efc_counts[3]
    D, R, floss = d.efc_D, d.efc_R, d.efc_frictionloss
    force, state = d.efc_force, d.efc_state
    s = 0.0
    for i in range(nefc):
        force[i] = -D[i] * jar[i]
    for i in range(nefc):
        if i < ne:
            if want_cost:
                s += 0.5 * D[i] * jar[i] * jar[i]
            state[i] = CNSTRSTATE_QUADRATIC
        elif i < ne + nf:
            if jar[i] <= -R[i] * floss[i]:
                if want_cost:
                    s += -0.5 * R[i] * floss[i] * floss[i] - floss[i] * jar[i]
                force[i] = floss[i]
                state[i] = CNSTRSTATE_LINEARNEG
            elif jar[i] >= R[i] * floss[i]:
                if want_cost:
                    s += -0.5 * R[i] * floss[i] * floss[i] + floss[i] * jar[i]
                force[i] = -floss[i]
                state[i] = CNSTRSTATE_LINEARPOS
            else:
                if want_cost:
                    s += 0.5 * D[i] * jar[i] * jar[i]
                state[i] = CNSTRSTATE_QUADRATIC
        else:
            # limits, frictionless contacts and pyramid edges: one-sided
            if jar[i] >= 0:
                force[i] = 0.0
                state[i] = CNSTRSTATE_SATISFIED
            else:
                if want_cost:
                    s += 0.5 * D[i] * jar[i] * jar[i]
                state[i] = CNSTRSTATE_QUADRATIC
    _mul_jt(d, d.qfrc_constraint, d.efc_force, nefc)
    return s


@kernel
def _mul_jt(d, res, vec, nefc):
    """res = J' vec (mju_mulMatTVec)."""
    J = d.efc_J
    nv = J.shape[1]
    for v in range(nv):
        res[v] = 0.0
    for i in range(nefc):
        x = vec[i]
        if x != 0.0:
            for v in range(nv):
                res[v] += J[i, v] * x


@kernel
def _mul_j(d, res, r, vec, v0, nefc):
    """res[r, 0:nefc] = J vec[v0] (mju_mulMatVec)."""
    J = d.efc_J
    nv = J.shape[1]
    for i in range(nefc):
        s = 0.0
        for v in range(nv):
            s += J[i, v] * vec[v0, v]
        res[r, i] = s


@kernel
def _dot(a, i, b, j, n):
    s = 0.0
    for k in range(n):
        s += a[i, k] * b[j, k]
    return s


@kernel
def _trace_m(m, d):
    s = 0.0
    for i in range(m.nv):
        s += d.M[m.M_rowadr[i] + m.M_rownnz[i] - 1]
    return s


# ---- warmstart ----------------------------------------------------------------------------------


@kernel
def warmstart(m, d):
    """qacc starts at qacc_warmstart or qacc_smooth, whichever has the lower total cost
    (warmstart() in engine_forward.c); cold start (the warmstart flag off): qacc_smooth."""
    nv, nefc = m.nv, d.efc_counts[3]
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_WARMSTART:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]
        for i in range(nefc):
            d.efc_force[i] = 0.0
        return
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    for v in range(nv):
        d.qacc[v] = d.qacc_warmstart[v]
        sv[_SEARCH, v] = d.qacc_warmstart[v]
    _mul_j(d, se, _JAREF, sv, _SEARCH, nefc)
    for i in range(nefc):
        se[_JAREF, i] -= d.efc_aref[i]
    cost_warm = constraint_update(m, d, se[_JAREF], True)
    mul_m(m, d, sv, _MA, sv, _SEARCH)
    for v in range(nv):
        cost_warm += 0.5 * (sv[_MA, v] - d.qfrc_smooth[v]) * (d.qacc_warmstart[v] - d.qacc_smooth[v])
    cost_smooth = constraint_update(m, d, d.efc_b, True)
    if cost_warm > cost_smooth:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]


# ---- primal solvers (Newton, CG) ----------------------------------------------------------------


@kernel
def _update_constraint(m, d):
    """Forces, states and qfrc_constraint at the current Jaref; returns the total cost
    (constraint + Gauss) and stores the Gauss term (PrimalUpdateConstraint)."""
    nv = m.nv
    sv = d.scratch_solver_nv
    cost = constraint_update(m, d, d.scratch_solver_efc[_JAREF], True)
    gauss = 0.0
    for v in range(nv):
        gauss += 0.5 * (sv[_MA, v] - d.qfrc_smooth[v]) * (d.qacc[v] - d.qacc_smooth[v])
    d.scratch_solver_gauss[0] = gauss
    return cost + gauss


@kernel
def _update_grad(m, d):
    sv = d.scratch_solver_nv
    for v in range(m.nv):
        sv[_GRAD, v] = sv[_MA, v] - d.qfrc_smooth[v] - d.qfrc_constraint[v]


@kernel
def _update_mgrad(m, d, newton):
    """Mgrad = H^-1 grad (Newton, from the Cholesky factor) or M^-1 grad (CG)."""
    nv = m.nv
    sv = d.scratch_solver_nv
    for v in range(nv):
        sv[_MGRAD, v] = sv[_GRAD, v]
    if newton:
        _chol_solve(d.scratch_hessian, sv[_MGRAD], nv)
    else:
        solve_ld(sv[_MGRAD], d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def _chol_solve(L, x, n):
    """x <- (L L')^-1 x, L dense lower triangular (mju_cholSolve)."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= L[j, i] * x[j]
        x[i] = s / L[i, i]


@kernel
def _make_hessian(m, d):
    """L = chol(M + J' D_q J), D_q = efc_D on QUADRATIC rows (MakeHessian, FactorizeHessian)."""
    nv, nefc = m.nv, d.efc_counts[3]
    L = d.scratch_hessian
    J = d.efc_J
    Dq = d.scratch_solver_efc[_HD]
    for i in range(nefc):
        Dq[i] = d.efc_D[i] if d.efc_state[i] == CNSTRSTATE_QUADRATIC else 0.0
    for i in range(nv):
        for j in range(nv):
            L[i, j] = 0.0
    # lower triangle of J' diag(Dq) J, row by row of J (mju_sqrMatTD_impl)
    for r in range(nefc):
        if Dq[r] != 0.0:
            for i in range(nv):
                tmp = J[r, i]
                if tmp != 0.0:
                    w = tmp * Dq[r]
                    for j in range(i + 1):
                        L[i, j] += J[r, j] * w
    # + M (lower triangle of the tree-sparse layout)
    for i in range(nv):
        adr = m.M_rowadr[i]
        for k in range(m.M_rownnz[i]):
            L[i, m.M_colind[adr + k]] += d.M[adr + k]
    _chol_factor(L, nv)


@kernel
def _chol_factor(L, n):
    """In-place dense Cholesky of the lower triangle, pivots clamped at MINVAL (mju_cholFactor)."""
    rank = n
    for j in range(n):
        tmp = L[j, j]
        for k in range(j):
            tmp -= L[j, k] * L[j, k]
        deficient = tmp < MINVAL
        if deficient:
            tmp = MINVAL
            rank -= 1
        L[j, j] = math.sqrt(tmp)
        if deficient:
            for i in range(j + 1, n):
                L[i, j] = 0.0
        else:
            inv = 1 / L[j, j]
            for i in range(j + 1, n):
                s = L[i, j]
                for k in range(j):
                    s -= L[i, k] * L[j, k]
                L[i, j] = s * inv
    return rank


@kernel
def _chol_update(L, x, n, plus):
    """Rank-1 update (plus) or downdate of the factor: L L' +- x x' (mju_cholUpdate); x is
    overwritten. Returns the rank (n unless a pivot fell below MINVAL)."""
    rank = n
    for k in range(n):
        if x[k] != 0.0:
            lkk = L[k, k]
            tmp = lkk * lkk + (x[k] * x[k] if plus else -x[k] * x[k])
            if tmp < MINVAL:
                tmp = MINVAL
                rank -= 1
            r = math.sqrt(tmp)
            c = r / lkk
            cinv = 1 / c
            s = x[k] / lkk
            L[k, k] = r
            if plus:
                for i in range(k + 1, n):
                    L[i, k] = (L[i, k] + s * x[i]) * cinv
            else:
                for i in range(k + 1, n):
                    L[i, k] = (L[i, k] - s * x[i]) * cinv
            for i in range(k + 1, n):
                x[i] = c * x[i] - s * L[i, k]
    return rank


@kernel
def _hessian_incremental(m, d):
    """Up/downdate the factor for the rows that entered or left the QUADRATIC state
    (HessianIncremental); refactor from scratch when an update loses rank."""
    nv, nefc = m.nv, d.efc_counts[3]
    old = d.scratch_oldstate
    x = d.scratch_solver_nv[_CHOLUPD]
    J = d.efc_J
    for i in range(nefc):
        now_q = d.efc_state[i] == CNSTRSTATE_QUADRATIC
        was_q = old[i] == CNSTRSTATE_QUADRATIC
        if now_q != was_q:
            sd = math.sqrt(d.efc_D[i])
            for v in range(nv):
                x[v] = J[i, v] * sd
            if _chol_update(d.scratch_hessian, x, nv, now_q) < nv:
                _make_hessian(m, d)
                return


@kernel
def _prepare(m, d):
    """Coefficients of the 1-D quadratics along the search direction (PrimalPrepare):
    Gauss [.., v'(Ma - qfrc_smooth), v'Mv/2] and per row [D jaref^2/2, D jaref Jv, D Jv^2/2]."""
    nv, nefc = m.nv, d.efc_counts[3]
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    q = d.scratch_quad
    g = d.scratch_solver_gauss
    g[1] = _dot(sv, _SEARCH, sv, _MA, nv) - _dot(d.qfrc_smooth.reshape((1, nv)), 0, sv, _SEARCH, nv)
    g[2] = 0.5 * _dot(sv, _SEARCH, sv, _MV, nv)
    for i in range(nefc):
        jv = se[_JV, i]
        ja = se[_JAREF, i]
        D = d.efc_D[i]
        dj0 = D * ja
        q[i, 0] = 0.5 * (ja * dj0)
        q[i, 1] = jv * dj0
        q[i, 2] = 0.5 * (jv * D * jv)


@kernel
def _friction_cost(x, f, rf, D):
    if -rf < x and x < rf:
        return 0.5 * D * x * x
    if x <= -rf:
        return f * (-0.5 * rf - x)
    return f * (-0.5 * rf + x)


@kernel
def _friction_cost_dif(start, x, f, rf, D):
    """cost(x) - cost(start) of a friction-loss row, without cancellation in a shared zone."""
    s0 = 0 if (-rf < start and start < rf) else (-1 if start <= -rf else 1)
    s1 = 0 if (-rf < x and x < rf) else (-1 if x <= -rf else 1)
    if s0 == 0 and s1 == 0:
        return 0.5 * D * (x - start) * (x + start)
    if s0 == -1 and s1 == -1:
        return f * (start - x)
    if s0 == 1 and s1 == 1:
        return f * (x - start)
    return _friction_cost(x, f, rf, D) - _friction_cost(start, f, rf, D)


@kernel
def _eval(m, d, alpha):
    """(cost(alpha) - cost(0), d cost / d alpha, d2 cost / d alpha2) along the search direction
    (PrimalEval). Increments the evaluation counter."""
    ne, nf, nefc = d.efc_counts[0], d.efc_counts[1], d.efc_counts[3]
    se = d.scratch_solver_efc
    q = d.scratch_quad
    g = d.scratch_solver_gauss
    cost = 0.0
    d0 = 0.0
    d1 = 0.0
    t0 = 0.0
    t1 = g[1]
    t2 = g[2]
    for i in range(nefc):
        if i < ne:
            t1 += q[i, 1]
            t2 += q[i, 2]
        elif i < ne + nf:
            start = se[_JAREF, i]
            direction = se[_JV, i]
            x = start + alpha * direction
            f = d.efc_frictionloss[i]
            D = d.efc_D[i]
            rf = d.efc_R[i] * f
            cost += _friction_cost_dif(start, x, f, rf, D)
            if -rf < x and x < rf:
                d0 += D * x * direction
                d1 += D * direction * direction
            elif x <= -rf:
                d0 += -f * direction
            else:
                d0 += f * direction
        else:
            start = se[_JAREF, i]
            x = start + alpha * se[_JV, i]
            cost0 = q[i, 0] if start < 0 else 0.0
            if x < 0:
                t0 += q[i, 0] - cost0
                t1 += q[i, 1]
                t2 += q[i, 2]
            else:
                cost -= cost0
    cost += alpha * alpha * t2 + alpha * t1 + t0
    d0 += 2 * alpha * t2 + t1
    d1 += 2 * t2
    if d1 <= 0:
        d1 = MINVAL  # not convex: should not occur (MuJoCo warns)
    d.scratch_solver_counts[0] += 1
    return cost, d0, d1


@kernel
def _bracket(m, d, pa, pc, pd0, pd1, cands, next_a, next_c, next_d0, next_d1):
    """updateBracket: move the bracket end (pa, pc, pd0, pd1) to any candidate on the same side
    with a smaller slope; returns (flag, the end, and its Newton point evaluated if moved)."""
    flag = 0
    for k in range(3):
        ca, cc, c0, c1 = cands[k, 0], cands[k, 1], cands[k, 2], cands[k, 3]
        if pd0 < 0 and c0 < 0 and pd0 < c0:
            pa, pc, pd0, pd1 = ca, cc, c0, c1
            flag = 1
        elif pd0 > 0 and c0 > 0 and pd0 > c0:
            pa, pc, pd0, pd1 = ca, cc, c0, c1
            flag = 2
    if flag:
        next_a = pa - pd0 / pd1
        next_c, next_d0, next_d1 = _eval(m, d, next_a)
    return flag, pa, pc, pd0, pd1, next_a, next_c, next_d0, next_d1


@kernel
def _line_search(m, d, tolerance, ls_iterations, scale):
    """Exact line search along search (PrimalSearch); returns (alpha, improvement).

    One Newton step from 0; if the slope is not yet below the tolerance, Newton steps on one
    side until the slope changes sign, then a bracketed search over the Newton points of the
    two ends and the midpoint. alpha = 0 means no improvement (the solver stops)."""
    nv, nefc = m.nv, d.efc_counts[3]
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    d.scratch_solver_counts[0] = 0
    snorm = math.sqrt(_dot(sv, _SEARCH, sv, _SEARCH, nv))
    if snorm < MINVAL:
        return 0.0, 0.0
    gtol = tolerance * snorm / scale
    mul_m(m, d, sv, _MV, sv, _SEARCH)
    _mul_j(d, se, _JV, sv, _SEARCH, nefc)
    _prepare(m, d)
    p0c, p0d0, p0d1 = _eval(m, d, 0.0)
    p1a = 0.0 - p0d0 / p0d1
    p1c, p1d0, p1d1 = _eval(m, d, p1a)
    if abs(p1d0) < gtol and (p1a == 0 or p1c < 0):
        return p1a, -p1c
    direction = 1.0 if p1d0 < 0 else -1.0
    # one-sided search
    p2a, p2c, p2d0, p2d1 = 0.0, p0c, p0d0, p0d1
    while p1d0 * direction <= -gtol and d.scratch_solver_counts[0] < ls_iterations:
        p2a, p2c, p2d0, p2d1 = p1a, p1c, p1d0, p1d1
        p1a -= p1d0 / p1d1
        p1c, p1d0, p1d1 = _eval(m, d, p1a)
        if abs(p1d0) < gtol and p1c < 0:
            return p1a, -p1c
    if d.scratch_solver_counts[0] >= ls_iterations:
        return p1a, -p1c
    # bracketed search between p1 and p2
    n2a, n2c, n2d0, n2d1 = p1a, p1c, p1d0, p1d1
    n1a = p1a - p1d0 / p1d1
    n1c, n1d0, n1d1 = _eval(m, d, n1a)
    cands = d.scratch_ls_points
    while d.scratch_solver_counts[0] < ls_iterations:
        ma = 0.5 * (p1a + p2a)
        mc, md0, md1 = _eval(m, d, ma)
        cands[0, 0], cands[0, 1], cands[0, 2], cands[0, 3] = n1a, n1c, n1d0, n1d1
        cands[1, 0], cands[1, 1], cands[1, 2], cands[1, 3] = n2a, n2c, n2d0, n2d1
        cands[2, 0], cands[2, 1], cands[2, 2], cands[2, 3] = ma, mc, md0, md1
        best = -1
        bestcost = 0.0
        for k in range(3):
            if abs(cands[k, 2]) < gtol and (best == -1 or cands[k, 1] < bestcost):
                bestcost = cands[k, 1]
                best = k
        if best >= 0:
            return cands[best, 0], -cands[best, 1]
        b1, p1a, p1c, p1d0, p1d1, n1a, n1c, n1d0, n1d1 = _bracket(
            m, d, p1a, p1c, p1d0, p1d1, cands, n1a, n1c, n1d0, n1d1)
        b2, p2a, p2c, p2d0, p2d1, n2a, n2c, n2d0, n2d1 = _bracket(
            m, d, p2a, p2c, p2d0, p2d1, cands, n2a, n2c, n2d0, n2d1)
        if not b1 and not b2:
            return ma, -mc
    if p1c <= p2c and p1c < 0:
        return p1a, -p1c
    if p2c <= p1c and p2c < 0:
        return p2a, -p2c
    return 0.0, 0.0


@kernel
def solve_primal(m, d, maxiter, newton):
    """Newton (``newton``) or CG on the whole model, from the warmstart in d.qacc (mj_solPrimal)."""
    nv, nefc = m.nv, d.efc_counts[3]
    tol = m.opt_real[OPT_TOLERANCE]
    ls_tol = tol * m.opt_real[OPT_LS_TOLERANCE]
    ls_iter = m.opt_flags[OPT_LS_ITERATIONS]
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    mul_m(m, d, sv, _MA, d.qacc.reshape((1, nv)), 0)
    _mul_j(d, se, _JAREF, d.qacc.reshape((1, nv)), 0, nefc)
    for i in range(nefc):
        se[_JAREF, i] -= d.efc_aref[i]
    _update_constraint(m, d)
    _update_grad(m, d)
    # MuJoCo 4.0 scales improvement and gradient by 1 / trace(M)
    scale = 1.0 / _trace_m(m, d)
    _update_mgrad(m, d, False)
    gap = max(0.0, 0.5 * scale * _dot(sv, _GRAD, sv, _MGRAD, nv)) < tol
    gradient_ok = scale * math.sqrt(_dot(sv, _GRAD, sv, _GRAD, nv)) < tol
    done = gap and (not newton or gradient_ok)
    if not done and newton:
        _make_hessian(m, d)
        _update_mgrad(m, d, True)
        done = gradient_ok and max(0.0, 0.5 * scale * _dot(sv, _GRAD, sv, _MGRAD, nv)) < tol
    if not done:
        for v in range(nv):
            sv[_SEARCH, v] = -sv[_MGRAD, v]
    it = 0
    old = d.scratch_oldstate
    while not done and it < maxiter:
        alpha, ls_improvement = _line_search(m, d, ls_tol, ls_iter, scale)
        if alpha == 0:
            break
        for v in range(nv):
            d.qacc[v] += alpha * sv[_SEARCH, v]
            sv[_MA, v] += alpha * sv[_MV, v]
        for i in range(nefc):
            se[_JAREF, i] += alpha * se[_JV, i]
        if not newton:
            for v in range(nv):
                sv[_GRADOLD, v] = sv[_GRAD, v]
                sv[_MGRADOLD, v] = sv[_MGRAD, v]
        for i in range(nefc):
            old[i] = d.efc_state[i]
        _update_constraint(m, d)
        if newton:
            _hessian_incremental(m, d)
        _update_grad(m, d)
        _update_mgrad(m, d, newton)
        improvement = scale * ls_improvement
        gradient = scale * math.sqrt(_dot(sv, _GRAD, sv, _GRAD, nv))
        decrement = max(0.0, 0.5 * scale * _dot(sv, _GRAD, sv, _MGRAD, nv)) if newton else 0.0
        it += 1
        if (improvement > 0 and improvement < tol) or gradient < tol or (newton and decrement < tol):
            break
        if newton:
            for v in range(nv):
                sv[_SEARCH, v] = -sv[_MGRAD, v]
        else:
            beta = _hager_zhang(m, d)
            for v in range(nv):
                sv[_SEARCH, v] = -sv[_MGRAD, v] + beta * sv[_SEARCH, v]
    d.scratch_solver_counts[1] = it


@kernel
def _hager_zhang(m, d):
    """CG's conjugate-direction coefficient (Hager-Zhang, with MuJoCo's restart and bound)."""
    nv = m.nv
    sv = d.scratch_solver_nv
    for v in range(nv):
        sv[_GRADDIF, v] = sv[_GRAD, v] - sv[_GRADOLD, v]
        sv[_MGRADDIF, v] = sv[_MGRAD, v] - sv[_MGRADOLD, v]
    d_dot_y = _dot(sv, _SEARCH, sv, _GRADDIF, nv)
    if d_dot_y < MINVAL:
        return 0.0
    y_dot_my = _dot(sv, _GRADDIF, sv, _MGRADDIF, nv)
    y_dot_mgrad = _dot(sv, _GRADDIF, sv, _MGRAD, nv)
    d_dot_grad = _dot(sv, _SEARCH, sv, _GRAD, nv)
    beta_hz = (y_dot_mgrad - 2 * (y_dot_my / d_dot_y) * d_dot_grad) / d_dot_y
    d_norm = math.sqrt(_dot(sv, _SEARCH, sv, _SEARCH, nv))
    grad_norm = math.sqrt(_dot(sv, _GRAD, sv, _GRAD, nv))
    eta_k = -1.0 / max(MINVAL, d_norm * min(0.01, grad_norm))
    return max(eta_k, beta_hz)


# ---- the constraint stage -----------------------------------------------------------------------


@kernel
def fwd_constraint_kernel(m, d):
    """efc_b, the solver's qacc, efc_force, efc_state and qfrc_constraint (mj_fwdConstraint)."""
    nv, nefc = m.nv, d.efc_counts[3]
    for v in range(nv):
        d.qfrc_constraint[v] = 0.0
    if nefc == 0:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]
        return
    # efc_b = J qacc_smooth - aref
    J = d.efc_J
    for i in range(nefc):
        s = 0.0
        for v in range(nv):
            s += J[i, v] * d.qacc_smooth[v]
        d.efc_b[i] = s - d.efc_aref[i]
    solver = m.opt_flags[OPT_SOLVER]
    maxiter = m.opt_flags[OPT_ITERATIONS]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    noslip = m.opt_flags[OPT_NOSLIP_ITERATIONS]
    if solver == SOL_PGS:
        # warmstart() for PGS: the forces the primal assigns to qacc_warmstart, kept if their
        # dual cost is not positive (pgs_warmstart); cold: zero forces
        if flags & DSBL_WARMSTART:
            for v in range(nv):
                d.qacc[v] = d.qacc_smooth[v]
            for i in range(nefc):
                d.efc_force[i] = 0.0
        else:
            sv = d.scratch_solver_nv
            se = d.scratch_solver_efc
            for v in range(nv):
                d.qacc[v] = d.qacc_warmstart[v]
                sv[_SEARCH, v] = d.qacc_warmstart[v]
            _mul_j(d, se, _JAREF, sv, _SEARCH, nefc)
            for i in range(nefc):
                se[_JAREF, i] -= d.efc_aref[i]
            constraint_update(m, d, se[_JAREF], False)
            pgs_warmstart(m, d)
        solve_pgs(m, d, maxiter)
    else:
        warmstart(m, d)
    if solver == SOL_NEWTON or solver == SOL_CG:
        # MuJoCo 4.0 solves Newton and CG per constraint island (on by default) and copies back
        # qacc, qfrc_constraint and efc_force but not efc_state: that keeps the state the
        # warmstart's last evaluation left (at qacc_smooth), which we reproduce. (Without the
        # warmstart MuJoCo leaves efc_state unset; we report the state at the solution.)
        islands = not (flags & DSBL_ISLAND) and not (flags & DSBL_WARMSTART)
        saved = d.scratch_state_saved
        if islands:
            for i in range(nefc):
                saved[i] = d.efc_state[i]
        solve_primal(m, d, maxiter, solver == SOL_NEWTON)
        if islands:
            for i in range(nefc):
                d.efc_state[i] = saved[i]
        for s in range(nv):
            d.scratch_island[ISLAND_NITER, s] = 0
    # noslip after any solver, then the dual solvers' map back to joint space (mj_dualFinish)
    if noslip > 0:
        solve_noslip(m, d, noslip)
    if solver == SOL_PGS or noslip > 0:
        dual_finish(m, d)


@handle_entry
def fwd_constraint_entry(m, d):
    fwd_constraint_kernel(m, d)
