"""The analytic primitive colliders (engine/collision_primitive.py) against MuJoCo 4.0.

Each collider is compared with MuJoCo's own on hundreds of random poses and sizes: a scene
with the two geoms (a world plane or a free body for g1, a free body for g2) is compiled once
per pair of types; for each case the geoms' sizes, margins and gaps are written into the
MjModel, their world poses straight into ``geom_xpos`` / ``geom_xmat`` (so degenerate poses
are exact: parallel axes, aligned faces, coincident centres), and ``mj_collision`` runs.
The bounding volumes are made huge so that MuJoCo's broad- and mid-phase filters always pass
and its collider alone decides (the filters are conservative, so this changes no contact).

Our collider gets the same poses, sizes and threshold (margin1 + margin2 + gap1 + gap2, as
mj_collideGeoms passes it); after make_frame its contacts must equal MuJoCo's in count and
order, and dist, pos and frame must agree to 1e-12 absolute + 1e-12 relative.

The cases are drawn by a fixed-seed generator per collider: penetrating, touching, separated
within the threshold, at it and beyond it, with tiny to huge sizes, plus degenerate poses.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close

mujoco = pytest.importorskip("mujoco")

from kinedyn.engine import collision_primitive as cp  # noqa: E402
from kinedyn.engine.util_spatial import make_frame  # noqa: E402

TOL = 1e-12  # absolute and relative: analytic colliders, same float64 arithmetic
NCASE = 400  # random cases per collider

TYPES = {"plane": mujoco.mjtGeom.mjGEOM_PLANE, "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
         "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
         "box": mujoco.mjtGeom.mjGEOM_BOX}

COLLIDERS = {
    ("plane", "sphere"): cp.collide_plane_sphere,
    ("plane", "capsule"): cp.collide_plane_capsule,
    ("plane", "cylinder"): cp.collide_plane_cylinder,
    ("plane", "box"): cp.collide_plane_box,
    ("sphere", "sphere"): cp.collide_sphere_sphere,
    ("sphere", "capsule"): cp.collide_sphere_capsule,
    ("sphere", "cylinder"): cp.collide_sphere_cylinder,
    ("capsule", "capsule"): cp.collide_capsule_capsule,
}

# ---- MuJoCo side ------------------------------------------------------------------------------

_MODELS: dict = {}


def _scene(type1: str, type2: str):
    """(MjModel, MjData) with geom 0 of type1 (in the world if a plane) and geom 1 of type2."""
    key = (type1, type2)
    if key not in _MODELS:
        size = {"plane": "0 0 1", "sphere": ".1", "capsule": ".1 .2", "cylinder": ".1 .2",
                "box": ".1 .2 .3"}
        g1 = f'<geom type="{type1}" size="{size[type1]}"/>'
        g2 = f'<geom type="{type2}" size="{size[type2]}"/>'
        body1 = g1 if type1 == "plane" else f"<body><freejoint/>{g1}</body>"
        xml = f"""<mujoco><option><flag gravity="disable"/></option><worldbody>
          {body1}<body><freejoint/>{g2}</body></worldbody></mujoco>"""
        m = mujoco.MjModel.from_xml_string(xml)
        # bounding volumes that always pass the broad- and mid-phase tests
        m.geom_rbound[:] = 1e10
        m.geom_aabb[:, :3] = 0.0
        m.geom_aabb[:, 3:] = 1e10
        _MODELS[key] = (m, mujoco.MjData(m))
    return _MODELS[key]


def mujoco_contacts(case):
    """MuJoCo's contacts for one case: (dist (n,), pos (n, 3), frame (n, 3, 3))."""
    m, d = _scene(case["type1"], case["type2"])
    m.geom_size[:] = case["size"]
    m.geom_margin[:] = case["margin"]
    m.geom_gap[:] = case["gap"]
    mujoco.mj_kinematics(m, d)
    d.geom_xpos[:] = case["xpos"]
    d.geom_xmat[:] = case["xmat"].reshape(2, 9)
    mujoco.mj_collision(m, d)
    con = d.contact[:d.ncon]
    assert all(tuple(g) == (0, 1) for g in con.geom)
    return con.dist.copy(), con.pos.copy(), con.frame.reshape(-1, 3, 3).copy()


