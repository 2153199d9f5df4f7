"""MuJoCo's native convex collision detection (engine_collision_gjk.c): GJK, EPA and the
single-shot multi-contact polygon clipping.

The geometry enters only through support functions (support_point below), so the algorithms
know nothing of geom types beyond what MuJoCo's own code tests (spheres and capsules, discrete
geoms, the features used by multi-contact).

Sources and agreement. The port follows the 3.12 C source (a 2026-08 snapshot) and is
bit-identical to it (checked against a build of that source on ~1000 random pairs). MuJoCo 4.0
differs; what fuzzing against the 4.0 binary found and this module reproduces:

* GJK and its distance sub-algorithm (gjk, _s1d, _s2d, _triangle_cofactors,
  _project_origin_plane): the arithmetic and control flow of 4.0, read off the symbols of the
  shipped libmujoco.so.4.0.0 (gjk, S1D, S2D, projectOriginPlane, ... are local symbols there):
  no fallback to gjkIntersect, the iterate projected on the simplex's line or plane, 4.0's
  stopping and separation tests, cofactors relative to the projected point over their sum;
* EPA's start from a triangle (_polytope3: recoverHexa, a tetrahedron when no hexahedron
  works, the centre of all vertices, the origin test with the tolerance), its affine
  coordinates (_tri_affine_coord), its stop on the current iteration's gap (upper_k - lower)
  and its end rules (epa), read off the same binary;
* a geom margin is no longer an inflation of the supports during the first GJK: like the
  radius of a sphere or capsule, it is added back after a GJK distance query, and only deep
  contacts run GJK + EPA on the inflated shapes (ccd);
* multi-contact for cylinders and capsules (3.14, 3.15) and with margins (3.17);
* multi-contact faces (polygonClip, read off the binary and its arguments checked with a
  debugger): geom 2's face is clipped by geom 1's edges (planes along geom 1's normal), the
  crossings at the ratio of signed distances, the vertices within the margins of geom 1's face
  kept, more than 4 reduced by polygonQuad's hill climb with area4 as the cross product of the
  diagonals (in the order it holds them), each witness pair a point on geom 1's face and that
  point moved along geom 2's normal, then every pair moved out by the half margins (inflate);
  cylinder caps are 16-gons from a table of 15-decimal cosines; the edges of both geoms are
  tried against the other's faces, and with a margin the edges run between bare vertices.
  Meshes give their hull polygons (mesh_poly*) as MuJoCo's meshNormals / meshEdgeNormals /
  meshFace do.

Single contacts agree with 4.0 bit for bit in every pose tests/test_collision_convex.py tries
(spheres, capsules, ellipsoids, cylinders, boxes, margins), and cylinder and capsule
multi-contacts at 1e-9 in the count and order (random and axis-aligned poses, margins); with
the origin on an edge of EPA's start triangle, 4.0's polytope3 starts again from polytope2 on
that edge, as here. Where several mesh features are within the tolerances 4.0 takes the first
in its own polygon order (docs/meshes.md).

Layout (kernels take arrays, never objects):

* the two convex objects: ``obf`` (2, 16) floats per object -- pos [0:3], row-major mat
  [3:12], size [12:15], margin [15]; ``obi`` (2, 4) ints -- geom type, support kind, last
  support vertex index (boxes, meshes), geom id.
* vertices of the simplex or polytope: ``vert`` (n, 3) = ``vert1 - vert2`` (Minkowski
  difference), ``vert1``/``vert2`` the support points on each object, ``vidx`` (n, 2) their
  vertex indices.
* witness points and distances: ``x1``, ``x2`` (MAXCONPAIR, 3) and ``dist`` (MAXCONPAIR,).

Every arithmetic expression keeps MuJoCo's operand order: the algorithms branch on signs
and on tolerances, so equal bits are what makes the contacts agree to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import kernel
from kinedyn.engine.util_spatial import normalized3

MINVAL = 1e-15
MINVAL2 = MINVAL * MINVAL
MAXVAL2 = 1e10 * 1e10
MAX_LIMIT = 1.7976931348623157e308     # DBL_MAX
MINDIST2 = MINVAL2                      # polytope2/3/4: origin on a face
MINEPATOL = MINVAL
FACE_TOL = 0.996                        # normals of two faces aligned (~5.1 deg)
EDGE_TOL = 0.0888                       # edge and face aligned (~5.1 deg)
MAXCONPAIR = 50
MC_NMAX = 16                            # multi-contact buffers hold at least this many vertices

GEOM_HFIELD = 1
GEOM_SPHERE = 2
GEOM_CAPSULE = 3
GEOM_CYLINDER = 5
GEOM_BOX = 6
GEOM_MESH = 7

# EPA status (mjEPAStatus)
EPA_NOCONTACT = -1
EPA_SUCCESS = 0
EPA_P2_INVALID_FACES = 1
EPA_P2_NONCONVEX = 2
EPA_P2_ORIGIN_ON_FACE = 3
EPA_P3_BAD_NORMAL = 4
EPA_P3_INVALID_V4 = 5
EPA_P3_INVALID_V5 = 6
EPA_P3_MISSING_ORIGIN = 7
EPA_P3_ORIGIN_ON_FACE = 8
EPA_P4_MISSING_ORIGIN = 9
P3_TO_P2 = -2          # internal: polytope3 found the origin on an edge of its triangle


# ---- scratch layout ---------------------------------------------------------------------------------
#
# Kernels do not allocate: the caller passes one float and one int scratch array, sized by
# convex_work_size(ccd_iterations), and each algorithm takes fixed slices of them (MuJoCo
# carves its polytope out of the arena the same way, mjc_ccdSize).

W_OBF = 0          # (2, 16) objects
W_X1 = 32          # (MAXCONPAIR, 3) witness points on object 1
W_X2 = W_X1 + 3 * MAXCONPAIR
W_DIST = W_X2 + 3 * MAXCONPAIR
W_SV = W_DIST + MAXCONPAIR
W_SV1 = W_SV + 12
W_SV2 = W_SV1 + 12
W_TV = W_SV2 + 12
W_TV1 = W_TV + 12
W_TV2 = W_TV1 + 12
W_NRM = W_TV2 + 12
W_D4 = W_NRM + 12
W_LAM = W_D4 + 4
W_TMP = W_LAM + 4
W_TMP1 = W_TMP + 3
W_TMP2 = W_TMP1 + 3
W_CEN = W_TMP2 + 3
W_POLY = W_CEN + 3

I_OBI = 0          # (2, 4) objects
I_SIDX = 8
I_TIDX = 16
I_TMPIDX = 24
I_S = 26
I_CNT = 30
I_INFO = 34       # diagnostics: gjk iterations, simplex size, EPA status, EPA iterations, shallow
I_MC = 40          # GJK simplex face for multi-contact
I_MC_SIZE = 64
I_POLY = I_MC + I_MC_SIZE


def convex_work_size(ccd_iterations, max_hull_vertices=0):
    """(float count, int count) of the scratch arrays collide_convex needs; with meshes, the two
    objects' descriptions (at the end of the float scratch) hold up to ``max_hull_vertices``
    hull vertices each (4 floats: x, y, z, vertex id), and the multi-contact buffers before them
    room for polygons and vertex degrees of up to that many vertices (mc_size)."""
    nv = 5 + ccd_iterations
    nf = 6 * ccd_iterations
    nm = max(MC_NMAX, max_hull_vertices)
    return (W_POLY + 9 * nv + 4 * nf + mc_size(nm) + 2 * (16 + MESH_HULL_SLOTS + 12 * max_hull_vertices),
            I_POLY + 2 * nv + 13 * nf + 16 + 2 * nm)


@kernel
def mc_size(nm):
    """Floats of the multi-contact buffer for polygons and vertex degrees up to nm (MuJoCo's
    npolygonmax and nmeshdegmax): normals, edge ends and the two faces (nm x 3 each), the
    EPA face's vertices (2 x 3 x 3), the clipped polygons (2 x 2nm x 3) and the clipping planes
    (nm x 4). The int buffer holds 2 nm face indices."""
    return 31 * nm + 18


# ---- small vector helpers (tuples) ------------------------------------------------------------


@kernel
def _dot(a0, a1, a2, b0, b1, b2):
    return a0 * b0 + a1 * b1 + a2 * b2


@kernel
def _cross(a0, a1, a2, b0, b1, b2):
    return (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)


@kernel
def _det3(a, i, b, j, c, k):
    """det of the columns a[i], b[j], c[k]: a . (b x c) in MuJoCo's det3 order."""
    return (a[i, 0] * (b[j, 1] * c[k, 2] - b[j, 2] * c[k, 1])
            + a[i, 1] * (b[j, 2] * c[k, 0] - b[j, 0] * c[k, 2])
            + a[i, 2] * (b[j, 0] * c[k, 1] - b[j, 1] * c[k, 0]))


