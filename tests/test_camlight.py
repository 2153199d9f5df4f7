"""Cameras and lights: compiled fields and their world frames (mj_camlight) against MuJoCo 4.0."""

import mujoco
import numpy as np
import pytest
from oracle import assert_fields, assert_model_fields, load_pair, set_same_state

import kinedyn as kd

# every mode, in the world, in moving bodies and in frames; default classes; every orientation form
# of cameras; light types (and the legacy directional); intrinsics from a sensor size; znear
XML = """<mujoco>
  <compiler angle="radian" eulerseq="zyx"/>
  <visual><map znear="0.02"/></visual>
  <default>
    <camera fovy="60" ipd=".07"/>
    <light diffuse=".5 .5 .5" castshadow="false"/>
    <default class="spot"><light type="spot" cutoff="30" exponent="5"/></default>
    <default class="dirlight"><light directional="true"/></default>
  </default>
  <worldbody>
    <camera name="world" pos="2 0 1" xyaxes="0 1 0 -.5 0 1"/>
    <camera name="watch" pos="0 -3 1" mode="targetbody" target="arm2"/>
    <camera name="watchcom" pos="0 3 2" mode="targetbodycom" target="arm1"/>
    <camera name="ortho" projection="orthographic" fovy="2" pos="0 0 5"/>
    <camera name="sensor" resolution="640 480" sensorsize=".004 .003" focalpixel="500 510" principal=".001 0"
            output="rgb depth"/>
    <light name="sun" directional="true" pos="0 0 4" dir="1 1 -3"/>
    <light name="follow" mode="targetbodycom" target="arm1" pos="1 1 3"/>
    <light class="dirlight" type="point" pos="1 0 0"/>
    <body name="arm1" pos="0 0 1" euler=".3 .2 .1">
      <joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 .4 0 0" size=".05"/>
      <camera name="mounted" pos=".1 0 .1" euler=".1 .2 .3"/>
      <camera name="track" mode="track" pos="-1 0 .5" zaxis="-1 0 1"/>
      <light name="headlight" class="spot" mode="track" pos="0 0 .5" dir="0 1 -1"/>
      <frame pos=".2 0 0" euler="0 0 .5">
        <camera name="inframe" pos=".1 .2 0" axisangle="0 1 0 .4"/>
        <light name="lamp" pos="0 .1 0" dir="1 0 0" attenuation="1 .1 0" ambient=".1 .1 .1"/>
      </frame>
      <body name="arm2" pos=".4 0 0">
        <joint axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" mass="2"/>
        <camera name="trackcom" mode="trackcom" pos=".1 .3 0" quat="1 0 .2 0"/>
        <camera name="backtarget" mode="targetbody" target="arm1" pos=".2 0 .4"/>
        <light name="lookback" mode="targetbody" target="world" pos=".3 0 .3"/>
        <light name="comlight" mode="trackcom" pos="0 0 .2" active="false" bulbradius=".1"/>
      </body>
    </body>
    <body name="free" pos="1 1 1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3"/>
      <camera name="onfree" mode="targetbodycom" target="arm2" pos=".2 .2 .2"/>
    </body>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def pair():
    return load_pair(XML)


def test_camera_and_light_fields_match_mujoco(pair):
    m, _, mjm, _ = pair
    assert (m.ncam, m.nlight) == (mjm.ncam, mjm.nlight) == (11, 7)
    compared = assert_model_fields(m, mjm)
    assert {"cam_mat0", "cam_poscom0", "cam_intrinsic", "light_dir0", "light_type"} <= set(compared)
    assert m.camera("trackcom").id == mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, "trackcom")
    assert m.light("lamp").id == mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_LIGHT, "lamp")
    every_mode = {int(mode) for mode in kd.CamLightMode}
    assert set(m.cam_mode) == set(m.light_mode) == every_mode


def test_camera_and_light_frames_match_mujoco_on_random_states(pair):
    m, d, mjm, mjd = pair
    rng = np.random.default_rng(11)
    for _ in range(4):
        qpos = rng.normal(size=m.nq)
        qpos[5:8] = rng.normal(size=3) + [1, 1, 1]  # the free body near its place
        set_same_state(m, d, mjm, mjd, qpos, rng.normal(size=m.nv))
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd, stage="position")
    # the stage alone, after kinematics and com_pos
    d.cam_xpos[:] = 0
    d.light_xdir[:] = 0
    kd.kinematics(m, d)
    kd.com_pos(m, d)
    kd.camlight(m, d)
    assert_fields(m, d, mjm, mjd, names=("cam_xpos", "cam_xmat", "light_xpos", "light_xdir"))


@pytest.mark.parametrize("element, message", [
    ('<camera target="nobody" mode="targetbody"/>', "unknown target body in camera"),
    ('<light target="nobody"/>', "unknown target body in light"),
    ('<camera fovy="180"/>', "fovy too large"),
    ('<camera focal="1 1"/>', "focal/principal require sensorsize"),
    ('<light dir="0 0 0"/>', "zero direction in light"),
    ('<light softness="2"/>', r"light softness must be in \[0, 1\]"),
    ('<camera name="a"/><camera name="a"/>', "repeated name 'a' in camera"),
    ('<camera output="rgb bogus"/>', "invalid keyword: 'bogus'"),
    ('<light directional="true" type="spot"/>', "at most one of 'directional', 'type'"),
    ('<default><light directional="true" type="spot"/></default>', "at most one of 'directional', 'type'"),
])
def test_bad_cameras_and_lights_are_refused_as_by_mujoco(element, message):
    text = f"<mujoco><worldbody>{element}</worldbody></mujoco>"
    if element.startswith("<default>"):
        text = f"<mujoco>{element}<worldbody><light/></worldbody></mujoco>"
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(kd.ModelError, match=message):
        kd.Model.from_xml_string(text)
