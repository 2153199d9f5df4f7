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
  as by ``mujoco.MjModel.from_xml_string``. An included file's asset files (meshes, textures,
  height fields) are looked for under ``meshdir``/``texturedir`` of the main model first, then
  in the included file's own folder (``Node.include_dir``, ``mjcf.asset_path``), as MuJoCo 4.0 does.
* ``<asset><model name file>`` and ``<attach model body|frame prefix>`` (xml_native_reader.cc
  ``Body``, ``mjs_attach``): the attached model is read (its includes, attachments and
  replicates expanded, relative to its own file) and its body, frame or whole world put in a
  frame where the ``<attach>`` stands. Every name that comes along takes the prefix (and so
  do the references to it); its default classes come along as classes of their own (its
  "main" apart from this model's), its assets with their files resolved against its own
  directories, its tendons, equalities, contact pairs and excludes, actuators and sensors
  that refer only to what is attached at the end of this model's sections, and its keyframes,
  whose values the compiler places by joint and actuator (``Node.attached_key``). Angle units
  and ``eulerseq`` of the attached model are converted; other ``<compiler>`` settings must
  agree (MuJoCo compiles each model with its own; kinedyn compiles one document). Without
  ``model``, a body or frame of this model declared before the ``<attach>`` is copied.
  Attachments are expanded in document order, before replicates.
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

import math
import os
from pathlib import Path

from kinedyn.xml.mjcf import Node, asset_path, parse_floats, parse_ints, parse_xml

__all__ = ["expand"]


def expand(root: Node, path: str | Path | None = None, frames=None, _loading: tuple = ()) -> Node:
    """Expand the meta-elements of the document ``root`` read from ``path`` (None: a string).

    ``frames`` gives the orientation arithmetic of the compiler (``resolve_orientation``,
    ``frame_accum``: :mod:`kinedyn.compiler.frames`, which this layer may not import); without it
    a ``<replicate>`` with an ``euler`` rotation is refused.
    """
    model_dir = os.path.dirname(os.fspath(path)) if path is not None else ""
    included = {os.path.normpath(os.fspath(path))} if path is not None else set()
    _Includes(model_dir, included).run(root)
    _frame_scales(root)
    _Attachments(root, model_dir, frames, _loading).run()
    _Replicates(root, frames).run()
    if root.tag == "mujoco":
        root.attrib = {k: v for k, v in root.attrib.items() if k != "xmlns" and ":" not in k}
    return root


def _frame_scales(root: Node) -> None:
    """MuJoCo 4.0's ``<frame scale scaling massscale>``: a unit scale (which changes nothing) is
    dropped; any other is refused, as kinedyn does not scale frame contents yet."""
    for world in (c for c in root.children if c.tag == "worldbody"):
        for node in _preorder(world):
            if node.tag != "frame" or not any(k in node.attrib for k in ("scale", "scaling", "massscale")):
                continue
            for attr in ("scale", "massscale"):
                if attr in node.attrib:
                    values = parse_floats(node, attr, node.attrib[attr])
                    counts = (1, 3) if attr == "scale" else (1,)
                    if len(values) not in counts or any(v != 1 for v in values):
                        raise node.error(f"frame {attr}=\"{node.attrib[attr]}\" is not supported yet "
                                         "(kinedyn does not scale the contents of frames)", attr)
            scaling = node.attrib.get("scaling", "similar").strip()
            if scaling not in ("similar", "geometry"):
                raise node.error(f"invalid keyword {scaling!r} in attribute 'scaling'; expected one of "
                                 "similar, geometry", "scaling")
            for attr in ("scale", "scaling", "massscale"):
                node.attrib.pop(attr, None)


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
        if node.children or node.has_content:  # a comment or text is a child to tinyxml2 too
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
                if not os.path.isfile(candidate[0]):  # no directories, devices or pipes
                    raise FileNotFoundError(2, "No such file")
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
        for n in _preorder(doc):  # its asset files may be named from its own folder (mjcf.asset_path)
            n.include_dir = next_dir
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


def _copy(node: Node, rename, memo: dict | None = None) -> Node:
    """A deep copy of ``node``; ``rename(copy)`` edits each copied element's attributes; ``memo``
    (if given) maps ``id(original)`` to the copy of every element."""
    top = Node(node.tag, dict(node.attrib), node.line, file=node.file, include_dir=node.include_dir)
    todo = [(node, top)]
    while todo:
        src, dst = todo.pop()
        if memo is not None:
            memo[id(src)] = dst
        rename(dst)
        for c in src.children:
            new = Node(c.tag, dict(c.attrib), c.line, file=c.file, include_dir=c.include_dir)
            dst.children.append(new)
            todo.append((c, new))
    return top


def _class_names(sections) -> set[str]:
    """The class names the ``<default>`` sections declare ("main" for a top-level one without)."""
    out: set[str] = set()
    for section in sections:
        out.add(section.attrib.get("class", "main"))
        for n in _preorder(section):
            if n.tag == "default" and n.attrib.get("class"):
                out.add(n.attrib["class"])
    return out


def _preorder(root: Node):
    todo = [root]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(reversed(n.children))


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
        memo: dict[int, Node] = {}  # originals -> their copies in the first replica
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

            frame.children = [_copy(c, rename, memo if not replicas else None) for c in node.children]
            replicas.append(frame)
        before = self._declared_before(node)
        at = next(i for i, c in enumerate(parent.children) if c is node)
        parent.children[at:at + 1] = replicas
        self._referring(names, before, suffixes, memo)
        # the keyframes of models attached in the content set the first replica (MuJoCo 4.0)
        for key in (k for c in self.root.children if c.tag == "keyframe" for k in c.children):
            if key.attached_key is not None:
                for attr in ("qpos", "qvel", "ctrl"):
                    key.attached_key[attr] = [(memo.get(id(n), n), v)
                                              for n, v in key.attached_key.get(attr, [])]

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
                   suffixes: list[str], memo: dict[int, Node]) -> None:
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
                    copy = _copy(element, rename, memo if suffix == suffixes[0] else None)
                    if copy.attrib.get("name"):
                        copy.attrib["name"] += suffix
                    sections[-1].children.append(copy)


