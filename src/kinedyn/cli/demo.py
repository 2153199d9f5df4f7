"""``kinedyn demo``: the bundled biped walks on the floor, by ZMP preview control.

The method of the humanoid tutorial's source (Kajita et al., "Biped Walking Pattern Generation
by using Preview Control of Zero-Moment Point", ICRA 2003), stage by stage:

1. **Pattern** (:func:`walking_pattern`): a footstep plan, the ZMP reference it implies, and
   the centre-of-mass path that the preview controller on the cart-table model finds for it
   (:mod:`kinedyn.tools.walking`); swing-foot paths; the torso at a constant height and
   orientation, placed so that the whole robot's centre of mass (not just the torso's) is on
   the planned path; at every sample :func:`kinedyn.ik.leg6` turns the torso and sole poses
   into the twelve leg angles.
2. **Feed-forward** (:func:`feedforward`): the inverse dynamics of that joint trajectory
   (:func:`kinedyn.tools.trajectory.inverse_dynamics`, contacts off) puts on the free joint the
   wrench the ground must supply; :func:`kinedyn.tools.walking.leg_torques` hands it to the
   feet (the stance foot, or both shared by where the ZMP is between them) and gives the leg
   torques that hold the body up.
3. **Simulation** (:func:`simulate`): :func:`kinedyn.step` with contacts: the soles on the
   floor plane (friction 1), the twelve position servos (kp, kv of biped.xml) commanded to the
   IK angles, and the feed-forward torques added on the leg joints through ``qfrc_applied``.
   One feedback loop closes over the plan (:class:`Balance`): the torso target is moved
   against the measured error of the divergent component of motion (capture point), and the
   legs are solved again at every step.
   Nothing holds the torso: no harness, the free joint gets no applied force. A real robot's
   motor drivers add a feed-forward torque to their position loop the same way; doing it
   through ``qfrc_applied`` keeps the actuators the plain position servos of the model (their
   ``ctrl`` is an angle within the joint range) and the servo's own damping -kv qvel, which
   the reference velocity would otherwise drag on, is compensated in the feed-forward too.
4. **Measurement** (:func:`analyse`): the centre of pressure from the contact forces, the
   joint tracking error, the steps actually taken, and whether the robot fell (torso below
   :data:`FALL_HEIGHT` or tilted more than :data:`FALL_TILT`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn import ik, models
from kinedyn.tools import walking

MODEL_NAME = "biped"
SIDES = ("r", "l")  # right, left: site prefixes r_sole/l_sole and joint prefixes RLEG/LLEG

# the robot has fallen when the torso (hip base) is this low or the torso this tilted
FALL_HEIGHT = 0.45  # m (it walks at 0.60)
FALL_TILT = np.radians(30.0)


@dataclass(frozen=True)
class Gait:
    """The walk: how many steps, how long and high, and the preview controller's settings."""

    nstep: int = 8                  # swings; the last one brings the feet together
    stride: float = 0.15            # m: each swing foot lands this far ahead of the support foot
    step_height: float = 0.04       # m: swing-foot clearance
    single_support: float = 0.6     # s per swing
    double_support: float = 0.2     # s with both feet down before each swing
    t_start: float = 0.6            # s standing before the first step
    t_stop: float = 1.0             # s standing after the last
    torso_height: float = 0.60      # m: hip base above the floor (knees bent: the legs reach 0.65)
    preview_time: float = 1.6       # s of ZMP reference the controller looks ahead (Kajita: 1.6 s)
    dcm_gain: float = 0.3           # feedback of the divergent component of motion (Balance); 0: open loop

    @property
    def duration(self) -> float:
        return self.t_start + self.nstep * (self.single_support + self.double_support) + \
            self.double_support + self.t_stop


Progress = Callable[[str, int], contextlib.AbstractContextManager[Callable[[int], None]]]


@contextlib.contextmanager
def no_progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """The default progress reporter: reports nothing."""
    yield lambda n=1: None


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


def sole_centre(m) -> np.ndarray:
    """(x, y) of the sole box's centre relative to the sole site (the ankle's projection)."""
    geom = m.geom(f"{SIDES[0]}_sole").id
    site = m.site(f"{SIDES[0]}_sole").id
    return (m.geom_pos[geom] - m.site_pos[site])[:2].copy()


