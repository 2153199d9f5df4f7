"""Body accelerations and forces after the constraint solver (mj_rnePostConstraint, engine_core_smooth.c).

With the acceleration qacc known (after ``forward``, or the one given to ``inverse``), a
recursive Newton-Euler pass gives every body's com-based acceleration and the force its
parent exerts on it:

    cacc[world] = -gravity,   cacc[b] = cacc[parent] + sum_dofs (cdof_dot qvel + cdof qacc)
    cfrc_int[b] = cinert cacc + cvel x* (cinert cvel) - cfrc_ext[b]    (then summed up the tree,
                                                                         the world included)

``cfrc_ext`` holds the forces applied to bodies from outside the joint tree, each as
[torque; force] about subtree_com of the body's root, world-oriented:

* xfrc_applied, acting at the body's com;
* connect and weld constraints: the force of the three translational rows at the anchor on
  each body (+ on body 1, - on body 2) and, for a weld, the world torque of its rotational
  rows, 0.5 torquescale R(q2) (e_w f + e_v x f) with e = conj(q2) q1 the orientation error
  (the torque whose virtual work matches the rows' Jacobian; MuJoCo 4.0 since 3.14);
* spatial tendons (MuJoCo 4.0 since 3.14): the tendon's force, the sum of its spring,
  damper, actuator, limit, friction-loss and equality forces, pulls along each straight part
  of the path whose ends move with different bodies (scaled by the pulley divisor);
* contacts with rows: the net contact force and torque (mj_contactForce, in the contact frame,
  turned to the world) act at the contact point, on geom[1]'s body and opposite on geom[0]'s.

Joint limits, dof friction loss, joint equalities and fixed tendons act in joint space: they
reach the bodies through qacc (in cfrc_int), not through cfrc_ext.
"""

from __future__ import annotations

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.collision_driver import contact_force_kernel
from kinedyn.engine.constraint import _weld_quats, equality_anchors
from kinedyn.engine.passive_plastic import tendon_deadband
from kinedyn.engine.smooth_rne import _rne_body, _rne_world
from kinedyn.engine.smooth_tendon import _normalize3
from kinedyn.engine.types import (
    CNSTR_EQUALITY,
    CNSTR_FRICTION_TENDON,
    CNSTR_LIMIT_TENDON,
    COUNT_NCON,
    COUNT_NE,
    COUNT_NEFC,
    DSBL_DAMPER,
    DSBL_SPRING,
    EQ_CONNECT,
    EQ_TENDON,
    EQ_WELD,
    OPT_DISABLEFLAGS,
    TRN_TENDON,
    WRAP_CYLINDER,
    WRAP_JOINT,
    WRAP_PULLEY,
    WRAP_SPHERE,
)
from kinedyn.engine.util_poly import poly_force, tendon_damping_poly
from kinedyn.engine.util_spatial import quat_product, rotated_by_quat, row6


@kernel
def _apply(m, d, b, sign, tx, ty, tz, fx, fy, fz, px, py, pz):
    """cfrc_ext[b] += sign * (torque t, force f acting at world point p), moved to subtree_com of
    b's root (mju_transformSpatial: the torque about the new point is t - (new - p) x f)."""
    c = d.subtree_com[m.body_rootid[b]]
    dx, dy, dz = c[0] - px, c[1] - py, c[2] - pz
    e = d.cfrc_ext
    e[b, 0] += sign * (tx - (dy * fz - dz * fy))
    e[b, 1] += sign * (ty - (dz * fx - dx * fz))
    e[b, 2] += sign * (tz - (dx * fy - dy * fx))
    e[b, 3] += sign * fx
    e[b, 4] += sign * fy
    e[b, 5] += sign * fz