# ---- <attach> ----------------------------------------------------------------------------------------

# <compiler> settings that change how an attached model's elements compile: MuJoCo compiles them
# with the attached model's own settings; kinedyn compiles one document with one set, so the two
# models must agree (else ModelError). (attribute, MuJoCo's default)
_ATTACH_COMPILER = (("angle", "degree"), ("eulerseq", "xyz"), ("autolimits", "true"),
                    ("inertiafromgeom", "auto"), ("inertiagrouprange", "0 5"), ("boundmass", "0"),
                    ("boundinertia", "0"),
                    ("balanceinertia", "false"), ("settotalmass", "-1"), ("fusestatic", "false"),
                    ("discardvisual", "false"), ("alignfree", "false"))
# asset references in elements, prefixed with the names of the attached model's assets
_ASSET_REFS = ("material", "mesh", "hfield", "texture", "skin")
# asset elements with files, and the <compiler> directory their files are found in first
_ASSET_DIRS = {"mesh": "meshdir", "skin": "meshdir", "texture": "texturedir", "hfield": "meshdir"}
_TEXTURE_FILES = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")


def _compiler_settings(root: Node) -> dict[str, str]:
    out = dict(_ATTACH_COMPILER)
    out.update({"meshdir": "", "texturedir": "", "assetdir": ""})
    for node in root.children:
        if node.tag == "compiler":
            out.update({k: " ".join(v.split()) for k, v in node.attrib.items() if k in out})
    return out


def _same_setting(a: str, b: str) -> bool:
    """Two <compiler> values alike ("0" and "0.0" are the same number)."""
    try:
        return [float(x) for x in a.split()] == [float(x) for x in b.split()]
    except ValueError:
        return a == b


