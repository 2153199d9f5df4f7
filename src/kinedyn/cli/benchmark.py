"""Benchmark harness: kinedyn against MuJoCo and Pinocchio in one process (``kinedyn bench``).

    kinedyn bench [--models pendulum arm humanoid biped humanoid-floor ant-floor] [--functions ...]
                  [--repeat K] [--quick] [--threads N] [--json PATH]

For every model and function the libraries take turns within each repeat: a fresh random
state (the same state for all, converted to Pinocchio's conventions), each library's untimed
preparation, then N back-to-back calls timed with ``perf_counter_ns``. The table shows the
minimum and median µs per call over the repeats and the ratio of the minima. MuJoCo and
Pinocchio are optional (``pip install 'kinedyn[bench]'``): without them only the kinedyn
column is filled. What each row times is in :data:`WHAT_IS_TIMED` and docs/benchmarks.md.

The "-floor" models (:data:`FLOOR_MODELS`) simulate contacts: gymnasium's humanoid and ant
standing on their floor. They start every repeat from one standing state (the model settled
from ``qpos0`` by kinedyn's own ``step``), not from a random one, and time ``forward``,
``step`` and ``rollout`` only (:data:`FLOOR_FUNCTIONS`).

The command line is wired by ``kinedyn.cli.main`` through :func:`add_arguments` and :func:`run`;
``python -m bench.run`` calls :func:`main`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn import models as bundled
from kinedyn.engine.types import DisableBit, JointType
from kinedyn.errors import NonFiniteStateWarning, UnsimulatedFeatureWarning, close_names

LIBRARIES = ("kinedyn", "mujoco", "pin")
FUNCTIONS = ("kinematics", "forward", "inverse", "rne", "rne_acc", "full_m", "jac_site", "step", "rollout")
DEFAULT_MODELS = ("pendulum", "arm", "humanoid", "humanoid-limits", "biped", "humanoid-floor", "ant-floor")
INSTALL_HINT = "pip install 'kinedyn[bench]' (or pip install -e '.[bench]' in a clone)"

# function -> (kinedyn, MuJoCo, Pinocchio); printed under the table and in docs/benchmarks.md
WHAT_IS_TIMED = {
    "kinematics": ("kinematics", "mj_kinematics", "forwardKinematics(q)"),
    "forward": ("forward", "mj_forward", "aba(q, v, tau)"),
    "inverse": ("inverse", "mj_inverse", "rnea(q, v, a)"),
    "rne": ("bias_forces (kinematics, com_pos, com_vel, rne(flg_acc=False) in one call)",
            "mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=0)", "nonLinearEffects(q, v)"),
    "rne_acc": ("kinematics, com_pos, com_vel, rne(flg_acc=True)",
                "mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=1)", "rnea(q, v, a)"),
    "full_m": ("kinematics, com_pos, crb, full_m", "mj_kinematics, mj_comPos, mj_makeM, mj_fullM",
               "crba(q)"),
    "jac_site": ("jac_site or jac_body (after kinematics, com_pos)",
                 "mj_jacSite or mj_jacBody (after mj_kinematics, mj_comPos)", "—"),
    "step": ("step", "mj_step", "—"),
    "rollout": ("batch.rollout(nthread=N), per step", "rollout.rollout(N MjData), per step", "—"),
}


# ================================================================ optional peers


def optional_module(name: str):
    """The module ``name`` if it imports, else None (mujoco and pinocchio are bench extras)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# ================================================================ models

# name -> (gymnasium file, description, steps of the model's own timestep that settle it from qpos0):
# contacts on, every constraint active, the model's own <option>. The humanoid is dropped from qpos0
# (feet 3 cm above the floor) and has stood on both feet for 0.2 s after 100 steps (0.3 s; it starts
# to topple after ~0.5 s); the ant settles on its four feet within 1 s (100 steps).
FLOOR_MODELS = {
    "humanoid-floor": ("humanoid.xml", "humanoid standing on the floor: free base + 17 hinges", 100),
    "ant-floor": ("ant.xml", "ant (quadruped) standing on the floor: free base + 8 hinges", 100),
}
# what the contact models time: the single-state kinematics/dynamics rows of the same robot without
# contacts are the "humanoid" rows
FLOOR_FUNCTIONS = ("forward", "step", "rollout")


@dataclass(frozen=True)
class Source:
    """One benchmark model: MJCF text and where it came from; ``note`` is printed under the table.

    Every library runs the model with its own ``<option>`` (timestep, integrator, solver), minus
    contacts, and minus constraints unless the model's name ends in "-limits"; a model with
    ``settle_steps`` (the "-floor" models) keeps contacts and constraints and starts from the
    state that many steps from ``qpos0`` reach.
    """

    name: str
    origin: str
    xml: str
    note: str | None = None
    settle_steps: int | None = None

    @property
    def contacts(self) -> bool:
        return self.settle_steps is not None


def gymnasium_asset(filename: str) -> Path | None:
    """Path of a model file shipped with gymnasium, or None when gymnasium is not installed.

    Found without importing gymnasium (importing its MuJoCo envs needs rendering packages).
    """
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "envs" / "mujoco" / "assets" / filename
    return path if path.is_file() else None


def _without_bodies(xml: str, names: set[str]) -> str:
    root = ET.fromstring(xml)
    for parent in root.iter():
        for child in list(parent):
            if child.tag == "body" and child.get("name") in names:
                parent.remove(child)
    return ET.tostring(root, encoding="unicode")


