"""A simulation the viewer runs in real time: what MuJoCo's ``simulate`` app does between frames.

No drawing and no viser here (the browser viewer drives it, a test can too):

* :class:`Simulation` -- ``kd.step`` on one Data, in step with the wall clock times a speed
  factor (simulate's ``slowdown``), with play/pause, single step, reset to ``qpos0`` or a
  keyframe, the real-time factor actually achieved, a controller callback ``f(m, d)`` called
  before each step, and a mouse perturbation (:mod:`kinedyn.viewer.perturb`) applied through
  ``xfrc_applied`` each step, as simulate clears and re-applies it.
* :class:`Recording` -- the simulated time, qpos and ctrl of every step since the last reset,
  saved as the trajectory file ``kinedyn view --trajectory`` reads (``.npz``: arrays ``time``,
  ``qpos``, ``ctrl``; ``.csv``: time + named qpos columns, the writer ``kinedyn.tools.trajectory``
  registers) or as a GIF (:func:`kinedyn.viewer.render.animate`).
* :func:`signals` / :class:`History` -- the scalars a live plot can show (qpos, qvel, ctrl,
  sensordata entries, potential and kinetic energy) and their values over the last seconds.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kinedyn.engine.data import reset, reset_data_keyframe
from kinedyn.engine.forward import forward
from kinedyn.engine.integrator import step
from kinedyn.engine.types import EnableBit, JointType
from kinedyn.viewer import perturb as perturb_

RECORD_LIMIT = 200_000  # steps kept by a Recording (the oldest are dropped beyond)
GIF_FPS = 15.0
GIF_MAX_FRAMES = 150
RTF_WINDOW = 1.0        # seconds of wall clock the achieved real-time factor is averaged over


# ---------------------------------------------------------------- recording

def _save_npz(path, t, qpos, m, ctrl=None) -> None:
    arrays = {"time": t, "qpos": qpos}
    if ctrl is not None and ctrl.shape[1]:
        arrays["ctrl"] = ctrl
    np.savez(path, **arrays)


TRAJECTORY_WRITERS: dict[str, Callable] = {".npz": _save_npz}


def register_trajectory_writer(suffix: str, writer: Callable) -> None:
    """Let recordings be saved as ``suffix`` files with ``writer(path, t, qpos, m)`` (the tools
    layer registers its CSV writer: the viewer does not import the layers above it)."""
    TRAJECTORY_WRITERS[suffix.lower()] = writer


class Recording:
    """The time, qpos and ctrl after every step (up to :data:`RECORD_LIMIT`, then the latest)."""

    def __init__(self, m, limit: int = RECORD_LIMIT):
        self.m = m
        self.rows: deque = deque(maxlen=int(limit))

    def clear(self) -> None:
        self.rows.clear()

    def add(self, d) -> None:
        self.rows.append((float(d.time), d.qpos.copy(), d.ctrl.copy()))

    def __len__(self) -> int:
        return len(self.rows)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(t (n,), qpos (n, nq), ctrl (n, nu))``."""
        rows = list(self.rows)
        if not rows:
            return np.zeros(0), np.zeros((0, self.m.nq)), np.zeros((0, self.m.nu))
        return (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                np.array([r[2] for r in rows]).reshape(len(rows), self.m.nu))

    def save(self, path) -> Path:
        """Write the recording as a trajectory file (by suffix: .npz, or .csv with kinedyn.tools)."""
        path = Path(path)
        writer = TRAJECTORY_WRITERS.get(path.suffix.lower())
        if writer is None:
            raise ValueError(f"cannot save a trajectory as '{path.suffix}': use one of "
                             f"{', '.join(sorted(TRAJECTORY_WRITERS))}")
        t, qpos, ctrl = self.arrays()
        if len(t) == 0:
            raise ValueError("nothing recorded yet: play or step the simulation first")
        if writer is _save_npz:
            writer(path, t, qpos, self.m, ctrl)
        else:
            writer(path, t, qpos, self.m)
        return path

    def save_gif(self, path, source=None, fps: float = GIF_FPS, max_frames: int = GIF_MAX_FRAMES) -> Path:
        """A GIF of the recording: ``fps`` frames per simulated second, at most ``max_frames`` (the
        last ones), drawn by :func:`kinedyn.viewer.render.animate`."""
        from kinedyn.viewer import render

        t, qpos, _ = self.arrays()
        if len(t) == 0:
            raise ValueError("nothing recorded yet: play or step the simulation first")
        wanted = np.arange(t[0], t[-1] + 1e-12, 1.0 / fps)[-max_frames:]
        index = np.unique(np.clip(np.searchsorted(t, wanted), 0, len(t) - 1))
        return render.animate(self.m, qpos[index], path, fps=fps, times=t[index], source=source)