def threshold(case) -> float:
    """What mj_collideGeoms passes the collider: the summed margins plus the summed gaps."""
    margin, gap = case["margin"], case["gap"]
    return (margin[0] + margin[1]) + (gap[0] + gap[1])


def our_contacts(collider, case, c0=3, nrow=12):
    """Our collider's contacts for one case, written from row c0 of fresh (NaN) arrays, each
    frame completed by make_frame; rows outside the written ones must stay untouched."""
    dist = np.full(nrow, np.nan)
    pos = np.full((nrow, 3), np.nan)
    frame = np.full((nrow, 3, 3), np.nan)
    n = collider(case["xpos"], case["xmat"], case["size"], 0, 1, threshold(case), dist, pos, frame, c0)
    assert 0 <= n <= nrow - c0
    rows = slice(c0, c0 + n)
    assert np.isnan(dist[:c0]).all() and np.isnan(dist[c0 + n:]).all()
    assert np.isnan(frame[rows, 2]).all()  # row 2 is the driver's (make_frame's) to fill
    for i in range(c0, c0 + n):
        make_frame(frame, i)
    return dist[rows].copy(), pos[rows].copy(), frame[rows].copy()


def check_case(collider, case):
    """Assert one case matches; returns (max abs err, max rel err) over dist, pos, frame."""
    theirs = mujoco_contacts(case)
    ours = our_contacts(collider, case)
    label = case["label"]
    assert len(ours[0]) == len(theirs[0]), f"{label}: {len(ours[0])} contacts, MuJoCo {len(theirs[0])}"
    errs = []
    for name, a, b in zip(("dist", "pos", "frame"), ours, theirs, strict=True):
        assert_close(f"{label} {name}", a, b, rtol=TOL, atol=TOL)
        err = np.abs(a - b)
        scale = np.maximum(np.abs(a), np.abs(b))
        rel = np.where(err == 0, 0.0, err / np.where(scale == 0, 1.0, scale))
        errs.append((float(err.max(initial=0.0)), float(rel.max(initial=0.0))))
    return errs, len(theirs[0])


# ---- random poses ------------------------------------------------------------------------------


