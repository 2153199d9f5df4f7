"""The collision stage against MuJoCo 4.0: whole scenes, at states MuJoCo's own simulation visits.

Each scene is simulated by MuJoCo; at states along the way (qpos, qvel, act, ctrl, the warmstart)
both engines run forward from the same state and every Data field is compared at the oracle's
bar (1e-9 relative): the contact array field by field in MuJoCo's order (``dist``, ``pos``,
``frame``, ``geom``, ``dim``, ``friction``, ``solref``, ``solimp``, ``includemargin``,
``exclude``, ``efc_address``, ...), the constraint rows, the forces and ``qacc``. Short
rollouts then step both engines side by side. The colliders have their own tests
(``test_collision_primitive``, ``test_collision_box``, ``test_collision_convex``); here the
driver is tested: filters, order, parameter mixing, margins and gaps, flags, capacity.
"""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_fields,
    assert_model_fields,
    gym_model_path,
    load_pair,
    set_simulated_state,
    simulated_states,
)

import kinedyn as kd

# every primitive against the floor and each other; a body with several geoms (the midphase's
# sorted order), priorities, solmix, margins and gaps, a <pair> with its own parameters, an
# <exclude>, an adhesive geom and a condim-1 hinged arm
MIXED = """
<mujoco model="mixed">
  <option cone="{cone}" solver="{solver}" impratio="{impratio}">
    <flag {flags}/>
  </option>
  <default><geom solimp="0.9 0.95 0.001 0.5 2" solref="0.02 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1" friction="0.8 0.02 0.001"/>
    <geom name="wall" type="box" size=".05 1 .3" pos="-.75 0 .3"/>
    <body name="box" pos="0 0 .25" euler="10 20 5">
      <freejoint/><geom name="box" type="box" size=".1 .07 .05" margin=".01" gap=".005"/>
    </body>
    <body name="ball" pos=".05 .02 .45">
      <freejoint/><geom name="ball" type="sphere" size=".06" condim="6" friction="1 .05 .01"/>
    </body>
    <body name="capsule" pos="-.35 .1 .2" euler="0 80 10">
      <freejoint/>
      <geom name="capsule" type="capsule" size=".04 .12" condim="4" solmix="2"/>
      <geom name="knob" type="sphere" size=".05" pos="0 0 .15" priority="1" solref="0.03 0.9"/>
      <geom name="fin" type="box" size=".02 .06 .03" pos="0 0 -.15"/>
    </body>
    <body name="egg" pos=".3 .3 .25" euler="30 0 0">
      <freejoint/><geom name="egg" type="ellipsoid" size=".05 .06 .08"/>
    </body>
    <body name="can" pos="-.3 -.3 .25" euler="30 40 0">
      <freejoint/><geom name="can" type="cylinder" size=".05 .06"/>
    </body>
    <body name="can2" pos="-.25 -.3 .45" euler="80 10 0">
      <freejoint/><geom name="can2" type="cylinder" size=".04 .05"/>
    </body>
    <body name="pill" pos=".3 -.3 .3" euler="0 90 0">
      <freejoint/><geom name="pill" type="capsule" size=".03 .08"/>
    </body>
    <body name="pill2" pos=".32 -.28 .45" euler="0 90 40">
      <freejoint/><geom name="pill2" type="capsule" size=".03 .08" gap=".01"/>
    </body>
    <body name="sticky" pos=".6 .3 .12">
      <freejoint/><geom name="sticky" type="box" size=".05 .05 .05" adhesion="{adhesion}"/>
    </body>
    <body name="arm" pos="0 .55 .25">
      <joint name="hinge" type="hinge" axis="1 0 0" range="-1 1" damping=".5"/>
      <geom name="arm" type="capsule" fromto="0 0 0 0 .2 0" size=".03" condim="1"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="floor" geom2="pill" condim="4" friction="0.7 0.9 0.01 0.001 0.001"
          solreffriction="0.05 0.5" margin=".002"/>
    <exclude body1="egg" body2="can"/>
  </contact>
  <actuator><motor joint="hinge" gear="5"/></actuator>
</mujoco>
"""

