"""Small-vector helpers for kernels, named after MuJoCo's ``mju_*`` (engine_util_*.c).

Every vector argument is a pair (2-D array, row): ``mul_quat(xquat, b, xquat, p,
body_quat, b)`` reads rows p and b and writes row b, like MuJoCo's pointer
arithmetic ``d->xquat+4*b`` (a NumPy view per row would cost a reference-count
update). Outputs are computed into locals first, so an output row may alias an
input row.

The helpers are ordinary calls, not ``inline="always"``: Numba-level inlining costs
compile time at every call site, and the machine-code optimiser inlines them anyway.

Quaternions are (w, x, y, z); spatial vectors are [rotation; translation]; 3x3
matrices are (3, 3) blocks of (n, 3, 3) arrays.

A spatial vector that a kernel builds up step by step (a body's velocity as its dofs
are added) is better kept as a 6-tuple (``row6``, ``add_scaled6``, ``set_row6``): a
tuple lives in registers, while a row written and read back at every step goes through
memory, since the compiler cannot prove that the row does not alias the other arrays.
(docs/benchmarks.md, "Speed history", has the measurements behind these choices.)
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import jit_disabled, kernel
from kinedyn.engine.types import MINVAL

# ---- indices ----------------------------------------------------------------------------------


@kernel
def unsigned_index(i):
    """``i`` (a row number read from an int array) as an unsigned index.

    Numba gives a signed index Python's meaning (x[-1] is the last row), so every access
    through it pays a sign test and a select, and in a tree walk like ``j =
    dof_parentid[j]`` the next address waits on them. An unsigned index skips that. Use it only for
    indexing (uint64 mixed with int64 in arithmetic gives float64 in Numba), and only
    where ``i`` is a valid row, never -1.
    """
    return np.uint64(i)


if jit_disabled():
    # as plain Python (NUMBA_DISABLE_JIT=1), NumPy promotes uint64 mixed with a signed integer to
    # float64, which cannot index (``M[adr + nnz - 1]``): the row stays a Python int there
    def unsigned_index(i):  # noqa: F811
        return int(i)


# ---- quaternions and rotations ----------------------------------------------------------------
#
# Each operation has a form on components, returning a tuple (``quat_product``, ...), which
# kernels keep in registers across several steps, and a row form (``mul_quat``, ...) that
# reads and writes array rows; the row form calls the component form.


@kernel
def quat_product(aw, ax, ay, az, bw, bx, by, bz):
    """The Hamilton product a * b of two quaternions given by components (mju_mulQuat; each
    component's four products summed pairwise, as MuJoCo 4.0 does: found against its
    mju_mulQuat, the 3.x left-to-right sums differ in the last bit for most quaternions)."""
    return ((aw * bw - ax * bx) - (ay * by + az * bz),
            (aw * bx + ax * bw) + (ay * bz - az * by),
            (aw * by - ax * bz) + (ay * bw + az * bx),
            (aw * bz + ax * by) + (az * bw - ay * bx))


@kernel
def mul_quat(res, r, q1, i, q2, j):
    """res[r] = q1[i] * q2[j], the Hamilton product (mju_mulQuat)."""
    w, x, y, z = quat_product(q1[i, 0], q1[i, 1], q1[i, 2], q1[i, 3], q2[j, 0], q2[j, 1], q2[j, 2], q2[j, 3])
    res[r, 0] = w
    res[r, 1] = x
    res[r, 2] = y
    res[r, 3] = z


@kernel
def normalized_quat(w, x, y, z):
    """(w, x, y, z) scaled to unit length; a (near-)zero quaternion becomes the identity, and one
    within MINVAL of unit length is returned unchanged (mju_normalize4, which also scales by the
    reciprocal of the norm rather than dividing each component)."""
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if norm < MINVAL:
        return 1.0, 0.0, 0.0, 0.0
    if abs(norm - 1.0) > MINVAL:
        inv = 1.0 / norm
        return w * inv, x * inv, y * inv, z * inv
    return w, x, y, z


@kernel
def normalize4(q, r):
    """Normalise q[r] in place (see normalized_quat; mju_normalize4)."""
    w, x, y, z = normalized_quat(q[r, 0], q[r, 1], q[r, 2], q[r, 3])
    q[r, 0] = w
    q[r, 1] = x
    q[r, 2] = y
    q[r, 3] = z


@kernel
def normalize3(v, r):
    """Normalise v[r, 0:3] in place and return its norm; near-zero becomes (1, 0, 0) (mju_normalize3)."""
    norm = math.sqrt(v[r, 0] * v[r, 0] + v[r, 1] * v[r, 1] + v[r, 2] * v[r, 2])
    if norm < MINVAL:
        v[r, 0] = 1.0
        v[r, 1] = 0.0
        v[r, 2] = 0.0
    else:
        inv = 1.0 / norm
        for k in range(3):
            v[r, k] *= inv
    return norm


@kernel
def normalized3(x, y, z):
    """(x, y, z) scaled to unit length, and its length before; (1, 0, 0) when the length is
    below MINVAL (mju_normalize3 on a 3-tuple: it scales by the reciprocal of the length)."""
    length = math.sqrt(x * x + y * y + z * z)
    if length < MINVAL:
        return 1.0, 0.0, 0.0, length
    inv = 1.0 / length
    return x * inv, y * inv, z * inv, length


@kernel
def clip(x, lo, hi):
    """x clipped to [lo, hi] with mju_clip's comparisons (lo when x < lo, hi when x > hi)."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@kernel
