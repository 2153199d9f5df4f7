# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Fixed tendons vs MuJoCo 4.0: compiled fields, forward (every Data field) and 500-step rollouts.

Oracle: MuJoCo on the same MJCF text with constraints and contacts disabled
(``oracle.load_pair``). Tendon fields are in the registry, so ``assert_model_fields``
and ``assert_fields`` compare ``tendon_*``, ``wrap_*``, ``ten_length``, ``ten_J``
(densified from MuJoCo's sparse storage) and ``ten_velocity`` with everything else.
Tolerance: the oracle's (1e-9 relative, 1e-12 absolute) for single evaluations; 1e-6 for
states after 500 steps, where round-off differences compound.

Models: gymnasium's humanoid (two fixed tendons), ``tests/models/inheritrange.xml`` (a
position servo whose ctrlrange comes from a tendon range) and hand-written models
with stiffness, damping, springlength deadbands, tendons spanning separate
subtrees and simple bodies, and actuators of every supported shortcut on tendons.
"""

from __future__ import annotations

import ctypes
import warnings

import mujoco
import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_fields,
    assert_forward_matches,
    assert_model_fields,
    gym_model_path,
    libmujoco,
    load_pair,
    model_file,
    set_same_state,
)
from strategies import random_state

import kinedyn as kd
from kinedyn.engine.smooth_tendon import wrap_geom
from kinedyn.engine.types import WRAP_CYLINDER, WRAP_SPHERE
from kinedyn.errors import ModelError, UnsimulatedFeatureWarning

STEP_TOL = 1e-6
N_STEPS = 500

# two arms (separate subtrees), a simple body hanging from the world and a free body;
# tendons couple dofs across subtrees, with deadband springs, dampers and default classes
ARMS = """
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002" integrator="{integrator}"/>
  <default>
    <tendon stiffness="2" damping="0.3" rgba="1 0 0 1" width="0.01"/>
    <default class="stiff"><tendon stiffness="20" springlength="0.1 0.4"/></default>
  </default>
  <worldbody>
    <body name="a1" pos="0 0 1">
      <joint name="a1" axis="0 1 0" damping="0.1" springref="0.2" stiffness="1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="a2" pos="0.3 0 0">
        <joint name="a2" axis="0 1 0" ref="0.3"/>
        <joint name="a2s" type="slide" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
    <body name="b1" pos="1 0 1">
      <joint name="b1" axis="1 0 0"/>
      <geom type="box" size="0.1 0.05 0.2" pos="0 0 -0.2"/>
      <body name="b2" pos="0 0 -0.4">
        <joint name="b2" type="slide" axis="0 0 1" springref="-0.1"/>
        <geom size="0.05"/>
      </body>
    </body>
    <body name="simple" pos="2 0 1">
      <joint name="s" type="slide" axis="0 0 1"/>
      <geom size="0.1"/>
    </body>
    <body name="free" pos="3 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.3"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="arm">
      <joint joint="a1" coef="1"/>
      <joint joint="a2" coef="-0.5"/>
    </fixed>
    <fixed name="cross" class="stiff" damping="1.5">
      <joint joint="a2s" coef="2"/>
      <joint joint="b1" coef="0.7"/>
      <joint joint="s" coef="-1"/>
    </fixed>
    <fixed name="dead" stiffness="5" springlength="-0.2 0.2" damping="0">
      <joint joint="b2" coef="1"/>
      <joint joint="a1" coef="0.3"/>
    </fixed>
    <fixed name="one" springlength="0.05" group="2">
      <joint joint="s" coef="3"/>
    </fixed>
    <fixed name="plain" stiffness="0" damping="0" range="-1 1" actuatorfrcrange="-2 3">
      <joint joint="b1" coef="-1"/>
      <joint joint="a2" coef="1"/>
    </fixed>
  </tendon>
  <actuator>
    <motor tendon="arm" gear="2"/>
    <position tendon="cross" kp="10" kv="2"/>
    <velocity tendon="dead" kv="3"/>
    <intvelocity tendon="plain" kp="4" inheritrange="0.5"/>
    <damper tendon="one" kv="0.5" ctrlrange="0 2"/>
    <general tendon="arm" dyntype="filter" dynprm="0.05" gaintype="affine" gainprm="1 0 -0.5" biastype="affine" biasprm="0 -1 -0.2"/>
    <position tendon="plain" kp="6" dampratio="0.7"/>
  </actuator>
