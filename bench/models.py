"""Benchmark models: where each comes from and how it is prepared.

Every model is one MJCF text. MuJoCo and kinedyn compile *the same text*, with
``<flag constraint="disable" contact="disable"/>`` merged into ``<option>``, so
both run the smooth dynamics only (kinedyn has no contact or constraint solver).
Pinocchio reads a temporary copy of that text (``pin.buildModelFromMJCF``);
where its MJCF parser cannot build the model the pin column is n/a.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    name: str
    origin: str      # where the text comes from, printed with the results
    xml: str         # MJCF text, constraints and contacts not yet disabled


def disable_constraints(xml: str) -> str:
    """``xml`` with ``<option><flag constraint="disable" contact="disable"/></option>`` merged in.

    An existing ``<option>`` and ``<flag>`` keep their other attributes. Comments are dropped.
    """
    root = ET.fromstring(xml)
    if root.tag != "mujoco":
        raise ValueError(f"not an MJCF document: root element is <{root.tag}>")
    option = root.find("option")
    if option is None:
        option = ET.Element("option")
        root.insert(0, option)
    flag = option.find("flag")
    if flag is None:
        flag = ET.SubElement(option, "flag")
    flag.set("constraint", "disable")
    flag.set("contact", "disable")
    return ET.tostring(root, encoding="unicode")


def _remove_bodies(xml: str, names: set[str]) -> str:
    root = ET.fromstring(xml)
    for parent in root.iter():
        for child in list(parent):
            if child.tag == "body" and child.get("name") in names:
                parent.remove(child)
    return ET.tostring(root, encoding="unicode")


def _gymnasium_asset(filename: str) -> Path:
    # located without importing gymnasium.envs.mujoco (its import needs rendering packages)
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("gymnasium is not installed: pip install -e '.[bench]'")
    path = Path(spec.origin).parent / "envs" / "mujoco" / "assets" / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found in the installed gymnasium")
    return path


def _pendulum() -> Source:
    from kinedyn import models

    return Source("pendulum", "kinedyn.models 'pendulum' (MuJoCo actuator tutorial)", models.xml("pendulum"))


def _arm() -> Source:
    path = _gymnasium_asset("pusher.xml")
    # the pusher's puck and goal are 4 free slides that are not part of the arm
    xml = _remove_bodies(path.read_text(), {"object", "goal"})
    # coordinate="local" is MuJoCo's only frame convention (the attribute is obsolete): drop it
    root = ET.fromstring(xml)
    compiler = root.find("compiler")
    if compiler is not None and compiler.get("coordinate") == "local":
        del compiler.attrib["coordinate"]
    xml = ET.tostring(root, encoding="unicode")
    return Source("arm", f"gymnasium pusher.xml, 7-DoF arm without puck and goal ({path})", xml)


def _humanoid() -> Source:
    path = _gymnasium_asset("humanoid.xml")
    return Source("humanoid", f"gymnasium humanoid.xml, free base + 17 hinges ({path})", path.read_text())


BUILTIN = {"pendulum": _pendulum, "arm": _arm, "humanoid": _humanoid}


def get(name: str) -> Source:
    """A built-in benchmark model by name, or any MJCF file by path."""
    if name in BUILTIN:
        return BUILTIN[name]()
    path = Path(name)
    if path.is_file():
        return Source(path.stem, str(path), path.read_text())
    raise KeyError(f"unknown model {name!r}: use one of {', '.join(BUILTIN)} or an MJCF file path")


def pinocchio_model(xml: str):
    """``(pin.Model, None)`` built from ``xml``, or ``(None, reason)`` when Pinocchio cannot read it."""
    try:
        import pinocchio as pin
    except ImportError:
        return None, "pinocchio not installed"
    root = ET.fromstring(xml)
    # pin's MJCF parser finds no tree under unnamed bodies; names do not change the physics
    for i, body in enumerate(root.iter("body")):
        if not body.get("name"):
            body.set("name", f"body{i}")
    fd, tmp = tempfile.mkstemp(suffix=".xml", prefix="kinedyn-bench-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(ET.tostring(root, encoding="unicode"))
        return pin.buildModelFromMJCF(tmp), None
    except Exception as err:  # pin raises ValueError/RuntimeError with multi-line messages
        return None, f"pin.buildModelFromMJCF failed: {str(err).strip().splitlines()[-1]}"
    finally:
        os.unlink(tmp)
