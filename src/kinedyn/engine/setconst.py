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

from kinedyn._jit import cached_njit, kernel
from kinedyn.engine.data import Data
from kinedyn.engine.forward import forward
from kinedyn.engine.smooth_flex import flex_setconst_entry
from kinedyn.engine.smooth_inertia import _solve_m_entry, dot_sparse, set_m0_entry
from kinedyn.engine.types import (
    EQ_CONNECT,
    EQ_WELD,
    GAIN_PID,
    MINVAL,
    OBJ_BODY,
    OBJ_SITE,
    DisableBit,
    JointType,
)
from kinedyn.engine.util_spatial import unsigned_index


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


@kernel
def _chain_quadform(M_rownnz, M_rowadr, M_colind, qLD, qLDiagInv, chain, n, row, x):
    """row' M^-1 row for a row that is zero outside chain[:n], a dof and its ancestors (descending).

    The three passes of solve_ld (mj_solveLD) visit only the chain: a row of the L^T D L factor
    holds its dof's ancestors alone, so the entries of M^-1 row on the chain, which are all the
    product reads, come out exactly as from the full solve, in O(depth^2) instead of O(nM).
    ``x`` is an nv scratch, zero on entry and on return.
    """
    nv = M_rownnz.shape[0]
    for k in range(n):
        x[chain[k]] = row[k]
    # x <- L^-T x (descending)
    for k in range(n):
        i = chain[k]
        xi = x[i]
        if xi != 0.0:
            start = unsigned_index(M_rowadr[i])
            for t in range(unsigned_index(M_rownnz[i] - 1)):
                x[unsigned_index(M_colind[start + t])] -= qLD[start + t] * xi
    # x <- D^-1 x
    for k in range(n):
        x[chain[k]] *= qLDiagInv[chain[k]]
    # x <- L^-1 x (ascending), each row's sum in mju_dotSparse's order as solve_ld
    for k in range(n - 1, -1, -1):
        i = chain[k]
        x[i] -= dot_sparse(qLD, unsigned_index(M_rowadr[i]), x, M_colind, unsigned_index(M_rownnz[i] - 1))
    # row . x over all nv in mju_dot's order (set0's mju_mulMatMatT): dof v's product goes to
    # lane v % 4 below the last whole block of four, the rest is added after the lanes; the
    # products outside the chain are zeros and change no sum
    s0 = s1 = s2 = s3 = tail = 0.0
    whole = nv - nv % 4
    for k in range(n - 1, -1, -1):
        v = chain[k]
        p = row[k] * x[v]
        x[v] = 0.0
        if v >= whole:
            tail += p
        elif v % 4 == 0:
            s0 += p
        elif v % 4 == 1:
            s1 += p
        elif v % 4 == 2:
            s2 += p
        else:
            s3 += p
    return (s0 + s2) + (s1 + s3) + tail


