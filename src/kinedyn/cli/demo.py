"""``kinedyn demo``: the bundled biped squats and takes a step; leg IK, inverse dynamics, servo tracking.

1. **Motion** (:func:`squat_and_step`): the torso and both soles follow smooth
   (minimum-jerk and cosine) paths: a squat, a lateral shift of the torso over the
   left foot, a forward step of the right foot (lifted off z = 0 and put down
   again), and the torso shifting back between the feet. The torso keeps its
   orientation and the soles stay flat. At every sample :func:`kinedyn.ik.leg6`
   turns the torso and sole poses into the six angles of each leg.
2. **Inverse dynamics** (:func:`kinedyn.tools.trajectory.inverse_dynamics`) of that
   joint trajectory gives the generalised force on every dof: the leg joint
   torques, and on the free joint the wrench that something outside the robot
   must apply to the torso.
3. **Tracking** (:func:`track`): the biped is simulated with :func:`kinedyn.step`
   with the model's own integrator (implicitfast: biped.xml says why), its twelve position
   servos commanded to the IK angles.

**Why the torso is held.** kinedyn has no contact model, so nothing pushes the
soles up and a floating biped falls. The demo therefore holds the torso with a
*harness*: the free joint receives, through ``qfrc_applied``, the wrench the
inverse dynamics asks for (its feed-forward: what the ground, through the feet,
would have to supply, plus the torso's own inertia) and a stiff spring-damper
towards the torso's reference pose that corrects the drift a feed-forward alone
would accumulate. The legs are then free-swinging limbs under their servos: the
joint torques are those of legs carried by the torso with the feet in the air,
not of legs bearing the body's weight. The summary reports both the leg torques
and the harness wrench.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn import ik, models

MODEL_NAME = "biped"
SIDES = ("r", "l")  # right, left: site prefixes r_sole/l_sole and joint prefixes RLEG/LLEG

# the motion (m, s): torso height standing and its squat depth; the step and the foot lift
STAND_HEIGHT = 0.62   # hip height with the soles on z = 0: knees slightly bent (legs reach 0.65)
SQUAT_DEPTH = 0.08
LATERAL_SHIFT = 0.06  # torso moves this far towards the left foot before the right foot lifts
STEP_LENGTH = 0.12
STEP_HEIGHT = 0.05
DEFAULT_DURATION = 3.0  # s: slow enough for the kp = 300 servos to track within a few degrees

# the harness on the free joint: stiff enough to hold the pose to about a millimetre against the
# ~1 N residual between the sampled inverse dynamics and the time-stepped model, damped critically
# for the 24 kg robot (translation) and ~1 kg m^2 about the torso (rotation)
HARNESS_KP = (2.0e4, 2.0e3)   # N/m, N m/rad
HARNESS_KD = (1.4e3, 90.0)    # N s/m, N m s/rad

Progress = Callable[[str, int], contextlib.AbstractContextManager[Callable[[int], None]]]


@contextlib.contextmanager
def no_progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """The default progress reporter: reports nothing."""
    yield lambda n=1: None


def min_jerk(tau):
    """The minimum-jerk blend 10 s^3 - 15 s^4 + 6 s^5 of s = clip(tau, 0, 1): 0 -> 1 at rest at both ends."""
    s = np.clip(tau, 0.0, 1.0)
    return s**3 * (10.0 - 15.0 * s + 6.0 * s * s)


@dataclass(frozen=True)
class LegGeometry:
    """What :func:`kinedyn.ik.leg6` needs about one leg, read from the model."""

    hip_offset: np.ndarray   # hip point in the torso frame
    thigh: float
    shank: float
    ankle_height: float      # ankle point above the sole site
    qposadr: np.ndarray      # (6,) qpos addresses of hip yaw ... ankle roll


def leg_geometry(m, side: str) -> LegGeometry:
    """Leg dimensions of the bundled biped from its body and site offsets (so edits to the MJCF follow)."""
    prefix = f"{side.upper()}LEG"
    links = [m.body(f"{prefix}_LINK{k}").id for k in range(6)]
    return LegGeometry(
        hip_offset=m.body_pos[links[0]].copy(),
        thigh=float(-m.body_pos[links[3], 2]),
        shank=float(-m.body_pos[links[4], 2]),
        ankle_height=float(-m.site_pos[m.site(f"{side}_sole").id, 2]),
        qposadr=np.array([m.jnt_qposadr[m.joint(f"{prefix}_J{k}").id] for k in range(6)]),
    )


@dataclass(frozen=True)
class Motion:
    """The commanded motion, sampled at ``t``: torso and sole positions and the IK joint trajectory."""

    t: np.ndarray            # (n,)
    torso_pos: np.ndarray    # (n, 3); the torso keeps the identity orientation
    sole_pos: dict           # side -> (n, 3); the soles stay flat
    qpos: np.ndarray         # (n, nq): free joint = torso pose, legs from leg6

    def samples(self, index) -> Motion:
        """The motion at the samples ``index`` only (inverse dynamics by differences drops the ends)."""
        return Motion(t=self.t[index], torso_pos=self.torso_pos[index],
                      sole_pos={side: p[index] for side, p in self.sole_pos.items()}, qpos=self.qpos[index])


def squat_and_step(m, duration: float = DEFAULT_DURATION, timestep: float | None = None) -> Motion:
    """Sample the squat-and-step motion every ``timestep`` (default the model's) and solve the legs.

    Phases, as fractions of ``duration``: [0, 1/3] squat down and up; [1/3, 1/2] torso
    over the left foot; [1/2, 5/6] the right foot steps forward while the torso follows
    by half a step; [5/6, 1] the torso back between the feet.

    Raises:
      ValueError: a leg pose cannot be reached (only if the constants above are changed).
    """
    if not duration > 0:
        raise ValueError(f"duration must be positive, got {duration}")
    dt = m.opt.timestep if timestep is None else timestep
    t = np.arange(round(duration / dt) + 1) * dt
    tau = t / duration
    # every path is a function of min_jerk(.), so velocity and acceleration start and end at zero
    # (a plain sin(pi tau) lift would start with a velocity jump: an impulse in the torques)
    squat = SQUAT_DEPTH * np.sin(np.pi * min_jerk(3.0 * tau)) ** 2
    shift = LATERAL_SHIFT * (min_jerk((tau - 1 / 3) * 6.0) - min_jerk((tau - 5 / 6) * 6.0))
    swing = min_jerk((tau - 0.5) * 3.0)
    torso = np.column_stack([0.5 * STEP_LENGTH * min_jerk(swing), shift, STAND_HEIGHT - squat])
    geometry = {side: leg_geometry(m, side) for side in SIDES}
    soles = {side: np.tile([0.0, geometry[side].hip_offset[1], 0.0], (len(t), 1)) for side in SIDES}
    soles["r"][:, 0] = STEP_LENGTH * min_jerk(swing)
    soles["r"][:, 2] = STEP_HEIGHT * np.sin(np.pi * swing)

    qpos = np.tile(m.qpos0, (len(t), 1))
    root = m.jnt_qposadr[m.joint("root").id]
    qpos[:, root:root + 3] = torso
    qpos[:, root + 3:root + 7] = (1.0, 0.0, 0.0, 0.0)
    identity = np.eye(3)
    for side, g in geometry.items():
        for k in range(len(t)):
            leg = ik.leg6(torso[k], identity, soles[side][k], identity, g.hip_offset, g.thigh, g.shank,
                          ankle_height=g.ankle_height)
            if not leg.reachable:
                raise ValueError(f"{side} leg cannot reach its sole target at t = {t[k]:.3f} s "
                                 f"({leg.status})")
            qpos[k, g.qposadr] = leg.q
    return Motion(t=t, torso_pos=torso, sole_pos=soles, qpos=qpos)


@dataclass(frozen=True)
class Tracking:
    """The simulated run: state and forces at every sample time."""

    qpos: np.ndarray            # (n, nq)
    qvel: np.ndarray            # (n, nv)
    actuator_force: np.ndarray  # (n, nu): the servos' output at each sample
    harness: np.ndarray         # (n, 6): generalised force the harness put on the free joint


def track(m, t, qpos_ref, qvel_ref, base_force, progress: Progress = no_progress) -> Tracking:
    """Simulate the biped with its servos commanded to ``qpos_ref`` and the torso held by the harness.

    Starts from (qpos_ref[0], qvel_ref[0]). ``base_force`` (n, 6) is the feed-forward on the
    free joint (the inverse dynamics' qfrc_inverse there); the harness adds HARNESS_KP/KD
    times the torso's pose error (``differentiate_pos``: world-frame position, torso-frame
    rotation vector, the free joint's own dof layout) and velocity error. Sample k's
    control and harness force are held for the step from t[k].
    """
    n = len(t)
    d = kd.Data(m)
    va = m.jnt_dofadr[m.joint("root").id]
    servo_qposadr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    kp = np.repeat(HARNESS_KP, 3)
    kv = np.repeat(HARNESS_KD, 3)
    d.qpos[:] = qpos_ref[0]
    d.qvel[:] = qvel_ref[0]
    out = Tracking(np.empty((n, m.nq)), np.empty((n, m.nv)), np.empty((n, m.nu)), np.empty((n, 6)))
    pose_error = np.empty(m.nv)
    with progress("simulating", n) as advance:
        for k in range(n):
            out.qpos[k], out.qvel[k] = d.qpos, d.qvel
            kd.differentiate_pos(m, d.qpos, qpos_ref[k], 1.0, out=pose_error)
            harness = (base_force[k] + kp * pose_error[va:va + 6]
                       + kv * (qvel_ref[k, va:va + 6] - d.qvel[va:va + 6]))
            d.qfrc_applied[va:va + 6] = harness
            d.ctrl[:] = qpos_ref[k, servo_qposadr]
            kd.step(m, d)  # computes actuator_force for the state at t[k] before integrating
            out.actuator_force[k] = d.actuator_force
            out.harness[k] = harness
            if k % 50 == 0:
                advance(min(50, n - k))
    return out


@dataclass
class DemoResult:
    """Everything the demo computed, and the files it wrote (name -> path)."""

    motion: Motion
    inverse: object                 # kinedyn.tools.trajectory's inverse-dynamics result
    tracking: Tracking
    leg_joints: list[str]           # the 12 servoed joints, in actuator order
    tracking_error: np.ndarray      # (n, 12) simulated - commanded angle, rad
    sole_error: np.ndarray          # (n, 2) distance of each simulated sole from its target, m
    peak_torque: np.ndarray         # (12,) max |inverse-dynamics torque|, N m
    peak_servo_force: np.ndarray    # (12,) max |actuator_force| in the simulation, N m
    peak_base_force: float          # max |harness feed-forward force|, N
    peak_base_torque: float         # max |harness feed-forward torque|, N m
    files: dict = field(default_factory=dict)


def analyse(m, motion: Motion, inverse, tracking: Tracking) -> DemoResult:
    """Tracking errors (joint angles and soles) and peak torques of a tracked motion."""
    joint_ids = m.actuator_trnid[:, 0]
    leg_joints = [m.id2name("jnt", j) for j in joint_ids]
    error = tracking.qpos[:, m.jnt_qposadr[joint_ids]] - motion.qpos[:, m.jnt_qposadr[joint_ids]]
    d = kd.Data(m)
    sole_ids = [m.site(f"{side}_sole").id for side in SIDES]
    sole_error = np.empty((len(motion.t), len(SIDES)))
    for k, q in enumerate(tracking.qpos):
        d.qpos[:] = q
        kd.kinematics(m, d)
        for i, side in enumerate(SIDES):
            sole_error[k, i] = np.linalg.norm(d.site_xpos[sole_ids[i]] - motion.sole_pos[side][k])
    va = m.jnt_dofadr[m.joint("root").id]
    base = inverse.qfrc_inverse[:, va:va + 6]
    return DemoResult(
        motion=motion, inverse=inverse, tracking=tracking, leg_joints=leg_joints,
        tracking_error=error, sole_error=sole_error,
        peak_torque=np.abs(inverse.qfrc_inverse[:, m.jnt_dofadr[joint_ids]]).max(axis=0),
        peak_servo_force=np.abs(tracking.actuator_force).max(axis=0),
        peak_base_force=float(np.linalg.norm(base[:, :3], axis=1).max()),
        peak_base_torque=float(np.linalg.norm(base[:, 3:], axis=1).max()),
    )


def write_outputs(m, result: DemoResult, out_dir: str | Path, animation: bool = True, plots: bool = True,
                  frames: int = 24) -> dict[str, Path]:
    """Write into ``out_dir`` (created if needed) the three CSVs and three plots (with ``plots``)
    and a ``frames``-frame GIF of the simulated motion (with ``animation``); returns name -> path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    motion, tracking = result.motion, result.tracking
    t = motion.t
    files: dict[str, Path] = {}
    if plots:
        files.update(_write_csv_and_plots(m, result, out_dir))
    if animation:
        from kinedyn.viewer import render

        pick = np.linspace(0, len(t) - 1, frames).round().astype(int)
        files["animation"] = render.animate(m, tracking.qpos[pick], out_dir / "animation.gif",
                                            fps=frames / t[-1], title="kinedyn demo")
    return files


def _write_csv_and_plots(m, result: DemoResult, out_dir: Path) -> dict[str, Path]:
    from kinedyn.tools import trajectory
    from kinedyn.viewer import plotting

    motion, tracking = result.motion, result.tracking
    t = motion.t
    files: dict[str, Path] = {}
    files["reference"] = out_dir / "reference.csv"
    trajectory.save_csv(files["reference"], t, motion.qpos, m)
    files["simulated"] = out_dir / "simulated.csv"
    trajectory.save_csv(files["simulated"], t, tracking.qpos, m)
    files["inverse_dynamics"] = out_dir / "inverse_dynamics.csv"
    result.inverse.to_csv(files["inverse_dynamics"])

    adr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    dof = m.jnt_dofadr[m.actuator_trnid[:, 0]]
    halves = {"right leg": slice(0, 6), "left leg": slice(6, 12)}
    short = [name.split("_")[-1] for name in result.leg_joints]
    Panel = plotting.Panel
    files["joint_angles"] = plotting.plot_panels(
        out_dir / "joint_angles.png", t,
        [Panel(f"{leg}: simulated (solid) and commanded by IK (dashed)", tracking.qpos[:, adr[s]],
               short[s], "rad", dashed=motion.qpos[:, adr[s]]) for leg, s in halves.items()],
        title="biped squat and step: joint angles")
    va = m.jnt_dofadr[m.joint("root").id]
    files["torques"] = plotting.plot_panels(
        out_dir / "torques.png", t,
        [*(Panel(f"{leg}: inverse-dynamics torque (solid), servo force in simulation (dashed)",
                 result.inverse.qfrc_inverse[:, dof[s]], short[s], "N m",
                 dashed=tracking.actuator_force[:, s]) for leg, s in halves.items()),
         Panel("harness force on the torso (what the support must supply)",
               result.inverse.qfrc_inverse[:, va:va + 3], ["fx", "fy", "fz"], "N")],
        title="biped squat and step: torques")
    files["tracking_error"] = plotting.plot_panels(
        out_dir / "tracking_error.png", t,
        [*(Panel(f"{leg}: simulated - commanded angle", result.tracking_error[:, s], short[s], "rad")
           for leg, s in halves.items()),
         Panel("sole position error", 1e3 * result.sole_error, ["right sole", "left sole"], "mm")],
        title="biped squat and step: servo tracking error")
    return files


def compute(duration: float = DEFAULT_DURATION, advance: Callable[[int], None] = lambda n: None,
            m=None) -> DemoResult:
    """Motion, inverse dynamics, tracking and analysis (no files); ``advance(1)`` after each stage.

    ``m`` defaults to the bundled biped; it is simulated with its own ``m.opt`` (the bundled
    biped's integrator is implicitfast: Euler diverges under its servos at 2 ms).
    """
    from kinedyn.tools import trajectory

    m = models.load(MODEL_NAME) if m is None else m
    va = m.jnt_dofadr[m.joint("root").id]
    motion = squat_and_step(m, duration)
    advance(1)
    # "fd" is the difference scheme of a semi-implicit step; it has no derivative at the first
    # and last sample, so the rest of the demo uses the samples it keeps (the motion is at rest there)
    inverse = trajectory.inverse_dynamics(m, motion.t, motion.qpos, method="fd")
    motion = motion.samples(inverse.index)
    advance(1)
    tracking = track(m, motion.t, motion.qpos, inverse.qvel, inverse.qfrc_inverse[:, va:va + 6])
    advance(1)
    return analyse(m, motion, inverse, tracking)


def run(out_dir: str | Path = "kinedyn-out/demo", duration: float = DEFAULT_DURATION, animation: bool = True,
        progress: Progress = no_progress) -> DemoResult:
    """The whole demo on the bundled biped: :func:`compute`, then the files (``result.files``).

    ``progress`` is advanced once per stage (the first run's Numba compilation falls in the
    inverse-dynamics and simulation stages).
    """
    m = models.load(MODEL_NAME)
    with progress("kinedyn demo (a first run compiles the kernels: 1-2 min)", 4 + animation) as advance:
        result = compute(duration, advance, m)
        result.files = write_outputs(m, result, Path(out_dir), animation=False)
        advance(1)
        if animation:
            result.files.update(write_outputs(m, result, Path(out_dir), animation=True, plots=False))
            advance(1)
    return result


__all__ = ["DemoResult", "LegGeometry", "Motion", "Tracking", "analyse", "compute", "leg_geometry",
           "min_jerk", "no_progress", "run", "squat_and_step", "track", "write_outputs"]
