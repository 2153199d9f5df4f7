"""MuJoCo 4.0's new actuator layout and actuators, compared with MuJoCo 4.0.

* The control/output layout (``actuator_ctrladr``, ``actuator_ctrlnum``, ``actuator_ctrlspec``,
  ``actuator_outadr``, ``actuator_outnum``; sizes ``nactuator`` and ``nout``) of single-control
  actuators: every shortcut's input signature, one inherited from a default and discarded by a
  changed gaintype.
* ``<pid>`` with one control (input "pos", "vel" or "ff"): kp, kv, dampratio, ki with imax
  anti-windup, slewmax, through the shortcut, a default class and ``<general>``; forward, step
  under every integrator, inverse, a delayed pid and ``kd.batch.rollout`` against
  ``mujoco.rollout``; the compile errors MuJoCo gives.
* ``<dcmotor>``, voltage-commanded: motorconst (one or two constants), resistance, nominal,
  saturation (torque, current, current rate), cogging, inductance (the current state), the
  thermal model, LuGre friction, the on-board controller (with its slew and integral states),
  from a default class; every integrator (the implicit
  ones with the back-EMF velocity derivative), inverse, batch rollout.
* What is still refused, by name: ``<orientation>`` and a pid without a pos input on a ball joint.
  (Several controls or none, pid actrange/actearly and on rotational transmissions, the thermal
  model and LuGre friction under a controller: tests/test_actuator_controls.py.)
  (Actuators with several controls or none: tests/test_actuator_controls.py.)
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_forward_and_inverse,
    assert_model_fields,
    assert_rollout_matches,
    load_pair,
    mujoco_states,
    own_pair,
    random_controls,
)

import kinedyn as kd
from kinedyn.errors import ModelError
from kinedyn.tools import batch

BODY = """<worldbody><body pos="0 0 1"><joint name="j" axis="0 1 0" range="-1 2"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
<body pos="0.3 0 0"><joint name="k" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/></body></body></worldbody>"""


def _xml(actuators: str, default: str = "", option: str = "") -> str:
    return f"<mujoco>{option}<default>{default}</default>{BODY}<actuator>{actuators}</actuator></mujoco>"


LAYOUT = _xml(
    """<motor joint="j"/><position joint="j"/><velocity joint="j"/>
    <intvelocity joint="j" actrange="-1 1"/><cylinder joint="j"/><general joint="j" input="pressure"/>
    <general joint="j" class="c"/><general joint="j" class="c" gaintype="affine"/><motor joint="j" class="c"/>
    <damper joint="j" ctrlrange="0 1"/><general joint="k" gaintype="affine" input="pos"/>
    <general joint="k" input=""/><muscle joint="j"/><adhesion body="world" ctrlrange="0 1"/>""",
    default='<default class="c"><general input="vel"/></default>')


def test_layout_of_single_control_actuators():
    m, mjm = kd.Model.from_xml_string(LAYOUT), mujoco.MjModel.from_xml_string(LAYOUT)
    compared = assert_model_fields(m, mjm)
    assert {"nactuator", "nout", "actuator_ctrladr", "actuator_ctrlnum", "actuator_ctrlspec",
            "actuator_outadr", "actuator_outnum"} <= set(compared)
    assert m.nu == m.nactuator == m.nout == 14
    # pos, vel, pressure; a class's "vel" kept, then discarded by gaintype="affine" and by motor
    assert m.actuator_ctrlspec.tolist()[:11] == [0, 1, 2, 2, 32, 32, 2, 0, 0, 0, 1]


# Two hinges under gravity, seven single-control pids: position and velocity setpoints and a
# feedforward; an integral whose imax the run reaches (anti-windup), a slew limit the controls
# exceed (slewmax h = 0.04 per step), both states together with a damping ratio, a delayed pid,
# one from a default class with inheritrange, and <general> with pid dynamics and gain.
PID = _xml(
    """<pid name="pos" joint="j" kp="5" kv="1" input="pos" ctrlrange="-1 1"/>
    <pid name="vel" joint="k" kp="1" kv="0.2" input="vel"/>
    <pid name="ff" joint="k" kp="3" input="ff" ctrlrange="-2 2" ffrange="-1.5 1.5"/>
    <pid name="integral" joint="j" kp="5" ki="20" imax="0.05" input="pos"/>
    <pid name="slew" joint="k" kp="2" slewmax="4" input="pos"/>
    <pid name="both" joint="j" kp="5" slewmax="4" ki="3" imax="0.5" input="pos" dampratio="0.5"/>
    <pid name="late" joint="k" kp="2" ki="1" input="pos" nsample="3" delay="0.02" interp="linear"/>
    <pid name="cls" class="servo" joint="j" input="pos"/>
    <general name="gen" joint="k" dyntype="pid" gaintype="pid" biastype="affine" gainprm="2"
             biasprm="0 -2 -0.1" dynprm="0.2 3" input="pos"/>""",
    default='<default class="servo"><pid kp="8" ki="1" kv="0.3" inheritrange="0.5"/></default>',
    option='<option timestep="0.01"/>')
INTEGRATORS = ("euler", "implicitfast", "implicit", "rk4")
STEPS = 40


@pytest.fixture(scope="module")
def pid():
    return load_pair(PID)


def test_pid_compiles_as_mujoco(pid):
    m, _, mjm, _ = pid
    compared = assert_model_fields(m, mjm)
    assert {"actuator_ctrlspec", "actuator_dynprm", "actuator_biasprm", "actuator_actnum"} <= set(compared)
    assert m.nu == 9 and m.na == 8
    # ctrlspec: pos, vel, ff; the damping ratio resolved to -kv at qpos0; the class's range inherited
    assert m.actuator_ctrlspec.tolist()[:3] == [1, 2, 4]
    assert m.actuator_biasprm[m.actuator("both").id, 2] < 0
    lo, hi = m.jnt_range[0]
    np.testing.assert_allclose(m.actuator_ctrlrange[m.actuator("cls").id],
                               [0.5 * (lo + hi) - 0.25 * (hi - lo), 0.5 * (lo + hi) + 0.25 * (hi - lo)])


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_pid_steps_match_mujoco(pid, integrator):
    m, d, mjm, mjd = own_pair(pid, integrator)
    integral = m.actuator_actadr[m.actuator("integral").id]
    held = 0
    for t, u in enumerate(random_controls(m.nu, STEPS)):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in ("qpos", "qvel", "act", "act_dot", "history", "actuator_force", "qfrc_actuator"):
            assert_close(f"{integrator} step {t}: {name}", getattr(d, name), getattr(mjd, name))
        held += abs(d.act[integral]) >= 0.05 and d.act_dot[integral] == 0.0
    assert held, "the run never reached the integral's imax"
    assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7]))


def test_pid_batch_rollout_matches_mujoco_rollout(pid):
    m, _, mjm, mjd = pid
    state0 = mujoco_states(mjm, mjd, [random_controls(m.nu, 5 + i, seed=10 + i) for i in range(2)])
    assert_rollout_matches(m, mjm, state0, np.random.default_rng(3).normal(size=(2, 25, m.nu)))


def test_models_without_pid_compile_no_pid_unit(pid, dcmotor):
    from kinedyn._jit.bind import needed_units
    from kinedyn.engine.integrator import step_entry

    def names(m):
        return {u.name.rsplit(".", 1)[1] for u in needed_units(m, [step_entry])}

    units = {"pid_actuation", "dcmotor_controller"}
    assert not units & names(kd.Model.from_xml_string(LAYOUT))
    assert units & names(pid[0]) == {"pid_actuation"}
    assert units & names(dcmotor[0]) == {"dcmotor_controller"}


@pytest.mark.parametrize(("actuator", "attr", "message"), [
    ('<pid joint="j" ki="1" input="ff"/>', "input", "pid controller states require the pos input"),
    ('<pid joint="j" input="none"/>', "input", "pid inputs are a subset of"),
    ('<pid joint="j" input="vel pos"/>', "input", "canonical order"),
    ('<pid joint="j" slewmax="-1" input="pos"/>', "slewmax", "slewmax cannot be negative"),
    ('<pid joint="j" imax="-1" ki="1" input="pos"/>', "imax", "must be non-negative"),
    ('<pid joint="j" kv="1" dampratio="1" input="pos"/>', "dampratio", "cannot both be defined"),
    ('<general joint="j" dyntype="pid" gainprm="2" input="pos"/>', "dyntype", "requires gaintype 'pid'"),
    ('<general joint="j" gaintype="pid" input="pos"/>', "biastype", "requires biastype 'affine'"),
    ('<general joint="j" gaintype="pid" biastype="affine" input="pos"/>', "gainprm",
     "requires dyntype 'pid'"),
    ('<dcmotor joint="j" resistance="2"/>', "motorconst", "motor constant K must be positive"),
    ('<dcmotor joint="j" motorconst="0.1"/>', "resistance", "resistance must be positive"),
    ('<dcmotor joint="j" motorconst="-0.1 0.2" resistance="2"/>', "motorconst", "cannot be negative"),
    ('<dcmotor joint="j" motorconst="0.1" resistance="2" input="vel" controller="1 1"/>', "controller",
     "requires the pos input"),
    ('<general joint="j" input="ff"/>', "input", "fixed and affine gains take one input"),
    ('<general joint="j" input="pos vel"/>', "input", "fixed and affine gains take one input"),
    ('<general joint="j" gaintype="muscle" input="pos"/>', "input", "not available for muscle"),
])
def test_errors_as_mujoco(actuator, attr, message):
    """Input signatures, pid and dcmotor attributes MuJoCo refuses: refused too, naming the
    attribute and line."""
    xml = _xml(actuator)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=message) as err:
        kd.Model.from_xml_string(xml)
    assert err.value.attribute == attr and err.value.line is not None


@pytest.mark.parametrize(("actuator", "element", "attr"), [
    ('<pid joint="j" kp="5" nsample="3" delay="0.02"/>', "pid", "delay"),  # several controls buffered
])
def test_not_simulated_yet_is_refused_by_name(actuator, element, attr):
    xml = _xml(actuator)
    mujoco.MjModel.from_xml_string(xml)  # MuJoCo 4.0 simulates these
    with pytest.raises(ModelError, match="allow_unsupported=True") as err:
        kd.Model.from_xml_string(xml)
    assert err.value.element.split()[0] == element and err.value.attribute == attr
    assert err.value.line is not None


# Voltage-commanded DC motors: two constants (K = sqrt(Kt Ke)) with a gear and cogging, the
# nominal operating point with a torque saturation the run reaches, a current saturation from a
# default class's motor, a class's motor with the resistance overridden, two with inductance
# (the current a state; one given by its time constant, with a current_rate the run reaches), and
# five driven by the on-board controller (pos with a Vmax the run reaches, vel, ff with inductance,
# pos with slew and integral states whose Imax the run reaches, and with integral and inductance),
# two with the thermal model (one with inductance, its capacitance from the time constant), and
# two with LuGre friction (one with the thermal model, inductance and cogging: three states).
DCMOTOR = _xml(
    """<dcmotor name="plain" joint="j" motorconst="0.5" resistance="2"/>
    <dcmotor name="cog" joint="k" motorconst="0.4 0.9" resistance="2" gear="3" cogging="0.1 6 0.3"/>
    <dcmotor name="nominal" joint="j" nominal="12 0.5 30" saturation="0.2 0 0"/>
    <dcmotor name="current" joint="k" class="m" saturation="0 0.3 0" ctrlrange="-5 5"/>
    <dcmotor name="r4" class="m" joint="k" resistance="4"/>
    <dcmotor name="coil" joint="j" motorconst="0.5" resistance="2" inductance="0.04"/>
    <dcmotor name="rate" joint="k" motorconst="0.3" resistance="1" inductance="0 0.03"
             saturation="0 0 3"/>
    <dcmotor name="servo" joint="j" motorconst="0.5" resistance="2" input="pos" controller="2 0 0.2 0 0 1.5"/>
    <dcmotor name="velservo" joint="k" motorconst="0.3" resistance="1" input="vel" controller="0 0 0.1"/>
    <dcmotor name="ffcoil" joint="k" motorconst="0.3" resistance="1" input="ff" controller="0 0 0.05"
             inductance="0.02"/>
    <dcmotor name="pi" joint="j" motorconst="0.5" resistance="2" input="pos" controller="2 3 0.2 4 0.05"/>
    <dcmotor name="picoil" joint="k" motorconst="0.3" resistance="1" input="pos" controller="1 2 0.1 0 0.1"
             inductance="0.02"/>
    <dcmotor name="hot" joint="j" motorconst="0.5" resistance="2" thermal="1 2 0 0.004 25 20"/>
    <dcmotor name="hotcoil" joint="k" motorconst="0.3" resistance="1" thermal="0.5 0 3 0.004 25 20"
             inductance="0.02"/>
    <dcmotor name="lugre" joint="j" motorconst="0.5" resistance="2" lugre="1 0.05 0.05 0.08 0.1"/>
    <dcmotor name="all" joint="k" motorconst="0.3" resistance="1" lugre="0.5 0.02 0.03 0.05 0.2"
             thermal="1 2 0 0.004 25 20" inductance="0.02" cogging="0.01 4"/>""",
    default='<default class="m"><dcmotor motorconst="0.3" resistance="1"/></default>',
    option='<option timestep="0.01"/>')


@pytest.fixture(scope="module")
def dcmotor():
    return load_pair(DCMOTOR)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_dcmotor_steps_match_mujoco(dcmotor, integrator):
    if integrator == "euler":
        compared = assert_model_fields(dcmotor[0], dcmotor[2])
        assert {"actuator_gainprm", "actuator_biasprm", "actuator_forcerange",
                "actuator_ctrlspec"} <= set(compared)
    m, d, mjm, mjd = own_pair(dcmotor, integrator)
    saturated = limited = vmax = imax = 0
    for t, u in enumerate(5 * random_controls(m.nu, STEPS, seed=5)):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in ("qpos", "qvel", "act", "act_dot", "actuator_force", "qfrc_actuator"):
            assert_close(f"{integrator} step {t}: {name}", getattr(d, name), getattr(mjd, name))
        saturated += abs(d.actuator_force[m.actuator("nominal").id]) == 0.2
        limited += abs(d.act_dot[m.actuator_actadr[m.actuator("rate").id]]) == 3.0
        # the servo's drive voltage (R/K) (kp (u - l) - kd v) + K v beyond its Vmax of 1.5
        servo = m.actuator("servo").id
        length, velocity = d.actuator_length[servo], d.actuator_velocity[servo]
        vmax += abs(4 * (2 * (np.clip(d.ctrl[servo], -1e10, 1e10) - length) - 0.2 * velocity)
                    + 0.5 * velocity) > 1.5
        imax += abs(d.act[m.actuator_actadr[m.actuator("pi").id] + 1]) == 0.05
    assert saturated and limited and vmax and imax, "the run never reached a saturation, current rate, " \
        "Vmax or Imax"
    assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7]))


def test_dcmotor_batch_rollout_matches_mujoco_rollout(dcmotor):
    m, _, mjm, _ = dcmotor
    state0 = np.zeros((2, batch.state_size(m)))
    state0[:, 1:1 + m.nq] = [[0.3, -0.2], [-0.5, 0.4]]
    assert_rollout_matches(m, mjm, state0, 5 * np.random.default_rng(4).normal(size=(2, 25, m.nu)))


@pytest.mark.parametrize(("actuator", "attr", "message"), [
    ('<pid joint="b" input="vel"/>', "joint", "ball or free joint"),
    ('<orientation joint="b" kp="2"/>', None, "<orientation> actuators are not simulated"),
])
def test_ball_joint_actuators_refused(actuator, attr, message):
    xml = ('<mujoco><worldbody><body><joint name="b" type="ball"/><geom size=".1" pos=".2 0 0"/></body>'
           f'</worldbody><actuator>{actuator}</actuator></mujoco>')
    mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match=message) as err:
        kd.Model.from_xml_string(xml)
    assert err.value.attribute == attr


def test_inverse_actuation_refuses_pid(pid):
    m, d, _, _ = pid
    with pytest.raises(ValueError, match="pid"):
        kd.inverse_actuation(m, d, qacc=np.zeros(m.nv))


def test_inverse_actuation_of_dcmotors(dcmotor):
    """kd.inverse_actuation finds the voltages that give a wanted qacc, through a stateless
    motor's force and an inductive one's next current (the forward pass then gives that qacc);
    controller-driven motors are refused."""
    with pytest.raises(ValueError, match="driven by their controller"):
        kd.inverse_actuation(dcmotor[0], dcmotor[1], qacc=np.zeros(2))
    # LuGre friction on a voltage-driven motor: its force is the forward stage's too
    lugre = kd.Model.from_xml_string(_xml('<dcmotor joint="j" motorconst=".05" resistance="2" '
                                          'lugre="100 .1 .05 .08 .1"/>'))
    with pytest.raises(ValueError, match="LuGre"):
        kd.inverse_actuation(lugre, kd.Data(lugre), qacc=np.zeros(lugre.nv))
    m = kd.Model.from_xml_string(_xml(
        """<dcmotor joint="j" motorconst="0.5" resistance="2" cogging="0.1 6 0.3"/>
        <dcmotor joint="k" motorconst="0.3" resistance="1" inductance="0.04"/>""",
        option='<option timestep="0.01"/>'))
    d = kd.Data(m)
    d.qpos[:], d.qvel[:], d.act[:] = [0.3, -0.2], [0.5, -1.0], [0.2]
    wanted = np.array([0.4, -0.3])
    result = kd.inverse_actuation(m, d, qacc=wanted)
    assert result.exact
    d.ctrl[:] = result.ctrl
    kd.forward(m, d)
    assert_close("qacc", d.qacc, wanted, rtol=1e-8, atol=1e-10)
