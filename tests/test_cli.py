"""The ``kinedyn`` command end to end: every subcommand through the installed entry point, in a
subprocess, with its outputs checked against MuJoCo and its error paths (one line on stderr, exit 2).

Each call costs a Python start-up (~1-2 s), so calls are few and durations short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from kinedyn import models
from kinedyn.cli import main as cli

SRC = Path(__file__).resolve().parents[1] / "src"
_SCRIPT = Path(sys.executable).with_name("kinedyn")
# the console script pip installed (`kinedyn`); `python -m kinedyn.cli.main` runs the same main() if absent
ENTRY = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "kinedyn.cli.main"]


def kinedyn(*args, cwd=None) -> subprocess.CompletedProcess:
    """Run ``kinedyn ARGS`` on this source tree; stdout and stderr captured as text."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([*ENTRY, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600, check=False)


def assert_usage_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2 and exactly one line on stderr, containing every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def mujoco_model(name: str) -> mujoco.MjModel:
    """A bundled model as MuJoCo compiles it, with everything kinedyn simulates (limits, contacts) on."""
    return mujoco.MjModel.from_xml_string(models.xml(name))


def read_trajectory_csv(path: Path) -> tuple[list[str], np.ndarray]:
    header = path.read_text().splitlines()[0].split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


# ---------------------------------------------------------------- help and bad models


def test_help_lists_every_command():
    proc = kinedyn("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: kinedyn")
    for name in ("demo", "info", "simulate", "inverse-dynamics", "ik", "bench", "exit status"):
        assert name in proc.stdout


