"""Support functions of MuJoCo's native convex collider (mjc_*Support in engine_collision_convex.c)
and the supports of the Minkowski difference GJK and EPA take (support, epaSupport in
engine_collision_gjk.c).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk_common import (
    HULL_VERT_FLOATS,
    MESH_HULL_SLOTS,
    MINVAL2,
    OBF_MARGIN,
    OBF_NVERT,
    OBF_SIZE0,
    OBF_SIZE1,
    OBF_SIZE2,
    OBF_VERTS,
    OBI_GEOM,
    OBI_SUPPORT,
    OBI_TYPE,
    OBI_VERTEX,
    PRISM_VERT_FLOATS,
)
from kinedyn.engine.types import GEOM_BOX, GEOM_HFIELD, GEOM_MESH

# ---- support functions (mjc_*Support in engine_collision_convex.c) ------------------------------
#
# MuJoCo reaches them through function pointers; here support_point dispatches on a support
# kind (obi[k, OBI_SUPPORT]): a geom type, or POINT / LINE, the shrunk sphere and capsule mjc_ccd uses.
# GJK and EPA call them (collision_convex and collision_hfield import them from here to set up
# their objects, not the reverse). A mesh object carries its hull vertices and its search state (hill
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


@kernel
def _vdot(obf, k, i, l0, l1, l2):
    """dot(local direction, hull vertex i of object k) in dot3f's order."""
    b = OBF_VERTS + HULL_VERT_FLOATS * i
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
    return OBF_VERTS + HULL_VERT_FLOATS * np.intp(mesh[4][mesh[3][mesh[0][g]]]) + MESH_HULL_SLOTS


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
    obf[k, OBF_NVERT] = nvert
    va = vertadr[mid]
    for i in range(nvert):
        v = graph[adr + 2 + nvert + i]
        b = OBF_VERTS + HULL_VERT_FLOATS * i
        obf[k, b] = vert[va + v, 0]
        obf[k, b + 1] = vert[va + v, 1]
        obf[k, b + 2] = vert[va + v, 2]
        obf[k, b + 3] = v
    hb = OBF_VERTS + HULL_VERT_FLOATS * nvert
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
    kind = obi[k, OBI_SUPPORT]
    if kind == SUPPORT_POINT:                       # mjc_pointSupport
        res[r, 0] = obf[k, 0]
        res[r, 1] = obf[k, 1]
        res[r, 2] = obf[k, 2]
    elif kind == SUPPORT_SPHERE:                    # mjc_sphereSupport
        radius = obf[k, OBF_SIZE0]
        res[r, 0] = radius * d0 + obf[k, 0]
        res[r, 1] = radius * d1 + obf[k, 1]
        res[r, 2] = radius * d2 + obf[k, 2]
    elif kind == SUPPORT_LINE:                      # mjc_lineSupport
        dot = obf[k, 5] * d0 + obf[k, 8] * d1 + obf[k, 11] * d2
        scl = obf[k, OBF_SIZE1] if dot >= 0 else -obf[k, OBF_SIZE1]
        res[r, 0] = obf[k, 5] * scl + obf[k, 0]
        res[r, 1] = obf[k, 8] * scl + obf[k, 1]
        res[r, 2] = obf[k, 11] * scl + obf[k, 2]
    elif kind == SUPPORT_CAPSULE:                   # mjc_capsuleSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        radius = obf[k, OBF_SIZE0]
        s0 = l0 * radius
        s1 = l1 * radius
        s2 = l2 * radius
        s2 += obf[k, OBF_SIZE1] if l2 >= 0 else -obf[k, OBF_SIZE1]
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_ELLIPSOID:                 # mjc_ellipsoidSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        s0 = l0 * obf[k, OBF_SIZE0]
        s1 = l1 * obf[k, OBF_SIZE1]
        s2 = l2 * obf[k, OBF_SIZE2]
        norm2 = s0 * s0 + s1 * s1 + s2 * s2
        if norm2 < MINVAL2:
            res[r, 0] = obf[k, 3] * obf[k, OBF_SIZE0] + obf[k, 0]
            res[r, 1] = obf[k, 6] * obf[k, OBF_SIZE0] + obf[k, 1]
            res[r, 2] = obf[k, 9] * obf[k, OBF_SIZE0] + obf[k, 2]
            return
        inv = 1 / math.sqrt(norm2)
        s0 *= inv * obf[k, OBF_SIZE0]
        s1 *= inv * obf[k, OBF_SIZE1]
        s2 *= inv * obf[k, OBF_SIZE2]
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_CYLINDER:                  # mjc_cylinderSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        n2 = l0 * l0 + l1 * l1
        scl = obf[k, OBF_SIZE0] / math.sqrt(n2) if n2 >= MINVAL2 else 0.0
        s2 = obf[k, OBF_SIZE1] if l2 >= 0 else -obf[k, OBF_SIZE1]
        obi[k, OBI_VERTEX] = 0 if l2 >= 0 else 1   # the cap (0 top, 1 bottom): multicontact's feature
        _to_global(res, r, obf, k, scl * l0, scl * l1, s2)
    elif kind == SUPPORT_BOX:                       # mjc_boxSupport
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        s0 = obf[k, OBF_SIZE0] if l0 >= 0 else -obf[k, OBF_SIZE0]
        s1 = obf[k, OBF_SIZE1] if l1 >= 0 else -obf[k, OBF_SIZE1]
        s2 = obf[k, OBF_SIZE2] if l2 >= 0 else -obf[k, OBF_SIZE2]
        vi = 1 if s0 > 0 else 0
        vi |= 2 if s1 > 0 else 0
        vi |= 4 if s2 > 0 else 0
        obi[k, OBI_VERTEX] = vi
        _to_global(res, r, obf, k, s0, s1, s2)
    elif kind == SUPPORT_MESH:                      # mjc_meshSupport / mjc_hillclimbSupport
        # the hull vertices after the 16 slots as (x, y, z, vertex id), in mesh_graph's order
        # (init_mesh_object); the search state is MuJoCo's, so ties go the same way
        l0, l1, l2 = _local_dir(obf, k, d0, d1, d2)
        nvert = int(obf[k, OBF_NVERT])
        hb = OBF_VERTS + HULL_VERT_FLOATS * nvert
        if obf[k, hb] != 0:
            ib = OBF_VERTS + HULL_VERT_FLOATS * _hillclimb(obf, k, hb, nvert, l0, l1, l2, graph)
        else:
            # every vertex in id order, from the previous support vertex; a later vertex wins
            # only when strictly better (so on ties the previous one, else the lowest id)
            prev = obi[k, OBI_VERTEX]
            ib = -1
            best = -math.inf
            for i in range(nvert):
                b = OBF_VERTS + HULL_VERT_FLOATS * i
                if int(obf[k, b + 3]) == prev:
                    ib = b
                    best = l0 * obf[k, b] + l1 * obf[k, b + 1] + l2 * obf[k, b + 2]
            hold = ib >= 0
            for i in range(nvert):
                b = OBF_VERTS + HULL_VERT_FLOATS * i
                v = l0 * obf[k, b] + l1 * obf[k, b + 1] + l2 * obf[k, b + 2]
                if v > best or (v == best and not hold and obf[k, b + 3] < obf[k, ib + 3]):
                    hold = False
                    best = v
                    ib = b
        obi[k, OBI_VERTEX] = int(obf[k, ib + 3])
        _to_global(res, r, obf, k, obf[k, ib], obf[k, ib + 1], obf[k, ib + 2])
    elif kind == SUPPORT_PRISM:                     # mjc_prism_support
        # vertices 0-2 the bottom triangle, 3-5 the top one, (x, y, z) each at 16 + 3 i, in the
        # height field's frame; the first largest projection within the half chosen by dir z
        start = 0 if d2 < 0 else 3
        ib = start
        b = OBF_VERTS + PRISM_VERT_FLOATS * start
        best = obf[k, b] * d0 + obf[k, b + 1] * d1 + obf[k, b + 2] * d2
        for i in range(start + 1, start + 3):
            b = OBF_VERTS + PRISM_VERT_FLOATS * i
            v = obf[k, b] * d0 + obf[k, b + 1] * d1 + obf[k, b + 2] * d2
            if v > best:
                ib = i
                best = v
        # (no vertex index: MuJoCo's prism support leaves it, so EPA's repeated-vertex test for
        # discrete shapes compares the other geom's vertices only)
        b = OBF_VERTS + PRISM_VERT_FLOATS * ib
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
    if obf[k, OBF_MARGIN] > 0 and obi[k, OBI_GEOM] >= 0:
        m = 0.5 * obf[k, OBF_MARGIN]
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
    vidx[i, 0] = obi[0, OBI_VERTEX]
    vidx[i, 1] = obi[1, OBI_VERTEX]


@kernel
def _support_neg(vert, vert1, vert2, vidx, i, obf, obi, graph, n0, n1, n2):
    """Support with the negated direction given (gjkSupport/epaSupport compute dir_neg
    first and negate it, so -(-x) keeps the bits)."""
    _support(vert, vert1, vert2, vidx, i, obf, obi, graph, -n0, -n1, -n2)


@kernel
def _discrete(obf, obi):
    """discreteGeoms: both boxes/meshes/hfields without margin."""
    if obf[0, OBF_MARGIN] != 0 or obf[1, OBF_MARGIN] != 0:
        return False
    g1 = obi[0, OBI_TYPE]
    g2 = obi[1, OBI_TYPE]
    return ((g1 == GEOM_MESH or g1 == GEOM_BOX or g1 == GEOM_HFIELD)
            and (g2 == GEOM_MESH or g2 == GEOM_BOX or g2 == GEOM_HFIELD))


