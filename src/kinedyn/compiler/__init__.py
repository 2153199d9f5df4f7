"""The MJCF compiler: MJCF text -> :class:`kinedyn.Model`.

Modules, in the order a model passes through them:

* :mod:`kinedyn.xml.mjcf` — XML -> element tree with source lines; schema checks.
* :mod:`.defaults` — ``<default>`` classes and ``class``/``childclass`` resolution.
* :mod:`.frames` — orientation forms, ``fromto`` and frame composition.
* :mod:`.inertial` — geom mass properties and principal axes.
* :mod:`.mesh`, :mod:`.hfield` — mesh and height-field assets.
* :mod:`.build` — the :class:`~.build.Compiler`: the order of work, and the arrays of every
  part gathered into the Model. Each part is a mixin in its own module:

  * :mod:`.options` — ``<compiler>`` settings and ``<option>`` (the model's Option);
  * :mod:`.tree` — the body tree read from ``<worldbody>``, numbered depth first; the layout
    arrays (bodies, joints, dofs, qpos0, the sparsity of M);
  * :mod:`.elements` — each body's inertia, geoms, joints, sites, cameras and lights;
  * :mod:`.tendons`, :mod:`.equalities` — ``<tendon>`` and ``<equality>``;
  * :mod:`.actuators` — actuator shortcuts and parameter compilation, ``<actuator>``;
  * :mod:`.keyframes` — ``<keyframe>`` and ``<size nkey>``;

  with :mod:`.contacts` (the contact model and its sizes) and :mod:`.sensors`.

After the arrays are built, ``kinedyn.engine.setconst.set_const(model)`` computes the
quantities that need the kinematics at qpos0
(``actuator_acc0``, ``actuator_length0``, kv from ``dampratio``, the ``*_invweight0``,
the pose-dependent ``eq_data``), ``build.auto_spring_damper`` the stiffness and damping of
joints with ``springdamper``, and
``kinedyn.engine.lengthrange.set_length_range`` the muscles' ``actuator_lengthrange``
(MuJoCo's simulation, run with kinedyn's own pipeline).
"""

from __future__ import annotations

from pathlib import Path

from kinedyn.compiler import frames
from kinedyn.compiler.build import Compiler, auto_spring_damper, check_finite
from kinedyn.compiler.keyframes import fill_key_plastic
from kinedyn.compiler.sleep import check_sleep_supported, resolve_sleep_policy
from kinedyn.engine.lengthrange import set_length_range
from kinedyn.engine.metric import unsupported as discrete_unsupported
from kinedyn.engine.model import register_compiler
from kinedyn.engine.setconst import set_const
from kinedyn.engine.types import IntegratorType
from kinedyn.errors import ModelError
from kinedyn.xml.expand import expand
from kinedyn.xml.mjcf import Node, parse_xml
from kinedyn.xml.sections import check_sections
from kinedyn.xml.urdf import translate_urdf

__all__ = ["compile_mjcf", "compile_urdf"]


def compile_mjcf(text: str | bytes, path: str | Path | None = None, allow_unsupported: bool = False,
                 floating_base: bool = False):
    """Compile MJCF ``text`` into a Model (or URDF text: a ``<robot>`` root, as MuJoCo's loader).

    Args:
      text: the MJCF document (str, or the bytes of a file: see ``parse_xml``).
      path: the file it came from: included files and mesh files are found relative to its
        directory (None: the current working directory, as MuJoCo's from_xml_string).
      allow_unsupported: load a model that uses a feature kinedyn does not simulate (one
        ``UnsimulatedFeatureWarning`` each; the feature is left out) instead of raising ModelError.
      floating_base: for URDF text only, a free joint ``root_joint`` on the root link (as
        :func:`compile_urdf`).

    Raises:
      ModelError: malformed XML, unknown elements or attributes, bad values, unsupported features.
      ValueError: ``floating_base`` for an MJCF document.
    """
    root = parse_xml(text)
    if root.tag.lower() == "robot":  # a URDF document (MuJoCo's mj_loadXML reads both)
        return _compile_urdf_tree(root, path, allow_unsupported, None, floating_base)
    if floating_base:
        where = f"'{path}' is" if path is not None else "the text is"
        raise ValueError(f"floating_base applies to URDF files only, and {where} MJCF (<{root.tag}> root): "
                         "give the root body a <freejoint/> in the MJCF instead")
    root = expand(root, path, frames)  # <include>, <replicate>, ...: xml/expand.py
    check_sections(root, path)  # <visual>, <statistic>, <asset>, <custom>: checked, not kept
    return _compile(root, path, allow_unsupported)


