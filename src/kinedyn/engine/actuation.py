"""Actuation: transmissions and actuator forces.

Mirrors ``mj_transmission`` (engine_core_smooth.c) and ``mj_fwdActuation``
(engine_forward.c). Each actuator maps a control (or its activation) to a scalar
force through gain and bias,

    force = gain(length, velocity) * input + bias(length, velocity),

where ``input`` is ``ctrl`` for stateless actuators and ``act`` otherwise, and
the transmission maps that force to joint space: ``qfrc_actuator = moment^T force``.

This release covers joint and jointinparent transmissions on every joint type,
tendon transmissions on fixed and spatial tendons, site transmissions with and without refsite,
slider-cranks and body (adhesion) transmissions, whose moment needs contacts and is
zero without them; dynamics none, integrator, filter, filterexact, muscle and user;
gain fixed, affine, muscle and user; bias none, affine, muscle and user (see
``kinedyn.engine.util_muscle``).

User types take their values from Python callbacks registered on the model
(:func:`set_actuator_callbacks`), as MuJoCo's take them from ``mjcb_act_dyn``,
``mjcb_act_gain`` and ``mjcb_act_bias``. Kernels cannot call Python, so
:func:`fwd_actuation` calls the callbacks first and hands their values to the kernel in
``d.scratch_user``; without a callback a user type behaves as MuJoCo's with no callback
installed: ``act_dot = 0``, ``gain = 1``, ``bias = 0``.
"""

from __future__ import annotations

import math

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.constraint import JAC_DIFF_POS, point_jacobians
from kinedyn.engine.history import clamped_ctrl, delayed_ctrl, first_ctrl
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    BIAS_AFFINE,
    BIAS_DCMOTOR,
    BIAS_MUSCLE,
    BIAS_USER,
    CONE_ELLIPTIC,
    COUNT_NCON,
    DSBL_ACTUATION,
    DYN_DCMOTOR,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_INTEGRATOR,
    DYN_MUSCLE,
    DYN_NONE,
    DYN_USER,
    GAIN_AFFINE,
    GAIN_DCMOTOR,
    GAIN_FIXED,
    GAIN_MUSCLE,
    GAIN_PID,
    GAIN_USER,
    JNT_BALL,
    JNT_FREE,
    JNT_HINGE,
    JNT_SLIDE,
    MAXVAL,
    MINVAL,
    OPT_CONE,
    OPT_DISABLEFLAGS,
    TRN_BODY,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_SITE,
    TRN_SLIDERCRANK,
    TRN_TENDON,
)
from kinedyn.engine.util_dcmotor import dcmotor_controller, in_unit
from kinedyn.engine.util_muscle import muscle_bias, muscle_dynamics, muscle_gain
from kinedyn.engine.util_pid import pid_actuation
from kinedyn.engine.util_setpoint import rotational_period, wrap_setpoint
from kinedyn.engine.util_spatial import mul_quat, normalize4, quat2vel, rot_vec_quat, sub_quat


# Inlined into its entry: as a call, its 26 array arguments are passed field by field every time.
@kernel(inline="always")
def _transmission(
    # model
    actuator_trntype, actuator_trnid, actuator_gear, actuator_cranklength, jnt_type, jnt_qposadr,
    jnt_dofadr, site_bodyid, site_quat, body_rootid, body_dofnum, body_dofadr, body_parentid,
    body_weldid, dof_parentid,
    # data in
    qpos, ten_length, ten_J, xquat, site_xpos, site_xmat, subtree_com, cdof,
    # data out
    actuator_length, actuator_moment,
    # scratch: quaternion and vector rows (GEAR uses two rows), Jacobians (6, 3, nv)
    sq, sv, jac,
):
    QUAT, AXIS, GEAR = 0, 0, 1
    nact = actuator_trntype.shape[0]
    nv = actuator_moment.shape[1]
    for i in range(nact):
        for v in range(nv):
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
            for v in range(nv):
                actuator_moment[i, v] = ten_J[t, v] * gear0
        elif trntype == TRN_SLIDERCRANK:
            _slider_crank(i, actuator_trnid, actuator_gear, actuator_cranklength, site_bodyid,
                          body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
                          site_xpos, site_xmat, subtree_com, cdof, actuator_length, actuator_moment, jac)
        elif trntype == TRN_SITE:
            _site(i, actuator_trnid, actuator_gear, site_bodyid, site_quat, body_rootid, body_dofnum,
                  body_dofadr, body_parentid, body_weldid, dof_parentid, xquat, site_xpos, site_xmat,
                  subtree_com, cdof, actuator_length, actuator_moment, sq, sv, jac)
        else:  # TRN_BODY (adhesion): length 0; the moment comes from the contacts (_body_transmission)
            actuator_length[i] = 0.0


