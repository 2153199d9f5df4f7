"""The on-board controller of MuJoCo 4.0's ``<dcmotor>`` (input pos, vel or ff).

The actuation kernel computes a voltage-commanded motor, gainprm = [R, K], from its control u
taken as the terminal voltage. With a controller input the voltage is the controller's instead
(XMLreference, dcmotor/controller; gainprm[4:8] = [kp, ki, kd, Vmax]): it commands the torque

    tau = kp (u_pos - l) + kd (u_vel - v) + u_ff        (absent inputs zero)

and drives V = (R/K) tau + K v, the back-EMF compensated as in a current-controlled driver,
within +-Vmax when Vmax > 0. The motor then gives K (V - K v) / R (= tau until the clamp), or
with inductance the current state follows V (act_dot = (V - R i - K v) / L within the
current_rate; the force is K times the next current). :func:`dcmotor_controller` redoes these
actuators' force and act_dot after the kernel; it is a unit of its own, compiled only for models
with such a motor. Only single-control motors reach it (the compiler refuses several inputs).

The controller's states come first in the motor's act, then the current (with inductance):

* slew (slewmax = dynprm[7] > 0): the input u moves at most slewmax per second; the controller
  reads clamp(u, s - slewmax h, s + slewmax h), act_dot = (that - s) / h (Euler);
* integral (ki = gainprm[5] > 0): I, act_dot = u_pos - l (with the slewed u_pos), held while
  |I| >= Imax (dynprm[8] > 0) and the error pushes it out, and clamped to +-Imax after the step
  (:func:`dcmotor_next_state`); the torque adds ki I.

A voltage-commanded motor comes here for its thermal model (dynprm[2:5] = [Rth, Cth, Tambient],
gainprm[2:4] = [alpha, Tref]; the state T over the ambient, C dT/dt = R(T) i^2 - T / Rth, the
resistance R (1 + alpha (Tambient + T - Tref))) and LuGre friction (dynprm[5:7] = [sigma0,
sigma1], biasprm[3:6] = [Fc, Fs, vs]; the bristle state z, dz/dt = v - sigma0 |v| z / g(v), the
force -(sigma0 z + sigma1 dz/dt)); the states in the order temperature, bristle, current.

The actuator's velocity derivative for the implicit integrators is in engine.derivative.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.history import clamped_ctrl, first_ctrl
from kinedyn.engine.types import DSBL_ACTUATION, GAIN_DCMOTOR, MINVAL, OPT_DISABLEFLAGS

INPUT_POS, INPUT_VEL, INPUT_FF, INPUT_VOLTAGE = 1, 2, 4, 8
# the controller's inputs; a motor without them is commanded by its voltage (input="none": 0 V)
INPUT_CONTROLLER = INPUT_POS | INPUT_VEL | INPUT_FF


def needed(m) -> bool:
    """Whether the model has a dcmotor that :func:`dcmotor_controller` computes (its unit's needed)."""
    motor = m.actuator_gaintype == GAIN_DCMOTOR
    return bool(np.any(motor & ((m.actuator_ctrlspec & INPUT_CONTROLLER != 0) | (m.actuator_dynprm[:, 2] > 0)
                                | (m.actuator_dynprm[:, 5] > 0))))


@kernel
def in_unit(m, i):
    """Whether actuator i is a dcmotor that :func:`dcmotor_controller` computes: driven by its
    controller, or with the thermal model or LuGre friction."""
    return m.actuator_gaintype[i] == GAIN_DCMOTOR and (m.actuator_ctrlspec[i] & INPUT_CONTROLLER != 0
                                                       or m.actuator_dynprm[i, 2] > 0.0
                                                       or m.actuator_dynprm[i, 5] > 0.0)


@kernel
def _lugre_rate(m, i, velocity):
    """sigma0 |v| / g(v) of dcmotor i's LuGre friction, g(v) = Fc + (Fs - Fc) exp(-(v / vs)^2)."""
    fc = m.actuator_biasprm[i, 3]
    fs = m.actuator_biasprm[i, 4]
    vs = m.actuator_biasprm[i, 5]
    g = fc
    if vs > 0.0:
        g += (fs - fc) * math.exp(-(velocity / vs) * (velocity / vs))
    return m.actuator_dynprm[i, 5] * abs(velocity) / max(MINVAL, g)


@kernel
def controller_states(m, i):
    """The number of dcmotor i's controller states (slew, integral), before its own."""
    return (1 if m.actuator_dynprm[i, 7] > 0.0 else 0) + (1 if m.actuator_gainprm[i, 5] > 0.0 else 0)


@kernel
def hot_resistance(m, d, i):
    """Dcmotor i's resistance at its winding temperature: R (1 + alpha (T - Tref)), T the ambient
    dynprm[4] plus the thermal state (the first state: thermal motors have no controller
    states); R without the thermal model."""
    resistance = m.actuator_gainprm[i, 0]
    if m.actuator_dynprm[i, 2] > 0.0:
        temperature = m.actuator_dynprm[i, 4] + d.act[m.actuator_actadr[i] + controller_states(m, i)]
        resistance *= 1.0 + m.actuator_gainprm[i, 2] * (temperature - m.actuator_gainprm[i, 3])
    return resistance


@kernel
def has_controller(m, i):
    """Whether actuator i is a dcmotor driven by its controller (a pos, vel or ff input)."""
    return m.actuator_gaintype[i] == GAIN_DCMOTOR and m.actuator_ctrlspec[i] & INPUT_CONTROLLER != 0


@kernel
def lugre_force_vel(m, i):
    """The velocity derivative of dcmotor i's LuGre force -(sigma0 z + sigma1 dz/dt) that MuJoCo
    4.0's implicit integrators use: -sigma1 (dz/dt = v - sigma0 |v| z / g(v) taken as v; its
    z-dependent part is left out, as measured against MuJoCo)."""
    return -m.actuator_dynprm[i, 6] if m.actuator_dynprm[i, 5] > 0.0 else 0.0


@kernel(inline="always")
def dcmotor_next_state(m, d, i, j, a, a_dot, h):
    """State j of dcmotor i after a step of h (mj_nextActivation): the current integrated exactly
    (tau = L / R), the bristle deflection exactly for the velocity of the step (tau = g / (sigma0
    |v|)), the controller's states and the temperature with Euler, the integral within +-Imax."""
    adr = m.actuator_actadr[i]
    last = adr + m.actuator_actnum[i] - 1
    tau = m.actuator_dynprm[i, 0]
    if j == last and tau > 0.0:
        tau = max(MINVAL, tau)
        return a + a_dot * tau * (1.0 - math.exp(-h / tau))
    bristle = last - (1 if tau > 0.0 else 0)
    if j == bristle and m.actuator_dynprm[i, 5] > 0.0:
        # exact for the velocity at the start of the step (moment qvel: under RK4 too, whose
        # combined act_dot it does not read): z -> v / rate + (z - v / rate) exp(-rate h)
        velocity = 0.0
        for k in range(d.qvel.shape[0]):
            velocity += d.actuator_moment[i, k] * d.qvel[k]
        rate = _lugre_rate(m, i, velocity)
        if rate <= 0.0:
            return a
        steady = velocity / rate
        return steady + (a - steady) * math.exp(-h * rate)
    a = a + a_dot * h
    imax = m.actuator_dynprm[i, 8]
    integral = adr + (1 if m.actuator_dynprm[i, 7] > 0.0 else 0)
    if j == integral and m.actuator_gainprm[i, 5] > 0.0 and imax > 0.0:
        a = min(max(a, -imax), imax)
    return a


@kernel
def controller_voltage(m, ctrl, u, length, velocity, i, integral):
    """The drive voltage of dcmotor i's controller for its (slewed) first control u, the rest of
    its controls in ctrl (clamped here: one per input, in the order pos, vel, ff) and its integral
    state, and whether it is held at +-Vmax."""
    spec = m.actuator_ctrlspec[i]
    resistance = m.actuator_gainprm[i, 0]
    k = m.actuator_gainprm[i, 1]
    kp = m.actuator_gainprm[i, 4]
    kd = m.actuator_gainprm[i, 6]
    vmax = m.actuator_gainprm[i, 7]
    upos = uvel = uff = 0.0
    c = m.actuator_ctrladr[i]
    first = True
    for bit in (INPUT_POS, INPUT_VEL, INPUT_FF):
        if spec & bit:
            value = u if first else clamped_ctrl(m.actuator_ctrllimited, m.actuator_ctrlrange,
                                                 m.opt_flags[OPT_DISABLEFLAGS], ctrl, c)
            first = False
            c += 1
            if bit == INPUT_POS:
                upos = value
            elif bit == INPUT_VEL:
                uvel = value
            else:
                uff = value
    torque = kp * (upos - length) + kd * (uvel - velocity) + uff + m.actuator_gainprm[i, 5] * integral
    voltage = resistance / k * torque + k * velocity
    if vmax > 0.0 and abs(voltage) > vmax:
        return math.copysign(vmax, voltage), True
    return voltage, False


@kernel
def _controller_input(m, d, u, i):
    """The controller's input of dcmotor i for control u after its slew limit, and its integral
    state (0 without ki)."""
    adr = m.actuator_actadr[i]
    slewmax = m.actuator_dynprm[i, 7]
    if slewmax > 0.0:
        s = d.act[adr]
        step = slewmax * m.opt_timestep[0]
        u = min(max(u, s - step), s + step)
        adr += 1
    integral = d.act[adr] if m.actuator_gainprm[i, 5] > 0.0 else 0.0
    return u, integral


@kernel
def controller_held(m, d, i, u):
    """Whether dcmotor i's controller voltage is held at +-Vmax with first control u (the rest
    from d.ctrl)."""
    u, integral = _controller_input(m, d, u, i)
    return controller_voltage(m, d.ctrl, u, d.actuator_length[i], d.actuator_velocity[i], i, integral)[1]


@handle_entry(needed=needed)
def dcmotor_controller(m, d):
    """Force and act_dot of the controller-driven and thermal dcmotors, from the clamped controls
    the actuation kernel left in scratch_nu (before the force ranges are applied)."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return
    h = m.opt_timestep[0]
    for i in range(m.nactuator):
        if not in_unit(m, i):
            continue
        resistance = hot_resistance(m, d, i)
        k = m.actuator_gainprm[i, 1]
        velocity = d.actuator_velocity[i]
        adr = m.actuator_actadr[i]
        if has_controller(m, i):
            # its states come first: slew (of its first control), integral
            u, integral = _controller_input(m, d, d.scratch_nu[m.actuator_ctrladr[i]], i)
            if m.actuator_dynprm[i, 7] > 0.0:
                d.act_dot[adr] = (u - d.act[adr]) / h
                adr += 1
            if m.actuator_gainprm[i, 5] > 0.0:
                error = (u if m.actuator_ctrlspec[i] & INPUT_POS else 0.0) - d.actuator_length[i]
                imax = m.actuator_dynprm[i, 8]
                windup = imax > 0.0 and ((integral >= imax and error > 0.0)
                                         or (integral <= -imax and error < 0.0))
                d.act_dot[adr] = 0.0 if windup else error
                adr += 1
            voltage, _ = controller_voltage(m, d.scratch_nu, u, d.actuator_length[i], velocity, i, integral)
        else:
            voltage = first_ctrl(m.actuator_ctrladr, m.actuator_ctrlnum, d.scratch_nu, i)
        # the motor's own states from adr on: temperature, bristle deflection, current
        last = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
        if m.actuator_dynprm[i, 0] <= 0.0:
            current = (voltage - k * velocity) / resistance
            force = k * current
        else:
            current = d.act[last]
            force = k * _current_step(m, d, i, last, voltage, resistance, velocity, h)
        if m.actuator_dynprm[i, 2] > 0.0:
            # the thermal model: C dT/dt = R i^2 - T / Rth, T over the ambient (Euler), i this
            # step's current (the state's, with inductance)
            d.act_dot[adr] = (current * current * resistance - d.act[adr] / m.actuator_dynprm[i, 2]) \
                / m.actuator_dynprm[i, 3]
            adr += 1
        if m.actuator_dynprm[i, 5] > 0.0:
            # LuGre friction: dz/dt = v - sigma0 |v| z / g(v), the force -(sigma0 z + sigma1 dz/dt)
            z_dot = velocity - _lugre_rate(m, i, velocity) * d.act[adr]
            d.act_dot[adr] = z_dot
            force -= m.actuator_dynprm[i, 5] * d.act[adr] + m.actuator_dynprm[i, 6] * z_dot
        d.actuator_force[i] = force + _cogging(m, d, i)


@kernel
def _current_step(m, d, i, j, voltage, resistance, velocity, h):
    """act_dot of dcmotor i's current state j, (V - R i - K v) / (tau R) within the current_rate,
    and the current after the step, integrated exactly (actuation.next_activation; a dcmotor
    has no actrange)."""
    current = d.act[j]
    tau = m.actuator_dynprm[i, 0]
    di = (voltage - resistance * current - m.actuator_gainprm[i, 1] * velocity) / (tau * resistance)
    rate = m.actuator_dynprm[i, 1]
    if rate > 0.0:
        di = min(max(di, -rate), rate)
    d.act_dot[j] = di
    tau = max(MINVAL, tau)
    return current + di * tau * (1.0 - math.exp(-h / tau))


@kernel
def _cogging(m, d, i):
    """Dcmotor i's cogging torque A sin(poles l + phase) (biasprm)."""
    if m.actuator_biasprm[i, 0] == 0.0:
        return 0.0
    return m.actuator_biasprm[i, 0] * math.sin(m.actuator_biasprm[i, 1] * d.actuator_length[i]
                                               + m.actuator_biasprm[i, 2])
