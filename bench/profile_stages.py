"""Stage-by-stage timing of kinedyn against MuJoCo's own stages, interleaved in one process.

    python -m bench.profile_stages [--model humanoid] [--repeat 7] [--number 20000] [--only ...]

Each row times one kinedyn call and the MuJoCo call(s) doing the same work, alternating
repeats of ``number`` back-to-back calls and keeping the minimum CPU time per call (the
least disturbed repeat on a shared machine; time spent descheduled is not counted). The
``in-jit`` column calls the same kinedyn entry from a jitted loop: the kernel without the
cost of a call from Python. Its MuJoCo counterpart, ``mj C``, calls the same MuJoCo C
function(s) from a jitted loop through ctypes (libmujoco from the mujoco package), so
neither side pays Python's call overhead. One random state, set once; every stage's
prerequisites ran before (one ``forward``). Measures only: no asserts.

With a contact model (``--model humanoid-floor``, ``ant-floor``) the state is its standing
state, the collision and constraint stages get rows too, and ``step`` is left to
``kinedyn bench`` (thousands of steps would walk away from the standing state).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib
import os
import sys
import time
from functools import partial

import numpy as np

from kinedyn.cli.benchmark import Subject, model_source

# row label -> (kinedyn.engine module, entry taking (m, d)); the Python call goes through the same entry
ENTRIES = {
    "kinematics": ("smooth_kinematics", "kinematics_entry"),
    "com_pos": ("smooth_kinematics", "com_pos_entry"),
    "tendon": ("smooth_tendon", "tendon_entry"),
    "crb": ("smooth_inertia", "crb_entry"),
    "factor_m": ("smooth_inertia", "factor_m_entry"),
    "collision": ("collision_driver", "collision_entry"),
    "make_constraint": ("constraint", "make_constraint_entry"),
    "transmission": ("actuation", "transmission_entry"),
    "com_vel": ("smooth_rne", "com_vel_entry"),
    "passive": ("passive", "passive_entry"),
    "fwd_actuation": ("actuation", "fwd_actuation_entry"),
    "fwd_acceleration": ("forward", "fwd_acceleration_entry"),
    "fwd_constraint": ("solver", "fwd_constraint_entry"),
    "rne from scratch": ("smooth_rne", "bias_forces_entry"),
    "fwd_position": ("forward", "fwd_position_entry"),
    "fwd_velocity": ("forward", "fwd_velocity_entry"),
    "forward": ("forward", "forward_entry"),
    "inverse": ("inverse", "inverse_entry"),
}


def _cpu_us(call, number: int) -> float:
    t0 = time.process_time_ns()
    for _ in range(number):
        call()
    return (time.process_time_ns() - t0) / number / 1e3


def _jit_loop(entry):
    from numba import njit

    @njit
    def loop(mh, dh, n):
        for _ in range(n):
            entry(mh, dh)

    return loop


def _mujoco_c_loops(mujoco):
    """label -> jitted loop(n) calling MuJoCo's C function(s) for that row, or {} without libmujoco."""
    from numba import njit

    paths = sorted(glob.glob(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so*")))
    if not paths:
        return {}
    lib = ctypes.CDLL(paths[-1])

    def c_function(name, *extra):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, *extra]
        fn.restype = None
        return fn

    def loop_of(fn):
        @njit
        def loop(m, d, n):
            for _ in range(n):
                fn(m, d)
        return loop

    c_rne = c_function("mj_rne", ctypes.c_int, ctypes.c_void_p)
    c_kinematics, c_com_pos, c_com_vel = (c_function(n) for n in ("mj_kinematics", "mj_comPos", "mj_comVel"))

    @njit
    def rne_loop(m, d, out, n):
        for _ in range(n):
            c_rne(m, d, 0, out)

    @njit
    def rne_chain_loop(m, d, out, n):
        for _ in range(n):
            c_kinematics(m, d)
            c_com_pos(m, d)
            c_com_vel(m, d)
            c_rne(m, d, 0, out)

    loops = {label: loop_of(c_function(name)) for label, name in MUJOCO_C.items()}
    loops["rne"] = rne_loop
    loops["rne from scratch"] = rne_chain_loop
    return loops


# rows timed on the contact ("-floor") models only
CONTACT_ROWS = ("collision", "make_constraint", "fwd_constraint")

# row label -> MuJoCo C function taking (m, d) (the rne rows are built in _mujoco_c_loops)
MUJOCO_C = {
    "kinematics": "mj_kinematics", "com_pos": "mj_comPos", "tendon": "mj_tendon", "crb": "mj_crb",
    "factor_m": "mj_factorM", "collision": "mj_collision", "make_constraint": "mj_makeConstraint",
    "fwd_constraint": "mj_fwdConstraint", "transmission": "mj_transmission", "com_vel": "mj_comVel",
    "passive": "mj_passive", "fwd_actuation": "mj_fwdActuation", "fwd_acceleration": "mj_fwdAcceleration",
    "fwd_position": "mj_fwdPosition", "fwd_velocity": "mj_fwdVelocity", "forward": "mj_forward",
    "inverse": "mj_inverse", "step": "mj_step",
}


def rows(subject: Subject):
    """(label, kinedyn call, in-jit loop or None, MuJoCo call, Pinocchio call or None,
    MuJoCo C loop or None)."""
    import mujoco

    import kinedyn as kd
    from kinedyn._jit import FastEntry

    m, d, mjm, mjd = subject.m, subject.d, subject.mjm, subject.mjd
    mh, dh = m._handle, d._handle
    out, mjout = np.zeros(subject.nv), np.zeros(subject.nv)

    def mj_rne_chain():
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_comPos(mjm, mjd)
        mujoco.mj_comVel(mjm, mjd)
        mujoco.mj_rne(mjm, mjd, 0, mjout)

    mj_calls = {
        "kinematics": mujoco.mj_kinematics, "com_pos": mujoco.mj_comPos, "tendon": mujoco.mj_tendon,
        "crb": mujoco.mj_crb, "factor_m": mujoco.mj_factorM, "transmission": mujoco.mj_transmission,
        "com_vel": mujoco.mj_comVel, "passive": mujoco.mj_passive, "fwd_actuation": mujoco.mj_fwdActuation,
        "fwd_acceleration": mujoco.mj_fwdAcceleration, "collision": mujoco.mj_collision,
        "make_constraint": mujoco.mj_makeConstraint, "fwd_constraint": mujoco.mj_fwdConstraint,
        "fwd_position": mujoco.mj_fwdPosition,
        "fwd_velocity": mujoco.mj_fwdVelocity, "forward": mujoco.mj_forward, "inverse": mujoco.mj_inverse,
    }
    pin_calls = {}
    if subject.pm is not None:
        import pinocchio as pin

        pm, pd, q, v = subject.pm, subject.pd, subject.pin_q, subject.pin_v
        pin_calls = {"rne from scratch": lambda: pin.nonLinearEffects(pm, pd, q, v),
                     "forward": lambda: pin.aba(pm, pd, q, v, subject.pin_tau),
                     "inverse": lambda: pin.rnea(pm, pd, q, v, subject.pin_a)}

    c_loops = _mujoco_c_loops(mujoco)
    m_address, d_address, out_address = mjm._address, mjd._address, mjout.ctypes.data

    def c_call(label):
        loop = c_loops.get(label)
        if loop is None:
            return None
        if label.startswith("rne"):
            return lambda n: loop(m_address, d_address, out_address, n)
        return lambda n: loop(m_address, d_address, n)

    table = []
    for label, (module, name) in ENTRIES.items():
        if label in CONTACT_ROWS and not subject.contacts:
            continue
        entry = getattr(importlib.import_module(f"kinedyn.engine.{module}"), name, None)
        if entry is None:
            continue
        fast = FastEntry(entry)
        mj = mj_calls.get(label)
        mj_call = mj_rne_chain if label == "rne from scratch" else (lambda mj=mj: mj(mjm, mjd))
        loop = _jit_loop(entry)
        table.append((label, lambda fast=fast: fast(m._ptr, d._ptr), lambda n, loop=loop: loop(mh, dh, n),
                      mj_call, pin_calls.get(label), c_call(label)))
        if label == "passive":  # rne after the velocity stage, through the public function
            table.append(("rne", lambda: kd.rne(m, d, False, out=out), None,
                          lambda: mujoco.mj_rne(mjm, mjd, 0, mjout), None, c_call("rne")))
    if subject.contacts:  # steps would walk away from the standing state: kinedyn bench times them
        return table
    table.append(("step", lambda: kd.step(m, d), None, lambda: mujoco.mj_step(mjm, mjd), None,
                  c_call("step")))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_stages",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="humanoid", help="built-in bench model or MJCF path")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000, help="calls per repeat")
    parser.add_argument("--only", nargs="*", help="row labels to time (default: all)")
    args = parser.parse_args(argv)

    import mujoco

    import kinedyn as kd

    source, note = model_source(args.model)
    if source is None:
        parser.error(note)
    subject = Subject(source, seed=0)

    def same_state():
        subject.randomise()
        mujoco.mj_forward(subject.mjm, subject.mjd)
        kd.forward(subject.m, subject.d)

    same_state()
    print(f"{args.model}: min CPU µs per call over {args.repeat} interleaved repeats of {args.number} calls")
    print(f"{'stage':<18}{'kinedyn':>9}{'in-jit':>9}{'mujoco':>9}{'mj C':>9}{'pin':>9}{'kd/mj':>7}"
          f"{'jit/C':>7}")
    for label, kd_call, kd_loop, mj_call, pin_call, mj_loop in rows(subject):
        if args.only and label not in args.only:
            continue
        calls = [kd_call, mj_call] + ([pin_call] if pin_call else [])
        loops = {"kd": kd_loop, "mj": mj_loop}  # jitted loops taking the call count
        for call in calls:  # warm-up (compilation, first touch)
            call()
        for loop in loops.values():
            if loop is not None:
                loop(1)
        best = [float("inf")] * len(calls)
        best_loop = dict.fromkeys(loops, float("inf"))
        for _ in range(args.repeat):
            for i, call in enumerate(calls):
                best[i] = min(best[i], _cpu_us(call, args.number))
            for key, loop in loops.items():
                if loop is not None:
                    best_loop[key] = min(best_loop[key], _cpu_us(partial(loop, args.number), 1) / args.number)
        same_state()  # step advances the state: later rows see the same one

        def cell(value, present):
            return f"{value:9.3f}" if present else f"{'':>9}"

        ratio = best[0] / best[1]
        both_loops = kd_loop is not None and mj_loop is not None
        loop_ratio = f"{best_loop['kd'] / best_loop['mj']:7.2f}" if both_loops else f"{'':>7}"
        print(f"{label:<18}{best[0]:9.3f}{cell(best_loop['kd'], kd_loop is not None)}{best[1]:9.3f}"
              f"{cell(best_loop['mj'], mj_loop is not None)}{cell(best[-1], pin_call is not None)}"
              f"{ratio:7.2f}{loop_ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
