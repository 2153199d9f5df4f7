"""Compile-time constants that need the dynamics at qpos0 (MuJoCo's set0, engine_setconst.c).

* ``actuator_length0``: actuator length at qpos0.
* ``actuator_acc0``: |M^-1 moment^T|, the joint acceleration norm caused by a unit
  actuator force at qpos0 (M includes armature).
* dampratio: a position-like actuator (gainprm[0] == -biasprm[1]) whose biasprm[2]
  is positive holds a damping ratio zeta rather than -kv. MuJoCo 4.0 resolves it with
  the reflected mass m = 1 / (J M^-1 J^T) at qpos0: kv = zeta * 2 sqrt(kp m), stored
  as biasprm[2] = -kv.
* ``tendon_length0``: tendon length at qpos0.
* ``tendon_lengthspring``: a tendon whose springlength was left at -1 -1 gets its
  length at ``qpos_spring`` for both ends (MuJoCo's setSpring, after set0).
"""

from __future__ import annotations

import math

import numpy as np


def set_const(model) -> None:
    """Fill actuator_length0, actuator_acc0, tendon_length0, tendon_lengthspring, resolve dampratio."""
    if model.nu == 0 and model.ntendon == 0:
        return
    from kinedyn.data import Data
    from kinedyn.forward import fwd_position
    from kinedyn.inertia import solve_m

    d = Data(model)
    fwd_position(model, d)
    model.tendon_length0[:] = d.ten_length
    if model.ntendon:
        _set_spring(model)
    if model.nu == 0:
        return
    # one solve per actuator: x_i = M^-1 moment_i^T
    x = solve_m(model, d, d.actuator_moment)
    model.actuator_length0[:] = d.actuator_length
    model.actuator_acc0[:] = np.linalg.norm(x, axis=1)

    for i in range(model.nu):
        gainprm, biasprm = model.actuator_gainprm[i], model.actuator_biasprm[i]
        if gainprm[0] == -biasprm[1] and biasprm[2] > 0:
            dampratio = biasprm[2]
            kp = gainprm[0]
            inv_mass = float(d.actuator_moment[i] @ x[i])
            mass = 1.0 / inv_mass if inv_mass > 0 else 0.0
            model.actuator_biasprm[i, 2] = -dampratio * 2.0 * math.sqrt(kp * mass)


def _set_spring(model) -> None:
    """tendon_lengthspring -1 -1 -> the tendon length at qpos_spring (setSpring)."""
    from kinedyn.data import Data
    from kinedyn.forward import fwd_position

    d = Data(model)
    d.qpos[:] = model.qpos_spring
    fwd_position(model, d)  # spatial tendons need the site poses and Jacobians
    for i in range(model.ntendon):
        if model.tendon_lengthspring[i, 0] == -1 and model.tendon_lengthspring[i, 1] == -1:
            model.tendon_lengthspring[i, :] = d.ten_length[i]


# mjLROpt defaults (mj_defaultLROpt); mode muscle: only actuators with muscle gain or bias
LR_DEFAULTS = dict(mode="muscle", useexisting="true", uselimit="false", accel=20.0, maxforce=0.0,
                   timeconst=1.0, timestep=0.01, inttotal=10.0, interval=2.0, tolrange=0.05)


def set_length_range(model, lropt: dict, nodes: list) -> None:
    """actuator_lengthrange as MuJoCo's compiler sets it (mjCModel::LengthRange, mj_setLengthRange).

    Per selected actuator (``mode``): keep a given range (``useexisting``), else copy the
    range of a limited joint or tendon target (``uselimit``; copied as is, not scaled by
    the gear), else MuJoCo estimates it by a simulation that pushes the actuator against
    the joint limits. That needs the constraint solver, so it raises a ModelError naming
    the actuator.
    """
    from kinedyn.errors import ModelError
    from kinedyn.types import BiasType, GainType, TrnType

    opt = dict(LR_DEFAULTS, **lropt)
    mode = opt["mode"]
    if mode not in ("none", "muscle", "muscleuser", "all"):
        raise ModelError(f"invalid lengthrange mode {mode!r}", element="lengthrange", attribute="mode")
    for i in range(model.nu):
        ismuscle = (model.actuator_gaintype[i] == GainType.MUSCLE
                    or model.actuator_biastype[i] == BiasType.MUSCLE)
        isuser = model.actuator_gaintype[i] == GainType.USER or model.actuator_biastype[i] == BiasType.USER
        if mode == "none" or (mode == "muscle" and not ismuscle) or (
                mode == "muscleuser" and not ismuscle and not isuser):
            continue
        lr = model.actuator_lengthrange[i]
        if opt["useexisting"] == "true" and lr[0] < lr[1]:
            continue
        trn, tid = model.actuator_trntype[i], model.actuator_trnid[i, 0]
        if opt["uselimit"] == "true":
            if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and model.jnt_limited[tid]:
                lr[:] = model.jnt_range[tid]
                continue
            if trn == TrnType.TENDON and model.tendon_limited[tid]:
                lr[:] = model.tendon_range[tid]
                continue
        node = nodes[i] if i < len(nodes) else None
        msg = (f"automatic lengthrange of actuator {i} needs MuJoCo's simulation-based estimate, which "
               "pushes against joint limits (constraint solver), not supported yet; give 'lengthrange' or "
               "use <compiler><lengthrange uselimit=\"true\"/> with a limited joint or tendon")
        if node is not None:
            raise node.error(msg, "lengthrange")
        raise ModelError(msg)
