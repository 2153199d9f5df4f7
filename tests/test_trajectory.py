"""kinedyn.tools.trajectory and differentiate_pos against MuJoCo.

Oracles:
* ``differentiate_pos`` vs ``mujoco.mj_differentiatePos`` on random trees (ball and free
  joints included), the oracle's bar.
* Every method's torques vs ``mujoco.mj_inverse`` on the same samples (the result's qpos,
  qvel, qacc): the oracle's bar (1e-9 relative, 1e-12 absolute).
* Simulate-then-recover: a trajectory stepped by ``mj_step`` (Euler, damping off) with
  random controls and applied forces; "fd" must give back the generalized force that
  drove each step. The differences divide the rounding of the stored qpos (eps |q|) by h
  twice, so the bar is 10 * 2 eps |q| / h^2 * max row sum of |M| (plus 1e-9 relative).
* Controls: on models whose actuators span the joints, ctrl=True must give back the
  controls that drove the simulation.
* "central" and "spline" converge on a smooth analytic trajectory.
"""

from __future__ import annotations

from contextlib import contextmanager

import mujoco
import numpy as np
import pytest
from cases import load as _load
from cases import pair
from oracle import assert_close, model_file
from strategies import random_mjcf_text, random_state

import kinedyn as kd
from kinedyn.tools import trajectory
from kinedyn.viewer import plotting

# sample spacing of the simulated trajectories: small enough for explicit Euler on the stiff servos
H = 0.0005
RANDOM = [pytest.param(("seed", s), id=f"seed{s}") for s in range(0, 30, 3)]
MODEL_NAMES = ("motor_pendulum", "free_motor_gear6", "jointinparent_ball", "ball_position_servo",
                "position_servos")
MODELS = [pytest.param(("path", str(model_file(n))), id=n) for n in MODEL_NAMES]


@contextmanager
def _euler_without_damping(m, mjm, h):
    """Euler at step h with dampers off on both models (restored after; cases.pair hands out copies)."""
    saved = (m.opt.disableflags, m.opt.integrator, m.opt.timestep, mjm.opt.integrator, mjm.opt.timestep,
             mjm.opt.disableflags)
    m.opt.integrator = kd.IntegratorType.EULER
    m.opt.timestep = h
    mjm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mjm.opt.timestep = h
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_DAMPER
    m.opt.disableflags |= kd.DisableBit.DAMPER
    try:
        yield
    finally:
        (m.opt.disableflags, m.opt.integrator, m.opt.timestep, mjm.opt.integrator, mjm.opt.timestep,
         mjm.opt.disableflags) = saved


def _simulate(m, mjm, mjd, rng, steps, xfrc=True):
    """mj_step from a random state with random controls and applied forces (call inside
    _euler_without_damping): (t, qpos, driving generalized force per step, ctrl, qfrc_applied,
    xfrc_applied, act), one row per sample."""
    mujoco.mj_resetData(mjm, mjd)
    qpos, qvel, _, act = random_state(rng, mjm)
    mjd.qpos[:], mjd.qvel[:], mjd.act[:] = qpos, qvel, act
    times, positions, forces, ctrls, qfrcs, xfrcs, acts = [], [], [], [], [], [], []
    for _ in range(steps):
        mjd.ctrl[:] = rng.uniform(-0.5, 0.5, size=mjm.nu)
        mjd.qfrc_applied[:] = rng.normal(size=mjm.nv)
        if xfrc:
            mjd.xfrc_applied[1:] = rng.normal(scale=0.3, size=(mjm.nbody - 1, 6))
        times.append(mjd.time)
        positions.append(mjd.qpos.copy())
        ctrls.append(mjd.ctrl.copy())
        qfrcs.append(mjd.qfrc_applied.copy())
        xfrcs.append(mjd.xfrc_applied.copy())
        acts.append(mjd.act.copy())
        mujoco.mj_forward(mjm, mjd)
        applied = mjd.qfrc_applied.copy()
        for b in range(1, mjm.nbody):
            force, torque = mjd.xfrc_applied[b, :3], mjd.xfrc_applied[b, 3:]
            mujoco.mj_applyFT(mjm, mjd, force, torque, mjd.xipos[b], b, applied)
        forces.append(applied + mjd.qfrc_actuator)
        mujoco.mj_step(mjm, mjd)
    if any(mjd.warning[w].number for w in (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL,
                                           mujoco.mjtWarning.mjWARN_BADQPOS)):
        pytest.skip("MuJoCo's simulation went unstable (explicit Euler without damping) and reset")
    return tuple(np.array(x) for x in (times, positions, forces, ctrls, qfrcs, xfrcs, acts))


