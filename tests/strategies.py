"""Random models and states for the MuJoCo comparison tests.

The generators emit MJCF *text*, so kinedyn and MuJoCo compile exactly the same
input (MJX ``create_mjcf``, RBD.jl ``rand_tree_mechanism``). One builder,
:func:`_build_mjcf`, draws every choice through a small ``_Draw`` interface and
is driven either by hypothesis (:func:`random_mjcf`, which shrinks towards small
models with few features) or by NumPy's RNG (:func:`random_mjcf_text`, for plain
``for seed in range(200)`` loops).

What a generated model contains:

* ``<compiler angle="radian"/>`` or ``"degree"``, sometimes an ``eulerseq``;
* ``<option>`` with random timestep, gravity and integrator (Euler, RK4,
  implicitfast) and always ``<flag constraint="disable" contact="disable"/>``;
* sometimes a top-level ``<default>`` for joints and geoms;
* a kinematic tree of 1-12 bodies, depth at most 6, chains and branches, each
  body frame given by ``pos`` and one of quat / axisangle / euler / xyaxes /
  zaxis (or none);
* joints: hinge, slide, ball (several stacked on one body, at most 6 dofs per
  body) and free (alone, only on a child of the world), with random pos, axis,
  range, stiffness, damping, armature, springref, ref;
* geoms (sphere, capsule, cylinder, box, ellipsoid; sometimes ``fromto``;
  density or mass) and sometimes an explicit ``<inertial>`` (diaginertia or a
  positive definite fullinertia whose principal moments obey the triangle
  inequality);
* sites on bodies and on the world;
* motor, position (sometimes with ``timeconst``, hence an activation) and
  velocity actuators on hinge and slide joints;
* sometimes a keyframe;
* with ``constraints=True`` only (off by default, so the other tests' models do not
  change): random solver options, joint margins, friction loss and partial
  solref/solimp (limits and friction), constraint defaults in the default class, and
  equality constraints (connect and weld between bodies or sites, with or without anchor,
  relpose and torquescale; joint couplings with polycoef; active or not, named or not).

Every moving body carries mass (a geom or an inertial): MuJoCo rejects a body
with joints and zero mass ("mass and inertia of moving bodies must be larger
than mjMINVAL") even when a jointed child carries mass.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

MAX_BODIES = 12
MAX_DEPTH = 6
MAX_BODY_DOFS = 6  # MuJoCo: "more than 6 dofs in body"

FLAG_XML = '<flag constraint="disable" contact="disable"/>'

# MuJoCo enum values used by random_state (mjtJoint, mjtDyn)
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
_DYN_MUSCLE = 3

_EULERSEQS = ("xyz", "XYZ", "zyx", "ZYX", "xyx", "ZXZ", "yzx", "XZY")
_ORIENTATIONS = (None, "quat", "axisangle", "euler", "xyaxes", "zaxis")
_GEOM_TYPES = ("sphere", "capsule", "cylinder", "box", "ellipsoid")
_FROMTO_TYPES = ("capsule", "cylinder", "box", "ellipsoid")
_SITE_TYPES = ("sphere", "capsule", "cylinder", "box", "ellipsoid")
_INTEGRATORS = ("Euler", "RK4", "implicitfast")


# ---- the two sources of randomness --------------------------------------------------------------


def _round(x: float) -> float:
    """Six significant digits: short XML, and the value the text really holds."""
    return float(f"{x:.6g}")


class _NumpyDraw:
    """Choices drawn from a NumPy Generator."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:  # inclusive
        return int(self.rng.integers(lo, hi + 1))

    def real(self, lo: float, hi: float) -> float:
        return _round(self.rng.uniform(lo, hi))

    def boolean(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]


class _HypothesisDraw:
    """Choices drawn by hypothesis; shrinking goes to False, the first option and small integers."""

    def __init__(self, draw):
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def real(self, lo: float, hi: float) -> float:
        x = self.draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False))
        return min(max(_round(x), lo), hi)

    def boolean(self, p: float) -> bool:
        # 0 (the shrink target) means "feature off"
        return self.draw(st.integers(0, 999)) >= round(1000 * (1.0 - p))

    def choice(self, seq):
        return self.draw(st.sampled_from(seq))


