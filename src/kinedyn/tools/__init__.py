"""Tools built on the engine: trajectories (inverse dynamics along a motion), inverse actuation,
and batches of states and rollouts across cores."""
