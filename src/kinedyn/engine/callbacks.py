"""User-actuator callbacks: Python functions for actuators of user dynamics, gain or bias type
(MuJoCo's mjcb_act_dyn, mjcb_act_gain, mjcb_act_bias), registered with
``Model.set_actuator_callbacks``.

A model with callbacks runs its actuation stage from Python between the compiled stages
(:func:`fwd_actuation_with_callbacks`); every other model never enters this module.
"""

from __future__ import annotations

from kinedyn.engine.actuation import USER_BIAS, USER_DYN, USER_GAIN, fwd_actuation_entry
from kinedyn.engine.types import (
    DSBL_ACTUATION,
)


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