@kernel
def _contact_forces(m, d):
    """cfrc_ext += each contact's force: - on geom[0]'s body, + on geom[1]'s, at the contact point."""
    lf = d.scratch_contact_force
    for i in range(d.efc_counts[COUNT_NCON]):
        if d.contact_efc_address[i] < 0:
            continue
        contact_force_kernel(m, d, i, lf)
        fr = d.contact_frame[i]
        # world-oriented: frame' (local force), frame' (local torque)
        fx = fr[0, 0] * lf[0] + fr[1, 0] * lf[1] + fr[2, 0] * lf[2]
        fy = fr[0, 1] * lf[0] + fr[1, 1] * lf[1] + fr[2, 1] * lf[2]
        fz = fr[0, 2] * lf[0] + fr[1, 2] * lf[1] + fr[2, 2] * lf[2]
        tx = fr[0, 0] * lf[3] + fr[1, 0] * lf[4] + fr[2, 0] * lf[5]
        ty = fr[0, 1] * lf[3] + fr[1, 1] * lf[4] + fr[2, 1] * lf[5]
        tz = fr[0, 2] * lf[3] + fr[1, 2] * lf[4] + fr[2, 2] * lf[5]
        px, py, pz = d.contact_pos[i, 0], d.contact_pos[i, 1], d.contact_pos[i, 2]
        b0 = m.geom_bodyid[d.contact_geom[i, 0]]
        b1 = m.geom_bodyid[d.contact_geom[i, 1]]
        if b0 != 0:
            _apply(m, d, b0, -1.0, tx, ty, tz, fx, fy, fz, px, py, pz)
        if b1 != 0:
            _apply(m, d, b1, 1.0, tx, ty, tz, fx, fy, fz, px, py, pz)


@kernel
def _equality_forces(m, d):
    """cfrc_ext += the forces of the connect and weld rows on their two bodies."""
    ne = d.efc_counts[COUNT_NE]
    f = d.efc_force
    r = 0
    while r < ne:
        i = d.efc_id[r]
        et = m.eq_type[i]
        if et != EQ_CONNECT and et != EQ_WELD:
            r += 1
            continue
        p1x, p1y, p1z, p2x, p2y, p2z, b1, b2 = equality_anchors(m, d, i)
        tx, ty, tz = 0.0, 0.0, 0.0
        if et == EQ_WELD:
            # the rotational rows are 0.5 ts vec(conj(q2) (0, w) q1): the world torque doing the same
            # work on w is 0.5 ts R(q2) (e_w f + e_v x f), e = conj(q2) q1
            ts = m.eq_data[i, 10]
            qw, qx, qy, qz, cw, cx, cy, cz = _weld_quats(m, d, i, b1, b2)
            ew, ex, ey, ez = quat_product(cw, cx, cy, cz, qw, qx, qy, qz)
            f0, f1, f2 = f[r + 3], f[r + 4], f[r + 5]
            vx = ew * f0 + (ey * f2 - ez * f1)
            vy = ew * f1 + (ez * f0 - ex * f2)
            vz = ew * f2 + (ex * f1 - ey * f0)
            tx, ty, tz = rotated_by_quat(vx, vy, vz, cw, -cx, -cy, -cz)
            tx, ty, tz = 0.5 * ts * tx, 0.5 * ts * ty, 0.5 * ts * tz
        if b1 != 0:
            _apply(m, d, b1, 1.0, tx, ty, tz, f[r], f[r + 1], f[r + 2], p1x, p1y, p1z)
        if b2 != 0:
            _apply(m, d, b2, -1.0, tx, ty, tz, f[r], f[r + 1], f[r + 2], p2x, p2y, p2z)
        r += 6 if et == EQ_WELD else 3