# ---------------------------------------------------------------- signals for the live plot

def signals(m) -> dict[str, tuple[str, int]]:
    """The plottable scalars: label -> (Data field, index). qpos and qvel by joint name, ctrl by
    actuator, every sensordata entry by sensor, and the two energies (``d.energy``)."""
    out: dict[str, tuple[str, int]] = {}
    width = {JointType.FREE: (7, 6), JointType.BALL: (4, 3)}
    for j in range(m.njnt):
        name = m.id2name("jnt", j) or f"joint{j}"
        nq, nv = width.get(JointType(int(m.jnt_type[j])), (1, 1))
        for k in range(nq):
            out[f"qpos {name}" + (f"[{k}]" if nq > 1 else "")] = ("qpos", int(m.jnt_qposadr[j]) + k)
        for k in range(nv):
            out[f"qvel {name}" + (f"[{k}]" if nv > 1 else "")] = ("qvel", int(m.jnt_dofadr[j]) + k)
    for i, name in enumerate(m.control_names()):
        out[f"ctrl {name}"] = ("ctrl", i)
    for s in range(m.nsensor):
        name = m.id2name("sensor", s) or f"sensor{s}"
        dim, adr = int(m.sensor_dim[s]), int(m.sensor_adr[s])
        for k in range(dim):
            out[f"sensor {name}" + (f"[{k}]" if dim > 1 else "")] = ("sensordata", adr + k)
    out["energy potential"] = ("energy", 0)
    out["energy kinetic"] = ("energy", 1)
    return out


