"""kd.Spec (programmatic model building and MJCF export) against MuJoCo 4.0.

Oracle: MuJoCo loading the builder's own ``spec.to_xml()`` must give the model kinedyn
compiles from the same Spec (``oracle.assert_model_fields``) and the same forward pass
on random states; where a model also exists as a file (the bundled and the test models),
MuJoCo loading the original file is the reference too, so an export that drops or
rounds anything fails. Error paths check that a mistake is reported at the ``add_*``
call that made it, naming element and attribute.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from oracle import (
    REFUSED_MODELS,
    assert_fields,
    assert_forward_matches,
    assert_model_fields,
    disable_constraints,
    load_pair,
    model_paths,
    set_same_state,
)
from strategies import random_mjcf, random_state

import kinedyn as kd
from kinedyn.engine.fields import MODEL_FIELDS, SIZE_NAMES

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "build_arm3.py"


def _example():
    spec = importlib.util.spec_from_file_location("build_arm3", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mujoco(xml: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(disable_constraints(xml))


def assert_same_model(a: kd.Model, b: kd.Model) -> None:
    """Two kinedyn models are identical: sizes, options and every registry field, bit for bit."""
    for s in SIZE_NAMES:
        assert getattr(a, s) == getattr(b, s), s
    for o in ("timestep", "gravity", "integrator", "disableflags", "enableflags"):
        np.testing.assert_array_equal(getattr(a.opt, o), getattr(b.opt, o), err_msg=f"opt.{o}")
    for f in MODEL_FIELDS:
        np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name)


# ---- the 3-joint arm (docs/building.md, examples/build_arm3.py) ---------------------------------


def test_arm3_is_the_bundled_arm_and_matches_mujoco():
    spec = _example().build_arm3()
    xml = spec.to_xml()
    assert_model_fields(spec.compile(), mujoco.MjModel.from_xml_string(xml))
    # the built arm is the bundled file, as MuJoCo sees both
    assert_model_fields(spec.compile(), mujoco.MjModel.from_xml_path(str(kd.models.path("arm3"))))
    m, d, mjm, mjd = load_pair(xml)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(3), 4)


def test_arm3_trajectory_torques_match_mj_inverse():
    """The example's Newton-Euler loop (with rotor inertia) against mj_inverse sample by sample."""
    example = _example()
    spec = example.build_arm3(armature=0.02)
    m = spec.compile()
    mjm = _mujoco(spec.to_xml())
    mjd = mujoco.MjData(mjm)
    dt = 0.01
    time = np.arange(0.0, 0.5, dt)
    qs = 0.5 * np.sin(2 * np.pi * np.outer(time, (1.0, 0.5, 2.0)))
    tau = example.trajectory_torques(m, qs, dt)
    assert np.abs(tau).max() > 1.0  # the check below compares something
    v_prev, q_prev = np.zeros(3), qs[0]
    for t, q in enumerate(qs):
        v = (q - q_prev) / dt
        mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = q, v, (v - v_prev) / dt
        mujoco.mj_inverse(mjm, mjd)
        np.testing.assert_allclose(tau[t], mjd.qfrc_inverse, rtol=1e-9, atol=1e-12)
        q_prev, v_prev = q, v


def test_example_script_runs(tmp_path, capsys):
    out = tmp_path / "arm3.xml"
    _example().main(["--save", str(out), "--armature", "0.01"])
    assert "tau=" in capsys.readouterr().out
    assert mujoco.MjModel.from_xml_path(str(out)).nu == 3


# ---- every feature the builder models, built by hand ---------------------------------------------


