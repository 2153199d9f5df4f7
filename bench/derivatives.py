"""Finite-difference derivatives, kinedyn against MuJoCo in one process: ``python -m bench.derivatives``.

    python -m bench.derivatives [--models humanoid humanoid-floor] [--repeats 30] [--nthread N]

Times ``kd.transition_fd`` against ``mujoco.mjd_transitionFD`` (A and B; forward and centred
differences), ``kd.inverse_fd`` against ``mujoco.mjd_inverseFD`` (all outputs), and the analytical
``kd.transition_derivatives`` (A and B; ``sensors="none"``; allocating its outputs, and with
``out=`` reusing them) against ``mjd_transitionFD`` with forward differences (issue 25's target:
10x faster), at one state per model: for "-floor" models
the standing state of ``kinedyn bench`` (MuJoCo settled from qpos0),
else a few MuJoCo steps from qpos0 (contacts and constraints off, as ``kinedyn bench``). The
gymnasium models' RK4 is switched to Euler: mjd_transitionFD refuses RK4. Wall-clock time, the
best of ``--repeats`` calls each; kinedyn runs on ``--nthread`` threads (default: Numba's count),
MuJoCo's functions are single-threaded. ``--cpu`` times the process's CPU time instead (time spent
descheduled is not counted; meant for ``--nthread 1`` on a loaded machine). Also prints the
largest difference between the two libraries' matrices relative to MuJoCo's largest entry.
``kd.constraint_derivatives`` (the constraint force's derivatives, which mjd_inverseFD's matrices
hold) is timed against mjd_inverseFD too, analytical and with ``method="fd"`` (G_q by central
differences); its difference column compares d/dqacc.
Measures only: no asserts.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kinedyn as kd
from kinedyn.cli.benchmark import model_source
from kinedyn.engine.types import DisableBit


def _pair(name: str):
    import mujoco

    source, note = model_source(name)
    if source is None:
        raise SystemExit(note)
    mjm = mujoco.MjModel.from_xml_string(source.xml)
    m = kd.Model.from_xml_string(source.xml, allow_unsupported=True)
    off = DisableBit(0) if source.contacts else DisableBit.CONTACT | DisableBit.CONSTRAINT
    m.opt.disableflags = m.opt.disableflags | off
    mjm.opt.disableflags |= int(off)
    if m.opt.integrator == kd.IntegratorType.RK4:
        m.opt.integrator = kd.IntegratorType.EULER
        mjm.opt.integrator = int(kd.IntegratorType.EULER)
    mjd = mujoco.MjData(mjm)
    for _ in range(source.settle_steps or 10):
        mujoco.mj_step(mjm, mjd)
    mujoco.mj_forward(mjm, mjd)
    d = kd.Data(m)
    for f in ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "qacc"):
        getattr(d, f)[:] = getattr(mjd, f)
    d.time = mjd.time
    return m, d, mjm, mjd


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = ["wall"]


def _best(fn, repeats: int) -> float:
    clock = CLOCKS[_clock[0]]
    fn()
    best = np.inf
    for _ in range(repeats):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best


def _rel(ours, theirs) -> float:
    pairs = [(x, y) for x, y in zip(ours, theirs, strict=True) if y.size]
    return max(float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-300)) for x, y in pairs)


def _row(name: str, label: str, t_kd: float, t_mj: float, rel: float) -> None:
    print(f"{name:16} {label:28} {t_kd * 1e6:11.0f} {t_mj * 1e6:10.0f} {t_mj / t_kd:15.2f} {rel:13.2e}")


def bench_model(name: str, repeats: int, nthread) -> None:
    import mujoco

    m, d, mjm, mjd = _pair(name)
    ndx = 2 * m.nv + m.na
    for centered in (False, True):
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, m.nu))
        t_kd = _best(lambda c=centered: kd.transition_fd(m, d, 1e-6, c, nthread=nthread), repeats)
        t_mj = _best(lambda c=centered, A=A, B=B:
                     mujoco.mjd_transitionFD(mjm, mjd, 1e-6, c, A, B, None, None),
                     repeats)
        # (on --nthread threads too: a parallel call leaves Numba's workers spinning for a while,
        # which slowed the timings after it, CPU time and wall clock alike)
        rel = _rel(kd.transition_fd(m, d, 1e-6, centered, nthread=nthread)[:2], (A, B))
        _row(name, f"transition_fd {'centred' if centered else 'forward'}", t_kd, t_mj, rel)
    mujoco.mj_forward(mjm, mjd)
    out = [np.zeros((m.nv, m.nv)) for _ in range(3)] + [np.zeros((m.nv, m.nsensordata)) for _ in range(3)]
    out.append(np.zeros((m.nv, mjm.nC)))
    t_kd = _best(lambda: kd.inverse_fd(m, d, 1e-6, nthread=nthread), repeats)
    t_mj = _best(lambda: mujoco.mjd_inverseFD(mjm, mjd, 1e-6, False, *out), repeats)
    _row(name, "inverse_fd", t_kd, t_mj, _rel(kd.inverse_fd(m, d, 1e-6, nthread=nthread), out))
    # the constraint force's derivatives (kinedyn) against the inverse's finite differences (MuJoCo),
    # which hold them; the difference column: d/dqacc, J' C J against DfDa' - M
    kd.inverse(m, d)  # d's rows and aref at MuJoCo's qacc
    if d.nefc:  # (without rows both sides are zero up to rounding: nothing to compare)
        t_kd = _best(lambda: kd.constraint_derivatives(m, d), repeats)
        mass = kd.full_m(m, d)
        h = -kd.constraint_derivatives(m, d).dqfrc_dqacc
        _row(name, "constraint_derivatives", t_kd, t_mj, _rel([h], [out[2].T - mass]))
        # G_q wholly by central differences (the method before the analytical G_q): the gain
        t_fd = _best(lambda: kd.constraint_derivatives(m, d, method="fd"), repeats)
        _row(name, "constraint_derivatives fd", t_fd, t_mj, _rel([h], [out[2].T - mass]))
    bench_analytical(name, m, d, mjm, mjd, repeats)


def bench_analytical(name, m, d, mjm, mjd, repeats: int) -> None:
    """transition_derivatives against mjd_transitionFD (forward differences); the difference is
    relative to MuJoCo's centred differences. A model or state it refuses is reported as such."""
    import mujoco

    ndx = 2 * m.nv + m.na
    try:
        ours = kd.transition_derivatives(m, d, sensors="none")
    except ValueError as err:
        print(f"{name:16} {'transition_derivatives':28} refused: {str(err).split(': ', 2)[-1][:90]}")
        return
    A, B = np.zeros((ndx, ndx)), np.zeros((ndx, m.nu))
    mujoco.mjd_transitionFD(mjm, mjd, 1e-6, True, A, B, None, None)
    rel = _rel(ours[:2], (A, B))
    t_kd = _best(lambda: kd.transition_derivatives(m, d, sensors="none"), repeats)
    t_mj = _best(lambda: mujoco.mjd_transitionFD(mjm, mjd, 1e-6, False, A, B, None, None), repeats)
    _row(name, "transition_derivatives", t_kd, t_mj, rel)
    # the outputs reused (a result passed back as out=, as a control loop does; MuJoCo's are too)
    t_kd = _best(lambda: kd.transition_derivatives(m, d, sensors="none", out=ours), repeats)
    _row(name, "transition_derivatives out=", t_kd, t_mj, rel)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["humanoid", "humanoid-floor"])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--nthread", type=int, default=None)
    parser.add_argument("--cpu", action="store_true",
                        help="the process's CPU time instead of wall-clock (for --nthread 1 under load)")
    args = parser.parse_args(argv)
    _clock[0] = "cpu" if args.cpu else "wall"
    print(f"{'model':16} {'function':28} {'kinedyn µs':>11} {'MuJoCo µs':>10} {'MuJoCo/kinedyn':>15} "
          f"{'max rel diff':>13}")
    for name in args.models:
        bench_model(name, args.repeats, args.nthread)


if __name__ == "__main__":
    main()
