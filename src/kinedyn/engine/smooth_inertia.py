"""Position stage, part 2: the joint-space inertia matrix and its factorisation.

Mirrors ``mj_crb``, ``mj_factorM``/``mj_factorI``, ``mj_solveM``/``mj_solveLD`` and
``mj_mulM`` (MuJoCo engine_core_smooth.c, engine_support.c).

``M`` is stored as MuJoCo 4.0 stores it: the lower triangle, tree-sparse, row by
row (``M_rowadr``, ``M_rownnz``, ``M_colind``). Row i holds the dofs on the path
from the root to dof i, in ascending order, with the diagonal last. Because the
ancestors of an ancestor are a prefix of that path, the factorisation
M = L^T D L fills no new entries: ``qLD`` has the same layout as ``M``.
"""

from __future__ import annotations

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import OutArgument, bad_model_data, check_model_data, float_array
from kinedyn.engine.util_poly import actuator_armature as actuator_armature_of
from kinedyn.engine.util_spatial import mul_inert_vec, unsigned_index


# Inlined into crb_entry, as smooth_kinematics._body_poses (docs/benchmarks.md, speed history).
@kernel(inline="always")
def _crb(
    # model
    body_parentid, dof_bodyid, dof_parentid, dof_armature, M_rownnz, M_rowadr,
    # model: the simple dofs' constant diagonal, used when use_m0 (not while computing it: set_m0_entry)
    dof_simplenum, dof_M0, use_m0,
    # model: the armature actuators add to their joints (util_poly.actuator_armature)
    dof_jntid, jnt_actuatorid, actuator_armature, actuator_gear, actuator_trnid, actuator_trntype,
    # data in
    cinert, cdof,
    # data out
    crb, M,
    # scratch: one 6-vector row
    buf,
):
    nbody = body_parentid.shape[0]
    nv = dof_bodyid.shape[0]

    # crb = cinert, then backward pass over bodies: add each composite inertia to its parent
    for b in range(nbody):
        for k in range(10):
            crb[b, k] = cinert[b, k]
    for b in range(nbody - 1, 0, -1):
        p = body_parentid[b]
        if p > 0:
            for k in range(10):
                crb[p, k] += crb[b, k]

    # M(i, j) = cdof_j . (crb_body(i) cdof_i) for every ancestor j of i; armature on the diagonal
    # (the dof's, plus gear[0]^2 times that of the actuators on its joint).
    # Rows of "simple" dofs (see M_rownnz) store only the diagonal: their couplings are zero.
    # Each stored entry is written exactly once, so M needs no zero fill first.
    for i in range(nv):
        start = M_rowadr[i]
        if use_m0 and dof_simplenum[i]:
            # a simple dof (its body's inertia is diagonal in the dof's frame): M's constant diagonal,
            # computed once at qpos0 (mj_crb reads dof_M0; the same value to rounding, MuJoCo's bits)
            M[start] = dof_M0[i]
            continue
        adr = start + M_rownnz[i] - 1
        mul_inert_vec(buf, 0, crb, unsigned_index(dof_bodyid[i]), cdof, i)
        # crb_i cdof_i in locals, not read from buf: the compiler cannot rule out that stores
        # to M alias buf, so a dot6 with buf would reload it for every ancestor
        f0, f1, f2, f3, f4, f5 = buf[0, 0], buf[0, 1], buf[0, 2], buf[0, 3], buf[0, 4], buf[0, 5]
        j = unsigned_index(i)
        armature = dof_armature[i]
        jnt = dof_jntid[i]
        if jnt_actuatorid[jnt] != -1:
            armature += actuator_armature_of(jnt_actuatorid[jnt], jnt, False, actuator_armature,
                                             actuator_gear, actuator_trnid, actuator_trntype)
        M[adr] = armature + _dot6_with(cdof, j, f0, f1, f2, f3, f4, f5)
        adr -= 1
        while adr >= start:
            j = unsigned_index(dof_parentid[j])
            M[adr] = _dot6_with(cdof, j, f0, f1, f2, f3, f4, f5)
            adr -= 1


