"""Analytic colliders for pairs of primitive geoms (MuJoCo's engine_collision_primitive.c).

One ``@kernel`` per pair, each mirroring one of MuJoCo 4.0's functions:

=============================  ===================
``collide_plane_sphere``       mjc_PlaneSphere
``collide_plane_capsule``      mjc_PlaneCapsule
``collide_plane_cylinder``     mjc_PlaneCylinder
``collide_plane_box``          mjc_PlaneBox
``collide_sphere_sphere``      mjc_SphereSphere
``collide_sphere_capsule``     mjc_SphereCapsule
``collide_sphere_cylinder``    mjc_SphereCylinder
``collide_capsule_capsule``    mjc_CapsuleCapsule
=============================  ===================

All share the collider contract of the collision driver::

    collide_<type1>_<type2>(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0) -> int

``xpos`` (ngeom, 3), ``xmat`` (ngeom, 3, 3) and ``size`` (ngeom, 3) are the geoms' world
positions, row-major rotations and sizes; ``g1`` has the lower geom type (the driver swaps as
MuJoCo does). ``margin`` is the threshold the driver passes (the pair's margin + gap): a contact
is made when its distance is within it, with MuJoCo's own ``<`` or ``<=`` at each test.
Contacts go to rows ``c0, c0+1, ...`` of ``dist`` (signed surface distance, negative in
penetration), ``pos`` (midway between the two surfaces) and ``frame``: row 0 the unit normal
pointing from g1 towards g2, row 1 a tangent hint or zeros (MuJoCo's ``frame[3:6]``; only
plane-capsule gives one, the capsule's axis), row 2 left alone; the driver completes the frame
with ``util_spatial.make_frame`` (mju_makeFrame). The return value is the number of contacts
written, never more than MuJoCo's ``mj_maxContact`` for the pair, in MuJoCo's order.

The arithmetic follows MuJoCo's operation by operation (same operands, same order of sums),
so that, compiled without fastmath as ``@kernel`` is, the results agree with MuJoCo's to the
last bits (the tests find them bit-identical). Where MuJoCo 4.0 differs from the older readable
source (capsule-capsule, rewritten in 3.16 for nearly parallel axes), the 4.0 binary was the
reference; see ``collide_capsule_capsule``.

A geom's axes are the columns of its rotation: ``xmat[g, :, 2]`` is its z axis (a plane's
normal, a capsule's or cylinder's axis).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.types import MINVAL
from kinedyn.engine.util_spatial import clip, normalized3

# ---- small helpers (the box and convex colliders use them too) -----------------------------------


@kernel
def z_axis(xmat, g):
    """Geom g's z axis, the third column of its rotation (a plane's normal, a capsule's or
    cylinder's axis), as a 3-tuple."""
    return xmat[g, 0, 2], xmat[g, 1, 2], xmat[g, 2, 2]


@kernel
def write_contact(dist, pos, frame, c, d, px, py, pz, nx, ny, nz):
    """Contact row c: distance d, position p, normal n (frame row 0), no tangent hint (frame
    row 1 zeroed). The colliders of collision_box and collision_convex write with it too."""
    dist[c] = d
    pos[c, 0] = px
    pos[c, 1] = py
    pos[c, 2] = pz
    frame[c, 0, 0] = nx
    frame[c, 0, 1] = ny
    frame[c, 0, 2] = nz
    frame[c, 1, 0] = 0.0
    frame[c, 1, 1] = 0.0
    frame[c, 1, 2] = 0.0


# ---- shared raw tests (MuJoCo's mjraw_* helpers) -----------------------------------------------


@kernel
def _plane_sphere(margin, ox, oy, oz, nx, ny, nz, cx, cy, cz, radius):
    """Sphere (centre c, radius) against the plane through o with unit normal n (mjraw_PlaneSphere).

    Returns (hit, dist, x, y, z): the signed distance and the contact position (midway between
    the plane and the sphere's lowest point); hit is False when the sphere is farther than
    ``margin`` above the plane.
    """
    cdist = (cx - ox) * nx + (cy - oy) * ny + (cz - oz) * nz
    if cdist > margin + radius:
        return False, 0.0, 0.0, 0.0, 0.0
    d = cdist - radius
    s = -d / 2 - radius
    return True, d, cx + nx * s, cy + ny * s, cz + nz * s


