"""Forward dynamics: the whole pipeline in one call (mj_forward, engine_forward.c).

Orchestration only; the math lives in the stage modules. The stages run in
MuJoCo's order and each reads what the previous ones wrote:

    position      kinematics, com_pos, camlight, tendon, crb (+ tendon armature), factor_m,
                  collision, make_constraint, transmission; then the position sensors and the
                  potential energy (engine.sensor)
    velocity      ten_velocity, actuator_velocity, com_vel + rne (qfrc_bias, one pass; + the
                  tendon armature's bias), passive, reference_constraint; then the velocity
                  sensors and the kinetic energy
    actuation     fwd_actuation
    acceleration  fwd_acceleration (qacc_smooth = M^-1 qfrc_smooth; under the discrete integrator
                  in the effective metric, engine.metric)
    constraint    fwd_constraint (the solver: qacc, efc_force, qfrc_constraint); then the
                  acceleration sensors

Each public function is one jitted entry, so a call pays Numba's dispatch once.
"""

from __future__ import annotations

from kinedyn._jit import FastEntry, NotBound, entry, handle_entry, kernel, rebind
from kinedyn.engine.actuation import actuator_velocity_kernel, fwd_actuation_entry, transmission_entry
from kinedyn.engine.callbacks import fwd_actuation_with_callbacks, has_actuator_callbacks
from kinedyn.engine.camlight import camlight_entry
from kinedyn.engine.checks import bad_model_data, check_model_data
from kinedyn.engine.collision_driver import COUNT_DROPPED, collision_entry, warn_if_contacts_dropped
from kinedyn.engine.constraint import make_constraint_entry, reference_constraint_entry
from kinedyn.engine.metric import discrete_acceleration_entry
from kinedyn.engine.passive import passive_entry
from kinedyn.engine.sensor import (
    energy_pos_entry,
    energy_vel_entry,
    sensor_acc_entry,
    sensor_pos_entry,
    sensor_vel_entry,
)
from kinedyn.engine.sleep import enabled as sleep_enabled
from kinedyn.engine.sleep import save_poses_entry, wake_after_kinematics_entry, wake_collision_entry
from kinedyn.engine.smooth_flex import flex_entry, flex_velocity_entry
from kinedyn.engine.smooth_inertia import crb_entry, factor_m_entry, solve_ld
from kinedyn.engine.smooth_kinematics import com_pos_entry, kinematics_entry
from kinedyn.engine.smooth_rne import com_vel_bias_entry
from kinedyn.engine.smooth_tendon import ten_velocity_entry, tendon_entry
from kinedyn.engine.smooth_tendon_armature import tendon_armature_entry, tendon_bias_entry
from kinedyn.engine.smooth_tendon_armature import used as tendon_armature_used
from kinedyn.engine.solver import fwd_constraint_entry
from kinedyn.engine.support import xfrc_accumulate
from kinedyn.engine.types import INT_DISCRETE, OPT_DISABLEFLAGS, OPT_INTEGRATOR


@entry
def fwd_position_entry(m, d):
    sleeping = sleep_enabled(m)
    if sleeping:  # mj_kinematics: a sleeping tree whose pose changed wakes (engine.sleep)
        save_poses_entry(m, d)
    kinematics_entry(m, d)
    if sleeping:
        wake_after_kinematics_entry(m, d)
    com_pos_entry(m, d)
    camlight_entry(m, d)
    if m.nflex > 0:  # mj_flex, between mj_camlight and mj_tendon
        flex_entry(m, d)
    tendon_entry(m, d)
    crb_entry(m, d)
    if tendon_armature_used(m):  # mj_makeM: mj_crb, then mj_tendonArmature
        tendon_armature_entry(m, d)
    factor_m_entry(m, d)
    collision_entry(m, d)
    if sleeping and wake_collision_entry(m, d):  # touched sleeping trees woke: collide again
        collision_entry(m, d)
    make_constraint_entry(m, d)
    transmission_entry(m, d)


