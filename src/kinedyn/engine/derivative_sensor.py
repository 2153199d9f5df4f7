"""Sensor rows of the analytical transition derivatives (C) that need second-order kinematics.

``derivative_transition.sensor_rows_entry`` writes the rows of the sensors whose derivative is a
Jacobian (positions, axes, a body's own velocities). This module adds, in its own unit
(``sensor_more_rows_entry``, compiled only for models that have such sensors):

* frame sensors with a reference frame, and of cameras (mj_computeSensorPos/Vel's FRAMEPOS,
  FRAME*AXIS, FRAMEQUAT, FRAMELINVEL, FRAMEANGVEL): with R, p the reference's orientation and
  origin and w its angular velocity, a value y = R' u(q, v) has dy = R' (du - w_dq x u), w_dq the
  reference's rotational Jacobian times the step;
* ``subtreelinvel`` and ``subtreeangmom`` (mj_subtreeVel), written as sums over the subtree's
  bodies k: v = sum m_k v_k / M and L = sum I_k w_k + m_k (x_k - c) x v_k (c the subtree com; the
  parallel-axis recursion of mj_subtreeVel sums to this);
* ``tendonvel`` of a spatial tendon through sites and pulleys (mj_tendon's straight pieces: a
  piece between points on different bodies adds u . (v_1 - v_0) / divisor, u its unit direction,
  so its q-derivative is (I - u u') (J_1 - J_0) dq / len . (v_1 - v_0) + u . d(v_1 - v_0)).

Every velocity's q-derivative is that of the point velocity of a point fixed on a body
(``point_velocity_dq``): along a tangent step S_c of a dof moving the body, the body's com-based
velocity changes by S_c x (v_b - v0_c), v0_c the velocity before c's joint (derivative_rne's
rne_partials), and the point moves by the Jacobian's column.

A second unit (``sensor_acc_rows_entry``) writes the acceleration stage's accelerometer, force,
torque, framelinacc and frameangacc rows: each is a function of q, v and forward's qacc
(mj_rnePostConstraint's cacc and cfrc_int), so its row is its partials in q and v plus its
partial in qacc times forward's dqacc (every column of x and u). The body acceleration's partials
are derivative_rne's; a subtree force's are those of its rigid transport (composite inertia,
Carpentier-Mansard's composite B). External forces (cfrc_ext) are not differentiated: a force or
torque sensor with one on its subtree is refused at that state.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.derivative_rne import (
    _A0,
    _ACC,
    _FRC,
    _V0,
    _V1,
    _add,
    _cross,
    _get,
    _mat_vec,
    _sub,
    composite_b,
    rne_partials,
    subtree_forces,
)
from kinedyn.engine.sensor import _frame, _frame_body, _frame_quat
from kinedyn.engine.smooth_tendon import is_fixed_tendon
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    MINVAL,
    WRAP_CYLINDER,
    WRAP_JOINT,
    WRAP_PULLEY,
    WRAP_SPHERE,
    ObjType,
    SensorType,
)
from kinedyn.engine.util_linalg3 import cross3
from kinedyn.engine.util_spatial import cross_force, inert_vec, quat_product, row6

_FRAMEPOS, _FRAMEQUAT = int(SensorType.FRAMEPOS), int(SensorType.FRAMEQUAT)
_FRAMEXAXIS, _FRAMEZAXIS = int(SensorType.FRAMEXAXIS), int(SensorType.FRAMEZAXIS)
_FRAMELINVEL, _FRAMEANGVEL = int(SensorType.FRAMELINVEL), int(SensorType.FRAMEANGVEL)
_SUBTREELINVEL, _SUBTREEANGMOM = int(SensorType.SUBTREELINVEL), int(SensorType.SUBTREEANGMOM)
_TENDONVEL = int(SensorType.TENDONVEL)
_OBJ_CAMERA = int(ObjType.CAMERA)
# rows of the (15, nv) scratch ``jac``: the object's (or a piece's start) point and rotation
# Jacobians, the reference's (or the piece's end), and an accumulator
_JP0, _JR0, _JP1, _JR1, _SUM = 0, 3, 6, 9, 12
JAC_ROWS = 15
# the refusal code (derivative_transition's numbering) of a force or torque sensor with an
# external force on its subtree, at the state
R_SENSOR_EXTERNAL = 23


@kernel
def spatial_tendon_wraps(m, t):
    """Whether spatial tendon t wraps around a sphere or cylinder (its velocity's q-derivative is
    not covered)."""
    for k in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
        if m.wrap_type[k] == WRAP_SPHERE or m.wrap_type[k] == WRAP_CYLINDER:
            return True
    return False


@kernel
def more_rows(m, s):
    """Whether sensor s's C rows are ``sensor_more_rows_entry``'s."""
    t = m.sensor_type[s]
    if t == _SUBTREELINVEL or t == _SUBTREEANGMOM:
        return True
    if t == _TENDONVEL:
        return not is_fixed_tendon(m, m.sensor_objid[s])
    return _FRAMEPOS <= t <= _FRAMEANGVEL and (m.sensor_refid[s] >= 0 or m.sensor_objtype[s] == _OBJ_CAMERA)


def _has_more_rows(m) -> bool:
    """``needed`` of the unit: ``more_rows`` of any sensor, from Python."""
    t = m.sensor_type
    subtree = (t == _SUBTREELINVEL) | (t == _SUBTREEANGMOM)
    frame = (t >= _FRAMEPOS) & (t <= _FRAMEANGVEL) & ((m.sensor_refid >= 0)
                                                      | (m.sensor_objtype == _OBJ_CAMERA))
    spatial = [m.wrap_type[m.tendon_adr[m.sensor_objid[s]]] != WRAP_JOINT
               for s in np.flatnonzero(t == _TENDONVEL)]
    return bool(np.any(subtree | frame) or any(spatial))


@kernel(inline="always")
def _col3(a, r, c):
    return a[r, c], a[r + 1, c], a[r + 2, c]


@kernel(inline="always")
def _add3(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@kernel(inline="always")
def _sub3(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@kernel(inline="always")
def _scale3(a, f):
    return a[0] * f, a[1] * f, a[2] * f


@kernel(inline="always")
def _rot(x):
    """The angular (first) half of a 6-vector."""
    return x[0], x[1], x[2]


@kernel(inline="always")
def _lin(x):
    """The linear (second) half of a 6-vector."""
    return x[3], x[4], x[5]


@kernel(inline="always")
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel(inline="always")
def _moves(jac, r, c):
    """Whether column c of the point and rotation Jacobians from row r is nonzero."""
    for k in range(r, r + 6):
        if jac[k, c] != 0.0:
            return True
    return False


@kernel(inline="always")
def point_velocity_dq(cdof, dof, c, vb, rp, jpc):
    """(dw, dv): the derivatives of a body's angular velocity w and of the linear velocity v of a
    point fixed on it along the tangent step of dof c, which moves the body. vb: the body's cvel
    (6-tuple about o, the com of its tree); rp = p - o; jpc: the point's Jacobian column c.
    d cvel = S_c x (cvel - v0_c); v = lin + w x rp, the point moving by jpc (o held, as cvel's
    reference)."""
    wi = (cdof[c, 0], cdof[c, 1], cdof[c, 2])
    vi = (cdof[c, 3], cdof[c, 4], cdof[c, 5])
    w = (vb[0], vb[1], vb[2])
    uw = (vb[0] - dof[c, _V0, 0], vb[1] - dof[c, _V0, 1], vb[2] - dof[c, _V0, 2])
    ul = (vb[3] - dof[c, _V0, 3], vb[4] - dof[c, _V0, 4], vb[5] - dof[c, _V0, 5])
    dw = cross3(wi, uw)
    a1, a2 = cross3(wi, ul), cross3(vi, uw)
    a3, a4 = cross3(dw, rp), cross3(w, jpc)
    return dw, (a1[0] + a2[0] + a3[0] + a4[0], a1[1] + a2[1] + a3[1] + a4[1], a1[2] + a2[2] + a3[2] + a4[2])


@kernel
def _point(m, d, b, px, py, pz, jac, r):
    """Point p on body b: its Jacobians into jac[r:r+3] (point) and jac[r+3:r+6] (rotation); returns
    (cvel of b, p - o, w, v_p), o the com of b's tree."""
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, px, py, pz, b, jac[r:r + 3], jac[r + 3:r + 6])
    o = d.subtree_com[m.body_rootid[b]]
    rp = (px - o[0], py - o[1], pz - o[2])
    vb = (d.cvel[b, 0], d.cvel[b, 1], d.cvel[b, 2], d.cvel[b, 3], d.cvel[b, 4], d.cvel[b, 5])
    w = (vb[0], vb[1], vb[2])
    return vb, rp, w, _add3((vb[3], vb[4], vb[5]), cross3(w, rp))


