"""Sensors and energy (mj_sensorPos, mj_sensorVel, mj_sensorAcc, mj_energyPos, mj_energyVel,
engine_sensor.c; mj_subtreeVel, engine_core_smooth.c).

Each sensor writes ``sensor_dim[i]`` numbers at ``sensordata[sensor_adr[i]]`` in the stage it
needs (``sensor_needstage``): ``forward`` runs the position sensors right after the position
stage, the velocity sensors after the velocity stage and the acceleration sensors after the
constraint solver, as mj_forward. Quantities that only sensors need are computed on demand
and flagged, as MuJoCo's lazy evaluation:

* ``subtree_linvel``, ``subtree_angmom`` (mj_subtreeVel) for the subtree velocity sensors;
* ``cacc``, ``cfrc_int``, ``cfrc_ext`` (``rne_post_constraint``) for accelerometer, force,
  torque and the frame acceleration sensors;
* ``energy`` (potential, kinetic) for the energy sensors, and every forward with
  ``EnableBit.ENERGY``; zero otherwise, as MuJoCo's.

A positive ``sensor_cutoff`` clamps real outputs to [-cutoff, cutoff] and positive ones to at
most cutoff (not the contact sensor's). ``sensor_noise`` is stored and never added: MuJoCo does
not add noise either. User sensors read zero (MuJoCo's value without a ``mjcb_sensor``).

A sensor with a history buffer (MuJoCo 4.0's ``nsample``, ``delay``, ``interval``) may read its
value from the buffer instead (compute_or_read_sensor); ``step`` stores its samples
(:func:`advance_sensor_history`, in mj_advance). The buffers are engine.history's.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import call_rebinding, check_model_data
from kinedyn.engine.collision_driver import INTO_SENSOR_SCRATCH, collide_into, contact_force_kernel
from kinedyn.engine.history import has_sensor_history, history_insert_dim, read_sensor_kernel
from kinedyn.engine.passive_plastic import spring_ref, tendon_deadband
from kinedyn.engine.ray import rangefinder_kernel, ray_geom
from kinedyn.engine.rne_post import rne_post_constraint_entry
from kinedyn.engine.types import (
    CNSTR_LIMIT_JOINT,
    CNSTR_LIMIT_TENDON,
    COUNT_NCON,
    DSBL_GRAVITY,
    DSBL_SPRING,
    GEOM_BOX,
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_ELLIPSOID,
    GEOM_PLANE,
    GEOM_SPHERE,
    JNT_BALL,
    JNT_FREE,
    MINVAL,
    OPT_DISABLEFLAGS,
    OPT_ENABLEFLAGS,
    TRN_TENDON,
    DisableBit,
    EnableBit,
    ObjType,
    SensorType,
)
from kinedyn.engine.util_poly import poly_potential
from kinedyn.engine.util_spatial import quat_product

ENBL_ENERGY = int(EnableBit.ENERGY)
DSBL_SENSOR = int(DisableBit.SENSOR)
OBJ_UNKNOWN, OBJ_BODY, OBJ_XBODY = int(ObjType.UNKNOWN), int(ObjType.BODY), int(ObjType.XBODY)
OBJ_GEOM, OBJ_SITE, OBJ_CAMERA = int(ObjType.GEOM), int(ObjType.SITE), int(ObjType.CAMERA)
STAGE_POS, STAGE_VEL, STAGE_ACC = 1, 2, 3
DATATYPE_REAL, DATATYPE_POSITIVE = 0, 1
# scratch_sensor_flags: what was computed on demand since its stage began (MuJoCo's flg_*)
FLG_ENERGYPOS, FLG_ENERGYVEL, FLG_SUBTREEVEL, FLG_RNEPOST = 0, 1, 2, 3
# contact sensor: data bits (mjtConData), reductions
CON_FOUND, CON_FORCE, CON_TORQUE, CON_DIST, CON_POS, CON_NORMAL, CON_TANGENT = 0, 1, 2, 3, 4, 5, 6
CON_LINVEL, CON_ANGVEL = 7, 8
REDUCE_NONE, REDUCE_MINDIST, REDUCE_MAXFORCE, REDUCE_NETFORCE = 0, 1, 2, 3

_T = SensorType
TOUCH, ACCELEROMETER = int(_T.TOUCH), int(_T.ACCELEROMETER)
VELOCIMETER, GYRO = int(_T.VELOCIMETER), int(_T.GYRO)
FORCE, TORQUE, MAGNETOMETER = int(_T.FORCE), int(_T.TORQUE), int(_T.MAGNETOMETER)
JOINTPOS, JOINTVEL = int(_T.JOINTPOS), int(_T.JOINTVEL)
TENDONPOS, TENDONVEL = int(_T.TENDONPOS), int(_T.TENDONVEL)
ACTUATORPOS, ACTUATORVEL, ACTUATORFRC = int(_T.ACTUATORPOS), int(_T.ACTUATORVEL), int(_T.ACTUATORFRC)
JOINTACTFRC, TENDONACTFRC = int(_T.JOINTACTFRC), int(_T.TENDONACTFRC)
BALLQUAT, BALLANGVEL = int(_T.BALLQUAT), int(_T.BALLANGVEL)
JOINTLIMITPOS, JOINTLIMITVEL = int(_T.JOINTLIMITPOS), int(_T.JOINTLIMITVEL)
JOINTLIMITFRC = int(_T.JOINTLIMITFRC)
TENDONLIMITPOS, TENDONLIMITVEL = int(_T.TENDONLIMITPOS), int(_T.TENDONLIMITVEL)
TENDONLIMITFRC = int(_T.TENDONLIMITFRC)
FRAMEPOS, FRAMEQUAT = int(_T.FRAMEPOS), int(_T.FRAMEQUAT)
FRAMEXAXIS, FRAMEYAXIS, FRAMEZAXIS = int(_T.FRAMEXAXIS), int(_T.FRAMEYAXIS), int(_T.FRAMEZAXIS)
FRAMELINVEL, FRAMEANGVEL = int(_T.FRAMELINVEL), int(_T.FRAMEANGVEL)
FRAMELINACC, FRAMEANGACC = int(_T.FRAMELINACC), int(_T.FRAMEANGACC)
SUBTREECOM, SUBTREELINVEL, SUBTREEANGMOM = int(_T.SUBTREECOM), int(_T.SUBTREELINVEL), int(_T.SUBTREEANGMOM)
INSIDESITE, CONTACT, CAMPROJECTION = int(_T.INSIDESITE), int(_T.CONTACT), int(_T.CAMPROJECTION)
GEOMDIST, GEOMNORMAL, GEOMFROMTO = int(_T.GEOMDIST), int(_T.GEOMNORMAL), int(_T.GEOMFROMTO)
E_POTENTIAL, E_KINETIC, CLOCK, USER = int(_T.E_POTENTIAL), int(_T.E_KINETIC), int(_T.CLOCK), int(_T.USER)
RANGEFINDER = int(_T.RANGEFINDER)


# ---- frames ---------------------------------------------------------------------------------------


@kernel
def _frame(m, d, objtype, objid):
    """Position and orientation (row-major) of an object with a spatial frame (get_xpos_xmat):
    BODY is the inertial frame, XBODY the body frame."""
    if objtype == OBJ_BODY:
        p, r = d.xipos[objid], d.ximat[objid]
    elif objtype == OBJ_XBODY:
        p, r = d.xpos[objid], d.xmat[objid]
    elif objtype == OBJ_GEOM:
        p, r = d.geom_xpos[objid], d.geom_xmat[objid]
    elif objtype == OBJ_CAMERA:
        p, r = d.cam_xpos[objid], d.cam_xmat[objid]
    else:
        p, r = d.site_xpos[objid], d.site_xmat[objid]
    return (p[0], p[1], p[2], r[0, 0], r[0, 1], r[0, 2], r[1, 0], r[1, 1], r[1, 2], r[2, 0], r[2, 1], r[2, 2])


@kernel
def _frame_quat(m, d, objtype, objid):
    """World orientation quaternion of an object (get_xquat)."""
    if objtype == OBJ_XBODY:
        q = d.xquat[objid]
        return q[0], q[1], q[2], q[3]
    if objtype == OBJ_BODY:
        b, lq = objid, m.body_iquat[objid]
    elif objtype == OBJ_GEOM:
        b, lq = m.geom_bodyid[objid], m.geom_quat[objid]
    elif objtype == OBJ_CAMERA:
        b, lq = m.cam_bodyid[objid], m.cam_quat[objid]
    else:
        b, lq = m.site_bodyid[objid], m.site_quat[objid]
    q = d.xquat[b]
    return quat_product(q[0], q[1], q[2], q[3], lq[0], lq[1], lq[2], lq[3])


@kernel
def _frame_body(m, objtype, objid):
    if objtype == OBJ_BODY or objtype == OBJ_XBODY:
        return objid
    if objtype == OBJ_GEOM:
        return m.geom_bodyid[objid]
    if objtype == OBJ_CAMERA:
        return m.cam_bodyid[objid]
    return m.site_bodyid[objid]


@kernel
def _mat_t_vec(f, x, y, z):
    """R' v for the orientation R in _frame's tuple f."""
    return (f[3] * x + f[6] * y + f[9] * z,
            f[4] * x + f[7] * y + f[10] * z,
            f[5] * x + f[8] * y + f[11] * z)


@kernel
def _cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@kernel
def _motion_at(m, d, vec, b, px, py, pz):
    """A com-based motion vector of body b ([rot; lin] about subtree_com of its root) moved to the
    point p, world-oriented (mju_transformSpatial, flg_force 0): lin - (p - c) x rot."""
    c = d.subtree_com[m.body_rootid[b]]
    dx, dy, dz = px - c[0], py - c[1], pz - c[2]
    cx, cy, cz = _cross(dx, dy, dz, vec[b, 0], vec[b, 1], vec[b, 2])
    return vec[b, 0], vec[b, 1], vec[b, 2], vec[b, 3] - cx, vec[b, 4] - cy, vec[b, 5] - cz


@kernel
def _object_velocity(m, d, objtype, objid, local):
    """6D velocity [rot; lin] of an object at its frame origin, world- or frame-oriented
    (mj_objectVelocity)."""
    b = _frame_body(m, objtype, objid)
    if m.body_dofnum[m.body_weldid[b]] == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    f = _frame(m, d, objtype, objid)
    wx, wy, wz, vx, vy, vz = _motion_at(m, d, d.cvel, b, f[0], f[1], f[2])
    if local:
        wx, wy, wz = _mat_t_vec(f, wx, wy, wz)
        vx, vy, vz = _mat_t_vec(f, vx, vy, vz)
    return wx, wy, wz, vx, vy, vz


@kernel
def _object_acceleration(m, d, objtype, objid, local):
    """6D acceleration [rot; lin] of an object at its frame origin with the Coriolis correction
    w x v (mj_objectAcceleration); reads cacc (rne_post_constraint). Unlike the velocity, MuJoCo
    4.0 has no shortcut for dof-less bodies (static or mocap): their cacc is the world's,
    -gravity, so an accelerometer on them reads +g (the 2026 dev source returned zeros)."""
    b = _frame_body(m, objtype, objid)
    f = _frame(m, d, objtype, objid)
    ax, ay, az, lx, ly, lz = _motion_at(m, d, d.cacc, b, f[0], f[1], f[2])
    wx, wy, wz, vx, vy, vz = _motion_at(m, d, d.cvel, b, f[0], f[1], f[2])
    if local:
        ax, ay, az = _mat_t_vec(f, ax, ay, az)
        lx, ly, lz = _mat_t_vec(f, lx, ly, lz)
        wx, wy, wz = _mat_t_vec(f, wx, wy, wz)
        vx, vy, vz = _mat_t_vec(f, vx, vy, vz)
    cx, cy, cz = _cross(wx, wy, wz, vx, vy, vz)
    return ax, ay, az, lx + cx, ly + cy, lz + cz


# ---- geometry: is a point inside a site ---------------------------------------


@kernel
def inside_geom(pos, mat, size, gtype, px, py, pz):
    """Whether the point p is inside a primitive of type gtype at pos, mat (mju_insideGeom)."""
    vx, vy, vz = px - pos[0], py - pos[1], pz - pos[2]
    if gtype == GEOM_SPHERE:
        return vx * vx + vy * vy + vz * vz < size[0] * size[0]
    x = mat[0, 0] * vx + mat[1, 0] * vy + mat[2, 0] * vz
    y = mat[0, 1] * vx + mat[1, 1] * vy + mat[2, 1] * vz
    z = mat[0, 2] * vx + mat[1, 2] * vy + mat[2, 2] * vz
    if gtype == GEOM_CAPSULE:
        zc = min(max(z, -size[1]), size[1])
        return x * x + y * y + (z - zc) * (z - zc) < size[0] * size[0]
    if gtype == GEOM_ELLIPSOID:
        return x * x / (size[0] * size[0]) + y * y / (size[1] * size[1]) + z * z / (size[2] * size[2]) < 1
    if gtype == GEOM_CYLINDER:
        return abs(z) < size[1] and x * x + y * y < size[0] * size[0]
    if gtype == GEOM_BOX:
        return abs(x) < size[0] and abs(y) < size[1] and abs(z) < size[2]
    if gtype == GEOM_PLANE:
        return z < 0
    return False


# ---- on-demand quantities ---------------------------------------------------------------------------


@kernel
def subtree_vel_kernel(m, d):
    """subtree_linvel (velocity of each subtree's com) and subtree_angmom (angular momentum of
    each subtree about its com), mj_subtreeVel."""
    nbody = m.nbody
    lin, ang, bvel = d.subtree_linvel, d.subtree_angmom, d.scratch_subtree
    for b in range(nbody):
        w = _object_velocity(m, d, OBJ_BODY, b, False)
        for k in range(6):
            bvel[b, k] = w[k]
        mass = m.body_mass[b]
        lin[b, 0], lin[b, 1], lin[b, 2] = w[3] * mass, w[4] * mass, w[5] * mass
        r = d.ximat[b]
        # body angular momentum: R diag(inertia) R' w
        lx = (r[0, 0] * w[0] + r[1, 0] * w[1] + r[2, 0] * w[2]) * m.body_inertia[b, 0]
        ly = (r[0, 1] * w[0] + r[1, 1] * w[1] + r[2, 1] * w[2]) * m.body_inertia[b, 1]
        lz = (r[0, 2] * w[0] + r[1, 2] * w[1] + r[2, 2] * w[2]) * m.body_inertia[b, 2]
        for k in range(3):
            ang[b, k] = r[k, 0] * lx + r[k, 1] * ly + r[k, 2] * lz
    for b in range(nbody - 1, -1, -1):
        if b:
            p = m.body_parentid[b]
            for k in range(3):
                lin[p, k] += lin[b, k]
        s = 1.0 / max(MINVAL, m.body_subtreemass[b])
        for k in range(3):
            lin[b, k] *= s
    for b in range(nbody - 1, 0, -1):
        p = m.body_parentid[b]
        mass = m.body_mass[b]
        # momentum about the subtree com of the body's own motion
        dx = d.xipos[b, 0] - d.subtree_com[b, 0]
        dy = d.xipos[b, 1] - d.subtree_com[b, 1]
        dz = d.xipos[b, 2] - d.subtree_com[b, 2]
        cx, cy, cz = _cross(dx, dy, dz, (bvel[b, 3] - lin[b, 0]) * mass, (bvel[b, 4] - lin[b, 1]) * mass,
                            (bvel[b, 5] - lin[b, 2]) * mass)
        ang[b, 0] += cx
        ang[b, 1] += cy
        ang[b, 2] += cz
        for k in range(3):
            ang[p, k] += ang[b, k]
        # the subtree's momentum about the parent's subtree com
        sm = m.body_subtreemass[b]
        dx = d.subtree_com[b, 0] - d.subtree_com[p, 0]
        dy = d.subtree_com[b, 1] - d.subtree_com[p, 1]
        dz = d.subtree_com[b, 2] - d.subtree_com[p, 2]
        cx, cy, cz = _cross(dx, dy, dz, (lin[b, 0] - lin[p, 0]) * sm, (lin[b, 1] - lin[p, 1]) * sm,
                            (lin[b, 2] - lin[p, 2]) * sm)
        ang[p, 0] += cx
        ang[p, 1] += cy
        ang[p, 2] += cz
    d.scratch_sensor_flags[FLG_SUBTREEVEL] = 1


@kernel
def _quat_vel_norm2(a, ia, b, ib):
    """|mju_subQuat(a[ia:ia+4], b[ib:ib+4])|^2: the squared rotation angle from b to a."""
    w = b[ib] * a[ia] + b[ib + 1] * a[ia + 1] + b[ib + 2] * a[ia + 2] + b[ib + 3] * a[ia + 3]
    x = b[ib] * a[ia + 1] - b[ib + 1] * a[ia] - b[ib + 2] * a[ia + 3] + b[ib + 3] * a[ia + 2]
    y = b[ib] * a[ia + 2] + b[ib + 1] * a[ia + 3] - b[ib + 2] * a[ia] - b[ib + 3] * a[ia + 1]
    z = b[ib] * a[ia + 3] - b[ib + 1] * a[ia + 2] + b[ib + 2] * a[ia + 1] - b[ib + 3] * a[ia]
    # mju_quat2Vel(q, 1): axis * angle, angle = 2 atan2(|v|, w) (wrapped to [-pi, pi])
    s = math.sqrt(x * x + y * y + z * z)
    if s == 0.0:
        return 0.0
    angle = 2.0 * math.atan2(s, w)
    if angle > math.pi:
        angle -= 2.0 * math.pi
    return angle * angle


@kernel
def energy_pos_kernel(m, d):
    """energy[0]: gravitational potential of the bodies plus joint and tendon spring energy
    (mj_energyPos)."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    e = 0.0
    if not flags & DSBL_GRAVITY:
        g = m.opt_gravity
        for b in range(1, m.nbody):
            e -= m.body_mass[b] * (g[0] * d.xipos[b, 0] + g[1] * d.xipos[b, 1] + g[2] * d.xipos[b, 2])
    if not flags & DSBL_SPRING:
        # mju_polyPotential of the displacement x: 0.5 k x^2 + poly[0] x^3 / 3 + poly[1] x^4 / 4,
        # x the norm of the translation or rotation vector for free and ball joints
        for j in range(m.njnt):
            k = m.jnt_stiffness[j]
            p0, p1 = m.jnt_stiffnesspoly[j, 0], m.jnt_stiffnesspoly[j, 1]
            if k == 0.0 and p0 == 0.0 and p1 == 0.0:
                continue
            a = m.jnt_qposadr[j]
            jt = m.jnt_type[j]
            if jt == JNT_FREE:
                x2 = 0.0
                for i in range(3):
                    x2 += (d.qpos[a + i] - m.qpos_spring[a + i]) ** 2
                e += poly_potential(k, p0, p1, math.sqrt(x2))
                a += 3
            # the rest position: qpos_spring, or the plastic state of a spring with a yield
            ref, radr = spring_ref(m.jnt_plasticadr, d.plastic, m.qpos_spring, j, a)
            if jt == JNT_FREE or jt == JNT_BALL:
                e += poly_potential(k, p0, p1, math.sqrt(_quat_vel_norm2(d.qpos, a, ref, radr)))
            else:
                e += poly_potential(k, p0, p1, d.qpos[a] - ref[radr])
        for t in range(m.ntendon):
            length = d.ten_length[t]
            lo, hi = tendon_deadband(m.tendon_plasticadr, d.plastic, m.tendon_lengthspring, t)
            x = length - hi if length > hi else (length - lo if length < lo else 0.0)
            e += poly_potential(m.tendon_stiffness[t], m.tendon_stiffnesspoly[t, 0],
                                m.tendon_stiffnesspoly[t, 1], x)
    d.energy[0] = e
    d.scratch_sensor_flags[FLG_ENERGYPOS] = 1


