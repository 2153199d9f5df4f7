"""Derivatives of a contact's geometry and rows in qpos, the colliding features held (issue 25: the
contact part of the constraint force's position derivative, derivative_constraint's G_q).

A contact's rows are F (Jp(b2, p) - Jp(b1, p)) (and F (Jr(b2) - Jr(b1)) for condim 4 and 6), p the
contact position, F the frame (rows: normal, tangents from mju_makeFrame), b1, b2 the bodies of the
contact's geoms; its distance enters the rows' position and impedance. Along dof k of MuJoCo's
tangent space (mj_integratePos) each geom moves rigidly with its body, and the collider's features
(which capsule end, which box corner, whether a sphere meets a capsule's side or its end) are held,
so p, F and the distance are smooth functions of the two geoms' poses. This module differentiates:

* the geometry, collider by collider, written from MuJoCo's formulas (engine_collision_primitive.c,
  mirrored in collision_primitive): a point (a sphere's centre, a capsule's end, a box corner)
  against a plane (mjc_PlaneSphere, mjc_PlaneCapsule, mjc_PlaneBox), and two sphere centres
  (mjc_SphereSphere, mjc_SphereCapsule: the capsule's point nearest the sphere, sliding along its
  axis or held at an end); the frame by the same Gram-Schmidt step as mju_makeFrame, from the
  normal and the collider's tangent hint (the capsule's axis for plane-capsule, else the fixed
  axis mju_makeFrame picks); box against box (mjc_BoxBox, mirrored in collision_box): the
  collider's axis choice re-run (box_box_axis), then a face contact's clipped vertex held by three
  features (an incident corner; an incident edge on a reference side line; a reference corner
  sliding in the incident face) or an edge-edge contact's two held edges (the lines' closest
  points); a cylinder's rim points against a plane (mjc_PlaneCylinder: they turn with the plane's
  normal too) and a sphere against a cylinder's side, cap or rim (mjc_SphereCylinder); a sphere
  against a box (mjc_SphereBox: the box's nearest point, its clamped coordinates held - a face, an
  edge or a corner - the others sliding with the centre; a centre inside pushed out through the
  collider's face), and mjc_CapsuleBox's spheres at an end of the capsule's segment;
* the point Jacobians: with S_i the motion of dof i, a point Jacobian's column i at a point p
  held in space changes along dof k by w_k x Jp_i - w_i x Jp_k when k moves i's axis (k an
  ancestor of i in the dof tree, or both in one ball joint or one free joint's rotation: the
  motion S_k x S_i of derivative_rne), and by w_i x dp/dq_k as p moves; the rotational column by
  w_k x w_i.

A contact is covered when its collider is one of these, the stored position and normal are
reproduced from the geoms (so the features found are the collider's), and it has no adhesion
(whose reference term scales with R); a mesh against a plane is covered (its contacts sit at held
hull vertices, as a box's corners). Other contacts (meshes against other geoms, convex colliders, height
fields, flex, box pairs at a feature switch, a cylinder's cap nearly parallel to a plane, capsule-box
contacts inside the capsule's segment, a sphere centre on a box region's boundary) are left
to derivative_constraint's difference, row by row.

Only the dofs that move one of the two bodies matter: every quantity is kept on that chain, ``nc``
columns listed in ``idx`` (dof numbers), in the rows of a scratch array ``gb`` (``_NG`` rows of width
>= nc * nc, see ``chain_capacity``).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.collision_box import box_box_axis, box_box_centres
from kinedyn.engine.collision_primitive import sphere_cylinder_region
from kinedyn.engine.derivative_rne import dof_groups
from kinedyn.engine.types import (
    GEOM_BOX,
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_MESH,
    GEOM_PLANE,
    GEOM_SPHERE,
    MAXVAL,
    MINVAL,
    WRAP_PULLEY,
    WRAP_SITE,
)

# rows of gb
_GV = 0  # 12 rows: each geom's (s = 0, 1) velocity at its centre (3) and angular velocity (3)
DP = 12  # 3 rows: d contact_pos / dq
DF = 15  # 9 rows: d frame[r, x] / dq at row DF + 3 r + x
DDIST = 24  # d dist / dq
_JB = 25  # 12 rows: each body's point Jacobian at p (3) and rotational Jacobian (3), compressed
_DJ = 37  # 6 rows (nc * nc): d (Jp(b2) - Jp(b1)) [x, a] / dq_kk at a * nc + kk, then the rotational
TC = 43  # 6 rows (nc * nc): d Jc_r[a] / dq_kk of the frame rows r (n, t1, t2, spin, roll1, roll2)
TQ = 49  # 3 rows (nc * nc): d J_r[a] / dq_kk of a connect's rows (Jp(b1, p1) - Jp(b2, p2))
JDV = 52  # 3 rows (nc): d (J̇ qvel)_r / dq_kk of a connect's rows
WD = 55  # 3 rows (nc * nc): d (Jr(b1) - Jr(b2))[a] / dq_kk (a weld's)
JDVR = 58  # 3 rows (nc): d (J̇r(b1) qvel - J̇r(b2) qvel) / dq_kk
DOM = 61  # 6 rows (nc): d w_s / dq_kk, w_s = Jr(b_s) qvel the angular velocity of body s = 0, 1
TT = 67  # nc * nc: d ten_J[idx[a]] / dq_kk of a spatial tendon
_ANC = 68  # nc * nc: 1 where dof idx[kk] moves dof idx[a]'s axis (_moves_axis), at a * nc + kk
NG = 69

# how much the stored contact may differ from the one rebuilt here before the features are deemed
# different (a relative tolerance on positions, an absolute one on the unit normal)
_MATCH = 1e-9


@kernel
def _c3(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel
def _body_with_dofs(m, b):
    while b > 0 and m.body_dofnum[b] == 0:
        b = m.body_parentid[b]
    return b


@kernel
def chain_dofs(m, b, idx, nc):
    """Add the dofs that move body b (its dof ancestor chain) to idx[:nc]; the new count."""
    b = _body_with_dofs(m, b)
    if b == 0:
        return nc
    v = m.body_dofadr[b] + m.body_dofnum[b] - 1
    while v >= 0:
        found = False
        for a in range(nc):
            if idx[a] == v:
                found = True
        if not found:
            idx[nc] = v
            nc += 1
        v = m.dof_parentid[v]
    return nc


def _chain_set(m, b) -> set:
    out = set()
    while b > 0:
        out.update(range(int(m.body_dofadr[b]), int(m.body_dofadr[b] + m.body_dofnum[b])))
        b = int(m.body_parentid[b])
    return out


def chain_capacity(m) -> int:
    """The most columns a chain can have: twice the longest dof chain of a body (a contact, a
    connect or weld), or the dofs moving the sites of a spatial tendon."""
    longest = max((len(_chain_set(m, b)) for b in range(m.nbody)), default=0)
    cap = 2 * longest
    for t in range(m.ntendon):
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        dofs = set()
        for k in range(adr, adr + num):
            if int(m.wrap_type[k]) == WRAP_SITE:
                dofs |= _chain_set(m, int(m.site_bodyid[m.wrap_objid[k]]))
        cap = max(cap, len(dofs))
    return max(cap, 1)


@kernel
def _reaches(m, u, v):
    """Whether dof v is u or one of its ancestors in the dof tree (u < 0: none)."""
    while u >= 0:
        if u == v:
            return True
        u = m.dof_parentid[u]
    return False


@kernel
def _in_chain(m, b, v):
    """Whether dof v moves body b."""
    b = _body_with_dofs(m, b)
    return b > 0 and _reaches(m, m.body_dofadr[b] + m.body_dofnum[b] - 1, v)


@kernel
def _moves_axis_of(m, k, fk, nk, rk, i):
    """_moves_axis with k's group (fk, nk, rk: dof_groups of k) already looked up."""
    return i != k and ((rk and fk <= i < fk + nk) or _reaches(m, m.dof_parentid[i], k))


@kernel
def _moves_axis(m, k, i):
    """Whether perturbing dof k moves dof i's axis: k a proper ancestor of i in the dof tree, or
    both in one rotational group (a ball, a free joint's rotations: body-frame axes)."""
    fk, nk, rk = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, k)
    return _moves_axis_of(m, k, fk, nk, rk, i)


@kernel
def _fill_moves(m, idx, nc, gb):
    """gb[_ANC]: the _moves_axis table of the chain, read by the loops below (each dof's group
    looked up once, not once per pair)."""
    for k in range(nc):
        dk = idx[k]
        fk, nk, rk = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, dk)
        for a in range(nc):
            gb[_ANC, a * nc + k] = 1.0 if _moves_axis_of(m, dk, fk, nk, rk, idx[a]) else 0.0


@kernel
def _body_columns(m, d, b, px, py, pz, idx, nc, gb, row):
    """gb[row:row+3, a] = Jp(b, p) column idx[a], gb[row+3:row+6, a] = Jr(b) column (mj_jac)."""
    r = m.body_rootid[b]
    ox, oy, oz = px - d.subtree_com[r, 0], py - d.subtree_com[r, 1], pz - d.subtree_com[r, 2]
    for a in range(nc):
        v = idx[a]
        if _in_chain(m, b, v):
            wx, wy, wz = d.cdof[v, 0], d.cdof[v, 1], d.cdof[v, 2]
            cx, cy, cz = _c3(wx, wy, wz, ox, oy, oz)
            gb[row, a] = d.cdof[v, 3] + cx
            gb[row + 1, a] = d.cdof[v, 4] + cy
            gb[row + 2, a] = d.cdof[v, 5] + cz
            gb[row + 3, a] = wx
            gb[row + 4, a] = wy
            gb[row + 5, a] = wz
        else:
            for x in range(6):
                gb[row + x, a] = 0.0


