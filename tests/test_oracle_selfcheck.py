"""The test harness checks itself, with MuJoCo alone (no kinedyn compiler or kernels needed).

Oracle: MuJoCo 4.0 compiles every generated model, and the oracle helpers give
MuJoCo's own values back in the registry's shapes. Comparisons of MuJoCo with
itself are exact (RTOL = ATOL = 0): the same library on the same input is
deterministic. The oracle's own tolerance (1e-9 relative, 1e-12 absolute) is
checked on hand-made perturbations either side of it.
"""

from __future__ import annotations

import re
import types

import mujoco
import numpy as np
import pytest
from hypothesis import given
from oracle import (
    ATOL,
    CANCEL_FLOOR,
    DISABLE_BITS,
    MODELS_DIR,
    RTOL,
    assert_close,
    assert_fields,
    assert_model_fields,
    compare,
    disable_constraints,
    gym_model_path,
    live_part,
    model_paths,
    mujoco_value,
    set_same_state,
)
from strategies import random_mjcf, random_mjcf_text, random_state

from kinedyn.engine.fields import DATA_FIELDS, KINEDYN_SIZES, MODEL_FIELDS, SIZE_NAMES

EXACT = {"rtol": 0.0, "atol": 0.0}  # MuJoCo against itself: bit-identical
SEEDS = range(200)
_FREE, _BALL = 0, 1


def _sizes(mjm) -> dict[str, int]:
    # nefcmax is kinedyn's; MuJoCo's row arrays hold nefc rows (0 with constraints disabled)
    return {s: max(0, int(getattr(mjm, s, 0))) for s in SIZE_NAMES}


class _NaturalData(types.SimpleNamespace):
    """MuJoCo's mjData seen through kinedyn's Data shapes (to drive the oracle without kinedyn)."""

    def __init__(self, mjm, mjd):
        sizes = {**_sizes(mjm), "nefcmax": mjd.nefc, "nconmax": mjd.ncon}
        super().__init__(**{s.name: mujoco_value(mjd, s.name, s.resolve(sizes))
                            for s in DATA_FIELDS if s.mujoco and s.stage != "state"})
        for s in DATA_FIELDS:
            if s.stage == "state":
                setattr(self, s.name, getattr(mjd, s.name))  # same shape in both: a view
        self.time = mjd.time
        self.ne, self.nf, self.nl, self.nefc, self.ncon = mjd.ne, mjd.nf, mjd.nl, mjd.nefc, mjd.ncon


def _load_checked(xml: str) -> mujoco.MjModel:
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert mjm.opt.disableflags & DISABLE_BITS == DISABLE_BITS
    assert mjm.opt.integrator in (mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_RK4,
                                  mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    assert 2 <= mjm.nbody <= 13
    return mjm


def _check_state_valid(mjm, qpos, qvel, ctrl, act) -> None:
    assert qpos.shape == (mjm.nq,) and qvel.shape == (mjm.nv,)
    assert ctrl.shape == (mjm.nu,) and act.shape == (mjm.na,)
    for j in range(mjm.njnt):
        adr, jtype = mjm.jnt_qposadr[j], mjm.jnt_type[j]
        lo, hi = mjm.jnt_range[j]
        if jtype == _FREE:
            assert np.linalg.norm(qpos[adr + 3:adr + 7]) == pytest.approx(1.0, abs=1e-12)
        elif jtype == _BALL:
            q = qpos[adr:adr + 4]
            assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-12)
            if mjm.jnt_limited[j]:
                assert 2 * np.arccos(min(abs(q[0]), 1.0)) <= hi + 1e-12
        elif mjm.jnt_limited[j]:
            assert lo <= qpos[adr] <= hi
    for i in range(mjm.nu):
        if mjm.actuator_ctrllimited[i]:
            assert mjm.actuator_ctrlrange[i, 0] <= ctrl[i] <= mjm.actuator_ctrlrange[i, 1]