</mujoco>
"""

INTEGRATORS = ("Euler", "RK4", "implicitfast")


def _load(xml, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
        return load_pair(xml, **kwargs)


MODEL_NAMES = ("humanoid", "inheritrange", "arms")


def _model(name):
    """MJCF text or path of one of MODEL_NAMES."""
    if name == "humanoid":
        return gym_model_path("humanoid")
    if name == "inheritrange":
        return model_file("inheritrange")
    return ARMS.format(integrator="Euler")


# ---- compiled fields --------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_tendon_model_fields_match_mujoco(name):
    m, _, mjm, _ = _load(_model(name))
    compared = assert_model_fields(m, mjm)
    for field in ("nwrap", "tendon_adr", "tendon_num", "tendon_limited", "tendon_range", "tendon_stiffness",
                  "tendon_damping", "tendon_lengthspring", "tendon_length0", "tendon_frictionloss",
                  "tendon_actfrclimited", "tendon_actfrcrange", "wrap_type", "wrap_objid", "wrap_prm"):
        assert field in compared
    assert m.ntendon > 0
    assert [m.id2name("tendon", i) for i in range(m.ntendon)] == [
        mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_TENDON, i) or "" for i in range(mjm.ntendon)]


def test_inheritrange_uses_the_tendon_range():
    m, _, mjm, _ = _load(_model("inheritrange"))
    i = m.actuator("tendon_pos").id
    t = m.tendon("sum").id
    lo, hi = m.tendon_range[t]
    np.testing.assert_allclose(m.actuator_ctrlrange[i], [0.5 * (lo + hi) - 0.25 * (hi - lo),
                                                         0.5 * (lo + hi) + 0.25 * (hi - lo)])
    assert m.actuator_trntype[i] == kd.TrnType.TENDON and m.actuator_trnid[i, 0] == t


SPRINGLENGTH = """<mujoco><compiler angle="degree"/><worldbody><body>
  <joint name="h" axis="0 1 0" ref="10" springref="40"/><joint name="sl" type="slide" ref="0.2" springref="-0.3"/>
  <geom size=".1"/></body></worldbody>
  <tendon><fixed {attrs}><joint joint="h" coef="2"/><joint joint="sl" coef="-1"/></fixed></tendon></mujoco>"""


@pytest.mark.parametrize("attrs", ["", 'springlength="0.3"', 'springlength="-1"', 'springlength="-1 0"',
                                   'springlength="0.1 0.5" stiffness="3"', 'springlength="-1 -1" damping="2"'])
def test_springlength_defaults_to_the_length_at_qpos_spring(attrs):
    m, _, mjm, _ = _load(SPRINGLENGTH.format(attrs=attrs))
    assert_model_fields(m, mjm)
    if "springlength" not in attrs or "-1 -1" in attrs or attrs.endswith('"-1"'):
        # the length at qpos_spring, not at qpos0
        expected = 2 * np.deg2rad(40) + 0.3
        np.testing.assert_allclose(m.tendon_lengthspring[0], [expected, expected], rtol=1e-12)
    np.testing.assert_allclose(m.tendon_length0[0], 2 * np.deg2rad(10) - 0.2, rtol=1e-12)


# ---- forward ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_forward_matches_mujoco(name, rng):
    m, d, mjm, mjd = _load(_model(name))
    for _ in range(4):
        qpos = mjm.qpos0 + 0.4 * rng.standard_normal(mjm.nq)
        qvel = rng.standard_normal(mjm.nv)
        ctrl = rng.uniform(-1, 1, mjm.nu)
        act = rng.uniform(-0.5, 0.5, mjm.na)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl=ctrl, act=act,
                       qfrc_applied=rng.standard_normal(mjm.nv))
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        compared = assert_fields(m, d, mjm, mjd)
        assert {"ten_length", "ten_J", "ten_velocity", "ten_wrapadr", "ten_wrapnum"} <= set(compared)
    assert np.any(d.ten_J != 0) and np.any(d.ten_velocity != 0)


@pytest.mark.parametrize("flags", ['spring="disable"', 'damper="disable"', 'actuation="disable"'])
def test_passive_disable_flags(flags, rng):
    xml = ARMS.format(integrator="Euler").replace('<option timestep="0.002" integrator="Euler"/>',
                                                  f'<option timestep="0.002"><flag {flags}/></option>')
    m, d, mjm, mjd = _load(xml)
    set_same_state(m, d, mjm, mjd, mjm.qpos0 + 0.3 * rng.standard_normal(mjm.nq), rng.standard_normal(mjm.nv),
                   ctrl=rng.uniform(-1, 1, mjm.nu), act=rng.uniform(-1, 1, mjm.na))
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)


def test_tendon_passive_forces_are_j_transpose_of_spring_and_damper():
    m, d, _, _ = _load(ARMS.format(integrator="Euler"))
    d.qpos[:] = m.qpos0 + 0.2
    d.qvel[:] = 0.5
    kd.forward(m, d)
    spring, damper = np.zeros(m.nv), np.zeros(m.nv)
    for t in range(m.ntendon):
        lo, hi = m.tendon_lengthspring[t]
        length = d.ten_length[t]
        x = length - hi if length > hi else length - lo if length < lo else 0.0
        spring += d.ten_J[t] * (-m.tendon_stiffness[t] * x)
        damper += d.ten_J[t] * (-m.tendon_damping[t] * d.ten_velocity[t])
    dof_spring = np.zeros(m.nv)
    dof_spring[0] = -m.jnt_stiffness[0] * (d.qpos[0] - m.qpos_spring[0])
    np.testing.assert_allclose(d.qfrc_spring, spring + dof_spring, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.qfrc_damper, damper - m.dof_damping * d.qvel, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.ten_velocity, d.ten_J @ d.qvel, rtol=1e-12)


# ---- rollouts ---------------------------------------------------------------------------------


def _rollout(m, d, mjm, mjd, rng, nstep=N_STEPS):
    qpos = mjm.qpos0 + 0.2 * rng.standard_normal(mjm.nq)
    set_same_state(m, d, mjm, mjd, qpos, 0.5 * rng.standard_normal(mjm.nv),
                   ctrl=rng.uniform(-0.5, 0.5, mjm.nu), act=rng.uniform(-0.2, 0.2, mjm.na))
    # normalise the free/ball quaternions in both, so both start from the same state
    mujoco.mj_normalizeQuat(mjm, mjd.qpos)
    d.qpos[:] = mjd.qpos
    for _ in range(nstep):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    for name in ("qpos", "qvel", "act"):
        assert_close(name, getattr(d, name), getattr(mjd, name), rtol=STEP_TOL, atol=STEP_TOL)
    assert_close("ten_length", d.ten_length, mjd.ten_length, rtol=STEP_TOL, atol=STEP_TOL)
    assert d.time == pytest.approx(mjd.time)


STEP_CASES = [pytest.param(name, integ, id=f"{name}-{integ}")
              for name in MODEL_NAMES for integ in INTEGRATORS]


@pytest.mark.parametrize("name,integrator", STEP_CASES)
def test_step_matches_mujoco(name, integrator, rng):
    m, d, mjm, mjd = _load(_model(name))
    value = int(getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}"))
    m.opt.integrator = value
    mjm.opt.integrator = value
    _rollout(m, d, mjm, mjd, rng)


def test_implicitfast_with_saturated_tendon_force(rng):
    """A velocity servo on a tendon with actuatorfrcrange, driven into its bound.

    MuJoCo 4.0.0 drops such an actuator's velocity derivative from implicitfast while the
    tendon's summed actuator force sits at the bound.
    """
    xml = ARMS.format(integrator="implicitfast").replace('actuatorfrcrange="-2 3"', 'actuatorfrcrange="-0.2 0.1"')
    m, d, mjm, mjd = _load(xml)
    _rollout(m, d, mjm, mjd, rng)


def test_implicitfast_tendon_damping_is_implicit(rng):
    """A stiff tendon damper: explicit Euler on it would differ from MuJoCo's implicit step."""
    xml = ARMS.format(integrator="implicitfast").replace('damping="1.5"', 'damping="200"')
    m, d, mjm, mjd = _load(xml)
    _rollout(m, d, mjm, mjd, rng, nstep=200)


