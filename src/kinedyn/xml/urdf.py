"""URDF text -> the MJCF element tree that MuJoCo 4.0's URDF reader builds.

MuJoCo reads a ``<robot>`` document into the same model description as MJCF
(src/xml/xml_urdf.cc, ``mjXURDF``) and compiles it with the MJCF compiler. This
module does the same: it translates the URDF into a :class:`~kinedyn.xml.mjcf.Node`
tree rooted at ``<mujoco>`` that :mod:`kinedyn.compiler` compiles like any MJCF
file, so every compile-time rule (inertia checks, limits, default solver
parameters) is shared with MJCF instead of repeated here. Each node keeps the
line of the URDF element it comes from, so compile errors point into the URDF.

MuJoCo's URDF semantics, reproduced here:

* the optional ``<mujoco>`` child of ``<robot>`` holds ``<compiler>``, ``<option>``
  and ``<size>`` as in MJCF; for URDF ``fusestatic`` and ``discardvisual`` default to
  "true", angles are radians whatever ``angle`` says, and ``rpy`` is the extrinsic
  "XYZ" Euler sequence;
* every ``<link>`` is a body (a link named ``world`` is the world body), nested along
  the joints; roots with no parent joint are static bodies of the world;
* ``<inertial>``: ``origin`` and the full inertia matrix, rotated into the link
  frame (MuJoCo diagonalises it there); an all-zero inertia stays undefined;
* joints: revolute and continuous -> hinge, prismatic -> slide, floating -> free,
  planar -> two slides and a hinge (``NAME_TX``, ``NAME_TY``, ``NAME_RZ``), spherical ->
  ball, fixed -> none; ``<limit lower upper>`` -> range (unlimited when one bound is
  missing or lower > upper; continuous joints ignore them), ``effort`` -> actuatorfrcrange,
  ``<dynamics damping friction>`` -> damping and frictionloss; ``<mimic>`` -> a joint equality
  ``joint1 = offset + multiplier * joint2``;
* ``<collision>`` -> a colliding geom; ``<visual>`` -> a geom with no contacts, group 1
  and density 0, dropped when ``discardvisual`` is true; box (half sizes), cylinder,
  sphere, capsule and mesh (with ``scale``; one mesh asset per file and scale).

Beyond MuJoCo: ``package://NAME/...`` and ``file://`` mesh URIs are resolved as ROS
tools and Pinocchio do (see :func:`resolve_mesh_path`), and what MuJoCo ignores
silently but a user would rely on (a mesh file that is missing) is a
:class:`~kinedyn.errors.ModelError`. A ``<mimic>`` naming no joint is ignored, as by MuJoCo
and Pinocchio, with a warning (``missing_mimic="warn"``, what ``Model.from_urdf`` does unless
``inertia="strict"``). Inertias MuJoCo's compiler refuses are the compiler's affair
(``Compiler.inertia_policy``: loaded as given for a URDF).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from kinedyn.errors import ModelError
from kinedyn.xml.mjcf import Node, convert, parse_xml

__all__ = ["UrdfModel", "read_urdf", "translate_urdf", "resolve_mesh_path", "find_package"]

# URDF joint types (mjXURDF's urJoint_map); "spherical" is Bullet's extension
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical")
# children of <mujoco> that MuJoCo's URDF reader reads
_EXTENSION_SECTIONS = ("compiler", "option", "size")


@dataclass
class UrdfModel:
    """A URDF translated to MJCF: the tree for the compiler and the URDF-only settings."""

    root: Node                     # <mujoco> element tree
    fusestatic: bool               # fuse jointless bodies into their parents (compiler)
    meshes: dict = field(default_factory=dict)   # mesh asset name -> resolved file path


def read_urdf(text: str | bytes, path: str | Path | None = None,
              package_dirs=None, floating_base: bool = False) -> UrdfModel:
    """Translate URDF ``text`` (from file ``path``, if any) into an MJCF element tree.

    Args:
      text: the URDF document (str, or the raw bytes of a file).
      path: the file it came from: relative mesh files and ``package://`` packages are
        looked up from its directory.
      package_dirs: directories searched first for ``package://`` packages (see
        :func:`find_package`); a single path or a list.
      floating_base: give the root link a free joint named ``root_joint`` (what
        ``pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())`` adds, and MuJoCo's
        ``MjSpec.from_file(path)`` with ``add_freejoint`` on the root body); the URDF must
        have one root link, not named ``world``.

    Raises:
      ModelError: malformed XML, a missing required element or attribute, a bad value, an
        unknown link or joint, a mesh file or package that cannot be found, ``floating_base``
        with no single root link to float.
    """
    return translate_urdf(parse_xml(text), path, package_dirs, floating_base)


def translate_urdf(root: Node, path: str | Path | None = None, package_dirs=None,
                   floating_base: bool = False, missing_mimic: str = "error") -> UrdfModel:
    """:func:`read_urdf` of an already parsed document. ``missing_mimic``: a ``<mimic>`` naming no
    joint is a ModelError ("error") or, as MuJoCo and Pinocchio load it, ignored with a
    ``UserWarning`` naming it ("warn")."""
    return _Translator(root, Path(path).resolve() if path is not None else None, _as_list(package_dirs),
                       floating_base, missing_mimic).run()


def _as_list(dirs) -> list[Path]:
    if dirs is None:
        return []
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    return [Path(d) for d in dirs]


def _fmt(values) -> str:
    """Floats as MJCF text that reads back to the same doubles."""
    return " ".join(repr(float(v)) for v in values)


def _first(node: Node, tag: str, required: bool = False) -> Node | None:
    """The first child ``tag`` of ``node`` (tinyxml2's FirstChildElement, as MuJoCo reads URDF)."""
    for c in node.children:
        if c.tag == tag:
            return c
    if required:
        raise node.error(f"missing element: '{tag}'")
    return None


def _attr(node: Node, attr: str, kind: str = "s", required: bool = False, default=None):
    """One attribute of a URDF element, typed as an MJCF value kind (``"f"``, ``"f3"``, ``"s"``)."""
    text = node.attrib.get(attr)
    if text is None:
        if required:
            raise node.error(f"required attribute missing: '{attr}'", attr)
        return default
    if kind == "f" and attr in ("lower", "upper", "effort", "velocity") and \
            text.strip().lower().lstrip("+-") in ("inf", "infinity"):
        return -math.inf if text.strip().startswith("-") else math.inf
    return convert(node, attr, kind, text)


# ---- package:// and mesh files -------------------------------------------------------------------

def _package_xml_name(folder: Path) -> str | None:
    """The <name> a ROS package.xml in ``folder`` declares, if any."""
    try:
        text = (folder / "package.xml").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r"<name>\s*([^<\s]+)\s*</name>", text)
    return match.group(1) if match else None


