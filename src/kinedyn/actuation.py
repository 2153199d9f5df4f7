"""Actuation: transmissions and actuator forces.

Mirrors ``mj_transmission`` (engine_core_smooth.c) and ``mj_fwdActuation``
(engine_forward.c). Each actuator maps a control (or its activation) to a scalar
force through gain and bias,

    force = gain(length, velocity) * input + bias(length, velocity),

where ``input`` is ``ctrl`` for stateless actuators and ``act`` otherwise, and
the transmission maps that force to joint space: ``qfrc_actuator = moment^T force``.

This release covers joint and jointinparent transmissions on every joint type and
tendon transmissions on fixed tendons;
dynamics none, integrator, filter and filterexact; gain fixed and affine; bias
none and affine. The compiler rejects the rest with a ModelError.
"""

from __future__ import annotations

import math

from numba import njit

from kinedyn._math import normalize4, quat2vel, rot_vec_quat
from kinedyn.types import (
    BIAS_AFFINE,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_INTEGRATOR,
    DYN_NONE,
    GAIN_AFFINE,
    JNT_BALL,
    JNT_HINGE,
    JNT_SLIDE,
    MINVAL,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_TENDON,
)


@njit(cache=True)
def _transmission(
    # model
    actuator_trntype, actuator_trnid, actuator_gear, jnt_type, jnt_qposadr, jnt_dofadr,
    # data in
    qpos, ten_length, ten_J,
    # data out
    actuator_length, actuator_moment,
    # scratch: quaternion and vector rows (GEAR uses two rows)
    sq, sv,
):
    QUAT, AXIS, GEAR = 0, 0, 1
    nu = actuator_trntype.shape[0]
    for i in range(nu):
        for v in range(actuator_moment.shape[1]):
            actuator_moment[i, v] = 0.0
        trntype = actuator_trntype[i]
        if trntype == TRN_JOINT or trntype == TRN_JOINTINPARENT:
            j = actuator_trnid[i, 0]
            qadr = jnt_qposadr[j]
            dadr = jnt_dofadr[j]
            jtype = jnt_type[j]
            if jtype == JNT_SLIDE or jtype == JNT_HINGE:
                # scalar joint: length = gear * q, moment = gear on the joint's dof
                actuator_length[i] = qpos[qadr] * actuator_gear[i, 0]
                actuator_moment[i, dadr] = actuator_gear[i, 0]
            elif jtype == JNT_BALL:
                # length = gear . rotation vector of the joint quaternion; moment = gear axis
                for k in range(4):
                    sq[QUAT, k] = qpos[qadr + k]
                normalize4(sq, QUAT)
                quat2vel(sv, AXIS, sq, QUAT, 1.0)
                _gear_axis(sv, GEAR, actuator_gear, i, 0, sq, QUAT, trntype == TRN_JOINTINPARENT)
                actuator_length[i] = sv[AXIS, 0] * sv[GEAR, 0] + sv[AXIS, 1] * sv[GEAR, 1] \
                    + sv[AXIS, 2] * sv[GEAR, 2]
                for k in range(3):
                    actuator_moment[i, dadr + k] = sv[GEAR, k]
            else:  # JNT_FREE: a 6D wrench [force (world); torque]; no meaningful length
                for k in range(4):
                    sq[QUAT, k] = qpos[qadr + 3 + k]
                normalize4(sq, QUAT)
                _gear_axis(sv, GEAR, actuator_gear, i, 3, sq, QUAT, trntype == TRN_JOINTINPARENT)
                actuator_length[i] = 0.0
                for k in range(3):
                    actuator_moment[i, dadr + k] = actuator_gear[i, k]
                    actuator_moment[i, dadr + 3 + k] = sv[GEAR, k]
        elif trntype == TRN_TENDON:
            # tendon: length = gear * ten_length, moment = gear * ten_J (mj_transmission)
            t = actuator_trnid[i, 0]
            gear0 = actuator_gear[i, 0]
            actuator_length[i] = ten_length[t] * gear0
            for v in range(actuator_moment.shape[1]):
                actuator_moment[i, v] = ten_J[t, v] * gear0
        else:  # should not occur: the compiler rejects other transmissions for now
            actuator_length[i] = math.nan


@njit(cache=True, inline="always")
def _gear_axis(res, r, actuator_gear, i, first, quat, q, in_parent):
    """res[r] = torque axis actuator_gear[i, first:first+3] in the joint's child frame.

    With jointinparent the gear is given in the parent frame: rotate it by the inverse
    joint rotation (quat[q] is conjugated in place).
    """
    if in_parent:
        quat[q, 1] = -quat[q, 1]
        quat[q, 2] = -quat[q, 2]
        quat[q, 3] = -quat[q, 3]
        for k in range(3):
            res[r + 1, k] = actuator_gear[i, first + k]
        rot_vec_quat(res, r, res, r + 1, quat, q)
    else:
        for k in range(3):
            res[r, k] = actuator_gear[i, first + k]


