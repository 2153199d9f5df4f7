"""Misuse raises, never crashes.

Kernels are compiled without bounds checks, so a Data of another model, swapped arguments
or a wrong array reaching a kernel would write out of bounds and kill the process. Every
public function that takes a Model checks its arguments first (kinedyn.engine.checks).

The lists of functions are built by introspecting ``kinedyn.__all__``, ``kinedyn.tools.batch``,
``kinedyn.tools.trajectory`` and ``kinedyn.ik``: a new public function that takes ``m`` fails
``test_every_public_function_has_a_misuse_call`` until it gets a row in the tables below.
The dangerous calls also run in a subprocess (before and after the first valid call binds
the compiled entry points), where a crash shows up as an exit code instead of killing pytest.

Models are loaded fresh for each test (``kd.models.load`` compiles anew): nothing shared is mutated.
"""

from __future__ import annotations

import copy
import inspect
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kinedyn as kd
from kinedyn import ik
from kinedyn.tools import batch, trajectory

BIPED_NQ, BIPED_NV = 19, 18
MISMATCH = r"Data was made for a model with nq=1 nv=1, not this one \(nq=19 nv=18\)"
BATCH_MISMATCH = r"BatchData was made for a model with nq=1 nv=1, not this one \(nq=19 nv=18\)"

# ---- how to call each public function, beyond (m, d) -------------------------------------------
# extra arguments are fixed (biped-sized) so that a swapped call is the same call with (d, m)

PAIR_CALLS: dict[str, tuple] = {
    "forward": (), "fwd_acceleration": (), "fwd_actuation": (), "fwd_constraint": (), "fwd_position": (),
    "fwd_velocity": (),
    "inverse": (), "inverse_actuation": (), "reset": (), "step": (), "bias_forces": (), "com_pos": (),
    "com_vel": (), "crb": (), "factor_m": (), "full_m": (), "kinematics": (), "passive": (), "rne": (),
    "rne_post_constraint": (), "tendon": (), "transmission": (), "collision": (), "contact_force": (0,),
    "read_ctrl": (0, 0.0), "read_sensor": (0, 0.0),
    "camlight": (), "reset_data_keyframe": (0,),
    "mul_m": (np.zeros(BIPED_NV),), "solve_m": (np.zeros(BIPED_NV),),
    "jac": (np.zeros(3), 1), "jac_point": (np.zeros(3), 1), "jac_body": (1,), "jac_body_com": (1,),
    "jac_site": (0,), "ray": (np.zeros(3), np.array([0.0, 0.0, -1.0])),
    "rne_derivatives": (), "forward_derivatives": (), "inertia_regressor": (),
    "transition_fd": (), "inverse_fd": (), "check_derivatives": (), "transition_derivatives": (),
    "constraint_derivatives": (),
}
# functions of (m, arrays): called as f(m, *args())
MODEL_CALLS: dict[str, object] = {
    "integrate_pos": lambda: (np.zeros(BIPED_NQ), np.zeros(BIPED_NV), 0.01),
    "differentiate_pos": lambda: (np.zeros(BIPED_NQ), np.zeros(BIPED_NQ), 0.01),
    "inertia_parameters": lambda: (),
}
BATCH_PAIR_CALLS: dict[str, tuple] = {
    "forward": (), "inverse": (), "step": (), "get_state": (), "jac_site": (0,),
    "set_state": (np.zeros(1 + BIPED_NQ + BIPED_NV),),
}
BATCH_MODEL_CALLS: dict[str, object] = {
    "state_size": lambda: (),
    "rollout": lambda: (np.zeros(1 + BIPED_NQ + BIPED_NV), None, 1),
}
# trajectory and ik: f(*args(m)) with the model where the function takes it
OTHER_MODEL_CALLS: dict[str, object] = {
    "trajectory.qpos_names": lambda m: (m,),
    "trajectory.dof_names": lambda m: (m,),
    "trajectory.actuator_names": lambda m: (m,),
    "trajectory.control_names": lambda m: (m,),
    "trajectory.inverse_dynamics": lambda m: (m, np.arange(4) * 0.01, np.zeros((4, BIPED_NQ))),
    "trajectory.differences": lambda m: (m, np.zeros((4, BIPED_NQ)), 0.01),
    "trajectory.spline_derivatives": lambda m: (m, np.arange(8) * 0.01, np.zeros((8, BIPED_NQ))),
    "trajectory.save_csv": lambda m: ("/nonexistent/never-written.csv", np.zeros(1),
                                      np.zeros((1, BIPED_NQ)), m),
    "trajectory.load": lambda m: ("/nonexistent/never-read.csv", m),
    "trajectory.linearize": lambda m: (m, np.zeros((2, 1 + BIPED_NQ + BIPED_NV)), np.zeros((2, m.nu))),
    "ik.solve": lambda m: (m, ik.Target(site=0, pos=[0, 0, 0])),
    "ik.residual": lambda m: (m, ik.Target(site=0, pos=[0, 0, 0])),
}


