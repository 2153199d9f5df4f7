"""Actuator control history and delays (MuJoCo 4.0's ``nsample``, ``interp``, ``delay``),
compared with MuJoCo 4.0: the compiled fields, the buffers at reset and after every step under
each integrator, the delayed controls the actuation stage reads (zero-order hold, linear, cubic;
between samples, past both ends, after the time jumps back), inverse dynamics, ``Data.copy``,
``kd.batch.rollout`` against ``mujoco.rollout`` and the models MuJoCo refuses."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout
from oracle import (
    assert_close,
    assert_fields,
    assert_forward_and_inverse,
    assert_model_fields,
    load_pair,
    own_pair,
    random_controls,
)

import kinedyn as kd
from kinedyn.errors import ModelError
from kinedyn.tools import batch

# Two hinges under gravity (contacts and limits off). Every reading of the buffers appears:
# linear, cubic (a delay between samples: 0.025 s at h = 0.01) and zero-order hold; a delay longer
# than the buffer (0.05 s over 3 samples: the oldest value), a buffer nothing reads (the position
# servo), a delayed filter (act) and integrator (intvelocity), a delayed damper (a velocity-dependent
# gain: the implicit integrators' derivative uses ctrl itself, not the delayed control, as MuJoCo)
# and a default class carrying the three attributes to a shortcut.
XML = """
<mujoco>
  <option timestep="0.01"/>
  <default>
    <default class="late"><velocity kv="0.5" nsample="2" delay="0.02" interp="linear"/></default>
  </default>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
      <body pos="0.3 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="lin" joint="j1" nsample="3" delay="0.02" interp="linear"/>
    <position name="hist" joint="j1" kp="5" nsample="2"/>
    <motor name="cubic" joint="j2" nsample="4" delay="0.025" interp="cubic" gear="0.5"/>
    <general name="filt" joint="j2" dyntype="filter" dynprm="0.05" gainprm="2" nsample="2" delay="0.01"/>
    <intvelocity name="iv" joint="j2" kp="3" actrange="-1 1" nsample="3" delay="0.05"/>
    <velocity name="vel" class="late" joint="j1"/>
    <motor name="now" joint="j2"/>
    <damper name="damp" joint="j1" kv="0.3" ctrlrange="0 1" nsample="2" delay="0.02"/>
  </actuator>
  <keyframe><key name="k" time="0.3" qpos="0.2 -0.1" act="0.1 -0.2" ctrl="1 2 3 4 5 6 7 0.5"/></keyframe>
