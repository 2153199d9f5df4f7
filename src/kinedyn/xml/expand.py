"""MJCF meta-elements expanded on the parsed tree, before compilation.

MuJoCo assembles a model from several files and procedural elements before (``<include>``) or
while (``<replicate>``, ``<attach>``) it builds the spec. kinedyn does the same work on the
:class:`~kinedyn.xml.mjcf.Node` tree, so the compiler sees one document whose elements carry the
file and line they came from:

* ``<include file="..."/>`` (src/xml/xml.cc ``IncludeXML``): the children of the included file's
  top-level element replace the ``<include>``, wherever it stands. MuJoCo 4.0 looks for the file
  first relative to the main model's directory, then relative to the directory of the file that
  includes it (a nested include in ``sub/a.xml`` finds ``sub/b.xml`` as ``b.xml``). A file may be
  included once: a second include of the same path (compared after removing ``.`` and ``dir/..``,
  as MuJoCo does; two spellings through ``..`` of the main directory or a symbolic link are two
  files, to MuJoCo too) is "already included", which also ends every cycle. A model given as a
  string has no directory: its relative includes are read from the current working directory,
  as by ``mujoco.MjModel.from_xml_string``. ``meshdir``/``texturedir`` keep their meaning: asset
  files are found relative to the main model's directory, whatever file declares them.
* ``<replicate count offset euler sep>`` (xml_native_reader.cc ``Body``, MuJoCo 4.0): its
  content is repeated ``count`` times in place, replica ``i`` in a ``<frame>`` at the pose
  MuJoCo gives it (orientation ``i * euler``; position the previous one's plus ``offset``
  turned by the previous orientation) and with the suffix ``sep`` + ``i`` written with as many
  digits as ``count`` has appended to every name in it (nested replicates: the inner suffix
  first). Elements outside the tree that refer to a name in the content (tendons, actuators,
  sensors, equalities, contact pairs and excludes, and in turn what refers to those) are
  replaced by one copy per replica, whose names and references take the same suffix; the
  copies go to the end of their section, replica by replica, as in MuJoCo. An equality
  constraint between an element of the replicated tree and one outside it is dropped, as MuJoCo
  4.0 drops it (one to the world, by an omitted ``body2``, is replicated); an element that
  refers to the tree declared after the replicate is left as written and fails to compile, as
  in MuJoCo. Keyframes are not
  replicated (they describe the whole model). A count below 1 leaves nothing.
* ``xmlns`` and ``prefix:name`` attributes of the root ``<mujoco>`` (an XML schema reference,
  as MuJoCo's documentation suggests) are accepted and dropped, as by MuJoCo.
"""

from __future__ import annotations

import os
from pathlib import Path

from kinedyn.xml.mjcf import Node, parse_floats, parse_ints, parse_xml

__all__ = ["expand"]


def expand(root: Node, path: str | Path | None = None, frames=None) -> Node:
    """Expand the meta-elements of the document ``root`` read from ``path`` (None: a string).

    ``frames`` gives the orientation arithmetic of the compiler (``resolve_orientation``,
    ``frame_accum``: :mod:`kinedyn.compiler.frames`, which this layer may not import); without it
    a ``<replicate>`` with an ``euler`` rotation is refused.
    """
    model_dir = os.path.dirname(os.fspath(path)) if path is not None else ""
    included = {os.path.normpath(os.fspath(path))} if path is not None else set()
    _Includes(model_dir, included).run(root)
    _Replicates(root, frames).run()
    if root.tag == "mujoco":
        root.attrib = {k: v for k, v in root.attrib.items() if k != "xmlns" and ":" not in k}
    return root


