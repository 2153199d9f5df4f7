"""Spring plasticity (MuJoCo 4.0's ``springyield`` of joints and tendons).

A spring with a yield keeps its rest position in the state ``d.plastic`` (``jnt_plasticadr``,
``tendon_plasticadr``; laid out by the compiler, joints first): a hinge's or slide's rest
position, a ball joint's rest quaternion, a tendon's ``lengthspring`` deadband pair. It starts at
``qpos_spring`` / ``tendon_lengthspring`` (``data.plastic_reset``), the springs and the potential
energy read it instead of those model fields (``spring_ref``, ``tendon_deadband``), and each step
moves it, after the state is advanced (mj_advance), so that the spring's displacement never
exceeds the yield: ideal plasticity. What MuJoCo 4.0 does, established against its binary (its
source was not available):

* hinge and slide: the rest position follows the new ``qpos`` to within ``jnt_springyield``;
* ball: the rest quaternion is turned towards the new orientation along the rotation between
  them (mju_subQuat) until the angle left is the yield;
* tendons: the length is predicted to first order, ``ten_length + h ten_J v`` with ``v`` the
  velocity the positions were integrated with (the new qvel; RK4's combined velocity), and the
  deadband pair moves rigidly so that the length lies within the yield of it.

The update is its own unit, reached only by models with plastic state (``needed=``).
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.types import DSBL_SPRING, JNT_BALL, OPT_DISABLEFLAGS
from kinedyn.engine.util_spatial import normalize4, quat_integrate, sub_quat


@kernel(inline="always")
def spring_ref(jnt_plasticadr, plastic, qpos_spring, j, qadr):
    """(array, address) of joint j's spring reference: its plastic state when it yields, else
    ``qpos_spring`` at its qpos address."""
    adr = jnt_plasticadr[j]
    if adr >= 0:
        return plastic, adr
    return qpos_spring, qadr


@kernel(inline="always")
def tendon_deadband(tendon_plasticadr, plastic, tendon_lengthspring, t):
    """(lower, upper) of tendon t's spring deadband: its plastic pair when it yields, else
    ``tendon_lengthspring``."""
    adr = tendon_plasticadr[t]
    if adr >= 0:
        return plastic[adr], plastic[adr + 1]
    return tendon_lengthspring[t, 0], tendon_lengthspring[t, 1]


@kernel(inline="always")
def rotation_from_ref(qpos, padr, ref, radr, sq, sv):
    """The rotation vector from the rest quaternion ref[radr:radr+4] to the normalised
    qpos[padr:padr+4] (mju_subQuat), into sv[0]; its norm. Leaves the quaternions in sq[0]
    (qpos) and sq[1] (rest); uses sq[2]."""
    for k in range(4):
        sq[0, k] = qpos[padr + k]
        sq[1, k] = ref[radr + k]
    normalize4(sq, 0)
    sub_quat(sv, 0, sq, 0, sq, 1, sq, 2)
    return math.sqrt(sv[0, 0] * sv[0, 0] + sv[0, 1] * sv[0, 1] + sv[0, 2] * sv[0, 2])


def has_plastic(m) -> bool:
    """Whether the model has any spring with a yield (the update unit is needed)."""
    return m.nplastic > 0


@handle_entry(args="float64[::1]", needed=has_plastic)
def plastic_update_entry(m, d, qvel):
    """Move d.plastic after the state was advanced; ``qvel`` is the velocity qpos moved with.
    With springs disabled it stays (so MuJoCo 4.0 does), whatever the springs' stiffness."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_SPRING:
        return
    h = m.opt_timestep[0]
    plastic = d.plastic
    qpos = d.qpos
    sq, sv = d.scratch_quat, d.scratch_vec
    QREF, QTMP, DIF = 1, 2, 0
    for j in range(m.njnt):
        adr = m.jnt_plasticadr[j]
        if adr < 0:
            continue
        y = m.jnt_springyield[j]
        padr = m.jnt_qposadr[j]
        if m.jnt_type[j] == JNT_BALL:
            # rotation vector from the rest orientation to the current one (as the spring reads it)
            r = rotation_from_ref(qpos, padr, plastic, adr, sq, sv)
            if r > y:
                # turn the rest orientation by the excess along the same axis
                quat_integrate(sq, QREF, sv, DIF, (r - y) / r, sq, QTMP)
                for k in range(4):
                    plastic[adr + k] = sq[QREF, k]
        else:
            x = qpos[padr] - plastic[adr]
            if x > y:
                plastic[adr] = qpos[padr] - y
            elif x < -y:
                plastic[adr] = qpos[padr] + y
    nv = m.nv
    for t in range(m.ntendon):
        adr = m.tendon_plasticadr[t]
        if adr < 0:
            continue
        y = m.tendon_springyield[t]
        vel = 0.0
        for v in range(nv):
            jv = d.ten_J[t, v]
            if jv != 0.0:
                vel += jv * qvel[v]
        length = d.ten_length[t] + h * vel
        shift = 0.0
        if length > plastic[adr + 1] + y:
            shift = length - (plastic[adr + 1] + y)
        elif length < plastic[adr] - y:
            shift = length - (plastic[adr] - y)
        if shift != 0.0:
            plastic[adr] += shift
            plastic[adr + 1] += shift
