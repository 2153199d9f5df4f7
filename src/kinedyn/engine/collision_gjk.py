"""MuJoCo's native convex collision detection (engine_collision_gjk.c): GJK, EPA and the
single-shot multi-contact polygon clipping.

The geometry enters only through support functions (support_point below), so the algorithms
know nothing of geom types beyond what MuJoCo's own code tests (spheres and capsules, discrete
geoms, the features used by multi-contact).

Sources and agreement. The port follows the 3.12 C source (a 2026-08 snapshot) and is
bit-identical to it (checked against a build of that source on ~1000 random pairs). MuJoCo 4.0
differs; what fuzzing against the 4.0 binary found and this module reproduces:

* GJK and its distance sub-algorithm (gjk, _s1d, _s2d, _triangle_cofactors,
  _project_origin_plane): the arithmetic and control flow of 4.0, read off the symbols of the
  shipped libmujoco.so.4.0.0 (gjk, S1D, S2D, projectOriginPlane, ... are local symbols there):
  no fallback to gjkIntersect, the iterate projected on the simplex's line or plane, 4.0's
  stopping and separation tests, cofactors relative to the projected point over their sum;
* EPA's start from a triangle (_polytope3: recoverHexa, a tetrahedron when no hexahedron
  works, the centre of all vertices, the origin test with the tolerance), its affine
  coordinates (_tri_affine_coord), its stop on the current iteration's gap (upper_k - lower)
  and its end rules (epa), read off the same binary;
* a geom margin is no longer an inflation of the supports during the first GJK: like the
  radius of a sphere or capsule, it is added back after a GJK distance query, and only deep
  contacts run GJK + EPA on the inflated shapes (ccd);
* multi-contact for cylinders and capsules (3.14, 3.15) and with margins (3.17);
* multi-contact faces (polygonClip, read off the binary and its arguments checked with a
  debugger): geom 2's face is clipped by geom 1's edges (planes along geom 1's normal), the
  crossings at the ratio of signed distances, the vertices within the margins of geom 1's face
  kept, more than 4 reduced by polygonQuad's hill climb with area4 as the cross product of the
  diagonals (in the order it holds them), each witness pair a point on geom 1's face and that
  point moved along geom 2's normal, then every pair moved out by the half margins (inflate);
  cylinder caps are 16-gons from a table of 15-decimal cosines; the edges of both geoms are
  tried against the other's faces, and with a margin the edges run between bare vertices.
  Meshes give their hull polygons (mesh_poly*) as MuJoCo's meshNormals / meshEdgeNormals /
  meshFace do.

Single contacts agree with 4.0 bit for bit in every pose tests/test_collision_convex.py tries
(spheres, capsules, ellipsoids, cylinders, boxes, margins), and cylinder and capsule
multi-contacts at 1e-9 in the count and order (random and axis-aligned poses, margins); with
the origin on an edge of EPA's start triangle, 4.0's polytope3 starts again from polytope2 on
that edge, as here. Where several mesh features are within the tolerances 4.0 takes the first
in its own polygon order (docs/meshes.md).

The collider in modules, bottom up:

* ``collision_gjk_common``: constants, the layout of the two objects' descriptions (``obf``,
  ``obi``) and of the scratch arrays, small vector helpers;
* ``collision_gjk_support``: the support functions of each geom type, a mesh's hull vertices
  and hill climbing, the supports of the Minkowski difference;
* ``collision_gjk_distance``: GJK and its distance sub-algorithm;
* ``collision_gjk_epa``: EPA's starting polytope and the expanding polytope;
* ``collision_gjk_multicontact``: multi-contact, polygon clipping;
* ``collision_gjk`` (this module): ``ccd``, mjc_ccd, which runs them.

Every arithmetic expression keeps MuJoCo's operand order: the algorithms branch on signs
and on tolerances, so equal bits are what makes the contacts agree to 1e-9.
"""

from __future__ import annotations

from kinedyn._jit import kernel
from kinedyn.engine.collision_gjk_common import (
    EPA_SUCCESS,
    I_CNT,
    I_POLY,
    I_SFACE,
    I_SIDX,
    MAX_LIMIT,
    OBF_MARGIN,
    OBF_SIZE0,
    OBI_SUPPORT,
    OBI_TYPE,
    P3_TO_P2,
    W_CEN,
    W_LAM,
    W_POLY,
    W_SV,
    W_SV1,
    W_SV2,
    _normalize,
)
from kinedyn.engine.collision_gjk_common import (
    MAXCONPAIR as MAXCONPAIR,  # the number of witness pairs ccd writes at most (collision_driver reads it)
)
from kinedyn.engine.collision_gjk_distance import gjk
from kinedyn.engine.collision_gjk_epa import _polytope2, _polytope3, _polytope4, epa
from kinedyn.engine.collision_gjk_multicontact import multicontact
from kinedyn.engine.collision_gjk_support import SUPPORT_LINE, SUPPORT_POINT
from kinedyn.engine.types import GEOM_CAPSULE, GEOM_SPHERE