def _resolve(name: str):
    mod, _, attr = name.rpartition(".")
    return getattr({"trajectory": trajectory, "ik": ik}[mod], attr)


def _public_functions(module, names):
    out = {}
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            out[name] = list(inspect.signature(obj).parameters)
    return out


@pytest.fixture
def models():
    """Fresh biped and pendulum models with a Data each."""
    mb, mp = kd.models.load("biped"), kd.models.load("pendulum")
    return mb, kd.Data(mb), mp, kd.Data(mp)


# ---- every function is covered -----------------------------------------------------------------

def test_every_public_function_has_a_misuse_call():
    funcs = _public_functions(kd, kd.__all__)
    pair = {n for n, p in funcs.items() if p[:2] == ["m", "d"]}
    model_only = {n for n, p in funcs.items() if p[:1] == ["m"] and n not in pair}
    assert pair == set(PAIR_CALLS), "add the new (m, d) function to PAIR_CALLS"
    assert model_only == set(MODEL_CALLS), "add the new (m, ...) function to MODEL_CALLS"
    assert set(funcs) == pair | model_only, f"not taking m first: {set(funcs) - pair - model_only}"

    bfuncs = _public_functions(batch, batch.__all__)
    bpair = {n for n, p in bfuncs.items() if p[:2] == ["m", "bd"]}
    bmodel = {n for n, p in bfuncs.items() if p[:1] == ["m"] and n not in bpair}
    assert bpair == set(BATCH_PAIR_CALLS) and bmodel == set(BATCH_MODEL_CALLS)
    assert set(bfuncs) == bpair | bmodel

    others = set()
    for prefix, module, names in (("trajectory", trajectory, dir(trajectory)), ("ik", ik, ik.__all__)):
        for name, params in _public_functions(module, [n for n in names if not n.startswith("_")]).items():
            if getattr(module, name).__module__ == module.__name__ or prefix == "ik":
                if "m" in params:
                    others.add(f"{prefix}.{name}")
    assert others == set(OTHER_MODEL_CALLS), "add the new function taking m to OTHER_MODEL_CALLS"


# ---- (m, d) functions ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PAIR_CALLS))
def test_data_of_another_model_raises_valueerror(models, name):
    mb, db, mp, dp = models
    f, extra = getattr(kd, name), PAIR_CALLS[name]
    with pytest.raises(ValueError, match=MISMATCH):
        f(mb, dp, *extra)
    with pytest.raises(ValueError, match=r"nq=19 nv=18, not this one \(nq=1 nv=1\)"):
        f(mp, db, *extra)
    # a Data made for another Model object of the same sizes (the same file compiled twice)
    with pytest.raises(ValueError, match="same sizes"):
        f(kd.models.load("biped"), db, *extra)


@pytest.mark.parametrize("name", sorted(PAIR_CALLS))
def test_swapped_arguments_raise_typeerror(models, name):
    mb, db, mp, dp = models
    f, extra = getattr(kd, name), PAIR_CALLS[name]
    for m, d in ((mb, db), (mp, db), (mb, dp)):
        with pytest.raises(TypeError, match=rf"arguments swapped: call {name}\(m, d\)"):
            f(d, m, *extra)