# ---- strategies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_random_mjcf_text_loads_in_mujoco_and_random_state_is_valid(seed):
    mjm = _load_checked(random_mjcf_text(seed))
    mjd = mujoco.MjData(mjm)
    qpos, qvel, ctrl, act = random_state(np.random.default_rng(seed), mjm)
    _check_state_valid(mjm, qpos, qvel, ctrl, act)
    mjd.qpos[:], mjd.qvel[:], mjd.ctrl[:], mjd.act[:] = qpos, qvel, ctrl, act
    mujoco.mj_forward(mjm, mjd)
    assert np.isfinite(mjd.qacc).all()
    assert mjd.qLDiagInv.min(initial=np.inf) > 0  # M positive definite: no degenerate stacked joints


def test_random_mjcf_text_is_a_function_of_the_seed():
    assert random_mjcf_text(7) == random_mjcf_text(7)
    assert random_mjcf_text(7) != random_mjcf_text(8)


@given(random_mjcf())
def test_hypothesis_random_mjcf_loads_in_mujoco(xml):
    mjm = _load_checked(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    assert np.isfinite(mjd.qacc).all()


def test_random_mjcf_covers_every_feature():
    """Over the 200 seeds each generated feature appears at least once."""
    texts = [random_mjcf_text(seed) for seed in SEEDS]
    models = [mujoco.MjModel.from_xml_string(t) for t in texts]
    text = "\n".join(texts)
    for token in ('angle="radian"', 'angle="degree"', "eulerseq=", "<default>", 'integrator="Euler"',
                  'integrator="RK4"', 'integrator="implicitfast"', "gravity=",
                  " quat=", " axisangle=", " euler=", " xyaxes=", " zaxis=",
                  "<freejoint", 'type="free"', 'type="ball"', 'type="hinge"', 'type="slide"',
                  "stiffness=", "damping=", "armature=", "springref=", " ref=", "range=", 'limited="',
                  *(f'<geom type="{g}"' for g in ("sphere", "capsule", "cylinder", "box", "ellipsoid")),
                  "fromto=", "mass=", "density=", "diaginertia=", "fullinertia=", "<site",
                  "<motor", "<position", "<velocity", "kv=", "timeconst=", "gear=", "ctrlrange=",
                  "forcerange=", "<key "):
        assert token in text, token

    def depth(mjm, b):
        return 0 if b == 0 else 1 + depth(mjm, mjm.body_parentid[b])

    assert max(m.nbody for m in models) == 13 and min(m.nbody for m in models) == 2
    assert max(depth(m, b) for m in models for b in range(m.nbody)) == 6
    assert any((m.body_parentid == 0).sum() >= 3 for m in models)  # several trees
    assert any((np.bincount(m.body_parentid[1:]) >= 2)[1:].any() for m in models)  # branching
    assert any((m.body_jntnum >= 3).any() for m in models)  # stacked joints
    assert any(m.na > 0 for m in models)
    assert any((m.body_jntnum[m.body_parentid == 0] == 0).any() for m in models)  # welded to world


# ---- disable_constraints ------------------------------------------------------------------------


def test_test_models_are_found_in_the_repository():
    paths = model_paths()
    own = [p for p in paths if p.parent == MODELS_DIR]
    assert len(own) >= 18 and paths[:len(own)] == own == sorted(own)
    assert len({p.stem for p in paths}) == len(paths)  # an extra corpus never repeats a stem


def test_disable_constraints_sets_only_the_two_flags(model_path):
    xml = model_path.read_text()
    merged = disable_constraints(xml)
    mjm = mujoco.MjModel.from_xml_string(merged)
    assert mjm.opt.disableflags & DISABLE_BITS == DISABLE_BITS
    # compiling either way gives the same model (models/README.md), bit for bit
    original = mujoco.MjModel.from_xml_string(xml)
    original.opt.disableflags |= DISABLE_BITS
    assert_model_fields(mjm, original, **EXACT)
    # idempotent, and the rest of the text is untouched
    assert disable_constraints(merged) == merged
    assert len(merged.splitlines()) == len(xml.splitlines())


@pytest.mark.parametrize("xml, other_bits", [
    ("<mujoco><worldbody/></mujoco>", 0),
    ('<?xml version="1.0"?>\n<mujoco model="m">\n  <worldbody/>\n</mujoco>', 0),
    ('<mujoco><option timestep="0.01"/><worldbody/></mujoco>', 0),
    ('<mujoco><option timestep="0.01" ></option></mujoco>', 0),
    ("<mujoco><option><flag contact='enable' gravity='disable'/></option></mujoco>",
     mujoco.mjtDisableBit.mjDSBL_GRAVITY),
    ('<mujoco><option><flag constraint="enable"></flag></option></mujoco>', 0),
    ('<mujoco><!-- <option/> --><option integrator="RK4"/></mujoco>', 0),
    ('<mujoco><option/><option timestep="0.1"><flag damper="disable"/></option></mujoco>',
     mujoco.mjtDisableBit.mjDSBL_DAMPER),
], ids=["no-option", "prolog", "self-closing", "empty", "flag-enable", "flag-open-close", "comment",
        "two-options"])
def test_disable_constraints_handles_every_option_form(xml, other_bits):
    merged = disable_constraints(xml)
    assert mujoco.MjModel.from_xml_string(merged).opt.disableflags == DISABLE_BITS | int(other_bits)
    assert disable_constraints(merged) == merged
    assert "<!-- <option/> -->" in merged or "<!--" not in xml


# ---- mujoco_value -------------------------------------------------------------------------------


def test_mujoco_value_has_the_registry_shape_for_every_field(model_path):
    mjm = mujoco.MjModel.from_xml_string(disable_constraints(model_path.read_text()))
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    sizes = _sizes(mjm)
    for spec in (*MODEL_FIELDS, *DATA_FIELDS):
        if spec.mujoco:
            obj = mjm if spec.stage == "model" else mjd
            shape = spec.resolve(sizes)
            value = mujoco_value(obj, spec.name, shape)
            assert value.shape == shape, spec.name
            if spec.name.startswith("contact_"):  # read from d.contact[i] (none here: contacts off)
                continue
            assert np.array_equal(value.ravel(), np.asarray(getattr(obj, spec.name)).ravel()) \
                or spec.name in ("actuator_moment", "ten_J"), spec.name  # densified from sparse


def test_mujoco_value_densifies_actuator_moment_and_keeps_m_csr(model_path, rng):
    mjm = mujoco.MjModel.from_xml_string(disable_constraints(model_path.read_text()))
    mjd = mujoco.MjData(mjm)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    mjd.qpos[:], mjd.qvel[:], mjd.ctrl[:], mjd.act[:] = qpos, qvel, ctrl, act
    mujoco.mj_forward(mjm, mjd)
    moment = mujoco_value(mjd, "actuator_moment", (mjm.nu, mjm.nv))
    # actuator_velocity = actuator_moment @ qvel (MuJoCo computes it from the sparse rows)
    assert_close("actuator_velocity", moment @ mjd.qvel, mjd.actuator_velocity, rtol=1e-12, atol=1e-14)
    # ten_J: sparse too, its pattern on mjModel; ten_velocity = ten_J @ qvel
    ten_j = mujoco_value(mjd, "ten_J", (mjm.ntendon, mjm.nv))
    assert_close("ten_velocity", ten_j @ mjd.qvel, mjd.ten_velocity, rtol=1e-12, atol=1e-14)
    # M is the lower triangle in CSR: row i at M_rowadr[i], columns M_colind, diagonal last
    dense = np.zeros((mjm.nv, mjm.nv))
    mujoco.mj_fullM(mjm, mjd, dense)  # MuJoCo 4.0 signature: (m, d, dst)
    M = mujoco_value(mjd, "M", (mjm.nC,))
    rebuilt = np.zeros((mjm.nv, mjm.nv))
    for i in range(mjm.nv):
        adr, nnz = mjm.M_rowadr[i], mjm.M_rownnz[i]
        cols = mjm.M_colind[adr:adr + nnz]
        assert cols[-1] == i and np.all(np.diff(cols) > 0)
        rebuilt[i, cols] = M[adr:adr + nnz]
        rebuilt[cols, i] = M[adr:adr + nnz]
    assert_close("M", rebuilt, dense, **EXACT)


# ---- comparison helpers -------------------------------------------------------------------------


def test_compare_tolerance_is_relative_with_an_absolute_floor():
    x = np.array([1.0, -3.0e4, 0.0, 1e-20])
    assert compare("x", x, x * (1 + 0.5 * RTOL)) is None
    assert compare("x", x + 0.5 * ATOL, x) is None
    report = compare("xfield", x, x * np.array([1, 1 + 10 * RTOL, 1, 1]))
    assert report is not None and report.startswith("xfield:") and "worst at (1,)" in report
    assert compare("x", x, x + np.array([0, 0, 10 * ATOL, 0])) is not None
    assert compare("n", np.array([np.nan, np.inf]), np.array([np.nan, np.inf])) is None
    assert compare("n", np.array([np.nan]), np.array([0.0])) is not None
    assert compare("i", np.array([1, 2], np.uint8), np.array([True, True])) is not None
    assert compare("s", np.zeros((2, 3)), np.zeros(6)) is not None


def test_assert_fields_compares_every_computed_field_and_names_a_bad_one(rng):
    xml = random_mjcf_text(3)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd_a, mjd_b = mujoco.MjData(mjm), mujoco.MjData(mjm)
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    ours = _NaturalData(mjm, mjd_a)
    set_same_state(mjm, ours, mjm, mjd_b, qpos, qvel, ctrl, act, qfrc_applied=rng.normal(size=mjm.nv))
    assert np.array_equal(mjd_a.qfrc_applied, mjd_b.qfrc_applied)
    for mjd in (mjd_a, mjd_b):
        mujoco.mj_forward(mjm, mjd)
        mujoco.mj_inverse(mjm, mjd)
    compared = assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b, **EXACT)
    expected = [s.name for s in DATA_FIELDS if s.mujoco and s.stage not in ("state", "scratch")]
    assert compared == expected
    assert assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b, stage="position", skip="M") == \
        [s.name for s in DATA_FIELDS if s.stage == "position" and s.mujoco and s.name != "M"]

    mjd_a.xpos[2, 1] *= 1 + 1e-6
    with pytest.raises(AssertionError, match=re.escape("xpos: max abs err")) as info:
        assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b)
    assert "worst at (2, 1)" in str(info.value) and "xmat" not in str(info.value)


