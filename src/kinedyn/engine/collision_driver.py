"""Collision detection: which geoms touch, where, and with which contact parameters
(mj_collision and its helpers, engine_collision_driver.c).

The stage runs in the position stage after the mass matrix is factorised and before the
constraint rows are made, and fills ``d.contact_*`` (``d.contact.dist``, ...) with ``d.ncon``
contacts in MuJoCo 4.0's order:

1. **Body pairs**, in increasing signature ``b1 << 16 | b2`` (b1 < b2). A pair is skipped when
   the bodies are welded together, neither weld group has dofs, or (unless the
   ``filterparent`` flag is disabled) one weld group is the other's parent (filterBodyPair);
   when their geoms' OR-ed contype/conaffinity bitmasks cannot match (canCollide2); and when
   an ``<exclude>`` names it. MuJoCo reaches the same pairs through a sweep-and-prune
   broadphase, which only ever drops pairs whose geoms are apart, so visiting every pair
   gives the same contacts. (For speed, a body pair whose enclosing spheres are apart is
   dropped before its geom pairs are visited: each of them would fail the bounding-sphere
   test below.)
2. **Explicit pairs** (``<pair>``) come before the body pair of their signature, in model
   order; they skip the bitmask test, use their own parameters, and a dynamic geom pair that
   repeats one is dropped.
3. **Geom pairs** of a body pair: the single pair when both bodies have one geom; else, with
   the midphase on (the default), every pair, their contacts then stably sorted by
   (geom[0], geom[1]) as mj_collideTree's caller does; else (midphase disabled) in loop order.
   Each pair passes the bitmask test and the bounding-sphere test (mj_filterSphere: centres
   within rbound1 + rbound2 + margin + gap; a plane against the other's bounding sphere), and
   is ordered so that geom[0] has the lower type. With the midphase on, a pair of a body pair
   that is not two single-geom bodies must also pass mj_collideTree's leaf test, the oriented
   bounding boxes within margin + gap (mj_collideOBB, :func:`_obbs_apart`): geoms touching at
   zero distance whose boxes round to just apart make no contact in MuJoCo either.
4. **Narrowphase**: the collider of the type pair (:func:`collide`) writes distance, position
   and normal (frame row 0, a tangent hint in row 1) for every contact within the pair's
   ``margin + gap``; then mj_setContact's parameters (:func:`set_contact_params`): condim,
   friction, solref, solreffriction, solimp (mixed by priority and solmix, mj_contactParam, or
   the pair's), the override flag, ``includemargin = margin``, ``exclude`` for contacts in the
   gap, adhesive contacts in the gap reduced to condim 1, and the frame completed.

Margins: the pair's margin is the sum of the geoms' (``o_margin`` under the override flag),
the gap the sum of their gaps; a ``<pair>`` has its own. Colliders live in
``collision_primitive`` (plane, sphere, capsule, cylinder), ``collision_box`` (box pairs) and
``collision_convex`` / ``collision_gjk`` (MuJoCo's GJK/EPA for ellipsoids and cylinders).
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.collision_box import collide_box_box, collide_capsule_box, collide_sphere_box
from kinedyn.engine.collision_convex import collide_convex, collide_plane_convex, collide_plane_mesh
from kinedyn.engine.collision_gjk import MAXCONPAIR
from kinedyn.engine.collision_hfield import collide_hfield
from kinedyn.engine.collision_primitive import (
    collide_capsule_capsule,
    collide_plane_box,
    collide_plane_capsule,
    collide_plane_cylinder,
    collide_plane_sphere,
    collide_sphere_capsule,
    collide_sphere_cylinder,
    collide_sphere_sphere,
)
from kinedyn.engine.sleep import collision_filtered as sleep_filtered
from kinedyn.engine.sleep import enabled as sleep_enabled
from kinedyn.engine.types import (
    CONE_ELLIPTIC,
    COUNT_DROPPED,
    COUNT_NCON,
    DSBL_CONSTRAINT,
    DSBL_CONTACT,
    DSBL_FILTERPARENT,
    DSBL_MIDPHASE,
    DSBL_MULTICCD,
    ENBL_OVERRIDE,
    GEOM_BOX,
    GEOM_CAPSULE,
    GEOM_CYLINDER,
    GEOM_ELLIPSOID,
    GEOM_HFIELD,
    GEOM_MESH,
    GEOM_PLANE,
    GEOM_SPHERE,
    MAXVAL,
    MINMU,
    MINVAL,
    OPT_CCD_ITERATIONS,
    OPT_CCD_TOLERANCE,
    OPT_CONE,
    OPT_DISABLEFLAGS,
    OPT_ENABLEFLAGS,
    OPT_O_FRICTION,
    OPT_O_MARGIN,
    OPT_O_SOLIMP,
    OPT_O_SOLREF,
    WARN_CONTACTFULL,
)
from kinedyn.engine.types import SensorType as _SensorType
from kinedyn.engine.util_spatial import make_frame
from kinedyn.errors import ContactFullWarning

# the geom type pairs (lower type first) this stage collides; a model that could make any other
# pair collide is refused when compiled (compiler.contacts)
_PRIMITIVES = (GEOM_PLANE, GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX)
SUPPORTED_PAIRS = frozenset((t1, t2) for t1 in _PRIMITIVES for t2 in _PRIMITIVES
                            if t1 <= t2 and (t1, t2) != (GEOM_PLANE, GEOM_PLANE))
# meshes: against planes (mjc_PlaneConvex), spheres and ellipsoids (one contact from GJK/EPA);
# against capsules, cylinders, boxes and meshes MuJoCo's multiccd adds contacts from the hull
# polygons (collision_gjk.multicontact)
SUPPORTED_PAIRS = SUPPORTED_PAIRS | {(GEOM_PLANE, GEOM_MESH), (GEOM_SPHERE, GEOM_MESH),
                                     (GEOM_ELLIPSOID, GEOM_MESH), (GEOM_CAPSULE, GEOM_MESH),
                                     (GEOM_CYLINDER, GEOM_MESH), (GEOM_BOX, GEOM_MESH),
                                     (GEOM_MESH, GEOM_MESH)}
# height fields: against every convex geom (mjc_ConvexHField); never against planes or height fields
SUPPORTED_PAIRS = SUPPORTED_PAIRS | {(GEOM_HFIELD, t) for t in (GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID,
                                                               GEOM_CYLINDER, GEOM_BOX, GEOM_MESH)}



def uses_convex_collider(type1: int, type2: int) -> bool:
    """Whether MuJoCo collides the type pair with its general convex collider (GJK/EPA): pairs
    with an ellipsoid or a cylinder, except plane-ellipsoid, plane-cylinder and sphere-cylinder;
    height fields against convex geoms (prisms through GJK/EPA)."""
    t1, t2 = min(type1, type2), max(type1, type2)
    if t1 == GEOM_HFIELD:
        return t2 != GEOM_HFIELD
    if t2 == GEOM_MESH:
        return True  # plane-mesh too: it needs the scratch for polygons
    if t2 not in (GEOM_ELLIPSOID, GEOM_CYLINDER) and t1 not in (GEOM_ELLIPSOID, GEOM_CYLINDER):
        return False
    return t1 != GEOM_PLANE and (t1, t2) != (GEOM_SPHERE, GEOM_CYLINDER)




# ---- per-pair bounds and margins ------------------------------------------------------------------


@kernel
def max_contacts(type1, type2, has_margin, multiccd):
    """Most contacts one geom pair makes (mj_maxContact, with MuJoCo 4.0's bounds)."""
    t1 = min(type1, type2)
    t2 = max(type1, type2)
    if t2 == GEOM_HFIELD:
        return 0  # plane-hfield, hfield-hfield: not collided
    if t1 == GEOM_HFIELD:
        return MAXCONPAIR  # mjc_ConvexHField: up to 50
    if t1 == GEOM_SPHERE or t1 == GEOM_ELLIPSOID or t2 == GEOM_SPHERE or t2 == GEOM_ELLIPSOID:
        return 1
    if t1 == GEOM_BOX and t2 == GEOM_BOX:
        return 8
    if t1 == GEOM_CAPSULE and t2 == GEOM_CAPSULE:
        return 2
    if t1 == GEOM_CAPSULE and t2 == GEOM_BOX:
        return 4
    if t1 == GEOM_PLANE:
        if t2 == GEOM_CAPSULE:
            return 2
        if t2 == GEOM_PLANE:
            return 0
        return 4  # cylinder, box, mesh
    if not multiccd:
        return 1
    if t1 == GEOM_CAPSULE:  # capsule-cylinder, capsule-mesh
        return 2
    if t1 == GEOM_CYLINDER:  # cylinder-cylinder, -box, -mesh
        return 4
    return 5 if has_margin else 4  # box-mesh, mesh-mesh


@kernel
def pair_margin(m, g1, g2, ipair):
    """The pair's margin: the <pair>'s or the sum of the geoms' (mj_assignMargin: o_margin under
    the override flag)."""
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_OVERRIDE:
        return m.opt_real[OPT_O_MARGIN]
    if ipair >= 0:
        return m.pair_margin[ipair]
    return m.geom_margin[g1] + m.geom_margin[g2]


@kernel
def pair_gap(m, g1, g2, ipair):
    """The pair's gap: the <pair>'s or the sum of the geoms' (getGap)."""
    if ipair >= 0:
        return m.pair_gap[ipair]
    return m.geom_gap[g1] + m.geom_gap[g2]


# ---- filters ------------------------------------------------------------------------------------

# The per-body-pair and per-geom-pair helpers below (the filters, _narrowphase, set_contact_params,
# _collide_geom_pair, _collide_body_pair) are inlined into collision_kernel (kernel(inline="always")):
# as calls, LLVM kept them out of line and each re-read the handles' arrays, about 0.15 us of the
# humanoid's 2.2 us stage, which runs four times per RK4 step. The colliders stay calls.


@kernel
def _plane_distance(d, plane, g):
    """Signed distance of geom g's centre above plane geom ``plane`` (planeGeomDist)."""
    xm = d.geom_xmat[plane]
    dx = d.geom_xpos[g, 0] - d.geom_xpos[plane, 0]
    dy = d.geom_xpos[g, 1] - d.geom_xpos[plane, 1]
    dz = d.geom_xpos[g, 2] - d.geom_xpos[plane, 2]
    return dx * xm[0, 2] + dy * xm[1, 2] + dz * xm[2, 2]


@kernel(inline="always")
def bounding_spheres_apart(m, d, g1, g2, margin):
    """True when the bounding spheres (or a plane and a bounding sphere) are further apart than
    ``margin`` (mj_filterSphere)."""
    r1, r2 = m.geom_rbound[g1], m.geom_rbound[g2]
    if r1 > 0 and r2 > 0:
        dx = d.geom_xpos[g1, 0] - d.geom_xpos[g2, 0]
        dy = d.geom_xpos[g1, 1] - d.geom_xpos[g2, 1]
        dz = d.geom_xpos[g1, 2] - d.geom_xpos[g2, 2]
        bound = r1 + r2 + margin
        return dx * dx + dy * dy + dz * dz > bound * bound
    if m.geom_type[g1] == GEOM_PLANE and r2 > 0 and _plane_distance(d, g1, g2) > margin + r2:
        return True
    if m.geom_type[g2] == GEOM_PLANE and r1 > 0 and _plane_distance(d, g2, g1) > margin + r1:
        return True
    return False


@kernel
def _body_spheres(m, d, spheres):
    """A sphere around each body's geoms, for the body-pair prefilter (``_body_spheres_apart``):
    row b holds a centre (its first geom's position), a radius enclosing every geom's bounding
    sphere, and the largest margin + gap of its geoms (the gap alone under the override flag,
    whose margin is global). The radius is NaN, which never prunes, for a body without geoms or
    with a geom without a bounding sphere (a plane), and for non-finite positions."""
    override = (m.opt_flags[OPT_ENABLEFLAGS] & ENBL_OVERRIDE) != 0
    for b in range(spheres.shape[0]):
        n = m.body_geomnum[b]
        adr = m.body_geomadr[b]
        if n <= 0:
            spheres[b, 3] = np.nan
            continue
        radius = m.geom_rbound[adr]
        bounded = radius > 0
        extra = m.geom_gap[adr] if override else m.geom_margin[adr] + m.geom_gap[adr]
        cx = d.geom_xpos[adr, 0]
        cy = d.geom_xpos[adr, 1]
        cz = d.geom_xpos[adr, 2]
        for g in range(adr + 1, adr + n):
            r = m.geom_rbound[g]
            dx = d.geom_xpos[g, 0] - cx
            dy = d.geom_xpos[g, 1] - cy
            dz = d.geom_xpos[g, 2] - cz
            reach = math.sqrt(dx * dx + dy * dy + dz * dz) + r
            if not (r > 0 and reach == reach):
                bounded = False
            elif reach > radius:
                radius = reach
            extra = max(extra, m.geom_gap[g] if override else m.geom_margin[g] + m.geom_gap[g])
        spheres[b, 0] = cx
        spheres[b, 1] = cy
        spheres[b, 2] = cz
        spheres[b, 3] = radius if bounded else np.nan
        spheres[b, 4] = extra


@kernel(inline="always")
def _body_spheres_apart(spheres, b1, b2, margin):
    """True when no geom of body b1 can be within its pair's margin + gap of a geom of body b2:
    their spheres (``_body_spheres``) are further apart than the two radii, the bodies' largest
    margins + gaps and ``margin`` (the override margin, else 0), plus a slack far above rounding
    (1e-6 of the bound and of the coordinates). Then every geom pair of the two bodies fails
    mj_filterSphere's exact test too, so skipping them changes no contact; a NaN radius or
    position never prunes."""
    dx = spheres[b1, 0] - spheres[b2, 0]
    dy = spheres[b1, 1] - spheres[b2, 1]
    dz = spheres[b1, 2] - spheres[b2, 2]
    bound = spheres[b1, 3] + spheres[b2, 3] + spheres[b1, 4] + spheres[b2, 4] + margin
    scale = max(abs(spheres[b1, 0]), abs(spheres[b1, 1]), abs(spheres[b1, 2]),
                abs(spheres[b2, 0]), abs(spheres[b2, 1]), abs(spheres[b2, 2]))
    bound += 1e-6 * (abs(bound) + scale)
    return dx * dx + dy * dy + dz * dz > bound * bound


@kernel
def _bitmasks_miss(contype1, conaffinity1, contype2, conaffinity2):
    """filterBitmask: neither contype matches the other's conaffinity."""
    return (contype1 & conaffinity2) == 0 and (contype2 & conaffinity1) == 0


@kernel(inline="always")
def _body_pair_filtered(m, b1, b2, filterparent):
    """filterBodyPair: same weld group, both weld groups dof-less, or parent and child."""
    w1, w2 = m.body_weldid[b1], m.body_weldid[b2]
    if w1 == w2:
        return True
    if m.body_dofnum[w1] == 0 and m.body_dofnum[w2] == 0:
        return True
    if filterparent and w1 != 0 and w2 != 0:
        if w1 == m.body_weldid[m.body_parentid[w2]] or w2 == m.body_weldid[m.body_parentid[w1]]:
            return True
    return False


@kernel
def _has_collider(t1, t2):
    """Whether MuJoCo's collision table has a function for the (sorted) type pair: every pair
    except plane-plane, plane-hfield and hfield-hfield."""
    return not ((t1 == GEOM_PLANE or t1 == GEOM_HFIELD) and (t2 == GEOM_PLANE or t2 == GEOM_HFIELD))


@kernel(inline="always")
def _keep_geom_pair(m, d, g1, g2, ipair, pair_start, pair_end):
    """filterCollisionPair: a dynamic pair that repeats a <pair> of this body pair (among
    pair_start..pair_end) or whose bitmasks miss is dropped; any pair whose bounding spheres
    are apart is dropped."""
    if ipair < 0:
        for k in range(pair_start, pair_end):
            p1, p2 = m.pair_geom1[k], m.pair_geom2[k]
            if (p1 == g1 and p2 == g2) or (p1 == g2 and p2 == g1):
                return False
        if _bitmasks_miss(m.geom_contype[g1], m.geom_conaffinity[g1], m.geom_contype[g2],
                          m.geom_conaffinity[g2]):
            return False
    margin = pair_margin(m, g1, g2, ipair) + pair_gap(m, g1, g2, ipair)
    if bounding_spheres_apart(m, d, g1, g2, margin):
        return False
    t1, t2 = m.geom_type[g1], m.geom_type[g2]
    return _has_collider(min(t1, t2), max(t1, t2))


# ---- narrowphase ----------------------------------------------------------------------------------


@kernel
def _mesh_arrays(m):
    """The mesh arrays the convex colliders read: geom_dataid, the vertices, the hull graph and
    the hull polygons (collision_convex.collide_convex's ``mesh``)."""
    return (m.geom_dataid, m.mesh_vert, m.mesh_vertadr, m.mesh_graphadr, m.mesh_graph,
            m.mesh_polynum, m.mesh_polyvertadr, m.mesh_polyvertnum, m.mesh_polyvert,
            m.mesh_polynormal, m.mesh_polymapadr, m.mesh_polymapnum, m.mesh_polymap, m.mesh_polyadr,
            m.mesh_extrema, m.mesh_vertnum)


@kernel
def collide(m, d, g1, g2, threshold, c0):
    """Run the collider of the pair (geom_type[g1] <= geom_type[g2]) with distance threshold
    ``threshold``, writing contacts at rows c0, ...; returns their number (mjCOLLISIONFUNC)."""
    return collide_into(m, d, g1, g2, threshold, c0, INTO_CONTACTS)


# ---- the colliders, a unit per family ------------------------------------------------------------
# Each family of colliders is compiled on its own (a unit) and only for models that can make one of
# its geom-type pairs collide: a model of capsules and a plane compiles neither GJK/EPA nor the box
# colliders. They share one signature, (m, d, g1, g2, threshold, c0, into) -> contacts written,
# ``into`` choosing the arrays: the contact rows, or the geom distance sensors' scratch rows.

INTO_CONTACTS, INTO_SENSOR_SCRATCH = 0, 1
GEOM_DISTANCE_SENSORS = (int(_SensorType.GEOMDIST), int(_SensorType.GEOMNORMAL), int(_SensorType.GEOMFROMTO))
_COLLIDER_ARGS = "int64, int64, float64, int64, int64"

# the pairs of each family (lower type first)
PRIMITIVE_PAIRS = frozenset({(GEOM_PLANE, GEOM_SPHERE), (GEOM_PLANE, GEOM_CAPSULE),
                             (GEOM_PLANE, GEOM_CYLINDER), (GEOM_PLANE, GEOM_BOX), (GEOM_SPHERE, GEOM_SPHERE),
                             (GEOM_SPHERE, GEOM_CAPSULE), (GEOM_SPHERE, GEOM_CYLINDER),
                             (GEOM_CAPSULE, GEOM_CAPSULE)})
BOX_PAIRS = frozenset({(GEOM_SPHERE, GEOM_BOX), (GEOM_CAPSULE, GEOM_BOX), (GEOM_BOX, GEOM_BOX)})
PLANE_CONVEX_PAIRS = frozenset({(GEOM_PLANE, GEOM_ELLIPSOID), (GEOM_PLANE, GEOM_MESH)})
HFIELD_PAIRS = frozenset(p for p in SUPPORTED_PAIRS if p[0] == GEOM_HFIELD)
CONVEX_PAIRS = SUPPORTED_PAIRS - PRIMITIVE_PAIRS - BOX_PAIRS - PLANE_CONVEX_PAIRS - HFIELD_PAIRS


def collidable_type_pairs(m) -> frozenset:
    """The geom-type pairs (lower type first) the model's collision stage or its geom distance
    sensors can pass to a collider: every pair of types among the geoms that take part in
    contacts (contype or conaffinity set; a type with itself if it has two such geoms) and the
    geoms of <pair>s; with a geom distance sensor, every pair of types among all geoms."""
    live = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
    kinds, counts = np.unique(m.geom_type[live], return_counts=True)
    pairs = {(int(a), int(b)) for a in kinds for b in kinds if a < b}
    pairs |= {(int(a), int(a)) for a, n in zip(kinds, counts, strict=True) if n > 1}
    for g1, g2 in zip(m.pair_geom1, m.pair_geom2, strict=True):
        t1, t2 = int(m.geom_type[g1]), int(m.geom_type[g2])
        pairs.add((min(t1, t2), max(t1, t2)))
    if np.isin(m.sensor_type, GEOM_DISTANCE_SENSORS).any():
        kinds = np.unique(m.geom_type).tolist()
        pairs |= {(min(a, b), max(a, b)) for a in kinds for b in kinds}
    return frozenset(pairs)


def _collides(family):
    """``needed`` of a collider family's unit: the model can pass it one of its pairs."""
    return lambda m: bool(family & collidable_type_pairs(m))


@kernel(inline="always")
def _outputs(d, into):
    if into == INTO_SENSOR_SCRATCH:
        return d.scratch_gd_dist, d.scratch_gd_pos, d.scratch_gd_frame
    return d.contact_dist, d.contact_pos, d.contact_frame


@handle_entry(returns="int64", args=_COLLIDER_ARGS, needed=_collides(PRIMITIVE_PAIRS))
def primitive_collider(m, d, g1, g2, threshold, c0, into):
    """Planes, spheres, capsules and cylinders (engine_collision_primitive.c)."""
    dist, pos, frame = _outputs(d, into)
    t1, t2 = m.geom_type[g1], m.geom_type[g2]
    xpos, xmat, size = d.geom_xpos, d.geom_xmat, m.geom_size
    if t1 == GEOM_PLANE:
        if t2 == GEOM_SPHERE:
            return collide_plane_sphere(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
        if t2 == GEOM_CAPSULE:
            return collide_plane_capsule(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
        if t2 == GEOM_CYLINDER:
            return collide_plane_cylinder(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
        return collide_plane_box(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
    if t1 == GEOM_SPHERE:
        if t2 == GEOM_SPHERE:
            return collide_sphere_sphere(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
        if t2 == GEOM_CAPSULE:
            return collide_sphere_capsule(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
        return collide_sphere_cylinder(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
    return collide_capsule_capsule(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)


@handle_entry(returns="int64", args=_COLLIDER_ARGS, needed=_collides(BOX_PAIRS))
def box_collider(m, d, g1, g2, threshold, c0, into):
    """Boxes against spheres, capsules and boxes (engine_collision_box.c)."""
    dist, pos, frame = _outputs(d, into)
    t1 = m.geom_type[g1]
    xpos, xmat, size = d.geom_xpos, d.geom_xmat, m.geom_size
    if t1 == GEOM_SPHERE:
        return collide_sphere_box(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
    if t1 == GEOM_CAPSULE:
        return collide_capsule_box(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)
    return collide_box_box(xpos, xmat, size, g1, g2, threshold, dist, pos, frame, c0)


@handle_entry(returns="int64", args=_COLLIDER_ARGS, needed=_collides(PLANE_CONVEX_PAIRS))
def plane_convex_collider(m, d, g1, g2, threshold, c0, into):
    """A plane against an ellipsoid or a mesh (mjc_PlaneConvex)."""
    dist, pos, frame = _outputs(d, into)
    if m.geom_type[g2] == GEOM_MESH:
        return collide_plane_mesh(d.geom_xpos, d.geom_xmat, g1, g2, threshold, dist, pos, frame, c0,
                                  _mesh_arrays(m))
    return collide_plane_convex(m.geom_type, d.geom_xpos, d.geom_xmat, m.geom_size, g1, g2, threshold, dist,
                                pos, frame, c0)


@handle_entry(returns="int64", args=_COLLIDER_ARGS, needed=_collides(CONVEX_PAIRS))
def convex_collider(m, d, g1, g2, threshold, c0, into):
    """Every pair MuJoCo collides with GJK/EPA (mjc_Convex)."""
    dist, pos, frame = _outputs(d, into)
    multiccd = (m.opt_flags[OPT_DISABLEFLAGS] & DSBL_MULTICCD) == 0
    return collide_convex(m.geom_type, d.geom_xpos, d.geom_xmat, m.geom_size, g1, g2, threshold,
                          m.opt_real[OPT_CCD_TOLERANCE], m.opt_flags[OPT_CCD_ITERATIONS], multiccd, dist, pos,
                          frame, c0, d.scratch_ccd, d.scratch_ccd_int, _mesh_arrays(m))


@handle_entry(returns="int64", args=_COLLIDER_ARGS, needed=_collides(HFIELD_PAIRS))
def hfield_collider(m, d, g1, g2, threshold, c0, into):
    """A height field against any convex geom (mjc_ConvexHField)."""
    dist, pos, frame = _outputs(d, into)
    return collide_hfield(m.geom_type, d.geom_xpos, d.geom_xmat, m.geom_size, m.geom_rbound, g1, g2,
                          threshold, m.opt_real[OPT_CCD_TOLERANCE], m.opt_flags[OPT_CCD_ITERATIONS], dist,
                          pos, frame, c0, d.scratch_ccd, d.scratch_ccd_int, _mesh_arrays(m),
                          (m.hfield_size, m.hfield_nrow, m.hfield_ncol, m.hfield_adr, m.hfield_data))


@kernel
def collide_into(m, d, g1, g2, threshold, c0, into):
    """``collide`` writing into the rows ``into`` chooses (INTO_CONTACTS, INTO_SENSOR_SCRATCH).
    The pair is sent to the unit of its family; a pair no collider handles makes no contact."""
    t1, t2 = m.geom_type[g1], m.geom_type[g2]
    if t1 == GEOM_HFIELD:
        return hfield_collider(m, d, g1, g2, threshold, c0, into)
    if t2 == GEOM_BOX and t1 != GEOM_PLANE:
        if t1 == GEOM_SPHERE or t1 == GEOM_CAPSULE or t1 == GEOM_BOX:
            return box_collider(m, d, g1, g2, threshold, c0, into)
        return convex_collider(m, d, g1, g2, threshold, c0, into)  # ellipsoid or cylinder against a box
    if t1 == GEOM_PLANE:
        if t2 == GEOM_ELLIPSOID or t2 == GEOM_MESH:
            return plane_convex_collider(m, d, g1, g2, threshold, c0, into)
        if t2 == GEOM_PLANE or t2 == GEOM_HFIELD:
            return 0
        return primitive_collider(m, d, g1, g2, threshold, c0, into)
    if (t1 == GEOM_SPHERE and (t2 == GEOM_SPHERE or t2 == GEOM_CAPSULE or t2 == GEOM_CYLINDER)) or \
            (t1 == GEOM_CAPSULE and t2 == GEOM_CAPSULE):
        return primitive_collider(m, d, g1, g2, threshold, c0, into)
    # every other pair involves an ellipsoid, a cylinder or a mesh: MuJoCo's GJK/EPA (mjc_Convex)
    return convex_collider(m, d, g1, g2, threshold, c0, into)


@kernel
def _mix_weight(s1, s2):
    """mj_contactParam's solmix weight of geom 1."""
    if s1 >= MINVAL and s2 >= MINVAL:
        return s1 / (s1 + s2)
    if s1 < MINVAL and s2 < MINVAL:
        return 0.5
    return 0.0 if s1 < MINVAL else 1.0


@kernel(inline="always")
def set_contact_params(m, d, c, ipair):
    """Contact parameters of row c, whose geoms and geometry are set (mj_contactParam for dynamic
    pairs or the <pair>'s values, then mj_setContact)."""
    g1, g2 = d.contact_geom[c, 0], d.contact_geom[c, 1]
    solref, solimp, fri = d.contact_solref, d.contact_solimp, d.contact_friction
    srf = d.contact_solreffriction
    srf[c, 0] = 0.0
    srf[c, 1] = 0.0
    if ipair >= 0:
        condim = m.pair_dim[ipair]
        for k in range(2):
            solref[c, k] = m.pair_solref[ipair, k]
        for k in range(5):
            solimp[c, k] = m.pair_solimp[ipair, k]
            fri[c, k] = m.pair_friction[ipair, k]
        adhesion = m.pair_adhesion[ipair]
        if m.pair_solreffriction[ipair, 0] != 0 or m.pair_solreffriction[ipair, 1] != 0:
            srf[c, 0] = m.pair_solreffriction[ipair, 0]
            srf[c, 1] = m.pair_solreffriction[ipair, 1]
    else:
        p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
        adhesion = m.geom_adhesion[g1] + m.geom_adhesion[g2]
        if p1 != p2:
            g = g1 if p1 > p2 else g2
            condim = m.geom_condim[g]
            for k in range(2):
                solref[c, k] = m.geom_solref[g, k]
            for k in range(5):
                solimp[c, k] = m.geom_solimp[g, k]
            f0, f1, f2 = m.geom_friction[g, 0], m.geom_friction[g, 1], m.geom_friction[g, 2]
            adhesion = m.geom_adhesion[g]
        else:
            condim = max(m.geom_condim[g1], m.geom_condim[g2])
            mix = _mix_weight(m.geom_solmix[g1], m.geom_solmix[g2])
            if m.geom_solref[g1, 0] > 0 and m.geom_solref[g2, 0] > 0:
                for k in range(2):
                    solref[c, k] = mix * m.geom_solref[g1, k] + (1 - mix) * m.geom_solref[g2, k]
            else:  # direct (negative) solref: the element-wise minimum
                for k in range(2):
                    solref[c, k] = min(m.geom_solref[g1, k], m.geom_solref[g2, k])
            for k in range(5):
                solimp[c, k] = mix * m.geom_solimp[g1, k] + (1 - mix) * m.geom_solimp[g2, k]
            f0 = max(m.geom_friction[g1, 0], m.geom_friction[g2, 0])
            f1 = max(m.geom_friction[g1, 1], m.geom_friction[g2, 1])
            f2 = max(m.geom_friction[g1, 2], m.geom_friction[g2, 2])
        # (slide, spin, roll) -> the 5 values (slide, slide, spin, roll, roll)
        fri[c, 0] = f0
        fri[c, 1] = f0
        fri[c, 2] = f1
        fri[c, 3] = f2
        fri[c, 4] = f2
    # mj_setContact: the override flag replaces solref, solreffriction (by o_solref), solimp
    # and friction; friction is clamped to mjMINMU
    if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_OVERRIDE:
        for k in range(2):
            solref[c, k] = m.opt_real[OPT_O_SOLREF + k]
            srf[c, k] = m.opt_real[OPT_O_SOLREF + k]
        for k in range(5):
            solimp[c, k] = m.opt_real[OPT_O_SOLIMP + k]
            fri[c, k] = m.opt_real[OPT_O_FRICTION + k]
    for k in range(5):
        fri[c, k] = max(MINMU, fri[c, k])
    includemargin = pair_margin(m, g1, g2, ipair)
    d.contact_dim[c] = condim
    d.contact_includemargin[c] = includemargin
    d.contact_adhesion[c] = adhesion
    in_gap = d.contact_dist[c] >= includemargin
    # contacts in the gap get no rows, unless adhesive: those pull along the normal only
    d.contact_exclude[c] = 1 if (in_gap and adhesion == 0) else 0
    if adhesion != 0 and in_gap:
        d.contact_dim[c] = 1
    make_frame(d.contact_frame, c)
    d.contact_efc_address[c] = -1
    d.contact_mu[c] = 0.0
    H = d.contact_H
    for i in range(6):
        for k in range(6):
            H[c, i, k] = 0.0


@kernel(inline="always")
def _narrowphase(m, d, g1, g2, ipair):
    """Collide one geom pair (swapped so geom[0] has the lower type) and append its contacts
    with their geoms; returns how many. Parameters are set by the caller."""
    if m.geom_type[g1] > m.geom_type[g2]:
        g1, g2 = g2, g1
    counts = d.efc_counts
    ncon = counts[COUNT_NCON]
    margin = pair_margin(m, g1, g2, ipair)
    gap = pair_gap(m, g1, g2, ipair)
    multiccd = (m.opt_flags[OPT_DISABLEFLAGS] & DSBL_MULTICCD) == 0
    if ncon + max_contacts(m.geom_type[g1], m.geom_type[g2], margin + gap > 0, multiccd) > \
            d.contact_dist.shape[0]:
        counts[COUNT_DROPPED] += 1  # no room: MuJoCo warns (mjWARN_CONTACTFULL) and drops them
        return 0
    # a collider writes the normal in frame row 0 and a tangent hint in row 1 (zero: none)
    fr = d.contact_frame
    for c in range(ncon, ncon + 8 if ncon + 8 <= fr.shape[0] else fr.shape[0]):
        for k in range(3):
            fr[c, 1, k] = 0.0
    n = collide(m, d, g1, g2, margin + gap, ncon)
    for c in range(ncon, ncon + n):
        d.contact_geom[c, 0] = g1
        d.contact_geom[c, 1] = g2
    counts[COUNT_NCON] = ncon + n
    return n


@kernel(inline="always")
def _collide_geom_pair(m, d, g1, g2, ipair):
    """Narrowphase of one pair and its contact parameters."""
    start = d.efc_counts[COUNT_NCON]
    n = _narrowphase(m, d, g1, g2, ipair)
    for c in range(start, start + n):
        set_contact_params(m, d, c, ipair)


@kernel
def _swap_raw_contacts(d, i, j):
    """Swap the geometry and geoms of contact rows i and j (before their parameters are set)."""
    d.contact_dist[i], d.contact_dist[j] = d.contact_dist[j], d.contact_dist[i]
    pos, frame = d.contact_pos, d.contact_frame
    for k in range(3):
        pos[i, k], pos[j, k] = pos[j, k], pos[i, k]
        for r in range(3):
            frame[i, r, k], frame[j, r, k] = frame[j, r, k], frame[i, r, k]
    for k in range(2):
        d.contact_geom[i, k], d.contact_geom[j, k] = d.contact_geom[j, k], d.contact_geom[i, k]


@kernel
def _sort_contacts_by_geoms(d, start, end):
    """Stable insertion sort of contact rows start..end-1 by (geom[0], geom[1]) (contactSort
    after mj_collideTree)."""
    geom = d.contact_geom
    for i in range(start + 1, end):
        j = i
        while j > start and (geom[j - 1, 0] > geom[j, 0]
                             or (geom[j - 1, 0] == geom[j, 0] and geom[j - 1, 1] > geom[j, 1])):
            _swap_raw_contacts(d, j - 1, j)
            j -= 1


@kernel
def _obbs_apart(m, d, g1, g2, margin):
    """True when the oriented bounding boxes of geoms g1 and g2 (geom_aabb in their frames) are
    further apart than ``margin`` along one of the six face normals: the leaf test of MuJoCo's
    midphase (mj_collideOBB with geom boxes, separating-axis test of Gottschalk et al. on the
    faces only). Its rounding, not the colliders', decides for geoms that touch at zero distance.
    A box infinite along all three axes never separates, and the faces of a box are not tested
    against a box infinite along any axis (a plane)."""
    a1, a2 = m.geom_aabb[g1], m.geom_aabb[g2]
    inf1 = (a1[3] >= MAXVAL, a1[4] >= MAXVAL, a1[5] >= MAXVAL)
    inf2 = (a2[3] >= MAXVAL, a2[4] >= MAXVAL, a2[5] >= MAXVAL)
    if (inf1[0] and inf1[1] and inf1[2]) or (inf2[0] and inf2[1] and inf2[2]):
        return False
    infinite1 = inf1[0] or inf1[1] or inf1[2]
    infinite2 = inf2[0] or inf2[1] or inf2[2]
    r1, r2 = d.geom_xmat[g1], d.geom_xmat[g2]
    p1, p2 = d.geom_xpos[g1], d.geom_xpos[g2]
    # box centres in world coordinates: xmat @ local centre, then + xpos
    c10 = r1[0, 0] * a1[0] + r1[0, 1] * a1[1] + r1[0, 2] * a1[2]
    c11 = r1[1, 0] * a1[0] + r1[1, 1] * a1[1] + r1[1, 2] * a1[2]
    c12 = r1[2, 0] * a1[0] + r1[2, 1] * a1[1] + r1[2, 2] * a1[2]
    c10, c11, c12 = c10 + p1[0], c11 + p1[1], c12 + p1[2]
    c20 = r2[0, 0] * a2[0] + r2[0, 1] * a2[1] + r2[0, 2] * a2[2]
    c21 = r2[1, 0] * a2[0] + r2[1, 1] * a2[1] + r2[1, 2] * a2[2]
    c22 = r2[2, 0] * a2[0] + r2[2, 1] * a2[1] + r2[2, 2] * a2[2]
    c20, c21, c22 = c20 + p2[0], c21 + p2[1], c22 + p2[2]
    for j in range(2):
        # the faces of box j, unless the other box is infinite
        if (infinite2 if j == 0 else infinite1):
            continue
        rj = r1 if j == 0 else r2
        for k in range(3):
            # face normal k of box j: column k of its xmat
            n0, n1, n2 = rj[0, k], rj[1, k], rj[2, k]
            proj1 = c10 * n0 + c11 * n1 + c12 * n2
            proj2 = c20 * n0 + c21 * n1 + c22 * n2
            rad1 = (abs(a1[3] * (r1[0, 0] * n0 + r1[1, 0] * n1 + r1[2, 0] * n2))
                    + abs(a1[4] * (r1[0, 1] * n0 + r1[1, 1] * n1 + r1[2, 1] * n2))
                    + abs(a1[5] * (r1[0, 2] * n0 + r1[1, 2] * n1 + r1[2, 2] * n2)))
            rad2 = (abs(a2[3] * (r2[0, 0] * n0 + r2[1, 0] * n1 + r2[2, 0] * n2))
                    + abs(a2[4] * (r2[0, 1] * n0 + r2[1, 1] * n1 + r2[2, 1] * n2))
                    + abs(a2[5] * (r2[0, 2] * n0 + r2[1, 2] * n1 + r2[2, 2] * n2)))
            if rad1 + rad2 + margin < abs(proj2 - proj1):
                return True
    return False


@kernel(inline="always")
def _collide_body_pair(m, d, b1, b2, pair_start, pair_end, midphase):
    """The dynamic geom pairs of bodies b1 < b2 (the single pair, the midphase or all-to-all)."""
    adr1, n1 = m.body_geomadr[b1], m.body_geomnum[b1]
    adr2, n2 = m.body_geomadr[b2], m.body_geomnum[b2]
    if n1 == 1 and n2 == 1:
        if _keep_geom_pair(m, d, adr1, adr2, -1, pair_start, pair_end):
            _collide_geom_pair(m, d, adr1, adr2, -1)
        return
    start = d.efc_counts[COUNT_NCON]
    for g1 in range(adr1, adr1 + n1):
        for g2 in range(adr2, adr2 + n2):
            if not _keep_geom_pair(m, d, g1, g2, -1, pair_start, pair_end):
                continue
            # mj_collideTree's leaf test (the two single-geom bodies above skip it, as in MuJoCo)
            if midphase and _obbs_apart(m, d, g1, g2, pair_margin(m, g1, g2, -1) + pair_gap(m, g1, g2, -1)):
                continue
            _narrowphase(m, d, g1, g2, -1)
    end = d.efc_counts[COUNT_NCON]
    if midphase:
        _sort_contacts_by_geoms(d, start, end)
    for c in range(start, end):
        set_contact_params(m, d, c, -1)


@kernel
def _emit_pairs(m, d, pairadr, signature):
    """The <pair>s from ``pairadr`` whose signature is at most ``signature``; returns the next."""
    npair = m.pair_dim.shape[0]
    while pairadr < npair and m.pair_signature[pairadr] <= signature:
        g1, g2 = m.pair_geom1[pairadr], m.pair_geom2[pairadr]
        if _keep_geom_pair(m, d, g1, g2, pairadr, 0, 0):
            _collide_geom_pair(m, d, g1, g2, pairadr)
        pairadr += 1
    return pairadr


@kernel
def collision_kernel(m, d):
    """All contacts of the current poses, in MuJoCo's order (mj_collision)."""
    counts = d.efc_counts
    counts[COUNT_NCON] = 0
    counts[COUNT_DROPPED] = 0
    flags = m.opt_flags[OPT_DISABLEFLAGS]
    nbody = m.body_parentid.shape[0]
    if flags & DSBL_CONSTRAINT or flags & DSBL_CONTACT or nbody < 2:
        return
    filterparent = (flags & DSBL_FILTERPARENT) == 0
    midphase = (flags & DSBL_MIDPHASE) == 0
    nexclude = m.exclude_signature.shape[0]
    npair = m.pair_dim.shape[0]
    pairadr = 0
    exadr = 0
    # a sphere per body prunes body pairs whose geoms are all apart before their geom pairs are
    # visited (MuJoCo prunes them with its sweep-and-prune broadphase)
    spheres = d.scratch_body_sphere
    _body_spheres(m, d, spheres)
    override_margin = m.opt_real[OPT_O_MARGIN] if m.opt_flags[OPT_ENABLEFLAGS] & ENBL_OVERRIDE else 0.0
    sleeping = sleep_enabled(m)
    for b1 in range(nbody):
        if m.body_contype[b1] == 0 and m.body_conaffinity[b1] == 0:
            continue
        for b2 in range(b1 + 1, nbody):
            if m.body_contype[b2] == 0 and m.body_conaffinity[b2] == 0:
                continue
            if _body_pair_filtered(m, b1, b2, filterparent):
                continue
            if sleeping and sleep_filtered(d, m.body_weldid[b1], m.body_weldid[b2], b1, b2):
                continue
            signature = (b1 << 16) + b2
            pair_start = pairadr
            if pairadr < npair:
                pairadr = _emit_pairs(m, d, pairadr, signature)
            if _bitmasks_miss(m.body_contype[b1], m.body_conaffinity[b1], m.body_contype[b2],
                              m.body_conaffinity[b2]):
                continue
            while exadr < nexclude and m.exclude_signature[exadr] < signature:
                exadr += 1
            if exadr < nexclude and m.exclude_signature[exadr] == signature:
                continue
            if _body_spheres_apart(spheres, b1, b2, override_margin):
                continue
            _collide_body_pair(m, d, b1, b2, pair_start, pairadr, midphase)
    _emit_pairs(m, d, pairadr, 2**31 - 1)


@handle_entry
def collision_entry(m, d):
    collision_kernel(m, d)


# ---- contact forces ---------------------------------------------------------------------------------


@kernel
def contact_force_kernel(m, d, i, result):
    """The force and torque of contact i in its contact frame (mj_contactForce): normal force,
    two tangential forces, then the torsional and two rolling torques, ``dim`` of them set and
    the rest zero; all zero for a contact without rows. The normal force is the net interface
    force: the solver's minus the contact's adhesion (negative under tension). Pyramidal rows are
    decoded
    (mju_decodePyramid): the normal force is the sum of the edge forces, tangential force k
    the difference of edge pair k times friction coefficient k."""
    for k in range(6):
        result[k] = 0.0
    adr = d.contact_efc_address[i]
    if adr < 0:
        return
    dim = d.contact_dim[i]
    force = d.efc_force
    if m.opt_flags[OPT_CONE] == CONE_ELLIPTIC or dim == 1:
        for k in range(dim):
            result[k] = force[adr + k]
        result[0] -= d.contact_adhesion[i]
        return
    for k in range(2 * (dim - 1)):
        result[0] += force[adr + k]
    for k in range(dim - 1):
        result[k + 1] = (force[adr + 2 * k] - force[adr + 2 * k + 1]) * d.contact_friction[i, k]
    # the net interface force: the cone force minus the adhesive pull
    result[0] -= d.contact_adhesion[i]


@handle_entry(args="int64, float64[::1]")
def contact_force_entry(m, d, i, result):
    contact_force_kernel(m, d, i, result)


def warn_if_contacts_dropped(m, d, stacklevel: int = 3) -> None:
    """A ContactFullWarning when the last collision or constraint stage dropped contacts."""
    dropped = int(d.efc_counts[COUNT_DROPPED])
    if dropped:
        counts = getattr(d, "warning_counts", None)  # a BatchData member's row Data has one too
        if counts is not None:
            counts[0, WARN_CONTACTFULL] += 1
            counts[1, WARN_CONTACTFULL] = dropped
        warnings.warn(f"{dropped} geom pair(s) or contact(s) found no room in the contact arrays "
                      f"(nconmax = {m.nconmax}, nefcmax = {m.nefcmax}) at time {d.time:g} and were dropped; "
                      "raise <size nconmax=...>", ContactFullWarning, stacklevel=stacklevel)


# ---- public functions --------------------------------------------------------------------------------

_COLLISION = FastEntry(collision_entry)
_CONTACT_FORCE = FastEntry(contact_force_entry)


def collision(m, d) -> None:
    """Collision detection: the contacts of the current geom poses (mj_collision).

    Reads: geom_xpos, geom_xmat (run ``kinematics`` first). Writes: ncon and the contact
    arrays (``d.contact.dist``, ``.pos``, ``.frame``, ``.geom``, ``.dim``, ``.friction``,
    ``.solref``, ``.solreffriction``, ``.solimp``, ``.includemargin``, ``.exclude``, ...).
    """
    check_model_data(m, d, "collision")
    _COLLISION.call(m._ptr, d._ptr)
    warn_if_contacts_dropped(m, d)


def contact_force(m, d, i: int) -> np.ndarray:
    """Force and torque of contact ``i`` in its contact frame (mj_contactForce), a 6-vector:
    normal force, two tangential forces, torsional and two rolling torques (``dim`` of them
    set). The force acts from geom[0] on geom[1]; run ``forward`` (or the solver) first."""
    check_model_data(m, d, "contact_force")
    i = operator.index(i)
    if not 0 <= i < d.ncon:
        raise IndexError(f"contact {i} out of range: d.ncon = {d.ncon}")
    result = np.zeros(6)
    _CONTACT_FORCE.call(m._ptr, d._ptr, i, result)
    return result
