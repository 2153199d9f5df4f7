"""Velocity derivatives of the fluid forces: the fluid part of qDeriv (mjd_passive_vel's calls of
mjd_inertiaBoxFluid and mjd_ellipsoidFluid, engine_derivative.c), which the implicit and
implicitfast integrators fold into their system matrix.

Each fluid term is a local force f (3 torques, 3 forces) that depends on the local velocity
l = (w, v) of a frame on body b (:mod:`kinedyn.engine.passive_fluid`): the inertia box of the
body at its centre of mass in the inertial frame, or each ellipsoid geom at its centre in the
geom frame, v relative to the wind. With J the body's 6 x nv Jacobian at that point rotated into
that frame (l = J qvel - wind) and B = d f / d l (6x6), the term adds J' B J to
d qfrc_passive / d qvel. MuJoCo's B, as it forms it (which is what the integrators see):

* inertia box: diagonal, -pi D^3 mu and -3 pi D mu (viscosity) plus the derivative of each
  quadratic drag, -rho/64 b_x (b_y^4 + b_z^4) 2|w_x| ... and -rho/2 b_y b_z 2|v_x| ...;
* ellipsoid (the sum of mjd_magnus_force, mjd_kutta_lift, mjd_viscous_drag, mjd_viscous_torque
  and mjd_addedMassForces): the Magnus force's derivatives w.r.t. w and v; the Kutta lift's and
  the blunt/slender drag's w.r.t. v (the projected area's derivative included); the angular
  drag's w.r.t. w; the added-mass terms p x v + L x w (torque) and p x w (force), p and L the
  virtual momenta. The geom's on/off coefficient geom_fluid[0] selects, it does not scale.
  Under implicitfast B is symmetrised, (B + B')/2, except on a standalone free body, whose
  6x6 block the integrator solves unsymmetric (mjd_freeMhat).

Nothing is added when springs and dampers are both disabled (mjd_passive_vel returns; so does
the force, mj_passive). The kernels add ``scale`` times the terms into the caller's matrix:

* ``fluid_vel_entry``: a dense square block ``out`` (dofs off ... off+n of bodies b0 ... b1-1):
  the whole (nv, nv) qDeriv part for the implicit integrator (and any derivative that needs it),
  or a lone free body's 6x6 block;
* ``fluid_vel_m_entry``: implicitfast's M - h D in M's lower-triangle layout (mapD2M's gather),
  without the lone free bodies, whose rows MuJoCo resets to M before its local solve.

Both are units compiled only for models in a medium with an implicit integrator. From Python,
``fluid_qderiv(m, d)`` returns the (nv, nv) fluid part of qDeriv.

A third unit, ``fluid_partials_entry`` (compiled only for models in a medium), adds the fluid
forces' derivatives in qpos and qvel to transition_derivatives' force partials, with the same B
(for the ellipsoid scaled by geom_fluid[0], as the force is).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data, out_array
from kinedyn.engine.derivative_rne import dof_groups, rne_partials
from kinedyn.engine.derivative_sensor import point_velocity_dq
from kinedyn.engine.passive_fluid import (
    PI,
    _mat_t_vec,
    _mat_vec,
    ellipsoid_local,
    frame_velocity,
    geom_semiaxes,
    inertia_box_local,
    inertia_box_sides,
    max_moment,
    pow4,
    uses_ellipsoid,
)
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    DSBL_DAMPER,
    DSBL_SPRING,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    JNT_FREE,
    MINVAL,
    OPT_DENSITY,
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    OPT_VISCOSITY,
    OPT_WIND,
)
from kinedyn.engine.util_linalg3 import cross3
from kinedyn.engine.util_spatial import cross_motion, row6


@kernel(inline="always")
def fluid_vel_active(m):
    """Whether the fluid forces have velocity derivatives to add: a medium, springs or dampers
    enabled (mjd_passive_vel), and an implicit integrator (what fluid_vel_needed binds the units
    for: the discrete integrator's free-body block, say, must not reach them)."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    if flags & DSBL_SPRING and flags & DSBL_DAMPER:
        return False
    integrator = m.opt_flags[OPT_INTEGRATOR]
    if integrator != INT_IMPLICIT and integrator != INT_IMPLICITFAST:
        return False
    return m.opt_real[OPT_DENSITY] > 0.0 or m.opt_real[OPT_VISCOSITY] > 0.0


def fluid_vel_needed(m) -> bool:
    """The units are bound for models in a medium under an implicit integrator."""
    medium = m.opt.density > 0.0 or m.opt.viscosity > 0.0
    return medium and m.opt.integrator in (INT_IMPLICIT, INT_IMPLICITFAST)


@kernel
def lone_free_body(m, b):
    """mj_isFreeBody: b's only joint is free, and its tree has no other body with mass or dofs."""
    if m.body_jntnum[b] != 1 or m.jnt_type[m.body_jntadr[b]] != JNT_FREE:
        return False
    if m.body_subtreemass[b] != m.body_mass[b]:
        return False
    return b + 1 >= m.nbody or m.body_rootid[b + 1] != m.body_rootid[b]


@kernel
def _chain_last(m, b):
    """The last dof of the first ancestor of b (b included) with dofs: the start of b's dof chain
    (follow dof_parentid); -1 if b moves with the world."""
    while b > 0 and m.body_dofnum[b] == 0:
        b = m.body_parentid[b]
    if b == 0:
        return -1
    return m.body_dofadr[b] + m.body_dofnum[b] - 1


@kernel
def _local_jacobian(m, d, b, pos, R, jac):
    """jac[0:3], jac[3:6] = R' jacr, R' jacp of the point pos on body b (mj_jac, rotated into the
    frame R as mjd_*Fluid do); columns off the chain are zero."""
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, pos[0], pos[1], pos[2], b, jac[3:6], jac[0:3])
    v = _chain_last(m, b)
    while v >= 0:
        for k in (0, 3):
            x, y, z = jac[k, v], jac[k + 1, v], jac[k + 2, v]
            jac[k, v] = R[0, 0] * x + R[1, 0] * y + R[2, 0] * z
            jac[k + 1, v] = R[0, 1] * x + R[1, 1] * y + R[2, 1] * z
            jac[k + 2, v] = R[0, 2] * x + R[1, 2] * y + R[2, 2] * z
        v = m.dof_parentid[v]


