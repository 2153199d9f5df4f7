"""Contact rows and the solvers on contacts, against MuJoCo 4.0.

MuJoCo simulates a scene of bodies dropped on the ground; at states along the way both
engines run forward from the same state, kinedyn with its own collision detection. kinedyn's
contacts (geoms, position, frame, distance, parameters), every row (frictionless, pyramidal
and elliptic cones, condim 1, 3, 4 and 6), the forces and the accelerations are compared with
MuJoCo's at 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_fields,
    gym_model_path,
    load_pair,
    set_simulated_state,
    simulated_states,
)

import kinedyn as kd
from kinedyn.engine.types import ConeType, SolverType

SCENE = """
<mujoco model="drop">
  <option cone="{cone}" impratio="{impratio}"/>
  <default><geom solimp="0.9 0.95 0.001 0.5 2" solref="0.02 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1" condim="{floor_condim}" friction="0.8 0.02 0.001"/>
    <body name="box" pos="0 0 .2" euler="10 20 5">
      <freejoint/><geom name="box" type="box" size=".1 .07 .05" condim="3"/>
    </body>
    <body name="ball" pos=".4 0 .3">
      <freejoint/><geom name="ball" type="sphere" size=".06" condim="6" friction="1 .05 .01"/>
    </body>
    <body name="capsule" pos="-.4 .1 .2" euler="0 80 10">
      <freejoint/><geom name="capsule" type="capsule" size=".04 .12" condim="4" solmix="2"/>
    </body>
    <body name="arm" pos="0 .5 .25">
      <joint name="hinge" type="hinge" axis="1 0 0" range="-1 1" damping=".5"/>
      <geom name="arm" type="capsule" fromto="0 0 0 0 .2 0" size=".03" condim="1"/>
    </body>
    <body name="sticky" pos=".2 -.4 .15">
      <freejoint/><geom name="sticky" type="box" size=".05 .05 .05" adhesion="{adhesion}"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="floor" geom2="capsule" condim="4" friction="0.7 0.9 0.01 0.001 0.001"
          solreffriction="{solreffriction}"/>
  </contact>
  <actuator><motor joint="hinge" gear="5"/></actuator>
</mujoco>
"""


def _scene(cone="pyramidal", impratio=1, floor_condim=3, adhesion=0, solreffriction="0 0"):
    return SCENE.format(cone=cone, impratio=impratio, floor_condim=floor_condim, adhesion=adhesion,
                        solreffriction=solreffriction)


def scene_pair(xml):
    return load_pair(xml, disable=False)


def mujoco_contact_states(mjm, mjd, count=5, steps=60, seed=0):
    """States of MuJoCo's simulation of the drop, with their contact arrays."""
    return simulated_states(mjm, mjd, count=count, steps=steps, seed=seed)


def _check_states(m, d, mjm, mjd, states, names=None):
    import mujoco
    contacts = 0
    for state in states:
        set_simulated_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert_fields(m, d, mjm, mjd, names=names)
        contacts += d.ncon
    assert contacts > 0, "no contact in any state: the test would not test contact rows"