# a stack of boxes: box-box faces aligned, equal sizes
STACK = """
<mujoco model="stack">
  <option solver="{solver}" cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos=".01 .005 .3" euler="0 0 10"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="-.005 .01 .5" euler="0 0 -5"><freejoint/><geom type="box" size=".08 .12 .1"/></body>
    <body pos=".3 0 .06" euler="0 0 30"><freejoint/><geom type="box" size=".06 .06 .06"/></body>
  </worldbody>
</mujoco>
"""

# a two-finger gripper (slide joints, position servos) squeezing a capsule above a table
GRIPPER = """
<mujoco model="gripper">
  <option cone="elliptic" impratio="5"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="palm" pos="0 0 .3">
      <joint name="lift" type="slide" axis="0 0 1" damping="20"/>
      <geom type="box" size=".08 .02 .02" mass="1"/>
      <body name="left" pos="-.06 0 -.08">
        <joint name="left" type="slide" axis="1 0 0" range="-.05 .05" damping="2"/>
        <geom type="box" size=".01 .02 .06" friction="1.5 .01 .001" condim="4" mass=".2"/>
      </body>
      <body name="right" pos=".06 0 -.08">
        <joint name="right" type="slide" axis="1 0 0" range="-.05 .05" damping="2"/>
        <geom type="box" size=".01 .02 .06" friction="1.5 .01 .001" condim="4" mass=".2"/>
      </body>
    </body>
    <body name="object" pos="0 0 .2" euler="90 0 0">
      <freejoint/><geom type="capsule" size=".03 .03" mass=".1"/>
    </body>
  </worldbody>
  <actuator>
    <position joint="left" kp="200" ctrlrange="-.05 .05"/>
    <position joint="right" kp="200" ctrlrange="-.05 .05"/>
    <position joint="lift" kp="500" ctrlrange="-.3 .3"/>
  </actuator>
</mujoco>
"""


def mixed(cone="pyramidal", solver="Newton", impratio=1, flags="", adhesion=0):
    return MIXED.format(cone=cone, solver=solver, impratio=impratio, flags=flags, adhesion=adhesion)


def mujoco_states(mjm, mjd, count=6, steps=40, seed=0, ctrl=None):
    """States of MuJoCo's simulation from qpos0 with random velocities (and controls)."""
    return simulated_states(mjm, mjd, count=count, steps=steps, seed=seed, qvel_scale=0.3, ctrl=ctrl)


set_state = set_simulated_state


def check_states(m, d, mjm, mjd, states, min_contacts=1, **kw):
    """forward at every state: every field equal to MuJoCo's; returns the contacts seen."""
    seen = 0
    for state in states:
        set_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert_fields(m, d, mjm, mjd, **kw)
        seen += d.ncon
    assert seen >= min_contacts, f"only {seen} contacts in all states: the test would not test contacts"
    return seen


def check_rollout(m, d, mjm, mjd, state, nstep=10):
    """nstep steps of both engines from one state: state and accelerations equal at every step."""
    set_state(d, mjd, state)
    for _ in range(nstep):
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
        for f in ("qpos", "qvel", "qacc", "act"):
            theirs = getattr(mjd, f)
            # relative, with an absolute floor of 1e-9 of the vector's size (entries near zero)
            assert_close(f, getattr(d, f), theirs, atol=1e-12 + 1e-9 * np.abs(theirs).max(initial=0.0))
        assert d.ncon == mjd.ncon


def pair(xml):
    return load_pair(xml, disable=False)


# ---- the compiled contact model ----------------------------------------------------------------