@entry
def fwd_velocity_entry(m, d):
    if m.nflex > 0:  # flexedge_velocity, before the tendon velocities (mj_fwdVelocity)
        flex_velocity_entry(m, d)
    ten_velocity_entry(m, d)
    actuator_velocity_kernel(m.opt_flags[OPT_DISABLEFLAGS], d.actuator_moment, d.qvel, d.actuator_velocity)
    # mj_comVel, mj_passive, mj_rne in MuJoCo's order, but with comVel and rne fused into one
    # pass over the bodies (passive reads neither cvel nor qfrc_bias)
    com_vel_bias_entry(m, d)
    if tendon_armature_used(m):  # mj_tendonBias, after mj_rne
        tendon_bias_entry(m, d, d.qfrc_bias)
    passive_entry(m, d)
    reference_constraint_entry(m, d)


@handle_entry
def forward_entry(m, d):
    # mj_forwardSkip: each stage's sensors (and the energy) right after the stage
    fwd_position_entry(m, d)
    sensor_pos_entry(m, d)
    fwd_velocity_entry(m, d)
    sensor_vel_entry(m, d)
    fwd_actuation_entry(m, d)
    fwd_acceleration_entry(m, d)
    fwd_constraint_entry(m, d)
    sensor_acc_entry(m, d)


@handle_entry
def forward_skip_sensor_entry(m, d):
    """forward without the sensors (the energy still), as RK4's later stages (mj_forwardSkip)."""
    fwd_position_entry(m, d)
    energy_pos_entry(m, d)
    fwd_velocity_entry(m, d)
    energy_vel_entry(m, d)
    fwd_actuation_entry(m, d)
    fwd_acceleration_entry(m, d)
    fwd_constraint_entry(m, d)


# Inlined into its entry, as actuation._transmission.
@kernel(inline="always")
def _fwd_acceleration(
    # model
    body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid, M_rownnz, M_rowadr, M_colind,
    # data in
    qfrc_passive, qfrc_bias, qfrc_applied, qfrc_actuator, xfrc_applied, xipos, subtree_com, cdof,
    qLD, qLDiagInv,
    # data out
    qfrc_smooth, qacc_smooth, qacc,
):
    # qfrc_smooth = passive - bias + applied + actuator + J^T xfrc_applied
    nv = qfrc_smooth.shape[0]
    for v in range(nv):
        qfrc_smooth[v] = qfrc_passive[v] - qfrc_bias[v] + qfrc_applied[v] + qfrc_actuator[v]
    xfrc_accumulate(body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
                    xfrc_applied, xipos, subtree_com, cdof, qfrc_smooth)
    # qacc_smooth = M^-1 qfrc_smooth; without constraints qacc = qacc_smooth
    for v in range(nv):
        qacc_smooth[v] = qfrc_smooth[v]
    solve_ld(qacc_smooth, qLD, qLDiagInv, M_rownnz, M_rowadr, M_colind)
    for v in range(nv):
        qacc[v] = qacc_smooth[v]


@handle_entry
def fwd_acceleration_entry(m, d):
    _fwd_acceleration(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                      m.M_rownnz, m.M_rowadr, m.M_colind,
                      d.qfrc_passive, d.qfrc_bias, d.qfrc_applied, d.qfrc_actuator, d.xfrc_applied, d.xipos,
                      d.subtree_com, d.cdof, d.qLD, d.qLDiagInv,
                      d.qfrc_smooth, d.qacc_smooth, d.qacc)
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:  # in the effective metric (engine.metric)
        discrete_acceleration_entry(m, d)


_FWD_ACCELERATION = FastEntry(fwd_acceleration_entry)
_FWD_ACTUATION = FastEntry(fwd_actuation_entry)
_FWD_CONSTRAINT = FastEntry(fwd_constraint_entry)


_FWD_POSITION = FastEntry(fwd_position_entry)
_SENSOR_POS = FastEntry(sensor_pos_entry)
_SENSOR_VEL = FastEntry(sensor_vel_entry)
_SENSOR_ACC = FastEntry(sensor_acc_entry)
_FWD_VELOCITY = FastEntry(fwd_velocity_entry)
_FORWARD = FastEntry(forward_entry)