# ---- mjc_ccd --------------------------------------------------------------------------------------


@kernel
def _inflate(x1, x2, dist, margin1, margin2):
    """Move the witness points out by the shrunk radii (inflate)."""
    n0, n1, n2 = _normalize(x2[0, 0] - x1[0, 0], x2[0, 1] - x1[0, 1], x2[0, 2] - x1[0, 2])
    if margin1 != 0:
        x1[0, 0] += margin1 * n0
        x1[0, 1] += margin1 * n1
        x1[0, 2] += margin1 * n2
    if margin2 != 0:
        x2[0, 0] -= margin2 * n0
        x2[0, 1] -= margin2 * n1
        x2[0, 2] -= margin2 * n2
    dist[0] -= (margin1 + margin2)


@kernel
def _shrink_for_gjk(obf, obi, k):
    """mjc_ccd's reduction of object k before GJK (see ccd): a sphere becomes its centre point,
    a capsule its segment, both to be inflated back by the radius plus half the margin; any
    other geom with a margin loses it, to be inflated back by half of it. Sets obi[k, OBI_SUPPORT] and
    obf[k, OBF_MARGIN] (the caller restores them) and returns the inflation (0 for none)."""
    t = obi[k, OBI_TYPE]
    margin = obf[k, OBF_MARGIN]
    if t == GEOM_SPHERE or t == GEOM_CAPSULE:
        obi[k, OBI_SUPPORT] = SUPPORT_POINT if t == GEOM_SPHERE else SUPPORT_LINE
        obf[k, OBF_MARGIN] = 0.0
        return obf[k, OBF_SIZE0] + 0.5 * margin
    if margin > 0:
        obf[k, OBF_MARGIN] = 0.0
        return 0.5 * margin
    return 0.0


