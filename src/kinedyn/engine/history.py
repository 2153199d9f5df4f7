"""Control history buffers and actuator delays (MuJoCo 4.0's ``nsample``, ``interp``, ``delay``).

An actuator with ``nsample > 0`` keeps the last ``nsample`` controls it was stepped with, with
their times, in ``Data.history`` (MuJoCo's ``mjData.history``, part of the physics state). Its
block at ``actuator_historyadr`` is laid out as MuJoCo's (engine_util_misc.c, "history
buffers"): ``[user, cursor, times (n), values (n)]``, a ring whose ``cursor`` is the physical
index of the newest sample; logical index 0 is the oldest, ``n - 1`` the newest.

* ``step`` inserts ``ctrl`` with the time before the step, first thing when it advances the
  state (mj_advance), under every integrator (:func:`advance_history`).
* With ``delay != 0`` the actuation stage reads the control at ``time - delay`` from the buffer
  instead of ``ctrl`` (mj_fwdActuation through mj_readCtrl; :func:`delayed_ctrl`): zero-order
  hold, linear, or a cubic Hermite spline with Catmull-Rom slopes (``interp``); before the oldest
  sample the oldest value, after the newest the newest.
* ``reset`` (mj_resetData) sets the times to ``-n h, ..., -h`` and the values to zero
  (:func:`reset_history`).

The units are compiled only for models with a history buffer (``needed=``).
"""

from __future__ import annotations

import operator

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data, real_number
from kinedyn.engine.types import DSBL_CLAMPCTRL, MINVAL

# interp: actuator_history[:, 1] (MuJoCo's mj_readCtrl / mju_historyRead argument)
INTERP_ZOH, INTERP_LINEAR, INTERP_CUBIC = 0, 1, 2


@kernel(inline="always")
def _physical(cursor, n, logical):
    """Physical slot of logical index ``logical`` (0 the oldest, n - 1 the newest)."""
    return (cursor + 1 + logical) % n


@kernel
def _find_index(buf, adr, n, cursor, t):
    """Logical i with times[i - 1] < t <= times[i]: 0 if t is at or before the oldest time, n if
    after the newest (a binary search over the ring, as historyFindIndex)."""
    times = adr + 2
    if t <= buf[times + _physical(cursor, n, 0)]:
        return 0
    if t > buf[times + _physical(cursor, n, n - 1)]:
        return n
    lo = 0
    hi = n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if buf[times + _physical(cursor, n, mid)] < t:
            lo = mid
        else:
            hi = mid
    return hi


@kernel
def history_insert(buf, adr, n, t):
    """Index in ``buf`` of the value slot for time t in the scalar buffer at ``adr`` with ``n``
    samples (mju_historyInsert, dim 1): the slot of an equal time (within MINVAL); else a new
    newest sample (the oldest is dropped and the cursor advances), a replaced oldest sample when t
    is older than all, or, between two samples, the older ones shifted down to make room."""
    cursor = int(buf[adr + 1])
    times = adr + 2
    values = adr + 2 + n
    i = _find_index(buf, adr, n, cursor, t)
    if i < n:
        p = _physical(cursor, n, i)
        if abs(t - buf[times + p]) < MINVAL:
            return values + p
    if i == 0:
        p = _physical(cursor, n, 0)
        buf[times + p] = t
        return values + p
    if i == n:
        cursor = (cursor + 1) % n
        buf[adr + 1] = cursor
        buf[times + cursor] = t
        return values + cursor
    for j in range(i - 1):
        src = _physical(cursor, n, j + 1)
        dst = _physical(cursor, n, j)
        buf[times + dst] = buf[times + src]
        buf[values + dst] = buf[values + src]
    p = _physical(cursor, n, i - 1)
    buf[times + p] = t
    return values + p


@kernel
def history_read(buf, adr, n, t, interp):
    """The value at time t of the scalar buffer at ``adr`` with ``n`` samples (mju_historyRead,
    dim 1): the oldest or newest value outside their times (within MINVAL), the sample itself at
    its time, else zero-order hold (the older neighbour), linear interpolation, or a cubic Hermite
    spline whose slopes are the Catmull-Rom differences (0 at the buffer's ends)."""
    cursor = int(buf[adr + 1])
    times = adr + 2
    values = adr + 2 + n
    oldest = _physical(cursor, n, 0)
    newest = _physical(cursor, n, n - 1)
    if t <= buf[times + oldest] + MINVAL:
        return buf[values + oldest]
    if t >= buf[times + newest] - MINVAL:
        return buf[values + newest]
    i = _find_index(buf, adr, n, cursor, t)
    hi = _physical(cursor, n, i)
    if abs(t - buf[times + hi]) < MINVAL:
        return buf[values + hi]
    lo = _physical(cursor, n, i - 1)
    if interp == INTERP_ZOH:
        return buf[values + lo]
    t_lo = buf[times + lo]
    t_hi = buf[times + hi]
    v_lo = buf[values + lo]
    v_hi = buf[values + hi]
    dt = t_hi - t_lo
    alpha = (t - t_lo) / dt
    if interp == INTERP_LINEAR:
        return v_lo + alpha * (v_hi - v_lo)
    # cubic Hermite basis
    alpha2 = alpha * alpha
    alpha3 = alpha2 * alpha
    h00 = 2 * alpha3 - 3 * alpha2 + 1
    h10 = alpha3 - 2 * alpha2 + alpha
    h01 = -2 * alpha3 + 3 * alpha2
    h11 = alpha3 - alpha2
    m_lo = 0.0
    if i > 1:
        prev = _physical(cursor, n, i - 2)
        m_lo = (v_hi - buf[values + prev]) / (t_hi - buf[times + prev])
    m_hi = 0.0
    if i < n - 1:
        nxt = _physical(cursor, n, i + 1)
        m_hi = (buf[values + nxt] - v_lo) / (buf[times + nxt] - t_lo)
    return h00 * v_lo + h10 * dt * m_lo + h01 * v_hi + h11 * dt * m_hi