# ---- differentiate_pos ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(0, 60, 4))
def test_differentiate_pos_matches_mujoco(seed):
    m, _, mjm, _ = pair(random_mjcf_text(seed), f"random tree {seed}")
    rng = np.random.default_rng(seed)
    q1, _, _, _ = random_state(rng, mjm)
    q2, _, _, _ = random_state(rng, mjm)
    for h in (1e-3, 0.37, -0.2):
        theirs = np.zeros(mjm.nv)
        mujoco.mj_differentiatePos(mjm, theirs, h, q1, q2)
        assert_close(f"differentiate_pos(h={h})", kd.differentiate_pos(m, q1, q2, h), theirs)
    # and it inverts integrate_pos
    v = kd.differentiate_pos(m, q1, q2, 0.5)
    back = q1.copy()
    kd.integrate_pos(m, back, v, 0.5)
    back_mj = q1.copy()
    mujoco.mj_integratePos(mjm, back_mj, v, 0.5)
    assert_close("integrate_pos(differentiate_pos)", back, back_mj)


def test_differentiate_pos_checks_arguments():
    m, _, _, _ = pair(random_mjcf_text(1), "random tree 1")
    with pytest.raises(ValueError, match="qpos2"):
        kd.differentiate_pos(m, np.zeros(m.nq), np.zeros(m.nq + 1), 0.1)
    with pytest.raises(ValueError, match="h"):
        kd.differentiate_pos(m, np.zeros(m.nq), np.zeros(m.nq), 0.0)


# ---- against mj_inverse -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", trajectory.METHODS)
@pytest.mark.parametrize("source", MODELS + RANDOM)
def test_torques_match_mj_inverse_on_the_same_samples(source, method):
    m, _, mjm, mjd = _load(source)
    rng = np.random.default_rng(5)
    with _euler_without_damping(m, mjm, H):
        t, qpos, *_ = _simulate(m, mjm, mjd, rng, 40, xfrc=False)
        res = trajectory.inverse_dynamics(m, t, qpos, method=method)
        assert res.qfrc_inverse.shape == (res.t.size, m.nv)
        for row in range(res.t.size):
            mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = res.qpos[row], res.qvel[row], res.qacc[row]
            mjd.qfrc_applied[:] = 0.0
            mjd.xfrc_applied[:] = 0.0
            mujoco.mj_inverse(mjm, mjd)
            assert_close(f"qfrc_inverse at t={res.t[row]:g}", res.qfrc_inverse[row], mjd.qfrc_inverse)
        np.testing.assert_array_equal(res.qfrc_joint, res.qfrc_inverse)  # no external forces


# ---- simulate, then recover ----------------------------------------------------------------------------


@pytest.mark.parametrize("source", MODELS + RANDOM)
def test_fd_recovers_the_forces_that_drove_a_simulation(source):
    m, _, mjm, mjd = _load(source)
    rng = np.random.default_rng(7)
    with _euler_without_damping(m, mjm, H):
        t, qpos, forces, _, applied, xapplied, _ = _simulate(m, mjm, mjd, rng, 60)
        res = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, xfrc_applied=xapplied)
        np.testing.assert_array_equal(res.index, np.arange(1, t.size - 1))
        # qfrc_inverse is what drove the step: actuators + applied + J^T xfrc. Bar: the rounding of
        # the stored qpos (eps |q|) divided twice by h, times M, with a safety factor of 10
        full = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, mjd, full)
        tol = 1e-9 * np.abs(forces).max() + 10 * 2 * np.finfo(float).eps * np.abs(qpos).max() / H**2 \
            * np.abs(full).sum(axis=1).max()
        assert_close("recovered generalized force", res.qfrc_inverse, forces[res.index], rtol=0, atol=tol)
        # qfrc_joint removes the external part: what the actuators supplied
        actuator = forces[res.index] - (res.qfrc_inverse - res.qfrc_joint)
        assert_close("recovered actuator force", res.qfrc_joint, actuator, rtol=0, atol=tol)


