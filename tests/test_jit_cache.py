"""The compiled-code cache and the units (kinedyn._jit): every function's cache entry is keyed by
its own machine code (its code and that of the functions compiled into it, the constants they
read, the signatures of the units it calls), so an edit recompiles what it changes and nothing
else; units are bound only for models that need them, and a model that comes to need another
one binds it on its next call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest
from numba import config

import kinedyn
import kinedyn as kd
from kinedyn._jit import cache, deps
from kinedyn._jit.bind import needed_units
from kinedyn.engine import collision_driver, forward, solver

pytestmark = pytest.mark.skipif(config.DISABLE_JIT, reason="nothing is cached without the JIT")

PACKAGE = Path(kinedyn.__file__).resolve().parent


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KINEDYN_CACHE_DIR", str(tmp_path / "k"))
    assert cache.cache_root() == tmp_path / "k"
    monkeypatch.delenv("KINEDYN_CACHE_DIR")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert cache.cache_root() == tmp_path / "n" / "kinedyn"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_root() == tmp_path / "x" / "kinedyn"


# ---- stamps, in process: a throw-away module whose functions are edited -------------------------

MODULE = '''
from kinedyn._jit import handle_entry, kernel

SCALE = {scale}


@kernel
def helper(x):
    """A helper compiled into its callers."""
    return SCALE * x  # {comment}


@handle_entry(returns="float64", args="float64")
def callee_unit(m, d, x):
    return {callee_body}


@kernel
def caller(m, d, x):
    return helper(x) + callee_unit(m, d, x)
'''


def _load(tmp_path, **edits):
    """The module with ``edits``, loaded anew under one name (a unit of a reloaded module takes over
    its cell, as after importlib.reload)."""
    fields = {"scale": "2.0", "comment": "twice", "callee_body": "x + 1.0", **edits}
    path = tmp_path / f"stamps_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(MODULE.format(**fields))
    module = types.ModuleType("stamps_probe")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102 -- our own test module
    return module


def test_stamps_follow_the_machine_code_not_the_text(tmp_path):
    base = _load(tmp_path)
    stamp = {name: deps.stamp(getattr(base, name).py_func) for name in ("helper", "caller")}
    # a comment or a docstring changes no code: same stamps
    same = _load(tmp_path, comment="two times")
    assert deps.stamp(same.caller.py_func) == stamp["caller"]
    # a constant the helper reads is compiled into it and into its caller
    scaled = _load(tmp_path, scale="3.0")
    assert deps.stamp(scaled.helper.py_func) != stamp["helper"]
    assert deps.stamp(scaled.caller.py_func) != stamp["caller"]
    # the caller reaches the unit through its cell: a new body of the unit leaves the caller's stamp
    unit_before = deps.stamp(base.callee_unit.py_func)
    edited = _load(tmp_path, callee_body="x + 2.0")
    assert deps.stamp(edited.caller.py_func) == stamp["caller"]
    assert deps.stamp(edited.callee_unit.py_func) != unit_before
    assert deps.unit_callees(edited.caller.py_func) == (edited.callee_unit,)


# ---- which units a model needs --------------------------------------------------------------------

def _needed(m) -> set[str]:
    return {u.name.rsplit(".", 1)[1] for u in needed_units(m, (forward.forward_entry,))}


def test_a_model_binds_only_the_colliders_and_solvers_it_can_use():
    capsules = kd.Model.from_xml_string("""
        <mujoco><worldbody><geom type="plane" size="1 1 .1"/>
          <body pos="0 0 1"><freejoint/><geom type="capsule" size=".1 .2"/></body>
        </worldbody></mujoco>""")
    needed = _needed(capsules)
    assert "primitive_collider" in needed and "primal_islands" in needed
    assert not needed & {"box_collider", "convex_collider", "hfield_collider", "plane_convex_collider",
                         "pgs_from_warmstart", "solve_noslip", "fluid_forces", "compare_fwd_inv"}
    boxes = kd.Model.from_xml_string("""
        <mujoco><option solver="PGS" density="1.2"/><worldbody><geom type="plane" size="1 1 .1"/>
          <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
          <body pos="0 0 2"><freejoint/><geom type="ellipsoid" size=".1 .2 .3"/></body>
        </worldbody></mujoco>""")
    needed = _needed(boxes)
    assert {"primitive_collider", "convex_collider", "plane_convex_collider", "pgs_from_warmstart",
            "dual_finish", "fluid_forces"} <= needed
    assert "primal_islands" not in needed and "box_collider" not in needed


def test_a_model_changed_after_binding_binds_what_it_now_needs():
    xml = """
        <mujoco><worldbody><geom type="plane" size="1 1 .1"/>
          <body pos="0 0 0.05"><freejoint/><geom type="sphere" size=".1"/></body>
        </worldbody></mujoco>"""
    m, reference = kd.Model.from_xml_string(xml), kd.Model.from_xml_string(xml)
    d, dref = kd.Data(m), kd.Data(reference)
    kd.forward(m, d)
    # a solver the model did not select when it was made, its unit cleared as in a fresh process
    m.opt.solver = reference.opt.solver = kd.SolverType.CG
    solver.primal_islands.unbind()
    for _ in range(3):
        kd.step(m, d)
    for _ in range(3):
        kd.step(reference, dref)
    assert solver.primal_islands.is_bound
    np.testing.assert_array_equal(d.qpos, dref.qpos)
    # a contact type enabled later: its collider is bound on the next forward
    collision_driver.primitive_collider.unbind()
    kd.forward(m, d)
    assert collision_driver.primitive_collider.is_bound and d.ncon == 1


# ---- edits in a copy of the package, in child processes ----------------------------------------


@pytest.fixture
def package_copy(tmp_path):
    """A private copy of the kinedyn package (sources only) to edit."""
    dest = tmp_path / "src" / "kinedyn"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return dest


# runs in a child on the package copy: the kinematics of the bundled arm (the body quaternions come from
# util_spatial.quat_product, defined in another module than the entry)
PROBE = textwrap.dedent("""
    import json
    import numpy as np
    from numba.core import event
    import kinedyn as kd
    with event.install_recorder("numba:compile") as rec:
        m = kd.models.load("arm3")
        d = kd.Data(m)
        d.qpos[:] = np.linspace(0.1, 0.3, m.nq)
        kd.kinematics(m, d)
    names = sorted({ev.data["dispatcher"].py_func.__qualname__ for _, ev in rec.buffer if ev.is_start})
    print(json.dumps({"xquat": d.xquat.tolist(), "compiled": names, "file": kd.__file__}))
