"""Mesh assets: ``<asset><mesh>`` -> processed vertices, faces, convex hull and mass properties.

Mirrors MuJoCo 4.0's mjCMesh (src/user/user_mesh.cc): ``TryCompile`` (load, check),
``Process`` (half-edge orientation check, convex hull ``MakeGraph``, left-handed winding,
``ApplyTransformations`` of refpos/refquat/scale, ``ComputeFaceCentroid``,
``ComputeVolume`` / ``ComputeSurfaceArea``, ``ComputeInertia``, principal axes with
mjuu_eig3, the equivalent inertia box, re-centring and re-orienting ``Rotate``) and
what mjCGeom::Compile takes from a mesh (volume, inertia box, the mesh frame, the
vertex bounding box ``aamm``).

The per-face sums are accumulated in face order (``np.cumsum``, not NumPy's pairwise
``sum``) with MuJoCo's operation order, so volumes, centres of mass and inertias agree
with MuJoCo's to the last bits; that matters for meshes with (near-)equal principal
moments, where the principal frame MuJoCo picks depends on the rounding.

The convex hull is qhull's, with MuJoCo's options "Qt" and, for ``maxhullvert``, "Q9
TA<n-4>": read from libqhull_r's own structures (compiler.qhull), ``mesh_graph`` equals
MuJoCo's (qhull's vertex, edge and facet order); without that library, scipy's ConvexHull
(the same qhull) gives the same faces with the hull vertices in ascending order. The hull
polygons (``make_polygons``) come in the order of MuJoCo's hash map (qhull.libcxx_map_order).

Processed meshes are cached per process, keyed by a hash of the file's bytes (or of
the inline data) and every attribute that changes the result, so models that share
meshes, or a model loaded again, skip the processing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kinedyn.compiler import frames as fr
from kinedyn.compiler import inertial as inr
from kinedyn.compiler import qhull
from kinedyn.engine.types import GeomType
from kinedyn.xml import mesh_files
from kinedyn.xml.mjcf import Node, asset_path, typed_attrs

MINVAL = 1e-15  # mjMINVAL
INERTIA_MODES = ("convex", "exact", "legacy", "shell")
# mjs_defaultMesh in MuJoCo 4.0 (read from the binary: MjSpec().add_mesh().inertia)
MESH_DEFAULTS = dict(scale=[1.0, 1.0, 1.0], refpos=[0.0, 0.0, 0.0], refquat=[1.0, 0.0, 0.0, 0.0],
                     maxhullvert=-1, inertia="legacy", smoothnormal="false")

_CACHE: dict[tuple, ProcessedMesh] = {}
_CACHE_MAX = 512


class MeshError(ValueError):
    """A mesh that MuJoCo's compiler rejects; the caller names the element."""


@dataclass
class ProcessedMesh:
    """The compiled mesh (the arrays are never modified once built: the cache shares them)."""

    vert: np.ndarray             # (n, 3) float32, centred at the CoM, principal axes
    face: np.ndarray             # (m, 3) int32, MuJoCo's winding
    pos: list                    # mesh_pos: the CoM in the (transformed) input frame
    quat: list                   # mesh_quat: the principal axes
    volume: float                # volume, or surface area for inertia="shell" (GetVolumeRef)
    boxsz: list                  # half-sizes of the equivalent inertia box
    aamm: list                   # vertex bounds (min xyz, max xyz) in double precision
    raw_vert: np.ndarray         # (n, 3) float64: the vertices the hull is built from
    graph: np.ndarray | None = None  # the hull graph, once computed (hull())
    faceless: bool = False       # no faces were given: they are the hull's (MuJoCo keeps its graph)
    dvert: np.ndarray | None = None  # (n, 3) float64: ``vert`` before rounding (polygon normals)
    lefthand: bool = False       # a negative scale: faces (the hull's too) turned as MuJoCo does

    polygons: list | None = None  # hull polygons (make_polygons), with the hull

    def hull(self, maxhullvert: int) -> np.ndarray:
        if self.polygons is None:
            graph = self.graph if self.graph is not None else make_graph(self.raw_vert, maxhullvert)[0]
            polygons = make_polygons(graph, self.raw_vert)
            if self.lefthand:
                # MuJoCo 4.0 turns the hull's faces with the mesh's (swaps their last two
                # vertices) and reverses each polygon from its first vertex on (found against
                # the binary); the polygons are merged from the faces before the swap
                graph = graph.copy()
                nv, nf = int(graph[0]), int(graph[1])
                faces = graph[2 + 3 * nv + 3 * nf:].reshape(nf, 3)
                faces[:, [1, 2]] = faces[:, [2, 1]]
                graph.flags.writeable = False
                polygons = [[p[0], *p[:0:-1]] for p in polygons]
            self.polygons = polygons
            self.graph = graph
        return self.graph


