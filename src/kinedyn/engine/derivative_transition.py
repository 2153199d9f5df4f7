"""Analytical derivatives of one step: A, B, C, D in mjd_transitionFD's layout, by the chain rule.

MuJoCo computes these only by finite differences (mjd_transitionFD, engine_derivative_fd.c); its
analytical pieces are the velocity derivatives of the smooth forces (mjd_smooth_vel) and of the
quaternion integration (mjd_quatIntegrate). Here the whole step is differentiated:

* the rigid-body part by ``derivative_rne`` (Carpentier-Mansard over MuJoCo's com-based quantities),
  evaluated at the acceleration the integrator uses, so that its q-derivative carries dM/dq qacc;
* the actuators: force f = gain(l, v) * input + bias(l, v) (mj_fwdActuation), its partials in the
  transmission's length and velocity, in the input, and the input's in ctrl and act (clamps,
  actearly, filter/filterexact/integrator/muscle activation dynamics);
* the passive springs and dampers of hinge and slide joints (polynomial ones too, mj_springdamper)
  and the dampers of fixed tendons;
* the integrator's system matrix K (M for Euler; M + h diag(B) with eulerdamp; implicitfast's
  M - h D gathered into M's sparsity as mj_implicitSkip does): K qacc = f, hence
  K dqacc = df - dK qacc, with the last term from the damper and actuator derivatives;
* the position update on MuJoCo's tangent space (mj_integratePos; for a ball or a free joint's
  rotation, q' = q exp(h w'): d' = R(h w')^T d + h Jr(h w') dw', Jr the right Jacobian of SO(3)),
  and the activation update (mj_nextActivation, with its actrange clamp).

Where the derivative is one-sided (a ctrl, act or force exactly at the edge of its range), the
value inside the range is returned, as mjd_transitionFD's one-sided differences see it; a clamp
strictly engaged gives zero. Anything else the model uses is refused with a ValueError naming it
(``unsupported``): never a wrong number. All of it is dense linear algebra on (nv, nv) blocks and
a few per-actuator scalars, done in NumPy: the kernels it calls are derivative_rne's and forward's.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.engine.derivative_rne import rne_derivatives
from kinedyn.engine.types import (
    BIAS_AFFINE,
    BIAS_MUSCLE,
    BIAS_NONE,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DSBL_CONSTRAINT,
    DSBL_DAMPER,
    DSBL_EULERDAMP,
    DSBL_SPRING,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_INTEGRATOR,
    DYN_MUSCLE,
    DYN_NONE,
    GAIN_AFFINE,
    GAIN_FIXED,
    GAIN_MUSCLE,
    INT_EULER,
    INT_IMPLICITFAST,
    JNT_BALL,
    JNT_FREE,
    MINVAL,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_TENDON,
    WRAP_JOINT,
    IntegratorType,
    SensorType,
)

# sensors differentiated here: their value is linear in qpos/qvel, or an actuator quantity
SENSORS_COVERED = frozenset({
    SensorType.JOINTPOS, SensorType.JOINTVEL, SensorType.TENDONPOS, SensorType.TENDONVEL,
    SensorType.ACTUATORPOS, SensorType.ACTUATORVEL, SensorType.ACTUATORFRC, SensorType.JOINTACTFRC,
    SensorType.CLOCK,
})


_DYN_COVERED = (DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT, DYN_MUSCLE)


def _fixed_tendon(m, t) -> bool:
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    return bool(np.all(m.wrap_type[adr:adr + num] == WRAP_JOINT))


def _lone_free_body(m, j) -> bool:
    """mj_isFreeBody: implicitfast solves such a body with its gyroscopic derivative."""
    if m.jnt_type[j] != JNT_FREE:
        return False
    b = int(m.jnt_bodyid[j])
    if m.body_jntnum[b] != 1 or m.body_subtreemass[b] != m.body_mass[b]:
        return False
    return b + 1 >= m.nbody or m.body_rootid[b + 1] != m.body_rootid[b]


def unsupported(m, d, sensors: bool = True) -> list[str]:
    """What at this model and state ``transition_derivatives`` does not differentiate, by name
    (empty when it covers everything). ``d`` after a forward pass (for its constraint rows)."""
    flags = int(m.opt.disableflags)
    out = []
    integrator = int(m.opt.integrator)
    if integrator not in (INT_EULER, INT_IMPLICITFAST):
        out.append(f"the {IntegratorType(integrator).name} integrator (Euler and implicitfast are covered; "
                   "implicit needs the q-derivative of mjd_rne_vel, RK4 the chain through its stages)")
    if integrator == INT_IMPLICITFAST:
        for j in range(m.njnt):
            if _lone_free_body(m, j):
                out.append(f"joint {j}: a lone free body under implicitfast "
                           "(its gyroscopic block, mjd_freeMhat)")
    if not flags & DSBL_CONSTRAINT and d.nefc > 0:
        out.append(f"{d.nefc} active constraint rows (contacts, limits, equalities, friction loss)")
    if m._has_actuator_callbacks:
        out.append("user-actuator callbacks")
    if np.any(m.body_gravcomp) or np.any(m.jnt_actgravcomp):
        out.append("gravity compensation")
    if m.opt.density > 0 or m.opt.viscosity > 0:
        out.append("fluid forces")
    if np.any(d.xfrc_applied):
        out.append("xfrc_applied")
    if np.any(m.tendon_armature):
        out.append("tendon armature")
    if not flags & DSBL_SPRING:
        for j in range(m.njnt):
            stiff = m.jnt_stiffness[j] or np.any(m.jnt_stiffnesspoly[j])
            if m.jnt_type[j] in (JNT_BALL, JNT_FREE) and stiff:
                out.append(f"joint {j}: the spring of a ball or free joint")
        if np.any(m.tendon_stiffness) or np.any(m.tendon_stiffnesspoly):
            out.append("tendon springs")
    for t in range(m.ntendon):
        if not _fixed_tendon(m, t) and (m.tendon_damping[t] or np.any(m.tendon_dampingpoly[t])
                                        or m.tendon_actuatorid[t] != -1):
            out.append(f"tendon {t}: a spatial tendon with damping or an actuator (its length's Hessian)")
    if m.nu and not flags & DSBL_ACTUATION:
        if np.any(m.jnt_actfrclimited):
            out.append("joint actuatorfrcrange")
        for i in range(m.nu):
            trn, tid = int(m.actuator_trntype[i]), int(m.actuator_trnid[i, 0])
            ok = (trn in (TRN_JOINT, TRN_JOINTINPARENT)
                  and m.jnt_type[tid] not in (JNT_BALL, JNT_FREE)) \
                or (trn == TRN_TENDON and _fixed_tendon(m, tid) and not m.tendon_actfrclimited[tid])
            if not ok:
                out.append(f"actuator {i}: its transmission (only hinge/slide joints and fixed tendons "
                           "without actuatorfrcrange are covered)")
            if m.actuator_dyntype[i] not in _DYN_COVERED \
                    or m.actuator_gaintype[i] not in (GAIN_FIXED, GAIN_AFFINE, GAIN_MUSCLE) \
                    or m.actuator_biastype[i] not in (BIAS_NONE, BIAS_AFFINE, BIAS_MUSCLE):
                out.append(f"actuator {i}: user dynamics, gain or bias")
            if m.actuator_actnum[i] > 1:
                out.append(f"actuator {i}: several activations")
            if integrator == INT_IMPLICITFAST and m.actuator_gaintype[i] == GAIN_MUSCLE:
                out.append(f"actuator {i}: a muscle under implicitfast (the second derivative of its gain)")
    if sensors:
        for s in range(m.nsensor):
            if int(m.sensor_type[s]) not in SENSORS_COVERED:
                out.append(f"sensor {s}: type {SensorType(int(m.sensor_type[s])).name}")
            elif m.sensor_type[s] in (SensorType.TENDONPOS, SensorType.TENDONVEL) \
                    and not _fixed_tendon(m, int(m.sensor_objid[s])):
                out.append(f"sensor {s}: on a spatial tendon")
    return out


# ---------------------------------------------------------------------------------------
# scalar partials (each mirrors a function of actuation.py / util_muscle.py)

def _muscle_norm(m, i, prm):
    """(F0, l0, normalised length) of muscle actuator i (mju_muscleGain's preamble)."""
    force = prm[i, 2]
    if force < 0.0:
        force = prm[i, 3] / max(MINVAL, m.actuator_acc0[i])
    lr = m.actuator_lengthrange[i]
    l0 = (lr[1] - lr[0]) / max(MINVAL, prm[i, 1] - prm[i, 0])
    return force, l0


def _fl(x, lmin, lmax):
    """(FL, dFL/dx): mju_muscleGainLength and its derivative."""
    if not lmin <= x <= lmax:
        return 0.0, 0.0
    a, b = 0.5 * (lmin + 1.0), 0.5 * (1.0 + lmax)
    if x <= a:
        w = max(MINVAL, a - lmin)
        y = (x - lmin) / w
        return 0.5 * y * y, y / w
    if x <= 1.0:
        w = max(MINVAL, 1.0 - a)
        y = (1.0 - x) / w
        return 1.0 - 0.5 * y * y, y / w
    if x <= b:
        w = max(MINVAL, b - 1.0)
        y = (x - 1.0) / w
        return 1.0 - 0.5 * y * y, -y / w
    w = max(MINVAL, lmax - b)
    y = (lmax - x) / w
    return 0.5 * y * y, -y / w


def _fv(x, fvmax):
    """(FV, dFV/dx) of the normalised velocity (mju_muscleGain)."""
    y = fvmax - 1.0
    if x <= -1.0:
        return 0.0, 0.0
    if x <= 0.0:
        return (x + 1.0) ** 2, 2.0 * x + 2.0
    if x <= y:
        return fvmax - (y - x) ** 2 / max(MINVAL, y), 2.0 * (y - x) / max(MINVAL, y)
    return fvmax, 0.0


def _muscle_gain(m, i, length, vel):
    """(gain, d gain/d length, d gain/d vel) of a muscle (mju_muscleGain)."""
    prm = m.actuator_gainprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    vscale = max(MINVAL, l0 * prm[i, 6])
    fl, dfl = _fl(nl, prm[i, 4], prm[i, 5])
    fv, dfv = _fv(vel / vscale, prm[i, 8])
    return -force * fl * fv, -force * dfl * fv / max(MINVAL, l0), -force * fl * dfv / vscale


def _muscle_bias(m, i, length):
    """(bias, d bias/d length) of a muscle (mju_muscleBias)."""
    prm = m.actuator_biasprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    b = 0.5 * (1.0 + prm[i, 5])
    w = max(MINVAL, b - 1.0)
    fpmax = prm[i, 7]
    if nl <= 1.0:
        return 0.0, 0.0
    if nl <= b:
        x = (nl - 1.0) / w
        return -force * fpmax * 0.5 * x * x, -force * fpmax * x / w / max(MINVAL, l0)
    x = (nl - b) / w
    return -force * fpmax * (0.5 + x), -force * fpmax / w / max(MINVAL, l0)


def _sigmoid(x):
    """(mju_sigmoid, its derivative)."""
    if x <= 0.0 or x >= 1.0:
        return (0.0 if x <= 0.0 else 1.0), 0.0
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0), 30.0 * x * x * (x - 1.0) ** 2


