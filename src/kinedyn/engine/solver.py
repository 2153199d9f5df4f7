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
from kinedyn.engine import solver_sparse
from kinedyn.engine.constraint import discrete_rows_supported, is_sparse, mul_j_rows
from kinedyn.engine.island import DOF_ISLAND, ISLAND_ADR, ISLAND_NEFC, ISLAND_NITER
from kinedyn.engine.metric import (
    FORCE,
    add_rank1_all,
    add_rank1_hessian,
    add_rank1_product,
    discrete_free_bodies_entry,
    has_rank1,
    is_discrete,
    pick,
    solve_backbone,
)
from kinedyn.engine.smooth_inertia import mul_m_kernel, solve_ld
from kinedyn.engine.solver_pgs import dual_finish, pgs_warmstart, solve_noslip, solve_pgs
from kinedyn.engine.types import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTRSTATE_CONE,
    CNSTRSTATE_LINEARNEG,
    CNSTRSTATE_LINEARPOS,
    CNSTRSTATE_QUADRATIC,
    CNSTRSTATE_SATISFIED,
    CONE_ELLIPTIC,
    COUNT_NE,
    COUNT_NEFC,
    COUNT_NF,
    DSBL_ISLAND,
    DSBL_WARMSTART,
    INT_DISCRETE,
    MINVAL,
    OPT_CONE,
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    OPT_ITERATIONS,
    OPT_LS_ITERATIONS,
    OPT_LS_TOLERANCE,
    OPT_NOSLIP_ITERATIONS,
    OPT_SOLVER,
    OPT_TOLERANCE,
    SOL_CG,
    SOL_NEWTON,
    SOL_PGS,
    SOLVER_CONES,
    SOLVER_DOWNDATES,
    SOLVER_ITERATIONS,
    SOLVER_LS_EVALS,
)
from kinedyn.engine.util_linalg3 import dot_mj, dot_pattern
from kinedyn.engine.util_solve import chol_factor, chol_solve
from kinedyn.engine.util_spatial import unsigned_index

# MuJoCo 4.0's sparse Newton refactors once this many rows have left QUADRATIC since its factor
_MAX_DOWNDATES = 32

# rows of Data.scratch_solver_nv
_MA, _MV, _GRAD, _MGRAD, _SEARCH, _GRADOLD, _MGRADOLD, _GRADDIF, _MGRADDIF, _CHOLUPD = range(10)
# rows of Data.scratch_solver_efc
_JAREF, _JV, _HD = 0, 1, 2
# where warmstart left qacc (what solve_primal can reuse when its island is the whole model)
_FROM_NOTHING, _FROM_WARM, _FROM_SMOOTH = 0, 1, 2


# ---- shared pieces ------------------------------------------------------------------------------


@kernel
def constraint_update(m, d, jar, want_cost, cone_hessian=False):
    """efc_force, efc_state from jar = J a - aref, then qfrc_constraint = J' efc_force; the
    constraint cost when ``want_cost`` and the cone Hessians of elliptic contacts in the
    middle zone when ``cone_hessian`` (mj_constraintUpdate)."""
    nefc = d.efc_counts[COUNT_NEFC]
    s = _rows_update(d, jar, nefc, want_cost, cone_hessian)
    _mul_jt(d, d.qfrc_constraint, d.efc_force, nefc)
    return s


@kernel
def _rows_update(d, jar, nefc, want_cost, cone_hessian):
    """constraint_update without qfrc_constraint: forces, states and the cost of every row."""
    s = 0.0
    for i in range(nefc):
        s += _row_update(d, jar, i, want_cost, cone_hessian)
    return s


@kernel
def island_constraint_update(m, d, jar, rows, want_cost, cone_hessian):
    """constraint_update on the rows of one island (without qfrc_constraint)."""
    s = 0.0
    for b in range(rows.shape[0]):
        s += _row_update(d, jar, rows[b], want_cost, cone_hessian)
    return s


@kernel(inline="always")
def _row_update(d, jar, i, want_cost, cone_hessian):
    """Force and state of row i (for an elliptic contact: of all its rows, at its first row);
    returns its cost. Equality rows are quadratic, friction-loss rows Huber (linear beyond
    R frictionloss), limits and contact edges one-sided."""
    ne, nf = d.efc_counts[COUNT_NE], d.efc_counts[COUNT_NF]
    D, R, floss = d.efc_D, d.efc_R, d.efc_frictionloss
    force, state = d.efc_force, d.efc_state
    s = 0.0
    if i < ne:
        force[i] = -D[i] * jar[i]
        if want_cost:
            s = 0.5 * D[i] * jar[i] * jar[i]
        state[i] = CNSTRSTATE_QUADRATIC
    elif i < ne + nf:
        if jar[i] <= -R[i] * floss[i]:
            if want_cost:
                s = -0.5 * R[i] * floss[i] * floss[i] - floss[i] * jar[i]
            force[i] = floss[i]
            state[i] = CNSTRSTATE_LINEARNEG
        elif jar[i] >= R[i] * floss[i]:
            if want_cost:
                s = -0.5 * R[i] * floss[i] * floss[i] + floss[i] * jar[i]
            force[i] = -floss[i]
            state[i] = CNSTRSTATE_LINEARPOS
        else:
            force[i] = -D[i] * jar[i]
            if want_cost:
                s = 0.5 * D[i] * jar[i] * jar[i]
            state[i] = CNSTRSTATE_QUADRATIC
    elif d.efc_type[i] != CNSTR_CONTACT_ELLIPTIC:
        if jar[i] >= 0:
            force[i] = 0.0
            state[i] = CNSTRSTATE_SATISFIED
        else:
            force[i] = -D[i] * jar[i]
            if want_cost:
                s = 0.5 * D[i] * jar[i] * jar[i]
            state[i] = CNSTRSTATE_QUADRATIC
    elif i == d.contact_efc_address[d.efc_id[i]]:
        cid = d.efc_id[i]
        for j in range(d.contact_dim[cid]):
            force[i + j] = -D[i + j] * jar[i + j]
        s = _elliptic_update(d, jar, i, want_cost, cone_hessian)
    return s


