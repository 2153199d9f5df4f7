"""Benchmarks: kinedyn against MuJoCo and Pinocchio (python -m bench.run)."""