@pytest.mark.parametrize("solver", ["NEWTON", "CG"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_rows_and_solution_match(cone, solver):
    m, d, mjm, mjd = scene_pair(_scene(cone=cone))
    for mm in (m, mjm):
        mm.opt.solver = int(SolverType[solver])
    _check_states(m, d, mjm, mjd, mujoco_contact_states(mjm, mjd))


# (adhesion: its rows' aref bias and its passive force, qfrc_adhesion, from the contacts)
@pytest.mark.parametrize("variant", [dict(impratio=10), dict(floor_condim=6), dict(floor_condim=1),
                                     dict(solreffriction="0.05 0.5"), dict(adhesion=5)],
                         ids=["impratio", "condim6", "condim1", "solreffriction", "adhesion"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_parameters(cone, variant):
    m, d, mjm, mjd = scene_pair(_scene(cone=cone, **variant))
    _check_states(m, d, mjm, mjd, mujoco_contact_states(mjm, mjd, count=4, seed=1))


@pytest.mark.parametrize("options", [dict(iterations=2), dict(tolerance=1e-4), dict(ls_iterations=3)],
                         ids=["2-iterations", "loose", "short-line-search"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_elliptic_and_pyramidal_with_own_settings(cone, options):
    m, d, mjm, mjd = scene_pair(_scene(cone=cone))
    for mm in (m, mjm):
        for k, v in options.items():
            setattr(mm.opt, k, v)
    _check_states(m, d, mjm, mjd, mujoco_contact_states(mjm, mjd, count=4, seed=2))


def test_elliptic_cone_hessian_matches_in_the_middle_zone():
    """contact.H, the Newton solver's cone Hessian, where MuJoCo sets it (contacts in the
    cone's middle zone; MuJoCo stores it flat, dim x dim)."""
    import mujoco
    m, d, mjm, mjd = scene_pair(_scene(cone="elliptic"))
    seen = 0
    for state in mujoco_contact_states(mjm, mjd, count=6, seed=3):
        set_simulated_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        for i in range(d.ncon):
            adr = d.contact_efc_address[i]
            if adr >= 0 and mjd.efc_state[adr] == int(mujoco.mjtConstraintState.mjCNSTRSTATE_CONE):
                dim = d.contact_dim[i]
                theirs = np.array(mjd.contact[i].H[:dim * dim]).reshape(dim, dim)
                assert_close("contact.H", d.contact_H[i, :dim, :dim], theirs)
                seen += 1
    assert seen > 0, "no contact in the cone's middle zone at the sampled states: H is not tested"


def test_contact_view_has_mujoco_names():
    m, d, mjm, mjd = scene_pair(_scene())
    state = mujoco_contact_states(mjm, mjd, count=1)[0]
    import mujoco
    set_simulated_state(d, mjd, state)
    mujoco.mj_forward(mjm, mjd)
    kd.forward(m, d)
    assert len(d.contact) == d.ncon == mjd.ncon > 0
    np.testing.assert_array_equal(d.contact.geom, mjd.contact.geom)
    assert d.contact.dist.shape == (d.ncon,) and d.contact.frame.shape == (d.ncon, 3, 3)
    with pytest.raises(AttributeError, match="no field"):
        _ = d.contact.distance
    assert kd.ConeType.ELLIPTIC == ConeType.ELLIPTIC == 1


# the contact-row quantities that follow MuJoCo 4.0's summation orders bit for bit (rtol = atol
# = 0): the point Jacobians (mj_jac: cdof_lin + (cdof_rot x offset)), the compiler's invweight0
# (set0: mj_solveM's mju_dotSparse, mju_mulMatMatT's mju_dot), J v in mju_dot's order
# (mju_mulMatVec) and M v (mju_mulSymVecSparse, off-diagonals last to first)
BIT_EQUAL_ROWS = ("efc_J", "efc_diagA", "efc_R", "efc_D", "efc_KBIP", "efc_pos", "efc_vel", "efc_aref",
                  "efc_b")
# and the solvers' results: Newton's dense Cholesky solve (mju_cholSolve: 4.0's back
# substitution from the last row up), its line search's mju_dot's, PGS
BIT_EQUAL_SOLUTION = ("efc_force", "efc_state", "qfrc_constraint", "qacc", "cacc", "cfrc_int", "cfrc_ext")


@pytest.mark.parametrize("solver", ["NEWTON", "PGS"])
def test_contact_rows_are_mujocos_bits_on_a_humanoid(solver):
    """gymnasium's humanoid (a free base and 16 hinges in a tree) falling onto the floor: the
    compiled invweight0, every contact and limit row, the solver's forces and accelerations
    and mj_rnePostConstraint's forces (the near-zero net force on the free tree included) equal
    MuJoCo's bits, and so does mj_mulM."""
    import mujoco

    m, d, mjm, mjd = load_pair(gym_model_path("humanoid").read_text(), disable=False)
    for name in ("body_invweight0", "dof_invweight0", "tendon_invweight0"):
        assert_close(name, getattr(m, name), getattr(mjm, name), rtol=0, atol=0)
    for mm in (m, mjm):
        mm.opt.solver = int(SolverType[solver])
    rows = 0
    for state in simulated_states(mjm, mjd, count=3, steps=30, seed=4):
        set_simulated_state(d, mjd, state)
        mujoco.mj_forward(mjm, mjd)
        kd.forward(m, d)
        assert_fields(m, d, mjm, mjd, names=BIT_EQUAL_ROWS, rtol=0, atol=0)
        kd.rne_post_constraint(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=BIT_EQUAL_SOLUTION, rtol=0, atol=0)
        assert_fields(m, d, mjm, mjd)
        rows += d.ncon
        vec = np.random.default_rng(rows).normal(size=m.nv)
        theirs = np.zeros(m.nv)
        mujoco.mj_mulM(mjm, mjd, theirs, vec)
        assert_close("mul_m", kd.mul_m(m, d, vec), theirs, rtol=0, atol=0)
    assert rows > 0, "no contact in any state: the test would not test contact rows"
