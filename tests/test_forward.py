"""kd.forward vs mujoco.mj_forward: every Data field, on every model we can build.

Oracle: MuJoCo 4.0 on the same MJCF text and the same state (``oracle.load_pair``
disables constraints and contacts in both). Fields are taken from the registry
(``oracle.assert_fields``), so a new field is compared without touching this file.
Tolerance: the oracle's, ``|ours - mujoco| <= 1e-12 + 1e-9 * max(|ours|, |mujoco|)``.

Models: every test model (``oracle.model_paths()``: ``tests/models/*.xml`` plus an
optional extra corpus; a model listed in ``oracle.REFUSED_MODELS`` is skipped),
gymnasium's humanoid, pusher and ant, 240 random trees (``strategies.random_mjcf_text``)
and a hypothesis strategy (``strategies.random_mjcf``); 3 random states each with random
``qfrc_applied`` and ``xfrc_applied``.

One known limit of an elementwise 1e-9 bar: qacc = M^-1 qfrc_smooth. M is not
bit-identical to MuJoCo's (summation order in crb differs, ~1e-13 relative, well
inside the bar), and when M is ill-conditioned (cond ~ 1e4) a *small* component of
qacc obtained by cancellation can move by more than 1e-9 of itself. The seeded test
reports such a case as an xfail with the magnitudes and cond(M), after checking that
everything else matches and that kinedyn's qacc solves MuJoCo's own M to round-off.
"""

from __future__ import annotations

import zlib

import mujoco
import numpy as np
import pytest
from cases import pair as _pair
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import (
    FACTOR_FIELDS,
    assert_factorisation,
    assert_fields,
    compare,
    gym_model_path,
    load_pair,
    model_paths,
    set_same_state,
)
from strategies import random_mjcf, random_mjcf_text, random_state

import kinedyn as kd

N_RANDOM_TREES = 240
N_STATES = 3
SOLVE_FIELDS = ("qacc", "qacc_smooth")


def _random_inputs(rng, mjm):
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    return dict(qpos=qpos, qvel=qvel, ctrl=ctrl, act=act,
                qfrc_applied=rng.normal(size=mjm.nv),
                xfrc_applied=rng.normal(size=(mjm.nbody, 6)))


def _forward_both(m, d, mjm, mjd, inputs):
    set_same_state(m, d, mjm, mjd, **inputs)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)


def _solve_mismatch_explained(d, mjm, mjd, name: str = "qacc") -> str | None:
    """If qacc differs only by conditioning-amplified round-off, a report; else None.

    Explained means: kinedyn's qacc solves *MuJoCo's* M against MuJoCo's qfrc_smooth
    with a normwise backward error below 1e-13 (i.e. it is an exact solution of a
    problem within round-off of MuJoCo's), while the forward error is large only
    relative to a component much smaller than ||qacc||: normwise (relative to the
    largest component) it is within 1e-9.
    """
    dense = np.zeros((mjm.nv, mjm.nv))
    mujoco.mj_fullM(mjm, mjd, dense)
    f = np.asarray(mjd.qfrc_smooth)
    x, reference = getattr(d, name), getattr(mjd, name)
    scale = np.linalg.norm(dense, 2) * np.linalg.norm(x) + np.linalg.norm(f)
    backward = np.linalg.norm(dense @ x - f) / scale
    if backward > 1e-13:
        return None
    err = np.abs(x - reference)
    normwise = err.max() / max(np.abs(reference).max(), 1e-300)
    if normwise > 1e-9:  # the largest components differ too: not a small component's cancellation
        return None
    i = int(np.argmax(err))
    return (f"{name}[{i}] = {x[i]!r} vs mujoco {reference[i]!r} (abs err {err[i]:.3g}, elementwise rel "
            f"{err[i] / abs(reference[i]):.3g}, normwise rel {normwise:.3g}); "
            f"cond(M) = {np.linalg.cond(dense):.3g}, "
            f"backward error vs MuJoCo's M {backward:.2g}")


def _check_forward(m, d, mjm, mjd, inputs, label):
    """assert_fields on every stage; factor and solve fields strict too, xfail only if round-off
    explains the difference."""
    _forward_both(m, d, mjm, mjd, inputs)
    assert_fields(m, d, mjm, mjd, skip=SOLVE_FIELDS + FACTOR_FIELDS)
    notes = []
    try:
        explained = assert_factorisation(m, d, mjd)
    except AssertionError as err:
        raise AssertionError(f"{label}: {err}") from None
    if explained:
        notes.append(explained)
    reports = [r for name in SOLVE_FIELDS if (r := compare(name, getattr(d, name), getattr(mjd, name)))]
    if reports:
        explained = _solve_mismatch_explained(d, mjm, mjd)
        if explained is None:
            raise AssertionError(f"{label}: " + "; ".join(reports))
        notes.append(explained)
    return f"{label}: " + " | ".join(notes) if notes else None


# ---- model files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", model_paths(), ids=lambda p: p.stem)
def test_forward_model_files(path):
    m, d, mjm, mjd = _pair(path.read_text(), path.stem)
    rng = np.random.default_rng(zlib.crc32(path.stem.encode()))
    notes = []
    for k in range(N_STATES):
        note = _check_forward(m, d, mjm, mjd, _random_inputs(rng, mjm), f"{path.stem} state {k}")
        if note:
            notes.append(note)
    if notes:
        pytest.xfail("qacc differs by conditioning-amplified round-off: " + " | ".join(notes))


