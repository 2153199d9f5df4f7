"""A walking pattern for a biped: ZMP preview control on the cart-table model (Kajita et al. 2003).

Reference: S. Kajita, F. Kanehiro, K. Kaneko, K. Fujiwara, K. Harada, K. Yokoi and H. Hirukawa,
"Biped Walking Pattern Generation by using Preview Control of Zero-Moment Point", ICRA 2003
(equation numbers below are that paper's), and Kajita et al., "Introduction to Humanoid
Robotics", ch. 4. The pieces, each a function here:

1. **Footsteps** (:func:`footstep_plan`): where each foot is put down and when. A step is a
   double-support phase (both feet on the ground, the ZMP travels from the old support foot
   to the new one) followed by a single-support phase (the swing foot moves to its next
   footprint while the ZMP stays in the middle of the support sole).
2. **ZMP reference** (:func:`zmp_reference`): the piecewise-linear path of the zero-moment point
   that this footstep plan implies.
3. **Cart-table model and preview control** (:func:`cart_table`, :func:`preview_gains`,
   :func:`preview_control`). The robot is approximated by a cart of mass m on a massless table
   at constant height z_c: the cart's horizontal position x is the centre of mass, and the
   table's foot pressure point is the ZMP,

       p = x - (z_c / g) x''                                              (eq. 4)

   Taking the jerk u = x''' as input and sampling every dt, the state (x, x', x'') follows

       x(k+1) = A x(k) + B u(k),   p(k) = C x(k)                          (eq. 7-8)

   The preview controller minimises sum Q_e e(i)^2 + R u(i)^2 with e = p - p_ref (eq. 10,
   the incremental form of Katayama et al.) knowing p_ref N samples ahead; its control is

       u(k) = -G_i sum_{i<=k} e(i) - G_x x(k) - sum_{j=1..N} G_p(j) p_ref(k+j)      (eq. 22)

   with gains from the discrete algebraic Riccati equation (eq. 23-24 of the paper's
   appendix), here from :func:`scipy.linalg.solve_discrete_are`.
4. **Swing-foot trajectories** (:func:`foot_trajectories`): the swing sole lifts, moves and
   lands flat with zero velocity and acceleration (minimum-jerk blends).
5. **Ground-reaction split** (:func:`support_share`, :func:`leg_torques`): the inverse
   dynamics of a floating-base trajectory gives, on the free joint, the wrench that "the
   outside" must supply; on the ground that is the feet. In single support the stance foot
   supplies all of it; in double support it is shared in proportion to where the ZMP is
   between the two soles. The leg torques are then what the joints must add when the feet,
   not a harness, carry the body.

Sample times are uniform (``dt``); all arrays have one row per sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

GRAVITY = 9.81


# ---- the cart-table model and its preview controller ------------------------------------------


def cart_table(dt: float, zc: float, g: float = GRAVITY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C) of the cart-table model sampled every ``dt`` with jerk input (Kajita eq. 7-8)."""
    A = np.array([[1.0, dt, dt * dt / 2.0],
                  [0.0, 1.0, dt],
                  [0.0, 0.0, 1.0]])
    B = np.array([[dt**3 / 6.0], [dt * dt / 2.0], [dt]])
    C = np.array([[1.0, 0.0, -zc / g]])
    return A, B, C


@dataclass(frozen=True)
class PreviewGains:
    """The preview controller of Kajita eq. 22 for one cart-table model."""

    dt: float
    zc: float
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    Gi: float                # gain on the integrated ZMP error
    Gx: np.ndarray           # (3,) state feedback gain
    Gp: np.ndarray           # (N,) preview gains on p_ref(k+1) ... p_ref(k+N)


