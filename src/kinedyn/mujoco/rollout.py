"""``mujoco.rollout``: many open-loop trajectories at once, on ``kd.batch.rollout``.

``rollout(model, data, initial_state, control)`` returns ``(state, sensordata)`` shaped
``(nbatch, nstep, nstate)`` and ``(nbatch, nstep, nsensordata)`` as MuJoCo's module does; the
states are mjSTATE_FULLPHYSICS (``[time, qpos, qvel, act, plastic]`` for every model kinedyn compiles).
"""

from __future__ import annotations

import numpy as np

_CTRL = 64  # mjtState.mjSTATE_CTRL


def rollout(model, data, initial_state, control=None, *, control_spec: int = _CTRL, skip_checks: bool = False,
            nstep: int | None = None, initial_warmstart=None, state=None, sensordata=None,
            chunk_size: int | None = None, persistent_pool: bool = False):
    """MuJoCo's ``rollout.rollout`` on kinedyn's batch rollout (threads over the trajectories).

    One model for every trajectory (a list of models is accepted when it holds one model);
    ``data`` is not used (kinedyn keeps a Data per thread); ``control_spec`` must be
    mjSTATE_CTRL and ``initial_warmstart`` None. ``chunk_size`` and ``persistent_pool`` are
    accepted and ignored (kinedyn's threads take trajectories from one queue).
    """
    if isinstance(model, (list, tuple)):
        if len({id(m) for m in model}) != 1:
            raise NotImplementedError("rollout with a different model per trajectory is not supported by "
                                      "kinedyn.mujoco: pass one MjModel")
        model = model[0]
    if int(control_spec) != _CTRL:
        raise NotImplementedError("rollout control_spec other than mjSTATE_CTRL is not supported by "
                                  "kinedyn.mujoco")
    if initial_warmstart is not None:
        raise NotImplementedError("rollout initial_warmstart is not supported by kinedyn.mujoco")
    # imported here: the batch kernels bring in Numba's parallel machinery, which `import mujoco`
    # (every gymnasium process) should not pay for unless it rolls out
    from kinedyn.tools import batch  # noqa: PLC0415
    result = batch.rollout(model.kd, initial_state, control, nstep=nstep)
    out_state, out_sensor = result.state, result.sensordata
    if state is not None:
        state[...] = out_state.reshape(np.shape(state))
        out_state = state
    if sensordata is not None:
        sensordata[...] = out_sensor.reshape(np.shape(sensordata))
        out_sensor = sensordata
    return out_state, out_sensor


class Rollout:
    """``mujoco.rollout.Rollout`` (a reusable rollout context): its ``rollout`` method is
    :func:`rollout`; ``nthread`` is accepted and kinedyn's thread count used."""

    def __init__(self, *, nthread: int | None = None):
        self.nthread = nthread

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self) -> None:
        pass

    def rollout(self, model, data, initial_state, control=None, **kwargs):
        return rollout(model, data, initial_state, control, **kwargs)


def shutdown_persistent_pool() -> None:
    """Nothing to shut down: kinedyn's rollout threads live only during a call."""
