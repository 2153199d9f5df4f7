"""Batched evaluation: the pipeline over a leading batch axis, in parallel across cores.

Two ways in:

* ``BatchData(m, nbatch)`` holds ``nbatch`` states. Each field is one
  ``(nbatch, ...)`` array (``bd.qpos`` is ``(nbatch, nq)``) and ``bd[i]`` is a
  ``kinedyn.Data`` whose fields are row ``i`` of those arrays, so every member has
  its own results *and its own scratch*. ``forward``, ``step``, ``inverse`` and
  ``jac_site`` run the single-state jitted entries (``forward_entry``,
  ``step_entry``, ...) on every member in a Numba ``prange`` loop.
* ``rollout(m, initial_state, control, nstep)`` mirrors ``mujoco.rollout.rollout``:
  open-loop trajectories from packed initial states ``[time, qpos, qvel, act, history, plastic]``
  (MuJoCo's ``mjSTATE_FULLPHYSICS`` for models without plugins; ``history`` holds the
  actuators' control buffers, ``plastic`` the springs' plasticity, each empty without them)
  under per-step controls. Like MuJoCo's rollout it keeps one work ``Data`` per thread and
  the states in the output array, so a batch of 10,000 rollouts needs two ``Data``, not
  10,000; the work ``Data`` are kept for the next call on the same model.

``nthread`` picks the number of threads (``numba.set_num_threads`` for the call,
restored afterwards); by default Numba's current setting (all cores unless
``NUMBA_NUM_THREADS`` says otherwise). See docs/batch.md.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass

import numpy as np

from kinedyn._jit import bind_call, cached_njit
from kinedyn._jit.parallel import get_thread_id, parallel_njit, prange, take_next, threads, typed_list
from kinedyn.engine import integrator
from kinedyn.engine.checks import check_model, check_model_batch, float_array
from kinedyn.engine.data import Data, plastic_reset, reset_mocap, reset_sleep
from kinedyn.engine.fields import DATA_FIELD, DATA_FIELDS, SIZE_NAMES
from kinedyn.engine.forward import forward_entry
from kinedyn.engine.history import reset_history
from kinedyn.engine.integrator import STATUS_OK, step_entry
from kinedyn.engine.inverse import check_discrete_inverse, inverse_entry
from kinedyn.engine.model import Model
from kinedyn.engine.support import FRAME_SITE, _check_id, _jac_frame_entry

# GNU OpenMP (Numba's default threading layer here) keeps a thread that has run out of
# work spinning for ~300,000 iterations (several ms) before it sleeps: at the end of every
# batched call and whenever one thread finishes first. Batched calls are long (ms), so
# waking a sleeping thread costs nothing measurable, while the spinning takes a core from
# the threads doing the work and from other programs. On the loaded 2-core development
# machine a 2-thread humanoid rollout used 35-41 µs of CPU per step spinning and 30-33
# without (one thread: 29-33). Only a default: the user's own OMP_WAIT_POLICY wins, and
# it takes effect only if OpenMP is not loaded yet (Numba loads it at the first parallel call).
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

__all__ = ["BatchData", "Rollout", "forward", "get_state", "inverse", "jac_site", "rollout",
           "set_state", "state_size", "step"]


# ---------------------------------------------------------------------------------------
# packed state: [time, qpos, qvel, act, history, plastic] (mj_getState / mj_setState with
# mjSTATE_FULLPHYSICS)

def state_size(m: Model) -> int:
    """Length of a packed state ``[time, qpos, qvel, act, history, plastic]``:
    ``1 + nq + nv + na + nhistory + nplastic``.

    Equals ``mujoco.mj_stateSize(mjm, mjtState.mjSTATE_FULLPHYSICS)`` for every model
    kinedyn compiles (they have no plugin state; ``nhistory`` is the size of the actuators' and
    sensors' history buffers, ``nplastic`` of the springs' plasticity, each 0 without them).
    """
    check_model(m, "state_size")
    return 1 + m.nq + m.nv + m.na + m.nhistory + m.nplastic


def _state_slices(m: Model) -> dict[str, slice]:
    """Where time, qpos, qvel, act, history and plastic sit in a packed state."""
    end = 1 + m.nq + m.nv + m.na
    return {"time": slice(0, 1), "qpos": slice(1, 1 + m.nq),
            "qvel": slice(1 + m.nq, 1 + m.nq + m.nv),
            "act": slice(1 + m.nq + m.nv, end),
            "history": slice(end, end + m.nhistory),
            "plastic": slice(end + m.nhistory, end + m.nhistory + m.nplastic)}


def get_state(m: Model, bd: BatchData) -> np.ndarray:
    """Packed states ``(nbatch, state_size(m))`` of every member (mj_getState, FULLPHYSICS)."""
    _check_batch(m, bd, "get_state")
    out = np.empty((bd.nbatch, state_size(m)))
    for name, where in _state_slices(m).items():
        out[:, where] = bd._time if name == "time" else getattr(bd, name)
    return out


def set_state(m: Model, bd: BatchData, state) -> None:
    """Set time, qpos, qvel, act, history and plastic of every member from packed states
    (mj_setState, FULLPHYSICS).

    ``state`` is ``(nbatch, nstate)`` or one ``(nstate,)`` state for all members.
    """
    _check_batch(m, bd, "set_state")
    state = _as_states(m, state, "state")
    if state.shape[0] not in (1, bd.nbatch):
        raise ValueError(f"state has {state.shape[0]} rows; BatchData has {bd.nbatch} members")
    for name, where in _state_slices(m).items():
        target = bd._time if name == "time" else getattr(bd, name)
        target[...] = state[:, where]


def _as_states(m: Model, state, argname: str) -> np.ndarray:
    state = float_array(state, argname)
    if state.ndim == 1:
        state = state[None]
    nstate = state_size(m)
    if state.ndim != 2 or state.shape[1] != nstate:
        raise ValueError(f"{argname} must have shape (nbatch, {nstate}) or ({nstate},) "
                         f"= [time, qpos, qvel, act, history, plastic]; got {np.shape(state)}")
    # non-finite states are not rejected: like kd.step, the first step warns and resets
    return np.ascontiguousarray(state)


# ---------------------------------------------------------------------------------------
# BatchData

class BatchData:
    """``nbatch`` Data of one model, each field one ``(nbatch, ...)`` array.

    ``bd.qpos`` is the ``(nbatch, nq)`` array itself (writes go straight to the
    members), ``bd.time`` is ``(nbatch,)``, and ``bd[i]`` is a ``kinedyn.Data`` whose
    fields are views of row ``i``: single-state functions (``kd.forward(m, bd[i])``)
    and the batched ones see the same memory. Assigning a field
    (``bd.ctrl = u``) broadcasts ``u`` to ``(nbatch, ...)`` and copies it in.
    A BatchData belongs to the Model it was made for (``bd.model``), as a Data does.
    """

    def __init__(self, model: Model, nbatch: int):
        if not isinstance(model, Model):
            raise TypeError(f"BatchData(model, nbatch) needs a kinedyn.Model, got {type(model).__name__}")
        if not isinstance(nbatch, (int, np.integer)) or nbatch < 1:
            raise ValueError(f"nbatch must be a positive integer, got {nbatch!r}")
        nbatch = int(nbatch)
        sizes = {s: getattr(model, s) for s in SIZE_NAMES}
        arrays = {spec.name: np.zeros((nbatch, *spec.resolve(sizes)), dtype=spec.dtype)
                  for spec in DATA_FIELDS}
        for name, arr in arrays.items():
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "_time", np.zeros((nbatch, 1)))
        object.__setattr__(self, "nbatch", nbatch)
        object.__setattr__(self, "_sizes", sizes)
        object.__setattr__(self, "_batch_model", model)  # strong reference, as Data._model
        object.__setattr__(self, "_members", [None] * nbatch)
        object.__setattr__(self, "_handles", None)
        self.qpos[:] = model.qpos0
        self.eq_active[:] = model.eq_active0
        reset_mocap(model, self.mocap_pos, self.mocap_quat)
        reset_history(model, self.history)
        reset_sleep(model, self)
        plastic_reset(model, self.plastic)

    @property
    def model(self) -> Model:
        """The Model this BatchData was made for: the only one batched functions accept with it."""
        return self._batch_model

    @property
    def time(self) -> np.ndarray:
        """Simulation time of each member, ``(nbatch,)`` (a view: writes go to the members)."""
        return self._time[:, 0]

    @time.setter
    def time(self, value) -> None:
        self._time[:, 0] = value

    def __setattr__(self, name, value):
        if name == "time":
            object.__setattr__(self, name, value)  # the property
            return
        if name not in DATA_FIELD:
            raise AttributeError(f"BatchData has no field '{name}'")
        target = getattr(self, name)
        try:
            value = np.asarray(value)
            if value.dtype.kind not in ("biuf" if target.dtype.kind == "f" else "biu"):
                raise TypeError(f"BatchData.{name} holds {target.dtype}; "
                                f"cannot assign values of dtype {value.dtype}")
            target[...] = np.broadcast_to(value, target.shape)
        except ValueError:
            raise ValueError(f"BatchData.{name} has shape {target.shape}; cannot assign shape "
                             f"{np.shape(value)}") from None

    def __delattr__(self, name):
        raise AttributeError(f"BatchData.{name} cannot be deleted")

    def __len__(self) -> int:
        return self.nbatch

    def __getitem__(self, i) -> Data:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"BatchData index must be an integer, got {type(i).__name__}")
        if not -self.nbatch <= i < self.nbatch:
            raise IndexError(f"member {i} out of range for BatchData of {self.nbatch}")
        i = int(i) % self.nbatch
        member = self._members[i]
        if member is None:
            member = _row_view(self, i)
            self._members[i] = member
        return member

    def __iter__(self):
        return (self[i] for i in range(self.nbatch))

    def _kernel_handles(self):
        """Typed list of every member's kernel handle (built once, on first batched call)."""
        if self._handles is None:
            object.__setattr__(self, "_handles", typed_list([self[i]._handle for i in range(self.nbatch)]))
        return self._handles

    def __repr__(self) -> str:
        nq, nv = self.qpos.shape[1], self.qvel.shape[1]
        return f"<kinedyn.tools.batch.BatchData nbatch={self.nbatch} nq={nq} nv={nv}>"


