"""Inverse dynamics with constraints, the invdiscrete and fwdinv flags, and rne_post_constraint,
against MuJoCo 4.0 (mj_inverse, mj_step, mj_rnePostConstraint).

Models with joint limits (hinge, slide, ball), dof and tendon friction loss, connect, weld,
joint and tendon equalities (body and site semantics, relpose, torquescale), tendon limits,
spatial tendons with pulleys and wrapping, a lone free body; contacts disabled. States come
from MuJoCo simulations with random controls and applied forces, so limits are hit and rows
are in every state. Tolerance: the oracle's (1e-9 relative, 1e-12 absolute).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import assert_close, assert_fields, assert_model_fields, compare

import kinedyn as kd
from kinedyn.tools import trajectory

INTEGRATORS = ("Euler", "implicitfast", "RK4")
INVDISCRETE = int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
FWDINV = int(mujoco.mjtEnableBit.mjENBL_FWDINV)

LIMITS = """<mujoco><option integrator="{integrator}"><flag contact="disable"/></option>
<worldbody>
  <body name="a" pos="0 0 1">
    <joint name="ball" type="ball" range="0 0.4" damping="0.2"/>
    <geom type="capsule" size=".05" fromto="0 0 0 0 0 -.4"/>
    <body name="b" pos="0 0 -.4">
      <joint name="hinge" type="hinge" axis="1 0 0" range="-0.3 0.3" margin="0.02" frictionloss="0.1"
             damping="0.1"/>
      <geom type="capsule" size=".04" fromto="0 0 0 0 .3 0"/>
      <body name="c" pos="0 .3 0">
        <joint name="slide" type="slide" axis="0 1 0" range="-0.05 0.08" frictionloss="0.05" damping="0.5"/>
        <geom type="box" size=".05 .04 .03"/>
      </body>
    </body>
  </body>
  <body name="p" pos="1 0 1">
    <joint name="h2" type="hinge" axis="0 1 0" range="-20 40" solreflimit="0.01 0.5"
           solimplimit="0.8 0.9 0.01" armature="0.05"/>
    <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
  </body>
</worldbody>
<actuator>
  <motor joint="hinge" gear="2"/>
  <velocity joint="slide" kv="3"/>
  <motor joint="h2"/>
  <general joint="ball" gear="0 0 1 0 0 0" gaintype="affine" gainprm="1 0 0.3" biastype="affine"
           biasprm="0 0 -0.5"/>
</actuator>
</mujoco>"""

EQUALITY = """<mujoco><option integrator="{integrator}"><flag contact="disable"/></option>
<worldbody>
  <body name="a" pos="0 0 1">
    <joint name="ba" type="ball" damping="0.1"/>
    <geom type="capsule" size=".05" fromto="0 0 0 0 0 -.5"/>
    <site name="sa" pos="0.1 0.2 -0.5" quat="0.9 0.1 0.3 0.2"/>
    <body name="b" pos="0 0 -.5">
      <joint name="hb" type="hinge" axis="1 0 0" range="-0.5 0.5" damping="0.2"/>
      <geom size=".06"/>
      <site name="sb" pos="0 0.1 0" quat="0.7 0.3 0.1 0.1"/>
    </body>
  </body>
  <body name="c" pos="0.5 0 1">
    <freejoint/>
    <geom type="box" size=".1 .08 .06"/>
    <site name="sc" pos="0.05 0 0"/>
  </body>
  <body name="e" pos="-0.5 0 1">
    <joint name="se" type="slide" axis="0 0 1" damping="0.5"/>
    <geom size=".1"/>
  </body>
  <body name="f" pos="0 0.5 0.5">
    <joint name="hf" type="hinge" axis="0 1 0"/>
    <geom size=".1"/>
    <body name="g" pos="0 0 -0.3">
      <joint name="hg" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom size=".05"/>
    </body>
  </body>
  <body name="k" pos="0.2 -0.6 1.2">
    <joint name="hk" type="hinge" axis="1 0 0"/>
    <geom size=".05"/>
    <site name="sk" pos="0 0 -0.1" quat="0.8 0 0.6 0"/>
  </body>
</worldbody>
<tendon>
  <fixed name="t1"><joint joint="hf" coef="1"/><joint joint="se" coef="0.5"/></fixed>
  <fixed name="t2"><joint joint="hk" coef="1"/></fixed>
