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
same order, the same comparisons and tolerances), so the branch decisions near ties, which
decide how many contacts a pair has, are MuJoCo's; on the tests' posed cases (touching,
penetrating, in and beyond the margin, aligned and stacked boxes, deep penetration, tiny
and huge sizes) every contact agrees with MuJoCo 4.0 to the last bit. The one place where
4.0 differs from the readable (3.12) source, capsule-box's search bound, is noted there.

Box-box clips a polygon of up to twelve vertices in two buffers. Kernels do not allocate,
so the buffers live in ``frame`` rows ``c0 .. c0 + 7``, which the collider owns (the
driver provides mj_maxContact = 8 rows for a box pair): 24 vertices of 3 numbers, one
vertex per frame row. The contacts are written over them at the end; rows past the
returned count are left holding scratch values.
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_primitive import write_contact
from kinedyn.engine.types import MAXVAL, MINVAL
from kinedyn.engine.util_spatial import clip, normalized3

# ---- helpers --------------------------------------------------------------------------------



@kernel
def _comp(x, y, z, i):
    """Component i of (x, y, z)."""
    if i == 0:
        return x
    if i == 1:
        return y
    return z


@kernel
def _set(x, y, z, i, v):
    """(x, y, z) with component i replaced by v."""
    if i == 0:
        return v, y, z
    if i == 1:
        return x, v, z
    return x, y, v


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
def _box_to_world(xpos, xmat, b, x, y, z):
    """mat_b (x, y, z) + pos_b: a point in box b's frame in world coordinates."""
    return ((xmat[b, 0, 0] * x + xmat[b, 0, 1] * y + xmat[b, 0, 2] * z) + xpos[b, 0],
            (xmat[b, 1, 0] * x + xmat[b, 1, 1] * y + xmat[b, 1, 2] * z) + xpos[b, 1],
            (xmat[b, 2, 0] * x + xmat[b, 2, 1] * y + xmat[b, 2, 2] * z) + xpos[b, 2])


@kernel
def _box_dir_to_world(xmat, b, x, y, z):
    """mat_b (x, y, z): a direction in box b's frame in world coordinates."""
    return (xmat[b, 0, 0] * x + xmat[b, 0, 1] * y + xmat[b, 0, 2] * z,
            xmat[b, 1, 0] * x + xmat[b, 1, 1] * y + xmat[b, 1, 2] * z,
            xmat[b, 2, 0] * x + xmat[b, 2, 1] * y + xmat[b, 2, 2] * z)


@kernel
def _rot(xmat, a, b, i, j):
    """(mat_a' mat_b)[i, j]: axis j of box b in the frame of box a, component i
    (mju_mulMatTMat3's entry, same products in the same order)."""
    return xmat[a, 0, i] * xmat[b, 0, j] + xmat[a, 1, i] * xmat[b, 1, j] + xmat[a, 2, i] * xmat[b, 2, j]


@kernel
def _local3(xmat, g, x, y, z):
    """mat_g' v: world vector v in the frame of geom g (mju_mulMatTVec3), as a 3-tuple."""
    return (xmat[g, 0, 0] * x + xmat[g, 1, 0] * y + xmat[g, 2, 0] * z,
            xmat[g, 0, 1] * x + xmat[g, 1, 1] * y + xmat[g, 2, 1] * z,
            xmat[g, 0, 2] * x + xmat[g, 1, 2] * y + xmat[g, 2, 2] * z)


# ---- sphere : box ---------------------------------------------------------------------------



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
    cx, cy, cz = _local3(xmat, b, t0, t1, t2)
    s0 = size[b, 0]
    s1 = size[b, 1]
    s2 = size[b, 2]
    kx = _clamped(cx, s0)
    ky = _clamped(cy, s1)
    kz = _clamped(cz, s2)

    # direction clamped - centre, normalised as mju_normalize3 (near zero -> (1, 0, 0))
    ux, uy, uz, d = normalized3(kx - cx, ky - cy, kz - cz)

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
    wx, wy, wz = _box_to_world(xpos, xmat, b, px, py, pz)
    nx, ny, nz = _box_dir_to_world(xmat, b, nx, ny, nz)
    write_contact(dist, pos, frame, c, d - radius, wx, wy, wz, nx, ny, nz)
    return 1