def test_contact_model_fields_are_mujocos():
    m, _, mjm, _ = pair(mixed())
    names = assert_model_fields(m, mjm)
    for f in ("geom_priority", "geom_solmix", "geom_margin", "geom_gap", "geom_rbound", "geom_aabb",
              "pair_signature", "pair_friction", "pair_solreffriction", "exclude_signature", "body_margin"):
        assert f in names
    assert (m.npair, m.nexclude) == (1, 1)


PAIRS = """
<mujoco>
  <default>
    <pair friction="0.3 0.4"/>
    <default class="sticky"><pair solref="-1000 -10" condim="1"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 .1" priority="{p0}" solmix="{s0}" solref="0.03 0.8"
          margin=".01" gap=".02" friction="0.5 0.01 0.001"/>
    <body name="a" pos="0 0 1"><freejoint/>
      <geom name="a" type="sphere" size=".1" priority="{p1}" solmix="{s1}" solref="{ref1}" condim="6"
            margin=".03" friction="1.2 .02 .002" solimp=".8 .9 .01 .4 3"/>
    </body>
    <body name="b" pos=".5 0 1"><freejoint/><geom name="b" type="capsule" size=".05 .1"/></body>
  </worldbody>
  <contact>
    <pair geom1="b" geom2="floor"/>
    <pair geom1="a" geom2="floor" class="sticky"/>
    <pair geom1="a" geom2="b" friction="0.9"/>
    <exclude body1="b" body2="a"/>
  </contact>
</mujoco>
"""


@pytest.mark.parametrize("p0, p1, s0, s1, ref1", [
    (0, 0, 1, 1, "0.02 1"), (0, 0, 3, 0.5, "0.01 2"), (0, 0, 0, 1, "0.02 1"), (0, 0, 0, 0, "0.02 1"),
    (1, 0, 1, 1, "0.02 1"), (0, 2, 1, 1, "-500 -5"), (0, 0, 1, 1, "-500 -5")])
def test_pair_defaults_swaps_and_sorting_are_mujocos(p0, p1, s0, s1, ref1):
    """<pair> values left out come from the geoms (priority, else max / solmix mix, MuJoCo 4.0's
    mix of standard solrefs); geoms are swapped to the lower body first; pairs and excludes are
    sorted by signature; <default><pair> classes apply."""
    xml = PAIRS.format(p0=p0, p1=p1, s0=s0, s1=s1, ref1=ref1)
    m, _, mjm, _ = pair(xml)
    prefixes = ("pair_", "exclude_", "geom_", "body_")
    assert_model_fields(m, mjm, names=[f.name for f in kd.engine.fields.MODEL_FIELDS
                                       if f.mujoco and f.name.startswith(prefixes)])


@pytest.mark.parametrize("xml, fragment", [
    ('<contact><pair geom1="a"/></contact>', "geom2"),
    ('<contact><pair geom1="a" geom2="nope"/></contact>', "nope"),
    ('<contact><exclude body1="a" body2="nope"/></contact>', "nope"),
    ('<contact><pair geom1="a" geom2="b" condim="2"/></contact>', "condim"),
    ('<contact><other/></contact>', "unrecognized"),
])
def test_bad_contact_sections_raise_model_errors(xml, fragment):
    base = ('<mujoco><worldbody><body name="a"><freejoint/><geom name="a" size=".1"/></body>'
            '<body name="b"><freejoint/><geom name="b" size=".1"/></body></worldbody>{}</mujoco>')
    with pytest.raises(kd.ModelError, match=fragment):
        kd.Model.from_xml_string(base.format(xml))


def test_unsupported_contact_features_are_refused():
    body = '<body><freejoint/><geom type="{}" size=".1 .1 .1"{}/></body>'
    with pytest.raises(kd.ModelError, match="surfacevel"):
        kd.Model.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 1" surfacevel="1 0 0"/>'
                                 + body.format("box", "") + "</worldbody></mujoco>")
    with pytest.raises(kd.ModelError, match="nativeccd"):
        kd.Model.from_xml_string('<mujoco><option><flag nativeccd="disable"/></option><worldbody>'
                                 + body.format("ellipsoid", "") + body.format("box", "")
                                 + "</worldbody></mujoco>")


