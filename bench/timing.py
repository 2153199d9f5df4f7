"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time


def cpu_per_call(fn, calls: int, repeats: int) -> float:
    """CPU seconds per call of ``fn``: the best of ``repeats`` runs of ``calls`` calls each
    (process time, so time spent descheduled on a loaded machine is not counted)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, time.process_time() - t0)
    return best / calls


def step_times(m, d, mjm, mjd, steps: int, repeats: int) -> tuple[float, float]:
    """(kinedyn, MuJoCo) CPU seconds per step of the two simulations, after a first kinedyn step
    that binds and compiles what the model needs."""
    import mujoco

    import kinedyn as kd

    kd.step(m, d)
    ours = cpu_per_call(lambda: kd.step(m, d), steps, repeats)
    theirs = cpu_per_call(lambda: mujoco.mj_step(mjm, mjd), steps, repeats)
    return ours, theirs
