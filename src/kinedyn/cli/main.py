"""The ``kinedyn`` command: ``demo``, ``info``, ``simulate``, ``inverse-dynamics``, ``ik``, ``view``,
``rollout``, ``bench``.

A thin layer over the library: parse arguments (argparse), call ``kinedyn``, print
tables (rich) and write files (CSV, PNG plots through :mod:`kinedyn.viewer.plotting`).
docs/cli.md is the reference. Exit status: 0 success; 1 the command ran but did not
reach its goal (IK not converged, simulation diverged); 2 bad input (unreadable or
invalid model or data file, unknown name, wrong number of values), reported as one
line on stderr like argparse's own usage errors.

Each subcommand is one ``add_<name>(subparsers)`` function that builds its parser and
sets ``func``; :data:`COMMANDS` lists them, so adding a subcommand is adding one
function to that tuple. matplotlib and rich are imported inside the commands, so
``kinedyn --help`` starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn import models
from kinedyn.tools.trajectory import METHODS, dof_names, qpos_names

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# ---------------------------------------------------------------- shared helpers


def load_model(spec: str, allow_unsupported: bool = False,
               floating_base: bool = False) -> tuple[kd.Model, str]:
    """A bundled model by name, or an MJCF or URDF file by path; returns (model, label).
    ``allow_unsupported``: load a file that uses features kinedyn does not simulate (warned about).
    ``floating_base``: a free joint at the root link of a URDF file (ValueError for MJCF)."""
    if spec in models.names():
        if floating_base:
            raise ValueError(f"--floating-base applies to URDF files only; '{spec}' is a bundled MJCF model")
        return models.load(spec), spec
    path = Path(spec)
    if not path.exists() and path.suffix == "" and len(path.parts) == 1:
        # looks like a (misspelled) bundled name rather than a file: KeyError lists the names
        models.path(spec)
    return kd.Model.from_xml_path(path, allow_unsupported=allow_unsupported,
                                  floating_base=floating_base), str(path)


def model_source(spec: str) -> Path:
    """The MJCF file of a bundled model name or a path (the viewer and the GIF read its colours)."""
    return models.path(spec) if spec in models.names() else Path(spec)


def console(stderr: bool = False):
    """A rich Console; wide when not a terminal, so piped tables are not squeezed to 80 columns."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else 160, highlight=False)


def progress_reporter(quiet: bool) -> Callable:
    """A progress factory for :func:`kinedyn.cli.demo.run` and the commands: a rich bar on stderr.

    Off with ``--quiet`` or when stderr is not a terminal (logs and pipes stay clean).
    """
    from kinedyn.cli.demo import no_progress

    if quiet or not sys.stderr.isatty():
        return no_progress

    @contextlib.contextmanager
    def bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TimeRemainingColumn

        with Progress("[progress.description]{task.description}", BarColumn(), TaskProgressColumn(),
                      TimeRemainingColumn(), console=console(stderr=True), transient=True) as progress:
            task = progress.add_task(description, total=total)
            yield lambda n=1: progress.advance(task, n)

    return bar


def output_dir(args: argparse.Namespace) -> Path:
    out = Path(args.out) if args.out else Path("kinedyn-out") / args.command
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CommandError(f"cannot create output directory '{out}': {err.strerror}") from None
    return out


def print_files(files: dict[str, Path]) -> None:
    print("wrote:")
    for path in files.values():
        print(f"  {path}")


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help=f"bundled model ({', '.join(models.names())}), MJCF or URDF file")
    parser.add_argument("--allow-unsupported", action="store_true",
                        help="load a model that uses features kinedyn does not simulate, without them "
                             "(a warning each; by default such a model is an error)")
    parser.add_argument("--floating-base", action="store_true",
                        help="URDF only: add a free joint 'root_joint' at the root link, so the robot "
                             "floats (a URDF's base is fixed otherwise)")


