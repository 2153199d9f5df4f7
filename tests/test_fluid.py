# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Fluid forces (mj_fluid: inertia-box and ellipsoid models) vs MuJoCo 4.0.

Oracle: MuJoCo on the same MJCF text (``oracle.load_pair``, constraints off). ``geom_fluid``
is compared with the compiled model; ``qfrc_fluid`` and ``qfrc_passive`` are registry fields,
so ``assert_fields`` compares them with everything else on random states (1e-9 relative,
the oracle's bar). Rollouts compare qpos and qvel to 1e-6 * (1 + |mujoco|) after 200 steps (round-off
compounds; a wrong force term misses by orders of magnitude more).

Models: gymnasium's swimmer (inertia box, density and viscosity, RK4), dm_control's suite fish
and swimmer (inertia box in a dense medium, Euler; the pinned wheel of tests/thirdparty.py,
skipped offline) and a fish written here:
a free body whose geoms use the ellipsoid model (every primitive shape, partial ``fluidcoef``),
hinged fins with the ellipsoid model and a hinged tail with the inertia box, in a medium with
wind.
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
    gym_model_path,
    load_pair,
    set_same_state,
)
from strategies import random_state
from thirdparty import require

import kinedyn as kd

FISH = """
<mujoco>
  <option timestep="0.004" integrator="{integrator}" {medium}/>
  <default><geom fluidshape="ellipsoid"/></default>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom type="ellipsoid" size=".3 .1 .12"/>
      <geom type="capsule" fromto="-.1 0 .1 .2 0 .15" size=".04" fluidcoef=".4 .2"/>
      <geom type="box" size=".05 .02 .08" pos=".25 0 0" euler="0 20 10"/>
      <geom type="cylinder" size=".03 .05" pos="-.2 .05 0" fluidcoef=".6 .3 1.2 .8 .5"/>
      <geom type="sphere" size=".06" pos="0 -.05 .05"/>
      <body name="fin_l" pos="0 .1 0">
        <joint name="fin_l" axis="1 0 0" range="-60 60" damping=".01"/>
        <geom type="box" size=".08 .1 .005" pos="0 .1 0"/>
      </body>
      <body name="fin_r" pos="0 -.1 0">
        <joint name="fin_r" axis="1 0 0" range="-60 60" damping=".01"/>
        <geom type="box" size=".08 .1 .005" pos="0 -.1 0" fluidcoef=".3"/>
      </body>
      <body name="tail" pos="-.3 0 0">
        <joint name="tail" axis="0 0 1" stiffness=".5"/>
        <geom type="box" size=".1 .01 .06" pos="-.1 0 0" fluidshape="none"/>
        <body name="tip" pos="-.2 0 0">
          <joint name="tip" type="ball"/>
          <geom type="capsule" fromto="0 0 0 -.1 0 0" size=".02" fluidshape="none"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="fin_l" ctrlrange="-1 1"/><motor joint="fin_r" ctrlrange="-1 1"/>
    <position joint="tail" kp="2" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
MEDIA = {
    "water-wind": 'density="1000" viscosity="0.0009" wind="0.3 -0.2 0.1"',
    "density": 'density="1.2"',
    "viscosity": 'viscosity="0.5"',
}
ROLLOUT_RTOL = 1e-6


def _fish(medium="water-wind", integrator="Euler"):
    return FISH.format(integrator=integrator, medium=MEDIA[medium])


def test_geom_fluid_matches_mujoco():
    m, _, mjm, _ = load_pair(_fish())
    compared = assert_model_fields(m, mjm)
    assert "geom_fluid" in compared
    # the tail's inertia box: all zero; the torso's ellipsoid: on, with the partial fluidcoef filled
    assert not m.geom_fluid[m.geom_bodyid >= m.body("tail").id].any()
    assert m.geom_fluid[m.geom_bodyid < m.body("tail").id, 0].all()
    np.testing.assert_array_equal(m.geom_fluid[1, :6], [1.0, 0.4, 0.2, 1.5, 1.0, 1.0])
    assert (m.opt.density, m.opt.viscosity, m.opt.wind.tolist()) == (1000.0, 0.0009, [0.3, -0.2, 0.1])


@pytest.mark.parametrize("medium", list(MEDIA))
def test_fish_forward_matches_mujoco(medium):
    m, d, mjm, mjd = load_pair(_fish(medium))
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(1), nstate=4)
    assert np.abs(d.qfrc_fluid).max() > 1e-3  # the forces are not trivially zero


def test_swimmer_forward_and_inverse_match_mujoco():
    m, d, mjm, mjd = load_pair(gym_model_path("swimmer").read_text())
    rng = np.random.default_rng(2)
    assert_forward_matches(m, d, mjm, mjd, rng, nstate=3)
    assert np.abs(d.qfrc_fluid).max() > 1e-3
    # inverse dynamics subtracts the passive force, fluid included (mj_inverse)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qacc=rng.normal(size=mjm.nv))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse)


def _rollout(m, d, mjm, mjd, nsteps, seed, qvel_scale=0.5, from_qpos0=False):
    rng = np.random.default_rng(seed)
    qpos, qvel, _, _ = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, mjm.qpos0 if from_qpos0 else qpos, qvel_scale * qvel)
    for k in range(nsteps):
        if k % 50 == 0:
            d.ctrl[:] = mjd.ctrl[:] = rng.uniform(-1, 1, size=mjm.nu)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    # a rollout MuJoCo itself had to reset compares nothing
    assert not any(mjd.warning[w].number for w in (mujoco.mjtWarning.mjWARN_BADQACC,
                                                   mujoco.mjtWarning.mjWARN_BADQVEL))
    for name in ("qpos", "qvel"):
        a, b = getattr(d, name), getattr(mjd, name)
        err = np.max(np.abs(a - b) / (1 + np.abs(b)))
        assert err < ROLLOUT_RTOL, f"{name} after {nsteps} steps: {err:.2e}"


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_fish_rollout_matches_mj_step(integrator):
    m, d, mjm, mjd = load_pair(_fish(integrator=integrator))
    _rollout(m, d, mjm, mjd, 200, seed=3)


def test_swimmer_rollout_matches_mj_step():
    # gymnasium's swimmer: RK4 at 0.01 s, inertia boxes in a dense viscous medium
    m, d, mjm, mjd = load_pair(gym_model_path("swimmer").read_text())
    _rollout(m, d, mjm, mjd, 200, seed=4)


@pytest.mark.parametrize("name", ["fish", "swimmer"])
def test_dm_control_suite_fluid_models(name):
    path = require("dm-control") / "dm_control" / "suite" / f"{name}.xml"
    m, mjm = kd.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))
    off = kd.DisableBit.CONSTRAINT | kd.DisableBit.CONTACT  # the smooth dynamics only
    m.opt.disableflags |= off
    mjm.opt.disableflags |= int(off)
    assert m.opt.density > 0
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(6), nstate=2)
    assert np.abs(d.qfrc_fluid).max() > 1e-3
    _rollout(m, d, mjm, mjd, 200, seed=7, qvel_scale=0.1, from_qpos0=True)


def test_medium_set_at_run_time_and_passive_disabled():
    m, d, mjm, mjd = load_pair(_fish())
    rng = np.random.default_rng(5)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    # a model compiled without a medium gets one at run time, as MuJoCo's mjOption
    for opt in (m.opt, mjm.opt):
        opt.density, opt.viscosity, opt.wind = 0.0, 0.0, np.zeros(3)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert not d.qfrc_fluid.any()
    for opt in (m.opt, mjm.opt):
        opt.density, opt.viscosity, opt.wind = 800.0, 0.01, np.array([1.0, 0.0, -0.5])
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="velocity")
    # springs and dampers both disabled: no passive force at all, fluid included (mj_passive)
    off = kd.DisableBit.SPRING | kd.DisableBit.DAMPER
    m.opt.disableflags |= off
    mjm.opt.disableflags |= int(off)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert not d.qfrc_fluid.any() and not d.qfrc_passive.any()
    assert_fields(m, d, mjm, mjd, stage="velocity")
