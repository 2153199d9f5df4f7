"""kd.transition_derivatives (analytical A, B, C, D of one step) against MuJoCo's mjd_transitionFD.

Oracle: MuJoCo's centred differences on the same model text, at states MuJoCo's own simulation
visits. Calibration by two eps: MuJoCo's centred differences at eps = 1e-6 and 1e-7 disagree by
``spread`` (their truncation and round-off error, relative to the matrix's largest entry); each
case requires spread <= FD_AGREE (the oracle is settled: no switch within eps), and holds the
analytical matrix to max(3 spread, 1e-9) of MuJoCo's eps = 1e-6 one. (Measured: analytical vs
MuJoCo 2e-11 .. 2e-9; spread 2e-10 .. 2e-8, round-off of the 1e-7 differences dominating.)
Cases: a free body with a hinge (polynomial spring and damper, three actuators: ctrlrange,
filter activation, affine gains, forcerange) and a ball joint, with joint/actuator sensors, under
Euler and implicitfast; filterexact/actearly/integrator actuators with actrange; muscles on fixed
tendons and a joint (limits off: no constraint rows); gymnasium's humanoid with contacts and
limits off, and with them; a box and its links resting on a floor (pyramidal under Euler,
elliptic under implicitfast); a sphere resting on a box on the floor (two trees in contact).
Also: the refusals, the sensors="fd" fill, kd.check_derivatives' analytical stages.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from oracle import gym_model_path

import kinedyn as kd

MODELS = Path(__file__).parent / "models"
EPS = 1e-6
FD_AGREE = 1e-7   # MuJoCo's centred differences at eps and eps/10, relative to the largest entry

SMALL = """<mujoco><option timestep="0.005"/>
<worldbody>
 <body pos="0 0 .3"><freejoint/><geom type="box" size=".1 .1 .1"/>
  <body pos=".2 0 0"><joint name="h" axis="0 1 0" damping=".1 .5 .2" stiffness="2 1 3" springref=".1"/>
   <geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>
   <body pos=".2 0 0"><joint name="b" type="ball" damping=".3"/>
    <geom type="capsule" size=".03" fromto="0 0 0 0 .2 .1"/></body>
  </body></body>
</worldbody>
<actuator><motor joint="h" ctrllimited="true" ctrlrange="-1 1"/>
 <general name="f" joint="h" dyntype="filter" dynprm=".05" gaintype="affine" gainprm="5 0 .3"
  biastype="affine" biasprm="0 -5 -.5"/>
 <general joint="h" gaintype="affine" gainprm="2 0 .4" forcerange="-.5 .5"/>
</actuator>
<sensor><jointpos joint="h"/><jointvel joint="h"/><actuatorfrc actuator="f"/><jointactuatorfrc joint="h"/>
 <actuatorvel actuator="f"/></sensor>
</mujoco>"""


def _case(xml, nstep, ctrl, integrator=None, disable=0, xfrc=None, qvel_tail=()):
    """(m, d, mjm, mjd): MuJoCo stepped nstep times under ctrl (and xfrc_applied; from qvel_tail in
    the last dofs); kinedyn's Data given its state."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = kd.Model.from_xml_string(xml)
    if integrator is not None:
        mjm.opt.integrator = int(integrator)
        m.opt.integrator = integrator
    mjm.opt.disableflags |= disable
    m.opt.disableflags = int(mjm.opt.disableflags)
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[:] = ctrl
    mjd.qvel[mjm.nv - len(qvel_tail):] = qvel_tail
    if xfrc is not None:
        mjd.xfrc_applied[:] = xfrc
    for _ in range(nstep):
        mujoco.mj_step(mjm, mjd)
    d = kd.Data(m)
    for f in ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "xfrc_applied"):
        getattr(d, f)[:] = getattr(mjd, f)
    d.time = mjd.time
    return m, d, mjm, mjd


# a lone free body (mj_isFreeBody) beside SMALL's tree: implicitfast solves its 6x6 block again
# with the gyroscopic derivative (mjd_freeMhat); it is thrown spinning about all three axes
LONE = SMALL.replace("</worldbody>", """<body pos="1 0 1"><freejoint/><geom type="box" size=".12 .06 .03"/>
 </body></worldbody>""")