@kernel
def _box_b(m, d, b, B):
    """B of body b's inertia box (mjd_inertiaBoxFluid): diagonal."""
    density = m.opt_real[OPT_DENSITY]
    viscosity = m.opt_real[OPT_VISCOSITY]
    bx, by, bz = inertia_box_sides(m, b)
    w0, w1, w2, v0, v1, v2 = frame_velocity(m, d, b, d.xipos[b], d.ximat[b])
    if viscosity > 0:
        diam = (bx + by + bz) / 3.0
        ang = -PI * diam * diam * diam * viscosity
        lin = -3.0 * PI * diam * viscosity
        for k in range(3):
            B[k, k] += ang
            B[3 + k, 3 + k] += lin
    if density > 0:
        # d(|x| x)/dx = 2|x|
        B[0, 0] -= density * bx * (pow4(by) + pow4(bz)) * 2.0 * abs(w0) / 64.0
        B[1, 1] -= density * by * (pow4(bx) + pow4(bz)) * 2.0 * abs(w1) / 64.0
        B[2, 2] -= density * bz * (pow4(bx) + pow4(by)) * 2.0 * abs(w2) / 64.0
        B[3, 3] -= 0.5 * density * by * bz * 2.0 * abs(v0)
        B[4, 4] -= 0.5 * density * bx * bz * 2.0 * abs(v1)
        B[5, 5] -= 0.5 * density * bx * by * 2.0 * abs(v2)


@kernel(inline="always")
def _add_dcross_da(B, r, c, b0, b1, b2, s0, s1, s2):
    """B[r:r+3, c:c+3] += d(a x b)/da diag(s) (mjd_cross's Da, columns scaled by s)."""
    B[r, c + 1] += b2 * s1
    B[r, c + 2] -= b1 * s2
    B[r + 1, c] -= b2 * s0
    B[r + 1, c + 2] += b0 * s2
    B[r + 2, c] += b1 * s0
    B[r + 2, c + 1] -= b0 * s1


