"""kinedyn.tools.batch: BatchData and the batched forward/step/inverse/jac_site, and rollout.

Oracles:
* batched calls must equal single-state calls on copies of each member *bit for bit*
  (they run the same jitted entries);
* ``batch.rollout`` must equal ``mujoco.rollout.rollout`` on the same model, initial
  states and controls, elementwise |ours - mujoco| <= 1e-9 (1 + |mujoco|) on every
  step's [time, qpos, qvel, act], with Euler and implicitfast on every source and RK4
  on a chosen few (the humanoid and ant exercise its free/ball rotations);
* a member that goes non-finite behaves as in mujoco's rollout (warning, reset, then
  held), the others are untouched.
"""

from __future__ import annotations

import mujoco
import numba
import numpy as np
import pytest
from cases import load, pair, sources
from mujoco import rollout as mj_rollout
from oracle import gym_model_path
from strategies import random_state

import kinedyn as kd
from kinedyn.engine.fields import DATA_FIELDS
from kinedyn.tools import batch

NBATCH = 5
ROLLOUT_STEPS = 60
RTOL = 1e-9
INTEGRATORS = {"euler": kd.IntegratorType.EULER, "implicitfast": kd.IntegratorType.IMPLICITFAST,
               "rk4": kd.IntegratorType.RK4}
FULLPHYSICS = mujoco.mjtState.mjSTATE_FULLPHYSICS


def _humanoid():
    return pair(gym_model_path("humanoid").read_text(), "gymnasium humanoid.xml")


@pytest.fixture
def humanoid_euler():
    """The humanoid with Euler on both sides (the cheapest step: these tests are about batching)."""
    m, d, mjm, mjd = _humanoid()
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = kd.IntegratorType.EULER
    mjm.opt.integrator = int(kd.IntegratorType.EULER)
    yield m, d, mjm, mjd
    m.opt.integrator, mjm.opt.integrator = saved


def _random_batch(m, mjm, bd, rng):
    """Random qpos, qvel, ctrl, act, qacc (for inverse) and applied forces in every member."""
    for i in range(bd.nbatch):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        bd.qpos[i], bd.qvel[i], bd.ctrl[i], bd.act[i] = qpos, qvel, ctrl, act
    bd.qacc = rng.normal(size=bd.qacc.shape)
    bd.qfrc_applied = rng.normal(size=bd.qfrc_applied.shape)
    bd.time = rng.uniform(0, 1, size=bd.nbatch)


def _assert_members_equal(bd, singles):
    for i, d in enumerate(singles):
        for spec in DATA_FIELDS:
            np.testing.assert_array_equal(getattr(bd, spec.name)[i], d._array(spec.name),
                                          err_msg=f"member {i} field {spec.name}")
        assert bd.time[i] == d.time


# ---- BatchData ---------------------------------------------------------------------------------


def test_batchdata_fields_are_views_of_members():
    m, _, _, _ = _humanoid()
    bd = batch.BatchData(m, 3)
    assert len(bd) == 3 and bd.qpos.shape == (3, m.nq) and bd.xmat.shape == (3, m.nbody, 3, 3)
    np.testing.assert_array_equal(bd.qpos, np.tile(m.qpos0, (3, 1)))
    bd[1].qvel[:] = 2.0                      # a member's write shows in the batch array
    assert np.all(bd.qvel[1] == 2.0) and np.all(bd.qvel[[0, 2]] == 0.0)
    bd.ctrl = np.arange(m.nu)                # broadcast assignment reaches every member
    np.testing.assert_array_equal(bd[2].ctrl, np.arange(m.nu))
    bd.time = [0.5, 1.0, 1.5]
    assert bd[2].time == 1.5 and bd[-1] is bd[2]
    bd[0].time = 3.0
    assert bd.time[0] == 3.0
    # members have their own scratch: distinct memory
    assert not np.shares_memory(bd[0].scratch_nv_a, bd[1].scratch_nv_a)


