"""Compile-time constants that need the dynamics at qpos0 (MuJoCo's set0, engine_setconst.c).

* ``actuator_length0``: actuator length at qpos0.
* ``actuator_acc0``: |M^-1 moment^T|, the joint acceleration norm caused by a unit
  actuator force at qpos0 (M includes armature).
* dampratio: a position-like actuator (gainprm[0] == -biasprm[1]) whose biasprm[2]
  is positive holds a damping ratio zeta rather than -kv. MuJoCo 4.0 resolves it with
  the reflected mass m = 1 / (J M^-1 J^T) at qpos0: kv = zeta * 2 sqrt(kp m), stored
  as biasprm[2] = -kv.
* ``tendon_length0``: tendon length at qpos0.
* ``tendon_lengthspring``: a tendon whose springlength was left at -1 -1 gets its
  length at ``qpos_spring`` for both ends (MuJoCo's setSpring, after set0).
* ``body_invweight0``, ``dof_invweight0``, ``tendon_invweight0``: mean diagonals of the
  inverse inertia J M^-1 J' seen by a body's com, a joint, a tendon at qpos0 (they scale
  the constraint regulariser).
* ``eq_data``: the parts of connect and weld constraints that depend on the pose at qpos0.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import cached_njit
from kinedyn.engine.data import Data
from kinedyn.engine.forward import forward
from kinedyn.engine.smooth_inertia import _solve_m_entry, solve_m
from kinedyn.engine.support import jac_body_com
from kinedyn.engine.types import (
    EQ_CONNECT,
    EQ_WELD,
    MINVAL,
    OBJ_BODY,
    OBJ_SITE,
    BiasType,
    GainType,
    JointType,
    TrnType,
)
from kinedyn.errors import ModelError


@cached_njit
def _solve_m_rows_entry(m, d, rows):
    """rows[i] <- M^-1 rows[i] for every row (mj_solveM), as one compiled call.

    ``kinedyn.solve_m`` does the same from Python; this entry exists so that loading a model
    from a warm cache loads only entries cached through ``_jit.cache.cached_njit`` (see
    ``_LazyFunctionCache``): ``solve_m``'s own entry would run Numba's compiler
    initialisation (0.1 s) on the way.
    """
    for i in range(rows.shape[0]):
        _solve_m_entry(m, d, rows[i])


def set_const(model, body_simple) -> None:
    """Fill the constants listed in the module docstring (MuJoCo's set0 and setSpring).

    ``body_simple`` is the compiler's body_simple (0, 1, or 2 for a simple body with only slide
    joints), which decides how invweight0 is computed.
    """
    d = Data(model)
    # The whole forward pass, though only its position stage is used here: it is the entry the
    # user's first `forward` needs anyway, so a cold start compiles the position stage once
    # instead of twice (standalone and inside forward). The later stages' outputs are discarded.
    forward(model, d)
    model.tendon_length0[:] = d.ten_length
    _set_invweight0(model, d, body_simple)
    _set_eq_data(model, d)
    if model.ntendon:
        _set_spring(model)
    if model.nu == 0:
        return
    # one solve per actuator: x_i = M^-1 moment_i^T
    x = d.actuator_moment.copy()
    _solve_m_rows_entry(model._handle, d._handle, x)
    model.actuator_length0[:] = d.actuator_length
    model.actuator_acc0[:] = np.linalg.norm(x, axis=1)

    for i in range(model.nu):
        gainprm, biasprm = model.actuator_gainprm[i], model.actuator_biasprm[i]
        if gainprm[0] == -biasprm[1] and biasprm[2] > 0:
            dampratio = biasprm[2]
            kp = gainprm[0]
            inv_mass = float(d.actuator_moment[i] @ x[i])
            mass = 1.0 / inv_mass if inv_mass > 0 else 0.0
            model.actuator_biasprm[i, 2] = -dampratio * 2.0 * math.sqrt(kp * mass)


def _set_invweight0(model, d, body_simple) -> None:
    """body_invweight0, dof_invweight0, tendon_invweight0 at qpos0 (set0, engine_setconst.c).

    A body welded to the world gets 0. A simple body with only slide joints (body_simple 2:
    translations along its own axes, so M is its mass on those dofs) gets 1/mass for the
    translation and 0 for the rotation, and its joints' dofs 1/mass, armature ignored, as in
    MuJoCo. Otherwise a body gets the mean of the translational and of the rotational
    diagonal of A = J M^-1 J' for the Jacobian of its com; a joint the diagonal of M^-1 on
    its dofs (free: translational and rotational means; ball: the mean of three); a tendon
    J M^-1 J' for its length Jacobian.
    """
    nv = model.nv
    if nv == 0:
        return  # every body is welded to the world; no dofs, and tendons have no Jacobian
    weldid, dofnum, mass = model.body_weldid, model.body_dofnum, model.body_mass
    general = []
    for i in range(1, model.nbody):
        if dofnum[weldid[i]] == 0:
            model.body_invweight0[i] = 0.0
        elif body_simple[i] == 2:
            model.body_invweight0[i] = (1.0 / max(MINVAL, mass[i]), 0.0)
        else:
            general.append(i)
    if general:
        # rows: the translational then rotational com Jacobian of each body (mj_jacBodyCom)
        jac = np.concatenate([np.concatenate(jac_body_com(model, d, i)) for i in general])
        diag = _inverse_inertia_diagonal(model, d, jac).reshape(len(general), 6)
        model.body_invweight0[general, 0] = diag[:, :3].sum(axis=1) / 3
        model.body_invweight0[general, 1] = diag[:, 3:].sum(axis=1) / 3

    rows = []  # the unit rows of the dofs of joints that need M^-1
    for j in range(model.njnt):
        adr, body = model.jnt_dofadr[j], model.jnt_bodyid[j]
        if body_simple[body] == 2:
            model.dof_invweight0[adr] = 1.0 / max(MINVAL, mass[body])
        else:
            rows.extend(range(adr, adr + JointType(model.jnt_type[j]).nv))
    if rows:
        diag = np.zeros(nv)
        diag[rows] = _inverse_inertia_diagonal(model, d, np.eye(nv)[rows])
        for j in range(model.njnt):
            adr, jtype = model.jnt_dofadr[j], model.jnt_type[j]
            if body_simple[model.jnt_bodyid[j]] == 2:
                continue
            if jtype == JointType.FREE:
                model.dof_invweight0[adr:adr + 3] = diag[adr:adr + 3].sum() / 3
                model.dof_invweight0[adr + 3:adr + 6] = diag[adr + 3:adr + 6].sum() / 3
            elif jtype == JointType.BALL:
                model.dof_invweight0[adr:adr + 3] = diag[adr:adr + 3].sum() / 3
            else:
                model.dof_invweight0[adr] = diag[adr]

    if model.ntendon:
        model.tendon_invweight0[:] = _inverse_inertia_diagonal(model, d, d.ten_J)


def _inverse_inertia_diagonal(model, d, rows: np.ndarray) -> np.ndarray:
    """The diagonal of rows M^-1 rows' (one M^-1 solve per row, as mj_solveM)."""
    x = np.ascontiguousarray(rows, dtype=np.float64).copy()
    _solve_m_rows_entry(model._handle, d._handle, x)
    return np.einsum("ij,ij->i", rows, x)


