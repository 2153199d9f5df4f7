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

Sensors with ``nsample > 0`` keep their buffers in the same array, after the actuators', with
``sensor_dim`` values per sample (``[user, cursor, times (n), values (n x dim)]``, the ring
kernels take the dimension): the sensor stages and mj_advance use them (engine.sensor), reading
through :func:`read_sensor_kernel` (mj_readSensor); :func:`reset_history` starts them too.

The units are compiled only for models with a history buffer (``needed=``).
"""

from __future__ import annotations

import math
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
    """history_insert_dim for a scalar buffer (an actuator's controls)."""
    return history_insert_dim(buf, adr, n, 1, t)


@kernel
def history_insert_dim(buf, adr, n, dim, t):
    """Index in ``buf`` of the ``dim`` value slots for time t in the buffer at ``adr`` with ``n``
    samples of ``dim`` values (mju_historyInsert): the slot of an equal time (within MINVAL); else a
    new newest sample (the oldest is dropped and the cursor advances), a replaced oldest sample when
    t is older than all, or, between two samples, the older ones shifted down to make room."""
    cursor = int(buf[adr + 1])
    times = adr + 2
    values = adr + 2 + n
    i = _find_index(buf, adr, n, cursor, t)
    if i < n:
        p = _physical(cursor, n, i)
        if abs(t - buf[times + p]) < MINVAL:
            return values + p * dim
    if i == 0:
        p = _physical(cursor, n, 0)
        buf[times + p] = t
        return values + p * dim
    if i == n:
        cursor = (cursor + 1) % n
        buf[adr + 1] = cursor
        buf[times + cursor] = t
        return values + cursor * dim
    for j in range(i - 1):
        src = _physical(cursor, n, j + 1)
        dst = _physical(cursor, n, j)
        buf[times + dst] = buf[times + src]
        for k in range(dim):
            buf[values + dst * dim + k] = buf[values + src * dim + k]
    p = _physical(cursor, n, i - 1)
    buf[times + p] = t
    return values + p * dim


@kernel
def history_read(buf, adr, n, t, interp):
    """history_read_at for a scalar buffer (an actuator's controls)."""
    return history_read_at(buf, adr, n, 1, 0, t, interp)


@kernel
def history_read_at(buf, adr, n, dim, k, t, interp):
    """Component k of the value at time t of the buffer at ``adr`` with ``n`` samples of ``dim``
    values (mju_historyRead): the oldest or newest value outside their times (within MINVAL), the
    sample itself at its time, else zero-order hold (the older neighbour), linear interpolation, or
    a cubic Hermite spline whose slopes are the Catmull-Rom differences (0 at the buffer's ends)."""
    cursor = int(buf[adr + 1])
    times = adr + 2
    values = adr + 2 + n + k
    oldest = _physical(cursor, n, 0)
    newest = _physical(cursor, n, n - 1)
    if t <= buf[times + oldest] + MINVAL:
        return buf[values + oldest * dim]
    if t >= buf[times + newest] - MINVAL:
        return buf[values + newest * dim]
    i = _find_index(buf, adr, n, cursor, t)
    hi = _physical(cursor, n, i)
    if abs(t - buf[times + hi]) < MINVAL:
        return buf[values + hi * dim]
    lo = _physical(cursor, n, i - 1)
    if interp == INTERP_ZOH:
        return buf[values + lo * dim]
    t_lo = buf[times + lo]
    t_hi = buf[times + hi]
    v_lo = buf[values + lo * dim]
    v_hi = buf[values + hi * dim]
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
        m_lo = (v_hi - buf[values + prev * dim]) / (t_hi - buf[times + prev])
    m_hi = 0.0
    if i < n - 1:
        nxt = _physical(cursor, n, i + 1)
        m_hi = (buf[values + nxt * dim] - v_lo) / (buf[times + nxt] - t_lo)
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


@kernel
def read_sensor_kernel(m, d, i, time, interp, out, a):
    """mj_readSensor: sensor i's values at ``time - sensor_delay[i]`` from its buffer (interp < 0:
    the sensor's own) into ``out[a:a + sensor_dim[i]]``; the sensor must have a buffer."""
    n = m.sensor_history[i, 0]
    if interp < 0:
        interp = m.sensor_history[i, 1]
    dim = m.sensor_dim[i]
    t = time - m.sensor_delay[i]
    for k in range(dim):
        out[a + k] = history_read_at(d.history, m.sensor_historyadr[i], n, dim, k, t, interp)


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


# how far below a step a sample time may fall and still round up to it (MuJoCo's own tolerance is
# not known; 1e-13 to 1e-6 steps give MuJoCo 4.0's times on 1771 random intervals, see
# tests/test_sensor_history.py)
_GRID_TOL = 1e-10


def _interval_times(n: int, period: float, phase: float, h: float) -> list[float]:
    """The sample times an interval sensor's buffer starts with (mj_resetData, MuJoCo 4.0): the
    continuous times ``t0 - k period`` (``t0`` the phase, -period when it is 0) rounded up to the
    step grid, each at least a step before the next one (a period below the step); with a zero
    phase the newest at -h at the latest, so the first computation is at time 0. Measured against
    MuJoCo 4.0, whose source for it is not public."""
    t0 = phase if phase != 0 else -period
    steps = [0] * n
    for j in range(n - 1, -1, -1):
        k = math.ceil((t0 - (n - 1 - j) * period) / h - _GRID_TOL)
        if j == n - 1 and phase == 0:
            k = min(k, -1)
        if j < n - 1:
            k = min(k, steps[j + 1] - 1)
        steps[j] = k
    return [k * h for k in steps]


def reset_history(m, history: np.ndarray) -> None:
    """The buffers at mj_resetData: actuators' user 0, cursor at the last slot, times ``-n h, ...,
    -h``, values 0; sensors' as below. ``history`` is ``(..., nhistory)`` (a leading batch axis is
    allowed)."""
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
    # sensors: the user slot holds the last computation time (an interval's phase, -period when the
    # phase is 0), the times are those of the non-interval buffers or an interval's
    for i in np.flatnonzero(m.sensor_history[:, 0] > 0):
        n, dim = int(m.sensor_history[i, 0]), int(m.sensor_dim[i])
        adr = int(m.sensor_historyadr[i])
        period, phase = float(m.sensor_interval[i, 0]), float(m.sensor_interval[i, 1])
        if period > 0:
            history[..., adr] = -period if phase == 0 else phase
            history[..., adr + 2:adr + 2 + n] = _interval_times(n, period, phase, h)
        else:
            history[..., adr] = -h
            history[..., adr + 2:adr + 2 + n] = -(n - np.arange(n)) * h
        history[..., adr + 1] = n - 1
        history[..., adr + 2 + n:adr + 2 + n * (1 + dim)] = 0.0


@handle_entry(args="int64, float64, int64, float64[::1]", needed=lambda m: m.nhistory > 0)
def read_ctrl_entry(m, d, i, time, interp, result):
    result[0] = read_ctrl_kernel(m, d, i, time, interp)


_READ_CTRL = FastEntry(read_ctrl_entry)


def _read_args(m, d, fname: str, what: str, i, time, interp) -> tuple:
    """read_ctrl's and read_sensor's arguments checked (``what``: actuator or sensor, counted by
    m.n<what>): (index, time, interp)."""
    check_model_data(m, d, fname)
    count = getattr(m, f"n{what}")
    i = operator.index(i)
    if not 0 <= i < count:
        raise IndexError(f"{what} {i} out of range: n{what} = {count}")
    time = real_number("time", time)
    interp = operator.index(interp)
    if not -1 <= interp <= INTERP_CUBIC:
        raise ValueError(f"interp must be -1 (the {what}'s), 0 (zoh), 1 (linear) or 2 (cubic), got {interp}")
    return i, time, interp


def read_ctrl(m, d, i: int, time: float, interp: int = -1) -> float:
    """Actuator ``i``'s control at ``time - actuator_delay[i]`` from its history buffer
    (mj_readCtrl): what the actuation stage reads at ``time`` for a delayed actuator. ``interp``:
    0 zero-order hold, 1 linear, 2 cubic, -1 the actuator's own (``actuator_history[i, 1]``).
    An actuator without a buffer returns its control ``d.ctrl[actuator_ctrladr[i]]``."""
    i, time, interp = _read_args(m, d, "read_ctrl", "actuator", i, time, interp)
    if m.actuator_history[i, 0] == 0:
        if m.actuator_ctrlnum[i] == 0:
            return 0.0
        return float(d.ctrl[m.actuator_ctrladr[i]])
    result = np.zeros(1)
    _READ_CTRL.call(m._ptr, d._ptr, i, time, interp, result)
    return float(result[0])


def has_sensor_history(m) -> bool:
    """Whether a sensor of the model has a history buffer (``needed`` of the sensor history units)."""
    return bool((m.sensor_history[:, 0] > 0).any())


@handle_entry(args="int64, float64, int64, float64[::1]", needed=has_sensor_history)
def read_sensor_entry(m, d, i, time, interp, result):
    read_sensor_kernel(m, d, i, time, interp, result, 0)


_READ_SENSOR = FastEntry(read_sensor_entry)


def read_sensor(m, d, i: int, time: float, interp: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """Sensor ``i``'s values at ``time - sensor_delay[i]`` from its history buffer (mj_readSensor):
    what ``sensordata`` reads at ``time`` for a delayed sensor. ``interp``: 0 zero-order hold,
    1 linear, 2 cubic, -1 the sensor's own (``sensor_history[i, 1]``). A sensor without a buffer
    gives its ``sensordata``. Returns ``out`` (``sensor_dim[i]`` values), a new array if None."""
    i, time, interp = _read_args(m, d, "read_sensor", "sensor", i, time, interp)
    dim = int(m.sensor_dim[i])
    if out is None:
        out = np.empty(dim)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (dim,)
              and out.flags.c_contiguous):
        raise ValueError(f"out must be a contiguous float64 array of shape ({dim},)")
    if m.sensor_history[i, 0] == 0:
        adr = int(m.sensor_adr[i])
        out[:] = d.sensordata[adr:adr + dim]
    else:
        _READ_SENSOR.call(m._ptr, d._ptr, i, time, interp, out)
    return out
