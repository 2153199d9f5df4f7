"""Velocity-stage kernels vs MuJoCo: kd.com_vel, kd.passive, kd.rne, kd.bias_forces.

Oracle: mj_comVel (cvel, cdof_dot), mj_passive (qfrc_spring, qfrc_damper,
qfrc_passive) and mj_rne(flg_acc=0/1) on the same model and state, each run after
the position stage on both sides. ``kd.rne(..., armature=True)`` is compared with
the Pinocchio-style expectation ``mj_rne(flg_acc=1) + dof_armature * qacc`` (mj_rne
itself leaves armature out). Tolerance: the oracle's (1e-9 relative, 1e-12 absolute).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import sources as _sources
from oracle import assert_close, assert_fields, set_same_state
from strategies import random_state

import kinedyn as kd


@pytest.mark.parametrize("source", _sources(range(1, 240, 4)))
def test_com_vel_and_passive(source):
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(202)
    for _ in range(3):
        qpos, qvel, _, _ = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel)
        kd.kinematics(m, d)
        kd.com_pos(m, d)
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_comPos(mjm, mjd)
        kd.com_vel(m, d)
        mujoco.mj_comVel(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("cvel", "cdof_dot"))
        kd.passive(m, d)
        mujoco.mj_passive(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qfrc_spring", "qfrc_damper", "qfrc_passive"))


@pytest.mark.parametrize("source", _sources(range(1, 240, 4)))
def test_rne_matches_mj_rne(source):
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(303)
    for _ in range(3):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        # an arbitrary acceleration, the same on both sides (rne reads d.qacc)
        qacc = rng.normal(size=mjm.nv)
        d.qacc[:] = qacc
        mjd.qacc[:] = qacc
        for flg_acc in (False, True):
            theirs = np.zeros(mjm.nv)
            mujoco.mj_rne(mjm, mjd, int(flg_acc), theirs)
            assert_close(f"rne(flg_acc={flg_acc})", kd.rne(m, d, flg_acc), theirs)
        theirs = np.zeros(mjm.nv)
        mujoco.mj_rne(mjm, mjd, 1, theirs)
        expected = theirs + np.asarray(mjm.dof_armature) * qacc
        assert_close("rne(flg_acc=True, armature=True)", kd.rne(m, d, True, armature=True), expected)
        # without accelerations the armature flag changes nothing
        assert_close("rne(flg_acc=False, armature=True)", kd.rne(m, d, False, armature=True),
                     kd.rne(m, d, False), rtol=0.0, atol=0.0)


def _mujoco_bias_forces(mjm, mjd):
    """C from qpos, qvel by MuJoCo's chain: mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=0)."""
    theirs = np.zeros(mjm.nv)
    mujoco.mj_kinematics(mjm, mjd)
    mujoco.mj_comPos(mjm, mjd)
    mujoco.mj_comVel(mjm, mjd)
    mujoco.mj_rne(mjm, mjd, 0, theirs)
    return theirs


@pytest.mark.parametrize("source", _sources(range(3, 240, 24)))
def test_bias_forces_from_scratch(source):
    """kd.bias_forces from qpos, qvel alone == MuJoCo's chain kinematics, comPos, comVel, rne."""
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(404)
    for _ in range(3):
        qpos, qvel, _, _ = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel)
        theirs = _mujoco_bias_forces(mjm, mjd)
        result = kd.bias_forces(m, d)
        assert result is d.qfrc_bias
        assert_close("bias_forces", result, theirs)
        assert_fields(m, d, mjm, mjd, names=("xpos", "xquat", "cinert", "cdof", "cvel", "cdof_dot"))


@pytest.mark.parametrize("source", _sources(range(7, 240, 40)))
def test_bias_forces_and_rne_without_gravity(source):
    """With gravity disabled (both libraries), bias_forces and rne still match MuJoCo's chain.

    The models are this test's own copies (cases.pair), so the flag reaches no other test."""
    m, d, mjm, mjd = _load(source)
    m.opt.disableflags = m.opt.disableflags | kd.DisableBit.GRAVITY
    mjm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
    rng = np.random.default_rng(405)
    qpos, qvel, _, _ = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel)
    theirs = _mujoco_bias_forces(mjm, mjd)
    assert_close("bias_forces without gravity", kd.bias_forces(m, d), theirs)
    assert_close("rne without gravity", kd.rne(m, d), theirs)


def test_rne_out_argument():
    m, d, mjm, mjd = _load(("seed", 5))
    rng = np.random.default_rng(1)
    qpos, qvel, _, _ = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel)
    kd.forward(m, d)
    out = np.empty(m.nv)
    res = kd.rne(m, d, True, out=out)
    assert res is out
    np.testing.assert_array_equal(out, kd.rne(m, d, True))
    with pytest.raises(ValueError):
        kd.rne(m, d, True, out=np.empty(m.nv + 1))


def test_qfrc_bias_is_rne_without_acceleration():
    """forward's qfrc_bias is exactly rne(flg_acc=False) on the same state."""
    m, d, mjm, _ = _load(("seed", 9))
    rng = np.random.default_rng(9)
    qpos, qvel, _, _ = random_state(rng, mjm)
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    kd.forward(m, d)
    np.testing.assert_array_equal(kd.rne(m, d, False), d.qfrc_bias)


def test_gravity_only_bias_at_rest():
    """With qvel = 0, qfrc_bias is the gravity force: zero when gravity is zero."""
    m, d, mjm, mjd = _load(("seed", 13))
    rng = np.random.default_rng(13)
    qpos, _, _, _ = random_state(rng, mjm)
    gravity = m.opt.gravity.copy()
    try:
        m.opt.gravity = 0.0
        mjm.opt.gravity[:] = 0.0
        set_same_state(m, d, mjm, mjd, qpos, np.zeros(mjm.nv))
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert np.abs(d.qfrc_bias).max() <= 1e-12
        assert_fields(m, d, mjm, mjd, names=("qfrc_bias",))
    finally:
        m.opt.gravity = gravity
        mjm.opt.gravity[:] = gravity
