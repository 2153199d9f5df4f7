"""MuJoCo as the oracle: load a model in both libraries, set one state, compare every field.

The comparison walks the field registry (:data:`kinedyn.engine.fields.MODEL_FIELDS`,
:data:`kinedyn.engine.fields.DATA_FIELDS`), so a field added there is compared
automatically and cannot silently go untested.

Tolerance: kinedyn runs MuJoCo's float64 algorithms, so a value
matches when, elementwise,

    |ours - mujoco| <= ATOL + RTOL * max(|ours|, |mujoco|),   RTOL = 1e-9, ATOL = 1e-12

The relative term is symmetric (neither side is privileged) and the absolute floor
covers entries that are zero up to round-off (an off-axis component that is 1e-17
in one library and -3e-18 in the other). Identical values (including equal
infinities and NaN in both) always match. Integer and boolean fields must be equal.

Usage::

    m, d, mjm, mjd = load_pair(xml)
    set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
    kd.forward(m, d); mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)                 # every stage; or stage="position"
"""

from __future__ import annotations

import copy
import ctypes
import importlib.util
import os
import re
from collections.abc import Iterable
from pathlib import Path

import mujoco
import numpy as np

from kinedyn.engine.fields import (
    DATA_FIELD,
    DATA_FIELDS,
    KINEDYN_SIZES,
    MODEL_FIELD,
    MODEL_FIELDS,
    SIZE_NAMES,
)

# kinedyn's contract: match MuJoCo to 1e-9 relative with a 1e-12 absolute floor (same float64 algorithm).
RTOL, ATOL = 1e-9, 1e-12

# Fields whose entries are sums of forces that cancel: mj_rnePostConstraint's cfrc_int of the
# world and of a tree's floating root (the net force through a free joint is zero up to the
# round-off of the forces summed into it). At the default bar each entry of these fields also
# passes within CANCEL_FLOOR[name] x the field's largest MuJoCo entry (per state). Measured in
# session 10 (docs/corpus.md "cfrc_int"): nudging qpos and qvel of ten corpus models by one ulp
# moves MuJoCo 4.0's own cfrc_int entries there by up to 3.3e-13 of that largest entry
# (dmc-manipulator; 3e-15..7e-14 on the others), failing the elementwise bar against itself on
# the very entries kinedyn failed; kinedyn's differences were at most 4e-14 of it. 1e-12 is
# three times MuJoCo's own worst move and three orders below the 1e-9 relative bar.
CANCEL_FLOOR = {"cfrc_int": 1e-12}

# Data stages that hold inputs or temporaries rather than computed results
UNCOMPARED_STAGES = ("state", "scratch")

FLAG_XML = '<flag constraint="disable" contact="disable"/>'
DISABLE_BITS = int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT) | int(mujoco.mjtDisableBit.mjDSBL_CONTACT)

OPTION_FIELDS = ("timestep", "gravity", "integrator", "disableflags", "enableflags", "solver", "cone",
                 "jacobian", "iterations", "ls_iterations", "noslip_iterations", "impratio", "tolerance",
                 "ls_tolerance", "noslip_tolerance", "o_margin", "o_solref", "o_solimp", "o_friction",
                 "ccd_iterations", "ccd_tolerance", "magnetic")


# ---- locating models ----------------------------------------------------------------------------


MODELS_DIR = Path(__file__).resolve().parent / "models"


def model_file(name: str) -> Path:
    """Path of the test model ``tests/models/<name>.xml`` (``name`` with or without ``.xml``)."""
    path = MODELS_DIR / (name if name.endswith(".xml") else name + ".xml")
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(MODELS_DIR.glob("*.xml")))
        raise FileNotFoundError(f"no test model {path.name} in {MODELS_DIR}; known: {known}")
    return path