def rotation(rng) -> np.ndarray:
    """A uniformly random rotation matrix (MuJoCo's quat2Mat of a random unit quaternion)."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, q)
    return mat.reshape(3, 3)


def signed_permutation(rng) -> np.ndarray:
    """An exact rotation permuting and flipping the axes (det +1)."""
    while True:
        mat = np.eye(3)[rng.permutation(3)] * rng.choice([-1.0, 1.0], size=3)
        if np.linalg.det(mat) > 0:
            return mat


def scale_of(rng) -> float:
    """A size scale: mostly about 1, sometimes tiny or huge."""
    return float(rng.choice([1e-3, 0.1, 1.0, 1.0, 1.0, 10.0, 1e3]))


def margins(rng, scale):
    """Geom margins and gaps, each zero or a random fraction of the scale."""
    def one():
        return 0.0 if rng.random() < 0.4 else float(rng.uniform(0, 0.3) * scale)
    return np.array([one(), one()]), np.array([one(), one()])


def target_distance(rng, kind, scale, thr):
    """A surface distance of the given kind (relative to the threshold thr)."""
    if kind == "penetrating":
        return -float(rng.uniform(0, 0.8)) * scale
    if kind == "touching":
        return float(rng.choice([0.0, 1e-15, -1e-15])) * scale
    if kind == "within":
        return float(rng.uniform(0, 1)) * thr
    if kind == "at":
        return thr
    return thr + float(rng.uniform(1e-6, 1.0)) * scale  # beyond


KINDS = ("penetrating", "touching", "within", "at", "beyond")


def unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def new_case(label, type1, type2, size1, size2, rng, scale):
    margin, gap = margins(rng, scale)
    size = np.zeros((2, 3))
    size[0, :len(size1)] = size1
    size[1, :len(size2)] = size2
    return {"label": label, "type1": type1, "type2": type2, "size": size, "margin": margin, "gap": gap,
            "xpos": np.zeros((2, 3)), "xmat": np.zeros((2, 3, 3))}


def plane_cases(type2, rng, n):
    """A plane against type2: the geom placed so that its lowest point lies at a target
    distance above the plane (so every kind of contact occurs), some poses degenerate."""
    cases = []
    for i in range(n):
        scale = scale_of(rng)
        kind = KINDS[i % len(KINDS)]
        nsize = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3}[type2]
        size2 = rng.uniform(0.05, 1.0, size=nsize) * scale
        case = new_case(f"plane-{type2} #{i} {kind}", "plane", type2, [0, 0, 1], size2, rng, scale)
        variant = i // len(KINDS) % 4
        mat1 = np.eye(3) if variant == 0 else rotation(rng)
        if type2 in ("box", "cylinder") and variant == 1:
            mat2 = mat1 @ signed_permutation(rng)  # faces / cap aligned with the plane
        elif type2 in ("capsule", "cylinder") and variant == 2:
            mat2 = mat1 @ rotation_about_z(rng)  # axis along the normal (x/y random)
        elif type2 in ("capsule", "cylinder", "box") and variant == 3 and i % 2:
            # axis in the plane (a capsule lying flat)
            mat2 = mat1 @ np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]) @ rotation_about_z(rng)
        else:
            mat2 = rotation(rng)
        normal = mat1[:, 2]
        thr = threshold(case)
        # how far the geom reaches below its centre along -normal
        if type2 == "sphere":
            reach = size2[0]
        elif type2 == "capsule":
            reach = size2[0] + size2[1] * abs(normal @ mat2[:, 2])
        elif type2 == "cylinder":
            c = abs(normal @ mat2[:, 2])
            reach = size2[1] * c + size2[0] * np.sqrt(max(0.0, 1 - c * c))
        else:
            reach = float(np.abs(normal @ mat2) @ size2)
        pos1 = rng.normal(size=3) * scale
        tangent = rng.normal(size=3) * scale
        tangent -= (tangent @ normal) * normal
        height = reach + target_distance(rng, kind, scale, thr)
        case["xpos"][0] = pos1
        case["xpos"][1] = pos1 + tangent + height * normal
        case["xmat"][0] = mat1
        case["xmat"][1] = mat2
        cases.append(case)
    return cases


def rotation_about_z(rng) -> np.ndarray:
    a = rng.uniform(-np.pi, np.pi)
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def perpendicular(rng, axis):
    """A random unit vector perpendicular to the unit vector axis."""
    v = unit(rng)
    v -= (v @ axis) * axis
    return v / np.linalg.norm(v)


def sphere_cases(type2, rng, n):
    """A sphere against type2, its centre placed at a target distance from the surface of g2
    near a chosen feature (for a cylinder: side, cap, rim or inside; for a capsule: the side or
    an end), plus coincident centres."""
    cases = []
    for i in range(n):
        scale = scale_of(rng)
        kind = KINDS[i % len(KINDS)]
        r1 = float(rng.uniform(0.05, 1.0)) * scale
        size2 = rng.uniform(0.05, 1.0, size=1 if type2 == "sphere" else 2) * scale
        case = new_case(f"sphere-{type2} #{i} {kind}", "sphere", type2, [r1], size2, rng, scale)
        thr = threshold(case)
        target = target_distance(rng, kind, scale, thr)
        variant = i // len(KINDS) % 5
        mat1 = rotation(rng) if variant else np.eye(3)
        mat2 = rotation(rng) if variant % 2 else signed_permutation(rng)
        axis = mat2[:, 2]
        pos2 = rng.normal(size=3) * scale
        if type2 == "sphere":
            centre = pos2 + unit(rng) * (r1 + size2[0] + target)
            if variant == 4:
                centre = pos2.copy()  # coincident centres
                if i % 2:
                    mat1 = mat2.copy()  # and parallel z axes: normal (1, 0, 0)
        elif type2 == "capsule":
            radius, half = size2
            if variant == 4:
                along = half * float(rng.choice([-1.0, 0.0, 1.0]))  # on the segment or at an end
                centre = pos2 + along * axis + (0.0 if i % 2 else 0.3 * radius * perpendicular(rng, axis))
            elif variant == 3:  # beyond an end
                end = pos2 + float(rng.choice([-1.0, 1.0])) * half * axis
                direction = unit(rng)
                direction = direction if direction @ axis * (end - pos2) @ axis >= 0 else -direction
                centre = end + direction * (r1 + radius + target)
            else:
                along = float(rng.uniform(-1, 1)) * half
                centre = pos2 + along * axis + perpendicular(rng, axis) * (r1 + radius + target)
        else:  # cylinder
            radius, half = size2
            side = float(rng.choice([-1.0, 1.0]))
            u = perpendicular(rng, axis)
            if variant in (0, 1):  # beside the side
                centre = pos2 + float(rng.uniform(-1, 1)) * half * axis + u * (radius + r1 + target)
            elif variant == 2:  # over a cap
                centre = (pos2 + side * (half + r1 + target) * axis
                          + u * float(rng.uniform(0, 1)) * radius)
            elif variant == 3:  # off a rim
                a = float(rng.uniform(0, np.pi / 2))
                direction = np.cos(a) * u + np.sin(a) * side * axis
                centre = pos2 + side * half * axis + radius * u + direction * (r1 + target)
            else:  # inside, or on the axis (a cap collision with no radial direction)
                centre = pos2 + rng.uniform(-1, 1) * half * axis
                if i % 2:
                    centre = centre + u * float(rng.uniform(0, 1)) * radius
        case["xpos"][0] = centre
        case["xpos"][1] = pos2
        case["xmat"][0] = mat1
        case["xmat"][1] = mat2
        cases.append(case)
    return cases


def axis_rotation(axis, angle) -> np.ndarray:
    """Rotation by angle about the unit vector axis (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def capsule_cases(rng, n):
    """Capsule against capsule: axes in general position (the segments' closest points placed at
    a target distance), parallel, anti-parallel and nearly parallel (angles 1e-12 to 1e-2 rad,
    across the parallel test at 1e-4) with any axial overlap, crossing or coincident centres,
    and segments of zero or tiny length."""
    cases = []
    for i in range(n):
        scale = scale_of(rng)
        kind = KINDS[i % len(KINDS)]
        size1 = rng.uniform(0.05, 1.0, size=2) * scale
        size2 = rng.uniform(0.05, 1.0, size=2) * scale
        variant = i // len(KINDS) % 8
        if variant == 7:  # zero or tiny half-lengths (a point against a segment, or two points)
            size1[1], size2[1] = [(0.0, size2[1]), (size1[1], 0.0), (0.0, 0.0), (1e-9 * scale, size2[1]),
                                  (1.5e-8, 1.6e-8)][i % 5]
        case = new_case(f"capsule-capsule #{i} {kind} v{variant}", "capsule", "capsule", size1, size2,
                        rng, scale)
        thr = threshold(case)
        target = target_distance(rng, kind, scale, thr)
        mat1 = rotation(rng) if i % 3 else signed_permutation(rng)
        if variant == 1:
            mat2 = mat1.copy()  # parallel
        elif variant == 2:
            mat2 = mat1 @ np.diag([1.0, -1.0, -1.0])  # anti-parallel
        elif variant in (3, 4):  # nearly parallel, either way round
            angle = 10 ** rng.uniform(-12, -2) if variant == 3 else 10 ** rng.uniform(-4.3, -3.7)
            mat2 = axis_rotation(unit(rng), angle) @ mat1
            if i % 2:
                mat2 = mat2 @ np.diag([1.0, -1.0, -1.0])
        else:
            mat2 = rotation(rng)
        z1, z2 = mat1[:, 2], mat2[:, 2]
        pos1 = rng.normal(size=3) * scale
        if variant in (1, 2, 3, 4):
            # side by side at the target distance, shifted along the axis (overlapping or not)
            shift = float(rng.uniform(-1.5, 1.5)) * (size1[1] + size2[1])
            pos2 = pos1 + perpendicular(rng, z1) * (size1[0] + size2[0] + target) + shift * z1
            if i % 7 == 0:
                pos2 = pos1 + shift * z1  # coaxial: the normal falls back to the geoms' axes
        elif variant == 5:  # coincident centres
            pos2 = pos1.copy()
        else:
            # closest points interior to both segments, or beyond an end
            x1, x2 = rng.uniform(-1.3, 1.3, size=2)
            normal = np.cross(z1, z2)
            length = np.linalg.norm(normal)
            normal = normal / length if length > 1e-6 else perpendicular(rng, z1)
            pos2 = (pos1 + x1 * size1[1] * z1 - x2 * size2[1] * z2
                    + normal * (size1[0] + size2[0] + target))
        case["xpos"][0] = pos1
        case["xpos"][1] = pos2
        case["xmat"][0] = mat1
        case["xmat"][1] = mat2
        cases.append(case)
    return cases


GENERATORS = {
    ("plane", "sphere"): lambda rng, n: plane_cases("sphere", rng, n),
    ("plane", "capsule"): lambda rng, n: plane_cases("capsule", rng, n),
    ("plane", "cylinder"): lambda rng, n: plane_cases("cylinder", rng, n),
    ("plane", "box"): lambda rng, n: plane_cases("box", rng, n),
    ("sphere", "sphere"): lambda rng, n: sphere_cases("sphere", rng, n),
    ("sphere", "capsule"): lambda rng, n: sphere_cases("capsule", rng, n),
    ("sphere", "cylinder"): lambda rng, n: sphere_cases("cylinder", rng, n),
    ("capsule", "capsule"): capsule_cases,
}


# ---- tests -------------------------------------------------------------------------------------


def run_collider(pair, ncase=NCASE, seed=0):
    """Check ``ncase`` cases of one collider; returns the max errors and the contact counts seen."""
    rng = np.random.default_rng([seed, *(ord(ch) for ch in "-".join(pair))])
    collider = COLLIDERS[pair]
    worst = np.zeros((3, 2))
    counts: dict[int, int] = {}
    for case in GENERATORS[pair](rng, ncase):
        errs, n = check_case(collider, case)
        worst = np.maximum(worst, np.array(errs))
        counts[n] = counts.get(n, 0) + 1
    return worst, counts


@pytest.mark.parametrize("pair", list(COLLIDERS), ids="-".join)
def test_collider_matches_mujoco(pair):
    worst, counts = run_collider(pair)
    # the cases reach every contact count the collider can give, none included
    assert 0 in counts and max(counts) == MAX_CONTACTS[pair], counts


def test_parallel_capsules_touch_at_the_ends_of_their_overlap():
    """MuJoCo 4.0 (since 3.16) puts the two contacts of parallel capsules at the ends of the
    interval where they overlap along the axis, normal perpendicular to the axes; the older
    readable source did not. Capsule 1 spans z in [-0.2, 0.2], capsule 2 z in [0, 0.6]."""
    case = new_case("parallel", "capsule", "capsule", [0.1, 0.2], [0.1, 0.3], np.random.default_rng(0), 1.0)
    case["margin"][:] = 0.0
    case["gap"][:] = 0.0
    case["xmat"][:] = np.eye(3)
    case["xpos"][1] = [0.15, 0.0, 0.3]
    errs, n = check_case(cp.collide_capsule_capsule, case)
    assert n == 2
    dist, pos, frame = our_contacts(cp.collide_capsule_capsule, case)
    np.testing.assert_allclose(pos, [[0.075, 0, 0.0], [0.075, 0, 0.2]], atol=1e-15)
    np.testing.assert_allclose(dist, [-0.05, -0.05], atol=1e-15)
    np.testing.assert_allclose(frame[:, 0], [[1.0, 0, 0], [1.0, 0, 0]], atol=1e-15)


MAX_CONTACTS = {("plane", "sphere"): 1, ("plane", "capsule"): 2, ("plane", "cylinder"): 4,
                ("plane", "box"): 4, ("sphere", "sphere"): 1, ("sphere", "capsule"): 1,
                ("sphere", "cylinder"): 1, ("capsule", "capsule"): 2}


if __name__ == "__main__":  # the error table of the report: python tests/test_collision_primitive.py
    for pair in COLLIDERS:
        worst, counts = run_collider(pair)
        print(f"{'-'.join(pair):18s} counts {dict(sorted(counts.items()))}  "
              + "  ".join(f"{name} abs {w[0]:.1e} rel {w[1]:.1e}"
                          for name, w in zip(("dist", "pos", "frame"), worst, strict=True)))
