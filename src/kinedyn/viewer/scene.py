"""What a picture of a model is made of, shared by the browser viewer and the offline renderer.

NumPy only (no drawing library): every primitive geom as a triangle mesh in its own frame
(:func:`primitive_mesh`), its world pose from a Data (``geom_xpos``, ``geom_xmat``), the colours
(:func:`appearance`), the contacts as points and force vectors (:func:`contacts`), and a
rotation matrix as a quaternion (:func:`mat2quat`, for libraries that take ``wxyz``).

Colours. MuJoCo keeps ``geom_rgba``, ``geom_matid`` and ``mat_rgba`` in its model; a kinedyn
Model has no visual fields yet, so :func:`appearance` takes them from the Model when it has
them and otherwise from the MJCF source (a path or the text), compiled again for its geoms'
resolved ``rgba`` and ``material`` attributes (default classes included). MuJoCo's rule is
kept: a geom with a material and the default rgba (0.5 0.5 0.5 1) takes the material's rgba.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kinedyn.engine.types import GeomType

DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0])        # mjs_defaultGeom's rgba
DEFAULT_SITE_RGBA = np.array([0.5, 0.5, 0.5, 1.0])   # mjs_defaultSite's rgba
DEFAULT_MATERIAL_RGBA = np.array([1.0, 1.0, 1.0, 1.0])
DRAWN_TYPES = (GeomType.PLANE, GeomType.HFIELD, GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID,
               GeomType.CYLINDER, GeomType.BOX, GeomType.MESH)


# ---------------------------------------------------------------------------------------
# meshes of the primitives, in the geom's frame (MuJoCo's conventions: capsule and cylinder
# along z with size = (radius, half-length); box half-sizes; plane half-extents in x and y)

def _sphere(nlat: int, nlon: int, zshift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """A closed unit UV sphere (one vertex at each pole); with ``zshift`` > 0 the upper hemisphere
    is moved up and the lower down by it, joined at a doubled equator ring (a capsule of radius 1
    and half-length ``zshift``; ``nlat`` even)."""
    lon = np.linspace(0.0, 2 * np.pi, nlon, endpoint=False)
    rings = []
    for a in np.linspace(0.0, np.pi, nlat + 1)[1:-1]:
        ring = np.column_stack([np.sin(a) * np.cos(lon), np.sin(a) * np.sin(lon), np.full(nlon, np.cos(a))])
        if zshift and a <= np.pi / 2 + 1e-12:
            rings.append(ring + [0, 0, zshift])
        if zshift and a >= np.pi / 2 - 1e-12:
            rings.append(ring - [0, 0, zshift])
        if not zshift:
            rings.append(ring)
    top, bottom = [[0.0, 0.0, 1.0 + zshift]], [[0.0, 0.0, -1.0 - zshift]]
    vertices = np.concatenate([top, *rings, bottom])
    last = len(vertices) - 1
    faces = []
    for j in range(nlon):
        k = (j + 1) % nlon
        faces.append((0, 1 + j, 1 + k))                                   # the cap around the top pole
        faces.append((last, 1 + (len(rings) - 1) * nlon + k, 1 + (len(rings) - 1) * nlon + j))
        for r in range(len(rings) - 1):
            a, b = 1 + r * nlon + j, 1 + r * nlon + k
            faces += [(a, a + nlon, b), (b, a + nlon, b + nlon)]
    return vertices, np.array(faces, dtype=np.int32)


def _cylinder(radius: float, half: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    lon = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(lon), radius * np.sin(lon), np.zeros(n)])
    vertices = np.concatenate([ring + [0, 0, half], ring - [0, 0, half], [[0, 0, half], [0, 0, -half]]])
    faces = []
    for j in range(n):
        a, b = j, (j + 1) % n
        faces += [(a, a + n, b), (b, a + n, b + n), (2 * n, a, b), (2 * n + 1, b + n, a + n)]
    return vertices, np.array(faces, dtype=np.int32)


def _box(half) -> tuple[np.ndarray, np.ndarray]:
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [t for a, b, c, e in quads for t in ((a, b, c), (a, c, e))]
    return corners * np.asarray(half, dtype=float), np.array(faces, dtype=np.int32)


def geom_mesh(m, g: int, plane_extent: float = 2.0, resolution: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of geom ``g`` in its own frame: a mesh geom's own triangles
    (``mesh_vert`` / ``mesh_face``), a height field's surface (:func:`hfield_mesh`), else
    :func:`primitive_mesh`."""
    if int(m.geom_type[g]) == GeomType.HFIELD:
        return hfield_mesh(m, int(m.geom_dataid[g]))
    if int(m.geom_type[g]) == GeomType.MESH:
        i = int(m.geom_dataid[g])
        va, vn = int(m.mesh_vertadr[i]), int(m.mesh_vertnum[i])
        fa, fn = int(m.mesh_faceadr[i]), int(m.mesh_facenum[i])
        vert = np.asarray(m.mesh_vert[va:va + vn], dtype=float)
        return vert, np.asarray(m.mesh_face[fa:fa + fn], dtype=np.int32)
    return primitive_mesh(m.geom_type[g], m.geom_size[g], plane_extent=plane_extent, resolution=resolution)


