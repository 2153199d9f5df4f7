"""Build the 3-joint arm in Python with kd.Spec, save it as MJCF, and run inverse dynamics on it.

The arm is the one of the forward/inverse-kinematics tutorial, bundled as
``kd.models.load("arm3")``: joint 1 about x at the origin, a 0.3 m link, joint 2
about y, a 0.3 m link, joint 3 about x, a 0.2 m link to the end-effector site "ee";
motors on all three joints. ``build_arm3()`` gives exactly the bundled model.

Then, as in the Newton-Euler tutorial, the joint torques of a trajectory: joint
velocities and accelerations by finite differences of sampled joint angles, and
``kd.inverse`` (recursive Newton-Euler, with rotor inertia ``armature`` when given).

    python examples/build_arm3.py [--save arm3.xml] [--armature 0.01]
"""

from __future__ import annotations

import argparse

import numpy as np

import kinedyn as kd

LENGTHS = (0.3, 0.3, 0.2)      # link lengths along z, m
RADII = (0.03, 0.025, 0.02)    # capsule radii, m
MASSES = (1.0, 0.8, 0.5)       # link masses, kg
AXES = ((1, 0, 0), (0, 1, 0), (1, 0, 0))  # x, y, x as in p4 = Rx L Ry L Rx L


def build_arm3(armature: float = 0.0) -> kd.Spec:
    """The bundled arm3 as a Spec; ``armature`` adds rotor inertia to every joint."""
    spec = kd.Spec(model="arm3", angle="radian", autolimits=True)
    # kinedyn has no constraint solver: disable contacts and limits (ranges still bound IK)
    spec.option.flag.contact = "disable"
    spec.option.flag.limit = "disable"

    parent = spec.worldbody
    for i in range(3):
        # each link starts where the previous one ends
        link = parent.add_body(name=f"link{i + 1}", pos=(0, 0, LENGTHS[i - 1]) if i else None)
        link.add_joint(name=f"j{i + 1}", axis=AXES[i], range=(-2.5, 2.5),
                       armature=armature if armature else None)
        link.add_geom(type="capsule", size=RADII[i], fromto=(0, 0, 0, 0, 0, LENGTHS[i]), mass=MASSES[i])
        parent = link
    parent.add_site(name="ee", pos=(0, 0, LENGTHS[2]), size=0.01)

    for i in range(3):
        spec.add_actuator(kind="motor", name=f"m{i + 1}", joint=f"j{i + 1}")
    return spec


def trajectory_torques(m: kd.Model, qs: np.ndarray, dt: float) -> np.ndarray:
    """Joint torques along sampled joint angles ``qs`` (T, nq): backward differences for qvel and
    qacc, then inverse dynamics at each sample (the tutorial's loop)."""
    d = kd.Data(m)
    torques = np.zeros((len(qs), m.nv))
    q_prev, v_prev = qs[0], np.zeros(m.nv)
    for t, q in enumerate(qs):
        v = (q - q_prev) / dt
        d.qpos[:] = q
        d.qvel[:] = v
        d.qacc[:] = (v - v_prev) / dt
        kd.inverse(m, d)
        torques[t] = d.qfrc_inverse
        q_prev, v_prev = q, v
    return torques


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", metavar="PATH", help="write the MJCF to PATH")
    parser.add_argument("--armature", type=float, default=0.0, help="rotor inertia of every joint")
    args = parser.parse_args(argv)

    spec = build_arm3(args.armature)
    if args.save:
        print(f"wrote {spec.save(args.save)}")
    else:
        print(spec.to_xml())
    m = spec.compile()
    print(f"nq={m.nq} nv={m.nv} nu={m.nu} body_mass={m.body_mass}")

    dt = 0.01
    time = np.arange(0.0, 1.0, dt)
    qs = 0.5 * np.sin(2 * np.pi * np.outer(time, (1.0, 0.5, 2.0)))
    tau = trajectory_torques(m, qs, dt)
    for t in range(0, len(time), 20):
        print(f"t={time[t]:.2f}  q={np.round(qs[t], 3)}  tau={np.round(tau[t], 3)} N m")


if __name__ == "__main__":
    main()
