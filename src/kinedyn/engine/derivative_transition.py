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

* the constraint force at the solver's optimum (``derivative_constraint``: G_q, G_v and
  H = -d qfrc_constraint/d qacc, every row's zone and the contact set held): forward's qacc
  satisfies M qacc + bias = f + qfrc_constraint(q, v, qacc), hence (M + H) dqacc_fwd =
  df - d(M qacc + bias) + G_q dq + G_v dv (the implicit function theorem on MuJoCo's convex
  problem). Plain Euler steps with that qacc; with eulerdamp or implicitfast the integrator's
  system K qacc = qfrc_smooth + qfrc_constraint takes d qfrc_constraint = G_q dq + G_v dv -
  H dqacc_fwd. (G_q is a central difference of the held-zone force, see that module: the one
  part of the step not differentiated analytically yet.)

Where the derivative is one-sided (a ctrl, act or force exactly at the edge of its range), the
value inside the range is returned, as mjd_transitionFD's one-sided differences see it; a clamp
strictly engaged gives zero. Anything else the model uses is refused with a ValueError naming it
(``unsupported``): never a wrong number. All of it is dense linear algebra on (nv, nv) blocks and
a few per-actuator scalars, in one unit (``transition_derivatives_entry``: forward, then the chain
rule), compiled the first time transition_derivatives is called; it calls derivative_rne's kernels.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn._jit import FastEntry, NotBound, handle_entry, kernel, rebind
from kinedyn.engine.derivative import dof_damping_deriv, eulerdamp_active, implicit_matrix
from kinedyn.engine.derivative_constraint import STATUS_OK, constraint_derivatives_entry, work_shapes
from kinedyn.engine.derivative_rne import _rne_derivs, solve_ld_rows
from kinedyn.engine.forward import forward_entry
from kinedyn.engine.smooth_inertia import factor_i, full_m_kernel, solve_ld
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import (
    BIAS_AFFINE,
    BIAS_MUSCLE,
    BIAS_NONE,
    COUNT_NEFC,
    DSBL_ACTUATION,
    DSBL_CLAMPCTRL,
    DSBL_CONSTRAINT,
    DSBL_DAMPER,
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
    OPT_DISABLEFLAGS,
    OPT_INTEGRATOR,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_TENDON,
    WRAP_JOINT,
    IntegratorType,
    ObjType,
    SensorType,
)
from kinedyn.engine.util_poly import dof_damping_poly, poly_force_deriv, tendon_damping_poly
from kinedyn.engine.util_solve import chol_factor, chol_solve

# sensors differentiated here: their value is linear in qpos/qvel, or an actuator quantity
SENSORS_COVERED = frozenset({
    SensorType.JOINTPOS, SensorType.JOINTVEL, SensorType.TENDONPOS, SensorType.TENDONVEL,
    SensorType.ACTUATORPOS, SensorType.ACTUATORVEL, SensorType.ACTUATORFRC, SensorType.JOINTACTFRC,
    SensorType.CLOCK, SensorType.FRAMEPOS,
})
# frame sensors' objects differentiated (FRAMEPOS without a reference frame)
_FRAME_OBJECTS = (int(ObjType.BODY), int(ObjType.XBODY), int(ObjType.GEOM), int(ObjType.SITE))


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


# the model arrays ``unsupported`` reads (besides the options): a change to any of them re-checks
_CHECKED = ("jnt_type", "jnt_stiffness", "jnt_stiffnesspoly", "tendon_stiffness", "tendon_stiffnesspoly",
            "tendon_damping", "tendon_dampingpoly", "tendon_actuatorid", "tendon_armature",
            "tendon_actfrclimited",
            "body_gravcomp", "jnt_actgravcomp", "jnt_actfrclimited", "actuator_trntype", "actuator_trnid",
            "actuator_dyntype", "actuator_gaintype", "actuator_biastype", "actuator_actnum", "sensor_type",
            "sensor_objid", "wrap_type")


def unsupported_cached(m, d, sensors: bool, cache: dict) -> list[str]:
    """``unsupported`` for the model's part, remembered in ``cache`` under the options and a
    digest of the arrays it reads, plus the state's part (xfrc_applied; the constraint rows are
    checked by the unit after its forward pass)."""
    opt = m.opt
    key = (sensors, int(opt.integrator), int(opt.disableflags), float(opt.density), float(opt.viscosity),
           bool(m._has_actuator_callbacks), hash(b"".join(getattr(m, name).tobytes() for name in _CHECKED)))
    found = cache.get(key)
    if found is None:
        found = cache[key] = unsupported(m, None, sensors)
    if d.xfrc_applied.any():
        return [*found, "xfrc_applied"]
    return found