def _set_eq_data(model, d) -> None:
    """The pose-dependent parts of eq_data at qpos0 (set0, "compute missing eq_data").

    Connect between bodies: data[3:6] = the anchor (data[0:3], in body1's frame) expressed
    in body2's frame. Connect between sites: all 12 values are 0 (unused: the sites are the
    anchors). Weld between bodies with a relpose quaternion (data[6:10]) given: the
    quaternion is normalised and nothing else changes. Weld between bodies without it
    (omitted, or all four zero): data[3:6] = the anchor (data[0:3], in body2's frame) in
    body1's frame, data[6:10] = conj(xquat1) xquat2, the pose of body2 relative to body1,
    and data[11] = 1 records that the compiler computed the relative pose (MuJoCo 4.0,
    mjNEQDATA = 12). Weld between sites: unchanged.
    """
    xpos, xmat, xquat = d.xpos, d.xmat, d.xquat
    for i in range(model.neq):
        data = model.eq_data[i]
        b1, b2 = model.eq_obj1id[i], model.eq_obj2id[i]
        etype, objtype = model.eq_type[i], model.eq_objtype[i]
        if etype == EQ_CONNECT and objtype == OBJ_BODY:
            world = xpos[b1] + xmat[b1] @ data[0:3]  # mj_local2Global
            data[3:6] = xmat[b2].T @ (world - xpos[b2])
        elif etype == EQ_CONNECT and objtype == OBJ_SITE:
            data[:] = 0.0
        elif etype == EQ_WELD and objtype == OBJ_BODY:
            if np.any(data[6:10] != 0):
                _normalize_quat(data[6:10])
                continue
            world = xpos[b2] + xmat[b2] @ data[0:3]
            data[3:6] = xmat[b1].T @ (world - xpos[b1])
            data[6:10] = _mul_quat(xquat[b1] * (1.0, -1.0, -1.0, -1.0), xquat[b2])
            data[11] = 1.0