# ---- 1. the pattern ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """The planned walk, sampled at ``t`` (the model's timestep)."""

    gait: Gait
    plan: walking.FootstepPlan
    t: np.ndarray            # (n,)
    zc: float                # the cart-table height: the robot's centre of mass standing
    zmp_ref: np.ndarray      # (n, 2) the ZMP reference of the footstep plan
    zmp_cart: np.ndarray     # (n, 2) the cart-table ZMP of the planned CoM (tracks zmp_ref)
    com: np.ndarray          # (n, 3) planned CoM: position
    com_acc: np.ndarray      # (n, 2) ... and horizontal acceleration
    torso_pos: np.ndarray    # (n, 3); the torso keeps the identity orientation
    sole_pos: dict           # side -> (n, 3); the soles stay flat
    share_right: np.ndarray  # (n,) fraction of the ground reaction planned on the right foot
    qpos: np.ndarray         # (n, nq): free joint = torso pose, legs from leg6


def _solve_legs(m, geometry: dict, torso, soles: dict, qpos: np.ndarray, when: float) -> None:
    identity = np.eye(3)
    for side, g in geometry.items():
        leg = ik.leg6(torso, identity, soles[side], identity, g.hip_offset, g.thigh, g.shank,
                      ankle_height=g.ankle_height)
        if not leg.reachable:
            raise ValueError(f"{side} leg cannot reach its sole target at t = {when:.3f} s ({leg.status})")
        qpos[g.qposadr] = leg.q


def walking_pattern(m, gait: Gait = Gait(), com_tolerance: float = 1e-10) -> Pattern:
    """The joint trajectory of the walk, every ``m.opt.timestep``.

    The torso is put where the whole robot's centre of mass follows the preview controller's
    path (the legs move the CoM by centimetres: a swing leg is 7 kg of the robot's 24): at
    each sample, "solve the legs, compute the CoM (kinedyn.com_pos), shift the torso by the
    CoM's miss over dCoM/dtorso" until the miss is below ``com_tolerance`` (m). The
    tolerance is tight because the inverse dynamics differentiates the samples twice: a
    0.1 mm jump between 2 ms samples is a 25 m/s^2 acceleration.

    Raises:
      ValueError: a leg pose cannot be reached (a gait too long or too low for the legs).
    """
    dt = m.opt.timestep
    plan = walking.footstep_plan(gait.nstep, gait.stride, 2 * abs(leg_geometry(m, "r").hip_offset[1]),
                                 gait.single_support, gait.double_support, gait.t_start, gait.t_stop)
    t = np.arange(round(plan.t_end / dt) + 1) * dt
    soles = walking.foot_trajectories(plan, t, gait.step_height)
    geometry = {side: leg_geometry(m, side) for side in SIDES}
    root = m.jnt_qposadr[m.joint("root").id]
    d = kd.Data(m)

    def com_of(torso, k, q) -> np.ndarray:
        q[root:root + 3] = torso
        q[root + 3:root + 7] = (1.0, 0.0, 0.0, 0.0)
        _solve_legs(m, geometry, torso, {side: soles[side][k] for side in SIDES}, q, t[k])
        d.qpos[:] = q
        kd.kinematics(m, d)
        kd.com_pos(m, d)
        return d.subtree_com[0].copy()

    # the cart-table height: the CoM height standing with the torso at its height; and how far the
    # CoM moves when the torso moves with the feet kept in place (about the upper body's mass share)
    q = m.qpos0.copy()
    standing = np.array([0.0, 0.0, gait.torso_height])
    com0 = com_of(standing, 0, q)
    zc = float(com0[2])
    h = 1e-4
    sensitivity = (com_of(standing + [h, 0.0, 0.0], 0, q)[0] - com0[0]) / h
    gains = walking.preview_gains(dt, zc, gait.preview_time)
    zmp_ref = walking.zmp_reference(plan, t, sole_centre(m))
    state, zmp_cart = walking.preview_control(gains, zmp_ref)
    com = np.column_stack([state[:, :, 0], np.full(len(t), zc)])

    qpos = np.tile(m.qpos0, (len(t), 1))
    torso = np.empty((len(t), 3))
    offset = standing[:2] - com0[:2]  # torso - CoM, carried over from the previous sample as the first guess
    for k in range(len(t)):
        p = np.array([*(com[k, :2] + offset), gait.torso_height])
        for _ in range(50):
            miss = com_of(p, k, qpos[k])[:2] - com[k, :2]
            if np.abs(miss).max() < com_tolerance:
                break
            p[:2] -= miss / sensitivity
        else:
            raise ValueError(f"the torso position for the planned CoM at t = {t[k]:.3f} s did not converge")
        torso[k] = p
        offset = p[:2] - com[k, :2]
    share = walking.support_share(plan, t, zmp_ref, soles)
    return Pattern(gait=gait, plan=plan, t=t, zc=zc, zmp_ref=zmp_ref, zmp_cart=zmp_cart, com=com,
                   com_acc=state[:, :, 2], torso_pos=torso, sole_pos=soles, share_right=share, qpos=qpos)


