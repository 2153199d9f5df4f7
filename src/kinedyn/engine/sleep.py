"""Sleeping kinematic trees (MuJoCo 4.0's mjENBL_SLEEP, engine_sleep.c).

With ``<flag sleep="enable"/>`` a tree whose dofs all stay under ``opt.sleep_tolerance``
(weighted by ``dof_length``) for mjMINAWAKE steps, together with every tree of its constraint
island, falls asleep: its ``qvel`` and ``qacc`` are zeroed and ``step`` no longer moves it. It
wakes when an awake tree touches it, when a force is applied to it, or when its ``qpos`` is
changed. The state is ``d.tree_asleep``: for an awake tree a countdown from -(1 + mjMINAWAKE) to
-1 (steps under the tolerance), for a sleeping one the next tree of its island, the island's trees
forming a cycle. ``tree_awake`` and ``body_awake`` are derived from it (mj_updateSleep).

How kinedyn reproduces MuJoCo's numbers: MuJoCo skips the sleeping trees in each stage and keeps
their last values. A sleeping tree's qpos is frozen and its qvel zero, so computing its
position and velocity quantities again gives those same values; what sleeping changes is what
the pipeline *does* with them, and that is done here as MuJoCo does it: no contacts of a sleeping
body with the world or another sleeping body (the collision filter), the wake rules after the
kinematics and the collisions, the sleep rule and the recomputation of the velocity stages after
it in ``step``, and integration of the awake trees only. The parts of the pipeline whose skipped
values would differ (constraint rows of joints and tendons, equalities, acceleration-stage
sensors, actuators of trees that may sleep) are refused by the compiler for now
(``unsupported_with_sleep``).

Every unit here is needed only by models that enable sleeping.
"""

from __future__ import annotations

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.island import TREE_ISLAND
from kinedyn.engine.types import COUNT_NCON, COUNT_NEFC, OPT_ENABLEFLAGS, OPT_SLEEP_TOLERANCE

MINAWAKE = 10  # mjMINAWAKE: steps under the tolerance before a tree may sleep
AWAKE = -(1 + MINAWAKE)  # tree_asleep of a fully awake tree
S_STATIC, S_ASLEEP, S_AWAKE = -1, 0, 1  # mjtSleepState
POLICY_AUTO_NEVER, POLICY_NEVER = 1, 3
ENBL_SLEEP = 16


def needed(m) -> bool:
    """Whether the model sleeps (the units' ``needed``)."""
    return bool(m.opt.enableflags & ENBL_SLEEP)


@kernel(inline="always")
def enabled(m):
    return (m.opt_flags[OPT_ENABLEFLAGS] & ENBL_SLEEP) != 0


@kernel
def update_sleep(m, d, staticawake):
    """tree_awake and body_awake from tree_asleep (mj_updateSleepInit): a body without dofs in its
    weld group is static, unless it is a mocap body (awake) or ``staticawake``."""
    for t in range(m.tree_bodyadr.shape[0]):
        d.tree_awake[t] = 1 if d.tree_asleep[t] < 0 else 0
    for b in range(m.body_parentid.shape[0]):
        t = m.body_treeid[b]
        if t < 0:
            if m.body_mocapid[m.body_rootid[b]] >= 0 or staticawake:
                d.body_awake[b] = S_AWAKE
            else:
                d.body_awake[b] = S_STATIC
        else:
            d.body_awake[b] = S_AWAKE if d.tree_awake[t] else S_ASLEEP


@kernel
def _tree_can_sleep(m, d, t, tol):
    """treeCanSleep: the policy allows it, no force is applied to it and every dof's velocity,
    weighted by dof_length, is under ``tol`` (exactly zero for tol == 0)."""
    policy = m.tree_sleep_policy[t]
    if policy == POLICY_NEVER or policy == POLICY_AUTO_NEVER:
        return False
    adr, num = m.tree_bodyadr[t], m.tree_bodynum[t]
    for b in range(adr, adr + num):
        for k in range(6):
            if d.xfrc_applied[b, k] != 0.0:
                return False
    adr, num = m.tree_dofadr[t], m.tree_dofnum[t]
    for v in range(adr, adr + num):
        if d.qfrc_applied[v] != 0.0:
            return False
    if tol != 0.0:
        vmax = 0.0
        for v in range(adr, adr + num):
            vmax = max(vmax, m.dof_length[v] * abs(d.qvel[v]))
            if vmax >= tol:
                return False
        return True
    for v in range(adr, adr + num):
        if d.qvel[v] != 0.0:
            return False
    return True


@kernel
def wake_island(tree_asleep, t, wakeval):
    """mj_wakeIsland: wake tree t and every tree of its cycle to ``wakeval``; an awake tree only
    takes ``wakeval`` if it is smaller (further from sleeping). Returns the number woken."""
    current = tree_asleep[t]
    if current < 0:
        tree_asleep[t] = min(wakeval, current)
        return 0
    nwoke = 0
    current = t
    while True:
        nxt = tree_asleep[current]
        tree_asleep[current] = wakeval
        nwoke += 1
        current = nxt
        if current == t or nwoke >= tree_asleep.shape[0]:
            break
    return nwoke


@kernel
def _wake(m, d):
    """mj_wake: wake the sleeping trees the user moved (tree_awake set by the kinematics' pose
    check) or pushed (xfrc_applied, qfrc_applied)."""
    nwoke = 0
    for t in range(d.tree_asleep.shape[0]):
        if d.tree_asleep[t] < 0:
            continue
        if d.tree_awake[t] or not _tree_can_sleep(m, d, t, 0.0):
            nwoke += wake_island(d.tree_asleep, t, AWAKE)
    return nwoke


