"""Sensor history, delays and intervals (MuJoCo 4.0's sensor ``nsample``, ``interp``, ``delay``,
``interval``), compared with MuJoCo 4.0: the compiled fields, the buffers at reset (an interval's
times on the step grid), sensordata and the buffers over 300 steps under every integrator (a time
jump back included), the readings between samples (``kd.read_sensor`` against ``mj_readSensor``),
inverse dynamics, ``Data.copy``, ``kd.batch.rollout`` against ``mujoco.rollout``, sleeping trees,
the derivatives' refusal and the models MuJoCo refuses."""

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
    random_controls,
)

import kinedyn as kd
from kinedyn.errors import ModelError
from kinedyn.tools import batch

# Two hinges under gravity with delayed actuators (a motor, a damper). Every mode of MuJoCo's
# table appears, at each stage: history only (jointpos, actuatorfrc with an interval), delayed
# (framepos linear, a subtree velocity, a force with a cutoff, a cubic quaternion), an interval
# without delay (a cubic joint velocity with a phase, a frame acceleration) and an interval with
# a delay (the accelerometer), delayed energies and clock, plus a sensor without a buffer.
XML = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
      <body pos="0.3 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="0.5"/>
        <site name="tip" pos="0.3 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="j1" nsample="3" delay="0.02" interp="linear"/>
    <motor name="m2" joint="j2"/>
    <damper name="damp" joint="j1" kv="0.3" ctrlrange="0 1" nsample="2" delay="0.02"/>
  </actuator>
  <sensor>
    <jointpos joint="j1" nsample="4"/>
    <framepos objtype="site" objname="tip" nsample="3" delay="0.015" interp="linear"/>
    <accelerometer site="tip" nsample="5" interval="0.025" delay="0.02" interp="cubic"/>
    <jointvel joint="j2" nsample="3" interval="0.03 -0.01" interp="cubic"/>
    <subtreelinvel body="world" nsample="2" delay="0.01"/>
    <force site="tip" nsample="3" delay="0.02" cutoff="0.5"/>
    <framequat objtype="site" objname="tip" nsample="4" delay="0.025" interp="cubic"/>
    <actuatorfrc actuator="m1" nsample="2" interval="0.02"/>
    <jointpos joint="j2"/>
    <framelinacc objtype="site" objname="tip" nsample="3" interval="0.02"/>
    <e_potential nsample="3" delay="0.02"/>
    <e_kinetic nsample="2" delay="0.01" interp="linear"/>
    <clock nsample="2" delay="0.01"/>
  </sensor>
  <keyframe><key name="k" time="0.3" qpos="0.2 -0.1" ctrl="1 2 0.5"/></keyframe>