# rows of the Jacobian scratch
_JP, _JR, _JREFP, _JREFR, _JA, _JS = 0, 1, 2, 3, 4, 5


@kernel
def _slider_crank(i, actuator_trnid, actuator_gear, actuator_cranklength, site_bodyid, body_rootid,
                  body_dofnum, body_dofadr, body_parentid, dof_parentid, site_xpos, site_xmat,
                  subtree_com, cdof, actuator_length, actuator_moment, jac):
    """Slider-crank transmission (mj_transmission, mjTRN_SLIDERCRANK).

    With a the slider axis (site z), v = crank - slider and r the rod length, the slider
    position is length = a.v - sqrt((a.v)^2 + r^2 - v.v). When the rod cannot reach
    (det <= 0) MuJoCo falls back to length = a.v with derivatives a and v.
    """
    nv = actuator_moment.shape[1]
    cid = actuator_trnid[i, 0]
    sid = actuator_trnid[i, 1]
    rod = actuator_cranklength[i]
    ax, ay, az = site_xmat[sid, 0, 2], site_xmat[sid, 1, 2], site_xmat[sid, 2, 2]
    vx = site_xpos[cid, 0] - site_xpos[sid, 0]
    vy = site_xpos[cid, 1] - site_xpos[sid, 1]
    vz = site_xpos[cid, 2] - site_xpos[sid, 2]
    av = vx * ax + vy * ay + vz * az
    det = av * av + rod * rod - (vx * vx + vy * vy + vz * vz)
    if det <= 0.0:
        length = av
        dldax, dlday, dldaz = vx, vy, vz
        dldvx, dldvy, dldvz = ax, ay, az
    else:
        sdet = math.sqrt(det)
        length = av - sdet
        c = 1.0 - av / sdet
        dldvx = ax * c + vx * (1.0 / sdet)
        dldvy = ay * c + vy * (1.0 / sdet)
        dldvz = az * c + vz * (1.0 / sdet)
        dldax, dlday, dldaz = vx * c, vy * c, vz * c
    # Jacobian of the slider point and of its axis (mj_jacPointAxis), of the crank site
    jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com, cdof,
               site_xpos[sid, 0], site_xpos[sid, 1], site_xpos[sid, 2], site_bodyid[sid], jac[_JS], jac[_JR])
    for v in range(nv):
        r0, r1, r2 = jac[_JR, 0, v], jac[_JR, 1, v], jac[_JR, 2, v]
        jac[_JA, 0, v] = r1 * az - r2 * ay
        jac[_JA, 1, v] = r2 * ax - r0 * az
        jac[_JA, 2, v] = r0 * ay - r1 * ax
    jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com, cdof,
               site_xpos[cid, 0], site_xpos[cid, 1], site_xpos[cid, 2], site_bodyid[cid], jac[_JP], jac[_JR])
    gear0 = actuator_gear[i, 0]
    actuator_length[i] = length * gear0
    for v in range(nv):
        m = 0.0
        m += dldax * jac[_JA, 0, v] + dldvx * (jac[_JP, 0, v] - jac[_JS, 0, v])
        m += dlday * jac[_JA, 1, v] + dldvy * (jac[_JP, 1, v] - jac[_JS, 1, v])
        m += dldaz * jac[_JA, 2, v] + dldvz * (jac[_JP, 2, v] - jac[_JS, 2, v])
        actuator_moment[i, v] = m * gear0