@kernel
def _sphere_sphere(margin, x1, y1, z1, a1x, a1y, a1z, r1, x2, y2, z2, a2x, a2y, a2z, r2,
                   dist, pos, frame, c):
    """Sphere (centre 1, radius r1) against sphere (centre 2, r2), written to contact c
    (mjraw_SphereSphere); returns 0 or 1.

    a1, a2 are the z axes of the geoms the spheres stand for: with coincident centres the
    normal is a1 x a2, or (1, 0, 0) if they are parallel too.
    """
    dx = x1 - x2
    dy = y1 - y2
    dz = z1 - z2
    cdist_sqr = dx * dx + dy * dy + dz * dz
    min_dist = margin + r1 + r2
    if cdist_sqr > min_dist * min_dist:
        return 0
    d = math.sqrt(cdist_sqr) - r1 - r2

    # normal from centre 1 to centre 2; for coincident centres the cross product of the z axes
    nx, ny, nz, length = normalized3(x2 - x1, y2 - y1, z2 - z1)
    if length < MINVAL:
        nx, ny, nz, _ = normalized3(a1y * a2z - a1z * a2y, a1z * a2x - a1x * a2z, a1x * a2y - a1y * a2x)

    s = r1 + d / 2
    write_contact(dist, pos, frame, c, d, nx * s + x1, ny * s + y1, nz * s + z1, nx, ny, nz)
    return 1


# ---- plane colliders ---------------------------------------------------------------------------


@kernel
def collide_plane_sphere(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Plane g1 against sphere g2 (mjc_PlaneSphere): at most one contact, normal = the plane's z."""
    nx, ny, nz = z_axis(xmat, g1)
    hit, d, px, py, pz = _plane_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2], nx, ny, nz,
                                       xpos[g2, 0], xpos[g2, 1], xpos[g2, 2], size[g2, 0])
    if not hit:
        return 0
    write_contact(dist, pos, frame, c0, d, px, py, pz, nx, ny, nz)
    return 1


@kernel
def collide_plane_capsule(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Plane g1 against capsule g2 (mjc_PlaneCapsule): the two end spheres tested in turn
    (+axis end first), up to two contacts, each with the capsule's axis as tangent hint."""
    nx, ny, nz = z_axis(xmat, g1)
    ax, ay, az = z_axis(xmat, g2)
    half = size[g2, 1]
    sx = half * ax
    sy = half * ay
    sz = half * az
    n = 0
    for side in range(2):
        if side == 0:
            ex, ey, ez = xpos[g2, 0] + sx, xpos[g2, 1] + sy, xpos[g2, 2] + sz
        else:
            ex, ey, ez = xpos[g2, 0] - sx, xpos[g2, 1] - sy, xpos[g2, 2] - sz
        hit, d, px, py, pz = _plane_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2], nx, ny, nz,
                                           ex, ey, ez, size[g2, 0])
        if hit:
            c = c0 + n
            write_contact(dist, pos, frame, c, d, px, py, pz, nx, ny, nz)
            frame[c, 1, 0] = ax
            frame[c, 1, 1] = ay
            frame[c, 1, 2] = az
            n += 1
    return n


