"""Multi-contact (MuJoCo 4.0's multicontact and polygonClip in engine_collision_gjk.c): from the
features of the EPA face, or of GJK's last simplex, the contacts of aligned faces and edges.
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk_common import (
    EDGE_TOL,
    FACE_TOL,
    MAXCONPAIR,
    OBF_MARGIN,
    OBF_SIZE0,
    OBF_SIZE1,
    OBF_SIZE2,
    OBI_GEOM,
    OBI_TYPE,
    _cross,
    _dot,
    _normalize,
)
from kinedyn.engine.collision_gjk_support import _local_dir
from kinedyn.engine.types import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_MESH, MINVAL

# ---- multi-contact (multicontact and polygon clipping) -----------------------------------------------
#
# The EPA face (or, for contacts from a GJK distance, GJK's last simplex) tells which features
# (vertex, edge, face) of each geom touch; if two faces are (anti-)aligned, or an edge lies in
# a face, the incident polygon is clipped against the reference one and every clipped vertex
# becomes a contact (at most 4: polygonQuad keeps a large quadrilateral). Boxes give their 6
# faces (the 3.12 code, ported); MuJoCo 4.0 adds cylinders and capsules, whose code we do not
# have. Cylinders and capsules, as read off the 4.0 binary: a support point carries the cap it
# lies on as its vertex index, so the EPA face's support points on one cap are a vertex of that
# cap (the cap is the cylinder's face) and on both caps the side; the cylinder's edge is the
# side through the first support point along the axis (geomEdgeNormals), tried against the
# other geom's faces whatever the feature dimensions; a capsule's edge is the line along its
# axis through EPA's witness point on it; a cap is a regular 16-gon from local +x, clockwise
# seen from outside; faces count only if they face the witness direction. See the module
# docstring.

NPOLY_CYL = 16      # vertices of a cylinder cap polygon (MuJoCo 4.0, found by probing)
# cos and sin of the cap vertices' angles as MuJoCo 4.0's table holds them: rounded to 15 decimals
CYL_COS = tuple([round(math.cos(2 * math.pi * j / NPOLY_CYL), 15) for j in range(NPOLY_CYL)])
CYL_SIN = tuple([round(math.sin(2 * math.pi * j / NPOLY_CYL), 15) for j in range(NPOLY_CYL)])


@kernel
def _globalcoord(res, r, obf, k, l0, l1, l2, with_pos):
    """res[r] = mat l (+ pos) (globalcoord)."""
    res[r, 0] = obf[k, 3] * l0 + obf[k, 4] * l1 + obf[k, 5] * l2
    res[r, 1] = obf[k, 6] * l0 + obf[k, 7] * l1 + obf[k, 8] * l2
    res[r, 2] = obf[k, 9] * l0 + obf[k, 10] * l1 + obf[k, 11] * l2
    if with_pos:
        res[r, 0] += obf[k, 0]
        res[r, 1] += obf[k, 1]
        res[r, 2] += obf[k, 2]


@kernel
def _area4(p, a, b, c, d):
    """Area of the quadrilateral p[a] p[b] p[c] p[d]: half the norm of the cross product of its
    diagonals (MuJoCo 4.0's area4, read off the binary; 3.12 summed two triangle crosses, which
    rounds differently and picks another of the many equal-area quadrilaterals of a 16-gon)."""
    return diagonal_area(p[a, 0] - p[c, 0], p[a, 1] - p[c, 1], p[a, 2] - p[c, 2],
                         p[b, 0] - p[d, 0], p[b, 1] - p[d, 1], p[b, 2] - p[d, 2])


@kernel
def diagonal_area(u0, u1, u2, w0, w1, w2):
    """Area of a quadrilateral from its diagonals u = A - C and w = B - D: half the norm of u x w
    (4.0's area4; also its plane-mesh quadrilateral, collision_convex._quad_area)."""
    g0 = u1 * w2 - u2 * w1
    g1 = u2 * w0 - u0 * w2
    g2 = u0 * w1 - u1 * w0
    return 0.5 * math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)


@kernel
def _polygon_quad(p, nvert):
    """Indices of a large-area quadrilateral of polygon p[0:nvert] (polygonQuad)."""
    a = 0
    b = 1
    c = 2
    d = 3
    r0, r1, r2, r3 = a, b, c, d
    m = _area4(p, a, b, c, d)
    while a < nvert:
        while True:
            m_next = _area4(p, a, b, c, (d + 1) % nvert)
            if m_next <= m:
                break
            m = m_next
            d = (d + 1) % nvert
            r0, r1, r2, r3 = a, b, c, d
            while True:
                m_next = _area4(p, a, b, (c + 1) % nvert, d)
                if m_next <= m:
                    break
                m = m_next
                c = (c + 1) % nvert
                r0, r1, r2, r3 = a, b, c, d
            while True:
                m_next = _area4(p, a, (b + 1) % nvert, c, d)
                if m_next <= m:
                    break
                m = m_next
                b = (b + 1) % nvert
                r0, r1, r2, r3 = a, b, c, d
        if b == a:
            b = (b + 1) % nvert
            if c == b:
                c = (c + 1) % nvert
                if d == c:
                    d = (d + 1) % nvert
        a += 1
    return r0, r1, r2, r3