def test_forward_at_qpos0_model_files(model_path):
    """The default state (qpos0, zero velocity and controls) is a state users start from."""
    m, d, mjm, mjd = _pair(model_path.read_text(), model_path.stem)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)


# ---- gymnasium models ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["humanoid", "pusher", "ant"])
def test_forward_gym_models(name):
    path = gym_model_path(name)
    m, d, mjm, mjd = _pair(path.read_text(), f"gymnasium {name}.xml")
    rng = np.random.default_rng(7)
    notes = [n for k in range(N_STATES)
             if (n := _check_forward(m, d, mjm, mjd, _random_inputs(rng, mjm), f"{name} state {k}"))]
    if notes:
        pytest.xfail("qacc differs by conditioning-amplified round-off: " + " | ".join(notes))


# ---- random trees --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(N_RANDOM_TREES))
def test_forward_random_trees(seed):
    m, d, mjm, mjd = _pair(random_mjcf_text(seed), f"random tree {seed}")
    rng = np.random.default_rng(seed)
    notes = [n for k in range(N_STATES)
             if (n := _check_forward(m, d, mjm, mjd, _random_inputs(rng, mjm), f"seed {seed} state {k}"))]
    if notes:
        pytest.xfail("qacc differs by conditioning-amplified round-off: " + " | ".join(notes))


# no shrink phase: each example compiles two models, and shrinking a failure took 5 minutes;
# the falsifying example is printed in full (and reproducible with the ci profile)
@settings(max_examples=40, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_forward_random_trees_hypothesis(xml, state_seed):
    """Same comparison on hypothesis-drawn trees (shrinks to a minimal failing model).

    Every field at the bar, qLD/qLDiagInv and qacc/qacc_smooth elementwise 1e-9 where
    possible; where that fails the difference must be explained by round-off (see the
    module docstring: _check_forward raises otherwise) -- the seeded test reports those
    cases visibly as xfails. Explained or not, qacc and qacc_smooth are within 1e-9 of
    MuJoCo's normwise (relative to their largest component).
    """
    m, _, mjm, _ = load_pair(xml)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    rng = np.random.default_rng(state_seed)
    for k in range(2):
        note = _check_forward(m, d, mjm, mjd, _random_inputs(rng, mjm), f"state {k}")
        for name in SOLVE_FIELDS:
            ours, theirs = getattr(d, name), getattr(mjd, name)
            err = np.abs(ours - theirs).max(initial=0.0)
            assert err <= 1e-12 + 1e-9 * np.abs(theirs).max(initial=0.0), \
                f"state {k}: {name} differs by {err:.3g} normwise ({note})"


# ---- stage by stage ------------------------------------------------------------------------------


STAGE_SEEDS = range(0, 240, 6)  # 40 trees


@pytest.mark.parametrize("seed", STAGE_SEEDS)
def test_pipeline_stages_match_mujoco_stages(seed):
    """fwd_position / fwd_velocity / fwd_actuation / fwd_acceleration one at a time, each vs MuJoCo's."""
    m, d, mjm, mjd = _pair(random_mjcf_text(seed), f"random tree {seed}")
    rng = np.random.default_rng(seed + 1000)
    set_same_state(m, d, mjm, mjd, **_random_inputs(rng, mjm))
    kd.fwd_position(m, d)
    mujoco.mj_fwdPosition(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="position", skip=FACTOR_FIELDS)
    assert_factorisation(m, d, mjd)
    kd.fwd_velocity(m, d)
    mujoco.mj_fwdVelocity(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="velocity")
    kd.fwd_actuation(m, d)
    mujoco.mj_fwdActuation(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="actuation")
    kd.fwd_acceleration(m, d)
    mujoco.mj_fwdAcceleration(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="acceleration", skip=SOLVE_FIELDS)
    # mj_fwdAcceleration makes qacc_smooth only (MuJoCo's qacc comes from mj_fwdConstraint; kinedyn's
    # stage sets it to qacc_smooth, the unconstrained answer)
    report = compare("qacc_smooth", d.qacc_smooth, mjd.qacc_smooth)
    if report is not None and _solve_mismatch_explained(d, mjm, mjd, "qacc_smooth") is None:
        raise AssertionError(report)
    np.testing.assert_array_equal(d.qacc, d.qacc_smooth)


def test_forward_twice_is_idempotent():
    """forward reads only inputs: a second call changes nothing (no state leaks between calls)."""
    m, d, mjm, _ = _pair(random_mjcf_text(3), "random tree 3")
    rng = np.random.default_rng(3)
    for name, value in _random_inputs(rng, mjm).items():
        getattr(d, name)[...] = value
    kd.forward(m, d)
    first = {name: getattr(d, name).copy() for name in ("qacc", "qfrc_bias", "M", "cvel", "actuator_force")}
    kd.forward(m, d)
    for name, value in first.items():
        np.testing.assert_array_equal(getattr(d, name), value, err_msg=name)
