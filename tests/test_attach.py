# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""``<asset><model>`` + ``<attach>`` expanded as MuJoCo 4.0 attaches models: names with the
prefix, the attached model's default classes (its own "main", kept apart from this model's),
its assets, the elements outside the tree that come along (or not, for a body attach), its
keyframes placed into the whole model's layout, nesting and attach inside replicate — every
Model field and the names compared with MuJoCo on multi-file models written to tmp_path."""

from __future__ import annotations

import warnings
from pathlib import Path

import mujoco
import pytest
from oracle import assert_model_fields

import kinedyn as kd
from kinedyn.errors import ModelError

NAMED = (("body", "nbody"), ("geom", "ngeom"), ("site", "nsite"), ("actuator", "nu"), ("tendon", "ntendon"),
         ("equality", "neq"), ("key", "nkey"))

ARM = """<mujoco model="arm">
  <option timestep="0.001"/>
  <default>
    <joint damping="0.2"/><geom size=".03"/>
    <default class="finger"><geom size=".01" friction=".5"/><joint range="-10 10" armature=".01"/></default>
  </default>
  <asset><material name="red" rgba="1 0 0 1"/></asset>
  <worldbody>
    <geom name="ground" type="plane" size="1 1 .1"/>
    <body name="upper" pos="0 0 .1">
      <joint name="shoulder" axis="0 1 0"/>
      <geom name="ug" type="capsule" fromto="0 0 0 .2 0 0" material="red"/>
      <body name="lower" pos=".2 0 0" childclass="finger">
        <joint name="elbow"/>
        <geom name="lg" type="capsule" fromto="0 0 0 .2 0 0"/>
        <site name="tip" pos=".2 0 0"/>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="-1"/></fixed></tendon>
  <equality><joint name="eq" joint1="shoulder" joint2="elbow" polycoef="0 .5 0 0 0"/></equality>
  <contact><exclude body1="upper" body2="lower"/></contact>
  <actuator><motor name="m" joint="elbow" gear="2"/><position name="p" tendon="t" kp="3"/></actuator>
  <keyframe><key name="home" qpos="0.1 0.2" qvel="1 2" ctrl="1 2"/></keyframe>
