"""kinedyn.cli.demo and kinedyn.tools.walking: the walking biped, piece by piece, against MuJoCo.

* the preview controller and the footstep pattern do what Kajita et al. (2003) describe;
* the IK pattern, run through MuJoCo's kinematics, puts the soles and the centre of mass on
  their planned paths; the inverse dynamics are mj_inverse's; the foot wrenches reproduce the
  base wrench through MuJoCo's Jacobians;
* MuJoCo, simulating the same model (contacts on) under the demo's inputs, walks: no fall and
  at least six steps forward (the default demo, once per session);
* kinedyn's own simulation walks too, follows MuJoCo's step for step over the whole walk,
  and measures the centre of pressure from the same contact forces; the balance feedback
  survives pushes that the open-loop plan does not. (The command itself is run in test_cli.py.)
"""

from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path

import mujoco
import numpy as np
import pytest
from oracle import set_same_state

import kinedyn as kd
from kinedyn import models
from kinedyn.cli import demo
from kinedyn.tools import walking


@pytest.fixture(scope="module")
def biped():
    """(m, mjm) for the bundled biped, each with the model's own options."""
    xml = models.xml("biped")
    return kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)


@pytest.fixture(scope="module")
def walk(biped):
    """The default demo's pattern and feed-forward."""
    m = biped[0]
    pattern = demo.walking_pattern(m)
    return pattern, demo.feedforward(m, pattern)


def mujoco_run(m, mjm, pattern, ff, push=None) -> demo.Run:
    """demo.simulate's loop on MuJoCo: the same controller (demo.Balance) and feed-forward, mj_step,
    the CoP from mj_contactForce. ``push(t)``: an extra force (3,) on the torso."""
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = pattern.qpos[0]
    balance = demo.Balance(m, pattern, ff)
    torso = mjm.body("BODY").id
    n = len(pattern.t)
    run = demo.Run(np.empty((n, m.nq)), np.empty((n, m.nv)), np.empty((n, m.nu)), np.empty((n, m.nu)),
                   np.full((n, 2), np.nan), np.zeros(n), None, n)
    force = np.zeros(6)
    for k in range(n):
        run.qpos[k], run.qvel[k] = mjd.qpos, mjd.qvel
        if mjd.qpos[2] < demo.FALL_HEIGHT or demo.torso_tilt(mjd.qpos[3:7]) > demo.FALL_TILT:
            run.fell_at, run.n = float(pattern.t[k]), k + 1
            break
        run.ctrl[k] = mjd.ctrl[:] = balance(k, mjd.qpos, mjd.qvel)
        mjd.qfrc_applied[:] = ff.qfrc_applied[k]
        if push is not None:
            mjd.xfrc_applied[torso, :3] = push(pattern.t[k])
        mujoco.mj_step(mjm, mjd)
        run.actuator_force[k] = mjd.actuator_force
        moment, total = np.zeros(2), 0.0
        for i in range(mjd.ncon):
            mujoco.mj_contactForce(mjm, mjd, i, force)
            # the floor is geom 1: this is the force on the sole
            fz = (mjd.contact[i].frame.reshape(3, 3).T @ force[:3])[2]
            moment += fz * mjd.contact[i].pos[:2]
            total += fz
        if total > 0:
            run.cop[k], run.normal_force[k] = moment / total, total
    for name in ("qpos", "qvel", "ctrl", "actuator_force", "cop", "normal_force"):
        setattr(run, name, getattr(run, name)[:run.n])
    return run


@pytest.fixture(scope="module")
def mujoco_walk(biped, walk):
    """The default demo simulated by MuJoCo, analysed by the demo."""
    m, mjm = biped
    pattern, ff = walk
    return demo.analyse(m, pattern, ff, mujoco_run(m, mjm, pattern, ff))


@pytest.fixture(scope="module")
def kinedyn_walk(biped):
    """The default demo as `kinedyn demo` computes it (kinedyn.step with contacts)."""
    return demo.compute(m=biped[0])


# ---- the preview controller and the pattern (Kajita et al. 2003) -------------------------------------


def test_cart_table_zmp_is_eq_4():
    """p = C x = x - (z_c / g) x'' for the cart-table model; A and B integrate a constant jerk exactly."""
    dt, zc = 0.01, 0.8
    A, B, C = walking.cart_table(dt, zc)
    x = np.array([0.3, -0.2, 1.5])
    assert (C @ x)[0] == pytest.approx(0.3 - zc / walking.GRAVITY * 1.5)
    jerk = 2.0
    nxt = A @ x + B[:, 0] * jerk
    np.testing.assert_allclose(nxt, [0.3 - 0.2 * dt + 1.5 * dt**2 / 2 + jerk * dt**3 / 6,
                                     -0.2 + 1.5 * dt + jerk * dt**2 / 2, 1.5 + jerk * dt], rtol=1e-14)


