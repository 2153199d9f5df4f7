"""MuJoCo 4.0's general control layout: actuators with several controls or none, against MuJoCo 4.0.

``nu`` is the sum of ``actuator_ctrlnum`` and differs from ``nactuator``: a ``<pid>`` has one
control per input (its default "pos vel" two, "pos vel ff" three), ``<general gaintype="pid">``
likewise, and ``<dcmotor input="none"/>`` has none. One model holds them all, beside single-control
actuators whose blocks they shift (a motor, a delayed position servo, a filter): the compiled
layout and per-control ranges (``actuator_ctrlrange``/``ctrllimited`` have nu rows), steps under
every integrator, forward and inverse, ``kd.batch.rollout`` against ``mujoco.rollout``,
``kd.transition_fd``'s B and D (one column per control) against ``mjd_transitionFD``, the
``kinedyn.mujoco`` shim's named ``ctrl`` blocks, and what still refuses them.
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
)

import kinedyn as kd

# Two hinges and a slide under gravity. Controls, in order: "pv" (pid default: pos, vel), "pvf"
# (pos vel ff with velrange and ffrange, integral with imax and a slew limit the controls exceed),
# "motor", "vf" (vel ff, no position term: kp acts as damping-free zero setpoint), "gen"
# (<general gaintype="pid"> with pos ff), "late" (a delayed position servo after them), "coast"
# (dcmotor input="none": cogging, back-EMF and an inductance state, no control), "filt" (filter),
# "early" (pid dynamics with slew and integral states, actearly and an actrange the run reaches).
XML = """<mujoco><option timestep="0.01"/><compiler autolimits="true"/>
<worldbody><body pos="0 0 1"><joint name="j" axis="0 1 0" range="-1 2"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
<body pos="0.3 0 0"><joint name="k" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
<body pos="0.3 0 0"><joint name="s" type="slide" axis="1 0 0" damping="0.1"/>
<geom type="sphere" size="0.05" mass="0.5"/></body></body></body></worldbody>
<actuator>
  <pid name="pv" joint="j" kp="5" kv="0.5"/>
  <pid name="pvf" joint="k" kp="3" kv="0.2" ki="4" imax="0.05" slewmax="5" input="pos vel ff"
       posrange="-1 1" velrange="-2 2" ffrange="-0.5 0.5"/>
  <motor name="motor" joint="s" ctrlrange="-1 1"/>
  <pid name="vf" joint="s" kp="2" kv="1" input="vel ff"/>
  <general name="gen" joint="k" gaintype="pid" biastype="affine" gainprm="0" biasprm="0 -2 -0.3"
           input="pos ff"/>
  <position name="late" joint="j" kp="4" nsample="3" delay="0.02"/>
  <dcmotor name="coast" joint="k" motorconst="0.3" resistance="1" input="none" cogging="0.05 4 0.2"
           inductance="0.02"/>
  <general name="filt" joint="s" dyntype="filter" dynprm="0.05" gainprm="2"/>
  <general name="early" joint="j" dyntype="pid" gaintype="pid" biastype="affine" gainprm="3"
           biasprm="0 -5 -0.5" dynprm="0.5 20" input="pos vel ff" actearly="true" actrange="-0.1 0.1"/>
