"""PGS and noslip against MuJoCo 4.0: forward from shared states, and short rollouts.

The dual solvers stop far from the optimum (a few sweeps), so these tests check that kinedyn
runs MuJoCo's exact iteration: the warmstart choice, the PCG32-shuffled row order, Nesterov
momentum with restarts, per-island solves and the 1/trace(M)-scaled stopping rule. States
come from short MuJoCo simulations with random controls, and each comparison starts both
engines from the same qpos, qvel, ctrl and qacc_warmstart. Every computed field is compared
at the oracle's bar (1e-9 relative), efc_state exactly.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_fields,
    assert_model_fields,
    load_pair,
    set_same_state,
    set_simulated_state,
    simulated_states,
)

import kinedyn as kd
from kinedyn.engine.solver_pgs import pcg32_next, solve_noslip, solve_pgs
from kinedyn.engine.util_solve import chol_factor, chol_solve

pytestmark = pytest.mark.filterwarnings("ignore::kinedyn.errors.UnsimulatedFeatureWarning")

# three independent trees: hinge/slide/ball limits (with a margin), dof friction loss, and a
# fourth tree no constraint touches (outside every island)
CHAINS = """
<mujoco>
  <option timestep="0.005"><flag contact="disable"/></option>
  <worldbody>
    <body pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" range="-0.3 0.2" frictionloss="0.3"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
      <body pos=".3 0 0">
        <joint name="s1" type="slide" axis="1 0 0" range="-0.1 0.1" margin="0.02" frictionloss=".1"/>
        <geom size=".05"/>
      </body>
    </body>
    <body pos="1 0 1">
      <joint name="h2" type="hinge" axis="0 1 0" range="-0.2 0.2" frictionloss="0.2"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0" mass="3"/>
      <body pos=".3 0 0">
        <joint type="ball" range="0 0.3"/>
        <geom type="box" size=".1 .05 .02" pos=".1 0 0"/>
      </body>
    </body>
    <body pos="2 0 1">
      <joint name="h3" type="hinge" axis="1 0 0" range="-0.2 0.2"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0" mass="2"/>
    </body>
    <body pos="3 0 1">
      <joint name="h4" type="hinge" axis="1 0 0" damping="0.1"/>
      <geom type="capsule" size=".05" fromto="0 0 0 0 0 -.3"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="h1" gear="3"/><motor joint="s1" gear="5"/><motor joint="h2" gear="4"/>
    <motor joint="h3" gear="2"/><motor joint="h4"/>
  </actuator>
</mujoco>
"""

# tendon limits and tendon friction loss: a fixed tendon couples two trees into one island,
# a spatial tendon limits a third
TENDONS = """
<mujoco>
  <option timestep="0.005"><flag contact="disable"/></option>
  <worldbody>
    <site name="anchor" pos="2 0 2"/>
    <body pos="0 0 1">
      <joint name="ja" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
    </body>
    <body pos="1 0 1">
      <joint name="jb" type="slide" axis="0 0 1"/>
      <geom size=".1"/>
    </body>
    <body pos="2 0 1">
      <joint name="jc" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .4 0 0"/>
      <site name="tip" pos=".4 0 0"/>
      <body pos=".4 0 0">
        <joint name="jd" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" size=".03" fromto="0 0 0 .3 0 0"/>
        <site name="tip2" pos=".3 0 0"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fx" range="-0.3 0.3" frictionloss="0.2">
      <joint joint="ja" coef="1"/><joint joint="jb" coef="-2"/>
    </fixed>
    <spatial name="sp" range="0.8 1.25" frictionloss="0.1">
      <site site="anchor"/><site site="tip"/><site site="tip2"/>
    </spatial>
  </tendon>
  <actuator>
    <motor joint="ja" gear="2"/><motor joint="jb" gear="10"/><motor joint="jc" gear="3"/>
    <motor joint="jd" gear="2"/>
  </actuator>