@kernel
def energy_vel_kernel(m, d):
    """energy[1] = 0.5 qvel' M qvel (mj_energyVel), M tree-sparse (lower triangle, diagonal last)."""
    e = 0.0
    for i in range(m.nv):
        adr = m.M_rowadr[i]
        n = m.M_rownnz[i]
        for k in range(n - 1):
            e += 2.0 * d.M[adr + k] * d.qvel[m.M_colind[adr + k]] * d.qvel[i]
        e += d.M[adr + n - 1] * d.qvel[i] * d.qvel[i]
    d.energy[1] = 0.5 * e
    d.scratch_sensor_flags[FLG_ENERGYVEL] = 1


# ---- the sensors ------------------------------------------------------------------------------------


@kernel
def _cam_project(m, d, site, cam, out, a):
    """Pixel coordinates of the site in the camera's image (cam_project): the focal lengths from
    the intrinsics and sensor size (in single precision, as MuJoCo's float fields) or fovy."""
    rx, ry = m.cam_resolution[cam, 0], m.cam_resolution[cam, 1]
    ss, intr = m.cam_sensorsize[cam], m.cam_intrinsic[cam]
    if ss[0] != 0 and ss[1] != 0:
        fx = np.float64(np.float32(np.float32(intr[0] / ss[0]) * np.float32(rx)))
        fy = np.float64(np.float32(np.float32(intr[1] / ss[1]) * np.float32(ry)))
    else:
        fx = 0.5 / math.tan(m.cam_fovy[cam] * math.pi / 360.0) * ry
        fy = fx
    c, r, p = d.cam_xpos[cam], d.cam_xmat[cam], d.site_xpos[site]
    vx, vy, vz = p[0] - c[0], p[1] - c[1], p[2] - c[2]
    x = r[0, 0] * vx + r[1, 0] * vy + r[2, 0] * vz
    y = r[0, 1] * vx + r[1, 1] * vy + r[2, 1] * vz
    z = r[0, 2] * vx + r[1, 2] * vy + r[2, 2] * vz
    if abs(z) < MINVAL:
        z = min(z, -MINVAL) if z < 0 else max(z, MINVAL)
    out[a] = -fx * (x / z) + 0.5 * rx
    out[a + 1] = fy * (y / z) + 0.5 * ry


