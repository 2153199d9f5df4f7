"""Flexes: vertex positions, edge lengths, Jacobians and velocities, edge spring-dampers.

Mirrors ``mj_flex`` (engine_core_smooth.c), the flex-edge part of ``mj_fwdVelocity``
(engine_forward.c) and the flexedge-level spring-dampers of ``mj_passive``
(engine_passive.c), for the flexes kinedyn builds: non-interpolated flexes of any dim, each
vertex at its body's origin or at an offset in its body's frame (``flex_vert``;
docs/deviations.md "Flexes" lists what is refused). Everything here but the 2-D stretch
elasticity (flex_elastic_entry, per triangle and flap) works edge by edge, so elements only matter
through the edges the compiler makes from them. For edge e from vertex v1 to v2 (bodies b1, b2):

    flexedge_length[e] = |x2 - x1|,     u = (x2 - x1) / |x2 - x1|
    flexedge_J[e]      = u' (Jp(b2, x2) - Jp(b1, x1))          (mj_jacDifPair, then chain rule)
    flexedge_velocity  = flexedge_J qvel
    qfrc_spring       += flexedge_J' k (length0 - length),  qfrc_damper += flexedge_J' (-b velocity)

A rigid flex (all vertices in one body) skips its edges; a flex with neither an edge equality,
edge stiffness, edge damping nor flex damping skips the Jacobians (MuJoCo's ``skipjacobian``),
so its edge velocities are zero. The units are reached only by models with flexes.

The implicit integrators take the edge damping explicitly: MuJoCo 4.0.0 (the wheel the tests
compare with) puts no flex term in qDeriv for these flexes; the rope of tests/test_flex.py with
edge damping matches it to ~1e-14 under implicit and implicitfast this way. (MuJoCo's later
sources add ``-damping J'J`` per edge in mjd_passive_vel; adding it here left qvel 0.1 off
4.0.0's.)
"""

from __future__ import annotations

import math

from kinedyn._jit import handle_entry, kernel
from kinedyn.engine.support import jac_kernel
from kinedyn.engine.types import DSBL_DAMPER, DSBL_SPRING, MINVAL, OPT_DISABLEFLAGS


def used(m) -> bool:
    """Whether the model has flexes (the flex units are compiled and called only then)."""
    return m.nflex > 0


@kernel
def _flex_edges(m, d, ignore_rigid):
    """flexvert_xpos, flexedge_length and flexedge_J of every flex (mj_flex); ``ignore_rigid``
    treats rigid flexes as deformable (set0 does so for flexedge_length0)."""
    nv = m.nv
    xpos = d.flexvert_xpos
    for i in range(m.nflexvert):
        b = m.flex_vertbodyid[i]
        vx, vy, vz = m.flex_vert[i, 0], m.flex_vert[i, 1], m.flex_vert[i, 2]
        if vx == 0.0 and vy == 0.0 and vz == 0.0:
            for k in range(3):
                xpos[i, k] = d.xpos[b, k]
        else:
            # a vertex offset in its body's frame: xmat vert + xpos
            xm = d.xmat
            for k in range(3):
                xpos[i, k] = (xm[b, k, 0] * vx + xm[b, k, 1] * vy + xm[b, k, 2] * vz) + d.xpos[b, k]
    J = d.flexedge_J
    for e in range(m.nflexedge):
        for v in range(nv):
            J[e, v] = 0.0
    jac = d.scratch_cjac
    for f in range(m.nflex):
        if m.flex_rigid[f] and not ignore_rigid:
            continue
        skipjacobian = (m.flex_edgeequality[f] != 1 and m.flex_edgedamping[f] == 0.0
                        and m.flex_edgestiffness[f] == 0.0)
        vbase = m.flex_vertadr[f]
        for e in range(m.flex_edgeadr[f], m.flex_edgeadr[f] + m.flex_edgenum[f]):
            v1 = vbase + m.flex_edge[e, 0]
            v2 = vbase + m.flex_edge[e, 1]
            ux = xpos[v2, 0] - xpos[v1, 0]
            uy = xpos[v2, 1] - xpos[v1, 1]
            uz = xpos[v2, 2] - xpos[v1, 2]
            # mju_normalize3: the length, and the unit vector (left as is when the length is tiny)
            length = math.sqrt(ux * ux + uy * uy + uz * uz)
            d.flexedge_length[e] = length
            if length < MINVAL:
                ux, uy, uz = 1.0, 0.0, 0.0
            else:
                ux, uy, uz = ux / length, uy / length, uz / length
            if skipjacobian:
                continue
            b1 = m.flex_vertbodyid[v1]
            b2 = m.flex_vertbodyid[v2]
            jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                       d.subtree_com, d.cdof, xpos[v1, 0], xpos[v1, 1], xpos[v1, 2], b1, jac[0], jac[1])
            jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                       d.subtree_com, d.cdof, xpos[v2, 0], xpos[v2, 1], xpos[v2, 2], b2, jac[2], jac[3])
            # mju_mulMatTVec(J, jac2 - jac1, u): the sum over the three rows in order
            for v in range(nv):
                J[e, v] = ((jac[2, 0, v] - jac[0, 0, v]) * ux + (jac[2, 1, v] - jac[0, 1, v]) * uy
                           + (jac[2, 2, v] - jac[0, 2, v]) * uz)


