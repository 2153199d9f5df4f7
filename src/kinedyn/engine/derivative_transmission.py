"""Position derivatives of the forces whose moment arm moves with the state (issue 25, item 2), for
``derivative_transition``'s chain rule.

``derivative_transition._force_partials`` differentiates qfrc = mom' f(l, v) with the moment ``mom``
constant and dl/dq = mom, as for hinge/slide joints and fixed tendons. What that misses is here:

* ``xfrc_applied`` (mj_xfrcAccumulate: each body's force f and torque t at its com xipos, constant
  in the world) and a site transmission's wrench (mj_transmission, mjTRN_SITE without refsite:
  the gear turns with the site). For the generalised force G_i = Jp_i(p) . f + Jr_i . t of a
  point p of body b, dof i and k both moving b, with S = (w, v) the com-based motion (cdof) and
  W = (t + r x f, f) the wrench about the com frame's origin o, r = p - o: d G_i/d q_k =
  (S_k x S_i) . W where k moves i's axis (an ancestor in the dof tree, or one ball's or free
  joint's rotations: the motion cross product of Carpentier-Mansard) plus w_i . (Jp_k(p) x f),
  p moving with b; where f and t turn with the body, also Jp_i . (w_k x f) + w_i . (w_k x t)
  (``_wrench_partials``).
* spatial tendons through sites and pulleys (mj_tendon): their ten_J's q-derivative (the length's
  Hessian) is derivative_collision's ``tendon_row_derivatives`` (the one the constraint part uses
  for a spatial tendon's limit). With it, a tendon's passive force s = spring + damper along ten_J
  (mj_passive) gives s dJ/dq + J s_v (dJ/dq)' qvel, an actuator on it f dmom/dq + mom f_v
  (dmom/dq)' qvel (mom = gear ten_J). Tendons wrapping spheres or cylinders are refused.
* the moments constant in q whose length is not mom . q: a ball joint's (length = gear . the
  rotation vector x of its quaternion: dl/dq = gear' J_r^-1(x), the inverse right Jacobian of
  SO(3), as the ball spring's ``_ball_spring_partials``), a free joint's and a site's (length 0).
* the implicit and implicitfast integrators' matrix K = M - h qDeriv holds these moments
  (mjd_actuator_vel, mjd_passive_vel: mom' f_v mom, -J' b'(v) J, on M's pattern): d(K qacc)/dq
  gains their moments' derivatives (``system_partials``).
* joint ``actuatorfrcrange`` (mj_fwdActuation clamps qfrc_actuator at the joint's first dof):
  clamped, that row of qfrc_actuator has no derivative (``actfrc_clamped``); a tendon's
  actuatorfrcrange with one actuator on it holds its force at the range (``tendon_clamp``).

All O(nv^2) per moving moment, dense, in the (nv, nv) scratch ``dm``; compiled with
transition_derivatives' unit, reached only for models that use them.
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.derivative_collision import NG, TT, _moves_axis, _reaches, tendon_row_derivatives
from kinedyn.engine.derivative_constraint import _CHAIN, _GEO
from kinedyn.engine.smooth_tendon import is_fixed_tendon
from kinedyn.engine.types import (
    DSBL_ACTUATION,
    DSBL_DAMPER,
    DSBL_SPRING,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    JNT_BALL,
    JNT_FREE,
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_SITE,
    TRN_SLIDERCRANK,
    TRN_TENDON,
    WRAP_PULLEY,
    WRAP_SITE,
    SensorType,
)
from kinedyn.engine.util_linalg3 import cross3
from kinedyn.engine.util_poly import poly_force, poly_force_deriv, tendon_damping_poly
from kinedyn.engine.util_spatial import cross_motion, mul_quat, normalize4, quat2vel, row6, sub_quat

# how an actuator's moment and length move (``moment_kind``)
K_CONSTANT, K_TENDON, K_SITE, K_BALL, K_FREE, K_CRANK, K_REFSITE, K_OTHER = range(8)


@kernel
def tendon_through_sites(m, t):
    """Whether spatial tendon t's path is sites and pulleys only (no wrapping geom)."""
    for k in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
        if m.wrap_type[k] != WRAP_SITE and m.wrap_type[k] != WRAP_PULLEY:
            return False
    return True


@kernel
def moment_kind(m, i):
    """K_*: how actuator i's transmission differs from a constant moment with dl/dq = mom.
    K_OTHER: not differentiated (body, a spatial tendon wrapping a geom)."""
    trn, tid = m.actuator_trntype[i], m.actuator_trnid[i, 0]
    if trn == TRN_JOINT or trn == TRN_JOINTINPARENT:
        jt = m.jnt_type[tid]
        return K_BALL if jt == JNT_BALL else (K_FREE if jt == JNT_FREE else K_CONSTANT)
    if trn == TRN_TENDON:
        if is_fixed_tendon(m, tid):
            return K_CONSTANT
        return K_TENDON if tendon_through_sites(m, tid) else K_OTHER
    if trn == TRN_SITE:
        return K_SITE if m.actuator_trnid[i, 1] < 0 else K_REFSITE
    if trn == TRN_SLIDERCRANK:
        return K_CRANK
    return K_OTHER