def _bundled(name: str, origin: str, note: str | None = None) -> Source:
    return Source(name, origin, bundled.xml(name), note)


def _arm() -> Source:
    path = gymnasium_asset("pusher.xml")
    if path is None:
        return _bundled("arm7", "kinedyn.models 'arm7' (iiwa-like 7-DoF arm)",
                        note="gymnasium is not installed: 'arm' is the bundled arm7, not the pusher arm")
    # the pusher's puck and goal are 4 slide joints that are not part of the arm
    xml = _without_bodies(path.read_text(), {"object", "goal"})
    return Source("arm", f"gymnasium pusher.xml without puck and goal: 7-DoF arm ({path})", xml)


def _humanoid() -> Source | None:
    path = gymnasium_asset("humanoid.xml")
    if path is None:
        return None
    return Source("humanoid", f"gymnasium humanoid.xml: free base + 17 hinges ({path})", path.read_text())


def model_source(name: str) -> tuple[Source | None, str | None]:
    """``(source, note)`` for a benchmark name, a bundled model name or an MJCF path.

    ``source`` is None when the model needs gymnasium and it is missing (``note`` says so).
    Raises KeyError with the closest names for anything else.
    """
    if name == "arm":
        return _arm(), None
    if name in ("humanoid", "humanoid-limits"):
        source = _humanoid()
        if source is not None and name == "humanoid-limits":
            source = Source(name, source.origin + "; joint limits active (constraint solver), contacts "
                            "off", source.xml)
        if source is None:
            return None, ("gymnasium is not installed: the humanoid is skipped, the bundled 12-DoF "
                          "biped stands in for it; " + INSTALL_HINT)
        return source, None
    if name in FLOOR_MODELS:
        filename, description, settle = FLOOR_MODELS[name]
        path = gymnasium_asset(filename)
        if path is None:
            return None, f"gymnasium is not installed: {name} is skipped; {INSTALL_HINT}"
        return Source(name, f"gymnasium {filename}: {description}, contacts on, settled {settle} steps "
                      f"from qpos0 ({path})", path.read_text(), settle_steps=settle), None
    if name in bundled.names():
        return _bundled(name, f"kinedyn.models '{name}'"), None
    path = Path(name)
    if path.is_file():
        return Source(path.stem, str(path), path.read_text()), None
    known = list(DEFAULT_MODELS) + [n for n in bundled.names() if n not in DEFAULT_MODELS]
    raise KeyError(f"unknown benchmark model {name!r}{close_names(name, known)}; use one of "
                   f"{', '.join(known)} or the path of an MJCF file")


def pinocchio_model(pin, xml: str):
    """``(pin.Model, None)`` built by ``pin.buildModelFromMJCF`` from ``xml``, or ``(None, reason)``."""
    root = ET.fromstring(xml)
    # pin's MJCF parser drops the subtree of an unnamed body; names do not change the physics
    for i, body in enumerate(root.iter("body")):
        if not body.get("name"):
            body.set("name", f"body{i}")
    fd, tmp = tempfile.mkstemp(suffix=".xml", prefix="kinedyn-bench-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(ET.tostring(root, encoding="unicode"))
        return pin.buildModelFromMJCF(tmp), None
    except Exception as err:  # pin raises ValueError/RuntimeError with multi-line messages
        return None, f"pin.buildModelFromMJCF failed: {str(err).strip().splitlines()[-1]}"
    finally:
        os.unlink(tmp)


# ================================================================ Pinocchio conventions

_PIN_SIMPLE = {JointType.HINGE: ("JointModelR",), JointType.SLIDE: ("JointModelP",)}


def pinocchio_mismatch(pm, m) -> str | None:
    """Why Pinocchio's model ``pm`` is not the same tree of joints as kinedyn's ``m``, or None.

    Pinocchio merges the joints of one body into a JointModelComposite and orders
    quaternions (x, y, z, w); the coordinate layout must otherwise be MuJoCo's: the same
    nq and nv, each Pinocchio joint starting at a kinedyn joint's qpos and dof address,
    free <-> FreeFlyer, ball <-> Spherical, hinge <-> revolute, slide <-> prismatic.
    """
    if (pm.nq, pm.nv) != (m.nq, m.nv):
        return f"pin has nq={pm.nq}, nv={pm.nv}; MuJoCo has nq={m.nq}, nv={m.nv}"
    by_qpos = {int(a): j for j, a in enumerate(m.jnt_qposadr)}
    for i in range(1, pm.njoints):
        joint, kind = pm.joints[i], pm.joints[i].shortname()
        j = by_qpos.get(joint.idx_q)
        if j is None or int(m.jnt_dofadr[j]) != joint.idx_v:
            return (f"pin joint {pm.names[i]!r} starts at q[{joint.idx_q}], v[{joint.idx_v}]; "
                    "no MuJoCo joint does")
        jtype = JointType(int(m.jnt_type[j]))
        if kind == "JointModelComposite":
            members = [JointType(int(t)) for t in m.jnt_type[j:j + joint.nv]]
            ok = all(t in (JointType.HINGE, JointType.SLIDE) for t in members)
        elif jtype == JointType.FREE:
            ok = kind == "JointModelFreeFlyer"
        elif jtype == JointType.BALL:
            ok = kind == "JointModelSpherical"
        else:
            ok = kind.startswith(_PIN_SIMPLE[jtype]) and joint.nv == 1
        if not ok:
            return f"pin joint {pm.names[i]!r} is {kind}, MuJoCo joint {j} is {jtype.name.lower()}"
    return None


def velocity_map(m, d) -> np.ndarray:
    """T with v_pin = T qvel at the configuration in ``d`` (kinematics must have run).

    A MuJoCo free joint's linear velocity is in the world frame, Pinocchio's FreeFlyer's in
    the body frame: that block is R^T, every other block the identity.
    """
    T = np.eye(m.nv)
    for j in range(m.njnt):
        if m.jnt_type[j] == JointType.FREE:
            v = int(m.jnt_dofadr[j])
            T[v:v + 3, v:v + 3] = d.xmat[m.jnt_bodyid[j]].T
    return T


def to_pinocchio(m, d, qpos, qvel, qacc, qfrc):
    """MuJoCo-convention (qpos, qvel, qacc, generalised force) as Pinocchio's (q, v, a, tau).

    Quaternions (w, x, y, z) -> (x, y, z, w). For a free joint with body rotation R and body
    angular velocity w: v_lin = R^T v_world, a_lin = R^T a_world - w x v_lin (the derivative
    of R^T v_world), f_lin = R^T f_world. ``d`` must hold kinematics at ``qpos``.
    """
    q, v, a, tau = (np.array(x, dtype=float) for x in (qpos, qvel, qacc, qfrc))
    for j in range(m.njnt):
        adr, dof, jtype = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j]), m.jnt_type[j]
        if jtype == JointType.FREE:
            R = d.xmat[m.jnt_bodyid[j]]
            v[dof:dof + 3] = R.T @ qvel[dof:dof + 3]
            a[dof:dof + 3] = R.T @ qacc[dof:dof + 3] - np.cross(qvel[dof + 3:dof + 6], v[dof:dof + 3])
            tau[dof:dof + 3] = R.T @ qfrc[dof:dof + 3]
            adr += 3
        if jtype in (JointType.FREE, JointType.BALL):
            q[adr:adr + 3], q[adr + 3] = qpos[adr + 1:adr + 4], qpos[adr]
    return q, v, a, tau


