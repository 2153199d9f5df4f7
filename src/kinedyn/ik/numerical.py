"""Numerical inverse kinematics: ``ik.solve(m, targets, ...)``.

Newton (pseudo-inverse), damped least squares and Levenberg–Marquardt on the
stacked residual of one or more site/body targets. The loop runs in one Numba
kernel (:mod:`kinedyn.ik._kernel`); this module checks and packs the input.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kinedyn.engine.checks import check_model, float_array
from kinedyn.engine.data import Data
from kinedyn.engine.types import JNT_BALL, JNT_FREE
from kinedyn.ik import _kernel as K
from kinedyn.ik.targets import Target

METHODS = {"newton": K.METHOD_NEWTON, "dls": K.METHOD_DLS, "lm": K.METHOD_LM}


@dataclass(frozen=True)
class IKResult:
    """What :func:`solve` found.

    Attributes:
      qpos: (nq,) the solution, or the closest pose found when ``success`` is False.
      success: every target is within ``tol_pos`` (metres) and ``tol_rot`` (radians).
      pos_error: (ntarget,) position error norms |p* - p| at ``qpos`` (0 for orientation-only targets).
      rot_error: (ntarget,) rotation angles |log(q* conj(q))| at ``qpos`` (0 for position-only targets).
      iterations: linearised steps taken, over all restarts.
    """

    qpos: np.ndarray
    success: bool
    pos_error: np.ndarray
    rot_error: np.ndarray
    iterations: int

    def __repr__(self) -> str:
        return (f"IKResult(success={self.success}, iterations={self.iterations}, "
                f"pos_error={np.array2string(self.pos_error, precision=2)}, "
                f"rot_error={np.array2string(self.rot_error, precision=2)})")


def _scratch(m) -> Data:
    """The solver's private Data for model m (created once, kept on the model)."""
    d = m.__dict__.get("_ik_data")
    if d is None:
        d = Data(m)
        object.__setattr__(m, "_ik_data", d)
    return d


def _pack_targets(m, targets) -> tuple[np.ndarray, np.ndarray]:
    """Targets as the kernel's (tint (n, 4): kind, id, has pos, has rot; tflt (n, 8): pos, quat, sqrt w)."""
    if isinstance(targets, Target):
        targets = (targets,)
    n = len(targets)
    if not n:
        raise ValueError("ik.solve needs at least one Target")
    tint = np.zeros((n, 4), np.int64)
    tflt = np.zeros((n, 8))
    for i, t in enumerate(targets):
        if not isinstance(t, Target):
            raise TypeError(f"targets[{i}] is {type(t).__name__}, not ik.Target")
        row = tint[i]
        if t.site is not None:
            row[0], row[1] = K.KIND_SITE, m.site(t.site).id
        else:
            row[0], row[1] = K.KIND_BODY, m.body(t.body).id
            if row[1] == 0:
                raise ValueError(f"targets[{i}]: the world body cannot be a target")
        if t.pos is not None:
            tflt[i, 0:3] = t.pos
            row[2] = 1
        if t.quat is not None:
            tflt[i, 3:7] = t.quat
            row[3] = 1
        tflt[i, 7] = math.sqrt(t.weight)
    return tint, tflt


def _select(m, joints) -> tuple[np.ndarray, np.ndarray]:
    """(jsel bool (njnt,), dofs int (k,)) for a joint selection (None = all); cached per model."""
    if isinstance(joints, (str, int, np.integer)):
        joints = [joints]
    key = None if joints is None else tuple(int(j) if isinstance(j, np.integer) else j for j in joints)
    cache = m.__dict__.get("_ik_select")
    if cache is None:
        cache = {}
        object.__setattr__(m, "_ik_select", cache)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = _select_uncached(m, key)
    return hit


def _select_uncached(m, joints) -> tuple[np.ndarray, np.ndarray]:
    jsel = np.zeros(m.njnt, np.bool_)
    if joints is None:
        jsel[:] = True
    else:
        for j in joints:
            jsel[m.joint(j).id] = True  # KeyError with suggestions for unknown names
    dofs = []
    for j in np.flatnonzero(jsel):
        t = m.jnt_type[j]
        k = 6 if t == JNT_FREE else 3 if t == JNT_BALL else 1
        dofs.extend(range(m.jnt_dofadr[j], m.jnt_dofadr[j] + k))
    if not dofs:
        raise ValueError("the joint selection moves no degree of freedom")
    return jsel, np.asarray(sorted(dofs), np.int64)