@kernel
def moves(m, i, kind):
    """Whether actuator i's moment depends on qpos (dm: ``_moment_derivative``): a spatial tendon,
    a site, a slider-crank, jointinparent on a ball or free joint (the gear turned into the child
    frame)."""
    return kind == K_TENDON or kind == K_SITE or kind == K_CRANK or kind == K_REFSITE or (
        (kind == K_BALL or kind == K_FREE) and m.actuator_trntype[i] == TRN_JOINTINPARENT)


@kernel
def actuators_on_tendon(m, t, armature):
    """How many actuators transmit through tendon t (``armature``: those with armature)."""
    n = 0
    for i in range(m.nu):
        if m.actuator_trntype[i] == TRN_TENDON and m.actuator_trnid[i, 0] == t and (
                not armature or m.actuator_armature[i] != 0.0):
            n += 1
    return n


# ---- applied wrenches ---------------------------------------------------------------------------


@kernel
def _last_dof(m, b):
    """The last dof moving body b (its weld's), or -1."""
    w = m.body_weldid[b]
    if w == 0 or m.body_dofnum[w] == 0:
        return -1
    return m.body_dofadr[w] + m.body_dofnum[w] - 1


@kernel
def _wrench_partials(m, d, b, px, py, pz, f, t, rotating, scale, out):
    """out[i, k] += scale d G_i/d q_k for the dofs i, k moving body b, G_i = Jp_i(p) . f + Jr_i . t
    the generalised force of a wrench (f, t) at point p of b (module docstring); ``rotating``:
    f and t turn with b (else constant in the world)."""
    last = _last_dof(m, b)
    if last < 0:
        return
    o = d.subtree_com[m.body_rootid[b]]
    r = (px - o[0], py - o[1], pz - o[2])
    rf = cross3(r, f)
    wt = (t[0] + rf[0], t[1] + rf[1], t[2] + rf[2])
    i = last
    while i >= 0:
        wi = (d.cdof[i, 0], d.cdof[i, 1], d.cdof[i, 2])
        ci = cross3(wi, r)
        jpi = (d.cdof[i, 3] + ci[0], d.cdof[i, 4] + ci[1], d.cdof[i, 5] + ci[2])
        k = last
        while k >= 0:
            sk = row6(d.cdof, k)
            wk = (sk[0], sk[1], sk[2])
            ck = cross3(wk, r)
            jpk = (sk[3] + ck[0], sk[4] + ck[1], sk[5] + ck[2])
            x = cross3(jpk, f)
            val = wi[0] * x[0] + wi[1] * x[1] + wi[2] * x[2]
            if _moves_axis(m, k, i):
                sx = cross_motion(sk, d.cdof, i)
                val += sx[0] * wt[0] + sx[1] * wt[1] + sx[2] * wt[2] \
                    + sx[3] * f[0] + sx[4] * f[1] + sx[5] * f[2]
            if rotating:
                y = cross3(wk, f)
                z = cross3(wk, t)
                val += jpi[0] * y[0] + jpi[1] * y[1] + jpi[2] * y[2] \
                    + wi[0] * z[0] + wi[1] * z[1] + wi[2] * z[2]
            out[i, k] += scale * val
            k = m.dof_parentid[k]
        i = m.dof_parentid[i]


@kernel
def copy_xfrc(d, xfrc):
    """d.xfrc_applied = xfrc; whether it is finite."""
    ok = True
    for b in range(xfrc.shape[0]):
        for k in range(6):
            x = xfrc[b, k]
            if not math.isfinite(x):
                ok = False
            d.xfrc_applied[b, k] = x
    return ok


@kernel
def xfrc_partials(m, d, rhs):
    """rhs[:, :nv] += d(sum_b J_b(xipos_b)' xfrc_applied[b]) / dq (mj_xfrcAccumulate)."""
    x = d.xfrc_applied
    for b in range(1, m.nbody):
        if x[b, 0] == 0.0 and x[b, 1] == 0.0 and x[b, 2] == 0.0 and x[b, 3] == 0.0 and x[b, 4] == 0.0 \
                and x[b, 5] == 0.0:
            continue
        p = d.xipos[b]
        _wrench_partials(m, d, b, p[0], p[1], p[2], (x[b, 0], x[b, 1], x[b, 2]), (x[b, 3], x[b, 4], x[b, 5]),
                         False, 1.0, rhs)


