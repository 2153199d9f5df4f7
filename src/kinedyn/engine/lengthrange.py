"""``actuator_lengthrange`` by simulation, as MuJoCo's compiler computes it.

Mirrors ``mjCModel::LengthRange`` (user_model.cc), which runs ``mj_setLengthRange`` and its
helper ``evalAct`` (engine_setconst.c) once per actuator after ``mj_setConst``:

* Which actuators (``<compiler><lengthrange mode=...>``): none; muscle (gain or bias of muscle
  type, the default); muscleuser (muscle or user type); all.
* ``useexisting`` (default true): a range given in the model (lengthrange[0] < lengthrange[1])
  is kept.
* ``uselimit`` (default false): an actuator on a limited joint (joint or jointinparent
  transmission) or a limited tendon takes that range as it is (not scaled by the gear).
* Otherwise the model is simulated twice from qpos0 (``mj_resetData``) with a force along the
  actuator that accelerates its length down (side 0), then up (side 1), until the joint and
  tendon limits stop it. Every step (``evalAct``): qvel is scaled by
  ``exp(-timestep / max(0.01, timeconst))``; the position and velocity stages run
  (``mj_step1``); the applied force is ``qfrc_applied = moment (2 side - 1) accel / |M^-1 moment|``,
  its norm capped at ``maxforce`` when that is positive; then actuation, acceleration, the
  constraint solver and the integrator (``mj_step2``: Euler, or implicitfast; RK4 steps with
  Euler there). Over the steps that end after ``inttotal - interval`` the actuator length
  (from the position stage, before the integration) gives the extreme ``lmin[side]``,
  ``lmax[side]``; the range is ``(lmin[0], lmax[1])``.
* The simulation runs on the model with the options replaced as ``mjCModel::LengthRange``
  does: ``timestep`` from the lengthrange options (when positive), and the disable flags
  *set* to frictionloss, contact, spring, damper, gravity and actuation (so the model's own
  flags, constraint or limit included, are ignored). The model's integrator and solver
  options are kept. The options are restored afterwards.
* Failures, as MuJoCo's compiler errors: a range that is not increasing ("invalid
  lengthrange"), and a side whose lengths over the last ``interval`` vary by more than
  ``tolrange`` times the range ("did not converge"). A step that ends at time 0 (a reset
  that was not followed by an advance) is "unstable".

A bad qacc resets the data and the simulation goes on, as ``mj_checkAcc`` does inside
``mj_step2``. Where MuJoCo 4.0 would then loop forever (a bad qpos or qvel, or a second bad
state; see :func:`_unstable`), kinedyn raises its "unstable lengthrange simulation" error.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.actuation import fwd_actuation_entry
from kinedyn.engine.data import Data, reset
from kinedyn.engine.forward import (
    forward_entry,
    fwd_acceleration_entry,
    fwd_position_entry,
    fwd_velocity_entry,
)
from kinedyn.engine.integrator import (
    STATUS_BADQACC,
    STATUS_BADQPOS,
    STATUS_BADQVEL,
    STATUS_OK,
    _euler,
    _implicit,
    _implicitfast,
)
from kinedyn.engine.smooth_inertia import solve_ld
from kinedyn.engine.solver import fwd_constraint_entry
from kinedyn.engine.types import (
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    MAXVAL,
    MINVAL,
    BiasType,
    DisableBit,
    GainType,
    IntegratorType,
    TrnType,
)
from kinedyn.engine.util_linalg3 import dot_mj
from kinedyn.errors import ModelError

# mjLROpt's defaults (mj_defaultLROpt); the booleans as the MJCF reader gives them
LR_DEFAULTS = dict(mode="muscle", useexisting="true", uselimit="false", accel=20.0, maxforce=0.0,
                   timeconst=1.0, timestep=0.01, inttotal=10.0, interval=2.0, tolrange=0.05)
LR_MODES = ("none", "muscle", "muscleuser", "all")

# the disable flags mjCModel::LengthRange gives the model for the simulation (replacing its own)
LR_DISABLEFLAGS = int(DisableBit.FRICTIONLOSS | DisableBit.CONTACT | DisableBit.SPRING | DisableBit.DAMPER
                      | DisableBit.GRAVITY | DisableBit.ACTUATION)


# ---- the compiled pieces of one simulation step ---------------------------------------------------


@kernel
def _bad(x):
    """Whether any entry is non-finite or beyond MAXVAL (mju_isBad)."""
    for k in range(x.shape[0]):
        if not (abs(x[k]) <= MAXVAL):
            return True
    return False


@handle_entry(returns="int64", args="float64")
def _begin_step(m, d, decay):
    """evalAct's velocity decay, then mj_step1's state checks: a STATUS_* code."""
    qvel = d.qvel
    for v in range(m.nv):
        qvel[v] = qvel[v] * decay
    if _bad(d.qpos):
        return STATUS_BADQPOS
    if _bad(qvel):
        return STATUS_BADQVEL
    return STATUS_OK


@handle_entry(args="int64, float64, float64, float64[::1]")
def _push(m, d, index, scale, maxforce, x):
    """qfrc_applied = moment * scale / |M^-1 moment|, its norm capped at maxforce when positive (evalAct).

    ``moment`` is actuator ``index``'s row of actuator_moment and ``scale`` is (2 side - 1) accel;
    ``x`` is an nv scratch vector. Needs the position stage (moment and the factor of M).
    """
    nv = m.nv
    moment = d.actuator_moment
    for v in range(nv):
        x[v] = moment[index, v]
    solve_ld(x, d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)
    norm = math.sqrt(dot_mj(x, x, nv))
    applied = d.qfrc_applied
    factor = scale / max(MINVAL, norm)
    for v in range(nv):
        applied[v] = moment[index, v] * factor
    if maxforce > 0.0:
        norm = math.sqrt(dot_mj(applied, applied, nv))
        if norm > maxforce:
            factor = maxforce / max(MINVAL, norm)
            for v in range(nv):
                applied[v] = applied[v] * factor


@handle_entry(returns="int64")
def _check_acc(m, d):
    """mj_step2's check after the constraint solver: STATUS_BADQACC or STATUS_OK."""
    if _bad(d.qacc):
        return STATUS_BADQACC
    return STATUS_OK