def unsupported(m, d, sensors: bool = True) -> list[str]:
    """What at this model and state ``transition_derivatives`` does not differentiate, by name
    (empty when it covers everything). ``d`` after a forward pass (for its constraint rows and
    xfrc_applied), or None for the model's part alone."""
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
    if not flags & DSBL_CONSTRAINT and int(m.opt.noslip_iterations) > 0:
        out.append("the noslip solver (it changes the forces after the optimum)")
    if m._has_actuator_callbacks:
        out.append("user-actuator callbacks")
    if np.any(m.body_gravcomp) or np.any(m.jnt_actgravcomp):
        out.append("gravity compensation")
    if m.opt.density > 0 or m.opt.viscosity > 0:
        out.append("fluid forces")
    if d is not None and np.any(d.xfrc_applied):
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
                out.append(f"actuator {i}: user, pid or dcmotor dynamics, gain or bias")
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
            elif m.sensor_type[s] == SensorType.FRAMEPOS and (m.sensor_refid[s] >= 0
                                                              or m.sensor_objtype[s] not in _FRAME_OBJECTS):
                out.append(f"sensor {s}: FRAMEPOS with a reference frame or of a camera")
    return out


# ---------------------------------------------------------------------------------------
# scalar partials (each mirrors a function of actuation.py / util_muscle.py)

@kernel
def _muscle_norm(m, i, prm):
    """(F0, l0) of muscle actuator i (mju_muscleGain's preamble)."""
    force = prm[i, 2]
    if force < 0.0:
        force = prm[i, 3] / max(MINVAL, m.actuator_acc0[i])
    lr = m.actuator_lengthrange
    return force, (lr[i, 1] - lr[i, 0]) / max(MINVAL, prm[i, 1] - prm[i, 0])


@kernel
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


@kernel
def _fv(x, fvmax):
    """(FV, dFV/dx) of the normalised velocity (mju_muscleGain)."""
    y = fvmax - 1.0
    if x <= -1.0:
        return 0.0, 0.0
    if x <= 0.0:
        return (x + 1.0) * (x + 1.0), 2.0 * x + 2.0
    if x <= y:
        return fvmax - (y - x) * (y - x) / max(MINVAL, y), 2.0 * (y - x) / max(MINVAL, y)
    return fvmax, 0.0


@kernel
def _muscle_gain(m, i, length, vel):
    """(gain, d gain/d length, d gain/d vel) of a muscle (mju_muscleGain)."""
    prm = m.actuator_gainprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    vscale = max(MINVAL, l0 * prm[i, 6])
    fl, dfl = _fl(nl, prm[i, 4], prm[i, 5])
    fv, dfv = _fv(vel / vscale, prm[i, 8])
    return -force * fl * fv, -force * dfl * fv / max(MINVAL, l0), -force * fl * dfv / vscale


@kernel
def _muscle_bias_length(m, i, length):
    """d mju_muscleBias / d length."""
    prm = m.actuator_biasprm
    force, l0 = _muscle_norm(m, i, prm)
    nl = prm[i, 0] + (length - m.actuator_lengthrange[i, 0]) / max(MINVAL, l0)
    b = 0.5 * (1.0 + prm[i, 5])
    w = max(MINVAL, b - 1.0)
    if nl <= 1.0:
        return 0.0
    if nl <= b:
        return -force * prm[i, 7] * (nl - 1.0) / w / w / max(MINVAL, l0)
    return -force * prm[i, 7] / w / max(MINVAL, l0)


@kernel
def _sigmoid(x):
    """(mju_sigmoid, its derivative)."""
    if x <= 0.0:
        return 0.0, 0.0
    if x >= 1.0:
        return 1.0, 0.0
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0), 30.0 * x * x * (x - 1.0) * (x - 1.0)