def test_preview_control_tracks_the_zmp_reference():
    """Kajita's figure: a ZMP step known 1.6 s ahead is tracked; the preview gains fade with the horizon;
    the CoM starts moving before the step (preview) and ends at rest over the new ZMP."""
    dt, zc = 0.005, 0.8
    gains = walking.preview_gains(dt, zc, 1.6)
    assert gains.Gp[0] == -gains.Gi
    assert abs(gains.Gp[-1]) < 1e-2 * abs(gains.Gp).max()
    t = np.arange(0, 6, dt)
    ref = np.where(t < 2.0, 0.0, 0.1)
    state, zmp = walking.preview_control(gains, ref)
    np.testing.assert_allclose(zmp, state[:, 0] - zc / walking.GRAVITY * state[:, 2], atol=1e-15)
    assert np.abs(zmp - ref)[(t < 1.9) | (t > 2.5)].max() < 2e-3  # away from the step itself
    assert state[np.searchsorted(t, 1.8), 0] > 1e-3                 # moves before the step
    np.testing.assert_allclose(state[-1], [0.1, 0.0, 0.0], atol=1e-4)
    # two axes at once are two independent single-axis runs
    both, _ = walking.preview_control(gains, np.column_stack([ref, -2 * ref]))
    np.testing.assert_allclose(both[:, 1], -2 * state, atol=1e-12)


def test_footstep_plan_zmp_and_swing_feet():
    gait = demo.Gait(nstep=4)
    plan = walking.footstep_plan(gait.nstep, gait.stride, 0.2, gait.single_support, gait.double_support,
                                 gait.t_start, gait.t_stop)
    assert [s.side for s in plan.steps] == ["r", "l", "r", "l"]
    assert [s.end[0] for s in plan.steps] == pytest.approx([0.15, 0.3, 0.45, 0.45])
    assert plan.t_end == pytest.approx(gait.duration)
    t = np.arange(0, plan.t_end, 0.002)
    zmp = walking.zmp_reference(plan, t)
    feet = walking.foot_trajectories(plan, t, 0.04)
    for step in plan.steps:
        support = "l" if step.side == "r" else "r"
        swing = (t > step.t_lift) & (t < step.t_land)
        # the ZMP on the support sole
        np.testing.assert_allclose(zmp[swing], feet[support][swing, :2], atol=1e-12)
        assert np.all(feet[support][swing, 2] == 0)
        assert feet[step.side][swing, 2].max() == pytest.approx(0.04, abs=1e-5)
    assert np.all(feet["r"][:, 2] >= 0) and np.all(feet["l"][:, 2] >= 0)
    np.testing.assert_allclose(zmp[-1], [0.45, 0.0], atol=1e-12)


def test_pattern_puts_soles_and_centre_of_mass_on_their_paths_in_mujoco(biped, walk):
    """leg6's angles and the torso placement, through MuJoCo's kinematics: the soles on their
    planned poses, the whole robot's CoM (subtree_com of the world) on the preview controller's path."""
    m, mjm = biped
    pattern, _ = walk
    mjd = mujoco.MjData(mjm)
    soles = {side: mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SITE, f"{side}_sole") for side in demo.SIDES}
    for k in np.linspace(0, len(pattern.t) - 1, 60).round().astype(int):
        mjd.qpos[:] = pattern.qpos[k]
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_comPos(mjm, mjd)
        np.testing.assert_allclose(mjd.subtree_com[0][:2], pattern.com[k, :2], atol=1e-9)
        for side, site in soles.items():
            np.testing.assert_allclose(mjd.site_xpos[site], pattern.sole_pos[side][k], atol=1e-10)
            np.testing.assert_allclose(mjd.site_xmat[site].reshape(3, 3), np.eye(3), atol=1e-10)
        inside = (pattern.qpos[k, 7:] >= m.jnt_range[1:, 0]) & (pattern.qpos[k, 7:] <= m.jnt_range[1:, 1])
        assert inside.all(), f"sample {k}: joint angles outside their ranges"
    # the cart-table ZMP of the planned CoM stays on the reference within 2 cm while a foot swings
    swing = pattern.share_right % 1.0 == 0
    assert np.abs(pattern.zmp_cart - pattern.zmp_ref)[swing].max() < 0.02


