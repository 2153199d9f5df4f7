"""Rollouts on a Ray cluster: :func:`rollout` shards a batch of trajectories over the cluster's
workers, each running the compiled batch kernel (:func:`kinedyn.tools.batch.rollout`) on its shard,
and gathers the states in memory or writes them to a chunked Zarr store as they arrive.

Same numbers as one machine, bit for bit: a trajectory's result depends only on its own initial
state and controls (never on which worker, thread or shard ran it, or in what order), and every
worker runs the same compiled kernels (on machines of one CPU type: LLVM compiles for the host,
see docs/distributed.md).

Fault tolerance: each shard is one Ray task, retried on another worker if its worker dies
(``retries``, Ray's ``max_retries``). The driver alone writes the store, one shard's rows at a
time, and marks the shard done (``done[k]``) only after its rows are written, so a shard is
either complete or recomputed: a retried task is written once, and a rerun of the same command
(same model, states, controls and steps: checked by a fingerprint) computes only the shards
not marked done. Workers need no shared file system: inputs and results travel through Ray's
object store.

Ray is optional (``pip install "kinedyn[ray]"``): imported only when a rollout runs; the Zarr
store needs ``zarr``, in the same extra.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kinedyn.engine.fields import MODEL_FIELDS, SIZE_NAMES
from kinedyn.engine.model import Model, Option
from kinedyn.tools import batch

__all__ = ["RolloutRun", "load", "rollout"]

STORE_FORMAT = "kinedyn-rollout-1"


# ---------------------------------------------------------------------------------------
# the model travels as its arrays (a Model holds a kernel handle: it cannot be pickled)

def model_payload(m: Model) -> dict:
    """Everything needed to rebuild ``m`` in another process: sizes, arrays, options, names."""
    if getattr(m, "_has_actuator_callbacks", False) or "_actuator_callbacks" in vars(m):
        raise ValueError("a model with Python actuator callbacks cannot be sent to Ray workers")
    o = m.opt
    return {
        "sizes": {s: int(getattr(m, s)) for s in SIZE_NAMES},
        "arrays": {spec.name: np.array(m._field(spec.name)) for spec in MODEL_FIELDS},
        "opt": dict(timestep=o.timestep, gravity=o.gravity.copy(), integrator=o.integrator,
                    disableflags=o.disableflags, enableflags=o.enableflags, wind=o.wind.copy(),
                    density=o.density, viscosity=o.viscosity, **o.solver_options()),
        "names": {k: list(v) for k, v in m.names.items()},
        "extra": {k: v for k, v in vars(m).items() if not k.startswith("_") and k not in ("opt", "names")
                  and k not in SIZE_NAMES and not isinstance(v, np.ndarray)},
    }


def model_from_payload(payload: dict) -> Model:
    """The model of :func:`model_payload`. The arrays are copied: Ray hands a worker read-only views
    of its object store, and Numba types a read-only array differently (every kernel would be
    compiled again for those types instead of loaded from the cache)."""
    arrays = {name: np.array(a) for name, a in payload["arrays"].items()}
    m = Model._assemble(payload["sizes"], arrays, Option(**payload["opt"]), payload["names"])
    for k, v in payload["extra"].items():
        setattr(m, k, v)
    return m


def fingerprint(payload: dict, state0: np.ndarray, control: np.ndarray, nstep: int) -> str:
    """A hash of the inputs of a rollout: a store is resumed only by the same rollout."""
    h = hashlib.sha256()
    for name in sorted(payload["arrays"]):
        h.update(name.encode())
        h.update(np.ascontiguousarray(payload["arrays"][name]).tobytes())
    h.update(repr(sorted((k, np.asarray(v).tolist()) for k, v in payload["opt"].items())).encode())
    for a in (state0, control):
        h.update(repr(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(str(nstep).encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# the worker side

_WORKER_MODELS: dict[str, Model] = {}


def _model_on_worker(key: str, payload: dict) -> Model:
    """The model for ``key``, rebuilt once per worker process (its work Data are cached with it)."""
    m = _WORKER_MODELS.get(key)
    if m is None:
        _WORKER_MODELS.clear()
        m = _WORKER_MODELS[key] = model_from_payload(payload)
    return m


def run_shard(key: str, payload: dict, state0: np.ndarray, control: np.ndarray, nstep: int, shard: int,
              kill_once: tuple[str, int] | None = None, store: str | None = None, first_row: int = 0):
    """One shard: :func:`kinedyn.tools.batch.rollout` on one thread; the states (n, nstep, nstate),
    or, with ``store`` (a Zarr store the worker can reach), the states written to its rows from
    ``first_row`` on and only their count returned.

    ``kill_once = (directory, shard)`` is a test hook: the first task of that shard kills its own
    worker process (SIGKILL, as an out-of-memory killer or a lost machine would), once.
    """
    if kill_once is not None and shard == kill_once[1]:
        marker = Path(kill_once[0]) / f"killed-shard-{shard}"
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
    m = _model_on_worker(key, payload)
    # writable copies: the object store's read-only arrays would be new kernel argument types
    state = batch.rollout(m, np.array(state0), np.array(control), nstep, nthread=1).state
    if store is None:
        return state
    import zarr

    zarr.open_array(store, path="state", mode="r+")[first_row:first_row + len(state)] = state
    return len(state)


# ---------------------------------------------------------------------------------------
# the driver

@dataclass(frozen=True)
class RolloutRun:
    """What :func:`rollout` did when writing a store: ``path``, shards in all, computed this run
    (the others were already done), workers, wall time."""

    path: Path
    nshard: int
    computed: int
    skipped: int
    workers: int
    seconds: float


def _connect(address: str | None, num_workers: int | None, runtime_env: dict | None):
    """ray, and whether this call started it (then it also shuts it down)."""
    try:
        import ray
    except ImportError as err:
        raise ImportError("distributed rollouts need Ray: pip install 'kinedyn[ray]'") from err
    if ray.is_initialized():
        return ray, False
    options = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    if runtime_env is not None:
        options["runtime_env"] = runtime_env
    if address is None:
        ray.init(num_cpus=num_workers or os.cpu_count(), **options)
    else:
        ray.init(address=address, **options)
    return ray, True


def _progress(enabled: bool, total: int, done: int):
    """A rich progress bar on stderr (a no-op when disabled)."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext(lambda n=1: None)

    @contextlib.contextmanager
    def bar():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn(), console=Console(stderr=True)) as progress:
            task = progress.add_task("rollout shards", total=total, completed=done)
            yield lambda n=1: progress.advance(task, n)

    return bar()


