"""Box colliders (kinedyn.engine.collision_box) against MuJoCo 4.0's mjc_SphereBox,
mjc_CapsuleBox and mjc_BoxBox.

Each case is a scene of two geoms on free bodies, posed by qpos and sized by writing
``geom_size`` (and margin, gap) into the compiled MjModel; MuJoCo runs mj_kinematics and
mj_collision, and the collider runs on MuJoCo's own geom_xpos / geom_xmat / geom_size with the
threshold MuJoCo's driver passes (margin1 + margin2 + gap1 + gap2). The bounding radii and
boxes are made huge so that MuJoCo's broad phase and bounding-sphere filter pass every pair
to the collider (they are conservative, so this changes no contact the collider makes).

The contacts must agree in count and order, and dist, pos and the frame (after make_frame)
to |ours - mujoco| <= 1e-12 + 1e-12 |mujoco|. Poses are drawn around chosen features (a
face, an edge, a corner) at chosen distances: touching, penetrating, inside the margin band,
beyond it, and deep; plus degenerate alignments and tiny and huge sizes. Seeds are fixed.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from kinedyn.engine.collision_box import collide_box_box, collide_capsule_box, collide_sphere_box
from kinedyn.engine.util_spatial import make_frame

RTOL, ATOL = 1e-12, 1e-12
C0 = 2  # contacts are written from this row, to check that nothing else is touched

# mj_maxContact for these pairs (rows the driver provides)
MAXCON = {"sphere": 1, "capsule": 2, "box": 8}
COLLIDERS = {"sphere": collide_sphere_box, "capsule": collide_capsule_box, "box": collide_box_box}


# ---- the MuJoCo side --------------------------------------------------------------------------


class Scene:
    """Two free bodies with one geom each; ``first`` says which body holds the box (the
    driver swaps the pair so that the lower geom type comes first either way)."""

    def __init__(self, kind: str, box_first: bool = False):
        self.kind = kind
        geoms = ["box", kind] if box_first else [kind, "box"]
        xml = f"""<mujoco><option><flag gravity="disable"/></option><worldbody>
          <body><freejoint/><geom type="{geoms[0]}" size=".1 .2 .3"/></body>
          <body pos="0 0 1"><freejoint/><geom type="{geoms[1]}" size=".1 .2 .3"/></body>
          </worldbody></mujoco>"""
        self.m = mujoco.MjModel.from_xml_string(xml)
        self.d = mujoco.MjData(self.m)
        self.m.geom_rbound[:] = 1e30
        self.m.geom_aabb[:, 3:] = 1e30
        # geom ids in the collider's order: lower type first (box-box: body order)
        self.ibox = 0 if box_first else 1
        self.iother = 1 - self.ibox
        t = self.m.geom_type
        self.g1, self.g2 = (0, 1) if t[0] <= t[1] else (1, 0)

    def run(self, size_other, size_box, pose_other, pose_box, margin=(0.0, 0.0), gap=(0.0, 0.0)):
        """Pose and size both geoms (pose = (pos, quat) in the world), collide in MuJoCo and
        with the collider; return (mujoco contacts, ours) as (dist, pos, frame) triples."""
        m, d = self.m, self.d
        m.geom_size[self.iother] = size_other
        m.geom_size[self.ibox] = size_box
        m.geom_margin[:] = margin
        m.geom_gap[:] = gap
        qpos = np.zeros(14)
        for i, (p, q) in ((self.iother, pose_other), (self.ibox, pose_box)):
            qpos[7 * i: 7 * i + 3] = p
            qpos[7 * i + 3: 7 * i + 7] = q
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        n = d.ncon
        con = d.contact
        theirs = (con.dist[:n].copy(), con.pos[:n].copy(), con.frame[:n].reshape(-1, 3, 3).copy())
        if n:
            assert (d.contact.geom[:n] == (self.g1, self.g2)).all()

        g1, g2 = self.g1, self.g2
        threshold = (m.geom_margin[g1] + m.geom_margin[g2]) + (m.geom_gap[g1] + m.geom_gap[g2])
        rows = C0 + MAXCON[self.kind] + 2
        dist = np.full(rows, np.nan)
        pos = np.full((rows, 3), np.nan)
        frame = np.full((rows, 3, 3), np.nan)
        k = COLLIDERS[self.kind](d.geom_xpos, d.geom_xmat.reshape(-1, 3, 3), m.geom_size, g1, g2, threshold,
                                 dist, pos, frame, C0)
        assert 0 <= k <= MAXCON[self.kind]
        # nothing outside the collider's rows is touched
        outside = np.r_[0:C0, C0 + MAXCON[self.kind]:rows]
        for array in (dist, pos, frame):
            assert np.isnan(array[outside]).all()
        for i in range(C0, C0 + k):
            make_frame(frame, i)
        ours = (dist[C0:C0 + k], pos[C0:C0 + k], frame[C0:C0 + k])
        return theirs, ours


def mismatch(theirs, ours):
    """None if the contacts agree (count, then each field within tolerance), else a message;
    also returns the largest absolute and relative errors."""
    if len(theirs[0]) != len(ours[0]):
        return f"{len(ours[0])} contacts, MuJoCo {len(theirs[0])}", 0.0, 0.0
    worst_abs = worst_rel = 0.0
    for name, a, b in zip(("dist", "pos", "frame"), ours, theirs, strict=True):
        if not a.size:
            continue
        err = np.abs(a - b)
        worst_abs = max(worst_abs, float(err.max()))
        worst_rel = max(worst_rel, float((err / np.maximum(np.abs(b), 1e-300)).max()))
        bad = err > ATOL + RTOL * np.abs(b)
        if bad.any():
            return f"{name} differs by {err.max():.3g}", worst_abs, worst_rel
    return None, worst_abs, worst_rel


# ---- pose generation --------------------------------------------------------------------------


def random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def quat_of(mat):
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(mat, dtype=float).ravel())
    return q


def mat_of(quat):
    r = np.zeros(9)
    mujoco.mju_quat2Mat(r, np.asarray(quat, dtype=float))
    return r.reshape(3, 3)


def box_orientation(rng, kind):
    """A box rotation: random, the identity, or an axis permutation / 90-degree turn (exact)."""
    if kind == "identity":
        return np.array([1.0, 0.0, 0.0, 0.0])
    if kind == "quarter":
        k = rng.integers(4)
        axis = rng.integers(3)
        q = np.zeros(4)
        q[0] = np.cos(k * np.pi / 4)
        q[1 + axis] = np.sin(k * np.pi / 4)
        return q / np.linalg.norm(q)
    return random_quat(rng)


def surface_point(rng, half, feature):
    """A point on the box surface (box frame) at a face, edge or corner, with an outward
    direction in that feature's normal cone."""
    signs = rng.choice([-1.0, 1.0], size=3)
    axes = rng.permutation(3)
    p = rng.uniform(-1.0, 1.0, size=3) * half
    n = np.zeros(3)
    fixed = {"face": 1, "edge": 2, "corner": 3}[feature]
    for a in axes[:fixed]:
        p[a] = signs[a] * half[a]
        n[a] = signs[a] * rng.uniform(0.05, 1.0)
    if fixed == 1:
        n[axes[0]] = signs[axes[0]]
    return p, n / np.linalg.norm(n)