def test_inverse_dynamics_is_mj_inverse_and_the_feet_carry_the_base(biped, walk):
    """The feed-forward's inverse dynamics are mj_inverse's (contacts off) on the same samples, and the
    foot wrenches through MuJoCo's sole Jacobians give back the free joint's force: the leg torques are
    qfrc_inverse - J' w with nothing left on the free joint."""
    m, mjm = biped
    pattern, ff = walk
    inverse = ff.inverse
    np.testing.assert_array_equal(inverse.qpos, pattern.qpos)  # one inverse sample per pattern sample
    mjm_free = mujoco.MjModel.from_xml_string(models.xml("biped"))
    mjm_free.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)  # as in the feed-forward
    d, mjd = kd.Data(m), mujoco.MjData(mjm_free)
    soles = {side: mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SITE, f"{side}_sole") for side in demo.SIDES}
    for k in np.linspace(0, len(inverse.t) - 1, 25).round().astype(int):
        set_same_state(m, d, mjm_free, mjd, inverse.qpos[k], inverse.qvel[k], qacc=inverse.qacc[k])
        mujoco.mj_inverse(mjm_free, mjd)
        np.testing.assert_allclose(inverse.qfrc_inverse[k], mjd.qfrc_inverse, rtol=1e-9, atol=1e-9)
        through_feet = ff.qfrc_legs[k].copy()
        for side, site in soles.items():
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacSite(mjm_free, mjd, jacp, jacr, site)
            through_feet += np.vstack([jacp, jacr]).T @ ff.wrench[side][k]
        np.testing.assert_allclose(through_feet, mjd.qfrc_inverse, rtol=1e-9, atol=1e-8)
        assert np.abs(ff.qfrc_legs[k, :6]).max() < 1e-8
        # each loaded foot's planned centre of pressure is inside its sole box
        for side in demo.SIDES:
            force, torque = ff.wrench[side][k, :3], ff.wrench[side][k, 3:]
            if force[2] > 1.0:
                cop = np.array([-torque[1], torque[0]]) / force[2]  # relative to the sole point
                assert -0.08 < cop[0] < 0.12 and abs(cop[1]) < 0.05, (k, side, cop)
    # standing still at the start, the feet share the weight
    weight = m.body_mass.sum() * -m.opt.gravity[2]
    assert ff.wrench["r"][0, 2] + ff.wrench["l"][0, 2] == pytest.approx(weight, rel=1e-6)
    # the servo damping is compensated: qfrc_applied = leg torques + kv qvel on the servoed joints
    dof = m.jnt_dofadr[m.actuator_trnid[:, 0]]
    np.testing.assert_allclose(ff.qfrc_applied[:, dof] - ff.qfrc_legs[:, dof],
                               -m.actuator_biasprm[:, 2] * inverse.qvel[:, dof], rtol=1e-12, atol=1e-12)
    assert np.all(ff.qfrc_applied[:, :6] == 0)  # no harness


# ---- the walk ----------------------------------------------------------------------------------


def test_mujoco_walks_the_demo(mujoco_walk):
    """MuJoCo simulating the same model (sole boxes on the floor plane) under the demo's servo commands and
    feed-forward: no fall, at least six steps forward, the torso upright and the CoP near the plan."""
    result = mujoco_walk
    assert not result.fell, f"fell at t = {result.run.fell_at}"
    assert result.steps >= 6
    assert result.distance > 6 * demo.Gait().stride * 0.9
    assert result.max_tilt < np.radians(5)
    assert np.abs(result.tracking_error).max() < np.radians(5)
    cop = result.cop_error[np.isfinite(result.cop_error)]
    assert np.sqrt(np.mean(cop**2)) < 0.05


def test_mujoco_without_feed_forward_falls(biped, walk):
    """The feed-forward matters: the servos alone (the same commands) do not carry the robot."""
    m, mjm = biped
    pattern, ff = walk
    zero = demo.Feedforward(ff.inverse, ff.qfrc_legs, ff.wrench, np.zeros_like(ff.qfrc_applied))
    run = mujoco_run(m, mjm, pattern, zero)
    assert run.fell_at is not None or demo.count_steps(m, pattern, run.qpos) < 6


@pytest.mark.parametrize("push", [(20.0, 0.0), (0.0, 40.0)], ids=["forward", "left"])
def test_balance_feedback_survives_a_push_that_the_open_loop_plan_does_not(biped, walk, push):
    """A push on the torso for 0.2 s at t = 2 s (20 N forward, 40 N sideways: 4-8 N s): with
    the capture-point feedback (demo.Balance) MuJoCo's biped walks on; played open loop, it falls."""
    m, mjm = biped
    pattern, ff = walk
    force = np.array([*push, 0.0])

    def shove(t):
        return force if 2.0 <= t < 2.2 else np.zeros(3)

    closed = demo.analyse(m, pattern, ff, mujoco_run(m, mjm, pattern, ff, push=shove))
    assert not closed.fell and closed.steps >= 6
    open_loop = dataclasses.replace(pattern, gait=dataclasses.replace(pattern.gait, dcm_gain=0.0))
    run = mujoco_run(m, mjm, open_loop, ff, push=shove)
    assert run.fell_at is not None or demo.count_steps(m, pattern, run.qpos) < 6


