"""The ``kinedyn`` command.

    kinedyn demo [--model NAME|PATH] [--duration S] [--every N] [--amplitude A] [--frequency HZ]

A thin layer over the library: parse arguments, call ``kinedyn``, print. Bad
input (an unreadable or invalid model, an unknown bundled name) is reported as
one line on stderr with exit status 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn import models

EXIT_USAGE = 2


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# ---------------------------------------------------------------- helpers


def load_model(spec: str) -> tuple[kd.Model, str]:
    """A bundled model by name, or an MJCF file by path; returns (model, label)."""
    if spec in models.names():
        return models.load(spec), spec
    path = Path(spec)
    if not path.exists() and path.suffix == "" and len(path.parts) == 1:
        # looks like a (misspelled) bundled name rather than a file: KeyError lists the names
        try:
            models.path(spec)
        except KeyError as err:
            raise CommandError(err.args[0]) from None
    try:
        return kd.Model.from_xml_path(path), str(path)
    except kd.ModelError as err:
        raise CommandError(str(err)) from None
    except OSError as err:
        raise CommandError(f"cannot read model file '{path}': {err.strerror}") from None


def _fmt(values, shown: int = 3) -> str:
    """A short rendering of a small vector: its first `shown` entries, then an ellipsis."""
    v = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    text = " ".join(f"{x:+9.4f}".replace("-0.0000", "+0.0000") for x in v[:shown])
    return text + (" ..." if v.size > shown else "")


def _width(size: int, shown: int = 3) -> int:
    return 10 * min(max(size, 1), shown) - 1 + (4 if size > shown else 0)


# ---------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace) -> int:
    m, label = load_model(args.model)
    d = kd.Data(m)
    dt = m.opt.timestep
    nstep = max(1, round(args.duration / dt))
    every = args.every or max(1, nstep // 20)

    def control(t: float) -> float:
        return args.amplitude * math.sin(2.0 * math.pi * args.frequency * t)

    integrator = kd.IntegratorType(m.opt.integrator).name.lower()
    print(f"model {label}: nq={m.nq} nv={m.nv} nu={m.nu} na={m.na}, "
          f"timestep {dt:g} s, integrator {integrator}")
    print(f"ctrl = {args.amplitude:g} * sin(2 pi {args.frequency:g} t) on every actuator; "
          f"{nstep} steps, a row every {every}")
    if m.nu == 0:
        print("(the model has no actuators: it moves under gravity and its passive forces only)")
    columns = ("time", "qpos", "qvel", "ctrl", "actuator_force")
    sizes = (1, m.nq, m.nv, m.nu, m.nu)
    widths = [max(len(c), 8 if c == "time" else _width(n)) for c, n in zip(columns, sizes, strict=True)]
    print("  ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))

    def row() -> None:
        cells = (f"{d.time:8.3f}", _fmt(d.qpos), _fmt(d.qvel), _fmt(d.ctrl), _fmt(d.actuator_force))
        print("  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))

    for i in range(nstep + 1):
        d.ctrl[:] = control(d.time)
        if i % every == 0 or i == nstep:
            kd.forward(m, d)  # so the row's actuator_force belongs to this time, qpos and ctrl
            row()
        if i < nstep:
            kd.step(m, d)
    return 0


# ---------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kinedyn",
        description="Robot kinematics and dynamics with MuJoCo's numbers.",
    )
    parser.add_argument("--version", action="version", version=f"kinedyn {kd.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="simulate a bundled model under a sinusoidal motor torque and print a table",
        description="Load a model (default: the bundled motor pendulum), drive every actuator with "
                    "ctrl = A sin(2 pi f t), simulate with kinedyn.step and print "
                    "time, qpos, qvel, ctrl and actuator_force every N steps.",
    )
    demo.add_argument("--model", default="pendulum", metavar="NAME|PATH",
                      help=f"bundled model ({', '.join(models.names())}) or MJCF file (default: pendulum)")
    demo.add_argument("--duration", type=float, default=2.0, metavar="S",
                      help="simulated time in seconds (default: 2)")
    demo.add_argument("--every", type=int, default=0, metavar="N",
                      help="print a row every N steps (default: about 20 rows)")
    demo.add_argument("--amplitude", type=float, default=5.0, metavar="A",
                      help="control amplitude, e.g. N m for a motor with gear 1 (default: 5)")
    demo.add_argument("--frequency", type=float, default=0.5, metavar="HZ",
                      help="control frequency in Hz (default: 0.5)")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "duration", 1.0) <= 0 or getattr(args, "every", 0) < 0:
        parser.error("--duration must be positive and --every non-negative")
    try:
        return args.func(args)
    except CommandError as err:
        message = " ".join(line.strip() for line in str(err).splitlines())  # always one line
        print(f"kinedyn: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `kinedyn demo | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
