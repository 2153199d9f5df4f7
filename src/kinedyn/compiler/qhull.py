"""MuJoCo's convex hull graph from qhull's own data structures (mjCMesh::MakeGraph).

MuJoCo builds a mesh's hull with libqhull_r ("qhull Qt", and "Q9 TA<n-4>" for maxhullvert),
triangulates it, computes the vertex neighbours and lists the hull vertices in qhull's vertex
list order, each vertex's edges in the order of its neighbouring facets and their vertices.
That order is internal to qhull (scipy.spatial.ConvexHull does not expose it), so this module
runs the same qhull (libqhull_r 8.0.2, shipped by the ``cmeel-qhull`` wheel) through ctypes
and reads the facets and vertices from qhull's structures in place.

The structure offsets below are those of libqhull_r 8.0.2 built with its default options
(``qh_KEEPstatistics``, ``qh_MAXoutside``, not ``qh_COMPUTEfurthest``), the cmeel-qhull
build; they are checked against the library's version string and against the counts qhull
reports (``qh.num_vertices``, ``qh.num_facets``, ``qh.hull_dim``, ``qh.first_point``) on
every call. :func:`available` says whether the library loaded.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

VERSION = b"2020.2.r 2020/08/31"   # qh_version of libqhull_r 8.0.2
_QH_SIZE = 8768                    # sizeof(qhT)
# offsetof(qhT, ...)
_QH_HULL_DIM, _QH_NUM_POINTS, _QH_FIRST_POINT = 632, 640, 648
_QH_FACET_LIST, _QH_VERTEX_LIST, _QH_NUM_FACETS, _QH_NUM_VERTICES = 2456, 2544, 2568, 2572
# offsetof(facetT, ...): next, vertices; the flag byte holding toporient (bit 4)
_F_NEXT, _F_VERTICES, _F_FLAGS, _F_TOPORIENT = 56, 64, 113, 0x10
# offsetof(vertexT, ...): next, point, neighbors; setT's first element
_V_NEXT, _V_POINT, _V_NEIGHBORS, _SET_E = 0, 16, 24, 8


_MASK64 = (1 << 64) - 1


class QhullFailure(ValueError):
    """qhull returned an error code; the message is qhull's first line."""


def _find_library() -> str | None:
    try:
        from importlib import metadata
        dist = metadata.distribution("cmeel-qhull")
    except Exception:  # noqa: BLE001 - not installed
        return None
    names = [f for f in dist.files or [] if Path(str(f)).name.startswith("libqhull_r.")
             and any(ext in Path(str(f)).name for ext in (".so", ".dylib"))]
    # the versioned file (libqhull_r.so.8.0.2 / libqhull_r.8.0.dylib) before its links
    names.sort(key=lambda f: -len(str(f)))
    for f in names:
        path = Path(str(dist.locate_file(f)))
        if path.exists():
            return str(path)
    return None


@lru_cache(maxsize=1)
def _library():
    path = _find_library()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        version = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "qh_version")))
    except (OSError, ValueError):
        return None
    if version != VERSION:
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") if sys.platform != "linux" else None)
    vp = ctypes.c_void_p
    lib.qh_zero.argtypes = [vp, vp]
    lib.qh_zero.restype = None
    lib.qh_new_qhull.argtypes = [vp, ctypes.c_int, ctypes.c_int, vp, ctypes.c_uint, ctypes.c_char_p, vp, vp]
    lib.qh_new_qhull.restype = ctypes.c_int
    lib.qh_vertexneighbors.argtypes = [vp]
    lib.qh_vertexneighbors.restype = None
    lib.qh_freeqhull.argtypes = [vp, ctypes.c_uint]
    lib.qh_freeqhull.restype = None
    lib.qh_memfreeshort.argtypes = [vp, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.qh_memfreeshort.restype = None
    libc.tmpfile.argtypes = []
    libc.tmpfile.restype = vp
    libc.fclose.argtypes = [vp]
    libc.rewind.argtypes = [vp]
    libc.fread.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, vp]
    libc.fread.restype = ctypes.c_size_t
    return lib, libc


def available() -> bool:
    """True when libqhull_r 8.0.2 (cmeel-qhull) is loaded."""
    return _library() is not None


def _ptr(addr: int) -> int:
    return ctypes.c_void_p.from_address(addr).value or 0


_PTR = struct.Struct("<Q")


def _set(addr: int) -> tuple[int, ...]:
    """The elements of a qhull setT: ``maxsize`` slots, then the slot whose int holds size + 1 (0
    when the set is full)."""
    if not addr:
        return ()
    maxsize = ctypes.c_int.from_address(addr).value
    raw = ctypes.string_at(addr + _SET_E, 8 * (maxsize + 1))
    slots = struct.unpack(f"<{maxsize + 1}Q", raw)
    size = slots[maxsize] & 0xFFFFFFFF  # an int in a pointer-sized union: its low half
    return slots[:size - 1 if size else maxsize]