@pytest.mark.parametrize("name", ["motor_pendulum", "free_motor_gear6", "jointinparent_ball"])
def test_ctrl_recovers_the_controls_that_drove_a_simulation(name):
    """Motors that span the dofs one-to-one (or more): the recovered controls reproduce the motion."""
    m, d, mjm, mjd = pair(model_file(name).read_text(), name)
    rng = np.random.default_rng(8)
    with _euler_without_damping(m, mjm, H):
        t, qpos, _, ctrls, applied, _, _ = _simulate(m, mjm, mjd, rng, 40, xfrc=False)
        res = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, ctrl=True)
        assert res.ctrl.shape == (res.t.size, m.nu)
        scale = np.abs(res.qfrc_joint).max()
        assert np.all(res.ctrl_residual <= 1e-7 * scale), res.ctrl_residual.max()
        if np.linalg.matrix_rank(d.actuator_moment) == m.nu:  # unique controls: they are the ones used
            np.testing.assert_allclose(res.ctrl, ctrls[res.index], atol=1e-6)
        # stepping with the recovered controls from the same start reproduces the samples
        mjd.qpos[:] = qpos[res.index[0]]
        mjd.qvel[:] = res.qvel[0]
        for row in range(res.t.size - 1):
            mjd.ctrl[:] = res.ctrl[row]
            mjd.qfrc_applied[:] = applied[res.index[row]]
            mujoco.mj_step(mjm, mjd)
        assert_close("qpos after replaying the controls", mjd.qpos, qpos[res.index[-1]], rtol=0, atol=1e-6)


# ---- accuracy of central differences and splines -------------------------------------------------------


def _analytic(m, t):
    """q(t) = a sin(w t + p) per hinge/slide coordinate (random trees without ball/free joints)."""
    rng = np.random.default_rng(0)
    a, w, p = rng.uniform(0.2, 0.8, m.nq), rng.uniform(1.0, 3.0, m.nq), rng.uniform(0, 1, m.nq)
    q = a * np.sin(np.outer(t, w) + p)
    v = a * w * np.cos(np.outer(t, w) + p)
    acc = -a * w * w * np.sin(np.outer(t, w) + p)
    return q, v, acc


def _hinge_tree():
    for seed in range(100):
        text = random_mjcf_text(seed, max_bodies=4)
        if "ball" not in text and "free" not in text:
            return pair(text, f"random tree {seed}")
    raise AssertionError("no hinge/slide-only random tree in 100 seeds")


def test_central_is_second_order_and_spline_is_accurate():
    m, d, _, _ = _hinge_tree()
    errors = {}
    for h in (0.01, 0.005):
        t = np.arange(0.0, 1.0 + h / 2, h)
        q, v, acc = _analytic(m, t)
        for method in ("central", "spline"):
            res = trajectory.inverse_dynamics(m, t, q, method=method)
            inner = slice(5, -5)
            errors[method, h] = (np.abs(res.qvel[inner] - v[res.index][inner]).max(),
                                 np.abs(res.qacc[inner] - acc[res.index][inner]).max())
    ratio = errors["central", 0.01][1] / errors["central", 0.005][1]
    assert 3.5 < ratio < 4.5, errors  # O(h^2)
    assert errors["spline", 0.005][0] < 1e-7 and errors["spline", 0.005][1] < 1e-4, errors


def test_spline_quaternion_rates():
    """A ball joint turning at constant body rate w: the spline gives back w and zero acceleration."""
    xml = """<mujoco><option><flag constraint="disable" contact="disable"/></option><worldbody>
      <body><joint name="ball" type="ball"/><geom size=".1" pos=".2 0 0"/></body></worldbody></mujoco>"""
    m, d, _, _ = pair(xml, "ball")
    w = np.array([0.3, -1.2, 0.7])
    t = np.linspace(0.0, 2.0, 101)
    qpos = np.empty((t.size, 4))
    for k, tk in enumerate(t):
        q = np.array([1.0, 0.0, 0.0, 0.0])
        kd.integrate_pos(m, q, w, tk)
        qpos[k] = -q if k % 2 else q  # sign flips must not matter
    res = trajectory.inverse_dynamics(m, t, qpos, method="spline")
    np.testing.assert_allclose(res.qvel[5:-5], np.broadcast_to(w, (t.size - 10, 3)), atol=1e-6)
    np.testing.assert_allclose(res.qacc[5:-5], 0.0, atol=1e-4)