@kernel(inline="always")
def _add_dcross_db(B, r, c, a0, a1, a2):
    """B[r:r+3, c:c+3] += d(a x b)/db = [a]x (mjd_cross's Db)."""
    B[r, c + 1] -= a2
    B[r, c + 2] += a1
    B[r + 1, c] += a2
    B[r + 1, c + 2] -= a0
    B[r + 2, c] -= a1
    B[r + 2, c + 1] += a0


@kernel
def _ellipsoid_b(m, d, b, g, B):
    """B of geom g's ellipsoid (mjd_ellipsoidFluid's sum of the five terms)."""
    density = m.opt_real[OPT_DENSITY]
    viscosity = m.opt_real[OPT_VISCOSITY]
    prm = m.geom_fluid[g]
    blunt, slender, angdrag, kutta, magnus = prm[1], prm[2], prm[3], prm[4], prm[5]
    s0, s1, s2 = geom_semiaxes(m, g)
    w0, w1, w2, x, y, z = frame_velocity(m, d, b, d.geom_xpos[g], d.geom_xmat[g])

    # Magnus force mc (w x v), mc = magnus rho volume: d/dw and d/dv (mjd_magnus_force)
    mc = magnus * density * (4.0 / 3.0 * PI * s0 * s1 * s2)
    _add_dcross_da(B, 3, 0, mc * x, mc * y, mc * z, 1.0, 1.0, 1.0)
    _add_dcross_db(B, 3, 3, mc * w0, mc * w1, mc * w2)

    # the ellipsoid's squared face areas along each axis, and the projected-area sums
    ea, eb, ec = (s1 * s2) * (s1 * s2), (s2 * s0) * (s2 * s0), (s0 * s1) * (s0 * s1)
    xx, yy, zz = x * x, y * y, z * z
    proj_denom = ea * ea * xx + eb * eb * yy + ec * ec * zz
    proj_num = ea * xx + eb * yy + ec * zz
    norm2 = xx + yy + zz
    vel = (x, y, z)
    e = (ea, eb, ec)

    norm = math.sqrt(norm2)
    # the density terms of the lift and drag have no derivative below a speed of MINVAL; above
    # it their quotients are taken as they are. MuJoCo 4.0.0 does so (measured: its derivatives
    # are those of the force down to |v| = 1.08e-15 and zero at 0.97e-15, where the
    # MINVAL-clamped quotients of mjd_kutta_lift and mjd_viscous_drag would already differ at
    # a thin geom's ordinary speeds, |v| ~ 1, and the viscous term stays)
    moving = norm >= MINVAL

    # Kutta lift w.r.t. v (mjd_kutta_lift, MuJoCo's closed form)
    if moving:
        df_denom = PI * kutta * density / math.sqrt(proj_denom * proj_num * norm2)
        dfc = (yy * (ea - eb) + zz * (ea - ec), xx * (eb - ea) + zz * (eb - ec),
               xx * (ec - ea) + yy * (ec - eb))
        proj_term = proj_num / proj_denom
        cos_term = proj_num / norm2
        for i in range(3):
            for j in range(3):
                inner = e[j] * e[j] * proj_term - e[j] + cos_term
                val = (2.0 * proj_num * (e[j] - e[i]) + inner * dfc[i]) * (vel[i] * vel[j])
                if i == j:
                    val -= dfc[i] * proj_num
                B[3 + i, 3 + j] += val * df_denom

    # blunt and slender drag w.r.t. v, the projected area's derivative included (mjd_viscous_drag)
    d_max = max(s0, s1, s2)
    d_min = min(s0, s1, s2)
    d_mid = s0 + s1 + s2 - d_max - d_min
    eq_d = 2.0 / 3.0 * (s0 + s1 + s2)
    a_max = PI * d_max * d_mid
    lin_coef = viscosity * 3.0 * PI * eq_d
    for i in range(3):
        B[3 + i, 3 + i] -= lin_coef
    if moving:
        a_proj = PI * math.sqrt(proj_denom / proj_num)
        quad_coef = density * (a_proj * blunt + slender * (a_max - a_proj))
        c_area = (density * norm * (blunt - slender)
                  * PI / math.sqrt(proj_num * proj_num * proj_num * proj_denom))
        darea = (c_area * ea * x * (eb * yy * (ea - eb) + ec * zz * (ea - ec)),
                 c_area * eb * y * (ea * xx * (eb - ea) + ec * zz * (eb - ec)),
                 c_area * ec * z * (ea * xx * (ec - ea) + eb * yy * (ec - eb)))
        for i in range(3):
            for j in range(3):
                outer = vel[i] * vel[j] + (norm2 if i == j else 0.0)
                B[3 + i, 3 + j] += -quad_coef / norm * outer - vel[i] * darea[j]

    # angular drag w.r.t. w (mjd_viscous_torque)
    i_max = 8.0 / 15.0 * PI * d_mid * pow4(d_max)
    mom = (angdrag * max_moment(s0, s1, s2) + slender * (i_max - max_moment(s0, s1, s2)),
           angdrag * max_moment(s1, s2, s0) + slender * (i_max - max_moment(s1, s2, s0)),
           angdrag * max_moment(s2, s0, s1) + slender * (i_max - max_moment(s2, s0, s1)))
    ang = (w0, w1, w2)
    mv0, mv1, mv2 = w0 * mom[0], w1 * mom[1], w2 * mom[2]
    dens = density / max(MINVAL, math.sqrt(mv0 * mv0 + mv1 * mv1 + mv2 * mv2))
    sq = (-dens * w0 * mom[0] * mom[0], -dens * w1 * mom[1] * mom[1], -dens * w2 * mom[2] * mom[2])
    diag = w0 * sq[0] + w1 * sq[1] + w2 * sq[2] - viscosity * PI * eq_d * eq_d * eq_d
    for i in range(3):
        B[i, i] += diag
        for j in range(3):
            B[i, j] += ang[i] * sq[j]

    # added mass (mjd_addedMassForces): torque L x w + p x v, force p x w, with the virtual
    # momenta L = rho I_v w and p = rho m_v v
    ci0, ci1, ci2 = density * prm[9], density * prm[10], density * prm[11]
    cm0, cm1, cm2 = density * prm[6], density * prm[7], density * prm[8]
    h0, h1, h2 = ci0 * w0, ci1 * w1, ci2 * w2
    p0, p1, p2 = cm0 * x, cm1 * y, cm2 * z
    _add_dcross_db(B, 0, 0, h0, h1, h2)
    _add_dcross_da(B, 0, 0, w0, w1, w2, ci0, ci1, ci2)
    _add_dcross_db(B, 0, 3, p0, p1, p2)
    _add_dcross_da(B, 0, 3, x, y, z, cm0, cm1, cm2)
    _add_dcross_db(B, 3, 0, p0, p1, p2)
    _add_dcross_da(B, 3, 3, w0, w1, w2, cm0, cm1, cm2)