def fwd_position(m, d) -> None:
    """Position-dependent stage: poses, com quantities, tendons, M and its factorisation, contacts,
    constraint rows, transmissions."""
    check_model_data(m, d, "fwd_position")
    _FWD_POSITION.call(m._ptr, d._ptr)


def fwd_velocity(m, d) -> None:
    """Velocity-dependent stage: tendon and actuator velocities, cvel, passive forces, qfrc_bias."""
    check_model_data(m, d, "fwd_velocity")
    _FWD_VELOCITY.call(m._ptr, d._ptr)


def forward(m, d) -> None:
    """Forward dynamics: fill every position, velocity, actuation and acceleration field.

    Reads: qpos, qvel, act, ctrl, qfrc_applied, xfrc_applied. Writes: every field of
    those stages, the constraint rows and the solver's result, act_dot and qacc. Mirrors
    mj_forward.
    With user-actuator callbacks (Model.set_actuator_callbacks) the actuation stage runs
    from Python between the compiled stages.
    """
    # (the check and the flag are read inline: forward's Python wrapper is part of every call's cost;
    # the try costs nothing unless d has no _model, i.e. is not a Data)
    try:
        if d._model is not m:
            bad_model_data(m, d, "forward")
    except AttributeError:
        bad_model_data(m, d, "forward")
    if m._has_actuator_callbacks:
        forward_with_callbacks(m, d)
    else:
        try:
            _FORWARD.call(m._ptr, d._ptr)
        except NotBound:  # the model changed since it was bound (kinedyn._jit.bind)
            rebind(m, d)
            _FORWARD.call(m._ptr, d._ptr)
    if d.efc_counts[COUNT_DROPPED]:
        warn_if_contacts_dropped(m, d)


def forward_with_callbacks(m, d) -> None:
    """forward for models whose user-type actuators have Python callbacks: compiled stages
    around the actuation stage, which calls the callbacks."""
    _FWD_POSITION(m._ptr, d._ptr)
    _SENSOR_POS(m._ptr, d._ptr)
    _FWD_VELOCITY(m._ptr, d._ptr)
    _SENSOR_VEL(m._ptr, d._ptr)
    fwd_actuation_with_callbacks(m, d)
    _FWD_ACCELERATION(m._ptr, d._ptr)
    _FWD_CONSTRAINT(m._ptr, d._ptr)
    _SENSOR_ACC(m._ptr, d._ptr)


def fwd_acceleration(m, d) -> None:
    """Net smooth force and the unconstrained acceleration.

    Reads: qfrc_passive, qfrc_bias, qfrc_applied, qfrc_actuator, xfrc_applied, qLD.
    Writes: qfrc_smooth, qacc_smooth, qacc. Mirrors mj_fwdAcceleration (no constraints).
    """
    check_model_data(m, d, "fwd_acceleration")
    _FWD_ACCELERATION.call(m._ptr, d._ptr)


def fwd_actuation(m, d) -> None:
    """Activation rates, actuator forces and their joint-space sum.

    Reads: ctrl, act, actuator_length, actuator_velocity, actuator_moment.
    Writes: act_dot, actuator_force, qfrc_actuator. Mirrors mj_fwdActuation, calling the
    model's user-actuator callbacks (set_actuator_callbacks) for user-type actuators.
    """
    check_model_data(m, d, "fwd_actuation")
    if has_actuator_callbacks(m):
        fwd_actuation_with_callbacks(m, d)
    else:
        _FWD_ACTUATION.call(m._ptr, d._ptr)


def fwd_constraint(m, d) -> None:
    """The constraint solver: efc_b, efc_force, efc_state, qfrc_constraint and qacc.

    Reads: the rows (made by fwd_position, their aref by fwd_velocity), qacc_smooth,
    qfrc_smooth, qacc_warmstart. Mirrors mj_fwdConstraint.
    """
    check_model_data(m, d, "fwd_constraint")
    _FWD_CONSTRAINT.call(m._ptr, d._ptr)
