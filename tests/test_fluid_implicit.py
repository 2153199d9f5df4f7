# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Fluid forces under the implicit and implicitfast integrators vs MuJoCo 4.0.

MuJoCo folds the fluid forces' velocity derivatives (mjd_passive_vel: mjd_inertiaBoxFluid,
mjd_ellipsoidFluid) into qDeriv, symmetrised under implicitfast except on a lone free body, whose
6x6 block its local solve takes unsymmetric (mjd_freeMhat).

Oracle: MuJoCo on the same MJCF (``oracle.load_pair``, constraints off).

* qDeriv's fluid part: ``derivative_fluid.fluid_qderiv`` against MuJoCo's ``qDeriv`` after
  ``mj_implicit`` in the medium minus the same without it (the other terms cancel), to 1e-9 of
  its largest entry, on random states;
* steps: trajectories of 100 steps with random controls in which every step starts from
  MuJoCo's state, qpos/qvel/act compared at the oracle's 1e-9 after each; then 200 free-running
  steps at test_fluid's 1e-6 (round-off compounds);
* forward with each integrator (every field), and the discrete-time inverse (invdiscrete), which
  goes through the same M - h qDeriv, at 1e-9; ``kd.batch.rollout`` against ``mujoco.rollout``
  at 1e-9 (test_batch's bar);
* slow and resting bodies: MuJoCo 4.0.0 drops the density terms of the lift and drag
  derivatives below a speed of mjMINVAL and clamps none of their quotients above it (measured
  with the wheel: the clamps of its published mjd_viscous_drag would change a thin geom's
  derivative at ordinary speeds), so qDeriv's fluid part at speeds ~1e-9 is compared at 1e-9
  of its own size, and at rest it is zero.

Models: test_fluid's fish (a free body with children: ellipsoid geoms, hinged fins, an inertia-box
tail, wind), a scene written here (two lone free bodies, one by the ellipsoid model and one by
the inertia box, and a ball-hinge-slide arm whose first link is an inertia box and whose second
an ellipsoid; wind) and gymnasium's swimmer (inertia boxes in a dense viscous medium; its RK4
switched to each implicit integrator).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout
from oracle import assert_fields, gym_model_path, load_pair, set_same_state
from strategies import random_state
from test_fluid import FISH, MEDIA
from thirdparty import require

import kinedyn as kd
from kinedyn._jit.bind import needed_units
from kinedyn.engine.derivative_fluid import fluid_qderiv
from kinedyn.engine.integrator import step_entry

SCENE = """
<mujoco>
  <option timestep="0.005" integrator="implicitfast" density="1000" viscosity="0.002" wind="0.4 -0.3 0.2"/>
  <worldbody>
    <body name="float" pos="0 0 1">
      <freejoint/>
      <geom type="ellipsoid" size=".2 .08 .05" fluidshape="ellipsoid" mass="3"/>
      <geom type="capsule" size=".03 .1" pos=".1 .1 0" euler="30 0 60" fluidshape="ellipsoid" fluidcoef=".5 .3 1.2 1.5 .8"/>
      <geom type="sphere" size=".04" pos="-.15 0 0"/>
    </body>
    <body name="brick" pos="1 0 1">
      <freejoint/>
      <geom type="box" size=".1 .05 .2" euler="10 20 30"/>
    </body>
    <body name="arm" pos="0 1 1">
      <joint type="ball" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body pos=".3 0 0">
        <joint name="hinge" axis="0 1 0"/>
        <joint name="slide" type="slide" axis="1 0 0" stiffness="5"/>
        <geom type="cylinder" size=".05 .1" fluidshape="ellipsoid"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" ctrlrange="-1 1"/>
    <velocity joint="slide" kv=".3" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
INTEGRATORS = {"implicitfast": kd.IntegratorType.IMPLICITFAST, "implicit": kd.IntegratorType.IMPLICIT}
MODELS = ("fish", "scene", "swimmer")
_TEXT: dict[str, str] = {}


def _pair(name, integrator):
    if name not in _TEXT:
        _TEXT[name] = {"fish": lambda: FISH.format(integrator="implicitfast", medium=MEDIA["water-wind"]),
                       "scene": lambda: SCENE,
                       "swimmer": lambda: gym_model_path("swimmer").read_text()}[name]()
    m, d, mjm, mjd = load_pair(_TEXT[name])
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    return m, d, mjm, mjd


def _qderiv(mjm, mjd):
    """MuJoCo's qDeriv (D pattern) as a dense (nv, nv) matrix."""
    out = np.zeros((mjm.nv, mjm.nv))
    for r in range(mjm.nv):
        adr = slice(mjm.D_rowadr[r], mjm.D_rowadr[r] + mjm.D_rownnz[r])
        out[r, mjm.D_colind[adr]] = mjd.qDeriv[adr]
    return out


