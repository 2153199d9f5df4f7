"""3x3 matrix algebra for Numba code, written as loops.

Numba compiles ``a @ b`` and ``np.linalg`` to SciPy's BLAS/LAPACK, and SciPy is not a
runtime dependency, so code paths that need small dense algebra use these instead.
They allocate their results: use them outside the per-step hot loops.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import cached_njit


@cached_njit
def mat_mul(a, b):
    """(3, 3) a @ b."""
    out = np.zeros((3, 3))
    for r in range(3):
        for c in range(3):
            for k in range(3):
                out[r, c] += a[r, k] * b[k, c]
    return out


@cached_njit
def mat_t(a):
    """(3, 3) a^T as a new array."""
    out = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            out[r, c] = a[c, r]
    return out


@cached_njit
def mat_vec(a, v):
    """(3,) a @ v."""
    out = np.zeros(3)
    for r in range(3):
        for k in range(3):
            out[r] += a[r, k] * v[k]
    return out


@cached_njit
def cross(a, b):
    """(3,) a x b."""
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@cached_njit
def skew(v):
    """[v]x, the matrix of v x (.)."""
    out = np.zeros((3, 3))
    out[0, 1] = -v[2]
    out[0, 2] = v[1]
    out[1, 0] = v[2]
    out[1, 2] = -v[0]
    out[2, 0] = -v[1]
    out[2, 1] = v[0]
    return out
