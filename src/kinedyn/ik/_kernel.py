"""The numerical IK loop as one Numba kernel.

Each iteration runs the existing jitted stages on the solver's private Data
(``kinematics_entry`` for poses, ``com_pos_entry`` for cdof, ``jac_kernel`` for
the Jacobian columns), so a solve pays Python's dispatch once. Everything here
works on flat arrays prepared by :mod:`kinedyn.ik.solve`.

Conventions: the residual of target i is ``e = [p* - p ; log(q* conj(q))]``
(world frame, the rotation vector that turns the current frame onto the target),
scaled by sqrt(weight). For a step dq on the selected dofs the model predicts
``e(q (+) dq) ~= e(q) - J dq`` with J the rows of jac_site/jac_body.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import cached_njit
from kinedyn.engine.smooth_kinematics import com_pos_entry, kinematics_entry
from kinedyn.engine.support import integrate_pos_kernel, jac_kernel
from kinedyn.engine.types import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE

METHOD_NEWTON, METHOD_DLS, METHOD_LM = 0, 1, 2
KIND_SITE, KIND_BODY = 0, 1


@cached_njit
def _mat2quat(mat, i, out):
    """Unit quaternion (w, x, y, z) of rotation matrix mat[i] (Shepperd's method)."""
    r00, r01, r02 = mat[i, 0, 0], mat[i, 0, 1], mat[i, 0, 2]
    r10, r11, r12 = mat[i, 1, 0], mat[i, 1, 1], mat[i, 1, 2]
    r20, r21, r22 = mat[i, 2, 0], mat[i, 2, 1], mat[i, 2, 2]
    tr = r00 + r11 + r22
    if tr > 0.0:
        s = math.sqrt(tr + 1.0) * 2.0
        out[0] = 0.25 * s
        out[1] = (r21 - r12) / s
        out[2] = (r02 - r20) / s
        out[3] = (r10 - r01) / s
    elif r00 > r11 and r00 > r22:
        s = math.sqrt(1.0 + r00 - r11 - r22) * 2.0
        out[0] = (r21 - r12) / s
        out[1] = 0.25 * s
        out[2] = (r01 + r10) / s
        out[3] = (r02 + r20) / s
    elif r11 > r22:
        s = math.sqrt(1.0 + r11 - r00 - r22) * 2.0
        out[0] = (r02 - r20) / s
        out[1] = (r01 + r10) / s
        out[2] = 0.25 * s
        out[3] = (r12 + r21) / s
    else:
        s = math.sqrt(1.0 + r22 - r00 - r11) * 2.0
        out[0] = (r10 - r01) / s
        out[1] = (r02 + r20) / s
        out[2] = (r12 + r21) / s
        out[3] = 0.25 * s


@cached_njit
def _quat_log(w, x, y, z, out, o):
    """out[o:o+3] = rotation vector of unit quaternion (w, x, y, z), angle in [0, pi]."""
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-14:
        k = 2.0  # d(angle)/ds at s = 0, w = 1
    else:
        k = 2.0 * math.atan2(s, w) / s
    out[o] = k * x
    out[o + 1] = k * y
    out[o + 2] = k * z


@cached_njit
def _rot_error(qt, qc, out, o):
    """out[o:o+3] = log(qt * conj(qc)): world-frame rotation from current qc to target qt."""
    w1, x1, y1, z1 = qt[0], qt[1], qt[2], qt[3]
    w2, x2, y2, z2 = qc[0], -qc[1], -qc[2], -qc[3]
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    _quat_log(w, x, y, z, out, o)


@cached_njit
def residual(m, d, q, kinds, ids, tpos, tquat, haspos, hasrot, sqrtw, e, pos_err, rot_err, qcur):
    """Run kinematics at q and fill the weighted residual e; return the cost 0.5 e.e."""
    d.qpos[:] = q
    kinematics_entry(m, d)
    # structref attributes cost a reference-count update per access: read them once
    site_xpos, site_xmat, xpos, xquat = d.site_xpos, d.site_xmat, d.xpos, d.xquat
    r = 0
    for i in range(kinds.shape[0]):
        b = ids[i]
        if kinds[i] == KIND_SITE:
            px, py, pz = site_xpos[b, 0], site_xpos[b, 1], site_xpos[b, 2]
        else:
            px, py, pz = xpos[b, 0], xpos[b, 1], xpos[b, 2]
        pos_err[i] = 0.0
        rot_err[i] = 0.0
        if haspos[i]:
            e[r] = tpos[i, 0] - px
            e[r + 1] = tpos[i, 1] - py
            e[r + 2] = tpos[i, 2] - pz
            pos_err[i] = math.sqrt(e[r] ** 2 + e[r + 1] ** 2 + e[r + 2] ** 2)
            r += 3
        if hasrot[i]:
            if kinds[i] == KIND_SITE:
                _mat2quat(site_xmat, b, qcur)
            else:
                for k in range(4):
                    qcur[k] = xquat[b, k]
            _rot_error(tquat[i], qcur, e, r)
            rot_err[i] = math.sqrt(e[r] ** 2 + e[r + 1] ** 2 + e[r + 2] ** 2)
            r += 3
    cost = 0.0
    r = 0
    for i in range(kinds.shape[0]):
        nr = 3 * (haspos[i] + hasrot[i])
        for k in range(r, r + nr):
            e[k] *= sqrtw[i]
            cost += e[k] * e[k]
        r += nr
    return 0.5 * cost


@cached_njit
def jacobian(m, d, kinds, ids, haspos, hasrot, sqrtw, dofs, jac, J):
    """J (nrow, ndof): weighted Jacobian rows of the targets on the selected dofs.

    Needs kinematics at the current q (``residual``); runs com_pos for cdof.
    """
    com_pos_entry(m, d)
    r = 0
    for i in range(kinds.shape[0]):
        b = ids[i]
        if kinds[i] == KIND_SITE:
            jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                       d.subtree_com, d.cdof, d.site_xpos[b, 0], d.site_xpos[b, 1], d.site_xpos[b, 2],
                       m.site_bodyid[b], jac[0], jac[1])
        else:
            jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                       d.subtree_com, d.cdof, d.xpos[b, 0], d.xpos[b, 1], d.xpos[b, 2], b, jac[0], jac[1])
        w = sqrtw[i]
        if haspos[i]:
            for k in range(3):
                for c in range(dofs.shape[0]):
                    J[r + k, c] = w * jac[0, k, dofs[c]]
            r += 3
        if hasrot[i]:
            for k in range(3):
                for c in range(dofs.shape[0]):
                    J[r + k, c] = w * jac[1, k, dofs[c]]
            r += 3