@pytest.mark.parametrize("name", sorted(PAIR_CALLS))
def test_objects_of_other_types_raise_typeerror(models, name):
    mb, db, _, _ = models
    f, extra = getattr(kd, name), PAIR_CALLS[name]
    for bad in (None, 3, object(), np.zeros(BIPED_NQ), "biped", mb):
        with pytest.raises(TypeError, match=rf"{name}\(m, d\): d must be a kinedyn.Data, got"):
            f(mb, bad, *extra)
    for bad in (None, 3, object(), np.zeros(BIPED_NQ), "biped"):
        with pytest.raises(TypeError, match=rf"{name}\(m, d\): m must be a kinedyn.Model, got"):
            f(bad, db, *extra)
    with pytest.raises(TypeError, match="got Data; it is a Data: use d.model"):
        f(db, db, *extra)
    with pytest.raises(TypeError, match="got BatchData; for a batch"):
        f(mb, batch.BatchData(mb, 2), *extra)


@pytest.mark.parametrize("name", sorted(MODEL_CALLS))
def test_model_and_arrays_functions_check_the_model(models, name):
    mb, db, mp, _ = models
    f = getattr(kd, name)
    with pytest.raises(TypeError, match="needs a kinedyn.Model as m, got Data; it is a Data: use d.model"):
        f(db, *MODEL_CALLS[name]())
    with pytest.raises(TypeError, match="needs a kinedyn.Model"):
        f(None, *MODEL_CALLS[name]())
    if MODEL_CALLS[name]():  # arrays of the biped with the pendulum: a shape error naming the argument
        with pytest.raises(ValueError, match="qpos1? must have shape"):
            f(mp, *MODEL_CALLS[name]())
    f(mb, *MODEL_CALLS[name]())  # the table's call is valid


# ---- batch ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(BATCH_PAIR_CALLS))
def test_batch_misuse_raises(models, name):
    mb, db, mp, _ = models
    f, extra = getattr(batch, name), BATCH_PAIR_CALLS[name]
    bd, bdp = batch.BatchData(mb, 2), batch.BatchData(mp, 2)
    with pytest.raises(ValueError, match=BATCH_MISMATCH):
        f(mb, bdp, *extra)
    with pytest.raises(ValueError, match="same sizes"):
        f(kd.models.load("biped"), bd, *extra)
    with pytest.raises(TypeError, match=rf"arguments swapped: call kd.batch.{name}\(m, bd\)"):
        f(bd, mb, *extra)
    with pytest.raises(TypeError, match="BatchData, got Data; it is a single Data"):
        f(mb, db, *extra)
    with pytest.raises(TypeError, match="BatchData, got NoneType"):
        f(mb, None, *extra)
    with pytest.raises(TypeError, match="BatchData, got Model"):
        f(mb, mb, *extra)
    for bad in (None, db, "biped"):
        with pytest.raises(TypeError, match="needs a kinedyn.Model"):
            f(bad, bd, *extra)


@pytest.mark.parametrize("name", sorted(BATCH_MODEL_CALLS))
def test_batch_model_functions_check_the_model(models, name):
    _, db, _, _ = models
    f = getattr(batch, name)
    for bad in (None, db, batch.BatchData(db.model, 1)):
        with pytest.raises(TypeError, match="needs a kinedyn.Model"):
            f(bad, *BATCH_MODEL_CALLS[name]())


def test_batchdata_knows_its_model(models):
    mb, _, _, _ = models
    bd = batch.BatchData(mb, 3)
    assert bd.model is mb and all(bd[i].model is mb for i in range(3))
    kd.kinematics(mb, bd[1])  # a member is a Data of the model
    with pytest.raises(AttributeError):
        bd.model = kd.models.load("pendulum")
    with pytest.raises(TypeError, match=r"BatchData.qpos holds float64; cannot assign values of dtype c"):
        bd.qpos = np.zeros(BIPED_NQ, complex)
    with pytest.raises(TypeError):
        bd.qvel = "fast"
    with pytest.raises(TypeError, match="state"):
        batch.set_state(mb, bd, np.zeros(1 + BIPED_NQ + BIPED_NV, complex))
    with pytest.raises(ValueError, match="state must have shape"):
        batch.set_state(mb, bd, np.zeros(5))
    with pytest.raises(TypeError, match="control"):
        batch.rollout(mb, np.zeros(1 + BIPED_NQ + BIPED_NV), np.array(["a"] * mb.nu), 1)
    for site in (-1, mb.nsite):
        with pytest.raises(IndexError, match="site"):
            batch.jac_site(mb, bd, site)
    with pytest.raises(TypeError, match="site"):
        batch.jac_site(mb, bd, 0.0)