def _candidates(name: str, urdf_dir: Path | None, package_dirs: list[Path]):
    """Directories that may be package ``name``, in the order they are tried."""
    # 1. the directories the caller gives: a package's parent (Pinocchio's package_dirs) or the package
    for d in package_dirs:
        yield d / name
        yield d
        yield from _subfolders(d)
    # 2. the URDF file's ancestors: one named after the package, or one holding it
    if urdf_dir is not None:
        for d in [urdf_dir, *urdf_dir.parents]:
            yield d
            yield d / name
    # 3. ROS_PACKAGE_PATH (ROS 1) and AMENT_PREFIX_PATH (ROS 2: PREFIX/share/NAME)
    for entry in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        yield Path(entry) / name
        yield Path(entry)
        yield from _subfolders(Path(entry))
    for entry in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        yield Path(entry) / "share" / name


def _subfolders(folder: Path):
    """The folders in ``folder`` that hold a package.xml (a package checked out under another name)."""
    try:
        yield from sorted(p.parent for p in folder.glob("*/package.xml"))
    except OSError:
        return


def find_package(name: str, urdf_dir: Path | None = None, package_dirs=()) -> Path | None:
    """The folder of ROS package ``name``, as ``package://NAME/`` URIs mean it.

    A folder is the package when it is named ``name`` or its ``package.xml`` declares
    ``<name>NAME</name>``. Searched in order: ``package_dirs`` (each may be the package
    itself or a folder holding it, as Pinocchio's ``package_dirs``, under any folder name if its
    package.xml names it), the URDF file's folder
    and its ancestors (each, and a subfolder ``name`` of each, as a package checked out
    beside or above the URDF), ``ROS_PACKAGE_PATH`` entries (the same way) and ``AMENT_PREFIX_PATH``
    prefixes (``PREFIX/share/NAME``).
    """
    for cand in _candidates(name, urdf_dir, _as_list(list(package_dirs))):
        if not cand.is_dir():
            continue
        if cand.name == name or _package_xml_name(cand) == name:
            return cand
    return None