LONE_SPIN = [0.3, -0.2, 0.5, 4.0, -3.0, 6.0]

def _mujoco(mjm, mjd, eps):
    ndx = 2 * mjm.nv + mjm.na
    out = (np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu)), np.zeros((mjm.nsensordata, ndx)),
           np.zeros((mjm.nsensordata, mjm.nu)))
    mujoco.mjd_transitionFD(mjm, mjd, eps, True, *out)
    return out


def _check(case, label, bar=1e-9, agree=FD_AGREE):
    m, d, mjm, mjd = case
    before = {f: getattr(d, f).copy() for f in ("qpos", "qvel", "act", "ctrl")}
    ours = kd.transition_derivatives(m, d)
    fd, fd_fine = _mujoco(mjm, mjd, EPS), _mujoco(mjm, mjd, EPS / 10)
    for name, x, y, z in zip("ABCD", ours, fd, fd_fine, strict=True):
        assert x.shape == y.shape, f"{label} {name}: shape {x.shape}, MuJoCo {y.shape}"
        if not y.size:
            continue
        scale = np.abs(y).max() or 1.0
        spread = np.abs(z - y).max() / scale
        assert spread <= agree, f"{label} {name}: the oracle itself is unsettled here ({spread:.2g})"
        err = np.abs(x - y).max() / scale
        assert err <= max(3 * spread, bar), f"{label} {name}: relative error {err:.3g}, spread {spread:.3g}"
    for f, v in before.items():
        np.testing.assert_array_equal(getattr(d, f), v)
    return ours


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICITFAST", "IMPLICIT"])
def test_free_ball_hinge(integrator):
    case = _case(SMALL, 40, [0.7, 0.4, 0.1], kd.IntegratorType[integrator])
    ours = _check(case, integrator)
    m = case[0]
    assert m.na == 1 and m.nsensordata == 5 and np.abs(ours.C).max() > 0


def test_lone_free_body_under_implicitfast():
    """implicitfast's local solve of a lone free body's block with its gyroscopic derivative: the
    derivative of that solve (the bias's curvature on the block, the block's own system)."""
    case = _case(LONE, 40, [0.7, 0.4, 0.1], kd.IntegratorType.IMPLICITFAST, qvel_tail=LONE_SPIN)
    assert np.abs(case[3].qvel[-3:]).min() > 1.0  # still spinning about every axis
    _check(case, "lone free body")


def test_ctrl_at_limit_and_forcerange():
    # ctrl[0] at its upper limit (the inside value), actuator 2's force held at its forcerange
    m, d, mjm, mjd = case = _case(SMALL, 40, [1.0, 0.4, 0.9])
    assert mjd.actuator_force[2] == 0.5
    ours = _check(case, "limits")
    assert np.abs(ours.B[:, 0]).max() > 0 and not np.any(ours.B[:, 2])


def test_activation_dynamics():
    _check(_case((MODELS / "general_filterexact_actearly.xml").read_text(), 50, [0.3, -0.6, 0.5, 0.2]),
           "filterexact")


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICITFAST", "IMPLICIT"])
def test_muscles(integrator):
    """Under the implicit integrators qDeriv holds each muscle's velocity slope -F0 FL(l) FV'(v)
    (mjd_muscleGain_vel) times its activation: its change along the length and the velocity too."""
    _check(_case((MODELS / "muscle_fixed_tendon.xml").read_text(), 50, [0.5, 0.2, 0.7],
                 kd.IntegratorType[integrator], disable=int(kd.DisableBit.LIMIT)), f"muscles {integrator}")


def test_humanoid():
    xml = gym_model_path("humanoid").read_text()
    off = int(kd.DisableBit.CONTACT | kd.DisableBit.LIMIT)
    case = _case(xml, 30, 0.2, kd.IntegratorType.EULER, off)
    ours = _check(case, "humanoid")
    # and the same as kinedyn's own finite differences
    fd = kd.transition_fd(case[0], case[1], 1e-6, centered=True)
    assert np.abs(ours.A - fd.A).max() <= 1e-8 * np.abs(fd.A).max()