def make_frame(frame, i):
    """Complete the contact frame frame[i] (rows: normal, tangent 1, tangent 2) in place
    (mju_makeFrame).

    A collider writes the normal in row 0 and, if it has one, a tangent hint in row 1
    (zeros otherwise). The normal is normalised; a missing hint (squared length < 0.25)
    becomes (0, 1, 0), or (0, 0, 1) when the normal is within 60 degrees of y; the hint is
    then made orthogonal to the normal and normalised, and row 2 = row 0 x row 1. Returns
    the normal's length before normalising (MuJoCo errors below 0.5; the caller decides).
    """
    f = frame[i]
    length = normalize3(f, 0)
    if f[1, 0] * f[1, 0] + f[1, 1] * f[1, 1] + f[1, 2] * f[1, 2] < 0.25:
        f[1, 0] = 0.0
        f[1, 1] = 0.0
        f[1, 2] = 0.0
        if -0.5 < f[0, 1] < 0.5:
            f[1, 1] = 1.0
        else:
            f[1, 2] = 1.0
    # Gram-Schmidt: t1 -= (n . t1) n
    s = f[0, 0] * f[1, 0] + f[0, 1] * f[1, 1] + f[0, 2] * f[1, 2]
    t0, t1, t2 = f[0, 0] * s, f[0, 1] * s, f[0, 2] * s
    f[1, 0] -= t0
    f[1, 1] -= t1
    f[1, 2] -= t2
    normalize3(f, 1)
    f[2, 0] = f[0, 1] * f[1, 2] - f[0, 2] * f[1, 1]
    f[2, 1] = f[0, 2] * f[1, 0] - f[0, 0] * f[1, 2]
    f[2, 2] = f[0, 0] * f[1, 1] - f[0, 1] * f[1, 0]
    return length


@kernel
def rotated_by_quat(vx, vy, vz, qw, qx, qy, qz):
    """R(q) v for a vector and a unit quaternion given by components, without forming R
    (mju_rotVecQuat).

    MuJoCo short-cuts a zero vector and the identity quaternion; the formula gives the
    same bits in both cases and is faster without the branches.
    """
    # t = w v + q_xyz x v ;  res = v + 2 q_xyz x t
    t0 = qw * vx + qy * vz - qz * vy
    t1 = qw * vy + qz * vx - qx * vz
    t2 = qw * vz + qx * vy - qy * vx
    return (vx + 2.0 * (qy * t2 - qz * t1),
            vy + 2.0 * (qz * t0 - qx * t2),
            vz + 2.0 * (qx * t1 - qy * t0))


@kernel
def rot_vec_quat(res, r, vec, v, quat, q):
    """res[r] = R(quat[q]) vec[v] (see rotated_by_quat; mju_rotVecQuat)."""
    x, y, z = rotated_by_quat(vec[v, 0], vec[v, 1], vec[v, 2], quat[q, 0], quat[q, 1], quat[q, 2], quat[q, 3])
    res[r, 0] = x
    res[r, 1] = y
    res[r, 2] = z


