"""Shared test cases: compile each model text once per process, and the standard model lists.

``pair(xml, label)`` returns (m, d, mjm, mjd) for a model compiled by kinedyn and MuJoCo
from the same text (constraints and contacts disabled). The compiled models are cached
per process, and every call hands out private copies of them with fresh Data, so a test
may change options or fields freely without reaching any other test. A model listed in
``oracle.REFUSED_MODELS`` is skipped (its refusal is tested in tests/test_compiler.py);
any other ModelError fails the test.
``sources(seeds)`` lists the test models, gymnasium's humanoid/pusher/ant and random
trees as pytest params; ``load(source)`` turns one of them into a pair.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import mujoco
import pytest
from oracle import REFUSED_MODELS, gym_model_path, load_pair, model_paths
from strategies import random_mjcf_text

import kinedyn as kd
from kinedyn.engine.fields import MODEL_FIELDS, SIZE_NAMES

GYM_MODELS = ("humanoid", "pusher", "ant")
_MODELS: dict[str, object] = {}


def copy_model(m):
    """An independent copy of a kinedyn Model: own arrays, own options, own kernel handle."""
    opt = m.opt
    twin = type(opt)(timestep=opt.timestep, gravity=opt.gravity.copy(), integrator=opt.integrator,
                     disableflags=opt.disableflags, enableflags=opt.enableflags, wind=opt.wind.copy(),
                     density=opt.density, viscosity=opt.viscosity, **opt.solver_options())
    out = type(m)._assemble({s: getattr(m, s) for s in SIZE_NAMES},
                            {f.name: getattr(m, f.name).copy() for f in MODEL_FIELDS},
                            twin, {k: list(v) for k, v in m.names.items()})
    if hasattr(m, "model_name"):
        object.__setattr__(out, "model_name", m.model_name)
    return out


def pair(xml: str, label: str):
    """(m, d, mjm, mjd): copies of the cached compiled models and fresh Data for each.

    ``label`` names the model in messages; for a file it is the stem, which is looked up
    in ``oracle.REFUSED_MODELS``.
    """
    if xml not in _MODELS:
        try:
            m, _, mjm, _ = load_pair(xml)
            _MODELS[xml] = (m, mjm)
        except kd.ModelError as err:
            expected = REFUSED_MODELS.get(label)
            if expected is None:
                raise
            if not re.search(expected, str(err)):
                raise AssertionError(f"{label}: refused with {err!s}, expected /{expected}/") from err
            _MODELS[xml] = err
    entry = _MODELS[xml]
    if isinstance(entry, kd.ModelError):
        pytest.skip(f"{label}: refused by kinedyn as expected (oracle.REFUSED_MODELS): {entry}")
    if label in REFUSED_MODELS:
        raise AssertionError(f"{label} is listed in oracle.REFUSED_MODELS but compiles: remove it there")
    m, mjm = entry
    m, mjm = copy_model(m), copy.copy(mjm)
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def sources(seeds=range(0, 240, 4)):
    """Test models, gymnasium models and random trees (one per seed) as pytest params."""
    out = [pytest.param(("path", str(p)), id=p.stem) for p in model_paths()]
    out += [pytest.param(("gym", n), id=f"gym-{n}") for n in GYM_MODELS]
    out += [pytest.param(("seed", s), id=f"seed{s}") for s in seeds]
    return out


def load(source):
    """The pair for one entry of ``sources``."""
    kind, value = source
    if kind == "path":
        return pair(Path(value).read_text(), Path(value).stem)
    if kind == "gym":
        return pair(gym_model_path(value).read_text(), f"gymnasium {value}.xml")
    return pair(random_mjcf_text(value), f"random tree {value}")
