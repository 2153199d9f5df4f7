"""MuJoCo's sparse constraint path (jacobian="sparse", or "auto" and nv >= 60) against MuJoCo 4.0.

On that path MuJoCo keeps each efc_J row over its own pattern (the dofs the row can touch,
structural zeros included) and sums J v over the pattern in mju_dotSparse's order, so efc_vel,
efc_aref and efc_b round differently from the dense path's mju_dot over all dofs. A small model
forced onto the sparse path (a floating base with two legs, a connect between the feet, floor
contacts and a leg-leg pair: patterns that drop the common ancestors of a contact's bodies and
keep them for a connect) checks the patterns and those sums bit for bit, and the solution
(Newton, noslip) at the oracle's bar.
"""

from __future__ import annotations

import ctypes

import mujoco
import numpy as np
import pytest
from oracle import libmujoco

import kinedyn as kd

XML = """
<mujoco>
  <option jacobian="sparse" noslip_iterations="4" timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="3 3 0.1"/>
    <body name="base" pos="0 0 0.32">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body pos="0.15 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.05 0 -0.15" size="0.03"/>
        <body pos="0.05 0 -0.15">
          <joint type="hinge" axis="0 1 0"/>
          <joint type="hinge" axis="1 0 0"/>
          <geom name="ga" type="capsule" fromto="0 0 0 -0.05 0 -0.15" size="0.03"/>
          <site name="t1" pos="-0.05 0 -0.15"/>
        </body>
      </body>
      <body pos="-0.15 0 0">
        <joint type="ball"/>
        <geom name="gb" type="capsule" fromto="0 0 0 0.05 0 -0.15" size="0.03"/>
        <body pos="0.05 0 -0.15">
          <joint type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.04" pos="0 0 -0.12"/>
          <site name="t2" pos="0 0 -0.12"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality><connect site1="t1" site2="t2"/></equality>
  <contact><pair geom1="ga" geom2="gb" margin="1"/></contact>
</mujoco>
"""


@pytest.fixture(scope="module")
def models():
    return kd.Model.from_xml_string(XML), mujoco.MjModel.from_xml_string(XML)


def _states(mjm, count=5):
    rng = np.random.default_rng(3)
    for _ in range(count):
        q = mjm.qpos0.copy()
        q[2] = 0.25 + 0.05 * rng.random()
        q[7:] += 0.4 * rng.standard_normal(mjm.nq - 7)
        q[3:7] = [1, 0.1 * rng.standard_normal(), 0.1 * rng.standard_normal(), 0]
        for j in range(mjm.njnt):  # unit quaternions
            if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
                a = mjm.jnt_qposadr[j] + (3 if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 0)
                q[a:a + 4] /= np.linalg.norm(q[a:a + 4])
        yield q, rng.standard_normal(mjm.nv)