@kernel
def clamped_ctrl(actuator_ctrllimited, actuator_ctrlrange, disableflags, ctrl, c):
    """Control ctrl[c], clamped to its ctrlrange when it is ctrllimited and clampctrl is enabled
    (ctrlrange and ctrllimited have a row per control, as MuJoCo 4.0's)."""
    u = ctrl[c]
    if actuator_ctrllimited[c] and not disableflags & DSBL_CLAMPCTRL:
        u = min(max(u, actuator_ctrlrange[c, 0]), actuator_ctrlrange[c, 1])
    return u


@kernel
def first_ctrl(actuator_ctrladr, actuator_ctrlnum, ctrl, i):
    """The first control of actuator i's block, the one a single-input actuator reads; 0 for an
    actuator without controls (dcmotor input="none", which reads none)."""
    return ctrl[actuator_ctrladr[i]] if actuator_ctrlnum[i] > 0 else 0.0


@kernel
def read_ctrl_kernel(m, d, i, time, interp):
    """mj_readCtrl: actuator i's control at ``time - actuator_delay[i]`` from its buffer (interp < 0:
    the actuator's own), or ctrl itself without a buffer."""
    n = m.actuator_history[i, 0]
    if n == 0:
        return d.ctrl[m.actuator_ctrladr[i]]
    if interp < 0:
        interp = m.actuator_history[i, 1]
    return history_read(d.history, m.actuator_historyadr[i], n, time - m.actuator_delay[i], interp)


# units of their own: compiled only for models with a history buffer
@handle_entry(needed=lambda m: m.nhistory > 0)
def delayed_ctrl(m, d):
    """The controls the actuators read (mj_fwdActuation): ctrl, or for a delayed actuator
    (``actuator_delay != 0``) the buffer's value at ``time - delay``, into scratch_ctrl_delayed."""
    out = d.scratch_ctrl_delayed
    for c in range(m.nu):
        out[c] = d.ctrl[c]
    # a delayed actuator has one control (the compiler refuses buffers on several)
    for i in range(m.nactuator):
        if m.actuator_delay[i] != 0.0:
            out[m.actuator_ctrladr[i]] = read_ctrl_kernel(m, d, i, d.time[0], m.actuator_history[i, 1])


@handle_entry(needed=lambda m: m.nhistory > 0)
def advance_history(m, d):
    """The start of mj_advance: each buffer takes ctrl at the current (pre-step) time."""
    t = d.time[0]
    for i in range(m.nactuator):
        n = m.actuator_history[i, 0]
        if n > 0:
            slot = history_insert(d.history, m.actuator_historyadr[i], n, t)
            d.history[slot] = d.ctrl[m.actuator_ctrladr[i]]


def reset_history(m, history: np.ndarray) -> None:
    """The buffers at mj_resetData: user 0, cursor at the last slot, times ``-n h, ..., -h``,
    values 0. ``history`` is ``(..., nhistory)`` (a leading batch axis is allowed)."""
    if not m.nhistory:
        return
    h = m.opt.timestep
    for i in np.flatnonzero(m.actuator_history[:, 0] > 0):
        n = int(m.actuator_history[i, 0])
        adr = int(m.actuator_historyadr[i])
        history[..., adr] = 0.0
        history[..., adr + 1] = n - 1
        history[..., adr + 2:adr + 2 + n] = -(n - np.arange(n)) * h
        history[..., adr + 2 + n:adr + 2 + 2 * n] = 0.0


@handle_entry(args="int64, float64, int64, float64[::1]", needed=lambda m: m.nhistory > 0)
def read_ctrl_entry(m, d, i, time, interp, result):
    result[0] = read_ctrl_kernel(m, d, i, time, interp)


_READ_CTRL = FastEntry(read_ctrl_entry)


def read_ctrl(m, d, i: int, time: float, interp: int = -1) -> float:
    """Actuator ``i``'s control at ``time - actuator_delay[i]`` from its history buffer
    (mj_readCtrl): what the actuation stage reads at ``time`` for a delayed actuator. ``interp``:
    0 zero-order hold, 1 linear, 2 cubic, -1 the actuator's own (``actuator_history[i, 1]``).
    An actuator without a buffer returns its control ``d.ctrl[actuator_ctrladr[i]]``."""
    check_model_data(m, d, "read_ctrl")
    i = operator.index(i)
    if not 0 <= i < m.nactuator:
        raise IndexError(f"actuator {i} out of range: nactuator = {m.nactuator}")
    time = real_number("time", time)
    interp = operator.index(interp)
    if not -1 <= interp <= INTERP_CUBIC:
        raise ValueError(f"interp must be -1 (the actuator's), 0 (zoh), 1 (linear) or 2 (cubic), "
                         f"got {interp}")
    if m.actuator_history[i, 0] == 0:
        if m.actuator_ctrlnum[i] == 0:
            return 0.0
        return float(d.ctrl[m.actuator_ctrladr[i]])
    result = np.zeros(1)
    _READ_CTRL.call(m._ptr, d._ptr, i, time, interp, result)
    return float(result[0])