@handle_entry(needed=used)
def flex_entry(m, d):
    """The flex part of the position stage (mj_flex, after mj_camlight)."""
    _flex_edges(m, d, False)


@handle_entry(needed=used)
def flex_velocity_entry(m, d):
    """flexedge_velocity = flexedge_J qvel, zero for rigid flexes (mj_fwdVelocity)."""
    nv = m.nv
    for f in range(m.nflex):
        for e in range(m.flex_edgeadr[f], m.flex_edgeadr[f] + m.flex_edgenum[f]):
            vel = 0.0
            if not m.flex_rigid[f]:
                for v in range(nv):
                    vel += d.flexedge_J[e, v] * d.qvel[v]
            d.flexedge_velocity[e] = vel


def elastic(m) -> bool:
    """Whether a flex has elastic stiffness (the stretch unit is compiled and called only then)."""
    return m.nflexstiffness > 0


@handle_entry(needed=elastic)
def flex_elastic_entry(m, d):
    """The 2-D bending (_flex_bending) and stretch forces of the elastic flexes into qfrc_spring
    (the flex elasticity of mj_passive; engine_core_util.h's mj_stretch* helpers). For each
    triangle with packed edge metric K (flex_stiffness) and edges (i, j) in the simplex order
    (1,2), (2,0), (0,1):

        elongation_e = length_e^2 - length0_e^2,     tension = K elongation
        force_i -= tension_e (x_i - x_j),            force_j += tension_e (x_i - x_j)

    (the gradient of 1/2 elongation' K elongation, up to the factor 2 MuJoCo's K absorbs),
    mapped to joint space through the translational Jacobian of each vertex point,
    qfrc_spring += Jp(body, x)' force (mj_flexScatter). MuJoCo sums each vertex's force before
    mapping it; here each edge's pair of forces is mapped as it comes (the same sum, in another
    order)."""
    if m.opt_flags[OPT_DISABLEFLAGS] & DSBL_SPRING:
        return
    # bending before stretch, in mj_passive's order
    if m.nflexbending > 0:
        _flex_bending(m, d)
    jac = d.scratch_cjac
    for f in range(m.nflex):
        adr = m.flex_stiffnessadr[f]
        if adr < 0 or m.flex_rigid[f] or m.flex_dim[f] != 2:
            continue
        vbase = m.flex_vertadr[f]
        ebase = m.flex_edgeadr[f]
        for t in range(m.flex_elemnum[f]):
            vadr = m.flex_elemdataadr[f] + 3 * t
            eadr = m.flex_elemedgeadr[f] + 3 * t
            k = m.flex_stiffness[adr + 21 * t:adr + 21 * t + 6]
            el0 = _elongation(m, d, ebase + m.flex_elemedge[eadr])
            el1 = _elongation(m, d, ebase + m.flex_elemedge[eadr + 1])
            el2 = _elongation(m, d, ebase + m.flex_elemedge[eadr + 2])
            # tension = K elongation, K symmetric from its packed upper triangle
            tensions = (k[0] * el0 + k[1] * el1 + k[2] * el2,
                        k[1] * el0 + k[3] * el1 + k[4] * el2,
                        k[2] * el0 + k[4] * el1 + k[5] * el2)
            for e in range(3):
                vi = vbase + m.flex_elem[vadr + (e + 1) % 3]
                vj = vbase + m.flex_elem[vadr + (e + 2) % 3]
                _apply_pair(m, d, jac, vi, vj, tensions[e])