def _row_view(bd: BatchData, i: int) -> Data:
    """A Data whose arrays are row ``i`` of the batch arrays (C-contiguous views: same kernel types)."""
    d = object.__new__(Data)
    d._bind(bd._batch_model, {spec.name: getattr(bd, spec.name)[i] for spec in DATA_FIELDS}, bd._time[i])
    return d


def _check_batch(m, bd, fname: str) -> None:
    # the kernels index the arrays by the model's sizes: a BatchData of another model, or the
    # arguments swapped, would read and write out of bounds
    check_model_batch(m, bd, f"kd.batch.{fname}")


# ---------------------------------------------------------------------------------------
# per-thread handles, per model, reused across calls

# Every thread gets a model handle of its own over the same model arrays: the parallel
# kernels below count references of the arrays they read, and threads sharing one handle
# would contend for the same counters' cache lines (docs/benchmarks.md, speed history).
_PER_THREAD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _per_thread(m: Model) -> dict:
    return _PER_THREAD.setdefault(m, {"models": [m._handle], "data": [], "lists": {}})


def _model_handles(m: Model, n: int):
    """A typed List of ``n`` model handles of ``m``, all over the same arrays (the first is
    ``m._handle``), made once per model and count."""
    cached = _per_thread(m)
    key = ("models", n)
    if key not in cached["lists"]:
        while len(cached["models"]) < n:
            cached["models"].append(m._make_handle())
        cached["lists"][key] = typed_list(cached["models"][:n])
    return cached["lists"][key]