# ---- clamps ------------------------------------------------------------------------------------------


@kernel
def actfrc_clamped(m, d, v):
    """Whether qfrc_actuator[v] is held by its joint's actuatorfrcrange (mj_fwdActuation's last
    clamp, at the joint's first dof): the sum it clamps at or beyond the range's ends (at an end,
    the clamped side: zero, as a forcerange)."""
    j = m.dof_jntid[v]
    if not m.jnt_actfrclimited[j] or m.jnt_dofadr[j] != v:
        return False
    if m.nu == 0 or m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return False
    raw = 0.0
    for i in range(m.nu):
        mom = d.actuator_moment[i, v]
        raw += mom * d.actuator_force[i] if mom != 0.0 else 0.0
    if m.jnt_actgravcomp[j]:
        raw += d.qfrc_gravcomp[v]
    return raw <= m.jnt_actfrcrange[j, 0] or raw >= m.jnt_actfrcrange[j, 1]


@kernel
def any_actfrc(m):
    for j in range(m.njnt):
        if m.jnt_actfrclimited[j]:
            return True
    return False


@kernel
def clamp_gravcomp_rows(m, d, x):
    """Zero the rows of x (d qfrc_gravcomp / dq) of the actuatorgravcomp joints' dofs whose
    qfrc_actuator, the gravity compensation included, is held by actuatorfrcrange."""
    if not any_actfrc(m):
        return
    for v in range(m.nv):
        if m.jnt_actgravcomp[m.dof_jntid[v]] and actfrc_clamped(m, d, v):
            for c in range(x.shape[1]):
                x[v, c] = 0.0


@kernel
def tendon_clamp(m, d, au, aa, fl, fv, fu, fa):
    """A tendon's actuatorfrcrange with its one actuator (mj_fwdActuation scales the force to the
    range's end): engaged, the force is constant, its partials (au[fl, fv, fu], aa[fa]) zero; the
    velocity-gain rows implicit's matrix reads stay (mjd_actuator_vel does not see the clamp).
    Engaged: the force within 4 ulp of an end (it is scaled there: end * (f / f))."""
    for i in range(m.nu):
        if m.actuator_trntype[i] != TRN_TENDON:
            continue
        t = m.actuator_trnid[i, 0]
        if not m.tendon_actfrclimited[t]:
            continue
        f = d.actuator_force[i]
        lo, hi = m.tendon_actfrcrange[t, 0], m.tendon_actfrcrange[t, 1]
        if f <= lo + 8.9e-16 * abs(lo) or f >= hi - 8.9e-16 * abs(hi):
            au[fl, i] = 0.0
            au[fv, i] = 0.0
            au[fu, i] = 0.0
            for k in range(aa.shape[2]):
                aa[fa, i, k] = 0.0


# ---- moving moments ------------------------------------------------------------------------------


@kernel
def _tendon_dj(m, d, t, dm, fbuf, ibuf):
    """dm[a, k] = d ten_J[t, a] / dq_k (derivative_collision.tendon_row_derivatives); whether done."""
    gb = fbuf[_GEO:_GEO + NG]
    idx = ibuf[:, _CHAIN]
    nc = tendon_row_derivatives(m, d, t, idx, gb)
    for a in range(m.nv):
        for k in range(m.nv):
            dm[a, k] = 0.0
    if nc < 0:
        return False
    for a in range(nc):
        for k in range(nc):
            dm[idx[a], idx[k]] = gb[TT, a * nc + k]
    return True


@kernel
def _point_column(m, d, last, px, py, pz, j):
    """(moves, Jp column j at p (3-tuple), w_j): dof j's motion of a point of the body whose last
    dof is ``last``."""
    if last < 0 or not _reaches(m, last, j):
        return False, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    o = d.subtree_com[m.body_rootid[m.dof_bodyid[last]]]
    w = (d.cdof[j, 0], d.cdof[j, 1], d.cdof[j, 2])
    c = cross3(w, (px - o[0], py - o[1], pz - o[2]))
    return True, (d.cdof[j, 3] + c[0], d.cdof[j, 4] + c[1], d.cdof[j, 5] + c[2]), w