# ---- errors and warnings ----------------------------------------------------------------------

TENDON_ONLY = """<mujoco>{option}<worldbody><body><joint name="j" type="slide"/><joint name="b" type="ball"/>
  <geom size=".1"/></body></worldbody>
  <tendon>
{tendon}</tendon>{actuator}</mujoco>"""


@pytest.mark.parametrize("tendon,actuator,fragment,element,attribute", [
    ('<spatial name="s"><site site="x"/><site site="y"/></spatial>', "", "site 'x' not found", "site", "site"),
    ('<fixed name="t" armature="-0.1"><joint joint="j" coef="1"/></fixed>', "", "tendon armature cannot be negative",
     "fixed 't'", "armature"),
    ('<fixed name="t" springyield="-1"><joint joint="j" coef="1"/></fixed>', "", "springyield cannot be negative",
     "fixed 't'", "springyield"),
    ('<fixed name="t"></fixed>', "", "path cannot be empty", "fixed 't'", None),
    ('<fixed name="t"><joint joint="k" coef="1"/></fixed>', "", "joint 'k' not found", "joint", "joint"),
    ('<fixed name="t"><joint joint="b" coef="1"/></fixed>', "", "must be slide or hinge", "joint", "joint"),
    ('<fixed name="t"><joint joint="j" coef="1"/><joint joint="j" coef="2"/></fixed>', "", "is repeated",
     "fixed 't'", None),
    ('<fixed name="t"><joint joint="j"/></fixed>', "", "required attribute missing: 'coef'", "joint", "coef"),
    ('<fixed name="t" springlength="0.3 0.1"><joint joint="j" coef="1"/></fixed>', "", "invalid springlength",
     "fixed 't'", "springlength"),
    ('<fixed name="t" rgba="1 0 0 1"><joint joint="j" coef="1"/></fixed>', "", "unrecognized attribute",
     "fixed 't'", "rgba"),
    ('<fixed name="t"><site site="x"/></fixed>', "", "unrecognized element", "site", None),
    ('<fixed name="t"><joint joint="j" coef="1"/></fixed><fixed name="t"><joint joint="j" coef="1"/></fixed>', "",
     "repeated name 't' in tendon", "fixed 't'", "name"),
    ('<fixed name="t"><joint joint="j" coef="1"/></fixed>', '<actuator><motor name="m" tendon="u"/></actuator>',
     "unknown tendon 'u'", "motor 'm'", "tendon"),
    ('<fixed name="t"><joint joint="j" coef="1"/></fixed>',
     '<actuator><position name="p" tendon="t" inheritrange="1"/></actuator>', "has no range defined",
     "position 'p'", "inheritrange"),
])
def test_errors(tendon, actuator, fragment, element, attribute):
    xml = TENDON_ONLY.format(option="", tendon=tendon, actuator=actuator)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
        with pytest.raises(ModelError, match=fragment) as info:
            kd.Model.from_xml_string(xml)
    assert (info.value.element, info.value.attribute) == (element, attribute)
    assert info.value.line is not None


