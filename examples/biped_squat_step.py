"""The pieces of ``kinedyn demo`` from Python, with a slower motion: ``python examples/biped_squat_step.py``.

The demo's stages are functions of :mod:`kinedyn.cli.demo`, so a variant is a few lines:
here the same squat and step over 5 s instead of 3 s, which the servos track more
closely (their error is mostly the lag kv/kp times the joint speed).
"""

import numpy as np

from kinedyn import models
from kinedyn.cli import demo
from kinedyn.tools import trajectory

m = models.load("biped")

motion = demo.squat_and_step(m, duration=5.0)                       # leg6 IK at every 2 ms sample
inverse = trajectory.inverse_dynamics(m, motion.t, motion.qpos)     # torques of that motion
motion = motion.samples(inverse.index)  # "fd" differences keep the inner samples only
root = m.jnt_dofadr[m.joint("root").id]
tracking = demo.track(m, motion.t, motion.qpos, inverse.qvel, inverse.qfrc_inverse[:, root:root + 6])
result = demo.analyse(m, motion, inverse, tracking)                 # (demo.compute(5.0) does all four)

print(f"{'joint':8} {'peak torque N m':>16} {'max error deg':>14}")
max_error = np.abs(result.tracking_error).max(axis=0)
for name, torque, error in zip(result.leg_joints, result.peak_torque, max_error, strict=True):
    print(f"{name:8} {torque:16.2f} {np.degrees(error):14.2f}")
print(f"soles within {1e3 * result.sole_error.max():.1f} mm of their targets; "
      f"the support carries up to {result.peak_base_force:.0f} N")
