"""Time integration: kd.step vs mujoco.mj_step over 1000-step rollouts, and the bad-state reset.

Oracle: mj_step on the same model (integrator overridden on both sides: Euler,
implicitfast, RK4) from the same random state, with the same controls, changed every
100 steps. Tolerance after every 100 steps, elementwise on qpos, qvel and act:

    |ours - mujoco| <= 1e-6 * (1 + |mujoco|)

(looser than the oracle's 1e-9 for one evaluation because round-off differences of
~1e-15 per step are amplified by the dynamics over 1000 steps; chaotic trees
amplify them by several orders of magnitude, still far below 1e-6 when the
integrators agree; a wrong integrator term gives O(h) = 1e-3..1e-2 differences).

Rollouts where MuJoCo itself goes unstable (its mjWARN_BADQACC/BADQPOS/BADQVEL
counters fire, or the state is non-finite) are skipped with that reason: the
comparison is meaningless after MuJoCo resets its own state.

RK4 on ball/free joints follows MuJoCo 4.0.0's Runge-Kutta-Munthe-Kaas rotation
update; ``test_rk4_spinning_body_one_step`` pins it on a torque-free spinning body, where
the uncorrected combination misses by 3e-9 and more.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from cases import pair as _pair
from oracle import gym_model_path, model_paths, set_same_state
from strategies import random_mjcf_text, random_state

import kinedyn as kd

NSTEPS = 1000
CHUNK = 100  # controls change, and states are compared, every CHUNK steps
ROLLOUT_RTOL = 1e-6
INTEGRATORS = {"euler": kd.IntegratorType.EULER, "implicitfast": kd.IntegratorType.IMPLICITFAST,
               "rk4": kd.IntegratorType.RK4}
ROLLOUT_SEEDS = range(0, 40, 2)  # 20 random trees
BAD_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS,
                mujoco.mjtWarning.mjWARN_BADQVEL)




def _text(source) -> tuple[str, str]:
    kind, value = source
    if kind == "path":
        return Path(value).read_text(), Path(value).stem
    if kind == "gym":
        return gym_model_path(value).read_text(), f"gymnasium {value}.xml"
    return random_mjcf_text(value), f"random tree {value}"


def _params():
    sources = [("path", str(p)) for p in model_paths()]
    sources += [("gym", "humanoid"), ("gym", "pusher"), ("gym", "ant")]
    sources += [("seed", s) for s in ROLLOUT_SEEDS]
    out = []
    for source in sources:
        kind, value = source
        sid = Path(value).stem if kind == "path" else f"gym-{value}" if kind == "gym" else f"seed{value}"
        for name in INTEGRATORS:
            out.append(pytest.param(source, name, id=f"{sid}-{name}"))
    return out


def _errors(d, mjd) -> dict[str, float]:
    """Largest |ours - mujoco| / (1 + |mujoco|) of each state field."""
    out = {}
    for name in ("qpos", "qvel", "act"):
        a, b = getattr(d, name), np.asarray(getattr(mjd, name))
        out[name] = float(np.max(np.abs(a - b) / (1.0 + np.abs(b)), initial=0.0))
    return out


def _mujoco_unstable(mjd) -> bool:
    if any(mjd.warning[int(w)].number > 0 for w in BAD_WARNINGS):
        return True
    return not all(np.all(np.isfinite(getattr(mjd, name))) for name in ("qpos", "qvel", "act"))


@pytest.mark.parametrize(("source", "integrator"), _params())
def test_rollout_matches_mj_step(source, integrator):
    text, label = _text(source)
    m, d, mjm, mjd = _pair(text, label)
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    try:
        rng = np.random.default_rng(777)
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        worst = {"qpos": 0.0, "qvel": 0.0, "act": 0.0}
        for start in range(0, NSTEPS, CHUNK):
            ctrl = random_state(rng, mjm)[2]
            d.ctrl[:] = ctrl
            mjd.ctrl[:] = ctrl
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", kd.NonFiniteStateWarning)
                kd.step(m, d, CHUNK)
            mujoco.mj_step(mjm, mjd, CHUNK)
            if _mujoco_unstable(mjd):
                pytest.skip(f"{label} {integrator}: MuJoCo itself went unstable (bad qacc/qpos/qvel warning) "
                            f"before step {start + CHUNK}; nothing to compare")
            assert not caught, f"kinedyn reset a state MuJoCo integrated fine: {caught[0].message}"
            assert d.time == pytest.approx(mjd.time, rel=1e-12, abs=0.0)
            errs = _errors(d, mjd)
            worst = {k: max(v, errs[k]) for k, v in worst.items()}
            bad = {k: v for k, v in errs.items() if v > ROLLOUT_RTOL}
            assert not bad, (f"{label} {integrator}: after {start + CHUNK} steps (h = {mjm.opt.timestep:g}) "
                             f"max |ours - mujoco| / (1 + |mujoco|): {errs}")
    finally:
        m.opt.integrator = saved[0]
        mjm.opt.integrator = saved[1]


# ---- one step, every field -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(1, 40, 2))
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "rk4"])
def test_single_step_state_matches(seed, integrator):
    """One step from a random state: qpos/qvel/act/time at the oracle's 1e-9 (no amplification yet)."""
    from oracle import assert_fields

    m, d, mjm, mjd = _pair(random_mjcf_text(seed), f"random tree {seed}")
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    try:
        rng = np.random.default_rng(seed)
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act,
                       qfrc_applied=rng.normal(size=mjm.nv), xfrc_applied=rng.normal(size=(mjm.nbody, 6)))
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))
        assert d.time == mjd.time
    finally:
        m.opt.integrator = saved[0]
        mjm.opt.integrator = saved[1]


