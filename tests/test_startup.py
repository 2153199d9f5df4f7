"""Start-up hygiene: the way from ``import kinedyn`` to the first ``forward`` result, from a warm
kernel cache, imports none of the heavy modules it does not need and skips Numba's compiler
initialisation (bench.startup measures the time; this keeps them out), and compiling afterwards
still works.

Each one listed here cost measurable start-up time when it was imported on that way:
scipy.linalg (through Numba's BLAS check) 0.2-0.5 s; the model builder's XML quoting
(urllib, http, ssl) 15-20 ms; Numba's compiler initialisation 0.1 s; IK and batch are imported on
first use by design.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from numba import config

NOT_ON_THE_WAY = ("scipy.linalg", "scipy.optimize", "matplotlib", "kinedyn.spec", "kinedyn.tools.batch",
                  "kinedyn.ik", "urllib.request", "ssl")
# imported only by Numba's compiler initialisation, which a warm start skips (_jit.cache._LazyFunctionCache)
NUMBA_COMPILER_INIT = "numba.np.npdatetime"


@pytest.mark.skipif(config.DISABLE_JIT, reason="measures the compiled path")
def test_first_forward_imports_no_heavy_module_and_later_compiles_still_work():
    probe = textwrap.dedent(f"""
        import sys
        import numpy as np
        import kinedyn as kd
        from numba import njit

        m = kd.models.load("biped")
        d = kd.Data(m)
        kd.forward(m, d)
        print(",".join(name for name in {NOT_ON_THE_WAY + (NUMBA_COMPILER_INIT,)!r} if name in sys.modules))

        @njit
        def twice_sum(a):
            return 2.0 * a.sum()

        assert twice_sum(np.arange(4.0)) == 12.0  # a compile after the warm loads
        kd.step(m, d)
        assert np.all(np.isfinite(d.qpos)) and d.time > 0
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for _ in range(2):  # the first run fills the kernel cache if it was empty; the second is a warm start
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stderr
    imported = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert imported == "", f"imported on the way to the first forward: {imported}"


def test_lazy_names_resolve():
    import kinedyn as kd
    from kinedyn import Spec
    from kinedyn.spec import Spec as BuilderSpec

    assert Spec is BuilderSpec and kd.Spec is BuilderSpec
    with pytest.raises(AttributeError, match="no attribute 'Spek'"):
        kd.Spek  # noqa: B018