@kernel
def _det3t(a, b, c):
    """det3 of three 3-tuples."""
    return (a[0] * (b[1] * c[2] - b[2] * c[1])
            + a[1] * (b[2] * c[0] - b[0] * c[2])
            + a[2] * (b[0] * c[1] - b[1] * c[0]))


@kernel
def _div(a, b):
    """a / b with IEEE semantics (Numba raises on a zero divisor)."""
    if b != 0.0:
        return a / b
    if a == 0.0 or a != a:
        return math.nan
    return math.inf if (a > 0.0) == (math.copysign(1.0, b) > 0.0) else -math.inf


@kernel
def _normalize(v0, v1, v2):
    """mju_normalize3 on a tuple."""
    n0, n1, n2, _ = normalized3(v0, v1, v2)
    return n0, n1, n2


@kernel
def _same_sign(a, b):
    """sameSign2: 1 if both positive, -1 if both negative, else 0."""
    if a > 0 and b > 0:
        return 1
    if a < 0 and b < 0:
        return -1
    return 0


@kernel
def _copy_vertex(dv, dv1, dv2, didx, i, sv, sv1, sv2, sidx, j):
    for c in range(3):
        dv[i, c] = sv[j, c]
        dv1[i, c] = sv1[j, c]
        dv2[i, c] = sv2[j, c]
    didx[i, 0] = sidx[j, 0]
    didx[i, 1] = sidx[j, 1]