@kernel
def _crank_derivative(m, d, i, dm):
    """dm += d actuator_moment[i]/dq of a slider-crank (mj_transmission: length = gear (a . v -
    sqrt(det)), det = (a . v)^2 + rod^2 - v . v, a the slider site's z axis, v = crank - slider;
    a . v where det <= 0), its moment the length's gradient ga . A_j + gv . V_j with ga, gv the
    partials in a and v, A_j = w_j x a, V_j the columns of Jp(crank) - Jp(slider). Its derivative:
    the partials' change along (da_k, dv_k), plus gv . dV_j/dq_k and ga . dA_j/dq_k, the points'
    and axis' second derivatives (``_wrench_partials``: a force gv at the crank, -gv at the slider,
    a torque a x ga on the slider's body, and ga . (w_j x (w_k x a)))."""
    nv = m.nv
    cid, sid = m.actuator_trnid[i, 0], m.actuator_trnid[i, 1]
    rod = m.actuator_cranklength[i]
    mat = d.site_xmat[sid]
    a = (mat[0, 2], mat[1, 2], mat[2, 2])
    pc, ps = d.site_xpos[cid], d.site_xpos[sid]
    v = (pc[0] - ps[0], pc[1] - ps[1], pc[2] - ps[2])
    av = a[0] * v[0] + a[1] * v[1] + a[2] * v[2]
    det = av * av + rod * rod - (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    smooth = det > 0.0
    sd, c = 1.0, 1.0
    if smooth:
        sd = math.sqrt(det)
        c = 1.0 - av / sd
        ga = (v[0] * c, v[1] * c, v[2] * c)
        gv = (a[0] * c + v[0] / sd, a[1] * c + v[1] / sd, a[2] * c + v[2] / sd)
    else:
        ga, gv = v, a
    bc, bs = m.site_bodyid[cid], m.site_bodyid[sid]
    lc, ls = _last_dof(m, bc), _last_dof(m, bs)
    for k in range(nv):
        mc, jc, _ = _point_column(m, d, lc, pc[0], pc[1], pc[2], k)
        ms, js, ws = _point_column(m, d, ls, ps[0], ps[1], ps[2], k)
        if not (mc or ms):
            continue
        da = cross3(ws, a)
        dv = (jc[0] - js[0], jc[1] - js[1], jc[2] - js[2])
        dav = da[0] * v[0] + da[1] * v[1] + da[2] * v[2] + a[0] * dv[0] + a[1] * dv[1] + a[2] * dv[2]
        if smooth:
            dsd = (av * dav - (v[0] * dv[0] + v[1] * dv[1] + v[2] * dv[2])) / sd
            dc = -(dav * sd - av * dsd) / (sd * sd)
            dga = (dv[0] * c + v[0] * dc, dv[1] * c + v[1] * dc, dv[2] * c + v[2] * dc)
            q = dsd / (sd * sd)
            dgv = (da[0] * c + a[0] * dc + dv[0] / sd - v[0] * q,
                   da[1] * c + a[1] * dc + dv[1] / sd - v[1] * q,
                   da[2] * c + a[2] * dc + dv[2] / sd - v[2] * q)
        else:
            dga, dgv = dv, da
        for j in range(nv):
            mcj, jcj, _ = _point_column(m, d, lc, pc[0], pc[1], pc[2], j)
            msj, jsj, wsj = _point_column(m, d, ls, ps[0], ps[1], ps[2], j)
            if not (mcj or msj):
                continue
            aj = cross3(wsj, a)
            x = dga[0] * aj[0] + dga[1] * aj[1] + dga[2] * aj[2]
            for r in range(3):
                x += dgv[r] * (jcj[r] - jsj[r])
            if ms and msj:
                y = cross3(wsj, cross3(ws, a))
                x += ga[0] * y[0] + ga[1] * y[1] + ga[2] * y[2]
            dm[j, k] += x
    _wrench_partials(m, d, bc, pc[0], pc[1], pc[2], gv, (0.0, 0.0, 0.0), False, 1.0, dm)
    _wrench_partials(m, d, bs, ps[0], ps[1], ps[2], gv, (0.0, 0.0, 0.0), False, -1.0, dm)
    _wrench_partials(m, d, bs, ps[0], ps[1], ps[2], (0.0, 0.0, 0.0), cross3(a, ga), False, 1.0, dm)
    g = m.actuator_gear[i, 0]
    for j in range(nv):
        for k in range(nv):
            dm[j, k] *= g


@kernel
def _site_gears(m, d, i):
    """(F, T): a refsite transmission's gear (force, torque parts) in the world, R_ref gear."""
    mat = d.site_xmat[m.actuator_trnid[i, 1]]
    g = m.actuator_gear[i]
    f = (mat[0, 0] * g[0] + mat[0, 1] * g[1] + mat[0, 2] * g[2], mat[1, 0] * g[0] + mat[1, 1] * g[1]
         + mat[1, 2] * g[2], mat[2, 0] * g[0] + mat[2, 1] * g[1] + mat[2, 2] * g[2])
    t = (mat[0, 0] * g[3] + mat[0, 1] * g[4] + mat[0, 2] * g[5], mat[1, 0] * g[3] + mat[1, 1] * g[4]
         + mat[1, 2] * g[5], mat[2, 0] * g[3] + mat[2, 1] * g[4] + mat[2, 2] * g[5])
    return f, t


@kernel
def _refsite_derivative(m, d, i, dm):
    """dm += d actuator_moment[i]/dq of a site transmission with a refsite (mj_transmission: the
    moment (Jp_s - Jp_r)' F + (Jr_s - Jr_r)' T, F, T = R_ref gear, the dofs moving both sites
    cleared): the site's wrench (F, T held), the refsite's turning with its body, the site's
    columns against the gear's turn w_k x F, w_k x T by the refsite's dofs k; the cleared rows
    stay zero."""
    nv = m.nv
    sid, ref = m.actuator_trnid[i, 0], m.actuator_trnid[i, 1]
    f, t = _site_gears(m, d, i)
    bs, br = m.site_bodyid[sid], m.site_bodyid[ref]
    ps, pr = d.site_xpos[sid], d.site_xpos[ref]
    _wrench_partials(m, d, bs, ps[0], ps[1], ps[2], f, t, False, 1.0, dm)
    _wrench_partials(m, d, br, pr[0], pr[1], pr[2], f, t, True, -1.0, dm)
    ls, lr = _last_dof(m, bs), _last_dof(m, br)
    for j in range(nv):
        mj, jpj, wj = _point_column(m, d, ls, ps[0], ps[1], ps[2], j)
        if not mj:
            continue
        for k in range(nv):
            if lr < 0 or not _reaches(m, lr, k):
                continue
            wk = (d.cdof[k, 0], d.cdof[k, 1], d.cdof[k, 2])
            y = cross3(wk, f)
            z = cross3(wk, t)
            dm[j, k] += jpj[0] * y[0] + jpj[1] * y[1] + jpj[2] * y[2] \
                + wj[0] * z[0] + wj[1] * z[1] + wj[2] * z[2]
    for j in range(nv):
        if ls >= 0 and lr >= 0 and _reaches(m, ls, j) and _reaches(m, lr, j):
            for k in range(nv):
                dm[j, k] = 0.0


@kernel
def _refsite_length_gradient(m, d, i, out):
    """out = d actuator_length[i]/dq of a refsite transmission: gear_f . R_r'(p_s - p_r) moves by
    F . (Jp_s - Jp_r - w_r x (p_s - p_r)), w_r the refsite body's turn; gear_t . x, x =
    log(q_r^-1 q_s) (mju_subQuat of the site frames), by gear_t' J_r^-1(x) R_s' (w_s - w_r)
    (a turn w of one frame in the world is R_s' w in q_r^-1 q_s's right factor). It differs from
    the moment (MuJoCo's relative Jacobians projected on the gear) off the common chain."""
    nv = m.nv
    sid, ref = m.actuator_trnid[i, 0], m.actuator_trnid[i, 1]
    f, _ = _site_gears(m, d, i)
    bs, br = m.site_bodyid[sid], m.site_bodyid[ref]
    ps, pr = d.site_xpos[sid], d.site_xpos[ref]
    dx = (ps[0] - pr[0], ps[1] - pr[1], ps[2] - pr[2])
    ls, lr = _last_dof(m, bs), _last_dof(m, br)
    g = m.actuator_gear[i]
    rot = g[3] != 0.0 or g[4] != 0.0 or g[5] != 0.0
    jr = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    if rot:
        sq, sv = d.scratch_quat, d.scratch_vec
        mul_quat(sq, 1, d.xquat, bs, m.site_quat, sid)
        mul_quat(sq, 2, d.xquat, br, m.site_quat, ref)
        sub_quat(sv, 0, sq, 1, sq, 2, sq, 3)
        jr = inv_right_jacobian(sv[0, 0], sv[0, 1], sv[0, 2])
    # gt' J_r^-1(x) R_s': a row vector in the world
    rs = d.site_xmat[sid]
    u = (g[3] * jr[0] + g[4] * jr[3] + g[5] * jr[6], g[3] * jr[1] + g[4] * jr[4] + g[5] * jr[7],
         g[3] * jr[2] + g[4] * jr[5] + g[5] * jr[8])
    gw = (rs[0, 0] * u[0] + rs[0, 1] * u[1] + rs[0, 2] * u[2], rs[1, 0] * u[0] + rs[1, 1] * u[1]
          + rs[1, 2] * u[2], rs[2, 0] * u[0] + rs[2, 1] * u[1] + rs[2, 2] * u[2])
    for c in range(nv):
        ms, jps, ws = _point_column(m, d, ls, ps[0], ps[1], ps[2], c)
        mr, jpr, wr = _point_column(m, d, lr, pr[0], pr[1], pr[2], c)
        e = cross3(wr, dx)
        x = 0.0
        for k in range(3):
            x += f[k] * (jps[k] - jpr[k] - e[k]) + gw[k] * (ws[k] - wr[k])
        out[c] = x


@kernel
def _moment_derivative(m, d, i, kind, dm, fbuf, ibuf):
    """dm = d actuator_moment[i] / dq for a moving moment (``moves``); whether done."""
    if kind == K_TENDON:
        ok = _tendon_dj(m, d, m.actuator_trnid[i, 0], dm, fbuf, ibuf)
        g = m.actuator_gear[i, 0]
        for a in range(m.nv):
            for k in range(m.nv):
                dm[a, k] *= g
        return ok
    for a in range(m.nv):
        for k in range(m.nv):
            dm[a, k] = 0.0
    if kind == K_CRANK:
        _crank_derivative(m, d, i, dm)
        return True
    if kind == K_REFSITE:
        _refsite_derivative(m, d, i, dm)
        return True
    if kind == K_BALL or kind == K_FREE:
        # the gear turned into the child frame, u = R' g: a step q exp(e_k) turns it by u x e_k
        adr = m.jnt_dofadr[m.actuator_trnid[i, 0]] + (3 if kind == K_FREE else 0)
        u = (d.actuator_moment[i, adr], d.actuator_moment[i, adr + 1], d.actuator_moment[i, adr + 2])
        for k in range(3):
            c = cross3(u, (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0))
            for a in range(3):
                dm[adr + a, adr + k] = c[a]
        return True
    s = m.actuator_trnid[i, 0]
    mat = d.site_xmat[s]
    g = m.actuator_gear[i]
    f = (mat[0, 0] * g[0] + mat[0, 1] * g[1] + mat[0, 2] * g[2], mat[1, 0] * g[0] + mat[1, 1] * g[1]
         + mat[1, 2] * g[2], mat[2, 0] * g[0] + mat[2, 1] * g[1] + mat[2, 2] * g[2])
    t = (mat[0, 0] * g[3] + mat[0, 1] * g[4] + mat[0, 2] * g[5], mat[1, 0] * g[3] + mat[1, 1] * g[4]
         + mat[1, 2] * g[5], mat[2, 0] * g[3] + mat[2, 1] * g[4] + mat[2, 2] * g[5])
    p = d.site_xpos[s]
    _wrench_partials(m, d, m.site_bodyid[s], p[0], p[1], p[2], f, t, True, 1.0, dm)
    return True


@kernel
def _line_terms(m, d, mom, s, s_v, dm, rhs, clamp):
    """rhs[:, :nv] += s dm + mom (s_v dm' qvel)': the q-derivative of mom(q)' s(l, v) beyond the
    length's term, v = mom . qvel (rows held by actuatorfrcrange skipped where ``clamp``)."""
    nv = m.nv
    for k in range(nv):
        vq = 0.0
        for a in range(nv):
            vq += d.qvel[a] * dm[a, k]
        for r in range(nv):
            if clamp and actfrc_clamped(m, d, r):
                continue
            rhs[r, k] += s * dm[r, k] + mom[r] * s_v * vq


@kernel
def inv_right_jacobian(x0, x1, x2):
    """J_r^-1 of SO(3) at rotation vector x (by rows, 9-tuple): I + [x]/2 + c [x]^2,
    c = 1/th^2 - (1 + cos th)/(2 th sin th)."""
    th = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    if th < 1e-6:
        c2 = 1.0 / 12.0
    else:
        c2 = 1.0 / (th * th) - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))
    return (1.0 + c2 * (x0 * x0 - th * th), -0.5 * x2 + c2 * x0 * x1, 0.5 * x1 + c2 * x0 * x2,
            0.5 * x2 + c2 * x1 * x0, 1.0 + c2 * (x1 * x1 - th * th), -0.5 * x0 + c2 * x1 * x2,
            -0.5 * x1 + c2 * x2 * x0, 0.5 * x0 + c2 * x2 * x1, 1.0 + c2 * (x2 * x2 - th * th))


