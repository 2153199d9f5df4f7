# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""``<visual>``, ``<statistic>``, ``<asset>`` (textures, materials, skins) and ``<custom>``: kept by
neither the Model nor the dynamics, but a file loads in kinedyn exactly when it loads in MuJoCo 4.0
(schema, number formats and counts, references to materials and textures, texture files, custom
fields) — each case checked against the binary."""

from __future__ import annotations

import warnings

import mujoco
import pytest

import kinedyn as kd
from kinedyn.errors import ModelError


def _doc(sections: str, geom: str = "") -> str:
    return f'<mujoco>{sections}<worldbody><body><joint/><geom size=".1" {geom}/></body></worldbody></mujoco>'


CASES = {
    "material": _doc('<asset><material name="m" rgba="1 0 0 1" shininess="nan"/></asset>', 'material="m"'),
    "texture-and-material": _doc('<asset><texture name="t" builtin="checker" width="8" height="8" rgb1="1 1 1" rgb2="0 0 0"/><material name="m" texture="t"/></asset>'),
    "custom": _doc('<custom><numeric name="n" size="5" data="1 2"/><text name="t" data="hi"/><tuple name="tu"><element objtype="body" objname="world" prm="1"/></tuple></custom>'),
    "visual": _doc('<visual><global offwidth="100"/><quality shadowsize="10"/><headlight ambient=".1 .1 .1"/><map znear=".01"/><scale forcewidth=".1"/><rgba haze="1 1 1 1"/></visual>'),
    "statistic": _doc('<statistic extent="2" center="0 0 1" meansize=".1"/>'),
    # refused by both
    "unknown-material": _doc("", 'material="nope"'),
    "site-unknown-material": '<mujoco><worldbody><site material="x"/></worldbody></mujoco>',
    "material-unknown-texture": _doc('<asset><material name="m" texture="nope"/></asset>'),
    "texture-file-missing": _doc('<asset><texture name="t" type="2d" file="nope.png"/></asset>'),
    "asset-unknown-element": _doc("<asset><foo/></asset>"),
    "material-unknown-attribute": _doc('<asset><material name="m" foo="1"/></asset>'),
    "material-rgba-short": _doc('<asset><material name="m" rgba="1 0 0"/></asset>'),
    "material-rgba-long": _doc('<asset><material name="m" rgba="1 0 0 1 1"/></asset>'),
    "texture-bad-keyword": _doc('<asset><texture name="t" type="3d" builtin="flat" width="2" height="2"/></asset>'),
    "numeric-data-beyond-size": _doc('<custom><numeric name="n" size="1" data="1 2"/></custom>'),
    "numeric-without-name": _doc('<custom><numeric data="1 2"/></custom>'),
    "empty-text": _doc('<custom><text name="t"/></custom>'),
    "custom-unknown-element": _doc("<custom><foo/></custom>"),
    "visual-unknown-element": _doc("<visual><foo/></visual>"),
    "visual-element-twice": _doc("<visual><global/><global/></visual>"),
    "visual-unknown-attribute": _doc('<visual><global foo="1"/></visual>'),
    "visual-float-for-int": _doc('<visual><global offwidth="100.5"/></visual>'),
    "statistic-unknown-attribute": _doc('<statistic foo="1"/>'),
    "statistic-bad-number": _doc('<statistic extent="x"/>'),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_unsimulated_sections_as_strict_as_mujoco(case):
    xml = CASES[case]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mujoco.MjModel.from_xml_string(xml)
    except ValueError:
        with pytest.raises(ModelError) as info:
            kd.Model.from_xml_string(xml)
        assert info.value.line == 1 and info.value.element
    else:
        assert kd.Model.from_xml_string(xml).nbody == 2
