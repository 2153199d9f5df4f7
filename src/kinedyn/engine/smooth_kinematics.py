"""Position stage, part 1: forward kinematics and com-based quantities.

Mirrors ``mj_kinematics`` and ``mj_comPos`` (MuJoCo engine_core_smooth.c).
Frames: ``x*`` fields are in the world frame; ``c*`` fields are spatial
quantities expressed in the world orientation about the centre of mass of each
kinematic tree (``subtree_com`` of the tree's root body), [rotation; translation].
"""

from __future__ import annotations

from kinedyn._jit import FastEntry, handle_entry, kernel
from kinedyn.engine.checks import bad_model_data
from kinedyn.engine.types import (
    JNT_BALL,
    JNT_FREE,
    JNT_HINGE,
    JNT_SLIDE,
    MINVAL,
    SAMEFRAME_BODY,
    SAMEFRAME_BODYROT,
    SAMEFRAME_INERTIA,
    SAMEFRAME_INERTIAROT,
)
from kinedyn.engine.util_spatial import (
    normalized_quat,
    quat2mat,
    quat_about_axis,
    quat_product,
    rotated_by_quat,
    rotation_of_quat,
    set_mat,
    unsigned_index,
)


# _body_poses and _frames are two kernels inlined into kinematics_entry: one kernel of over
# 30 arguments could not be inlined (docs/benchmarks.md, speed history).
@kernel(inline="always")
def _body_poses(
    # model
    body_parentid, body_jntnum, body_jntadr, body_pos, body_quat, body_mocapid,
    jnt_type, jnt_qposadr, jnt_pos, jnt_axis, qpos0,
    # data in
    qpos, mocap_pos, mocap_quat,
    # data out
    xpos, xquat, xmat, xipos, ximat, xanchor, xaxis,
):
    """World poses of the bodies and world anchors/axes of their joints (mj_kinematics1).

    A mocap body (a jointless child of the world) takes its pose from mocap_pos and the
    normalised mocap_quat instead of body_pos and body_quat.
    """
    nbody = body_parentid.shape[0]

    # world body: origin, identity orientation
    for k in range(3):
        xpos[0, k] = 0.0
        xipos[0, k] = 0.0
        for c in range(3):
            xmat[0, k, c] = 1.0 if k == c else 0.0
            ximat[0, k, c] = 1.0 if k == c else 0.0
    xquat[0, 0] = 1.0
    for k in range(1, 4):
        xquat[0, k] = 0.0

    # forward pass over bodies: compose parent pose, body offset and joint motions.
    # The pose being built, position (px, py, pz) and orientation (qw, qx, qy, qz), lives in
    # locals and is stored once per body, as mj_kinematics1 does: written to xpos/xquat after
    # each joint, every later read had to reload it, since the stores to xanchor/xaxis may
    # alias it as far as the compiler knows. Row numbers read from int arrays are unsigned
    # (unsigned_index).
    for b in range(1, nbody):
        jntadr = body_jntadr[b]
        jntnum = body_jntnum[b]

        if jntnum == 1 and jnt_type[jntadr] == JNT_FREE:
            # free joint: qpos holds the world pose directly
            j = unsigned_index(jntadr)
            qadr = jnt_qposadr[j]
            px, py, pz = qpos[qadr], qpos[qadr + 1], qpos[qadr + 2]
            qw, qx, qy, qz = normalized_quat(qpos[qadr + 3], qpos[qadr + 4], qpos[qadr + 5], qpos[qadr + 6])
            xanchor[j, 0], xanchor[j, 1], xanchor[j, 2] = px, py, pz
            for k in range(3):
                xaxis[j, k] = jnt_axis[j, k]
        else:
            # pose of the body frame before its joints: parent pose * body offset
            p = unsigned_index(body_parentid[b])
            mocap = body_mocapid[b]
            if mocap >= 0:
                k = unsigned_index(mocap)
                bx, by, bz = mocap_pos[k, 0], mocap_pos[k, 1], mocap_pos[k, 2]
                bw, bqx, bqy, bqz = normalized_quat(mocap_quat[k, 0], mocap_quat[k, 1], mocap_quat[k, 2],
                                                    mocap_quat[k, 3])
            else:
                bx, by, bz = body_pos[b, 0], body_pos[b, 1], body_pos[b, 2]
                bw, bqx, bqy, bqz = body_quat[b, 0], body_quat[b, 1], body_quat[b, 2], body_quat[b, 3]
            # mji_mulMatVec3 then mji_addTo3 (the rotated offset first, then the parent's position)
            px = (xmat[p, 0, 0] * bx + xmat[p, 0, 1] * by + xmat[p, 0, 2] * bz) + xpos[p, 0]
            py = (xmat[p, 1, 0] * bx + xmat[p, 1, 1] * by + xmat[p, 1, 2] * bz) + xpos[p, 1]
            pz = (xmat[p, 2, 0] * bx + xmat[p, 2, 1] * by + xmat[p, 2, 2] * bz) + xpos[p, 2]
            qw, qx, qy, qz = quat_product(xquat[p, 0], xquat[p, 1], xquat[p, 2], xquat[p, 3],
                                          bw, bqx, bqy, bqz)

            # apply joints in order; each joint moves the frame about its own anchor
            for signed_j in range(jntadr, jntadr + jntnum):
                j = unsigned_index(signed_j)
                qadr = jnt_qposadr[j]
                # the joint's displacement from qpos0 (slide, hinge)
                shift = qpos[unsigned_index(qadr)] - qpos0[unsigned_index(qadr)]
                jtype = jnt_type[j]
                # axis and anchor in the world frame, before this joint moves
                ax, ay, az = rotated_by_quat(jnt_axis[j, 0], jnt_axis[j, 1], jnt_axis[j, 2], qw, qx, qy, qz)
                ox, oy, oz = rotated_by_quat(jnt_pos[j, 0], jnt_pos[j, 1], jnt_pos[j, 2], qw, qx, qy, qz)
                ox += px
                oy += py
                oz += pz

                if jtype == JNT_SLIDE:
                    # xpos += axis * (q - q0)
                    px += ax * shift
                    py += ay * shift
                    pz += az * shift
                elif jtype == JNT_BALL or jtype == JNT_HINGE:
                    # local rotation: the ball quaternion, or the hinge angle about its axis
                    if jtype == JNT_BALL:
                        lw, lx, ly, lz = normalized_quat(qpos[qadr], qpos[qadr + 1], qpos[qadr + 2],
                                                         qpos[qadr + 3])
                    else:
                        lw, lx, ly, lz = quat_about_axis(jnt_axis[j, 0], jnt_axis[j, 1], jnt_axis[j, 2],
                                                         shift)
                    qw, qx, qy, qz = quat_product(qw, qx, qy, qz, lw, lx, ly, lz)
                    # rotation about the anchor, not the body origin: xpos = xanchor - R jnt_pos
                    vx, vy, vz = rotated_by_quat(jnt_pos[j, 0], jnt_pos[j, 1], jnt_pos[j, 2], qw, qx, qy, qz)
                    px = ox - vx
                    py = oy - vy
                    pz = oz - vz
                # other types never reach here: the compiler rejects them
                xanchor[j, 0], xanchor[j, 1], xanchor[j, 2] = ox, oy, oz
                xaxis[j, 0], xaxis[j, 1], xaxis[j, 2] = ax, ay, az

        qw, qx, qy, qz = normalized_quat(qw, qx, qy, qz)
        xpos[b, 0], xpos[b, 1], xpos[b, 2] = px, py, pz
        xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3] = qw, qx, qy, qz
        quat2mat(xmat, b, xquat, b)


