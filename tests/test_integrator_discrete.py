"""The discrete integrator (MuJoCo 4.0's mjINT_DISCRETE) against MuJoCo 4.0's.

Oracle: mj_forward / mj_step / mujoco.rollout / mjd_transitionFD on the same MJCF text with
``integrator="discrete"``. The model has every class of the effective metric M + hD + h^2K that
kinedyn reproduces: joint springs and dampers on hinge, slide, ball and free joints, a fixed and a
spatial tendon with springs and dampers (rank-1 terms: the PCG solve), position, velocity and
general affine actuators (one with filter dynamics, one held at its forcerange, one on a ball
joint's dof), a spinning lone free body with an asymmetric inertia (its 6x6 block is solved
again with the gyroscopic derivative, as under implicitfast), and acceleration sensors (which
read the step map).

Tolerance: 1e-9 relative per step (the forward pass agrees to the last bits; the
100-step rollouts to ~1e-15).

What kinedyn does not reproduce is refused: constraint rows (at compile when possible, at run
time by step), fluid forces, the run-time switch to discrete, and inverse dynamics.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout

import kinedyn as kd
from kinedyn.tools import batch

RTOL = 1e-9
NO_CONTACT = 'contype="0" conaffinity="0"'

MODEL = f"""<mujoco><option integrator="discrete" timestep="0.01" SOLVER FLAGS/>
<worldbody>
 <body><joint name="j0" type="hinge" axis="0 1 0" stiffness="30" damping="0.2"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/><site name="s0" pos="0.1 0 0.05"/>
  <body pos="0.3 0 0"><joint name="j1" type="hinge" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
   <body pos="0.3 0 0">
    <joint name="j2" type="slide" axis="1 0 0" stiffness="100" springref="0.05" damping="1"/>
    <geom type="box" size="0.05 0.05 0.05" {NO_CONTACT}/><site name="s1" pos="0 0 0.05"/>
   </body>
  </body>
 </body>
 <body pos="0 1 0"><joint name="b" type="ball" stiffness="3" damping="0.1"/>
  <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" {NO_CONTACT}/></body>
 <body pos="0 2 0"><joint name="f" type="free" stiffness="2" damping="0.05"/>
  <geom type="box" size="0.1 0.2 0.3" {NO_CONTACT}/></body>
</worldbody>
<tendon>
 <fixed name="t0" stiffness="40" damping="0.5" springlength="0.1">
  <joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/></fixed>
 <spatial name="t1" damping="2" stiffness="10" springlength="0.3"><site site="s0"/><site site="s1"/></spatial>
</tendon>
<actuator>
 <position joint="j1" kp="80" kv="3"/>
 <general joint="j0" dyntype="filter" dynprm="0.05" gaintype="affine" gainprm="5 -2 -1"
          biastype="affine" biasprm="0 -10 -0.5"/>
 <position tendon="t0" kp="20" forcerange="-0.5 0.5" forcelimited="true"/>
 <velocity joint="b" gear="0 1 0" kv="2"/>
