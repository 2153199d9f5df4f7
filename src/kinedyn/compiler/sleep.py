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

from kinedyn.engine.types import SleepPolicy, TrnType, WrapType


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

    for i in range(m.nu):
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
