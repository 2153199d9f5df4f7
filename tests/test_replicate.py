# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""``<replicate>`` expanded as MuJoCo 4.0 expands it: poses, suffixes, the elements that refer
to the replicated tree, nesting — every Model field and the names compared with MuJoCo."""

from __future__ import annotations

import warnings

import mujoco
import pytest
from oracle import assert_model_fields

import kinedyn as kd
from kinedyn.errors import ModelError

NAMED = (("body", "nbody"), ("geom", "ngeom"), ("site", "nsite"), ("actuator", "nu"), ("tendon", "ntendon"),
         ("equality", "neq"))


def _names(m, kind: str, size: str) -> list[str]:
    return [getattr(m, kind)(i).name for i in range(getattr(m, size))]


def _both(xml: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = kd.Model.from_xml_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert_model_fields(m, mjm)
    for kind, size in NAMED:
        assert _names(m, kind, size) == _names(mjm, kind, size), kind
    assert [m.joint(i).name for i in range(m.njnt)] == [mjm.jnt(i).name for i in range(mjm.njnt)]
    return m, mjm


def test_replicated_tree_and_references():
    # replicas in place between other bodies; actuators, a tendon (and the actuator on it) and an
    # equality that refer to the replicated tree become one copy per replica at the end of their
    # section, replica by replica; keyframes describe the whole model. An equality between the
    # replicas and a body before them is dropped (as by MuJoCo 4.0), one to the world replicated
    xml = """<mujoco><compiler angle="degree"/>
      <worldbody>
        <geom name="floor" type="plane" size="2 2 .1"/>
        <body name="a" pos="0 0 1"><joint name="ja"/><geom size=".1"/></body>
        <frame pos="0 0 1" euler="0 0 30">
          <replicate count="3" offset=".5 0 .1" euler="0 10 20" sep="_">
            <body name="b"><joint name="jb" axis="1 0 0" range="-30 30"/><geom name="gb" type="capsule" size=".05 .1"/><site name="sb" pos="0 0 .1"/></body>
            <geom name="wg" size=".05"/>
          </replicate>
        </frame>
        <body name="c"><joint name="jc"/><geom size=".1"/></body>
      </worldbody>
      <tendon><fixed name="t"><joint joint="jb" coef="2"/><joint joint="ja" coef="1"/></fixed></tendon>
      <equality><joint name="e" joint1="jb" joint2="ja"/><connect name="ec" body1="b" anchor="0 0 1"/>
        <joint name="e2" joint1="ja" joint2="jc"/></equality>
      <actuator><motor name="m1" joint="jb"/><motor name="ma" joint="ja"/><position name="mt" tendon="t" kp="5"/>
        <motor name="mc" joint="jc"/></actuator>
      <keyframe><key name="k" qpos=".1 .2 .3 .4 .5"/></keyframe>
    </mujoco>"""
    m, mjm = _both(xml)
    assert _names(m, "actuator", "nu") == ["ma", "mc", "m1_0", "mt_0", "m1_1", "mt_1", "m1_2", "mt_2"]
    assert _names(m, "equality", "neq") == ["e2", "ec_0", "ec_1", "ec_2"]
    assert m.key_qpos.tolist() == mjm.key_qpos.tolist() == [[.1, .2, .3, .4, .5]]


def test_nested_replicates_and_childclass():
    # inner suffix first, digits as many as the count has; orientation i*euler in radians with
    # another eulerseq; a childclass on the replicate; the enclosing body's frame
    xml = """<mujoco><compiler angle="radian" eulerseq="ZYX"/>
      <default><default class="x"><geom size=".2"/><joint damping=".3"/></default></default>
      <worldbody><body name="p" pos="1 2 3"><joint/><geom size=".1"/>
        <replicate count="2" offset="1 0 0" euler="0 0 .4">
          <replicate count="10" sep="-" offset="0 .5 .1" euler=".1 .2 .05" childclass="x">
            <body name="b"><joint name="j"/><geom name="g"/></body>
          </replicate>
        </replicate></body>
      </worldbody>
      <actuator><motor name="m" joint="j"/></actuator>
      <sensor><jointpos name="s" joint="j"/></sensor>
    </mujoco>"""
    m, _ = _both(xml)
    assert m.nbody == 22 and m.body("b-090").id == 11 and m.actuator("m-001").id == 10


def test_documentation_example():
    # MuJoCo's XML reference: Alice-00, Alice-10, Alice-01, Alice-11 at the documented poses
    xml = """<mujoco><worldbody>
      <replicate count="2" offset="0 1 0" euler="90 0 0">
        <replicate count="2" sep="-" offset="1 0 0" euler="0 90 0"><geom name="Alice" size=".1"/></replicate>
      </replicate></worldbody></mujoco>"""
    m, _ = _both(xml)
    assert _names(m, "geom", "ngeom") == ["Alice-00", "Alice-10", "Alice-01", "Alice-11"]
    assert m.geom_pos.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]


@pytest.mark.parametrize("count", [0, -2])
def test_no_replica(count):
    # MuJoCo accepts a count below 1: nothing is created, and what referred to it is gone
    _both(f"""<mujoco><worldbody><body name="a"><joint/><geom size=".1"/></body>
      <replicate count="{count}"><body><joint name="j"/><geom size=".1"/></body></replicate></worldbody>
      <actuator><motor joint="j"/></actuator></mujoco>""")


@pytest.mark.parametrize("inner, fragment", [
    ('<replicate><geom size=".1"/></replicate>', "required attribute missing: 'count'"),
    ('<replicate count="2 3"><geom size=".1"/></replicate>', "count"),
    ('<replicate count="x"><geom size=".1"/></replicate>', "bad format"),
    ('<replicate count="2" offset="1 0"><geom size=".1"/></replicate>', "offset"),
    ('<body><replicate count="2"><joint/></replicate><geom size=".1"/></body>', "joint cannot be a direct child"),
    ('<geom name="g0" size=".1"/><replicate count="2"><geom name="g" size=".1"/></replicate>', "repeated name 'g0'"),
    ('<replicate count="100000000"><geom size=".1"/></replicate>', "at most"),
])
def test_replicate_errors(inner, fragment):
    xml = f"<mujoco><worldbody>\n{inner}</worldbody></mujoco>"
    if "100000000" not in inner:
        with pytest.raises(ValueError):
            mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_string(xml)
    assert info.value.line == 2


@pytest.mark.parametrize("section", [
    '<equality><joint joint1="jb" joint2="jc"/></equality>', '<contact><pair geom1="gb" geom2="gc"/></contact>',
    '<tendon><fixed><joint joint="jb" coef="2"/><joint joint="jc" coef="1"/></fixed></tendon>',
])
def test_reference_to_a_later_element_fails_as_in_mujoco(section):
    # MuJoCo attaches each replica while it reads the tree: an element that also refers to a tree
    # element declared after the replicate is not copied, and its reference to the tree is unknown
    xml = f"""<mujoco><worldbody><replicate count="2"><body name="b"><joint name="jb"/><geom name="gb" size=".1"/></body></replicate>
      <body name="c"><joint name="jc"/><geom name="gc" size=".1"/></body></worldbody>{section}</mujoco>"""
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="'(jb|gb)'"):
        kd.Model.from_xml_string(xml)


def test_frame_scale():
    # MuJoCo 4.0's frame scale: a unit scale changes nothing and loads; another is refused
    xml = '<mujoco><worldbody><frame scale="1 1 1" scaling="geometry"><body><joint/><geom size=".1"/></body></frame></worldbody></mujoco>'
    _both(xml)
    with pytest.raises(ModelError, match="scale"):
        kd.Model.from_xml_string(xml.replace('scale="1 1 1"', 'scale="2"'))


def test_keyframe_written_for_one_replica():
    # MuJoCo 4.0: a keyframe shorter than the model (written for one replica) is completed with
    # qpos0 / zeros
    m, mjm = _both("""<mujoco><worldbody><replicate count="3"><body><joint ref=".1"/><geom size=".1"/></body></replicate>
      </worldbody><actuator><motor joint="j" name="m"/></actuator><keyframe><key qpos="1" qvel="2" ctrl="3"/></keyframe></mujoco>""".replace('<joint ref', '<joint name="j" ref'))
    assert m.key_qpos.tolist() == mjm.key_qpos.tolist() and m.key_ctrl.tolist() == [[3, 0, 0]]