def test_autolimits_false_needs_limited():
    xml = TENDON_ONLY.format(option='<compiler autolimits="false"/>', actuator="",
                             tendon='<fixed range="0 1"><joint joint="j" coef="1"/></fixed>')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="autolimits"):
        kd.Model.from_xml_string(xml)


def test_muscle_on_fixed_tendon_copies_the_tendon_range():
    """<lengthrange uselimit="true"/>: a muscle on a limited fixed tendon takes its range."""
    xml = model_file("muscle_fixed_tendon").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
        m = kd.Model.from_xml_string(xml)
    np.testing.assert_array_equal(m.actuator_lengthrange[:2], m.tendon_range)


@pytest.mark.parametrize("attr,flag", [('range="0 1"', "limit"), ('frictionloss="0.1"', "frictionloss")])
def test_limits_and_frictionloss_are_simulated_without_warnings(attr, flag):
    tendon = f'<fixed name="t" {attr}><joint joint="j" coef="1"/></fixed>'
    xml = TENDON_ONLY.format(option="{option}", tendon=tendon, actuator="")
    for f in ("", flag, "constraint"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            option = f'<option><flag {f}="disable"/></option>' if f else ""
            kd.Model.from_xml_string(xml.format(option=option))


# ---- spatial tendons (site paths and pulleys) ---------------------------------------------------------

SPATIAL = """<mujoco><compiler angle="radian"/><option timestep="0.002"/><worldbody>
<site name="w" pos="0 0.05 1.1"/>
<body name="a" pos="0 0 1"><joint name="j0" axis="0 1 0" damping="0.2"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
<site name="a1" pos="0.1 0.02 0.03"/><site name="a2" pos="0.25 -0.02 0.02"/>
<body name="b" pos="0.3 0 0"><joint name="j1" type="ball" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
<site name="b1" pos="0.1 0.03 0"/><site name="b2" pos="0.18 0 -0.03"/>
<body name="c" pos="0.2 0 0"><joint name="j2" type="slide" axis="1 0 0" damping="0.3"/><geom size="0.03"/><site name="c1" pos="0.02 0 0.02"/></body>
</body></body></worldbody>
<tendon>
{tendons}
</tendon>
<actuator>{actuators}</actuator></mujoco>"""

SPATIAL_TENDONS = [
    '<spatial name="s0" stiffness="20" damping="1" springlength="0.2 0.3"><site site="w"/><site site="a1"/><site site="b1"/><site site="c1"/></spatial>',
    '<spatial name="s1" damping="0.5"><site site="a2"/><site site="b2"/><pulley divisor="2"/><site site="a1"/><site site="b1"/><site site="b2"/></spatial>',
    '<spatial name="s2" stiffness="5"><site site="a1"/><site site="a2"/><site site="c1"/></spatial>',
]
SPATIAL_ACTUATORS = ('<motor tendon="s0" gear="2" ctrlrange="-3 3"/><position tendon="s1" kp="30" kv="2"/>'
                     '<muscle tendon="s2" lengthrange="0.3 0.6" force="10"/><velocity tendon="s0" kv="1"/>')


def _spatial_xml():
    return SPATIAL.format(tendons="\n".join(SPATIAL_TENDONS), actuators=SPATIAL_ACTUATORS)


def test_spatial_tendons_match_mujoco():
    m, d, mjm, mjd = load_pair(_spatial_xml())
    assert_model_fields(m, mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(4), 5)


@pytest.mark.parametrize("integrator", [kd.IntegratorType.EULER, kd.IntegratorType.IMPLICITFAST])
def test_spatial_tendon_rollout_matches_mujoco(integrator):
    m, d, mjm, mjd, rng = _rollout_pair(_spatial_xml(), integrator)
    _assert_rollout_matches(m, d, mjm, mjd, 1000, ("qpos", "qvel", "act", "ten_length", "actuator_force"),
                            new_ctrl_every=100, rng=rng)


def _rollout_pair(xml, integrator, qvel_scale=1.0):
    """Both libraries on ``xml`` with ``integrator`` and the same random state (velocities
    scaled by ``qvel_scale``); returns the pair and the generator for later controls."""
    m, d, mjm, mjd = load_pair(xml)
    m.opt.integrator = integrator
    mjm.opt.integrator = int(integrator)
    rng = np.random.default_rng(9)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel_scale * qvel, ctrl, act)
    return m, d, mjm, mjd, rng


