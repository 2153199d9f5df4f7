"""The discrete integrator's effective metric (engine_metric.c, MuJoCo 4.0's mjINT_DISCRETE).

Under ``integrator="discrete"`` the acceleration is the step map qacc = (v+ - v)/h of a step that
is implicit in the springs and dampers: with D and K the damping and stiffness (the derivatives
of the spring and damper forces with respect to velocity and position, clamped to >= 0),

    (M + h D + h^2 K) qacc = qfrc_smooth - h K qvel

(a spring at the end of the step, q+ = q + h v + h^2 qacc, pulls with -K (q - q0) - h K v - h^2 K
qacc, and a damper with -D v - h D qacc). MuJoCo builds M-hat in mj_effBuild / mj_effShift /
mj_effActuation and solves it in mj_effSolve; the terms are:

* per dof (the diagonal, ``effDiagStiff``, ``effDiagDamp``): h d(v k(v))/dv of the dof's damper
  (the damping of actuators on its joint included) and h^2 d(x k(x))/dx of its joint's spring at
  qpos - qpos_spring (for a ball or free joint, at the norm of the rotation/translation, the same
  value on its 3 dofs);
* per tendon with a spring or a damper (rank 1, J' J): h^2 k + h b, k at the tendon's deadband
  displacement (0 inside the dead band), b at its velocity;
* per actuator with an affine gain or bias (rank 1, moment' moment): h^2 gp + h gv, gp and gv
  minus the derivatives of its force with respect to length and velocity, clamped to >= 0, and
  left out while its force is held at a bound (forcerange, the tendon's actuatorfrcrange).

The shift -h K qvel is, per class, -h k qvel (dofs), -h k ten_velocity J' (tendons) and
-h gp actuator_velocity moment' (actuators). Under the PGS solver the tendon and actuator classes
are left out (mj_effCouplings) and their forces stay explicit.

The solve: the backbone qH = M + the diagonal + each rank-1 term's diagonal is factored like M
(mj_factorI). Without tendon or actuator terms qH is M-hat and qacc_smooth = qH^-1 rhs; with them
MuJoCo runs a preconditioned conjugate gradient on M-hat with qH as the preconditioner, from 0,
until |r|^2 < tolerance^2 |rhs|^2 or opt.iterations (mj_effSolve); ``_pcg`` does the same.

A lone free body's 6x6 block of qacc (not of qacc_smooth) is then solved again with the
gyroscopic derivative added to its M-hat block, after the constraint stage, when no constraint
row acts on it (``discrete_free_bodies_entry``, as implicitfast's local solve).

Constraint rows (measured on the 4.0.0 wheel): each row's impedance and reference see the end of
the step (constraint._discrete_row, constraint.discrete_reference), its diagApprox the metric
(``_rescale_rows``); the Newton solver minimises its cost with M-hat for M and qfrc_smooth + shift
for qfrc_smooth (``pick``, ``add_rank1_product``, ``add_rank1_hessian``), its preconditioner the
backbone (``solve_backbone``), on islands joined by the rank-1 terms (island.make_islands).

What kinedyn does not reproduce (refused by ``unsupported``): constraint rows with the PGS or CG
solver, noslip, a sparse constraint Jacobian or adhesion; flexes, fluid forces, muscle and user
actuators, tendons or actuators on a lone free body, sleeping, springs with a yield, the fwdinv
flag; the inverse dynamics in the metric (inverse refuses) and the PCG's iteration-cap warning
(mjWARN_INERTIA).
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.derivative import (
    _actuator_force_vel,
    _is_free_body,
    _solve_dense,
    actuator_deriv_skipped,
    actuator_input,
    dof_damping_deriv,
    free_body_mhat,
    tendon_damping_deriv,
)
from kinedyn.engine.island import DOF_ISLAND, make_islands
from kinedyn.engine.metric_diag import CK as _CK
from kinedyn.engine.metric_diag import DIAG as _DIAG
from kinedyn.engine.metric_diag import metric_diagonal
from kinedyn.engine.smooth_inertia import factor_i, mul_m_kernel, solve_ld
from kinedyn.engine.types import (
    BIAS_AFFINE,
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_PYRAMIDAL,
    COUNT_NEFC,
    DSBL_ACTUATION,
    DSBL_DAMPER,
    DSBL_ISLAND,
    DSBL_SPRING,
    GAIN_AFFINE,
    INT_DISCRETE,
    JAC_AUTO,
    JAC_SPARSE,
    JNT_FREE,
    MINVAL,
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    OPT_ITERATIONS,
    OPT_SOLVER,
    OPT_TOLERANCE,
    SOL_NEWTON,
    SOL_PGS,
    BiasType,
    DisableBit,
    DynType,
    EnableBit,
    GainType,
    TrnType,
    WrapType,
)
from kinedyn.engine.util_poly import poly_force_deriv

# rows of d.scratch_efm
_SHIFT, _QHINV, _R, _Z, _P, _AP, FORCE = range(2, 9)


def used(m) -> bool:
    """Whether the model steps with the discrete integrator (the unit below is needed)."""
    return m.opt.integrator == INT_DISCRETE


@kernel
def _tendon_scale(m, d, t, h, shift):
    """h^2 k + h b of tendon t (0: not in the metric); adds its stiffness shift to ``shift``
    (mj_effShift's tendon loop)."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    k = 0.0
    if not flags & DSBL_SPRING:
        length = d.ten_length[t]
        lower, upper = m.tendon_lengthspring[t, 0], m.tendon_lengthspring[t, 1]
        x = length - upper if length > upper else (length - lower if length < lower else 0.0)
        if x != 0.0:
            k = max(0.0, poly_force_deriv(m.tendon_stiffness[t], m.tendon_stiffnesspoly[t, 0],
                                          m.tendon_stiffnesspoly[t, 1], x, False))
    b = 0.0
    if not flags & DSBL_DAMPER:
        b = max(0.0, tendon_damping_deriv(m, d, t))
    if k != 0.0:
        kv = h * k * d.ten_velocity[t]
        for v in range(m.nv):
            shift[v] -= kv * d.ten_J[t, v]
    return h * h * k + h * b


@kernel
def _actuator_scale(m, d, i, h, shift):
    """h^2 gp + h gv of actuator i (0: not in the metric); adds its stiffness shift to ``shift``
    (mj_effActuation's actuator loop)."""
    if not (m.actuator_gaintype[i] == GAIN_AFFINE or m.actuator_biastype[i] == BIAS_AFFINE):
        return 0.0
    if actuator_deriv_skipped(m, d, i):
        return 0.0
    gv = max(0.0, -_actuator_force_vel(m, d, i))
    # d force / d length of the affine gain and bias
    dlen = 0.0
    if m.actuator_biastype[i] == BIAS_AFFINE:
        dlen = m.actuator_biasprm[i, 1]
    if m.actuator_gaintype[i] == GAIN_AFFINE and m.actuator_gainprm[i, 1] != 0.0:
        dlen += m.actuator_gainprm[i, 1] * actuator_input(m, d, i)
    gp = max(0.0, -dlen)
    if gp != 0.0:
        kv = h * gp * d.actuator_velocity[i]
        for v in range(m.nv):
            shift[v] -= kv * d.actuator_moment[i, v]
    return h * h * gp + h * gv


@kernel
def _add_rank1(m, qh, row, scale):
    """The diagonal of scale * row' row into the backbone qh (M's layout)."""
    for v in range(m.nv):
        if row[v] != 0.0:
            qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += scale * row[v] * row[v]


@kernel
def _mul_metric(m, d, res, vec, couplings):
    """res = M-hat vec: M, the diagonal, then the tendon and the actuator rank-1 terms
    (mju_mulSymVecSparse and mj_effMulAdd)."""
    mul_m_kernel(res, d.M, vec, m.M_rownnz, m.M_rowadr, m.M_colind)
    diag = d.scratch_efm[_DIAG]
    for v in range(m.nv):
        res[v] += diag[v] * vec[v]
    if not couplings:
        return
    for t in range(m.ntendon):
        s = d.scratch_efm_ts[t]
        if s != 0.0:
            _rank1_apply(res, d.ten_J[t], vec, s)
    for i in range(m.nactuator):
        s = d.scratch_efm_as[i]
        if s != 0.0:
            _rank1_apply(res, d.actuator_moment[i], vec, s)


@kernel
def _rank1_apply(res, row, vec, scale):
    """res += scale row' (row vec), over the row's nonzeros."""
    dot = 0.0
    for v in range(row.shape[0]):
        if row[v] != 0.0:
            dot += row[v] * vec[v]
    dot *= scale
    for v in range(row.shape[0]):
        if row[v] != 0.0:
            res[v] += dot * row[v]


@kernel
def _dot(a, b):
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s


@kernel
def _precondition(m, d, z, r):
    """z = qH^-1 r with the backbone factor."""
    for v in range(m.nv):
        z[v] = r[v]
    solve_ld(z, d.scratch_efm_qh, d.scratch_efm[_QHINV], m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def _pcg(m, d, x, b):
    """x = M-hat^-1 b by conjugate gradients preconditioned with qH, from x = 0, stopping at
    |r|^2 < tolerance^2 |b|^2 or opt.iterations, or where M-hat has no curvature (mj_effSolve)."""
    nv = m.nv
    efm = d.scratch_efm
    r, z, p, ap = efm[_R], efm[_Z], efm[_P], efm[_AP]
    for v in range(nv):
        r[v] = b[v]
        x[v] = 0.0
    bn = _dot(r, r)
    if not bn > MINVAL:
        return
    tol = m.opt_real[OPT_TOLERANCE]
    tol = tol * tol * bn
    _precondition(m, d, z, r)
    for v in range(nv):
        p[v] = z[v]
    rz = _dot(r, z)
    for _ in range(m.opt_flags[OPT_ITERATIONS]):
        _mul_metric(m, d, ap, p, True)
        pap = _dot(p, ap)
        if pap <= 0.0:
            break
        alpha = rz / pap
        for v in range(nv):
            x[v] += alpha * p[v]
        for v in range(nv):
            r[v] -= alpha * ap[v]
        if _dot(r, r) < tol:
            break
        _precondition(m, d, z, r)
        rznew = _dot(r, z)
        beta = rznew / rz
        for v in range(nv):
            p[v] = z[v] + beta * p[v]
        rz = rznew


@kernel
def _row_scale(m, d, qh, i):
    """sum_v J_v^2 / qH_vv over sum_v J_v^2 / M_vv of constraint row i (qH the backbone)."""
    num = 0.0
    den = 0.0
    row = d.efc_J[i]
    for v in range(m.nv):
        j = row[v]
        if j != 0.0:
            adr = m.M_rowadr[v] + m.M_rownnz[v] - 1
            num += j * j / qh[adr]
            den += j * j / d.M[adr]
    if den == 0.0:
        return 1.0
    return num / den


@kernel
def _rescale_rows(m, d, qh):
    """Under the discrete integrator a row's diagApprox sees the metric: measured on the 4.0.0
    wheel, it is the usual one times sum_v J_v^2 / qH_vv over sum_v J_v^2 / M_vv, with qH the
    backbone (M + the diagonal + the rank-1 terms' diagonals) at the current state, and a
    contact's rows all take its first row's factor. R (and so D and diagA, which
    constraint._make_impedance made consistent with R) scale with it."""
    nefc = d.efc_counts[COUNT_NEFC]
    i = 0
    while i < nefc:
        t = d.efc_type[i]
        n = 1
        if t == CNSTR_CONTACT_ELLIPTIC:
            n = d.contact_dim[d.efc_id[i]]
        elif t == CNSTR_CONTACT_PYRAMIDAL:
            n = 2 * (d.contact_dim[d.efc_id[i]] - 1)
        s = _row_scale(m, d, qh, i)
        for k in range(i, i + n):
            d.efc_R[k] *= s
            d.efc_D[k] = 1 / d.efc_R[k]
            d.efc_diagA[k] = d.efc_R[k] * d.efc_KBIP[k, 2] / (1 - d.efc_KBIP[k, 2])
        i += n


@handle_entry(needed=used)
def discrete_acceleration_entry(m, d):
    """qacc_smooth (and qacc) = M-hat^-1 (qfrc_smooth - h K qvel): mj_fwdAcceleration under the
    discrete integrator, the metric built as mj_effBuild, mj_effShift and mj_effActuation do."""
    nv = m.nv
    h = m.opt_timestep[0]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    efm = d.scratch_efm
    diag, ck, shift = efm[_DIAG], efm[_CK], efm[_SHIFT]
    # per dof: h D + h^2 K, and the shift -h k qvel
    metric_diagonal(m, d)
    for v in range(nv):
        shift[v] = -ck[v] * d.qvel[v]
    # the tendon and actuator classes, left out under PGS (mj_effCouplings)
    couplings = m.opt_flags[OPT_SOLVER] != SOL_PGS
    ts, act_s = d.scratch_efm_ts, d.scratch_efm_as
    nterms = 0  # MuJoCo's nefmT + nefmA: with any, the solve is the PCG
    for t in range(m.ntendon):
        ts[t] = 0.0
        if couplings and _tendon_possible(m, t):
            ts[t] = _tendon_scale(m, d, t, h, shift)
            nterms += 1
    for i in range(m.nactuator):
        act_s[i] = 0.0
        if couplings and not flags & DSBL_ACTUATION:
            act_s[i] = _actuator_scale(m, d, i, h, shift)
            if act_s[i] != 0.0:
                nterms += 1
    # the backbone: M + the diagonal + each rank-1 term's diagonal, factored
    qh = d.scratch_efm_qh
    for k in range(qh.shape[0]):
        qh[k] = d.M[k]
    for v in range(nv):
        qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += diag[v]
    # M + the diagonal, kept for the constraint solvers (solver_mass)
    mhat = d.scratch_efm_mhat
    for k in range(qh.shape[0]):
        mhat[k] = qh[k]
    for t in range(m.ntendon):
        if ts[t] != 0.0:
            _add_rank1(m, qh, d.ten_J[t], ts[t])
    for i in range(m.nactuator):
        if act_s[i] != 0.0:
            _add_rank1(m, qh, d.actuator_moment[i], act_s[i])
    if d.efc_counts[COUNT_NEFC] > 0:
        _rescale_rows(m, d, qh)
        if nterms > 0 and not flags & DSBL_ISLAND:
            # islands joined by the rank-1 terms (the rows' islands were made without them)
            make_islands(m, d, True)
    factor_i(qh, efm[_QHINV], m.M_rownnz, m.M_rowadr, m.M_colind)
    # right-hand side qfrc_smooth + shift, into qacc (the PCG's b)
    rhs = d.qacc
    force = efm[FORCE]
    for v in range(nv):
        rhs[v] = d.qfrc_smooth[v] + shift[v]
        force[v] = rhs[v]
    if nterms == 0:
        # the backbone is the metric: a direct solve
        for v in range(nv):
            d.qacc_smooth[v] = rhs[v]
        solve_ld(d.qacc_smooth, qh, efm[_QHINV], m.M_rownnz, m.M_rowadr, m.M_colind)
    else:
        _pcg(m, d, d.qacc_smooth, rhs)
    for v in range(nv):
        d.qacc[v] = d.qacc_smooth[v]


@handle_entry(needed=used)
def discrete_free_bodies_entry(m, d):
    """After the constraint stage: each lone free body's 6x6 block of qacc again, with the
    gyroscopic derivative h d qfrc_bias/d qvel (unsymmetric, so outside the metric), as
    implicitfast does, unless a row acts on the body (then the solver's qacc stays). MuJoCo
    4.0.0 leaves qacc_smooth as the metric solve made it (measured).
    No tendon or actuator acts on these bodies (``unsupported``): the block is decoupled from the
    other dofs. Reads the metric's diagonal and shift from discrete_acceleration_entry."""
    diag, shift = d.scratch_efm[_DIAG], d.scratch_efm[_SHIFT]
    qacc = d.qacc
    h = m.opt_timestep[0]
    damper = not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER
    for j in range(m.njnt):
        # with rows: only the bodies no row acts on (measured on the 4.0.0 wheel: a free body in
        # contact keeps the solver's qacc)
        if _is_free_body(m, j) and not _constrained(m, d, m.jnt_dofadr[j]):
            # implicitfast's block M + h (damping) + h d qfrc_bias/d qvel (no tendon, actuator or
            # fluid term reaches it here), its damping replaced by the metric's diagonal
            free_body_mhat(m, d, j)
            a = d.scratch_free_mhat
            adr = m.jnt_dofadr[j]
            for r in range(6):
                if damper:
                    a[r, r] -= h * dof_damping_deriv(m, d, adr + r)
                a[r, r] += diag[adr + r]
            for r in range(6):
                qacc[adr + r] = d.qfrc_smooth[adr + r] + shift[adr + r]
            _solve_dense(a, qacc[adr:adr + 6])


@kernel
def _constrained(m, d, adr):
    """Whether a constraint row acts on the free body whose dofs start at adr: its island (or,
    islands disabled, a nonzero in its Jacobian columns)."""
    nefc = d.efc_counts[COUNT_NEFC]
    if nefc == 0:
        return False
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ISLAND:
        return d.scratch_tree[DOF_ISLAND, adr] >= 0
    for i in range(nefc):
        for v in range(adr, adr + 6):
            if d.efc_J[i, v] != 0.0:
                return True
    return False


@kernel
def _tendon_possible(m, t):
    """mj_effTendonPossible: a spring (springs enabled) or a damper (dampers enabled)."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    spring = m.tendon_stiffness[t] != 0.0 or m.tendon_stiffnesspoly[t, 0] != 0.0 \
        or m.tendon_stiffnesspoly[t, 1] != 0.0
    damper = m.tendon_damping[t] != 0.0 or m.tendon_dampingpoly[t, 0] != 0.0 \
        or m.tendon_dampingpoly[t, 1] != 0.0 or m.tendon_actuatorid[t] != -1
    return (not flags & DSBL_SPRING and spring) or (not flags & DSBL_DAMPER and damper)


def unsupported(m) -> list[str]:
    """What the discrete integrator meets in ``m`` that kinedyn does not reproduce: the features
    named in the refusal (empty: supported)."""
    missing = []
    if _constraint_rows_possible(m):
        if m.opt.solver != SOL_NEWTON:
            name = "PGS" if m.opt.solver == SOL_PGS else "CG"
            missing.append("constraint rows (contacts, joint or tendon limits, equalities, friction "
                           f"loss) with the {name} solver (Newton is reproduced)")
        elif m.opt.jacobian == JAC_SPARSE or (m.opt.jacobian == JAC_AUTO and m.nv >= 60):
            missing.append("constraint rows with a sparse constraint Jacobian "
                           "(nv >= 60 or jacobian=\"sparse\")")
        if m.opt.noslip_iterations > 0:
            missing.append("constraint rows with noslip (noslip_iterations > 0)")
        if np.any(m.geom_adhesion != 0.0) or np.any(m.pair_adhesion != 0.0):
            missing.append("adhesive contacts")
    if m.nflex:
        missing.append("flexes")
    if m.opt.density or m.opt.viscosity:
        missing.append("fluid forces")
    if m.nplastic:
        missing.append("springs with a yield (springyield)")
    if m.opt.enableflags & EnableBit.SLEEP:
        missing.append("sleeping bodies")
    if m.opt.enableflags & EnableBit.FWDINV:
        missing.append("the fwdinv flag")
    if np.any(m.actuator_gaintype == GainType.MUSCLE) or np.any(m.actuator_biastype == BiasType.MUSCLE) \
            or np.any(m.actuator_dyntype == DynType.MUSCLE):
        missing.append("muscle actuators")
    if np.any(m.actuator_gaintype == GainType.USER) or np.any(m.actuator_biastype == BiasType.USER):
        missing.append("user actuators")
    if np.any(m.actuator_gaintype == GainType.DCMOTOR) or np.any(m.actuator_biastype == BiasType.DCMOTOR) \
            or np.any(m.actuator_gaintype == GainType.PID) or np.any(m.actuator_dyntype == DynType.PID):
        # MuJoCo's metric takes their gain and bias slopes (mj_effActuatorPossible); not measured here
        missing.append("pid or dcmotor actuators")
    if _acted_free_bodies(m):
        missing.append("tendons or actuators acting on a lone free body (its gyroscopic block)")
    return missing


def _acted_free_bodies(m) -> list[int]:
    """The lone free bodies (derivative._is_free_body) that a tendon or an actuator acts on."""
    free = set()
    for j in range(m.njnt):
        b = int(m.jnt_bodyid[j])
        if m.jnt_type[j] == JNT_FREE and m.body_jntnum[b] == 1 and m.body_subtreemass[b] == m.body_mass[b] \
                and (b + 1 >= m.nbody or m.body_rootid[b + 1] != m.body_rootid[b]):
            free.add(b)
    if not free:
        return []
    acted = set()
    tendon_bodies = []
    for t in range(m.ntendon):
        bodies = set()
        for w in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
            kind, obj = m.wrap_type[w], m.wrap_objid[w]
            if kind == WrapType.JOINT:
                bodies.add(int(m.jnt_bodyid[obj]))
            elif kind == WrapType.SITE:
                bodies.add(int(m.site_bodyid[obj]))
            elif kind in (WrapType.SPHERE, WrapType.CYLINDER):
                bodies.add(int(m.geom_bodyid[obj]))
        tendon_bodies.append(bodies)
        acted |= bodies
    for i in range(m.nactuator):
        kind, obj = m.actuator_trntype[i], m.actuator_trnid[i, 0]
        if kind in (TrnType.JOINT, TrnType.JOINTINPARENT):
            acted.add(int(m.jnt_bodyid[obj]))
        elif kind in (TrnType.SITE, TrnType.SLIDERCRANK):
            acted.add(int(m.site_bodyid[obj]))
        elif kind == TrnType.BODY:
            acted.add(int(obj))
        elif kind == TrnType.TENDON:
            acted |= tendon_bodies[obj]
    return sorted(free & acted)


def _constraint_rows_possible(m) -> bool:
    """Whether a forward pass of ``m`` can make constraint rows (conservatively for contacts: any
    two geoms on different weld bodies that pass the contype/conaffinity filter, or a <pair>)."""
    off = m.opt.disableflags
    if off & DisableBit.CONSTRAINT:
        return False
    if m.neq and not off & DisableBit.EQUALITY:
        return True
    if not off & DisableBit.LIMIT and (np.any(m.jnt_limited) or np.any(m.tendon_limited)):
        return True
    friction = np.any(m.dof_frictionloss > 0) or np.any(m.tendon_frictionloss > 0)
    if not off & DisableBit.FRICTIONLOSS and friction:
        return True
    if off & DisableBit.CONTACT:
        return False
    if m.npair:
        return True
    weld = m.body_weldid[m.geom_bodyid]
    ct, ca = m.geom_contype, m.geom_conaffinity
    for g in range(m.ngeom):
        hit = ((ct[g] & ca) | (ca[g] & ct)) != 0
        hit &= weld != weld[g]
        if np.any(hit):
            return True
    return False


# ---- the constraint solvers in the metric ---------------------------------------------------------
# With constraint rows, MuJoCo 4.0's Newton solver minimises its usual cost with M-hat in place of
# M and M-hat qacc_smooth = qfrc_smooth + shift in place of qfrc_smooth (mj_isMetric in
# engine_solver.c). These kernels give the solver those quantities; with another integrator they
# are M and qfrc_smooth.


@kernel
def is_discrete(m):
    return m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE


@kernel
def pick(cond, a, b):
    """a if cond else b (a kernel returns only arrays it was given: callers pass the two fields).

    The constraint solvers read M as pick(is_discrete(m), d.scratch_efm_mhat, d.M) -- M + the
    metric's diagonal under discrete, its rank-1 terms added by add_rank1_product /
    add_rank1_hessian -- and qfrc_smooth as pick(is_discrete(m), d.scratch_efm[FORCE],
    d.qfrc_smooth), qfrc_smooth + the metric's shift."""
    if cond:
        return a
    return b


@kernel
def has_rank1(m, d):
    """Whether the metric has tendon or actuator terms this step (discrete only)."""
    if m.opt_flags[OPT_INTEGRATOR] != INT_DISCRETE:
        return False
    for t in range(m.ntendon):
        if d.scratch_efm_ts[t] != 0.0:
            return True
    for i in range(m.nu):
        if d.scratch_efm_as[i] != 0.0:
            return True
    return False


@kernel
def add_rank1_product(m, d, dofs, res, vec):
    """res += sum_k s_k row_k' (row_k vec) over the island's dofs (the metric's rank-1 terms)."""
    for t in range(m.ntendon):
        s = d.scratch_efm_ts[t]
        if s != 0.0:
            _rank1_island(res, d.ten_J[t], vec, s, dofs)
    for i in range(m.nu):
        s = d.scratch_efm_as[i]
        if s != 0.0:
            _rank1_island(res, d.actuator_moment[i], vec, s, dofs)


@kernel
def _rank1_island(res, row, vec, scale, dofs):
    dot = 0.0
    for a in range(dofs.shape[0]):
        v = dofs[a]
        dot += row[v] * vec[v]
    dot *= scale
    for a in range(dofs.shape[0]):
        v = dofs[a]
        res[v] += dot * row[v]


@kernel
def add_rank1_all(m, d, res, vec):
    """res += the metric's rank-1 terms times vec, over every dof."""
    for t in range(m.ntendon):
        s = d.scratch_efm_ts[t]
        if s != 0.0:
            _rank1_apply(res, d.ten_J[t], vec, s)
    for i in range(m.nu):
        s = d.scratch_efm_as[i]
        if s != 0.0:
            _rank1_apply(res, d.actuator_moment[i], vec, s)


@kernel
def add_rank1_hessian(m, d, dofs, L):
    """L[a, c] += sum_k s_k row_k[a] row_k[c] (lower triangle, the island's local numbering)."""
    for t in range(m.ntendon):
        s = d.scratch_efm_ts[t]
        if s != 0.0:
            _rank1_lower(L, d.ten_J[t], s, dofs)
    for i in range(m.nu):
        s = d.scratch_efm_as[i]
        if s != 0.0:
            _rank1_lower(L, d.actuator_moment[i], s, dofs)


@kernel
def _rank1_lower(L, row, scale, dofs):
    nd = dofs.shape[0]
    for a in range(nd):
        x = row[dofs[a]]
        if x != 0.0:
            w = scale * x
            for c in range(a + 1):
                L[a, c] += w * row[dofs[c]]


@kernel
def solve_backbone(m, d, x):
    """x <- qH^-1 x with the backbone factor (the metric's preconditioner)."""
    solve_ld(x, d.scratch_efm_qh, d.scratch_efm[_QHINV], m.M_rownnz, m.M_rowadr, m.M_colind)