# Model.from_urdf's inertia options: the compiler's inertia_policy
INERTIA_OPTIONS = ("as_given", "strict", "balance", "nearest_pd")


def compile_urdf(text: str | bytes, path: str | Path | None = None, allow_unsupported: bool = False,
                 package_dirs=None, floating_base: bool = False, inertia: str = "as_given",
                 mass_floor: float = 0.0, inertia_floor: float = 0.0):
    """Compile URDF ``text`` into a Model with MuJoCo's URDF semantics (see kinedyn.xml.urdf).

    Args:
      text: the URDF document (str, or the bytes of a file).
      path: the file it came from: relative mesh paths and ``package://`` URIs are resolved from it.
      allow_unsupported: as for :func:`compile_mjcf`.
      package_dirs: folders searched first for ``package://`` packages.
      floating_base: a free joint ``root_joint`` on the root link (see ``kinedyn.xml.urdf.read_urdf``).
      inertia: what to do with an inertia MuJoCo's compiler refuses (see ``Model.from_urdf``).
      mass_floor: every body's mass raised to at least this (MuJoCo's ``boundmass`` rule).
      inertia_floor: every body's principal moments raised to at least this (``boundinertia``).
    """
    return _compile_urdf_tree(parse_xml(text), path, allow_unsupported, package_dirs, floating_base,
                              inertia, mass_floor, inertia_floor)


def _compile_urdf_tree(root: Node, path, allow_unsupported: bool, package_dirs, floating_base: bool = False,
                       inertia: str = "as_given", mass_floor: float = 0.0, inertia_floor: float = 0.0):
    if inertia not in INERTIA_OPTIONS:
        raise ValueError(f"inertia={inertia!r}: expected one of {', '.join(map(repr, INERTIA_OPTIONS))}")
    for name, floor in (("mass_floor", mass_floor), ("inertia_floor", inertia_floor)):
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor < float("inf"):
            raise ValueError(f"{name}={floor!r}: expected a finite number >= 0")
    strict = inertia == "strict"
    urdf = translate_urdf(root, path, package_dirs, floating_base,
                          missing_mimic="error" if strict else "warn")
    return _compile(urdf.root, path, allow_unsupported, fusestatic=urdf.fusestatic,
                    inertia_policy="refuse" if strict else inertia,
                    floors=(float(mass_floor), float(inertia_floor)))


def _compile(root: Node, path, allow_unsupported: bool, fusestatic: bool = False,
             inertia_policy: str = "refuse", floors: tuple[float, float] = (0.0, 0.0)):
    compiler = Compiler(root, allow_unsupported, fusestatic=fusestatic)
    compiler.inertia_policy = inertia_policy
    compiler.mass_floor, compiler.inertia_floor = floors
    compiler.model_dir = Path(path).resolve().parent if path is not None else None
    model = compiler.run()
    resolve_sleep_policy(model, compiler.bodies)
    check_sleep_supported(model, compiler.sleep_flag)
    check_discrete_supported(model, compiler)
    check_finite(model, compiler)
    set_const(model, compiler.body_simple)
    fill_key_plastic(model, compiler)
    compiler.warn_unphysical(model)  # a URDF's inertias loaded as given (after set_const: invweight0)
    auto_spring_damper(model, compiler)  # joint springdamper, from dof_invweight0
    set_length_range(model, compiler.lropt, compiler.actuator_nodes)
    check_finite(model, compiler)  # set_const's values at qpos0 can overflow too
    return model


def check_discrete_supported(model, compiler) -> None:
    """With ``<option integrator="discrete">``: ModelError on that element for what kinedyn's
    discrete integrator (engine.metric) does not reproduce yet."""
    if model.opt.integrator != IntegratorType.DISCRETE:
        return
    missing = discrete_unsupported(model)
    if missing:
        message = ('<option integrator="discrete"> is simulated by kinedyn without '
                   + ", ".join(missing) + " (docs/deviations.md)")
        options = compiler.sections.get("option")
        if not options:
            raise ModelError(message)
        raise options[-1].error(message, "integrator")


register_compiler("mjcf", compile_mjcf)
register_compiler("urdf", compile_urdf)