def _assert_rollout_matches(m, d, mjm, mjd, nstep, fields, new_ctrl_every=0, rng=None):
    """Step both libraries from the same state; every step, each field within 1e-6 of MuJoCo's
    (relative to 1 + |value|). With ``new_ctrl_every``, fresh random controls every that many steps."""
    for k in range(nstep):
        if new_ctrl_every and k % new_ctrl_every == 0:
            ctrl = random_state(rng, mjm)[2]
            d.ctrl[:] = ctrl
            mjd.ctrl[:] = ctrl
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in fields:
            ours, theirs = getattr(d, name), np.asarray(getattr(mjd, name))
            err = np.max(np.abs(ours - theirs) / (1 + np.abs(theirs)), initial=0.0)
            assert err <= 1e-6, f"{name} differs by {err:.3g} at step {k}"


SPATIAL_ERRORS = [
    ('<spatial name="t"><site site="a1"/></spatial>', "at least two objects"),
    ('<spatial name="t" width="0"><site site="a1"/><site site="b1"/></spatial>', "positive width"),
    ('<spatial name="t"><site site="a1"/><site site="b1"/><pulley divisor="2"/><pulley divisor="2"/>'
     '<site site="a1"/><site site="b1"/></spatial>', "consecutive pulleys"),
    ('<spatial name="t"><site site="a1"/><site site="b1"/><pulley divisor="2"/></spatial>', "ends with pulley"),
    ('<spatial name="t"><site site="a1"/><pulley divisor="2"/><site site="b1"/><site site="b2"/></spatial>',
     "needs a neighbor that is not a pulley"),
    ('<spatial name="t"><site site="a1"/><site site="a1"/></spatial>', "is repeated"),
    ('<spatial name="t"><site site="a1"/><site site="b1"/><pulley divisor="-1"/><site site="a1"/><site site="b1"/></spatial>',
     "negative divisor"),
    ('<spatial name="t"><site site="a1"/><joint joint="j0"/></spatial>', "unrecognized element"),
]


@pytest.mark.parametrize("tendon,fragment", SPATIAL_ERRORS, ids=[e[1] for e in SPATIAL_ERRORS])
def test_spatial_tendon_errors_like_mujoco(tendon, fragment):
    xml = SPATIAL.format(tendons=tendon, actuators="")
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_string(xml)
    assert info.value.line is not None


# ---- spatial tendons wrapping around spheres and cylinders -----------------------------------------

