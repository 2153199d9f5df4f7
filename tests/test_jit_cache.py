"""The on-disk cache never runs stale code: compiled code is keyed by the content of every source
it can come from, so editing a helper module recompiles the kernels that call it, and undoing the
edit finds the earlier compiled code again. Nothing is written next to the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from numba import config

import kinedyn
from kinedyn._jit import cache

pytestmark = pytest.mark.skipif(config.DISABLE_JIT, reason="nothing is cached without the JIT")

PACKAGE = Path(kinedyn.__file__).resolve().parent


@pytest.fixture
def package_copy(tmp_path):
    """A private copy of the kinedyn package (sources only) to edit."""
    dest = tmp_path / "src" / "kinedyn"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return dest


def _key_of(package: Path, monkeypatch) -> str:
    monkeypatch.setattr(cache, "PACKAGE", package)
    return cache.source_key()


def test_source_key_follows_compiled_sources_only(package_copy, monkeypatch):
    before = _key_of(package_copy, monkeypatch)
    helper = package_copy / "engine" / "util_spatial.py"
    text = helper.read_text()
    helper.write_text(text + "\n# an edit\n")
    assert _key_of(package_copy, monkeypatch) != before
    helper.write_text(text)
    assert _key_of(package_copy, monkeypatch) == before
    # the compiler, readers and CLI are never compiled by Numba: editing them keeps the key
    # nor are the tools that only call compiled code (batch.py holds kernels)
    for path in ("compiler/build.py", "xml/mjcf.py", "cli/main.py", "tools/trajectory.py",
                 "tools/distributed.py"):
        (package_copy / path).write_text((package_copy / path).read_text() + "\n# an edit\n")
    assert _key_of(package_copy, monkeypatch) == before
    batch = package_copy / "tools" / "batch.py"
    batch.write_text(batch.read_text() + "\n# an edit\n")
    assert _key_of(package_copy, monkeypatch) != before


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KINEDYN_CACHE_DIR", str(tmp_path / "k"))
    assert cache.cache_root() == tmp_path / "k"
    monkeypatch.delenv("KINEDYN_CACHE_DIR")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert cache.cache_root() == tmp_path / "n" / "kinedyn"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_root() == tmp_path / "x" / "kinedyn"


# runs in a child on the package copy: integrate one ball joint (support.integrate_pos_kernel calls
# util_spatial.quat_integrate, defined in another module) and report the result and what compiled
PROBE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event
    import kinedyn
    from kinedyn.engine.support import integrate_pos_kernel
    from kinedyn.engine.types import JNT_BALL
    from kinedyn._jit.cache import cache_dir
    qpos = np.array([1.0, 0.0, 0.0, 0.0])
    with event.install_recorder("numba:compile") as rec:
        integrate_pos_kernel(np.array([JNT_BALL], np.int32), np.array([0], np.int32), np.array([0], np.int32),
                             qpos, np.array([0.3, -0.2, 0.5]), 0.1, np.zeros((3, 4)), np.zeros((3, 3)))
    print(json.dumps({"qpos": qpos.tolist(), "compiled": sum(ev.is_start for _, ev in rec.buffer),
                      "dir": cache_dir(), "file": kinedyn.__file__}))
""")


def _run(package: Path, cache_root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(package.parent), "KINEDYN_CACHE_DIR": str(cache_root),
           "KINEDYN_COMPILE_PROGRESS": "0"}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=600, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).resolve().parent == package.resolve()
    return result


def test_editing_a_callee_module_recompiles_and_undoing_it_reuses(package_copy, tmp_path):
    root = tmp_path / "cache"
    first = _run(package_copy, root)
    assert first["compiled"] > 0
    warm = _run(package_copy, root)
    assert warm["compiled"] == 0 and warm["qpos"] == first["qpos"] and warm["dir"] == first["dir"]

    # negate the rotation in the helper module only (the kernel's own file is untouched)
    helper = package_copy / "engine" / "util_spatial.py"
    original = helper.read_text()
    line = "    angle = scale * normalize3(tmp, t)\n"
    edited = original.replace(line, line.replace("scale", "-scale"))
    assert edited != original
    helper.write_text(edited)
    changed = _run(package_copy, root)
    assert changed["compiled"] > 0 and changed["dir"] != first["dir"]
    assert changed["qpos"][0] == pytest.approx(first["qpos"][0])
    assert changed["qpos"][1:] == pytest.approx([-x for x in first["qpos"][1:]])

    helper.write_text(original)
    back = _run(package_copy, root)
    assert back["compiled"] == 0 and back["dir"] == first["dir"] and back["qpos"] == first["qpos"]
    # nothing was written next to the sources
    assert not list(package_copy.rglob("*.nbi")) and not list(package_copy.rglob("*.nbc"))
