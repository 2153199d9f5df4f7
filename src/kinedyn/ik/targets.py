"""IK targets: which frame, where it should be, how much it counts."""

from __future__ import annotations

import math

import numpy as np


class Target:
    """A goal for one site or body frame.

    Args:
      site / body: name or id of the frame (exactly one of them).
      pos: (3,) goal position of the frame origin, world frame; None leaves it free.
      quat: (4,) goal orientation (w, x, y, z), world frame; normalised; None leaves it free.
      weight: > 0; scales this target's squared error in the least-squares cost.

    At least one of ``pos`` and ``quat`` must be given. The arrays are copies.
    """

    __slots__ = ("body", "pos", "quat", "site", "weight")

    def __init__(self, site=None, body=None, pos=None, quat=None, weight: float = 1.0):
        if (site is None) == (body is None):
            raise ValueError("ik.Target needs exactly one of site= and body=")
        if pos is None and quat is None:
            raise ValueError("ik.Target needs pos=, quat= or both")
        if pos is not None:
            pos = np.array(pos, dtype=np.float64)
            if pos.shape != (3,):
                raise ValueError(f"Target pos must have shape (3,), got {pos.shape}")
            if not math.isfinite(pos[0] + pos[1] + pos[2]):
                raise ValueError("Target pos must be finite")
        if quat is not None:
            quat = np.array(quat, dtype=np.float64)
            if quat.shape != (4,):
                raise ValueError(f"Target quat must have shape (4,) (w, x, y, z), got {quat.shape}")
            n = math.sqrt(quat[0] ** 2 + quat[1] ** 2 + quat[2] ** 2 + quat[3] ** 2)
            if not math.isfinite(n) or n < 1e-12:
                raise ValueError("Target quat must be a finite, non-zero quaternion")
            quat /= n
        weight = float(weight)
        if not (0.0 < weight < math.inf):
            raise ValueError(f"Target weight must be positive and finite, got {weight}")
        self.site, self.body, self.pos, self.quat, self.weight = site, body, pos, quat, weight

    def __repr__(self) -> str:
        frame = f"site={self.site!r}" if self.site is not None else f"body={self.body!r}"
        parts = [frame]
        if self.pos is not None:
            parts.append(f"pos={np.array2string(self.pos, precision=4, separator=', ')}")
        if self.quat is not None:
            parts.append(f"quat={np.array2string(self.quat, precision=4, separator=', ')}")
        if self.weight != 1.0:
            parts.append(f"weight={self.weight:g}")
        return f"Target({', '.join(parts)})"
