"""Tendons: lengths, Jacobians, velocities and spring-damper forces (fixed and spatial tendons).

Mirrors ``mj_tendon`` (engine_core_smooth.c), the tendon part of ``mj_fwdVelocity``
(engine_forward.c) and the tendon spring-dampers of ``mj_springdamper``
(engine_passive.c). A fixed tendon is a linear combination of hinge and slide
joint positions,

    ten_length = sum_k coef_k * qpos[jnt_qposadr[j_k]],      ten_J[dof of j_k] = coef_k,

stored as the path ``wrap_objid`` (joints) / ``wrap_prm`` (coefficients) from
``tendon_adr``. ``ten_J`` is dense here; MuJoCo keeps it sparse with the pattern
``ten_J_rownnz/rowadr/colind`` on mjModel. Spatial tendons run through sites and
pulleys and wrap around sphere and cylinder geoms (see ``_tendon`` and ``wrap_geom``).

The tendon spring has a deadband: with ``[lo, hi] = tendon_lengthspring`` the force
along the tendon is ``-stiffness * (length - hi)`` above ``hi``,
``-stiffness * (length - lo)`` below ``lo`` and zero between; the damper force is
``-damping * ten_velocity``. Both are mapped to joint space with ``ten_J^T``.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.passive_plastic import tendon_deadband
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    DSBL_DAMPER,
    DSBL_SPRING,
    MINVAL,
    OPT_DISABLEFLAGS,
    WRAP_CYLINDER,
    WRAP_JOINT,
    WRAP_PULLEY,
    WRAP_SPHERE,
)
from kinedyn.engine.util_poly import poly_force, tendon_damping_coefs

# ---- wrapping around spheres and cylinders (mju_wrap and helpers, engine_util_misc.c) -------------
#
# The tendon segment between two sites x0, x1 that has a sphere or cylinder between them
# is replaced, when the straight line would cut the geom, by x0 -> tangent point -> arc
# on the geom's surface -> tangent point -> x1. The problem is solved in 2D: for a sphere
# in the plane through the centre, x0 and x1; for a cylinder in the cross-section (its
# local xy plane), the height then interpolated along the unrolled path. A side site
# outside the geom picks which way around the geom the tendon goes (MuJoCo 4.0's winding
# rule, see _wrap_circle); a side site *inside* the geom selects
# the "inside" wrap, where the tendon touches the circle at one point from within
# (wrap_inside). Points are passed as scalars so the per-step kernel allocates nothing.


@kernel
def _asin(x):
    """C's asin: NaN outside [-1, 1]."""
    if x > 1.0 or x < -1.0:
        return math.nan
    return math.asin(x)


@kernel
def _normalize2(x, y):
    """(x, y) scaled to unit length and its norm; (1, 0) when shorter than MINVAL (mju_normalize)."""
    norm = math.sqrt(x * x + y * y)
    if norm < MINVAL:
        return 1.0, 0.0, norm
    inv = 1.0 / norm
    return x * inv, y * inv, norm


@kernel
def _normalize3(x, y, z):
    """(x, y, z) scaled to unit length and its norm; (1, 0, 0) when shorter than MINVAL (mju_normalize3)."""
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < MINVAL:
        return 1.0, 0.0, 0.0, norm
    inv = 1.0 / norm
    return x * inv, y * inv, z * inv, norm


@kernel
def _turn_angle(ax, ay, bx, by):
    """Signed angle in (-pi, pi] from direction a to direction b, counter-clockwise positive.

    It is also the winding angle around the origin of the straight segment a -> b when
    that segment does not pass through the origin.
    """
    return math.atan2(ax * by - ay * bx, ax * bx + ay * by)