class History:
    """The chosen signals' values over the last ``window`` seconds of simulated time."""

    def __init__(self, m, window: float = 5.0):
        self.available = signals(m)
        self.window = float(window)
        self.chosen: list[str] = []
        self.t: deque = deque()
        self.values: deque = deque()

    def choose(self, labels) -> None:
        unknown = [x for x in labels if x not in self.available]
        if unknown:
            raise KeyError(f"no signal {unknown[0]!r}; known: {', '.join(list(self.available)[:8])}, ...")
        self.chosen = list(dict.fromkeys(labels))
        self.t.clear()
        self.values.clear()

    def sample(self, d) -> None:
        if not self.chosen:
            return
        if self.t and d.time < self.t[-1]:  # a reset: start over
            self.t.clear()
            self.values.clear()
        self.t.append(float(d.time))
        self.values.append([float(getattr(d, f)[i]) for f, i in (self.available[x] for x in self.chosen)])
        while self.t and self.t[0] < d.time - self.window:
            self.t.popleft()
            self.values.popleft()

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(t (n,), values (n, len(chosen)))``."""
        return np.array(self.t), np.array(self.values).reshape(len(self.t), len(self.chosen))


# ---------------------------------------------------------------- the simulation

class Simulation:
    """``kd.step`` on ``d`` in real time (times ``speed``); thread-safe through :attr:`lock`.

    :meth:`advance` is called by a loop (the viewer's, ~30 times a second): while playing it steps
    until the simulated time has caught up with the wall clock, within a budget of wall time,
    and returns how many steps it took. ``controller(m, d)`` runs before each step; an
    exception in it (or in the step) pauses the simulation and is kept in :attr:`error`.
    """

    def __init__(self, m, d, controller: Callable | None = None, record: bool = True):
        self.m, self.d = m, d
        self.lock = threading.RLock()
        self.controller = controller
        self.playing = False
        self.speed = 1.0
        self.perturb: perturb_.Perturb | None = None
        self.error: BaseException | None = None
        self.recording = Recording(m) if record else None
        self.rtf = 0.0                      # achieved simulated seconds per wall second
        self._anchor: tuple[float, float] | None = None  # (wall, sim) where real time was last synced
        self._rtf_samples: deque = deque()  # (wall, sim time) pairs over RTF_WINDOW
        with self.lock:
            forward(m, d)

    # -- control

    def play(self) -> None:
        with self.lock:
            self.playing = True
            self.error = None
            self._anchor = None
            self._rtf_samples.clear()

    def pause(self) -> None:
        with self.lock:
            self.playing = False
            self.rtf = 0.0

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"the speed factor must be > 0, got {speed}")
        with self.lock:
            self.speed = float(speed)
            self._anchor = None
            self._rtf_samples.clear()

    def reset(self, key: int | str | None = None) -> None:
        """Back to ``qpos0`` (``key`` None) or to a keyframe (mj_resetData / mj_resetDataKeyframe),
        then ``forward`` for the poses; the perturbation is let go and the recording restarts."""
        with self.lock:
            if key is None:
                reset(self.m, self.d)
            else:
                reset_data_keyframe(self.m, self.d, key)
            forward(self.m, self.d)
            self.perturb = None
            self._anchor = None
            self._rtf_samples.clear()
            if self.recording is not None:
                self.recording.clear()

    def enable_energy(self) -> None:
        """Turn on the model's energy flag (simulate's Physics > Energy), so ``d.energy`` is computed."""
        with self.lock:
            self.m.opt.enableflags |= int(EnableBit.ENERGY)

    # -- stepping

    def step_once(self) -> None:
        """One ``kd.step``: the perturbation into xfrc_applied (simulate zeroes it and re-applies),
        the controller, the step, the recording."""
        m, d = self.m, self.d
        with self.lock:
            d.xfrc_applied[:] = 0.0
            if self.perturb is not None:
                perturb_.apply_perturb_force(m, d, self.perturb)
            if self.controller is not None:
                try:
                    self.controller(m, d)
                except Exception as err:  # noqa: BLE001 - the user's code: pause and show it
                    self.error = err
                    self.playing = False
                    return
            try:
                step(m, d)
            except Exception as err:  # noqa: BLE001 - shown on the page; the viewer stays up
                self.error = err
                self.playing = False
                return
            if self.recording is not None:
                self.recording.add(d)

    def advance(self, budget: float = 1 / 30) -> int:
        """While playing: step until ``d.time`` reaches the wall clock's target (``speed`` times the
        wall time since play), for at most ``budget`` seconds of wall time. Falling behind by more
        than a tenth of a second re-anchors the clock (as simulate does when it cannot keep up:
        it never runs fast to catch up). Returns the number of steps taken."""
        if not self.playing:
            return 0
        start = time.perf_counter()
        with self.lock:
            if self._anchor is None:
                self._anchor = (start, float(self.d.time))
            wall0, sim0 = self._anchor
            target = sim0 + self.speed * (start - wall0)
        n = 0
        while self.playing and self.d.time < target and time.perf_counter() - start < budget:
            self.step_once()
            n += 1
        now = time.perf_counter()
        with self.lock:
            lag = (target - self.d.time) / self.speed
            if lag > 0.1:
                self._anchor = (now, float(self.d.time))
            self._rtf_samples.append((now, float(self.d.time)))
            while len(self._rtf_samples) > 2 and self._rtf_samples[0][0] < now - RTF_WINDOW:
                self._rtf_samples.popleft()
            (w0, s0), (w1, s1) = self._rtf_samples[0], self._rtf_samples[-1]
            if w1 - w0 > 0.2 and s1 >= s0:
                self.rtf = (s1 - s0) / (w1 - w0)
        return n

    # -- perturbation

    def grab(self, origin, direction) -> int:
        """Select the body hit by a ray and grab it at the hit point; returns the body (-1: none)."""
        with self.lock:
            body, point = perturb_.select(self.m, self.d, origin, direction)
            self.perturb = None if body < 0 else perturb_.init_perturb(self.m, self.d, body, point)
            return body

    def release(self) -> None:
        with self.lock:
            self.perturb = None
            self.d.xfrc_applied[:] = 0.0


__all__ = ["History", "Recording", "Simulation", "TRAJECTORY_WRITERS", "register_trajectory_writer",
           "signals"]
