"""Dense factorisations for the constraint solvers (engine_util_solve.c).

One Cholesky factor serves Newton's dense Hessian (pivots clamped at MINVAL) and PGS's and
noslip's blocks (clamped at 1e-10), as MuJoCo's single mju_cholFactor does.
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