@handle_entry(needed=needed)
def save_poses_entry(m, d):
    """Before the kinematics: the sleeping bodies' xpos and xquat, to tell a moved tree."""
    saved = d.scratch_sleep
    for b in range(1, m.body_parentid.shape[0]):
        if d.body_awake[b] == S_ASLEEP and m.body_jntnum[b] > 0:
            for k in range(3):
                saved[b, k] = d.xpos[b, k]
            for k in range(4):
                saved[b, 3 + k] = d.xquat[b, k]


@handle_entry(needed=needed)
def wake_after_kinematics_entry(m, d):
    """After mj_kinematics1: a sleeping body (with joints) whose pose changed marks its tree for
    waking (bitwise comparison, as MuJoCo's), then mj_wake and mj_updateSleep."""
    saved = d.scratch_sleep
    for b in range(1, m.body_parentid.shape[0]):
        if d.body_awake[b] != S_ASLEEP or m.body_jntnum[b] == 0:
            continue
        same = True
        for k in range(3):
            if d.xpos[b, k] != saved[b, k]:
                same = False
        for k in range(4):
            if d.xquat[b, k] != saved[b, 3 + k]:
                same = False
        if not same:
            d.tree_awake[m.body_treeid[b]] = 1
    if _wake(m, d):
        update_sleep(m, d, False)


@handle_entry(returns="int64", needed=needed)
def wake_collision_entry(m, d):
    """mj_wakeCollision: a contact between an awake and a sleeping tree wakes the sleeping tree's
    island to the awake tree's count; a mocap body wakes what it touches. Returns the number woken
    (then the sleep arrays are updated and the caller collides again)."""
    nwoke = 0
    for i in range(d.efc_counts[COUNT_NCON]):
        b1 = m.geom_bodyid[d.contact_geom[i, 0]]
        b2 = m.geom_bodyid[d.contact_geom[i, 1]]
        t1, t2 = m.body_treeid[b1], m.body_treeid[b2]
        if t1 < 0 or t2 < 0:
            t = t2 if t1 < 0 else t1
            b = b1 if t1 < 0 else b2
            if t >= 0 and not d.tree_awake[t] and d.body_awake[b] == S_AWAKE:
                nwoke += wake_island(d.tree_asleep, t, AWAKE)
            continue
        a1, a2 = d.tree_awake[t1], d.tree_awake[t2]
        if a1 and a2:
            continue
        sleeping = t2 if a1 else t1
        wakeval = d.tree_asleep[t1] if a1 else d.tree_asleep[t2]
        nwoke += wake_island(d.tree_asleep, sleeping, wakeval)
    if nwoke:
        update_sleep(m, d, False)
    return nwoke


@kernel
def _sleep_trees(m, d, trees, start, n):
    """Put trees[start:start+n] to sleep as one cycle, zeroing their qvel and qacc."""
    for i in range(n):
        t = trees[start + i]
        nxt = trees[start] if i == n - 1 else trees[start + i + 1]
        if d.tree_asleep[t] == -1:
            d.tree_asleep[t] = nxt
        for v in range(m.tree_dofadr[t], m.tree_dofadr[t] + m.tree_dofnum[t]):
            d.qvel[v] = 0.0
            d.qacc[v] = 0.0


@handle_entry(returns="int64", needed=needed)
def sleep_entry(m, d):
    """mj_sleep, in mj_advance: count the awake trees under the tolerance up, then put to sleep
    every island whose trees have all counted to -1, and every such unconstrained tree. Returns
    the number of trees put to sleep."""
    ntree = d.tree_asleep.shape[0]
    # (without rows make_constraint leaves the island scratch as it was: no islands)
    nisland = d.scratch_nisland[0] if d.efc_counts[COUNT_NEFC] else 0
    if d.efc_counts[COUNT_NEFC] and nisland == 0:  # rows but no islands: nothing can sleep
        return 0
    tol = m.opt_real[OPT_SLEEP_TOLERANCE]
    for t in range(ntree):
        if d.tree_asleep[t] >= 0:
            continue
        if _tree_can_sleep(m, d, t, tol):
            if d.tree_asleep[t] < -1:
                d.tree_asleep[t] += 1
        else:
            d.tree_asleep[t] = AWAKE
    # map_itree2tree (mj_island): the trees island by island in ascending order, then the
    # unconstrained ones
    order = d.scratch_sleep_trees
    island_of = d.scratch_tree[TREE_ISLAND]
    n = 0
    nslept = 0
    for s in range(nisland):
        start = n
        for t in range(ntree):
            if island_of[t] == s:
                order[n] = t
                n += 1
        can = True
        for j in range(start, n):
            if d.tree_asleep[order[j]] < -1:
                can = False
                break
        if can:
            _sleep_trees(m, d, order, start, n - start)
            nslept += n - start
    for t in range(ntree):
        if nisland and island_of[t] >= 0:
            continue
        if d.tree_asleep[t] == -1:
            order[n] = t
            _sleep_trees(m, d, order, n, 1)
            n += 1
            nslept += 1
    return nslept


@handle_entry(needed=needed)
def update_sleep_entry(m, d):
    update_sleep(m, d, False)


@kernel(inline="always")
def collision_filtered(d, w1, w2, b1, b2):
    """filterBodyPair's sleep tests: both bodies asleep, or one asleep and the other welded to
    the world (a mocap body is not, so it still touches and wakes sleeping bodies)."""
    asleep1 = d.body_awake[b1] == S_ASLEEP
    asleep2 = d.body_awake[b2] == S_ASLEEP
    if asleep1 and asleep2:
        return True
    return (asleep1 and w2 == 0) or (asleep2 and w1 == 0)
