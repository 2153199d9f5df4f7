"""Inverse dynamics: the generalised force that produces a given acceleration (mj_inverse).

    qfrc_inverse = M(q) qacc + qfrc_bias - qfrc_passive - qfrc_constraint

M includes the rotor inertia ``dof_armature`` on its diagonal, so armature enters
exactly as in MuJoCo's ``mj_inverse``. The constraint force is not solved for: each row's
force follows from qacc directly (``inv_constraint``, MuJoCo's mj_invConstraint), as the
force law of the soft constraints, efc_force = -D (J qacc - aref) clipped by the row's
type (one-sided limits, friction loss saturating at +-frictionloss), is what the forward
solver's optimum satisfies. So ``forward`` followed by ``inverse`` returns
qfrc_applied + J^T xfrc_applied + qfrc_actuator, to the forward solver's tolerance.

Discrete-time inverse (``EnableBit.INVDISCRETE``, MuJoCo's mj_discreteAcc): qacc is read
as the acceleration of the integrator's step, (qvel_next - qvel) / h, and converted to the
continuous-time acceleration the step's implicit terms correspond to before the formula
above is applied: for Euler with implicit joint damping qacc <- M^-1 (M + h B) qacc, for
implicitfast qacc <- M^-1 (M - h D) qacc (the free bodies' rows with their 6x6 system
including the gyroscopic derivative). d.qacc itself is left unchanged. RK4 has no
discrete inverse (MuJoCo raises); ``inverse`` raises ValueError.
"""

from __future__ import annotations

import math

from kinedyn._jit import FastEntry, NotBound, entry, handle_entry, kernel, rebind
from kinedyn.engine.checks import bad_model_data
from kinedyn.engine.derivative import (
    _is_free_body,
    dof_damping_deriv,
    eulerdamp_active,
    free_body_mhat,
    implicit_lu_entry,
    implicit_matrix,
)
from kinedyn.engine.forward import fwd_position_entry, fwd_velocity_entry
from kinedyn.engine.sensor import sensor_acc_entry, sensor_pos_inverse_entry, sensor_vel_entry
from kinedyn.engine.smooth_inertia import mul_m_kernel, solve_ld
from kinedyn.engine.solver import constraint_update
from kinedyn.engine.support import xfrc_accumulate
from kinedyn.engine.types import (
    COUNT_NEFC,
    ENBL_INVDISCRETE,
    INT_DISCRETE,
    INT_EULER,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    INT_RK4,
    OPT_ENABLEFLAGS,
    OPT_INTEGRATOR,
    EnableBit,
    IntegratorType,
)

# rows of Data.scratch_inv_nv
_QFRC, _QFORCE, _SAVED = 0, 1, 2