# ---- RK4 on rotations: the Runge-Kutta-Munthe-Kaas correction (MuJoCo 4.0.0) --------------------

SPINNER = """<mujoco><option gravity="0 0 0" integrator="RK4" timestep="{h}"/>
<worldbody><body><joint type="{joint}"/><inertial pos="0 0 0" mass="1" diaginertia="0.2 0.3 0.45"/>
</body></worldbody></mujoco>"""


@pytest.mark.parametrize("joint", ["ball", "free"])
@pytest.mark.parametrize("h", [0.002, 0.01, 0.05])
@pytest.mark.parametrize("speed", [0.0, 1e-7, 3.0, 40.0])
def test_rk4_spinning_body_one_step(joint, h, speed):
    """A torque-free body with unequal inertia: gyroscopic qacc makes every stage's angular
    velocity differ, so an uncorrected combination misses MuJoCo 4.0.0 by 3e-9 (h = 2 ms,
    |w| ~ 5) up to ~1e-3 (h = 50 ms, |w| ~ 70); the RKMK rates agree to round-off. speed 1e-7
    makes |theta| ~ 1e-9, the small-angle branch of the correction; speed 40 with h = 50 ms
    rotates ~2 rad per step."""
    m, d, mjm, mjd = _pair(SPINNER.format(h=h, joint=joint), f"spinning {joint} body")
    rng = np.random.default_rng(int(h * 1000) + int(speed))
    quat = rng.normal(size=4)
    qpos = np.asarray(mjm.qpos0).copy()
    qpos[-4:] = quat / np.linalg.norm(quat)
    qvel = rng.normal(size=mjm.nv) * speed
    set_same_state(m, d, mjm, mjd, qpos, qvel, np.zeros(mjm.nu), np.zeros(mjm.na))
    kd.step(m, d)
    mujoco.mj_step(mjm, mjd)
    np.testing.assert_allclose(d.qpos, mjd.qpos, rtol=0, atol=1e-13)
    np.testing.assert_allclose(d.qvel, mjd.qvel, rtol=0, atol=1e-13 * (1 + speed))


# Bodies whose per-step rotation angle h |w| spans every branch of MuJoCo 4.0.0's correction:
# its polynomial (h |w| < 1.75; below 1e-4 too, where kinedyn once switched to a 2-term series),
# the closed form above it, and the wrap past pi; a ball joint besides the free ones.
TUMBLERS = """<mujoco><option gravity="0 0 -9.81" integrator="RK4" timestep="0.01">
<flag constraint="disable"/></option><worldbody>
<body><freejoint/><inertial pos="0.02 0 0" mass="1" diaginertia="0.2 0.3 0.45"/></body>
<body><freejoint/><inertial pos="0 0.01 0" mass="2" diaginertia="0.5 0.2 0.35"/></body>
<body><freejoint/><inertial pos="0 0 0.01" mass="1" diaginertia="0.3 0.25 0.1"/></body>
<body><freejoint/><inertial pos="0.01 0.01 0" mass="1" diaginertia="0.4 0.15 0.3"/></body>
<body pos="0 0 1"><joint type="ball"/><inertial pos="0 0 -0.2" mass="1" diaginertia="0.1 0.2 0.25"/></body>
</worldbody></mujoco>"""
TUMBLER_SPEEDS = (0.005, 30.0, 120.0, 250.0, 400.0)  # |w| of each body, rad/s at h = 10 ms


def test_rk4_free_body_bitwise():
    """Many RK4 steps of tumbling bodies, each from MuJoCo's own state: kinedyn's qpos and qvel
    are bit-identical to mj_step's at every step. Before the correction's c(t) was evaluated as
    MuJoCo 4.0.0 does (its polynomial below |theta| = 1.75, the wrap test on |theta|^2), ~1% of
    steps differed in the last bit of a quaternion component (gymnasium Humanoid, Ant), here
    213 of the 400."""
    m, d, mjm, mjd = _pair(TUMBLERS, "RK4 tumblers")
    rng = np.random.default_rng(7)
    qvel = rng.normal(size=mjm.nv)
    for b, speed in enumerate(TUMBLER_SPEEDS):
        dof = 6 * b + 3 if b < 4 else 24
        w = rng.normal(size=3)
        qvel[dof:dof + 3] = speed * w / np.linalg.norm(w)
    set_same_state(m, d, mjm, mjd, np.asarray(mjm.qpos0), qvel)
    differing = []
    for step in range(400):
        for name in ("qpos", "qvel", "act"):
            getattr(d, name)[:] = getattr(mjd, name)
        d.time = mjd.time
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
        if not (np.array_equal(d.qpos, mjd.qpos) and np.array_equal(d.qvel, mjd.qvel)):
            differing.append(step)
    assert not differing, (f"{len(differing)} of 400 steps not bit-identical to mj_step, "
                           f"first at step {differing[0]}")