@kernel
def _point_vel(d, gb, s, g, cx, cy, cz, a):
    """Velocity along column a of the point c held to geom g (side s: gb's rows for it)."""
    r = _GV + 6 * s
    wx, wy, wz = gb[r + 3, a], gb[r + 4, a], gb[r + 5, a]
    ex, ey, ez = _c3(wx, wy, wz, cx - d.geom_xpos[g, 0], cy - d.geom_xpos[g, 1], cz - d.geom_xpos[g, 2])
    return gb[r, a] + ex, gb[r + 1, a] + ey, gb[r + 2, a] + ez


@kernel
def _ang_vel(gb, s, a):
    r = _GV + 6 * s + 3
    return gb[r, a], gb[r + 1, a], gb[r + 2, a]


@kernel
def _frame(d, c, nc, gb, nx, ny, nz, hx, hy, hz, hint, s_hint):
    """The frame's derivative (rows DF) from the normal's (rows DF..DF+3, filled by the caller), as
    mju_makeFrame builds it: t1 = the hint less its normal part, normalised (the hint is the axis of
    geom side s_hint when ``hint``, else the fixed axis makeFrame picks), t2 = n x t1. Returns
    whether the rebuilt frame is the stored one."""
    if not hint:
        hx, hy, hz = 0.0, 0.0, 0.0
        if -0.5 < ny < 0.5:
            hy = 1.0
        else:
            hz = 1.0
    nh = nx * hx + ny * hy + nz * hz
    ux, uy, uz = hx - nh * nx, hy - nh * ny, hz - nh * nz
    lu = math.sqrt(ux * ux + uy * uy + uz * uz)
    if lu < 1e-6:
        return False
    t1x, t1y, t1z = ux / lu, uy / lu, uz / lu
    t2x, t2y, t2z = _c3(nx, ny, nz, t1x, t1y, t1z)
    fr = d.contact_frame[c]
    if (abs(fr[1, 0] - t1x) + abs(fr[1, 1] - t1y) + abs(fr[1, 2] - t1z) > 1e3 * _MATCH
            or abs(fr[2, 0] - t2x) + abs(fr[2, 1] - t2y) + abs(fr[2, 2] - t2z) > 1e3 * _MATCH):
        return False
    for a in range(nc):
        dnx, dny, dnz = gb[DF, a], gb[DF + 1, a], gb[DF + 2, a]
        dhx, dhy, dhz = 0.0, 0.0, 0.0
        if hint:
            wx, wy, wz = _ang_vel(gb, s_hint, a)
            dhx, dhy, dhz = _c3(wx, wy, wz, hx, hy, hz)
        dnh = dnx * hx + dny * hy + dnz * hz + nx * dhx + ny * dhy + nz * dhz
        dux = dhx - dnh * nx - nh * dnx
        duy = dhy - dnh * ny - nh * dny
        duz = dhz - dnh * nz - nh * dnz
        tu = t1x * dux + t1y * duy + t1z * duz
        d1x, d1y, d1z = (dux - t1x * tu) / lu, (duy - t1y * tu) / lu, (duz - t1z * tu) / lu
        ax, ay, az = _c3(dnx, dny, dnz, t1x, t1y, t1z)
        bx, by, bz = _c3(nx, ny, nz, d1x, d1y, d1z)
        gb[DF + 3, a], gb[DF + 4, a], gb[DF + 5, a] = d1x, d1y, d1z
        gb[DF + 6, a], gb[DF + 7, a], gb[DF + 8, a] = ax + bx, ay + by, az + bz
    return True


@kernel
def _matches(d, c, px, py, pz, dist, nx, ny, nz):
    """Whether the contact rebuilt here is contact c as stored (position, distance, normal)."""
    scale = 1.0 + abs(px) + abs(py) + abs(pz)
    fr = d.contact_frame[c]
    return (abs(d.contact_pos[c, 0] - px) + abs(d.contact_pos[c, 1] - py) + abs(d.contact_pos[c, 2] - pz)
            <= _MATCH * scale and abs(d.contact_dist[c] - dist) <= _MATCH * scale
            and abs(fr[0, 0] - nx) + abs(fr[0, 1] - ny) + abs(fr[0, 2] - nz) <= 1e3 * _MATCH)


@kernel
def _point_plane(m, d, c, nc, gb, g1, g2, cx, cy, cz, radius, hint, moving):
    """Geom g2's point c (a sphere's centre, radius; a capsule's end; a box corner, radius 0)
    against plane g1 (mjraw_PlaneSphere): dist = n.(c - o) - radius, pos = c + n (-dist/2 - radius).
    The point is held to g2, or when ``moving`` its velocity is read from DP (filled by the
    caller). Fills DP, DF, DDIST; whether the stored contact is this one."""
    nx, ny, nz = d.geom_xmat[g1, 0, 2], d.geom_xmat[g1, 1, 2], d.geom_xmat[g1, 2, 2]
    ox, oy, oz = d.geom_xpos[g1, 0], d.geom_xpos[g1, 1], d.geom_xpos[g1, 2]
    dist = (cx - ox) * nx + (cy - oy) * ny + (cz - oz) * nz - radius
    s = -dist / 2 - radius
    if not _matches(d, c, cx + nx * s, cy + ny * s, cz + nz * s, dist, nx, ny, nz):
        return False
    for a in range(nc):
        wx, wy, wz = _ang_vel(gb, 0, a)
        dnx, dny, dnz = _c3(wx, wy, wz, nx, ny, nz)
        if moving:
            vx, vy, vz = gb[DP, a], gb[DP + 1, a], gb[DP + 2, a]
        else:
            vx, vy, vz = _point_vel(d, gb, 1, g2, cx, cy, cz, a)
        r = _GV
        dd = (dnx * (cx - ox) + dny * (cy - oy) + dnz * (cz - oz)
              + nx * (vx - gb[r, a]) + ny * (vy - gb[r + 1, a]) + nz * (vz - gb[r + 2, a]))
        gb[DDIST, a] = dd
        gb[DP, a] = vx + dnx * s - nx * dd / 2
        gb[DP + 1, a] = vy + dny * s - ny * dd / 2
        gb[DP + 2, a] = vz + dnz * s - nz * dd / 2
        gb[DF, a], gb[DF + 1, a], gb[DF + 2, a] = dnx, dny, dnz
    ax, ay, az = d.geom_xmat[g2, 0, 2], d.geom_xmat[g2, 1, 2], d.geom_xmat[g2, 2, 2]
    return _frame(d, c, nc, gb, nx, ny, nz, ax, ay, az, hint, 1)


@kernel
def _held_point_plane(m, d, c, nc, gb, g1, g2, lx, ly, lz):
    """_point_plane for the point at (lx, ly, lz) in geom g2's frame, held to g2 (a box corner, a
    mesh vertex: radius 0)."""
    xm, xp = d.geom_xmat, d.geom_xpos
    cx = xm[g2, 0, 0] * lx + xm[g2, 0, 1] * ly + xm[g2, 0, 2] * lz + xp[g2, 0]
    cy = xm[g2, 1, 0] * lx + xm[g2, 1, 1] * ly + xm[g2, 1, 2] * lz + xp[g2, 1]
    cz = xm[g2, 2, 0] * lx + xm[g2, 2, 1] * ly + xm[g2, 2, 2] * lz + xp[g2, 2]
    return _point_plane(m, d, c, nc, gb, g1, g2, cx, cy, cz, 0.0, False, False)


@kernel
def _axis_point(d, g, capsule, half, px, py, pz):
    """(x, interior, c): the point c of geom g that one of its spheres is centred at, nearest p: a
    sphere's centre (x = 0), or the capsule's axis point g + x u, x clamped to [-half, half]
    (interior when strictly inside: the point slides along the axis; else an end is held)."""
    gx, gy, gz = d.geom_xpos[g, 0], d.geom_xpos[g, 1], d.geom_xpos[g, 2]
    if not capsule:
        return 0.0, False, gx, gy, gz
    ux, uy, uz = d.geom_xmat[g, 0, 2], d.geom_xmat[g, 1, 2], d.geom_xmat[g, 2, 2]
    x = min(max(ux * (px - gx) + uy * (py - gy) + uz * (pz - gz), -half), half)
    return x, abs(x) < half * (1 - 1e-9), gx + ux * x, gy + uy * x, gz + uz * x


@kernel
def _slide_vel(d, gb, s, g, x, qx, qy, qz, dqx, dqy, dqz, a):
    """Velocity of the point g + x u of capsule g's axis u nearest the point q moving at dq:
    dg + dx u + x du, dx = du.(q - g) + u.(dq - dg)."""
    gx, gy, gz = d.geom_xpos[g, 0], d.geom_xpos[g, 1], d.geom_xpos[g, 2]
    ux, uy, uz = d.geom_xmat[g, 0, 2], d.geom_xmat[g, 1, 2], d.geom_xmat[g, 2, 2]
    r = _GV + 6 * s
    dgx, dgy, dgz = gb[r, a], gb[r + 1, a], gb[r + 2, a]
    wx, wy, wz = _ang_vel(gb, s, a)
    dux, duy, duz = _c3(wx, wy, wz, ux, uy, uz)
    dx = (dux * (qx - gx) + duy * (qy - gy) + duz * (qz - gz)
          + ux * (dqx - dgx) + uy * (dqy - dgy) + uz * (dqz - dgz))
    return dgx + dx * ux + x * dux, dgy + dx * uy + x * duy, dgz + dx * uz + x * duz