@kernel
def _site(i, actuator_trnid, actuator_gear, site_bodyid, site_quat, body_rootid, body_dofnum,
          body_dofadr, body_parentid, body_weldid, dof_parentid, xquat, site_xpos, site_xmat,
          subtree_com, cdof, actuator_length, actuator_moment, sq, sv, jac):
    """Site transmission (mj_transmission, mjTRN_SITE).

    Without refsite: a Cartesian wrench at the site, gear = [force; torque] in the site
    frame; moment = Jp^T R gear[:3] + Jr^T R gear[3:], length 0.
    With refsite: length = gear[:3] . (site position in the refsite frame) + gear[3:] .
    (rotation vector from refsite to site); moment = relative Jacobians projected on the
    gear expressed in the refsite frame, with the dofs both sites share removed.
    """
    nv = actuator_moment.shape[1]
    sid = actuator_trnid[i, 0]
    ref = actuator_trnid[i, 1]
    jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com, cdof,
               site_xpos[sid, 0], site_xpos[sid, 1], site_xpos[sid, 2], site_bodyid[sid], jac[_JP], jac[_JR])
    actuator_length[i] = 0.0
    if ref < 0:
        # wrench: gear rotated to the world frame
        fx, fy, fz = _rot3(site_xmat, sid, actuator_gear[i, 0], actuator_gear[i, 1], actuator_gear[i, 2])
        tx, ty, tz = _rot3(site_xmat, sid, actuator_gear[i, 3], actuator_gear[i, 4], actuator_gear[i, 5])
        for v in range(nv):
            mom = jac[_JP, 0, v] * fx + jac[_JP, 1, v] * fy + jac[_JP, 2, v] * fz
            rot = jac[_JR, 0, v] * tx + jac[_JR, 1, v] * ty + jac[_JR, 2, v] * tz
            actuator_moment[i, v] = mom + rot
        return

    # common ancestral dof of the two sites, if any
    b0 = body_weldid[site_bodyid[sid]]
    b1 = body_weldid[site_bodyid[ref]]
    d0 = body_dofadr[b0] + body_dofnum[b0] - 1
    d1 = body_dofadr[b1] + body_dofnum[b1] - 1
    common = -1
    if d0 >= 0 and d1 >= 0:
        while d0 != d1:
            if d0 < d1:
                d1 = dof_parentid[d1]
            else:
                d0 = dof_parentid[d0]
            if d0 == -1 or d1 == -1:
                break
        if d0 == d1:
            common = d0
    jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com, cdof,
               site_xpos[ref, 0], site_xpos[ref, 1], site_xpos[ref, 2], site_bodyid[ref],
               jac[_JREFP], jac[_JREFR])
    # relative Jacobians, shared ancestor chain cleared
    for k in range(3):
        for v in range(nv):
            jac[_JP, k, v] -= jac[_JREFP, k, v]
            jac[_JR, k, v] -= jac[_JREFR, k, v]
    da = common
    while da >= 0:
        for k in range(3):
            jac[_JP, k, da] = 0.0
            jac[_JR, k, da] = 0.0
        da = dof_parentid[da]

    g = actuator_gear
    if g[i, 0] != 0.0 or g[i, 1] != 0.0 or g[i, 2] != 0.0:
        # site position in the refsite frame
        dx = site_xpos[sid, 0] - site_xpos[ref, 0]
        dy = site_xpos[sid, 1] - site_xpos[ref, 1]
        dz = site_xpos[sid, 2] - site_xpos[ref, 2]
        lx = site_xmat[ref, 0, 0] * dx + site_xmat[ref, 1, 0] * dy + site_xmat[ref, 2, 0] * dz
        ly = site_xmat[ref, 0, 1] * dx + site_xmat[ref, 1, 1] * dy + site_xmat[ref, 2, 1] * dz
        lz = site_xmat[ref, 0, 2] * dx + site_xmat[ref, 1, 2] * dy + site_xmat[ref, 2, 2] * dz
        actuator_length[i] += lx * g[i, 0] + ly * g[i, 1] + lz * g[i, 2]
        fx, fy, fz = _rot3(site_xmat, ref, g[i, 0], g[i, 1], g[i, 2])
        for v in range(nv):
            actuator_moment[i, v] = jac[_JP, 0, v] * fx + jac[_JP, 1, v] * fy + jac[_JP, 2, v] * fz
    if g[i, 3] != 0.0 or g[i, 4] != 0.0 or g[i, 5] != 0.0:
        # site and refsite orientations: xquat[body] * site_quat (MuJoCo 4.0.0)
        mul_quat(sq, 1, xquat, site_bodyid[sid], site_quat, sid)
        mul_quat(sq, 2, xquat, site_bodyid[ref], site_quat, ref)
        sub_quat(sv, 0, sq, 1, sq, 2, sq, 3)
        actuator_length[i] += sv[0, 0] * g[i, 3] + sv[0, 1] * g[i, 4] + sv[0, 2] * g[i, 5]
        tx, ty, tz = _rot3(site_xmat, ref, g[i, 3], g[i, 4], g[i, 5])
        for v in range(nv):
            actuator_moment[i, v] += jac[_JR, 0, v] * tx + jac[_JR, 1, v] * ty + jac[_JR, 2, v] * tz


@kernel
def _rot3(xmat, s, x, y, z):
    """xmat[s] (x, y, z)."""
    return (xmat[s, 0, 0] * x + xmat[s, 0, 1] * y + xmat[s, 0, 2] * z,
            xmat[s, 1, 0] * x + xmat[s, 1, 1] * y + xmat[s, 1, 2] * z,
            xmat[s, 2, 0] * x + xmat[s, 2, 1] * y + xmat[s, 2, 2] * z)


@kernel
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


