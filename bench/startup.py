"""Start-up time: from ``import kinedyn`` to the first ``forward`` result, in fresh processes.

    python -m bench.startup [--model humanoid] [--warm 3]

Runs ``python -c <probe>`` in new subprocesses with ``NUMBA_CACHE_DIR`` set to a new
temporary directory: the first run is *cold* (every kernel compiled and written to
the cache), the following runs are *warm* (every kernel loaded from that cache).
Each run reports its own split: import numba, import kinedyn, compile the model
from XML (and build its handle), make the Data, first ``forward``, second ``forward``.
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
t0 = time.perf_counter()
import numba  # noqa: F401
t1 = time.perf_counter()
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
print(json.dumps({"import numba": t1 - t0, "import kinedyn": t2 - t1, "model": t3 - t2, "data": t4 - t3,
                  "first forward": t5 - t4, "second forward": t6 - t5, "total": t5 - t0}))
"""


def model_path(name: str) -> str:
    from bench import models as bench_models

    if os.path.isfile(name):
        return name
    source = bench_models.get(name)
    fd, path = tempfile.mkstemp(suffix=".xml", prefix=f"kinedyn-startup-{source.name}-")
    with os.fdopen(fd, "w") as f:
        f.write(bench_models.disable_constraints(source.xml))
    return path


def run(path: str, cache_dir: str) -> tuple[dict, float]:
    """(the probe's split, wall time of the whole child process including interpreter start)."""
    import time

    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, path], env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"start-up probe failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="humanoid", help="built-in bench model or MJCF path")
    parser.add_argument("--warm", type=int, default=3, metavar="K", help="warm runs after the cold one")
    args = parser.parse_args(argv)

    path = model_path(args.model)
    keys = ("import numba", "import kinedyn", "model", "data", "first forward", "second forward", "total")
    print(f"start-up on {args.model}: seconds per step in a fresh process (NUMBA_CACHE_DIR = empty temp dir)")
    print(f"{'run':<8}" + "".join(f"{k:>16}" for k in keys) + f"{'process wall':>14}")
    with tempfile.TemporaryDirectory(prefix="kinedyn-numba-cache-") as cache_dir:
        for i in range(1 + args.warm):
            split, wall = run(path, cache_dir)
            label = "cold" if i == 0 else f"warm {i}"
            print(f"{label:<8}" + "".join(f"{split[k]:16.3f}" for k in keys) + f"{wall:14.3f}", flush=True)
    if path != args.model:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
