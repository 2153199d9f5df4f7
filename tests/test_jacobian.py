"""Jacobians: kd.jac_site / jac_body / jac_body_com / jac_point vs MuJoCo, and finite differences.

Oracle 1: mj_jacSite, mj_jacBody, mj_jacBodyCom, mj_jac on the same model and qpos
(after mj_kinematics + mj_comPos / kd.kinematics + kd.com_pos). Tolerance: the oracle's (1e-9
relative, 1e-12 absolute).

Oracle 2: central finite differences on the joint manifold. For dof i,
q± = q (+) (±eps e_i) with kd.integrate_pos (quaternions move on SO(3), in the
dof's own frame, exactly as qvel is defined), then kinematics at q±:

    jacp[:, i] ~ (p(q+) - p(q-)) / (2 eps)
    jacr[:, i] ~ log(R(q+) R(q-)^T) / (2 eps)      (rotation vector, world frame)

eps = 1e-6 and tolerance 1e-7 * (1 + |J_ij|): the central difference has truncation
error O(eps^2 * |d3p/dq3|) ~ 1e-12 for the O(1..10) lever arms and rates here (the
rotation log is also accurate to O(eps^3) / eps, see BCH), and round-off
O(u * |p| / eps) ~ 1e-16 * 10 / 1e-6 = 1e-9. 1e-7 sits two orders above both and
far below a wrong column (a missing lever arm or a wrong frame gives O(0.1..1)).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import sources as _sources
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import assert_close, load_pair, set_same_state
from strategies import random_mjcf, random_state

import kinedyn as kd

EPS = 1e-6
FD_TOL = 1e-7






def _position_both(m, d, mjm, mjd, qpos):
    set_same_state(m, d, mjm, mjd, qpos, np.zeros(mjm.nv))
    kd.kinematics(m, d)
    kd.com_pos(m, d)
    mujoco.mj_kinematics(mjm, mjd)
    mujoco.mj_comPos(mjm, mjd)


def _mj_jacs(fn, mjm, mjd, *args):
    jacp = np.zeros((3, mjm.nv))
    jacr = np.zeros((3, mjm.nv))
    fn(mjm, mjd, jacp, jacr, *args)
    return jacp, jacr


def _compare_all(m, d, mjm, mjd, rng):
    for s in range(m.nsite):
        ours = kd.jac_site(m, d, s)
        theirs = _mj_jacs(mujoco.mj_jacSite, mjm, mjd, s)
        assert_close(f"jac_site({s}) jacp", ours[0], theirs[0])
        assert_close(f"jac_site({s}) jacr", ours[1], theirs[1])
    for b in range(m.nbody):
        for name, ours_fn, mj_fn in (("jac_body", kd.jac_body, mujoco.mj_jacBody),
                                     ("jac_body_com", kd.jac_body_com, mujoco.mj_jacBodyCom)):
            ours = ours_fn(m, d, b)
            theirs = _mj_jacs(mj_fn, mjm, mjd, b)
            assert_close(f"{name}({b}) jacp", ours[0], theirs[0])
            assert_close(f"{name}({b}) jacr", ours[1], theirs[1])
        point = d.xpos[b] + rng.normal(size=3)
        theirs = _mj_jacs(mujoco.mj_jac, mjm, mjd, point, b)
        for fn in (kd.jac_point, kd.jac):
            ours = fn(m, d, point, b)
            assert_close(f"{fn.__name__}({b}) jacp", ours[0], theirs[0])
            assert_close(f"{fn.__name__}({b}) jacr", ours[1], theirs[1])


@pytest.mark.parametrize("source", _sources(range(2, 240, 4)))
def test_jacobians_match_mujoco(source):
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(404)
    for _ in range(2):
        qpos, _, _, _ = random_state(rng, mjm)
        _position_both(m, d, mjm, mjd, qpos)
        _compare_all(m, d, mjm, mjd, rng)


@settings(max_examples=25, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_jacobians_match_mujoco_hypothesis(xml, state_seed):
    m, d, mjm, mjd = load_pair(xml)
    rng = np.random.default_rng(state_seed)
    qpos, _, _, _ = random_state(rng, mjm)
    _position_both(m, d, mjm, mjd, qpos)
    _compare_all(m, d, mjm, mjd, rng)


# ---- finite differences on the manifold ----------------------------------------------------------


def _rotvec(r: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle) of a rotation matrix close to identity."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(r).ravel())
    vel = np.zeros(3)
    mujoco.mju_quat2Vel(vel, quat, 1.0)
    return vel


def _poses(m, d, qpos):
    d.qpos[:] = qpos
    kd.kinematics(m, d)
    return (d.site_xpos.copy(), d.site_xmat.copy(), d.xpos.copy(), d.xmat.copy(), d.xipos.copy())


def _fd_check(m, d, qpos):
    d.qpos[:] = qpos
    kd.kinematics(m, d)
    kd.com_pos(m, d)
    analytic_site = [kd.jac_site(m, d, s) for s in range(m.nsite)]
    analytic_body = [kd.jac_body(m, d, b) for b in range(m.nbody)]
    analytic_com = [kd.jac_body_com(m, d, b) for b in range(m.nbody)]
    for i in range(m.nv):
        e = np.zeros(m.nv)
        e[i] = 1.0
        qp = qpos.copy()
        qm = qpos.copy()
        kd.integrate_pos(m, qp, e, EPS)
        kd.integrate_pos(m, qm, e, -EPS)
        sp, sRp, bp, bRp, cp = _poses(m, d, qp)
        sm, sRm, bm, bRm, cm = _poses(m, d, qm)
        checks = []
        for s in range(m.nsite):
            jacp, jacr = analytic_site[s]
            checks.append((f"site {s} jacp", (sp[s] - sm[s]) / (2 * EPS), jacp[:, i]))
            checks.append((f"site {s} jacr", _rotvec(sRp[s] @ sRm[s].T) / (2 * EPS), jacr[:, i]))
        for b in range(1, m.nbody):
            jacp, jacr = analytic_body[b]
            checks.append((f"body {b} jacp", (bp[b] - bm[b]) / (2 * EPS), jacp[:, i]))
            checks.append((f"body {b} jacr", _rotvec(bRp[b] @ bRm[b].T) / (2 * EPS), jacr[:, i]))
            checks.append((f"body_com {b} jacp", (cp[b] - cm[b]) / (2 * EPS), analytic_com[b][0][:, i]))
        for name, fd, an in checks:
            err = np.abs(fd - an)
            assert np.all(err <= FD_TOL * (1.0 + np.abs(an))), \
                f"{name}, dof {i}: finite difference {fd} vs analytic {an} (max err {err.max():.3g})"


@pytest.mark.parametrize("source", _sources(range(0, 120, 4)))
def test_jacobians_match_finite_differences(source):
    m, d, mjm, _ = _load(source)
    rng = np.random.default_rng(505)
    for _ in range(2):
        qpos, _, _, _ = random_state(rng, mjm)
        _fd_check(m, d, qpos)


def test_jacobian_ids_are_checked():
    m, d, _, _ = _load(("seed", 0))
    kd.kinematics(m, d)
    kd.com_pos(m, d)
    with pytest.raises(IndexError):
        kd.jac_body(m, d, m.nbody)
    with pytest.raises(IndexError):
        kd.jac_site(m, d, m.nsite)
    with pytest.raises(TypeError, match=r"m\.body\('torso'\)\.id"):
        kd.jac_body(m, d, "torso")
    with pytest.raises(ValueError):
        kd.jac_point(m, d, np.zeros(2), 0)


def test_out_arguments_are_written_checked_and_match_mujoco():
    """jac_site / jac_body / jac / full_m write into the caller's arrays (MuJoCo's out-arguments),
    equal to MuJoCo's; arrays of the wrong shape, dtype, layout or writeability raise, also after the
    same call with good arrays (the checks are remembered per array object, not per shape)."""
    m = kd.models.load("biped")
    d = kd.Data(m)
    mjm = mujoco.MjModel.from_xml_path(str(kd.models.path("biped")))
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(3)
    d.qpos[:] = m.qpos0 + 0.1 * rng.standard_normal(m.nq)
    mjd.qpos[:] = d.qpos
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    nv = m.nv
    jacp, jacr, mjp, mjr = (np.full((3, nv), np.nan) for _ in range(4))
    for site in range(m.nsite):
        assert kd.jac_site(m, d, site, jacp, jacr)[0] is jacp
        mujoco.mj_jacSite(mjm, mjd, mjp, mjr, site)
        np.testing.assert_allclose(jacp, mjp, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(jacr, mjr, rtol=1e-9, atol=1e-12)
    for body in range(m.nbody):
        kd.jac_body(m, d, body, jacp, jacr)
        mujoco.mj_jacBody(mjm, mjd, mjp, mjr, body)
        np.testing.assert_allclose(jacp, mjp, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(jacr, mjr, rtol=1e-9, atol=1e-12)
    point = np.array([0.1, -0.2, 0.7])
    kd.jac(m, d, point, 3, jacp, jacr)
    mujoco.mj_jac(mjm, mjd, mjp, mjr, point, 3)
    np.testing.assert_allclose(jacp, mjp, rtol=1e-9, atol=1e-12)
    dense, mjdense = np.full((nv, nv), np.nan), np.zeros((nv, nv))
    assert kd.full_m(m, d, out=dense) is dense
    mujoco.mj_fullM(mjm, mjd, mjdense)
    np.testing.assert_allclose(dense, mjdense, rtol=1e-9, atol=1e-12)
    readonly = np.zeros((3, nv))
    readonly.flags.writeable = False
    for bad, error in ((np.zeros((3, nv + 1)), ValueError), (np.zeros((nv, 3)).T, ValueError),
                       (np.zeros(3 * nv), ValueError), (np.zeros((3, nv), np.float32), ValueError),
                       (readonly, ValueError), ([[0.0] * nv] * 3, TypeError)):
        with pytest.raises(error, match="jacp"):
            kd.jac_site(m, d, 0, bad, jacr)
    with pytest.raises(ValueError, match="full_m: out"):
        kd.full_m(m, d, out=np.zeros((nv, nv + 1)))