def preview_gains(dt: float, zc: float, preview_time: float = 1.6, qe: float = 1.0, r: float = 1e-6,
                  g: float = GRAVITY) -> PreviewGains:
    """Gains of the ZMP preview controller looking ``preview_time`` ahead.

    The design model is the cart-table system augmented with the ZMP error (Katayama's
    incremental form): state X(k) = [e(k); dx(k)] with dx(k) = x(k) - x(k-1), input du(k),

        X(k+1) = At X(k) + Bt du(k) + It dp_ref(k+1),
        At = [[1, C A], [0, A]],  Bt = [C B; B],  It = [-1; 0].

    With P the solution of the Riccati equation for (At, Bt, Q = diag(qe, 0, 0, 0), R = r)
    and K = (R + Bt' P Bt)^-1 Bt' P At = [G_i, G_x], the preview gains are G_p(1) = -G_i and
    G_p(j) = -(R + Bt' P Bt)^-1 Bt' X(j-1), X(j) = Ac' X(j-1), X(0) = -Ac' P It (Ac = At - Bt K)
    (the cumulative form of Kajita's eq. 22).
    """
    A, B, C = cart_table(dt, zc, g)
    At = np.zeros((4, 4))
    At[0, 0] = 1.0
    At[0, 1:] = (C @ A)[0]
    At[1:, 1:] = A
    Bt = np.vstack([C @ B, B])
    It = np.array([[1.0], [0.0], [0.0], [0.0]])
    Q = np.zeros((4, 4))
    Q[0, 0] = qe
    P = scipy.linalg.solve_discrete_are(At, Bt, Q, np.array([[r]]))
    inv = 1.0 / (r + (Bt.T @ P @ Bt)[0, 0])
    K = inv * (Bt.T @ P @ At)
    Ac = At - Bt @ K
    N = max(1, round(preview_time / dt))
    Gp = np.empty(N)
    Gp[0] = -K[0, 0]
    X = -Ac.T @ P @ It
    for j in range(1, N):
        Gp[j] = (inv * (Bt.T @ X))[0, 0]
        X = Ac.T @ X
    return PreviewGains(dt=dt, zc=zc, A=A, B=B, C=C, Gi=float(K[0, 0]), Gx=K[0, 1:].copy(), Gp=Gp)


def preview_control(gains: PreviewGains, zmp_ref: np.ndarray, x0=None) -> tuple[np.ndarray, np.ndarray]:
    """Run the preview controller along a ZMP reference (n,) or (n, k) (one column per axis).

    Returns (state, zmp): the cart state (n, 3) or (n, k, 3) = (position, velocity,
    acceleration) of the centre of mass at every sample, and the cart-table ZMP C x(k)
    it produces. Beyond the end of the reference its last value is held (the robot stands
    still there). ``x0`` is the initial state (default: at rest over zmp_ref[0]).
    """
    ref = np.asarray(zmp_ref, dtype=float)
    flat = ref.ndim == 1
    ref = ref[:, None] if flat else ref
    n, naxis = ref.shape
    N = len(gains.Gp)
    padded = np.vstack([ref, np.repeat(ref[-1:], N, axis=0)])
    x = np.zeros((naxis, 3))
    x[:, 0] = ref[0]
    if x0 is not None:
        x[:] = np.asarray(x0, dtype=float).reshape(naxis, 3)
    state = np.empty((n, naxis, 3))
    zmp = np.empty((n, naxis))
    integral = np.zeros(naxis)
    A, B, C = gains.A, gains.B[:, 0], gains.C[0]
    for k in range(n):
        state[k] = x
        zmp[k] = x @ C
        integral += zmp[k] - ref[k]
        u = -gains.Gi * integral - x @ gains.Gx - gains.Gp @ padded[k + 1:k + 1 + N]
        x = x @ A.T + np.outer(u, B)
    if flat:
        return state[:, 0], zmp[:, 0]
    return state, zmp


# ---- footsteps, ZMP reference and swing feet ----------------------------------------------------


@dataclass(frozen=True)
class Footstep:
    """One step: ``side`` ("r" or "l") swings from ``start`` to ``end`` (sole positions on the
    ground, (x, y)) during [t_lift, t_land]; the other foot supports."""

    side: str
    start: np.ndarray
    end: np.ndarray
    t_lift: float
    t_land: float


@dataclass(frozen=True)
class FootstepPlan:
    feet0: dict              # side -> (2,) initial sole position (x, y)
    steps: list              # [Footstep]
    t_end: float             # the pattern's duration
    double_support: float
    single_support: float
    t_start: float           # first lift-off is at t_start + double_support