# ---- support functions (mjc_*Support in engine_collision_convex.c) ------------------------------
#
# MuJoCo reaches them through function pointers; here support_point dispatches on a support
# kind (obi[k, 1]): a geom type, or POINT / LINE, the shrunk sphere and capsule mjc_ccd uses.
# They live in this module because GJK and EPA call them (collision_convex imports this
# module, not the reverse). A mesh object carries its hull vertices and its search state (hill
# climbing, MuJoCo's warm start) in its obf row (init_mesh_object); the climb reads the hull's
# edge lists from the model's mesh_graph (``graph``), as mjc_hillclimbSupport reads the model's.

SUPPORT_SPHERE = 2
SUPPORT_CAPSULE = 3
SUPPORT_ELLIPSOID = 4
SUPPORT_CYLINDER = 5
SUPPORT_BOX = 6
SUPPORT_MESH = 7
SUPPORT_PRISM = 8       # a height field's triangular prism: 6 vertices after the 16 slots
SUPPORT_POINT = 100
SUPPORT_LINE = 101


@kernel
def _local_dir(obf, k, d0, d1, d2):
    """mat^T dir (mulMatTVec3)."""
    return (obf[k, 3] * d0 + obf[k, 6] * d1 + obf[k, 9] * d2,
            obf[k, 4] * d0 + obf[k, 7] * d1 + obf[k, 10] * d2,
            obf[k, 5] * d0 + obf[k, 8] * d1 + obf[k, 11] * d2)


@kernel
def _to_global(res, r, obf, k, l0, l1, l2):
    """res[r] = mat l + pos (localToGlobal)."""
    res[r, 0] = obf[k, 3] * l0 + obf[k, 4] * l1 + obf[k, 5] * l2
    res[r, 1] = obf[k, 6] * l0 + obf[k, 7] * l1 + obf[k, 8] * l2
    res[r, 2] = obf[k, 9] * l0 + obf[k, 10] * l1 + obf[k, 11] * l2
    res[r, 0] += obf[k, 0]
    res[r, 1] += obf[k, 1]
    res[r, 2] += obf[k, 2]


MESH_HILLCLIMB_MIN = 10     # meshes with fewer vertices are searched exhaustively (MuJoCo's constant)
MESH_HULL_SLOTS = 30        # after a mesh's hull vertices: the mode, the warm start, 27 extrema seeds,
#                             the mesh's mesh_graphadr


@kernel
def _vdot(obf, k, i, l0, l1, l2):
    """dot(local direction, hull vertex i of object k) in dot3f's order."""
    b = 16 + 4 * i
    return l0 * obf[k, b] + l1 * obf[k, b + 1] + l2 * obf[k, b + 2]


@kernel
def _hillclimb(obf, k, hb, nvert, l0, l1, l2, graph):
    """The support vertex (hull-local id) by hill climbing on the hull graph, as MuJoCo 4.0's
    mjc_hillclimbSupport: the seed is mesh_extrema's vertex for the direction's cell of a 3 x 3 x 3
    grid (each component -1, 0, 1 at +-0.4), or the previous support vertex of this call when it
    is at least as good; then, until nothing changes, each neighbour of the current vertex (in
    the graph's edge order) that is strictly better becomes the current one, the scan going on
    through the same neighbour list. The result is the warm start of the next support call.
    The neighbour lists are mesh_graph's (``graph``): vertex i's at vert_edgeadr[i] in the edge
    list region, each ended by -1."""
    cx = (1 if l0 > 0.4 else 0) - (1 if l0 < -0.4 else 0) + 1
    cy = (1 if l1 > 0.4 else 0) - (1 if l1 < -0.4 else 0) + 1
    cz = (1 if l2 > 0.4 else 0) - (1 if l2 < -0.4 else 0) + 1
    seed = int(obf[k, hb + 2 + cx * 9 + cy * 3 + cz])
    imax = int(obf[k, hb + 1])
    if imax >= 0:
        if _vdot(obf, k, seed, l0, l1, l2) > _vdot(obf, k, imax, l0, l1, l2):
            imax = seed
    else:
        imax = seed
    best = _vdot(obf, k, imax, l0, l1, l2)
    adr = np.intp(obf[k, hb + 29])
    edges = adr + 2 + 2 * nvert
    prev = -1
    while imax != prev:
        prev = imax
        e = edges + graph[adr + 2 + prev]
        nb = graph[e]
        while nb >= 0:
            v = _vdot(obf, k, nb, l0, l1, l2)
            if v > best:
                best = v
                imax = nb
            e += 1
            nb = graph[e]
    obf[k, hb + 1] = imax
    return imax


@kernel
def mesh_object_width(mesh, g):
    """Floats of mesh geom g's object description (init_mesh_object): 16 slots, 4 per hull
    vertex, the search mode, the warm start, 27 extrema seeds and the mesh_graph address."""
    return 16 + 4 * np.intp(mesh[4][mesh[3][mesh[0][g]]]) + MESH_HULL_SLOTS