@kernel(inline="always")
def _rt(f, x):
    """R' x, R the row-major orientation in sensor._frame's tuple f."""
    return (f[3] * x[0] + f[6] * x[1] + f[9] * x[2], f[4] * x[0] + f[7] * x[1] + f[10] * x[2],
            f[5] * x[0] + f[8] * x[1] + f[11] * x[2])


@kernel
def _put_col(c_mat, adr, c, x):
    for r in range(3):
        c_mat[adr + r, c] = x[r]


@kernel
def _frame_ref_rows(m, d, s, c_mat, jac, dof):
    """C's rows of a frame sensor with a reference frame or of a camera (mj_computeSensorPos/Vel:
    positions and velocities relative to the reference's, in its frame)."""
    nv = m.nv
    t, adr = m.sensor_type[s], m.sensor_adr[s]
    ot, obj, rt, ref = m.sensor_objtype[s], m.sensor_objid[s], m.sensor_reftype[s], m.sensor_refid[s]
    fo = _frame(m, d, ot, obj)
    vbo, rpo, wo, vo = _point(m, d, _frame_body(m, ot, obj), fo[0], fo[1], fo[2], jac, _JP0)
    if ref >= 0:
        fr = _frame(m, d, rt, ref)
        vbr, rpr, wr, vr = _point(m, d, _frame_body(m, rt, ref), fr[0], fr[1], fr[2], jac, _JP1)
        # a dof-less body's velocity is zero (mj_objectVelocity's shortcut): so is its Jacobian
    else:
        # no reference: the world (identity, at rest)
        fr = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        vbr, rpr, wr, vr = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        for r in range(_JP1, _JR1 + 3):
            for c in range(nv):
                jac[r, c] = 0.0
    pd = (fo[0] - fr[0], fo[1] - fr[1], fo[2] - fr[2])
    if t == _FRAMEQUAT:
        # q = q_r* q_o, each turning by its world angular step: dq = q_r* (0, dw_o - dw_r) q_o / 2
        qo = _frame_quat(m, d, ot, obj)
        qr = _frame_quat(m, d, rt, ref) if ref >= 0 else (1.0, 0.0, 0.0, 0.0)
        for c in range(nv):
            dw = _sub3(_col3(jac, _JR0, c), _col3(jac, _JR1, c))
            x = quat_product(0.0, dw[0], dw[1], dw[2], qo[0], qo[1], qo[2], qo[3])
            x = quat_product(qr[0], -qr[1], -qr[2], -qr[3], x[0], x[1], x[2], x[3])
            for r in range(4):
                c_mat[adr + r, c] = 0.5 * x[r]
        return
    if _FRAMEXAXIS <= t <= _FRAMEZAXIS:
        a = t - _FRAMEXAXIS
        u = (fo[3 + a], fo[6 + a], fo[9 + a])
    elif t == _FRAMEPOS:
        u = pd
    elif t == _FRAMELINVEL:
        # v_o - v_r + (p_o - p_r) x w_r
        u = _add3(_sub3(vo, vr), cross3(pd, wr))
    else:
        u = _sub3(wo, wr)
    angular = t == _FRAMEANGVEL
    for c in range(nv):
        jro, jrr = _col3(jac, _JR0, c), _col3(jac, _JR1, c)
        jpo, jpr = _col3(jac, _JP0, c), _col3(jac, _JP1, c)
        if t == _FRAMEPOS:
            du = _sub3(jpo, jpr)
        elif _FRAMEXAXIS <= t <= _FRAMEZAXIS:
            du = cross3(jro, u)
        else:
            dwo, dvo, dwr, dvr = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
            if _moves(jac, _JP0, c):
                dwo, dvo = point_velocity_dq(d.cdof, dof, c, vbo, rpo, jpo)
            if ref >= 0 and _moves(jac, _JP1, c):
                dwr, dvr = point_velocity_dq(d.cdof, dof, c, vbr, rpr, jpr)
            if angular:
                du = _sub3(dwo, dwr)
            else:
                du = _add3(_add3(_sub3(dvo, dvr), cross3(_sub3(jpo, jpr), wr)), cross3(pd, dwr))
            # and the velocity columns: the same quantity's Jacobian
            if angular:
                dv = _sub3(jro, jrr)
            else:
                dv = _add3(_sub3(jpo, jpr), cross3(pd, jrr))
            _put_col(c_mat, adr, nv + c, _rt(fr, dv))
        # the reference turning: d(R' u) = R' (du - dw_r x u)
        _put_col(c_mat, adr, c, _rt(fr, _sub3(du, cross3(jrr, u))))