@kernel
def _tendon_force(m, d, t):
    """The scalar force of tendon t (positive pushes, negative pulls): spring and damper (with
    their polynomial terms and the actuators' damping: smooth_tendon.tendon_passive_kernel), the
    actuators acting on it, and its limit, friction-loss and equality rows."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    force = 0.0
    if not flags & DSBL_SPRING:
        length = d.ten_length[t]
        lower, upper = tendon_deadband(m.tendon_plasticadr, d.plastic, m.tendon_lengthspring, t)
        x = length - upper if length > upper else (length - lower if length < lower else 0.0)
        force -= x * poly_force(m.tendon_stiffness[t], m.tendon_stiffnesspoly[t, 0],
                                m.tendon_stiffnesspoly[t, 1], x, False)
    if not flags & DSBL_DAMPER:
        damping, p0, p1 = tendon_damping_poly(m, t)
        vel = d.ten_velocity[t]
        force -= vel * poly_force(damping, p0, p1, vel, True)
    for i in range(m.nactuator):
        if m.actuator_trntype[i] == TRN_TENDON and m.actuator_trnid[i, 0] == t:
            force += m.actuator_gear[i, 0] * d.actuator_force[i]
    nv = m.nv
    for r in range(d.efc_counts[COUNT_NEFC]):
        ctype = d.efc_type[r]
        cid = d.efc_id[r]
        if ctype == CNSTR_FRICTION_TENDON and cid == t:
            force += d.efc_force[r]
        elif ctype == CNSTR_LIMIT_TENDON and cid == t:
            # the row is +-ten_J (lower or upper side): its sign is that of J . ten_J
            s = 0.0
            for v in range(nv):
                s += d.efc_J[r, v] * d.ten_J[t, v]
            force += d.efc_force[r] if s > 0.0 else -d.efc_force[r]
        elif ctype == CNSTR_EQUALITY and m.eq_type[cid] == EQ_TENDON:
            # the row is ten_J[obj1] - poly'(x) ten_J[obj2], x = the length change of obj2
            if m.eq_obj1id[cid] == t:
                force += d.efc_force[r]
            o2 = m.eq_obj2id[cid]
            if o2 == t:
                c = m.eq_data
                x = d.ten_length[o2] - m.tendon_length0[o2]
                deriv = c[cid, 1] + 2 * c[cid, 2] * x + 3 * c[cid, 3] * x * x + 4 * c[cid, 4] * x * x * x
                force -= deriv * d.efc_force[r]
    return force


@kernel
def _pull(m, d, scale, b0, ax, ay, az, b1, bx, by, bz):
    """A straight part of a tendon path from a (on body b0) to b (on b1) carrying force ``scale``:
    b1 gets scale u at b, b0 gets -scale u at a, u the unit vector from a to b."""
    if b0 == b1:
        return
    ux, uy, uz, _ = _normalize3(bx - ax, by - ay, bz - az)
    fx, fy, fz = scale * ux, scale * uy, scale * uz
    if b1 != 0:
        _apply(m, d, b1, 1.0, 0.0, 0.0, 0.0, fx, fy, fz, bx, by, bz)
    if b0 != 0:
        _apply(m, d, b0, -1.0, 0.0, 0.0, 0.0, fx, fy, fz, ax, ay, az)


@kernel
def _tendon_forces(m, d):
    """cfrc_ext += each spatial tendon's force on the bodies along its path.

    The path is walked as mj_tendon cuts it (smooth_tendon._tendon): pieces site -> site or
    site -> geom -> site, a pulley setting the divisor of the pieces after it; a wrapped piece's
    tangent points (wrap_xpos, marked with the geom) ride on the geom's body."""
    for t in range(m.ntendon):
        adr = m.tendon_adr[t]
        num = m.tendon_num[t]
        if num == 0 or m.wrap_type[adr] == WRAP_JOINT:
            continue
        force = _tendon_force(m, d, t)
        if force == 0.0:
            continue
        pts = d.wrap_xpos
        objs = d.wrap_obj
        p = d.ten_wrapadr[t]   # the path point of the current piece's start
        divisor = 1.0
        j = 0
        while j < num - 1:
            type0 = m.wrap_type[adr + j]
            type1 = m.wrap_type[adr + j + 1]
            if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                if type0 == WRAP_PULLEY:
                    divisor = m.wrap_prm[adr + j]
                    p += 1
                j += 1
                continue
            s0 = m.wrap_objid[adr + j]
            s1 = m.wrap_objid[adr + j + 1]
            geom = -1
            if type1 == WRAP_SPHERE or type1 == WRAP_CYLINDER:
                geom = s1
                s1 = m.wrap_objid[adr + j + 2]
            scale = force / divisor
            sb0 = m.site_bodyid[s0]
            sb1 = m.site_bodyid[s1]
            a = d.site_xpos[s0]
            e = d.site_xpos[s1]
            # did the piece wrap? then its next two path points are the tangent points on the geom
            q = p + 1
            if geom >= 0 and objs[q >> 1, q & 1] == geom:
                gb = m.geom_bodyid[geom]
                t0 = pts[q >> 1, q & 1]
                q1 = q + 1
                t1 = pts[q1 >> 1, q1 & 1]
                _pull(m, d, scale, sb0, a[0], a[1], a[2], gb, t0[0], t0[1], t0[2])
                _pull(m, d, scale, gb, t1[0], t1[1], t1[2], sb1, e[0], e[1], e[2])
                p += 3
            else:
                _pull(m, d, scale, sb0, a[0], a[1], a[2], sb1, e[0], e[1], e[2])
                p += 1
            j += 2 if geom >= 0 else 1
            # the end site is a path point of its own before a pulley or at the end of the path
            if j == num - 1 or m.wrap_type[adr + j + 1] == WRAP_PULLEY:
                p += 1