@kernel
def _arc_length(p0x, p0y, p1x, p1y, ccw, radius):
    """Length of the arc from p0 to p1 on the circle, counter-clockwise when ``ccw`` (length_circle).

    The angle comes from atan2 of the cross and dot products: acos of the normalised dot
    product, as in 3.12's length_circle, loses half the digits for short arcs (at wrap
    onset) and is NaN when rounding pushes the dot product past 1; MuJoCo 4.0.0's lengths
    are accurate to round-off there (changelog 4.0.0: wrapping stability at wrap onset).
    """
    angle = _turn_angle(p0x, p0y, p1x, p1y)
    if not ccw:
        angle = -angle
    if angle < 0.0:
        angle += 2.0 * math.pi
    return radius * angle


@kernel
def _tangent_points(ccw, e0x, e0y, e1x, e1y, sqlen0, sqlen1, root0, root1, radius):
    """Tangent points of the path e0 -> circle -> e1 that goes around the centre counter-clockwise
    when ``ccw``, else clockwise (wrap_circle's two constructions; root = sqrt(|e|^2 - r^2)).
    """
    sgn = -1.0 if ccw else 1.0
    sqrad = radius * radius
    t0x = (e0x * sqrad + sgn * radius * e0y * root0) / sqlen0
    t0y = (e0y * sqrad - sgn * radius * e0x * root0) / sqlen0
    t1x = (e1x * sqrad - sgn * radius * e1y * root1) / sqlen1
    t1y = (e1y * sqrad + sgn * radius * e1x * root1) / sqlen1
    return t0x, t0y, t1x, t1y


@kernel
def _wrap_circle(e0x, e0y, e1x, e1y, has_side, sx, sy, radius):
    """Outside wrap of a 2D segment around a circle at the origin (wrap_circle).

    Returns (arc length or -1 for no wrap, tangent point 0 (x, y), tangent point 1 (x, y)).
    No wrap when an end is inside the circle or the ends coincide.

    MuJoCo 4.0's rule (changelog 4.0.0, "Changed the semantics of sidesite"; XML
    reference, spatial/geom/sidesite): the tendon is the shortest path from e0 to e1
    around the circle with the same winding angle around the centre as the polyline
    e0 -> side site -> e1, or without a side site as the straight segment. The
    polyline's winding differs from the segment's (``straight``) by 0 or +-2 pi. If it
    is the same and the segment clears the circle, the tendon stays straight; otherwise
    it wraps counter-clockwise when the winding is positive, else clockwise. Without a
    side site this is the shorter way around (3.12 chose it by the shorter chord between
    the tangent points, which picks the wrong side when the segment barely cuts the
    circle and the two tangent points nearly coincide).
    """
    sqlen0 = e0x * e0x + e0y * e0y
    sqlen1 = e1x * e1x + e1y * e1y
    sqrad = radius * radius
    if sqlen0 < sqrad or sqlen1 < sqrad or radius < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    difx = e1x - e0x
    dify = e1y - e0y
    dd = difx * difx + dify * dify
    if dd < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    # point of the segment nearest the centre: does the segment cut the circle?
    a = -(difx * e0x + dify * e0y) / dd
    a = min(max(a, 0.0), 1.0)
    nx = a * difx + e0x
    ny = a * dify + e0y
    clears = nx * nx + ny * ny > sqrad
    straight = _turn_angle(e0x, e0y, e1x, e1y)
    winding = straight
    if has_side:
        winding = _turn_angle(e0x, e0y, sx, sy) + _turn_angle(sx, sy, e1x, e1y)
    if clears and abs(winding - straight) < math.pi:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    ccw = winding > 0.0
    q0x, q0y, q1x, q1y = _tangent_points(ccw, e0x, e0y, e1x, e1y, sqlen0, sqlen1,
                                         math.sqrt(sqlen0 - sqrad), math.sqrt(sqlen1 - sqrad), radius)
    return _arc_length(q0x, q0y, q1x, q1y, ccw, radius), q0x, q0y, q1x, q1y


@kernel
def _inside_residual(t, A, B, G):
    """wrap_inside's equation in the touching angle t: asin(A sin t) + asin(B sin t) - 2 t + G."""
    z = math.sin(t)
    return _asin(A * z) + _asin(B * z) - 2.0 * t + G