@kernel
def _in_subtree(m, k, b):
    while k > b:
        k = m.body_parentid[k]
    return k == b


@kernel
def _subtree_rows(m, d, s, c_mat, jac, dof):
    """C's rows of subtreelinvel / subtreeangmom of body b (mj_subtreeVel), summed over the
    subtree's bodies k with com x_k, velocity v_k, angular velocity w_k and world inertia
    I_k = R_k diag R_k': v = sum m_k v_k / M; L = sum I_k w_k + m_k (x_k - c) x v_k, whose
    q-derivative takes d I_k w = dw x I_k w - I_k (dw x w) (dw the rotational Jacobian's column)
    and -dc x M v for the moving subtree com c (dc = sum m_k J_k / M, accumulated in jac[_SUM:])."""
    nv = m.nv
    t, b, adr = m.sensor_type[s], m.sensor_objid[s], m.sensor_adr[s]
    mass = m.body_subtreemass[b]
    if mass < MINVAL:
        return
    lin = t == _SUBTREELINVEL
    acc = jac[_SUM:_SUM + 3]
    for r in range(3):
        for c in range(nv):
            acc[r, c] = 0.0
    cb = d.subtree_com[b]
    for k in range(b, m.nbody):
        mk = m.body_mass[k]
        if not _in_subtree(m, k, b) or (mk == 0.0 and m.body_inertia[k, 0] == 0.0
                                        and m.body_inertia[k, 1] == 0.0 and m.body_inertia[k, 2] == 0.0):
            continue
        x = d.xipos[k]
        vb, rp, w, v = _point(m, d, k, x[0], x[1], x[2], jac, _JP0)
        rot = d.ximat[k]
        xc = (x[0] - cb[0], x[1] - cb[1], x[2] - cb[2])
        for c in range(nv):
            if not _moves(jac, _JP0, c):
                continue
            jp, jr = _col3(jac, _JP0, c), _col3(jac, _JR0, c)
            dw, dv = point_velocity_dq(d.cdof, dof, c, vb, rp, jp)
            if lin:
                for r in range(3):
                    c_mat[adr + r, c] += mk / mass * dv[r]
                    c_mat[adr + r, nv + c] += mk / mass * jp[r]
                continue
            for r in range(3):
                acc[r, c] += mk * jp[r]
            iw = _inertia_times(m, rot, k, w)
            e = _sub3(_add3(cross3(jr, iw), _inertia_times(m, rot, k, dw)),
                      _inertia_times(m, rot, k, cross3(jr, w)))
            e = _add3(e, _add3(_scale3(cross3(jp, v), mk), _scale3(cross3(xc, dv), mk)))
            f = _add3(_inertia_times(m, rot, k, jr), _scale3(cross3(xc, jp), mk))
            for r in range(3):
                c_mat[adr + r, c] += e[r]
                c_mat[adr + r, nv + c] += f[r]
    if not lin:
        vc = d.subtree_linvel[b]
        for c in range(nv):
            e = cross3(_col3(acc, 0, c), vc)
            for r in range(3):
                c_mat[adr + r, c] -= e[r]