def _muscle_dynamics(m, i, ctrl, act):
    """(d act_dot/d ctrl, d act_dot/d act) of mju_muscleDynamics (ctrl the clamped control)."""
    prm = m.actuator_dynprm
    dc_du = 1.0 if 0.0 <= ctrl <= 1.0 else 0.0   # inside [0, 1] (one-sided at its ends)
    cc = min(max(ctrl, 0.0), 1.0)
    ac = min(max(act, 0.0), 1.0)
    dac = 1.0 if 0.0 <= act <= 1.0 else 0.0
    s = 0.5 + 1.5 * ac
    tau_act, dtau_act = prm[i, 0] * s, prm[i, 0] * 1.5 * dac
    tau_deact, dtau_deact = prm[i, 1] / s, -prm[i, 1] * 1.5 * dac / (s * s)
    width = prm[i, 2]
    dctrl = cc - act
    if width < MINVAL:
        if dctrl > 0.0:
            tau, dtau_da, dtau_du = tau_act, dtau_act, 0.0
        else:
            tau, dtau_da, dtau_du = tau_deact, dtau_deact, 0.0
    else:
        sg, dsg = _sigmoid(dctrl / width + 0.5)
        tau = tau_deact + (tau_act - tau_deact) * sg
        dtau_x = (tau_act - tau_deact) * dsg / width      # d tau / d dctrl
        dtau_da = dtau_deact + (dtau_act - dtau_deact) * sg - dtau_x
        dtau_du = dtau_x * dc_du
    if tau < MINVAL:
        return dc_du / MINVAL, -1.0 / MINVAL
    return (dc_du * tau - dctrl * dtau_du) / (tau * tau), (-tau - dctrl * dtau_da) / (tau * tau)