# ---- whole scenes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["Newton", "CG", "PGS"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_mixed_scene_matches_mujoco(cone, solver):
    m, d, mjm, mjd = pair(mixed(cone=cone, solver=solver))
    states = mujoco_states(mjm, mjd)
    check_states(m, d, mjm, mjd, states, min_contacts=40)
    check_rollout(m, d, mjm, mjd, states[2])


@pytest.mark.parametrize("flags, impratio", [
    ('filterparent="disable"', 1), ('midphase="disable"', 1), ('multiccd="disable"', 1),
    ('override="enable"', 1), ("", 10)], ids=["filterparent", "midphase", "multiccd", "override", "impratio"])
def test_mixed_scene_with_flags(flags, impratio):
    xml = mixed(flags=flags, impratio=impratio)
    if "override" in flags:
        xml = xml.replace("<option ", '<option o_margin=".004" o_solref=".03 .7" o_solimp=".8 .9 .002 .4 3" '
                                      'o_friction=".6 .5 .01 .002 .001" ')
    m, d, mjm, mjd = pair(xml)
    check_states(m, d, mjm, mjd, mujoco_states(mjm, mjd, count=4, seed=1), min_contacts=20)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_adhesive_geom_pulls_as_mujoco(cone):
    """geom adhesion: the passive pull (qfrc_adhesion) and the contact rows' aref bias; the
    net interface force of mj_contactForce."""
    m, d, mjm, mjd = pair(mixed(cone=cone, adhesion=3))
    states = mujoco_states(mjm, mjd, count=4, seed=2)
    check_states(m, d, mjm, mjd, states, min_contacts=20)
    assert np.abs(d.qfrc_adhesion).max() > 0
    check_contact_forces(m, d, mjm, mjd)


def check_contact_forces(m, d, mjm, mjd):
    assert d.ncon > 0
    theirs = np.zeros(6)
    for i in range(d.ncon):
        mujoco.mj_contactForce(mjm, mjd, i, theirs)
        assert_close(f"contact_force[{i}]", kd.contact_force(m, d, i), theirs)