@kernel
def _term(m, d, b, g):
    """J (d.scratch_fluid_jac[0]), B (d.scratch_fluid_b) and B J (d.scratch_fluid_jac[1]) of one
    fluid term of body b: its inertia box (g = -1) or geom g's ellipsoid."""
    B = d.scratch_fluid_b
    for i in range(6):
        for j in range(6):
            B[i, j] = 0.0
    jac = d.scratch_fluid_jac[0]
    if g < 0:
        _local_jacobian(m, d, b, d.xipos[b], d.ximat[b], jac)
        _box_b(m, d, b, B)
    else:
        _local_jacobian(m, d, b, d.geom_xpos[g], d.geom_xmat[g], jac)
        _ellipsoid_b(m, d, b, g, B)
        # implicitfast gathers one triangle: MuJoCo symmetrises (mju_symmetrize), except on a lone
        # free body, which its local solve takes unsymmetric
        if m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST and not lone_free_body(m, b):
            for i in range(6):
                for j in range(i):
                    B[i, j] = B[j, i] = 0.5 * (B[i, j] + B[j, i])
    bj = d.scratch_fluid_jac[1]
    v = _chain_last(m, b)
    while v >= 0:
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += B[i, j] * jac[j, v]
            bj[i, v] = s
        v = m.dof_parentid[v]


