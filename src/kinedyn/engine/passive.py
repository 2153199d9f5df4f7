"""Passive forces: joint and tendon springs and dampers, contact adhesion (mj_passive,
engine_passive.c).

    qfrc_passive = qfrc_spring + qfrc_damper + qfrc_fluid + qfrc_adhesion + qfrc_gravcomp

with joint springs on the manifold for ball and free joints, the tendon spring-dampers of
:mod:`kinedyn.engine.smooth_tendon`, and the constant pull of adhesive contacts along their
normals (mj_adhesion; its counterpart in the constraint rows is the aref bias of
``constraint._adhesion_reference``), the fluid forces of :mod:`kinedyn.engine.passive_fluid`,
and gravity compensation (mj_gravcomp): the force -gravcomp * mass * gravity at each body's
centre of mass. The gravity compensation of the dofs of joints with ``actuatorgravcomp`` goes to
qfrc_actuator instead (``actuation.fwd_actuation_kernel``). With springs and dampers both
disabled every passive force is zero, as in MuJoCo.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import bad_model_data, call_rebinding
from kinedyn.engine.constraint import JAC_DIFF_POS, any_adhesive_contact, has_adhesion, point_jacobians
from kinedyn.engine.passive_fluid import fluid
from kinedyn.engine.passive_plastic import rotation_from_ref, spring_ref
from kinedyn.engine.smooth_flex import flex_passive_entry
from kinedyn.engine.smooth_tendon import tendon_passive_entry
from kinedyn.engine.support import apply_ft
from kinedyn.engine.types import (
    COUNT_NCON,
    DSBL_CONTACT,
    DSBL_DAMPER,
    DSBL_GRAVITY,
    DSBL_SPRING,
    JNT_BALL,
    JNT_FREE,
    OPT_DISABLEFLAGS,
)
from kinedyn.engine.util_poly import dof_damping_coefs, poly_force


@kernel(inline="always")
def _passive(
    # model
    jnt_type, jnt_qposadr, jnt_dofadr, jnt_stiffness, jnt_stiffnesspoly, qpos_spring, jnt_plasticadr,
    disableflags,
    # data in
    qpos, plastic,
    # data out (qfrc_passive is summed by passive_entry, after the tendon forces)
    qfrc_spring, qfrc_damper, qfrc_passive,
    # scratch: quaternion and vector rows
    sq, sv,
):
    DIF = 0
    njnt = jnt_type.shape[0]
    qfrc_spring[:] = 0.0
    qfrc_damper[:] = 0.0

    # joint springs: qfrc_spring = -k(x) x, x = qpos - qpos_spring (or the plastic rest position of
    # a spring with a yield: passive_plastic), on the manifold for quaternions;
    # k(x) = stiffness + poly[0] x + poly[1] x^2 with x the norm of the translation or rotation
    # vector for free and ball joints (mju_polyForce)
    if not disableflags & DSBL_SPRING:
        for j in range(njnt):
            stiffness = jnt_stiffness[j]
            p0, p1 = jnt_stiffnesspoly[j, 0], jnt_stiffnesspoly[j, 1]
            if stiffness == 0.0 and p0 == 0.0 and p1 == 0.0:
                continue
            padr = jnt_qposadr[j]
            dadr = jnt_dofadr[j]
            jtype = jnt_type[j]
            if jtype == JNT_FREE:
                for k in range(3):
                    sv[DIF, k] = qpos[padr + k] - qpos_spring[padr + k]
                r = math.sqrt(sv[DIF, 0] * sv[DIF, 0] + sv[DIF, 1] * sv[DIF, 1] + sv[DIF, 2] * sv[DIF, 2])
                k_r = poly_force(stiffness, p0, p1, r, False)
                for k in range(3):
                    qfrc_spring[dadr + k] = -k_r * sv[DIF, k]
                padr += 3
                dadr += 3
            # the rest position: qpos_spring, or the plastic state of a spring with a yield
            ref, radr = spring_ref(jnt_plasticadr, plastic, qpos_spring, j, padr)
            if jtype == JNT_FREE or jtype == JNT_BALL:
                # rotation from the spring orientation to the current one, as a 3-vector (sv[0])
                r = rotation_from_ref(qpos, padr, ref, radr, sq, sv)
                k_r = poly_force(stiffness, p0, p1, r, False)
                for k in range(3):
                    qfrc_spring[dadr + k] = -k_r * sv[DIF, k]
            else:
                x = qpos[padr] - ref[radr]
                qfrc_spring[dadr] = -x * poly_force(stiffness, p0, p1, x, False)


@kernel(inline="always")
def _dof_dampers(dof_jntid, jnt_actuatorid, dof_damping, dof_dampingpoly, actuator_damping,
                 actuator_dampingpoly, actuator_gear, actuator_trnid, actuator_trntype, disableflags, qvel,
                 qfrc_damper):
    """qfrc_damper = -v k(v), k(v) = damping + poly[0] |v| + poly[1] v^2 with the damping of the
    actuators on the dof's joint added (the dof loop of mj_springdamper). Inlined into the entry:
    as a call, its 12 arrays are passed field by field."""
    if disableflags & DSBL_DAMPER:
        return
    for v in range(qvel.shape[0]):
        damping, p0, p1 = dof_damping_coefs(v, dof_jntid, jnt_actuatorid, dof_damping, dof_dampingpoly,
                                            actuator_damping, actuator_dampingpoly, actuator_gear,
                                            actuator_trnid, actuator_trntype)
        if damping != 0.0 or p0 != 0.0 or p1 != 0.0:
            qv = qvel[v]
            qfrc_damper[v] = -qv * poly_force(damping, p0, p1, qv, True)


@handle_entry
def passive_entry(m, d):
    _passive(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, m.jnt_stiffness, m.jnt_stiffnesspoly, m.qpos_spring,
             m.jnt_plasticadr, m.opt_flags[OPT_DISABLEFLAGS], d.qpos, d.plastic, d.qfrc_spring, d.qfrc_damper,
             d.qfrc_passive, d.scratch_quat, d.scratch_vec)
    _dof_dampers(m.dof_jntid, m.jnt_actuatorid, m.dof_damping, m.dof_dampingpoly, m.actuator_damping,
                 m.actuator_dampingpoly, m.actuator_gear, m.actuator_trnid, m.actuator_trntype,
                 m.opt_flags[OPT_DISABLEFLAGS], d.qvel, d.qfrc_damper)
    # flex-edge and tendon spring-dampers join the joint ones before the sum, in mj_passive's order
    if m.nflex > 0:
        flex_passive_entry(m, d)
    tendon_passive_entry(m, d)
    for v in range(m.nv):
        d.qfrc_passive[v] = d.qfrc_spring[v] + d.qfrc_damper[v]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    if flags & DSBL_SPRING and flags & DSBL_DAMPER:
        # no passive force at all (mj_passive returns early)
        for v in range(m.nv):
            d.qfrc_fluid[v] = 0.0
            d.qfrc_gravcomp[v] = 0.0
        _adhesion(m, d)
        return
    has_gravcomp = _gravcomp_entry(m, d) if _any_gravcomp(m) else _zero_gravcomp(m, d)
    if fluid(m, d):
        for v in range(m.nv):
            d.qfrc_passive[v] += d.qfrc_fluid[v]
    if _adhesion(m, d):
        for v in range(m.nv):
            d.qfrc_passive[v] += d.qfrc_adhesion[v]
    if has_gravcomp:
        for v in range(m.nv):
            if not m.jnt_actgravcomp[m.dof_jntid[v]]:
                d.qfrc_passive[v] += d.qfrc_gravcomp[v]


# Gravity compensation and adhesion are units of their own, compiled only for models that have
# them (``needed``): the guards below are the same tests in compiled code.

def _has_gravcomp(m) -> bool:
    return bool(np.any(m.body_gravcomp != 0.0))


@kernel
def _any_gravcomp(m):
    for b in range(1, m.body_gravcomp.shape[0]):
        if m.body_gravcomp[b] != 0.0:
            return True
    return False


@kernel
def _zero_gravcomp(m, d):
    for v in range(m.nv):
        d.qfrc_gravcomp[v] = 0.0
    return False


@handle_entry(returns="boolean", needed=_has_gravcomp)
def _gravcomp_entry(m, d):
    return _gravcomp(m, d)


@handle_entry(returns="boolean", needed=has_adhesion)
def _adhesion_entry(m, d):
    return _adhesion_forces(m, d)


@kernel
def _adhesion(m, d):
    """qfrc_adhesion (below); whether any contact adheres."""
    if any_adhesive_contact(d):
        return _adhesion_entry(m, d)
    for v in range(m.nv):
        d.qfrc_adhesion[v] = 0.0
    return False


@kernel
def _gravcomp(m, d):
    """qfrc_gravcomp = sum over bodies of J(xipos)' (-gravcomp * mass * gravity); whether any
    body has gravcomp (mj_gravcomp: none without gravity)."""
    for v in range(m.nv):
        d.qfrc_gravcomp[v] = 0.0
    g = m.opt_gravity
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_GRAVITY or (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) == 0.0:
        return False
    has_gravcomp = False
    for b in range(1, m.body_gravcomp.shape[0]):
        if m.body_gravcomp[b] == 0.0:
            continue
        has_gravcomp = True
        s = -(m.body_mass[b] * m.body_gravcomp[b])
        p = d.xipos[b]
        apply_ft(m, d, g[0] * s, g[1] * s, g[2] * s, 0.0, 0.0, 0.0, p[0], p[1], p[2], b, d.qfrc_gravcomp)
    return has_gravcomp


@kernel
def _adhesion_forces(m, d):
    """qfrc_adhesion = sum over adhesive contacts (not excluded beyond the gap) of
    -adhesion * J_n', J_n the contact normal's Jacobian (frame row 0 times the difference of the
    point Jacobians of geom[1]'s and geom[0]'s bodies); whether there was any (mj_adhesion).
    Nothing when contacts are disabled, or springs and dampers both are (mj_passive returns)."""
    nv = m.nv
    for v in range(nv):
        d.qfrc_adhesion[v] = 0.0
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    ncon = d.efc_counts[COUNT_NCON]
    if flags & DSBL_CONTACT or (flags & DSBL_SPRING and flags & DSBL_DAMPER) or ncon == 0 or nv == 0:
        return False
    any_adhesion = False
    jac = d.scratch_cjac
    for i in range(ncon):
        adhesion = d.contact_adhesion[i]
        if adhesion == 0 or d.contact_exclude[i] > 1:
            continue
        any_adhesion = True
        b0 = m.geom_bodyid[d.contact_geom[i, 0]]
        b1 = m.geom_bodyid[d.contact_geom[i, 1]]
        px, py, pz = d.contact_pos[i, 0], d.contact_pos[i, 1], d.contact_pos[i, 2]
        point_jacobians(m, d, jac, px, py, pz, b1, px, py, pz, b0)
        n0, n1, n2 = d.contact_frame[i, 0, 0], d.contact_frame[i, 0, 1], d.contact_frame[i, 0, 2]
        for v in range(nv):
            jn = n0 * jac[JAC_DIFF_POS, 0, v] + n1 * jac[JAC_DIFF_POS, 1, v] + n2 * jac[JAC_DIFF_POS, 2, v]
            d.qfrc_adhesion[v] += jn * -adhesion
    return any_adhesion


_PASSIVE = FastEntry(passive_entry)


def passive(m, d) -> None:
    """Passive forces: joint and tendon springs and dampers, fluid forces, adhesion, gravity
    compensation.

    Reads: qpos, qvel, ten_length, ten_velocity, ten_J, the contacts, xipos, cvel, geom poses.
    Writes: qfrc_spring, qfrc_damper, qfrc_fluid, qfrc_adhesion, qfrc_gravcomp, qfrc_passive.
    Mirrors mj_passive.
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "passive")
    except AttributeError:
        bad_model_data(m, d, "passive")
    call_rebinding(_PASSIVE, m, d)


