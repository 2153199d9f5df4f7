"""The measurements of docs/distributed.md: kinedyn rollouts on a local Ray cluster of 1 and 2 workers.

Run: ``python docs/img/distributed_scaling.py [NBATCH NSTEP SHARD]`` (needs ``kinedyn[ray]``).
Prints a JSON record: the single-process batch.rollout times, and per worker count the wall time
of a cold call (starts the worker processes, which load the compiled kernels), of warm calls
(median of 2) and of a call writing a Zarr store; one shard's compute time on one thread; and the
Zarr write throughput of the driver.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from kinedyn import models
from kinedyn.tools import batch, distributed

MODEL = "biped"
NBATCH, NSTEP, SHARD = (int(a) for a in sys.argv[1:4]) if len(sys.argv) > 3 else (128, 2000, 8)


def problem():
    """The biped (12 position servos, joint limits) from scattered joint velocities, servo targets
    drawn around zero; no contacts, so its torso falls freely while the legs track."""
    m = models.load(MODEL)
    rng = np.random.default_rng(0)
    state0 = np.tile(np.concatenate([[0.0], m.qpos0, np.zeros(m.nv + m.na)]), (NBATCH, 1))
    state0[:, 1 + m.nq + 6:1 + m.nq + m.nv] = 0.5 * rng.normal(size=(NBATCH, m.nv - 6))
    control = 0.1 * rng.normal(size=(NBATCH, NSTEP, m.nu))
    return m, state0, control


def main():
    import ray

    m, state0, control = problem()
    record = {"model": MODEL, "nbatch": NBATCH, "nstep": NSTEP, "shard_size": SHARD,
              "nstate": batch.state_size(m), "cpus": os.cpu_count(),
              "loadavg_start": os.getloadavg()[0]}
    batch.rollout(m, state0[:2], control[:2])  # warm (compile or load the kernels)
    for nthread in (1, 2):
        t = time.perf_counter()
        ref = batch.rollout(m, state0, control, nthread=nthread)
        record[f"batch_nthread{nthread}_s"] = time.perf_counter() - t
    shard_bytes = SHARD * NSTEP * batch.state_size(m) * 8
    record["shard_MB"] = shard_bytes / 1e6
    record["total_MB"] = NBATCH * NSTEP * batch.state_size(m) * 8 / 1e6
    t = time.perf_counter()
    batch.rollout(m, state0[:SHARD], control[:SHARD], nthread=1)
    record["shard_compute_s"] = time.perf_counter() - t
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        t = time.perf_counter()
        got = distributed.rollout(m, state0, control, shard_size=SHARD)
        record[f"ray{workers}_cold_s"] = time.perf_counter() - t
        assert np.array_equal(got.state, ref.state)
        warm = []
        for _ in range(2):
            t = time.perf_counter()
            distributed.rollout(m, state0, control, shard_size=SHARD)
            warm.append(time.perf_counter() - t)
        record[f"ray{workers}_warm_s"] = statistics.median(warm)
        with tempfile.TemporaryDirectory() as tmp:
            run = distributed.rollout(m, state0, control, shard_size=SHARD, out=f"{tmp}/r.zarr")
            record[f"ray{workers}_zarr_s"] = run.seconds
        ray.shutdown()
    # the driver's share per shard: receive (object store) and write one chunk (Zarr, zstd)
    import zarr

    with tempfile.TemporaryDirectory() as tmp:
        g = zarr.open_group(f"{tmp}/w.zarr", mode="w")
        a = g.create_array("state", shape=ref.state.shape, dtype="f8",
                           chunks=(SHARD, NSTEP, ref.state.shape[2]))
        t = time.perf_counter()
        for k in range(NBATCH // SHARD):
            a[k * SHARD:(k + 1) * SHARD] = ref.state[k * SHARD:(k + 1) * SHARD]
        record["zarr_write_MB_per_s"] = record["total_MB"] / (time.perf_counter() - t)
    record["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