@kernel(inline="always")
def _inertia_times(m, rot, k, x):
    """R diag(body_inertia[k]) R' x."""
    i = m.body_inertia[k]
    y0 = (rot[0, 0] * x[0] + rot[1, 0] * x[1] + rot[2, 0] * x[2]) * i[0]
    y1 = (rot[0, 1] * x[0] + rot[1, 1] * x[1] + rot[2, 1] * x[2]) * i[1]
    y2 = (rot[0, 2] * x[0] + rot[1, 2] * x[1] + rot[2, 2] * x[2]) * i[2]
    return (rot[0, 0] * y0 + rot[0, 1] * y1 + rot[0, 2] * y2,
            rot[1, 0] * y0 + rot[1, 1] * y1 + rot[1, 2] * y2,
            rot[2, 0] * y0 + rot[2, 1] * y1 + rot[2, 2] * y2)


@kernel
def _tendon_vel_rows(m, d, s, c_mat, jac, dof):
    """C's row of tendonvel of a spatial tendon through sites and pulleys (mj_tendon's pieces:
    module docstring); its velocity columns are ten_J."""
    nv = m.nv
    ten, adr = m.sensor_objid[s], m.sensor_adr[s]
    for c in range(nv):
        c_mat[adr, nv + c] = d.ten_J[ten, c]
    start, num = m.tendon_adr[ten], m.tendon_num[ten]
    divisor = 1.0
    for j in range(num - 1):
        if m.wrap_type[start + j] == WRAP_PULLEY:
            divisor = m.wrap_prm[start + j]
            continue
        if m.wrap_type[start + j + 1] == WRAP_PULLEY:
            continue
        s0, s1 = m.wrap_objid[start + j], m.wrap_objid[start + j + 1]
        b0, b1 = m.site_bodyid[s0], m.site_bodyid[s1]
        if b0 == b1:
            continue   # a piece on one body keeps its length
        p0, p1 = d.site_xpos[s0], d.site_xpos[s1]
        vb0, rp0, _, v0 = _point(m, d, b0, p0[0], p0[1], p0[2], jac, _JP0)
        vb1, rp1, _, v1 = _point(m, d, b1, p1[0], p1[1], p1[2], jac, _JP1)
        e = (p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2])
        length = max(MINVAL, (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) ** 0.5)
        u = _scale3(e, 1.0 / length)
        dvel = _sub3(v1, v0)
        for c in range(nv):
            dp = _sub3(_col3(jac, _JP1, c), _col3(jac, _JP0, c))
            # d u = (I - u u') dp / length
            du = _scale3(_sub3(dp, _scale3(u, _dot3(u, dp))), 1.0 / length)
            x = _dot3(du, dvel)
            if _moves(jac, _JP1, c):
                x += _dot3(u, point_velocity_dq(d.cdof, dof, c, vb1, rp1, _col3(jac, _JP1, c))[1])
            if _moves(jac, _JP0, c):
                x -= _dot3(u, point_velocity_dq(d.cdof, dof, c, vb0, rp0, _col3(jac, _JP0, c))[1])
            c_mat[adr, c] += x / divisor


