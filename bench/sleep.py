"""CPU time per step of a scene whose bodies have settled, asleep against awake, kinedyn against
MuJoCo 4.0.

    python -m bench.sleep [--steps 1000] [--repeats 5] [--bodies 16]

The scene: ``--bodies`` boxes and spheres on a floor, with ``<flag sleep="enable"/>``. It is
stepped until every tree sleeps (MuJoCo and kinedyn alike), then timed; the awake rows time the
same settled state of the same scene compiled without the flag (every contact made and solved
every step). Each row is the minimum over ``--repeats`` of the CPU time of ``--steps`` steps from
Python, per step. Measures only: no assertion.
"""

from __future__ import annotations

import argparse

import mujoco
import numpy as np

import kinedyn as kd
from bench.timing import cpu_per_call


def scene(nbody: int, sleep: bool) -> str:
    bodies = []
    side = int(np.ceil(np.sqrt(nbody)))
    for i in range(nbody):
        x, y = 0.3 * (i % side), 0.3 * (i // side)
        geom = '<geom type="box" size=".1 .1 .1"/>' if i % 2 == 0 else '<geom type="sphere" size=".1"/>'
        bodies.append(f'<body pos="{x} {y} .1"><freejoint/>{geom}</body>')
    flag = '<flag sleep="enable"/>' if sleep else ""
    return (f'<mujoco><option>{flag}</option><worldbody><geom type="plane" size="10 10 .1"/>'
            + "".join(bodies) + "</worldbody></mujoco>")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bodies", type=int, default=16)
    args = parser.parse_args(argv)
    # settle with sleeping on until every tree sleeps
    m = kd.Model.from_xml_string(scene(args.bodies, True))
    d = kd.Data(m)
    mm = mujoco.MjModel.from_xml_string(scene(args.bodies, True))
    md = mujoco.MjData(mm)
    for _ in range(5000):
        kd.step(m, d)
        mujoco.mj_step(mm, md)
        if (d.tree_asleep >= 0).all() and (md.tree_asleep >= 0).all():
            break
    else:
        raise SystemExit("the scene did not fall asleep in 5000 steps")
    print(f"{args.bodies} bodies asleep after {d.time:.3f} s; same qpos as MuJoCo to "
          f"{np.abs(d.qpos - md.qpos).max():.1e}")
    # the same settled state, awake, without the flag
    ma = kd.Model.from_xml_string(scene(args.bodies, False))
    da = kd.Data(ma)
    mma = mujoco.MjModel.from_xml_string(scene(args.bodies, False))
    mda = mujoco.MjData(mma)
    da.qpos[:] = d.qpos
    mda.qpos[:] = md.qpos
    rows = {
        ("kinedyn", "awake"): cpu_per_call(lambda: kd.step(ma, da), args.steps, args.repeats),
        ("kinedyn", "asleep"): cpu_per_call(lambda: kd.step(m, d), args.steps, args.repeats),
        ("mujoco", "awake"): cpu_per_call(lambda: mujoco.mj_step(mma, mda), args.steps, args.repeats),
        ("mujoco", "asleep"): cpu_per_call(lambda: mujoco.mj_step(mm, md), args.steps, args.repeats),
    }
    print(f"{'':<8} {'awake us/step':>14} {'asleep us/step':>15} {'awake/asleep':>13}")
    for who in ("kinedyn", "mujoco"):
        awake, asleep = rows[who, "awake"], rows[who, "asleep"]
        print(f"{who:<8} {awake * 1e6:>14.1f} {asleep * 1e6:>15.1f} {awake / asleep:>13.2f}")
    print(f"kinedyn/mujoco: awake {rows['kinedyn', 'awake'] / rows['mujoco', 'awake']:.2f}, "
          f"asleep {rows['kinedyn', 'asleep'] / rows['mujoco', 'asleep']:.2f}")


if __name__ == "__main__":
    main()