# gravity compensation: two bodies partly compensated, the hinge's share through its actuators
# (actuatorgravcomp); the free body spins, so the implicit integrator's bias curvature is exercised
GRAVCOMP = SMALL.replace('<body pos=".2 0 0"><joint name="h"',
                         '<body pos=".2 0 0" gravcomp=".7"><joint name="h"') \
    .replace('springref=".1"/>', 'springref=".1" actuatorgravcomp="true"/>') \
    .replace('<body pos=".2 0 0"><joint name="b"', '<body pos=".2 0 0" gravcomp="1.3"><joint name="b"')


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICIT"])
def test_gravcomp(integrator):
    case = _case(GRAVCOMP, 40, [0.7, 0.4, 0.1], kd.IntegratorType[integrator])
    m, d = case[0], case[1]
    assert m.body_gravcomp.sum() == 2.0 and m.jnt_actgravcomp.any()
    kd.forward(m, d)
    assert np.abs(d.qfrc_gravcomp).max() > 0.1
    _check(case, f"gravcomp {integrator}")


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICIT"])
def test_ball_and_free_springs(integrator):
    """Polynomial springs on the free joint (translation and rotation) and the ball."""
    xml = SMALL.replace("<freejoint/>", '<joint type="free" stiffness="4 2 1"/>').replace(
        'type="ball" damping=".3"/>', 'type="ball" damping=".3" stiffness="3 .5 1"/>')
    case = _case(xml, 40, [0.7, 0.4, 0.1], kd.IntegratorType[integrator])
    spring = np.abs(case[3].qfrc_spring)   # dofs: free 0-5, hinge 6, ball 7-9
    assert spring[0:3].max() > 0.1 and spring[3:6].max() > 0.1 and spring[7:10].max() > 0.01
    _check(case, f"ball and free springs {integrator}")


def test_fixed_tendon_spring():
    """A fixed tendon's polynomial spring beyond its deadband, with a damper, under implicitfast."""
    tendon = ('<tendon><fixed name="ft" stiffness="3 1 2" damping=".2" springlength="-.01 .01">'
              '<joint joint="h" coef="2"/></fixed></tendon>')
    xml = SMALL.replace("<actuator>", tendon + "<actuator>")
    xml = xml.replace("<sensor>", '<sensor><tendonpos tendon="ft"/>')
    case = _case(xml, 40, [0.7, 0.4, 0.1], kd.IntegratorType.IMPLICITFAST)
    assert abs(case[3].ten_length[0]) > 0.02   # beyond the deadband: the spring acts
    _check(case, "fixed tendon spring")


def test_humanoid_implicit():
    """The full mjd_smooth_vel (the RNE bias's velocity derivative) on a 27-dof tree."""
    xml = gym_model_path("humanoid").read_text()
    off = int(kd.DisableBit.CONTACT | kd.DisableBit.LIMIT)
    _check(_case(xml, 30, 0.2, kd.IntegratorType.IMPLICIT, off), "humanoid implicit")