@kernel(inline="always")
def _entry(d, r, c):
    """(J' B J)[r, c] of the current term."""
    jac = d.scratch_fluid_jac[0]
    bj = d.scratch_fluid_jac[1]
    s = 0.0
    for i in range(6):
        s += jac[i, r] * bj[i, c]
    return s


@kernel(inline="always")
def _term_count(m, b):
    """The terms of body b, as a geom range: (-1, 0) for its inertia box, else its geoms (those
    with geom_fluid[0] == 0 skipped by the caller); (0, 0) for a massless body (no fluid force)."""
    if m.body_mass[b] < MINVAL:
        return 0, 0
    if uses_ellipsoid(m, b):
        return m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]
    return -1, 0


@handle_entry(args="float64[:, ::1], float64, int64, int64, int64", needed=fluid_vel_needed)
def fluid_vel_entry(m, d, out, scale, off, b0, b1):
    """out[r - off, c - off] += scale d qfrc_fluid[r] / d qvel[c] from bodies b0 ... b1-1, for the
    dofs off <= r, c < off + n of the (n, n) ``out`` (MuJoCo's qDeriv fluid part)."""
    if not fluid_vel_active(m):
        return
    n = out.shape[0]
    for b in range(max(b0, 1), b1):
        g0, g1 = _term_count(m, b)
        for g in range(g0, g1):
            if g >= 0 and m.geom_fluid[g, 0] == 0.0:
                continue
            _term(m, d, b, g)
            r = _chain_last(m, b)
            while r >= 0:
                if off <= r < off + n:
                    c = _chain_last(m, b)
                    while c >= 0:
                        if off <= c < off + n:
                            out[r - off, c - off] += scale * _entry(d, r, c)
                        c = m.dof_parentid[c]
                r = m.dof_parentid[r]


@kernel
def add_fluid_vel(m, d, out, scale):
    """out (nv, nv) += scale d qfrc_fluid / d qvel: the fluid part of MuJoCo's qDeriv, as the
    model's integrator forms it (symmetrised blocks under implicitfast)."""
    if fluid_vel_active(m):
        fluid_vel_entry(m, d, out, scale, 0, 0, m.nbody)


@handle_entry(args="float64[::1], float64", needed=fluid_vel_needed)
def fluid_vel_m_entry(m, d, qh, scale):
    """qh += scale D_fluid on M's lower-triangle layout (implicitfast's gather), lone free bodies
    left out (their rows are reset to M, then solved locally with ``fluid_vel_entry``)."""
    if not fluid_vel_active(m):
        return
    for b in range(1, m.nbody):
        g0, g1 = _term_count(m, b)
        if g0 == g1 or lone_free_body(m, b):
            continue
        for g in range(g0, g1):
            if g >= 0 and m.geom_fluid[g, 0] == 0.0:
                continue
            _term(m, d, b, g)
            r = _chain_last(m, b)
            while r >= 0:
                for adr in range(m.M_rowadr[r], m.M_rowadr[r] + m.M_rownnz[r]):
                    qh[adr] += scale * _entry(d, r, m.M_colind[adr])
                r = m.dof_parentid[r]


_FLUID_VEL = FastEntry(fluid_vel_entry)


def fluid_qderiv(m, d, out=None) -> np.ndarray:
    """d qfrc_fluid / d qvel, (nv, nv): the fluid forces' part of MuJoCo's qDeriv at the state of
    the last ``forward`` (positions and velocities), as the model's integrator (implicit or
    implicitfast) forms it. ``out``: an optional (nv, nv) float64 array to write into (and return).

    Zero without a medium or with springs and dampers both disabled; other integrators raise
    ``ValueError`` (they take no velocity derivative).
    """
    check_model_data(m, d, "fluid_qderiv")
    if m.opt.integrator not in (INT_IMPLICIT, INT_IMPLICITFAST):
        raise ValueError("fluid_qderiv: qDeriv is formed by the implicit and implicitfast integrators only, "
                         f"the model's integrator is {m.opt.integrator}")
    shape = (m.nv, m.nv)
    out = np.zeros(shape) if out is None else out_array(out, "out", shape)
    out[:] = 0.0
    if fluid_vel_needed(m):
        _FLUID_VEL.call(m._ptr, d._ptr, out, 1.0, 0, 0, m.nbody)
    return out