@kernel
def init_mesh_object(obf, k, g, mesh):
    """Object k's mesh data for support_point (mjc_initCCDObj for a mesh geom g): its hull vertices
    in the mesh frame after the 16 slots as (x, y, z, vertex id), then the search state: hill
    climbing when the mesh has at least MESH_HILLCLIMB_MIN vertices (MuJoCo counts all of the
    mesh's vertices, mesh_vertnum), no warm start yet (-1), the mesh's mesh_extrema seeds and
    its mesh_graphadr (the climb reads the edge lists there). ``mesh``: collide_convex's mesh
    arrays."""
    dataid, vert, vertadr, graphadr, graph = mesh[0], mesh[1], mesh[2], mesh[3], mesh[4]
    mid = dataid[g]
    adr = graphadr[mid]
    nvert = graph[adr]
    obf[k, 12] = nvert
    va = vertadr[mid]
    for i in range(nvert):
        v = graph[adr + 2 + nvert + i]
        b = 16 + 4 * i
        obf[k, b] = vert[va + v, 0]
        obf[k, b + 1] = vert[va + v, 1]
        obf[k, b + 2] = vert[va + v, 2]
        obf[k, b + 3] = v
    hb = 16 + 4 * nvert
    hill = mesh[15][mid] >= MESH_HILLCLIMB_MIN
    obf[k, hb] = 1.0 if hill else 0.0
    obf[k, hb + 1] = -1.0
    if not hill:
        return
    for c in range(27):
        obf[k, hb + 2 + c] = mesh[14][mid, c]
    obf[k, hb + 29] = adr


@kernel
def support_point(res, r, obf, obi, graph, k, d0, d1, d2):
    """res[r] = the support point of object k in the unit direction d (no margin)."""
    kind = obi[k, 1]
    if kind == SUPPORT_POINT:                       # mjc_pointSupport
        res[r, 0] = obf[k, 0]
        res[r, 1] = obf[k, 1]
        res[r, 2] = obf[k, 2]
    elif kind == SUPPORT_SPHERE:                    # mjc_sphereSupport
        radius = obf[k, 12]
        res[r, 0] = radius * d0 + obf[k, 0]
        res[r, 1] = radius * d1 + obf[k, 1]
        res[r, 2] = radius * d2 + obf[k, 2]
    elif kind == SUPPORT_LINE:                      # mjc_lineSupport
        dot = obf[k, 5] * d0 + obf[k, 8] * d1 + obf[k, 11] * d2
        scl = obf[k, 13] if dot >= 0 else -obf[k, 13]
        res[r, 0] = obf[k, 5] * scl + obf[k, 0]
        res[r, 1] = obf[k, 8] * scl + obf[k, 1]
        res[r, 2] = obf[k, 11] * scl + obf[k, 2]
    elif kind == SUPPORT_CAPSULE:                   # mjc_capsuleSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        radius = obf[k, 12]
        s0 = l0 * radius
        s1 = l1 * radius
        s2 = l2 * radius
        s2 += obf[k, 13] if l2 >= 0 else -obf[k, 13]
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_ELLIPSOID:                 # mjc_ellipsoidSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        s0 = l0 * obf[k, 12]
        s1 = l1 * obf[k, 13]
        s2 = l2 * obf[k, 14]
        norm2 = s0 * s0 + s1 * s1 + s2 * s2
        if norm2 < MINVAL2:
            res[r, 0] = obf[k, 3] * obf[k, 12] + obf[k, 0]
            res[r, 1] = obf[k, 6] * obf[k, 12] + obf[k, 1]
            res[r, 2] = obf[k, 9] * obf[k, 12] + obf[k, 2]
            return
        inv = 1 / math.sqrt(norm2)
        s0 *= inv * obf[k, 12]
        s1 *= inv * obf[k, 13]
        s2 *= inv * obf[k, 14]
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_CYLINDER:                  # mjc_cylinderSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        n2 = l0 * l0 + l1 * l1
        scl = obf[k, 12] / math.sqrt(n2) if n2 >= MINVAL2 else 0.0
        s2 = obf[k, 13] if l2 >= 0 else -obf[k, 13]
        obi[k, 2] = 0 if l2 >= 0 else 1             # the cap (0 top, 1 bottom): multicontact's feature
        _to_global(res, r, obf, k, scl * l0, scl * l1, s2)
    elif kind == SUPPORT_BOX:                       # mjc_boxSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        s0 = obf[k, 12] if l0 >= 0 else -obf[k, 12]
        s1 = obf[k, 13] if l1 >= 0 else -obf[k, 13]
        s2 = obf[k, 14] if l2 >= 0 else -obf[k, 14]
        vi = 1 if s0 > 0 else 0
        vi |= 2 if s1 > 0 else 0
        vi |= 4 if s2 > 0 else 0
        obi[k, 2] = vi
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_MESH:                      # mjc_meshSupport / mjc_hillclimbSupport
        # the hull vertices after the 16 slots as (x, y, z, vertex id), in mesh_graph's order
        # (init_mesh_object); the search state is MuJoCo's, so ties go the same way
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        nvert = int(obf[k, 12])
        hb = 16 + 4 * nvert
        if obf[k, hb] != 0:
            ib = 16 + 4 * _hillclimb(obf, k, hb, nvert, l0, l1, l2, graph)
        else:
            # every vertex in id order, from the previous support vertex; a later vertex wins
            # only when strictly better (so on ties the previous one, else the lowest id)
            prev = obi[k, 2]
            ib = -1
            best = -math.inf
            for i in range(nvert):
                b = 16 + 4 * i
                if int(obf[k, b + 3]) == prev:
                    ib = b
                    best = l0 * obf[k, b] + l1 * obf[k, b + 1] + l2 * obf[k, b + 2]
            hold = ib >= 0
            for i in range(nvert):
                b = 16 + 4 * i
                v = l0 * obf[k, b] + l1 * obf[k, b + 1] + l2 * obf[k, b + 2]
                if v > best or (v == best and not hold and obf[k, b + 3] < obf[k, ib + 3]):
                    hold = False
                    best = v
                    ib = b
        obi[k, 2] = int(obf[k, ib + 3])
        _to_global(res, r, obf, k, obf[k, ib], obf[k, ib + 1], obf[k, ib + 2])
    elif kind == SUPPORT_PRISM:                     # mjc_prism_support
        # vertices 0-2 the bottom triangle, 3-5 the top one, (x, y, z) each at 16 + 3 i, in the
        # height field's frame; the first largest projection within the half chosen by dir z
        start = 0 if d2 < 0 else 3
        ib = start
        b = 16 + 3 * start
        best = obf[k, b] * d0 + obf[k, b + 1] * d1 + obf[k, b + 2] * d2
        for i in range(start + 1, start + 3):
            b = 16 + 3 * i
            v = obf[k, b] * d0 + obf[k, b + 1] * d1 + obf[k, b + 2] * d2
            if v > best:
                ib = i
                best = v
        # (no vertex index: MuJoCo's prism support leaves it, so EPA's repeated-vertex test for
        # discrete shapes compares the other geom's vertices only)
        b = 16 + 3 * ib
        res[r, 0] = obf[k, b]
        res[r, 1] = obf[k, b + 1]
        res[r, 2] = obf[k, b + 2]
    else:
        res[r, 0] = math.nan                        # no support for this kind
        res[r, 1] = math.nan
        res[r, 2] = math.nan


