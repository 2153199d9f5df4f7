"""Pinocchio as the reference for a URDF's dynamics: kinedyn's M and inverse dynamics against
Pinocchio's ``crba`` and ``rnea`` on the same pose, through the change of coordinates between the
two (joints matched by name). Used by tests/test_urdf.py and by the corpus (tests/corpus.py) for
the URDFs MuJoCo refuses and kinedyn loads as given (issue 26)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pinocchio as pin

import kinedyn as kd


def quat_matrix(quat) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def pin_state(pm, m, rng):
    """A random kinedyn state (q, v, a) and Pinocchio's configuration ``pq`` of the same pose, with the
    map of velocities between the two: Pinocchio's ``v = T qvel`` and ``a = T qacc + c`` (``c = Tdot
    qvel``), so that ``M = T^T M_pin T`` and ``M qacc + qfrc_bias = T^T rnea(pq, T v, T a + c)``.

    Joints are matched by name. Hinges and slides are the same coordinate (Pinocchio's unbounded
    revolute joint stores cos, sin). A free joint (Pinocchio's free flyer): qpos quaternion w, x, y, z
    against x, y, z, w; MuJoCo's linear velocity is in the world frame, Pinocchio's in the body frame
    (``R^T``), the angular velocity in the body frame in both; differentiating ``R^T`` gives
    ``c = -w x (R^T v_lin)``. A URDF planar joint (kinedyn: slides ``NAME_TX``, ``NAME_TY`` and hinge
    ``NAME_RZ``; Pinocchio: one joint, x, y, cos, sin) is the same in the plane: the slide velocities are
    in the parent frame, Pinocchio's in the child frame turned by the angle.
    """
    q, v, a = m.qpos0.copy(), rng.normal(size=m.nv), rng.normal(size=m.nv)
    pq = pin.neutral(pm)
    T, c = np.zeros((pm.nv, m.nv)), np.zeros(pm.nv)
    jt = kd.JointType
    names = m.names["jnt"]
    for j, name in enumerate(names):
        qa, da = m.jnt_qposadr[j], m.jnt_dofadr[j]
        if m.jnt_type[j] == jt.FREE:
            joint = pm.joints[pm.getJointId(name)]
            assert joint.shortname() == "JointModelFreeFlyer"
            quat = rng.normal(size=4)
            q[qa:qa + 3], q[qa + 3:qa + 7] = rng.normal(size=3), quat / np.linalg.norm(quat)
            iq, iv = joint.idx_q, joint.idx_v
            pq[iq:iq + 3], pq[iq + 3:iq + 7] = q[qa:qa + 3], q[qa + 3:qa + 7][[1, 2, 3, 0]]
            rt = quat_matrix(q[qa + 3:qa + 7]).T
            T[iv:iv + 3, da:da + 3], T[iv + 3:iv + 6, da + 3:da + 6] = rt, np.eye(3)
            c[iv:iv + 3] = -np.cross(v[da + 3:da + 6], rt @ v[da:da + 3])
            continue
        assert m.jnt_type[j] in (jt.HINGE, jt.SLIDE)
        if name.endswith(("_TX", "_TY", "_RZ")) and name[:-3] in pm.names:
            if name.endswith("_TX"):  # the planar joint's three kinedyn joints, at once
                joint = pm.joints[pm.getJointId(name[:-3])]
                assert joint.shortname() == "JointModelPlanar" and names[j + 1:j + 3] == [
                    name[:-3] + "_TY", name[:-3] + "_RZ"]
                x, y, theta = rng.normal(), rng.normal(), rng.uniform(-3, 3)
                q[qa:qa + 3] = x, y, theta
                iq, iv = joint.idx_q, joint.idx_v
                pq[iq:iq + 4] = x, y, np.cos(theta), np.sin(theta)
                rt = np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])
                T[iv:iv + 2, da:da + 2], T[iv + 2, da + 2] = rt, 1.0
                local = rt @ v[da:da + 2]
                c[iv:iv + 2] = v[da + 2] * local[1], -v[da + 2] * local[0]
            continue
        joint = pm.joints[pm.getJointId(name)]
        theta = rng.uniform(-1.5, 1.5)
        q[qa] = theta
        if joint.nq == 2:  # Pinocchio's unbounded revolute joint: (cos, sin)
            pq[joint.idx_q:joint.idx_q + 2] = np.cos(theta), np.sin(theta)
        else:
            pq[joint.idx_q] = theta
        T[joint.idx_v, da] = 1.0
    return q, v, a, pq, T, c


SINGULAR_M: list = []  # models whose ABA derivatives _derivatives_match could not compare (M singular)


def _close(ours, ref, what: str) -> float:
    """Assert ours == ref at 1e-9 of ref's largest entry; the difference relative to that entry."""
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9 * scale, err_msg=what)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