@handle_entry(args="int64, float64[:, ::1], float64[:, ::1]", needed=_has_more_rows)
def sensor_more_rows_entry(m, d, s, c_mat, jac):
    """C's rows of sensor s (``more_rows``): frame sensors with a reference frame or of a camera,
    subtreelinvel, subtreeangmom, tendonvel of a spatial tendon. jac: (JAC_ROWS, nv) scratch. The
    rows are zero on entry (sensor_rows_entry)."""
    t = m.sensor_type[s]
    dof = d.scratch_rne_dof
    if t != _FRAMEPOS and t != _FRAMEQUAT and not _FRAMEXAXIS <= t <= _FRAMEZAXIS:
        rne_partials(m, d, d.qacc, False, d.scratch_rne_body, dof)
    if t == _SUBTREELINVEL or t == _SUBTREEANGMOM:
        _subtree_rows(m, d, s, c_mat, jac, dof)
    elif t == _TENDONVEL:
        _tendon_vel_rows(m, d, s, c_mat, jac, dof)
    else:
        _frame_ref_rows(m, d, s, c_mat, jac, dof)


# ---------------------------------------------------------------------------------------
# the acceleration stage: sensors of forward's qacc (mj_rnePostConstraint's cacc and cfrc_int)

_ACCELEROMETER, _FORCE, _TORQUE = int(SensorType.ACCELEROMETER), int(SensorType.FORCE), int(SensorType.TORQUE)
_FRAMELINACC, _FRAMEANGACC = int(SensorType.FRAMELINACC), int(SensorType.FRAMEANGACC)
_OBJ_SITE = int(ObjType.SITE)
ACC_SENSORS = (SensorType.ACCELEROMETER, SensorType.FORCE, SensorType.TORQUE, SensorType.FRAMELINACC,
               SensorType.FRAMEANGACC)


