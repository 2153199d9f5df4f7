"""Fluid forces: the body's motion through a medium of density ``opt.density``, viscosity
``opt.viscosity`` moving at ``opt.wind`` (mj_fluid, engine_passive.c).

Each body with mass gets one of two models, as MuJoCo picks them:

* **inertia box** (mj_inertiaBoxFluidModel), when none of the body's geoms has
  ``fluidshape="ellipsoid"``: the body is the box of uniform density with its inertia. In the
  inertial frame, with v and w the body's velocity relative to the wind,

      f = -3 pi D mu v  - rho/2 (b_y b_z |v_x| v_x, b_x b_z |v_y| v_y, b_x b_y |v_z| v_z)
      t = -pi D^3 mu w  - rho/64 (b_x (b_y^4 + b_z^4) |w_x| w_x, ...)

  (b the box's sides, D their mean), applied at the centre of mass;
* **ellipsoid** (mj_ellipsoidFluidModel), per geom with the model on, in the geom frame of the
  ellipsoid with the geom's semi-axes: added-mass forces (mj_addedMassForces, without the
  acceleration terms, as MuJoCo), Magnus and Kutta lift, and blunt, slender and angular drag
  (mj_viscousForces), scaled by ``geom_fluid[0]`` and applied at the geom centre. The
  coefficients are ``geom_fluid`` (:mod:`kinedyn.compiler.fluid`).

The result is ``qfrc_fluid``; :mod:`kinedyn.engine.passive` adds it to ``qfrc_passive``.
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.support import apply_ft
from kinedyn.engine.types import (
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_SPHERE,
    MINVAL,
    OPT_DENSITY,
    OPT_VISCOSITY,
    OPT_WIND,
)

PI = math.pi


@kernel(inline="always")
def _mat_t_vec(R, x, y, z):
    """R' (x, y, z) (mju_mulMatTVec3)."""
    return (R[0, 0] * x + R[1, 0] * y + R[2, 0] * z,
            R[0, 1] * x + R[1, 1] * y + R[2, 1] * z,
            R[0, 2] * x + R[1, 2] * y + R[2, 2] * z)


@kernel(inline="always")
def _mat_vec(R, x, y, z):
    """R (x, y, z) (mju_mulMatVec3)."""
    return (R[0, 0] * x + R[0, 1] * y + R[0, 2] * z,
            R[1, 0] * x + R[1, 1] * y + R[1, 2] * z,
            R[2, 0] * x + R[2, 1] * y + R[2, 2] * z)


@kernel(inline="always")
def frame_velocity(m, d, b, pos, R):
    """(angular, linear) velocity, in the frame (pos, R) attached to body b, of that frame
    relative to the wind: mj_objectVelocity(flg_local=1) minus R' wind."""
    root = m.body_rootid[b]
    c = d.cvel[b]
    dx = pos[0] - d.subtree_com[root, 0]
    dy = pos[1] - d.subtree_com[root, 1]
    dz = pos[2] - d.subtree_com[root, 2]
    # linear velocity at pos: cvel_lin - (pos - com) x cvel_rot
    lx = c[3] - (dy * c[2] - dz * c[1])
    ly = c[4] - (dz * c[0] - dx * c[2])
    lz = c[5] - (dx * c[1] - dy * c[0])
    w0, w1, w2 = _mat_t_vec(R, c[0], c[1], c[2])
    v0, v1, v2 = _mat_t_vec(R, lx, ly, lz)
    wind = m.opt_real
    u0, u1, u2 = _mat_t_vec(R, wind[OPT_WIND], wind[OPT_WIND + 1], wind[OPT_WIND + 2])
    return w0, w1, w2, v0 - u0, v1 - u1, v2 - u2


@kernel(inline="always")
def _apply_local(m, d, R, pos, b, t0, t1, t2, f0, f1, f2):
    """Rotate the local force and torque to the world and apply them at pos on body b."""
    tx, ty, tz = _mat_vec(R, t0, t1, t2)
    fx, fy, fz = _mat_vec(R, f0, f1, f2)
    apply_ft(m, d, fx, fy, fz, tx, ty, tz, pos[0], pos[1], pos[2], b, d.qfrc_fluid)


@kernel(inline="always")
def inertia_box_sides(m, b):
    """The sides of the box of uniform density with body b's mass and inertia (the inertia box)."""
    inertia = m.body_inertia[b]
    mass = m.body_mass[b]
    bx = math.sqrt(max(MINVAL, inertia[1] + inertia[2] - inertia[0]) / mass * 6.0)
    by = math.sqrt(max(MINVAL, inertia[0] + inertia[2] - inertia[1]) / mass * 6.0)
    bz = math.sqrt(max(MINVAL, inertia[0] + inertia[1] - inertia[2]) / mass * 6.0)
    return bx, by, bz


