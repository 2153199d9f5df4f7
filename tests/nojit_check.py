"""kinedyn as plain Python (NUMBA_DISABLE_JIT=1) against MuJoCo 4.0: run by tests/test_nojit.py.

The README promises that with ``NUMBA_DISABLE_JIT=1`` the same code runs as ordinary Python
under a debugger. This script checks that the uncompiled code gives MuJoCo's numbers on the
test models, the bundled ones and a small contact scene: kd.forward (every field at the
oracle's bar), ten kd.step (qpos, qvel, act) and kd.inverse (qfrc_inverse), each against
MuJoCo's from the same state. The contact scene (a box on a plane, a hinge at its limit), the
biped and adhesion_grippers have contacts, so collision detection, the constraint rows and the
solver run uncompiled too. It prints one line per model and a closing ``N passed, 0 failed``;
it stops at the first mismatch, and refuses to run with the JIT on (it would not test what it
says).

    NUMBA_DISABLE_JIT=1 python tests/nojit_check.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from numba import config  # noqa: E402
from oracle import MODELS_DIR, assert_close, assert_fields, load_pair, set_same_state  # noqa: E402

import kinedyn as kd  # noqa: E402

# a free box dropped on a plane, and a hinge pressed into its limit by gravity
CONTACT = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="1 1 .1"/>
    <body pos="0 0 .06" euler="5 10 0">
      <freejoint/><geom type="box" size=".05 .04 .03"/>
    </body>
    <body pos=".4 0 .5">
      <joint type="hinge" axis="0 1 0" range="-0.2 0.2"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>
    </body>
  </worldbody>
</mujoco>
"""

# every test model of tests/models (actuators, tendons, muscles, free bodies, adhesion), the bundled
# models (the biped on its floor included) and CONTACT: uncompiled, they take a few seconds
MODELS = {p.stem: p.read_text() for p in sorted(MODELS_DIR.glob("*.xml"))}
MODELS.update({f"kinedyn.models.{name}": kd.models.xml(name) for name in kd.models.names()})
MODELS["contact"] = CONTACT


def check(name: str, xml: str, rng: np.random.Generator) -> str:
    m, d, mjm, mjd = load_pair(xml, disable=False)
    # a state MuJoCo's own simulation reaches (in contact, at the limit), then random controls
    mujoco.mj_resetData(mjm, mjd)
    for _ in range(40):
        mujoco.mj_step(mjm, mjd)
    qpos, qvel, act = mjd.qpos.copy(), mjd.qvel.copy(), mjd.act.copy()
    qvel += rng.normal(scale=0.1, size=mjm.nv)
    ctrl = rng.uniform(-1, 1, size=mjm.nu)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)
    for _ in range(10):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
    assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse)
    return f"{name}: nv={m.nv}, ncon={d.ncon}, nefc={d.nefc}"


def check_derivatives_fd() -> str:
    """kd.transition_fd (centred) and kd.inverse_fd uncompiled on CONTACT against MuJoCo's."""
    m, d, mjm, mjd = load_pair(CONTACT, disable=False)
    for _ in range(40):
        mujoco.mj_step(mjm, mjd)
    mujoco.mj_forward(mjm, mjd)
    for f in ("qpos", "qvel", "act", "qacc_warmstart", "qacc"):
        getattr(d, f)[:] = getattr(mjd, f)
    d.time = mjd.time
    ndx = 2 * mjm.nv + mjm.na
    a, b = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
    ours = kd.transition_fd(m, d, centered=True)
    mujoco.mjd_transitionFD(mjm, mjd, 1e-6, True, a, b, None, None)
    assert np.abs(ours.A - a).max() <= 1e-6 * np.abs(a).max(), "transition_fd"
    mujoco.mj_forward(mjm, mjd)
    dfdq = np.zeros((mjm.nv, mjm.nv))
    mujoco.mjd_inverseFD(mjm, mjd, 1e-6, False, dfdq, None, None, None, None, None, None)
    assert np.abs(kd.inverse_fd(m, d).DfDq - dfdq).max() <= 1e-6 * np.abs(dfdq).max(), "inverse_fd"
    # the analytical position derivative of the constraint force (plane-box contacts, a hinge
    # limit) against its central difference
    kd.forward(m, d)
    gq = kd.constraint_derivatives(m, d).dqfrc_dq
    fd = kd.constraint_derivatives(m, d, method="fd").dqfrc_dq
    assert np.abs(gq - fd).max() <= 1e-6 * np.abs(fd).max(), "constraint_derivatives"
    return f"transition_fd, inverse_fd, constraint_derivatives on contact: ncon={mjd.ncon}"


def check_discrete() -> str:
    """The discrete integrator uncompiled (test_integrator_discrete's model: its metric, PCG and
    free-body block) against MuJoCo's: forward and five steps."""
    from test_integrator_discrete import _close, _pair, _start

    m, mjm = _pair("newton")
    d, mjd = _start(m, mjm)
    for k in range(5):
        kd.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for name in ("qpos", "qvel", "qacc", "qacc_smooth"):
            _close(getattr(d, name), getattr(mjd, name), f"discrete step {k} {name}")
    return f"discrete integrator: nv={m.nv}, five steps"


def main() -> int:
    if not config.DISABLE_JIT:
        print("run with NUMBA_DISABLE_JIT=1", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    for name, xml in MODELS.items():
        start = time.perf_counter()
        print(check(name, xml, rng), f"({time.perf_counter() - start:.3f} s)", flush=True)
    print(check_derivatives_fd(), flush=True)
    print(check_discrete(), flush=True)
    print(f"{len(MODELS) + 2} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