def _feature_spec() -> kd.Spec:
    spec = kd.Spec(model="features", angle="degree", autolimits=True, timestep=0.004,
                   gravity=np.array([0.0, -1.0, -9.0]), integrator=kd.IntegratorType.IMPLICITFAST,
                   flag={"contact": "disable", "constraint": "disable"})
    spec.compiler.lengthrange.uselimit = True
    arm = spec.add_default("arm", joint=dict(damping=0.3, armature=0.01), geom=dict(density=800.0))
    arm.add_default("stiff", joint=dict(stiffness=5.0))
    spec.default.set("motor", gear=2.0)
    spec.default.tendon.stiffness = 0.5
    spec.worldbody.add_site(name="anchor", pos=(0, 0.1, 0.5))
    base = spec.worldbody.add_body(name="base", pos=(0, 0, 0.5), euler=(10, 20, 30), childclass="arm")
    base.add_joint(name="yaw", type=kd.JointType.HINGE, axis=(0, 0, 1), range=(-120, 120))
    base.add_geom(type="box", size=(0.05, 0.05, 0.05))
    base.add_site(name="s_base", pos=(0.05, 0, 0))
    frame = base.add_frame(pos=(0.1, 0, 0), axisangle=(0, 1, 0, 30))
    upper = frame.add_body(name="upper", xyaxes=(1, 0, 0, 0, 0, 1))
    upper.add_joint(name="shoulder", axis=(0, 1, 0), range=(-90, 90), class_="stiff")
    upper.add_inertial(pos=(0.15, 0, 0), mass=1.2, diaginertia=(0.001, 0.01, 0.01), quat=(1, 0, 0, 0))
    upper.add_geom(type="capsule", fromto=(0, 0, 0, 0.3, 0, 0), size=0.03)
    upper.add_site(name="s_upper", pos=(0.25, 0, 0.03))
    fore = upper.add_body(name="fore", pos=(0.3, 0, 0), zaxis=(0, 0.2, 1))
    fore.add_joint(name="elbow", axis=(0, 1, 0), range=(0, 140), springref=20)
    fore.add_joint(name="slide", type="slide", axis=(1, 0, 0), range=(-0.05, 0.05))
    fore.add_geom(type="cylinder", fromto=(0, 0, 0, 0.25, 0, 0), size=0.025, mass=0.6)
    fore.add_site(name="s_fore", pos=(0.1, 0, 0.03))
    wrist = fore.add_body(name="wrist", pos=(0.25, 0, 0))
    wrist.add_joint(name="ball", type="ball", range=(0, 60))
    wrist.add_geom(type="ellipsoid", size=(0.03, 0.02, 0.04), mass=0.2)
    wrist.add_site(name="hand", pos=(0.04, 0, 0))
    box = spec.worldbody.add_body(name="box", pos=(1, 0, 1))
    box.add_freejoint(name="free")
    box.add_geom(type="sphere", size=0.1, mass=2.0)

    flex = spec.add_tendon("fixed", name="coupled", range=(-0.5, 0.5))
    flex.wrap_joint("shoulder", 1.0)
    flex.wrap_joint(spec.joint("elbow"), -0.5)  # an element stands for its name
    # a limited tendon: <lengthrange uselimit="true"/> takes the muscle's lengthrange from its range
    biceps = spec.add_tendon("spatial", name="biceps", range=(0.3, 0.9))
    for site in ("anchor", "s_base", "s_upper", "s_fore"):
        biceps.wrap_site(site)

    spec.add_actuator(kind="motor", name="m_yaw", joint="yaw", ctrlrange=(-1, 1))
    spec.add_actuator(kind="position", name="p_shoulder", joint="shoulder", kp=20, dampratio=1,
                      inheritrange=1)
    spec.add_actuator(kind="velocity", name="v_slide", joint="slide", kv=3)
    spec.add_actuator(kind="intvelocity", name="iv_elbow", joint="elbow", kp=10, actrange=(-1, 1))
    spec.add_actuator(kind="muscle", name="mus", tendon="biceps")
    spec.add_actuator(kind="cylinder", name="cyl", tendon="coupled", timeconst=0.05, area=0.01)
    spec.add_actuator(kind="general", name="g_ball", joint="ball", gear=(0, 1, 0), dyntype="filterexact",
                      dynprm=0.02, gainprm=2.0, biastype="affine", biasprm=(0, -1, -0.1))
    spec.add_actuator(kind="damper", name="d_free", joint="free", kv=1, ctrlrange=(0, 1),
                      gear=(0, 0, 1, 0, 0, 0))
    spec.add_actuator(kind="motor", name="site_push", site="hand", gear=(1, 0, 0, 0, 0, 0))
    spec.add_key(name="home", qpos=[0, 10, 20, 0.01, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0])
    return spec


def test_feature_model_matches_mujoco():
    spec = _feature_spec()
    xml = spec.to_xml()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing in it is unsimulated
        m = spec.compile()
    mjm = mujoco.MjModel.from_xml_string(xml)  # as written: the flags are set by the Spec
    assert (m.nq, m.nv, m.nu, m.na, m.ntendon, m.nkey) == (15, 13, 9, 4, 2, 1)
    assert_model_fields(m, mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)  # a Data of m itself: one of another compile is refused
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(7), 4)