@kernel
def _witness_on_face(x1, x2, i, p, v, face1, n0, n1, n2, d0, d1, d2):
    """Witness pair i from clipped vertex p[v] (witnessOnFace as MuJoCo 4.0 computes it, read off
    the binary): x1 is the vertex moved along n onto the plane of face1 (through face1[0]), x2
    that point moved along d back to the vertex's own plane; returns the distance along d."""
    h = _dot(p[v, 0] - face1[0, 0], p[v, 1] - face1[0, 1], p[v, 2] - face1[0, 2], n0, n1, n2)
    a0 = p[v, 0] - n0 * h
    a1 = p[v, 1] - n1 * h
    a2 = p[v, 2] - n2 * h
    t = _dot(a0 - p[v, 0], a1 - p[v, 1], a2 - p[v, 2], d0, d1, d2)
    x1[i, 0] = a0
    x1[i, 1] = a1
    x1[i, 2] = a2
    x2[i, 0] = a0 - d0 * t
    x2[i, 1] = a1 - d1 * t
    x2[i, 2] = a2 - d2 * t
    return t


@kernel
def _polygon_clip(face1, nface1, face2, nface2, n0, n1, n2, d0, d1, d2, poly_a, poly_b, pn, pd, x1, x2,
                  dist, max_contacts, keep):
    """Clip polygon face2 against the edges of face1 (planes along n), keep the vertices within
    ``keep`` of face1's plane along n, and write the witness pairs (polygonClip as MuJoCo 4.0 has
    it, read off the binary); returns their number (0: keep EPA's contact)."""
    if nface1 < 3:
        return 0
    for i in range(nface1):
        j = i + 1 if i < nface1 - 1 else 0
        # planeNormal: plane through edge (face1[i], face1[j]) perpendicular to the face
        v3 = (face1[i, 0] + n0, face1[i, 1] + n1, face1[i, 2] + n2)
        e1 = (face1[j, 0] - face1[i, 0], face1[j, 1] - face1[i, 1], face1[j, 2] - face1[i, 2])
        e2 = (v3[0] - face1[i, 0], v3[1] - face1[i, 1], v3[2] - face1[i, 2])
        c = _cross(e1[0], e1[1], e1[2], e2[0], e2[1], e2[2])
        c0, c1, c2 = _normalize(c[0], c[1], c[2])
        pn[i, 0] = c0
        pn[i, 1] = c1
        pn[i, 2] = c2
        pd[i] = _dot(c0, c1, c2, face1[i, 0], face1[i, 1], face1[i, 2])
    poly = poly_a
    clipped = poly_b
    npolygon = nface2
    nclipped = 0
    for i in range(nface2):
        for q in range(3):
            poly[i, q] = face2[i, q]
    for e in range(nface1):
        for i in range(npolygon):
            j = i + 1 if i < npolygon - 1 else 0
            pq0 = poly[j, 0] - poly[i, 0]
            pq1 = poly[j, 1] - poly[i, 1]
            pq2 = poly[j, 2] - poly[i, 2]
            h1 = _dot(poly[i, 0] - face1[e, 0], poly[i, 1] - face1[e, 1], poly[i, 2] - face1[e, 2],
                      pn[e, 0], pn[e, 1], pn[e, 2])
            h2 = _dot(poly[j, 0] - face1[e, 0], poly[j, 1] - face1[e, 1], poly[j, 2] - face1[e, 2],
                      pn[e, 0], pn[e, 1], pn[e, 2])
            in1 = h1 > -MINVAL
            in2 = h2 > -MINVAL
            if not in1 and not in2:
                continue
            if in1 and in2:
                for q in range(3):
                    clipped[nclipped, q] = poly[j, q]
                nclipped += 1
                continue
            # MuJoCo 4.0 (read off the binary) crosses at the ratio of the two signed distances
            tmp = h1 - h2
            if tmp != 0.0:
                t = h1 / tmp
                if t >= 0.0 and t <= 1.0:
                    clipped[nclipped, 0] = poly[i, 0] + pq0 * t
                    clipped[nclipped, 1] = poly[i, 1] + pq1 * t
                    clipped[nclipped, 2] = poly[i, 2] + pq2 * t
                    nclipped += 1
            if in2:
                for q in range(3):
                    clipped[nclipped, q] = poly[j, q]
                nclipped += 1
        tmpa = poly
        poly = clipped
        clipped = tmpa
        npolygon = nclipped
        nclipped = 0
    # keep the vertices on the inner side of face1
    m = npolygon
    npolygon = 0
    for i in range(m):
        if _dot(poly[i, 0] - face1[0, 0], poly[i, 1] - face1[0, 1], poly[i, 2] - face1[0, 2],
                n0, n1, n2) <= keep:
            if npolygon != i:
                for q in range(3):
                    poly[npolygon, q] = poly[i, q]
            npolygon += 1
    if npolygon < 1:
        return 0
    if max_contacts < 5 and npolygon > 4:
        # MuJoCo 4.0 lists the four in the order polygonQuad holds them (read off the binary)
        r0, r1, r2, r3 = _polygon_quad(poly, npolygon)
        dist[0] = _witness_on_face(x1, x2, 0, poly, r0, face1, n0, n1, n2, d0, d1, d2)
        dist[1] = _witness_on_face(x1, x2, 1, poly, r1, face1, n0, n1, n2, d0, d1, d2)
        dist[2] = _witness_on_face(x1, x2, 2, poly, r2, face1, n0, n1, n2, d0, d1, d2)
        dist[3] = _witness_on_face(x1, x2, 3, poly, r3, face1, n0, n1, n2, d0, d1, d2)
        return 4
    if nface2 == 2 and npolygon > 2:
        best1 = 0
        best2 = 1
        dd = 0.0
        for i in range(npolygon):
            for j in range(i + 1, npolygon):
                e0 = poly[j, 0] - poly[i, 0]
                e1 = poly[j, 1] - poly[i, 1]
                e2 = poly[j, 2] - poly[i, 2]
                len2 = e0 * e0 + e1 * e1 + e2 * e2   # not d2: that is the witness direction
                if len2 > dd:
                    dd = len2
                    best1 = i
                    best2 = j
        dist[0] = _witness_on_face(x1, x2, 0, poly, best1, face1, n0, n1, n2, d0, d1, d2)
        dist[1] = _witness_on_face(x1, x2, 1, poly, best2, face1, n0, n1, n2, d0, d1, d2)
        return 2
    if npolygon > MAXCONPAIR:
        npolygon = MAXCONPAIR
    for i in range(npolygon):
        dist[i] = _witness_on_face(x1, x2, i, poly, i, face1, n0, n1, n2, d0, d1, d2)
    return npolygon


