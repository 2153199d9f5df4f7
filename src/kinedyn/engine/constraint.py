"""Constraint rows: equality, friction loss, limits and contacts (engine_core_constraint.c).

The position stage makes the rows (``mj_makeConstraint``): their type, id, Jacobian,
position, margin and friction loss, then the impedance and the regulariser
(``mj_makeImpedance``). The velocity stage computes each row's velocity and reference
acceleration (``mj_referenceConstraint``). The solvers (:mod:`kinedyn.engine.solver`)
read them.
"""

from __future__ import annotations

from kinedyn.engine.types import EQ_CONNECT, EQ_WELD


def efc_capacity(njnt: int, nv: int, ntendon: int, eq_type, ncontact_rows: int = 0) -> int:
    """Rows the efc_* arrays hold (Model.nefcmax).

    Every row a model can make whatever its state and its mutable fields (eq_active,
    jnt_limited, dof_frictionloss, ... can be switched on at run time): 3 per connect,
    6 per weld, 1 per other equality, one friction row per dof and per tendon, two limit
    rows per joint and per tendon, plus ``ncontact_rows`` for contacts.
    """
    ne = sum(3 if t == EQ_CONNECT else 6 if t == EQ_WELD else 1 for t in eq_type)
    return ne + nv + ntendon + 2 * njnt + 2 * ntendon + ncontact_rows