</actuator></mujoco>"""
INTEGRATORS = ("euler", "implicitfast", "implicit", "rk4")
STEPS = 30


@pytest.fixture(scope="module")
def pair():
    return load_pair(XML)


def _controls(nu, steps, seed=0):
    return 1.5 * np.random.default_rng(seed).normal(size=(steps, nu))


def _load(xml, integrator, timestep):
    """The pair for ``xml`` with ``<option timestep="0.01"/>`` set to this integrator and timestep."""
    keyword = {"euler": "Euler", "rk4": "RK4"}.get(integrator, integrator)
    return load_pair(xml.replace('<option timestep="0.01"/>',
                                 f'<option timestep="{timestep}" integrator="{keyword}"/>'))


def _step_both(m, d, mjm, mjd, controls, label):
    """Step both with each row of ``controls``, comparing the state and the actuation every step;
    the activations after each step."""
    acts = np.empty((len(controls), m.na))
    for t, u in enumerate(controls):
        d.ctrl[:] = mjd.ctrl[:] = u
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in ("qpos", "qvel", "act", "act_dot", "history", "actuator_force", "qfrc_actuator"):
            assert_close(f"{label} step {t}: {name}", getattr(d, name), getattr(mjd, name))
        acts[t] = d.act
    return acts


def test_layout_compiles_as_mujoco(pair):
    m, _, mjm, _ = pair
    compared = assert_model_fields(m, mjm)
    assert {"nu", "nactuator", "nout", "actuator_ctrladr", "actuator_ctrlnum", "actuator_ctrlspec",
            "actuator_ctrlrange", "actuator_ctrllimited"} <= set(compared)
    assert (m.nu, m.nactuator, m.nout) == (15, 9, 9)
    assert m.actuator_ctrlnum.tolist() == [2, 3, 1, 2, 2, 1, 0, 1, 3]
    # pvf's pos, vel and ff controls take posrange, velrange and ffrange
    c = m.actuator_ctrladr[m.actuator("pvf").id]
    np.testing.assert_array_equal(m.actuator_ctrlrange[c:c + 3], [[-1, 1], [-2, 2], [-0.5, 0.5]])
    assert m.control_names()[:5] == ["pv[0]", "pv[1]", "pvf[0]", "pvf[1]", "pvf[2]"]


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_steps_match_mujoco(integrator):
    m, d, mjm, mjd = _load(XML, integrator, 0.01)
    early = m.actuator_actadr[m.actuator("early").id]
    acts = _step_both(m, d, mjm, mjd, _controls(m.nu, STEPS), integrator)
    assert (np.abs(acts[:, early:early + 2]).max(axis=1) == 0.1).any(), \
        "the pid states never reached their actrange"
    assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7, 0.2]))


# DC motors driven by their controller with the thermal model (after the slew and integral states)
# and LuGre friction (one with inductance): the temperature raises the resistance the motor's
# current sees, while the controller's voltage uses the cold one. (At h = 0.01 the explicit
# integrators diverge on this model, in MuJoCo too.) And controllers fed by several controls: pos
# vel ff (slew on the first, integral, Vmax, ctrlrange on each) and vel ff (the vel slewed).
HOT = XML.split("<actuator>")[0] + """<actuator>
  <dcmotor name="hot" joint="j" motorconst="0.05" resistance="2" thermal="1 2 0 0.004 25 25" input="pos"
           controller="1 1 0.1 2 0.5"/>
  <dcmotor name="rough" joint="k" motorconst="0.05" resistance="2" lugre="100 0.1 0.05 0.08 0.1" input="ff"
           controller="0 0 0.1" inductance="0.02"/>
  <dcmotor name="both" joint="s" motorconst="0.3" resistance="1" input="vel" controller="0 0 0.2"
           thermal="0.5 0 3 0.004 25 20" lugre="5 0.02 0.1 0.15 0.1"/>
  <dcmotor name="multi" joint="j" motorconst="0.5" resistance="2" input="pos vel ff" ctrlrange="-1 1"
           controller="2 1 0.2 30 0.5 1.5"/>
  <dcmotor name="twin" joint="k" motorconst="0.3" resistance="1" input="vel ff" controller="0.5 0 0.1 30"/>
</actuator></mujoco>"""


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_dcmotor_controller_thermal_lugre_and_several_inputs(integrator):
    m, d, mjm, mjd = _load(HOT, integrator, 0.002)
    if integrator == "euler":
        assert {"actuator_ctrlnum", "actuator_ctrlrange", "actuator_gainprm", "actuator_dynprm",
                "actuator_actnum"} <= set(assert_model_fields(m, mjm))
        assert m.actuator_ctrlnum.tolist() == [1, 1, 1, 3, 2]
    _step_both(m, d, mjm, mjd, _controls(m.nu, STEPS, seed=7), integrator)
    assert d.act[m.actuator_actadr[0] + 2] > 0.1  # the winding warmed up
    assert np.abs(d.qvel).max() < 100  # and the run stayed well-conditioned


# pid servos on rotational transmissions (a ball joint, a site with refsite and a rotational gear):
# the pos control wrapped to the representative nearest the slew state (or the length), the
# setpoint the force and the integral see nearest the length; controls beyond pi exercise it.
BALL = """<mujoco><option timestep="0.01"/>
<worldbody><body pos="0 0 1"><joint name="b" type="ball"/><site name="r"/><site name="q" pos="0.3 0 0"/>
<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/></body></worldbody>
<actuator>
  <pid joint="b" kp="5" kv="0.5" gear="0 1 0"/>
  <pid joint="b" kp="3" ki="1" slewmax="3" input="pos vel" gear="1 0 0"/>
  <pid site="q" refsite="r" kp="2" ki="0.5" gear="0 0 0 0 0 1" input="pos ff"/>