def _work_data(m: Model, n: int):
    """A typed List of the handles of ``n`` work Data of ``m`` (rollout), made once per model
    and count: making a humanoid Data costs ~170 µs, a third of a one-step rollout.

    Reuse is safe: a trajectory sets time, qpos, qvel, act, ctrl and the applied forces
    before its first step, and a step computes every other field it reads. The kernels
    hold the GIL, so two Python threads never run on the same Data at once.
    """
    cached = _per_thread(m)
    key = ("data", n)
    if key not in cached["lists"]:
        while len(cached["data"]) < n:
            # only the handle (it keeps the arrays alive): a Data keeps its model alive, and
            # with it this entry of the weak-keyed cache
            cached["data"].append(Data(m)._handle)
        cached["lists"][key] = typed_list(cached["data"][:n])
    return cached["lists"][key]


# ---------------------------------------------------------------------------------------
# kernels: the single-state entries, one member per prange iteration. One parallel
# kernel serves every batched call (an operation code picks the entry): each parallel
# function costs tens of seconds to compile the first time.

OP_FORWARD, OP_INVERSE, OP_STEP, OP_JAC_SITE = 0, 1, 2, 3


@cached_njit
def _member_op(m, d, op, nstep, site, jac):
    """One member's share of a batched call. Returns the steps done (OP_STEP: fewer than
    nstep if the state went bad, which the caller finishes), else 0."""
    if op == OP_FORWARD:
        forward_entry(m, d)
    elif op == OP_INVERSE:
        inverse_entry(m, d)
    elif op == OP_STEP:
        for done in range(nstep):
            if step_entry(m, d, True) != STATUS_OK:
                return done
        return nstep
    else:
        _jac_frame_entry(m, d, FRAME_SITE, site, jac[0], jac[1])
    return 0