# ---- supports of the Minkowski difference ------------------------------------------------------


@kernel
def _inflated_support(res, r, obf, obi, graph, k, d0, d1, d2):
    """res[r] = object k's support point in the unit direction d, pushed out along d by half
    its margin when it has one (a geom's margin/2 inflation in support and epaSupport)."""
    support_point(res, r, obf, obi, graph, k, d0, d1, d2)
    if obf[k, 15] > 0 and obi[k, 3] >= 0:
        m = 0.5 * obf[k, 15]
        res[r, 0] += d0 * m
        res[r, 1] += d1 * m
        res[r, 2] += d2 * m


@kernel
def _support(vert, vert1, vert2, vidx, i, obf, obi, graph, d0, d1, d2):
    """Support of obj1 - obj2 in direction d (unit), with each object's margin/2 inflation
    (support in engine_collision_gjk.c)."""
    _inflated_support(vert1, i, obf, obi, graph, 0, d0, d1, d2)
    _inflated_support(vert2, i, obf, obi, graph, 1, -d0, -d1, -d2)
    for c in range(3):
        vert[i, c] = vert1[i, c] - vert2[i, c]
    vidx[i, 0] = obi[0, 2]
    vidx[i, 1] = obi[1, 2]


@kernel
def _support_neg(vert, vert1, vert2, vidx, i, obf, obi, graph, n0, n1, n2):
    """Support with the negated direction given (gjkSupport/epaSupport compute dir_neg
    first and negate it, so -(-x) keeps the bits)."""
    _support(vert, vert1, vert2, vidx, i, obf, obi, graph, -n0, -n1, -n2)


