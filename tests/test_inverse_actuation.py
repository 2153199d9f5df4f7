"""kinedyn.tools.inverse_actuation: controls that reproduce a requested qacc, checked by forward passes.

Oracle: the controls found are put into kd.forward *and* mujoco.mj_forward on the same
state; where the request is reachable (it was produced by forward from random controls)
both must give back the requested qacc at the oracle's bar (1e-9 relative, 1e-12 absolute).
Where it is not reachable (a random qacc, a saturating request) the reported residual
must equal the unmet generalized force that MuJoCo's own forward pass leaves, and no
feasible control may do better.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import pair
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import assert_close, load_pair, model_file, model_paths, set_same_state
from strategies import random_mjcf, random_state

import kinedyn as kd
from kinedyn.tools.inverse_actuation import inverse_actuation

MODELS = [pytest.param(("path", str(p)), id=p.stem) for p in model_paths()]
RANDOM = [pytest.param(("seed", s), id=f"seed{s}") for s in range(0, 40, 5)]


def _target(m, mjm, mjd, qacc):
    """MuJoCo's required actuator force: mj_inverse's qfrc_inverse minus the applied forces."""
    mjd.qacc[:] = qacc
    mujoco.mj_inverse(mjm, mjd)
    applied = mjd.qfrc_applied.copy()
    for b in range(1, mjm.nbody):
        force, torque = mjd.xfrc_applied[b, :3], mjd.xfrc_applied[b, 3:]
        mujoco.mj_applyFT(mjm, mjd, force, torque, mjd.xipos[b], b, applied)
    return mjd.qfrc_inverse - applied


def _apply_and_check(m, d, mjm, mjd, sol, qacc):
    """Put sol.ctrl into both forward passes; both must reproduce qacc."""
    d.ctrl[:] = sol.ctrl
    mjd.ctrl[:] = sol.ctrl
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    scale = 1e-9 * np.abs(qacc).max(initial=0.0)
    assert_close("kd.forward qacc with inverse_actuation's ctrl", d.qacc, qacc, atol=1e-12 + scale)
    assert_close("mj_forward qacc with inverse_actuation's ctrl", mjd.qacc, qacc, atol=1e-12 + scale)
    assert_close("qfrc_actuator reported vs forward", sol.qfrc_actuator, mjd.qfrc_actuator)


@pytest.mark.parametrize("source", MODELS + RANDOM)
def test_reachable_qacc_is_reproduced(source):
    """qacc produced by random controls (and external forces): the controls found reproduce it."""
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(11)
    for _ in range(4):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        xfrc = rng.normal(size=(mjm.nbody, 6))
        xfrc[0] = 0.0
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qfrc_applied=rng.normal(size=mjm.nv),
                       xfrc_applied=xfrc)
        mujoco.mj_forward(mjm, mjd)
        qacc = mjd.qacc.copy()
        sol = inverse_actuation(m, d, qacc=qacc)
        assert sol.exact, f"reachable request reported inexact, residual {sol.residual:g}"
        # the target is a difference of forces (it cancels to round-off when nu = 0): judge it
        # at the scale of the terms, mj_inverse's qfrc_inverse
        target = _target(m, mjm, mjd, qacc)
        assert_close("qfrc_target vs mj_inverse - applied", sol.qfrc_target, target,
                     atol=1e-12 + 1e-9 * np.abs(mjd.qfrc_inverse).max(initial=0.0))
        # inverse_actuation must leave the state alone
        np.testing.assert_array_equal(d.ctrl, ctrl)
        _apply_and_check(m, d, mjm, mjd, sol, qacc)


@pytest.mark.parametrize("source", MODELS + RANDOM)
def test_unreachable_qacc_residual_is_what_forward_leaves(source):
    """A random qacc: the residual is the unmet force of MuJoCo's forward pass, and is minimal."""
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(12)
    for _ in range(3):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        qacc = rng.normal(scale=5.0, size=mjm.nv)
        sol = inverse_actuation(m, d, qacc=qacc)
        target = _target(m, mjm, mjd, qacc)
        mjd.ctrl[:] = sol.ctrl
        mujoco.mj_forward(mjm, mjd)
        unmet = float(np.linalg.norm(target - mjd.qfrc_actuator))
        assert abs(sol.residual - unmet) <= 1e-9 * max(1.0, unmet), (sol.residual, unmet)
        # no random feasible control does better (joint/tendon sum clamps excepted: heuristic there)
        if m.jnt_actfrclimited.any() or m.tendon_actfrclimited.any():
            continue
        for _ in range(20):
            trial = rng.uniform(np.maximum(sol.lower, -10.0), np.minimum(sol.upper, 10.0))
            mjd.ctrl[:] = trial
            mujoco.mj_forward(mjm, mjd)
            other = float(np.linalg.norm(target - mjd.qfrc_actuator))
            assert sol.residual <= other * (1 + 1e-9) + 1e-12, (sol.residual, other, trial)