@kernel
def _dot6_with(vec, j, f0, f1, f2, f3, f4, f5):
    """vec[j] . (f0, ..., f5), summed in dot6's (mju_dot's) order; bit-equal M (mj_makeM)."""
    return (((vec[j, 0] * f0 + vec[j, 2] * f2) + (vec[j, 1] * f1 + vec[j, 3] * f3))
            + (vec[j, 4] * f4 + vec[j, 5] * f5))


# Inlined into its three callers (factor_m_entry's _factor_m, the Euler and implicitfast steps):
# as a call its five arrays were passed field by field on every factorisation.
@kernel(inline="always")
def factor_i(mat, diaginv, M_rownnz, M_rowadr, M_colind):
    """In-place tree-sparse L^T D L factorisation of an SPD matrix in M's layout (mj_factorI).

    On return the strictly lower part of each row holds L, the diagonal holds D, and
    ``diaginv`` = 1 / D.
    """
    nv = M_rownnz.shape[0]
    # Addresses are unsigned (unsigned_index): no negative-index wraparound on every access.
    # backward loop over rows: eliminate row k from the rows of its ancestors
    for k in range(nv - 1, -1, -1):
        start = M_rowadr[k]
        diag = M_rownnz[k] - 1
        end = start + diag
        row_k = unsigned_index(start)
        inv_d = 1.0 / mat[unsigned_index(end)]
        diaginv[k] = inv_d
        # L(i, 0..i) -= L(k, 0..i) * L(k, i) / D(k) for each ancestor i of k;
        # row i's entries are the first rownnz[i] entries of row k (its ancestor path)
        for signed_adr in range(end - 1, start - 1, -1):
            adr = unsigned_index(signed_adr)
            i = unsigned_index(M_colind[adr])
            scale = -mat[adr] * inv_d
            row_i = unsigned_index(M_rowadr[i])
            for t in range(unsigned_index(M_rownnz[i])):
                mat[row_i + t] += scale * mat[row_k + t]
        # L(k, :) /= D(k)
        for t in range(unsigned_index(diag)):
            mat[row_k + t] *= inv_d


# Inlined: as a call (one per row of each solve_ld) its three arrays are passed field by field,
# which cost solve_ld 400 ns instead of 290 on the humanoid (MuJoCo's mj_solveM: 240).
@kernel(inline="always")
def dot_sparse(vec1, adr, vec2, ind, nnz):
    """sum_t vec1[adr + t] vec2[ind[adr + t]] for t < nnz in mju_dotSparse's order: four
    running lane sums over whole blocks of four, combined as (s0 + s2) + (s1 + s3), then the
    remaining terms one by one (fewer than four terms: left to right)."""
    if nnz < 4:
        res = 0.0
        for t in range(nnz):
            res += vec1[adr + t] * vec2[unsigned_index(ind[adr + t])]
        return res
    s0 = vec1[adr] * vec2[unsigned_index(ind[adr])]
    s1 = vec1[adr + 1] * vec2[unsigned_index(ind[adr + 1])]
    s2 = vec1[adr + 2] * vec2[unsigned_index(ind[adr + 2])]
    s3 = vec1[adr + 3] * vec2[unsigned_index(ind[adr + 3])]
    t = 4
    while t + 4 <= nnz:
        s0 += vec1[adr + t] * vec2[unsigned_index(ind[adr + t])]
        s1 += vec1[adr + t + 1] * vec2[unsigned_index(ind[adr + t + 1])]
        s2 += vec1[adr + t + 2] * vec2[unsigned_index(ind[adr + t + 2])]
        s3 += vec1[adr + t + 3] * vec2[unsigned_index(ind[adr + t + 3])]
        t += 4
    res = (s0 + s2) + (s1 + s3)
    while t < nnz:
        res += vec1[adr + t] * vec2[unsigned_index(ind[adr + t])]
        t += 1
    return res


