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
from kinedyn.engine.smooth_inertia import _solve_m_entry
from kinedyn.engine.support import jac_body_com
from kinedyn.engine.types import (
    EQ_CONNECT,
    EQ_WELD,
    MINVAL,
    OBJ_BODY,
    OBJ_SITE,
    DisableBit,
    JointType,
)


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
    # cameras and lights are placed in their fixed frames at qpos0, as set0 does (modes restored below)
    modes = [model._field(f"{kind}_mode") for kind in ("cam", "light")]
    saved = [mode.copy() for mode in modes]
    for mode in modes:
        mode[:] = 0
    # The whole forward pass, though only its position stage is used here: it is the entry the
    # user's first `forward` needs anyway, so a cold start compiles the position stage once
    # instead of twice (standalone and inside forward). The later stages' outputs are discarded.
    # Contacts are disabled, as mjCModel::Compile does around mj_setConst: a body transmission
    # (adhesion) has no moment at qpos0, so its acc0 and length0 are 0.
    flags = model.opt.disableflags
    model.opt.disableflags = flags | DisableBit.CONTACT
    try:
        forward(model, d)
    finally:
        model.opt.disableflags = flags
        for mode, values in zip(modes, saved, strict=True):
            mode[:] = values
    _set_camlight0(model, d)
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


def _set_camlight0(model, d) -> None:
    """cam_pos0, cam_poscom0, cam_mat0 and the light_* counterparts from the fixed frames at qpos0
    (set0): offsets from the body and from the subtree com of the target (else of the body)."""
    for kind, xpos, frame, frame0 in (("cam", d.cam_xpos, d.cam_xmat, model.cam_mat0),
                                      ("light", d.light_xpos, d.light_xdir, model.light_dir0)):
        body = getattr(model, f"{kind}_bodyid")
        target = getattr(model, f"{kind}_targetbodyid")
        getattr(model, f"{kind}_pos0")[:] = xpos - d.xpos[body]
        getattr(model, f"{kind}_poscom0")[:] = xpos - d.subtree_com[np.where(target >= 0, target, body)]
        frame0[:] = frame


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