class _Attachments:
    """``<asset><model>`` and ``<attach>`` (xml_native_reader.cc Body "attach", mjs_attach)."""

    def __init__(self, root: Node, model_dir: str, frames, loading: tuple):
        self.root = root
        self.model_dir = model_dir
        self.frames = frames
        self.loading = loading
        self.models: dict[str, tuple[Node, Node, str]] = {}  # name -> (<model>, expanded root, dir)

    def run(self) -> None:
        for section in [c for c in self.root.children if c.tag == "asset"]:
            keep = []
            for node in section.children:
                if node.tag == "model":
                    self._model(node)
                else:
                    keep.append(node)
            section.children = keep
        # document order, before <replicate> (MuJoCo attaches while it reads the tree)
        found: list[tuple[Node, Node]] = []
        todo = [c for c in reversed(self.root.children) if c.tag == "worldbody"]
        while todo:
            parent = todo.pop()
            for c in reversed(parent.children):
                if c.tag == "attach":
                    found.append((parent, c))
                elif c.tag in ("body", "frame", "replicate"):
                    todo.append(c)
        if not found:
            return
        # (the scan above meets siblings last to first: sort back into document order)
        order = {id(n): i for i, n in enumerate(_preorder(self.root))}
        for parent, node in sorted(found, key=lambda pn: order[id(pn[1])]):
            at = next(i for i, c in enumerate(parent.children) if c is node)
            parent.children[at] = self._attach(node)

    def _model(self, node: Node) -> None:
        for attr in node.attrib:
            if attr not in ("name", "file", "content_type"):
                raise node.error(f"Schema violation: unrecognized attribute: '{attr}'", attr)
        file = node.attrib.get("file")
        if not file:
            raise node.error("required attribute missing: 'file'", "file")
        if node.attrib.get("content_type", "text/xml") != "text/xml":
            raise node.error("only text/xml models can be attached", "content_type")
        full = os.path.join(self.model_dir, file)
        key = os.path.normpath(os.path.abspath(full))
        if key in self.loading:
            raise node.error(f"model file '{file}' attaches itself (a cycle of <model> assets)", "file")
        try:
            if not os.path.isfile(full):  # no directories, devices or pipes
                raise FileNotFoundError(2, "No such file")
            data = Path(full).read_bytes()
        except (OSError, ValueError) as err:
            raise node.error(f"Error opening file '{full}': {getattr(err, 'strerror', None) or err}",
                             "file") from None
        label = os.path.normpath(full)
        child = parse_xml(data, file=label)
        if child.tag != "mujoco":
            raise child.error("XML root element of an attached model must be <mujoco>")
        expand(child, full, self.frames, self.loading + (key,))
        name = node.attrib.get("name") or child.attrib.get("model", "")
        if name in self.models:
            raise node.error(f"repeated model name '{name}'", "name")
        self.models[name] = (node, child, os.path.dirname(full))

    def _attach(self, node: Node) -> Node:
        a = node.attrib
        for attr in a:
            if attr not in ("model", "body", "frame", "prefix"):
                raise node.error(f"Schema violation: unrecognized attribute: '{attr}'", attr)
        if "prefix" not in a:
            raise node.error("required attribute missing: 'prefix'", "prefix")
        if "model" not in a:
            return self._self_attach(node)
        if a["model"] not in self.models:
            raise node.error(f"could not find model '{a['model']}'", "model")
        for attr in ("body", "frame"):
            if attr in a and not a[attr]:
                raise node.error(f"empty {attr} name", attr)
        if "body" in a and "frame" in a:
            raise node.error("attach takes a body or a frame, not both", "frame")
        model_node, child, child_dir = self.models[a["model"]]
        prefix = a["prefix"]
        mine, theirs = _compiler_settings(self.root), _compiler_settings(child)
        convert = mine["angle"] != theirs["angle"] or mine["eulerseq"] != theirs["eulerseq"]
        for attr, _ in _ATTACH_COMPILER:
            if attr in ("angle", "eulerseq") and self.frames is not None:
                continue  # converted below: orientations to quaternions, joint angles to the units here
            if not _same_setting(mine[attr], theirs[attr]):
                raise node.error(
                    f"the attached model '{a['model']}' has <compiler {attr}=\"{theirs[attr]}\"> and this "
                    f"model {attr}=\"{mine[attr]}\": kinedyn attaches models with the same compiler "
                    "settings only (MuJoCo compiles each model's elements with its own)", "model")
        # what is attached: the world's contents, or one body or frame (without enclosing frames)
        worlds = [c for c in child.children if c.tag == "worldbody"]
        if "body" in a or "frame" in a:
            tag = "body" if "body" in a else "frame"
            found = _find(worlds, tag, a[tag])
            if found is None:
                raise node.error(f"could not find {tag} '{a[tag]}' in model asset '{a['model']}'", tag)
            subtree, context = found
            content = [subtree]
        else:
            content = [c for w in worlds for c in w.children]
            context = None
        classes, default_copies = self._defaults(child, prefix)
        names: dict[str, set[str]] = {"body": set()}
        todo = list(content)
        while todo:
            n = todo.pop()
            kind = _TREE_KINDS.get(n.tag)
            if kind is not None and n.attrib.get("name"):
                names.setdefault(kind, set()).add(n.attrib["name"])
            todo.extend(n.children)
        assets = self._assets(child, prefix, child_dir, theirs, classes)

        def rename(n: Node) -> None:
            if n.attrib.get("name"):
                n.attrib["name"] = prefix + n.attrib["name"]
            _prefix_element(n, prefix, names, classes, assets)

        frame = Node("frame", {"childclass": classes.get(context or "main", prefix + (context or "main"))},
                     node.line, file=node.file)
        memo: dict[int, Node] = {}  # the attached model's elements -> their copies here
        frame.children = [_copy(c, rename, memo) for c in content]
        if convert:
            _AngleConversion(self.frames, theirs, mine, default_copies).run(frame)
        whole = "body" not in a and "frame" not in a
        self._sections(child, prefix, names, classes, assets, whole, memo)
        return frame

    def _self_attach(self, node: Node) -> Node:
        """``<attach body|frame prefix>`` without ``model``: a copy of a body or frame of this model
        declared before it, with what refers to it (MuJoCo 4.0's self-attachment). Classes and
        assets are this model's; keyframes describe the whole model and are not copied."""
        a = node.attrib
        tag = "body" if "body" in a else "frame" if "frame" in a else None
        if tag is None:
            raise node.error("either 'body' or 'frame' attribute must be specified for self-attach", "body")
        if "body" in a and "frame" in a:
            raise node.error("attach takes a body or a frame, not both", "frame")
        prefix, name = a["prefix"], a[tag]
        found, context, existing = None, None, set()
        todo = [(c, None) for c in reversed(self.root.children) if c.tag == "worldbody"]
        while todo:  # document order, up to the <attach> (MuJoCo has read no further)
            n, ctx = todo.pop()
            if n is node:
                break
            if n.tag == tag and n.attrib.get("name") == prefix + name:
                raise node.error(f"cannot self-attach: element {prefix + name} already exists", tag)
            if n.tag == tag and n.attrib.get("name") == name and found is None:
                found, context = n, ctx
            if n.tag in _TREE_KINDS and n.attrib.get("name"):
                existing.add(n.attrib["name"])
            inner = n.attrib.get("childclass", ctx) if n.tag in ("body", "frame") else ctx
            todo.extend((c, inner) for c in reversed(n.children))
        if found is None:
            raise node.error(f"could not find {tag} '{name}' in the current model for self-attachment", tag)
        if any(n is node for n in _preorder(found)):
            raise node.error(f"cannot attach {tag} '{name}' inside itself", tag)
        names: dict[str, set[str]] = {}
        for n in _preorder(found):
            kind = _TREE_KINDS.get(n.tag)
            if kind is not None and n.attrib.get("name"):
                names.setdefault(kind, set()).add(n.attrib["name"])

        def rename(n: Node) -> None:
            if n.attrib.get("name"):
                n.attrib["name"] = prefix + n.attrib["name"]
            _prefix_element(n, prefix, names, {}, set())

        frame = Node("frame", {"childclass": context or "main"}, node.line, file=node.file)
        frame.children = [_copy(found, rename)]
        tree_kinds = set(_TREE_KINDS.values())
        for section_tag, own_kind in _REFERRING_SECTIONS:
            sections = [c for c in self.root.children if c.tag == section_tag]
            copies = []
            for element in (e for sec in sections for e in sec.children):
                refs = [(n.attrib[attr], kind) for n, attr, kind in _references(element)]
                inside = [value in names.get(kind, ()) for value, kind in refs]
                if any(inside) and all(ins or kind not in tree_kinds for ins, (_, kind) in zip(inside, refs,
                                                                                             strict=True)):
                    if own_kind and element.attrib.get("name"):
                        names.setdefault(own_kind, set()).add(element.attrib["name"])
                    copies.append(_copy(element, rename))
            if copies:
                sections[-1].children.extend(copies)
        return frame

    def _defaults(self, child: Node, prefix: str) -> tuple[dict[str, str], list[Node]]:
        """The attached model's classes, renamed, as roots of their own; returns their names here
        by their old names, and the copied sections.

        Its own top-level sections become one root class ``prefix + "main"``; the roots of the
        models it attached itself stay roots (renamed again). A class keeps its own defaults even
        where its prefixed name is already a class here (an empty prefix, or the same file's
        defaults brought in twice): MuJoCo 4.0 keeps each attached spec's classes apart and
        accepts that, so the later one is given a name of its own (``visual~2``)."""
        sections = [c for c in child.children if c.tag == "default"]
        taken = _class_names(c for c in self.root.children if c.tag == "default") | {"main"}
        classes: dict[str, str] = {}
        for old in ["main", *sorted(_class_names(sections) - {"main"})]:
            new, k = prefix + old, 1
            while new in taken:
                k += 1
                new = f"{prefix}{old}~{k}"
            taken.add(new)
            classes[old] = new

        def rename(n: Node) -> None:
            if n.tag == "default":
                n.attrib["class"] = classes[n.attrib.get("class", "main")]
            for attr in _ASSET_REFS:
                if attr in n.attrib:
                    n.attrib[attr] = prefix + n.attrib[attr]

        own = [c for c in sections if not c.root_class] or [Node("default", {}, 0)]
        copies: list[Node] = []
        for section in own:
            copy = _copy(section, rename)
            copy.root_class = True  # later top-level sections add to that model's "main"
            self.root.children.append(copy)
            copies.append(copy)
        for section in sections:
            if section.root_class:
                copy = _copy(section, rename)
                copy.root_class = True
                self.root.children.append(copy)
                copies.append(copy)
        return classes, copies

    def _assets(self, child: Node, prefix: str, child_dir: str, settings: dict,
                classes: dict[str, str]) -> set[str]:
        """The attached model's assets (all of them, as MuJoCo 4.0), renamed; their files made
        absolute with that model's directories. Returns their old names."""
        names: set[str] = set()
        out: list[Node] = []
        for section in (c for c in child.children if c.tag == "asset"):
            for n in section.children:
                copy = _copy(n, lambda _: None)
                name = copy.attrib.get("name")
                if not name and copy.attrib.get("file"):  # named after its file, as by MuJoCo's parser
                    name = os.path.splitext(os.path.basename(copy.attrib["file"]))[0]
                if name:
                    names.add(name)
                    copy.attrib["name"] = prefix + name
                if n.tag in _ASSET_DIRS:
                    sub = settings.get(_ASSET_DIRS[n.tag] or "", "") or settings["assetdir"]
                    for attr in _TEXTURE_FILES:
                        if copy.attrib.get(attr):
                            path, _ = asset_path(n, sub, copy.attrib[attr], child_dir)
                            copy.attrib[attr] = os.path.abspath(path)
                out.append(copy)
        for copy in out:
            for attr in _ASSET_REFS:
                if attr in copy.attrib and copy.attrib[attr] in names:
                    copy.attrib[attr] = prefix + copy.attrib[attr]
            if copy.attrib.get("class"):
                copy.attrib["class"] = classes.get(copy.attrib["class"], prefix + copy.attrib["class"])
            elif copy.tag in ("mesh", "material", "texture"):  # the attached model's own "main"
                copy.attrib["class"] = classes["main"]
        if out:
            mine = [c for c in self.root.children if c.tag == "asset"]
            if not mine:
                mine = [Node("asset", {}, 0)]
                self.root.children.append(mine[0])
            mine[-1].children.extend(out)
        return names

    def _sections(self, child: Node, prefix: str, names: dict, classes: dict, assets: set,
                  whole: bool, memo: dict[int, Node]) -> None:
        """The attached model's elements outside the tree that refer only to what is attached
        (all of them when the whole model is), renamed, at the end of this model's sections;
        then its keyframes."""
        tree_kinds = set(_TREE_KINDS.values())
        for tag, own_kind in _REFERRING_SECTIONS:
            copies = []
            for section in (c for c in child.children if c.tag == tag):
                for element in section.children:
                    refs = [(n.attrib[attr], kind) for n, attr, kind in _references(element)]
                    ok = all(value in names.get(kind, ()) for value, kind in refs
                             if kind in tree_kinds or kind == own_kind or kind in ("tendon", "actuator"))
                    if not (ok and (refs or whole)):
                        continue
                    if own_kind and element.attrib.get("name"):
                        names.setdefault(own_kind, set()).add(element.attrib["name"])
                    copies.append(element)

            def rename(n: Node) -> None:
                _prefix_element(n, prefix, names, classes, assets)

            copies = [_copy(e, rename, memo) for e in copies]
            for copy in copies:
                if copy.attrib.get("name"):
                    copy.attrib["name"] = prefix + copy.attrib["name"]
            if copies:
                mine = [c for c in self.root.children if c.tag == tag]
                if not mine:
                    mine = [Node(tag, {}, 0)]
                    self.root.children.append(mine[0])
                mine[-1].children.extend(copies)
        keys = [k for c in child.children if c.tag == "keyframe" for k in c.children if k.tag == "key"]
        if keys:
            self._keys(child, keys, prefix, memo)

    def _keys(self, child: Node, keys: list[Node], prefix: str, memo: dict[int, Node]) -> None:
        """The attached model's keyframes, once each, their values by attached joint and actuator
        (the compiler places them; kinedyn's keyframes are whole-model vectors)."""
        joints, actuators = _layout(child)
        out = []
        for key in keys:
            for attr in key.attrib:
                if attr in ("act", "mpos", "mquat") and key.attrib[attr].strip():
                    raise key.error(f"the {attr} of a keyframe of an attached model is not supported yet",
                                    attr)
            values: dict[str, list] = {}
            for attr, width in (("qpos", 0), ("qvel", 1)):
                vector = parse_floats(key, attr, key.attrib.get(attr, ""))
                if not vector:
                    continue
                need = sum(sizes[width] for _, sizes in joints)
                if len(vector) != need:
                    raise key.error(f"keyframe '{key.attrib.get('name', '')}': invalid {attr} size, expected "
                                    f"{need}, got {len(vector)}", attr)
                values[attr], adr = [], 0
                for joint, sizes in joints:
                    if id(joint) in memo:
                        values[attr].append((memo[id(joint)], vector[adr:adr + sizes[width]]))
                    adr += sizes[width]
            ctrl = parse_floats(key, "ctrl", key.attrib.get("ctrl", ""))
            if ctrl:
                if len(ctrl) != len(actuators):
                    raise key.error(f"keyframe '{key.attrib.get('name', '')}': invalid ctrl size, expected "
                                    f"{len(actuators)}, got {len(ctrl)}", "ctrl")
                values["ctrl"] = [(memo[id(a)], v) for a, v in zip(actuators, ctrl, strict=True)
                                  if id(a) in memo]
            attrib = {a: v for a, v in key.attrib.items() if a in ("name", "time")}
            if attrib.get("name"):
                attrib["name"] = prefix + attrib["name"]
            copy = Node("key", attrib, key.line, file=key.file)
            copy.attached_key = values
            out.append(copy)
        mine = [c for c in self.root.children if c.tag == "keyframe"]
        if not mine:
            mine = [Node("keyframe", {}, 0)]
            self.root.children.append(mine[0])
        mine[-1].children.extend(out)


