"""Start-up time: from ``import kinedyn`` to the first ``forward`` and ``step``, in fresh processes.

    python -m bench.startup [--model humanoid|biped|PATH] [--warm 3] [--serial] [--rollout]
    python -m bench.startup --edit engine/collision_box.py [--model humanoid]
    python -m bench.startup --scaling pendulum arm7 biped humanoid ... [--plot PATH]
    python -m bench.startup --profile [--job forward|demo] [--top 40]

Runs ``python -c <probe>`` in new subprocesses with ``NUMBA_CACHE_DIR`` set to a new
temporary directory: the first run is *cold* (every kernel compiled and written to
the cache), the following runs are *warm* (every kernel loaded from that cache).
The children may write Python bytecode even when ``PYTHONDONTWRITEBYTECODE`` is set
here (development setups set it): an installed package has its ``.pyc`` files, and
compiling kinedyn's sources on every import added 0.1-0.2 s to each warm run.
Each run reports its own split: import numba, import kinedyn, compile the model from
XML (with its handle and ``setconst``, which runs ``forward``), make the Data, first
``forward``, second ``forward``, first ``step`` ("total" ends there), with ``--rollout`` the first
``kd.batch.rollout`` (8 states x 10 steps) after it, the functions compiled in the process
("compiled"), and the CPU time of the whole run's main process (the helper processes of a
parallel cold compile are not in it; "process wall" is the whole child); "numba init" is 1 when
Numba's compiler initialisation ran on the way (it must on a cold start; a warm one skips it).

``--edit FILE`` measures what an edit costs: in a copy of the package, a cold run fills a
cache, a comment is added at the end of ``FILE`` (relative to the package), and the run is
repeated on that cache; it prints both rows (the second is the cost of the edit).

``--scaling MODEL ...`` runs each model cold on its own empty cache, compiling in one process
(``KINEDYN_PARALLEL_COMPILE=0``), and prints the functions compiled against the CPU time: with
every function compiled once, the cold start grows linearly with the number of functions a
model needs. ``--plot PATH`` draws it.

``--profile`` runs one cold job (``forward`` as above, or ``demo``: ``kinedyn demo``
with its plots and GIF) under Numba's compile events and prints, per jitted function,
the time spent compiling it *excluding* the callees it compiled on the way (their own
rows), and how many signatures it was compiled for: a function compiled for several
argument types pays a full compile for each.
Measures only: no asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

# runs in the child: times each step with perf_counter and prints one JSON line
PROBE = r"""
import json, sys, time
c0 = time.process_time()
t0 = time.perf_counter()
import numba  # noqa: F401
from numba.core import event
t1 = time.perf_counter()
recording = event.install_recorder("numba:compile")
recorder = recording.__enter__()
import kinedyn as kd
t2 = time.perf_counter()
m = kd.Model.from_xml_path(sys.argv[1])
t3 = time.perf_counter()
d = kd.Data(m)
t4 = time.perf_counter()
kd.forward(m, d)
t5 = time.perf_counter()
kd.forward(m, d)
t6 = time.perf_counter()
kd.step(m, d)
t7 = time.perf_counter()
rollout = 0.0
if "--rollout" in sys.argv:
    import numpy as np
    from kinedyn.tools import batch
    s0 = np.zeros((8, batch.state_size(m)))
    s0[:, 1:1 + m.nq] = m.qpos0
    t8 = time.perf_counter()
    batch.rollout(m, s0, np.zeros((8, 10, m.nu)))
    rollout = time.perf_counter() - t8
compiled = sum(ev.is_start for _, ev in recorder.buffer)
# Numba's compiler initialisation (all its implementations, ~0.1 s) imports this module; a warm start
# skips it (kinedyn._jit._LazyFunctionCache), a cold one needs it
compiler_init = float("numba.np.npdatetime" in sys.modules)
print(json.dumps({"import numba": t1 - t0, "import kinedyn": t2 - t1, "numba init": compiler_init,
                  "model": t3 - t2, "data": t4 - t3, "first forward": t5 - t4, "second forward": t6 - t5,
                  "first step": t7 - t6, "total": t7 - t0, "first rollout": rollout, "compiled": compiled,
                  "cpu": time.process_time() - c0}))
