"""Mocap bodies, keyframes and settotalmass against MuJoCo 4.0.

A mocap body is a jointless child of the world whose pose is Data.mocap_pos / mocap_quat
(mj_kinematics). Here a mocap target drags a three-link arm through a weld and a second
one pulls its elbow through a connect; the arm's motion is compared with MuJoCo's step by step.
"""

import mujoco
import numpy as np
import pytest
from oracle import assert_close, assert_fields, assert_model_fields, load_pair

import kinedyn as kd

ARM = """<mujoco model="mocap arm">
  <compiler settotalmass="{mass}"/>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="target" mocap="true" pos=".3 .1 .8" euler="10 20 30">
      <geom type="box" size=".03 .03 .03" contype="0" conaffinity="0"/>
      <site name="aim"/>
    </body>
    <frame pos="0 .2 0">
      <body name="pull" mocap="true" pos="0 0 1.2"><geom size=".02" contype="0" conaffinity="0"/></body>
    </frame>
    <body name="l1" pos="0 0 1">
      <joint name="j1" axis="0 0 1" damping=".2"/>
      <joint name="j2" axis="0 1 0" damping=".2"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body name="l2" pos=".3 0 0">
        <joint name="j3" axis="0 1 0" damping=".2" range="-2 2"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
        <body name="hand" pos=".3 0 0">
          <joint name="j4" type="ball" damping=".1"/>
          <geom type="box" size=".04 .02 .02"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality>
    <weld body1="target" body2="hand" solref=".02 1"/>
    <connect body1="l2" body2="pull" anchor="0 0 0" solref=".05 1"/>
  </equality>
  <keyframe>
    <key name="reach" time="1.5" qpos=".1 .2 .3 1 0 0 0" mpos=".2 .2 .9 0 .3 1.1" mquat="1 1 0 0 2 0 0 0"/>
    <key name="default"/>
  </keyframe>
</mujoco>"""


@pytest.fixture(scope="module")
def arm():
    return load_pair(ARM.format(mass=-1), disable=False)


def test_mocap_model_and_initial_data_match_mujoco(arm):
    m, d, mjm, mjd = arm
    assert m.nmocap == 2
    assert list(m.body_mocapid) == [-1, 0, 1, -1, -1, -1]
    assert_model_fields(m, mjm)  # body_mocapid, key_mpos, key_mquat, body_weldid, eq_data, ...
    assert_close("mocap_pos", d.mocap_pos, mjd.mocap_pos)
    assert_close("mocap_quat", d.mocap_quat, mjd.mocap_quat)


def test_mocap_drags_the_arm_as_in_mujoco(arm):
    m, d, mjm, mjd = arm
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    rng = np.random.default_rng(3)
    d.qvel[:] = mjd.qvel[:] = rng.normal(scale=0.3, size=m.nv)
    for t in range(60):
        # the targets move (and their quaternion is not normalised: kinematics normalises it)
        d.mocap_pos[0] = mjd.mocap_pos[0] = (0.3 + 0.1 * np.sin(0.1 * t), 0.1 + 0.1 * np.cos(0.1 * t), 0.8)
        d.mocap_quat[0] = mjd.mocap_quat[0] = (2.0, 0.1 * t, 0.3, -0.2)
        d.mocap_pos[1] = mjd.mocap_pos[1] = (0.05 * np.sin(0.2 * t), 0.2, 1.2)
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert d.ne == mjd.ne == 9
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "xpos", "xquat", "efc_force"))
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)
    # the mocap bodies sit at their mocap poses (quaternion normalised), and they dragged the arm
    target = m.body("target").id
    assert np.array_equal(d.xpos[target], d.mocap_pos[0])
    assert_close("xquat", d.xquat[target], d.mocap_quat[0] / np.linalg.norm(d.mocap_quat[0]))
    assert np.abs(d.qpos - m.qpos0).max() > 0.3


def test_reset_data_keyframe_sets_the_mocap_poses(arm):
    m, d, mjm, mjd = arm
    d.qvel[:] = 1.0
    d.mocap_pos[:] = 5.0
    for key in ("reach", 0, "default", 1):
        kd.reset_data_keyframe(m, d, key)
        k = m.key(key).id
        mujoco.mj_resetDataKeyframe(mjm, mjd, k)
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat"))
        assert d.time == mjd.time
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qpos", "mocap_pos", "mocap_quat"))
    with pytest.raises(KeyError, match="reac"):
        kd.reset_data_keyframe(m, d, "reac")