def test_sparse_rows_are_mujocos_bits(models):
    m, mjm = models
    assert mujoco.mj_isSparse(mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    kinds = set()
    for qpos, qvel in _states(mjm):
        d.qpos[:], d.qvel[:] = qpos, qvel
        mjd.qpos[:], mjd.qvel[:] = qpos, qvel
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        n = mjd.nefc
        assert d.nefc == n
        kinds.update(int(t) for t in mjd.efc_type[:n])
        for i in range(n):
            adr, nnz = mjd.efc_J_rowadr[i], mjd.efc_J_rownnz[i]
            assert list(d.scratch_efc_colind[i, :d.scratch_efc_rownnz[i]]) == \
                list(mjd.efc_J_colind[adr:adr + nnz]), f"row {i}'s pattern"
        for name in ("efc_vel", "efc_aref", "efc_b"):
            np.testing.assert_array_equal(getattr(d, name), getattr(mjd, name)[:n], err_msg=name)
        for name in ("efc_force", "qacc"):
            np.testing.assert_allclose(getattr(d, name), getattr(mjd, name)[:len(getattr(d, name))],
                                       rtol=1e-9, atol=1e-12, err_msg=name)
    c = mujoco.mjtConstraint
    assert {int(c.mjCNSTR_EQUALITY), int(c.mjCNSTR_CONTACT_PYRAMIDAL)} <= kinds


# ---- Newton's numeric factor against MuJoCo 4.0's mju_cholFactorNumeric ---------------------------
#
# libmujoco exports the sparse reverse Cholesky (absent from the Python bindings): called through
# ctypes on the pattern MuJoCo's own mju_cholFactorSymbolic computes, and compared bit for bit with
# solver_sparse.factor on the same H (kinedyn's dense storage, the pattern from solver_sparse's
# eliminate). In 4.0 the last argument is an n-vector of work space that it leaves zeroed (the
# public 3.x source passes mjData* for its stack).

_NMAX = 96  # the largest matrix: the Data below has nv = _NMAX (dmc-dog has 85 dofs)


def _libmujoco():
    """libmujoco with the argument types of its sparse Cholesky (symbolic and numeric)."""
    lib = libmujoco("mju_cholFactorSymbolic", "mju_cholFactorNumeric")
    ints = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")
    reals = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
    lib.mju_cholFactorSymbolic.restype = ctypes.c_int
    lib.mju_cholFactorSymbolic.argtypes = [ctypes.c_void_p] * 7 + [ints] * 3 + [ctypes.c_int, ctypes.c_void_p]
    lib.mju_cholFactorNumeric.restype = ctypes.c_int
    lib.mju_cholFactorNumeric.argtypes = ([reals, ctypes.c_int, ctypes.c_double] + [ints] * 7
                                          + [reals] + [ints] * 3 + [reals])
    return lib


def _csr(mask):
    rownnz = mask.sum(1).astype(np.int32)
    rowadr = np.concatenate([[0], np.cumsum(rownnz)[:-1]]).astype(np.int32)
    colind = np.nonzero(mask)[1].astype(np.int32)  # row-major: each row's columns ascending
    return rownnz, rowadr, colind


def _ptr(array):
    return array.ctypes.data


def _mujoco_factor(lib, H, mask, mindiag):
    """MuJoCo's factor of H (symmetric, pattern mask) as a dense lower triangle, the rank, and
    its visiting lists (LT's rows without the diagonal)."""
    n = H.shape[0]
    upper, lower = _csr(np.triu(mask)), _csr(np.tril(mask))
    L_rownnz, L_rowadr, LT_rownnz, LT_rowadr = (np.zeros(n, np.int32) for _ in range(4))
    # counting pass (NULL column arrays), then the filling pass; d = NULL: MuJoCo allocates
    nL = lib.mju_cholFactorSymbolic(None, _ptr(L_rownnz), _ptr(L_rowadr), None, _ptr(LT_rownnz),
                                    _ptr(LT_rowadr), None, *upper, n, None)
    L_colind, LT_colind, LT_map = (np.zeros(nL, np.int32) for _ in range(3))
    lib.mju_cholFactorSymbolic(_ptr(L_colind), _ptr(L_rownnz), _ptr(L_rowadr), _ptr(LT_colind),
                               _ptr(LT_rownnz), _ptr(LT_rowadr), _ptr(LT_map), *upper, n, None)
    values = H[np.tril(mask)].astype(np.float64)  # row-major, as _csr lists them
    factor, work = np.zeros(nL), np.zeros(n)
    rank = lib.mju_cholFactorNumeric(factor, n, mindiag, L_rownnz, L_rowadr, L_colind, LT_rownnz, LT_rowadr,
                                     LT_colind, LT_map, values, *lower, work)
    assert not work.any()
    dense = np.zeros((n, n))
    lists = []
    for r in range(n):
        adr = L_rowadr[r]
        dense[r, L_colind[adr:adr + L_rownnz[r]]] = factor[adr:adr + L_rownnz[r]]
        lists.append(list(LT_colind[LT_rowadr[r] + 1:LT_rowadr[r] + LT_rownnz[r]]))
    return dense, rank, lists


@pytest.fixture(scope="module")
def big_data():
    body = "".join('<body pos="0 0 0.1"><joint type="hinge" axis="0 1 0"/><geom size="0.05"/>'
                   for _ in range(_NMAX)) + "</body>" * _NMAX
    return kd.Data(kd.Model.from_xml_string(f"<mujoco><worldbody>{body}</worldbody></mujoco>"))


def _kinedyn_factor(d, H, mask, mindiag):
    """solver_sparse's pattern and factor of H (symmetric, pattern mask) on d's scratch; mindiag
    must be MINVAL."""
    from kinedyn.engine import solver_sparse
    from kinedyn.engine.types import MINVAL

    assert mindiag == MINVAL
    n = H.shape[0]
    d.scratch_spchol[0][:n, :n] = np.tril(mask)
    solver_sparse.eliminate(d._handle, n)
    L = np.ascontiguousarray(np.tril(H))
    rank = solver_sparse.factor(d._handle, L, n, np.zeros(n))
    lists = [list(d.scratch_spchol[2][r, :d.scratch_spchol_n[0][r]]) for r in range(n)]
    return np.tril(L), rank, lists


def _tree_hessian(rng, n):
    """A random SPD matrix over a random kinematic tree's pattern (each dof's ancestors), plus a
    few constraint rows' cliques over random dof sets (rows coupling branches make fill-in)."""
    parent = [-1] + [i - 1 if rng.random() < rng.random() else int(rng.integers(0, i)) for i in range(1, n)]
    mask = np.eye(n, dtype=bool)
    for i in range(n):
        j = parent[i]
        while j >= 0:
            mask[i, j] = mask[j, i] = True
            j = parent[j]
    for _ in range(int(rng.integers(0, 4))):
        dofs = rng.choice(n, int(rng.integers(2, min(n, 6) + 1)), replace=False)
        mask[np.ix_(dofs, dofs)] = True
    A = rng.standard_normal((n, n)) * mask
    H = A.T @ A + np.diag(rng.random(n) * n + 1.0)
    return np.where(mask, H, 0.0), mask


def _compare(lib, d, H, mask):
    """The number of factor entries that differ (nan equal to nan), of the factor's pattern,
    and the rank."""
    from kinedyn.engine.types import MINVAL

    theirs, rank, lists = _mujoco_factor(lib, H, mask, MINVAL)
    ours, our_rank, our_lists = _kinedyn_factor(d, H, mask, MINVAL)
    assert our_lists == lists and our_rank == rank
    lower = np.tril(np.ones_like(mask))
    ours, theirs = ours[lower], theirs[lower]
    differ = ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs)))
    return int(differ.sum()), int(d.scratch_spchol[1][:len(H), :len(H)].sum()), rank


