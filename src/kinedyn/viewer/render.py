"""Offline pictures: the model's geoms, shaded, as a GIF animation (matplotlib + Pillow only).

Each frame runs :func:`kinedyn.engine.smooth_kinematics.kinematics` on one qpos (the position
stage, for contacts, when ``contacts=True``), places every primitive geom's triangle mesh
(:func:`kinedyn.viewer.scene.primitive_mesh`) at ``geom_xpos`` / ``geom_xmat``, drops the faces
turned away from the camera and shades the rest by one directional light (Lambert, plus an
ambient term) in the model's colours. matplotlib's 3-D axes draw the faces back to front
(painter's algorithm: good for convex primitives that do not interpenetrate much; no z-buffer).
A checkered floor (the model's plane, or z = ``floor`` when it has none), metre axes and the
simulated time are drawn on every frame. No window is opened (Agg backend).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kinedyn.engine.data import Data
from kinedyn.engine.smooth_kinematics import kinematics
from kinedyn.engine.types import GeomType
from kinedyn.viewer import scene
from kinedyn.viewer.plotting import pyplot

LIGHT = (0.4, -0.55, 0.75)     # direction towards the light, world frame
FLOOR_RGB = ((0.86, 0.88, 0.90), (0.74, 0.77, 0.80))
CONTACT_RGB = (0.9, 0.25, 0.1)


def _poses(m, frames: np.ndarray, contacts: bool):
    """Per frame: geom_xpos, geom_xmat and the contact points (the position stage for contacts)."""
    d = Data(m)
    out = []
    if contacts:
        from kinedyn.engine.forward import fwd_position
    for q in frames:
        d.qpos[:] = q
        if contacts:
            fwd_position(m, d)
            points = scene.contacts(m, d, forces=False).pos
        else:
            kinematics(m, d)
            points = np.zeros((0, 3))
        out.append((d.geom_xpos.copy(), d.geom_xmat.copy(), points.copy()))
    return out


def _eye(elev: float, azim: float) -> np.ndarray:
    """Unit vector from the scene towards matplotlib's camera at (elev, azim) degrees."""
    e, a = np.radians(elev), np.radians(azim)
    return np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])


def _floor_tiles(centre, half: float, z: float, n: int = 8):
    """Checkerboard squares (n * n, 4, 3) covering the square of half-width ``half`` at height z."""
    edges = np.linspace(-half, half, n + 1)
    tiles, colours = [], []
    for i in range(n):
        for j in range(n):
            x0, x1 = centre[0] + edges[i], centre[0] + edges[i + 1]
            y0, y1 = centre[1] + edges[j], centre[1] + edges[j + 1]
            tiles.append([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]])
            colours.append(FLOOR_RGB[(i + j) % 2])
    return np.array(tiles), colours


