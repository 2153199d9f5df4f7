"""Numerical IK (ik.solve): FK(IK(x)) round trips, limits, manifold joints, FD Jacobians, bad input.

Reachable targets are made by FK of random joint positions inside the limits, so a
solution exists; success means every target within tol_pos (m) and tol_rot (rad),
and the returned pose is checked independently with kd.kinematics.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import gym_model_path
from strategies import random_state

import kinedyn as kd
from kinedyn import ik
from kinedyn.ik._kernel import _mat2quat

ARM3 = kd.models.load("arm3")
ARM7 = kd.models.load("arm7")
BIPED = kd.models.load("biped")
LEG_JOINTS = {s: [f"{s}_J{k}" for k in range(6)] for s in ("RLEG", "LLEG")}

BALL_XML = """
<mujoco>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="ball" range="0 2.0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04"/>
      <body name="lower" pos="0 0 -0.4">
        <joint name="elbow" axis="0 1 0" range="0 2.5"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
        <site name="hand" pos="0 0 -0.3"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def _fk(m, q):
    d = kd.Data(m)
    d.qpos[:] = q
    kd.kinematics(m, d)
    return d


def _quat(mat):
    """(w, x, y, z) of a rotation matrix."""
    q = np.empty(4)
    _mat2quat(np.ascontiguousarray(mat)[None], 0, q)
    return q


def _rot_angle(Ra, Rb):
    R = Ra.T @ Rb
    s = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return math.atan2(s, 0.5 * (np.trace(R) - 1.0))


def _within_limits(m, q, tol=1e-12):
    for j in range(m.njnt):
        if m.jnt_limited[j] and m.jnt_type[j] in (kd.JointType.HINGE, kd.JointType.SLIDE):
            lo, hi = m.jnt_range[j]
            a = m.jnt_qposadr[j]
            if not lo - tol <= q[a] <= hi + tol:
                return False
    return True


def _random_q(m, rng, joints=None):
    q, *_ = random_state(rng, m)
    if joints is not None:  # keep the other joints at qpos0
        out = m.qpos0.copy()
        for name in joints:
            j = m.joint(name).id
            a = m.jnt_qposadr[j]
            out[a] = q[a]
        q = out
    return q


# ---- round trips ------------------------------------------------------------------------------


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(["lm", "dls", "newton"]))
def test_arm3_position_round_trip(seed, method):
    rng = np.random.default_rng(seed)
    d = _fk(ARM3, _random_q(ARM3, rng))
    goal = d.site_xpos[0].copy()
    res = ik.solve(ARM3, ik.Target(site="ee", pos=goal), method=method)
    # dls keeps its damping at the goal, so it converges only linearly; next to the workspace
    # boundary (a singular arm) 100 steps may end short of 1e-6: bound it loosely there
    tol = 1e-3 if method == "dls" else 1e-6
    assert res.success or (method == "dls" and res.pos_error[0] <= tol), res
    assert np.linalg.norm(_fk(ARM3, res.qpos).site_xpos[0] - goal) <= tol
    assert _within_limits(ARM3, res.qpos)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
def test_arm7_pose_round_trip(seed):
    rng = np.random.default_rng(seed)
    d = _fk(ARM7, _random_q(ARM7, rng))
    goal_p, goal_R = d.site_xpos[0].copy(), d.site_xmat[0].copy()
    res = ik.solve(ARM7, ik.Target(site="ee", pos=goal_p, quat=_quat(goal_R)))
    assert res.success, res
    d2 = _fk(ARM7, res.qpos)
    assert np.linalg.norm(d2.site_xpos[0] - goal_p) <= 1e-6
    assert _rot_angle(d2.site_xmat[0], goal_R) <= 1e-6
    np.testing.assert_allclose(res.pos_error, np.linalg.norm(d2.site_xpos[0] - goal_p), atol=1e-15)
    assert _within_limits(ARM7, res.qpos)


