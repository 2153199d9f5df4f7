"""GJK (gjk in engine_collision_gjk.c, as MuJoCo 4.0 runs it): the distance between the two objects,
its witness points and final simplex, with the distance sub-algorithm of Montanari et al. (2017).
collision_gjk's docstring says where 4.0 differs from the public source.
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk_common import (
    I_TMPIDX,
    MAX_LIMIT,
    MINVAL2,
    W_LAM,
    W_TMP,
    W_TMP1,
    W_TMP2,
    _copy_vertex,
    _cross,
    _det3,
    _dot,
    _same_sign,
)
from kinedyn.engine.collision_gjk_support import _discrete, _support_neg
from kinedyn.engine.types import MINVAL

# ---- GJK distance sub-algorithm (Montanari et al. 2017) ------------------------------------------


@kernel
def _project_origin_plane(a, i, b, j, c, k):
    """Origin projected on the plane through a[i], b[j], c[k] (projectOriginPlane); returns
    (failed, p0, p1, p2)."""
    v10, v11, v12 = a[i, 0], a[i, 1], a[i, 2]
    v20, v21, v22 = b[j, 0], b[j, 1], b[j, 2]
    v30, v31, v32 = c[k, 0], c[k, 1], c[k, 2]
    d21 = (v20 - v10, v21 - v11, v22 - v12)
    d31 = (v30 - v10, v31 - v11, v32 - v12)
    d32 = (v30 - v20, v31 - v21, v32 - v22)
    n = _cross(d32[0], d32[1], d32[2], d21[0], d21[1], d21[2])
    nv = _dot(n[0], n[1], n[2], v20, v21, v22)
    nn = _dot(n[0], n[1], n[2], n[0], n[1], n[2])
    if nn == 0:
        return True, 0.0, 0.0, 0.0
    if nv != 0 and nn > MINVAL:
        s = nv / nn
        return False, n[0] * s, n[1] * s, n[2] * s
    n = _cross(d21[0], d21[1], d21[2], d31[0], d31[1], d31[2])
    nv = _dot(n[0], n[1], n[2], v10, v11, v12)
    nn = _dot(n[0], n[1], n[2], n[0], n[1], n[2])
    if nn == 0:
        return True, 0.0, 0.0, 0.0
    if nv != 0 and nn > MINVAL:
        s = nv / nn
        return False, n[0] * s, n[1] * s, n[2] * s
    n = _cross(d31[0], d31[1], d31[2], d32[0], d32[1], d32[2])
    nv = _dot(n[0], n[1], n[2], v30, v31, v32)
    nn = _dot(n[0], n[1], n[2], n[0], n[1], n[2])
    if nn == 0:   # MuJoCo 4.0 tests the third normal too (the 3.12 source divides by it)
        return True, 0.0, 0.0, 0.0
    s = nv / nn
    return False, n[0] * s, n[1] * s, n[2] * s


@kernel
def _s1d(s, i, j):
    """Barycentric coordinates of the point of segment s[i] s[j] closest to the origin (S1D).

    As MuJoCo 4.0's S1D (read off the 4.0 binary, unlike the 3.12 source): a segment shorter
    than 1e-15 is its end s[j]; a projection beyond s[i] (the sign test on s[i]'s side fails
    alone) gives s[i], not s[j]."""
    d0 = s[j, 0] - s[i, 0]
    d1 = s[j, 1] - s[i, 1]
    d2 = s[j, 2] - s[i, 2]
    dd = _dot(d0, d1, d2, d0, d1, d2)
    if dd < MINVAL2:
        return 0.0, 1.0
    scl = -_dot(s[j, 0], s[j, 1], s[j, 2], d0, d1, d2) / dd
    p = (s[j, 0] + scl * d0, s[j, 1] + scl * d1, s[j, 2] + scl * d2)
    mu_max = s[i, 0] - s[j, 0]
    index = 0
    mu = s[i, 1] - s[j, 1]
    if abs(mu) >= abs(mu_max):
        mu_max = mu
        index = 1
    mu = s[i, 2] - s[j, 2]
    if abs(mu) >= abs(mu_max):
        mu_max = mu
        index = 2
    c1 = p[index] - s[j, index]
    c2 = s[i, index] - p[index]
    if _same_sign(mu_max, c1) == 0:
        return 0.0, 1.0
    if _same_sign(mu_max, c2) == 0:
        return 1.0, 0.0
    return c1 / mu_max, c2 / mu_max


@kernel
def _lincomb_dist2(s, idx0, idx1, idx2, l0, l1, l2, n):
    """|sum_k l_k s[idx_k]|^2 for n = 2 or 3 terms, in lincomb's order."""
    if n == 2:
        x0 = l0 * s[idx0, 0] + l1 * s[idx1, 0]
        x1 = l0 * s[idx0, 1] + l1 * s[idx1, 1]
        x2 = l0 * s[idx0, 2] + l1 * s[idx1, 2]
    else:
        x0 = l0 * s[idx0, 0] + l1 * s[idx1, 0] + l2 * s[idx2, 0]
        x1 = l0 * s[idx0, 1] + l1 * s[idx1, 1] + l2 * s[idx2, 1]
        x2 = l0 * s[idx0, 2] + l1 * s[idx1, 2] + l2 * s[idx2, 2]
    return x0 * x0 + x1 * x1 + x2 * x2


