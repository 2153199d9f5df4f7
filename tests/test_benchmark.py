"""kinedyn.cli.benchmark and bench/scaling.py: smoke runs with tiny repeat counts, no timed assertions.

What is checked for real: the table and JSON hold every requested row, peers that are
missing or not comparable are reported instead of timed, the libraries are interleaved,
and the conversion of a MuJoCo state to Pinocchio's conventions (quaternion order, free-
joint velocity frame) gives the same mass matrix and the same inverse dynamics as MuJoCo.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

import kinedyn as kd
from kinedyn.cli import benchmark
from tests.oracle import gym_model_path

pin = pytest.importorskip("pinocchio")

TINY = ["--repeat", "1", "--target-ms", "0.2", "--batch", "2", "--nstep", "2", "--threads", "1"]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    benchmark.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_run_writes_table_and_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    functions = ["kinematics", "rne_acc", "jac_site", "rollout"]
    args = parse("--models", "pendulum", "arm7", "--functions", *functions, *TINY, "--json", str(out))
    assert benchmark.run(args) == 0
    printed = capsys.readouterr().out
    assert "kd/mj" in printed and "machine:" in printed and "versions:" in printed

    report = json.loads(out.read_text())
    assert set(report) == {"machine", "versions", "settings", "models", "results", "notes"}
    assert report["versions"]["mujoco"] == mujoco.__version__
    rows = {(r["model"], r["function"]): r for r in report["results"]}
    assert set(rows) == {(m, f) for m in ("pendulum", "arm7") for f in functions}
    for model in ("pendulum", "arm7"):
        row = rows[model, "kinematics"]
        for lib in ("kinedyn", "mujoco", "pin"):
            assert row[lib]["min_us"] > 0 and len(row[lib]["samples_us"]) == 1
        assert row["kd_over_mj"] == row["kinedyn"]["min_us"] / row["mujoco"]["min_us"]
    # the pendulum has no site: its body Jacobian is timed instead, and a note says so
    assert rows["pendulum", "jac_site"]["kinedyn"]["min_us"] > 0
    assert any(note.startswith("pendulum has no site") for note in report["notes"])
    assert rows["arm7", "jac_site"]["pin"] is None and rows["arm7", "jac_site"]["kinedyn"]["min_us"] > 0
    # the rollout is timed per step in MuJoCo; kinedyn's until kinedyn.tools.batch.rollout lands
    rollout = rows["arm7", "rollout"]
    assert rollout["unit"] == "µs per step" and rollout["mujoco"]["min_us"] > 0
    if importlib.util.find_spec("kinedyn.tools.batch") is None:
        assert rollout["kinedyn"] is None and "not available" in rollout["kinedyn_note"]
        assert "not available" in printed
    else:
        assert rollout["kinedyn"]["min_us"] > 0, rollout["kinedyn_note"]


def test_run_without_mujoco_and_pinocchio(monkeypatch, capsys):
    real = benchmark.optional_module
    monkeypatch.setattr(benchmark, "optional_module",
                        lambda name: None if name.split(".")[0] in ("mujoco", "pinocchio") else real(name))
    assert benchmark.run(parse("--models", "pendulum", "--functions", "kinematics", "step", *TINY)) == 0
    printed = capsys.readouterr().out
    assert "kinedyn[bench]" in printed
    report = benchmark.benchmark(benchmark.settings_from(parse("--models", "pendulum", "--functions",
                                                               "forward", *TINY)))
    (row,) = report["results"]
    assert row["kinedyn"]["min_us"] > 0 and row["mujoco"] is None and row["pin"] is None
    assert "not installed" in row["mujoco_note"] and row["kd_over_mj"] is None


def test_bad_options_exit_2_and_name_the_problem(capsys):
    assert benchmark.run(parse("--models", "pendulm")) == 2
    assert "'pendulum'" in capsys.readouterr().err
    assert benchmark.run(parse("--models", "pendulum", "--repeat", "0")) == 2
    assert "--repeat" in capsys.readouterr().err


def test_gymnasium_missing_falls_back_to_bundled_models(monkeypatch):
    monkeypatch.setattr(benchmark, "gymnasium_asset", lambda filename: None)
    arm, note = benchmark.model_source("arm")
    assert note is None and arm.name == "arm7" and "gymnasium is not installed" in arm.note
    humanoid, note = benchmark.model_source("humanoid")
    assert humanoid is None and "biped" in note


def test_libraries_take_turns_and_failures_are_reported():
    calls = []

    def case(lib: str, fail: bool = False) -> benchmark.Case:
        def call() -> None:
            if fail:
                raise RuntimeError("stage not written")
            calls.append(lib)
        return benchmark.Case(call, prepare=lambda: calls.append(f"prepare {lib}"))

    cases = {"kinedyn": case("kinedyn"), "mujoco": case("mujoco"), "pin": case("pin", fail=True)}
    timings, problems = benchmark.time_interleaved(cases, lambda: None, repeat=4, target_ns=10_000)
    assert set(timings) == {"kinedyn", "mujoco"} and "stage not written" in problems["pin"]
    assert all(len(t.samples_us) == 4 and t.min_us > 0 for t in timings.values())
    timed = [c for c in calls if c.startswith("prepare")][-8:]  # the four repeats, after the warm-up
    assert timed == ["prepare kinedyn", "prepare mujoco", "prepare mujoco", "prepare kinedyn"] * 2


@pytest.mark.parametrize("name", ["biped", "humanoid"])
def test_pinocchio_state_is_the_same_state(name):
    """T^T M_pin T = M and T^T rnea_pin = mj_rne: the converted q, v, a are MuJoCo's state."""
    xml = kd.models.xml("biped") if name == "biped" else gym_model_path(name).read_text()
    subject = benchmark.Subject(benchmark.Source(name, name, xml), seed=3)
    assert subject.pm is not None, subject.unavailable.get("pin")
    assert subject.pin_mass_deviation < 1e-12

    mjm, mjd, m, d = subject.mjm, subject.mjd, subject.m, subject.d
    expected = np.zeros(m.nv)
    mujoco.mj_kinematics(mjm, mjd)
    mujoco.mj_comPos(mjm, mjd)
    mujoco.mj_comVel(mjm, mjd)
    mujoco.mj_rne(mjm, mjd, 1, expected)
    expected += mjm.dof_armature * mjd.qacc  # pin.rnea includes the rotor inertia, mj_rne does not
    tau = pin.rnea(subject.pm, subject.pd, subject.pin_q, subject.pin_v, subject.pin_a)
    kd.kinematics(m, d)
    T = benchmark.velocity_map(m, d)
    np.testing.assert_allclose(T.T @ tau, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_pinocchio_model_of_other_joints_is_not_comparable():
    arm3 = kd.models.load("arm3")
    pm, reason = benchmark.pinocchio_model(pin, kd.models.xml("arm7"))
    assert reason is None
    assert "nq=" in benchmark.pinocchio_mismatch(pm, arm3)
    assert benchmark.pinocchio_mismatch(pm, kd.models.load("arm7")) is None


def test_pusher_inertias_differ_in_pinocchio_and_are_flagged():
    source, _ = benchmark.model_source("arm")
    if source.name != "arm":
        pytest.skip("gymnasium is not installed")
    subject = benchmark.Subject(source)
    assert subject.pm is not None and subject.pin_mass_deviation > 1e-3
    assert any("other inertias" in note for note in subject.notes)


# ---------------------------------------------------------------- bench/scaling.py

@pytest.fixture(scope="module")
def scaling():
    """bench/scaling.py (importable from the repository root only: these tests skip elsewhere)."""
    return pytest.importorskip("bench.scaling", reason="run from the repository root")


@pytest.mark.parametrize("topology", ["chain", "tree"])
def test_scaling_models_have_the_asked_size_and_depth(scaling, topology):
    for nv in (1, 2, 7, 31, 32):
        xml = scaling.tree_xml(nv, topology)
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = kd.Model.from_xml_string(xml)
        assert mjm.nv == m.nv == nv
        depth = scaling.depth(m)
        assert depth == (nv if topology == "chain" else int(np.floor(np.log2(nv))) + 1)


def test_scaling_smoke(scaling, tmp_path):
    out = tmp_path / "scaling"
    argv = ["--nv", "1", "4", "9", "--repeat", "1", "--target-ms", "0.2", "--fit-from", "1",
            "--out", str(out)]
    assert scaling.main(argv) == 0
    data = json.loads(Path(f"{out}.json").read_text())
    assert Path(f"{out}.png").stat().st_size > 0
    points = data["points"]
    assert {(p["topology"], p["function"], p["nv"]) for p in points} == {
        (t, f, n) for t in ("chain", "tree") for f in ("rne", "crb") for n in (1, 4, 9)}
    assert all(p["kinedyn_us"] > 0 and p["mujoco_us"] > 0 for p in points)
    assert set(data["slopes"]) == {f"{lib} {f} {t}" for lib in ("kinedyn", "mujoco")
                                   for f in ("rne", "crb") for t in ("chain", "tree")}
    assert all(np.isfinite(slope) for slope in data["slopes"].values())


def test_fit_slope_recovers_a_power_law(scaling):
    nv = [1, 2, 8, 32, 64, 200]
    assert scaling.fit_slope(nv, [3.0 * n**1.7 for n in nv], fit_from=8) == pytest.approx(1.7)
    assert scaling.fit_slope(nv, [1.0] * 6, fit_from=100) is None
    # a fixed per-call cost flattens the raw slope; subtracted, the exponent is recovered
    with_fixed = [2.0 + 0.01 * n**2 for n in nv]
    assert scaling.fit_slope(nv, with_fixed, fit_from=8) < 1.7
    assert scaling.fit_slope(nv, with_fixed, fit_from=8, fixed_us=2.0) == pytest.approx(2.0)


# ---------------------------------------------------------------- contact models


@pytest.mark.parametrize("name", ["ant-floor", "humanoid-floor"])
def test_floor_models_start_standing_with_mujocos_contacts(name):
    """The standing state, kinedyn's settle from qpos0, is MuJoCo's to the last bit (measured: both
    models, 100 steps with contacts), with the feet on the floor."""
    source, note = benchmark.model_source(name)
    if source is None:
        pytest.skip(note)
    subject = benchmark.Subject(source)
    assert subject.unavailable.get("pin") == "Pinocchio simulates no contacts"
    mjm, mjd = subject.mjm, subject.mjd
    assert mjm.opt.disableflags == 0  # contacts and every constraint on, the model's own options
    mujoco.mj_resetData(mjm, mjd)
    for _ in range(source.settle_steps):
        mujoco.mj_step(mjm, mjd)
    time_, qpos, qvel, _ = subject.standing
    assert time_ == pytest.approx(mjd.time)
    np.testing.assert_array_equal(qpos, mjd.qpos)
    np.testing.assert_array_equal(qvel, mjd.qvel)

    subject.randomise()  # a contact model's "random" state is the standing state, in both libraries
    kd.forward(subject.m, subject.d)
    mujoco.mj_forward(mjm, mjd)
    feet = {"ant-floor": 4, "humanoid-floor": 2}[name]
    assert subject.d.ncon == mjd.ncon == feet
    np.testing.assert_array_equal(subject.d.contact.geom, mjd.contact.geom)
    initial, control = subject._rollout_inputs()
    assert np.all(initial[:, 0] == time_) and np.all(initial[:, 1:1 + subject.nq] == qpos)


def test_floor_models_time_forward_step_and_rollout(tmp_path):
    if benchmark.gymnasium_asset("ant.xml") is None:
        pytest.skip("gymnasium is not installed")
    out = tmp_path / "floor.json"
    args = parse("--models", "ant-floor", "--functions", "kinematics", "step", "rollout", *TINY,
                 "--json", str(out))
    assert benchmark.run(args) == 0
    report = json.loads(out.read_text())
    rows = {r["function"]: r for r in report["results"]}
    assert set(rows) == {"step", "rollout"}  # kinematics is not a contact row
    for row in rows.values():
        assert row["kinedyn"]["min_us"] > 0 and row["mujoco"]["min_us"] > 0 and row["pin"] is None
        assert row["kd_over_mj"] > 0
    assert any("4 contacts" in note and "MuJoCo 4 contacts" in note for note in report["notes"])
    assert any("only its forward, step, rollout rows" in note for note in report["notes"])