def footstep_plan(nstep: int, stride: float, width: float, single_support: float = 0.6,
                  double_support: float = 0.2, t_start: float = 0.6, t_stop: float = 1.2,
                  first: str = "r") -> FootstepPlan:
    """``nstep`` steps straight ahead along +x, the soles ``width`` apart (the right one at -width/2).

    The first swing foot (``first``) moves ``stride`` ahead, every later step moves the
    swing foot ``stride`` past the support foot (2 ``stride`` of travel), and the last step
    brings the swing foot alongside the support foot. Each step is ``double_support`` s with
    both feet down, then ``single_support`` s of swing. Before the first step the robot stands
    ``t_start`` s, after the last one ``t_stop`` s (with a final double support to centre the ZMP).
    """
    if nstep < 1:
        raise ValueError(f"nstep must be >= 1, got {nstep}")
    feet = {"r": np.array([0.0, -width / 2]), "l": np.array([0.0, width / 2])}
    feet0 = {side: p.copy() for side, p in feet.items()}
    other = {"r": "l", "l": "r"}
    side = first
    t = t_start
    steps = []
    for i in range(nstep):
        support = feet[other[side]]
        ahead = support[0] if i == nstep - 1 else support[0] + stride
        end = np.array([ahead, feet[side][1]])
        t_lift = t + double_support
        steps.append(Footstep(side, feet[side].copy(), end, t_lift, t_lift + single_support))
        feet[side] = end
        t = t_lift + single_support
        side = other[side]
    return FootstepPlan(feet0=feet0, steps=steps, t_end=t + double_support + t_stop,
                        double_support=double_support, single_support=single_support, t_start=t_start)


def zmp_reference(plan: FootstepPlan, t: np.ndarray, sole_centre=(0.0, 0.0)) -> np.ndarray:
    """The ZMP path (n, 2) of a footstep plan: between the feet while standing, in the middle of
    the support sole (``sole_centre`` = sole centre minus sole site, in x and y) during single
    support, moving linearly from one sole to the next during double support."""
    c = np.asarray(sole_centre, dtype=float)
    feet = {side: p + c for side, p in plan.feet0.items()}
    # knots: (time, zmp); held constant between knots of equal value
    knots = [(0.0, (feet["r"] + feet["l"]) / 2)]
    for step in plan.steps:
        support = feet["l" if step.side == "r" else "r"]
        knots += [(step.t_lift - plan.double_support, knots[-1][1]), (step.t_lift, support),
                  (step.t_land, support)]
        feet[step.side] = step.end + c
    last = plan.steps[-1].t_land
    middle = (feet["r"] + feet["l"]) / 2
    knots += [(last + plan.double_support, middle), (plan.t_end, middle)]
    times = np.array([k[0] for k in knots])
    values = np.array([k[1] for k in knots])
    return np.column_stack([np.interp(t, times, values[:, axis]) for axis in range(2)])


def min_jerk(tau):
    """The minimum-jerk blend 10 s^3 - 15 s^4 + 6 s^5 of s = clip(tau, 0, 1): 0 -> 1 at rest at both ends."""
    s = np.clip(tau, 0.0, 1.0)
    return s**3 * (10.0 - 15.0 * s + 6.0 * s * s)


def foot_trajectories(plan: FootstepPlan, t: np.ndarray, height: float) -> dict:
    """Sole positions side -> (n, 3): on the ground except while swinging; a swing moves
    horizontally by a minimum-jerk blend and lifts by ``height`` sin(pi s) of the same blend s,
    so the sole leaves and lands with zero velocity and acceleration."""
    feet = {}
    for side, p0 in plan.feet0.items():
        pos = np.zeros((len(t), 3))
        pos[:, :2] = p0
        for step in plan.steps:
            if step.side != side:
                continue
            s = min_jerk((t - step.t_lift) / (step.t_land - step.t_lift))
            after = t >= step.t_lift
            pos[after, :2] = step.start + np.outer(s[after], step.end - step.start)
            swing = after & (t < step.t_land)
            pos[swing, 2] = height * np.sin(np.pi * s[swing])
        feet[side] = pos
    return feet