</mujoco>
"""
STEPS = 300
INTEGRATORS = ("euler", "implicitfast", "implicit", "rk4")


@pytest.fixture(scope="module")
def pair():
    return load_pair(XML)


def _assert_state(d, mjd, label):
    for name in ("qpos", "qvel", "history", "sensordata"):
        assert_close(f"{label}: {name}", getattr(d, name), getattr(mjd, name))
    assert d.time == pytest.approx(mjd.time, rel=1e-15, abs=1e-15), label


def _run(m, d, mjm, mjd, label, steps=STEPS, seed=0):
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    flags = int(m.opt.disableflags), int(mjm.opt.disableflags)
    try:
        for t, u in enumerate(random_controls(m.nu, steps, seed)):
            if t == steps // 2:
                # time goes back by 1.5 steps: the next samples land between the buffers' times
                d.time = mjd.time = mjd.time - 0.015
            # sensors disabled for a while: the buffers still take (stale or computed) samples
            off = steps // 4 <= t < steps // 3
            m.opt.disableflags = flags[0] | (int(kd.DisableBit.SENSOR) if off else 0)
            mjm.opt.disableflags = flags[1] | (int(mujoco.mjtDisableBit.mjDSBL_SENSOR) if off else 0)
            d.ctrl[:] = mjd.ctrl[:] = u
            kd.step(m, d)
            mujoco.mj_step(mjm, mjd)
            _assert_state(d, mjd, f"{label} step {t}")
    finally:
        m.opt.disableflags, mjm.opt.disableflags = flags


def test_compiled_fields_and_reset(pair):
    m, d, mjm, mjd = pair
    compared = assert_model_fields(m, mjm)
    fields = {"nhistory", "sensor_history", "sensor_historyadr", "sensor_delay", "sensor_interval"}
    assert fields <= set(compared)
    # the sensors' buffers follow the actuators': 2 + nsample (1 + dim) numbers each
    assert m.sensor_historyadr[0] == (2 + 2 * 3) + (2 + 2 * 2)
    nsample_dim = ((4, 1), (3, 3), (5, 3), (3, 1), (2, 3), (3, 3), (4, 4), (2, 1), (3, 3), (3, 1), (2, 1),
                   (2, 1))
    assert m.nhistory == m.sensor_historyadr[0] + sum(2 + n * (1 + k) for n, k in nsample_dim)
    np.testing.assert_array_equal(kd.Data(m).history, mjd.history)
    d.ctrl[:] = 1.0
    kd.step(m, d)
    kd.reset(m, d)
    np.testing.assert_array_equal(d.history, mjd.history)
    kd.reset(m, d, "k")
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
    np.testing.assert_array_equal(d.history, mjd.history)
    mujoco.mj_resetData(mjm, mjd)


def test_interval_buffers_start_on_the_step_grid():
    """The times an interval sensor's buffer starts with: its phase's sample times rounded up to
    the step grid, a step apart at least (periods below the step), for random periods, phases and
    steps (all 1771 of a wider draw matched MuJoCo 4.0 when this was written)."""
    rng = np.random.default_rng(1)
    for h in (0.01, 0.002, 1 / 3, 0.1):
        sensors = []
        for _ in range(25):
            period = float(h * rng.choice([rng.uniform(0.2, 7), int(rng.integers(1, 6)), 0.3]))
            phase = float(rng.choice([0.0, -rng.uniform(0, 1) * period, -period / 3]))
            nsample = rng.integers(1, 7)
            sensors.append(f'<jointpos joint="j" nsample="{nsample}" interval="{period!r} {phase!r}"/>')
        xml = (f'<mujoco><option timestep="{h!r}"/><worldbody><body><joint name="j"/><geom size=".1"/></body>'
               f'</worldbody><sensor>{"".join(sensors)}</sensor></mujoco>')
        m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
        np.testing.assert_array_equal(m.sensor_interval, mjm.sensor_interval)
        np.testing.assert_array_equal(kd.Data(m).history, mujoco.MjData(mjm).history, err_msg=f"h = {h}")


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_steps_match_mujoco(pair, integrator):
    m, d, mjm, mjd = pair
    saved = m.opt.integrator, int(mjm.opt.integrator)
    m.opt.integrator = kd.IntegratorType[integrator.upper()]
    mjm.opt.integrator = int(m.opt.integrator)
    try:
        _run(m, d, mjm, mjd, integrator)
        assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7]))
    finally:
        m.opt.integrator, mjm.opt.integrator = saved


def test_discrete_integrator_matches_mujoco():
    xml = XML.replace('<option timestep="0.01"/>', '<option timestep="0.01" integrator="discrete"/>')
    _run(*load_pair(xml), "discrete", steps=100)


def test_step1_step2_sample_the_sensors():
    """mj_step1 / mj_step2 (kinedyn.mujoco) on an RK4 model: mj_step2 advances by Euler, which
    takes the sensors' samples in mj_advance."""
    from kinedyn import mujoco as kmj
    xml = XML.replace('<option timestep="0.01"/>', '<option timestep="0.01" integrator="RK4"/>')
    km, mjm = kmj.MjModel.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    kdata, mjd = kmj.MjData(km), mujoco.MjData(mjm)
    for t, u in enumerate(random_controls(km.nu, 60, seed=5)):
        kmj.mj_step1(km, kdata)
        mujoco.mj_step1(mjm, mjd)
        kdata.ctrl[:] = mjd.ctrl[:] = u
        kmj.mj_step2(km, kdata)
        mujoco.mj_step2(mjm, mjd)
        _assert_state(kdata, mjd, f"step1/step2 {t}")


