"""Frame arithmetic of the compiler: orientation forms -> quaternion, ``fromto``, frame accumulation.

These follow MuJoCo's compile-time helpers (src/user/user_util.cc ``mjuu_*`` and
``ResolveOrientation`` in src/user/user_objects.cc) operation by operation, so
that compiled quaternions agree to the last bits: e.g. ``normvec`` leaves a
vector alone when its norm is within 1e-14 of 1, and ``mulquat`` normalises.
Quaternions are (w, x, y, z) Python lists of floats.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.engine.types import SameFrame

EPS = 1e-14  # mjEPS of the compiler (user_util.h)


def normvec(v: list[float]) -> float:
    """Normalise ``v`` in place; return its previous norm (0 when tiny). mjuu_normvec."""
    nrm = sum(x * x for x in v)
    if nrm < EPS:
        return 0.0
    nrm = math.sqrt(nrm)
    if abs(nrm - 1) > EPS:
        for i in range(len(v)):
            v[i] /= nrm
    return nrm


def cross(b, c) -> list[float]:
    return [b[1] * c[2] - b[2] * c[1], b[2] * c[0] - b[0] * c[2], b[0] * c[1] - b[1] * c[0]]


def dot3(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def mulquat(qa, qb) -> list[float]:
    """qa * qb, normalised (mjuu_mulquat)."""
    q = [qa[0] * qb[0] - qa[1] * qb[1] - qa[2] * qb[2] - qa[3] * qb[3],
         qa[0] * qb[1] + qa[1] * qb[0] + qa[2] * qb[3] - qa[3] * qb[2],
         qa[0] * qb[2] - qa[1] * qb[3] + qa[2] * qb[0] + qa[3] * qb[1],
         qa[0] * qb[3] + qa[1] * qb[2] - qa[2] * qb[1] + qa[3] * qb[0]]
    normvec(q)
    return q


def quat2mat(q) -> list[float]:
    """Row-major 3x3 rotation of a unit quaternion (mjuu_quat2mat)."""
    if q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00, q01, q02, q03 = q[0] * q[0], q[0] * q[1], q[0] * q[2], q[0] * q[3]
    q11, q12, q13 = q[1] * q[1], q[1] * q[2], q[1] * q[3]
    q22, q23, q33 = q[2] * q[2], q[2] * q[3], q[3] * q[3]
    return [q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02),
            2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01),
            2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]


def mulvecmat(vec, mat) -> list[float]:
    """mat * vec for a row-major 3x3 ``mat`` (mjuu_mulvecmat)."""
    return [mat[0] * vec[0] + mat[1] * vec[1] + mat[2] * vec[2],
            mat[3] * vec[0] + mat[4] * vec[1] + mat[5] * vec[2],
            mat[6] * vec[0] + mat[7] * vec[1] + mat[8] * vec[2]]


def rot_vec_quat(vec, q) -> list[float]:
    """Rotate ``vec`` by ``q`` (mjuu_rotVecQuat)."""
    if vec[0] == 0 and vec[1] == 0 and vec[2] == 0:
        return [0.0, 0.0, 0.0]
    if q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0:
        return list(vec)
    t = [q[0] * vec[0] + q[2] * vec[2] - q[3] * vec[1],
         q[0] * vec[1] + q[3] * vec[0] - q[1] * vec[2],
         q[0] * vec[2] + q[1] * vec[1] - q[2] * vec[0]]
    return [vec[0] + 2 * (q[2] * t[2] - q[3] * t[1]),
            vec[1] + 2 * (q[3] * t[0] - q[1] * t[2]),
            vec[2] + 2 * (q[1] * t[1] - q[2] * t[0])]


def frame_accum(pos, quat, childpos, childquat) -> tuple[list[float], list[float]]:
    """Compose (pos, quat) with a child frame: returns the child in the outer frame (mjuu_frameaccum)."""
    v = mulvecmat(childpos, quat2mat(quat))
    return [pos[0] + v[0], pos[1] + v[1], pos[2] + v[2]], mulquat(quat, childquat)


def frame_invert(pos, quat) -> tuple[list[float], list[float]]:
    """The inverse of the frame (pos, quat): (-R(quat)' pos, conj(quat)) (mjuu_frameinvert)."""
    conj = [quat[0], -quat[1], -quat[2], -quat[3]]
    local = mulvecmat(pos, quat2mat(conj))
    return [-local[0], -local[1], -local[2]], conj


def z2quat(vec) -> list[float]:
    """Quaternion rotating the z axis onto ``vec`` (mjuu_z2quat; ``vec`` unit)."""
    axis = cross([0.0, 0.0, 1.0], vec)
    s = normvec(axis)
    if s < 1e-10:
        axis = [1.0, 0.0, 0.0]
    ang = math.atan2(s, vec[2])
    sa = math.sin(ang / 2)
    return [math.cos(ang / 2), axis[0] * sa, axis[1] * sa, axis[2] * sa]


def frame2quat(x, y, z) -> list[float]:
    """Quaternion of the rotation with columns x, y, z (mjuu_frame2quat)."""
    m = (x, y, z)  # m[c][r]
    q = [0.0, 0.0, 0.0, 0.0]
    if m[0][0] + m[1][1] + m[2][2] > 0:
        q[0] = 0.5 * math.sqrt(1 + m[0][0] + m[1][1] + m[2][2])
        q[1] = 0.25 * (m[1][2] - m[2][1]) / q[0]
        q[2] = 0.25 * (m[2][0] - m[0][2]) / q[0]
        q[3] = 0.25 * (m[0][1] - m[1][0]) / q[0]
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        q[1] = 0.5 * math.sqrt(1 + m[0][0] - m[1][1] - m[2][2])
        q[0] = 0.25 * (m[1][2] - m[2][1]) / q[1]
        q[2] = 0.25 * (m[1][0] + m[0][1]) / q[1]
        q[3] = 0.25 * (m[2][0] + m[0][2]) / q[1]
    elif m[1][1] > m[2][2]:
        q[2] = 0.5 * math.sqrt(1 - m[0][0] + m[1][1] - m[2][2])
        q[0] = 0.25 * (m[2][0] - m[0][2]) / q[2]
        q[1] = 0.25 * (m[1][0] + m[0][1]) / q[2]
        q[3] = 0.25 * (m[2][1] + m[1][2]) / q[2]
    else:
        q[3] = 0.5 * math.sqrt(1 - m[0][0] - m[1][1] + m[2][2])
        q[0] = 0.25 * (m[0][1] - m[1][0]) / q[3]
        q[1] = 0.25 * (m[2][0] + m[0][2]) / q[3]
        q[2] = 0.25 * (m[2][1] + m[1][2]) / q[3]
    normvec(q)
    return q


ORIENTATION_ATTRS = ("quat", "axisangle", "xyaxes", "zaxis", "euler")


def resolve_orientation(attrs: dict, degree: bool, eulerseq: str) -> tuple[list[float] | None, str | None]:
    """Quaternion from whichever orientation form ``attrs`` holds (ResolveOrientation).

    Returns (quat, None), (None, None) when no form is given, or (None, error) for a
    degenerate specification. ``quat`` is returned as given (callers normalise).
    """
    if "axisangle" in attrs:
        aa = list(attrs["axisangle"])
        if degree:
            aa[3] = aa[3] / 180.0 * math.pi
        axis = aa[:3]
        if normvec(axis) < EPS:
            return None, "axisangle too small"
        half = aa[3] / 2
        s = math.sin(half)
        return [math.cos(half), s * axis[0], s * axis[1], s * axis[2]], None
    if "xyaxes" in attrs:
        xy = list(attrs["xyaxes"])
        x, y = xy[:3], xy[3:]
        if normvec(x) < EPS:
            return None, "xaxis too small"
        d = dot3(x, y)
        y = [y[0] - x[0] * d, y[1] - x[1] * d, y[2] - x[2] * d]
        if normvec(y) < EPS:
            return None, "yaxis too small"
        z = cross(x, y)
        if normvec(z) < EPS:
            return None, "cross(xaxis, yaxis) too small"
        return frame2quat(x, y, z), None
    if "zaxis" in attrs:
        z = list(attrs["zaxis"])
        if normvec(z) < EPS:
            return None, "zaxis too small"
        return z2quat(z), None
    if "euler" in attrs:
        euler = list(attrs["euler"])
        if degree:
            euler = [e / 180.0 * math.pi for e in euler]
        q = [1.0, 0.0, 0.0, 0.0]
        for i in range(3):
            ch = eulerseq[i]
            qrot = [math.cos(euler[i] / 2), 0.0, 0.0, 0.0]
            qrot["xyz".index(ch.lower()) + 1] = math.sin(euler[i] / 2)
            # lower case: moving axes (post-multiply); upper case: fixed axes (pre-multiply)
            q = mulquat(q, qrot) if ch.islower() else mulquat(qrot, q)
        normvec(q)
        return q, None
    if "quat" in attrs:
        return list(attrs["quat"]), None
    return None, None


def fromto_frame(fromto) -> tuple[list[float], list[float], float] | None:
    """(pos, quat, half-length) of a ``fromto`` segment, or None if the points coincide.

    The z axis points from the second point to the first, as in mjCGeom::Compile.
    """
    vec = [fromto[0] - fromto[3], fromto[1] - fromto[4], fromto[2] - fromto[5]]
    half = normvec(vec) / 2
    if half < EPS:
        return None
    pos = [(fromto[0] + fromto[3]) / 2, (fromto[1] + fromto[4]) / 2, (fromto[2] + fromto[5]) / 2]
    return pos, z2quat(vec), half


# frames closer than this (element-wise, quaternions up to sign) count as the same (kFrameEps)
FRAME_EPS = 1e-6


def same_frame(pos, quat, ipos, iquat) -> np.ndarray:
    """MuJoCo's SameFrame codes for frames (pos, quat) attached to bodies with inertial frames (ipos, iquat).

    All arguments are (n, 3) / (n, 4) arrays, row by row; ``ipos``/``iquat`` may be None
    (bodies themselves: only BODY, BODYROT or NONE apply).
    """
    def same_vec(a, b):
        return np.all(np.abs(a - b) < FRAME_EPS, axis=1)

    def same_quat(a, b):
        return same_vec(a, b) | np.all(np.abs(a + b) < FRAME_EPS, axis=1)

    zero = np.zeros_like(pos)
    unit = np.zeros_like(quat)
    unit[:, 0] = 1.0
    codes = np.zeros(len(pos), dtype=np.uint8)
    rot_body = same_quat(quat, unit)
    cases = [(same_vec(pos, zero) & rot_body, SameFrame.BODY), (rot_body, SameFrame.BODYROT)]
    if ipos is not None:
        rot_inertia = same_quat(quat, iquat)
        cases += [(same_vec(pos, ipos) & rot_inertia, SameFrame.INERTIA), (rot_inertia, SameFrame.INERTIAROT)]
    # first matching case wins, as in MuJoCo's if/else chain
    for mask, code in reversed(cases):
        codes[mask] = code
    return codes