def support_share(plan: FootstepPlan, t: np.ndarray, zmp: np.ndarray, feet: dict) -> np.ndarray:
    """Fraction (n,) of the ground reaction the right foot carries: 0 or 1 in single support, in
    double support the position of the ZMP on the segment from the left to the right sole."""
    share = np.empty(len(t))
    swinging = {side: np.zeros(len(t), dtype=bool) for side in ("r", "l")}
    for step in plan.steps:
        swinging[step.side] |= (t > step.t_lift) & (t < step.t_land)
    seg = feet["r"][:, :2] - feet["l"][:, :2]
    along = np.einsum("ij,ij->i", zmp - feet["l"][:, :2], seg) / np.einsum("ij,ij->i", seg, seg)
    share[:] = np.clip(along, 0.0, 1.0)
    share[swinging["r"]] = 0.0
    share[swinging["l"]] = 1.0
    return share


def foot_wrenches(J_base: dict, qfrc_base: np.ndarray, share_right: float, sole_pos: dict) -> dict:
    """The wrenches side -> (force; torque at the sole point ``sole_pos[side]``, world frame) that the
    two feet apply so that together they produce ``qfrc_base`` on the free joint, the right foot
    taking ``share_right`` of it.

    ``J_base[side]`` is the (6, 6) free-joint block of the sole's [translational; rotational]
    Jacobian: a wrench w at the sole contributes J_base' w. The whole base wrench (F, tau) is
    expressed at the share-weighted point c = a p_r + (1 - a) p_l between the soles; each foot
    then carries its share of both, a F at its sole point and a tau_c: the forces' moments
    about c cancel (sum a_s (p_s - c) x F = 0), so the sum is the base wrench. With the ZMP
    at c (:func:`support_share`), tau_c has no horizontal part and each foot's centre of
    pressure is its sole point.
    """
    a = {"r": share_right, "l": 1.0 - share_right}
    c = a["r"] * np.asarray(sole_pos["r"]) + a["l"] * np.asarray(sole_pos["l"])
    at_right = np.linalg.solve(J_base["r"].T, qfrc_base)    # the whole wrench as if at the right sole
    force = at_right[:3]
    torque_c = at_right[3:] + np.cross(np.asarray(sole_pos["r"]) - c, force)
    return {side: a[side] * np.concatenate([force, torque_c]) for side in ("r", "l")}


def leg_torques(m, d, qpos, qfrc_inverse, share_right, sole_sites: dict, free_dof: int = 0):
    """Joint forces (nv,) when the feet, not the free joint, supply the base wrench.

    ``qfrc_inverse`` is the inverse dynamics of the motion at ``qpos`` with everything on the
    free joint (a harness); the feet's wrenches (:func:`foot_wrenches`) are subtracted through
    their Jacobians, J' w, so that the free joint gets zero and the leg joints get the torques
    that hold the body up. Returns (qfrc (nv,), wrenches side -> (6,)). ``d`` is scratch.
    """
    from kinedyn.engine.smooth_kinematics import com_pos, kinematics
    from kinedyn.engine.support import jac_site

    d.qpos[:] = qpos
    kinematics(m, d)
    com_pos(m, d)
    J = {}
    for side, site in sole_sites.items():
        jacp, jacr = jac_site(m, d, site)
        J[side] = np.vstack([jacp, jacr])
    base = slice(free_dof, free_dof + 6)
    w = foot_wrenches({side: J[side][:, base] for side in J}, qfrc_inverse[base], share_right,
                      {side: d.site_xpos[site] for side, site in sole_sites.items()})
    qfrc = qfrc_inverse - sum(J[side].T @ w[side] for side in J)
    return qfrc, w


__all__ = ["Footstep", "FootstepPlan", "PreviewGains", "cart_table", "foot_trajectories", "foot_wrenches",
           "footstep_plan", "leg_torques", "min_jerk", "preview_control", "preview_gains", "support_share",
           "zmp_reference"]