@cached_njit
def _invweight0_entry(m, d, bodies, dofs, body_diag, dof_diag):
    """body_diag[k] = the diagonal of J M^-1 J' for the com Jacobian J (translational rows, then
    rotational; mj_jacBodyCom) of body bodies[k]; dof_diag[k] = (M^-1)[dofs[k], dofs[k]].

    set0 solves with the dense Jacobian rows (O(nM) each, so O(nbody nM) for the model); a com
    Jacobian is zero outside the body's dof ancestor chain, which is all :func:`_chain_quadform`
    visits.
    """
    nv = m.nv
    x = np.zeros(nv)
    chain = np.empty(nv, dtype=np.int64)
    rows = np.empty((6, nv))
    for k in range(bodies.shape[0]):
        b = bodies[k]
        r = m.body_rootid[b]
        ox = d.xipos[b, 0] - d.subtree_com[r, 0]
        oy = d.xipos[b, 1] - d.subtree_com[r, 1]
        oz = d.xipos[b, 2] - d.subtree_com[r, 2]
        while b > 0 and m.body_dofnum[b] == 0:  # the first ancestor with dofs, as jac_kernel
            b = m.body_parentid[b]
        n = 0
        v = m.body_dofadr[b] + m.body_dofnum[b] - 1 if b > 0 else -1
        while v >= 0:
            c = d.cdof[v]
            # jac_kernel's columns: translation cdof_lin + cdof_rot x offset, rotation cdof_rot
            rows[0, n] = c[3] + (c[1] * oz - c[2] * oy)
            rows[1, n] = c[4] + (c[2] * ox - c[0] * oz)
            rows[2, n] = c[5] + (c[0] * oy - c[1] * ox)
            rows[3, n] = c[0]
            rows[4, n] = c[1]
            rows[5, n] = c[2]
            chain[n] = v
            n += 1
            v = m.dof_parentid[v]
        for j in range(6):
            body_diag[k, j] = _chain_quadform(m.M_rownnz, m.M_rowadr, m.M_colind, d.qLD, d.qLDiagInv,
                                              chain, n, rows[j], x)
    unit = np.zeros(nv)
    unit[0] = 1.0
    for k in range(dofs.shape[0]):
        n = 0
        v = dofs[k]
        while v >= 0:
            chain[n] = v
            n += 1
            v = m.dof_parentid[v]
        dof_diag[k] = _chain_quadform(m.M_rownnz, m.M_rowadr, m.M_colind, d.qLD, d.qLDiagInv,
                                      chain, n, unit, x)


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
    try:
        _forward_unconstrained(model, d)
        # dof_M0 from the composite inertias at qpos0 (mj_setM0), then, if some dofs are simple
        # (their M diagonal is dof_M0, unknown in the pass above), the pass again. (Not kinematics
        # and com_pos first, as set0 orders it: those calls made the cold start bind the stages in
        # two rounds, ~5 s on the humanoid, for the same numbers.)
        set_m0_entry(model._handle, d._handle)
        if model.dof_simplenum.any():
            _forward_unconstrained(model, d)
    finally:
        for mode, values in zip(modes, saved, strict=True):
            mode[:] = values
    _set_camlight0(model, d)
    _set_dof_length(model, d)
    model.tendon_length0[:] = d.ten_length
    _set_invweight0(model, d, body_simple)
    if model.nflex:
        _set_flex0(model, d, body_simple)
    _set_eq_data(model, d)
    if model.ntendon:
        _set_spring(model)
    if model.nactuator == 0:
        return
    # one solve per actuator: x_i = M^-1 moment_i^T
    x = d.actuator_moment.copy()
    _solve_m_rows_entry(model._handle, d._handle, x)
    model.actuator_length0[:] = d.actuator_length
    model.actuator_acc0[:] = np.sqrt(dot_rows_mj(x, x))  # mju_norm: sqrt of mju_dot

    for i in range(model.nactuator):
        gainprm, biasprm = model.actuator_gainprm[i], model.actuator_biasprm[i]
        # a pid's kp is -biasprm[1] (its gainprm[0] is ki)
        pid = model.actuator_gaintype[i] == GAIN_PID
        if (gainprm[0] == -biasprm[1] or pid) and biasprm[2] > 0:
            dampratio = biasprm[2]
            kp = -biasprm[1]
            inv_mass = float(d.actuator_moment[i] @ x[i])
            mass = 1.0 / inv_mass if inv_mass > 0 else 0.0
            model.actuator_biasprm[i, 2] = -dampratio * 2.0 * math.sqrt(kp * mass)


def _set_dof_length(model, d) -> None:
    """dof_length (mj_setConst's body sizes at qpos0): a body's size is the largest distance from
    its com to its own and its children's joint anchors, and to the far side of its geoms'
    bounding spheres (at least 1e-5); a rotational dof takes its body's size, a translational
    dof 1."""
    size = np.zeros(model.nbody)
    for j in range(model.njnt):
        b = model.jnt_bodyid[j]
        for i in (b, model.body_parentid[b]):
            size[i] = max(size[i], float(np.sqrt(np.sum((d.xipos[i] - d.xanchor[j]) ** 2))))
    size[0] = 0.0
    for i in range(1, model.nbody):
        for g in range(model.body_geomadr[i], model.body_geomadr[i] + model.body_geomnum[i]):
            if model.geom_rbound[g] > 0:
                dist = float(np.sqrt(np.sum((d.xipos[i] - d.geom_xpos[g]) ** 2)))
                size[i] = max(size[i], model.geom_rbound[g] + dist)
        size[i] = max(size[i], 1e-5)
    for v in range(model.nv):
        j = model.dof_jntid[v]
        jtype = model.jnt_type[j]
        rotational = jtype in (JointType.BALL, JointType.HINGE) or (
            jtype == JointType.FREE and v - model.jnt_dofadr[j] >= 3)
        model.dof_length[v] = size[model.dof_bodyid[v]] if rotational else 1.0


