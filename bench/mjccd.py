"""MuJoCo 4.0's own convex collider, called from Python: ``mjc_initCCDObj`` and ``mjc_ccd`` are
exported by ``libmujoco.so.4.0.0`` (not by the Python bindings). Used in session 9 to compare
``kinedyn.engine.collision_gjk.ccd`` with MuJoCo call by call on identical objects (height-field
prisms; any pair mjc_Convex collides), which is how 4.0's GJK sub-algorithm numerics were found.

The struct layouts are MuJoCo 4.0.0's, found by filling buffers with a pattern and reading back
what ``mjc_initCCDObj`` wrote (they differ from the 3.x headers: 4.0's mjCCDObj has 120 more
bytes before its union). Checked by reproducing every height-field contact of ``mj_forward``
bit for bit (``python -m bench.mjccd``). Linux x86-64 only; not used by the tests.

    obj1, obj2 = Obj(m, d, g1), Obj(m, d, g2)
    dist, status, buffer = ccd(m, obj1, obj2, max_contacts=1)
    status.dist[0], status.x1[0], status.x2[0], status.gjk_iterations, status.epa_iterations
    polytope(buffer, n)   # EPA's vertices left in the buffer: (vert, vert1, vert2), index1, index2
"""

from __future__ import annotations

import ctypes
import math
import os

import mujoco
import numpy as np

LIB = ctypes.CDLL(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so.4.0.0"))
LIB.mjc_initCCDObj.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_double]
LIB.mjc_ccdSize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
LIB.mjc_ccdSize.restype = ctypes.c_size_t
LIB.mjc_ccd.argtypes = [ctypes.c_void_p] * 4
LIB.mjc_ccd.restype = ctypes.c_double

# mjCCDObj (496 bytes): geom 0, geom_type 4, size[4] 8, pos[3] 40, mat[9] 64, vertindex 136,
# meshindex 140, flex 144, elem 148, vert 152, margin 160, rotate[4] 168, (4.0: 120 bytes) 200,
# union 320 (hfield: prism[6][3] 320, hfield_data 464, nrow 472, ncol 476), center 480, support 488
OBJ_SIZE = 496
POS, MAT, MARGIN, PRISM = 40, 64, 160, 320


class Obj:
    """An mjCCDObj of geom g as mjc_initCCDObj sets it up (world frame)."""

    def __init__(self, m, d, g, margin=0.0):
        self.buf = np.zeros(OBJ_SIZE, np.uint8)
        LIB.mjc_initCCDObj(self.buf.ctypes.data, m._address, d._address, g, margin)

    def get(self, off, n):
        return self.buf[off:off + 8 * n].view(np.float64).copy()

    def set(self, off, values):
        self.buf[off:off + 8 * len(values)] = np.asarray(values, np.float64).view(np.uint8)


class Status:
    """mjCCDStatus: dist[50] 8, x1[150] 408, x2[150] 1608, nx 2808, max_iterations 2812,
    tolerance 2816, max_contacts 2824, dist_cutoff 2832, gjk_iterations 2840, epa_iterations
    2844, epa_status 2848 (4.0 leaves the simplex unwritten)."""

    def __init__(self):
        self.buf = np.zeros(16384, np.uint8)

    def _i(self, off):
        return int(self.buf[off:off + 4].view(np.int32)[0])

    dist = property(lambda s: s.buf[8:408].view(np.float64))
    x1 = property(lambda s: s.buf[408:1608].view(np.float64).reshape(50, 3))
    x2 = property(lambda s: s.buf[1608:2808].view(np.float64).reshape(50, 3))
    nx = property(lambda s: s._i(2808))
    gjk_iterations = property(lambda s: s._i(2840))
    epa_iterations = property(lambda s: s._i(2844))
    epa_status = property(lambda s: s._i(2848))


def ccd(m, obj1, obj2, max_contacts=1, dist_cutoff=0.0, iterations=None, tolerance=None):
    """mjc_ccd with mjCCDConfig {max_iterations 0, tolerance 8, max_contacts 16, dist_cutoff 24,
    buffer 32, npolygonmax 40, nmeshdegmax 44}; returns (distance, Status, buffer)."""
    it = int(m.opt.ccd_iterations if iterations is None else iterations)
    tol = float(m.opt.ccd_tolerance if tolerance is None else tolerance)
    npoly, ndeg = int(getattr(m, "npolygonmax", 0)), int(getattr(m, "nmeshdegmax", 0))
    buffer = np.zeros(LIB.mjc_ccdSize(npoly, ndeg, it) + 64, np.uint8)
    cfg = np.zeros(64, np.uint8)
    cfg[0:4] = np.array([it], np.int32).view(np.uint8)
    cfg[8:16] = np.array([tol]).view(np.uint8)
    cfg[16:20] = np.array([max_contacts], np.int32).view(np.uint8)
    cfg[24:32] = np.array([dist_cutoff]).view(np.uint8)
    cfg[32:40] = np.array([buffer.ctypes.data], np.uint64).view(np.uint8)
    cfg[40:48] = np.array([npoly, ndeg], np.int32).view(np.uint8)
    status = Status()
    dist = LIB.mjc_ccd(cfg.ctypes.data, status.buf.ctypes.data, obj1.buf.ctypes.data, obj2.buf.ctypes.data)
    return dist, status, buffer


