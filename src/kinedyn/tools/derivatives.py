"""Finite-difference derivatives on all cores: ``kd.transition_fd``, ``kd.inverse_fd`` and the
linearisation of a trajectory (``kd.trajectory.linearize``, via ``linearize_fd``).

The replicas of MuJoCo's ``mjd_transitionFD`` and ``mjd_inverseFD`` (engine_derivative_fd.c).
The perturbed evaluations are shared among threads, each on a work Data of its own (kept per
model, as ``kd.batch.rollout`` keeps its own): the workers take the columns of MuJoCo's sequence
(controls, activations, velocities, positions; for the inverse: accelerations, velocities,
positions) one at a time from a shared counter, so each worker sees its columns in MuJoCo's
order and can skip the stages MuJoCo skips (``kinedyn.engine.derivative_fd``). Every column's
numbers are those of the same evaluation in MuJoCo: the split changes no value. The caller's
Data is read, never written. Along a trajectory the steps are shared instead, one worker per
step. One parallel kernel (``_each_worker``) runs all three. See docs/derivatives.md.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from kinedyn._jit import bind_call, cached_njit
from kinedyn._jit.parallel import parallel_njit, prange, take_next, thread_count, threads, typed_list
from kinedyn.engine.checks import bad_model_data
from kinedyn.engine.data import Data
from kinedyn.engine.derivative_fd import (
    COL_ACC,
    COL_ACT,
    COL_CTRL,
    COL_POS,
    COL_VEL,
    inverse_worker,
    transition_worker,
)
from kinedyn.engine.derivative_transition import (
    STATUS_NONFINITE,
    STATUS_PIVOT,
    STATUS_REFUSED,
    refusal_text,
    step_derivatives,
    work_arrays,
)
from kinedyn.engine.forward import forward
from kinedyn.engine.integrator import _STATUS_FIELD, DISCRETE_ROWS, STATUS_DISCRETE_ROWS
from kinedyn.engine.inverse import inverse
from kinedyn.engine.types import (
    INT_DISCRETE,
    INT_EULER,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    JNT_BALL,
    JNT_FREE,
    OPT_INTEGRATOR,
    IntegratorType,
)
from kinedyn.tools.batch import _model_handles, _per_thread

__all__ = ["DerivativeCheck", "InverseFD", "TransitionDerivatives", "TransitionFD", "check_derivatives",
           "inverse_fd", "linearize_fd", "transition_derivatives", "transition_fd"]


class TransitionFD(NamedTuple):
    """``kd.transition_fd``'s result, in control-theory layout (as mjd_transitionFD returns it):
    d x_next = A dx + B du, d sensordata = C dx + D du, with x = [dqpos (tangent, nv), qvel, act]."""

    A: np.ndarray  #: (2 nv + na, 2 nv + na)
    B: np.ndarray  #: (2 nv + na, nu)
    C: np.ndarray  #: (nsensordata, 2 nv + na)
    D: np.ndarray  #: (nsensordata, nu)


class TransitionDerivatives(TransitionFD):
    """``kd.transition_derivatives``'s result: A, B, C, D as :class:`TransitionFD`, computed
    analytically. ``fd_sensor_rows``: the rows of C and D filled by finite differences
    (``sensors="fd"``; empty otherwise)."""

    fd_sensor_rows: tuple | list = ()


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


# One parallel kernel serves every call (an operation code picks the worker), as in kd.batch:
# each parallel function costs tens of seconds to compile the first time.
OP_TRANSITION, OP_INVERSE, OP_LINEARIZE = 0, 1, 2


@cached_njit
def _member(op, m, d, src, srcs, w, queue, states, controls, warmstart, eps, flag, kind, index,
            o1, o2, o3, o4, buf, sbuf, dpos, mass, status):
    """Worker w's share of a call. OP_TRANSITION: A, B, C, D transposed in o1[0], o2[0], o3[0],
    o4[0] from src (status[w]); OP_INVERSE: DfD{q,v,a} in o1[0..2], DsD{q,v,a} in o3[0..2], DmDq
    in o2[0] from src; OP_LINEARIZE: the steps of ``states`` taken from ``queue``, one worker
    per step, into o1[t]..o4[t] (status[t]), srcs[w] holding the step's inputs."""
    if op == OP_TRANSITION:
        status[w] = transition_worker(m, d, src, queue, eps, flag, kind, index,
                                      o1[0], o2[0], o3[0], o4[0], buf, sbuf, dpos)
    elif op == OP_INVERSE:
        inverse_worker(m, d, src, queue, eps, flag, kind, index, o1[0], o1[1], o1[2], o3[0], o3[1], o3[2],
                       o2[0], buf, sbuf, mass, dpos)
    else:
        _linearize_worker(m, d, srcs[w], queue, states, controls, warmstart, eps, flag, kind, index,
                          o1, o2, o3, o4, buf, sbuf, dpos, status)


