"""Closed-form IK of a 6-joint biped leg (Kajita et al., Introduction to Humanoid Robotics, ch. 2).

Leg: hip yaw (z), hip roll (x), hip pitch (y) with axes meeting at the hip point; a
thigh of length A to the knee (pitch, y); a shank of length B to the ankle, where
ankle pitch (y) and ankle roll (x) meet. At zero angles every frame is parallel to the
torso and the leg hangs straight down (-z). Then

    R_foot = R_body Rz(q0) Rx(q1) Ry(q2) Ry(q3 + q4) Rx(q5)
    p_ankle = p_hip + R_body Rz Rx Ry(q2) [0 0 -A] + ... (chain down the leg)

and the ankle-frame vector to the hip, r = R_foot^T (p_hip - p_ankle), fixes the
knee (law of cosines on A, B, |r|), the ankle angles (direction of r), and the
rest of the orientation fixes the hip angles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kinedyn._jit import cached_njit

STATUS_OK = "ok"
STATUS_STRETCHED = "stretched"        # |hip - ankle| == A + B: knee straight, still exact
STATUS_OUT_OF_REACH = "out_of_reach"  # |hip - ankle| > A + B: straight knee pointing at the hip
STATUS_TOO_CLOSE = "too_close"        # |hip - ankle| < |A - B|: knee fully folded (pi)
_STATUSES = (STATUS_OK, STATUS_STRETCHED, STATUS_OUT_OF_REACH, STATUS_TOO_CLOSE)

STRETCH_TOL = 1e-12  # relative: C within this of A + B counts as exactly stretched


@dataclass(frozen=True)
class LegIKResult:
    """Result of :func:`leg6`.

    Attributes:
      q: (6,) hip yaw, hip roll, hip pitch, knee pitch, ankle pitch, ankle roll (rad); always finite.
      reachable: the foot pose is reached exactly (status "ok" or "stretched").
      status: "ok", "stretched", "out_of_reach" or "too_close".
    """

    q: np.ndarray
    reachable: bool
    status: str


def _rotation(name: str, r) -> np.ndarray:
    a = np.asarray(r, dtype=np.float64)
    if a.shape == (3, 3):
        return a
    if a.shape == (4,):
        w, x, y, z = a / np.linalg.norm(a)
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])
    raise ValueError(f"{name} must be a (4,) quaternion (w, x, y, z) or a (3, 3) matrix, got shape {a.shape}")


@cached_njit
def _rx(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


@cached_njit
def _ry(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def leg6(body_pos, body_rot, foot_pos, foot_rot, hip_offset, thigh: float, shank: float,
         ankle_height: float = 0.0) -> LegIKResult:
    """Joint angles of a 6-joint leg that put the foot at a pose, given the torso pose.

    Args:
      body_pos: (3,) torso (hip base) position, world frame.
      body_rot: torso orientation, (4,) quaternion (w, x, y, z) or (3, 3) rotation matrix.
      foot_pos: (3,) foot position: the ankle point, or the sole when ``ankle_height`` > 0.
      foot_rot: foot orientation, quaternion or matrix.
      hip_offset: hip point in the torso frame, (3,) or a scalar D meaning (0, D, 0)
        (negative D for the right leg when y points left).
      thigh, shank: A (hip to knee) and B (knee to ankle), > 0.
      ankle_height: distance from the sole point up (foot +z) to the ankle point.

    Returns:
      LegIKResult(q, reachable, status). Out of reach, q is the closest pose: knee straight,
      leg pointing at the hip (status "out_of_reach"); hip too close to the ankle, the knee
      is folded to pi ("too_close"). q is never NaN.
    """
    pb = np.ascontiguousarray(body_pos, dtype=np.float64).reshape(-1)
    pf = np.ascontiguousarray(foot_pos, dtype=np.float64).reshape(-1)
    if pb.shape != (3,) or pf.shape != (3,):
        raise ValueError(f"body_pos and foot_pos must have shape (3,), got {pb.shape} and {pf.shape}")
    Rb = _rotation("body_rot", body_rot)
    Rf = _rotation("foot_rot", foot_rot)
    off = np.asarray(hip_offset, dtype=np.float64)
    off = np.array([0.0, float(off), 0.0]) if off.shape == () else np.ascontiguousarray(off)
    if off.shape != (3,):
        raise ValueError(f"hip_offset must be a scalar D or shape (3,), got {off.shape}")
    A, B = float(thigh), float(shank)
    Rb, Rf = np.ascontiguousarray(Rb), np.ascontiguousarray(Rf)
    if not (A > 0 and B > 0):
        raise ValueError(f"thigh and shank must be positive, got {A} and {B}")
    h = float(ankle_height)
    q = np.empty(6)
    code = _leg6_kernel(pb, Rb, pf, Rf, off, A, B, h, q)
    if code < 0:  # the kernel found a non-finite input: name it
        checks = (("body_pos", pb), ("foot_pos", pf), ("body_rot", Rb), ("foot_rot", Rf),
                  ("hip_offset", off), ("thigh", A), ("shank", B), ("ankle_height", h))
        bad = [name for name, v in checks if not np.all(np.isfinite(v))]
        raise ValueError(f"{', '.join(bad)} must be finite")
    status = _STATUSES[code]
    return LegIKResult(q=q, reachable=status in (STATUS_OK, STATUS_STRETCHED), status=status)


# small allocating 3x3 helpers: the leg IK runs once per call, not in a per-step loop
@cached_njit
def _mat_mul(a, b):
    """(3, 3) a @ b."""
    out = np.zeros((3, 3))
    for r in range(3):
        for c in range(3):
            for k in range(3):
                out[r, c] += a[r, k] * b[k, c]
    return out


@cached_njit
def _mat_t(a):
    """(3, 3) a^T as a new array."""
    out = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            out[r, c] = a[c, r]
    return out


@cached_njit
def _mat_vec(a, v):
    """(3,) a @ v."""
    out = np.zeros(3)
    for r in range(3):
        for k in range(3):
            out[r] += a[r, k] * v[k]
    return out


@cached_njit
def _leg6_kernel(pb, Rb, pf, Rf, off, A, B, ankle_height, q):
    """The closed form: fills q (6,), returns the index of the status in _STATUSES (-1: non-finite input)."""
    total = A + B + ankle_height
    for k in range(3):
        total += pb[k] + pf[k] + off[k]
        for c in range(3):
            total += Rb[k, c] + Rf[k, c]
    if not math.isfinite(total):
        return -1
    ankle = pf + Rf[:, 2] * ankle_height
    r = _mat_vec(_mat_t(Rf), pb + _mat_vec(Rb, off) - ankle)  # hip seen from the ankle frame
    C = math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])

    # knee from the law of cosines: C^2 = A^2 + B^2 + 2 A B cos(q_knee)
    c = (C * C - A * A - B * B) / (2.0 * A * B)
    code = 0
    if C > (A + B) * (1.0 + STRETCH_TOL):
        code, knee = 2, 0.0
    elif C >= (A + B) * (1.0 - STRETCH_TOL):
        code, knee = 1, 0.0
    elif C < abs(A - B) or c <= -1.0:
        code, knee = 3, math.pi
    else:
        knee = math.acos(min(1.0, max(-1.0, c)))

    # alpha: angle at the ankle between the shank and the ankle-hip line (law of sines)
    alpha = 0.0
    if C > 1e-12:
        alpha = math.asin(min(1.0, max(-1.0, A / C * math.sin(math.pi - knee))))

    ankle_roll = math.atan2(r[1], r[2])
    if ankle_roll > math.pi / 2:
        ankle_roll -= math.pi
    elif ankle_roll < -math.pi / 2:
        ankle_roll += math.pi
    sgn = 1.0 if r[2] >= 0.0 else -1.0
    ankle_pitch = -math.atan2(r[0], sgn * math.sqrt(r[1] * r[1] + r[2] * r[2])) - alpha

    # the hip's Rz Rx Ry(q2) from what the knee and ankle leave
    R = _mat_mul(_mat_mul(_mat_mul(_mat_t(Rb), Rf), _rx(-ankle_roll)), _ry(-ankle_pitch - knee))
    yaw = math.atan2(-R[0, 1], R[1, 1])
    roll = math.atan2(R[2, 1], -R[0, 1] * math.sin(yaw) + R[1, 1] * math.cos(yaw))
    pitch = math.atan2(-R[2, 0], R[2, 2])
    q[0], q[1], q[2], q[3], q[4], q[5] = yaw, roll, pitch, knee, ankle_pitch, ankle_roll
    return code