@kernel(inline="always")
def geom_semiaxes(m, g):
    """The semi-axes of the ellipsoid that stands for geom g (mju_geomSemiAxes)."""
    size = m.geom_size[g]
    gtype = m.geom_type[g]
    if gtype == GEOM_SPHERE:
        return size[0], size[0], size[0]
    if gtype == GEOM_CAPSULE:
        return size[0], size[0], size[1] + size[0]
    if gtype == GEOM_CYLINDER:
        return size[0], size[0], size[1]
    return size[0], size[1], size[2]


@kernel(inline="always")
def uses_ellipsoid(m, b):
    """Whether body b takes the ellipsoid model: one of its geoms has it on (geom_fluid[0] > 0);
    else the inertia box."""
    for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]):
        if m.geom_fluid[g, 0] > 0:
            return True
    return False


@kernel
def _inertia_box(m, d, b, density, viscosity):
    """mj_inertiaBoxFluidModel for body b."""
    t0, t1, t2, f0, f1, f2 = inertia_box_local(m, d, b, density, viscosity)
    _apply_local(m, d, d.ximat[b], d.xipos[b], b, t0, t1, t2, f0, f1, f2)


@kernel(inline="always")
def inertia_box_local(m, d, b, density, viscosity):
    """Body b's inertia-box torque and force in its inertial frame (mj_inertiaBoxFluidModel)."""
    bx, by, bz = inertia_box_sides(m, b)
    w0, w1, w2, v0, v1, v2 = frame_velocity(m, d, b, d.xipos[b], d.ximat[b])
    t0 = t1 = t2 = f0 = f1 = f2 = 0.0
    if viscosity > 0:
        diam = (bx + by + bz) / 3.0
        ang = -PI * diam * diam * diam * viscosity
        lin = -3.0 * PI * diam * viscosity
        t0, t1, t2 = w0 * ang, w1 * ang, w2 * ang
        f0, f1, f2 = v0 * lin, v1 * lin, v2 * lin
    if density > 0:
        f0 -= 0.5 * density * by * bz * abs(v0) * v0
        f1 -= 0.5 * density * bx * bz * abs(v1) * v1
        f2 -= 0.5 * density * bx * by * abs(v2) * v2
        bx4, by4, bz4 = bx * bx * bx * bx, by * by * by * by, bz * bz * bz * bz
        t0 -= density * bx * (by4 + bz4) * abs(w0) * w0 / 64.0
        t1 -= density * by * (bx4 + bz4) * abs(w1) * w1 / 64.0
        t2 -= density * bz * (bx4 + by4) * abs(w2) * w2 / 64.0
    return t0, t1, t2, f0, f1, f2


@kernel(inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel(inline="always")
def pow4(x):
    return (x * x) * (x * x)


@kernel(inline="always")
def max_moment(s0, s1, s2):
    """8/15 pi s0 max(s1, s2)^4: the largest moment of the ellipsoid about axis 0."""
    return 8.0 / 15.0 * PI * s0 * pow4(max(s1, s2))


@kernel
def _ellipsoid(m, d, b, density, viscosity):
    """mj_ellipsoidFluidModel for body b: every geom of b with the model on."""
    for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]):
        scale = m.geom_fluid[g, 0]
        if scale == 0.0:
            continue
        t0, t1, t2, f0, f1, f2 = ellipsoid_local(m, d, b, g, density, viscosity)
        _apply_local(m, d, d.geom_xmat[g], d.geom_xpos[g], b, t0 * scale, t1 * scale, t2 * scale,
                     f0 * scale, f1 * scale, f2 * scale)