# ---- files and inputs -----------------------------------------------------------------------------------


def test_csv_and_npz_round_trip(tmp_path):
    m, _, mjm, mjd = _load(MODELS[1].values[0])  # free joint: root[0]..root[6] columns
    with _euler_without_damping(m, mjm, H):
        t, qpos, *_ = _simulate(m, mjm, mjd, np.random.default_rng(2), 12)
        path = tmp_path / "traj.csv"
        trajectory.save_csv(path, t, qpos, m)
        header = path.read_text().splitlines()[0].split(",")
        assert header == ["time", *trajectory.qpos_names(m)]
        t2, q2 = trajectory.load(path, m)
        np.testing.assert_array_equal(t2, t)
        np.testing.assert_array_equal(q2, qpos)
        # columns in another order are matched by name
        order = [0, *range(len(header) - 1, 0, -1)]
        table = np.loadtxt(path, delimiter=",", skiprows=1)[:, order]
        shuffled = tmp_path / "shuffled.csv"
        np.savetxt(shuffled, table, delimiter=",", header=",".join(header[i] for i in order), comments="",
                   fmt="%.17g")
        np.testing.assert_array_equal(trajectory.load(shuffled, m)[1], qpos)
        # NPZ
        npz = tmp_path / "traj.npz"
        np.savez(npz, time=t, qpos=qpos)
        t3, q3 = trajectory.load(npz)
        np.testing.assert_array_equal(q3, qpos)
        # results
        res = trajectory.inverse_dynamics(m, t, qpos, ctrl=True)
        res.to_csv(tmp_path / "out.csv")
        res.to_npz(tmp_path / "out.npz")
        assert res.plot(tmp_path / "out.png") == tmp_path / "out.png"
        figure = res.plot()  # no path: the open figure, torque and ctrl panels
        assert [ax.get_title() for ax in figure.axes][1] == "ctrl"
        plotting.pyplot().close(figure)
        out = np.loadtxt(tmp_path / "out.csv", delimiter=",", skiprows=1)
        assert out.shape[0] == res.t.size
        with np.load(tmp_path / "out.npz") as z:
            np.testing.assert_array_equal(z["qfrc_inverse"], res.qfrc_inverse)
            np.testing.assert_array_equal(z["ctrl"], res.ctrl)
        assert (tmp_path / "out.png").stat().st_size > 1000


def test_bad_inputs(tmp_path):
    m, _, _, _ = _load(MODELS[0].values[0])
    t = np.arange(10) * 0.01
    q = np.zeros((10, m.nq))
    with pytest.raises(ValueError, match="uniformly"):
        trajectory.inverse_dynamics(m, t ** 1.5, q)
    trajectory.inverse_dynamics(m, t ** 1.5, q, method="spline")  # splines accept any spacing
    with pytest.raises(ValueError, match="qpos"):
        trajectory.inverse_dynamics(m, t, np.zeros((9, m.nq)))
    bad = q.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match=r"qpos\[3, 0\]"):
        trajectory.inverse_dynamics(m, t, bad)
    with pytest.raises(ValueError, match="increase"):
        trajectory.inverse_dynamics(m, t[::-1], q)
    with pytest.raises(ValueError, match="method"):
        trajectory.inverse_dynamics(m, t, q, method="euler")
    with pytest.raises(ValueError, match="qfrc_applied"):
        trajectory.inverse_dynamics(m, t, q, qfrc_applied=np.zeros((3, m.nv)))
    path = tmp_path / "x.csv"
    path.write_text("time,elbw\n0,1\n0.1,2\n")
    with pytest.raises(KeyError, match="elbw"):
        trajectory.load(path, m)
    path.write_text("t,hinge\n0,1\n")
    with pytest.raises(KeyError, match="time"):
        trajectory.load(path)
    path.write_text("time,hinge\n0,1\n\n0.1,x\n")  # blank lines skipped; lines counted in the file
    with pytest.raises(ValueError, match=r"x.csv, line 4: not a number"):
        trajectory.load(path)
    path.write_text("time,hinge\n0,1\n0.1\n")
    with pytest.raises(ValueError, match=r"line 3: 1 values, the header has 2"):
        trajectory.load(path)



