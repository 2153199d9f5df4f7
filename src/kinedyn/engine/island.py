"""Constraint islands: groups of kinematic trees coupled by constraint rows (engine_island.c).

A kinematic tree is a chain of dofs hanging from the world (a new tree starts at every dof
whose parent dof is -1, MuJoCo's dof_treeid). Each constraint row touches one or two trees
(more for a tendon); trees that share a row belong to the same island. MuJoCo's mj_island
finds them with a union-find in which the smaller root always wins, then numbers the islands
by their smallest tree, so the numbering is deterministic. The rows of an island are listed
in their global order, so within an island they stay grouped by type (equality, friction
loss, then limits and contacts), which the dual solvers rely on.

Kept in scratch arrays (MuJoCo's names in brackets):

    scratch_tree[0, v]        tree of dof v [dof_treeid]
    scratch_tree[1, t]        union-find parent of tree t (-1: no constraint touches it)
    scratch_tree[2, t]        island of tree t, -1 if unconstrained [tree_island]
    scratch_tree[3, v]        island of dof v, -1 if unconstrained [dof_island]
    scratch_efc_island[0, i]  island of row i [efc_island]
    scratch_efc_island[1, :]  the rows island by island [map_iefc2efc]
    scratch_island[k, s]      island s: k = 0 ne, 1 nf, 2 nefc, 3 first list position
                              [island_ne, island_nf, island_nefc, island_iefcadr]; 4 is
                              left to the solver (iterations run)
    scratch_nisland[0]        number of islands [nisland]

Every solver uses them: Newton and CG solve island by island (solver._solve_primal_islands), PGS
and noslip sweep the rows island by island.
"""

from __future__ import annotations

from kinedyn._jit import kernel
from kinedyn.engine.types import (
    CNSTR_CONTACT_ELLIPTIC,
    CNSTR_CONTACT_FRICTIONLESS,
    CNSTR_CONTACT_PYRAMIDAL,
    CNSTR_EQUALITY,
    CNSTR_FRICTION_DOF,
    CNSTR_FRICTION_TENDON,
    CNSTR_LIMIT_JOINT,
    COUNT_NEFC,
    EQ_CONNECT,
    EQ_FLEX,
    EQ_WELD,
    OBJ_SITE,
)

# rows of Data.scratch_tree
TREE_OF_DOF, TREE_PARENT, TREE_ISLAND, DOF_ISLAND = 0, 1, 2, 3
# rows of Data.scratch_island
ISLAND_NE, ISLAND_NF, ISLAND_NEFC, ISLAND_ADR, ISLAND_NITER = 0, 1, 2, 3, 4


@kernel
def _root(parent, t):
    """Canonical root of tree t, compressing the path on the way (mj_dsuRoot)."""
    root = t
    while parent[root] != root:
        root = parent[root]
    while parent[t] != t:
        nxt = parent[t]
        parent[t] = root
        t = nxt
    return root


@kernel
def _merge(parent, t1, t2):
    """Activate trees t1 and t2 and join their sets, the smaller root becoming the parent
    (mj_dsuMerge); -1 stands for the world (no tree)."""
    if t1 == -1:
        t1 = t2
    if t2 == -1:
        t2 = t1
    if parent[t1] == -1:
        parent[t1] = t1
    if parent[t2] == -1:
        parent[t2] = t2
    r1 = _root(parent, t1)
    r2 = _root(parent, t2)
    if r1 < r2:
        parent[r2] = r1
    elif r2 < r1:
        parent[r1] = r2


@kernel
def _body_tree(m, d, b):
    """Tree of body b, -1 for bodies welded to the world (MuJoCo's body_treeid)."""
    w = m.body_weldid[b]
    if m.body_dofnum[w] > 0:
        return d.scratch_tree[TREE_OF_DOF, m.body_dofadr[w]]
    return -1


@kernel
def _equality_trees(m, d, cid):
    """The trees of a connect or weld constraint's two bodies (sites stand for their bodies;
    treeIterInit's special case); -1 for a body welded to the world."""
    b1 = m.eq_obj1id[cid]
    b2 = m.eq_obj2id[cid]
    if m.eq_objtype[cid] == OBJ_SITE:
        b1 = m.site_bodyid[b1]
        b2 = m.site_bodyid[b2]
    return _body_tree(m, d, b1), _body_tree(m, d, b2)