@cached_njit
def _chol_solve(A, b, x):
    """x = A^-1 b for symmetric positive (semi)definite A, in place on A (Cholesky; tiny pivots floored)."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s < 1e-300:
            s = 1e-300
        A[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / A[j, j]
    for i in range(n):
        t = b[i]
        for k in range(i):
            t -= A[i, k] * x[k]
        x[i] = t / A[i, i]
    for i in range(n - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, n):
            t -= A[k, i] * x[k]
        x[i] = t / A[i, i]


@cached_njit
def _gram(J, by_rows, lam, a):
    """a = K K^T + lam I with K = J (by_rows) or K = J^T: the Gram matrix of J's rows or columns."""
    nr, nc = J.shape
    n, inner = (nr, nc) if by_rows else (nc, nr)
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for t in range(inner):
                s += J[i, t] * J[j, t] if by_rows else J[t, i] * J[t, j]
            a[i, j] = s
            a[j, i] = s
        a[i, i] += lam


@cached_njit
def _damped_step(J, rhs, lam, dq, A, y):
    """dq = J^T (J J^T + lam I)^-1 rhs  (= (J^T J + lam I)^-1 J^T rhs), in the smaller system."""
    nr, nc = J.shape
    if nr <= nc:
        # (J J^T + lam I) z = rhs, dq = J^T z
        a = A[:nr, :nr]
        _gram(J, True, lam, a)
        z = y[:nr]
        _chol_solve(a, rhs, z)
        for c in range(nc):
            s = 0.0
            for i in range(nr):
                s += J[i, c] * z[i]
            dq[c] = s
    else:
        # (J^T J + lam I) dq = J^T rhs
        a = A[:nc, :nc]
        _gram(J, False, lam, a)
        g = y[:nc]
        for i in range(nc):
            s = 0.0
            for r in range(nr):
                s += J[r, i] * rhs[r]
            g[i] = s
        _chol_solve(a, g, dq[:nc])


@cached_njit
def project_limits(m, jsel, q):
    """Clamp limited hinge and slide joints into their range; limit a ball joint's rotation angle."""
    jnt_limited, jnt_qposadr, jnt_type, jnt_range = m.jnt_limited, m.jnt_qposadr, m.jnt_type, m.jnt_range
    for j in range(jsel.shape[0]):
        if not jsel[j] or not jnt_limited[j]:
            continue
        a = jnt_qposadr[j]
        t = jnt_type[j]
        if t == JNT_HINGE or t == JNT_SLIDE:
            lo, hi = jnt_range[j, 0], jnt_range[j, 1]
            if q[a] < lo:
                q[a] = lo
            elif q[a] > hi:
                q[a] = hi
        elif t == JNT_BALL:
            w, x, y, z = q[a], q[a + 1], q[a + 2], q[a + 3]
            nrm = math.sqrt(w * w + x * x + y * y + z * z)
            w, x, y, z = w / nrm, x / nrm, y / nrm, z / nrm
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            s = math.sqrt(x * x + y * y + z * z)
            ang = 2.0 * math.atan2(s, w)
            hi = jnt_range[j, 1]
            if ang > hi and s > 0.0:
                h = 0.5 * hi
                k = math.sin(h) / s
                q[a], q[a + 1], q[a + 2], q[a + 3] = math.cos(h), x * k, y * k, z * k


