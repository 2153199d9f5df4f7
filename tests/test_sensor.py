"""Sensors against MuJoCo 4.0: every sensor type kinedyn computes, on one scene with contacts,
joint and tendon limits, springs, actuators and free bodies, at states MuJoCo's own simulation
visits (``oracle.simulated_states``), compared field by field at the oracle's bar (1e-9).

The scene's sensors cover each type with several object and reference kinds, cutoffs (real and
positive), noise (MuJoCo does not add it), every contact sensor criterion and reduction, user
sensors (zero without a callback) and the energies; the refused ones (camera rays, meshes,
plugins, history) raise ModelError naming the element.
"""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest
from oracle import assert_close, assert_fields, assert_model_fields, set_simulated_state, simulated_states

import kinedyn as kd

SCENE = """<mujoco model="sensors">
  <option timestep="0.005" magnetic="0.1 -0.3 0.4" integrator="{integrator}" cone="{cone}">
    <flag energy="{energy}" sensor="{sensor}"/>
  </option>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1"/>
    <site name="room" type="box" pos="0 0 .5" size="1 1 .5"/>
    <site name="ring" type="cylinder" pos=".6 0 0" size=".3 .2"/>
    <body name="arm" pos="0 0 .4">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-25 25" stiffness="2" damping=".1"/>
      <geom name="upper" type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
      <site name="elbow_site" type="ellipsoid" pos=".4 0 0" size=".06 .05 .07"/>
      <site name="upper_tip" pos=".2 0 .03"/>
      <body name="fore" pos=".4 0 0" euler="0 20 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.05 .1"/>
        <joint name="wrist" type="ball" stiffness="1" range="0 60"/>
        <geom name="hand" type="box" pos=".15 0 0" size=".15 .04 .03"/>
        <site name="palm" type="box" pos=".25 0 -.03" size=".06 .05 .02"/>
        <site name="fore_tip" pos=".3 0 0" quat="0.9 0.1 0.3 0.2"/>
      </body>
    </body>
    <body name="crate" pos=".6 0 .25" euler="10 5 0">
      <freejoint name="crate_free"/>
      <geom name="crate" type="box" size=".1 .08 .06"/>
      <site name="crate_bottom" type="box" pos="0 0 -.06" size=".1 .08 .02"/>
      <body name="lid" pos="0 0 .08">
        <joint name="lid_hinge" type="hinge" axis="1 0 0" range="-10 10"/>
        <geom name="lid" type="box" size=".1 .08 .01" mass=".1"/>
        <site name="lid_site" pos=".05 0 0" euler="0 0 30"/>
      </body>
    </body>
    <body name="ball" pos=".62 .02 .5">
      <freejoint/>
      <geom name="ball" type="sphere" size=".07"/>
      <site name="ball_skin" type="sphere" size=".08"/>
    </body>
    <body name="pill" pos="-.4 .1 .3" euler="80 0 30">
      <freejoint/>
      <geom name="pill" type="capsule" size=".04 .1"/>
      <site name="pill_site" type="capsule" size=".05 .1"/>
    </body>
    <body name="can" pos="-.3 -.3 .2" euler="0 90 0">
      <freejoint/>
      <geom name="can" type="cylinder" size=".05 .08"/>
      <site name="can_site" type="cylinder" size=".06 .09"/>
    </body>
    <body name="mocap_like" pos="1 1 1"/>
  </worldbody>
  <tendon>
    <fixed name="couple" limited="true" range="-.3 .3" stiffness="3" springlength="-.05 .05">
      <joint joint="shoulder" coef="1"/>
      <joint joint="slide" coef="-2"/>
    </fixed>
    <spatial name="cable" limited="true" range="0 .52">
      <site site="upper_tip"/>
      <site site="fore_tip"/>
    </spatial>
  </tendon>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="20"/>
    <position name="couple_servo" tendon="couple" kp="20"/>
    <motor name="cable_motor" tendon="cable" gear="2"/>
  </actuator>
  <sensor>
    <touch name="t_crate" site="crate_bottom"/>
    <touch site="ball_skin" cutoff="0.5"/>
    <touch site="pill_site"/>
    <touch site="can_site"/>
    <touch site="palm"/>
    <touch site="elbow_site"/>
    <accelerometer site="fore_tip"/>
    <accelerometer site="crate_bottom" noise="0.1"/>
    <velocimeter site="fore_tip"/>
    <gyro site="palm"/>
    <force site="fore_tip"/>
    <torque site="palm"/>
    <force site="lid_site" cutoff=".5"/>
    <torque site="lid_site"/>
    <magnetometer site="fore_tip"/>
    <jointpos joint="shoulder"/>
    <jointpos joint="slide" cutoff=".02"/>
    <jointvel joint="slide"/>
    <tendonpos tendon="cable"/>
    <tendonvel tendon="couple"/>
    <actuatorpos actuator="couple_servo"/>
    <actuatorvel actuator="cable_motor"/>
    <actuatorfrc actuator="couple_servo"/>
    <jointactuatorfrc joint="shoulder"/>
    <jointactuatorfrc joint="slide"/>
    <tendonactuatorfrc tendon="couple"/>
    <tendonactuatorfrc tendon="cable"/>
    <ballquat joint="wrist"/>
    <ballangvel joint="wrist"/>
    <jointlimitpos joint="shoulder"/>
    <jointlimitvel joint="shoulder"/>
    <jointlimitfrc joint="shoulder"/>
    <jointlimitpos joint="wrist"/>
    <jointlimitfrc joint="lid_hinge"/>
    <tendonlimitpos tendon="couple"/>
    <tendonlimitvel tendon="cable"/>
    <tendonlimitfrc tendon="cable"/>
    <tendonlimitfrc tendon="couple"/>
    <framepos objtype="site" objname="fore_tip"/>
    <framepos objtype="body" objname="fore" reftype="xbody" refname="crate"/>
    <framequat objtype="geom" objname="hand"/>
    <framequat objtype="body" objname="pill" reftype="site" refname="palm"/>
    <framexaxis objtype="xbody" objname="fore"/>
    <frameyaxis objtype="site" objname="palm" reftype="geom" refname="crate"/>
    <framezaxis objtype="body" objname="ball" reftype="body" refname="arm"/>
    <framelinvel objtype="site" objname="fore_tip"/>
    <framelinvel objtype="geom" objname="pill" reftype="site" refname="palm"/>
    <frameangvel objtype="body" objname="can" reftype="xbody" refname="fore"/>
    <frameangvel objtype="xbody" objname="crate"/>
    <framelinacc objtype="site" objname="fore_tip"/>
    <framelinacc objtype="geom" objname="crate"/>
    <frameangacc objtype="body" objname="lid"/>
    <frameangacc objtype="xbody" objname="mocap_like"/>
    <subtreecom body="arm"/>
    <subtreecom body="world"/>
    <subtreelinvel body="crate"/>
    <subtreelinvel body="world"/>
    <subtreeangmom body="arm"/>
    <subtreeangmom body="world"/>
    <insidesite objtype="body" objname="ball" site="ring"/>
    <insidesite objtype="xbody" objname="crate" site="ring"/>
    <insidesite objtype="geom" objname="pill" site="room"/>
    <insidesite objtype="site" objname="fore_tip" site="room"/>
    <insidesite objtype="body" objname="mocap_like" site="room"/>
    <contact name="all" data="found force torque dist pos normal tangent" num="3"/>
    <contact geom1="floor" data="found force dist" num="4" reduce="mindist"/>
    <contact body1="ball" data="found force torque normal" num="2" reduce="maxforce"/>
    <contact geom2="crate" data="found force normal tangent"/>
    <contact subtree1="crate" subtree2="crate" data="found dist"/>
    <contact subtree1="world" body2="pill" data="force normal" num="2"/>
    <contact site="ring" data="found force pos" num="2" reduce="mindist"/>
    <contact site="room" geom2="floor" data="found force torque pos normal tangent" reduce="netforce"/>
    <contact body1="can" data="found force torque pos" reduce="netforce"/>
    <contact geom1="ball" body2="lid" data="found dist pos" num="2"/>
    <contact data="found linvel angvel" num="4"/>
    <distance geom1="ball" geom2="floor" cutoff="1"/>
    <distance geom1="crate" geom2="floor"/>
    <normal geom1="pill" geom2="crate" cutoff=".8"/>
    <fromto body1="arm" body2="crate" cutoff="2"/>
    <fromto geom1="hand" geom2="ball" cutoff="2"/>
    <normal body1="fore" geom2="pill" cutoff="1.5"/>
    <distance body1="crate" body2="world" cutoff=".3"/>
    <contact body1="fore" data="dist linvel" num="2" reduce="mindist"/>
    <contact geom2="crate" data="linvel angvel" num="3"/>
    <contact body1="pill" data="pos angvel" reduce="maxforce"/>
    <e_potential/>
    <e_kinetic/>
    <clock cutoff="0.3"/>
    <user dim="3" needstage="vel"/>
    <user dim="1" datatype="positive" cutoff="1"/>
    <accelerometer site="room"/>
    <framelinacc objtype="xbody" objname="mocap_like"/>
  </sensor>
</mujoco>
"""

