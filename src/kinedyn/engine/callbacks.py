"""User-actuator callbacks: Python functions for actuators of user dynamics, gain or bias type
(MuJoCo's mjcb_act_dyn, mjcb_act_gain, mjcb_act_bias).

A model with callbacks runs its actuation stage from Python between the compiled stages
(:func:`fwd_actuation_with_callbacks`); every other model never enters this module.
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.actuation import USER_BIAS, USER_DYN, USER_GAIN, fwd_actuation_entry
from kinedyn.engine.types import (
    BIAS_USER,
    DSBL_ACTUATION,
    DYN_USER,
    GAIN_USER,
)


def set_actuator_callbacks(m, dyn=None, gain=None, bias=None) -> None:
    """Register the callbacks of the model's user-type actuators (None removes one).

    Each is called as ``f(m, d, i) -> float`` for actuator ``i`` when its dyntype,
    gaintype or biastype is "user", exactly where MuJoCo calls ``mjcb_act_dyn``,
    ``mjcb_act_gain`` and ``mjcb_act_bias``: ``dyn`` returns ``act_dot`` (for an actuator
    with several activations it writes ``d.act_dot[actadr:actadr + actnum]`` itself and
    its return value is ignored), ``gain`` the gain and ``bias`` the bias. During the call
    ``d`` holds the position and velocity stages (actuator_length, actuator_velocity, ...).
    All callbacks run before the compiled actuation kernel, so, unlike in MuJoCo, a gain or
    bias callback does not see this evaluation's act_dot or the other actuators' forces.
    Unlike MuJoCo's global callbacks these belong to the model. With a callback set,
    ``forward`` and ``step`` run the actuation stage from Python (the other stages stay
    compiled); RK4 cannot, and raises.
    """
    for name, f in (("dyn", dyn), ("gain", gain), ("bias", bias)):
        if f is not None and not callable(f):
            raise TypeError(f"{name} callback must be callable or None, got {type(f).__name__}")
    object.__setattr__(m, "_actuator_callbacks", (dyn, gain, bias))
    # actuators each callback applies to, precomputed once
    object.__setattr__(m, "_user_actuators", (
        np.flatnonzero(m.actuator_dyntype == DYN_USER) if dyn is not None else np.zeros(0, int),
        np.flatnonzero(m.actuator_gaintype == GAIN_USER) if gain is not None else np.zeros(0, int),
        np.flatnonzero(m.actuator_biastype == BIAS_USER) if bias is not None else np.zeros(0, int)))
    # one flag for the per-call check in forward and step (a plain attribute read)
    object.__setattr__(m, "_has_actuator_callbacks", any(len(ids) for ids in m._user_actuators))


def has_actuator_callbacks(m) -> bool:
    """Whether some user-type actuator of ``m`` has a callback to call."""
    return m._has_actuator_callbacks


def fwd_actuation_with_callbacks(m, d) -> None:
    """fwd_actuation with the callbacks' values handed to the kernel through d.scratch_user."""
    (dyn, gain, bias), (dyn_ids, gain_ids, bias_ids) = m._actuator_callbacks, m._user_actuators
    user = d.scratch_user
    user[3] = 0.0
    if not m.opt.disableflags & DSBL_ACTUATION:
        for i in dyn_ids:
            if m.actuator_actnum[i] > 1:
                dyn(m, d, int(i))  # writes its slice of act_dot, which the kernel keeps
            else:
                user[0, i] = dyn(m, d, int(i))
            user[3, i] = int(user[3, i]) | USER_DYN
        for row, bit, f, ids in ((1, USER_GAIN, gain, gain_ids), (2, USER_BIAS, bias, bias_ids)):
            for i in ids:
                user[row, i] = f(m, d, int(i))
                user[3, i] = int(user[3, i]) | bit
    try:
        fwd_actuation_entry(m._handle, d._handle)
    finally:
        user[3] = 0.0  # later evaluations without callbacks see MuJoCo's defaults