@dataclass
class MeshAsset:
    """One ``<mesh>`` element: its attributes and, once compiled, its :class:`ProcessedMesh`."""

    node: Node
    attrs: dict
    name: str
    id: int
    file: Path | None = None
    processed: ProcessedMesh | None = None
    needhull: bool = False
    geoms: list = field(default_factory=list)

    def error(self, message: str, attribute: str | None = None):
        return self.node.error(message, attribute)


# ---- reading <asset> ----------------------------------------------------------------------------

def mesh_dir(sections: dict) -> tuple[str, bool]:
    """(directory, strippath) of mesh and height-field files: ``<compiler meshdir>``, else
    ``assetdir``."""
    meshdir = assetdir = ""
    strippath = False
    for node in sections.get("compiler", []):
        a = typed_attrs(node)
        assetdir = a.get("assetdir", assetdir)
        meshdir = a.get("meshdir", meshdir)
        strippath = a.get("strippath", "false" if not strippath else "true") == "true"
    return meshdir or assetdir, strippath


def read_assets(sections: dict, classes: dict, model_dir: Path | None) -> list[MeshAsset]:
    """Every ``<asset><mesh>`` in document order, with its default class applied and file found."""
    meshdir, strippath = mesh_dir(sections)
    base = model_dir if model_dir is not None else Path.cwd()
    meshes: list[MeshAsset] = []
    names: dict[str, MeshAsset] = {}
    for section in sections.get("asset", []):
        for node in section.children:
            if node.tag != "mesh":
                continue  # textures, materials, ...: visual only; hfields: compiler.hfield
            attrs = typed_attrs(node)
            cls = classes.get(attrs.get("class", "main"))
            if cls is None:
                raise node.error(f"unknown default class name '{attrs['class']}'", "class")
            merged = dict(MESH_DEFAULTS)
            merged.update(getattr(cls, "mesh", {}) or {})
            merged.update(attrs)
            for attr in ("builtin", "params"):
                if attr in attrs:
                    raise node.error(f"mesh {attr} is not supported yet (give vertices or a file)", attr)
            for child in node.children:
                if child.tag == "plugin":
                    raise child.error("mesh plugins are not supported")
                raise child.error("Schema violation: unrecognized element")
            if "file" not in attrs and "vertex" not in attrs:
                raise node.error("mesh has neither a file nor vertex data", "vertex")
            name = attrs.get("name", "")
            path = None
            if "file" in attrs:
                fname = attrs["file"]
                if strippath:
                    fname = fname.replace("\\", "/").rsplit("/", 1)[-1]
                if not name:
                    stem = fname.replace("\\", "/").rsplit("/", 1)[-1]
                    name = stem.rsplit(".", 1)[0] if "." in stem else stem
                path, _ = asset_path(node, meshdir, fname, base)
            if not name:  # mjCModel::CheckEmptyNames
                raise node.error("empty name in mesh", "name")
            if name in names:
                raise node.error(f"repeated name '{name}' in mesh", "name")
            mesh = MeshAsset(node, merged, name, len(meshes), path)
            names[name] = mesh
            meshes.append(mesh)
    return meshes


def default_mesh_attrs(child: Node) -> dict:
    """``<default><mesh>``: MuJoCo 4.0's schema allows scale, maxhullvert and inertia."""
    values = typed_attrs(child, "mesh")
    for attr in values:
        if attr not in ("scale", "maxhullvert", "inertia"):
            raise child.error(f"Schema violation: unrecognized attribute '{attr}'", attr)
    return values


# ---- processing ---------------------------------------------------------------------------------

def compile_mesh(mesh: MeshAsset) -> ProcessedMesh:
    """Load and process one mesh (cached by content); ModelError naming the element on failure."""
    a = mesh.attrs
    ctype = None
    if mesh.file is not None:
        try:
            ctype = mesh_files.content_type(str(mesh.file), a.get("content_type"))
        except ValueError as err:
            raise mesh.error(str(err), "content_type" if "content_type" in a else "file") from None
        try:
            data = mesh.file.read_bytes()
        except OSError as err:
            raise mesh.error(f"cannot read mesh file '{mesh.file}': {err.strerror or err}", "file") from None
        digest = hashlib.sha256(data).hexdigest()
    else:
        data = None
        digest = hashlib.sha256(repr((a.get("vertex"), a.get("face"))).encode()).hexdigest()
    maxhullvert = int(a["maxhullvert"])
    if maxhullvert != -1 and maxhullvert < 4:
        raise mesh.error("maxhullvert must be larger than 3", "maxhullvert")
    inertia = a["inertia"]
    key = (digest, ctype, tuple(a["scale"]), tuple(a["refpos"]), tuple(a["refquat"]), maxhullvert, inertia,
           "vertex" in a and data is not None, "face" in a and data is not None)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    try:
        if data is not None:
            if "vertex" in a:
                raise MeshError("repeated vertex specification")
            raw = mesh_files.read_mesh(data, ctype, str(mesh.file))
            vert, face = raw.vert, raw.face
            if "face" in a and len(face):
                raise MeshError("repeated face specification")
            if "face" in a:
                face = _xml_faces(a["face"])
        else:
            values = a["vertex"]
            if len(values) % 3:
                raise MeshError("vertex data must be a multiple of 3")
            vert = np.array(values, dtype=np.float32).reshape(-1, 3)
            face = _xml_faces(a.get("face", []))
        result = process(vert, face, a["scale"], a["refpos"], a["refquat"], inertia, maxhullvert, mesh.name)
    except (MeshError, ValueError) as err:
        raise mesh.error(str(err), "file" if data is not None else "vertex") from None
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = result
    return result


