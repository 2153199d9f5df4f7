"""CPU time per step of fluid models under each integrator, kinedyn against MuJoCo 4.0.

    python -m bench.fluid_implicit [--steps 2000] [--repeats 5]

The models: an eel written here (a free head and five hinged segments, every geom by the
ellipsoid model, in water with a current) and gymnasium's swimmer (inertia boxes in a dense
viscous medium), each under Euler, RK4, implicitfast and implicit. The implicit integrators add
the fluid forces' velocity derivatives (kinedyn.engine.derivative_fluid) to their system; the
Euler rows are the same model without them. Each row is the minimum over ``--repeats`` of the
CPU time of ``--steps`` steps from Python, per step. Measures only: no assertion.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np

import kinedyn as kd
from bench.timing import step_times

EEL = """
<mujoco>
  <option timestep="0.004" density="1000" viscosity="0.001" wind="0.2 0 0"/>
  <default>
    <geom fluidshape="ellipsoid" type="capsule" size=".03"/><joint axis="0 0 1" damping=".02"/>
  </default>
  <worldbody>
    <body name="head" pos="0 0 .5">
      <freejoint/>
      <geom type="ellipsoid" size=".08 .05 .04"/>
      <body pos="-.1 0 0"><joint/><geom fromto="0 0 0 -.15 0 0"/>
        <body pos="-.15 0 0"><joint/><geom fromto="0 0 0 -.15 0 0"/>
          <body pos="-.15 0 0"><joint/><geom fromto="0 0 0 -.15 0 0"/>
            <body pos="-.15 0 0"><joint/><geom fromto="0 0 0 -.15 0 0"/>
              <body pos="-.15 0 0"><joint/><geom type="box" size=".06 .005 .04" pos="-.06 0 0"/></body>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _swimmer() -> str | None:
    try:
        import gymnasium
    except ImportError:
        return None
    path = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "swimmer.xml"
    return path.read_text() if path.exists() else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    models = {"eel": EEL, "swimmer": _swimmer()}
    print(f"{'model':<8} {'integrator':<13} {'kinedyn us/step':>16} {'mujoco us/step':>15}")
    for name, xml in models.items():
        if xml is None:
            print(f"{name:<8} (gymnasium not installed)")
            continue
        for integrator in ("Euler", "RK4", "implicitfast", "implicit"):
            m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
            m.opt.integrator = getattr(kd.IntegratorType, integrator.upper())
            mjm.opt.integrator = int(m.opt.integrator)
            d, mjd = kd.Data(m), mujoco.MjData(mjm)
            qvel = np.random.default_rng(0).normal(size=m.nv) * 0.3
            d.qvel[:], mjd.qvel[:] = qvel, qvel
            ours, theirs = step_times(m, d, mjm, mjd, args.steps, args.repeats)
            print(f"{name:<8} {integrator:<13} {ours * 1e6:16.2f} {theirs * 1e6:15.2f}")


if __name__ == "__main__":
    main()