# ---- implicit damping (discrete=True) ----------------------------------------------------------------


# the sources with joint damping (the others have none: nothing for discrete=True to undo)
DAMPED_IDS = {"jointinparent_ball", "ball_position_servo", "position_servos",
              "seed3", "seed6", "seed9", "seed15", "seed21", "seed24", "seed27"}
DAMPED = [p for p in MODELS + RANDOM if p.id in DAMPED_IDS]


@pytest.mark.parametrize("source", DAMPED)
def test_discrete_matches_mj_inverse_invdiscrete_and_recovers_damped_simulations(source):
    """Euler with joint damping: mj_step solves (M + h B) qacc = f; discrete=True gives f back."""
    m, _, mjm, mjd = _load(source)
    assert m.dof_damping.any(), "a DAMPED source without joint damping"
    rng = np.random.default_rng(9)
    with _euler_without_damping(m, mjm, H):
        # dampers back on: the point of this test
        mjm.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
        m.opt.disableflags &= ~int(kd.DisableBit.DAMPER)
        t, qpos, forces, _, applied, xapplied, _ = _simulate(m, mjm, mjd, rng, 40)
        res = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, xfrc_applied=xapplied,
                                          discrete=True)
        mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
        try:
            for row in range(res.t.size):
                mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = res.qpos[row], res.qvel[row], res.qacc[row]
                mujoco.mj_inverse(mjm, mjd)
                # MuJoCo converts qacc with a solve, M^-1 (M + h B) qacc, and multiplies by M again:
                # round-off at the scale of the largest component, so the floor is normwise
                assert_close(f"qfrc_inverse (invdiscrete) at t={res.t[row]:g}", res.qfrc_inverse[row],
                             mjd.qfrc_inverse, atol=1e-12 + 1e-9 * np.abs(mjd.qfrc_inverse).max())
        finally:
            mjm.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
        full = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, mjd, full)
        tol = 1e-9 * np.abs(forces).max() + 10 * 2 * np.finfo(float).eps * np.abs(qpos).max() / H**2 \
            * np.abs(full).sum(axis=1).max()
        assert_close("recovered generalized force (damped)", res.qfrc_inverse, forces[res.index], rtol=0,
                     atol=tol)
        # without discrete=True the damping is off by h B qacc (up to the round-off of MuJoCo's
        # M^-1 (M + h B) qacc, normwise as above)
        plain = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, xfrc_applied=xapplied)
        np.testing.assert_allclose(res.qfrc_inverse - plain.qfrc_inverse, H * m.dof_damping * res.qacc,
                                   rtol=1e-9, atol=1e-12 + 1e-12 * np.abs(res.qfrc_inverse).max())
    with pytest.raises(ValueError, match="Euler"):
        saved = m.opt.integrator
        m.opt.integrator = kd.IntegratorType.RK4
        try:
            trajectory.inverse_dynamics(m, t, qpos, discrete=True)
        finally:
            m.opt.integrator = saved


DELAYED = ("position_servos", "cylinder", "intvelocity", "general_filterexact_actearly",
           "muscle_fixed_tendon", "damper")


@pytest.mark.parametrize("name", DELAYED)
def test_ctrl_plans_delayed_actuators_one_step_ahead(name):
    """Activation dynamics without actearly: ctrl at sample k sets the force at k+1. The planned
    controls, replayed by mj_step from the same state and activation, retrace the samples."""
    m, d, mjm, mjd = pair(model_file(name).read_text(), name)
    rng = np.random.default_rng(10)
    with _euler_without_damping(m, mjm, H):
        t, qpos, _, _, applied, _, acts = _simulate(m, mjm, mjd, rng, 30, xfrc=False)
        res = trajectory.inverse_dynamics(m, t, qpos, qfrc_applied=applied, ctrl=True, act0=acts[1])
        scale = np.abs(res.qfrc_inverse).max()
        assert np.all(res.ctrl_residual <= 1e-7 * scale), res.ctrl_residual
        mujoco.mj_resetData(mjm, mjd)
        mjd.qpos[:], mjd.qvel[:], mjd.act[:] = qpos[res.index[0]], res.qvel[0], acts[1]
        for row in range(res.t.size - 1):
            mjd.ctrl[:] = res.ctrl[row]
            mjd.qfrc_applied[:] = applied[res.index[row]]
            mujoco.mj_step(mjm, mjd)
            assert_close(f"qpos replayed to sample {res.index[row] + 1}", mjd.qpos, qpos[res.index[row] + 1],
                         rtol=0, atol=1e-6)


