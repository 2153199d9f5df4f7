"""Polynomial springs and dampers, and the damping and armature actuators add to their targets.

Stiffness and damping are polynomials of order mjNPOLY + 1 = 3 (MuJoCo 4.0, "Polynomial forces"):
a linear coefficient ``a`` (``jnt_stiffness``, ``dof_damping``, ``tendon_*``) and higher-order
coefficients ``[b, c]`` (``*_stiffnesspoly``, ``*_dampingpoly``). The force is ``-x k(x)`` with

    spring:  k(x) = a + b x + c x^2            (force a x + b x^2 + c x^3)
    damper:  k(v) = a + b |v| + c v^2          (force a v + b v|v| + c v^3: odd in v)

An actuator with ``damping`` or ``armature`` adds them, times gear[0]^2, to its joint or tendon
(``jnt_actuatorid`` / ``tendon_actuatorid``: the actuator, -1 none, -2 several to scan).

Kernels: ``poly_force`` (mju_polyForce), ``poly_force_deriv`` (mjd_xPolyForce, the derivative of
``x k(x)``), ``poly_potential`` (mju_polyPotential), ``actuator_damping`` and
``actuator_armature`` (mj_actuatorDamping, mj_actuatorArmature in engine_core_util.c).
"""

from __future__ import annotations

from kinedyn._jit import kernel
from kinedyn.engine.types import TRN_JOINT, TRN_JOINTINPARENT, TRN_TENDON


@kernel
def poly_force(linear, p0, p1, x, odd):
    """k(x) = linear + p0 x + p1 x^2, with |x| for x when ``odd``; the force is -x k(x)
    (mju_polyForce)."""
    if odd:
        x = abs(x)
    xpow = x
    res = linear + p0 * xpow
    xpow *= x
    return res + p1 * xpow


@kernel
def poly_force_deriv(linear, p0, p1, x, odd):
    """d(x k(x))/dx = linear + 2 p0 x + 3 p1 x^2 (|x| for x when ``odd``) (mjd_xPolyForce)."""
    if odd:
        x = abs(x)
    xpow = x
    res = linear + 2 * p0 * xpow
    xpow *= x
    return res + 3 * p1 * xpow


@kernel
def poly_potential(linear, p0, p1, x):
    """The spring's energy, the integral of t k(t) from 0 to x (mju_polyPotential)."""
    res = 0.5 * linear * (x * x)
    xpow = x * x
    res += p0 / 3 * (xpow * x)
    xpow *= x
    return res + p1 / 4 * (xpow * x)


@kernel
def _actuators_of(actuatorid, nu):
    """The range of actuators to visit for a jnt_/tendon_actuatorid: that one, or all (-2)."""
    if actuatorid < -1:
        return 0, nu
    if actuatorid == -1:
        return 0, 0
    return actuatorid, actuatorid + 1


@kernel
def _gear2_if_on(k, actuatorid, target, tendon, actuator_gear, actuator_trnid, actuator_trntype):
    """gear[0]^2 of actuator ``k`` when it acts on the joint or tendon ``target``, else 0."""
    if actuatorid < -1:
        trntype = actuator_trntype[k]
        on = trntype == TRN_TENDON if tendon else trntype == TRN_JOINT or trntype == TRN_JOINTINPARENT
        if actuator_trnid[k, 0] != target or not on:
            return 0.0
    return actuator_gear[k, 0] * actuator_gear[k, 0]


@kernel
def actuator_damping(actuatorid, target, tendon, actuator_damping, actuator_dampingpoly, actuator_gear,
                     actuator_trnid, actuator_trntype, p0, p1):
    """The damping the actuators add to joint or tendon ``target`` (``actuatorid`` its
    jnt_/tendon_actuatorid), and the polynomial coefficients ``p0, p1`` plus theirs, each times
    the actuator's gear[0]^2: ``(damping, p0, p1)`` (mj_actuatorDamping)."""
    damping = 0.0
    first, last = _actuators_of(actuatorid, actuator_gear.shape[0])
    for k in range(first, last):
        gear2 = _gear2_if_on(k, actuatorid, target, tendon, actuator_gear, actuator_trnid, actuator_trntype)
        if gear2 != 0.0:
            damping += actuator_damping[k] * gear2
            p0 += actuator_dampingpoly[k, 0] * gear2
            p1 += actuator_dampingpoly[k, 1] * gear2
    return damping, p0, p1