@parallel_njit
def _each_worker(op, models, work, src, srcs, queue, states, controls, warmstart, eps, flag, kind, index,
                 o1, o2, o3, o4, buf, sbuf, dpos, mass, status):
    # the prange body is a plain call, as in kd.batch (Numba's parfor pass and long loop bodies)
    for w in prange(len(work)):
        k = np.int64(w)
        _member(op, models[k], work[k], src, srcs, k, queue, states, controls, warmstart, eps, flag, kind,
                index, o1, o2, o3, o4, buf[k], sbuf[k], dpos[k], mass[k], status)


def _run(op, m, work, models, src, srcs, kind, index, eps, flag, outs, nwork, nbuf, nthread, states=None,
         controls=None, warmstart=None, nstatus=None):
    """Bind and run ``op`` on ``nwork`` workers; the status array. ``src``: the caller's Data handle
    (OP_TRANSITION, OP_INVERSE); ``srcs``: one Data handle per worker for OP_LINEARIZE (the other
    operations pass ``work``, unread: a typed list costs ~10 µs to make)."""
    if states is None:
        states = controls = warmstart = _NO_STEPS
    status = np.zeros(nstatus or nwork, dtype=np.int64)
    bind_call(_member, (m._handle, work[0]))  # the units a perturbed step or inverse reaches
    with threads(nthread):
        _each_worker(op, models, work, src, srcs, np.zeros(1, dtype=np.int64), states, controls, warmstart,
                     eps, bool(flag), kind, index, *outs, *_scratch(m, op, nwork, nbuf), status)
    return status


def _scratch(m, op, nwork: int, nbuf: int) -> tuple:
    """The workers' scratch (state buffers, sensor buffers, a tangent vector, M's values), kept
    per model with the work Data: every entry is written before it is read."""
    cached = _per_thread(m)["lists"]
    key = ("fd_scratch", op == OP_INVERSE, nwork, nbuf)
    scratch = cached.get(key)
    if scratch is None:
        scratch = (np.empty((nwork, 3, nbuf)), np.empty((nwork, 3, m.nsensordata)), np.empty((nwork, m.nv)),
                   np.empty((nwork, m.nC if op == OP_INVERSE else 0)))
        cached[key] = scratch
    return scratch


_NO_STEPS = np.zeros((0, 0))
_NO_OUTPUT = np.zeros((0, 0, 0))


def _columns(*blocks) -> tuple[np.ndarray, np.ndarray]:
    """(kind, index) of every column, blocks of (kind, count) in order."""
    kind = np.concatenate([np.full(n, k, dtype=np.int64) for k, n in blocks])
    index = np.concatenate([np.arange(n, dtype=np.int64) for _, n in blocks])
    return kind, index


def _fd_work_data(m, n: int):
    """A typed List of the handles of ``n`` work Data of ``m``, made once per model and count, as
    kd.batch's rollout keeps its own; a pool apart from rollout's, so that a derivative leaves
    nothing (a warmstart, say) in the Data a later rollout starts from."""
    cached = _per_thread(m)
    key = ("fd_data", n)
    if key not in cached["lists"]:
        pool = cached.setdefault("fd_data", [])
        while len(pool) < n:
            pool.append(Data(m)._handle)  # only the handle: see kd.batch._work_data
        cached["lists"][key] = typed_list(pool[:n])
    return cached["lists"][key]


def _plan(m, what: str, nthread, blocks):
    """(work Data handles, model handles, kind, index, worker count) for ``what`` on ``m``, kept
    per model and thread count with kd.batch's per-thread handles (a call then allocates only its
    outputs and scratch)."""
    nthread_used = thread_count(nthread)
    plans = _per_thread(m)["lists"]
    key = (what, nthread_used)
    plan = plans.get(key)
    if plan is None:
        kind, index = _columns(*blocks)
        nwork = max(1, min(nthread_used, kind.shape[0]))
        plan = (_fd_work_data(m, nwork), _model_handles(m, nwork), kind, index, nwork)
        plans[key] = plan
    return plan