@kernel
def _elliptic_update(d, jar, i, want_cost, cone_hessian):
    """Force, state and cost of the elliptic contact whose rows start at i.

    In the cone made circular (U_0 = mu jar_0, U_j = friction_j jar_j), with N = U_0 and
    T = |U_1..|: above the cone (N >= mu T) no force; below its dual (mu N + T <= 0) every
    row is quadratic; between, the cost 1/2 Dm (N - mu T)^2 with Dm = D_0 / (mu^2 (1 + mu^2))."""
    cid = d.efc_id[i]
    dim = d.contact_dim[cid]
    mu = d.contact_mu[cid]
    fr = d.contact_friction
    D = d.efc_D
    force, state = d.efc_force, d.efc_state
    N, T = cone_coordinates(fr[cid], jar, i, dim, mu)
    s = 0.0
    if N >= mu * T or (T <= 0 and N >= 0):
        for j in range(dim):
            force[i + j] = 0.0
        result = CNSTRSTATE_SATISFIED
    elif mu * N + T <= 0 or (T <= 0 and N < 0):
        if want_cost:
            for j in range(dim):
                s += 0.5 * D[i + j] * jar[i + j] * jar[i + j]
        result = CNSTRSTATE_QUADRATIC
    else:
        dm = cone_forces(force, fr[cid], D, jar, i, dim, mu, N, T)
        nmt = N - mu * T
        if want_cost:
            s += 0.5 * dm * nmt * nmt
        result = CNSTRSTATE_CONE
        if cone_hessian:
            _cone_hessian(d, jar, i, cid, dim, mu, N, T, dm)
    for j in range(dim):
        state[i + j] = result
    return s


@kernel
def cone_coordinates(fr, jar, i, dim, mu):
    """(N, T) of the elliptic contact whose rows start at i, fr its friction coefficients: the
    cone made circular, U_0 = mu jar_0, U_j = fr_j jar_j, N = U_0, T = |U_1..|."""
    tt = 0.0
    for j in range(1, dim):
        u = jar[i + j] * fr[j - 1]
        tt += u * u
    return jar[i] * mu, math.sqrt(tt)


@kernel
def cone_forces(force, fr, D, jar, i, dim, mu, N, T):
    """The middle-zone forces of the elliptic contact at rows i.. (the gradient of 1/2 Dm (N - mu T)^2);
    returns Dm = D_0 / (mu^2 (1 + mu^2))."""
    dm = D[i] / (mu * mu * (1 + mu * mu))
    force[i] = -dm * (N - mu * T) * mu
    for j in range(1, dim):
        force[i + j] = -force[i] / T * (jar[i + j] * fr[j - 1]) * fr[j - 1]
    return dm


@kernel
def _cone_hessian(d, jar, i, cid, dim, mu, N, T, dm):
    """contact.H: the Hessian of the middle-zone cost in the contact's rows (mj_constraintUpdate)."""
    cone_hessian_block(d.contact_H[cid], d.contact_friction[cid], jar, i, dim, mu, N, T, dm)


@kernel
def cone_hessian_block(H, fr, jar, i, dim, mu, N, T, dm):
    """H (6, 6) = the Hessian in jar of the middle-zone cost 1/2 Dm (N - mu T)^2 of the elliptic
    contact at rows i.., fr its friction coefficients (MuJoCo's contact.H)."""
    for a in range(6):
        for b in range(6):
            H[a, b] = 0.0
    H[0, 0] = 1.0
    scl = -mu / T
    for j in range(1, dim):
        H[0, j] = scl * (jar[i + j] * fr[j - 1])
    scl = mu * N / (T * T * T)
    for k in range(1, dim):
        uk = jar[i + k] * fr[k - 1]
        for j in range(k, dim):
            H[k, j] = scl * (jar[i + j] * fr[j - 1]) * uk
    scl = mu * mu - mu * N / T
    for j in range(1, dim):
        H[j, j] += scl
    for k in range(dim):
        sk = dm * (mu if k == 0 else fr[k - 1])
        for j in range(k, dim):
            H[k, j] *= sk * (mu if j == 0 else fr[j - 1])
    for k in range(dim):
        for j in range(k + 1, dim):
            H[j, k] = H[k, j]


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
def _mul_j(m, d, res, r, vec, v0, nefc):
    """res[r, 0:nefc] = J vec[v0] (mj_mulJacVec)."""
    mul_j_rows(d, res[r], vec[v0], nefc, is_sparse(m))


# ---- warmstart ----------------------------------------------------------------------------------


@kernel
def _start_at_warmstart(m, d, nv, nefc):
    """The start of mj_constraint's warmstart: qacc = qacc_warmstart and J qacc - aref in the
    scratch row _JAREF (qacc_warmstart also in _SEARCH); False, with qacc = qacc_smooth and no
    force instead, when the warmstart is disabled."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_WARMSTART:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]
        for i in range(nefc):
            d.efc_force[i] = 0.0
        return False
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    for v in range(nv):
        d.qacc[v] = d.qacc_warmstart[v]
        sv[_SEARCH, v] = d.qacc_warmstart[v]
    _mul_j(m, d, se, _JAREF, sv, _SEARCH, nefc)
    for i in range(nefc):
        se[_JAREF, i] -= d.efc_aref[i]
    return True


@kernel
def warmstart(m, d):
    """qacc starts at qacc_warmstart or qacc_smooth, whichever has the lower total cost
    (warmstart() in engine_forward.c); cold start (the warmstart flag off): qacc_smooth.

    Returns _FROM_WARM when qacc is qacc_warmstart (then the solver's M qacc and J qacc - aref
    are in scratch_solver_nv[_MA] and scratch_solver_efc[_JAREF]), else _FROM_SMOOTH (J qacc -
    aref is efc_b)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    if not _start_at_warmstart(m, d, nv, nefc):
        return _FROM_SMOOTH
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    # costs only: the primal solvers compute qfrc_constraint themselves (on every dof a row
    # acts on; the others keep the zero fwd_constraint_kernel set)
    cost_warm = _rows_update(d, se[_JAREF], nefc, True, False)
    # (under discrete: M-hat and qfrc_smooth + shift, engine.metric)
    mass = pick(is_discrete(m), d.scratch_efm_mhat, d.M)
    mul_m_kernel(sv[_MA], mass, sv[_SEARCH], m.M_rownnz, m.M_rowadr, m.M_colind)
    if has_rank1(m, d):
        add_rank1_all(m, d, sv[_MA], sv[_SEARCH])
    force = pick(is_discrete(m), d.scratch_efm[FORCE], d.qfrc_smooth)
    for v in range(nv):
        cost_warm += 0.5 * (sv[_MA, v] - force[v]) * (d.qacc_warmstart[v] - d.qacc_smooth[v])
    cost_smooth = _rows_update(d, d.efc_b, nefc, True, False)
    if cost_warm > cost_smooth:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]
        return _FROM_SMOOTH
    return _FROM_WARM


# ---- primal solvers (Newton, CG) ----------------------------------------------------------------