@kernel(inline="always")
def _frames(xpos_out, xmat_out, owner, own_body, pos, quat, sameframe, xpos, xmat, xquat, xipos, ximat):
    """Poses of frames fixed in bodies: row i is (pos[i], quat[i]) in body owner[i] (mj_local2Global).

    With ``own_body`` the frames are the bodies' inertial frames (row i belongs to body i,
    and row 0, the world, is skipped). A frame that coincides with its body frame or its
    inertial frame (``sameframe``, set by the compiler) copies that frame, as MuJoCo does.
    """
    for i in range(1 if own_body else 0, pos.shape[0]):
        b = unsigned_index(i if own_body else owner[i])
        sf = sameframe[i]
        # position: xpos_b + xmat_b pos
        if sf == SAMEFRAME_BODY:
            for k in range(3):
                xpos_out[i, k] = xpos[b, k]
        elif sf == SAMEFRAME_INERTIA:
            for k in range(3):
                xpos_out[i, k] = xipos[b, k]
        else:
            for k in range(3):
                # mji_mulMatVec3 then mji_addTo3
                xpos_out[i, k] = (xmat[b, k, 0] * pos[i, 0] + xmat[b, k, 1] * pos[i, 1]
                                  + xmat[b, k, 2] * pos[i, 2]) + xpos[b, k]
        # orientation: R(xquat_b * quat)
        if sf == SAMEFRAME_BODY or sf == SAMEFRAME_BODYROT:
            for k in range(3):
                for c in range(3):
                    xmat_out[i, k, c] = xmat[b, k, c]
        elif sf == SAMEFRAME_INERTIA or sf == SAMEFRAME_INERTIAROT:
            for k in range(3):
                for c in range(3):
                    xmat_out[i, k, c] = ximat[b, k, c]
        else:
            qw, qx, qy, qz = quat_product(xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3],
                                          quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
            set_mat(xmat_out, i, *rotation_of_quat(qw, qx, qy, qz))