@kernel
def ccd(obf, obi, tolerance, max_iterations, max_contacts, x1, x2, dist, work, iwork, mc, mci, nm, mesh):
    """General convex collision (mjc_ccd, with dist_cutoff 0 as mjc_Convex configures it).

    obf/obi describe the two objects (support kinds set to their geom types). Returns
    (min distance, number of witness pairs in x1/x2/dist); negative means penetration.
    mc, mci, nm, mesh: multicontact's buffers and mesh arrays.
    """
    graph = mesh[4]
    n_iter = max_iterations
    sv = work[W_SV:W_SV + 3 * 4].reshape((4, 3))
    sv1 = work[W_SV1:W_SV1 + 3 * 4].reshape((4, 3))
    sv2 = work[W_SV2:W_SV2 + 3 * 4].reshape((4, 3))
    sidx = iwork[I_SIDX:I_SIDX + 2 * 4].reshape((4, 2))
    lam = work[W_LAM:W_LAM + 4]
    for q in range(4):
        lam[q] = 0.0
    for q in range(3):
        x1[0, q] = obf[0, q]
        x2[0, q] = obf[1, q]

    t1 = obi[0, OBI_TYPE]
    t2 = obi[1, OBI_TYPE]
    if (t1 == GEOM_SPHERE or t2 == GEOM_SPHERE or t1 == GEOM_CAPSULE or t2 == GEOM_CAPSULE
            or obf[0, OBF_MARGIN] > 0 or obf[1, OBF_MARGIN] > 0):
        # spheres and capsules shrink to points and segments, and geoms with a margin lose it;
        # GJK finds their distance and a shallow contact is inflated back. MuJoCo 4.0 treats
        # margins this way too (3.17, multi-contact for positive margins); the 3.12 source
        # inflates the supports instead. Found by fuzzing against 4.0.
        margin1 = obf[0, OBF_MARGIN]
        margin2 = obf[1, OBF_MARGIN]
        kind1 = obi[0, OBI_SUPPORT]
        kind2 = obi[1, OBI_SUPPORT]
        full1 = _shrink_for_gjk(obf, obi, 0)
        full2 = _shrink_for_gjk(obf, obi, 1)
        d0, nsimplex, _, nx = gjk(sv, sv1, sv2, sidx, x1, x2, obf, obi, graph, tolerance, n_iter,
                                     0.0 + full1 + full2, work, iwork)
        obf[0, OBF_MARGIN] = margin1
        obf[1, OBF_MARGIN] = margin2
        obi[0, OBI_SUPPORT] = kind1
        obi[1, OBI_SUPPORT] = kind2
        dist[0] = d0
        if d0 > tolerance:
            _inflate(x1, x2, dist, full1, full2)
            if dist[0] > 0.0:
                dist[0] = MAX_LIMIT
            elif max_contacts > 1 and nsimplex > 0:
                # multi-contact from the features of GJK's final simplex (MuJoCo 4.0; guessed)
                sface = iwork[I_SFACE:I_SFACE + 3].reshape((1, 3))
                sface[0, 0] = 0
                sface[0, 1] = 1 if nsimplex > 1 else 0
                sface[0, 2] = 2 if nsimplex > 2 else sface[0, 1]
                nx = multicontact(sv1, sv2, sidx, sface, 0, x1, x2, dist, nx, max_contacts, obf, obi,
                                  mc, mci, nm, mesh)
                dmin = dist[0]
                for i in range(1, nx):
                    if dist[i] < dmin:
                        dmin = dist[i]
                return dmin, nx
            return dist[0], nx
        if max_contacts == 0:
            dist[0] = 0.0
            return 0.0, 0
        for q in range(3):
            x1[0, q] = obf[0, q]
            x2[0, q] = obf[1, q]

    d0, nsimplex, separated, nx = gjk(sv, sv1, sv2, sidx, x1, x2, obf, obi, graph, tolerance, n_iter, 0.0,
                                         work, iwork)
    dist[0] = d0
    if max_contacts == 0:
        return d0, nx

    if d0 <= tolerance and nsimplex > 1 and not separated:
        dist[0] = 0.0  # assume touching
        nv = 5 + n_iter
        nf = 6 * n_iter
        pv = work[W_POLY:W_POLY + 3 * nv].reshape((nv, 3))
        pv1 = work[W_POLY + 3 * nv:W_POLY + 3 * nv + 3 * nv].reshape((nv, 3))
        pv2 = work[W_POLY + 6 * nv:W_POLY + 6 * nv + 3 * nv].reshape((nv, 3))
        fv = work[W_POLY + 9 * nv:W_POLY + 9 * nv + 3 * nf].reshape((nf, 3))
        fdist2 = work[W_POLY + 9 * nv + 3 * nf:W_POLY + 9 * nv + 4 * nf]
        center = work[W_CEN:W_CEN + 3]
        pidx = iwork[I_POLY:I_POLY + 2 * nv].reshape((nv, 2))
        fverts = iwork[I_POLY + 2 * nv:I_POLY + 2 * nv + 3 * nf].reshape((nf, 3))
        fadj = iwork[I_POLY + 2 * nv + 3 * nf:I_POLY + 2 * nv + 3 * nf + 3 * nf].reshape((nf, 3))
        findex = iwork[I_POLY + 2 * nv + 6 * nf:I_POLY + 2 * nv + 7 * nf]
        pmap = iwork[I_POLY + 2 * nv + 7 * nf:I_POLY + 2 * nv + 8 * nf]
        hidx = iwork[I_POLY + 2 * nv + 8 * nf:I_POLY + 2 * nv + 9 * nf + 8]
        hedge = iwork[I_POLY + 2 * nv + 9 * nf + 8:I_POLY + 2 * nv + 10 * nf + 16]
        hstack = iwork[I_POLY + 2 * nv + 10 * nf + 16:I_POLY + 2 * nv + 13 * nf + 16]
        cnt = iwork[I_CNT:I_CNT + 4]   # nverts, nfaces, nmap, nedges
        for q in range(4):
            cnt[q] = 0
        if nsimplex == 2:
            ret = _polytope2(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        elif nsimplex == 3:
            ret = _polytope3(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance, True)
        else:
            ret = _polytope4(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        if ret == P3_TO_P2:
            # MuJoCo 4.0: polytope3 (from ccd or polytope4) found the origin on an edge
            ret = _polytope2(sv, sv1, sv2, sidx, 0.0, pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2,
                             findex, pmap, cnt, center, obf, obi, graph, tolerance)
        if ret == EPA_SUCCESS:
            face, nx = epa(pv, pv1, pv2, pidx, fverts, fadj, fv, fdist2, findex, pmap, cnt, center,
                           hidx, hedge, hstack, obf, obi, graph, tolerance, n_iter, x1, x2, dist)
            if max_contacts > 1 and face >= 0:
                nx = multicontact(pv1, pv2, pidx, fverts, face, x1, x2, dist, nx, max_contacts,
                                  obf, obi, mc, mci, nm, mesh)
        else:
            nx = 0   # MuJoCo keeps nx from GJK (1) with dist 0: no contact either way
    min_dist = dist[0]
    for i in range(1, nx):
        if dist[i] < min_dist:
            min_dist = dist[i]
    return min_dist, nx