@njit(cache=True)
def next_activation(dyntype, dynprm0, actlimited, actrange, act, act_dot, h):
    """Activation after one step of length h (mj_nextActivation).

    filterexact integrates act_dot = (ctrl - act) / tau exactly; the others use Euler.
    The result is clamped to actrange when actlimited.
    """
    if dyntype == DYN_FILTEREXACT:
        tau = max(MINVAL, dynprm0)
        act = act + act_dot * tau * (1.0 - math.exp(-h / tau))
    else:
        act = act + act_dot * h
    if actlimited:
        act = min(max(act, actrange[0]), actrange[1])
    return act


@njit(cache=True)
def _fwd_actuation(
    # model
    actuator_dyntype, actuator_gaintype, actuator_biastype, actuator_actadr, actuator_actnum,
    actuator_ctrllimited, actuator_ctrlrange, actuator_forcelimited, actuator_forcerange,
    actuator_actlimited, actuator_actrange, actuator_actearly, actuator_dynprm, actuator_gainprm,
    actuator_biasprm, jnt_actfrclimited, jnt_actfrcrange, jnt_dofadr, disableflags, timestep,
    actuator_trntype, actuator_trnid, tendon_actfrclimited, tendon_actfrcrange,
    # data in
    ctrl_in, act, actuator_length, actuator_velocity, actuator_moment,
    # data out
    act_dot, actuator_force, qfrc_actuator,
    # scratch
    ctrl, ten_force,
):
    nu = actuator_dyntype.shape[0]
    nv = qfrc_actuator.shape[0]
    actuator_force[:] = 0.0
    act_dot[:] = 0.0
    qfrc_actuator[:] = 0.0
    if nu == 0 or disableflags & DSBL_ACTUATION:
        return

    # controls, clamped to ctrlrange unless clampctrl is disabled; a bad control zeroes them all
    bad = False
    for i in range(nu):
        c = ctrl_in[i]
        if actuator_ctrllimited[i] and not disableflags & DSBL_CLAMPCTRL:
            c = min(max(c, actuator_ctrlrange[i, 0]), actuator_ctrlrange[i, 1])
        ctrl[i] = c
        if not (abs(c) <= 1e10):
            bad = True
    if bad:
        ctrl[:] = 0.0

    # activation dynamics: act_dot for stateful actuators (the last act of each is the input)
    for i in range(nu):
        if actuator_actadr[i] < 0:
            continue
        last = actuator_actadr[i] + actuator_actnum[i] - 1
        dyntype = actuator_dyntype[i]
        if dyntype == DYN_INTEGRATOR:
            act_dot[last] = ctrl[i]
        elif dyntype == DYN_FILTER or dyntype == DYN_FILTEREXACT:  # dynprm = [tau]
            act_dot[last] = (ctrl[i] - act[last]) / max(MINVAL, actuator_dynprm[i, 0])

    # force = gain * input + bias
    for i in range(nu):
        if actuator_gaintype[i] == GAIN_AFFINE:  # gainprm = [const, kp, kv]
            gain = actuator_gainprm[i, 0] + actuator_gainprm[i, 1] * actuator_length[i] \
                + actuator_gainprm[i, 2] * actuator_velocity[i]
        else:  # GAIN_FIXED: gainprm = [gain]
            gain = actuator_gainprm[i, 0]

        if actuator_dyntype[i] == DYN_NONE:
            inp = ctrl[i]
        else:
            last = actuator_actadr[i] + actuator_actnum[i] - 1
            inp = act[last]
            if actuator_actearly[i]:
                # use the activation of the next step, removing a one-step delay
                inp = next_activation(actuator_dyntype[i], actuator_dynprm[i, 0], actuator_actlimited[i],
                                      actuator_actrange[i], act[last], act_dot[last], timestep)
        force = gain * inp

        if actuator_biastype[i] == BIAS_AFFINE:  # biasprm = [const, kp, kv]
            force += actuator_biasprm[i, 0] + actuator_biasprm[i, 1] * actuator_length[i] \
                + actuator_biasprm[i, 2] * actuator_velocity[i]
        actuator_force[i] = force

    # tendons with actuatorfrcrange: scale their actuators' forces so that the sum is in range
    if _tendon_force_limited(actuator_trntype, actuator_trnid, tendon_actfrclimited):
        ten_force[:] = 0.0
        for i in range(nu):
            if actuator_trntype[i] == TRN_TENDON and tendon_actfrclimited[actuator_trnid[i, 0]]:
                ten_force[actuator_trnid[i, 0]] += actuator_force[i]
        for i in range(nu):
            if actuator_trntype[i] != TRN_TENDON:
                continue
            t = actuator_trnid[i, 0]
            total = ten_force[t]
            if tendon_actfrclimited[t] and total != 0.0:
                if total < tendon_actfrcrange[t, 0]:
                    actuator_force[i] *= tendon_actfrcrange[t, 0] / total
                elif total > tendon_actfrcrange[t, 1]:
                    actuator_force[i] *= tendon_actfrcrange[t, 1] / total

    # clamp each actuator's force to its forcerange
    for i in range(nu):
        if actuator_forcelimited[i]:
            actuator_force[i] = min(max(actuator_force[i], actuator_forcerange[i, 0]),
                                    actuator_forcerange[i, 1])

    # qfrc_actuator = moment^T force, skipping zero moments
    for i in range(nu):
        f = actuator_force[i]
        for v in range(nv):
            mom = actuator_moment[i, v]
            if mom != 0.0:
                qfrc_actuator[v] += mom * f

    # clamp the summed actuator force on joints with actuatorfrcrange
    for j in range(jnt_actfrclimited.shape[0]):
        if jnt_actfrclimited[j]:
            v = jnt_dofadr[j]
            qfrc_actuator[v] = min(max(qfrc_actuator[v], jnt_actfrcrange[j, 0]), jnt_actfrcrange[j, 1])


