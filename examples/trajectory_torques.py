"""Joint torques and motor commands along a sampled trajectory of the bundled 3-joint arm.

The trajectory-to-torque workflow of the Newton-Euler tutorial (joint angles sampled at
the control rate -> velocities and accelerations by differences -> inverse dynamics with
rotor inertia), done with kinedyn and checked by simulating the torques forward:

    python examples/trajectory_torques.py [--out DIR]

writes DIR/arm3_trajectory.csv (the input, kinedyn's trajectory format),
DIR/arm3_torques.csv and DIR/arm3_torques.png, and prints how closely a simulation
driven by the computed motor commands retraces the samples.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import kinedyn as kd
from kinedyn.tools import trajectory


def minimum_jerk(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Quintic point-to-point motion with zero velocity and acceleration at both ends."""
    s = t / t[-1]
    blend = 10 * s**3 - 15 * s**4 + 6 * s**5
    return q0 + np.outer(blend, q1 - q0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="directory for the CSV and PNG files")
    parser.add_argument("--duration", type=float, default=1.5, help="length of the motion in seconds")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    m = kd.models.load("arm3")
    m.dof_armature[:] = [0.02, 0.02, 0.01]  # rotor inertia reflected through the gearbox, kg m^2
    h = m.opt.timestep                         # sample at the simulation rate: "fd" is then exact
    t = np.arange(0.0, args.duration + h / 2, h)
    qpos = minimum_jerk(np.array([0.0, -0.4, 0.8]), np.array([1.2, 0.6, -0.5]), t)

    # a file in kinedyn's trajectory format, read back as a user would
    src = args.out / "arm3_trajectory.csv"
    trajectory.save_csv(src, t, qpos, m)
    t, qpos = trajectory.load(src, m)

    res = trajectory.inverse_dynamics(m, t, qpos, method="fd", ctrl=True)
    res.to_csv(args.out / "arm3_torques.csv")
    res.plot(args.out / "arm3_torques.png")
    peak = np.abs(res.qfrc_joint).max(axis=0)
    print(f"{res.t.size} samples, h = {h * 1e3:g} ms; peak torque per joint (N m): "
          + ", ".join(f"{n} {p:.3f}" for n, p in zip(res.dof_names, peak, strict=True)))
    print(f"largest unmet generalized force with the motors: {res.ctrl_residual.max():.2e}")

    # check: simulate the motor commands from the first kept sample
    d = kd.Data(m)
    d.qpos[:] = res.qpos[0]
    d.qvel[:] = res.qvel[0]
    for row in range(res.t.size - 1):
        d.ctrl[:] = res.ctrl[row]
        kd.step(m, d)
    drift = np.abs(d.qpos - qpos[res.index[-1]]).max()
    print(f"simulating the commands retraces the last sample to {drift:.1e} rad")

    smooth = trajectory.inverse_dynamics(m, t, qpos, method="spline")
    inner = slice(10, -10)
    gap = np.abs(smooth.qfrc_joint[1:-1][inner] - res.qfrc_joint[inner]).max()
    print(f"spline vs fd torques inside the motion differ by at most {gap:.1e} N m")


if __name__ == "__main__":
    main()