@cached_njit
def diff_pos(m, jsel, q, qref, v):
    """v (nv) = qref (-) q on the manifold for selected joints (mj_differentiatePos, h = 1)."""
    v[:] = 0.0
    for j in range(m.njnt):
        if not jsel[j]:
            continue
        a = m.jnt_qposadr[j]
        o = m.jnt_dofadr[j]
        t = m.jnt_type[j]
        if t == JNT_FREE:
            for k in range(3):
                v[o + k] = qref[a + k] - q[a + k]
            a += 3
            o += 3
        if t == JNT_FREE or t == JNT_BALL:
            # local-frame rotation vector log(conj(q) * qref)
            w1, x1, y1, z1 = q[a], -q[a + 1], -q[a + 2], -q[a + 3]
            w2, x2, y2, z2 = qref[a], qref[a + 1], qref[a + 2], qref[a + 3]
            w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
            x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
            y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
            z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
            _quat_log(w, x, y, z, v, o)
        else:
            v[o] = qref[a] - q[a]


@cached_njit
def _randomize(m, jsel, q):
    """A random start: hinge/slide inside their range (hinges in [-pi, pi] when unlimited), balls uniform."""
    for j in range(m.njnt):
        if not jsel[j]:
            continue
        a = m.jnt_qposadr[j]
        t = m.jnt_type[j]
        if t == JNT_HINGE or t == JNT_SLIDE:
            if m.jnt_limited[j]:
                lo, hi = m.jnt_range[j, 0], m.jnt_range[j, 1]
                q[a] = lo + (hi - lo) * np.random.random()
            elif t == JNT_HINGE:
                q[a] = -math.pi + 2.0 * math.pi * np.random.random()
        elif t == JNT_BALL:
            nrm = 0.0
            for k in range(4):
                q[a + k] = np.random.normal()
                nrm += q[a + k] ** 2
            nrm = math.sqrt(nrm)
            for k in range(4):
                q[a + k] /= nrm


