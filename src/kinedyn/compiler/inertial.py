"""Mass properties: geom volumes and inertias, combining geoms, principal axes.

Mirrors mjCGeom::GetVolume / mjCGeom::SetInertia, mjCBody::InertiaFromGeom
(src/user/user_objects.cc) and mjuu_globalinertia / mjuu_offcenter /
mjuu_eig3 / mjuu_fullInertia (src/user/user_util.cc). The principal axes come
from the same quaternion-parametrised Jacobi iteration as MuJoCo's, including
its descending sort of the eigenvalues, so ``body_iquat`` matches MuJoCo's choice
among the equivalent principal frames, not just any one of them.
"""

from __future__ import annotations

import math

from kinedyn.compiler.frames import mulquat, quat2mat
from kinedyn.engine.types import GeomType

PI = math.pi


def geom_volume(gtype: int, size, shell: bool) -> float:
    """Volume (or surface area when ``shell``) of a primitive geom (GetVolume)."""
    r = size[0]
    if gtype == GeomType.SPHERE:
        return 4 * PI * r * r if shell else 4 * PI * r * r * r / 3
    if gtype == GeomType.CAPSULE:
        h = 2 * size[1]
        return 4 * PI * r * r + 2 * PI * r * h if shell else PI * (r * r * h + 4 * r * r * r / 3)
    if gtype == GeomType.CYLINDER:
        h = 2 * size[1]
        return 2 * PI * r * r + 2 * PI * r * h if shell else PI * r * r * h
    if gtype == GeomType.ELLIPSOID:
        if shell:
            p = 1.6075  # Thomsen's approximation of the ellipsoid surface
            tmp = (size[0] * size[1]) ** p + (size[1] * size[2]) ** p + (size[2] * size[0]) ** p
            return 4 * PI * (tmp / 3) ** (1 / p)
        return 4 * PI * size[0] * size[1] * size[2] / 3
    if gtype in (GeomType.BOX, GeomType.HFIELD):
        if shell:
            return 8 * (size[0] * size[1] + size[1] * size[2] + size[2] * size[0])
        return size[0] * size[1] * size[2] * 8
    return 0.0


