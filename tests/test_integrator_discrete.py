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

Constraint rows (second part): limits, friction loss, contacts (both cones), connect and weld,
with springs, dampers and servos in the metric, solved by Newton in the metric, per step and in
batch rollouts, and the refsafe rule's threshold.

What kinedyn does not reproduce is refused: constraint rows with the PGS or CG solver, noslip, a
sparse Jacobian or adhesion (at compile when possible, at run time by step), fluid forces, the
run-time switch to discrete, and inverse dynamics.
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
    # rows possible (a floor and a sphere on different bodies; a joint limit) with what is not
    # built: the PGS and CG solvers, noslip, a sparse Jacobian, adhesion
    floor = '<geom type="plane" size="1 1 0.1"/>' + body.format("", "") + "</worldbody></mujoco>"
    _refused(head.format('solver="PGS"') + floor, "constraint rows", "PGS solver")
    _refused(head.format('solver="CG"') + body.format('limited="true" range="-1 1"', NO_CONTACT)
             + "</worldbody></mujoco>", "constraint rows", "CG solver")
    _refused(head.format('noslip_iterations="3"') + floor, "noslip")
    _refused(head.format('jacobian="sparse"') + floor, "sparse constraint Jacobian")
    _refused(head.format("") + floor.replace('size="0.1" />', 'size="0.1" adhesion="1"/>'), "adhesive")
    kd.Model.from_xml_string(head.format("") + floor)  # Newton: reproduced
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
    # friction loss given after compiling, with the PGS solver (not built with rows): the step
    # refuses its rows, forward leaves qacc NaN
    m2 = kd.Model.from_xml_string(MODEL.replace(" SOLVER FLAGS", ' solver="PGS"'))
    d2 = kd.Data(m2)
    m2.dof_frictionloss[0] = 1.0
    kd.forward(m2, d2)
    assert d2.nefc > 0 and np.isnan(d2.qacc).all()
    with pytest.raises(ValueError, match="constraint rows"):
        kd.step(m2, d2)
    with pytest.raises(ValueError, match="constraint rows"):
        kd.transition_fd(m2, d2)


# ---- constraint rows: the rows' impedance in the metric and the Newton solve in M-hat -----------

ROWS_CHAIN = f"""<mujoco><option integrator="discrete" timestep="0.01" FLAGS/><worldbody>
 <body><joint type="hinge" axis="0 1 0" range="-20 20" limited="true" stiffness="3" damping="0.2"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
  <body pos="0.3 0 0">
   <joint name="j1" type="hinge" axis="0 1 0" range="-30 30" limited="true" solreflimit="0.005 1"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
   <body pos="0.3 0 0"><joint type="hinge" axis="0 0 1" range="-10 40" limited="true" frictionloss="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body></body></body>
</worldbody><actuator><position joint="j1" kp="20" kv="1"/></actuator></mujoco>"""


def _box(cone: str) -> str:
    return f"""<mujoco><option integrator="discrete" timestep="0.005" cone="{cone}"/><worldbody>
     <geom type="plane" size="2 2 0.1"/>
     <body pos="0 0 0.2" euler="10 20 5"><joint type="free" damping="0.3" stiffness="1"/>
      <geom type="box" size="0.1 0.08 0.06" condim="{4 if cone == 'elliptic' else 3}"/></body>
    </worldbody></mujoco>"""


# Each model is stepped from a random velocity and compared with MuJoCo 4.0 at every step:
# - chain: joint limits (one stiff: refsafe replaces its K, B), friction loss, a joint spring and
#   damper, a position servo (an actuator rank-1 term of the metric);
# - box-*: a lone free body with a damped spring landing on a plane (contacts, both cones);
# - equality: connect and weld (J-dot terms; a stiff weld keeps its solref), damped joints (no
#   row of rounding noise only: its scale in metric._rescale_rows is the noise's);
# - tendon-islands: a tendon spring couples two trees, which 4.0 then solves as one island
#   once a limit on one of them is active; a servo (rank-1 terms of both kinds);
# - free-and-limit: a lone spinning free body beside a limited hinge: the body, on which no row
#   acts, keeps the gyroscopic block solve (with islands, and without).
ROWS_MODELS = {
    "chain": ROWS_CHAIN.replace(" FLAGS", ""),
    "chain-refsafe-off": ROWS_CHAIN.replace(" FLAGS/>", '><flag refsafe="disable"/></option>'),
    "box-pyramidal": _box("pyramidal"),
    "box-elliptic": _box("elliptic"),
    "equality": f"""<mujoco><option integrator="discrete" timestep="0.01"/><worldbody>
     <body name="a"><joint type="hinge" axis="0 1 0" damping="0.5" stiffness="2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
      <body name="b" pos="0.3 0 0"><joint type="hinge" axis="0 0 1" frictionloss="0.05"/>
       <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body></body>
     <body name="c" pos="0.5 0.1 0"><joint type="ball" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03" {NO_CONTACT}/></body>
     <body name="e" pos="0 0.5 0"><joint type="hinge" axis="1 0.3 0.5" damping="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body>
    </worldbody><equality><connect body1="b" body2="c" anchor="0.2 0 0" solref="0.03 0.8"/>
     <weld body1="e" body2="a" anchor="0.1 0.2 0.05" solref="0.005 1"/></equality></mujoco>""",
    "tendon-islands": f"""<mujoco><option integrator="discrete" timestep="0.01"/><worldbody>
     <body><joint name="j0" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
      <body pos="0.3 0 0"><joint name="j1" type="hinge" axis="0 1 0" limited="true" range="-30 30"/>
       <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body></body>
     <body pos="0 1 0"><joint name="k0" type="hinge" axis="0 1 0" limited="true" range="-20 20"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body>
    </worldbody><tendon>
     <fixed stiffness="5" damping="0.3" limited="true" range="-0.3 0.3">
      <joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/></fixed>
     <fixed stiffness="3" damping="0.1"><joint joint="j1" coef="1"/><joint joint="k0" coef="1"/></fixed>
    </tendon>
    <actuator><position joint="k0" kp="10" kv="0.5"/></actuator></mujoco>""",
    "free-and-limit": f"""<mujoco><option integrator="discrete" timestep="0.01" gravity="0 0 0"/><worldbody>
     <body><joint type="hinge" axis="0 1 0" limited="true" range="-0.5 0.5" damping="0.1" stiffness="5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body>
     <body pos="0 2 0"><joint type="free" damping="0.05" stiffness="0.5"/>
      <geom type="box" size="0.1 0.2 0.3" {NO_CONTACT}/></body>
    </worldbody></mujoco>""",
}
ROWS_MODELS["free-and-limit-no-island"] = ROWS_MODELS["free-and-limit"].replace(
    'gravity="0 0 0"/>', 'gravity="0 0 0"><flag island="disable"/></option>')