@kernel
def _limit_row(m, d, ctype, objid, what):
    """efc_pos - efc_margin (what 0), efc_vel (1) or efc_force (2) of the first limit row of
    the joint or tendon; 0 if it has none."""
    c = d.efc_counts
    for r in range(c[0] + c[1], c[3]):
        if d.efc_type[r] == ctype and d.efc_id[r] == objid:
            if what == 0:
                return d.efc_pos[r] - d.efc_margin[r]
            if what == 1:
                return d.efc_vel[r]
            return d.efc_force[r]
    return 0.0


@kernel
def _put3(out, a, x, y, z):
    out[a] = x
    out[a + 1] = y
    out[a + 2] = z


# The sensors of each stage are one unit each (compiled on their own, only for models with sensors of
# that stage): (m, d, sensor, sensordata, its address)
_SENSOR_ARGS = "int64, float64[::1], int64"


def _has_sensors(stage):
    """``needed`` of a stage's sensor unit: the model has a (non-user) sensor of that stage."""
    return lambda m: bool(((m.sensor_needstage == stage) & (m.sensor_type != USER)).any())


@handle_entry(args=_SENSOR_ARGS, needed=_has_sensors(STAGE_POS))
def _sensor_pos(m, d, i, out, a):
    """Position-stage sensor i (mj_computeSensorPos)."""
    st = m.sensor_type[i]
    objtype, objid = m.sensor_objtype[i], m.sensor_objid[i]
    reftype, refid = m.sensor_reftype[i], m.sensor_refid[i]
    if st == MAGNETOMETER:
        g = m.opt_magnetic
        r = d.site_xmat[objid]
        for k in range(3):
            out[a + k] = r[0, k] * g[0] + r[1, k] * g[1] + r[2, k] * g[2]
    elif st == CAMPROJECTION:
        _cam_project(m, d, objid, refid, out, a)
    elif st == RANGEFINDER:
        rangefinder_kernel(m, d, i, out, a)
    elif st == JOINTPOS:
        out[a] = d.qpos[m.jnt_qposadr[objid]]
    elif st == TENDONPOS:
        out[a] = d.ten_length[objid]
    elif st == ACTUATORPOS:
        out[a] = d.actuator_length[objid]
    elif st == BALLQUAT:
        q = m.jnt_qposadr[objid]
        n = math.sqrt(d.qpos[q] ** 2 + d.qpos[q + 1] ** 2 + d.qpos[q + 2] ** 2 + d.qpos[q + 3] ** 2)
        if n < MINVAL:
            out[a], out[a + 1], out[a + 2], out[a + 3] = 1.0, 0.0, 0.0, 0.0
        else:
            for k in range(4):
                out[a + k] = d.qpos[q + k] / n
    elif st == JOINTLIMITPOS:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_JOINT, objid, 0)
    elif st == TENDONLIMITPOS:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_TENDON, objid, 0)
    elif st == FRAMEPOS or st == FRAMEXAXIS or st == FRAMEYAXIS or st == FRAMEZAXIS:
        f = _frame(m, d, objtype, objid)
        if st == FRAMEPOS:
            x, y, z = f[0], f[1], f[2]
        else:
            c = st - FRAMEXAXIS
            x, y, z = f[3 + c], f[6 + c], f[9 + c]
        if refid >= 0:
            fr = _frame(m, d, reftype, refid)
            if st == FRAMEPOS:
                x, y, z = x - fr[0], y - fr[1], z - fr[2]
            x, y, z = _mat_t_vec(fr, x, y, z)
        _put3(out, a, x, y, z)
    elif st == FRAMEQUAT:
        q = _frame_quat(m, d, objtype, objid)
        if refid >= 0:
            r = _frame_quat(m, d, reftype, refid)
            q = quat_product(r[0], -r[1], -r[2], -r[3], q[0], q[1], q[2], q[3])
        for k in range(4):
            out[a + k] = q[k]
    elif st == SUBTREECOM:
        _put3(out, a, d.subtree_com[objid, 0], d.subtree_com[objid, 1], d.subtree_com[objid, 2])
    elif st == INSIDESITE:
        f = _frame(m, d, objtype, objid)
        px, py, pz = f[0], f[1], f[2]
        # a massless body with mass below it: its subtree com (xipos is the body frame)
        if objtype == OBJ_BODY and objid > 0 and m.body_mass[objid] < MINVAL \
                and m.body_subtreemass[objid] >= MINVAL:
            px, py, pz = d.subtree_com[objid, 0], d.subtree_com[objid, 1], d.subtree_com[objid, 2]
        inside = inside_geom(d.site_xpos[refid], d.site_xmat[refid], m.site_size[refid], m.site_type[refid],
                             px, py, pz)
        out[a] = 1.0 if inside else 0.0
    elif st == GEOMDIST or st == GEOMNORMAL or st == GEOMFROMTO:
        _geom_distance_sensor(m, d, i, out, a)
    elif st == E_POTENTIAL:
        if not d.scratch_sensor_flags[FLG_ENERGYPOS]:
            energy_pos_kernel(m, d)
        out[a] = d.energy[0]
    elif st == E_KINETIC:
        if not d.scratch_sensor_flags[FLG_ENERGYVEL]:
            energy_vel_kernel(m, d)
        out[a] = d.energy[1]
    elif st == CLOCK:
        out[a] = d.time[0]
    elif st == CONTACT:
        _contact_sensor(m, d, i, out, a)