# ---- small geometric helpers --------------------------------------------------------------------


def _fmt(*xs) -> str:
    return " ".join(format(float(x), ".6g") for x in xs)


def _vec(dr, n: int, lo: float, hi: float) -> list[float]:
    return [dr.real(lo, hi) for _ in range(n)]


def _direction(dr, fallback=(0.0, 0.0, 1.0)) -> list[float]:
    """A 3-vector far enough from zero to be normalised without loss."""
    v = _vec(dr, 3, -1.0, 1.0)
    return v if math.sqrt(sum(x * x for x in v)) >= 0.1 else list(fallback)


def _angle(dr, degree: bool, lo: float = -math.pi, hi: float = math.pi) -> float:
    return dr.real(math.degrees(lo), math.degrees(hi)) if degree else dr.real(lo, hi)


def _orientation(dr, degree: bool, form: str | None) -> str:
    """An orientation attribute (with a leading space) in the given MJCF form, or ''."""
    if form is None:
        return ""
    if form == "quat":
        q = _vec(dr, 4, -1.0, 1.0)
        if math.sqrt(sum(x * x for x in q)) < 0.1:
            q = [1.0, 0.0, 0.0, 0.0]
        return f' quat="{_fmt(*q)}"'
    if form == "axisangle":
        return f' axisangle="{_fmt(*_direction(dr), _angle(dr, degree))}"'
    if form == "euler":
        return f' euler="{_fmt(*(_angle(dr, degree) for _ in range(3)))}"'
    if form == "xyaxes":
        x = np.array(_direction(dr, (1.0, 0.0, 0.0)))
        y = np.array(_direction(dr, (0.0, 1.0, 0.0)))
        if np.linalg.norm(np.cross(x, y)) < 0.1 * np.linalg.norm(x) * np.linalg.norm(y):
            x, y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
        return f' xyaxes="{_fmt(*x, *y)}"'
    if form == "zaxis":
        return f' zaxis="{_fmt(*_direction(dr))}"'
    raise ValueError(form)


def _frame(dr, degree: bool, p_pos: float = 0.8) -> str:
    pos = f' pos="{_fmt(*_vec(dr, 3, -1.0, 1.0))}"' if dr.boolean(p_pos) else ""
    return pos + _orientation(dr, degree, dr.choice(_ORIENTATIONS))


def _random_rotation(dr) -> np.ndarray:
    q = np.array(_vec(dr, 4, -1.0, 1.0))
    n = np.linalg.norm(q)
    w, x, y, z = q / n if n >= 0.1 else (1.0, 0.0, 0.0, 0.0)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _inertial(dr, degree: bool) -> str:
    """An <inertial> whose principal moments come from second moments (x, y, z > 0).

    I1 = y + z, I2 = x + z, I3 = x + y satisfies the triangle inequality with slack
    2*min(x, y, z), far above the 1e-6 relative rounding of the text.
    """
    mass = dr.real(0.1, 5.0)
    scale = dr.real(0.02, 1.0)
    x, y, z = (scale * dr.real(0.1, 1.0) for _ in range(3))
    # Keep the second moments (hence the principal moments) at least 5% of `scale` apart. Near-equal
    # moments leave the principal frame ill-conditioned (a gap g amplifies last-bit rounding by ~1/g),
    # so neither MuJoCo's frame nor ours is determined to 1e-9 by the 6-digit text; the exactly
    # degenerate case is tested in test_compiler. Models already apart are left as drawn.
    moments = [x, y, z]
    order = sorted(range(3), key=moments.__getitem__)
    for lower, upper in zip(order, order[1:], strict=False):
        moments[upper] = max(moments[upper], moments[lower] + 0.05 * scale)
    x, y, z = moments
    principal = np.array([y + z, x + z, x + y])
    pos = f'pos="{_fmt(*_vec(dr, 3, -0.5, 0.5))}" mass="{_fmt(mass)}"'
    if dr.boolean(0.5):
        r = _random_rotation(dr)
        full = r @ np.diag(principal) @ r.T
        return (f'<inertial {pos} fullinertia="'
                f'{_fmt(full[0, 0], full[1, 1], full[2, 2], full[0, 1], full[0, 2], full[1, 2])}"/>')
    orientation = _orientation(dr, degree, dr.choice(_ORIENTATIONS))
    return f'<inertial {pos} diaginertia="{_fmt(*principal)}"{orientation}/>'