def _xml_faces(values) -> np.ndarray:
    if len(values) % 3:
        raise MeshError("face data must be a multiple of 3")
    return np.array(values, dtype=np.int64).reshape(-1, 3).astype(np.int32)


def _seqsum(a: np.ndarray) -> np.ndarray:
    """Left-to-right sum along axis 0 (MuJoCo's loops), not NumPy's pairwise summation."""
    if len(a) == 0:
        return np.zeros(a.shape[1:])
    return np.cumsum(a, axis=0)[-1]


def _triangles(v1, v2, v3):
    """triangle() of user_mesh.cc for arrays of faces: (unit normal, centre, area)."""
    center = (v1 + v2 + v3) / 3
    b, c = v2 - v1, v3 - v1
    n = np.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1], b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                  b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)
    length = np.sqrt(n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1] + n[:, 2] * n[:, 2])
    small = length < MINVAL
    with np.errstate(invalid="ignore", divide="ignore"):
        normal = np.where(small[:, None], n, n / np.where(small, 1.0, length)[:, None])
    area = np.where(small, 0.0, 0.5 * length)
    return normal, center, area


def _dot(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def process(vert32: np.ndarray, face: np.ndarray, scale, refpos, refquat, inertia: str, maxhullvert: int,
            name: str) -> ProcessedMesh:
    """mjCMesh::CheckInitialMesh + Process for one mesh; MeshError with MuJoCo's message."""
    nv = len(vert32)
    if nv < 4:
        raise MeshError("at least 4 vertices required")
    if len(face) and (face.min() < 0 or face.max() >= nv):
        bad = int(np.flatnonzero((face < 0) | (face >= nv))[0])
        raise MeshError(f"in face {bad // 3}, vertex index {int(face.ravel()[bad])} does not exist")
    dvert = vert32.astype(np.float64)
    raw_vert = dvert.copy()

    # inconsistent face orientation: a directed edge used twice (exact inertia requires it)
    if len(face) and inertia == "exact":
        _, _, area = _triangles(dvert[face[:, 0]], dvert[face[:, 1]], dvert[face[:, 2]])
        f = face[area > math.sqrt(MINVAL)]
        edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]).astype(np.int64)
        code = edges[:, 0] * nv + edges[:, 1]
        uniq, counts = np.unique(code, return_counts=True)
        if (counts > 1).any():
            e = int(uniq[np.flatnonzero(counts > 1)[0]])
            raise MeshError(f"faces of mesh '{name}' have inconsistent orientation. Please check the faces "
                            f"containing the vertices {e // nv + 1} and {e % nv + 1}.")

    graph = None
    graph_faces = None
    faceless = not len(face)
    if inertia == "convex" or faceless:
        graph, graph_faces = make_graph(dvert, maxhullvert, name)
    if not len(face):
        face = graph_faces.copy()

    righthand = scale[0] * scale[1] * scale[2] > 0
    if not righthand:
        face = face[:, [0, 2, 1]]

    # ApplyTransformations: refpos, refquat (conjugate rotation), scale
    if refpos[0] != 0 or refpos[1] != 0 or refpos[2] != 0:
        dvert = dvert - np.asarray(refpos, dtype=float)
    if refquat[0] != 1 or refquat[1] != 0 or refquat[2] != 0 or refquat[3] != 0:
        q = list(refquat)
        fr.normvec(q)
        m = fr.quat2mat(q)
        x, y, z = dvert[:, 0], dvert[:, 1], dvert[:, 2]
        dvert = np.stack([m[0] * x + m[3] * y + m[6] * z, m[1] * x + m[4] * y + m[7] * z,
                          m[2] * x + m[5] * y + m[8] * z], axis=1)
    if scale[0] != 1 or scale[1] != 1 or scale[2] != 1:
        dvert = dvert * np.asarray(scale, dtype=float)

    # centroid of the faces
    _, center, area = _triangles(dvert[face[:, 0]], dvert[face[:, 1]], dvert[face[:, 2]])
    total_area = _seqsum(area)
    facecen = _seqsum(area[:, None] * center)
    if total_area >= MINVAL:
        facecen = facecen / total_area
    else:
        raise MeshError(f"mesh surface area is too small: {name}")

    # volume (or area) and centre of mass: pyramids from the face centroid
    faces = graph_faces if inertia == "convex" else face
    normal, center, area = _triangles(dvert[faces[:, 0]], dvert[faces[:, 1]], dvert[faces[:, 2]])
    weights_com = center * 3.0 / 4.0 + facecen / 4.0
    if inertia == "shell":
        _, center_s, area_s = _triangles(dvert[face[:, 0]], dvert[face[:, 1]], dvert[face[:, 2]])
        measure = _seqsum(area_s)
        com = _seqsum(area_s[:, None] * (center_s * 3.0 / 4.0 + facecen / 4.0))
        if measure >= MINVAL:
            com = com / measure
        else:
            raise MeshError(f"mesh surface area is too small: {name}")
    else:
        vol = _dot(center - facecen, normal) * area / 3
        if inertia == "legacy":
            vol = np.abs(vol)
        measure = _seqsum(vol)
        com = _seqsum(vol[:, None] * weights_com)
        if measure >= MINVAL:
            com = com / measure
        elif measure < 0:
            raise MeshError(f"mesh volume is negative (misoriented triangles): {name}")
        else:
            raise MeshError(f"mesh volume is too small: {name} . Try setting inertia to shell")

    # inertia about the centre of mass (ComputeInertia)
    vc = dvert - com
    faces_i = faces if inertia != "shell" else face
    d, e, f = vc[faces_i[:, 0]], vc[faces_i[:, 1]], vc[faces_i[:, 2]]
    normal, center, area = _triangles(d, e, f)
    if inertia == "shell":
        vol = area
    else:
        vol = _dot(center, normal) * area / 3
    if inertia == "legacy":
        vol = np.abs(vol)
    volume = float(_seqsum(vol))
    c = 12 if inertia == "shell" else 20
    prods = []
    for j0, j1 in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
        term = (2 * (d[:, j0] * d[:, j1] + e[:, j0] * e[:, j1] + f[:, j0] * f[:, j1])
                + d[:, j0] * e[:, j1] + d[:, j1] * e[:, j0] + d[:, j0] * f[:, j1]
                + d[:, j1] * f[:, j0] + e[:, j0] * f[:, j1] + e[:, j1] * f[:, j0])
        prods.append(vol / c * term)
    p = _seqsum(np.stack(prods, axis=1))
    inert = [p[1] + p[2], p[0] + p[2], p[0] + p[1], -p[3], -p[4], -p[5]]
    full = [inert[0], inert[3], inert[4], inert[3], inert[1], inert[5], inert[4], inert[5], inert[2]]
    # mjuu_eig3 as MuJoCo 4.0's mesh compiler runs it: a looser stop (inertial.eig3's docstring)
    eigval, quat = inr.eig3(full, mesh=True)
    if eigval[2] <= 0:
        raise MeshError(f"eigenvalue of mesh inertia must be positive: {name}")
    atol, rtol = 1e-9, 1e-6
    e0, e1, e2 = eigval
    if (e0 + e1 < e2 * (1.0 - rtol) - atol or e0 + e2 < e1 * (1.0 - rtol) - atol
            or e1 + e2 < e0 * (1.0 - rtol) - atol):
        raise MeshError(f"eigenvalues of mesh inertia violate A + B >= C: {name}")
    # a slightly violated A + B >= C (within the tolerance above) gives nan here, as in MuJoCo
    with np.errstate(invalid="ignore"):
        boxsz = [float(0.5 * np.sqrt(6 * (e1 + e2 - e0) / volume)),
                 float(0.5 * np.sqrt(6 * (e0 + e2 - e1) / volume)),
                 float(0.5 * np.sqrt(6 * (e0 + e1 - e2) / volume))]

    # centre and align (Rotate): v <- R(q)^T (v - com)
    dvert = dvert - com
    m = fr.quat2mat([quat[0], -quat[1], -quat[2], -quat[3]])
    x, y, z = dvert[:, 0], dvert[:, 1], dvert[:, 2]
    dvert = np.stack([m[0] * x + m[1] * y + m[2] * z, m[3] * x + m[4] * y + m[5] * z,
                      m[6] * x + m[7] * y + m[8] * z], axis=1)
    aamm = [*dvert.min(axis=0).tolist(), *dvert.max(axis=0).tolist()]
    vert_out = dvert.astype(np.float32)
    vert_out.flags.writeable = False
    face = np.ascontiguousarray(face, dtype=np.int32)
    face.flags.writeable = False
    return ProcessedMesh(vert_out, face, [float(x) for x in com], [float(x) for x in quat], volume,
                         boxsz, aamm, raw_vert, graph, faceless, dvert, not righthand)