@handle_entry(args=_SENSOR_ARGS, needed=_has_sensors(STAGE_VEL))
def _sensor_vel(m, d, i, out, a):
    """Velocity-stage sensor i (mj_computeSensorVel)."""
    st = m.sensor_type[i]
    objtype, objid = m.sensor_objtype[i], m.sensor_objid[i]
    reftype, refid = m.sensor_reftype[i], m.sensor_refid[i]
    if (st == SUBTREELINVEL or st == SUBTREEANGMOM) and not d.scratch_sensor_flags[FLG_SUBTREEVEL]:
        subtree_vel_kernel(m, d)
    if st == VELOCIMETER or st == GYRO:
        v = _object_velocity(m, d, OBJ_SITE, objid, True)
        k = 3 if st == VELOCIMETER else 0
        _put3(out, a, v[k], v[k + 1], v[k + 2])
    elif st == JOINTVEL:
        out[a] = d.qvel[m.jnt_dofadr[objid]]
    elif st == TENDONVEL:
        out[a] = d.ten_velocity[objid]
    elif st == ACTUATORVEL:
        out[a] = d.actuator_velocity[objid]
    elif st == BALLANGVEL:
        v = m.jnt_dofadr[objid]
        _put3(out, a, d.qvel[v], d.qvel[v + 1], d.qvel[v + 2])
    elif st == JOINTLIMITVEL:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_JOINT, objid, 1)
    elif st == TENDONLIMITVEL:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_TENDON, objid, 1)
    elif st == FRAMELINVEL or st == FRAMEANGVEL:
        wx, wy, wz, vx, vy, vz = _object_velocity(m, d, objtype, objid, False)
        if refid >= 0:
            f = _frame(m, d, objtype, objid)
            fr = _frame(m, d, reftype, refid)
            rwx, rwy, rwz, rvx, rvy, rvz = _object_velocity(m, d, reftype, refid, False)
            wx, wy, wz = wx - rwx, wy - rwy, wz - rwz
            vx, vy, vz = vx - rvx, vy - rvy, vz - rvz
            # the rotating reference frame: + (p - p_ref) x w_ref
            cx, cy, cz = _cross(f[0] - fr[0], f[1] - fr[1], f[2] - fr[2], rwx, rwy, rwz)
            vx, vy, vz = vx + cx, vy + cy, vz + cz
            wx, wy, wz = _mat_t_vec(fr, wx, wy, wz)
            vx, vy, vz = _mat_t_vec(fr, vx, vy, vz)
        if st == FRAMELINVEL:
            _put3(out, a, vx, vy, vz)
        else:
            _put3(out, a, wx, wy, wz)
    elif st == SUBTREELINVEL:
        _put3(out, a, d.subtree_linvel[objid, 0], d.subtree_linvel[objid, 1], d.subtree_linvel[objid, 2])
    elif st == SUBTREEANGMOM:
        _put3(out, a, d.subtree_angmom[objid, 0], d.subtree_angmom[objid, 1], d.subtree_angmom[objid, 2])
    elif st == CONTACT:
        _contact_sensor(m, d, i, out, a)