@kernel
def _box_normals2(nrm, idx, obf, k, d0, d1, d2):
    """A box face whose normal is within FACE_TOL of direction d (boxNormals2)."""
    l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
    s = 1 / math.sqrt(l0 * l0 + l1 * l1 + l2 * l2)
    l0 = l0 * s
    l1 = l1 * s
    l2 = l2 * s
    for i in range(6):
        ax = i // 2
        sg = 1.0 if i % 2 == 0 else -1.0
        f0 = sg if ax == 0 else 0.0
        f1 = sg if ax == 1 else 0.0
        f2 = sg if ax == 2 else 0.0
        if l0 * f0 + l1 * f1 + l2 * f2 > FACE_TOL:
            _globalcoord(nrm, 0, obf, k, f0, f1, f2, False)
            idx[0] = i
            return 1
    return 0


@kernel
def _all3(v1, v2, v3, bit):
    """+1 if the three corners share the + side of an axis (bit), -1 the - side, else 0."""
    on = int((v1 & bit) != 0 and (v2 & bit) != 0 and (v3 & bit) != 0)
    off = int((v1 & bit) == 0 and (v2 & bit) == 0 and (v3 & bit) == 0)
    return on - off


@kernel
def _box_normals(nrm, idx, dim, obf, k, v1, v2, v3, d0, d1, d2):
    """Candidate face normals of a box touching at corners v1, v2, v3 (boxNormals)."""
    if dim == 3:
        x = _all3(v1, v2, v3, 1)
        y = _all3(v1, v2, v3, 2)
        z = _all3(v1, v2, v3, 4)
        _globalcoord(nrm, 0, obf, k, float(x), float(y), float(z), False)
        c = 0
        if x != 0:
            idx[c] = 0
            c += 1
        if y != 0:
            idx[c] = 2
            c += 1
        if z != 0:
            idx[c] = 4
            c += 1
        if x + y + z == -1:
            idx[0] += 1
        if c == 1:
            return 1
        return _box_normals2(nrm, idx, obf, k, d0, d1, d2)
    if dim == 2:
        x = int((v1 & 1) != 0 and (v2 & 1) != 0) - int((v1 & 1) == 0 and (v2 & 1) == 0)
        y = int((v1 & 2) != 0 and (v2 & 2) != 0) - int((v1 & 2) == 0 and (v2 & 2) == 0)
        z = int((v1 & 4) != 0 and (v2 & 4) != 0) - int((v1 & 4) == 0 and (v2 & 4) == 0)
        c = 0
        if x != 0:
            _globalcoord(nrm, 0, obf, k, float(x), 0.0, 0.0, False)
            idx[c] = 0 if x > 0 else 1
            c += 1
        if y != 0:
            _globalcoord(nrm, c, obf, k, 0.0, float(y), 0.0, False)
            idx[c] = 2 if y > 0 else 3
            c += 1
        if z != 0:
            _globalcoord(nrm, c, obf, k, 0.0, 0.0, float(z), False)
            idx[c] = 4 if z > 0 else 5
            c += 1
        # MuJoCo 4.0 (read off the binary): the faces holding both vertices, one or two (3.12
        # wrote z's normal to row 1 and asked boxNormals2 unless there were two)
        if c > 0:
            return c
        return _box_normals2(nrm, idx, obf, k, d0, d1, d2)
    if dim == 1:
        x = 1.0 if (v1 & 1) != 0 else -1.0
        y = 1.0 if (v1 & 2) != 0 else -1.0
        z = 1.0 if (v1 & 4) != 0 else -1.0
        _globalcoord(nrm, 0, obf, k, x, 0.0, 0.0, False)
        _globalcoord(nrm, 1, obf, k, 0.0, y, 0.0, False)
        _globalcoord(nrm, 2, obf, k, 0.0, 0.0, z, False)
        idx[0] = 0 if x > 0 else 1
        idx[1] = 2 if y > 0 else 3
        idx[2] = 4 if z > 0 else 5
        return 3
    return 0


@kernel
def _edge_of_two(nrm, endverts, v):
    """The one edge v[0] -> v[1]: its end and unit direction (the dim 2 case of boxEdgeNormals and
    meshEdgeNormals); returns 1."""
    for q in range(3):
        endverts[0, q] = v[1, q]
    e = _normalize(v[1, 0] - v[0, 0], v[1, 1] - v[0, 1], v[1, 2] - v[0, 2])
    nrm[0, 0], nrm[0, 1], nrm[0, 2] = e
    return 1