# ---- 2. feed-forward torques ---------------------------------------------------------------------


@contextlib.contextmanager
def contacts_off(m) -> Iterator[None]:
    """The model with its contact flag disabled, restored afterwards."""
    saved = int(m.opt.disableflags)
    m.opt.disableflags = saved | int(kd.DisableBit.CONTACT)
    try:
        yield
    finally:
        m.opt.disableflags = saved


@dataclass(frozen=True)
class Feedforward:
    inverse: object          # kinedyn.tools.trajectory's result: qfrc_inverse with the free joint as support
    qfrc_legs: np.ndarray    # (n, nv) the joint forces with the feet as support (zero on the free joint)
    wrench: dict             # side -> (n, 6) planned foot wrench (force; torque at the sole site), world
    qfrc_applied: np.ndarray  # (n, nv) what the demo applies: qfrc_legs + kv qvel on the servoed joints


def feedforward(m, pattern: Pattern) -> Feedforward:
    """Inverse dynamics of the pattern, the base wrench handed to the feet, and the servo damping."""
    from kinedyn.tools import trajectory

    t, qpos = pattern.t, pattern.qpos
    dt = t[1] - t[0]
    # one extra sample at each end, continuing the motion at constant velocity, so the "fd"
    # differences keep every pattern sample (the torso's quaternion is constant: extrapolating
    # qpos linearly is exact there)
    t_ext = np.concatenate([[t[0] - dt], t, [t[-1] + dt]])
    q_ext = np.vstack([2 * qpos[:1] - qpos[1:2], qpos, 2 * qpos[-1:] - qpos[-2:-1]])
    with contacts_off(m):
        inverse = trajectory.inverse_dynamics(m, t_ext, q_ext, method="fd")
    sites = {side: m.site(f"{side}_sole").id for side in SIDES}
    free = m.jnt_dofadr[m.joint("root").id]
    d = kd.Data(m)
    n = len(t)
    qfrc = np.empty((n, m.nv))
    wrench = {side: np.empty((n, 6)) for side in SIDES}
    for k in range(n):
        qfrc[k], w = walking.leg_torques(m, d, qpos[k], inverse.qfrc_inverse[k], pattern.share_right[k],
                                         sites, free)
        for side in SIDES:
            wrench[side][k] = w[side]
    applied = qfrc.copy()
    applied[:, free:free + 6] = 0.0
    servo_dof = m.jnt_dofadr[m.actuator_trnid[:, 0]]
    kv = -m.actuator_biasprm[:, 2]  # a position servo's bias is -kp q - kv qdot
    applied[:, servo_dof] += kv * inverse.qvel[:, servo_dof]
    return Feedforward(inverse=inverse, qfrc_legs=qfrc, wrench=wrench, qfrc_applied=applied)


# ---- 3. the simulation ---------------------------------------------------------------------------


def torso_tilt(quat) -> float:
    """Angle (rad) between the torso's z axis and the vertical, from its quaternion (w, x, y, z)."""
    w, x, y, z = quat
    zz = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
    return float(np.arccos(np.clip(zz, -1.0, 1.0)))


def centre_of_pressure(m, d, floor: int) -> tuple[np.ndarray, float]:
    """(x, y) of the centre of pressure of the floor contacts and the total normal force.

    Each contact's force comes from kinedyn.contact_force (mj_contactForce: normal and
    tangential components in the contact frame, whose first row is the normal); on the flat
    floor the centre of pressure is the normal-force-weighted mean of the contact points.
    (nan, 0) without floor contact.
    """
    total, moment = 0.0, np.zeros(2)
    contact = d.contact
    for i in range(d.ncon):
        if floor not in contact.geom[i]:
            continue
        # the force on geom 2 in the contact frame (rows: normal from geom 1 to 2, tangents); in the world
        # frame frame' f, and on the robot with the sign of which geom the floor is
        f = kd.contact_force(m, d, i)[:3]
        on_robot = contact.frame[i].reshape(3, 3).T @ f * (1.0 if contact.geom[i][0] == floor else -1.0)
        fz = float(on_robot[2])
        total += fz
        moment += fz * contact.pos[i][:2]
    if total <= 0.0:
        return np.full(2, np.nan), 0.0
    return moment / total, total


