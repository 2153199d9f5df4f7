"""Dense factorisations for the constraint solvers (engine_util_solve.c).

One Cholesky factor serves Newton's dense Hessian (pivots clamped at MINVAL) and PGS's and
noslip's blocks (clamped at 1e-10), as MuJoCo's single mju_cholFactor does.

``factor_lu_tree`` / ``solve_lu_tree``: the implicit integrator's unsymmetric factor of
M - h qDeriv (mju_factorLUSparse, mju_solveLUSparse), held in a dense matrix that is zero
outside MuJoCo's D pattern (a dof with its ancestors and descendants).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.util_linalg3 import dot_mj


@kernel
def chol_factor(a, n, mindiag):
    """In-place Cholesky factor of a[:n, :n] (its lower triangle), sums in mju_dot's order;
    a pivot below ``mindiag`` is raised to it and its column below cleared. Returns the rank
    (mju_cholFactor)."""
    rank = n
    for j in range(n):
        tmp = a[j, j]
        if j:
            tmp -= dot_mj(a[j], a[j], j)
        deficient = tmp < mindiag
        if deficient:
            tmp = mindiag
            rank -= 1
        a[j, j] = math.sqrt(tmp)
        if deficient:
            for i in range(j + 1, n):
                a[i, j] = 0.0
        else:
            inv = 1 / a[j, j]
            for i in range(j + 1, n):
                a[i, j] = (a[i, j] - dot_mj(a[i], a[j], j)) * inv
    return rank


@kernel
def chol_solve(res, a, vec, n):
    """res = (L L')^-1 vec with L = a's lower triangle from chol_factor (mju_cholSolve). The back
    substitution subtracts from the last row up (MuJoCo 4.0's order; 3.12's source went from row
    i+1 down). res may be vec."""
    for i in range(n):
        res[i] = vec[i]
    for i in range(n):
        if i:
            res[i] -= dot_mj(a[i], res, i)
        res[i] /= a[i, i]
    for i in range(n - 1, -1, -1):
        for j in range(n - 1, i, -1):
            res[i] -= a[j, i] * res[j]
        res[i] /= a[i, i]


@kernel
def factor_lu_tree(a, dof_parentid, n):
    """In place a = (I + U) L, no pivoting, eliminating from the last dof to the first, with only
    the entries of each dof's ancestor chain touched: no fill-in outside the D pattern
    (mju_factorLUSparse). U is strictly upper, L lower with its diagonal. Returns False if a
    pivot is below MINVAL in magnitude (MuJoCo's mjERROR "diagonal element too small")."""
    for i in range(n - 1, -1, -1):
        pivot = a[i, i]
        if abs(pivot) < 1e-15:
            return False
        j = dof_parentid[i]
        while j >= 0:
            # row j above i, (j, i) non-zero: scale it, then update row j left of column i
            a[j, i] = a[j, i] / pivot
            lji = a[j, i]
            k = dof_parentid[i]
            while k >= 0:
                a[j, k] -= a[i, k] * lji
                k = dof_parentid[k]
            j = dof_parentid[j]
    return True


@kernel
def solve_lu_tree(a, x, n):
    """In place x <- ((I + U) L)^-1 x with the factor of ``factor_lu_tree`` (mju_solveLUSparse):
    (I + U) from the last dof up, then L from the first down. Entries outside the pattern are
    zero, so the dense sums add the same terms."""
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= a[i, k] * x[k]
        x[i] = s
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= a[i, k] * x[k]
        x[i] = s / a[i, i]