@kernel
def _discrete(obf, obi):
    """discreteGeoms: both boxes/meshes/hfields without margin."""
    if obf[0, 15] != 0 or obf[1, 15] != 0:
        return False
    g1 = obi[0, 0]
    g2 = obi[1, 0]
    return ((g1 == GEOM_MESH or g1 == GEOM_BOX or g1 == GEOM_HFIELD)
            and (g2 == GEOM_MESH or g2 == GEOM_BOX or g2 == GEOM_HFIELD))


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

    Returns (dist, nsimplex, separated, nx, iterations)."""
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
                return MAX_LIMIT, 0, True, 0, k
        elif lower > 0:
            separated = True
            if dist_cutoff < MAX_LIMIT and lower >= dist_cutoff * x_norm:
                return MAX_LIMIT, 0, True, 0, k
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
            return MAX_LIMIT, 0, True, 0, k

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

    return x_norm, n, separated, 1, k


# ---- EPA polytope ---------------------------------------------------------------------------------


@kernel
def _attach_face(pv, fverts, fadj, fv, fdist2, findex, cnt, center, v1, v2, v3, adj1, adj2, adj3):
    """Append a face (attachFace); returns its squared distance to the origin (0 if the
    projection failed)."""
    f = cnt[1]
    cnt[1] += 1
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
    i = cnt[0]
    cnt[0] += 1
    _inflated_support(pv1, i, obf, obi, graph, 0, dir0, dir1, dir2)
    _inflated_support(pv2, i, obf, obi, graph, 1, n0, n1, n2)
    for c in range(3):
        pv[i, c] = pv1[i, c] - pv2[i, c]
    pidx[i, 0] = obi[0, 2]
    pidx[i, 1] = obi[1, 2]
    return i


@kernel
def _insert_vertex(pv, pv1, pv2, pidx, cnt, sv, sv1, sv2, sidx, j):
    i = cnt[0]
    cnt[0] += 1
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
    cnt[2] = nf


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
    cnt[0] = 0
    cnt[1] = 0
    cnt[2] = 0


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
    _populate_map(pmap, findex, cnt, cnt[1])
    return EPA_SUCCESS


@kernel
def _replace_simplex3(sv, sv1, sv2, sidx, pv, pv1, pv2, pidx, cnt, a, b, c):
    """replaceSimplex3: the simplex becomes the polytope's triangle a b c; the polytope is
    emptied."""
    _copy_vertex(sv, sv1, sv2, sidx, 0, pv, pv1, pv2, pidx, a)
    _copy_vertex(sv, sv1, sv2, sidx, 1, pv, pv1, pv2, pidx, b)
    _copy_vertex(sv, sv1, sv2, sidx, 2, pv, pv1, pv2, pidx, c)
    cnt[0] = 0
    cnt[1] = 0
    cnt[2] = 0


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
        cnt[2] -= 1
        last = pmap[cnt[2]]
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
                hedge[cnt[3]] = adj_edge
                hidx[cnt[3]] = adj
                cnt[3] += 1
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
        hedge[cnt[3]] = adj_edge
        hidx[cnt[3]] = adj
        cnt[3] += 1
    adj = fadj[f, 1]
    adj_edge = _get_edge(fverts, adj, vc)
    if findex[adj] > -2 and _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge,
                                          hstack, w, adj, adj_edge) == 0:
        hedge[cnt[3]] = adj_edge
        hidx[cnt[3]] = adj
        cnt[3] += 1
    adj = fadj[f, 2]
    adj_edge = _get_edge(fverts, adj, va)
    if findex[adj] > -2 and _horizon_walk(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge,
                                          hstack, w, adj, adj_edge) == 0:
        hedge[cnt[3]] = adj_edge
        hidx[cnt[3]] = adj
        cnt[3] += 1


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
    none) and sets dist[0], x1[0], x2[0]; returns (face, nx, iterations)."""
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
        for i in range(cnt[2]):
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
            nverts = cnt[0] - 1
            i = 0
            while i < nverts:
                if pidx[wi, 0] == pidx[i, 0] and pidx[wi, 1] == pidx[i, 1]:
                    break
                i += 1
            if i != nverts:
                break
        _horizon(pv, fverts, fadj, fv, fdist2, findex, pmap, cnt, hidx, hedge, hstack, wi, face)
        if cnt[3] < 3:
            face = -1
            break
        nfaces = cnt[1]
        nedges = cnt[3]
        if nedges > fverts.shape[0] - cnt[1]:
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
            m = cnt[2]
            cnt[2] += 1
            pmap[m] = cnt[1] - 1
            findex[cnt[1] - 1] = m
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
                m = cnt[2]
                cnt[2] += 1
                pmap[m] = cnt[1] - 1
                findex[cnt[1] - 1] = m
        cnt[3] = 0
        if bad:
            break   # as above: MuJoCo 4.0 ends EPA with the face found
        if cnt[2] == 0 or face < 0:
            break
        k += 1
    if face >= 0:
        dist[0] = _epa_witness(pv, pv1, pv2, fverts, fv, fdist2, face, x1, x2)
        return face, 1, k
    dist[0] = 0.0
    return -1, 0, k


# ---- mjc_ccd --------------------------------------------------------------------------------------


@kernel
def _inflate(x1, x2, dist, margin1, margin2):
    """Move the witness points out by the shrunk radii (inflate)."""
    n0, n1, n2 = _normalize(x2[0, 0] - x1[0, 0], x2[0, 1] - x1[0, 1], x2[0, 2] - x1[0, 2])
    if margin1 != 0:
        x1[0, 0] += margin1 * n0
        x1[0, 1] += margin1 * n1
        x1[0, 2] += margin1 * n2
    if margin2 != 0:
        x2[0, 0] -= margin2 * n0
        x2[0, 1] -= margin2 * n1
        x2[0, 2] -= margin2 * n2
    dist[0] -= (margin1 + margin2)


@kernel
def _shrink_for_gjk(obf, obi, k):
    """mjc_ccd's reduction of object k before GJK (see ccd): a sphere becomes its centre point,
    a capsule its segment, both to be inflated back by the radius plus half the margin; any
    other geom with a margin loses it, to be inflated back by half of it. Sets obi[k, 1] and
    obf[k, 15] (the caller restores them) and returns the inflation (0 for none)."""
    t = obi[k, 0]
    margin = obf[k, 15]
    if t == GEOM_SPHERE or t == GEOM_CAPSULE:
        obi[k, 1] = SUPPORT_POINT if t == GEOM_SPHERE else SUPPORT_LINE
        obf[k, 15] = 0.0
        return obf[k, 12] + 0.5 * margin
    if margin > 0:
        obf[k, 15] = 0.0
        return 0.5 * margin
    return 0.0


