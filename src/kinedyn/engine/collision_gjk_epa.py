"""EPA (epa in engine_collision_gjk.c, as MuJoCo 4.0 runs it): the starting polytope built from
GJK's simplex (polytope2, polytope3, polytope4), then the expanding polytope to the penetration
depth, its witness points and the face multi-contact starts from.
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk_common import (
    CNT_NEDGE,
    CNT_NFACE,
    CNT_NMAP,
    CNT_NVERT,
    EPA_P2_NONCONVEX,
    EPA_P3_BAD_NORMAL,
    EPA_P3_INVALID_V4,
    EPA_P3_INVALID_V5,
    EPA_P3_MISSING_ORIGIN,
    EPA_P3_ORIGIN_ON_FACE,
    EPA_P4_MISSING_ORIGIN,
    EPA_SUCCESS,
    MAX_LIMIT,
    MINDIST2,
    MINEPATOL,
    OBI_VERTEX,
    P3_TO_P2,
    _copy_vertex,
    _cross,
    _det3t,
    _div,
    _dot,
)
from kinedyn.engine.collision_gjk_distance import _project_origin_plane, _triangle_cofactors
from kinedyn.engine.collision_gjk_support import _discrete, _inflated_support
from kinedyn.engine.types import MINVAL

# ---- EPA polytope ---------------------------------------------------------------------------------


@kernel
def _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, v1, v2, v3, adj1, adj2, adj3):
    """Append a face (attachFace); returns its squared distance to the origin (0 if the
    projection failed)."""
    f = cnt[CNT_NFACE]
    cnt[CNT_NFACE] += 1
    fverts[f, 0] = v1
    fverts[f, 1] = v2
    fverts[f, 2] = v3
    fadj[f, 0] = adj1
    fadj[f, 1] = adj2
    fadj[f, 2] = adj3
    failed, p0, p1, p2 = _project_origin_plane(pv, v3, pv, v2, pv, v1)
    if failed:
        return 0.0
    o0 = pv[v1, 0] - center[0]
    o1 = pv[v1, 1] - center[1]
    o2 = pv[v1, 2] - center[2]
    if _dot(p0, p1, p2, o0, o1, o2) < 0:
        p0 = -p0
        p1 = -p1
        p2 = -p2
    fv[f, 0] = p0
    fv[f, 1] = p1
    fv[f, 2] = p2
    fdist2[f] = _dot(p0, p1, p2, p0, p1, p2)
    findex[f] = -1
    return fdist2[f]


@kernel
def _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, d0, d1, d2, dnorm):
    """Append the support vertex in direction d (epaSupport); returns its index."""
    dir0, dir1, dir2 = 1.0, 0.0, 0.0
    n0, n1, n2 = -1.0, 0.0, 0.0
    if dnorm > MINVAL:
        dir0 = d0 / dnorm
        dir1 = d1 / dnorm
        dir2 = d2 / dnorm
        n0, n1, n2 = -dir0, -dir1, -dir2
    i = cnt[CNT_NVERT]
    cnt[CNT_NVERT] += 1
    _inflated_support(pv1, i, obf, obi, graph, 0, dir0, dir1, dir2)
    _inflated_support(pv2, i, obf, obi, graph, 1, n0, n1, n2)
    for c in range(3):
        pv[i, c] = pv1[i, c] - pv2[i, c]
    pidx[i, 0] = obi[0, OBI_VERTEX]
    pidx[i, 1] = obi[1, OBI_VERTEX]
    return i


@kernel
def _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, j):
    i = cnt[CNT_NVERT]
    cnt[CNT_NVERT] += 1
    _copy_vertex(pv, pv1, pv2, pidx, i, sv, sv1, sv2, sidx, j)
    return i


@kernel
def _same_side(p, a, b, c, d):
    """sameSide: the origin and p[d] on the same side of the plane p[a] p[b] p[c]."""
    d1 = (p[b, 0] - p[a, 0], p[b, 1] - p[a, 1], p[b, 2] - p[a, 2])
    d2 = (p[c, 0] - p[a, 0], p[c, 1] - p[a, 1], p[c, 2] - p[a, 2])
    n = _cross(d1[0], d1[1], d1[2], d2[0], d2[1], d2[2])
    dot1 = _dot(n[0], n[1], n[2], p[d, 0] - p[a, 0], p[d, 1] - p[a, 1], p[d, 2] - p[a, 2])
    dot2 = _dot(n[0], n[1], n[2], p[a, 0] * -1, p[a, 1] * -1, p[a, 2] * -1)
    if dot1 > 0 and dot2 > 0:
        return True
    if dot1 < 0 and dot2 < 0:
        return True
    return False


@kernel
def _test_tetra(p, a, b, c, d):
    """testTetra: the origin inside the tetrahedron p[a] p[b] p[c] p[d]."""
    return (_same_side(p, a, b, c, d) and _same_side(p, b, c, d, a)
            and _same_side(p, c, d, a, b) and _same_side(p, d, a, b, c))


@kernel
def _tri_affine_coord(v, a, b, c, p0, p1, p2):
    """Affine coordinates of p on the triangle v[a] v[b] v[c] (triAffineCoord)."""
    m_max, c31, c32, c33 = _triangle_cofactors(v, a, b, c, p0, p1, p2)
    den = c31 + c32 + c33
    return _div(c31, den), _div(c32, den), _div(c33, den)


@kernel
def _tri_point_intersect(v, a, b, c, w):
    """triPointIntersect: the point v[w] lies on the triangle v[a] v[b] v[c]."""
    l0, l1, l2 = _tri_affine_coord(v, a, b, c, v[w, 0], v[w, 1], v[w, 2])
    if l0 < 0 or l1 < 0 or l2 < 0:
        return False
    e0 = v[a, 0] * l0 + v[b, 0] * l1 + v[c, 0] * l2 - v[w, 0]
    e1 = v[a, 1] * l0 + v[b, 1] * l1 + v[c, 1] * l2 - v[w, 1]
    e2 = v[a, 2] * l0 + v[b, 2] * l1 + v[c, 2] * l2 - v[w, 2]
    return math.sqrt(e0 * e0 + e1 * e1 + e2 * e2) < MINVAL


@kernel
def _ray_triangle(v, a, b, c, d, e):
    """rayTriangle: does the ray v[a] v[b] cross the triangle v[c] v[d] v[e]."""
    d12 = (v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2])
    d13 = (v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2])
    d14 = (v[d, 0] - v[a, 0], v[d, 1] - v[a, 1], v[d, 2] - v[a, 2])
    d15 = (v[e, 0] - v[a, 0], v[e, 1] - v[a, 1], v[e, 2] - v[a, 2])
    vol1 = _det3t(d13, d14, d12)
    vol2 = _det3t(d14, d15, d12)
    vol3 = _det3t(d15, d13, d12)
    if vol1 >= 0 and vol2 >= 0 and vol3 >= 0:
        return 1
    if vol1 <= 0 and vol2 <= 0 and vol3 <= 0:
        return -1
    return 0


@kernel
def _populate_map(pmap, findex, cnt, nf):
    for i in range(nf):
        pmap[i] = i
        findex[i] = i
    cnt[CNT_NMAP] = nf


@kernel
def _recover_hexa(i0, i1, i2, i3, i4, vol1, vol2, vol3):
    """recoverHexa (MuJoCo 4.0, read off its binary): when the segment v4 v5 misses the
    triangle v1 v2 v3 (vertex indices i0..i4), relabel the five vertices so that it crosses
    one, from the signs of rayTriangle's volumes. Returns (found, the five indices); when no
    relabelling works, the first, second, fourth and fifth make a tetrahedron that drops a
    vertex by the smallest volume."""
    c = -MINVAL
    if vol1 > 0 and vol2 < c and vol3 < c:
        return True, i2, i4, i3, i0, i1
    if vol2 > 0 and vol1 < c and vol3 < c:
        return True, i0, i4, i3, i1, i2
    if vol2 < c and vol1 < c and vol3 > 0:
        return True, i1, i4, i3, i2, i0
    if vol2 >= vol1 and vol3 >= vol1:
        return False, i0, i1, i2, i3, i4
    if vol1 >= vol2 and vol3 >= vol2:
        return False, i1, i2, i2, i3, i4
    return False, i2, i0, i2, i3, i4


@kernel
def _origin_on_edge(pv, a, b):
    """Whether the origin lies on segment pv[a] pv[b] (originOnEdge, MuJoCo 4.0, read off the
    binary): the ends on opposite sides of it, and its closest point on the line within 1e-15."""
    if not 0.0 > _dot(pv[a, 0], pv[a, 1], pv[a, 2], pv[b, 0], pv[b, 1], pv[b, 2]):
        return False
    e0 = pv[b, 0] - pv[a, 0]
    e1 = pv[b, 1] - pv[a, 1]
    e2 = pv[b, 2] - pv[a, 2]
    len2 = e0 * e0 + e1 * e1 + e2 * e2
    if 1e-30 > len2:
        return False
    t = -_dot(pv[b, 0], pv[b, 1], pv[b, 2], e0, e1, e2) / len2
    p0 = t * e0 + pv[b, 0]
    p1 = t * e1 + pv[b, 1]
    p2 = t * e2 + pv[b, 2]
    return 1e-30 > p0 * p0 + p1 * p1 + p2 * p2


@kernel
def _replace_simplex2(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, a, b):
    """replaceSimplex2: the simplex becomes the polytope's edge a b; the polytope is emptied."""
    _copy_vertex(sv, sv1, sv2, sidx, 0, pv, pv1, pv2, pidx, a)
    _copy_vertex(sv, sv1, sv2, sidx, 1, pv, pv1, pv2, pidx, b)
    cnt[CNT_NVERT] = 0
    cnt[CNT_NFACE] = 0
    cnt[CNT_NMAP] = 0


