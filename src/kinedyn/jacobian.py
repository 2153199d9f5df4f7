"""Jacobians of points, bodies and sites (mj_jac, mj_jacBody, mj_jacSite, engine_support.c).

For a point p attached to body b, the translational Jacobian column of dof v is
``cdof_lin_v + cdof_rot_v x (p - subtree_com[root])`` and the rotational column is
``cdof_rot_v``, for every dof v on the path from b to its root; other columns are
zero. They need ``kinematics`` and ``com_pos`` to have run.
"""

from __future__ import annotations

import numpy as np

from kinedyn._handle import FastEntry, handle_entry, kernel


@kernel
def jac_kernel(
    # model
    body_rootid, body_dofnum, body_dofadr, body_parentid, dof_parentid,
    # data in
    subtree_com, cdof, px, py, pz, body,
    # data out: rows jp and jr of jac (n, 3, nv)
    jac, jp, jr,
):
    """jac[jp], jac[jr] = translational and rotational Jacobians of world point p on body (mj_jac)."""
    nv = jac.shape[2]
    for k in range(3):
        for v in range(nv):
            jac[jp, k, v] = 0.0
            jac[jr, k, v] = 0.0
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
        jac[jr, 0, v] = cdof[v, 0]
        jac[jr, 1, v] = cdof[v, 1]
        jac[jr, 2, v] = cdof[v, 2]
        # translation: cdof_lin + cdof_rot x offset
        jac[jp, 0, v] = cdof[v, 3] + cdof[v, 1] * oz - cdof[v, 2] * oy
        jac[jp, 1, v] = cdof[v, 4] + cdof[v, 2] * ox - cdof[v, 0] * oz
        jac[jp, 2, v] = cdof[v, 5] + cdof[v, 0] * oy - cdof[v, 1] * ox
        v = dof_parentid[v]


@handle_entry
def _jac_entry(m, d, point, body, jac):
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, point[0], point[1], point[2], body, jac, 0, 1)


# frames jac_frame_entry knows: the point is read in compiled code, not passed from Python
FRAME_BODY, FRAME_BODY_COM, FRAME_SITE = 0, 1, 2


@handle_entry
def _jac_frame_entry(m, d, kind, i, jac):
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
               d.subtree_com, d.cdof, point[0], point[1], point[2], body, jac, 0, 1)


_JAC = FastEntry(_jac_entry)
_JAC_FRAME = FastEntry(_jac_frame_entry)


def _check_id(kind: str, i, n: int) -> int:
    if type(i) is int and 0 <= i < n:  # the common case, checked first (per-call cost)
        return i
    if isinstance(i, str):  # a name where an id belongs: say how to get the id
        raise TypeError(f"{kind} must be an integer id, got the name {i!r}; use m.{kind}({i!r}).id")
    if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
        raise IndexError(f"{kind} id {i!r} out of range [0, {n})")
    return int(i)


def jac(m, d, point, body: int) -> tuple[np.ndarray, np.ndarray]:
    """Translational and rotational Jacobians, each (3, nv), of a world point moving with ``body``.

    Mirrors mj_jac. Needs kinematics and com_pos (or forward) to have run.
    """
    body = _check_id("body", body, m.nbody)
    point = np.ascontiguousarray(point, dtype=np.float64)
    if point.shape != (3,):
        raise ValueError(f"point must have shape (3,), got {point.shape}")
    jac = np.empty((2, 3, m.nv))
    _JAC.call(m._handle, d._handle, point, body, jac)
    return jac[0], jac[1]


def _jac_frame(m, d, kind: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    jac = np.empty((2, 3, m.nv))
    _JAC_FRAME.call(m._handle, d._handle, kind, i, jac)
    return jac[0], jac[1]


def jac_body(m, d, body: int) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of the origin of the body frame (mj_jacBody)."""
    return _jac_frame(m, d, FRAME_BODY, _check_id("body", body, m.nbody))


def jac_body_com(m, d, body: int) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of the body's centre of mass (mj_jacBodyCom)."""
    return _jac_frame(m, d, FRAME_BODY_COM, _check_id("body", body, m.nbody))


def jac_site(m, d, site: int) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians of a site (mj_jacSite)."""
    return _jac_frame(m, d, FRAME_SITE, _check_id("site", site, m.nsite))


def jac_point(m, d, point, body: int) -> tuple[np.ndarray, np.ndarray]:
    """Alias of :func:`jac`: Jacobians of a world point attached to ``body``."""
    return jac(m, d, point, body)