@kernel
def rotation_of_quat(w, x, y, z):
    """The rotation matrix of a unit quaternion given by components, row by row: (R00, R01, R02,
    R10, ..., R22) (mju_quat2Mat; its identity shortcut gives the same bits as the formula)."""
    q00 = w * w
    q01 = w * x
    q02 = w * y
    q03 = w * z
    q11 = x * x
    q12 = x * y
    q13 = x * z
    q22 = y * y
    q23 = y * z
    q33 = z * z
    # the diagonal summed pairwise as MuJoCo 4.0 does (found against its mju_quat2Mat: the 3.x
    # left-to-right sums differ in the last bit for most quaternions)
    return ((q00 - q22) + (q11 - q33), 2.0 * (q12 - q03), 2.0 * (q13 + q02),
            2.0 * (q12 + q03), (q00 + q22) - (q11 + q33), 2.0 * (q23 - q01),
            2.0 * (q13 - q02), 2.0 * (q23 + q01), (q00 - q22) + (q33 - q11))


@kernel
def set_mat(res, r, m00, m01, m02, m10, m11, m12, m20, m21, m22):
    """res[r] (3, 3) = the matrix given row by row."""
    res[r, 0, 0] = m00
    res[r, 0, 1] = m01
    res[r, 0, 2] = m02
    res[r, 1, 0] = m10
    res[r, 1, 1] = m11
    res[r, 1, 2] = m12
    res[r, 2, 0] = m20
    res[r, 2, 1] = m21
    res[r, 2, 2] = m22


@kernel
def quat2mat(res, r, quat, q):
    """res[r] (3, 3) = rotation matrix of the unit quaternion quat[q] (see rotation_of_quat)."""
    set_mat(res, r, *rotation_of_quat(quat[q, 0], quat[q, 1], quat[q, 2], quat[q, 3]))


@kernel
def quat_about_axis(ax, ay, az, angle):
    """Rotation by ``angle`` about the unit axis (ax, ay, az), as a quaternion (mju_axisAngle2Quat)."""
    if angle == 0.0:
        return 1.0, 0.0, 0.0, 0.0
    s = math.sin(angle * 0.5)
    return math.cos(angle * 0.5), ax * s, ay * s, az * s


@kernel
def axis_angle2quat(res, r, axis, a, angle):
    """res[r] = rotation by ``angle`` about the unit axis[a] (see quat_about_axis; mju_axisAngle2Quat)."""
    w, x, y, z = quat_about_axis(axis[a, 0], axis[a, 1], axis[a, 2], angle)
    res[r, 0] = w
    res[r, 1] = x
    res[r, 2] = y
    res[r, 3] = z


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
    """vel x v[j] for motion vectors, vel a 6-tuple; returns a 6-tuple (mju_crossMotion). The
    linear part is (w x v_lin) + (w_lin x v_rot), each pair summed first, as MuJoCo rounds it."""
    w0, w1, w2, w3, w4, w5 = vel
    return (-w2 * v[j, 1] + w1 * v[j, 2],
            w2 * v[j, 0] - w0 * v[j, 2],
            -w1 * v[j, 0] + w0 * v[j, 1],
            (-w2 * v[j, 4] + w1 * v[j, 5]) + (-w5 * v[j, 1] + w4 * v[j, 2]),
            (w2 * v[j, 3] - w0 * v[j, 5]) + (w5 * v[j, 0] - w3 * v[j, 2]),
            (-w1 * v[j, 3] + w0 * v[j, 4]) + (-w4 * v[j, 0] + w3 * v[j, 1]))


@kernel
def cross_force(vel, f):
    """vel x* f for a force vector, both 6-tuples; returns a 6-tuple (mju_crossForce). The
    angular part is (w x f_rot) + (w_lin x f_lin), each pair summed first, as MuJoCo rounds it."""
    w0, w1, w2, w3, w4, w5 = vel
    f0, f1, f2, f3, f4, f5 = f
    return ((-w2 * f1 + w1 * f2) + (-w5 * f4 + w4 * f5),
            (w2 * f0 - w0 * f2) + (w5 * f3 - w3 * f5),
            (-w1 * f0 + w0 * f1) + (-w4 * f3 + w3 * f4),
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
    """a[i] . b[j] for 6-vectors, summed in mju_dot's order (mji_dot6): the first four products
    in two interleaved pairs, then the last two."""
    return ((a[i, 0] * b[j, 0] + a[i, 2] * b[j, 2]) + (a[i, 1] * b[j, 1] + a[i, 3] * b[j, 3])) \
        + (a[i, 4] * b[j, 4] + a[i, 5] * b[j, 5])


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