# Inlined into its callers (fwd_acceleration, dual_finish, the integrators, ...): as a call its six
# arrays are passed field by field, four solves per RK4 stage.
@kernel(inline="always")
def solve_ld(x, qLD, qLDiagInv, M_rownnz, M_rowadr, M_colind):
    """In place x <- (L^T D L)^-1 x for one vector (mj_solveLD).

    Addresses and dof numbers are unsigned, as in factor_i (see unsigned_index).
    """
    nv = M_rownnz.shape[0]
    # x <- L^-T x
    for i in range(nv - 1, -1, -1):
        xi = x[i]
        if xi != 0.0:
            start = unsigned_index(M_rowadr[i])
            for t in range(unsigned_index(M_rownnz[i] - 1)):
                x[unsigned_index(M_colind[start + t])] -= qLD[start + t] * xi
    # x <- D^-1 x
    for i in range(nv):
        x[i] *= qLDiagInv[i]
    # x <- L^-1 x
    for i in range(nv):
        start = unsigned_index(M_rowadr[i])
        x[i] -= dot_sparse(qLD, start, x, M_colind, unsigned_index(M_rownnz[i] - 1))


@kernel
def mul_m_kernel(res, M, vec, M_rownnz, M_rowadr, M_colind):
    """res = M vec using the symmetric tree-sparse lower triangle (mj_mulM).

    Addresses and dof numbers are unsigned, as in factor_i (see unsigned_index).
    """
    nv = M_rownnz.shape[0]
    for i in range(nv):
        res[i] = 0.0
    for i in range(nv):
        start = unsigned_index(M_rowadr[i])
        diag = unsigned_index(M_rownnz[i] - 1)
        # diagonal, then off-diagonal (i, j) and its mirror (j, i), the off-diagonals from the
        # last (nearest ancestor) to the first as mju_mulSymVecSparse; row i's own sum is kept
        # in a local (no later row of this loop writes res[i] before row i is done)
        acc = res[i] + M[start + diag] * vec[i]
        for t in range(diag - 1, -1, -1):
            j = unsigned_index(M_colind[start + t])
            acc += M[start + t] * vec[j]
            res[j] += M[start + t] * vec[i]
        res[i] = acc


@handle_entry
def crb_entry(m, d):
    _crb(m.body_parentid, m.dof_bodyid, m.dof_parentid, m.dof_armature, m.M_rownnz, m.M_rowadr,
         m.dof_simplenum, m.dof_M0, True,
         m.dof_jntid, m.jnt_actuatorid, m.actuator_armature, m.actuator_gear, m.actuator_trnid,
         m.actuator_trntype, d.cinert, d.cdof, d.crb, d.M, d.scratch_vec)


@handle_entry
def set_m0_entry(m, d):
    """dof_M0 = M's diagonal at d's state (qpos0), every dof computed as a general one (mj_setM0:
    armature + cdof_i . (crb_i cdof_i), in the order mj_crb sums it)."""
    _crb(m.body_parentid, m.dof_bodyid, m.dof_parentid, m.dof_armature, m.M_rownnz, m.M_rowadr,
         m.dof_simplenum, m.dof_M0, False,
         m.dof_jntid, m.jnt_actuatorid, m.actuator_armature, m.actuator_gear, m.actuator_trnid,
         m.actuator_trntype, d.cinert, d.cdof, d.crb, d.M, d.scratch_vec)
    for i in range(m.nv):
        m.dof_M0[i] = d.M[m.M_rowadr[i] + m.M_rownnz[i] - 1]


@kernel(inline="always")
def _factor_m(M, qLD, qLDiagInv, M_rownnz, M_rowadr, M_colind):
    """qLD = M, then factorise it in place (mj_factorM). A plain loop copies faster than
    a slice assignment."""
    for t in range(M.shape[0]):
        qLD[t] = M[t]
    factor_i(qLD, qLDiagInv, M_rownnz, M_rowadr, M_colind)


@handle_entry
def factor_m_entry(m, d):
    _factor_m(d.M, d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)


