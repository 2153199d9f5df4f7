"""Small-vector helpers for kernels, named after MuJoCo's ``mju_*`` (engine_util_*.c).

Every helper writes into an output argument and allocates nothing, so kernels
built from them allocate nothing either. Quaternions are (w, x, y, z); spatial
vectors are [rotation; translation]; 3x3 matrices are row-major (3, 3) arrays.
"""

from __future__ import annotations

import math

from numba import njit

from kinedyn.types import (
    MINVAL,
    SAMEFRAME_BODY,
    SAMEFRAME_BODYROT,
    SAMEFRAME_INERTIA,
    SAMEFRAME_INERTIAROT,
)


@njit(cache=True, inline="always")
def mul_quat(res, q1, q2):
    """res = q1 * q2 (Hamilton product); res may alias q1 or q2 (mju_mulQuat)."""
    w = q1[0] * q2[0] - q1[1] * q2[1] - q1[2] * q2[2] - q1[3] * q2[3]
    x = q1[0] * q2[1] + q1[1] * q2[0] + q1[2] * q2[3] - q1[3] * q2[2]
    y = q1[0] * q2[2] - q1[1] * q2[3] + q1[2] * q2[0] + q1[3] * q2[1]
    z = q1[0] * q2[3] + q1[1] * q2[2] - q1[2] * q2[1] + q1[3] * q2[0]
    res[0] = w
    res[1] = x
    res[2] = y
    res[3] = z


@njit(cache=True, inline="always")
def normalize4(q):
    """Normalise q in place; a (near-)zero quaternion becomes the identity (mju_normalize4)."""
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if norm < MINVAL:
        q[0] = 1.0
        q[1] = 0.0
        q[2] = 0.0
        q[3] = 0.0
    elif abs(norm - 1.0) > MINVAL:
        for i in range(4):
            q[i] /= norm
    return norm


@njit(cache=True, inline="always")
def normalize3(v):
    """Normalise v in place and return its norm; a (near-)zero v becomes (1, 0, 0) (mju_normalize3)."""
    norm = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if norm < MINVAL:
        v[0] = 1.0
        v[1] = 0.0
        v[2] = 0.0
    else:
        for i in range(3):
            v[i] /= norm
    return norm


@njit(cache=True, inline="always")
def rot_vec_quat(res, vec, quat):
    """res = R(quat) vec, without forming R (mju_rotVecQuat).

    MuJoCo short-cuts a zero vector and the identity quaternion; the formula gives the
    same bits in both cases, and without the branches the kernel is 3x faster.
    """
    # t = w v + q_xyz x v ;  res = v + 2 q_xyz x t
    t0 = quat[0] * vec[0] + quat[2] * vec[2] - quat[3] * vec[1]
    t1 = quat[0] * vec[1] + quat[3] * vec[0] - quat[1] * vec[2]
    t2 = quat[0] * vec[2] + quat[1] * vec[1] - quat[2] * vec[0]
    r0 = vec[0] + 2.0 * (quat[2] * t2 - quat[3] * t1)
    r1 = vec[1] + 2.0 * (quat[3] * t0 - quat[1] * t2)
    r2 = vec[2] + 2.0 * (quat[1] * t1 - quat[2] * t0)
    res[0] = r0
    res[1] = r1
    res[2] = r2


@njit(cache=True, inline="always")
def quat2mat(res, quat):
    """res (3, 3) = rotation matrix of a unit quaternion (mju_quat2Mat; its identity shortcut
    gives the same bits as the formula)."""
    q00 = quat[0] * quat[0]
    q01 = quat[0] * quat[1]
    q02 = quat[0] * quat[2]
    q03 = quat[0] * quat[3]
    q11 = quat[1] * quat[1]
    q12 = quat[1] * quat[2]
    q13 = quat[1] * quat[3]
    q22 = quat[2] * quat[2]
    q23 = quat[2] * quat[3]
    q33 = quat[3] * quat[3]
    res[0, 0] = q00 + q11 - q22 - q33
    res[1, 1] = q00 - q11 + q22 - q33
    res[2, 2] = q00 - q11 - q22 + q33
    res[0, 1] = 2.0 * (q12 - q03)
    res[0, 2] = 2.0 * (q13 + q02)
    res[1, 0] = 2.0 * (q12 + q03)
    res[1, 2] = 2.0 * (q23 - q01)
    res[2, 0] = 2.0 * (q13 - q02)
    res[2, 1] = 2.0 * (q23 + q01)