class _Store:
    """The Zarr store: ``state`` (nbatch, nstep, nstate) chunked one shard per chunk, ``done`` (nshard,)."""

    def __init__(self, path: Path, key: str, nbatch: int, nstep: int, nstate: int, shard_size: int,
                 meta: dict, resume: bool):
        import zarr

        self.path = path
        nshard = math.ceil(nbatch / shard_size)
        if (path / "zarr.json").exists() and resume:
            group = zarr.open_group(str(path), mode="r+")
            attrs = dict(group.attrs)
            if attrs.get("format") != STORE_FORMAT or attrs.get("fingerprint") != key:
                raise ValueError(f"'{path}' holds a different rollout (model, states, controls or steps "
                                 "differ): give a new --out directory, or overwrite")
            shard_size = int(attrs["shard_size"])
            nshard = math.ceil(nbatch / shard_size)
        else:
            group = zarr.open_group(str(path), mode="w")
            chunk_bytes = shard_size * nstep * nstate * 8
            group.create_array("state", shape=(nbatch, nstep, nstate), dtype="f8",
                               chunks=(shard_size, nstep, nstate) if chunk_bytes > 0 else None)
            group.create_array("done", shape=(nshard,), dtype="bool", chunks=(1,), fill_value=False)
            group.attrs.update({"format": STORE_FORMAT, "fingerprint": key, "shard_size": shard_size,
                                "nbatch": nbatch, "nstep": nstep, **meta})
        self.group, self.shard_size, self.nshard = group, shard_size, nshard

    def done(self) -> np.ndarray:
        return np.asarray(self.group["done"][:], dtype=bool)

    def write(self, shard: int, state: np.ndarray | None) -> None:
        """Write a shard's rows (``None``: a worker wrote them) and then mark it done."""
        if state is not None:
            lo = shard * self.shard_size
            self.group["state"][lo:lo + len(state)] = state
        self.group["done"][shard] = True  # only after the rows: a shard marked done is complete