@kernel
def actuator_armature(actuatorid, target, tendon, actuator_armature, actuator_gear, actuator_trnid,
                      actuator_trntype):
    """The armature the actuators add to joint or tendon ``target``, each times its gear[0]^2
    (mj_actuatorArmature)."""
    armature = 0.0
    first, last = _actuators_of(actuatorid, actuator_gear.shape[0])
    for k in range(first, last):
        gear2 = _gear2_if_on(k, actuatorid, target, tendon, actuator_gear, actuator_trnid, actuator_trntype)
        if gear2 != 0.0:
            armature += actuator_armature[k] * gear2
    return armature


@kernel
def dof_damping_coefs(v, dof_jntid, jnt_actuatorid, dof_damping, dof_dampingpoly, actuator_damping_,
                      actuator_dampingpoly, actuator_gear, actuator_trnid, actuator_trntype):
    """The damping polynomial of dof ``v``, the actuators' share included: ``(a, b, c)`` (the
    dof loop of mj_springdamper). The arrays come as arguments, not read from the handle: a
    loop over the dofs that writes forces would reload every handle field per dof (a store may
    alias the handle as far as LLVM knows), ten times the cost of the loop itself."""
    p0, p1 = dof_dampingpoly[v, 0], dof_dampingpoly[v, 1]
    j = dof_jntid[v]
    actuatorid = jnt_actuatorid[j]
    if actuatorid == -1:  # no actuator on the joint: the sum below with nothing added (+ 0.0 as it)
        return dof_damping[v] + 0.0, p0, p1
    extra, p0, p1 = actuator_damping(actuatorid, j, False, actuator_damping_, actuator_dampingpoly,
                                     actuator_gear, actuator_trnid, actuator_trntype, p0, p1)
    return dof_damping[v] + extra, p0, p1


@kernel
def dof_damping_poly(m, v):
    """:func:`dof_damping_coefs` with the model's arrays."""
    return dof_damping_coefs(v, m.dof_jntid, m.jnt_actuatorid, m.dof_damping, m.dof_dampingpoly,
                             m.actuator_damping, m.actuator_dampingpoly, m.actuator_gear, m.actuator_trnid,
                             m.actuator_trntype)


@kernel
def tendon_damping_coefs(t, tendon_actuatorid, tendon_damping, tendon_dampingpoly, actuator_damping_,
                         actuator_dampingpoly, actuator_gear, actuator_trnid, actuator_trntype):
    """The damping polynomial of tendon ``t``, the actuators' share included: ``(a, b, c)``
    (arrays as arguments, as :func:`dof_damping_coefs`)."""
    p0, p1 = tendon_dampingpoly[t, 0], tendon_dampingpoly[t, 1]
    actuatorid = tendon_actuatorid[t]
    if actuatorid == -1:
        return tendon_damping[t] + 0.0, p0, p1
    extra, p0, p1 = actuator_damping(actuatorid, t, True, actuator_damping_, actuator_dampingpoly,
                                     actuator_gear, actuator_trnid, actuator_trntype, p0, p1)
    return tendon_damping[t] + extra, p0, p1


@kernel
def tendon_damping_poly(m, t):
    """:func:`tendon_damping_coefs` with the model's arrays."""
    return tendon_damping_coefs(t, m.tendon_actuatorid, m.tendon_damping, m.tendon_dampingpoly,
                                m.actuator_damping, m.actuator_dampingpoly, m.actuator_gear, m.actuator_trnid,
                                m.actuator_trntype)


@kernel
def dof_damping_deriv(m, d, v):
    """d(qvel k(qvel))/dqvel of dof ``v``'s damper, the actuators' damping included: the damping
    the implicit integrators treat implicitly (mjd_passive_vel, mj_EulerSkip)."""
    damping, p0, p1 = dof_damping_poly(m, v)
    return poly_force_deriv(damping, p0, p1, d.qvel[v], True)