@kernel
def _update_constraint(m, d, dofs, rows, cone_hessian):
    """Forces, states and the island's qfrc_constraint at the current Jaref; returns the total
    cost (constraint + Gauss) and stores the Gauss term and the number of rows in the cone state
    (PrimalUpdateConstraint)."""
    sv = d.scratch_solver_nv
    cost = island_constraint_update(m, d, d.scratch_solver_efc[_JAREF], rows, True, cone_hessian)
    if is_sparse(m):
        _island_mul_jt_sparse(d, dofs, rows)
    else:
        _island_mul_jt(d, dofs, rows)
    ncone = 0
    for b in range(rows.shape[0]):
        if d.efc_state[rows[b]] == CNSTRSTATE_CONE:
            ncone += 1
    d.scratch_solver_counts[SOLVER_CONES] = ncone
    gauss = 0.0
    force = pick(is_discrete(m), d.scratch_efm[FORCE], d.qfrc_smooth)
    for a in range(dofs.shape[0]):
        v = dofs[a]
        gauss += 0.5 * (sv[_MA, v] - force[v]) * (d.qacc[v] - d.qacc_smooth[v])
    d.scratch_solver_gauss[0] = gauss
    return cost + gauss


@kernel
def _island_mul_jt(d, dofs, rows):
    """qfrc_constraint = J' efc_force on the island's dofs, from the island's rows."""
    J, qfrc, force = d.efc_J, d.qfrc_constraint, d.efc_force
    nd = dofs.shape[0]
    if nd == J.shape[1]:  # every dof, ascending: the same sums without the index lists
        for v in range(nd):
            qfrc[v] = 0.0
        for b in range(rows.shape[0]):
            i = unsigned_index(rows[b])
            x = force[i]
            if x != 0.0:
                for v in range(nd):
                    qfrc[v] += J[i, v] * x
        return
    for a in range(nd):
        qfrc[unsigned_index(dofs[a])] = 0.0
    for b in range(rows.shape[0]):
        i = unsigned_index(rows[b])
        x = force[i]
        if x != 0.0:
            for a in range(nd):
                v = unsigned_index(dofs[a])
                qfrc[v] += J[i, v] * x


@kernel
def _island_mul_jt_sparse(d, dofs, rows):
    """qfrc_constraint = J' efc_force on the island's dofs as MuJoCo's sparse path forms it
    (PrimalUpdateConstraint: mju_mulMatVecSparse with J's transpose): each dof's sum runs over
    the rows whose sparse pattern holds it (structural zeros included), in row order, in
    mju_dotSparse's order (dot_pattern: four lanes over whole blocks of four, then the rest one
    by one). Work: scratch_ltj's rows 0-3 (the lanes), 4 (a dof's number of rows) and 5 (the
    rows seen so far), free outside _hessian_cone."""
    J, qfrc, force = d.efc_J, d.qfrc_constraint, d.efc_force
    pat, nnz = d.scratch_efc_colind, d.scratch_efc_rownnz
    w = d.scratch_ltj
    nd, nr = dofs.shape[0], rows.shape[0]
    for a in range(nd):
        v = unsigned_index(dofs[a])
        for k in range(6):
            w[k, v] = 0.0
    for b in range(nr):
        i = unsigned_index(rows[b])
        for t in range(nnz[i]):
            w[4, unsigned_index(pat[i, t])] += 1.0
    for tail in range(2):  # the lanes, then (after they are combined) the remainder
        for b in range(nr):
            i = unsigned_index(rows[b])
            x = force[i]
            for t in range(nnz[i]):
                v = unsigned_index(pat[i, t])
                k = int(w[5, v])
                count = int(w[4, v])
                full = count - count % 4
                if k < full and not tail:
                    w[k % 4, v] += J[i, v] * x
                elif k >= full and tail:
                    qfrc[v] += J[i, v] * x
                w[5, v] = k + 1
        if not tail:
            for a in range(nd):
                v = unsigned_index(dofs[a])
                qfrc[v] = (w[0, v] + w[2, v]) + (w[1, v] + w[3, v])
                w[5, v] = 0.0


@kernel
def _update_grad(m, d, dofs):
    sv = d.scratch_solver_nv
    smooth = pick(is_discrete(m), d.scratch_efm[FORCE], d.qfrc_smooth)
    grad, ma, qfrc = sv[_GRAD], sv[_MA], d.qfrc_constraint
    for a in range(dofs.shape[0]):
        v = unsigned_index(dofs[a])
        grad[v] = ma[v] - smooth[v] - qfrc[v]


