"""Rigid-body derivatives: kd.rne_derivatives, kd.forward_derivatives, kd.inertia_regressor.

* Against Pinocchio (computeRNEADerivatives, computeABADerivatives, computeJointTorqueRegressor)
  at 1e-9 of each matrix's largest entry, on example-robot-data URDFs loaded into both: a fixed-base
  arm and floating-base legged robots, the base Pinocchio's JointModelFreeFlyer. Its tangent space
  differs from MuJoCo's free joint in the linear part: Pinocchio's base velocity is in the body
  frame and q <- q * exp6(v, w), MuJoCo's in the world frame, position += v, quat *= exp(w). So
  qvel = G v_pin, G = diag(R, I) (R the base orientation), qacc = G a_pin + c with
  c = ((R w) x v_world, 0), and qfrc = G tau_pin: the chain rule through G(q) and c(q, qvel)
  (``_freeflyer_reference``) turns Pinocchio's matrices into MuJoCo's tangent space. (Pinocchio's
  JointModelComposite(Translation, Spherical) has MuJoCo's tangent space directly, but Pinocchio
  4.1.0's computeRNEADerivatives disagrees with differences of its own rnea on it, by 18 on solo12.)
* Against centred differences of MuJoCo's own mj_inverse (qpos perturbed by mj_integratePos) on an
  MJCF model with what URDF lacks: ball joints, several joints on one body, armature, two trees.
* The refusal of models with terms the derivatives leave out.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from pinocchio_ref import pinocchio_ready as _pinocchio_ready
from pinocchio_ref import quat_matrix as _quat_matrix
from strategies import random_mjcf_text
from strategies import random_state as tree_state
from test_urdf import _drop_meshes, _erd_robots

import kinedyn as kd

# a 7-DoF arm (and its two finger slides), fixed base; a quadruped and a humanoid, floating base
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
}


def _close(ours, ref, what):
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9 * max(1.0, np.abs(ref).max()), err_msg=what)


def _sym(a):
    """Pinocchio fills the upper triangle of M (and M^-1) only."""
    return np.triu(a) + np.triu(a, 1).T


def load_pair(rel: str, floating: bool, workdir: Path):
    """kinedyn's model of the URDF (mesh geometry left out) and Pinocchio's, and the permutation T
    with Pinocchio's v = T qvel."""
    primitive = workdir / Path(rel).name
    primitive.write_text(_drop_meshes((_erd_robots() / rel).read_text()))
    m = kd.Model.from_urdf(primitive, floating_base=floating)
    root = [pin.JointModelFreeFlyer()] if floating else []
    pm = pin.buildModelFromUrdf(str(_pinocchio_ready(primitive)), *root)
    pm.gravity = pin.Motion(np.r_[m.opt.gravity, 0.0, 0.0, 0.0])
    assert pm.nv == m.nv
    T = np.zeros((m.nv, m.nv))
    for j, name in enumerate(m.names["jnt"]):
        joint = pm.joints[pm.getJointId(name)]
        da, n = m.jnt_dofadr[j], joint.nv
        T[joint.idx_v:joint.idx_v + n, da:da + n] = np.eye(n)
    return m, pm, T


def random_state(m, pm, rng):
    """kinedyn's (qpos, qvel, qacc) and Pinocchio's configuration of the same pose."""
    q = m.qpos0.copy()
    pq = pin.neutral(pm)
    for j, name in enumerate(m.names["jnt"]):
        joint = pm.joints[pm.getJointId(name)]
        qa, iq = m.jnt_qposadr[j], joint.idx_q
        if m.jnt_type[j] == kd.JointType.FREE:
            quat = rng.normal(size=4)
            q[qa:qa + 3], q[qa + 3:qa + 7] = rng.normal(size=3), quat / np.linalg.norm(quat)
            pq[iq:iq + 3], pq[iq + 3:iq + 7] = q[qa:qa + 3], q[qa + 3:qa + 7][[1, 2, 3, 0]]
            continue
        assert m.jnt_type[j] in (kd.JointType.HINGE, kd.JointType.SLIDE)
        theta = rng.uniform(-1.5, 1.5)
        q[qa] = theta
        if joint.nq == 2:  # Pinocchio's unbounded revolute joint: (cos, sin)
            pq[iq:iq + 2] = np.cos(theta), np.sin(theta)
        else:
            pq[iq] = theta
    return q, rng.normal(size=m.nv), rng.normal(size=m.nv), pq


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request, tmp_path_factory):
    rel, floating = ROBOTS[request.param]
    return load_pair(rel, floating, tmp_path_factory.mktemp(request.param))


