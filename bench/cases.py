"""What is timed: one (prepare, call) pair per library and function.

``prepare`` runs after the state is randomised and outside the timing (e.g. the
``mj_forward`` that ``mj_fullM`` needs); ``call`` is what is timed. A library
that lacks a function has no entry, and the table shows n/a.

| function   | kinedyn                | MuJoCo                        | Pinocchio                    |
|------------|------------------------|-------------------------------|------------------------------|
| kinematics | kinematics(m, d)       | mj_kinematics                 | forwardKinematics(q)         |
| forward    | forward(m, d)          | mj_forward                    | aba(q, v, tau)               |
| inverse    | inverse(m, d)          | mj_inverse                    | rnea(q, v, a)                |
| rne        | rne(m, d, False, out=) | mj_rne(flg_acc=0), after fwd  | nonLinearEffects(q, v)       |
| full_m     | full_m(m, d), after fwd| mj_fullM, after mj_forward    | crba(q) (computes M from q)  |
| step       | step(m, d)             | mj_step                       | —                            |
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bench.models import Source, disable_constraints, pinocchio_model

FUNCTIONS = ("kinematics", "forward", "inverse", "rne", "full_m", "step")

Pair = tuple[Callable[[], object] | None, Callable[[], object]]


class Subject:
    """One model loaded in every library, with a state that ``randomise`` redraws in place."""

    def __init__(self, source: Source, seed: int = 0):
        import mujoco

        self.name = source.name
        self.origin = source.origin
        self.xml = disable_constraints(source.xml)
        self.rng = np.random.default_rng(seed)

        self.mjm = mujoco.MjModel.from_xml_string(self.xml)
        self.mjd = mujoco.MjData(self.mjm)
        self.nq, self.nv, self.nu = self.mjm.nq, self.mjm.nv, self.mjm.nu
        self.qacc = np.zeros(self.nv)

        self.m = self.d = None
        self.kinedyn_reason = None
        try:
            import kinedyn as kd

            self.m = kd.Model.from_xml_string(self.xml)
            self.d = kd.Data(self.m)
        except Exception as err:  # kinedyn still in progress: report and time the others
            self.kinedyn_reason = f"kinedyn cannot load {self.name}: {type(err).__name__}: {err}"

        self.pm, self.pin_reason = pinocchio_model(self.xml)
        if self.pm is not None:
            import pinocchio as pin

            self.pd = self.pm.createData()
            self.q = pin.neutral(self.pm)
            self.v, self.a, self.tau = (np.zeros(self.pm.nv) for _ in range(3))

    def randomise(self) -> None:
        """A fresh random state, the same for MuJoCo and kinedyn (Pinocchio: same distribution)."""
        import mujoco

        mjm, mjd, rng = self.mjm, self.mjd, self.rng
        qpos = mjm.qpos0.copy()
        mujoco.mj_integratePos(mjm, qpos, rng.normal(scale=0.3, size=self.nv), 1.0)  # valid quaternions
        qvel = rng.normal(size=self.nv)
        self.qacc[:] = rng.normal(size=self.nv)
        lo, hi = mjm.actuator_ctrlrange.T
        ctrl = np.where(mjm.actuator_ctrllimited.astype(bool), rng.uniform(lo, hi), rng.normal(size=self.nu))

        mujoco.mj_resetData(mjm, mjd)
        mjd.qpos[:], mjd.qvel[:], mjd.qacc[:], mjd.ctrl[:] = qpos, qvel, self.qacc, ctrl
        if self.d is not None:
            import kinedyn as kd

            kd.reset(self.m, self.d)
            self.d.qpos[:], self.d.qvel[:], self.d.qacc[:], self.d.ctrl[:] = qpos, qvel, self.qacc, ctrl
        if self.pm is not None:
            import pinocchio as pin

            nv = self.pm.nv
            self.q[:] = pin.integrate(self.pm, pin.neutral(self.pm), rng.normal(scale=0.3, size=nv))
            self.v[:], self.a[:], self.tau[:] = rng.normal(size=(3, nv))
        # MuJoCo's qacc is an output of mj_forward: restore it before mj_inverse (see cases)

    # ------------------------------------------------------------ per library

    def mujoco_cases(self) -> dict[str, Pair]:
        import mujoco

        m, d = self.mjm, self.mjd
        out = np.zeros(self.nv)
        dense = np.zeros((self.nv, self.nv))
        qacc = self.qacc

        def forward() -> None:
            mujoco.mj_forward(m, d)

        def set_qacc() -> None:
            d.qacc[:] = qacc

        return {
            "kinematics": (None, lambda: mujoco.mj_kinematics(m, d)),
            "forward": (None, forward),
            "inverse": (set_qacc, lambda: mujoco.mj_inverse(m, d)),
            "rne": (forward, lambda: mujoco.mj_rne(m, d, 0, out)),
            "full_m": (forward, lambda: mujoco.mj_fullM(m, d, dense)),
            "step": (None, lambda: mujoco.mj_step(m, d)),
        }

    def kinedyn_cases(self) -> tuple[dict[str, Pair], dict[str, str]]:
        """(cases, {function: why it is missing})."""
        if self.d is None:
            return {}, dict.fromkeys(FUNCTIONS, self.kinedyn_reason)
        import kinedyn as kd

        m, d = self.m, self.d
        qacc = self.qacc
        fn = {name: _kinedyn_function(name) for name in FUNCTIONS}
        missing = {name: f"kinedyn.{name} is not implemented yet" for name, f in fn.items() if f is None}

        def forward() -> None:
            kd.forward(m, d)

        def set_qacc() -> None:
            d.qacc[:] = qacc

        prepare_forward = forward if fn["forward"] is not None else None
        out = np.zeros(self.nv)
        candidates: dict[str, Pair] = {
            "kinematics": (None, lambda: fn["kinematics"](m, d)),
            "forward": (None, lambda: fn["forward"](m, d)),
            "inverse": (set_qacc, lambda: fn["inverse"](m, d)),
            "rne": (prepare_forward, lambda: fn["rne"](m, d, False, out=out)),
            "full_m": (prepare_forward, lambda: fn["full_m"](m, d)),
            "step": (None, lambda: fn["step"](m, d)),
        }
        for name in ("rne", "full_m"):
            if fn[name] is not None and prepare_forward is None:
                missing[name] = f"kinedyn.{name} needs kinedyn.forward first, which is not implemented yet"
        return {k: v for k, v in candidates.items() if k not in missing}, missing

    def pin_cases(self) -> dict[str, Pair]:
        if self.pm is None:
            return {}
        import pinocchio as pin

        pm, pd, q, v, a, tau = self.pm, self.pd, self.q, self.v, self.a, self.tau
        return {
            "kinematics": (None, lambda: pin.forwardKinematics(pm, pd, q)),
            "forward": (None, lambda: pin.aba(pm, pd, q, v, tau)),
            "inverse": (None, lambda: pin.rnea(pm, pd, q, v, a)),
            "rne": (None, lambda: pin.nonLinearEffects(pm, pd, q, v)),
            "full_m": (None, lambda: pin.crba(pm, pd, q)),
        }


def _kinedyn_function(name: str):
    """``kinedyn.<name>``, or the stage module's function before it is re-exported, or None."""
    import importlib

    import kinedyn as kd

    f = getattr(kd, name, None)
    if callable(f):  # kd.kinematics may also be the module of that name
        return f
    for module in ("dynamics", "inertia", "kinematics", "forward", "integrate", "inverse"):
        try:
            f = getattr(importlib.import_module(f"kinedyn.{module}"), name, None)
        except ImportError:
            continue
        if callable(f):
            return f
    return None
