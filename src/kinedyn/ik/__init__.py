"""Inverse kinematics: numerical (:func:`solve`) and the closed-form biped leg (:func:`leg6`).

>>> import kinedyn as kd
>>> from kinedyn import ik
>>> m = kd.models.load("arm3")
>>> res = ik.solve(m, ik.Target(site="ee", pos=[0.1, 0.2, 0.5]))
>>> res.success
True
"""

from kinedyn.ik.leg import LegIKResult, leg6
from kinedyn.ik.numerical import METHODS, IKResult, residual, solve
from kinedyn.ik.targets import Target

__all__ = ["IKResult", "LegIKResult", "METHODS", "Target", "leg6", "residual", "solve"]