def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _freeflyer_map(m, q, v):
    """For a free joint at dofs 0-5 (else the identity): G (qvel = G v_pin), dG[j] = dG/d(tangent j),
    c and its derivatives dc_dv (nv, nv), dc_dq (nv, nv), all in kinedyn's dof order."""
    nv = m.nv
    G, dG = np.eye(nv), np.zeros((nv, nv, nv))
    c, dc_dv, dc_dq = np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv))
    if m.nv < 6 or m.jnt_type[0] != kd.JointType.FREE:
        return G, dG, c, dc_dv, dc_dq
    R = _quat_matrix(q[3:7])
    w, vw = v[3:6], v[0:3]
    G[:3, :3] = R
    c[:3] = np.cross(R @ w, vw)
    dc_dv[:3, :3], dc_dv[:3, 3:6] = _skew(R @ w), -_skew(vw) @ R
    for k in range(3):  # base rotation about its own axis k: dR = R [e_k]x
        dR = R @ _skew(np.eye(3)[k])
        dG[:3, :3, 3 + k] = dR
        dc_dq[:3, 3 + k] = np.cross(dR @ w, vw)
    return G, dG, c, dc_dv, dc_dq


def _rnea_reference(m, pm, pdata, T, q, v, a, pq):
    """Pinocchio's computeRNEADerivatives in MuJoCo's tangent space: qfrc = G tau_pin(q, G^T qvel,
    G^T (qacc - c)), differentiated through G and c."""
    G, dG, c, dc_dv, dc_dq = _freeflyer_map(m, q, v)
    vp, ap = T @ G.T @ v, T @ G.T @ (a - c)
    pdq, pdv, pda = (T.T @ x @ T for x in pin.computeRNEADerivatives(pm, pdata, pq, vp, ap))
    M = _sym(pda)
    tau = T.T @ pin.rnea(pm, pdata, pq, vp, ap)
    dq = G @ pdq @ G.T - G @ M @ G.T @ dc_dq
    for j in range(m.nv):
        dq[:, j] += dG[:, :, j] @ tau + G @ (pdv @ dG[:, :, j].T @ v + M @ dG[:, :, j].T @ (a - c))
    return dq, G @ pdv @ G.T - G @ M @ G.T @ dc_dv, G @ M @ G.T


def _aba_reference(m, pm, pdata, T, q, v, qfrc, pq):
    """Pinocchio's computeABADerivatives in MuJoCo's tangent space:
    qacc = G ABA(q, G^T qvel, G^T qfrc) + c."""
    G, dG, c, dc_dv, dc_dq = _freeflyer_map(m, q, v)
    vp, taup = T @ G.T @ v, T @ G.T @ qfrc
    pdq, pdv, pdt = (T.T @ x @ T for x in pin.computeABADerivatives(pm, pdata, pq, vp, taup))
    pdt = _sym(pdt)
    ap = T.T @ pin.aba(pm, pdata, pq, vp, taup)
    dq = G @ pdq @ G.T + dc_dq
    for j in range(m.nv):
        dq[:, j] += dG[:, :, j] @ ap + G @ (pdv @ dG[:, :, j].T @ v + pdt @ dG[:, :, j].T @ qfrc)
    return dq, G @ pdv @ G.T + dc_dv, G @ pdt @ G.T


def test_rne_and_aba_derivatives_match_pinocchio(robot):
    m, pm, T = robot
    pdata = pm.createData()
    d = kd.Data(m)
    rng = np.random.default_rng(m.nv)
    for _ in range(2):
        q, v, a, pq = random_state(m, pm, rng)
        d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
        ours = kd.rne_derivatives(m, d, rigid_body_only=True)
        for k, ref in enumerate(_rnea_reference(m, pm, pdata, T, q, v, a, pq)):
            _close(ours[k], ref, ours._fields[k])
        # ABA at the generalised force that gives qacc = a
        qfrc = ours.dqfrc_dqacc @ a + kd.bias_forces(m, d)
        fwd = kd.forward_derivatives(m, d, rigid_body_only=True)
        for k, ref in enumerate(_aba_reference(m, pm, pdata, T, q, v, qfrc, pq)):
            _close(fwd[k], ref, fwd._fields[k])


