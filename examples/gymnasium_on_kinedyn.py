"""gymnasium's MuJoCo environments, unchanged, on kinedyn: one call before gymnasium is imported.

    python examples/gymnasium_on_kinedyn.py              # kinedyn against MuJoCo, side by side
    python examples/gymnasium_on_kinedyn.py --steps 300 --envs Hopper-v5 Ant-v5

``kinedyn.mujoco.install()`` makes ``import mujoco`` give ``kinedyn.mujoco``; gymnasium's
``MujocoEnv`` then loads, resets and steps its models with kinedyn. The same seeded episodes (the
same actions, resets included) run once on kinedyn and once on MuJoCo, each in its own process
(a process has one ``mujoco``), and the observations, rewards and termination flags are compared.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ENVS = ("Ant-v5", "HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "HumanoidStandup-v5",
        "InvertedDoublePendulum-v5", "InvertedPendulum-v5", "Pusher-v5", "Reacher-v5", "Swimmer-v5",
        "Walker2d-v5")


def run_episodes(env_ids, nsteps: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Step each environment ``nsteps`` times with seeded uniform actions, resetting it when an
    episode ends; returns per environment the actions, observations, rewards and flags."""
    import gymnasium as gym  # noqa: PLC0415  (after install(), in the kinedyn process)

    out = {}
    for env_id in env_ids:
        env = gym.make(env_id, render_mode=None)
        rng = np.random.default_rng(seed)
        low, high = env.action_space.low, env.action_space.high
        obs, _ = env.reset(seed=seed)
        actions, observations, rewards, terminated, truncated = [], [obs], [], [], []
        start = time.perf_counter()
        for _ in range(nsteps):
            action = rng.uniform(low, high).astype(env.action_space.dtype)
            obs, reward, term, trunc, _ = env.step(action)
            actions.append(action)
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
            if term or trunc:
                obs, _ = env.reset()  # the environment's own seeded generator draws the new state
            observations.append(obs)
        elapsed = time.perf_counter() - start
        out[f"{env_id}/model_type"] = np.array(f"{type(env.unwrapped.model).__module__}."
                                               f"{type(env.unwrapped.model).__name__}")
        env.close()
        out[f"{env_id}/actions"] = np.array(actions)
        out[f"{env_id}/obs"] = np.array(observations)
        out[f"{env_id}/reward"] = np.array(rewards)
        out[f"{env_id}/terminated"] = np.array(terminated)
        out[f"{env_id}/truncated"] = np.array(truncated)
        out[f"{env_id}/seconds"] = np.array(elapsed)
    return out


def run_side(backend: str, env_ids, nsteps: int, seed: int, path: str) -> None:
    """The body of one side's process: install kinedyn (or not), run, save to ``path`` (.npz)."""
    if backend == "kinedyn":
        import kinedyn.mujoco  # noqa: PLC0415

        kinedyn.mujoco.install()
    results = run_episodes(env_ids, nsteps, seed)
    results["backend"] = np.array(sys.modules["mujoco"].__name__)  # which `mujoco` gymnasium used
    np.savez(path, **results)


def run_both(env_ids=ENVS, nsteps: int = 300, seed: int = 0, timeout: float = 900) -> tuple[dict, dict]:
    """Run both sides in parallel processes; return (kinedyn, mujoco) results."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = {}
        for backend in ("kinedyn", "mujoco"):
            path = str(Path(tmp) / f"{backend}.npz")
            code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                    f"import gymnasium_on_kinedyn as g; "
                    f"g.run_side({backend!r}, {list(env_ids)!r}, {nsteps}, {seed}, {path!r})")
            procs[backend] = (subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True), path)
        results = {}
        for backend, (proc, path) in procs.items():
            stdout, stderr = proc.communicate(timeout=timeout)
            if proc.returncode:
                raise RuntimeError(f"the {backend} side failed:\n{stderr[-4000:]}")
            with np.load(path) as f:
                results[backend] = dict(f)
    return results["kinedyn"], results["mujoco"]



def compare(ours: dict, theirs: dict, env_id: str, nsteps: int | None = None) -> dict:
    """Largest differences of one environment's run over its first ``nsteps`` steps (the actions
    must be equal), whether the termination and truncation flags agree, and the resets."""
    n = len(theirs[f"{env_id}/reward"]) if nsteps is None else nsteps
    np.testing.assert_array_equal(ours[f"{env_id}/actions"][:n], theirs[f"{env_id}/actions"][:n])

    def diff(key, rows):
        return float(np.max(np.abs(ours[f"{env_id}/{key}"][:rows] - theirs[f"{env_id}/{key}"][:rows])))

    flags = all(np.array_equal(ours[f"{env_id}/{k}"][:n], theirs[f"{env_id}/{k}"][:n])
                for k in ("terminated", "truncated"))
    return {"obs": diff("obs", n + 1), "reward": diff("reward", n), "flags_equal": flags, "steps": n,
            "resets": int(np.sum(theirs[f"{env_id}/terminated"][:n] | theirs[f"{env_id}/truncated"][:n]))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs", nargs="*", default=list(ENVS))
    args = parser.parse_args(argv)
    ours, theirs = run_both(args.envs, args.steps, args.seed)
    ok = True
    print(f"{'environment':28s} steps {'max |obs diff|':>15s} {'max |reward diff|':>18s} flags  resets")
    for env_id in args.envs:
        c = compare(ours, theirs, env_id, args.steps)
        ok &= c["obs"] <= 1e-6 and c["reward"] <= 1e-6 and c["flags_equal"]
        print(f"{env_id:28s} {c['steps']:5d} {c['obs']:15.2e} {c['reward']:18.2e} "
              f"{'same' if c['flags_equal'] else 'DIFF'}  {c['resets']}")
    print("all within 1e-6" if ok else "DIFFERENCES above 1e-6")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
