# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Tendon armature (MuJoCo 4.0's mj_tendonArmature, mj_tendonBias, mj_tendonDot) vs MuJoCo.

Oracle: MuJoCo 4.0 on the same MJCF (``oracle.load_pair`` with constraints and contacts on), compared
at the oracle's tolerance: the compiled model (tendon_armature, M's sparsity after the demotion of
simple bodies on a spatial path with armature, the invweights with the armature in M), ``forward``
(M, qfrc_bias, qacc, the constraint rows of a tendon limit, a joint limit and contacts), ``inverse``,
``step`` under Euler, implicit, implicitfast and RK4, and ``batch.rollout`` against
``mujoco.rollout``. A check on MuJoCo itself that the armature changes M and qfrc_bias keeps the
comparisons from passing on a feature that does nothing.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout
from numba import config
from oracle import assert_fields, assert_model_fields, load_pair, set_same_state
from strategies import random_state

import kinedyn as kd
import kinedyn.mujoco as kmj
from kinedyn._jit.bind import needed_units
from kinedyn.engine import forward
from kinedyn.tools import batch

# a hinge-slide-ball chain with a fixed tendon (armature, a limit) and a spatial tendon with a pulley
# (armature, and two actuators' armature on it); a simple body (slides from the world) on a spatial
# tendon with armature, so demoted; a spatial tendon between two trees (the couplings MuJoCo drops);
# a limited joint and a floor the chain's end touches
MODEL = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"><flag energy="enable" {flags}/></option>
  <worldbody>
    <geom type="plane" size="2 2 0.1" pos="0 0 -0.45"/>
    <site name="w0" pos="0 0.1 0.1"/>
    <body name="a">
      <joint name="j0" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <site name="s0" pos="0.1 0.02 0"/>
      <body name="b" pos="0.3 0 0">
        <joint name="j1" type="hinge" axis="0 0 1" limited="true" range="-0.6 0.6"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <site name="s1" pos="0.2 0.03 0.01"/>
        <body name="c" pos="0.3 0 0">
          <joint name="j2" type="slide" axis="1 0 0"/>
          <joint name="j3" type="ball"/>
          <geom type="sphere" size="0.05" pos="0 0 -0.1"/>
          <site name="s2" pos="0.05 0 0.02"/>
        </body>
      </body>
    </body>
    <body name="simple" pos="0 -0.5 0">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/>
      <geom type="box" size="0.05 0.05 0.05"/>
      <site name="s3" pos="0.05 0 0"/>
    </body>
    <body name="free" pos="0.5 0.5 0.3">
      <freejoint/>
      <geom type="box" size="0.05 0.04 0.03"/>
      <site name="s4" pos="0.05 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="f" armature="0.3" limited="true" range="-0.4 0.4"><joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/></fixed>
    <spatial name="sp" armature="0.7"><site site="w0"/><site site="s0"/><site site="s1"/><pulley divisor="2"/><site site="s1"/><site site="s2"/></spatial>
    <spatial name="simple" armature="0.2"><site site="w0"/><site site="s3"/></spatial>
    <spatial name="cross" armature="0.05"><site site="s2"/><site site="s4"/></spatial>
  </tendon>
  <actuator>
    <motor tendon="sp" armature="0.1" gear="2"/>
    <motor tendon="sp" armature="0.05" gear="-1.5"/>
    <motor tendon="f"/>
  </actuator>
</mujoco>
"""

INTEGRATORS = ("Euler", "implicit", "implicitfast", "RK4")


@pytest.fixture(scope="module")
def pair():
    return load_pair(MODEL.format(integrator="Euler", flags=""), disable=False)


def _state(mjm, seed):
    qpos, qvel, ctrl, act = random_state(np.random.default_rng(seed), mjm)
    return qpos, qvel * 0.5, ctrl, act


def test_model_matches_mujoco(pair):
    m, _, mjm, _ = pair
    assert_model_fields(m, mjm)
    # the simple body's two slides are coupled by its tendon's armature: demoted, so row y keeps x
    y = mjm.jnt_dofadr[mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "y")]
    assert m.M_rownnz[y] == 2
    assert m.tendon_actuatorid[1] == -2  # two actuators on "sp": their armature found by a scan


def test_the_armature_changes_mujoco(pair):
    """On MuJoCo alone: without the tendons' armature M and qfrc_bias differ (the tests below can fail)."""
    _, _, mjm, mjd = pair
    plain = mujoco.MjModel.from_xml_string(MODEL.format(integrator="Euler", flags=""))
    plain.tendon_armature[:] = 0.0
    plain.actuator_armature[:] = 0.0
    pd = mujoco.MjData(plain)
    qpos, qvel, _, _ = _state(mjm, 1)
    for model, data in ((mjm, mjd), (plain, pd)):
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(model, data)
    assert np.abs(mjd.M - pd.M).max() > 1e-2
    assert np.abs(mjd.qfrc_bias - pd.qfrc_bias).max() > 1e-3