@njit(cache=True, inline="always")
def axis_angle2quat(res, axis, angle):
    """res = rotation by ``angle`` about the unit ``axis`` (mju_axisAngle2Quat)."""
    if angle == 0.0:
        res[0] = 1.0
        res[1] = 0.0
        res[2] = 0.0
        res[3] = 0.0
    else:
        s = math.sin(angle * 0.5)
        res[0] = math.cos(angle * 0.5)
        res[1] = axis[0] * s
        res[2] = axis[1] * s
        res[3] = axis[2] * s


@njit(cache=True, inline="always")
def mul_mat_vec3(res, mat, vec):
    """res = mat @ vec for a (3, 3) matrix."""
    for i in range(3):
        res[i] = mat[i, 0] * vec[0] + mat[i, 1] * vec[1] + mat[i, 2] * vec[2]


@njit(cache=True, inline="always")
def local2global(xpos_out, xmat_out, b, pos, quat, sameframe, xpos, xmat, xquat, xipos, ximat, qtmp):
    """Pose of a frame given in the coordinates of body b (mj_local2Global).

    xpos_out = xpos_b + xmat_b pos ;  xmat_out = R(xquat_b * quat). A frame that
    coincides with the body frame or the inertial frame (``sameframe``, set by the
    compiler) copies that frame instead, as MuJoCo does. ``qtmp`` is a (4,) scratch.
    """
    if sameframe == SAMEFRAME_BODY:
        for i in range(3):
            xpos_out[i] = xpos[b, i]
    elif sameframe == SAMEFRAME_INERTIA:
        for i in range(3):
            xpos_out[i] = xipos[b, i]
    else:
        for i in range(3):
            xpos_out[i] = xpos[b, i] + xmat[b, i, 0] * pos[0] + xmat[b, i, 1] * pos[1] \
                + xmat[b, i, 2] * pos[2]
    if sameframe == SAMEFRAME_BODY or sameframe == SAMEFRAME_BODYROT:
        for i in range(3):
            for j in range(3):
                xmat_out[i, j] = xmat[b, i, j]
    elif sameframe == SAMEFRAME_INERTIA or sameframe == SAMEFRAME_INERTIAROT:
        for i in range(3):
            for j in range(3):
                xmat_out[i, j] = ximat[b, i, j]
    else:
        mul_quat(qtmp, xquat[b], quat)
        quat2mat(xmat_out, qtmp)


@njit(cache=True, inline="always")
def cross3(res, a, b):
    """res = a x b (res must not alias a or b)."""
    res[0] = a[1] * b[2] - a[2] * b[1]
    res[1] = a[2] * b[0] - a[0] * b[2]
    res[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True, inline="always")
def mul_inert_vec(res, inert, vec):
    """res = I vec for a com-based inertia in cinert layout (mju_mulInertVec).

    inert = [Ixx Iyy Izz Ixy Ixz Iyz, m*c (3), m], vec = [rot; lin].
    """
    res[0] = inert[0] * vec[0] + inert[3] * vec[1] + inert[4] * vec[2] - inert[8] * vec[4] + inert[7] * vec[5]
    res[1] = inert[3] * vec[0] + inert[1] * vec[1] + inert[5] * vec[2] + inert[8] * vec[3] - inert[6] * vec[5]
    res[2] = inert[4] * vec[0] + inert[5] * vec[1] + inert[2] * vec[2] - inert[7] * vec[3] + inert[6] * vec[4]
    res[3] = inert[8] * vec[1] - inert[7] * vec[2] + inert[9] * vec[3]
    res[4] = inert[6] * vec[2] - inert[8] * vec[0] + inert[9] * vec[4]
    res[5] = inert[7] * vec[0] - inert[6] * vec[1] + inert[9] * vec[5]


