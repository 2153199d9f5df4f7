"""kinedyn.cli.demo against MuJoCo: the IK motion puts the soles on their targets, the tracked
simulation is MuJoCo's simulation under the same inputs, and the reported numbers are
those of the arrays they summarise; the renderer rejects bad frames. (The command itself is run in
test_cli.py.)"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import mujoco
import numpy as np
import pytest
from cases import pair
from oracle import set_same_state

import kinedyn as kd
from kinedyn import models
from kinedyn.cli import demo
from kinedyn.viewer import render

DURATION = demo.DEFAULT_DURATION  # the demo as shipped: 1500 samples, ~1 s of test time


@pytest.fixture(scope="module")
def biped():
    """(m, mjm) for the bundled biped, each with the model's own options (implicitfast)."""
    m, _, mjm, _ = pair(models.xml("biped"), "biped")
    return m, mjm


@pytest.fixture(scope="module")
def result(biped):
    return demo.compute(DURATION, m=biped[0])


def test_min_jerk_rests_at_both_ends():
    s = np.linspace(-0.5, 1.5, 2001)
    y = demo.min_jerk(s)
    assert y[0] == 0 and y[-1] == 1 and np.all(np.diff(y) >= 0)
    h = 1e-5  # velocity and acceleration vanish at 0 and 1 (central differences)
    for end in (0.0, 1.0):
        v = (demo.min_jerk(end + h) - demo.min_jerk(end - h)) / (2 * h)
        a = (demo.min_jerk(end + h) - 2 * demo.min_jerk(end) + demo.min_jerk(end - h)) / h**2
        assert abs(v) < 1e-8 and abs(a) < 1e-3


def test_ik_motion_puts_soles_and_torso_on_their_targets_in_mujoco(biped):
    """leg6's angles, run through MuJoCo's forward kinematics, reproduce every sole and torso target."""
    m, mjm = biped
    motion = demo.squat_and_step(m, 3.0, timestep=0.05)  # the whole motion, coarsely
    mjd = mujoco.MjData(mjm)
    soles = {side: mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SITE, f"{side}_sole")
             for side in demo.SIDES}
    torso = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_BODY, "BODY")
    lifted = 0.0
    for k, q in enumerate(motion.qpos):
        mjd.qpos[:] = q
        mujoco.mj_kinematics(mjm, mjd)
        np.testing.assert_allclose(mjd.xpos[torso], motion.torso_pos[k], atol=1e-12)
        for side, site in soles.items():
            np.testing.assert_allclose(mjd.site_xpos[site], motion.sole_pos[side][k], atol=1e-10)
            np.testing.assert_allclose(mjd.site_xmat[site].reshape(3, 3), np.eye(3), atol=1e-10)  # flat
        lifted = max(lifted, motion.sole_pos["r"][k, 2])
        inside = (q[7:] >= m.jnt_range[1:, 0] - 1e-12) & (q[7:] <= m.jnt_range[1:, 1] + 1e-12)
        assert inside.all(), f"sample {k}: joint angles outside their ranges"
    # the motion does what its name says: a squat, a step forward with a lifted foot
    assert motion.torso_pos[:, 2].min() == pytest.approx(demo.STAND_HEIGHT - demo.SQUAT_DEPTH, abs=1e-3)
    assert lifted == pytest.approx(demo.STEP_HEIGHT, abs=1e-3)
    assert motion.sole_pos["r"][-1, 0] == pytest.approx(demo.STEP_LENGTH)


def test_inverse_dynamics_torques_are_mujocos(biped, result):
    """The torques the demo reports are mj_inverse's on the same (qpos, qvel, qacc) samples."""
    m, mjm = biped
    inverse = result.inverse
    np.testing.assert_array_equal(inverse.qpos, result.motion.qpos)  # aligned with the motion kept
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    for k in np.linspace(0, len(inverse.t) - 1, 12).round().astype(int):
        set_same_state(m, d, mjm, mjd, inverse.qpos[k], inverse.qvel[k], qacc=inverse.qacc[k])
        mujoco.mj_inverse(mjm, mjd)
        np.testing.assert_allclose(inverse.qfrc_inverse[k], mjd.qfrc_inverse, rtol=1e-9, atol=1e-9)