@handle_entry(args=_SENSOR_ARGS, needed=_has_sensors(STAGE_ACC))
def _sensor_acc(m, d, i, out, a):
    """Acceleration-stage sensor i (mj_computeSensorAcc)."""
    st = m.sensor_type[i]
    objtype, objid = m.sensor_objtype[i], m.sensor_objid[i]
    if st == TOUCH:
        _touch(m, d, objid, out, a)
    elif st == CONTACT:
        _contact_sensor(m, d, i, out, a)
    elif st == ACCELEROMETER:
        v = _object_acceleration(m, d, OBJ_SITE, objid, True)
        _put3(out, a, v[3], v[4], v[5])
    elif st == FORCE or st == TORQUE:
        # the force the parent exerts on the body, moved to the site and in its frame
        b = m.site_bodyid[objid]
        c = d.subtree_com[m.body_rootid[b]]
        p = d.site_xpos[objid]
        f = d.cfrc_int[b]
        if st == FORCE:
            x, y, z = f[3], f[4], f[5]
        else:
            cx, cy, cz = _cross(p[0] - c[0], p[1] - c[1], p[2] - c[2], f[3], f[4], f[5])
            x, y, z = f[0] - cx, f[1] - cy, f[2] - cz
        r = d.site_xmat[objid]
        _put3(out, a, r[0, 0] * x + r[1, 0] * y + r[2, 0] * z, r[0, 1] * x + r[1, 1] * y + r[2, 1] * z,
              r[0, 2] * x + r[1, 2] * y + r[2, 2] * z)
    elif st == ACTUATORFRC:
        out[a] = d.actuator_force[objid]
    elif st == JOINTACTFRC:
        out[a] = d.qfrc_actuator[m.jnt_dofadr[objid]]
    elif st == TENDONACTFRC:
        frc = 0.0
        for u in range(m.nactuator):
            if m.actuator_trntype[u] == TRN_TENDON and m.actuator_trnid[u, 0] == objid:
                frc += d.actuator_force[u]
        out[a] = frc
    elif st == JOINTLIMITFRC:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_JOINT, objid, 2)
    elif st == TENDONLIMITFRC:
        out[a] = _limit_row(m, d, CNSTR_LIMIT_TENDON, objid, 2)
    elif st == FRAMELINACC or st == FRAMEANGACC:
        v = _object_acceleration(m, d, objtype, objid, False)
        k = 3 if st == FRAMELINACC else 0
        _put3(out, a, v[k], v[k + 1], v[k + 2])


@kernel
def _touch(m, d, site, out, a):
    """Sum of the normal forces of the contacts of the site's body whose force ray, from the
    contact point along the normal force on the body, meets the site volume (touch)."""
    b = m.site_bodyid[site]
    lf = d.scratch_contact_force
    total = 0.0
    for j in range(d.efc_counts[COUNT_NCON]):
        b0 = m.geom_bodyid[d.contact_geom[j, 0]]
        b1 = m.geom_bodyid[d.contact_geom[j, 1]]
        if d.contact_efc_address[j] < 0 or (b != b0 and b != b1):
            continue
        contact_force_kernel(m, d, j, lf)
        if lf[0] <= 0:
            continue
        fr = d.contact_frame[j]
        ux, uy, uz = fr[0, 0] * lf[0], fr[0, 1] * lf[0], fr[0, 2] * lf[0]
        n = math.sqrt(ux * ux + uy * uy + uz * uz)
        if n >= MINVAL:
            ux, uy, uz = ux / n, uy / n, uz / n
        if b == b1:
            ux, uy, uz = -ux, -uy, -uz
        p = d.contact_pos[j]
        if ray_geom(d.site_xpos[site], d.site_xmat[site], m.site_size[site], m.site_type[site],
                    p[0], p[1], p[2], ux, uy, uz)[0] >= 0:
            total += lf[0]
    out[a] = total


# ---- the geom distance sensors ---------------------------------------------------------------------


@kernel
def geom_distance(m, d, geom1, geom2, distmax):
    """Smallest signed distance between two geoms, capped at distmax, and the segment between
    the surfaces (from, to; zero when no distance is below distmax): the pair's collider run
    with distmax as margin, its deepest contact (mj_geomDistance; analytic colliders only,
    the compiler refuses pairs MuJoCo measures with GJK/EPA)."""
    flip = m.geom_type[geom1] > m.geom_type[geom2]
    g1, g2 = (geom2, geom1) if flip else (geom1, geom2)
    dist, pos, frame = d.scratch_gd_dist, d.scratch_gd_pos, d.scratch_gd_frame
    n = collide_into(m, d, g1, g2, distmax, 0, INTO_SENSOR_SCRATCH)
    best = distmax
    c = -1
    for k in range(n):
        if dist[k] < best:
            best = dist[k]
            c = k
    if c < 0:
        return best, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    h = 0.5 * (-best if flip else best)
    p, nrm = pos[c], frame[c, 0]
    return (best, p[0] - h * nrm[0], p[1] - h * nrm[1], p[2] - h * nrm[2],
            p[0] + h * nrm[0], p[1] + h * nrm[1], p[2] + h * nrm[2])


