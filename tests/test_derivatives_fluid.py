"""kd.transition_derivatives with fluid forces under Euler (the inertia-box and ellipsoid models:
derivative_fluid.fluid_partials_entry) against MuJoCo's centred mjd_transitionFD, by the two-eps
rule of test_derivatives_transition; the implicit integrators in a medium are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from test_derivatives_transition import SMALL, _case, _check

import kinedyn as kd

MEDIUM = '<option timestep="0.005" density="1000" viscosity="0.5" wind="1 -2 .5"/>'
IN_MEDIUM = SMALL.replace('<option timestep="0.005"/>', MEDIUM)
# the free body's box and the ball's capsule by the ellipsoid model (Kutta lift, Magnus force, ...
# on), the hinge body's by the inertia box
ELLIPSOIDS = IN_MEDIUM.replace('<geom type="box"', '<geom type="box" fluidshape="ellipsoid" '
                               'fluidcoef=".5 .25 1.5 1 1"').replace(
    '<geom type="capsule" size=".03" fromto="0 0 0 0 .2 .1"/>',
    '<geom type="capsule" size=".03" fromto="0 0 0 0 .2 .1" fluidshape="ellipsoid"/>')


@pytest.mark.parametrize("xml", [IN_MEDIUM, ELLIPSOIDS], ids=["inertia box", "ellipsoids"])
def test_fluid_forces_in_a_medium_with_wind(xml):
    """The free body, hinge and ball of SMALL in a dense, viscous medium with wind (qfrc_fluid up
    to tens of N): the fluid forces' derivatives in qpos (the local frames turning, their
    velocities changing, the Jacobians moving) and qvel."""
    case = _case(xml, 40, [0.7, 0.4, 0.1])
    assert np.abs(case[3].qfrc_fluid).max() > 10
    ours = _check(case, "fluid")
    # the medium matters in the position columns far beyond the tolerance
    m, d = case[0], case[1]
    m.opt.density, m.opt.viscosity = 0.0, 0.0
    dry = kd.transition_derivatives(m, d)
    nv = m.nv
    assert np.abs(ours.A[:, :nv] - dry.A[:, :nv]).max() > 1e-3 * np.abs(ours.A).max()


def test_implicit_integrators_in_a_medium_are_refused():
    m = kd.Model.from_xml_string(IN_MEDIUM)
    m.opt.integrator = kd.IntegratorType.IMPLICITFAST
    with pytest.raises(ValueError, match="fluid forces under the implicit or implicitfast"):
        kd.transition_derivatives(m, kd.Data(m))
