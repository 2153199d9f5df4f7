"""kd.kinematics and kd.com_pos, each alone, vs mj_kinematics and mj_comPos.

Oracle: MuJoCo 4.0 on the same MJCF and qpos; only qpos is set, then exactly one
stage runs on each side, so a stage that silently relies on fields another stage
wrote would be caught. Tolerance: the oracle's (1e-9 relative, 1e-12 absolute).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from cases import pair as _pair
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from oracle import assert_fields, gym_model_path, load_pair, model_paths, set_same_state
from strategies import random_mjcf, random_mjcf_text, random_state

import kinedyn as kd

KINEMATICS_FIELDS = ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis",
                     "geom_xpos", "geom_xmat", "site_xpos", "site_xmat")
COM_POS_FIELDS = ("subtree_com", "cinert", "cdof")




def _check_stages(m, d, mjm, mjd, rng, nstates=3):
    for _ in range(nstates):
        qpos, qvel, _, _ = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel)
        kd.kinematics(m, d)
        mujoco.mj_kinematics(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=KINEMATICS_FIELDS)
        kd.com_pos(m, d)
        mujoco.mj_comPos(mjm, mjd)
        assert_fields(m, d, mjm, mjd, names=COM_POS_FIELDS)


def test_field_lists_cover_the_registry():
    """The two stages write every 'position' field but crb, M, qLD, the transmission's and
    camlight's (tests/test_camlight.py)."""
    from kinedyn.engine.fields import DATA_FIELDS

    later = {"crb", "M", "qLD", "qLDiagInv"}
    position = {f.name for f in DATA_FIELDS if f.stage == "position" and f.mujoco}
    ours = {n for n in position - later
            if not n.startswith(("ten_", "wrap_", "actuator_", "contact_", "cam_", "light_", "flex"))
            and n not in ("tree_awake", "body_awake")}  # mj_flex's, and the sleep state's
    assert ours == set(KINEMATICS_FIELDS) | set(COM_POS_FIELDS)


@pytest.mark.parametrize("path", model_paths(), ids=lambda p: p.stem)
def test_kinematics_model_files(path):
    m, d, mjm, mjd = _pair(path.read_text(), path.stem)
    _check_stages(m, d, mjm, mjd, np.random.default_rng(11))


@pytest.mark.parametrize("name", ["humanoid", "pusher", "ant"])
def test_kinematics_gym_models(name):
    path = gym_model_path(name)
    m, d, mjm, mjd = _pair(path.read_text(), f"gymnasium {name}.xml")
    _check_stages(m, d, mjm, mjd, np.random.default_rng(12))


@pytest.mark.parametrize("seed", range(0, 240, 3))
def test_kinematics_random_trees(seed):
    m, d, mjm, mjd = _pair(random_mjcf_text(seed), f"random tree {seed}")
    _check_stages(m, d, mjm, mjd, np.random.default_rng(seed))


@settings(max_examples=30, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(xml=random_mjcf(), state_seed=st.integers(0, 2**32 - 1))
def test_kinematics_hypothesis(xml, state_seed):
    m, d, mjm, mjd = load_pair(xml)
    _check_stages(m, d, mjm, mjd, np.random.default_rng(state_seed), nstates=2)


@pytest.mark.parametrize("seed", range(0, 60, 4))
def test_frames_are_rotations(seed):
    """FK property: xmat is orthonormal with det +1, and equals the matrix of the unit quaternion xquat."""
    m, d, mjm, _ = _pair(random_mjcf_text(seed), f"random tree {seed}")
    qpos, *_ = random_state(np.random.default_rng(seed), mjm)
    d.qpos[:] = qpos
    kd.kinematics(m, d)
    for b in range(m.nbody):
        r = d.xmat[b]
        np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-12)
        assert np.linalg.norm(d.xquat[b]) == pytest.approx(1.0, abs=1e-12)
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, d.xquat[b])
        np.testing.assert_allclose(mat.reshape(3, 3), r, atol=1e-12)
    for s in range(m.nsite):
        r = d.site_xmat[s]
        np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)