def test_settotalmass_scales_masses_and_inertias():
    xml = ARM.format(mass=7.5)
    m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert m.body_mass.sum() == pytest.approx(7.5, rel=1e-12)
    assert_model_fields(m, mjm)  # body_mass, body_inertia, subtree masses, invweight0, ...


@pytest.mark.parametrize("bodies", [
    # a mocap body carrying a jointed child and a static one; a mocap body in a frame; a plane on one
    '<body mocap="true" pos="0 1 0" quat="1 2 3 4"><geom size=".1"/><body pos="0 0 .3"><joint/>'
    '<geom size=".1"/></body><body pos="0 .2 0"><geom size=".1"/></body></body>',
    '<frame pos="1 2 3" euler="0 0 40"><body mocap="true" pos="0 1 0"><geom size=".1"/></body></frame>',
    '<body mocap="true" pos="0 1 0"><geom type="plane" size="1 1 1"/></body>',
])
def test_mocap_body_forms_match_mujoco(bodies):
    text = (f'<mujoco><worldbody>{bodies}<body><joint/><geom size=".1"/></body></worldbody>'
            '<keyframe><key mpos="1 1 1"/></keyframe></mujoco>')
    m, d, mjm, mjd = load_pair(text, disable=False)
    assert_model_fields(m, mjm)
    d.qpos[:] = mjd.qpos[:] = 0.3
    d.mocap_pos[:] = mjd.mocap_pos[:] = 0.2
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)


@pytest.mark.parametrize("xml, message", [
    ('<body name="b" pos="1 0 0"><body mocap="true"/></body>', "mocap body '' is not a fixed child of world"),
    ('<body name="b" mocap="true"><joint/><geom size=".1"/></body>', "mocap body 'b' is not a fixed child"),
])
def test_mocap_body_must_be_a_fixed_child_of_the_world(xml, message):
    text = f"<mujoco><worldbody>{xml}</worldbody></mujoco>"
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(kd.ModelError, match=message):
        kd.Model.from_xml_string(text)


def test_keyframe_vectors_short_padded_long_refused_as_mujoco():
    base = ('<mujoco><worldbody><body mocap="true" pos="7 7 7"/>'
            '<body mocap="true" pos="8 8 8" quat="0 1 0 0"/><body><joint name="h" ref="3" armature=".1"/>'
            '<joint type="ball"/><geom size="1"/></body></worldbody>'
            '<actuator><motor joint="h"/></actuator><keyframe><key {}/></keyframe></mujoco>')
    for key in ('mpos="1 2 3 4"', 'mquat="0 1 0 0 5"', 'qpos="1"', 'qpos="1 2 3"', 'qvel="1 2"',
                'mpos="1 2"'):
        text = base.format(key)
        assert_model_fields(kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text),
                            names=("key_qpos", "key_qvel", "key_ctrl", "key_mpos", "key_mquat"))
    for key, message in (('mpos="1 2 3 4 5 6 7"', "invalid mpos size, expected 6, got 7"),
                         ('ctrl="1 2"', "invalid ctrl size, expected 1, got 2")):
        text = base.format(key)
        with pytest.raises(ValueError, match="invalid"):
            mujoco.MjModel.from_xml_string(text)
        with pytest.raises(kd.ModelError, match=message):
            kd.Model.from_xml_string(text)


def test_batch_members_carry_their_own_mocap_poses(arm):
    m, _, mjm, _ = arm
    bd = kd.batch.BatchData(m, 2)
    fresh = mujoco.MjData(mjm)
    assert_close("mocap_pos", bd.mocap_pos, np.stack([fresh.mocap_pos] * 2))
    assert_close("mocap_quat", bd.mocap_quat, np.stack([fresh.mocap_quat] * 2))
    bd.mocap_pos[1, 0] += (0.1, -0.2, 0.05)  # member 1's target elsewhere
    kd.batch.step(m, bd, 25)
    for i in range(2):
        mjd = mujoco.MjData(mjm)
        mjd.mocap_pos[:] = bd.mocap_pos[i]
        mujoco.mj_step(mjm, mjd, 25)
        assert_close(f"qpos[{i}]", bd.qpos[i], mjd.qpos)
    assert not np.allclose(bd.qpos[0], bd.qpos[1])