def geom_inertia(gtype: int, size, mass: float, shell: bool) -> list[float]:
    """Diagonal inertia of a primitive geom about its centre, in the geom frame (SetInertia)."""
    if gtype == GeomType.SPHERE:
        i = 2 * mass * size[0] * size[0] / (3 if shell else 5)
        return [i, i, i]
    if gtype == GeomType.CAPSULE:
        halfheight, height, r = size[1], 2 * size[1], size[0]
        if not shell:
            # solid: cylinder plus two hemispheres displaced along the axis
            sphere_mass = mass * 4 * r / (4 * r + 3 * height)
            cyl_mass = mass - sphere_mass
            ixy = cyl_mass * (3 * r * r + height * height) / 12
            iz = cyl_mass * r * r / 2
            sphere_inertia = 2 * sphere_mass * r * r / 5
            shift = sphere_mass * height * (3 * r + 2 * height) / 8
            # SetInertia adds the hemispheres' sum to the cylinder's: ixy + (sphere + shift)
            return [ixy + (sphere_inertia + shift), ixy + (sphere_inertia + shift), iz + sphere_inertia]
        a_sphere = 4 * PI * r * r
        a_total = a_sphere + 2 * PI * r * height
        sphere_mass = mass * a_sphere / a_total
        cyl_mass = mass - sphere_mass
        ixy = cyl_mass * (6 * r * r + height * height) / 12
        iz = cyl_mass * r * r
        sphere_inertia = 2 * sphere_mass * r * r / 3
        hs_com = r / 2
        hs_pos = halfheight + hs_com
        shift = sphere_mass * (hs_pos * hs_pos - hs_com * hs_com)
        return [ixy + (sphere_inertia + shift), ixy + (sphere_inertia + shift), iz + sphere_inertia]
    if gtype == GeomType.CYLINDER:
        halfheight, height, r = size[1], 2 * size[1], size[0]
        if not shell:
            ixy = mass * (3 * r * r + height * height) / 12
            return [ixy, ixy, mass * r * r / 2]
        a_disk = PI * r * r
        a_total = 2 * a_disk + 2 * PI * r * height
        mass_disk = mass * a_disk / a_total
        mass_cyl = mass - 2 * mass_disk
        ixy = mass_cyl * (6 * r * r + height * height) / 12
        iz = mass_cyl * r * r
        disk_x = mass_disk * r * r / 4 + mass_disk * halfheight * halfheight
        disk_z = mass_disk * r * r / 2
        return [ixy + 2 * disk_x, ixy + 2 * disk_x, iz + 2 * disk_z]
    if gtype == GeomType.ELLIPSOID:
        s00, s11, s22 = size[0] ** 2, size[1] ** 2, size[2] ** 2
        if not shell:
            return [mass * (s11 + s22) / 5, mass * (s00 + s22) / 5, mass * (s00 + s11) / 5]
        # shell: difference of two solid ellipsoids 1e-6 apart
        eps = 1e-6
        va = 4 * PI * size[0] * size[1] * size[2] / 3
        ae, be, ce = size[0] + eps, size[1] + eps, size[2] + eps
        vb = 4 * PI * ae * be * ce / 3
        density = mass / (vb - va)
        ma, mb = va * density, vb * density
        return [mb * (be * be + ce * ce) / 5 - ma * (s11 + s22) / 5,
                mb * (ae * ae + ce * ce) / 5 - ma * (s00 + s22) / 5,
                mb * (ae * ae + be * be) / 5 - ma * (s00 + s11) / 5]
    if gtype in (GeomType.BOX, GeomType.HFIELD):
        s00, s11, s22 = size[0] ** 2, size[1] ** 2, size[2] ** 2
        if not shell:
            return [mass * (s11 + s22) / 3, mass * (s00 + s22) / 3, mass * (s00 + s11) / 3]
        lx, ly, lz = 2 * size[0], 2 * size[1], 2 * size[2]
        a0, a1, a2 = lx * ly, ly * lz, lz * lx
        a_total = 2 * (a0 + a1 + a2)
        m0, m1, m2 = mass * a0 / a_total, mass * a1 / a_total, mass * a2 / a_total
        ix0, iy0, iz0 = m0 * ly * ly / 12, m0 * lx * lx / 12, m0 * (lx * lx + ly * ly) / 12
        ix1, iy1, iz1 = m1 * (ly * ly + lz * lz) / 12, m1 * lz * lz / 12, m1 * ly * ly / 12
        ix2, iy2, iz2 = m2 * lz * lz / 12, m2 * (lx * lx + lz * lz) / 12, m2 * lx * lx / 12
        return [2 * (m0 * s22 + m2 * s11 + ix0 + ix1 + ix2),
                2 * (m0 * s22 + m1 * s00 + iy0 + iy1 + iy2),
                2 * (m1 * s00 + m2 * s11 + iz0 + iz1 + iz2)]
    return [0.0, 0.0, 0.0]


def global_inertia(local, quat) -> list[float]:
    """Full inertia [xx yy zz xy xz yz] of a diagonal inertia rotated by ``quat`` (mjuu_globalinertia)."""
    m = quat2mat(quat)
    t = [m[0] * local[0], m[3] * local[0], m[6] * local[0],
         m[1] * local[1], m[4] * local[1], m[7] * local[1],
         m[2] * local[2], m[5] * local[2], m[8] * local[2]]
    return [m[0] * t[0] + m[1] * t[3] + m[2] * t[6],
            m[3] * t[1] + m[4] * t[4] + m[5] * t[7],
            m[6] * t[2] + m[7] * t[5] + m[8] * t[8],
            m[0] * t[1] + m[1] * t[4] + m[2] * t[7],
            m[0] * t[2] + m[1] * t[5] + m[2] * t[8],
            m[3] * t[2] + m[4] * t[5] + m[5] * t[8]]


def offcenter(mass: float, v) -> list[float]:
    """Parallel-axis term of a point mass at ``v`` (mjuu_offcenter)."""
    return [mass * (v[1] * v[1] + v[2] * v[2]), mass * (v[0] * v[0] + v[2] * v[2]),
            mass * (v[0] * v[0] + v[1] * v[1]),
            -mass * v[0] * v[1], -mass * v[0] * v[2], -mass * v[1] * v[2]]


