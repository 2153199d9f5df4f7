"""Small-vector helpers for kernels, named after MuJoCo's ``mju_*`` (engine_util_*.c).

Every vector argument is a pair (2-D array, row): ``mul_quat(xquat, b, xquat, p,
body_quat, b)`` reads rows p and b and writes row b, like MuJoCo's pointer
arithmetic ``d->xquat+4*b``. Passing rows by index rather than as NumPy views
matters for speed: each view Numba creates costs an atomic reference-count
update, which made kernels 3-5x slower than this style. Outputs are computed into
locals first, so an output row may alias an input row.

The helpers are ordinary calls, not ``inline="always"``: Numba's own inlining
re-types and re-lowers the helper at every call site, which cost about a third of
the cold-start compile of ``forward``, while LLVM inlines these small functions
into their callers anyway once the modules are linked (no measurable run-time change).

Quaternions are (w, x, y, z); spatial vectors are [rotation; translation]; 3x3
matrices are (3, 3) blocks of (n, 3, 3) arrays.

A spatial vector that a kernel builds up step by step (a body's velocity as its dofs
are added) is better kept as a 6-tuple (``row6``, ``add_scaled6``, ``set_row6``): a
tuple lives in registers, while a row written and read back at every step goes through
memory, since LLVM cannot prove that the row does not alias the other arrays (com_vel on
the humanoid: 200 -> 164 ns).
"""

from __future__ import annotations

import math

from kinedyn._handle import kernel
from kinedyn.types import MINVAL

# ---- quaternions and rotations ----------------------------------------------------------------


@kernel
def mul_quat(res, r, q1, i, q2, j):
    """res[r] = q1[i] * q2[j], the Hamilton product (mju_mulQuat)."""
    w = q1[i, 0] * q2[j, 0] - q1[i, 1] * q2[j, 1] - q1[i, 2] * q2[j, 2] - q1[i, 3] * q2[j, 3]
    x = q1[i, 0] * q2[j, 1] + q1[i, 1] * q2[j, 0] + q1[i, 2] * q2[j, 3] - q1[i, 3] * q2[j, 2]
    y = q1[i, 0] * q2[j, 2] - q1[i, 1] * q2[j, 3] + q1[i, 2] * q2[j, 0] + q1[i, 3] * q2[j, 1]
    z = q1[i, 0] * q2[j, 3] + q1[i, 1] * q2[j, 2] - q1[i, 2] * q2[j, 1] + q1[i, 3] * q2[j, 0]
    res[r, 0] = w
    res[r, 1] = x
    res[r, 2] = y
    res[r, 3] = z


@kernel
def normalize4(q, r):
    """Normalise q[r] in place; a (near-)zero quaternion becomes the identity (mju_normalize4)."""
    norm = math.sqrt(q[r, 0] * q[r, 0] + q[r, 1] * q[r, 1] + q[r, 2] * q[r, 2] + q[r, 3] * q[r, 3])
    if norm < MINVAL:
        q[r, 0] = 1.0
        q[r, 1] = 0.0
        q[r, 2] = 0.0
        q[r, 3] = 0.0
    elif abs(norm - 1.0) > MINVAL:
        for k in range(4):
            q[r, k] /= norm
    return norm


@kernel
def normalize3(v, r):
    """Normalise v[r, 0:3] in place and return its norm; near-zero becomes (1, 0, 0) (mju_normalize3)."""
    norm = math.sqrt(v[r, 0] * v[r, 0] + v[r, 1] * v[r, 1] + v[r, 2] * v[r, 2])
    if norm < MINVAL:
        v[r, 0] = 1.0
        v[r, 1] = 0.0
        v[r, 2] = 0.0
    else:
        for k in range(3):
            v[r, k] /= norm
    return norm


@kernel
def rot_vec_quat(res, r, vec, v, quat, q):
    """res[r] = R(quat[q]) vec[v], without forming R (mju_rotVecQuat).

    MuJoCo short-cuts a zero vector and the identity quaternion; the formula gives the
    same bits in both cases and is faster without the branches.
    """
    # t = w v + q_xyz x v ;  res = v + 2 q_xyz x t
    t0 = quat[q, 0] * vec[v, 0] + quat[q, 2] * vec[v, 2] - quat[q, 3] * vec[v, 1]
    t1 = quat[q, 0] * vec[v, 1] + quat[q, 3] * vec[v, 0] - quat[q, 1] * vec[v, 2]
    t2 = quat[q, 0] * vec[v, 2] + quat[q, 1] * vec[v, 1] - quat[q, 2] * vec[v, 0]
    r0 = vec[v, 0] + 2.0 * (quat[q, 2] * t2 - quat[q, 3] * t1)
    r1 = vec[v, 1] + 2.0 * (quat[q, 3] * t0 - quat[q, 1] * t2)
    r2 = vec[v, 2] + 2.0 * (quat[q, 1] * t1 - quat[q, 2] * t0)
    res[r, 0] = r0
    res[r, 1] = r1
    res[r, 2] = r2