@kernel
def collide_sphere_box(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Sphere geom g1 against box geom g2: at most one contact (mjc_SphereBox)."""
    return _sphere_box(xpos[g1, 0], xpos[g1, 1], xpos[g1, 2], size[g1, 0],
                       xpos, xmat, size, g2, margin, dist, pos, frame, c0)


# ---- capsule : box --------------------------------------------------------------------------



@kernel
def _clamp_to_half(x, half):
    """x clamped to [-half, half], and whether it lay outside (with mju_clip's comparisons)."""
    if x < -half:
        return -half, True
    if x > half:
        return half, True
    return x, False


@kernel
def _clamp_unit(x, code):
    """x clamped to [-1, 1] with its end code: 2 clamped to the upper end, 0 to the lower, else
    ``code`` unchanged (mjc_CapsuleBox's s1/s2 codes)."""
    if x > 1.0:
        return 1.0, 2
    if x < -1.0:
        return -1.0, 0
    return x, code


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
    p0, p1, p2 = _local3(xmat, g2, t0, t1, t2)
    # the capsule's axis (its z column)
    a0, a1, a2 = _local3(xmat, g2, xmat[g1, 0, 2], xmat[g1, 1, 2], xmat[g1, 2, 2])
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

    # the candidates below are squared distances. The 3.12 source starts the search at the
    # unsquared bound margin + 2 (radius + halflength + box half-sizes), so for a large
    # capsule or box every candidate can be rejected and the pair gets no contact (seen with
    # a capsule parallel to a box edge, where the end-to-face candidates do not apply). MuJoCo
    # 4.0 finds those contacts: measured against the 4.0 binary, starting at the square of
    # the bound reproduces them (and any larger start gives the same contacts: a candidate
    # beyond the square is too far for either sphere to touch)
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
        e0, out0 = _clamp_to_half(e0, sb0)
        e1, out1 = _clamp_to_half(e1, sb1)
        e2, out2 = _clamp_to_half(e2, sb2)
        if int(out0) + int(out1) + int(out2) > 1:
            continue
        face = 2 if out2 else (1 if out1 else (0 if out0 else -1))  # the clamped axis, if any
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
                x1, s1 = _clamp_unit(x1, s1)
            elif x2 < -1.0:
                x2 = -1.0
                s2 = 0
                x1 = (u + mb) * (1.0 / ma)
                x1, s1 = _clamp_unit(x1, s1)

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


# ---- box : box ------------------------------------------------------------------------------
#
# mjc_BoxBox, in two stages. Stage 1, the separating-axis test: of the 15 candidate axes (the
# three face normals of each box, the nine cross products of an edge of each), the one of
# largest separation wins; a separation beyond the threshold on any axis means no contact.
# Stage 2 depends on the winner. A face axis: its box is the reference, and the face of the
# other (incident) box most opposed to the reference normal is clipped against the four
# side planes of the reference face (Sutherland-Hodgman); each clipped vertex within the
# threshold is a contact, at most eight. An edge axis: one contact at the midpoint of the
# closest points of the two supporting edges.
#
# MuJoCo's tolerances (its double-precision values), and why each is there:

# slack on the separation tests, per unit of summed half-sizes: supports are sums of
# products of half-sizes and rotation entries, so their rounding error scales with the
# sizes; without it boxes overlapping by less than that error would pass through each other
BOX_SEPEPS = 1e-13  # mjBOXBOX_SEPEPS
# sin^2 of the angle between two edges below which their cross product is rounding noise
# (nearly parallel edges; the face axes cover that direction)
BOX_PAREPS = 1e-16  # mjBOXBOX_PAREPS
# an axis component below this makes the choice of supporting edge ambiguous: both signs
# are tried
BOX_SGNEPS = 1e-9  # mjBOXBOX_SGNEPS
# squared distance, relative to the reference face, under which two clipped vertices are
# one (clipping at a polygon corner emits near-duplicates)
BOX_DUPEPS = 1e-14  # mjBOXBOX_DUPEPS
# an edge axis must beat the best face axis by this fraction of its separation: on near
# ties the face (several contacts) is preferred to the edge (one)
BOX_EDGEBIAS = 1e-6  # mjBOXBOX_EDGEBIAS
# vertex capacity of a clip buffer (a quadrilateral clipped by four half-planes has at
# most eight vertices; MuJoCo's buffers hold twelve)
BOX_MAXVERT = 12  # mjBOXBOX_MAXVERT
# the contacts a box pair can return (mj_maxContact)
BOX_MAXCON = 8



@kernel
def _vert_get(buf, c0, slot, k):
    """Coordinate k of clip vertex ``slot`` (0..23) kept in frame rows c0.. (see module docstring)."""
    return buf[c0 + slot // 3, slot % 3, k]


@kernel
def _vert_set(buf, c0, slot, x, y, z):
    """Store clip vertex ``slot`` = (x, y, z) in frame rows c0..."""
    r = c0 + slot // 3
    s = slot % 3
    buf[r, s, 0] = x
    buf[r, s, 1] = y
    buf[r, s, 2] = z


@kernel
def _clip_half_plane(buf, c0, cur, nin, coord, sign, limit):
    """Clip the polygon in buffer ``cur`` (0 or 1; nin vertices) against sign * v[coord] <=
    limit (clipHalfPlane). Returns (buffer holding the result, its vertex count).

    When every vertex is inside, the polygon is left in place; otherwise the result goes to
    the other buffer: each inside vertex, and the crossing point of each edge that strictly
    crosses the line, interpolated in all three coordinates (z is the height above the
    reference face).
    """
    base = BOX_MAXVERT * cur
    all_inside = True
    for k in range(nin):
        if not sign * _vert_get(buf, c0, base + k, coord) - limit <= 0.0:
            all_inside = False
    if all_inside:
        return cur, nin
    out = 1 - cur
    obase = BOX_MAXVERT * out
    nout = 0
    for k in range(nin):
        k1 = 0 if k + 1 == nin else k + 1
        px = _vert_get(buf, c0, base + k, 0)
        py = _vert_get(buf, c0, base + k, 1)
        pz = _vert_get(buf, c0, base + k, 2)
        dp = sign * _vert_get(buf, c0, base + k, coord) - limit
        dq = sign * _vert_get(buf, c0, base + k1, coord) - limit
        if dp <= 0.0 and nout < BOX_MAXVERT:
            _vert_set(buf, c0, obase + nout, px, py, pz)
            nout += 1
        if ((dp < 0.0 and dq > 0.0) or (dp > 0.0 and dq < 0.0)) and nout < BOX_MAXVERT:
            t = dp / (dp - dq)
            qx = _vert_get(buf, c0, base + k1, 0)
            qy = _vert_get(buf, c0, base + k1, 1)
            qz = _vert_get(buf, c0, base + k1, 2)
            _vert_set(buf, c0, obase + nout, px + t * (qx - px), py + t * (qy - py), pz + t * (qz - pz))
            nout += 1
    return out, nout


@kernel
def _rinc(xmat, g1, g2, ref1, r, c):
    """Component r of the incident box's axis c in the reference box's frame: rot[r, c] when
    box 1 is the reference, rot[c, r] when box 2 is."""
    if ref1:
        return _rot(xmat, g1, g2, r, c)
    return _rot(xmat, g1, g2, c, r)


@kernel
def _edge_axis(xmat, g1, g2, i, j):
    """The unit axis e_i x (axis j of box 2) in box 1's frame (component i is zero), normalised
    as mju_normalize3 (near zero -> (1, 0, 0)): mjc_BoxBox's edge-edge axis 6 + 3 i + j."""
    n0, n1, n2 = _set(0.0, 0.0, 0.0, (i + 1) % 3, -_rot(xmat, g1, g2, (i + 2) % 3, j))
    n0, n1, n2 = _set(n0, n1, n2, (i + 2) % 3, _rot(xmat, g1, g2, (i + 1) % 3, j))
    n0, n1, n2, _ = normalized3(n0, n1, n2)
    return n0, n1, n2


@kernel
def _box_edge_contact(xpos, xmat, size, g1, g2, code, p21x, p21y, p21z, septol, dist, pos, frame, c0):
    """Stage 2a of mjc_BoxBox: the edge-edge contact for edge axis ``code`` = 6 + 3 i + j
    (edge i of box 1 crossed with edge j of box 2). Returns 0 or 1.

    The supporting edge of each box is the one at the corner extreme along the axis (box 1's
    towards box 2, box 2's towards box 1). A component of the axis below BOX_SGNEPS makes
    that corner ambiguous (rounding could pick the edge on the wrong side), so both choices
    are tried and the pair of closest points nearest to each other is kept. The contact is
    the midpoint of those points, its distance their separation along the axis. Work is in
    box 1's frame (p21 = box 2's centre there).
    """
    i = (code - 6) // 3
    j = (code - 6) % 3
    i1 = (i + 1) % 3
    i2 = (i + 2) % 3
    j1 = (j + 1) % 3
    j2 = (j + 2) % 3

    # the unit edge axis, oriented from box 1 towards box 2
    n0, n1, n2 = _edge_axis(xmat, g1, g2, i, j)
    if n0 * p21x + n1 * p21y + n2 * p21z < 0.0:
        n0, n1, n2 = -n0, -n1, -n2

    # the axis in box 2's frame, and the ambiguous components (at most one per box)
    b0 = n0 * _rot(xmat, g1, g2, 0, 0) + n1 * _rot(xmat, g1, g2, 1, 0) + n2 * _rot(xmat, g1, g2, 2, 0)
    b1 = n0 * _rot(xmat, g1, g2, 0, 1) + n1 * _rot(xmat, g1, g2, 1, 1) + n2 * _rot(xmat, g1, g2, 2, 1)
    b2 = n0 * _rot(xmat, g1, g2, 0, 2) + n1 * _rot(xmat, g1, g2, 1, 2) + n2 * _rot(xmat, g1, g2, 2, 2)
    ni1 = _comp(n0, n1, n2, i1)
    ni2 = _comp(n0, n1, n2, i2)
    bj1 = _comp(b0, b1, b2, j1)
    bj2 = _comp(b0, b1, b2, j2)
    amb1 = -1
    if abs(ni1) < BOX_SGNEPS:
        amb1 = i1
    elif abs(ni2) < BOX_SGNEPS:
        amb1 = i2
    amb2 = -1
    if abs(bj1) < BOX_SGNEPS:
        amb2 = j1
    elif abs(bj2) < BOX_SGNEPS:
        amb2 = j2

    # direction of box 2's edge (box 1 frame); its cosine with box 1's edge
    d0 = _rot(xmat, g1, g2, 0, j)
    d1 = _rot(xmat, g1, g2, 1, j)
    d2 = _rot(xmat, g1, g2, 2, j)
    b = _comp(d0, d1, d2, i)
    denom = 1.0 - b * b
    h1 = size[g1, i]
    h2 = size[g2, j]

    best = MAXVAL
    w10 = w11 = w12 = w20 = w21 = w22 = 0.0
    for v1 in range(2 if amb1 >= 0 else 1):
        for v2 in range(2 if amb2 >= 0 else 1):
            # middle of box 1's edge (component i zero): the corner along +axis, the
            # ambiguous sign flipped by v1
            e0, e1, e2 = _set(0.0, 0.0, 0.0, i1, size[g1, i1] if ni1 >= 0.0 else -size[g1, i1])
            e0, e1, e2 = _set(e0, e1, e2, i2, size[g1, i2] if ni2 >= 0.0 else -size[g1, i2])
            if amb1 >= 0 and v1:
                e0, e1, e2 = _set(e0, e1, e2, amb1, -_comp(e0, e1, e2, amb1))
            # middle of box 2's edge (box 2 frame, component j zero): the corner along -axis
            f0, f1, f2 = _set(0.0, 0.0, 0.0, j1, -size[g2, j1] if bj1 >= 0.0 else size[g2, j1])
            f0, f1, f2 = _set(f0, f1, f2, j2, -size[g2, j2] if bj2 >= 0.0 else size[g2, j2])
            if amb2 >= 0 and v2:
                f0, f1, f2 = _set(f0, f1, f2, amb2, -_comp(f0, f1, f2, amb2))
            # ... in box 1's frame: rot f + p21
            k0 = (_rot(xmat, g1, g2, 0, 0) * f0 + _rot(xmat, g1, g2, 0, 1) * f1
                  + _rot(xmat, g1, g2, 0, 2) * f2) + p21x
            k1 = (_rot(xmat, g1, g2, 1, 0) * f0 + _rot(xmat, g1, g2, 1, 1) * f1
                  + _rot(xmat, g1, g2, 1, 2) * f2) + p21y
            k2 = (_rot(xmat, g1, g2, 2, 0) * f0 + _rot(xmat, g1, g2, 2, 1) * f1
                  + _rot(xmat, g1, g2, 2, 2) * f2) + p21z

            # closest points of the two segments (unit directions), each clamp re-solving the
            # other parameter
            u0 = k0 - e0
            u1 = k1 - e1
            u2 = k2 - e2
            d1e = _comp(u0, u1, u2, i)
            d2e = d0 * u0 + d1 * u1 + d2 * u2
            s = 0.0 if denom < MINVAL else (d1e - b * d2e) / denom
            s = clip(s, -h1, h1)
            t = clip(b * s - d2e, -h2, h2)
            s = clip(d1e + b * t, -h1, h1)

            p0, p1, p2 = _set(e0, e1, e2, i, _comp(e0, e1, e2, i) + s)
            q0 = k0 + d0 * t
            q1 = k1 + d1 * t
            q2 = k2 + d2 * t
            r0 = q0 - p0
            r1 = q1 - p1
            r2 = q2 - p2
            gap2 = r0 * r0 + r1 * r1 + r2 * r2
            if gap2 < best:
                best = gap2
                w10, w11, w12 = p0, p1, p2
                w20, w21, w22 = q0, q1, q2

    # signed distance along the axis
    sep = (w20 - w10) * n0 + (w21 - w11) * n1 + (w22 - w12) * n2
    if sep > septol:
        return 0

    # the midpoint of the closest points, and the axis, in the world
    px, py, pz = _box_to_world(xpos, xmat, g1, 0.5 * (w10 + w20), 0.5 * (w11 + w21), 0.5 * (w12 + w22))
    nx, ny, nz = _box_dir_to_world(xmat, g1, n0, n1, n2)
    write_contact(dist, pos, frame, c0, sep, px, py, pz, nx, ny, nz)
    return 1


@kernel
def _box_face_contact(xpos, xmat, size, g1, g2, code, margin, p21x, p21y, p21z, p12x, p12y, p12z,
                      dist, pos, frame, c0):
    """Stage 2b of mjc_BoxBox: the contacts of face axis ``code`` (0..2 a face of box 1,
    3..5 of box 2). Returns their number (0 to 8).

    The face's box is the reference; the incident face is the face of the other box whose
    normal is most opposed to the reference normal. Its corners, in the reference frame as
    (x, y) in the face plane and z the height above the face, are clipped against the four
    sides of the reference face, and every clipped vertex with z within the threshold
    (dropping near-duplicates) is a contact at (x, y) and half way between the face and the
    incident surface, with distance z. The clip buffers are frame rows c0.. (module
    docstring).
    """
    ref1 = code < 3
    a = code if ref1 else code - 3
    gref = g1 if ref1 else g2
    ginc = g2 if ref1 else g1
    if ref1:
        ox, oy, oz = p21x, p21y, p21z  # incident centre in the reference frame
    else:
        ox, oy, oz = p12x, p12y, p12z
    oa = _comp(ox, oy, oz, a)
    sgn = 1.0 if oa >= 0.0 else -1.0  # +1 when the incident box lies along +a

    # incident face: normal along the incident axis most aligned with a, on the side facing
    # the reference box
    binc = 0
    for k in range(1, 3):
        if abs(_rinc(xmat, g1, g2, ref1, a, k)) > abs(_rinc(xmat, g1, g2, ref1, a, binc)):
            binc = k
    tinc = -1.0 if sgn * _rinc(xmat, g1, g2, ref1, a, binc) > 0.0 else 1.0

    ax = (a + 1) % 3
    ay = (a + 2) % 3
    bu = (binc + 1) % 3
    bv = (binc + 2) % 3

    # the incident face's centre and half-edges in (x, y, z) = reference axes (ax, ay, a)
    cx = _comp(ox, oy, oz, ax) + tinc * size[ginc, binc] * _rinc(xmat, g1, g2, ref1, ax, binc)
    cy = _comp(ox, oy, oz, ay) + tinc * size[ginc, binc] * _rinc(xmat, g1, g2, ref1, ay, binc)
    cz = oa + tinc * size[ginc, binc] * _rinc(xmat, g1, g2, ref1, a, binc)
    ux = size[ginc, bu] * _rinc(xmat, g1, g2, ref1, ax, bu)
    uy = size[ginc, bu] * _rinc(xmat, g1, g2, ref1, ay, bu)
    uz = size[ginc, bu] * _rinc(xmat, g1, g2, ref1, a, bu)
    vx = size[ginc, bv] * _rinc(xmat, g1, g2, ref1, ax, bv)
    vy = size[ginc, bv] * _rinc(xmat, g1, g2, ref1, ay, bv)
    vz = size[ginc, bv] * _rinc(xmat, g1, g2, ref1, a, bv)
    cz = sgn * cz - size[gref, a]
    uz *= sgn
    vz *= sgn

    # the four corners, in cyclic order (+u+v, -u+v, -u-v, +u-v), into clip buffer 0
    for k in range(4):
        su = 1.0 if k == 0 or k == 3 else -1.0
        sv = 1.0 if k < 2 else -1.0
        _vert_set(frame, c0, k, cx + su * ux + sv * vx, cy + su * uy + sv * vy, cz + su * uz + sv * vz)

    # clip against the sides of the reference face
    limx = size[gref, ax]
    limy = size[gref, ay]
    cur, nvert = _clip_half_plane(frame, c0, 0, 4, 0, 1.0, limx)
    cur, nvert = _clip_half_plane(frame, c0, cur, nvert, 0, -1.0, limx)
    cur, nvert = _clip_half_plane(frame, c0, cur, nvert, 1, 1.0, limy)
    cur, nvert = _clip_half_plane(frame, c0, cur, nvert, 1, -1.0, limy)

    # keep the vertices within the threshold, dropping near-duplicates (compacted in place)
    base = BOX_MAXVERT * cur
    dupe2 = BOX_DUPEPS * (limx * limx + limy * limy)
    naccept = 0
    for k in range(nvert):
        x = _vert_get(frame, c0, base + k, 0)
        y = _vert_get(frame, c0, base + k, 1)
        z = _vert_get(frame, c0, base + k, 2)
        if z > margin:
            continue
        dupe = False
        for q in range(naccept):
            dx = _vert_get(frame, c0, base + q, 0) - x
            dy = _vert_get(frame, c0, base + q, 1) - y
            if dx * dx + dy * dy < dupe2:
                dupe = True
                break
        if not dupe:
            _vert_set(frame, c0, base + naccept, x, y, z)
            naccept += 1
    if naccept > BOX_MAXCON:
        naccept = BOX_MAXCON  # cannot happen for a convex clip (MuJoCo would write past its rows)

    # move the accepted vertices out of the frame rows before writing contacts over them
    for k in range(naccept):
        x = _vert_get(frame, c0, base + k, 0)
        y = _vert_get(frame, c0, base + k, 1)
        z = _vert_get(frame, c0, base + k, 2)
        pos[c0 + k, 0] = x
        pos[c0 + k, 1] = y
        pos[c0 + k, 2] = z

    # normal from box 1 to box 2: the reference axis a, signed
    nsign = sgn if ref1 else -sgn
    nx = nsign * xmat[gref, 0, a]
    ny = nsign * xmat[gref, 1, a]
    nz = nsign * xmat[gref, 2, a]
    ha = size[gref, a]
    for k in range(naccept):
        x = pos[c0 + k, 0]
        y = pos[c0 + k, 1]
        z = pos[c0 + k, 2]
        # the point in the reference frame: (x, y) in the face plane, half way up along a
        l0, l1, l2 = _set(0.0, 0.0, 0.0, ax, x)
        l0, l1, l2 = _set(l0, l1, l2, ay, y)
        l0, l1, l2 = _set(l0, l1, l2, a, sgn * (ha + 0.5 * z))
        px, py, pz = _box_to_world(xpos, xmat, gref, l0, l1, l2)
        write_contact(dist, pos, frame, c0 + k, z, px, py, pz, nx, ny, nz)
    return naccept



@kernel
def box_box_centres(xpos, xmat, g1, g2):
    """Box 2's centre in box 1's frame and box 1's in box 2's (6 numbers)."""
    p21x, p21y, p21z = _local3(xmat, g1, xpos[g2, 0] - xpos[g1, 0], xpos[g2, 1] - xpos[g1, 1],
                               xpos[g2, 2] - xpos[g1, 2])
    p12x, p12y, p12z = _local3(xmat, g2, xpos[g1, 0] - xpos[g2, 0], xpos[g1, 1] - xpos[g2, 1],
                               xpos[g1, 2] - xpos[g2, 2])
    return p21x, p21y, p21z, p12x, p12y, p12z


@kernel
def box_box_axis(xmat, size, g1, g2, p21x, p21y, p21z, p12x, p12y, p12z, septol):
    """Stage 1 of mjc_BoxBox, the separating-axis test: the contact axis (0..2 a face of box 1,
    3..5 a face of box 2, 6 + 3 i + j the edge pair: edge i of box 1, edge j of box 2), or -1 when
    an axis separates the boxes by more than septol. p21 is box 2's centre in box 1's frame, p12
    box 1's in box 2's. (derivative_collision reads back which features a contact held.)"""
    # best separation so far and its axis: 0..2 a face of box 1, 3..5 a face of box 2,
    # 6 + 3 i + j the edge pair (i of box 1, j of box 2)
    sep_best = -MAXVAL
    code = -1

    for i in range(3):
        radius2 = (abs(_rot(xmat, g1, g2, i, 0)) * size[g2, 0] + abs(_rot(xmat, g1, g2, i, 1)) * size[g2, 1]
                   + abs(_rot(xmat, g1, g2, i, 2)) * size[g2, 2])
        sep = abs(_comp(p21x, p21y, p21z, i)) - size[g1, i] - radius2
        if sep > septol:
            return -1
        if sep > sep_best:
            sep_best = sep
            code = i
    for j in range(3):
        radius1 = (abs(_rot(xmat, g1, g2, 0, j)) * size[g1, 0] + abs(_rot(xmat, g1, g2, 1, j)) * size[g1, 1]
                   + abs(_rot(xmat, g1, g2, 2, j)) * size[g1, 2])
        sep = abs(_comp(p12x, p12y, p12z, j)) - size[g2, j] - radius1
        if sep > septol:
            return -1
        if sep > sep_best:
            sep_best = sep
            code = 3 + j
    sep_face = sep_best
    code_face = code

    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        for j in range(3):
            j1 = (j + 1) % 3
            j2 = (j + 2) % 3
            # e_i x (axis j of box 2) in box 1's frame: components i1 and i2 (i is zero)
            a1 = -_rot(xmat, g1, g2, i2, j)
            a2 = _rot(xmat, g1, g2, i1, j)
            norm2 = a1 * a1 + a2 * a2
            if norm2 < BOX_PAREPS:
                continue
            inv = 1.0 / math.sqrt(norm2)
            a1 *= inv
            a2 *= inv
            radius1 = size[g1, i1] * abs(a1) + size[g1, i2] * abs(a2)
            # in box 2's frame component j is zero
            c1 = a1 * _rot(xmat, g1, g2, i1, j1) + a2 * _rot(xmat, g1, g2, i2, j1)
            c2 = a1 * _rot(xmat, g1, g2, i1, j2) + a2 * _rot(xmat, g1, g2, i2, j2)
            radius2 = size[g2, j1] * abs(c1) + size[g2, j2] * abs(c2)
            sep = (abs(a1 * _comp(p21x, p21y, p21z, i1) + a2 * _comp(p21x, p21y, p21z, i2))
                   - radius1 - radius2)
            if sep > septol:
                return -1
            # the edge must beat the best so far by the bias, and the best face outright
            if sep - BOX_EDGEBIAS * abs(sep) > sep_best and sep > sep_face:
                sep_best = sep
                code = 6 + 3 * i + j

    if code < 0:
        return -1  # only when every separation is below -MAXVAL

    # a winning edge axis within about 8 degrees of the best face axis duplicates it: the
    # face is taken instead unless the edge separates by more than 5% of the face's depth
    # (resting stacks would otherwise flip between the two on rounding noise)
    if code >= 6:
        i = (code - 6) // 3
        j = (code - 6) % 3
        n0, n1, n2 = _edge_axis(xmat, g1, g2, i, j)
        if code_face < 3:
            face_dot = abs(_comp(n0, n1, n2, code_face))
        else:
            f = code_face - 3
            face_dot = abs(n0 * _rot(xmat, g1, g2, 0, f) + n1 * _rot(xmat, g1, g2, 1, f)
                           + n2 * _rot(xmat, g1, g2, 2, f))
        if face_dot > 0.99 and sep_best < sep_face + 0.05 * abs(sep_face) + MINVAL:
            code = code_face
            sep_best = sep_face
    return code


@kernel
def collide_box_box(xpos, xmat, size, g1, g2, margin, dist, pos, frame, c0):
    """Box geom g1 against box geom g2: up to eight contacts (mjc_BoxBox; see above)."""
    p21x, p21y, p21z, p12x, p12y, p12z = box_box_centres(xpos, xmat, g1, g2)

    # ---- stage 1: separating-axis test
    septol = margin + BOX_SEPEPS * (size[g1, 0] + size[g1, 1] + size[g1, 2]
                                    + size[g2, 0] + size[g2, 1] + size[g2, 2])
    code = box_box_axis(xmat, size, g1, g2, p21x, p21y, p21z, p12x, p12y, p12z, septol)
    if code < 0:
        return 0

    # ---- stage 2a: edge-edge contact
    if code >= 6:
        return _box_edge_contact(xpos, xmat, size, g1, g2, code, p21x, p21y, p21z, septol,
                                 dist, pos, frame, c0)

    # ---- stage 2b: face contact
    return _box_face_contact(xpos, xmat, size, g1, g2, code, margin, p21x, p21y, p21z, p12x, p12y, p12z,
                             dist, pos, frame, c0)