@kernel
def _box_edge_normals(nrm, endverts, dim, obf, k, v, v1i):
    """Directions of the box edges at the touching corner or edge (boxEdgeNormals)."""
    if dim == 2:
        return _edge_of_two(nrm, endverts, v)
    if dim == 1:
        x = obf[k, OBF_SIZE0] if (v1i & 1) != 0 else -obf[k, OBF_SIZE0]
        y = obf[k, OBF_SIZE1] if (v1i & 2) != 0 else -obf[k, OBF_SIZE1]
        z = obf[k, OBF_SIZE2] if (v1i & 4) != 0 else -obf[k, OBF_SIZE2]
        _globalcoord(endverts, 0, obf, k, -x, y, z, True)
        _globalcoord(endverts, 1, obf, k, x, -y, z, True)
        _globalcoord(endverts, 2, obf, k, x, y, -z, True)
        for r in range(3):
            e = _normalize(endverts[r, 0] - v[0, 0], endverts[r, 1] - v[0, 1], endverts[r, 2] - v[0, 2])
            nrm[r, 0], nrm[r, 1], nrm[r, 2] = e
        return 3
    return 0


@kernel
def _box_face(face, obf, k, idx):
    """Corners of box face idx in MuJoCo's order (boxFace); returns 4."""
    sx = obf[k, OBF_SIZE0]
    sy = obf[k, OBF_SIZE1]
    sz = obf[k, OBF_SIZE2]
    if idx == 0:
        _globalcoord(face, 0, obf, k, sx, sy, sz, True)
        _globalcoord(face, 1, obf, k, sx, sy, -sz, True)
        _globalcoord(face, 2, obf, k, sx, -sy, -sz, True)
        _globalcoord(face, 3, obf, k, sx, -sy, sz, True)
    elif idx == 1:
        _globalcoord(face, 0, obf, k, -sx, sy, -sz, True)
        _globalcoord(face, 1, obf, k, -sx, sy, sz, True)
        _globalcoord(face, 2, obf, k, -sx, -sy, sz, True)
        _globalcoord(face, 3, obf, k, -sx, -sy, -sz, True)
    elif idx == 2:
        _globalcoord(face, 0, obf, k, -sx, sy, -sz, True)
        _globalcoord(face, 1, obf, k, sx, sy, -sz, True)
        _globalcoord(face, 2, obf, k, sx, sy, sz, True)
        _globalcoord(face, 3, obf, k, -sx, sy, sz, True)
    elif idx == 3:
        _globalcoord(face, 0, obf, k, -sx, -sy, sz, True)
        _globalcoord(face, 1, obf, k, sx, -sy, sz, True)
        _globalcoord(face, 2, obf, k, sx, -sy, -sz, True)
        _globalcoord(face, 3, obf, k, -sx, -sy, -sz, True)
    elif idx == 4:
        _globalcoord(face, 0, obf, k, -sx, sy, sz, True)
        _globalcoord(face, 1, obf, k, sx, sy, sz, True)
        _globalcoord(face, 2, obf, k, sx, -sy, sz, True)
        _globalcoord(face, 3, obf, k, -sx, -sy, sz, True)
    else:
        _globalcoord(face, 0, obf, k, sx, sy, -sz, True)
        _globalcoord(face, 1, obf, k, -sx, sy, -sz, True)
        _globalcoord(face, 2, obf, k, -sx, -sy, -sz, True)
        _globalcoord(face, 3, obf, k, sx, -sy, -sz, True)
    return 4


@kernel
def _cyl_vertex_cap(nrm, idx, dim, obf, k, v):
    """The cap of cylinder k holding its touching rim vertex v (0 top, 1 bottom), when the EPA
    face's support points are all on one cap (dim 1); none for a side segment (dim 2)."""
    if dim != 1:
        return 0
    _globalcoord(nrm, 0, obf, k, 0.0, 0.0, 1.0 if v == 0 else -1.0, False)
    idx[0] = v
    return 1


@kernel
def _cyl_face(face, obf, k, idx):
    """Cap idx (0 top, 1 bottom) of a cylinder as a regular 16-gon, its vertices at multiples of
    22.5 degrees from the local x axis, clockwise seen from outside (found against the binary).
    MuJoCo 4.0 takes the cosines and sines from a table of 15-decimal constants (CYL_COS,
    CYL_SIN), and the top cap's y as -(r sin): the vertices' last bits decide between the many
    equal-area quadrilaterals of _polygon_quad."""
    r = obf[k, OBF_SIZE0]
    for i in range(NPOLY_CYL):
        if idx == 0:
            _globalcoord(face, i, obf, k, r * CYL_COS[i], -(r * CYL_SIN[i]), obf[k, OBF_SIZE1], True)
        else:
            _globalcoord(face, i, obf, k, r * CYL_COS[i], r * CYL_SIN[i], -obf[k, OBF_SIZE1], True)
    return NPOLY_CYL


@kernel
def _side_edge(face, edir, obf, k, w, r, d0, d1, d2):
    """The segment of capsule k's surface through its support point w[r], along the axis over
    the capsule's length (face[0] at -h, face[1] at +h), and the axis into edir[0] (MuJoCo 4.0's
    geomEdgeNormals for a capsule, read off the binary), if direction d is within EDGE_TOL of
    perpendicular to the axis; returns 1 (one edge direction) or 0."""
    l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
    if abs(l2 / math.sqrt(l0 * l0 + l1 * l1 + l2 * l2)) >= EDGE_TOL:
        return 0
    a0 = obf[k, 5]
    a1 = obf[k, 8]
    a2 = obf[k, 11]
    t = _dot(w[r, 0] - obf[k, 0], w[r, 1] - obf[k, 1], w[r, 2] - obf[k, 2], a0, a1, a2)
    lo = -t - obf[k, OBF_SIZE1]
    hi = obf[k, OBF_SIZE1] - t
    face[0, 0] = lo * a0 + w[r, 0]
    face[0, 1] = lo * a1 + w[r, 1]
    face[0, 2] = lo * a2 + w[r, 2]
    face[1, 0] = hi * a0 + w[r, 0]
    face[1, 1] = hi * a1 + w[r, 1]
    face[1, 2] = hi * a2 + w[r, 2]
    edir[0, 0] = a0
    edir[0, 1] = a1
    edir[0, 2] = a2
    return 1


