"""Swing a cart-pole up by iLQR, linearising every step with kd.trajectory.linearize.

The pole hangs straight down at rest; a motor pushes the cart along its rail (force limited to
+-MAX_FORCE N by ctrlrange). iLQR (iterative LQR, Li & Todorov 2004) improves a control sequence
u_0 .. u_{T-1} of T steps of the model's Euler step: each iteration rolls the sequence out, takes
A_t = dx_{t+1}/dx_t and B_t = dx_{t+1}/du_t at every step (``kd.trajectory.linearize``, MuJoCo's
mjd_transitionFD at each state, the steps in parallel), solves the LQR problem of the quadratic
cost about the rollout backwards in time (a Riccati recursion), and keeps the first of a few
step sizes of the new feedback policy that lowers the cost.

    python examples/ilqr_cartpole.py [--iterations 40] [--plot docs/img/ilqr_cartpole.png]

Prints the cost of each iteration and the final pole angle; with ``--plot`` saves the cost per
iteration and the swing-up. Runs in a few seconds once the kernels are compiled.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kinedyn as kd

MAX_FORCE = 30.0
CARTPOLE = f"""
<mujoco model="cartpole">
  <option timestep="0.01" integrator="Euler"/>
  <worldbody>
    <geom name="rail" type="capsule" fromto="-3 0 0 3 0 0" size="0.02" contype="0" conaffinity="0"/>
    <body name="cart">
      <joint name="slider" type="slide" axis="1 0 0" damping="0.1"/>
      <geom name="cart" type="box" size="0.2 0.1 0.05" mass="1" contype="0" conaffinity="0"/>
      <body name="pole">
        <joint name="hinge" type="hinge" axis="0 1 0" damping="0.01"/>
        <geom name="pole" type="capsule" fromto="0 0 0 0 0 -0.6" size="0.03" mass="0.2"
              contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="push" joint="slider" ctrllimited="true" ctrlrange="-{MAX_FORCE} {MAX_FORCE}"/>
  </actuator>
</mujoco>
"""

T = 250                                  # steps of 10 ms: 2.5 s
GOAL = np.array([0.0, np.pi, 0.0, 0.0])  # [cart x, pole angle (pi: upright), velocities]
Q_FINAL = np.diag([10.0, 100.0, 10.0, 10.0])
Q_RUN = np.diag([0.1, 0.0, 0.01, 0.01])
R = 1e-3


def rollout(m, d, x0, controls, policy=None):
    """States x_0..x_T (T+1, 4) and the controls applied, stepping kd.step; with ``policy``
    (u_ref, x_ref, k, K, alpha) the controls are u_ref + alpha k + K (x - x_ref), clipped."""
    xs = np.empty((len(controls) + 1, 4))
    us = np.array(controls, dtype=float)
    kd.reset(m, d)
    d.qpos[:], d.qvel[:] = x0[:2], x0[2:]
    xs[0] = x0
    for t in range(len(controls)):
        if policy is not None:
            u_ref, x_ref, k, K, alpha = policy
            us[t] = np.clip(u_ref[t] + alpha * k[t] + K[t] @ (xs[t] - x_ref[t]), -MAX_FORCE, MAX_FORCE)
        d.ctrl[:] = us[t]
        kd.step(m, d)
        xs[t + 1, :2], xs[t + 1, 2:] = d.qpos, d.qvel
    return xs, us


def cost(xs, us) -> float:
    err = xs - GOAL
    running = np.einsum("ti,ij,tj->", err[:-1], Q_RUN, err[:-1]) + R * np.sum(us ** 2)
    return 0.5 * float(running + err[-1] @ Q_FINAL @ err[-1])


def backward_pass(A, B, xs, us, mu):
    """Feedforward k_t and gains K_t of the LQR problem about (xs, us), or None if some Q_uu is not
    positive definite (then the caller raises the regularisation mu)."""
    nx, nu = B.shape[1], B.shape[2]
    k, K = np.zeros((T, nu)), np.zeros((T, nu, nx))
    vx = Q_FINAL @ (xs[-1] - GOAL)
    vxx = Q_FINAL.copy()
    for t in range(T - 1, -1, -1):
        a, b = A[t], B[t]
        qx = Q_RUN @ (xs[t] - GOAL) + a.T @ vx
        qu = R * us[t] + b.T @ vx
        qxx = Q_RUN + a.T @ vxx @ a
        quu = R * np.eye(nu) + b.T @ vxx @ b + mu * np.eye(nu)
        qux = b.T @ vxx @ a
        if np.any(np.linalg.eigvalsh(quu) <= 0):
            return None
        k[t] = -np.linalg.solve(quu, qu)
        K[t] = -np.linalg.solve(quu, qux)
        vx = qx + K[t].T @ quu @ k[t] + K[t].T @ qu + qux.T @ k[t]
        vxx = qxx + K[t].T @ quu @ K[t] + K[t].T @ qux + qux.T @ K[t]
        vxx = 0.5 * (vxx + vxx.T)
    return k, K


def ilqr(m, iterations: int):
    d = kd.Data(m)
    x0 = np.zeros(4)
    us = np.zeros((T, m.nu))
    xs, us = rollout(m, d, x0, us)
    costs = [cost(xs, us)]
    mu = 1e-6
    for _ in range(iterations):
        # A_t, B_t at every step: packed states [time, qpos, qvel, act] before each step
        states = np.column_stack([np.arange(T) * m.opt.timestep, xs[:-1]])
        A, B, _, _ = kd.trajectory.linearize(m, states, us)
        gains = backward_pass(A, B, xs, us, mu)
        if gains is None:
            mu *= 10.0
            continue
        k, K = gains
        for alpha in (1.0, 0.5, 0.25, 0.1, 0.03):
            new_xs, new_us = rollout(m, d, x0, us, (us, xs, k, K, alpha))
            new_cost = cost(new_xs, new_us)
            if new_cost < costs[-1]:
                xs, us = new_xs, new_us
                mu = max(mu / 10.0, 1e-9)
                break
        else:
            mu *= 10.0
        costs.append(cost(xs, us))
    return xs, us, costs


def plot(path: str, xs, us, costs, dt: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax0.semilogy(costs, "o-", ms=3)
    ax0.set_xlabel("iLQR iteration")
    ax0.set_ylabel("cost")
    ax0.set_title("cost per iteration")
    ax0.grid(True, which="both", alpha=0.3)
    t = np.arange(len(xs)) * dt
    ax1.plot(t, xs[:, 1], label="pole angle (rad; pi = upright)")
    ax1.plot(t, xs[:, 0], label="cart position (m)")
    ax1.plot(t[:-1], us[:, 0] / MAX_FORCE, label=f"force / {MAX_FORCE:g} N", alpha=0.7)
    ax1.set_xlabel("time (s)")
    ax1.set_title("the swing-up found")
    ax1.legend(fontsize=8)
    ax1.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--plot", default=None, help="save the cost per iteration and the swing-up here")
    args = parser.parse_args()
    m = kd.Model.from_xml_string(CARTPOLE)
    start = time.perf_counter()
    xs, us, costs = ilqr(m, args.iterations)
    for i, c in enumerate(costs):
        print(f"iteration {i:3d}  cost {c:12.4f}")
    print(f"final pole angle {xs[-1, 1]:.3f} rad (goal pi), cart at {xs[-1, 0]:.3f} m, "
          f"{time.perf_counter() - start:.1f} s")
    if args.plot:
        plot(args.plot, xs, us, costs, m.opt.timestep)
        print(f"saved {args.plot}")


if __name__ == "__main__":
    main()