def _geom(dr, degree: bool) -> str:
    gtype = dr.choice(_GEOM_TYPES)
    attrs = [f'type="{gtype}"']
    r = dr.real(0.04, 0.3)
    if gtype in _FROMTO_TYPES and dr.boolean(0.3):
        a = np.array(_vec(dr, 3, -0.5, 0.5))
        b = np.array(_vec(dr, 3, -0.5, 0.5))
        if np.linalg.norm(b - a) < 0.05:
            b = a + np.array([0.0, 0.0, 0.3])
        attrs.append(f'fromto="{_fmt(*a, *b)}"')
        size = [r] if gtype in ("capsule", "cylinder") else [r, dr.real(0.04, 0.3)]
    else:
        size = {"sphere": [r], "capsule": [r, dr.real(0.04, 0.5)], "cylinder": [r, dr.real(0.04, 0.5)],
                "box": [r, dr.real(0.04, 0.3), dr.real(0.04, 0.3)],
                "ellipsoid": [r, dr.real(0.04, 0.3), dr.real(0.04, 0.3)]}[gtype]
        attrs.append(_frame(dr, degree, p_pos=0.5).strip())
    attrs.append(f'size="{_fmt(*size)}"')
    if dr.boolean(0.2):
        attrs.append(f'mass="{_fmt(dr.real(0.05, 5.0))}"')
    elif dr.boolean(0.3):
        attrs.append(f'density="{_fmt(dr.real(100.0, 3000.0))}"')
    if dr.boolean(0.15):
        attrs.append(f'contype="{dr.integer(0, 3)}" conaffinity="{dr.integer(0, 3)}" '
                     f'condim="{dr.choice((1, 3, 4, 6))}" group="{dr.integer(0, 5)}" '
                     f'friction="{_fmt(dr.real(0.1, 2.0), dr.real(0.0, 0.1), dr.real(0.0, 0.01))}"')
    return "<geom " + " ".join(a for a in attrs if a) + "/>"


def _site(dr, degree: bool, name: str) -> str:
    stype = dr.choice(_SITE_TYPES)
    attrs = [f'name="{name}"', f'type="{stype}"']
    if stype in ("capsule", "cylinder") and dr.boolean(0.2):
        a = np.array(_vec(dr, 3, -0.5, 0.5))
        b = a + np.array(_direction(dr)) * 0.3
        attrs.append(f'fromto="{_fmt(*a, *b)}" size="{_fmt(dr.real(0.005, 0.05))}"')
    else:
        attrs.append(_frame(dr, degree, p_pos=0.7).strip())
        attrs.append(f'size="{_fmt(*_vec(dr, 3, 0.005, 0.05))}"')
    if dr.boolean(0.2):
        attrs.append(f'group="{dr.integer(0, 5)}"')
    return "<site " + " ".join(a for a in attrs if a) + "/>"


# ---- the model ----------------------------------------------------------------------------------


class _Joint:
    def __init__(self, name: str, jtype: str, xml: str):
        self.name, self.type, self.xml = name, jtype, xml

    @property
    def nq(self) -> int:
        return {"free": 7, "ball": 4}.get(self.type, 1)

    @property
    def nv(self) -> int:
        return {"free": 6, "ball": 3}.get(self.type, 1)


def _stack_types(dr, k: int) -> list[str]:
    """Types of k joints stacked on one body, such that M stays well conditioned.

    MuJoCo rejects a ball followed by a rotational joint in the same body ("ball
    followed by rotation"); more than 3 rotational or 3 translational dofs in one
    body make M singular. So: at most 3 rotational and 3 translational dofs, and
    after a ball only slides.
    """
    types: list[str] = []
    rot = trans = 0
    for _ in range(k):
        options = [t for t, ok in (("hinge", rot < 3 and "ball" not in types),
                                   ("slide", trans < 3),
                                   ("ball", rot == 0)) if ok]
        if not options:
            break
        t = dr.choice(options)
        types.append(t)
        rot += {"hinge": 1, "ball": 3}.get(t, 0)
        trans += t == "slide"
    return types