@kernel
def _two_spheres(m, d, c, nc, gb, g1, g2, cap1, cap2):
    """Spheres at c1 of geom g1 and c2 of g2 (mjraw_SphereSphere: n = (c2 - c1)/L, dist = L - r1 -
    r2, pos = c1 + n (r1 + dist/2)), each a sphere's centre or a point of a capsule's axis
    (mjc_SphereCapsule, mjc_CapsuleCapsule), the points read back from the stored contact: an
    axis point strictly inside its segment slides (the nearest point to the other, or for two
    capsules the lines' closest pair), an end is held. Fills DP, DF, DDIST; whether the stored
    contact is this one."""
    r1 = m.geom_size[g1, 0]
    r2 = m.geom_size[g2, 0]
    half1 = m.geom_size[g1, 1] if cap1 else 0.0
    half2 = m.geom_size[g2, 1] if cap2 else 0.0
    fr = d.contact_frame[c]
    h = r1 + d.contact_dist[c] / 2
    q1x, q1y, q1z = d.contact_pos[c, 0] - fr[0, 0] * h, d.contact_pos[c, 1] - fr[0, 1] * h, \
        d.contact_pos[c, 2] - fr[0, 2] * h
    ll = d.contact_dist[c] + r1 + r2
    q2x, q2y, q2z = q1x + fr[0, 0] * ll, q1y + fr[0, 1] * ll, q1z + fr[0, 2] * ll
    x1, in1, c1x, c1y, c1z = _axis_point(d, g1, cap1, half1, q1x, q1y, q1z)
    x2, in2, c2x, c2y, c2z = _axis_point(d, g2, cap2, half2, q2x, q2y, q2z)
    vx, vy, vz = c2x - c1x, c2y - c1y, c2z - c1z
    L = math.sqrt(vx * vx + vy * vy + vz * vz)
    if L < 1e-9:
        return False
    nx, ny, nz = vx / L, vy / L, vz / L
    dist = L - r1 - r2
    s = r1 + dist / 2
    if not _matches(d, c, c1x + nx * s, c1y + ny * s, c1z + nz * s, dist, nx, ny, nz):
        return False
    u1x, u1y, u1z = d.geom_xmat[g1, 0, 2], d.geom_xmat[g1, 1, 2], d.geom_xmat[g1, 2, 2]
    u2x, u2y, u2z = d.geom_xmat[g2, 0, 2], d.geom_xmat[g2, 1, 2], d.geom_xmat[g2, 2, 2]
    bb = u1x * u2x + u1y * u2y + u1z * u2z
    if in1 and in2 and 1 - bb * bb < 1e-6:
        return False  # nearly parallel axes: the collider's parallel branch, not covered
    for a in range(nc):
        if in1 and in2:
            # w = c2 - c1 normal to both axes: solve for dx1, dx2
            dg1x, dg1y, dg1z = gb[_GV, a], gb[_GV + 1, a], gb[_GV + 2, a]
            dg2x, dg2y, dg2z = gb[_GV + 6, a], gb[_GV + 7, a], gb[_GV + 8, a]
            w1x, w1y, w1z = _ang_vel(gb, 0, a)
            w2x, w2y, w2z = _ang_vel(gb, 1, a)
            du1x, du1y, du1z = _c3(w1x, w1y, w1z, u1x, u1y, u1z)
            du2x, du2y, du2z = _c3(w2x, w2y, w2z, u2x, u2y, u2z)
            ex = dg2x - dg1x + x2 * du2x - x1 * du1x
            ey = dg2y - dg1y + x2 * du2y - x1 * du1y
            ez = dg2z - dg1z + x2 * du2z - x1 * du1z
            rr1 = ex * u1x + ey * u1y + ez * u1z + vx * du1x + vy * du1y + vz * du1z
            rr2 = ex * u2x + ey * u2y + ez * u2z + vx * du2x + vy * du2y + vz * du2z
            dx2 = (bb * rr1 - rr2) / (1 - bb * bb)
            dx1 = rr1 + bb * dx2
            p1x = dg1x + dx1 * u1x + x1 * du1x
            p1y = dg1y + dx1 * u1y + x1 * du1y
            p1z = dg1z + dx1 * u1z + x1 * du1z
            p2x = dg2x + dx2 * u2x + x2 * du2x
            p2y = dg2y + dx2 * u2y + x2 * du2y
            p2z = dg2z + dx2 * u2z + x2 * du2z
        elif in1:
            p2x, p2y, p2z = _point_vel(d, gb, 1, g2, c2x, c2y, c2z, a)
            p1x, p1y, p1z = _slide_vel(d, gb, 0, g1, x1, c2x, c2y, c2z, p2x, p2y, p2z, a)
        elif in2:
            p1x, p1y, p1z = _point_vel(d, gb, 0, g1, c1x, c1y, c1z, a)
            p2x, p2y, p2z = _slide_vel(d, gb, 1, g2, x2, c1x, c1y, c1z, p1x, p1y, p1z, a)
        else:
            p1x, p1y, p1z = _point_vel(d, gb, 0, g1, c1x, c1y, c1z, a)
            p2x, p2y, p2z = _point_vel(d, gb, 1, g2, c2x, c2y, c2z, a)
        dvx, dvy, dvz = p2x - p1x, p2y - p1y, p2z - p1z
        dL = nx * dvx + ny * dvy + nz * dvz
        dnx, dny, dnz = (dvx - nx * dL) / L, (dvy - ny * dL) / L, (dvz - nz * dL) / L
        gb[DDIST, a] = dL
        gb[DP, a] = p1x + dnx * s + nx * dL / 2
        gb[DP + 1, a] = p1y + dny * s + ny * dL / 2
        gb[DP + 2, a] = p1z + dnz * s + nz * dL / 2
        gb[DF, a], gb[DF + 1, a], gb[DF + 2, a] = dnx, dny, dnz
    return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)


# a box feature is held when the point read back from the contact lies within this fraction of the
# boxes' summed half-sizes of it (the clipped vertices carry rounding of ~1e-16 of that)
_HELD = 1e-9


@kernel
def _box_local(d, g, px, py, pz):
    """World point p in geom g's frame (mat_g' (p - pos_g))."""
    x = d.geom_xmat[g]
    ox, oy, oz = px - d.geom_xpos[g, 0], py - d.geom_xpos[g, 1], pz - d.geom_xpos[g, 2]
    return (x[0, 0] * ox + x[1, 0] * oy + x[2, 0] * oz, x[0, 1] * ox + x[1, 1] * oy + x[2, 1] * oz,
            x[0, 2] * ox + x[1, 2] * oy + x[2, 2] * oz)


@kernel
def _axis(d, g, k):
    """Geom g's axis k in the world, a 3-tuple."""
    return d.geom_xmat[g, 0, k], d.geom_xmat[g, 1, k], d.geom_xmat[g, 2, k]