@kernel
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
    dtau_du = 0.0
    if width < MINVAL:
        # the timescale switches where dctrl changes sign: the side MuJoCo's value takes
        if dctrl > 0.0:
            tau, dtau_da = tau_act, dtau_act
        else:
            tau, dtau_da = tau_deact, dtau_deact
    else:
        sg, dsg = _sigmoid(dctrl / width + 0.5)
        tau = tau_deact + (tau_act - tau_deact) * sg
        dtau_x = (tau_act - tau_deact) * dsg / width      # d tau / d dctrl
        dtau_da = dtau_deact + (dtau_act - dtau_deact) * sg - dtau_x
        dtau_du = dtau_x * dc_du
    if tau < MINVAL:
        return dc_du / MINVAL, -1.0 / MINVAL
    return (dc_du * tau - dctrl * dtau_du) / (tau * tau), (-tau - dctrl * dtau_da) / (tau * tau)


# rows of the per-actuator partials ``au`` (nu) and ``aa`` (nu, na)
_FL, _FV, _FU, _DVU = 0, 1, 2, 3     # df/dl, df/dv, df/dctrl, d(df/dv)/dctrl
_FA, _DVA = 0, 1                      # df/dact, d(df/dv)/dact


@kernel
def _actuator_partials(m, d, au, aa, a_mat, b_mat):
    """Per actuator the force's partials in its length and velocity, ctrl and act (au, aa), and the
    next activation's rows of A and B (mj_fwdActuation, mj_nextActivation)."""
    nu, nv = m.nu, m.nv
    h = m.opt_timestep[0]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    for r in range(au.shape[0]):
        for i in range(nu):
            au[r, i] = 0.0
    for r in range(aa.shape[0]):
        for i in range(nu):
            for k in range(m.na):
                aa[r, i, k] = 0.0
    for k in range(m.na):
        a_mat[2 * nv + k, 2 * nv + k] = 1.0
    if flags & DSBL_ACTUATION:
        return
    for i in range(nu):
        c = d.ctrl[i]
        dc = 1.0
        if m.actuator_ctrllimited[i] and not flags & DSBL_CLAMPCTRL:
            lo, hi = m.actuator_ctrlrange[i, 0], m.actuator_ctrlrange[i, 1]
            if not lo <= c <= hi:
                dc = 0.0
            c = min(max(c, lo), hi)
        dyn = m.actuator_dyntype[i]
        # the input: the control, or the activation (actearly: the next one)
        inp, inp_u, inp_a, k = c, dc, 0.0, -1
        if dyn != DYN_NONE:
            k = m.actuator_actadr[i] + m.actuator_actnum[i] - 1
            a = d.act[k]
            if dyn == DYN_INTEGRATOR:
                adot_u, adot_a = dc, 0.0
            elif dyn == DYN_MUSCLE:
                adot_u, adot_a = _muscle_dynamics(m, i, c, a)
            else:  # filter, filterexact
                tau = max(MINVAL, m.actuator_dynprm[i, 0])
                adot_u, adot_a = dc / tau, -1.0 / tau
            s = h
            if dyn == DYN_FILTEREXACT:
                tau = max(MINVAL, m.actuator_dynprm[i, 0])
                s = tau * (1.0 - math.exp(-h / tau))
            nxt = a + d.act_dot[k] * s
            n_u, n_a = s * adot_u, 1.0 + s * adot_a
            if m.actuator_actlimited[i]:
                lo, hi = m.actuator_actrange[i, 0], m.actuator_actrange[i, 1]
                if not lo <= nxt <= hi:
                    n_u, n_a = 0.0, 0.0
                nxt = min(max(nxt, lo), hi)
            b_mat[2 * nv + k, i] = n_u
            a_mat[2 * nv + k, 2 * nv + k] = n_a
            if m.actuator_actearly[i]:
                inp, inp_u, inp_a = nxt, n_u, n_a
            else:
                inp, inp_u, inp_a = a, 0.0, 1.0
        length, vel = d.actuator_length[i], d.actuator_velocity[i]
        gt, bt = m.actuator_gaintype[i], m.actuator_biastype[i]
        if gt == GAIN_AFFINE:
            gain = m.actuator_gainprm[i, 0] + m.actuator_gainprm[i, 1] * length \
                + m.actuator_gainprm[i, 2] * vel
            g_l, g_v = m.actuator_gainprm[i, 1], m.actuator_gainprm[i, 2]
        elif gt == GAIN_MUSCLE:
            gain, g_l, g_v = _muscle_gain(m, i, length, vel)
        else:
            gain, g_l, g_v = m.actuator_gainprm[i, 0], 0.0, 0.0
        b_l, b_v = 0.0, 0.0
        if bt == BIAS_AFFINE:
            b_l, b_v = m.actuator_biasprm[i, 1], m.actuator_biasprm[i, 2]
        elif bt == BIAS_MUSCLE:
            b_l = _muscle_bias_length(m, i, length)
        if m.actuator_forcelimited[i]:
            f = d.actuator_force[i]
            if f <= m.actuator_forcerange[i, 0] or f >= m.actuator_forcerange[i, 1]:
                continue   # held at its forcerange: no derivative in anything
        au[_FL, i] = g_l * inp + b_l
        au[_FV, i] = g_v * inp + b_v
        au[_FU, i] = gain * inp_u
        au[_DVU, i] = g_v * inp_u
        if k >= 0:
            aa[_FA, i, k] = gain * inp_a
            aa[_DVA, i, k] = g_v * inp_a