def _read(libc, fp) -> str:
    libc.rewind(fp)
    buf = ctypes.create_string_buffer(4096)
    n = libc.fread(buf, 1, 4095, fp)
    return buf.raw[:n].decode("utf-8", "replace")


def make_graph(points: np.ndarray, options: str) -> tuple[np.ndarray, np.ndarray]:
    """mjCMesh::MakeGraph on ``points`` (n, 3) with qhull ``options`` ("Qt", ...): the graph
    (numvert, numface, vert_edgeadr, vert_globalid, edge_localid, face_globalid) and the faces
    (m, 3) as MuJoCo orients them. QhullFailure on a qhull error."""
    loaded = _library()
    if loaded is None:
        raise RuntimeError("libqhull_r 8.0.2 (cmeel-qhull) is not available")
    lib, libc = loaded
    pts = np.ascontiguousarray(points, dtype=np.float64)
    n = len(pts)
    qh = ctypes.create_string_buffer(_QH_SIZE + 256)
    base = ctypes.addressof(qh)
    fout, ferr = libc.tmpfile(), libc.tmpfile()
    if not fout or not ferr:
        raise RuntimeError("cannot create a temporary file for qhull")
    try:
        lib.qh_zero(base, ferr)
        # qh_new_qhull keeps qhull's longjmp error exit inside the library; with an output
        # file it also triangulates ("Qt"), as MakeGraph's qh_triangulate does
        code = lib.qh_new_qhull(base, 3, n, pts.ctypes.data, 0, f"qhull {options}".encode(), fout, ferr)
        if code:
            msg = _read(libc, ferr).strip().splitlines()
            raise QhullFailure(msg[0] if msg else f"qhull exit code {code}")
        lib.qh_vertexneighbors(base)
        return _graph(base, pts, n)
    finally:
        cur, tot = ctypes.c_int(), ctypes.c_int()
        lib.qh_freeqhull(base, 0)
        lib.qh_memfreeshort(base, ctypes.byref(cur), ctypes.byref(tot))
        libc.fclose(fout)
        libc.fclose(ferr)


