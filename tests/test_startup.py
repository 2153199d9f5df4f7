"""Start-up hygiene: the way from ``import kinedyn`` to the first ``forward`` result imports none
of the heavy modules it does not need (bench.startup measures the time; this keeps them out).

Each one listed here cost measurable start-up time when it was imported on that way:
scipy.linalg (through Numba's BLAS check) 0.2-0.5 s; the model builder's XML quoting
(urllib, http, ssl) 15-20 ms; IK and batch are imported on first use by design.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from numba import config

NOT_ON_THE_WAY = ("scipy.linalg", "scipy.optimize", "matplotlib", "kinedyn.builder", "kinedyn.batch",
                  "kinedyn.ik", "urllib.request", "ssl")


@pytest.mark.skipif(config.DISABLE_JIT, reason="measures the compiled path")
def test_first_forward_imports_no_heavy_module():
    probe = textwrap.dedent(f"""
        import sys
        import kinedyn as kd

        m = kd.models.load("biped")
        d = kd.Data(m)
        kd.forward(m, d)
        print(",".join(name for name in {NOT_ON_THE_WAY!r} if name in sys.modules))
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    imported = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert imported == "", f"imported on the way to the first forward: {imported}"


def test_lazy_names_resolve():
    import kinedyn as kd
    from kinedyn import Spec
    from kinedyn.builder import Spec as BuilderSpec

    assert Spec is BuilderSpec and kd.Spec is BuilderSpec
    with pytest.raises(AttributeError, match="no attribute 'Spek'"):
        kd.Spek  # noqa: B018