def test_arm7_success_rate():
    """>= 99.5 % on 200 random reachable 6-D poses from qpos0."""
    rng = np.random.default_rng(3)
    ok = 0
    for _ in range(200):
        d = _fk(ARM7, _random_q(ARM7, rng))
        res = ik.solve(ARM7, ik.Target(site="ee", pos=d.site_xpos[0].copy(), quat=_quat(d.site_xmat[0])))
        ok += res.success
    assert ok >= 199


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), side=st.sampled_from(["RLEG", "LLEG"]))
def test_biped_leg_round_trip(seed, side):
    """One foot pose (6-D) with the leg's six joints; the rest of the robot stays put."""
    rng = np.random.default_rng(seed)
    q = _random_q(BIPED, rng, LEG_JOINTS[side])
    site = "r_sole" if side == "RLEG" else "l_sole"
    d = _fk(BIPED, q)
    s = BIPED.site(site).id
    res = ik.solve(BIPED, ik.Target(site=site, pos=d.site_xpos[s].copy(), quat=_quat(d.site_xmat[s])),
                   joints=LEG_JOINTS[side])
    assert res.success, res
    d2 = _fk(BIPED, res.qpos)
    assert np.linalg.norm(d2.site_xpos[s] - d.site_xpos[s]) <= 1e-6
    assert _rot_angle(d2.site_xmat[s], d.site_xmat[s]) <= 1e-6
    # joints outside the selection did not move
    other = np.ones(BIPED.nq, bool)
    for name in LEG_JOINTS[side]:
        other[BIPED.jnt_qposadr[BIPED.joint(name).id]] = False
    np.testing.assert_array_equal(res.qpos[other], BIPED.qpos0[other])
    assert _within_limits(BIPED, res.qpos)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1))
def test_biped_whole_body(seed):
    """Free torso + both legs: torso pose and both feet at once (three 6-D targets, 18 dofs)."""
    rng = np.random.default_rng(seed)
    q = _random_q(BIPED, rng)
    # torso near the start (LM is a local method; restarts do not move a free joint)
    q[:3] = BIPED.key_qpos[0, :3] + rng.uniform(-0.2, 0.2, 3)
    axis = rng.normal(size=3)
    angle = rng.uniform(0, 0.5)
    q[3:7] = np.r_[math.cos(angle / 2), math.sin(angle / 2) * axis / np.linalg.norm(axis)]
    d = _fk(BIPED, q)
    targets = [ik.Target(body="BODY", pos=d.xpos[1].copy(), quat=d.xquat[1].copy())]
    for site in ("r_sole", "l_sole"):
        s = BIPED.site(site).id
        targets.append(ik.Target(site=site, pos=d.site_xpos[s].copy(), quat=_quat(d.site_xmat[s]),
                                 weight=2.0))
    res = ik.solve(BIPED, targets, qpos=BIPED.key_qpos[0])
    assert res.success, res
    assert abs(np.linalg.norm(res.qpos[3:7]) - 1.0) < 1e-12
    assert res.pos_error.shape == (3,) and res.rot_error.shape == (3,)
    assert _within_limits(BIPED, res.qpos)


def test_pusher_7dof(rng):
    """gymnasium's pusher arm (7 hinges, limits), body target, arm joints only."""
    m = kd.Model.from_xml_path(gym_model_path("pusher"))
    arm = [m.id2name("jnt", j) for j in range(7)]
    b = m.body("tips_arm").id
    ok = 0
    for _ in range(20):
        d = _fk(m, _random_q(m, rng, arm))
        goal = ik.Target(body="tips_arm", pos=d.xpos[b].copy(), quat=d.xquat[b].copy())
        res = ik.solve(m, goal, joints=arm)
        ok += res.success
        if res.success:
            d2 = _fk(m, res.qpos)
            assert np.linalg.norm(d2.xpos[b] - d.xpos[b]) <= 1e-6
        assert _within_limits(m, res.qpos)
    assert ok >= 19


def test_ball_joint_on_the_manifold(rng):
    m = kd.Model.from_xml_string(BALL_XML)
    for _ in range(10):
        d = _fk(m, _random_q(m, rng))
        s = m.site("hand").id
        goal = d.site_xpos[s].copy()
        res = ik.solve(m, ik.Target(site="hand", pos=goal, quat=_quat(d.site_xmat[s])))
        assert res.success, res
        assert abs(np.linalg.norm(res.qpos[:4]) - 1.0) < 1e-12
        w = abs(res.qpos[0])
        assert 2 * math.acos(min(1.0, w)) <= 2.0 + 1e-9  # ball range respected
        assert np.linalg.norm(_fk(m, res.qpos).site_xpos[s] - goal) <= 1e-6