@kernel
def _polytope3(sv, sv1, sv2, sidx, dist0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex,
               pmap, cnt, center, obf, obi, graph, tolerance, fallback):
    """Initial polytope from a triangle (polytope3); returns an EPA status (0 = success).

    MuJoCo 4.0's (read off the 4.0 binary; the 3.12 source differs): the supports v4, v5 along
    both normals must lie beyond the triangle's plane; if the segment v4 v5 misses the triangle
    the five vertices are relabelled (recoverHexa) or, failing that, four of them make a
    tetrahedron; the centre is the mean of the polytope's vertices; all faces are attached
    before the origin-on-face test; the origin must be inside every face's plane unless the
    face is within the tolerance. With the origin on a face, 4.0 looks for it on an edge of the
    triangle (when called from ccd, ``fallback``): then the simplex becomes that edge and
    P3_TO_P2 tells the caller to start again from polytope2 (found in the 4.0 binary; no
    measured pose reaches it)."""
    v1i = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 0)
    v2i = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 1)
    v3i = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 2)
    d1 = (pv[v2i, 0] - pv[v1i, 0], pv[v2i, 1] - pv[v1i, 1], pv[v2i, 2] - pv[v1i, 2])
    d2 = (pv[v3i, 0] - pv[v1i, 0], pv[v3i, 1] - pv[v1i, 1], pv[v3i, 2] - pv[v1i, 2])
    n = _cross(d1[0], d1[1], d1[2], d2[0], d2[1], d2[2])
    n_norm = math.sqrt(_dot(n[0], n[1], n[2], n[0], n[1], n[2]))
    if n_norm < MINVAL:
        return EPA_P3_BAD_NORMAL
    v5i = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, n[0] * -1, n[1] * -1, n[2] * -1, n_norm)
    v4i = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, n[0], n[1], n[2], n_norm)
    if _tri_point_intersect(pv, v1i, v2i, v3i, v4i):
        return EPA_P3_INVALID_V4
    if _tri_point_intersect(pv, v1i, v2i, v3i, v5i):
        return EPA_P3_INVALID_V5
    eps = n_norm * MINVAL
    if eps > _dot(n[0], n[1], n[2], pv[v4i, 0] - pv[v1i, 0], pv[v4i, 1] - pv[v1i, 1],
                  pv[v4i, 2] - pv[v1i, 2]):
        return EPA_P3_ORIGIN_ON_FACE
    if eps > _dot(n[0] * -1, n[1] * -1, n[2] * -1, pv[v5i, 0] - pv[v1i, 0], pv[v5i, 1] - pv[v1i, 1],
                  pv[v5i, 2] - pv[v1i, 2]):
        return EPA_P3_ORIGIN_ON_FACE
    # rayTriangle(v4, v5, v1, v2, v3) with its volumes
    e12 = (pv[v5i, 0] - pv[v4i, 0], pv[v5i, 1] - pv[v4i, 1], pv[v5i, 2] - pv[v4i, 2])
    e13 = (pv[v1i, 0] - pv[v4i, 0], pv[v1i, 1] - pv[v4i, 1], pv[v1i, 2] - pv[v4i, 2])
    e14 = (pv[v2i, 0] - pv[v4i, 0], pv[v2i, 1] - pv[v4i, 1], pv[v2i, 2] - pv[v4i, 2])
    e15 = (pv[v3i, 0] - pv[v4i, 0], pv[v3i, 1] - pv[v4i, 1], pv[v3i, 2] - pv[v4i, 2])
    vol1 = _det3t(e13, e14, e12)
    vol2 = _det3t(e14, e15, e12)
    vol3 = _det3t(e15, e13, e12)
    hexa = ((vol1 >= 0 and vol2 >= 0 and vol3 >= 0) or (vol1 <= 0 and vol2 <= 0 and vol3 <= 0))
    a, b, c, d, e = v1i, v2i, v3i, v4i, v5i
    if not hexa:
        hexa, a, b, c, d, e = _recover_hexa(v1i, v2i, v3i, v4i, v5i, vol1, vol2, vol3)
    f0 = f1 = f2 = f3 = f4 = f5 = MAX_LIMIT
    if hexa:
        for q in range(3):
            center[q] = ((((pv[a, q] + pv[b, q]) + pv[c, q]) + pv[d, q]) + pv[e, q]) * 0.2
        f0 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, d, a, b, 1, 3, 2)
        f1 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, d, c, a, 2, 4, 0)
        f2 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, d, b, c, 0, 5, 1)
        f3 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, e, b, a, 5, 0, 4)
        f4 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, e, a, c, 3, 1, 5)
        f5 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, e, c, b, 4, 2, 3)
    else:
        for q in range(3):
            center[q] = (((pv[a, q] + pv[b, q]) + pv[d, q]) + pv[e, q]) * 0.25
        f0 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, a, b, d, 1, 3, 2)
        f1 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, a, e, b, 2, 3, 0)
        f2 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, a, d, e, 0, 3, 1)
        f3 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, e, d, b, 2, 0, 1)
    if (f0 < MINDIST2 or f1 < MINDIST2 or f2 < MINDIST2 or f3 < MINDIST2 or f4 < MINDIST2
            or f5 < MINDIST2):
        if fallback:
            for k in range(3):
                ea = v1i if k == 0 else (v2i if k == 1 else v3i)
                eb = v2i if k == 0 else (v3i if k == 1 else v1i)
                if _origin_on_edge(pv, ea, eb):
                    _replace_simplex2(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, ea, eb)
                    return P3_TO_P2
        return EPA_P3_ORIGIN_ON_FACE
    tol2 = tolerance * tolerance
    if hexa:
        if not _same_side(pv, d, a, b, c) and f0 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, d, c, a, b) and f1 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, d, b, c, a) and f2 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, e, b, a, c) and f3 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, e, a, c, b) and f4 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, e, c, b, a) and f5 >= tol2:
            return EPA_P3_MISSING_ORIGIN
    else:
        if not _same_side(pv, a, b, d, e) and f0 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, a, e, b, d) and f1 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, a, d, e, b) and f2 >= tol2:
            return EPA_P3_MISSING_ORIGIN
        if not _same_side(pv, e, d, b, a) and f3 >= tol2:
            return EPA_P3_MISSING_ORIGIN
    _populate_map(pmap, findex, cnt, cnt[CNT_NFACE])
    return EPA_SUCCESS