def _actuators(m, d):
    """Per actuator: the moment row, df/dl, df/dv, and the force's and the next activation's
    partials in ctrl and act. Returns (mom, fl, fv, fu, fa, anext_u, anext_a, deriv_v_u, deriv_v_a),
    the last two the partials of df/dv (implicitfast's system matrix) in ctrl and act."""
    nu, na = m.nu, m.na
    h = float(m.opt.timestep)
    flags = int(m.opt.disableflags)
    fl, fv = np.zeros(nu), np.zeros(nu)
    fu = np.zeros(nu)                       # df_i / d ctrl_i
    fa = np.zeros((nu, na))                 # df_i / d act
    an_u = np.zeros((na, nu))               # d act_next / d ctrl
    an_a = np.eye(na)                       # d act_next / d act
    dv_u, dv_a = np.zeros(nu), np.zeros((nu, na))
    if nu == 0 or flags & DSBL_ACTUATION:
        return np.zeros((nu, m.nv)), fl, fv, fu, fa, an_u, an_a, dv_u, dv_a
    mom = np.asarray(d.actuator_moment)
    for i in range(nu):
        c = float(d.ctrl[i])
        dc = 1.0
        if m.actuator_ctrllimited[i] and not flags & DSBL_CLAMPCTRL:
            lo, hi = m.actuator_ctrlrange[i]
            if not lo <= c <= hi:
                dc = 0.0
            c = min(max(c, lo), hi)
        dyn = int(m.actuator_dyntype[i])
        # the input: the control, or the activation (actearly: the next one)
        inp_u, inp_a = dc, None
        if dyn != DYN_NONE:
            k = int(m.actuator_actadr[i] + m.actuator_actnum[i] - 1)
            a = float(d.act[k])
            if dyn == DYN_INTEGRATOR:
                adot_u, adot_a = dc, 0.0
            elif dyn == DYN_MUSCLE:
                adot_u, adot_a = _muscle_dynamics(m, i, c, a)
            else:  # filter, filterexact
                tau = max(MINVAL, float(m.actuator_dynprm[i, 0]))
                adot_u, adot_a = dc / tau, -1.0 / tau
            if dyn == DYN_FILTEREXACT:
                tau = max(MINVAL, float(m.actuator_dynprm[i, 0]))
                s = tau * (1.0 - math.exp(-h / tau))
                nxt = a + d.act_dot[k] * s
            else:
                s = h
                nxt = a + d.act_dot[k] * h
            nu_, na_ = s * adot_u, 1.0 + s * adot_a
            if m.actuator_actlimited[i] and not m.actuator_actrange[i, 0] <= nxt <= m.actuator_actrange[i, 1]:
                nu_, na_ = 0.0, 0.0
            an_u[k, i], an_a[k, k] = nu_, na_
            if m.actuator_actearly[i]:
                inp = min(max(nxt, m.actuator_actrange[i, 0]), m.actuator_actrange[i, 1]) \
                    if m.actuator_actlimited[i] else nxt
                inp_u, inp_a = nu_, (k, na_)
            else:
                inp = a
                inp_u, inp_a = 0.0, (k, 1.0)
        else:
            inp = c
        length, vel = float(d.actuator_length[i]), float(d.actuator_velocity[i])
        gt, bt = int(m.actuator_gaintype[i]), int(m.actuator_biastype[i])
        if gt == GAIN_AFFINE:
            prm = m.actuator_gainprm[i]
            gain = prm[0] + prm[1] * length + prm[2] * vel
            g_l, g_v = m.actuator_gainprm[i, 1], m.actuator_gainprm[i, 2]
        elif gt == GAIN_MUSCLE:
            gain, g_l, g_v = _muscle_gain(m, i, length, vel)
        else:
            gain, g_l, g_v = m.actuator_gainprm[i, 0], 0.0, 0.0
        if bt == BIAS_AFFINE:
            b_l, b_v = m.actuator_biasprm[i, 1], m.actuator_biasprm[i, 2]
        elif bt == BIAS_MUSCLE:
            b_l, b_v = _muscle_bias(m, i, length)[1], 0.0
        else:
            b_l, b_v = 0.0, 0.0
        if m.actuator_forcelimited[i]:
            f = d.actuator_force[i]
            if f <= m.actuator_forcerange[i, 0] or f >= m.actuator_forcerange[i, 1]:
                continue   # held at its forcerange: no derivative in anything
        fl[i] = g_l * inp + b_l
        fv[i] = g_v * inp + b_v
        fu[i] = gain * inp_u
        dv_u[i] = g_v * inp_u
        if inp_a is not None:
            fa[i, inp_a[0]] = gain * inp_a[1]
            dv_a[i, inp_a[0]] = g_v * inp_a[1]
    return mom, fl, fv, fu, fa, an_u, an_a, dv_u, dv_a


