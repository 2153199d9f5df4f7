"""Bundled models, loadable by name.

>>> from kinedyn import models
>>> models.names()
('arm3', 'arm7', 'biped', 'pendulum')
>>> m = models.load("pendulum")          # a kinedyn.Model

Each model is one self-contained MJCF file in this package, read through
``importlib.resources`` so it works from a wheel as well as from a source tree.
Where a file came from is written in the comment at its top.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kinedyn.engine.model import Model
from kinedyn.errors import close_names

# name -> file in this package; add a model by adding its file and one line here
_FILES: dict[str, str] = {
    "arm3": "arm3.xml",           # 3-joint arm of the forward/inverse-kinematics tutorial
    "arm7": "arm7.xml",           # 7-DoF arm with iiwa-like kinematics (redundant IK case)
    "biped": "biped.xml",         # 12-DoF biped of the humanoid-kinematics tutorial, free torso
    "pendulum": "pendulum.xml",   # motor pendulum of MuJoCo's <actuator> tutorial
}


def names() -> tuple[str, ...]:
    """The names of the bundled models, sorted."""
    return tuple(sorted(_FILES))


def _file(name: str):
    try:
        filename = _FILES[name]
    except (KeyError, TypeError):
        hint = close_names(name, _FILES)
        raise KeyError(f"no bundled model {name!r}{hint}; known models: {', '.join(names())}") from None
    return resources.files(__name__).joinpath(filename)


def path(name: str) -> Path:
    """The file of bundled model ``name`` (e.g. to hand it to MuJoCo).

    Raises:
      KeyError: ``name`` is not a bundled model; the message lists the known ones.
    """
    return Path(str(_file(name)))


def xml(name: str) -> str:
    """The MJCF text of bundled model ``name``."""
    return _file(name).read_text(encoding="utf-8")


def load(name: str) -> Model:
    """Compile bundled model ``name`` and return it as a :class:`kinedyn.Model`.

    Raises:
      KeyError: ``name`` is not a bundled model; the message lists the known ones.
    """
    return Model.from_xml_string(xml(name))


__all__ = ["load", "names", "path", "xml"]