def polytope(buffer, n):
    """EPA's first n polytope vertices (80 bytes each): ((vert, vert1, vert2), index1, index2)."""
    out = []
    for i in range(n):
        v = buffer[80 * i:80 * i + 72].view(np.float64).reshape(3, 3).copy()
        i1, i2 = buffer[80 * i + 72:80 * i + 80].view(np.int32)
        out.append((v, int(i1), int(i2)))
    return out


def hfield_objects(m, d, g1, g2, margin=0.0):
    """The two objects of mjc_ConvexHField: the field (its prism to be set at PRISM) and geom g2
    in the field's frame (mat1' (pos2 - pos1), mat1' mat2), carrying the margin."""
    o1, o2 = Obj(m, d, g1), Obj(m, d, g2)
    m1, m2 = d.geom_xmat[g1].reshape(3, 3), d.geom_xmat[g2].reshape(3, 3)
    v = d.geom_xpos[g2] - d.geom_xpos[g1]
    o2.set(POS, [m1[0, i] * v[0] + m1[1, i] * v[1] + m1[2, i] * v[2] for i in range(3)])
    o2.set(MAT, [m1[0, i] * m2[0, j] + m1[1, i] * m2[1, j] + m1[2, i] * m2[2, j]
                 for i in range(3) for j in range(3)])
    o1.set(MARGIN, [margin])
    o2.set(MARGIN, [margin])
    return o1, o2


def _check():
    """Every height-field contact of mj_forward found again prism by prism through mjc_ccd."""
    rng = np.random.default_rng(0)
    elev = " ".join(f"{v:.4f}" for v in rng.uniform(0, 1, 5 * 6))
    xml = (f'<mujoco><asset><hfield name="h" nrow="5" ncol="6" size="1 .8 .3 .1" elevation="{elev}"/>'
           '</asset><worldbody><geom type="hfield" hfield="h" euler="3 -4 20"/>'
           '<body pos="0 0 .2" euler="20 30 40"><freejoint/><geom type="box" size=".2 .15 .1"/></body>'
           '</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    hid = m.geom_dataid[0]
    nrow, ncol = m.hfield_nrow[hid], m.hfield_ncol[hid]
    s0, s1, s2, s3 = m.hfield_size[hid]
    data = m.hfield_data[m.hfield_adr[hid]:]
    dx, dy = 2 * s0 / (ncol - 1), 2 * s1 / (nrow - 1)
    o1, o2 = hfield_objects(m, d, 0, 1)
    m1 = d.geom_xmat[0].reshape(3, 3)
    found = []
    for r in range(nrow - 1):
        for c in range(ncol - 1):
            corners = [(r + 1, c), (r, c), (r + 1, c + 1), (r, c + 1)]  # addPrismVert's order
            for tri in (corners[:3], corners[1:]):
                prism = [(dx * cc - s0, dy * rr - s1, -s3) for rr, cc in tri]
                prism += [(dx * cc - s0, dy * rr - s1, data[rr * ncol + cc] * s2) for rr, cc in tri]
                o1.set(PRISM, np.ravel(prism))
                dist, st, _ = ccd(m, o1, o2)
                if dist < 0:
                    mid = (st.x1[0] + st.x2[0]) * 0.5
                    pos = [m1[k, 0] * mid[0] + m1[k, 1] * mid[1] + m1[k, 2] * mid[2] + d.geom_xpos[0, k]
                           for k in range(3)]
                    found.append((st.dist[0], np.array(pos)))
    hits = sum(any(f[0] == d.contact.dist[i] and np.array_equal(f[1], d.contact.pos[i]) for f in found)
               for i in range(d.ncon))
    print(f"{hits} of {d.ncon} contacts of mj_forward reproduced bit for bit ({len(found)} found)")
    assert hits == d.ncon > 0 and not math.isnan(found[0][0])


if __name__ == "__main__":
    _check()