def target_distance(rng, category, radius, threshold):
    """Signed surface distance for a category (what the centre offset aims at)."""
    if category == "touching":
        return 0.0
    if category == "penetrating":
        return -rng.uniform(0.0, 0.9) * radius
    if category == "margin":
        return rng.uniform(0.0, 1.0) * threshold
    if category == "beyond":
        return threshold + rng.uniform(1e-9, 0.5) * (radius + threshold)
    raise ValueError(category)


CATEGORIES = ("touching", "penetrating", "margin", "beyond")


def margins(rng, scale):
    """(margin pair, gap pair): none, a margin on one or both geoms, or margin and gap."""
    pick = rng.integers(4)
    if pick == 0:
        return (0.0, 0.0), (0.0, 0.0)
    if pick == 1:
        return (rng.uniform(0, 0.2) * scale, 0.0), (0.0, 0.0)
    if pick == 2:
        return (rng.uniform(0, 0.1) * scale, rng.uniform(0, 0.1) * scale), (0.0, 0.0)
    return (rng.uniform(0, 0.1) * scale, rng.uniform(0, 0.1) * scale), (rng.uniform(0, 0.05) * scale, 0.0)


def size_scale(rng):
    """Mostly unit scale; sometimes tiny or huge."""
    pick = rng.integers(10)
    if pick == 0:
        return 10.0 ** rng.uniform(-4, -2)
    if pick == 1:
        return 10.0 ** rng.uniform(2, 4)
    return 1.0


