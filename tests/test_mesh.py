"""Mesh assets against MuJoCo 4.0: files (STL, OBJ, MSH), inline data, transformations, every
inertia mode, default classes, paths, errors, the per-content cache.

The meshes are written by the tests themselves (tmp_path); each model is compiled by
kinedyn and by mujoco from the same file and every Model field MuJoCo also has is compared
(tests/oracle.assert_model_fields: geom_pos/quat/size/rbound/aabb, body_ipos/iquat/mass/
inertia, mesh_vert/face/pos/quat/..., geom_dataid, the sizes).
"""

from __future__ import annotations

import struct
import time

import mujoco
import numpy as np
import pytest
from oracle import assert_model_fields

import kinedyn as kd

# ---- meshes the tests write ---------------------------------------------------------------------

CUBE_V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
                  dtype=float) * [1.0, 2.0, 3.0] + [0.3, -0.2, 0.1]
CUBE_QUADS = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
CUBE_TRIS = [t for q in CUBE_QUADS for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))]

# a non-convex L-shaped prism (outward quads), in the xy-plane extruded along z
_L2D = [(0, 0), (2, 0), (2, 0.7), (0.8, 0.7), (0.8, 1.9), (0, 1.9)]


def l_shape():
    n = len(_L2D)
    vert = [(x, y, 0.0) for x, y in _L2D] + [(x, y, 0.6) for x, y in _L2D]
    polys = [tuple(reversed(range(n))), tuple(range(n, 2 * n))]
    polys += [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
    return np.array(vert), polys


def write_binary_stl(path, vert, tris):
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(tris)))
        for t in tris:
            f.write(struct.pack("<3f", 0, 0, 0))
            for i in t:
                f.write(struct.pack("<3f", *vert[i]))
            f.write(b"\0\0")


def write_ascii_stl(path, vert, tris):
    lines = ["solid cube"]
    for t in tris:
        corners = [[float(x) for x in np.float32(vert[i])] for i in t]
        lines += ["facet normal 0 0 0", "outer loop", *(f"vertex {x!r} {y!r} {z!r}" for x, y, z in corners),
                  "endloop", "endfacet"]
    path.write_text("\n".join([*lines, "endsolid cube"]) + "\n")


def write_obj(path, vert, polys):
    lines = [f"v {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in vert]
    lines += ["f " + " ".join(str(i + 1) for i in p) for p in polys]
    path.write_text("# test mesh\no thing\n" + "\n".join(lines) + "\n")


def write_msh(path, vert, tris):
    vert = np.asarray(vert, dtype="<f4")
    face = np.asarray(tris, dtype="<i4")
    path.write_bytes(struct.pack("<4i", len(vert), 0, 0, len(face)) + vert.tobytes() + face.tobytes())


def _compile_both(path):
    mjm = mujoco.MjModel.from_xml_path(str(path))
    m = kd.Model.from_xml_path(path)
    return m, mjm


def _model(assets: str, geoms: str, compiler: str = "", default: str = "") -> str:
    return (f"<mujoco><compiler {compiler}/><default>{default}</default><asset>{assets}</asset><worldbody>"
            f"{geoms}</worldbody></mujoco>")


def _body(mesh, extra="", pos="0 0 0", quat=None):
    orient = f'quat="{quat}"' if quat else ""
    return (f'<body pos="0.1 0.2 0.3"><freejoint/><geom type="mesh" mesh="{mesh}" pos="{pos}" {orient} '
            f'contype="0" conaffinity="0" {extra}/><geom type="sphere" size="0.1" pos="0.3 0 0" contype="0" '
            'conaffinity="0"/></body>')


def _rotation(q):
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(q, dtype=float))
    return mat.reshape(3, 3)


def assert_same_mesh_vert_and_inertial_frames(m, mjm):
    """The two fields compared apart from the others.

    mesh_vert is stored in single precision by both: a vertex that lands next to the centre of
    mass (|v| ~ 1e-11) keeps the double-precision centring's round-off, so it is compared at
    1e-9 of the mesh's extent. body_iquat is compared as the inertia tensor it stands for:
    when a body's principal moments come from a mesh with equal moments (the tetrahedron),
    the last bits of the inputs decide between principal frames that differ by a half turn
    about a principal axis, which MuJoCo and kinedyn may pick differently (docs/meshes.md).
    """
    for i in range(m.nmesh):
        a, n = m.mesh_vertadr[i], m.mesh_vertnum[i]
        ours, theirs = m.mesh_vert[a:a + n], mjm.mesh_vert[a:a + n]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max())
    for b in range(m.nbody):
        ours = _rotation(m.body_iquat[b]) @ np.diag(m.body_inertia[b]) @ _rotation(m.body_iquat[b]).T
        theirs = _rotation(mjm.body_iquat[b]) @ np.diag(mjm.body_inertia[b]) @ _rotation(mjm.body_iquat[b]).T
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12 + 1e-9 * np.abs(theirs).max())


