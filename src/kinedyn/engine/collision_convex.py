"""The general convex collider for primitive geoms (engine_collision_convex.c): mjc_Convex on
MuJoCo's native CCD (collision_gjk), and mjc_PlaneConvex for plane-ellipsoid.

MuJoCo 4.0 sends these pairs to mjc_Convex (constraints.md, section 4.3): sphere-ellipsoid,
capsule-ellipsoid, capsule-cylinder, ellipsoid-ellipsoid, ellipsoid-cylinder, ellipsoid-box,
cylinder-cylinder and cylinder-box, and meshes against everything but planes (their hull
vertices as supports, their hull polygons for multi-contact). Only the native CCD path is here; the
driver refuses ``nativeccd="disable"``.

The support functions (mjc_*Support) live in collision_gjk, which calls them (MuJoCo reaches
them through function pointers; importing them from here would make a cycle).

Agreement with MuJoCo 4.0 (tests/test_collision_convex.py): plane-ellipsoid bit for bit; single
contacts (GJK distance queries for spheres, capsules and margins, GJK + EPA for deep ones) bit
for bit in the poses tried; multi-contact counts in 97-100 % of poses, the points of
multi-contacts approximately. collision_gjk's docstring has the details.

Kernels do not allocate: collide_convex takes float and int scratch arrays sized by
convex_work_size(ccd_iterations).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk import ccd
from kinedyn.engine.collision_gjk_common import (
    I_OBI,
    MAXCONPAIR,
    MC_NMAX,
    MINVAL2,
    OBF_MARGIN,
    OBF_MAT,
    OBF_SIZE0,
    OBI_GEOM,
    OBI_SUPPORT,
    OBI_TYPE,
    OBI_VERTEX,
    W_DIST,
    W_X1,
    W_X2,
    convex_work_size,
    mc_size,
)
from kinedyn.engine.collision_gjk_multicontact import diagonal_area
from kinedyn.engine.collision_gjk_support import init_mesh_object, mesh_object_width
from kinedyn.engine.collision_primitive import write_contact, z_axis
from kinedyn.engine.types import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_MESH
from kinedyn.engine.util_spatial import normalized3

__all__ = ["collide_convex", "collide_plane_convex", "collide_plane_mesh", "convex_work_size", "max_contacts"]


@kernel
def _init_obj(obf, obi, k, geom_type, xpos, xmat, size, g, margin):
    """mjc_initCCDObj for a geom (a mesh's hull vertices are added by _init_mesh)."""
    for q in range(3):
        obf[k, q] = xpos[g, q]
        obf[k, OBF_SIZE0 + q] = size[g, q]
    for a in range(3):
        for b in range(3):
            obf[k, OBF_MAT + 3 * a + b] = xmat[g, a, b]
    obf[k, OBF_MARGIN] = margin
    obi[k, OBI_TYPE] = geom_type[g]
    obi[k, OBI_SUPPORT] = geom_type[g]
    obi[k, OBI_VERTEX] = -1
    obi[k, OBI_GEOM] = g


@kernel
def _object_width(geom_type, g1, g2, mesh):
    """Floats per object description: 16, or the larger mesh's (mesh_object_width)."""
    n = 16
    for g in (g1, g2):
        if geom_type[g] == GEOM_MESH:
            n = max(n, mesh_object_width(mesh, g))
    return n


@kernel
def _hull_vertices(geom_type, g1, g2, mesh):
    """The larger hull's vertex count of the two geoms (0 without meshes)."""
    n = 0
    for g in (g1, g2):
        if geom_type[g] == GEOM_MESH:
            n = max(n, np.intp(mesh[4][mesh[3][mesh[0][g]]]))
    return n


@kernel
def max_contacts(t1, t2, margin, multiccd):
    """Contacts one pass of the narrowphase can return (maxContacts; mj_maxContact in 4.0:
    4 between boxes, meshes and cylinders, 2 with a capsule, 8 box-box, 1 otherwise or without
    multiccd; margins no longer force 1 since 3.17)."""
    if t1 == GEOM_BOX and t2 == GEOM_BOX:
        return 8
    if not multiccd:
        return 1
    flat1 = t1 == GEOM_BOX or t1 == GEOM_MESH or t1 == GEOM_CYLINDER
    flat2 = t2 == GEOM_BOX or t2 == GEOM_MESH or t2 == GEOM_CYLINDER
    if flat1 and flat2:
        return 4
    if (t1 == GEOM_CAPSULE and flat2) or (t2 == GEOM_CAPSULE and flat1):
        return 2
    return 1


@kernel
def collide_convex(geom_type, xpos, xmat, size, g1, g2, margin, ccd_tolerance, ccd_iterations,
                   multiccd, dist, pos, frame, c0, work, iwork, mesh):
    """Convex-convex contacts of geoms g1, g2 by GJK/EPA (mjc_Convex with nativeccd, through
    mjc_penetration). Returns the number of contacts written at rows c0, c0+1, ...

    work, iwork: float and int scratch arrays of the sizes convex_work_size(ccd_iterations,
    largest hull) gives (kernels do not allocate); the object descriptions sit at the end of
    ``work``, the multi-contact buffers before them (and at the end of ``iwork``). mesh:
    (geom_dataid, mesh_vert, mesh_vertadr, mesh_graphadr, mesh_graph, mesh_polynum,
    mesh_polyvertadr, mesh_polyvertnum, mesh_polyvert, mesh_polynormal, mesh_polymapadr,
    mesh_polymapnum, mesh_polymap, mesh_polyadr, mesh_extrema, mesh_vertnum); mesh_polymap holds
    each mesh's own polygon numbers, mesh_polyadr[mesh] their first global one."""
    width = _object_width(geom_type, g1, g2, mesh)
    end = work.shape[0] - 2 * width
    obf = work[end:].reshape((2, width))
    # multi-contact buffers for polygons and vertex degrees up to the larger hull's vertex count
    nm = max(MC_NMAX, _hull_vertices(geom_type, g1, g2, mesh))
    mc = work[end - mc_size(nm):end]
    mci = iwork[iwork.shape[0] - 2 * nm:]
    obi = iwork[I_OBI:I_OBI + 8].reshape((2, 4))
    _init_obj(obf, obi, 0, geom_type, xpos, xmat, size, g1, margin)
    _init_obj(obf, obi, 1, geom_type, xpos, xmat, size, g2, margin)
    if geom_type[g1] == GEOM_MESH:
        init_mesh_object(obf, 0, g1, mesh)
    if geom_type[g2] == GEOM_MESH:
        init_mesh_object(obf, 1, g2, mesh)
    maxcon = max_contacts(obi[0, OBI_TYPE], obi[1, OBI_TYPE], margin, multiccd)
    x1 = work[W_X1:W_X1 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    x2 = work[W_X2:W_X2 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    wdist = work[W_DIST:W_DIST + MAXCONPAIR]
    d, nx = ccd(obf, obi, ccd_tolerance, ccd_iterations, maxcon, x1, x2, wdist, work, iwork, mc, mci, nm,
                mesh)
    if not d < 0:
        return 0
    for i in range(nx):
        # the witness points' midpoint, and the unit normal x1 - x2 (mju_normalize3)
        n0, n1, n2, _ = normalized3(x1[i, 0] - x2[i, 0], x1[i, 1] - x2[i, 1], x1[i, 2] - x2[i, 2])
        write_contact(dist, pos, frame, c0 + i, margin + wdist[i], (x1[i, 0] + x2[i, 0]) * 0.5,
                      (x1[i, 1] + x2[i, 1]) * 0.5, (x1[i, 2] + x2[i, 2]) * 0.5, n0, n1, n2)
    return nx


@kernel
def collide_plane_convex(geom_type, xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Plane-ellipsoid (mjc_PlaneConvex): the ellipsoid's support point against the plane
    normal. One contact."""
    nx, ny, nz = z_axis(xmat, g1)
    d0 = -nx
    d1 = -ny
    d2 = -nz
    m = xmat[g2]
    # mjccd_support: local direction, support on the ellipsoid, back to the world frame
    l0 = m[0, 0] * d0 + m[1, 0] * d1 + m[2, 0] * d2
    l1 = m[0, 1] * d0 + m[1, 1] * d1 + m[2, 1] * d2
    l2 = m[0, 2] * d0 + m[1, 2] * d1 + m[2, 2] * d2
    s0 = l0 * size[g2, 0]
    s1 = l1 * size[g2, 1]
    s2 = l2 * size[g2, 2]
    norm2 = s0 * s0 + s1 * s1 + s2 * s2
    if norm2 < MINVAL2:  # too small to normalise: the end of the first axis
        v0 = m[0, 0] * size[g2, 0] + xpos[g2, 0]
        v1 = m[1, 0] * size[g2, 0] + xpos[g2, 1]
        v2 = m[2, 0] * size[g2, 0] + xpos[g2, 2]
    else:
        # each scaled by (1/norm) * size, in that association (4.0's binary; 1 ulp otherwise)
        inv = 1 / math.sqrt(norm2)
        s0 *= inv * size[g2, 0]
        s1 *= inv * size[g2, 1]
        s2 *= inv * size[g2, 2]
        v0 = (m[0, 0] * s0 + m[0, 1] * s1 + m[0, 2] * s2) + xpos[g2, 0]
        v1 = (m[1, 0] * s0 + m[1, 1] * s1 + m[1, 2] * s2) + xpos[g2, 1]
        v2 = (m[2, 0] * s0 + m[2, 1] * s1 + m[2, 2] * s2) + xpos[g2, 2]
    dd = nx * (v0 - xpos[g1, 0]) + ny * (v1 - xpos[g1, 1]) + nz * (v2 - xpos[g1, 2])
    if dd > margin:
        return 0
    h = -0.5 * dd
    write_contact(dist, pos, frame, c0, dd, v0 + nx * h, v1 + ny * h, v2 + nz * h, nx, ny, nz)
    return 1


@kernel
def collide_plane_mesh(xpos, xmat, g1, g2, margin, dist, pos, frame, c0, mesh):
    """Plane-mesh contacts as MuJoCo 4.0's mjc_PlaneConvex makes them for meshes (rewritten in
    MuJoCo 3.13, after kinedyn's reference source; the rules below were read off mujoco 4.0.0's
    binary and give its contacts bit for bit, tests/test_mesh.py):

    * the support vertex along the plane's inward normal: MuJoCo's mjc_hillclimbSupport for a mesh
      with a hull graph and more than 9 vertices (a cold start from the seed of the direction's
      3 x 3 x 3 cell, mesh_extrema), else mjc_meshSupport's scan of every mesh vertex; a contact
      there if it is within the margin;
    * the hull polygon through that vertex whose normal points most against the plane normal
      (none if the vertex lies in no polygon: one contact);
    * the polygon's next vertices in polygon order from the support vertex (up to 3 more); a
      polygon of more than 4 vertices is first reduced to 4 (_plane_mesh_quad);
    * each of them a contact if within the margin and not above the mesh frame's origin along
      the plane normal; the contact point is midway between the vertex and the plane.

    mesh: collide_convex's mesh arrays (collision_driver._mesh_arrays)."""
    dataid, vert, vertadr, graphadr, graph, polynum = mesh[0], mesh[1], mesh[2], mesh[3], mesh[4], mesh[5]
    polyvertadr, polyvertnum, polyvert, polynormal = mesh[6], mesh[7], mesh[8], mesh[9]
    polymapadr, polymapnum, polymap, polyadr = mesh[10], mesh[11], mesh[12], mesh[13]
    extrema, vertnum = mesh[14], mesh[15]
    nx, ny, nz = z_axis(xmat, g1)
    r = xmat[g2]
    # the plane normal in the mesh frame (mju_mulMatTVec3), and its reverse, the support direction
    l0 = r[0, 0] * nx + r[1, 0] * ny + r[2, 0] * nz
    l1 = r[0, 1] * nx + r[1, 1] * ny + r[2, 1] * nz
    l2 = r[0, 2] * nx + r[1, 2] * ny + r[2, 2] * nz
    mid = dataid[g2]
    va = vertadr[mid]
    if graphadr[mid] >= 0 and vertnum[mid] > 9:
        ib = _hillclimb_support(vert, va, graph, graphadr[mid], extrema[mid], -l0, -l1, -l2)
    else:
        # mjc_meshSupport: every vertex of the mesh (not only the hull's), the first maximum
        ib = 0
        best = -3.4028234663852886e38  # -FLT_MAX
        for i in range(vertnum[mid]):
            dot = -l0 * vert[va + i, 0] + -l1 * vert[va + i, 1] + -l2 * vert[va + i, 2]
            if dot > best:
                best = dot
                ib = i
    if _plane_mesh_contact(xpos, xmat, g1, g2, margin, dist, pos, frame, c0, vert, va, ib, nx, ny, nz,
                           False) == 0:
        return 0
    if polynum[mid] == 0:
        return 1
    # the polygon through the support vertex facing the plane most directly (dot below 1)
    pbest = -1
    pdot = 1.0
    for j in range(polymapnum[va + ib]):
        p = polyadr[mid] + polymap[polymapadr[va + ib] + j]
        dot = l0 * polynormal[p, 0] + l1 * polynormal[p, 1] + l2 * polynormal[p, 2]
        if dot < pdot:
            pdot = dot
            pbest = p
    if pbest < 0:
        return 1
    pa = polyvertadr[pbest]
    cnt = np.int64(polyvertnum[pbest])
    s = 0
    for j in range(cnt):
        if polyvert[pa + j] == ib:
            s = j
            break
    k1 = (s + 1) % cnt
    k2 = (s + 2) % cnt
    k3 = (s + 3) % cnt
    if cnt > 4:
        k1, k2, k3 = _plane_mesh_quad(vert, va, polyvert, pa, cnt, s, k1, k2, k3)
        cnt = 4
    ncon = 1
    for j in range(1, min(cnt, 4)):
        k = k1 if j == 1 else (k2 if j == 2 else k3)
        ncon += _plane_mesh_contact(xpos, xmat, g1, g2, margin, dist, pos, frame, c0 + ncon, vert, va,
                                    polyvert[pa + k], nx, ny, nz, True)
    return ncon


@kernel
def _hillclimb_support(vert, va, graph, adr, seeds, d0, d1, d2):
    """mjc_hillclimbSupport with a cold start: from the seed of the direction's cell (components
    beyond +-0.4 count; ``seeds``: the mesh's row of mesh_extrema), move to the first neighbour
    (mesh_graph's edges) farther along d than the best so far until none is; returns the mesh
    vertex id."""
    nh = graph[adr]
    cx = (1 if d0 > 0.4 else 0) - (1 if d0 < -0.4 else 0)
    cy = (1 if d1 > 0.4 else 0) - (1 if d1 < -0.4 else 0)
    cz = (1 if d2 > 0.4 else 0) - (1 if d2 < -0.4 else 0)
    imax = seeds[(cx + 1) * 9 + (cy + 1) * 3 + cz + 1]
    v = graph[adr + 2 + nh + imax]
    best = d0 * vert[va + v, 0] + d1 * vert[va + v, 1] + d2 * vert[va + v, 2]
    prev = -1
    while imax != prev:
        prev = imax
        i = graph[adr + 2 + imax]
        while graph[adr + 2 + 2 * nh + i] >= 0:
            sub = graph[adr + 2 + 2 * nh + i]
            v = graph[adr + 2 + nh + sub]
            dot = d0 * vert[va + v, 0] + d1 * vert[va + v, 1] + d2 * vert[va + v, 2]
            if dot > best:
                best = dot
                imax = sub
            i += 1
    return graph[adr + 2 + nh + imax]


@kernel
def _quad_area(vert, va, polyvert, pa, a, b, c, d):
    """Half the norm of (A - C) x (B - D): the area of the quadrilateral ABCD of polygon positions
    a, b, c, d (mesh-frame vertices)."""
    ia, ib = va + polyvert[pa + a], va + polyvert[pa + b]
    ic, id_ = va + polyvert[pa + c], va + polyvert[pa + d]
    return diagonal_area(vert[ia, 0] - vert[ic, 0], vert[ia, 1] - vert[ic, 1], vert[ia, 2] - vert[ic, 2],
                         vert[ib, 0] - vert[id_, 0], vert[ib, 1] - vert[id_, 1], vert[ib, 2] - vert[id_, 2])


@kernel
def _plane_mesh_quad(vert, va, polyvert, pa, cnt, s, b, c, d):
    """MuJoCo 4.0's reduction of a polygon of more than 4 vertices to a quadrilateral in
    mjc_PlaneConvex (read off the binary): starting from positions s, s+1, s+2, s+3, advance the
    fourth corner while that enlarges the area; after each such step advance the third, then the
    second, each while the area strictly grows. The first corner stays the support vertex.
    Returns the other three positions."""
    area = _quad_area(vert, va, polyvert, pa, s, b, c, d)
    while True:
        dn = (d + 1) % cnt
        new = _quad_area(vert, va, polyvert, pa, s, b, c, dn)
        if area >= new:
            return b, c, d
        d = dn
        area = new
        b, c, area = _advance_corner(vert, va, polyvert, pa, cnt, s, b, c, d, area, False)
        b, c, area = _advance_corner(vert, va, polyvert, pa, cnt, s, b, c, d, area, True)


@kernel
def _advance_corner(vert, va, polyvert, pa, cnt, s, b, c, d, area, second):
    """_plane_mesh_quad's inner step: move corner c (or b if ``second``) on while the area strictly
    grows; returns (b, c, area)."""
    while True:
        bn = (b + 1) % cnt if second else b
        cn = c if second else (c + 1) % cnt
        new = _quad_area(vert, va, polyvert, pa, s, bn, cn, d)
        if not area < new:
            return b, c, area
        b = bn
        c = cn
        area = new


@kernel
def _plane_mesh_contact(xpos, xmat, g1, g2, margin, dist, pos, frame, c, vert, va, v, nx, ny, nz, below):
    """A contact at mesh vertex v if it is within the margin of the plane (and, with ``below``, not
    above the mesh frame's origin along the plane normal); returns 0 or 1."""
    r = xmat[g2]
    p0 = r[0, 0] * vert[va + v, 0] + r[0, 1] * vert[va + v, 1] + r[0, 2] * vert[va + v, 2] + xpos[g2, 0]
    p1 = r[1, 0] * vert[va + v, 0] + r[1, 1] * vert[va + v, 1] + r[1, 2] * vert[va + v, 2] + xpos[g2, 1]
    p2 = r[2, 0] * vert[va + v, 0] + r[2, 1] * vert[va + v, 1] + r[2, 2] * vert[va + v, 2] + xpos[g2, 2]
    dd = nx * (p0 - xpos[g1, 0]) + ny * (p1 - xpos[g1, 1]) + nz * (p2 - xpos[g1, 2])
    if dd > margin:
        return 0
    if below and nx * (p0 - xpos[g2, 0]) + ny * (p1 - xpos[g2, 1]) + nz * (p2 - xpos[g2, 2]) > 0:
        return 0
    h = -0.5 * dd
    write_contact(dist, pos, frame, c, dd, p0 + nx * h, p1 + ny * h, p2 + nz * h, nx, ny, nz)
    return 1