def _mujoco_fluid_qderiv(mjm, mjd, qpos, qvel):
    """qDeriv's fluid part: mj_implicit's qDeriv in the medium minus without it, same state."""
    parts = []
    medium = (mjm.opt.density, mjm.opt.viscosity)
    for density, viscosity in (medium, (0.0, 0.0)):
        mjm.opt.density, mjm.opt.viscosity = density, viscosity
        mjd.qpos[:], mjd.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, mjd)
        mujoco.mj_implicit(mjm, mjd)
        parts.append(_qderiv(mjm, mjd))
    mjm.opt.density, mjm.opt.viscosity = medium
    return parts[0] - parts[1]


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
@pytest.mark.parametrize("name", MODELS)
def test_fluid_qderiv_matches_mujoco(name, integrator):
    m, d, mjm, mjd = _pair(name, integrator)
    rng = np.random.default_rng(1)
    for _ in range(3):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        ours = fluid_qderiv(m, d)
        theirs = _mujoco_fluid_qderiv(mjm, mjd, qpos, qvel)
        scale = np.abs(theirs).max()
        assert scale > 1e-3  # the fluid derivatives are not trivially zero
        err = np.abs(ours - theirs).max() / scale
        assert err < 1e-9, f"{name} {integrator}: {err:.1e}"
        # implicitfast symmetrises every ellipsoid block but a lone free body's; implicit none
        # (the inertia box's B is diagonal)
        asym = np.abs(theirs - theirs.T).max() / scale
        unsymmetric = name == "scene" or (integrator == "implicit" and name == "fish")
        assert (asym > 1e-6) if unsymmetric else (asym < 1e-12), asym


def _steps_from_mujocos_state(m, d, mjm, mjd, seed, qvel_scale, nstep, every):
    """From a random state, ``nstep`` steps each started from MuJoCo's state (new random controls
    every ``every`` steps), the next state compared at 1e-9."""
    rng = np.random.default_rng(seed)
    qpos, qvel, _, _ = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel_scale * qvel)
    for k in range(nstep):
        if k % every == 0:
            mjd.ctrl[:] = rng.uniform(-1, 1, size=mjm.nu)
        set_same_state(m, d, mjm, mjd, np.array(mjd.qpos), np.array(mjd.qvel), np.array(mjd.ctrl),
                       np.array(mjd.act), time=mjd.time)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))



@pytest.mark.parametrize("integrator", list(INTEGRATORS))
@pytest.mark.parametrize("name", MODELS)
def test_steps_and_rollout_match_mujoco(name, integrator):
    """100 steps each from MuJoCo's state at 1e-9, then 200 free-running steps at 1e-6."""
    m, d, mjm, mjd = _pair(name, integrator)
    _steps_from_mujocos_state(m, d, mjm, mjd, seed=2, qvel_scale=0.5, nstep=100, every=25)
    for _ in range(8):
        kd.step(m, d, 25)
        mujoco.mj_step(mjm, mjd, 25)
    assert not any(mjd.warning[w].number for w in (mujoco.mjtWarning.mjWARN_BADQACC,
                                                   mujoco.mjtWarning.mjWARN_BADQVEL))
    for field in ("qpos", "qvel"):
        ours, theirs = getattr(d, field), getattr(mjd, field)
        err = np.max(np.abs(ours - theirs) / (1 + np.abs(theirs)))
        assert err < 1e-6, f"{name} {integrator}: {field} after 300 steps: {err:.2e}"


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_forward_and_discrete_inverse_match_mujoco(integrator):
    """forward (every field) with the integrator set, and the discrete-time inverse through
    M - h qDeriv with the fluid block (implicitfast: the lone free bodies' local blocks too)."""
    m, d, mjm, mjd = _pair("scene", integrator)
    rng = np.random.default_rng(3)
    mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    m.opt.enableflags |= kd.EnableBit.INVDISCRETE
    for _ in range(2):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qacc=rng.normal(size=mjm.nv))
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))