def _independent_axes(dr, k: int) -> list[list[float] | None]:
    """k joint axes whose unit vectors have smallest singular value >= 0.3 (well-conditioned M).

    A single axis may be None (the MJCF default, z). Falls back to the coordinate axes.
    """
    if k == 0:
        return []
    if k == 1:
        return [_direction(dr) if dr.boolean(0.7) else None]
    axes = [_direction(dr) for _ in range(k)]
    unit = np.array([np.asarray(a) / np.linalg.norm(a) for a in axes])
    if np.linalg.svd(unit, compute_uv=False)[-1] < 0.3:
        axes = [list(np.eye(3)[c]) for c in range(k)]
    return axes


def _solref(dr) -> str:
    """1 or 2 solref values: (timeconst, dampratio), sometimes the direct form (-stiffness, -damping)."""
    values = [dr.real(0.005, 0.1), dr.real(0.2, 2.0)]
    if dr.boolean(0.2):
        values = [-dr.real(100.0, 1e4), -dr.real(1.0, 100.0)]
    return _fmt(*values[:dr.integer(1, 2)])


def _solimp(dr) -> str:
    """1 to 5 solimp values: dmin, dmax, width, midpoint, power."""
    values = [dr.real(0.5, 0.9), dr.real(0.9, 0.999), dr.real(1e-4, 0.05), dr.real(0.1, 0.9),
              dr.real(1.0, 4.0)]
    return _fmt(*values[:dr.integer(1, 5)])


def _constraint_attrs(dr, attrs: dict) -> list[str]:
    """Random constraint attributes of a joint, a default class's joint or an equality.

    ``attrs`` maps each attribute to draw ("margin", "frictionloss", "solreflimit", ...) to
    its kind: "margin" or "friction" (a non-negative number), "solref" or "solimp".
    """
    out = []
    for attr, kind in attrs.items():
        if not dr.boolean(0.35):
            continue
        if kind == "solref":
            value = _solref(dr)
        elif kind == "solimp":
            value = _solimp(dr)
        else:
            value = _fmt(dr.real(0.0, 0.1 if kind == "margin" else 1.0))
        out.append(f'{attr}="{value}"')
    return out


_JOINT_CONSTRAINT_ATTRS = {"margin": "margin", "frictionloss": "friction", "solreflimit": "solref",
                           "solimplimit": "solimp", "solreffriction": "solref", "solimpfriction": "solimp"}


def _joint(dr, degree: bool, name: str, jtype: str, axis: list[float] | None,
           constraints: bool = False) -> _Joint:
    if jtype == "free":
        if dr.boolean(0.5):
            return _Joint(name, jtype, f'<freejoint name="{name}"/>')
        attrs = [f'name="{name}" type="free"']
        if dr.boolean(0.3):
            attrs.append(f'damping="{_fmt(dr.real(0.0, 2.0))}"')
        if dr.boolean(0.3):
            attrs.append(f'armature="{_fmt(dr.real(0.0, 0.5))}"')
        return _Joint(name, jtype, "<joint " + " ".join(attrs) + "/>")
    attrs = [f'name="{name}" type="{jtype}"']
    if dr.boolean(0.5):
        attrs.append(f'pos="{_fmt(*_vec(dr, 3, -0.3, 0.3))}"')
    if axis is not None:
        attrs.append(f'axis="{_fmt(*axis)}"')
    elif jtype == "ball" and dr.boolean(0.3):
        attrs.append(f'axis="{_fmt(*_direction(dr))}"')  # stored, unused by the kinematics
    linear = jtype == "slide"
    if dr.boolean(0.4):
        if jtype == "ball":
            attrs.append(f'range="0 {_fmt(_angle(dr, degree, 0.2, 3.0))}"')
        else:
            lo = dr.real(-1.0, -0.05) if linear else _angle(dr, degree, -3.0, -0.05)
            hi = dr.real(0.05, 1.0) if linear else _angle(dr, degree, 0.05, 3.0)
            attrs.append(f'range="{_fmt(lo, hi)}"')
        if dr.boolean(0.2):
            attrs.append(f'limited="{dr.choice(("true", "false"))}"')
    if dr.boolean(0.4):
        attrs.append(f'stiffness="{_fmt(dr.real(0.0, 20.0))}"')
    if dr.boolean(0.4):
        attrs.append(f'damping="{_fmt(dr.real(0.0, 2.0))}"')
    if dr.boolean(0.4):
        attrs.append(f'armature="{_fmt(dr.real(0.0, 0.5))}"')
    if jtype != "ball":
        unit = (lambda: dr.real(-0.5, 0.5)) if linear else (lambda: _angle(dr, degree, -1.0, 1.0))
        if dr.boolean(0.3):
            attrs.append(f'springref="{_fmt(unit())}"')
        if dr.boolean(0.3):
            attrs.append(f'ref="{_fmt(unit())}"')
    if constraints:
        attrs += _constraint_attrs(dr, _JOINT_CONSTRAINT_ATTRS)
    return _Joint(name, jtype, "<joint " + " ".join(attrs) + "/>")


