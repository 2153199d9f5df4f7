"""How the cost of RNE and CRB grows with nv, in kinedyn and MuJoCo: ``python -m bench.scaling``.

    python -m bench.scaling [--nv 1 2 4 ... 200] [--repeat K] [--target-ms T] [--quick] [--out PREFIX]

Generated models of hinge joints, one per body: a *chain* (depth = nv) and a balanced binary
*tree* (depth = floor(log2 nv) + 1). For each model both libraries time, interleaved, the
stage alone on a random state whose earlier stages ran untimed:

* ``rne``: kinedyn ``rne(m, d, flg_acc=True)`` vs ``mj_rne(flg_acc=1)`` after kinematics,
  com_pos, com_vel. One pass up and one down the tree: O(nv) for any shape.
* ``crb``: kinedyn ``crb`` vs ``mj_crb`` after kinematics, com_pos. The composite inertias
  are O(nbody), but filling M visits every ancestor of every dof: O(nv * depth), so O(nv^2)
  for the chain and O(nv log nv) for the tree.

Writes PREFIX.png (log-log, µs per call against nv) and PREFIX.json (every point and the
fitted slopes of log(time - fixed cost) against log(nv) for nv >= --fit-from, the fixed
cost being the time at the smallest nv; also the raw slopes). Timing windows are short
(1 ms) and many (31): on a loaded machine a short window is often not preempted at all,
and the minimum keeps those. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn.cli.benchmark import Case, Source, Subject, machine, optional_module, time_interleaved, versions

TOPOLOGIES = ("chain", "tree")
FUNCTIONS = ("rne", "crb")
DEFAULT_NV = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 160, 200)
QUICK_NV = (1, 8, 32, 100, 200)
_AXES = ("0 1 0", "1 0 0", "0 0 1")  # cycle the hinge axes so that the motion is 3-D


def parent_of(k: int, topology: str) -> int:
    """Parent of body k (1-based; 0 is the world): k - 1 in a chain, k // 2 in a binary tree."""
    return k - 1 if topology == "chain" else k // 2


