"""One line on the terminal while kernels compile, so a first run is not a blank minute.

Numba announces every compile as a ``numba:compile`` event (its public event API). A
listener here counts the compiles of kinedyn's own functions. Compiles less than
``idle_gap`` seconds apart make one session; once a session has lasted ``delay`` seconds it
shows one status line on stderr, kept up to date on a terminal (count, elapsed time, the
function being compiled), and closes it with a summary when the compiles stop (or the
process exits). Loads from the on-disk cache are not compiles and print nothing.
``KINEDYN_COMPILE_PROGRESS=0`` silences it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

from numba.core import event


class CompileProgress(event.Listener):
    """Shows the compiles of functions whose module starts with ``prefix`` on ``stream``."""

    def __init__(self, stream=None, prefix: str = "kinedyn", delay: float = 0.5, idle_gap: float = 1.5,
                 tick: float = 0.25):
        self.stream = stream
        self.prefix = prefix
        self.delay = delay
        self.idle_gap = idle_gap
        self.tick = tick
        self.active = False
        self.depth = 0
        self.count = 0
        self.current = ""
        self.started = self.last = 0.0
        self.shown = False
        self._lock = threading.RLock()

    def _out(self):
        return self.stream if self.stream is not None else sys.stderr

    def _tty(self) -> bool:
        return bool(getattr(self._out(), "isatty", lambda: False)())

    def _is_ours(self, ev) -> bool:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        return func is not None and (func.__module__ or "").startswith(self.prefix)

    def on_start(self, ev):
        if not self._is_ours(ev):
            return
        with self._lock:
            now = time.perf_counter()
            if not self.active:
                self.active, self.started, self.count, self.shown = True, now, 0, False
                threading.Thread(target=self._watch, name="kinedyn-compile-progress", daemon=True).start()
            self.depth += 1
            self.count += 1
            self.last = now
            self.current = ev.data["dispatcher"].py_func.__qualname__
            self._update()

    def on_end(self, ev):
        if not self._is_ours(ev):
            return
        with self._lock:
            self.depth -= 1
            self.last = time.perf_counter()

    def _watch(self):
        """While a session is active: refresh the line; end the session once compiles stop."""
        while True:
            time.sleep(self.tick)
            with self._lock:
                if self.depth == 0 and time.perf_counter() - self.last >= self.idle_gap:
                    self.finish()
                    return
                self._update()

    def _update(self):
        elapsed = time.perf_counter() - self.started
        if elapsed < self.delay or (self.shown and not self._tty()):
            return  # not yet; or not a terminal: one line when it starts, one when it ends
        self._write(f"kinedyn: compiling kernels for first use (cached afterwards): {self.count} done, "
                    f"{elapsed:.0f} s [{self.current}]", final=not self._tty())

    def finish(self):
        """End the session: the summary line, if the status line was shown."""
        with self._lock:
            if self.active and self.shown:
                self._write(f"kinedyn: compiled {self.count} kernels in {self.last - self.started:.1f} s "
                            "(cached on disk for the next run)", final=True)
            self.active = False

    def _write(self, text: str, final: bool):
        out = self._out()
        try:
            if self._tty():
                out.write("\r\x1b[K" + text[:200] + ("\n" if final else ""))
            elif final:
                out.write(text + "\n")
            out.flush()
        except (OSError, ValueError):  # a closed or broken stream must not break a compile
            return
        self.shown = True


_INSTALLED: list[CompileProgress] = []


def install() -> None:
    """Show compile progress on stderr (once per process; ``KINEDYN_COMPILE_PROGRESS=0`` turns it off)."""
    if _INSTALLED or os.environ.get("KINEDYN_COMPILE_PROGRESS", "1") == "0":
        return
    _INSTALLED.append(CompileProgress())
    event.register("numba:compile", _INSTALLED[0])
    atexit.register(_INSTALLED[0].finish)
