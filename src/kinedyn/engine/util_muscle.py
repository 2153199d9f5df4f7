"""MuJoCo's muscle model as scalar kernels (engine_util_misc.c, engine_derivative.c).

Parameters follow MuJoCo's layout. ``prm`` is a row of ``actuator_gainprm`` (or
``actuator_biasprm``, which the muscle shortcut fills with the same values):

    prm = [range0, range1, force, scale, lmin, lmax, vmax, fpmax, fvmax]

and the activation dynamics read ``actuator_dynprm = [tau_act, tau_deact, tausmooth]``.
Every function takes the model arrays and a row index (see ``kinedyn.engine.util_spatial``: no
row views in kernels).

* Peak force F0 = force, or scale / acc0 when force < 0 (the "scale" rule).
* Optimal length L0 = (lengthrange1 - lengthrange0) / (range1 - range0); the
  normalised length is L = range0 + (len - lengthrange0) / L0 and the normalised
  velocity V = vel / (L0 vmax).
* Active gain = -F0 FL(L) FV(V): FL is two pairs of half-parabolas peaking at
  L = 1 and vanishing outside [lmin, lmax]; FV rises from 0 at V = -1 to 1 at V = 0
  as (V + 1)^2, then saturates at fvmax along a parabola.
* Passive bias = -F0 fpmax (a half-parabola from L = 1 to b = (1 + lmax)/2, linear beyond).
* Activation: act_dot = (clip(ctrl, 0, 1) - act) / tau with tau = tau_act (0.5 + 1.5 a)
  when activating and tau_deact / (0.5 + 1.5 a) when deactivating (a = clip(act, 0, 1));
  tausmooth > 0 blends the two with a quintic smoothstep of width tausmooth.
"""

from __future__ import annotations

from kinedyn._jit import kernel
from kinedyn.engine.types import MINVAL


@kernel
def _peak_force(prm, i, acc0):
    force = prm[i, 2]
    if force < 0.0:
        force = prm[i, 3] / max(MINVAL, acc0)
    return force


@kernel
def muscle_gain_length(length, lmin, lmax):
    """Active force-length curve FL (mju_muscleGainLength); 1 at length 1, 0 outside [lmin, lmax]."""
    if lmin <= length <= lmax:
        a = 0.5 * (lmin + 1.0)
        b = 0.5 * (1.0 + lmax)
        if length <= a:
            x = (length - lmin) / max(MINVAL, a - lmin)
            return 0.5 * x * x
        if length <= 1.0:
            x = (1.0 - length) / max(MINVAL, 1.0 - a)
            return 1.0 - 0.5 * x * x
        if length <= b:
            x = (length - 1.0) / max(MINVAL, b - 1.0)
            return 1.0 - 0.5 * x * x
        x = (lmax - length) / max(MINVAL, lmax - b)
        return 0.5 * x * x
    return 0.0


@kernel
def _gain_terms(length, vel, lengthrange, i, acc0, prm, p):
    """Shared by the gain and its derivative: peak force, FL, normalised velocity, the FV
    knee y = fvmax - 1, fvmax, and the velocity scale l0 * vmax (floored)."""
    force = _peak_force(prm, p, acc0)
    r0, r1 = prm[p, 0], prm[p, 1]
    lmin, lmax, vmax, fvmax = prm[p, 4], prm[p, 5], prm[p, 6], prm[p, 8]
    # optimal length l0 from the length range and the operating range [r0, r1]
    l0 = (lengthrange[i, 1] - lengthrange[i, 0]) / max(MINVAL, r1 - r0)
    nl = r0 + (length - lengthrange[i, 0]) / max(MINVAL, l0)
    vel_scale = max(MINVAL, l0 * vmax)
    return force, muscle_gain_length(nl, lmin, lmax), vel / vel_scale, fvmax - 1.0, fvmax, vel_scale


@kernel
def muscle_gain(length, vel, lengthrange, i, acc0, prm, p):
    """Active muscle gain -F0 FL FV (mju_muscleGain); lengthrange[i] and prm[p] are rows."""
    force, fl, nv, y, fvmax, _ = _gain_terms(length, vel, lengthrange, i, acc0, prm, p)
    if nv <= -1.0:
        fv = 0.0
    elif nv <= 0.0:
        fv = (nv + 1.0) * (nv + 1.0)
    elif nv <= y:
        fv = fvmax - (y - nv) * (y - nv) / max(MINVAL, y)
    else:
        fv = fvmax
    return -force * fl * fv


@kernel
def muscle_gain_vel(length, vel, lengthrange, i, acc0, prm, p):
    """d muscle_gain / d vel (mjd_muscleGain_vel, engine_derivative.c)."""
    force, fl, nv, y, _, vel_scale = _gain_terms(length, vel, lengthrange, i, acc0, prm, p)
    if nv <= -1.0:
        dfv = 0.0
    elif nv <= 0.0:
        dfv = 2.0 * nv + 2.0
    elif nv <= y:
        dfv = (-2.0 * nv + 2.0 * y) / max(MINVAL, y)
    else:
        dfv = 0.0
    return -force * fl * dfv / vel_scale


@kernel
def muscle_bias(length, lengthrange, i, acc0, prm, p):
    """Passive muscle force (mju_muscleBias): zero below the optimal length, then a parabola, then linear."""
    force = _peak_force(prm, p, acc0)
    r0, r1 = prm[p, 0], prm[p, 1]
    lmax, fpmax = prm[p, 5], prm[p, 7]
    l0 = (lengthrange[i, 1] - lengthrange[i, 0]) / max(MINVAL, r1 - r0)
    nl = r0 + (length - lengthrange[i, 0]) / max(MINVAL, l0)
    b = 0.5 * (1.0 + lmax)
    if nl <= 1.0:
        return 0.0
    if nl <= b:
        x = (nl - 1.0) / max(MINVAL, b - 1.0)
        return -force * fpmax * 0.5 * x * x
    x = (nl - b) / max(MINVAL, b - 1.0)
    return -force * fpmax * (0.5 + x)


@kernel
def sigmoid(x):
    """Quintic smoothstep 6x^5 - 15x^4 + 10x^3 clamped to [0, 1] (mju_sigmoid)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0)


@kernel
def muscle_dynamics(ctrl, act, dynprm, i):
    """Activation rate of a muscle (mju_muscleDynamics); dynprm[i] = [tau_act, tau_deact, tausmooth]."""
    ctrlclamp = min(max(ctrl, 0.0), 1.0)
    actclamp = min(max(act, 0.0), 1.0)
    tau_act = dynprm[i, 0] * (0.5 + 1.5 * actclamp)
    tau_deact = dynprm[i, 1] / (0.5 + 1.5 * actclamp)
    width = dynprm[i, 2]
    dctrl = ctrlclamp - act  # the unclamped activation
    # mju_muscleDynamicsTimescale
    if width < MINVAL:
        tau = tau_act if dctrl > 0.0 else tau_deact
    else:
        tau = tau_deact + (tau_act - tau_deact) * sigmoid(dctrl / width + 0.5)
    return dctrl / max(MINVAL, tau)