@pytest.mark.parametrize("solver", ["Newton", "PGS"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_box_stack_matches_mujoco(cone, solver):
    m, d, mjm, mjd = pair(STACK.format(cone=cone, solver=solver))
    states = mujoco_states(mjm, mjd, count=5, steps=60)
    check_states(m, d, mjm, mjd, states, min_contacts=40)
    check_contact_forces(m, d, mjm, mjd)
    check_rollout(m, d, mjm, mjd, states[-1])


def test_gripper_holds_an_object_as_mujoco():
    m, d, mjm, mjd = pair(GRIPPER)
    # close the fingers on the capsule, then lift
    schedule = lambda k: np.array([0.04, -0.04, 0.0 if k < 3 else 0.15])  # noqa: E731
    states = mujoco_states(mjm, mjd, count=6, steps=100, ctrl=schedule)
    assert mjd.qpos[-7 + 2] > 0.2, "the test scene should lift the object"
    check_states(m, d, mjm, mjd, states, min_contacts=10)
    check_rollout(m, d, mjm, mjd, states[-1])


@pytest.mark.parametrize("name", ["ant", "humanoid"])
def test_legged_robots_on_the_floor_match_mujoco(name):
    """gymnasium's legged robots with their contacts, their own solver settings, at states of
    MuJoCo's simulation under random controls."""
    m, d, mjm, mjd = pair(gym_model_path(name).read_text())
    states = mujoco_states(mjm, mjd, count=5, steps=50)
    check_states(m, d, mjm, mjd, states, min_contacts=5)
    check_rollout(m, d, mjm, mjd, states[-1])


def test_adhesion_actuator_grips_through_contacts(tmp_path):
    """The adhesion actuator's body transmission takes its moment from the contacts. (The pads'
    cylinder rods become capsules: cylinder-box contacts come from the convex collider's
    multi-contact, whose points are not MuJoCo 4.0's exactly; see test_collision_convex.)"""
    from pathlib import Path
    xml = (Path(__file__).parent / "models" / "adhesion_grippers.xml").read_text()
    xml = xml.replace('type="cylinder"', 'type="capsule"')
    m, d, mjm, mjd = pair(xml)
    schedule = lambda k: np.array([-0.3, -0.3, 1.0, 1.0][: mjm.nu])  # noqa: E731
    states = mujoco_states(mjm, mjd, count=5, steps=80, ctrl=schedule)
    check_states(m, d, mjm, mjd, states, min_contacts=10)
    assert np.abs(d.actuator_moment).max() > 0


# ---- capacity and API -----------------------------------------------------------------------------


# A capsule arm lying on a post's top face, touching it at zero distance at every angle: the
# colliders give |dist| ~ 1e-17 of either sign, and MuJoCo keeps or drops the pair by the rounding
# of its midphase's box test (the world body has two geoms, so the pair goes through mj_collideTree).
# The situation of MuJoCo's tutorial "bat and pinata" at its step 22.
TOUCHING_ARM = """<mujoco><worldbody>
 <geom name="floor" type="plane" size="1 1 .1" pos="0 0 -0.5"/>
 <geom name="post" type="cylinder" fromto="0 0 -.5 0 0 -.1" size=".04"/>
 <body name="arm" pos="0 0 -.1">
   <joint name="swing" type="hinge" axis="0 0 1"/>
   <geom name="arm" type="capsule" fromto="0 0 .05 .3 0 .05" size=".05"/>
 </body></worldbody></mujoco>"""


def test_zero_distance_contacts_follow_the_midphase_box_test():
    """At 360 arm angles, the same contacts as MuJoCo: before kinedyn applied mj_collideOBB's leaf
    test, 16 of them had a capsule-cylinder contact at dist ~ -1e-17 that MuJoCo drops."""
    m, d, mjm, mjd = load_pair(TOUCHING_ARM, disable=False)
    outcomes = set()
    for angle in np.linspace(0.0, 2 * np.pi, 361)[:-1]:
        d.qpos[0] = mjd.qpos[0] = angle
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert d.ncon == mjd.ncon, f"angle {angle}: ncon {d.ncon}, MuJoCo {mjd.ncon}"
        np.testing.assert_allclose(d.contact.dist, mjd.contact.dist, rtol=0, atol=1e-15)
        outcomes.add(mjd.ncon)
    assert outcomes == {0, 1}  # both of MuJoCo's decisions occur


def test_contact_capacity_drops_with_a_warning():
    xml = STACK.format(cone="pyramidal", solver="Newton")
    xml = xml.replace("<worldbody>", '<size nconmax="3"/><worldbody>')
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    assert m.nconmax == 3
    d.qpos[2] = 0.099  # the bottom box sinks into the floor: four corner contacts, no room for them all
    with pytest.warns(kd.ContactFullWarning, match="nconmax"):
        kd.forward(m, d)
    assert d.ncon <= 3
    # step says so too, for one step (the kernel's status) and for several (read after the loop)
    for nstep in (1, 2):
        d.qpos[:], d.qvel[:] = m.qpos0, 0.0
        d.qpos[2] = 0.099
        with pytest.warns(kd.ContactFullWarning, match="nconmax") as caught:
            kd.step(m, d, nstep)
        assert caught[0].filename == __file__  # pointing at the caller of step


def test_collision_stage_alone_and_contact_force_errors():
    m, d, mjm, mjd = pair(STACK.format(cone="pyramidal", solver="Newton"))
    state = mujoco_states(mjm, mjd, count=1, steps=100)[0]
    set_state(d, mjd, state)
    kd.kinematics(m, d)
    kd.collision(m, d)
    mujoco.mj_kinematics(mjm, mjd)
    mujoco.mj_collision(mjm, mjd)
    assert d.ncon == mjd.ncon > 0
    assert_close("contact.dist", d.contact.dist, np.array([c.dist for c in mjd.contact]))
    with pytest.raises(IndexError):
        kd.contact_force(m, d, d.ncon)
    with pytest.raises(TypeError):
        kd.collision(d, m)


def test_disabled_contacts_make_none():
    m = kd.Model.from_xml_string(mixed(flags='contact="disable"'))
    d = kd.Data(m)
    kd.forward(m, d)
    assert d.ncon == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", kd.ContactFullWarning)
        m.opt.disableflags = 0
        kd.step(m, d, 300)  # the bodies fall onto the floor
    assert d.ncon > 0


def test_batch_rollout_with_contacts_matches_mujoco_rollout():
    """Rollouts with contacts, on two threads, from states where the boxes rest on each other."""
    from mujoco import rollout as mj_rollout

    m, d, mjm, mjd = pair(STACK.format(cone="pyramidal", solver="Newton"))
    states = mujoco_states(mjm, mjd, count=4, steps=30)
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = []
    for s in states:
        set_state(d, mjd, s)
        row = np.empty(mujoco.mj_stateSize(mjm, full))
        mujoco.mj_getState(mjm, mjd, row, full)
        state0.append(row)
    state0 = np.array(state0)
    nstep = 20
    ours = kd.batch.rollout(m, state0, nstep=nstep, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, nstep=nstep)
    assert_close("rollout states", ours.state, theirs)


def test_sleeping_bodies_are_refused():
    # sleeping is simulated (tests/test_sleep.py) except for what the compiler refuses, e.g. RK4
    with pytest.raises(kd.ModelError, match="sleep"):
        kd.Model.from_xml_string('<mujoco><option integrator="RK4"><flag sleep="enable"/></option>'
                                 '<worldbody/></mujoco>')
    m = kd.Model.from_xml_string(STACK.format(cone="pyramidal", solver="Newton"))
    with pytest.raises(ValueError, match="SLEEP"):
        m.opt.enableflags = int(kd.EnableBit.SLEEP)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_forces_reach_cfrc_ext_as_in_mujoco(cone):
    """rne_post_constraint (mj_rnePostConstraint): the contact forces, adhesion's net force
    included, act on the two bodies at the contact point."""
    m, d, mjm, mjd = pair(mixed(cone=cone, adhesion=2))
    for state in mujoco_states(mjm, mjd, count=3, seed=4):
        set_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)
        kd.rne_post_constraint(m, d)
        assert_fields(m, d, mjm, mjd, names=["cacc", "cfrc_int", "cfrc_ext"])
    assert np.abs(d.cfrc_ext).max() > 0


def test_capacity_is_the_static_bound():
    """nconmax sums mj_maxContact over the geom pairs the static filters let through, and nefcmax
    adds a pyramid's rows per contact (condim 3: 4 rows, condim 6: 10) to the other rows."""
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body><freejoint/><geom type="box" size=".1 .1 .1"/></body>
      <body><freejoint/><geom type="sphere" size=".1" condim="6"/></body>
      <body><freejoint/><geom type="capsule" size=".1 .1" contype="0" conaffinity="0"/></body>
    </worldbody></mujoco>"""
    m = kd.Model.from_xml_string(xml)
    # plane-box 4, plane-sphere 1, box-sphere 1 (the capsule collides with nothing)
    assert m.nconmax == 6
    # a friction row per dof (18) and two limit rows per joint (6); then the contacts: box 4 x 4,
    # sphere 10 on the plane and 10 on the box
    assert m.nefcmax == 18 + 6 + 4 * 4 + 10 + 10