@kernel
def _replace_simplex3(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, a, b, c):
    """replaceSimplex3: the simplex becomes the polytope's triangle a b c; the polytope is
    emptied."""
    _copy_vertex(sv, sv1, sv2, sidx, 0, pv, pv1, pv2, pidx, a)
    _copy_vertex(sv, sv1, sv2, sidx, 1, pv, pv1, pv2, pidx, b)
    _copy_vertex(sv, sv1, sv2, sidx, 2, pv, pv1, pv2, pidx, c)
    cnt[CNT_NVERT] = 0
    cnt[CNT_NFACE] = 0
    cnt[CNT_NMAP] = 0


@kernel
def _polytope2(sv, sv1, sv2, sidx, dist0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex,
               pmap, cnt, center, obf, obi, graph, tolerance):
    """Initial polytope from a segment (polytope2): a hexahedron around it."""
    for q in range(3):
        center[q] = sv[0, q] + sv[1, q]
        center[q] = center[q] * 0.5
    diff = (sv[1, 0] - sv[0, 0], sv[1, 1] - sv[0, 1], sv[1, 2] - sv[0, 2])
    value = MAX_LIMIT
    index = 0
    for i in range(3):
        if abs(diff[i]) < value:
            value = abs(diff[i])
            index = i
    e0 = 1.0 if index == 0 else 0.0
    e1 = 1.0 if index == 1 else 0.0
    e2 = 1.0 if index == 2 else 0.0
    d1 = _cross(e0, e1, e2, diff[0], diff[1], diff[2])
    # rotation by 120 degrees about diff (rotmat)
    nrm = math.sqrt(_dot(diff[0], diff[1], diff[2], diff[0], diff[1], diff[2]))
    u1 = diff[0] / nrm
    u2 = diff[1] / nrm
    u3 = diff[2] / nrm
    sn = 0.86602540378
    cs = -0.5
    r0 = cs + u1 * u1 * (1 - cs)
    r1 = u1 * u2 * (1 - cs) - u3 * sn
    r2 = u1 * u3 * (1 - cs) + u2 * sn
    r3 = u2 * u1 * (1 - cs) + u3 * sn
    r4 = cs + u2 * u2 * (1 - cs)
    r5 = u2 * u3 * (1 - cs) - u1 * sn
    r6 = u1 * u3 * (1 - cs) - u2 * sn
    r7 = u2 * u3 * (1 - cs) + u1 * sn
    r8 = cs + u3 * u3 * (1 - cs)
    d2 = (r0 * d1[0] + r1 * d1[1] + r2 * d1[2],
          r3 * d1[0] + r4 * d1[1] + r5 * d1[2],
          r6 * d1[0] + r7 * d1[1] + r8 * d1[2])
    d3 = (r0 * d2[0] + r1 * d2[1] + r2 * d2[2],
          r3 * d2[0] + r4 * d2[1] + r5 * d2[2],
          r6 * d2[0] + r7 * d2[1] + r8 * d2[2])
    v1i = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 0)
    v2i = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 1)
    v3i = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, d1[0], d1[1], d1[2],
                       math.sqrt(_dot(d1[0], d1[1], d1[2], d1[0], d1[1], d1[2])))
    v4i = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, d2[0], d2[1], d2[2],
                       math.sqrt(_dot(d2[0], d2[1], d2[2], d2[0], d2[1], d2[2])))
    v5i = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, d3[0], d3[1], d3[2],
                       math.sqrt(_dot(d3[0], d3[1], d3[2], d3[0], d3[1], d3[2])))
    faces = ((v1i, v3i, v4i, 1, 3, 2), (v1i, v5i, v3i, 2, 4, 0), (v1i, v4i, v5i, 0, 5, 1),
             (v2i, v4i, v3i, 5, 0, 4), (v2i, v3i, v5i, 3, 1, 5), (v2i, v5i, v4i, 4, 2, 3))
    for f in faces:
        if _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center,
                        f[0], f[1], f[2], f[3], f[4], f[5]) < MINDIST2:
            _replace_simplex3(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, f[0], f[1], f[2])
            return _polytope3(sv, sv1, sv2, sidx, dist0, pv, pv1, pv2, pidx, fverts, fadj, fv,
                              fdist2, findex, pmap, cnt, center, obf, obi, graph, tolerance, False)
    if _ray_triangle(pv, v1i, v2i, v3i, v4i, v5i) == 0:
        return EPA_P2_NONCONVEX
    _populate_map(pmap, findex, cnt, 6)
    return EPA_SUCCESS