@pytest.mark.parametrize("command", ["demo", "info", "simulate", "inverse-dynamics", "ik", "bench"])
def test_subcommand_help(command, capsys):
    """Each subcommand's --help (in-process: same parser, no start-up cost)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kinedyn {command}")
    assert "--out" in out or "--json" in out


def test_info_json_matches_mujoco():
    proc = kinedyn("info", "biped", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    mjm = mujoco_model("biped")
    assert info["sizes"] == {"nq": mjm.nq, "nv": mjm.nv, "nu": mjm.nu, "na": mjm.na, "nbody": mjm.nbody,
                             "njnt": mjm.njnt, "ntendon": mjm.ntendon, "nsite": mjm.nsite}
    assert [b["name"] for b in info["bodies"]] == [mjm.body(i).name for i in range(1, mjm.nbody)]
    assert [b["parent"] for b in info["bodies"]] == [mjm.body(mjm.body_parentid[i]).name
                                                    for i in range(1, mjm.nbody)]
    np.testing.assert_allclose([b["mass"] for b in info["bodies"]], mjm.body_mass[1:], rtol=1e-12)
    for j, joint in enumerate(info["joints"]):
        assert joint["name"] == mjm.joint(j).name and joint["qposadr"] == mjm.jnt_qposadr[j]
        assert (joint["range"] is None) == (not mjm.jnt_limited[j])
        if joint["range"] is not None:
            np.testing.assert_allclose(joint["range"], mjm.jnt_range[j])
    for a, actuator in enumerate(info["actuators"]):
        assert actuator["name"] == mjm.actuator(a).name
        assert actuator["transmission"] == f"joint {mjm.joint(mjm.actuator_trnid[a, 0]).name}"
        np.testing.assert_allclose(actuator["gainprm"], mjm.actuator_gainprm[a, :3])
        np.testing.assert_allclose(actuator["biasprm"], mjm.actuator_biasprm[a, :3])
        np.testing.assert_allclose(actuator["ctrlrange"], mjm.actuator_ctrlrange[a])
    assert [s["name"] for s in info["sites"]] == [mjm.site(i).name for i in range(mjm.nsite)]


def test_info_tables():
    proc = kinedyn("info", "biped")
    assert proc.returncode == 0, proc.stderr
    for heading in ("bodies", "joints", "actuators", "sites", "RLEG_J3_servo", "LLEG_LINK5", "r_sole",
                    "[0, 2.6]", "affine 0 -300 -10"):
        assert heading in proc.stdout


# every command loads its model through one helper; each bad-model case goes through a different one
@pytest.mark.parametrize("command, content, fragments", [
    (["info"], None, ["cannot read model file", "model.xml"]),
    (["simulate"], "<mujoco><worldbody><body><joint axis='0 1'/></body></worldbody></mujoco>",
     ["axis", "line 1"]),
    # MuJoCo's parser names the line of the unclosed element
    (["ik", "--site", "s", "--pos", "0", "0", "0"], "<mujoco><worldbody>\n", ["malformed XML", "line 1"]),
], ids=["missing", "invalid", "malformed"])
def test_bad_model_file(tmp_path, command, content, fragments):
    path = tmp_path / "model.xml"
    if content is not None:
        path.write_text(content)
    assert_usage_error(kinedyn(command[0], path, *command[1:], cwd=tmp_path), *fragments)


def test_unsimulated_feature_is_refused_unless_allowed(tmp_path):
    path = tmp_path / "model.xml"
    path.write_text("<mujoco><worldbody><body><joint name='j'/><geom size='.1'/></body></worldbody>\n"
                    "<actuator><pid joint='j' kp='5' nsample='3' delay='0.02'/></actuator></mujoco>")
    assert_usage_error(kinedyn("info", path, cwd=tmp_path), "pid", "line 2", "allow_unsupported")
    proc = kinedyn("info", path, "--allow-unsupported", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "<pid> actuators with several controls are not simulated" in proc.stderr


def test_misspelled_bundled_model_suggests_the_name():
    assert_usage_error(kinedyn("ik", "bipd", "--site", "r_sole", "--pos", 0, 0, 0),
                       "no bundled model 'bipd'", "'biped'")


# ---------------------------------------------------------------- simulate


def mujoco_rollout(name, duration, ctrl_at, key: str | None = None):
    """MuJoCo's trajectory of bundled model ``name`` with ctrl = ctrl_at(t) set before each step,
    from keyframe ``key`` (mj_resetDataKeyframe) or qpos0."""
    mjm = mujoco_model(name)
    mjd = mujoco.MjData(mjm)
    if key is not None:
        mujoco.mj_resetDataKeyframe(mjm, mjd, mjm.key(key).id)
    rows = []
    for _ in range(round(duration / mjm.opt.timestep) + 1):
        mjd.ctrl[:] = ctrl_at(mjd.time)
        rows.append([mjd.time, *mjd.qpos])
        mujoco.mj_step(mjm, mjd)
    return np.array(rows)


@pytest.mark.parametrize("key", ["squat", "0"])
def test_simulate_from_keyframe_matches_mujoco(tmp_path, key):
    """--key by name or index starts where mj_resetDataKeyframe does; the biped's own integrator
    (implicitfast) carries its servos, as in MuJoCo."""
    proc = kinedyn("simulate", "biped", "--key", key, "--duration", 0.02, "--ctrl", 0.1, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(implicitfast)" in proc.stdout
    _, rows = read_trajectory_csv(tmp_path / "trajectory.csv")
    np.testing.assert_allclose(rows, mujoco_rollout("biped", 0.02, lambda t: 0.1, key="squat"),
                               rtol=1e-9, atol=1e-12)


def test_simulate_constant_ctrl_matches_mujoco(tmp_path):
    proc = kinedyn("simulate", "pendulum", "--duration", 0.3, "--ctrl", 1.5, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, rows = read_trajectory_csv(tmp_path / "trajectory.csv")
    assert header == ["time", "hinge"]
    assert (tmp_path / "simulate.png").stat().st_size > 10_000
    assert str(tmp_path / "trajectory.csv") in proc.stdout
    np.testing.assert_allclose(rows, mujoco_rollout("pendulum", 0.3, lambda t: 1.5), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("interp", ["hold", "linear"])
def test_simulate_ctrl_csv_matches_mujoco(tmp_path, interp):
    # row times between steps (2 ms), so "the last row at or before t" has no rounding ties
    times, values = np.array([0.0, 0.0511, 0.1013]), np.array([1.0, -2.0, 0.5])
    (tmp_path / "ctrl.csv").write_text("time,hmotor\n" + "".join(
        f"{t},{v}\n" for t, v in zip(times, values, strict=True)))
    proc = kinedyn("simulate", "pendulum", "--duration", 0.2, "--ctrl", tmp_path / "ctrl.csv",
                   "--interp", interp, "--out", tmp_path, "-q")
    assert proc.returncode == 0, proc.stderr
    if interp == "hold":
        def ctrl_at(t):
            return values[times <= t][-1]
    else:
        def ctrl_at(t):
            return np.interp(t, times, values)
    _, rows = read_trajectory_csv(tmp_path / "trajectory.csv")
    np.testing.assert_allclose(rows, mujoco_rollout("pendulum", 0.2, ctrl_at), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("ctrl_arg, csv_text, fragments", [
    (["1", "2", "3"], None, ["--ctrl needs 1 value", "nu = 12", "got 3"]),
    (["ctrl.csv"], "time,RLEG_J0_srvo\n0,1\n", ["'RLEG_J0_srvo'", "no actuator", "mean 'RLEG_J0_servo'"]),
    (["ctrl.csv"], "time," + ",".join(f"{s}LEG_J{k}_servo" for s in "RL" for k in range(6))
     + "\n0" + ",0" * 12 + "\n0.1,x" + ",0" * 11 + "\n", ["line 3", "not a number"]),
], ids=["count", "unknown-column", "malformed-csv"])
def test_simulate_bad_ctrl(tmp_path, ctrl_arg, csv_text, fragments):
    if csv_text is not None:
        (tmp_path / "ctrl.csv").write_text(csv_text)
    proc = kinedyn("simulate", "biped", "--duration", 0.01, "--ctrl", *ctrl_arg, "--out", tmp_path / "out",
                   cwd=tmp_path)
    assert_usage_error(proc, *fragments)


# ---------------------------------------------------------------- ik


def test_ik_reaches_target_in_mujoco():
    target = np.array([0.4, 0.1, 0.6])
    proc = kinedyn("ik", "arm7", "--site", "ee", "--pos", *target, "--quat", 0, 1, 0, 0, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["success"] is True and result["pos_error"] < 1e-6
    mjm = mujoco_model("arm7")
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = result["qpos"]
    mujoco.mj_kinematics(mjm, mjd)
    np.testing.assert_allclose(mjd.site("ee").xpos, target, atol=1e-6)
    np.testing.assert_allclose(mjd.site("ee").xmat.reshape(3, 3), np.diag([1.0, -1.0, -1.0]), atol=1e-6)


def test_ik_table_and_unreachable_target_exits_1():
    proc = kinedyn("ik", "arm7", "--site", "ee", "--pos", 5, 5, 5)
    assert proc.returncode == 1, proc.stderr
    assert "NOT converged" in proc.stdout and "j7" in proc.stdout


@pytest.mark.parametrize("args, fragments", [
    (["--site", "eee", "--pos", "0", "0", "1"], ["no site named 'eee'", "'ee'"]),
    (["--site", "ee", "--pos", "0", "0"], ["--pos", "expected 3 arguments"]),
], ids=["unknown-site", "pos-count"])
def test_ik_bad_input(args, fragments):
    assert_usage_error(kinedyn("ik", "arm7", *args), *fragments)


# ---------------------------------------------------------------- inverse dynamics


def test_inverse_dynamics_recovers_the_motor_torque(tmp_path):
    """ID of MuJoCo's pendulum trajectory under a constant 1.5 N m motor gives back 1.5 N m.

    MuJoCo steps the pendulum with Euler; "fd" differences invert that step exactly, and
    --ctrl finds the motor command itself (gear 1).
    """
    rows = mujoco_rollout("pendulum", 0.2, lambda t: 1.5)
    traj = tmp_path / "traj.csv"
    np.savetxt(traj, rows, delimiter=",", header="time,hinge", comments="", fmt="%.17g")
    proc = kinedyn("inverse-dynamics", "pendulum", traj, "--ctrl", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "torques.png").stat().st_size > 10_000
    header, table = read_trajectory_csv(tmp_path / "out" / "torques.csv")
    column = dict(zip(header, table.T, strict=True))
    np.testing.assert_allclose(column["time"], rows[1:-1, 0], atol=1e-15)  # fd keeps the inner samples
    np.testing.assert_allclose(column["qfrc_inverse:hinge"], 1.5, rtol=1e-9)
    np.testing.assert_allclose(column["ctrl:hmotor"], 1.5, rtol=1e-9)
    assert "hinge" in proc.stdout and "1.5" in proc.stdout


@pytest.mark.parametrize("content, fragments", [
    (None, ["no trajectory file"]),
    ("time,hinge\n0,0.1,0.2\n0.002,0.1,0.2\n", ["line 2: 3 values, the header has 2"]),
    ("time,hing\n0,0.1\n0.002,0.1\n0.004,0.1\n", ["'hing'", "hinge"]),
], ids=["missing", "wrong-columns", "unknown-column"])
def test_inverse_dynamics_bad_trajectory(tmp_path, content, fragments):
    traj = tmp_path / "traj.csv"
    if content is not None:
        traj.write_text(content)
    assert_usage_error(kinedyn("inverse-dynamics", "pendulum", traj, "--out", tmp_path), *fragments)


# ---------------------------------------------------------------- demo


def test_demo_end_to_end(tmp_path):
    """The README's command, shortened to two steps: summary, plots, GIF, the paths printed; exit
    status 0 because the robot walks (the demo says "fell" and exits 1 when it does not)."""
    proc = kinedyn("demo", "--steps", 2, "--out", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("zmp.png", "torques.png", "tracking_error.png", "animation.gif", "reference.csv",
                 "simulated.csv"):
        assert (tmp_path / name).stat().st_size > 1000, name
        assert str(tmp_path / name) in proc.stdout
    for text in ("RLEG_J3", "peak feed-forward", "steps taken", "centre of pressure"):
        assert text in proc.stdout
    assert "fell" not in proc.stdout
    _, reference = read_trajectory_csv(tmp_path / "reference.csv")
    assert reference.shape == (1701, 20)  # 3.4 s at 2 ms, both ends; time + nq = 19


@pytest.mark.parametrize("args, fragments", [
    (["demo", "--steps", "0"], ["--steps", "must be a positive integer"]),
    (["demo", "--out", "taken"], ["cannot create output directory", "taken"]),
], ids=["no-steps", "out-is-a-file"])
def test_demo_bad_input(tmp_path, args, fragments):
    (tmp_path / "taken").write_text("a file, not a directory")
    assert_usage_error(kinedyn(*args, cwd=tmp_path), *fragments)


# ---------------------------------------------------------------- bench


def test_bench_end_to_end(tmp_path):
    """A tiny run through the console script: table on stdout, every asked row in the JSON."""
    out = tmp_path / "bench.json"
    proc = kinedyn("bench", "--models", "pendulum", "--functions", "forward", "rne", "--repeat", "1",
                   "--target-ms", "0.2", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "kd/mj" in proc.stdout
    rows = {(r["model"], r["function"]) for r in json.loads(out.read_text())["results"]}
    assert rows == {("pendulum", "forward"), ("pendulum", "rne")}


def test_bench_bad_input():
    assert_usage_error(kinedyn("bench", "--models", "pendulm"), "kinedyn bench: error:", "pendulum")
