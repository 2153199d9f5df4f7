"""Position stage: world frames of cameras and lights (mj_camlight, engine_core_smooth.c).

Runs after ``com_pos`` (the com modes read ``subtree_com``). Each camera and light is
first placed rigidly in its body (``fixed``), then its mode adjusts it:

* ``track`` / ``trackcom``: the world orientation of qpos0 (``cam_mat0``, ``light_dir0``)
  at a fixed world offset from the body (``cam_pos0``) or from its subtree com
  (``cam_poscom0``);
* ``targetbody`` / ``targetbodycom``: the position stays fixed in the body and the camera
  looks at the target body's origin or subtree com, with its x axis horizontal (a light
  points at it).

The qpos0 constants are computed by ``engine.setconst`` from the fixed frames at qpos0,
as MuJoCo's ``set0``.
"""

from __future__ import annotations

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.types import (
    CAMLIGHT_TARGETBODY,
    CAMLIGHT_TARGETBODYCOM,
    CAMLIGHT_TRACK,
    CAMLIGHT_TRACKCOM,
)
from kinedyn.engine.util_spatial import (
    normalized3,
    quat_product,
    rotated_by_quat,
    rotation_of_quat,
    set_mat,
    unsigned_index,
)


@kernel
def _body_point(out, i, xpos, xmat, b, pos):
    """out[i] = xmat_b pos[i] + xpos_b (mj_local2Global's position, in its order of operations)."""
    for k in range(3):
        out[i, k] = (xmat[b, k, 0] * pos[i, 0] + xmat[b, k, 1] * pos[i, 1] + xmat[b, k, 2] * pos[i, 2]) \
            + xpos[b, k]


@kernel
def _track(out, i, mode, b, xpos, subtree_com, pos0, poscom0):
    """A tracking camera or light keeps its qpos0 offset from the body (track) or from the body's
    subtree com (trackcom): out[i] = anchor + offset."""
    for k in range(3):
        if mode == CAMLIGHT_TRACK:
            out[i, k] = xpos[b, k] + pos0[i, k]
        else:
            out[i, k] = subtree_com[b, k] + poscom0[i, k]


@kernel
def _target_point(mode, t, xpos, subtree_com):
    """The point a targeting camera or light looks at: the target body's frame origin
    (targetbody) or its subtree com (targetbodycom)."""
    if mode == CAMLIGHT_TARGETBODY:
        return xpos[t, 0], xpos[t, 1], xpos[t, 2]
    return subtree_com[t, 0], subtree_com[t, 1], subtree_com[t, 2]


@kernel
def _cameras(cam_mode, cam_bodyid, cam_targetbodyid, cam_pos, cam_quat, cam_poscom0, cam_pos0, cam_mat0,
             xpos, xquat, xmat, subtree_com, cam_xpos, cam_xmat):
    for i in range(cam_mode.shape[0]):
        b = unsigned_index(cam_bodyid[i])
        target = cam_targetbodyid[i]
        mode = cam_mode[i]
        # fixed in the body frame
        _body_point(cam_xpos, i, xpos, xmat, b, cam_pos)
        qw, qx, qy, qz = quat_product(xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3],
                                      cam_quat[i, 0], cam_quat[i, 1], cam_quat[i, 2], cam_quat[i, 3])
        set_mat(cam_xmat, i, *rotation_of_quat(qw, qx, qy, qz))
        if mode == CAMLIGHT_TRACK or mode == CAMLIGHT_TRACKCOM:
            for k in range(3):
                for c in range(3):
                    cam_xmat[i, k, c] = cam_mat0[i, k, c]
            _track(cam_xpos, i, mode, b, xpos, subtree_com, cam_pos0, cam_poscom0)
        elif (mode == CAMLIGHT_TARGETBODY or mode == CAMLIGHT_TARGETBODYCOM) and target >= 0:
            lx, ly, lz = _target_point(mode, unsigned_index(target), xpos, subtree_com)
            # z: from the target to the camera (the camera looks along -z)
            zx, zy, zz, _ = normalized3(cam_xpos[i, 0] - lx, cam_xpos[i, 1] - ly, cam_xpos[i, 2] - lz)
            # x: (0, 0, 1) x z, horizontal
            ux, uy, uz = 0.0, 0.0, 1.0
            xx, xy, xz, _ = normalized3(uy * zz - uz * zy, uz * zx - ux * zz, ux * zy - uy * zx)
            # y: z x x
            yx, yy, yz, _ = normalized3(zy * xz - zz * xy, zz * xx - zx * xz, zx * xy - zy * xx)
            # the axes are the columns of cam_xmat
            set_mat(cam_xmat, i, xx, yx, zx, xy, yy, zy, xz, yz, zz)


@kernel
def _lights(light_mode, light_bodyid, light_targetbodyid, light_pos, light_dir, light_poscom0, light_pos0,
            light_dir0, xpos, xquat, xmat, subtree_com, light_xpos, light_xdir):
    for i in range(light_mode.shape[0]):
        b = unsigned_index(light_bodyid[i])
        target = light_targetbodyid[i]
        mode = light_mode[i]
        _body_point(light_xpos, i, xpos, xmat, b, light_pos)
        dx, dy, dz = rotated_by_quat(light_dir[i, 0], light_dir[i, 1], light_dir[i, 2],
                                     xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3])
        if mode == CAMLIGHT_TRACK or mode == CAMLIGHT_TRACKCOM:
            dx, dy, dz = light_dir0[i, 0], light_dir0[i, 1], light_dir0[i, 2]
            _track(light_xpos, i, mode, b, xpos, subtree_com, light_pos0, light_poscom0)
        elif (mode == CAMLIGHT_TARGETBODY or mode == CAMLIGHT_TARGETBODYCOM) and target >= 0:
            lx, ly, lz = _target_point(mode, unsigned_index(target), xpos, subtree_com)
            dx, dy, dz = lx - light_xpos[i, 0], ly - light_xpos[i, 1], lz - light_xpos[i, 2]
        dx, dy, dz, _ = normalized3(dx, dy, dz)
        light_xdir[i, 0] = dx
        light_xdir[i, 1] = dy
        light_xdir[i, 2] = dz


@handle_entry
def camlight_entry(m, d):
    _cameras(m.cam_mode, m.cam_bodyid, m.cam_targetbodyid, m.cam_pos, m.cam_quat, m.cam_poscom0, m.cam_pos0,
             m.cam_mat0, d.xpos, d.xquat, d.xmat, d.subtree_com, d.cam_xpos, d.cam_xmat)
    _lights(m.light_mode, m.light_bodyid, m.light_targetbodyid, m.light_pos, m.light_dir, m.light_poscom0,
            m.light_pos0, m.light_dir0, d.xpos, d.xquat, d.xmat, d.subtree_com, d.light_xpos, d.light_xdir)


_CAMLIGHT = FastEntry(camlight_entry)


def camlight(m, d) -> None:
    """World frames of cameras and lights.

    Reads: xpos, xquat, xmat, subtree_com. Writes: cam_xpos, cam_xmat, light_xpos,
    light_xdir. Mirrors mj_camlight.
    """
    check_model_data(m, d, "camlight")
    _CAMLIGHT.call(m._ptr, d._ptr)
