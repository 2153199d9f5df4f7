"""Ray casting (engine_ray.c): the nearest geom surface along a ray, and the rangefinder sensor.

``ray(m, d, pnt, vec)`` mirrors MuJoCo 4.0's ``mj_ray``: the ray ``pnt + x vec, x >= 0`` meets
every geom that survives mj_ray's filters (not on ``bodyexclude``; not invisible, i.e. the alpha
of its colour, its material's when it has one, is not 0; not static when ``flg_static`` is off;
in an enabled group when ``geomgroup`` is given), and the smallest ``x`` wins. ``x`` is in units
of ``|vec|`` (a unit ``vec`` gives distances). Nothing hit: ``x = -1`` and geom id -1.

Per geom type, as MuJoCo: planes only from their front side and within their rendered
rectangle when their size is positive; spheres, capsules, ellipsoids, cylinders and boxes by
their closed-form intersections (a ray starting inside meets the surface on its way out); meshes
by their triangles (``mesh_face``, the mesh as loaded, not its convex hull), behind the test of
the box ``geom_size`` about the geom centre (mj_rayMesh). MuJoCo walks a bounding-volume tree
of the faces; its boxes enclose the faces (flat ones inflated by 1e-14), so testing every face
gives the same nearest hit. Height fields by the box of their base, then, if the ray meets the
box of the elevations, the two triangles of each grid cell near its path through that box and
the box's four sides below the field's edge (mj_rayHfield). SDF geoms (mj_raySdf) are not
ported: the compiler refuses them, and ``ray`` and rangefinders refuse models that have them.

The surface normal at the hit (world frame, pointing out of the geom whatever side the ray
comes from; a mesh triangle's by its winding) is computed as MuJoCo's ``normal`` output.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.types import (
    GEOM_BOX,
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_ELLIPSOID,
    GEOM_HFIELD,
    GEOM_MESH,
    GEOM_PLANE,
    GEOM_SPHERE,
    MINVAL,
    GeomType,
)

NGROUP = 6  # mjNGROUP
# rangefinder data fields (mjtRayDataField) and their sizes (mjRAYDATA_SIZE)
RAYDATA = ("dist", "dir", "origin", "point", "normal", "depth")
RAYDATA_SIZE = (1, 3, 3, 3, 3, 1)
RAY_DIST, RAY_DIR, RAY_ORIGIN, RAY_POINT, RAY_NORMAL, RAY_DEPTH = 0, 1, 2, 3, 4, 5
_UNPORTED = (int(GeomType.SDF),)


# ---- helpers ----------------------------------------------------------------------------------------


@kernel
def _map(pos, mat, px, py, pz, vx, vy, vz):
    """The ray in the frame (pos, mat): mat' (p - pos), mat' v (ray_map)."""
    dx, dy, dz = px - pos[0], py - pos[1], pz - pos[2]
    return (mat[0, 0] * dx + mat[1, 0] * dy + mat[2, 0] * dz,
            mat[0, 1] * dx + mat[1, 1] * dy + mat[2, 1] * dz,
            mat[0, 2] * dx + mat[1, 2] * dy + mat[2, 2] * dz,
            mat[0, 0] * vx + mat[1, 0] * vy + mat[2, 0] * vz,
            mat[0, 1] * vx + mat[1, 1] * vy + mat[2, 1] * vz,
            mat[0, 2] * vx + mat[1, 2] * vy + mat[2, 2] * vz)


@kernel
def _normalize(x, y, z):
    """mju_normalize3: (1, 0, 0) for a vector shorter than MINVAL."""
    n = math.sqrt(x * x + y * y + z * z)
    if n < MINVAL:
        return 1.0, 0.0, 0.0
    s = 1.0 / n
    return x * s, y * s, z * s


@kernel
def _rotate(mat, x, y, z):
    """mat v (mju_mulMatVec3)."""
    return (mat[0, 0] * x + mat[0, 1] * y + mat[0, 2] * z,
            mat[1, 0] * x + mat[1, 1] * y + mat[1, 2] * z,
            mat[2, 0] * x + mat[2, 1] * y + mat[2, 2] * z)


@kernel
def _quad(a, b, c):
    """Both real roots x0 <= x1 of a x^2 + 2 b x + c = 0 and the smallest non-negative one, -1 if
    none (ray_quad; -1, -1, -1 when there are no real finite roots)."""
    det = b * b - a * c
    if det < 0 or a < MINVAL:
        return -1.0, -1.0, -1.0
    det = math.sqrt(det)
    x0 = (-b - det) / a
    x1 = (-b + det) / a
    if x0 >= 0:
        return x0, x0, x1
    if x1 >= 0:
        return x1, x0, x1
    return -1.0, x0, x1


# ---- one geom ---------------------------------------------------------------------------------------


@kernel
def _ray_plane(pos, mat, size, px, py, pz, vx, vy, vz):
    """Plane: hit from its front (+z) side only, within the rendered rectangle (ray_plane)."""
    lx, ly, lz, ux, uy, uz = _map(pos, mat, px, py, pz, vx, vy, vz)
    if uz > -MINVAL:
        return -1.0, 0.0, 0.0, 0.0
    x = -lz / uz
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    p0 = lx + x * ux
    p1 = ly + x * uy
    if (size[0] <= 0 or abs(p0) <= size[0]) and (size[1] <= 0 or abs(p1) <= size[1]):
        return x, mat[0, 2], mat[1, 2], mat[2, 2]
    return -1.0, 0.0, 0.0, 0.0


@kernel
def _ray_sphere(pos, dist_sqr, px, py, pz, vx, vy, vz):
    """Sphere of squared radius dist_sqr about pos (ray_sphere)."""
    dx, dy, dz = px - pos[0], py - pos[1], pz - pos[2]
    a = vx * vx + vy * vy + vz * vz
    b = vx * dx + vy * dy + vz * dz
    c = dx * dx + dy * dy + dz * dz - dist_sqr
    x = _quad(a, b, c)[0]
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nx, ny, nz = _normalize(px + vx * x - pos[0], py + vy * x - pos[1], pz + vz * x - pos[2])
    return x, nx, ny, nz


@kernel
def _ray_capsule(pos, mat, size, px, py, pz, vx, vy, vz):
    """Capsule: the bounding sphere, then the side between the caps and the two half-spheres
    (ray_capsule)."""
    ssz = size[0] + size[1]
    if _ray_sphere(pos, ssz * ssz, px, py, pz, vx, vy, vz)[0] < 0:
        return -1.0, 0.0, 0.0, 0.0
    lx, ly, lz, ux, uy, uz = _map(pos, mat, px, py, pz, vx, vy, vz)
    r2 = size[0] * size[0]
    x = -1.0
    kind = 0  # -1 bottom cap, 0 side, 1 top cap
    a = ux * ux + uy * uy
    b = ux * lx + uy * ly
    c = lx * lx + ly * ly - r2
    sol = _quad(a, b, c)[0]
    if sol >= 0 and abs(lz + sol * uz) <= size[1]:
        x = sol
    a = ux * ux + uy * uy + uz * uz
    for side in (1, -1):
        dz = lz - size[1] if side == 1 else lz + size[1]
        b = ux * lx + uy * ly + uz * dz
        c = lx * lx + ly * ly + dz * dz - r2
        _s, x0, x1 = _quad(a, b, c)
        for xi in (x0, x1):
            if xi >= 0:
                z = lz + xi * uz
                if (side == 1 and z >= size[1]) or (side == -1 and z <= -size[1]):
                    if x < 0 or xi < x:
                        x = xi
                        kind = side
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nz = 0.0 if kind == 0 else lz + uz * x - size[1] * kind
    nx, ny, nz = _normalize(lx + ux * x, ly + uy * x, nz)
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


@kernel
def _ray_ellipsoid(pos, mat, size, px, py, pz, vx, vy, vz):
    """Ellipsoid: the quadric in the geom frame (ray_ellipsoid)."""
    lx, ly, lz, ux, uy, uz = _map(pos, mat, px, py, pz, vx, vy, vz)
    s0 = 1 / (size[0] * size[0])
    s1 = 1 / (size[1] * size[1])
    s2 = 1 / (size[2] * size[2])
    a = s0 * ux * ux + s1 * uy * uy + s2 * uz * uz
    b = s0 * ux * lx + s1 * uy * ly + s2 * uz * lz
    c = s0 * lx * lx + s1 * ly * ly + s2 * lz * lz - 1
    x = _quad(a, b, c)[0]
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nx, ny, nz = _normalize(s0 * (lx + ux * x), s1 * (ly + uy * x), s2 * (lz + uz * x))
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


@kernel
def _ray_cylinder(pos, mat, size, px, py, pz, vx, vy, vz):
    """Cylinder: the bounding sphere, the two flat ends, the round side (ray_cylinder)."""
    ssz = size[0] * size[0] + size[1] * size[1]
    if _ray_sphere(pos, ssz, px, py, pz, vx, vy, vz)[0] < 0:
        return -1.0, 0.0, 0.0, 0.0
    lx, ly, lz, ux, uy, uz = _map(pos, mat, px, py, pz, vx, vy, vz)
    x = -1.0
    kind = 0
    if abs(uz) > MINVAL:
        for side in (-1, 1):
            sol = (side * size[1] - lz) / uz
            if sol >= 0:
                p0 = lx + sol * ux
                p1 = ly + sol * uy
                if p0 * p0 + p1 * p1 <= size[0] * size[0]:
                    if x < 0 or sol < x:
                        x = sol
                        kind = side
    a = ux * ux + uy * uy
    b = ux * lx + uy * ly
    c = lx * lx + ly * ly - size[0] * size[0]
    sol = _quad(a, b, c)[0]
    if sol >= 0 and abs(lz + sol * uz) <= size[1]:
        if x < 0 or sol < x:
            x = sol
            kind = 0
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    if kind == 0:
        nx, ny, nz = _normalize(lx + ux * x, ly + uy * x, 0.0)
    else:
        nx, ny, nz = 0.0, 0.0, float(kind)
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


@kernel
def _ray_box_all(pos, mat, size, px, py, pz, vx, vy, vz):
    """Box: the bounding sphere, then the six faces (ray_box); returns the distance (-1 if it
    misses), the hit face's axis and side, and every face's distance in ray_box's ``all`` order
    (axis-major, the -side first; -1 for faces not met)."""
    a0 = a1 = a2 = a3 = a4 = a5 = -1.0
    ssz = size[0] * size[0] + size[1] * size[1] + size[2] * size[2]
    if _ray_sphere(pos, ssz, px, py, pz, vx, vy, vz)[0] < 0:
        return -1.0, -1, 0, (a0, a1, a2, a3, a4, a5)
    lp = _map(pos, mat, px, py, pz, vx, vy, vz)
    x = -1.0
    axis, face = -1, 0
    for i in range(3):
        li, ui = lp[i], lp[3 + i]
        if abs(ui) > MINVAL:
            j = 1 if i == 0 else 0  # the face's two other axes (iface)
            k = 1 if i == 2 else 2
            for side in (-1, 1):
                sol = (side * size[i] - li) / ui
                if sol >= 0:
                    p0 = lp[j] + sol * lp[3 + j]
                    p1 = lp[k] + sol * lp[3 + k]
                    if abs(p0) <= size[j] and abs(p1) <= size[k]:
                        if x < 0 or sol < x:
                            x = sol
                            axis, face = i, side
                        slot = 2 * i + (side + 1) // 2
                        if slot == 0:
                            a0 = sol
                        elif slot == 1:
                            a1 = sol
                        elif slot == 2:
                            a2 = sol
                        elif slot == 3:
                            a3 = sol
                        elif slot == 4:
                            a4 = sol
                        else:
                            a5 = sol
    return x, axis, face, (a0, a1, a2, a3, a4, a5)


@kernel
def _ray_box(pos, mat, size, px, py, pz, vx, vy, vz):
    """Box: the distance and the normal of the face hit (ray_box)."""
    r = _ray_box_all(pos, mat, size, px, py, pz, vx, vy, vz)
    x, axis, face = r[0], r[1], r[2]
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nx = float(face) if axis == 0 else 0.0
    ny = float(face) if axis == 1 else 0.0
    nz = float(face) if axis == 2 else 0.0
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


@kernel
def ray_geom(pos, mat, size, gtype, px, py, pz, vx, vy, vz):
    """Distance along the ray to a primitive of type gtype at (pos, mat), -1 if it misses, and
    the surface normal there (mju_rayGeom)."""
    if gtype == GEOM_PLANE:
        return _ray_plane(pos, mat, size, px, py, pz, vx, vy, vz)
    if gtype == GEOM_SPHERE:
        return _ray_sphere(pos, size[0] * size[0], px, py, pz, vx, vy, vz)
    if gtype == GEOM_CAPSULE:
        return _ray_capsule(pos, mat, size, px, py, pz, vx, vy, vz)
    if gtype == GEOM_ELLIPSOID:
        return _ray_ellipsoid(pos, mat, size, px, py, pz, vx, vy, vz)
    if gtype == GEOM_CYLINDER:
        return _ray_cylinder(pos, mat, size, px, py, pz, vx, vy, vz)
    if gtype == GEOM_BOX:
        return _ray_box(pos, mat, size, px, py, pz, vx, vy, vz)
    return -1.0, 0.0, 0.0, 0.0


@kernel
def _ray_triangle(v00, v01, v02, v10, v11, v12, v20, v21, v22, lx, ly, lz, ux, uy, uz, b0, b1):
    """Distance along the ray (local frame) to the triangle (v00, v01, v02) (v10, ...) (v20, ...),
    -1 if it misses or lies behind the origin, and the normal of its plane by the winding
    (ray_triangle): the triangle projected on the plane normal to the ray (basis b0, b1) must
    contain the ray's trace."""
    d00, d01, d02 = v00 - lx, v01 - ly, v02 - lz
    d10, d11, d12 = v10 - lx, v11 - ly, v12 - lz
    d20, d21, d22 = v20 - lx, v21 - ly, v22 - lz
    p00 = b0[0] * d00 + b0[1] * d01 + b0[2] * d02
    p01 = b1[0] * d00 + b1[1] * d01 + b1[2] * d02
    p10 = b0[0] * d10 + b0[1] * d11 + b0[2] * d12
    p11 = b1[0] * d10 + b1[1] * d11 + b1[2] * d12
    p20 = b0[0] * d20 + b0[1] * d21 + b0[2] * d22
    p21 = b1[0] * d20 + b1[1] * d21 + b1[2] * d22
    if ((p00 > 0 and p10 > 0 and p20 > 0) or (p00 < 0 and p10 < 0 and p20 < 0)
            or (p01 > 0 and p11 > 0 and p21 > 0) or (p01 < 0 and p11 < 0 and p21 < 0)):
        return -1.0, 0.0, 0.0, 0.0
    a0, a1, a2, a3 = p00 - p20, p10 - p20, p01 - p21, p11 - p21
    c0, c1 = -p20, -p21
    det = a0 * a3 - a1 * a2
    if abs(det) < MINVAL:
        return -1.0, 0.0, 0.0, 0.0
    t0 = (a3 * c0 - a1 * c1) / det
    t1 = (-a2 * c0 + a0 * c1) / det
    if t0 < 0 or t1 < 0 or t0 + t1 > 1:
        return -1.0, 0.0, 0.0, 0.0
    e00, e01, e02 = v00 - v20, v01 - v21, v02 - v22
    e10, e11, e12 = v10 - v20, v11 - v21, v12 - v22
    q0, q1, q2 = lx - v20, ly - v21, lz - v22
    n0 = e01 * e12 - e02 * e11
    n1 = e02 * e10 - e00 * e12
    n2 = e00 * e11 - e01 * e10
    denom = ux * n0 + uy * n1 + uz * n2
    if abs(denom) < MINVAL:
        return -1.0, 0.0, 0.0, 0.0
    x = -(q0 * n0 + q1 * n1 + q2 * n2) / denom
    if x < 0:  # MuJoCo 4.0: intersections behind the origin are rejected
        return -1.0, 0.0, 0.0, 0.0
    n0, n1, n2 = _normalize(n0, n1, n2)
    return x, n0, n1, n2


