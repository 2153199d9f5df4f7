"""kd.transition_derivatives on the moving moments (engine/derivative_transmission.py) against
MuJoCo's centred mjd_transitionFD, with test_derivatives_transition's calibrated rule (_check:
MuJoCo's differences at eps 1e-6 and 1e-7 agree within FD_AGREE, ours within max(3 spread, 1e-9)
of them), at states MuJoCo's own simulation visits.

Cases: xfrc_applied on three bodies (a free body, a hinge's, a ball's); joint actuatorfrcrange
engaged on a hinge with actuatorgravcomp, and a tendon's actuatorfrcrange engaged; fixed-tendon
armature; a spatial tendon through sites and a pulley with a polynomial spring, a damper and two
actuators (Euler, implicitfast, implicit); muscles on spatial tendons; a site transmission (a 6D
gear on the ball's body, and two with refsites), a slider-crank, and motors on a ball and a free
joint, with and without jointinparent, with their actuatorpos, actuatorvel and actuatorfrc sensors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_derivatives_transition import SMALL, _case, _check

import kinedyn as kd

MODELS = Path(__file__).parent / "models"
# SMALL without its jointactuatorfrc sensor (refused with a moving moment or actuatorfrcrange: it
# would need the actuator share of the row alone)
BASE = SMALL.replace('<jointactuatorfrc joint="h"/>', "")


def test_xfrc_applied():
    xfrc = np.zeros((4, 6))
    xfrc[1] = [0.3, -0.2, 1.5, 0.05, 0.02, -0.04]
    xfrc[2] = [-0.4, 0.1, 0.2, 0.0, -0.03, 0.01]
    xfrc[3] = [0.2, 0.5, -0.3, 0.02, 0.0, 0.03]
    case = _case(SMALL, 40, [0.7, 0.4, 0.1], xfrc=xfrc)
    ours = _check(case, "xfrc_applied")
    # the same state without the applied wrenches differs in A's position columns
    m, d = case[0], case[1]
    d.xfrc_applied[:] = 0.0
    assert np.abs(kd.transition_derivatives(m, d).A[:, :9] - ours.A[:, :9]).max() > 1e-4


# actuatorgravcomp on the hinge, clamped by its actuatorfrcrange (the motor pushes beyond it)
FRCRANGE = BASE.replace('"><joint name="h"', '" gravcomp=".7"><joint name="h"').replace(
    'springref=".1"/>', 'springref=".1" actuatorgravcomp="true" actuatorfrcrange="-.6 .6"/>')


@pytest.mark.parametrize("ctrl", [[1.0, 0.4, 0.1], [0.02, 0.0, 0.0]], ids=["clamped", "inside"])
def test_joint_actuatorfrcrange(ctrl):
    m, d, mjm, mjd = case = _case(FRCRANGE, 40, ctrl)
    assert (abs(mjd.qfrc_actuator[6]) == 0.6) == (ctrl[0] == 1.0)
    ours = _check(case, "actuatorfrcrange")
    assert (not np.any(ours.B[6:, 0])) == (ctrl[0] == 1.0)


FIXED = BASE.replace("<actuator>", '<tendon><fixed name="ft" ARM actuatorfrcrange="-.2 .2"><joint joint="h" '
                      'coef="2"/></fixed></tendon><actuator><motor tendon="ft" gear="1.5"/>')


@pytest.mark.parametrize("ctrl", [0.9, 0.01], ids=["engaged", "inside"])
def test_tendon_actuatorfrcrange_and_armature(ctrl):
    xml = FIXED.replace("ARM", 'armature=".05"')
    m, d, mjm, mjd = case = _case(xml, 40, [ctrl, 0.7, 0.4, 0.1])
    assert (abs(mjd.actuator_force[0]) == pytest.approx(0.2)) == (ctrl == 0.9)
    ours = _check(case, "tendon actuatorfrcrange")
    assert (not np.any(ours.B[:, 0])) == (ctrl == 0.9)


SPATIAL = BASE.replace('<geom type="box"', '<site name="s" pos=".1 0 .05"/>'
                       '<site name="s2" pos="-.1 .05 .05"/><geom type="box"').replace(
    'fromto="0 0 0 0 .2 .1"/>', 'fromto="0 0 0 0 .2 .1"/><site name="t" pos="0 .2 .1"/>').replace(
    '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>',
    '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/><site name="u" pos=".1 .03 0"/>').replace(
    "<actuator>", '<tendon><spatial name="sp" stiffness="5 2 1" damping=".3" springlength=".05 .1">'
    '<site site="s"/><site site="u"/><site site="t"/></spatial>'
    '<spatial name="pl" damping=".2 .1 .05"><site site="s2"/><site site="u"/><pulley divisor="2"/>'
    '<site site="u"/><site site="t"/></spatial></tendon>'
    '<actuator><general tendon="sp" gaintype="affine" gainprm="3 1 -.5" biastype="affine" '
    'biasprm="0 -2 -.4"/>'
    '<motor tendon="pl" gear="2"/>').replace(
    "<sensor>", '<sensor><actuatorpos actuator="a0"/><actuatorvel actuator="a0"/><actuatorfrc actuator="a0"/>'
    '<actuatorfrc actuator="a1"/>').replace('<general tendon="sp"', '<general name="a0" tendon="sp"').replace(
    '<motor tendon="pl"', '<motor name="a1" tendon="pl"')


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICITFAST", "IMPLICIT"])
def test_spatial_tendons(integrator):
    case = _case(SPATIAL, 40, [0.5, -0.3, 0.7, 0.4, 0.1], kd.IntegratorType[integrator])
    mjd = case[3]
    assert abs(mjd.qfrc_spring).max() > 0.01 and abs(mjd.ten_length[0] - 0.1) > 1e-3
    ours = _check(case, f"spatial tendons {integrator}")
    assert np.abs(ours.B[:, :2]).max() > 0.01


def test_muscles_on_spatial_tendons():
    # 20 steps: later the activations reach their controls, where the muscle's time constant
    # switches (tausmooth 0) and MuJoCo's centred differences straddle the kink
    case = _case((MODELS / "muscle_spatial_tendon.xml").read_text(), 20, [0.5, 0.2, 0.7],
                 disable=int(kd.DisableBit.LIMIT))
    _check(case, "spatial muscles")


TRANSMISSIONS = BASE.replace('fromto="0 0 0 0 .2 .1"/>', 'fromto="0 0 0 0 .2 .1"/>'
                              '<site name="t" pos=".02 .2 .1" euler="10 20 30"/>').replace(
    '<geom type="box"', '<site name="sl" pos=".05 -.05 .1" euler="30 -20 10"/><geom type="box"').replace(
    "<actuator>", '<actuator><general name="a0" site="t" gear=".5 -.3 .8 .1 .2 -.1" gaintype="affine" '
    'gainprm="1 2 -.3" biastype="affine" biasprm="0 .5 -.2"/><motor name="a1" joint="b" gear=".3 -.2 .4"/>'
    '<general name="a2" joint="root" gear=".2 .1 -.3 .05 .02 .01" gaintype="affine" gainprm="1 3 -.2"/>'
    '<general name="a3" cranksite="t" slidersite="sl" cranklength=".5" gaintype="affine" gainprm="1 2 -.4" '
    'biastype="affine" biasprm="0 -1 -.3"/>'
    '<general name="a4" jointinparent="b" gear=".2 .4 -.1" gaintype="affine" gainprm="1 .5 -.2"/>'
    '<general name="a5" jointinparent="root" gear="-.1 .2 .1 .03 -.02 .04" gaintype="affine" '
    'gainprm="1 .5 -.2"/>'
    '<general name="a6" site="t" refsite="sl" gear=".3 .2 -.4 .2 -.1 .3" gaintype="affine" gainprm="1 2 -.3" '
    'biastype="affine" biasprm="0 .5 -.2"/>'
    '<general name="a7" site="sl" refsite="t" gear="-.2 .3 .1 .1 .2 -.2" gaintype="affine" '
    'gainprm="1 -1.5 -.2"/>'
    ).replace("<freejoint/>", '<freejoint name="root"/>').replace("<sensor>", "<sensor>" + "".join(
        f'<actuatorpos actuator="a{i}"/><actuatorvel actuator="a{i}"/><actuatorfrc actuator="a{i}"/>'
        for i in range(8)))


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICIT"])
def test_site_crank_ball_and_free_transmissions(integrator):
    """A site's 6D gear, a slider-crank (rod long enough: the smooth branch), motors on a ball and
    a free joint, with and without jointinparent, and two sites with refsites (one on the free
    body, the other the ball's: the free joint's dofs move both, cleared)."""
    case = _case(TRANSMISSIONS, 40, [0.6, 0.5, 0.4, 0.3, -0.4, 0.5, 0.6, -0.5, 0.7, 0.4, 0.1],
                 kd.IntegratorType[integrator])
    assert np.abs(case[3].actuator_force[:8]).min() > 0.01
    ours = _check(case, f"site, crank, ball, free {integrator}")
    # their actuatorpos, actuatorvel and actuatorfrc rows (derivative_transmission's)
    # (actuatorpos rows of the site without refsite and the free joint are zero: length 0; the
    # ball's plain motor's force depends on ctrl alone)
    assert np.abs(ours.C[1:24:3]).max(axis=1).min() > 0
    assert np.count_nonzero(np.abs(ours.C[2:24:3]).max(axis=1)) == 7


def test_still_refused():
    wrap = SPATIAL.replace('<site site="u"/><site site="t"/></spatial>', '<site site="u"/><geom geom="w"/>'
                           '<site site="t"/></spatial>').replace(
        '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>',
        '<geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/><geom name="w" type="sphere" size=".01" '
        'pos=".15 .05 0" contype="0" conaffinity="0"/>', 1)
    m = kd.Model.from_xml_string(wrap)
    with pytest.raises(ValueError, match="tendon 0: a spatial tendon wrapping"):
        kd.transition_derivatives(m, kd.Data(m))
    m = kd.Model.from_xml_string(TRANSMISSIONS.replace("<sensor>", '<sensor><jointactuatorfrc joint="h"/>'))
    with pytest.raises(ValueError, match="sensor 0: jointactuatorfrc"):
        kd.transition_derivatives(m, kd.Data(m))
    # a spatial tendon's actuator with armature (its q-dependent inertia and bias)
    m = kd.Model.from_xml_string(SPATIAL.replace('gear="2"/>', 'gear="2" armature=".1"/>'))
    with pytest.raises(ValueError, match="tendon 1: armature of a spatial tendon"):
        kd.transition_derivatives(m, kd.Data(m))