@kernel
def _update_mgrad(m, d, dofs, newton):
    """Mgrad = H^-1 grad (Newton, from the Cholesky factor) or M^-1 grad (CG), on the island."""
    sv = d.scratch_solver_nv
    nd = dofs.shape[0]
    if newton:
        # the factor with the cone terms when any contact is in the cone's middle zone; the
        # factor is in the island's own (local) dof numbering
        L = d.scratch_hessian[1 if d.scratch_solver_counts[SOLVER_CONES] else 0]
        sparse = _sparse_newton(m)
        if nd == m.nv:  # every dof, ascending: solve in place
            for v in range(nd):
                sv[_MGRAD, v] = sv[_GRAD, v]
            if sparse:
                solver_sparse.solve(d, L, sv[_MGRAD], nd)
            else:
                _chol_solve(L, sv[_MGRAD], nd)
            return
        x = d.scratch_local
        for a in range(nd):
            x[a] = sv[_GRAD, dofs[a]]
        if sparse:
            solver_sparse.solve(d, L, x, nd)
        else:
            _chol_solve(L, x, nd)
        for a in range(nd):
            sv[_MGRAD, dofs[a]] = x[a]
    else:
        # M is block-diagonal over kinematic trees and an island holds whole trees: the full
        # solve gives the island's entries exactly (the others are not read)
        for v in range(m.nv):
            sv[_MGRAD, v] = sv[_GRAD, v]
        if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:
            solve_backbone(m, d, sv[_MGRAD])  # the metric's backbone qH (engine.metric)
        else:
            solve_ld(sv[_MGRAD], d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def _chol_solve(L, x, n):
    """x <- (L L')^-1 x in place, L dense lower triangular (mju_cholSolve, with solver_pgs's
    arithmetic: the forward sums in mju_dot's order, the back substitution subtracting from the
    last row up as MuJoCo 4.0 does)."""
    chol_solve(x, L, x, n)


@kernel
def _make_hessian(m, d, dofs, rows):
    """L = chol(M + J' D_q J) on the island's dofs (local numbering), D_q = efc_D on QUADRATIC
    rows (MakeHessian, FactorizeHessian)."""
    nd, nr = dofs.shape[0], rows.shape[0]
    L = d.scratch_hessian[0]
    J = d.efc_J
    Dq = d.scratch_solver_efc[_HD]
    D, state = d.efc_D, d.efc_state
    x = d.scratch_local
    for b in range(nr):
        i = unsigned_index(rows[b])
        Dq[i] = D[i] if state[i] == CNSTRSTATE_QUADRATIC else 0.0
    for a in range(nd):
        for c in range(nd):
            L[a, c] = 0.0
    if nd == J.shape[1]:
        # every dof, ascending (one island or none): J's rows and M's columns as they are
        for b in range(nr):
            r = unsigned_index(rows[b])
            dq = Dq[r]
            if dq != 0.0:
                for a in range(nd):
                    tmp = J[r, a]
                    if tmp != 0.0:
                        w = tmp * dq
                        for c in range(a + 1):
                            L[a, c] += J[r, c] * w
        M = pick(is_discrete(m), d.scratch_efm_mhat, d.M)
        rowadr, rownnz, colind = m.M_rowadr, m.M_rownnz, m.M_colind
        for a in range(nd):
            adr = rowadr[a]
            for k in range(rownnz[a]):
                L[a, unsigned_index(colind[adr + k])] += M[adr + k]
        if has_rank1(m, d):
            add_rank1_hessian(m, d, dofs, L)
        _factor_hessian(m, d, dofs, rows, L)
        if d.scratch_solver_counts[SOLVER_CONES]:
            _hessian_cone(m, d, dofs, rows)
        return
    # lower triangle of J' diag(Dq) J, row by row of J (mju_sqrMatTD_impl); the row is first
    # gathered into the island's dof numbering
    for b in range(nr):
        r = unsigned_index(rows[b])
        dq = Dq[r]
        if dq != 0.0:
            for a in range(nd):
                x[a] = J[r, unsigned_index(dofs[a])]
            for a in range(nd):
                tmp = x[a]
                if tmp != 0.0:
                    w = tmp * dq
                    for c in range(a + 1):
                        L[a, c] += x[c] * w
    # + M (lower triangle of the tree-sparse layout; an island holds whole trees, so a row's
    # columns are island dofs, found by their local index)
    loc = d.scratch_dof_local
    M = pick(is_discrete(m), d.scratch_efm_mhat, d.M)
    rowadr, rownnz, colind = m.M_rowadr, m.M_rownnz, m.M_colind
    for a in range(nd):
        loc[unsigned_index(dofs[a])] = a
    for a in range(nd):
        i = unsigned_index(dofs[a])
        adr = rowadr[i]
        for k in range(rownnz[i]):
            L[a, unsigned_index(loc[unsigned_index(colind[adr + k])])] += M[adr + k]
    if has_rank1(m, d):
        add_rank1_hessian(m, d, dofs, L)
    _factor_hessian(m, d, dofs, rows, L)
    if d.scratch_solver_counts[SOLVER_CONES]:
        _hessian_cone(m, d, dofs, rows)


@kernel
def _sparse_newton(m):
    """Whether Newton factors as MuJoCo's sparse path does (solver_sparse): a sparse model
    (constraint.is_sparse) with pyramidal cones (elliptic ones keep the dense factor and its
    cone updates)."""
    return is_sparse(m) and m.opt_flags[OPT_CONE] != CONE_ELLIPTIC


@kernel
def _factor_hessian(m, d, dofs, rows, L):
    """Factor H (its lower triangle in L): L' L on the sparse path (FactorizeHessian's
    mju_cholFactorNumeric after MakeHessian's symbolic phase), else L L' (mju_cholFactor)."""
    nd = dofs.shape[0]
    if _sparse_newton(m):
        loc = d.scratch_dof_local
        for a in range(nd):
            loc[unsigned_index(dofs[a])] = a
        solver_sparse.symbolic(m, d, dofs, rows)
        solver_sparse.factor(d, L, nd, d.scratch_local)
        d.scratch_solver_counts[SOLVER_DOWNDATES] = 0  # downdates since this factor (_hessian_incremental)
    else:
        chol_factor(L, nd, MINVAL)


@kernel
def _hessian_cone(m, d, dofs, rows):
    """Lcone = the factor of H plus every cone-state contact's J' H_cone J, by rank-1 updates
    with the rows of L_c' J, L_c the Cholesky factor of contact.H (HessianCone)."""
    nd, nr = dofs.shape[0], rows.shape[0]
    L = d.scratch_hessian[0]
    Lc = d.scratch_hessian[1]
    for a in range(nd):
        for b in range(nd):
            Lc[a, b] = L[a, b]
    local = d.scratch_cone[0]
    ltj = d.scratch_ltj
    J = d.efc_J
    b = 0
    while b < nr:
        i = rows[b]
        if d.efc_state[i] != CNSTRSTATE_CONE:
            b += 1
            continue
        cid = d.efc_id[i]
        dim = d.contact_dim[cid]
        for a in range(dim):
            for c in range(dim):
                local[a, c] = d.contact_H[cid, a, c]
        chol_factor(local, dim, MINVAL)
        for r in range(dim):
            for a in range(nd):
                ltj[r, a] = 0.0
        for r in range(dim):
            for c in range(r + 1):
                w = local[r, c]
                for a in range(nd):
                    ltj[c, a] += w * J[i + r, dofs[a]]
        for r in range(dim):
            _chol_update(Lc, ltj[r], nd, True)
        b += dim


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
def _hessian_incremental(m, d, dofs, rows):
    """Up/downdate the factor for the rows that entered or left the QUADRATIC state
    (HessianIncremental); refactor from scratch when an update loses rank.

    On the sparse path MuJoCo 4.0 (read off libmujoco.so.4.0.0's mj_solPrimal, and matching its
    solver statistics on dmc-dog, dmc-dog_v2 and dmc-humanoid_CMU) also refactors when the rows
    leaving QUADRATIC in this iteration, added to the downdates made since the last factor,
    reach 32 (the public 3.x source only refactors on a lost rank)."""
    nd = dofs.shape[0]
    old = d.scratch_oldstate
    x = d.scratch_solver_nv[_CHOLUPD]
    J = d.efc_J
    sparse = _sparse_newton(m)
    if sparse:
        down = 0
        for b in range(rows.shape[0]):
            i = rows[b]
            if old[i] == CNSTRSTATE_QUADRATIC and d.efc_state[i] != CNSTRSTATE_QUADRATIC:
                down += 1
        if down > 0 and d.scratch_solver_counts[SOLVER_DOWNDATES] + down >= _MAX_DOWNDATES:
            _make_hessian(m, d, dofs, rows)
            return
        d.scratch_solver_counts[SOLVER_DOWNDATES] += down
    for b in range(rows.shape[0]):
        i = rows[b]
        now_q = d.efc_state[i] == CNSTRSTATE_QUADRATIC
        was_q = old[i] == CNSTRSTATE_QUADRATIC
        if now_q != was_q:
            sd = math.sqrt(d.efc_D[i])
            for a in range(nd):
                x[a] = J[i, dofs[a]] * sd
            if sparse:
                rank = solver_sparse.update(d, d.scratch_hessian[0], x, nd, now_q)
            else:
                rank = _chol_update(d.scratch_hessian[0], x, nd, now_q)
            if rank < nd:
                _make_hessian(m, d, dofs, rows)
                return
    if d.scratch_solver_counts[SOLVER_CONES]:
        _hessian_cone(m, d, dofs, rows)


@kernel
def _prepare(m, d, dofs, rows):
    """Coefficients of the 1-D quadratics along the search direction (PrimalPrepare):
    Gauss [.., v'(Ma - qfrc_smooth), v'Mv/2] and per row [D jaref^2/2, D jaref Jv, D Jv^2/2]."""
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    q = d.scratch_quad
    g = d.scratch_solver_gauss
    # three mju_dot's over the island's dofs (in its local order)
    force = pick(is_discrete(m), d.scratch_efm[FORCE], d.qfrc_smooth)
    g[1] = _dot_dofs(sv[_SEARCH], sv[_MA], dofs) - _dot_dofs(force, sv[_SEARCH], dofs)
    g[2] = 0.5 * _dot_dofs(sv[_SEARCH], sv[_MV], dofs)
    b = 0
    nr = rows.shape[0]
    while b < nr:
        i = rows[b]
        jv = se[_JV, i]
        ja = se[_JAREF, i]
        D = d.efc_D[i]
        dj0 = D * ja
        q0 = ja * dj0
        q1 = jv * dj0
        q2 = jv * D * jv
        if d.efc_type[i] == CNSTR_CONTACT_ELLIPTIC:
            # the whole contact's quadratic (bottom zone), and the cone's polynomials in the
            # circular cone: U0 + alpha V0 along the normal, |U + alpha V|^2 = UU + 2 alpha UV
            # + alpha^2 VV along the friction directions
            cid = d.efc_id[i]
            dim = d.contact_dim[cid]
            mu = d.contact_mu[cid]
            fr = d.contact_friction
            for j in range(1, dim):
                dj = d.efc_D[i + j] * se[_JAREF, i + j]
                q0 += se[_JAREF, i + j] * dj
                q1 += se[_JV, i + j] * dj
                q2 += se[_JV, i + j] * d.efc_D[i + j] * se[_JV, i + j]
            uu = 0.0
            uv = 0.0
            vv = 0.0
            for j in range(1, dim):
                u = se[_JAREF, i + j] * fr[cid, j - 1]
                v = se[_JV, i + j] * fr[cid, j - 1]
                uu += u * u
                uv += u * v
                vv += v * v
            q[i, 3] = ja * mu
            q[i, 4] = jv * mu
            q[i, 5] = uu
            q[i, 6] = uv
            q[i, 7] = vv
            q[i, 8] = D / ((mu * mu) * (1 + (mu * mu)))
            q[i, 0] = 0.5 * q0
            q[i, 1] = q1
            q[i, 2] = 0.5 * q2
            b += dim
            continue
        q[i, 0] = 0.5 * q0
        q[i, 1] = q1
        q[i, 2] = 0.5 * q2
        b += 1


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
def _eval(m, d, rows, alpha):
    """(cost(alpha) - cost(0), d cost / d alpha, d2 cost / d alpha2) along the search direction
    (PrimalEval), over the island's rows. Increments the evaluation counter."""
    ne, nf = d.efc_counts[COUNT_NE], d.efc_counts[COUNT_NF]
    se = d.scratch_solver_efc
    q = d.scratch_quad
    g = d.scratch_solver_gauss
    cost = 0.0
    d0 = 0.0
    d1 = 0.0
    t0 = 0.0
    t1 = g[1]
    t2 = g[2]
    for b in range(rows.shape[0]):
        i = rows[b]
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
        elif d.efc_type[i] == CNSTR_CONTACT_ELLIPTIC:
            if i != d.contact_efc_address[d.efc_id[i]]:
                continue
            c, e0, e1 = _elliptic_eval(d, q, i, alpha)
            cost += c
            d0 += e0
            d1 += e1
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
    d.scratch_solver_counts[SOLVER_LS_EVALS] += 1
    return cost, d0, d1


@kernel
def _cone_zone(n, tsqr, mu):
    """1 top, 2 bottom, 3 middle zone of an elliptic cone, and T = sqrt(tsqr)."""
    if tsqr <= 0:
        return (2 if n < 0 else 1), 0.0
    t = math.sqrt(tsqr)
    if n >= mu * t:
        return 1, t
    if mu * n + t <= 0:
        return 2, t
    return 3, t


@kernel
def _elliptic_eval(d, q, i, alpha):
    """cost(alpha) - cost(0) of the elliptic contact at rows i.., and its first two
    derivatives, without cancellation when both points share a zone (ellipticCostDif)."""
    mu = d.contact_mu[d.efc_id[i]]
    u0, v0, uu, uv, vv, dm = q[i, 3], q[i, 4], q[i, 5], q[i, 6], q[i, 7], q[i, 8]
    zone0, t0 = _cone_zone(u0, uu, mu)
    n = u0 + alpha * v0
    tsqr = uu + alpha * (2 * uv + alpha * vv)
    zone, t = _cone_zone(n, tsqr, mu)
    cost = 0.0
    if zone0 == 1 and zone == 1:
        cost = 0.0
    elif zone0 == 2 and zone == 2:
        cost = alpha * alpha * q[i, 2] + alpha * q[i, 1]
    elif zone0 == 3 and zone == 3:
        t_delta = alpha * (2 * uv + alpha * vv) / (t + t0)
        r_delta = alpha * v0 - mu * t_delta
        r0 = u0 - mu * t0
        cost = 0.5 * dm * r_delta * (2 * r0 + r_delta)
    elif zone0 == 3 and zone == 2:
        b0 = mu * u0 + t0
        cost = alpha * (alpha * q[i, 2] + q[i, 1]) + 0.5 * dm * b0 * b0
    elif zone0 == 2 and zone == 3:
        b = mu * n + t
        cost = alpha * (alpha * q[i, 2] + q[i, 1]) - 0.5 * dm * b * b
    elif zone0 == 1 and zone == 2:
        cost = alpha * alpha * q[i, 2] + alpha * q[i, 1] + q[i, 0]
    elif zone0 == 1 and zone == 3:
        r = n - mu * t
        cost = 0.5 * dm * r * r
    elif zone0 == 3 and zone == 1:
        r0 = u0 - mu * t0
        cost = -0.5 * dm * r0 * r0
    elif zone0 == 2 and zone == 1:
        cost = -q[i, 0]
    d0 = 0.0
    d1 = 0.0
    if tsqr <= 0:
        if n < 0:
            d0 = 2 * alpha * q[i, 2] + q[i, 1]
            d1 = 2 * q[i, 2]
    elif n >= mu * t:
        pass
    elif mu * n + t <= 0:
        d0 = 2 * alpha * q[i, 2] + q[i, 1]
        d1 = 2 * q[i, 2]
    else:
        n1 = v0
        t1 = (uv + alpha * vv) / t
        t2 = vv / t - (uv + alpha * vv) * t1 / (t * t)
        d0 = dm * (n - mu * t) * (n1 - mu * t1)
        d1 = dm * ((n1 - mu * t1) * (n1 - mu * t1) + (n - mu * t) * (-mu * t2))
    return cost, d0, d1


@kernel
def _bracket(m, d, rows, pa, pc, pd0, pd1, cands, next_a, next_c, next_d0, next_d1):
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
        next_c, next_d0, next_d1 = _eval(m, d, rows, next_a)
    return flag, pa, pc, pd0, pd1, next_a, next_c, next_d0, next_d1


@kernel
def _line_search(m, d, dofs, rows, tolerance, ls_iterations, scale):
    """Exact line search along search (PrimalSearch); returns (alpha, improvement).

    One Newton step from 0; if the slope is not yet below the tolerance, Newton steps on one
    side until the slope changes sign, then a bracketed search over the Newton points of the
    two ends and the midpoint. alpha = 0 means no improvement (the solver stops)."""
    sv = d.scratch_solver_nv
    d.scratch_solver_counts[SOLVER_LS_EVALS] = 0
    snorm = math.sqrt(_island_dot(sv, _SEARCH, sv, _SEARCH, dofs))
    if snorm < MINVAL:
        return 0.0, 0.0
    gtol = tolerance * snorm / scale
    _island_mul_m(m, d, dofs, _MV, _SEARCH)
    _island_mul_j(m, d, dofs, rows, _JV, sv[_SEARCH])
    _prepare(m, d, dofs, rows)
    p0c, p0d0, p0d1 = _eval(m, d, rows, 0.0)
    p1a = 0.0 - p0d0 / p0d1
    p1c, p1d0, p1d1 = _eval(m, d, rows, p1a)
    if abs(p1d0) < gtol and (p1a == 0 or p1c < 0):
        return p1a, -p1c
    direction = 1.0 if p1d0 < 0 else -1.0
    # one-sided search
    p2a, p2c, p2d0, p2d1 = 0.0, p0c, p0d0, p0d1
    while p1d0 * direction <= -gtol and d.scratch_solver_counts[SOLVER_LS_EVALS] < ls_iterations:
        p2a, p2c, p2d0, p2d1 = p1a, p1c, p1d0, p1d1
        p1a -= p1d0 / p1d1
        p1c, p1d0, p1d1 = _eval(m, d, rows, p1a)
        if abs(p1d0) < gtol and p1c < 0:
            return p1a, -p1c
    if d.scratch_solver_counts[SOLVER_LS_EVALS] >= ls_iterations:
        return p1a, -p1c
    # bracketed search between p1 and p2
    n2a, n2c, n2d0, n2d1 = p1a, p1c, p1d0, p1d1
    n1a = p1a - p1d0 / p1d1
    n1c, n1d0, n1d1 = _eval(m, d, rows, n1a)
    cands = d.scratch_ls_points
    while d.scratch_solver_counts[SOLVER_LS_EVALS] < ls_iterations:
        ma = 0.5 * (p1a + p2a)
        mc, md0, md1 = _eval(m, d, rows, ma)
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
            m, d, rows, p1a, p1c, p1d0, p1d1, cands, n1a, n1c, n1d0, n1d1)
        b2, p2a, p2c, p2d0, p2d1, n2a, n2c, n2d0, n2d1 = _bracket(
            m, d, rows, p2a, p2c, p2d0, p2d1, cands, n2a, n2c, n2d0, n2d1)
        if not b1 and not b2:
            return ma, -mc
    if p1c <= p2c and p1c < 0:
        return p1a, -p1c
    if p2c <= p1c and p2c < 0:
        return p2a, -p2c
    return 0.0, 0.0


