"""Finite-difference derivatives, parallel over columns: ``kd.transition_fd``, ``kd.inverse_fd``.

The replicas of MuJoCo's ``mjd_transitionFD`` and ``mjd_inverseFD`` (engine_derivative_fd.c).
The perturbed evaluations are shared among threads, each on a work Data of its own (kept per
model, as ``kd.batch.rollout`` keeps its own): worker w takes columns w, w + n, w + 2n, ... of
MuJoCo's sequence (controls, activations, velocities, positions; for the inverse: accelerations,
velocities, positions), so each worker sees them in MuJoCo's order and can skip the stages
MuJoCo skips (``kinedyn.engine.derivative_fd``). Every column's numbers are those of the same
evaluation in MuJoCo: the split changes no value. The caller's Data is read, never written.
See docs/derivatives.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kinedyn._jit import bind_call
from kinedyn._jit.parallel import parallel_njit, prange, threads
from kinedyn.engine.checks import bad_model_data
from kinedyn.engine.derivative_fd import (
    COL_ACC,
    COL_ACT,
    COL_CTRL,
    COL_POS,
    COL_VEL,
    inverse_worker,
    transition_worker,
)
from kinedyn.engine.integrator import _STATUS_FIELD
from kinedyn.engine.types import INT_EULER, INT_IMPLICITFAST, IntegratorType
from kinedyn.tools.batch import _model_handles, _work_data

__all__ = ["InverseFD", "TransitionFD", "inverse_fd", "transition_fd"]


class TransitionFD(NamedTuple):
    """``kd.transition_fd``'s result, in control-theory layout (as mjd_transitionFD returns it):
    d x_next = A dx + B du, d sensordata = C dx + D du, with x = [dqpos (tangent, nv), qvel, act]."""

    A: np.ndarray  #: (2 nv + na, 2 nv + na)
    B: np.ndarray  #: (2 nv + na, nu)
    C: np.ndarray  #: (nsensordata, 2 nv + na)
    D: np.ndarray  #: (nsensordata, nu)


class InverseFD(NamedTuple):
    """``kd.inverse_fd``'s result, in mjd_inverseFD's transposed layout: row i of each matrix is
    the derivative with respect to input i (DfDq[i, j] = d qfrc_inverse[j] / d qpos_i)."""

    DfDq: np.ndarray  #: (nv, nv)
    DfDv: np.ndarray  #: (nv, nv)
    DfDa: np.ndarray  #: (nv, nv)
    DsDq: np.ndarray  #: (nv, nsensordata)
    DsDv: np.ndarray  #: (nv, nsensordata)
    DsDa: np.ndarray  #: (nv, nsensordata)
    DmDq: np.ndarray  #: (nv, nC): d M / d qpos_i in M's sparse layout (Model.M_rowadr, M_colind)


@parallel_njit
def _transition_columns(models, work, src, eps, centered, kind, index, at, bt, ct, dt, buf, sbuf, dpos,
                        status):
    # the prange body is a plain call, as in kd.batch (Numba's parfor pass and long loop bodies)
    for w in prange(len(work)):
        k = np.int64(w)
        status[k] = transition_worker(models[k], work[k], src, k, len(work), eps, centered, kind, index,
                                      at, bt, ct, dt, buf[k], sbuf[k], dpos[k])


@parallel_njit
def _inverse_columns(models, work, src, eps, actuation, kind, index, dfdq, dfdv, dfda, dsdq, dsdv, dsda,
                     dmdq, buf, sbuf, mass, dpos):
    for w in prange(len(work)):
        k = np.int64(w)
        inverse_worker(models[k], work[k], src, k, len(work), eps, actuation, kind, index,
                       dfdq, dfdv, dfda, dsdq, dsdv, dsda, dmdq, buf[k], sbuf[k], mass[k], dpos[k])


def _columns(*blocks) -> tuple[np.ndarray, np.ndarray]:
    """(kind, index) of every column, blocks of (kind, count) in order."""
    kind = np.concatenate([np.full(n, k, dtype=np.int64) for k, n in blocks])
    index = np.concatenate([np.arange(n, dtype=np.int64) for _, n in blocks])
    return kind, index


def _check(m, d, eps, fname: str) -> float:
    try:
        if d._model is not m:
            bad_model_data(m, d, fname)
    except AttributeError:
        bad_model_data(m, d, fname)
    if m.opt.integrator not in (INT_EULER, INT_IMPLICITFAST):
        # MuJoCo refuses RK4 (mjERROR); kinedyn steps no other integrator yet
        raise ValueError(f"{fname}: the {IntegratorType(m.opt.integrator).name} integrator is not supported "
                         "(MuJoCo's finite differences refuse RK4); use Euler or implicitfast")
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)):
        raise TypeError(f"{fname}: eps must be a number, got {type(eps).__name__}")
    eps = float(eps)
    if not (np.isfinite(eps) and eps > 0.0):
        raise ValueError(f"{fname}: eps must be finite and positive, got {eps!r}")
    for name in ("qpos", "qvel", "act", "ctrl"):
        if not np.all(np.isfinite(getattr(d, name))):
            raise ValueError(f"{fname}: d.{name} holds non-finite values")
    return eps


def _nworker(nthread_used: int, ncol: int) -> int:
    return max(1, min(nthread_used, ncol))


def transition_fd(m, d, eps: float = 1e-6, centered: bool = False,
                  nthread: int | None = None) -> TransitionFD:
    """Finite-difference derivatives of one step, ``(A, B, C, D)``: mjd_transitionFD.

    With x = [qpos, qvel, act] on the tangent space (qpos perturbed by ``integrate_pos`` along each
    dof, the next qpos differenced by ``differentiate_pos``: 2 nv + na coordinates) and u = ctrl::

        x_next - x_next0 = A dx + B du,   sensordata - sensordata0 = C dx + D du

    where sensordata is what the step's forward pass computes (at the current state). Forward
    differences, or centred with ``centered=True``; a control at or within eps of its ctrlrange
    edge is differenced one-sided inside the range (zero column if neither side fits), as MuJoCo.
    Every perturbed step starts from d's state, ctrl and qacc_warmstart. ``d`` is not modified.
    C and D have nsensordata rows (none for a model without sensors). Runs the 1 + (nu + na + 2 nv)
    (centred: twice as many) steps on ``nthread`` threads (default: Numba's count).
    Euler and implicitfast only; RK4 raises ValueError, as MuJoCo's mjERROR.
    """
    eps = _check(m, d, eps, "transition_fd")
    centered = bool(centered)
    nv, na, nu, ns = m.nv, m.na, m.nu, m.nsensordata
    ndx = 2 * nv + na
    kind, index = _columns((COL_CTRL, nu), (COL_ACT, na), (COL_VEL, nv), (COL_POS, nv))
    at = np.zeros((ndx, ndx))
    bt = np.zeros((nu, ndx))
    ct = np.zeros((ndx, ns))
    dt = np.zeros((nu, ns))
    with threads(nthread) as nthread_used:
        nwork = _nworker(nthread_used, kind.shape[0])
        work = _work_data(m, nwork)
        bind_call(transition_worker, (m._handle, work[0]))  # the units a perturbed step reaches
        buf = np.empty((nwork, 3, m.nq + nv + na))
        sbuf = np.empty((nwork, 3, ns))
        dpos = np.empty((nwork, nv))
        status = np.zeros(nwork, dtype=np.int64)
        _transition_columns(_model_handles(m, nwork), work, d._handle, eps, centered, kind, index,
                            at, bt, ct, dt, buf, sbuf, dpos, status)
    bad = status[status != 0]
    if bad.size:
        raise ValueError(f"transition_fd: a perturbed step went non-finite or huge in "
                         f"{_STATUS_FIELD.get(int(bad[0]), 'fwdinv')} (the state, or eps = {eps:g}, "
                         "is too large for the model); no derivative is returned")
    return TransitionFD(at.T.copy(), bt.T.copy(), ct.T.copy(), dt.T.copy())


def inverse_fd(m, d, eps: float = 1e-6, actuation: bool = False, nthread: int | None = None) -> InverseFD:
    """Finite-difference derivatives of inverse dynamics: mjd_inverseFD.

    Forward differences of ``qfrc_inverse`` (minus ``qfrc_actuator`` with ``actuation=True``,
    MuJoCo's flg_actuation), the sensors and M with respect to qacc, qvel and qpos (qpos on the
    tangent space, as ``transition_fd``), at d's qpos, qvel and qacc. Returns
    ``(DfDq, DfDv, DfDa, DsDq, DsDv, DsDa, DmDq)`` in MuJoCo's transposed layout: row i is the
    derivative with respect to input i. ``d`` is not modified. RK4 raises ValueError, as MuJoCo.
    """
    eps = _check(m, d, eps, "inverse_fd")
    if m.opt.noslip_iterations:
        raise ValueError("inverse_fd: the noslip solver is not supported (as MuJoCo's mjd_inverseFD)")
    if not np.all(np.isfinite(d.qacc)):
        raise ValueError("inverse_fd: d.qacc holds non-finite values")
    nv, ns, nc = m.nv, m.nsensordata, m.nC
    kind, index = _columns((COL_ACC, nv), (COL_VEL, nv), (COL_POS, nv))
    out = [np.zeros((nv, nv)) for _ in range(3)] + [np.zeros((nv, ns)) for _ in range(3)]
    out.append(np.zeros((nv, nc)))
    with threads(nthread) as nthread_used:
        nwork = _nworker(nthread_used, kind.shape[0])
        work = _work_data(m, nwork)
        bind_call(inverse_worker, (m._handle, work[0]))
        _inverse_columns(_model_handles(m, nwork), work, d._handle, eps, bool(actuation), kind, index, *out,
                         np.empty((nwork, 2, nv)), np.empty((nwork, 2, ns)), np.empty((nwork, nc)),
                         np.empty((nwork, nv)))
    return InverseFD(*out)
