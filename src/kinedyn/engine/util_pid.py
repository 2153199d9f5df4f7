"""MuJoCo 4.0's ``<pid>`` controller (gaintype pid, dyntype pid): its force and its states.

Parameters follow MuJoCo's layout: the affine bias ``biasprm = [0, -kp, -kv]`` gives the
proportional and damping terms on the actuator length l and velocity v, ``gainprm[0] = ki``,
``dynprm = [imax, slewmax]``; ``actuator_ctrlspec`` says which inputs the control block holds
(bits 1 pos, 2 vel, 4 ff; an absent setpoint is zero). The force is

    kp (p - l) + kv (u_vel - v) + ki I + u_ff,

with p the position setpoint. The controller states, in ``act`` in this order, exist when
enabled (XMLreference, actuator/pid):

* slew (slewmax > 0): the effective setpoint, moving towards the commanded one at most
  slewmax per second; p is the value it reaches this step, clamp(u_pos, s - slewmax h,
  s + slewmax h), and act_dot = (p - s) / h.
* integral (ki > 0): I, with act_dot = p - l, held (act_dot = 0) while |I| >= imax and the error
  pushes it further out (anti-windup; imax = 0: unclamped).

Both advance with Euler like every other activation (mj_nextActivation). The actuation kernel
adds the bias -kp l - kv v; :func:`pid_actuation` adds the rest and the states' act_dot. It is
a unit of its own, compiled only for models with a pid actuator. The actuator's controls are the
block ``ctrl[actuator_ctrladr[i]:][:actuator_ctrlnum[i]]``, one per input in the order pos, vel, ff
(MuJoCo 4.0's default input is "pos vel": two controls).
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.types import DSBL_ACTUATION, GAIN_PID, OPT_DISABLEFLAGS
from kinedyn.engine.util_setpoint import rotational_period, wrap_setpoint

INPUT_POS, INPUT_VEL, INPUT_FF = 1, 2, 4


@kernel
def _setpoint(m, act, u, i):
    """The position setpoint p of pid actuator i with pos control u: the slew-limited value with
    slewmax > 0."""
    if _slewed(m, i):
        s = act[m.actuator_actadr[i]]
        step = m.actuator_dynprm[i, 1] * m.opt_timestep[0]
        return min(max(u, s - step), s + step)
    return u


@kernel
def _slewed(m, i):
    """Whether pid actuator i has the slew state (slewmax > 0, its first state)."""
    return m.actuator_dynprm[i, 1] > 0.0 and m.actuator_actadr[i] >= 0


@handle_entry(needed=lambda m: bool(np.any(m.actuator_gaintype == GAIN_PID)))
def pid_actuation(m, d):
    """The pid part of mj_fwdActuation: each pid actuator's force before its bias, added to
    actuator_force, and act_dot of its states, from the clamped controls in scratch_nu."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return
    ctrl = d.scratch_nu
    act = d.act
    for i in range(m.nactuator):
        if m.actuator_gaintype[i] != GAIN_PID:
            continue
        # the actuator's controls, one per input in the order pos, vel, ff (its ctrlspec bits)
        spec = m.actuator_ctrlspec[i]
        c = m.actuator_ctrladr[i]
        length = d.actuator_length[i]
        # on a rotational transmission (MuJoCo 4.0's wrapSetpoint): the pos control moves to its
        # representative nearest the slew state (or the length without one), the setpoint the
        # force and the integral see to the one nearest the length
        period = rotational_period(m.actuator_trntype, m.actuator_trnid, m.actuator_gear, m.jnt_type, i)
        p = target = 0.0
        if spec & INPUT_POS:
            upos = ctrl[c]
            if period > 0.0:
                near = act[m.actuator_actadr[i]] if _slewed(m, i) else length
                upos = wrap_setpoint(upos, near, period)
            p = _setpoint(m, act, upos, i)
            target = wrap_setpoint(p, length, period) if period > 0.0 else p
            c += 1
        force = -m.actuator_biasprm[i, 1] * target
        if spec & INPUT_VEL:
            force -= m.actuator_biasprm[i, 2] * ctrl[c]
            c += 1
        if spec & INPUT_FF:
            force += ctrl[c]
        adr = m.actuator_actadr[i]
        if adr < 0:
            d.actuator_force[i] += force
            continue
        end = adr + m.actuator_actnum[i]
        if m.actuator_dynprm[i, 1] > 0.0:
            d.act_dot[adr] = (p - act[adr]) / m.opt_timestep[0]
            adr += 1
        if adr < end:
            integral = act[adr]
            error = target - length
            imax = m.actuator_dynprm[i, 0]
            windup = imax > 0.0 and ((integral >= imax and error > 0.0)
                                     or (integral <= -imax and error < 0.0))
            d.act_dot[adr] = 0.0 if windup else error
            if m.actuator_actearly[i]:
                # actearly: the integral after this step (mj_nextActivation: Euler, within actrange)
                integral += d.act_dot[adr] * m.opt_timestep[0]
                if m.actuator_actlimited[i]:
                    integral = min(max(integral, m.actuator_actrange[i, 0]), m.actuator_actrange[i, 1])
            force += m.actuator_gainprm[i, 0] * integral
        d.actuator_force[i] += force