def rollout(m: Model, initial_state, control=None, nstep: int | None = None, *, out: str | Path | None = None,
            address: str | None = None, num_workers: int | None = None, shard_size: int | None = None,
            progress: bool = False, resume: bool = True, retries: int = 3, runtime_env: dict | None = None,
            write_on_workers: bool = False, label: str = "", _kill_once: tuple[str, int] | None = None):
    """:func:`kinedyn.tools.batch.rollout` sharded over a Ray cluster.

    Args:
      m, initial_state, control, nstep: as :func:`kinedyn.tools.batch.rollout`.
      out: a directory for a Zarr store of the results (made if missing; resumed if it holds
        this rollout's shards). ``None``: gather the results in memory.
      address: the Ray cluster (``"auto"``, ``"HOST:6379"``, ``"ray://HOST:10001"``); ``None``:
        the running Ray session if any, else a local cluster of ``num_workers`` processes.
      num_workers: shards running at once (default: the cluster's CPUs).
      shard_size: trajectories per shard and per chunk (default: four shards per worker).
      progress: a progress bar on stderr. retries: Ray's ``max_retries`` per shard task.
      write_on_workers: the workers write their shards' rows into ``out`` themselves (``out`` must
        be at the same path on every node: a shared file system), and the driver only marks
        shards done: the results do not all pass through the driver (see docs/distributed.md).
      runtime_env: Ray's runtime environment for the workers (e.g. ``{"pip": ["kinedyn[ray]"]}``).

    Returns:
      With ``out=None``, a :class:`kinedyn.tools.batch.Rollout` equal to ``batch.rollout``'s bit
      for bit; else a :class:`RolloutRun` (read the store with :func:`load`).
    """
    from kinedyn.engine.checks import check_model

    check_model(m, "distributed.rollout")
    state0 = batch._as_states(m, initial_state, "initial_state")
    control, nstep = batch._as_controls(m, control, state0.shape[0], nstep)
    nbatch = max(state0.shape[0], control.shape[0])
    nstate = batch.state_size(m)
    payload = model_payload(m)
    key = fingerprint(payload, state0, control, nstep)
    started = time.perf_counter()
    ray, started_ray = _connect(address, num_workers, runtime_env)
    try:
        workers = num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        if shard_size is None:
            shard_size = max(1, math.ceil(nbatch / (4 * workers)))
        if not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
            raise ValueError(f"shard_size must be a positive integer, got {shard_size!r}")
        store = None
        if write_on_workers and out is None:
            raise ValueError("write_on_workers needs out (a store the workers can reach)")
        if out is not None:
            meta = {"model": label, "nq": m.nq, "nv": m.nv, "na": m.na, "layout": "time, qpos, qvel, act"}
            store = _Store(Path(out), key, nbatch, nstep, nstate, int(shard_size), meta, resume)
            shard_size = store.shard_size
        nshard = math.ceil(nbatch / shard_size)
        done = store.done() if store is not None else np.zeros(nshard, dtype=bool)
        gathered = np.empty((nbatch, nstep, nstate)) if store is None else None
        todo = [k for k in range(nshard) if not done[k]]
        target = str(Path(out).resolve()) if write_on_workers else None
        task = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=False)(run_shard)
        payload_ref = ray.put(payload)
        control_ref = ray.put(control) if control.shape[0] == 1 else None
        pending = {}
        with _progress(progress, nshard, nshard - len(todo)) as advance:
            while todo or pending:
                while todo and len(pending) < workers:
                    k = todo.pop(0)
                    rows = slice(k * shard_size, min(nbatch, (k + 1) * shard_size))
                    s0 = state0 if state0.shape[0] == 1 else state0[rows]
                    u = control_ref if control_ref is not None else control[rows]
                    ref = task.remote(key, payload_ref, s0, u, nstep, k, _kill_once, target, rows.start)
                    pending[ref] = k
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    k = pending.pop(ref)
                    state = ray.get(ref)
                    if store is not None:
                        store.write(k, None if write_on_workers else state)
                    else:
                        gathered[k * shard_size:k * shard_size + len(state)] = state
                    advance(1)
    finally:
        if started_ray:
            ray.shutdown()
    if store is None:
        return _as_rollout(m, gathered)
    return RolloutRun(Path(out), nshard, nshard - int(done.sum()), int(done.sum()), workers,
                      time.perf_counter() - started)


def _as_rollout(m: Model, state: np.ndarray) -> batch.Rollout:
    where = batch._state_slices(m)
    return batch.Rollout(state, state[:, :, 0], *(state[:, :, where[f]] for f in ("qpos", "qvel", "act")),
                         np.full(state.shape[0], -1, dtype=np.int64))


def load(path: str | Path, m: Model | None = None) -> batch.Rollout:
    """A store written by :func:`rollout` as a :class:`kinedyn.tools.batch.Rollout` (read into memory).

    Raises ValueError if some shards are missing (the run stopped before the end: rerun it).
    ``thread`` is -1 (not recorded). With ``m``, its sizes are checked against the store's.
    """
    import zarr

    group = zarr.open_group(str(path), mode="r")
    attrs = dict(group.attrs)
    if attrs.get("format") != STORE_FORMAT:
        raise ValueError(f"'{path}' is not a kinedyn rollout store")
    done = np.asarray(group["done"][:], dtype=bool)
    if not done.all():
        raise ValueError(f"'{path}' is incomplete: {int((~done).sum())} of {len(done)} shards missing "
                         "(rerun the same rollout to finish it)")
    if m is not None and (m.nq, m.nv, m.na) != (attrs["nq"], attrs["nv"], attrs["na"]):
        raise ValueError(f"'{path}' holds states of a model with nq, nv, na = "
                         f"{attrs['nq']}, {attrs['nv']}, {attrs['na']}")
    state = np.asarray(group["state"][:])
    nq, nv = attrs["nq"], attrs["nv"]
    return batch.Rollout(state, state[:, :, 0], state[:, :, 1:1 + nq], state[:, :, 1 + nq:1 + nq + nv],
                         state[:, :, 1 + nq + nv:], np.full(state.shape[0], -1, dtype=np.int64))