@cached_njit
def solve_kernel(m, d, q, tint, tflt, jsel, dofs, posture, iprm, fprm, errs):
    """Solve in place on q (nq); return (iterations, success).

    Arguments are packed to keep Numba's per-call dispatch cheap:
      tint (nt, 4) int: kind, id, has pos, has rot per target;
      tflt (nt, 8): goal position (3), goal quaternion (4), sqrt(weight);
      iprm: method, max_iter, restarts, seed (< 0: not reseeded);
      fprm: posture_gain (0: no posture), tol_pos, tol_rot, damping, max_step;
      errs (2, nt) out: final position and rotation errors.
    """
    kinds, ids, haspos, hasrot = tint[:, 0], tint[:, 1], tint[:, 2], tint[:, 3]
    tpos, tquat, sqrtw = tflt[:, 0:3], tflt[:, 3:7], tflt[:, 7]
    method, max_iter, restarts, seed = iprm[0], iprm[1], iprm[2], iprm[3]
    posture_gain, tol_pos, tol_rot, damping, max_step = fprm[0], fprm[1], fprm[2], fprm[3], fprm[4]
    pos_err, rot_err = errs[0], errs[1]
    nt = kinds.shape[0]
    nr = 0
    for i in range(nt):
        nr += 3 * (haspos[i] + hasrot[i])
    nc = dofs.shape[0]
    nv = m.nv
    e = np.empty(nr)
    e_new = np.empty(nr)
    rhs = np.empty(nr)
    J = np.zeros((nr, nc))
    jac = np.empty((2, 3, nv))
    nmax = max(nr, nc)
    A = np.empty((nmax, nmax))
    y = np.empty(nmax)
    dq = np.zeros(nc)
    p = np.zeros(nc)
    vfull = np.zeros(nv)
    pv = np.zeros(nv)
    qn = np.empty_like(q)
    q0 = q.copy()
    best = q.copy()
    pe = np.empty(nt)
    re = np.empty(nt)
    qcur = np.empty(4)
    sq = np.empty((8, 4))
    sv = np.empty((8, 6))
    use_posture = posture_gain > 0.0
    # per selected dof: its joint when that is a limited hinge or slide, else -1
    jnt_qposadr, jnt_range, jnt_type, jnt_limited, dof_jntid = \
        m.jnt_qposadr, m.jnt_range, m.jnt_type, m.jnt_limited, m.dof_jntid
    lim_jnt = np.full(nc, -1)
    for c in range(nc):
        j = dof_jntid[dofs[c]]
        if (jnt_type[j] == JNT_HINGE or jnt_type[j] == JNT_SLIDE) and jnt_limited[j]:
            lim_jnt[c] = j
    jt, jq, jd = m.jnt_type, m.jnt_qposadr, m.jnt_dofadr

    best_cost = np.inf
    iters = 0
    success = False
    for attempt in range(restarts + 1):
        if attempt > 0:
            if attempt == 1 and seed >= 0:
                np.random.seed(seed)  # seeding costs microseconds: only when a restart needs it
            q[:] = q0
            _randomize(m, jsel, q)
        project_limits(m, jsel, q)
        cost = residual(m, d, q, kinds, ids, tpos, tquat, haspos, hasrot, sqrtw, e, pe, re, qcur)
        mu = 1.0
        for _ in range(max_iter + 1):
            ok = True
            for i in range(nt):
                if pe[i] > tol_pos or re[i] > tol_rot:
                    ok = False
            if ok or _ == max_iter:
                break
            iters += 1
            jacobian(m, d, kinds, ids, haspos, hasrot, sqrtw, dofs, jac, J)
            if method == METHOD_NEWTON:
                lam = 1e-12
            elif method == METHOD_DLS:
                lam = damping * damping
            else:
                lam = mu * (cost + damping)
            # null-space posture: dq = p + J+ (e - J p)
            if use_posture:
                diff_pos(m, jsel, q, posture, pv)
                for c in range(nc):
                    p[c] = posture_gain * pv[dofs[c]]
                for r in range(nr):
                    s = 0.0
                    for c in range(nc):
                        s += J[r, c] * p[c]
                    rhs[r] = e[r] - s
            else:
                rhs[:] = e
            _damped_step(J, rhs, lam, dq, A, y)
            if use_posture:
                for c in range(nc):
                    dq[c] += p[c]
            # active set: a dof at its limit whose step points outwards is locked for this step
            # (its column removed), so clamping does not stall the descent
            for _pass in range(3):
                locked = False
                for c in range(nc):
                    j = lim_jnt[c]
                    if j >= 0:
                        a = jnt_qposadr[j]
                        if (q[a] <= jnt_range[j, 0] and dq[c] < 0.0) or \
                                (q[a] >= jnt_range[j, 1] and dq[c] > 0.0):
                            for r in range(nr):
                                J[r, c] = 0.0
                            p[c] = 0.0
                            locked = True
                if not locked:
                    break
                if use_posture:
                    for r in range(nr):
                        s = 0.0
                        for c in range(nc):
                            s += J[r, c] * p[c]
                        rhs[r] = e[r] - s
                _damped_step(J, rhs, lam, dq, A, y)
                if use_posture:
                    for c in range(nc):
                        dq[c] += p[c]
            nrm = 0.0
            for c in range(nc):
                nrm += dq[c] * dq[c]
            nrm = math.sqrt(nrm)
            if nrm > max_step:
                for c in range(nc):
                    dq[c] *= max_step / nrm
            vfull[:] = 0.0
            for c in range(nc):
                vfull[dofs[c]] = dq[c]
            qn[:] = q
            integrate_pos_kernel(jt, jq, jd, qn, vfull, 1.0, sq, sv)
            project_limits(m, jsel, qn)
            cost_new = residual(m, d, qn, kinds, ids, tpos, tquat, haspos, hasrot, sqrtw, e_new, pe, re, qcur)
            if method != METHOD_LM or cost_new < cost or use_posture:
                q[:] = qn
                e[:] = e_new
                cost = cost_new
                mu = max(mu * 0.3, 1e-6)
            else:
                # rejected: restore the kinematics of q and damp harder
                mu *= 8.0
                cost = residual(m, d, q, kinds, ids, tpos, tquat, haspos, hasrot, sqrtw, e, pe, re, qcur)
                if mu > 1e8:
                    break
        ok = True
        for i in range(nt):
            if pe[i] > tol_pos or re[i] > tol_rot:
                ok = False
        if ok or cost < best_cost:
            # pe and re always describe q (a rejected step re-evaluates q)
            best_cost = cost
            best[:] = q
            pos_err[:] = pe
            rot_err[:] = re
        if ok:
            success = True
            break
    q[:] = best
    return iters, success