# Each is its own compiled entry, called in turn from Python (about 10 us a step on a four-muscle
# leg, Python's share a third): one compiled loop would link a second copy of the whole pipeline,
# tens of seconds more of a cold start; this way a cold start compiles only the small entries
# above, the position and velocity stage entries and the one integrator used (about 8 s).
_BEGIN = FastEntry(_begin_step)
_POSITION = FastEntry(fwd_position_entry)
_VELOCITY = FastEntry(fwd_velocity_entry)
_PUSH = FastEntry(_push)
_ACTUATION = FastEntry(fwd_actuation_entry)
_ACCELERATION = FastEntry(fwd_acceleration_entry)
_CONSTRAINT = FastEntry(fwd_constraint_entry)
_CHECK_ACC = FastEntry(_check_acc)
# mj_step2 integrates with Euler, implicit or implicitfast; a model with RK4 takes Euler steps here
_EULER = FastEntry(_euler)
_IMPLICITFAST = FastEntry(_implicitfast)
_IMPLICIT = FastEntry(_implicit)
_FORWARD = FastEntry(forward_entry)


# ---- which actuators, and the simulation -------------------------------------------------------


def lengthrange_options(lropt: dict) -> dict:
    """The ``<compiler><lengthrange>`` attributes over mjLROpt's defaults; an unknown mode raises."""
    opt = dict(LR_DEFAULTS, **lropt)
    if opt["mode"] not in LR_MODES:
        raise ModelError(f"invalid lengthrange mode {opt['mode']!r}; expected one of {', '.join(LR_MODES)}",
                         element="lengthrange", attribute="mode")
    return opt


def _selected(model, i: int, mode: str) -> bool:
    """Whether ``mode`` asks for actuator i's lengthrange (mj_setLengthRange's first test)."""
    gain, bias = model.actuator_gaintype[i], model.actuator_biastype[i]
    muscle = gain == GainType.MUSCLE or bias == BiasType.MUSCLE
    user = gain == GainType.USER or bias == BiasType.USER
    return mode == "all" or (mode == "muscle" and muscle) or (mode == "muscleuser" and (muscle or user))