@kernel
def _length_gradient(m, d, i, kind, out):
    """out (nv) = d actuator_length[i] / dq: the moment where it is the length's gradient (joints
    but ball and free, tendons, slider-crank), 0 for a free joint's or a site's (length 0), a
    ball's gear' J_r^-1(x) (jointinparent too: x . R' g = x . g), a refsite's
    ``_refsite_length_gradient``."""
    nv = m.nv
    if kind == K_REFSITE:
        _refsite_length_gradient(m, d, i, out)
        return
    for c in range(nv):
        out[c] = d.actuator_moment[i, c] if kind == K_CONSTANT or kind == K_TENDON or kind == K_CRANK else 0.0
    if kind == K_BALL:
        j = m.actuator_trnid[i, 0]
        sq, sv = d.scratch_quat, d.scratch_vec
        padr, dadr = m.jnt_qposadr[j], m.jnt_dofadr[j]
        for k in range(4):
            sq[0, k] = d.qpos[padr + k]
        normalize4(sq, 0)
        quat2vel(sv, 0, sq, 0, 1.0)
        jr = inv_right_jacobian(sv[0, 0], sv[0, 1], sv[0, 2])
        g = m.actuator_gear[i]
        for c in range(3):
            out[dadr + c] = g[0] * jr[c] + g[1] * jr[3 + c] + g[2] * jr[6 + c]


