"""Kernel handles (kinedyn._jit): what a kernel reads through a handle is the Model's / Data's
own memory, a handle keeps its arrays alive and releases them when it dies, and loading Numba's
implementations for the first kernel does not import scipy.linalg yet leaves NumPy's BLAS-backed
functions working in jitted code.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import config, njit

import kinedyn as kd
from kinedyn.engine.fields import DATA_FIELDS, SIZE_NAMES
from kinedyn.engine.handles import DATA_HANDLE_FIELDS, make_handle

pytestmark = pytest.mark.skipif(config.DISABLE_JIT, reason="handles are plain namespaces without the JIT")


@njit(cache=True)
def _model_fields(m):
    # the first and last registry fields, one of each dtype and rank, a size and an option array
    return m.nbody, m.qpos0, m.body_parentid, m.body_pos, m.jnt_limited, m.opt_gravity, m.opt_flags


@njit(cache=True)
def _data_fields(d):
    return d.qpos, d.xpos, d.xmat, d.time


def test_model_handle_fields_are_the_model_arrays():
    m = kd.models.load("biped")
    nbody, qpos0, parent, body_pos, jnt_limited, gravity, flags = _model_fields(m._handle)
    assert nbody == m.nbody
    for seen, own in ((qpos0, m.qpos0), (parent, m.body_parentid), (body_pos, m.body_pos),
                      (jnt_limited, m.jnt_limited), (gravity, m.opt._gravity), (flags, m.opt._flags)):
        assert seen.dtype == own.dtype and seen.shape == own.shape
        assert np.shares_memory(seen, own)
        np.testing.assert_array_equal(seen, own)


def test_data_handle_fields_are_the_data_arrays():
    m = kd.models.load("biped")
    d = kd.Data(m)
    d.qpos[:] = np.arange(m.nq)
    d.time = 1.5
    qpos, xpos, xmat, time = _data_fields(d._handle)
    for seen, own in ((qpos, d.qpos), (xpos, d.xpos), (xmat, d.xmat), (time, d._time)):
        assert seen.shape == own.shape and np.shares_memory(seen, own)
    assert time[0] == 1.5


def _data_arrays(m) -> dict:
    """Fresh arrays for every Data handle field, in registry order."""
    sizes = {s: getattr(m, s) for s in SIZE_NAMES}
    arrays = {spec.name: np.zeros(spec.resolve(sizes), dtype=spec.dtype) for spec in DATA_FIELDS}
    arrays["time"] = np.zeros(1)
    return arrays


def test_handle_holds_one_reference_per_array_and_releases_it():
    arrays = _data_arrays(kd.models.load("biped"))
    assert tuple(arrays) == DATA_HANDLE_FIELDS
    first, last = arrays["qpos"], arrays["time"]
    before = sys.getrefcount(first), sys.getrefcount(last)
    handle = make_handle("data", arrays)
    assert (sys.getrefcount(first), sys.getrefcount(last)) == (before[0] + 1, before[1] + 1)
    del handle
    gc.collect()
    assert (sys.getrefcount(first), sys.getrefcount(last)) == before


def test_make_handle_rejects_fields_out_of_registry_order():
    values = dict(reversed(list(_data_arrays(kd.models.load("biped")).items())))
    with pytest.raises(RuntimeError, match="do not follow the registry"):
        make_handle("data", values)


def test_first_kernel_load_skips_scipy_linalg_and_blas_still_works():
    # a fresh process: kinedyn imported before Numba compiles anything, as a user program does
    probe = textwrap.dedent("""
        import sys
        import numpy as np
        import kinedyn
        from numba import njit

        @njit
        def matrix_vector(a, b):
            return np.dot(a, b)

        @njit
        def plus_one(x):
            return x + 1.0

        plus_one(1.0)  # Numba loads its implementations here
        assert "scipy.linalg" not in sys.modules, "scipy.linalg imported by the first compile"
        a = np.array([[4.0, 1.0], [2.0, 5.0]])
        b = np.array([1.0, 2.0])
        assert np.allclose(matrix_vector(a, b), a @ b)
        assert hasattr(sys.modules["scipy.linalg.cython_blas"], "__pyx_capi__"), "placeholder left in place"
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_handle_type_pickled_in_one_process_hashes_correctly_in_another(tmp_path):
    """Numba pickles argument types into its cache index; a handle type's cached hash comes from the
    process's randomised string hashing and must not travel with it, or the next process's index
    look-ups miss and every warm start recompiles."""
    saved = tmp_path / "handle_type.pkl"
    write = textwrap.dedent(f"""
        import pickle
        from numba import typeof
        import kinedyn as kd
        m = kd.models.load("pendulum")
        t = typeof(m._handle)
        hash(t)
        open({str(saved)!r}, "wb").write(pickle.dumps(t))
    """)
    read = textwrap.dedent(f"""
        import pickle
        import kinedyn
        from kinedyn._jit.handles import _HandleType
        u = pickle.loads(open({str(saved)!r}, "rb").read())
        print(hash(u) == super(_HandleType, u).__hash__())
    """)
    env = {**os.environ, "KINEDYN_COMPILE_PROGRESS": "0"}
    subprocess.run([sys.executable, "-c", write], env={**env, "PYTHONHASHSEED": "1"}, check=True, timeout=600)
    out = subprocess.run([sys.executable, "-c", read], env={**env, "PYTHONHASHSEED": "2"}, check=True,
                         capture_output=True, text=True, timeout=600).stdout
    assert out.strip() == "True"