def _transpose(a):
    return [a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]]


def _matmul(a, b):
    return [sum(a[3 * i + k] * b[3 * k + j] for k in range(3)) for i in range(3) for j in range(3)]


_EIG_EPS = 1e-12  # eigenvalues closer than this, relative to max |A_ij|, are not reordered
_EIG_REL = 4e-15  # off-diagonal residual, relative to max |A_ij| (the 4.0 binary's constant)
_EIG_MESH = 1e-7  # the mesh compiler's off-diagonal residual, relative to max |A_ij|


def eig3(mat, mesh: bool = False) -> tuple[list[float], list[float]]:
    """Eigenvalues (descending) and the quaternion of the eigenvector frame of a symmetric 3x3.

    Jacobi rotations accumulated as a quaternion (mjuu_mulquat), then a three-swap bubble sort
    that rotates by 90 degrees per swap, as MuJoCo's mjuu_eig3. MuJoCo 4.0 measures its
    tolerances relative to the largest entry of ``mat`` (``scale``): the iteration stops when
    the largest off-diagonal element is at most 4e-15 of it (the constant mjCBody passes, read
    off libmujoco.so.4.0.0; 16 epsilons before session 11, 26 of 6000 random matrices then
    differed from 4.0's mjuu_eig3 called through ctypes, none now), each rotation is built from
    the cancellation-free half-angle tangent, and two eigenvalues are swapped only when they
    differ by more than 1e-12 of it (an absolute 1e-12 kept the unsorted order for tiny
    inertias: a thin mesh in metres with density 1, a body of 1e-10 kg). Found against mujoco
    4.0.0 (its 4.0 source is not available here) through ``<inertial fullinertia>`` and random
    bodies: body_iquat bit for bit on 119 of 120 random, half of them nearly degenerate,
    inertias and 1079 of 1111 bodies of random trees, the others within 5e-15 (the sort of
    tiny inertias: tests/test_compiler.py).

    ``mesh``: the principal axes of a mesh, as MuJoCo 4.0's mesh compiler runs the iteration:
    it also stops as soon as the largest off-diagonal element is below 1e-7 of ``scale``. The
    stop separates, with no exception, the rotations MuJoCo 4.0 applies from the ones it skips
    on the 341 meshes of the corpus's models that had differed (largest skipped 9.78e-8,
    smallest applied 1.09e-7) and reproduces all their mesh_quat bit for bit, as it does for
    400 random point clouds turned by random refquat (measuring the stop against the current
    diagonal instead of ``mat`` misses 5 of them); tests/test_mesh.py checks it on a rod turned
    by angles around the threshold.
    """
    scale = max(abs(x) for x in mat)
    quat = [1.0, 0.0, 0.0, 0.0]
    eigval = [0.0, 0.0, 0.0]
    for _ in range(500):
        vec = quat2mat(quat)
        d = _matmul(_matmul(_transpose(vec), mat), vec)
        eigval = [d[0], d[4], d[8]]
        # largest off-diagonal element picks the rotation plane
        if abs(d[1]) > abs(d[2]) and abs(d[1]) > abs(d[5]):
            rk, ck, rotk = 0, 1, 2
        elif abs(d[2]) > abs(d[5]):
            rk, ck, rotk = 0, 2, 1
        else:
            rk, ck, rotk = 1, 2, 0
        off = d[3 * rk + ck]
        if abs(off) <= _EIG_REL * scale or off == 0 or (mesh and abs(off) < _EIG_MESH * scale):
            break
        # 2x2 symmetric Schur decomposition: t = tan(theta)
        tau = (d[4 * ck] - d[4 * rk]) / (2 * off)
        if tau >= 0:
            t = 1.0 / (tau + math.sqrt(1 + tau * tau))
        else:
            t = -1.0 / (-tau + math.sqrt(1 + tau * tau))
        # rotation quaternion from h = tan(theta/2)
        h = t / (1 + math.sqrt(1 + t * t))
        rot = [1 / math.sqrt(1 + h * h), 0.0, 0.0, 0.0]
        rot[rotk + 1] = (h if rotk == 1 else -h) * rot[0]
        quat = mulquat(quat, rot)
    # sort descending: swaps (0,1), (1,2), (0,1), each a 90-degree turn of the frame; the mesh
    # compiler keeps the order of eigenvalues within its looser 1e-7 of ``scale``
    sort_eps = (_EIG_MESH if mesh else _EIG_EPS) * scale
    for j in range(3):
        j1 = j % 2
        if eigval[j1] + sort_eps < eigval[j1 + 1]:
            eigval[j1], eigval[j1 + 1] = eigval[j1 + 1], eigval[j1]
            rot = [0.707106781186548, 0.0, 0.0, 0.0]
            rot[(j1 + 2) % 3 + 1] = rot[0]
            quat = mulquat(quat, rot)
    return eigval, quat