@kernel
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel
def _box_face(m, d, c, nc, gb, g1, g2, code, tol):
    """A face contact of mjc_BoxBox (code 0..2: face axis of g1 the reference, 3..5 of g2): a vertex
    of the incident face clipped by the reference face's sides, at height z (the distance) above
    the reference face, the contact half way down. The vertex read back from the contact is held
    to the incident box by one face coordinate and, by the clipping, either two more (its corner),
    one (an incident edge crossing a reference side line, the side held) or none (a reference
    corner: both side lines held, the point sliding in the incident face). Fills DP, DF, DDIST;
    whether the stored contact is this one with exactly three features held."""
    ref1 = code < 3
    ax = code % 3
    sr = 0 if ref1 else 1
    gr = g1 if ref1 else g2
    gi = g2 if ref1 else g1
    fr = d.contact_frame[c]
    ea = _axis(d, gr, ax)
    nsign = 1.0 if fr[0, 0] * ea[0] + fr[0, 1] * ea[1] + fr[0, 2] * ea[2] >= 0.0 else -1.0
    nx, ny, nz = nsign * ea[0], nsign * ea[1], nsign * ea[2]
    sgn = nsign if ref1 else -nsign  # the reference face's outward normal is sgn ea
    ox, oy, oz = sgn * ea[0], sgn * ea[1], sgn * ea[2]
    h = d.contact_dist[c] / 2
    px, py, pz = d.contact_pos[c, 0] + ox * h, d.contact_pos[c, 1] + oy * h, d.contact_pos[c, 2] + oz * h
    # the held coordinates: the incident box's, and the reference face's sides
    li = _box_local(d, gi, px, py, pz)
    lr = _box_local(d, gr, px, py, pz)
    held = 0
    free1 = -1
    free2 = -1
    lx, ly, lz = li
    for k in range(3):
        v = li[k]
        if abs(abs(v) - m.geom_size[gi, k]) <= tol:
            held += 1
            sv = m.geom_size[gi, k] if v > 0 else -m.geom_size[gi, k]
            if k == 0:
                lx = sv
            elif k == 1:
                ly = sv
            else:
                lz = sv
        elif free1 < 0:
            free1 = k
        else:
            free2 = k
    side1 = -1
    side2 = -1
    for k in range(3):
        if k != ax and abs(abs(lr[k]) - m.geom_size[gr, k]) <= tol:
            held += 1
            if side1 < 0:
                side1 = k
            else:
                side2 = k
    if held != 3:  # (then as many free coordinates as held sides)
        return False
    # the vertex rebuilt on the incident box, and the contact from it
    g = d.geom_xmat[gi]
    vx = g[0, 0] * lx + g[0, 1] * ly + g[0, 2] * lz + d.geom_xpos[gi, 0]
    vy = g[1, 0] * lx + g[1, 1] * ly + g[1, 2] * lz + d.geom_xpos[gi, 1]
    vz = g[2, 0] * lx + g[2, 1] * ly + g[2, 2] * lz + d.geom_xpos[gi, 2]
    dist = (ox * (vx - d.geom_xpos[gr, 0]) + oy * (vy - d.geom_xpos[gr, 1]) + oz * (vz - d.geom_xpos[gr, 2])
            - m.geom_size[gr, ax])
    h = dist / 2
    if not _matches(d, c, vx - ox * h, vy - oy * h, vz - oz * h, dist, nx, ny, nz):
        return False
    u1 = _axis(d, gi, max(free1, 0))
    u2 = _axis(d, gi, max(free2, 0))
    s1 = _axis(d, gr, max(side1, 0))
    s2 = _axis(d, gr, max(side2, 0))
    # the Jacobian of the held side coordinates in the free incident coordinates
    a11 = _dot(s1, u1)
    a12 = _dot(s1, u2)
    a21 = _dot(s2, u1)
    a22 = _dot(s2, u2)
    det = a11 * a22 - a12 * a21
    if free2 >= 0 and abs(det) < 1e-6 or free2 < 0 and free1 >= 0 and abs(a11) < 1e-6:
        return False
    for a in range(nc):
        # the vertex held to the incident box, and its velocity relative to the reference box
        qi = _point_vel(d, gb, 1 - sr, gi, vx, vy, vz, a)
        qr = _point_vel(d, gb, sr, gr, vx, vy, vz, a)
        gx, gy, gz = qi[0] - qr[0], qi[1] - qr[1], qi[2] - qr[2]
        # the free coordinates slide to keep the held sides: s_k . (g + sum dl u) = 0
        dl1 = 0.0
        dl2 = 0.0
        if free2 >= 0:
            e1 = -(s1[0] * gx + s1[1] * gy + s1[2] * gz)
            e2 = -(s2[0] * gx + s2[1] * gy + s2[2] * gz)
            dl1 = (e1 * a22 - a12 * e2) / det
            dl2 = (a11 * e2 - a21 * e1) / det
        elif free1 >= 0:
            dl1 = -(s1[0] * gx + s1[1] * gy + s1[2] * gz) / a11
        dvx = qi[0] + dl1 * u1[0] + dl2 * u2[0]
        dvy = qi[1] + dl1 * u1[1] + dl2 * u2[1]
        dvz = qi[2] + dl1 * u1[2] + dl2 * u2[2]
        # dist = o.(v - pos_r) - half: its rate o.(dv - velocity of v held to the reference)
        dd = ox * (dvx - qr[0]) + oy * (dvy - qr[1]) + oz * (dvz - qr[2])
        wx, wy, wz = _ang_vel(gb, sr, a)
        dox, doy, doz = _c3(wx, wy, wz, ox, oy, oz)
        gb[DDIST, a] = dd
        gb[DP, a] = dvx - dox * h - ox * dd / 2
        gb[DP + 1, a] = dvy - doy * h - oy * dd / 2
        gb[DP + 2, a] = dvz - doz * h - oz * dd / 2
        gb[DF, a], gb[DF + 1, a], gb[DF + 2, a] = _c3(wx, wy, wz, nx, ny, nz)
    return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)


@kernel
def _edge_middle(m, g, i, loc, tol):
    """(ok, middle): the middle of box g's edge along axis i through the point loc (box frame), its
    two other coordinates held at the box's half-sizes; ok False when loc is not on such an edge
    or sits at its end."""
    out0, out1, out2 = 0.0, 0.0, 0.0
    for k in range(3):
        v = loc[k]
        half = m.geom_size[g, k]
        if k == i:
            if abs(v) >= half - tol:
                return False, 0.0, 0.0, 0.0
            continue
        if abs(abs(v) - half) > tol:
            return False, 0.0, 0.0, 0.0
        sv = half if v > 0 else -half
        if k == 0:
            out0 = sv
        elif k == 1:
            out1 = sv
        else:
            out2 = sv
    return True, out0, out1, out2


@kernel
def _box_edge(m, d, c, nc, gb, g1, g2, code, tol):
    """The edge-edge contact of mjc_BoxBox (code 6 + 3 i + j: edge i of g1 against edge j of g2):
    the closest points w1, w2 of the two edges, normal n = +-(d1 x d2)/|d1 x d2| (from g1 to g2),
    dist = n.(w2 - w1), the contact at their midpoint. The edges (which of each box's four) are
    read back from the contact and held; a closest point at an edge's end is not covered. Fills
    DP, DF, DDIST; whether the stored contact is this one."""
    i = (code - 6) // 3
    j = (code - 6) % 3
    fr = d.contact_frame[c]
    h = d.contact_dist[c] / 2
    # the edges' middles A, B (the read-back points with their edge coordinate zeroed)
    pt = d.contact_pos[c]
    l1 = _box_local(d, g1, pt[0] - fr[0, 0] * h, pt[1] - fr[0, 1] * h, pt[2] - fr[0, 2] * h)
    l2 = _box_local(d, g2, pt[0] + fr[0, 0] * h, pt[1] + fr[0, 1] * h, pt[2] + fr[0, 2] * h)
    ok1, e0, e1, e2 = _edge_middle(m, g1, i, l1, tol)
    ok2, f0, f1, f2 = _edge_middle(m, g2, j, l2, tol)
    if not (ok1 and ok2):
        return False
    m1 = d.geom_xmat[g1]
    m2 = d.geom_xmat[g2]
    A = (m1[0, 0] * e0 + m1[0, 1] * e1 + m1[0, 2] * e2 + d.geom_xpos[g1, 0],
         m1[1, 0] * e0 + m1[1, 1] * e1 + m1[1, 2] * e2 + d.geom_xpos[g1, 1],
         m1[2, 0] * e0 + m1[2, 1] * e1 + m1[2, 2] * e2 + d.geom_xpos[g1, 2])
    B = (m2[0, 0] * f0 + m2[0, 1] * f1 + m2[0, 2] * f2 + d.geom_xpos[g2, 0],
         m2[1, 0] * f0 + m2[1, 1] * f1 + m2[1, 2] * f2 + d.geom_xpos[g2, 1],
         m2[2, 0] * f0 + m2[2, 1] * f1 + m2[2, 2] * f2 + d.geom_xpos[g2, 2])
    d1 = _axis(d, g1, i)
    d2 = _axis(d, g2, j)
    cx, cy, cz = _c3(d1[0], d1[1], d1[2], d2[0], d2[1], d2[2])
    L = math.sqrt(cx * cx + cy * cy + cz * cz)
    if L < 1e-6:
        return False
    sign = 1.0 if cx * fr[0, 0] + cy * fr[0, 1] + cz * fr[0, 2] >= 0.0 else -1.0
    nx, ny, nz = sign * cx / L, sign * cy / L, sign * cz / L
    # the lines' closest points A + s d1, B + t d2
    b = _dot(d1, d2)
    rx, ry, rz = A[0] - B[0], A[1] - B[1], A[2] - B[2]
    r1 = rx * d1[0] + ry * d1[1] + rz * d1[2]
    r2 = rx * d2[0] + ry * d2[1] + rz * d2[2]
    den = 1.0 - b * b
    s = (b * r2 - r1) / den
    t = r2 + s * b
    dist = -(nx * rx + ny * ry + nz * rz)
    px = 0.5 * (A[0] + s * d1[0] + B[0] + t * d2[0])
    py = 0.5 * (A[1] + s * d1[1] + B[1] + t * d2[1])
    pz = 0.5 * (A[2] + s * d1[2] + B[2] + t * d2[2])
    if not _matches(d, c, px, py, pz, dist, nx, ny, nz):
        return False
    for a in range(nc):
        dA = _point_vel(d, gb, 0, g1, A[0], A[1], A[2], a)
        dB = _point_vel(d, gb, 1, g2, B[0], B[1], B[2], a)
        w1 = _ang_vel(gb, 0, a)
        w2 = _ang_vel(gb, 1, a)
        dd1 = _c3(w1[0], w1[1], w1[2], d1[0], d1[1], d1[2])
        dd2 = _c3(w2[0], w2[1], w2[2], d2[0], d2[1], d2[2])
        # the normal: d(d1 x d2) less its part along n, over |d1 x d2|
        p1 = _c3(dd1[0], dd1[1], dd1[2], d2[0], d2[1], d2[2])
        p2 = _c3(d1[0], d1[1], d1[2], dd2[0], dd2[1], dd2[2])
        qx, qy, qz = sign * (p1[0] + p2[0]), sign * (p1[1] + p2[1]), sign * (p1[2] + p2[2])
        qn = qx * nx + qy * ny + qz * nz
        dnx, dny, dnz = (qx - qn * nx) / L, (qy - qn * ny) / L, (qz - qn * nz) / L
        drx, dry, drz = dA[0] - dB[0], dA[1] - dB[1], dA[2] - dB[2]
        dist_rate = -(dnx * rx + dny * ry + dnz * rz + nx * drx + ny * dry + nz * drz)
        # s, t keep (r + s d1 - t d2) normal to d1 and d2
        db = _dot(dd1, d2) + _dot(d1, dd2)
        e1 = drx * d1[0] + dry * d1[1] + drz * d1[2] + rx * dd1[0] + ry * dd1[1] + rz * dd1[2] - t * db
        e2 = drx * d2[0] + dry * d2[1] + drz * d2[2] + rx * dd2[0] + ry * dd2[1] + rz * dd2[2] + s * db
        ds = (b * e2 - e1) / den
        dt = b * ds + e2
        gb[DDIST, a] = dist_rate
        for x in range(3):
            gb[DP + x, a] = 0.5 * (dA[x] + ds * d1[x] + s * dd1[x] + dB[x] + dt * d2[x] + t * dd2[x])
        gb[DF, a], gb[DF + 1, a], gb[DF + 2, a] = dnx, dny, dnz
    return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)