SENSOR_MODEL_FIELDS = [f.name for f in kd.engine.fields.MODEL_FIELDS if f.name.startswith("sensor_")]
SENSOR_DATA_FIELDS = ["sensordata", "energy", "subtree_linvel", "subtree_angmom"]
# sensors whose value stays zero on these states (a static body's angular acceleration and
# velocity, a site no contact reaches, a limit never active, user sensors): every other one must
# read non-zero somewhere (the linear acceleration of a static body is -gravity's, MuJoCo 4.0's)
ZERO_OK = {5, 32, 52, 63, 68, 71, 73, 88, 89}


def _pair(integrator="Euler", cone="pyramidal", energy="enable", sensor="enable"):
    xml = SCENE.format(integrator=integrator, cone=cone, energy=energy, sensor=sensor)
    mjm = mujoco.MjModel.from_xml_string(xml)
    return kd.Model.from_xml_string(xml), mjm, mujoco.MjData(mjm)


def _label(mjm, i):
    name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SENSOR, i) or ""
    return f"sensor {i} {mujoco.mjtSensor(mjm.sensor_type[i]).name} {name}"


def _assert_sensors(m, d, mjm, mjd):
    """Each sensor's block of sensordata, named in the report, then the fields sensors compute."""
    for i in range(mjm.nsensor):
        a, n = mjm.sensor_adr[i], mjm.sensor_dim[i]
        assert_close(_label(mjm, i), d.sensordata[a:a + n], mjd.sensordata[a:a + n])
    assert_fields(m, d, mjm, mjd, names=SENSOR_DATA_FIELDS)