@kernel
def _basis(ux, uy, uz, b0, b1):
    """Orthonormal basis b0, b1 of the plane normal to the ray direction u (mj_rayMesh,
    mj_rayHfield)."""
    b0[0], b0[1], b0[2] = 1.0, 1.0, 1.0
    if abs(ux) >= abs(uy) and abs(ux) >= abs(uz):
        b0[0] = 0.0
    elif abs(uy) >= abs(uz):
        b0[1] = 0.0
    else:
        b0[2] = 0.0
    s = -(ux * b0[0] + uy * b0[1] + uz * b0[2]) / (ux * ux + uy * uy + uz * uz)
    b1[0], b1[1], b1[2] = _normalize(b0[0] + ux * s, b0[1] + uy * s, b0[2] + uz * s)
    b0[0], b0[1], b0[2] = _normalize(b1[1] * uz - b1[2] * uy, b1[2] * ux - b1[0] * uz,
                                     b1[0] * uy - b1[1] * ux)


@kernel
def ray_mesh(m, d, g, px, py, pz, vx, vy, vz, b0, b1):
    """Mesh geom g: the box geom_size about the geom centre, then the nearest of the mesh's
    triangles (mj_rayMesh, mju_rayTree). b0, b1: scratch 3-vectors."""
    pos, mat = d.geom_xpos[g], d.geom_xmat[g]
    if _ray_box(pos, mat, m.geom_size[g], px, py, pz, vx, vy, vz)[0] < 0:
        return -1.0, 0.0, 0.0, 0.0
    lx, ly, lz, ux, uy, uz = _map(pos, mat, px, py, pz, vx, vy, vz)
    _basis(ux, uy, uz, b0, b1)
    mesh = m.geom_dataid[g]
    vadr, fadr = m.mesh_vertadr[mesh], m.mesh_faceadr[mesh]
    x, nx, ny, nz = -1.0, 0.0, 0.0, 0.0
    for f in range(fadr, fadr + m.mesh_facenum[mesh]):
        face = m.mesh_face[f]
        v0, v1, v2 = m.mesh_vert[vadr + face[0]], m.mesh_vert[vadr + face[1]], m.mesh_vert[vadr + face[2]]
        r = _ray_triangle(v0[0], v0[1], v0[2], v1[0], v1[1], v1[2], v2[0], v2[1], v2[2],
                          lx, ly, lz, ux, uy, uz, b0, b1)
        if r[0] >= 0 and (x < 0 or r[0] < x):
            x, nx, ny, nz = r
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