@pytest.fixture()
def mesh_dir(tmp_path):
    vert, polys = l_shape()
    (tmp_path / "meshes").mkdir()
    write_binary_stl(tmp_path / "meshes" / "cube.stl", CUBE_V, CUBE_TRIS)
    write_ascii_stl(tmp_path / "meshes" / "cube_ascii.stl", CUBE_V, CUBE_TRIS)
    write_obj(tmp_path / "meshes" / "ell.obj", vert, polys)
    write_obj(tmp_path / "meshes" / "cubequad.obj", CUBE_V, CUBE_QUADS)
    write_msh(tmp_path / "meshes" / "cube.msh", CUBE_V, CUBE_TRIS)
    return tmp_path


def test_files_transforms_and_inertia_modes_match_mujoco(mesh_dir):
    """STL (de-duplicated), OBJ with quads (tinyobjloader's diagonals), MSH, inline vertices with
    and without faces, refpos/refquat/scale (mirrored too), each inertia mode, mass or density,
    mesh and geom frames: every Model field MuJoCo has, at 1e-9."""
    assets = """
      <mesh name="cube" file="cube.stl" refpos="0.1 0.2 -0.1" refquat="0.9 0.1 -0.3 0.2"/>
      <mesh file="cube.stl" name="cube_mirror" scale="1 -1.5 0.5"/>
      <mesh name="ell_legacy" file="ell.obj"/>
      <mesh name="ell_convex" file="ell.obj" inertia="convex" scale="0.5 0.5 2"/>
      <mesh name="ell_exact" file="ell.obj" inertia="exact" refquat="0 1 0 0"/>
      <mesh name="ell_shell" file="ell.obj" inertia="shell"/>
      <mesh name="cubequad" file="cubequad.obj" scale="1 2 0.5"/>
      <mesh name="msh" file="cube.msh" scale="-1 1 1"/>
      <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
      <mesh name="tetf" vertex="0 0 0  1 0 0  0 1 0  0 0 1.5" face="0 2 1  0 1 3  0 3 2  1 2 3"/>
      <mesh name="cloud" vertex="{cloud}" maxhullvert="8"/>
    """
    rng = np.random.default_rng(3)
    cloud = rng.normal(size=(40, 3)).astype(np.float32)
    assets = assets.replace("{cloud}", " ".join(repr(float(x)) for x in cloud.ravel()))
    geoms = "".join([
        _body("cube", 'density="700"', pos="0.1 0 0.2", quat="0.7 0.7 0 0"),
        _body("cube_mirror"),
        _body("ell_legacy", 'mass="2.5"'),
        _body("ell_convex"),
        _body("ell_exact", 'euler="10 20 30"'),
        _body("ell_shell", 'density="3"'),
        _body("cubequad"),
        _body("msh"),
        _body("tet"),
        _body("tetf"),
        _body("cloud"),
        # a visual mesh in a body with an explicit inertial, and an unreferenced asset (cube_ascii)
        '<body><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><freejoint/>'
        '<geom type="mesh" mesh="ell_legacy" contype="0" conaffinity="0" group="3"/></body>',
    ])
    assets += '<mesh name="unused" file="cube.stl" scale="2 2 2"/>'
    path = mesh_dir / "model.xml"
    path.write_text(_model(assets, geoms, compiler='meshdir="meshes"'))
    m, mjm = _compile_both(path)
    assert m.nmesh == 12 and m.nmeshvert == mjm.nmeshvert
    compared = assert_model_fields(m, mjm, skip=("mesh_vert", "body_iquat"))
    assert_same_mesh_vert_and_inertial_frames(m, mjm)
    for name in ("mesh_face", "mesh_pos", "mesh_quat", "geom_aabb", "geom_rbound", "body_inertia",
                 "nmeshgraph"):
        assert name in compared
    # STL vertices are de-duplicated (8 of 36), OBJ ones are not; the cloud's faces are its hull's
    assert m.mesh_vertnum[0] == 8 and m.mesh_facenum[6] == 12
    # the hull graph: same vertex set as MuJoCo's (ours lists it in ascending order)
    for i in range(m.nmesh):
        adr = m.mesh_graphadr[i]
        assert adr == mjm.mesh_graphadr[i]
        if adr >= 0:
            nv, nf = m.mesh_graph[adr:adr + 2]
            assert (nv, nf) == tuple(mjm.mesh_graph[adr:adr + 2])
            ours = m.mesh_graph[adr + 2 + nv:adr + 2 + 2 * nv]
            theirs = mjm.mesh_graph[adr + 2 + nv:adr + 2 + 2 * nv]
            assert sorted(ours) == sorted(theirs)
            faces = m.mesh_graph[adr + 2 + 3 * nv + 3 * nf:adr + 2 + 3 * nv + 6 * nf]
            assert np.array_equal(faces, mjm.mesh_graph[adr + 2 + 3 * nv + 3 * nf:adr + 2 + 3 * nv + 6 * nf])
    # maxhullvert limits the hull
    cloud_adr = m.mesh_graphadr[10]
    assert m.mesh_graph[cloud_adr] <= 8