</mujoco>
"""

# equality constraints: connect (two trees into one island), weld to the world (site
# semantics, torquescale), joint coupling between two trees (polynomial), tendon equality;
# plus limits and friction loss
EQUALITY = """
<mujoco>
  <option timestep="0.004"><flag contact="disable"/></option>
  <worldbody>
    <body name="a1" pos="0 0 1">
      <joint name="a1" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
      <body name="a2" pos=".3 0 0">
        <joint name="a2" type="hinge" axis="0 1 0" frictionloss="0.05"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
      </body>
    </body>
    <body name="b" pos=".6 0 1">
      <joint name="b" type="free"/>
      <geom type="box" size=".05 .05 .05"/>
    </body>
    <body name="c" pos="0 1 1">
      <joint name="c" type="hinge" axis="1 0 0" range="-0.4 0.4"/>
      <geom type="capsule" size=".04" fromto="0 0 0 0 .3 0"/>
    </body>
    <body name="e" pos="1 1 1">
      <joint name="e" type="hinge" axis="1 0 0"/>
      <geom type="capsule" size=".04" fromto="0 0 0 0 .3 0"/>
    </body>
    <body name="w" pos="2 0 1">
      <joint name="w1" type="slide" axis="1 0 0"/>
      <joint name="w2" type="hinge" axis="0 0 1"/>
      <geom type="box" size=".1 .05 .05"/>
      <site name="ws" pos=".1 0 0"/>
    </body>
    <body name="t" pos="3 0 1">
      <joint name="t1" type="slide" axis="0 0 1" range="-0.2 0.2"/>
      <geom size=".05"/>
      <body pos="0 0 -.2">
        <joint name="t2" type="slide" axis="1 0 0"/>
        <geom size=".05"/>
      </body>
    </body>
    <site name="wworld" pos="2.1 0 1"/>
  </worldbody>
  <tendon>
    <fixed name="tt"><joint joint="t1" coef="1"/><joint joint="t2" coef="0.5"/></fixed>
  </tendon>
  <equality>
    <connect body1="a2" body2="b" anchor=".3 0 0"/>
    <weld site1="ws" site2="wworld" torquescale="2" solref="0.03 1"/>
    <joint joint1="e" joint2="c" polycoef="0 0.8 0.3 0 0"/>
    <tendon tendon1="tt" polycoef="0.05 0 0 0 0"/>
  </equality>
  <actuator>
    <motor joint="a1" gear="5"/><motor joint="c" gear="3"/><motor joint="w1" gear="20"/>
    <motor joint="w2" gear="2"/><motor joint="t2" gear="10"/>
  </actuator>
</mujoco>
"""

# one kinematic tree only: per-island and whole-model PGS coincide
SINGLE = """
<mujoco>
  <option timestep="0.005"><flag contact="disable"/></option>
  <worldbody>
    <body pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 1 0" range="-0.3 0.4" frictionloss="0.2"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
      <body pos=".3 0 0">
        <joint name="h2" type="hinge" axis="0 1 0" range="-0.5 0.5" frictionloss="0.1"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
        <body pos=".3 0 0">
          <joint type="ball" range="0 0.4"/>
          <geom type="box" size=".1 .05 .02" pos=".1 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h1" gear="4"/><motor joint="h2" gear="3"/></actuator>