@parallel_njit
def _each_member(models, handles, op, nstep, site, jac, result):
    # the prange body stays a plain call (see _rollout_kernel); each thread reads the model
    # through its own handle, models[thread id] (see _model_handles)
    for i in prange(len(handles)):
        k = np.int64(i)
        result[k] = _member_op(models[get_thread_id()], handles[k], op, nstep, site,
                               jac[k if op == OP_JAC_SITE else np.int64(0)])


def _run(m: Model, bd: BatchData, op: int, nthread, nstep: int = 0, site: int = 0,
         jac: np.ndarray | None = None) -> np.ndarray:
    """Run ``op`` on every member; the per-member results (steps done for OP_STEP)."""
    handles = bd._kernel_handles()
    result = np.empty(bd.nbatch, dtype=np.int64)
    if jac is None:
        jac = np.empty((1, 2, 3, m.nv))
    bind_call(_member_op, (m._handle, handles[0]))  # the units each member's entry reaches
    with threads(nthread) as nthread_used:
        _each_member(_model_handles(m, nthread_used), handles, op, nstep, site, jac, result)
    return result


def forward(m: Model, bd: BatchData, nthread: int | None = None) -> None:
    """``kd.forward`` on every member of ``bd``, in parallel."""
    _check_batch(m, bd, "forward")
    _run(m, bd, OP_FORWARD, nthread)


def inverse(m: Model, bd: BatchData, nthread: int | None = None) -> None:
    """``kd.inverse`` on every member of ``bd`` (qfrc_inverse from qpos, qvel, qacc), in parallel."""
    _check_batch(m, bd, "inverse")
    check_discrete_inverse(m, "batch.inverse")
    _run(m, bd, OP_INVERSE, nthread)


def step(m: Model, bd: BatchData, nstep: int = 1, nthread: int | None = None) -> None:
    """``kd.step(m, bd[i], nstep)`` on every member, in parallel.

    A member whose qpos, qvel or qacc goes non-finite (or beyond 1e10) gets exactly
    the single-state treatment: a ``NonFiniteStateWarning``, a reset of that member,
    and its remaining steps from the reset state. The other members are unaffected.
    """
    _check_batch(m, bd, "step")
    if not isinstance(nstep, (int, np.integer)) or nstep < 0:
        raise ValueError(f"nstep must be a non-negative integer, got {nstep!r}")
    steps_done = _run(m, bd, OP_STEP, nthread, nstep=int(nstep))
    # rare path: the single-state step warns, resets and finishes the member
    for i in np.flatnonzero(steps_done < nstep):
        integrator.step(m, bd[i], int(nstep - steps_done[i]))