@kernel
def transmission_partials(m, d, au, fl_row, fv_row, rhs, dm, fbuf, ibuf):
    """rhs[:, :nv] += what d qfrc_actuator / dq holds beyond _force_partials' constant moments
    (module docstring). au[fl_row], au[fv_row]: each force's partials in its length and velocity.
    Returns -1, or the tendon whose derivative failed (a degenerate segment)."""
    nv = m.nv
    if m.nu == 0 or m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return -1
    clamp = any_actfrc(m)
    mom = d.actuator_moment
    for i in range(m.nu):
        kind = moment_kind(m, i)
        fl = au[fl_row, i]
        if moves(m, i, kind):
            if not _moment_derivative(m, d, i, kind, dm, fbuf, ibuf):
                return m.actuator_trnid[i, 0]
            _line_terms(m, d, mom[i], d.actuator_force[i], au[fv_row, i], dm, rhs, clamp)
        if fl == 0.0 or not (kind == K_SITE or kind == K_FREE or kind == K_BALL or kind == K_REFSITE):
            continue
        # the length's gradient L is not the moment: mom fl (L - mom) on top of _force_partials'
        # mom fl mom (L in dm's first row, free now)
        _length_gradient(m, d, i, kind, dm[0])
        for r in range(nv):
            if mom[i, r] != 0.0 and not (clamp and actfrc_clamped(m, d, r)):
                for c in range(nv):
                    rhs[r, c] += mom[i, r] * fl * (dm[0, c] - mom[i, c])
    return -1


