"""Inverse actuation: the controls that make the model's actuators produce a requested motion.

Given the state (qpos, qvel, act, applied forces) and a desired acceleration ``qacc``,
the generalized force the actuators must supply is

    qfrc_target = M qacc + qfrc_bias - qfrc_passive - qfrc_constraint - qfrc_applied - J^T xfrc_applied
                = qfrc_inverse (mj_inverse) - qfrc_applied - J^T xfrc_applied,

qfrc_constraint being the constraint forces (limits, friction loss, equalities) at qacc,

or the caller gives ``qfrc_target`` directly (``qfrc=``). Each actuator's force is
affine in its own control u wherever the control acts at once (``mj_fwdActuation``):

* dynamics none: force = gain(length, velocity) u + bias(length, velocity);
* integrator, filter or filterexact dynamics with ``actearly``: the force uses the next
  activation act + h act_dot(u) (exact exponential for filterexact), affine in u;
* any other stateful actuator (no ``actearly``, or a muscle, whose activation rate is
  not affine in u): the force uses the current ``act`` only, so u has no effect this
  instant. Its column of the control-to-force map is zero (``effective`` is False) and
  its control is set to the value that holds the activation where it is. (Along a
  trajectory, ``solve_actuation`` can instead take its activation as the unknown; the
  trajectory planner then picks the previous control that reaches it.)

With F(u) = f0 + diag(gain_u) (u - u0) and ``qfrc_actuator = moment^T F`` we solve the
box-bounded least-squares problem

    minimise || moment^T F(u) - qfrc_target ||   subject to  lo <= u <= hi

where [lo, hi] is ctrlrange intersected with the controls that keep the force inside
forcerange (and inside a single tendon actuator's tendon actuatorfrcrange), keep an
``actearly`` activation inside actrange, and keep a wrapped (ball or rotational-site)
setpoint inside the half period around the current length. Beyond those bounds the
force would be clamped and not change any more, so restricting u to them loses nothing.
A joint's ``actuatorfrcrange`` clamps the *sum* of the actuator forces on its dof; we
clip the target on that dof to the range before solving (no control can do better on
that dof) and then evaluate the clamped result honestly.

Redundant actuators: among the solutions, the one with the smallest change from u0 (0
for stateless actuators) — the minimum-norm least-squares solution when no bound is
active; with active bounds, the free controls are re-solved in minimum norm.

The result's ``qfrc_actuator`` and ``residual`` come from running the real actuation
kernel (the one ``forward`` runs) with the returned controls, so they are exactly what
``forward`` gives.

Naming caveat: ``kinedyn`` exports the function :func:`inverse_actuation` under this
module's name, so ``import kinedyn.tools.inverse_actuation as ia`` gives the function; import
other names with ``from kinedyn.tools.inverse_actuation import ...`` (docs/inverse_actuation.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kinedyn.engine.actuation import fwd_actuation_kernel, next_activation, wrap_period
from kinedyn.engine.checks import check_model_data, float_array
from kinedyn.engine.forward import fwd_position, fwd_velocity
from kinedyn.engine.inverse import inverse
from kinedyn.engine.support import xfrc_accumulate
from kinedyn.engine.types import (
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_MUSCLE,
    DYN_NONE,
    GAIN_PID,
    JNT_BALL,
    JNT_FREE,
    MAXVAL,
    TRN_TENDON,
)
from kinedyn.engine.util_dcmotor import needed as dcmotor_unit_needed

# mj_fwdActuation zeroes every control when one exceeds this magnitude
CTRL_MAX = MAXVAL
# relative tolerance of ``exact`` (kinedyn's bar against MuJoCo: 1e-9 relative), with an absolute floor
EXACT_RTOL, EXACT_ATOL = 1e-9, 1e-12


@dataclass
class InverseActuation:
    """Result of :func:`inverse_actuation`.

    Attributes:
      ctrl: (nu,) controls; put them in ``d.ctrl`` and ``forward`` gives ``qfrc_actuator``.
      qfrc_actuator: (nv,) generalized actuator force those controls produce (clamps included).
      qfrc_target: (nv,) the generalized actuator force that was asked for.
      residual: Euclidean norm of ``qfrc_target - qfrc_actuator`` (the unmet generalized force).
      exact: whether ``residual <= 1e-9 * scale + 1e-12``, scale the largest force involved
        (target, actuator forces through their moments, and for a qacc request qfrc_inverse,
        qfrc_bias, the applied and the constraint forces).
      saturated: (nu,) bool, the control sits on a bound of its feasible range
        (ctrlrange, forcerange, actrange, tendon range or setpoint wrap).
      effective: (nu,) bool, the control changes this instant's force (False: stateful
        actuator without ``actearly``, muscle, zero gain, or actuation disabled).
      gain: (nu,) d actuator_force / d ctrl at this state (0 where not effective).
      lower, upper: (nu,) the feasible control interval used for each actuator.
      actuator_force: (nu,) the actuator forces with ``ctrl``.
      act: (na,) the activations those forces use (d.act; the trajectory planner may
        choose the delayed actuators' activations instead, see kinedyn.tools.trajectory).
    """

    ctrl: np.ndarray
    qfrc_actuator: np.ndarray
    qfrc_target: np.ndarray
    residual: float
    exact: bool
    saturated: np.ndarray
    effective: np.ndarray
    gain: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    actuator_force: np.ndarray
    act: np.ndarray


def _vector(value, n: int, name: str) -> np.ndarray:
    arr = float_array(value, name)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}[{bad}] is {arr[bad]}; {name} must be finite")
    return arr


def evaluate_actuation(m, d, ctrl: np.ndarray, limits: bool, act: np.ndarray | None = None):
    """(actuator_force, act_dot, qfrc_actuator) from the actuation kernel for controls ``ctrl``
    (and activations ``act``, default d.act).

    ``limits=True`` runs exactly what ``forward`` runs. ``limits=False`` switches off every
    clamp (ctrl, force, act, tendon and joint ranges) and the setpoint wrap, which leaves
    the force affine in each effective control; qfrc_actuator is then not computed.
    """
    nu, nv = m.nu, m.nv
    force, act_dot, qfrc = np.zeros(m.nout), np.zeros(m.na), np.zeros(nv)
    off_u = np.zeros(nu, dtype=m.actuator_ctrllimited.dtype)
    if limits:
        ctrllimited, forcelimited, actlimited = m.actuator_ctrllimited, m.actuator_forcelimited, \
            m.actuator_actlimited
        jnt_lim, ten_lim, moment = m.jnt_actfrclimited, m.tendon_actfrclimited, d.actuator_moment
    else:
        # no ctrl, force or act clamps, no joint or tendon actfrcrange (so no tendon-force
        # scaling), no qfrc_actuator (zero moments), and no setpoint wrap (below)
        ctrllimited = forcelimited = actlimited = off_u
        jnt_lim = np.zeros_like(m.jnt_actfrclimited)
        ten_lim = np.zeros_like(m.tendon_actfrclimited)
        moment = np.zeros_like(d.actuator_moment)
    fwd_actuation_kernel(
        m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype, m.actuator_actadr, m.actuator_actnum,
        ctrllimited, m.actuator_ctrlrange, forcelimited, m.actuator_forcerange,
        actlimited, m.actuator_actrange, m.actuator_actearly, m.actuator_dynprm,
        m.actuator_gainprm, m.actuator_biasprm, jnt_lim, m.jnt_actfrcrange, m.jnt_dofadr,
        int(m.opt.disableflags), float(m.opt.timestep),
        m.actuator_trntype, m.actuator_trnid, ten_lim, m.tendon_actfrcrange,
        m.actuator_lengthrange, m.actuator_acc0, m.actuator_gear, m.jnt_type,
        m.jnt_actgravcomp if limits else np.zeros_like(m.jnt_actgravcomp), m.actuator_ctrladr,
        m.actuator_ctrlnum, np.ascontiguousarray(ctrl, dtype=np.float64), d.act if act is None else act,
        d.actuator_length,
        d.actuator_velocity, moment, d.qfrc_gravcomp,
        act_dot, force, qfrc,
        np.zeros(nu), np.zeros(m.ntendon),
        # user-type callback values of the last forward (all zero without callbacks: MuJoCo's defaults)
        d.scratch_user,
        bool(limits),  # wrap_setpoints: as forward with limits, else the setpoint as given
    )
    return force, act_dot, qfrc


def actuator_gravcomp(m, d) -> np.ndarray:
    """The part of qfrc_gravcomp that mj_fwdActuation adds to qfrc_actuator: the dofs of joints
    with actuatorgravcomp (nothing without actuators or with actuation disabled)."""
    out = np.zeros(m.nv)
    if m.nactuator == 0 or m.opt.disableflags & DSBL_ACTUATION:
        return out
    for j in np.flatnonzero(m.jnt_actgravcomp):
        adr = m.jnt_dofadr[j]
        n = {JNT_FREE: 6, JNT_BALL: 3}.get(int(m.jnt_type[j]), 1)
        out[adr:adr + n] = d.qfrc_gravcomp[adr:adr + n]
    return out


def applied_generalized_force(m, d) -> np.ndarray:
    """qfrc_applied + J^T xfrc_applied at the current position stage (mj_xfrcAccumulate)."""
    out = d.qfrc_applied.copy()
    xfrc_accumulate(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                    d.xfrc_applied, d.xipos, d.subtree_com, d.cdof, out)
    return out


def hold_controls(m, act: np.ndarray) -> np.ndarray:
    """(nu,) the controls that keep each activation constant (act_dot = 0): act for filters and
    muscles, 0 for integrators and stateless actuators."""
    dyn = m.actuator_dyntype
    holds = (dyn == DYN_FILTER) | (dyn == DYN_FILTEREXACT) | (dyn == DYN_MUSCLE)
    last = np.maximum(m.actuator_actadr + m.actuator_actnum - 1, 0)
    return np.where(holds, act[last] if act.size else 0.0, 0.0)


def last_act(m, i: int) -> int:
    """Index in act of actuator i's force input (its last activation)."""
    return int(m.actuator_actadr[i] + m.actuator_actnum[i] - 1)


def _through(a, b, lo_v, hi_v):
    """The x with lo_v <= a x + b <= hi_v (a != 0), as (lo, hi)."""
    x0, x1 = (lo_v - b) / a, (hi_v - b) / a
    return (x0, x1) if a > 0 else (x1, x0)


def _bounds(m, d, i, slope, offset, lo, hi, in_slope, in_offset, input_limited):
    """Feasible interval of actuator i's variable x within [lo, hi], for force = slope x + offset
    and gain input = in_slope x + in_offset (``input_limited``: the input is clamped to actrange)."""
    through = _through
    own_lo, own_hi = lo, hi
    if slope == 0.0:  # the variable does not act now: only its own range matters
        return lo, hi
    if input_limited and in_slope != 0.0:
        a, b = through(in_slope, in_offset, *m.actuator_actrange[i])
        lo, hi = max(lo, a), min(hi, b)
    period = wrap_period(m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype, m.actuator_gainprm,
                         m.actuator_biasprm, m.actuator_trntype, m.actuator_trnid, m.actuator_gear,
                         m.jnt_type, i)
    if period > 0.0 and in_slope != 0.0:
        # wrapSetpoint leaves the input alone within half a period of the length
        half = 0.5 * period * (1.0 - 1e-12)
        length = d.actuator_length[i]
        a, b = through(in_slope, in_offset, length - half, length + half)
        lo, hi = max(lo, a), min(hi, b)
    if m.actuator_forcelimited[i]:
        a, b = through(slope, offset, *m.actuator_forcerange[i])
        lo, hi = max(lo, a), min(hi, b)
    if m.actuator_trntype[i] == TRN_TENDON:
        t = m.actuator_trnid[i, 0]
        alone = np.count_nonzero((m.actuator_trntype == TRN_TENDON) & (m.actuator_trnid[:, 0] == t)) == 1
        if m.tendon_actfrclimited[t] and alone:
            # one actuator on the tendon: the range scaling is a clamp of its force
            a, b = through(slope, offset, *m.tendon_actfrcrange[t])
            lo, hi = max(lo, a), min(hi, b)
    if lo > hi:  # incompatible ranges: the variable's own range wins
        lo = hi = min(max(lo, own_lo), own_hi)
    return lo, hi


def _min_norm_lstsq(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    if a.shape[1] == 0:
        return np.zeros(0)
    return np.linalg.lstsq(a, r, rcond=None)[0]


def _bounded_lstsq(a: np.ndarray, r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min ||a x - r|| with lo <= x <= hi, the minimum-norm one when the free set is redundant."""
    x = _min_norm_lstsq(a, r)
    slack = 1e-12 * np.maximum(1.0, np.abs(x))
    if np.all(x >= lo - slack) and np.all(x <= hi + slack):
        return np.clip(x, lo, hi)
    from scipy.optimize import lsq_linear  # lazy: scipy only for bounded problems

    x = lsq_linear(a, r, bounds=(lo, hi), method="bvls", tol=1e-14).x
    # polish: the controls on their bounds stay; re-solve the free ones exactly, minimum norm
    width = np.maximum(hi - lo, 0.0)
    at_lo = x <= lo + 1e-10 * np.maximum(1.0, width)
    at_hi = x >= hi - 1e-10 * np.maximum(1.0, width)
    fixed = at_lo | at_hi
    x = np.where(at_lo, lo, np.where(at_hi, hi, x))
    free = ~fixed
    if free.any():
        xf = _min_norm_lstsq(a[:, free], r - a[:, fixed] @ x[fixed])
        if np.all(xf >= lo[free]) and np.all(xf <= hi[free]):
            x[free] = xf
    return np.clip(x, lo, hi)


def inverse_actuation(m, d, qacc=None, qfrc=None) -> InverseActuation:
    """Controls that make the actuators produce ``qacc`` (or the generalized force ``qfrc``).

    Reads d.qpos, d.qvel, d.act, d.qfrc_applied, d.xfrc_applied and, when neither ``qacc``
    nor ``qfrc`` is given, d.qacc. Like ``inverse`` it recomputes the position and
    velocity stages in ``d`` (and, for a ``qacc`` request, d.qfrc_inverse); it does not
    change d.ctrl or d.qacc. ``qfrc`` is the generalized *actuator* force wanted
    (what forward reports as qfrc_actuator). See the module docstring for the method.
    """
    check_model_data(m, d, "inverse_actuation")
    if qacc is not None and qfrc is not None:
        raise ValueError("give qacc or qfrc, not both")
    nv = m.nv
    if qfrc is not None:
        target = _vector(qfrc, nv, "qfrc")
        scale_terms = 0.0
        fwd_position(m, d)
        fwd_velocity(m, d)
    else:
        wanted = _vector(d.qacc if qacc is None else qacc, nv, "qacc")
        saved = d.qacc.copy()
        d.qacc[:] = wanted
        try:
            inverse(m, d)
        finally:
            d.qacc[:] = saved
        applied = applied_generalized_force(m, d)
        target = d.qfrc_inverse - applied
        # the size of the terms the target is made of, for judging round-off
        scale_terms = max(np.abs(d.qfrc_inverse).max(initial=0.0), np.abs(d.qfrc_bias).max(initial=0.0),
                          np.abs(applied).max(initial=0.0), np.abs(d.qfrc_constraint).max(initial=0.0))

    return solve_actuation(m, d, target, scale_terms)


def delayed_actuators(m) -> np.ndarray:
    """(nu,) bool: actuators whose control reaches the force only through the next activation."""
    return (m.actuator_dyntype != DYN_NONE) & (m.actuator_actearly == 0)


def solve_actuation(m, d, target, scale_terms, act_range=None) -> InverseActuation:
    """Bounded least squares for the actuator variables (see the module docstring).

    The variable of an instantaneous actuator is its control. With ``act_range`` = (lo, hi),
    (nu,) arrays, the activation of each delayed actuator (``delayed_actuators``) becomes a
    variable too, within [lo_i, hi_i]: the trajectory planner then chooses the previous
    step's control that reaches it. Without, delayed actuators keep d.act.
    """
    nu = m.nu
    if np.any(m.actuator_gaintype == GAIN_PID) or dcmotor_unit_needed(m):
        # the pid part of the force, and a dcmotor's under its controller or with its thermal model or
        # LuGre friction, are added by the forward stage only (engine.util_pid, engine.util_dcmotor)
        raise ValueError("inverse actuation of models with pid actuators, or dcmotors driven by their "
                         "controller or with the thermal model or LuGre friction, is not supported")
    if np.any(m.actuator_ctrlnum != 1):
        # one control per actuator: the solve below pairs each control with its actuator's force
        raise ValueError("inverse actuation of models with actuators of several controls or none "
                         "(actuator_ctrlnum != 1) is not supported")
    disabled = bool(m.opt.disableflags & DSBL_ACTUATION)
    delayed = delayed_actuators(m)
    plan = delayed & (act_range is not None)
    # controls: hold values; activations: as in d, the planned ones moved below
    act = d.act.copy()
    u0 = hold_controls(m, act)
    f0, act_dot0, _ = evaluate_actuation(m, d, u0, limits=False, act=act)
    f1, act_dot1, _ = evaluate_actuation(m, d, u0 + 1.0, limits=False, act=act)
    ctrl_slope = f1 - f0
    act_slope = np.zeros(nu)
    if plan.any():
        bumped = act.copy()
        for i in np.flatnonzero(plan):
            bumped[last_act(m, i)] += 1.0
        act_slope = evaluate_actuation(m, d, u0, limits=False, act=bumped)[0] - f0
    dyn = m.actuator_dyntype
    instant = (dyn == DYN_NONE) | ((m.actuator_actearly != 0) & (dyn != DYN_MUSCLE))
    # each actuator's variable x: force = f0 + slope (x - x_ref) before clamps
    slope = np.where(instant, ctrl_slope, np.where(plan, act_slope, 0.0))
    effective = (slope != 0.0) & (not disabled)
    slope = np.where(effective, slope, 0.0)
    last = np.maximum(m.actuator_actadr + m.actuator_actnum - 1, 0)
    x_ref = np.where(plan, act[last] if act.size else 0.0, u0)
    clampctrl = not m.opt.disableflags & DSBL_CLAMPCTRL
    lower, upper = np.empty(nu), np.empty(nu)
    for i in range(nu):
        if plan[i]:
            own = act_range[0][i], act_range[1][i]
            in_slope, in_offset, input_limited = 1.0, 0.0, False
        else:
            own = (-CTRL_MAX, CTRL_MAX)
            if clampctrl and m.actuator_ctrllimited[i]:
                own = max(own[0], m.actuator_ctrlrange[i, 0]), min(own[1], m.actuator_ctrlrange[i, 1])
            # the gain's input: u itself, or the next activation (actearly), affine in u
            in_slope, in_offset, input_limited = 1.0, 0.0, False
            if m.actuator_dyntype[i] != DYN_NONE and m.actuator_actnum[i] > 0:  # a dcmotor may have none
                last = last_act(m, i)
                nxt = [next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0], False,
                                       m.actuator_actrange[i], act[last], ad, m.opt.timestep)
                       for ad in (act_dot0[last], act_dot1[last])]
                in_slope, in_offset = nxt[1] - nxt[0], nxt[0] - (nxt[1] - nxt[0]) * u0[i]
                input_limited = bool(m.actuator_actlimited[i])
        offset = f0[i] - slope[i] * x_ref[i]
        lower[i], upper[i] = _bounds(m, d, i, slope[i], offset, *own, in_slope, in_offset, input_limited)
    # the start point must respect the ranges too; f0 stays the force at the unclipped x_ref
    x0 = np.clip(x_ref, lower, upper)

    x = x0.copy()
    if effective.any():
        # forces of the other actuators with their (fixed) inputs, through every clamp
        base_force, _, _ = evaluate_actuation(m, d, u0, limits=True, act=act)
        base_force = np.where(effective, 0.0, base_force)
        moment_t = d.actuator_moment.T
        cols = moment_t[:, effective] * slope[effective]
        wanted = target.copy()
        # a joint's actuatorfrcrange caps the summed force on its dof: aim at the cap
        for j in np.flatnonzero(m.jnt_actfrclimited):
            v = m.jnt_dofadr[j]
            wanted[v] = min(max(wanted[v], m.jnt_actfrcrange[j, 0]), m.jnt_actfrcrange[j, 1])
        rhs = wanted - moment_t @ base_force - moment_t[:, effective] @ (f0 + slope * (x0 - x_ref))[effective]
        # the gravity compensation the actuators add on joints with actuatorgravcomp
        rhs -= actuator_gravcomp(m, d)
        x[effective] = x0[effective] + _bounded_lstsq(cols, rhs, lower[effective] - x0[effective],
                                                      upper[effective] - x0[effective])
        x = np.clip(x, lower, upper)

    ctrl = np.where(plan, np.clip(u0, *ctrl_limits(m, clampctrl)), x)
    for i in np.flatnonzero(plan):
        act[last_act(m, i)] = x[i]
    force, _, achieved = evaluate_actuation(m, d, ctrl, limits=True, act=act)
    residual = float(np.linalg.norm(target - achieved))
    scale = max(scale_terms, np.abs(target).max(initial=0.0),
                (np.abs(d.actuator_moment.T) @ np.abs(force)).max(initial=0.0))
    # saturated: on a bound that binds, i.e. moving off it would shrink the residual
    width = upper - lower
    pull = slope * (d.actuator_moment @ (achieved - target))  # gradient of the squared residual / 2
    tiny = 1e-9 * max(scale, EXACT_ATOL)
    saturated = effective & (((x <= lower + 1e-12 * np.maximum(1.0, width)) & (pull > tiny))
                             | ((x >= upper - 1e-12 * np.maximum(1.0, width)) & (pull < -tiny)))
    return InverseActuation(
        ctrl=ctrl, qfrc_actuator=achieved, qfrc_target=target, residual=residual,
        exact=residual <= EXACT_RTOL * scale + EXACT_ATOL, saturated=saturated, effective=effective,
        gain=np.where(plan, 0.0, slope), lower=lower, upper=upper, actuator_force=force, act=act)


def ctrl_limits(m, clampctrl: bool):
    """(lower, upper) (nu,) control ranges as forward applies them."""
    limited = m.actuator_ctrllimited.astype(bool) & clampctrl
    return (np.where(limited, m.actuator_ctrlrange[:, 0], -CTRL_MAX),
            np.where(limited, m.actuator_ctrlrange[:, 1], CTRL_MAX))