# ---- trajectory, ik -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(OTHER_MODEL_CALLS))
def test_trajectory_and_ik_check_the_model(models, name):
    _, db, _, _ = models
    f = _resolve(name)
    for bad in (db, None) if name != "trajectory.load" else (db,):  # load(path, m=None) is valid
        args = tuple(bad if a is db.model else a for a in OTHER_MODEL_CALLS[name](db.model))
        with pytest.raises(TypeError, match="kinedyn.Model"):
            f(*args)


# ---- the dangerous calls, in a subprocess -------------------------------------------------------

_SCRIPT = textwrap.dedent("""
    import kinedyn as kd
    from kinedyn.tools import batch

    mb, mp = kd.models.load("biped"), kd.models.load("pendulum")
    db, dp = kd.Data(mb), kd.Data(mp)
    bd = batch.BatchData(mb, 2)

    def attempt(tag, f, *args):
        try:
            f(*args)
        except (TypeError, ValueError) as err:
            print(f"{tag} {type(err).__name__}: {err}", flush=True)
        else:
            print(f"{tag} NO ERROR {f.__name__}", flush=True)

    for tag in ("before", "after"):
        for f in (kd.forward, kd.step, kd.kinematics):
            attempt(tag, f, mb, dp)   # Data of another model
            attempt(tag, f, mp, db)
            attempt(tag, f, db, mb)   # swapped
            attempt(tag, f, dp, mp)
            attempt(tag, f, mb, bd)   # BatchData
        attempt(tag, batch.forward, mp, bd)
        attempt(tag, batch.step, bd, mb)
        if tag == "before":  # bind FastEntry's compiled entry points
            for f in (kd.forward, kd.step, kd.kinematics):
                f(mb, db)
                f(mp, dp)
    print("survived", flush=True)
""")