def _dof_damping(m):
    """(a, b, c) per dof: the damping polynomial with the actuators' share (dof_damping_coefs)."""
    coef = np.zeros((m.nv, 3))
    coef[:, 0] = m.dof_damping
    coef[:, 1:] = m.dof_dampingpoly
    for i in range(m.nu):
        if m.actuator_trntype[i] in (TRN_JOINT, TRN_JOINTINPARENT):
            j = int(m.actuator_trnid[i, 0])
            g2 = m.actuator_gear[i, 0] ** 2
            if m.jnt_type[j] in (JNT_BALL, JNT_FREE):
                continue
            v = int(m.jnt_dofadr[j])
            coef[v] += g2 * np.array([m.actuator_damping[i], *m.actuator_dampingpoly[i]])
    return coef


def _tendon_damping(m):
    coef = np.zeros((m.ntendon, 3))
    coef[:, 0] = m.tendon_damping
    coef[:, 1:] = m.tendon_dampingpoly
    for i in range(m.nu):
        if m.actuator_trntype[i] == TRN_TENDON:
            t = int(m.actuator_trnid[i, 0])
            g2 = m.actuator_gear[i, 0] ** 2
            coef[t] += g2 * np.array([m.actuator_damping[i], *m.actuator_dampingpoly[i]])
    return coef


