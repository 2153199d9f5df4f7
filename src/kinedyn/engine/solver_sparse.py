"""Newton's Hessian factor on MuJoCo's sparse path (engine_util_solve.c, engine_solver.c).

For models MuJoCo runs with a sparse constraint Jacobian (``jacobian="sparse"``, or ``"auto"``
and nv >= 60: constraint.is_sparse) its Newton solver factors H = M + J' D J as H = L' L
with L lower triangular computed from the last dof to the first (a "reverse" Cholesky, no
fill-in for a kinematic tree), where the dense path factors H = L L'. The two round
differently, and through Newton's last linear solve the difference reaches qacc at about
cond(H) eps (1e-13 relative on dmc-dog) -- which noslip then amplifies past 1e-9 in entries
of cacc. So for those models kinedyn follows the sparse path's arithmetic, on the island's
dense (nd x nd) storage with the sparse structure kept beside it:

* ``symbolic``: H's pattern (M's tree pattern plus a clique per constraint row over the row's
  sparse pattern, whatever the row's state) and from it L's pattern and, per column r, the
  rows c > r with L[c, r] in the pattern in the order the elimination tree visits them
  (mju_cholFactorSymbolic; the order in which the factor subtracts their contributions);
* ``factor``: the numeric factorisation from the last row up, in blocks of up to three
  nested rows with 4.0's order of subtractions (mju_cholFactorNumeric as libmujoco 4.0 does it;
  the public source's row-by-row loop rounds differently);
* ``solve``: x <- (L' L)^-1 x, first L^-T from the last row up, then L^-1 with each row's sum
  over its pattern in mju_dotSparse's order (mju_cholSolveSparse);
* ``update``: a rank-1 up- or downdate by Givens rotations from the last entry of the update
  vector's pattern up (mju_cholUpdateSparse).

The structure lives in Data.scratch_spchol: [0] H's pattern (lower triangle; factor turns it
into L's rows as column lists), [1] L's pattern, [2] the visiting lists (row r: the rows c of
column r's entries), and scratch_spchol_n: [0] the lists' lengths, [1] the elimination-tree
parents (factor: the rows without fill-in), [2] flags (factor: the rows' entry counts), [3] a
row's pattern (work).
The factor is checked bit for bit against libmujoco 4.0's mju_cholFactorNumeric through
ctypes (tests/test_solver_sparse.py).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.types import MINVAL
from kinedyn.engine.util_linalg3 import dot_pattern
from kinedyn.engine.util_spatial import unsigned_index

_HPAT, _LPAT, _LT = 0, 1, 2
_LTN, _PARENT, _FLAG, _IND = 0, 1, 2, 3


@kernel
def symbolic(m, d, dofs, rows):
    """H's and L's patterns and the column visiting lists for the island (dofs, rows), in the
    island's local dof numbering (scratch_dof_local must map dofs to it)."""
    nd = dofs.shape[0]
    hp = d.scratch_spchol[_HPAT]
    loc = d.scratch_dof_local
    for a in range(nd):
        for c in range(nd):
            hp[a, c] = 0
    # M's pattern: each dof's row holds its ancestors
    rowadr, rownnz, colind = m.M_rowadr, m.M_rownnz, m.M_colind
    for a in range(nd):
        v = unsigned_index(dofs[a])
        adr = unsigned_index(rowadr[v])
        for k in range(rownnz[v]):
            hp[a, loc[unsigned_index(colind[adr + k])]] = 1
    # J' J's pattern: every pair of dofs in a row's pattern (mju_sqrMatTDSparseSymbolic)
    pat = d.scratch_efc_colind
    nnz = d.scratch_efc_rownnz
    for b in range(rows.shape[0]):
        i = unsigned_index(rows[b])
        for t in range(nnz[i]):
            p = loc[pat[i, t]]
            for u in range(t + 1):
                hp[p, loc[pat[i, u]]] = 1
    eliminate(d, nd)