@kernel
def _damper(a, b, c, v):
    """(d(v k(v))/dv, its derivative in v) of a damping polynomial (mjd_xPolyForce, odd)."""
    av = abs(v)
    sgn = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
    return a + 2.0 * b * av + 3.0 * c * v * v, 2.0 * b * sgn + 6.0 * c * v


@kernel
def _in_m(m, r, c):
    """Whether (r, c) is in M's sparsity: one is the other's ancestor dof (or itself)."""
    if c > r:
        r, c = c, r
    while r > c:
        r = m.dof_parentid[r]
    return r == c


@kernel
def _force_partials(m, d, au, aa, rhs):
    """rhs[:, x] = d(qfrc_actuator + qfrc_passive)/d[q, v, act, ctrl] (before the rigid body)."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    for r in range(nv):
        for c in range(rhs.shape[1]):
            rhs[r, c] = 0.0
    mom = d.actuator_moment
    for i in range(nu):
        fl, fv, fu = au[_FL, i], au[_FV, i], au[_FU, i]
        for r in range(nv):
            mr = mom[i, r]
            if mr == 0.0:
                continue
            for c in range(nv):
                mc = mom[i, c]
                if mc != 0.0:
                    rhs[r, c] += mr * fl * mc
                    rhs[r, nv + c] += mr * fv * mc
            for k in range(na):
                rhs[r, 2 * nv + k] += mr * aa[_FA, i, k]
            rhs[r, ndx + i] += mr * fu
    if not flags & DSBL_DAMPER:
        for v in range(nv):
            damping, p0, p1 = dof_damping_poly(m, v)
            dd, _ = _damper(damping, p0, p1, d.qvel[v])
            rhs[v, nv + v] -= dd
        for t in range(m.ntendon):
            damping, p0, p1 = tendon_damping_poly(m, t)
            dd, _ = _damper(damping, p0, p1, d.ten_velocity[t])
            if dd != 0.0:
                for r in range(nv):
                    for c in range(nv):
                        rhs[r, nv + c] -= d.ten_J[t, r] * dd * d.ten_J[t, c]
    if not flags & DSBL_SPRING:
        for j in range(m.njnt):
            if m.jnt_type[j] == JNT_BALL or m.jnt_type[j] == JNT_FREE:
                continue
            adr = m.jnt_qposadr[j]
            x = d.qpos[adr] - m.qpos_spring[adr]
            v = m.jnt_dofadr[j]
            rhs[v, v] -= poly_force_deriv(m.jnt_stiffness[j], m.jnt_stiffnesspoly[j, 0],
                                          m.jnt_stiffnesspoly[j, 1], x, False)


@kernel
def _system(m, d, au, aa, rhs, qacc):
    """The integrator's system K qacc = qfrc_smooth + qfrc_constraint, factorised in M's layout
    (K = M for Euler without its damping, M + h diag(B) with it, implicitfast's M - h D: all on
    M's sparsity); returns (qLD, qLDiagInv) of K, qacc solved, and rhs -= d(K) qacc (the
    dampers' and the actuators' velocity terms)."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    h = m.opt_timestep[0]
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    implicitfast = m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST
    if not implicitfast and not eulerdamp_active(m):
        for v in range(nv):
            qacc[v] = d.qacc[v]
        return d.qLD, d.qLDiagInv
    qh, diaginv = d.scratch_nC, d.scratch_nv_a
    if implicitfast:
        implicit_matrix(m, d, qh)
    else:
        # Euler's (M + h diag(B)), as mj_EulerSkip
        for k in range(qh.shape[0]):
            qh[k] = d.M[k]
        for v in range(nv):
            qh[m.M_rowadr[v] + m.M_rownnz[v] - 1] += h * dof_damping_deriv(m, d, v)
    factor_i(qh, diaginv, m.M_rownnz, m.M_rowadr, m.M_colind)
    for v in range(nv):
        qacc[v] = d.qfrc_smooth[v] + d.qfrc_constraint[v]
    solve_ld(qacc, qh, diaginv, m.M_rownnz, m.M_rowadr, m.M_colind)
    if not flags & DSBL_DAMPER:
        for v in range(nv):
            damping, p0, p1 = dof_damping_poly(m, v)
            _, ddd = _damper(damping, p0, p1, d.qvel[v])
            rhs[v, nv + v] -= h * ddd * qacc[v]
    if implicitfast:
        if not flags & DSBL_DAMPER:
            for t in range(m.ntendon):
                damping, p0, p1 = tendon_damping_poly(m, t)
                _, ddd = _damper(damping, p0, p1, d.ten_velocity[t])
                if ddd != 0.0:
                    for r in range(nv):
                        acc = 0.0
                        for c in range(nv):
                            if _in_m(m, r, c):
                                acc += d.ten_J[t, r] * d.ten_J[t, c] * qacc[c]
                        for c in range(nv):
                            rhs[r, nv + c] -= h * ddd * acc * d.ten_J[t, c]
        for i in range(nu):
            if au[_DVU, i] == 0.0 and not _any_row(aa, _DVA, i):
                continue
            for r in range(nv):
                acc = 0.0
                for c in range(nv):
                    if _in_m(m, r, c):
                        acc += d.actuator_moment[i, r] * d.actuator_moment[i, c] * qacc[c]
                if acc == 0.0:
                    continue
                rhs[r, ndx + i] += h * acc * au[_DVU, i]
                for a in range(na):
                    rhs[r, 2 * nv + a] += h * acc * aa[_DVA, i, a]
    return qh, diaginv