@handle_entry(args="float64[:, ::1], float64[:, :, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
                   "float64[:, ::1], int64[:, ::1], int64, int64, int64, int64",
              needed=lambda m: m.nsensor > 0)
def actuator_sensor_rows_entry(m, d, au, aa, c_mat, d_mat, dm, fbuf, ibuf, fl_row, fv_row, fu_row, fa_row):
    """C, D rows of actuatorpos, actuatorvel and actuatorfrc of the actuators whose moment or length
    moves (``moment_kind`` not K_CONSTANT; the others are sensor_rows_entry's): length L =
    ``_length_gradient``; velocity mom . qvel, (dm' qvel, mom); force f_l L + f_v dm' qvel, f_v mom,
    f_act, f_ctrl (au, aa as derivative_transition's). A value at its cutoff: a zero row."""
    nv, na = m.nv, m.na
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        return
    for s in range(m.nsensor):
        t = m.sensor_type[s]
        if not (t == _ACTUATORPOS or t == _ACTUATORVEL or t == _ACTUATORFRC):
            continue
        i, adr = m.sensor_objid[s], m.sensor_adr[s]
        kind = moment_kind(m, i)
        if kind == K_CONSTANT:
            continue
        row = c_mat[adr]
        for c in range(row.shape[0]):
            row[c] = 0.0
        for c in range(m.nu):
            d_mat[adr, c] = 0.0
        if moves(m, i, kind):
            _moment_derivative(m, d, i, kind, dm, fbuf, ibuf)
        else:
            for a in range(nv):
                for c in range(nv):
                    dm[a, c] = 0.0
        if t == _ACTUATORPOS:
            _length_gradient(m, d, i, kind, row)
        else:
            fl, fv = (0.0, 1.0) if t == _ACTUATORVEL else (au[fl_row, i], au[fv_row, i])
            if fl != 0.0:
                _length_gradient(m, d, i, kind, row)
            for c in range(nv):
                vq = 0.0
                for a in range(nv):
                    vq += d.qvel[a] * dm[a, c]
                row[c] = fl * row[c] + fv * vq
                row[nv + c] = fv * d.actuator_moment[i, c]
            if t == _ACTUATORFRC:
                for k in range(na):
                    row[2 * nv + k] = aa[fa_row, i, k]
                d_mat[adr, i] = au[fu_row, i]
        cutoff = m.sensor_cutoff[s]
        if cutoff > 0.0 and abs(d.sensordata[adr]) >= cutoff:
            for c in range(row.shape[0]):
                row[c] = 0.0
            d_mat[adr, i] = 0.0