# a world sphere, a cylinder on the upper arm (axis across the arm, so the elbow's ball joint
# swings the forearm around it) and a sphere on the forearm; tendons wrap over each, through a
# pulley, and (WRAP_INSIDE) with a side site inside the cylinder
WRAP = """<mujoco><compiler angle="radian"/><option timestep="0.002"/><worldbody>
<site name="w0" pos="-0.1 0.02 1.2"/>
<geom name="wsph" type="sphere" size="0.05" pos="0 0 1.0" contype="0" conaffinity="0"/>
<body name="a" pos="0 0 1"><joint name="j0" axis="0 1 0" damping="0.2"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
<geom name="cyl" type="cylinder" size="0.04 0.05" pos="0.3 0 0" quat="0.707 0.707 0 0" contype="0" conaffinity="0"/>
<site name="a1" pos="0.1 0.02 0.06"/><site name="a2" pos="0.25 -0.02 0.08"/>
<site name="ain" pos="0.3 0.01 0.01"/>
<body name="b" pos="0.3 0 0"><joint name="j1" type="ball" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
<geom name="bs" type="sphere" size="0.03" pos="0.1 0 0" contype="0" conaffinity="0"/>
<site name="b1" pos="0.1 0.03 -0.05"/><site name="b2" pos="0.18 0 -0.06"/>
<body name="c" pos="0.2 0 0"><joint name="j2" type="slide" axis="1 0 0" damping="0.3"/><geom size="0.03"/><site name="c1" pos="0.02 0 0.02"/></body>
</body></body></worldbody>
<tendon>{tendons}</tendon>
<actuator><motor tendon="t0" gear="2"/><position tendon="t1" kp="30" kv="2"/><motor tendon="t3"/>{actuators}</actuator></mujoco>"""
WRAP_TENDONS = ('<spatial name="t0" stiffness="3" damping="0.5"><site site="w0"/><geom geom="wsph"/><site site="a1"/>'
                '<site site="a2"/><geom geom="cyl"/><site site="b1"/></spatial>'
                '<spatial name="t1"><site site="a2"/><geom geom="cyl"/><site site="b2"/><pulley divisor="2"/>'
                '<site site="a1"/><geom geom="bs"/><site site="c1"/></spatial>'
                '<spatial name="t3"><site site="w0"/><geom geom="wsph"/><site site="a2"/><geom geom="bs"/>'
                '<site site="c1"/></spatial>')
WRAP_INSIDE = '<spatial name="t2"><site site="a1"/><geom geom="cyl" sidesite="ain"/><site site="b2"/></spatial>'


def _wrap_xml(inside=False):
    return WRAP.format(tendons=WRAP_TENDONS + (WRAP_INSIDE if inside else ""),
                       actuators='<muscle tendon="t2" lengthrange="0.2 0.5" force="10"/>' if inside else "")


def test_wrapping_tendons_match_mujoco():
    """Every model and Data field (ten_length, ten_J, wrap_xpos, wrap_obj, actuator moments, qacc, ...)."""
    m, d, mjm, mjd = load_pair(_wrap_xml())
    assert_model_fields(m, mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(3), 200)


def test_wrapping_tendons_wrap_in_the_sampled_states():
    """Guard for the test above: its states really exercise wraps around every geom and straight pieces."""
    m, d, mjm, mjd = load_pair(_wrap_xml())
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(200):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        used = d.ten_wrapadr[-1] + d.ten_wrapnum[-1]
        seen.update(int(o) for o in d.wrap_obj.ravel()[:used])
    assert {-2, -1, 0, 2, 4} <= seen, seen


def test_wrapping_tendon_jacobian_matches_finite_differences():
    """ten_J dq = d ten_length / dt along q (+) t dq, central differences on the joint manifold."""
    m, d, mjm, _ = load_pair(_wrap_xml(inside=True))
    rng = np.random.default_rng(11)
    eps = 1e-6
    for _ in range(30):
        qpos = random_state(rng, mjm)[0]
        dq = rng.normal(size=m.nv)
        lengths = []
        for sign in (1.0, -1.0):
            d.qpos[:] = qpos
            kd.integrate_pos(m, d.qpos, dq, sign * eps)
            kd.forward(m, d)
            lengths.append(d.ten_length.copy())
        d.qpos[:] = qpos
        kd.forward(m, d)
        fd = (lengths[0] - lengths[1]) / (2 * eps)
        # a wrap switching on or off inside the stencil has a kink; those states are rare and skipped
        analytic = d.ten_J @ dq
        ok = np.abs(fd - analytic) <= 1e-6 * (1 + np.abs(analytic))
        assert ok.sum() >= len(ok) - 1, (fd, analytic)