def make_graph(dvert: np.ndarray, maxhullvert: int, name: str = "") -> tuple[np.ndarray, np.ndarray]:
    """The convex hull as MuJoCo's mesh graph (mjCMesh::MakeGraph) and its outward faces."""
    from scipy.spatial import ConvexHull, QhullError

    nv = len(dvert)
    # colocated / collinear / coplanar vertices: MuJoCo's checks and messages
    d1 = np.linalg.norm(dvert[1:] - dvert[0], axis=1)
    far = np.flatnonzero(d1 > MINVAL)
    if not len(far):
        raise MeshError(f"mesh '{name}' has colocated vertices, cannot compute convex hull. "
                        "Consider using a small sphere instead")
    v1 = int(far[0]) + 1
    len1 = float(d1[v1 - 1])
    edge1 = dvert[v1] - dvert[0]
    normal = None
    for i in range(1, nv):
        if i == v1:
            continue
        edge2 = dvert[i] - dvert[0]
        len2 = math.sqrt(float(edge2 @ edge2))
        if len2 < MINVAL:
            continue
        n = np.array(fr.cross(edge1, edge2))
        norm = math.sqrt(float(n @ n))
        if norm > MINVAL * len1 * len2:
            normal = n / norm
            break
    if normal is None:
        raise MeshError(f"mesh '{name}' has collinear vertices, cannot compute convex hull. "
                        "Consider using a thin capsule instead")
    dist = dvert @ normal - float(dvert[0] @ normal)
    if not (np.abs(dist) > MINVAL * len1).any():
        raise MeshError(f"mesh '{name}' has coplanar vertices, cannot compute convex hull. "
                        "Consider using a primitive geom type (plane or thin box) instead")
    options = "Qt" if maxhullvert < 0 else f"Qt Q9 TA{maxhullvert - 4}"
    if qhull.available():
        try:
            graph, faces = qhull.make_graph(dvert, options)
        except qhull.QhullFailure as err:
            raise MeshError(f"qhull error: {err}") from None
        graph.flags.writeable = False
        return graph, faces
    try:
        hull = ConvexHull(dvert, qhull_options=options)
    except QhullError as err:
        raise MeshError(f"qhull error: {str(err).splitlines()[0] if str(err) else ''}") from None
    faces = hull.simplices.astype(np.int64)
    # orient outward (MuJoCo swaps qhull's first two vertices of top-oriented facets)
    a, b, c = dvert[faces[:, 0]], dvert[faces[:, 1]], dvert[faces[:, 2]]
    nrm = np.cross(b - a, c - a)
    flip = _dot(nrm, hull.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, [1, 0, 2]]
    verts = np.unique(faces)
    local = np.full(nv, -1, dtype=np.int64)
    local[verts] = np.arange(len(verts))
    numvert, numface = len(verts), len(faces)
    # neighbours of each hull vertex in the order the faces first name them (vectorised):
    # per face corner k, the next and the previous corner
    lf = local[faces]
    src = np.repeat(lf, 2, axis=1).ravel()
    dst = np.stack([lf[:, 1], lf[:, 2], lf[:, 2], lf[:, 0], lf[:, 0], lf[:, 1]], axis=1).ravel()
    key = src * numvert + dst
    _, first = np.unique(key, return_index=True)
    first.sort()
    src, dst = src[first], dst[first]
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    counts = np.bincount(src, minlength=numvert)
    edge_adr = np.concatenate([[0], np.cumsum(counts + 1)[:-1]])
    edges = np.full(numvert + len(dst), -1, dtype=np.int64)
    slot = edge_adr[src] + (np.arange(len(src)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[src])
    edges[slot] = dst
    graph = np.concatenate([[numvert, numface], edge_adr, verts, edges, faces.ravel()]).astype(np.int32)
    if len(graph) != 2 + 3 * numvert + 6 * numface:
        raise MeshError("wrong size in convex hull graph")
    graph.flags.writeable = False
    return graph, faces.astype(np.int32)


def make_polygons(graph: np.ndarray, raw_vert: np.ndarray) -> list[list[int]]:
    """Coplanar hull faces merged into polygons (mjCMesh::MakePolygons): faces are grouped by
    their normal's azimuth and polar angle rounded to 0.01 rad, each group's edges are joined
    as MuJoCo's MeshPolygon does (shared opposite edges cancel; connected parts are separate
    polygons), and each polygon is traced from its first remaining edge (4.0 traces single
    triangles too). The groups are listed in the iteration order of MuJoCo's libc++
    unordered_map (qhull.libcxx_map_order)."""
    numvert, numface = int(graph[0]), int(graph[1])
    faces = graph[2 + 3 * numvert + 3 * numface:].reshape(numface, 3)
    tol = 0.01
    groups: dict[tuple, list] = {}
    # the rounded normal angles of every face at once (MeshPolygonKey)
    v1, v2, v3 = raw_vert[faces[:, 0]], raw_vert[faces[:, 1]], raw_vert[faces[:, 2]]
    b, c = v2 - v1, v3 - v1
    nrm = np.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1], b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                    b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)
    length = np.sqrt(_dot(nrm, nrm))
    valid = length >= MINVAL
    with np.errstate(invalid="ignore", divide="ignore"):
        nrm = nrm / np.where(valid, length, 1.0)[:, None] + 0.0
        pole = np.abs(nrm[:, 2]) > 1.0 - 1e-7
        theta = np.where(pole, 0.0, np.round(np.arctan2(nrm[:, 1], nrm[:, 0]) / tol))
        phi = np.where(pole, np.where(nrm[:, 2] < 0, round(math.pi / tol), 0.0),
                       np.round(np.arccos(np.clip(nrm[:, 2], -1.0, 1.0)) / tol))
    keys = list(zip((theta + 0.0).tolist(), (phi + 0.0).tolist(), strict=True))
    for i, f in enumerate(faces.tolist()):
        if not valid[i]:
            continue
        key = keys[i]
        group = groups.get(key)
        if group is None:
            groups[key] = [[(f[0], f[1]), (f[1], f[2]), (f[2], f[0])], [0, 0, 0], 1]
        else:
            _insert_face(group, f[0], f[1], f[2])
    polygons = []
    values = list(groups.values())
    for g in qhull.libcxx_map_order(list(groups)):
        edges, islands, nisland = values[g]
        for i in range(nisland):
            path = []
            for j, e in enumerate(edges):
                if islands[j] == i:
                    path = [e[0], e[1]]
                    break
            if not path:
                continue
            nxt = path[-1]
            for _ in range(len(edges)):
                finished = False
                for k in range(1, len(edges)):
                    if islands[k] == i and edges[k][0] == nxt:
                        nxt = edges[k][1]
                        if nxt == path[0]:
                            finished = True
                        else:
                            path.append(nxt)
                        break
                if finished:
                    if len(path) >= 3:
                        polygons.append(path)
                    break
    return polygons