</mujoco>
"""

MODELS = {"chains": CHAINS, "tendons": TENDONS, "equality": EQUALITY, "single": SINGLE}

DSBL_WARMSTART = int(mujoco.mjtDisableBit.mjDSBL_WARMSTART)
DSBL_ISLAND = int(mujoco.mjtDisableBit.mjDSBL_ISLAND)

SOLVER_OPTIONS = ("solver", "iterations", "tolerance", "noslip_iterations", "noslip_tolerance",
                  "disableflags")

# (solver, iterations, noslip_iterations, extra disable bits)
VARIANTS = {
    "pgs3": ("PGS", 3, 0, 0),
    "pgs10": ("PGS", 10, 0, 0),
    "pgs50": ("PGS", 50, 0, 0),
    "pgs10-cold": ("PGS", 10, 0, DSBL_WARMSTART),
    "pgs50-cold": ("PGS", 50, 0, DSBL_WARMSTART),
    "pgs10-noisland": ("PGS", 10, 0, DSBL_ISLAND),
    "pgs50-noisland-cold": ("PGS", 50, 0, DSBL_ISLAND | DSBL_WARMSTART),
    "pgs10-noslip": ("PGS", 10, 5, 0),
    "pgs10-noslip-noisland": ("PGS", 10, 5, DSBL_ISLAND),
    "newton-noslip": ("Newton", 100, 4, 0),
    "newton-noslip-cold-noisland": ("Newton", 100, 4, DSBL_WARMSTART | DSBL_ISLAND),
    "cg-noslip-noisland": ("CG", 100, 4, DSBL_ISLAND),
}

SOLVERS = {"PGS": mujoco.mjtSolver.mjSOL_PGS, "CG": mujoco.mjtSolver.mjSOL_CG,
           "Newton": mujoco.mjtSolver.mjSOL_NEWTON}


def make_pair(name: str, variant: str):
    """Both engines compiled from MODELS[name], with the variant's solver options."""
    solver, iterations, noslip, bits = VARIANTS[variant]
    _, _, mjm, mjd = load_pair(MODELS[name], disable=False)
    mjm.opt.solver = SOLVERS[solver]
    mjm.opt.iterations = iterations
    mjm.opt.noslip_iterations = noslip
    mjm.opt.disableflags |= bits
    # compiled for PGS, so that its Data hold the dual solvers' matrix whatever the variant
    m = kd.Model.from_xml_string(MODELS[name].replace("<option ", '<option solver="PGS" ', 1))
    for option in SOLVER_OPTIONS:
        setattr(m.opt, option, getattr(mjm.opt, option))
    assert_model_fields(m, mjm)
    return m, kd.Data(m), mjm, mjd


def mujoco_states(mjm, seed: int, nstate: int = 6, nstep: int = 300):
    """States (qpos, qvel, ctrl, qacc_warmstart) along a MuJoCo simulation with random initial
    velocities and random piecewise-constant controls, run with the model's own solver."""
    rng = np.random.default_rng(seed)
    mjd = mujoco.MjData(mjm)
    mjd.qvel[:] = rng.normal(size=mjm.nv) * 2
    lo, hi = -1.0, 1.0
    states = []
    every = nstep // nstate
    for k in range(1, nstep + 1):
        if k % 10 == 1:
            mjd.ctrl[:] = rng.uniform(lo, hi, size=mjm.nu)
        mujoco.mj_step(mjm, mjd)
        if k % every == 0:
            states.append((mjd.qpos.copy(), mjd.qvel.copy(), mjd.ctrl.copy(), mjd.qacc_warmstart.copy()))
    return states


def forward_both(m, d, mjm, mjd, state) -> None:
    qpos, qvel, ctrl, warm = state
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl)
    d.qacc_warmstart[:] = warm
    mjd.qacc_warmstart[:] = warm
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)


# every model with every variant, but for CG on "equality": MuJoCo's own CG result on that model moves
# by up to 100% when qvel moves by 1e-15, so there is nothing to compare with
FORWARD_CASES = [(name, variant) for name in MODELS for variant in VARIANTS
                 if not (name == "equality" and VARIANTS[variant][0] == "CG")]


@pytest.mark.parametrize("name, variant", FORWARD_CASES, ids=[f"{n}-{v}" for n, v in FORWARD_CASES])
def test_forward_matches_mujoco(name, variant):
    m, d, mjm, mjd = make_pair(name, variant)
    nrow = 0
    for seed in range(2):
        for state in mujoco_states(mjm, seed):
            forward_both(m, d, mjm, mjd, state)
            assert_fields(m, d, mjm, mjd)
            nrow += d.nefc
    assert nrow > 0, "the states make no constraint rows"


@pytest.mark.parametrize("variant", ["pgs10", "pgs50-cold", "pgs10-noisland", "pgs10-noslip",
                                     "newton-noslip"])