@kernel
def _any_row(aa, r, i):
    for k in range(aa.shape[2]):
        if aa[r, i, k] != 0.0:
            return True
    return False


@kernel(inline="always")
def _skew(p0, p1, p2, r, c):
    """[p]x[r, c]."""
    if r == c:
        return 0.0
    if r == 0:
        return -p2 if c == 1 else p1
    if r == 1:
        return p2 if c == 0 else -p0
    return -p1 if c == 0 else p0


@kernel
def _tangent_rows(m, a_mat, b_mat, qvel_next, adr):
    """Rows adr..adr+3 of A and B for a ball (or a free joint's rotation) integrated by
    q' = q exp(phi), phi = h w': d' = R(phi)^T d + h Jr(phi) dw', the velocity rows h dw'."""
    nv = m.nv
    h = m.opt_timestep[0]
    p0, p1, p2 = h * qvel_next[adr], h * qvel_next[adr + 1], h * qvel_next[adr + 2]
    th2 = p0 * p0 + p1 * p1 + p2 * p2
    th = math.sqrt(th2)
    if th < 1e-8:
        a1, a2, b1, b2 = 1.0, 0.5, 0.5, 1.0 / 6.0
    else:
        sn, cs = math.sin(th), math.cos(th)
        a1, a2, b1, b2 = sn / th, (1.0 - cs) / th2, (1.0 - cs) / th2, (th - sn) / (th2 * th)
    p = (p0, p1, p2)
    for r in range(3):
        jr0 = jr1 = jr2 = 0.0
        for t in range(3):
            # Jr = I - b1 K + b2 K^2, K^2 = p p^T - th^2 I
            jr = (1.0 if r == t else 0.0) - b1 * _skew(p0, p1, p2, r, t) \
                + b2 * (p[r] * p[t] - (th2 if r == t else 0.0))
            if t == 0:
                jr0 = jr
            elif t == 1:
                jr1 = jr
            else:
                jr2 = jr
        row = adr + r
        for c in range(a_mat.shape[1]):
            a_mat[row, c] = h * (jr0 * a_mat[nv + adr, c] + jr1 * a_mat[nv + adr + 1, c]
                                 + jr2 * a_mat[nv + adr + 2, c])
        for c in range(b_mat.shape[1]):
            b_mat[row, c] = h * (jr0 * b_mat[nv + adr, c] + jr1 * b_mat[nv + adr + 1, c]
                                 + jr2 * b_mat[nv + adr + 2, c])
        for c in range(3):
            # R^T = I - a1 K + a2 K^2 (K^T = -K)
            a_mat[row, adr + c] += (1.0 if r == c else 0.0) - a1 * _skew(p0, p1, p2, r, c) \
                + a2 * (p[r] * p[c] - (th2 if r == c else 0.0))