def _insert_face(group: list, v1: int, v2: int, v3: int) -> None:
    """MeshPolygon::InsertFace: attach a triangle along shared edges, merging islands."""
    edges, islands = group[0], group[1]
    island = -1
    add = [True, True, True]
    for slot, (a, b) in enumerate(((v2, v1), (v3, v2), (v1, v3))):
        for i, e in enumerate(edges):
            if e == (a, b):
                other = islands[i]
                if island == -1:
                    island = other
                elif other != island:
                    group[2] -= 1
                    lo, hi = min(island, other), max(island, other)
                    for k in range(len(islands)):
                        if islands[k] == hi:
                            islands[k] = lo
                        elif islands[k] > hi:
                            islands[k] -= 1
                    island = lo
                add[slot] = False
                del edges[i]
                del islands[i]
                break
    if island == -1:
        island = group[2]
        group[2] += 1
    for slot, e in enumerate(((v1, v2), (v2, v3), (v3, v1))):
        if add[slot]:
            edges.append(e)
            islands.append(island)


def polygon_normals(vert: np.ndarray, polygons: list[list[int]]) -> np.ndarray:
    """Unit normals of the polygons from all their vertices (Newell's method), on the processed
    double-precision vertices, as MuJoCo 4.0's compiler gives them (found against the binary;
    the 3.x source took the first three vertices); (n, 3)."""
    if not polygons:
        return np.zeros((0, 3))
    sizes = np.array([len(p) for p in polygons], dtype=np.int64)
    flat = np.array([v for p in polygons for v in p], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    p = vert[flat]
    nxt = np.arange(len(flat)) + 1
    nxt[starts + sizes - 1] = starts
    q = p[nxt]
    terms = np.stack([(p[:, 1] - q[:, 1]) * (p[:, 2] + q[:, 2]), (p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0]),
                      (p[:, 0] - q[:, 0]) * (p[:, 1] + q[:, 1])], axis=1)
    # summed vertex by vertex (MuJoCo's loop; NumPy's reductions sum pairwise)
    n = np.zeros((len(sizes), 3))
    for k in range(int(sizes.max())):
        live = np.flatnonzero(sizes > k)
        n[live] += terms[starts[live] + k]
    norm = np.sqrt(n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1] + n[:, 2] * n[:, 2])
    # a degenerate polygon (norm below mjEPS) gets (1, 0, 0), as mjuu_makenormal gives
    out = np.tile([1.0, 0.0, 0.0], (len(sizes), 1))
    ok = norm >= 1e-14
    out[ok] = n[ok] / norm[ok, None]
    return out


