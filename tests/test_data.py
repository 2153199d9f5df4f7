"""The Data / Model API: allocation, shape-checked assignment, reset (with keyframes), name lookup.

Oracle for reset and names: MuJoCo (mj_resetData, mj_resetDataKeyframe, mj_name2id)
on the same MJCF. The rest checks the API's own behaviour directly: shape mismatches
raise at once, unknown names raise KeyError naming the closest known names.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import pair
from oracle import model_paths
from strategies import random_mjcf_text, random_state

import kinedyn as kd
from kinedyn.engine.fields import DATA_FIELDS, MODEL_FIELDS, SIZE_NAMES

KEYFRAME_SEEDS = (5, 11, 16, 32, 42)  # random trees that have a keyframe and actuators


def _pair(xml: str, label: str = "random tree"):
    """cases.pair: private copies of the per-process compiled models, fresh Data."""
    return pair(xml, label)


# ---- allocation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(0, 30, 3))
def test_new_data_is_qpos0_and_zeros(seed):
    m, d, mjm, mjd = _pair(random_mjcf_text(seed))
    sizes = {s: getattr(m, s) for s in SIZE_NAMES}
    for spec in DATA_FIELDS:
        value = d._array(spec.name)
        assert value.shape == spec.resolve(sizes), spec.name
        assert value.dtype == spec.dtype, spec.name
        if spec.name == "eq_active":
            np.testing.assert_array_equal(value, m.eq_active0)
        elif spec.name in ("tree_asleep", "tree_awake", "body_awake"):
            # the sleep state: every tree awake, as MuJoCo's new data
            np.testing.assert_array_equal(value, getattr(mjd, spec.name), err_msg=spec.name)
        elif spec.name != "qpos":
            assert not value.any(), f"{spec.name} is not zero in a new Data"
    np.testing.assert_array_equal(d.qpos, mjd.qpos)  # MuJoCo's new data starts at qpos0 too
    assert d.time == 0.0


def test_data_needs_a_model():
    with pytest.raises(TypeError):
        kd.Data(object())


def test_model_sizes_and_fields_have_registry_shapes():
    m, _, mjm, _ = _pair(random_mjcf_text(8))
    sizes = {s: getattr(m, s) for s in SIZE_NAMES}
    for s in ("nq", "nv", "nu", "na", "nbody", "njnt", "ngeom", "nsite"):
        assert sizes[s] == getattr(mjm, s), s
    for spec in MODEL_FIELDS:
        assert getattr(m, spec.name).shape == spec.resolve(sizes), spec.name


# ---- shape-checked assignment --------------------------------------------------------------------


def test_whole_field_assignment_copies_in_place():
    m, d, _, _ = _pair(random_mjcf_text(1))
    before = d.qvel
    values = np.arange(m.nv, dtype=float)
    d.qvel = values
    assert d.qvel is before  # kernels hold this exact array
    np.testing.assert_array_equal(d.qvel, values)
    values[0] = 99.0
    assert d.qvel[0] != 99.0 or m.nv == 0  # copied, not aliased
    d.qvel = 0.5  # a scalar broadcasts
    assert np.all(d.qvel == 0.5)
    d.xfrc_applied = np.ones((m.nbody, 6))
    assert np.all(d.xfrc_applied == 1.0)


@pytest.mark.parametrize("name", ["qpos", "qvel", "ctrl", "act", "qfrc_applied", "xfrc_applied", "qacc"])
def test_wrong_shape_assignment_raises_at_once(name):
    m, d, _, _ = _pair(random_mjcf_text(5))
    target = getattr(d, name)
    before = target.copy()
    for bad in (np.zeros(target.size + 1), np.zeros((2,) + target.shape), np.zeros(target.shape + (1,))):
        with pytest.raises(ValueError, match=name):
            setattr(d, name, bad)
    np.testing.assert_array_equal(getattr(d, name), before)  # nothing half-written


def test_unknown_data_attribute_raises():
    _, d, _, _ = _pair(random_mjcf_text(5))
    with pytest.raises(AttributeError):
        d.qpso = np.zeros(3)


def test_model_field_assignment_is_shape_checked():
    m, _, _, _ = _pair(random_mjcf_text(6))
    with pytest.raises(ValueError, match="body_mass"):
        m.body_mass = np.zeros(m.nbody + 1)
    with pytest.raises(AttributeError):
        m.nv = 3


def test_time_and_option_writes_reach_the_kernels():
    m, d, _, _ = _pair(random_mjcf_text(7))
    m_saved = m.opt.timestep
    try:
        d.time = 1.25
        m.opt.timestep = 0.004
        kd.step(m, d)
        assert d.time == pytest.approx(1.254)
        with pytest.raises(ValueError):
            m.opt.timestep = 0.0
        with pytest.raises(ValueError):
            m.opt.integrator = 5  # no such integrator
    finally:
        m.opt.timestep = m_saved


def test_copy_is_deep():
    m, d, mjm, _ = _pair(random_mjcf_text(3))
    qpos, qvel, _, _ = random_state(np.random.default_rng(0), mjm)
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    kd.forward(m, d)
    c = d.copy()
    for spec in DATA_FIELDS:
        np.testing.assert_array_equal(getattr(c, spec.name), getattr(d, spec.name), err_msg=spec.name)
        assert getattr(c, spec.name) is not getattr(d, spec.name)
    c.qvel[:] = 0.0
    kd.forward(m, c)
    assert not np.array_equal(c.qvel, d.qvel) or m.nv == 0


# ---- reset ---------------------------------------------------------------------------------------


def _dirty(m, d, mjm, mjd, rng):
    qpos, qvel, ctrl, act = random_state(rng, mjm)
    for obj in (d, mjd):
        obj.qpos[:] = qpos
        obj.qvel[:] = qvel
        obj.ctrl[:] = ctrl
        obj.act[:] = act
        obj.qfrc_applied[:] = 1.0
        obj.xfrc_applied[:] = 1.0
        obj.time = 3.0
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)


@pytest.mark.parametrize("seed", KEYFRAME_SEEDS)
def test_reset_matches_mj_resetData(seed):
    m, d, mjm, mjd = _pair(random_mjcf_text(seed))
    _dirty(m, d, mjm, mjd, np.random.default_rng(seed))
    kd.reset(m, d)
    mujoco.mj_resetData(mjm, mjd)
    for name in ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied", "qacc", "act_dot"):
        ours = getattr(d, name)
        np.testing.assert_array_equal(ours, np.asarray(getattr(mjd, name)).reshape(ours.shape), err_msg=name)
    assert d.time == mjd.time == 0.0
    for spec in DATA_FIELDS:
        if spec.name == "eq_active":
            np.testing.assert_array_equal(d.eq_active, m.eq_active0)
        elif spec.name in ("tree_asleep", "tree_awake", "body_awake"):
            # the sleep state: every tree awake, as mj_resetData leaves it
            np.testing.assert_array_equal(d._array(spec.name), getattr(mjd, spec.name), err_msg=spec.name)
        elif spec.name != "qpos":
            assert not d._array(spec.name).any(), f"{spec.name} not cleared by reset"


@pytest.mark.parametrize("seed", KEYFRAME_SEEDS)
@pytest.mark.parametrize("by", ["id", "name"])
def test_reset_with_keyframe_matches_mj_resetDataKeyframe(seed, by):
    m, d, mjm, mjd = _pair(random_mjcf_text(seed))
    assert m.nkey == mjm.nkey == 1
    _dirty(m, d, mjm, mjd, np.random.default_rng(seed))
    kd.reset(m, d, 0 if by == "id" else "k0")
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
    for name in ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied"):
        ours = getattr(d, name)
        np.testing.assert_array_equal(ours, np.asarray(getattr(mjd, name)).reshape(ours.shape), err_msg=name)
    assert d.time == mjd.time
    # and the state forwards to MuJoCo's numbers
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    np.testing.assert_allclose(d.qacc, mjd.qacc, rtol=1e-9, atol=1e-12)


def test_reset_with_unknown_keyframe_raises():
    m, d, _, _ = _pair(random_mjcf_text(KEYFRAME_SEEDS[0]))
    with pytest.raises(KeyError, match="k0"):
        kd.reset(m, d, "k1")
    with pytest.raises(KeyError):
        kd.reset(m, d, 5)


# ---- names ---------------------------------------------------------------------------------------


_KINDS = {"body": mujoco.mjtObj.mjOBJ_BODY, "jnt": mujoco.mjtObj.mjOBJ_JOINT,
          "geom": mujoco.mjtObj.mjOBJ_GEOM,
          "site": mujoco.mjtObj.mjOBJ_SITE, "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR,
          "key": mujoco.mjtObj.mjOBJ_KEY}


def _check_names(m, mjm):
    accessor = {"body": m.body, "jnt": m.joint, "geom": m.geom, "site": m.site,
                "actuator": m.actuator, "key": m.key}
    checked = 0
    for kind, obj in _KINDS.items():
        for i, name in enumerate(m.names[kind]):
            assert name == (mujoco.mj_id2name(mjm, obj, i) or ""), (kind, i)
            if not name:
                continue
            assert m.name2id(kind, name) == mujoco.mj_name2id(mjm, obj, name) == i
            named = accessor[kind](name)
            assert (named.id, named.name) == (i, name)
            assert accessor[kind](i).name == name
            checked += 1
    return checked


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_name_lookup_matches_mujoco_random(seed):
    m, _, mjm, _ = _pair(random_mjcf_text(seed))
    assert _check_names(m, mjm) > 0


@pytest.mark.parametrize("path", model_paths(), ids=lambda p: p.stem)
def test_name_lookup_matches_mujoco_model_files(path):
    m, _, mjm, _ = _pair(path.read_text(), path.stem)
    _check_names(m, mjm)


def test_unknown_name_raises_keyerror_with_suggestions():
    m, _, _, _ = _pair(random_mjcf_text(KEYFRAME_SEEDS[0]))
    body = m.names["body"][1]
    with pytest.raises(KeyError) as info:
        m.body(body + "x")
    assert repr(body) in str(info.value)  # the closest known name is suggested
    joint = m.names["jnt"][0]
    with pytest.raises(KeyError) as info:
        m.joint(joint.upper())
    assert joint in str(info.value)
    with pytest.raises(KeyError) as info:
        m.actuator("zzzzzz")
    assert "a0" in str(info.value)  # nothing close: some known names are listed
    with pytest.raises(KeyError):
        m.body(m.nbody)  # id out of range
    with pytest.raises(KeyError):
        m.name2id("bogus_kind", "b0")


def test_kinds_without_objects_say_so():
    xml = ('<mujoco><worldbody><body name="b"><joint type="hinge"/><geom size="0.1"/></body>'
           '</worldbody></mujoco>')
    m, _, _, _ = _pair(xml)
    with pytest.raises(KeyError, match="none"):
        m.site("tip")