WRAPPED = """<mujoco><worldbody>
  <site name="a" pos="-0.3 0 0"/>
  <body><joint name="s" type="slide" axis="0 0 1"/>
    <geom name="w" type="cylinder" size="0.1 0.2" axisangle="1 0 0 90"/></body>
  <site name="b" pos="0.3 0 0"/>
</worldbody><tendon><spatial><site site="a"/><geom geom="w"/><site site="b"/></spatial>
</tendon></mujoco>"""


def test_assert_fields_compares_the_path_points_a_forward_pass_writes():
    """wrap_xpos / wrap_obj past sum(ten_wrapnum) keep what an earlier, longer path left (mj_tendon
    does not clear them): the oracle compares the live points only, and still every one of them."""
    mjm = mujoco.MjModel.from_xml_string(WRAPPED)
    stale, fresh = mujoco.MjData(mjm), mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, stale)  # the cylinder is in the way: four points
    assert stale.ten_wrapnum[0] == 4
    for mjd in (stale, fresh):
        mjd.qpos[0] = 1.0  # the cylinder out of the way: two points
        mujoco.mj_forward(mjm, mjd)
    assert stale.ten_wrapnum[0] == 2 and not np.array_equal(stale.wrap_xpos, fresh.wrap_xpos)
    ours, theirs = live_part("wrap_xpos", stale.wrap_xpos, fresh.wrap_xpos, stale, fresh)
    assert ours.shape == (2, 3) and np.array_equal(ours, theirs)
    assert_fields(mjm, _NaturalData(mjm, stale), mjm, fresh, names=("wrap_xpos", "wrap_obj"), **EXACT)
    stale.wrap_xpos[0, 3] += 1e-6  # the second point (MuJoCo keeps two per row): live
    with pytest.raises(AssertionError, match="wrap_xpos"):
        assert_fields(mjm, _NaturalData(mjm, stale), mjm, fresh, names="wrap_xpos")


