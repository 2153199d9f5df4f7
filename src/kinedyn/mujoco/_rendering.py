"""MuJoCo's rendering and native-viewer names, refused: kinedyn does not render with OpenGL.

``mujoco.Renderer``, ``mujoco.viewer.launch``, ``mjr_*``, ``mjv_*``, ``MjrContext``, ``MjvScene``,
``mujoco.egl.GLContext``, ... resolve (so that code which only names them, such as gymnasium's
renderer module, imports), but calling one raises ``RenderingNotSupported`` naming kinedyn's
viewer instead.
"""

from __future__ import annotations

VIEWER_HINT = ("kinedyn does not render with MuJoCo's OpenGL renderer or run its native viewer; use "
               "kinedyn's browser viewer on the native objects: kd.viewer.show(m.kd, d.kd), "
               "kd.viewer.play(m.kd, trajectory) or `kinedyn view model.xml` (docs/viewer.md); with "
               "gymnasium, make the environments with render_mode=None")


class RenderingNotSupported(NotImplementedError):
    """A MuJoCo rendering or viewer function was called under kinedyn.mujoco."""


def is_rendering_name(name: str) -> bool:
    return (name.startswith(("mjr_", "mjv_", "Mjr", "Mjv")) or
            name in ("Renderer", "GLContext", "gl_context", "viewer", "egl", "glfw", "osmesa", "renderer"))


class Refused:
    """Stands for a rendering name: importing or naming it works, calling it raises."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RenderingNotSupported(f"mujoco.{self._name}: {VIEWER_HINT}")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Refused(f"{self._name}.{attr}")

    def __repr__(self):
        return f"<refused by kinedyn.mujoco: {self._name}>"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return Refused(name)