def hfield_mesh(m, h: int) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of height field ``h``'s top surface in its geom's frame: the grid points
    at their elevations, each cell split into the two triangles its collision prisms have (the
    diagonal from (row r, column c - 1) to (r + 1, c))."""
    nrow, ncol = int(m.hfield_nrow[h]), int(m.hfield_ncol[h])
    sx, sy, sz, _ = (float(v) for v in m.hfield_size[h])
    adr = int(m.hfield_adr[h])
    x, y = np.meshgrid(np.linspace(-sx, sx, ncol), np.linspace(-sy, sy, nrow))
    z = np.asarray(m.hfield_data[adr:adr + nrow * ncol], dtype=float).reshape(nrow, ncol) * sz
    vertices = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    v = np.arange(nrow * ncol).reshape(nrow, ncol)
    a, b, c, d = v[:-1, :-1].ravel(), v[:-1, 1:].ravel(), v[1:, :-1].ravel(), v[1:, 1:].ravel()
    faces = np.concatenate([np.column_stack([a, d, c]), np.column_stack([a, b, d])])
    return vertices, faces.astype(np.int32)


def primitive_mesh(gtype: int, size, plane_extent: float = 2.0,
                   resolution: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3), faces (k, 3) int32, counter-clockwise seen from outside) of a primitive geom
    in its own frame. A plane's zero half-extent (MuJoCo's "infinite") is drawn as ``plane_extent``."""
    size = np.asarray(size, dtype=float)
    gtype = int(gtype)
    n = max(6, int(resolution))
    if gtype == GeomType.SPHERE:
        v, f = _sphere(n // 2, n)
        return v * size[0], f
    if gtype == GeomType.ELLIPSOID:
        v, f = _sphere(n // 2, n)
        return v * size[:3], f
    if gtype == GeomType.CAPSULE:
        v, f = _sphere(n // 2 if n // 2 % 2 == 0 else n // 2 + 1, n, zshift=size[1] / max(size[0], 1e-12))
        return v * size[0], f
    if gtype == GeomType.CYLINDER:
        return _cylinder(size[0], size[1], n)
    if gtype == GeomType.BOX:
        return _box(size[:3])
    if gtype == GeomType.PLANE:
        hx = size[0] if size[0] > 0 else plane_extent
        hy = size[1] if size[1] > 0 else plane_extent
        v = np.array([[-hx, -hy, 0], [hx, -hy, 0], [hx, hy, 0], [-hx, hy, 0]], dtype=float)
        return v, np.array([(0, 1, 2), (0, 2, 3)], dtype=np.int32)
    raise ValueError(f"geom type {gtype} ({GeomType(gtype).name.lower()}) has no primitive mesh")


def drawn_geoms(m) -> list[int]:
    """The ids of the geoms that can be drawn (primitives; meshes and height fields come later)."""
    return [g for g in range(m.ngeom) if int(m.geom_type[g]) in DRAWN_TYPES]


def mat2quat(mat) -> np.ndarray:
    """A rotation matrix (3, 3) as a unit quaternion (w, x, y, z) with w >= 0 (mju_mat2Quat)."""
    r = np.asarray(mat, dtype=float).reshape(3, 3)
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s])
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = np.array([(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s])
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = np.array([(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = np.array([(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


# ---------------------------------------------------------------------------------------
# colours

@dataclass(frozen=True)
class Appearance:
    """Colours of a model: ``geom_rgba`` (ngeom, 4) and ``site_rgba`` (nsite, 4), in [0, 1]."""

    geom_rgba: np.ndarray
    site_rgba: np.ndarray
    source: str  # "model", "mjcf" or "default": where the colours came from


def _resolve(rgba: np.ndarray, matid: np.ndarray, mat_rgba: np.ndarray) -> np.ndarray:
    out = np.array(rgba, dtype=float, copy=True)
    for i in range(len(out)):
        if matid[i] >= 0 and np.array_equal(out[i], DEFAULT_RGBA):
            out[i] = mat_rgba[matid[i]]
    return out


def appearance(m, source: str | Path | bytes | None = None) -> Appearance:
    """The colours to draw ``m`` with: the Model's own visual fields (``geom_rgba``, ``geom_matid``,
    ``mat_rgba``, ``site_rgba``, MuJoCo's names) when it has them; else those of the MJCF
    ``source`` (a file path, or the document as text or bytes); else MuJoCo's default grey."""
    if hasattr(m, "geom_rgba"):
        ngeom_mat = getattr(m, "geom_matid", np.full(m.ngeom, -1))
        mat_rgba = getattr(m, "mat_rgba", np.zeros((0, 4)))
        sites = getattr(m, "site_rgba", np.tile(DEFAULT_SITE_RGBA, (m.nsite, 1)))
        return Appearance(_resolve(m.geom_rgba, ngeom_mat, mat_rgba), np.array(sites, dtype=float), "model")
    if source is not None:
        try:
            found = _mjcf_appearance(source)
        except Exception as err:  # noqa: BLE001 - colours are a nicety: never fail a picture over them
            warnings.warn(f"kinedyn.viewer: colours not read from the MJCF ({err}); drawing grey",
                          stacklevel=2)
        else:
            if len(found.geom_rgba) == m.ngeom and len(found.site_rgba) == m.nsite:
                return found
            warnings.warn("kinedyn.viewer: the MJCF source does not match the model's geoms; drawing grey",
                          stacklevel=2)
    return Appearance(np.tile(DEFAULT_RGBA, (m.ngeom, 1)), np.tile(DEFAULT_SITE_RGBA, (m.nsite, 1)),
                      "default")


def _mjcf_appearance(source) -> Appearance:
    """Colours from an MJCF document: the compiler's resolved geom and site attributes (defaults
    applied), and the rgba of each ``<asset><material>``."""
    from kinedyn.compiler.build import Compiler
    from kinedyn.xml.mjcf import parse_xml

    if isinstance(source, Path) or (isinstance(source, str) and "<" not in source):
        text = Path(source).read_bytes()
    else:
        text = source
    root = parse_xml(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the model compiled already: its warnings were given then
        compiler = Compiler(root, False)
        compiler.run()
    materials: dict[str, np.ndarray] = {}
    for asset in root.find_all("asset"):
        for mat in asset.find_all("material"):
            if "name" in mat.attrib:
                rgba = mat.attrib.get("rgba")
                materials[mat.attrib["name"]] = (np.array([float(x) for x in rgba.split()])
                                                 if rgba else DEFAULT_MATERIAL_RGBA)

    def colour(attrs, default):
        rgba = np.asarray(attrs.get("rgba", default), dtype=float)
        name = attrs.get("material")
        if name in materials and np.array_equal(rgba, default):
            return materials[name]
        return rgba

    geoms = np.array([colour(g.attrs, DEFAULT_RGBA) for g in compiler.geoms]).reshape(-1, 4)
    sites = np.array([colour(s.attrs, DEFAULT_SITE_RGBA) for s in compiler.sites]).reshape(-1, 4)
    return Appearance(geoms, sites, "mjcf")


def shade(rgb, normals, light=(0.35, -0.45, 0.82), ambient: float = 0.3, gain: float = 1.4) -> np.ndarray:
    """Lambert shading: ``rgb`` (3,) under a directional ``light`` for each unit normal (k, 3) -> (k, 3):
    ``rgb * (ambient + (gain - ambient) * max(n . light, 0))``, clipped to [0, 1]."""
    light = np.asarray(light, dtype=float)
    light = light / np.linalg.norm(light)
    lambert = np.clip(np.asarray(normals) @ light, 0.0, 1.0)
    return np.clip(np.asarray(rgb)[None, :3] * (ambient + (gain - ambient) * lambert[:, None]), 0.0, 1.0)


# ---------------------------------------------------------------------------------------
# contacts (d.ncon, d.contact.pos / frame, kd.contact_force): drawn when the engine has them

@dataclass(frozen=True)
class Contacts:
    """The active contacts of a Data: ``pos`` (ncon, 3), ``normal`` (ncon, 3) (frame row 0), and
    ``force`` (ncon, 3) the world-frame force on geom 2 (zeros while ``kd.contact_force`` is absent)."""

    pos: np.ndarray
    normal: np.ndarray
    force: np.ndarray


def contacts(m, d, forces: bool = True) -> Contacts:
    """The contacts of ``d``; empty when the engine has no contacts (no ``d.ncon``).

    ``forces``: ask ``kd.contact_force`` (only meaningful after the constraint stage, e.g. after
    ``kd.forward`` or ``kd.step``); without it, or while the engine lacks it, the forces are zero.
    """
    ncon = int(getattr(d, "ncon", 0) or 0)
    none = np.zeros((0, 3))
    if ncon == 0:
        return Contacts(none, none, none)
    contact = getattr(d, "contact", None)
    pos = getattr(contact, "pos", None) if contact is not None else getattr(d, "contact_pos", None)
    frame = getattr(contact, "frame", None) if contact is not None else getattr(d, "contact_frame", None)
    if pos is None or frame is None:
        return Contacts(none, none, none)
    pos = np.asarray(pos)[:ncon].reshape(ncon, 3)
    frame = np.asarray(frame)[:ncon].reshape(ncon, 3, 3)
    force = np.zeros((ncon, 3))
    # kd.contact_force(m, d, i) -> (6,) in the contact frame; looked up, not imported, so the viewer
    # layer has no edge to the package root and the drawing is a no-op until the engine has it
    contact_force = getattr(sys.modules.get("kinedyn"), "contact_force", None) if forces else None
    if contact_force is not None:
        for i in range(ncon):
            f = np.asarray(contact_force(m, d, i), dtype=float)
            force[i] = frame[i].T @ f[:3]
    return Contacts(pos, frame[:, 0].copy(), force)


__all__ = ["Appearance", "Contacts", "DRAWN_TYPES", "appearance", "contacts", "drawn_geoms", "geom_mesh",
           "hfield_mesh", "mat2quat", "primitive_mesh", "shade"]