def _derivatives_match(m, d, pm, pdata, pq, T, v, a) -> float:
    """kd.rne_derivatives, kd.forward_derivatives and kd.inertia_regressor (Y theta) against
    Pinocchio's computeRNEADerivatives, computeABADerivatives and computeJointTorqueRegressor, for
    a constant map T (hinges and slides: a permutation), so that every Pinocchio matrix X becomes
    T^T X T. Pinocchio fills the upper triangle of M and M^-1 only."""
    d.qacc[:] = a
    worst = 0.0
    rne = kd.rne_derivatives(m, d, rigid_body_only=True)
    pdq, pdv, pda = pin.computeRNEADerivatives(pm, pdata, pq, T @ v, T @ a)
    pda = np.triu(pda) + np.triu(pda, 1).T
    for ours, ref, what in zip(rne, (pdq, pdv, pda), rne._fields, strict=True):
        worst = max(worst, _close(ours, T.T @ ref @ T, what))
    tau = T.T @ pin.rnea(pm, pdata, pq, T @ v, T @ a)
    worst = max(worst, _close(kd.inertia_regressor(m, d) @ kd.inertia_parameters(m), tau, "Y theta"))
    fwd = kd.forward_derivatives(m, d, rigid_body_only=True)  # at the force that gives qacc = a
    pdq, pdv, pdt = pin.computeABADerivatives(pm, pdata, pq, T @ v, T @ tau)
    pdt = np.triu(pdt) + np.triu(pdt, 1).T
    if not (np.isfinite(pdq).all() and np.isfinite(pdv).all() and np.isfinite(pdt).all()):
        # Pinocchio's ABA divides by each joint's articulated inertia, which a joint carrying only
        # massless links lacks (NaN there). Where M, with the rest of the tree, is still regular,
        # the reference is the implicit-function form of Pinocchio's own RNEA derivatives,
        # dqacc/dx = -M^-1 dtau/dx, dqacc/dtau = M^-1; where M is singular the forward dynamics is
        # not defined (MuJoCo refuses such models; kinedyn floors the pivots as mj_factorI does)
        if np.linalg.cond(pda) > 1e12:
            SINGULAR_M.append(m)
            return worst
        minv = np.linalg.inv(pda)
        rq, rv, _ = pin.computeRNEADerivatives(pm, pdata, pq, T @ v, T @ a)
        pdq, pdv, pdt = -minv @ rq, -minv @ rv, minv
    for ours, ref, what in zip(fwd, (pdq, pdv, pdt), fwd._fields, strict=True):
        worst = max(worst, _close(ours, T.T @ ref @ T, what))
    return worst


def assert_matches_pinocchio(m, path: Path, nstate: int = 2, seed: int = 0, root_joint=None,
                             derivatives: bool = False) -> float:
    """kd.full_m and M qacc + qfrc_bias equal Pinocchio's crba and rnea (1e-9 of the largest entry),
    through the change of coordinates of :func:`pin_state`; ``root_joint`` as Pinocchio's. With
    ``derivatives``, on models of hinges and slides only (a constant change of coordinates), also
    the rigid-body derivatives (issue 25, item 3) through :func:`_derivatives_match`. Returns the
    largest difference relative to its quantity's largest entry."""
    pm = pin.buildModelFromUrdf(str(path), *([root_joint] if root_joint is not None else []))
    pm.gravity = pin.Motion(np.r_[m.opt.gravity, 0.0, 0.0, 0.0])  # the <mujoco><option> gravity
    pdata = pm.createData()
    assert pm.nv == m.nv
    d = kd.Data(m)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(nstate):
        q, v, a, pq, T, c = pin_state(pm, m, rng)
        d.qpos[:], d.qvel[:] = q, v
        kd.forward(m, d)
        M = kd.full_m(m, d)
        pM = pin.crba(pm, pdata, pq)
        pM = np.triu(pM) + np.triu(pM, 1).T
        theirs = T.T @ pM @ T
        np.testing.assert_allclose(M, theirs, rtol=0, atol=1e-9 * max(1.0, np.abs(pM).max()), err_msg="M")
        tau = T.T @ pin.rnea(pm, pdata, pq, T @ v, T @ a + c)
        ours = M @ a + d.qfrc_bias
        np.testing.assert_allclose(ours, tau, rtol=0, atol=1e-9 * max(1.0, np.abs(tau).max()),
                                   err_msg="inverse dynamics")
        worst = max(worst, np.abs(M - theirs).max() / max(np.abs(theirs).max(), 1e-300),
                    np.abs(ours - tau).max() / max(np.abs(tau).max(), 1e-300))
        if derivatives:
            assert not np.any(c), "derivatives: only for hinges and slides (a constant map)"
            worst = max(worst, _derivatives_match(m, d, pm, pdata, pq, T, v, a))
    return float(worst)


def pinocchio_ready(path: Path) -> Path:
    """A copy Pinocchio reads as MuJoCo does: a robot name (urdfdom requires one), and no inertia on
    massless links (MuJoCo drops it when fusing a massless fixed link; Pinocchio keeps it)."""
    text = path.read_text()
    text = re.sub(r"<robot(?=[\s>])(?![^>]*\bname=)", '<robot name="robot"', text, count=1)

    def massless(mt: re.Match) -> str:
        inertial = mt.group(0)
        mass = re.search(r'<mass\s+value\s*=\s*"([^"]*)"', inertial)
        if mass and float(mass.group(1)) == 0:
            zero = '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>'
            inertial = re.sub(r"<inertia\b[^>]*/>", zero, inertial)
        return inertial

    text = re.sub(r"<inertial>.*?</inertial>", massless, text, flags=re.S)
    out = path.with_name(path.stem + "_pin.urdf")
    out.write_text(text)
    return out
