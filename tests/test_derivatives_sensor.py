"""kd.transition_derivatives' C rows of the sensors that need second-order kinematics
(engine/derivative_sensor.py) against MuJoCo's centred mjd_transitionFD, by the two-eps rule of
test_derivatives_transition: frame sensors with a reference frame (a body's, a geom's, a site's,
a camera's) and of a camera, subtreelinvel and subtreeangmom of the world and of a subtree, and
tendonvel of a spatial tendon through sites and a pulley. C does not depend on the integrator
(the sensors are those of forward at the state), so one integrator is enough.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_derivatives_transition import SMALL, _case, _check

import kinedyn as kd

# sites on the free body (s) and the ball's body (t), a camera on the hinge's body (c)
XML = SMALL.replace('<geom type="box"', '<site name="s" pos=".1 0 .05"/><geom name="g" type="box"').replace(
    '<body pos=".2 0 0"><joint name="b"', '<body name="tip" pos=".2 0 0"><joint name="b"').replace(
    '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>',
    '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/><site name="h1" pos=".1 0 .03"/>'
    '<camera name="c" pos=".1 .05 .1" euler="30 20 10"/>').replace(
    'fromto="0 0 0 0 .2 .1"/>', 'fromto="0 0 0 0 .2 .1"/><site name="t" pos=".05 .1 .02" euler="20 -30 40"/>'
    '<site name="t2" pos="0 .2 .1"/>')
TENDONS = ('<tendon><spatial name="sp"><site site="s"/><site site="t"/></spatial>'
           '<spatial name="pulley"><site site="s"/><site site="h1"/><site site="t2"/><pulley divisor="2"/>'
           '<site site="h1"/><site site="t"/></spatial></tendon>')
SENSORS = (
    '<sensor><framepos objtype="site" objname="t" reftype="camera" refname="c"/>'
    '<framepos objtype="xbody" objname="tip" reftype="site" refname="s"/>'
    '<framequat objtype="site" objname="t" reftype="geom" refname="g"/>'
    '<framexaxis objtype="xbody" objname="tip" reftype="site" refname="s"/>'
    '<frameyaxis objtype="camera" objname="c" reftype="body" refname="tip"/>'
    '<framezaxis objtype="body" objname="tip" reftype="camera" refname="c"/>'
    '<framelinvel objtype="site" objname="t" reftype="site" refname="s"/>'
    '<framelinvel objtype="camera" objname="c" reftype="xbody" refname="tip"/>'
    '<frameangvel objtype="site" objname="t" reftype="site" refname="s"/>'
    '<frameangvel objtype="geom" objname="g" reftype="site" refname="t"/>'
    '<framepos objtype="camera" objname="c"/><framequat objtype="camera" objname="c"/>'
    '<framelinvel objtype="camera" objname="c"/>'
    '<subtreelinvel body="world"/><subtreelinvel body="tip"/>'
    '<subtreeangmom body="world"/><subtreeangmom body="tip"/>'
    '<tendonvel tendon="sp"/><tendonvel tendon="pulley"/>')


@pytest.fixture(scope="module")
def case():
    return _case(XML.replace("<actuator>", TENDONS + "<actuator>").replace("<sensor>", SENSORS), 40,
                 [0.7, 0.4, 0.1])


def test_reference_frame_subtree_and_spatial_tendon_velocity_sensors(case):
    ours = _check(case, "second-order sensors")
    m, nv = case[0], case[0].nv
    # every one of SENSORS (SMALL's follow) is exercised: nonzero in the position columns
    for s in range(SENSORS.count("/>")):
        rows = ours.C[m.sensor_adr[s]:m.sensor_adr[s] + m.sensor_dim[s], :nv]
        assert np.abs(rows).max() > 1e-3, f"sensor {s} ({kd.SensorType(int(m.sensor_type[s])).name})"


def test_a_wrapping_tendons_velocity_is_refused():
    wrap = '<tendon><spatial name="w"><site site="s"/><geom geom="wc"/><site site="t"/></spatial></tendon>'
    cylinder = '<geom name="wc" type="cylinder" size=".05 .1" pos="0 0 -1"/>'
    xml = XML.replace("<worldbody>", "<worldbody>" + cylinder, 1)
    m = kd.Model.from_xml_string(xml.replace("<actuator>", wrap + "<actuator>").replace(
        "<sensor>", '<sensor><tendonvel tendon="w"/>'))
    with pytest.raises(ValueError, match="sensor 0: TENDONVEL of a spatial tendon wrapping"):
        kd.transition_derivatives(m, kd.Data(m))