def test_sensor_model_fields_are_mujocos():
    m, mjm, _ = _pair()
    assert m.nsensor == mjm.nsensor and m.nsensordata == mjm.nsensordata
    assert_model_fields(m, mjm, names=SENSOR_MODEL_FIELDS)
    np.testing.assert_array_equal(m.opt.magnetic, mjm.opt.magnetic)
    assert m.sensor("all").id == mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, "all")
    assert kd.SensorType.CONTACT == mujoco.mjtSensor.mjSENS_CONTACT
    assert {t.name for t in kd.SensorType} == {k[len("mjSENS_"):] for k in mujoco.mjtSensor.__members__}


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_sensors_match_mujoco_on_simulated_states(cone):
    m, mjm, mjd = _pair(cone=cone)
    d = kd.Data(m)
    states = simulated_states(mjm, mjd, count=6, steps=25, qvel_scale=0.3)
    nonzero = np.zeros(mjm.nsensor, dtype=bool)
    for state in states:
        set_simulated_state(d, mjd, state)
        # twice: the kinetic energy sensor reads the previous forward's energy when the energy
        # flag left it computed (MuJoCo's lazy flag), so both engines need the same history
        for _ in range(2):
            mujoco.mj_forward(mjm, mjd)
            kd.forward(m, d)
        assert d.ncon == mjd.ncon and d.nl == mjd.nl
        _assert_sensors(m, d, mjm, mjd)
        # the acceleration sensors ran rne_post_constraint, as MuJoCo's (a free body's cfrc_int
        # is zero up to the round-off of the forces summed into it: absolute floor scaled by them)
        scale = np.abs(mjd.cfrc_int).max() + np.abs(mjd.cfrc_ext).max()
        assert_fields(m, d, mjm, mjd, names=["cacc", "cfrc_int", "cfrc_ext"], atol=max(1e-12, 1e-12 * scale))
        for i in range(mjm.nsensor):
            a, n = mjm.sensor_adr[i], mjm.sensor_dim[i]
            nonzero[i] |= bool(np.any(mjd.sensordata[a:a + n]))
    assert set(np.flatnonzero(~nonzero)) <= ZERO_OK
    assert max(s["time"] for s in states) > 0.3 >= m.sensor_cutoff[m.sensor_type == kd.SensorType.CLOCK][0]


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast"])
def test_step_computes_sensors_as_mujoco(integrator):
    """mj_step's sensors are those of its forward pass at the start state (RK4's later stages
    skip them); the energy follows the last forward pass."""
    m, mjm, mjd = _pair(integrator=integrator)
    d = kd.Data(m)
    state = simulated_states(mjm, mjd, count=1, steps=20, qvel_scale=0.3)[0]
    set_simulated_state(d, mjd, state)
    mujoco.mj_forward(mjm, mjd)  # the same history for the kinetic energy sensor's lazy flag
    kd.forward(m, d)
    for _ in range(15):
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
        _assert_sensors(m, d, mjm, mjd)