def test_readings_between_samples(pair):
    """sensordata off the sample times (every reading, past both ends of the buffers) and
    kd.read_sensor / kinedyn.mujoco.mj_readSensor against mj_readSensor."""
    m, d, mjm, mjd = pair
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    for u in random_controls(m.nu, 7, seed=1):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    for time in (0.0, 0.0437, 0.061, 0.0785, 0.1, 0.5, -1.0):
        d.time = mjd.time = time
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("sensordata",))
        # the inverse's sensor stages read the buffers too
        kd.inverse(m, d)
        mujoco.mj_inverse(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=("sensordata", "qfrc_inverse"))
    from kinedyn import mujoco as kmj
    km = kmj.MjModel.from_xml_string(XML)
    kdata = kmj.MjData(km)
    kdata._kd_data.history[:] = d.history
    kdata._kd_data.sensordata[:] = d.sensordata
    for i in range(m.nsensor):
        dim = m.sensor_dim[i]
        for time, interp in ((0.0785, -1), (0.061, 0), (0.0745, 1), (0.0785, 2), (0.5, 2), (-1.0, 1)):
            theirs = mujoco.mj_readSensor(mjm, mjd, i, time, np.zeros(dim), interp)
            ours = kd.read_sensor(m, d, i, time, interp)
            assert_close(f"read_sensor {i} {time} {interp}", ours, theirs)
            np.testing.assert_array_equal(kmj.mj_readSensor(km, kdata, i, time, np.zeros(dim), interp), ours)
    with pytest.raises(ValueError, match="interp"):
        kd.read_sensor(m, d, 0, 0.0, 3)
    with pytest.raises(IndexError):
        kd.read_sensor(m, d, m.nsensor, 0.0)
    with pytest.raises(ValueError, match="shape"):
        kd.read_sensor(m, d, 1, 0.0, out=np.zeros(2))


def test_copy_carries_the_buffers(pair):
    m, d, mjm, mjd = pair
    kd.reset(m, d)
    controls = random_controls(m.nu, 10, seed=2)
    for u in controls[:5]:
        d.ctrl[:] = u
        kd.step(m, d)
    twin = d.copy()
    np.testing.assert_array_equal(twin.history, d.history)
    for u in controls[5:]:
        d.ctrl[:] = twin.ctrl[:] = u
        kd.step(m, d)
        kd.step(m, twin)
    np.testing.assert_array_equal(twin.history, d.history)
    np.testing.assert_array_equal(twin.sensordata, d.sensordata)


def test_batch_rollout_matches_mujoco_rollout(pair):
    m, d, mjm, mjd = pair
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    assert batch.state_size(m) == mujoco.mj_stateSize(mjm, full)
    mujoco.mj_resetData(mjm, mjd)
    state0 = np.empty((3, batch.state_size(m)))
    for i in range(3):
        for u in random_controls(m.nu, 4 + i, seed=10 + i):
            mjd.ctrl[:] = u
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_getState(mjm, mjd, state0[i], full)
    control = np.random.default_rng(3).normal(size=(3, 30, m.nu))
    ours = kd.batch.rollout(m, state0, control, nthread=2)
    theirs, sensordata = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    assert_close("rollout state", ours.state, theirs)
    assert_close("rollout sensordata", ours.sensordata, sensordata)


def test_sleeping_trees_keep_their_buffers_as_mujoco():
    """Position- and velocity-stage history sensors on bodies that settle, sleep and are woken
    (tests/test_sleep.py's scene): buffers and sensordata as MuJoCo's."""
    xml = """
<mujoco>
  <option><flag sleep="enable"/></option>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .3"><freejoint/><geom type="box" size=".1 .1 .1"/><site name="s"/></body>
    <body name="ball" pos=".5 0 .4"><freejoint/><geom type="sphere" size=".1"/></body>
  </worldbody>
  <sensor>
    <framepos objtype="body" objname="ball" nsample="3" delay="0.004" interp="linear"/>
    <velocimeter site="s" nsample="4" interval="0.005"/>
    <framepos objtype="body" objname="box" nsample="5" interval="0.006 -0.001" delay="0.003" interp="cubic"/>
  </sensor>
</mujoco>"""
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    slept = False
    for i in range(560):
        d.xfrc_applied[1, 0] = mjd.xfrc_applied[1, 0] = 300.0 if 300 <= i < 360 else 0.0
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        np.testing.assert_array_equal(d.tree_asleep, mjd.tree_asleep, err_msg=f"step {i}")
        _assert_state(d, mjd, f"sleep step {i}")
        slept |= bool((mjd.tree_asleep >= 0).any())
    assert slept