@njit(cache=True, inline="always")
def cross_motion(res, vel, v):
    """res = vel x v for motion vectors (mju_crossMotion); res must not alias."""
    res[0] = -vel[2] * v[1] + vel[1] * v[2]
    res[1] = vel[2] * v[0] - vel[0] * v[2]
    res[2] = -vel[1] * v[0] + vel[0] * v[1]
    res[3] = -vel[2] * v[4] + vel[1] * v[5] - vel[5] * v[1] + vel[4] * v[2]
    res[4] = vel[2] * v[3] - vel[0] * v[5] + vel[5] * v[0] - vel[3] * v[2]
    res[5] = -vel[1] * v[3] + vel[0] * v[4] - vel[4] * v[0] + vel[3] * v[1]


@njit(cache=True, inline="always")
def cross_force(res, vel, f):
    """res = vel x* f for a force vector (mju_crossForce); res must not alias."""
    res[0] = -vel[2] * f[1] + vel[1] * f[2] - vel[5] * f[4] + vel[4] * f[5]
    res[1] = vel[2] * f[0] - vel[0] * f[2] + vel[5] * f[3] - vel[3] * f[5]
    res[2] = -vel[1] * f[0] + vel[0] * f[1] - vel[4] * f[3] + vel[3] * f[4]
    res[3] = -vel[2] * f[4] + vel[1] * f[5]
    res[4] = vel[2] * f[3] - vel[0] * f[5]
    res[5] = -vel[1] * f[3] + vel[0] * f[4]


@njit(cache=True, inline="always")
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True, inline="always")
def quat2vel(res, quat, dt):
    """Angular velocity that rotates by ``quat`` in time ``dt`` (mju_quat2Vel)."""
    res[0] = quat[1]
    res[1] = quat[2]
    res[2] = quat[3]
    sin_a_2 = normalize3(res)
    speed = 2.0 * math.atan2(sin_a_2, quat[0])
    # wrap to the short way round
    if speed > math.pi:
        speed -= 2.0 * math.pi
    speed /= dt
    for i in range(3):
        res[i] *= speed


@njit(cache=True, inline="always")
def sub_quat(res, qa, qb, qtmp):
    """3-vector rotation from qb to qa: res = log(qb^-1 qa) (mju_subQuat). ``qtmp``: (4,) scratch."""
    # qtmp = conj(qb) * qa
    w = qb[0] * qa[0] + qb[1] * qa[1] + qb[2] * qa[2] + qb[3] * qa[3]
    x = qb[0] * qa[1] - qb[1] * qa[0] - qb[2] * qa[3] + qb[3] * qa[2]
    y = qb[0] * qa[2] + qb[1] * qa[3] - qb[2] * qa[0] - qb[3] * qa[1]
    z = qb[0] * qa[3] - qb[1] * qa[2] + qb[2] * qa[1] - qb[3] * qa[0]
    qtmp[0] = w
    qtmp[1] = x
    qtmp[2] = y
    qtmp[3] = z
    quat2vel(res, qtmp, 1.0)


@njit(cache=True, inline="always")
def quat_integrate(quat, vel, scale, tmp3, tmp4):
    """quat <- normalize(quat) * exp(scale * vel / 2): rotate by the body-frame angular velocity.

    Mirrors mju_quatIntegrate, which normalises the input (not the result).
    """
    tmp3[0] = vel[0]
    tmp3[1] = vel[1]
    tmp3[2] = vel[2]
    angle = scale * normalize3(tmp3)
    axis_angle2quat(tmp4, tmp3, angle)
    normalize4(quat)
    mul_quat(quat, quat, tmp4)