class _Includes:
    """``<include>`` elements replaced by the contents of their files (xml.cc IncludeXML)."""

    def __init__(self, model_dir: str, included: set[str]):
        self.model_dir = model_dir
        self.included = included

    def run(self, root: Node) -> None:
        # depth first with an explicit stack (documents may nest deep); recursion only follows
        # chains of included files, each file at most once
        todo = [(root, "")]
        while todo:
            node, rel_dir = todo.pop()
            pairs = self._splice(node.children, rel_dir)
            node.children = [c for c, _ in pairs]
            todo.extend(pairs)

    def _splice(self, children: list[Node], rel_dir: str) -> list[tuple[Node, str]]:
        """``children`` with their includes replaced, each with the directory its includes start from."""
        out: list[tuple[Node, str]] = []
        for child in children:
            if child.tag.lower() != "include":  # tinyxml2's strcasecmp: <Include> is one too
                out.append((child, rel_dir))
            else:
                nodes, next_dir = self._load(child, rel_dir)
                out.extend(self._splice(nodes, next_dir))
        return out

    def _load(self, node: Node, rel_dir: str) -> tuple[list[Node], str]:
        if node.children:
            raise node.error("Include element cannot have children")
        file = node.attrib.get("file")
        if file is None:
            raise node.error("required attribute missing: 'file'", "file")
        if not file:
            raise node.error("empty file name in include", "file")
        # MuJoCo 4.0: first the main model's directory, then the including file's directory
        candidates = [(os.path.join(self.model_dir, file), os.path.dirname(file))]
        if not os.path.isabs(file) and rel_dir:
            candidates.append((os.path.join(self.model_dir, rel_dir, file),
                               os.path.join(rel_dir, os.path.dirname(file))))
        key = os.path.normpath(os.path.join(self.model_dir, rel_dir, file))
        if key in self.included:
            raise node.error(f"File '{file}' already included", "file")
        data, opened = None, None
        for candidate in candidates:
            try:
                data = Path(candidate[0]).read_bytes()
            except (OSError, ValueError) as err:
                reason = getattr(err, "strerror", None) or str(err)
            else:
                opened = candidate
                break
        if opened is None:
            raise node.error(f"Error opening file '{candidates[-1][0]}': {reason}", "file")
        full, next_dir = opened
        if not data:
            raise node.error(f"Empty file '{file}'", "file")
        self.included.add(key)
        label = os.path.normpath(full)
        doc = parse_xml(data, file=label)  # its errors name the included file and its line
        if not doc.children:
            raise node.error(f"Empty include file '{file}'", "file")
        return doc.children, next_dir


# ---- <replicate> -------------------------------------------------------------------------------------

MAX_REPLICATED = 1_000_000  # bound on what one <replicate> may create (MuJoCo's is memory)
# elements of the body tree a name in a replicate belongs to (what other elements refer to)
_TREE_KINDS = {"body": "body", "joint": "joint", "freejoint": "joint", "geom": "geom", "site": "site",
               "camera": "camera", "light": "light", "frame": "frame"}
# attributes of the elements outside the tree that refer to a named element, and its kind
_REFERENCES = {
    "joint": "joint", "jointinparent": "joint", "joint1": "joint", "joint2": "joint",
    "body": "body", "body1": "body", "body2": "body",
    "site": "site", "site1": "site", "site2": "site", "refsite": "site", "cranksite": "site",
    "slidersite": "site", "sidesite": "site",
    "geom": "geom", "geom1": "geom", "geom2": "geom",
    "tendon": "tendon", "tendon1": "tendon", "tendon2": "tendon",
    "actuator": "actuator", "camera": "camera",
}
_OBJTYPES = {"xbody": "body", "body": "body", "joint": "joint", "geom": "geom", "site": "site",
             "camera": "camera", "tendon": "tendon", "actuator": "actuator"}
# sections whose elements may refer to the tree, in the order references can chain (an actuator
# on a tendon, a sensor on an actuator); the kind the elements' own names are of
_REFERRING_SECTIONS = (("tendon", "tendon"), ("equality", None), ("contact", None), ("actuator", "actuator"),
                       ("sensor", None))


def _references(node: Node):
    """(node, attribute, kind) of every reference in ``node`` and its descendants."""
    todo = [node]
    while todo:
        n = todo.pop()
        for attr in n.attrib:
            kind = _reference_kind(n, attr)
            if kind is not None:
                yield n, attr, kind
        todo.extend(n.children)