@pytest.mark.parametrize("name", list(MODELS))
def test_islands_and_iterations(name, variant):
    """The island partition (mj_island) and the sweeps per island (solver_niter, noslip's
    included) are MuJoCo's: the solves stop where MuJoCo's stop."""
    m, d, mjm, mjd = make_pair(name, variant)
    solver = VARIANTS[variant][0]
    for state in mujoco_states(mjm, 3):
        forward_both(m, d, mjm, mjd, state)
        nisland = int(d.scratch_nisland[0])
        assert nisland == mjd.nisland
        if nisland:
            np.testing.assert_array_equal(d.scratch_efc_island[0, :d.nefc], mjd.efc_island)
        if solver == "PGS":
            count = max(1, nisland)
            np.testing.assert_array_equal(d.scratch_island[4, :count], mjd.solver_niter[:count])


def test_efc_ar_matches_mujoco():
    """AR = J M^-1 J' + diag(R) (mj_projectConstraint) at round-off."""
    m, d, mjm, mjd = make_pair("equality", "pgs10")
    for state in mujoco_states(mjm, 4):
        forward_both(m, d, mjm, mjd, state)
        n = d.nefc
        ours = d.scratch_efc_AR[:n, :n]
        theirs = np.asarray(mjd.efc_AR).reshape(n, n)
        scale = np.abs(theirs).max()
        assert np.abs(ours - theirs).max() <= 1e-12 * scale


def test_single_tree_islands_change_nothing():
    """One tree: the per-island solve is the whole-model solve, in MuJoCo 4.0 and in kinedyn."""
    m, d, mjm, mjd = make_pair("single", "pgs10")
    states = mujoco_states(mjm, 5)
    results = {}
    for bits in (0, DSBL_ISLAND):
        m.opt.disableflags = mjm.opt.disableflags = (mjm.opt.disableflags & ~DSBL_ISLAND) | bits
        out = []
        for state in states:
            forward_both(m, d, mjm, mjd, state)
            assert_fields(m, d, mjm, mjd)
            out.append((d.efc_force.copy(), mjd.efc_force.copy(), d.qacc.copy()))
        results[bits] = out
    for (f_on, mf_on, a_on), (f_off, mf_off, a_off) in zip(results[0], results[DSBL_ISLAND], strict=True):
        np.testing.assert_array_equal(f_on, f_off)
        np.testing.assert_array_equal(mf_on, mf_off)
        np.testing.assert_array_equal(a_on, a_off)


def test_multi_tree_islands_matter():
    """Several trees: MuJoCo 4.0's per-island PGS stops elsewhere than its whole-model PGS
    (own shuffle, momentum and trace(M) per island); kinedyn follows both."""
    m, d, mjm, mjd = make_pair("chains", "pgs10")
    states = mujoco_states(mjm, 6, nstate=10)
    forces = {}
    for bits in (0, DSBL_ISLAND):
        m.opt.disableflags = mjm.opt.disableflags = (mjm.opt.disableflags & ~DSBL_ISLAND) | bits
        forces[bits] = []
        for state in states:
            forward_both(m, d, mjm, mjd, state)
            assert_fields(m, d, mjm, mjd)
            forces[bits].append(mjd.efc_force.copy())
    differ = [not np.allclose(a, b, rtol=1e-9, atol=0) for a, b in zip(forces[0], forces[DSBL_ISLAND],
                                                                    strict=True)]
    assert any(differ)


@pytest.mark.parametrize("variant", ["pgs10", "pgs50-cold", "pgs10-noslip", "newton-noslip"])
@pytest.mark.parametrize("name", list(MODELS))
def test_rollout_matches_mujoco(name, variant):
    """Ten kd.step against ten mj_step from a shared state (the warmstart carried by step)."""
    m, d, mjm, mjd = make_pair(name, variant)
    for state in mujoco_states(mjm, 7, nstate=2):
        qpos, qvel, ctrl, warm = state
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl)
        d.qacc_warmstart[:] = warm
        mjd.qacc_warmstart[:] = warm
        for _ in range(10):
            kd.step(m, d)
            mujoco.mj_step(mjm, mjd)
            assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "qacc_warmstart", "efc_force", "qacc"))