@kernel
def ray_hfield(m, d, g, px, py, pz, vx, vy, vz, b0, b1):
    """Height-field geom g (mj_rayHfield): the solid base box below z = 0, then, when the ray
    meets the box of the elevations above it, the two triangles of every grid cell near the
    ray's path through that box, and the four sides of that box below the field's edge
    polylines. The normal of the nearest of these. b0, b1: scratch 3-vectors."""
    hid = m.geom_dataid[g]
    nrow, ncol = m.hfield_nrow[hid], m.hfield_ncol[hid]
    size = m.hfield_size[hid]
    data = m.hfield_data[m.hfield_adr[hid]:]
    xpos, mat = d.geom_xpos[g], d.geom_xmat[g]
    # the base box (z in [-size[3], 0]) and the top box (z in [0, size[2]])
    base_size = (size[0], size[1], size[3] * 0.5)
    base_pos = (xpos[0] - mat[0, 2] * size[3] * 0.5, xpos[1] - mat[1, 2] * size[3] * 0.5,
                xpos[2] - mat[2, 2] * size[3] * 0.5)
    top_size = (size[0], size[1], size[2] * 0.5)
    top_pos = (xpos[0] + mat[0, 2] * size[2] * 0.5, xpos[1] + mat[1, 2] * size[2] * 0.5,
               xpos[2] + mat[2, 2] * size[2] * 0.5)
    x, bnx, bny, bnz = _ray_box(base_pos, mat, base_size, px, py, pz, vx, vy, vz)
    top = _ray_box_all(top_pos, mat, top_size, px, py, pz, vx, vy, vz)
    if top[0] < 0:
        return x, bnx, bny, bnz
    top_x, every = top[0], top[3]
    lx, ly, lz, ux, uy, uz = _map(xpos, mat, px, py, pz, vx, vy, vz)
    _basis(ux, uy, uz, b0, b1)
    # the segment of the ray inside the top box: from the origin (inside) or the entry point
    seg0, seg1 = 0.0, top_x
    for i in range(6):
        if every[i] > seg1:
            seg0, seg1 = top_x, every[i]
    dx = (2.0 * size[0]) / (ncol - 1)
    dy = (2.0 * size[1]) / (nrow - 1)
    sx0 = (lx + seg0 * ux + size[0]) / dx
    sy0 = (ly + seg0 * uy + size[1]) / dy
    sx1 = (lx + seg1 * ux + size[0]) / dx
    sy1 = (ly + seg1 * uy + size[1]) / dy
    cmin = max(0, int(math.floor(min(sx0, sx1))) - 1)
    cmax = min(ncol - 1, int(math.ceil(max(sx0, sx1))) + 1)
    rmin = max(0, int(math.floor(min(sy0, sy1))) - 1)
    rmax = min(nrow - 1, int(math.ceil(max(sy0, sy1))) + 1)
    # the normal in the field's frame (the base box's turned back, as MuJoCo does)
    nx, ny, nz = 0.0, 0.0, 0.0
    if x >= 0:
        nx = mat[0, 0] * bnx + mat[1, 0] * bny + mat[2, 0] * bnz
        ny = mat[0, 1] * bnx + mat[1, 1] * bny + mat[2, 1] * bnz
        nz = mat[0, 2] * bnx + mat[1, 2] * bny + mat[2, 2] * bnz
    s0, s1, s2 = size[0], size[1], size[2]
    for r in range(rmin, rmax):
        ya = dy * r - s1
        yb = dy * (r + 1) - s1
        for c in range(cmin, cmax):
            xa = dx * c - s0
            xb = dx * (c + 1) - s0
            z00 = data[r * ncol + c] * s2
            z01 = data[r * ncol + c + 1] * s2
            z11 = data[(r + 1) * ncol + c + 1] * s2
            z10 = data[(r + 1) * ncol + c] * s2
            # (r, c) (r, c+1) (r+1, c+1), then (r, c) (r+1, c+1) (r+1, c): normals up
            t = _ray_triangle(xa, ya, z00, xb, ya, z01, xb, yb, z11, lx, ly, lz, ux, uy, uz, b0, b1)
            if t[0] >= 0 and (x < 0 or t[0] < x):
                x, nx, ny, nz = t
            t = _ray_triangle(xa, ya, z00, xb, yb, z11, xa, yb, z10, lx, ly, lz, ux, uy, uz, b0, b1)
            if t[0] >= 0 and (x < 0 or t[0] < x):
                x, nx, ny, nz = t
    # the top box's four sides, below the field's edge (linear between grid points)
    for i in range(4):
        ai = every[i]
        if ai >= 0 and (ai < x or x < 0):
            z = (lz + ai * uz) / s2
            if i < 2:
                y = (ly + ai * uy + s1) / dy
                y0 = max(0.0, min(nrow - 2.0, math.floor(y)))
                col = ncol - 1 if i == 1 else 0
                za = data[int(y0) * ncol + col]
                zb = data[(int(y0) + 1) * ncol + col]
            else:
                y = (lx + ai * ux + s0) / dx
                y0 = max(0.0, min(ncol - 2.0, math.floor(y)))
                row = (nrow - 1) * ncol if i == 3 else 0
                za = data[int(y0) + row]
                zb = data[int(y0) + 1 + row]
            if z < za * (y0 + 1 - y) + zb * (y - y0):
                x = ai
                nx = -1.0 if i == 0 else (1.0 if i == 1 else 0.0)
                ny = -1.0 if i == 2 else (1.0 if i == 3 else 0.0)
                nz = 0.0
    if x < 0:
        return -1.0, 0.0, 0.0, 0.0
    nx, ny, nz = _rotate(mat, nx, ny, nz)
    return x, nx, ny, nz