def _normalize_quat(q: np.ndarray) -> None:
    """Normalise the quaternion ``q`` in place as mju_normalize4: (1, 0, 0, 0) when its norm is
    below MINVAL, unchanged when the norm is within MINVAL of 1."""
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if norm < MINVAL:
        q[:] = (1.0, 0.0, 0.0, 0.0)
    elif abs(norm - 1.0) > MINVAL:
        q *= 1.0 / norm


def _mul_quat(a, b) -> tuple[float, float, float, float]:
    """Quaternion product a b (mju_mulQuat)."""
    return (a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0])


def _set_spring(model) -> None:
    """tendon_lengthspring -1 -1 -> the tendon length at qpos_spring (setSpring)."""

    d = Data(model)
    d.qpos[:] = model.qpos_spring
    forward(model, d)  # spatial tendons need the site poses and Jacobians
    for i in range(model.ntendon):
        if model.tendon_lengthspring[i, 0] == -1 and model.tendon_lengthspring[i, 1] == -1:
            model.tendon_lengthspring[i, :] = d.ten_length[i]


# mjLROpt defaults (mj_defaultLROpt); mode muscle: only actuators with muscle gain or bias
LR_DEFAULTS = dict(mode="muscle", useexisting="true", uselimit="false", accel=20.0, maxforce=0.0,
                   timeconst=1.0, timestep=0.01, inttotal=10.0, interval=2.0, tolrange=0.05)


