"""Sleeping bodies (MuJoCo 4.0's mjENBL_SLEEP), against MuJoCo: the kinematic trees and their
sleep policies as MuJoCo's compiler makes them; bodies settling until they sleep, woken by a push
and by a contact, stepped (Euler, implicitfast, implicit; batch) and forwarded as MuJoCo does; the
parts kinedyn's sleeping does not cover, refused."""

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


def test_dof_length_matches_mujoco(scene):
    m, ref = scene
    np.testing.assert_allclose(m.dof_length, ref.dof_length, rtol=1e-12)


@pytest.mark.parametrize("body, what", [
    ("<body><joint name='h' limited='true' range='-1 1'/><geom size='.1'/></body>", "joint limits"),
    ("<body><freejoint/><geom size='.1'/><site name='s'/></body></worldbody><sensor><accelerometer "
     "site='s'/></sensor><worldbody>", "acceleration-stage"),
    ("<body sleep='init'><freejoint/><geom size='.1'/></body>", "sleep=\"init\""),
    ("<body sleep='allowed'><joint name='h'/><geom size='.1'/></body></worldbody><actuator><motor "
     "joint='h'/></actuator><worldbody>", "actuators on trees that may sleep"),
])
def test_what_sleeping_does_not_cover_is_refused(body, what):
    xml = f'<mujoco><option><flag sleep="enable"/></option><worldbody>{body}</worldbody></mujoco>'
    mujoco.MjModel.from_xml_string(xml)  # MuJoCo simulates it
    with pytest.raises(kd.ModelError, match=what) as err:
        kd.Model.from_xml_string(xml)
    assert "flag" in str(err.value)


def test_sleep_flag_not_switched_at_run_time(scene):
    m, _ = scene
    with pytest.raises(ValueError, match="SLEEP"):
        m.opt.enableflags = kd.EnableBit.SLEEP
    with pytest.raises(ValueError, match="sleep_tolerance"):
        m.opt.sleep_tolerance = -1.0


# a box, a sphere and two stacked boxes settle on a floor and fall asleep (the stack as one island
# of two trees); then the box is pushed into the sphere: the push wakes the box, the contact the
# sphere. Sensors of the position and velocity stages on sleeping and awake bodies.
SETTLE = """
<mujoco>
  <option integrator="{integrator}"><flag sleep="enable"/></option>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .3"><freejoint/><geom type="box" size=".1 .1 .1"/><site name="s"/></body>
    <body name="ball" pos=".5 0 .4"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos="0 .5 .2"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="top" pos="0 .5 .45"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
  <sensor>
    <framepos objtype="body" objname="ball"/>
    <framepos objtype="body" objname="top" reftype="body" refname="box"/>
    <velocimeter site="s"/>
    <subtreelinvel body="top"/>
  </sensor>
</mujoco>
"""
NSTEP, PUSH, NPUSH = 600, 300, 60


def _close(a, b, what, i):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"{what} at step {i}")


def _compare(d, md, i, full=True):
    for name in ("tree_asleep", "tree_awake", "body_awake"):
        np.testing.assert_array_equal(getattr(d, name), getattr(md, name), err_msg=f"{name} at step {i}")
    assert d.ncon == md.ncon, f"ncon at step {i}"
    _close(d.qpos, md.qpos, "qpos", i)
    _close(d.qvel, md.qvel, "qvel", i)
    if full:
        _close(d.contact.dist, md.contact.dist, "contact dist", i)
        np.testing.assert_array_equal(d.contact.geom, md.contact.geom, err_msg=f"contact geom at step {i}")
        _close(d.sensordata, md.sensordata, "sensordata", i)


def _push(d, on):
    d.xfrc_applied[1, 0] = 300.0 if on else 0.0


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "implicit"])
def test_settle_sleep_and_wake_as_mujoco(integrator):
    xml = SETTLE.format(integrator=integrator)
    m, d = kd.Model.from_xml_string(xml), None
    d = kd.Data(m)
    ref = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(ref)
    _compare(d, md, -1, full=False)  # the state at reset
    slept = woke_by_contact = False
    for i in range(NSTEP):
        if i in (PUSH, PUSH + NPUSH):
            _push(d, i == PUSH)
            _push(md, i == PUSH)
        ball_asleep = md.tree_asleep[1] >= 0
        kd.step(m, d)
        mujoco.mj_step(ref, md)
        _compare(d, md, i)
        slept |= bool((md.tree_asleep >= 0).all())
        woke_by_contact |= i > PUSH and ball_asleep and md.tree_asleep[1] < 0
        if i == PUSH - 1:
            assert (d.qvel == 0).all()  # asleep: frozen
            # forward on the sleeping scene, and a copy that carries the state
            d2 = d.copy()
            md2 = mujoco.MjData(ref)
            mujoco.mj_copyData(md2, ref, md)
            kd.forward(m, d2)
            mujoco.mj_forward(ref, md2)
            _compare(d2, md2, i)
            _close(d2.qacc, md2.qacc, "qacc after forward", i)
            kd.reset(m, d2)
            mujoco.mj_resetData(ref, md2)
            _compare(d2, md2, i, full=False)
    # the scene fell asleep, and the contact did wake the ball
    assert slept and woke_by_contact


def test_batch_steps_as_mujoco():
    xml = SETTLE.format(integrator="Euler")
    m = kd.Model.from_xml_string(xml)
    bd = kd.batch.BatchData(m, 2)
    ref = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(ref)
    kd.batch.step(m, bd, nstep=PUSH)
    for _ in range(PUSH):
        mujoco.mj_step(ref, md)
    assert (md.tree_asleep >= 0).all()
    for k in range(2):
        _compare(bd[k], md, PUSH)