@kernel
def _dot_dofs(x, y, dofs):
    """x . y over the island's dofs, in mju_dot's order on the island's local (compact)
    numbering, as MuJoCo's island vectors hold them (util_linalg3.dot_mj)."""
    n = dofs.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = 0
    while k <= n - 4:
        v0, v1, v2, v3 = dofs[k], dofs[k + 1], dofs[k + 2], dofs[k + 3]
        s0 += x[v0] * y[v0]
        s1 += x[v1] * y[v1]
        s2 += x[v2] * y[v2]
        s3 += x[v3] * y[v3]
        k += 4
    res = (s0 + s2) + (s1 + s3)
    rest = n - k
    if rest == 3:
        res += x[dofs[k]] * y[dofs[k]] + x[dofs[k + 1]] * y[dofs[k + 1]] + x[dofs[k + 2]] * y[dofs[k + 2]]
    elif rest == 2:
        res += x[dofs[k]] * y[dofs[k]] + x[dofs[k + 1]] * y[dofs[k + 1]]
    elif rest == 1:
        res += x[dofs[k]] * y[dofs[k]]
    return res


@kernel
def _island_dot(a, i, b, j, dofs):
    """a[i] . b[j] over the island's dofs (mju_dot on the island's vectors)."""
    if dofs.shape[0] == a.shape[1]:  # every dof, ascending
        return dot_mj(a[i], b[j], a.shape[1])
    return _dot_dofs(a[i], b[j], dofs)