def _solver_options(dr) -> str:
    """Random attributes (with a leading space) of <option> for the constraint solver."""
    out = ""
    for attr, value in (("solver", lambda: dr.choice(("PGS", "CG", "Newton"))),
                        ("cone", lambda: dr.choice(("pyramidal", "elliptic"))),
                        ("jacobian", lambda: dr.choice(("dense", "sparse", "auto"))),
                        ("iterations", lambda: dr.integer(0, 200)),
                        ("ls_iterations", lambda: dr.integer(0, 100)),
                        ("noslip_iterations", lambda: dr.integer(0, 10)),
                        ("tolerance", lambda: _fmt(dr.real(0.0, 1e-6))),
                        ("ls_tolerance", lambda: _fmt(dr.real(0.0, 0.1))),
                        ("noslip_tolerance", lambda: _fmt(dr.real(0.0, 1e-4))),
                        ("impratio", lambda: _fmt(dr.real(0.1, 10.0))),
                        ("o_margin", lambda: _fmt(dr.real(-0.1, 0.1))),
                        ("o_solref", lambda: _solref(dr)),
                        ("o_solimp", lambda: _solimp(dr)),
                        ("o_friction", lambda: _fmt(*_vec(dr, dr.integer(1, 5), 0.0, 1.0)))):
        if dr.boolean(0.3):
            out += f' {attr}="{value()}"'
    return out


def _equalities(dr, bodies: list[str], sites: list[str], scalar_joints: list[str]) -> list[str]:
    """0 to 4 random <equality> children over the named bodies, sites and hinge/slide joints."""
    kinds = ["connect", "weld"] + (["site connect", "site weld"] if len(sites) >= 2 else []) + (
        ["joint"] if scalar_joints else [])
    out = []
    for k in range(dr.integer(0, 4)):
        kind = dr.choice(kinds)
        attrs = []
        if kind in ("connect", "weld"):
            body1 = dr.choice(bodies)
            attrs.append(f'body1="{body1}"')
            others = [b for b in ["world", *bodies] if b != body1]
            if dr.boolean(0.7):
                attrs.append(f'body2="{dr.choice(others)}"')
            if kind == "connect" or dr.boolean(0.5):
                attrs.append(f'anchor="{_fmt(*_vec(dr, 3, -0.5, 0.5))}"')
            if kind == "weld" and dr.boolean(0.5):
                quat = _vec(dr, 4, -1.0, 1.0) if dr.boolean(0.7) else [0.0] * 4  # all zero: computed
                attrs.append(f'relpose="{_fmt(*_vec(dr, 3, -0.5, 0.5), *quat)}"')
        elif kind.startswith("site"):
            site1 = dr.choice(sites)
            attrs.append(f'site1="{site1}" site2="{dr.choice([s for s in sites if s != site1])}"')
            kind = kind.split()[1]
        else:
            joint1 = dr.choice(scalar_joints)
            attrs.append(f'joint1="{joint1}"')
            others = [j for j in scalar_joints if j != joint1]
            if others and dr.boolean(0.6):
                attrs.append(f'joint2="{dr.choice(others)}"')
            if dr.boolean(0.7):
                attrs.append(f'polycoef="{_fmt(*_vec(dr, dr.integer(1, 5), -1.0, 1.0))}"')
        if kind == "weld" and dr.boolean(0.3):
            attrs.append(f'torquescale="{_fmt(dr.real(0.0, 2.0))}"')
        if dr.boolean(0.3):
            attrs.append(f'name="e{k}"')
        if dr.boolean(0.2):
            attrs.append(f'active="{dr.choice(("true", "false"))}"')
        attrs += _constraint_attrs(dr, {"solref": "solref", "solimp": "solimp"})
        out.append(f'    <{kind} {" ".join(attrs)}/>')
    return out