@kernel
def _wrap_inside(e0x, e0y, e1x, e1y, radius):
    """Inside wrap (wrap_inside): the tendon touches the circle from within at one point.

    Both ends are outside the circle and the straight segment must not cut it; the
    touching point makes the two straight pieces meet the circle at equal angles,
    which is the root z of asin(A z) + asin(B z) - 2 asin(z) + G = 0 (A, B the radius
    over the end distances, G the angle between the ends), found by Newton's method
    in t = asin(z) from t = pi/2. Returns (0 for wrap or -1, the point twice as (x, y, x, y));
    when Newton's method fails the point is the normalised midpoint, as in MuJoCo.
    """
    len0 = math.sqrt(e0x * e0x + e0y * e0y)
    len1 = math.sqrt(e1x * e1x + e1y * e1y)
    difx = e1x - e0x
    dify = e1y - e0y
    dd = difx * difx + dify * dify
    if len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or len1 < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    if dd > MINVAL:
        a = -(difx * e0x + dify * e0y) / dd
        if 0.0 < a < 1.0:
            nx = e0x + a * difx
            ny = e0y + a * dify
            if math.sqrt(nx * nx + ny * ny) <= radius:
                return -1.0, 0.0, 0.0, 0.0, 0.0
    # fallback when Newton's method does not apply: the midpoint direction on the circle
    mx, my, _ = _normalize2(0.5 * (e0x + e1x), 0.5 * (e0y + e1y))
    px = mx * radius
    py = my * radius
    A = radius / len0
    B = radius / len1
    cos_g = (len0 * len0 + len1 * len1 - dd) / (2.0 * len0 * len1)
    if cos_g < -1.0 + MINVAL:
        return -1.0, px, py, px, py
    if cos_g > 1.0 - MINVAL:
        return 0.0, px, py, px, py
    G = math.acos(cos_g)
    # Newton's method in the touching angle t = asin(z), from t = pi/2 (z = 1): there the
    # derivative is -2 and stays in (-2, 0) on (0, pi/2], where in z it is unbounded at 1.
    # MuJoCo 4.0.0 iterates in this variable (changelog 3.16.0, "improved numerical
    # stability ... for inside wrapping"; measured: its points are reproduced to 7e-16).
    t = 0.5 * math.pi
    f = _inside_residual(t, A, B, G)
    if f > 0.0:
        return 0.0, px, py, px, py
    maxiter = 20
    tolerance = 1e-6
    it = 0
    while it < maxiter and abs(f) > tolerance:
        sin_t = math.sin(t)
        cos_t = math.cos(t)
        df = (A * cos_t / max(MINVAL, math.sqrt(1.0 - A * A * sin_t * sin_t))
              + B * cos_t / max(MINVAL, math.sqrt(1.0 - B * B * sin_t * sin_t))
              - 2.0)
        if df > -MINVAL:
            return 0.0, px, py, px, py
        t1 = t - f / df
        if t1 > t:
            return 0.0, px, py, px, py
        t = t1
        f = _inside_residual(t, A, B, G)
        if f > tolerance:
            return 0.0, px, py, px, py
        it += 1
    if it >= maxiter:
        return 0.0, px, py, px, py
    # rotate the nearer-turning end's direction by the angle found
    z = math.sin(t)
    if e0x * e1y - e0y * e1x > 0.0:
        vx, vy = e0x, e0y
        ang = t - _asin(A * z)
    else:
        vx, vy = e1x, e1y
        ang = t - _asin(B * z)
    vx, vy, _ = _normalize2(vx, vy)
    c = math.cos(ang)
    s = math.sin(ang)
    px = radius * (c * vx - s * vy)
    py = radius * (s * vx + c * vy)
    return 0.0, px, py, px, py