# ---------------------------------------------------------------------------------------
# the position and velocity derivatives of the fluid forces, for the analytical transition derivatives


@kernel(inline="always")
def _row6(B, r, x):
    return B[r, 0] * x[0] + B[r, 1] * x[1] + B[r, 2] * x[2] + B[r, 3] * x[3] + B[r, 4] * x[4] + B[r, 5] * x[5]


@kernel(inline="always")
def _moved_torque(cdof, jac, j, i, w, fw):
    """d (S_i . W) / d q_j where dof j moves dof i's axis and the point the world wrench
    W = (T + rp x F, F) acts at: (S_j x S_i) . W + S_i,rot . (jacp_j x F)."""
    sx = cross_motion(row6(cdof, j), cdof, i)
    e = cross3((jac[0, j], jac[1, j], jac[2, j]), fw)
    return (sx[0] * w[0] + sx[1] * w[1] + sx[2] * w[2] + sx[3] * w[3] + sx[4] * w[4] + sx[5] * w[5]
            + cdof[i, 0] * e[0] + cdof[i, 1] * e[1] + cdof[i, 2] * e[2])


@kernel
def _term_partials(m, d, rhs, dof, b, last, p, R, t, f):
    """rhs[:, 0:2 nv] += one fluid term's d qfrc_fluid / d[q, v]: the local torque and force
    (t, f) at point p of body b in the frame R, B = d (t, f) / d l in d.scratch_fluid_b
    (``fluid_partials_entry``); ``last`` the last dof of b's chain."""
    nv = m.nv
    jac = d.scratch_fluid_jac[0]
    B = d.scratch_fluid_b
    wind = (m.opt_real[OPT_WIND], m.opt_real[OPT_WIND + 1], m.opt_real[OPT_WIND + 2])
    tw = _mat_vec(R, t[0], t[1], t[2])
    fw = _mat_vec(R, f[0], f[1], f[2])
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, p[0], p[1], p[2], b, jac[0:3], jac[3:6])
    o = d.subtree_com[m.body_rootid[b]]
    rp = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
    vb = row6(d.cvel, b)
    w = (vb[0], vb[1], vb[2])
    wr = cross3(w, rp)
    vrel = (vb[3] + wr[0] - wind[0], vb[4] + wr[1] - wind[1], vb[5] + wr[2] - wind[2])
    c = last
    while c >= 0:
        jp = (jac[0, c], jac[1, c], jac[2, c])
        jr = (jac[3, c], jac[4, c], jac[5, c])
        dw, dvp = point_velocity_dq(d.cdof, dof, c, vb, rp, jp)
        ew, ev = cross3(jr, w), cross3(jr, vrel)
        for q in range(2):
            if q == 0:
                lr = _mat_t_vec(R, dw[0] - ew[0], dw[1] - ew[1], dw[2] - ew[2])
                ll = _mat_t_vec(R, dvp[0] - ev[0], dvp[1] - ev[1], dvp[2] - ev[2])
            else:
                lr = _mat_t_vec(R, jr[0], jr[1], jr[2])
                ll = _mat_t_vec(R, jp[0], jp[1], jp[2])
            dl = (lr[0], lr[1], lr[2], ll[0], ll[1], ll[2])
            dt = _mat_vec(R, _row6(B, 0, dl), _row6(B, 1, dl), _row6(B, 2, dl))
            df = _mat_vec(R, _row6(B, 3, dl), _row6(B, 4, dl), _row6(B, 5, dl))
            if q == 0:
                at, af = cross3(jr, tw), cross3(jr, fw)
                dt = (dt[0] + at[0], dt[1] + at[1], dt[2] + at[2])
                df = (df[0] + af[0], df[1] + af[1], df[2] + af[2])
            col = c if q == 0 else nv + c
            i = last
            while i >= 0:
                rhs[i, col] += (jac[3, i] * dt[0] + jac[4, i] * dt[1] + jac[5, i] * dt[2]
                                + jac[0, i] * df[0] + jac[1, i] * df[1] + jac[2, i] * df[2])
                i = m.dof_parentid[i]
        c = m.dof_parentid[c]
    # the Jacobians' change at the world wrench held, W about o
    rf = cross3(rp, fw)
    wrench = (tw[0] + rf[0], tw[1] + rf[1], tw[2] + rf[2], fw[0], fw[1], fw[2])
    i = last
    while i >= 0:
        first, n, rot = dof_groups(m.jnt_type, m.dof_jntid, m.jnt_dofadr, i)
        j = i
        while j >= 0:
            rhs[i, j] += _moved_torque(d.cdof, jac, j, i, wrench, fw)
            if j != i:
                if rot and first <= j < first + n:
                    rhs[j, i] += _moved_torque(d.cdof, jac, i, j, wrench, fw)
                else:
                    # i moves the point, not j's axis
                    e = cross3((jac[0, i], jac[1, i], jac[2, i]), fw)
                    rhs[j, i] += d.cdof[j, 0] * e[0] + d.cdof[j, 1] * e[1] + d.cdof[j, 2] * e[2]
            j = m.dof_parentid[j]
        i = m.dof_parentid[i]


