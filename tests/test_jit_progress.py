"""Compiling says so on the terminal: one status line while kinedyn's kernels compile, nothing
for other code or for loads from the cache."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from numba import config, njit
from numba.core import event

from kinedyn._jit.progress import CompileProgress

pytestmark = pytest.mark.skipif(config.DISABLE_JIT, reason="nothing compiles without the JIT")

SOURCE = "def sum_of_squares(x):\n    s = 0.0\n    for v in x:\n        s += v * v\n    return s\n"


def _fresh_function(module: str):
    namespace = {"__name__": module}
    exec(SOURCE, namespace)
    return njit(namespace["sum_of_squares"])


@pytest.fixture
def listener():
    stream = io.StringIO()  # not a terminal: one line when it starts, one when it ends
    progress = CompileProgress(stream=stream, delay=0.0, idle_gap=0.05, tick=0.01)
    event.register("numba:compile", progress)
    try:
        yield progress, stream
    finally:
        event.unregister("numba:compile", progress)


def test_compiling_a_kinedyn_kernel_prints_a_start_and_a_summary_line(listener):
    progress, stream = listener
    assert _fresh_function("kinedyn.engine.fake")(np.arange(3.0)) == 5.0
    assert _fresh_function("kinedyn.engine.fake2")(np.arange(2.0)) == 1.0  # same session
    deadline = time.monotonic() + 10
    while progress.active and time.monotonic() < deadline:  # the summary comes once compiles stop
        time.sleep(0.01)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("kinedyn: compiling kernels for first use") and "[sum_of_squares]" in lines[0]
    assert lines[1].startswith("kinedyn: compiled 2 kernels in ")
    assert progress.depth == 0


def test_other_code_compiles_silently(listener):
    _, stream = listener
    assert _fresh_function("someone_else")(np.arange(3.0)) == 5.0
    assert stream.getvalue() == ""


def test_a_short_burst_below_the_delay_prints_nothing():
    stream = io.StringIO()
    progress = CompileProgress(stream=stream, delay=3600.0, idle_gap=0.05, tick=0.01)
    event.register("numba:compile", progress)
    try:
        _fresh_function("kinedyn.engine.fake")(np.arange(3.0))
    finally:
        event.unregister("numba:compile", progress)
    time.sleep(0.2)
    assert stream.getvalue() == "" and progress.count == 1 and not progress.active