def test_feature_model_round_trips():
    spec = _feature_spec()
    again = kd.Spec.from_xml_string(spec.to_xml())
    assert again.to_xml() == spec.to_xml()
    assert_same_model(again.compile(), spec.compile())


# ---- test and bundled models through the builder ------------------------------------------------


def _model_files():
    out = [pytest.param(p, id=p.stem) for p in model_paths()]
    return out + [pytest.param(kd.models.path(n), id=f"bundled-{n}") for n in kd.models.names()]


@pytest.mark.parametrize("path", _model_files())
def test_model_file_rebuilt_through_the_builder(path):
    """Spec.from_xml_path (every element through add_*) -> to_xml: MuJoCo gets the model of the
    original file, and kinedyn compiles the export to MuJoCo's numbers."""
    original = Path(path).read_text()
    spec = kd.Spec.from_xml_path(path)
    xml = spec.to_xml()
    assert kd.Spec.from_xml_string(xml).to_xml() == xml
    refused = REFUSED_MODELS.get(Path(path).stem)
    if refused is not None:
        # a model kinedyn refuses on purpose: the export must be refused the same way
        with pytest.raises(kd.ModelError, match=refused) as err:
            kd.Model.from_xml_string(disable_constraints(original))
        with pytest.raises(kd.ModelError) as again:
            kd.Model.from_xml_string(disable_constraints(xml))
        assert again.value.reason == err.value.reason
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.UnsimulatedFeatureWarning)
        m, d, mjm, mjd = load_pair(xml)
    assert_model_fields(m, _mujoco(original))
    assert_model_fields(m, mjm)
    assert_forward_matches(m, d, mjm, mjd, np.random.default_rng(11), 2)


@settings(max_examples=15)
@given(random_mjcf(max_bodies=6))
def test_random_mjcf_round_trip(xml):
    """Random trees from tests/strategies.py: the builder's export compiles to the same model."""
    xml_out = kd.Spec.from_xml_string(xml).to_xml()
    assert_same_model(kd.Model.from_xml_string(xml_out), kd.Model.from_xml_string(xml))
    assert_model_fields(kd.Model.from_xml_string(xml_out), mujoco.MjModel.from_xml_string(xml_out))


# ---- random trees built through the API ---------------------------------------------------------

_ORIENTATIONS = (None, "quat", "axisangle", "euler", "xyaxes", "zaxis")


def _unit(draw, n=3):
    while True:
        v = np.array(draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)))
        if np.linalg.norm(v) > 0.2:
            return v


def _orientation(draw, degree):
    form = draw(st.sampled_from(_ORIENTATIONS))
    angle = draw(st.floats(-math.pi, math.pi))
    angle = math.degrees(angle) if degree else angle
    if form is None:
        return {}
    if form == "quat":
        return {"quat": _unit(draw, 4)}
    if form == "axisangle":
        return {"axisangle": (*_unit(draw), angle)}
    if form == "euler":
        return {"euler": [angle, angle / 2, -angle / 3]}
    if form == "xyaxes":
        x = _unit(draw)
        y = np.cross(x, _unit(draw))
        return {"xyaxes": np.concatenate([x, y])} if np.linalg.norm(y) > 0.2 else {}
    return {"zaxis": tuple(_unit(draw))}


