"""kd.transition_fd and kd.inverse_fd against MuJoCo's mjd_transitionFD and mjd_inverseFD.

Oracle: MuJoCo itself, on the same model text and on states MuJoCo's own simulation visits
(contacts active), with the same eps. Each matrix must agree to 1e-6 of its largest entry
(issue 25); kinedyn's step reproduces MuJoCo's to ~1e-15, so the finite differences agree far
better than that (the transition matrices to ~1e-18 on these models).
Cases: gymnasium's humanoid standing on the floor (PGS; its RK4, which MuJoCo refuses, switched to
Euler; free joint, contacts, ctrl at both ends of ctrlrange), the bundled biped on its soles
(implicitfast, elliptic cones, position servos), and a small model with filter activations
(na > 0), sensors and a ctrl at its limit, whose polynomial damper (Euler) and velocity-dependent
gains (implicitfast) make the implicit matrix depend on qvel, act and ctrl: MuJoCo 4.0 makes it
again there (no skipfactor reuse). Also kd.trajectory.linearize along a MuJoCo simulation and
kd.check_derivatives.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import gym_model_path

import kinedyn as kd
from kinedyn.tools.derivatives import InverseFD

EPS = 1e-6
TOL = 1e-6   # of each matrix's largest entry

SMALL = """<mujoco><option timestep="0.005"/>
<worldbody><geom type="plane" size="5 5 .1"/>
 <body pos="0 0 .3"><freejoint/><site name="s"/><geom type="box" size=".1 .1 .1"/>
  <body pos=".2 0 0"><joint name="h" type="hinge" axis="0 1 0" damping=".1 .5 .2"/>
   <geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/></body></body>
</worldbody>
<actuator><motor joint="h" ctrllimited="true" ctrlrange="-1 1"/>
 <general joint="h" dyntype="filter" dynprm=".05" gaintype="affine" gainprm="5 0 .3" biastype="affine"
  biasprm="0 -5 -.5"/>
 <general joint="h" gaintype="affine" gainprm="2 0 .4"/>
</actuator>
<sensor><jointpos joint="h"/><framepos objtype="body" objname="world"/><accelerometer site="s"/>
 <touch site="s"/></sensor>
</mujoco>"""


def _settled(xml: str, nstep: int, ctrl, integrator=None):
    """(m, d, mjm, mjd): MuJoCo stepped nstep times under ctrl, kinedyn's Data given its state."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = kd.Model.from_xml_string(xml)
    if integrator is not None:
        mjm.opt.integrator = int(integrator)
        m.opt.integrator = integrator
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[:] = ctrl
    for _ in range(nstep):
        mujoco.mj_step(mjm, mjd)
    d = kd.Data(m)
    for f in ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "qacc"):
        getattr(d, f)[:] = getattr(mjd, f)
    d.time = mjd.time
    return m, d, mjm, mjd


@pytest.fixture(scope="module")
def humanoid():
    xml = gym_model_path("humanoid").read_text()
    mjm = mujoco.MjModel.from_xml_string(xml)
    # ctrl at both ends of ctrlrange (one-sided differences) and inside it
    lo, hi = mjm.actuator_ctrlrange.T
    ctrl = np.where(np.arange(mjm.nu) % 3 == 0, hi, np.where(np.arange(mjm.nu) % 3 == 1, lo, 0.3 * hi))
    case = _settled(xml, 100, ctrl, kd.IntegratorType.EULER)  # its own RK4: MuJoCo refuses it
    assert case[3].ncon > 0
    return case


@pytest.fixture(scope="module")
def biped():
    xml = kd.models.xml("biped")
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
    ctrl = mjd.qpos[7:7 + mjm.nu].copy()
    ctrl[0] = mjm.actuator_ctrlrange[0, 1]  # one servo at the end of its range
    case = _settled(xml, 50, ctrl)
    assert case[3].ncon > 0 and case[0].opt.integrator == kd.IntegratorType.IMPLICITFAST
    return case