@kernel
def wrap_period(actuator_dyntype, actuator_gaintype, actuator_biastype, actuator_gainprm, actuator_biasprm,
                actuator_trntype, actuator_trnid, actuator_gear, jnt_type, i):
    """Period of a servo's setpoint on a rotational transmission, 0 otherwise (wrapPeriod, 4.0).

    A position-like servo (fixed gain, affine bias, kp == -biasprm[1], dynamics none or
    integrator) on a ball joint, or on a site with refsite and a purely rotational gear,
    has a length that is an angle: setpoints u and u + 2 pi |gear| are the same target.
    """
    dyn = actuator_dyntype[i]
    if not (actuator_gaintype[i] == GAIN_FIXED and actuator_biastype[i] == BIAS_AFFINE
            and actuator_gainprm[i, 0] == -actuator_biasprm[i, 1]
            and (dyn == DYN_NONE or dyn == DYN_INTEGRATOR)):
        return 0.0
    return rotational_period(actuator_trntype, actuator_trnid, actuator_gear, jnt_type, i)


@kernel
def next_activation(dyntype, dynprm0, actlimited, actrange, act, act_dot, h):
    """Activation after one step of length h (mj_nextActivation).

    filterexact integrates act_dot = (ctrl - act) / tau exactly, and so does a DC motor's current
    (tau = L / R, dynprm[0]); the others use Euler.
    The result is clamped to actrange when actlimited.
    """
    if dyntype == DYN_FILTEREXACT or dyntype == DYN_DCMOTOR:
        tau = max(MINVAL, dynprm0)
        act = act + act_dot * tau * (1.0 - math.exp(-h / tau))
    else:
        act = act + act_dot * h
    if actlimited:
        act = min(max(act, actrange[0]), actrange[1])
    return act


@kernel
def activation_input(actuator_dyntype, actuator_dynprm, actuator_actadr, actuator_actnum, actuator_actlimited,
                     actuator_actrange, actuator_actearly, act, act_dot, timestep, i):
    """The input of stateful actuator i: its last activation, or with actearly the next
    step's (removing a one-step delay)."""
    last = actuator_actadr[i] + actuator_actnum[i] - 1
    inp = act[last]
    if actuator_actearly[i]:
        inp = next_activation(actuator_dyntype[i], actuator_dynprm[i, 0], actuator_actlimited[i],
                              actuator_actrange[i], act[last], act_dot[last], timestep)
    return inp


@kernel(inline="always")
def _clamp_controls(actuator_ctrllimited, actuator_ctrlrange, disableflags, ctrl_in, ctrl):
    """The controls the actuators read (mj_fwdActuation's local copy): ctrl_in (nu of them, in
    the actuators' blocks) clamped to ctrlrange unless clampctrl is disabled, into ctrl; a bad
    control zeroes them all. (Apart from _actuator_forces, whose call would pass more than 30
    arguments: CPython then packs them in a tuple, which Numba cannot inline.)"""
    bad = False
    for c in range(ctrl_in.shape[0]):
        u = clamped_ctrl(actuator_ctrllimited, actuator_ctrlrange, disableflags, ctrl_in, c)
        ctrl[c] = u
        if not (abs(u) <= MAXVAL):
            bad = True
    if bad:
        ctrl[:] = 0.0


