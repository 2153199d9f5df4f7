"""kinedyn.mujoco against MuJoCo's own bindings: the same calls on the same model give the same
fields, shapes and numbers; gymnasium's MuJoCo environments run unchanged on it.

The gymnasium comparison runs each side in its own process (``install()`` replaces ``mujoco`` in
the process), both at once; the rest compares in this process, ``kinedyn.mujoco`` next to
``mujoco``.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

import kinedyn
import kinedyn.mujoco as kmj

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import gymnasium_on_kinedyn as gym_run  # noqa: E402

XML = """
<mujoco model="api">
  <option timestep="0.004"/>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <body name="box" pos="0 0 0.3">
      <freejoint name="free"/>
      <geom name="box" type="box" size="0.1 0.08 0.05" mass="1.5"/>
      <site name="corner" pos="0.1 0.08 0.05"/>
    </body>
    <body name="arm" pos="0.6 0 0.5">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1 1" damping="0.2"/>
      <geom name="upper" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" armature="0.01"/>
        <geom name="lower" type="capsule" fromto="0 0 0 0.25 0 0" size="0.025"/>
        <site name="hand" pos="0.25 0 0"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="coupling"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="-0.5"/></fixed>
  </tendon>
  <actuator>
    <motor name="shoulder" joint="shoulder" ctrlrange="-2 2"/>
    <position name="elbow" joint="elbow" kp="10"/>
  </actuator>
  <sensor>
    <jointpos name="q_elbow" joint="elbow"/>
    <framepos name="hand_pos" objtype="site" objname="hand"/>
    <touch name="touch" site="corner"/>
  </sensor>
  <keyframe>
    <key name="lifted" qpos="0.1 0 0.5 1 0 0 0 0.3 -0.2" ctrl="0.5 0.1"/>
  </keyframe>
