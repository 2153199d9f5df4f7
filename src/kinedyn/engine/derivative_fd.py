"""Finite-difference derivatives of a step and of inverse dynamics (engine_derivative_fd.c).

The kernels of ``kd.transition_fd`` (mjd_transitionFD / mjd_stepFD) and ``kd.inverse_fd``
(mjd_inverseFD). MuJoCo runs its perturbations one after the other on the caller's mjData;
here each *worker* runs a share of them on a work Data of its own, so the workers can run in
parallel (``kinedyn.tools.derivatives`` starts them, one per thread).

A worker copies the caller's inputs into its work Data, runs the unperturbed step (or inverse)
once, then takes columns from a shared counter until none is left (so a worker that is
descheduled holds up no other), in MuJoCo's order: controls and activations skipping the
position and velocity stages, velocities skipping the position stage, positions last with
nothing skipped. Skipping a stage reuses the quantities the previous evaluation left in the
work Data, which are those of the unperturbed state because every earlier evaluation of the
worker had the same qpos (and, for the controls, the same qvel): the order is what makes
MuJoCo's mj_stepSkip valid. A worker tracks which stages still hold the unperturbed state and
skips no more than those, so a skip never changes a number. Before each perturbed
evaluation the state, ctrl and the warmstart acceleration are restored (MuJoCo's mj_setState
with mjSTATE_FULLPHYSICS | mjSTATE_CTRL | mjSTATE_WARMSTART); every other input is never
changed by a step.

MuJoCo's mj_stepSkip can also reuse the factorised implicit matrix of the previous step
(``skipfactor``). Checked against MuJoCo 4.0 (tests/test_derivatives_fd.py), its numbers are those
of the matrix made again wherever that matrix depends on the perturbed quantity (a polynomial
damper's on qvel under Euler, a velocity-dependent gain's on act under implicitfast). So here
only Euler's control and activation steps reuse it, where it cannot differ; every other step
makes it again.
"""

from __future__ import annotations

from kinedyn._jit import cached_njit, entry
from kinedyn._jit.parallel import take_next
from kinedyn.engine.actuation import fwd_actuation_entry
from kinedyn.engine.constraint import discrete_rows_supported
from kinedyn.engine.forward import fwd_acceleration_entry, fwd_position_entry, fwd_velocity_entry
from kinedyn.engine.integrator import (
    STATUS_DISCRETE_ROWS,
    STATUS_OK,
    _discrete,
    _fwdinv_status,
    _implicit,
    _implicitfast,
    _qacc_status,
    _state_status,
    euler_skip,
)
from kinedyn.engine.inverse import inverse_acceleration, swap_discrete_qacc
from kinedyn.engine.sensor import (
    energy_pos_entry,
    energy_vel_entry,
    sensor_acc_entry,
    sensor_pos_entry,
    sensor_pos_inverse_entry,
    sensor_vel_entry,
)
from kinedyn.engine.solver import fwd_constraint_entry
from kinedyn.engine.support import differentiate_pos_kernel, integrate_pos_kernel
from kinedyn.engine.types import (
    COUNT_NEFC,
    ENBL_FWDINV,
    INT_DISCRETE,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    OPT_ENABLEFLAGS,
    OPT_INTEGRATOR,
)

# mjtStage as mj_forwardSkip reads it: the stages below the given one are skipped
SKIP_NONE, SKIP_POS, SKIP_VEL = 0, 1, 2

# what a column of the finite differences perturbs, in MuJoCo's order of evaluation
COL_CTRL, COL_ACT, COL_VEL, COL_POS = 0, 1, 2, 3
# kd.inverse_fd's columns: qacc, qvel, qpos (mjd_inverseFD's order)
COL_ACC = 4


@entry
def _position_velocity(m, d, skipstage, sensors, inverse):
    """The position and velocity stages of mj_forwardSkip / mj_inverseSkip (``inverse``: the
    inverse's position sensors) not below ``skipstage``, each with its sensors, or with only the
    energy when ``sensors`` is False (MuJoCo's skipsensor)."""
    if skipstage < SKIP_POS:
        fwd_position_entry(m, d)
        if not sensors:
            energy_pos_entry(m, d)
        elif inverse:
            sensor_pos_inverse_entry(m, d)
        else:
            sensor_pos_entry(m, d)
    if skipstage < SKIP_VEL:
        fwd_velocity_entry(m, d)
        if sensors:
            sensor_vel_entry(m, d)
        else:
            energy_vel_entry(m, d)


