"""kinedyn: robot kinematics and dynamics with MuJoCo's numbers, readable as Python."""

from kinedyn import models, trajectory
from kinedyn.actuation import fwd_actuation, transmission
from kinedyn.data import Data, reset
from kinedyn.dynamics import bias_forces, com_vel, fwd_acceleration, passive, rne
from kinedyn.errors import ModelError, NonFiniteStateWarning, UnsimulatedFeatureWarning
from kinedyn.forward import forward, fwd_position, fwd_velocity
from kinedyn.inertia import crb, factor_m, full_m, mul_m, solve_m
from kinedyn.integrate import differentiate_pos, integrate_pos, step
from kinedyn.inverse import inverse
from kinedyn.inverse_actuation import inverse_actuation
from kinedyn.jacobian import jac, jac_body, jac_body_com, jac_point, jac_site
from kinedyn.kinematics import com_pos, kinematics
from kinedyn.model import Model, Option
from kinedyn.tendon import tendon
from kinedyn.types import (
    BiasType,
    DisableBit,
    DynType,
    EnableBit,
    GainType,
    GeomType,
    IntegratorType,
    JointType,
    TrnType,
)

__version__ = "0.1.0"


# Submodules and names imported on first use (``kd.ik``, ``from kinedyn import batch``, ``kd.Spec``):
# most programs never solve IK, run batches or build models in code, and importing them costs
# start-up time (IK's solvers; the batch kernels pull in Numba's parallel machinery; the model
# builder's XML quoting pulls in urllib, http and ssl: 15-20 ms).
_LAZY_SUBMODULES = ("batch", "ik")
_LAZY_NAMES = {"Spec": "kinedyn.builder"}


def __getattr__(name):
    import importlib

    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"kinedyn.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module 'kinedyn' has no attribute '{name}'")


__all__ = [
    # types
    "BiasType", "Data", "DisableBit", "DynType", "EnableBit", "GainType", "GeomType",
    "IntegratorType", "JointType", "Model", "ModelError", "NonFiniteStateWarning", "Option",
    "Spec", "TrnType", "UnsimulatedFeatureWarning",
    # pipeline
    "forward", "fwd_acceleration", "fwd_actuation", "fwd_position", "fwd_velocity", "inverse",
    "inverse_actuation", "reset", "step",
    # stages
    "bias_forces", "com_pos", "com_vel", "crb", "factor_m", "full_m", "kinematics", "mul_m", "passive", "rne",
    "solve_m", "tendon", "transmission",
    # support
    "batch", "differentiate_pos", "ik", "models", "trajectory", "integrate_pos", "jac", "jac_body",
    "jac_body_com", "jac_point", "jac_site",
]