# ---- the scene --------------------------------------------------------------------------------------


@kernel
def _eliminate(m, g, geomgroup, flg_static, bodyexclude):
    """Whether mj_ray skips geom g (ray_eliminate); geomgroup: six 0/1 flags, or geomgroup[0] < 0
    for no group filter."""
    b = m.geom_bodyid[g]
    if b == bodyexclude:
        return True
    if m.geom_alpha[g] == 0:
        return True
    if not flg_static and m.body_weldid[b] == 0:
        return True
    if geomgroup[0] < 0:
        return False
    grp = min(NGROUP - 1, max(0, m.geom_group[g]))
    return geomgroup[grp] == 0


@kernel
def ray_kernel(m, d, px, py, pz, vx, vy, vz, geomgroup, flg_static, bodyexclude, b0, b1):
    """(distance, geom id, normal x, y, z) of the nearest geom along the ray (mj_ray)."""
    dist, gid, nx, ny, nz = -1.0, -1, 0.0, 0.0, 0.0
    for g in range(m.ngeom):
        if _eliminate(m, g, geomgroup, flg_static, bodyexclude):
            continue
        t = m.geom_type[g]
        if t == GEOM_MESH:
            r = ray_mesh(m, d, g, px, py, pz, vx, vy, vz, b0, b1)
        elif t == GEOM_HFIELD:
            r = ray_hfield(m, d, g, px, py, pz, vx, vy, vz, b0, b1)
        else:
            r = ray_geom(d.geom_xpos[g], d.geom_xmat[g], m.geom_size[g], t, px, py, pz, vx, vy, vz)
        if r[0] >= 0 and (r[0] < dist or dist < 0):
            dist, gid = r[0], g
            nx, ny, nz = r[1], r[2], r[3]
    return dist, gid, nx, ny, nz