@kernel
def _box_box(m, d, c, nc, gb, g1, g2):
    """A contact of mjc_BoxBox: its axis (which face is the reference, or which edge pair) found by
    the collider's own separating-axis test, then the face or edge contact's features."""
    p21x, p21y, p21z, p12x, p12y, p12z = box_box_centres(d.geom_xpos, d.geom_xmat, g1, g2)
    code = box_box_axis(d.geom_xmat, m.geom_size, g1, g2, p21x, p21y, p21z, p12x, p12y, p12z, MAXVAL)
    if code < 0:
        return False
    tol = _HELD * (m.geom_size[g1, 0] + m.geom_size[g1, 1] + m.geom_size[g1, 2]
                   + m.geom_size[g2, 0] + m.geom_size[g2, 1] + m.geom_size[g2, 2])
    if code >= 6:
        return _box_edge(m, d, c, nc, gb, g1, g2, code, tol)
    return _box_face(m, d, c, nc, gb, g1, g2, code, tol)


@kernel
def _unit_rate(ux, uy, uz, lu, dux, duy, duz):
    """The rate of u / |u| (lu = |u|) when u moves at du: (du - û (û.du)) / |u|."""
    hx, hy, hz = ux / lu, uy / lu, uz / lu
    t = hx * dux + hy * duy + hz * duz
    return (dux - hx * t) / lu, (duy - hy * t) / lu, (duz - hz * t) / lu


@kernel
def _plane_cylinder(m, d, c, nc, gb, g1, g2):
    """A contact of mjc_PlaneCylinder: a rim point P = o + k v + s2 h a + s1 w against the plane,
    a the cylinder's axis turned towards the plane, v = r (a (a.n) - n) / |...| towards the
    deepest rim point (the cylinder's x axis times r when the cap is parallel to the plane), w =
    r sqrt(3)/2 (v x a) / |v x a|: the deepest point of the near cap (k, s2, s1) = (1, 1, 0), of
    the far cap (1, -1, 0), and the two others of the near cap's triangle (-1/2, 1, +-1). v and w
    turn with the plane's normal as well as with the cylinder. Fills DP, DF, DDIST; whether the
    stored contact is one of these."""
    n = _axis(d, g1, 2)
    a = _axis(d, g2, 2)
    r = m.geom_size[g2, 0]
    hh = m.geom_size[g2, 1]
    if _dot(n, a) > 0:
        a = (-a[0], -a[1], -a[2])
    an = _dot(a, n)
    ux, uy, uz = a[0] * an - n[0], a[1] * an - n[1], a[2] * an - n[2]
    lu = math.sqrt(ux * ux + uy * uy + uz * uz)
    regular = ux * ux + uy * uy + uz * uz >= MINVAL * MINVAL
    if regular and lu < 1e-6:
        return False  # the cap nearly parallel to the plane: v swings round the rim as 1/|u|
    if regular:
        v = (r * ux / lu, r * uy / lu, r * uz / lu)
    else:
        v = (r * d.geom_xmat[g2, 0, 0], r * d.geom_xmat[g2, 1, 0], r * d.geom_xmat[g2, 2, 0])
    wx, wy, wz = _c3(v[0], v[1], v[2], a[0], a[1], a[2])
    lw = math.sqrt(wx * wx + wy * wy + wz * wz)
    if lw < 1e-12:
        return False
    sw = r * math.sqrt(3.0) / 2
    o = d.geom_xpos[g2]
    for k in range(4):
        kap = 1.0 if k < 2 else -0.5
        s2 = -1.0 if k == 1 else 1.0
        s1 = 0.0 if k < 2 else (1.0 if k == 2 else -1.0)
        f = s1 * sw / lw
        px = o[0] + kap * v[0] + s2 * hh * a[0] + f * wx
        py = o[1] + kap * v[1] + s2 * hh * a[1] + f * wy
        pz = o[2] + kap * v[2] + s2 * hh * a[2] + f * wz
        for col in range(nc):
            w1 = _ang_vel(gb, 0, col)
            w2 = _ang_vel(gb, 1, col)
            da = _c3(w2[0], w2[1], w2[2], a[0], a[1], a[2])
            if regular:
                dn = _c3(w1[0], w1[1], w1[2], n[0], n[1], n[2])
                dan = _dot(da, n) + _dot(a, dn)
                q = _unit_rate(ux, uy, uz, lu, da[0] * an + a[0] * dan - dn[0],
                               da[1] * an + a[1] * dan - dn[1], da[2] * an + a[2] * dan - dn[2])
                dv = (r * q[0], r * q[1], r * q[2])
            else:
                dv = _c3(w2[0], w2[1], w2[2], v[0], v[1], v[2])
            e = _c3(dv[0], dv[1], dv[2], a[0], a[1], a[2])
            g = _c3(v[0], v[1], v[2], da[0], da[1], da[2])
            dw = _unit_rate(wx, wy, wz, lw, e[0] + g[0], e[1] + g[1], e[2] + g[2])
            rr = _GV + 6
            for x in range(3):
                gb[DP + x, col] = gb[rr + x, col] + kap * dv[x] + s2 * hh * da[x] + s1 * sw * dw[x]
        if _point_plane(m, d, c, nc, gb, g1, g2, px, py, pz, 0.0, False, True):
            return True
    return False


@kernel
def _against_point(d, c, cx, cy, cz, r1, ex, ey, ez):
    """A sphere of centre c and radius r1 against the point e (a sphere of radius 0, as
    mjraw_SphereSphere: n = (e - c)/L, dist = L - r1, pos = c + n (r1 + dist/2)): (L, nx, ny, nz,
    r1 + dist/2), L = 0 when e is at c or the stored contact c is another."""
    ux, uy, uz = ex - cx, ey - cy, ez - cz
    L = math.sqrt(ux * ux + uy * uy + uz * uz)
    if L < 1e-9:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    nx, ny, nz = ux / L, uy / L, uz / L
    dist = L - r1
    k = r1 + dist / 2
    if not _matches(d, c, cx + nx * k, cy + ny * k, cz + nz * k, dist, nx, ny, nz):
        return 0.0, 0.0, 0.0, 0.0, 0.0
    return L, nx, ny, nz, k


@kernel
def _against_point_column(gb, col, dc, de, L, nx, ny, nz, k):
    """Column col of DP, DF, DDIST for _against_point's contact, the centre moving at dc and the
    point at de."""
    dux, duy, duz = de[0] - dc[0], de[1] - dc[1], de[2] - dc[2]
    dL = nx * dux + ny * duy + nz * duz
    dnx, dny, dnz = (dux - nx * dL) / L, (duy - ny * dL) / L, (duz - nz * dL) / L
    gb[DDIST, col] = dL
    gb[DP, col] = dc[0] + dnx * k + nx * dL / 2
    gb[DP + 1, col] = dc[1] + dny * k + ny * dL / 2
    gb[DP + 2, col] = dc[2] + dnz * k + nz * dL / 2
    gb[DF, col], gb[DF + 1, col], gb[DF + 2, col] = dnx, dny, dnz