@kernel
def _triangle_cofactors(v, a, b, c, p0, p1, p2):
    """The part S2D and triAffineCoord share, for the triangle v[a] v[b] v[c] and a point p in
    its plane: of the minors M_14, M_24, M_34 of [[v1 v2 v3], [1 1 1]] (the components of the
    edge cross product (v2 - v1) x (v3 - v1)) the largest in magnitude (M_max: the coordinate
    plane the triangle projects on best, dropping one axis), and the cofactors C31, C32, C33
    there (signed areas of (p, v2, v3), (p, v3, v1), (p, v1, v2) in the projection, from the
    vertices taken relative to p). The barycentric coordinates of p are C3i over their sum.
    MuJoCo 4.0's arithmetic, read off the 4.0 binary (the 3.12 source expands the minors and
    areas in absolute coordinates and divides by M_max). Returns (M_max, C31, C32, C33)."""
    a0 = v[b, 0] - v[a, 0]
    a1 = v[b, 1] - v[a, 1]
    a2 = v[b, 2] - v[a, 2]
    b0 = v[c, 0] - v[a, 0]
    b1 = v[c, 1] - v[a, 1]
    b2 = v[c, 2] - v[a, 2]
    m14 = a1 * b2 - a2 * b1
    m24 = a0 * b2 - a2 * b0
    m34 = a0 * b1 - a1 * b0
    mu1 = abs(m14)
    mu2 = abs(m24)
    mu3 = abs(m34)
    p = (p0, p1, p2)
    if mu1 >= mu2 and mu1 >= mu3:
        m_max = m14
        x, y = 1, 2
    elif mu2 >= mu3:
        m_max = m24
        x, y = 0, 2
    else:
        m_max = m34
        x, y = 0, 1
    u1x = v[a, x] - p[x]
    u1y = v[a, y] - p[y]
    u2x = v[b, x] - p[x]
    u2y = v[b, y] - p[y]
    u3x = v[c, x] - p[x]
    u3y = v[c, y] - p[y]
    c31 = u2x * u3y - u3x * u2y
    c32 = u3x * u1y - u1x * u3y
    c33 = u1x * u2y - u2x * u1y
    return m_max, c31, c32, c33


@kernel
def _s2d(s, i, j, k):
    """Barycentric coordinates of the point of triangle s[i] s[j] s[k] closest to the origin
    (S2D). As MuJoCo 4.0's (read off the 4.0 binary; the 3.12 source differs): the cofactors of
    _triangle_cofactors over their sum, and a degenerate triangle (no projection) tries all
    three edges."""
    failed, p0, p1, p2 = _project_origin_plane(s, i, s, j, s, k)
    c1 = 0
    c2 = 0
    c3 = 0
    if not failed:
        m_max, c31, c32, c33 = _triangle_cofactors(s, i, j, k, p0, p1, p2)
        c1 = _same_sign(m_max, c31)
        c2 = _same_sign(m_max, c32)
        c3 = _same_sign(m_max, c33)
        if c1 != 0 and c2 != 0 and c3 != 0:
            den = c31 + c32 + c33
            return c31 / den, c32 / den, c33 / den
    dmin = MAX_LIMIT
    l0 = 0.0
    l1 = 0.0
    l2 = 0.0
    if c1 == 0:
        a, b = _s1d(s, j, k)
        d = _lincomb_dist2(s, j, k, k, a, b, 0.0, 2)
        l0, l1, l2 = 0.0, a, b
        dmin = d
    if c2 == 0:
        a, b = _s1d(s, i, k)
        d = _lincomb_dist2(s, i, k, k, a, b, 0.0, 2)
        if d < dmin:
            l0, l1, l2 = a, 0.0, b
            dmin = d
    if c3 == 0:
        a, b = _s1d(s, i, j)
        d = _lincomb_dist2(s, i, j, j, a, b, 0.0, 2)
        if d < dmin:
            l0, l1, l2 = a, b, 0.0
    return l0, l1, l2


