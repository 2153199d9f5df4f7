"""kinedyn: robot kinematics and dynamics with MuJoCo's numbers, readable as Python.

The package, bottom to top (imports only point down; ``tests/test_layout.py`` checks it):

* ``_jit``      the only place that imports Numba: decorators, handles, the on-disk cache.
* ``engine``    the pipeline: Model, Data, and one module per stage (``smooth_*``,
                ``passive``, ``actuation``, ``forward``, ``integrator``, ``inverse``, ...).
* ``xml``       MJCF text -> element tree; ``compiler``: element tree -> Model.
* ``spec``      ``kd.Spec``, building a model in Python (MJCF export).
* ``models``    the bundled models.
* ``viewer``    plots and animations; ``ik`` and ``tools``: built on the engine.
* ``cli``       the ``kinedyn`` command; ``mujoco``: ``kinedyn.mujoco``, MuJoCo's Python API over
                Model and Data (imported only on request: ``import kinedyn.mujoco``).

This module re-exports the public names, as ``mujoco`` does. ``kd.trajectory`` and ``kd.batch``
(imported on first use) are the modules ``kinedyn.tools.trajectory`` and ``kinedyn.tools.batch``
themselves, the tools' one import path.
"""

import importlib

from kinedyn import compiler as compiler  # registers the MJCF compiler with Model.from_xml_*
from kinedyn import models
from kinedyn.engine.actuation import transmission
from kinedyn.engine.camlight import camlight
from kinedyn.engine.collision_driver import collision, contact_force
from kinedyn.engine.data import Data, reset, reset_data_keyframe
from kinedyn.engine.derivative_constraint import ConstraintDerivatives, constraint_derivatives
from kinedyn.engine.derivative_rne import (
    forward_derivatives,
    inertia_parameters,
    inertia_regressor,
    rne_derivatives,
)
from kinedyn.engine.forward import (
    forward,
    fwd_acceleration,
    fwd_actuation,
    fwd_constraint,
    fwd_position,
    fwd_velocity,
)
from kinedyn.engine.history import read_ctrl, read_sensor
from kinedyn.engine.integrator import step
from kinedyn.engine.inverse import inverse
from kinedyn.engine.model import Model, Option
from kinedyn.engine.passive import passive
from kinedyn.engine.ray import ray
from kinedyn.engine.rne_post import rne_post_constraint
from kinedyn.engine.smooth_inertia import crb, factor_m, full_m, mul_m, solve_m
from kinedyn.engine.smooth_kinematics import com_pos, kinematics
from kinedyn.engine.smooth_rne import bias_forces, com_vel, rne
from kinedyn.engine.smooth_tendon import tendon
from kinedyn.engine.support import (
    differentiate_pos,
    integrate_pos,
    jac,
    jac_body,
    jac_body_com,
    jac_point,
    jac_site,
)
from kinedyn.engine.types import (
    BiasType,
    CamLightMode,
    ConeType,
    ConstraintState,
    ConstraintType,
    DisableBit,
    DynType,
    EnableBit,
    EqType,
    GainType,
    GeomType,
    IntegratorType,
    JacobianType,
    JointType,
    ObjType,
    SensorType,
    SleepPolicy,
    SolverType,
    TrnType,
)
from kinedyn.errors import (
    ContactFullWarning,
    ModelError,
    NonFiniteStateWarning,
    UnphysicalInertiaWarning,
    UnsimulatedFeatureWarning,
)
from kinedyn.tools import trajectory
from kinedyn.tools.inverse_actuation import inverse_actuation

__version__ = "0.1.0"


# Submodules and names imported on first use (``kd.ik``, ``kd.batch``, ``kd.Spec``):
# most programs never solve IK, run batches or build models in code, and importing them costs
# start-up time (IK's solvers; the batch kernels pull in Numba's parallel machinery; the model
# builder's XML quoting pulls in urllib, http and ssl: 15-20 ms).
_LAZY_SUBMODULES = {"batch": "kinedyn.tools.batch", "ik": "kinedyn.ik"}
_LAZY_NAMES = {"Spec": "kinedyn.spec",
               # the finite differences run on the batch kernels' threads (kinedyn.tools.derivatives)
               "transition_fd": "kinedyn.tools.derivatives", "inverse_fd": "kinedyn.tools.derivatives",
               "check_derivatives": "kinedyn.tools.derivatives",
               "transition_derivatives": "kinedyn.tools.derivatives"}


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(_LAZY_SUBMODULES[name])
    if name in _LAZY_NAMES:
        # kept as a module attribute: later lookups do not come here (an import costs ~1.5 µs)
        value = globals()[name] = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        return value
    raise AttributeError(f"module 'kinedyn' has no attribute '{name}'")


__all__ = [
    # types
    "BiasType", "CamLightMode", "ConeType", "ConstraintState", "ConstraintType", "ContactFullWarning", "Data",
    "DisableBit", "EqType",
    "JacobianType", "ObjType", "SensorType", "SolverType", "DynType", "EnableBit", "GainType", "GeomType",
    "IntegratorType", "JointType", "Model", "ModelError", "NonFiniteStateWarning", "Option",
    "SleepPolicy", "Spec", "TrnType", "UnphysicalInertiaWarning", "UnsimulatedFeatureWarning",
    # pipeline
    "forward", "fwd_acceleration", "fwd_actuation", "fwd_constraint", "fwd_position", "fwd_velocity",
    "inverse",
    "inverse_actuation",
    # derivatives
    "forward_derivatives", "inertia_parameters", "inertia_regressor", "rne_derivatives",
    "ConstraintDerivatives", "constraint_derivatives",
    "check_derivatives", "inverse_fd", "transition_derivatives", "transition_fd",
    "reset", "reset_data_keyframe", "step",
    # stages
    "bias_forces", "camlight", "collision", "com_pos", "com_vel", "contact_force", "crb", "factor_m",
    "full_m",
    "kinematics", "mul_m", "passive", "rne",
    "read_ctrl", "read_sensor", "rne_post_constraint", "solve_m", "tendon", "transmission",
    # support
    "batch", "differentiate_pos", "ik", "models", "trajectory", "integrate_pos", "jac", "jac_body",
    "jac_body_com", "jac_point", "jac_site", "ray",
]