</mujoco>
"""
STEPS = 40
INTEGRATORS = ("euler", "implicitfast", "implicit", "rk4")


@pytest.fixture(scope="module")
def pair():
    return load_pair(XML)


def _assert_state(d, mjd, label):
    for name in ("qpos", "qvel", "act", "history", "actuator_force", "qfrc_actuator"):
        assert_close(f"{label}: {name}", getattr(d, name), getattr(mjd, name))
    assert d.time == pytest.approx(mjd.time, rel=1e-15, abs=1e-15), label


def test_compiled_fields_and_reset(pair):
    m, d, mjm, mjd = pair
    compared = assert_model_fields(m, mjm)
    assert {"nhistory", "actuator_history", "actuator_historyadr", "actuator_delay"} <= set(compared)
    assert m.nhistory == sum(2 + 2 * n for n in (3, 2, 4, 2, 3, 2, 2))
    # the default class's attributes reached the shortcut
    assert m.actuator_history[m.actuator("vel").id].tolist() == [2, 1]
    # a new Data and a reset start the buffers as mj_resetData: times -n h ... -h, values 0
    np.testing.assert_array_equal(kd.Data(m).history, mjd.history)
    d.ctrl[:] = 1.0
    kd.step(m, d)
    kd.reset(m, d)
    np.testing.assert_array_equal(d.history, mjd.history)
    # the keyframe resets them too (at times before 0, not before the key's time), as MuJoCo
    kd.reset(m, d, "k")
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
    np.testing.assert_array_equal(d.history, mjd.history)
    assert d.time == mjd.time == 0.3


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_steps_match_mujoco(pair, integrator):
    m, d, mjm, mjd = own_pair(pair, integrator)
    controls = random_controls(m.nu, STEPS)
    for t in range(STEPS):
        if t == 25:
            # time goes back by 1.5 steps: the next samples land between the buffers' times
            d.time = mjd.time = mjd.time - 0.015
        d.ctrl[:] = mjd.ctrl[:] = controls[t]
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        _assert_state(d, mjd, f"{integrator} step {t}")
    # the forward pass and the inverse at the end state
    assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7]))


def test_discrete_inverse_reads_the_delayedrandom_controls(pair):
    """implicitfast with invdiscrete: the inverse's velocity derivative of the delayed damper's
    gain reads the delayed control at d.time, also with no forward pass before it."""
    m, d, mjm, mjd = own_pair(pair, "implicitfast", kd.EnableBit.INVDISCRETE)
    controls = random_controls(m.nu, 9, seed=4)
    for u in controls[:8]:
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    d.ctrl[:] = mjd.ctrl[:] = controls[8]
    d.qacc[:] = mjd.qacc[:] = np.array([0.3, -0.2])
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse)


def test_forward_reads_the_buffers_at_any_time(pair):
    """Off the sample times the delayed controls are interpolated (or held), and a delay reaching
    past either end of a buffer reads its oldest or newest value."""
    m, d, mjm, mjd = pair
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    for u in random_controls(m.nu, 6, seed=1):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    for time in (0.0, 0.0137, 0.031, 0.0449, 0.06, 0.1, 0.5, -1.0):
        d.time = mjd.time = time
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd, stage="actuation")
    delayed = m.actuator_delay != 0
    assert delayed.sum() == 6
    # mj_readCtrl: each actuator's buffer at time - delay, with its own and every other reading
    from kinedyn import mujoco as kmj
    km = kmj.MjModel.from_xml_string(XML)
    kdata = kmj.MjData(km)
    kdata._kd_data.history[:] = d.history
    kdata._kd_data.ctrl[:] = mjd.ctrl[:] = d.ctrl
    for i in range(m.nu):
        for time, interp in ((0.0137, -1), (0.031, 0), (0.0449, 1), (0.0351, 2), (0.5, 2), (-1.0, 1)):
            theirs = mujoco.mj_readCtrl(mjm, mjd, i, time, np.zeros(1), interp)[0]
            ours = kd.read_ctrl(m, d, i, time, interp)
            assert_close(f"read_ctrl {i} {time} {interp}", ours, theirs)
            assert kmj.mj_readCtrl(km, kdata, i, time, np.zeros(1), interp)[0] == ours
    with pytest.raises(ValueError, match="interp"):
        kd.read_ctrl(m, d, 0, 0.0, 3)
    with pytest.raises(IndexError):
        kd.read_ctrl(m, d, m.nu, 0.0)


def test_copy_carries_the_buffers(pair):
    m, d, mjm, mjd = pair
    kd.reset(m, d)
    controls = random_controls(m.nu, 10, seed=2)
    for u in controls[:5]:
        d.ctrl[:] = u
        kd.step(m, d)
    twin = d.copy()
    np.testing.assert_array_equal(twin.history, d.history)
    assert not np.shares_memory(twin.history, d.history)
    for u in controls[5:]:
        d.ctrl[:] = twin.ctrl[:] = u
        kd.step(m, d)
        kd.step(m, twin)
    np.testing.assert_array_equal(twin.history, d.history)
    np.testing.assert_array_equal(twin.qpos, d.qpos)


def test_batch_rollout_matches_mujoco_rollout(pair):
    m, d, mjm, mjd = pair
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    assert batch.state_size(m) == mujoco.mj_stateSize(mjm, full) == 1 + m.nq + m.nv + m.na + m.nhistory
    # initial states MuJoCo reached, with filled buffers
    mujoco.mj_resetData(mjm, mjd)
    state0 = np.empty((3, batch.state_size(m)))
    for i in range(3):
        for u in random_controls(m.nu, 4 + i, seed=10 + i):
            mjd.ctrl[:] = u
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_getState(mjm, mjd, state0[i], full)
    control = np.random.default_rng(3).normal(size=(3, 30, m.nu))
    ours = kd.batch.rollout(m, state0, control, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    assert_close("rollout state", ours.state, theirs)
    # BatchData starts its buffers as Data, and packs them after act
    bd = batch.BatchData(m, 2)
    np.testing.assert_array_equal(bd.history, np.broadcast_to(kd.Data(m).history, bd.history.shape))
    np.testing.assert_array_equal(batch.get_state(m, bd)[:, -m.nhistory:], bd.history)
    # kinedyn.mujoco's state functions pack the buffers as MuJoCo does
    from kinedyn import mujoco as kmj
    km = kmj.MjModel.from_xml_string(XML)
    assert kmj.mj_stateSize(km, int(full)) == mujoco.mj_stateSize(mjm, full)


def test_derivatives_refuse_delays_as_mujoco(pair):
    m, d, mjm, mjd = pair
    with pytest.raises(mujoco.FatalError, match="delays are not supported"):
        mujoco.mjd_transitionFD(mjm, mjd, 1e-6, False, None, None, None, None)
    with pytest.raises(ValueError, match="delays are not supported"):
        kd.transition_fd(m, d)


ARM = "<worldbody><body><joint name='j'/><geom size='0.1'/></body></worldbody>"


@pytest.mark.parametrize(("actuator", "attribute", "message"), [
    ("<motor joint='j' delay='0.1'/>", "delay", "without a history buffer"),
    ("<motor joint='j' nsample='2' interp='quadratic'/>", "interp", "invalid keyword"),
    ("<motor joint='j' nsample='16777217'/>", "nsample", "at most 2\\^24 samples"),
])
def test_refused_as_mujoco_refuses(actuator, attribute, message):
    xml = f"<mujoco>{ARM}<actuator>\n{actuator}</actuator></mujoco>"
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=message) as info:
        kd.Model.from_xml_string(xml)
    assert info.value.attribute == attribute


def test_negative_nsample_is_refused():
    # MuJoCo 4.0 compiles it (a buffer size of -2, no buffer) and then writes outside its history
    # array when it steps: kinedyn refuses it (docs/deviations.md)
    with pytest.raises(ModelError, match="nsample cannot be negative"):
        kd.Model.from_xml_string(f"<mujoco>{ARM}<actuator><motor joint='j' nsample='-2'/>"
                                 "</actuator></mujoco>")


def test_models_without_history_compile_no_history_unit():
    from kinedyn._jit.bind import needed_units
    from kinedyn.engine.integrator import step_entry

    def names(m):
        return {u.name.rsplit(".", 1)[1] for u in needed_units(m, [step_entry])}

    plain = kd.Model.from_xml_string(f"<mujoco>{ARM}<actuator><motor joint='j'/></actuator></mujoco>")
    history = kd.Model.from_xml_string(f"<mujoco>{ARM}<actuator><motor joint='j' nsample='2'/></actuator>"
                                       "</mujoco>")
    assert not {"delayed_ctrl", "advance_history"} & names(plain)
    assert {"delayed_ctrl", "advance_history"} <= names(history)