</tendon>
<equality>
  <weld body1="c" body2="b" torquescale="0.4" relpose="0 0.1 -0.6 0.9 0.1 0.2 0.3"/>
  <connect body1="e" body2="a" anchor="0 0 0.1"/>
  <weld site1="sa" site2="sk" torquescale="2"/>
  <connect site1="sb" site2="sc"/>
  <joint joint1="hg" joint2="hf" polycoef="0 0.5 0.1 0 0"/>
  <tendon tendon1="t2" tendon2="t1" polycoef="0.1 1 0 0.2 0"/>
</equality>
<actuator>
  <motor joint="hb"/>
  <velocity joint="se" kv="2"/>
  <motor joint="hf" gear="0.5"/>
</actuator>
</mujoco>"""

TENDONS = """<mujoco><option integrator="{integrator}"><flag contact="disable"/></option>
<worldbody>
  <site name="w" pos="0 0 2"/>
  <body name="a" pos="0 0 1">
    <joint name="ba" type="ball" damping="0.05"/>
    <geom type="capsule" size=".05" fromto="0 0 0 0 0 -.5"/>
    <site name="sa" pos="0.1 0.2 -0.5"/>
    <body name="b" pos="0 0 -.5">
      <joint name="hb" type="hinge" axis="1 0 0" damping="0.1"/>
      <geom name="ball" size=".05"/>
      <site name="sb" pos="0 0.1 0"/>
      <site name="side" pos="0 0 -0.2"/>
    </body>
  </body>
  <body name="c" pos="0.5 0 1">
    <freejoint/>
    <geom type="box" size=".1 .1 .1"/>
    <geom name="cyl" type="cylinder" size="0.05 0.1" pos="0 0 -0.3" euler="0 90 0"/>
    <site name="sc" pos="0.05 0 0"/>
    <site name="sc2" pos="0 0.05 0"/>
  </body>
  <body name="e" pos="-0.5 0 1">
    <joint name="se" type="slide" axis="0 0 1" range="-0.1 0.1" damping="0.3"/>
    <geom size=".1"/>
    <site name="se" pos="0 0 0.1"/>
    <site name="se2" pos="1.0 -0.05 -0.6"/>
  </body>
  <body name="f" pos="0 0.5 0.5">
    <joint name="hf" type="hinge" axis="0 1 0" frictionloss="0.05"/>
    <geom size=".1"/>
    <site name="sf" pos="0.1 0 0"/>
  </body>
</worldbody>
<tendon>
  <spatial name="t1" stiffness="3" damping="0.5" limited="true" range="0 1.3" frictionloss="0.2">
    <site site="sa"/><geom geom="ball" sidesite="side"/><site site="sc"/><pulley divisor="2"/>
    <site site="sc"/><site site="se"/>
  </spatial>
  <spatial name="t2" limited="true" range="0.3 0.6" damping="0.2"><site site="w"/><site site="sf"/></spatial>
  <spatial name="t3" stiffness="5" springlength="0.3" frictionloss="0.1" actuatorfrcrange="-0.4 0.4">
    <site site="sc2"/><geom geom="cyl"/><site site="se2"/>
  </spatial>
  <fixed name="t4" limited="true" range="-0.2 0.3" frictionloss="0.1">
    <joint joint="se" coef="1"/><joint joint="hf" coef="-0.5"/>
  </fixed>
</tendon>
<equality>
  <tendon tendon1="t2" tendon2="t1" polycoef="0 0.5 0.1 0 0"/>
</equality>
<actuator>
  <motor tendon="t1" gear="2"/>
  <motor tendon="t3"/>
  <velocity joint="se" kv="2"/>
  <motor joint="hb"/>