@pytest.mark.parametrize("invdiscrete", ["disable", "enable"])
def test_inverse_computes_sensors_as_mujoco(invdiscrete):
    xml = SCENE.format(integrator="implicitfast", cone="pyramidal", energy="enable", sensor="enable")
    xml = xml.replace('<flag energy="enable"', f'<flag invdiscrete="{invdiscrete}" energy="enable"')
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    mjd, d = mujoco.MjData(mjm), kd.Data(m)
    for state in simulated_states(mjm, mjd, count=3, steps=25, qvel_scale=0.3):
        set_simulated_state(d, mjd, state)
        for _ in range(2):
            mujoco.mj_forward(mjm, mjd)
            kd.forward(m, d)
        d.qacc[:] = mjd.qacc
        mujoco.mj_inverse(mjm, mjd)
        kd.inverse(m, d)
        _assert_sensors(m, d, mjm, mjd)


def test_user_sensors_prepare_what_a_callback_reads():
    """A user sensor alone makes MuJoCo compute the subtree velocities (velocity stage) or
    rne_post_constraint (acceleration stage) for its callback; without one it reads 0."""
    xml = BASE.format('<user dim="2" needstage="vel"/><user dim="1" needstage="acc" cutoff="1"/>')
    xml = xml.replace('<joint name="j" range="-1 1"/>', '<freejoint/>')
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    d.qvel[:] = mjd.qvel[:] = [0.3, -0.2, 0.1, 1.0, 2.0, -0.5]
    mujoco.mj_forward(mjm, mjd)
    kd.forward(m, d)
    assert np.any(mjd.subtree_linvel) and np.any(mjd.cacc)
    assert_fields(m, d, mjm, mjd, names=SENSOR_DATA_FIELDS + ["cacc", "cfrc_int", "cfrc_ext"])


