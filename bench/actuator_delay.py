"""CPU time per step of a small model with delayed actuators, kinedyn against MuJoCo 4.0.

    python -m bench.actuator_delay [--steps 2000] [--repeats 5]

The model: two hinges under gravity with seven actuators, six of them keeping a control history
(``nsample``), five reading delayed controls (zero-order hold, linear, cubic), and the same model
without ``nsample``/``delay``/``interp`` (the history units are then not compiled or called).
Each row is the minimum over ``--repeats`` of the CPU time of ``--steps`` steps from Python,
per step, for Euler and RK4. Measures only: no assertion.
"""

from __future__ import annotations

import argparse
import re

import mujoco

import kinedyn as kd
from bench.timing import step_times

MODEL = """
<mujoco>
  <option timestep="0.01" integrator="{integrator}"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j1" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
      <body pos="0.3 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j1" nsample="3" delay="0.02" interp="linear"/>
    <position joint="j1" kp="5" nsample="2"/>
    <motor joint="j2" nsample="4" delay="0.025" interp="cubic" gear="0.5"/>
    <general joint="j2" dyntype="filter" dynprm="0.05" gainprm="2" nsample="2" delay="0.01"/>
    <intvelocity joint="j2" kp="3" actrange="-1 1" nsample="3" delay="0.05"/>
    <velocity joint="j1" kv="0.5" nsample="2" delay="0.02" interp="linear"/>
    <motor joint="j2"/>
  </actuator>
</mujoco>
"""


def compare(model: str, attributes: str, label: str, doc: str, argv=None) -> None:
    """The table: each integrator, ``model`` with and without ``attributes`` (a regex of the
    attribute names to strip), kinedyn's and MuJoCo's CPU time per step."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'integrator':<10} {label:>6} {'kinedyn us/step':>16} {'mujoco us/step':>15}")
    for integrator in ("Euler", "RK4"):
        for delays in (True, False):
            xml = model.format(integrator=integrator)
            if not delays:
                xml = re.sub(rf' ({attributes})="[^"]*"', "", xml)
            m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
            d, mjd = kd.Data(m), mujoco.MjData(mjm)
            d.ctrl[:] = mjd.ctrl[:] = 0.3
            ours, theirs = step_times(m, d, mjm, mjd, args.steps, args.repeats)
            print(f"{integrator:<10} {'yes' if delays else 'no':>6} {ours * 1e6:16.2f} {theirs * 1e6:15.2f}")


def main(argv=None) -> None:
    compare(MODEL, "nsample|delay|interp", "delays", __doc__, argv)


if __name__ == "__main__":
    main()
