"""Jacobians of points, bodies and sites (mj_jac, mj_jacBody, mj_jacSite, engine_support.c).

For a point p attached to body b, the translational Jacobian column of dof v is
``cdof_lin_v + cdof_rot_v x (p - subtree_com[root])`` and the rotational column is
``cdof_rot_v``, for every dof v on the path from b to its root; other columns are
zero. They need ``kinematics`` and ``com_pos`` to have run.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import (
    OutArgument,
    bad_model_data,
    check_model,
    check_model_data,
    float_array,
    out_array,
    real_number,
)
from kinedyn.engine.types import JNT_BALL, JNT_FREE
from kinedyn.engine.util_spatial import quat_integrate, sub_quat


@kernel
def jac_kernel(
    # model
    body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
    # data in
    subtree_com, cdof, px, py, pz, body,
    # data out: (3, nv) each
    jacp, jacr,
):
    """jacp, jacr = translational and rotational Jacobians of world point p on body (mj_jac)."""
    nv = jacp.shape[1]
    for k in range(3):
        for v in range(nv):
            jacp[k, v] = 0.0
            jacr[k, v] = 0.0
    r = body_rootid[body]
    ox = px - subtree_com[r, 0]
    oy = py - subtree_com[r, 1]
    oz = pz - subtree_com[r, 2]
    # skip bodies welded to their parent: start at the first ancestor with dofs
    while body > 0 and body_dofnum[body] == 0:
        body = body_parentid[body]
    if body == 0:
        return
    # backward pass over the dof ancestor chain
    v = body_dofadr[body] + body_dofnum[body] - 1
    while v >= 0:
        jacr[0, v] = cdof[v, 0]
        jacr[1, v] = cdof[v, 1]
        jacr[2, v] = cdof[v, 2]
        # translation: cdof_lin + (cdof_rot x offset), the cross product formed first (mj_jac's
        # order: the sum is MuJoCo's bits)
        jacp[0, v] = cdof[v, 3] + (cdof[v, 1] * oz - cdof[v, 2] * oy)
        jacp[1, v] = cdof[v, 4] + (cdof[v, 2] * ox - cdof[v, 0] * oz)
        jacp[2, v] = cdof[v, 5] + (cdof[v, 0] * oy - cdof[v, 1] * ox)
        v = dof_parentid[v]


@handle_entry(args="float64[::1], int64, float64[:, ::1], float64[:, ::1]")
def _jac_entry(m, d, point, body, jacp, jacr):
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, point[0], point[1], point[2], body, jacp, jacr)


# frames jac_frame_entry knows: the point is read in compiled code, not passed from Python
FRAME_BODY, FRAME_BODY_COM, FRAME_SITE = 0, 1, 2


@handle_entry(args="int64, int64, float64[:, ::1], float64[:, ::1]")
def _jac_frame_entry(m, d, kind, i, jacp, jacr):
    """Jacobians of body i's origin, body i's com or site i (mj_jacBody, mj_jacBodyCom, mj_jacSite)."""
    if kind == FRAME_SITE:
        body = m.site_bodyid[i]
        point = d.site_xpos[i]
    elif kind == FRAME_BODY_COM:
        body = i
        point = d.xipos[i]
    else:
        body = i
        point = d.xpos[i]
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, point[0], point[1], point[2], body, jacp, jacr)


_JAC = FastEntry(_jac_entry)
_JAC_FRAME = FastEntry(_jac_frame_entry)


def _check_id(kind: str, i, n: int) -> int:
    if type(i) is int and 0 <= i < n:  # the common case, checked first (per-call cost)
        return i
    if isinstance(i, str):  # a name where an id belongs: say how to get the id
        raise TypeError(f"{kind} must be an integer id, got the name {i!r}; use m.{kind}({i!r}).id")
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"{kind} must be an integer id, got {type(i).__name__} {i!r}")
    if not 0 <= i < n:
        raise IndexError(f"{kind} id {i!r} out of range [0, {n})")
    return int(i)


_JACP, _JACR = OutArgument("jacp"), OutArgument("jacr")


def _outputs(m, jacp, jacr) -> tuple[np.ndarray, np.ndarray]:
    """The (3, nv) arrays a Jacobian is written into: the caller's (checked), or new ones."""
    shape = (3, m.nv)
    jacp = np.empty(shape) if jacp is None else _JACP.check(jacp, shape)
    jacr = np.empty(shape) if jacr is None else _JACR.check(jacr, shape)
    return jacp, jacr


def jac(m, d, point, body: int, jacp=None, jacr=None) -> tuple[np.ndarray, np.ndarray]:
    """Translational and rotational Jacobians, each (3, nv), of a world point moving with ``body``.

    Mirrors mj_jac. Needs kinematics and com_pos (or forward) to have run. ``jacp``, ``jacr``:
    optional (3, nv) float64 arrays to write into (and return), as MuJoCo's out-arguments.
    """
    check_model_data(m, d, "jac")
    body = _check_id("body", body, m.nbody)
    point = float_array(point, "point", (3,))
    jacp, jacr = _outputs(m, jacp, jacr)
    _JAC.call(m._ptr, d._ptr, point, body, jacp, jacr)
    return jacp, jacr