def test_batchdata_bad_input():
    m, _, _, _ = _humanoid()
    bd = batch.BatchData(m, 2)
    with pytest.raises(ValueError, match="qpos"):
        bd.qpos = np.zeros((3, m.nq))
    with pytest.raises(AttributeError, match="qpoz"):
        bd.qpoz = 0
    with pytest.raises(IndexError):
        bd[2]
    with pytest.raises(ValueError, match="nbatch"):
        batch.BatchData(m, 0)
    with pytest.raises(ValueError, match="nthread"):
        batch.forward(m, bd, nthread=0)
    with pytest.raises(IndexError, match="site"):
        batch.jac_site(m, bd, m.nsite)
    other, _, _, _ = pair(gym_model_path("ant").read_text(), "gymnasium ant.xml")
    with pytest.raises(ValueError, match=f"nq={m.nq} nv={m.nv}, not this one \\(nq={other.nq}"):
        batch.forward(other, bd)
    with pytest.raises(TypeError, match="BatchData"):
        batch.forward(m, bd[0])


# ---- batched pipeline == single calls -----------------------------------------------------------


@pytest.mark.parametrize("source", [s for s in sources(seeds=(0, 8)) if s.id in (
    "gym-humanoid", "gym-ant", "muscle_spatial_tendon", "site_push_cubes", "seed0", "seed8")])
def test_batch_pipeline_equals_single_calls(source, rng):
    m, _, mjm, _ = load(source)
    bd = batch.BatchData(m, NBATCH)
    _random_batch(m, mjm, bd, rng)
    singles = [bd[i].copy() for i in range(NBATCH)]

    batch.forward(m, bd, nthread=2)
    for d in singles:
        kd.forward(m, d)
    _assert_members_equal(bd, singles)

    if m.nsite:
        site = m.nsite - 1
        jacp, jacr = batch.jac_site(m, bd, site)
        for i, d in enumerate(singles):
            p, r = kd.jac_site(m, d, site)
            np.testing.assert_array_equal(jacp[i], p)
            np.testing.assert_array_equal(jacr[i], r)

    batch.inverse(m, bd, nthread=1)
    for d in singles:
        kd.inverse(m, d)
    _assert_members_equal(bd, singles)

    batch.step(m, bd, nstep=3, nthread=2)
    for d in singles:
        kd.step(m, d, 3)
    _assert_members_equal(bd, singles)


def test_batch_step_nonfinite_member_resets_like_single_step(rng):
    m, _, mjm, _ = _humanoid()
    bd = batch.BatchData(m, 3)
    _random_batch(m, mjm, bd, rng)
    bd.qvel[1, 4] = 1e20
    singles = [bd[i].copy() for i in range(3)]
    with pytest.warns(kd.NonFiniteStateWarning, match=r"qvel\[4\]"):
        batch.step(m, bd, nstep=2)
    with pytest.warns(kd.NonFiniteStateWarning):
        for d in singles:
            kd.step(m, d, 2)
    _assert_members_equal(bd, singles)
    assert bd.time[1] == pytest.approx(2 * m.opt.timestep)   # reset to t = 0, then stepped on


# ---- rollout == mujoco.rollout ------------------------------------------------------------------


def _initial_states(m, mjm, rng, nbatch):
    bd = batch.BatchData(m, nbatch)
    _random_batch(m, mjm, bd, rng)
    bd.qvel *= 0.3                           # keep most models within MuJoCo's stable range
    return batch.get_state(m, bd)


def _mujoco_rollout(mjm, state0, control, nthread):
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    state, _ = mj_rollout.rollout(mjm, datas, state0, control)
    return state