@kernel
def collide_plane_cylinder(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Plane g1 against cylinder g2 (mjc_PlaneCylinder): up to four contacts.

    The first is the rim point deepest below the plane (none at all if it is beyond the
    margin); the second the same rim point on the other cap; the last two, taken together,
    two more points of the near cap's rim (120 degrees either side of the first) so that a
    cylinder standing on its cap rests on a triangle. With the cap parallel to the plane the
    "deepest" rim point is taken along the cylinder's x axis.
    """
    nx, ny, nz = z_axis(xmat, g1)
    ax, ay, az = z_axis(xmat, g2)
    radius = size[g2, 0]
    half = size[g2, 1]

    # make the axis point towards the plane
    prjaxis = nx * ax + ny * ay + nz * az
    if prjaxis > 0:
        ax = -ax
        ay = -ay
        az = -az
        prjaxis = -prjaxis

    # height of the centre above the plane
    dist0 = ((xpos[g2, 0] - xpos[g1, 0]) * nx + (xpos[g2, 1] - xpos[g1, 1]) * ny
             + (xpos[g2, 2] - xpos[g1, 2]) * nz)

    # -normal without its component along the axis, scaled to the radius: centre -> deepest rim
    vx = ax * prjaxis - nx
    vy = ay * prjaxis - ny
    vz = az * prjaxis - nz
    len_sqr = vx * vx + vy * vy + vz * vz
    if len_sqr >= MINVAL * MINVAL:
        scl = radius / math.sqrt(len_sqr)
        vx *= scl
        vy *= scl
        vz *= scl
    else:
        # cap parallel to the plane: the cylinder's x axis
        vx = xmat[g2, 0, 0] * radius
        vy = xmat[g2, 1, 0] * radius
        vz = xmat[g2, 2, 0] * radius
    prjvec = vx * nx + vy * ny + vz * nz

    # axis scaled to the half-length: centre -> near cap centre
    ax *= half
    ay *= half
    az *= half
    prjaxis *= half

    px0 = xpos[g2, 0]
    py0 = xpos[g2, 1]
    pz0 = xpos[g2, 2]

    # deepest rim point of the near cap
    d = dist0 + prjaxis + prjvec
    if d > margin:
        return 0
    h = -d * 0.5
    write_contact(dist, pos, frame, c0, d, ((px0 + vx) + ax) + nx * h, ((py0 + vy) + ay) + ny * h,
           ((pz0 + vz) + az) + nz * h, nx, ny, nz)
    cnt = 1

    # the same rim point on the far cap
    d = dist0 - prjaxis + prjvec
    if d <= margin:
        h = -d * 0.5
        write_contact(dist, pos, frame, c0 + cnt, d, ((px0 + vx) - ax) + nx * h, ((py0 + vy) - ay) + ny * h,
               ((pz0 + vz) - az) + nz * h, nx, ny, nz)
        cnt += 1

    # two more rim points of the near cap, at -r/2 along v and +-sqrt(3)/2 r sideways
    prjvec1 = -prjvec * 0.5
    d = dist0 + prjaxis + prjvec1
    if d <= margin:
        # sideways unit vector v x axis (mju_normalize3), scaled
        wx = vy * az - vz * ay
        wy = vz * ax - vx * az
        wz = vx * ay - vy * ax
        wx, wy, wz, _ = normalized3(wx, wy, wz)
        s = radius * math.sqrt(3.0) / 2
        wx *= s
        wy *= s
        wz *= s
        h = -d * 0.5
        for sign in range(2):
            if sign == 0:
                bx, by, bz = px0 + wx, py0 + wy, pz0 + wz
            else:
                bx, by, bz = px0 - wx, py0 - wy, pz0 - wz
            write_contact(dist, pos, frame, c0 + cnt, d, ((bx + ax) + vx * -0.5) + nx * h,
                   ((by + ay) + vy * -0.5) + ny * h, ((bz + az) + vz * -0.5) + nz * h, nx, ny, nz)
            cnt += 1
    return cnt


@kernel
def collide_plane_box(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Plane g1 against box g2 (mjc_PlaneBox): up to four corners.

    Corners are visited in MuJoCo's order (index bits 0, 1, 2 choose -/+ along x, y, z) and
    the first four that lie on the plane's side of the box centre (``ldist <= 0``) within the
    margin are taken, not the four deepest.
    """
    nx, ny, nz = z_axis(xmat, g1)
    d0 = ((xpos[g2, 0] - xpos[g1, 0]) * nx + (xpos[g2, 1] - xpos[g1, 1]) * ny
          + (xpos[g2, 2] - xpos[g1, 2]) * nz)
    cnt = 0
    for i in range(8):
        # corner in local coordinates, then rotated (relative to the box centre)
        lx = size[g2, 0] if i & 1 else -size[g2, 0]
        ly = size[g2, 1] if i & 2 else -size[g2, 1]
        lz = size[g2, 2] if i & 4 else -size[g2, 2]
        cx = xmat[g2, 0, 0] * lx + xmat[g2, 0, 1] * ly + xmat[g2, 0, 2] * lz
        cy = xmat[g2, 1, 0] * lx + xmat[g2, 1, 1] * ly + xmat[g2, 1, 2] * lz
        cz = xmat[g2, 2, 0] * lx + xmat[g2, 2, 1] * ly + xmat[g2, 2, 2] * lz

        # skip corners beyond the margin or on the far side of the centre
        ldist = nx * cx + ny * cy + nz * cz
        if d0 + ldist > margin or ldist > 0:
            continue

        d = d0 + ldist
        h = -d / 2
        write_contact(dist, pos, frame, c0 + cnt, d, (cx + xpos[g2, 0]) + nx * h, (cy + xpos[g2, 1]) + ny * h,
               (cz + xpos[g2, 2]) + nz * h, nx, ny, nz)
        cnt += 1
        if cnt >= 4:
            return 4
    return cnt


# ---- sphere colliders --------------------------------------------------------------------------


@kernel
def collide_sphere_sphere(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Sphere g1 against sphere g2 (mjc_SphereSphere): at most one contact; with coincident
    centres the normal is the cross product of the geoms' z axes (or x if those are parallel)."""
    return _sphere_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2],
                          xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2], size[g1, 0],
                          xpos[g2, 0], xpos[g2, 1], xpos[g2, 2],
                          xmat[g2, 0, 2], xmat[g2, 1, 2], xmat[g2, 2, 2], size[g2, 0],
                          dist, pos, frame, c0)