"""

# runs in the child for --profile: records numba:compile events around JOB and prints their
# exclusive times (a compile's own time minus that of the compiles nested in it) as JSON
PROFILE = r"""
import json, sys, time
from numba.core import event
c0 = time.process_time()
with event.install_recorder("numba:compile") as rec:
    exec(sys.argv[1])
cpu = time.process_time() - c0
stack, rows = [], {}
for stamp, ev in rec.buffer:
    if ev.is_start:
        stack.append([stamp, 0.0])
        continue
    start, nested = stack.pop()
    spent = stamp - start
    if stack:
        stack[-1][1] += spent
    disp = ev.data["dispatcher"]
    name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
    row = rows.setdefault(name, {"self": 0.0, "inclusive": 0.0, "compiles": 0, "signatures": 0})
    row["self"] += spent - nested
    row["inclusive"] += spent
    row["compiles"] += 1
    row["signatures"] = len(disp.signatures)
print(json.dumps({"cpu": cpu, "functions": rows}))
"""

JOBS = {
    "forward": ("import kinedyn as kd; m = kd.models.load('biped'); d = kd.Data(m); kd.forward(m, d)"),
    "demo": ("import tempfile; from kinedyn.cli.main import main; "
             "main(['demo', '--quiet', '--out', tempfile.mkdtemp()])"),
}


def model_path(name: str) -> str:
    from kinedyn.cli.benchmark import model_source

    if os.path.isfile(name):
        return name
    source, note = model_source(name)
    if source is None:
        raise SystemExit(note)
    fd, path = tempfile.mkstemp(suffix=".xml", prefix=f"kinedyn-startup-{source.name}-")
    with os.fdopen(fd, "w") as f:
        f.write(source.xml)
    return path


def child_env(cache_dir: str) -> dict:
    """The environment of a measured child: its own Numba cache, bytecode written as for an install."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(path: str, cache_dir: str, rollout: bool = False, package: str | None = None) -> tuple[dict, float]:
    """(the probe's split, wall time of the whole child process including interpreter start); with
    ``package``, the kinedyn package that directory holds is the one imported."""
    import time

    env = child_env(cache_dir)
    if package is not None:
        env["PYTHONPATH"] = package
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, path] + (["--rollout"] if rollout else []), env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"start-up probe failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def profile(job: str, top: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kinedyn-numba-cache-") as cache_dir:
        done = subprocess.run([sys.executable, "-c", PROFILE, JOBS[job]], env=child_env(cache_dir),
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"profile job failed:\n{done.stderr}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    rows = sorted(report["functions"].items(), key=lambda kv: -kv[1]["self"])
    compiled = sum(r["self"] for _, r in rows)
    print(f"cold '{job}': {report['cpu']:.1f} s CPU, {compiled:.1f} s in {len(rows)} jitted functions "
          f"({sum(r['compiles'] for _, r in rows)} compiles)")
    print(f"{'self s':>8} {'incl s':>8} {'sigs':>5}  function")
    for name, r in rows[:top]:
        print(f"{r['self']:8.2f} {r['inclusive']:8.2f} {r['signatures']:5d}  {name}")
    several = [(n, r) for n, r in rows if r["signatures"] > 1]
    if several:
        print("compiled for several signatures: " + ", ".join(f"{n} ({r['signatures']})" for n, r in several))


def _scaling(models: list[str], plot: str | None) -> None:
    """Cold CPU time against the number of functions compiled, one model per run."""
    os.environ["KINEDYN_PARALLEL_COMPILE"] = "0"
    points = []
    print(f"{'model':<16}{'compiled':>10}{'cpu s':>10}{'s per function':>16}")
    for name in models:
        path = model_path(name)
        with tempfile.TemporaryDirectory(prefix="kinedyn-numba-cache-") as cache_dir:
            split, _ = run(path, cache_dir)
        if path != name:
            os.unlink(path)
        points.append((name, split["compiled"], split["cpu"]))
        per = split["cpu"] / max(split["compiled"], 1)
        print(f"{name:<16}{split['compiled']:10.0f}{split['cpu']:10.1f}{per:16.3f}", flush=True)
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot([p[1] for p in points], [p[2] for p in points], "o")
        for name, n, cpu in points:
            ax.annotate(name, (n, cpu), textcoords="offset points", xytext=(4, -10), fontsize=8)
        ax.set_xlabel("functions compiled (units and the kernels in them)")
        ax.set_ylabel("cold start, CPU s (one process)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        print(f"wrote {plot}")


def _row(label: str, split: dict, wall: float, keys) -> None:
    print(f"{label:<8}" + "".join(f"{split[k]:15.3f}" for k in keys) + f"{wall:14.3f}", flush=True)


def _edit_cost(path: str, cache_dir: str, edit: str, keys) -> None:
    """A cold run in a copy of the package, then a comment added to ``edit``, then the run again."""
    import shutil
    from pathlib import Path

    import kinedyn

    with tempfile.TemporaryDirectory(prefix="kinedyn-edit-") as where:
        copy = Path(where) / "kinedyn"
        shutil.copytree(Path(kinedyn.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
        _row("cold", *run(path, cache_dir, package=where), keys)
        target = copy / edit
        target.write_text(target.read_text() + "\n# an edit\n")
        _row("edited", *run(path, cache_dir, package=where), keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="humanoid", help="benchmark model name or MJCF path")
    parser.add_argument("--warm", type=int, default=3, metavar="K", help="warm runs after the cold one")
    parser.add_argument("--profile", action="store_true", help="per-function compile times of one cold job")
    parser.add_argument("--job", choices=sorted(JOBS), default="forward", help="the job --profile runs")
    parser.add_argument("--top", type=int, default=40, help="rows --profile prints")
    parser.add_argument("--rollout", action="store_true", help="time the first kd.batch.rollout too")
    parser.add_argument("--edit", metavar="FILE",
                        help="the cost of a comment added to FILE (relative to the package)")
    parser.add_argument("--scaling", nargs="+", metavar="MODEL", help="cold CPU against functions compiled")
    parser.add_argument("--plot", metavar="PATH", help="with --scaling: draw it into PATH")
    parser.add_argument("--serial", action="store_true",
                        help="compile in this process only (KINEDYN_PARALLEL_COMPILE=0), for comparison")
    args = parser.parse_args(argv)

    if args.profile:
        profile(args.job, args.top)
        return 0
    if args.scaling:
        _scaling(args.scaling, args.plot)
        return 0
    path = model_path(args.model)
    keys = ("import numba", "import kinedyn", "numba init", "model", "data", "first forward",
            "second forward", "first step", "total", "first rollout", "compiled", "cpu")
    if args.serial:
        os.environ["KINEDYN_PARALLEL_COMPILE"] = "0"
    print(f"start-up on {args.model}: seconds per step in a fresh process (NUMBA_CACHE_DIR = empty temp dir)")
    print(f"{'run':<8}" + "".join(f"{k:>15}" for k in keys) + f"{'process wall':>14}")
    with tempfile.TemporaryDirectory(prefix="kinedyn-numba-cache-") as cache_dir:
        if args.edit:
            _edit_cost(path, cache_dir, args.edit, keys)
        else:
            for i in range(1 + args.warm):
                split, wall = run(path, cache_dir, rollout=args.rollout)
                label = "cold" if i == 0 else f"warm {i}"
                _row(label, split, wall, keys)
    if path != args.model:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