@kernel
def wrap_geom(x0, x1, center, rot, radius, wraptype, side, has_side):
    """Wrap the segment x0-x1 around a sphere or cylinder (mju_wrap).

    ``center``, ``rot``: the geom's position (3,) and orientation (3, 3); ``side`` the
    side site's position (used when ``has_side``). Returns (length of the path on the
    geom, or -1 when the segment does not wrap, then the two 3D tangent points).
    For a cylinder the arc is lifted into a helix: the tangent points' heights are
    interpolated along the unrolled path and the length includes the rise.
    """
    # both ends in the geom's frame
    p0 = _to_local(x0, center, rot)
    p1 = _to_local(x1, center, rot)
    n0 = math.sqrt(p0[0] * p0[0] + p0[1] * p0[1] + p0[2] * p0[2])
    n1 = math.sqrt(p1[0] * p1[0] + p1[1] * p1[1] + p1[2] * p1[2])
    if n0 < MINVAL or n1 < MINVAL:
        return -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    # 2D frame (u, w) of the wrapping plane
    if wraptype == WRAP_SPHERE:
        ux, uy, uz, _ = _normalize3(p0[0], p0[1], p0[2])
        nx = p0[1] * p1[2] - p0[2] * p1[1]
        ny = p0[2] * p1[0] - p0[0] * p1[2]
        nz = p0[0] * p1[1] - p0[1] * p1[0]
        nx, ny, nz, nrm = _normalize3(nx, ny, nz)
        if nrm < MINVAL:
            # ends on one line through the centre: any plane containing it will do
            i = 0
            if abs(uy) > abs(ux) and abs(uy) > abs(uz):
                i = 1
            if abs(uz) > abs(ux) and abs(uz) > abs(uy):
                i = 2
            ax = 0.0 if i == 0 else 1.0
            ay = 0.0 if i == 1 else 1.0
            az = 0.0 if i == 2 else 1.0
            nx, ny, nz, _ = _normalize3(uy * az - uz * ay, uz * ax - ux * az, ux * ay - uy * ax)
        wx, wy, wz, _ = _normalize3(ny * uz - nz * uy, nz * ux - nx * uz, nx * uy - ny * ux)
    else:
        ux, uy, uz = 1.0, 0.0, 0.0
        wx, wy, wz = 0.0, 1.0, 0.0
    d0x = p0[0] * ux + p0[1] * uy + p0[2] * uz
    d0y = p0[0] * wx + p0[1] * wy + p0[2] * wz
    d1x = p1[0] * ux + p1[1] * uy + p1[2] * uz
    d1y = p1[0] * wx + p1[1] * wy + p1[2] * wz
    if has_side:
        s = _to_local(side, center, rot)
        sx = s[0] * ux + s[1] * uy + s[2] * uz
        sy = s[0] * wx + s[1] * wy + s[2] * wz
        sx, sy, _ = _normalize2(sx, sy)
        sx *= radius
        sy *= radius
        inside = math.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) < radius
    else:
        sx = sy = 0.0
        inside = False
    if inside:
        wlen, q0x, q0y, q1x, q1y = _wrap_inside(d0x, d0y, d1x, d1y, radius)
    else:
        wlen, q0x, q0y, q1x, q1y = _wrap_circle(d0x, d0y, d1x, d1y, has_side, sx, sy, radius)
    if wlen < 0.0:
        return -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    # back to 3D in the geom frame
    r0x = ux * q0x + wx * q0y
    r0y = uy * q0x + wy * q0y
    r0z = uz * q0x + wz * q0y
    r1x = ux * q1x + wx * q1y
    r1y = uy * q1x + wy * q1y
    r1z = uz * q1x + wz * q1y
    if wraptype == WRAP_CYLINDER:
        # heights: linear in the distance along the unrolled path
        len0 = math.sqrt((p0[0] - r0x) ** 2 + (p0[1] - r0y) ** 2)
        len1 = math.sqrt((p1[0] - r1x) ** 2 + (p1[1] - r1y) ** 2)
        total = len0 + wlen + len1
        r0z = p0[2] + (p1[2] - p0[2]) * len0 / total
        r1z = p0[2] + (p1[2] - p0[2]) * (len0 + wlen) / total
        height = abs(r1z - r0z)
        wlen = math.sqrt(wlen * wlen + height * height)
    # to the world frame
    return (wlen,
            rot[0, 0] * r0x + rot[0, 1] * r0y + rot[0, 2] * r0z + center[0],
            rot[1, 0] * r0x + rot[1, 1] * r0y + rot[1, 2] * r0z + center[1],
            rot[2, 0] * r0x + rot[2, 1] * r0y + rot[2, 2] * r0z + center[2],
            rot[0, 0] * r1x + rot[0, 1] * r1y + rot[0, 2] * r1z + center[0],
            rot[1, 0] * r1x + rot[1, 1] * r1y + rot[1, 2] * r1z + center[1],
            rot[2, 0] * r1x + rot[2, 1] * r1y + rot[2, 2] * r1z + center[2])