def test_inside_wrap_matches_mujoco():
    """A side site inside the geom (wrap_inside): every field at the 1e-9 bar.

    The touching point is where Newton's method stops (residual <= 1e-6), so it matches
    only when the iteration is MuJoCo 4.0's (in the angle, from pi/2), not 3.12's.
    """
    m, d, mjm, mjd = load_pair(_wrap_xml(inside=True))
    rng = np.random.default_rng(5)
    inside_seen = 0
    for _ in range(100):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd)
        inside_seen += d.ten_wrapnum[3] == 4
    assert inside_seen > 10


def _outside_sidesite_xml():
    """WRAP with side sites outside the geoms: b1 for the forearm sphere, one below the elbow cylinder."""
    tendons = (WRAP_TENDONS.replace('<geom geom="bs"/>', '<geom geom="bs" sidesite="b1"/>')
               .replace('<geom geom="cyl"/>', '<geom geom="cyl" sidesite="aside"/>'))
    return WRAP.format(tendons=tendons, actuators="").replace(
        '<site name="ain"', '<site name="aside" pos="0.3 0.01 -0.09"/><site name="ain"')


def test_outside_sidesite_matches_mujoco():
    """A side site outside the geom: MuJoCo 4.0's winding rule picks whether and which way to wrap."""
    m, d, mjm, mjd = load_pair(_outside_sidesite_xml())
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(3), 300)


def test_outside_sidesite_states_wrap_and_stay_straight():
    """Guard for the test above: each side-sited geom is both wrapped and passed straight in its states."""
    m, d, mjm, mjd = load_pair(_outside_sidesite_xml())
    geoms = {mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, name) for name in ("cyl", "bs")}
    rng = np.random.default_rng(3)
    wrapped = dict.fromkeys(geoms, 0)
    for _ in range(300):
        set_same_state(m, d, mjm, mjd, *random_state(rng, mjm))
        mujoco.mj_forward(mjm, mjd)
        used = mjd.ten_wrapadr[-1] + mjd.ten_wrapnum[-1]
        for geom in set(mjd.wrap_obj.ravel()[:used].tolist()) & geoms:
            wrapped[geom] += 1
    # each geom sits on more than one tendon, so "straight" means no tendon wrapped it in that state
    assert all(30 <= count <= 270 for count in wrapped.values()), wrapped


def _wrap_geom_vs_mju_wrap():
    """A checker of wrap_geom against MuJoCo's own mju_wrap (exported by libmujoco, absent from
    the Python bindings, called through ctypes): same wrap decision, same length and points.
    """
    mju_wrap = libmujoco("mju_wrap").mju_wrap
    vec = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
    mju_wrap.restype = ctypes.c_double
    # the side site is a pointer that may be NULL (no side site)
    mju_wrap.argtypes = [vec, vec, vec, vec, vec, ctypes.c_double, ctypes.c_int, ctypes.c_void_p]

    def check(label, x0, x1, center, rot, radius, wraptype, side):
        """Returns whether MuJoCo wrapped; ``side`` None for no side site."""
        points = np.zeros(6)
        side_array = np.zeros(3) if side is None else np.ascontiguousarray(side, dtype=np.float64)
        theirs = mju_wrap(points, x0, x1, center, np.ascontiguousarray(rot).ravel(), radius, wraptype,
                          None if side is None else side_array.ctypes.data)
        ours = wrap_geom(x0, x1, center, rot, radius, wraptype, side_array, side is not None)
        assert (ours[0] >= 0) == (theirs >= 0), (label, ours[0], theirs)
        if theirs >= 0:
            assert_close(label, np.array(ours), np.concatenate([[theirs], points]))
        return theirs >= 0

    return check


def test_wrap_geom_outside_sidesite_matches_mju_wrap():
    """wrap_geom vs MuJoCo's mju_wrap on random ends, side sites outside the geom and geom poses.

    Wide sampling (ends and side site all around the geom) reaches what the model tests
    rarely do: wraps longer than half a turn, side sites on the segment's side, ends close to the geom.
    """
    check = _wrap_geom_vs_mju_wrap()
    rng = np.random.default_rng(17)
    radius = 0.5
    wrapped = 0
    for k in range(3000):
        x0, x1, side = rng.normal(size=(3, 3))
        center = 0.1 * rng.normal(size=3)
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, rng.normal(size=4) / 2)
        rot = rot.reshape(3, 3)
        if np.linalg.norm(rot.T @ (side - center)) < radius:
            continue
        wraptype = (WRAP_SPHERE, WRAP_CYLINDER)[k % 2]
        wrapped += check(f"wrap {k}", x0, x1, center, rot, radius, wraptype, side)
    assert wrapped > 500, wrapped