@kernel(inline="always")
def _actuator_forces(
    # model
    actuator_dyntype, actuator_gaintype, actuator_biastype, actuator_actadr, actuator_actnum,
    actuator_ctrladr, actuator_ctrlnum, actuator_actlimited, actuator_actrange, actuator_actearly,
    actuator_dynprm, actuator_gainprm, actuator_biasprm, disableflags, timestep, actuator_trntype,
    actuator_trnid, actuator_lengthrange, actuator_acc0, actuator_gear, jnt_type,
    # data in: the controls clamped by _clamp_controls (nu, in the actuators' blocks)
    ctrl, act, actuator_length, actuator_velocity,
    # data out
    act_dot, actuator_force,
    # callback values for user types (rows dyn, gain, bias; row 3: bits USER_DYN/GAIN/BIAS when set)
    user,
    # option: move each rotational setpoint to the representative nearest the length
    wrap_setpoints,
):
    """The first part of mj_fwdActuation: act_dot and actuator_force before the range limits,
    from ctrl, act and the transmission's length and velocity; False when actuation is off or
    there is no actuator (act_dot zero, nothing else to do)."""
    nact = actuator_dyntype.shape[0]
    actuator_force[:] = 0.0
    if nact == 0 or disableflags & DSBL_ACTUATION:
        act_dot[:] = 0.0
        return False
    # act_dot = 0, except the slices a user dynamics callback with several activations wrote
    for i in range(nact):
        if actuator_actnum[i] > 1 and actuator_dyntype[i] == DYN_USER and _user_set(user, i, USER_DYN):
            continue
        for k in range(actuator_actadr[i], actuator_actadr[i] + actuator_actnum[i]):
            act_dot[k] = 0.0

    # activation dynamics: act_dot for stateful actuators (the last act of each is the input)
    for i in range(nact):
        if actuator_actadr[i] < 0:
            continue
        last = actuator_actadr[i] + actuator_actnum[i] - 1
        dyntype = actuator_dyntype[i]
        u = first_ctrl(actuator_ctrladr, actuator_ctrlnum, ctrl, i)
        if dyntype == DYN_INTEGRATOR:
            act_dot[last] = u
        elif dyntype == DYN_FILTER or dyntype == DYN_FILTEREXACT:  # dynprm = [tau]
            act_dot[last] = (u - act[last]) / max(MINVAL, actuator_dynprm[i, 0])
        elif dyntype == DYN_MUSCLE:  # dynprm = [tau_act, tau_deact, tausmooth]
            act_dot[last] = muscle_dynamics(u, act[last], actuator_dynprm, i)
        elif dyntype == DYN_DCMOTOR:
            # a DC motor's current i: L di/dt = u - R i - K v, L = tau R (dynprm = [tau,
            # current_rate]); di/dt within the current_rate when it is positive
            resistance = actuator_gainprm[i, 0]
            k = actuator_gainprm[i, 1]
            di = (u - resistance * act[last] - k * actuator_velocity[i]) \
                / (actuator_dynprm[i, 0] * resistance)
            rate = actuator_dynprm[i, 1]
            if rate > 0.0:
                di = min(max(di, -rate), rate)
            act_dot[last] = di
        elif dyntype == DYN_USER and _user_set(user, i, USER_DYN) and actuator_actnum[i] == 1:
            # mjcb_act_dyn's value; without a callback act_dot stays 0 (several activations:
            # the callback wrote its act_dot slice itself, before this kernel)
            act_dot[last] = user[0, i]

    # force = gain * input + bias
    for i in range(nact):
        if actuator_gaintype[i] == GAIN_PID:
            # a pid controller: the affine bias below; its inputs and states (and act_dot) are added
            # by the stage entry (util_pid.pid_actuation, a unit only models with pid compile)
            force = 0.0
        elif actuator_gaintype[i] == GAIN_DCMOTOR:
            # a voltage-commanded DC motor, gainprm = [R, K]: the torque K i of the current
            # i = (u - K v) / R that the voltage u drives against the back-EMF K v, or with
            # inductance of the current state after this step (dcmotors are actearly)
            k = actuator_gainprm[i, 1]
            if actuator_actadr[i] < 0:
                force = k / actuator_gainprm[i, 0] * (first_ctrl(actuator_ctrladr, actuator_ctrlnum, ctrl, i)
                                                      - k * actuator_velocity[i])
            else:
                force = k * activation_input(actuator_dyntype, actuator_dynprm, actuator_actadr,
                                             actuator_actnum, actuator_actlimited, actuator_actrange,
                                             actuator_actearly, act, act_dot, timestep, i)
        else:
            if actuator_gaintype[i] == GAIN_AFFINE:  # gainprm = [const, kp, kv]
                gain = actuator_gainprm[i, 0] + actuator_gainprm[i, 1] * actuator_length[i] \
                    + actuator_gainprm[i, 2] * actuator_velocity[i]
            elif actuator_gaintype[i] == GAIN_MUSCLE:
                gain = muscle_gain(actuator_length[i], actuator_velocity[i], actuator_lengthrange, i,
                                   actuator_acc0[i], actuator_gainprm, i)
            elif actuator_gaintype[i] == GAIN_USER:  # mjcb_act_gain, 1 without a callback
                gain = user[1, i] if _user_set(user, i, USER_GAIN) else 1.0
            else:  # GAIN_FIXED: gainprm = [gain]
                gain = actuator_gainprm[i, 0]

            if actuator_dyntype[i] == DYN_NONE:
                inp = first_ctrl(actuator_ctrladr, actuator_ctrlnum, ctrl, i)
            else:
                inp = activation_input(actuator_dyntype, actuator_dynprm, actuator_actadr,
                                       actuator_actnum, actuator_actlimited, actuator_actrange,
                                       actuator_actearly, act, act_dot, timestep, i)
            # rotational setpoint: the representative nearest the length
            if wrap_setpoints:
                period = wrap_period(actuator_dyntype, actuator_gaintype, actuator_biastype,
                                     actuator_gainprm, actuator_biasprm, actuator_trntype, actuator_trnid,
                                     actuator_gear, jnt_type, i)
                if period > 0.0:
                    inp = wrap_setpoint(inp, actuator_length[i], period)
            force = gain * inp

        if actuator_biastype[i] == BIAS_AFFINE:  # biasprm = [const, kp, kv]
            force += actuator_biasprm[i, 0] + actuator_biasprm[i, 1] * actuator_length[i] \
                + actuator_biasprm[i, 2] * actuator_velocity[i]
        elif actuator_biastype[i] == BIAS_MUSCLE:
            force += muscle_bias(actuator_length[i], actuator_lengthrange, i, actuator_acc0[i],
                                 actuator_biasprm, i)
        elif actuator_biastype[i] == BIAS_USER and _user_set(user, i, USER_BIAS):  # mjcb_act_bias, else 0
            force += user[2, i]
        elif actuator_biastype[i] == BIAS_DCMOTOR and actuator_biasprm[i, 0] != 0.0:
            # a DC motor's cogging torque, biasprm = [amplitude, poles, phase], at the length
            force += actuator_biasprm[i, 0] * math.sin(actuator_biasprm[i, 1] * actuator_length[i]
                                                       + actuator_biasprm[i, 2])
        actuator_force[i] = force
    return True