def set_length_range(model, lropt: dict, nodes: list) -> None:
    """actuator_lengthrange as MuJoCo's compiler sets it (mjCModel::LengthRange, mj_setLengthRange).

    Per selected actuator (``mode``): keep a given range (``useexisting``), else copy the
    range of a limited joint or tendon target (``uselimit``; copied as is, not scaled by
    the gear), else estimate it. MuJoCo estimates it by simulating the model (gravity,
    springs, dampers and actuation off) with a force that accelerates the actuator length
    down, then up, until it rests against the joint limits, and takes the lengths it settles
    at. kinedyn has no constraint solver, so it computes the extremes that simulation
    converges to directly (:func:`length_extremes`): the minimum and maximum of the
    actuator length over the joint ranges, found by bounded local optimisation from qpos0,
    plus the overshoot of MuJoCo's soft joint limits at ends resting against them
    (docs/deviations.md gives the measured agreement).
    """

    opt = dict(LR_DEFAULTS, **lropt)
    mode = opt["mode"]
    if mode not in ("none", "muscle", "muscleuser", "all"):
        raise ModelError(f"invalid lengthrange mode {mode!r}", element="lengthrange", attribute="mode")
    for i in range(model.nu):
        ismuscle = (model.actuator_gaintype[i] == GainType.MUSCLE
                    or model.actuator_biastype[i] == BiasType.MUSCLE)
        isuser = model.actuator_gaintype[i] == GainType.USER or model.actuator_biastype[i] == BiasType.USER
        if mode == "none" or (mode == "muscle" and not ismuscle) or (
                mode == "muscleuser" and not ismuscle and not isuser):
            continue
        lr = model.actuator_lengthrange[i]
        if opt["useexisting"] == "true" and lr[0] < lr[1]:
            continue
        trn, tid = model.actuator_trntype[i], model.actuator_trnid[i, 0]
        if opt["uselimit"] == "true":
            if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and model.jnt_limited[tid]:
                lr[:] = model.jnt_range[tid]
                continue
            if trn == TrnType.TENDON and model.tendon_limited[tid]:
                lr[:] = model.tendon_range[tid]
                continue
        node = nodes[i] if i < len(nodes) else None
        try:
            lr[:] = length_extremes(model, i)[:2]
        except ValueError as err:
            msg = f"lengthrange of actuator {i}: {err}; give 'lengthrange' explicitly"
            if node is not None:
                raise node.error(msg, "lengthrange") from None
            raise ModelError(msg) from None


# bound on the joint displacement of an unlimited slide joint before the range counts as unbounded
_UNBOUNDED = 1e3