CAMERAS = """<mujoco>
  <option><flag constraint="disable" contact="disable"/></option>
  <worldbody>
    <camera name="fixed" pos="0 -2 1" xyaxes="1 0 0 0 .5 1" resolution="640 480"/>
    <camera name="intr" pos="0 -1 2" euler="30 10 0" resolution="320 240" sensorsize=".0037 .0028"
            focal=".0021 .0023"/>
    <body name="b" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <joint name="s" type="slide" axis="1 0 0"/>
      <geom size=".1"/>
      <camera name="onbody" pos=".1 .2 .3" euler="10 20 30" resolution="100 50"/>
      <camera name="track" mode="track" pos="0 -1 0" resolution="10 10"/>
      <site name="tip" pos=".3 .1 0"/>
      <body name="c" pos="0 0 .3">
        <joint type="ball"/><geom size=".05"/><site name="tip2" pos=".1 0 0"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <camprojection site="tip" camera="fixed"/>
    <camprojection site="tip2" camera="intr"/>
    <camprojection site="tip" camera="onbody"/>
    <framepos objtype="camera" objname="onbody"/>
    <framequat objtype="camera" objname="track"/>
    <framexaxis objtype="site" objname="tip2" reftype="camera" refname="track"/>
    <framequat objtype="body" objname="c" reftype="camera" refname="onbody"/>
    <framelinvel objtype="camera" objname="onbody"
                 reftype="camera" refname="fixed"/>
    <frameangvel objtype="site" objname="tip2" reftype="camera" refname="onbody"/>
    <framelinacc objtype="camera" objname="track"/>
    <frameangacc objtype="camera" objname="onbody"/>
    <insidesite objtype="camera" objname="onbody" site="tip"/>
  </sensor>
</mujoco>
"""


def test_camera_sensors_match_mujoco():
    """camprojection (fovy and intrinsics), frame sensors of and relative to fixed, body and
    tracking cameras, insidesite of a camera."""
    m, mjm = kd.Model.from_xml_string(CAMERAS), mujoco.MjModel.from_xml_string(CAMERAS)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    assert_model_fields(m, mjm, names=SENSOR_MODEL_FIELDS)
    for state in simulated_states(mjm, mjd, count=3, steps=20, qvel_scale=1.0):
        set_simulated_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        _assert_sensors(m, d, mjm, mjd)


def test_energy_without_sensors_and_disabled_sensors():
    m, mjm, mjd = _pair(sensor="disable")
    d = kd.Data(m)
    for _ in range(5):
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
    assert not np.any(mjd.sensordata) and not np.any(d.sensordata)
    assert np.all(mjd.energy != 0)
    assert_fields(m, d, mjm, mjd, names=SENSOR_DATA_FIELDS)
    m, mjm, mjd = _pair(energy="disable")
    d = kd.Data(m)
    mujoco.mj_forward(mjm, mjd)
    kd.forward(m, d)
    _assert_sensors(m, d, mjm, mjd)


BASE = """<mujoco><worldbody><geom name="b" type="box" size=".1 .1 .1" pos="1 0 0"/><body>
<joint name="j" range="-1 1"/><geom name="g" size=".1"/><site name="s"/>
<geom name="c" type="cylinder" size=".1 .1" pos="0 1 0"/></body></worldbody><sensor>{}</sensor></mujoco>"""


@pytest.mark.parametrize("sensor, attr", [
    ('<rangefinder site="s" camera="s"/>', "camera"),
    ('<camprojection site="s" camera="nope"/>', "camera"),
    ('<distance geom1="g" geom2="g"/>', None),
    ('<normal geom1="c" geom2="b"/>', "geom1"),
    ('<fromto geom1="b" body2="world"/>', "geom1"),
    ('<fromto geom1="b" geom2="g" body2="world"/>', "geom2"),
    ('<plugin plugin="x"/>', None),
    ('<tactile geom="g" mesh="m"/>', None),
    ('<jointpos joint="j" nsample="-3"/>', "nsample"),
    ('<jointpos joint="j" delay="0.1"/>', "delay"),
    ('<jointpos joint="j" nsample="1" interval="-0.1"/>', "interval"),
    ('<framepos objtype="camera" objname="nope"/>', "objname"),
    ('<insidesite objtype="geom" objname="g" site="s" enclosed="true"/>', "enclosed"),
    ('<contact data="found linvel" reduce="netforce"/>', "data"),
    ('<jointpos joint="nope"/>', "joint"),
    ('<ballquat joint="j"/>', "joint"),
    ('<jointpos joint="j" class="x"/>', "class"),
    ('<contact data="force found"/>', "data"),
    ('<touch site="s" cutoff="-1"/>', "cutoff"),
])
def test_unsupported_or_bad_sensors_raise_model_errors(sensor, attr):
    xml = BASE.format(sensor)
    with pytest.raises(kd.ModelError) as err:
        kd.Model.from_xml_string(xml)
    assert "line 3" in str(err.value)
    if attr:
        assert attr in str(err.value)