</mujoco>
"""

# fields kinedyn lays out densely where MuJoCo 4.0 is sparse (docs/running-mujoco-code.md)
DENSE = {"ten_J", "actuator_moment", "efc_J", "flexedge_J"}


def _close(a, b, rtol=1e-9, atol=1e-12):
    return np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def pair():
    """(MuJoCo model, data), (kinedyn.mujoco model, data), both at the keyframe, stepped a little."""
    mm, km = mujoco.MjModel.from_xml_string(XML), kmj.MjModel.from_xml_string(XML)
    md, kd_ = mujoco.MjData(mm), kmj.MjData(km)
    for mod, m, d in ((mujoco, mm, md), (kmj, km, kd_)):
        mod.mj_resetDataKeyframe(m, d, 0)
        d.qvel[:] = np.linspace(-0.5, 0.5, m.nv)
        mod.mj_step(m, d, nstep=100)  # the box lands on the floor
        mod.mj_forward(m, d)
        mod.mj_rnePostConstraint(m, d)
    assert md.ncon > 0
    return (mm, md), (km, kd_)


def test_gymnasium_environments_match_mujoco():
    """gymnasium's v5 MuJoCo environments, unchanged, after install(): the same seeded episodes
    (actions, resets) as on MuJoCo 4.0 give the same observations, rewards and flags."""
    nsteps = 300
    ours, theirs = gym_run.run_both(gym_run.ENVS, nsteps=nsteps, seed=0)
    assert str(ours["backend"]) == "kinedyn.mujoco" and str(theirs["backend"]) == "mujoco"
    resets = 0
    for env_id in gym_run.ENVS:
        assert str(ours[f"{env_id}/model_type"]) == "kinedyn.mujoco._structs.MjModel"
        c = gym_run.compare(ours, theirs, env_id, nsteps)
        assert c["obs"] <= 1e-6 and c["reward"] <= 1e-6, (env_id, c)
        assert c["flags_equal"], env_id
        resets += c["resets"]
    assert resets > 50  # the episodes end and restart


def test_install_replaces_mujoco_and_its_submodules():
    """In a fresh process: install() after the real mujoco was imported warns, then `import mujoco`,
    `mujoco.rollout` and the rendering submodules resolve to kinedyn.mujoco."""
    code = """if True:
        import sys, warnings
        import mujoco as real
        import kinedyn.mujoco
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kinedyn.mujoco.install()
        assert any("imported before" in str(w.message) for w in caught), caught
        import mujoco
        import mujoco.rollout
        from mujoco import _enums
        from mujoco.egl import GLContext
        assert mujoco is kinedyn.mujoco and mujoco is not real
        assert mujoco.rollout.rollout is kinedyn.mujoco.rollout.rollout and _enums.mjtGeom.mjGEOM_BOX == 6
        try:
            GLContext(64, 64)
        except kinedyn.mujoco.RenderingNotSupported as err:
            assert "kd.viewer" in str(err)
        else:
            raise AssertionError("GLContext did not refuse")
        kinedyn.mujoco.install()  # again: nothing to do
        print("ok")
    """
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_fields_have_mujocos_names_and_shapes(pair):
    (mm, md), (km, kd_) = pair
    for theirs, ours in ((mm, km), (md, kd_)):
        names = [n for n in dir(theirs) if not n.startswith("_")]
        shared = 0
        for name in names:
            value = getattr(theirs, name)
            if not isinstance(value, np.ndarray) or name in DENSE or name not in type(ours).__dict__ \
                    and name not in ours.__dict__:
                continue
            assert getattr(ours, name).shape == value.shape, name
            shared += 1
        assert shared > (150 if ours is km else 60)
    assert kd_.xmat.shape == (km.nbody, 9) and np.shares_memory(kd_.xmat, kd_.kd.xmat)
    for name in ("qpos", "qvel", "xpos", "cfrc_ext", "cinert", "cvel", "qfrc_actuator", "site_xpos", "xmat",
                 "geom_xmat", "sensordata", "ten_length", "qfrc_constraint", "efc_force", "M"):
        assert _close(getattr(kd_, name), getattr(md, name)), name
    assert kd_.time == pytest.approx(md.time, rel=1e-12) and kd_.ncon == md.ncon and kd_.nefc == md.nefc
    # writes reach the native arrays
    km.opt.timestep = km.opt.timestep
    assert km.opt is km.kd.opt and km.body_mass is km.kd.body_mass


def test_named_access(pair):
    (mm, md), (km, kd_) = pair
    checks = [
        (md.body("box"), kd_.body("box"), ("xpos", "xquat", "xmat", "cfrc_ext", "cvel", "subtree_com")),
        (md.joint("free"), kd_.joint("free"), ("qpos", "qvel", "qacc", "qfrc_constraint")),
        (md.joint("elbow"), kd_.jnt("elbow"), ("qpos", "qvel", "qfrc_bias")),
        (md.geom("lower"), kd_.geom("lower"), ("xpos", "xmat")),
        (md.site("hand"), kd_.site("hand"), ("xpos", "xmat")),
        (md.actuator("elbow"), kd_.actuator("elbow"), ("ctrl", "force", "length", "velocity")),
        (md.tendon("coupling"), kd_.tendon("coupling"), ("length", "velocity")),
        (md.sensor("hand_pos"), kd_.sensor("hand_pos"), ("data",)),
        (md.sensor("touch"), kd_.sensor("touch"), ("data",)),
        (mm.body("fore"), km.body("fore"), ("mass", "pos", "quat", "inertia", "parentid")),
        (mm.joint("shoulder"), km.joint("shoulder"), ("range", "qposadr", "type", "damping", "armature")),
        (mm.actuator("shoulder"), km.actuator("shoulder"), ("ctrlrange", "gear", "trnid")),
        (mm.key("lifted"), km.key("lifted"), ("qpos", "ctrl")),
        (mm.geom("box"), km.geom("box"), ("size", "type", "friction")),
    ]
    for theirs, ours, fields in checks:
        assert ours.id == theirs.id and ours.name == theirs.name
        for f in fields:
            a, b = getattr(ours, f), getattr(theirs, f)
            assert np.shape(a) == np.shape(b) and _close(a, b), (theirs.name, f)
    assert km.body(1) is km.body("box")          # by id too; made once
    kd_.joint("elbow").qpos[0] = 0.25            # a view: writes reach the state
    assert kd_.qpos[8] == 0.25 and kd_.kd.qpos[8] == 0.25
    kd_.qpos[8] = md.qpos[8]
    with pytest.raises(KeyError, match="shouldr|shoulder"):
        km.joint("shouldr")


def test_functions_with_out_arguments(pair):
    (mm, md), (km, kd_) = pair
    nv = mm.nv
    for fn, args in (("mj_jacSite", (1,)), ("mj_jacBody", (2,)), ("mj_jacBodyCom", (3,)),
                     ("mj_jacGeom", (2,)), ("mj_jac", (np.array([0.6, 0.1, 0.4]), 2))):
        a = [np.zeros((3, nv)), np.zeros((3, nv))]
        b = [np.zeros((3, nv)), np.zeros((3, nv))]
        getattr(mujoco, fn)(mm, md, *a, *args)
        getattr(kmj, fn)(km, kd_, *b, *args)
        assert _close(a[0], b[0]) and _close(a[1], b[1]), fn
    jacr = np.zeros((3, nv))
    kmj.mj_jacSite(km, kd_, None, jacr, 0)        # None: not wanted
    assert np.any(jacr)
    a, b = np.zeros((nv, nv)), np.zeros((nv, nv))
    mujoco.mj_fullM(mm, md, a)
    kmj.mj_fullM(km, kd_, b)
    assert _close(a, b)
    for i in range(md.ncon):
        a, b = np.zeros(6), np.zeros(6)
        mujoco.mj_contactForce(mm, md, i, a)
        kmj.mj_contactForce(km, kd_, i, b)
        assert _close(a, b, atol=1e-9)
    for objtype, objid in ((1, 1), (2, 3), (5, 3), (6, 1)):   # body, xbody, geom, site
        for local in (0, 1):
            a, b = np.zeros(6), np.zeros(6)
            mujoco.mj_objectVelocity(mm, md, objtype, objid, a, local)
            kmj.mj_objectVelocity(km, kd_, objtype, objid, b, local)
            assert _close(a, b), (objtype, objid, local)
    ids = np.zeros(1, np.int32), np.zeros(1, np.int32)
    pnt, vec = np.array([0.0, 0.0, 2.0]), np.array([0.05, 0.0, -1.0])
    assert kmj.mj_ray(km, kd_, pnt, vec, None, 1, -1, ids[0]) == pytest.approx(
        mujoco.mj_ray(mm, md, pnt, vec, None, 1, -1, ids[1]), rel=1e-12)
    assert ids[0][0] == ids[1][0]
    assert kmj.mj_getTotalmass(km) == pytest.approx(mujoco.mj_getTotalmass(mm), rel=1e-12)
    copied = kmj.MjData(km)
    kmj.mj_copyData(copied, km, kd_)
    assert np.array_equal(copied.qacc, kd_.qacc) and copied.time == kd_.time and copied.ncon == kd_.ncon
    assert len(kd_.contact) == md.ncon and kd_.contact.frame.shape == md.contact.frame.shape
    assert [c.geom1 for c in kd_.contact] == list(md.contact.geom1)
    with pytest.raises(ValueError, match="entries"):
        kmj.mj_fullM(km, kd_, np.zeros((nv, nv - 1)))


def test_names_state_and_enums(pair):
    (mm, md), (km, kd_) = pair
    for obj in (kmj.mjtObj.mjOBJ_BODY, kmj.mjtObj.mjOBJ_JOINT, kmj.mjtObj.mjOBJ_SITE, kmj.mjtObj.mjOBJ_SENSOR,
                kmj.mjtObj.mjOBJ_ACTUATOR, kmj.mjtObj.mjOBJ_KEY, kmj.mjtObj.mjOBJ_CAMERA):
        for name in ("box", "elbow", "hand", "touch", "shoulder", "lifted", "nothing"):
            assert kmj.mj_name2id(km, obj, name) == mujoco.mj_name2id(mm, int(obj), name), (obj, name)
        for i in range(-1, 4):
            assert kmj.mj_id2name(km, obj, i) == mujoco.mj_id2name(mm, int(obj), i), (obj, i)
    for sig in (kmj.mjtState.mjSTATE_FULLPHYSICS, kmj.mjtState.mjSTATE_INTEGRATION, kmj.mjtState.mjSTATE_QPOS
                | kmj.mjtState.mjSTATE_CTRL | kmj.mjtState.mjSTATE_XFRC_APPLIED):
        n = mujoco.mj_stateSize(mm, int(sig))
        assert kmj.mj_stateSize(km, sig) == n
        a, b = np.zeros(n), np.zeros(n)
        mujoco.mj_getState(mm, md, a, int(sig))
        kmj.mj_getState(km, kd_, b, sig)
        assert _close(a, b), sig
    full = np.zeros(kmj.mj_stateSize(km, kmj.mjtState.mjSTATE_INTEGRATION))
    kmj.mj_getState(km, kd_, full, kmj.mjtState.mjSTATE_INTEGRATION)
    other = copy.copy(kd_)
    kmj.mj_resetData(km, other)
    kmj.mj_setState(km, other, full, kmj.mjtState.mjSTATE_INTEGRATION)
    assert np.array_equal(other.qpos, kd_.qpos) and np.array_equal(other.qacc_warmstart, kd_.qacc_warmstart)
    with pytest.raises(ValueError, match="signature"):
        kmj.mj_stateSize(km, 1 << 20)
    # every mjt* enumeration, name and value, as the wheel's
    wheel = sorted(n for n in dir(mujoco) if n.startswith("mjt"))
    assert sorted(kmj._enums.ENUMS) == wheel
    for name in wheel:
        assert ({k: int(v) for k, v in getattr(mujoco, name).__members__.items()}
                == {k: int(v) for k, v in getattr(kmj, name).__members__.items()}), name
    assert kmj.__version__ == mujoco.__version__ == "4.0.0"


def test_stepping_resets_inverse_and_statistics(pair):
    (mm, _), (km, _) = pair
    md, kd_ = mujoco.MjData(mm), kmj.MjData(km)
    for mod, m, d in ((mujoco, mm, md), (kmj, km, kd_)):
        mod.mj_resetDataKeyframe(m, d, 0)
        for _ in range(40):                     # the split step, controls set between the halves
            mod.mj_step1(m, d)
            d.ctrl[:] = [np.sin(d.time), 0.2]
            mod.mj_step2(m, d)
        mod.mj_step(m, d, nstep=20)
        mod.mj_forward(m, d)
    for name in ("qpos", "qvel", "act", "sensordata", "qacc"):
        assert _close(getattr(kd_, name), getattr(md, name), rtol=1e-8, atol=1e-10), name
    assert np.array_equal(kd_.solver_niter, md.solver_niter)
    md.qacc[:] = kd_.qacc[:] = 0.3
    mujoco.mj_inverse(mm, md)
    kmj.mj_inverse(km, kd_)
    assert _close(kd_.qfrc_inverse, md.qfrc_inverse, rtol=1e-7, atol=1e-9)
    kmj.mj_resetData(km, kd_)
    assert np.array_equal(kd_.qpos, mm.qpos0) and kd_.time == 0
    assert km.stat.meanmass == pytest.approx(mm.stat.meanmass, rel=1e-12)
    assert km.stat.meaninertia == pytest.approx(mm.stat.meaninertia, rel=1e-9)


def test_warnings_are_counted_as_mujocos():
    """A diverging simulation: the same mjtWarning counted at the same step (then reset), as MuJoCo."""
    import warnings

    xml = """<mujoco><option timestep="0.03"><flag contact="disable"/></option><worldbody>
      <body><joint name="a" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -.3" size=".02"/>
        <body pos="0 0 -.3"><joint axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".02"/></body>
      </body></worldbody></mujoco>"""
    first = []
    for mod in (mujoco, kmj):
        m = mod.MjModel.from_xml_string(xml)
        d = mod.MjData(m)
        d.qvel[:] = [30.0, -30.0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(2000):
                mod.mj_step(m, d)
                if d.warning.number.any():
                    first.append((i, int(np.flatnonzero(d.warning.number)[0]), d.warning[5].lastinfo))
                    break
    assert len(first) == 2 and first[0] == first[1]
    assert first[0][1] == kmj.mjtWarning.mjWARN_BADQACC


def test_rollout_matches_mujocos(pair):
    from mujoco import rollout as mj_rollout

    (mm, _), (km, _) = pair
    nstate = mujoco.mj_stateSize(mm, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    md = mujoco.MjData(mm)
    mujoco.mj_resetDataKeyframe(mm, md, 0)
    x0 = np.zeros(nstate)
    mujoco.mj_getState(mm, md, x0, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    x0 = np.stack([x0, x0])
    x0[1, 3] += 0.1
    control = np.random.default_rng(0).uniform(-1, 1, (2, 30, mm.nu))
    state, sensor = mj_rollout.rollout(mm, md, x0, control)
    ours_state, ours_sensor = kmj.rollout.rollout(km, kmj.MjData(km), x0, control)
    assert ours_state.shape == state.shape and ours_sensor.shape == sensor.shape
    assert _close(ours_state, state, rtol=1e-8, atol=1e-10)
    assert _close(ours_sensor, sensor, rtol=1e-8, atol=1e-10)


def test_finite_difference_derivatives_match_mujocos(pair):
    """mjd_transitionFD and mjd_inverseFD through the adapter, into MuJoCo's out-arguments (None
    skips one), on the contact state of the fixture."""
    (mm, md), (km, kd_) = pair
    nx, nu, ns, nv = 2 * mm.nv + mm.na, mm.nu, mm.nsensordata, mm.nv
    ours = [np.zeros((nx, nx)), np.zeros((nx, nu)), np.zeros((ns, nx)), None]
    theirs = [np.zeros((nx, nx)), np.zeros((nx, nu)), np.zeros((ns, nx)), None]
    kmj.mjd_transitionFD(km, kd_, 1e-6, True, *ours)
    mujoco.mjd_transitionFD(mm, md, 1e-6, True, *theirs)
    for a, b in zip(ours[:3], theirs[:3], strict=True):
        assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max()
    shapes = ((nv, nv),) * 3 + ((nv, ns),) * 3 + ((nv, mm.nC),)
    ours, theirs = [np.zeros(sh) for sh in shapes], [np.zeros(sh) for sh in shapes]
    kmj.mjd_inverseFD(km, kd_, 1e-6, False, *ours)
    mujoco.mjd_inverseFD(mm, md, 1e-6, False, *theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert np.abs(a - b).max() <= 1e-6 * max(np.abs(b).max(), 1e-12)


def test_refused_names_say_why(pair):
    (_, _), (km, kd_) = pair
    with pytest.raises(kmj.RenderingNotSupported, match="kd.viewer"):
        kmj.Renderer(km)
    with pytest.raises(kmj.RenderingNotSupported, match="kd.viewer"):
        kmj.mjv_updateScene(km, kd_)
    with pytest.raises(kmj.RenderingNotSupported, match="viewer"):
        kmj.viewer.launch_passive(km, kd_)
    with pytest.raises(kinedyn.ModelError, match="MJCF"):
        kmj.MjModel.from_binary_path("model.mjb")
    with pytest.raises(AttributeError, match="kd.Spec"):
        kmj.MjSpec  # noqa: B018
    with pytest.raises(AttributeError, match="does not compute"):
        kd_.flexelem_aabb  # noqa: B018  (2-D/3-D flexes' element boxes: not built)
    if hasattr(kinedyn, "transition_fd"):
        (mm, md), _ = pair
        A, B = np.zeros((2 * mm.nv + mm.na,) * 2), np.zeros((2 * mm.nv + mm.na,) * 2)
        mujoco.mjd_transitionFD(mm, md, 1e-6, False, A, None, None, None)
        kmj.mjd_transitionFD(km, kd_, 1e-6, False, B, None, None, None)
        assert _close(A, B, rtol=1e-6, atol=1e-8)
    else:
        with pytest.raises(NotImplementedError, match="transition_fd"):
            kmj.mjd_transitionFD(km, kd_, 1e-6, False, None, None, None, None)