@kernel(inline="always")
def _actuator_limits(
    # model
    actuator_forcelimited, actuator_forcerange, actuator_trntype, actuator_trnid, tendon_actfrclimited,
    tendon_actfrcrange, jnt_type, jnt_dofadr, jnt_actgravcomp, jnt_actfrclimited, jnt_actfrcrange,
    # data in
    actuator_moment, qfrc_gravcomp,
    # data out
    actuator_force, qfrc_actuator,
    # scratch
    ten_force,
):
    """The rest of mj_fwdActuation: actuator_force within the tendon and actuator force ranges,
    and qfrc_actuator = moment' force with the actuator gravity compensation, within the joints'
    actuatorfrcrange."""
    nact = actuator_trntype.shape[0]
    nv = qfrc_actuator.shape[0]
    # tendons with actuatorfrcrange: scale their actuators' forces so that the sum is in range
    if _tendon_force_limited(actuator_trntype, actuator_trnid, tendon_actfrclimited):
        ten_force[:] = 0.0
        for i in range(nact):
            if actuator_trntype[i] == TRN_TENDON and tendon_actfrclimited[actuator_trnid[i, 0]]:
                ten_force[actuator_trnid[i, 0]] += actuator_force[i]
        for i in range(nact):
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
    for i in range(nact):
        if actuator_forcelimited[i]:
            actuator_force[i] = min(max(actuator_force[i], actuator_forcerange[i, 0]),
                                    actuator_forcerange[i, 1])

    # qfrc_actuator = moment^T force over the nonzero moments (MuJoCo's moment is sparse). A
    # select rather than a branch, so the loop vectorises: adding 0.0 for a zero moment
    # leaves the sum as it was
    for i in range(nact):
        f = actuator_force[i]
        for v in range(nv):
            mom = actuator_moment[i, v]
            qfrc_actuator[v] += mom * f if mom != 0.0 else 0.0

    # gravity compensation of the joints with actuatorgravcomp (zero when there is none: passive)
    for j in range(jnt_actgravcomp.shape[0]):
        if jnt_actgravcomp[j]:
            jt = jnt_type[j]
            ndof = 6 if jt == JNT_FREE else (3 if jt == JNT_BALL else 1)
            for v in range(jnt_dofadr[j], jnt_dofadr[j] + ndof):
                qfrc_actuator[v] += qfrc_gravcomp[v]

    # clamp the summed actuator force on joints with actuatorfrcrange
    for j in range(jnt_actfrclimited.shape[0]):
        if jnt_actfrclimited[j]:
            v = jnt_dofadr[j]
            qfrc_actuator[v] = min(max(qfrc_actuator[v], jnt_actfrcrange[j, 0]), jnt_actfrcrange[j, 1])