def extra_models_dir() -> Path | None:
    """An optional extra corpus of models: ``$KINEDYN_SHARED`` (a ``shared`` directory or its
    ``models``), else the first ``shared/models`` beside or above the repository; None if absent
    or if ``$KINEDYN_SHARED`` is ``off`` (as in a bare clone; tests/test_bare_clone.py runs so).

    Nothing requires it: the test models live in ``tests/models``.
    """
    env = os.environ.get("KINEDYN_SHARED")
    if env == "off":
        return None
    if env:
        p = Path(env).expanduser().resolve()
        if (p / "models").is_dir():
            return p / "models"
        if p.name == "models" and p.is_dir():
            return p
        raise FileNotFoundError(f"KINEDYN_SHARED={env} has no models/ directory")
    repo = Path(__file__).resolve().parents[1]
    for base in (repo, *repo.parents):
        if (base / "shared" / "models").is_dir():
            return base / "shared" / "models"
    return None


def model_paths() -> list[Path]:
    """Every ``tests/models/*.xml`` sorted by name, then the extra corpus's models
    (:func:`extra_models_dir`, sorted) whose stem is not already among them."""
    paths = sorted(MODELS_DIR.glob("*.xml"))
    if not paths:
        raise FileNotFoundError(f"{MODELS_DIR} holds no .xml models")
    extra = extra_models_dir()
    if extra is not None:
        stems = {p.stem for p in paths}
        paths += [p for p in sorted(extra.glob("*.xml")) if p.stem not in stems]
    return paths


# Models kinedyn refuses on purpose, by file stem -> regex its ModelError must match. A model
# listed here is expected to fail to compile (tests/test_compiler.py checks the message); every
# other model must compile, so a refusal that is not listed fails the tests that load it.
REFUSED_MODELS: dict[str, str] = {}


def gym_model_path(name: str) -> Path:
    """Path of one of gymnasium's bundled MuJoCo models (``"humanoid"`` or ``"humanoid.xml"``).

    gymnasium is a test extra: the calling test is skipped when it is not installed.
    """
    import pytest

    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gymnasium is not installed (pip install -e '.[test]')")
    assets = Path(next(iter(spec.submodule_search_locations))) / "envs" / "mujoco" / "assets"
    path = assets / (name if name.endswith(".xml") else name + ".xml")
    if not path.is_file():
        known = sorted(p.name for p in assets.glob("*.xml")) if assets.is_dir() else []
        raise FileNotFoundError(f"gymnasium has no model {path.name}; known: {', '.join(known)}")
    return path


# ---- loading ------------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>", re.S)
_ATTRS = r"""(?:[^>"']|"[^"]*"|'[^']*')*?"""  # a tag's attributes, '>' allowed inside quotes
_OPTION_OPEN = re.compile(rf"<option\b({_ATTRS})(/?)>")
_OPTION_CLOSE = re.compile(r"</option\s*>")
_FLAG_OPEN = re.compile(rf"<flag\b({_ATTRS})(/?)>")
_MUJOCO_OPEN = re.compile(rf"<mujoco\b{_ATTRS}(?<!/)>")
def _flag_attr(flags: tuple[str, ...]) -> re.Pattern:
    return re.compile(r"\s+(?:" + "|".join(flags) + r""")\s*=\s*(?:"[^"]*"|'[^']*')""")


def disable_contacts(xml_text: str) -> str:
    """``xml_text`` with ``<flag contact="disable"/>`` merged in (as :func:`disable_constraints`):
    limits, friction loss and equality constraints stay, collisions are off."""
    return disable_constraints(xml_text, flags=("contact",))