def _damper(coef, v):
    """(d(v k(v))/dv, its derivative in v) of damping polynomials ``coef`` at velocities ``v``
    (mjd_xPolyForce with |v|)."""
    a, b, c = coef[:, 0], coef[:, 1], coef[:, 2]
    return a + 2 * b * np.abs(v) + 3 * c * v * v, 2 * b * np.sign(v) + 6 * c * v


def _m_mask(m):
    """M's sparsity (both triangles) as a boolean (nv, nv) matrix."""
    mask = np.zeros((m.nv, m.nv), dtype=bool)
    for r in range(m.nv):
        cols = m.M_colind[m.M_rowadr[r]:m.M_rowadr[r] + m.M_rownnz[r]]
        mask[r, cols] = True
        mask[cols, r] = True
    return mask


def _so3(phi):
    """(R(phi), Jr(phi)): the rotation by axis-angle phi and SO(3)'s right Jacobian at phi."""
    th = float(np.linalg.norm(phi))
    k = np.array([[0.0, -phi[2], phi[1]], [phi[2], 0.0, -phi[0]], [-phi[1], phi[0], 0.0]])
    k2 = k @ k
    if th < 1e-8:
        return np.eye(3) + k + 0.5 * k2, np.eye(3) - 0.5 * k + k2 / 6.0
    s, c = math.sin(th), math.cos(th)
    rot = np.eye(3) + s / th * k + (1 - c) / th ** 2 * k2
    jr = np.eye(3) - (1 - c) / th ** 2 * k + (th - s) / th ** 3 * k2
    return rot, jr


