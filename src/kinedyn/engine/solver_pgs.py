"""The dual solvers: PGS and noslip, and the dual finish (engine_solver.c).

PGS (projected Gauss-Seidel, MuJoCo's mj_solPGS) minimises over the row forces f

    1/2 f' AR f + f' b,    AR = J M^-1 J' + diag(R),  b = J qacc_smooth - aref  (efc_b)

subject to f free for equality rows, |f| <= frictionloss for friction-loss rows and f >= 0
for limits and contact rows. Each sweep minimises exactly over one row at a time and
projects; the rows are visited in a pseudo-random order (a PCG32 generator with MuJoCo's
fixed seed shuffles the list before every sweep); before each sweep the forces are
extrapolated with Nesterov momentum and projected, and the momentum restarts when a sweep's
correction opposes the extrapolation (O'Donoghue-Candes). A sweep whose cost improvement,
scaled by 1/trace(M), is below the tolerance ends the solve. With islands on (the default)
each island is solved on its own, with its own generator, momentum, count and trace(M) of
its dofs (MuJoCo 4.0 verified: per-island and whole-model solves stop at different sweeps).

Noslip (mj_solNoSlip) runs after any solver when noslip_iterations > 0: Gauss-Seidel on the
friction rows only, without the regulariser (AR - diag(R)), the other forces held. Without
contacts its rows are the friction-loss rows.

Both leave efc_state as MuJoCo's dualState labels it, then ``dual_finish`` maps the forces
to joint space: qfrc_constraint = J' f, qacc = qacc_smooth + M^-1 qfrc_constraint.

The sums replicate mju_dot's order (four interleaved partial sums), so the row residuals
round as MuJoCo's do.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import kernel
from kinedyn.engine.island import DOF_ISLAND, ISLAND_ADR, ISLAND_NE, ISLAND_NEFC, ISLAND_NF, ISLAND_NITER
from kinedyn.engine.smooth_inertia import solve_ld
from kinedyn.engine.types import (
    CNSTRSTATE_LINEARNEG,
    CNSTRSTATE_LINEARPOS,
    CNSTRSTATE_QUADRATIC,
    CNSTRSTATE_SATISFIED,
    MINVAL,
    OPT_NOSLIP_TOLERANCE,
    OPT_TOLERANCE,
)
from kinedyn.engine.util_linalg3 import dot_mj

# rows of Data.scratch_pgs_efc
_ARINV, _PREV, _MOMENTUM = 0, 1, 2

# PCG32 (O'Neill's pcg32, XSH-RR output): state <- state * MULT + inc (mod 2^64). The
# multiplication runs on 32-bit halves so that no intermediate overflows 64 bits, which keeps
# it exact both compiled and under NUMBA_DISABLE_JIT (NumPy warns on uint64 overflow).
_MULT = 6364136223846793005
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


@kernel
def _lcg_step(state, inc):
    """(state * MULT + (inc | 1)) mod 2^64 on 32-bit halves (pcg32's state update)."""
    inc = inc | _U1
    s_lo = state & _LO32
    s_hi = state >> _U32
    low = s_lo * _MULT_LO  # < 2^64
    lo = (low & _LO32) + (inc & _LO32)  # < 2^33
    hi = (low >> _U32) + ((s_hi * _MULT_LO) & _LO32) + ((s_lo * _MULT_HI) & _LO32) + (inc >> _U32) \
        + (lo >> _U32)
    return ((hi & _LO32) << _U32) | (lo & _LO32)


@kernel
def pcg32_next(state, inc):
    """One draw of PCG32 (MuJoCo's pcg32_next): (the new state, a 32-bit output)."""
    new = _lcg_step(state, inc)
    xorshifted = (((state >> _U18) ^ state) >> _U27) & _LO32
    rot = state >> _U59
    out = ((xorshifted >> rot) | (xorshifted << ((_U32 - rot) & _U31))) & _LO32
    return new, out


@kernel
def _shuffle(order, n, state, inc):
    """Fisher-Yates shuffle of order[:n] with PCG32 draws (shuffle_int); returns the state."""
    for i in range(n - 1, 0, -1):
        state, r = pcg32_next(state, inc)
        j = int(r % np.uint64(i + 1))
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp
    return state


@kernel
def _row(rows, adr, c, listed):
    """Global row of list position c: the island's list (map_iefc2efc) or c itself."""
    return rows[adr + c] if listed else c


@kernel
def _dual_state(d, ne, nf, n, adr, listed):
    """efc_state of the listed rows from their forces (dualState). Friction-loss rows are
    labelled opposite to the primal: LINEARPOS at the lower bound -frictionloss, LINEARNEG at
    the upper; limits are QUADRATIC when pushing (f > 0), SATISFIED otherwise."""
    rows = d.scratch_efc_island[1]
    force = d.efc_force
    floss = d.efc_frictionloss
    for c in range(n):
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
        else:
            # TODO(contacts): an elliptic contact's rows share one state (SATISFIED, QUADRATIC
            # or CONE from its cone zone); frictionless and pyramidal rows are scalar like limits
            d.efc_state[i] = CNSTRSTATE_QUADRATIC if force[i] > 0 else CNSTRSTATE_SATISFIED


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
    nefc = d.efc_counts[3]
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


@kernel
def dual_finish(m, d):
    """qfrc_constraint = J' efc_force, qacc = qacc_smooth + M^-1 qfrc_constraint (mj_dualFinish)."""
    nv, nefc = m.nv, d.efc_counts[3]
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


# ---- PGS ----------------------------------------------------------------------------------------


@kernel
def _pgs(m, d, island, ne, nf, n, adr, listed, maxiter):
    """PGS over the n listed rows (solPGS); returns the sweeps run."""
    nefc = d.efc_counts[3]
    rows = d.scratch_efc_island[1]
    force = d.efc_force
    floss = d.efc_frictionloss
    AR = d.scratch_efc_AR
    arinv = d.scratch_pgs_efc[_ARINV]
    prev = d.scratch_pgs_efc[_PREV]
    momentum = d.scratch_pgs_efc[_MOMENTUM]
    order = d.scratch_pgs_block
    tol = m.opt_real[OPT_TOLERANCE]
    scale = _island_scale(m, d, island, listed)
    for c in range(n):
        i = _row(rows, adr, c, listed)
        arinv[c] = 1 / AR[i, i]
        prev[c] = force[i]
    _dual_state(d, ne, nf, n, adr, listed)
    # one block per row: every row is scalar until elliptic contacts exist
    # TODO(contacts): an elliptic contact is one block of its dim rows (ray update of the
    # normal, then a QCQP over the friction rows: mju_QCQP2/3/N), here and in the projection
    nblock = n
    for c in range(n):
        order[c] = c
    # PCG32 with MuJoCo's fixed seed: state 0, increment 1, one draw discarded
    inc = _U1
    state, _ = pcg32_next(_U0, inc)
    it = 0
    k = 0  # Nesterov counter, reset by a restart
    while it < maxiter:
        # Nesterov extrapolation f += beta (f - f_prev), then projection onto the bounds
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
            for c in range(ne + nf, n):
                i = _row(rows, adr, c, listed)
                if force[i] < 0:
                    force[i] = 0.0
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
            res = d.efc_b[i] + dot_mj(AR[i], force, nefc)
            old = force[i]
            # exact minimum along the row, then the row's bounds
            force[i] -= res * arinv[c]
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
            delta = force[i] - old
            change = 0.5 * delta * delta * a + delta * res
            if change > 1e-10:
                force[i] = old
                change = 0.0
            improvement -= change
        _dual_state(d, ne, nf, n, adr, listed)
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


@kernel
def _noslip(m, d, island, ne, nf, n, adr, listed, maxiter):
    """Noslip over the n listed rows (solNoSlip); returns the sweeps run."""
    nefc = d.efc_counts[3]
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
            res = d.efc_b[i] + dot_mj(AR[i], force, nefc) - R[i] * force[i]
            old = force[i]
            force[i] -= res * arinv[c]
            if force[i] < -floss[i]:
                force[i] = -floss[i]
            elif force[i] > floss[i]:
                force[i] = floss[i]
            delta = force[i] - old
            improvement -= 0.5 * delta * delta / arinv[c] + delta * res
        # TODO(contacts): contact friction: each pair of opposing pyramid edges (normal held),
        # or an elliptic contact's friction rows by QCQP; limits and frictionless rows are skipped
        _dual_state(d, ne, nf, n, adr, listed)
        improvement *= scale
        it += 1
        if improvement < tol:
            break
    return it


@kernel
def solve_noslip(m, d, maxiter):
    """Noslip on each island (mj_solNoSlip_island) or on all rows (mj_solNoSlip); its sweeps are
    added to scratch_island[ISLAND_NITER] as MuJoCo adds them to solver_niter."""
    nisland = d.scratch_nisland[0]
    isl = d.scratch_island
    if nisland > 0:
        for s in range(nisland):
            isl[ISLAND_NITER, s] += _noslip(m, d, s, isl[ISLAND_NE, s], isl[ISLAND_NF, s],
                                            isl[ISLAND_NEFC, s], isl[ISLAND_ADR, s], True, maxiter)
    else:
        counts = d.efc_counts
        isl[ISLAND_NITER, 0] += _noslip(m, d, 0, counts[0], counts[1], counts[3], 0, False, maxiter)