def test_tracking_run_is_mujocos_simulation_under_the_same_inputs(biped, result):
    """Replaying the recorded harness force and the servo commands in MuJoCo gives the same states."""
    m, mjm = biped
    motion, tracking = result.motion, result.tracking
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:], mjd.qvel[:] = tracking.qpos[0], tracking.qvel[0]
    servo_qposadr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    for k in range(len(motion.t) - 1):
        mjd.qfrc_applied[:] = 0.0
        mjd.qfrc_applied[:6] = tracking.harness[k]
        mjd.ctrl[:] = motion.qpos[k, servo_qposadr]
        mujoco.mj_step(mjm, mjd)
        if k == 0:
            np.testing.assert_allclose(tracking.actuator_force[0], mjd.actuator_force, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tracking.qpos[-1], mjd.qpos, rtol=1e-7, atol=1e-9)


def test_summary_numbers_are_those_of_the_arrays(biped, result):
    m, mjm = biped
    motion, inverse, tracking = result.motion, result.inverse, result.tracking
    leg_qposadr = np.array([m.jnt_qposadr[m.joint(name).id] for name in result.leg_joints])
    leg_dofadr = np.array([m.jnt_dofadr[m.joint(name).id] for name in result.leg_joints])
    assert result.leg_joints == [f"{leg}LEG_J{k}" for leg in "RL" for k in range(6)]
    np.testing.assert_array_equal(result.tracking_error,
                                  tracking.qpos[:, leg_qposadr] - motion.qpos[:, leg_qposadr])
    np.testing.assert_array_equal(result.peak_torque,
                                  np.abs(inverse.qfrc_inverse[:, leg_dofadr]).max(axis=0))
    np.testing.assert_array_equal(result.peak_servo_force, np.abs(tracking.actuator_force).max(axis=0))
    # sole error from MuJoCo's kinematics of the simulated states
    mjd = mujoco.MjData(mjm)
    site = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SITE, "r_sole")
    for k in (0, len(motion.t) // 2, len(motion.t) - 1):
        mjd.qpos[:] = tracking.qpos[k]
        mujoco.mj_kinematics(mjm, mjd)
        expected = np.linalg.norm(mjd.site_xpos[site] - motion.sole_pos["r"][k])
        assert result.sole_error[k, 0] == pytest.approx(expected, abs=1e-12)
    # the servos do track: a few degrees at most, and the torso stays on its path (the harness works)
    assert np.abs(result.tracking_error).max() < np.radians(8)
    assert result.sole_error.max() < 0.03
    np.testing.assert_allclose(tracking.qpos[:, :3], motion.qpos[:, :3], atol=2e-3)
    # the support carries the robot's weight when it stands still at the start
    weight = m.body_mass.sum() * -m.opt.gravity[2]
    assert inverse.qfrc_inverse[0, 2] == pytest.approx(weight, rel=1e-3)


@pytest.mark.parametrize(("frames", "fragment"), [
    (np.zeros((0, 19)), "nframe >= 1"),
    (np.zeros((3, 7)), "(nframe >= 1, 19)"),
    (np.where(np.arange(19) == 4, np.nan, 0.0)[None].repeat(2, axis=0), "qpos_frames[0, 4] is nan"),
], ids=["no-frames", "wrong-width", "nan"])
def test_animate_rejects_bad_frames(biped, tmp_path, frames, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        render.animate(biped[0], frames, tmp_path / "x.gif")
    assert not (tmp_path / "x.gif").exists()


def test_example_script_runs_and_tracks_its_own_samples(capsys):
    """examples/biped_squat_step.py (the demo's stages by hand, 5 s motion) runs, and its
    tracking covers exactly the samples its inverse dynamics kept."""
    script = Path(__file__).resolve().parents[1] / "examples" / "biped_squat_step.py"
    names = runpy.run_path(str(script), run_name="__main__")
    result = names["result"]
    np.testing.assert_array_equal(result.motion.t, names["inverse"].t)
    assert result.tracking_error.shape == (len(result.motion.t), 12)
    assert "soles within" in capsys.readouterr().out
