"""The discrete integrator's per-dof metric diagonal (engine_metric.c, MuJoCo 4.0's mjINT_DISCRETE).

Split from engine.metric to keep that module to the metric's assembly and solves.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import kernel
from kinedyn.engine.passive_plastic import rotation_from_ref
from kinedyn.engine.types import DSBL_DAMPER, DSBL_SPRING, JNT_BALL, JNT_FREE, OPT_DISABLEFLAGS
from kinedyn.engine.util_poly import dof_damping_deriv, poly_force_deriv

# rows of d.scratch_efm this module writes (engine.metric uses the others)
DIAG, CK = 0, 1


@kernel
def _joint_stiffness(m, d, ck, h):
    """ck = h k per dof: h d(x k(x))/dx of the joint springs, clamped >= 0 (effDiagStiff)."""
    for v in range(m.nv):
        ck[v] = 0.0
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_SPRING:
        return
    sq, sv = d.scratch_quat, d.scratch_vec
    for j in range(m.njnt):
        stiffness = m.jnt_stiffness[j]
        p0, p1 = m.jnt_stiffnesspoly[j, 0], m.jnt_stiffnesspoly[j, 1]
        if stiffness == 0.0 and p0 == 0.0 and p1 == 0.0:
            continue
        padr = m.jnt_qposadr[j]
        dadr = m.jnt_dofadr[j]
        jtype = m.jnt_type[j]
        if jtype == JNT_FREE:
            # translation: isotropic, at the distance from the spring position
            x0 = d.qpos[padr] - m.qpos_spring[padr]
            x1 = d.qpos[padr + 1] - m.qpos_spring[padr + 1]
            x2 = d.qpos[padr + 2] - m.qpos_spring[padr + 2]
            k = max(0.0, poly_force_deriv(stiffness, p0, p1, np.sqrt(x0 * x0 + x1 * x1 + x2 * x2), False))
            for c in range(3):
                ck[dadr + c] = h * k
            padr += 3
            dadr += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            # rotation: isotropic, at the angle from the spring orientation
            r = rotation_from_ref(d.qpos, padr, m.qpos_spring, padr, sq, sv)
            k = max(0.0, poly_force_deriv(stiffness, p0, p1, r, False))
            for c in range(3):
                ck[dadr + c] = h * k
        else:
            k = max(0.0, poly_force_deriv(stiffness, p0, p1, d.qpos[padr] - m.qpos_spring[padr], False))
            ck[dadr] = h * k


@kernel
def metric_diagonal(m, d):
    """The metric's per-dof diagonal h D + h^2 K (scratch_efm row DIAG; h k in row CK)."""
    h = m.opt_timestep[0]
    diag, ck = d.scratch_efm[DIAG], d.scratch_efm[CK]
    _joint_stiffness(m, d, ck, h)
    damper = not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER
    for v in range(m.nv):
        damp = max(0.0, dof_damping_deriv(m, d, v)) if damper else 0.0
        diag[v] = h * damp + h * ck[v]