def step_derivatives(m, w, sensors: bool):
    """(A, B, C, D, qacc) of one step from w's state; w is a work Data that forward has run on
    (it is written: qacc, the kinematic fields). C, D only when ``sensors`` (else None)."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    h = float(m.opt.timestep)
    flags = int(m.opt.disableflags)
    integrator = int(m.opt.integrator)
    mom, fl, fv, fu, fa, an_u, an_a, dv_u, dv_a = _actuators(m, w)

    # the smooth forces' partials (actuators and passive), x = [q, v, act], u = ctrl
    dfq = mom.T @ (fl[:, None] * mom)
    dfv = mom.T @ (fv[:, None] * mom)
    dfa = mom.T @ fa
    dfu = mom.T * fu[None, :]
    act_rows = (dfq.copy(), dfv.copy(), dfa, dfu)   # qfrc_actuator's alone, for its sensors
    qvel = np.asarray(w.qvel)
    dof_coef = _dof_damping(m)
    if not flags & DSBL_DAMPER:
        dd, _ = _damper(dof_coef, qvel)
        dfv[np.diag_indices(nv)] -= dd
        if m.ntendon:
            tc = _tendon_damping(m)
            tj = np.asarray(w.ten_J)
            td, _ = _damper(tc, np.asarray(w.ten_velocity))
            dfv -= tj.T @ (td[:, None] * tj)
    if not flags & DSBL_SPRING:
        for j in range(m.njnt):
            if m.jnt_type[j] in (JNT_BALL, JNT_FREE):
                continue
            a, (b, c) = m.jnt_stiffness[j], m.jnt_stiffnesspoly[j]
            x = w.qpos[m.jnt_qposadr[j]] - m.qpos_spring[m.jnt_qposadr[j]]
            dfq[m.jnt_dofadr[j], m.jnt_dofadr[j]] -= a + 2 * b * x + 3 * c * x * x

    # the integrator's system K qacc = qfrc_smooth, and dK qacc on the right-hand side
    mfull = np.zeros((nv, nv))
    for r in range(nv):
        adr = slice(m.M_rowadr[r], m.M_rowadr[r] + m.M_rownnz[r])
        mfull[r, m.M_colind[adr]] = w.M[adr]
        mfull[m.M_colind[adr], r] = w.M[adr]
    damp = not flags & DSBL_DAMPER
    eulerdamp = integrator == INT_EULER and damp and not flags & DSBL_EULERDAMP and (
        np.any(m.dof_damping) or np.any(m.dof_dampingpoly[:, :2]) or np.any(m.jnt_actuatorid != -1))
    k = mfull
    dkv = np.zeros((nv, nv))    # d(K qacc)/dv, without M
    dku = np.zeros((nv, nu))
    dka = np.zeros((nv, na))
    if eulerdamp or integrator == INT_IMPLICITFAST:
        dd, ddd = _damper(dof_coef, qvel) if damp else (np.zeros(nv), np.zeros(nv))
        k = mfull + h * np.diag(dd)
        if integrator == INT_IMPLICITFAST:
            mask = _m_mask(m)
            if damp and m.ntendon:
                tc = _tendon_damping(m)
                tj = np.asarray(w.ten_J)
                td, tdd = _damper(tc, np.asarray(w.ten_velocity))
                k = k + h * mask * (tj.T @ (td[:, None] * tj))
            k = k - h * mask * (mom.T @ (fv[:, None] * mom))
        qacc = np.linalg.solve(k, np.asarray(w.qfrc_smooth) + np.asarray(w.qfrc_constraint))
        dkv[np.diag_indices(nv)] = h * ddd * qacc
        if integrator == INT_IMPLICITFAST:
            if damp and m.ntendon:
                for t in range(m.ntendon):
                    if tdd[t]:
                        dkv += h * tdd[t] * np.outer((mask * np.outer(tj[t], tj[t])) @ qacc, tj[t])
            for i in range(nu):
                col = -h * (mask * np.outer(mom[i], mom[i])) @ qacc
                dku[:, i] += col * dv_u[i]
                dka += np.outer(col, dv_a[i])
    else:
        qacc = np.array(w.qacc)
    w.qacc[:] = qacc
    tau_q, tau_v, _ = rne_derivatives(m, w, rigid_body_only=True)
    kinv = np.linalg.inv(k)
    dqacc_q = kinv @ (dfq - tau_q)
    dqacc_v = kinv @ (dfv - tau_v - dkv)
    dqacc_a = kinv @ (dfa - dka)
    dqacc_u = kinv @ (dfu - dku)

    # Euler's update of qvel, act and (on the tangent space) qpos
    a_mat = np.zeros((ndx, ndx))
    b_mat = np.zeros((ndx, nu))
    vq, vv, va = slice(0, nv), slice(nv, 2 * nv), slice(2 * nv, ndx)
    a_mat[vv, vq] = h * dqacc_q
    a_mat[vv, vv] = np.eye(nv) + h * dqacc_v
    a_mat[vv, va] = h * dqacc_a
    b_mat[vv] = h * dqacc_u
    if na:
        a_mat[va, va] = an_a
        b_mat[va] = an_u
    vnext = qvel + h * qacc
    # position rows: identity plus h times the new velocity's rows, per joint
    a_mat[vq, vq] = np.eye(nv)
    a_mat[vq] += h * a_mat[vv]
    b_mat[vq] = h * b_mat[vv]
    for j in range(m.njnt):
        t = int(m.jnt_type[j])
        if t not in (JNT_BALL, JNT_FREE):
            continue
        r = int(m.jnt_dofadr[j]) + (3 if t == JNT_FREE else 0)
        rows = slice(r, r + 3)
        rot, jr = _so3(h * vnext[rows])
        a_mat[rows] = h * jr @ a_mat[nv + r:nv + r + 3]
        a_mat[rows, r:r + 3] += rot.T
        b_mat[rows] = h * jr @ b_mat[nv + r:nv + r + 3]
    if not sensors:
        return a_mat, b_mat, None, None, qacc
    c_mat, d_mat = _sensor_rows(m, w, mom, fl, fv, fu, fa, *act_rows)
    return a_mat, b_mat, c_mat, d_mat, qacc


def _sensor_rows(m, w, mom, fl, fv, fu, fa, dfq, dfv, dfa, dfu):
    """C, D for the covered sensors (SENSORS_COVERED); a row whose value sits at its cutoff is zero."""
    nv, na, nu = m.nv, m.na, m.nu
    c_mat = np.zeros((m.nsensordata, 2 * nv + na))
    d_mat = np.zeros((m.nsensordata, nu))
    act_on = not int(m.opt.disableflags) & DSBL_ACTUATION
    for s in range(m.nsensor):
        t, obj, adr = int(m.sensor_type[s]), int(m.sensor_objid[s]), int(m.sensor_adr[s])
        if t in (SensorType.JOINTPOS, SensorType.JOINTVEL):
            c_mat[adr, (0 if t == SensorType.JOINTPOS else nv) + int(m.jnt_dofadr[obj])] = 1.0
        elif t in (SensorType.TENDONPOS, SensorType.TENDONVEL):
            off = 0 if t == SensorType.TENDONPOS else nv
            c_mat[adr, off:off + nv] = w.ten_J[obj]
        elif t in (SensorType.ACTUATORPOS, SensorType.ACTUATORVEL):
            off = 0 if t == SensorType.ACTUATORPOS else nv
            c_mat[adr, off:off + nv] = w.actuator_moment[obj]
        elif t == SensorType.ACTUATORFRC and act_on:
            c_mat[adr, :nv] = fl[obj] * mom[obj]
            c_mat[adr, nv:2 * nv] = fv[obj] * mom[obj]
            c_mat[adr, 2 * nv:] = fa[obj]
            d_mat[adr, obj] = fu[obj]
        elif t == SensorType.JOINTACTFRC and act_on:
            v = int(m.jnt_dofadr[obj])
            c_mat[adr, :nv], c_mat[adr, nv:2 * nv], c_mat[adr, 2 * nv:] = dfq[v], dfv[v], dfa[v]
            d_mat[adr] = dfu[v]
        cutoff = m.sensor_cutoff[s]
        if cutoff > 0 and abs(w.sensordata[adr]) >= cutoff:
            c_mat[adr] = 0.0
            d_mat[adr] = 0.0
    return c_mat, d_mat
