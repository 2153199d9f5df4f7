# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Gravity compensation (body ``gravcomp``, joint ``actuatorgravcomp``) vs MuJoCo 4.0.

Oracle: MuJoCo on the same MJCF text (``oracle.load_pair``). ``body_gravcomp`` and
``jnt_actgravcomp`` are compared with the compiled model; ``qfrc_gravcomp``, ``qfrc_passive``
and ``qfrc_actuator`` (where the compensation of joints with ``actuatorgravcomp`` goes, before
the joint's ``actuatorfrcrange`` clamp) are registry fields, compared by ``assert_fields`` on
random states at 1e-9 relative; rollouts to 1e-6 * (1 + |mujoco|) after 200 steps.

The model: an arm whose bodies compensate a part, all, or more than their weight, on every
joint type (a free base, a ball, hinges, a slide), some joints routing the compensation
through their actuators (one with a force range that clips it), a welded body with
gravcomp, and a second tree without compensation.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_fields,
    assert_forward_matches,
    assert_model_fields,
    load_pair,
    set_same_state,
)
from strategies import random_state

import kinedyn as kd
from kinedyn.tools.inverse_actuation import inverse_actuation

ARM = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}" gravity="0.5 -1 -9.81"/>
  <worldbody>
    <body name="base" pos="0 0 1" gravcomp="1">
      <freejoint/>
      <geom type="box" size=".1 .1 .05"/>
      <body name="shoulder" pos=".1 0 0" gravcomp="0.5">
        <joint name="shoulder" type="ball" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body name="elbow" pos=".3 0 0" gravcomp="1">
          <joint name="elbow" axis="0 1 0" actuatorgravcomp="true" actuatorfrcrange="-0.3 0.3" damping=".05"/>
          <geom type="capsule" fromto="0 0 0 .25 0 .05" size=".03"/>
          <body name="wrist" pos=".25 0 .05" gravcomp="1.5">
            <joint name="wrist" axis="1 0 0" actuatorgravcomp="true"/>
            <joint name="slide" type="slide" axis="1 0 0" actuatorgravcomp="true" range="-.1 .1"/>
            <geom type="box" size=".04 .03 .02" pos=".05 0 0"/>
            <body name="tool" pos=".1 0 0" gravcomp="1">
              <geom type="sphere" size=".03" pos="0 .02 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="other" pos="1 0 1">
      <joint axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="elbow" ctrlrange="-1 1"/>
    <position joint="wrist" kp="3" ctrlrange="-1 1"/>
    <motor joint="shoulder" gear="0 1 0" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


def _arm(integrator="Euler"):
    return ARM.format(integrator=integrator)


def test_model_fields_match_mujoco():
    m, _, mjm, _ = load_pair(_arm())
    compared = assert_model_fields(m, mjm)
    assert "body_gravcomp" in compared and "jnt_actgravcomp" in compared
    assert m.jnt_actgravcomp.tolist() == [0, 0, 1, 1, 1, 0]


def test_forward_matches_mujoco():
    m, d, mjm, mjd = load_pair(_arm())
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(0), nstate=5)
    # the compensation reaches both passive and actuator forces, and the elbow's range clips it
    assert np.abs(d.qfrc_gravcomp).max() > 0.1
    elbow = m.jnt_dofadr[m.joint("elbow").id]
    assert d.qfrc_passive[elbow] == d.qfrc_damper[elbow]
    assert abs(d.qfrc_actuator[elbow]) <= 0.3


@pytest.mark.parametrize("change", ["gravity-off", "zero-gravity", "actuation-off", "passive-off"])
def test_switches_match_mujoco(change):
    """Gravity disabled or zero: no compensation; actuation disabled: the actuated joints' part is
    not applied at all; springs and dampers disabled: no passive force (mj_passive returns)."""
    m, d, mjm, mjd = load_pair(_arm())
    if change == "zero-gravity":
        m.opt.gravity = mjm.opt.gravity = np.zeros(3)
    else:
        bit = {"gravity-off": kd.DisableBit.GRAVITY, "actuation-off": kd.DisableBit.ACTUATION,
               "passive-off": kd.DisableBit.SPRING | kd.DisableBit.DAMPER}[change]
        m.opt.disableflags |= bit
        mjm.opt.disableflags |= int(bit)
    qpos, qvel, ctrl, act = random_state(np.random.default_rng(1), mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)
    if change != "actuation-off":
        assert not d.qfrc_gravcomp.any()


def test_inverse_matches_mujoco():
    m, d, mjm, mjd = load_pair(_arm())
    rng = np.random.default_rng(2)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qacc=rng.normal(size=mjm.nv))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "RK4"])
def test_rollout_matches_mj_step(integrator):
    m, d, mjm, mjd = load_pair(_arm(integrator))
    rng = np.random.default_rng(3)
    qpos, qvel, _, _ = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, 0.3 * qvel)
    for k in range(200):
        if k % 50 == 0:
            d.ctrl[:] = mjd.ctrl[:] = rng.uniform(-1, 1, size=mjm.nu)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    for name in ("qpos", "qvel"):
        a, b = getattr(d, name), getattr(mjd, name)
        err = np.max(np.abs(a - b) / (1 + np.abs(b)))
        assert err < 1e-6, f"{name} after 200 steps: {err:.2e}"


def test_inverse_actuation_counts_the_actuators_gravity_compensation():
    """inverse_actuation: the controls it finds, with the compensation the actuators add on
    joints with actuatorgravcomp, give MuJoCo the requested acceleration."""
    xml = """<mujoco><option integrator="RK4"/><worldbody>
      <body gravcomp="0.8"><joint name="a" axis="0 1 0" actuatorgravcomp="true"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body pos=".3 0 0" gravcomp="1"><joint name="b" axis="0 1 0" actuatorgravcomp="true"/>
          <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body></body></worldbody>
      <actuator><motor joint="a"/><motor joint="b"/></actuator></mujoco>"""
    m, d, mjm, mjd = load_pair(xml)
    rng = np.random.default_rng(4)
    qpos, qvel, _, _ = random_state(rng, mjm)
    qacc = rng.normal(size=mjm.nv)
    set_same_state(m, d, mjm, mjd, qpos, qvel)
    sol = inverse_actuation(m, d, qacc=qacc)
    assert sol.exact
    mjd.ctrl[:] = sol.ctrl
    mujoco.mj_forward(mjm, mjd)
    assert np.abs(mjd.qfrc_gravcomp).max() > 0.1
    np.testing.assert_allclose(mjd.qacc, qacc, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("parent,child", [(0, 1), (1, 1), (0.5, 0), ("world", 1)])
def test_fusestatic_keeps_bodies_with_another_gravcomp(parent, child):
    """MuJoCo 4.0's fusestatic keeps a static body whose gravcomp differs from its parent's
    (fusing it would change the compensation); with the same gravcomp it fuses it."""
    inner = f'<body name="c" pos=".3 0 0" gravcomp="{child}"><geom size=".1"/></body>'
    if parent == "world":
        tree = inner + '<body><joint axis="0 1 0"/><geom size=".1"/></body>'
    else:
        tree = (f'<body name="p" gravcomp="{parent}"><joint axis="0 1 0"/><geom size=".1" pos=".2 0 0"/>'
                f'{inner}</body>')
    xml = f'<mujoco><compiler fusestatic="true"/><worldbody>{tree}</worldbody></mujoco>'
    m, d, mjm, mjd = load_pair(xml)
    assert m.nbody == mjm.nbody
    assert_model_fields(m, mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(5), nstate=1)