@handle_entry(args="float64[::1], float64[::1], float64[::1], boolean, int64, float64[::1], float64[:, ::1]")
def _ray_entry(m, d, pnt, vec, geomgroup, flg_static, bodyexclude, out, scratch):
    r = ray_kernel(m, d, pnt[0], pnt[1], pnt[2], vec[0], vec[1], vec[2], geomgroup, flg_static,
                   bodyexclude, scratch[0], scratch[1])
    out[0], out[1], out[2], out[3], out[4] = r[0], r[1], r[2], r[3], r[4]


_RAY = FastEntry(_ray_entry)


def ray(m, d, pnt, vec, geomgroup=None, flg_static=True, bodyexclude=-1, normal=None):
    """Distance along the ray ``pnt + x vec`` (x >= 0) to the nearest geom surface and that
    geom's id; ``(-1, -1)`` when nothing is hit (mj_ray).

    Reads geom_xpos and geom_xmat (run ``kinematics`` or ``forward`` first). ``geomgroup``: six
    flags, a geom in a group whose flag is 0 is skipped (None: every group); ``flg_static``:
    whether geoms of bodies welded to the world count; ``bodyexclude``: a body whose geoms are
    skipped (-1: none). Geoms whose alpha (their material's, if any) is 0 are always skipped.
    ``normal``: an optional 3-array that receives the surface normal at the hit (zero if none).
    """
    check_model_data(m, d, "ray")
    pnt = np.ascontiguousarray(pnt, dtype=float).reshape(3)
    vec = np.ascontiguousarray(vec, dtype=float).reshape(3)
    if math.sqrt(float(vec @ vec)) < MINVAL:
        raise ValueError("ray: vector length is too small")
    if np.isin(m.geom_type, _UNPORTED).any():
        raise NotImplementedError("ray: SDF geoms (mj_raySdf) are not ported")
    if geomgroup is None:
        groups = np.full(NGROUP, -1.0)
    else:
        groups = (np.asarray(geomgroup).reshape(NGROUP) != 0).astype(float)
    out = np.zeros(5)
    _RAY.call(m._ptr, d._ptr, pnt, vec, groups, bool(flg_static), int(bodyexclude), out,
              np.zeros((2, 6)))
    if normal is not None:
        normal[:] = out[2:5]
    return float(out[0]), int(out[1])


