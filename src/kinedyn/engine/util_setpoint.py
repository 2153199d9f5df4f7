"""Rotational setpoints (MuJoCo 4.0's wrapPeriod and wrapSetpoint, engine_forward.c).

A transmission whose length is an angle (a ball joint's, or a site's with a refsite and a purely
rotational gear) repeats every 2 pi |gear|: a position setpoint u and u + 2 pi |gear| are the
same target. Servos on such transmissions move their setpoint to the representative nearest a
reference (the length) before using it: the position-like servos (engine.actuation) and pid
controllers (engine.util_pid).
"""

from __future__ import annotations

import math

from kinedyn._jit import kernel
from kinedyn.engine.types import JNT_BALL, TRN_JOINT, TRN_JOINTINPARENT, TRN_SITE


@kernel
def rotational_period(actuator_trntype, actuator_trnid, actuator_gear, jnt_type, i):
    """2 pi |gear| when actuator i's length is an angle (a ball joint, or a site with refsite and
    a purely rotational gear), 0 otherwise."""
    trn = actuator_trntype[i]
    g = actuator_gear
    if trn == TRN_SITE and actuator_trnid[i, 1] >= 0 and g[i, 0] == 0.0 and g[i, 1] == 0.0 \
            and g[i, 2] == 0.0:
        return 2.0 * math.pi * math.sqrt(g[i, 3] * g[i, 3] + g[i, 4] * g[i, 4] + g[i, 5] * g[i, 5])
    if (trn == TRN_JOINT or trn == TRN_JOINTINPARENT) and jnt_type[actuator_trnid[i, 0]] == JNT_BALL:
        return 2.0 * math.pi * math.sqrt(g[i, 0] * g[i, 0] + g[i, 1] * g[i, 1] + g[i, 2] * g[i, 2])
    return 0.0


@kernel
def wrap_setpoint(u, length, period):
    """The representative of setpoint u nearest to length (wrapSetpoint; C round: half away from 0)."""
    x = (u - length) / period
    r = math.floor(abs(x) + 0.5)
    if x < 0.0:
        r = -r
    return u - period * r
