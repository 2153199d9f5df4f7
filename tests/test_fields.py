"""The field registry: every field allocated with its declared shape, docs in sync, MuJoCo names real."""

from pathlib import Path

import mujoco
import numpy as np
import pytest

import kinedyn as kd
from kinedyn.engine.fields import DATA_FIELDS, MODEL_FIELDS, SIZE_NAMES, markdown

XML = """<mujoco><worldbody><body><joint type="ball"/><geom size=".1" pos=".1 0 0"/><site name="s"/>
<body pos="0 0 -.3"><joint name="h" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
</body></body></worldbody><actuator><motor joint="h"/></actuator></mujoco>"""


@pytest.fixture(scope="module")
def pair():
    return kd.Model.from_xml_string(XML), mujoco.MjModel.from_xml_string(XML)


def test_every_field_allocated_with_its_declared_shape(pair):
    m, _ = pair
    d = kd.Data(m)
    sizes = {s: getattr(m, s) for s in SIZE_NAMES}
    for spec in MODEL_FIELDS:
        assert getattr(m, spec.name).shape == spec.resolve(sizes), spec.name
    for spec in DATA_FIELDS:
        assert d._array(spec.name).shape == spec.resolve(sizes), spec.name
        assert d._array(spec.name).dtype == spec.dtype, spec.name


def test_fields_marked_mujoco_exist_in_mujoco(pair):
    _, mjm = pair
    mjd = mujoco.MjData(mjm)
    for spec in MODEL_FIELDS:
        if spec.mujoco:
            assert hasattr(mjm, spec.name), spec.name
    for spec in DATA_FIELDS:
        if spec.mujoco:
            if spec.name.startswith("contact_"):  # MuJoCo's d.contact[i].dist, ...
                assert spec.name[len("contact_"):] in dir(mujoco.MjContact), spec.name
            else:
                assert hasattr(mjd, spec.name), spec.name


def test_assignment_checks_shape(pair):
    m, _ = pair
    d = kd.Data(m)
    d.qvel = np.ones(m.nv)
    assert np.all(d.qvel == 1)
    with pytest.raises(ValueError, match="qvel"):
        d.qvel = np.ones(m.nv + 1)
    with pytest.raises(ValueError, match="body_mass"):
        m.body_mass = np.ones(m.nbody + 2)


def test_docs_field_reference_is_generated_from_the_registry():
    path = Path(__file__).resolve().parents[1] / "docs" / "fields.md"
    assert path.read_text() == markdown(), "run: python -m kinedyn.engine.fields > docs/fields.md"