def test_sensor_defaults_are_refused_as_mujoco():
    xml = BASE.replace("<mujoco>", '<mujoco><default><sensor cutoff="1"/></default>').format(
        '<jointpos joint="j"/>')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError):
        kd.Model.from_xml_string(xml)


def test_info_lists_the_sensors(tmp_path, capsys):
    from kinedyn.cli import main as cli

    path = tmp_path / "scene.xml"
    path.write_text(SCENE.format(integrator="Euler", cone="pyramidal", energy="enable", sensor="enable"))
    mjm = mujoco.MjModel.from_xml_path(str(path))
    assert cli.main(["info", str(path), "--json"]) == 0
    sensors = json.loads(capsys.readouterr().out)["sensors"]
    assert [s["type"] for s in sensors] == [mujoco.mjtSensor(t).name[len("mjSENS_"):].lower()
                                            for t in mjm.sensor_type]
    assert [s["adr"] for s in sensors] == mjm.sensor_adr.tolist()
    assert sensors[0]["name"] == "t_crate" and sensors[0]["object"] == "site crate_bottom"
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sensors" in out and "accelerometer" in out and "site fore_tip" in out


def test_rollout_records_sensordata_as_mujoco_rollout():
    """batch.rollout's sensordata equals mujoco.rollout's (energy off: with it on, the kinetic
    energy sensor would read each engine's own call history, see test_sensors_match...)."""
    from mujoco import rollout as mj_rollout

    from kinedyn.tools import batch

    m, mjm, mjd = _pair(energy="disable")
    states = simulated_states(mjm, mjd, count=2, steps=20, qvel_scale=0.3)
    state0 = np.array([np.concatenate(([s["time"]], s["qpos"], s["qvel"], s["act"])) for s in states])
    control = np.random.default_rng(1).uniform(-1, 1, size=(2, 8, mjm.nu))
    ours = batch.rollout(m, state0, control, nthread=1)
    state, sensordata = mj_rollout.rollout(mjm, [mujoco.MjData(mjm)], state0, control)
    assert ours.sensordata.shape == sensordata.shape == (2, 8, mjm.nsensordata)
    assert_close("rollout state", ours.state, state)
    assert_close("rollout sensordata", ours.sensordata, sensordata)


STATIC_ACC = """<mujoco><option gravity="1 -2 -9"><flag gravity="{gravity}"/></option><worldbody>
<site name="w" euler="10 20 30"/><body name="fixed" pos="1 0 0" euler="0 40 0"><site name="f"/></body>
<body name="mc" mocap="true" euler="30 0 0"><site name="mc"/></body>
<body><freejoint/><geom size=".1"/><site name="fly"/></body></worldbody>
<sensor><accelerometer site="w"/><accelerometer site="f"/><accelerometer site="mc"/>
<accelerometer site="fly"/>
<framelinacc objtype="site" objname="f"/><framelinacc objtype="body" objname="mc"/>
<frameangacc objtype="site" objname="f"/></sensor></mujoco>"""


@pytest.mark.parametrize("gravity", ["enable", "disable"])
def test_accelerometers_on_static_and_mocap_bodies(gravity):
    """MuJoCo 4.0: a site on the world, a static or a mocap body reads the proper acceleration
    of a body at rest (-gravity in its frame), not zero."""
    xml = STATIC_ACC.format(gravity=gravity)
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_close("sensordata", d.sensordata, mjd.sensordata)
    assert (np.abs(mjd.sensordata[:9]).max() > 1) == (gravity == "enable")