def test_dangerous_calls_raise_in_a_subprocess():
    src = str(Path(kd.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env,
                          timeout=900, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert lines[-1] == "survived"
    assert not [line for line in lines if "NO ERROR" in line]
    for tag in ("before", "after"):
        mine = [line for line in lines if line.startswith(tag)]
        assert len(mine) == 3 * 5 + 2
        assert sum("forward(m, d): Data was made for a model with nq=1 nv=1," in x for x in mine) == 1
        assert sum("TypeError: arguments swapped: call step(m, d)" in x for x in mine) == 2
        assert sum("kinematics(m, d): d must be a kinedyn.Data, got BatchData" in x for x in mine) == 1
        assert sum("BatchData was made for a model with nq=19" in x for x in mine) == 1
        assert sum("arguments swapped: call kd.batch.step(m, bd)" in x for x in mine) == 1


# ---- Data fields ----------------------------------------------------------------------------------

def test_data_knows_its_model(models):
    mb, db, _, _ = models
    assert db.model is mb
    assert db.copy().model is mb
    with pytest.raises(AttributeError, match="fixed"):
        db.model = kd.models.load("pendulum")
    for name in ("_model", "_handle", "_time"):
        with pytest.raises(AttributeError):
            setattr(db, name, None)
    assert db.model is mb


@pytest.mark.parametrize("value", [np.zeros(BIPED_NQ, complex), 1j, np.array(["0"] * BIPED_NQ), "0.5",
                                   np.array([None] * BIPED_NQ), [object()] * BIPED_NQ])
def test_data_field_rejects_values_that_do_not_cast(models, value):
    _, d, _, _ = models
    before = d.qpos.copy()
    with pytest.raises(TypeError, match=r"Data.qpos holds float64; cannot assign values of dtype"):
        d.qpos = value
    np.testing.assert_array_equal(d.qpos, before)


def test_data_field_assignment(models):
    m, d, _, _ = models
    qpos = d.qpos
    with pytest.raises(ValueError, match=r"Data.qpos has shape \(19,\); cannot assign shape \(18,\)"):
        d.qpos = np.zeros(BIPED_NV)
    with pytest.raises(ValueError, match="Data.qvel"):
        d.qvel = [[1.0, 2.0], [3.0]]  # ragged
    # numbers that cast safely: ints, bools, float32, non-contiguous, a scalar, NaN
    d.qvel = np.arange(2 * BIPED_NV)[::2]
    d.ctrl = np.ones(m.nu, np.float32)
    d.qfrc_applied = True
    d.xfrc_applied = 0
    d.qpos[:] = 0.5  # in place, as always
    d.qpos = np.full(BIPED_NQ, np.nan)
    assert d.qpos is qpos and np.isnan(qpos).all() and d.qvel[3] == 6 and d.qfrc_applied[0] == 1
    # the field is never rebound: the kernels keep seeing the same array
    d.qpos = np.zeros(2 * BIPED_NQ)[::2]
    assert d.qpos is qpos and d.qpos.flags.c_contiguous and d.qpos.dtype == np.float64
    with pytest.raises(AttributeError):
        del d.qpos
    assert d.qpos is qpos
    with pytest.raises(TypeError):
        d.time = "late"
    with pytest.raises(TypeError):
        d.time = 1j


def test_nan_state_is_allowed_and_step_resets(models):
    m, d, _, _ = models
    d.qvel = np.nan
    with pytest.warns(kd.NonFiniteStateWarning, match="qvel"):
        kd.step(m, d)
    assert np.isfinite(d.qvel).all()


# ---- Model fields and options ---------------------------------------------------------------------

def test_model_field_assignment(models):
    m, _, _, _ = models
    mass = m.body_mass
    with pytest.raises(TypeError, match=r"Model.body_mass holds float64; cannot assign values of dtype c"):
        m.body_mass = np.ones(m.nbody, complex)
    with pytest.raises(TypeError, match="Model.body_mass"):
        m.body_mass = "heavy"
    with pytest.raises(ValueError, match="Model.body_mass has shape"):
        m.body_mass = np.ones(m.nbody + 1)
    with pytest.raises(TypeError, match="Model.jnt_limited"):
        m.jnt_limited = np.ones(m.njnt)  # floats into a flag field
    m.jnt_limited = np.ones(m.njnt, int)
    m.body_mass = np.arange(m.nbody)
    assert m.body_mass is mass and m.body_mass[3] == 3.0
    # fields that index other arrays are fixed at compile time
    for name in ("jnt_qposadr", "body_parentid", "M_colind", "jnt_type", "actuator_trnid"):
        with pytest.raises(AttributeError, match=f"Model.{name} is fixed at compile time"):
            setattr(m, name, getattr(m, name).copy())
        # ... and read-only in place too: a write into them would send the kernels out of bounds
        with pytest.raises(ValueError, match="read-only"):
            getattr(m, name)[...] = 99
    for name in ("_handle", "_name_index", "nq", "opt"):
        with pytest.raises(AttributeError):
            setattr(m, name, None)
    with pytest.raises(AttributeError):
        del m.body_mass
    assert m.body_mass is mass


def test_option_assignment(models):
    m, d, _, _ = models
    for bad in (0.0, -1e-3, np.inf, np.nan):
        with pytest.raises(ValueError, match="timestep must be finite and positive"):
            m.opt.timestep = bad
    for bad in ("0.01", None, 1j, True):
        with pytest.raises(TypeError, match="timestep"):
            m.opt.timestep = bad
    for bad in ([0, 0, np.nan], [0, 0, np.inf], [1, 2], np.zeros((3, 3))):
        with pytest.raises(ValueError, match="gravity"):
            m.opt.gravity = bad
    with pytest.raises(TypeError, match="gravity"):
        m.opt.gravity = ["a", "b", "c"]
    with pytest.raises(ValueError, match="integrator"):
        m.opt.integrator = 5
    with pytest.raises(ValueError, match="model file"):  # discrete: chosen where it is checked
        m.opt.integrator = 4
    with pytest.raises(TypeError, match="integrator"):
        m.opt.integrator = 1.0
    for name in ("disableflags", "enableflags"):
        with pytest.raises(ValueError, match=name):
            setattr(m.opt, name, -1)
        with pytest.raises(TypeError, match=name):
            setattr(m.opt, name, "all")
    with pytest.raises(AttributeError):
        m.opt.timestpe = 0.01  # misspelt: raises instead of doing nothing
    with pytest.raises(AttributeError, match="internal"):
        m.opt._timestep = np.array([0.01])
    assert m.opt.timestep == 0.002 and m.opt.gravity.tolist() == [0, 0, -9.81]
    m.opt.timestep = 0.004
    m.opt.gravity = 0.0  # one number for all three
    m.opt.gravity = np.array([0, 0, -1], np.int64)
    assert m.opt.timestep == 0.004 and m.opt.gravity.tolist() == [0, 0, -1]
    kd.step(m, d)
    assert d.time == 0.004


def test_model_copy_is_another_model(models):
    m, d, _, _ = models
    for c in (m.copy(), copy.copy(m), copy.deepcopy(m)):
        assert c.nq == m.nq and not np.shares_memory(c.body_mass, m.body_mass)
        c.body_mass = 1.0
        c.opt.timestep = 0.01
        assert m.body_mass[1] != 1.0 and m.opt.timestep == 0.002
        with pytest.raises(ValueError, match="another Model object of the same sizes"):
            kd.forward(c, d)  # a Data of the original is not the copy's
        dc = kd.Data(c)
        kd.forward(c, dc)
        with pytest.raises(ValueError, match="same sizes"):
            kd.forward(m, dc)
    c = m.copy()
    kd.forward(m, d)
    dc = kd.Data(c)
    kd.forward(c, dc)
    np.testing.assert_array_equal(d.qacc, dc.qacc)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(m)


# ---- arrays passed to functions -------------------------------------------------------------------

def test_rne_out_is_checked(models):
    m, d, _, _ = models
    kd.forward(m, d)
    ro = np.zeros(m.nv)
    ro.flags.writeable = False
    for bad, err, what in ((np.zeros(2 * m.nv)[::2], ValueError, "C-contiguous"),
                           (ro, ValueError, "read-only"),
                           (np.zeros(m.nv, np.float32), ValueError, "float64"),
                           (np.zeros(m.nv + 1), ValueError, "shape"),
                           ([0.0] * m.nv, TypeError, "numpy array")):
        with pytest.raises(err, match=f"rne: out.*{what}"):
            kd.rne(m, d, out=bad)
    out = np.zeros(m.nv)
    assert kd.rne(m, d, out=out) is out


def test_solve_m_and_mul_m_check_their_vectors(models):
    m, d, _, _ = models
    kd.forward(m, d)
    for f, name in ((kd.solve_m, "solve_m: y"), (kd.mul_m, "mul_m: vec")):
        with pytest.raises(TypeError, match=name):
            f(m, d, np.zeros(m.nv, complex))
        with pytest.raises(TypeError, match=name):
            f(m, d, ["1"] * m.nv)
        with pytest.raises(ValueError):
            f(m, d, np.zeros(m.nv + 1))
        # non-contiguous or read-only input is converted (only read)
        src = np.arange(2.0 * m.nv)[::2]
        src.flags.writeable = False
        assert f(m, d, src).shape == (m.nv,)
    np.testing.assert_allclose(kd.mul_m(m, d, kd.solve_m(m, d, np.ones(m.nv))), np.ones(m.nv))
    with pytest.raises(ValueError):
        kd.solve_m(m, d, np.zeros((2, 3, m.nv)))


def test_integrate_and_differentiate_pos_check_their_arrays(models):
    m, d, _, _ = models
    qv = np.zeros(m.nv)
    ro = m.qpos0.copy()
    ro.flags.writeable = False
    for bad, err, what in ((np.zeros(2 * m.nq)[::2], ValueError, "C-contiguous"),
                           (ro, ValueError, "read-only"),
                           (np.zeros(m.nq, np.float32), ValueError, "float64"),
                           (np.zeros(m.nq - 1), ValueError, "shape"),
                           (list(m.qpos0), TypeError, "numpy array")):
        with pytest.raises(err, match=f"integrate_pos: qpos.*{what}"):
            kd.integrate_pos(m, bad, qv, 0.1)
    q = m.qpos0.copy()
    with pytest.raises(ValueError, match="integrate_pos: qvel must have shape"):
        kd.integrate_pos(m, q, np.zeros(m.nv + 1), 0.1)
    with pytest.raises(TypeError, match="integrate_pos: qvel"):
        kd.integrate_pos(m, q, np.zeros(m.nv, complex), 0.1)
    with pytest.raises(TypeError, match="integrate_pos: h"):
        kd.integrate_pos(m, q, qv, "0.1")
    kd.integrate_pos(m, d.qpos, np.arange(2.0 * m.nv)[::2], 0.1)  # d.qpos qualifies; qvel is converted

    q1 = m.qpos0
    for bad in (np.zeros(2 * m.nv)[::2], np.zeros(m.nv, np.int64), np.zeros(m.nv + 1)):
        with pytest.raises((ValueError, TypeError), match="differentiate_pos: out"):
            kd.differentiate_pos(m, q1, q1, 0.1, out=bad)
    with pytest.raises(ValueError, match="differentiate_pos: qpos2 must have shape"):
        kd.differentiate_pos(m, q1, q1[:-1], 0.1)
    with pytest.raises(TypeError, match="differentiate_pos: qpos1"):
        kd.differentiate_pos(m, q1.astype(complex), q1, 0.1)
    with pytest.raises(ValueError, match="non-zero"):
        kd.differentiate_pos(m, q1, q1, 0)
    np.testing.assert_array_equal(kd.differentiate_pos(m, q1, q1, 0.1), np.zeros(m.nv))


def test_jacobian_arguments_are_checked(models):
    m, d, _, _ = models
    kd.forward(m, d)
    for f, n in ((kd.jac_body, m.nbody), (kd.jac_body_com, m.nbody), (kd.jac_site, m.nsite)):
        for i in (-1, n, 10**9):
            with pytest.raises(IndexError, match="out of range"):
                f(m, d, i)
        for i in (1.0, True, None, np.array([1])):
            with pytest.raises(TypeError, match="must be an integer id"):
                f(m, d, i)
        f(m, d, np.int32(0))
    for f in (kd.jac, kd.jac_point):
        with pytest.raises(ValueError, match=r"point must have shape \(3,\)"):
            f(m, d, np.zeros(2), 1)
        with pytest.raises(TypeError, match="point"):
            f(m, d, np.zeros(3, complex), 1)
        with pytest.raises(IndexError):
            f(m, d, np.zeros(3), m.nbody)
        jacp, _ = f(m, d, np.arange(6.0)[::2], 1)  # non-contiguous point: converted
        assert jacp.shape == (3, m.nv)


def test_ik_and_inverse_actuation_check_their_vectors(models):
    m, d, mp, dp = models
    with pytest.raises(TypeError, match="qpos"):
        ik.solve(m, ik.Target(site=0, pos=[0, 0, 0]), qpos=np.zeros(m.nq, complex))
    q = mp.qpos0 + 0.3
    start = q.copy()
    ik.solve(mp, ik.Target(body=1, pos=[0, 0, 0]), qpos=q, max_iter=3, restarts=0)
    assert np.array_equal(q, start)  # the caller's array is not overwritten
    with pytest.raises(TypeError, match="qacc"):
        kd.inverse_actuation(mp, dp, qacc=np.zeros(1, complex))
    with pytest.raises(ValueError, match="qacc"):
        kd.inverse_actuation(mp, dp, qacc=np.zeros(2))


def test_a_model_with_its_data_is_collected():
    import gc
    import weakref

    m = kd.models.load("pendulum")
    d, bd = kd.Data(m), batch.BatchData(m, 2)
    member = bd[1]
    kd.forward(m, member)
    ref = weakref.ref(m)
    del m, d, bd, member
    gc.collect()
    assert ref() is None