def test_assert_model_fields_checks_sizes_options_and_every_model_field():
    mjm = mujoco.MjModel.from_xml_string(random_mjcf_text(5))
    other = mujoco.MjModel.from_xml_string(random_mjcf_text(5))
    compared = assert_model_fields(mjm, other, **EXACT)
    mujoco_sizes = [s for s in SIZE_NAMES if s not in KINEDYN_SIZES]
    assert compared[:len(mujoco_sizes)] == mujoco_sizes and "opt.gravity" in compared
    assert set(compared) >= {s.name for s in MODEL_FIELDS if s.mujoco}
    other.body_mass[1] += 1e-6
    other.opt.timestep *= 2
    with pytest.raises(AssertionError, match="body_mass") as info:
        assert_model_fields(mjm, other)
    assert "opt.timestep" in str(info.value)
    assert_model_fields(mjm, other, skip=("body_mass", "body_subtreemass", "opt.timestep"))


def test_gym_model_path_points_at_a_loadable_model():
    mjm = mujoco.MjModel.from_xml_path(str(gym_model_path("pusher")))
    assert mjm.nv > 0


# ---- cases.pair ---------------------------------------------------------------------------------


def test_pair_hands_out_independent_copies():
    """A test that changes options or fields of its pair cannot reach the next test's pair."""
    from cases import pair

    import kinedyn as kd

    xml = random_mjcf_text(7)
    m, d, mjm, mjd = pair(xml, "random tree 7")
    flags, gravity, mass = m.opt.disableflags, m.opt.gravity.copy(), m.body_mass.copy()
    mjflags, mjmass = int(mjm.opt.disableflags), np.array(mjm.body_mass)
    m.opt.disableflags = flags | kd.DisableBit.GRAVITY
    m.opt.gravity = 0.0
    m.body_mass[:] = 123.0
    mjm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
    mjm.body_mass[:] = 123.0
    m2, d2, mjm2, mjd2 = pair(xml, "random tree 7")
    assert m2 is not m and mjm2 is not mjm and d2.qpos is not d.qpos
    assert m2.opt.disableflags == flags and int(mjm2.opt.disableflags) == mjflags
    np.testing.assert_array_equal(m2.opt.gravity, gravity)
    np.testing.assert_array_equal(m2.body_mass, mass)
    np.testing.assert_array_equal(mjm2.body_mass, mjmass)
    # the copy is a working model: it computes MuJoCo's numbers
    qpos, qvel, ctrl, act = random_state(np.random.default_rng(0), mjm2)
    set_same_state(m2, d2, mjm2, mjd2, qpos, qvel, ctrl, act)
    kd.forward(m2, d2)
    mujoco.mj_forward(mjm2, mjd2)
    assert_fields(m2, d2, mjm2, mjd2)