def set_length_range(model, lropt: dict, nodes: list) -> None:
    """Fill ``actuator_lengthrange`` as MuJoCo's compiler does (see the module docstring).

    ``lropt``: the ``<compiler><lengthrange>`` attributes given; ``nodes``: the actuators' MJCF
    elements (for the errors' element and line), or fewer (then errors name the index).
    Raises ModelError where MuJoCo's compiler fails.
    """
    opt = lengthrange_options(lropt)
    useexisting, uselimit = opt["useexisting"] == "true", opt["uselimit"] == "true"
    todo = []
    for i in range(model.nactuator):
        if not _selected(model, i, opt["mode"]):
            continue
        lr = model.actuator_lengthrange[i]
        if useexisting and lr[0] < lr[1]:
            continue
        if uselimit:
            trn, target = model.actuator_trntype[i], model.actuator_trnid[i, 0]
            if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and model.jnt_limited[target]:
                lr[:] = model.jnt_range[target]
                continue
            if trn == TrnType.TENDON and model.tendon_limited[target]:
                lr[:] = model.tendon_range[target]
                continue
        todo.append(i)
    if not todo:
        return
    if model.opt.integrator == IntegratorType.DISCRETE:
        # MuJoCo's simulation would step with the discrete integrator, whose steps with the
        # simulation's forces kinedyn has not compared (engine.metric)
        node = nodes[todo[0]] if todo[0] < len(nodes) else None
        error = ('the length-range simulation under <option integrator="discrete"> is not reproduced '
                 "by kinedyn: give the actuator a lengthrange, or compute it under another integrator")
        if node is not None:
            raise node.error(error, "lengthrange")
        raise ModelError(f"{error} (actuator {todo[0]})")

    saved = model.opt.disableflags, model.opt.timestep
    model.opt.disableflags = LR_DISABLEFLAGS
    if opt["timestep"] > 0:
        model.opt.timestep = opt["timestep"]
    try:
        d = Data(model)
        for i in todo:
            error = _simulate(model, d, i, opt)
            if error:
                node = nodes[i] if i < len(nodes) else None
                if node is not None:
                    raise node.error(error, "lengthrange")
                raise ModelError(f"{error} (actuator {i})")
    finally:
        model.opt.disableflags, model.opt.timestep = saved


def _simulate(model, d, i: int, opt: dict) -> str | None:
    """Both sides of actuator i's simulation (mj_setLengthRange); writes its lengthrange.

    Returns None, or MuJoCo's reason for failing.
    """
    mh, dh = model._ptr, d._ptr
    integrate = {INT_IMPLICITFAST: _IMPLICITFAST, INT_IMPLICIT: _IMPLICIT}.get(model.opt.integrator, _EULER)
    time = d._time
    length = d.actuator_length
    x = np.zeros(model.nv)
    decay = math.exp(-model.opt.timestep / max(0.01, opt["timeconst"]))
    inttotal, start = opt["inttotal"], opt["inttotal"] - opt["interval"]
    accel, maxforce = opt["accel"], opt["maxforce"]
    lmin, lmax = [0.0, 0.0], [0.0, 0.0]
    for side in (0, 1):
        reset(model, d)
        scale = (2 * side - 1) * accel
        updated = False
        lo = hi = 0.0
        reset_once = False
        while time[0] < inttotal:
            # mj_step1, the force, mj_step2
            if _BEGIN.call(mh, dh, decay) != STATUS_OK:
                return _unstable(d, "qpos or qvel")
            _POSITION.call(mh, dh)
            _VELOCITY.call(mh, dh)
            _PUSH.call(mh, dh, i, scale, maxforce, x)
            _ACTUATION.call(mh, dh)
            _ACCELERATION.call(mh, dh)
            _CONSTRAINT.call(mh, dh)
            if _CHECK_ACC.call(mh, dh) != STATUS_OK:
                if reset_once:
                    return _unstable(d, "qacc")
                # mj_checkAcc: reset, forward (without the push), and the step goes on
                reset_once = True
                reset(model, d)
                _FORWARD.call(mh, dh)
            integrate.call(mh, dh)
            if time[0] == 0.0:
                return "unstable lengthrange simulation"
            if time[0] > start:
                value = length[i]
                if not updated or value < lo:
                    lo = value
                if not updated or value > hi:
                    hi = value
                updated = True
        lmin[side], lmax[side] = lo, hi
        model.actuator_lengthrange[i, side] = lo if side == 0 else hi

    lr = model.actuator_lengthrange[i]
    span = lr[1] - lr[0]
    if span <= 0:
        return f"invalid lengthrange ({lr[0]:g}, {lr[1]:g})"
    for side in (0, 1):
        if lmax[side] - lmin[side] > opt["tolrange"] * span:
            return (f"lengthrange computation did not converge: over the last {opt['interval']:g} s, "
                    f"side {side} spans ({lmin[side]:g}, {lmax[side]:g}), more than "
                    f"tolrange={opt['tolrange']:g} of the range ({lr[0]:g}, {lr[1]:g})")
    return None


def _unstable(d, field: str) -> str:
    """The error for a bad state in the simulation, where MuJoCo 4.0 never finishes.

    MuJoCo's checks reset the data (autoreset is never disabled there) and the simulation
    goes on, its clock restarted. A bad qpos or qvel resets to the initial state, from which
    the same steps lead to the same reset again, forever. A bad qacc resets and takes one
    unforced step, after which the simulation may finish; if it meets a bad state again, it
    is back where it was after the first reset, and loops. kinedyn stops at the point where
    MuJoCo is known to loop, with MuJoCo's error for an unstable simulation.
    """
    return f"unstable lengthrange simulation: non-finite or huge {field} at time {d.time:g}"
