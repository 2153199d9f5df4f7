"""Tendon armature: the inertia of a tendon's length velocity, in M and in the bias forces.

Mirrors ``mj_tendonArmature``, ``mj_tendonBias`` and ``mj_tendonDot`` (MuJoCo 4.0,
engine_core_smooth.c). A tendon with armature ``a`` (``tendon_armature`` plus gear[0]^2 times
the ``armature`` of the actuators on it, mj_actuatorArmature) has the kinetic energy
``a/2 (ten_J qvel)^2``. Its Lagrangian adds

    M        += a ten_J^T ten_J                      (mj_makeM, after mj_crb)
    qfrc_bias += ten_J^T a (d/dt ten_J) qvel          (mj_fwdVelocity and mj_inverse, after mj_rne)

MuJoCo adds the first term only at the entries of M's tree-sparse pattern (the compiler demotes
"simple" bodies on a spatial path with armature so that their rows keep their ancestors;
couplings between dofs on different branches are dropped), and so does kinedyn. A fixed tendon
has a constant Jacobian: no bias term. A spatial tendon's (d/dt ten_J) qvel is, per straight
segment between sites on different bodies, with unit direction ``u`` and length ``L``,

    u . (Jdot_2 - Jdot_1) qvel  +  (v_2 - v_1) . (I - u u^T) (v_2 - v_1) / L,

over the pulley's divisor; geom wrapping is refused by the compiler, as by MuJoCo's.

Both terms are units of their own (``needed=``), reached through ``used``: a model without
tendon armature compiles neither and computes exactly as before.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.constraint import _jac_dot_point
from kinedyn.engine.types import MINVAL, TRN_TENDON, WRAP_JOINT, WRAP_PULLEY, TrnType
from kinedyn.engine.util_poly import actuator_armature


def has_tendon_armature(m) -> bool:
    """Whether a tendon has armature, its own or an actuator's (the units' ``needed``)."""
    if m.ntendon == 0:
        return False
    if np.any(m.tendon_armature != 0.0):
        return True
    on_tendon = m.actuator_trntype == int(TrnType.TENDON)
    return bool(np.any(m.actuator_armature[on_tendon] != 0.0))


@kernel
def used(m):
    """has_tendon_armature, in compiled code: the guard of the two units' calls."""
    for k in range(m.tendon_armature.shape[0]):
        if m.tendon_armature[k] != 0.0:
            return True
    for i in range(m.actuator_armature.shape[0]):
        if m.actuator_trntype[i] == TRN_TENDON and m.actuator_armature[i] != 0.0:
            return True
    return False


@kernel
def _armature(m, k):
    """tendon_armature[k] plus the actuators' (mj_tendonArmature's sum)."""
    armature = m.tendon_armature[k]
    actuatorid = m.tendon_actuatorid[k]
    if actuatorid != -1:
        armature += actuator_armature(actuatorid, k, True, m.actuator_armature, m.actuator_gear,
                                      m.actuator_trnid, m.actuator_trntype)
    else:
        armature += 0.0
    return armature


@handle_entry(needed=has_tendon_armature)
def tendon_armature_entry(m, d):
    """M += armature ten_J^T ten_J at M's pattern, tendon by tendon (mj_tendonArmature)."""
    J, M = d.ten_J, d.M
    for k in range(m.tendon_armature.shape[0]):
        armature = _armature(m, k)
        if armature == 0.0:
            continue
        for i in range(m.nv):
            ji = J[k, i]
            if ji == 0.0:
                continue
            # row i of M: its ancestors and itself (mju_addToSclSparseInc: common entries only)
            scl = armature * ji
            adr = m.M_rowadr[i]
            for t in range(m.M_rownnz[i]):
                M[adr + t] += scl * J[k, m.M_colind[adr + t]]


@kernel
def _point_velocity(m, d, site, out):
    """Linear velocity of a site in the world frame (mj_objectVelocity, flg_local=0): cvel of its
    body moved from the subtree com to the site."""
    b = m.site_bodyid[site]
    r = m.body_rootid[b]
    cv = d.cvel
    ox = d.site_xpos[site, 0] - d.subtree_com[r, 0]
    oy = d.site_xpos[site, 1] - d.subtree_com[r, 1]
    oz = d.site_xpos[site, 2] - d.subtree_com[r, 2]
    out[0] = cv[b, 3] - (oy * cv[b, 2] - oz * cv[b, 1])
    out[1] = cv[b, 4] - (oz * cv[b, 0] - ox * cv[b, 2])
    out[2] = cv[b, 5] - (ox * cv[b, 1] - oy * cv[b, 0])