def pinocchio_mass_deviation(pin, pm, m, d) -> float:
    """max |M_kinedyn - T^T M_pin T| / max |M_kinedyn| at the state in ``d``.

    Kinetic energy does not depend on coordinates, so with v_pin = T qvel the two mass
    matrices must satisfy M = T^T M_pin T when both libraries built the same bodies.
    """
    kd.kinematics(m, d)
    kd.com_pos(m, d)
    kd.crb(m, d)
    M = kd.full_m(m, d)
    q, *_ = to_pinocchio(m, d, d.qpos, d.qvel, d.qacc, d.qfrc_applied)
    upper = np.array(pin.crba(pm, pm.createData(), q))  # pin fills the upper triangle
    M_pin = np.triu(upper) + np.triu(upper, 1).T
    T = velocity_map(m, d)
    return float(np.abs(M - T.T @ M_pin @ T).max() / np.abs(M).max())


# ================================================================ the model in every library


@dataclass
class Case:
    """What one library times for one function: ``call`` N times after ``prepare``.

    ``work`` divides the time of one call (steps in a rollout); ``check`` returns a
    problem seen after the timing (e.g. a diverged simulation) or None.
    """

    call: Callable[[], object]
    prepare: Callable[[], object] | None = None
    work: int = 1
    warmup: int = 3
    check: Callable[[], str | None] | None = None


@dataclass
class RolloutSize:
    nbatch: int = 64
    nstep: int = 100
    nthread: int = 2