# Inlined into com_pos_entry, as _body_poses: spares passing 17 arrays field by field per call.
@kernel(inline="always")
def _com_pos(
    # model
    body_parentid, body_rootid, body_mass, body_subtreemass, body_inertia, body_jntnum, body_jntadr,
    jnt_type, jnt_dofadr,
    # data in
    xmat, xipos, ximat, xanchor, xaxis,
    # data out
    subtree_com, cinert, cdof,
):
    nbody = body_parentid.shape[0]

    # Row numbers read from int arrays are unsigned (unsigned_index).
    # subtree_com = sum(mass * xipos) / subtreemass, accumulated child to parent
    for b in range(nbody):
        for k in range(3):
            subtree_com[b, k] = xipos[b, k] * body_mass[b]
    for b in range(nbody - 1, 0, -1):
        p = unsigned_index(body_parentid[b])
        for k in range(3):
            subtree_com[p, k] += subtree_com[b, k]
    for b in range(nbody):
        if body_subtreemass[b] < MINVAL:
            for k in range(3):
                subtree_com[b, k] = xipos[b, k]
        else:
            inv = 1.0 / body_subtreemass[b]
            for k in range(3):
                subtree_com[b, k] *= inv

    # cinert: body inertia rotated to the world and shifted to the tree's com (mju_inertCom)
    for k in range(10):
        cinert[0, k] = 0.0
    for b in range(1, nbody):
        r = unsigned_index(body_rootid[b])
        dx = xipos[b, 0] - subtree_com[r, 0]
        dy = xipos[b, 1] - subtree_com[r, 1]
        dz = xipos[b, 2] - subtree_com[r, 2]
        mass = body_mass[b]
        # rotational part: R diag(I) R^T, plus the parallel-axis term mass (|d|^2 E - d d^T);
        # all ten computed before any is stored, so the reads of ximat are not repeated
        # after each store (cinert may alias ximat as far as the compiler knows)
        i_xx = _rot_inertia(ximat, body_inertia, b, 0, 0) + mass * (dy * dy + dz * dz)
        i_yy = _rot_inertia(ximat, body_inertia, b, 1, 1) + mass * (dx * dx + dz * dz)
        i_zz = _rot_inertia(ximat, body_inertia, b, 2, 2) + mass * (dx * dx + dy * dy)
        i_xy = _rot_inertia(ximat, body_inertia, b, 0, 1) - mass * dx * dy
        i_xz = _rot_inertia(ximat, body_inertia, b, 0, 2) - mass * dx * dz
        i_yz = _rot_inertia(ximat, body_inertia, b, 1, 2) - mass * dy * dz
        cinert[b, 0] = i_xx
        cinert[b, 1] = i_yy
        cinert[b, 2] = i_zz
        cinert[b, 3] = i_xy
        cinert[b, 4] = i_xz
        cinert[b, 5] = i_yz
        # translational part: mass * offset, then mass
        cinert[b, 6] = mass * dx
        cinert[b, 7] = mass * dy
        cinert[b, 8] = mass * dz
        cinert[b, 9] = mass

    # cdof: each dof's motion axis about the tree's com (mju_dofCom)
    for b in range(1, nbody):
        r = unsigned_index(body_rootid[b])
        for signed_j in range(body_jntadr[b], body_jntadr[b] + body_jntnum[b]):
            j = unsigned_index(signed_j)
            da = jnt_dofadr[j]
            # offset from the joint anchor to the com
            ox = subtree_com[r, 0] - xanchor[j, 0]
            oy = subtree_com[r, 1] - xanchor[j, 1]
            oz = subtree_com[r, 2] - xanchor[j, 2]
            jtype = jnt_type[j]
            if jtype == JNT_FREE or jtype == JNT_BALL:
                if jtype == JNT_FREE:
                    # translations along the world axes
                    for k in range(3):
                        for t in range(6):
                            cdof[da + k, t] = 0.0
                        cdof[da + k, 3 + k] = 1.0
                    da += 3
                # rotations about the body's own axes (columns of xmat): [axis; axis x offset]
                for k in range(3):
                    ax = xmat[b, 0, k]
                    ay = xmat[b, 1, k]
                    az = xmat[b, 2, k]
                    _dof_com_rot(cdof, da + k, ax, ay, az, ox, oy, oz)
            elif jtype == JNT_SLIDE:
                for k in range(3):
                    cdof[da, k] = 0.0
                    cdof[da, 3 + k] = xaxis[j, k]
            else:  # JNT_HINGE
                _dof_com_rot(cdof, unsigned_index(da), xaxis[j, 0], xaxis[j, 1], xaxis[j, 2], ox, oy, oz)


