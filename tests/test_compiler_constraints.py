# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""The compiled constraint model vs MuJoCo 4.0: limits, friction loss, equality, solver options.

Oracle: ``mujoco.MjModel.from_xml_string`` on the same text, constraints left enabled
(the model fields do not depend on the flags). Every Model field and every option is
compared (``oracle.assert_model_fields``), at 1e-12 relative (``TIGHT``): the fields are
copied from the XML or computed at qpos0 by a few products and one solve with M
(``eq_data``, ``*_invweight0``). The constraint fields are listed in ``CONSTRAINT_FIELDS``
so that a test fails loudly if one of them stops being compared.
"""

from __future__ import annotations

import re
import warnings

import mujoco
import numpy as np
import pytest
from oracle import assert_model_fields
from strategies import random_mjcf_text

import kinedyn as kd
from kinedyn.engine.constraint import efc_capacity
from kinedyn.errors import ModelError, UnsimulatedFeatureWarning

TIGHT = {"rtol": 1e-12, "atol": 1e-14}

CONSTRAINT_FIELDS = (
    "jnt_margin", "jnt_solref", "jnt_solimp", "dof_solref", "dof_solimp", "dof_frictionloss",
    "tendon_margin", "tendon_solref_lim", "tendon_solimp_lim", "tendon_solref_fri", "tendon_solimp_fri",
    "tendon_frictionloss", "body_invweight0", "dof_invweight0", "tendon_invweight0",
    "eq_type", "eq_obj1id", "eq_obj2id", "eq_objtype", "eq_active0", "eq_solref", "eq_solimp", "eq_data",
    "neq", "opt.solver", "opt.cone", "opt.jacobian", "opt.iterations", "opt.ls_iterations",
    "opt.noslip_iterations", "opt.impratio", "opt.tolerance", "opt.ls_tolerance", "opt.noslip_tolerance",
    "opt.o_margin", "opt.o_solref", "opt.o_solimp", "opt.o_friction", "opt.disableflags", "opt.enableflags",
)


def _pair(xml: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
        m = kd.Model.from_xml_string(xml)
    return m, mujoco.MjModel.from_xml_string(xml)


def _compare(xml: str, **tol):
    m, mjm = _pair(xml)
    compared = assert_model_fields(m, mjm, **(tol or TIGHT))
    assert set(CONSTRAINT_FIELDS) <= set(compared)
    return m, mjm


# ---- limits, friction loss, margins, classes ----------------------------------------------------

LIMITS = """<mujoco>
  <compiler angle="degree"/>
  <default>
    <joint margin="0.01" solreflimit="0.03" solimpfriction="0.8 0.9"/>
    <tendon solimplimit="0.7" margin="0.02"/>
    <default class="stiff">
      <joint solreflimit="-1000" solimplimit="0.95 0.99 0.002" frictionloss="0.3"/>
      <tendon solreflimit="0.05 0.5" solreffriction="0.01" frictionloss="0.2"/>
      <default class="soft"><joint solimplimit="0.1" solreffriction="0.2 0.3"/></default>
    </default>
  </default>
  <worldbody>
    <site name="anchor" pos="0 0 2"/>
    <body name="a" pos="0 0 1" euler="10 20 30">
      <joint name="hinge" range="-60 45" ref="10"/>
      <geom type="capsule" size=".05 .2"/>
      <site name="sa" pos="0.1 0 0"/>
      <body name="b" pos="0 0 -0.4" childclass="stiff">
        <joint name="slide" type="slide" axis="1 2 0" range="-0.2 0.3" margin="0.05" armature="0.1"/>
        <joint name="ball" type="ball" range="0 70" class="soft" damping="0.2"/>
        <geom type="box" size=".1 .05 .2"/>
        <site name="sb" pos="0 0.1 -0.1"/>
        <body name="c" pos="0.2 0 0"><joint name="h2" axis="0 1 0" limited="true" range="-10 10" solreffriction="0.5"/>
          <geom size=".05" pos="0.05 0 0"/></body>
      </body>
    </body>
    <body name="free" pos="1 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/>
      <body name="slider"><joint type="slide" axis="0 0 1" range="-1 1" frictionloss="0.1"/><geom size=".1"/></body>
    </body>
    <body name="simple" pos="-1 0 0.5"><joint type="slide" axis="1 0 0" armature="0.5" range="-1 1"/>
      <joint type="slide" axis="0 1 0"/><geom size=".1" mass="2"/></body>
    <body name="static" pos="0 2 0"><geom size=".1"/>
      <body name="onstatic"><joint type="slide" axis="0 0 1" armature="1"/><geom size=".1" mass="3"/></body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fixed" range="-0.5 0.5" frictionloss="0.05" solreffriction="0.04 2"><joint joint="hinge" coef="1"/><joint joint="slide" coef="-2"/></fixed>
    <fixed name="cls" class="stiff" limited="true" range="0 1" solimpfriction="0.5 0.6 0.01 0.3 3"><joint joint="h2" coef="0.5"/></fixed>
    <spatial name="spatial" range="0.1 2" margin="0.1" solreflimit="0.02 0.7"><site site="anchor"/><site site="sa"/><site site="sb"/></spatial>
  </tendon>