class Subject:
    """One model loaded in kinedyn and, when importable, MuJoCo and Pinocchio.

    ``randomise`` draws one state (qpos on the joint manifold around qpos0, qvel, qacc,
    ctrl within ctrlrange when limited, a generalised force) and writes it to every library;
    for a contact model (``source.contacts``) it writes the standing state instead.
    """

    def __init__(self, source: Source, seed: int = 0, rollout: RolloutSize | None = None,
                 with_pinocchio: bool = True):
        self.name, self.origin = source.name, source.origin
        self.rng = np.random.default_rng(seed)
        self.rollout = rollout or RolloutSize()
        self.notes: list[str] = [source.note] if source.note else []
        self.unavailable: dict[str, str] = {}  # library -> why its column is empty
        self.contacts = source.contacts

        # contacts are off in every library except in the contact ("-floor") models; a "-limits"
        # model keeps its joint limits (the constraint solver), the others run without constraints
        off = DisableBit(0)
        if not self.contacts:
            off |= DisableBit.CONTACT
            if not self.name.endswith("-limits"):
                off |= DisableBit.CONSTRAINT
        with warnings.catch_warnings():
            # (sensors, which the benchmark does not read)
            warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
            self.m = kd.Model.from_xml_string(source.xml, allow_unsupported=True)
        self.m.opt.disableflags = self.m.opt.disableflags | off
        self.d = kd.Data(self.m)
        m = self.m
        self.nq, self.nv, self.nu, self.na = m.nq, m.nv, m.nu, m.na
        self.qacc, self.qfrc = np.zeros(m.nv), np.zeros(m.nv)
        self.standing = self._settle(source.settle_steps) if self.contacts else None

        self.mujoco = optional_module("mujoco")
        self.mjm = self.mjd = None
        if self.mujoco is None:
            self.unavailable["mujoco"] = f"mujoco is not installed: {INSTALL_HINT}"
        else:
            mj = self.mujoco
            self.mjm = mj.MjModel.from_xml_string(source.xml)
            self.mjm.opt.disableflags |= int(off)
            self.mjd = mj.MjData(self.mjm)
            if (self.mjm.nq, self.mjm.nv, self.mjm.nu) != (m.nq, m.nv, m.nu):
                self.unavailable["mujoco"] = "MuJoCo compiled different sizes (nq, nv, nu)"

        self.pin = optional_module("pinocchio") if with_pinocchio and not self.contacts else None
        self.pm = None
        if self.contacts:
            self.unavailable["pin"] = "Pinocchio simulates no contacts"
        elif not with_pinocchio:
            self.unavailable["pin"] = "not asked for"
        elif self.pin is None:
            self.unavailable["pin"] = f"pinocchio is not installed: {INSTALL_HINT}"
        else:
            self.pm, reason = pinocchio_model(self.pin, source.xml)
            reason = reason or pinocchio_mismatch(self.pm, m)
            if reason:
                self.pm = None
                self.unavailable["pin"] = f"not comparable: {reason}"
            else:
                self.pd = self.pm.createData()
                self.pin_q = np.zeros(self.pm.nq)
                self.pin_v, self.pin_a, self.pin_tau = (np.zeros(self.pm.nv) for _ in range(3))
        self.randomise()
        if self.pm is not None:
            self.pin_mass_deviation = pinocchio_mass_deviation(self.pin, self.pm, m, self.d)
            if self.pin_mass_deviation > 1e-9:
                self.notes.append(
                    f"{self.name}: Pinocchio builds the same tree and joints but other inertias "
                    f"(M differs by {self.pin_mass_deviation:.1e} relative): its times are for the "
                    "same work, its numbers are not MuJoCo's")
            self.randomise()  # the check left kinedyn's position stages at another state
        if self.contacts:
            self._describe_standing()

    def _settle(self, nstep: int) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """``(time, qpos, qvel, act)`` after ``nstep`` steps from qpos0 at rest without control:
        the state a contact model starts from (on the floor models, MuJoCo's to the last bit)."""
        m, d = self.m, self.d
        kd.reset(m, d)
        for _ in range(nstep):
            kd.step(m, d)
        return d.time, d.qpos.copy(), d.qvel.copy(), d.act.copy()

    def _describe_standing(self) -> None:
        """A note with the standing state's contacts, MuJoCo's count at the same state beside."""
        kd.forward(self.m, self.d)
        text = (f"{self.name}: every repeat starts at t = {self.standing[0]:.2f} s of a settle from "
                f"qpos0 (kinedyn {self.d.ncon} contacts, {self.d.nefc} constraint rows")
        if self.mjd is not None:
            self.mujoco.mj_forward(self.mjm, self.mjd)
            text += f"; MuJoCo {self.mjd.ncon} contacts, {self.mjd.nefc} rows"
        self.notes.append(text + ")")

    def random_state(self):
        m, rng = self.m, self.rng
        qpos = m.qpos0.copy()
        kd.integrate_pos(m, qpos, rng.normal(scale=0.3, size=m.nv), 1.0)  # unit quaternions
        lo, hi = m.actuator_ctrlrange.T
        limited = m.actuator_ctrllimited.astype(bool)
        ctrl = np.where(limited, rng.uniform(np.where(limited, lo, -1), np.where(limited, hi, 1)),
                        rng.normal(size=m.nu))
        return qpos, rng.normal(size=m.nv), rng.normal(size=m.nv), ctrl, rng.normal(size=m.nv)

    def randomise(self) -> None:
        """A fresh random state, the same in every library (Pinocchio's in its own conventions)."""
        if self.contacts:
            self._restore_standing()
            return
        qpos, qvel, self.qacc[:], ctrl, self.qfrc[:] = self.random_state()
        m, d = self.m, self.d
        kd.reset(m, d)
        d.qpos[:], d.qvel[:], d.qacc[:], d.ctrl[:] = qpos, qvel, self.qacc, ctrl
        if self.mjd is not None:
            mj, mjd = self.mujoco, self.mjd
            mj.mj_resetData(self.mjm, mjd)
            mjd.qpos[:], mjd.qvel[:], mjd.qacc[:], mjd.ctrl[:] = qpos, qvel, self.qacc, ctrl
        if self.pm is not None:
            kd.kinematics(m, d)  # the free joints' rotations for the velocity conversion
            self.pin_q[:], self.pin_v[:], self.pin_a[:], self.pin_tau[:] = to_pinocchio(
                m, d, qpos, qvel, self.qacc, self.qfrc)

    def _restore_standing(self) -> None:
        """The standing state (zero control, warm start cleared) in kinedyn and MuJoCo."""
        time_, qpos, qvel, act = self.standing
        kd.reset(self.m, self.d)
        self.d.time = time_
        self.d.qpos[:], self.d.qvel[:], self.d.act[:] = qpos, qvel, act
        if self.mjd is not None:
            mjd = self.mjd
            self.mujoco.mj_resetData(self.mjm, mjd)
            mjd.time = time_
            mjd.qpos[:], mjd.qvel[:], mjd.act[:] = qpos, qvel, act

    # ------------------------------------------------------------ cases per library

    def cases(self, library: str) -> tuple[dict[str, Case], dict[str, str]]:
        """``({function: Case}, {function: why it is not timed})`` for one library."""
        if library in self.unavailable:
            return {}, dict.fromkeys(FUNCTIONS, self.unavailable[library])
        cases, missing = {"kinedyn": self._kinedyn, "mujoco": self._mujoco, "pin": self._pin}[library]()
        for name in FUNCTIONS:
            if name not in cases and name not in missing:
                missing[name] = f"{library} has no counterpart"
        return cases, missing

    def _jacobian_target(self) -> tuple[str, int]:
        """("site", the last site) — an end effector or a foot sole in the bench models — or,
        in a model without sites, ("body", the last body)."""
        if self.m.nsite:
            return "site", self.m.nsite - 1
        return "body", self.m.nbody - 1

    def _kinedyn(self):
        m, d, qacc, out = self.m, self.d, self.qacc, np.zeros(self.nv)
        # the out-arguments MuJoCo's calls take below: the same work on both sides (no allocation)
        dense = np.zeros((self.nv, self.nv))
        jacp, jacr = np.zeros((3, self.nv)), np.zeros((3, self.nv))
        kind, target = self._jacobian_target()
        jacobian = kd.jac_site if kind == "site" else kd.jac_body

        def set_qacc() -> None:
            d.qacc[:] = qacc

        def positions() -> None:
            kd.kinematics(m, d)
            kd.com_pos(m, d)

        def rne(flg_acc: bool) -> Callable[[], object]:
            def call() -> None:
                kd.kinematics(m, d)
                kd.com_pos(m, d)
                kd.com_vel(m, d)
                kd.rne(m, d, flg_acc, out=out)
            return call

        def full_m() -> None:
            kd.kinematics(m, d)
            kd.com_pos(m, d)
            kd.crb(m, d)
            kd.full_m(m, d, out=dense)

        cases = {
            "kinematics": Case(lambda: kd.kinematics(m, d)),
            "forward": Case(lambda: kd.forward(m, d)),
            "inverse": Case(lambda: kd.inverse(m, d), set_qacc),
            # one public call, as a user computes C(q, v): the same stages as MuJoCo's four calls
            "rne": Case(lambda: kd.bias_forces(m, d)),
            "rne_acc": Case(rne(True), set_qacc),
            "full_m": Case(full_m),
            "jac_site": Case(lambda: jacobian(m, d, target, jacp, jacr), positions),
            "step": Case(lambda: kd.step(m, d), check=lambda: None if np.isfinite(d.qpos).all()
                         else "kinedyn's state went non-finite"),
        }
        missing = {}
        rollout = getattr(optional_module("kinedyn.tools.batch"), "rollout", None)
        if rollout is None:
            missing["rollout"] = "kinedyn.tools.batch.rollout is not available yet"
        else:
            cases["rollout"] = self._kinedyn_rollout(rollout)
        return cases, missing

    def _rollout_inputs(self):
        """Initial states (nbatch, 1 + nq + nv + na) as MuJoCo's mjSTATE_FULLPHYSICS lays them out
        for these models (time, qpos, qvel, act), and controls (nbatch, nstep, nu)."""
        size, rows = self.rollout, []
        if self.contacts:
            # the standing state with a small random velocity each, and small random controls
            # (a tenth of the random ones): every trajectory keeps its feet on the floor
            time_, qpos, qvel, act = self.standing
            for _ in range(size.nbatch):
                rows.append(np.concatenate([[time_], qpos, qvel + self.rng.normal(scale=0.01, size=self.nv),
                                            act]))
            scale = 0.1
        else:
            for _ in range(size.nbatch):
                qpos, qvel, _, _, _ = self.random_state()
                rows.append(np.concatenate([[0.0], qpos, qvel, np.zeros(self.na)]))
            scale = 1.0
        controls = np.zeros((size.nbatch, size.nstep, self.nu))
        for trajectory in controls:
            for row in trajectory:
                row[:] = scale * self.random_state()[3]
        return np.array(rows), controls

    def _kinedyn_rollout(self, rollout) -> Case:
        size, m = self.rollout, self.m
        initial, control = self._rollout_inputs()
        return Case(lambda: rollout(m, initial, control, size.nstep, nthread=size.nthread),
                    work=size.nbatch * size.nstep, warmup=1)

    def _mujoco(self):
        mj, mjm, mjd, qacc = self.mujoco, self.mjm, self.mjd, self.qacc
        out, dense = np.zeros(self.nv), np.zeros((self.nv, self.nv))
        jacp, jacr = np.zeros((3, self.nv)), np.zeros((3, self.nv))
        kind, target = self._jacobian_target()
        jacobian = mj.mj_jacSite if kind == "site" else mj.mj_jacBody

        def set_qacc() -> None:
            mjd.qacc[:] = qacc

        def positions() -> None:
            mj.mj_kinematics(mjm, mjd)
            mj.mj_comPos(mjm, mjd)

        def rne(flg_acc: int) -> Callable[[], object]:
            def call() -> None:
                mj.mj_kinematics(mjm, mjd)
                mj.mj_comPos(mjm, mjd)
                mj.mj_comVel(mjm, mjd)
                mj.mj_rne(mjm, mjd, flg_acc, out)
            return call

        def full_m() -> None:
            mj.mj_kinematics(mjm, mjd)
            mj.mj_comPos(mjm, mjd)
            mj.mj_makeM(mjm, mjd)
            mj.mj_fullM(mjm, mjd, dense)

        bad_qacc = mj.mjtWarning.mjWARN_BADQACC

        def diverged() -> str | None:
            return "MuJoCo reset a diverged state (mjWARN_BADQACC)" if mjd.warning[bad_qacc].number else None

        cases = {
            "kinematics": Case(lambda: mj.mj_kinematics(mjm, mjd)),
            "forward": Case(lambda: mj.mj_forward(mjm, mjd)),
            "inverse": Case(lambda: mj.mj_inverse(mjm, mjd), set_qacc),
            "rne": Case(rne(0)),
            "rne_acc": Case(rne(1), set_qacc),
            "full_m": Case(full_m),
            "jac_site": Case(lambda: jacobian(mjm, mjd, jacp, jacr, target), positions),
            "step": Case(lambda: mj.mj_step(mjm, mjd), check=diverged),
        }
        missing = {}
        try:
            from mujoco import rollout as mj_rollout
        except ImportError as err:
            missing["rollout"] = f"mujoco.rollout does not import: {err}"
        else:
            cases["rollout"] = self._mujoco_rollout(mj_rollout)
        return cases, missing

    def _mujoco_rollout(self, mj_rollout) -> Case:
        mj, mjm, size = self.mujoco, self.mjm, self.rollout
        initial, control = self._rollout_inputs()
        full = mj.mjtState.mjSTATE_FULLPHYSICS
        if mj.mj_stateSize(mjm, full) != initial.shape[1]:
            raise ValueError("mjSTATE_FULLPHYSICS is not (time, qpos, qvel, act) for this model")
        # one MjData per thread: MuJoCo 4.0's rollout runs len(data) threads; the pool persists
        # across calls so that thread start-up is not timed (a kinedyn pool persists too)
        datas = [mj.MjData(mjm) for _ in range(size.nthread)]
        return Case(lambda: mj_rollout.rollout(mjm, datas, initial, control, nstep=size.nstep,
                                               persistent_pool=size.nthread > 1),
                    work=size.nbatch * size.nstep, warmup=1)

    def _pin(self):
        pin, pm, pd = self.pin, self.pm, self.pd
        q, v, a, tau = self.pin_q, self.pin_v, self.pin_a, self.pin_tau
        cases = {
            "kinematics": Case(lambda: pin.forwardKinematics(pm, pd, q)),
            "forward": Case(lambda: pin.aba(pm, pd, q, v, tau)),
            "inverse": Case(lambda: pin.rnea(pm, pd, q, v, a)),
            "rne": Case(lambda: pin.nonLinearEffects(pm, pd, q, v)),
            "rne_acc": Case(lambda: pin.rnea(pm, pd, q, v, a)),
            "full_m": Case(lambda: pin.crba(pm, pd, q)),
        }
        return cases, {}