@dataclass
class Run:
    """The simulated walk: state and forces at every sample time (until a fall)."""

    qpos: np.ndarray            # (n, nq)
    qvel: np.ndarray            # (n, nv)
    ctrl: np.ndarray            # (n, nu): the servo commands (Balance) held from each sample
    actuator_force: np.ndarray  # (n, nu): the servos' output at each sample
    cop: np.ndarray             # (n, 2) measured centre of pressure
    normal_force: np.ndarray    # (n,) total normal force of the floor
    fell_at: float | None       # time of the fall, or None
    n: int                      # samples simulated


def servo_commands(m, pattern: Pattern) -> np.ndarray:
    """The servos' ctrl (n, nu) of the plan itself: the IK angles of the joints they drive."""
    return pattern.qpos[:, m.jnt_qposadr[m.actuator_trnid[:, 0]]]


class Balance:
    """The servo commands at each step, with feedback of the divergent component of motion.

    The linear inverted pendulum's state splits into a part that converges by itself and
    one that diverges, xi = x + x'/omega (omega = sqrt(g / z_c): the "divergent component
    of motion" or capture point). An error in xi grows as exp(omega t) unless the ZMP moves
    against it. A position-controlled robot moves its ZMP by moving its body: pulling the
    torso back (a backward acceleration) pushes the ZMP forward, p = x - x''/omega^2. So at
    every step the torso target of the IK is the planned one moved by -``gain`` times the
    measured error in xi (torso position and velocity from the free joint, as an IMU and
    leg odometry would give them, against the plan's), and the legs are solved again with
    :func:`kinedyn.ik.leg6`. ``gain`` = 0 plays the plan open loop.
    """

    def __init__(self, m, pattern: Pattern, ff: Feedforward):
        self.m, self.pattern = m, pattern
        self.gain = pattern.gait.dcm_gain
        self.omega = float(np.sqrt(-m.opt.gravity[2] / pattern.zc))
        self.geometry = {side: leg_geometry(m, side) for side in SIDES}
        self.root = m.jnt_qposadr[m.joint("root").id]
        self.root_dof = m.jnt_dofadr[m.joint("root").id]
        # the plan's torso velocity, as the inverse dynamics differentiated it
        self.torso_vel = ff.inverse.qvel[:, self.root_dof:self.root_dof + 2]
        self.servo_qposadr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
        self.planned = servo_commands(m, pattern)
        self.q = m.qpos0.copy()

    def __call__(self, k: int, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """ctrl (nu,) for sample k in the state (qpos, qvel)."""
        if self.gain == 0.0:
            return self.planned[k]
        p = self.pattern
        error = qpos[self.root:self.root + 2] - p.torso_pos[k, :2]
        rate = qvel[self.root_dof:self.root_dof + 2] - self.torso_vel[k]
        torso = p.torso_pos[k].copy()
        torso[:2] -= self.gain * (error + rate / self.omega)
        _solve_legs(self.m, self.geometry, torso, {side: p.sole_pos[side][k] for side in SIDES}, self.q,
                    p.t[k])
        return self.q[self.servo_qposadr].copy()


def simulate(m, pattern: Pattern, ff: Feedforward, progress: Progress = no_progress,
             step: Callable | None = None) -> Run:
    """Simulate the walk from the pattern's first pose at rest.

    Sample k's servo command (:class:`Balance`, from the state at t[k]) and feed-forward are
    held for the step from t[k]; the state, actuator force and contact forces recorded for
    sample k are those at t[k] (``kd.step`` computes them before integrating). Stops early if
    the robot falls.
    """
    step = kd.step if step is None else step
    n = len(pattern.t)
    d = kd.Data(m)
    d.qpos[:] = pattern.qpos[0]
    balance = Balance(m, pattern, ff)
    floor = m.geom("floor").id
    root = m.jnt_qposadr[m.joint("root").id]
    run = Run(np.empty((n, m.nq)), np.empty((n, m.nv)), np.empty((n, m.nu)), np.empty((n, m.nu)),
              np.full((n, 2), np.nan), np.zeros(n), None, n)
    with progress("simulating the walk", n) as advance:
        for k in range(n):
            run.qpos[k], run.qvel[k] = d.qpos, d.qvel
            if d.qpos[root + 2] < FALL_HEIGHT or torso_tilt(d.qpos[root + 3:root + 7]) > FALL_TILT:
                run.fell_at, run.n = float(pattern.t[k]), k + 1
                break
            run.ctrl[k] = balance(k, d.qpos, d.qvel)
            d.ctrl[:] = run.ctrl[k]
            d.qfrc_applied[:] = ff.qfrc_applied[k]
            step(m, d)
            run.actuator_force[k] = d.actuator_force
            run.cop[k], run.normal_force[k] = centre_of_pressure(m, d, floor)
            if k % 100 == 0:
                advance(min(100, n - k))
    if run.n < n:
        for name in ("qpos", "qvel", "ctrl", "actuator_force", "cop", "normal_force"):
            setattr(run, name, getattr(run, name)[:run.n])
    return run


# ---- 4. what happened ----------------------------------------------------------------------------


@dataclass
class DemoResult:
    """Everything the demo computed, and the files it wrote (name -> path)."""

    pattern: Pattern
    feedforward: Feedforward
    run: Run
    leg_joints: list[str]           # the 12 servoed joints, in actuator order
    tracking_error: np.ndarray      # (n, 12) simulated angle - servo command at each sample, rad
    steps: int                      # steps that landed their foot forward where planned
    distance: float                 # m the torso moved forward
    max_tilt: float                 # rad, largest torso tilt
    cop_error: np.ndarray           # (n,) |measured CoP - planned ZMP| (nan without contact)
    peak_torque: np.ndarray         # (12,) max |feed-forward torque|, N m
    peak_servo_force: np.ndarray    # (12,) max |actuator_force| in the simulation, N m
    files: dict = field(default_factory=dict)

    @property
    def fell(self) -> bool:
        return self.run.fell_at is not None


def count_steps(m, pattern: Pattern, qpos: np.ndarray, tolerance: float = 0.05) -> int:
    """Steps whose swing foot, in the simulation, ended on the floor (sole site below 1 cm) within
    ``tolerance`` of its planned footprint and ahead of where it lifted off (by half a stride)."""
    d = kd.Data(m)
    dt = pattern.t[1] - pattern.t[0]
    sites = {side: m.site(f"{side}_sole").id for side in SIDES}

    def sole(k: int, side: str) -> np.ndarray:
        d.qpos[:] = qpos[k]
        kd.kinematics(m, d)
        return d.site_xpos[sites[side]].copy()

    steps = 0
    for step in pattern.plan.steps:
        lift = round(step.t_lift / dt)
        settled = round((step.t_land + pattern.plan.double_support / 2) / dt)
        if settled >= len(qpos):
            break
        before, after = sole(lift, step.side), sole(settled, step.side)
        landed = after[2] < 0.01 and np.linalg.norm(after[:2] - step.end) < tolerance
        if landed and after[0] - before[0] > pattern.gait.stride / 2:
            steps += 1
    return steps


def analyse(m, pattern: Pattern, ff: Feedforward, run: Run) -> DemoResult:
    """Tracking error, steps, distance, tilt, CoP error and peak torques of a simulated walk."""
    joint_ids = m.actuator_trnid[:, 0]
    adr = m.jnt_qposadr[joint_ids]
    root = m.jnt_qposadr[m.joint("root").id]
    n = run.n
    error = run.qpos[:, adr] - run.ctrl
    return DemoResult(
        pattern=pattern, feedforward=ff, run=run, leg_joints=[m.id2name("jnt", j) for j in joint_ids],
        tracking_error=error, steps=count_steps(m, pattern, run.qpos),
        distance=float(run.qpos[-1, root] - run.qpos[0, root]),
        max_tilt=max(torso_tilt(q[root + 3:root + 7]) for q in run.qpos),
        cop_error=np.linalg.norm(run.cop - pattern.zmp_ref[:n], axis=1),
        peak_torque=np.abs(ff.qfrc_legs[:, m.jnt_dofadr[joint_ids]]).max(axis=0),
        peak_servo_force=np.abs(run.actuator_force).max(axis=0),
    )


def compute(gait: Gait = Gait(), advance: Callable[[int], None] = lambda n=1: None, m=None,
            step: Callable | None = None) -> DemoResult:
    """Pattern, feed-forward, simulation and analysis (no files); ``advance(1)`` after each stage.

    ``m`` defaults to the bundled biped (with its contacts enabled: until kinedyn simulates
    contact the bundled file disables them). ``step`` defaults to :func:`kinedyn.step`.
    """
    if m is None:
        m = models.load(MODEL_NAME)
    pattern = walking_pattern(m, gait)
    advance(1)
    ff = feedforward(m, pattern)
    advance(1)
    run = simulate(m, pattern, ff, step=step)
    advance(1)
    return analyse(m, pattern, ff, run)


# ---- files ---------------------------------------------------------------------------------------


def write_outputs(m, result: DemoResult, out_dir: str | Path, animation: bool = True, plots: bool = True,
                  fps: float = 10.0) -> dict[str, Path]:
    """Write into ``out_dir`` (created if needed) the CSVs and plots (with ``plots``) and a GIF of
    the simulated walk at ``fps`` frames per simulated second (with ``animation``); returns name -> path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    if plots:
        files.update(_write_csv_and_plots(m, result, out_dir))
    if animation:
        from kinedyn.viewer import render

        run, t = result.run, result.pattern.t[:result.run.n]
        nframe = max(2, round(t[-1] * fps))
        pick = np.linspace(0, run.n - 1, nframe).round().astype(int)
        files["animation"] = render.animate(m, run.qpos[pick], out_dir / "animation.gif", fps=fps,
                                            title="kinedyn demo: ZMP preview-control walk", times=t[pick],
                                            source=models.path(MODEL_NAME), contacts=True)
    return files


def _write_csv_and_plots(m, result: DemoResult, out_dir: Path) -> dict[str, Path]:
    from kinedyn.tools import trajectory
    from kinedyn.viewer import plotting

    pattern, run = result.pattern, result.run
    n = run.n
    t = pattern.t[:n]
    files: dict[str, Path] = {}
    files["reference"] = out_dir / "reference.csv"
    trajectory.save_csv(files["reference"], pattern.t, pattern.qpos, m)
    files["simulated"] = out_dir / "simulated.csv"
    trajectory.save_csv(files["simulated"], t, run.qpos, m)

    dof = m.jnt_dofadr[m.actuator_trnid[:, 0]]
    halves = {"right leg": slice(0, 6), "left leg": slice(6, 12)}
    short = [name.split("_")[-1] for name in result.leg_joints]
    Panel = plotting.Panel
    files["zmp"] = plotting.plot_panels(
        out_dir / "zmp.png", t,
        [Panel(f"{axis}: measured centre of pressure (solid), planned ZMP (dashed)", run.cop[:, i],
               ["CoP"], "m", dashed=pattern.zmp_ref[:n, i])
         for i, axis in enumerate(("forward x", "lateral y"))]
        + [Panel("planned centre of mass (cart-table model)", pattern.com[:n, :2], ["x", "y"], "m")],
        title="biped walk: ZMP and centre of pressure")
    files["torques"] = plotting.plot_panels(
        out_dir / "torques.png", t,
        [Panel(f"{leg}: joint torque in simulation, servo + feed-forward (solid); planned (dashed)",
               run.actuator_force[:, s] + result.feedforward.qfrc_applied[:n, dof[s]], short[s], "N m",
               dashed=result.feedforward.qfrc_legs[:n, dof[s]]) for leg, s in halves.items()],
        title="biped walk: joint torques (servo + feed-forward)")
    files["tracking_error"] = plotting.plot_panels(
        out_dir / "tracking_error.png", t,
        [Panel(f"{leg}: simulated - commanded angle", np.degrees(result.tracking_error[:, s]), short[s],
               "deg") for leg, s in halves.items()],
        title="biped walk: servo tracking error")
    return files


def run(out_dir: str | Path = "kinedyn-out/demo", gait: Gait = Gait(), animation: bool = True,
        progress: Progress = no_progress) -> DemoResult:
    """The whole demo on the bundled biped: :func:`compute`, then the files (``result.files``)."""
    m = models.load(MODEL_NAME)
    with progress("kinedyn demo (a first run compiles the kernels: 1-2 min)", 4 + animation) as advance:
        result = compute(gait, advance, m)
        result.files = write_outputs(m, result, Path(out_dir), animation=False)
        advance(1)
        if animation:
            result.files.update(write_outputs(m, result, Path(out_dir), animation=True, plots=False))
            advance(1)
    return result


__all__ = ["FALL_HEIGHT", "FALL_TILT", "Balance", "DemoResult", "Feedforward", "Gait", "LegGeometry",
           "Pattern", "Run", "analyse", "centre_of_pressure", "compute", "contacts_off", "count_steps",
           "feedforward", "leg_geometry", "no_progress", "run", "servo_commands", "simulate", "sole_centre",
           "torso_tilt", "walking_pattern", "write_outputs"]