@entry
def forward_skip(m, d, skipstage, sensors):
    """mj_forwardSkip: forward without the stages below ``skipstage``; ``sensors`` False skips
    the sensors (the energy is still computed), as MuJoCo's skipsensor."""
    _position_velocity(m, d, skipstage, sensors, False)
    fwd_actuation_entry(m, d)
    fwd_acceleration_entry(m, d)
    fwd_constraint_entry(m, d)
    if sensors:
        sensor_acc_entry(m, d)


@entry
def step_skip(m, d, skipstage, sensors):
    """mj_stepSkip for Euler, implicit, implicitfast and discrete (the callers refuse other integrators): the
    checks of mj_step, forward_skip, then the integrator. A STATUS_* code of engine.integrator."""
    status = _state_status(True, d.qpos, d.qvel)
    if status != STATUS_OK:
        return status
    forward_skip(m, d, skipstage, sensors)
    if m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE and d.efc_counts[COUNT_NEFC] > 0 \
            and not discrete_rows_supported(m):
        return STATUS_DISCRETE_ROWS  # their solve in the metric is not reproduced (as kd.step says)
    status = _qacc_status(True, d.qacc)
    if status == STATUS_OK:
        status = _fwdinv_status(m, d)
    if status != STATUS_OK:
        return status
    if m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST:
        # M - h D is made again every step: D depends on ctrl and act (velocity-dependent gains),
        # and MuJoCo 4.0's numbers are those of the matrix made again
        _implicitfast(m, d)
    elif m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICIT:
        _implicit(m, d)  # its LU factor depends on qvel, ctrl and act too: made again every step
    elif m.opt_flags[OPT_INTEGRATOR] == INT_DISCRETE:
        _discrete(m, d)  # qacc is the step map, solved by the forward pass in the metric
    else:
        # M + h diag(B) depends on qpos and qvel only: the controls' and activations' steps reuse
        # the factor of the worker's previous step, the unperturbed one (no number changes); with
        # fwdinv, the inverse run by the comparison may have overwritten it (inverse.discrete_acc)
        euler_skip(m, d, skipstage >= SKIP_VEL and not m.opt_flags[OPT_ENABLEFLAGS] & ENBL_FWDINV)
    return STATUS_OK


@entry
def inverse_skip(m, d, skipstage, sensors):
    """mj_inverseSkip: inverse dynamics without the stages below ``skipstage``."""
    _position_velocity(m, d, skipstage, sensors, True)
    inverse_acceleration(m, d)
    if sensors:
        swap_discrete_qacc(m, d)
        sensor_acc_entry(m, d)
        swap_discrete_qacc(m, d)


@cached_njit
def _restore(src, d):
    """What a step changes among its inputs, back to the caller's values (mj_setState)."""
    d.time[0] = src.time[0]
    d.qpos[:] = src.qpos
    d.qvel[:] = src.qvel
    d.act[:] = src.act
    d.plastic[:] = src.plastic  # springs' plasticity: a step moves it (mjSTATE_PLASTIC, in FULLPHYSICS)
    d.ctrl[:] = src.ctrl
    d.qacc_warmstart[:] = src.qacc_warmstart


@cached_njit
def copy_inputs(src, d):
    """Everything a step reads from the user into work Data d: the state, ctrl, the warmstart,
    qacc (inverse's input), the applied forces, the mocap poses, the active equalities and the
    history buffers."""
    _restore(src, d)
    d.qacc[:] = src.qacc
    d.qfrc_applied[:] = src.qfrc_applied
    d.xfrc_applied[:, :] = src.xfrc_applied
    d.mocap_pos[:, :] = src.mocap_pos
    d.mocap_quat[:, :] = src.mocap_quat
    d.eq_active[:] = src.eq_active
    # the history buffers: the inverse's delayed controls and history sensors read them
    d.history[:] = src.history