</actuator>
</mujoco>"""

MODELS = {"limits": LIMITS, "equality": EQUALITY, "tendons": TENDONS}


# ---- models and states --------------------------------------------------------------------------


_PAIRS: dict[str, tuple] = {}


def _pair(name, integrator="Euler"):
    """(m, d, mjm, mjd) for model ``name`` with ``integrator``, constraints on; private copies."""
    key = f"{name}/{integrator}"
    if key not in _PAIRS:
        xml = MODELS[name].format(integrator=integrator)
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = kd.Model.from_xml_string(xml)
        assert_model_fields(m, mjm)  # the constraint compiler's fields (margins, solref, invweight0, eq_*)
        _PAIRS[key] = (m, mjm)
    m, mjm = _PAIRS[key]
    m = m.copy()
    mjm = mujoco.MjModel.from_xml_string(MODELS[name].format(integrator=integrator))
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def _simulated_states(mjm, nstate=3, every=120, seed=0):
    """States (qpos, qvel, act, ctrl, qfrc_applied, xfrc_applied, qacc) along a MuJoCo run with
    random controls and applied forces; qacc is the forward acceleration at the state."""
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    states = []
    for k in range(nstate * every):
        mjd.ctrl[:] = rng.normal(scale=2.0, size=mjm.nu)
        mjd.qfrc_applied[:] = rng.normal(size=mjm.nv)
        mjd.xfrc_applied[1:] = rng.normal(scale=0.5, size=(mjm.nbody - 1, 6))
        mujoco.mj_step(mjm, mjd)
        if (k + 1) % every == 0:
            mujoco.mj_forward(mjm, mjd)
            states.append(tuple(np.array(getattr(mjd, f)) for f in
                                ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied", "qacc")))
    return states


def _set(m, d, mjm, mjd, state, qacc=None):
    qpos, qvel, act, ctrl, applied, xapplied, fwd_qacc = state
    for data in (d, mjd):
        data.qpos[:] = qpos
        data.qvel[:] = qvel
        data.act[:] = act
        data.ctrl[:] = ctrl
        data.qfrc_applied[:] = applied
        data.xfrc_applied[:] = xapplied
        data.qacc[:] = fwd_qacc if qacc is None else qacc
        data.qacc_warmstart[:] = fwd_qacc


INVERSE_FIELDS = ("qfrc_inverse", "qfrc_constraint", "efc_force", "efc_state")


# ---- inverse ------------------------------------------------------------------------------------


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_inverse_matches_mj_inverse(name, integrator):
    """qfrc_inverse, efc_force, efc_state, qfrc_constraint and the rows vs mj_inverse, at the forward
    acceleration and at perturbed ones (other rows active), with and without invdiscrete."""
    m, d, mjm, mjd = _pair(name, integrator)
    rng = np.random.default_rng(1)
    nrows = 0
    for state in _simulated_states(mjm):
        for scale in (0.0, 0.3, 3.0):
            qacc = state[-1] + rng.normal(scale=scale, size=mjm.nv)
            for flags in (0, INVDISCRETE):
                m.opt.enableflags = mjm.opt.enableflags = flags
                _set(m, d, mjm, mjd, state, qacc)
                if flags and integrator == "RK4":
                    with pytest.raises(mujoco.FatalError, match="RK4"):
                        mujoco.mj_inverse(mjm, mjd)
                    with pytest.raises(ValueError, match="RK4"):
                        kd.inverse(m, d)
                    continue
                kd.inverse(m, d)
                mujoco.mj_inverse(mjm, mjd)
                assert_fields(m, d, mjm, mjd, names=INVERSE_FIELDS)
                assert_fields(m, d, mjm, mjd, stage=("position", "velocity"),
                              skip=("qLD", "qLDiagInv"))
                np.testing.assert_array_equal(d.qacc, qacc)  # the input is left alone
                nrows += d.nefc
    assert nrows > 0


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_then_inverse_round_trip(name, integrator):
    """forward then inverse gives qfrc_applied + J'xfrc_applied + qfrc_actuator back (to the
    solver's tolerance; tight here), and MuJoCo's mj_forward + mj_inverse the same."""
    m, d, mjm, mjd = _pair(name, integrator)
    m.opt.tolerance = mjm.opt.tolerance = 1e-12
    for state in _simulated_states(mjm, seed=2):
        _set(m, d, mjm, mjd, state)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        expected = d.qfrc_applied + d.qfrc_actuator
        xfrc = np.zeros(m.nv)
        for b in range(1, m.nbody):
            jacp, jacr = kd.jac_body_com(m, d, b)
            xfrc += jacp.T @ d.xfrc_applied[b, :3] + jacr.T @ d.xfrc_applied[b, 3:]
        expected += xfrc
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=INVERSE_FIELDS)
        scale = max(np.abs(expected).max(), np.abs(d.qfrc_bias).max(), np.abs(d.qfrc_constraint).max())
        assert_close("forward/inverse round trip", d.qfrc_inverse, expected, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("integrator", ("Euler", "implicitfast"))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_step_then_discrete_inverse_recovers_forces(name, integrator):
    """invdiscrete inverts the integrator's step: from (qpos, qvel) and the step's
    (qvel_next - qvel) / h, inverse gives back the applied and actuator forces, implicit
    damping, actuator velocity derivatives and the free body's gyroscopic term included."""
    m, d, mjm, mjd = _pair(name, integrator)
    m.opt.tolerance = mjm.opt.tolerance = 1e-12
    h = m.opt.timestep
    for state in _simulated_states(mjm, seed=3):
        _set(m, d, mjm, mjd, state)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        expected = d.qfrc_applied + d.qfrc_actuator
        for b in range(1, m.nbody):
            jacp, jacr = kd.jac_body_com(m, d, b)
            expected += jacp.T @ d.xfrc_applied[b, :3] + jacr.T @ d.xfrc_applied[b, 3:]
        qacc_step = (d.qvel - state[1]) / h
        _set(m, d, mjm, mjd, state, qacc_step)
        m.opt.enableflags = mjm.opt.enableflags = INVDISCRETE
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        m.opt.enableflags = mjm.opt.enableflags = 0
        assert_fields(m, d, mjm, mjd, names=INVERSE_FIELDS)
        scale = max(np.abs(expected).max(), np.abs(d.qfrc_bias).max(), np.abs(d.qfrc_constraint).max())
        # qacc_step loses |qvel| eps / h to the subtraction
        atol = 1e-8 * scale + 1e3 * np.finfo(float).eps * np.abs(state[1]).max() / h
        assert_close("step/discrete inverse round trip", d.qfrc_inverse, expected, rtol=0, atol=atol)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_fwdinv_in_step(integrator):
    """With fwdinv, step stores mj_compareFwdInv's solver_fwdinv and leaves the inverse's efc_state
    and qfrc_inverse; with invdiscrete too (large values there) they match MuJoCo's."""
    m, d, mjm, mjd = _pair("limits", integrator)
    rng = np.random.default_rng(4)
    for flags in (FWDINV, FWDINV | INVDISCRETE):
        m.opt.enableflags = mjm.opt.enableflags = flags
        kd.reset(m, d)
        mujoco.mj_resetData(mjm, mjd)
        if integrator == "RK4" and flags & INVDISCRETE:
            mujoco.mj_forward(mjm, mjd)
            assert mjd.nefc > 0  # the hinge's friction loss
            with pytest.raises(mujoco.FatalError, match="RK4"):
                mujoco.mj_step(mjm, mjd)
            with pytest.raises(ValueError, match="RK4"):
                kd.step(m, d)
            continue
        for _ in range(150):
            u = rng.normal(scale=2.0, size=mjm.nu)
            d.ctrl[:] = mjd.ctrl[:] = u
            kd.step(m, d)
            mujoco.mj_step(mjm, mjd)
            if d.nefc:
                np.testing.assert_array_equal(d.efc_state, mjd.efc_state)
                if flags & INVDISCRETE:
                    assert_close("solver_fwdinv", d.solver_fwdinv, mjd.solver_fwdinv, rtol=1e-7)
                else:  # both measure the solver's residual: round-off sized
                    scale = np.abs(d.qfrc_actuator).max() + np.abs(d.qfrc_bias).max() + 1.0
                    assert np.all(d.solver_fwdinv < 1e-6 * scale) and np.all(mjd.solver_fwdinv < 1e-6 * scale)
                assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse, rtol=1e-7,
                             atol=1e-9 * (1 + np.abs(mjd.qfrc_inverse).max()))
        assert_close("qpos after fwdinv steps", d.qpos, mjd.qpos, rtol=1e-7, atol=1e-9)