def _jac_frame(m, d, kind: int, i: int, jacp, jacr, name: str) -> tuple[np.ndarray, np.ndarray]:
    # the checks are inline (per-call cost: these are called in IK and control loops)
    try:
        if d._model is not m:
            bad_model_data(m, d, name)
    except AttributeError:
        bad_model_data(m, d, name)
    n = m.nsite if kind == FRAME_SITE else m.nbody
    if type(i) is not int or not 0 <= i < n:
        i = _check_id("site" if kind == FRAME_SITE else "body", i, n)
    # the arrays checked last time, recognised inline: the call through _outputs and OutArgument
    # cost ~0.15 µs per call here, enough to put jac_site above mj_jacSite on small models
    if not (jacp is _JACP.array and jacr is _JACR.array and _JACP.shape == _JACR.shape == (3, m.nv)):
        jacp, jacr = _outputs(m, jacp, jacr)
    _JAC_FRAME.call(m._ptr, d._ptr, kind, i, jacp, jacr)
    return jacp, jacr


def jac_body(m, d, body: int, jacp=None, jacr=None) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of the origin of the body frame (mj_jacBody); ``jacp``, ``jacr`` as in :func:`jac`."""
    return _jac_frame(m, d, FRAME_BODY, body, jacp, jacr, "jac_body")


def jac_body_com(m, d, body: int, jacp=None, jacr=None) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of the body's centre of mass (mj_jacBodyCom); ``jacp``, ``jacr`` as in :func:`jac`."""
    return _jac_frame(m, d, FRAME_BODY_COM, body, jacp, jacr, "jac_body_com")