_JOINT_SIZES = {"free": (7, 6), "ball": (4, 3), "hinge": (1, 1), "slide": (1, 1)}


def _layout(model: Node) -> tuple[list[tuple[Node, tuple[int, int]]], list[Node]]:
    """A model's joints in tree order with their (qpos, qvel) sizes, and its actuators: the layout
    of its keyframes. Joint types come from ``type``, else from
    the default class chain (class, else the enclosing childclass), else hinge."""
    parents: dict[str, str | None] = {}
    types: dict[str, str] = {}
    for section in (c for c in model.children if c.tag == "default"):
        todo = [(section, None)]
        while todo:
            node, parent = todo.pop()
            name = node.attrib.get("class", "main") if parent is not None else "main"
            if parent is not None or name not in parents:
                parents[name] = parent
            for c in node.children:
                if c.tag == "joint" and "type" in c.attrib:
                    types[name] = c.attrib["type"].strip()
            todo.extend((c, name) for c in node.children if c.tag == "default")

    def class_type(cls: str) -> str:
        while cls is not None:
            if cls in types:
                return types[cls]
            cls = parents.get(cls)
        return "hinge"

    joints = []
    # bodies depth first, each body's joints (also those in its frames) before its child bodies,
    # as MuJoCo numbers them
    todo = [(c, "main") for c in reversed([w for w in model.children if w.tag == "worldbody"])]
    while todo:
        body, context = todo.pop()
        context = body.attrib.get("childclass", context)
        children, stack = [], [(c, context) for c in reversed(body.children)]
        while stack:
            node, ctx = stack.pop()
            if node.tag == "frame":
                inner = node.attrib.get("childclass", ctx)
                stack.extend((c, inner) for c in reversed(node.children))
            elif node.tag == "body":
                children.append((node, ctx))
            elif node.tag in ("joint", "freejoint"):
                kind = "free" if node.tag == "freejoint" else node.attrib.get("type", "").strip() or \
                    class_type(node.attrib.get("class", ctx))
                joints.append((node, _JOINT_SIZES.get(kind, (1, 1))))
        todo.extend(reversed(children))
    actuators = [a for c in model.children if c.tag == "actuator" for a in c.children]
    return joints, actuators