def _graph(base: int, pts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    dim = ctypes.c_int.from_address(base + _QH_HULL_DIM).value
    first = _ptr(base + _QH_FIRST_POINT)
    numvert = ctypes.c_int.from_address(base + _QH_NUM_VERTICES).value
    numface = ctypes.c_int.from_address(base + _QH_NUM_FACETS).value
    if dim != 3 or first != pts.ctypes.data or ctypes.c_int.from_address(base + _QH_NUM_POINTS).value != n:
        raise RuntimeError("unexpected qhull structure layout")
    # FORALLvertices: (next, point, neighbors) of each vertex; the list ends at a sentinel whose
    # next is NULL
    verts, points, neighbors = [], [], []
    v = _ptr(base + _QH_VERTEX_LIST)
    vertex = struct.Struct("<Q8xQQ")
    while v:
        nxt, point, nbr = vertex.unpack(ctypes.string_at(v, 32))
        if not nxt:
            break
        verts.append(v)
        points.append(point)
        neighbors.append(nbr)
        v = nxt
    # FORALLfacets: (next, vertices, flags) of each facet
    facets, fsets, top = [], [], []
    f = _ptr(base + _QH_FACET_LIST)
    facet = struct.Struct(f"<{_F_NEXT}xQQ{_F_FLAGS - _F_VERTICES - 8}xB")
    while f:
        nxt, vset, flags = facet.unpack(ctypes.string_at(f, _F_FLAGS + 1))
        if not nxt:
            break
        facets.append(f)
        fsets.append(vset)
        top.append(bool(flags & _F_TOPORIENT))
        f = nxt
    if len(verts) != numvert or len(facets) != numface:
        raise RuntimeError("unexpected qhull structure layout")
    off = np.array(points, dtype=np.uint64).astype(np.int64) - first
    if (off < 0).any() or (off % 24).any() or (off // 24 >= n).any():
        raise RuntimeError("qhull vertex outside the input points")
    globalid = off // 24
    vid = dict(zip(verts, globalid.tolist(), strict=True))
    findex = {fa: i for i, fa in enumerate(facets)}
    try:
        fverts = np.array([[vid[x] for x in _set(vs)] for vs in fsets], dtype=np.int64).reshape(numface, 3)
    except ValueError:
        raise RuntimeError("qhull did not return triangles") from None
    # edges (MakeGraph): for each hull vertex, the other vertices of its neighbouring facets
    # (vertex->neighbors order, each facet's vertex order), each once, first seen first
    nbr = [[findex[fa] for fa in _set(adr)] for adr in neighbors]
    counts = np.array([len(x) for x in nbr], dtype=np.int64)
    owner = np.repeat(np.repeat(np.arange(numvert), counts), 3)
    cand = fverts[np.concatenate(nbr).astype(np.int64) if len(nbr) else np.zeros(0, np.int64)].ravel()
    keep = cand != globalid[owner]
    owner, cand = owner[keep], cand[keep]
    _, firstseen = np.unique(owner * n + cand, return_index=True)
    firstseen.sort()
    owner, cand = owner[firstseen], cand[firstseen]
    per = np.bincount(owner, minlength=numvert)
    edgeadr = np.concatenate([[0], np.cumsum(per + 1)[:-1]])
    hullid = np.full(n, -1, dtype=np.int64)
    hullid[globalid] = np.arange(numvert)
    edges = np.full(numvert + len(cand), -1, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(per)[:-1]])
    edges[edgeadr[owner] + np.arange(len(cand)) - start[owner]] = hullid[cand]
    if len(edges) != numvert + 3 * numface:
        raise RuntimeError("wrong size in convex hull graph")
    faces = fverts.copy()
    flip = np.array(top, dtype=bool)
    faces[flip] = faces[flip][:, [1, 0, 2]]
    graph = np.concatenate([[numvert, numface], edgeadr, globalid, edges, faces.ravel()]).astype(np.int32)
    return graph, faces.astype(np.int32)


def libcxx_map_order(keys: list[tuple[float, float]]) -> list[int]:
    """The iteration order of a libc++ ``std::unordered_map<std::pair<double, double>, T>`` with
    MuJoCo 4.0's PairHash after inserting ``keys`` (distinct) in this order: indices into ``keys``
    (MakePolygons keeps its polygon groups in such a map).

    PairHash combines the two hashes as boost's hash_combine does, h1 ^ (h2 + 0x9e3779b9 +
    (h1 << 6) + (h1 >> 2)) (read from the mujoco 4.0.0 binary; the 3.x source XORs them), and
    libc++'s hash<double> is the bit pattern (0 for ±0). libc++ keeps one singly linked list of
    nodes and, per bucket, the node before the bucket's first node; a new key goes right after
    its bucket's predecessor node, or at the list's head when its bucket is empty. The table
    grows (to the next prime of 2*count+1, or at least the size) when the size would exceed the
    bucket count (max_load_factor 1), relinking the nodes in list order (__do_rehash)."""
    n = len(keys)
    hashes = []
    for a, b in keys:
        ha = 0 if a == 0.0 else struct.unpack("<Q", struct.pack("<d", a))[0]
        hb = 0 if b == 0.0 else struct.unpack("<Q", struct.pack("<d", b))[0]
        hashes.append(ha ^ ((hb + 0x9E3779B9 + (ha << 6) + (ha >> 2)) & _MASK64))
    head = n                       # the list's anchor node (__p1_)
    nxt = [-1] * (n + 1)
    buckets: list[int] = []        # per bucket: the node before its first node, -1 if empty
    bc = 0

    def constrain(h: int, count: int) -> int:
        return h & (count - 1) if not count & (count - 1) else (h if h < count else h % count)

    def rehash(count: int) -> None:
        nonlocal buckets, bc
        buckets = [-1] * count
        bc = count
        pp = head
        cp = nxt[pp]
        if cp == -1:
            return
        phash = constrain(hashes[cp], count)
        buckets[phash] = pp
        pp, cp = cp, nxt[cp]
        while cp != -1:
            chash = constrain(hashes[cp], count)
            if chash == phash:
                pp = cp
            elif buckets[chash] == -1:
                buckets[chash] = pp
                pp, phash = cp, chash
            else:
                nxt[pp] = nxt[cp]
                nxt[cp] = nxt[buckets[chash]]
                nxt[buckets[chash]] = cp
            cp = nxt[pp]

    for size, h in enumerate(hashes):
        if size + 1 > bc:
            pow2 = bc > 2 and not bc & (bc - 1)
            want = max(2 * bc + (not pow2), size + 1)
            if want == 1:
                want = 2
            elif want & (want - 1):
                want = _next_prime(want)
            if want > bc:
                rehash(want)
        c = constrain(h, bc)
        node = size
        pn = buckets[c]
        if pn == -1:
            nxt[node] = nxt[head]
            nxt[head] = node
            buckets[c] = head
            if nxt[node] != -1:
                buckets[constrain(hashes[nxt[node]], bc)] = node
        else:
            nxt[node] = nxt[pn]
            nxt[pn] = node
    order = []
    cp = nxt[head]
    while cp != -1:
        order.append(cp)
        cp = nxt[cp]
    return order


def _next_prime(n: int) -> int:
    """The smallest prime >= n (libc++'s __next_prime)."""
    if n <= 2:
        return 2
    p = n | 1 if n % 2 == 0 else n
    while True:
        if all(p % d for d in range(3, int(p ** 0.5) + 1, 2)):
            return p
        p += 2


__all__ = ["QhullFailure", "available", "libcxx_map_order", "make_graph"]
