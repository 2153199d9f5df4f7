"""Trajectory inverse dynamics: joint torques (and controls) along sampled joint positions.

From qpos sampled at a fixed rate we take velocities and accelerations by differences
on the joint manifold (hinge and slide coordinates are plain numbers, ball and free
rotations are quaternions differentiated with ``differentiate_pos``), then run
``inverse`` (mj_inverse) at every sample. Three ways to differentiate, with
h the sample spacing and d_k = (q_k (-) q_{k-1}) / h the backward velocity:

* ``"fd"`` (default), consistent with MuJoCo's semi-implicit Euler step
  (qvel_{k+1} = qvel_k + h qacc_k, q_{k+1} = q_k (+) h qvel_{k+1}):
  qvel_k = d_k, qacc_k = (d_{k+1} - d_k) / h. A trajectory simulated with ``step``
  (Euler, same h) gives back exactly the forces that drove it, provided no joint
  damping is integrated implicitly (see docs/trajectory.md).
* ``"central"``, second order: qvel_k = (d_k + d_{k+1}) / 2, qacc_k as in "fd".
  Both lose the first and the last sample (no neighbour there).
* ``"spline"``: a quintic spline per coordinate through (``smoothing=0``) or near
  (``smoothing>0``, FITPACK's smoothing factor) the samples, differentiated
  analytically; quaternions are splined componentwise (signs made continuous) and
  renormalised, with the body-frame angular velocity w = 2 Im(conj(q) q') / |q|^2.
  Keeps every sample; near the ends the spline's free end conditions make the
  derivatives less accurate than inside.

Files: CSV with a header, a ``time`` column and one column per qpos coordinate named
by joint (hinge/slide ``elbow``; ball/free ``root[0]`` ... ``root[6]``), or NPZ with
arrays ``time`` and ``qpos``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kinedyn.engine.actuation import next_activation
from kinedyn.engine.checks import check_model, float_array
from kinedyn.engine.data import Data
from kinedyn.engine.forward import fwd_actuation
from kinedyn.engine.inverse import check_discrete_inverse, inverse
from kinedyn.engine.support import differentiate_pos, jac_site
from kinedyn.engine.types import DSBL_CLAMPCTRL, DSBL_CONTACT, DYN_MUSCLE, JNT_BALL, JNT_FREE, EnableBit
from kinedyn.errors import close_names
from kinedyn.tools.inverse_actuation import (
    applied_generalized_force,
    ctrl_limits,
    delayed_actuators,
    evaluate_actuation,
    last_act,
    solve_actuation,
)
from kinedyn.viewer import plotting
from kinedyn.viewer.live import register_trajectory_writer

METHODS = ("fd", "central", "spline")
SPLINE_DEGREE = 5
# relative spread of the sample spacing accepted as "uniform"
UNIFORM_RTOL = 1e-6


# ---- names ----------------------------------------------------------------------------------------


def _joint_name(m, j: int) -> str:
    name = m.names["jnt"][j] if j < len(m.names.get("jnt", [])) else ""
    return name or f"joint{j}"


def _coordinate_names(m, per_joint) -> list[str]:
    check_model(m, "trajectory names")
    names = []
    for j in range(m.njnt):
        n = per_joint(int(m.jnt_type[j]))
        base = _joint_name(m, j)
        names += [base] if n == 1 else [f"{base}[{k}]" for k in range(n)]
    return names


def qpos_names(m) -> list[str]:
    """Column names of the qpos coordinates: ``elbow`` for hinge/slide, ``root[0]``..``root[6]``
    for free joints, ``ball[0]``..``ball[3]`` for ball joints (unnamed joints: ``joint<id>``)."""
    return _coordinate_names(m, lambda t: 7 if t == JNT_FREE else 4 if t == JNT_BALL else 1)


def dof_names(m) -> list[str]:
    """Names of the dofs, like :func:`qpos_names` with 6 (free) and 3 (ball) entries per joint."""
    return _coordinate_names(m, lambda t: 6 if t == JNT_FREE else 3 if t == JNT_BALL else 1)


def actuator_names(m) -> list[str]:
    check_model(m, "trajectory.actuator_names")
    return [(m.names["actuator"][i] if i < len(m.names.get("actuator", [])) else "") or f"actuator{i}"
            for i in range(m.nactuator)]


def control_names(m) -> list[str]:
    """One name per control (``ctrl``, nu): :meth:`kinedyn.Model.control_names`."""
    check_model(m, "trajectory.control_names")
    return m.control_names()


# ---- files ----------------------------------------------------------------------------------------


def load(path, m=None) -> tuple[np.ndarray, np.ndarray]:
    """``(t, qpos)`` from a CSV (``time`` column + qpos columns) or an NPZ (``time``, ``qpos``).

    With a model ``m``, CSV columns are matched to its qpos coordinates by name
    (:func:`qpos_names`; any column order; unknown or missing names raise KeyError) and
    NPZ widths are checked. Without a model the columns are returned in file order.
    """
    if m is not None:
        check_model(m, "trajectory.load")
    path = Path(path)
    if path.suffix.lower() == ".npz":
        with np.load(path) as z:
            missing = [k for k in ("time", "qpos") if k not in z.files]
            if missing:
                raise KeyError(f"{path}: no array named {', '.join(missing)} (has {', '.join(z.files)})")
            t, qpos = np.asarray(z["time"], dtype=np.float64), np.asarray(z["qpos"], dtype=np.float64)
        if qpos.ndim == 1:
            qpos = qpos[:, None]
        if m is not None and qpos.shape[1] != m.nq:
            raise ValueError(f"{path}: qpos has {qpos.shape[1]} columns, the model has nq = {m.nq}")
        return t, qpos
    header, table = read_csv(path)
    t = table[:, header.index("time")]
    if m is None:
        return t, table[:, [i for i, h in enumerate(header) if h != "time"]]
    return t, columns_by_name(path, header, table, qpos_names(m), "qpos coordinate")


def read_csv(path) -> tuple[list[str], np.ndarray]:
    """``(header, values (rows, columns))`` of a CSV of numbers under one header row that has a
    ``time`` column: what :func:`save_csv` and ``kinedyn simulate`` write and what :func:`load`
    and ``kinedyn simulate --ctrl`` read. Blank lines are skipped.

    Raises ValueError naming the file (and the line) for an empty file, a row whose length is
    not the header's, or a value that is not a number; KeyError when no column is ``time``.
    """
    with open(path, newline="") as f:
        rows = [(line, row) for line, row in enumerate(csv.reader(f), start=1) if any(c.strip() for c in row)]
    if not rows:
        raise ValueError(f"{path}: empty file, expected a header line with a 'time' column")
    header = [c.strip() for c in rows[0][1]]
    if "time" not in header:
        raise KeyError(f"{path}: no 'time' column in the header {header}")
    values = np.empty((len(rows) - 1, len(header)))
    for k, (line, row) in enumerate(rows[1:]):
        if len(row) != len(header):
            raise ValueError(f"{path}, line {line}: {len(row)} values, the header has {len(header)}")
        try:
            values[k] = [float(c) for c in row]
        except ValueError:
            raise ValueError(f"{path}, line {line}: not a number in {row}") from None
    return header, values


def columns_by_name(path, header: list[str], values: np.ndarray, names: list[str], what: str) -> np.ndarray:
    """The columns of ``values`` in the order of ``names``, matched to ``header`` by name (any
    order; the ``time`` column is ignored). KeyError naming ``path`` for a column that is not one
    of ``names`` (with the close names) and for a name without a column; ``what`` says what a
    name is ("qpos coordinate", "actuator")."""
    unknown = [c for c in header if c != "time" and c not in names]
    if unknown:
        listed = ", ".join(f"'{c}'{close_names(c, names)}" for c in unknown)
        raise KeyError(f"{path}: column(s) that are no {what} of the model: {listed}")
    missing = [n for n in names if n not in header]
    if missing:
        raise KeyError(f"{path}: no column for {what}(s) {', '.join(missing)}")
    return values[:, [header.index(n) for n in names]]


def save_csv(path, t, qpos, m) -> None:
    """Write ``t`` and ``qpos`` as the CSV that :func:`load` reads (full float64 precision)."""
    check_model(m, "trajectory.save_csv")
    t, qpos = _check_samples(m, t, qpos, uniform=False)
    _write_csv(path, ["time", *qpos_names(m)], [t[:, None], qpos])


# the live viewer's recordings are saved as this CSV too (the viewer layer cannot import tools)
register_trajectory_writer(".csv", save_csv)


def _write_csv(path, header: list[str], blocks: list[np.ndarray]) -> None:
    np.savetxt(path, np.hstack(blocks), delimiter=",", header=",".join(header), comments="", fmt="%.17g")


# ---- validation -----------------------------------------------------------------------------------


def _finite(name: str, arr: np.ndarray) -> None:
    if not np.all(np.isfinite(arr)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name}{list(idx)} is {arr[idx]}; {name} must be finite")


def _check_samples(m, t, qpos, uniform: bool, min_samples: int = 1):
    t = float_array(t, "t")
    qpos = float_array(qpos, "qpos")
    if t.ndim != 1:
        raise ValueError(f"t must be one-dimensional (T,), got shape {t.shape}")
    if qpos.shape != (t.size, m.nq):
        raise ValueError(f"qpos must have shape (T, nq) = ({t.size}, {m.nq}) to match t, got {qpos.shape}")
    if t.size < min_samples:
        raise ValueError(f"t: need at least {min_samples} samples, got {t.size}")
    _finite("t", t)
    _finite("qpos", qpos)
    steps = np.diff(t)
    if steps.size and not np.all(steps > 0):
        k = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(f"t must increase strictly: t[{k}] = {t[k]!r}, t[{k + 1}] = {t[k + 1]!r}")
    if uniform and steps.size:
        h = (t[-1] - t[0]) / steps.size
        worst = int(np.argmax(np.abs(steps - h)))
        if abs(steps[worst] - h) > UNIFORM_RTOL * h:
            raise ValueError(f"t is not uniformly sampled: step {worst} is {steps[worst]!r}, the mean step "
                             f"is {h!r} (method 'fd' and 'central' need a fixed rate; 'spline' does not)")
    return t, qpos


def _per_sample(value, shape: tuple, count: int, name: str) -> np.ndarray:
    """A (count, *shape) array from None, one constant value or one value per sample."""
    if value is None:
        return np.zeros((count, *shape))
    arr = float_array(value, name)
    if arr.shape == shape:
        arr = np.broadcast_to(arr, (count, *shape))
    elif arr.shape != (count, *shape):
        raise ValueError(f"{name} must have shape {shape} (constant) or {(count, *shape)} (per sample), "
                         f"got {arr.shape}")
    _finite(name, arr)
    return arr


# ---- derivatives ----------------------------------------------------------------------------------


def _backward_velocities(m, qpos: np.ndarray, h: float) -> np.ndarray:
    """d_k = (q_k (-) q_{k-1}) / h for k = 1..T-1, as rows 0..T-2."""
    out = np.empty((qpos.shape[0] - 1, m.nv))
    for k in range(1, qpos.shape[0]):
        differentiate_pos(m, qpos[k - 1], qpos[k], h, out=out[k - 1])
    return out


def differences(m, qpos: np.ndarray, h: float, method: str = "fd"):
    """(index, qvel, qacc) by "fd" or "central" differences; index: the samples kept (1..T-2)."""
    check_model(m, "trajectory.differences")
    d = _backward_velocities(m, qpos, h)
    qacc = (d[1:] - d[:-1]) / h
    qvel = d[:-1] if method == "fd" else 0.5 * (d[:-1] + d[1:])
    return np.arange(1, qpos.shape[0] - 1), qvel, qacc


def _quat_rows(m) -> list[int]:
    """qpos addresses of every quaternion (ball joints, rotation part of free joints)."""
    rows = []
    for j in range(m.njnt):
        t = int(m.jnt_type[j])
        if t == JNT_FREE:
            rows.append(int(m.jnt_qposadr[j]) + 3)
        elif t == JNT_BALL:
            rows.append(int(m.jnt_qposadr[j]))
    return rows


def _quat_to_dofs(m) -> dict[int, int]:
    """qpos address of each quaternion -> dof address of its angular velocity."""
    out = {}
    for j in range(m.njnt):
        t = int(m.jnt_type[j])
        if t == JNT_FREE:
            out[int(m.jnt_qposadr[j]) + 3] = int(m.jnt_dofadr[j]) + 3
        elif t == JNT_BALL:
            out[int(m.jnt_qposadr[j])] = int(m.jnt_dofadr[j])
    return out


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rowwise Hamilton product of (T, 4) arrays (w, x, y, z)."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=1)


def spline_derivatives(m, t: np.ndarray, qpos: np.ndarray, smoothing: float = 0.0):
    """(qpos, qvel, qacc) at the sample times from a quintic spline per qpos coordinate.

    ``smoothing`` is FITPACK's smoothing factor s per coordinate (0 interpolates). Unit
    quaternions come back normalised; their rates become body-frame angular velocity
    w = 2 Im(conj(q) q') / |q|^2 and acceleration w' = 2 Im(conj(q) q'') / |q|^2 - w 2 (q.q') / |q|^2.
    """
    from scipy.interpolate import splev, splrep  # lazy: scipy only for this method

    check_model(m, "trajectory.spline_derivatives")
    q = qpos.copy()
    quats = _quat_rows(m)
    for a in quats:  # q and -q are the same rotation: keep the sign continuous
        block = q[:, a:a + 4]
        flip = np.cumprod(np.where(np.sum(block[1:] * block[:-1], axis=1) < 0, -1.0, 1.0))
        block[1:] *= flip[:, None]
    value, rate, accel = np.empty_like(q), np.empty_like(q), np.empty_like(q)
    for c in range(m.nq):
        tck = splrep(t, q[:, c], k=SPLINE_DEGREE, s=smoothing)
        value[:, c], rate[:, c], accel[:, c] = (splev(t, tck, der=r) for r in (0, 1, 2))
    qvel = np.empty((t.size, m.nv))
    qacc = np.empty((t.size, m.nv))
    # every qpos coordinate outside quaternions maps to the dof at the same offset of its joint
    for j in range(m.njnt):
        jt, pa, da = int(m.jnt_type[j]), int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        n = 3 if jt == JNT_FREE else 0 if jt == JNT_BALL else 1
        qvel[:, da:da + n] = rate[:, pa:pa + n]
        qacc[:, da:da + n] = accel[:, pa:pa + n]
    for a, v in _quat_to_dofs(m).items():
        s, s1, s2 = value[:, a:a + 4], rate[:, a:a + 4], accel[:, a:a + 4]
        conj = s * np.array([1.0, -1.0, -1.0, -1.0])
        norm2 = np.sum(s * s, axis=1)[:, None]
        w = 2.0 * _quat_mul(conj, s1)[:, 1:] / norm2
        qvel[:, v:v + 3] = w
        growth = 2.0 * np.sum(s * s1, axis=1)[:, None] / norm2  # d/dt log |q|^2
        qacc[:, v:v + 3] = 2.0 * _quat_mul(conj, s2)[:, 1:] / norm2 - w * growth
        value[:, a:a + 4] = s / np.sqrt(norm2)
    return value, qvel, qacc


# ---- inverse dynamics -----------------------------------------------------------------------------


@dataclass
class TrajectoryResult:
    """Inverse dynamics along a trajectory; every array has one row per kept sample.

    Attributes:
      t, qpos, qvel, qacc: (T,), (T, nq), (T, nv), (T, nv): the samples used and their derivatives.
      qfrc_inverse: (T, nv) mj_inverse's qfrc_inverse = M qacc + qfrc_bias - qfrc_passive
        - qfrc_constraint (rotor inertia ``armature`` included in M; external forces not subtracted).
      qfrc_joint: (T, nv) what the joints must supply: qfrc_inverse - qfrc_applied -
        J^T xfrc_applied (equals qfrc_inverse without external forces).
      ctrl, ctrl_residual, qfrc_actuator: (T, nu), (T,), (T, nv) with ``ctrl=True``, else None.
      contact_sites: the sites of known contacts (``contacts=``), else empty.
      contact_wrench: (T, k, 6) with ``contacts=``: what the ground must supply at each contact
        site, [force; torque about the site], world-oriented (zeros where a site is not in
        contact at that sample), else None.
      qfrc_contact: (T, nv) with ``contacts=``: those wrenches as generalised force
        (sum of J_site' wrench), else None.
      index: (T,) which input samples were kept ("fd"/"central" drop the first and last).
      method: how derivatives were taken.
    """

    t: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    qacc: np.ndarray
    qfrc_inverse: np.ndarray
    qfrc_joint: np.ndarray
    index: np.ndarray
    method: str
    dof_names: list[str] = field(repr=False)
    qpos_names: list[str] = field(repr=False)
    actuator_names: list[str] = field(repr=False)
    ctrl: np.ndarray | None = None
    ctrl_residual: np.ndarray | None = None
    qfrc_actuator: np.ndarray | None = None
    contact_sites: list[str] = field(default_factory=list, repr=False)
    contact_wrench: np.ndarray | None = None
    qfrc_contact: np.ndarray | None = None

    def _table(self):
        header = ["time", *(f"qpos:{n}" for n in self.qpos_names), *(f"qvel:{n}" for n in self.dof_names),
                  *(f"qacc:{n}" for n in self.dof_names), *(f"qfrc_inverse:{n}" for n in self.dof_names),
                  *(f"qfrc_joint:{n}" for n in self.dof_names)]
        blocks = [self.t[:, None], self.qpos, self.qvel, self.qacc, self.qfrc_inverse, self.qfrc_joint]
        if self.ctrl is not None:
            header += [*(f"ctrl:{n}" for n in self.actuator_names), "ctrl_residual"]
            blocks += [self.ctrl, self.ctrl_residual[:, None]]
        if self.contact_wrench is not None:
            parts = ("fx", "fy", "fz", "tx", "ty", "tz")
            header += [f"contact:{s}:{p}" for s in self.contact_sites for p in parts]
            blocks += [self.contact_wrench.reshape(len(self.t), -1)]
        return header, blocks

    def to_csv(self, path) -> None:
        """One row per sample: time, then qpos:, qvel:, qacc:, qfrc_inverse:, qfrc_joint: (and ctrl:)."""
        _write_csv(path, *self._table())

    def to_npz(self, path) -> None:
        """Every array under its attribute name (ctrl arrays only when computed)."""
        names = ("t", "qpos", "qvel", "qacc", "qfrc_inverse", "qfrc_joint", "index", "ctrl", "ctrl_residual",
                 "qfrc_actuator", "contact_wrench", "qfrc_contact")
        arrays = {k: getattr(self, k) for k in names if getattr(self, k) is not None}
        np.savez(path, time=self.t, dof_names=np.array(self.dof_names), **arrays)

    def plot(self, path=None):
        """Joint torques (qfrc_joint) and, with controls, ctrl against time, drawn by
        :mod:`kinedyn.viewer.plotting` like every kinedyn plot (matplotlib's Agg backend, no display needed).

        With ``path``, saves a PNG there, closes the figure and returns the path; without,
        returns the open matplotlib figure.
        """
        panels = [plotting.Panel("qfrc_joint: generalised force the joints must supply", self.qfrc_joint,
                                 self.dof_names, "N m or N")]
        if self.ctrl is not None:
            # ctrl=True solves one control per actuator (inverse actuation refuses other layouts)
            panels.append(plotting.Panel("ctrl", self.ctrl, self.actuator_names))
        fig = plotting.panels_figure(self.t, panels, title=f"inverse dynamics ({self.method})")
        return fig if path is None else plotting.save_figure(fig, path)


def inverse_dynamics(m, t, qpos, method: str = "fd", qfrc_applied=None, xfrc_applied=None, ctrl: bool = False,
                     smoothing: float = 0.0, act0=None, discrete: bool = False, contacts=None,
                     in_contact=None) -> TrajectoryResult:
    """Joint torques along sampled joint positions (see the module docstring for ``method``).

    ``qfrc_applied`` (nv,) or (T, nv) and ``xfrc_applied`` (nbody, 6) or (T, nbody, 6) are
    external forces, constant or per input sample. With ``ctrl=True`` each kept sample also
    gets controls by the bounded least squares of :mod:`kinedyn.tools.inverse_actuation`, aimed
    at ``qfrc_joint``. Stateful actuators start from ``act0`` (the activations at the first
    kept sample, default zeros) and advance with the controls found over the sample
    spacing, as a simulation would; actuators whose control only acts through the next
    activation (no ``actearly``) are planned one sample ahead: their activation at sample k
    is chosen with the other controls, and the control at k-1 is set to reach it.

    ``discrete=True`` returns the forces the integrator's step applies, with its implicit
    terms: ``inverse`` with the ``invdiscrete`` enable flag (as mj_inverse), which reads qacc
    as the step's (qvel_next - qvel) / h and converts it to the continuous-time acceleration
    first. For Euler with joint damping integrated implicitly ((M + h B) qacc = ...,
    B the diagonal of the dampers' velocity derivatives (dof_damping, its polynomial terms and
    the actuators' damping), h = m.opt.timestep) that adds h B qacc when nothing else depends
    on qacc; for implicitfast it covers its damping and actuator velocity derivatives, for
    implicit those and the velocity derivative of the bias forces (Coriolis). RK4
    has no discrete inverse (ValueError). A model whose ``m.opt.enableflags`` already has
    ``invdiscrete`` gets the discrete forces either way, since ``inverse`` follows the flag.

    Constraints (limits, friction loss, equalities, simulated contacts) are handled as
    ``inverse`` handles them: their forces at each sample's qacc are subtracted
    (qfrc_constraint), so a trajectory that presses against a limit gives the joint forces
    that produced it, not the limit's.

    **Known contacts** (``contacts=["r_sole", "l_sole"]``, site names): a floating-base robot
    cannot push its free joint by itself, so what the motion needs there must come from the
    ground. With ``contacts``, the model's own (simulated) contacts are switched off for the
    computation and, at each sample, the sites in contact (``in_contact``, (T, k) booleans per
    input sample; default: all, always) get the wrenches W of least norm with
    sum_i J_i' W_i = qfrc_joint on the free joints' dofs (J_i the site's [translational;
    rotational] Jacobian): the ground reaction that realises the motion. They are reported in
    ``contact_wrench`` and ``qfrc_contact``, and taken out of ``qfrc_joint``, which then holds
    the joint torques of the robot standing on those contacts (free-joint entries zero up to
    round-off while the contacts can supply them). The least-norm split between several
    contacts is one choice among many (the distribution of weight between two feet is not
    determined by the motion); friction limits are not imposed.
    """
    check_model(m, "trajectory.inverse_dynamics")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    t, qpos = _check_samples(m, t, qpos, uniform=method != "spline",
                             min_samples=SPLINE_DEGREE + 1 if method == "spline" else 3)
    count = t.size
    applied = _per_sample(qfrc_applied, (m.nv,), count, "qfrc_applied")
    xapplied = _per_sample(xfrc_applied, (m.nbody, 6), count, "xfrc_applied")
    if method == "spline":
        if not smoothing >= 0:
            raise ValueError(f"smoothing must be >= 0, got {smoothing}")
        index = np.arange(count)
        qpos_used, qvel, qacc = spline_derivatives(m, t, qpos, smoothing)
    else:
        h = (t[-1] - t[0]) / (count - 1)
        index, qvel, qacc = differences(m, qpos, h, method)
        qpos_used = qpos[index]

    if discrete:
        check_discrete_inverse(m, "trajectory.inverse_dynamics(discrete=True)")
    sites, active = _known_contacts(m, contacts, in_contact, count)
    if sites:
        m = m.copy()  # the known contacts replace the simulated ones (the caller's model is untouched)
        m.opt.disableflags = m.opt.disableflags | DSBL_CONTACT
    n = index.size
    d = Data(m)
    wrench = np.zeros((n, len(sites), 6)) if sites else None
    qfrc_contact = np.zeros((n, m.nv)) if sites else None
    qfrc_inverse = np.empty((n, m.nv))
    qfrc_joint = np.empty((n, m.nv))
    ctrls = np.empty((n, m.nu)) if ctrl else None
    residual = np.empty(n) if ctrl else None
    qfrc_actuator = np.empty((n, m.nv)) if ctrl else None
    if ctrl:
        d.act[:] = 0.0 if act0 is None else _per_sample(act0, (m.na,), 1, "act0")[0]
        delayed = delayed_actuators(m)
    prev_act, prev_step = None, 0.0
    for row, k in enumerate(index):
        d.qpos[:] = qpos_used[row]
        d.qvel[:] = qvel[row]
        d.qacc[:] = qacc[row]
        d.qfrc_applied[:] = applied[k]
        d.xfrc_applied[:] = xapplied[k]
        _inverse(m, d, discrete)
        qfrc_inverse[row] = d.qfrc_inverse
        qfrc_joint[row] = d.qfrc_inverse - applied_generalized_force(m, d)
        if sites:
            wrench[row], qfrc_contact[row] = _ground_wrenches(m, d, sites, active[k], qfrc_joint[row])
            qfrc_joint[row] -= qfrc_contact[row]
        if ctrl:
            # delayed actuators: from the second sample on, choose their activation here and
            # the previous sample's control that reaches it
            act_range = None
            if delayed.any() and prev_act is not None:
                act_range = _reachable_activations(m, d, prev_act, prev_step)
            scale = max(np.abs(d.qfrc_inverse).max(initial=0.0), np.abs(d.qfrc_bias).max(initial=0.0),
                        np.abs(qfrc_inverse[row] - qfrc_joint[row]).max(initial=0.0),
                        np.abs(d.qfrc_constraint).max(initial=0.0))
            sol = solve_actuation(m, d, qfrc_joint[row], scale, act_range)
            if act_range is not None:
                reach = _controls_reaching(m, d, prev_act, sol.act, prev_step)
                ctrls[row - 1, delayed] = reach[delayed]
            d.act[:] = sol.act
            ctrls[row], residual[row], qfrc_actuator[row] = sol.ctrl, sol.residual, sol.qfrc_actuator
            if m.na and row + 1 < n:
                prev_act, prev_step = d.act.copy(), t[index[row + 1]] - t[k]
                _advance_activation(m, d, sol.ctrl, prev_step)
    return TrajectoryResult(t=t[index], qpos=qpos_used, qvel=qvel, qacc=qacc, qfrc_inverse=qfrc_inverse,
                            qfrc_joint=qfrc_joint, index=index, method=method, dof_names=dof_names(m),
                            qpos_names=qpos_names(m), actuator_names=actuator_names(m), ctrl=ctrls,
                            ctrl_residual=residual, qfrc_actuator=qfrc_actuator,
                            contact_sites=[m.names["site"][i] for i in sites], contact_wrench=wrench,
                            qfrc_contact=qfrc_contact)


def _known_contacts(m, contacts, in_contact, count: int) -> tuple[list[int], np.ndarray]:
    """Site ids of the known contacts and the (count, k) mask of when each is in contact."""
    if contacts is None:
        if in_contact is not None:
            raise ValueError("in_contact needs contacts= (the site names it refers to)")
        return [], np.zeros((count, 0), dtype=bool)
    if isinstance(contacts, str):
        contacts = [contacts]
    sites = [m.site(name).id if isinstance(name, str) else int(name) for name in contacts]
    if not sites:
        raise ValueError("contacts= needs at least one site name")
    if not np.any(m.jnt_type == JNT_FREE):
        raise ValueError("contacts= is for floating-base models (a free joint): there is nothing for "
                         "the ground to supply otherwise")
    if in_contact is None:
        return sites, np.ones((count, len(sites)), dtype=bool)
    mask = np.asarray(in_contact)
    if mask.dtype != bool or mask.shape != (count, len(sites)):
        raise ValueError(f"in_contact must be booleans of shape {(count, len(sites))} (samples, contacts), "
                         f"got {mask.dtype} {mask.shape}")
    return sites, mask


def _ground_wrenches(m, d, sites: list[int], active: np.ndarray, qfrc_joint: np.ndarray):
    """The least-norm wrenches at the active ``sites`` (world [force; torque about the site])
    whose generalised force equals ``qfrc_joint`` on the free joints' dofs, and that
    generalised force over all dofs; zeros where no site is active. Needs the position stage."""
    free = np.concatenate([np.arange(m.jnt_dofadr[j], m.jnt_dofadr[j] + 6)
                           for j in np.flatnonzero(m.jnt_type == JNT_FREE)])
    wrench = np.zeros((len(sites), 6))
    qfrc = np.zeros(m.nv)
    on = np.flatnonzero(active)
    if on.size == 0:
        return wrench, qfrc
    jac = np.concatenate([np.vstack(jac_site(m, d, sites[i])) for i in on])  # (6 k, nv)
    solution, *_ = np.linalg.lstsq(jac[:, free].T, qfrc_joint[free], rcond=None)
    wrench[on] = solution.reshape(on.size, 6)
    qfrc[:] = jac.T @ solution
    return wrench, qfrc


def _inverse(m, d, discrete: bool) -> None:
    """``inverse``, with the invdiscrete enable flag set for the call when ``discrete``."""
    if not discrete or m.opt.enableflags & EnableBit.INVDISCRETE:
        inverse(m, d)
        return
    flags = m.opt.enableflags
    m.opt.enableflags = flags | EnableBit.INVDISCRETE
    try:
        inverse(m, d)
    finally:
        m.opt.enableflags = flags


def _control_span(m) -> tuple[np.ndarray, np.ndarray]:
    """Controls that change an activation: the ctrl range as forward clamps it, [0, 1] for muscles."""
    lo, hi = ctrl_limits(m, not m.opt.disableflags & DSBL_CLAMPCTRL)
    muscle = m.actuator_dyntype == DYN_MUSCLE
    return np.where(muscle, np.maximum(lo, 0.0), lo), np.where(muscle, np.minimum(hi, 1.0), hi)


def _next_activations(m, d, act: np.ndarray, ctrl: np.ndarray, h: float, clamp: bool) -> np.ndarray:
    """(nu,) each stateful actuator's activation after time h from ``act`` with controls ``ctrl``."""
    act_dot = evaluate_actuation(m, d, ctrl, limits=False, act=act)[1]
    out = np.zeros(m.nu)
    for i in range(m.nu):
        if m.actuator_actadr[i] >= 0:
            a = last_act(m, i)
            out[i] = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                     bool(m.actuator_actlimited[i]) and clamp, m.actuator_actrange[i], act[a],
                                     act_dot[a], h)
    return out


def _reachable_activations(m, d, act: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (nu,) activations reachable after h from ``act`` (the next activation grows with ctrl)."""
    lo, hi = _control_span(m)
    return _next_activations(m, d, act, lo, h, True), _next_activations(m, d, act, hi, h, True)


def _controls_reaching(m, d, act: np.ndarray, act_next: np.ndarray, h: float) -> np.ndarray:
    """(nu,) controls that take each delayed actuator from ``act`` to ``act_next`` in time h.

    Integrator and filter dynamics are affine in ctrl: solved directly. Muscle dynamics are
    monotone in ctrl but not affine: bisection to round-off.
    """
    target = np.array([act_next[last_act(m, i)] if m.actuator_actadr[i] >= 0 else 0.0 for i in range(m.nu)])
    base = _next_activations(m, d, act, np.zeros(m.nu), h, False)
    rate = _next_activations(m, d, act, np.ones(m.nu), h, False) - base
    with np.errstate(divide="ignore", invalid="ignore"):
        ctrl = np.where(rate != 0.0, (target - base) / rate, 0.0)
    lo, hi = _control_span(m)
    muscle = m.actuator_dyntype == DYN_MUSCLE
    if muscle.any():
        a, b = lo.copy(), hi.copy()
        for _ in range(80):
            mid = 0.5 * (a + b)
            below = _next_activations(m, d, act, mid, h, False) < target
            a, b = np.where(below, mid, a), np.where(below, b, mid)
        ctrl = np.where(muscle, 0.5 * (a + b), ctrl)
    return np.clip(ctrl, lo, hi)


def _advance_activation(m, d, ctrl: np.ndarray, h: float) -> None:
    """d.act <- activation after time h with controls ``ctrl`` (mj_nextActivation per actuator)."""
    d.ctrl[:] = ctrl
    fwd_actuation(m, d)
    for i in range(m.nu):
        adr = int(m.actuator_actadr[i])
        if adr < 0:
            continue
        for a in range(adr, adr + int(m.actuator_actnum[i])):
            d.act[a] = next_activation(m.actuator_dyntype[i], m.actuator_dynprm[i, 0],
                                       m.actuator_actlimited[i], m.actuator_actrange[i], d.act[a],
                                       d.act_dot[a], h)


# ---- linearisation along a trajectory ------------------------------------------------------------

LINEARIZE_METHODS = ("fd",)


def linearize(m, states, controls, method: str = "fd", eps: float = 1e-6, centered: bool = False,
              warmstart=None, nthread: int | None = None):
    """The step's derivatives at every step of a trajectory: ``(A, B, C, D)``, each with a leading
    step axis: A (T, 2nv+na, 2nv+na), B (T, 2nv+na, nu), C (T, nsensordata, 2nv+na),
    D (T, nsensordata, nu).

    ``states`` (T, 1 + nq + nv + na + nplastic): the packed state [time, qpos, qvel, act, plastic]
    (``kd.batch``'s layout, mjSTATE_FULLPHYSICS; models with control history are refused) at
    which ``controls[t]`` (T, nu) is applied; ``warmstart``
    (T, nv) the constraint solver's starting acceleration at each (``qacc_warmstart``; default
    zeros; the previous step's ``qacc`` reproduces a simulation exactly). Applied forces are zero,
    mocap bodies and equalities as the model defines them. Step t's matrices are exactly
    ``kd.transition_fd`` at that state and control (``method="fd"``: MuJoCo's mjd_transitionFD,
    forward or ``centered`` differences of size ``eps``); the steps run in parallel on ``nthread``
    threads. ``method`` selects how the derivatives are computed: only "fd" for now (an analytical
    method will be added under another name, with the same result layout).
    """
    check_model(m, "trajectory.linearize")
    if method not in LINEARIZE_METHODS:
        raise ValueError(f"trajectory.linearize: method must be one of {LINEARIZE_METHODS}, got {method!r}")
    from kinedyn.tools import derivatives  # the batch kernels' threads: imported on first use

    derivatives.check_no_history(m, "trajectory.linearize")
    nstate = 1 + m.nq + m.nv + m.na + m.nplastic
    states = float_array(states, "trajectory.linearize: states")
    if states.ndim != 2 or states.shape[1] != nstate:
        plastic = ", plastic" if m.nplastic else ""
        raise ValueError(f"trajectory.linearize: states must have shape (T, {nstate}) = "
                         f"[time, qpos, qvel, act{plastic}] per step; got {states.shape}")
    nstep = states.shape[0]
    controls = float_array(controls, "trajectory.linearize: controls")
    if controls.shape != (nstep, m.nu):
        raise ValueError(f"trajectory.linearize: controls must have shape ({nstep}, {m.nu}); "
                         f"got {controls.shape}")
    if warmstart is None:
        warmstart = np.zeros((nstep, m.nv))
    warmstart = float_array(warmstart, "trajectory.linearize: warmstart")
    if warmstart.shape != (nstep, m.nv):
        raise ValueError(f"trajectory.linearize: warmstart must have shape ({nstep}, {m.nv}); "
                         f"got {warmstart.shape}")
    for name, arr in (("states", states), ("controls", controls), ("warmstart", warmstart)):
        _finite(f"trajectory.linearize: {name}", arr)
    eps = derivatives.check_eps(eps, "trajectory.linearize")
    return derivatives.linearize_fd(m, states, controls, warmstart, eps, bool(centered), nthread)
