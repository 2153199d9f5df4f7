"""3x3 matrix algebra for Numba code, written as loops, one entry or one 3-vector at a time.

Numba compiles ``a @ b`` and ``np.linalg`` to BLAS/LAPACK calls through SciPy, and the
kernels stay free of that and of allocation: these helpers return a scalar (one entry of a
product) or a 3-tuple, so the caller decides where results live (locals or scratch rows).
Each sums in the order ``((0 + x0) + x1) + x2``, as a product accumulated into a zeroed
matrix does. ``dot_mj`` is the exception: the dot product of long vectors in mju_dot's order.
"""

from __future__ import annotations

from kinedyn._jit import kernel


@kernel
def cross3(a, b):
    """a x b of two 3-tuples (or rows), as a 3-tuple."""
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


@kernel
def mat_vec3(a, v):
    """(3, 3) a times the 3-vector v, as a 3-tuple."""
    out0 = 0.0
    out1 = 0.0
    out2 = 0.0
    for k in range(3):
        out0 += a[0, k] * v[k]
        out1 += a[1, k] * v[k]
        out2 += a[2, k] * v[k]
    return out0, out1, out2


@kernel
def skew_entry(v, r, c):
    """Entry (r, c) of [v]x, the matrix of v x (.)."""
    if r == 0:
        return -v[2] if c == 1 else (v[1] if c == 2 else 0.0)
    if r == 1:
        return v[2] if c == 0 else (-v[0] if c == 2 else 0.0)
    return -v[1] if c == 0 else (v[0] if c == 1 else 0.0)


@kernel
def mat_mul_entry(a, b, r, c):
    """Entry (r, c) of a @ b for (3, 3) a and b."""
    acc = 0.0
    for k in range(3):
        acc += a[r, k] * b[k, c]
    return acc


@kernel
def mat_t_mul_entry(a, b, r, c):
    """Entry (r, c) of a^T @ b for (3, 3) a and b."""
    acc = 0.0
    for k in range(3):
        acc += a[k, r] * b[k, c]
    return acc


@kernel
def skew_mul_entry(v, b, r, c):
    """Entry (r, c) of [v]x @ b for the 3-vector v and (3, 3) b (zero entries of [v]x included)."""
    acc = 0.0
    for k in range(3):
        acc += skew_entry(v, r, k) * b[k, c]
    return acc


@kernel(inline="always")
def dot_mj(a, b, n):
    """a[:n] . b[:n] summed in mju_dot's order: four interleaved partial sums combined as
    (s0 + s2) + (s1 + s3), then the last n % 4 products.

    Inlined into its callers (the solvers' Cholesky factors and solves, PGS's row residuals):
    called out of line, passing two array views cost as much as a short dot itself (a 14 x 14
    factor took 0.63 µs against 0.33 inlined)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    i = 0
    while i <= n - 4:
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
        i += 4
    res = (s0 + s2) + (s1 + s3)
    rest = n - i
    if rest == 3:
        res += a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2]
    elif rest == 2:
        res += a[i] * b[i] + a[i + 1] * b[i + 1]
    elif rest == 1:
        res += a[i] * b[i]
    return res


@kernel(inline="always")
def dot_pattern(a, b, ind, nnz):
    """sum_t a[ind[t]] b[ind[t]] for t < nnz in mju_dotSparse's order: four interleaved lane
    sums over whole blocks of four positions of the pattern, combined as (s0 + s2) + (s1 + s3),
    then the remaining terms one by one. A dense row ``a`` summed over its sparse pattern ``ind``
    (ascending, structural zeros included: they shift the lanes) as MuJoCo 4.0's sparse
    Jacobian path sums it (mju_mulMatVecSparse, measured bit for bit through mj_mulJacVec)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    t = 0
    while t <= nnz - 4:
        s0 += a[ind[t]] * b[ind[t]]
        s1 += a[ind[t + 1]] * b[ind[t + 1]]
        s2 += a[ind[t + 2]] * b[ind[t + 2]]
        s3 += a[ind[t + 3]] * b[ind[t + 3]]
        t += 4
    res = (s0 + s2) + (s1 + s3)
    while t < nnz:
        res += a[ind[t]] * b[ind[t]]
        t += 1
    return res


@kernel(inline="always")
def dot_nonzero(a, b, n):
    """a[:n] . b[:n] over the nonzero entries of ``a`` in mju_dotSparse's order (dot_pattern with
    the pattern of a's nonzeros): a row of the sparse efc_AR, whose pattern is the rows sharing
    a kinematic tree, none of whose entries there is zero in practice."""
    nnz = 0
    for k in range(n):
        if a[k] != 0.0:
            nnz += 1
    full = nnz - nnz % 4
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    res = 0.0
    t = 0
    for k in range(n):
        x = a[k]
        if x == 0.0:
            continue
        if t < full:
            lane = t % 4
            if lane == 0:
                s0 += x * b[k]
            elif lane == 1:
                s1 += x * b[k]
            elif lane == 2:
                s2 += x * b[k]
            else:
                s3 += x * b[k]
            if t == full - 1:
                res = (s0 + s2) + (s1 + s3)
        else:
            res += x * b[k]
        t += 1
    return res
