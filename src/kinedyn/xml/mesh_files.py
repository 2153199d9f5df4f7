"""Mesh files -> raw vertices and faces, as MuJoCo 4.0's decoders hand them to the compiler.

Formats (chosen by ``content_type`` or else the file extension, case-insensitive, as
MuJoCo's ``GetAssetContentType``):

* STL (``model/stl``): binary STL (fixed 50-byte records, read with NumPy). MuJoCo keeps
  every triangle and removes repeated vertices (first occurrence keeps its place, faces re-indexed); the
  vertices are single precision. MuJoCo 4.0 refuses ASCII STL ("perhaps this is an ASCII
  file?"); kinedyn reads it too (trimesh), with the same float32 vertices and de-duplication
  (a documented extension, docs/deviations.md).
* OBJ (``model/obj``): vertices in file order, not de-duplicated; polygons are triangulated
  as tinyobjloader (MuJoCo's OBJ reader) does: a quad along its shorter diagonal (the
  second one on a tie), larger polygons by its ear clipping from the first vertex. trimesh is not
  used here: it triangulates quads along the other diagonal and regroups faces, so MuJoCo's
  ``mesh_face`` could not be reproduced.
* MSH (``model/vnd.mujoco.msh``): MuJoCo's binary format (4 int32 counts, float32 vertices,
  normals, texture coordinates, int32 faces), parsed with NumPy; the size checks are
  MuJoCo's (``mjCMesh::LoadMSH``).
* COLLADA (``model/vnd.collada+xml``, ``.dae``; not a MuJoCo format, common in URDF packages):
  read with trimesh and pycollada, every geometry of the scene placed by its node transforms
  and concatenated; the document's length unit (``<asset><unit meter="..."/>``, metres per unit,
  1 if absent) applied, as ROS's rviz and Gazebo apply it; ``<up_axis>`` ignored, as rviz and
  Pinocchio (coal) ignore it; float32 vertices de-duplicated as for STL.

This layer knows bytes, no physics: :mod:`kinedyn.compiler.mesh` does the processing.
Every failure is a ``ValueError`` with a message; the compiler turns it into a ModelError
naming the ``<mesh>`` element.
"""

from __future__ import annotations

import io
import math
import struct
from dataclasses import dataclass

import numpy as np

CONTENT_TYPES = {"stl": "model/stl", "obj": "model/obj", "msh": "model/vnd.mujoco.msh",
                 "dae": "model/vnd.collada+xml"}
# MuJoCo's STL decoder accepts 1 to this many triangles
STL_MAX_FACES = 200_000


@dataclass
class RawMesh:
    """What a decoder returns: float32 vertices (n, 3), int faces (m, 3) (m may be 0)."""

    vert: np.ndarray
    face: np.ndarray


def content_type(filename: str, given: str | None) -> str:
    """The asset type: ``given`` (``content_type``) if any, else from the extension."""
    if given:
        if given not in CONTENT_TYPES.values():
            raise ValueError(f"unsupported content_type '{given}' (use one of "
                             f"{', '.join(sorted(CONTENT_TYPES.values()))})")
        return given
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if ext not in CONTENT_TYPES:
        raise ValueError(f"unknown mesh file type '{ext}' in '{filename}' (MuJoCo reads .stl, .obj and .msh; "
                         "kinedyn also .dae)")
    return CONTENT_TYPES[ext]


def read_mesh(data: bytes, ctype: str, name: str) -> RawMesh:
    """Decode the bytes of one mesh file of type ``ctype``; ``name`` is used in messages."""
    if ctype == "model/stl":
        return _read_stl(data, name)
    if ctype == "model/obj":
        return _read_obj(data, name)
    if ctype == "model/vnd.collada+xml":
        return _read_dae(data, name)
    return _read_msh(data, name)


