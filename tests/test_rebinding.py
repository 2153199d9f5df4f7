"""A model edited after it was made so that it needs compiled units it was not bound for: every
public function binds them and goes on (kinedyn._jit.bind; Model.binding_state), the batch
kernels included, and the result is MuJoCo's."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import kinedyn as kd

XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <body pos="0 0 1"><joint name="a" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".05" contype="0" conaffinity="0"/>
      <body pos=".3 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="sphere" size=".05" contype="0" conaffinity="0"/></body>
    </body>
  </worldbody>
  <actuator><motor joint="a"/></actuator>
</mujoco>
"""


def _edited(target):
    """kd's model with gravity compensation switched on after compiling, and MuJoCo's compiled with
    it (MuJoCo counts the bodies with gravcomp when it compiles: an edit of its body_gravcomp
    afterwards changes nothing there)."""
    m = kd.Model.from_xml_string(XML)
    d = kd.Data(m)
    target(m, d)  # bound for the model as compiled: no gravity compensation
    before = m.binding_state()
    m.body_gravcomp[1] = 0.7
    # what tells the binder to bind again (unit cells are process-wide: without this, the calls
    # below would fail only when no earlier test in the process had bound the gravcomp unit)
    assert m.binding_state() != before
    gravcomp = XML.replace('<body pos="0 0 1">', '<body pos="0 0 1" gravcomp="0.7">')
    mjm = mujoco.MjModel.from_xml_string(gravcomp)
    return m, d, mjm


@pytest.mark.parametrize("name", ["passive", "forward", "transition_fd", "batch.forward"])
def test_gravity_compensation_switched_on_after_binding(name):
    from kinedyn.tools import batch

    calls = {"passive": lambda m, d: (kd.kinematics(m, d), kd.com_pos(m, d), kd.passive(m, d)),
             "forward": kd.forward,
             "transition_fd": kd.transition_fd,
             "batch.forward": lambda m, d: batch.forward(m, batch.BatchData(m, 2))}
    m, d, mjm = _edited(calls[name])
    d.qpos[:] = [0.3, -0.4]
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = d.qpos
    mujoco.mj_forward(mjm, mjd)
    calls[name](m, d)
    kd.forward(m, d)
    np.testing.assert_allclose(d.qfrc_gravcomp, mjd.qfrc_gravcomp, rtol=1e-9, atol=1e-12)
    assert np.abs(mjd.qfrc_gravcomp).max() > 0.1


def test_a_medium_under_the_discrete_integrator_is_refused_at_run_time():
    m = kd.Model.from_xml_string(XML.replace('<option timestep="0.005"/>',
                                             '<option timestep="0.005" integrator="discrete"/>'))
    with pytest.raises(ValueError, match="discrete"):
        m.opt.density = 1.2
    m.opt.density = 0.0  # no medium: nothing to refuse