def jac_site(m: Model, bd: BatchData, site: int, nthread: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Site Jacobians of every member (mj_jacSite): ``jacp, jacr``, each ``(nbatch, 3, nv)``.

    Needs kinematics and com_pos (or ``forward``) to have run on the members.
    """
    _check_batch(m, bd, "jac_site")
    site = _check_id("site", site, m.nsite)
    jac = np.empty((bd.nbatch, 2, 3, m.nv))
    _run(m, bd, OP_JAC_SITE, nthread, site=site, jac=jac)
    return jac[:, 0], jac[:, 1]


# ---------------------------------------------------------------------------------------
# rollout (mujoco.rollout.rollout)

@dataclass(frozen=True)
class Rollout:
    """Result of :func:`rollout`.

    Attributes:
      state: ``(nbatch, nstep, state_size(m))`` packed states *after* each step,
        laid out as ``mujoco.rollout``'s ``state`` output (mjSTATE_FULLPHYSICS; the history
        buffers and the plastic state follow act).
      time, qpos, qvel, act: views of ``state``: ``(nbatch, nstep)``,
        ``(nbatch, nstep, nq)``, ``(nbatch, nstep, nv)``, ``(nbatch, nstep, na)``.
      thread: ``(nbatch,)`` the Numba thread id that ran each trajectory.
      sensordata: ``(nbatch, nstep, nsensordata)`` the sensors of each step (computed by the
        step's forward pass, at the state before it), as ``mujoco.rollout``'s ``sensordata``;
        None from ``kinedyn.tools.distributed``.
    """

    state: np.ndarray
    time: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    thread: np.ndarray
    sensordata: np.ndarray | None = None


@cached_njit
def _rollout_one(m, d, s0, control, state, sensordata):
    """One trajectory on work Data d; returns the first bad step, or -1.

    Per step, as mujoco's rollout: set ctrl, step (with the non-finite checks), store
    [time, qpos, qvel, act, history, plastic] and sensordata. ``control`` is (nstep or 1, nu),
    ``state``
    (nstep, nstate), ``sensordata`` (nstep, nsensordata).
    The state arrays are read out of the handle once (each read is an atomic
    reference-count pair) and the rows indexed in place, without row views.
    """
    nq, nv, na, nu, nh = m.nq, m.nv, m.na, m.nu, m.nhistory
    time, qpos, qvel, act, ctrl, history = d.time, d.qpos, d.qvel, d.act, d.ctrl, d.history
    time[0] = s0[0]
    for k in range(nq):
        qpos[k] = s0[1 + k]
    for k in range(nv):
        qvel[k] = s0[1 + nq + k]
    for k in range(na):
        act[k] = s0[1 + nq + nv + k]
    for k in range(nh):
        history[k] = s0[1 + nq + nv + na + k]
    plastic = d.plastic
    nxa = 1 + nq + nv + na + nh
    for k in range(plastic.shape[0]):
        plastic[k] = s0[nxa + k]
    # user inputs other than ctrl are zero, as in mujoco's rollout with a ctrl-only control_spec
    d.qfrc_applied[:] = 0.0
    d.xfrc_applied[:, :] = 0.0
    for t in range(state.shape[0]):
        u = t if control.shape[0] > 1 else 0
        for k in range(nu):
            ctrl[k] = control[u, k]
        if step_entry(m, d, True) != STATUS_OK:
            return t
        state[t, 0] = time[0]
        for k in range(nq):
            state[t, 1 + k] = qpos[k]
        for k in range(nv):
            state[t, 1 + nq + k] = qvel[k]
        for k in range(na):
            state[t, 1 + nq + nv + k] = act[k]
        for k in range(nh):
            state[t, 1 + nq + nv + na + k] = history[k]
        for k in range(plastic.shape[0]):
            state[t, nxa + k] = plastic[k]
        if sensordata.shape[1]:
            sensordata[t, :] = d.sensordata
    return -1


@cached_njit
def _rollout_worker(m, d, first, queue, state0, control, state, sensordata, bad_step, thread, thread_id):
    """Trajectory ``first``, then the next untaken one from ``queue`` until none is left, on Data d."""
    nbatch = state.shape[0]
    i = first
    while i < nbatch:
        thread[i] = thread_id
        bad_step[i] = _rollout_one(m, d, state0[i if state0.shape[0] > 1 else 0],
                                   control[i if control.shape[0] > 1 else 0], state[i], sensordata[i])
        i = take_next(queue)


@parallel_njit
def _rollout_kernel(models, work, queue, state0, control, state, sensordata, bad_step, thread):
    """Every trajectory: worker w starts with trajectory w on its own Data work[w], then takes
    the next untaken trajectory (``queue[0]``, starting at the number of workers) until none
    is left.

    Each worker reads the model through its own handle ``models[w]`` (see _model_handles).

    Taking trajectories one at a time, rather than a fixed block per worker, keeps both
    threads busy when one of them is descheduled by other jobs on the machine (a fixed
    split waits for the slower block); mujoco.rollout hands out chunks the same way.
    The loop body only calls ``_rollout_worker``: Numba's parfor pass miscompiled the
    per-step code when it sat inline in this prange loop (results differed from the
    same code run without the JIT).
    """
    for w in prange(len(work)):
        k = np.int64(w)
        _rollout_worker(models[k], work[k], k, queue, state0, control, state, sensordata, bad_step, thread,
                        get_thread_id())


def _as_controls(m: Model, control, nbatch: int, nstep: int | None) -> tuple[np.ndarray, int]:
    """Controls as a C-contiguous (nbatch or 1, nstep or 1, nu) array, and nstep."""
    if control is None:
        if nstep is None:
            raise ValueError("nstep is needed when control is None")
        control = np.zeros((1, 1, m.nu))
    control = float_array(control, "control")
    if control.ndim > 3:
        raise ValueError(f"control can have at most 3 dimensions (nbatch, nstep, nu); got {control.shape}")
    control = control.reshape((1,) * (3 - control.ndim) + control.shape)
    if control.shape[2] != m.nu:
        raise ValueError(f"control's last axis must be nu = {m.nu}; got shape {control.shape}")
    if control.shape[0] != 1 and nbatch != 1 and control.shape[0] != nbatch:
        raise ValueError(f"control has {control.shape[0]} trajectories; initial_state has {nbatch}")
    if nstep is None:
        nstep = control.shape[1]
    if not isinstance(nstep, (int, np.integer)) or nstep < 0:
        raise ValueError(f"nstep must be a non-negative integer, got {nstep!r}")
    if control.shape[1] not in (1, nstep):
        raise ValueError(f"control has {control.shape[1]} steps; nstep is {nstep}")
    if not np.all(np.isfinite(control)):
        raise ValueError("control holds non-finite values")
    return np.ascontiguousarray(control), int(nstep)


def rollout(m: Model, initial_state, control=None, nstep: int | None = None,
            nthread: int | None = None) -> Rollout:
    """Open-loop trajectories from ``initial_state`` under ``control`` (mujoco.rollout.rollout).

    Args:
      m: the model.
      initial_state: ``(nbatch, state_size(m))`` packed ``[time, qpos, qvel, act, history,
        plastic]`` (MuJoCo's mjSTATE_FULLPHYSICS), or one ``(nstate,)`` state.
      control: ``ctrl`` per step, ``(nbatch or 1, nstep or 1, nu)``; leading axes may be
        left out (``(nstep, nu)``, ``(nu,)``) and length-1 axes broadcast. ``None``: zero.
      nstep: number of steps; by default ``control.shape[-2]``.
      nthread: threads to use (default: Numba's current count).

    Returns:
      A :class:`Rollout`: the state after each step, ``(nbatch, nstep, nstate)``, with
      ``time``, ``qpos``, ``qvel`` and ``act`` views.

    Each step sets ``ctrl`` and runs ``kd.step``; qfrc_applied and xfrc_applied are zero.
    If a trajectory's state goes non-finite, that step warns (``NonFiniteStateWarning``),
    resets the member and finishes from the reset state, and the trajectory then holds
    that state for its remaining steps: mujoco's rollout stops a trajectory after any
    warning in the same way.
    """
    check_model(m, "kd.batch.rollout")
    state0 = _as_states(m, initial_state, "initial_state")
    control, nstep = _as_controls(m, control, state0.shape[0], nstep)
    nbatch = max(state0.shape[0], control.shape[0])
    state = np.empty((nbatch, nstep, state_size(m)))
    sensordata = np.zeros((nbatch, nstep, m.nsensordata))
    bad_step = np.full(nbatch, -1, dtype=np.int64)
    thread = np.zeros(nbatch, dtype=np.int64)
    with threads(nthread) as nthread_used:
        nworker = min(nthread_used, nbatch)
        work = _work_data(m, nworker)
        bind_call(_rollout_one, (m._handle, work[0]))  # the units each trajectory's step reaches
        queue = np.array([nworker], dtype=np.int64)   # the first trajectory no worker has taken
        _rollout_kernel(_model_handles(m, nworker), work, queue,
                        state0, control, state, sensordata, bad_step, thread)
    for i in np.flatnonzero(bad_step >= 0):
        _finish_bad_trajectory(m, state0, control, state, sensordata, i, int(bad_step[i]))
    where = _state_slices(m)
    return Rollout(state, state[:, :, 0], *(state[:, :, where[f]] for f in ("qpos", "qvel", "act")), thread,
                   sensordata)


def _finish_bad_trajectory(m, state0, control, state, sensordata, i, t):
    """Redo step t of trajectory i with the single-state step (warns, resets), then hold its state."""
    d = Data(m)
    before = state0[i if state0.shape[0] > 1 else 0] if t == 0 else state[i, t - 1]
    where = _state_slices(m)
    d.time = before[0]
    for name in ("qpos", "qvel", "act", "history", "plastic"):
        getattr(d, name)[:] = before[where[name]]
    d.ctrl[:] = control[i if control.shape[0] > 1 else 0, t if control.shape[1] > 1 else 0]
    integrator.step(m, d)
    after = np.concatenate(([d.time], d.qpos, d.qvel, d.act, d.history, d.plastic))
    state[i, t:] = after
    sensordata[i, t:] = d.sensordata
