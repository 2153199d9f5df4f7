"""``<compiler>`` options real models use, each compared with MuJoCo 4.0 field by field."""

import mujoco
import pytest
from oracle import assert_fields, assert_model_fields

import kinedyn as kd

# a model whose compiled numbers depend on every option below: orientations in every form,
# bodies with and without <inertial>, geoms in several groups, light and thin bodies, visual
# geoms, a lone free body with an offset inertial frame, ranges without `limited`
MODEL = """<mujoco>
  <compiler {options}/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <geom size=".3" pos="0 0 3" contype="0" conaffinity="0" group="2"/>
    <body name="a" pos="0 0 1" euler="10 20 30">
      <joint name="ja" axis="1 1 0" range="-30 45"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" group="0"/>
      <geom type="box" size=".1 .05 .02" pos=".1 0 .1" euler="0 0 40" group="3"/>
      <geom size=".2" pos="0 .3 0" contype="0" conaffinity="0" group="1"/>
      <body name="b" pos=".3 0 0" axisangle="0 1 0 30">
        <inertial pos=".1 0 0" mass=".001" diaginertia="1e-8 1e-8 1e-8"/>
        <joint name="jb" type="slide" range="-.1 .2"/>
        <geom type="cylinder" size=".03 .1" pos=".05 0 0" group="4"/>
      </body>
      <body name="c" pos="0 .3 0" xyaxes="0 1 0 -1 0 0">
        <inertial pos="0 0 .1" quat="1 .2 0 0" mass="2" diaginertia=".1 .12 .15"/>
        <joint type="ball" range="0 60"/>
        <geom type="ellipsoid" size=".05 .08 .1" group="5"/>
      </body>
    </body>
    <body name="free" pos="1 1 1" zaxis="1 0 1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".1 .05 0" euler="5 10 15"/>
      <geom size=".05" pos="-.1 0 .2" contype="0" conaffinity="0"/>
      <site name="s" pos=".2 0 0"/>
    </body>
  </worldbody>
  <actuator><motor joint="ja" ctrlrange="-1 1"/><position joint="jb" kp="10" ctrlrange="-.1 .2"/></actuator>
</mujoco>"""

OPTIONS = [
    "",
    'angle="radian"',
    'eulerseq="ZYX"',
    'eulerseq="xZy" angle="degree"',
    'inertiafromgeom="true"',
    'inertiafromgeom="false" EXPLICIT',
    'inertiafromgeom="auto" EXPLICIT',
    'inertiafromgeom="true" EXPLICIT',
    'inertiafromgeom="auto" inertiagrouprange="0 3"',
    'inertiafromgeom="true" inertiagrouprange="0 4"',
    'boundmass=".01" boundinertia=".001"',
    'balanceinertia="true" BAD_INERTIA',
    'settotalmass="12.5"',
    'discardvisual="true"',
    'discardvisual="true" inertiafromgeom="true"',  # refused by both: the visual geoms have mass
    'alignfree="true"',
    'alignfree="true" discardvisual="true" settotalmass="3"',
]


@pytest.mark.parametrize("options", OPTIONS)
def test_compiler_option_matches_mujoco(options):
    text = MODEL.format(options=options.replace("BAD_INERTIA", "").replace("EXPLICIT", ""))
    if "BAD_INERTIA" in options:  # A + B < C, which balanceinertia replaces by the mean
        text = text.replace('diaginertia=".1 .12 .15"', 'diaginertia=".1 .1 .3"')
    if "EXPLICIT" in options:  # every moving body with an <inertial>
        for body in ('name="a" pos="0 0 1" euler="10 20 30">', 'name="free" pos="1 1 1" zaxis="1 0 1">'):
            text = text.replace(body, body + '<inertial pos=".1 .2 .3" euler="1 2 3" mass="3" '
                                'diaginertia=".2 .3 .4"/>')
    try:
        mjm = mujoco.MjModel.from_xml_string(text)
    except ValueError:  # MuJoCo refuses it (discardvisual of massive geoms with inertiafromgeom true)
        with pytest.raises(kd.ModelError):
            kd.Model.from_xml_string(text)
        return
    m = kd.Model.from_xml_string(text)
    assert_model_fields(m, mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd, stage="position")