# ---- the rangefinder sensor ------------------------------------------------------------------------


@kernel
def rangefinder_kernel(m, d, i, out, a):
    """A site rangefinder: the ray along the site's z axis, the site's body excluded, every
    geom group, static geoms included; writes the data fields of sensor_intprm[i, 0] in the
    order of mjtRayDataField (mjSENS_RANGEFINDER)."""
    site = m.sensor_objid[i]
    spec = m.sensor_intprm[i, 0]
    p, r = d.site_xpos[site], d.site_xmat[site]
    vx, vy, vz = r[0, 2], r[1, 2], r[2, 2]
    sc = d.scratch_ray
    sc[0, 0] = -1.0
    res = ray_kernel(m, d, p[0], p[1], p[2], vx, vy, vz, sc[0], True, m.site_bodyid[site], sc[1], sc[2])
    dist = res[0]
    hit = dist >= 0
    k = a
    if spec >> RAY_DIST & 1:
        out[k] = dist
        k += 1
    if spec >> RAY_DIR & 1:
        out[k], out[k + 1], out[k + 2] = (vx, vy, vz) if hit else (0.0, 0.0, 0.0)
        k += 3
    if spec >> RAY_ORIGIN & 1:
        out[k], out[k + 1], out[k + 2] = p[0], p[1], p[2]
        k += 3
    if spec >> RAY_POINT & 1:
        if hit:
            out[k], out[k + 1], out[k + 2] = p[0] + vx * dist, p[1] + vy * dist, p[2] + vz * dist
        else:
            out[k], out[k + 1], out[k + 2] = 0.0, 0.0, 0.0
        k += 3
    if spec >> RAY_NORMAL & 1:
        out[k], out[k + 1], out[k + 2] = (res[2], res[3], res[4]) if hit else (0.0, 0.0, 0.0)
        k += 3
    if spec >> RAY_DEPTH & 1:
        out[k] = dist if hit else -1.0
