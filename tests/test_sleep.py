"""Sleeping bodies (MuJoCo 4.0's mjENBL_SLEEP): the kinematic trees and their sleep policies, as
MuJoCo's compiler makes them, against MuJoCo; the sleep flag itself, which kinedyn does not
simulate, refused."""

from __future__ import annotations

import numpy as np
import pytest

import kinedyn as kd

mujoco = pytest.importorskip("mujoco")

TREE_FIELDS = ("body_treeid", "dof_treeid", "tree_bodyadr", "tree_bodynum", "tree_dofadr", "tree_dofnum",
               "tree_sleep_policy")

# trees of every kind: a free body set to init, a two-body hinge chain (AUTO), a free body set to
# never, an actuated hinge (AUTO_NEVER), a static body with a movable child (the child is the
# root of its tree), a mocap body (no tree), bodies coupled by tendons: two trees on a plain
# spatial tendon (may sleep), two on a stiff fixed tendon and three on one tendon (never), two on
# an actuated tendon (never)
SCENE = """
<mujoco>
  <option sleep_tolerance="0.02"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="a" pos="0 0 1" sleep="init"><freejoint/><geom size=".1"/></body>
    <body name="b" pos="0 1 1"><joint type="hinge"/><geom size=".1"/>
      <body pos="0 0 .3"><joint type="slide"/><geom size=".1"/></body></body>
    <body name="c" pos="1 0 1" sleep="never"><freejoint/><geom size=".1"/></body>
    <body name="d" pos="1 1 1"><joint name="hd" type="hinge"/><geom size=".1"/></body>
    <body name="static" pos="2 0 1"><geom size=".1"/>
      <body name="child" pos="0 0 .3" sleep="allowed"><joint type="ball"/><geom size=".1"/></body></body>
    <body name="mocap" mocap="true" pos="2 2 1"><geom size=".1" contype="0" conaffinity="0"/></body>
    <body name="s1" pos="-1 0 1"><joint name="j1" type="slide"/><geom size=".1"/><site name="p1"/></body>
    <body name="s2" pos="-1 1 1"><joint name="j2" type="slide"/><geom size=".1"/><site name="p2"/></body>
    <body name="f1" pos="-2 0 1"><joint name="k1" type="hinge"/><geom size=".1"/></body>
    <body name="f2" pos="-2 1 1"><joint name="k2" type="hinge"/><geom size=".1"/></body>
    <body name="t1" pos="-3 0 1"><joint name="m1" type="hinge"/><geom size=".1"/></body>
    <body name="t2" pos="-3 1 1"><joint name="m2" type="hinge"/><geom size=".1"/></body>
    <body name="t3" pos="-3 2 1"><joint name="m3" type="hinge"/><geom size=".1"/></body>
    <body name="u1" pos="-4 0 1"><joint name="n1" type="slide"/><geom size=".1"/></body>
    <body name="u2" pos="-4 1 1"><joint name="n2" type="slide"/><geom size=".1"/></body>
  </worldbody>
  <tendon>
    <spatial><site site="p1"/><site site="p2"/></spatial>
    <fixed stiffness="10"><joint joint="k1" coef="1"/><joint joint="k2" coef="-1"/></fixed>
    <fixed><joint joint="m1" coef="1"/><joint joint="m2" coef="1"/><joint joint="m3" coef="1"/></fixed>
    <fixed name="tu"><joint joint="n1" coef="1"/><joint joint="n2" coef="1"/></fixed>
  </tendon>
  <actuator><motor joint="hd"/><motor tendon="tu"/></actuator>
</mujoco>
"""


@pytest.fixture(scope="module")
def scene():
    return kd.Model.from_xml_string(SCENE), mujoco.MjModel.from_xml_string(SCENE)


def test_trees_and_policies_match_mujoco(scene):
    m, ref = scene
    assert m.ntree == ref.ntree == 14
    for name in TREE_FIELDS:
        np.testing.assert_array_equal(getattr(m, name), getattr(ref, name), err_msg=name)
    # every policy the compiler decides occurs in the scene
    assert set(m.tree_sleep_policy.tolist()) == {int(p) for p in kd.SleepPolicy} - {kd.SleepPolicy.AUTO}
    assert m.opt.sleep_tolerance == ref.opt.sleep_tolerance == 0.02


def test_defaults_match_mujoco():
    xml = "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body></worldbody></mujoco>"
    m, ref = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert m.opt.sleep_tolerance == ref.opt.sleep_tolerance
    np.testing.assert_array_equal(m.tree_sleep_policy, ref.tree_sleep_policy)
    assert kd.Model.from_xml_string("<mujoco/>").ntree == 0


@pytest.mark.parametrize("xml, message", [
    # a policy on a body that is not the first body of a movable tree
    ("<worldbody><body sleep='never'><geom size='.1'/></body></worldbody>",
     "sleep policy only allowed for movable root bodies"),
    ("<worldbody><body><joint/><geom size='.1'/><body sleep='allowed'><joint/><geom size='.1'/></body>"
     "</body></worldbody>", "sleep policy only allowed for movable root bodies"),
    # a user policy that lets a tree sleep on a tendon that forbids it
    ("<worldbody><body sleep='allowed'><joint name='a'/><geom size='.1'/></body>"
     "<body><joint name='b'/><geom size='.1'/></body></worldbody>"
     "<tendon><fixed damping='1'><joint joint='a' coef='1'/><joint joint='b' coef='1'/></fixed></tendon>",
     "with non-zero stiffness or damping, sleeping not allowed"),
])
def test_refused_as_mujoco_refuses(xml, message):
    xml = f"<mujoco>{xml}</mujoco>"
    with pytest.raises(ValueError, match=message):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError, match=message):
        kd.Model.from_xml_string(xml)


def test_bad_keyword_refused():
    with pytest.raises(kd.ModelError, match="sleep"):
        kd.Model.from_xml_string("<mujoco><worldbody><body sleep='sometimes'><freejoint/>"
                                 "<geom size='.1'/></body></worldbody></mujoco>")


def test_sleep_flag_still_refused(scene):
    m, _ = scene
    with pytest.raises(kd.ModelError, match="sleep"):
        kd.Model.from_xml_string('<mujoco><option><flag sleep="enable"/></option></mujoco>')
    with pytest.raises(ValueError, match="SLEEP"):
        m.opt.enableflags = kd.EnableBit.SLEEP
    with pytest.raises(ValueError, match="sleep_tolerance"):
        m.opt.sleep_tolerance = -1.0