def disable_constraints(xml_text: str, flags: tuple[str, ...] = ("constraint", "contact")) -> str:
    """``xml_text`` with ``<flag constraint="disable" contact="disable"/>`` merged into its options.

    The text is edited in place (comments, layout and line numbers of everything else
    are kept). Each ``<option>`` element gets the flags: a self-closing ``<option .../>``
    gains a ``<flag>`` child, an existing ``<flag>`` has its ``constraint`` and
    ``contact`` attributes replaced, and a model without ``<option>`` gets one right
    after ``<mujoco>``. MuJoCo compiles the result to the model it compiles from the
    original with ``opt.disableflags |= mjDSBL_CONSTRAINT | mjDSBL_CONTACT``.
    """
    flag_xml = "<flag " + " ".join(f'{f}="disable"' for f in flags) + "/>"
    flag_attr = _flag_attr(flags)
    # search a copy in which comments are blanked out, so '<option' in a comment is ignored
    masked = _COMMENT.sub(lambda mt: " " * len(mt.group()), xml_text)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the original text
    for opt in _OPTION_OPEN.finditer(masked):
        if opt.group(2):  # <option .../>
            edits.append((opt.start(), opt.end(), f"<option{opt.group(1)}>{flag_xml}</option>"))
            continue
        close = _OPTION_CLOSE.search(masked, opt.end())
        if close is None:
            raise ValueError(f"<option> at offset {opt.start()} is never closed")
        flag = _FLAG_OPEN.search(masked, opt.end(), close.start())
        if flag is None:
            edits.append((opt.end(), opt.end(), flag_xml))
        else:
            attrs = flag_attr.sub("", xml_text[flag.start(1):flag.end(1)]).rstrip()
            merged = flag_xml[:5] + attrs + flag_xml[5:-2] + flag.group(2) + ">"
            edits.append((flag.start(), flag.end(), merged))
    if not edits:
        root = _MUJOCO_OPEN.search(masked)
        if root is None:
            raise ValueError("no <mujoco> element in the XML text")
        edits.append((root.end(), root.end(), f"<option>{flag_xml}</option>"))
    out = xml_text
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return out


def two_free_bodies_pose(rng, qpos0: np.ndarray) -> np.ndarray:
    """qpos0 with the first two free joints at random: positions N(0, 0.08) and, with even odds, a
    uniformly random orientation or one near the identity (faces nearly aligned)."""
    q = qpos0.copy()
    for j in range(2):
        q[7 * j:7 * j + 3] = rng.normal(size=3) * 0.08
        quat = rng.normal(size=4) if rng.uniform() < 0.5 else np.array([1.0, *rng.normal(size=3) * 0.02])
        q[7 * j + 3:7 * j + 7] = quat / np.linalg.norm(quat)
    return q


def load_pair(xml, disable: bool | str = True):
    """Compile the same MJCF in kinedyn and MuJoCo: ``(m, d, mjm, mjd)``.

    ``xml`` is MJCF text or a path to an MJCF file. With ``disable`` (the default) the
    constraint and contact flags are merged in first (:func:`disable_constraints`): the
    smooth pipeline alone; ``disable="contact"`` merges only the contact flag, keeping limits,
    friction loss and equality constraints; ``disable=False`` compiles the text as it is.
    """
    import kinedyn as kd

    text = Path(xml).read_text() if isinstance(xml, os.PathLike) else xml
    if disable == "contact":
        text = disable_contacts(text)
    elif disable:
        text = disable_constraints(text)
    mjm = mujoco.MjModel.from_xml_string(text)
    mjd = mujoco.MjData(mjm)
    m = kd.Model.from_xml_string(text)
    d = kd.Data(m)
    return m, d, mjm, mjd


def random_controls(nu: int, steps: int, seed: int = 0) -> np.ndarray:
    """(steps, nu) controls drawn from N(0, 1): a rollout's inputs."""
    return np.random.default_rng(seed).normal(size=(steps, nu))


def own_pair(pair, integrator=None, enableflags=0):
    """Copies of a shared (module-scoped) pair ``(m, d, mjm, mjd)`` with fresh Data, the integrator
    (an IntegratorType name, e.g. "rk4") set and ``enableflags`` added on both sides: a test changes
    its own models, never the shared ones."""
    import kinedyn as kd

    m, mjm = pair[0].copy(), copy.deepcopy(pair[2])
    if integrator is not None:
        m.opt.integrator = kd.IntegratorType[integrator.upper()]
        mjm.opt.integrator = int(m.opt.integrator)
    m.opt.enableflags = m.opt.enableflags | enableflags
    mjm.opt.enableflags |= int(enableflags)
    return m, kd.Data(m), mjm, mujoco.MjData(mjm)