@handle_entry(args="float64[:, ::1]", needed=lambda m: m.opt.density != 0.0 or m.opt.viscosity != 0.0)
def fluid_partials_entry(m, d, rhs):
    """rhs[:, 0:2 nv] += d qfrc_fluid / d[qpos (tangent), qvel] (every body with mass: its inertia
    box, or its geoms' ellipsoids), for transition_derivatives.

    Each term is J_rot' T + J_pos' F, with (T, F) = R phi(l) a local torque and force
    (passive_fluid's inertia_box_local, ellipsoid_local times geom_fluid[0]) turned to the world
    and l = (R' w, R' (v_p - wind)) the local velocity at its point p. Along a velocity step
    dqd_c: dl = R' (jacr_c, jacp_c); along a tangent step of dof c moving the body:
    dl = R' (dw - jacr_c x w, dv_p - jacr_c x (v_p - wind)) (derivative_sensor.point_velocity_dq),
    and R turns, (dT, dF) += jacr_c x (T, F); each mapped by the Jacobians, with B = d phi / d l
    (``_box_b``, ``_ellipsoid_b``: the exact derivatives, which mjd_passive_vel uses). The
    Jacobians' own change at the world wrench held is that of gravcomp_partials_entry's:
    (S_j x S_i) . W + S_i,rot . (jacp_j x F) where j moves i's axis, S_i,rot . (jacp_j x F) where it
    does not."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    density, viscosity = m.opt_real[OPT_DENSITY], m.opt_real[OPT_VISCOSITY]
    if (flags & DSBL_SPRING and flags & DSBL_DAMPER) or (density == 0.0 and viscosity == 0.0):
        return
    dof = d.scratch_rne_dof
    rne_partials(m, d, d.qacc, False, d.scratch_rne_body, dof)
    B = d.scratch_fluid_b
    for b in range(1, m.nbody):
        last = _chain_last(m, b)
        if m.body_mass[b] < MINVAL or last < 0:
            continue
        if not uses_ellipsoid(m, b):
            for i in range(6):
                for j in range(6):
                    B[i, j] = 0.0
            _box_b(m, d, b, B)
            t0, t1, t2, f0, f1, f2 = inertia_box_local(m, d, b, density, viscosity)
            _term_partials(m, d, rhs, dof, b, last, d.xipos[b], d.ximat[b], (t0, t1, t2), (f0, f1, f2))
            continue
        for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]):
            scale = m.geom_fluid[g, 0]
            if scale == 0.0:
                continue
            for i in range(6):
                for j in range(6):
                    B[i, j] = 0.0
            _ellipsoid_b(m, d, b, g, B)
            for i in range(6):
                for j in range(6):
                    B[i, j] *= scale
            t0, t1, t2, f0, f1, f2 = ellipsoid_local(m, d, b, g, density, viscosity)
            _term_partials(m, d, rhs, dof, b, last, d.geom_xpos[g], d.geom_xmat[g],
                           (t0 * scale, t1 * scale, t2 * scale), (f0 * scale, f1 * scale, f2 * scale))