def test_forward_and_inverse_match_mujoco(pair):
    m, d, mjm, mjd = pair
    rng = np.random.default_rng(3)
    for seed in range(3):
        set_same_state(m, d, mjm, mjd, *_state(mjm, seed))
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd)
        qacc = rng.normal(size=mjm.nv)
        d.qacc[:] = qacc
        mjd.qacc[:] = qacc
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qfrc_inverse", "qfrc_bias", "M"))
    assert mjd.nefc > 0


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_step_matches_mujoco(integrator):
    # with the discrete-time inverse (M and the implicit integrators' derivatives) where MuJoCo has it
    flags = "" if integrator == "RK4" else 'invdiscrete="enable"'
    m, d, mjm, mjd = load_pair(MODEL.format(integrator=integrator, flags=flags), disable=False)
    set_same_state(m, d, mjm, mjd, *_state(mjm, 7))
    for _ in range(30):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert mjd.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "qacc", "qfrc_bias", "M", "efc_force", "energy"))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))


def test_rollout_matches_mujoco_rollout(pair):
    m, _, mjm, _ = pair
    nbatch, nstep = 2, 20
    bd = batch.BatchData(m, nbatch)
    for i in range(nbatch):
        qpos, qvel, _, _ = _state(mjm, 10 + i)
        bd.qpos[i], bd.qvel[i] = qpos, qvel
    state0 = batch.get_state(m, bd)
    control = np.random.default_rng(5).normal(size=(nbatch, nstep, mjm.nu))
    ours = batch.rollout(m, state0, control, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    np.testing.assert_allclose(ours.state, theirs, rtol=1e-9, atol=1e-9)


def test_mujoco_adapter_make_m(pair):
    """kinedyn.mujoco's mj_makeM is mj_crb plus the tendon armature, as MuJoCo's."""
    xml = MODEL.format(integrator="Euler", flags="")
    _, _, mjm, _ = pair
    km = kmj.MjModel.from_xml_string(xml)
    mjd, kmd = mujoco.MjData(mjm), kmj.MjData(km)
    qpos = _state(mjm, 4)[0]
    for lib, model, data in ((mujoco, mjm, mjd), (kmj, km, kmd)):
        data.qpos[:] = qpos
        for stage in (lib.mj_kinematics, lib.mj_comPos, lib.mj_tendon, lib.mj_makeM):
            stage(model, data)
    np.testing.assert_allclose(np.asarray(kmd.M), mjd.M, rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(config.DISABLE_JIT, reason="no units to bind without the JIT")
def test_units_only_for_models_with_tendon_armature(pair):
    def names(model):
        return {u.name.rsplit(".", 1)[1] for u in needed_units(model, (forward.forward_entry,))}

    units = {"tendon_armature_entry", "tendon_bias_entry"}
    assert units <= names(pair[0])
    plain = kd.Model.from_xml_string(MODEL.format(integrator="Euler", flags="").replace("armature=", "damping="))
    assert not units & names(plain)


@pytest.mark.parametrize("tendon, message", [
    ('<spatial armature="-1"><site site="s0"/><site site="s1"/></spatial>', "tendon armature cannot be negative"),
    ('<fixed armature="-1"><joint joint="a" coef="1"/></fixed>', "tendon armature cannot be negative"),
    ('<spatial armature="1"><site site="s0"/><geom geom="g"/><site site="s1"/></spatial>',
     "geom wrapping not supported by tendon armature"),
    ('<spatial name="t"><site site="s0"/><geom geom="g"/><site site="s1"/></spatial></tendon><actuator>'
     '<motor tendon="t" armature="1"/></actuator><tendon>', "geom wrapping not supported"),
])
def test_refused_as_mujoco(tendon, message):
    xml = f"""<mujoco><worldbody><body><joint name="a"/><geom name="g" size=".1"/><site name="s0" pos="0 0 .2"/>
      <body pos="0 0 .5"><joint/><geom size=".1"/><site name="s1" pos="0 .2 0"/></body></body></worldbody>
      <tendon>{tendon}</tendon></mujoco>"""
    with pytest.raises(ValueError, match=message):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError, match=message):
        kd.Model.from_xml_string(xml)