@pytest.mark.parametrize("actuation", [False, True])
def test_inverse_fd_reads_the_buffers(pair, actuation):
    """kd.inverse_fd against mjd_inverseFD after some steps: every perturbed inverse reads the
    caller's buffers (delayed sensors and readings between interval samples do not move; with
    actuation, the delayed damper's force moves with qvel at the delayed control)."""
    m, d, mjm, mjd = pair
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    for u in random_controls(m.nu, 12, seed=6):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    d.qacc[:] = mjd.qacc[:] = [0.3, -0.2]
    nv, ns = m.nv, m.nsensordata
    theirs = [np.zeros((nv, nv)) for _ in range(3)] + [np.zeros((nv, ns)) for _ in range(3)]
    mujoco.mjd_inverseFD(mjm, mjd, 1e-6, actuation, *theirs, None)
    ours = kd.inverse_fd(m, d, 1e-6, actuation=actuation)
    for name, x, y in zip(("DfDq", "DfDv", "DfDa", "DsDq", "DsDv", "DsDa"), ours, theirs, strict=False):
        assert np.abs(x - y).max() <= 1e-6 * max(np.abs(y).max(), 1e-12), name


def test_derivatives_refuse_delays_as_mujoco():
    # a buffer nothing reads is enough for MuJoCo's refusal
    xml = "<mujoco><worldbody><body><joint name='j'/><geom size='.1'/></body></worldbody>" \
          "<sensor><jointpos joint='j' nsample='2'/></sensor></mujoco>"
    mjm = mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(mujoco.FatalError, match="delays are not supported"):
        mujoco.mjd_transitionFD(mjm, mujoco.MjData(mjm), 1e-6, False, None, None, None, None)
    m = kd.Model.from_xml_string(xml)
    with pytest.raises(ValueError, match="delays are not supported"):
        kd.transition_fd(m, kd.Data(m))


ARM = "<worldbody><body><joint name='j'/><geom size='0.1'/></body></worldbody>"


@pytest.mark.parametrize(("sensor", "attribute", "message"), [
    ("<jointpos joint='j' delay='0.1'/>", "delay", "without a history buffer"),
    ("<jointpos joint='j' nsample='2' interp='quadratic'/>", "interp", "invalid keyword"),
    ("<jointpos joint='j' nsample='16777217'/>", "nsample", "at most 2\\^24 samples"),
    ("<jointpos joint='j' nsample='2' interval='-0.1'/>", "interval", "negative interval"),
    ("<jointpos joint='j' nsample='2' interval='0.1 0.01'/>", "interval", "positive phase"),
    ("<jointpos joint='j' nsample='2' interval='0.1 -0.1'/>", "interval", "greater than -period"),
    ("<user dim='1' needstage='pos' nsample='2'/>", "nsample", "unrecognized attribute"),
])
def test_refused_as_mujoco_refuses(sensor, attribute, message):
    xml = f"<mujoco>{ARM}<sensor>\n{sensor}</sensor></mujoco>"
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=message) as info:
        kd.Model.from_xml_string(xml)
    assert info.value.attribute == attribute


def test_accepted_as_mujoco_accepts():
    """What MuJoCo compiles without a buffer or without effect, kinedyn compiles the same: an
    interval or interp without nsample, a negative delay, a phase without a period."""
    xml = (f"<mujoco>{ARM}<sensor><jointpos joint='j' interval='0.1'/><jointpos joint='j' interp='linear'/>"
           "<jointpos joint='j' nsample='2' delay='-0.01'/>"
           "<jointpos joint='j' nsample='1' interval='0 -0.5'/>"
           "</sensor></mujoco>")
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    fields = ("sensor_history", "sensor_historyadr", "sensor_delay", "sensor_interval")
    assert_model_fields(m, mjm, names=fields)
    np.testing.assert_array_equal(kd.Data(m).history, mujoco.MjData(mjm).history)


def test_negative_nsample_is_refused():
    # MuJoCo 4.0 compiles it without a buffer and then writes outside its history array when it
    # steps: kinedyn refuses it (docs/deviations.md)
    with pytest.raises(ModelError, match="nsample cannot be negative"):
        kd.Model.from_xml_string(f"<mujoco>{ARM}<sensor><jointpos joint='j' nsample='-2'/></sensor></mujoco>")


def test_models_without_sensor_history_compile_no_sensor_history_unit():
    from kinedyn._jit.bind import needed_units
    from kinedyn.engine.integrator import step_entry

    def names(m):
        return {u.name.rsplit(".", 1)[1] for u in needed_units(m, [step_entry])}

    units = {"_history_sensor", "_advance_sensor_history"}
    plain = kd.Model.from_xml_string(f"<mujoco>{ARM}<sensor><jointpos joint='j'/></sensor></mujoco>")
    history = kd.Model.from_xml_string(f"<mujoco>{ARM}<sensor><jointpos joint='j' nsample='2'/>"
                                       "</sensor></mujoco>")
    assert not units & names(plain)
    assert units <= names(history)