</mujoco>"""


def test_limits_friction_loss_margins_and_classes():
    m, mjm = _compare(LIMITS)
    # the partial values were filled from the class and MuJoCo's defaults, not left short
    assert m.jnt_solimp[1].tolist() == [0.95, 0.99, 0.002, 0.5, 2.0]
    assert m.dof_solref[2].tolist() == [0.2, 0.3] and m.tendon_solimp_lim[0].tolist() == [0.7, 0.95, 0.001, 0.5, 2.0]
    # a simple body with slide joints only: 1/mass, the armature ignored (mj_setConst)
    assert m.body_invweight0[m.body("simple").id].tolist() == [0.5, 0.0]
    assert m.body_invweight0[m.body("static").id].tolist() == [0.0, 0.0]
    assert np.all(m.tendon_invweight0 > 0)


def test_flag_bits_of_the_constraint_model():
    flags = ('limit="disable" equality="disable" frictionloss="disable" warmstart="disable" refsafe="disable" '
             'island="disable" override="enable" constraint="enable" contact="disable"')
    m, mjm = _compare(LIMITS.replace("<worldbody>", f"<option><flag {flags}/></option><worldbody>", 1))
    assert m.opt.disableflags == int(kd.DisableBit.LIMIT | kd.DisableBit.EQUALITY | kd.DisableBit.FRICTIONLOSS
                                     | kd.DisableBit.WARMSTART | kd.DisableBit.REFSAFE | kd.DisableBit.ISLAND
                                     | kd.DisableBit.CONTACT)
    assert m.opt.enableflags == int(kd.EnableBit.OVERRIDE)


# ---- solver options -----------------------------------------------------------------------------

OPTIONS = [
    'solver="PGS"', 'solver="CG" cone="elliptic" jacobian="sparse"', 'solver="Newton" jacobian="dense"',
    'jacobian="auto" cone="pyramidal"', 'iterations="7" ls_iterations="3" noslip_iterations="2"',
    'tolerance="1e-12" ls_tolerance="0.5" noslip_tolerance="0"', 'impratio="10"', 'o_margin="-0.01"',
    'o_solref="0.05"', 'o_solref="-100 -10"', 'o_solimp="0.5 0.6"', 'o_solimp="0.5 0.6 0.01 0.2 3"',
    'o_friction="0.3"', 'o_friction="0.1 0.2 0.3 0.4 0.5"', 'iterations="0" tolerance="0"',
]


@pytest.mark.parametrize("option", OPTIONS)
def test_solver_options(option):
    _compare(f"<mujoco><option {option}/><worldbody><body><joint/><geom size='.1'/></body></worldbody></mujoco>")


def test_partial_option_vectors_accumulate_over_option_elements():
    # MuJoCo writes the given leading values in place: a second <option> keeps the first's tail
    m, mjm = _compare("<mujoco><option o_solimp='0.1 0.2 0.003'/><option o_solimp='0.4'/></mujoco>")
    assert m.opt.o_solimp.tolist() == [0.4, 0.2, 0.003, 0.5, 2.0]


# ---- equality constraints -----------------------------------------------------------------------

# a tree with rotated bodies, non-zero refs (qpos0 is not the zero pose), a free body, a static
# body, a welded child, rotated sites, and tendons
EQUALITY_MODEL = """<mujoco>
  <default><equality solref="0.1" active="false"/>
    <default class="x"><equality solimp="0.3 0.4"/></default>
  </default>
  <worldbody>
    <site name="ws" pos="0.3 -0.2 1" euler="0 0 45"/>
    <body name="a" pos="0.1 0.2 0.3" euler="10 20 30"><joint name="j1" ref="0.3"/><geom size=".1"/>
      <site name="s1" pos="0.1 0 0" euler="0 40 0"/>
      <body name="b" pos="0.5 0 0" euler="5 0 15"><joint name="j2" axis="0 1 0" ref="-0.4"/>
        <joint name="sl" type="slide" axis="1 0 0" ref="0.2"/><geom size=".1"/>
        <site name="s2" pos="0 0.2 0.1" euler="20 0 0"/>
        <body name="welded" pos="0 0 0.3" quat="0 1 0 0"><geom size=".05"/><site name="s3"/></body>
      </body>
      <body name="ballb" pos="0 0.3 0"><joint type="ball"/><geom size=".1" pos="0.1 0 0"/></body>
    </body>
    <body name="c" pos="1 1 1" quat="1 2 3 4"><freejoint/><geom size=".1"/></body>
    <body name="static" pos="-1 0 0" euler="0 90 0"><geom size=".1"/></body>
  </worldbody>
  <tendon><fixed name="t1"><joint joint="j1" coef="1"/></fixed><fixed name="t2"><joint joint="j2" coef="2"/></fixed></tendon>
  <equality>{}</equality>