@kernel
def _to_local(x, center, rot):
    """rot^T (x - center) as a tuple."""
    dx = x[0] - center[0]
    dy = x[1] - center[1]
    dz = x[2] - center[2]
    return (rot[0, 0] * dx + rot[1, 0] * dy + rot[2, 0] * dz,
            rot[0, 1] * dx + rot[1, 1] * dy + rot[2, 1] * dz,
            rot[0, 2] * dx + rot[1, 2] * dy + rot[2, 2] * dz)


# Inlined into its entry, as actuation._transmission (its arrays are not passed one by one).
@kernel
def is_fixed_tendon(m, t):
    """Whether tendon t is fixed: its path is joints (a length linear in qpos, ten_J constant). The
    first wrap decides, as in mj_tendon: a fixed tendon's wraps are all joints, a spatial one's none."""
    return m.wrap_type[m.tendon_adr[t]] == WRAP_JOINT


def _has_wrap_geoms(m) -> bool:
    """``needed`` of the wrapping unit: some spatial tendon wraps around a sphere or a cylinder."""
    return bool(np.any((m.wrap_type == WRAP_SPHERE) | (m.wrap_type == WRAP_CYLINDER)))


@handle_entry(args="int64, int64, int64, int64, int64, float64[::1]", needed=_has_wrap_geoms)
def _wrap_geom_entry(m, d, s0, s1, geom, wraptype, side, out):
    """wrap_geom for the piece site s0 - geom - site s1 into out[:7] (length, then the two tangent
    points): a unit of its own, so a model whose tendons wrap around no geom compiles none of it."""
    has_side = side >= 0
    wlen, w0x, w0y, w0z, w1x, w1y, w1z = wrap_geom(
        d.site_xpos[s0], d.site_xpos[s1], d.geom_xpos[geom], d.geom_xmat[geom], m.geom_size[geom, 0],
        wraptype, d.site_xpos[side if has_side else s0], has_side)
    out[0], out[1], out[2], out[3], out[4], out[5], out[6] = wlen, w0x, w0y, w0z, w1x, w1y, w1z