def test_saturation_reports_residual():
    """A motor with ctrlrange and forcerange asked for more than it can give."""
    xml = """<mujoco><option><flag constraint="disable" contact="disable"/></option>
      <worldbody><body><joint name="j" axis="0 1 0"/><geom size=".1" pos=".3 0 0" mass="2"/></body>
      </worldbody>
      <actuator><motor name="m" joint="j" gear="3" ctrlrange="-1 1"/>
                <motor name="f" joint="j" ctrlrange="-100 100" forcerange="-0.5 0.5"/></actuator></mujoco>"""
    m, d, mjm, mjd = pair(xml, "saturating motor")
    set_same_state(m, d, mjm, mjd, np.array([0.4]), np.array([0.3]))
    target_force = 50.0
    sol = inverse_actuation(m, d, qfrc=np.array([target_force]))
    np.testing.assert_allclose(sol.ctrl, [1.0, 0.5])  # 3 * 1 + 0.5 = 3.5 N m at most
    assert sol.saturated.tolist() == [True, True]
    assert not sol.exact
    mjd.ctrl[:] = sol.ctrl
    mujoco.mj_forward(mjm, mjd)
    assert_close("achieved", sol.qfrc_actuator, mjd.qfrc_actuator)
    assert sol.residual == pytest.approx(target_force - 3.5, rel=1e-12)
    # within reach: exact, nothing saturated, minimum-norm split between the two motors
    sol = inverse_actuation(m, d, qfrc=np.array([1.0]))
    assert sol.exact and not sol.saturated.any()
    np.testing.assert_allclose(sol.ctrl, np.linalg.pinv(np.array([[3.0, 1.0]])) @ [1.0], rtol=1e-12)


def test_delayed_actuators_have_no_instant_effect():
    """filter without actearly: ctrl cannot change this instant's force; with actearly it can."""
    xml = """<mujoco><option timestep="0.01"><flag constraint="disable" contact="disable"/></option>
      <worldbody><body><joint axis="0 1 0"/><geom size=".1" pos=".3 0 0" mass="2"/></body></worldbody>
      <actuator><general name="late" joint="0" dyntype="filter" dynprm="0.1"/>
                <general name="early" joint="0" dyntype="filter" dynprm="0.1" actearly="true"/></actuator>
      </mujoco>""".replace('joint="0"', 'joint="j"').replace("<joint ", '<joint name="j" ')
    m, d, mjm, mjd = pair(xml, "filters")
    set_same_state(m, d, mjm, mjd, np.array([0.2]), np.array([0.0]), act=np.array([0.7, -0.2]))
    sol = inverse_actuation(m, d, qfrc=np.array([2.0]))
    assert sol.effective.tolist() == [False, True]
    assert sol.gain[0] == 0.0
    assert sol.ctrl[0] == 0.7  # holds the activation
    assert sol.exact
    mjd.ctrl[:] = sol.ctrl
    mujoco.mj_forward(mjm, mjd)
    assert_close("qfrc_actuator", mjd.qfrc_actuator, [2.0])


def test_leaves_qacc_and_ctrl_and_uses_d_qacc_by_default():
    m, d, mjm, mjd = _load(("path", str(model_file("actuatorfrcrange"))))
    rng = np.random.default_rng(3)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    kd.forward(m, d)
    qacc = d.qacc.copy()
    sol_default = inverse_actuation(m, d)
    sol_given = inverse_actuation(m, d, qacc=qacc)
    np.testing.assert_array_equal(sol_default.ctrl, sol_given.ctrl)
    np.testing.assert_array_equal(d.qacc, qacc)
    np.testing.assert_array_equal(d.ctrl, ctrl)