@kernel
def eliminate(d, nd):
    """L's pattern and the column visiting lists from H's (lower) pattern in scratch_spchol[0]:
    the reverse symbolic Cholesky, walking up the elimination tree from each entry of column r
    (mju_cholFactorSymbolic)."""
    s = d.scratch_spchol
    sn = d.scratch_spchol_n
    hp = s[_HPAT]
    lp = s[_LPAT]
    lt = s[_LT]
    for a in range(nd):
        for c in range(nd):
            lp[a, c] = 0
    ltn = sn[_LTN]
    parent = sn[_PARENT]
    flag = sn[_FLAG]
    for r in range(nd - 1, -1, -1):
        parent[r] = -1
        flag[r] = r
        lp[r, r] = 1
        ltn[r] = 0
        for i0 in range(r + 1, nd):
            if hp[i0, r] == 0:
                continue
            i = i0
            while flag[i] != r:
                if parent[i] == -1:
                    parent[i] = r
                lp[i, r] = 1
                lt[r, ltn[r]] = i
                ltn[r] += 1
                flag[i] = r
                i = parent[i]


@kernel
def _position(cols, c, col):
    """Where column col sits in row c's column list (col is in row c's pattern)."""
    k = 0
    while cols[c, k] != col:
        k += 1
    return k


@kernel
def _joins(cols, nnz, ltn, r, k):
    """Whether row r-k joins the block row r leads: row r's k-th entry left of its diagonal is
    column r-k, row r-k has k fewer entries and column r-k k more rows below it. These are the
    counts 4.0 compares, not the patterns: they also hold when column r-k's rows are not column
    r's plus r (see factor)."""
    if k > r or nnz[r] < k + 1:
        return False
    return cols[r, nnz[r] - 1 - k] == r - k and nnz[r - k] == nnz[r] - k and ltn[r - k] == ltn[r] + k


@kernel
def factor(d, L, nd, acc):
    """L' L = H in place (H's lower triangle in L on entry), rows from the last up, in MuJoCo
    4.0's arithmetic; returns the rank. acc: an nd work vector (4.0's dense scratch).

    MuJoCo 4.0's mju_cholFactorNumeric (read off libmujoco.so.4.0.0 and measured bit for bit
    through it, tests/test_solver_sparse.py; the public 3.x source subtracts row by row instead):

    * Rows go in blocks of up to three, r, r-1, r-2, led by the highest (_joins); a row with no
      rows below it (an empty visiting list) is never a leader.
    * Each row of a block starts from H's row, kept in the row itself when the row belongs to a
      block of two or more or H's row has L's pattern (no fill-in), else in acc (the row zero).
    * The rows c of the leader's visiting list, in list order, subtract L[c, x] L[c, :x+1], x
      the entry of row c q places left of the leader's (q: the row's place in its block). When
      row c's entries up to x are the last ones of this row's pattern (same first column,
      counted from the end), they are subtracted in the row, else in acc.
    * Then row += acc over its pattern, and the block's rows above it (leader first) subtract
      their entries, in the row.
    * A pivot below MINVAL is raised to it, the rank counted, and the row's other entries set to
      zero; else they are scaled by 1 / sqrt(pivot).

    When a block's counts hold but column r-1's rows are not column r's plus r, x is not
    column r-1 and 4.0's factor is not H's; this follows it there too (positions, not columns).

    Storage: scratch_spchol[0] (H's pattern on entry) is overwritten with L's rows as column
    lists, scratch_spchol_n[2] with the rows' entry counts, [1] with the no-fill-in flags.
    """
    s = d.scratch_spchol
    sn = d.scratch_spchol_n
    cols = s[_HPAT]
    lp = s[_LPAT]
    lt = s[_LT]
    ltn = sn[_LTN]
    nnz = sn[_FLAG]
    same = sn[_PARENT]
    for r in range(nd):  # in place: entry n is written after entries n..j of H's row were read
        n = 0
        same[r] = 1
        for j in range(r + 1):
            if lp[r, j]:
                if cols[r, j] == 0:
                    same[r] = 0
                cols[r, n] = j
                n += 1
        nnz[r] = n
    rank = nd
    r = nd - 1
    while r >= 0:
        size = 1
        if ltn[r] > 0:
            while size < 3 and _joins(cols, nnz, ltn, r, size):
                size += 1
        for q in range(size):
            row = r - q
            n = nnz[row]
            if size > 1 or same[row]:
                for j in range(row + 1):
                    acc[j] = 0.0
            else:
                for j in range(row + 1):
                    acc[j] = L[row, j]
                    L[row, j] = 0.0
            for k in range(ltn[r]):
                c = lt[r, k]
                p = _position(cols, c, r) - q
                if p < 0:  # a block whose counts hold by chance: 4.0's loop runs no times
                    continue
                lcr = L[c, cols[c, p]]
                off = n - 1 - p
                if off >= 0 and cols[row, off] == cols[c, 0]:
                    for i in range(p + 1):
                        L[row, cols[row, off + i]] -= lcr * L[c, cols[c, i]]
                else:
                    for i in range(p + 1):
                        j = cols[c, i]
                        acc[j] -= lcr * L[c, j]
            for i in range(n):
                j = cols[row, i]
                L[row, j] += acc[j]
            for t in range(q):  # row r-t has n + q - t entries: its entry q-t left of the diagonal
                c = r - t
                p = n - 1
                lcr = L[c, cols[c, p]]
                for i in range(p + 1):
                    L[row, cols[row, i]] -= lcr * L[c, cols[c, i]]
            diag = L[row, row]
            clamp = diag < MINVAL
            if clamp:
                diag = MINVAL
                rank -= 1
            lrr = math.sqrt(diag)
            inv = 1.0 / lrr
            for j in range(row):
                L[row, j] = L[row, j] * inv if lp[row, j] and not clamp else 0.0
            L[row, row] = lrr
        r -= size
    return rank