# ---- rne_post_constraint ------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ("plain", "nogravity", "nopassive"))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_rne_post_constraint_matches_mujoco(name, variant):
    """cacc, cfrc_int, cfrc_ext vs mj_rnePostConstraint after forward (and after inverse at another
    qacc): xfrc_applied, connect and weld forces (4.0's weld torque), spatial tendon forces."""
    m, d, mjm, mjd = _pair(name)
    bits = {"plain": 0, "nogravity": int(kd.DisableBit.GRAVITY),
            "nopassive": int(kd.DisableBit.SPRING | kd.DisableBit.DAMPER)}[variant]
    m.opt.disableflags |= bits
    mjm.opt.disableflags |= bits
    rng = np.random.default_rng(5)
    for state in _simulated_states(mjm, seed=6):
        _set(m, d, mjm, mjd, state)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        kd.rne_post_constraint(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)
        assert_fields(m, d, mjm, mjd, stage="rnepost")
        assert np.abs(d.cfrc_ext).max() > 0
        qacc = state[-1] + rng.normal(size=mjm.nv)
        d.qacc[:] = mjd.qacc[:] = qacc
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        kd.rne_post_constraint(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)
        assert_fields(m, d, mjm, mjd, stage="rnepost")


BRANCHY = """<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="torso" pos="0 0 .3">
      <freejoint/>
      <geom type="box" size=".1 .08 .05"/>
      <body name="arm" pos=".1 0 0">
        <joint type="ball"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
        <body name="hand" pos=".2 0 0">
          <joint type="hinge" axis="0 1 0"/><joint type="slide" axis="1 0 0"/>
          <geom type="sphere" size=".04"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_rne_and_rne_post_constraint_round_as_mujoco():
    """Given MuJoCo's own inputs bit for bit, mj_rne and mj_rnePostConstraint's outputs are
    MuJoCo's to the last bit: a multi-dof body's cacc adds the summed cdof_dot qvel, then the
    summed cdof qacc (mju_mulDofVec); the cross products pair their terms as mji_crossForce
    and mji_crossMotion, the projection as mji_dot6. (cfrc_int of a free tree sums forces that
    cancel; with other rounding its near-zero entries are round-off of the forces summed.)"""
    mjm = mujoco.MjModel.from_xml_string(BRANCHY)
    mjd = mujoco.MjData(mjm)
    m = kd.Model.from_xml_string(BRANCHY)
    d = kd.Data(m)
    qpos = mjm.qpos0.copy()
    qpos[2] = 0.05
    qpos[3:7] = np.array([0.9, 0.1, 0.3, 0.2]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])
    qpos[7:11] = np.array([0.8, 0.3, -0.2, 0.1]) / np.linalg.norm([0.8, 0.3, -0.2, 0.1])
    qpos[11:] = [0.4, 0.05]
    d.qpos[:] = mjd.qpos[:] = qpos
    d.qvel[:] = mjd.qvel[:] = np.random.default_rng(1).normal(size=mjm.nv) * 3
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert mjd.ncon >= 3
    for name in ("qacc", "efc_force", "cdof", "cdof_dot", "cinert", "cvel", "subtree_com", "xipos"):
        theirs = np.asarray(getattr(mjd, name))
        getattr(d, name)[:theirs.shape[0]] = theirs.reshape(getattr(d, name)[:theirs.shape[0]].shape)
    for i in range(mjd.ncon):
        d.contact_pos[i] = mjd.contact.pos[i]
        d.contact_frame[i] = mjd.contact.frame[i].reshape(3, 3)
    kd.rne_post_constraint(m, d)
    mujoco.mj_rnePostConstraint(mjm, mjd)
    for name in ("cacc", "cfrc_ext", "cfrc_int"):
        np.testing.assert_array_equal(getattr(d, name), getattr(mjd, name), err_msg=name)
    for flg_acc in (0, 1):
        theirs = np.zeros(mjm.nv)
        mujoco.mj_rne(mjm, mjd, flg_acc, theirs)
        np.testing.assert_array_equal(kd.rne(m, d, flg_acc=bool(flg_acc)), theirs, err_msg=f"rne {flg_acc}")


def test_rne_post_constraint_balances_the_forces():
    """Newton-Euler consistency: the world's cfrc_int is the total external force the trees
    need, and each dof's cdof . cfrc_int is qfrc_inverse minus the external forces projected
    (here with the joint-space forces limits, friction and joint equalities make)."""
    m, d, mjm, mjd = _pair("limits")
    state = _simulated_states(mjm, nstate=1, seed=7)[0]
    _set(m, d, mjm, mjd, state)
    kd.forward(m, d)
    kd.rne_post_constraint(m, d)
    # cdof . cfrc_int[body] = M qacc + bias (armature excluded) on every dof: RNE with qacc
    rne = kd.rne(m, d, flg_acc=True)
    proj = np.array([d.cdof[v] @ d.cfrc_int[m.dof_bodyid[v]] for v in range(m.nv)])
    xfrc = np.zeros(m.nv)
    for b in range(1, m.nbody):
        jacp, jacr = kd.jac_body_com(m, d, b)
        xfrc += jacp.T @ d.xfrc_applied[b, :3] + jacr.T @ d.xfrc_applied[b, 3:]
    assert_close("cdof . cfrc_int", proj, rne - xfrc, rtol=1e-9, atol=1e-10 * np.abs(rne).max())


def test_rne_post_constraint_needs_no_constraints():
    """Without rows: cfrc_ext is the applied forces alone, and matches MuJoCo."""
    m, d, mjm, mjd = _pair("limits")
    m.opt.disableflags |= int(kd.DisableBit.CONSTRAINT)
    mjm.opt.disableflags |= int(kd.DisableBit.CONSTRAINT)
    state = _simulated_states(mjm, nstate=1, seed=8)[0]
    _set(m, d, mjm, mjd, state)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert d.nefc == 0
    kd.rne_post_constraint(m, d)
    mujoco.mj_rnePostConstraint(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="rnepost")


# ---- implicitfast's free body ---------------------------------------------------------------------


def test_implicitfast_free_body_block_includes_tendon_damping():
    """A lone free body pulled by a damped spatial tendon: implicitfast's local 6x6 system has the
    tendon damping in it (mjd_freeMhat takes the whole qDeriv block), so steps match mj_step."""
    xml = """<mujoco><option integrator="implicitfast"><flag contact="disable"/></option>
    <worldbody><site name="w" pos="0 0 2"/>
      <body name="c" pos="0.5 0 1">
        <freejoint/><geom type="box" size=".1 .2 .3"/><site name="sc" pos="0.05 0 0.1"/>
      </body>
    </worldbody>
    <tendon><spatial damping="2" stiffness="10"><site site="w"/><site site="sc"/></spatial></tendon>
    </mujoco>"""
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    qvel = np.array([0.3, -0.2, 0.1, 2.0, -1.0, 3.0])
    d.qvel[:] = mjd.qvel[:] = qvel
    for _ in range(50):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert_close("qvel", d.qvel, mjd.qvel, rtol=1e-9, atol=1e-12)
    assert_close("qpos", d.qpos, mjd.qpos, rtol=1e-9, atol=1e-12)


# ---- tools: trajectory inverse dynamics, inverse actuation ----------------------------------------


PRESSED = """<mujoco><option integrator="{integrator}"><flag contact="disable"/></option>
<worldbody>
  <body pos="0 0 1">
    <joint name="shoulder" type="hinge" axis="0 1 0" range="-30 30" damping="{damping}"/>
    <geom type="capsule" size=".04" fromto="0 0 0 .4 0 0"/>
    <body pos=".4 0 0">
      <joint name="elbow" type="hinge" axis="0 1 0" range="-10 60" frictionloss="0.2"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .3 0 0"/>
      <body pos=".3 0 0">
        <joint name="wrist" type="slide" axis="1 0 0" range="-0.02 0.02"/>
        <geom size=".04"/>
      </body>
    </body>
  </body>