def test_world_body_is_identity():
    m, d, _, _ = _pair(random_mjcf_text(5), "random tree 5")
    kd.kinematics(m, d)
    np.testing.assert_array_equal(d.xpos[0], np.zeros(3))
    np.testing.assert_array_equal(d.xquat[0], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(d.xmat[0], np.eye(3))


@pytest.mark.parametrize("eps", ["1e-9", "1e-7"])
def test_near_identity_local_frames(eps):
    """Geoms/sites whose local frame is within MuJoCo's sameframe tolerance of the body frame.

    MuJoCo's compiler marks such frames ``geom_sameframe`` / ``site_sameframe`` and
    mj_kinematics then copies the body's xpos/xmat instead of composing the tiny
    rotation; the result differs from composing by ~eps. kinedyn must do the same.
    """
    xml = f"""<mujoco>
  <worldbody>
    <body name="b" euler="0.3 0.2 0.1">
      <joint type="ball"/>
      <geom type="box" size="0.1 0.2 0.3" quat="1 {eps} 0 0"/>
      <site name="s" quat="1 0 {eps} 0"/>
      <body pos="0 0 .5">
        <joint type="hinge"/>
        <geom type="sphere" size="0.1" pos="0.1 0 0"/>
        <geom type="sphere" size=".1" pos="0 0 .1" quat="1 0 0 {eps}"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""
    m, d, mjm, mjd = _pair(xml, f"near-identity frames {eps}")
    assert mjm.geom_sameframe[0] != 0 and mjm.site_sameframe[0] != 0  # the case under test
    q = np.array([0.8, 0.2, -0.3, 0.4])
    set_same_state(m, d, mjm, mjd, np.r_[q / np.linalg.norm(q), 0.7], np.zeros(mjm.nv))
    kd.kinematics(m, d)
    mujoco.mj_kinematics(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=KINEMATICS_FIELDS)


def _quaternions(rng, n):
    """Unit quaternions, slightly off-unit ones (beyond mju_normalize4's 1e-15 band), the
    identity, a zero and a tiny one: the inputs whose branches the helpers must share with MuJoCo."""
    unit = rng.normal(size=(n, 4))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    off_unit = unit * rng.uniform(0.5, 2.0, size=(n, 1))
    special = np.array([[1.0, 0, 0, 0], [0.0, 0, 0, 0], [1e-16, 0, 0, 0], [0.0, -0.0, 1.0, 0.0]])
    return np.vstack([unit, off_unit, special])


def test_quaternion_helpers_match_mju():
    """The component and row forms of the util_spatial quaternion helpers against mju_* on the same
    inputs, bit for bit: mju_rotVecQuat, mju_axisAngle2Quat, mju_normalize3, and mju_mulQuat,
    mju_quat2Mat, mju_normalize4, mju_subQuat, whose sums MuJoCo 4.0's binary takes in pairs
    (read off libmujoco.so.4.0.0; summed left to right, 220, 221 and 24 of 300 random
    quaternions differed by up to 3.3e-16)."""
    from kinedyn.engine import util_spatial

    def close(ours, expected, scale=1.0):
        return np.array_equal(np.ravel(ours), np.ravel(expected))

    rng = np.random.default_rng(5)
    quats = _quaternions(rng, 200)
    vecs = np.vstack([rng.normal(size=(len(quats) - 1, 3)), np.zeros((1, 3))])
    for q, q2, v in zip(quats, quats[::-1], vecs, strict=True):
        expected = np.empty(4)
        mujoco.mju_mulQuat(expected, q, q2)
        size = max(1.0, np.abs(q).max() * np.abs(q2).max())
        assert close(util_spatial.quat_product(*q, *q2), expected, scale=size)
        row = np.empty((1, 4))
        util_spatial.mul_quat(row, 0, q[None], 0, q2[None], 0)
        assert np.array_equal(row[0], util_spatial.quat_product(*q, *q2))

        expected = q.copy()
        mujoco.mju_normalize4(expected)
        assert close(util_spatial.normalized_quat(*q), expected)
        row = q[None].copy()
        util_spatial.normalize4(row, 0)
        assert np.array_equal(row[0], util_spatial.normalized_quat(*q))

        unit = expected
        expected = np.empty(3)
        mujoco.mju_rotVecQuat(expected, v, unit)
        assert np.array_equal(util_spatial.rotated_by_quat(*v, *unit), expected)
        row = np.empty((1, 3))
        util_spatial.rot_vec_quat(row, 0, v[None], 0, unit[None], 0)
        assert np.array_equal(row[0], expected)

        expected = np.empty(9)
        mujoco.mju_quat2Mat(expected, unit)
        assert close(util_spatial.rotation_of_quat(*unit), expected)
        mat = np.empty((1, 3, 3))
        util_spatial.quat2mat(mat, 0, unit[None], 0)
        assert np.array_equal(mat[0].ravel(), util_spatial.rotation_of_quat(*unit))

        axis = v / np.linalg.norm(v) if v.any() else np.array([0.0, 0.0, 1.0])
        for angle in (0.0, float(q[0]) * 7.0):
            expected = np.empty(4)
            mujoco.mju_axisAngle2Quat(expected, axis, angle)
            assert np.array_equal(util_spatial.quat_about_axis(*axis, angle), expected)

        expected = v.copy()
        norm = mujoco.mju_normalize3(expected)
        row = v[None].copy()
        assert util_spatial.normalize3(row, 0) == norm
        assert np.array_equal(row[0], expected)

        other = np.empty(4)
        mujoco.mju_mulQuat(other, unit, q2)
        mujoco.mju_normalize4(other)
        expected = np.empty(3)
        mujoco.mju_subQuat(expected, unit, other)
        row = np.empty((1, 3))
        util_spatial.sub_quat(row, 0, unit[None], 0, other[None], 0, np.empty((1, 4)), 0)
        assert np.array_equal(row[0], expected)


@pytest.mark.parametrize("name", ["humanoid", "ant"])
def test_kinematics_bit_equal(name):
    """Body, inertial, geom and site poses, then subtree_com, cinert, cdof, cvel and cdof_dot
    equal MuJoCo 4.0's bit for bit on random states (4.0's summation orders: mju_mulQuat,
    mju_quat2Mat, mju_normalize4, offsets rotated then translated, mju_mulDofVec); 1e-16..1e-15
    off before, which GJK/EPA amplified into contact frames."""
    path = gym_model_path(name)
    m, d, mjm, mjd = _pair(path.read_text(), f"gymnasium {name}.xml")
    rng = np.random.default_rng(21)
    for _ in range(3):
        qpos, qvel, _, _ = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel)
        kd.kinematics(m, d)
        mujoco.mj_kinematics(mjm, mjd)
        for f in KINEMATICS_FIELDS:
            ours = np.asarray(getattr(d, f)).ravel()
            assert np.array_equal(ours, getattr(mjd, f).ravel()), f
        # and the com-based quantities and velocities after them (mj_comPos, mj_comVel: free
        # and ball joints add their three dofs' velocity as one mju_mulDofVec)
        from kinedyn.engine.smooth_rne import com_vel

        kd.com_pos(m, d)
        mujoco.mj_comPos(mjm, mjd)
        com_vel(m, d)
        mujoco.mj_comVel(mjm, mjd)
        for f in (*COM_POS_FIELDS, "cvel", "cdof_dot"):
            ours = np.asarray(getattr(d, f)).ravel()
            assert np.array_equal(ours, getattr(mjd, f).ravel()), f