def jac_site(m, d, site: int, jacp=None, jacr=None) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of a site (mj_jacSite); ``jacp``, ``jacr`` as in :func:`jac`."""
    return _jac_frame(m, d, FRAME_SITE, site, jacp, jacr, "jac_site")


def jac_point(m, d, point, body: int, jacp=None, jacr=None) -> tuple[np.ndarray, np.ndarray]:
    """Alias of :func:`jac`: Jacobians of a world point attached to ``body``."""
    check_model_data(m, d, "jac_point")
    return jac(m, d, point, body, jacp, jacr)


@kernel
def xfrc_accumulate(
    # model
    body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
    # data in
    xfrc_applied, xipos, subtree_com, cdof,
    # data out
    qfrc,
):
    """qfrc += J(xipos_b)^T xfrc_applied_b for every body b (mj_xfrcAccumulate, mj_applyFT)."""
    nbody = body_rootid.shape[0]
    for b in range(1, nbody):
        f = xfrc_applied[b]
        if f[0] == 0.0 and f[1] == 0.0 and f[2] == 0.0 and f[3] == 0.0 and f[4] == 0.0 and f[5] == 0.0:
            continue
        r = body_rootid[b]
        ox = xipos[b, 0] - subtree_com[r, 0]
        oy = xipos[b, 1] - subtree_com[r, 1]
        oz = xipos[b, 2] - subtree_com[r, 2]
        # the first body at or above b that has dofs
        body = b
        while body > 0 and body_dofnum[body] == 0:
            body = body_parentid[body]
        if body == 0:
            continue
        v = body_dofadr[body] + body_dofnum[body] - 1
        # walk the dof ancestor chain: qfrc_v += jacp_v . force + jacr_v . torque
        while v >= 0:
            c = cdof[v]
            # jacp_v = cdof_lin + cdof_rot x offset
            jx = c[3] + c[1] * oz - c[2] * oy
            jy = c[4] + c[2] * ox - c[0] * oz
            jz = c[5] + c[0] * oy - c[1] * ox
            qfrc[v] += jx * f[0] + jy * f[1] + jz * f[2] + c[0] * f[3] + c[1] * f[4] + c[2] * f[5]
            v = dof_parentid[v]


@kernel
def apply_ft(m, d, fx, fy, fz, tx, ty, tz, px, py, pz, body, qfrc):
    """qfrc += jacp' f + jacr' t for the force f and torque t at world point p on ``body``
    (mj_applyFT: the force's part is added first, then the torque's)."""
    r = m.body_rootid[body]
    ox = px - d.subtree_com[r, 0]
    oy = py - d.subtree_com[r, 1]
    oz = pz - d.subtree_com[r, 2]
    while body > 0 and m.body_dofnum[body] == 0:
        body = m.body_parentid[body]
    if body == 0:
        return
    v = m.body_dofadr[body] + m.body_dofnum[body] - 1
    while v >= 0:
        c = d.cdof[v]
        # jacp_v = cdof_lin + cdof_rot x offset
        jx = c[3] + (c[1] * oz - c[2] * oy)
        jy = c[4] + (c[2] * ox - c[0] * oz)
        jz = c[5] + (c[0] * oy - c[1] * ox)
        qfrc[v] += jx * fx + jy * fy + jz * fz
        qfrc[v] += c[0] * tx + c[1] * ty + c[2] * tz
        v = m.dof_parentid[v]


@kernel
def integrate_pos_kernel(jnt_type, jnt_qposadr, jnt_dofadr, qpos, qvel, h, sq, sv):
    """qpos <- qpos (+) h qvel on the joint manifold (mj_integratePos); sq, sv: scratch rows."""
    QUAT, VEL, TMP = 0, 0, 1
    for j in range(jnt_type.shape[0]):
        padr = jnt_qposadr[j]
        vadr = jnt_dofadr[j]
        jtype = jnt_type[j]
        if jtype == JNT_FREE:
            for k in range(3):
                qpos[padr + k] += h * qvel[vadr + k]
            padr += 3
            vadr += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            # body-frame angular velocity: q <- q * exp(h w / 2)
            for k in range(4):
                sq[QUAT, k] = qpos[padr + k]
            for k in range(3):
                sv[VEL, k] = qvel[vadr + k]
            quat_integrate(sq, QUAT, sv, VEL, h, sq, TMP)
            for k in range(4):
                qpos[padr + k] = sq[QUAT, k]
        else:
            qpos[padr] += h * qvel[vadr]


@handle_entry
def _integrate_pos_entry(m, qpos, qvel, h, sq, sv):
    integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, qpos, qvel, h, sq, sv)


def integrate_pos(m, qpos: np.ndarray, qvel: np.ndarray, h: float) -> None:
    """In place qpos <- qpos (+) h qvel on the joint manifold (mj_integratePos).

    ``qpos`` must be a writeable C-contiguous float64 array of shape (nq,) (``d.qpos`` is);
    ``qvel`` anything that converts to (nv,) floats.
    """
    check_model(m, "integrate_pos")
    out_array(qpos, "integrate_pos: qpos", (m.nq,))
    qvel = float_array(qvel, "integrate_pos: qvel", (m.nv,))
    h = real_number("integrate_pos: h", h)
    _integrate_pos_entry(m._handle, qpos, qvel, h, np.empty((8, 4)), np.empty((8, 6)))


@handle_entry
def differentiate_pos_kernel(jnt_type, jnt_qposadr, jnt_dofadr, qvel, h, qpos1, qpos2, sq, sv):
    """qvel <- (qpos2 (-) qpos1) / h on the joint manifold (mj_differentiatePos); sq, sv: scratch rows.

    The inverse of ``integrate_pos_kernel``: qpos1 (+) h qvel = qpos2. Rotations are the
    body-frame rotation vector of conj(qpos1) qpos2 (the short way round).
    """
    A, B, TMP, VEL = 0, 1, 2, 0
    for j in range(jnt_type.shape[0]):
        padr = jnt_qposadr[j]
        vadr = jnt_dofadr[j]
        jtype = jnt_type[j]
        if jtype == JNT_FREE:
            for k in range(3):
                qvel[vadr + k] = (qpos2[padr + k] - qpos1[padr + k]) / h
            padr += 3
            vadr += 3
        if jtype == JNT_FREE or jtype == JNT_BALL:
            for k in range(4):
                sq[A, k] = qpos2[padr + k]
                sq[B, k] = qpos1[padr + k]
            sub_quat(sv, VEL, sq, A, sq, B, sq, TMP)
            for k in range(3):
                qvel[vadr + k] = sv[VEL, k] / h
        else:
            qvel[vadr] = (qpos2[padr] - qpos1[padr]) / h


@handle_entry
def _differentiate_pos_entry(m, qvel, h, qpos1, qpos2, sq, sv):
    differentiate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, qvel, h, qpos1, qpos2, sq, sv)


def differentiate_pos(m, qpos1: np.ndarray, qpos2: np.ndarray, h: float,
                      out: np.ndarray | None = None) -> np.ndarray:
    """The velocity that moves qpos1 to qpos2 in time h: (qpos2 (-) qpos1) / h (mj_differentiatePos).

    Hinge and slide coordinates and free-joint positions are plain differences; ball and
    free-joint rotations are body-frame rotation vectors, so that
    ``integrate_pos(m, qpos1, qvel, h)`` returns qpos2 (up to the quaternion's norm).
    Returns ``out`` (nv,) if given, else a new array.
    """
    check_model(m, "differentiate_pos")
    q1 = float_array(qpos1, "differentiate_pos: qpos1", (m.nq,))
    q2 = float_array(qpos2, "differentiate_pos: qpos2", (m.nq,))
    h = real_number("differentiate_pos: h", h)
    if not h:
        raise ValueError("differentiate_pos: h must be non-zero")
    if out is None:
        out = np.empty(m.nv)
    else:
        out_array(out, "differentiate_pos: out", (m.nv,))
    _differentiate_pos_entry(m._handle, out, h, q1, q2, np.empty((8, 4)), np.empty((8, 6)))
    return out