def _check(m, d, eps, fname: str) -> float:
    # (d's state is checked in the kernels, as kd.step checks it: a non-finite input makes the
    # unperturbed step fail, which raises below)
    try:
        if d._model is not m:
            bad_model_data(m, d, fname)
    except AttributeError:
        bad_model_data(m, d, fname)
    check_integrator(m, fname)
    return check_eps(eps, fname)


def check_integrator(m, fname: str) -> None:
    """Refuse what the compiled perturbed steps cannot run: RK4 (as MuJoCo), Python callbacks."""
    if m._has_actuator_callbacks:
        raise NotImplementedError(f"{fname}: the model's user-actuator callbacks run from Python, and the "
                                  "perturbed steps run compiled on threads; remove them "
                                  "(m.set_actuator_callbacks()) or difference kd.step yourself")
    integrator = m.opt._flags[OPT_INTEGRATOR]
    if integrator not in (INT_EULER, INT_IMPLICIT, INT_IMPLICITFAST, INT_DISCRETE):
        # MuJoCo refuses RK4 (mjERROR)
        raise ValueError(f"{fname}: the {IntegratorType(integrator).name} integrator is not supported "
                         "(MuJoCo's finite differences refuse RK4); use Euler, implicit, implicitfast or "
                         "discrete")


def check_no_history(m, fname: str) -> None:
    """MuJoCo's step derivatives refuse models with history buffers, of controls or of sensors
    (mjERROR "delays are not supported"): the state would have to include the buffers."""
    if m.nhistory:
        raise ValueError(f"{fname}: delays are not supported (the model has history buffers, actuator "
                         "or sensor nsample > 0), as in MuJoCo's mjd_transitionFD")


def check_eps(eps, fname: str) -> float:
    """eps as a float, or TypeError / ValueError unless it is a finite positive number."""
    if eps.__class__ is not float:
        if isinstance(eps, bool) or not isinstance(eps, (int, np.floating, np.integer)):
            raise TypeError(f"{fname}: eps must be a number, got {type(eps).__name__}")
        eps = float(eps)
    if not 0.0 < eps < np.inf:
        raise ValueError(f"{fname}: eps must be finite and positive, got {eps!r}")
    return eps


