"""Pictures of models and runs: the browser viewer (``show``, ``play``, ``Viewer``; module ``browser``),
GIF animations with shaded geoms (``render``), matplotlib plots (``plotting``), and what they share
(``scene``: meshes of the primitives, colours, contacts); the live simulation the viewer runs
(``live``) and the mouse perturbation (``perturb``).

``kd.viewer.show(m, d)`` (live simulation), ``kd.viewer.launch_passive(m, d)`` and
``kd.viewer.play(m, trajectory)`` import the browser module (and viser)
on first use: ``import kinedyn`` stays light.
"""

import importlib

_LAZY = {name: "kinedyn.viewer.browser" for name in ("show", "play", "launch_passive", "Viewer")}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kinedyn.viewer' has no attribute '{name}'")


__all__ = ["Viewer", "launch_passive", "play", "show"]