@kernel
def quat2mat(res, r, quat, q):
    """res[r] (3, 3) = rotation matrix of the unit quaternion quat[q] (mju_quat2Mat; its identity
    shortcut gives the same bits as the formula)."""
    q00 = quat[q, 0] * quat[q, 0]
    q01 = quat[q, 0] * quat[q, 1]
    q02 = quat[q, 0] * quat[q, 2]
    q03 = quat[q, 0] * quat[q, 3]
    q11 = quat[q, 1] * quat[q, 1]
    q12 = quat[q, 1] * quat[q, 2]
    q13 = quat[q, 1] * quat[q, 3]
    q22 = quat[q, 2] * quat[q, 2]
    q23 = quat[q, 2] * quat[q, 3]
    q33 = quat[q, 3] * quat[q, 3]
    res[r, 0, 0] = q00 + q11 - q22 - q33
    res[r, 1, 1] = q00 - q11 + q22 - q33
    res[r, 2, 2] = q00 - q11 - q22 + q33
    res[r, 0, 1] = 2.0 * (q12 - q03)
    res[r, 0, 2] = 2.0 * (q13 + q02)
    res[r, 1, 0] = 2.0 * (q12 + q03)
    res[r, 1, 2] = 2.0 * (q23 - q01)
    res[r, 2, 0] = 2.0 * (q13 - q02)
    res[r, 2, 1] = 2.0 * (q23 + q01)


@kernel
def axis_angle2quat(res, r, axis, a, angle):
    """res[r] = rotation by ``angle`` about the unit axis[a] (mju_axisAngle2Quat)."""
    if angle == 0.0:
        res[r, 0] = 1.0
        res[r, 1] = 0.0
        res[r, 2] = 0.0
        res[r, 3] = 0.0
    else:
        s = math.sin(angle * 0.5)
        res[r, 0] = math.cos(angle * 0.5)
        res[r, 1] = axis[a, 0] * s
        res[r, 2] = axis[a, 1] * s
        res[r, 3] = axis[a, 2] * s


@kernel
def quat2vel(res, r, quat, q, dt):
    """res[r, 0:3] = angular velocity that rotates by quat[q] in time ``dt`` (mju_quat2Vel)."""
    res[r, 0] = quat[q, 1]
    res[r, 1] = quat[q, 2]
    res[r, 2] = quat[q, 3]
    sin_a_2 = normalize3(res, r)
    speed = 2.0 * math.atan2(sin_a_2, quat[q, 0])
    # wrap to the short way round
    if speed > math.pi:
        speed -= 2.0 * math.pi
    speed /= dt
    for k in range(3):
        res[r, k] *= speed


@kernel
def sub_quat(res, r, qa, a, qb, b, tmp, t):
    """res[r, 0:3] = rotation vector from qb[b] to qa[a]: log(qb^-1 qa) (mju_subQuat); uses tmp[t]."""
    # tmp = conj(qb) * qa
    w = qb[b, 0] * qa[a, 0] + qb[b, 1] * qa[a, 1] + qb[b, 2] * qa[a, 2] + qb[b, 3] * qa[a, 3]
    x = qb[b, 0] * qa[a, 1] - qb[b, 1] * qa[a, 0] - qb[b, 2] * qa[a, 3] + qb[b, 3] * qa[a, 2]
    y = qb[b, 0] * qa[a, 2] + qb[b, 1] * qa[a, 3] - qb[b, 2] * qa[a, 0] - qb[b, 3] * qa[a, 1]
    z = qb[b, 0] * qa[a, 3] - qb[b, 1] * qa[a, 2] + qb[b, 2] * qa[a, 1] - qb[b, 3] * qa[a, 0]
    tmp[t, 0] = w
    tmp[t, 1] = x
    tmp[t, 2] = y
    tmp[t, 3] = z
    quat2vel(res, r, tmp, t, 1.0)


@kernel
def quat_integrate(quat, q, vel, v, scale, tmp, t):
    """quat[q] <- normalize(quat[q]) * exp(scale * vel[v] / 2): rotate by a body-frame angular
    velocity (mju_quatIntegrate, which normalises the input, not the result); uses tmp[t], tmp[t+1]."""
    tmp[t, 0] = vel[v, 0]
    tmp[t, 1] = vel[v, 1]
    tmp[t, 2] = vel[v, 2]
    angle = scale * normalize3(tmp, t)
    axis_angle2quat(tmp, t + 1, tmp, t, angle)
    normalize4(quat, q)
    mul_quat(quat, q, quat, q, tmp, t + 1)