@kernel
def _step_rows(m, d, x, qacc, a_mat, b_mat):
    """A and B's qpos and qvel rows from x = dqacc/d[q, v, act, ctrl] (mj_Euler's update)."""
    nv, na = m.nv, m.na
    ndx = 2 * nv + na
    h = m.opt_timestep[0]
    for r in range(nv):
        for c in range(ndx):
            a_mat[nv + r, c] = h * x[r, c]
        a_mat[nv + r, nv + r] += 1.0
        for c in range(m.nu):
            b_mat[nv + r, c] = h * x[r, ndx + c]
        for c in range(ndx):
            a_mat[r, c] = h * a_mat[nv + r, c]
        a_mat[r, r] += 1.0
        for c in range(m.nu):
            b_mat[r, c] = h * b_mat[nv + r, c]
    qvel_next = d.scratch_nv_a
    for v in range(nv):
        qvel_next[v] = d.qvel[v] + h * qacc[v]
    for j in range(m.njnt):
        t = m.jnt_type[j]
        if t == JNT_BALL:
            _tangent_rows(m, a_mat, b_mat, qvel_next, m.jnt_dofadr[j])
        elif t == JNT_FREE:
            _tangent_rows(m, a_mat, b_mat, qvel_next, m.jnt_dofadr[j] + 3)


@kernel
def _sensor_rows(m, d, au, aa, c_mat, d_mat):
    """C, D for the covered sensors (SENSORS_COVERED); a row whose value sits at its cutoff is zero."""
    nv, na = m.nv, m.na
    ndx = 2 * nv + na
    act_on = not m.opt_flags[OPT_DISABLEFLAGS] & DSBL_ACTUATION
    for r in range(c_mat.shape[0]):
        for c in range(ndx):
            c_mat[r, c] = 0.0
        for c in range(m.nu):
            d_mat[r, c] = 0.0
    mom = d.actuator_moment
    for s in range(m.nsensor):
        t, obj, adr = m.sensor_type[s], m.sensor_objid[s], m.sensor_adr[s]
        if t == _JOINTPOS:
            c_mat[adr, m.jnt_dofadr[obj]] = 1.0
        elif t == _JOINTVEL:
            c_mat[adr, nv + m.jnt_dofadr[obj]] = 1.0
        elif t == _TENDONPOS or t == _TENDONVEL:
            off = 0 if t == _TENDONPOS else nv
            for c in range(nv):
                c_mat[adr, off + c] = d.ten_J[obj, c]
        elif t == _ACTUATORPOS or t == _ACTUATORVEL:
            off = 0 if t == _ACTUATORPOS else nv
            for c in range(nv):
                c_mat[adr, off + c] = mom[obj, c]
        elif t == _ACTUATORFRC and act_on:
            for c in range(nv):
                c_mat[adr, c] = au[_FL, obj] * mom[obj, c]
                c_mat[adr, nv + c] = au[_FV, obj] * mom[obj, c]
            for k in range(na):
                c_mat[adr, 2 * nv + k] = aa[_FA, obj, k]
            d_mat[adr, obj] = au[_FU, obj]
        elif t == _JOINTACTFRC and act_on:
            # qfrc_actuator at the joint's dof: the moments' column v times each force's partials
            v = m.jnt_dofadr[obj]
            for i in range(m.nu):
                mv = mom[i, v]
                if mv == 0.0:
                    continue
                for c in range(nv):
                    c_mat[adr, c] += mv * au[_FL, i] * mom[i, c]
                    c_mat[adr, nv + c] += mv * au[_FV, i] * mom[i, c]
                for k in range(na):
                    c_mat[adr, 2 * nv + k] += mv * aa[_FA, i, k]
                d_mat[adr, i] += mv * au[_FU, i]
        elif t == _FRAMEPOS:
            # the point's translational Jacobian (mj_jac) is its tangent-space derivative; the
            # rotational one goes to the velocity columns for the moment, then is cleared
            ot = m.sensor_objtype[s]
            if ot == _OBJ_BODY:
                b, p = obj, d.xipos[obj]
            elif ot == _OBJ_XBODY:
                b, p = obj, d.xpos[obj]
            elif ot == _OBJ_GEOM:
                b, p = m.geom_bodyid[obj], d.geom_xpos[obj]
            else:
                b, p = m.site_bodyid[obj], d.site_xpos[obj]
            jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                       d.subtree_com, d.cdof, p[0], p[1], p[2], b, c_mat[adr:adr + 3, 0:nv],
                       c_mat[adr:adr + 3, nv:2 * nv])
            for r in range(adr, adr + 3):
                for c in range(nv, 2 * nv):
                    c_mat[r, c] = 0.0
        cutoff = m.sensor_cutoff[s]
        for r in range(adr, adr + m.sensor_dim[s]):
            if cutoff > 0.0 and abs(d.sensordata[r]) >= cutoff:
                for c in range(ndx):
                    c_mat[r, c] = 0.0
                for c in range(m.nu):
                    d_mat[r, c] = 0.0


