"""Rollouts on a Ray cluster (kinedyn.tools.distributed, ``kinedyn rollout``), on a local 2-worker cluster.

The sharded results must equal ``kinedyn.tools.batch.rollout``'s bit for bit; a worker killed
mid-task (SIGKILL, as the OOM killer would) is retried with every shard written once; a rerun
resumes from the shards already written. Skipped, with the reason, only when Ray or Zarr is
missing: the ``test`` extra installs both.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from kinedyn import models
from kinedyn.tools import batch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None or importlib.util.find_spec("zarr") is None,
    reason="distributed rollouts need ray and zarr (pip install -e '.[test]' or 'kinedyn[ray]')")

NBATCH, NSTEP = 22, 150


@pytest.fixture(scope="module")
def problem():
    """arm7 (joint limits active: constraint rows in the solver) from scattered states under small
    random controls; the single-machine reference is computed first, which also fills the kernel
    cache the workers load from."""
    m = models.load("arm7")
    rng = np.random.default_rng(7)
    state0 = np.tile(np.concatenate([[0.0], m.qpos0, np.zeros(m.nv + m.na)]), (NBATCH, 1))
    state0[:, 1:1 + m.nq] += rng.uniform(-1.0, 1.0, size=(NBATCH, m.nq))
    state0[:, 1 + m.nq:1 + m.nq + m.nv] = rng.normal(size=(NBATCH, m.nv))
    control = 0.05 * rng.normal(size=(NBATCH, NSTEP, m.nu))
    reference = batch.rollout(m, state0, control)
    assert np.isfinite(reference.state).all()
    return m, state0, control, reference


@pytest.fixture(scope="module")
def cluster():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def distributed():
    from kinedyn.tools import distributed as module

    return module


def test_sharded_rollout_equals_batch_rollout_bit_for_bit(problem, cluster):
    m, state0, control, reference = problem
    dist = distributed()
    got = dist.rollout(m, state0, control, shard_size=5)  # 5 shards, the last one short
    assert np.array_equal(got.state, reference.state)
    assert np.array_equal(got.qpos, reference.qpos) and np.array_equal(got.qvel, reference.qvel)
    # broadcasting as batch.rollout: one control sequence for every state, one state for every control
    assert np.array_equal(dist.rollout(m, state0, control[:1], shard_size=8).state,
                          batch.rollout(m, state0, control[:1]).state)
    assert np.array_equal(dist.rollout(m, state0[0], control, shard_size=8).state,
                          batch.rollout(m, state0[0], control).state)


def test_killed_worker_task_is_retried_and_the_store_is_complete(problem, cluster, tmp_path):
    m, state0, control, reference = problem
    dist = distributed()
    store = tmp_path / "run.zarr"
    run = dist.rollout(m, state0, control, out=store, shard_size=4, _kill_once=(str(tmp_path), 2))
    assert (tmp_path / "killed-shard-2").exists(), "the worker running shard 2 was not killed"
    assert (run.nshard, run.computed, run.skipped) == (6, 6, 0)  # each shard written once
    assert np.array_equal(dist.load(store, m).state, reference.state)


def test_rerun_resumes_from_the_shards_already_written(problem, cluster, tmp_path):
    import zarr

    m, state0, control, reference = problem
    dist = distributed()
    store = tmp_path / "run.zarr"
    assert dist.rollout(m, state0, control, out=store, shard_size=4).computed == 6
    # a run stopped early: shards 1 and 4 never marked done, their rows half-written (garbage)
    group = zarr.open_group(str(store), mode="r+")
    for k in (1, 4):
        group["done"][k] = False
        group["state"][4 * k:4 * k + 4] = np.nan
    with pytest.raises(ValueError, match="2 of 6 shards missing"):
        dist.load(store)
    run = dist.rollout(m, state0, control, out=store)  # the same command again (shard size from the store)
    assert (run.computed, run.skipped) == (2, 4)
    assert np.array_equal(dist.load(store).state, reference.state)
    assert dist.rollout(m, state0, control, out=store).computed == 0  # complete: nothing to do
    with pytest.raises(ValueError, match="holds a different rollout"):
        dist.rollout(m, state0, 2 * control, out=store)
    assert dist.rollout(m, state0, control, out=store, resume=False, shard_size=11).computed == 2


def test_workers_can_write_the_store_themselves(problem, cluster, tmp_path):
    m, state0, control, reference = problem
    dist = distributed()
    run = dist.rollout(m, state0, control, out=tmp_path / "run.zarr", shard_size=6, write_on_workers=True,
                       _kill_once=(str(tmp_path), 1))
    assert (tmp_path / "killed-shard-1").exists() and (run.computed, run.nshard) == (4, 4)
    assert np.array_equal(dist.load(tmp_path / "run.zarr").state, reference.state)


def test_rollout_command_writes_a_store_equal_to_batch_rollout(problem, cluster, tmp_path, capsys):
    from kinedyn.cli.main import main

    m, state0, control, reference = problem
    np.savez(tmp_path / "states.npz", initial_state=state0)
    np.savez(tmp_path / "ctrl.npz", control=control)
    argv = ["rollout", "arm7", "--states", str(tmp_path / "states.npz"), "--controls",
            str(tmp_path / "ctrl.npz"), "--out", str(tmp_path / "out"), "--quiet", "--shard-size", "6"]
    assert main(argv) == 0
    assert "4 shards on 2 workers" in capsys.readouterr().out
    assert np.array_equal(distributed().load(tmp_path / "out" / "rollout.zarr").state, reference.state)
    assert main(argv) == 0
    assert "(0 computed, 4 already written)" in capsys.readouterr().out


def test_rollout_command_input_errors(tmp_path, capsys):
    from kinedyn.cli.main import main

    np.savez(tmp_path / "two.npz", a=np.zeros(3), b=np.zeros(3))
    assert main(["rollout", "arm7", "--states", str(tmp_path / "two.npz"), "--nstep", "2"]) == 2
    assert "needs an array named initial_state or state" in capsys.readouterr().err
    assert main(["rollout", "arm7", "--states", str(tmp_path / "none.npz"), "--nstep", "2"]) == 2
    assert "no states file" in capsys.readouterr().err