def _vector(name: str, x, n: int) -> np.ndarray:
    a = float_array(x, name).reshape(-1).copy() if x is not None else None  # the solver writes q
    if a is None or a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {np.shape(x)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def solve(
    m,
    targets: Target | Sequence[Target],
    qpos: np.ndarray | None = None,
    joints: Iterable[str | int] | str | int | None = None,
    method: str = "lm",
    *,
    max_iter: int = 100,
    tol_pos: float = 1e-6,
    tol_rot: float = 1e-6,
    damping: float | None = None,
    restarts: int = 20,
    posture: np.ndarray | None = None,
    posture_gain: float = 0.1,
    max_step: float = 1.0,
    seed: int | None = 0,
) -> IKResult:
    """Joint positions that bring every target frame onto its goal.

    Args:
      m: the Model.
      targets: one :class:`Target` or a sequence of them, solved together.
      qpos: (nq,) start; default ``m.qpos0``. Joints outside ``joints`` keep these values.
      joints: names or ids of the joints to move; default all (free and ball joints included).
      method: ``"lm"`` (Levenberg–Marquardt, error-adaptive damping; default), ``"dls"``
        (damped least squares, fixed damping) or ``"newton"`` (Gauss–Newton pseudo-inverse).
      max_iter: steps per attempt.
      tol_pos, tol_rot: success thresholds on every target's position (m) and rotation (rad) error.
      damping: ``"dls"``: the damping factor (lambda = damping**2; default 0.05);
        ``"lm"``: the constant part of lambda = mu E + damping (default 1e-4); ignored by newton.
      restarts: extra attempts from random joint positions (inside the limits) when an
        attempt fails; the best pose over all attempts is returned.
      posture: (nq,) configuration that redundant degrees of freedom are pulled towards, in
        the null space of the targets; ``None`` for no posture task.
      posture_gain: fraction of the posture error corrected per step.
      max_step: cap on the norm of one step (rad or m).
      seed: seed of the restart generator (``None``: not reseeded).

    Returns:
      IKResult with ``qpos``, ``success``, per-target ``pos_error``/``rot_error`` and ``iterations``.

    Raises:
      KeyError: a target or joint names an unknown site, body or joint (closest names listed).
      ValueError: wrong shapes, non-finite input, unknown method, empty joint selection.
    """
    check_model(m, "ik.solve")
    if method not in METHODS:
        raise ValueError(f"unknown IK method {method!r}; choose one of {', '.join(METHODS)}")
    tint, tflt = _pack_targets(m, targets)
    jsel, dofs = _select(m, joints)
    q = m.qpos0.copy() if qpos is None else _vector("qpos", qpos, m.nq)
    if posture is None:
        post, gain = m.qpos0, 0.0
    else:
        post, gain = _vector("posture", posture, m.nq), float(posture_gain)
    if damping is None:
        damping = 0.05 if method == "dls" else 1e-4
    if max_iter < 0 or restarts < 0:
        raise ValueError("max_iter and restarts must be >= 0")
    d = _scratch(m)
    errs = np.empty((2, len(tint)))
    iters, ok = K.solve_kernel(
        m._handle, d._handle, q, tint, tflt, jsel, dofs, post,
        np.array([METHODS[method], max_iter, restarts, -1 if seed is None else seed], np.int64),
        np.array([gain, tol_pos, tol_rot, damping, max_step], np.float64), errs)
    pos_err, rot_err = errs[0], errs[1]
    return IKResult(qpos=q, success=bool(ok), pos_error=pos_err, rot_error=rot_err, iterations=int(iters))


def residual(m, targets, qpos=None, joints=None) -> tuple[np.ndarray, np.ndarray]:
    """The solver's weighted residual e (nrow,) and Jacobian J (nrow, ndof) at ``qpos``.

    Rows are [position (3); rotation (3)] per target (those it has), times sqrt(weight);
    columns are the selected dofs in increasing order. To first order
    ``e(q (+) dq) = e(q) - J dq``: J is the Jacobian of the target poses.
    """
    check_model(m, "ik.residual")
    tint, tflt = _pack_targets(m, targets)
    jsel, dofs = _select(m, joints)
    q = m.qpos0.copy() if qpos is None else _vector("qpos", qpos, m.nq)
    d = _scratch(m)
    kinds, ids, haspos, hasrot = (np.ascontiguousarray(tint[:, k]) for k in range(4))
    tpos, tquat = np.ascontiguousarray(tflt[:, 0:3]), np.ascontiguousarray(tflt[:, 3:7])
    sqrtw = tflt[:, 7].copy()
    nr = int(3 * (haspos.sum() + hasrot.sum()))
    e = np.empty(nr)
    J = np.zeros((nr, len(dofs)))
    pe, re = np.empty(len(ids)), np.empty(len(ids))
    K.residual(m._handle, d._handle, q, kinds, ids, tpos, tquat, haspos, hasrot, sqrtw, e, pe, re,
               np.empty(4))
    K.jacobian(m._handle, d._handle, kinds, ids, haspos, hasrot, sqrtw, dofs, np.empty((2, 3, m.nv)), J)
    return e, J
