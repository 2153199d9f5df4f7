# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Spring plasticity (MuJoCo 4.0's joint and tendon ``springyield``) vs MuJoCo.

Oracle: MuJoCo 4.0 on the same MJCF, at the oracle's tolerance: the compiled model (jnt_springyield
in radians for hinge and ball joints, jnt_plasticadr, tendon_plasticadr, key_plastic), the plastic
state at reset and at a keyframe, ``forward`` and ``inverse`` from a moved plastic state (the springs
and the energy read it), ``step`` under Euler, implicit, implicitfast and RK4 (the plastic state
moved after each step), and ``batch.rollout`` against ``mujoco.rollout`` (the packed state carries
plastic). A check on MuJoCo itself that the plastic state moves keeps the comparisons from passing
on a feature that does nothing.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout
from oracle import assert_fields, assert_model_fields, load_pair

import kinedyn as kd
from kinedyn.tools import batch

# a hinge (polynomial stiffness, springref), a ball and a slide yielding, a spatial tendon with a
# deadband and a fixed tendon with its length at qpos_spring, both yielding; a keyframe giving part of
# the plastic state
MODEL = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"><flag energy="enable"/></option>
  <worldbody>
    <site name="o" pos="0 0 0.3"/>
    <body>
      <joint name="h" type="hinge" axis="0 1 0" stiffness="5 1 2" springref="5" springyield="10" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
      <body pos="0.3 0 0">
        <joint name="b" type="ball" stiffness="3" springyield="12" damping="0.02"/>
        <geom type="sphere" size="0.05" pos="0.2 0 0"/>
      </body>
      <body pos="0.3 0 0">
        <joint name="s" type="slide" axis="1 0 0" stiffness="3" springyield="0.05"/>
        <geom type="sphere" size="0.05" pos="0.1 0 0.1"/>
        <site name="a"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t" stiffness="10" springlength="0.2 0.3" springyield="0.02"><site site="o"/><site site="a"/></spatial>
    <fixed name="f" stiffness="2" springyield="0.05"><joint joint="h" coef="1"/><joint joint="s" coef="-2"/></fixed>
  </tendon>
  <keyframe><key name="k" qpos="0.3 1 0 0 0 0.1" plastic="0.25 0.8 0.6"/></keyframe>
</mujoco>
"""

INTEGRATORS = ("Euler", "implicit", "implicitfast", "RK4")
QVEL = np.array([1.0, 2.0, -1.0, 0.5, 3.0])


@pytest.fixture(scope="module")
def pair():
    return load_pair(MODEL.format(integrator="Euler"), disable=False)


def test_model_matches_mujoco(pair):
    m, d, mjm, mjd = pair
    assert_model_fields(m, mjm)
    assert m.nplastic == mjm.nplastic == 10
    np.testing.assert_array_equal(d.plastic, mjd.plastic)  # at reset: qpos_spring, lengthspring


def test_plasticity_moves_mujoco():
    """On MuJoCo alone: the plastic state moves and changes the springs (the tests below can fail)."""
    mjm = mujoco.MjModel.from_xml_string(MODEL.format(integrator="Euler"))
    mjd = mujoco.MjData(mjm)
    mjd.qvel[:] = QVEL
    start = mjd.plastic.copy()
    for _ in range(100):
        mujoco.mj_step(mjm, mjd)
    moved = np.abs(mjd.plastic - start)
    for adr in (*mjm.jnt_plasticadr, *mjm.tendon_plasticadr):
        assert moved[adr:adr + 2].max() > 1e-3
    elastic = mujoco.MjModel.from_xml_string(MODEL.format(integrator="Euler"))
    elastic.jnt_springyield[:] = 1e9
    elastic.tendon_springyield[:] = 1e9
    ed = mujoco.MjData(elastic)
    ed.qvel[:] = QVEL
    for _ in range(100):
        mujoco.mj_step(elastic, ed)
    assert np.abs(ed.qpos - mjd.qpos).max() > 1e-3


def test_keyframe_and_reset(pair):
    m, d, mjm, mjd = pair
    kd.reset(m, d, "k")
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
    np.testing.assert_array_equal(d.plastic, mjd.plastic)
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    np.testing.assert_array_equal(d.plastic, mjd.plastic)


def test_forward_and_inverse_read_the_plastic_state(pair):
    m, d, mjm, mjd = pair
    rng = np.random.default_rng(2)
    for data in (d, mjd):
        data.qpos[:] = [0.2, 0.9, 0.1, -0.2, 0.3, 0.05]
        data.qvel[:] = QVEL
    plastic = mjd.plastic + rng.normal(scale=0.1, size=mjm.nplastic)
    plastic[1:5] /= np.linalg.norm(plastic[1:5])
    d.plastic[:], mjd.plastic[:] = plastic, plastic
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_spring", "qfrc_passive", "qacc", "energy", "ten_length"))
    d.qacc[:] = mjd.qacc[:] = rng.normal(size=mjm.nv)
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_step_matches_mujoco(integrator):
    m, d, mjm, mjd = load_pair(MODEL.format(integrator=integrator), disable=False)
    d.qvel[:] = mjd.qvel[:] = QVEL
    for _ in range(150):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "plastic", "qfrc_spring", "energy", "ten_length", "ten_J"))


def test_disabled_springs_keep_the_plastic_state():
    """With <flag spring="disable"/> the plastic state stays where it is, as MuJoCo's."""
    xml = MODEL.format(integrator="Euler").replace('<flag energy="enable"/>', '<flag spring="disable"/>')
    m, d, mjm, mjd = load_pair(xml, disable=False)
    d.qvel[:] = mjd.qvel[:] = QVEL
    for _ in range(50):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "plastic"))
    np.testing.assert_array_equal(d.plastic, kd.Data(m).plastic)


