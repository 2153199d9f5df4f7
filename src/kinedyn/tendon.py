"""Tendons: lengths, Jacobians, velocities and spring-damper forces (fixed and spatial tendons).

Mirrors ``mj_tendon`` (engine_core_smooth.c), the tendon part of ``mj_fwdVelocity``
(engine_forward.c) and the tendon spring-dampers of ``mj_springdamper``
(engine_passive.c). A fixed tendon is a linear combination of hinge and slide
joint positions,

    ten_length = sum_k coef_k * qpos[jnt_qposadr[j_k]],      ten_J[dof of j_k] = coef_k,

stored as the path ``wrap_objid`` (joints) / ``wrap_prm`` (coefficients) from
``tendon_adr``. ``ten_J`` is dense here; MuJoCo keeps it sparse with the pattern
``ten_J_rownnz/rowadr/colind`` on mjModel. Spatial tendons run through sites and
pulleys (see ``_tendon``); wrapping around sphere and cylinder geoms is rejected by
the compiler for now.

The tendon spring has a deadband: with ``[lo, hi] = tendon_lengthspring`` the force
along the tendon is ``-stiffness * (length - hi)`` above ``hi``,
``-stiffness * (length - lo)`` below ``lo`` and zero between; the damper force is
``-damping * ten_velocity``. Both are mapped to joint space with ``ten_J^T``.
"""

from __future__ import annotations

import math

from numba import njit

from kinedyn._handle import kernel
from kinedyn.jacobian import jac_kernel
from kinedyn.types import DSBL_DAMPER, DSBL_SPRING, MINVAL, WRAP_JOINT, WRAP_PULLEY


@kernel
def _tendon(
    # model
    tendon_adr, tendon_num, wrap_type, wrap_objid, wrap_prm, jnt_qposadr, jnt_dofadr,
    site_bodyid, body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
    # data in
    qpos, site_xpos, subtree_com, cdof,
    # data out
    ten_length, ten_J, ten_wrapadr, ten_wrapnum,
    # scratch: Jacobians (6, 3, nv)
    jac,
):
    """Tendon lengths and Jacobians (mj_tendon): fixed tendons and spatial tendons through sites.

    A spatial tendon's length is the sum of the straight segments between consecutive
    sites, each divided by the divisor of the last pulley before it (1 before any); a
    segment whose ends move with different bodies adds ``u^T (J_end - J_start) / divisor``
    to ``ten_J``, ``u`` the unit vector along it. ``ten_wrapnum`` counts path points
    (sites, and a pulley marker each) as MuJoCo does.
    """
    ntendon = tendon_adr.shape[0]
    nv = ten_J.shape[1]
    wrapcount = 0
    for i in range(ntendon):
        ten_length[i] = 0.0
        ten_J[i, :] = 0.0
        ten_wrapadr[i] = wrapcount
        ten_wrapnum[i] = 0
        adr = tendon_adr[i]
        num = tendon_num[i]
        if wrap_type[adr] == WRAP_JOINT:
            for k in range(adr, adr + num):
                j = wrap_objid[k]
                coef = wrap_prm[k]
                # length is linear in the joint positions; the Jacobian holds the coefficients
                ten_length[i] += coef * qpos[jnt_qposadr[j]]
                ten_J[i, jnt_dofadr[j]] += coef
            continue
        # spatial tendon (sites and pulleys; the compiler rejects geom wrapping)
        divisor = 1.0
        j = 0
        while j < num - 1:
            type0 = wrap_type[adr + j]
            type1 = wrap_type[adr + j + 1]
            if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                if type0 == WRAP_PULLEY:
                    divisor = wrap_prm[adr + j]
                    ten_wrapnum[i] += 1
                    wrapcount += 1
                j += 1
                continue
            s0 = wrap_objid[adr + j]
            s1 = wrap_objid[adr + j + 1]
            dx = site_xpos[s1, 0] - site_xpos[s0, 0]
            dy = site_xpos[s1, 1] - site_xpos[s0, 1]
            dz = site_xpos[s1, 2] - site_xpos[s0, 2]
            dist = math.sqrt(dx * dx + dy * dy + dz * dz)
            ten_length[i] += dist / divisor
            b0 = site_bodyid[s0]
            b1 = site_bodyid[s1]
            if b0 != b1:
                # unit direction (mju_normalize3), Jacobian difference of the two ends
                if dist < MINVAL:
                    dx, dy, dz = 1.0, 0.0, 0.0
                else:
                    dx /= dist
                    dy /= dist
                    dz /= dist
                jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com,
                          cdof, site_xpos[s0, 0], site_xpos[s0, 1], site_xpos[s0, 2], b0, jac, 0, 1)
                jac_kernel(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com,
                          cdof, site_xpos[s1, 0], site_xpos[s1, 1], site_xpos[s1, 2], b1, jac, 2, 3)
                inv = 1.0 / divisor
                for v in range(nv):
                    t = (jac[2, 0, v] - jac[0, 0, v]) * dx + (jac[2, 1, v] - jac[0, 1, v]) * dy \
                        + (jac[2, 2, v] - jac[0, 2, v]) * dz
                    ten_J[i, v] += t * inv
            ten_wrapnum[i] += 1
            wrapcount += 1
            j += 1
            # the last site before a pulley or the end of the path
            if j == num - 1 or wrap_type[adr + j + 1] == WRAP_PULLEY:
                ten_wrapnum[i] += 1
                wrapcount += 1