@kernel
def discrete_acc(m, d, qacc):
    """qacc = the continuous-time acceleration of the discrete-time d.qacc (mj_discreteAcc).

    Euler with implicit damping (eulerdamp and damper flags on, some dof damping):
    M^-1 (M + h diag(B)) qacc, B the derivative of the dof dampers (derivative.dof_damping_deriv);
    implicitfast: M^-1 (M - h D) qacc with D as the
    integrator builds it, the rows of each lone free body replaced by its 6x6 system
    (mjd_freeMhat) times its qacc. Otherwise (Euler without implicit damping) qacc is
    copied. RK4 is refused by the callers (MuJoCo's mjERROR); here it copies too.
    """
    nv = m.nv
    integrator = m.opt_flags[OPT_INTEGRATOR]
    qfrc = d.scratch_inv_nv[_QFRC]
    if integrator == INT_EULER and eulerdamp_active(m):
        # qfrc = M qacc + h B qacc
        mul_m_kernel(qfrc, d.M, d.qacc, m.M_rownnz, m.M_rowadr, m.M_colind)
        h = m.opt_timestep[0]
        for v in range(nv):
            qfrc[v] += h * dof_damping_deriv(m, d, v) * d.qacc[v]
    elif integrator == INT_IMPLICITFAST:
        # qfrc = (M - h D) qacc, symmetric product from the lower triangle
        qh = d.scratch_nC
        implicit_matrix(m, d, qh)
        mul_m_kernel(qfrc, qh, d.qacc, m.M_rownnz, m.M_rowadr, m.M_colind)
        # lone free bodies: their rows are the unsymmetric local product
        for j in range(m.njnt):
            if _is_free_body(m, j):
                free_body_mhat(m, d, j)
                a = d.scratch_free_mhat
                adr = m.jnt_dofadr[j]
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += a[r, c] * d.qacc[adr + c]
                    qfrc[adr + r] = s
    elif integrator == INT_IMPLICIT:
        # qfrc = (M - h qDeriv) qacc, the full unsymmetric product (mj_discreteAcc's qLU * qacc)
        implicit_lu_entry(m, d)
        a = d.scratch_lu
        for r in range(nv):
            s = 0.0
            for c in range(nv):
                s += a[r, c] * d.qacc[c]
            qfrc[r] = s
    else:
        for v in range(nv):
            qacc[v] = d.qacc[v]
        return
    # qacc = M^-1 qfrc
    for v in range(nv):
        qacc[v] = qfrc[v]
    solve_ld(qacc, d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def inv_constraint(m, d, qacc):
    """efc_force, efc_state and qfrc_constraint at the acceleration qacc (mj_invConstraint):
    jar = J qacc - aref, then the force law of each row (solver.constraint_update)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    if nefc == 0:
        for v in range(nv):
            d.qfrc_constraint[v] = 0.0
        return
    jar = d.scratch_solver_efc[0]
    J = d.efc_J
    for i in range(nefc):
        s = 0.0
        for v in range(nv):
            s += J[i, v] * qacc[v]
        jar[i] = s - d.efc_aref[i]
    constraint_update(m, d, jar, False)


@entry
def inverse_acceleration(m, d):
    """The acceleration-dependent part of mj_inverseSkip, after the position and velocity
    stages: the (continuous-time) qacc, the constraint forces at it, and qfrc_inverse."""
    qacc = d.qacc
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_INVDISCRETE:
        qacc = d.scratch_inv_qacc
        discrete_acc(m, d, qacc)
    inv_constraint(m, d, qacc)
    # qfrc_inverse = M qacc + bias - passive - constraint (the bias: mj_rne without acceleration
    # plus mj_tendonBias, which is qfrc_bias of the velocity stage)
    mul_m_kernel(d.qfrc_inverse, d.M, qacc, m.M_rownnz, m.M_rowadr, m.M_colind)
    for v in range(m.nv):
        d.qfrc_inverse[v] += d.qfrc_bias[v] - d.qfrc_passive[v] - d.qfrc_constraint[v]


# inverse_entry's result: done, or refused (the discrete inverse with RK4, which MuJoCo refuses)
INVERSE_DONE, INVERSE_REFUSED = 0, 1


@handle_entry(returns="int64")
def inverse_entry(m, d):
    """mj_inverse; INVERSE_REFUSED, computing nothing, for the discrete inverse with RK4 and under
    the discrete integrator (its inverse in the effective metric is not reproduced)."""
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_INVDISCRETE and m.opt_flags[OPT_INTEGRATOR] == INT_RK4:
        return INVERSE_REFUSED
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:
        return INVERSE_REFUSED
    # mj_inverseSkip: the sensors of each stage after it, as forward's
    fwd_position_entry(m, d)
    sensor_pos_inverse_entry(m, d)
    fwd_velocity_entry(m, d)
    sensor_vel_entry(m, d)
    inverse_acceleration(m, d)
    swap_discrete_qacc(m, d)
    sensor_acc_entry(m, d)
    swap_discrete_qacc(m, d)
    return INVERSE_DONE


@kernel
def _swap(a, b):
    for i in range(a.shape[0]):
        a[i], b[i] = b[i], a[i]


@kernel
def swap_discrete_qacc(m, d):
    """With the discrete-time inverse, swap d.qacc and its continuous-time counterpart: MuJoCo's
    acceleration sensors see the continuous-time qacc (mj_discreteAcc works in place). Called
    around the acceleration sensors; nothing otherwise."""
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_INVDISCRETE:
        _swap(d.qacc, d.scratch_inv_qacc)


# a unit of its own: compiled only for models with the fwdinv flag (mj_step calls it then)
@handle_entry(returns="boolean", needed=lambda m: bool(m.opt.enableflags & EnableBit.FWDINV))
def compare_fwd_inv(m, d):
    """d.solver_fwdinv after a forward pass (mj_compareFwdInv): run the inverse at the forward
    qacc without redoing the position and velocity stages, and compare

        solver_fwdinv[0] = |qfrc_constraint(forward) - qfrc_constraint(inverse)|
        solver_fwdinv[1] = |qfrc_applied + J' xfrc_applied + qfrc_actuator - qfrc_inverse|

    Restores qfrc_constraint and efc_force; leaves efc_state and qfrc_inverse as the inverse
    made them, as MuJoCo does. Zeros without constraint rows. Returns False if the inverse
    is not possible (the discrete inverse with RK4: MuJoCo's mjERROR), True otherwise.
    """
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    d.solver_fwdinv[0] = 0.0
    d.solver_fwdinv[1] = 0.0
    if nefc == 0:
        return True
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_INVDISCRETE and m.opt_flags[OPT_INTEGRATOR] == INT_RK4:
        return False
    sv = d.scratch_inv_nv
    for v in range(nv):
        sv[_QFORCE, v] = d.qfrc_applied[v] + d.qfrc_actuator[v]
        sv[_SAVED, v] = d.qfrc_constraint[v]
    xfrc_accumulate(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                    d.xfrc_applied, d.xipos, d.subtree_com, d.cdof, sv[_QFORCE])
    saved_force = d.scratch_inv_efc
    for i in range(nefc):
        saved_force[i] = d.efc_force[i]
    inverse_acceleration(m, d)
    s0 = 0.0
    s1 = 0.0
    for v in range(nv):
        e0 = sv[_SAVED, v] - d.qfrc_constraint[v]
        e1 = sv[_QFORCE, v] - d.qfrc_inverse[v]
        s0 += e0 * e0
        s1 += e1 * e1
    d.solver_fwdinv[0] = math.sqrt(s0)
    d.solver_fwdinv[1] = math.sqrt(s1)
    for v in range(nv):
        d.qfrc_constraint[v] = sv[_SAVED, v]
    for i in range(nefc):
        d.efc_force[i] = saved_force[i]
    return True


_INVERSE = FastEntry(inverse_entry)


def check_discrete_inverse(m, what: str) -> None:
    """Raise ValueError if ``m`` asks for discrete-time inverse dynamics with RK4, which
    MuJoCo refuses (mj_discreteAcc: "discrete inverse dynamics is not supported by RK4")."""
    if m.opt.enableflags & EnableBit.INVDISCRETE and m.opt.integrator == IntegratorType.RK4:
        raise ValueError(f"{what}: discrete inverse dynamics (EnableBit.INVDISCRETE) is not supported by "
                         "the RK4 integrator, as in MuJoCo; clear the flag or use Euler or implicitfast")
    if m.opt.integrator == IntegratorType.DISCRETE:
        raise ValueError(f'{what}: inverse dynamics under integrator="discrete" (in its effective metric) '
                         "is not reproduced by kinedyn (docs/deviations.md)")


def inverse(m, d) -> None:
    """Inverse dynamics from qpos, qvel and qacc.

    Reads: qpos, qvel, qacc (and the constraint settings). Writes: qfrc_inverse, every
    position and velocity field (the constraint rows and their aref among them), the
    constraint forces at qacc: efc_force, efc_state, qfrc_constraint, and the sensors. Mirrors mj_inverse,
    including the ``invdiscrete`` enable flag (see the module docstring); d.qacc is not
    modified. Raises ValueError for the discrete inverse with RK4, as MuJoCo does.
    """
    # the checks inline and the refusal found in compiled code: this wrapper is part of every call's
    # cost (an IntFlag test of m.opt.enableflags here cost as much as a fifth of the humanoid's inverse)
    try:  # the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "inverse")
    except AttributeError:
        bad_model_data(m, d, "inverse")
    try:
        refused = _INVERSE.call(m._ptr, d._ptr)
    except NotBound:  # the model changed since it was bound (an integrator switched to implicit)
        rebind(m, d)
        refused = _INVERSE.call(m._ptr, d._ptr)
    if refused:
        check_discrete_inverse(m, "inverse")
