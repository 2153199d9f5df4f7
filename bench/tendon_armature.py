"""CPU time per step of a small model with tendon armature, kinedyn against MuJoCo 4.0.

    python -m bench.tendon_armature [--steps 2000] [--repeats 5]

The model: a hinge-hinge-slide-ball chain with a fixed and a spatial (pulley) tendon, a body
with two slides on a spatial tendon, a free body, a floor; every tendon with armature, and
the same model with every tendon armature 0 (the units are then not called). Each row is the
minimum over ``--repeats`` of the CPU time of ``--steps`` steps from Python, per step, for
Euler and RK4. Measures only: no assertion.
"""

from __future__ import annotations

import argparse

import mujoco
import numpy as np

import kinedyn as kd
from bench.timing import step_times

MODEL = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1" pos="0 0 -0.45"/>
    <site name="w0" pos="0 0.1 0.1"/>
    <body>
      <joint name="j0" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <site name="s0" pos="0.1 0.02 0"/>
      <body pos="0.3 0 0">
        <joint name="j1" type="hinge" axis="0 0 1" limited="true" range="-0.6 0.6"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <site name="s1" pos="0.2 0.03 0.01"/>
        <body pos="0.3 0 0">
          <joint type="slide" axis="1 0 0"/>
          <joint type="ball"/>
          <geom type="sphere" size="0.05" pos="0 0 -0.1"/>
          <site name="s2" pos="0.05 0 0.02"/>
        </body>
      </body>
    </body>
    <body pos="0 -0.5 0">
      <joint type="slide" axis="1 0 0"/>
      <joint type="slide" axis="0 1 0"/>
      <geom type="box" size="0.05 0.05 0.05"/>
      <site name="s3" pos="0.05 0 0"/>
    </body>
    <body pos="0.5 0.5 0.3"><freejoint/><geom type="box" size="0.05 0.04 0.03"/></body>
  </worldbody>
  <tendon>
    <fixed armature="{a}"><joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/></fixed>
    <spatial armature="{a}">
      <site site="w0"/><site site="s0"/><site site="s1"/>
      <pulley divisor="2"/><site site="s1"/><site site="s2"/>
    </spatial>
    <spatial armature="{a}"><site site="w0"/><site site="s3"/></spatial>
  </tendon>
</mujoco>
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'integrator':<10} {'armature':>8} {'kinedyn us/step':>16} {'mujoco us/step':>15}")
    for integrator in ("Euler", "RK4"):
        for a in ("0.5", "0"):
            xml = MODEL.format(integrator=integrator, a=a)
            m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
            d, mjd = kd.Data(m), mujoco.MjData(mjm)
            qvel = np.random.default_rng(0).normal(size=m.nv) * 0.3
            d.qvel[:], mjd.qvel[:] = qvel, qvel
            ours, theirs = step_times(m, d, mjm, mjd, args.steps, args.repeats)
            print(f"{integrator:<10} {a:>8} {ours * 1e6:16.2f} {theirs * 1e6:15.2f}")


if __name__ == "__main__":
    main()