def test_inertia_regressor_matches_pinocchio(robot):
    m, pm, T = robot
    pdata = pm.createData()
    d = kd.Data(m)
    q, v, a, pq = random_state(m, pm, np.random.default_rng(1))
    d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
    y = kd.inertia_regressor(m, d)
    assert y.shape == (m.nv, 10 * m.nbody)
    G, _, c, _, _ = _freeflyer_map(m, q, v)
    vp, ap = T @ G.T @ v, T @ G.T @ (a - c)
    py = G @ T.T @ pin.computeJointTorqueRegressor(pm, pdata, pq, vp, ap)
    theta = kd.inertia_parameters(m)
    # Pinocchio's joints are kinedyn's bodies with a joint (fixed links are fused in both)
    bodies = set()
    for j, name in enumerate(m.names["jnt"]):
        jid, b = pm.getJointId(name), int(m.jnt_bodyid[j])
        if b in bodies:
            continue
        bodies.add(b)
        cols = slice(10 * (jid - 1), 10 * jid)
        _close(y[:, 10 * b:10 * b + 10], py[:, cols], f"regressor of body {b}")
        _close(theta[10 * b:10 * b + 10], pm.inertias[jid].toDynamicParameters(), f"theta of body {b}")
    assert not np.any(y[:, :10])  # the world body
    # every body with mass has a joint of its own, so Y theta is the whole rigid-body force
    massive = {b for b in range(1, m.nbody) if m.body_mass[b] > 0}
    assert massive <= bodies
    _close(y @ theta, G @ T.T @ pin.rnea(pm, pdata, pq, vp, ap), "Y theta")


MJCF = """<mujoco><option gravity="0.3 -0.2 -9.81"/>
<default><geom contype="0" conaffinity="0"/></default>
<worldbody>
<body pos="0.1 0.2 0.3"><freejoint/><geom type="box" size=".1 .2 .15" mass="2"/>
  <body pos="0.2 0 0.1" quat="0.9 0.1 0.2 0.3"><joint type="ball" pos="0.01 0.02 0" armature="0.2"/>
    <geom type="capsule" size=".05 .2" pos="0.1 0 0.05" quat="1 .3 .2 .1"/>
    <body pos="0 0.3 0">
      <joint type="hinge" axis="1 0.3 0.2" pos="0.05 0 0"/><joint type="slide" axis="0 1 0.5"/>
      <geom type="box" size=".1 .05 .02" pos="0.03 0.1 0"/>
      <body pos="0.1 0.1 0"><geom type="sphere" size=".07" pos="0 0 0.1"/></body>
    </body>
  </body>
  <body pos="-0.2 0 0"><joint type="hinge" axis="0 0 1" armature="0.3"/>
    <geom type="box" size=".1 .05 .02" pos="0.03 0.1 0"/></body>
</body>
<body pos="1 1 1"><joint type="hinge" axis="0 1 0"/><geom type="sphere" size=".1" pos="0.2 0 0"/>
  <body pos="0.3 0 0"><joint type="ball"/><geom type="box" size=".1 .05 .02" pos="0.03 0.1 0"/></body>
</body>
</worldbody></mujoco>"""


def _centred_differences(mjm, force, q, v, a, nblocks: int, eps: float = 1e-5) -> np.ndarray:
    """Centred differences (step eps) of force(qpos, qvel, qacc) in qpos (on the tangent space,
    mj_integratePos), qvel and, with nblocks 3, qacc: (nblocks, nv, nv), column j for dof j."""
    nv = mjm.nv
    fd = np.zeros((nblocks, nv, nv))
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = eps
        qp, qm = q.copy(), q.copy()
        mujoco.mj_integratePos(mjm, qp, e, 1.0)
        mujoco.mj_integratePos(mjm, qm, -e, 1.0)
        fd[0, :, j] = force(qp, v, a) - force(qm, v, a)
        fd[1, :, j] = force(q, v + e, a) - force(q, v - e, a)
        if nblocks == 3:
            fd[2, :, j] = force(q, v, a + e) - force(q, v, a - e)
    return fd / (2 * eps)