def set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl=None, act=None, qacc=None,
                   qfrc_applied=None, xfrc_applied=None, time=None):
    """Write one state into kinedyn's ``d`` and MuJoCo's ``mjd``.

    ``qpos`` and ``qvel`` are required. ``ctrl``, ``act``, ``qfrc_applied`` and
    ``xfrc_applied`` default to zero, so both sides hold exactly the same inputs
    afterwards; ``qacc`` (the input of inverse dynamics) and ``time`` are written only
    when given.
    """
    values = {
        "qpos": qpos, "qvel": qvel,
        "ctrl": np.zeros(mjm.nu) if ctrl is None else ctrl,
        "act": np.zeros(mjm.na) if act is None else act,
        "qfrc_applied": np.zeros(mjm.nv) if qfrc_applied is None else qfrc_applied,
        "xfrc_applied": np.zeros((mjm.nbody, 6)) if xfrc_applied is None else xfrc_applied,
    }
    if qacc is not None:
        values["qacc"] = qacc
    for name, given in values.items():
        value = np.asarray(given, dtype=np.float64)
        ours, theirs = getattr(d, name), getattr(mjd, name)
        if value.shape != ours.shape or value.size != theirs.size:
            raise ValueError(f"{name}: got shape {value.shape}, kinedyn has {ours.shape}, "
                             f"mujoco has {theirs.shape}")
        ours[...] = value
        theirs[...] = value.reshape(theirs.shape)
    if time is not None:
        d.time = float(time)
        mjd.time = float(time)


def simulated_states(mjm, mjd, count: int = 6, steps: int = 40, seed: int = 0, qvel_scale: float = 0.5,
                     ctrl=None, fields=("qpos", "qvel", "act", "ctrl", "qacc_warmstart")) -> list[dict]:
    """States MuJoCo's own simulation visits: from qpos0 with random velocities (normal, scale
    ``qvel_scale``), ``steps`` steps between samples under controls drawn uniform in [-1, 1]
    (or ``ctrl(k)`` for sample k). Each state holds ``fields`` and ``time``; for contacts, the
    states a simulation reaches are the ones worth comparing (touching, sliding, resting)."""
    rng = np.random.default_rng(seed)
    mujoco.mj_resetData(mjm, mjd)
    mjd.qvel[:] = rng.normal(scale=qvel_scale, size=mjm.nv)
    out = []
    for k in range(count):
        mjd.ctrl[:] = rng.uniform(-1, 1, size=mjm.nu) if ctrl is None else ctrl(k)
        for _ in range(steps):
            mujoco.mj_step(mjm, mjd)
        out.append({f: np.array(getattr(mjd, f)) for f in fields} | {"time": mjd.time})
    return out


def set_simulated_state(d, mjd, state: dict) -> None:
    """Write one of :func:`simulated_states` into both engines' Data."""
    for f, v in state.items():
        if f == "time":
            d.time = mjd.time = v
        else:
            getattr(d, f)[...] = v
            getattr(mjd, f)[...] = v


# ---- reading MuJoCo -----------------------------------------------------------------------------