def resolve_mesh_path(filename: str, urdf_path: Path | None, meshdir: str | None = None,
                      package_dirs=(), node: Node | None = None) -> Path:
    """The file a URDF ``<mesh filename>`` names.

    ``package://NAME/rest`` is ``rest`` in package ``NAME`` (:func:`find_package`; leading
    slashes after ``package://`` are ignored, as Pinocchio does); ``file://`` is a local path;
    anything else follows MuJoCo's rule: an absolute path as is, else under ``meshdir``
    (if absolute), else under the URDF's folder joined with ``meshdir``.
    """
    urdf_dir = urdf_path.parent if urdf_path is not None else None

    def fail(message: str) -> ModelError:
        if node is None:
            return ModelError(message, attribute="filename")
        return node.error(message, "filename")

    if filename.startswith("package://"):
        rest = filename[len("package://"):].lstrip("/")
        name, _, inner = rest.partition("/")
        if not name or not inner:
            raise fail(f"malformed package URI {filename!r} (expected package://NAME/PATH)")
        pkg = find_package(name, urdf_dir, package_dirs)
        if pkg is None:
            where = "package_dirs=, the URDF file's folder and its ancestors, ROS_PACKAGE_PATH"
            raise fail(f"package '{name}' of mesh {filename!r} not found (searched {where}); "
                       f"pass its parent folder with package_dirs=")
        return pkg / inner
    if filename.startswith("file://"):
        return Path(filename[len("file://"):])
    file = Path(filename)
    if file.is_absolute():
        return file
    if meshdir and Path(meshdir).is_absolute():
        return Path(meshdir) / file
    base = urdf_dir if urdf_dir is not None else Path.cwd()
    return base / (meshdir or "") / file


# ---- the translator -----------------------------------------------------------------------------