@kernel
def fwd_actuation_kernel(
    # model
    actuator_dyntype, actuator_gaintype, actuator_biastype, actuator_actadr, actuator_actnum,
    actuator_ctrllimited, actuator_ctrlrange, actuator_forcelimited, actuator_forcerange,
    actuator_actlimited, actuator_actrange, actuator_actearly, actuator_dynprm, actuator_gainprm,
    actuator_biasprm, jnt_actfrclimited, jnt_actfrcrange, jnt_dofadr, disableflags, timestep,
    actuator_trntype, actuator_trnid, tendon_actfrclimited, tendon_actfrcrange, actuator_lengthrange,
    actuator_acc0, actuator_gear, jnt_type, jnt_actgravcomp, actuator_ctrladr, actuator_ctrlnum,
    # data in
    ctrl_in, act, actuator_length, actuator_velocity, actuator_moment, qfrc_gravcomp,
    # data out
    act_dot, actuator_force, qfrc_actuator,
    # scratch
    ctrl, ten_force,
    # callback values for user types (rows dyn, gain, bias; row 3: bits USER_DYN/GAIN/BIAS when set)
    user,
    # option: move each rotational setpoint to the representative nearest the length (forward: True)
    wrap_setpoints,
):
    """mj_fwdActuation: act_dot, actuator_force and qfrc_actuator from ctrl, act and the transmission.

    ``wrap_setpoints=False`` leaves the input of a servo on a rotational transmission as given
    (``tools.inverse_actuation`` solves for affine forces); ``forward`` always wraps. The stage
    entry calls the two parts itself (inlined there: a call passes each of these arrays field by
    field, which cost half of the stage on the ant).
    """
    qfrc_actuator[:] = 0.0
    _clamp_controls(actuator_ctrllimited, actuator_ctrlrange, disableflags, ctrl_in, ctrl)
    if _actuator_forces(actuator_dyntype, actuator_gaintype, actuator_biastype, actuator_actadr,
                        actuator_actnum, actuator_ctrladr, actuator_ctrlnum, actuator_actlimited,
                        actuator_actrange, actuator_actearly, actuator_dynprm, actuator_gainprm,
                        actuator_biasprm, disableflags, timestep, actuator_trntype, actuator_trnid,
                        actuator_lengthrange, actuator_acc0, actuator_gear, jnt_type, ctrl, act,
                        actuator_length, actuator_velocity, act_dot, actuator_force, user,
                        wrap_setpoints):
        _actuator_limits(actuator_forcelimited, actuator_forcerange, actuator_trntype, actuator_trnid,
                         tendon_actfrclimited, tendon_actfrcrange, jnt_type, jnt_dofadr, jnt_actgravcomp,
                         jnt_actfrclimited, jnt_actfrcrange, actuator_moment, qfrc_gravcomp, actuator_force,
                         qfrc_actuator, ten_force)


# bits of scratch_user[3]: which callback values are set for this evaluation
USER_DYN, USER_GAIN, USER_BIAS = 1, 2, 4


@kernel
def _user_set(user, i, bit):
    return int(user[3, i]) & bit != 0


@kernel
def _tendon_force_limited(actuator_trntype, actuator_trnid, tendon_actfrclimited):
    """Whether some actuator acts on a tendon with actuatorfrcrange (mj_fwdActuation)."""
    for i in range(actuator_trntype.shape[0]):
        if actuator_trntype[i] == TRN_TENDON and tendon_actfrclimited[actuator_trnid[i, 0]]:
            return True
    return False


@kernel
def actuator_velocity_kernel(disableflags, actuator_moment, qvel, actuator_velocity):
    """actuator_velocity = moment qvel over the nonzero moments (zero when actuation is disabled).

    MuJoCo keeps the moment sparse; here each dense row is first scanned for the number of
    nonzeros and, when there is one, its column (the sum of the columns of the nonzeros).
    That scan has no branch, so it vectorises, and a row with one nonzero (a joint
    transmission) needs no search.
    """
    nact, nv = actuator_moment.shape
    for i in range(nact):
        acc = 0.0
        if not disableflags & DSBL_ACTUATION:
            nnz = 0
            column_sum = 0
            for v in range(nv):
                nonzero = 1 if actuator_moment[i, v] != 0.0 else 0
                nnz += nonzero
                column_sum += nonzero * v
            if nnz == 1:
                acc = actuator_moment[i, column_sum] * qvel[column_sum]
            elif nnz > 1:
                for v in range(nv):
                    mom = actuator_moment[i, v]
                    if mom != 0.0:
                        acc += mom * qvel[v]
        actuator_velocity[i] = acc


@handle_entry
def transmission_entry(m, d):
    _transmission(m.actuator_trntype, m.actuator_trnid, m.actuator_gear, m.actuator_cranklength, m.jnt_type,
                  m.jnt_qposadr, m.jnt_dofadr, m.site_bodyid, m.site_quat, m.body_rootid, m.body_dofnum,
                  m.body_dofadr, m.body_parentid, m.body_weldid, m.dof_parentid,
                  d.qpos, d.ten_length, d.ten_J, d.xquat, d.site_xpos, d.site_xmat, d.subtree_com, d.cdof,
                  d.actuator_length, d.actuator_moment, d.scratch_quat, d.scratch_vec, d.scratch_jac)
    for i in range(m.nactuator):
        if m.actuator_trntype[i] == TRN_BODY:
            _body_transmission(m, d, i)


