"""Identities of rigid-body dynamics that hold whatever MuJoCo does.

These check kinedyn against mathematics rather than against MuJoCo's numbers:

* M is symmetric positive definite (hypothesis, random trees);
* M[:, i] = rne(qacc = e_i) - rne(qacc = 0) at qvel = 0, with dof_armature added on
  the diagonal (M includes armature, mj_rne does not; ``rne(armature=True)`` does);
* 0.5 qvel' M qvel equals the kinetic energy summed over bodies from cinert and cvel,
  plus 0.5 * sum(armature * qvel^2); and equals MuJoCo's mj_energyVel;
* forward then inverse: qfrc_inverse = qfrc_applied + J' xfrc_applied + qfrc_actuator.

Tolerances are round-off bounds relative to the magnitude of the terms involved
(stated at each assert), not the oracle's MuJoCo-comparison tolerance: the two sides are
computed by different algorithms.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import sources as _sources
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import load_pair
from strategies import random_mjcf, random_state

import kinedyn as kd


def _set(m, d, mjm, rng, zero_vel=False):
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    d.qpos[:] = qpos
    d.qvel[:] = 0.0 if zero_vel else qvel
    d.ctrl[:] = ctrl
    d.act[:] = act
    d.qfrc_applied[:] = 0.0
    d.xfrc_applied[:] = 0.0


# ---- M symmetric positive definite ---------------------------------------------------------------


def _assert_spd(m, d):
    full = kd.full_m(m, d)
    np.testing.assert_array_equal(full, full.T)  # built from one triangle: exactly symmetric
    if m.nv == 0:  # a model without dofs has an empty M: nothing to be definite
        return
    eig = np.linalg.eigvalsh(full)
    assert eig.min() > 0.0, f"M not positive definite: eigenvalues {eig}"
    # the LDL' factorisation agrees: every pivot positive
    assert np.all(d.qLDiagInv > 0.0)


@settings(max_examples=60, phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_mass_matrix_spd_hypothesis(xml, state_seed):
    m, d, mjm, _ = load_pair(xml)
    rng = np.random.default_rng(state_seed)
    for _ in range(2):
        _set(m, d, mjm, rng)
        kd.forward(m, d)
        _assert_spd(m, d)


@pytest.mark.parametrize("source", _sources(range(0, 240, 8)))
def test_mass_matrix_spd(source):
    m, d, mjm, _ = _load(source)
    rng = np.random.default_rng(1)
    for _ in range(3):
        _set(m, d, mjm, rng)
        kd.forward(m, d)
        _assert_spd(m, d)


# ---- M from RNE ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", _sources(range(1, 240, 8)))
def test_mass_matrix_columns_from_rne(source):
    m, d, mjm, _ = _load(source)
    rng = np.random.default_rng(2)
    for _ in range(2):
        _set(m, d, mjm, rng, zero_vel=True)
        kd.forward(m, d)
        full = kd.full_m(m, d)
        d.qacc[:] = 0.0
        bias = kd.rne(m, d, True).copy()
        scale = np.abs(full).max() + np.abs(bias).max()
        for i in range(m.nv):
            d.qacc[:] = 0.0
            d.qacc[i] = 1.0
            col = kd.rne(m, d, True) - bias
            col[i] += m.dof_armature[i]
            # two float64 algorithms for the same sums: round-off ~ nv * u * scale
            np.testing.assert_allclose(col, full[:, i], rtol=0, atol=1e-12 * scale,
                                       err_msg=f"column {i}: rne(e_i) - rne(0) + armature")
            col_arm = kd.rne(m, d, True, armature=True) - bias
            np.testing.assert_allclose(col_arm, full[:, i], rtol=0, atol=1e-12 * scale,
                                       err_msg=f"column {i}: rne(e_i, armature=True) - rne(0)")


# ---- kinetic energy ------------------------------------------------------------------------------


def _inert_times(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """cinert (10-vector) times a spatial motion [rot; lin] (MuJoCo's mju_mulInertVec)."""
    inertia = np.array([[c[0], c[3], c[4]], [c[3], c[1], c[5]], [c[4], c[5], c[2]]])
    h, mass = c[6:9], c[9]
    w, lin = v[:3], v[3:]
    return np.concatenate([inertia @ w + np.cross(h, lin), mass * lin - np.cross(h, w)])


@pytest.mark.parametrize("source", _sources(range(2, 240, 8)))
def test_kinetic_energy(source):
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(3)
    for _ in range(3):
        _set(m, d, mjm, rng)
        kd.forward(m, d)
        from_m = 0.5 * d.qvel @ kd.mul_m(m, d, d.qvel)
        from_bodies = sum(0.5 * d.cvel[b] @ _inert_times(d.cinert[b], d.cvel[b]) for b in range(1, m.nbody))
        from_bodies += 0.5 * np.sum(m.dof_armature * d.qvel ** 2)
        assert from_m >= 0.0
        # different summation orders: relative round-off ~1e-13 on a sum of positive terms
        assert from_m == pytest.approx(from_bodies, rel=1e-11, abs=1e-12)
        # MuJoCo's own kinetic energy of the same state
        mjd.qpos[:] = d.qpos
        mjd.qvel[:] = d.qvel
        mujoco.mj_forward(mjm, mjd)
        mujoco.mj_energyVel(mjm, mjd)
        assert from_m == pytest.approx(mjd.energy[1], rel=1e-9, abs=1e-12)


# ---- forward / inverse round trip ----------------------------------------------------------------


def _jt_xfrc(m, d) -> np.ndarray:
    """J' xfrc_applied: each body's force at its com and torque, through jac_body_com."""
    out = np.zeros(m.nv)
    for b in range(1, m.nbody):
        jacp, jacr = kd.jac_body_com(m, d, b)
        out += jacp.T @ d.xfrc_applied[b, :3] + jacr.T @ d.xfrc_applied[b, 3:]
    return out


@pytest.mark.parametrize("source", _sources(range(3, 240, 6)))
def test_forward_then_inverse_round_trip(source):
    m, d, mjm, _ = _load(source)
    rng = np.random.default_rng(4)
    for _ in range(3):
        _set(m, d, mjm, rng)
        d.qfrc_applied[:] = rng.normal(size=m.nv)
        d.xfrc_applied[1:] = rng.normal(size=(m.nbody - 1, 6))
        kd.forward(m, d)
        applied = d.qfrc_applied + _jt_xfrc(m, d) + d.qfrc_actuator
        terms = (np.abs(d.qfrc_applied) + np.abs(_jt_xfrc(m, d)) + np.abs(d.qfrc_actuator)
                 + np.abs(d.qfrc_bias) + np.abs(d.qfrc_passive))
        kd.inverse(m, d)
        # M (M^-1 f) = f up to cond(M) * u relative to ||f|| (backward-stable LDL solve)
        cond = np.linalg.cond(kd.full_m(m, d)) if m.nv else 1.0
        tol = 1e-14 * cond * terms.max(initial=0.0) + 1e-12
        err = np.abs(d.qfrc_inverse - applied)
        assert err.max(initial=0.0) <= tol, (f"qfrc_inverse - (qfrc_applied + J'xfrc + qfrc_actuator): "
                                  f"max {err.max(initial=0.0):.3g} "
                                  f"(tol {tol:.3g}, cond(M) {cond:.3g})")