@kernel
def _island_mul_m(m, d, dofs, r, v0):
    """sv[r] = M sv[v0] on the island's dofs (M's rows of an island reach only island dofs)."""
    res, vec = d.scratch_solver_nv[r], d.scratch_solver_nv[v0]
    M = pick(is_discrete(m), d.scratch_efm_mhat, d.M)
    rowadr, rownnz, colind = m.M_rowadr, m.M_rownnz, m.M_colind
    nd = dofs.shape[0]
    for a in range(nd):
        res[unsigned_index(dofs[a])] = 0.0
    for a in range(nd):
        i = unsigned_index(dofs[a])
        adr = unsigned_index(rowadr[i])
        diag = unsigned_index(rownnz[i] - 1)
        # row i's own sum in a local, as mul_m_kernel (its columns j < i: no store aliases it),
        # the off-diagonals last to first (mju_mulSymVecSparse)
        acc = res[i] + M[adr + diag] * vec[i]
        for k in range(diag - 1, -1, -1):
            j = unsigned_index(colind[adr + k])
            acc += M[adr + k] * vec[j]
            res[j] += M[adr + k] * vec[i]
        res[i] = acc
    if has_rank1(m, d):
        add_rank1_product(m, d, dofs, res, vec)


@kernel
def _island_mul_j(m, d, dofs, rows, r, vec):
    """scratch_solver_efc[r, rows] = J vec on the island."""
    J = d.efc_J
    res = d.scratch_solver_efc[r]
    nd = dofs.shape[0]
    if is_sparse(m):
        # each row over its pattern (its dofs lie in the island, ascending in either numbering)
        colind, rownnz = d.scratch_efc_colind, d.scratch_efc_rownnz
        for b in range(rows.shape[0]):
            i = unsigned_index(rows[b])
            res[i] = dot_pattern(J[i], vec, colind[i], rownnz[i])
        return
    # each row's sum in mju_dot's order (mju_mulMatVec on the island's compact J)
    if nd == J.shape[1]:  # every dof, ascending
        for b in range(rows.shape[0]):
            i = unsigned_index(rows[b])
            res[i] = dot_mj(J[i], vec, nd)
        return
    for b in range(rows.shape[0]):
        i = unsigned_index(rows[b])
        res[i] = _dot_dofs(J[i], vec, dofs)