# ---- known contacts ----------------------------------------------------------------------------------


def _swaying_biped(n=40):
    """The bundled biped's joints swaying (torso on its free joint, sampled at the model's step)."""
    m = kd.models.load("biped")
    t = np.arange(n) * m.opt.timestep
    qpos = np.tile(m.qpos0, (n, 1))
    qpos[:, 2] = 0.62 + 0.02 * np.sin(2 * np.pi * t)
    qpos[:, 7:] += 0.2 * np.sin(2 * np.pi * 1.5 * t)[:, None] * np.linspace(0.5, 1.0, m.nq - 7)
    return m, t, qpos


@pytest.mark.parametrize("support", ["double", "right", "switching"])
def test_known_contacts_supply_the_free_joint_and_drive_mujoco_to_the_samples(support):
    """The site wrenches take the free joint's generalised force; applied in MuJoCo (as
    xfrc_applied on the foot bodies, the joint torques as qfrc_applied) they reproduce the
    sampled accelerations."""
    m, t, qpos = _swaying_biped()
    mask = None
    if support == "right":
        mask = np.column_stack([np.ones(len(t), bool), np.zeros(len(t), bool)])
    elif support == "switching":
        mask = np.column_stack([t < t[len(t) // 2], t >= t[len(t) // 3]])
    res = trajectory.inverse_dynamics(m, t, qpos, contacts=["r_sole", "l_sole"], in_contact=mask)
    assert res.contact_wrench.shape == (len(res.t), 2, 6)
    assert_close("free-joint residual", res.qfrc_joint[:, :6], np.zeros((len(res.t), 6)),
                 atol=1e-9 * np.abs(res.qfrc_inverse).max())
    if mask is not None:
        off = ~mask[res.index]
        assert np.all(res.contact_wrench[off] == 0)
    mjm = mujoco.MjModel.from_xml_string(kd.models.xml("biped"))
    # the joint torques stand in for the servos: no actuator force, no contact of its own
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_ACTUATION
    mjd = mujoco.MjData(mjm)
    sites = [mjm.site(n).id for n in res.contact_sites]
    for row in range(len(res.t)):
        mjd.qpos[:], mjd.qvel[:] = res.qpos[row], res.qvel[row]
        mjd.qfrc_applied[:] = res.qfrc_joint[row]
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_comPos(mjm, mjd)
        mjd.xfrc_applied[:] = 0.0
        for k, s in enumerate(sites):
            b = mjm.site_bodyid[s]
            force, torque = res.contact_wrench[row, k, :3], res.contact_wrench[row, k, 3:]
            mjd.xfrc_applied[b, :3] += force
            mjd.xfrc_applied[b, 3:] += torque + np.cross(mjd.site_xpos[s] - mjd.xipos[b], force)
        mujoco.mj_forward(mjm, mjd)
        assert_close(f"qacc at sample {row}", mjd.qacc, res.qacc[row], rtol=1e-7,
                     atol=1e-7 * np.abs(res.qacc).max())


def test_known_contacts_argument_errors():
    m, t, qpos = _swaying_biped(10)
    with pytest.raises(KeyError):
        trajectory.inverse_dynamics(m, t, qpos, contacts=["no_such_site"])
    with pytest.raises(ValueError, match="in_contact"):
        trajectory.inverse_dynamics(m, t, qpos, contacts=["r_sole"], in_contact=np.ones((3, 1), bool))
    with pytest.raises(ValueError, match="in_contact"):
        trajectory.inverse_dynamics(m, t, qpos, in_contact=np.ones((10, 1), bool))
    arm = kd.models.load("arm3")
    with pytest.raises(ValueError, match="floating-base"):
        trajectory.inverse_dynamics(arm, np.arange(5) * 0.01, np.tile(arm.qpos0, (5, 1)), contacts=[0])