def test_factor_is_mujocos_bits_on_random_tree_hessians(big_data):
    lib = _libmujoco()
    rng = np.random.default_rng(12)
    differ = total = 0
    for _ in range(400):
        n = int(rng.integers(2, 41))
        bad, count, _ = _compare(lib, big_data, *_tree_hessian(rng, n))
        differ += bad
        total += count
    assert differ == 0, f"{differ} of {total} factor entries differ from mju_cholFactorNumeric"


def _dog_hessian():
    """H = M + J' D J of dmc-dog at the corpus's random state, over the pattern MuJoCo's sparse
    Newton factors (M's tree pattern and a clique per constraint row's sparse pattern, whatever
    the row's state; D the quadratic rows' efc_D)."""
    from corpus import CORPUS
    from strategies import random_state
    from thirdparty import require

    entry = next(e for e in CORPUS if e.name == "dmc-dog")
    mjm = mujoco.MjModel.from_xml_path(str(require(entry.package) / entry.path))
    mjd = mujoco.MjData(mjm)
    qpos, qvel, ctrl, act = random_state(np.random.default_rng(sum(map(ord, entry.name))), mjm)
    mjd.qpos[:], mjd.qvel[:], mjd.ctrl[:], mjd.act[:] = qpos, qvel, ctrl, act
    mujoco.mj_forward(mjm, mjd)
    nv, nefc = mjm.nv, mjd.nefc
    assert mujoco.mj_isSparse(mjm) and nefc > 0
    mask = np.eye(nv, dtype=bool)
    for i in range(nv):
        cols = mjm.M_colind[mjm.M_rowadr[i]:mjm.M_rowadr[i] + mjm.M_rownnz[i]]
        mask[i, cols] = mask[cols, i] = True
    J = np.zeros((nefc, nv))
    for i in range(nefc):
        adr, nnz = mjd.efc_J_rowadr[i], mjd.efc_J_rownnz[i]
        cols = mjd.efc_J_colind[adr:adr + nnz]
        J[i, cols] = mjd.efc_J[adr:adr + nnz]
        mask[np.ix_(cols, cols)] = True
    M = np.zeros((nv, nv))
    mujoco.mj_fullM(mjm, mjd, M)
    quadratic = mjd.efc_state[:nefc] == mujoco.mjtConstraintState.mjCNSTRSTATE_QUADRATIC
    D = np.where(quadratic, mjd.efc_D[:nefc], 0.0)
    return np.where(mask, M + J.T @ (D[:, None] * J), 0.0), mask


def test_factor_is_mujocos_bits_on_the_dog_hessian(big_data):
    lib = _libmujoco()
    H, mask = _dog_hessian()
    bad, count, _ = _compare(lib, big_data, H, mask)
    assert bad == 0, f"{bad} of {count} factor entries differ from mju_cholFactorNumeric"


def test_factor_is_mujocos_bits_when_pivots_are_clamped(big_data):
    """Semidefinite and indefinite H: pivots below MINVAL raised to it, the rank counted, and
    (MuJoCo 4.0) the clamped row's off-diagonal entries zero."""
    lib = _libmujoco()
    rng = np.random.default_rng(13)
    differ = total = deficient = 0
    for k in range(150):
        n = int(rng.integers(2, 25))
        _, mask = _tree_hessian(rng, n)
        if k % 3:
            A = rng.standard_normal((int(rng.integers(1, n + 1)), n))  # rank below n
            H = A.T @ A
        else:
            H = rng.standard_normal((n, n))
            H = H + H.T
        H = np.where(mask, H, 0.0)
        bad, count, rank = _compare(lib, big_data, H, mask)
        differ += bad
        total += count
        deficient += rank < n
    assert differ == 0, f"{differ} of {total} factor entries differ from mju_cholFactorNumeric"
    assert deficient > 100
