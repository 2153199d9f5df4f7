"""The package's architecture, checked: imports point down, only ``kinedyn._jit`` touches Numba,
MuJoCo and Pinocchio stay test/benchmark references, and no module imports itself in a cycle.

The contracts are import-linter's, declared in ``pyproject.toml`` ([tool.importlinter]).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    run = subprocess.run([lint, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BROKEN" not in run.stdout and run.stdout.count("KEPT") == len(CONFIG["contracts"])


def test_every_subpackage_is_placed_in_a_layer():
    layers = next(c for c in CONFIG["contracts"] if c["type"] == "layers")["layers"]
    placed = {name.strip() for level in layers for name in level.split("|")}
    package = ROOT / "src" / "kinedyn"
    members = {p.stem for p in package.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists())
               or (p.suffix == ".py" and p.stem != "__init__")}
    unplaced = sorted(members - placed)
    assert unplaced == [], f"place these in a layer of [tool.importlinter]: {unplaced}"


def test_no_import_cycles():
    graph = grimp.build_graph("kinedyn", cache_dir=None)
    modules = [m for m in graph.modules if m.startswith("kinedyn")]
    # Tarjan's strongly connected components over module-level import edges (function-level imports count)
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if not w.startswith("kinedyn"):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    assert cycles == [], f"import cycles: {cycles}"


@pytest.mark.parametrize("layer", ["engine", "compiler", "xml", "tools", "ik", "viewer", "cli", "mujoco",
                                   "_jit"])
def test_every_layer_is_a_package_with_a_docstring(layer):
    init = ROOT / "src" / "kinedyn" / layer / "__init__.py"
    assert init.exists()
    assert init.read_text().lstrip().startswith('"""'), f"{layer}/__init__.py says what the layer is for"


def test_tools_have_one_import_path():
    """The tools import as ``kinedyn.tools.*`` only (``import kinedyn.batch`` from before they moved
    fails); ``kd.batch`` and ``kd.trajectory`` are those same module objects, and batch is not
    imported until asked for."""
    probe = (
        "import sys, importlib, kinedyn\n"
        "assert 'kinedyn.tools.batch' not in sys.modules\n"
        "import kinedyn.tools.batch, kinedyn.tools.trajectory\n"
        "assert kinedyn.batch is kinedyn.tools.batch and kinedyn.trajectory is kinedyn.tools.trajectory\n"
        "for old in ('kinedyn.batch', 'kinedyn.trajectory'):\n"
        "    try:\n"
        "        importlib.import_module(old)\n"
        "    except ModuleNotFoundError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(old + ' still imports')\n"
        "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