def mujoco_value(mjm_or_mjd, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """MuJoCo's value of field ``name`` as a fresh array of kinedyn's (natural) ``shape``.

    * row-major flat fields are reshaped: ``xmat (nbody, 9)`` -> ``(nbody, 3, 3)``;
    * ``actuator_moment``: MuJoCo 4.0 stores it sparse (``moment_rownnz``,
      ``moment_rowadr``, ``moment_colind`` in mjData); densified to ``(nu, nv)``;
    * ``ten_J``: sparse too, with its pattern on mjModel (``ten_J_rownnz``,
      ``ten_J_rowadr``, ``ten_J_colind``, read through ``mjd.model``); densified to
      ``(ntendon, nv)``;
    * ``M`` and ``qLD`` are CSR of size nC in both libraries (``M_rowadr``,
      ``M_colind``), so they are compared as stored;
    * ``efc_J`` is densified to ``(nefc, nv)`` when MuJoCo made it sparse (``jacobian``
      sparse, or auto with nv >= 60); the other efc arrays hold nefc rows in both.
    """
    obj = mjm_or_mjd
    if name.startswith("contact_"):
        value = np.array([getattr(c, name[len("contact_"):]) for c in obj.contact[:shape[0]]]) \
            if shape[0] else np.zeros(shape)
        return value.reshape(shape)
    if name == "efc_J" and obj.model.opt.jacobian != 0 and not (
            obj.model.opt.jacobian == 2 and obj.model.nv < 60):
        dense = np.zeros(shape)
        if dense.size:
            mujoco.mju_sparse2dense(dense, np.asarray(obj.efc_J, dtype=np.float64),
                                    np.asarray(obj.efc_J_rownnz, dtype=np.int32),
                                    np.asarray(obj.efc_J_rowadr, dtype=np.int32),
                                    np.asarray(obj.efc_J_colind, dtype=np.int32))
        return dense
    if name == "actuator_moment":
        dense = np.zeros(shape)
        if dense.size:
            mujoco.mju_sparse2dense(dense, np.asarray(obj.actuator_moment, dtype=np.float64),
                                    np.asarray(obj.moment_rownnz, dtype=np.int32),
                                    np.asarray(obj.moment_rowadr, dtype=np.int32),
                                    np.asarray(obj.moment_colind, dtype=np.int32))
        return dense
    if name == "ten_J":
        # MuJoCo 4.0 stores ten_J sparse, with its pattern on mjModel (ten_J_rownnz, _rowadr, _colind)
        dense = np.zeros(shape)
        if dense.size:
            mjm = obj.model
            mujoco.mju_sparse2dense(dense, np.asarray(obj.ten_J, dtype=np.float64),
                                    np.asarray(mjm.ten_J_rownnz, dtype=np.int32),
                                    np.asarray(mjm.ten_J_rowadr, dtype=np.int32),
                                    np.asarray(mjm.ten_J_colind, dtype=np.int32))
        return dense
    value = np.array(getattr(obj, name))
    if value.size != int(np.prod(shape)):
        raise ValueError(f"mujoco {name} has {value.size} elements {value.shape}, expected shape {shape}")
    return value.reshape(shape)


def _sizes(m) -> dict[str, int]:
    # kinedyn's own sizes (row capacity) are absent from an MjModel; 0 until a Data says more
    # (an MjModel's legacy nconmax is -1: unbounded)
    return {s: max(0, int(getattr(m, s, 0))) if s in KINEDYN_SIZES else int(getattr(m, s))
            for s in SIZE_NAMES}


# ---- comparing ----------------------------------------------------------------------------------


def compare(name: str, ours, theirs, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None if ``ours`` matches MuJoCo's ``theirs``; else a one-line report.

    The report names the field, the max absolute and relative error, the worst index
    (largest error relative to its tolerance) and both values there.
    """
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} (kinedyn) vs {b.shape} (mujoco)"
    if a.size == 0:
        return None
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(b.dtype, np.floating)):
        a, b = a.astype(np.int64), b.astype(np.int64)
        bad = a != b
        if not bad.any():
            return None
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"{name}: {int(bad.sum())}/{a.size} integer entries differ; first at {idx}: "
                f"kinedyn {a[idx]} vs mujoco {b[idx]}")
    a, b = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        err = np.where(same, 0.0, np.abs(a - b))
        err = np.where(np.isnan(err), np.inf, err)  # NaN on one side only, or inf vs -inf
        scale = np.maximum(np.abs(a), np.abs(b))
        tol = atol + rtol * np.where(np.isfinite(scale), scale, 0.0)
        bad = err > tol
    if not bad.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, err / scale)
        rel = np.where(np.isnan(rel), np.inf, rel)
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(err / tol), a.shape))
    return (f"{name}: max abs err {err.max():.3g}, max rel err {rel.max():.3g}, "
            f"{int(bad.sum())}/{a.size} out of tolerance (rtol {rtol:g}, atol {atol:g}); "
            f"worst at {idx}: kinedyn {a[idx]!r} vs mujoco {b[idx]!r}")


def assert_close(name: str, ours, theirs, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Assert one array matches MuJoCo's (``jac_site`` vs ``mj_jacSite``), with :func:`compare`'s report."""
    report = compare(name, ours, theirs, rtol, atol)
    if report is not None:
        raise AssertionError(report)


# path point fields: only the first sum(ten_wrapnum) points are written by a forward pass;
# MuJoCo leaves the rest as an earlier, longer path left them (mj_tendon never clears them)
_WRAP_POINTS = {"wrap_xpos": 3, "wrap_obj": 1}


def live_part(name: str, ours, theirs, d, mjd):
    """``ours`` and ``theirs`` cut to the part a forward pass writes: for the spatial tendons'
    path points (wrap_xpos, wrap_obj) the points either engine used, as flat rows; other
    fields unchanged. The unused rows keep whatever an earlier state left, which depends on
    each Data's history, not on the state compared."""
    width = _WRAP_POINTS.get(name)
    if width is None:
        return ours, theirs
    live = max(int(np.sum(d.ten_wrapnum)), int(np.sum(mjd.ten_wrapnum)))
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.size != b.size:
        return a, b
    return a.reshape(-1, width)[:live], b.reshape(-1, width)[:live]


def _select(registry, table, stage, names, skip, default_ok) -> list:
    if names is not None:
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in table]
        if unknown:
            raise KeyError(f"not in the field registry: {', '.join(unknown)}")
        chosen = [table[n] for n in names]
        not_mujoco = [s.name for s in chosen if not s.mujoco]
        if not_mujoco:
            raise ValueError(f"MuJoCo has no counterpart of: {', '.join(not_mujoco)}")
    else:
        chosen = [s for s in registry if s.mujoco and default_ok(s)]
    if stage is not None:
        stages = {stage} if isinstance(stage, str) else set(stage)
        known = {s.stage for s in registry}
        if stages - known:
            raise ValueError(f"unknown stage(s) {sorted(stages - known)}; known: {sorted(known)}")
        chosen = [s for s in chosen if s.stage in stages]
    skip = {skip} if isinstance(skip, str) else set(skip)
    return [s for s in chosen if s.name not in skip]


def _raise(kind: str, reports: list[str]) -> None:
    if reports:
        raise AssertionError(f"{len(reports)} {kind} field(s) differ from MuJoCo:\n  " + "\n  ".join(reports))


def _field_atol(name: str, theirs, rtol: float, atol: float) -> float:
    """The absolute floor for field ``name``: ``atol``, or for a CANCEL_FLOOR field at the
    default bar, at least its fraction of the field's largest finite MuJoCo entry."""
    if name not in CANCEL_FLOOR or (rtol, atol) != (RTOL, ATOL):
        return atol
    b = np.asarray(theirs, dtype=np.float64)
    b = b[np.isfinite(b)]
    return max(atol, CANCEL_FLOOR[name] * float(np.abs(b).max(initial=0.0)))


def assert_fields(m, d, mjm, mjd, stage: str | Iterable[str] | None = None,
                  names: str | Iterable[str] | None = None, rtol: float = RTOL, atol: float = ATOL,
                  skip: str | Iterable[str] = ()) -> list[str]:
    """Compare kinedyn's ``d`` with MuJoCo's ``mjd`` field by field; return the names compared.

    By default every Data field with ``mujoco=True`` except the "state" and "scratch"
    stages; ``stage`` (one or several) narrows to those stages, ``names`` picks fields
    explicitly (state fields allowed, e.g. ``qpos`` after ``step``), ``skip`` drops
    some. All mismatches are reported in one AssertionError, one line per field.
    """
    specs = _select(DATA_FIELDS, DATA_FIELD, stage, names, skip,
                    lambda s: s.stage not in UNCOMPARED_STAGES)
    sizes = _sizes(m)
    for count in ("ne", "nf", "nl", "nefc", "ncon"):
        if getattr(d, count) != getattr(mjd, count):
            _raise("Data", [f"{count}: {getattr(d, count)} (kinedyn) vs {getattr(mjd, count)} (mujoco)"])
    sizes["nefcmax"] = d.nefc  # row and contact fields show the live part
    sizes["nconmax"] = d.ncon
    reports = []
    for spec in specs:
        shape = spec.resolve(sizes)
        try:
            theirs = mujoco_value(mjd, spec.name, shape)
        except ValueError as err:
            reports.append(str(err))
            continue
        ours, theirs = live_part(spec.name, getattr(d, spec.name), theirs, d, mjd)
        report = compare(spec.name, ours, theirs, rtol, _field_atol(spec.name, theirs, rtol, atol))
        if report is not None:
            reports.append(report)
    _raise("Data", reports)
    return [s.name for s in specs]


def assert_model_fields(m, mjm, names: str | Iterable[str] | None = None, rtol: float = RTOL,
                        atol: float = ATOL, skip: str | Iterable[str] = ()) -> list[str]:
    """Compare kinedyn's Model ``m`` with MuJoCo's ``mjm``; return the names compared.

    Checks the sizes (:data:`SIZE_NAMES`) and the options (:data:`OPTION_FIELDS`:
    ``opt.timestep``, ``opt.gravity``, ..., the constraint solver's options) unless
    ``names`` is given, then every Model field with ``mujoco=True``. Any of
    these names can be in ``skip``.
    """
    skip = {skip} if isinstance(skip, str) else set(skip)
    reports = []
    compared = []
    if names is None:
        for s in SIZE_NAMES:
            if s not in skip and s not in KINEDYN_SIZES:
                compared.append(s)
                if int(getattr(m, s)) != int(getattr(mjm, s)):
                    reports.append(f"{s}: {getattr(m, s)} (kinedyn) vs {getattr(mjm, s)} (mujoco)")
        for o in OPTION_FIELDS:
            if f"opt.{o}" not in skip:
                compared.append(f"opt.{o}")
                report = compare(f"opt.{o}", getattr(m.opt, o), getattr(mjm.opt, o), rtol, atol)
                if report is not None:
                    reports.append(report)
    specs = _select(MODEL_FIELDS, MODEL_FIELD, None, names, skip, lambda s: True)
    sizes = _sizes(m)
    for spec in specs:
        shape = spec.resolve(sizes)
        try:
            theirs = mujoco_value(mjm, spec.name, shape)
            # a MuJoCo model on the left too (the oracle's self-checks): its fields in our shapes
            mine = isinstance(m, mujoco.MjModel)
            ours = mujoco_value(m, spec.name, shape) if mine else getattr(m, spec.name)
        except ValueError as err:
            reports.append(str(err))
            continue
        report = compare(spec.name, ours, theirs, rtol, atol)
        if report is not None:
            reports.append(report)
    _raise("Model", reports)
    return compared + [s.name for s in specs]


# ---- factorisation round-off ---------------------------------------------------------------------

FACTOR_FIELDS = ("qLD", "qLDiagInv")


def factor_mismatch_explained(m, d, mjd) -> str | None:
    """If qLD/qLDiagInv miss the bar only because M carries different round-off, a report; else None.

    Explained means: kinedyn's factor_m applied to *MuJoCo's* M gives MuJoCo's qLD and
    qLDiagInv bit for bit (M itself is compared at the oracle's bar separately), so the
    difference is M's last-bit rounding amplified by cancellation in L^T D L
    (docs/deviations.md).
    """
    import kinedyn as kd

    check = d.copy()
    check.M[:] = mjd.M
    kd.factor_m(m, check)
    if not (np.array_equal(check.qLD, mjd.qLD) and np.array_equal(check.qLDiagInv, mjd.qLDiagInv)):
        return None
    err = np.abs(d.qLD - mjd.qLD)
    i = int(np.argmax(err))
    return (f"qLD[{i}] = {d.qLD[i]!r} vs mujoco {mjd.qLD[i]!r}: factor_m of MuJoCo's M is bit-identical "
            f"to MuJoCo's qLD, so the difference is M's round-off amplified by the factorisation")


def assert_factorisation(m, d, mjd) -> str | None:
    """qLD and qLDiagInv at the oracle's bar, or explained by M's round-off; returns the explanation."""
    reports = [r for name in FACTOR_FIELDS if (r := compare(name, getattr(d, name), getattr(mjd, name)))]
    if not reports:
        return None
    explained = factor_mismatch_explained(m, d, mjd)
    if explained is None:
        raise AssertionError("; ".join(reports))
    return explained


def assert_forward_matches(m, d, mjm, mjd, rng, nstate: int) -> None:
    """kd.forward vs mj_forward on ``nstate`` random states (strategies.random_state): every field."""
    from strategies import random_state

    import kinedyn as kd

    for _ in range(nstate):
        qpos, qvel, ctrl, act = random_state(rng, mjm)
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        assert_fields(m, d, mjm, mjd)


def libmujoco(*names: str) -> ctypes.CDLL:
    """The installed wheel's libmujoco for the functions ``names`` it exports but the Python
    bindings do not (called through ctypes to compare kinedyn with MuJoCo's own routine); skips
    the test when the library or one of the functions is missing."""
    import pytest

    library = next(Path(mujoco.__file__).parent.glob("libmujoco.so*"), None)
    if library is None:
        pytest.skip("no libmujoco shared library beside the bindings")
    lib = ctypes.CDLL(str(library))
    missing = [name for name in names if not hasattr(lib, name)]
    if missing:
        pytest.skip(f"libmujoco does not export {', '.join(missing)}")
    return lib


def assert_forward_and_inverse(m, d, mjm, mjd, qacc) -> None:
    """forward at the two Data's (equal) state against mj_forward, every field; then the inverse
    at ``qacc`` against mj_inverse (qfrc_inverse)."""
    import kinedyn as kd

    kd.forward(m, d)
    mujoco.mj_forward(mjm, mjd)
    assert_fields(m, d, mjm, mjd)
    d.qacc[:] = mjd.qacc[:] = qacc
    kd.inverse(m, d)
    mujoco.mj_inverse(mjm, mjd)
    assert_close("qfrc_inverse", d.qfrc_inverse, mjd.qfrc_inverse)


def assert_rollout_matches(m, mjm, state0, control) -> None:
    """``kd.batch.rollout`` from the states ``state0`` (nbatch, mjSTATE_FULLPHYSICS) with
    ``control`` (nbatch, nstep, nu) against ``mujoco.rollout``: every state of every step."""
    from mujoco import rollout as mj_rollout

    import kinedyn as kd

    ours = kd.batch.rollout(m, state0, control, nthread=2)
    theirs, _ = mj_rollout.rollout(mjm, [mujoco.MjData(mjm) for _ in range(len(state0))], state0, control)
    assert_close("rollout state", ours.state, theirs)


def mujoco_states(mjm, mjd, warmups) -> np.ndarray:
    """(len(warmups), mjSTATE_FULLPHYSICS) states MuJoCo reaches from its reset state by stepping
    each warm-up's controls in turn (each continuing from the last)."""
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    mujoco.mj_resetData(mjm, mjd)
    states = np.empty((len(warmups), mujoco.mj_stateSize(mjm, full)))
    for i, controls in enumerate(warmups):
        for u in controls:
            mjd.ctrl[:] = u
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_getState(mjm, mjd, states[i], full)
    return states