@kernel
def collide_sphere_capsule(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Sphere g1 against capsule g2 (mjc_SphereCapsule): the sphere against the point of the
    capsule's segment nearest its centre (clipped to the segment), at most one contact."""
    ax, ay, az = z_axis(xmat, g2)
    half = size[g2, 1]
    x = (ax * (xpos[g1, 0] - xpos[g2, 0]) + ay * (xpos[g1, 1] - xpos[g2, 1])
         + az * (xpos[g1, 2] - xpos[g2, 2]))
    x = clip(x, -half, half)
    return _sphere_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2],
                          xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2], size[g1, 0],
                          ax * x + xpos[g2, 0], ay * x + xpos[g2, 1], az * x + xpos[g2, 2],
                          ax, ay, az, size[g2, 0], dist, pos, frame, c0)


@kernel
def sphere_cylinder_region(vx, vy, vz, ax, ay, az, radius, height):
    """Where a sphere's centre lies against a cylinder (mjc_SphereCylinder's case test), from its
    offset v from the cylinder's centre and the axis a: (beside the side, over a cap, x the offset
    along the axis, p = v - x a across it, |p|^2). A centre inside takes the nearer surface."""
    x = ax * vx + ay * vy + az * vz
    px = vx - ax * x
    py = vy - ay * x
    pz = vz - az * x
    p_sqr = px * px + py * py + pz * pz
    side = abs(x) < height
    cap = p_sqr < radius * radius
    if side and cap:
        if height - abs(x) < radius - math.sqrt(p_sqr):
            side = False
        else:
            cap = False
    return side, cap, x, px, py, pz, p_sqr


