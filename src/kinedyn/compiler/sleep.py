"""The compiler's AUTO sleep policy of each kinematic tree (the end of mj_setConst).

A tree whose root body gives no ``sleep=`` starts as AUTO; this pass, run once the actuators and
tendons are compiled, decides as MuJoCo 4.0's compiler does:

* a tree an actuator drives (through a joint, site, body or slider-crank; every tree on an actuated
  tendon's path) never sleeps on its own (AUTO_NEVER);
* so does every tree on a tendon spanning more than two trees, or two trees with stiffness,
  damping or an actuator; a tree the user marked ``allowed`` or ``init`` there is an error;
* every other AUTO tree may sleep (AUTO_ALLOWED).

(Flexes, which also make trees AUTO_NEVER in MuJoCo, are not compiled by kinedyn.)
"""

from __future__ import annotations

import numpy as np

from kinedyn.engine.types import EnableBit, IntegratorType, SensorType, SleepPolicy, TrnType, WrapType


def _wrap_tree(m, w: int) -> int:
    """The tree of a tendon path element's body, -1 for none (GetWrapBodyTreeId)."""
    kind, obj = int(m.wrap_type[w]), int(m.wrap_objid[w])
    if kind == WrapType.JOINT:
        body = m.jnt_bodyid[obj]
    elif kind == WrapType.SITE:
        body = m.site_bodyid[obj]
    elif kind in (WrapType.SPHERE, WrapType.CYLINDER):
        body = m.geom_bodyid[obj]
    else:
        return -1
    return int(m.body_treeid[body])


def _tendon_trees(m, i: int) -> list[int]:
    """The distinct trees on tendon i's path, in path order."""
    trees: list[int] = []
    for w in range(m.tendon_adr[i], m.tendon_adr[i] + m.tendon_num[i]):
        t = _wrap_tree(m, w)
        if t != -1 and t not in trees:
            trees.append(t)
    return trees


def resolve_sleep_policy(m, bodies) -> None:
    """AUTO -> AUTO_NEVER or AUTO_ALLOWED in ``m.tree_sleep_policy``; ``bodies`` are the
    compiler's (the error names the tree's root body element)."""
    policy = m.tree_sleep_policy
    auto = int(SleepPolicy.AUTO)

    def never(t):
        if t != -1 and policy[t] == auto:
            policy[t] = int(SleepPolicy.AUTO_NEVER)

    for i in range(m.nactuator):
        trntype, tid = int(m.actuator_trntype[i]), int(m.actuator_trnid[i, 0])
        if trntype in (TrnType.JOINT, TrnType.JOINTINPARENT):
            never(int(m.body_treeid[m.jnt_bodyid[tid]]))
        elif trntype in (TrnType.SITE, TrnType.SLIDERCRANK):
            never(int(m.body_treeid[m.site_bodyid[tid]]))
        elif trntype == TrnType.BODY:
            never(int(m.body_treeid[tid]))
        elif trntype == TrnType.TENDON:
            for w in range(m.tendon_adr[tid], m.tendon_adr[tid] + m.tendon_num[tid]):
                never(_wrap_tree(m, w))

    for i in range(m.ntendon):
        trees = _tendon_trees(m, i)
        if len(trees) < 2:
            continue
        passive = (m.tendon_stiffness[i] != 0 or np.any(m.tendon_stiffnesspoly[i] != 0)
                   or m.tendon_damping[i] != 0 or np.any(m.tendon_dampingpoly[i] != 0)
                   or m.tendon_actuatorid[i] != -1)
        if len(trees) == 2 and not passive:
            continue
        for t in trees:
            if policy[t] == auto:
                policy[t] = int(SleepPolicy.AUTO_NEVER)
            elif policy[t] in (SleepPolicy.ALLOWED, SleepPolicy.INIT):
                why = ("which spans more than 2 trees" if len(trees) > 2
                       else "with non-zero stiffness or damping")
                message = f"tree {t} connected to tendon {i} {why}, sleeping not allowed"
                raise bodies[m.tree_bodyadr[t]].error(message, "sleep")

    policy[policy == auto] = int(SleepPolicy.AUTO_ALLOWED)


def check_sleep_supported(m, flag_node) -> None:
    """With ``<flag sleep="enable"/>``: ModelError on that element for what kinedyn's sleeping
    (engine.sleep) does not reproduce yet. MuJoCo skips a sleeping tree's work and keeps its last
    values; kinedyn recomputes them, which gives MuJoCo's numbers only where those values cannot
    change while the tree sleeps."""
    if flag_node is None or not m.opt.enableflags & EnableBit.SLEEP:
        return
    missing = []
    if m.opt.integrator == IntegratorType.RK4:
        missing.append("the RK4 integrator")
    if m.ntendon:
        missing.append("tendons")
    if m.neq:
        missing.append("equality constraints")
    if m.npair:
        missing.append("explicit contact <pair>s")
    if np.any(m.jnt_limited) or np.any(m.dof_frictionloss > 0):
        missing.append("joint limits and friction loss")
    if m.opt.density or m.opt.viscosity:
        missing.append("fluid forces")
    acc = [i for i in range(m.nsensor) if m.sensor_needstage[i] == 3 or m.sensor_type[i] == SensorType.USER]
    if acc:
        missing.append("acceleration-stage and user sensors")
    may_sleep = (SleepPolicy.AUTO_ALLOWED, SleepPolicy.ALLOWED, SleepPolicy.INIT)
    if any(m.tree_sleep_policy[t] in may_sleep for t in _actuated_trees(m)):
        missing.append("actuators on trees that may sleep")
    if np.any(m.tree_sleep_policy == SleepPolicy.INIT):
        missing.append('trees that start asleep (sleep="init")')
    if missing:
        raise flag_node.error("sleeping bodies (<flag sleep=\"enable\"/>) are simulated by kinedyn without "
                              + ", ".join(missing) + " (docs/deviations.md)", "sleep")


def _actuated_trees(m) -> set[int]:
    trees = set()
    for i in range(m.nactuator):
        trntype, tid = int(m.actuator_trntype[i]), int(m.actuator_trnid[i, 0])
        if trntype in (TrnType.JOINT, TrnType.JOINTINPARENT):
            trees.add(int(m.body_treeid[m.jnt_bodyid[tid]]))
        elif trntype in (TrnType.SITE, TrnType.SLIDERCRANK):
            trees.add(int(m.body_treeid[m.site_bodyid[tid]]))
        elif trntype == TrnType.BODY:
            trees.add(int(m.body_treeid[tid]))
    trees.discard(-1)
    return trees