def _build_mjcf(dr, max_bodies: int = MAX_BODIES, constraints: bool = False) -> str:
    degree = dr.boolean(0.3)
    compiler = f'<compiler angle="{"degree" if degree else "radian"}"'
    if dr.boolean(0.2):
        compiler += f' eulerseq="{dr.choice(_EULERSEQS)}"'
    compiler += "/>"

    option = f'<option timestep="{_fmt(dr.real(1e-4, 1e-2))}" integrator="{dr.choice(_INTEGRATORS)}"'
    if dr.boolean(0.8):
        option += f' gravity="{_fmt(*_vec(dr, 3, -10.0, 10.0))}"'
    if constraints:
        option += _solver_options(dr)
    option += f">{FLAG_XML}</option>"

    default = ""
    if dr.boolean(0.3):
        default = (f'<default><joint armature="{_fmt(dr.real(0.0, 0.2))}" '
                   f'damping="{_fmt(dr.real(0.0, 1.0))}"/>'
                   f'<geom density="{_fmt(dr.real(200.0, 2000.0))}"/></default>')
    if constraints and dr.boolean(0.5):
        joint = " ".join(_constraint_attrs(dr, _JOINT_CONSTRAINT_ATTRS))
        equality = " ".join(_constraint_attrs(dr, {"solref": "solref", "solimp": "solimp"}))
        if dr.boolean(0.2):
            equality += ' active="false"'
        # one <joint> per class: the constraint attributes join the armature and damping drawn above
        inner = default[len("<default>"):-len("</default>")].replace("<joint ", f"<joint {joint} ")
        if "<joint " not in inner:
            inner += f"<joint {joint}/>"
        default = f"<default>{inner}<equality {equality}/></default>"

    # topology: parent[i] in {-1 (world)} or an earlier body; bodies are 0..n-1 in creation order
    n = dr.integer(1, max_bodies)
    parent, depth = [], []
    for i in range(n):
        if i == 0:
            p = -1
        elif depth[i - 1] < MAX_DEPTH and dr.boolean(0.5):
            p = i - 1  # extend the chain
        else:
            p = dr.choice([-1] + [j for j in range(i) if depth[j] < MAX_DEPTH])
        parent.append(p)
        depth.append(1 if p < 0 else depth[p] + 1)
    children = {i: [j for j in range(n) if parent[j] == i] for i in range(-1, n)}

    # joints of each body
    joints: dict[int, list[_Joint]] = {}
    counter = iter(range(10_000))
    for i in range(n):
        if parent[i] < 0 and dr.boolean(0.25):
            joints[i] = [_joint(dr, degree, f"j{next(counter)}", "free", None)]
            continue
        types = _stack_types(dr, dr.choice((1, 1, 1, 0, 2, 3)))
        axes = {kind: _independent_axes(dr, sum(t == kind for t in types)) for kind in ("hinge", "slide")}
        js = []
        for jtype in types:
            axis = axes[jtype].pop(0) if jtype in axes else None
            js.append(_joint(dr, degree, f"j{next(counter)}", jtype, axis, constraints))
        joints[i] = js

    site_counter = iter(range(10_000))
    site_names: list[str] = []

    def site_xml(indent: str) -> str:
        site_names.append(f"s{next(site_counter)}")
        return indent + _site(dr, degree, site_names[-1])
    order: list[_Joint] = []  # joints in MuJoCo's order (depth-first, as written)

    def body_xml(i: int, indent: str) -> list[str]:
        lines = [f'{indent}<body name="b{i}"{_frame(dr, degree)}>']
        inner = indent + "  "
        for j in joints[i]:
            lines.append(inner + j.xml)
            order.append(j)
        has_inertial = dr.boolean(0.25)
        if has_inertial:
            lines.append(inner + _inertial(dr, degree))
        moving = bool(joints[i])
        ngeom = dr.integer(0, 2) if has_inertial else dr.integer(1 if moving else 0, 3)
        lines += [inner + _geom(dr, degree) for _ in range(ngeom)]
        if dr.boolean(0.4):
            lines += [site_xml(inner) for _ in range(dr.integer(1, 2))]
        for c in children[i]:
            lines += body_xml(c, inner)
        lines.append(f"{indent}</body>")
        return lines

    world = []
    if dr.boolean(0.2):
        world.append(site_xml("    "))
    for c in children[-1]:
        world += body_xml(c, "    ")

    # actuators on hinge and slide joints; position+timeconst adds one activation
    actuators, na = [], 0
    scalar = [j for j in order if j.type in ("hinge", "slide")]
    if scalar and dr.boolean(0.6):
        for a in range(dr.integer(1, min(4, len(scalar) + 1))):
            j = dr.choice(scalar)
            kind = dr.choice(("motor", "position", "velocity"))
            attrs = [f'name="a{a}" joint="{j.name}"']
            if dr.boolean(0.3):
                attrs.append(f'gear="{_fmt(dr.choice((-1, 1)) * dr.real(0.2, 3.0))}"')
            if dr.boolean(0.5):
                attrs.append(f'ctrlrange="{_fmt(dr.real(-2.0, -0.1), dr.real(0.1, 2.0))}"')
                if dr.boolean(0.15):
                    attrs.append('ctrllimited="false"')
            if dr.boolean(0.3):
                attrs.append(f'forcerange="{_fmt(dr.real(-50.0, -1.0), dr.real(1.0, 50.0))}"')
            if kind == "position":
                attrs.append(f'kp="{_fmt(dr.real(1.0, 100.0))}"')
                if dr.boolean(0.3):
                    attrs.append(f'kv="{_fmt(dr.real(0.0, 10.0))}"')
                if dr.boolean(0.15):
                    attrs.append(f'timeconst="{_fmt(dr.real(0.005, 0.2))}"')
                    na += 1
            elif kind == "velocity":
                attrs.append(f'kv="{_fmt(dr.real(0.1, 10.0))}"')
            actuators.append(f'    <{kind} {" ".join(attrs)}/>')

    keyframe = []
    if dr.boolean(0.2):
        qpos: list[float] = []
        for j in order:
            if j.type in ("hinge", "slide"):
                qpos.append(dr.real(-1.0, 1.0))
            else:
                q = np.array(_vec(dr, 4, -1.0, 1.0))
                q = q / np.linalg.norm(q) if np.linalg.norm(q) >= 0.1 else np.array([1.0, 0, 0, 0])
                qpos += ([*_vec(dr, 3, -1.0, 1.0)] if j.type == "free" else []) + list(q)
        nv = sum(j.nv for j in order)
        key = [f'time="{_fmt(dr.real(0.0, 1.0))}"']
        if qpos:
            key.append(f'qpos="{_fmt(*qpos)}"')
        if nv:
            key.append(f'qvel="{_fmt(*_vec(dr, nv, -1.0, 1.0))}"')
        if actuators:
            key.append(f'ctrl="{_fmt(*_vec(dr, len(actuators), -0.5, 0.5))}"')
        if na:
            key.append(f'act="{_fmt(*_vec(dr, na, -0.5, 0.5))}"')
        keyframe = ["  <keyframe>", f'    <key name="k0" {" ".join(key)}/>', "  </keyframe>"]

    lines = ['<mujoco model="random">', "  " + compiler, "  " + option]
    if default:
        lines.append("  " + default)
    lines += ["  <worldbody>", *world, "  </worldbody>"]
    if constraints:
        equalities = _equalities(dr, [f"b{i}" for i in range(n)], site_names, [j.name for j in scalar])
        if equalities:
            lines += ["  <equality>", *equalities, "  </equality>"]
    if actuators:
        lines += ["  <actuator>", *actuators, "  </actuator>"]
    lines += keyframe + ["</mujoco>", ""]
    return "\n".join(lines)


