"""Shared test cases: compile each model text once per process, and the standard model lists.

``pair(xml, label)`` returns (m, d, mjm, mjd) with fresh Data for a model compiled by
kinedyn and MuJoCo from the same text (constraints and contacts disabled), and skips
with kinedyn's reason when the model needs a feature kinedyn does not support yet.
``sources(seeds)`` lists the shared models, gymnasium's humanoid/pusher/ant and random
trees as pytest params; ``load(source)`` turns one of them into a pair.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import pytest
from oracle import gym_model_path, load_pair, shared_model_paths
from strategies import random_mjcf_text

import kinedyn as kd

GYM_MODELS = ("humanoid", "pusher", "ant")
_MODELS: dict[str, object] = {}


def pair(xml: str, label: str):
    """(m, d, mjm, mjd) with fresh Data; skips with kinedyn's reason if a feature is not supported."""
    if xml not in _MODELS:
        try:
            m, _, mjm, _ = load_pair(xml)
            _MODELS[xml] = (m, mjm)
        except kd.ModelError as err:
            if "not supported" not in str(err):
                raise
            _MODELS[xml] = err
    entry = _MODELS[xml]
    if isinstance(entry, kd.ModelError):
        pytest.skip(f"{label}: kinedyn does not support it yet: {entry}")
    m, mjm = entry
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def sources(seeds=range(0, 240, 4)):
    """Shared models, gymnasium models and random trees (one per seed) as pytest params."""
    out = [pytest.param(("path", str(p)), id=p.stem) for p in shared_model_paths()]
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