@handle_entry
def rne_post_constraint_entry(m, d):
    nbody = m.nbody
    ext = d.cfrc_ext
    for b in range(nbody):
        for k in range(6):
            ext[b, k] = 0.0
    # applied forces: [torque; force] at the com
    for b in range(1, nbody):
        x = d.xfrc_applied[b]
        if x[0] != 0.0 or x[1] != 0.0 or x[2] != 0.0 or x[3] != 0.0 or x[4] != 0.0 or x[5] != 0.0:
            _apply(m, d, b, 1.0, x[3], x[4], x[5], x[0], x[1], x[2], d.xipos[b, 0], d.xipos[b, 1],
                   d.xipos[b, 2])
    _contact_forces(m, d)
    _equality_forces(m, d)
    _tendon_forces(m, d)
    # forward pass: cacc, and cfrc_int = cinert cacc + cvel x* (cinert cvel) - cfrc_ext
    _rne_world(m.opt_gravity, m.opt_flags[OPT_DISABLEFLAGS], d.cacc)
    cint = d.cfrc_int
    for k in range(6):
        cint[0, k] = 0.0
    for b in range(1, nbody):
        _rne_body(b, m.body_parentid, m.body_dofnum, m.body_dofadr, d.qvel, d.qacc, d.cdof, d.cdof_dot,
                  d.cinert, row6(d.cvel, b), True, d.cacc, cint)
        for k in range(6):
            cint[b, k] -= ext[b, k]
    # backward pass: the children's forces go to the parents, the world included
    for b in range(nbody - 1, 0, -1):
        p = m.body_parentid[b]
        for k in range(6):
            cint[p, k] += cint[b, k]


_RNE_POST = FastEntry(rne_post_constraint_entry)


def rne_post_constraint(m, d) -> None:
    """Body accelerations and forces with the constraint forces known (mj_rnePostConstraint).

    Reads: the position and velocity fields, qacc, xfrc_applied, actuator_force and the
    constraint rows and forces (run ``forward``, or ``inverse`` for a given qacc, first).
    Writes: cacc, cfrc_int, cfrc_ext (see the module docstring). forward does not compute
    them (MuJoCo computes them for acceleration-stage sensors or on this request).
    """
    check_model_data(m, d, "rne_post_constraint")
    _RNE_POST.call(m._ptr, d._ptr)