def _assert_trajectories_match(ours, theirs, label):
    """Every step within RTOL, except the run-up to a blow-up after which MuJoCo reset a member.

    When MuJoCo's state blows up (mjWARN_BAD*), its rollout resets the member, finishes
    that step from the reset state and holds it. Just before a blow-up the dynamics
    amplify round-off without bound, so for such members only the reset step and the
    held state are compared (as test_integrate skips rollouts where MuJoCo went unstable).
    """
    for i in range(theirs.shape[0]):
        resets = np.flatnonzero(np.diff(theirs[i, :, 0]) < 0) + 1   # time went back: reset
        if resets.size:
            t = int(resets[0])
            assert np.all(ours[i, t:, 0] == theirs[i, t, 0]), f"{label}: member {i} not reset at step {t}"
            compared = ours[i, t:], theirs[i, t:]
        else:
            compared = ours[i], theirs[i]
        err = np.abs(compared[0] - compared[1]) / (1.0 + np.abs(compared[1]))
        worst = np.unravel_index(np.argmax(err), err.shape)
        assert err.max() <= RTOL, f"{label}: member {i} rel. error {err.max():.2e} at (step, entry) {worst}"


def _rollout_params():
    chosen = ("gym-humanoid", "gym-pusher", "gym-ant", "seed0", "seed4")
    out = []
    for src in sources(seeds=(0, 4)):
        shared = src.values[0][0] == "path"
        if shared or src.id in chosen:
            for name in INTEGRATORS:
                if name == "rk4" and src.id not in chosen:
                    continue  # RK4 (4 forward passes a step) on the chosen few keeps the file fast
                out.append(pytest.param(src.values[0], name, id=f"{src.id}-{name}"))
    return out


@pytest.mark.parametrize(("source", "integrator"), _rollout_params())
def test_rollout_matches_mujoco_rollout(source, integrator, rng):
    m, _, mjm, _ = load(source)
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    try:
        assert batch.state_size(m) == mujoco.mj_stateSize(mjm, FULLPHYSICS)
        state0 = _initial_states(m, mjm, rng, NBATCH)
        control = np.stack([np.stack([random_state(rng, mjm)[2] for _ in range(ROLLOUT_STEPS)])
                            for _ in range(NBATCH)])
        ours = batch.rollout(m, state0, control, nthread=2)
        theirs = _mujoco_rollout(mjm, state0, control, 2)
        assert ours.state.shape == theirs.shape == (NBATCH, ROLLOUT_STEPS, batch.state_size(m))
        _assert_trajectories_match(ours.state, theirs, f"{source} {integrator}")
        # the views
        np.testing.assert_array_equal(ours.time, ours.state[:, :, 0])
        np.testing.assert_array_equal(ours.qpos[:, -1], ours.state[:, -1, 1:1 + m.nq])
        assert ours.act.shape == (NBATCH, ROLLOUT_STEPS, m.na)
    finally:
        m.opt.integrator, mjm.opt.integrator = saved


def test_rollout_broadcasts_controls_and_states_like_mujoco(rng, humanoid_euler):
    m, _, mjm, _ = humanoid_euler
    state0 = _initial_states(m, mjm, rng, 3)
    u = rng.normal(size=m.nu) * 0.3
    nstep = 20
    tiled = np.broadcast_to(u, (3, nstep, m.nu))
    full = batch.rollout(m, state0, tiled)
    np.testing.assert_array_equal(batch.rollout(m, state0, u, nstep=nstep).state, full.state)
    np.testing.assert_array_equal(batch.rollout(m, state0, tiled[0]).state, full.state)
    # one initial state for many control sequences
    controls = rng.normal(size=(4, nstep, m.nu)) * 0.3
    one = batch.rollout(m, state0[0], controls)
    _assert_trajectories_match(one.state, _mujoco_rollout(mjm, state0[:1], controls, 1), "broadcast state")
    # no control: ctrl = 0
    np.testing.assert_array_equal(batch.rollout(m, state0, None, nstep=5).state,
                                  batch.rollout(m, state0, np.zeros(m.nu), nstep=5).state)


def test_rollout_nonfinite_member_matches_mujoco(rng, humanoid_euler):
    """Member 1 blows up: warning, reset, held; mujoco's rollout does the same; others untouched."""
    m, _, mjm, _ = humanoid_euler
    state0 = _initial_states(m, mjm, rng, 3)
    state0[1, 1 + m.nq + 5] = 1e20             # qvel[5]
    control = rng.normal(size=(3, 10, m.nu)) * 0.2
    with pytest.warns(kd.NonFiniteStateWarning, match=r"qvel\[5\]"):
        ours = batch.rollout(m, state0, control, nthread=2)
    theirs = _mujoco_rollout(mjm, state0, control, 2)
    _assert_trajectories_match(ours.state, theirs, "non-finite member")
    assert np.all(ours.state[1] == ours.state[1, 0])          # held after the reset step
    assert ours.time[1, 0] == pytest.approx(m.opt.timestep)   # reset to t = 0, then one step