@kernel
def _tendon(
    m, d,
    # model
    tendon_adr, tendon_num, wrap_type, wrap_objid, wrap_prm, jnt_qposadr, jnt_dofadr,
    site_bodyid, geom_bodyid, geom_size, body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
    # data in
    qpos, site_xpos, geom_xpos, geom_xmat, subtree_com, cdof,
    # data out
    ten_length, ten_J, ten_wrapadr, ten_wrapnum, wrap_xpos, wrap_obj,
    # scratch: Jacobians (6, 3, nv) and the points of one site-(geom)-site piece (4, 3)
    jac, wpnt,
):
    """Tendon lengths and Jacobians (mj_tendon): fixed tendons and spatial tendons.

    A spatial tendon's path is cut into pieces site -> site or site -> geom -> site. A
    piece is straight, or, when it wraps around the geom (``wrap_geom``), straight to a
    tangent point, along the geom and straight from the other tangent point. Each
    piece's length is divided by the divisor of the last pulley before it (1 before
    any); each of its straight parts whose ends move with different bodies adds
    ``u^T (J_end - J_start) / divisor`` to ``ten_J``, ``u`` the unit vector along it (the
    arc adds nothing: both tangent points ride on the geom's body). The path points go
    to ``wrap_xpos`` / ``wrap_obj`` as in MuJoCo: -1 for a site, the geom id for a tangent
    point, -2 (at the origin) for a pulley.
    """
    ntendon = tendon_adr.shape[0]
    nv = ten_J.shape[1]
    wrapcount = 0
    for i in range(ntendon):
        ten_length[i] = 0.0
        ten_J[i, :] = 0.0
        ten_wrapadr[i] = wrapcount
        ten_wrapnum[i] = 0
        adr = tendon_adr[i]
        num = tendon_num[i]
        if wrap_type[adr] == WRAP_JOINT:
            for k in range(adr, adr + num):
                j = wrap_objid[k]
                coef = wrap_prm[k]
                # length is linear in the joint positions; the Jacobian holds the coefficients
                ten_length[i] += coef * qpos[jnt_qposadr[j]]
                ten_J[i, jnt_dofadr[j]] += coef
            continue
        divisor = 1.0
        j = 0
        while j < num - 1:
            type0 = wrap_type[adr + j]
            type1 = wrap_type[adr + j + 1]
            if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                if type0 == WRAP_PULLEY:
                    divisor = wrap_prm[adr + j]
                    _set_wrap_point(wrap_xpos, wrap_obj, wrapcount, 0.0, 0.0, 0.0, -2)
                    ten_wrapnum[i] += 1
                    wrapcount += 1
                j += 1
                continue
            s0 = wrap_objid[adr + j]
            s1 = wrap_objid[adr + j + 1]
            wlen = -1.0
            geom = -1
            wrapped = type1 == WRAP_SPHERE or type1 == WRAP_CYLINDER
            if wrapped:
                # site - geom - site: the second site is two steps ahead
                geom = s1
                s1 = wrap_objid[adr + j + 2]
                side = int(round(wrap_prm[adr + j + 1]))
                wrapped_out = d.scratch_wrap_out
                _wrap_geom_entry(m, d, s0, s1, geom, type1, side, wrapped_out)
                wlen, w0x, w0y, w0z = wrapped_out[0], wrapped_out[1], wrapped_out[2], wrapped_out[3]
                w1x, w1y, w1z = wrapped_out[4], wrapped_out[5], wrapped_out[6]
            for c in range(3):
                wpnt[0, c] = site_xpos[s0, c]
            if wlen < 0.0:
                for c in range(3):
                    wpnt[1, c] = site_xpos[s1, c]
                npnt = 2
            else:
                wpnt[1, 0], wpnt[1, 1], wpnt[1, 2] = w0x, w0y, w0z
                wpnt[2, 0], wpnt[2, 1], wpnt[2, 2] = w1x, w1y, w1z
                for c in range(3):
                    wpnt[3, c] = site_xpos[s1, c]
                npnt = 4
            # length: the straight parts, plus the path on the geom
            piece = wlen if wlen > 0.0 else 0.0
            for k in range(npnt - 1):
                if k != 1 or npnt == 2:
                    piece += _dist(wpnt, k)
            ten_length[i] += piece / divisor
            # Jacobian of each straight part whose ends are on different bodies
            geom_body = geom_bodyid[geom] if wrapped else -1
            for k in range(npnt - 1):
                b0 = _point_body(k, npnt, site_bodyid[s0], site_bodyid[s1], geom_body)
                b1 = _point_body(k + 1, npnt, site_bodyid[s0], site_bodyid[s1], geom_body)
                if b0 == b1:
                    continue
                ux, uy, uz, _ = _normalize3(wpnt[k + 1, 0] - wpnt[k, 0], wpnt[k + 1, 1] - wpnt[k, 1],
                                            wpnt[k + 1, 2] - wpnt[k, 2])
                jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com,
                           cdof, wpnt[k, 0], wpnt[k, 1], wpnt[k, 2], b0, jac[0], jac[1])
                jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com,
                           cdof, wpnt[k + 1, 0], wpnt[k + 1, 1], wpnt[k + 1, 2], b1, jac[2], jac[3])
                inv = 1.0 / divisor
                for v in range(nv):
                    t = (jac[2, 0, v] - jac[0, 0, v]) * ux + (jac[2, 1, v] - jac[0, 1, v]) * uy \
                        + (jac[2, 2, v] - jac[0, 2, v]) * uz
                    ten_J[i, v] += t * inv
            # path points: the start site, and the two tangent points (marked with the geom)
            for k in range(npnt - 1):
                _set_wrap_point(wrap_xpos, wrap_obj, wrapcount + k, wpnt[k, 0], wpnt[k, 1], wpnt[k, 2],
                                -1 if k == 0 else geom)
            ten_wrapnum[i] += npnt - 1
            wrapcount += npnt - 1
            j += 2 if wrapped else 1
            # the last site before a pulley or the end of the path
            if j == num - 1 or wrap_type[adr + j + 1] == WRAP_PULLEY:
                _set_wrap_point(wrap_xpos, wrap_obj, wrapcount, site_xpos[s1, 0], site_xpos[s1, 1],
                                site_xpos[s1, 2], -1)
                ten_wrapnum[i] += 1
                wrapcount += 1