def mul_rmrt(r, a) -> list[float]:
    """R A R' of row-major 3x3 matrices, as (R A) R' (mjuu_mulRMRT's order of products and sums)."""
    ra = _matmul(r, a)
    return [ra[3 * i] * r[3 * j] + ra[3 * i + 1] * r[3 * j + 1] + ra[3 * i + 2] * r[3 * j + 2]
            for i in range(3) for j in range(3)]


def full_inertia(full6, frame=None, lenient: bool = False) -> tuple[list[float], list[float]] | None:
    """Principal inertia and frame quaternion of [xx yy zz xy xz yz]; None if not positive definite
    (``lenient``: the principal moments whatever their sign, as a URDF loaded as given needs).

    ``frame``: the quaternion of the frame the matrix is given in (a URDF inertial's rpy). As
    MuJoCo 4.0's mjCBody::Compile (read off libmujoco.so.4.0.0): the 3x3 matrix is turned into
    the body frame by mjuu_mulRMRT with quat2mat(frame), and its upper triangle, mirrored, is
    diagonalised; without a frame the rotation is the identity, which changes no bit.
    """
    xx, yy, zz, xy, xz, yz = full6
    if frame is not None:
        r = mul_rmrt(quat2mat(frame), [xx, xy, xz, xy, yy, yz, xz, yz, zz])
        xx, yy, zz, xy, xz, yz = r[0], r[4], r[8], r[1], r[2], r[5]
    eigval, quat = eig3([xx, xy, xz, xy, yy, yz, xz, yz, zz])
    if eigval[2] < 1e-14 and not lenient:
        return None
    return eigval, quat


def about(mass: float, pos, quat, inertia, com) -> list[float]:
    """Full inertia [xx yy zz xy xz yz] of a principal ``inertia`` at (``pos``, ``quat``) about ``com``:
    the rotated inertia plus the parallel-axis term, summed in that order."""
    a = global_inertia(inertia, quat)
    b = offcenter(mass, [pos[0] - com[0], pos[1] - com[1], pos[2] - com[2]])
    return [a[k] + b[k] for k in range(6)]


def combine(parts) -> tuple[float, list[float], list[float], list[float]] | None:
    """Total mass, com, principal inertia and principal quat of [(mass, pos, quat, inertia)].

    InertiaFromGeom: one part is copied as is; several are summed about their
    common centre of mass and re-diagonalised. Returns None when the summed
    inertia is not positive definite.
    """
    if len(parts) == 1:
        mass, pos, quat, inertia = parts[0]
        return mass, list(pos), list(quat), list(inertia)
    mass = sum(p[0] for p in parts)
    com = [0.0, 0.0, 0.0]
    for m, pos, _, _ in parts:
        for k in range(3):
            com[k] += m * pos[k]
    com = [c / mass for c in com]
    total = [0.0] * 6
    for m, pos, quat, inertia in parts:
        dpos = [pos[0] - com[0], pos[1] - com[1], pos[2] - com[2]]
        a = global_inertia(inertia, quat)
        b = offcenter(m, dpos)
        for k in range(6):
            total[k] = total[k] + a[k] + b[k]
    res = full_inertia(total)
    if res is None:
        return None
    return mass, com, res[1], res[0]