# ---- what a geom takes from its mesh ------------------------------------------------------------

def geom_from_mesh(pm: ProcessedMesh, pos: list, quat: list) -> tuple[list, list, list, list]:
    """mjCGeom::Compile for a mesh geom: (pos, quat, size, aabb) with the mesh frame folded in."""
    pos, quat = fr.frame_accum(pos, quat, list(pm.pos), list(pm.quat))
    lo, hi = pm.aamm[:3], pm.aamm[3:]
    size = [max(abs(lo[k]), abs(hi[k])) for k in range(3)]
    aabb = [(hi[k] + lo[k]) / 2 for k in range(3)] + [(hi[k] - lo[k]) / 2 for k in range(3)]
    return pos, quat, size, aabb


def fit_primitive(pm: ProcessedMesh, gtype: int, fitaabb: bool, fitscale: float, pos: list,
                  quat: list) -> tuple[list, list, list]:
    """(pos, quat, size) of a primitive geom given a ``mesh`` (mjCMesh::FitGeom, then the mesh
    frame folded into the geom frame as mjCGeom::Compile does).

    By default the primitive is sized from the mesh's equivalent inertia box; with
    ``<compiler fitaabb="true"/>`` it is the smallest one whose bounding box holds the mesh's
    vertex bounding box, centred on that box. ``fitscale`` scales the result."""
    center = [0.0, 0.0, 0.0]
    if not fitaabb:
        b = pm.boxsz
        if gtype == GeomType.SPHERE:
            size = [(b[0] + b[1] + b[2]) / 3, 0.0, 0.0]
        elif gtype == GeomType.CAPSULE:
            radius = (b[0] + b[1]) / 2
            size = [radius, max(0.0, b[2] - radius / 2), 0.0]
        elif gtype == GeomType.CYLINDER:
            size = [(b[0] + b[1]) / 2, b[2], 0.0]
        else:  # ellipsoid, box (the caller refuses plane and hfield)
            size = list(b)
    else:
        lo, hi = pm.aamm[:3], pm.aamm[3:]
        center = [(lo[k] + hi[k]) / 2 for k in range(3)]
        half = [hi[k] - center[k] for k in range(3)]
        if gtype == GeomType.SPHERE:
            size = [max(half), 0.0, 0.0]
        elif gtype in (GeomType.CAPSULE, GeomType.CYLINDER):
            radius = max(half[0], half[1])
            size = [radius, half[2] - radius if gtype == GeomType.CAPSULE else half[2], 0.0]
        else:
            size = half
    size = [s * fitscale for s in size]
    meshpos = fr.rot_vec_quat(center, list(pm.quat))
    meshpos = [meshpos[k] + pm.pos[k] for k in range(3)]
    pos, quat = fr.frame_accum(pos, quat, meshpos, list(pm.quat))
    return pos, quat, size