@kernel(inline="always")
def ellipsoid_local(m, d, b, g, density, viscosity):
    """Geom g's ellipsoid torque and force in its frame, before the geom_fluid[0] scale
    (mj_ellipsoidFluidModel's terms)."""
    prm = m.geom_fluid[g]
    blunt, slender, angdrag, kutta, magnus = prm[1], prm[2], prm[3], prm[4], prm[5]
    s0, s1, s2 = geom_semiaxes(m, g)
    w0, w1, w2, v0, v1, v2 = frame_velocity(m, d, b, d.geom_xpos[g], d.geom_xmat[g])

    # added mass (mj_addedMassForces without accelerations): torques p x v + L x w, force p x w
    p0, p1, p2 = density * prm[6] * v0, density * prm[7] * v1, density * prm[8] * v2
    h0, h1, h2 = density * prm[9] * w0, density * prm[10] * w1, density * prm[11] * w2
    fa0, fa1, fa2 = _cross(p0, p1, p2, w0, w1, w2)
    ta0, ta1, ta2 = _cross(p0, p1, p2, v0, v1, v2)
    tb0, tb1, tb2 = _cross(h0, h1, h2, w0, w1, w2)
    t0, t1, t2 = ta0 + tb0, ta1 + tb1, ta2 + tb2
    f0, f1, f2 = fa0, fa1, fa2

    # lift and drag (mj_viscousForces)
    volume = 4.0 / 3.0 * PI * s0 * s1 * s2
    d_max = max(s0, s1, s2)
    d_min = min(s0, s1, s2)
    d_mid = s0 + s1 + s2 - d_max - d_min
    a_max = PI * d_max * d_mid
    mg = magnus * density * volume
    mg0, mg1, mg2 = _cross(w0, w1, w2, v0, v1, v2)
    mg0, mg1, mg2 = mg0 * mg, mg1 * mg, mg2 * mg
    # projected area along the velocity, and the cosine of the velocity with its normal
    proj_denom = (pow4(s1 * s2) * (v0 * v0) + pow4(s2 * s0) * (v1 * v1)
                  + pow4(s0 * s1) * (v2 * v2))
    q0, q1, q2 = s1 * s2 * v0, s2 * s0 * v1, s0 * s1 * v2
    proj_num = q0 * q0 + q1 * q1 + q2 * q2
    a_proj = PI * math.sqrt(proj_denom / max(MINVAL, proj_num))
    e0, e1, e2 = s1 * s2, s2 * s0, s0 * s1
    n0, n1, n2 = (e0 * e0) * v0, (e1 * e1) * v1, (e2 * e2) * v2
    speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    cos_alpha = proj_num / max(MINVAL, speed * proj_denom)
    kc = kutta * density * cos_alpha * a_proj
    k0, k1, k2 = _cross(n0, n1, n2, v0, v1, v2)
    k0, k1, k2 = _cross(k0 * kc, k1 * kc, k2 * kc, v0, v1, v2)
    # Stokes drag of the equivalent sphere, quadratic drag
    eq_d = 2.0 / 3.0 * (s0 + s1 + s2)
    lin_visc = 3.0 * PI * eq_d
    ang_visc = PI * eq_d * eq_d * eq_d
    i_max = 8.0 / 15.0 * PI * d_mid * pow4(d_max)
    i0, i1, i2 = max_moment(s0, s1, s2), max_moment(s1, s2, s0), max_moment(s2, s0, s1)
    m0 = w0 * (angdrag * i0 + slender * (i_max - i0))
    m1 = w1 * (angdrag * i1 + slender * (i_max - i1))
    m2 = w2 * (angdrag * i2 + slender * (i_max - i2))
    drag_lin = (viscosity * lin_visc
                + density * speed * (a_proj * blunt + slender * (a_max - a_proj)))
    drag_ang = viscosity * ang_visc + density * math.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    t0 -= drag_ang * w0
    t1 -= drag_ang * w1
    t2 -= drag_ang * w2
    f0 += mg0 + k0 - drag_lin * v0
    f1 += mg1 + k1 - drag_lin * v1
    f2 += mg2 + k2 - drag_lin * v2
    return t0, t1, t2, f0, f1, f2


@kernel
def fluid(m, d):
    """qfrc_fluid (zeroed first); whether the medium has density or viscosity (mj_fluid)."""
    for v in range(m.nv):
        d.qfrc_fluid[v] = 0.0
    if m.opt_real[OPT_DENSITY] == 0.0 and m.opt_real[OPT_VISCOSITY] == 0.0:
        return False
    fluid_forces(m, d)
    return True


# a unit of its own: compiled only for models in a medium
@handle_entry(needed=lambda m: m.opt.density != 0.0 or m.opt.viscosity != 0.0)
def fluid_forces(m, d):
    """Every body's fluid force, by the ellipsoid model if one of its geoms has fluid shape
    parameters (geom_fluid), else by the inertia box."""
    density = m.opt_real[OPT_DENSITY]
    viscosity = m.opt_real[OPT_VISCOSITY]
    for b in range(m.body_mass.shape[0]):
        if m.body_mass[b] < MINVAL:
            continue
        if uses_ellipsoid(m, b):
            _ellipsoid(m, d, b, density, viscosity)
        else:
            _inertia_box(m, d, b, density, viscosity)