@st.composite
def random_spec(draw) -> kd.Spec:
    """A random kinematic tree built with add_body/add_joint/add_geom/add_site/add_actuator.

    Values are passed as NumPy arrays, tuples, lists and floats. Every body carries a geom
    with mass (MuJoCo rejects moving bodies without mass) and holds at most one joint, so M
    stays well conditioned.
    """
    degree = draw(st.booleans())
    spec = kd.Spec(model="random", angle="degree" if degree else "radian",
                   timestep=draw(st.floats(1e-4, 1e-2)), gravity=_unit(draw) * 9.81,
                   integrator=draw(st.sampled_from(("Euler", "RK4", "implicitfast"))),
                   flag=dict(constraint="disable", contact="disable"))
    bodies = [spec.worldbody]
    scalar_joints = []
    for i in range(draw(st.integers(1, 7))):
        parent = bodies[draw(st.integers(max(0, len(bodies) - 2), len(bodies) - 1))]
        body = parent.add_body(name=f"b{i}", pos=np.array(draw(st.lists(st.floats(-1, 1), min_size=3,
                                                                         max_size=3))),
                               **_orientation(draw, degree))
        jtype = draw(st.sampled_from(("hinge", "slide", "ball", "free" if parent is spec.worldbody
                                      else "hinge", None)))
        if jtype == "free":
            body.add_freejoint(name=f"j{i}")
        elif jtype is not None:
            extra = {}
            if jtype != "ball":
                extra["axis"] = _unit(draw)
                if draw(st.booleans()):
                    extra["range"] = (-1.0, 1.0) if not degree or jtype == "slide" else (-57.0, 57.0)
                scalar_joints.append(f"j{i}")
            body.add_joint(name=f"j{i}", type=jtype, damping=draw(st.floats(0, 1)),
                           armature=draw(st.floats(0, 0.1)), stiffness=draw(st.floats(0, 5)), **extra)
        gtype = draw(st.sampled_from(("sphere", "capsule", "box", "cylinder", "ellipsoid")))
        size = [draw(st.floats(0.02, 0.3)) for _ in range({"sphere": 1, "capsule": 2,
                                                         "cylinder": 2}.get(gtype, 3))]
        body.add_geom(type=gtype, size=size, mass=draw(st.floats(0.1, 3.0)),
                      pos=tuple(draw(st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3))),
                      **_orientation(draw, degree))
        if draw(st.booleans()):
            body.add_site(name=f"s{i}", pos=(0.1, 0.0, 0.0), **_orientation(draw, degree))
        bodies.append(body)
    for k, joint in enumerate(draw(st.lists(st.sampled_from(scalar_joints), max_size=3))
                              if scalar_joints else []):
        kind = draw(st.sampled_from(("motor", "position", "velocity")))
        gains = {"position": {"kp": 10.0}, "velocity": {"kv": 2.0}}.get(kind, {})
        spec.add_actuator(kind=kind, name=f"a{k}", joint=joint, gear=draw(st.floats(0.5, 2.0)), **gains)
    return spec