@kernel
def _rot_inertia(ximat, body_inertia, b, i, j):
    """Element (i, j) of R diag(I) R^T for body b, associated as mju_inertCom does: R (diag(I) R^T)."""
    return ximat[b, i, 0] * (body_inertia[b, 0] * ximat[b, j, 0]) \
        + ximat[b, i, 1] * (body_inertia[b, 1] * ximat[b, j, 1]) \
        + ximat[b, i, 2] * (body_inertia[b, 2] * ximat[b, j, 2])


@kernel
def _dof_com_rot(cdof, v, ax, ay, az, ox, oy, oz):
    """Rotational motion axis of dof v about the com: [axis; axis x offset] (mju_dofCom)."""
    cdof[v, 0] = ax
    cdof[v, 1] = ay
    cdof[v, 2] = az
    cdof[v, 3] = ay * oz - az * oy
    cdof[v, 4] = az * ox - ax * oz
    cdof[v, 5] = ax * oy - ay * ox


@handle_entry
def kinematics_entry(m, d):
    _body_poses(
        m.body_parentid, m.body_jntnum, m.body_jntadr, m.body_pos, m.body_quat, m.body_mocapid,
        m.jnt_type, m.jnt_qposadr, m.jnt_pos, m.jnt_axis, m.qpos0,
        d.qpos, d.mocap_pos, d.mocap_quat,
        d.xpos, d.xquat, d.xmat, d.xipos, d.ximat, d.xanchor, d.xaxis,
    )
    # inertial frames, geoms and sites: fixed offsets from their body (mj_kinematics2)
    _frames(d.xipos, d.ximat, m.body_parentid, True, m.body_ipos, m.body_iquat, m.body_sameframe,
            d.xpos, d.xmat, d.xquat, d.xipos, d.ximat)
    _frames(d.geom_xpos, d.geom_xmat, m.geom_bodyid, False, m.geom_pos, m.geom_quat, m.geom_sameframe,
            d.xpos, d.xmat, d.xquat, d.xipos, d.ximat)
    _frames(d.site_xpos, d.site_xmat, m.site_bodyid, False, m.site_pos, m.site_quat, m.site_sameframe,
            d.xpos, d.xmat, d.xquat, d.xipos, d.ximat)


@handle_entry
def com_pos_entry(m, d):
    _com_pos(
        m.body_parentid, m.body_rootid, m.body_mass, m.body_subtreemass, m.body_inertia,
        m.body_jntnum, m.body_jntadr, m.jnt_type, m.jnt_dofadr,
        d.xmat, d.xipos, d.ximat, d.xanchor, d.xaxis,
        d.subtree_com, d.cinert, d.cdof,
    )


_KINEMATICS = FastEntry(kinematics_entry)
_COM_POS = FastEntry(com_pos_entry)


def kinematics(m, d) -> None:
    """Forward kinematics: world poses of bodies, inertial frames, joints, geoms and sites.

    Reads: qpos. Writes: xpos, xquat, xmat, xipos, ximat, xanchor, xaxis, geom_xpos,
    geom_xmat, site_xpos, site_xmat. Mirrors mj_kinematics.
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "kinematics")
    except AttributeError:
        bad_model_data(m, d, "kinematics")
    _KINEMATICS.call(m._ptr, d._ptr)


def com_pos(m, d) -> None:
    """Subtree centres of mass, com-based body inertias and motion axes.

    Reads: xmat, xipos, ximat, xanchor, xaxis. Writes: subtree_com, cinert, cdof.
    Mirrors mj_comPos.
    """
    try:  # inline (per-call cost); the try costs nothing unless d is not a Data
        if d._model is not m:
            bad_model_data(m, d, "com_pos")
    except AttributeError:
        bad_model_data(m, d, "com_pos")
    _COM_POS.call(m._ptr, d._ptr)