def _pcg32_reference(state: int, inc: int) -> tuple[int, int]:
    """O'Neill's pcg32 (XSH RR) on Python integers: (new state, output)."""
    mask64 = (1 << 64) - 1
    new = (state * 6364136223846793005 + (inc | 1)) & mask64
    xorshifted = (((state >> 18) ^ state) >> 27) & 0xFFFFFFFF
    rot = state >> 59
    return new, ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF


def test_pcg32_matches_reference():
    """The shuffle's generator: MuJoCo's seed sequence and random states, full 64-bit range."""
    rng = np.random.default_rng(0)
    starts = [(0, 1)] + [(int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2)),
                          int(rng.integers(0, 2**63)) * 2 + 1) for _ in range(200)]
    for start, inc in starts:
        state, s = start, np.uint64(start)
        for _ in range(20):
            state, want = _pcg32_reference(state, inc)
            s, got = pcg32_next(s, np.uint64(inc))
            assert int(got) == want
            assert int(s) == state
            s = np.uint64(s)


# ---- contacts: elliptic cones (and noslip on pyramids) ---------------------------------------------

# boxes stacked on a plane (condim 3 and 4), a sphere and a capsule with torsional and rolling
# friction (condim 6), and a box on two slide joints with a limit and friction loss (scalar rows
# mixed with the contacts); random initial velocities make the contacts slide, so that the
# friction forces reach the cone's boundary
CONTACTS = """
<mujoco>
  <option timestep="0.005" solver="PGS" cone="{cone}" impratio="{impratio}" iterations="{iterations}"
          noslip_iterations="{noslip}"><flag {flags}/></option>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="0.9 0.02 0.002"/>
    <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" condim="3"/></body>
    <body pos=".02 .01 .3" euler="0 0 15"><freejoint/>
      <geom type="box" size=".08 .08 .08" condim="4" friction="1 .03 .003"/></body>
    <body pos=".5 0 .1"><freejoint/><geom type="sphere" size=".1" condim="6" friction=".7 .05 .01"/></body>
    <body pos="-.5 .2 .06" euler="20 0 0"><freejoint/><geom type="capsule" size=".05 .1" condim="6"/></body>
    <body pos="0 .6 .1">
      <joint name="sx" type="slide" axis="1 0 0" frictionloss=".3" range="-.3 .3"/>
      <joint name="sz" type="slide" axis="0 0 1"/>
      <geom type="box" size=".1 .05 .1" condim="4"/>
    </body>
  </worldbody>
  <actuator><motor joint="sx" gear="20"/></actuator>
</mujoco>
"""

# (impratio, iterations, noslip_iterations, <flag> attributes)
CONTACT_VARIANTS = {
    "pgs3": (1, 3, 0, ""),
    "pgs10-impratio": (7, 10, 0, ""),
    "pgs50": (1, 50, 0, ""),
    "pgs10-cold": (1, 10, 0, 'warmstart="disable"'),
    "pgs10-noisland": (1, 10, 0, 'island="disable"'),
    "pgs50-noisland-cold-impratio": (7, 50, 0, 'island="disable" warmstart="disable"'),
    "pgs10-noslip": (1, 10, 4, ""),
    "pgs3-noslip-impratio": (7, 3, 4, ""),
    "pgs10-noslip-noisland": (1, 10, 4, 'island="disable"'),
    "pgs50-noslip-cold": (1, 50, 20, 'warmstart="disable"'),
}
NOSLIP_VARIANTS = [v for v, (_, _, noslip, _) in CONTACT_VARIANTS.items() if noslip]

CONE_CASES = [("elliptic", v) for v in CONTACT_VARIANTS] + [("pyramidal", v) for v in NOSLIP_VARIANTS]