_ACTUATORPOS, _ACTUATORVEL = int(SensorType.ACTUATORPOS), int(SensorType.ACTUATORVEL)
_ACTUATORFRC = int(SensorType.ACTUATORFRC)


@kernel
def _tendon_scalar(m, d, t):
    """(s, s_v, d s_v/dv, whether acting): tendon t's passive force along ten_J (mj_passive's
    spring and damper), its velocity derivative and that one's."""
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    s, s_v, s_vv = 0.0, 0.0, 0.0
    acting = False
    if not flags & DSBL_SPRING:
        k, p0, p1 = m.tendon_stiffness[t], m.tendon_stiffnesspoly[t, 0], m.tendon_stiffnesspoly[t, 1]
        if k != 0.0 or p0 != 0.0 or p1 != 0.0:
            acting = True
            length = d.ten_length[t]
            lower, upper = m.tendon_lengthspring[t, 0], m.tendon_lengthspring[t, 1]
            x = length - upper if length > upper else (length - lower if length < lower else 0.0)
            s -= x * poly_force(k, p0, p1, x, False)
    if not flags & DSBL_DAMPER:
        b, p0, p1 = tendon_damping_poly(m, t)
        if b != 0.0 or p0 != 0.0 or p1 != 0.0:
            acting = True
            v = d.ten_velocity[t]
            s -= v * poly_force(b, p0, p1, v, True)
            s_v = -poly_force_deriv(b, p0, p1, v, True)
            sgn = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
            s_vv = -(2.0 * p0 * sgn + 6.0 * p1 * v)
    return s, s_v, s_vv, acting


@kernel
def tendon_partials(m, d, rhs, dm, fbuf, ibuf):
    """rhs[:, :nv] += the spatial tendons' passive forces' dJ/dq terms (s dJ + J s_v dJ' qvel; the
    J s_l J and velocity terms are _force_partials'). Returns -1 or a tendon that failed."""
    for t in range(m.ntendon):
        if is_fixed_tendon(m, t):
            continue
        s, s_v, _, acting = _tendon_scalar(m, d, t)
        if not acting:
            continue
        if not _tendon_dj(m, d, t, dm, fbuf, ibuf):
            return t
        _line_terms(m, d, d.ten_J[t], s, s_v, dm, rhs, False)
    return -1


@kernel
def _system_line(m, d, mom, coef, dcoef, dm, qacc, h, rhs):
    """rhs[:, :nv] += h d(coef P[mom mom'] qacc)/dq with dm = dmom/dq, coef's q-derivative
    dcoef (dm' qvel)', P the pattern of M (pairs on one ancestor chain: mj_implicitSkip's)."""
    nv = m.nv
    for r in range(nv):
        acc = 0.0
        for c in range(nv):
            if _reaches(m, max(r, c), min(r, c)):
                acc += mom[c] * qacc[c]
        for k in range(nv):
            b = 0.0
            vq = 0.0
            for c in range(nv):
                vq += d.qvel[c] * dm[c, k]
                if _reaches(m, max(r, c), min(r, c)):
                    b += dm[c, k] * qacc[c]
            rhs[r, k] += h * (dcoef * vq * mom[r] * acc + coef * (dm[r, k] * acc + mom[r] * b))


@kernel
def system_partials(m, d, au, fv_row, rhs, qacc, dm, fbuf, ibuf):
    """rhs[:, :nv] -= d(K)/dq qacc for the moving moments in implicit's and implicitfast's K = M -
    h qDeriv: the actuators' mom' f_v mom (mjd_actuator_vel) and the spatial tendons' -J' s_v J
    (mjd_passive_vel's damping)."""
    integrator = m.opt_flags[OPT_INTEGRATOR]
    if integrator != INT_IMPLICIT and integrator != INT_IMPLICITFAST:
        return
    h = m.opt_timestep[0]
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION:
        for i in range(m.nu):
            kind = moment_kind(m, i)
            if moves(m, i, kind) and au[fv_row, i] != 0.0:
                _moment_derivative(m, d, i, kind, dm, fbuf, ibuf)
                _system_line(m, d, d.actuator_moment[i], au[fv_row, i], 0.0, dm, qacc, h, rhs)
    if not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_DAMPER:
        for t in range(m.ntendon):
            if is_fixed_tendon(m, t):
                continue
            b, p0, p1 = tendon_damping_poly(m, t)
            if b == 0.0 and p0 == 0.0 and p1 == 0.0:
                continue
            _, s_v, s_vv, _ = _tendon_scalar(m, d, t)
            _tendon_dj(m, d, t, dm, fbuf, ibuf)
            _system_line(m, d, d.ten_J[t], s_v, s_vv, dm, qacc, h, rhs)
