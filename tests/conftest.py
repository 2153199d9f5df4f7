"""Test configuration: hypothesis profiles, seeded RNG, the shared models.

* Numba: kernels are ``@njit(cache=True)`` and cache next to their sources in
  ``__pycache__`` (ignored by git), so nothing is configured here. Run with
  ``NUMBA_DISABLE_JIT=1`` to test the kernels as plain Python.
* Hypothesis writes nothing into the tree: no example database (``database=None``)
  and its other caches go to ``$TMPDIR/kinedyn-hypothesis``
  (or ``$HYPOTHESIS_STORAGE_DIRECTORY``).
  Profiles: ``dev`` (default, random, 100 examples) and ``ci`` (derandomized, so a
  CI run is reproducible); ``ci`` is chosen when ``$CI`` is set, or name one with
  ``HYPOTHESIS_PROFILE=...``.
* A test that takes a ``shared_model_path`` argument is run once per file of
  ``shared/models/`` (ids are the file stems).
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

from oracle import shared_model_paths  # noqa: E402

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


@pytest.fixture(scope="session")
def shared_models() -> list[Path]:
    """Paths of every ``shared/models/*.xml``."""
    return shared_model_paths()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "shared_model_path" in metafunc.fixturenames:
        paths = shared_model_paths()
        metafunc.parametrize("shared_model_path", paths, ids=[p.stem for p in paths])