</actuator>
<sensor><accelerometer site="s1"/><framelinacc objtype="site" objname="s0"/><jointactuatorfrc joint="j1"/>
</sensor>
</mujoco>"""

# (solver, flags): PGS leaves the tendon and actuator terms out of the metric (mj_effCouplings)
VARIANTS = {
    "newton": ("", ""),
    "pgs": ('solver="PGS"', ""),
    "no-spring": ("", '><flag spring="disable"/></option'),
    "no-damper": ("", '><flag damper="disable"/></option'),
    "no-actuation": ("", '><flag actuation="disable"/></option'),
}


def _text(variant: str) -> str:
    solver, flags = VARIANTS[variant]
    text = MODEL.replace("SOLVER", solver)
    if variant == "pgs":  # the tendon and actuator forces are explicit: a timestep they are stable at
        text = text.replace('timestep="0.01"', 'timestep="0.002"')
    if flags:
        # <option .../> becomes <option ...><flag .../></option>
        text = text.replace(" FLAGS/>", flags + ">")
    return text.replace(" FLAGS", "")


def _pair(variant: str):
    text = _text(variant)
    mjm = mujoco.MjModel.from_xml_string(text)
    m = kd.Model.from_xml_string(text)
    return m, mjm


def _start(m, mjm, seed: int = 0):
    rng = np.random.default_rng(seed)
    qpos = mjm.qpos0.copy()
    qpos[:3] = [0.4, -0.3, 0.02]
    quat = np.array([0.9, 0.3, 0.2, 0.1])
    qpos[3:7] = quat / np.linalg.norm(quat)
    qvel = rng.normal(size=mjm.nv)
    ctrl = np.array([0.3, 0.7, 0.2, 0.5])
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    for data in (d, mjd):
        data.qpos[:] = qpos
        data.qvel[:] = qvel
        data.ctrl[:] = ctrl
        data.act[:] = 0.2
    return d, mjd


def _close(ours, theirs, what):
    err = np.abs(ours - theirs) / (1.0 + np.abs(theirs))
    assert err.max() <= RTOL, f"{what}: rel. error {err.max():.2e} at {np.argmax(err)}"


@pytest.fixture(scope="module")
def newton():
    return _pair("newton")


def test_forward_matches_mujoco(newton):
    m, mjm = newton
    d, mjd = _start(m, mjm)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    # the tendon and actuator terms are in this state's metric: MuJoCo solves by PCG
    assert mjd.efm_active and mjd.nefmT == 2 and mjd.nefmA == 3
    for name in ("qfrc_smooth", "qacc_smooth", "qacc", "act_dot", "actuator_force", "sensordata"):
        _close(getattr(d, name), getattr(mjd, name), name)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_step_rollout_matches_mujoco(variant, newton):
    m, mjm = newton if variant == "newton" else _pair(variant)
    d, mjd = _start(m, mjm, seed=1)
    nstep = 100 if variant == "newton" else 30
    for k in range(nstep):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in ("qpos", "qvel", "qacc", "act", "sensordata"):
            _close(getattr(d, name), getattr(mjd, name), f"{variant} step {k} {name}")


def test_stiff_servo_beyond_the_explicit_limit():
    """A servo whose kp*h^2/m is far beyond Euler's stability limit: MuJoCo's discrete step is
    stable there (the gain is in the metric), and kinedyn's is the same step."""
    text = f"""<mujoco><option integrator="discrete" timestep="0.05"/><worldbody>
      <body><joint name="j" type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.1 0.1" mass="0.1"
      {NO_CONTACT}/></body></worldbody><actuator><position joint="j" kp="1e4" kv="10"/></actuator></mujoco>"""
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    d.ctrl[0] = mjd.ctrl[0] = 0.5
    for k in range(60):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        _close(d.qpos, mjd.qpos, f"step {k} qpos")
        _close(d.qvel, mjd.qvel, f"step {k} qvel")
    assert abs(d.qpos[0] - 0.5) < 1e-3  # settled at the setpoint


@pytest.mark.parametrize("integrator", ["discrete", "implicitfast"])
def test_saturated_joint_actuatorfrcrange_leaves_the_metric(integrator):
    """Actuators whose joint's summed force is clamped by its actuatorfrcrange have no length or
    velocity derivative (MuJoCo 4.0.0's mjd_actuatorDerivSkip): not in the metric (discrete), not
    in M - hD (implicitfast)."""
    text = f"""<mujoco><option integrator="{integrator}" timestep="0.01"/><worldbody><body>
      <joint name="j" type="hinge" axis="0 1 0" actuatorfrcrange="-0.5 0.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body></worldbody>
      <actuator><position joint="j" kp="50" kv="2"/><velocity joint="j" kv="1"/></actuator></mujoco>"""
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    for data in (d, mjd):
        data.qvel[0] = 1.0
        data.ctrl[:] = [0.8, 0.4]
    for k in range(20):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        _close(d.qvel, mjd.qvel, f"step {k} qvel")
    assert abs(d.qfrc_actuator[0]) == 0.5  # held at the bound


def test_batch_rollout_matches_mujoco_rollout(newton):
    m, mjm = newton
    nbatch, nstep = 3, 40
    d, _ = _start(m, mjm)
    state = np.concatenate(([0.0], d.qpos, d.qvel, d.act))
    rng = np.random.default_rng(2)
    state0 = np.tile(state, (nbatch, 1))
    state0[:, 1 + m.nq:1 + m.nq + m.nv] += 0.3 * rng.normal(size=(nbatch, m.nv))
    control = rng.uniform(-1, 1, size=(nbatch, nstep, m.nu))
    ours = batch.rollout(m, state0, control, nthread=2).state
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    _close(ours, theirs, "rollout")


