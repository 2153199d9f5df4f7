"""``kinedyn.mujoco``: MuJoCo's Python bindings, for everything kinedyn computes.

Code written for ``import mujoco`` runs on kinedyn with one changed line::

    import kinedyn.mujoco as mujoco

or, for code that imports ``mujoco`` itself (gymnasium's environments), one call before that
code is imported::

    import kinedyn.mujoco
    kinedyn.mujoco.install()          # `import mujoco` now gives kinedyn.mujoco

``MjModel`` and ``MjData`` adapt kinedyn's native ``Model`` and ``Data`` (``m.kd``, ``d.kd``)
without copying them; ``mj_*`` functions call the native stages. Rendering and the native
viewer are refused with an error naming kinedyn's viewer. ``__version__`` is the MuJoCo
version whose numbers kinedyn reproduces ("4.0.0"), so version checks in client code
(gymnasium's) take MuJoCo 4.0's paths. docs/running-mujoco-code.md lists what is covered.
"""

from __future__ import annotations

import sys
import warnings

from kinedyn.mujoco import _enums, _functions, _rendering, _structs, rollout
from kinedyn.mujoco._enums import ENUMS, make
from kinedyn.mujoco._functions import (
    mj_camlight,
    mj_collision,
    mj_comPos,
    mj_comVel,
    mj_contactForce,
    mj_copyData,
    mj_crb,
    mj_differentiatePos,
    mj_factorM,
    mj_forward,
    mj_fullM,
    mj_fwdAcceleration,
    mj_fwdActuation,
    mj_fwdConstraint,
    mj_fwdPosition,
    mj_fwdVelocity,
    mj_getState,
    mj_getTotalmass,
    mj_id2name,
    mj_integratePos,
    mj_inverse,
    mj_jac,
    mj_jacBody,
    mj_jacBodyCom,
    mj_jacGeom,
    mj_jacSite,
    mj_kinematics,
    mj_makeM,
    mj_mulM,
    mj_name2id,
    mj_objectVelocity,
    mj_passive,
    mj_ray,
    mj_readCtrl,
    mj_readSensor,
    mj_resetData,
    mj_resetDataKeyframe,
    mj_rne,
    mj_rnePostConstraint,
    mj_sensorAcc,
    mj_sensorPos,
    mj_sensorVel,
    mj_setState,
    mj_solveM,
    mj_stateSize,
    mj_step,
    mj_step1,
    mj_step2,
    mj_tendon,
    mj_transmission,
    mj_version,
    mj_versionString,
    mjd_inverseFD,
    mjd_transitionFD,
)
from kinedyn.mujoco._rendering import RenderingNotSupported, is_rendering_name
from kinedyn.mujoco._structs import MjContactList, MjData, MjModel, MjStatistic, MjWarningStatList

# the MuJoCo release whose numbers kinedyn reproduces (client code compares it with Version(...))
__version__ = "4.0.0"

# the submodules `import mujoco.X` finds after install(); the rendering ones are refusals
_SUBMODULES = {"_enums": _enums, "_functions": _functions, "_structs": _structs, "rollout": rollout,
               "viewer": _rendering, "renderer": _rendering, "egl": _rendering, "glfw": _rendering,
               "osmesa": _rendering, "gl_context": _rendering}


def install() -> None:
    """Make ``import mujoco`` (and ``import mujoco.rollout``, ``mujoco.viewer``, ...) resolve to
    ``kinedyn.mujoco`` in this process.

    Call it before the code that imports ``mujoco`` is imported: a module that imported the
    real ``mujoco`` earlier keeps it (a warning says so). Calling it again does nothing.
    """
    this = sys.modules[__name__]
    previous = sys.modules.get("mujoco")
    if previous is this:
        return
    if previous is not None:
        warnings.warn("kinedyn.mujoco.install(): the real `mujoco` was imported before; modules that "
                      "imported it already keep it. Call install() first.", RuntimeWarning, stacklevel=2)
        for name in [n for n in sys.modules if n.startswith("mujoco.")]:
            del sys.modules[name]
    sys.modules["mujoco"] = this
    for name, module in _SUBMODULES.items():
        sys.modules[f"mujoco.{name}"] = module


def __getattr__(name: str):
    if name in ENUMS:
        value = make(name)
        globals()[name] = value  # made once; later reads find it directly
        return value
    if is_rendering_name(name):
        return getattr(_rendering, name)
    if name == "MjSpec":
        raise AttributeError("mujoco.MjSpec is not provided by kinedyn.mujoco: build models with kd.Spec "
                             "(docs/building.md) or write MJCF and use MjModel.from_xml_string")
    raise AttributeError(f"module 'mujoco' (kinedyn.mujoco) has no attribute '{name}': kinedyn does not "
                         "provide it (docs/running-mujoco-code.md lists what is covered)")


__all__ = [
    "MjContactList", "MjData", "MjModel", "MjStatistic", "MjWarningStatList", "RenderingNotSupported",
    "install", "rollout",
    "mj_copyData", "mj_getTotalmass", "mj_jacGeom", "mj_ray", "mj_version", "mj_versionString",
    "mj_camlight", "mj_collision", "mj_comPos", "mj_comVel", "mj_contactForce", "mj_crb",
    "mj_differentiatePos", "mj_factorM", "mj_forward", "mj_fullM", "mj_fwdAcceleration", "mj_fwdActuation",
    "mj_fwdConstraint", "mj_fwdPosition", "mj_fwdVelocity", "mj_getState", "mj_id2name", "mj_integratePos",
    "mj_inverse", "mj_jac", "mj_jacBody", "mj_jacBodyCom", "mj_jacSite", "mj_kinematics", "mj_makeM",
    "mj_mulM", "mj_name2id", "mj_objectVelocity", "mj_passive", "mj_resetData", "mj_resetDataKeyframe",
    "mj_readCtrl", "mj_readSensor", "mj_rne",
    "mj_rnePostConstraint", "mj_sensorAcc", "mj_sensorPos", "mj_sensorVel", "mj_setState", "mj_solveM",
    "mj_stateSize", "mj_step", "mj_step1", "mj_step2", "mj_tendon", "mj_transmission", "mjd_inverseFD",
    "mjd_transitionFD",
]  # and the mjt* enumerations (ENUMS), made on first use