def _raise_bad(status: np.ndarray, fname: str, eps: float) -> None:
    bad = int(status[status != 0][0])
    if bad == STATUS_DISCRETE_ROWS:
        raise ValueError(f"{fname}: {DISCRETE_ROWS}")
    raise ValueError(f"{fname}: a step went non-finite or huge in {_STATUS_FIELD.get(bad, 'fwdinv')} (d's "
                     f"state, ctrl or act is non-finite, or eps = {eps:g} is too large for the model); "
                     "no derivative is returned")


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
    Euler and implicitfast only; RK4 and models with control history buffers (``nsample``) raise
    ValueError, as MuJoCo's mjERROR.
    """
    eps = _check(m, d, eps, "transition_fd")
    check_no_history(m, "transition_fd")
    nv, na, nu, ns = m.nv, m.na, m.nu, m.nsensordata
    ndx = 2 * nv + na
    work, models, kind, index, nwork = _plan(m, "transition_fd", nthread,
                                             ((COL_CTRL, nu), (COL_ACT, na), (COL_VEL, nv), (COL_POS, nv)))
    outs = (np.zeros((1, ndx, ndx)), np.zeros((1, nu, ndx)), np.zeros((1, ndx, ns)), np.zeros((1, nu, ns)))
    status = _run(OP_TRANSITION, m, work, models, d._handle, work, kind, index, eps, centered, outs,
                  nwork, m.nq + nv + na, nthread)
    if status.any():
        _raise_bad(status, "transition_fd", eps)
    at, bt, ct, dt = (x[0] for x in outs)
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
    if m.opt.integrator == IntegratorType.DISCRETE:  # the inverse in the discrete integrator's metric
        raise ValueError('inverse_fd: inverse dynamics under integrator="discrete" is not reproduced by '
                         "kinedyn (docs/deviations.md)")
    if m.opt.noslip_iterations:
        raise ValueError("inverse_fd: the noslip solver is not supported (as MuJoCo's mjd_inverseFD)")
    for name in ("qpos", "qvel", "qacc", "act", "ctrl"):
        # (the inverse has no check of its own, as kd.step has: a NaN would run through silently)
        if not np.isfinite(getattr(d, name)).all():
            raise ValueError(f"inverse_fd: d.{name} holds non-finite values")
    nv, ns, nc = m.nv, m.nsensordata, m.nC
    work, models, kind, index, nwork = _plan(m, "inverse_fd", nthread,
                                             ((COL_ACC, nv), (COL_VEL, nv), (COL_POS, nv)))
    dfd, dmdq, dsd = np.zeros((3, nv, nv)), np.zeros((1, nv, nc)), np.zeros((3, nv, ns))
    _run(OP_INVERSE, m, work, models, d._handle, work, kind, index, eps, actuation,
         (dfd, dmdq, dsd, _NO_OUTPUT), nwork, nv, nthread)
    return InverseFD(*dfd, *dsd, dmdq[0])


# ---------------------------------------------------------------------------------------
# along a trajectory: one transition_fd per step, the steps shared among threads

@cached_njit
def _linearize_worker(m, d, src, steps, states, controls, warmstart, eps, centered, kind, index,
                      at, bt, ct, dt, buf, sbuf, dpos, status):
    """Steps taken from ``steps`` until none is left: src gets step t's state, ctrl and warmstart,
    then one worker does every column of it on d (a private column counter)."""
    nq, nv, na = m.nq, m.nv, m.na
    queue = np.zeros(1, dtype=np.int64)
    t = take_next(steps)
    while t < states.shape[0]:
        src.time[0] = states[t, 0]
        src.qpos[:] = states[t, 1:1 + nq]
        src.qvel[:] = states[t, 1 + nq:1 + nq + nv]
        src.act[:] = states[t, 1 + nq + nv:1 + nq + nv + na]
        src.plastic[:] = states[t, 1 + nq + nv + na:]   # (no history: refused)
        src.ctrl[:] = controls[t]
        src.qacc_warmstart[:] = warmstart[t]
        queue[0] = 0
        status[t] = transition_worker(m, d, src, queue, eps, centered, kind, index,
                                      at[t], bt[t], ct[t], dt[t], buf, sbuf, dpos)
        t = take_next(steps)


def linearize_fd(m, states: np.ndarray, controls: np.ndarray, warmstart: np.ndarray, eps: float,
                 centered: bool, nthread) -> TransitionFD:
    """``transition_fd`` at every step of a trajectory, the steps in parallel: A, B, C, D stacked
    along a leading step axis. ``states`` (T, 1 + nq + nv + na + nplastic) packed [time, qpos, qvel, act,
    plastic],
    ``controls`` (T, nu), ``warmstart`` (T, nv), all C-contiguous float64 (checked by the caller,
    kd.trajectory.linearize). Every other input is a new Data's (no applied forces, the mocap
    bodies and equalities as the model defines them)."""
    nv, na, nu, ns = m.nv, m.na, m.nu, m.nsensordata
    ndx, nstep = 2 * nv + na, states.shape[0]
    check_integrator(m, "trajectory.linearize")
    check_no_history(m, "trajectory.linearize")
    kind, index = _columns((COL_CTRL, nu), (COL_ACT, na), (COL_VEL, nv), (COL_POS, nv))
    at = np.zeros((nstep, ndx, ndx))
    bt = np.zeros((nstep, nu, ndx))
    ct = np.zeros((nstep, ndx, ns))
    dt = np.zeros((nstep, nu, ns))
    with threads(nthread) as nthread_used:
        nwork = max(1, min(nthread_used, nstep))
    work, models = _fd_work_data(m, nwork), _model_handles(m, nwork)
    srcs = typed_list([Data(m)._handle for _ in range(nwork)])  # new Data: no applied forces
    status = _run(OP_LINEARIZE, m, work, models, srcs[0], srcs, kind, index, eps, centered, (at, bt, ct, dt),
                  nwork, m.nq + nv + na, nthread, states, controls, warmstart, nstep)
    if status.any():
        t = int(np.flatnonzero(status)[0])
        raise ValueError(f"linearize: at step {t} a step went non-finite or huge in "
                         f"{_STATUS_FIELD.get(int(status[t]), 'fwdinv')} (that state or control is "
                         f"non-finite, or eps = {eps:g} is too large); no derivative is returned")
    t = (0, 2, 1)
    return TransitionFD(at.transpose(t).copy(), bt.transpose(t).copy(), ct.transpose(t).copy(),
                        dt.transpose(t).copy())


# ---------------------------------------------------------------------------------------
# how far finite differences can be trusted at a state

_ROWS = ("q", "v", "a")  # blocks of the state: tangent-space qpos, qvel, act


def _dof_labels(m) -> list[str]:
    """Each dof's joint name, with the dof's index within a free or ball joint (``root[3]``), as
    kd.trajectory.dof_names (not imported: trajectory imports this module)."""
    joints = m.names.get("jnt", [])
    labels = []
    for v in range(m.nv):
        j = int(m.dof_jntid[v])
        name = (joints[j] if j < len(joints) else "") or f"joint{j}"
        multi = m.jnt_type[j] == JNT_FREE or m.jnt_type[j] == JNT_BALL
        labels.append(f"{name}[{v - int(m.jnt_dofadr[j])}]" if multi else name)
    return labels


@dataclass(frozen=True)
class DerivativeCheck:
    """``kd.check_derivatives``'s report: how much three finite-difference evaluations of the step's
    derivatives disagree, block by block and input by input.

    Attributes:
      eps: the step size checked.
      blocks: block name -> largest disagreement relative to the block's largest entry (the
        matrix's, for a block of zeros). Names are output + "/" + input: "q/v" is the next tangent
        qpos against qvel (A's upper middle block), "s/u" the sensors against ctrl (D).
      suspect: the inputs ("qpos[3] (joint 'hip')", "ctrl[0] (actuator 'knee')", ...) whose column
        disagrees by more than ``rtol`` relative to the matrix's largest entry: a contact, constraint
        or clamp switches within eps of the state along that input, or the step is strongly curved.
      rtol: the threshold of ``suspect``.
    """

    eps: float
    blocks: dict
    suspect: list
    rtol: float
    #: block name -> largest difference between transition_derivatives and the centred differences,
    #: relative as ``blocks`` (empty when the analytical derivatives were refused)
    analytical: dict = field(default_factory=dict)
    #: inputs whose analytical column differs from the centred one by more than ``rtol`` and by
    #: more than the finite differences' own disagreement there
    analytical_suspect: list = field(default_factory=list)
    #: why transition_derivatives refused this model or state ("" if it did not)
    refused: str = ""
    #: the switches within eps of the state, stage by stage: clamps at their edge, contacts at
    #: their margin, active constraint rows, an unconverged solver
    switches: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"finite differences at eps = {self.eps:g}: forward (eps, eps/10) and centred, "
                 "largest disagreement per block"]
        lines += [f"  {name:5} {value:9.2e}" for name, value in self.blocks.items()]
        if self.suspect:
            lines.append(f"inputs disagreeing by more than {self.rtol:g}: " + ", ".join(self.suspect))
        else:
            lines.append(f"no input disagrees by more than {self.rtol:g}")
        if self.refused:
            lines.append(f"analytical: refused ({self.refused})")
        else:
            lines.append("analytical against centred differences, per block")
            lines += [f"  {name:5} {value:9.2e}" for name, value in self.analytical.items()]
            if self.analytical_suspect:
                lines.append("analytical and finite differences disagree on: "
                             + ", ".join(self.analytical_suspect))
        if self.switches:
            lines.append("switches within eps: " + "; ".join(self.switches))
        return "\n".join(lines)


def check_derivatives(m, d, eps: float = 1e-6, rtol: float = 1e-3,
                      nthread: int | None = None) -> DerivativeCheck:
    """Where the finite-difference derivatives of the step can be trusted at d's state.

    Computes ``transition_fd`` three times (forward with eps and eps/10, centred with eps) and
    reports their largest disagreement per block of (A, B; C, D) and the inputs whose columns
    disagree by more than ``rtol`` (relative to the matrix's largest entry). Where a contact appears,
    a constraint changes state or a clamp engages within eps of the state, the finite differences
    straddle the switch and disagree with each other: that is the error bar of any of them there.
    Where ``transition_derivatives`` applies, its matrices are compared with the centred
    differences too (``analytical``, ``analytical_suspect``; else ``refused`` says why), and
    ``switches`` lists what switches within eps of the state: controls at their ctrlrange,
    forces at their forcerange, activations reaching their actrange, contacts at their margin,
    active constraint rows and a solver stopped at its iteration limit.
    """
    eps = _check(m, d, eps, "check_derivatives")
    rtol = check_eps(rtol, "check_derivatives (rtol)")
    runs = [transition_fd(m, d, eps, False, nthread), transition_fd(m, d, eps / 10.0, False, nthread),
            transition_fd(m, d, eps, True, nthread)]
    nv = m.nv
    rows = {"q": slice(0, nv), "v": slice(nv, 2 * nv), "a": slice(2 * nv, 2 * nv + m.na)}
    # the state and sensor rows against the state and control columns
    pairs = [(out, inp, "AB"[inp == "u"] if out != "s" else "CD"[inp == "u"])
             for out in (*_ROWS, "s") for inp in (*_ROWS, "u")]
    blocks = {}
    for out, inp, which in pairs:
        k = "ABCD".index(which)
        r = slice(None) if out == "s" else rows[out]
        c = slice(None) if inp == "u" else rows[inp]
        ref = runs[0][k][r, c]
        if ref.size == 0:
            continue
        scale = np.abs(ref).max() or np.abs(runs[0][k]).max() or 1.0
        blocks[f"{out}/{inp}"] = max(float(np.abs(x[k][r, c] - ref).max()) for x in runs[1:]) / scale
    dofs = _dof_labels(m)
    names = ([f"qpos[{i}] ({n})" for i, n in enumerate(dofs)]
             + [f"qvel[{i}] ({n})" for i, n in enumerate(dofs)] + [f"act[{i}]" for i in range(m.na)])
    actuators = m.names.get("actuator", [])
    # one label per control, named by its actuator (an actuator's block may hold several or none)
    controls = [f"ctrl[{int(m.actuator_ctrladr[a]) + k}] "
                f"({(actuators[a] if a < len(actuators) else '') or f'actuator{a}'})"
                for a in range(m.nactuator) for k in range(int(m.actuator_ctrlnum[a]))]
    suspect = []
    spread = []
    for k, labels in ((0, names), (1, controls)):
        scale = np.abs(runs[0][k]).max() or 1.0
        worst = np.max([np.abs(x[k] - runs[0][k]).max(axis=0) for x in runs[1:]], axis=0) / scale
        spread.append(worst)
        suspect += [labels[j] for j in np.flatnonzero(worst > rtol)]
    # the analytical derivatives against the centred differences, where they apply
    analytical, analytical_suspect, refused = {}, [], ""
    try:
        exact = transition_derivatives(m, d, sensors="fd")
    except ValueError as err:
        refused = str(err).split(": ", 1)[-1]
    else:
        centred = runs[2]
        for out, inp, which in pairs:
            k = "ABCD".index(which)
            r = slice(None) if out == "s" else rows[out]
            c = slice(None) if inp == "u" else rows[inp]
            ref = centred[k][r, c]
            if ref.size:
                scale = np.abs(ref).max() or np.abs(centred[k]).max() or 1.0
                analytical[f"{out}/{inp}"] = float(np.abs(exact[k][r, c] - ref).max()) / scale
        for k, labels in ((0, names), (1, controls)):
            scale = np.abs(centred[k]).max() or 1.0
            diff = np.abs(exact[k] - centred[k]).max(axis=0) / scale
            analytical_suspect += [labels[j] for j in np.flatnonzero((diff > rtol) & (diff > spread[k]))]
    return DerivativeCheck(eps, blocks, suspect, rtol, analytical, analytical_suspect, refused,
                           _switches(m, d, eps, controls))


def _switches(m, d, eps: float, controls: list) -> list:
    """The switches within eps of d's state, by stage (see DerivativeCheck.switches)."""
    w = _td_work(m)[0]
    for name in _INPUTS:
        getattr(w, name)[...] = getattr(d, name)
    w.time = d.time
    forward(m, w)
    out = []
    for c in range(m.nu):
        if m.actuator_ctrllimited[c]:
            lo, hi = m.actuator_ctrlrange[c]
            if min(abs(d.ctrl[c] - lo), abs(d.ctrl[c] - hi)) <= eps or not lo <= d.ctrl[c] <= hi:
                out.append(f"actuation: {controls[c]} at or beyond its ctrlrange")
    for i in range(m.nactuator):
        if m.actuator_forcelimited[i]:
            lo, hi = m.actuator_forcerange[i]
            if w.actuator_force[i] <= lo or w.actuator_force[i] >= hi:
                out.append(f"actuation: actuator {i}'s force held at its forcerange")
        if m.actuator_actlimited[i] and m.actuator_actadr[i] >= 0:
            k = int(m.actuator_actadr[i] + m.actuator_actnum[i] - 1)
            lo, hi = m.actuator_actrange[i]
            nxt = w.act[k] + m.opt.timestep * w.act_dot[k]
            if min(abs(nxt - lo), abs(nxt - hi)) <= eps or not lo <= nxt <= hi:
                out.append(f"activation: act[{k}] next step at or beyond its actrange")
    for c in range(w.ncon):
        if abs(w.contact_dist[c] - w.contact_includemargin[c]) <= eps:
            out.append(f"contact {c}: distance at its margin (onset)")
    if w.nefc:
        out.append(f"constraint: {w.nefc} active rows ({w.ncon} contacts)")
        niter = int(w.scratch_solver_counts[1])   # the last solve's iterations
        if niter >= m.opt.iterations:
            out.append(f"solver: stopped at its iteration limit ({niter}): not converged")
        gap = _optimum_gap(m, w)
        if gap > OPTIMUM_RTOL:
            out.append(f"solver: its constraint force is {gap:.1e} (relative) from the optimum's at its "
                       "qacc: the analytical derivatives are the optimum's, the differences where the "
                       "solver stops")
    return out


# how far (relative) forward's constraint force may be from the optimum's at the same qacc before
# check_derivatives names the solver: a solver stopped by its tolerance (PGS's improvement test,
# say) can be far from the optimum while under its iteration limit
OPTIMUM_RTOL = 1e-6


def _optimum_gap(m, w) -> float:
    """|qfrc_constraint(forward) - qfrc_constraint(inverse at forward's qacc)| relative to the
    larger of the two: zero at the solver's optimum (MuJoCo's solver_fwdinv[0], mj_compareFwdInv).
    Leaves w with the inverse's outputs."""
    forward_force = w.qfrc_constraint.copy()
    inverse(m, w)
    scale = max(np.abs(forward_force).max(), np.abs(w.qfrc_constraint).max(), 1e-300)
    return float(np.abs(forward_force - w.qfrc_constraint).max() / scale)


# ---------------------------------------------------------------------------------------
# analytical derivatives of one step

# what a step reads besides the model (as transition_fd's perturbed steps take them from d)
_INPUTS = ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "qfrc_applied", "xfrc_applied", "mocap_pos",
           "mocap_quat", "eq_active")
_SENSOR_MODES = {"none": 0, "analytical": 1, "fd": 2}   # derivative_transition's _SENSORS_*


# per model: (work Data, the unit's scratch arrays) for transition_derivatives
_TD_WORK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _td_work(m) -> list:
    """[work Data, the unit's scratch arrays, the last ``out`` checked] kept per model for
    transition_derivatives."""
    work = _TD_WORK.get(m)
    if work is None:
        w = Data(m)
        work = _TD_WORK[m] = [w, work_arrays(m, w), None]
    return work


def _out_matrix(x, shape, name: str) -> np.ndarray:
    if not (x.__class__ is np.ndarray and x.dtype == np.float64 and x.shape == shape and x.flags.c_contiguous
            and x.flags.writeable):
        raise ValueError(f"transition_derivatives: out {name} must be a writeable C-contiguous float64 array "
                         f"of shape {shape}")
    return x


def transition_derivatives(m, d, sensors: str = "analytical", eps: float = 1e-6,
                           constraint_eps: float = 1e-7, out=None) -> TransitionDerivatives:
    """Analytical derivatives of one step, ``(A, B, C, D)``, in ``transition_fd``'s layout and
    meaning (mjd_transitionFD's): x = [dqpos (tangent, nv), qvel, act], u = ctrl.

    Differentiates the rigid-body dynamics, the actuators (joint, fixed and spatial tendon (through
    sites and pulleys), site (with or without refsite) and slider-crank transmissions; fixed, affine
    and muscle gain and bias; integrator, filter, filterexact and muscle activation dynamics,
    actearly; ctrlrange, actrange, forcerange and actuatorfrcrange clamps), joint springs and
    dampers (polynomial ones too), tendon springs and dampers, gravity compensation, fluid forces
    (under Euler), ``xfrc_applied``, the Euler (eulerdamp included), implicit or implicitfast update
    on the tangent space, and the constraint force at the solver's optimum with every row's zone
    and the contact set held (``constraint_derivatives``; its position derivative is a central
    difference of step ``constraint_eps``). At a clamp's edge the value inside the range is
    returned; strictly clamped, zero. Whatever else the model uses at this state (RK4, tendons
    wrapping geoms, body transmissions, fluid forces under implicit*, noslip, ...) raises ValueError
    naming it. ``sensors``: "analytical" differentiates joint/tendon/actuator pos, vel and force
    sensors, clock, subtreecom, subtreelinvel, subtreeangmom, velocimeter, gyro, accelerometer,
    force and torque (without external forces on their subtree at the state), and the frame
    position, orientation, velocity and acceleration sensors (with or without a reference frame)
    and refuses the
    others; "fd" fills the others' rows of C and D by finite differences
    (``transition_fd`` with ``eps``; listed in the result's ``fd_sensor_rows``); "none" returns
    C and D with no rows. ``out``: (A, B, C, D) arrays to write into (C, D with no rows for
    sensors="none"), as a control loop reuses them; else new ones. ``d`` is not modified. See
    docs/derivatives.md.
    """
    if getattr(d, "_model", None) is not m:
        bad_model_data(m, d, "transition_derivatives")
    mode = _SENSOR_MODES.get(sensors) if sensors.__class__ is str else None
    if mode is None:
        raise ValueError(f"transition_derivatives: sensors must be one of {tuple(_SENSOR_MODES)}, "
                         f"got {sensors!r}")
    if constraint_eps.__class__ is not float or not 0.0 < constraint_eps < np.inf:
        constraint_eps = check_eps(constraint_eps, "transition_derivatives (constraint_eps)")
    if m._has_actuator_callbacks:
        raise ValueError("transition_derivatives: not differentiated analytically here: "
                         "user-actuator callbacks")
    if m.nu != m.nactuator or m.nu and m.actuator_ctrlnum.max() != 1:
        # B's columns here are per actuator; transition_fd has one per control (mjd_transitionFD)
        raise ValueError("transition_derivatives: not differentiated analytically here: actuators with "
                         "several controls or none (actuator_ctrlnum != 1); use transition_fd")
    if m.nhistory:
        check_no_history(m, "transition_derivatives")  # the step reads delayed controls from d.history
    state = _td_work(m)
    w, work = state[0], state[1]
    ndx = 2 * m.nv + m.na
    ns = m.nsensordata if mode else 0
    if out is None:
        out = TransitionDerivatives(np.empty((ndx, ndx)), np.empty((ndx, m.nu)), np.empty((ns, ndx)),
                                    np.empty((ns, m.nu)))
    elif out is not state[2] or out[2].shape[0] != ns:
        # a tuple's arrays cannot be swapped nor resized while it holds them: the last checked
        # (a result passed back, as a control loop does) need not be checked again
        if len(out) != 4:
            raise ValueError("transition_derivatives: out must be (A, B, C, D)")
        shapes = ((ndx, ndx), (ndx, m.nu), (ns, ndx), (ns, m.nu))
        for x, shape, name in zip(out, shapes, "ABCD", strict=True):
            _out_matrix(x, shape, name)
        if not isinstance(out, TransitionDerivatives):
            out = TransitionDerivatives(*out)
    if m.nmocap:
        w.mocap_pos[...], w.mocap_quat[...] = d.mocap_pos, d.mocap_quat
    if m.neq:
        w.eq_active[:] = d.eq_active
    status = step_derivatives(m, w, mode, work, out, d, constraint_eps)
    codes = work[-1]
    if status == STATUS_REFUSED:
        missing = [refusal_text(m, int(c), int(i)) for c, i in codes[1:codes[0, 0] + 1]]
        raise ValueError("transition_derivatives: not differentiated analytically here: "
                         + "; ".join(missing))
    if status in (STATUS_NONFINITE, STATUS_PIVOT):
        raise ValueError("transition_derivatives: d's qpos, qvel, act, ctrl or qfrc_applied holds non-finite "
                         "values" if status == STATUS_NONFINITE else
                         "transition_derivatives: the implicit integrator's matrix M - h qDeriv is singular")
    if status:
        raise ValueError("transition_derivatives: the constraint rows change on both sides of a position "
                         f"step of {constraint_eps:g} (a contact or limit appears on one side and another "
                         "disappears on the other): the derivative is not defined at this state")
    result = state[2] = out
    if mode == 2 and codes[0, 0]:
        fd_rows = []
        for _, s in codes[1:codes[0, 0] + 1]:
            adr = int(m.sensor_adr[s])
            fd_rows += range(adr, adr + int(m.sensor_dim[s]))
        fd = transition_fd(m, d, eps)
        result.C[fd_rows], result.D[fd_rows] = fd.C[fd_rows], fd.D[fd_rows]
        result.fd_sensor_rows = fd_rows
    return result
