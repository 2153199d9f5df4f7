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
* ``xmlns`` and ``prefix:name`` attributes of the root ``<mujoco>`` (an XML schema reference,
  as MuJoCo's documentation suggests) are accepted and dropped, as by MuJoCo.
"""

from __future__ import annotations

import os
from pathlib import Path

from kinedyn.xml.mjcf import Node, parse_xml

__all__ = ["expand"]


def expand(root: Node, path: str | Path | None = None) -> Node:
    """Expand the meta-elements of the document ``root`` read from ``path`` (None: a string)."""
    model_dir = os.path.dirname(os.fspath(path)) if path is not None else ""
    included = {os.path.normpath(os.fspath(path))} if path is not None else set()
    _Includes(model_dir, included).run(root)
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