@kernel
def ccd(obf, obi, tolerance, max_iterations, max_contacts, x1, x2, dist, work, iwork, mc, mci, nm, mesh):
    """General convex collision (mjc_ccd, with dist_cutoff 0 as mjc_Convex configures it).

    obf/obi describe the two objects (support kinds set to their geom types). Returns
    (min distance, number of witness pairs in x1/x2/dist); negative means penetration.
    mc, mci, nm, mesh: multicontact's buffers and mesh arrays.
    """
    graph = mesh[4]
    n_iter = max_iterations
    sv = work[W_SV:W_SV + 3 * 4].reshape((4, 3))
    sv1 = work[W_SV1:W_SV1 + 3 * 4].reshape((4, 3))
    sv2 = work[W_SV2:W_SV2 + 3 * 4].reshape((4, 3))
    sidx = iwork[I_SIDX:I_SIDX + 2 * 4].reshape((4, 2))
    lam = work[W_LAM:W_LAM + 4]
    for q in range(4):
        lam[q] = 0.0
    for q in range(3):
        x1[0, q] = obf[0, q]
        x2[0, q] = obf[1, q]

    t1 = obi[0, 0]
    t2 = obi[1, 0]
    if (t1 == GEOM_SPHERE or t2 == GEOM_SPHERE or t1 == GEOM_CAPSULE or t2 == GEOM_CAPSULE
            or obf[0, 15] > 0 or obf[1, 15] > 0):
        # spheres and capsules shrink to points and segments, and geoms with a margin lose it;
        # GJK finds their distance and a shallow contact is inflated back. MuJoCo 4.0 treats
        # margins this way too (3.17, multi-contact for positive margins); the 3.12 source
        # inflates the supports instead. Found by fuzzing against 4.0.
        margin1 = obf[0, 15]
        margin2 = obf[1, 15]
        kind1 = obi[0, 1]
        kind2 = obi[1, 1]
        full1 = _shrink_for_gjk(obf, obi, 0)
        full2 = _shrink_for_gjk(obf, obi, 1)
        d0, nsimplex, separated, nx, kg = gjk(sv, sv1, sv2, sidx, x1, x2, obf, obi, graph, tolerance, n_iter,
                                          0.0 + full1 + full2, work, iwork)
        obf[0, 15] = margin1
        obf[1, 15] = margin2
        obi[0, 1] = kind1
        obi[1, 1] = kind2
        dist[0] = d0
        info = iwork[I_INFO:I_INFO + 6]
        info[0] = kg
        info[1] = nsimplex
        info[2] = EPA_NOCONTACT
        info[3] = 0
        info[4] = 1
        if d0 > tolerance:
            _inflate(x1, x2, dist, full1, full2)
            if dist[0] > 0.0:
                dist[0] = MAX_LIMIT
            elif max_contacts > 1 and nsimplex > 0:
                # multi-contact from the features of GJK's final simplex (MuJoCo 4.0; guessed)
                sface = iwork[I_MC + 48:I_MC + 51].reshape((1, 3))
                sface[0, 0] = 0
                sface[0, 1] = 1 if nsimplex > 1 else 0
                sface[0, 2] = 2 if nsimplex > 2 else sface[0, 1]
                nx = multicontact(sv1, sv2, sidx, sface, 0, x1, x2, dist, nx, max_contacts, obf, obi,
                                  mc, mci, nm, mesh)
                dmin = dist[0]
                for i in range(1, nx):
                    if dist[i] < dmin:
                        dmin = dist[i]
                return dmin, nx
            return dist[0], nx
        if max_contacts == 0:
            dist[0] = 0.0
            return 0.0, 0
        for q in range(3):
            x1[0, q] = obf[0, q]
            x2[0, q] = obf[1, q]

    d0, nsimplex, separated, nx, kg = gjk(sv, sv1, sv2, sidx, x1, x2, obf, obi, graph, tolerance, n_iter, 0.0,
                                      work, iwork)
    info = iwork[I_INFO:I_INFO + 6]
    info[0] = kg
    info[1] = nsimplex
    info[2] = EPA_NOCONTACT
    info[3] = 0
    info[4] = 0
    dist[0] = d0
    if max_contacts == 0:
        return d0, nx

    if d0 <= tolerance and nsimplex > 1 and not separated:
        dist[0] = 0.0  # assume touching
        nv = 5 + n_iter
        nf = 6 * n_iter
        pv = work[W_POLY:W_POLY + 3 * nv].reshape((nv, 3))
        pv1 = work[W_POLY + 3 * nv:W_POLY + 3 * nv + 3 * nv].reshape((nv, 3))
        pv2 = work[W_POLY + 6 * nv:W_POLY + 6 * nv + 3 * nv].reshape((nv, 3))
        fv = work[W_POLY + 9 * nv:W_POLY + 9 * nv + 3 * nf].reshape((nf, 3))
        fdist2 = work[W_POLY + 9 * nv + 3 * nf:W_POLY + 9 * nv + 4 * nf]
        center = work[W_CEN:W_CEN + 3]
        pidx = iwork[I_POLY:I_POLY + 2 * nv].reshape((nv, 2))
        fverts = iwork[I_POLY + 2 * nv:I_POLY + 2 * nv + 3 * nf].reshape((nf, 3))
        fadj = iwork[I_POLY + 2 * nv + 3 * nf:I_POLY + 2 * nv + 3 * nf + 3 * nf].reshape((nf, 3))
        findex = iwork[I_POLY + 2 * nv + 6 * nf:I_POLY + 2 * nv + 7 * nf]
        pmap = iwork[I_POLY + 2 * nv + 7 * nf:I_POLY + 2 * nv + 8 * nf]
        hidx = iwork[I_POLY + 2 * nv + 8 * nf:I_POLY + 2 * nv + 9 * nf + 8]
        hedge = iwork[I_POLY + 2 * nv + 9 * nf + 8:I_POLY + 2 * nv + 10 * nf + 16]
        hstack = iwork[I_POLY + 2 * nv + 10 * nf + 16:I_POLY + 2 * nv + 13 * nf + 16]
        cnt = iwork[I_CNT:I_CNT + 4]   # nverts, nfaces, nmap, nedges
        for q in range(4):
            cnt[q] = 0
        if nsimplex == 2:
            ret = _polytope2(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        elif nsimplex == 3:
            ret = _polytope3(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance, True)
        else:
            ret = _polytope4(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        if ret == P3_TO_P2:
            # MuJoCo 4.0: polytope3 (from ccd or polytope4) found the origin on an edge
            ret = _polytope2(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        info[2] = ret
        if ret == 0:
            face, nx, ke = epa(pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex, pmap, cnt, center,
                           hidx, hedge, hstack, obf, obi, graph, tolerance, n_iter, x1, x2, dist)
            info[3] = ke
            if max_contacts > 1 and face >= 0:
                nx = multicontact(pv1, pv2, pidx, fverts, face, x1, x2, dist, nx, max_contacts,
                                  obf, obi, mc, mci, nm, mesh)
        else:
            nx = 0   # MuJoCo keeps nx from GJK (1) with dist 0: no contact either way
    min_dist = dist[0]
    for i in range(1, nx):
        if dist[i] < min_dist:
            min_dist = dist[i]
    return min_dist, nx


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
        x = obf[k, 12] if (v1i & 1) != 0 else -obf[k, 12]
        y = obf[k, 13] if (v1i & 2) != 0 else -obf[k, 13]
        z = obf[k, 14] if (v1i & 4) != 0 else -obf[k, 14]
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
    sx = obf[k, 12]
    sy = obf[k, 13]
    sz = obf[k, 14]
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
    r = obf[k, 12]
    for i in range(NPOLY_CYL):
        if idx == 0:
            _globalcoord(face, i, obf, k, r * CYL_COS[i], -(r * CYL_SIN[i]), obf[k, 13], True)
        else:
            _globalcoord(face, i, obf, k, r * CYL_COS[i], r * CYL_SIN[i], -obf[k, 13], True)
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
    lo = -t - obf[k, 13]
    hi = obf[k, 13] - t
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
    if obf[k, 15] > 0 and obi[k, 3] >= 0:
        l0, l1, _ = _local_dir(obf, k, w[r, 0] - obf[k, 0], w[r, 1] - obf[k, 1], w[r, 2] - obf[k, 2])
        n2 = l0 * l0 + l1 * l1
        s = obf[k, 12] / math.sqrt(n2) if n2 >= 1e-30 else 0.0
        _globalcoord(face, 0, obf, k, l0 * s, l1 * s, -sg * obf[k, 13], True)
    else:
        for q in range(3):
            face[0, q] = w[r, q]
    h2 = obf[k, 13] + obf[k, 13]
    for q in range(3):
        face[1, q] = h2 * edir[0, q] + face[0, q]
    return 1


@kernel
def _half_margin(obf, obi, k):
    """Half of object k's margin as MuJoCo 4.0's multi-contact counts it: none for a capsule (its
    margin is in its radius) or an object that is not a geom (read off the binary)."""
    if obi[k, 3] < 0 or obi[k, 0] == GEOM_CAPSULE:
        return 0.0
    return 0.5 * obf[k, 15]


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
    return mesh[5][mesh[0][obi[k, 3]]]


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
    va = mesh[2][mesh[0][obi[k, 3]]]
    base = mesh[13][mesh[0][obi[k, 3]]]  # mesh_polymap holds the mesh's own polygon numbers
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
    va = mesh[2][mesh[0][obi[k, 3]]]
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
    va = mesh[2][mesh[0][obi[k, 3]]]
    base = mesh[13][mesh[0][obi[k, 3]]]
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
    t = obi[k, 0]
    if n > 2 or (t != GEOM_BOX and t != GEOM_MESH):
        return
    for r in range(n):
        i = i0 if r == 0 else i1
        if t == GEOM_MESH:
            _mesh_vertex(v, r, obf, obi, k, i, mesh)
        else:
            sx = obf[k, 12] if (i & 1) != 0 else -obf[k, 12]
            sy = obf[k, 13] if (i & 2) != 0 else -obf[k, 13]
            sz = obf[k, 14] if (i & 4) != 0 else -obf[k, 14]
            _globalcoord(v, r, obf, k, sx, sy, sz, True)


@kernel
def _face(face, obf, obi, k, idx, mesh):
    """Face idx of object k (a box face, a cylinder cap or a mesh polygon); returns its vertex
    count."""
    t = obi[k, 0]
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

    t1 = obi[0, 0]
    t2 = obi[1, 0]
    # a mesh without hull polygons has no features
    if (t1 == GEOM_MESH and _mesh_polynum(obi, 0, mesh) == 0) or \
            (t2 == GEOM_MESH and _mesh_polynum(obi, 1, mesh) == 0):
        return nx
    margin = 0.5 * obf[0, 15] + 0.5 * obf[1, 15]
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