# ---- sphere : box -----------------------------------------------------------------------------


def sphere_box_cases(n, seed):
    rng = np.random.default_rng(seed)
    for i in range(n):
        scale = size_scale(rng)
        half = scale * 10.0 ** rng.uniform(-1.0, 0.5, size=3)
        radius = scale * 10.0 ** rng.uniform(-1.0, 0.3)
        margin, gap = margins(rng, scale)
        threshold = sum(margin) + sum(gap)
        quat_box = box_orientation(rng, ("random", "identity", "quarter")[i % 3])
        pos_box = rng.normal(size=3) * scale
        category = (*CATEGORIES, "inside", "centre")[i % 6]
        if category == "inside":
            local = rng.uniform(-1.0, 1.0, size=3) * half
        elif category == "centre":
            local = np.zeros(3)  # equidistant faces on a cube: ties in the nearest face
            half[:] = half[0]
        else:
            p, nrm = surface_point(rng, half, ("face", "edge", "corner")[(i // 6) % 3])
            local = p + nrm * (radius + target_distance(rng, category, radius, threshold))
        centre = pos_box + mat_of(quat_box) @ local
        yield (np.array([radius, 0.0, 0.0]), half, (centre, random_quat(rng)), (pos_box, quat_box),
               margin, gap)


@pytest.mark.parametrize("box_first", [False, True])
def test_sphere_box(box_first):
    scene = Scene("sphere", box_first)
    counts = [0, 0]
    for case in sphere_box_cases(400, seed=11 + box_first):
        theirs, ours = scene.run(*case)
        message, _, _ = mismatch(theirs, ours)
        assert message is None, (message, case)
        counts[len(theirs[0])] += 1
    assert min(counts) > 50  # both outcomes well represented


# ---- capsule : box ----------------------------------------------------------------------------


def capsule_box_cases(n, seed):
    rng = np.random.default_rng(seed)
    for i in range(n):
        scale = size_scale(rng)
        half = scale * 10.0 ** rng.uniform(-1.0, 0.5, size=3)
        radius = scale * 10.0 ** rng.uniform(-1.5, 0.0)
        halflength = scale * 10.0 ** rng.uniform(-1.0, 0.5)
        margin, gap = margins(rng, scale)
        threshold = sum(margin) + sum(gap)
        quat_box = box_orientation(rng, ("random", "identity", "quarter")[i % 3])
        rot_box = mat_of(quat_box)
        pos_box = rng.normal(size=3) * scale
        category = (*CATEGORIES, "deep")[i % 5]
        feature = ("face", "edge", "corner")[(i // 5) % 3]
        p, nrm = surface_point(rng, half, feature)
        if category == "deep":
            p = rng.uniform(-1.0, 1.0, size=3) * half
            offset = 0.0
        else:
            offset = radius + target_distance(rng, category, radius, threshold)

        # capsule axis (box frame): random; along a face (perpendicular to the normal), so
        # the capsule lies on it; along a box axis (exactly); pointing at the feature; or
        # nearly parallel to a box axis
        style = ("random", "lying", "box-axis", "pointing", "near-axis")[(i // 15) % 5]
        if style == "random":
            axis = rng.normal(size=3)
        elif style == "lying":
            axis = np.cross(nrm, rng.normal(size=3))
        elif style == "pointing":
            axis = nrm.copy()
        else:
            axis = np.zeros(3)
            axis[rng.integers(3)] = rng.choice([-1.0, 1.0])
            if style == "near-axis":
                axis += rng.normal(size=3) * 10.0 ** rng.uniform(-12, -4)
        axis /= np.linalg.norm(axis)
        if style == "box-axis":
            # a capsule frame made of box axes (exact in the world frame up to the box rotation)
            k = int(np.argmax(np.abs(axis)))
            perm = [(k + 1) % 3, (k + 2) % 3, k]
            rot_cap = rot_box[:, perm] * np.array([1.0, np.sign(axis[k]), np.sign(axis[k])])
        else:
            z = rot_box @ axis
            x = np.cross(z, rng.normal(size=3))
            x /= np.linalg.norm(x)
            rot_cap = np.column_stack([x, np.cross(z, x), z])
        # the point of the segment that sits at the chosen place
        t = rng.choice([-1.0, 1.0, rng.uniform(-1.0, 1.0)])
        centre_local = p + nrm * offset - axis * halflength * t
        centre = pos_box + rot_box @ centre_local
        yield (np.array([radius, halflength, 0.0]), half, (centre, quat_of(rot_cap)), (pos_box, quat_box),
               margin, gap)


@pytest.mark.parametrize("box_first", [False, True])
def test_capsule_box(box_first):
    scene = Scene("capsule", box_first)
    counts = [0, 0, 0]
    for case in capsule_box_cases(600, seed=21 + box_first):
        theirs, ours = scene.run(*case)
        message, _, _ = mismatch(theirs, ours)
        assert message is None, (message, case)
        counts[len(theirs[0])] += 1
    assert min(counts) > 50  # 0, 1 and 2 contacts all well represented


# ---- box : box --------------------------------------------------------------------------------


def axis_angle_quat(axis, angle):
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    return np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis]


def quat_mul(a, b):
    r = np.zeros(4)
    mujoco.mju_mulQuat(r, np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return r


BOX_STYLES = ("random", "resting", "stacked", "edge-edge", "deep", "tilted", "corner", "turned", "through")


def box_box_cases(n, seed):
    """Box 2 placed relative to box 1 (in box 1's frame, then moved with box 1's pose)."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        scale = size_scale(rng)
        h1 = scale * 10.0 ** rng.uniform(-1.0, 0.3, size=3)
        h2 = scale * 10.0 ** rng.uniform(-1.0, 0.3, size=3)
        if i % 5 == 0:  # thin plates
            h1[rng.integers(3)] *= 10.0 ** rng.uniform(-3, -1)
            h2[rng.integers(3)] *= 10.0 ** rng.uniform(-3, -1)
        margin, gap = margins(rng, scale)
        threshold = sum(margin) + sum(gap)
        style = BOX_STYLES[i % len(BOX_STYLES)]
        category = CATEGORIES[(i // len(BOX_STYLES)) % len(CATEGORIES)]
        depth = target_distance(rng, category, min(h1.min(), h2.min()), threshold)
        a = rng.integers(3)  # the face axis of box 1 things rest on
        sgn = rng.choice([-1.0, 1.0])
        normal = np.zeros(3)
        normal[a] = sgn
        if style == "random":
            q2 = random_quat(rng)
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            p2 = direction * rng.uniform(0.2, 1.2) * (np.linalg.norm(h1) + np.linalg.norm(h2))
        elif style in ("resting", "stacked", "tilted", "turned"):
            # box 2 on box 1's face a: aligned (or turned about the normal by a right angle,
            # an arbitrary angle, or tilted slightly), equal sizes when stacked; "turned": a
            # face of box 1's size turned by about 45 degrees (an octagon, eight contacts)
            if style == "stacked":
                h2 = h1.copy()
                q2 = np.array([1.0, 0.0, 0.0, 0.0])
                lateral = rng.choice([0.0, rng.uniform(-0.5, 0.5), 1e-12])
            elif style == "turned":
                h2 = np.where(np.arange(3) == a, h2, h1)
                q2 = axis_angle_quat(normal, np.pi / 4 + rng.uniform(-0.1, 0.1))
                lateral = rng.choice([0.0, rng.uniform(-0.1, 0.1)])
            else:
                turn = rng.choice([0.0, np.pi / 2, rng.uniform(0, 2 * np.pi)])
                q2 = axis_angle_quat(normal, turn)
                lateral = rng.uniform(-1.0, 1.0)
            if style == "tilted":
                tilt = 10.0 ** rng.uniform(-9, -1)
                q2 = quat_mul(axis_angle_quat(np.cross(normal, rng.normal(size=3)), tilt), q2)
            # height of box 2's support below its centre along the normal
            rot2 = mat_of(q2)
            reach = np.abs(rot2[a, :]) @ h2
            p2 = np.zeros(3)
            for k in range(3):
                if k != a:
                    p2[k] = lateral * h1[k] * rng.uniform(0.0, 1.5)
            p2[a] = sgn * (h1[a] + reach + depth)
        elif style == "edge-edge":
            # box 2 turned so an edge points at box 1, crossing an edge of box 1
            b = (a + 1 + rng.integers(2)) % 3
            q2 = quat_mul(axis_angle_quat(np.eye(3)[b], np.pi / 4 + rng.uniform(-0.3, 0.3)),
                          axis_angle_quat(normal, np.pi / 4 + rng.uniform(-0.3, 0.3)))
            rot2 = mat_of(q2)
            reach = np.abs(rot2[a, :]) @ h2
            c = 3 - a - b
            p2 = np.zeros(3)
            p2[c] = rng.choice([-1.0, 1.0]) * h1[c] * rng.uniform(0.5, 1.0)
            p2[b] = rng.uniform(-0.5, 0.5) * h1[b]
            p2[a] = sgn * (h1[a] + reach + depth)
        elif style == "deep":
            # centres closer than the smallest half-size
            q2 = random_quat(rng) if rng.integers(2) else axis_angle_quat(normal, rng.uniform(0, 2 * np.pi))
            p2 = rng.uniform(-1.0, 1.0, size=3) * min(h1.min(), h2.min())
        elif style == "through":
            # an edge of box 2's face runs through a corner of box 1's face (to rounding):
            # clipping there emits near-duplicate vertices, which MuJoCo merges (DUPEPS)
            h2 = h1 * rng.uniform(0.5, 2.0, size=3)
            q2 = axis_angle_quat(normal, rng.uniform(0.1, 1.4))
            rot2 = mat_of(q2)
            b, c = (a + 1) % 3, (a + 2) % 3
            corner = np.zeros(3)
            corner[b], corner[c] = h1[b], h1[c]
            p2 = corner - h2[b] * rot2[:, b] - rng.uniform(-1.0, 1.0) * h2[c] * rot2[:, c]
            p2 += rng.choice([0.0, 1e-15, 1e-13]) * scale * rng.normal(size=3)
            reach = np.abs(rot2[a, :]) @ h2
            p2[a] = sgn * (h1[a] + reach + depth)
        else:  # corner of box 2 against a face of box 1
            q2 = random_quat(rng)
            rot2 = mat_of(q2)
            reach = np.abs(rot2[a, :]) @ h2
            p2 = rng.uniform(-1.0, 1.0, size=3) * h1
            p2[a] = sgn * (h1[a] + reach + depth)
        q1 = box_orientation(rng, ("random", "identity", "quarter")[(i // 3) % 3])
        rot1 = mat_of(q1)
        p1 = rng.normal(size=3) * scale
        yield h1, h2, (p1, q1), (p1 + rot1 @ p2, quat_mul(q1, q2)), margin, gap


def test_box_box():
    scene = Scene("box")
    counts = np.zeros(9, dtype=int)
    for case in box_box_cases(1800, seed=31):
        theirs, ours = scene.run(*case)
        message, _, _ = mismatch(theirs, ours)
        assert message is None, (message, case)
        counts[len(theirs[0])] += 1
    assert counts[0] > 100 and counts[1] > 50 and counts[4] > 100 and counts[5:].sum() > 50, counts


# ---- a simulated pile -------------------------------------------------------------------------

PILE = """<mujoco><option timestep="0.002"/>
<default><geom margin="0.002"/></default>
<worldbody><geom type="box" size="1 1 0.1" pos="0 0 -0.1"/>
 <body pos="0 0 0.1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
 <body pos="0 0 0.31"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
 <body pos="0.02 0 0.52" euler="0 0 45"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
 <body pos="0 0 0.73" euler="0 0 10"><freejoint/><geom type="box" size=".15 .05 .02" gap="0.001"/></body>
 <body pos="0 0.01 0.85" euler="0 90 0"><freejoint/><geom type="capsule" size=".03 .1"/></body>
 <body pos="0.4 0 0.3" euler="30 20 10"><freejoint/><geom type="box" size=".08 .05 .03"/></body>
 <body pos="0.45 0.02 0.5"><freejoint/><geom type="sphere" size=".04"/></body>
 <body pos="-0.4 0 0.2" euler="0 80 0"><freejoint/><geom type="capsule" size=".03 .12"/></body>
 <body pos="-0.35 0.1 0.45" euler="10 0 0"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
</worldbody></mujoco>"""


def test_simulated_pile():
    """Boxes stacked on a box floor (equal cubes, a 45-degree turned cube, a plate, a capsule
    lying on it), a sphere and a capsule falling on boxes, simulated by MuJoCo until they
    rest: at every step, every sphere/capsule/box-box geom pair collides as in MuJoCo. Resting
    contact gives the near-ties (faces parallel to rounding, contacts at the margin) that
    decide contact counts. (The sphere ends up rolling on the floor.)"""
    m = mujoco.MjModel.from_xml_string(PILE)
    d = mujoco.MjData(m)
    kinds = {int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere", int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
             int(mujoco.mjtGeom.mjGEOM_BOX): "box"}
    box = int(mujoco.mjtGeom.mjGEOM_BOX)
    pairs = []
    for i in range(m.ngeom):
        for j in range(i + 1, m.ngeom):
            ti, tj = int(m.geom_type[i]), int(m.geom_type[j])
            if box in (ti, tj) and ti in kinds and tj in kinds:
                pairs.append((i, j) if ti <= tj else (j, i))
    ncontacts = 0
    rows = C0 + 8
    for step in range(600):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)  # contacts at the state the step left
        n = d.ncon
        geom = d.contact.geom[:n]
        xmat = d.geom_xmat.reshape(-1, 3, 3)
        for g1, g2 in pairs:
            mine = np.flatnonzero((geom[:, 0] == g1) & (geom[:, 1] == g2))
            theirs = (d.contact.dist[mine], d.contact.pos[mine], d.contact.frame[mine].reshape(-1, 3, 3))
            threshold = (m.geom_margin[g1] + m.geom_margin[g2]) + (m.geom_gap[g1] + m.geom_gap[g2])
            dist = np.full(rows, np.nan)
            pos = np.full((rows, 3), np.nan)
            frame = np.full((rows, 3, 3), np.nan)
            k = COLLIDERS[kinds[int(m.geom_type[g1])]](d.geom_xpos, xmat, m.geom_size, g1, g2, threshold,
                                                       dist, pos, frame, C0)
            for c in range(C0, C0 + k):
                make_frame(frame, c)
            message, _, _ = mismatch(theirs, (dist[C0:C0 + k], pos[C0:C0 + k], frame[C0:C0 + k]))
            assert message is None, (message, step, g1, g2)
            ncontacts += len(mine)
    assert ncontacts > 10000
    assert np.all(np.abs(d.qvel.reshape(-1, 6)[:4, :3]) < 1e-3)  # the stack of cubes and plate rests