def test_cfrc_int_has_a_floor_scaled_by_the_field_at_the_default_bar_only():
    """cfrc_int (the world's and a floating root's entries cancel to round-off) passes within
    CANCEL_FLOOR x its largest entry at the default bar; beyond it, or at an explicit bar, not."""
    mjm = mujoco.MjModel.from_xml_path(str(gym_model_path("humanoid")))
    mjd_a, mjd_b = mujoco.MjData(mjm), mujoco.MjData(mjm)
    for mjd in (mjd_a, mjd_b):
        mjd.qvel[:] = 0.3
        mujoco.mj_forward(mjm, mjd)
        mujoco.mj_rnePostConstraint(mjm, mjd)
    scale = np.abs(mjd_b.cfrc_int).max()
    assert scale > 1.0
    floor = CANCEL_FLOOR["cfrc_int"] * scale
    assert floor > 10 * ATOL
    mjd_a.cfrc_int[0, 3] = mjd_b.cfrc_int[0, 3] + 0.5 * floor
    assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b, names="cfrc_int")
    with pytest.raises(AssertionError, match="cfrc_int"):
        assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b, names="cfrc_int", **EXACT)
    mjd_a.cfrc_int[0, 3] = mjd_b.cfrc_int[0, 3] + 2 * floor
    with pytest.raises(AssertionError, match="cfrc_int"):
        assert_fields(mjm, _NaturalData(mjm, mjd_a), mjm, mjd_b, names="cfrc_int")