@njit(cache=True)
def _tendon_force_limited(actuator_trntype, actuator_trnid, tendon_actfrclimited):
    """Whether some actuator acts on a tendon with actuatorfrcrange (mj_fwdActuation)."""
    for i in range(actuator_trntype.shape[0]):
        if actuator_trntype[i] == TRN_TENDON and tendon_actfrclimited[actuator_trnid[i, 0]]:
            return True
    return False


@njit(cache=True)
def actuator_velocity_kernel(disableflags, actuator_moment, qvel, actuator_velocity):
    """actuator_velocity = moment qvel (zero when actuation is disabled)."""
    nu = actuator_moment.shape[0]
    for i in range(nu):
        acc = 0.0
        if not disableflags & DSBL_ACTUATION:
            for v in range(qvel.shape[0]):
                mom = actuator_moment[i, v]
                if mom != 0.0:
                    acc += mom * qvel[v]
        actuator_velocity[i] = acc


@njit(cache=True)
def transmission_entry(m, d):
    _transmission(m.actuator_trntype, m.actuator_trnid, m.actuator_gear, m.jnt_type, m.jnt_qposadr,
                  m.jnt_dofadr, d.qpos, d.ten_length, d.ten_J, d.actuator_length, d.actuator_moment,
                  d.scratch_quat, d.scratch_vec)


@njit(cache=True)
def fwd_actuation_entry(m, d):
    _fwd_actuation(
        m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype, m.actuator_actadr, m.actuator_actnum,
        m.actuator_ctrllimited, m.actuator_ctrlrange, m.actuator_forcelimited, m.actuator_forcerange,
        m.actuator_actlimited, m.actuator_actrange, m.actuator_actearly, m.actuator_dynprm,
        m.actuator_gainprm, m.actuator_biasprm, m.jnt_actfrclimited, m.jnt_actfrcrange, m.jnt_dofadr,
        m.opt_flags[1], m.opt_timestep[0],
        m.actuator_trntype, m.actuator_trnid, m.tendon_actfrclimited, m.tendon_actfrcrange,
        d.ctrl, d.act, d.actuator_length, d.actuator_velocity, d.actuator_moment,
        d.act_dot, d.actuator_force, d.qfrc_actuator,
        d.scratch_nu, d.scratch_ntendon,
    )


def transmission(m, d) -> None:
    """Actuator lengths and moments.

    Reads: qpos, ten_length, ten_J. Writes: actuator_length, actuator_moment. Mirrors mj_transmission.
    """
    transmission_entry(m._handle, d._handle)


def fwd_actuation(m, d) -> None:
    """Activation rates, actuator forces and their joint-space sum.

    Reads: ctrl, act, actuator_length, actuator_velocity, actuator_moment.
    Writes: act_dot, actuator_force, qfrc_actuator. Mirrors mj_fwdActuation.
    """
    fwd_actuation_entry(m._handle, d._handle)
