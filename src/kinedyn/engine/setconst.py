"""Compile-time constants that need the dynamics at qpos0 (MuJoCo's set0, engine_setconst.c).

* ``actuator_length0``: actuator length at qpos0.
* ``actuator_acc0``: |M^-1 moment^T|, the joint acceleration norm caused by a unit
  actuator force at qpos0 (M includes armature).
* dampratio: a position-like actuator (gainprm[0] == -biasprm[1]) whose biasprm[2]
  is positive holds a damping ratio zeta rather than -kv. MuJoCo 4.0 resolves it with
  the reflected mass m = 1 / (J M^-1 J^T) at qpos0: kv = zeta * 2 sqrt(kp m), stored
  as biasprm[2] = -kv.
* ``tendon_length0``: tendon length at qpos0.
* ``tendon_lengthspring``: a tendon whose springlength was left at -1 -1 gets its
  length at ``qpos_spring`` for both ends (MuJoCo's setSpring, after set0).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import cached_njit
from kinedyn.engine.data import Data
from kinedyn.engine.forward import forward
from kinedyn.engine.smooth_inertia import _solve_m_entry


@cached_njit
def _solve_m_rows_entry(m, d, rows):
    """rows[i] <- M^-1 rows[i] for every row (mj_solveM), as one compiled call.

    ``kinedyn.solve_m`` does the same from Python; this entry exists so that loading a model
    from a warm cache loads only entries cached through ``_jit.cache.cached_njit`` (see
    ``_LazyFunctionCache``): ``solve_m``'s own entry would run Numba's compiler
    initialisation (0.1 s) on the way.
    """
    for i in range(rows.shape[0]):
        _solve_m_entry(m, d, rows[i])


def set_const(model) -> None:
    """Fill actuator_length0, actuator_acc0, tendon_length0, tendon_lengthspring, resolve dampratio."""
    if model.nu == 0 and model.ntendon == 0:
        return

    d = Data(model)
    # The whole forward pass, though only its position stage is used here: it is the entry the
    # user's first `forward` needs anyway, so a cold start compiles the position stage once
    # instead of twice (standalone and inside forward). The later stages' outputs are discarded.
    forward(model, d)
    model.tendon_length0[:] = d.ten_length
    if model.ntendon:
        _set_spring(model)
    if model.nu == 0:
        return
    # one solve per actuator: x_i = M^-1 moment_i^T
    x = d.actuator_moment.copy()
    _solve_m_rows_entry(model._handle, d._handle, x)
    model.actuator_length0[:] = d.actuator_length
    model.actuator_acc0[:] = np.linalg.norm(x, axis=1)

    for i in range(model.nu):
        gainprm, biasprm = model.actuator_gainprm[i], model.actuator_biasprm[i]
        if gainprm[0] == -biasprm[1] and biasprm[2] > 0:
            dampratio = biasprm[2]
            kp = gainprm[0]
            inv_mass = float(d.actuator_moment[i] @ x[i])
            mass = 1.0 / inv_mass if inv_mass > 0 else 0.0
            model.actuator_biasprm[i, 2] = -dampratio * 2.0 * math.sqrt(kp * mass)


def _set_spring(model) -> None:
    """tendon_lengthspring -1 -1 -> the tendon length at qpos_spring (setSpring)."""

    d = Data(model)
    d.qpos[:] = model.qpos_spring
    forward(model, d)  # spatial tendons need the site poses and Jacobians
    for i in range(model.ntendon):
        if model.tendon_lengthspring[i, 0] == -1 and model.tendon_lengthspring[i, 1] == -1:
            model.tendon_lengthspring[i, :] = d.ten_length[i]