def test_refusals():
    m = kd.Model.from_xml_string(SMALL)
    d = kd.Data(m)
    m.opt.integrator = kd.IntegratorType.RK4
    with pytest.raises(ValueError, match="RK4"):
        kd.transition_derivatives(m, d)
    m.opt.integrator = kd.IntegratorType.EULER
    with pytest.raises(ValueError, match="sensors must be"):
        kd.transition_derivatives(m, d, sensors="yes")
    d.qvel[0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        kd.transition_derivatives(m, d)
    # the noslip solver changes the forces after the optimum
    plane = '<worldbody><geom type="plane" size="5 5 .1"/>'
    noslip = kd.Model.from_xml_string(SMALL.replace("<worldbody>", plane).replace(
        '<option timestep="0.005"/>', '<option timestep="0.005" noslip_iterations="2"/>'))
    with pytest.raises(ValueError, match="noslip"):
        kd.transition_derivatives(noslip, kd.Data(noslip))
    with pytest.raises(ValueError, match=r"constraint_eps\): eps must be"):
        kd.transition_derivatives(m, kd.Data(m), constraint_eps=-1.0)
    # a body (adhesion) transmission, a sensor type not covered
    glue = SMALL.replace('<body pos="0 0 .3">', '<body name="box" pos="0 0 .3">')
    glue = kd.Model.from_xml_string(glue.replace(
        "<actuator>", '<actuator><adhesion body="box" ctrlrange="0 1" gain="2"/>'))
    with pytest.raises(ValueError, match="actuator 0: its transmission"):
        kd.transition_derivatives(glue, kd.Data(glue))
    frame = '<sensor><jointlimitfrc joint="h"/><framepos objtype="body" objname="world" ' \
        'reftype="body" refname="world"/>'
    limited = SMALL.replace('<joint name="h"', '<joint name="h" range="-2 2"')
    with_limit = kd.Model.from_xml_string(limited.replace("<sensor>", frame))
    with pytest.raises(ValueError, match="sensor 0: type JOINTLIMITFRC$"):
        kd.transition_derivatives(with_limit, kd.Data(with_limit))


def test_frame_sensors():
    frames = ('<sensor><framepos objtype="site" objname="s"/><framepos objtype="body" objname="tip"/>'
              '<framepos objtype="xbody" objname="tip"/><framepos objtype="geom" objname="g"/>')
    xml = SMALL.replace('<geom type="box"', '<site name="s" pos=".1 0 .05"/><geom name="g" type="box"')
    xml = xml.replace('<body pos=".2 0 0"><joint name="b"', '<body name="tip" pos=".2 0 0"><joint name="b"')
    _check(_case(xml.replace("<sensor>", frames), 40, [0.7, 0.4, 0.1]), "frames")


MOTION_SENSORS = (
    '<sensor><framequat objtype="site" objname="s"/><framequat objtype="body" objname="tip"/>'
    '<framexaxis objtype="geom" objname="g"/><frameyaxis objtype="xbody" objname="tip"/>'
    '<framezaxis objtype="site" objname="t"/><framelinvel objtype="site" objname="t"/>'
    '<framelinvel objtype="body" objname="tip"/><frameangvel objtype="xbody" objname="tip"/>'
    '<frameangvel objtype="geom" objname="g"/><velocimeter site="t"/><gyro site="t"/>'
    '<ballquat joint="b"/><ballangvel joint="b"/><subtreecom body="world"/><subtreecom body="tip"/>')


def test_spatial_tendon_length():
    """tendonpos of a spatial tendon: its Jacobian ten_J (its velocity: test_derivatives_sensor)."""
    xml = SMALL.replace('<geom type="box"', '<site name="s" pos=".1 0 .05"/><geom type="box"')
    xml = xml.replace('fromto="0 0 0 0 .2 .1"/>', 'fromto="0 0 0 0 .2 .1"/><site name="t" pos="0 .2 .1"/>')
    tendon = '<tendon><spatial name="sp"><site site="s"/><site site="t"/></spatial></tendon>'
    xml = xml.replace("<actuator>", tendon + "<actuator>")
    xml = xml.replace("<sensor>", '<sensor><tendonpos tendon="sp"/>')
    ours = _check(_case(xml, 40, [0.7, 0.4, 0.1]), "spatial tendonpos")
    assert np.abs(ours.C[0, :9]).max() > 0.05


@pytest.mark.parametrize("integrator", ["EULER", "IMPLICIT"])
def test_motion_sensors(integrator):
    """Orientation, velocity and com sensors (no reference frame), on a site of the ball's body
    (t), the free body's site and geom, and the bodies after the hinge."""
    xml = SMALL.replace('<geom type="box"', '<site name="s" pos=".1 0 .05"/><geom name="g" type="box"')
    xml = xml.replace('<body pos=".2 0 0"><joint name="b"', '<body name="tip" pos=".2 0 0"><joint name="b"')
    xml = xml.replace('fromto="0 0 0 0 .2 .1"/>', 'fromto="0 0 0 0 .2 .1"/><site name="t" pos=".05 .1 .02" '
                      'euler="20 -30 40"/>')
    ours = _check(_case(xml.replace("<sensor>", MOTION_SENSORS), 40, [0.7, 0.4, 0.1],
                        kd.IntegratorType[integrator]), f"motion sensors {integrator}")
    nv = 9
    assert np.abs(ours.C[:, :nv]).max() > 0.1 and np.abs(ours.C[:, nv:2 * nv]).max() > 0.1


def test_sensor_modes():
    # a rangefinder on the free body, hitting the hinge's capsule: not differentiated here
    xml = SMALL.replace("<sensor>", '<sensor><rangefinder site="rf"/>')
    xml = xml.replace('<geom type="box"', '<site name="rf" zaxis="1 0 0"/><geom type="box"')
    m, d, _, _ = _case(xml, 20, [0.2, 0.1, 0.0])
    filled = kd.transition_derivatives(m, d, sensors="fd")
    assert filled.fd_sensor_rows == [0]
    fd = kd.transition_fd(m, d)
    np.testing.assert_array_equal(filled.C[:1], fd.C[:1])
    none = kd.transition_derivatives(m, d, sensors="none")
    assert none.C.shape == (0, 2 * m.nv + m.na)
    np.testing.assert_array_equal(none.A, filled.A)


def test_out_and_a_model_changed_in_place():
    m, d, _, _ = _case(SMALL, 20, [0.2, 0.1, 0.0])
    first = kd.transition_derivatives(m, d)
    again = kd.transition_derivatives(m, d, out=first)
    assert again is first
    fresh = kd.transition_derivatives(m, d)
    np.testing.assert_array_equal(fresh.A, first.A)
    np.testing.assert_array_equal(fresh.D, first.D)
    with pytest.raises(ValueError, match="out C must be"):
        kd.transition_derivatives(m, d, sensors="none", out=first)
    # gravity compensation switched on in place: its unit, not bound for this model, is bound then
    a0 = first.A.copy()
    m.body_gravcomp[2] = 0.5
    assert np.abs(kd.transition_derivatives(m, d).A - a0).max() > 1e-3
    m.body_gravcomp[2] = 0.0
    # a refused feature written into a model array in place is still seen (checked every call)
    m.jnt_actfrclimited[1] = True
    with pytest.raises(ValueError, match="sensor 3: .*jointactuatorfrc of a joint with actuatorfrcrange"):
        kd.transition_derivatives(m, d, out=first)


def test_check_derivatives_stages():
    m, d, _, _ = _case(SMALL, 40, [1.0, 0.4, 0.9])
    report = kd.check_derivatives(m, d)
    assert not report.refused and not report.analytical_suspect, str(report)
    assert max(report.analytical.values()) < 1e-6 and set(report.analytical) == set(report.blocks)
    assert any("ctrlrange" in s for s in report.switches) and any("forcerange" in s for s in report.switches)
    plane = '<worldbody><geom type="plane" size="5 5 .1"/>'
    floor = kd.Model.from_xml_string(SMALL.replace("<worldbody>", plane))
    fd = kd.Data(floor)
    fd.qpos[2] = 0.05
    report = kd.check_derivatives(floor, fd)
    assert not report.refused and report.analytical
    assert any(s.startswith("constraint:") for s in report.switches), str(report)


# with a lone free box resting beside the tree (implicitfast's local block with contacts)
FLOOR = SMALL.replace('<worldbody>', '<worldbody><geom type="plane" size="5 5 .1"/>').replace(
    '<option timestep="0.005"/>', '<option timestep="0.005" cone="CONE"/>').replace(
    "</worldbody>", '<body pos="1 0 .03"><freejoint/><geom type="box" size=".12 .06 .03"/></body>'
    "</worldbody>")


# The analytical derivative is that of the solver's optimum; MuJoCo's differences are those of
# where its solver stops (tolerance 1e-8 by default): on humanoid-floor the two differ by 3.4e-5
# of A's largest entry at the default tolerance, 4e-8 at the tolerance below (independent of
# constraint_eps from 1e-7 to 1e-4). So the states with constraint rows are compared with the
# solver run to its optimum, at 1e-7 of the largest entry (or 3 spreads). With stiff contacts
# MuJoCo's own differences at eps and eps/10 disagree by up to ~1.6e-7 (the analytical matrices
# then lie within that spread of them), so the oracle's agreement bar is 1e-6 there.
CONSTRAINED_AGREE = 1e-6
OPTIMUM = '<option tolerance="1e-14" iterations="1000" ls_tolerance="1e-12"/>'
CONSTRAINED_BAR = 1e-7


def _at_optimum(xml):
    return xml.replace("<worldbody>", OPTIMUM + "<worldbody>", 1)


@pytest.mark.parametrize("integrator, cone", [("EULER", "pyramidal"), ("IMPLICITFAST", "elliptic")])
def test_contacts_at_the_solvers_optimum(integrator, cone):
    """The chain rule through the constraint force (derivative_constraint's G_q, G_v, H): the box
    and its links resting on the floor after 150 steps of MuJoCo's, in contact."""
    xml = _at_optimum(FLOOR.replace("CONE", cone))
    case = _case(xml, 150, [0.3, 0.2, 0.1], kd.IntegratorType[integrator])
    mjd = case[3]
    assert mjd.ncon >= 3 and mjd.nefc > 0, (mjd.ncon, mjd.nefc)
    _check(case, f"floor {integrator} {cone}", CONSTRAINED_BAR, CONSTRAINED_AGREE)


STACK = """<mujoco><option timestep="0.005"/>
<worldbody><geom type="plane" size="5 5 .1"/>
 <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
 <body pos=".02 .01 .3"><freejoint/><geom type="sphere" size=".1"/></body>
</worldbody></mujoco>"""


def test_contacts_between_two_trees():
    """A sphere resting on a box on the floor: the sphere-box contact couples the two free
    bodies, so H (and M + H) has entries outside M's tree pattern (_constrained_forward's dense
    factor; the floor contacts alone keep M's pattern and its sparse factor)."""
    case = _case(_at_optimum(STACK), 150, [], kd.IntegratorType.EULER)
    m, d, _, mjd = case
    assert mjd.ncon >= 5, mjd.ncon
    w = kd.Data(m)
    for f in ("qpos", "qvel", "qacc_warmstart"):
        getattr(w, f)[:] = getattr(d, f)
    kd.forward(m, w)
    h = kd.constraint_derivatives(m, w).dqfrc_dqacc
    assert np.abs(h[:6, 6:]).max() > 0.0
    _check(case, "stack", CONSTRAINED_BAR, CONSTRAINED_AGREE)


def test_humanoid_on_the_floor():
    """gymnasium's humanoid with its contacts and joint limits, 30 steps into MuJoCo's rollout."""
    case = _case(_at_optimum(gym_model_path("humanoid").read_text()), 30, 0.2, kd.IntegratorType.EULER)
    assert case[3].nefc > 0
    _check(case, "humanoid-floor", CONSTRAINED_BAR, CONSTRAINED_AGREE)


def test_check_derivatives_names_a_solver_short_of_its_optimum():
    """At the humanoid's own solver settings the solver stops (by its tolerance, under its
    iteration limit) where the constraint force is ~1e-4 from the optimum's: check_derivatives
    says so; run to the optimum, it does not."""
    xml = gym_model_path("humanoid").read_text()
    notes = []
    for source in (xml, _at_optimum(xml)):
        m, d, _, _ = _case(source, 30, 0.2, kd.IntegratorType.EULER)
        notes.append([s for s in kd.check_derivatives(m, d).switches if "from the optimum" in s])
    assert len(notes[0]) == 1 and not notes[1], notes


def test_control_delays_are_refused():
    """The step reads a delayed actuator's control from d.history, which the derivative does not
    follow: refused, as transition_fd (and MuJoCo's mjd_transitionFD) refuse it."""
    m = kd.Model.from_xml_string(SMALL.replace("<motor ", '<motor delay="0.01" nsample="4" ', 1))
    assert m.nhistory > 0
    with pytest.raises(ValueError, match="delays"):
        kd.transition_derivatives(m, kd.Data(m))