@settings(max_examples=20, suppress_health_check=[HealthCheck.large_base_example])
@given(random_spec(), st.integers(0, 2**32 - 1))
def test_random_spec_matches_mujoco(spec, seed):
    xml = spec.to_xml()
    note(xml)
    m = spec.compile()
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert_model_fields(m, mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    set_same_state(m, d, mjm, mjd, *random_state(np.random.default_rng(seed), mjm))
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    # the factor and solve fields carry M's last-bit round-off (docs/deviations.md; judged in
    # test_forward.py): compare qacc normwise here, everything else elementwise
    assert_fields(m, d, mjm, mjd, skip=("qLD", "qLDiagInv", "qacc", "qacc_smooth"))
    assert np.abs(d.qacc - mjd.qacc).max(initial=0.0) <= 1e-9 * np.abs(mjd.qacc).max(initial=0.0) + 1e-12


# ---- attribute access ---------------------------------------------------------------------------


def test_attributes_read_and_write_as_python_values():
    spec = kd.Spec(timestep=0.001)
    assert spec.option.timestep == 0.001
    spec.option.gravity = np.array([0, 0, -1.62])
    assert spec.option.gravity == (0.0, 0.0, -1.62)
    body = spec.worldbody.add_body(name="b", pos=[1, 2, 3])
    assert body.pos == (1.0, 2.0, 3.0) and body.quat is None
    body.pos = None
    assert "pos" not in spec.to_xml()
    joint = body.add_joint(name="j", limited=True, type=kd.JointType.SLIDE)
    assert (joint.limited, joint.type) == ("true", "slide")
    geom = body.add_geom(size=0.1, class_="main")
    assert geom.class_ == "main" and geom.size == (0.1,)
    joint.name = "renamed"
    assert spec.joint("renamed") is joint
    with pytest.raises(KeyError):
        spec.joint("j")


def test_numbers_are_written_exactly():
    x = 0.1 + 0.2  # 0.30000000000000004
    spec = kd.Spec()
    spec.worldbody.add_body(name="b", pos=(x, 1e-300, -2.0)).add_geom(size=1 / 3, mass=1)
    assert 'pos="0.30000000000000004 1e-300 -2"' in spec.to_xml()
    m = spec.compile()
    assert m.body_pos[1, 0] == x and m.body_pos[1, 1] == 1e-300


def test_set_is_all_or_nothing_and_names_stay_unique():
    spec = kd.Spec()
    body = spec.worldbody.add_body(name="b", pos=(0, 0, 1))
    other = spec.worldbody.add_body(name="c")
    _raises(lambda: body.set(pos=(1, 2, 3), quat=(1, 0)), element="body 'b'", attribute="quat")
    assert body.pos == (0.0, 0.0, 1.0) and body.quat is None
    _raises(lambda: body.set(quat=(1, 0, 0, 0), euler=(0, 0, 0)), element="body 'b'", attribute="euler")
    assert body.quat is None
    _raises(lambda: setattr(other, "name", "b"), element="body 'b'", attribute="name", match="repeated")
    assert other.name == "c" and spec.body("c") is other and spec.body("b") is body
    other.name = None  # unnamed: its old name is free again
    spec.worldbody.add_body(name="c")
    with pytest.raises(KeyError):
        spec.body("d")
    # a name is checked when the element is attached, also for a geom named like a body
    body.add_geom(name="b", size=0.1, mass=1)


def test_copy_is_independent():
    spec = _example().build_arm3()
    twin = spec.copy()
    twin.body("link2").pos = (0, 0, 0.5)
    twin.site("ee").name = "tip"
    assert spec.body("link2").pos == (0.0, 0.0, 0.3) and spec.site("ee").name == "ee"
    assert_same_model(spec.compile(), kd.models.load("arm3"))
    assert twin.compile().body_pos[2, 2] == 0.5
    assert repr(spec) == "<Spec 'arm3': body x3, joint x3, geom x3, site x1, actuator x3>"


def test_names_are_escaped_and_infinities_kept():
    spec = kd.Spec(flag=dict(limit=False))  # False: "disable" for a flag
    body = spec.worldbody.add_body(name='a&"<b>\'')
    body.add_geom(size=0.1, mass=1.0)
    body.add_joint(name="j", limited=True, range=(-np.inf, np.inf))
    xml = spec.to_xml()
    m, mjm = spec.compile(), mujoco.MjModel.from_xml_string(xml)
    assert mjm.body(1).name == 'a&"<b>\'' and m.body('a&"<b>\'').id == 1
    assert_model_fields(m, mjm)
    assert kd.Spec.from_xml_string(xml).to_xml() == xml


def test_save(tmp_path):
    spec = _example().build_arm3()
    path = spec.save(tmp_path / "arm.xml")
    assert_same_model(kd.Model.from_xml_path(path), spec.compile())


# ---- errors at the call that made them ----------------------------------------------------------


def _raises(call, *, element, attribute=None, match=None):
    with pytest.raises(kd.ModelError, match=match) as info:
        call()
    assert info.value.element == element
    assert info.value.attribute == attribute
    return info.value


def test_unknown_attribute_names_element_and_suggests():
    body = kd.Spec().worldbody.add_body(name="b")
    err = _raises(lambda: body.add_joint(name="j", axsi=(0, 0, 1)), element="joint 'j'", attribute="axsi")
    assert "'axis'" in str(err)
    with pytest.raises(AttributeError, match="axis"):
        _ = body.add_joint().axsi
    _raises(lambda: setattr(body, "mass", 1.0), element="body 'b'", attribute="mass")


@pytest.mark.parametrize("attrs, attribute, match", [
    ({"pos": (1, 2)}, "pos", "not have enough data"),
    ({"pos": (1, 2, 3, 4)}, "pos", "too much data"),
    ({"pos": (1, float("nan"), 3)}, "pos", "NaN"),
    ({"pos": "1 2 3"}, "pos", "bad format|numbers"),
    ({"size": [[0.1, 0.2], [0.3, 0.4]]}, "size", "too much data"),
    ({"type": "cube"}, "type", "invalid keyword"),
    ({"type": 3}, "type", "takes one of"),
    ({"condim": 2.5}, "condim", "integers"),
    ({"material": 1.0}, "material", "name"),
    ({"quat": (1, 0, 0, 0), "euler": (0, 0, 0)}, "euler", "multiple orientation"),
])
def test_bad_values_raise_at_add(attrs, attribute, match):
    body = kd.Spec().worldbody.add_body()
    _raises(lambda: body.add_geom(name="g", **attrs), element="geom 'g'", attribute=attribute, match=match)
    assert body.children == []


def test_structural_errors_raise_at_add():
    spec = kd.Spec()
    _raises(lambda: spec.worldbody.add_joint(name="j"), element="joint 'j'", match="world body")
    _raises(lambda: spec.worldbody.add_frame().add_freejoint(), element="freejoint", match="world body")
    _raises(lambda: spec.worldbody.add_inertial(pos=(0, 0, 0), mass=1), element="inertial")
    body = spec.worldbody.add_body(name="b")
    _raises(lambda: body.add_inertial(mass=1.0), element="inertial", attribute="pos")
    body.add_inertial(pos=(0, 0, 0), mass=1.0, diaginertia=(1, 1, 1))
    _raises(lambda: body.add_inertial(pos=(0, 0, 0), mass=1.0), element="inertial", match="more than one")
    _raises(lambda: spec.worldbody.add_body(name="b"), element="body 'b'", attribute="name", match="repeated")
    _raises(lambda: spec.add_actuator(kind="motr", joint="j"), element="motr", match="'motor'")
    _raises(lambda: spec.add_actuator(kind="motor", kp=1.0), element="motor", attribute="kp")
    _raises(lambda: spec.add_tendon("fixed").wrap_site("s"), element="fixed", match="spatial")
    _raises(lambda: spec.add_tendon("spatial").wrap_joint("j", 1.0), element="spatial", match="fixed")
    _raises(lambda: kd.Spec(timestp=0.01), element="mujoco", attribute="timestp", match="'timestep'")
    _raises(lambda: spec.add_default("c", joint=dict(name="x")), element="joint 'x'", attribute="name")
    _raises(lambda: spec.add_default("c2", motor=dict(joint="x")), element="motor", attribute="joint")
    _raises(lambda: spec.default.set("body", pos=(0, 0, 0)), element="default", attribute="body")


def test_compile_errors_name_the_built_element():
    spec = _example().build_arm3()
    spec.add_actuator(kind="motor", name="bad", joint="j4")
    with pytest.raises(kd.ModelError, match='built as <motor name="bad" joint="j4"/>') as info:
        spec.compile()
    assert info.value.line == spec.to_xml().splitlines().index('    <motor name="bad" joint="j4"/>') + 1


def test_lookup_unknown_name_suggests():
    spec = _example().build_arm3()
    with pytest.raises(KeyError, match="'link1'"):
        spec.body("link")
    with pytest.raises(KeyError, match="no named tendon"):
        spec.tendon("t")


@pytest.mark.parametrize("xml, match", [
    ("<mujoco><worldbody><bodyy/></worldbody></mujoco>", "unrecognized element"),
    ("<mujoco><worldbody><body><joint axsi='0 0 1'/></body></worldbody></mujoco>", "axsi"),
    ("<mujoco><actuator><motr joint='j'/></actuator></mujoco>", "unrecognized element"),
    ("<robot/>", "must be <mujoco>"),
    ("<mujoco><worldbody>", "malformed XML"),
])
def test_from_xml_errors(xml, match):
    with pytest.raises(kd.ModelError, match=match):
        kd.Spec.from_xml_string(xml)


# ---- docs/building.md ---------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "building.md"


def test_docs_examples_run(tmp_path, monkeypatch):
    """Every Python block of docs/building.md runs in order; the error block raises as shown."""
    import re

    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        if "# ModelError:" not in block:
            exec(compile(block, str(DOCS), "exec"), namespace)
            continue
        # one statement per line; a statement followed by "# ModelError: ..." (continued on
        # "#   ..." lines) raises exactly that error
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("#"):
                continue
            shown = [c.removeprefix("# ModelError: ").removeprefix("#   ") for c in
                     itertools.takewhile(lambda c: c.startswith("#"), lines[i + 1:])]
            if not shown:
                exec(line, namespace)
                continue
            with pytest.raises(kd.ModelError) as info:
                exec(line, namespace)
            assert str(info.value) == " ".join(shown)
    assert (tmp_path / "arm3.xml").read_text() == namespace["xml"]
    assert_same_model(kd.Model.from_xml_path(tmp_path / "arm3.xml"), kd.models.load("arm3"))
