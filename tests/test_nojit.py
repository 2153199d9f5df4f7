"""The pipeline uncompiled (NUMBA_DISABLE_JIT=1) still gives MuJoCo's numbers.

The rest of the suite runs the compiled kernels; this test runs ``tests/nojit_check.py`` in a
subprocess with the JIT off (the setting is read when Numba is imported, so it cannot be
switched inside this process): forward, step and inverse against MuJoCo on the test models,
the bundled models and a contact scene. A few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "nojit_check.py"


def test_forward_step_inverse_match_mujoco_without_the_jit():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    proc = subprocess.run([sys.executable, str(SCRIPT)], check=False, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert lines and lines[-1].endswith("passed, 0 failed"), proc.stdout
    assert int(lines[-1].split()[0]) >= 20, proc.stdout
    assert any("contact:" in line and "ncon=0," not in line for line in lines), proc.stdout