def mesh_inertia(pm: ProcessedMesh, mass: float) -> list[float]:
    """mjCGeom::SetInertia for a mesh: the equivalent inertia box."""
    b = pm.boxsz
    return [mass * (b[1] * b[1] + b[2] * b[2]) / 3, mass * (b[0] * b[0] + b[2] * b[2]) / 3,
            mass * (b[0] * b[0] + b[1] * b[1]) / 3]


def grid_extrema(vert: np.ndarray, graph: np.ndarray) -> np.ndarray:
    """mesh_extrema (mjCModel::CopyObjects): for each direction (cx, cy, cz) in {-1, 0, 1}^3 (cx
    slowest), the first hull vertex (local id in ``graph``) with the largest x cx + y cy + z cz,
    summed in single precision as MuJoCo's float vertices."""
    nv = int(graph[0])
    pts = np.asarray(vert, dtype=np.float32)[graph[2 + nv:2 + 2 * nv]]
    out = np.zeros(27, np.int32)
    k = 0
    for cx in (-1, 0, 1):
        for cy in (-1, 0, 1):
            for cz in (-1, 0, 1):
                dot = pts[:, 0] * np.float32(cx) + pts[:, 1] * np.float32(cy)
                dot = dot + pts[:, 2] * np.float32(cz)
                out[k] = int(np.argmax(dot))
                k += 1
    return out


