"""Time kinedyn against MuJoCo and Pinocchio in one process.

    python -m bench.run [--models pendulum arm humanoid] [--functions ...] [--repeat K]
                        [--target-ms T] [--json out.json]

For every model and function: warm up (Numba compilation excluded), then K
repeats; each repeat draws a fresh random state (outside the timing), runs the
untimed prerequisites, and times N back-to-back calls with perf_counter_ns.
The table shows the median over the repeats in µs per call. No asserts: this
measures, it does not test. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from importlib import metadata

from bench import models as bench_models
from bench.cases import FUNCTIONS, Subject

LIBRARIES = ("kinedyn", "mujoco", "pin")


# ---------------------------------------------------------------- timing


def measure(subject: Subject, prepare, call, repeat: int, target_ns: int) -> tuple[float, int]:
    """(median µs per call, calls per repeat)."""

    def fresh() -> None:
        subject.randomise()
        if prepare is not None:
            prepare()

    # warm-up: JIT compilation and first-touch costs stay out of the numbers
    for _ in range(2):
        fresh()
        for _ in range(3):
            call()

    # calibrate the number of calls so one repeat lasts about target_ns
    fresh()
    number, elapsed = 1, 0
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(number):
            call()
        elapsed = time.perf_counter_ns() - t0
        if elapsed >= target_ns // 10 or number >= 1_000_000:
            break
        number *= 10
    number = max(1, min(1_000_000, round(number * target_ns / max(elapsed, 1))))

    per_call = []
    for _ in range(repeat):
        fresh()
        t0 = time.perf_counter_ns()
        for _ in range(number):
            call()
        per_call.append((time.perf_counter_ns() - t0) / number / 1e3)
    return statistics.median(per_call), number


# ---------------------------------------------------------------- machine


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable,
            "platform": platform.platform()}


def versions() -> dict:
    out = {"python": platform.python_version()}
    for label, dist in (("numpy", "numpy"), ("numba", "numba"), ("mujoco", "mujoco"),
                        ("pin", "pin"), ("kinedyn", "kinedyn")):
        try:
            out[label] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[label] = None
    return out


# ---------------------------------------------------------------- report


def one_line(message: str, limit: int = 300) -> str:
    """An exception message as one plain line (Numba's are multi-line and coloured)."""
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _us(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def print_report(results: list[dict], notes: list[str], info: dict, file=sys.stdout) -> None:
    p = lambda *a: print(*a, file=file)  # noqa: E731
    m, v = info["machine"], info["versions"]
    p(f"kinedyn bench: µs per call, median of {info['repeat']} repeats "
      f"(~{info['target_ms']:g} ms of calls each; random state per repeat; JIT warm-up excluded)")
    p(f"machine:  {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), {m['platform']}")
    p("versions: " + ", ".join(f"{k} {val or 'not installed'}" for k, val in v.items()))
    p("constraints and contacts disabled in every model; smaller is faster; kd/mj > 1: kinedyn slower")
    p("")
    head = (f"{'model':<10}{'nq':>4}{'nv':>4}  {'function':<11}"
            f"{'kinedyn':>10}{'mujoco':>10}{'pin':>10}{'kd/mj':>8}")
    p(head)
    p("-" * len(head))
    last = None
    for r in results:
        label = (r["model"], r["nq"], r["nv"]) if r["model"] != last else ("", "", "")
        last = r["model"]
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "n/a"
        p(f"{label[0]:<10}{label[1]:>4}{label[2]:>4}  {r['function']:<11}{_us(r['kinedyn_us']):>10}"
          f"{_us(r['mujoco_us']):>10}{_us(r['pin_us']):>10}{ratio:>8}")
    p("")
    p("pin column: forwardKinematics, aba, rnea, nonLinearEffects, crba; pin.crba builds M from q,")
    p("  mj_fullM and kinedyn.full_m only expand the M that forward computed. See bench/README.md.")
    for note in notes:
        p(f"note: {one_line(note)}")


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(bench_models.BUILTIN), metavar="MODEL",
                        help=f"{', '.join(bench_models.BUILTIN)} or MJCF paths (default: all built-in)")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS,
                        metavar="FN", help=f"subset of {', '.join(FUNCTIONS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=5, metavar="K", help="repeats per number (default: 5)")
    parser.add_argument("--target-ms", type=float, default=50.0, metavar="T",
                        help="wall time of one repeat in ms; sets N calls per repeat (default: 50)")
    parser.add_argument("--seed", type=int, default=0, help="random state seed (default: 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.target_ms <= 0:
        parser.error("--repeat must be >= 1 and --target-ms positive")

    info = {"machine": machine(), "versions": versions(), "repeat": args.repeat,
            "target_ms": args.target_ms, "seed": args.seed, "models": {}}
    target_ns = int(args.target_ms * 1e6)
    results, notes = [], []

    for name in args.models:
        try:
            source = bench_models.get(name)
        except (KeyError, FileNotFoundError) as err:
            print(f"bench: {err.args[0] if isinstance(err, KeyError) else err}", file=sys.stderr)
            return 2
        print(f"bench: {source.name} ...", file=sys.stderr, flush=True)
        subject = Subject(source, seed=args.seed)
        info["models"][source.name] = source.origin
        kd_cases, kd_missing = subject.kinedyn_cases()
        cases = {"kinedyn": kd_cases, "mujoco": subject.mujoco_cases(), "pin": subject.pin_cases()}
        if subject.kinedyn_reason:
            notes.append(subject.kinedyn_reason)
        if subject.pin_reason:
            notes.append(f"pin n/a for {source.name}: {subject.pin_reason}")

        for fn in args.functions:
            row = {"model": source.name, "nq": subject.nq, "nv": subject.nv, "function": fn}
            for lib in LIBRARIES:
                row[f"{lib}_us"] = row[f"{lib}_calls"] = None
                if fn not in cases[lib]:
                    continue
                prepare, call = cases[lib][fn]
                try:
                    row[f"{lib}_us"], row[f"{lib}_calls"] = measure(subject, prepare, call,
                                                                     args.repeat, target_ns)
                except Exception as err:  # an unfinished kinedyn stage: n/a, say why
                    notes.append(f"{lib} {fn} on {source.name} failed: {type(err).__name__}: {err}")
            kd_us, mj_us = row["kinedyn_us"], row["mujoco_us"]
            row["ratio"] = kd_us / mj_us if kd_us is not None and mj_us else None
            results.append(row)
        if kd_missing and not subject.kinedyn_reason:
            listed = ", ".join(sorted(set(kd_missing) & set(args.functions)))
            if listed:
                notes.append(f"kinedyn n/a for {source.name}: {listed} not implemented yet")

    print_report(results, list(dict.fromkeys(notes)), info)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**info, "results": results, "notes": notes}, f, indent=2)
        print(f"bench: wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