""")


def _run(package: Path, cache_root: Path) -> dict:
    # compiled in this process only, so that its compile events show everything compiled
    env = {**os.environ, "PYTHONPATH": str(package.parent), "KINEDYN_CACHE_DIR": str(cache_root),
           "KINEDYN_COMPILE_PROGRESS": "0", "KINEDYN_PARALLEL_COMPILE": "0"}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=900, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).resolve().parent == package.resolve()
    return result


def _edit(path: Path, old: str, new: str) -> str:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return text


def test_an_edit_recompiles_what_it_changes_and_nothing_else(package_copy, tmp_path):
    root = tmp_path / "cache"
    # seeded with what this test run has compiled so far (the copy's code is the same, so are the keys):
    # a copy, so that the edits below never touch the cache other tests read
    here = Path(cache.cache_dir())
    (root / here.name).mkdir(parents=True)
    for entry in list(here.glob("*.nb[ic]")):
        try:
            shutil.copy2(entry, root / here.name / entry.name)
        except FileNotFoundError:  # replaced by another process meanwhile: compiled again if needed
            continue
    first = _run(package_copy, root)
    warm = _run(package_copy, root)
    assert warm["compiled"] == [] and warm["xquat"] == first["xquat"]

    # comments and docstrings are not code: nothing recompiles
    kinematics = package_copy / "engine" / "smooth_kinematics.py"
    _edit(kinematics, '"""', '"""An edited docstring. ')
    kinematics.write_text(kinematics.read_text() + "\n# an edit\n")
    assert _run(package_copy, root)["compiled"] == []
    # a collider the kinematics never reach: nothing recompiles
    box = package_copy / "engine" / "collision_box.py"
    _edit(box, "import math\n", "import math\n\nUNUSED_CONSTANT = 1.5\n")
    assert _run(package_copy, root)["compiled"] == []

    # the body rotation helper, in another module than the entry: the entry recompiles with it
    helper = package_copy / "engine" / "util_spatial.py"
    original = helper.read_text()
    helper.write_text(original + "\n\ndef unused_helper():\n    return 0\n")
    changed = _run(package_copy, root)
    assert changed["compiled"] == [], "a new function nobody calls changes no machine code"
    helper.write_text(original)
    # a sign in the product's x component: the result changes, so the entry must recompile
    _edit(helper, "(aw * bx + ax * bw) + (ay * bz - az * by),", "(aw * bx - ax * bw) + (ay * bz - az * by),")
    flipped = _run(package_copy, root)
    assert "kinematics_entry" in flipped["compiled"]
    assert flipped["xquat"] != first["xquat"]
    # undoing the edit finds the older machine code again: each version has its own entry
    _edit(helper, "(aw * bx - ax * bw) + (ay * bz - az * by),", "(aw * bx + ax * bw) + (ay * bz - az * by),")
    undone = _run(package_copy, root)
    assert undone["compiled"] == [] and undone["xquat"] == first["xquat"]
    # nothing was written next to the sources
    assert not list(package_copy.rglob("*.nbi")) and not list(package_copy.rglob("*.nbc"))


def test_entries_unused_for_long_are_pruned_once_a_day(tmp_path):
    """Versions of a function that edits left behind are deleted after PRUNE_AFTER_DAYS without a
    load; an entry in use (loaded: its index file touched) and other files are kept."""
    old = time.time() - (cache.PRUNE_AFTER_DAYS + 1) * 86400
    names = {"engine.f.kernel-kaaaa.py311": old, "engine.f.kernel-kbbbb.py311": time.time()}
    for base, mtime in names.items():
        for f in (tmp_path / f"{base}.nbi", tmp_path / f"{base}.1.nbc", tmp_path / f"{base}.2.nbc"):
            f.write_bytes(b"x")
            os.utime(f, (mtime, mtime))
    (tmp_path / "notes.txt").write_text("kept")
    cache._prune_entries(tmp_path)
    left = sorted(f.name for f in tmp_path.iterdir())
    assert left == [".pruned", "engine.f.kernel-kbbbb.py311.1.nbc", "engine.f.kernel-kbbbb.py311.2.nbc",
                    "engine.f.kernel-kbbbb.py311.nbi", "notes.txt"]
    # at most once a day: a second call within the day deletes nothing
    for f in (tmp_path / "engine.f.kernel-kbbbb.py311.nbi",):
        os.utime(f, (old, old))
    cache._prune_entries(tmp_path)
    assert (tmp_path / "engine.f.kernel-kbbbb.py311.nbi").exists()