_JOINTPOS, _JOINTVEL = int(SensorType.JOINTPOS), int(SensorType.JOINTVEL)
_TENDONPOS, _TENDONVEL = int(SensorType.TENDONPOS), int(SensorType.TENDONVEL)
_ACTUATORPOS, _ACTUATORVEL = int(SensorType.ACTUATORPOS), int(SensorType.ACTUATORVEL)
_ACTUATORFRC, _JOINTACTFRC = int(SensorType.ACTUATORFRC), int(SensorType.JOINTACTFRC)
_FRAMEPOS = int(SensorType.FRAMEPOS)
_OBJ_BODY, _OBJ_XBODY, _OBJ_GEOM = int(ObjType.BODY), int(ObjType.XBODY), int(ObjType.GEOM)


@kernel
def _finite(x):
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            return False
    return True


_MAT = "float64[:, ::1]"
_MAT3 = "float64[:, :, ::1]"


@kernel
def _constrained_forward(m, d, rhs, rhs_f, mats, kdense):
    """rhs_f <- dqacc_fwd/d[q, v, act, ctrl]: (M + H)^-1 (rhs + [G_q, G_v, 0, 0] - d(M qacc +
    bias)/d[q, v]) at forward's qacc (rhs: the smooth forces' partials; mats[2:5]: G_q, G_v, H;
    the dense M + H factorised by Cholesky in kdense, util_solve's chol_factor and chol_solve).
    mats[0:2] are used as scratch."""
    nv = m.nv
    tq, tv, gq, gv, hc = mats[0], mats[1], mats[2], mats[3], mats[4]
    _rne_derivs(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq, tv, d.scratch_lu)
    for r in range(nv):
        for c in range(rhs.shape[1]):
            rhs_f[r, c] = rhs[r, c]
        for c in range(nv):
            rhs_f[r, c] += gq[r, c] - tq[r, c]
            rhs_f[r, nv + c] += gv[r, c] - tv[r, c]
    for r in range(nv):
        for c in range(nv):
            kdense[r, c] = 0.0
    full_m_kernel(kdense, d.M, m.M_rownnz, m.M_rowadr, m.M_colind)  # M's pattern only
    for r in range(nv):
        for c in range(nv):
            kdense[r, c] += hc[r, c]
    chol_factor(kdense, nv, MINVAL)
    # each column of rhs_f through mju_cholSolve (tq's first row, consumed above, holds it)
    col = tq[0]
    for c in range(rhs_f.shape[1]):
        for r in range(nv):
            col[r] = rhs_f[r, c]
        chol_solve(col, kdense, col, nv)
        for r in range(nv):
            rhs_f[r, c] = col[r]


@handle_entry(returns="int64", args=", ".join(("float64", _MAT, _MAT, _MAT, _MAT, _MAT, _MAT3, _MAT, _MAT3,
                                               _MAT, _MAT, _MAT, "int64[:, ::1]", _MAT3)))