def length_extremes(model, i: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(min, max) of actuator i's length over the joint ranges and the qpos of each, by L-BFGS-B from qpos0.

    The variables are the hinge and slide positions; limited joints are bounded by their
    range, as MuJoCo's simulation is by the limit constraints. The gradient is the
    actuator's moment (exact for hinge and slide joints). Like MuJoCo's simulation, which
    starts at qpos0 and follows the pushing force, this finds the extremes reachable
    downhill/uphill from qpos0, not necessarily the global ones. Raises ValueError when the
    actuator moves a ball or free joint (no box to optimise over) or the length is unbounded.
    Each end includes the overshoot of MuJoCo's soft joint limits (:func:`_soft_limit_overshoot`).
    """
    from scipy.optimize import minimize


    d = Data(model)
    d.qpos[:] = model.qpos0
    forward(model, d)
    moved = np.flatnonzero(d.actuator_moment[i])
    for v in moved:
        j = model.dof_jntid[v]
        if model.jnt_type[j] in (JointType.BALL, JointType.FREE):
            raise ValueError(f"the actuator moves {JointType(model.jnt_type[j]).name.lower()} joint {j}; "
                             "kinedyn estimates lengthrange over hinge and slide joint ranges only")
    joints = [j for j in range(model.njnt) if model.jnt_type[j] in (JointType.HINGE, JointType.SLIDE)]
    if not joints:
        raise ValueError("the actuator moves no hinge or slide joint")
    qadr = np.array([model.jnt_qposadr[j] for j in joints])
    vadr = np.array([model.jnt_dofadr[j] for j in joints])
    bounds = [tuple(model.jnt_range[j]) if model.jnt_limited[j] else (None, None) for j in joints]
    x0 = model.qpos0[qadr].copy()
    # diagonal of M^-1 at qpos0 (MuJoCo's dof_invweight0 for hinge and slide dofs)
    invweight0 = np.diag(solve_m(model, d, np.eye(model.nv))).copy() if model.nv else np.zeros(0)

    def length_and_moment(x, sign):
        d.qpos[:] = model.qpos0
        d.qpos[qadr] = x
        forward(model, d)
        return sign * d.actuator_length[i], sign * d.actuator_moment[i, vadr]

    extremes, configurations = [], []
    for sign in (1.0, -1.0):  # minimise the length, then its negative
        res = minimize(length_and_moment, x0, args=(sign,), jac=True, method="L-BFGS-B", bounds=bounds,
                       options=dict(ftol=1e-15, gtol=1e-12, maxiter=1000))
        if not np.all(np.isfinite(res.x)) or np.max(np.abs(res.x - x0), initial=0.0) > _UNBOUNDED:
            raise ValueError("the length is unbounded over the joint ranges (unlimited joints)")
        qpos = model.qpos0.copy()
        qpos[qadr] = res.x
        configurations.append(qpos)
        extremes.append(sign * float(res.fun) + _soft_limit_overshoot(model, d, i, qpos, -sign, invweight0))
    if not extremes[0] < extremes[1]:
        raise ValueError(f"invalid lengthrange ({extremes[0]:g}, {extremes[1]:g}): the length does not vary")
    return extremes[0], extremes[1], configurations[0], configurations[1]



# MuJoCo's default soft-limit parameters (solreflimit, solimplimit) and the lengthrange option
# timestep 0.01, whose safety clamp (timeconst >= 2 timestep) leaves timeconst at 0.02
_LIMIT_TIMECONST, _LIMIT_DAMPRATIO = 0.02, 1.0
_LIMIT_IMP = (0.9, 0.95, 0.001, 0.5, 2.0)  # d0, dwidth, width, midpoint, power


def _impedance(penetration: float) -> float:
    """Constraint impedance d(r) of solimp (getimpedance, engine_core_constraint.c)."""
    d0, dwidth, width, mid, power = _LIMIT_IMP
    x = min(penetration / width, 1.0)
    if x <= mid:
        y = x ** power / mid ** (power - 1)
    else:
        y = 1.0 - (1.0 - x) ** power / (1.0 - mid) ** (power - 1)
    return d0 + y * (dwidth - d0)


def _soft_limit_overshoot(model, d, i: int, qpos: np.ndarray, push: float, invweight0) -> float:
    """Length change from MuJoCo's simulation resting *inside* the joint limits it is pushed into.

    MuJoCo's limits are soft: at rest the constraint force f on a limited dof equals the
    applied force of the lengthrange simulation, ``push accel moment / |M^-1 moment|``, and
    the reference acceleration balances it, ``k d r = R f`` with ``R = (1 - d)/d invweight0``
    and ``k = 1 / (dwidth^2 timeconst^2 dampratio^2)`` (solref/solimp at their defaults),
    so the penetration is ``r = (1 - d) invweight0 f / (k d^2)``, d depending on r through
    solimp (a fixed point). The returned length change is the moment times those
    penetrations, to first order. ``push`` is -1 when the length is minimised, +1 when maximised.
    """

    d.qpos[:] = qpos
    forward(model, d)
    moment = d.actuator_moment[i].copy()
    x = solve_m(model, d, moment[None, :])[0]
    qfrc = push * LR_DEFAULTS["accel"] * moment / max(1e-15, float(np.linalg.norm(x)))
    k = 1.0 / (_LIMIT_IMP[1] ** 2 * _LIMIT_TIMECONST ** 2 * _LIMIT_DAMPRATIO ** 2)
    change = 0.0
    for j in range(model.njnt):
        if not model.jnt_limited[j] or model.jnt_type[j] not in (JointType.HINGE, JointType.SLIDE):
            continue
        v, a = model.jnt_dofadr[j], model.jnt_qposadr[j]
        lo, hi = model.jnt_range[j]
        at_lo = qpos[a] <= lo + 1e-12 and qfrc[v] < 0
        at_hi = qpos[a] >= hi - 1e-12 and qfrc[v] > 0
        if not (at_lo or at_hi):
            continue
        force, r = abs(qfrc[v]), 0.0
        for _ in range(50):
            imp = _impedance(r)
            r = (1.0 - imp) * invweight0[v] * force / (k * imp * imp)
        change += moment[v] * (r if at_hi else -r)
    return change