def _prefix_element(n: Node, prefix: str, names: dict, classes: dict, assets: set) -> None:
    """References of one copied element of an attached model, prefixed (its name: by the caller);
    ``classes`` maps the attached model's class names to theirs here (:meth:`_Attachments._defaults`)."""
    for attr in ("class", "childclass"):
        if n.attrib.get(attr) in classes:
            n.attrib[attr] = classes[n.attrib[attr]]
    for attr in _ASSET_REFS:
        if n.attrib.get(attr) in assets:
            n.attrib[attr] = prefix + n.attrib[attr]
    for attr, value in list(n.attrib.items()):
        kind = _reference_kind(n, attr)
        if kind is not None and value in names.get(kind, ()):
            n.attrib[attr] = prefix + value
    if n.tag in ("camera", "light") and n.attrib.get("target") in names.get("body", ()):
        n.attrib["target"] = prefix + n.attrib["target"]


def _find(worlds: list[Node], tag: str, name: str) -> tuple[Node, str | None] | None:
    """The ``tag`` named ``name`` in the trees ``worlds`` and the class its children default to there."""
    todo = [(w, None) for w in reversed(worlds)]
    while todo:
        n, context = todo.pop()
        if n.tag == tag and n.attrib.get("name") == name and n.tag != "worldbody":
            return n, context
        if n.tag in ("body", "frame") and n.attrib.get("childclass"):
            context = n.attrib["childclass"]
        todo.extend((c, context) for c in reversed(n.children))
    return None