def animate(m, qpos_frames, path: str | Path, fps: float = 15.0, title: str = "", *, times=None,
            source: str | Path | None = None, floor: float | None = None, contacts: bool = False,
            elev: float = 15.0, azim: float = -35.0, size: float = 5.0, resolution: int = 14) -> Path:
    """Write a GIF of the model in each configuration of ``qpos_frames`` (nframe, nq); returns the path.

    Args:
      times: (nframe,) simulated times, printed on the frames (default: the frame number).
      source: the MJCF file or text the model came from, for its colours (see
        :func:`kinedyn.viewer.scene.appearance`); without it, MuJoCo's default grey.
      floor: height of the drawn floor when the model has no plane (default: 0, or just below the
        lowest geom if that is lower).
      contacts: run the position stage and draw the contact points (needs the engine's contacts).
      elev, azim: the camera (matplotlib's degrees); size: the figure's side in inches.
    """
    from matplotlib.animation import FuncAnimation, PillowWriter
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    frames = np.asarray(qpos_frames, dtype=float)
    if frames.ndim != 2 or frames.shape[1] != m.nq or len(frames) == 0:
        raise ValueError(f"qpos_frames must have shape (nframe >= 1, {m.nq}), got {frames.shape}")
    if not np.isfinite(frames).all():
        frame, coordinate = np.argwhere(~np.isfinite(frames))[0]
        raise ValueError(f"qpos_frames[{frame}, {coordinate}] is {frames[frame, coordinate]}; "
                         "qpos_frames must be finite")
    if times is not None:
        times = np.asarray(times, dtype=float).ravel()
        if times.shape != (len(frames),):
            raise ValueError(f"times has {times.size} values for {len(frames)} frames")
    poses = _poses(m, frames, contacts)
    colours = scene.appearance(m, source).geom_rgba
    geoms = [g for g in scene.drawn_geoms(m) if m.geom_type[g] != GeomType.PLANE]
    planes = [g for g in scene.drawn_geoms(m) if m.geom_type[g] == GeomType.PLANE]
    meshes = {g: scene.geom_mesh(m, g, resolution=resolution) for g in geoms}

    # the view: a cube around every geom vertex of every frame
    corners = [pos[g] + meshes[g][0] @ mat[g].T for pos, mat, _ in poses for g in geoms]
    points = np.concatenate(corners) if corners else np.concatenate([p[0] for p in poses]).reshape(-1, 3)
    if len(points) == 0:
        points = np.zeros((1, 3))
    low, high = points.min(axis=0), points.max(axis=0)
    centre, half = (low + high) / 2, max((high - low).max() / 2, 0.1) * 1.15
    if planes:
        floor_z = float(poses[0][0][planes[0], 2])
    else:
        floor_z = min(0.0, float(low[2])) if floor is None else float(floor)
    floor_colour = colours[planes[0]][:3] if planes and not np.array_equal(colours[planes[0]],
                                                                         scene.DEFAULT_RGBA) else None

    plt = pyplot()
    fig = plt.figure(figsize=(size, size))
    ax = fig.add_subplot(projection="3d", computed_zorder=False)
    ax.view_init(elev=elev, azim=azim)
    eye = _eye(elev, azim)
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    zlow = min(floor_z, centre[2] - half)
    ax.set_zlim(zlow, zlow + 2 * half)
    ax.set_box_aspect((1, 1, 1))
    for label, axis in (("x (m)", ax.set_xlabel), ("y (m)", ax.set_ylabel), ("z (m)", ax.set_zlabel)):
        axis(label, fontsize=8, labelpad=-2)
    ax.tick_params(labelsize=7, pad=0)
    tiles, tile_colours = _floor_tiles(centre, half, floor_z)
    if floor_colour is not None:
        tile_colours = [np.clip(floor_colour * (1.0 if k % 2 else 0.85), 0, 1) for k in range(len(tiles))]
    ax.add_collection3d(Poly3DCollection(tiles, facecolors=tile_colours, edgecolors="none", zorder=0))
    body = Poly3DCollection([], linewidths=0.4, zorder=1)
    ax.add_collection3d(body)
    dots = ax.scatter([], [], [], color=CONTACT_RGB, s=14, zorder=2, depthshade=False)
    if title:
        ax.set_title(title, fontsize=10)
    clock = ax.text2D(0.02, 0.95, "", transform=ax.transAxes, fontsize=9, family="monospace")
    fig.subplots_adjust(left=0.0, right=0.95, bottom=0.03, top=0.95)

    def draw(i: int):
        pos, mat, contact_points = poses[i]
        polys, faces_rgb = [], []
        for g in geoms:
            vertices, faces = meshes[g]
            world = pos[g] + vertices @ mat[g].T
            tri = world[faces]                                    # (k, 3, 3)
            normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
            norm = np.linalg.norm(normals, axis=1)
            keep = norm > 0
            normals = normals[keep] / norm[keep, None]
            tri = tri[keep]
            facing = normals @ eye > -1e-9                        # back faces are hidden behind front ones
            polys.extend(tri[facing])
            faces_rgb.extend(scene.shade(colours[g], normals[facing], LIGHT))
        # back to front by distance along the view direction (the collection keeps this order)
        if polys:
            depth = np.array([p.mean(axis=0) @ eye for p in polys])
            order = np.argsort(depth)
            polys = [polys[k] for k in order]
            faces_rgb = np.array(faces_rgb)[order]
        body.set_verts(polys)
        body.set_facecolor(faces_rgb if len(polys) else "none")
        body.set_edgecolor(faces_rgb if len(polys) else "none")  # hides the seams between faces
        dots._offsets3d = tuple(contact_points.T) if len(contact_points) else ([], [], [])
        stamp = f"t = {times[i]:6.3f} s" if times is not None else f"frame {i + 1}/{len(poses)}"
        clock.set_text(stamp)
        return []

    animation = FuncAnimation(fig, draw, frames=len(poses), blit=False)
    path = Path(path)
    animation.save(path, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path


__all__ = ["animate"]