def test_rollout_matches_mujoco_rollout(pair):
    m, _, mjm, _ = pair
    nbatch, nstep = 2, 60
    assert batch.state_size(m) == mujoco.mj_stateSize(mjm, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    bd = batch.BatchData(m, nbatch)
    bd.qvel[0], bd.qvel[1] = QVEL, -QVEL
    state0 = batch.get_state(m, bd)
    ours = batch.rollout(m, state0, np.zeros((nbatch, nstep, 0)), nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0,
                                   np.zeros((nbatch, nstep, 0)))
    np.testing.assert_allclose(ours.state, theirs, rtol=1e-9, atol=1e-12)
    assert np.abs(theirs[:, -1, -mjm.nplastic:] - state0[:, -mjm.nplastic:]).max() > 1e-3



def test_linearize_reads_the_plastic_state(pair):
    """trajectory.linearize takes the packed state with its plastic part (kd.batch's layout) and
    gives transition_fd's matrices at each state, plastic state included; the plastic state moves
    the springs, so a linearisation that dropped it would differ."""
    m, _, _, _ = pair
    bd = batch.BatchData(m, 1)
    bd.qvel[0] = QVEL
    run = batch.rollout(m, batch.get_state(m, bd), np.zeros((1, 40, 0)))
    states = run.state[0, ::20]
    lin = kd.trajectory.linearize(m, states, np.zeros((len(states), 0)))
    slices = batch._state_slices(m)
    for t, state in enumerate(states):
        d = kd.Data(m)
        for name in ("qpos", "qvel", "act", "plastic"):
            getattr(d, name)[:] = state[slices[name]]
        np.testing.assert_array_equal(lin.A[t], kd.transition_fd(m, d).A)
    d.plastic[:] = 0.0
    assert np.abs(kd.transition_fd(m, d).A - lin.A[-1]).max() > 1e-6
    with pytest.raises(ValueError, match="plastic"):
        kd.trajectory.linearize(m, states[:, :-1], np.zeros((len(states), 0)))


def _mujoco_step_differences(mjm, mjd, eps):
    """A by forward differences of MuJoCo's own mj_step, each perturbed step started from the
    full physics state (plastic included), ctrl and warmstart: what mjd_transitionFD defines."""
    spec = (mujoco.mjtState.mjSTATE_FULLPHYSICS | mujoco.mjtState.mjSTATE_CTRL
            | mujoco.mjtState.mjSTATE_WARMSTART)
    start = np.zeros(mujoco.mj_stateSize(mjm, spec))
    mujoco.mj_getState(mjm, mjd, start, spec)
    work, nv = mujoco.MjData(mjm), mjm.nv

    def step(column):
        mujoco.mj_setState(mjm, work, start, spec)
        if column is not None and column < nv:
            mujoco.mj_integratePos(mjm, work.qpos, np.eye(nv)[column] * eps, 1.0)
        elif column is not None:
            work.qvel[column - nv] += eps
        mujoco.mj_step(mjm, work)
        return work.qpos.copy(), work.qvel.copy()

    qpos0, qvel0 = step(None)
    A = np.zeros((2 * nv, 2 * nv))
    for column in range(2 * nv):
        qpos, qvel = step(column)
        tangent = np.zeros(nv)
        mujoco.mj_differentiatePos(mjm, tangent, eps, qpos0, qpos)
        A[:nv, column] = tangent
        A[nv:, column] = (qvel - qvel0) / eps
    return A


def test_transition_fd_restores_the_plastic_state(pair):
    """kd.transition_fd starts every perturbed step from the plastic state too, and equals the
    differences of MuJoCo's own steps. MuJoCo 4.0's mjd_transitionFD does not restore it between
    its perturbed steps: at this state (no spring yields within eps) its A has entries ~1e5-1e6,
    which scale as 1/eps (docs/deviations.md)."""
    m, _, mjm, _ = pair
    mjd = mujoco.MjData(mjm)
    mjd.qvel[:] = 0.05 * QVEL
    for _ in range(30):
        mujoco.mj_step(mjm, mjd)
    d = kd.Data(m)
    for name in ("qpos", "qvel", "plastic", "qacc_warmstart"):
        getattr(d, name)[:] = getattr(mjd, name)
    ours = kd.transition_fd(m, d).A
    theirs = _mujoco_step_differences(mjm, mjd, 1e-6)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max())
    assert np.abs(theirs).max() < 100
    mj_fd = np.zeros_like(theirs)
    mujoco.mjd_transitionFD(mjm, mjd, 1e-6, 0, mj_fd, None, None, None)
    assert np.abs(mj_fd).max() > 1e4   # MuJoCo's own function: the plastic state not restored
