"""Forward dynamics: the whole smooth pipeline in one call (mj_forward, engine_forward.c).

Orchestration only; the math lives in the stage modules. The stages run in
MuJoCo's order and each reads what the previous ones wrote:

    position      kinematics, com_pos, tendon, crb, factor_m, transmission
    velocity      ten_velocity, actuator_velocity, com_vel + rne (qfrc_bias, one pass), passive
    actuation     fwd_actuation
    acceleration  fwd_acceleration (qacc = M^-1 qfrc_smooth; no constraints yet)

Each public function is one jitted entry, so a call pays Numba's dispatch once.
"""

from __future__ import annotations

from kinedyn._handle import FastEntry, entry, handle_entry
from kinedyn.actuation import (
    actuator_velocity_kernel,
    fwd_actuation_entry,
    fwd_actuation_with_callbacks,
    transmission_entry,
)
from kinedyn.dynamics import com_vel_bias_entry, fwd_acceleration, fwd_acceleration_entry, passive_entry
from kinedyn.inertia import crb_entry, factor_m_entry
from kinedyn.kinematics import com_pos_entry, kinematics_entry
from kinedyn.tendon import ten_velocity_entry, tendon_entry


@entry
def fwd_position_entry(m, d):
    kinematics_entry(m, d)
    com_pos_entry(m, d)
    tendon_entry(m, d)
    crb_entry(m, d)
    factor_m_entry(m, d)
    transmission_entry(m, d)


@entry
def fwd_velocity_entry(m, d):
    ten_velocity_entry(m, d)
    actuator_velocity_kernel(m.opt_flags[1], d.actuator_moment, d.qvel, d.actuator_velocity)
    # mj_comVel, mj_passive, mj_rne in MuJoCo's order, but with comVel and rne fused into one
    # pass over the bodies (passive reads neither cvel nor qfrc_bias): forward 6.79 -> 6.60 us in-jit
    com_vel_bias_entry(m, d)
    passive_entry(m, d)


@handle_entry
def forward_entry(m, d):
    fwd_position_entry(m, d)
    fwd_velocity_entry(m, d)
    fwd_actuation_entry(m, d)
    fwd_acceleration_entry(m, d)


_FWD_POSITION = FastEntry(fwd_position_entry)
_FWD_VELOCITY = FastEntry(fwd_velocity_entry)
_FORWARD = FastEntry(forward_entry)


def fwd_position(m, d) -> None:
    """Position-dependent stage: poses, com quantities, tendons, M and its factorisation, transmissions."""
    _FWD_POSITION.call(m._handle, d._handle)


def fwd_velocity(m, d) -> None:
    """Velocity-dependent stage: tendon and actuator velocities, cvel, passive forces, qfrc_bias."""
    _FWD_VELOCITY.call(m._handle, d._handle)


def forward(m, d) -> None:
    """Forward dynamics: fill every position, velocity, actuation and acceleration field.

    Reads: qpos, qvel, act, ctrl, qfrc_applied, xfrc_applied. Writes: every field of
    those stages, act_dot and qacc. Mirrors mj_forward with the constraint solver off.
    With user-actuator callbacks (Model.set_actuator_callbacks) the actuation stage runs
    from Python between the compiled stages.
    """
    # (the flag is read inline: forward's Python wrapper is part of every call's cost)
    if m._has_actuator_callbacks:
        forward_with_callbacks(m, d)
    else:
        _FORWARD.call(m._handle, d._handle)


def forward_with_callbacks(m, d) -> None:
    """forward for models whose user-type actuators have Python callbacks: compiled stages
    around the actuation stage, which calls the callbacks."""
    _FWD_POSITION(m._handle, d._handle)
    _FWD_VELOCITY(m._handle, d._handle)
    fwd_actuation_with_callbacks(m, d)
    fwd_acceleration(m, d)
