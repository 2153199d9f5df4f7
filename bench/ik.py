"""IK benchmark: kinedyn against ikpy, roboticstoolbox-python (LM) and mink, same targets.

    python -m bench.ik [--n 1000] [--n-mink 100] [--seed 0]

Cases (targets are FK of random joint positions inside the limits, so every one is reachable):

* ``leg``:  one biped foot (the ``r_ankle`` site of kd.models "biped"), 6-D pose, the six
  right-leg joints, torso fixed at qpos0. kinedyn analytic (``ik.leg6``) and numerical.
* ``arm7``: the 7-DoF arm (kd.models "arm7", iiwa kinematics), 6-D pose of site "ee".

Every solver starts from qpos0 and every returned q is judged the same way, by
kinedyn's FK: success = position error <= 1e-6 m and rotation error <= 1e-6 rad and q
inside the joint limits. Time is wall time per solve call (median), after a warm-up
(Numba compilation excluded). The peers get their own chain, built from the same
kinematic parameters (:func:`chain`), and their FK is checked against kinedyn's on a few
configurations before timing. mink is a differential-IK (one QP per step) library, so it
is driven in its usual loop (integrate until converged) on ``--n-mink`` targets.
Install the peers with ``pip install -e ".[ik-bench]"``; a peer that will not import is
reported as such. No asserts: this measures, it does not test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings

import numpy as np

import kinedyn as kd
from kinedyn import ik
from kinedyn.ik._kernel import _mat2quat

TOL_POS = 1e-6
TOL_ROT = 1e-6


# ---------------------------------------------------------------- the kinematic chain


def chain(m, site: str) -> list[tuple]:
    """The serial chain from the world to ``site`` as a list of elements.

    ("fixed", T) with T a 4x4 transform, or ("hinge", axis (3,), (lo, hi), qpos address).
    Free joints are frozen at qpos0 (their pose becomes a fixed transform).
    """
    s = m.site(site).id
    bodies = []
    b = int(m.site_bodyid[s])
    while b > 0:
        bodies.append(b)
        b = int(m.body_parentid[b])
    out = []
    for b in reversed(bodies):
        j0 = int(m.body_jntadr[b])
        if m.body_jntnum[b] and m.jnt_type[j0] == kd.JointType.FREE:
            # a free joint's qpos is the body's world pose (it replaces body_pos/body_quat)
            a = int(m.jnt_qposadr[j0])
            out.append(("fixed", _tf(m.qpos0[a:a + 3], m.qpos0[a + 3:a + 7])))
            continue
        out.append(("fixed", _tf(m.body_pos[b], m.body_quat[b])))
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            a = int(m.jnt_qposadr[j])
            if m.jnt_type[j] == kd.JointType.HINGE:
                if np.any(m.jnt_pos[j] != 0):
                    raise ValueError("chain() needs joint anchors at the body origin")
                out.append(("hinge", m.jnt_axis[j].copy(), tuple(m.jnt_range[j]), a))
            else:
                raise ValueError("chain() handles hinge and free joints only")
    out.append(("fixed", _tf(m.site_pos[s], m.site_quat[s])))
    # merge consecutive fixed transforms
    merged = []
    for e in out:
        if e[0] == "fixed" and merged and merged[-1][0] == "fixed":
            merged[-1] = ("fixed", merged[-1][1] @ e[1])
        else:
            merged.append(e)
    return merged


def _quat2mat(q):
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _tf(p, q):
    T = np.eye(4)
    T[:3, :3] = _quat2mat(q)
    T[:3, 3] = p
    return T


def _rpy(R):
    """URDF roll-pitch-yaw (R = Rz(y) Ry(p) Rx(r))."""
    return np.array([math.atan2(R[2, 1], R[2, 2]), math.asin(-max(-1.0, min(1.0, R[2, 0]))),
                     math.atan2(R[1, 0], R[0, 0])])


# ---------------------------------------------------------------- targets and judging


class Case:
    def __init__(self, name, m, site, joints, n, rng):
        self.name, self.m, self.site, self.joints = name, m, site, joints
        self.sid = m.site(site).id
        self.d = kd.Data(m)
        self.adr = np.array([m.jnt_qposadr[m.joint(j).id] for j in joints])
        self.lo = np.array([m.jnt_range[m.joint(j).id][0] for j in joints])
        self.hi = np.array([m.jnt_range[m.joint(j).id][1] for j in joints])
        self.chain = chain(m, site)
        self.targets = []  # (pos, quat, 4x4)
        for _ in range(n):
            q = m.qpos0.copy()
            q[self.adr] = rng.uniform(self.lo, self.hi)
            self.targets.append(self.fk(q))

    def fk(self, q):
        self.d.qpos[:] = q
        kd.kinematics(self.m, self.d)
        p = self.d.site_xpos[self.sid].copy()
        R = self.d.site_xmat[self.sid].copy()
        quat = np.empty(4)
        _mat2quat(R[None], 0, quat)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, p
        return p, quat, T

    def full_q(self, qj):
        q = self.m.qpos0.copy()
        q[self.adr] = qj
        return q

    def ok(self, qj, target) -> bool:
        qj = np.asarray(qj, float)
        if not np.all(np.isfinite(qj)) or np.any(qj < self.lo - 1e-9) or np.any(qj > self.hi + 1e-9):
            return False
        _, _, T = self.fk(self.full_q(qj))
        R = T[:3, :3].T @ target[2][:3, :3]
        s = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
        rot = math.atan2(s, 0.5 * (np.trace(R) - 1.0))
        return np.linalg.norm(T[:3, 3] - target[0]) <= TOL_POS and rot <= TOL_ROT


def run(case: Case, solvers: dict, limits: dict) -> dict:
    """{name: (success %, median µs, targets)} for ``solve(target) -> q_joints``.

    Solvers take turns target by target (interleaved), so a change in machine load hits
    all of them alike; each is warmed up on the first target first. ``limits[name]`` caps
    the number of targets of the slow ones.
    """
    times = {k: [] for k in solvers}
    ok = dict.fromkeys(solvers, 0)
    for solve in solvers.values():
        solve(case.targets[0])
    for i, t in enumerate(case.targets):
        for name, solve in solvers.items():
            if i >= limits.get(name, len(case.targets)):
                continue
            t0 = time.perf_counter()
            qj = solve(t)
            times[name].append(time.perf_counter() - t0)
            ok[name] += case.ok(qj, t)
    return {k: (100.0 * ok[k] / len(times[k]), 1e6 * statistics.median(times[k]), len(times[k]))
            for k in solvers}


# ---------------------------------------------------------------- solvers


def kinedyn_numeric(case: Case):
    m, joints, adr = case.m, case.joints, case.adr

    def solve(t):
        return ik.solve(m, ik.Target(site=case.site, pos=t[0], quat=t[1]), joints=joints,
                        tol_pos=TOL_POS, tol_rot=TOL_ROT).qpos[adr]
    return solve


def kinedyn_leg6(case: Case):
    m, d = case.m, kd.Data(case.m)
    d.qpos[:] = m.qpos0
    kd.kinematics(m, d)
    body_pos, body_R = d.xpos[1].copy(), d.xmat[1].copy()
    hip = m.body_pos[m.body("RLEG_LINK0").id].copy()
    A = -m.body_pos[m.body("RLEG_LINK3").id][2]
    B = -m.body_pos[m.body("RLEG_LINK4").id][2]

    def solve(t):
        return ik.leg6(body_pos, body_R, t[0], t[2][:3, :3], hip, A, B).q
    return solve


def ikpy_solver(case: Case):
    from ikpy.chain import Chain
    from ikpy.link import OriginLink, URDFLink

    links, mask, pending = [OriginLink()], [False], np.eye(4)
    for k, e in enumerate(case.chain):
        if e[0] == "fixed":
            pending = pending @ e[1]
            continue
        links.append(URDFLink(name=f"j{k}", origin_translation=pending[:3, 3],
                              origin_orientation=_rpy(pending[:3, :3]),
                              rotation=e[1], bounds=e[2]))
        mask.append(True)
        pending = np.eye(4)
    links.append(URDFLink(name="tip", origin_translation=pending[:3, 3],
                          origin_orientation=_rpy(pending[:3, :3]),
                          joint_type="fixed"))
    mask.append(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ch = Chain(links, active_links_mask=mask)
    nlinks = len(links)

    def full(qj):
        q = np.zeros(nlinks)
        q[np.flatnonzero(mask)] = qj
        return q

    q0 = full(case.m.qpos0[case.adr])

    def fk(qj):
        return ch.forward_kinematics(full(qj))

    def solve(t):
        q = ch.inverse_kinematics_frame(t[2], initial_position=q0, orientation_mode="all")
        return q[np.flatnonzero(mask)]
    return solve, fk


def rtb_solver(case: Case):
    import roboticstoolbox as rtb
    from spatialmath import SE3

    ets = rtb.ETS()
    for e in case.chain:
        if e[0] == "fixed":
            ets *= rtb.ET.SE3(SE3(e[1], check=False))
        else:
            axis = e[1]
            k = int(np.argmax(np.abs(axis)))
            if not np.isclose(abs(axis[k]), 1.0):
                raise ValueError("rtb chain needs coordinate-axis joints")
            make = (rtb.ET.Rx, rtb.ET.Ry, rtb.ET.Rz)[k]
            ets *= make(flip=bool(axis[k] < 0), qlim=np.array(e[2]))
    robot = rtb.Robot(ets)
    q0 = case.m.qpos0[case.adr].copy()

    def fk(qj):
        return np.asarray(robot.fkine(qj).A)

    def solve(t):
        # rtb stops on E = 0.5 e^T e < tol: 1e-13 keeps both norms under 1e-6
        sol = robot.ik_LM(t[2], q0=q0, tol=1e-13, joint_limits=True)
        return sol[0]
    return solve, fk


def mink_solver(case: Case):
    import mink
    import mujoco

    xml = kd.models.xml(case.name_model)
    adr = case.adr
    if "<freejoint" in xml:
        # mink moves every dof; weld the torso (at qpos0) so it solves the same 6-joint problem
        xml = xml.replace('<freejoint name="root"/>', "")
        xml = xml[:xml.index("<keyframe>")] + xml[xml.index("</keyframe>") + len("</keyframe>"):]
        adr = adr - 7
    mjm = mujoco.MjModel.from_xml_string(xml)
    cfg = mink.Configuration(mjm)
    q_start = mjm.qpos0.copy()
    task = mink.FrameTask(case.site, "site", position_cost=1.0, orientation_cost=1.0, lm_damping=1e-6)
    limits = [mink.ConfigurationLimit(mjm)]
    dt = 1.0

    def solve(t):
        cfg.update(q_start.copy())
        # mink's SE3 is (w, x, y, z, x, y, z)
        task.set_target(mink.SE3(np.concatenate([t[1], t[0]])))
        for _ in range(200):
            err = task.compute_error(cfg)
            if np.linalg.norm(err[:3]) <= TOL_POS and np.linalg.norm(err[3:]) <= TOL_ROT:
                break
            v = mink.solve_ik(cfg, [task], dt, solver="daqp", damping=1e-9, limits=limits)
            cfg.integrate_inplace(v, dt)
        return cfg.q[adr]
    return solve


def check_fk(case: Case, fk, rng, n=5) -> float:
    """Largest |T_peer - T_kinedyn| over n random configurations."""
    worst = 0.0
    for _ in range(n):
        qj = rng.uniform(case.lo, case.hi)
        worst = max(worst, float(np.abs(fk(qj) - case.fk(case.full_q(qj))[2]).max()))
    return worst


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="targets per case")
    ap.add_argument("--n-mink", type=int, default=100, help="targets for mink (slow loop)")
    ap.add_argument("--n-ikpy", type=int, default=300, help="targets for ikpy (scipy, slow)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    biped, arm7 = kd.models.load("biped"), kd.models.load("arm7")
    cases = [Case("leg (6-D foot pose)", biped, "r_ankle", [f"RLEG_J{k}" for k in range(6)], args.n, rng),
             Case("arm7 (6-D pose)", arm7, "ee", [f"j{k}" for k in range(1, 8)], args.n, rng)]
    cases[0].name_model, cases[1].name_model = "biped", "arm7"

    rows, notes = [], []
    for case in cases:
        solvers = {"kinedyn lm (numerical)": kinedyn_numeric(case)}
        if case.site == "r_ankle":
            solvers["kinedyn leg6 (analytic)"] = kinedyn_leg6(case)
        limits = {"ikpy": args.n_ikpy, "mink (daqp, loop)": args.n_mink}
        for peer, make in (("ikpy", ikpy_solver), ("roboticstoolbox ik_LM", rtb_solver)):
            try:
                solve, fk = make(case)
            except ImportError as err:
                notes.append(f"{peer}: not installed ({err}); pip install -e '.[ik-bench]'")
                continue
            err = check_fk(case, fk, rng)
            if err > 1e-9:
                notes.append(f"{peer} on {case.name}: FK differs from kinedyn by {err:.1e}; not timed")
                continue
            notes.append(f"{peer} on {case.name}: FK agrees with kinedyn to {err:.1e}")
            solvers[peer] = solve
        try:
            solvers["mink (daqp, loop)"] = mink_solver(case)
        except ImportError as err:
            notes.append(f"mink: not installed ({err}); pip install -e '.[ik-bench]'")
        for name, (ok, us, n) in run(case, solvers, limits).items():
            rows.append((case.name, name, ok, us, n))

    print(f"IK benchmark: tol {TOL_POS:g} m / {TOL_ROT:g} rad judged by kinedyn FK, joint limits enforced, "
          f"start qpos0, seed {args.seed}")
    print(f"{'case':22} {'solver':26} {'success %':>9} {'median µs':>10} {'targets':>8} "
          f"{'vs kinedyn lm':>14}")
    base = {}
    for case, solver, ok, us, n in rows:
        if solver.startswith("kinedyn lm"):
            base[case] = us
        ratio = us / base[case] if case in base else float("nan")
        print(f"{case:22} {solver:26} {ok:9.1f} {us:10.1f} {n:8d} {ratio:13.1f}x")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