@kernel
def _s3d(s):
    """Barycentric coordinates of the point of tetrahedron s[0..3] closest to the origin
    (S3D)."""
    c41 = -_det3(s, 1, s, 2, s, 3)
    c42 = _det3(s, 0, s, 2, s, 3)
    c43 = -_det3(s, 0, s, 1, s, 3)
    c44 = _det3(s, 0, s, 1, s, 2)
    m_det = c41 + c42 + c43 + c44
    comp1 = _same_sign(m_det, c41)
    comp2 = _same_sign(m_det, c42)
    comp3 = _same_sign(m_det, c43)
    comp4 = _same_sign(m_det, c44)
    if comp1 != 0 and comp2 != 0 and comp3 != 0 and comp4 != 0:
        return c41 / m_det, c42 / m_det, c43 / m_det, c44 / m_det
    dmin = MAX_LIMIT
    l0 = 0.0
    l1 = 0.0
    l2 = 0.0
    l3 = 0.0
    if comp1 == 0:
        a, b, c = _s2d(s, 1, 2, 3)
        d = _lincomb_dist2(s, 1, 2, 3, a, b, c, 3)
        l0, l1, l2, l3 = 0.0, a, b, c
        dmin = d
    if comp2 == 0:
        a, b, c = _s2d(s, 0, 2, 3)
        d = _lincomb_dist2(s, 0, 2, 3, a, b, c, 3)
        if d < dmin:
            l0, l1, l2, l3 = a, 0.0, b, c
            dmin = d
    if comp3 == 0:
        a, b, c = _s2d(s, 0, 1, 3)
        d = _lincomb_dist2(s, 0, 1, 3, a, b, c, 3)
        if d < dmin:
            l0, l1, l2, l3 = a, b, 0.0, c
            dmin = d
    if comp4 == 0:
        a, b, c = _s2d(s, 0, 1, 2)
        d = _lincomb_dist2(s, 0, 1, 2, a, b, c, 3)
        if d < dmin:
            l0, l1, l2, l3 = a, b, c, 0.0
    return l0, l1, l2, l3


@kernel
def _lincomb(res, r, lam, n, v):
    """res[r] = sum_{k<n} lam[k] v[k] in lincomb's order."""
    for c in range(3):
        if n == 0:
            res[r, c] = 0.0
        elif n == 1:
            res[r, c] = lam[0] * v[0, c]
        elif n == 2:
            res[r, c] = lam[0] * v[0, c] + lam[1] * v[1, c]
        elif n == 3:
            res[r, c] = lam[0] * v[0, c] + lam[1] * v[1, c] + lam[2] * v[2, c]
        else:
            res[r, c] = lam[0] * v[0, c] + lam[1] * v[1, c] + lam[2] * v[2, c] + lam[3] * v[3, c]


# ---- GJK ----------------------------------------------------------------------------------------