@kernel
def _sphere_cylinder(m, d, c, nc, gb, g1, g2):
    """A contact of mjc_SphereCylinder (sphere g1, cylinder g2), the case taken as the collider
    takes it from where the centre projects: beside the side, the sphere against the axis point
    sliding with it (_two_spheres, as a capsule's); over a cap, against the cap's plane (normal
    -s a, s the cap's side, turning with the cylinder); else against the rim point r p/|p| + s h a
    (p the centre's offset across the axis), a sphere of radius 0 sliding round the rim. Fills DP,
    DF, DDIST; whether the stored contact is this one."""
    r1 = m.geom_size[g1, 0]
    r = m.geom_size[g2, 0]
    hh = m.geom_size[g2, 1]
    a = _axis(d, g2, 2)
    cs = d.geom_xpos[g1]
    o = d.geom_xpos[g2]
    vx, vy, vz = cs[0] - o[0], cs[1] - o[1], cs[2] - o[2]
    side, cap, x, px, py, pz, p2 = sphere_cylinder_region(vx, vy, vz, a[0], a[1], a[2], r, hh)
    if side:
        return _two_spheres(m, d, c, nc, gb, g1, g2, False, True)
    sg = 1.0 if x > 0 else -1.0
    # the cap's centre; the outward normal there is sg a
    qx, qy, qz = o[0] + sg * hh * a[0], o[1] + sg * hh * a[1], o[2] + sg * hh * a[2]
    if cap:
        ox, oy, oz = sg * a[0], sg * a[1], sg * a[2]
        dist = ox * (cs[0] - qx) + oy * (cs[1] - qy) + oz * (cs[2] - qz) - r1
        k = dist / 2 + r1
        if not _matches(d, c, cs[0] - ox * k, cs[1] - oy * k, cs[2] - oz * k, dist, -ox, -oy, -oz):
            return False
        for col in range(nc):
            w2 = _ang_vel(gb, 1, col)
            do = _c3(w2[0], w2[1], w2[2], ox, oy, oz)
            dq = _point_vel(d, gb, 1, g2, qx, qy, qz, col)
            dc = (gb[_GV, col], gb[_GV + 1, col], gb[_GV + 2, col])
            dd = (do[0] * (cs[0] - qx) + do[1] * (cs[1] - qy) + do[2] * (cs[2] - qz)
                  + ox * (dc[0] - dq[0]) + oy * (dc[1] - dq[1]) + oz * (dc[2] - dq[2]))
            gb[DDIST, col] = dd
            gb[DP, col] = dc[0] - do[0] * k - ox * dd / 2
            gb[DP + 1, col] = dc[1] - do[1] * k - oy * dd / 2
            gb[DP + 2, col] = dc[2] - do[2] * k - oz * dd / 2
            gb[DF, col], gb[DF + 1, col], gb[DF + 2, col] = -do[0], -do[1], -do[2]
        return _frame(d, c, nc, gb, -ox, -oy, -oz, 0.0, 0.0, 0.0, False, 0)
    # the rim point nearest the centre, against the centre
    lp = math.sqrt(p2)
    ex, ey, ez = qx + r * px / lp, qy + r * py / lp, qz + r * pz / lp
    L, nx, ny, nz, k = _against_point(d, c, cs[0], cs[1], cs[2], r1, ex, ey, ez)
    if L == 0.0:
        return False
    for col in range(nc):
        w2 = _ang_vel(gb, 1, col)
        da = _c3(w2[0], w2[1], w2[2], a[0], a[1], a[2])
        dc = (gb[_GV, col], gb[_GV + 1, col], gb[_GV + 2, col])
        do = (gb[_GV + 6, col], gb[_GV + 7, col], gb[_GV + 8, col])
        dvx, dvy, dvz = dc[0] - do[0], dc[1] - do[1], dc[2] - do[2]
        dx = da[0] * vx + da[1] * vy + da[2] * vz + a[0] * dvx + a[1] * dvy + a[2] * dvz
        dp = _unit_rate(px, py, pz, lp, dvx - da[0] * x - a[0] * dx, dvy - da[1] * x - a[1] * dx,
                        dvz - da[2] * x - a[2] * dx)
        de = (do[0] + sg * hh * da[0] + r * dp[0], do[1] + sg * hh * da[1] + r * dp[1],
              do[2] + sg * hh * da[2] + r * dp[2])
        _against_point_column(gb, col, dc, de, L, nx, ny, nz, k)
    return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)


@kernel
def _sphere_box(m, d, c, nc, gb, g1, g2, cx, cy, cz, r1):
    """A sphere of radius r1 centred at c, held to geom g1 (a sphere's centre; a capsule's end,
    mjc_CapsuleBox's point at an end of the segment), against box g2 (mjraw_SphereBox,
    collision_box._sphere_box). Outside the box,
    the centre's box coordinates clamped to the half-sizes give the box's nearest point e: the
    clamped coordinates held (a face, edge or corner), the others sliding with the centre (along
    the box axes a_i, at a_i.(dc - the box's velocity at c)); the contact is then the centre against
    e, a sphere of radius 0 (n = (e - c)/|e - c|, as _sphere_cylinder's rim). A centre inside the
    box is pushed out through the nearest face: n = -s a_j turns with the box, the depth
    s_j - s x_j (s the face's side, x_j the centre's coordinate) slides with the centre. A
    coordinate within 1e-9 of its half-size (a region's boundary) or two faces equally near the
    inside centre leave the contact to differences. Fills DP, DF, DDIST; whether the stored
    contact is this one."""
    cs = (cx, cy, cz)
    o = d.geom_xpos[g2]
    xm = d.geom_xmat[g2]
    vx, vy, vz = cs[0] - o[0], cs[1] - o[1], cs[2] - o[2]
    loc = (xm[0, 0] * vx + xm[1, 0] * vy + xm[2, 0] * vz,
           xm[0, 1] * vx + xm[1, 1] * vy + xm[2, 1] * vz,
           xm[0, 2] * vx + xm[1, 2] * vy + xm[2, 2] * vz)
    for i in range(3):
        if abs(abs(loc[i]) - m.geom_size[g2, i]) <= 1e-9 * m.geom_size[g2, i]:
            return False
    free = (abs(loc[0]) < m.geom_size[g2, 0], abs(loc[1]) < m.geom_size[g2, 1],
            abs(loc[2]) < m.geom_size[g2, 2])
    kl = (min(max(loc[0], -m.geom_size[g2, 0]), m.geom_size[g2, 0]),
          min(max(loc[1], -m.geom_size[g2, 1]), m.geom_size[g2, 1]),
          min(max(loc[2], -m.geom_size[g2, 2]), m.geom_size[g2, 2]))
    if free[0] and free[1] and free[2]:
        # the face the collider picks: smallest gap, faces in the order -x, +x, -y, +y, -z, +z
        best = 0
        gap0 = 1e300
        gap1 = 1e300
        for f in range(6):
            j = f // 2
            gap = abs((m.geom_size[g2, j] if f % 2 == 1 else -m.geom_size[g2, j]) - loc[j])
            if gap < gap0:
                gap1 = gap0
                gap0 = gap
                best = f
            elif gap < gap1:
                gap1 = gap
        if gap1 - gap0 <= 1e-9 * (1.0 + gap0):
            return False
        j = best // 2
        sf = 1.0 if best % 2 == 1 else -1.0
        nx, ny, nz = -sf * xm[0, j], -sf * xm[1, j], -sf * xm[2, j]
        h = (r1 - gap0) / 2
        dist = -gap0 - r1
        if not _matches(d, c, cs[0] + nx * h, cs[1] + ny * h, cs[2] + nz * h, dist, nx, ny, nz):
            return False
        for col in range(nc):
            w2 = _ang_vel(gb, 1, col)
            dn = _c3(w2[0], w2[1], w2[2], nx, ny, nz)
            dc = _point_vel(d, gb, 0, g1, cx, cy, cz, col)
            vb = _point_vel(d, gb, 1, g2, cs[0], cs[1], cs[2], col)
            dx = xm[0, j] * (dc[0] - vb[0]) + xm[1, j] * (dc[1] - vb[1]) + xm[2, j] * (dc[2] - vb[2])
            dgap = -sf * dx
            gb[DDIST, col] = -dgap
            gb[DP, col] = dc[0] + dn[0] * h - nx * dgap / 2
            gb[DP + 1, col] = dc[1] + dn[1] * h - ny * dgap / 2
            gb[DP + 2, col] = dc[2] + dn[2] * h - nz * dgap / 2
            gb[DF, col], gb[DF + 1, col], gb[DF + 2, col] = dn
        return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)
    # the box's nearest point, against the centre
    ex = xm[0, 0] * kl[0] + xm[0, 1] * kl[1] + xm[0, 2] * kl[2] + o[0]
    ey = xm[1, 0] * kl[0] + xm[1, 1] * kl[1] + xm[1, 2] * kl[2] + o[1]
    ez = xm[2, 0] * kl[0] + xm[2, 1] * kl[1] + xm[2, 2] * kl[2] + o[2]
    L, nx, ny, nz, k = _against_point(d, c, cs[0], cs[1], cs[2], r1, ex, ey, ez)
    if L == 0.0:
        return False
    for col in range(nc):
        dc = _point_vel(d, gb, 0, g1, cx, cy, cz, col)
        vb = _point_vel(d, gb, 1, g2, cs[0], cs[1], cs[2], col)
        dex, dey, dez = _point_vel(d, gb, 1, g2, ex, ey, ez, col)
        for i in range(3):
            if free[i]:
                t = xm[0, i] * (dc[0] - vb[0]) + xm[1, i] * (dc[1] - vb[1]) + xm[2, i] * (dc[2] - vb[2])
                dex += xm[0, i] * t
                dey += xm[1, i] * t
                dez += xm[2, i] * t
        _against_point_column(gb, col, dc, (dex, dey, dez), L, nx, ny, nz, k)
    return _frame(d, c, nc, gb, nx, ny, nz, 0.0, 0.0, 0.0, False, 0)


@kernel
def _capsule_end(m, d, g, side):
    """The end g + side half u of capsule g (u its axis)."""
    h = side * m.geom_size[g, 1]
    xm = d.geom_xmat[g]
    xp = d.geom_xpos[g]
    return xp[0] + h * xm[0, 2], xp[1] + h * xm[1, 2], xp[2] + h * xm[2, 2]


