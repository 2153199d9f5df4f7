"""kd.transition_derivatives with fluid forces (the inertia-box model under Euler:
derivative_fluid.fluid_box_partials_entry) against MuJoCo's centred mjd_transitionFD, by the
two-eps rule of test_derivatives_transition; the ellipsoid model and the implicit integrators in
a medium are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from test_derivatives_transition import SMALL, _case, _check

import kinedyn as kd

MEDIUM = '<option timestep="0.005" density="1000" viscosity="0.5" wind="1 -2 .5"/>'


def test_inertia_box_in_a_medium_with_wind():
    """The free body, hinge and ball of SMALL in a dense, viscous medium with wind (qfrc_fluid up
    to ~60 N): the box drag's derivatives in qpos (the local frame turning, the com's velocity
    changing, the Jacobians moving) and qvel."""
    case = _case(SMALL.replace('<option timestep="0.005"/>', MEDIUM), 40, [0.7, 0.4, 0.1])
    assert np.abs(case[3].qfrc_fluid).max() > 10
    ours = _check(case, "inertia box")
    # the medium matters in the position columns far beyond the tolerance
    m, d = case[0], case[1]
    m.opt.density, m.opt.viscosity = 0.0, 0.0
    dry = kd.transition_derivatives(m, d)
    nv = m.nv
    assert np.abs(ours.A[:, :nv] - dry.A[:, :nv]).max() > 1e-3 * np.abs(ours.A).max()


def test_ellipsoid_model_and_implicit_integrators_are_refused():
    m = kd.Model.from_xml_string(SMALL.replace('<option timestep="0.005"/>', MEDIUM).replace(
        '<geom type="box"', '<geom type="box" fluidshape="ellipsoid"'))
    with pytest.raises(ValueError, match="body 1: fluid forces of the ellipsoid model"):
        kd.transition_derivatives(m, kd.Data(m))
    m = kd.Model.from_xml_string(SMALL.replace('<option timestep="0.005"/>', MEDIUM))
    m.opt.integrator = kd.IntegratorType.IMPLICITFAST
    with pytest.raises(ValueError, match="fluid forces under the implicit or implicitfast"):
        kd.transition_derivatives(m, kd.Data(m))
