"""kd.inverse vs mujoco.mj_inverse on random states and random accelerations.

Oracle: mj_inverse (constraints disabled by ``oracle.load_pair``) on the same qpos,
qvel and an arbitrary qacc: qfrc_inverse and every position and velocity field it
recomputes. Tolerance: the oracle's (1e-9 relative, 1e-12 absolute).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import sources as _sources
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import (
    FACTOR_FIELDS,
    assert_close,
    assert_factorisation,
    assert_fields,
    load_pair,
    set_same_state,
)
from strategies import random_mjcf, random_state

import kinedyn as kd


def _check_inverse(m, d, mjm, mjd, rng):
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    qacc = rng.normal(scale=3.0, size=mjm.nv)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qacc=qacc)
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))
    # inverse recomputes the position and velocity stages from qpos and qvel; the
    # factorisation is judged through MuJoCo's own M (oracle.assert_factorisation)
    assert_fields(m, d, mjm, mjd, stage=("position", "velocity"), skip=FACTOR_FIELDS)
    assert_factorisation(m, d, mjd)
    # and leaves qacc, its input, alone
    np.testing.assert_array_equal(d.qacc, qacc)


@pytest.mark.parametrize("source", _sources(range(0, 240, 3)))
def test_inverse_matches_mj_inverse(source):
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(606)
    for _ in range(3):
        _check_inverse(m, d, mjm, mjd, rng)


@settings(max_examples=30, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_inverse_matches_mj_inverse_hypothesis(xml, state_seed):
    m, d, mjm, mjd = load_pair(xml)
    _check_inverse(m, d, mjm, mjd, np.random.default_rng(state_seed))


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_inverse_is_m_qacc_plus_bias_minus_passive(seed):
    """The documented formula, with M (armature included) from mj_fullM."""
    m, d, mjm, mjd = _load(("seed", seed))
    rng = np.random.default_rng(seed)
    qpos, qvel, _, _ = random_state(rng, mjm)
    qacc = rng.normal(size=mjm.nv)
    set_same_state(m, d, mjm, mjd, qpos, qvel, qacc=qacc)
    kd.inverse(m, d)
    mujoco.mj_forward(mjm, mjd)
    mjd.qacc[:] = qacc
    full = np.zeros((mjm.nv, mjm.nv))
    mujoco.mj_fullM(mjm, mjd, full)
    expected = full @ qacc + mjd.qfrc_bias - mjd.qfrc_passive
    scale = (np.abs(full).max() * np.abs(qacc).max() + np.abs(mjd.qfrc_bias).max()
             + np.abs(mjd.qfrc_passive).max())
    assert_close("qfrc_inverse vs M qacc + bias - passive", d.qfrc_inverse, expected, rtol=1e-12,
                 atol=1e-13 * scale)