def test_walks_on_a_less_grippy_floor(walk):
    """Friction 0.6 instead of 1 (MuJoCo, elliptic cones as biped.xml sets): still eight steps."""
    pattern, ff = walk
    xml = models.xml("biped")
    assert 'cone="elliptic"' in xml and xml.count('friction="1 0.005 0.0001"') == 2
    xml = xml.replace('friction="1 0.005 0.0001"', 'friction="0.6 0.005 0.0001"')
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    result = demo.analyse(m, pattern, ff, mujoco_run(m, mjm, pattern, ff))
    assert not result.fell and result.steps == 8


def test_summary_numbers_are_those_of_the_arrays(biped, walk, mujoco_walk):
    m, mjm = biped
    pattern, ff = walk
    result = mujoco_walk
    run = result.run
    adr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    assert result.leg_joints == [f"{leg}LEG_J{k}" for leg in "RL" for k in range(6)]
    np.testing.assert_array_equal(result.tracking_error, run.qpos[:, adr] - run.ctrl)
    np.testing.assert_array_equal(result.peak_servo_force, np.abs(run.actuator_force).max(axis=0))
    assert result.distance == run.qpos[-1, 0] - run.qpos[0, 0]
    # steps: the landed soles, by MuJoCo's kinematics, near their footprints
    mjd = mujoco.MjData(mjm)
    dt = pattern.t[1] - pattern.t[0]
    for step in pattern.plan.steps[:result.steps]:
        mjd.qpos[:] = run.qpos[round((step.t_land + pattern.plan.double_support / 2) / dt)]
        mujoco.mj_kinematics(mjm, mjd)
        sole = mjd.site_xpos[mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SITE, f"{step.side}_sole")]
        assert np.linalg.norm(sole[:2] - step.end) < 0.05 and sole[2] < 0.01


def test_outputs_are_written(biped, mujoco_walk, tmp_path):
    """Plots, CSVs and the GIF (short) from a run."""
    m, _ = biped
    files = demo.write_outputs(m, mujoco_walk, tmp_path, fps=0.5)
    for name in ("zmp", "torques", "tracking_error", "reference", "simulated", "animation"):
        assert files[name].stat().st_size > 1000, name


def test_kinedyn_walks_the_demo(kinedyn_walk):
    """`kinedyn demo` as shipped: no fall, at least six steps forward."""
    result = kinedyn_walk
    assert not result.fell, f"fell at t = {result.run.fell_at}"
    assert result.steps >= 6
    assert result.max_tilt < np.radians(5)


def test_kinedyn_run_is_mujocos_simulation(biped, walk, kinedyn_walk, mujoco_walk):
    """kinedyn's walk and MuJoCo's under the same inputs: the same states step for step over the whole
    8 s (4100 steps, contacts coming and going at the sole corners), the same servo forces, and the
    same centres of pressure from the contact forces. Measured over the whole walk: qpos at most
    5e-15 apart, qvel 3e-13, servo forces 3e-12 (of up to 27 N m), CoP 2e-14 m, normal forces
    3e-13 relative; the bars below leave a factor of 20-40."""
    run, ref = kinedyn_walk.run, mujoco_walk.run
    assert run.n == ref.n
    np.testing.assert_allclose(run.qpos, ref.qpos, rtol=0, atol=1e-13)
    np.testing.assert_allclose(run.qvel, ref.qvel, rtol=0, atol=1e-11)
    np.testing.assert_allclose(run.actuator_force, ref.actuator_force, rtol=0, atol=1e-10)
    both = np.isfinite(run.cop[:, 0]) & np.isfinite(ref.cop[:, 0])
    np.testing.assert_array_equal(both, np.isfinite(run.cop[:, 0]))
    np.testing.assert_allclose(run.cop[both], ref.cop[both], rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.normal_force, ref.normal_force, rtol=1e-11, atol=0)


def test_example_script_runs(capsys):
    """examples/biped_walk.py (the demo's stages by hand, a shorter, slower walk) plans and reports."""
    script = Path(__file__).resolve().parents[1] / "examples" / "biped_walk.py"
    names = runpy.run_path(str(script), run_name="__main__")
    assert names["pattern"].gait.nstep == 4
    assert "planned ZMP" in capsys.readouterr().out