@kernel
def _prefix(lp, i, ind):
    """The pattern of row i left of its diagonal, into ind; returns its length."""
    n = 0
    for j in range(i):
        if lp[i, j]:
            ind[n] = j
            n += 1
    return n


@kernel
def _nested(lp, i, k, n):
    """Whether row i+k holds row i's n-entry prefix then i (the test 4.0's solve makes: row
    i+k has n+k entries before its diagonal and column i at position n)."""
    cnt = 0
    at_n = -1
    for j in range(i + k):
        if lp[i + k, j]:
            if cnt == n:
                at_n = j
            cnt += 1
    return cnt == n + k and at_n == i


@kernel
def solve(d, L, x, nd):
    """x <- (L' L)^-1 x in place.

    L^-T from the last row up, each row's entries subtracted as they come. Then L^-1 from the
    first row down, where MuJoCo 4.0 (read off libmujoco.so.4.0.0's mju_cholSolveSparse, and
    measured bit for bit through it) takes rows two or three at a time when they nest (rows
    i+1, i+2 hold row i's pattern, then i, then i+1): their sums over the shared prefix run
    one by one, and the entries inside the group are subtracted after; a row alone sums in
    mju_dotSparse's order."""
    lp = d.scratch_spchol[_LPAT]
    ind = d.scratch_spchol_n[_IND]  # a row's pattern
    for i in range(nd - 1, -1, -1):
        if x[i] != 0.0:
            x[i] /= L[i, i]
            tmp = x[i]
            for j in range(i):
                if lp[i, j]:
                    x[j] -= L[i, j] * tmp
    i = 0
    while i < nd:
        n = _prefix(lp, i, ind)
        size = 1
        if i + 1 < nd and _nested(lp, i, 1, n):
            size = 2
            if i + 2 < nd and _nested(lp, i, 2, n):
                size = 3
        if size == 1:
            if n > 0:
                x[i] -= dot_pattern(L[i], x, ind, n)
            x[i] /= L[i, i]
            i += 1
            continue
        for k in range(size):
            acc = 0.0
            if n >= 1:
                for t in range(n):
                    acc += L[i + k, ind[t]] * x[ind[t]]
            x[i + k] -= acc
            for q in range(k):
                x[i + k] -= L[i + k, i + q] * x[i + q]
            x[i + k] /= L[i + k, i + k]
        i += size


@kernel
def update(d, L, x, nd, plus):
    """L' L +- x x', x overwritten; returns the rank (nd unless a pivot fell below MINVAL).
    MuJoCo starts at x's last pattern entry: the rows after it, where x is zero, are skipped
    here as there."""
    lp = d.scratch_spchol[_LPAT]
    rank = nd
    for row in range(nd - 1, -1, -1):
        xr = x[row]
        if xr == 0.0:
            continue
        diag = L[row, row]
        tmp = diag * diag + (xr * xr if plus else -xr * xr)
        if tmp < MINVAL:
            tmp = MINVAL
            rank -= 1
        r = math.sqrt(tmp)
        L[row, row] = r
        c = diag / r
        sn = -xr / r
        ss = -sn if plus else sn
        for j in range(row):
            if lp[row, j]:
                mv = L[row, j]
                xj = x[j]
                L[row, j] = c * mv + ss * xj
                x[j] = sn * mv + c * xj
    return rank
