"""Test configuration: hypothesis profiles, seeded RNG, the test models.

* The test models are the MJCF files of ``tests/models/`` (see its README.md), in the
  repository, so the suite runs from a bare clone. A ``shared/models`` directory beside
  or above the clone (or ``$KINEDYN_SHARED``) adds its models as an optional extra corpus
  (``oracle.model_paths``).
* Hypothesis writes nothing into the tree: no example database (``database=None``)
  and its other caches go to ``$TMPDIR/kinedyn-hypothesis``
  (or ``$HYPOTHESIS_STORAGE_DIRECTORY``).
  Profiles: ``dev`` (default, random, 100 examples) and ``ci`` (derandomized, so a
  CI run is reproducible); ``ci`` is chosen when ``$CI`` is set, or name one with
  ``HYPOTHESIS_PROFILE=...``.
* A test that takes a ``model_path`` argument is run once per model of
  ``oracle.model_paths()`` (ids are the file stems).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# `import oracle` / `import strategies` also under --import-mode=importlib
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from oracle import model_paths  # noqa: E402

# hypothesis also caches source constants on disk even without a database: keep that out of the tree too
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "kinedyn-hypothesis")

# building a random MJCF draws a few hundred values; that is the point, not a health problem
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("dev", deadline=None, database=None, suppress_health_check=_SUPPRESS)
settings.register_profile("ci", deadline=None, database=None, derandomize=True, print_blob=True,
                          suppress_health_check=_SUPPRESS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

RNG_SEED = 20250101


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy Generator with a fixed seed, fresh for every test."""
    return np.random.default_rng(RNG_SEED)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "model_path" in metafunc.fixturenames:
        paths = model_paths()
        metafunc.parametrize("model_path", paths, ids=[p.stem for p in paths])


def pytest_configure(config: pytest.Config) -> None:
    """With several xdist workers, compile the pipeline's main entries once, here in the
    controller, before the workers start: otherwise every worker compiles the same kernels at the
    same time on a cold cache (each test module builds models while it is collected), which
    doubles the cold-start time of the suite. The workers then load them from the disk cache."""
    if hasattr(config, "workerinput") or config.pluginmanager.getplugin("xdist") is None:
        return
    workers = getattr(config.option, "numprocesses", None)
    if not workers or workers in ("0", 0):
        return
    from numba import config as numba_config
    if numba_config.DISABLE_JIT:
        return
    import kinedyn as kd

    m = kd.models.load("biped")  # set_const: forward
    d = kd.Data(m)
    for integrator in (kd.IntegratorType.IMPLICITFAST, kd.IntegratorType.EULER, kd.IntegratorType.RK4):
        m.opt.integrator = int(integrator)
        kd.step(m, d)
    kd.inverse(m, d)
