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
from test_derivatives_transition import (
    CONSTRAINED_AGREE,
    CONSTRAINED_BAR,
    EPS,
    SMALL,
    _at_optimum,
    _case,
    _check,
    _mujoco,
)

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


# the acceleration stage: forward's dqacc composed with the partials of cacc and cfrc_int
ACC_SENSORS = ('<sensor><accelerometer site="t"/><accelerometer site="s"/><force site="t"/><torque site="t"/>'
               '<force site="h1"/><torque site="h1"/><framelinacc objtype="body" objname="tip"/>'
               '<frameangacc objtype="geom" objname="g"/><framelinacc objtype="site" objname="t"/>'
               '<frameangacc objtype="xbody" objname="tip"/>')


def test_acceleration_and_force_sensors():
    """accelerometer, force, torque, framelinacc, frameangacc: C and D (through qacc) without
    constraint rows."""
    case = _case(XML.replace("<sensor>", ACC_SENSORS), 40, [0.7, 0.4, 0.1])
    ours = _check(case, "acceleration sensors")
    m, nv = case[0], case[0].nv
    for s in range(ACC_SENSORS.count("/>")):
        rows = slice(m.sensor_adr[s], m.sensor_adr[s] + 3)
        name = kd.SensorType(int(m.sensor_type[s])).name
        assert np.abs(ours.C[rows, :nv]).max() > 1e-2, f"sensor {s} ({name})"
        assert np.abs(ours.D[rows]).max() > 1e-2, f"sensor {s} ({name})"


def test_acceleration_sensors_in_contact():
    """The box and its links resting on the floor (test_derivatives_transition's FLOOR, solver at its
    optimum): the accelerations through the constraint force's dqacc; a force sensor whose
    subtree touches the floor (external forces, cfrc_ext) is refused, and filled by finite
    differences with sensors="fd"."""
    sensors = ACC_SENSORS.replace('<force site="t"/><torque site="t"/>', "")
    sensors = sensors.replace('<torque site="h1"/>', "")
    xml = XML.replace("<worldbody>", '<worldbody><geom type="plane" size="5 5 .1"/>').replace(
        '<option timestep="0.005"/>', '<option timestep="0.005" cone="elliptic"/>')
    m, d, mjm, mjd = _case(_at_optimum(xml).replace("<sensor>", sensors), 150, [0.3, 0.2, 0.1],
                           kd.IntegratorType.IMPLICITFAST)
    assert mjd.ncon >= 3
    force = 2   # the hinge body's force sensor
    assert m.sensor_type[force] == kd.SensorType.FORCE
    with pytest.raises(ValueError, match=f"sensor {force}: FORCE with an external force"):
        kd.transition_derivatives(m, d)
    ours = kd.transition_derivatives(m, d, sensors="fd")
    adr = m.sensor_adr[force]
    assert list(ours.fd_sensor_rows) == [adr, adr + 1, adr + 2]
    fd, fine = _mujoco(mjm, mjd, EPS), _mujoco(mjm, mjd, EPS / 10)
    keep = np.ones(m.nsensordata, dtype=bool)
    keep[adr:adr + 3] = False
    for name, k in (("C", 2), ("D", 3)):
        x, y, z = ours[k][keep], fd[k][keep], fine[k][keep]
        scale = np.abs(y).max()
        spread = np.abs(z - y).max() / scale
        assert spread <= CONSTRAINED_AGREE, f"{name}: the oracle is unsettled ({spread:.2g})"
        err = np.abs(x - y).max() / scale
        assert err <= max(3 * spread, CONSTRAINED_BAR), f"{name}: error {err:.3g}, spread {spread:.3g}"