def transition_derivatives_entry(m, d, eps, a_mat, b_mat, c_mat, d_mat, au, aa, rhs, mats, rhs_f, kdense,
                                 fbuf, ibuf, hbuf):
    """A, B (and C, D when c_mat has rows) of one step at d's state: forward, then the chain rule
    (module docstring). Returns 0, -1 for a non-finite qpos, qvel, act, ctrl or qfrc_applied, or
    1 + the constraint derivatives' status when they fail (the matrices are then not meaningful).
    ``mats``: (5, nv, nv) scratch (dtau/dq, dtau/dv, G_q, G_v, H); ``rhs_f`` (like rhs), ``kdense``
    (nv, nv), and the constraint derivatives' fbuf, ibuf, hbuf (derivative_constraint.work_shapes)
    for states with constraint rows; ``eps`` their position step."""
    if not (_finite(d.qpos) and _finite(d.qvel) and _finite(d.act) and _finite(d.ctrl)
            and _finite(d.qfrc_applied)):
        return -1
    forward_entry(m, d)
    constrained = d.efc_counts[COUNT_NEFC] > 0
    if constrained:
        status = constraint_derivatives_entry(m, d, eps, mats[2], mats[3], mats[4], fbuf, ibuf, hbuf)
        if status != STATUS_OK:
            return 1 + status
    nv = m.nv
    ndx = 2 * nv + m.na
    for r in range(ndx):
        for c in range(ndx):
            a_mat[r, c] = 0.0
        for c in range(m.nu):
            b_mat[r, c] = 0.0
    _actuator_partials(m, d, au, aa, a_mat, b_mat)
    _force_partials(m, d, au, aa, rhs)
    if c_mat.shape[0] > 0:
        _sensor_rows(m, d, au, aa, c_mat, d_mat)
    tq, tv = mats[0], mats[1]
    if constrained:
        _constrained_forward(m, d, rhs, rhs_f, mats, kdense)
    qacc = d.scratch_nv_b
    qld, diaginv = _system(m, d, au, aa, rhs, qacc)
    if constrained and not (m.opt_flags[OPT_INTEGRATOR] == INT_IMPLICITFAST or eulerdamp_active(m)):
        # plain Euler steps with forward's qacc: its derivative is the step's
        _step_rows(m, d, rhs_f, qacc, a_mat, b_mat)
        return 0
    if constrained:
        # K dqacc = ... + d qfrc_constraint, = G_q dq + G_v dv - H dqacc_fwd
        gq, gv, hc = mats[2], mats[3], mats[4]
        for r in range(nv):
            for c in range(nv):
                rhs[r, c] += gq[r, c]
                rhs[r, nv + c] += gv[r, c]
            for k in range(nv):
                f = hc[r, k]
                if f != 0.0:
                    for c in range(rhs.shape[1]):
                        rhs[r, c] -= f * rhs_f[k, c]
    # the rigid body at the integrator's acceleration: d(M qacc + qfrc_bias)/d(q, v)
    for v in range(nv):
        d.qacc[v] = qacc[v]
    _rne_derivs(m, d, d.scratch_rne_body, d.scratch_rne_bmat, d.scratch_rne_dof, tq, tv, d.scratch_lu)
    for r in range(nv):
        for c in range(nv):
            rhs[r, c] -= tq[r, c]
            rhs[r, nv + c] -= tv[r, c]
    solve_ld_rows(m, qld, diaginv, rhs, 1.0)
    _step_rows(m, d, rhs, qacc, a_mat, b_mat)
    return 0


_TRANSITION_DERIVATIVES = FastEntry(transition_derivatives_entry)


def step_derivatives(m, w, sensors: bool, scratch: dict, eps: float = 1e-7):
    """(status, (A, B, C, D)) of one step from w's state (w: a work Data, written: forward's
    fields, qacc); status as transition_derivatives_entry's (nonzero: the matrices are void).
    C, D have no rows unless ``sensors``. ``scratch``: a dict the caller keeps per model, for the
    unit's work arrays."""
    nv, na, nu = m.nv, m.na, m.nu
    ndx = 2 * nv + na
    ns = m.nsensordata if sensors else 0
    out = (np.empty((ndx, ndx)), np.empty((ndx, nu)), np.empty((ns, ndx)), np.empty((ns, nu)))
    work = scratch.get((nv, na, nu))
    if work is None:
        fshape, ishape, hshape = work_shapes(m, w)
        work = scratch[(nv, na, nu)] = (
            np.empty((4, nu)), np.empty((2, nu, na)), np.empty((nv, ndx + nu)), np.empty((5, nv, nv)),
            np.empty((nv, ndx + nu)), np.empty((nv, nv)), np.empty(fshape), np.empty(ishape, dtype=np.int64),
            np.empty(hshape))
    try:
        status = _TRANSITION_DERIVATIVES.call(m._ptr, w._ptr, eps, *out, *work)
    except NotBound:  # the model changed since it was bound (a solver switched, say): as forward
        rebind(m, w)
        status = _TRANSITION_DERIVATIVES.call(m._ptr, w._ptr, eps, *out, *work)
    return status, out