@st.composite
def random_mjcf(draw, max_bodies: int = MAX_BODIES, constraints: bool = False) -> str:
    """Hypothesis strategy: MJCF text of a random kinematic tree (see the module docstring)."""
    return _build_mjcf(_HypothesisDraw(draw), max_bodies, constraints)


def random_mjcf_text(seed: int, max_bodies: int = MAX_BODIES, constraints: bool = False) -> str:
    """MJCF text of a random kinematic tree, a pure function of ``seed`` (NumPy's PCG64)."""
    return _build_mjcf(_NumpyDraw(np.random.default_rng(seed)), max_bodies, constraints)


# ---- states -------------------------------------------------------------------------------------


def _random_quat(rng: np.random.Generator, max_angle: float | None = None) -> np.ndarray:
    """Unit quaternion (w, x, y, z): uniform on SO(3), or rotation angle <= max_angle."""
    if max_angle is None:
        q = rng.normal(size=4)
        return q / np.linalg.norm(q)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.0, max_angle)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def random_state(rng: np.random.Generator, mjmodel) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random (qpos, qvel, ctrl, act) for ``mjmodel`` (a mujoco.MjModel or a kinedyn.Model).

    * qpos: limited hinge/slide joints uniform within jnt_range; unlimited hinges in
      [-pi, pi], slides in [-1, 1]; ball joints a unit quaternion (rotation angle within
      range[1] when limited); free joints a position in [-1, 1]^3 and a unit quaternion.
    * qvel: standard normal.
    * ctrl: uniform within ctrlrange when ctrllimited; muscles in [0, 1]; else normal.
    * act: uniform within actrange when actlimited; muscles in [0, 1]; else normal.
    """
    m = mjmodel
    qpos = np.zeros(m.nq)
    for j in range(m.njnt):
        adr, jtype = int(m.jnt_qposadr[j]), int(m.jnt_type[j])
        limited = bool(m.jnt_limited[j])
        lo, hi = (float(v) for v in m.jnt_range[j])
        if jtype == _FREE:
            qpos[adr:adr + 3] = rng.uniform(-1.0, 1.0, size=3)
            qpos[adr + 3:adr + 7] = _random_quat(rng)
        elif jtype == _BALL:
            qpos[adr:adr + 4] = _random_quat(rng, hi if limited and hi > 0 else None)
        elif limited and hi > lo:
            qpos[adr] = rng.uniform(lo, hi)
        elif jtype == _HINGE:
            qpos[adr] = rng.uniform(-math.pi, math.pi)
        else:
            qpos[adr] = rng.uniform(-1.0, 1.0)
    qvel = rng.normal(size=m.nv)

    ctrl = np.zeros(m.nu)
    act = np.zeros(m.na)
    for i in range(m.nu):
        muscle = int(m.actuator_dyntype[i]) == _DYN_MUSCLE
        lo, hi = (float(v) for v in m.actuator_ctrlrange[i])
        if bool(m.actuator_ctrllimited[i]) and hi > lo:
            ctrl[i] = rng.uniform(lo, hi)
        elif muscle:
            ctrl[i] = rng.uniform(0.0, 1.0)
        else:
            ctrl[i] = rng.normal()
        adr, num = int(m.actuator_actadr[i]), int(m.actuator_actnum[i])
        if adr < 0:
            continue
        lo, hi = (float(v) for v in m.actuator_actrange[i])
        for k in range(adr, adr + num):
            if bool(m.actuator_actlimited[i]) and hi > lo:
                act[k] = rng.uniform(lo, hi)
            elif muscle:
                act[k] = rng.uniform(0.0, 1.0)
            else:
                act[k] = rng.normal()
    return qpos, qvel, ctrl, act