# ---- integrate_pos -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_integrate_pos_matches_mujoco(seed):
    from oracle import assert_close

    m, _, mjm, _ = _pair(random_mjcf_text(seed), f"random tree {seed}")
    rng = np.random.default_rng(seed)
    qpos, qvel, _, _ = random_state(rng, mjm)
    for h in (1e-3, 0.37, -0.2):
        ours = qpos.copy()
        theirs = qpos.copy()
        kd.integrate_pos(m, ours, qvel, h)
        mujoco.mj_integratePos(mjm, theirs, qvel, h)
        assert_close(f"integrate_pos(h={h})", ours, theirs)


def test_integrate_pos_checks_arguments():
    m, _, _, _ = _pair(random_mjcf_text(1), "random tree 1")
    with pytest.raises(ValueError):
        kd.integrate_pos(m, np.zeros(m.nq + 1), np.zeros(m.nv), 0.1)
    with pytest.raises(ValueError):
        kd.integrate_pos(m, np.zeros(m.nq, dtype=np.float32), np.zeros(m.nv), 0.1)


# ---- non-finite state ----------------------------------------------------------------------------


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_nonfinite_state_warns_and_resets(integrator):
    """qvel = 1e20: MuJoCo warns (mjWARN_BADQVEL), resets and steps on; kinedyn must do the same."""
    m, d, mjm, mjd = _pair(random_mjcf_text(2), "random tree 2")
    assert m.nv > 0
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    try:
        rng = np.random.default_rng(2)
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, time=0.5)
        d.qvel[0] = 1e20
        mjd.qvel[0] = 1e20
        with pytest.warns(kd.NonFiniteStateWarning, match=r"qvel\[0\]"):
            kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        assert mjd.warning[int(mujoco.mjtWarning.mjWARN_BADQVEL)].number == 1  # the oracle did reset
        for name in ("qpos", "qvel", "act", "ctrl"):
            np.testing.assert_allclose(getattr(d, name), getattr(mjd, name), rtol=1e-9, atol=1e-12,
                                       err_msg=name)
        assert d.time == pytest.approx(mjd.time, abs=1e-15)
        assert np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))
    finally:
        m.opt.integrator = saved[0]
        mjm.opt.integrator = saved[1]


def test_nan_qpos_warns_and_resets_to_qpos0():
    m, d, _, _ = _pair(random_mjcf_text(4), "random tree 4")
    d.qpos[0] = np.nan
    d.ctrl[:] = 0.0
    with pytest.warns(kd.NonFiniteStateWarning, match=r"qpos"):
        kd.step(m, d)
    assert np.all(np.isfinite(d.qpos))
    # reset to qpos0, zero velocity, then one step of length h at time 0
    assert d.time == pytest.approx(m.opt.timestep)


SIMPLE_BODIES = """<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="5 5 .1"/>
<body pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3" mass="2"/></body>
<body pos="1 0 1"><joint type="slide" axis="1 0 0" armature="0.02"/><joint type="slide" axis="0 1 0"/>
  <geom type="sphere" size=".2" mass="3"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_simple_bodies_use_mujocos_constant_diagonal_bitwise(integrator):
    """A body whose inertia is diagonal in its dofs' frame is "simple": mj_crb puts the constant
    dof_M0 (mj_setM0 at qpos0) on M's diagonal instead of recomputing it, which differs in the last
    bits at other poses. dof_simplenum and dof_M0 equal MuJoCo's, and 200 steps from MuJoCo's state
    (a free box tumbling onto the floor, a slide pair with armature) are bit-identical. (Under
    implicitfast 3 of the 200 steps still differ in the last bits, 81 before dof_M0: the lone free
    body's implicit system, mjd_freeMhat, a separate cause not yet found.)"""
    xml = SIMPLE_BODIES.replace("<option ", f'<option integrator="{integrator}" ')
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    np.testing.assert_array_equal(m.dof_simplenum, mjm.dof_simplenum)
    np.testing.assert_array_equal(m.dof_M0, mjm.dof_M0)
    assert m.dof_simplenum.any()
    rng = np.random.default_rng(5)
    mjd.qvel[:] = rng.normal(size=mjm.nv) * 3
    differing = 0
    for _ in range(200):
        d.qpos[:], d.qvel[:], d.qacc_warmstart[:] = mjd.qpos, mjd.qvel, mjd.qacc_warmstart
        d.time = mjd.time
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        differing += not (np.array_equal(d.qpos, mjd.qpos) and np.array_equal(d.qvel, mjd.qvel))
    assert differing == 0