@kernel
def _body_transmission(m, d, i):
    """Body transmission (adhesion; mj_transmission, mjTRN_BODY): the moment is minus the average
    of the contact-normal Jacobians of the body's contacts, so a positive force pulls the body onto
    what it touches. A contact with rows adds J' w, w = 1 on its normal row (condim 1, elliptic
    cones) or 1 / (2 (condim - 1)) on each pyramid edge, row by row in efc order (mj_mulJacTVec);
    a contact in the gap (exclude 1, no rows) adds its normal Jacobian n' (J_p(body of geom 1) -
    J_p(body of geom 0)) at the contact point, summed apart and added after."""
    body = m.actuator_trnid[i, 0]
    nv = m.nv
    moment = d.actuator_moment
    excluded = d.scratch_solver_nv[0]   # free in the position stage
    jac = d.scratch_cjac
    J = d.efc_J
    elliptic = m.opt_flags[OPT_CONE] == CONE_ELLIPTIC
    for v in range(nv):
        excluded[v] = 0.0
    count = 0
    for c in range(d.efc_counts[COUNT_NCON]):
        b0 = m.geom_bodyid[d.contact_geom[c, 0]]
        b1 = m.geom_bodyid[d.contact_geom[c, 1]]
        if b0 != body and b1 != body:
            continue
        exclude = d.contact_exclude[c]
        if exclude == 0:
            count += 1
            adr = d.contact_efc_address[c]
            dim = d.contact_dim[c]
            if dim == 1 or elliptic:
                for v in range(nv):
                    moment[i, v] += J[adr, v] * 1.0
            else:
                w = 0.5 / (dim - 1)
                for r in range(adr, adr + 2 * (dim - 1)):
                    for v in range(nv):
                        moment[i, v] += J[r, v] * w
        elif exclude == 1:
            count += 1
            px, py, pz = d.contact_pos[c, 0], d.contact_pos[c, 1], d.contact_pos[c, 2]
            point_jacobians(m, d, jac, px, py, pz, b1, px, py, pz, b0)
            n0, n1, n2 = d.contact_frame[c, 0, 0], d.contact_frame[c, 0, 1], d.contact_frame[c, 0, 2]
            for v in range(nv):
                excluded[v] += n0 * jac[JAC_DIFF_POS, 0, v] + n1 * jac[JAC_DIFF_POS, 1, v] \
                    + n2 * jac[JAC_DIFF_POS, 2, v]
    if count:
        scale = -1.0 / count
        for v in range(nv):
            moment[i, v] = (moment[i, v] + excluded[v]) * scale


@handle_entry
def fwd_actuation_entry(m, d):
    # fwd_actuation_kernel's two parts, inlined here (see there)
    d.qfrc_actuator[:] = 0.0
    ctrl = d.ctrl
    if m.nhistory > 0:
        # delayed actuators read their control from the history buffer (mj_readCtrl)
        delayed_ctrl(m, d)
        ctrl = d.scratch_ctrl_delayed
    _clamp_controls(m.actuator_ctrllimited, m.actuator_ctrlrange, m.opt_flags[OPT_DISABLEFLAGS], ctrl,
                    d.scratch_nu)
    if _actuator_forces(m.actuator_dyntype, m.actuator_gaintype, m.actuator_biastype, m.actuator_actadr,
                        m.actuator_actnum, m.actuator_ctrladr, m.actuator_ctrlnum,
                        m.actuator_actlimited, m.actuator_actrange, m.actuator_actearly, m.actuator_dynprm,
                        m.actuator_gainprm, m.actuator_biasprm, m.opt_flags[OPT_DISABLEFLAGS],
                        m.opt_timestep[0], m.actuator_trntype, m.actuator_trnid, m.actuator_lengthrange,
                        m.actuator_acc0, m.actuator_gear, m.jnt_type, d.scratch_nu, d.act, d.actuator_length,
                        d.actuator_velocity, d.act_dot, d.actuator_force, d.scratch_user, True):
        # pid controllers (a unit only models with one compile) read the clamped controls that
        # _actuator_forces left in scratch_nu
        for i in range(m.nactuator):
            if m.actuator_gaintype[i] == GAIN_PID:
                pid_actuation(m, d)
                break
        # dcmotors driven by their controller (a unit of its own, like pid's)
        for i in range(m.nactuator):
            if in_unit(m, i):
                dcmotor_controller(m, d)
                break
        _actuator_limits(m.actuator_forcelimited, m.actuator_forcerange, m.actuator_trntype, m.actuator_trnid,
                         m.tendon_actfrclimited, m.tendon_actfrcrange, m.jnt_type, m.jnt_dofadr,
                         m.jnt_actgravcomp, m.jnt_actfrclimited, m.jnt_actfrcrange, d.actuator_moment,
                         d.qfrc_gravcomp, d.actuator_force, d.qfrc_actuator, d.scratch_ntendon)


_TRANSMISSION = FastEntry(transmission_entry)


def transmission(m, d) -> None:
    """Actuator lengths and moments.

    Reads: qpos, xquat, site_xpos, site_xmat, subtree_com, cdof, ten_length, ten_J.
    Writes: actuator_length, actuator_moment. Mirrors mj_transmission.
    """
    check_model_data(m, d, "transmission")
    _TRANSMISSION.call(m._ptr, d._ptr)
