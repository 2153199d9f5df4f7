"""The general convex collider for primitive geoms (engine_collision_convex.c): mjc_Convex on
MuJoCo's native CCD (collision_gjk), and mjc_PlaneConvex for plane-ellipsoid.

MuJoCo 4.0 sends these pairs to mjc_Convex (constraints.md, section 4.3): sphere-ellipsoid,
capsule-ellipsoid, capsule-cylinder, ellipsoid-ellipsoid, ellipsoid-cylinder, ellipsoid-box,
cylinder-cylinder and cylinder-box (meshes come later). Only the native CCD path is here; the
driver refuses ``nativeccd="disable"``.

The support functions (mjc_*Support) live in collision_gjk, which calls them (MuJoCo reaches
them through function pointers; importing them from here would make a cycle).

Agreement with MuJoCo 4.0 (tests/test_collision_convex.py): plane-ellipsoid to 1e-12; the
single-contact pairs without spheres and capsules to ~1e-12 in general poses; contacts from a
GJK distance query (spheres, capsules, margins) to ~1e-5; multi-contact counts in 97-100 % of
poses, the points of multi-contacts approximately. collision_gjk's docstring has the details.

Kernels do not allocate: collide_convex takes float and int scratch arrays sized by
convex_work_size(ccd_iterations).
"""

from __future__ import annotations

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk import (
    I_OBI,
    MAXCONPAIR,
    W_DIST,
    W_OBF,
    W_X1,
    W_X2,
    ccd,
    convex_work_size,
)
from kinedyn.engine.collision_primitive import write_contact, z_axis
from kinedyn.engine.util_spatial import normalized3

GEOM_SPHERE = 2
GEOM_CAPSULE = 3
GEOM_ELLIPSOID = 4
GEOM_CYLINDER = 5
GEOM_BOX = 6
GEOM_MESH = 7


__all__ = ["collide_convex", "collide_plane_convex", "convex_work_size", "max_contacts"]


@kernel
def _init_obj(obf, obi, k, geom_type, xpos, xmat, size, g, margin):
    """mjc_initCCDObj for a primitive geom."""
    for q in range(3):
        obf[k, q] = xpos[g, q]
        obf[k, 12 + q] = size[g, q]
    for a in range(3):
        for b in range(3):
            obf[k, 3 + 3 * a + b] = xmat[g, a, b]
    obf[k, 15] = margin
    obi[k, 0] = geom_type[g]
    obi[k, 1] = geom_type[g]
    obi[k, 2] = -1
    obi[k, 3] = g


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
                   multiccd, dist, pos, frame, c0, work, iwork):
    """Convex-convex contacts of geoms g1, g2 by GJK/EPA (mjc_Convex with nativeccd, through
    mjc_penetration). Returns the number of contacts written at rows c0, c0+1, ...

    work, iwork: float and int scratch arrays of the sizes convex_work_size(ccd_iterations)
    gives (kernels do not allocate)."""
    obf = work[W_OBF:W_OBF + 32].reshape((2, 16))
    obi = iwork[I_OBI:I_OBI + 8].reshape((2, 4))
    _init_obj(obf, obi, 0, geom_type, xpos, xmat, size, g1, margin)
    _init_obj(obf, obi, 1, geom_type, xpos, xmat, size, g2, margin)
    maxcon = max_contacts(obi[0, 0], obi[1, 0], margin, multiccd)
    x1 = work[W_X1:W_X1 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    x2 = work[W_X2:W_X2 + 3 * MAXCONPAIR].reshape((MAXCONPAIR, 3))
    wdist = work[W_DIST:W_DIST + MAXCONPAIR]
    d, nx = ccd(obf, obi, ccd_tolerance, ccd_iterations, maxcon, x1, x2, wdist, work, iwork)
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
    s0, s1, s2, _ = normalized3(s0, s1, s2)
    s0 *= size[g2, 0]
    s1 *= size[g2, 1]
    s2 *= size[g2, 2]
    v0 = m[0, 0] * s0 + m[0, 1] * s1 + m[0, 2] * s2
    v1 = m[1, 0] * s0 + m[1, 1] * s1 + m[1, 2] * s2
    v2 = m[2, 0] * s0 + m[2, 1] * s1 + m[2, 2] * s2
    v0 += xpos[g2, 0]
    v1 += xpos[g2, 1]
    v2 += xpos[g2, 2]
    dd = nx * (v0 - xpos[g1, 0]) + ny * (v1 - xpos[g1, 1]) + nz * (v2 - xpos[g1, 2])
    if dd > margin:
        return 0
    h = -0.5 * dd
    write_contact(dist, pos, frame, c0, dd, v0 + nx * h, v1 + ny * h, v2 + nz * h, nx, ny, nz)
    return 1
