"""Height-field contacts (mjc_ConvexHField in engine_collision_convex.c).

A height field (compiler.hfield) against any convex geom, in the field's frame:

1. the geom's bounding sphere (rbound + margin) against the field's box [-size[0], size[0]] x
   [-size[1], size[1]] x [-size[3], size[2]], then the geom's own box from six support points
   (in the field's frame), widened by the margin, against it; either apart: no contact;
2. the grid cells under the geom's box widened by the margin, row by row and column by column:
   each cell is two triangular prisms, the triangle of three grid points on top and the same
   triangle at z = -size[3] below; a prism whose top is more than the margin below the geom's
   lowest point is skipped;
3. each remaining prism against the geom through MuJoCo's native GJK/EPA (collision_gjk.ccd,
   with the prism support and one contact per prism, as mjc_penetration), a contact for each
   prism within the margin, at the witness points' midpoint, normal along their difference,
   turned back to the world frame; at most MAXCONPAIR (50) contacts, in loop order.

Margins. The readable 3.x source raises the prism tops by the margin and inflates the geom by
half of it; MuJoCo 4.0 does neither: both objects carry the margin as in mjc_Convex (a GJK
distance query on the bare shapes, contacts within the margin reported at their true
distance), and the sub-grid and the height test are widened by it. Found by comparing with the
4.0 library (tests/test_hfield.py), as 4.0's source is not available.

Kernels do not allocate: collide_hfield uses the convex collider's scratch (convex_work_size,
with room for a prism's 6 vertices per object).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk import ccd
from kinedyn.engine.collision_gjk_common import (
    I_OBI,
    MAXCONPAIR,
    MC_NMAX,
    OBF_MARGIN,
    OBF_MAT,
    OBF_SIZE0,
    OBF_VERTS,
    OBI_GEOM,
    OBI_SUPPORT,
    OBI_TYPE,
    OBI_VERTEX,
    PRISM_VERT_FLOATS,
    W_DIST,
    W_X1,
    W_X2,
    mc_size,
)
from kinedyn.engine.collision_gjk_support import (
    SUPPORT_PRISM,
    init_mesh_object,
    mesh_object_width,
    support_point,
)
from kinedyn.engine.collision_primitive import write_contact
from kinedyn.engine.types import GEOM_HFIELD, GEOM_MESH
from kinedyn.engine.util_spatial import normalized3

PRISM_FLOATS = OBF_VERTS + 6 * PRISM_VERT_FLOATS  # an object description holding a prism's 6 vertices
# where the prism's vertices start in its obf row: 0-2 the bottom triangle, 3-5 the top one
_V0, _V1, _V2, _V3, _V4, _V5 = (OBF_VERTS + PRISM_VERT_FLOATS * i for i in range(6))

__all__ = ["PRISM_FLOATS", "collide_hfield"]


@kernel
def _add_prism_vert(obf, data, adr, ncol, r, c, i, dx, dy, s0, s1, s2):
    """addPrismVert: shift the prism's vertices by one (0 <- 1 <- 2 bottom, 3 <- 4 <- 5 top) and
    put grid point (r + 1 - i, c) last (bottom z stays)."""
    for q in range(3):
        obf[0, _V0 + q] = obf[0, _V1 + q]
        obf[0, _V1 + q] = obf[0, _V2 + q]
        obf[0, _V3 + q] = obf[0, _V4 + q]
        obf[0, _V4 + q] = obf[0, _V5 + q]
    dr = 1 - i
    x = dx * c - s0
    y = dy * (r + dr) - s1
    obf[0, _V2] = x
    obf[0, _V2 + 1] = y
    obf[0, _V5] = x
    obf[0, _V5 + 1] = y
    obf[0, _V5 + 2] = data[adr + (r + dr) * ncol + c] * s2


@kernel
def collide_hfield(geom_type, xpos, xmat, size, rbound, g1, g2, margin, ccd_tolerance, ccd_iterations,
                   dist, pos, frame, c0, work, iwork, mesh, hfield):
    """Contacts between height-field geom g1 and convex geom g2 (mjc_ConvexHField); returns the
    number written at rows c0, c0+1, ... (at most MAXCONPAIR).

    mesh: the mesh arrays collide_convex takes (geom_dataid, mesh_vert, mesh_vertadr,
    mesh_graphadr, mesh_graph, then the hull polygons); hfield:
    (hfield_size, hfield_nrow, hfield_ncol, hfield_adr, hfield_data)."""
    hsize, hnrow, hncol, hadr, hdata = hfield
    dataid = mesh[0]
    hid = dataid[g1]
    nrow = hnrow[hid]
    ncol = hncol[hid]
    adr = hadr[hid]
    s0 = hsize[hid, 0]
    s1 = hsize[hid, 1]
    s2 = hsize[hid, 2]
    s3 = hsize[hid, 3]
    m1 = xmat[g1]
    m2 = xmat[g2]
    # geom 2's position in the field's frame (mju_mulMatTVec3)
    v0 = xpos[g2, 0] - xpos[g1, 0]
    v1 = xpos[g2, 1] - xpos[g1, 1]
    v2 = xpos[g2, 2] - xpos[g1, 2]
    lp0 = m1[0, 0] * v0 + m1[1, 0] * v1 + m1[2, 0] * v2
    lp1 = m1[0, 1] * v0 + m1[1, 1] * v1 + m1[2, 1] * v2
    lp2 = m1[0, 2] * v0 + m1[1, 2] * v1 + m1[2, 2] * v2
    # bounding sphere against the field's box
    radius = rbound[g2] + margin
    if ((s0 < lp0 - radius) or (-s0 > lp0 + radius) or (s1 < lp1 - radius) or (-s1 > lp1 + radius)
            or (s2 < lp2 - radius) or (-s3 > lp2 + radius)):
        return 0

    # the two objects: 0 the prism (vertices filled below), 1 geom 2 in the field's frame
    width = PRISM_FLOATS
    t2 = geom_type[g2]
    nhull = 0
    if t2 == GEOM_MESH:
        width = max(width, mesh_object_width(mesh, g2))
        nhull = mesh[4][mesh[3][dataid[g2]]]
    end = work.shape[0] - 2 * width
    obf = work[end:].reshape((2, width))
    obi = iwork[I_OBI:I_OBI + 8].reshape((2, 4))
    # multi-contact buffers, laid out as collide_convex's (one contact per prism never uses them)
    nm = max(MC_NMAX, nhull)
    mc = work[end - mc_size(nm):end]
    mci = iwork[iwork.shape[0] - 2 * nm:]
    for q in range(width):
        obf[0, q] = 0.0
        obf[1, q] = 0.0
    obi[0, OBI_TYPE] = GEOM_HFIELD
    obi[0, OBI_SUPPORT] = SUPPORT_PRISM
    obi[0, OBI_VERTEX] = -1
    obi[0, OBI_GEOM] = g1
    obi[1, OBI_TYPE] = t2
    obi[1, OBI_SUPPORT] = t2
    obi[1, OBI_VERTEX] = -1
    obi[1, OBI_GEOM] = g2
    obf[1, 0] = lp0
    obf[1, 1] = lp1
    obf[1, 2] = lp2
    for a in range(3):
        for b in range(3):  # mji_mulMatTMat3: mat1^T mat2
            obf[1, OBF_MAT + 3 * a + b] = m1[0, a] * m2[0, b] + m1[1, a] * m2[1, b] + m1[2, a] * m2[2, b]
        obf[1, OBF_SIZE0 + a] = size[g2, a]
    if t2 == GEOM_MESH:
        init_mesh_object(obf, 1, g2, mesh)

    # geom 2's box in the field's frame from its support points (no margin)
    sp = work[W_X1:W_X1 + 3].reshape((1, 3))
    support_point(sp, 0, obf, obi, mesh[4], 1, 1.0, 0.0, 0.0)
    xmax = sp[0, 0]
    support_point(sp, 0, obf, obi, mesh[4], 1, -1.0, 0.0, 0.0)
    xmin = sp[0, 0]
    support_point(sp, 0, obf, obi, mesh[4], 1, 0.0, 1.0, 0.0)
    ymax = sp[0, 1]
    support_point(sp, 0, obf, obi, mesh[4], 1, 0.0, -1.0, 0.0)
    ymin = sp[0, 1]
    support_point(sp, 0, obf, obi, mesh[4], 1, 0.0, 0.0, 1.0)
    zmax = sp[0, 2]
    support_point(sp, 0, obf, obi, mesh[4], 1, 0.0, 0.0, -1.0)
    zmin = sp[0, 2]
    if ((xmin - margin > s0) or (xmax + margin < -s0) or (ymin - margin > s1) or (ymax + margin < -s1)
            or (zmin - margin > s2) or (zmax + margin < -s3)):
        return 0

    # the sub-grid under the box
    cmin = int(math.floor((xmin - margin + s0) / (2.0 * s0) * (ncol - 1)))
    cmax = int(math.ceil((xmax + margin + s0) / (2.0 * s0) * (ncol - 1)))
    rmin = int(math.floor((ymin - margin + s1) / (2.0 * s1) * (nrow - 1)))
    rmax = int(math.ceil((ymax + margin + s1) / (2.0 * s1) * (nrow - 1)))
    cmin = max(0, cmin)
    cmax = min(ncol - 1, cmax)
    rmin = max(0, rmin)
    rmax = min(nrow - 1, rmax)

    # both objects carry the margin, as in mjc_Convex (MuJoCo 4.0: a GJK distance query, then the
    # contact distance is margin + the inflated shapes' signed distance)
    obf[0, OBF_MARGIN] = margin
    obf[1, OBF_MARGIN] = margin
    dx = (2.0 * s0) / (ncol - 1)
    dy = (2.0 * s1) / (nrow - 1)
    obf[0, _V0 + 2] = -s3
    obf[0, _V1 + 2] = -s3
    obf[0, _V2 + 2] = -s3

    x1 = work[W_X1:W_X1 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    x2 = work[W_X2:W_X2 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    wdist = work[W_DIST:W_DIST + MAXCONPAIR]
    ncon = 0
    for r in range(rmin, rmax):
        _add_prism_vert(obf, hdata, adr, ncol, r, cmin, 0, dx, dy, s0, s1, s2)
        _add_prism_vert(obf, hdata, adr, ncol, r, cmin, 1, dx, dy, s0, s1, s2)
        for c in range(cmin + 1, cmax + 1):
            for i in range(2):
                _add_prism_vert(obf, hdata, adr, ncol, r, c, i, dx, dy, s0, s1, s2)
                if (obf[0, _V3 + 2] + margin < zmin and obf[0, _V4 + 2] + margin < zmin
                        and obf[0, _V5 + 2] + margin < zmin):
                    continue  # the prism's top is below the geom by more than the margin
                # the prism's centre starts the search (mjc_center: the mean of its vertices)
                for q in range(3):
                    acc = 0.0
                    for k in range(6):
                        acc += obf[0, OBF_VERTS + PRISM_VERT_FLOATS * k + q]
                    obf[0, q] = acc * (1.0 / 6.0)
                dmin, nx = ccd(obf, obi, ccd_tolerance, ccd_iterations, 1, x1, x2, wdist, work, iwork,
                               mc, mci, nm, mesh)
                if not dmin < 0:
                    continue
                # mjc_penetration: midpoint and unit x1 - x2, then back to the world frame
                n0, n1, n2, _ = normalized3(x1[0, 0] - x2[0, 0], x1[0, 1] - x2[0, 1], x1[0, 2] - x2[0, 2])
                p0 = (x1[0, 0] + x2[0, 0]) * 0.5
                p1 = (x1[0, 1] + x2[0, 1]) * 0.5
                p2 = (x1[0, 2] + x2[0, 2]) * 0.5
                write_contact(dist, pos, frame, c0 + ncon, margin + wdist[0],
                              m1[0, 0] * p0 + m1[0, 1] * p1 + m1[0, 2] * p2 + xpos[g1, 0],
                              m1[1, 0] * p0 + m1[1, 1] * p1 + m1[1, 2] * p2 + xpos[g1, 1],
                              m1[2, 0] * p0 + m1[2, 1] * p1 + m1[2, 2] * p2 + xpos[g1, 2],
                              m1[0, 0] * n0 + m1[0, 1] * n1 + m1[0, 2] * n2,
                              m1[1, 0] * n0 + m1[1, 1] * n1 + m1[1, 2] * n2,
                              m1[2, 0] * n0 + m1[2, 1] * n1 + m1[2, 2] * n2)
                ncon += 1
                if ncon >= MAXCONPAIR:
                    return ncon
    return ncon