@kernel
def ten_velocity_kernel(ten_J, qvel, ten_velocity):
    """ten_velocity = ten_J qvel (mj_fwdVelocity), over the non-zeros in dof order."""
    for i in range(ten_J.shape[0]):
        acc = 0.0
        for v in range(qvel.shape[0]):
            jv = ten_J[i, v]
            if jv != 0.0:
                acc += jv * qvel[v]
        ten_velocity[i] = acc


@kernel
def tendon_passive_kernel(
    # model
    tendon_stiffness, tendon_damping, tendon_lengthspring, disableflags,
    # data in
    ten_length, ten_velocity, ten_J,
    # data out (accumulated)
    qfrc_spring, qfrc_damper,
):
    """Tendon spring-dampers mapped to joint space (the tendon loop of mj_springdamper)."""
    enbl_spring = not disableflags & DSBL_SPRING
    enbl_damper = not disableflags & DSBL_DAMPER
    nv = ten_J.shape[1]
    for i in range(tendon_stiffness.shape[0]):
        stiffness = tendon_stiffness[i] if enbl_spring else 0.0
        damping = tendon_damping[i] if enbl_damper else 0.0
        if stiffness == 0.0 and damping == 0.0:
            continue
        # spring: deadband between lengthspring[0] and lengthspring[1]
        length = ten_length[i]
        lower = tendon_lengthspring[i, 0]
        upper = tendon_lengthspring[i, 1]
        if length > upper:
            x = length - upper
        elif length < lower:
            x = length - lower
        else:
            x = 0.0
        frc_spring = -x * stiffness if enbl_spring else 0.0
        frc_damper = -ten_velocity[i] * damping if enbl_damper else 0.0
        # qfrc += ten_J^T frc, over the non-zeros of the tendon's row
        if frc_spring != 0.0 or frc_damper != 0.0:
            for v in range(nv):
                jv = ten_J[i, v]
                if jv != 0.0:
                    qfrc_spring[v] += jv * frc_spring
                    qfrc_damper[v] += jv * frc_damper


@njit(cache=True)
def tendon_entry(m, d):
    _tendon(m.tendon_adr, m.tendon_num, m.wrap_type, m.wrap_objid, m.wrap_prm, m.jnt_qposadr,
            m.jnt_dofadr, m.site_bodyid, m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid,
            m.dof_parentid, d.qpos, d.site_xpos, d.subtree_com, d.cdof, d.ten_length, d.ten_J, d.ten_wrapadr,
            d.ten_wrapnum, d.scratch_jac)


@njit(cache=True)
def ten_velocity_entry(m, d):
    ten_velocity_kernel(d.ten_J, d.qvel, d.ten_velocity)


@njit(cache=True)
def tendon_passive_entry(m, d):
    tendon_passive_kernel(m.tendon_stiffness, m.tendon_damping, m.tendon_lengthspring, m.opt_flags[1],
                          d.ten_length, d.ten_velocity, d.ten_J, d.qfrc_spring, d.qfrc_damper)


def tendon(m, d) -> None:
    """Tendon lengths and Jacobians.

    Reads: qpos. Writes: ten_length, ten_J, ten_wrapadr, ten_wrapnum. Mirrors mj_tendon.
    """
    tendon_entry(m._handle, d._handle)