@kernel
def _cyl_side(face, edir, obf, obi, k, w, r, v):
    """The side segment of cylinder k through its support point w[r] on the rim of cap v (0 top,
    1 bottom) into face[0:2], from that point towards the other cap, and its direction (the
    axis, unit by construction) into edir[0]; returns 1 (one edge direction). MuJoCo 4.0's
    geomEdgeNormals for a cylinder (read off the binary): with a margin the support point is
    of the inflated cylinder, and the segment starts at the bare rim instead."""
    sg = -1.0 if v == 0 else 1.0
    edir[0, 0] = sg * obf[k, 5]
    edir[0, 1] = sg * obf[k, 8]
    edir[0, 2] = sg * obf[k, 11]
    if obf[k, OBF_MARGIN] > 0 and obi[k, OBI_GEOM] >= 0:
        l0, l1, _ = _local_dir(obf, k, w[r, 0] - obf[k, 0], w[r, 1] - obf[k, 1], w[r, 2] - obf[k, 2])
        n2 = l0 * l0 + l1 * l1
        s = obf[k, OBF_SIZE0] / math.sqrt(n2) if n2 >= 1e-30 else 0.0
        _globalcoord(face, 0, obf, k, l0 * s, l1 * s, -sg * obf[k, OBF_SIZE1], True)
    else:
        for q in range(3):
            face[0, q] = w[r, q]
    h2 = obf[k, OBF_SIZE1] + obf[k, OBF_SIZE1]
    for q in range(3):
        face[1, q] = h2 * edir[0, q] + face[0, q]
    return 1


@kernel
def _half_margin(obf, obi, k):
    """Half of object k's margin as MuJoCo 4.0's multi-contact counts it: none for a capsule (its
    margin is in its radius) or an object that is not a geom (read off the binary)."""
    if obi[k, OBI_GEOM] < 0 or obi[k, OBI_TYPE] == GEOM_CAPSULE:
        return 0.0
    return 0.5 * obf[k, OBF_MARGIN]


@kernel
def _inflate_all(x1, x2, dist, m, m1, m2, u0, u1, u2):
    """Clipped contacts are measured between the bare faces: move every witness pair out by the
    half margins along the contact normal u (from geom 1 to geom 2) and take the margins off the
    distances (inflate with a direction, MuJoCo 4.0, read off the binary); returns m."""
    if m1 == 0 and m2 == 0:
        return m
    for i in range(m):
        if m1 != 0:
            x1[i, 0] += m1 * u0
            x1[i, 1] += m1 * u1
            x1[i, 2] += m1 * u2
        if m2 != 0:
            x2[i, 0] += -m2 * u0
            x2[i, 1] += -m2 * u1
            x2[i, 2] += -m2 * u2
        dist[i] -= m1 + m2
    return m


@kernel
def _edge_in_face(edge_dirs, nedge, face_normals, nface, w0, w1, w2):
    """The first (edge, face) pair, faces in the outer loop, whose unit edge direction is within
    EDGE_TOL of perpendicular to the face normal (the edge lies in the face, as mjc_multicontact
    tests each way round), among the faces whose normal has a positive dot product (above
    MINVAL) with w (MuJoCo 4.0, read off the binary); (-1, -1) if there is none."""
    for j in range(nface):
        if MINVAL >= _dot(w0, w1, w2, face_normals[j, 0], face_normals[j, 1], face_normals[j, 2]):
            continue
        for i in range(nedge):
            if abs(_dot(edge_dirs[i, 0], edge_dirs[i, 1], edge_dirs[i, 2],
                        face_normals[j, 0], face_normals[j, 1], face_normals[j, 2])) < EDGE_TOL:
                return i, j
    return -1, -1


@kernel
def _mesh_polynum(obi, k, mesh):
    """Hull polygons of object k's mesh."""
    return mesh[5][mesh[0][obi[k, OBI_GEOM]]]


@kernel
def _intersect(res, a, na, b, nb):
    """Up to 2 entries of a[0:na] that are also in b[0:nb], in a's order (intersect)."""
    count = 0
    for i in range(na):
        for j in range(nb):
            if a[i] == b[j]:
                res[count] = a[i]
                count += 1
                if count == 2:
                    return 2
    return count