@kernel
def gjk(sv, sv1, sv2, sidx, x1, x2, obf, obi, graph, tolerance, kmax, dist_cutoff, work, iwork):
    """GJK (gjk in engine_collision_gjk.c). x1[0], x2[0] hold the initial points (the
    centres) and receive the witness points; sv.. receive the final simplex.

    MuJoCo 4.0's loop, read off the 4.0 binary (its source is not public here; the 3.12
    snapshot differs):

    * no fallback to the intersection test gjkIntersect once a tetrahedron is built;
    * a zero initial direction becomes (1, 0, 0);
    * the separation tests on the lower bound x_k . s_k come first, the Frank-Wolfe gap test
      after them and not on the first iteration; with a distance cutoff a positive lower
      bound marks the geoms separated even when the loop goes on;
    * the next iterate is the origin projected on the simplex's line or plane (lincomb of the
      barycentric coordinates only for a vertex or a degenerate edge/triangle);
    * the stopping tests on |x_k| follow the update: below 1e-15 for a vertex, else below the
      tolerance (1e-15 too when distances are wanted or the geoms are discrete), or |x_k|
      stagnating (from the second iteration);
    * a tetrahedron keeps the previous iterate (distance 0 unless marked separated); the
      final separation test runs for smaller simplices not yet marked separated.

    Returns (dist, nsimplex, separated, nx)."""
    get_dist = dist_cutoff > 0
    n = 0
    k = 0
    lam = work[W_LAM:W_LAM + 4]
    tol2 = tolerance * tolerance
    separated = False
    discrete = _discrete(obf, obi)
    epsilon = 0.0 if discrete else 0.5 * tol2
    min_norm = MINVAL if (discrete or get_dist) else tolerance

    xk0 = x1[0, 0] - x2[0, 0]
    xk1 = x1[0, 1] - x2[0, 1]
    xk2 = x1[0, 2] - x2[0, 2]
    x_norm = math.sqrt(_dot(xk0, xk1, xk2, xk0, xk1, xk2))
    if x_norm < MINVAL:
        xk0, xk1, xk2 = 1.0, 0.0, 0.0
        x_norm = 1.0

    while k < kmax:
        inv = 1 / x_norm
        _support_neg(sv, sv1, sv2, sidx, n, obf, obi, graph, xk0 * inv, xk1 * inv, xk2 * inv)
        sk0 = sv[n, 0]
        sk1 = sv[n, 1]
        sk2 = sv[n, 2]
        lower = _dot(xk0, xk1, xk2, sk0, sk1, sk2)
        if not get_dist:
            if lower > 0:
                return MAX_LIMIT, 0, True, 0
        elif lower > 0:
            separated = True
            if dist_cutoff < MAX_LIMIT and lower >= dist_cutoff * x_norm:
                return MAX_LIMIT, 0, True, 0
        if k != 0 and _dot(xk0, xk1, xk2, xk0 - sk0, xk1 - sk1, xk2 - sk2) < epsilon:
            break

        nn = n + 1
        if nn == 4:
            lam[0], lam[1], lam[2], lam[3] = _s3d(sv)
        elif nn == 3:
            lam[0], lam[1], lam[2] = _s2d(sv, 0, 1, 2)
            lam[3] = 0.0
        elif nn == 2:
            lam[0], lam[1] = _s1d(sv, 0, 1)
            lam[2] = 0.0
            lam[3] = 0.0
        else:
            lam[0] = 1.0
            lam[1] = 0.0
            lam[2] = 0.0
            lam[3] = 0.0

        n = 0
        for i in range(4):
            if lam[i] == 0:
                continue
            if i != n:
                _copy_vertex(sv, sv1, sv2, sidx, n, sv, sv1, sv2, sidx, i)
            lam[n] = lam[i]
            n += 1

        if n < 1:
            return MAX_LIMIT, 0, True, 0

        if n == 4:
            # the origin is enclosed: the iterate is not updated
            if not separated:
                x_norm = 0.0
            break

        if n == 1:
            xk0 = lam[0] * sv[0, 0]
            xk1 = lam[0] * sv[0, 1]
            xk2 = lam[0] * sv[0, 2]
        elif n == 2:
            d0 = sv[1, 0] - sv[0, 0]
            d1 = sv[1, 1] - sv[0, 1]
            d2 = sv[1, 2] - sv[0, 2]
            dd = _dot(d0, d1, d2, d0, d1, d2)
            if dd < MINVAL2:
                xk0 = lam[0] * sv[0, 0] + lam[1] * sv[1, 0]
                xk1 = lam[0] * sv[0, 1] + lam[1] * sv[1, 1]
                xk2 = lam[0] * sv[0, 2] + lam[1] * sv[1, 2]
            else:
                scl = -_dot(sv[1, 0], sv[1, 1], sv[1, 2], d0, d1, d2) / dd
                xk0 = sv[1, 0] + scl * d0
                xk1 = sv[1, 1] + scl * d1
                xk2 = sv[1, 2] + scl * d2
        else:
            failed, p0, p1, p2 = _project_origin_plane(sv, 0, sv, 1, sv, 2)
            if failed:
                xk0 = lam[0] * sv[0, 0] + lam[1] * sv[1, 0] + lam[2] * sv[2, 0]
                xk1 = lam[0] * sv[0, 1] + lam[1] * sv[1, 1] + lam[2] * sv[2, 1]
                xk2 = lam[0] * sv[0, 2] + lam[1] * sv[1, 2] + lam[2] * sv[2, 2]
            else:
                xk0, xk1, xk2 = p0, p1, p2
        x_norm_prev = x_norm
        x_norm = math.sqrt(_dot(xk0, xk1, xk2, xk0, xk1, xk2))
        if x_norm < (MINVAL if n == 1 else min_norm):
            break
        if k != 0 and abs(x_norm - x_norm_prev) < MINVAL:
            break
        k += 1

    if n > 0:
        _lincomb(x1, 0, lam, n, sv1)
        _lincomb(x2, 0, lam, n, sv2)

    # final separation check (GJK may have stopped early)
    if n <= 3 and not separated and x_norm >= MINVAL:
        tmp = work[W_TMP:W_TMP + 3 * 1].reshape((1, 3))
        tmp1 = work[W_TMP1:W_TMP1 + 3 * 1].reshape((1, 3))
        tmp2 = work[W_TMP2:W_TMP2 + 3 * 1].reshape((1, 3))
        tidx = iwork[I_TMPIDX:I_TMPIDX + 2 * 1].reshape((1, 2))
        inv = 1 / x_norm
        _support_neg(tmp, tmp1, tmp2, tidx, 0, obf, obi, graph, xk0 * inv, xk1 * inv, xk2 * inv)
        if _dot(xk0, xk1, xk2, tmp[0, 0], tmp[0, 1], tmp[0, 2]) > 0:
            separated = True

    return x_norm, n, separated, 1