@kernel
def acc_rows(m, s):
    """Whether sensor s's C, D rows are ``sensor_acc_rows_entry``'s."""
    t = m.sensor_type[s]
    return t == _ACCELEROMETER or t == _FORCE or t == _TORQUE or t == _FRAMELINACC or t == _FRAMEANGACC


def has_acc_rows(m) -> bool:
    """``needed`` of the acceleration-stage unit, from Python."""
    return bool(np.isin(m.sensor_type, [int(t) for t in ACC_SENSORS]).any())


@kernel
def _external_force(m, d, b):
    """Whether a body of b's subtree has an external force (cfrc_ext: contacts, connect and weld
    rows, spatial tendons; mj_rnePostConstraint): force and torque sensors then depend on forces
    not differentiated here."""
    for k in range(b, m.nbody):
        if _in_subtree(m, k, b):
            for r in range(6):
                if d.cfrc_ext[k, r] != 0.0:
                    return True
    return False


@kernel(inline="always")
def _acc_partials(m, d, body, dof, c, b, vb, rp, w, vp, jp):
    """(q, v, qacc) partials of the angular and linear acceleration at a point p on body b (rp =
    p - o; the linear one with mj_objectAcceleration's w x v_p) along dof c, which moves b
    (derivative_rne's module docstring: d a / d q_c = S_c x (a - a0_c) + (v0_c x S_c) x (v - v0_c),
    d a / d qd_c = S_c x v + (v0_c + v1_c) x S_c, d a / d qacc_c = S_c)."""
    s = row6(d.cdof, c)
    v0 = _get(dof, c, _V0)
    a = _get(body, b, _ACC)
    alpha = (a[0], a[1], a[2])
    daq = _add(_cross(s, _sub(a, _get(dof, c, _A0))), _cross(_cross(v0, s), _sub(vb, v0)))
    dav = _add(_cross(s, vb), _cross(_add(v0, _get(dof, c, _V1)), s))
    dw, dvp = point_velocity_dq(d.cdof, dof, c, vb, rp, jp)
    jr = (s[0], s[1], s[2])
    lq = _add3(_add3(_add3(_lin(daq), cross3(_rot(daq), rp)), cross3(alpha, jp)),
               _add3(cross3(dw, vp), cross3(w, dvp)))
    lv = _add3(_add3(_lin(dav), cross3(_rot(dav), rp)), _add3(cross3(jr, vp), cross3(w, jp)))
    return _rot(daq), lq, _rot(dav), lv