def test_ascii_stl_equals_binary_stl(mesh_dir):
    """MuJoCo 4.0 refuses ASCII STL; kinedyn reads it (documented extension) with the binary
    file's semantics: the two compile to the same model, and the binary one matches MuJoCo."""
    text = _model('<mesh name="a" file="meshes/cube_ascii.stl"/><mesh name="b" file="meshes/cube.stl"/>',
                  _body("a") + _body("b"))
    path = mesh_dir / "ascii.xml"
    path.write_text(text)
    m = kd.Model.from_xml_path(path)
    for name in ("mesh_face", "mesh_pos", "mesh_quat"):
        a, b = getattr(m, name)[: len(getattr(m, name)) // 2], getattr(m, name)[len(getattr(m, name)) // 2:]
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(m.body_inertia[1], m.body_inertia[2])
    with pytest.raises(ValueError, match="ASCII"):
        mujoco.MjModel.from_xml_path(str(path))


def test_default_classes_and_assetdir(mesh_dir):
    default = ('<mesh scale="2 1 1" inertia="convex"/>'
               '<default class="small"><mesh scale="0.5 0.5 0.5"/></default>')
    assets = ('<mesh name="big" file="cube.stl"/><mesh name="small" class="small" file="cube.stl"/>'
              '<mesh name="mixed" class="small" file="ell.obj" inertia="legacy" scale="1 1 3"/>')
    path = mesh_dir / "defaults.xml"
    path.write_text(_model(assets, _body("big") + _body("small") + _body("mixed"),
                           compiler='assetdir="meshes"', default=default))
    m, mjm = _compile_both(path)
    assert_model_fields(m, mjm)
    np.testing.assert_array_equal(m.mesh_scale, [[2, 1, 1], [0.5, 0.5, 0.5], [1, 1, 3]])


@pytest.mark.parametrize("assets, geoms, attribute, message", [
    ('<mesh name="a" file="nothere.stl"/>', '<geom type="mesh" mesh="a"/>', "file", "cannot read mesh file"),
    ('<mesh name="a" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>', '<geom type="mesh" mesh="b"/>', "mesh",
     "not found"),
    ('', '<geom type="mesh"/>', "mesh", "valid meshid"),
    ('<mesh name="a" vertex="0 0 0 1 0 0 0 1 0 1 1 0"/>', '', "vertex", "coplanar"),
    ('<mesh name="a" vertex="0 0 0 1 0 0 0 1 0"/>', '', "vertex", "at least 4 vertices"),
    ('<mesh name="a" vertex="0 0 0 1 0 0 0 1 0 0 0 1" face="0 1 2 0 1 3 0 3 2 1 2 3"/>', '', "vertex",
     "inconsistent orientation"),
    ('<mesh name="a" file="x.ply"/>', '', "file", "unknown mesh file type"),
    ('<mesh name="a" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>', '<geom type="box" mesh="a"/>', "mesh", "fitting"),
])
def test_errors_name_element_attribute_line(tmp_path, assets, geoms, attribute, message):
    assets = assets.replace('face="0 1 2', 'inertia="exact" face="0 1 2')
    path = tmp_path / "bad.xml"
    path.write_text(f"<mujoco>\n<asset>\n{assets}\n</asset>\n<worldbody>\n<body>\n<freejoint/>\n"
                    f'<geom size="0.1"/>{geoms}\n</body>\n</worldbody>\n</mujoco>\n')
    with pytest.raises(kd.ModelError, match=message) as info:
        kd.Model.from_xml_path(path)
    err = info.value
    assert err.attribute == attribute
    assert err.line in (3, 8)


def test_processing_is_cached_per_content(mesh_dir):
    """A second model with the same mesh bytes skips the processing (cache keyed by content)."""
    from kinedyn.compiler import mesh as meshes

    big = mesh_dir / "meshes" / "big.obj"
    g = np.linspace(0, 1, 60)
    verts = [(x, y, (x - 0.5) ** 2 + (y - 0.5) ** 2 + 0.2) for x in g for y in g]
    n = len(g)
    polys = [(i * n + j, i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j) for i in range(n - 1)
             for j in range(n - 1)]
    verts += [(0.0, 0.0, -0.5)]
    write_obj(big, verts, polys)
    text = _model('<mesh name="b" file="meshes/big.obj" inertia="shell"/>', _body("b"))
    path = mesh_dir / "cache.xml"
    path.write_text(text)
    meshes._CACHE.clear()
    t0 = time.perf_counter()
    m1 = kd.Model.from_xml_path(path)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    m2 = kd.Model.from_xml_path(path)
    warm = time.perf_counter() - t0
    np.testing.assert_array_equal(m1.mesh_vert, m2.mesh_vert)
    assert len(meshes._CACHE) == 1
    assert warm < cold