@handle_entry(args="float64[::1]")
def _solve_m_entry(m, d, x):
    solve_ld(x, d.qLD, d.qLDiagInv, m.M_rownnz, m.M_rowadr, m.M_colind)


@handle_entry(args="float64[::1], float64[::1]")
def _mul_m_entry(m, d, res, vec):
    mul_m_kernel(res, d.M, vec, m.M_rownnz, m.M_rowadr, m.M_colind)


@kernel
def full_m_kernel(dense, M, M_rownnz, M_rowadr, M_colind):
    """dense[i, j] = dense[j, i] = M's entries (mj_fullM); entries outside M's pattern untouched."""
    for i in range(M_rownnz.shape[0]):
        adr = M_rowadr[i]
        for k in range(M_rownnz[i]):
            j = M_colind[adr + k]
            dense[i, j] = M[adr + k]
            dense[j, i] = M[adr + k]


@handle_entry(args="float64[:, ::1]")
def _full_m_entry(m, d, dense):
    # zeros outside M's sparsity pattern first, as mj_fullM clears dst
    for i in range(m.nv):
        for j in range(m.nv):
            dense[i, j] = 0.0
    full_m_kernel(dense, d.M, m.M_rownnz, m.M_rowadr, m.M_colind)


_FULL_M = FastEntry(_full_m_entry)
_SOLVE_M = FastEntry(_solve_m_entry)
_MUL_M = FastEntry(_mul_m_entry)
_FACTOR_M = FastEntry(factor_m_entry)
_CRB = FastEntry(crb_entry)


def crb(m, d) -> None:
    """Composite rigid-body inertias and the joint-space inertia matrix M (armature included).

    Reads: cinert, cdof. Writes: crb, M. Mirrors mj_crb.
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "crb")
    except AttributeError:
        bad_model_data(m, d, "crb")
    _CRB.call(m._ptr, d._ptr)


def factor_m(m, d) -> None:
    """Factorise M = L^T D L in its tree-sparse layout.

    Reads: M. Writes: qLD, qLDiagInv. Mirrors mj_factorM.
    """
    check_model_data(m, d, "factor_m")
    _FACTOR_M.call(m._ptr, d._ptr)


def solve_m(m, d, y: np.ndarray) -> np.ndarray:
    """Return M^-1 y using the factorisation in ``d`` (call ``factor_m`` first). Mirrors mj_solveM.

    ``y`` has shape (nv,) or (n, nv); each row is solved.
    """
    check_model_data(m, d, "solve_m")
    x = float_array(y, "solve_m: y").copy()  # a fresh array: the solve works in place
    if x.ndim not in (1, 2) or x.shape[-1] != m.nv:
        raise ValueError(f"solve_m needs shape (nv,) or (n, nv) with nv={m.nv}, got {x.shape}")
    for row in x.reshape(-1, m.nv):
        _SOLVE_M.call(m._ptr, d._ptr, row)
    return x


def mul_m(m, d, vec: np.ndarray) -> np.ndarray:
    """Return M vec using the tree-sparse M in ``d``. Mirrors mj_mulM."""
    check_model_data(m, d, "mul_m")
    vec = float_array(vec, "mul_m: vec")
    if vec.shape != (m.nv,):
        raise ValueError(f"mul_m needs shape ({m.nv},), got {vec.shape}")
    res = np.empty(m.nv)
    _MUL_M.call(m._ptr, d._ptr, res, vec)
    return res


_FULL_M_OUT = OutArgument("full_m: out")


def full_m(m, d, out=None) -> np.ndarray:
    """Dense (nv, nv) joint-space inertia matrix from the tree-sparse M in ``d`` (mj_fullM).

    ``out``: an optional (nv, nv) float64 array to write into (and return), as mj_fullM's ``dst``."""
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "full_m")
    except AttributeError:
        bad_model_data(m, d, "full_m")
    nv = m.nv
    dense = np.empty((nv, nv)) if out is None else _FULL_M_OUT.check(out, (nv, nv))
    _FULL_M.call(m._ptr, d._ptr, dense)
    return dense
