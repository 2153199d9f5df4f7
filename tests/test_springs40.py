# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""MuJoCo 4.0's spring and damper features vs MuJoCo: joint ``springdamper``, polynomial stiffness and
damping of joints and tendons, and the ``damping`` and ``armature`` actuators add to their targets.

Oracle: MuJoCo 4.0 on the same MJCF (``oracle.load_pair``, constraints and contacts off), compared
field by field at the oracle's tolerance: the compiled model (``jnt_stiffness`` and ``dof_damping`` from
springdamper, the ``*poly`` arrays, ``jnt_actuatorid``, ``dof_invweight0`` and ``actuator_acc0``
with the actuators' armature in M), ``forward`` (M, qfrc_spring, qfrc_damper, qacc, ...), the
energy, ``cfrc_ext`` (spatial tendon forces), ``inverse`` (with the discrete-time qacc of the
implicit integrators) and short rollouts under Euler (implicit damping), implicitfast and RK4.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import assert_fields, assert_model_fields, load_pair, set_same_state
from strategies import random_state

import kinedyn as kd

# every joint type with springdamper; polynomial springs and dampers on joints and tendons (fixed and
# spatial); actuators with damping (linear and polynomial) and armature on hinge, slide, ball and free
# joints and on tendons, two of them on one joint (jnt_actuatorid -2); a lone free body (implicitfast's
# 6x6 block)
MODEL = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"><flag energy="enable" {flags}/></option>
  <worldbody>
    <body>
      <joint name="a" axis="0 1 0" damping="0.3 0.1 0.02" stiffness="2 0.5 0.3" armature="0.1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/>
      <body pos="0.3 0 0">
        <joint name="b" type="slide" axis="1 0 0" springdamper="0.3 0.8"/>
        <geom type="box" size="0.1 0.05 0.02" mass="0.5" pos="0.1 0 0"/>
        <body pos="0.2 0 0">
          <joint name="c" springdamper="0.2 1.5" stiffness="3" damping="2"/>
          <geom type="sphere" size="0.05" mass="0.3"/>
          <body pos="0.1 0 0">
            <joint name="ball" type="ball" stiffness="1 2 3" damping="0.1 0.2 0.3" springdamper="0.2 1"/>
            <geom type="box" size="0.1 0.05 0.03" mass="0.3" pos="0.1 0 0"/>
          </body>
        </body>
      </body>
    </body>
    <body pos="1 0 0"><freejoint name="f"/><geom type="box" size="0.1 0.2 0.3" mass="0.4"/></body>
    <body pos="2 0 0"><joint type="free" springdamper="0.3 0.5" stiffness="1 0.2 0.1"/><geom size="0.1" mass="0.3"/></body>
    <body pos="-1 0 0">
      <joint name="b2" type="ball" stiffness="1 -0.5 0.4" damping="0.2 0.1 0.1"/>
      <geom type="box" size="0.1 0.2 0.05" pos="0 0 -0.2" mass="0.4"/>
      <site name="s1" pos="0.1 0 -0.2"/>
    </body>
    <site name="s2" pos="-1 0.5 0.5"/>
  </worldbody>
  <tendon>
    <fixed name="t" stiffness="1 0.3 0.2" damping="0.2 0.1 0.05"><joint joint="b" coef="1"/><joint joint="c" coef="0.5"/></fixed>
    <spatial name="sp" stiffness="5 1 2" damping="0.3 0.2 0.1" springlength="0.3 0.4"><site site="s1"/><site site="s2"/></spatial>
  </tendon>
  <actuator>
    <motor joint="a" gear="2" damping="0.5 0.2 0.1" armature="0.05"/>
    <position joint="b" kp="10" armature="0.2" damping="1"/>
    <motor joint="b" gear="3" armature="0.1" damping="0 0.3"/>
    <motor tendon="sp" damping="0.2 0.3"/>
    <motor tendon="t" damping="0.4 0.1 0.1" gear="1.5"/>
    <motor joint="ball" armature="0.02" damping="0.1" gear="2 0 0 0 0 0"/>
    <motor joint="f" armature="0.01" damping="0.05 0.01" gear="1.5 0 0 0 0 0"/>
  </actuator>
</mujoco>
"""


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "RK4"])
def test_springs_dampers_armature_match_mujoco(integrator):
    flags = "" if integrator == "RK4" else 'invdiscrete="enable"'
    m, d, mjm, mjd = load_pair(MODEL.format(integrator=integrator, flags=flags))
    assert_model_fields(m, mjm)
    # the features are there: springdamper's values, a joint with two actuators, reflected armature
    assert m.jnt_stiffness[1] > 0 and m.dof_damping[1] > 0 and m.jnt_actuatorid[1] == -2
    rng = np.random.default_rng(0)
    for _ in range(2):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd)
        # every dof has a damper, every one but the plain free joint's (6) a spring
        assert np.abs(mjd.qfrc_damper).min() > 0 and np.count_nonzero(mjd.qfrc_spring) == mjm.nv - 6
        kd.rne_post_constraint(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("cfrc_ext", "cfrc_int", "cacc"))
        # rne with armature=True is M qacc + C, M with the actuators' armature
        d.qacc[:] = rng.normal(size=mjm.nv)
        tau = kd.rne(m, d, flg_acc=True, armature=True)
        np.testing.assert_allclose(tau, kd.full_m(m, d) @ d.qacc + kd.rne(m, d), rtol=1e-12, atol=1e-12)
        # inverse dynamics: M qacc with the reflected armature, the dampers' derivative in the
        # discrete-time acceleration of Euler and implicitfast
        qacc = rng.normal(size=mjm.nv)
        d.qacc[:] = qacc
        mjd.qacc[:] = qacc
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        for _ in range(5):
            kd.step(m, d)
            mujoco.mj_step(mjm, mjd)
        assert mjd.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0  # a stable rollout, not a reset
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "qacc", "energy"))


@pytest.mark.parametrize("joint, actuator, message", [
    ('springdamper="0.1 0"', "", "when defined, springdamper values must be positive in joint"),
    ('springdamper="-1 1"', "", "when defined, springdamper values must be positive in joint"),
    ('springyield="-0.1"', "", "springyield cannot be negative in joint"),
    ('type="free" springyield="0.1"', "", "springyield should not be defined in free joint"),
    ("", '<motor site="s" damping="1"/>', "damping requires joint or tendon transmission"),
    ("", '<motor site="s" armature="1"/>', "armature requires joint or tendon transmission"),
])
def test_refused_as_mujoco(joint, actuator, message):
    xml = (f'<mujoco><worldbody><body><joint name="a" {joint}/><geom size=".1"/><site name="s"/></body>'
           f"</worldbody><actuator>{actuator}</actuator></mujoco>")
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError, match=message):
        kd.Model.from_xml_string(xml)