@cached_njit
def _nudge(m, d, col, i, eps, dpos):
    """Perturb input ``i`` of kind ``col`` by eps (a qpos column on the tangent space)."""
    if col == COL_CTRL:
        d.ctrl[i] += eps
    elif col == COL_ACT:
        d.act[i] += eps
    elif col == COL_VEL:
        d.qvel[i] += eps
    elif col == COL_ACC:
        d.qacc[i] += eps
    else:
        # mj_integratePos with the unit vector of dof i
        dpos[:] = 0.0
        dpos[i] = 1.0
        integrate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, d.qpos, dpos, eps,
                             d.scratch_quat, d.scratch_vec)


@cached_njit
def _get_state(d, state, sensor, sensors):
    """[qpos, qvel, act] and the sensors after a step (mj_getState with mjSTATE_PHYSICS)."""
    nq, nv = d.qpos.shape[0], d.qvel.shape[0]
    state[:nq] = d.qpos
    state[nq:nq + nv] = d.qvel
    state[nq + nv:] = d.act
    if sensors:
        sensor[:] = d.sensordata


@cached_njit
def _diff(dx, x1, x2, h):
    """dx = (x2 - x1) / h, as MuJoCo's diff (a product with 1/h)."""
    inv_h = 1.0 / h
    for k in range(dx.shape[0]):
        dx[k] = inv_h * (x2[k] - x1[k])


@cached_njit
def _state_diff(m, d, ds, s1, s2, h):
    """ds = (s2 (-) s1) / h on the tangent space: qpos by mj_differentiatePos (stateDiff)."""
    nq, nv = m.nq, m.nv
    if nq == nv:
        _diff(ds, s1, s2, h)
    else:
        differentiate_pos_kernel(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, ds[:nv], h, s1[:nq], s2[:nq],
                                 d.scratch_quat, d.scratch_vec)
        _diff(ds[nv:], s1[nq:], s2[nq:], h)


@cached_njit
def _in_range(x1, x2, lo, hi):
    return lo <= x1 <= hi and lo <= x2 <= hi


@cached_njit
def _column_skip(col, valid):
    """The stages a column's evaluation may skip: MuJoCo's choice (controls, activations and
    accelerations: position and velocity; velocities: position; positions: none), limited to
    the stages the worker's Data still holds at the unperturbed state (``valid``)."""
    if col == COL_POS:
        return SKIP_NONE
    if col == COL_VEL:
        return min(SKIP_POS, valid)
    return min(SKIP_VEL, valid)


@cached_njit
def _still_valid(col, valid):
    """The stages still at the unperturbed state after a column of kind ``col``."""
    if col == COL_POS:
        return SKIP_NONE
    if col == COL_VEL:
        return min(SKIP_POS, valid)
    return valid