@kernel
def _polytope4(sv, sv1, sv2, sidx, dist0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex,
               pmap, cnt, center, obf, obi, graph, tolerance):
    """Initial polytope from GJK's tetrahedron (polytope4)."""
    v1 = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 0)
    v2 = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 1)
    v3 = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 2)
    v4 = _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, 3)
    for q in range(3):
        center[q] = pv[v1, q] + pv[v2, q]
        center[q] = center[q] + pv[v3, q]
        center[q] = center[q] + pv[v4, q]
        center[q] = center[q] * 0.25
    faces = ((v1, v2, v3, 1, 3, 2), (v1, v4, v2, 2, 3, 0), (v1, v3, v4, 0, 3, 1),
             (v4, v3, v2, 2, 0, 1))
    for f in faces:
        if _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center,
                        f[0], f[1], f[2], f[3], f[4], f[5]) < MINDIST2:
            _replace_simplex3(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, f[0], f[1], f[2])
            return _polytope3(sv, sv1, sv2, sidx, dist0, pv, pv1, pv2, pidx, fverts, fadj, fv,
                              fdist2, findex, pmap, cnt, center, obf, obi, graph, tolerance, True)
    if not _test_tetra(pv, v1, v2, v3, v4):
        return EPA_P4_MISSING_ORIGIN
    _populate_map(pmap, findex, cnt, 4)
    return EPA_SUCCESS


