"""A simple renderer: the model as a stick figure (body origins joined to their parents), as a GIF.

No meshes, no lighting: each frame runs :func:`kinedyn.engine.smooth_kinematics` on one qpos and
draws a 3-D line from every body's origin to its parent's (the world body, id 0,
is left out), a dot at every site, and the ground plane z = 0 as a grid. It is
meant to show a motion at a glance, with matplotlib only (Pillow writes the GIF).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kinedyn.engine.data import Data
from kinedyn.engine.smooth_kinematics import kinematics
from kinedyn.viewer.plotting import pyplot


def _skeleton(m, d) -> tuple[np.ndarray, np.ndarray]:
    """Segments (nseg, 2, 3) from each body's parent origin to its origin, and site positions."""
    bodies = [b for b in range(1, m.nbody) if m.body_parentid[b] != 0]
    segments = np.array([[d.xpos[m.body_parentid[b]], d.xpos[b]] for b in bodies]).reshape(-1, 2, 3)
    return segments, d.site_xpos.copy()


def animate(m, qpos_frames, path: str | Path, fps: float = 15.0, title: str = "") -> Path:
    """Write a GIF of the model in each configuration of ``qpos_frames`` (nframe, nq); returns the path."""
    from matplotlib.animation import FuncAnimation, PillowWriter

    frames = np.asarray(qpos_frames, dtype=float)
    if frames.ndim != 2 or frames.shape[1] != m.nq or len(frames) == 0:
        raise ValueError(f"qpos_frames must have shape (nframe >= 1, {m.nq}), got {frames.shape}")
    if not np.isfinite(frames).all():
        frame, coordinate = np.argwhere(~np.isfinite(frames))[0]
        raise ValueError(f"qpos_frames[{frame}, {coordinate}] is {frames[frame, coordinate]}; "
                         "qpos_frames must be finite")
    d = Data(m)
    poses = []
    for q in frames:
        d.qpos[:] = q
        kinematics(m, d)
        poses.append(_skeleton(m, d))
    points = np.concatenate([np.concatenate([s.reshape(-1, 3), p]) for s, p in poses])
    low, high = points.min(axis=0), points.max(axis=0)
    centre, half = (low + high) / 2, max((high - low).max() / 2, 0.1) * 1.1

    plt = pyplot()
    fig = plt.figure(figsize=(4.5, 4.5))
    ax = fig.add_subplot(projection="3d")

    def draw(i: int):
        ax.cla()
        segments, sites = poses[i]
        for a, b in segments:
            ax.plot(*np.column_stack([a, b]), color="tab:blue", linewidth=2.5)
        if len(sites):
            ax.scatter(*sites.T, color="tab:red", s=6)
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(min(0.0, centre[2] - half), centre[2] + half)
        grid = np.linspace(-half, half, 5)
        for g in grid:  # the ground z = 0 as a grid, for a sense of height
            ax.plot([centre[0] + g] * 2, [centre[1] - half, centre[1] + half], [0, 0], color="0.85", lw=0.6)
            ax.plot([centre[0] - half, centre[0] + half], [centre[1] + g] * 2, [0, 0], color="0.85", lw=0.6)
        ax.view_init(elev=12, azim=-25)
        ax.set_title(f"{title}  frame {i + 1}/{len(poses)}", fontsize=9)
        return []

    animation = FuncAnimation(fig, draw, frames=len(poses), blit=False)
    path = Path(path)
    animation.save(path, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path


__all__ = ["animate"]