@kernel(inline="always")
def _subtree_force_partials(m, d, body, bmat, dof, c, b):
    """(q, v, qacc) partials of cfrc_int[b] (without external forces: the subtree's
    I_k a_k + v_k x* I_k v_k) along dof c: with u = v0_c x S_c, b_c = a0_c x S_c - u x v0_c,
    e_c = (v0_c + v1_c) x S_c (derivative_rne), the part moved is the subtree of c's body k when it
    lies in b's subtree (Ic_k b_c + Bc_k u + S_c x* F_k, Ic_k e_c + Bc_k S_c, Ic_k S_c), else, when c
    moves b, all of b's (S_c x* F_b + Ic_b b_c + Bc_b u, ...)."""
    s = row6(d.cdof, c)
    v0 = _get(dof, c, _V0)
    u = _cross(v0, s)
    bc = _sub(_cross(_get(dof, c, _A0), s), _cross(u, v0))
    e = _cross(_add(v0, _get(dof, c, _V1)), s)
    k = m.dof_bodyid[c]
    if not _in_subtree(m, k, b):
        k = b
    fq = _add(_add(inert_vec(d.crb, k, bc), _mat_vec(bmat, k, u, False)), cross_force(s, _get(body, k, _FRC)))
    fv = _add(inert_vec(d.crb, k, e), _mat_vec(bmat, k, s, False))
    return fq, fv, inert_vec(d.crb, k, s)


@kernel
def _acc_sensor_rows(m, d, s, rhs_f, c_mat, d_mat, jac, body, bmat, dof):
    """C, D rows of an acceleration-stage sensor s: its partials in q, v (written) and in qacc
    (into jac[_JP1:_JP1 + 3]), then composed with dqacc = rhs_f (forward's, every column)."""
    nv, ndx = m.nv, 2 * m.nv + m.na
    t, obj, adr = m.sensor_type[s], m.sensor_objid[s], m.sensor_adr[s]
    frame = t == _FRAMELINACC or t == _FRAMEANGACC
    ot = m.sensor_objtype[s] if frame else _OBJ_SITE
    b = _frame_body(m, ot, obj)
    f = _frame(m, d, ot, obj)
    vb, rp, w, vp = _point(m, d, b, f[0], f[1], f[2], jac, _JP0)
    force = t == _FORCE or t == _TORQUE
    angular = t == _FRAMEANGACC
    if force:
        fb = row6(d.cfrc_int, b)
        fl = _lin(fb)
        x = fl if t == _FORCE else _sub3(_rot(fb), cross3(rp, fl))
    else:
        a = _get(body, b, _ACC)
        fl = (0.0, 0.0, 0.0)
        x = _rot(a) if angular else _add3(_add3(_lin(a), cross3(_rot(a), rp)), cross3(w, vp))
    for c in range(nv):
        jp = _col3(jac, _JP0, c)
        gq, gv, ga = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if force:
            if _in_subtree(m, m.dof_bodyid[c], b) or _moves(jac, _JP0, c):
                fq, fv, fa = _subtree_force_partials(m, d, body, bmat, dof, c, b)
                if t == _FORCE:
                    gq, gv, ga = _lin(fq), _lin(fv), _lin(fa)
                else:
                    # torque about the site: F_rot - rp x F_lin, the site moving by jp
                    gq = _sub3(_sub3(_rot(fq), cross3(rp, _lin(fq))), cross3(jp, fl))
                    gv = _sub3(_rot(fv), cross3(rp, _lin(fv)))
                    ga = _sub3(_rot(fa), cross3(rp, _lin(fa)))
        elif _moves(jac, _JP0, c):
            aq, lq, av, lv = _acc_partials(m, d, body, dof, c, b, vb, rp, w, vp, jp)
            gq, gv = (aq, av) if angular else (lq, lv)
            ga = _col3(jac, _JR0, c) if angular else jp
        for r in range(3):
            c_mat[adr + r, c] = gq[r]
            c_mat[adr + r, nv + c] = gv[r]
            jac[_JP1 + r, c] = ga[r]
    # the qacc partials times forward's dqacc, every column
    for r in range(3):
        for c in range(ndx):
            acc = 0.0
            for j in range(nv):
                acc += jac[_JP1 + r, j] * rhs_f[j, c]
            c_mat[adr + r, c] += acc
        for i in range(m.nu):
            acc = 0.0
            for j in range(nv):
                acc += jac[_JP1 + r, j] * rhs_f[j, ndx + i]
            d_mat[adr + r, i] = acc
    if not frame:
        # in the site's frame: d(R'x) = R'(dx - jacr dq x x), and R' on every column
        mat = d.site_xmat[obj]
        for c in range(nv):
            e = cross3(_col3(jac, _JR0, c), x)
            for r in range(3):
                c_mat[adr + r, c] -= e[r]
        for c in range(ndx + m.nu):
            y = (c_mat[adr, c], c_mat[adr + 1, c], c_mat[adr + 2, c]) if c < ndx else \
                (d_mat[adr, c - ndx], d_mat[adr + 1, c - ndx], d_mat[adr + 2, c - ndx])
            z = (mat[0, 0] * y[0] + mat[1, 0] * y[1] + mat[2, 0] * y[2],
                 mat[0, 1] * y[0] + mat[1, 1] * y[1] + mat[2, 1] * y[2],
                 mat[0, 2] * y[0] + mat[1, 2] * y[1] + mat[2, 2] * y[2])
            for r in range(3):
                if c < ndx:
                    c_mat[adr + r, c] = z[r]
                else:
                    d_mat[adr + r, c - ndx] = z[r]