def test_rollout_result_does_not_depend_on_earlier_rollouts(rng):
    """The work Data persist between calls (one per thread, per model): a trajectory must
    not read anything an earlier call left in them, not even the NaNs of a blown-up member."""
    source = next(s.values[0] for s in sources(seeds=()) if s.id == "muscle_spatial_tendon")
    m, _, mjm, _ = load(source)
    assert m.na > 0                              # activations are state too
    state0 = _initial_states(m, mjm, rng, 4)
    control = rng.uniform(0, 1, size=(4, 15, m.nu))
    first = batch.rollout(m, state0, control, nthread=2).state
    blown = state0.copy()
    # qvel below mjMAXVAL: the first step's forward runs and leaves huge values in every
    # velocity-dependent field of the work Data before its qacc check resets the member
    blown[:, 1 + m.nq:1 + m.nq + m.nv] = 1e9
    with pytest.warns(kd.NonFiniteStateWarning):
        batch.rollout(m, blown, control[:, ::-1], nthread=2)
    np.testing.assert_array_equal(batch.rollout(m, state0, control, nthread=2).state, first)
    _assert_trajectories_match(first, _mujoco_rollout(mjm, state0, control, 2), "muscle_spatial_tendon")


def test_rollout_nan_initial_state_warns_and_resets_like_mujoco(rng, humanoid_euler):
    m, _, mjm, _ = humanoid_euler
    state0 = _initial_states(m, mjm, rng, 2)
    state0[0, 1 + 2] = np.nan                   # qpos[2]
    control = rng.normal(size=(2, 5, m.nu)) * 0.2
    with pytest.warns(kd.NonFiniteStateWarning, match=r"qpos\[2\]"):
        ours = batch.rollout(m, state0, control)
    _assert_trajectories_match(ours.state, _mujoco_rollout(mjm, state0, control, 1), "NaN initial qpos")
    assert np.all(np.isfinite(ours.state))


def test_rollout_thread_count_honoured(rng):
    m, _, mjm, _ = _humanoid()
    state0 = _initial_states(m, mjm, rng, 6)
    before = numba.get_num_threads()
    one = batch.rollout(m, state0, None, nstep=3, nthread=1)
    assert set(one.thread) == {0}
    assert numba.get_num_threads() == before                  # restored
    if numba.config.NUMBA_NUM_THREADS >= 2 and not numba.config.DISABLE_JIT:
        two = batch.rollout(m, state0, None, nstep=3, nthread=2)
        assert set(two.thread) == {0, 1}
        np.testing.assert_array_equal(one.state, two.state)
    with pytest.raises(ValueError, match="nthread"):
        batch.rollout(m, state0, None, nstep=3, nthread=numba.config.NUMBA_NUM_THREADS + 1)


def test_rollout_bad_input():
    m, _, _, _ = _humanoid()
    nstate = batch.state_size(m)
    with pytest.raises(ValueError, match="initial_state"):
        batch.rollout(m, np.zeros(nstate + 1), None, nstep=2)
    with pytest.raises(ValueError, match="control"):
        batch.rollout(m, np.zeros(nstate), np.zeros((2, m.nu + 1)))
    with pytest.raises(ValueError, match="control"):
        batch.rollout(m, np.zeros((2, nstate)), np.zeros((3, 4, m.nu)))
    with pytest.raises(ValueError, match="nstep"):
        batch.rollout(m, np.zeros(nstate), None)
    with pytest.raises(ValueError, match="nstep"):
        batch.rollout(m, np.zeros(nstate), np.zeros((4, m.nu)), nstep=5)