def contact_pair(cone: str, variant: str):
    impratio, iterations, noslip, flags = CONTACT_VARIANTS[variant]
    xml = CONTACTS.format(cone=cone, impratio=impratio, iterations=iterations, noslip=noslip, flags=flags)
    return load_pair(xml, disable=False)


def contact_states(mjm, mjd, seed: int = 0, count: int = 6, steps: int = 40):
    """States MuJoCo's own simulation visits: random initial velocities and motor controls."""
    return simulated_states(mjm, mjd, count=count, steps=steps, seed=seed,
                            fields=("qpos", "qvel", "ctrl", "qacc_warmstart"))


set_contact_state = set_simulated_state


def sliding_contacts(mjd) -> int:
    """MuJoCo's elliptic contacts whose friction is on the cone's surface (the QCQP active)."""
    count = 0
    force = np.asarray(mjd.efc_force)
    for cid in range(mjd.ncon):
        con = mjd.contact[cid]
        adr, dim = con.efc_address, con.dim
        if mjd.efc_type[adr] != mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC or force[adr] <= 0:
            continue
        tangent = np.linalg.norm(force[adr + 1:adr + dim] / con.friction[:dim - 1])
        count += abs(force[adr] - tangent) <= 1e-9 * force[adr]
    return count


def boundary_ties(d, mjd) -> int:
    """efc_state equal to MuJoCo's, except where the force sits on its bound to within the
    oracle's tolerance: an elliptic contact whose friction is on the cone's surface (mu N = |T|
    up to round-off: SATISFIED and CONE are a tie that the last bit of the rows' inputs
    decides) or a non-negative row at zero. Returns the ties met."""
    n = mjd.nefc
    ours, theirs = d.efc_state[:n], np.asarray(mjd.efc_state)
    force = np.asarray(mjd.efc_force)
    ties = 0
    for i in np.nonzero(ours != theirs)[0]:
        if mjd.efc_type[i] == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC:
            cid = mjd.efc_id[i]
            adr = mjd.contact.efc_address[cid]
            dim = mjd.contact.dim[cid]
            con = mjd.contact[cid]
            normal = force[adr]
            tangent = np.linalg.norm(force[adr + 1:adr + dim] / con.friction[:dim - 1])
            tie = abs(normal - tangent) <= 1e-9 * max(normal, tangent)
            labels = {int(ours[i]), int(theirs[i])}
            tie = tie and labels <= {int(mujoco.mjtConstraintState.mjCNSTRSTATE_SATISFIED),
                                     int(mujoco.mjtConstraintState.mjCNSTRSTATE_CONE)}
        else:
            tie = i >= mjd.ne + mjd.nf and abs(force[i]) <= 1e-12 + 1e-9 * np.abs(force).max()
        assert tie, f"efc_state[{i}]: kinedyn {ours[i]} vs mujoco {theirs[i]}, not a round-off tie"
        ties += 1
    return ties


@pytest.mark.parametrize("cone, variant", CONE_CASES)
def test_contacts_forward_matches_mujoco(cone, variant):
    """kd.forward with PGS on contact scenes, at MuJoCo-visited states: every field at 1e-9,
    efc_state exactly but for round-off ties on a bound (boundary_ties); the sweeps per island
    are MuJoCo's."""
    m, d, mjm, mjd = contact_pair(cone, variant)
    ncon = nslide = 0
    # the solver's outputs: PGS (cold, 50 sweeps, then noslip) carries the rows' round-off
    # (their bits differ from MuJoCo's in ~15 % of efc_b) into every force, at the scale of the
    # largest force: an entry of 1.2e-4 next to forces of 9.6 differed by 1.2e-12 (1.2e-13 of
    # the vector). Those fields are compared at 1e-9 with an absolute floor of 1e-9 x their
    # largest entry; the solver itself is bit-exact on MuJoCo's rows (the next test).
    solved = ("efc_force", "qacc", "qfrc_constraint")
    for state in contact_states(mjm, mjd):
        set_contact_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert_fields(m, d, mjm, mjd, skip=("efc_state", *solved))
        for name in solved:
            theirs = np.asarray(getattr(mjd, name))
            ours = np.asarray(getattr(d, name))[:theirs.shape[0]]
            assert_close(name, ours, theirs, atol=1e-12 + 1e-9 * np.abs(theirs).max(initial=0))
        boundary_ties(d, mjd)
        count = max(1, mjd.nisland)
        np.testing.assert_array_equal(d.scratch_island[4, :count], mjd.solver_niter[:count])
        ncon += mjd.ncon
        nslide += sliding_contacts(mjd)
    assert ncon >= 60, "the states should make contacts"
    if cone == "elliptic":
        assert nslide > 0, "no contact reaches its cone's surface: the QCQP's active branch is not tested"