@kernel
def _mesh_normals(nrm, idx, dim, obf, obi, k, v1, v2, v3, mesh):
    """Normals of the hull polygons of object k's mesh that hold the touching vertices v1, v2,
    v3 (dim of them distinct): the one polygon through 3 vertices, the up to 2 through an edge,
    every one at a vertex (meshNormals)."""
    polynormal, polymapadr, polymapnum, polymap = mesh[9], mesh[10], mesh[11], mesh[12]
    va = mesh[2][mesh[0][obi[k, OBI_GEOM]]]
    base = mesh[13][mesh[0][obi[k, OBI_GEOM]]]  # mesh_polymap holds the mesh's own polygon numbers
    a1 = polymapadr[va + v1]
    n1 = polymapnum[va + v1]
    if dim == 1:
        for i in range(n1):
            p = base + polymap[a1 + i]
            _globalcoord(nrm, i, obf, k, polynormal[p, 0], polynormal[p, 1], polynormal[p, 2], False)
            idx[i] = p
        return n1
    if dim != 2 and dim != 3:
        return 0
    edgeset = idx[0:2]  # written before the normals (idx is the result's index array)
    n = _intersect(edgeset, polymap[a1:a1 + n1], n1, polymap[polymapadr[va + v2]:], polymapnum[va + v2])
    if n == 0:
        return 0
    for e in range(n):
        edgeset[e] += base
    if dim == 3:
        a3 = polymapadr[va + v3]
        p0 = edgeset[0]
        p1 = edgeset[1]
        found = -1
        for e in range(n):
            p = p0 if e == 0 else p1
            for j in range(polymapnum[va + v3]):
                if found < 0 and base + polymap[a3 + j] == p:
                    found = p
        if found < 0:
            return 0
        _globalcoord(nrm, 0, obf, k, polynormal[found, 0], polynormal[found, 1], polynormal[found, 2], False)
        idx[0] = found
        return 1
    for i in range(n):
        p = edgeset[i]
        _globalcoord(nrm, i, obf, k, polynormal[p, 0], polynormal[p, 1], polynormal[p, 2], False)
    return n


@kernel
def _mesh_vertex(res, r, obf, obi, k, v, mesh):
    """res[r] = mesh vertex v of object k in world coordinates."""
    vert = mesh[1]
    va = mesh[2][mesh[0][obi[k, OBI_GEOM]]]
    _globalcoord(res, r, obf, k, vert[va + v, 0], vert[va + v, 1], vert[va + v, 2], True)


@kernel
def _mesh_edge_normals(nrm, endverts, dim, obf, obi, k, v, v1i, mesh):
    """Unit directions of the hull edges at the touching edge (dim 2) or vertex v1i (dim 1): at
    a vertex, for each of its polygons the edge to the polygon's previous vertex
    (meshEdgeNormals)."""
    if dim == 2:
        return _edge_of_two(nrm, endverts, v)
    if dim != 1:
        return 0
    polyvertadr, polyvertnum, polyvert = mesh[6], mesh[7], mesh[8]
    polymapadr, polymapnum, polymap = mesh[10], mesh[11], mesh[12]
    va = mesh[2][mesh[0][obi[k, OBI_GEOM]]]
    base = mesh[13][mesh[0][obi[k, OBI_GEOM]]]
    n1 = polymapnum[va + v1i]
    for i in range(n1):
        p = base + polymap[polymapadr[va + v1i] + i]
        adr = polyvertadr[p]
        cnt = polyvertnum[p]
        for j in range(cnt):
            if polyvert[adr + j] == v1i:
                prev = cnt - 1 if j == 0 else j - 1
                _mesh_vertex(endverts, i, obf, obi, k, polyvert[adr + prev], mesh)
                e = _normalize(endverts[i, 0] - v[0, 0], endverts[i, 1] - v[0, 1], endverts[i, 2] - v[0, 2])
                nrm[i, 0], nrm[i, 1], nrm[i, 2] = e
                break
    return n1


@kernel
def _mesh_face(face, obf, obi, k, p, mesh):
    """Hull polygon p of object k's mesh in world coordinates, its vertices in reverse order
    (meshFace); returns their number."""
    adr = mesh[6][p]
    cnt = mesh[7][p]
    for i in range(cnt):
        _mesh_vertex(face, i, obf, obi, k, mesh[8][adr + cnt - 1 - i], mesh)
    return cnt


@kernel
def _bare_vertices(v, n, obf, obi, k, i0, i1, mesh):
    """Rows 0 and 1 (n of them, up to 2) of v: box corners or mesh vertices i0, i1 of object k
    in world coordinates, without the margin (other geom types: v unchanged)."""
    t = obi[k, OBI_TYPE]
    if n > 2 or (t != GEOM_BOX and t != GEOM_MESH):
        return
    for r in range(n):
        i = i0 if r == 0 else i1
        if t == GEOM_MESH:
            _mesh_vertex(v, r, obf, obi, k, i, mesh)
        else:
            sx = obf[k, OBF_SIZE0] if (i & 1) != 0 else -obf[k, OBF_SIZE0]
            sy = obf[k, OBF_SIZE1] if (i & 2) != 0 else -obf[k, OBF_SIZE1]
            sz = obf[k, OBF_SIZE2] if (i & 4) != 0 else -obf[k, OBF_SIZE2]
            _globalcoord(v, r, obf, k, sx, sy, sz, True)


@kernel
def _face(face, obf, obi, k, idx, mesh):
    """Face idx of object k (a box face, a cylinder cap or a mesh polygon); returns its vertex
    count."""
    t = obi[k, OBI_TYPE]
    if t == GEOM_BOX:
        return _box_face(face, obf, k, idx)
    if t == GEOM_MESH:
        return _mesh_face(face, obf, obi, k, idx, mesh)
    return _cyl_face(face, obf, k, idx)