</mujoco>"""


def _names(m, kind: str, size: str) -> list[str]:
    get = getattr(m, kind)
    return [get(i).name for i in range(getattr(m, size))]


def _both(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = kd.Model.from_xml_path(path)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    assert_model_fields(m, mjm)
    for kind, size in NAMED:
        assert _names(m, kind, size) == _names(mjm, kind, size), kind
    assert [m.joint(i).name for i in range(m.njnt)] == [mjm.jnt(i).name for i in range(mjm.njnt)]
    return m, mjm


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "main.xml"


def test_attach_body_and_whole_model(tmp_path):
    # a body (with what refers only to it) in a body, and the whole model (its world geoms
    # included) in a frame; the arm's classes are its own although this model has a class of the
    # same name; its material comes along; its keyframe is placed into this model's layout.
    # (Two <model> assets: attaching one model asset twice, MuJoCo 4.0 writes the values of the
    # first attachment's keyframe for joints it left out into the second attachment's joints.)
    main = _write(tmp_path, {"robots/arm.xml": ARM, "main.xml": """<mujoco>
      <default><joint damping="5"/><geom size=".1"/><default class="finger"><geom size=".5"/></default></default>
      <asset><model name="arm" file="robots/arm.xml"/><model name="arm2" file="robots/arm.xml"/></asset>
      <worldbody>
        <body name="base" pos="0 0 1"><joint name="slide" type="slide"/><geom/>
          <attach model="arm" body="lower" prefix="L_"/>
        </body>
        <frame pos="1 0 0" euler="0 0 30"><attach model="arm2" prefix="R_"/></frame>
      </worldbody>
      <actuator><motor name="ms" joint="slide"/></actuator>
      <keyframe><key name="k0" qpos="1 2 3 4"/></keyframe>
    </mujoco>"""})
    m, _ = _both(main)
    assert _names(m, "actuator", "nu") == ["ms", "L_m", "R_m", "R_p"]
    assert _names(m, "key", "nkey") == ["k0", "L_home", "R_home"]
    assert m.key_qpos[1:].tolist() == [[0, .2, 0, 0], [0, 0, .1, .2]]


def test_nested_attach_inside_replicate(tmp_path):
    # a model that attaches another (found relative to its own file) attached in each replica;
    # the attached model's keyframe sets the first replica
    main = _write(tmp_path, {
        "models/gripper/gripper.xml": """<mujoco model="gripper">
          <default><default class="pad"><geom size=".01" friction="2"/></default></default>
          <worldbody><body name="palm"><geom size=".02"/>
            <body name="f1"><joint name="j1" type="slide" axis="1 0 0" range="0 .04"/><geom class="pad"/></body>
            <body name="f2"><joint name="j2" type="slide" axis="-1 0 0" range="0 .04"/><geom class="pad"/></body>
          </body></worldbody>
          <equality><joint joint1="j1" joint2="j2"/></equality>
          <actuator><position name="grip" joint="j1" kp="100" ctrlrange="0 .04"/></actuator>
        </mujoco>""",
        "models/arm.xml": """<mujoco model="arm">
          <asset><model name="g" file="gripper/gripper.xml"/></asset>
          <worldbody><body name="link"><joint name="shoulder" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".02"/>
            <frame pos=".3 0 0"><attach model="g" body="palm" prefix="hand_"/></frame></body></worldbody>
          <actuator><motor name="m" joint="shoulder"/></actuator>
          <keyframe><key name="up" qpos="1.5 .01 .02" ctrl="3 .04"/></keyframe>
        </mujoco>""",
        "main.xml": """<mujoco><asset><model name="arm" file="models/arm.xml"/></asset>
          <worldbody><geom type="plane" size="1 1 .1"/>
            <replicate count="2" offset="0 .5 0"><body name="base"><attach model="arm" prefix="a/"/></body></replicate>
          </worldbody></mujoco>"""})
    m, _ = _both(main)
    assert m.body("a/hand_f21").id == 10
    assert m.key_qpos.tolist() == [[1.5, .01, .02, 0, 0, 0]]


@pytest.mark.parametrize("attach, fragment", [
    ('<attach model="arm" body="upper"/>', "required attribute missing: 'prefix'"),
    ('<attach model="nope" prefix="x"/>', "could not find model 'nope'"),
    ('<attach model="arm" body="nope" prefix="x"/>', "could not find body 'nope'"),
    ('<attach model="arm" body="upper" prefix=""/><attach model="arm" body="upper" prefix=""/>', "repeated"),
])
def test_attach_errors(tmp_path, attach, fragment):
    main = _write(tmp_path, {"arm.xml": ARM, "main.xml": f"""<mujoco><asset><model name="arm" file="arm.xml"/></asset>
      <worldbody>
        {attach}</worldbody></mujoco>"""})
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(main))
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_path(main)
    assert info.value.line is not None


@pytest.mark.parametrize("files, fragment", [
    # MuJoCo compiles an attached model with its own <compiler>; kinedyn converts angles and
    # orientations, and needs the same settings otherwise
    ({"main.xml": '<mujoco><compiler autolimits="false"/><asset><model name="arm" file="arm.xml"/></asset><worldbody><attach model="arm" prefix="x"/></worldbody></mujoco>',
      "arm.xml": ARM}, "same compiler settings"),
    # self-attachment finds only what MuJoCo has read when it meets the <attach>
    ({"main.xml": '<mujoco><worldbody><body><attach body="b" prefix="x"/></body><body name="b"/></worldbody></mujoco>'},
     "could not find body 'b'"),
    ({"main.xml": '<mujoco><worldbody><body name="b"><geom size=".1"/></body><attach prefix="x"/></worldbody></mujoco>'},
     "either 'body' or 'frame'"),
    ({"main.xml": '<mujoco><worldbody><body name="b"><geom size=".1"/></body><body name="xb"/><attach body="b" prefix="x"/></worldbody></mujoco>'},
     "already exists"),
    # MuJoCo does not check cycles of <model> assets (it loops); kinedyn refuses them
    ({"main.xml": '<mujoco><asset><model name="a" file="a.xml"/></asset></mujoco>',
      "a.xml": '<mujoco><asset><model name="b" file="b.xml"/></asset></mujoco>',
      "b.xml": '<mujoco><asset><model name="a" file="a.xml"/></asset></mujoco>'}, "cycle"),
    ({"main.xml": '<mujoco><asset><model name="a" file="nope.xml"/></asset></mujoco>'}, "Error opening file"),
])
def test_attach_refused(tmp_path, files, fragment):
    main = _write(tmp_path, files)
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_path(main)
    assert info.value.line is not None and info.value.element.split()[0] in ("attach", "model")


def test_attach_frame(tmp_path):
    # frame=: the frame with its pose and content, without the frames that enclose it there
    main = _write(tmp_path, {
        "child.xml": """<mujoco><default><geom size=".05"/></default><worldbody>
          <frame name="outer" pos="0 0 1"><frame name="f" pos="1 0 0" euler="0 0 90">
            <body name="b"><joint name="j"/><geom size=".1"/></body><geom name="fg"/></frame></frame>
          </worldbody><actuator><motor name="m" joint="j"/></actuator></mujoco>""",
        "main.xml": """<mujoco><asset><model name="c" file="child.xml"/></asset><worldbody>
          <body name="p" pos="0 1 0"><joint/><geom size=".1"/><attach model="c" frame="f" prefix="x"/></body>
          </worldbody></mujoco>"""})
    m, _ = _both(main)
    assert m.geom_size[1, 0] == .05 and m.actuator("xm").id == 0


ROBOT = """<mujoco model="robot">
  <compiler angle="radian" eulerseq="ZYX" autolimits="true"/>
  <default>
    <joint range="-1 1" damping=".1"/>
    <geom size=".05" euler=".1 .2 .3"/>
    <default class="slide"><joint type="slide" range="-.2 .3"/></default>
    <default class="ball"><joint type="ball" range="0 .7"/></default>
    <default class="unlimited"><joint limited="false" range="-2 2"/></default>
  </default>
  <worldbody>
    <body name="base" euler=".3 -.2 .1"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <body name="a" pos=".2 0 0" axisangle="0 1 1 .5"><joint name="h1" ref=".2" springref=".1" stiffness="1"/><geom/>
        <body name="b" pos=".2 0 0"><joint name="s1" class="slide"/><geom euler="0 0 .5"/>
          <body name="c" pos=".2 0 0"><joint name="b1" class="ball"/><geom quat="1 0 0 0"/>
            <body name="d" pos=".1 0 0"><joint name="h2" class="unlimited"/><geom/><site name="tip" euler=".4 0 0"/></body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator><position name="p" joint="h1" kp="10" inheritrange="1"/></actuator>
  <keyframe><key name="home" qpos="0 0 1 1 0 0 0 .3 .1 1 0 0 0 .2" ctrl=".5"/></keyframe>