def _forward_unconstrained(model, d) -> None:
    """``forward`` at d's state with contacts and the other constraints disabled.

    The whole forward pass, though only its position stage is used here: it is the entry the
    user's first `forward` needs anyway, so a cold start compiles the position stage once
    instead of twice (standalone and inside forward). The later stages' outputs are discarded.
    Contacts are disabled, as mjCModel::Compile does around mj_setConst: a body transmission
    (adhesion) has no moment at qpos0, so its acc0 and length0 are 0. The other constraints
    are too, as set0 computes none: no value read from ``d`` depends on them, and a model with
    many equality constraints or limit rows at qpos0 would run the solver for nothing.
    """
    flags = model.opt.disableflags
    model.opt.disableflags = flags | DisableBit.CONTACT | DisableBit.CONSTRAINT
    try:
        forward(model, d)
    finally:
        model.opt.disableflags = flags


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
    rows = []  # the dofs of joints that need M^-1
    for j in range(model.njnt):
        adr, body = model.jnt_dofadr[j], model.jnt_bodyid[j]
        if body_simple[body] == 2:
            model.dof_invweight0[adr] = 1.0 / max(MINVAL, mass[body])
        else:
            rows.extend(range(adr, adr + JointType(model.jnt_type[j]).nv))
    body_diag = np.zeros((len(general), 6))
    dof_diag = np.zeros(len(rows))
    if general or rows:
        _invweight0_entry(model._handle, d._handle, np.array(general, dtype=np.int64),
                          np.array(rows, dtype=np.int64), body_diag, dof_diag)
    if general:
        model.body_invweight0[general, 0] = body_diag[:, :3].sum(axis=1) / 3
        model.body_invweight0[general, 1] = body_diag[:, 3:].sum(axis=1) / 3
    if rows:
        diag = np.zeros(nv)
        diag[rows] = dof_diag
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


def _set_flex0(model, d, body_simple) -> None:
    """flexedge_length0 and flexedge_invweight0 at qpos0 (set0): the edges of every flex, rigid
    ones included, then per edge 0 if rigid, the mean of the two inverse masses if both bodies
    are simple with only slide joints, else J M^-1 J' for the edge Jacobian."""
    flex_setconst_entry(model._handle, d._handle)
    model.flexedge_length0[:] = d.flexedge_length
    inv = model.flexedge_invweight0
    general = []
    for f in range(model.nflex):
        vadr = model.flex_vertadr[f]
        for e in range(model.flex_edgeadr[f], model.flex_edgeadr[f] + model.flex_edgenum[f]):
            b1, b2 = (model.flex_vertbodyid[vadr + v] for v in model.flex_edge[e])
            if model.flexedge_rigid[e]:
                inv[e] = 0.0
            elif body_simple[b1] == 2 and body_simple[b2] == 2:
                inv[e] = (1 / model.body_mass[b1] + 1 / model.body_mass[b2]) / 2
            else:
                general.append(e)
    if general and model.nv:
        inv[general] = _inverse_inertia_diagonal(model, d, d.flexedge_J[general])


def _inverse_inertia_diagonal(model, d, rows: np.ndarray) -> np.ndarray:
    """The diagonal of rows M^-1 rows' (one M^-1 solve per row, as mj_solveM)."""
    x = np.ascontiguousarray(rows, dtype=np.float64).copy()
    _solve_m_rows_entry(model._handle, d._handle, x)
    return dot_rows_mj(rows, x)


def dot_rows_mj(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[i] . b[i] for every row, summed in mju_dot's order (util_linalg3.dot_mj): four lanes
    over the whole blocks of four, combined as (s0 + s2) + (s1 + s3), then the last n % 4
    products summed left to right and added."""
    p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    n = p.shape[1]
    whole = n - n % 4
    lanes = np.zeros((p.shape[0], 4))
    for k in range(0, whole, 4):
        lanes += p[:, k:k + 4]
    res = (lanes[:, 0] + lanes[:, 2]) + (lanes[:, 1] + lanes[:, 3])
    if whole < n:
        tail = p[:, whole]
        for k in range(whole + 1, n):
            tail = tail + p[:, k]
        res = res + tail
    return res


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
    _forward_unconstrained(model, d)  # spatial tendons need the site poses and Jacobians
    for i in range(model.ntendon):
        if model.tendon_lengthspring[i, 0] == -1 and model.tendon_lengthspring[i, 1] == -1:
            model.tendon_lengthspring[i, :] = d.ten_length[i]
