"""CPU time per step of a small model with sensor history, delays and intervals, kinedyn against
MuJoCo 4.0.

    python -m bench.sensor_history [--steps 2000] [--repeats 5]

The model: two hinges under gravity, one motor, ten sensors of the three stages, nine keeping a
history (``nsample``): five delayed (linear, cubic, zero-order hold), four with an interval (one
delayed too); and the same model without ``nsample``/``delay``/``interp``/``interval`` (the
sensor history units are then not compiled or called). Each row is the minimum over
``--repeats`` of the CPU time of ``--steps`` steps from Python, per step, for Euler and RK4.
Measures only: no assertion.
"""

from __future__ import annotations

from bench.actuator_delay import compare

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
        <site name="tip" pos="0.3 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="m1" joint="j1"/></actuator>
  <sensor>
    <jointpos joint="j1" nsample="4"/>
    <framepos objtype="site" objname="tip" nsample="3" delay="0.015" interp="linear"/>
    <accelerometer site="tip" nsample="5" interval="0.025" delay="0.02" interp="cubic"/>
    <jointvel joint="j2" nsample="3" interval="0.03 -0.01" interp="cubic"/>
    <subtreelinvel body="world" nsample="2" delay="0.01"/>
    <force site="tip" nsample="3" delay="0.02" cutoff="0.5"/>
    <framequat objtype="site" objname="tip" nsample="4" delay="0.025" interp="cubic"/>
    <actuatorfrc actuator="m1" nsample="2" interval="0.02"/>
    <jointpos joint="j2"/>
    <framelinacc objtype="site" objname="tip" nsample="3" interval="0.02"/>
  </sensor>
</mujoco>
"""


def main(argv=None) -> None:
    compare(MODEL, "nsample|delay|interp|interval", "history", __doc__, argv)


if __name__ == "__main__":
    main()
