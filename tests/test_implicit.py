"""The implicit integrator (MuJoCo's mjINT_IMPLICIT) against MuJoCo 4.0: step, inverse, forward, batch.

Oracle: mj_step / mj_inverse / mujoco.rollout on the same model with ``integrator`` set to implicit
on both sides. One step from a random state (with qfrc_applied and xfrc_applied) at the oracle's
1e-9 on qpos, qvel, act; 100-step rollouts within 1e-6 (round-off amplified by the dynamics, as in
test_integrate); the discrete-time inverse (invdiscrete), whose acceleration goes through the
same M - h qDeriv, at 1e-9 on qfrc_inverse; kd.batch.rollout at test_batch's 1e-9.

Models: every tests/models file (free bodies, ball joints, site and tendon transmissions,
dampers and velocity servos, muscles), gymnasium's humanoid and ant (free base, contacts with the
floor), random trees (strategies.random_mjcf_text: hinges, slides, balls, free bodies, tendons).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from cases import pair
from mujoco import rollout as mj_rollout
from oracle import (
    assert_fields,
    assert_forward_matches,
    gym_model_path,
    load_pair,
    model_paths,
    set_same_state,
)
from strategies import random_mjcf_text, random_state

import kinedyn as kd

IMPLICIT = kd.IntegratorType.IMPLICIT
SEEDS = (1, 3, 5, 7, 11)


def _sources():
    out = [pytest.param(("path", str(p)), id=p.stem) for p in model_paths()]
    out += [pytest.param(("gym", name), id=f"gym-{name}") for name in ("humanoid", "ant")]
    out += [pytest.param(("seed", s), id=f"seed{s}") for s in SEEDS]
    return out


def _load(source, constraints=True):
    """(m, d, mjm, mjd) with the integrator set to implicit; without ``constraints``, the smooth
    pipeline alone (cases.pair: constraints and contacts disabled, as test_integrate's rollouts)."""
    kind, value = source
    if kind == "path":
        text, label = Path(value).read_text(), Path(value).stem
    elif kind == "gym":
        text, label = gym_model_path(value).read_text(), f"gymnasium {value}"
    else:
        text, label = random_mjcf_text(value), f"random tree {value}"
    if constraints:
        m, d, mjm, mjd = load_pair(text, disable=False)
    else:
        m, d, mjm, mjd = pair(text, label)
    m.opt.integrator = IMPLICIT
    mjm.opt.integrator = int(IMPLICIT)
    return m, d, mjm, mjd


@pytest.mark.parametrize("source", _sources())
def test_step_and_inverse_match_mujoco(source):
    """One step (constraints and contacts as the model has them) at 1e-9, then the discrete-time
    inverse at the state reached."""
    m, d, mjm, mjd = _load(source)
    rng = np.random.default_rng(11)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    applied = dict(qfrc_applied=rng.normal(size=mjm.nv), xfrc_applied=rng.normal(size=(mjm.nbody, 6)))
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, **applied)
    kd.step(m, d)
    mujoco.mj_step(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))
    # discrete-time inverse dynamics at the state reached: qacc read as (qvel_next - qvel) / h
    mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    m.opt.enableflags |= kd.EnableBit.INVDISCRETE
    set_same_state(m, d, mjm, mjd, np.array(mjd.qpos), np.array(mjd.qvel), ctrl, np.array(mjd.act),
                   qacc=rng.normal(size=mjm.nv))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))


@pytest.mark.parametrize("source", _sources())
def test_rollout_matches_mujoco(source):
    """100 steps of the smooth dynamics (constraints off: contacts amplify round-off past 1e-6 in
    every integrator, Euler included, on adhesion_arms), as test_integrate's rollouts."""
    m, d, mjm, mjd = _load(source, constraints=False)
    rng = np.random.default_rng(12)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    for _ in range(4):
        kd.step(m, d, 25)
        mujoco.mj_step(mjm, mjd, 25)
        if any(mjd.warning[int(w)].number for w in (mujoco.mjtWarning.mjWARN_BADQACC,
                                                    mujoco.mjtWarning.mjWARN_BADQVEL)):
            break  # MuJoCo reset its state: nothing more to compare
        for name in ("qpos", "qvel", "act"):
            ours, theirs = getattr(d, name), getattr(mjd, name)
            err = np.max(np.abs(ours - theirs) / (1.0 + np.abs(theirs)), initial=0.0)
            assert err <= 1e-6, f"{source}: {name} after {mjd.time:g} s: {err:.1e}"