def _reference_kind(node: Node, attr: str) -> str | None:
    if attr == "objname":
        return _OBJTYPES.get(node.attrib.get("objtype", "").strip())
    if attr == "refname":
        return _OBJTYPES.get(node.attrib.get("reftype", "").strip())
    return _REFERENCES.get(attr)


def _copy(node: Node, rename) -> Node:
    """A deep copy of ``node``; ``rename(copy)`` edits each copied element's attributes."""
    top = Node(node.tag, dict(node.attrib), node.line, file=node.file)
    todo = [(node, top)]
    while todo:
        src, dst = todo.pop()
        rename(dst)
        for c in src.children:
            new = Node(c.tag, dict(c.attrib), c.line, file=c.file)
            dst.children.append(new)
            todo.append((c, new))
    return top


def _fmt(x: float) -> str:
    return repr(float(x))


class _Replicates:
    """``<replicate>`` elements of the body tree expanded in place (see the module docstring)."""

    def __init__(self, root: Node, frames):
        self.root = root
        self.frames = frames
        degree, eulerseq = True, "xyz"
        for node in root.children:  # the <compiler> settings MuJoCo has read by then: all of them
            if node.tag == "compiler":
                degree = node.attrib.get("angle", "degree" if degree else "radian").strip() != "radian"
                eulerseq = node.attrib.get("eulerseq", eulerseq)
        self.degree, self.eulerseq = degree, eulerseq

    def run(self) -> None:
        # post-order (inner replicates first, siblings in document order), as MuJoCo reads them
        for world in [c for c in self.root.children if c.tag == "worldbody"]:
            order: list[tuple[Node, Node]] = []
            todo = [(world, iter(world.children))]
            while todo:
                parent, children = todo[-1]
                child = next(children, None)
                if child is None:
                    todo.pop()
                    if todo and parent.tag == "replicate":
                        order.append((todo[-1][0], parent))
                    continue
                if child.tag in ("body", "frame", "replicate"):
                    todo.append((child, iter(child.children)))
            for parent, node in order:
                self._expand(parent, node)

    def _poses(self, node: Node, count: int) -> list[tuple[list, list | None]]:
        vectors = {}
        for attr in ("offset", "euler"):
            values = parse_floats(node, attr, node.attrib.get(attr, ""))
            if attr in node.attrib and len(values) != 3:
                raise node.error(f"attribute '{attr}' needs 3 values, got {len(values)}", attr)
            vectors[attr] = values or [0.0, 0.0, 0.0]
        offset, euler = vectors["offset"], vectors["euler"]
        if any(euler) and self.frames is None:
            raise node.error("replicate euler needs the compiler's orientation arithmetic", "euler")
        poses = []
        pos = [0.0, 0.0, 0.0]
        for i in range(count):
            quat = None
            if any(euler):
                quat, err = self.frames.resolve_orientation({"euler": [i * e for e in euler]}, self.degree,
                                                            self.eulerseq)
                if err:
                    raise node.error(f"orientation specification error '{err}'", "euler")
            poses.append((list(pos), quat))
            if quat is None:
                pos = [pos[k] + offset[k] for k in range(3)]
            else:
                pos, _ = self.frames.frame_accum(pos, quat, offset, [1.0, 0.0, 0.0, 0.0])
        return poses

    def _expand(self, parent: Node, node: Node) -> None:
        if "count" not in node.attrib:
            raise node.error("required attribute missing: 'count'", "count")
        counts = parse_ints(node, "count", node.attrib["count"])
        if len(counts) != 1:
            raise node.error("attribute 'count' needs one integer", "count")
        count = max(counts[0], 0)
        size, todo = 0, [node]
        while todo:
            size += 1
            todo.extend(todo.pop().children)
        if count * size > MAX_REPLICATED:
            raise node.error(f"replicate count={count}: kinedyn copies at most {MAX_REPLICATED} elements",
                             "count")
        for child in node.children:
            if child.tag in ("joint", "freejoint"):
                raise child.error("joint cannot be a direct child of replicate")
        sep = node.attrib.get("sep", "")
        width = len(str(count))
        suffixes = [f"{sep}{i:0{width}d}" for i in range(count)]
        # names in the content, by kind
        names: dict[str, set[str]] = {}
        todo = list(node.children)
        while todo:
            n = todo.pop()
            kind = _TREE_KINDS.get(n.tag)
            if kind is not None and n.attrib.get("name"):
                names.setdefault(kind, set()).add(n.attrib["name"])
            todo.extend(n.children)
        # the replicas, in place
        replicas = []
        for suffix, (pos, quat) in zip(suffixes, self._poses(node, count), strict=True):
            attrib = {"pos": " ".join(map(_fmt, pos))}
            if quat is not None:
                attrib["quat"] = " ".join(map(_fmt, quat))
            if "childclass" in node.attrib:
                attrib["childclass"] = node.attrib["childclass"]
            frame = Node("frame", attrib, node.line, file=node.file)

            def rename(n: Node, suffix=suffix) -> None:
                if n.tag in _TREE_KINDS and n.attrib.get("name"):
                    n.attrib["name"] += suffix
                if n.tag in ("camera", "light") and n.attrib.get("target") in names.get("body", ()):
                    n.attrib["target"] += suffix

            frame.children = [_copy(c, rename) for c in node.children]
            replicas.append(frame)
        before = self._declared_before(node)
        at = next(i for i, c in enumerate(parent.children) if c is node)
        parent.children[at:at + 1] = replicas
        self._referring(names, before, suffixes)

    def _declared_before(self, node: Node) -> dict[str, set[str]]:
        """Names of the tree's elements that come before ``node`` in the document (with "world")."""
        names: dict[str, set[str]] = {"body": {"world"}}
        for world in (c for c in self.root.children if c.tag == "worldbody"):
            todo = list(reversed(world.children))
            while todo:
                n = todo.pop()
                if n is node:
                    return names
                kind = _TREE_KINDS.get(n.tag)
                if kind is not None and n.attrib.get("name"):
                    names.setdefault(kind, set()).add(n.attrib["name"])
                todo.extend(reversed(n.children))
        return names

    def _referring(self, names: dict[str, set[str]], before: dict[str, set[str]],
                   suffixes: list[str]) -> None:
        """Elements outside the tree that refer to ``names``: one copy per replica at the end.

        As MuJoCo attaches each replica while it reads the tree, an element that also refers to
        a tree element declared after the replicate is left as it is (and fails to compile, as in
        MuJoCo); an equality that also refers to one declared before is dropped.
        """
        for tag, own_kind in _REFERRING_SECTIONS:
            sections = [c for c in self.root.children if c.tag == tag]
            if not sections:
                continue
            referring: list[Node] = []
            for section in sections:
                keep = []
                for element in section.children:
                    refs = [(n.attrib[attr], kind) for n, attr, kind in _references(element)]
                    inside = [value in names.get(kind, ()) for value, kind in refs]
                    later = any(not ins and kind in _TREE_KINDS.values() and value not in before.get(kind, ())
                                for ins, (value, kind) in zip(inside, refs, strict=True))
                    if tag == "equality" and any(inside) and not all(inside) and not later:
                        continue  # MuJoCo 4.0 drops an equality between the replicas and the rest
                    if any(inside) and not later:
                        referring.append(element)
                        if own_kind and element.attrib.get("name"):
                            names.setdefault(own_kind, set()).add(element.attrib["name"])
                    else:
                        keep.append(element)
                section.children = keep
            for suffix in suffixes:
                def rename(n: Node, suffix=suffix) -> None:
                    for attr, value in list(n.attrib.items()):
                        if value in names.get(_reference_kind(n, attr), ()):
                            n.attrib[attr] = value + suffix

                for element in referring:
                    copy = _copy(element, rename)
                    if copy.attrib.get("name"):
                        copy.attrib["name"] += suffix
                    sections[-1].children.append(copy)