@kernel
def make_islands(m, d, couplings=False):
    """Partition the rows into islands (mj_island); fills the scratch arrays listed above.

    ``couplings``: also join the trees the discrete integrator's metric couples (its tendon and
    actuator rank-1 terms with a nonzero scale this step, engine.metric), which MuJoCo 4.0 solves
    as one island (measured: a tendon spring between two trees, a limit on one of them)."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    tree = d.scratch_tree
    parent = tree[TREE_PARENT]
    efc_island = d.scratch_efc_island[0]
    # trees: a new one starts at every root dof (the compiler's dof_treeid)
    ntree = 0
    for v in range(nv):
        if m.dof_parentid[v] == -1:
            ntree += 1
        tree[TREE_OF_DOF, v] = ntree - 1
    for t in range(ntree):
        parent[t] = -1
    if ntree == 1:
        _one_tree(m, d)
        return
    # union the trees each row touches (unionConstraintTrees); rows of one constraint repeat
    # its trees, and the row's own tree (any of them) is kept in efc_island for now
    efc_type, efc_id, J = d.efc_type, d.efc_id, d.efc_J
    for i in range(nefc):
        ctype = efc_type[i]
        cid = efc_id[i]
        # (not a flex equality: each of its rows, one per edge, has its own trees)
        if (i > 0 and ctype == efc_type[i - 1] and cid == efc_id[i - 1]
                and not (ctype == CNSTR_EQUALITY and m.eq_type[cid] == EQ_FLEX)):
            efc_island[i] = efc_island[i - 1]
            continue
        # connect and weld: the trees of their two bodies (treeIterInit's special case)
        if ctype == CNSTR_EQUALITY and (m.eq_type[cid] == EQ_CONNECT or m.eq_type[cid] == EQ_WELD):
            t1, t2 = _equality_trees(m, d, cid)
            _merge(parent, t1, t2)
            efc_island[i] = t1 if t1 >= 0 else t2
        elif (ctype == CNSTR_CONTACT_FRICTIONLESS or ctype == CNSTR_CONTACT_PYRAMIDAL
              or ctype == CNSTR_CONTACT_ELLIPTIC):
            # contacts: the trees of their two geoms' bodies, whatever the Jacobian holds (a
            # row of it can be all zeros, a planar model's sideways friction row)
            t1 = _body_tree(m, d, m.geom_bodyid[d.contact_geom[cid, 0]])
            t2 = _body_tree(m, d, m.geom_bodyid[d.contact_geom[cid, 1]])
            _merge(parent, t1, t2)
            efc_island[i] = t1 if t1 >= 0 else t2
        elif ctype == CNSTR_FRICTION_DOF:
            t1 = tree[TREE_OF_DOF, cid]
            _merge(parent, t1, -1)
            efc_island[i] = t1
        elif ctype == CNSTR_LIMIT_JOINT:
            t1 = tree[TREE_OF_DOF, m.jnt_dofadr[cid]]
            _merge(parent, t1, -1)
            efc_island[i] = t1
        else:
            # tendons, joint, tendon and flex equalities: every tree with a
            # nonzero in the Jacobian row (treeNext's generic scan)
            t1 = -1
            for v in range(nv):
                if J[i, v] != 0.0:
                    t = tree[TREE_OF_DOF, v]
                    if t1 == -1:
                        t1 = t
                        _merge(parent, t1, -1)
                    elif t != t1:
                        _merge(parent, t1, t)
            efc_island[i] = t1
    if couplings:
        _join_couplings(m, d, parent)
    # number the islands by their smallest tree (mj_dsuAssign)
    nisland = 0
    for t in range(ntree):
        if parent[t] == -1:
            tree[TREE_ISLAND, t] = -1
        elif parent[t] == t:
            tree[TREE_ISLAND, t] = nisland
            nisland += 1
        else:
            tree[TREE_ISLAND, t] = tree[TREE_ISLAND, _root(parent, t)]
    d.scratch_nisland[0] = nisland
    for v in range(nv):
        tree[DOF_ISLAND, v] = tree[TREE_ISLAND, tree[TREE_OF_DOF, v]]
    # rows: island of each, counts per island, then the rows listed island by island
    isl = d.scratch_island
    for s in range(nisland):
        isl[ISLAND_NE, s] = 0
        isl[ISLAND_NF, s] = 0
        isl[ISLAND_NEFC, s] = 0
    for i in range(nefc):
        # a row with an all-zero Jacobian and no tree of its own (a spatial tendon between two
        # sites of one body) is in no island; MuJoCo stops there ("no tree found"). Its force
        # does not depend on qacc: the warmstart's constraint update has set it.
        s = tree[TREE_ISLAND, efc_island[i]] if efc_island[i] >= 0 else -1
        efc_island[i] = s
        if s < 0:
            continue
        isl[ISLAND_NEFC, s] += 1
        ctype = efc_type[i]
        if ctype == CNSTR_EQUALITY:
            isl[ISLAND_NE, s] += 1
        elif ctype == CNSTR_FRICTION_DOF or ctype == CNSTR_FRICTION_TENDON:
            isl[ISLAND_NF, s] += 1
    adr = 0
    for s in range(nisland):
        isl[ISLAND_ADR, s] = adr
        adr += isl[ISLAND_NEFC, s]
        isl[ISLAND_NITER, s] = 0  # reused below as a fill counter
    rows = d.scratch_efc_island[1]
    for i in range(nefc):
        s = efc_island[i]
        if s < 0:
            continue
        rows[isl[ISLAND_ADR, s] + isl[ISLAND_NITER, s]] = i
        isl[ISLAND_NITER, s] += 1
    for s in range(nisland):
        isl[ISLAND_NITER, s] = 0


@kernel
def _join_couplings(m, d, parent):
    """Join the trees each metric rank-1 term touches into the island of any of them that a row
    made active, until nothing changes (a tree reached only through other coupled trees joins
    too); trees coupled among themselves without rows stay without an island."""
    changed = True
    while changed:
        changed = False
        for t in range(m.ntendon):
            if d.scratch_efm_ts[t] != 0.0:
                changed |= _join_row(m, d, parent, d.ten_J[t])
        for i in range(m.nu):
            if d.scratch_efm_as[i] != 0.0:
                changed |= _join_row(m, d, parent, d.actuator_moment[i])


@kernel
def _join_row(m, d, parent, row):
    """Merge the trees of row's nonzeros when one of them is active; whether a merge changed
    anything."""
    tree = d.scratch_tree
    active = -1
    for v in range(m.nv):
        if row[v] != 0.0 and parent[tree[TREE_OF_DOF, v]] != -1:
            active = tree[TREE_OF_DOF, v]
            break
    if active == -1:
        return False
    changed = False
    for v in range(m.nv):
        if row[v] != 0.0:
            t = tree[TREE_OF_DOF, v]
            if parent[t] == -1 or _root(parent, t) != _root(parent, active):
                _merge(parent, active, t)
                changed = True
    return changed


@kernel
def _row_touches_tree(m, d, i):
    """Whether row i of a model with a single kinematic tree acts on it (make_islands' trees of
    a row, for one tree: any tree found is tree 0)."""
    ctype = d.efc_type[i]
    cid = d.efc_id[i]
    if ctype == CNSTR_EQUALITY and (m.eq_type[cid] == EQ_CONNECT or m.eq_type[cid] == EQ_WELD):
        t1, t2 = _equality_trees(m, d, cid)
        return t1 >= 0 or t2 >= 0
    if (ctype == CNSTR_CONTACT_FRICTIONLESS or ctype == CNSTR_CONTACT_PYRAMIDAL
            or ctype == CNSTR_CONTACT_ELLIPTIC):
        return (_body_tree(m, d, m.geom_bodyid[d.contact_geom[cid, 0]]) >= 0
                or _body_tree(m, d, m.geom_bodyid[d.contact_geom[cid, 1]]) >= 0)
    if ctype == CNSTR_FRICTION_DOF or ctype == CNSTR_LIMIT_JOINT:
        return True
    J = d.efc_J
    for v in range(m.nv):
        if J[i, v] != 0.0:
            return True
    return False


@kernel
def _one_tree(m, d):
    """make_islands for a model with one kinematic tree (every dof in tree 0): one island holding
    every row that acts on the tree, or none; the same arrays as the union-find path, without it."""
    nv, nefc = m.nv, d.efc_counts[COUNT_NEFC]
    tree = d.scratch_tree
    parent = tree[TREE_PARENT]
    efc_island = d.scratch_efc_island[0]
    efc_type, efc_id = d.efc_type, d.efc_id
    rows = d.scratch_efc_island[1]
    isl = d.scratch_island
    n = 0
    ne = 0
    nf = 0
    for i in range(nefc):
        ctype = efc_type[i]
        if i > 0 and ctype == efc_type[i - 1] and efc_id[i] == efc_id[i - 1]:
            s = efc_island[i - 1]
        else:
            s = 0 if _row_touches_tree(m, d, i) else -1
        efc_island[i] = s
        if s < 0:
            continue
        parent[0] = 0
        rows[n] = i
        n += 1
        if ctype == CNSTR_EQUALITY:
            ne += 1
        elif ctype == CNSTR_FRICTION_DOF or ctype == CNSTR_FRICTION_TENDON:
            nf += 1
    island = 0 if parent[0] != -1 else -1
    tree[TREE_ISLAND, 0] = island
    for v in range(nv):
        tree[DOF_ISLAND, v] = island
    d.scratch_nisland[0] = island + 1
    if island == 0:
        isl[ISLAND_NE, 0] = ne
        isl[ISLAND_NF, 0] = nf
        isl[ISLAND_NEFC, 0] = n
        isl[ISLAND_ADR, 0] = 0
        isl[ISLAND_NITER, 0] = 0