</actuator></mujoco>"""


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_pid_on_rotational_transmissions(integrator):
    m, d, mjm, mjd = _load(BALL, integrator, 0.01)
    controls = 2.5 * _controls(m.nu, STEPS, seed=2)
    assert np.abs(controls[:, [0, 2, 4]]).max() > np.pi, "no pos control beyond pi: the wrap never acts"
    _step_both(m, d, mjm, mjd, controls, integrator)
    assert_forward_and_inverse(m, d, mjm, mjd, np.array([0.3, -0.7, 0.2]))


def test_batch_rollout_matches_mujoco_rollout(pair):
    m, _, mjm, mjd = pair
    state0 = mujoco_states(mjm, mjd, [_controls(m.nu, 4 + i, seed=10 + i) for i in range(2)])
    assert_rollout_matches(m, mjm, state0, _controls(m.nu, 2 * 20, seed=3).reshape(2, 20, m.nu))


def test_transition_fd_has_a_column_per_control():
    """B and D: one column per control, as mjd_transitionFD (on the model without the delayed
    servo: both refuse history buffers)."""
    xml = XML.replace('<position name="late" joint="j" kp="4" nsample="3" delay="0.02"/>', "")
    xml = xml.replace("</actuator>", '</actuator><sensor><actuatorfrc actuator="pvf"/>'
                      '<jointpos joint="k"/></sensor>')
    m, d, mjm, mjd = load_pair(xml)
    u = _controls(m.nu, 1, seed=5)[0]
    u[1] = 2.0  # pv's vel control (unlimited) and pvf's vel control at its velrange end
    u[3] = 2.0
    d.ctrl[:] = mjd.ctrl[:] = u
    d.qpos[:] = mjd.qpos[:] = [0.3, -0.2, 0.05]
    d.qvel[:] = mjd.qvel[:] = [0.5, 0.1, -0.3]
    ours = kd.transition_fd(m, d, eps=1e-6)
    ndx, ns = 2 * m.nv + m.na, m.nsensordata
    theirs = (np.zeros((ndx, ndx)), np.zeros((ndx, m.nu)), np.zeros((ns, ndx)), np.zeros((ns, m.nu)))
    mujoco.mjd_transitionFD(mjm, mjd, 1e-6, False, *theirs)
    assert ours.B.shape == (ndx, m.nu) and ours.D.shape == (ns, m.nu)
    for name, a, b in zip("ABCD", ours, theirs, strict=True):
        assert_close(f"transition_fd {name}", a, b)
    # trajectory.linearize's step at this state is the same transition_fd
    state = np.concatenate([[d.time], d.qpos, d.qvel, d.act])[None]
    lin = kd.trajectory.linearize(m, state, u[None], eps=1e-6, nthread=1)
    assert_close("linearize B", lin[1][0], theirs[1])
    with pytest.raises(ValueError, match="several controls or none"):
        kd.transition_derivatives(m, d)


def test_named_control_blocks_in_the_mujoco_shim():
    from kinedyn import mujoco as kmj

    mm = kmj.MjModel.from_xml_string(XML)
    dd = kmj.MjData(mm)
    ref = mujoco.MjModel.from_xml_string(XML)
    refd = mujoco.MjData(ref)
    for name in ("pv", "pvf", "motor", "coast"):
        for attr in ("ctrlrange", "ctrllimited"):
            ours, theirs = getattr(mm.actuator(name), attr), getattr(ref.actuator(name), attr)
            assert_close(f"{name} {attr}", ours, theirs)
        assert dd.actuator(name).ctrl.shape == refd.actuator(name).ctrl.shape
        assert dd.actuator(name).force.shape == (1,)
    dd.actuator("pvf").ctrl = [0.1, 0.2, 0.3]
    np.testing.assert_array_equal(dd.ctrl[2:5], [0.1, 0.2, 0.3])


def test_inverse_actuation_refuses_an_actuator_without_control():
    xml = XML.split("<actuator>")[0] + ('<actuator><motor joint="j"/><dcmotor joint="k" motorconst="0.3" '
                                        'resistance="1" input="none"/></actuator></mujoco>')
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    with pytest.raises(ValueError, match="actuator_ctrlnum"):
        kd.inverse_actuation(m, d, qfrc=np.zeros(m.nv))


def test_buffers_on_several_controls_or_none_are_refused():
    """MuJoCo 4.0 buffers every control of a pid's block but reads back only the first: not
    simulated, refused by name; an actuator without controls has nothing to buffer (MuJoCo's
    error)."""
    body = XML.split("<actuator>")[0]
    xml = body + '<actuator><pid joint="j" kp="5" nsample="3" delay="0.02"/></actuator></mujoco>'
    mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError, match="allow_unsupported=True") as err:
        kd.Model.from_xml_string(xml)
    assert err.value.attribute == "delay"
    assert kd.Model.from_xml_string(xml, allow_unsupported=True).nactuator == 0
    xml = body + ('<actuator><dcmotor joint="j" motorconst="0.05" resistance="2" input="none" nsample="2"/>'
                  '</actuator></mujoco>')
    with pytest.raises(ValueError, match="history and delay require an input"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(kd.ModelError, match="history and delay require an input") as err:
        kd.Model.from_xml_string(xml)
    assert err.value.attribute == "nsample"
