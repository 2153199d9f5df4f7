"""Tendons: lengths, Jacobians, velocities and spring-damper forces (fixed tendons).

Mirrors ``mj_tendon`` (engine_core_smooth.c), the tendon part of ``mj_fwdVelocity``
(engine_forward.c) and the tendon spring-dampers of ``mj_springdamper``
(engine_passive.c). A fixed tendon is a linear combination of hinge and slide
joint positions,

    ten_length = sum_k coef_k * qpos[jnt_qposadr[j_k]],      ten_J[dof of j_k] = coef_k,

stored as the path ``wrap_objid`` (joints) / ``wrap_prm`` (coefficients) from
``tendon_adr``. ``ten_J`` is dense here; MuJoCo keeps it sparse with the pattern
``ten_J_rownnz/rowadr/colind`` on mjModel. Spatial tendons are rejected by the
compiler for now.

The tendon spring has a deadband: with ``[lo, hi] = tendon_lengthspring`` the force
along the tendon is ``-stiffness * (length - hi)`` above ``hi``,
``-stiffness * (length - lo)`` below ``lo`` and zero between; the damper force is
``-damping * ten_velocity``. Both are mapped to joint space with ``ten_J^T``.
"""

from __future__ import annotations

from numba import njit

from kinedyn.types import DSBL_DAMPER, DSBL_SPRING, WRAP_JOINT


@njit(cache=True)
def _tendon(
    # model
    tendon_adr, tendon_num, wrap_type, wrap_objid, wrap_prm, jnt_qposadr, jnt_dofadr,
    # data in
    qpos,
    # data out
    ten_length, ten_J, ten_wrapadr, ten_wrapnum,
):
    """Tendon lengths and Jacobians (mj_tendon, fixed tendons)."""
    ntendon = tendon_adr.shape[0]
    wrapcount = 0  # fixed tendons add no path points (wrap_xpos)
    for i in range(ntendon):
        ten_length[i] = 0.0
        ten_J[i, :] = 0.0
        ten_wrapadr[i] = wrapcount
        ten_wrapnum[i] = 0
        adr = tendon_adr[i]
        if wrap_type[adr] != WRAP_JOINT:
            continue  # spatial: not compiled in this release
        for k in range(adr, adr + tendon_num[i]):
            j = wrap_objid[k]
            coef = wrap_prm[k]
            # length is linear in the joint positions; the Jacobian holds the coefficients
            ten_length[i] += coef * qpos[jnt_qposadr[j]]
            ten_J[i, jnt_dofadr[j]] += coef


@njit(cache=True)
def ten_velocity_kernel(ten_J, qvel, ten_velocity):
    """ten_velocity = ten_J qvel (mj_fwdVelocity), over the non-zeros in dof order."""
    for i in range(ten_J.shape[0]):
        acc = 0.0
        for v in range(qvel.shape[0]):
            jv = ten_J[i, v]
            if jv != 0.0:
                acc += jv * qvel[v]
        ten_velocity[i] = acc


@njit(cache=True)
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
            m.jnt_dofadr, d.qpos, d.ten_length, d.ten_J, d.ten_wrapadr, d.ten_wrapnum)


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
