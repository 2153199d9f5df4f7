"""CPU time of ``step`` from the standing state, kinedyn against MuJoCo, from Python and in-JIT.

    python -m bench.step_cpu [--models humanoid-floor ant-floor] [--samples 40] [--nstep 40]

For each contact model (its standing state, as ``kinedyn bench``), four cases are timed in turn,
``--samples`` times each, every sample starting again from the standing state: ``kd.step`` and
``mujoco.mj_step`` called ``--nstep`` times from Python, and the same steps from a jitted loop
(kinedyn's per-integrator step entry; MuJoCo's C ``mj_step`` through ctypes). Each case keeps its
minimum CPU time (``time.process_time_ns``) per step: time spent descheduled is not counted, so the
numbers hold up better under load than ``kinedyn bench``'s wall clock. The in-JIT columns leave
out both libraries' Python entry; "wrapper" is the difference. Measures only: no asserts.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import time

from kinedyn.cli.benchmark import Subject, model_source


def _mj_step_loop(mujoco):
    from numba import njit

    lib = ctypes.CDLL(sorted(glob.glob(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so*")))[-1])
    c_step = lib.mj_step
    c_step.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    c_step.restype = None

    @njit
    def loop(m, d, n):
        for _ in range(n):
            c_step(m, d)

    return loop


def _kd_step_loop(step_entry):
    from numba import njit

    @njit
    def loop(mh, dh, n):
        for _ in range(n):
            step_entry(mh, dh, True)

    return loop


def measure(name: str, samples: int, nstep: int) -> dict[str, float]:
    """Minimum CPU µs per step of each case for one model."""
    import kinedyn as kd
    from kinedyn.engine.integrator import _STEP_BY_INTEGRATOR

    source, why = model_source(name)
    if source is None or not source.contacts:
        raise SystemExit(f"{name}: not a contact model ({why or 'no standing state'})")
    s = Subject(source, with_pinocchio=False)
    if s.mujoco is None:
        raise SystemExit("mujoco is not installed")
    m, d, mjm, mjd = s.m, s.d, s.mjm, s.mjd
    kd_loop = _kd_step_loop(_STEP_BY_INTEGRATOR[int(m.opt.integrator)].root)
    mj_loop = _mj_step_loop(s.mujoco)
    step, mj_step = kd.step, s.mujoco.mj_step

    def py_kd():
        for _ in range(nstep):
            step(m, d)

    def py_mj():
        for _ in range(nstep):
            mj_step(mjm, mjd)

    cases = {"py kd": py_kd, "py mj": py_mj,
             "jit kd": lambda: kd_loop(m._handle, d._handle, nstep),
             "jit mj": lambda: mj_loop(mjm._address, mjd._address, nstep)}
    for call in cases.values():  # compiles (or loads) the loops and warms up: not counted
        s.randomise()
        call()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(samples):
        for label, call in cases.items():
            s.randomise()  # the standing state, in both libraries
            t0 = time.process_time_ns()
            call()
            best[label] = min(best[label], (time.process_time_ns() - t0) / nstep / 1e3)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_cpu", description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="*", default=["humanoid-floor", "ant-floor"])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--nstep", type=int, default=40)
    args = parser.parse_args(argv)
    for name in args.models:
        b = measure(name, args.samples, args.nstep)
        print(f"{name}: CPU µs per step, minimum of {args.samples} samples of {args.nstep} steps")
        print(f"  from Python  kinedyn {b['py kd']:.2f}  MuJoCo {b['py mj']:.2f}  "
              f"kd/mj {b['py kd'] / b['py mj']:.3f}  ({b['py kd'] - b['py mj']:+.2f} µs)")
        print(f"  in-JIT       kinedyn {b['jit kd']:.2f}  MuJoCo {b['jit mj']:.2f}  "
              f"kd/mj {b['jit kd'] / b['jit mj']:.3f}  ({b['jit kd'] - b['jit mj']:+.2f} µs)")
        print(f"  wrapper      kinedyn {b['py kd'] - b['jit kd']:.2f}  MuJoCo {b['py mj'] - b['jit mj']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