# ================================================================ timing


@dataclass
class Timing:
    samples_us: list[float]   # µs per unit of work, one per repeat
    calls: int                # calls per repeat

    @property
    def min_us(self) -> float:
        return min(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)


def calls_per_repeat(case: Case, target_ns: int) -> int:
    """How many back-to-back calls last about ``target_ns``."""
    number = 1
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(number):
            case.call()
        elapsed = time.perf_counter_ns() - t0
        if elapsed >= target_ns // 10 or number >= 1_000_000:
            break
        number *= 10
    return max(1, min(1_000_000, round(number * target_ns / max(elapsed, 1))))


def time_interleaved(cases: dict[str, Case], randomise: Callable[[], None], repeat: int,
                     target_ns: int) -> tuple[dict[str, Timing], dict[str, str]]:
    """Time every case, the libraries taking turns inside each repeat.

    Each repeat draws one fresh state (``randomise``), then for each library (in an order
    that rotates between repeats) runs its ``prepare`` and times its calls, so a change in
    machine load hits every library alike. Warm-up calls first keep JIT compilation and
    first-touch costs out. Returns ``({library: Timing}, {library: problem})``.
    """
    problems: dict[str, str] = {}
    numbers: dict[str, int] = {}
    live = dict(cases)
    randomise()
    for lib, case in list(live.items()):
        try:
            for _ in range(case.warmup):
                if case.prepare:
                    case.prepare()
                case.call()
            numbers[lib] = calls_per_repeat(case, target_ns) if case.work == 1 else 1
        except Exception as err:  # an unfinished stage or an incompatible peer: say why, time the rest
            problems[lib] = f"{type(err).__name__}: {_one_line(str(err))}"
            del live[lib]
        randomise()

    samples: dict[str, list[float]] = {lib: [] for lib in live}
    order = list(live)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NonFiniteStateWarning)
        for r in range(repeat):
            randomise()
            for lib in order[r % len(order):] + order[:r % len(order)] if order else []:
                case, number = live[lib], numbers[lib]
                if case.prepare:
                    case.prepare()
                t0 = time.perf_counter_ns()
                for _ in range(number):
                    case.call()
                elapsed = time.perf_counter_ns() - t0
                samples[lib].append(elapsed / number / case.work / 1e3)
                problem = case.check() if case.check else None
                if problem:
                    problems[lib] = problem
    if any(issubclass(w.category, NonFiniteStateWarning) for w in caught) and "kinedyn" in live:
        problems["kinedyn"] = "kinedyn reset a non-finite state during the timing"
    return {lib: Timing(samples[lib], numbers[lib]) for lib in live}, problems