# ---- spatial algebra --------------------------------------------------------------------------


@kernel
def inert_vec(inert, i, vec):
    """inert[i] vec for a com-based inertia in cinert layout, vec a 6-tuple; returns a 6-tuple
    (mju_mulInertVec).

    inert = [Ixx Iyy Izz Ixy Ixz Iyz, m*c (3), m], vec = [rot; lin].
    """
    v0, v1, v2, v3, v4, v5 = vec
    return (inert[i, 0] * v0 + inert[i, 3] * v1 + inert[i, 4] * v2 - inert[i, 8] * v4 + inert[i, 7] * v5,
            inert[i, 3] * v0 + inert[i, 1] * v1 + inert[i, 5] * v2 + inert[i, 8] * v3 - inert[i, 6] * v5,
            inert[i, 4] * v0 + inert[i, 5] * v1 + inert[i, 2] * v2 - inert[i, 7] * v3 + inert[i, 6] * v4,
            inert[i, 8] * v1 - inert[i, 7] * v2 + inert[i, 9] * v3,
            inert[i, 6] * v2 - inert[i, 8] * v0 + inert[i, 9] * v4,
            inert[i, 7] * v0 - inert[i, 6] * v1 + inert[i, 9] * v5)


@kernel
def mul_inert_vec(res, r, inert, i, vec, v):
    """res[r] = inert[i] vec[v], rows in and out (mju_mulInertVec; see inert_vec)."""
    set_row6(res, r, inert_vec(inert, i, row6(vec, v)))


@kernel
def cross_motion(vel, v, j):
    """vel x v[j] for motion vectors, vel a 6-tuple; returns a 6-tuple (mju_crossMotion)."""
    w0, w1, w2, w3, w4, w5 = vel
    return (-w2 * v[j, 1] + w1 * v[j, 2],
            w2 * v[j, 0] - w0 * v[j, 2],
            -w1 * v[j, 0] + w0 * v[j, 1],
            -w2 * v[j, 4] + w1 * v[j, 5] - w5 * v[j, 1] + w4 * v[j, 2],
            w2 * v[j, 3] - w0 * v[j, 5] + w5 * v[j, 0] - w3 * v[j, 2],
            -w1 * v[j, 3] + w0 * v[j, 4] - w4 * v[j, 0] + w3 * v[j, 1])


@kernel
def cross_force(vel, f):
    """vel x* f for a force vector, both 6-tuples; returns a 6-tuple (mju_crossForce)."""
    w0, w1, w2, w3, w4, w5 = vel
    f0, f1, f2, f3, f4, f5 = f
    return (-w2 * f1 + w1 * f2 - w5 * f4 + w4 * f5,
            w2 * f0 - w0 * f2 + w5 * f3 - w3 * f5,
            -w1 * f0 + w0 * f1 - w4 * f3 + w3 * f4,
            -w2 * f4 + w1 * f5,
            w2 * f3 - w0 * f5,
            -w1 * f3 + w0 * f4)


@kernel
def row6(a, i):
    """a[i] as a 6-tuple."""
    return a[i, 0], a[i, 1], a[i, 2], a[i, 3], a[i, 4], a[i, 5]


@kernel
def set_row6(a, i, vec):
    """a[i] = vec, a 6-tuple."""
    a[i, 0], a[i, 1], a[i, 2], a[i, 3], a[i, 4], a[i, 5] = vec


@kernel
def add6(x, y):
    """x + y for 6-tuples."""
    return x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5]


@kernel
def add_scaled6(vec, a, i, scale):
    """vec + a[i] * scale, vec a 6-tuple; returns a 6-tuple (mju_addToScl)."""
    return (vec[0] + a[i, 0] * scale, vec[1] + a[i, 1] * scale, vec[2] + a[i, 2] * scale,
            vec[3] + a[i, 3] * scale, vec[4] + a[i, 4] * scale, vec[5] + a[i, 5] * scale)


@kernel
def dot6(a, i, b, j):
    """a[i] . b[j] for 6-vectors."""
    return a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2] + a[i, 3] * b[j, 3] \
        + a[i, 4] * b[j, 4] + a[i, 5] * b[j, 5]


# ---- vectors ----------------------------------------------------------------------------------


@kernel
def copy(res, vec):
    """res[:] = vec for equal-length 1-D arrays (mju_copy).

    A loop rather than a slice assignment: Numba compiles an array-to-array slice
    assignment with a shape-mismatch error path that formats the shapes into a string,
    several seconds of cold-start compile for each function that has one.
    """
    for k in range(vec.shape[0]):
        res[k] = vec[k]
