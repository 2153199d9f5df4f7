"""The shared ground of MuJoCo's native convex collider (collision_gjk and its parts): constants,
the layout of the two objects' descriptions and of the scratch arrays, and small vector helpers.

Layout (kernels take arrays, never objects):

* the two convex objects: ``obf`` (2, width) floats per object -- pos at OBF_POS (3), row-major
  mat at OBF_MAT (9), size at OBF_SIZE0..OBF_SIZE2 (a mesh's hull vertex count in OBF_NVERT,
  the same slot), margin at OBF_MARGIN; from OBF_VERTS on, a mesh's hull vertices
  (HULL_VERT_FLOATS each: x, y, z, vertex id) and its search state, or a height-field prism's 6
  vertices (PRISM_VERT_FLOATS each). ``obi`` (2, 4) ints -- geom type (OBI_TYPE), support kind
  (OBI_SUPPORT), last support vertex or feature (OBI_VERTEX: a box or mesh vertex, a cylinder's
  cap), geom id (OBI_GEOM, -1 for an object that is not a geom).
* vertices of the simplex or polytope: ``vert`` (n, 3) = ``vert1 - vert2`` (Minkowski
  difference), ``vert1``/``vert2`` the support points on each object, ``vidx`` (n, 2) their
  vertex indices.
* witness points and distances: ``x1``, ``x2`` (MAXCONPAIR, 3) and ``dist`` (MAXCONPAIR,).
* EPA's polytope counts ``cnt`` (4,): vertices, faces, faces on the map, horizon edges
  (CNT_NVERT, CNT_NFACE, CNT_NMAP, CNT_NEDGE).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.types import MAXVAL, MINVAL
from kinedyn.engine.util_spatial import normalized3

MINVAL2 = MINVAL * MINVAL
MAXVAL2 = MAXVAL * MAXVAL
MAX_LIMIT = 1.7976931348623157e308     # DBL_MAX
MINDIST2 = MINVAL2                      # polytope2/3/4: origin on a face
MINEPATOL = MINVAL
FACE_TOL = 0.996                        # normals of two faces aligned (~5.1 deg)
EDGE_TOL = 0.0888                       # edge and face aligned (~5.1 deg)
MAXCONPAIR = 50
MC_NMAX = 16                            # multi-contact buffers hold at least this many vertices

# ---- the objects' description (obf, obi) ------------------------------------------------------------

OBF_POS = 0             # position (3)
OBF_MAT = 3             # orientation, row-major (9)
OBF_SIZE0 = 12          # geom size (3): radius, half-length, ... as the geom type reads them
OBF_SIZE1 = 13
OBF_SIZE2 = 14
OBF_NVERT = 12          # a mesh object's hull vertex count (in the first size slot)
OBF_MARGIN = 15         # the geom's margin (0 while mjc_ccd has taken it off)
OBF_VERTS = 16          # the first of a mesh's hull vertices or a prism's vertices
HULL_VERT_FLOATS = 4    # a mesh hull vertex: x, y, z in the mesh frame, vertex id
PRISM_VERT_FLOATS = 3   # a height-field prism vertex: x, y, z in the height field's frame
MESH_HULL_SLOTS = 30    # after a mesh's hull vertices: the mode, the warm start, 27 extrema seeds,
#                         the mesh's mesh_graphadr

OBI_TYPE = 0            # geom type
OBI_SUPPORT = 1         # support kind (collision_gjk_support.SUPPORT_*)
OBI_VERTEX = 2          # last support vertex (boxes, meshes) or cap (cylinders), -1 for none
OBI_GEOM = 3            # geom id, -1 for an object that is not a geom

# EPA's polytope counts (cnt)
CNT_NVERT = 0
CNT_NFACE = 1
CNT_NMAP = 2
CNT_NEDGE = 3

# EPA status (mjEPAStatus: the values the polytope builders return)
EPA_SUCCESS = 0
EPA_P2_NONCONVEX = 2
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

# floats (the two objects' descriptions are at the end of the float scratch, after the
# multi-contact buffer: collide_convex and collide_hfield place them by their width)
W_X1 = 0           # (MAXCONPAIR, 3) witness points on object 1
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

# ints (the multi-contact face indices are at the end of the int scratch)
I_OBI = 0          # (2, 4) objects
I_SIDX = 8         # (4, 2) GJK simplex vertex indices
I_TMPIDX = 16      # (1, 2) GJK's final separation test
I_CNT = 18         # (4,) EPA's polytope counts (CNT_*)
I_SFACE = 22       # (1, 3) GJK's simplex as the face multi-contact starts from
I_POLY = 25        # EPA's polytope


def convex_work_size(ccd_iterations, max_hull_vertices=0):
    """(float count, int count) of the scratch arrays collide_convex needs; with meshes, the two
    objects' descriptions (at the end of the float scratch) hold up to ``max_hull_vertices``
    hull vertices each (4 floats: x, y, z, vertex id), and the multi-contact buffers before them
    room for polygons and vertex degrees of up to that many vertices (mc_floats)."""
    nv = 5 + ccd_iterations
    nf = 6 * ccd_iterations
    nm = max(MC_NMAX, max_hull_vertices)
    objects = 2 * (OBF_VERTS + MESH_HULL_SLOTS + 12 * max_hull_vertices)
    return (W_POLY + 9 * nv + 4 * nf + mc_floats(nm) + objects,
            I_POLY + 2 * nv + 13 * nf + 16 + 2 * nm)


def mc_floats(nm):
    """Floats of the multi-contact buffer for polygons and vertex degrees up to nm (MuJoCo's
    npolygonmax and nmeshdegmax): normals, edge ends and the two faces (nm x 3 each), the
    EPA face's vertices (2 x 3 x 3), the clipped polygons (2 x 2nm x 3) and the clipping planes
    (nm x 4). The int buffer holds 2 nm face indices."""
    return 31 * nm + 18


# the same formula for kernels (collide_convex, collide_hfield); convex_work_size, which the
# compiler calls from Python, takes mc_floats itself and needs no compiled code
mc_size = kernel(mc_floats)


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