def test_medium_given_at_run_time_and_units_compiled_only_when_used():
    """A model without a medium needs no fluid-derivative unit; given one at run time (or switched
    to an implicit integrator in one) it steps as MuJoCo; with springs and dampers disabled the
    fluid force and its derivative are both gone (MuJoCo's mj_passive and mjd_passive_vel)."""
    m, d, mjm, mjd = _pair("scene", "implicitfast")
    fluid_units = {"fluid_vel_entry", "fluid_vel_m_entry"}

    def units():
        return {u.name.rsplit(".", 1)[-1] for u in needed_units(m, [step_entry])}

    assert fluid_units <= units()
    m.opt.integrator = kd.IntegratorType.EULER
    assert not fluid_units & units()
    m.opt.integrator = kd.IntegratorType.IMPLICITFAST
    for opt in (m.opt, mjm.opt):
        opt.density = opt.viscosity = 0.0
    assert not fluid_units & units()
    assert not fluid_qderiv(m, d).any()
    rng = np.random.default_rng(4)
    for density, viscosity, off in ((0.0, 0.0, 0), (800.0, 0.0, 0), (0.0, 0.3, 0),
                                    (500.0, 0.1, kd.DisableBit.DAMPER),
                                    (500.0, 0.1, kd.DisableBit.SPRING | kd.DisableBit.DAMPER)):
        for opt in (m.opt, mjm.opt):
            opt.density, opt.viscosity = density, viscosity
            opt.disableflags = int(opt.disableflags) & ~int(kd.DisableBit.SPRING | kd.DisableBit.DAMPER) | int(off)
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))
    assert not fluid_qderiv(m, d).any()
    with pytest.raises(ValueError, match="implicit"):
        m.opt.integrator = kd.IntegratorType.RK4
        fluid_qderiv(m, d)


def test_slow_and_resting_bodies():
    """At speeds ~1e-9 (no viscosity, no wind, so only the density terms) qDeriv's fluid part
    is MuJoCo's to 1e-9 of its size; at rest it is zero on both sides."""
    m, d, mjm, mjd = _pair("scene", "implicit")
    for opt in (m.opt, mjm.opt):
        opt.viscosity, opt.wind = 0.0, np.zeros(3)
    rng = np.random.default_rng(5)
    qpos, qvel, _, _ = random_state(rng, mjm)
    for scale in (1e-9, 0.0):
        set_same_state(m, d, mjm, mjd, qpos, scale * qvel)
        kd.forward(m, d)
        ours = fluid_qderiv(m, d)
        theirs = _mujoco_fluid_qderiv(mjm, mjd, qpos, scale * qvel)
        if scale:
            size = np.abs(theirs).max()
            assert 0.0 < size < 1e-3
            assert np.abs(ours - theirs).max() <= 1e-9 * size
        else:
            assert not ours.any() and not theirs.any()


def test_batch_rollout_matches_mujoco():
    m, _, mjm, _ = _pair("fish", "implicitfast")
    rng = np.random.default_rng(6)
    nbatch, nstep = 3, 40
    state0 = np.empty((nbatch, kd.batch.state_size(m)))
    for i in range(nbatch):
        qpos, qvel, _, act = random_state(rng, mjm)
        state0[i] = np.r_[0.0, qpos, 0.3 * qvel, act]
    control = rng.uniform(-1, 1, size=(nbatch, nstep, m.nu))
    ours = kd.batch.rollout(m, state0, control, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    err = np.abs(ours.state - theirs) / (1.0 + np.abs(theirs))
    assert err.max() <= 1e-9, f"{err.max():.1e}"


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_dm_control_fish_steps_match_mujoco(integrator):
    """dm_control's suite fish (inertia boxes in its dense medium, a free torso with fins), smooth
    dynamics as test_fluid, switched to each implicit integrator: 50 steps each from MuJoCo's
    state at 1e-9."""
    path = require("dm-control") / "dm_control" / "suite" / "fish.xml"
    m, mjm = kd.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))
    off = kd.DisableBit.CONSTRAINT | kd.DisableBit.CONTACT
    m.opt.disableflags |= off
    mjm.opt.disableflags |= int(off)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = int(INTEGRATORS[integrator])
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    _steps_from_mujocos_state(m, d, mjm, mjd, seed=7, qvel_scale=0.3, nstep=50, every=10)
    assert np.abs(fluid_qderiv(m, d)).max() > 1e-3