def add_output_options(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument("--out", metavar="DIR",
                        help=f"directory for the files written (default: ./kinedyn-out/{command})")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def table(title: str, columns: list[str], rows: list[list]):
    """A rich table under a one-line bold title (a Table's own title would wrap to the table's width)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = Table(header_style="bold")
    for c in columns:
        t.add_column(c, justify="left" if c in ("name", "type", "parent", "body", "transmission", "dof",
                                                "dynamics", "gain", "bias", "joint") else "right")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return Group(Text(title, style="bold"), t)


def _range(r) -> str:
    """'[lo, hi]', or '-' for an unlimited (None) range."""
    return "-" if r is None else f"[{r[0]:g}, {r[1]:g}]"


def _name(m, kind: str, i: int) -> str:
    return m.id2name(kind, i) or f"#{i}"


def keyframe(text: str) -> int | str:
    """``--key``: a keyframe index (digits) or name, as :func:`kinedyn.reset` takes it."""
    return int(text) if text.isdigit() else text


def add_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", type=keyframe, metavar="NAME|INDEX",
                        help="start from this keyframe instead of qpos0")


# ---------------------------------------------------------------- demo


def add_demo(sub) -> None:
    p = sub.add_parser(
        "demo", help="the bundled biped walks on the floor: ZMP preview control, leg IK, inverse dynamics",
        description="The bundled 12-DoF biped walks on the floor, no harness: a walking pattern from ZMP "
                    "preview control on the cart-table model (Kajita et al. 2003), leg IK "
                    "(kinedyn.ik.leg6) per sample, feed-forward torques from inverse dynamics with the "
                    "feet carrying the body, position servos tracking, contacts simulated. Prints a "
                    "summary and writes CSVs, plots (planned ZMP vs measured centre of pressure, joint "
                    "torques, tracking error) and a GIF. Exits with status 1 if the robot falls.")
    p.add_argument("--steps", type=positive_int, default=None, metavar="N",
                   help="number of steps (default: 8; the last one brings the feet together)")
    p.add_argument("--no-animation", action="store_true", help="skip the GIF (saves a few seconds)")
    p.add_argument("--view", action="store_true",
                   help="afterwards, play the simulated motion in the browser viewer (Ctrl-C to stop)")
    add_viewer_options(p)
    add_output_options(p, "demo")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from kinedyn.cli import demo

    if args.view:
        require_viewer()  # before the demo's minute of work, not after
    out = output_dir(args)
    gait = demo.Gait() if args.steps is None else demo.Gait(nstep=args.steps)
    result = demo.run(out, gait=gait, animation=not args.no_animation, progress=progress_reporter(args.quiet))
    err = result.tracking_error
    rows = [[name, f"{tau:.2f}", f"{servo:.2f}", f"{np.degrees(np.abs(e).max()):.2f}",
             f"{np.degrees(np.sqrt(np.mean(e**2))):.2f}"]
            for name, tau, servo, e in zip(result.leg_joints, result.peak_torque, result.peak_servo_force,
                                           err.T, strict=True)]
    con = console()
    run = result.run
    t_end = result.pattern.t[run.n - 1]
    con.print(table(f"biped walk, {gait.nstep} steps planned, {t_end:.2f} s simulated",
                    ["joint", "peak feed-forward (N m)", "peak servo force (N m)", "max error (deg)",
                     "rms error (deg)"], rows))
    cop = result.cop_error[np.isfinite(result.cop_error)]
    con.print(f"steps taken: {result.steps} of {gait.nstep}; torso moved {result.distance:.3f} m forward; "
              f"max torso tilt {np.degrees(result.max_tilt):.2f} deg")
    cop_text = (f"rms {1e3 * np.sqrt(np.mean(cop**2)):.1f} mm, max {1e3 * cop.max():.1f} mm" if cop.size
                else "no floor contact measured")
    con.print(f"centre of pressure - planned ZMP: {cop_text}; "
              f"joint tracking error: max {np.degrees(np.abs(err).max()):.2f} deg")
    print_files(result.files)
    if result.fell:
        con.print(f"[bold red]the robot fell[/] at t = {run.fell_at:.2f} s (torso below "
                  f"{demo.FALL_HEIGHT} m or tilted more than {np.degrees(demo.FALL_TILT):.0f} deg)")
    if args.view:
        from kinedyn import viewer

        t, qpos = demo_trajectory(result)
        viewer.play(models.load(demo.MODEL_NAME), (t, qpos), source=models.path(demo.MODEL_NAME),
                    **viewer_options(args))
    return EXIT_FAILED if result.fell else EXIT_OK


def demo_trajectory(result) -> tuple[np.ndarray, np.ndarray]:
    """(t, qpos) of the demo's simulated run, for ``--view`` (the one place that reads DemoResult)."""
    run = result.run
    return result.pattern.t[:run.n], run.qpos[:run.n]


# ---------------------------------------------------------------- info


def model_summary(m) -> dict:
    """The model as plain data: sizes, options and one record per body, joint, actuator, tendon, site."""
    trn_kind = {kd.TrnType.JOINT: "jnt", kd.TrnType.JOINTINPARENT: "jnt", kd.TrnType.SLIDERCRANK: "site",
                kd.TrnType.TENDON: "tendon", kd.TrnType.SITE: "site", kd.TrnType.BODY: "body"}
    actuators = []
    for a in range(m.nactuator):
        trn = kd.TrnType(m.actuator_trntype[a])
        c = int(m.actuator_ctrladr[a])
        actuators.append({
            "name": _name(m, "actuator", a),
            "transmission": f"{trn.name.lower()} {_name(m, trn_kind[trn], m.actuator_trnid[a, 0])}",
            # a joint/tendon gear is one number; site and body transmissions use all six
            "gear": (m.actuator_gear[a].tolist() if np.any(m.actuator_gear[a, 1:])
                     else float(m.actuator_gear[a, 0])),
            "dynamics": kd.DynType(m.actuator_dyntype[a]).name.lower(),
            "gain": kd.GainType(m.actuator_gaintype[a]).name.lower(),
            "gainprm": m.actuator_gainprm[a, :3].tolist(),
            "bias": kd.BiasType(m.actuator_biastype[a]).name.lower(),
            "biasprm": m.actuator_biasprm[a, :3].tolist(),
            # the first control's range; ctrlnum: the actuator's controls (MuJoCo 4.0: several or none)
            "ctrlrange": (m.actuator_ctrlrange[c].tolist()
                          if m.actuator_ctrlnum[a] and m.actuator_ctrllimited[c] else None),
            "ctrlnum": int(m.actuator_ctrlnum[a]),
        })
    return {
        "sizes": {s: int(getattr(m, s))
                  for s in ("nq", "nv", "nu", "na", "nbody", "njnt", "ntendon", "nsite")},
        "option": {"timestep": m.opt.timestep, "gravity": m.opt.gravity.tolist(),
                   "integrator": kd.IntegratorType(m.opt.integrator).name.lower()},
        "mass": float(m.body_mass.sum()),
        "bodies": [{"name": _name(m, "body", b), "parent": _name(m, "body", m.body_parentid[b]),
                    "mass": float(m.body_mass[b]), "subtree_mass": float(m.body_subtreemass[b])}
                   for b in range(1, m.nbody)],
        "joints": [{"name": _name(m, "jnt", j), "type": kd.JointType(m.jnt_type[j]).name.lower(),
                    "body": _name(m, "body", m.jnt_bodyid[j]), "qposadr": int(m.jnt_qposadr[j]),
                    "dofadr": int(m.jnt_dofadr[j]),
                    "range": m.jnt_range[j].tolist() if m.jnt_limited[j] else None}
                   for j in range(m.njnt)],
        "actuators": actuators,
        "tendons": [{"name": _name(m, "tendon", i), "objects": int(m.tendon_num[i]),
                     "length0": float(m.tendon_length0[i]),
                     "range": m.tendon_range[i].tolist() if m.tendon_limited[i] else None}
                    for i in range(m.ntendon)],
        "sites": [{"name": _name(m, "site", s), "body": _name(m, "body", m.site_bodyid[s]),
                   "pos": m.site_pos[s].tolist()} for s in range(m.nsite)],
        "sensors": sensor_summary(m),
        "meshes": [{"name": _name(m, "mesh", i), "vertices": int(m.mesh_vertnum[i]),
                    "faces": int(m.mesh_facenum[i]), "hull": bool(m.mesh_graphadr[i] >= 0),
                    "geoms": [_name(m, "geom", g) for g in np.flatnonzero(m.geom_dataid == i)]}
                   for i in range(m.nmesh)],
        "constraints": constraint_summary(m),
    }


def sensor_summary(m) -> list[dict]:
    """One record per sensor: type, object, reference, its slice of sensordata, cutoff."""
    kinds = {kd.ObjType.BODY: "body", kd.ObjType.XBODY: "body", kd.ObjType.GEOM: "geom",
             kd.ObjType.SITE: "site", kd.ObjType.JOINT: "jnt", kd.ObjType.TENDON: "tendon",
             kd.ObjType.ACTUATOR: "actuator"}

    def obj(objtype, i):
        if i < 0 or objtype not in kinds:
            return "-"
        return f"{kd.ObjType(objtype).name.lower()} {_name(m, kinds[objtype], i)}"

    return [{"name": m.id2name("sensor", i), "type": kd.SensorType(m.sensor_type[i]).name.lower(),
             "object": obj(m.sensor_objtype[i], m.sensor_objid[i]),
             "reference": obj(m.sensor_reftype[i], m.sensor_refid[i]),
             "adr": int(m.sensor_adr[i]), "dim": int(m.sensor_dim[i]),
             "stage": ("none", "pos", "vel", "acc")[m.sensor_needstage[i]],
             "cutoff": float(m.sensor_cutoff[i])} for i in range(m.nsensor)]


def constraint_summary(m) -> dict:
    """The constraint model: solver settings, what can make rows, and the equality constraints."""
    eq_kind = {kd.EqType.CONNECT: "body", kd.EqType.WELD: "body", kd.EqType.JOINT: "jnt",
               kd.EqType.TENDON: "tendon"}

    def eq_object(e, i):
        if i < 0:
            return "-"
        kind = "site" if m.eq_objtype[e] == kd.ObjType.SITE else eq_kind[kd.EqType(m.eq_type[e])]
        return _name(m, kind, i)

    o = m.opt
    return {
        "solver": kd.SolverType(o.solver).name.lower(), "cone": kd.ConeType(o.cone).name.lower(),
        "iterations": o.iterations, "tolerance": o.tolerance, "noslip_iterations": o.noslip_iterations,
        "disabled": [f.name.lower() for f in kd.DisableBit
                     if f in (kd.DisableBit.CONSTRAINT, kd.DisableBit.EQUALITY, kd.DisableBit.LIMIT,
                              kd.DisableBit.FRICTIONLOSS, kd.DisableBit.WARMSTART, kd.DisableBit.ISLAND,
                              kd.DisableBit.CONTACT)
                     and o.disableflags & f],
        "limited_joints": int(np.count_nonzero(m.jnt_limited)),
        "limited_tendons": int(np.count_nonzero(m.tendon_limited)),
        "frictionloss_dofs": int(np.count_nonzero(m.dof_frictionloss)),
        "frictionloss_tendons": int(np.count_nonzero(m.tendon_frictionloss)),
        "equality": [{"name": _name(m, "equality", e), "type": kd.EqType(m.eq_type[e]).name.lower(),
                      "object1": eq_object(e, m.eq_obj1id[e]), "object2": eq_object(e, m.eq_obj2id[e]),
                      "active": bool(m.eq_active0[e])} for e in range(m.neq)],
        "rows_max": int(m.nefcmax),
        "contacts_max": int(m.nconmax),
        "contact_pairs": [{"geom1": _name(m, "geom", m.pair_geom1[k]),
                           "geom2": _name(m, "geom", m.pair_geom2[k]), "condim": int(m.pair_dim[k])}
                          for k in range(m.npair)],
        "excluded_body_pairs": [[_name(m, "body", s >> 16), _name(m, "body", s & 0xFFFF)]
                                for s in m.exclude_signature.tolist()],
    }


def add_info(sub) -> None:
    p = sub.add_parser("info", help="summary of a model: bodies, joints, actuators, tendons, sites, sensors, "
                                    "meshes",
                       description="Print a model's sizes and options, then tables of its bodies (mass, "
                                   "parent), joints (type, range, qpos/dof address), actuators "
                                   "(transmission, gain, bias, ctrlrange), tendons, sites and sensors "
                                   "(type, object, slice of sensordata).")
    add_model_argument(p)
    p.add_argument("--json", action="store_true", help="print the same content as JSON instead")
    p.set_defaults(func=cmd_info)


def cmd_info(args: argparse.Namespace) -> int:
    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    summary = model_summary(m)
    if args.json:
        print(json.dumps({"model": label, **summary}, indent=2))
        return EXIT_OK
    con = console()
    sizes = " ".join(f"{k}={v}" for k, v in summary["sizes"].items())
    opt = summary["option"]
    con.print(f"model {label}: {sizes}")
    con.print(f"timestep {opt['timestep']:g} s, integrator {opt['integrator']}, "
              f"gravity {opt['gravity']}, total mass {summary['mass']:.4g} kg")
    fmt = "{:.4g}".format
    con.print(table("bodies", ["id", "name", "parent", "mass (kg)", "subtree mass (kg)"],
                    [[i + 1, b["name"], b["parent"], fmt(b["mass"]), fmt(b["subtree_mass"])]
                     for i, b in enumerate(summary["bodies"])]))
    con.print(table("joints", ["id", "name", "type", "body", "range", "qposadr", "dofadr"],
                    [[i, j["name"], j["type"], j["body"], _range(j["range"]),
                      j["qposadr"], j["dofadr"]] for i, j in enumerate(summary["joints"])]))
    if summary["actuators"]:
        con.print(table("actuators", ["id", "name", "transmission", "gear", "dynamics", "gain", "bias",
                                      "ctrlrange"],
                        [[i, a["name"], a["transmission"], " ".join(map(fmt, np.atleast_1d(a["gear"]))),
                          a["dynamics"],
                          f"{a['gain']} {' '.join(map(fmt, a['gainprm']))}",
                          f"{a['bias']} {' '.join(map(fmt, a['biasprm']))}",
                          _range(a["ctrlrange"])]
                         for i, a in enumerate(summary["actuators"])]))
    if summary["tendons"]:
        con.print(table("tendons", ["id", "name", "objects", "length0", "range"],
                        [[i, t["name"], t["objects"], fmt(t["length0"]), _range(t["range"])]
                         for i, t in enumerate(summary["tendons"])]))
    if summary["sites"]:
        con.print(table("sites", ["id", "name", "body", "pos"],
                        [[i, s["name"], s["body"], " ".join(map(fmt, s["pos"]))]
                         for i, s in enumerate(summary["sites"])]))
    if summary["sensors"]:
        con.print(table("sensors", ["id", "name", "type", "object", "reference", "sensordata", "stage",
                                    "cutoff"],
                        [[i, x["name"], x["type"], x["object"], x["reference"],
                          f"[{x['adr']}, {x['adr'] + x['dim']})", x["stage"],
                          fmt(x["cutoff"]) if x["cutoff"] else "-"]
                         for i, x in enumerate(summary["sensors"])]))
    if summary["meshes"]:
        con.print(table("meshes", ["id", "name", "vertices", "faces", "convex hull", "geoms"],
                        [[i, x["name"], x["vertices"], x["faces"], "yes" if x["hull"] else "no (visual)",
                          ", ".join(x["geoms"])] for i, x in enumerate(summary["meshes"])]))
    c = summary["constraints"]
    con.print(f"constraints: solver {c['solver']} ({c['iterations']} iterations, tolerance "
              f"{c['tolerance']:g}), {c['cone']} cones; {c['limited_joints']} limited joints, "
              f"{c['limited_tendons']} limited tendons, friction loss on {c['frictionloss_dofs']} dofs and "
              f"{c['frictionloss_tendons']} tendons, {len(c['equality'])} equality constraints"
              + (f"; disabled: {', '.join(c['disabled'])}" if c["disabled"] else ""))
    con.print(f"contacts: room for {c['contacts_max']}, {len(c['contact_pairs'])} explicit pairs, "
              f"{len(c['excluded_body_pairs'])} excluded body pairs")
    if c["contact_pairs"]:
        con.print(table("contact pairs", ["id", "geom 1", "geom 2", "condim"],
                        [[i, p["geom1"], p["geom2"], p["condim"]] for i, p in enumerate(c["contact_pairs"])]))
    if c["equality"]:
        con.print(table("equality constraints", ["id", "name", "type", "object 1", "object 2", "active"],
                        [[i, e["name"], e["type"], e["object1"], e["object2"], "yes" if e["active"] else "no"]
                         for i, e in enumerate(c["equality"])]))
    return EXIT_OK


# ---------------------------------------------------------------- simulate


def read_ctrl_csv(path: Path, m) -> tuple[np.ndarray, np.ndarray]:
    """(time (k,), ctrl (k, nu)) from a CSV: a header 'time' + one column per control, any order
    (:func:`kinedyn.tools.trajectory.read_csv`; named as :func:`kinedyn.tools.trajectory.control_names`:
    the actuator's name, ``name[k]`` for an actuator with several controls, ``actuator<i>`` unnamed)."""
    from kinedyn.tools import trajectory

    try:
        header, values = trajectory.read_csv(path)
    except OSError as err:
        raise CommandError(f"cannot read ctrl file '{path}': {err.strerror}") from None
    if len(values) == 0:
        raise CommandError(f"ctrl file '{path}' needs a header row and at least one data row")
    times = values[:, header.index("time")]
    ctrl = trajectory.columns_by_name(path, header, values, trajectory.control_names(m), "actuator")
    if not np.all(np.isfinite(values)) or np.any(np.diff(times) <= 0):
        raise CommandError(f"ctrl file '{path}': values must be finite and times strictly increasing")
    return times, ctrl


def ctrl_schedule(args, m) -> Callable[[float], np.ndarray]:
    """ctrl(t) from --ctrl: constants (one broadcast or nu), or a CSV with --interp hold/linear."""
    spec = args.ctrl or ["0"]
    if len(spec) == 1 and not _is_number(spec[0]):
        times, table_ = read_ctrl_csv(Path(spec[0]), m)
        if args.interp == "linear":  # constant beyond the ends (np.interp's extrapolation)
            return lambda t: np.array([np.interp(t, times, table_[:, a]) for a in range(m.nu)])
        # zero-order hold: the last row at or before t (the first row before it starts)
        return lambda t: table_[max(0, np.searchsorted(times, t, side="right") - 1)]
    if not all(_is_number(s) for s in spec):
        raise CommandError(f"--ctrl takes numbers or one CSV file, got {' '.join(spec)}")
    values = np.array([float(s) for s in spec])
    if values.size not in (1, m.nu):
        raise CommandError(f"--ctrl needs 1 value (broadcast) or nu = {m.nu} values, got {values.size}")
    constant = np.broadcast_to(values, (m.nu,)).copy()
    return lambda t: constant


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


INTEGRATORS = {t.name.lower(): t for t in kd.IntegratorType}
GIF_FPS = 15.0


def add_simulate(sub) -> None:
    p = sub.add_parser("simulate", help="simulate a model under given controls; write the trajectory, a plot",
                       description="Step a model with kinedyn.step from qpos0 (or --key) for --duration "
                                   "seconds. Controls are constants or a CSV (time + one column per "
                                   "actuator). Writes trajectory.csv (time + qpos, the format "
                                   "kinedyn.tools.trajectory reads) and simulate.png.")
    add_model_argument(p)
    p.add_argument("--duration", type=positive_float, default=2.0, metavar="S",
                   help="simulated time in seconds (default: 2)")
    p.add_argument("--ctrl", nargs="+", metavar="V|CSV",
                   help="one value for every actuator, nu values, or a CSV file (default: 0)")
    p.add_argument("--interp", choices=("hold", "linear"), default="hold",
                   help="CSV controls between rows: zero-order hold (default) or linear")
    p.add_argument("--integrator", choices=sorted(INTEGRATORS), help="override the model's integrator")
    p.add_argument("--gif", action="store_true",
                   help="also write simulate.gif: the motion with shaded geoms, a floor and the time")
    add_key_option(p)
    add_output_options(p, "simulate")
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    from kinedyn.tools import trajectory
    from kinedyn.viewer import plotting

    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    if args.integrator:
        m.opt.integrator = int(INTEGRATORS[args.integrator])
    ctrl_at = ctrl_schedule(args, m)
    d = kd.Data(m)
    kd.reset(m, d, key=args.key)  # mj_resetDataKeyframe; qpos0 without --key
    out = output_dir(args)
    nstep = max(1, round(args.duration / m.opt.timestep))
    t = np.empty(nstep + 1)
    qpos, qvel = np.empty((nstep + 1, m.nq)), np.empty((nstep + 1, m.nv))
    ctrl, force = np.empty((nstep + 1, m.nu)), np.empty((nstep + 1, m.nout))
    with warnings.catch_warnings(), progress_reporter(args.quiet)("simulating", nstep + 1) as advance:
        warnings.simplefilter("error", kd.NonFiniteStateWarning)  # a reset state is a failed run here
        try:
            for i in range(nstep + 1):
                d.ctrl[:] = ctrl_at(d.time)
                kd.forward(m, d)  # so each row's actuator_force belongs to its time, qpos and ctrl
                t[i], qpos[i], qvel[i], ctrl[i], force[i] = d.time, d.qpos, d.qvel, d.ctrl, d.actuator_force
                if i < nstep:
                    kd.step(m, d)
                if i % 100 == 0:
                    advance(min(100, nstep + 1 - i))
        except kd.NonFiniteStateWarning as warning:
            print(f"kinedyn simulate: simulation diverged: {warning}", file=sys.stderr)
            return EXIT_FAILED
    files = {"trajectory": out / "trajectory.csv"}
    trajectory.save_csv(files["trajectory"], t, qpos, m)
    actuators = [_name(m, "actuator", a) for a in range(m.nactuator)]
    Panel = plotting.Panel
    panels = [Panel("qpos", qpos, qpos_names(m)), Panel("qvel", qvel, dof_names(m))]
    if m.nu:
        panels.append(Panel("ctrl", ctrl, trajectory.control_names(m)))
    if m.nactuator:
        panels.append(Panel("actuator_force", force, actuators))
    files["plot"] = plotting.plot_panels(out / "simulate.png", t, panels, title=f"kinedyn simulate {label}")
    if args.gif:
        from kinedyn.viewer import render

        nframe = int(min(150, max(2, round(GIF_FPS * t[-1]) + 1)))
        pick = np.unique(np.linspace(0, nstep, nframe).round().astype(int))
        files["animation"] = render.animate(m, qpos[pick], out / "simulate.gif",
                                            fps=max(1.0, (len(pick) - 1) / max(t[-1], 1e-9)),
                                            title=f"kinedyn simulate {label}", times=t[pick],
                                            source=model_source(args.model))
    integrator = kd.IntegratorType(m.opt.integrator).name.lower()
    print(f"model {label}: {nstep} steps of {m.opt.timestep:g} s ({integrator}) to t = {d.time:.4g} s")
    print(f"final qpos: {' '.join(f'{x:.6g}' for x in d.qpos)}")
    print_files(files)
    return EXIT_OK


# ---------------------------------------------------------------- inverse dynamics


def add_inverse_dynamics(sub) -> None:
    p = sub.add_parser("inverse-dynamics", help="joint torques of a joint trajectory (CSV or NPZ)",
                       description="Differentiate a joint trajectory (time + qpos) and run inverse "
                                   "dynamics at every sample (kinedyn.tools.trajectory.inverse_dynamics). "
                                   "Writes torques.csv and torques.png.")
    add_model_argument(p)
    p.add_argument("trajectory", metavar="TRAJ",
                   help="CSV (time + one column per qpos coordinate) or NPZ ('time', 'qpos')")
    p.add_argument("--method", choices=METHODS, default="fd",
                   help="how qvel and qacc are obtained: backward/forward differences as a semi-implicit "
                        "Euler step ('fd', default), central differences, or a quintic spline; 'fd' and "
                        "'central' drop the first and last sample")
    p.add_argument("--ctrl", action="store_true",
                   help="also solve for the actuator controls that produce the torques")
    add_output_options(p, "inverse-dynamics")
    p.set_defaults(func=cmd_inverse_dynamics)


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from kinedyn.tools import trajectory

    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    path = Path(args.trajectory)
    if not path.is_file():
        raise CommandError(f"no trajectory file '{path}'")
    t, qpos = trajectory.load(path, m)  # matches CSV columns to the model's qpos by name
    result = trajectory.inverse_dynamics(m, t, qpos, method=args.method, ctrl=args.ctrl)
    out = output_dir(args)
    files = {"torques": out / "torques.csv", "plot": out / "torques.png"}
    result.to_csv(files["torques"])
    result.plot(files["plot"])
    tau = np.abs(result.qfrc_inverse)
    rows = [[name, v, f"{tau[:, v].max():.4g}", f"{np.sqrt(np.mean(tau[:, v] ** 2)):.4g}"]
            for v, name in enumerate(dof_names(m))]
    con = console()
    con.print(table(f"inverse dynamics ({args.method}) of {path.name} on {label}: "
                    f"{len(result.t)} of {len(t)} samples, t = {result.t[0]:.4g} .. {result.t[-1]:.4g} s",
                    ["dof", "index", "peak |qfrc_inverse|", "rms"], rows))
    if args.ctrl:
        con.print(f"ctrl: max |residual| {np.abs(result.ctrl_residual).max():.3g} "
                  "(generalised force the actuators cannot produce)")
    print_files(files)
    return EXIT_OK


# ---------------------------------------------------------------- ik


def add_ik(sub) -> None:
    p = sub.add_parser("ik", help="solve inverse kinematics for one site or body target",
                       description="Move a site (or body) to --pos and/or --quat with kinedyn.ik.solve "
                                   "and print the joint angles. Exit status 1 if the solve did not "
                                   "converge (the closest pose found is still printed).")
    add_model_argument(p)
    frame = p.add_mutually_exclusive_group(required=True)
    frame.add_argument("--site", metavar="NAME", help="the site to move")
    frame.add_argument("--body", metavar="NAME", help="the body to move (instead of a site)")
    p.add_argument("--pos", nargs=3, type=float, metavar=("X", "Y", "Z"),
                   help="goal position, world frame (m)")
    p.add_argument("--quat", nargs=4, type=float, metavar=("W", "X", "Y", "Z"),
                   help="goal orientation, world frame")
    p.add_argument("--joints", nargs="+", metavar="NAME", help="joints to move (default: all)")
    p.add_argument("--method", choices=("lm", "dls", "newton"), default="lm", help="solver (default: lm)")
    add_key_option(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_ik)


def cmd_ik(args: argparse.Namespace) -> int:
    from kinedyn import ik

    if args.pos is None and args.quat is None:
        raise CommandError("give --pos X Y Z, --quat W X Y Z or both")
    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    d = kd.Data(m)
    kd.reset(m, d, key=args.key)  # mj_resetDataKeyframe; qpos0 without --key
    target = ik.Target(site=args.site, body=args.body, pos=args.pos, quat=args.quat)
    res = ik.solve(m, target, qpos=d.qpos.copy(), joints=args.joints, method=args.method)
    joints = range(m.njnt) if args.joints is None else [m.joint(j).id for j in args.joints]
    frame = f"site {args.site}" if args.site else f"body {args.body}"
    if args.json:
        print(json.dumps({"model": label, "target": frame, "success": bool(res.success),
                          "iterations": int(res.iterations), "pos_error": float(res.pos_error[0]),
                          "rot_error": float(res.rot_error[0]), "qpos": res.qpos.tolist()}, indent=2))
    else:
        labels = qpos_names(m)
        rows = []
        for j in joints:
            adr = m.jnt_qposadr[j]
            width = {kd.JointType.FREE: 7, kd.JointType.BALL: 4}.get(kd.JointType(m.jnt_type[j]), 1)
            for k in range(width):
                rows.append([labels[adr + k], f"{res.qpos[adr + k]:.6f}",
                             _range(m.jnt_range[j] if m.jnt_limited[j] and width == 1 else None)])
        con = console()
        con.print(table(f"ik {label}: {frame}", ["joint", "qpos", "range"], rows))
        con.print(f"{'converged' if res.success else 'NOT converged'} after {res.iterations} iterations: "
                  f"position error {res.pos_error[0]:.3g} m, rotation error {res.rot_error[0]:.3g} rad")
        print(f"qpos: {' '.join(repr(float(x)) for x in res.qpos)}")
    return EXIT_OK if res.success else EXIT_FAILED


# ---------------------------------------------------------------- view


def require_viewer() -> None:
    """A usage error, not a traceback, when the viewer extra is not installed."""
    import importlib.util

    if importlib.util.find_spec("viser") is None:
        raise CommandError("the browser viewer needs viser: pip install 'kinedyn[viewer]'")


def add_viewer_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("viewer")
    g.add_argument("--host", default="127.0.0.1", help="address to serve the viewer on (default: 127.0.0.1)")
    g.add_argument("--port", type=int, default=8080, help="port (default: 8080, or the next free one)")
    g.add_argument("--frames", action="store_true", help="show the body frames")
    g.add_argument("--sites", action="store_true", help="show the sites")
    g.add_argument("--no-contacts", action="store_true", help="hide the contact points and forces")
    g.add_argument("--no-environment", action="store_true",
                   help="plain lights, no environment map (for a browser without a GPU: quicker first frame)")


def viewer_options(args: argparse.Namespace) -> dict:
    return {"host": args.host, "port": args.port, "frames": args.frames, "sites": args.sites,
            "contacts": not args.no_contacts, "environment": not args.no_environment}


def add_view(sub) -> None:
    p = sub.add_parser("view", help="simulate a model live (or play a trajectory) in the web browser",
                       description="Serve an interactive 3-D view of the model on localhost and print "
                                   "its URL; Ctrl-C stops it. The model is simulated live (kd.step, in "
                                   "real time): play/pause/step/reset, keyframes, speed, a slider per "
                                   "actuator, click a body and drag its handle to pull it, a live plot, "
                                   "recording to a trajectory file or a GIF. With --static, joint sliders "
                                   "pose the model and show the torques that hold the pose; with "
                                   "--trajectory (CSV time + qpos columns, or NPZ 'time', 'qpos') a time "
                                   "slider plays it back. Needs the viewer extra: pip install "
                                   "'kinedyn[viewer]'.")
    add_model_argument(p)
    p.add_argument("--trajectory", metavar="FILE",
                   help="CSV or NPZ trajectory to play (as `simulate` writes)")
    p.add_argument("--no-play", action="store_true", help="do not start playing the trajectory at once")
    p.add_argument("--run", action="store_true", help="start the live simulation at once (else press Play)")
    p.add_argument("--static", action="store_true",
                   help="no simulation: pose the model with joint sliders (the holding torques)")
    add_key_option(p)
    add_viewer_options(p)
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    require_viewer()
    from kinedyn import viewer

    options = viewer_options(args) | {"source": model_source(args.model), "title": f"kinedyn {label}"}
    if args.trajectory:
        from kinedyn.tools import trajectory

        path = Path(args.trajectory)
        if not path.is_file():
            raise CommandError(f"no trajectory file '{path}'")
        t, qpos = trajectory.load(path, m)
        viewer.play(m, (t, qpos), autoplay=not args.no_play, **options)
    else:
        d = kd.Data(m)
        kd.reset(m, d, key=args.key)
        viewer.show(m, d, live=not args.static, run=args.run, **options)
    return EXIT_OK


# ---------------------------------------------------------------- rollout


def read_npz_array(path: Path, names: tuple[str, ...], what: str) -> np.ndarray:
    """The array called one of ``names`` in an NPZ file (or its only array)."""
    if not path.is_file():
        raise CommandError(f"no {what} file '{path}'")
    with np.load(path) as z:
        for name in names:
            if name in z.files:
                return np.asarray(z[name], dtype=np.float64)
        if len(z.files) == 1:
            return np.asarray(z[z.files[0]], dtype=np.float64)
        raise CommandError(f"{what} file '{path}' needs an array named {' or '.join(names)} "
                           f"(has {', '.join(z.files) or 'none'})")


def add_rollout(sub) -> None:
    p = sub.add_parser("rollout", help="open-loop rollouts of many initial states over a Ray cluster",
                       description="kinedyn.tools.batch.rollout over a Ray cluster (a local one unless "
                                   "--address is given): the batch is cut into shards, each worker runs "
                                   "the compiled batch kernel on its shards, and the states after every "
                                   "step are written to DIR/rollout.zarr (one chunk per shard). A rerun of "
                                   "the same command resumes from the shards already written. Same numbers "
                                   "as batch.rollout, bit for bit. Needs the ray extra: "
                                   "pip install 'kinedyn[ray]'.")
    add_model_argument(p)
    p.add_argument("--states", required=True, metavar="NPZ",
                   help="initial states (nbatch, 1 + nq + nv + na + nhistory) = [time, qpos, qvel, act, "
                        "history]: an array "
                        "'initial_state' or 'state' (or the file's only array)")
    p.add_argument("--controls", metavar="NPZ",
                   help="ctrl per step (nbatch or 1, nstep, nu): an array 'control' or 'ctrl' (or the only "
                        "one); default zero controls for --nstep steps")
    p.add_argument("--nstep", type=int, metavar="N", help="number of steps (default: from the controls)")
    p.add_argument("--address", metavar="ADDR",
                   help="Ray cluster to use: 'auto', HOST:6379 or ray://HOST:10001 "
                        "(default: start a local one)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="shards run at once (default: the cluster's CPUs)")
    p.add_argument("--shard-size", type=int, metavar="N",
                   help="trajectories per shard (default: four shards per worker)")
    p.add_argument("--restart", action="store_true", help="discard shards already in DIR and start again")
    p.add_argument("--write-on-workers", action="store_true",
                   help="workers write their shards into DIR themselves (DIR on a file system every node "
                        "shares); by default the results travel to this process, which writes them")
    add_output_options(p, "rollout")
    p.set_defaults(func=cmd_rollout)


def cmd_rollout(args: argparse.Namespace) -> int:
    from kinedyn.tools import distributed

    m, label = load_model(args.model, args.allow_unsupported, args.floating_base)
    states = read_npz_array(Path(args.states), ("initial_state", "state"), "states")
    control = read_npz_array(Path(args.controls), ("control", "ctrl"), "controls") if args.controls else None
    if control is None and args.nstep is None:
        raise CommandError("give --controls or --nstep")
    out = output_dir(args)
    try:
        run = distributed.rollout(m, states, control, args.nstep, out=out / "rollout.zarr",
                                  address=args.address, num_workers=args.workers, shard_size=args.shard_size,
                                  progress=not args.quiet and sys.stderr.isatty(), resume=not args.restart,
                                  write_on_workers=args.write_on_workers, label=label)
    except ImportError as err:
        raise CommandError(str(err)) from None
    print(f"model {label}: {run.nshard} shards on {run.workers} workers in {run.seconds:.1f} s "
          f"({run.computed} computed, {run.skipped} already written)")
    print(f"read it with kinedyn.tools.distributed.load('{run.path}')")
    print_files({"store": run.path})
    return EXIT_OK


# ---------------------------------------------------------------- bench


def add_bench(sub) -> None:
    from kinedyn.cli import benchmark  # cheap: stdlib + kinedyn; mujoco and pin are imported when timing

    p = sub.add_parser("bench", help="time kinedyn against MuJoCo and Pinocchio (when installed)",
                       description="Single-state kinematics, forward, inverse, rne, full_m, jac_site, step "
                                   "and batch rollouts, interleaved with mujoco (mj_*, mujoco.rollout) and "
                                   "pinocchio in one process; prints ratios and the machine, writes JSON "
                                   "with --json. See docs/benchmarks.md.")
    benchmark.add_arguments(p)
    p.set_defaults(func=benchmark.run)


# ---------------------------------------------------------------- entry point

# one function per subcommand: it adds its parser to the subparsers and sets func
COMMANDS: tuple[Callable, ...] = (add_demo, add_info, add_simulate, add_inverse_dynamics, add_ik, add_view,
                                  add_rollout, add_bench)


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (the full usage is one --help away)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kinedyn",
        description="Robot kinematics and dynamics with MuJoCo's numbers. "
                    "`kinedyn COMMAND --help` describes each command.",
        epilog="exit status: 0 ok, 1 ran but failed (IK not converged, simulation diverged), 2 bad input")
    parser.add_argument("--version", action="version", version=f"kinedyn {kd.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def one_line(err: BaseException) -> str:
    """An exception's message on one line (KeyError's repr quotes are dropped)."""
    text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def one_line_warning(message, category, *_):  # model warnings as "kinedyn info: warning: ..."
        return f"kinedyn {args.command}: warning: {category.__name__}: {message}\n"

    warnings.formatwarning = one_line_warning
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `kinedyn info biped | head` (an OSError: caught first)
        sys.stderr.close()
        return EXIT_OK
    except (CommandError, kd.ModelError, KeyError, ValueError, OSError) as err:
        # bad input from the user: a file, a name, a shape; the library's message says which
        print(f"kinedyn {args.command}: error: {one_line(err)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
