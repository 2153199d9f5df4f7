"""Rigid-body derivatives: kinedyn against Pinocchio, time per call from Python.

    python -m bench.derivatives_rigid [--calls 2000] [--repeats 7]

Pairs timed side by side in one process, on the same random state:

* ``kd.rne_derivatives``     vs ``pinocchio.computeRNEADerivatives(model, data, q, v, a)``
* ``kd.forward_derivatives`` vs ``pinocchio.computeABADerivatives(model, data, q, v, tau)``
* ``kd.inertia_regressor``   vs ``pinocchio.computeJointTorqueRegressor(model, data, q, v, a)``

Robots (example-robot-data 6.0.0, mesh geometry left out, loaded into both): the largest that both
load, talos_full_v2 with a floating base (Pinocchio's JointModelFreeFlyer, kinedyn's free joint;
nv 50), and the Franka panda arm (7 joints and 2 finger slides, fixed base; nv 9). Both sides start
from q, v, a: Pinocchio takes them as arguments, kinedyn reads d.qpos, d.qvel, d.qacc (set once,
not timed) and runs its kinematics, com_pos, crb and com_vel itself, as Pinocchio runs its forward
pass. kinedyn is called with ``rigid_body_only=True`` (these URDFs have joint limits and
collision geoms, which the derivatives do not differentiate). Both return new arrays (Pinocchio's
Python bindings copy its matrices out).

Per call: CPU time of the process (time.process_time: on a shared machine it counts what this
process ran, not what it waited), the best of ``--repeats`` loops of ``--calls`` calls each, the
two libraries' loops interleaved. No asserts: this
measures, it does not test.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import kinedyn as kd  # noqa: E402

ROBOTS = {
    "talos_full_v2 (floating)": ("talos_data/robots/talos_full_v2.urdf", True),
    "panda (fixed)": ("panda_description/urdf/panda.urdf", False),
}


def load(rel: str, floating: bool, workdir: Path):
    import pinocchio as pin
    from test_urdf import _drop_meshes, _erd_robots, _pinocchio_ready

    primitive = workdir / Path(rel).name
    primitive.write_text(_drop_meshes((_erd_robots() / rel).read_text()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = kd.Model.from_urdf(primitive, floating_base=floating)
    pm = pin.buildModelFromUrdf(str(_pinocchio_ready(primitive)),
                                *([pin.JointModelFreeFlyer()] if floating else []))
    assert pm.nv == m.nv
    return m, pm


def best_per_call(fns, calls: int, repeats: int) -> list[float]:
    """Seconds per call of each function: the best of ``repeats`` interleaved loops."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t0 = time.process_time()
            for _ in range(calls):
                fn()
            best[k] = min(best[k], (time.process_time() - t0) / calls)
    return best


def main(argv=None) -> None:
    import pinocchio as pin

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    workdir = Path(tempfile.mkdtemp())
    print(f"{'robot':26s} {'nv':>3s}  {'function':22s} {'kinedyn µs':>10s} {'Pinocchio µs':>12s} "
          f"{'ratio':>6s}")
    for name, (rel, floating) in ROBOTS.items():
        m, pm = load(rel, floating, workdir)
        pdata = pm.createData()
        d = kd.Data(m)
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
        tau = pin.rnea(pm, pdata, pq, v, a)
        # the same configuration in kinedyn (a state of its own: only the timing is compared here;
        # tests/test_derivatives_rigid.py checks the values)
        d.qpos[:] = m.qpos0
        d.qvel[:], d.qacc[:] = v, a
        part = functools.partial
        pairs = [
            ("rne_derivatives", part(kd.rne_derivatives, m, d, rigid_body_only=True),
             part(pin.computeRNEADerivatives, pm, pdata, pq, v, a)),
            ("forward_derivatives", part(kd.forward_derivatives, m, d, rigid_body_only=True),
             part(pin.computeABADerivatives, pm, pdata, pq, v, tau)),
            ("inertia_regressor", part(kd.inertia_regressor, m, d),
             part(pin.computeJointTorqueRegressor, pm, pdata, pq, v, a)),
        ]
        for label, ours, theirs in pairs:
            ours()  # compile / bind outside the timing
            t_ours, t_pin = best_per_call([ours, theirs], args.calls, args.repeats)
            print(f"{name:26s} {m.nv:3d}  {label:22s} {t_ours * 1e6:10.2f} {t_pin * 1e6:12.2f} "
                  f"{t_ours / t_pin:6.2f}")


if __name__ == "__main__":
    main()