@kernel
def solve_primal(m, d, dofs, rows, maxiter, newton, start=_FROM_NOTHING):
    """Newton (``newton``) or CG on one island (its dofs and rows; the whole model when islands
    are off), from the warmstart in d.qacc (mj_solPrimal). Returns the iteration count.

    ``start`` (an island holding every dof) says what ``warmstart`` left: its M qacc and
    J qacc - aref (_FROM_WARM) or efc_b = J qacc_smooth - aref (_FROM_SMOOTH) are the sums this
    would compute, in the same order (all dofs ascending), so they are reused."""
    tol = m.opt_real[OPT_TOLERANCE]
    ls_tol = tol * m.opt_real[OPT_LS_TOLERANCE]
    ls_iter = m.opt_flags[OPT_LS_ITERATIONS]
    sv = d.scratch_solver_nv
    se = d.scratch_solver_efc
    nd, nr = dofs.shape[0], rows.shape[0]
    if start != _FROM_WARM:
        for a in range(nd):
            sv[_SEARCH, dofs[a]] = d.qacc[dofs[a]]
        _island_mul_m(m, d, dofs, _MA, _SEARCH)
    if start == _FROM_SMOOTH:
        for b in range(nr):
            se[_JAREF, rows[b]] = d.efc_b[rows[b]]
    elif start == _FROM_NOTHING:
        _island_mul_j(m, d, dofs, rows, _JAREF, d.qacc)
        for b in range(nr):
            se[_JAREF, rows[b]] -= d.efc_aref[rows[b]]
    cone_hessian = newton and m.opt_flags[OPT_CONE] == CONE_ELLIPTIC
    _update_constraint(m, d, dofs, rows, cone_hessian)
    _update_grad(m, d, dofs)
    # MuJoCo 4.0 scales improvement and gradient by 1 / trace(M) of the island
    # (under discrete too: with M-hat's trace the measured Newton and CG runs are the same)
    trace = 0.0
    for a in range(nd):
        trace += d.M[m.M_rowadr[dofs[a]] + m.M_rownnz[dofs[a]] - 1]
    scale = 1.0 / trace
    _update_mgrad(m, d, dofs, False)
    gap = max(0.0, 0.5 * scale * _island_dot(sv, _GRAD, sv, _MGRAD, dofs)) < tol
    gradient_ok = scale * math.sqrt(_island_dot(sv, _GRAD, sv, _GRAD, dofs)) < tol
    done = gap and (not newton or gradient_ok)
    if not done and newton:
        _make_hessian(m, d, dofs, rows)
        _update_mgrad(m, d, dofs, True)
        done = gradient_ok and max(0.0, 0.5 * scale * _island_dot(sv, _GRAD, sv, _MGRAD, dofs)) < tol
    if not done:
        for a in range(nd):
            sv[_SEARCH, dofs[a]] = -sv[_MGRAD, dofs[a]]
    it = 0
    old = d.scratch_oldstate
    while not done and it < maxiter:
        alpha, ls_improvement = _line_search(m, d, dofs, rows, ls_tol, ls_iter, scale)
        if alpha == 0:
            break
        for a in range(nd):
            v = dofs[a]
            d.qacc[v] += alpha * sv[_SEARCH, v]
            sv[_MA, v] += alpha * sv[_MV, v]
        for b in range(nr):
            se[_JAREF, rows[b]] += alpha * se[_JV, rows[b]]
        if not newton:
            for a in range(nd):
                v = dofs[a]
                sv[_GRADOLD, v] = sv[_GRAD, v]
                sv[_MGRADOLD, v] = sv[_MGRAD, v]
        for b in range(nr):
            old[rows[b]] = d.efc_state[rows[b]]
        _update_constraint(m, d, dofs, rows, cone_hessian)
        if newton:
            _hessian_incremental(m, d, dofs, rows)
        _update_grad(m, d, dofs)
        _update_mgrad(m, d, dofs, newton)
        improvement = scale * ls_improvement
        gradient = scale * math.sqrt(_island_dot(sv, _GRAD, sv, _GRAD, dofs))
        decrement = max(0.0, 0.5 * scale * _island_dot(sv, _GRAD, sv, _MGRAD, dofs)) if newton else 0.0
        it += 1
        if (improvement > 0 and improvement < tol) or gradient < tol or (newton and decrement < tol):
            break
        if newton:
            for a in range(nd):
                sv[_SEARCH, dofs[a]] = -sv[_MGRAD, dofs[a]]
        else:
            beta = _hager_zhang(d, dofs)
            for a in range(nd):
                v = dofs[a]
                sv[_SEARCH, v] = -sv[_MGRAD, v] + beta * sv[_SEARCH, v]
    return it


@kernel
def _hager_zhang(d, dofs):
    """CG's conjugate-direction coefficient (Hager-Zhang, with MuJoCo's restart and bound)."""
    sv = d.scratch_solver_nv
    for a in range(dofs.shape[0]):
        v = dofs[a]
        sv[_GRADDIF, v] = sv[_GRAD, v] - sv[_GRADOLD, v]
        sv[_MGRADDIF, v] = sv[_MGRAD, v] - sv[_MGRADOLD, v]
    d_dot_y = _island_dot(sv, _SEARCH, sv, _GRADDIF, dofs)
    if d_dot_y < MINVAL:
        return 0.0
    y_dot_my = _island_dot(sv, _GRADDIF, sv, _MGRADDIF, dofs)
    y_dot_mgrad = _island_dot(sv, _GRADDIF, sv, _MGRAD, dofs)
    d_dot_grad = _island_dot(sv, _SEARCH, sv, _GRAD, dofs)
    beta_hz = (y_dot_mgrad - 2 * (y_dot_my / d_dot_y) * d_dot_grad) / d_dot_y
    d_norm = math.sqrt(_island_dot(sv, _SEARCH, sv, _SEARCH, dofs))
    grad_norm = math.sqrt(_island_dot(sv, _GRAD, sv, _GRAD, dofs))
    eta_k = -1.0 / max(MINVAL, d_norm * min(0.01, grad_norm))
    return max(eta_k, beta_hz)