@kernel
def _delete_face(pmap, findex, cnt, f):
    """deleteFace: remove face f from the map and mark it deleted (index -2)."""
    if findex[f] >= 0:
        cnt[CNT_NMAP] -= 1
        last = pmap[cnt[CNT_NMAP]]
        pmap[findex[f]] = last
        findex[last] = findex[f]
    findex[f] = -2


@kernel
def _get_edge(fverts, f, vertex):
    if fverts[f, 0] == vertex:
        return 0
    if fverts[f, 1] == vertex:
        return 1
    return 2


@kernel
def _visible(pv, fv, fdist2, w, f):
    """Whether new vertex w sees face f (horizonRec's test)."""
    return (_dot(fv[f, 0], fv[f, 1], fv[f, 2], pv[w, 0], pv[w, 1], pv[w, 2]) - fdist2[f]) > MINVAL


@kernel
def _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge, hstack, w, f, e):
    """horizonRec without recursion: if w sees face f (entered through its edge e), delete it
    and walk on over its other two edges, depth first, recording the horizon edges (those
    whose neighbour w does not see) in MuJoCo's order; returns 1 if f was visible.

    MuJoCo recurses; Numba cannot compile a recursive kernel inside the handle entries, so the
    recursion's frames (face, entry edge, next edge offset k) live in ``hstack`` (3 ints each;
    at most one frame per face)."""
    if not _visible(pv, fv, fdist2, w, f):
        return 0
    _delete_face(pmap, findex, cnt, f)
    top = 0
    hstack[0], hstack[1], hstack[2] = f, e, 1
    while top >= 0:
        g, ge, k = hstack[3 * top], hstack[3 * top + 1], hstack[3 * top + 2]
        if k > 2:
            top -= 1  # this face's two edges are done: return to its caller
            continue
        hstack[3 * top + 2] = k + 1
        i = (ge + k) % 3
        adj = fadj[g, i]
        if findex[adj] > -2:
            adj_edge = _get_edge(fverts, adj, fverts[g, (i + 1) % 3])
            if _visible(pv, fv, fdist2, w, adj):
                _delete_face(pmap, findex, cnt, adj)
                top += 1
                hstack[3 * top], hstack[3 * top + 1], hstack[3 * top + 2] = adj, adj_edge, 1
            else:
                hedge[cnt[CNT_NEDGE]] = adj_edge
                hidx[cnt[CNT_NEDGE]] = adj
                cnt[CNT_NEDGE] += 1
    return 1