def test_bad_arguments():
    m, d, _, _ = _load(("path", str(model_file("actuatorfrcrange"))))
    with pytest.raises(ValueError, match="not both"):
        inverse_actuation(m, d, qacc=np.zeros(m.nv), qfrc=np.zeros(m.nv))
    with pytest.raises(ValueError, match="qacc"):
        inverse_actuation(m, d, qacc=np.zeros(m.nv + 1))
    with pytest.raises(ValueError, match="qfrc"):
        inverse_actuation(m, d, qfrc=np.full(m.nv, np.nan))


def test_actearly_activation_range_bounds_the_control():
    """filter + actearly + actrange: act_next = act + h (u - act) / tau must stay in actrange."""
    xml = """<mujoco><option timestep="0.01"><flag constraint="disable" contact="disable"/></option>
      <worldbody><body><joint name="j" axis="0 1 0"/><geom size=".1" pos=".3 0 0" mass="2"/></body>
      </worldbody><actuator><general name="early" joint="j" dyntype="filter" dynprm="0.1" actearly="true"
      actlimited="true" actrange="-0.5 0.5" gainprm="4"/></actuator></mujoco>"""
    m, d, mjm, mjd = pair(xml, "filter with actearly and actrange")
    set_same_state(m, d, mjm, mjd, np.array([0.2]), np.array([0.0]), act=np.array([0.3]))
    sol = inverse_actuation(m, d, qfrc=np.array([100.0]))
    # act_next = 0.3 + 0.1 (u - 0.3) reaches 0.5 at u = 2.3; force 4 * 0.5
    assert sol.ctrl[0] == pytest.approx(2.3, rel=1e-12)
    assert sol.saturated.tolist() == [True]
    mjd.ctrl[:] = sol.ctrl
    mujoco.mj_forward(mjm, mjd)
    assert_close("qfrc_actuator at the activation bound", mjd.qfrc_actuator, [2.0])
    assert sol.residual == pytest.approx(98.0, rel=1e-12)


@settings(max_examples=15, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_reachable_qacc_is_reproduced_hypothesis(xml, state_seed):
    m, d, mjm, mjd = load_pair(xml)
    rng = np.random.default_rng(state_seed)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    mujoco.mj_forward(mjm, mjd)
    qacc = mjd.qacc.copy()
    sol = inverse_actuation(m, d, qacc=qacc)
    assert sol.exact, sol.residual
    _apply_and_check(m, d, mjm, mjd, sol, qacc)


def test_muscle_with_actearly_is_held_not_guessed():
    """A muscle's activation rate is not affine in ctrl: with actearly it is reported as not effective."""
    xml = """<mujoco><option><flag constraint="disable" contact="disable"/></option>
      <worldbody><body><joint name="j" axis="0 1 0" range="0 2"/><geom size=".1" pos=".3 0 0" mass="2"/>
      </body></worldbody>
      <actuator><general name="mu" joint="j" lengthrange="0 2" actearly="true" dyntype="muscle"
                 gaintype="muscle" biastype="muscle" dynprm="0.01 0.04"
                 gainprm="0.75 1.05 10 200 0.5 1.6 1.5 1.3 1.2"
                 biasprm="0.75 1.05 10 200 0.5 1.6 1.5 1.3 1.2"/>
                <motor name="mo" joint="j"/></actuator></mujoco>"""
    m, d, mjm, mjd = pair(xml, "muscle with actearly")
    set_same_state(m, d, mjm, mjd, np.array([1.0]), np.array([0.1]), act=np.array([0.4]))
    sol = inverse_actuation(m, d, qfrc=np.array([1.5]))
    assert sol.effective.tolist() == [False, True]
    assert sol.ctrl[0] == 0.4
    assert sol.exact
    mjd.ctrl[:] = sol.ctrl
    mujoco.mj_forward(mjm, mjd)
    scale = np.abs(mjd.actuator_force).max()
    assert_close("qfrc_actuator", mjd.qfrc_actuator, [1.5], atol=1e-12 + 1e-9 * scale)
