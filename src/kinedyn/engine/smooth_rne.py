"""Velocity stage and the equations of motion: com velocities, RNE, passive forces.

Mirrors ``mj_comVel``, ``mj_rne`` (engine_core_smooth.c), ``mj_passive``
(engine_passive.c) and ``mj_fwdAcceleration`` (engine_forward.c).

The equation of motion solved by ``forward`` is

    M(q) qacc = qfrc_passive - qfrc_bias + qfrc_applied + J^T xfrc_applied + qfrc_actuator

where ``qfrc_bias = C(q, qvel)`` (Coriolis, centrifugal and gravity forces) comes
from recursive Newton-Euler with zero acceleration.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import OutArgument, bad_model_data, check_model_data
from kinedyn.engine.smooth_kinematics import com_pos_entry, kinematics_entry
from kinedyn.engine.types import DSBL_GRAVITY, JNT_BALL, JNT_FREE, OPT_DISABLEFLAGS
from kinedyn.engine.util_poly import actuator_armature
from kinedyn.engine.util_spatial import (
    add6,
    add_scaled6,
    cross_force,
    cross_motion,
    dot6,
    inert_vec,
    row6,
    set_row6,
)


@kernel(inline="always")
def _add_dof3(vel, cdof, qvel, v):
    """vel + (cdof[v:v+3] as a 6x3 matrix) qvel[v:v+3]: mju_mulDofVec's sum over the three dofs
    first, then mju_addTo (bit-equal to MuJoCo 4.0's mj_comVel for free and ball joints)."""
    return (vel[0] + ((cdof[v, 0] * qvel[v] + cdof[v + 1, 0] * qvel[v + 1]) + cdof[v + 2, 0] * qvel[v + 2]),
            vel[1] + ((cdof[v, 1] * qvel[v] + cdof[v + 1, 1] * qvel[v + 1]) + cdof[v + 2, 1] * qvel[v + 2]),
            vel[2] + ((cdof[v, 2] * qvel[v] + cdof[v + 1, 2] * qvel[v + 1]) + cdof[v + 2, 2] * qvel[v + 2]),
            vel[3] + ((cdof[v, 3] * qvel[v] + cdof[v + 1, 3] * qvel[v + 1]) + cdof[v + 2, 3] * qvel[v + 2]),
            vel[4] + ((cdof[v, 4] * qvel[v] + cdof[v + 1, 4] * qvel[v + 1]) + cdof[v + 2, 4] * qvel[v + 2]),
            vel[5] + ((cdof[v, 5] * qvel[v] + cdof[v + 1, 5] * qvel[v + 1]) + cdof[v + 2, 5] * qvel[v + 2]))


@kernel(inline="always")
def _com_vel_body(
    b,
    # model
    body_parentid, body_dofnum, body_dofadr, dof_jntid, jnt_type,
    # data in
    qvel, cdof,
    # data out
    cvel, cdof_dot,
):
    """One body of mj_comVel's forward pass: cvel[b] and the cdof_dot of b's dofs, from the
    parent's cvel. Returns cvel[b] as a 6-tuple.

    cvel = cvel_parent + sum(cdof * qvel); cdof_dot = cvel x cdof. vel accumulates the
    body's velocity as its dofs are added (a 6-tuple: see util_spatial).
    """
    vel = row6(cvel, body_parentid[b])
    bda = body_dofadr[b]
    j = 0
    while j < body_dofnum[b]:
        v = bda + j
        jtype = jnt_type[dof_jntid[v]]
        if jtype == JNT_FREE:
            # translations: cdof is constant in the world, so cdof_dot = 0
            for k in range(3):
                set_row6(cdof_dot, v + k, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
            vel = _add_dof3(vel, cdof, qvel, v)
            j += 3
            v += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            # the three rotations use the velocity before this joint's own rotation
            for k in range(3):
                set_row6(cdof_dot, v + k, cross_motion(vel, cdof, v + k))
            vel = _add_dof3(vel, cdof, qvel, v)
            j += 3
        else:
            # hinge or slide: cdof_dot with the velocity before this dof (cdof x cdof = 0)
            set_row6(cdof_dot, v, cross_motion(vel, cdof, v))
            vel = add_scaled6(vel, cdof, v, qvel[v])
            j += 1
    set_row6(cvel, b, vel)
    return vel


@kernel
def _com_vel(
    # model
    body_parentid, body_dofnum, body_dofadr, dof_jntid, jnt_type,
    # data in
    qvel, cdof,
    # data out
    cvel, cdof_dot,
):
    for t in range(6):
        cvel[0, t] = 0.0
    for b in range(1, body_parentid.shape[0]):
        _com_vel_body(b, body_parentid, body_dofnum, body_dofadr, dof_jntid, jnt_type, qvel, cdof, cvel,
                      cdof_dot)


@kernel(inline="always")
def _rne_world(gravity, disableflags, cacc):
    """World acceleration = -gravity: gravity enters as a fictitious upward acceleration of the base."""
    for t in range(6):
        cacc[0, t] = 0.0
    if not disableflags & DSBL_GRAVITY:
        for k in range(3):
            cacc[0, 3 + k] = -gravity[k]


@kernel(inline="always")
def _dof_sum(mat, vec, adr, n):
    """sum over the n dofs from adr of mat[dof] vec[dof], in dof order (mju_mulDofVec)."""
    acc = (mat[adr, 0] * vec[adr], mat[adr, 1] * vec[adr], mat[adr, 2] * vec[adr],
           mat[adr, 3] * vec[adr], mat[adr, 4] * vec[adr], mat[adr, 5] * vec[adr])
    for v in range(adr + 1, adr + n):
        acc = add_scaled6(acc, mat, v, vec[v])
    return acc


@kernel(inline="always")
def _rne_body(b, body_parentid, body_dofnum, body_dofadr, qvel, qacc, cdof, cdof_dot, cinert, vel, flg_acc,
              cacc, cfrc_body):
    """One body of mj_rne's forward pass: cacc[b] and cfrc_body[b]; vel is cvel[b] as a 6-tuple.

    The body's acceleration is a 6-tuple, in registers, not a row written and read back
    (see util_spatial).
    """
    bda = body_dofadr[b]
    n = body_dofnum[b]
    # cacc = cacc_parent + cdof_dot * qvel, then += cdof * qacc: each product summed over the
    # body's dofs first and then added (mju_mulDofVec), MuJoCo's rounding for multi-dof bodies
    acc = row6(cacc, body_parentid[b])
    if n > 0:
        acc = add6(acc, _dof_sum(cdof_dot, qvel, bda, n))
        if flg_acc:
            acc = add6(acc, _dof_sum(cdof, qacc, bda, n))
    set_row6(cacc, b, acc)
    # cfrc_body = cinert * cacc + cvel x* (cinert * cvel)
    set_row6(cfrc_body, b, add6(inert_vec(cinert, b, acc), cross_force(vel, inert_vec(cinert, b, vel))))


@kernel(inline="always")
def _rne_backward(body_parentid, dof_bodyid, cdof, cfrc_body, result):
    """mj_rne after the forward pass: sum cfrc_body into the parents, project onto the dofs."""
    # backward pass over bodies: accumulate cfrc_body from children
    for t in range(6):
        cfrc_body[0, t] = 0.0
    for b in range(body_parentid.shape[0] - 1, 0, -1):
        p = body_parentid[b]
        if p > 0:
            for t in range(6):
                cfrc_body[p, t] += cfrc_body[b, t]
    # project onto the dofs: result = cdof . cfrc_body
    for v in range(dof_bodyid.shape[0]):
        result[v] = dot6(cdof, v, cfrc_body, dof_bodyid[v])


@kernel
def _rne(
    # model
    body_parentid, body_dofnum, body_dofadr, dof_bodyid, gravity, disableflags,
    # data in
    qvel, qacc, cdof, cdof_dot, cinert, cvel, flg_acc,
    # data out
    result,
    # scratch: per-body accelerations and forces
    cacc, cfrc_body,
):
    _rne_world(gravity, disableflags, cacc)
    for b in range(1, body_parentid.shape[0]):
        _rne_body(b, body_parentid, body_dofnum, body_dofadr, qvel, qacc, cdof, cdof_dot, cinert,
                  row6(cvel, b), flg_acc, cacc, cfrc_body)
    _rne_backward(body_parentid, dof_bodyid, cdof, cfrc_body, result)


# Inlined into its entry, as actuation._transmission.
@kernel(inline="always")
def _com_vel_bias(
    # model
    body_parentid, body_dofnum, body_dofadr, dof_jntid, jnt_type, dof_bodyid, gravity, disableflags,
    # data in
    qvel, cdof, cinert,
    # data out
    cvel, cdof_dot, qfrc_bias,
    # scratch: per-body accelerations and forces
    cacc, cfrc_body,
):
    """_com_vel then _rne(flg_acc=False) into qfrc_bias, in one pass over the bodies: rne's step
    for a body uses the velocity com_vel's step just computed, still in registers."""
    for t in range(6):
        cvel[0, t] = 0.0
    _rne_world(gravity, disableflags, cacc)
    for b in range(1, body_parentid.shape[0]):
        vel = _com_vel_body(b, body_parentid, body_dofnum, body_dofadr, dof_jntid, jnt_type, qvel, cdof, cvel,
                            cdof_dot)
        _rne_body(b, body_parentid, body_dofnum, body_dofadr, qvel, qvel, cdof, cdof_dot, cinert, vel, False,
                  cacc, cfrc_body)
    _rne_backward(body_parentid, dof_bodyid, cdof, cfrc_body, qfrc_bias)


@handle_entry
def com_vel_entry(m, d):
    _com_vel(m.body_parentid, m.body_dofnum, m.body_dofadr, m.dof_jntid, m.jnt_type,
             d.qvel, d.cdof, d.cvel, d.cdof_dot)


@handle_entry(args="boolean, float64[::1]")
def rne_entry(m, d, flg_acc, result):
    _rne(m.body_parentid, m.body_dofnum, m.body_dofadr, m.dof_bodyid, m.opt_gravity,
         m.opt_flags[OPT_DISABLEFLAGS],
         d.qvel, d.qacc, d.cdof, d.cdof_dot, d.cinert, d.cvel, flg_acc,
         result,
         d.scratch_body6a, d.scratch_body6b)


@handle_entry
def com_vel_bias_entry(m, d):
    """com_vel_entry then rne_entry(flg_acc=False) into qfrc_bias, fused (see _com_vel_bias)."""
    _com_vel_bias(m.body_parentid, m.body_dofnum, m.body_dofadr, m.dof_jntid, m.jnt_type, m.dof_bodyid,
                  m.opt_gravity, m.opt_flags[OPT_DISABLEFLAGS], d.qvel, d.cdof, d.cinert, d.cvel, d.cdof_dot,
                  d.qfrc_bias,
                  d.scratch_body6a, d.scratch_body6b)


@handle_entry
def bias_forces_entry(m, d):
    # the from-scratch chain mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=0), one dispatch
    kinematics_entry(m, d)
    com_pos_entry(m, d)
    com_vel_bias_entry(m, d)


_RNE = FastEntry(rne_entry)
_COM_VEL = FastEntry(com_vel_entry)
_BIAS_FORCES = FastEntry(bias_forces_entry)


def com_vel(m, d) -> None:
    """Com-based body velocities and the time derivatives of the motion axes.

    Reads: qvel, cdof. Writes: cvel, cdof_dot. Mirrors mj_comVel.
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "com_vel")
    except AttributeError:
        bad_model_data(m, d, "com_vel")
    _COM_VEL.call(m._ptr, d._ptr)


_RNE_OUT = OutArgument("rne: out")


def rne(m, d, flg_acc: bool = False, armature: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """Recursive Newton-Euler: M(q) qacc + C(q, qvel), or C(q, qvel) alone when ``flg_acc`` is False.

    Uses the position and velocity quantities already in ``d`` (cdof, cinert, cvel,
    cdof_dot: run ``kinematics``, ``com_pos`` and ``com_vel`` first), like mj_rne.
    As in MuJoCo, the rotor inertia ``dof_armature`` is *not* included; pass
    ``armature=True`` to add the armature times qacc (with the actuators' armature:
    ``dof_armature_total``) as Pinocchio's ``rnea`` and the seed tutorial do.

    Returns ``out`` (allocated when None), shape (nv,).
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "rne")
    except AttributeError:
        bad_model_data(m, d, "rne")
    if out is None:
        out = np.empty(m.nv)
    else:
        _RNE_OUT.check(out, (m.nv,))
    _RNE.call(m._ptr, d._ptr, flg_acc is True or bool(flg_acc), out)
    if armature and flg_acc:
        out += dof_armature_total(m) * d.qacc
    return out


def dof_armature_total(m) -> np.ndarray:
    """The armature on M's diagonal: ``dof_armature`` plus gear[0]^2 times the ``armature`` of the
    actuators on each dof's joint (as ``crb``)."""
    total = m.dof_armature.copy()
    for v in range(m.nv):
        j = int(m.dof_jntid[v])
        if m.jnt_actuatorid[j] != -1:
            total[v] += actuator_armature(int(m.jnt_actuatorid[j]), j, False, m.actuator_armature,
                                          m.actuator_gear, m.actuator_trnid, m.actuator_trntype)
    return total


def bias_forces(m, d) -> np.ndarray:
    """Bias forces C(q, qvel) (Coriolis, centrifugal, gravity) from qpos and qvel alone.

    One call runs ``kinematics``, ``com_pos``, ``com_vel`` and ``rne(flg_acc=False)``:
    the from-scratch counterpart of Pinocchio's ``nonLinearEffects(q, v)`` and of
    MuJoCo's chain mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=0). Unlike
    ``rne``, it needs no earlier stage. Without armature, as in MuJoCo.

    Reads: qpos, qvel. Writes: the fields of those stages and qfrc_bias. Returns
    ``d.qfrc_bias`` itself (not a copy), shape (nv,).
    """
    check_model_data(m, d, "bias_forces")
    _BIAS_FORCES.call(m._ptr, d._ptr)
    return d.qfrc_bias