@kernel
def tendon_dot(m, d, k, buf):
    """(d/dt ten_J[k]) qvel (mj_tendonDot with vec = qvel); 0 for a fixed tendon. ``buf``: four
    6-vector scratch rows."""
    adr = m.tendon_adr[k]
    num = m.tendon_num[k]
    if m.wrap_type[adr] == WRAP_JOINT:
        return 0.0
    res = 0.0
    divisor = 1.0
    j = 0
    while j < num - 1:
        t0 = m.wrap_type[adr + j]
        t1 = m.wrap_type[adr + j + 1]
        if t0 == WRAP_PULLEY or t1 == WRAP_PULLEY:
            if t0 == WRAP_PULLEY:
                divisor = m.wrap_prm[adr + j]
            j += 1
            continue
        s0 = m.wrap_objid[adr + j]
        s1 = m.wrap_objid[adr + j + 1]
        b0 = m.site_bodyid[s0]
        b1 = m.site_bodyid[s1]
        if b0 != b1:
            # unit direction and the rate of change of the direction
            ux = d.site_xpos[s1, 0] - d.site_xpos[s0, 0]
            uy = d.site_xpos[s1, 1] - d.site_xpos[s0, 1]
            uz = d.site_xpos[s1, 2] - d.site_xpos[s0, 2]
            norm = math.sqrt(ux * ux + uy * uy + uz * uz)
            if norm < MINVAL:  # mju_normalize3: a too short vector becomes (1, 0, 0)
                ux, uy, uz = 1.0, 0.0, 0.0
            else:
                ux, uy, uz = ux / norm, uy / norm, uz / norm
            _point_velocity(m, d, s0, buf[2])
            _point_velocity(m, d, s1, buf[3])
            wx = buf[3, 0] - buf[2, 0]
            wy = buf[3, 1] - buf[2, 1]
            wz = buf[3, 2] - buf[2, 2]
            dot = ux * wx + uy * wy + uz * wz
            inv = 1.0 / norm if norm > MINVAL else 0.0
            dvx = (wx - dot * ux) * inv
            dvy = (wy - dot * uy) * inv
            dvz = (wz - dot * uz) * inv
            # first term: u . (Jdot_2 - Jdot_1) qvel; second: (J_2 - J_1) qvel . d/dt u
            _jac_dot_point(m, d, buf, 0, d.site_xpos[s0, 0], d.site_xpos[s0, 1], d.site_xpos[s0, 2], b0,
                           False)
            _jac_dot_point(m, d, buf, 1, d.site_xpos[s1, 0], d.site_xpos[s1, 1], d.site_xpos[s1, 2], b1,
                           False)
            first = (ux * (buf[1, 0] - buf[0, 0]) + uy * (buf[1, 1] - buf[0, 1])
                     + uz * (buf[1, 2] - buf[0, 2]))
            second = dvx * wx + dvy * wy + dvz * wz
            res += first / divisor + second / divisor
        j += 1
    return res


@handle_entry(args="float64[::1]", needed=has_tendon_armature)
def tendon_bias_entry(m, d, qfrc):
    """qfrc += ten_J^T armature (d/dt ten_J) qvel for each tendon with armature (mj_tendonBias)."""
    J = d.ten_J
    for k in range(m.tendon_armature.shape[0]):
        armature = _armature(m, k)
        if armature == 0.0:
            continue
        coef = armature * tendon_dot(m, d, k, d.scratch_vec)
        if coef != 0.0:
            for v in range(m.nv):
                if J[k, v] != 0.0:
                    qfrc[v] += coef * J[k, v]


_TENDON_ARMATURE = FastEntry(tendon_armature_entry)


def tendon_armature(m, d) -> None:
    """Add each tendon's armature term ``a ten_J' ten_J`` to M (after ``crb``; nothing without
    tendon armature). Reads: ten_J, M. Writes: M. Mirrors mj_tendonArmature; ``forward``'s
    position stage calls it, as mj_makeM."""
    check_model_data(m, d, "tendon_armature")
    if has_tendon_armature(m):
        _TENDON_ARMATURE.call(m._ptr, d._ptr)