def dedup_vertices(vert: np.ndarray, face: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove repeated vertices, keeping first occurrences in order (mjCMesh::ProcessVertices)."""
    if len(vert) == 0:
        return vert, face
    key = np.ascontiguousarray(vert + np.float32(0.0))  # -0.0 and 0.0 compare equal: one key
    _, first, inverse = np.unique(key.view(np.dtype((np.void, 12))).ravel(), return_index=True,
                                  return_inverse=True)
    if len(first) == len(vert):
        return vert, face
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    new_index = rank[inverse.ravel()]
    return vert[first[order]], new_index[face]


def _read_dae(data: bytes, name: str) -> RawMesh:
    import trimesh

    try:
        scene = trimesh.load(io.BytesIO(data), file_type="dae", force="scene")
        mesh = scene.to_geometry() if hasattr(scene, "to_geometry") else scene.dump(concatenate=True)
    except ImportError as err:
        raise ValueError(f"cannot read COLLADA file '{name}': {err} (pip install pycollada)") from None
    except Exception as err:  # trimesh and pycollada raise many kinds on bad bytes
        raise ValueError(f"cannot read COLLADA file '{name}': {err}") from None
    vert = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float64).reshape(-1, 3)
    vert = (vert * collada_unit(data, name)).astype(np.float32)
    face = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    if len(face) == 0:
        raise ValueError(f"COLLADA file '{name}' holds no triangles")
    if not np.isfinite(vert).all():
        raise ValueError(f"COLLADA file '{name}' has a vertex coordinate that is not finite")
    vert, face = dedup_vertices(vert, face)
    return RawMesh(vert, face.astype(np.int32))


def collada_unit(data: bytes, name: str) -> float:
    """Metres per length unit of a COLLADA document: ``meter`` of the ``<unit>`` in the ``<asset>`` of
    its root ``<COLLADA>`` element, 1 without one. This is the scale rviz (``getMeshUnitRescale``) and
    Gazebo give a ``.dae`` mesh of a URDF; the ``<asset>`` of inner elements is not read (nor by them).
    trimesh leaves the unit to the caller and coal (Pinocchio's mesh loader) drops it with the root
    node's transform. A unit that is not a positive finite number is an error."""
    import xml.etree.ElementTree as ET

    def local(tag: str) -> str:
        return tag.rsplit("}", 1)[-1]

    try:
        depth, in_asset = 0, False
        for event, elem in ET.iterparse(io.BytesIO(data), events=("start", "end")):
            if event == "end":
                depth -= 1
                if depth == 1 and in_asset:
                    break  # the root's first <asset> read: no unit
                if depth == 1:
                    elem.clear()
                continue
            depth += 1
            if depth == 2 and local(elem.tag) == "asset":
                in_asset = True
            if depth == 3 and in_asset and local(elem.tag) == "unit":
                text = elem.attrib.get("meter")
                if text is None:
                    return 1.0
                try:
                    unit = float(text)
                except ValueError:
                    unit = math.nan
                if not (math.isfinite(unit) and unit > 0):
                    raise ValueError(f"COLLADA file '{name}': <unit meter={text!r}> is not a positive number")
                return unit
    except ET.ParseError as err:
        raise ValueError(f"cannot read the <asset> of COLLADA file '{name}': {err}") from None
    return 1.0


# a binary STL triangle record: normal, 3 corners, attribute byte count
_STL_RECORD = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attr", "<u2")])


def _read_stl(data: bytes, name: str) -> RawMesh:
    binary = len(data) >= 84 and 84 + 50 * struct.unpack_from("<I", data, 80)[0] == len(data)
    if binary:
        # fixed 50-byte records: NumPy reads them directly (importing trimesh costs more than
        # parsing most robot meshes)
        n = struct.unpack_from("<I", data, 80)[0]
        vert = np.frombuffer(data, dtype=_STL_RECORD, count=n, offset=84)["corners"].reshape(-1, 3)
        vert = vert.astype(np.float32)
        face = np.arange(3 * n, dtype=np.int64).reshape(-1, 3)
    elif data.lstrip()[:5].lower() == b"solid":
        from trimesh.exchange import stl as trimesh_stl  # ASCII STL (a kinedyn extension)

        try:
            res = trimesh_stl.load_stl(io.BytesIO(data))
        except Exception as err:  # trimesh raises many kinds on bad bytes
            raise ValueError(f"cannot read STL file '{name}': {err}") from None
        vert = np.asarray(res["vertices"], dtype=np.float32).reshape(-1, 3)
        face = np.asarray(res["faces"], dtype=np.int64).reshape(-1, 3)
    elif len(data) < 84:
        raise ValueError(f"STL file '{name}' is too short")
    else:
        raise ValueError(f"STL file '{name}' has the wrong size for its number of triangles")
    if not 1 <= len(face) <= STL_MAX_FACES:
        raise ValueError(f"number of faces should be between 1 and {STL_MAX_FACES} in STL file '{name}'")
    if not np.isfinite(vert).all():
        raise ValueError(f"STL file '{name}' has a vertex coordinate that is not finite")
    vert, face = dedup_vertices(vert, face)
    return RawMesh(vert, face.astype(np.int32))


def _obj_index(token: str, nvert: int, name: str) -> int:
    text = token.split("/", 1)[0]
    try:
        i = int(text)
    except ValueError:
        raise ValueError(f"bad face index '{token}' in OBJ file '{name}'") from None
    if i == 0:
        raise ValueError(f"face index 0 in OBJ file '{name}' (indices start at 1)")
    return i - 1 if i > 0 else nvert + i


def _inside(px, py, tx, ty) -> bool:
    """Crossing-number point-in-triangle test (tinyobjloader's pnpoly)."""
    c = False
    j = 2
    for i in range(3):
        if ((ty[i] > py) != (ty[j] > py)) and (
                px < (tx[j] - tx[i]) * (py - ty[i]) / (ty[j] - ty[i]) + tx[i]):
            c = not c
        j = i
    return c


def _ear_clip(idx: list[int], verts: list) -> list[tuple[int, int, int]]:
    """Triangulate a polygon as tinyobjloader does: ear clipping in the plane of its first
    corner's dominant axes, starting from the first vertex (a triangle's fan for convex ones)."""
    if len(idx) == 3:
        return [tuple(idx)]
    v = [np.float32(verts[i]).astype(float) for i in idx]
    n = len(idx)
    axes = (1, 2)
    for k in range(n):
        v0, v1, v2 = v[k], v[(k + 1) % n], v[(k + 2) % n]
        e0, e1 = v1 - v0, v2 - v1
        cx = abs(e0[1] * e1[2] - e0[2] * e1[1])
        cy = abs(e0[2] * e1[0] - e0[0] * e1[2])
        cz = abs(e0[0] * e1[1] - e0[1] * e1[0])
        eps = float(np.finfo(np.float32).eps)
        if cx > eps or cy > eps or cz > eps:
            if not (cx > cy and cx > cz):
                axes = (0, 1) if (cz > cx and cz > cy) else (0, 2)
            break
    xy = {i: (float(p[axes[0]]), float(p[axes[1]])) for i, p in zip(idx, v, strict=True)}
    area = 0.0
    for k in range(n):
        x0, y0 = xy[idx[k]]
        x1, y1 = xy[idx[(k + 1) % n]]
        area += (x0 * y1 - x1 * y0) * 0.5
    remaining = list(idx)
    out = []
    guess, rounds = 0, 10
    while len(remaining) > 3 and rounds > 0:
        npoly = len(remaining)
        if guess >= npoly:
            rounds -= 1
            guess -= npoly
        ind = [remaining[(guess + k) % npoly] for k in range(3)]
        tx = [xy[i][0] for i in ind]
        ty = [xy[i][1] for i in ind]
        cross = (tx[1] - tx[0]) * (ty[2] - ty[1]) - (ty[1] - ty[0]) * (tx[2] - tx[1])
        if cross * area < 0.0:
            guess += 1
            continue
        if any(_inside(*xy[remaining[(guess + k) % npoly]], tx, ty) for k in range(3, npoly)):
            guess += 1
            continue
        out.append(tuple(ind))
        del remaining[(guess + 1) % npoly]
    if len(remaining) == 3:
        out.append(tuple(remaining))
    return out


def _read_obj(data: bytes, name: str) -> RawMesh:
    verts: list[list[float]] = []
    faces: list[tuple[int, int, int]] = []
    # MuJoCo keeps the faces of tinyobjloader's first shape only: a ``g`` or ``o`` line after faces
    # closes that shape, and the faces of later groups are dropped (vertices are all kept).
    first_shape_done = False
    text = data.decode("utf-8", errors="replace")
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] in ("g", "o"):
            first_shape_done = first_shape_done or bool(faces)
        elif parts[0] == "v":
            if len(parts) < 4:
                raise ValueError(f"vertex with fewer than 3 coordinates in OBJ file '{name}'")
            try:
                verts.append([float(x) for x in parts[1:4]])
            except ValueError:
                raise ValueError(f"bad vertex '{line.strip()}' in OBJ file '{name}'") from None
        elif parts[0] == "f" and not first_shape_done:
            idx = [_obj_index(t, len(verts), name) for t in parts[1:]]
            if len(idx) < 3:
                raise ValueError(f"face with fewer than 3 vertices in OBJ file '{name}'")
            if len(idx) == 4:
                # tinyobjloader: split a quad along its shorter diagonal (1-3 on a tie)
                v = [np.array(verts[i], dtype=np.float32) if 0 <= i < len(verts) else None for i in idx]
                if any(x is None for x in v):
                    raise ValueError(f"face index out of range in OBJ file '{name}'")
                d02, d13 = v[2] - v[0], v[3] - v[1]
                if float(d02 @ d02) < float(d13 @ d13):
                    faces += [(idx[0], idx[1], idx[2]), (idx[0], idx[2], idx[3])]
                else:
                    faces += [(idx[0], idx[1], idx[3]), (idx[1], idx[2], idx[3])]
            else:
                if any(not 0 <= i < len(verts) for i in idx):
                    raise ValueError(f"face index out of range in OBJ file '{name}'")
                faces += _ear_clip(idx, verts)
    vert = np.array(verts, dtype=np.float32).reshape(-1, 3)
    if not np.isfinite(vert).all():
        raise ValueError(f"OBJ file '{name}' has a vertex coordinate that is not finite")
    return RawMesh(vert, np.array(faces, dtype=np.int64).reshape(-1, 3).astype(np.int32)
                   if faces else np.zeros((0, 3), np.int32))


def _read_msh(data: bytes, name: str) -> RawMesh:
    if not data:
        raise ValueError(f"MSH file '{name}' is empty")
    if len(data) < 16:
        raise ValueError(f"missing header in MSH file '{name}'")
    nv, nn, nt, nf = struct.unpack_from("<4i", data, 0)
    if nv < 4 or nf < 0 or nn < 0 or nt < 0 or (nn > 0 and nn != nv) or (nt > 0 and nt != nv):
        raise ValueError(f"invalid sizes in MSH file '{name}'")
    if len(data) != 16 + 12 * nv + 12 * nn + 8 * nt + 12 * nf:
        raise ValueError(f"unexpected file size in MSH file '{name}'")
    vert = np.frombuffer(data, dtype="<f4", count=3 * nv, offset=16).reshape(nv, 3).astype(np.float32)
    off = 16 + 12 * nv + 12 * nn + 8 * nt
    face = np.frombuffer(data, dtype="<i4", count=3 * nf, offset=off).reshape(nf, 3).astype(np.int32)
    if not np.isfinite(vert).all():
        raise ValueError(f"MSH file '{name}' has a vertex coordinate that is not finite")
    return RawMesh(vert, face)


__all__ = ["CONTENT_TYPES", "RawMesh", "content_type", "dedup_vertices", "read_mesh"]