@kernel
def _horizon(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge, hstack, w, f):
    """horizon: the edges of the region of faces visible from w, starting at face f."""
    _delete_face(pmap, findex, cnt, f)
    va = fverts[f, 0]
    vb = fverts[f, 1]
    vc = fverts[f, 2]
    adj = fadj[f, 0]
    adj_edge = _get_edge(fverts, adj, vb)
    if _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge, hstack, w, adj,
                     adj_edge) == 0:
        hedge[cnt[CNT_NEDGE]] = adj_edge
        hidx[cnt[CNT_NEDGE]] = adj
        cnt[CNT_NEDGE] += 1
    adj = fadj[f, 1]
    adj_edge = _get_edge(fverts, adj, vc)
    if findex[adj] > -2 and _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge,
                                          hstack, w, adj, adj_edge) == 0:
        hedge[cnt[CNT_NEDGE]] = adj_edge
        hidx[cnt[CNT_NEDGE]] = adj
        cnt[CNT_NEDGE] += 1
    adj = fadj[f, 2]
    adj_edge = _get_edge(fverts, adj, va)
    if findex[adj] > -2 and _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge,
                                          hstack, w, adj, adj_edge) == 0:
        hedge[cnt[CNT_NEDGE]] = adj_edge
        hidx[cnt[CNT_NEDGE]] = adj
        cnt[CNT_NEDGE] += 1