@kernel
def multicontact(pv1, pv2, pidx, fverts, face, x1, x2, dist, nx, max_contacts, obf, obi, mc, mci, nm,
                 mesh):
    """Contacts from aligned features at the EPA face (multicontact); returns the number of
    witness pairs (nx unchanged when there is no multi-contact).

    mc, mci: float and int buffers for polygons of up to nm vertices (mc_size(nm), 2 nm);
    mesh: collide_convex's mesh arrays (the hull polygons of mesh geoms)."""
    n1 = mc[0:3 * nm].reshape((nm, 3))
    n2 = mc[3 * nm:6 * nm].reshape((nm, 3))
    endverts = mc[6 * nm:9 * nm].reshape((nm, 3))
    face1 = mc[9 * nm:12 * nm].reshape((nm, 3))
    face2 = mc[12 * nm:15 * nm].reshape((nm, 3))
    va = mc[15 * nm:15 * nm + 9].reshape((3, 3))
    vb = mc[15 * nm + 9:15 * nm + 18].reshape((3, 3))
    poly_a = mc[15 * nm + 18:21 * nm + 18].reshape((2 * nm, 3))
    poly_b = mc[21 * nm + 18:27 * nm + 18].reshape((2 * nm, 3))
    pn = mc[27 * nm + 18:30 * nm + 18].reshape((nm, 3))
    pd = mc[30 * nm + 18:31 * nm + 18]
    edir = pn   # edge directions, used before the clipping planes
    idx1 = mci[0:nm]
    idx2 = mci[nm:2 * nm]

    t1 = obi[0, OBI_TYPE]
    t2 = obi[1, OBI_TYPE]
    # a mesh without hull polygons has no features
    if (t1 == GEOM_MESH and _mesh_polynum(obi, 0, mesh) == 0) or \
            (t2 == GEOM_MESH and _mesh_polynum(obi, 1, mesh) == 0):
        return nx
    margin = 0.5 * obf[0, OBF_MARGIN] + 0.5 * obf[1, OBF_MARGIN]
    m1 = _half_margin(obf, obi, 0)
    m2 = _half_margin(obf, obi, 1)
    keep = m1 + m2     # clipped vertices kept up to this far outside the clipping face
    a = fverts[face, 0]
    b = fverts[face, 1]
    c = fverts[face, 2]
    v1i = (pidx[a, 0], pidx[b, 0], pidx[c, 0])
    v2i = (pidx[a, 1], pidx[b, 1], pidx[c, 1])
    for q in range(3):
        va[0, q] = pv1[a, q]
        va[1, q] = pv1[b, q]
        va[2, q] = pv1[c, q]
        vb[0, q] = pv2[a, q]
        vb[1, q] = pv2[b, q]
        vb[2, q] = pv2[c, q]
    # simplexDim: collapse repeated vertex indices
    i0, i1, i2 = v1i
    if i0 == i1:
        if i0 == i2:
            nface1 = 1
        else:
            i1 = i2
            for q in range(3):
                va[1, q] = va[2, q]
            nface1 = 2
    else:
        nface1 = 2 if (i2 == i0 or i2 == i1) else 3
    j0, j1, j2 = v2i
    if j0 == j1:
        if j0 == j2:
            nface2 = 1
        else:
            j1 = j2
            for q in range(3):
                vb[1, q] = vb[2, q]
            nface2 = 2
    else:
        nface2 = 2 if (j2 == j0 or j2 == j1) else 3

    if margin > 0:
        # the polytope's points are supports of the shapes inflated by the margins; edges are
        # taken between the bare vertices (MuJoCo 4.0, found against the binary)
        _bare_vertices(va, nface1, obf, obi, 0, i0, i1, mesh)
        _bare_vertices(vb, nface2, obf, obi, 1, j0, j1, mesh)
    dir0 = x2[0, 0] - x1[0, 0]
    dir1 = x2[0, 1] - x1[0, 1]
    dir2 = x2[0, 2] - x1[0, 2]
    nn0 = x1[0, 0] - x2[0, 0]
    nn1 = x1[0, 1] - x2[0, 1]
    nn2 = x1[0, 2] - x2[0, 2]

    nnorms1 = 0
    nnorms2 = 0
    if t1 == GEOM_BOX:
        nnorms1 = _box_normals(n1, idx1, nface1, obf, 0, i0, i1, i2, nn0, nn1, nn2)
    elif t1 == GEOM_CYLINDER:
        nnorms1 = _cyl_vertex_cap(n1, idx1, nface1, obf, 0, i0)
    elif t1 == GEOM_MESH:
        nnorms1 = _mesh_normals(n1, idx1, nface1, obf, obi, 0, i0, i1, i2, mesh)
    if t2 == GEOM_BOX:
        nnorms2 = _box_normals(n2, idx2, nface2, obf, 1, j0, j1, j2, dir0, dir1, dir2)
    elif t2 == GEOM_CYLINDER:
        nnorms2 = _cyl_vertex_cap(n2, idx2, nface2, obf, 1, j0)
    elif t2 == GEOM_MESH:
        nnorms2 = _mesh_normals(n2, idx2, nface2, obf, obi, 1, j0, j1, j2, mesh)

    # aligned faces: the best-aligned pair (most negative dot product) within FACE_TOL. MuJoCo
    # 4.0 takes it (found against the binary with MuJoCo's polygon order: the 3.x source takes
    # the first pair in polygon order, which clips another of two nearly coplanar faces)
    # among the faces facing the other geom: each normal within 90 deg - asin(EDGE_TOL) of the
    # witness direction (MuJoCo 4.0, read off the binary; none when the witness points coincide)
    fi = -1
    fj = -1
    bestdot = -FACE_TOL
    cdir = math.sqrt(dir0 * dir0 + dir1 * dir1 + dir2 * dir2) * EDGE_TOL
    for i in range(nnorms1):
        if _dot(dir0, dir1, dir2, n1[i, 0], n1[i, 1], n1[i, 2]) >= -cdir:
            continue
        for j in range(nnorms2):
            if cdir >= _dot(dir0, dir1, dir2, n2[j, 0], n2[j, 1], n2[j, 2]):
                continue
            dd = _dot(n1[i, 0], n1[i, 1], n1[i, 2], n2[j, 0], n2[j, 1], n2[j, 2])
            if dd < bestdot:
                bestdot = dd
                fi = i
                fj = j
    edgecon1 = False
    edgecon2 = False
    ei = -1
    if fi < 0:
        # an edge of geom 1 lying in a face of geom 2?
        nedge = 0
        # (box and mesh edge directions go to edir: both geoms' face normals are still needed)
        ed = n1
        if t1 == GEOM_BOX and nface1 < 3 and nface1 <= nface2:
            ed = edir
            nedge = _box_edge_normals(edir, endverts, nface1, obf, 0, va, i0)
        elif t1 == GEOM_MESH and nface1 < 3 and nface1 <= nface2:
            ed = edir
            nedge = _mesh_edge_normals(edir, endverts, nface1, obf, obi, 0, va, i0, mesh)
        elif t1 == GEOM_CYLINDER:
            # the side segment at the touching rim point, whatever the feature dimensions
            ed = edir
            nedge = _cyl_side(face1, edir, obf, obi, 0, va, 0, i0)
        elif t1 == GEOM_CAPSULE and nnorms1 == 0:
            ed = edir
            nedge = _side_edge(face1, edir, obf, 0, x1, 0, nn0, nn1, nn2)
            if nedge and t2 == GEOM_BOX:
                nnorms2 = _box_normals2(n2, idx2, obf, 1, dir0, dir1, dir2)
        if nedge > 0 and nnorms2 > 0:
            ei, fi = _edge_in_face(ed, nedge, n2, nnorms2, dir0, dir1, dir2)
            edgecon1 = fi >= 0
        if fi < 0:
            nedge = 0
            ed = n2
            if t2 == GEOM_BOX and nface2 < 3:
                ed = edir
                nedge = _box_edge_normals(edir, endverts, nface2, obf, 1, vb, j0)
            elif t2 == GEOM_MESH and nface2 < 3:
                ed = edir
                nedge = _mesh_edge_normals(edir, endverts, nface2, obf, obi, 1, vb, j0, mesh)
            elif t2 == GEOM_CYLINDER:
                ed = edir
                nedge = _cyl_side(face2, edir, obf, obi, 1, vb, 0, j0)
            elif t2 == GEOM_CAPSULE and nnorms2 == 0:
                ed = edir
                nedge = _side_edge(face2, edir, obf, 1, x2, 0, dir0, dir1, dir2)
                if nedge and t1 == GEOM_BOX:
                    nnorms1 = _box_normals2(n1, idx1, obf, 0, nn0, nn1, nn2)
            if nedge > 0 and nnorms1 > 0:
                ei, fi = _edge_in_face(ed, nedge, n1, nnorms1, nn0, nn1, nn2)
                edgecon2 = fi >= 0
        if fi < 0:
            return nx

    if edgecon1:
        # edge of geom 1 against a face of geom 2: clip the edge by the face
        if t1 == GEOM_BOX or t1 == GEOM_MESH:
            for q in range(3):
                face1[0, q] = va[0, q]
                face1[1, q] = endverts[ei, q]
        nf1 = 2
        nf2 = _face(face2, obf, obi, 1, idx2[fi], mesh)
        m = _polygon_clip(face2, nf2, face1, nf1, n2[fi, 0], n2[fi, 1], n2[fi, 2],
                          -n2[fi, 0], -n2[fi, 1], -n2[fi, 2], poly_a, poly_b, pn, pd, x2, x1, dist,
                          max_contacts, keep)
        if m == 0:
            return nx
        return _inflate_all(x1, x2, dist, m, m1, m2, -n2[fi, 0], -n2[fi, 1], -n2[fi, 2])
    if edgecon2:
        if t2 == GEOM_BOX or t2 == GEOM_MESH:
            for q in range(3):
                face2[0, q] = vb[0, q]
                face2[1, q] = endverts[ei, q]
        nf2 = 2
        nf1 = _face(face1, obf, obi, 0, idx1[fi], mesh)
        m = _polygon_clip(face1, nf1, face2, nf2, n1[fi, 0], n1[fi, 1], n1[fi, 2],
                          -n1[fi, 0], -n1[fi, 1], -n1[fi, 2], poly_a, poly_b, pn, pd, x1, x2, dist,
                          max_contacts, keep)
        if m == 0:
            return nx
        return _inflate_all(x1, x2, dist, m, m1, m2, n1[fi, 0], n1[fi, 1], n1[fi, 2])
    # face-face: MuJoCo 4.0 clips geom 2's face by the edges of geom 1's face (a box face, a
    # cylinder cap or a mesh polygon, both as listed; planes along geom 1's normal), keeps the
    # points within the margins of geom 1's face and measures each along geom 2's normal (the
    # arguments of its polygonClip, read off the binary with a debugger)
    nf1 = _face(face1, obf, obi, 0, idx1[fi], mesh)
    nf2 = _face(face2, obf, obi, 1, idx2[fj], mesh)
    m = _polygon_clip(face1, nf1, face2, nf2, n1[fi, 0], n1[fi, 1], n1[fi, 2],
                      n2[fj, 0], n2[fj, 1], n2[fj, 2], poly_a, poly_b, pn, pd, x1, x2, dist,
                      max_contacts, keep)
    if m == 0:
        return nx
    return _inflate_all(x1, x2, dist, m, m1, m2, -n2[fj, 0], -n2[fj, 1], -n2[fj, 2])