class _AngleConversion:
    """An attached model written with other ``angle`` units or ``eulerseq`` than this one, made to
    compile here as MuJoCo compiles it with its own settings: every ``euler`` and ``axisangle``
    (elements and default classes) becomes the ``quat`` it stands for, and the angles of hinge
    and ball joints (``range``; ``ref``, ``springref`` of hinges), resolved through the default
    classes, are written on each joint in this model's units."""

    def __init__(self, frames, theirs: dict, mine: dict, defaults: list[Node]):
        self.frames = frames
        self.degree = theirs["angle"] != "radian"
        self.eulerseq = theirs["eulerseq"]
        self.scale = 1.0 if self.degree == (mine["angle"] != "radian") else (
            math.pi / 180.0 if self.degree else 180.0 / math.pi)
        self.defaults = defaults
        # class -> (parent class, joint defaults)
        self.classes: dict[str, tuple[str | None, dict]] = {}
        for section in defaults:
            todo = [(section, None)]
            while todo:
                n, parent = todo.pop()
                name = n.attrib.get("class", "main")
                joint = next((c.attrib for c in n.children if c.tag == "joint"), {})
                if name in self.classes and parent is None:  # a further section of the same root
                    self.classes[name][1].update(joint)
                else:
                    self.classes[name] = (parent, dict(joint))
                todo.extend((c, name) for c in n.children if c.tag == "default")

    def _joint_default(self, cls: str | None, attr: str) -> str | None:
        while cls is not None and cls in self.classes:
            parent, joint = self.classes[cls]
            if attr in joint:
                return joint[attr]
            cls = parent
        return None

    def _orientation(self, n: Node) -> None:
        given = [k for k in ("quat", "axisangle", "xyaxes", "zaxis", "euler") if k in n.attrib]
        if len(given) != 1 or given[0] not in ("euler", "axisangle") or n.tag == "replicate":
            return  # none to convert, or an error the compiler reports
        attr = given[0]
        values = parse_floats(n, attr, n.attrib[attr])
        quat, err = self.frames.resolve_orientation({attr: values}, self.degree, self.eulerseq)
        if quat is None or err or len(values) != (3 if attr == "euler" else 4):
            return
        del n.attrib[attr]
        n.attrib["quat"] = " ".join(map(_fmt, quat))

    def run(self, frame: Node) -> None:
        for section in self.defaults:
            for n in _preorder(section):
                self._orientation(n)
        todo = [(c, frame.attrib.get("childclass")) for c in frame.children]
        while todo:
            n, context = todo.pop()
            self._orientation(n)
            if n.tag in ("body", "frame"):
                inner = n.attrib.get("childclass", context)
                todo.extend((c, inner) for c in n.children)
            elif n.tag == "joint" and self.scale != 1.0:
                cls = n.attrib.get("class", context)
                jtype = (n.attrib.get("type") or self._joint_default(cls, "type") or "hinge").strip()
                limited = (n.attrib.get("limited") or self._joint_default(cls, "limited") or "auto").strip()
                for attr in ("range", "ref", "springref") if jtype == "hinge" else \
                        ("range",) if jtype == "ball" else ():
                    if attr == "range" and limited == "false":
                        continue  # the compiler keeps an unused range as written
                    text = n.attrib.get(attr, self._joint_default(cls, attr))
                    if text is not None:
                        values = parse_floats(n, attr, text)
                        n.attrib[attr] = " ".join(_fmt(v * self.scale) for v in values)