def mesh_arrays(meshes: list[MeshAsset], geom_dataid: list[int]) -> tuple[dict, dict]:
    """The mesh_* Model arrays and sizes (mjCModel::CopyObjects)."""
    vert, face, graph = [], [], []
    vertadr, vertnum, faceadr, facenum, graphadr = [], [], [], [], []
    polyadr, polynum, polyvertadr, polyvertnum, polyvert, polynormal = [], [], [], [], [], []
    polymapadr, polymapnum, polymap = [], [], []
    extrema = []
    nv = nf = ng = 0
    for mesh in meshes:
        pm = mesh.processed
        vertadr.append(nv)
        vertnum.append(len(pm.vert))
        faceadr.append(nf)
        facenum.append(len(pm.face))
        vert.append(pm.vert)
        face.append(pm.face)
        nv += len(pm.vert)
        nf += len(pm.face)
        polys = []
        if mesh.needhull:
            g = pm.hull(int(mesh.attrs["maxhullvert"]))
            graphadr.append(ng)
            graph.append(g)
            ng += len(g)
            polys = pm.polygons
            extrema.append(grid_extrema(pm.vert, g))
        else:
            graphadr.append(-1)
            extrema.append(np.zeros(27, np.int32))
        first = len(polyvertnum)
        polyadr.append(first)
        polynum.append(len(polys))
        sizes = np.array([len(p) for p in polys], dtype=np.int64)
        flat = np.array([v for p in polys for v in p], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(polys) else sizes
        polyvertadr.extend((starts + len(polyvert)).tolist())
        polyvertnum.extend(sizes.tolist())
        polyvert.extend(flat.tolist())
        polynormal.extend(polygon_normals(pm.dvert, polys).tolist())
        # the polygons of each vertex (the mesh's own polygon numbers, as MuJoCo), in polygon order
        owner = np.repeat(np.arange(len(polys), dtype=np.int64), sizes)
        order = np.argsort(flat, kind="stable")
        counts = np.bincount(flat, minlength=len(pm.vert))
        polymapadr.extend((np.concatenate([[0], np.cumsum(counts)[:-1]]) + len(polymap)).tolist())
        polymapnum.extend(counts.tolist())
        polymap.extend(owner[order].tolist())
    nmesh = len(meshes)
    arr = dict(
        mesh_vertadr=np.array(vertadr, dtype=np.int32), mesh_vertnum=np.array(vertnum, dtype=np.int32),
        mesh_faceadr=np.array(faceadr, dtype=np.int32), mesh_facenum=np.array(facenum, dtype=np.int32),
        mesh_graphadr=np.array(graphadr, dtype=np.int32),
        mesh_vert=np.concatenate(vert).astype(np.float64) if vert else np.zeros((0, 3)),
        mesh_face=np.concatenate(face) if face else np.zeros((0, 3), np.int32),
        mesh_graph=np.concatenate(graph) if graph else np.zeros(0, np.int32),
        mesh_extrema=np.array(extrema, dtype=np.int32).reshape(nmesh, 27),
        mesh_pos=np.array([m.processed.pos for m in meshes], dtype=float).reshape(nmesh, 3),
        mesh_quat=np.array([m.processed.quat for m in meshes], dtype=float).reshape(nmesh, 4),
        mesh_scale=np.array([m.attrs["scale"] for m in meshes], dtype=float).reshape(nmesh, 3),
        geom_dataid=np.array(geom_dataid, dtype=np.int32),
        mesh_polyadr=np.array(polyadr, dtype=np.int32), mesh_polynum=np.array(polynum, dtype=np.int32),
        mesh_polyvertadr=np.array(polyvertadr, dtype=np.int32),
        mesh_polyvertnum=np.array(polyvertnum, dtype=np.int32),
        mesh_polyvert=np.array(polyvert, dtype=np.int32),
        mesh_polynormal=np.array(polynormal, dtype=float).reshape(len(polyvertnum), 3),
        mesh_polymapadr=np.array(polymapadr, dtype=np.int32),
        mesh_polymapnum=np.array(polymapnum, dtype=np.int32),
        mesh_polymap=np.array(polymap, dtype=np.int32))
    sizes = dict(nmesh=nmesh, nmeshvert=nv, nmeshface=nf, nmeshgraph=ng, nmeshpoly=len(polyvertnum),
                 nmeshpolyvert=len(polyvert), nmeshpolymap=len(polymap))
    return arr, sizes


__all__ = ["INERTIA_MODES", "MESH_DEFAULTS", "MeshAsset", "MeshError", "ProcessedMesh", "compile_mesh",
           "default_mesh_attrs", "geom_from_mesh", "make_graph", "make_polygons", "mesh_arrays", "mesh_dir",
           "mesh_inertia",
           "polygon_normals", "process", "read_assets"]
