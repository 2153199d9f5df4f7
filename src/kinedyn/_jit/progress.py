"""One line on the terminal while kernels compile, so a first run is not a blank minute.

Numba announces every compile as a ``numba:compile`` event (its public event API). A
listener here counts the compiles of kinedyn's own functions; once a burst of them has
lasted half a second it shows one status line on stderr, kept up to date on a terminal
(count, elapsed time, the function being compiled), and closes it with a summary. Loads
from the on-disk cache are not compiles and print nothing. ``KINEDYN_COMPILE_PROGRESS=0``
silences it.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from numba.core import event

_DELAY = 0.5  # seconds of compiling before the line appears
_TICK = 0.5  # seconds between refreshes of the line on a terminal


class CompileProgress(event.Listener):
    """Shows the compiles of functions whose module starts with ``prefix`` on ``stream``."""

    def __init__(self, stream=None, prefix: str = "kinedyn", delay: float = _DELAY):
        self.stream = stream
        self.prefix = prefix
        self.delay = delay
        self.depth = 0
        self.count = 0
        self.current = ""
        self.started = 0.0
        self.shown = False
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def _out(self):
        return self.stream if self.stream is not None else sys.stderr

    def _is_ours(self, ev) -> bool:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        return func is not None and (func.__module__ or "").startswith(self.prefix)

    def on_start(self, ev):
        if not self._is_ours(ev):
            return
        with self._lock:
            if self.depth == 0:
                self.started, self.count, self.shown = time.perf_counter(), 0, False
                self._start_ticker()
            self.depth += 1
            self.count += 1
            self.current = ev.data["dispatcher"].py_func.__qualname__
            self._refresh()

    def on_end(self, ev):
        if not self._is_ours(ev):
            return
        with self._lock:
            self.depth -= 1
            if self.depth == 0 and self.shown:
                self._write(f"kinedyn: compiled {self.count} kernels in "
                            f"{time.perf_counter() - self.started:.1f} s (cached on disk for the next run)",
                            final=True)

    def _start_ticker(self):
        if self._ticker is not None and self._ticker.is_alive():
            return
        if not getattr(self._out(), "isatty", lambda: False)():
            return

        def tick():
            while True:
                time.sleep(_TICK)
                with self._lock:
                    if self.depth == 0:
                        self._ticker = None
                        return
                    self._refresh()

        self._ticker = threading.Thread(target=tick, name="kinedyn-compile-progress", daemon=True)
        self._ticker.start()

    def _refresh(self):
        elapsed = time.perf_counter() - self.started
        if elapsed < self.delay:
            return
        tty = getattr(self._out(), "isatty", lambda: False)()
        if self.shown and not tty:
            return  # not a terminal: one line when it starts, one when it ends
        self._write(f"kinedyn: compiling kernels for first use (cached afterwards): {self.count} done, "
                    f"{elapsed:.0f} s [{self.current}]", final=not tty)

    def _write(self, text: str, final: bool):
        out = self._out()
        tty = getattr(out, "isatty", lambda: False)()
        try:
            if tty:
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
