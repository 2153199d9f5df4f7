"""CPU time per step under the discrete integrator, kinedyn against MuJoCo 4.0.

    python -m bench.discrete [--steps 2000] [--repeats 5]

The model of tests/test_integrator_discrete.py (joint, tendon and actuator springs and dampers,
a spinning free body; no constraint rows), stepped with ``discrete`` (its tendon and actuator
terms: the PCG solve), ``discrete`` under PGS (no coupling terms: one direct solve) and
``implicitfast`` for comparison. Each row is the minimum over ``--repeats`` of the CPU time of
``--steps`` steps from Python, per step. Measures only: no assertion.
"""

from __future__ import annotations

import argparse

import mujoco
import numpy as np

import kinedyn as kd
from bench.timing import step_times

NO_CONTACT = 'contype="0" conaffinity="0"'

MODEL = f"""<mujoco><option integrator="{{integrator}}" timestep="0.002" {{solver}}/>
<worldbody>
 <body><joint name="j0" type="hinge" axis="0 1 0" stiffness="30" damping="0.2"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/><site name="s0" pos="0.1 0 0.05"/>
  <body pos="0.3 0 0"><joint name="j1" type="hinge" axis="0 1 0"/>
   <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" {NO_CONTACT}/>
   <body pos="0.3 0 0">
    <joint name="j2" type="slide" axis="1 0 0" stiffness="100" springref="0.05" damping="1"/>
    <geom type="box" size="0.05 0.05 0.05" {NO_CONTACT}/><site name="s1" pos="0 0 0.05"/>
   </body>
  </body>
 </body>
 <body pos="0 1 0"><joint name="b" type="ball" stiffness="3" damping="0.1"/>
  <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" {NO_CONTACT}/></body>
 <body pos="0 2 0"><joint type="free" stiffness="2" damping="0.05"/>
  <geom type="box" size="0.1 0.2 0.3" {NO_CONTACT}/></body>
</worldbody>
<tendon>
 <fixed stiffness="40" damping="0.5" springlength="0.1">
  <joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/></fixed>
 <spatial damping="2" stiffness="10" springlength="0.3"><site site="s0"/><site site="s1"/></spatial>
</tendon>
<actuator><position joint="j1" kp="80" kv="3"/><velocity joint="b" gear="0 1 0" kv="2"/></actuator>
</mujoco>"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'integrator':<22} {'kinedyn us/step':>16} {'mujoco us/step':>15}")
    cases = (("discrete", "discrete", ""), ("discrete (PGS)", "discrete", 'solver="PGS"'),
             ("implicitfast", "implicitfast", ""))
    for label, integrator, solver in cases:
        xml = MODEL.format(integrator=integrator, solver=solver)
        m, mjm = kd.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
        d, mjd = kd.Data(m), mujoco.MjData(mjm)
        qvel = np.random.default_rng(0).normal(size=m.nv) * 0.3
        d.qvel[:], mjd.qvel[:] = qvel, qvel
        d.ctrl[:], mjd.ctrl[:] = 0.3, 0.3
        ours, theirs = step_times(m, d, mjm, mjd, args.steps, args.repeats)
        print(f"{label:<22} {ours * 1e6:16.2f} {theirs * 1e6:15.2f}")


if __name__ == "__main__":
    main()