def test_wrap_geom_inside_sidesite_matches_mju_wrap():
    """Side sites inside the geom: wrap_inside's touching point as MuJoCo's own iteration leaves it."""
    check = _wrap_geom_vs_mju_wrap()
    rng = np.random.default_rng(29)
    radius = 0.5
    wrapped = 0
    for k in range(2000):
        x0, x1 = rng.normal(size=(2, 3)) * (0.8, 1.0, 30.0)[k % 3]
        center = 0.1 * rng.normal(size=3)
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, rng.normal(size=4) / 2)
        rot = rot.reshape(3, 3)
        inward = rng.normal(size=3)
        side = center + rot @ (inward * rng.uniform(0, 0.99) * radius / np.linalg.norm(inward))
        wraptype = (WRAP_SPHERE, WRAP_CYLINDER)[k % 2]
        wrapped += check(f"wrap {k}", x0 + center, x1 + center, center, rot, radius, wraptype, side)
    assert wrapped > 800, wrapped


def test_wrap_geom_at_wrap_onset_matches_mju_wrap():
    """Segments that barely cut (or clear) the geom, without a side site and with one on either side.

    The two tangent points nearly coincide there: MuJoCo 4.0.0 still wraps the short way
    with a length accurate to round-off, where 3.12's chord choice and acos lost it.
    """
    check = _wrap_geom_vs_mju_wrap()
    rng = np.random.default_rng(23)
    radius = 0.5
    rot = np.eye(3)
    center = np.zeros(3)
    wrapped = 0
    for k in range(1200):
        angle = rng.uniform(0, 2 * np.pi)
        normal = np.array([np.cos(angle), np.sin(angle), 0.0])
        along = np.array([-np.sin(angle), np.cos(angle), 0.0])
        # nearest point of the segment at 1 -+ 10^-14..10^-2 radii from the centre
        offset = radius * (1 + rng.choice([-1, 1]) * 10.0 ** rng.uniform(-14, -2))
        x0 = offset * normal - rng.uniform(0.01, 2) * along
        x1 = offset * normal + rng.uniform(0.01, 2) * along
        wraptype = (WRAP_SPHERE, WRAP_CYLINDER)[k % 2]
        if wraptype == WRAP_CYLINDER:
            x0[2], x1[2] = rng.normal(scale=0.3, size=2)
        side = (None, 3.0 * normal, -3.0 * normal)[k % 3]
        wrapped += check(f"wrap {k}", x0, x1, center, rot, radius, wraptype, side)
    assert wrapped > 400, wrapped


WRAP_ERRORS = [
    ('<spatial name="t"><site site="a1"/><geom geom="nope"/><site site="b1"/></spatial>', "geom 'nope' not found"),
    ('<spatial name="t"><site site="a1"/><geom geom="box"/><site site="b1"/></spatial>', "is not sphere or cylinder"),
    ('<spatial name="t"><site site="a1"/><geom geom="ball" sidesite="nope"/><site site="b1"/></spatial>',
     "side site 'nope' not found"),
    ('<spatial name="t"><site site="a1"/><geom geom="ball"/></spatial>', "not bracketed by sites"),
    ('<spatial name="t"><geom geom="ball"/><site site="a1"/><site site="b1"/></spatial>', "not bracketed by sites"),
    ('<spatial name="t"><site site="a1"/><geom geom="ball"/><pulley divisor="2"/><site site="a1"/><site site="b1"/>'
     '</spatial>', "not bracketed by sites"),
]


@pytest.mark.parametrize("tendon,fragment", WRAP_ERRORS, ids=[e[1] for e in WRAP_ERRORS])
def test_wrap_errors_like_mujoco(tendon, fragment):
    xml = SPATIAL.format(tendons=tendon, actuators="").replace(
        '<site name="w"', '<geom name="box" type="box" size="0.1 0.1 0.1" pos="0 1 0"/>'
                          '<geom name="ball" size="0.05" pos="0 -1 0"/><site name="w"')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=fragment) as info:
        kd.Model.from_xml_string(xml)
    assert info.value.line is not None


@pytest.mark.parametrize("integrator", [kd.IntegratorType.EULER, kd.IntegratorType.IMPLICITFAST])
def test_wrapping_tendon_rollout_matches_mujoco(integrator):
    m, d, mjm, mjd, _ = _rollout_pair(_wrap_xml(), integrator, qvel_scale=0.1)
    _assert_rollout_matches(m, d, mjm, mjd, 500, ("qpos", "qvel", "ten_length"))