def test_autolimits_false_needs_limited():
    text = MODEL.format(options='autolimits="false"')
    with pytest.raises(ValueError, match="limited"):
        mujoco.MjModel.from_xml_string(text)
    with pytest.raises(kd.ModelError, match="autolimits"):
        kd.Model.from_xml_string(text)
    explicit = text.replace(' range="-30 45"', ' range="-30 45" limited="true"')
    explicit = explicit.replace(' range="-.1 .2"', ' range="-.1 .2" limited="false"')
    explicit = explicit.replace(' range="0 60"', ' range="0 60" limited="true"')
    explicit = explicit.replace('ctrlrange="-1 1"', 'ctrlrange="-1 1" ctrllimited="true"')
    explicit = explicit.replace('ctrlrange="-.1 .2"', 'ctrlrange="-.1 .2" ctrllimited="false"')
    assert_model_fields(kd.Model.from_xml_string(explicit), mujoco.MjModel.from_xml_string(explicit))


def test_settotalmass_scales_every_mass():
    m = kd.Model.from_xml_string(MODEL.format(options='settotalmass="12.5"'))
    assert m.body_mass.sum() == pytest.approx(12.5, rel=1e-12)


def test_discardvisual_keeps_referenced_geoms_and_the_masses():
    text = MODEL.format(options='discardvisual="true"').replace(
        '<geom size=".2" pos="0 .3 0" contype="0" conaffinity="0" group="1"/>',
        '<geom name="kept" size=".2" pos="0 .3 0" contype="0" conaffinity="0" group="1"/>').replace(
        "</worldbody>", '</worldbody><contact><pair geom1="kept" geom2="kept2"/></contact>').replace(
        '<geom size=".05" pos="-.1 0 .2" contype="0" conaffinity="0"/>',
        '<geom name="kept2" size=".05" pos="-.1 0 .2" contype="0" conaffinity="0"/>')
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    full = kd.Model.from_xml_string(text.replace('discardvisual="true"', ""))
    assert m.ngeom == full.ngeom - 1 == mjm.ngeom
    assert m.geom("kept").id >= 0
    assert (m.body_mass == full.body_mass).all()
    assert_model_fields(m, mjm)


# static bodies to fuse: nested, under the world, under a moving body and a free body; a named
# one kept because an equality names it; cameras and lights that move with them
FUSE = """<mujoco><compiler fusestatic="{}"/><worldbody><geom type="plane" size="1 1 1"/>
<body name="base" pos="0 0 .5" euler="10 0 20"><geom type="box" size=".2 .2 .1"/><site name="bs"/>
 <body name="plate" pos=".1 0 .1" euler="0 30 0"><geom size=".05" pos=".1 0 0"/>
  <camera name="pc" pos="0 0 1" euler="1 2 3"/><light pos="0 1 0" dir="1 0 0"/>
  <body name="arm" pos="0 0 .1" euler="5 5 5"><joint name="j" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
   <body name="tool" pos=".3 0 0" quat="1 .2 .3 .4">
    <inertial pos=".01 .02 .03" mass=".5" diaginertia=".01 .02 .025"/><geom size=".02" mass=".1"/>
    <site name="tip" pos=".05 0 0"/><light mode="track"/>
    <body><geom type="box" size=".01 .02 .03" pos=".02 0 0"/></body>
   </body>
   <body name="named" pos="0 .1 0"><geom size=".02"/></body>
  </body>
  <body pos=".2 0 0"><geom size=".03"/></body>
 </body>
</body>
<body name="free" pos="1 0 1"><freejoint/><geom size=".1"/>
 <body pos=".2 0 0"><geom size=".05"/><camera mode="targetbody" target="arm"/></body>
</body>
</worldbody>
<equality><weld body1="named" body2="free"/></equality>
<actuator><motor joint="j"/></actuator>
</mujoco>"""


@pytest.mark.parametrize("fuse", ["false", "true"])
def test_fusestatic_matches_mujoco(fuse):
    text = FUSE.format(fuse)
    m, mjm = kd.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
    assert m.nbody == mjm.nbody == (4 if fuse == "true" else 10)
    assert_model_fields(m, mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    d.qpos[:] = mjd.qpos[:] = mjm.qpos0 + 0.3
    d.qvel[:] = mjd.qvel[:] = 0.5
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)