def tree_xml(nv: int, topology: str) -> str:
    """MJCF of ``nv`` capsule links, one hinge each, as a chain or a balanced binary tree."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
    if nv < 1:
        raise ValueError(f"nv must be >= 1, got {nv}")
    root = ET.Element("mujoco", model=f"{topology}{nv}")
    option = ET.SubElement(root, "option", timestep="0.002")
    ET.SubElement(option, "flag", contact="disable")  # the links overlap; contacts are not the point
    bodies = {0: ET.SubElement(root, "worldbody")}
    for k in range(1, nv + 1):
        parent = parent_of(k, topology)
        # children of one parent fan out sideways so the links do not coincide
        side = 0.0 if topology == "chain" else (0.05 if k % 2 else -0.05)
        body = ET.SubElement(bodies[parent], "body", name=f"b{k}", pos=f"{side} 0 {-0.1 if parent else 0}")
        ET.SubElement(body, "joint", name=f"j{k}", type="hinge", axis=_AXES[k % 3], damping="0.01")
        ET.SubElement(body, "geom", type="capsule", fromto="0 0 0 0.01 0 -0.1", size="0.01", mass="0.1")
        bodies[k] = body
    return ET.tostring(root, encoding="unicode")


def depth(m) -> int:
    """Largest number of bodies from the world to a leaf (a body's parent precedes it)."""
    level = [0] * m.nbody
    for b in range(1, m.nbody):
        level[b] = level[m.body_parentid[b]] + 1
    return max(level)


def stage_cases(subject: Subject) -> dict[str, dict[str, Case]]:
    """{function: {library: Case}}: the stage alone, its prerequisites untimed."""
    mj, m, d, mjm, mjd = subject.mujoco, subject.m, subject.d, subject.mjm, subject.mjd
    out_kd, out_mj, qacc = np.zeros(m.nv), np.zeros(m.nv), subject.qacc

    def kd_velocities() -> None:
        kd.kinematics(m, d)
        kd.com_pos(m, d)
        kd.com_vel(m, d)
        d.qacc[:] = qacc

    def mj_velocities() -> None:
        mj.mj_kinematics(mjm, mjd)
        mj.mj_comPos(mjm, mjd)
        mj.mj_comVel(mjm, mjd)
        mjd.qacc[:] = qacc

    def kd_positions() -> None:
        kd.kinematics(m, d)
        kd.com_pos(m, d)

    def mj_positions() -> None:
        mj.mj_kinematics(mjm, mjd)
        mj.mj_comPos(mjm, mjd)

    return {
        "rne": {"kinedyn": Case(lambda: kd.rne(m, d, True, out=out_kd), kd_velocities),
                "mujoco": Case(lambda: mj.mj_rne(mjm, mjd, 1, out_mj), mj_velocities)},
        "crb": {"kinedyn": Case(lambda: kd.crb(m, d), kd_positions),
                "mujoco": Case(lambda: mj.mj_crb(mjm, mjd), mj_positions)},
    }


def fit_slope(nv: list[int], us: list[float], fit_from: int, fixed_us: float = 0.0) -> float | None:
    """Slope of log(us - fixed_us) against log(nv) over the points with nv >= fit_from.

    ``fixed_us`` is a per-call cost that does not grow with nv (entering the library from
    Python, argument checks); subtracted, the slope is the exponent of the work itself.
    None when fewer than two points qualify.
    """
    pairs = [(np.log(n), np.log(t - fixed_us)) for n, t in zip(nv, us, strict=True)
             if n >= fit_from and t > fixed_us]
    if len(pairs) < 2:
        return None
    x, y = zip(*pairs, strict=True)
    return float(np.polyfit(x, y, 1)[0])


def measure(nvs, repeat: int, target_ms: float, fit_from: int, progress=None) -> dict:
    points = []
    for topology in TOPOLOGIES:
        for nv in nvs:
            if progress:
                progress(f"{topology} nv={nv}")
            xml = tree_xml(nv, topology)
            subject = Subject(Source(f"{topology}{nv}", "bench.scaling", xml), with_pinocchio=False)
            for function, cases in stage_cases(subject).items():
                timings, problems = time_interleaved(cases, subject.randomise, repeat, int(target_ms * 1e6))
                if problems:
                    raise RuntimeError(f"{topology} nv={nv} {function}: {problems}")
                points.append({"topology": topology, "nv": nv, "depth": depth(subject.m),
                               "function": function,
                               **{f"{lib}_us": t.min_us for lib, t in timings.items()},
                               **{f"{lib}_median_us": t.median_us for lib, t in timings.items()}})
    slopes, raw, fixed = {}, {}, {}
    for lib in ("kinedyn", "mujoco"):
        for function in FUNCTIONS:
            for topology in TOPOLOGIES:
                sel = sorted((p for p in points if p["function"] == function and p["topology"] == topology),
                             key=lambda p: p["nv"])
                nv, us = [p["nv"] for p in sel], [p[f"{lib}_us"] for p in sel]
                key = f"{lib} {function} {topology}"
                # the time at the smallest nv (when it is below the fitted range) estimates the fixed cost
                fixed[key] = us[0] if nv[0] < fit_from else 0.0
                slopes[key] = fit_slope(nv, us, fit_from, fixed[key])
                raw[key] = fit_slope(nv, us, fit_from)
    return {"points": points, "slopes": slopes, "slopes_raw": raw, "fixed_us": fixed}


def plot(data: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    colours = {"kinedyn": "tab:blue", "mujoco": "tab:orange"}
    styles = {"chain": "-o", "tree": "--s"}
    for ax, function in zip(axes, FUNCTIONS, strict=True):
        for lib, colour in colours.items():
            for topology, style in styles.items():
                sel = [p for p in data["points"] if p["function"] == function and p["topology"] == topology]
                slope = data["slopes"][f"{lib} {function} {topology}"]
                label = f"{lib} {topology}" + (f" (slope {slope:.2f})" if slope is not None else "")
                ax.plot([p["nv"] for p in sel], [p[f"{lib}_us"] for p in sel], style, color=colour,
                        label=label, markersize=4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nv (hinge joints)")
        ax.set_title({"rne": "rne (flg_acc=1): O(nv)", "crb": "crb: O(nv · depth)"}[function])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("µs per call (min over repeats)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nv", nargs="+", type=int, default=None, metavar="N",
                        help=f"model sizes (default: {' '.join(map(str, DEFAULT_NV))})")
    parser.add_argument("--repeat", type=int, default=None, metavar="K",
                        help="repeats (default: 31; 5 quick)")
    parser.add_argument("--target-ms", type=float, default=None, metavar="T",
                        help="ms of calls per repeat and library (default: 1: short windows are "
                             "less often preempted on a loaded machine)")
    parser.add_argument("--quick", action="store_true",
                        help=f"nv {' '.join(map(str, QUICK_NV))}, short repeats")
    parser.add_argument("--fit-from", type=int, default=32, metavar="N",
                        help="fit the slopes over nv >= N, where the fixed per-call cost (~1-3 µs from "
                             "Python) no longer dominates (default: 32)")
    parser.add_argument("--out", default="scaling", metavar="PREFIX",
                        help="write PREFIX.png and PREFIX.json (default: scaling)")
    args = parser.parse_args(argv)
    nvs = args.nv or (QUICK_NV if args.quick else DEFAULT_NV)
    repeat = args.repeat or (5 if args.quick else 31)
    target_ms = args.target_ms or 1.0
    if min(nvs) < 1 or repeat < 1 or target_ms <= 0:
        parser.error("--nv values and --repeat must be >= 1, --target-ms positive")
    if optional_module("mujoco") is None:
        parser.error("the scaling plot compares with MuJoCo: pip install 'kinedyn[bench]'")

    data = measure(sorted(set(nvs)), repeat, target_ms, args.fit_from,
                   progress=lambda what: print(f"scaling: {what}", file=sys.stderr, flush=True))
    mach = machine()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    data.update(machine=mach, versions=versions(), date=when,
                settings={"repeat": repeat, "target_ms": target_ms, "fit_from": args.fit_from})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(data, indent=2))
    plot(data, Path(f"{out}.png"), f"kinedyn vs MuJoCo, min of {repeat} repeats; slopes fitted over "
                                   f"nv >= {args.fit_from} to the time above the time at nv = {min(nvs)}; "
                                   f"{mach['cpu']}, {mach['cores']} cores; {when}")
    print(f"fitted slopes of log(µs - fixed µs) against log(nv), nv >= {args.fit_from}; fixed µs = the "
          f"time at nv = {min(nvs)}; raw: without subtracting it")

    def show(x):
        return "n/a" if x is None else f"{x:.2f}"

    for key, slope in data["slopes"].items():
        print(f"  {key:<22} {show(slope):>5}  (fixed {data['fixed_us'][key]:.2f} µs, "
              f"raw {show(data['slopes_raw'][key])})")
    print(f"wrote {out}.png and {out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
