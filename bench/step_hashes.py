"""Hashes of the state after 150 steps, for checking that a speed change is bit-identical.

    python -m bench.step_hashes [--out FILE] [--check FILE] [--steps 150]

Cases: the gymnasium humanoid under every integrator (Euler, implicitfast, RK4) x solver (PGS,
CG, Newton) x cone (pyramidal, elliptic), the gymnasium ant under the three integrators, and a
small model with activations (filter, integrator and muscle-free filterexact dynamics), a
tendon, a ball joint and joint damping under the three integrators: 24 cases, every contact
on, with random controls drawn from a fixed seed. Each case hashes every non-scratch Data
field (sha256 of the raw bytes) after ``--steps`` steps. ``--out`` writes the table as JSON,
``--check`` compares with such a file and exits 1 on any difference. Measures only: the
reference is kinedyn's own earlier output, so this is a regression check, not a fidelity test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import xml.etree.ElementTree as ET

import numpy as np

import kinedyn as kd
from kinedyn.cli.benchmark import gymnasium_asset
from kinedyn.engine.fields import DATA_FIELDS

ACT_MODEL = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.5">
      <freejoint/>
      <geom type="box" size="0.1 0.08 0.05"/>
      <site name="s0" pos="0.1 0 0"/>
      <body pos="0.15 0 0">
        <joint name="h1" type="hinge" axis="0 1 0" damping="0.3"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03"/>
        <body pos="0.2 0 0">
          <joint name="b1" type="ball" damping="0.1"/>
          <geom type="sphere" size="0.05" pos="0.05 0 0"/>
          <site name="s1" pos="0.05 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t0" damping="0.2"><site site="s0"/><site site="s1"/></spatial>
  </tendon>
  <actuator>
    <general joint="h1" dyntype="filter" dynprm="0.05" gainprm="2"/>
    <general joint="h1" dyntype="integrator" gainprm="1" actlimited="true" actrange="-1 1"/>
    <general tendon="t0" dyntype="filterexact" dynprm="0.03" gainprm="3" biastype="affine"
             biasprm="0 0 -0.5"/>
    <position joint="h1" kp="5" kv="0.5"/>
  </actuator>
  <sensor>
    <jointpos joint="h1"/>
    <framelinvel objtype="site" objname="s1"/>
    <accelerometer site="s1"/>
  </sensor>
</mujoco>
"""

INTEGRATORS = ("Euler", "implicitfast", "RK4")


def with_option(xml: str, **attrs: str) -> str:
    root = ET.fromstring(xml)
    option = root.find("option")
    if option is None:
        option = ET.Element("option")
        root.insert(0, option)
    for key, value in attrs.items():
        option.set(key, value)
    return ET.tostring(root, encoding="unicode")


def cases() -> list[tuple[str, str]]:
    out = []
    humanoid, ant = gymnasium_asset("humanoid.xml"), gymnasium_asset("ant.xml")
    if humanoid is None or ant is None:
        raise SystemExit("gymnasium is not installed: its humanoid and ant are needed")
    for integrator in INTEGRATORS:
        for solver in ("PGS", "CG", "Newton"):
            for cone in ("pyramidal", "elliptic"):
                xml = with_option(humanoid.read_text(), integrator=integrator, solver=solver, cone=cone)
                out.append((f"humanoid/{integrator}/{solver}/{cone}", xml))
    for integrator in INTEGRATORS:
        out.append((f"ant/{integrator}", with_option(ant.read_text(), integrator=integrator)))
    for integrator in INTEGRATORS:
        out.append((f"act/{integrator}", with_option(ACT_MODEL, integrator=integrator)))
    return out


def run_case(xml: str, steps: int) -> str:
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    rng = np.random.default_rng(7)
    d.qvel[:] = rng.normal(0.0, 0.3, m.nv)
    digest = hashlib.sha256()
    for _ in range(steps):
        d.ctrl[:] = rng.uniform(-1.0, 1.0, m.nu)
        kd.step(m, d)
    for spec in DATA_FIELDS:
        if spec.name.startswith("scratch"):
            continue
        value = getattr(d, spec.name, None)
        if isinstance(value, np.ndarray):
            digest.update(spec.name.encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (int, float)):
            digest.update(spec.name.encode())
            digest.update(np.float64(value).tobytes())
    return digest.hexdigest()[:16]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--out")
    parser.add_argument("--check")
    args = parser.parse_args(argv)
    table = {}
    for name, xml in cases():
        table[name] = run_case(xml, args.steps)
        print(f"{name:40s} {table[name]}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(table, f, indent=1)
    if args.check:
        with open(args.check) as f:
            reference = json.load(f)
        bad = [k for k in reference if table.get(k) != reference[k]]
        changed = f"; changed: {bad}" if bad else ""
        print(f"{len(reference) - len(bad)}/{len(reference)} unchanged{changed}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