def test_posture_keeps_redundant_arm_near_posture(rng):
    """Position-only target on the 7-DoF arm: 4 redundant dofs; the posture task picks among them."""
    posture = np.array([0.3, 0.5, -0.2, -1.2, 0.1, 0.6, 0.0])
    q_goal = posture + rng.uniform(-0.2, 0.2, 7)
    goal = _fk(ARM7, q_goal).site_xpos[0].copy()
    with_p = ik.solve(ARM7, ik.Target(site="ee", pos=goal), qpos=posture, posture=posture, posture_gain=0.2)
    without = ik.solve(ARM7, ik.Target(site="ee", pos=goal), qpos=posture + 1.0)
    assert with_p.success and without.success
    assert np.linalg.norm(with_p.qpos - posture) < np.linalg.norm(without.qpos - posture)
    assert np.linalg.norm(with_p.qpos - posture) < np.linalg.norm(q_goal - posture) + 1e-9


# ---- failure modes ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["lm", "dls", "newton"])
def test_unreachable_gives_closest_pose(method):
    goal = np.array([0.0, 0.0, 2.0])  # reach is 0.8
    res = ik.solve(ARM3, ik.Target(site="ee", pos=goal), method=method, restarts=2)
    assert not res.success
    assert np.all(np.isfinite(res.qpos)) and np.all(np.isfinite(res.pos_error))
    assert _within_limits(ARM3, res.qpos)
    if method == "lm":
        np.testing.assert_allclose(res.pos_error[0], 2.0 - 0.8, atol=1e-4)


def test_unreachable_pose_of_arm3():
    """Arm straight up (full reach) forces identity orientation: a yawed goal there fails, finite."""
    goal = ik.Target(site="ee", pos=[0, 0, 0.8], quat=[math.cos(0.5), 0, 0, math.sin(0.5)])
    res = ik.solve(ARM3, goal, restarts=1)
    assert not res.success and np.all(np.isfinite(res.qpos))
    assert res.pos_error[0] + res.rot_error[0] > 0.1


def test_joint_limits_hold_when_goal_needs_more(rng):
    """A goal reachable only beyond the limits: the result stays inside them."""
    m = kd.models.load("arm3")
    q = np.array([2.9, 0.0, 0.0])  # j1 beyond its 2.5 limit
    goal = _fk(m, q).site_xpos[0].copy()
    res = ik.solve(m, ik.Target(site="ee", pos=goal), joints=["j1"], restarts=3)
    assert not res.success and _within_limits(m, res.qpos)
    assert res.qpos[0] == pytest.approx(2.5)


def test_bad_input():
    t = ik.Target(site="ee", pos=[0, 0, 0.5])
    with pytest.raises(KeyError, match="ee"):
        ik.solve(ARM3, ik.Target(site="ef", pos=[0, 0, 0.5]))
    with pytest.raises(KeyError, match="link1"):
        ik.solve(ARM3, ik.Target(body="link", pos=[0, 0, 0.5]))
    with pytest.raises(KeyError):
        ik.solve(ARM3, t, joints=["j9"])
    with pytest.raises(ValueError, match="qpos"):
        ik.solve(ARM3, t, qpos=np.zeros(4))
    with pytest.raises(ValueError, match="method"):
        ik.solve(ARM3, t, method="bfgs")
    with pytest.raises(ValueError, match=r"\(3,\)"):
        ik.Target(site="ee", pos=[0, 0])
    with pytest.raises(ValueError, match=r"\(4,\)"):
        ik.Target(site="ee", quat=[1, 0, 0])
    with pytest.raises(ValueError, match="exactly one"):
        ik.Target(site="ee", body="link1", pos=[0, 0, 0])
    with pytest.raises(ValueError, match="pos=, quat="):
        ik.Target(site="ee")
    with pytest.raises(ValueError, match="weight"):
        ik.Target(site="ee", pos=[0, 0, 0], weight=0)
    with pytest.raises(ValueError, match="at least one"):
        ik.solve(ARM3, [])