@kernel
def _geom_distance_sensor(m, d, i, out, a):
    """distance, normal, fromto: the closest pair over the geoms of each side (a geom, or every
    geom of a body)."""
    st = m.sensor_type[i]
    cutoff = m.sensor_cutoff[i]
    best = (cutoff, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    n1, id1 = 1, m.sensor_objid[i]
    if m.sensor_objtype[i] == OBJ_BODY:
        n1, id1 = m.body_geomnum[id1], m.body_geomadr[id1]
    n2, id2 = 1, m.sensor_refid[i]
    if m.sensor_reftype[i] == OBJ_BODY:
        n2, id2 = m.body_geomnum[id2], m.body_geomadr[id2]
    for g1 in range(id1, id1 + n1):
        for g2 in range(id2, id2 + n2):
            r = geom_distance(m, d, g1, g2, cutoff)
            if r[0] < best[0]:
                best = r
    if st == GEOMDIST:
        out[a] = best[0]
    elif st == GEOMNORMAL:
        nx, ny, nz = best[4] - best[1], best[5] - best[2], best[6] - best[3]
        if nx != 0.0 or ny != 0.0 or nz != 0.0:
            s = math.sqrt(nx * nx + ny * ny + nz * nz)
            nx, ny, nz = nx / s, ny / s, nz / s
        _put3(out, a, nx, ny, nz)
    else:
        for k in range(6):
            out[a + k] = best[1 + k]


# ---- the contact sensor -----------------------------------------------------------------------------


@kernel
def _check_match(m, body, geom, objtype, objid):
    """Whether a contact's body/geom matches one criterion (checkMatch)."""
    if objtype == OBJ_UNKNOWN or objtype == OBJ_SITE:
        return True
    if objtype == OBJ_GEOM:
        return objid == geom
    if objtype == OBJ_BODY:
        return objid == body
    if objtype == OBJ_XBODY:
        while body > objid:
            body = m.body_parentid[body]
        return body == objid
    return False


@kernel
def _match_contact(m, d, j, type1, id1, type2, id2):
    """0: contact j does not match; 1: it does; -1: it does with the normal flipped (matchContact)."""
    if type1 == OBJ_UNKNOWN and type2 == OBJ_UNKNOWN:
        return 1
    if type1 == OBJ_SITE:
        p = d.contact_pos[j]
        if not inside_geom(d.site_xpos[id1], d.site_xmat[id1], m.site_size[id1], m.site_type[id1],
                           p[0], p[1], p[2]):
            return 0
    g1, g2 = d.contact_geom[j, 0], d.contact_geom[j, 1]
    b1, b2 = m.geom_bodyid[g1], m.geom_bodyid[g2]
    m11 = _check_match(m, b1, g1, type1, id1)
    m12 = _check_match(m, b2, g2, type1, id1)
    m21 = _check_match(m, b1, g1, type2, id2)
    m22 = _check_match(m, b2, g2, type2, id2)
    if not m11 and not m12:
        return 0
    if not m21 and not m22:
        return 0
    if type1 != OBJ_UNKNOWN and type2 != OBJ_UNKNOWN:
        regular = m11 and m22
        reverse = m12 and m21
        if regular:
            return 1
        if reverse:
            return -1
        return 0
    if type1 != OBJ_UNKNOWN:
        return 1 if m11 else -1
    return 1 if m22 else -1


@kernel
def _condata_size(spec):
    n = 0
    for bit in range(9):
        if spec >> bit & 1:
            n += 1 if bit == CON_FOUND or bit == CON_DIST else 3
    return n


@kernel
def _contact_sensor(m, d, i, out, a):
    """Contact sensor i: match the contacts, reduce them to num slots, write the data fields of
    each slot (mjSENS_CONTACT)."""
    spec, reduce, num = m.sensor_intprm[i, 0], m.sensor_intprm[i, 1], m.sensor_intprm[i, 2]
    size = _condata_size(spec)
    dim = m.sensor_dim[i]
    for k in range(dim):
        out[a + k] = 0.0
    lf = d.scratch_contact_force
    ids, keys = d.scratch_sensor_match[0], d.scratch_sensor_match[1]
    nmatch = 0
    for j in range(d.efc_counts[COUNT_NCON]):
        mt = _match_contact(m, d, j, m.sensor_objtype[i], m.sensor_objid[i], m.sensor_reftype[i],
                            m.sensor_refid[i])
        if mt == 0:
            continue
        ids[nmatch] = 2 * j + (1 if mt < 0 else 0)
        if reduce == REDUCE_MINDIST:
            keys[nmatch] = d.contact_dist[j]
        elif reduce == REDUCE_MAXFORCE:
            contact_force_kernel(m, d, j, lf)
            keys[nmatch] = -(lf[0] * lf[0] + lf[1] * lf[1] + lf[2] * lf[2])
        nmatch += 1
    if reduce == REDUCE_NETFORCE:
        if nmatch:
            _net_force(m, d, spec, nmatch, out, a)
        return
    nslot = min(num, nmatch)
    if reduce == REDUCE_MINDIST or reduce == REDUCE_MAXFORCE:
        # the nslot smallest (key, contact id) in ascending order, as MuJoCo's partial sort
        for s in range(nslot):
            best = s
            for t in range(s + 1, nmatch):
                if keys[t] < keys[best] or (keys[t] == keys[best] and ids[t] < ids[best]):
                    best = t
            keys[s], keys[best] = keys[best], keys[s]
            ids[s], ids[best] = ids[best], ids[s]
    for s in range(nslot):
        j = int(ids[s]) >> 1
        flip = int(ids[s]) & 1
        p = a + s * size
        if spec >> CON_FOUND & 1:
            out[p] = nmatch
            p += 1
        if spec >> CON_FORCE & 1 or spec >> CON_TORQUE & 1:
            contact_force_kernel(m, d, j, lf)
            if spec >> CON_FORCE & 1:
                _put3(out, p, lf[0], lf[1], -lf[2] if flip else lf[2])
                p += 3
            if spec >> CON_TORQUE & 1:
                _put3(out, p, lf[3], lf[4], -lf[5] if flip else lf[5])
                p += 3
        if spec >> CON_DIST & 1:
            out[p] = d.contact_dist[j]
            p += 1
        if spec >> CON_POS & 1:
            _put3(out, p, d.contact_pos[j, 0], d.contact_pos[j, 1], d.contact_pos[j, 2])
            p += 3
        sign = -1.0 if flip else 1.0
        fr = d.contact_frame[j]
        for row, bit in ((0, CON_NORMAL), (1, CON_TANGENT)):
            if spec >> bit & 1:
                _put3(out, p, sign * fr[row, 0], sign * fr[row, 1], sign * fr[row, 2])
                p += 3
        if spec >> CON_LINVEL & 1 or spec >> CON_ANGVEL & 1:
            # velocity of geom[1]'s body relative to geom[0]'s at the contact point, in the
            # contact frame (turned 180 degrees about the second tangent when flipped)
            cp = d.contact_pos[j]
            b0 = m.geom_bodyid[d.contact_geom[j, 0]]
            b1 = m.geom_bodyid[d.contact_geom[j, 1]]
            v0 = _motion_at(m, d, d.cvel, b0, cp[0], cp[1], cp[2])
            v1 = _motion_at(m, d, d.cvel, b1, cp[0], cp[1], cp[2])
            for k0, bit in ((3, CON_LINVEL), (0, CON_ANGVEL)):
                if spec >> bit & 1:
                    rx, ry, rz = v1[k0] - v0[k0], v1[k0 + 1] - v0[k0 + 1], v1[k0 + 2] - v0[k0 + 2]
                    z = fr[2, 0] * rx + fr[2, 1] * ry + fr[2, 2] * rz
                    _put3(out, p, fr[0, 0] * rx + fr[0, 1] * ry + fr[0, 2] * rz,
                          fr[1, 0] * rx + fr[1, 1] * ry + fr[1, 2] * rz, -z if flip else z)
                    p += 3


@kernel
def _net_force(m, d, spec, nmatch, out, a):
    """reduce="netforce": one synthetic contact at the force-weighted centroid of the matched
    contacts carrying their total wrench, in the world frame."""
    ids = d.scratch_sensor_match[0]
    lf = d.scratch_contact_force
    sgn = d.scratch_sensor_match[1]
    # centroid weights: |force| of each (flipped) wrench
    px, py, pz, total = 0.0, 0.0, 0.0, 0.0
    for s in range(nmatch):
        j = int(ids[s]) >> 1
        contact_force_kernel(m, d, j, lf)
        w = math.sqrt(lf[0] * lf[0] + lf[1] * lf[1] + lf[2] * lf[2])
        sgn[s] = -1.0 if int(ids[s]) & 1 else 1.0
        px += w * d.contact_pos[j, 0]
        py += w * d.contact_pos[j, 1]
        pz += w * d.contact_pos[j, 2]
        total += w
    scale = 1.0 / max(total, MINVAL)
    px, py, pz = px * scale, py * scale, pz * scale
    fx, fy, fz, tx, ty, tz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for s in range(nmatch):
        j = int(ids[s]) >> 1
        contact_force_kernel(m, d, j, lf)
        g = sgn[s]
        fr = d.contact_frame[j]
        # frame' (local force), frame' (local torque)
        cfx = g * (fr[0, 0] * lf[0] + fr[1, 0] * lf[1] + fr[2, 0] * lf[2])
        cfy = g * (fr[0, 1] * lf[0] + fr[1, 1] * lf[1] + fr[2, 1] * lf[2])
        cfz = g * (fr[0, 2] * lf[0] + fr[1, 2] * lf[1] + fr[2, 2] * lf[2])
        ctx = g * (fr[0, 0] * lf[3] + fr[1, 0] * lf[4] + fr[2, 0] * lf[5])
        cty = g * (fr[0, 1] * lf[3] + fr[1, 1] * lf[4] + fr[2, 1] * lf[5])
        ctz = g * (fr[0, 2] * lf[3] + fr[1, 2] * lf[4] + fr[2, 2] * lf[5])
        fx, fy, fz = fx + cfx, fy + cfy, fz + cfz
        cx, cy, cz = _cross(d.contact_pos[j, 0] - px, d.contact_pos[j, 1] - py, d.contact_pos[j, 2] - pz,
                            cfx, cfy, cfz)
        tx, ty, tz = tx + ctx + cx, ty + cty + cy, tz + ctz + cz
    p = a
    if spec >> CON_FOUND & 1:
        out[p] = nmatch
        p += 1
    if spec >> CON_FORCE & 1:
        _put3(out, p, fx, fy, fz)
        p += 3
    if spec >> CON_TORQUE & 1:
        _put3(out, p, tx, ty, tz)
        p += 3
    if spec >> CON_DIST & 1:
        p += 1
    if spec >> CON_POS & 1:
        _put3(out, p, px, py, pz)
        p += 3
    if spec >> CON_NORMAL & 1:
        out[p] = 1.0
        p += 3
    if spec >> CON_TANGENT & 1:
        out[p + 1] = 1.0


# ---- history buffers (MuJoCo 4.0's sensor nsample, interp, delay, interval) -------------------------
# Units of their own, compiled only for models with a sensor history buffer. The buffers' ring
# (insert, read) is engine.history's, shared with the actuators' controls.


@kernel
def _computed_sensor(m, d, i, out, a):
    """compute_sensor, with rne_post_constraint first if the sensor needs it and the stage has not
    run it yet (MuJoCo's lazy flg_rnepost)."""
    if (m.sensor_needstage[i] == STAGE_ACC and _uses_rne_post(m.sensor_type[i])
            and not d.scratch_sensor_flags[FLG_RNEPOST]):
        rne_post_constraint_entry(m, d)
        d.scratch_sensor_flags[FLG_RNEPOST] = 1
    compute_sensor(m, d, i, out, a)


@handle_entry(args=_SENSOR_ARGS, needed=has_sensor_history)
def _history_sensor(m, d, i, out, a):
    """Sensor i, which has a history buffer, into sensordata (compute_or_read_sensor): with a
    positive delay its buffer's value at ``time - delay``; with a positive interval period and no
    delay, computed when a period has passed since the last computation (the buffer's user slot),
    else the buffer's newest value; otherwise computed."""
    t = d.time[0]
    if m.sensor_delay[i] > 0:
        read_sensor_kernel(m, d, i, t, m.sensor_history[i, 1], out, a)
        return
    period = m.sensor_interval[i, 0]
    if period > 0 and not d.history[m.sensor_historyadr[i]] + period <= t:
        read_sensor_kernel(m, d, i, t, m.sensor_history[i, 1], out, a)
        return
    _computed_sensor(m, d, i, out, a)


@kernel
def _any_sensor_history(m):
    for i in range(m.nsensor):
        if m.sensor_history[i, 0] > 0:
            return True
    return False


@kernel
def _insert_sensor(m, d, i, t):
    """Insert sensor i's sample at time t: computed now if sensordata holds a delayed value,
    else copied from sensordata (computed by this step's forward pass)."""
    n = m.sensor_history[i, 0]
    dim = m.sensor_dim[i]
    slot = history_insert_dim(d.history, m.sensor_historyadr[i], n, dim, t)
    if m.sensor_delay[i] > 0:
        _computed_sensor(m, d, i, d.history, slot)
    else:
        a = m.sensor_adr[i]
        for k in range(dim):
            d.history[slot + k] = d.sensordata[a + k]


@handle_entry(needed=has_sensor_history)
def _advance_sensor_history(m, d):
    """mj_advance, after the controls' buffers: each sensor buffer takes the sensor's value at the
    current (pre-step) time; with an interval period only when a period has passed since the user
    slot's time, which then moves on by exactly one period."""
    t = d.time[0]
    for i in range(m.nsensor):
        if m.sensor_history[i, 0] == 0:
            continue
        period = m.sensor_interval[i, 0]
        if period > 0:
            adr = m.sensor_historyadr[i]
            if d.history[adr] + period <= t:
                d.history[adr] += period
                _insert_sensor(m, d, i, t)
        else:
            _insert_sensor(m, d, i, t)


@kernel
def advance_sensor_history(m, d):
    """The sensor buffers' part of mj_advance (nothing for a model without them)."""
    if m.nhistory > 0 and _any_sensor_history(m):
        _advance_sensor_history(m, d)


# ---- the stages -------------------------------------------------------------------------------------


@kernel
def _cutoff(m, i, out, a):
    """Clamp sensor i's outputs to its cutoff (apply_cutoff): real both sides, positive above."""
    cutoff = m.sensor_cutoff[i]
    st = m.sensor_type[i]
    if cutoff <= 0 or st == CONTACT or st == GEOMFROMTO:
        return
    dt = m.sensor_datatype[i]
    for k in range(a, a + m.sensor_dim[i]):
        if dt == DATATYPE_REAL:
            out[k] = min(max(out[k], -cutoff), cutoff)
        elif dt == DATATYPE_POSITIVE:
            out[k] = min(cutoff, out[k])


@kernel
def _sensors(m, d, stage):
    """Every sensor of ``stage``, then its cutoff (mj_sensorPos / Vel / Acc)."""
    out = d.sensordata
    for i in range(m.nsensor):
        if m.sensor_needstage[i] != stage:
            continue
        a = m.sensor_adr[i]
        st = m.sensor_type[i]
        if st == USER:
            # MuJoCo prepares what a user sensor callback may read: subtree velocities for the
            # velocity stage (acceleration: rne_post_constraint, see _needs_rne_post)
            if stage == STAGE_VEL and not d.scratch_sensor_flags[FLG_SUBTREEVEL]:
                subtree_vel_kernel(m, d)
            for k in range(a, a + m.sensor_dim[i]):
                out[k] = 0.0
            continue
        if m.sensor_history[i, 0] > 0:
            # a sensor with a history buffer may read its value from it (compute_or_read_sensor)
            _history_sensor(m, d, i, out, a)
            continue
        compute_sensor(m, d, i, out, a)


@kernel
def compute_sensor(m, d, i, out, a):
    """Sensor i into ``out[a:]`` in the stage it needs, then its cutoff (mj_computeSensor)."""
    stage = m.sensor_needstage[i]
    if stage == STAGE_POS:
        _sensor_pos(m, d, i, out, a)
    elif stage == STAGE_VEL:
        _sensor_vel(m, d, i, out, a)
    else:
        _sensor_acc(m, d, i, out, a)
    _cutoff(m, i, out, a)


@kernel
def _uses_rne_post(st):
    return st == ACCELEROMETER or st == FORCE or st == TORQUE or st == FRAMELINACC or st == FRAMEANGACC


@kernel
def _may_read_history(m, i):
    """Whether sensor i may read its value from its history buffer rather than compute it: a
    positive delay or interval period with a buffer."""
    return m.sensor_history[i, 0] > 0 and (m.sensor_delay[i] > 0 or m.sensor_interval[i, 0] > 0)


@kernel
def _needs_rne_post(m):
    """rne_post_constraint before the acceleration sensors: one of them needs it and is computed
    in every forward pass (those that may read their history compute it on demand)."""
    for i in range(m.nsensor):
        st = m.sensor_type[i]
        if m.nhistory > 0 and _may_read_history(m, i):
            continue
        if _uses_rne_post(st):
            return True
        if st == USER and m.sensor_needstage[i] == STAGE_ACC:
            return True
    return False


# The loop over a stage's sensors and the energy are units of their own, compiled only for a model
# that has sensors of that stage (user sensors included) or the energy flag: a model without them
# compiles none of their kernels (subtree velocities, frames, the energy terms).

def _has_stage_sensors(stage):
    """``needed`` of a stage's sensor loop: the model has a sensor of that stage (user ones too)."""
    return lambda m: bool((m.sensor_needstage == stage).any())


def _energy_enabled(m) -> bool:
    return bool(int(m.opt.enableflags) & ENBL_ENERGY)


@kernel
def _stage_has_sensors(m, stage):
    """What _has_stage_sensors(stage) tells the binder, in compiled code: whether the stage's unit
    is bound for this model."""
    for i in range(m.nsensor):
        if m.sensor_needstage[i] == stage:
            return True
    return False


@handle_entry(needed=_has_stage_sensors(STAGE_POS))
def _pos_sensors(m, d):
    _sensors(m, d, STAGE_POS)


@handle_entry(needed=_has_stage_sensors(STAGE_VEL))
def _vel_sensors(m, d):
    _sensors(m, d, STAGE_VEL)


@handle_entry(needed=_has_stage_sensors(STAGE_ACC))
def _acc_sensors(m, d):
    if _needs_rne_post(m):
        rne_post_constraint_entry(m, d)
        d.scratch_sensor_flags[FLG_RNEPOST] = 1
    _sensors(m, d, STAGE_ACC)


@handle_entry(needed=_energy_enabled)
def _energy_pos(m, d):
    energy_pos_kernel(m, d)


@handle_entry(needed=_energy_enabled)
def _energy_vel(m, d):
    energy_vel_kernel(m, d)


@kernel
def _sensors_on(m, stage):
    """Whether the sensors of ``stage`` run: the model has some and they are not disabled."""
    return m.nsensor > 0 and not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_SENSOR and _stage_has_sensors(m, stage)


@kernel
def _pos_stage(m, d, sensors, inverse):
    """The position sensors (if ``sensors`` and not disabled), then the potential energy:
    mj_forward computes it with the energy flag and zeroes the energy without it, mj_inverse
    leaves it as it is."""
    flags = d.scratch_sensor_flags
    flags[FLG_ENERGYPOS] = 0
    if sensors and _sensors_on(m, STAGE_POS):
        _pos_sensors(m, d)
    if not flags[FLG_ENERGYPOS]:
        if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_ENERGY:
            _energy_pos(m, d)
        elif not inverse:
            d.energy[0] = 0.0
            d.energy[1] = 0.0


@kernel
def _vel_stage(m, d, sensors):
    """The velocity sensors (if ``sensors`` and not disabled), then the kinetic energy with the
    energy flag (unless a sensor computed it in this stage)."""
    flags = d.scratch_sensor_flags
    flags[FLG_SUBTREEVEL] = 0
    flags[FLG_ENERGYVEL] = 0
    if sensors and _sensors_on(m, STAGE_VEL):
        _vel_sensors(m, d)
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_ENERGY and not flags[FLG_ENERGYVEL]:
        _energy_vel(m, d)


@handle_entry
def sensor_pos_entry(m, d):
    """mj_forward after mj_fwdPosition: mj_sensorPos, then the potential energy."""
    _pos_stage(m, d, True, False)


@handle_entry
def sensor_pos_inverse_entry(m, d):
    """mj_inverse after mj_invPosition: mj_sensorPos, then the potential energy."""
    _pos_stage(m, d, True, True)


@handle_entry
def energy_pos_entry(m, d):
    """The potential energy without the sensors (mj_forwardSkip with skipsensor: RK4's stages)."""
    _pos_stage(m, d, False, False)


@handle_entry
def sensor_vel_entry(m, d):
    """mj_sensorVel, then the kinetic energy."""
    _vel_stage(m, d, True)


@handle_entry
def energy_vel_entry(m, d):
    """The kinetic energy without the sensors (RK4's stages)."""
    _vel_stage(m, d, False)


@handle_entry
def sensor_acc_entry(m, d):
    """The acceleration sensors, after rne_post_constraint when one needs it (mj_sensorAcc)."""
    d.scratch_sensor_flags[FLG_RNEPOST] = 0
    if _sensors_on(m, STAGE_ACC):
        _acc_sensors(m, d)


_SENSOR_POS = FastEntry(sensor_pos_entry)
_SENSOR_VEL = FastEntry(sensor_vel_entry)
_SENSOR_ACC = FastEntry(sensor_acc_entry)


def sensor_pos(m, d) -> None:
    """Position-stage sensors and the potential energy (mj_sensorPos, mj_energyPos).

    Reads the position stage (run ``fwd_position`` first). Writes their part of sensordata."""
    check_model_data(m, d, "sensor_pos")
    call_rebinding(_SENSOR_POS, m, d)


def sensor_vel(m, d) -> None:
    """Velocity-stage sensors and the kinetic energy (mj_sensorVel, mj_energyVel)."""
    check_model_data(m, d, "sensor_vel")
    call_rebinding(_SENSOR_VEL, m, d)


def sensor_acc(m, d) -> None:
    """Acceleration-stage sensors (mj_sensorAcc); reads the constraint solver's result."""
    check_model_data(m, d, "sensor_acc")
    call_rebinding(_SENSOR_ACC, m, d)