@pytest.mark.parametrize("cone, variant", CONE_CASES)
def test_contacts_solver_bit_exact_on_mujocos_rows(cone, variant):
    """The solver alone, given MuJoCo's own inputs (efc_b, AR, R, contact mu and the warmstart
    forces, read with iterations=0): PGS and noslip give MuJoCo's forces and states to the
    last bit, so the differences left in kd.forward are the rows' own round-off."""
    impratio, iterations, noslip, flags = CONTACT_VARIANTS[variant]
    m, d, mjm, mjd = contact_pair(cone, variant)
    for state in contact_states(mjm, mjd):
        set_contact_state(d, mjd, state)
        mjm.opt.iterations, mjm.opt.noslip_iterations = 0, 0
        mujoco.mj_forward(mjm, mjd)
        start = mjd.efc_force.copy()
        mjm.opt.iterations, mjm.opt.noslip_iterations = iterations, noslip
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        n = mjd.nefc
        d.efc_b[:n] = mjd.efc_b
        d.efc_R[:n] = mjd.efc_R
        d.scratch_efc_AR[:n, :n] = np.asarray(mjd.efc_AR).reshape(n, n)
        d.contact_mu[:mjd.ncon] = mjd.contact.mu
        d.efc_force[:n] = start
        solve_pgs(m._handle, d._handle, iterations)
        if noslip:
            solve_noslip(m._handle, d._handle, noslip)
        np.testing.assert_array_equal(d.efc_force[:n], mjd.efc_force)
        np.testing.assert_array_equal(d.efc_state[:n], mjd.efc_state)
        count = max(1, mjd.nisland)
        np.testing.assert_array_equal(d.scratch_island[4, :count], mjd.solver_niter[:count])


def test_qcqp_cholesky_solve_is_mujocos():
    """The n-dimensional QCQP's Cholesky solve against mju_cholSolve (4.0 back-substitutes
    from the last row up), on random SPD systems of the sizes elliptic cones use."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        x = rng.normal(size=(n, n))
        a = x @ x.T + 0.1 * np.eye(n)
        theirs_l = a.copy()
        mujoco.mju_cholFactor(theirs_l, 1e-10)
        ours_l = a.copy()
        assert chol_factor(ours_l, n, 1e-10) == n
        np.testing.assert_array_equal(np.tril(ours_l), np.tril(theirs_l))
        b = rng.normal(size=n)
        theirs = np.zeros(n)
        mujoco.mju_cholSolve(theirs, theirs_l, b)
        ours = np.zeros(n)
        chol_solve(ours, theirs_l, b, n)
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("cone, variant", [("elliptic", "pgs10-noslip"),
                                           ("elliptic", "pgs50-noisland-cold-impratio"),
                                           ("pyramidal", "pgs10-noslip-noisland")])
def test_contacts_rollout_matches_mujoco(cone, variant):
    """Ten kd.step against ten mj_step on the contact scene (the warmstart carried by step)."""
    m, d, mjm, mjd = contact_pair(cone, variant)
    set_contact_state(d, mjd, contact_states(mjm, mjd)[2])
    for _ in range(10):
        mujoco.mj_step(mjm, mjd)
        kd.step(m, d)
        assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "qacc_warmstart", "efc_force", "qacc"))