@handle_entry(returns="boolean", args="float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
                                      "int64[:, ::1]", needed=has_acc_rows)
def sensor_acc_rows_entry(m, d, rhs_f, c_mat, d_mat, jac, codes):
    """C, D rows of the acceleration-stage sensors (``acc_rows``: accelerometer, force, torque,
    framelinacc, frameangacc) from rhs_f = d qacc / d[q, v, act, ctrl] of forward (at its qacc,
    constraint forces included). A force or torque sensor whose subtree has an external force
    (``_external_force``) at this state is listed in codes as (code, sensor) instead (returns
    whether any was), its rows left zero. The sensors' cutoffs zero their rows."""
    body, bmat, dof = d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof
    rne_partials(m, d, d.qacc, True, body, dof)
    subtree_forces(m, d, body)
    composite_b(m, d, bmat)
    refused = False
    for s in range(m.nsensor):
        if not acc_rows(m, s):
            continue
        t = m.sensor_type[s]
        if (t == _FORCE or t == _TORQUE) and _external_force(m, d, m.site_bodyid[m.sensor_objid[s]]):
            n = codes[0, 0] + 1
            if n < codes.shape[0]:
                codes[n, 0], codes[n, 1] = R_SENSOR_EXTERNAL, s
                codes[0, 0] = n
            refused = True
            continue
        _acc_sensor_rows(m, d, s, rhs_f, c_mat, d_mat, jac, body, bmat, dof)
        cutoff = m.sensor_cutoff[s]
        adr = m.sensor_adr[s]
        for r in range(adr, adr + 3):
            if cutoff > 0.0 and abs(d.sensordata[r]) >= cutoff:
                for c in range(c_mat.shape[1]):
                    c_mat[r, c] = 0.0
                for c in range(d_mat.shape[1]):
                    d_mat[r, c] = 0.0
    return refused