</worldbody>
<actuator>
  <motor joint="shoulder" gear="5"/><motor joint="elbow" gear="3"/><motor joint="wrist" gear="2"/>
</actuator>
</mujoco>"""


def _pressed_pair(integrator="Euler", damping=0.0):
    xml = PRESSED.format(integrator=integrator, damping=damping)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = kd.Model.from_xml_string(xml)
    assert_model_fields(m, mjm)
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def _pressed_run(m, mjm, nstep=300, seed=11):
    """Drive the arm into its limits with MuJoCo: (t, qpos, forces, ctrls, applied) per sample;
    forces = qfrc_applied + qfrc_actuator applied during the step from that sample."""
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    t, qpos, forces, ctrls, applied, nefc = [], [], [], [], [], []
    for _ in range(nstep):
        mjd.ctrl[:] = np.array([2.0, -1.5, 1.0]) + 0.5 * rng.normal(size=3)
        mjd.qfrc_applied[:] = 0.1 * rng.normal(size=mjm.nv)
        t.append(mjd.time)
        qpos.append(mjd.qpos.copy())
        mujoco.mj_step(mjm, mjd)
        forces.append(mjd.qfrc_applied + mjd.qfrc_actuator)
        ctrls.append(mjd.ctrl.copy())
        applied.append(mjd.qfrc_applied.copy())
        nefc.append(mjd.nefc)
    return (np.array(t), np.array(qpos), np.array(forces), np.array(ctrls), np.array(applied),
            np.array(nefc))


@pytest.mark.parametrize("integrator, damping", [("Euler", 0.0), ("Euler", 0.5), ("implicitfast", 0.5)])
def test_trajectory_inverse_dynamics_at_the_limits(integrator, damping):
    """A trajectory pressed against joint limits (and with joint friction loss): every sample's
    qfrc_inverse equals mj_inverse's (invdiscrete with discrete=True), and the forces that drove
    the simulation come back, limit forces excluded."""
    m, d, mjm, mjd = _pressed_pair(integrator, damping)
    m.opt.tolerance = mjm.opt.tolerance = 1e-12
    t, qpos, forces, _, applied, nefc = _pressed_run(m, mjm)
    assert (nefc > 1).mean() > 0.5  # friction loss and at least one limit in most samples
    discrete = damping > 0 or integrator != "Euler"
    res = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, discrete=discrete)
    if discrete:
        mjm.opt.enableflags |= INVDISCRETE
    for row, k in enumerate(res.index):
        mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = res.qpos[row], res.qvel[row], res.qacc[row]
        mjd.qfrc_applied[:] = applied[k]
        mujoco.mj_inverse(mjm, mjd)
        assert_close(f"qfrc_inverse at t={res.t[row]:g}", res.qfrc_inverse[row], mjd.qfrc_inverse,
                     atol=1e-12 + 1e-9 * np.abs(mjd.qfrc_inverse).max())
    # the forces of the step from each kept sample: qfrc_joint + applied = qfrc_inverse
    scale = np.abs(forces).max() + 1.0
    atol = 1e-7 * scale + 1e3 * np.finfo(float).eps * np.abs(qpos).max() / m.opt.timestep ** 2
    assert_close("recovered forces", res.qfrc_inverse, forces[res.index], rtol=0, atol=atol)
    if not discrete:
        # and the plain inverse is kd.inverse's, sample by sample
        for row in (0, res.t.size // 2, res.t.size - 1):
            d.qpos[:], d.qvel[:], d.qacc[:] = res.qpos[row], res.qvel[row], res.qacc[row]
            d.qfrc_applied[:] = applied[res.index[row]]
            kd.inverse(m, d)
            np.testing.assert_array_equal(res.qfrc_inverse[row], d.qfrc_inverse)


def test_trajectory_discrete_refuses_rk4():
    m, _, mjm, _ = _pressed_pair("RK4")
    t, qpos, _, _, _, _ = _pressed_run(m, mjm, nstep=10)
    with pytest.raises(ValueError, match="RK4"):
        trajectory.inverse_dynamics(m, t, qpos, discrete=True)


def test_inverse_actuation_at_a_limit():
    """At a state pressed against the limits, inverse_actuation of the forward acceleration gives
    the controls that produced it: the limit and friction forces are not asked of the motors."""
    m, d, mjm, mjd = _pressed_pair()
    m.opt.tolerance = 1e-12
    checked = 0
    mjd2 = mujoco.MjData(mjm)
    rng = np.random.default_rng(12)
    for _ in range(150):
        mjd2.ctrl[:] = np.array([2.0, -1.5, 1.0]) + 0.5 * rng.normal(size=3)
        mujoco.mj_step(mjm, mjd2)
        if mjd2.nefc < 2:
            continue
        d.qpos[:], d.qvel[:], d.ctrl[:] = mjd2.qpos, mjd2.qvel, mjd2.ctrl
        kd.forward(m, d)
        sol = kd.inverse_actuation(m, d, qacc=d.qacc.copy())
        assert compare("ctrl", sol.ctrl, d.ctrl, rtol=1e-6, atol=1e-7) is None, (sol.ctrl, d.ctrl)
        checked += 1
    assert checked > 20