def test_mjcf_joints_against_mujoco_differences():
    """Ball joints, a free joint, two joints on one body, armature, two trees: centred differences
    of mj_inverse (step 1e-5, error ~1e-10 here), and Y theta = qfrc_inverse - armature qacc."""
    m = kd.Model.from_xml_string(MJCF)
    mjm = mujoco.MjModel.from_xml_string(MJCF)
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(3)
    q = mjm.qpos0.copy()
    mujoco.mj_integratePos(mjm, q, rng.normal(size=mjm.nv), 1.0)
    v, a = rng.normal(size=mjm.nv), rng.normal(size=mjm.nv)

    def inverse(qpos, qvel, qacc):
        mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = qpos, qvel, qacc
        mujoco.mj_inverse(mjm, mjd)
        return mjd.qfrc_inverse.copy()

    fd = _centred_differences(mjm, inverse, q, v, a, 3)
    d = kd.Data(m)
    d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
    ours = kd.rne_derivatives(m, d)  # nothing left out: no refusal
    for k, name in enumerate(ours._fields):
        np.testing.assert_allclose(ours[k], fd[k], rtol=0, atol=1e-8 * np.abs(fd[k]).max(), err_msg=name)
    # the exact identities: dtau/dqacc = M, and Y theta = qfrc_inverse without the armature
    qfrc = inverse(q, v, a)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(mjm, mjd, full)
    _close(ours.dqfrc_dqacc, full, "M")
    y = kd.inertia_regressor(m, d)
    _close(y @ kd.inertia_parameters(m), qfrc - mjm.dof_armature * a, "Y theta")
    # dqacc/dqfrc is M^-1, and dqacc/dq = -M^-1 dtau/dq
    fwd = kd.forward_derivatives(m, d)
    _close(fwd.dqacc_dqfrc @ full, np.eye(m.nv), "M^-1 M")
    _close(fwd.dqacc_dq, -np.linalg.solve(full, ours.dqfrc_dq), "dqacc_dq")


@pytest.mark.parametrize("attr, expected", [
    ('<joint damping="0.5"/>', "passive dampers"),
    ('<joint stiffness="2"/>', "passive springs"),
    ('<joint limited="true" range="0 1"/>', "joint or tendon limits"),
    ('<geom contype="1" conaffinity="1"/>', "contacts"),
])
def test_refuses_terms_it_does_not_differentiate(attr, expected):
    xml = MJCF.replace('<default><geom contype="0" conaffinity="0"/></default>', f"<default>{attr}</default>")
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    for fn in (kd.rne_derivatives, kd.forward_derivatives):
        with pytest.raises(ValueError, match=expected):
            fn(m, d)
    kd.rne_derivatives(m, d, rigid_body_only=True)  # the rigid-body part on request
    with pytest.raises(TypeError, match="arguments swapped"):
        kd.rne_derivatives(d, m)


@pytest.mark.parametrize("seed", [9, 24, 35])
def test_random_trees_against_mujoco_rne_differences(seed):
    """Random trees (strategies.random_mjcf_text: hinges, slides, balls, free joints, several joints
    per body): centred differences of MuJoCo's mj_rne with acceleration (M qacc + bias without the
    armature, whatever else the tree carries), and Y theta = that force."""
    text = random_mjcf_text(seed)
    m = kd.Model.from_xml_string(text)
    mjm = mujoco.MjModel.from_xml_string(text)
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    q, v, _, _ = tree_state(rng, mjm)
    a = rng.normal(size=mjm.nv)

    def rne(qpos, qvel, qacc):
        mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = qpos, qvel, qacc
        mujoco.mj_fwdPosition(mjm, mjd)
        mujoco.mj_fwdVelocity(mjm, mjd)
        out = np.zeros(mjm.nv)
        mujoco.mj_rne(mjm, mjd, 1, out)
        return out

    fd = _centred_differences(mjm, rne, q, v, a, 2)
    d = kd.Data(m)
    d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
    ours = kd.rne_derivatives(m, d, rigid_body_only=True)
    for k in range(2):
        np.testing.assert_allclose(ours[k], fd[k], rtol=0, atol=1e-7 * max(1.0, np.abs(fd[k]).max()),
                                   err_msg=ours._fields[k])
    _close(kd.inertia_regressor(m, d) @ kd.inertia_parameters(m), rne(q, v, a), "Y theta")