@kernel
def _geometry(m, d, c, nc, gb):
    """DP, DF, DDIST of contact c by its collider; whether the collider is covered and the stored
    contact was rebuilt from the geoms."""
    g1 = d.contact_geom[c, 0]
    g2 = d.contact_geom[c, 1]
    if g1 < 0 or g2 < 0:
        return False
    t1 = m.geom_type[g1]
    t2 = m.geom_type[g2]
    xp = d.geom_xpos
    size = m.geom_size
    if t1 == GEOM_PLANE and t2 == GEOM_SPHERE:
        return _point_plane(m, d, c, nc, gb, g1, g2, xp[g2, 0], xp[g2, 1], xp[g2, 2], size[g2, 0],
                            False, False)
    if t1 == GEOM_PLANE and t2 == GEOM_CAPSULE:
        # the end nearest the stored position (the collider's +axis end first, then -axis)
        for side in (1.0, -1.0):
            ex, ey, ez = _capsule_end(m, d, g2, side)
            if _point_plane(m, d, c, nc, gb, g1, g2, ex, ey, ez, size[g2, 0], True, False):
                return True
        return False
    if t1 == GEOM_PLANE and t2 == GEOM_BOX:
        for i in range(8):
            lx = size[g2, 0] if i & 1 else -size[g2, 0]
            ly = size[g2, 1] if i & 2 else -size[g2, 1]
            lz = size[g2, 2] if i & 4 else -size[g2, 2]
            if _held_point_plane(m, d, c, nc, gb, g1, g2, lx, ly, lz):
                return True
        return False
    if t1 == GEOM_PLANE and t2 == GEOM_MESH:
        # mjc_PlaneConvex puts each contact midway between a mesh vertex and the plane, like a box
        # corner: the vertex is held (which one is found by rebuilding the stored contact)
        mid = m.geom_dataid[g2]
        vert = m.mesh_vert
        for i in range(m.mesh_vertadr[mid], m.mesh_vertadr[mid] + m.mesh_vertnum[mid]):
            if _held_point_plane(m, d, c, nc, gb, g1, g2, vert[i, 0], vert[i, 1], vert[i, 2]):
                return True
        return False
    if (t1 == GEOM_SPHERE or t1 == GEOM_CAPSULE) and (t2 == GEOM_SPHERE or t2 == GEOM_CAPSULE):
        return _two_spheres(m, d, c, nc, gb, g1, g2, t1 == GEOM_CAPSULE, t2 == GEOM_CAPSULE)
    if t1 == GEOM_PLANE and t2 == GEOM_CYLINDER:
        return _plane_cylinder(m, d, c, nc, gb, g1, g2)
    if t1 == GEOM_SPHERE and t2 == GEOM_CYLINDER:
        return _sphere_cylinder(m, d, c, nc, gb, g1, g2)
    if t1 == GEOM_SPHERE and t2 == GEOM_BOX:
        return _sphere_box(m, d, c, nc, gb, g1, g2, xp[g1, 0], xp[g1, 1], xp[g1, 2], size[g1, 0])
    if t1 == GEOM_CAPSULE and t2 == GEOM_BOX:
        # mjc_CapsuleBox's spheres at an end of the segment (the stored position tells which);
        # a point inside the segment (the closest approach to a box edge, or a second point
        # stopped at a face's or edge's end) moves along it and is left to differences
        for side in (1.0, -1.0):
            ex, ey, ez = _capsule_end(m, d, g1, side)
            if _sphere_box(m, d, c, nc, gb, g1, g2, ex, ey, ez, size[g1, 0]):
                return True
        return False
    if t1 == GEOM_BOX and t2 == GEOM_BOX:
        return _box_box(m, d, c, nc, gb, g1, g2)
    return False


@kernel
def contact_row_derivatives(m, d, c, idx, gb):
    """For contact c: idx[:nc] the dofs moving its two bodies, and gb[TC + r, a * nc + kk] =
    d Jc_r[idx[a]] / dq_idx[kk] for the frame rows r < the contact's dim (Jc_r = F_r (Jp(b2, p) - Jp(b1, p)),
    F_{r-3} (Jr(b2) - Jr(b1)) for r >= 3), gb[DDIST, kk] = d dist / dq_idx[kk]. Returns nc, or -1
    when the contact is not covered (see the module docstring)."""
    if d.contact_adhesion[c] != 0.0:
        return -1
    g1 = d.contact_geom[c, 0]
    g2 = d.contact_geom[c, 1]
    if g1 < 0 or g2 < 0:
        return -1
    bodies = (m.geom_bodyid[g1], m.geom_bodyid[g2])
    nc = chain_dofs(m, bodies[0], idx, 0)
    nc = chain_dofs(m, bodies[1], idx, nc)
    if nc > 0 and gb.shape[1] < nc * nc:
        return -1
    for s in range(2):
        g = d.contact_geom[c, s]
        _body_columns(m, d, bodies[s], d.geom_xpos[g, 0], d.geom_xpos[g, 1], d.geom_xpos[g, 2],
                      idx, nc, gb, _GV + 6 * s)
    if not _geometry(m, d, c, nc, gb):
        return -1
    _fill_moves(m, idx, nc, gb)
    px, py, pz = d.contact_pos[c, 0], d.contact_pos[c, 1], d.contact_pos[c, 2]
    for s in range(2):
        _body_columns(m, d, bodies[s], px, py, pz, idx, nc, gb, _JB + 6 * s)
    # only the frame rows the contact has (its dim: the normal and tangents; spin and rolling for
    # condim 4 and 6), and the rotational part of dJ only for those
    nrow = min(max(d.contact_dim[c], 1), 6)
    nx = 6 if nrow > 3 else 3
    # dJ of Jp(b2, p) - Jp(b1, p) and Jr(b2) - Jr(b1), column a (dof i), along kk (dof k); a outer
    # and kk inner (each side's column of a read once; the sides summed in the same order)
    for out in range(nc * nc):
        for x in range(nx):
            gb[_DJ + x, out] = 0.0
    for a in range(nc):
        for s in range(2):
            r = _JB + 6 * s
            sign = 1.0 if s == 1 else -1.0
            wix, wiy, wiz = gb[r + 3, a], gb[r + 4, a], gb[r + 5, a]
            pix, piy, piz = gb[r, a], gb[r + 1, a], gb[r + 2, a]
            if wix == 0.0 and wiy == 0.0 and wiz == 0.0 and pix == 0.0 and piy == 0.0 and piz == 0.0:
                continue  # i does not move this body
            for kk in range(nc):
                out = a * nc + kk
                # p moving: w_i x dp
                ex, ey, ez = _c3(wix, wiy, wiz, gb[DP, kk], gb[DP + 1, kk], gb[DP + 2, kk])
                if gb[_ANC, out] != 0.0:
                    wkx, wky, wkz = gb[r + 3, kk], gb[r + 4, kk], gb[r + 5, kk]
                    ax, ay, az = _c3(wkx, wky, wkz, pix, piy, piz)
                    bx, by, bz = _c3(wix, wiy, wiz, gb[r, kk], gb[r + 1, kk], gb[r + 2, kk])
                    ex += ax - bx
                    ey += ay - by
                    ez += az - bz
                    if nx > 3:
                        rx, ry, rz = _c3(wkx, wky, wkz, wix, wiy, wiz)
                        gb[_DJ + 3, out] += sign * rx
                        gb[_DJ + 4, out] += sign * ry
                        gb[_DJ + 5, out] += sign * rz
                gb[_DJ, out] += sign * ex
                gb[_DJ + 1, out] += sign * ey
                gb[_DJ + 2, out] += sign * ez
    # the frame rows: dJc_r = dF_r (J2 - J1) + F_r d(J2 - J1)
    fr = d.contact_frame[c]
    for r in range(nrow):
        f = r % 3
        src = _JB if r < 3 else _JB + 3
        dj = _DJ + 3 * (r // 3)
        df = DF + 3 * f
        f0, f1, f2 = fr[f, 0], fr[f, 1], fr[f, 2]
        for a in range(nc):
            d0 = gb[src + 6, a] - gb[src, a]
            d1 = gb[src + 7, a] - gb[src + 1, a]
            d2 = gb[src + 8, a] - gb[src + 2, a]
            for kk in range(nc):
                out = a * nc + kk
                # summed over x in order, as (dF . dif + F . dJ) term by term
                t = gb[df, kk] * d0 + f0 * gb[dj, out]
                t += gb[df + 1, kk] * d1 + f1 * gb[dj + 1, out]
                t += gb[df + 2, kk] * d2 + f2 * gb[dj + 2, out]
                gb[TC + r, out] = t
    return nc


# ---- points held to their bodies: connect constraints ---------------------------------------------


@kernel
def _motion(gb, row, c):
    """(gb[row:row+3, c], gb[row+3:row+6, c]) as two 3-tuples: a column's translation and rotation."""
    return (gb[row, c], gb[row + 1, c], gb[row + 2, c]), (gb[row + 3, c], gb[row + 4, c], gb[row + 5, c])


@kernel
def _primes(m, gb, jrow, idx, nc, sign):
    """For the point p held to the body whose columns are gb[jrow:jrow+6] (P: Jp(p), W: Jr), the
    derivatives P'[a, j] = dP_a/dq_j = [j moves a] (W_j x P_a - W_a x P_j) + W_a x P_j (p moving
    with the body) and W'[a, j] = [j moves a] W_j x W_a, into gb[TC:TC+6] (a * nc + j); and
    gb[TQ + x] += sign P'."""
    for a in range(nc):
        pa, wa = _motion(gb, jrow, a)
        for j in range(nc):
            out = a * nc + j
            pj, wj = _motion(gb, jrow, j)
            if gb[_ANC, out] != 0.0:  # j moves a (the W_a x P_j terms cancel)
                ex, ey, ez = _c3(wj[0], wj[1], wj[2], pa[0], pa[1], pa[2])
                rx, ry, rz = _c3(wj[0], wj[1], wj[2], wa[0], wa[1], wa[2])
            else:
                ex, ey, ez = _c3(wa[0], wa[1], wa[2], pj[0], pj[1], pj[2])
                rx, ry, rz = 0.0, 0.0, 0.0
            gb[TC, out], gb[TC + 1, out], gb[TC + 2, out] = ex, ey, ez
            gb[TC + 3, out], gb[TC + 4, out], gb[TC + 5, out] = rx, ry, rz
            gb[TQ, out] += sign * ex
            gb[TQ + 1, out] += sign * ey
            gb[TQ + 2, out] += sign * ez
            gb[WD, out] += sign * rx
            gb[WD + 1, out] += sign * ry
            gb[WD + 2, out] += sign * rz


@kernel
def _jdotv_primes(m, d, gb, jrow, idx, nc, sign, side):
    """gb[JDV + x, j] += sign d(J̇_p qvel)/dq_j for the point of _primes (its P', W' in gb[TC:]).
    J̇_p qvel = sum_{a,k} v_a v_k dP_a/dq_k (mj_jacDot's cdof_dot: each axis moved by the dofs
    before it, the point by all), differentiated term by term with the same first derivatives;
    likewise gb[JDVR + x, j] += sign d(J̇_r qvel)/dq_j (J̇_r qvel = sum v_a v_k dW_a/dq_k), and
    gb[DOM + 3 side + x, j] = d(Jr qvel)/dq_j."""
    for j in range(nc):
        om = (0.0, 0.0, 0.0)
        for a in range(nc):
            va = d.qvel[idx[a]]
            aj = a * nc + j
            om = (om[0] + va * gb[TC + 3, aj], om[1] + va * gb[TC + 4, aj], om[2] + va * gb[TC + 5, aj])
        gb[DOM + 3 * side, j], gb[DOM + 3 * side + 1, j], gb[DOM + 3 * side + 2, j] = om
        rot = (0.0, 0.0, 0.0)
        sx, sy, sz = 0.0, 0.0, 0.0
        for a in range(nc):
            va = d.qvel[idx[a]]
            if va == 0.0:
                continue
            pa, wa = _motion(gb, jrow, a)
            paj, waj = _motion(gb, TC, a * nc + j)
            for k in range(nc):
                vk = d.qvel[idx[k]]
                if vk == 0.0:
                    continue
                pk, wk = _motion(gb, jrow, k)
                pkj, wkj = _motion(gb, TC, k * nc + j)
                # d/dq_j of dP_a/dq_k: of W_k x P_a when k moves a, else of W_a x P_k
                vv = va * vk
                if gb[_ANC, a * nc + k] != 0.0:
                    tx, ty, tz = _c3(wkj[0], wkj[1], wkj[2], pa[0], pa[1], pa[2])
                    ux, uy, uz = _c3(wk[0], wk[1], wk[2], paj[0], paj[1], paj[2])
                    # and of dW_a/dq_k = W_k x W_a
                    rx, ry, rz = _c3(wkj[0], wkj[1], wkj[2], wa[0], wa[1], wa[2])
                    qx, qy, qz = _c3(wk[0], wk[1], wk[2], waj[0], waj[1], waj[2])
                    rot = (rot[0] + vv * (rx + qx), rot[1] + vv * (ry + qy), rot[2] + vv * (rz + qz))
                else:
                    tx, ty, tz = _c3(waj[0], waj[1], waj[2], pk[0], pk[1], pk[2])
                    ux, uy, uz = _c3(wa[0], wa[1], wa[2], pkj[0], pkj[1], pkj[2])
                tx, ty, tz = tx + ux, ty + uy, tz + uz
                sx += vv * tx
                sy += vv * ty
                sz += vv * tz
        gb[JDV, j] += sign * sx
        gb[JDV + 1, j] += sign * sy
        gb[JDV + 2, j] += sign * sz
        gb[JDVR, j] += sign * rot[0]
        gb[JDVR + 1, j] += sign * rot[1]
        gb[JDVR + 2, j] += sign * rot[2]


@kernel
def connect_row_derivatives(m, d, p1x, p1y, p1z, b1, p2x, p2y, p2z, b2, idx, gb):
    """For a connect's rows J = Jp(b1, p1) - Jp(b2, p2) (anchors held to their bodies): idx[:nc]
    the dofs moving the bodies, gb[TQ + r, a * nc + j] = d J_r[idx[a]] / dq_idx[j] and
    gb[JDV + r, j] = d (J̇ qvel)_r / dq_idx[j]; for a weld's rotation also WD, JDVR, DOM (see
    their rows). Returns nc (-1 when gb is too small)."""
    nc = chain_dofs(m, b1, idx, 0)
    nc = chain_dofs(m, b2, idx, nc)
    if gb.shape[1] < nc * nc:
        return -1
    for a in range(nc):
        # mj_jacDot turns a ball's axes with its body's whole velocity: with a joint after the
        # ball in the same body that is not the motion S_k x S_i written here (left to differences)
        v = idx[a]
        first, n, rot = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, v)
        b = m.dof_bodyid[v]
        if rot and first + n < m.body_dofadr[b] + m.body_dofnum[b]:
            return -1
    _fill_moves(m, idx, nc, gb)
    _body_columns(m, d, b1, p1x, p1y, p1z, idx, nc, gb, _JB)
    _body_columns(m, d, b2, p2x, p2y, p2z, idx, nc, gb, _JB + 6)
    for r in range(3):
        for a in range(nc * nc):
            gb[TQ + r, a] = 0.0
            gb[WD + r, a] = 0.0
        for a in range(nc):
            gb[JDV + r, a] = 0.0
            gb[JDVR + r, a] = 0.0
    for s in range(2):
        sign = 1.0 if s == 0 else -1.0
        _primes(m, gb, _JB + 6 * s, idx, nc, sign)
        _jdotv_primes(m, d, gb, _JB + 6 * s, idx, nc, sign, s)
    return nc


