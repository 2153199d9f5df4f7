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
with such a motor. Only single-control, stateless controllers reach it (the compiler refuses ki,
slewmax, Imax and several inputs). The actuator's velocity derivative for the implicit
integrators is ``controller_voltage_slope`` (engine.derivative).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.types import DSBL_ACTUATION, GAIN_DCMOTOR, MINVAL, OPT_DISABLEFLAGS

INPUT_POS, INPUT_VEL, INPUT_FF, INPUT_VOLTAGE = 1, 2, 4, 8


def _has_controller(m) -> bool:
    return bool(np.any((m.actuator_gaintype == GAIN_DCMOTOR) & (m.actuator_ctrlspec & INPUT_VOLTAGE == 0)))


@kernel
def has_controller(m, i):
    """Whether actuator i is a dcmotor driven by its controller (no voltage input)."""
    return m.actuator_gaintype[i] == GAIN_DCMOTOR and not m.actuator_ctrlspec[i] & INPUT_VOLTAGE


@kernel
def controller_voltage(m, u, length, velocity, i):
    """The drive voltage of dcmotor i's controller and whether it is held at +-Vmax."""
    spec = m.actuator_ctrlspec[i]
    resistance = m.actuator_gainprm[i, 0]
    k = m.actuator_gainprm[i, 1]
    kp = m.actuator_gainprm[i, 4]
    kd = m.actuator_gainprm[i, 6]
    vmax = m.actuator_gainprm[i, 7]
    upos = u if spec & INPUT_POS else 0.0
    uvel = u if spec & INPUT_VEL else 0.0
    uff = u if spec & INPUT_FF else 0.0
    torque = kp * (upos - length) + kd * (uvel - velocity) + uff
    voltage = resistance / k * torque + k * velocity
    if vmax > 0.0 and abs(voltage) > vmax:
        return math.copysign(vmax, voltage), True
    return voltage, False


@handle_entry(needed=_has_controller)
def dcmotor_controller(m, d):
    """Force and act_dot of the controller-driven dcmotors, from the clamped controls the
    actuation kernel left in scratch_nu (before the force ranges are applied)."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return
    h = m.opt_timestep[0]
    for i in range(m.nu):
        if not has_controller(m, i):
            continue
        resistance = m.actuator_gainprm[i, 0]
        k = m.actuator_gainprm[i, 1]
        velocity = d.actuator_velocity[i]
        voltage, _ = controller_voltage(m, d.scratch_nu[i], d.actuator_length[i], velocity, i)
        adr = m.actuator_actadr[i]
        if adr < 0:
            force = k * (voltage - k * velocity) / resistance
        else:
            current = d.act[adr]
            di = (voltage - resistance * current - k * velocity) / (m.actuator_dynprm[i, 0] * resistance)
            rate = m.actuator_dynprm[i, 1]
            if rate > 0.0:
                di = min(max(di, -rate), rate)
            d.act_dot[adr] = di
            # the current after the step, integrated exactly (actuation.next_activation; a dcmotor
            # has no actrange)
            tau = max(MINVAL, m.actuator_dynprm[i, 0])
            force = k * (current + di * tau * (1.0 - math.exp(-h / tau)))
        if m.actuator_biasprm[i, 0] != 0.0:  # cogging
            force += m.actuator_biasprm[i, 0] * math.sin(m.actuator_biasprm[i, 1] * d.actuator_length[i]
                                                         + m.actuator_biasprm[i, 2])
        d.actuator_force[i] = force