# ================================================================ machine


def machine() -> dict:
    """CPU model, core counts and platform of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable, "platform": platform.platform()}


def versions() -> dict:
    """Versions of Python and of every library that shapes the numbers (None: not installed)."""
    out = {"python": platform.python_version()}
    for label, dist in (("kinedyn", "kinedyn"), ("numpy", "numpy"), ("numba", "numba"),
                        ("mujoco", "mujoco"), ("pin", "pin")):
        try:
            out[label] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[label] = None
    out["kinedyn"] = kd.__version__  # the imported one, which may be a source tree
    return out


# ================================================================ the run


@dataclass
class Settings:
    models: Sequence[str] = DEFAULT_MODELS
    functions: Sequence[str] = FUNCTIONS
    repeat: int = 21
    target_ms: float = 2.0
    seed: int = 0
    rollout: RolloutSize = field(default_factory=RolloutSize)


def benchmark(settings: Settings, progress: Callable[[str], None] | None = None) -> dict:
    """Run the benchmark and return every number: ``{"machine", "versions", "settings",
    "models", "results", "notes"}`` (the JSON that ``--json`` writes).

    Raises KeyError for an unknown model name (with the closest names).
    """
    sources, notes = [], []
    for name in settings.models:
        source, note = model_source(name)
        if note:
            notes.append(note)
        if source is not None and source.name not in [s.name for s in sources]:
            sources.append(source)

    target_ns = int(settings.target_ms * 1e6)
    results, model_info = [], {}
    for source in sources:
        if progress:
            progress(source.name)
        subject = Subject(source, seed=settings.seed, rollout=settings.rollout)
        model_info[source.name] = {"origin": source.origin, "nq": subject.nq, "nv": subject.nv,
                                   "nu": subject.nu, "pin_mass_deviation":
                                   getattr(subject, "pin_mass_deviation", None)}
        notes.extend(subject.notes)
        functions = [fn for fn in settings.functions if not subject.contacts or fn in FLOOR_FUNCTIONS]
        if subject.contacts and len(functions) < len(settings.functions):
            notes.append(f"{source.name} is a contact model: only its {', '.join(FLOOR_FUNCTIONS)} rows "
                         "are timed")
        if "jac_site" in functions and not subject.m.nsite:
            notes.append(f"{source.name} has no site: its jac_site row times jac_body / mj_jacBody "
                         "of the last body")
        per_lib = {lib: subject.cases(lib) for lib in LIBRARIES}
        for fn in functions:
            cases = {lib: per_lib[lib][0][fn] for lib in LIBRARIES if fn in per_lib[lib][0]}
            timings, problems = time_interleaved(cases, subject.randomise, settings.repeat, target_ns)
            row = {"model": source.name, "nq": subject.nq, "nv": subject.nv, "function": fn,
                   "unit": "µs per step" if fn == "rollout" else "µs per call"}
            for lib in LIBRARIES:
                t = timings.get(lib)
                row[lib] = None if t is None else {
                    "min_us": t.min_us, "median_us": t.median_us, "calls_per_repeat": t.calls,
                    "samples_us": t.samples_us}
                why = problems.get(lib) or per_lib[lib][1].get(fn)
                row[f"{lib}_note"] = why
                if problems.get(lib):
                    notes.append(f"{lib} {fn} on {source.name}: {problems[lib]}")
            for peer, key in (("mujoco", "kd_over_mj"), ("pin", "kd_over_pin")):
                ours, theirs = row["kinedyn"], row[peer]
                row[key] = ours["min_us"] / theirs["min_us"] if ours and theirs else None
            results.append(row)
    for lib in ("mujoco", "pin"):
        if optional_module({"pin": "pinocchio"}.get(lib, lib)) is None:
            notes.append(f"{lib} is not installed, its column is empty: {INSTALL_HINT}")
    if "rollout" in settings.functions and optional_module("kinedyn.tools.batch") is None:
        notes.append("kinedyn.tools.batch.rollout is not available yet: the rollout row has MuJoCo only")
    return {"machine": machine(), "versions": versions(),
            "settings": {"repeat": settings.repeat, "target_ms": settings.target_ms, "seed": settings.seed,
                         "rollout": vars(settings.rollout)},
            "models": model_info, "results": results, "notes": list(dict.fromkeys(notes))}


# ================================================================ report


def _one_line(message: str, limit: int = 300) -> str:
    """An exception message as one plain line (Numba's are multi-line and coloured)."""
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _us(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def _cell(timing: dict | None, why: str | None = None) -> str:
    if timing is not None:
        return f"{_us(timing['min_us'])} / {_us(timing['median_us'])}"
    if why and why.startswith("not comparable"):
        return "not comparable"
    return "not available" if why and "not available" in why else "n/a"


def print_report(report: dict, file=None) -> None:
    """The machine, a rich table of the results and the notes."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file or sys.stdout, width=None if (file or sys.stdout).isatty() else 150,
                      highlight=False, markup=False)  # notes hold "[bench]"
    mach, ver, st = report["machine"], report["versions"], report["settings"]
    console.print(f"machine:  {mach['cpu']}, {mach['cores']} cores ({mach['usable_cores']} usable), "
                  f"{mach['platform']}")
    console.print("versions: " + ", ".join(f"{k} {v or 'not installed'}" for k, v in ver.items()))
    roll = st["rollout"]
    console.print(f"µs per call, min / median of {st['repeat']} repeats of ~{st['target_ms']:g} ms, "
                  "libraries interleaved, a fresh random state per repeat; kd/mj and kd/pin: ratio of "
                  f"minima (> 1: kinedyn slower); rollout: {roll['nbatch']} states x {roll['nstep']} "
                  f"steps on {roll['nthread']} threads, µs per step; contacts disabled, and constraints "
                  "too except in the -limits models; -floor models: contacts on, every repeat from "
                  "one standing state")
    table = Table(show_lines=False)
    for title, justify in (("model", "left"), ("nv", "right"), ("function", "left"),
                           ("kinedyn", "right"), ("mujoco", "right"), ("pin", "right"),
                           ("kd/mj", "right"), ("kd/pin", "right")):
        table.add_column(title, justify=justify)
    last = None
    for r in report["results"]:
        first = r["model"] != last
        if first and last is not None:
            table.add_section()
        last = r["model"]
        pin_cell = _cell(r["pin"], r["pin_note"])
        deviation = report["models"][r["model"]].get("pin_mass_deviation")
        if r["pin"] and deviation is not None and deviation > 1e-9:
            pin_cell += " †"
        table.add_row(r["model"] if first else "", str(r["nv"]) if first else "", r["function"],
                      _cell(r["kinedyn"], r["kinedyn_note"]), _cell(r["mujoco"], r["mujoco_note"]), pin_cell,
                      f"{r['kd_over_mj']:.2f}" if r["kd_over_mj"] else "",
                      f"{r['kd_over_pin']:.2f}" if r["kd_over_pin"] else "")
    console.print(table)
    for r in report["results"]:
        if r["function"] == "rollout":
            rates = [f"{lib} {1e6 / r[lib]['min_us']:,.0f} steps/s" for lib in LIBRARIES if r[lib]]
            if rates:
                console.print(f"rollout {r['model']}: " + ", ".join(rates))
    console.print("what each row times (kinedyn | MuJoCo | Pinocchio):")
    for fn in dict.fromkeys(r["function"] for r in report["results"]):
        console.print(f"  {fn:<10} " + " | ".join(WHAT_IS_TIMED[fn]))
    if any(r["pin"] and (report["models"][r["model"]].get("pin_mass_deviation") or 0) > 1e-9
           for r in report["results"]):
        console.print("  †: Pinocchio's MJCF parser gave other inertias for this model (see its note)")
    for note in report["notes"]:
        console.print(f"note: {_one_line(note, 400)}")


# ================================================================ command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kinedyn bench`` (and ``python -m bench.run``)."""
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), metavar="MODEL",
                        help=f"{', '.join(DEFAULT_MODELS)}, a bundled model ({', '.join(bundled.names())}) "
                             "or an MJCF path (default: %(default)s)")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS, metavar="FN",
                        help=f"subset of {', '.join(FUNCTIONS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=None, metavar="K",
                        help="repeats per number (default: 21; 5 with --quick)")
    parser.add_argument("--target-ms", type=float, default=None, metavar="T",
                        help="wall time of one repeat per library in ms (default: 2; 1 with --quick); "
                             "short windows are less often preempted on a loaded machine")
    parser.add_argument("--quick", action="store_true",
                        help="fewer, shorter repeats and a smaller rollout: a rough table in seconds")
    parser.add_argument("--threads", type=int, default=2, metavar="N",
                        help="threads of the batch rollout, in both libraries (default: 2)")
    parser.add_argument("--batch", type=int, default=None, metavar="B",
                        help="rollout states (default: 64; 8 with --quick)")
    parser.add_argument("--nstep", type=int, default=None, metavar="S",
                        help="rollout steps per state (default: 100; 20 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="random state seed (default: 0)")
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from parsed options; ValueError names a bad option."""
    def pick(value, full, quick):
        return value if value is not None else (quick if args.quick else full)

    repeat = pick(args.repeat, 21, 5)
    target_ms = pick(args.target_ms, 2.0, 1.0)
    rollout = RolloutSize(pick(args.batch, 64, 8), pick(args.nstep, 100, 20), args.threads)
    for option, value in (("--repeat", repeat), ("--threads", rollout.nthread), ("--batch", rollout.nbatch),
                          ("--nstep", rollout.nstep)):
        if value < 1:
            raise ValueError(f"{option} must be >= 1, got {value}")
    if not target_ms > 0:
        raise ValueError(f"--target-ms must be positive, got {target_ms}")
    return Settings(models=args.models, functions=args.functions, repeat=repeat, target_ms=target_ms,
                    seed=args.seed, rollout=rollout)


def run(args: argparse.Namespace) -> int:
    """``kinedyn bench``: time, print the table, write JSON; 0 on success, 2 on bad input."""
    try:
        settings = settings_from(args)
        report = benchmark(settings, progress=lambda name: print(f"bench: {name} ...", file=sys.stderr,
                                                                 flush=True))
    except (KeyError, ValueError) as err:
        print(f"kinedyn bench: error: {err.args[0] if isinstance(err, KeyError) else err}", file=sys.stderr)
        return 2
    finally:
        mj_rollout = optional_module("mujoco.rollout")
        if mj_rollout is not None and hasattr(mj_rollout, "shutdown_persistent_pool"):
            mj_rollout.shutdown_persistent_pool()
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"bench: wrote {args.json}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