def test_contacts_and_forward():
    """gymnasium's humanoid dropped onto the floor from its initial pose lowered to touch it (torso
    at 1.2 m): contacts in every implicit step (checked present); and forward's fields with the
    integrator set (it changes none)."""
    m, d, mjm, mjd = _load(("gym", "humanoid"))
    rng = np.random.default_rng(2)
    assert_forward_matches(m, d, mjm, mjd, rng, 1)
    qpos = np.array(mjm.qpos0)
    qpos[2] = 1.2
    set_same_state(m, d, mjm, mjd, qpos, np.zeros(mjm.nv))
    kd.step(m, d)
    mujoco.mj_step(mjm, mjd)
    assert mjd.ncon > 0 and d.ncon == mjd.ncon
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel"))  # one step with contacts: 1e-9
    seen = 0
    for _ in range(150):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        seen = max(seen, mjd.ncon)
        for name in ("qpos", "qvel"):
            ours, theirs = getattr(d, name), getattr(mjd, name)
            err = np.max(np.abs(ours - theirs) / (1.0 + np.abs(theirs)))
            assert err <= 1e-6, f"{name} after {mjd.time:g} s: {err:.1e}"
    assert seen > 0


@pytest.mark.parametrize("source", [("gym", "ant"), ("seed", 3), ("path", str(Path(__file__).parent / "models"
                                                                                 / "site_push_cubes.xml"))],
                         ids=["gym-ant", "seed3", "site_push_cubes"])
def test_batch_rollout_matches_mujoco(source):
    m, _, mjm, _ = _load(source)
    rng = np.random.default_rng(4)
    nbatch, nstep = 3, 40
    state0 = np.empty((nbatch, kd.batch.state_size(m)))
    for i in range(nbatch):
        qpos, qvel, _, act = random_state(rng, mjm)
        state0[i] = np.r_[0.0, qpos, 0.3 * qvel, act]
    control = rng.normal(size=(nbatch, nstep, m.nu)) * 0.3
    ours = kd.batch.rollout(m, state0, control, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(2)], state0, control)
    err = np.abs(ours.state - theirs) / (1.0 + np.abs(theirs))
    assert err.max() <= 1e-9, f"{source}: {err.max():.1e}"


def test_compiled_only_when_used():
    from kinedyn._jit.bind import needed_units
    from kinedyn.engine.integrator import step_entry
    from kinedyn.engine.inverse import inverse_entry

    m = kd.Model.from_xml_string(random_mjcf_text(3))
    names = {u.name for u in needed_units(m, [step_entry, inverse_entry])}
    assert not any("implicit" in n and "implicitfast" not in n for n in names), names
    m.opt.integrator = IMPLICIT
    names = {u.name for u in needed_units(m, [step_entry, inverse_entry])}
    assert any("_step_implicit_entry" in n for n in names) and any("implicit_lu_entry" in n for n in names)
    # a medium adds the fluid forces' velocity derivatives (test_fluid_implicit)
    assert not any("fluid_vel" in n for n in names), names
    m.opt.density = 1.2
    names = {u.name for u in needed_units(m, [step_entry, inverse_entry])}
    assert any("fluid_vel_entry" in n for n in names), names


def test_lengthrange_and_a_model_switched_to_implicit():
    """The compiler's length-range simulation steps with the model's integrator (mj_setLengthRange
    calls mj_step2): implicit's lengths equal MuJoCo's. A model switched to implicit after its
    first inverse binds the implicit units on its next inverse (invdiscrete)."""
    import re

    text = (Path(__file__).parent / "models" / "muscle_spatial_tendon.xml").read_text()
    text = re.sub(r"<mujoco([^>]*)>", r'<mujoco\1><option integrator="implicit"/><compiler><lengthrange '
                  r'mode="all" useexisting="false"/></compiler>', text, count=1)
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    np.testing.assert_allclose(m.actuator_lengthrange, mjm.actuator_lengthrange, rtol=1e-9, atol=1e-12)
    text = random_mjcf_text(24)
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    kd.inverse(m, d)
    m.opt.integrator = IMPLICIT
    m.opt.enableflags |= kd.EnableBit.INVDISCRETE
    mjm.opt.integrator = int(IMPLICIT)
    mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    rng = np.random.default_rng(0)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act, qacc=rng.normal(size=mjm.nv))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qfrc_inverse",))