class _Translator:
    """One URDF document -> MJCF nodes (mjXURDF::Parse, in its order of work)."""

    def __init__(self, root: Node, path: Path | None, package_dirs: list[Path], floating_base: bool = False,
                 missing_mimic: str = "error"):
        self.root = root
        self.missing_mimic = missing_mimic
        self.missing_mimics: list[str] = []  # with missing_mimic="warn": warned once, at the end
        self.floating_base = floating_base
        self.path = path
        self.package_dirs = package_dirs
        self.geom_names: set[str] = set()
        self.meshes: dict[str, list] = {}      # stripped name -> [(name, file, scale)]
        self.mesh_nodes: list[Node] = []
        self.strippath = False
        self.meshdir: str | None = None

    def run(self) -> UrdfModel:
        root = self.root
        if root.tag.lower() != "robot":
            raise root.error("URDF root element must be <robot>")
        out = Node("mujoco", {}, root.line)
        if "name" in root.attrib:
            out.attrib["model"] = root.attrib["name"]

        compiler = Node("compiler", {}, root.line)
        fusestatic, discardvisual = True, True
        ext = _first(root, "mujoco")
        sections = {}
        if ext is not None:
            for child in ext.children:
                if child.tag not in _EXTENSION_SECTIONS:
                    raise child.error(f"<{child.tag}> in the URDF <mujoco> extension is ignored by MuJoCo's "
                                      "URDF reader; kinedyn refuses it (only compiler, option and size "
                                      "are read)")
                sections.setdefault(child.tag, child)  # the first of each, as MuJoCo
        if "compiler" in sections:
            src = sections["compiler"]
            compiler = Node("compiler", dict(src.attrib), src.line, list(src.children))
            for attr in ("fusestatic", "discardvisual"):
                if attr in compiler.attrib:
                    value = convert(src, attr, ("e", ("false", "true")), compiler.attrib.pop(attr))
                    if attr == "fusestatic":
                        fusestatic = value == "true"
                    else:
                        discardvisual = value == "true"
            self.strippath = convert(src, "strippath", ("e", ("false", "true")),
                                     src.attrib.get("strippath", "false")) == "true"
            self.meshdir = src.attrib.get("meshdir", src.attrib.get("assetdir"))
        # MuJoCo's URDF reader: radians always; rpy is the extrinsic XYZ sequence
        compiler.attrib["angle"] = "radian"
        compiler.attrib["eulerseq"] = "XYZ"
        self.discardvisual = discardvisual
        out.children.append(compiler)
        for tag in ("option", "size"):
            if tag in sections:
                out.children.append(sections[tag])

        self.materials = self._materials(root)
        links, parent_of, children_of, joint_of = self._tree(root)
        world = Node("worldbody", {}, root.line)
        bodies: dict[str, Node] = {}
        # roots (links without a parent joint) in document order, each with its subtree depth first
        for name in links:
            if name in parent_of:
                continue
            stack = [(name, world)]
            while stack:
                lname, container = stack.pop()
                lnk = links[lname]
                if lname == "world":
                    body = world
                else:
                    body = Node("body", {"name": lname}, lnk.line)
                    container.children.append(body)
                bodies[lname] = body
                stack.extend((c, body) for c in reversed(children_of.get(lname, [])))
        missing = [n for n in links if n not in bodies]
        if missing:
            lnk = links[missing[0]]
            raise lnk.error(f"link '{missing[0]}' is in a kinematic loop (URDF describes trees)")

        for name, lnk in links.items():
            self._link(lnk, bodies[name], name == "world")
        equalities = []
        joint_names = {}
        for jnode in root.find_all("joint"):
            self._joint(jnode, bodies[_child_link(jnode)], joint_names)
        if self.floating_base:
            self._float([n for n in links if n not in parent_of], links, bodies, joint_names)
        for jnode in root.find_all("joint"):
            mimic = _first(jnode, "mimic")
            if mimic is not None:
                eq = self._mimic(jnode, mimic, joint_names)
                if eq is not None:
                    equalities.append(eq)
        if self.missing_mimics:
            # stacklevel: run < translate_urdf < _compile_urdf_tree < compile_* < Model.from_* < caller
            warnings.warn(f"{len(self.missing_mimics)} <mimic> name a joint the URDF does not have and are "
                          f"ignored, as by MuJoCo and Pinocchio (those joints move freely): "
                          f"{'; '.join(self.missing_mimics)}", UserWarning, stacklevel=6)
        if self.mesh_nodes:
            out.children.append(Node("asset", {}, root.line, self.mesh_nodes))
        out.children.append(world)
        if equalities:
            out.children.append(Node("equality", {}, root.line, equalities))
        meshes = {n: f for items in self.meshes.values() for n, f, _ in items}
        return UrdfModel(out, fusestatic, meshes)

    # -- structure --

    @staticmethod
    def _materials(root: Node) -> dict[str, list[float]]:
        """Named materials with a color anywhere in the document (mjXURDF::MakeMaterials)."""
        out: dict[str, list[float]] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            if node.tag == "material" and node.attrib.get("name") and node.attrib["name"] not in out:
                color = _first(node, "color")
                if color is not None:
                    out[node.attrib["name"]] = _attr(color, "rgba", "f4", required=True)
            stack.extend(reversed(node.children))
        return out

    def _tree(self, root: Node):
        links: dict[str, Node] = {}
        for lnk in root.find_all("link"):
            name = _attr(lnk, "name", required=True)
            if name in links:
                raise lnk.error(f"repeated URDF link name '{name}'", "name")
            links[name] = lnk
        parent_of: dict[str, str] = {}
        children_of: dict[str, list[str]] = {}
        joint_of: dict[str, Node] = {}
        for jnode in root.find_all("joint"):
            _attr(jnode, "name", required=True)
            parent = _attr(_first(jnode, "parent", True), "link", required=True)
            child = _child_link(jnode)
            for role, link in (("parent", parent), ("child", child)):
                if link not in links:
                    el = _first(jnode, role)
                    raise el.error(f"URDF joint {role} link '{link}' does not exist", "link")
            if child in parent_of:
                raise jnode.error(f"URDF link '{child}' has multiple parents ('{parent_of[child]}' and "
                                  f"'{parent}')")
            parent_of[child] = parent
            children_of.setdefault(parent, []).append(child)
            joint_of[child] = jnode
        return links, parent_of, children_of, joint_of

    # -- links --

    def _link(self, lnk: Node, body: Node, is_world: bool) -> None:
        """mjXURDF::Body: inertial and geoms of one link."""
        inertial = _first(lnk, "inertial")
        if inertial is not None and not is_world:
            body.children.append(self._inertial(inertial))
        rgba = None
        for elem in lnk.children:
            if elem.tag == "visual":
                material = _first(elem, "material")
                if material is not None:
                    color = _first(material, "color")
                    if color is not None:
                        rgba = _attr(color, "rgba", "f4", required=True)
                    else:
                        name = _attr(material, "name", required=True)
                        rgba = self.materials.get(name, rgba)
                if not self.discardvisual:
                    body.children.append(self._geom(elem, collision=False))
            elif elem.tag == "collision":
                body.children.append(self._geom(elem, collision=True))

    @staticmethod
    def _origin(elem: Node) -> dict:
        """``pos`` and ``euler`` (rpy, read with eulerseq XYZ) of an element's <origin>."""
        origin = _first(elem, "origin")
        out = {}
        if origin is not None:
            if "xyz" in origin.attrib:
                out["pos"] = _fmt(_attr(origin, "xyz", "f3"))
            if "rpy" in origin.attrib:
                out["euler"] = _fmt(_attr(origin, "rpy", "f3"))
        return out

    def _inertial(self, elem: Node) -> Node:
        """<inertial>: mass, origin and the full inertia rotated into the link frame."""
        mass = _attr(_first(elem, "mass", True), "value", "f", required=True)
        inertia = _first(elem, "inertia", True)
        ixx, iyy, izz, ixy, ixz, iyz = (_attr(inertia, k, "f", required=True)
                                        for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"))
        origin = self._origin(elem)
        attrs = {"pos": origin.get("pos", "0 0 0"), "mass": repr(float(mass))}
        if not any((ixx, iyy, izz, ixy, ixz, iyz)):
            # MuJoCo: all zero means "undefined", so the inertia stays zero in the origin frame
            attrs["diaginertia"] = "0 0 0"
            if "euler" in origin:
                attrs["euler"] = origin["euler"]
        else:
            # the inertia in the origin's frame, turned into the link frame by the compiler
            attrs["fullinertia"] = _fmt([ixx, iyy, izz, ixy, ixz, iyz])
            if "euler" in origin:
                attrs["euler"] = origin["euler"]
            return Node("inertial", attrs, elem.line, inertia_frame=True)
        return Node("inertial", attrs, elem.line)

    def _geom(self, elem: Node, collision: bool) -> Node:
        """mjXURDF::Geom: one <visual> or <collision>."""
        geometry = _first(elem, "geometry", True)
        attrs: dict[str, str] = {}
        if collision:
            attrs.update(contype="1", conaffinity="1")
        else:
            attrs.update(contype="0", conaffinity="0", group="1", density="0")
        shape = next((c for c in geometry.children
                      if c.tag in ("box", "cylinder", "sphere", "capsule", "mesh")), None)
        if shape is None:
            raise geometry.error("visual geometry specification not found (box, cylinder, sphere, capsule "
                                 "or mesh)")
        line = shape.line
        if shape.tag == "box":
            attrs.update(type="box", size=_fmt(v / 2 for v in _attr(shape, "size", "f3", required=True)))
        elif shape.tag in ("cylinder", "capsule"):
            radius = _attr(shape, "radius", "f", required=True)
            length = _attr(shape, "length", "f", required=True)
            attrs.update(type=shape.tag, size=_fmt([radius, length / 2]))
        elif shape.tag == "sphere":
            attrs.update(type="sphere", size=_fmt([_attr(shape, "radius", "f", required=True)]))
        else:
            attrs.update(type="mesh", mesh=self._mesh(shape))
        attrs.update(self._origin(elem))
        name = elem.attrib.get("name", "")
        if name and name not in self.geom_names:
            attrs["name"] = name
        self.geom_names.add(name)  # MuJoCo leaves repeated names unnamed
        return Node("geom", attrs, line)

    def _mesh(self, shape: Node) -> str:
        """The asset name of a <mesh filename scale>, declaring it on first use."""
        filename = _attr(shape, "filename", required=True)
        scale = tuple(_attr(shape, "scale", "f3", default=[1.0, 1.0, 1.0]))
        if self.strippath:
            filename = re.split(r"[\\/]", filename)[-1]
        file = resolve_mesh_path(filename, self.path, self.meshdir, self.package_dirs, shape)
        if not file.is_file():
            raise shape.error(f"mesh file '{file}' not found (from {filename!r})", "filename")
        # MuJoCo names a mesh after its file name without folders and extension, with a
        # counter for other scales of the same file; kinedyn also counts a different file of
        # the same name (MuJoCo would reuse the first file's mesh)
        stem = re.split(r"[\\/]", filename)[-1]
        stem = stem[:stem.rfind(".")] if "." in stem else stem
        items = self.meshes.setdefault(stem, [])
        for name, f, s in items:
            if f == file and s == scale:
                return name
        name = stem if not items else f"{stem}{len(items)}"
        items.append((name, file, scale))
        self.mesh_nodes.append(Node("mesh", {"name": name, "file": str(file), "scale": _fmt(scale)},
                                    shape.line))
        return name

    # -- joints --

    def _float(self, roots: list[str], links: dict, bodies: dict, joint_names: dict) -> None:
        """``floating_base``: a free joint ``root_joint`` on the one root link."""
        if "world" in roots:
            raise links["world"].error("floating_base: the robot is attached to the link named 'world' "
                                       "by its joints; remove the world link to float the robot", "name")
        if len(roots) != 1:
            where = links[roots[1]] if roots else self.root
            raise where.error(f"floating_base: the URDF has {len(roots)} root links ({', '.join(roots)}); "
                              "it needs one to put the free joint on", "name")
        if "root_joint" in joint_names:
            raise joint_names["root_joint"][0].error("floating_base: the free joint is named 'root_joint' "
                                                     "(as Pinocchio's free flyer); the URDF has a joint of "
                                                     "that name", "name")
        # the free joint comes first among the body's joints (it has none: a root has no parent joint)
        bodies[roots[0]].children.insert(0, Node("joint", {"name": "root_joint", "type": "free"},
                                                 links[roots[0]].line))

    def _joint(self, jnode: Node, body: Node, joint_names: dict) -> None:
        """mjXURDF::Joint: the child body's pose and its joints."""
        jtype = _attr(jnode, "type", required=True)
        if jtype not in JOINT_TYPES:
            raise jnode.error(f"invalid URDF joint type '{jtype}' (expected one of {', '.join(JOINT_TYPES)})",
                              "type")
        name = _attr(jnode, "name", required=True)
        if name in joint_names:
            raise jnode.error(f"repeated URDF joint name '{name}'", "name")
        joint_names[name] = (jnode, jtype)
        if body.tag == "worldbody":
            raise jnode.error("the world link cannot be a joint's child", "type")
        body.attrib.update(self._origin(jnode))
        axis_node = _first(jnode, "axis")
        axis = _attr(axis_node, "xyz", "f3", required=True) if axis_node is not None else [1.0, 0.0, 0.0]
        new: list[Node] = []
        line = jnode.line
        if jtype in ("revolute", "continuous", "prismatic"):
            new.append(Node("joint", {"name": name, "type": "slide" if jtype == "prismatic" else "hinge",
                                      "axis": _fmt(axis)}, line))
        elif jtype == "floating":
            new.append(Node("joint", {"name": name, "type": "free"}, line))
        elif jtype == "spherical":
            new.append(Node("joint", {"name": name, "type": "ball"}, line))
        elif jtype == "planar":
            # slides along the x and y axes of a frame whose z axis is the joint axis, a hinge about it
            frame = Node("frame", {"zaxis": _fmt(axis)}, line, [
                Node("joint", {"name": name + "_TX", "type": "slide", "axis": "1 0 0"}, line),
                Node("joint", {"name": name + "_TY", "type": "slide", "axis": "0 1 0"}, line)])
            new.append(frame)
            new.append(Node("joint", {"name": name + "_RZ", "type": "hinge", "axis": _fmt(axis)}, line))
        if not new:
            return
        joints = [j for n in new for j in ([n] if n.tag == "joint" else n.children)]
        dynamics = _first(jnode, "dynamics")
        if dynamics is not None:
            for src, dst in (("damping", "damping"), ("friction", "frictionloss")):
                value = _attr(dynamics, src, "f")
                if value is not None:
                    for j in joints:
                        j.attrib[dst] = repr(float(value))
        limit = _first(jnode, "limit")
        if limit is not None:
            j = joints[0]  # of a planar joint: the x slide, as MuJoCo
            if jtype != "continuous":  # MuJoCo 4.0 ignores the bounds of continuous joints
                lower, upper = _attr(limit, "lower", "f"), _attr(limit, "upper", "f")
                rng = [0.0 if lower is None else lower, 0.0 if upper is None else upper]
                if lower is not None or upper is not None:
                    j.attrib["range"] = _fmt(rng)
                if (lower is None) != (upper is None) or rng[0] > rng[1]:
                    j.attrib["limited"] = "false"  # MuJoCo: a bad range leaves the joint unlimited
            effort = abs(_attr(limit, "effort", "f", default=0.0))
            if effort > 0:
                j.attrib["actuatorfrcrange"] = _fmt([-effort, effort])
        # the body's joints come first (before its inertial and geoms does not matter to MJCF)
        body.children[0:0] = new

    def _mimic(self, jnode: Node, mimic: Node, joint_names: dict) -> Node | None:
        """<mimic joint multiplier offset> -> <equality><joint joint1 joint2 polycoef>."""
        name = jnode.attrib["name"]
        jtype = joint_names[name][1]
        target = _attr(mimic, "joint", required=True)
        if target not in joint_names:
            if self.missing_mimic == "error":
                raise mimic.error(f"mimic joint '{target}' does not exist (MuJoCo would ignore the mimic)",
                                  "joint")
            # MuJoCo's reader and Pinocchio load the file without this coupling: so does kinedyn, saying so
            self.missing_mimics.append(f"'{name}' mimics '{target}' (line {mimic.line})")
            return None
        ok = ("revolute", "continuous", "prismatic")
        if jtype not in ok or joint_names[target][1] not in ok:
            if jtype == "fixed":
                return None  # nothing moves: MuJoCo ignores it (with a warning)
            bad = name if jtype not in ok else target
            raise mimic.error(f"mimic between joints '{name}' and '{target}': MuJoCo reads mimic only "
                              "between revolute, continuous or prismatic joints and ignores it "
                              f"('{bad}' is not one)",
                              "joint")
        multiplier = _attr(mimic, "multiplier", "f", default=1.0)
        offset = _attr(mimic, "offset", "f", default=0.0)
        return Node("joint", {"joint1": name, "joint2": target,
                              "polycoef": _fmt([offset, multiplier, 0.0, 0.0, 0.0])}, mimic.line)


def _child_link(jnode: Node) -> str:
    return _attr(_first(jnode, "child", True), "link", required=True)
