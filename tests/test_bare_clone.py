"""The suite needs nothing beside the repository: with the optional extra corpus switched off
(``KINEDYN_SHARED=off``, what a bare clone sees) every test module collects, every model the
tests name is in ``tests/models``, and no test reads ``shared/`` itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from oracle import MODELS_DIR, model_paths

TESTS = Path(__file__).resolve().parent


def test_model_list_without_the_extra_corpus_is_the_repository_models(monkeypatch):
    monkeypatch.setenv("KINEDYN_SHARED", "off")
    paths = model_paths()
    assert paths and all(p.parent == MODELS_DIR for p in paths)


def test_only_the_oracle_knows_about_shared():
    # every other test reaches models through oracle.model_paths / model_file
    offenders = [p.name for p in TESTS.rglob("*.py")
                 if p.name not in ("oracle.py", "fuzz_mjcf.py", "test_bare_clone.py")
                 and re.search(r'/ "shared"|shared_dir\(|environ\.get\("KINEDYN_SHARED', p.read_text())]
    assert offenders == []


def test_every_test_module_collects_without_shared():
    env = {**os.environ, "KINEDYN_SHARED": "off"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", str(TESTS)], cwd=TESTS.parent, env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    collected = int(re.search(r"(\d+) tests? collected", run.stdout).group(1))
    assert collected > 2000, run.stdout[-500:]