@kernel
def _dist(wpnt, k):
    """Distance between path points k and k + 1 of one piece."""
    dx = wpnt[k + 1, 0] - wpnt[k, 0]
    dy = wpnt[k + 1, 1] - wpnt[k, 1]
    dz = wpnt[k + 1, 2] - wpnt[k, 2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@kernel
def _point_body(k, npnt, body0, body1, geom_body):
    """Body carrying point k of a piece: the sites at the ends, the geom's body in between."""
    if k == 0:
        return body0
    if k == npnt - 1:
        return body1
    return geom_body


@kernel
def _set_wrap_point(wrap_xpos, wrap_obj, n, x, y, z, obj):
    """Path point n (MuJoCo's flat wrap_xpos / wrap_obj index; two points per row)."""
    row = n >> 1
    col = n & 1
    wrap_xpos[row, col, 0] = x
    wrap_xpos[row, col, 1] = y
    wrap_xpos[row, col, 2] = z
    wrap_obj[row, col] = obj


@kernel
def ten_velocity_kernel(ten_J, qvel, ten_velocity):
    """ten_velocity = ten_J qvel (mj_fwdVelocity), over the non-zeros in dof order."""
    for i in range(ten_J.shape[0]):
        acc = 0.0
        for v in range(qvel.shape[0]):
            jv = ten_J[i, v]
            if jv != 0.0:
                acc += jv * qvel[v]
        ten_velocity[i] = acc


@kernel(inline="always")
def tendon_passive_kernel(tendon_stiffness, tendon_stiffnesspoly, tendon_lengthspring, tendon_plasticadr,
                          plastic, tendon_damping,
                          tendon_dampingpoly, tendon_actuatorid, actuator_damping, actuator_dampingpoly,
                          actuator_gear, actuator_trnid, actuator_trntype, disableflags, ten_length,
                          ten_velocity, ten_J, qfrc_spring, qfrc_damper):
    """Tendon spring-dampers mapped to joint space (the tendon loop of mj_springdamper): the
    spring force -x k(x) beyond the lengthspring deadband and the damper force -v k(v), with
    polynomial k (util_poly) and the damping of the actuators on the tendon added. Arrays as
    arguments (read from the handles, each would be reloaded after every force written), inlined
    into the entry (as a call, its 17 arrays would be passed field by field even without tendons)."""
    enbl_spring = not disableflags & DSBL_SPRING
    enbl_damper = not disableflags & DSBL_DAMPER
    nv = ten_J.shape[1]
    for i in range(ten_J.shape[0]):
        stiffness, s0, s1 = 0.0, 0.0, 0.0
        if enbl_spring:
            stiffness = tendon_stiffness[i]
            s0, s1 = tendon_stiffnesspoly[i, 0], tendon_stiffnesspoly[i, 1]
        damping, d0, d1 = 0.0, 0.0, 0.0
        if enbl_damper:
            damping, d0, d1 = tendon_damping_coefs(i, tendon_actuatorid, tendon_damping, tendon_dampingpoly,
                                                   actuator_damping, actuator_dampingpoly, actuator_gear,
                                                   actuator_trnid, actuator_trntype)
        if stiffness == 0.0 and s0 == 0.0 and s1 == 0.0 and damping == 0.0 and d0 == 0.0 and d1 == 0.0:
            continue
        # spring: deadband between lengthspring[0] and lengthspring[1] (moved by plasticity)
        length = ten_length[i]
        lower, upper = tendon_deadband(tendon_plasticadr, plastic, tendon_lengthspring, i)
        if length > upper:
            x = length - upper
        elif length < lower:
            x = length - lower
        else:
            x = 0.0
        frc_spring = -x * poly_force(stiffness, s0, s1, x, False) if enbl_spring else 0.0
        vel = ten_velocity[i]
        frc_damper = -vel * poly_force(damping, d0, d1, vel, True) if enbl_damper else 0.0
        # qfrc += ten_J^T frc, over the non-zeros of the tendon's row
        if frc_spring != 0.0 or frc_damper != 0.0:
            for v in range(nv):
                jv = ten_J[i, v]
                if jv != 0.0:
                    qfrc_spring[v] += jv * frc_spring
                    qfrc_damper[v] += jv * frc_damper


@handle_entry
def tendon_entry(m, d):
    _tendon(m, d, m.tendon_adr, m.tendon_num, m.wrap_type, m.wrap_objid, m.wrap_prm, m.jnt_qposadr,
            m.jnt_dofadr, m.site_bodyid, m.geom_bodyid, m.geom_size, m.body_rootid, m.body_dofnum,
            m.body_dofadr, m.body_parentid, m.dof_parentid, d.qpos, d.site_xpos, d.geom_xpos, d.geom_xmat,
            d.subtree_com, d.cdof, d.ten_length, d.ten_J, d.ten_wrapadr, d.ten_wrapnum, d.wrap_xpos,
            d.wrap_obj, d.scratch_jac, d.scratch_wrap)


@handle_entry
def ten_velocity_entry(m, d):
    ten_velocity_kernel(d.ten_J, d.qvel, d.ten_velocity)


@handle_entry
def tendon_passive_entry(m, d):
    tendon_passive_kernel(m.tendon_stiffness, m.tendon_stiffnesspoly, m.tendon_lengthspring,
                          m.tendon_plasticadr, d.plastic, m.tendon_damping, m.tendon_dampingpoly,
                          m.tendon_actuatorid, m.actuator_damping, m.actuator_dampingpoly, m.actuator_gear,
                          m.actuator_trnid, m.actuator_trntype, m.opt_flags[OPT_DISABLEFLAGS], d.ten_length,
                          d.ten_velocity, d.ten_J, d.qfrc_spring, d.qfrc_damper)


_TENDON = FastEntry(tendon_entry)


def tendon(m, d) -> None:
    """Tendon lengths and Jacobians.

    Reads: qpos (site_xpos, geom_xpos, geom_xmat, cdof). Writes: ten_length, ten_J, ten_wrapadr,
    ten_wrapnum, wrap_xpos, wrap_obj. Mirrors mj_tendon.
    """
    check_model_data(m, d, "tendon")
    _TENDON.call(m._ptr, d._ptr)