</mujoco>"""


def test_attach_model_with_other_angle_units_and_eulerseq(tmp_path):
    # a robot written in radians with eulerseq ZYX (as many published robots) attached to a scene
    # in MuJoCo's default degrees: orientations (also of default classes) and the angles of hinge
    # and ball joints compile as MuJoCo compiles them with the robot's own settings; the keyframe
    # sets the unnamed free joint too
    main = _write(tmp_path, {"robot.xml": ROBOT, "main.xml": """<mujoco><asset><model name="r" file="robot.xml"/></asset>
      <worldbody><frame euler="0 0 90"><attach model="r" prefix="r/"/></frame></worldbody></mujoco>"""})
    m, _ = _both(main)
    assert m.key_qpos[0, :3].tolist() == [0, 0, 1]


def test_self_attach(tmp_path):
    # <attach> without a model copies a body of this model read before it, with what refers to it;
    # classes and materials are this model's; the copy keeps its own class context
    main = _write(tmp_path, {"main.xml": """<mujoco>
      <default><default class="c"><geom size=".2"/></default><default class="d"><geom size=".3"/></default></default>
      <asset><material name="m"/></asset>
      <worldbody><body name="b" pos="1 0 0" childclass="c"><joint name="j"/><geom name="g" material="m"/>
          <body name="b2"><joint name="j2"/><geom/></body></body>
        <body name="p" pos="0 1 0" childclass="d"><geom/><frame pos="1 1 1"><attach body="b2" prefix="y"/></frame>
          <attach body="b" prefix="x"/></body></worldbody>
      <tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>
      <actuator><motor name="m" joint="j"/><motor name="m2" joint="j2"/><position name="pt" tendon="t" kp="2"/></actuator>
      <keyframe><key name="k" qpos="1 2"/></keyframe></mujoco>"""})
    m, _ = _both(main)
    assert _names(m, "actuator", "nu") == ["m", "m2", "pt", "ym2", "xm", "xm2", "xpt"]


BOX_OBJ = "\n".join(["v -.1 -.1 -.1", "v .1 -.1 -.1", "v .1 .1 -.1", "v -.1 .1 -.1", "v -.1 -.1 .1", "v .1 -.1 .1",
                     "v .1 .1 .1", "v -.1 .1 .1", "f 1 3 2", "f 1 4 3", "f 5 6 7", "f 5 7 8", "f 1 2 6", "f 1 6 5",
                     "f 2 3 7", "f 2 7 6", "f 3 4 8", "f 3 8 7", "f 4 1 5", "f 4 5 8"]) + "\n"


def test_attached_meshes_use_their_models_directories_and_classes(tmp_path):
    # the robot's mesh files are found with its own meshdir, next to its file; its mesh default
    # class applies to its meshes (named after their files), not this model's
    main = _write(tmp_path, {
        "robot/assets/box.obj": BOX_OBJ,
        "robot/robot.xml": """<mujoco model="r"><compiler meshdir="assets"/>
          <default><mesh scale="2 1 1"/></default>
          <asset><mesh file="box.obj"/><mesh name="b2" file="box.obj" scale="1 1 3"/></asset>
          <worldbody><body name="base"><freejoint/><geom type="mesh" mesh="box"/><geom type="mesh" mesh="b2" pos="0 0 1"/></body></worldbody></mujoco>""",
        "main.xml": """<mujoco><compiler meshdir="elsewhere"/><option><flag multiccd="disable"/></option>
          <default><mesh scale="5 5 5"/></default><asset><model name="r" file="robot/robot.xml"/></asset>
          <worldbody><attach model="r" prefix="a_"/><frame pos="1 0 0"><attach model="r" prefix="b_"/></frame></worldbody></mujoco>"""})
    m, _ = _both(main)
    assert abs(m.body_mass[1] - 40) < 1e-5


def test_attached_classes_keep_their_defaults_when_their_names_clash(tmp_path):
    # issue 26 (openarm's bottle scenes): an empty prefix brings the attached file's "visual" and
    # its "main" in under names this model already has, and a cell model that attaches the same
    # arm file twice brings that file's classes in twice. MuJoCo 4.0 accepts both and each
    # attached element keeps its own file's defaults.
    arm = """<mujoco model="arm">
      <default><geom density="300" friction=".7"/>
        <default class="visual"><geom group="3" contype="0" conaffinity="0"/></default>
      </default>
      <worldbody><body name="link"><joint axis="0 1 0"/>
        <geom name="col" size=".05"/><geom name="vis" class="visual" size=".04" pos="0 0 .1"/>
      </body></worldbody></mujoco>"""
    cell = """<mujoco model="cell">
      <default><geom density="2000"/><default class="visual"><geom group="1" conaffinity="0"/></default></default>
      <asset><model name="arm" file="arm.xml"/></asset>
      <worldbody><geom name="cellvis" class="visual" size=".1"/>
        <frame pos=".5 0 0"><attach model="arm" prefix="left_"/></frame>
        <frame pos="-.5 0 0"><attach model="arm" prefix="right_"/></frame>
        <body name="table" pos="0 1 0"><freejoint/><geom name="top" size=".2"/></body>
      </worldbody></mujoco>"""
    main = _write(tmp_path, {"arm.xml": arm, "cell.xml": cell, "main.xml": """<mujoco model="scene">
      <default><geom density="50" friction=".3"/>
        <default class="visual"><geom group="2" contype="0"/></default>
      </default>
      <asset><model name="cell" file="cell.xml"/><model name="arm" file="arm.xml"/></asset>
      <worldbody><geom name="floor" type="plane" size="2 2 .1"/><geom name="mark" class="visual" size=".01"/>
        <attach model="cell" prefix=""/>
        <frame pos="0 0 1"><attach model="arm" prefix=""/></frame>
      </worldbody></mujoco>"""})
    m, mjm = _both(main)
    geoms = {mjm.geom(i).name: i for i in range(mjm.ngeom)}
    assert [int(m.geom_group[geoms[g]]) for g in ("mark", "cellvis", "left_vis", "vis")] == [2, 1, 3, 3]
    assert m.body_mass[mjm.body("table").id] == pytest.approx(2000 * 4 / 3 * 3.141592653589793 * .2 ** 3)
