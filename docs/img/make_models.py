"""Draw the bundled models' kinematic trees into docs/img/<name>.png.

    pip install -e ".[docs]" && python docs/img/make_models.py

Each picture is the model's skeleton from kinedyn's own FK: a line from every body
origin to its parent's (grey), joint axes as coloured arrows at the joint anchors
(hinge x red, y green, z blue; free joints a black square), capsule and cylinder
geoms as light-blue segments, sites as orange dots with their names (joined to their
body), in a pose that shows the structure (a keyframe or a few joint angles).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import kinedyn as kd  # noqa: E402

OUT = Path(__file__).resolve().parent
POSES = {  # name -> (qpos or keyframe name, view elevation, azimuth, title)
    "biped": ("squat", 15, -60, "biped: free torso, two 6-joint legs (keyframe 'squat')"),
    "arm3": (np.array([0.5, 0.6, -0.9]), 20, -50, "arm3: joints x-y-x, end-effector site 'ee'"),
    "arm7": (np.array([0.3, 0.7, 0.0, -1.2, 0.0, 0.8, 0.0]), 20, -60, "arm7: iiwa-like 7-DoF arm"),
    "pendulum": (np.array([0.6]), 10, -90, "pendulum: one hinge about y"),
}


def draw(name: str) -> Path:
    m = kd.models.load(name)
    d = kd.Data(m)
    pose, elev, azim, title = POSES[name]
    if isinstance(pose, str):
        kd.reset(m, d, key=pose)
    else:
        d.qpos[:] = pose
    kd.kinematics(m, d)

    fig = plt.figure(figsize=(5.5, 5.5), dpi=110)
    ax = fig.add_subplot(projection="3d")
    for b in range(1, m.nbody):
        p = m.body_parentid[b]
        seg = np.array([d.xpos[p], d.xpos[b]]) if p > 0 or m.body_jntnum[b] == 0 or \
            m.jnt_type[m.body_jntadr[b]] != kd.JointType.FREE else None
        if seg is not None:
            ax.plot(*seg.T, color="0.45", lw=3, solid_capstyle="round")
        ax.scatter(*d.xpos[b], color="0.2", s=12)
    # capsules and cylinders as their axis segments (light blue), other geoms as their centres
    ends = []
    for g in range(m.ngeom):
        if m.geom_type[g] in (kd.GeomType.CAPSULE, kd.GeomType.CYLINDER):
            half = m.geom_size[g, 1] * d.geom_xmat[g][:, 2]
            seg = np.array([d.geom_xpos[g] - half, d.geom_xpos[g] + half])
            ax.plot(*seg.T, color="lightsteelblue", lw=6, alpha=0.6, solid_capstyle="round")
            ends.extend(seg)
        else:
            ax.scatter(*d.geom_xpos[g], color="lightsteelblue", s=30, alpha=0.8)
    span = np.ptp(np.vstack([d.xpos[1:], d.geom_xpos, d.site_xpos if m.nsite else d.xpos[1:]]), axis=0).max()
    L = 0.12 * max(span, 0.3)
    for j in range(m.njnt):
        a = d.xanchor[j]
        if m.jnt_type[j] == kd.JointType.FREE:
            ax.scatter(*a, marker="s", color="k", s=40)
            continue
        ax_w = d.xaxis[j]
        color = "rgb"[int(np.argmax(np.abs(m.jnt_axis[j])))]
        ax.quiver(*a, *(L * ax_w), color=color, lw=1.5, arrow_length_ratio=0.3)
    for s in range(m.nsite):
        b = m.site_bodyid[s]
        ax.plot(*np.array([d.xpos[b], d.site_xpos[s]]).T, color="0.45", lw=3, solid_capstyle="round")
        ax.scatter(*d.site_xpos[s], color="darkorange", s=25)
        ax.text(*d.site_xpos[s], " " + m.id2name("site", s), fontsize=7, color="darkorange")
    pts = [d.xpos, d.geom_xpos] + ([d.site_xpos] if m.nsite else []) + ([np.array(ends)] if ends else [])
    pts = np.vstack(pts)
    c = 0.5 * (pts.max(0) + pts.min(0))
    r = 0.55 * max(np.ptp(pts, axis=0).max(), 0.2)
    ax.set(xlim=(c[0] - r, c[0] + r), ylim=(c[1] - r, c[1] + r), zlim=(c[2] - r, c[2] + r),
           xlabel="x", ylabel="y", zlabel="z")
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=elev, azim=azim)
    ax.set_title(title, fontsize=9)
    path = OUT / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


if __name__ == "__main__":
    for n in POSES:
        print(draw(n))