@cached_njit
def transition_worker(m, d, src, queue, eps, centered, kind, index, at, bt, ct, dt, buf, sbuf, dpos):
    """One worker of mjd_stepFD: the unperturbed step, then the columns (kind, index) it takes from
    ``queue`` (take_next: in increasing order, so it sees them in MuJoCo's order), writing their
    rows of the transposed A, B, C, D (mjd_stepFD's layout). ``buf`` (3, nq + nv + na) and
    ``sbuf`` (3, nsensordata): next states and sensors, unperturbed, plus and minus.
    Returns a STATUS_* code (STATUS_OK, or the first bad step's)."""
    nv = m.nv
    ncol = kind.shape[0]
    if queue[0] >= ncol:
        # a thread that starts after the others took every column (descheduled under load) leaves
        # at once rather than holding up the call with an unperturbed step of its own
        return STATUS_OK
    sensors = sbuf.shape[1] > 0
    copy_inputs(src, d)
    status = step_skip(m, d, SKIP_NONE, sensors)
    if status != STATUS_OK:
        return status
    _get_state(d, buf[0], sbuf[0], sensors)
    valid = SKIP_VEL  # the step left the position and velocity stages at the unperturbed state
    k = take_next(queue)
    while k < ncol:
        col, i = kind[k], index[k]
        plus, minus = True, centered
        if col == COL_CTRL and m.actuator_ctrllimited[i]:
            # one-sided at the ends of ctrlrange (mjd_stepFD's nudge_fwd, nudge_back)
            u, lo, hi = src.ctrl[i], m.actuator_ctrlrange[i, 0], m.actuator_ctrlrange[i, 1]
            plus = _in_range(u, u + eps, lo, hi)
            minus = (centered or not plus) and _in_range(u - eps, u, lo, hi)
        skip = _column_skip(col, valid)
        for side in range(2):
            if (side == 0 and plus) or (side == 1 and minus):
                _restore(src, d)
                _nudge(m, d, col, i, eps if side == 0 else -eps, dpos)
                status = step_skip(m, d, skip, sensors)
                if status != STATUS_OK:
                    return status
                _get_state(d, buf[1 + side], sbuf[1 + side], sensors)
        valid = _still_valid(col, valid)
        if col == COL_CTRL:
            row, srow = bt[i], dt[i]
        else:
            j = i + (0 if col == COL_POS else nv if col == COL_VEL else 2 * nv)
            row, srow = at[j], ct[j]
        # clampedStateDiff / clampedDiff: forward, backward, centred, or zeros if neither side fits
        if plus and minus:
            _state_diff(m, d, row, buf[2], buf[1], 2.0 * eps)
            _diff(srow, sbuf[2], sbuf[1], 2.0 * eps)
        elif plus:
            _state_diff(m, d, row, buf[0], buf[1], eps)
            _diff(srow, sbuf[0], sbuf[1], eps)
        elif minus:
            _state_diff(m, d, row, buf[2], buf[0], eps)
            _diff(srow, sbuf[2], sbuf[0], eps)
        else:
            row[:] = 0.0
            srow[:] = 0.0
        k = take_next(queue)
    return STATUS_OK


@cached_njit
def _inverse_out(m, d, actuation, force, sensor, sensors):
    """qfrc_inverse (minus qfrc_actuator with ``actuation``: mjd_inverseFD's inverseSkip) and the
    sensors of the inverse just run."""
    force[:] = d.qfrc_inverse
    if actuation:
        fwd_actuation_entry(m, d)
        for v in range(force.shape[0]):
            force[v] -= d.qfrc_actuator[v]
    if sensors:
        sensor[:] = d.sensordata


@cached_njit
def inverse_worker(m, d, src, queue, eps, actuation, kind, index,
                   dfdq, dfdv, dfda, dsdq, dsdv, dsda, dmdq, buf, sbuf, mass, dpos):
    """One worker of mjd_inverseFD (forward differences): the unperturbed inverse, then the columns
    it takes from ``queue``, writing their rows of the transposed outputs. ``buf`` (2, nv),
    ``sbuf`` (2, nsensordata): forces and sensors, unperturbed and nudged; ``mass`` (nC,): the
    unperturbed M."""
    ncol = kind.shape[0]
    if queue[0] >= ncol:  # every column taken already (see transition_worker)
        return
    sensors = sbuf.shape[1] > 0
    copy_inputs(src, d)
    inverse_skip(m, d, SKIP_NONE, sensors)
    _inverse_out(m, d, actuation, buf[0], sbuf[0], sensors)
    mass[:] = d.M
    valid = SKIP_VEL
    k = take_next(queue)
    while k < ncol:
        col, i = kind[k], index[k]
        # the nudged input is put back after each column (the other inputs never change)
        d.qpos[:] = src.qpos
        d.qvel[:] = src.qvel
        d.qacc[:] = src.qacc
        _nudge(m, d, col, i, eps, dpos)
        inverse_skip(m, d, _column_skip(col, valid), sensors)
        valid = _still_valid(col, valid)
        if col == COL_ACC:
            frow, srow = dfda[i], dsda[i]
        elif col == COL_VEL:
            frow, srow = dfdv[i], dsdv[i]
        else:
            frow, srow = dfdq[i], dsdq[i]
            _diff(dmdq[i], mass, d.M, eps)
        _inverse_out(m, d, actuation, buf[1], sbuf[1], sensors)
        _diff(frow, buf[0], buf[1], eps)
        _diff(srow, sbuf[0], sbuf[1], eps)
        k = take_next(queue)