@pytest.fixture(scope="module", params=["euler", "implicit", "implicitfast"])
def small(request):
    integrator = kd.IntegratorType[request.param.upper()]
    case = _settled(SMALL, 60, [1.0, 0.3, 0.5], integrator)
    assert case[0].na == 1 and case[0].nu == 3 and case[0].nsensordata > 0 and case[3].ncon > 0
    return case


def _mujoco_transition(mjm, mjd, centered):
    ndx = 2 * mjm.nv + mjm.na
    out = (np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu)), np.zeros((mjm.nsensordata, ndx)),
           np.zeros((mjm.nsensordata, mjm.nu)))
    mujoco.mjd_transitionFD(mjm, mjd, EPS, centered, *out)
    return out


def _mujoco_inverse(mjm, mjd, actuation):
    mujoco.mj_forward(mjm, mjd)  # qacc, at which the inverse is differenced
    nv, ns = mjm.nv, mjm.nsensordata
    out = [np.zeros((nv, nv)) for _ in range(3)] + [np.zeros((nv, ns)) for _ in range(3)]
    out.append(np.zeros((nv, mjm.nC)))
    mujoco.mjd_inverseFD(mjm, mjd, EPS, actuation, *out)
    return out


def _assert_close(ours, theirs, names, label):
    for name, x, y in zip(names, ours, theirs, strict=True):
        assert x.shape == y.shape, f"{label} {name}: shape {x.shape}, MuJoCo {y.shape}"
        scale = np.abs(y).max() if y.size else 0.0
        err = np.abs(x - y).max() if y.size else 0.0
        assert err <= TOL * max(scale, 1e-12), \
            f"{label} {name}: max error {err:.3g}, largest entry {scale:.3g}"


def _check_transition(case, centered, label):
    m, d, mjm, mjd = case
    before = {f: getattr(d, f).copy() for f in ("qpos", "qvel", "act", "ctrl", "qacc_warmstart")}
    ours = kd.transition_fd(m, d, eps=EPS, centered=centered)
    _assert_close(ours, _mujoco_transition(mjm, mjd, centered), "ABCD", f"{label} centered={centered}")
    for f, v in before.items():  # the caller's Data is not written
        np.testing.assert_array_equal(getattr(d, f), v)
    return ours


@pytest.mark.parametrize("centered", [False, True])
def test_transition_humanoid_floor(humanoid, centered):
    ours = _check_transition(humanoid, centered, "humanoid-floor")
    m = humanoid[0]
    # a ctrl at its upper limit is differenced backwards: its column is not zero
    assert np.abs(ours.B[:, 0]).max() > 0 and ours.C.shape == (0, 2 * m.nv + m.na)


def test_transition_biped_implicitfast(biped):
    _check_transition(biped, False, "biped")


@pytest.mark.parametrize("centered", [False, True])
def test_transition_activations_sensors(small, centered):
    _check_transition(small, centered, f"small integrator={small[0].opt.integrator}")


@pytest.mark.parametrize("actuation", [False, True])
def test_inverse_humanoid_floor(humanoid, actuation):
    m, d, mjm, mjd = humanoid
    theirs = _mujoco_inverse(mjm, mjd, actuation)
    d.qacc[:] = mjd.qacc
    ours = kd.inverse_fd(m, d, eps=EPS, actuation=actuation)
    _assert_close(ours, theirs, ours._fields, f"humanoid-floor actuation={actuation}")


def test_inverse_sensors(small):
    m, d, mjm, mjd = small
    theirs = _mujoco_inverse(mjm, mjd, True)
    d.qacc[:] = mjd.qacc
    _assert_close(kd.inverse_fd(m, d, eps=EPS, actuation=True), theirs, InverseFD._fields,
                  "small")


def test_threads_change_no_number(humanoid):
    m, d, _, _ = humanoid
    one = kd.transition_fd(m, d, nthread=1)
    two = kd.transition_fd(m, d, nthread=2)
    for x, y in zip(one, two, strict=True):
        np.testing.assert_array_equal(x, y)