</mujoco>"""

EQUALITIES = [
    # connect: body semantics (anchor in body1; body2 omitted = world) and site semantics
    '<connect body1="a" body2="b" anchor="0.1 0.2 0.3"/>',
    '<connect body1="b" anchor="0.1 0.2 0.3"/>',
    '<connect body1="world" body2="c" anchor="1 0 0"/>',
    '<connect body1="c" body2="static" anchor="0 0 0"/>',
    '<connect body1="welded" body2="a" anchor="0 0.5 0"/>',
    '<connect site1="s1" site2="s2"/>',
    '<connect site1="ws" site2="s3" class="x" active="true"/>',
    # weld: relpose omitted or with a zero quaternion (computed at qpos0), given (normalised), anchor, sites
    '<weld body1="a" body2="b"/>',
    '<weld body1="a" body2="b" anchor="0.1 0.2 0.3"/>',
    '<weld body1="b"/>',
    '<weld body1="world" body2="c" anchor="0.1 0 0"/>',
    '<weld body1="welded" body2="static"/>',
    '<weld body1="a" body2="b" relpose="1 2 3 1 0 0 0" torquescale="0.5"/>',
    '<weld body1="a" body2="b" relpose="1 2 3 0 0 0 0"/>',
    '<weld body1="a" body2="c" relpose="0.1 0.2 0.3 1 2 3 4" anchor="0 0 1"/>',
    '<weld body1="a" body2="b" relpose="0 0 0 0 0 0 1e-20"/>',
    '<weld body1="a" body2="b" relpose="0 0 0 -1 0 0 0"/>',
    '<weld site1="s1" site2="s2" torquescale="3"/>',
    '<weld site1="s3" site2="ws"/>',
    # joint and tendon couplings: polycoef given in part keeps the default (0 1 0 0 0) tail
    '<joint joint1="j1"/>',
    '<joint joint1="j1" joint2="j2" polycoef="1 2"/>',
    '<joint joint1="sl" joint2="j1" polycoef="5"/>',
    '<joint joint1="j2" joint2="sl" polycoef="0.1 0.2 0.3 0.4 0.5" solref="-100 -10" solimp="0.5"/>',
    '<tendon tendon1="t1" tendon2="t2" polycoef="0.1 0.2 0.3 0.4 0.5"/>',
    '<tendon tendon1="t2" solref="0.5" solimp="0.1 0.2" active="true" name="e" class="x"/>',
    # several, across two sections
    '<connect name="first" body1="a" anchor="0 0 0"/><weld name="second" body1="b" body2="c"/></equality>'
    '<equality><joint name="third" joint1="j1" joint2="sl"/><tendon tendon1="t1"/>',
]


@pytest.mark.parametrize("equality", EQUALITIES)
def test_equality(equality):
    m, mjm = _compare(EQUALITY_MODEL.format(equality))
    # every equality, friction and limit row, and room for the contacts' rows (test_collision checks those)
    assert m.nefcmax >= efc_capacity(m.njnt, m.nv, m.ntendon, m.eq_type)
    for i in range(m.neq):
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_EQUALITY, i) or ""
        assert m.names["equality"][i] == name
        if name:
            assert m.equality(name).id == i and m.name2id("equality", name) == i


def test_weld_relpose_computed_at_qpos0_is_flagged_and_consistent():
    # eq_data[11] = 1 marks a relpose the compiler computed; it is body2's pose in body1's frame
    m, _ = _compare(EQUALITY_MODEL.format('<weld body1="a" body2="b" anchor="0.1 0.2 0.3"/>'
                                          '<weld body1="a" body2="b" relpose="0 0 0 2 0 0 0"/>'))
    computed, given = m.eq_data
    assert computed[11] == 1 and given[11] == 0 and given[6:10].tolist() == [1.0, 0.0, 0.0, 0.0]
    d = kd.Data(m)
    kd.forward(m, d)
    a, b = m.body("a").id, m.body("b").id
    anchor = d.xpos[b] + d.xmat[b] @ computed[0:3]
    np.testing.assert_allclose(computed[3:6], d.xmat[a].T @ (anchor - d.xpos[a]), atol=1e-14)
    assert abs(np.linalg.norm(computed[6:10]) - 1) < 1e-14


def test_equality_names_survive_copy():
    m, _ = _compare(EQUALITY_MODEL.format(EQUALITIES[-1]))
    assert m.copy().equality("third").id == 2
    with pytest.raises(KeyError, match="first"):
        m.equality("frist")


# ---- random trees with constraint attributes ----------------------------------------------------


@pytest.mark.parametrize("seed", range(60))
def test_random_trees_with_constraints(seed):
    # M can be ill-conditioned in random trees (cond ~1e7) and carries last-bit differences
    # (docs/deviations.md): invweight0, one solve with M, is compared at 1e-10 (measured worst
    # 2.3e-12 over 300 seeds), every other field at 1e-12
    xml = random_mjcf_text(seed, constraints=True)
    m, mjm = _pair(xml)
    invweight = ("body_invweight0", "dof_invweight0", "tendon_invweight0")
    assert_model_fields(m, mjm, skip=invweight, **TIGHT)
    assert_model_fields(m, mjm, names=invweight, rtol=1e-10, atol=TIGHT["atol"])


def test_random_trees_with_constraints_cover_every_feature():
    # the generator's constraint option produces each kind of input the tests above rely on
    text = "".join(random_mjcf_text(seed, constraints=True) for seed in range(60))
    for fragment in ("<connect body1", "<connect site1", "<weld body1", "<weld site1", "<joint joint1",
                     "relpose=", "torquescale=", "polycoef=", 'active="false"', "solreflimit=", "solimpfriction=",
                     "margin=", "frictionloss=", "<equality solref", "solver=", "o_solimp="):
        assert fragment in text, fragment


# ---- bad input ----------------------------------------------------------------------------------

BODIES = """<mujoco><worldbody><body name="a"><joint name="j"/><geom size=".1"/><site name="s"/>
<body><joint name="ball" type="ball"/><geom size=".1"/></body></body></worldbody><tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>
<equality>
{}</equality></mujoco>"""

ERRORS = [
    # (equality xml, element, attribute, message fragment, whether MuJoCo refuses it too)
    ('<connect body1="nobody" anchor="0 0 0"/>', "connect", "body1", "unknown element 'nobody'", True),
    ('<weld name="w" body1="a" body2="nobody"/>', "weld 'w'", "body2", "unknown element 'nobody'", True),
    ('<connect site1="s" site2="nosite"/>', "connect", "site2", "unknown element 'nosite'", True),
    ('<joint joint1="nojoint"/>', "joint", "joint1", "unknown element 'nojoint'", True),
    ('<tendon tendon1="t" tendon2="notendon"/>', "tendon", "tendon2", "unknown element 'notendon'", True),
    ('<connect body2="a" anchor="0 0 0"/>', "connect", None, "one of ('site1', 'site2'), ('body1', 'anchor') must be specified", True),
    ('<connect body1="a"/>', "connect", None, "must be specified", True),
    ('<weld site1="s"/>', "weld", None, "one of ('site1', 'site2'), 'body1' must be specified", True),
    ('<weld body1="a" site1="s" site2="s"/>', "weld", "site1", "at most one of", True),
    ('<joint joint2="j"/>', "joint", "joint1", "required attribute missing: 'joint1'", True),
    ('<joint joint1="j" polycoef="1 2 3 4 5 6"/>', "joint", "polycoef", "too much data", True),
    ('<weld body1="a" relpose="0 0 0 1 0 0"/>', "weld", "relpose", "not have enough data", True),
    ('<joint joint1="ball"/>', "joint", "joint1", "only HINGE and SLIDE", True),
    ('<joint joint1="j" joint2="ball"/>', "joint", "joint2", "only HINGE and SLIDE", True),
    ('<connect body1="world" anchor="0 0 0"/>', "connect", "body1", "'world' is repeated", True),
    ('<weld body1="a" body2="a"/>', "weld", "body2", "'a' is repeated", True),
    ('<joint name="e" joint1="j"/><joint name="e" joint1="j"/>', "joint 'e'", "name", "repeated name 'e' in equality", True),
    ('<connect class="nope" body1="a" anchor="0 0 0"/>', "connect", "class", "unknown default class", True),
    ('<connect body1="a" anchor="0 0 0" torquescale="1"/>', "connect", "torquescale", "unrecognized attribute", True),
    ('<connect body1="a" anchor="0 0 0" active="maybe"/>', "connect", "active", "invalid keyword", True),
    ('<distance geom1="a" geom2="b"/>', "distance", None, "unrecognized element", True),
    ('<flexvert flex="f"/>', "flexvert", None, "flexes", True),
    ('<flex flex="f"/>', "flex", "flex", "unknown element 'f' in equality constraint", True),
    ('<flexstrain flex="f"/>', "flexstrain", None, "flexes", True),
]


@pytest.mark.parametrize("equality,element,attribute,fragment,mujoco_refuses", ERRORS)
def test_bad_equality_names_element_attribute_and_line(equality, element, attribute, fragment, mujoco_refuses):
    xml = BODIES.format(equality)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedFeatureWarning)
        with pytest.raises(ModelError, match=re.escape(fragment)) as info:
            kd.Model.from_xml_string(xml)
    err = info.value
    assert (err.element, err.attribute, err.line) == (element, attribute, 4)
    if mujoco_refuses:
        with pytest.raises(ValueError):
            mujoco.MjModel.from_xml_string(xml)


@pytest.mark.parametrize("option,attribute", [
    ('iterations="-1"', "iterations"), ('ls_iterations="-3"', "ls_iterations"),
    ('noslip_iterations="-1"', "noslip_iterations"), ('tolerance="-1"', "tolerance"),
    ('impratio="0"', "impratio"), ('ls_tolerance="-0.1"', "ls_tolerance"),
    ('noslip_tolerance="-2"', "noslip_tolerance"),
])
def test_solver_options_kinedyn_cannot_use_are_refused(option, attribute):
    # MuJoCo 4.0 takes these (docs/deviations.md); kinedyn's Option refuses them, on the attribute
    xml = f"<mujoco>\n<option {option}/></mujoco>"
    mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="constraint solver cannot use") as info:
        kd.Model.from_xml_string(xml)
    assert (info.value.element, info.value.attribute, info.value.line) == ("option", attribute, 2)


@pytest.mark.parametrize("option", ['solver="pgs"', 'cone="round"', 'jacobian="full"'])
def test_bad_solver_keywords(option):
    xml = f"<mujoco><option {option}/></mujoco>"
    with pytest.raises(ValueError, match="invalid keyword"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="invalid keyword"):
        kd.Model.from_xml_string(xml)


def test_equalities_limits_and_frictionloss_compile_without_warnings():
    """They are simulated (engine.constraint), so strict mode accepts them."""
    xml = EQUALITY_MODEL.format('<weld body1="a" body2="b"/><joint joint1="j1"/>')
    no_contacts = xml.replace("<worldbody>", '<option><flag contact="disable"/></option><worldbody>', 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kd.Model.from_xml_string(no_contacts).neq == 2