@kernel
def body_rot_column(gb, s, a):
    """Jr(b_s)'s column a (after connect_row_derivatives), as a 3-tuple."""
    r = _JB + 6 * s + 3
    return gb[r, a], gb[r + 1, a], gb[r + 2, a]


# ---- spatial tendons through sites ---------------------------------------------------------------


@kernel
def tendon_row_derivatives(m, d, t, idx, gb):
    """For spatial tendon t whose path runs through sites and pulleys only: idx[:nc] the dofs moving
    its sites, gb[TT, a * nc + j] = d ten_J[idx[a]] / dq_idx[j]. ten_J sums u' (Jp(b1, p1) - Jp(b0,
    p0)) / divisor over the straight pieces between sites on different bodies (mj_tendon), u the
    unit vector p0 -> p1 of length L: its derivative du' dJ + u' d(dJ), du = (I - u u')(dp1 -
    dp0) / L, the sites held to their bodies. Returns nc, or -1 (a geom wrap: not covered)."""
    adr = m.tendon_adr[t]
    num = m.tendon_num[t]
    nc = 0
    for k in range(adr, adr + num):
        if m.wrap_type[k] == WRAP_SITE:
            nc = chain_dofs(m, m.site_bodyid[m.wrap_objid[k]], idx, nc)
        elif m.wrap_type[k] != WRAP_PULLEY:
            return -1
    if gb.shape[1] < nc * nc:
        return -1
    for a in range(nc * nc):
        gb[TT, a] = 0.0
    _fill_moves(m, idx, nc, gb)
    divisor = 1.0
    for j in range(adr, adr + num - 1):
        if m.wrap_type[j] == WRAP_PULLEY:
            divisor = m.wrap_prm[j]
            continue
        if m.wrap_type[j + 1] == WRAP_PULLEY:
            continue
        s0 = m.wrap_objid[j]
        s1 = m.wrap_objid[j + 1]
        b0 = m.site_bodyid[s0]
        b1 = m.site_bodyid[s1]
        if b0 == b1:
            continue
        p0 = d.site_xpos[s0]
        p1 = d.site_xpos[s1]
        ux, uy, uz = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
        L = math.sqrt(ux * ux + uy * uy + uz * uz)
        if L < 1e-12:
            return -1
        ux, uy, uz = ux / L, uy / L, uz / L
        _body_columns(m, d, b0, p0[0], p0[1], p0[2], idx, nc, gb, _JB)
        _body_columns(m, d, b1, p1[0], p1[1], p1[2], idx, nc, gb, _JB + 6)
        inv = 1.0 / divisor
        # du'(J1 - J0): du_j = (I - u u')(P1_j - P0_j) / L
        for jj in range(nc):
            ex = gb[_JB + 6, jj] - gb[_JB, jj]
            ey = gb[_JB + 7, jj] - gb[_JB + 1, jj]
            ez = gb[_JB + 8, jj] - gb[_JB + 2, jj]
            ue = ux * ex + uy * ey + uz * ez
            dux, duy, duz = (ex - ue * ux) / L, (ey - ue * uy) / L, (ez - ue * uz) / L
            for a in range(nc):
                gb[TT, a * nc + jj] += inv * (dux * (gb[_JB + 6, a] - gb[_JB, a])
                                              + duy * (gb[_JB + 7, a] - gb[_JB + 1, a])
                                              + duz * (gb[_JB + 8, a] - gb[_JB + 2, a]))
        # u' d(J1 - J0), each site held to its body (_primes' P' in gb[TC:TC+3])
        for side in range(2):
            sign = 1.0 if side == 1 else -1.0
            _primes(m, gb, _JB + 6 * side, idx, nc, 0.0)
            for a in range(nc * nc):
                gb[TT, a] += sign * inv * (ux * gb[TC, a] + uy * gb[TC + 1, a] + uz * gb[TC + 2, a])
    return nc