@kernel
def _flex_bending(m, d):
    """The 2-D bending forces into qfrc_spring (mj_passive's flex bending, Wardetzky et al.'s
    discrete quadratic energy): for each interior edge (v0, v1) with flap vertices (v2, v3)
    (flex_edgeflap) and its 17 numbers b (flex_bending),

        force_i = -(sum_j b[4 i + j] x_j + b[16] r_i),

    with r the curved-rest term (r_1 = e1 x e2, r_2 = e2 x e0, r_3 = e0 x e1, r_0 = -(r_1 + r_2
    + r_3), e_k the edges from v0 to v1, v2, v3), mapped through each vertex point's Jacobian."""
    jac = d.scratch_cjac
    xpos = d.flexvert_xpos
    for f in range(m.nflex):
        badr = m.flex_bendingadr[f]
        if badr < 0 or m.flex_rigid[f] or m.flex_dim[f] != 2:
            continue
        vbase = m.flex_vertadr[f]
        for e in range(m.flex_edgenum[f]):
            g = m.flex_edgeadr[f] + e
            if m.flex_edgeflap[g, 1] == -1:
                continue  # a boundary edge
            verts = (vbase + m.flex_edge[g, 0], vbase + m.flex_edge[g, 1],
                     vbase + m.flex_edgeflap[g, 0], vbase + m.flex_edgeflap[g, 1])
            b = m.flex_bending[badr + 17 * e:badr + 17 * e + 17]
            x0 = xpos[verts[0]]
            e0x, e0y, e0z = xpos[verts[1], 0] - x0[0], xpos[verts[1], 1] - x0[1], xpos[verts[1], 2] - x0[2]
            e1x, e1y, e1z = xpos[verts[2], 0] - x0[0], xpos[verts[2], 1] - x0[1], xpos[verts[2], 2] - x0[2]
            e2x, e2y, e2z = xpos[verts[3], 0] - x0[0], xpos[verts[3], 1] - x0[1], xpos[verts[3], 2] - x0[2]
            # curved-rest forces: r1 = e1 x e2, r2 = e2 x e0, r3 = e0 x e1, r0 = -(r1 + r2 + r3)
            r1 = (e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x)
            r2 = (e2y * e0z - e2z * e0y, e2z * e0x - e2x * e0z, e2x * e0y - e2y * e0x)
            r3 = (e0y * e1z - e0z * e1y, e0z * e1x - e0x * e1z, e0x * e1y - e0y * e1x)
            for i in range(4):
                fx = fy = fz = 0.0
                for j in range(4):
                    xj = xpos[verts[j]]
                    fx += b[4 * i + j] * xj[0]
                    fy += b[4 * i + j] * xj[1]
                    fz += b[4 * i + j] * xj[2]
                if i == 0:
                    rx, ry, rz = -(r1[0] + r2[0] + r3[0]), -(r1[1] + r2[1] + r3[1]), -(r1[2] + r2[2] + r3[2])
                elif i == 1:
                    rx, ry, rz = r1
                elif i == 2:
                    rx, ry, rz = r2
                else:
                    rx, ry, rz = r3
                fx += b[16] * rx
                fy += b[16] * ry
                fz += b[16] * rz
                v = verts[i]
                p = xpos[v]
                jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
                           d.subtree_com, d.cdof, p[0], p[1], p[2], m.flex_vertbodyid[v], jac[0], jac[1])
                for dof in range(m.nv):
                    d.qfrc_spring[dof] -= jac[0, 0, dof] * fx + jac[0, 1, dof] * fy + jac[0, 2, dof] * fz


@kernel
def _elongation(m, d, e):
    """length^2 - length0^2 of edge e."""
    length, length0 = d.flexedge_length[e], m.flexedge_length0[e]
    return length * length - length0 * length0


@kernel
def _apply_pair(m, d, jac, vi, vj, tension):
    """qfrc_spring += Jp(vi)' (-tension (x_i - x_j)) + Jp(vj)' (tension (x_i - x_j))."""
    xi, xj = d.flexvert_xpos[vi], d.flexvert_xpos[vj]
    gx, gy, gz = tension * (xi[0] - xj[0]), tension * (xi[1] - xj[1]), tension * (xi[2] - xj[2])
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, xi[0], xi[1], xi[2], m.flex_vertbodyid[vi], jac[0], jac[1])
    jac_kernel(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid, m.dof_parentid,
               d.subtree_com, d.cdof, xj[0], xj[1], xj[2], m.flex_vertbodyid[vj], jac[2], jac[3])
    for v in range(m.nv):
        d.qfrc_spring[v] += ((jac[2, 0, v] - jac[0, 0, v]) * gx + (jac[2, 1, v] - jac[0, 1, v]) * gy
                             + (jac[2, 2, v] - jac[0, 2, v]) * gz)


@handle_entry(needed=used)
def flex_passive_entry(m, d):
    """Flex elasticity (flex_elastic_entry, for models with it), then the flexedge-level
    spring-dampers into qfrc_spring and qfrc_damper (mj_passive): along each non-rigid edge
    k (length0 - length) and -b velocity, mapped by flexedge_J'."""
    if m.nflexstiffness > 0:
        flex_elastic_entry(m, d)
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    nv = m.nv
    for f in range(m.nflex):
        stiffness = 0.0 if flags & DSBL_SPRING else m.flex_edgestiffness[f]
        damping = 0.0 if flags & DSBL_DAMPER else m.flex_edgedamping[f]
        if m.flex_rigid[f] or (stiffness == 0.0 and damping == 0.0):
            continue
        for e in range(m.flex_edgeadr[f], m.flex_edgeadr[f] + m.flex_edgenum[f]):
            if m.flexedge_rigid[e]:
                continue
            frc_spring = stiffness * (m.flexedge_length0[e] - d.flexedge_length[e])
            frc_damper = -damping * d.flexedge_velocity[e]
            for v in range(nv):
                j = d.flexedge_J[e, v]
                if j != 0.0:
                    d.qfrc_spring[v] += j * frc_spring
                    d.qfrc_damper[v] += j * frc_damper


@handle_entry(needed=used)
def flex_setconst_entry(m, d):
    """Edge lengths and Jacobians at d's state with rigid flexes treated as deformable (set0)."""
    _flex_edges(m, d, True)