@kernel
def _epa_witness(pv, pv1, pv2, fverts, fv, fdist2, f, x1, x2):
    """Witness points of face f (epaWitness); returns minus the face's distance."""
    a = fverts[f, 0]
    b = fverts[f, 1]
    c = fverts[f, 2]
    l0, l1, l2 = _tri_affine_coord(pv, a, b, c, fv[f, 0], fv[f, 1], fv[f, 2])
    for q in range(3):
        x1[0, q] = l0 * pv1[a, q] + l1 * pv1[b, q] + l2 * pv1[c, q]
        x2[0, q] = l0 * pv2[a, q] + l1 * pv2[b, q] + l2 * pv2[c, q]
    return -math.sqrt(fdist2[f])


@kernel
def epa(pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex, pmap, cnt, center, hidx, hedge, hstack,
        obf, obi, graph, tolerance_in, max_iterations, x1, x2, dist):
    """Expanding polytope (epa in engine_collision_gjk.c); returns the face found (-1 for
    none) and sets dist[0], x1[0], x2[0]; returns (face, nx)."""
    upper = MAX_LIMIT
    upper2 = MAX_LIMIT
    face = -1
    discrete = _discrete(obf, obi)
    tolerance = MINEPATOL if discrete else tolerance_in
    kmax = max_iterations if max_iterations < 1000 else 1000
    k = 0
    while k < kmax:
        pface = face
        lower2 = MAX_LIMIT
        for i in range(cnt[CNT_NMAP]):
            f = pmap[i]
            if fdist2[f] < lower2:
                face = f
                lower2 = fdist2[f]
        if lower2 > upper2 or face < 0:
            face = pface
            break
        if lower2 <= 0:
            break  # origin on the affine hull of a face (MuJoCo warns)
        lower = math.sqrt(lower2)
        wi = _epa_support(pv, pv1, pv2, pidx, cnt, obf, obi, graph, fv[face, 0], fv[face, 1], fv[face, 2],
                          lower)
        upper_k = _dot(fv[face, 0], fv[face, 1], fv[face, 2], pv[wi, 0], pv[wi, 1], pv[wi, 2]) / lower
        if upper_k < upper:
            upper = upper_k
            upper2 = upper * upper
        # MuJoCo 4.0 compares this iteration's bound, not the best one so far (the 3.12
        # source uses upper - lower): found by fuzzing, it matches 4.0 to 1e-13
        if upper_k - lower < tolerance:
            # MuJoCo 4.0 drops the contact when the first iteration's bound falls short of
            # the lower one by more than the tolerance (the 3.12 source: by 1e-10)
            if k == 0 and upper < lower - tolerance:
                face = -1
            break
        if discrete:
            nverts = cnt[CNT_NVERT] - 1
            i = 0
            while i < nverts:
                if pidx[wi, 0] == pidx[i, 0] and pidx[wi, 1] == pidx[i, 1]:
                    break
                i += 1
            if i != nverts:
                break
        _horizon(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge, hstack, wi, face)
        if cnt[CNT_NEDGE] < 3:
            face = -1
            break
        nfaces = cnt[CNT_NFACE]
        nedges = cnt[CNT_NEDGE]
        if nedges > fverts.shape[0] - cnt[CNT_NFACE]:
            break  # out of memory for faces (MuJoCo warns)
        hzn = hidx[0]
        he = hedge[0]
        v1 = fverts[hzn, he]
        v2 = fverts[hzn, (he + 1) % 3]
        fadj[hzn, he] = nfaces
        d2 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, wi, v2, v1,
                          nfaces + nedges - 1, hzn, nfaces + 1)
        if d2 == 0:
            break   # MuJoCo 4.0 keeps the face found (the 3.12 source drops the contact)
        if d2 >= lower2 and d2 <= upper2:
            m = cnt[CNT_NMAP]
            cnt[CNT_NMAP] += 1
            pmap[m] = cnt[CNT_NFACE] - 1
            findex[cnt[CNT_NFACE] - 1] = m
        bad = False
        for i in range(1, nedges):
            cur = nfaces + i
            nxt = nfaces + (i + 1) % nedges
            hzn = hidx[i]
            he = hedge[i]
            v1 = fverts[hzn, he]
            v2 = fverts[hzn, (he + 1) % 3]
            fadj[hzn, he] = cur
            d2 = _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, wi, v2, v1,
                              cur - 1, hzn, nxt)
            if d2 == 0:
                bad = True
                break
            if d2 >= lower2 and d2 <= upper2:
                m = cnt[CNT_NMAP]
                cnt[CNT_NMAP] += 1
                pmap[m] = cnt[CNT_NFACE] - 1
                findex[cnt[CNT_NFACE] - 1] = m
        cnt[CNT_NEDGE] = 0
        if bad:
            break   # as above: MuJoCo 4.0 ends EPA with the face found
        if cnt[CNT_NMAP] == 0 or face < 0:
            break
        k += 1
    if face >= 0:
        dist[0] = _epa_witness(pv, pv1, pv2, fverts, fv, fdist2, face, x1, x2)
        return face, 1
    dist[0] = 0.0
    return -1, 0