def test_transition_fd_matches_mujoco(newton):
    m, mjm = newton
    d, mjd = _start(m, mjm)
    mujoco.mj_forward(mjm, mjd)
    kd.forward(m, d)
    nx = 2 * mjm.nv + mjm.na
    a, b = np.zeros((nx, nx)), np.zeros((nx, mjm.nu))
    mujoco.mjd_transitionFD(mjm, mjd, 1e-6, False, a, b, None, None)
    ours = kd.transition_fd(m, d)
    assert np.abs(ours.A - a).max() <= 1e-6 * np.abs(a).max()
    assert np.abs(ours.B - b).max() <= 1e-6 * np.abs(b).max()


def test_mujoco_enum_has_discrete():
    from kinedyn.mujoco import mjtIntegrator
    assert int(mjtIntegrator.mjINT_DISCRETE) == int(mujoco.mjtIntegrator.mjINT_DISCRETE) == 4
    assert kd.IntegratorType.DISCRETE == 4


# ---- what is refused -----------------------------------------------------------------------------

def _refused(text: str, *words: str):
    with pytest.raises(kd.ModelError) as info:
        kd.Model.from_xml_string(text)
    message = str(info.value)
    assert 'integrator="discrete"' in message
    for word in words:
        assert word in message


def test_refuses_what_it_does_not_reproduce():
    body = '<body><joint type="hinge" {}/><geom type="sphere" size="0.1" {}/></body>'
    head = '<mujoco><option integrator="discrete" {}/><worldbody>'
    # contacts possible (a floor and a sphere on different bodies)
    _refused(head.format("") + '<geom type="plane" size="1 1 0.1"/>' + body.format("", "")
             + "</worldbody></mujoco>", "constraint rows")
    # a joint limit, with contacts off
    _refused(head.format("") + body.format('limited="true" range="-1 1"', NO_CONTACT)
             + "</worldbody></mujoco>", "constraint rows")
    _refused(head.format('density="1.2"') + body.format("", NO_CONTACT) + "</worldbody></mujoco>",
             "fluid forces")
    _refused(head.format("") + f'<body><freejoint name="f"/><geom size="0.1" {NO_CONTACT}/></body>'
             '</worldbody><actuator><motor joint="f" gear="0 0 1 0 0 0"/></actuator></mujoco>',
             "lone free body")
    # MuJoCo 4.0's own actuators, whose slopes its metric takes
    _refused(head.format("") + body.format('name="j"', NO_CONTACT)
             + '</worldbody><actuator><dcmotor joint="j" motorconst="0.1" resistance="1"/>'
             '</actuator></mujoco>',
             "pid or dcmotor")
    # the compiler's length-range simulation would step with this integrator
    with pytest.raises(kd.ModelError, match='integrator="discrete"'):
        lengthrange = '<mujoco><compiler><lengthrange mode="all"/></compiler>'
        kd.Model.from_xml_string(head.format("").replace("<mujoco>", lengthrange)
                                 + body.format('name="j"', NO_CONTACT)
                                 + '</worldbody><actuator><motor joint="j"/></actuator></mujoco>')
    # contacts possible, but every constraint disabled: loads
    kd.Model.from_xml_string('<mujoco><option integrator="discrete"><flag constraint="disable"/></option>'
                             '<worldbody><geom type="plane" size="1 1 0.1"/>' + body.format("", "")
                             + "</worldbody></mujoco>")


def test_refuses_switch_inverse_and_rows_at_run_time(newton):
    m, mjm = newton
    d, _ = _start(m, mjm)
    with pytest.raises(ValueError, match="inverse"):
        kd.inverse(m, d)
    with pytest.raises(ValueError, match="inverse"):
        kd.inverse_fd(m, d)
    kd.forward(m, d)
    with pytest.raises(ValueError, match="DISCRETE integrator"):
        kd.transition_derivatives(m, d)  # analytical: not covered (transition_fd is, above)
    euler = kd.Model.from_xml_string(MODEL.replace("discrete", "Euler").replace(" SOLVER FLAGS", ""))
    with pytest.raises(ValueError, match="discrete"):
        euler.opt.integrator = kd.IntegratorType.DISCRETE
    # friction loss given after compiling: the step refuses its rows, forward leaves qacc NaN
    m2 = kd.Model.from_xml_string(MODEL.replace(" SOLVER FLAGS", ""))
    d2 = kd.Data(m2)
    m2.dof_frictionloss[0] = 1.0
    kd.forward(m2, d2)
    assert d2.nefc > 0 and np.isnan(d2.qacc).all()
    with pytest.raises(ValueError, match="constraint rows"):
        kd.step(m2, d2)
    with pytest.raises(ValueError, match="constraint rows"):
        kd.transition_fd(m2, d2)