ROW_FIELDS = ("efc_KBIP", "efc_R", "efc_D", "efc_diagApprox", "efc_aref", "efc_force")


def _rows_pair(name: str):
    text = ROWS_MODELS[name]
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    qvel = 2 * np.random.default_rng(0).normal(size=mjm.nv)
    for data in (d, mjd):
        data.qvel[:] = qvel
        data.ctrl[:] = 0.3
    return m, d, mjm, mjd


@pytest.mark.parametrize("name", list(ROWS_MODELS))
def test_rows_step_matches_mujoco(name):
    """Per step over 300 steps: the state, qacc, and (field by field) every row's impedance,
    regulariser, reference and force."""
    m, d, mjm, mjd = _rows_pair(name)
    with_rows = 0
    for k in range(300):
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert d.nefc == mjd.nefc, f"{name} step {k}"
        with_rows += mjd.nefc > 0
        n = d.nefc
        for field in ROW_FIELDS if n else ():
            theirs = getattr(mjd, "efc_diagA" if field == "efc_diagApprox" else field)
            ours = (d.efc_diagA if field == "efc_diagApprox" else getattr(d, field))[:n]
            _close(ours, theirs, f"{name} step {k} {field}")
        _close(d.qacc, mjd.qacc, f"{name} step {k} qacc")
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for field in ("qpos", "qvel"):
            _close(getattr(d, field), getattr(mjd, field), f"{name} step {k} {field}")
    assert with_rows >= 6  # the rows were there


def test_refsafe_threshold_matches_mujoco():
    """refsafe under discrete (measured): a limit or contact row is held at h^2 K imp <= 1
    (timeconst floored at h sqrt(imp) / (dmax dampratio)), not at timeconst >= 2h; equality rows
    and friction rows keep their solref. Solrefs on both sides of the threshold, with imp < dmax."""
    text = f"""<mujoco><compiler angle="radian"/><option integrator="discrete" timestep="0.01"/><worldbody>
     <body><joint type="hinge" axis="0 1 0" range="-0.5 0.5" limited="true" solimplimit="0.5 0.95 0.5 0.5 2"
      frictionloss="0.2" solreffriction="0.004 1"/>
     <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/></body></worldbody></mujoco>"""
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    # imp = 0.50144 at this violation: the floor is at timeconst 0.0074539 (dampratio 1)
    for solref in ([0.0075, 1], [0.0074, 1], [0.004, 0.5], [0.0105, 1], [0.02, 1], [-2e5, -20]):
        m.jnt_solref[0] = mjm.jnt_solref[0] = solref
        for data in (d, mjd):
            data.qpos[0] = 0.52
            data.qvel[0] = 0.3
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        for field in ("efc_KBIP", "efc_R", "efc_aref"):
            _close(getattr(d, field)[:d.nefc], getattr(mjd, field), f"{solref} {field}")


def test_rows_batch_rollout_matches_mujoco_rollout():
    text = ROWS_MODELS["box-pyramidal"]
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    nbatch, nstep = 3, 150
    d = kd.Data(m)
    state = np.concatenate(([0.0], d.qpos, d.qvel, d.act))
    state0 = np.tile(state, (nbatch, 1))
    state0[:, 1 + m.nq:1 + m.nq + m.nv] += np.random.default_rng(3).normal(size=(nbatch, m.nv))
    control = np.zeros((nbatch, nstep, 0))
    ours = batch.rollout(m, state0, control, nthread=2).state
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    _close(ours, theirs, "rollout")