def test_misuse(small):
    m, d, _, _ = small
    with pytest.raises(ValueError, match="eps"):
        kd.transition_fd(m, d, eps=0.0)
    with pytest.raises(TypeError, match="eps"):
        kd.inverse_fd(m, d, eps="1e-6")
    with pytest.raises(TypeError, match="swapped"):
        kd.transition_fd(d, m)
    bad = kd.Data(m)
    bad.qpos[:], bad.qvel[:] = d.qpos, d.qvel
    bad.qvel[2] = np.nan
    with pytest.raises(ValueError, match="qvel"):
        kd.transition_fd(m, bad)
    with pytest.raises(ValueError, match="qvel"):
        kd.inverse_fd(m, bad)
    saved = m.opt.integrator
    m.opt.integrator = kd.IntegratorType.RK4
    try:
        with pytest.raises(ValueError, match="RK4"):
            kd.transition_fd(m, d)
    finally:
        m.opt.integrator = saved


def test_linearize_along_mujoco_trajectory():
    """kd.trajectory.linearize at every step of a MuJoCo simulation equals mjd_transitionFD there."""
    mjm = mujoco.MjModel.from_xml_string(SMALL)
    mjd = mujoco.MjData(mjm)
    m = kd.Model.from_xml_string(SMALL)
    rng = np.random.default_rng(0)
    controls = np.clip(rng.normal(0.5, 0.6, size=(12, mjm.nu)), -1.2, 1.2)  # ctrl 0 at and past its limits
    states, warmstart, expected = [], [], []
    for u in controls:
        mjd.ctrl[:] = u
        states.append(np.concatenate(([mjd.time], mjd.qpos, mjd.qvel, mjd.act)))
        warmstart.append(mjd.qacc_warmstart.copy())
        expected.append(_mujoco_transition(mjm, mjd, False))
        mujoco.mj_step(mjm, mjd)
    ours = kd.trajectory.linearize(m, states, controls, warmstart=warmstart)
    ndx = 2 * m.nv + m.na
    assert ours.A.shape == (12, ndx, ndx) and ours.B.shape == (12, ndx, m.nu)
    for t, theirs in enumerate(expected):
        _assert_close([x[t] for x in ours], theirs, "ABCD", f"step {t}")
    with pytest.raises(ValueError, match="method"):
        kd.trajectory.linearize(m, states, controls, method="analytical")
    with pytest.raises(ValueError, match="controls"):
        kd.trajectory.linearize(m, states, controls[:-1])


def test_check_derivatives(humanoid):
    m, d, _, _ = humanoid
    nv = m.nv
    report = kd.check_derivatives(m, d, eps=1e-6)
    # its blocks are the disagreements of transition_fd's own evaluations
    runs = [kd.transition_fd(m, d, 1e-6), kd.transition_fd(m, d, 1e-7), kd.transition_fd(m, d, 1e-6, True)]
    block = [r.A[:nv, nv:2 * nv] for r in runs]
    expected = max(np.abs(b - block[0]).max() for b in block[1:]) / np.abs(block[0]).max()
    assert report.blocks["q/v"] == pytest.approx(expected, rel=1e-12)
    assert set(report.blocks) == {"q/q", "q/v", "q/u", "v/q", "v/v", "v/u"}  # no act, no sensors
    # eps = 1e-3 straddles the contacts' switches: some columns disagree
    assert kd.check_derivatives(m, d, eps=1e-3).suspect
    # a pendulum swinging freely is smooth at eps = 1e-6: nothing is suspect
    pm = kd.models.load("pendulum")
    pm.opt.integrator = kd.IntegratorType.EULER
    pd = kd.Data(pm)
    pd.qpos[:] = 0.5
    quiet = kd.check_derivatives(pm, pd)
    assert not quiet.suspect and max(quiet.blocks.values()) < 1e-3, str(quiet)


def test_refuses_actuator_callbacks():
    user = '<general joint="h" gaintype="user"/></actuator>'
    m = kd.Model.from_xml_string(SMALL.replace("</actuator>", user))
    m.set_actuator_callbacks(gain=lambda m, d, i: 1.0)
    d = kd.Data(m)
    for fd in (kd.transition_fd, kd.inverse_fd):
        with pytest.raises(NotImplementedError, match="callbacks"):
            fd(m, d)
