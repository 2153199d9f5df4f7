"""The stages of ``kinedyn demo`` from Python, with another gait: ``python examples/biped_walk.py``.

The demo's stages are functions of :mod:`kinedyn.cli.demo`, so a variant is a few lines:
here four slower steps (0.8 s of swing instead of 0.6 s) of 12 cm.
"""

import numpy as np

from kinedyn import models
from kinedyn.cli import demo

m = models.load("biped")
gait = demo.Gait(nstep=4, stride=0.12, single_support=0.8)

pattern = demo.walking_pattern(m, gait)       # footsteps, ZMP preview control, leg6 IK every 2 ms
ff = demo.feedforward(m, pattern)             # inverse dynamics, the base wrench handed to the feet
run = demo.simulate(m, pattern, ff)           # kinedyn.step: servos + feed-forward, contacts
result = demo.analyse(m, pattern, ff, run)    # (demo.compute(gait) does all four)

swing = pattern.share_right % 1.0 == 0
miss = np.abs(pattern.zmp_cart - pattern.zmp_ref)[swing].max()
print(f"planned ZMP: cart-table model within {1e3 * miss:.1f} mm of the footstep plan while a foot swings; "
      f"CoM height {pattern.zc:.3f} m")
print(f"{'joint':8} {'peak feed-forward N m':>21} {'max error deg':>14}")
max_error = np.abs(result.tracking_error).max(axis=0)
for name, torque, error in zip(result.leg_joints, result.peak_torque, max_error, strict=True):
    print(f"{name:8} {torque:21.2f} {np.degrees(error):14.2f}")
if result.fell:
    print(f"the robot fell at t = {run.fell_at:.2f} s")
else:
    print(f"{result.steps} steps, {result.distance:.2f} m, "
          f"max torso tilt {np.degrees(result.max_tilt):.1f} deg")
