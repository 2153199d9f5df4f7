"""Roll out many trajectories of the bundled 7-DoF arm in parallel, with kinedyn.tools.batch.

Each trajectory starts from a random joint configuration and holds a different
random target with the arm's position servos (undamped, so they oscillate about
it; the step is shortened to 0.2 ms so the stiff wrist servos stay stable under
Euler). With MuJoCo installed, the same rollout is repeated with
``mujoco.rollout`` and the largest difference printed.

    python examples/batch_rollout.py --nbatch 256 --nstep 500 --nthread 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kinedyn import models
from kinedyn.tools import batch

TIMESTEP = 2e-4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nbatch", type=int, default=256, help="number of trajectories")
    parser.add_argument("--nstep", type=int, default=500, help="steps per trajectory")
    parser.add_argument("--nthread", type=int, default=None, help="threads (default: Numba's)")
    args = parser.parse_args()

    m = models.load("arm7")
    m.opt.timestep = TIMESTEP
    rng = np.random.default_rng(0)

    # packed initial states [time, qpos, qvel, act], as mujoco.rollout's mjSTATE_FULLPHYSICS
    bd = batch.BatchData(m, args.nbatch)
    lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
    bd.qpos = rng.uniform(0.5 * lo, 0.5 * hi, size=bd.qpos.shape)
    initial_state = batch.get_state(m, bd)
    # one constant servo target per trajectory: control (nbatch, 1, nu) broadcasts over steps
    control = rng.uniform(0.5 * lo, 0.5 * hi, size=(args.nbatch, 1, m.nu))

    batch.rollout(m, initial_state[:1], control[:1], nstep=1, nthread=args.nthread)  # compile / load cache
    start = time.perf_counter()
    result = batch.rollout(m, initial_state, control, nstep=args.nstep, nthread=args.nthread)
    seconds = time.perf_counter() - start
    print(f"kinedyn: {args.nbatch} x {args.nstep} steps in {seconds:.3f} s "
          f"({args.nbatch * args.nstep / seconds:,.0f} steps/s)")
    swing = np.abs(result.qpos - control).max()
    print(f"after {result.time[0, -1]:.2f} s: joints swing up to {swing:.2f} rad about their targets")

    try:
        import mujoco
        from mujoco import rollout
    except ImportError:
        return
    mjm = mujoco.MjModel.from_xml_string(models.xml("arm7"))
    mjm.opt.timestep = TIMESTEP
    datas = [mujoco.MjData(mjm) for _ in range(args.nthread or 1)]
    start = time.perf_counter()
    state, _ = rollout.rollout(mjm, datas, initial_state, control, nstep=args.nstep)
    seconds = time.perf_counter() - start
    print(f"mujoco:  {args.nbatch * args.nstep / seconds:,.0f} steps/s; "
          f"largest state difference {np.abs(state - result.state).max():.1e}")


if __name__ == "__main__":
    main()
