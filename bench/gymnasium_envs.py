"""gymnasium's MuJoCo environments: steps per second on kinedyn (through ``kinedyn.mujoco.install()``)
against MuJoCo, from Python, the environments unchanged.

    python -m bench.gymnasium_envs [--steps 2000] [--repeats 3] [--envs Hopper-v5 Ant-v5]

Each side runs in its own process (a process has one ``mujoco``); the two sides take turns,
``--rounds`` processes each, so that a change of load on a shared machine reaches both. In each
process, for each environment: ``env.reset(seed=0)``, 100 warm-up steps, then ``--repeats`` timed
runs of ``--steps`` ``env.step`` calls with uniform random actions drawn beforehand (resetting
when an episode ends, which is timed too). A run's time is CPU time (``time.process_time``), so
time spent descheduled is not counted; the best run over all rounds is kept. Prints env steps/s
for both and the ratio, and ``--json`` writes them. Measures only: no asserts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

ENVS = ("Ant-v5", "HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "HumanoidStandup-v5",
        "InvertedDoublePendulum-v5", "InvertedPendulum-v5", "Pusher-v5", "Reacher-v5", "Swimmer-v5",
        "Walker2d-v5")


def measure(env_ids, nsteps: int, repeats: int) -> dict[str, float]:
    """Environment steps per second (CPU time) of each environment, best of ``repeats`` runs."""
    import gymnasium as gym
    import numpy as np

    rates = {}
    for env_id in env_ids:
        env = gym.make(env_id, render_mode=None)
        rng = np.random.default_rng(0)
        actions = rng.uniform(env.action_space.low, env.action_space.high,
                              (nsteps, env.action_space.shape[0])).astype(env.action_space.dtype)
        env.reset(seed=0)
        for a in actions[:100]:
            if any(env.step(a)[2:4]):
                env.reset()
        best = float("inf")
        for _ in range(repeats):
            env.reset(seed=0)
            start = time.process_time()
            for a in actions:
                _, _, term, trunc, _ = env.step(a)
                if term or trunc:
                    env.reset()
            best = min(best, time.process_time() - start)
        rates[env_id] = nsteps / best
        env.close()
    return rates


def _side(backend: str, env_ids, nsteps: int, repeats: int) -> dict[str, float]:
    code = ("import json, sys; sys.path.insert(0, '.'); "
            + ("import kinedyn.mujoco; kinedyn.mujoco.install(); " if backend == "kinedyn" else "")
            + "from bench.gymnasium_envs import measure; "
            + f"print(json.dumps(measure({list(env_ids)!r}, {nsteps}, {repeats})))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if run.returncode:
        raise RuntimeError(f"{backend} side failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="gymnasium MuJoCo environments: kinedyn vs MuJoCo")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--envs", nargs="*", default=list(ENVS))
    parser.add_argument("--json", help="write the table to this file")
    args = parser.parse_args(argv)
    ours, theirs = {}, {}
    for _ in range(args.rounds):
        for best, backend in ((ours, "kinedyn"), (theirs, "mujoco")):
            for env_id, rate in _side(backend, args.envs, args.steps, args.repeats).items():
                best[env_id] = max(best.get(env_id, 0.0), rate)
    print(f"{'environment':28s} {'kinedyn steps/s':>16s} {'MuJoCo steps/s':>15s} {'kinedyn/MuJoCo':>15s}")
    for env_id in args.envs:
        ratio = ours[env_id] / theirs[env_id]
        print(f"{env_id:28s} {ours[env_id]:16.0f} {theirs[env_id]:15.0f} {ratio:15.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kinedyn": ours, "mujoco": theirs, "steps": args.steps}, f, indent=1)


if __name__ == "__main__":
    main()