# ---- the Jacobian the steps use, against finite differences ------------------------------------


@pytest.mark.parametrize("which", ["biped", "ball", "arm7"])
def test_residual_jacobian_matches_finite_differences(which, rng):
    """e(q (+) h v) - e(q (+) -h v) = -2 h J v + O(h^3), on the joint manifold (free and ball joints too).

    Central differences with h = 1e-6: truncation ~h^2 = 1e-12, round-off ~1e-16/h = 1e-10,
    so 1e-7 absolute leaves a wide margin.
    """
    m = {"biped": BIPED, "ball": kd.Model.from_xml_string(BALL_XML), "arm7": ARM7}[which]
    site = {"biped": "r_sole", "ball": "hand", "arm7": "ee"}[which]
    q = _random_q(m, rng)
    qt = _random_q(m, rng)
    dt = _fk(m, qt)
    s = m.site(site).id
    targets = [ik.Target(site=site, pos=dt.site_xpos[s].copy(), quat=_quat(dt.site_xmat[s]), weight=3.0)]
    if which == "biped":
        targets.append(ik.Target(body="BODY", pos=[0, 0, 1], quat=[1, 0, 0, 0]))
    # away from the target only the position rows are exact derivatives: the rotation rows are
    # -jacr, the derivative of log(q* conj(q)) only to first order in the error (checked at the
    # target in test_rotation_rows_match_fd_at_the_target)
    e, J = ik.residual(m, targets, qpos=q)
    for _ in range(3):
        v = rng.normal(size=m.nv)
        h = 1e-6
        qp, qm = q.copy(), q.copy()
        kd.integrate_pos(m, qp, v, h)
        kd.integrate_pos(m, qm, v, -h)
        ep, _ = ik.residual(m, targets, qpos=qp)
        em, _ = ik.residual(m, targets, qpos=qm)
        fd = (ep - em) / (2 * h)
        # position rows are exact; rotation rows match -J up to the error's own size (left Jacobian of log)
        np.testing.assert_allclose(fd[0:3], -(J @ v)[0:3], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("which", ["biped", "arm7"])
def test_rotation_rows_match_fd_at_the_target(which, rng):
    """At the target orientation the rotation residual's derivative is exactly -jacr."""
    m = {"biped": BIPED, "arm7": ARM7}[which]
    site = {"biped": "r_sole", "arm7": "ee"}[which]
    q = _random_q(m, rng)
    d = _fk(m, q)
    s = m.site(site).id
    targets = [ik.Target(site=site, pos=d.site_xpos[s].copy(), quat=_quat(d.site_xmat[s]))]
    e, J = ik.residual(m, targets, qpos=q)
    assert np.abs(e).max() < 1e-12
    v = rng.normal(size=m.nv)
    h = 1e-6
    qp, qm = q.copy(), q.copy()
    kd.integrate_pos(m, qp, v, h)
    kd.integrate_pos(m, qm, v, -h)
    fd = (ik.residual(m, targets, qpos=qp)[0] - ik.residual(m, targets, qpos=qm)[0]) / (2 * h)
    np.testing.assert_allclose(fd, -(J @ v), rtol=1e-6, atol=1e-7)


def test_one_step_reduces_error_like_the_linear_model(rng):
    """A tiny Gauss-Newton step predicted by J: the residual shrinks as predicted to second order."""
    q = _random_q(ARM7, rng)
    d = _fk(ARM7, q + 0.01)
    t = ik.Target(site="ee", pos=d.site_xpos[0].copy(), quat=_quat(d.site_xmat[0]))
    e, J = ik.residual(ARM7, t, qpos=q)
    dq = np.linalg.lstsq(J, e, rcond=None)[0]
    q2 = q.copy()
    kd.integrate_pos(ARM7, q2, dq, 1.0)
    e2, _ = ik.residual(ARM7, t, qpos=q2)
    assert np.linalg.norm(e2) < 1e-2 * np.linalg.norm(e)
