"""Box colliders: sphere-box, capsule-box and box-box, as MuJoCo 4.0's engine_collision_box.c
(mjc_SphereBox, mjc_CapsuleBox, mjc_BoxBox).

Each collider follows the collider contract of the collision driver::

    collide_<type1>_<type2>(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0) -> int

``xpos`` (ngeom, 3), ``xmat`` (ngeom, 3, 3) and ``size`` (ngeom, 3) are the geoms' world
positions, row-major rotations and sizes; geom ``g1`` has the lower geom type and the
contact normal points from ``g1`` to ``g2``. ``margin`` is the threshold the driver passes
(the pair's margin + gap); a contact is produced when its distance is within it, with
MuJoCo's own comparisons. Contacts are written at rows ``c0, c0 + 1, ...`` of ``dist``,
``pos`` and ``frame`` (row 0 of the frame the normal, row 1 zeros: these colliders give no
tangent hint), and the number written is returned; the driver completes each frame with
``make_frame``.

The arithmetic follows MuJoCo's operation by operation (the same products summed in the
same order, the same comparisons), so the results agree to the last bit or nearly, and the
branch decisions near ties (which decide how many contacts a pair has) are MuJoCo's.

Box-box clips a polygon of up to twelve vertices in two buffers. Kernels do not allocate,
so the buffers live in ``frame`` rows ``c0 .. c0 + 7``, which the collider owns (the
driver provides mj_maxContact = 8 rows for a box pair): 24 vertices of 3 numbers, one
vertex per frame row. The contacts are written over them at the end; rows past the
returned count are left holding scratch values.
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.types import MINVAL

# ---- sphere : box ---------------------------------------------------------------------------


@kernel
def _clamped(x, limit):
    """x clamped to [-limit, limit] when limit > 0, else x (mju_clampVec on one component,
    with mju_clip's comparisons)."""
    if limit > 0.0:
        if x < -limit:
            return -limit
        if x > limit:
            return limit
    return x


@kernel
def _sphere_box(sx, sy, sz, radius, xpos, xmat, size, b, margin, dist, pos, frame, c):
    """A sphere of the given centre and radius against box geom ``b``; writes contact row
    ``c`` and returns the number of contacts (0 or 1) (mjraw_SphereBox).

    The sphere centre is taken into the box frame and clamped onto the box; the normal is
    the direction from the clamped point to the centre (sphere to box), the position the
    midpoint between the clamped point and the sphere's deepest point. A centre inside the
    box (distance from the clamped point below MINVAL) is pushed out through the nearest
    face instead.
    """
    # centre in the box frame: mat2' (p1 - p2)
    t0 = sx - xpos[b, 0]
    t1 = sy - xpos[b, 1]
    t2 = sz - xpos[b, 2]
    cx = xmat[b, 0, 0] * t0 + xmat[b, 1, 0] * t1 + xmat[b, 2, 0] * t2
    cy = xmat[b, 0, 1] * t0 + xmat[b, 1, 1] * t1 + xmat[b, 2, 1] * t2
    cz = xmat[b, 0, 2] * t0 + xmat[b, 1, 2] * t1 + xmat[b, 2, 2] * t2
    s0 = size[b, 0]
    s1 = size[b, 1]
    s2 = size[b, 2]
    kx = _clamped(cx, s0)
    ky = _clamped(cy, s1)
    kz = _clamped(cz, s2)

    # direction clamped - centre, normalised as mju_normalize3 (near zero -> (1, 0, 0))
    ux = kx - cx
    uy = ky - cy
    uz = kz - cz
    d = math.sqrt(ux * ux + uy * uy + uz * uz)
    if d < MINVAL:
        ux, uy, uz = 1.0, 0.0, 0.0
    else:
        inv = 1.0 / d
        ux *= inv
        uy *= inv
        uz *= inv

    if d - radius > margin:
        return 0

    if d <= MINVAL:
        # centre inside the box: the face nearest to it, faces in the order -x, +x, -y, +y, -z, +z
        closest = (s0 + s1 + s2) * 2.0
        k = 0
        for i in range(6):
            axis = i // 2
            half = size[b, axis] if i % 2 == 1 else -size[b, axis]
            cent = cx if axis == 0 else (cy if axis == 1 else cz)
            gap = abs(half - cent)
            if closest > gap:
                closest = gap
                k = i
        nx = 0.0
        ny = 0.0
        nz = 0.0
        sign = -1.0 if k % 2 == 1 else 1.0
        if k // 2 == 0:
            nx = sign
        elif k // 2 == 1:
            ny = sign
        else:
            nz = sign
        h = (radius - closest) / 2.0
        px = cx + nx * h
        py = cy + ny * h
        pz = cz + nz * h
        d = -closest
    else:
        # deepest point of the sphere, and the midpoint between it and the clamped point
        ex = cx + ux * radius
        ey = cy + uy * radius
        ez = cz + uz * radius
        px = kx * 0.5 + ex * 0.5
        py = ky * 0.5 + ey * 0.5
        pz = kz * 0.5 + ez * 0.5
        nx, ny, nz = ux, uy, uz

    # normal and position back in the world frame: mat2 n, mat2 p + p2
    frame[c, 0, 0] = xmat[b, 0, 0] * nx + xmat[b, 0, 1] * ny + xmat[b, 0, 2] * nz
    frame[c, 0, 1] = xmat[b, 1, 0] * nx + xmat[b, 1, 1] * ny + xmat[b, 1, 2] * nz
    frame[c, 0, 2] = xmat[b, 2, 0] * nx + xmat[b, 2, 1] * ny + xmat[b, 2, 2] * nz
    pos[c, 0] = (xmat[b, 0, 0] * px + xmat[b, 0, 1] * py + xmat[b, 0, 2] * pz) + xpos[b, 0]
    pos[c, 1] = (xmat[b, 1, 0] * px + xmat[b, 1, 1] * py + xmat[b, 1, 2] * pz) + xpos[b, 1]
    pos[c, 2] = (xmat[b, 2, 0] * px + xmat[b, 2, 1] * py + xmat[b, 2, 2] * pz) + xpos[b, 2]
    dist[c] = d - radius
    frame[c, 1, 0] = 0.0
    frame[c, 1, 1] = 0.0
    frame[c, 1, 2] = 0.0
    return 1


@kernel
def collide_sphere_box(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Sphere geom g1 against box geom g2: at most one contact (mjc_SphereBox)."""
    return _sphere_box(xpos[g1, 0], xpos[g1, 1], xpos[g1, 2], size[g1, 0],
                       xpos, xmat, size, g2, margin, dist, pos, frame, c0)


# ---- capsule : box --------------------------------------------------------------------------


@kernel
def _box_to_world(xpos, xmat, b, x, y, z):
    """mat_b (x, y, z) + pos_b: a point in box b's frame in world coordinates."""
    return ((xmat[b, 0, 0] * x + xmat[b, 0, 1] * y + xmat[b, 0, 2] * z) + xpos[b, 0],
            (xmat[b, 1, 0] * x + xmat[b, 1, 1] * y + xmat[b, 1, 2] * z) + xpos[b, 1],
            (xmat[b, 2, 0] * x + xmat[b, 2, 1] * y + xmat[b, 2, 2] * z) + xpos[b, 2])


@kernel
def _corner_axes(c):
    """(ax, ax1, ax2) for a one-bit axis code c in {1, 2, 4}: ax the bit's axis, ax1 and ax2
    the next two in cyclic order."""
    if c == 1:
        return 0, 1, 2
    if c == 2:
        return 1, 2, 0
    return 2, 0, 1


@kernel
def _comp(x, y, z, i):
    """Component i of (x, y, z)."""
    if i == 0:
        return x
    if i == 1:
        return y
    return z


@kernel
def collide_capsule_box(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Capsule geom g1 against box geom g2: up to two contacts (mjc_CapsuleBox).

    In the box frame, the point of the capsule's segment closest to the box is found among
    the segment's two ends (against the box's faces) and the segment's closest points to the
    box's twelve edges. A second point along the segment is chosen when the capsule lies
    along a face or an edge of the box (so that a capsule resting on a box gets two
    contacts), and each point is then collided as a sphere of the capsule's radius
    (mjraw_SphereBox). The codes below (closest type, corner bits, axis directions) are
    MuJoCo's.
    """
    radius = size[g1, 0]
    halflength = size[g1, 1]
    sb0 = size[g2, 0]
    sb1 = size[g2, 1]
    sb2 = size[g2, 2]
    secondpos = -4.0  # no second contact (valid values lie in [-1, 1] relative to the first)

    # capsule centre and half-axis in the box frame
    t0 = xpos[g1, 0] - xpos[g2, 0]
    t1 = xpos[g1, 1] - xpos[g2, 1]
    t2 = xpos[g1, 2] - xpos[g2, 2]
    p0 = xmat[g2, 0, 0] * t0 + xmat[g2, 1, 0] * t1 + xmat[g2, 2, 0] * t2
    p1 = xmat[g2, 0, 1] * t0 + xmat[g2, 1, 1] * t1 + xmat[g2, 2, 1] * t2
    p2 = xmat[g2, 0, 2] * t0 + xmat[g2, 1, 2] * t1 + xmat[g2, 2, 2] * t2
    z0 = xmat[g1, 0, 2]  # the capsule's axis (its z column)
    z1 = xmat[g1, 1, 2]
    z2 = xmat[g1, 2, 2]
    a0 = xmat[g2, 0, 0] * z0 + xmat[g2, 1, 0] * z1 + xmat[g2, 2, 0] * z2
    a1 = xmat[g2, 0, 1] * z0 + xmat[g2, 1, 1] * z1 + xmat[g2, 2, 1] * z2
    a2 = xmat[g2, 0, 2] * z0 + xmat[g2, 1, 2] * z1 + xmat[g2, 2, 2] * z2
    h0 = a0 * halflength
    h1 = a1 * halflength
    h2 = a2 * halflength

    # the octant of the half-axis, one bit per positive component; axisdir and 7 - axisdir
    # describe the same (symmetric) segment
    axisdir = 0
    if h0 > 0.0:
        axisdir += 1
    if h1 > 0.0:
        axisdir += 2
    if h2 > 0.0:
        axisdir += 4

    # the candidates below compare squared distances. The 3.12 source starts them at the
    # unsquared bound margin + 2 (radius + halflength + box half-sizes), which misses every
    # contact of a large capsule or box (squared distances beyond that bound); MuJoCo 4.0
    # finds those contacts, as a bound on the squared distance does (measured against the 4.0
    # binary: any start at or above the square gives the same contacts, since a candidate
    # beyond it is too far for a contact anyway)
    bestdistmax = margin + 2.0 * (radius + halflength + sb0 + sb1 + sb2)
    bestdist = bestdistmax * bestdistmax
    bestsegmentpos = 0.0
    bestboxpos = 0.0
    cltype = -4  # closest type: -3/-1 a segment end against a face, 0..8 an edge (see below)
    clface = -1
    clcorner = 0
    cledge = 0

    # a segment end closest to a face: the end clamped onto the box in at most one coordinate
    for i in (-1, 1):
        e0 = p0 + h0 * i
        e1 = p1 + h1 * i
        e2 = p2 + h2 * i
        q0, q1, q2 = e0, e1, e2
        nclamp = 0
        face = -1
        if e0 < -sb0:
            nclamp += 1
            face = 0
            e0 = -sb0
        elif e0 > sb0:
            nclamp += 1
            face = 0
            e0 = sb0
        if e1 < -sb1:
            nclamp += 1
            face = 1
            e1 = -sb1
        elif e1 > sb1:
            nclamp += 1
            face = 1
            e1 = sb1
        if e2 < -sb2:
            nclamp += 1
            face = 2
            e2 = -sb2
        elif e2 > sb2:
            nclamp += 1
            face = 2
            e2 = sb2
        if nclamp > 1:
            continue
        e0 -= q0
        e1 -= q1
        e2 -= q2
        d = e0 * e0 + e1 * e1 + e2 * e2
        if d < bestdist:
            bestdist = d
            bestsegmentpos = float(i)
            cltype = -2 + i
            clface = face

    # the segment's closest approach to each of the twelve box edges: edge along axis j
    # starting at the corner i with bit j clear, parametrised x1 in [-1, 1] along the edge and
    # x2 in [-1, 1] along the segment
    for j in range(3):
        sj = size[g2, j]
        hj = _comp(h0, h1, h2, j)
        for i in range(8):
            if (i & (1 << j)) != 0:
                continue
            k0 = sb0 if (i & 1) else -sb0
            k1 = sb1 if (i & 2) else -sb1
            k2 = sb2 if (i & 4) else -sb2
            if j == 0:
                k0 = 0.0
            elif j == 1:
                k1 = 0.0
            else:
                k2 = 0.0
            f0 = k0 - p0
            f1 = k1 - p1
            f2 = k2 - p2
            fj = _comp(f0, f1, f2, j)

            ma = sj * sj
            mb = -sj * hj
            mc = size[g1, 1] * size[g1, 1]
            u = -sj * fj
            v = h0 * f0 + h1 * f1 + h2 * f2
            det = ma * mc - mb * mb
            if abs(det) < MINVAL:
                continue
            idet = 1.0 / det

            # s1, s2: 0 or 2 when clamped to the lower or upper end, 1 in the middle
            x1 = (mc * u - mb * v) * idet
            x2 = (ma * v - mb * u) * idet
            s1 = 1
            s2 = 1
            if x1 > 1.0:
                x1 = 1.0
                s1 = 2
                x2 = (v - mb) * (1.0 / mc)
            elif x1 < -1.0:
                x1 = -1.0
                s1 = 0
                x2 = (v + mb) * (1.0 / mc)
            if x2 > 1.0:
                x2 = 1.0
                s2 = 2
                x1 = (u - mb) * (1.0 / ma)
                if x1 > 1.0:
                    x1 = 1.0
                    s1 = 2
                elif x1 < -1.0:
                    x1 = -1.0
                    s1 = 0
            elif x2 < -1.0:
                x2 = -1.0
                s2 = 0
                x1 = (u + mb) * (1.0 / ma)
                if x1 > 1.0:
                    x1 = 1.0
                    s1 = 2
                elif x1 < -1.0:
                    x1 = -1.0
                    s1 = 0

            f0 = k0 - p0
            f1 = k1 - p1
            f2 = k2 - p2
            f0 += h0 * -x2
            f1 += h1 * -x2
            f2 += h2 * -x2
            if j == 0:
                f0 += sj * x1
            elif j == 1:
                f1 += sj * x1
            else:
                f2 += sj * x1
            d = f0 * f0 + f1 * f1 + f2 * f2

            # MuJoCo's MINVAL slack keeps a segment parallel to a face (to rounding) on the
            # face result rather than an edge
            if d < bestdist - MINVAL:
                bestdist = d
                bestsegmentpos = x2
                bestboxpos = x1
                c1 = s1 * 3 + s2
                clcorner = i + (1 << j) * (c1 // 6)  # the edge's upper corner when s1 == 2
                cledge = j
                cltype = c1

    # cltype: -3, -1: an end of the segment against a face;
    #         0..8 = 3 s1 + s2: an edge; s1 (cltype // 3) says where on the box's edge
    #         (0 lower corner, 1 middle, 2 upper corner), s2 (cltype % 3) where on the segment
    if cltype == -4:
        return 0

    if cltype >= 0 and cltype // 3 != 1:
        # closest to a corner of the box; c = the axes along which the segment points away
        # from that corner (0 or 7: straight at or away from it, no second contact)
        c = axisdir ^ clcorner
        if c != 0 and c != 7:
            if c == 1 or c == 2 or c == 4:
                mul = 1.0
                de = 1.0 - bestsegmentpos
                dp = 1.0 + bestsegmentpos
            else:
                mul = -1.0
                c = 7 - c
                dp = 1.0 - bestsegmentpos
                de = 1.0 + bestsegmentpos
            ax, ax1, ax2 = _corner_axes(c)
            aax = _comp(a0, a1, a2, ax)
            if aax * aax > 0.5:
                # second point along the box edge, stopping at the edge's other corner
                secondpos = de
                e = 2.0 * size[g2, ax] / abs(_comp(h0, h1, h2, ax))
                if e < secondpos:
                    secondpos = e
                secondpos *= mul
            else:
                # second point across a face, stopping where the segment leaves the face
                secondpos = dp
                e = 2.0 * size[g2, ax1] / abs(_comp(h0, h1, h2, ax1))
                if e < secondpos:
                    secondpos = e
                e = 2.0 * size[g2, ax2] / abs(_comp(h0, h1, h2, ax2))
                if e < secondpos:
                    secondpos = e
                secondpos *= -mul
    elif cltype >= 0:
        # closest to the middle of a box edge: a second point only when the segment crosses
        # the edge (an X, not a T); mask out the edge's own axis
        c = axisdir ^ clcorner
        c &= 7 - (1 << cledge)
        if c == 1 or c == 2 or c == 4:
            ax = cledge
            if cledge == 0:
                ax1, ax2 = 1, 2
            elif cledge == 1:
                ax1, ax2 = 2, 0
            else:
                ax1, ax2 = 0, 1
            # ax2: the face axis the segment is more tilted towards
            if abs(_comp(a0, a1, a2, ax1)) > abs(_comp(a0, a1, a2, ax2)):
                ax1 = ax2
            ax2 = 3 - ax - ax1
            if c & (1 << ax2):
                mul = 1.0
                secondpos = 1.0 - bestsegmentpos
            else:
                mul = -1.0
                secondpos = 1.0 + bestsegmentpos
            e = 2.0 * size[g2, ax2] / abs(_comp(h0, h1, h2, ax2))
            if e < secondpos:
                secondpos = e
            if ((axisdir & (1 << ax)) != 0) == ((c & (1 << ax2)) != 0):
                e2 = 1.0 - bestboxpos
            else:
                e2 = 1.0 + bestboxpos
            e = size[g2, ax] * e2 / abs(_comp(h0, h1, h2, ax))
            if e < secondpos:
                secondpos = e
            secondpos *= mul
    elif clface != -1:
        # a segment end against a face: the second point towards the other end, as far as
        # the segment stays over the face (clface == -1: the end is inside the box, no second)
        mul = 1.0 if cltype == -3 else -1.0
        secondpos = 2.0
        o0 = p0 + h0 * -mul
        o1 = p1 + h1 * -mul
        o2 = p2 + h2 * -mul
        for i in range(3):
            if i != clface:
                hi = _comp(h0, h1, h2, i)
                oi = _comp(o0, o1, o2, i)
                e = (size[g2, i] - oi) / hi * mul
                if e > 0.0 and e < secondpos:
                    secondpos = e
                e = (-size[g2, i] - oi) / hi * mul
                if e > 0.0 and e < secondpos:
                    secondpos = e
        secondpos *= mul

    # collide a sphere at the first point (through world coordinates, as MuJoCo)
    w0, w1, w2 = _box_to_world(xpos, xmat, g2, p0 + h0 * bestsegmentpos, p1 + h1 * bestsegmentpos,
                               p2 + h2 * bestsegmentpos)
    n = _sphere_box(w0, w1, w2, radius, xpos, xmat, size, g2, margin, dist, pos, frame, c0)
    if secondpos > -3.0:
        s = secondpos + bestsegmentpos
        w0, w1, w2 = _box_to_world(xpos, xmat, g2, p0 + h0 * s, p1 + h1 * s, p2 + h2 * s)
        n += _sphere_box(w0, w1, w2, radius, xpos, xmat, size, g2, margin, dist, pos, frame, c0 + n)
    return n