# ---- islands ------------------------------------------------------------------------------------


@kernel
def _island_dofs(m, d):
    """List the dofs of each island of make_islands (mj_island), island by island and ascending,
    at scratch_island_dofs[adr[0, k]:+adr[1, k]] (adr = scratch_island_adr); returns the count.
    Their rows are make_islands' scratch_efc_island[1] list."""
    nv = m.nv
    n = d.scratch_nisland[0]
    adr = d.scratch_island_adr
    dof_island = d.scratch_tree[DOF_ISLAND]
    for k in range(n):
        adr[1, k] = 0
    for v in range(nv):
        if dof_island[v] >= 0:
            adr[1, dof_island[v]] += 1
    total = 0
    for k in range(n):
        adr[0, k] = total
        total += adr[1, k]
        adr[1, k] = 0
    for v in range(nv):
        k = dof_island[v]
        if k >= 0:
            d.scratch_island_dofs[adr[0, k] + adr[1, k]] = v
            adr[1, k] += 1
    return n


# ---- the constraint stage -----------------------------------------------------------------------


@kernel
def _solve_primal_islands(m, d, maxiter, newton, start):
    """Newton or CG over the whole model, or island by island (the default)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    dofs = d.scratch_island_dofs
    rows = d.scratch_efc_island[1]
    if flags & DSBL_ISLAND:
        # one problem over the whole model
        for v in range(nv):
            dofs[v] = v
        for i in range(nefc):
            rows[i] = i
        iterations = solve_primal(m, d, dofs[:nv], rows[:nefc], maxiter, newton, start)
        d.scratch_solver_counts[SOLVER_ITERATIONS] = iterations
        return
    # MuJoCo 4.0 solves each island on its own (its own scale and stopping), leaves the dofs
    # of no island at qacc_smooth, and copies back qacc, qfrc_constraint and efc_force but not
    # efc_state: that keeps the state the warmstart's last evaluation left (at qacc_smooth),
    # which we reproduce. (Without the warmstart MuJoCo leaves efc_state unset; we report the
    # state at the solution.)
    nisland = _island_dofs(m, d)
    saved = d.scratch_state_saved
    keep_state = not (flags & DSBL_WARMSTART)
    if keep_state:
        for i in range(nefc):
            saved[i] = d.efc_state[i]
    adr = d.scratch_island_adr
    isl = d.scratch_island
    total = 0
    whole = nisland == 1 and adr[1, 0] == nv  # the island holds every dof: warmstart's sums hold
    for k in range(nisland):
        r0 = isl[ISLAND_ADR, k]
        total += solve_primal(m, d, dofs[adr[0, k]:adr[0, k] + adr[1, k]],
                              rows[r0:r0 + isl[ISLAND_NEFC, k]], maxiter, newton,
                              start if whole else _FROM_NOTHING)
    d.scratch_solver_counts[SOLVER_ITERATIONS] = total
    for v in range(nv):
        if d.scratch_tree[DOF_ISLAND, v] < 0:
            d.qacc[v] = d.qacc_smooth[v]
    if keep_state:
        for i in range(nefc):
            d.efc_state[i] = saved[i]


@kernel
def fwd_constraint_kernel(m, d):
    """efc_b, the solver's qacc, efc_force, efc_state and qfrc_constraint (mj_fwdConstraint)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    for v in range(nv):
        d.qfrc_constraint[v] = 0.0
    d.scratch_solver_counts[SOLVER_ITERATIONS] = 0
    if nefc == 0:
        for v in range(nv):
            d.qacc[v] = d.qacc_smooth[v]
        if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:  # lone free bodies' gyroscopic block
            discrete_free_bodies_entry(m, d)
        return
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE and not discrete_rows_supported(m):
        # a solve in the discrete integrator's metric that kinedyn does not reproduce
        # (engine.metric): no acceleration rather than a wrong one; step raises
        # (integrator.STATUS_DISCRETE_ROWS)
        for v in range(nv):
            d.qacc[v] = math.nan
        return
    # efc_b = J qacc_smooth - aref
    mul_j_rows(d, d.efc_b, d.qacc_smooth, nefc, is_sparse(m))
    for i in range(nefc):
        d.efc_b[i] -= d.efc_aref[i]
    solver = m.opt_flags[OPT_SOLVER]
    maxiter = m.opt_flags[OPT_ITERATIONS]
    noslip = m.opt_flags[OPT_NOSLIP_ITERATIONS]
    start = _FROM_NOTHING
    if solver == SOL_PGS:
        pgs_from_warmstart(m, d, maxiter)
    else:
        start = warmstart(m, d)
    if solver == SOL_NEWTON or solver == SOL_CG:
        primal_islands(m, d, maxiter, solver == SOL_NEWTON, start)
        for s in range(nv):
            d.scratch_island[ISLAND_NITER, s] = 0
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:  # lone free bodies in no island
        discrete_free_bodies_entry(m, d)
    # noslip after any solver, then the dual solvers' map back to joint space (mj_dualFinish)
    if noslip > 0:
        solve_noslip(m, d, noslip)
    if solver == SOL_PGS or noslip > 0:
        dual_finish(m, d)


# Each solver is a unit of its own, compiled only for models that select it (the options can change
# later: a model then binds the solver on its next call, kinedyn._jit.bind).
def _uses_primal(m):
    return m.opt.solver in (SOL_NEWTON, SOL_CG)


@handle_entry(args="int64, boolean, int64", needed=_uses_primal)
def primal_islands(m, d, maxiter, newton, start):
    """Newton or CG, island by island (see _solve_primal_islands)."""
    _solve_primal_islands(m, d, maxiter, newton, start)


@handle_entry(args="int64", needed=lambda m: m.opt.solver == SOL_PGS)
def pgs_from_warmstart(m, d, maxiter):
    """PGS from mj_constraint's warmstart: the forces the primal assigns to qacc_warmstart, kept
    if their dual cost is not positive (pgs_warmstart); cold: zero forces."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    if _start_at_warmstart(m, d, nv, nefc):
        # mj_constraintUpdate without its J' f: dual_finish below overwrites qfrc_constraint
        # and nothing before it reads it
        _rows_update(d, d.scratch_solver_efc[_JAREF], nefc, False, False)
        pgs_warmstart(m, d)
    solve_pgs(m, d, maxiter)


@handle_entry
def fwd_constraint_entry(m, d):
    fwd_constraint_kernel(m, d)