@kernel
def collide_sphere_cylinder(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Sphere g1 against cylinder g2 (mjc_SphereCylinder): at most one contact.

    By where the sphere's centre projects: beside the side (within the half-height), the sphere
    against the nearest axis point; over a cap (within the radius), the sphere against the cap's
    plane; otherwise against the nearest rim point (a sphere of radius 0). A centre inside the
    cylinder takes the side or the cap, whichever surface is nearer.
    """
    radius = size[g2, 0]
    height = size[g2, 1]
    ax, ay, az = z_axis(xmat, g2)

    # the sphere's centre relative to the cylinder: along the axis (x) and across it (p)
    vx = xpos[g1, 0] - xpos[g2, 0]
    vy = xpos[g1, 1] - xpos[g2, 1]
    vz = xpos[g1, 2] - xpos[g2, 2]
    side, cap, x, px, py, pz, p_sqr = sphere_cylinder_region(vx, vy, vz, ax, ay, az, radius, height)

    if side:
        return _sphere_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2],
                              xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2], size[g1, 0],
                              ax * x + xpos[g2, 0], ay * x + xpos[g2, 1], az * x + xpos[g2, 2],
                              ax, ay, az, radius, dist, pos, frame, c0)

    if cap:
        # the cap's plane, normal outwards; the contact normal is its reverse (sphere -> cylinder)
        h = height if x > 0 else -height
        nx, ny, nz = (ax, ay, az) if x > 0 else (-ax, -ay, -az)
        hit, d, cx, cy, cz = _plane_sphere(margin, xpos[g2, 0] + h * ax, xpos[g2, 1] + h * ay,
                                           xpos[g2, 2] + h * az, nx, ny, nz,
                                           xpos[g1, 0], xpos[g1, 1], xpos[g1, 2], size[g1, 0])
        if not hit:
            return 0
        write_contact(dist, pos, frame, c0, d, cx, cy, cz, -nx, -ny, -nz)
        return 1

    # rim: the sphere against the rim point nearest its centre (p cannot be zero here)
    s = radius / math.sqrt(p_sqr)
    h = height if x > 0 else -height
    return _sphere_sphere(margin, xpos[g1, 0], xpos[g1, 1], xpos[g1, 2],
                          xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2], size[g1, 0],
                          (ax * h + px * s) + xpos[g2, 0], (ay * h + py * s) + xpos[g2, 1],
                          (az * h + pz * s) + xpos[g2, 2], ax, ay, az, 0.0, dist, pos, frame, c0)


# ---- capsule-capsule ---------------------------------------------------------------------------

# axes count as parallel when |d1 x d2|^2 < PARALLEL |d1|^2 |d2|^2, i.e. sin^2 of their angle < 1e-8
PARALLEL = 1e-8


@kernel
def _capsule_segment(xpos, xmat, size, g):
    """Capsule g's segment as (start, direction): start = centre - half-length axis, direction
    from there to the other end (centre + half-length axis) - start, so that the segment is
    start + s direction, s in [0, 1]; returns the six components."""
    half = size[g, 1]
    ax = xmat[g, 0, 2] * half
    ay = xmat[g, 1, 2] * half
    az = xmat[g, 2, 2] * half
    sx = xpos[g, 0] - ax
    sy = xpos[g, 1] - ay
    sz = xpos[g, 2] - az
    return sx, sy, sz, (xpos[g, 0] + ax) - sx, (xpos[g, 1] + ay) - sy, (xpos[g, 2] + az) - sz


@kernel
def _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, s, b0x, b0y, b0z, d2x, d2y, d2z, t,
                    xmat, size, g1, g2, dist, pos, frame, c):
    """The capsules' spheres at segment points A0 + s d1 and B0 + t d2, written to contact c."""
    return _sphere_sphere(margin, a0x + d1x * s, a0y + d1y * s, a0z + d1z * s,
                          xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2], size[g1, 0],
                          b0x + d2x * t, b0y + d2y * t, b0z + d2z * t,
                          xmat[g2, 0, 2], xmat[g2, 1, 2], xmat[g2, 2, 2], size[g2, 0],
                          dist, pos, frame, c)


