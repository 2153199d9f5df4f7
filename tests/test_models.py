"""Bundled models (kd.models): each loads in kinedyn and MuJoCo 4.0 and the two agree.

Oracle: MuJoCo on the same MJCF text (``oracle.load_pair``); model fields through the
registry (``assert_model_fields``), then ``kd.forward`` vs ``mj_forward`` on random
states (``assert_fields``), the oracle's tolerance (1e-9 relative, 1e-12 absolute).
"""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest
from oracle import assert_forward_matches, assert_model_fields, load_pair

import kinedyn as kd

NAMES = ("arm3", "arm7", "biped", "pendulum")


def test_names():
    assert set(NAMES) <= set(kd.models.names())
    assert kd.models.names() == tuple(sorted(kd.models.names()))


@pytest.mark.parametrize("name", NAMES)
def test_model_matches_mujoco(name):
    m, d, mjm, mjd = load_pair(kd.models.xml(name))
    assert_model_fields(m, mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(len(name)), 3)


@pytest.mark.parametrize("name", NAMES)
def test_load_is_clean(name):
    """The bundled files compile without kinedyn warnings and load from their path in MuJoCo."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = kd.models.load(name)
    mjm = mujoco.MjModel.from_xml_path(str(kd.models.path(name)))
    assert (m.nq, m.nv, m.nu) == (mjm.nq, mjm.nv, mjm.nu)


def test_biped_layout():
    m = kd.models.load("biped")
    assert (m.nq, m.nv, m.nu) == (19, 18, 12)
    assert m.jnt_type[0] == kd.JointType.FREE
    axes = {"J0": [0, 0, 1], "J1": [1, 0, 0], "J2": [0, 1, 0],
            "J3": [0, 1, 0], "J4": [0, 1, 0], "J5": [1, 0, 0]}
    for side in ("RLEG", "LLEG"):
        for j, axis in axes.items():
            np.testing.assert_array_equal(m.jnt_axis[m.joint(f"{side}_{j}").id], axis)
    for s in ("r_sole", "l_sole", "r_hip", "l_hip", "r_ankle", "l_ankle"):
        m.site(s)
    # every leg joint has a position servo
    assert set(m.actuator_trnid[:, 0]) == set(range(1, 13))


def test_biped_squat_key_keeps_soles_on_the_ground():
    m = kd.models.load("biped")
    d = kd.Data(m)
    kd.reset(m, d, key="squat")
    assert d.qpos[7:].any()
    kd.kinematics(m, d)
    for s in ("r_sole", "l_sole"):
        assert abs(d.site_xpos[m.site(s).id, 2]) < 1e-12


def test_unknown_model():
    with pytest.raises(KeyError, match="biped"):
        kd.models.load("bipd")


def test_biped_is_stable_under_its_servos_with_its_own_integrator():
    """biped.xml sets implicitfast: 200 steps of 2 ms with the servos pulling 0.1 rad off the squat
    stay finite and follow mj_step step for step (explicit Euler diverges within a few steps)."""
    m, d, mjm, mjd = load_pair(kd.models.xml("biped"))
    assert m.opt.integrator == mjm.opt.integrator == kd.IntegratorType.IMPLICITFAST
    kd.reset(m, d, key="squat")
    mujoco.mj_resetDataKeyframe(mjm, mjd, mjm.key("squat").id)
    d.ctrl[:] = mjd.ctrl[:] = d.qpos[7:] + 0.1
    for _ in range(200):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert np.abs(d.qvel).max() < 100.0, "the servos drove the biped unstable"
    np.testing.assert_allclose(d.qpos, mjd.qpos, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.qvel, mjd.qvel, rtol=1e-9, atol=1e-12)