@kernel
def collide_capsule_capsule(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Capsule g1 against capsule g2 (mjc_CapsuleCapsule as in MuJoCo 4.0): up to two contacts.

    Each capsule is a segment A0 + s d1, s in [0, 1] (A0 = centre - half-length axis, d1 from
    there to the other end), likewise B0 + t d2; contacts are the spheres of the capsules'
    radius at pairs of segment points.

    * general position: one contact at the closest pair of points, found as in Ericson's
      "Real-Time Collision Detection" (5.1.9): the lines' closest points, s clipped to the
      segment, t from s and clipped, s recomputed from the clipped t. The determinant
      |d1|^2 |d2|^2 - (d1.d2)^2 and the numerator of s are computed as cross products
      ((d1 x d2).(d1 x d2), (d1 x d2).(d2 x r)), which do not cancel for nearly parallel axes;
    * parallel axes (sin^2 of the angle below 1e-8): two contacts, at the two ends of the
      interval where the segments overlap along the axis, lower s first: an end of segment 2
      projecting into segment 1 pairs with its projection, an end of segment 1 with its
      nearest point of segment 2. Segments that do not overlap give the same contact twice;
    * a segment of (near) zero length (|d|^2 <= MINVAL): its one point against the other segment.

    MuJoCo 3.16 rewrote this collider (changelog: "Fixed floating-point cancellation in
    capsule-capsule collision detection for parallel and near-parallel axes"); the readable
    source (3.12) solves for the centre-relative parameters in [-1, 1] instead, with an absolute
    parallel test det < MINVAL and different points for parallel capsules. The formulation above
    was reconstructed against the 4.0 binary and reproduces its contacts bit for bit in all of
    the cases tested (tests/test_collision_primitive.py); the form of the parallel test
    (``<`` or ``<=``, order of the product) could not be told apart there.
    """
    a0x, a0y, a0z, d1x, d1y, d1z = _capsule_segment(xpos, xmat, size, g1)  # segment 1: A0 + s d1
    b0x, b0y, b0z, d2x, d2y, d2z = _capsule_segment(xpos, xmat, size, g2)  # segment 2: B0 + t d2

    rx = a0x - b0x
    ry = a0y - b0y
    rz = a0z - b0z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz

    # degenerate segments: a point against the other segment
    if a <= MINVAL and e <= MINVAL:
        return _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, 0.0, b0x, b0y, b0z, d2x, d2y, d2z, 0.0,
                               xmat, size, g1, g2, dist, pos, frame, c0)
    if a <= MINVAL:
        return _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, 0.0, b0x, b0y, b0z, d2x, d2y, d2z,
                               clip(f / e, 0.0, 1.0), xmat, size, g1, g2, dist, pos, frame, c0)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= MINVAL:
        return _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, clip(-c / a, 0.0, 1.0),
                               b0x, b0y, b0z, d2x, d2y, d2z, 0.0, xmat, size, g1, g2, dist, pos, frame, c0)

    b = d1x * d2x + d1y * d2y + d1z * d2z
    nx = d1y * d2z - d1z * d2y  # d1 x d2
    ny = d1z * d2x - d1x * d2z
    nz = d1x * d2y - d1y * d2x
    denom = nx * nx + ny * ny + nz * nz

    if denom >= PARALLEL * a * e:
        # general position: closest points of the lines, clipped to the segments
        ux = d2y * rz - d2z * ry  # d2 x r
        uy = d2z * rx - d2x * rz
        uz = d2x * ry - d2y * rx
        s = clip((nx * ux + ny * uy + nz * uz) / denom, 0.0, 1.0)
        t = (b * s + f) / e
        if t < 0:
            t = 0.0
            s = clip(-c / a, 0.0, 1.0)
        elif t > 1:
            t = 1.0
            s = clip((b - c) / a, 0.0, 1.0)
        return _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, s, b0x, b0y, b0z, d2x, d2y, d2z, t,
                               xmat, size, g1, g2, dist, pos, frame, c0)

    # parallel: the ends of the overlap along segment 1, from the projections of B0 (t = 0) and
    # B1 (t = 1); the lower first
    s_b0 = -c / a
    s_b1 = (b - c) / a
    n = 0
    for k in range(2):
        if (k == 0) == (s_b0 <= s_b1):
            s, t = s_b0, 0.0
        else:
            s, t = s_b1, 1.0
        if not 0 < s < 1:
            # beyond segment 1: its end, against the nearest point of segment 2
            s = clip(s, 0.0, 1.0)
            t = clip((b * s + f) / e, 0.0, 1.0)
        n += _segment_points(margin, a0x, a0y, a0z, d1x, d1y, d1z, s, b0x, b0y, b0z, d2x, d2y, d2z, t,
                             xmat, size, g1, g2, dist, pos, frame, c0 + n)
    return n
