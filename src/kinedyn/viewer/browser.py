"""The model in a web browser: :class:`Viewer`, :func:`show` and :func:`play`, built on viser.

viser (https://viser.studio, Apache-2.0, maintained by the Nerfstudio team) runs a small web
server in this process and ships a prebuilt three.js client, so the viewer needs no GPU in
Python, no window system and no network: open the printed URL (``http://127.0.0.1:8080``) in
any browser, on this machine or through an SSH tunnel. Scene updates are pushed over a
websocket; GUI controls (sliders, buttons) call back into this process.

What is drawn: every primitive geom (plane, sphere, capsule, ellipsoid, cylinder, box) as a
mesh in the model's colours (:func:`kinedyn.viewer.scene.appearance`), the floor, and on
demand the body frames, the sites, and the contacts (points, and force arrows once the engine
has ``kd.contact_force``). Controls: a time slider with play/pause, speed and loop for a
trajectory; one slider per hinge and slide joint to pose the model by hand, with the joint
torques that hold the pose (inverse dynamics at zero velocity and acceleration).

viser is imported when a Viewer is made, never by ``import kinedyn``.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np

from kinedyn.engine.data import Data
from kinedyn.engine.forward import fwd_position
from kinedyn.engine.inverse import inverse
from kinedyn.engine.smooth_kinematics import kinematics
from kinedyn.engine.types import GeomType, JointType
from kinedyn.viewer import scene

SPEEDS = ("0.1x", "0.25x", "0.5x", "1x", "2x", "4x")
FRAME_RATE = 30.0  # playback redraws per second (wall clock)


def _rgb255(rgba) -> tuple[int, int, int]:
    return tuple(int(round(255 * min(max(c, 0.0), 1.0))) for c in rgba[:3])


def _trajectory(m, trajectory, time_) -> tuple[np.ndarray, np.ndarray]:
    """``(t, qpos)`` from what :func:`play` accepts."""
    if isinstance(trajectory, tuple) and len(trajectory) == 2:
        time_, qpos = trajectory
    elif hasattr(trajectory, "qpos"):
        qpos = trajectory.qpos
        if time_ is None:
            time_ = getattr(trajectory, "t", getattr(trajectory, "time", None))
    else:
        qpos = trajectory
    qpos = np.asarray(qpos, dtype=float)
    if qpos.ndim == 1:
        qpos = qpos[None]
    if qpos.ndim != 2 or qpos.shape[1] != m.nq or len(qpos) == 0:
        raise ValueError(f"the trajectory's qpos must have shape (nframe >= 1, nq = {m.nq}), "
                         f"got {qpos.shape}")
    if not np.isfinite(qpos).all():
        raise ValueError("the trajectory's qpos holds non-finite values")
    t = np.arange(len(qpos)) * m.opt.timestep if time_ is None else np.asarray(time_, dtype=float).ravel()
    if t.shape != (len(qpos),):
        raise ValueError(f"time has {t.size} values for {len(qpos)} frames")
    if len(t) > 1 and np.any(np.diff(t) <= 0):
        raise ValueError("the trajectory's times must be strictly increasing")
    return t, qpos


class Viewer:
    """A browser view of model ``m``: starts a viser server on ``host:port`` at once.

    Args:
      m: the model.
      d: a Data to draw as it is (its poses and contacts); default: ``qpos0``.
      trajectory: ``(t, qpos)``, a ``(nframe, nq)`` qpos array (frames ``m.opt.timestep`` apart)
        or an object with ``qpos`` and ``t``/``time`` attributes: adds the playback controls.
      source: the MJCF file (path) or text, for the colours while the Model has no visual fields.
      host, port: where to serve (default ``127.0.0.1:8080``; the next free port if taken).
      frames, sites, contacts: show body frames, sites, contacts at the start.
      title: the page's label.

    ``viewer.url`` is the address; :meth:`serve_forever` blocks until Ctrl-C; :meth:`close` stops.
    """

    def __init__(self, m, d=None, *, trajectory=None, time=None, source=None, host: str = "127.0.0.1",
                 port: int = 8080, frames: bool = False, sites: bool = False, contacts: bool = True,
                 title: str = "kinedyn"):
        try:
            import viser
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError("the browser viewer needs viser: pip install 'kinedyn[viewer]'") from err
        self.m = m
        self.d = Data(m)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._playing = False
        self._time_index = 0
        self._given = d
        if trajectory is not None:
            self.t, self.qpos = _trajectory(m, trajectory, time)
        else:
            self.t = self.qpos = None
        self.appearance = scene.appearance(m, source)
        self.server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.server.scene.set_up_direction("+z")
        self._build_scene(frames, sites, contacts)
        centre = self._centre
        self.server.initial_camera.look_at = centre
        self.server.initial_camera.position = centre + np.array([1.3, -1.9, 0.7]) * self.extent
        self._build_gui()
        if self.qpos is not None:
            self._show_frame(0)
        else:
            self._show_data(d)
        self._thread = threading.Thread(target=self._playback_loop, name="kinedyn-viewer-playback",
                                        daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ scene

    @property
    def url(self) -> str:
        host = self.server.get_host()
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.server.get_port()}"

    def _extent(self) -> float:
        """A length scale of the model: its size at qpos0 (for planes, the floor, frames, arrows)."""
        d = Data(self.m)
        kinematics(self.m, d)
        points = np.concatenate([d.xpos, d.geom_xpos]) if self.m.ngeom else d.xpos
        self._centre = points.mean(axis=0)
        span = float(np.ptp(points, axis=0).max()) if len(points) > 1 else 0.0
        finite = [float(np.max(self.m.geom_size[g])) for g in range(self.m.ngeom)
                  if self.m.geom_type[g] != GeomType.PLANE]
        return max(span, max(finite, default=0.0), 0.25)

    def _build_scene(self, frames: bool, sites: bool, contacts: bool) -> None:
        m, sc = self.m, self.server.scene
        extent = self._extent()
        self.extent = extent
        self.geom_handles = {}
        has_plane = False
        for g in scene.drawn_geoms(m):
            gtype = int(m.geom_type[g])
            has_plane |= gtype == GeomType.PLANE
            vertices, faces = scene.geom_mesh(m, g, plane_extent=2 * extent, resolution=24)
            rgba = self.appearance.geom_rgba[g]
            self.geom_handles[g] = sc.add_mesh_simple(
                f"/kinedyn/geom/{g}", vertices.astype(np.float32), faces, color=_rgb255(rgba),
                opacity=None if rgba[3] >= 1 else float(rgba[3]), side="double" if gtype == GeomType.PLANE
                else "front", flat_shading=gtype in (GeomType.BOX, GeomType.PLANE))
        self.grid = sc.add_grid("/kinedyn/floor", width=4 * extent, height=4 * extent, cell_size=extent / 8,
                                section_size=extent / 2, position=(0.0, 0.0, 0.0 if not has_plane else 1e-4))
        self.body_frames = [sc.add_frame(f"/kinedyn/body/{b}", axes_length=0.15 * extent,
                                         axes_radius=0.006 * extent, visible=frames)
                            for b in range(1, m.nbody)]
        self.site_handles = [sc.add_icosphere(f"/kinedyn/site/{s}",
                                              radius=float(max(m.site_size[s, 0], 0.004)),
                                              color=_rgb255(self.appearance.site_rgba[s]), visible=sites)
                             for s in range(m.nsite)]
        self.show_contacts = contacts
        self.contact_points = None
        self.contact_arrows = None

    def _draw_poses(self, d) -> None:
        """Move every drawn object to its pose in ``d`` (positions of an up-to-date Data)."""
        with self.server.atomic():
            for g, handle in self.geom_handles.items():
                handle.position = d.geom_xpos[g]
                handle.wxyz = scene.mat2quat(d.geom_xmat[g])
            for b, handle in enumerate(self.body_frames, start=1):
                if handle.visible:
                    handle.position = d.xpos[b]
                    handle.wxyz = d.xquat[b]
            for s, handle in enumerate(self.site_handles):
                if handle.visible:
                    handle.position = d.site_xpos[s]
            self._draw_contacts(d)

    def _position_stage(self, d) -> None:
        """Poses for drawing; the whole position stage (collision included) when contacts are shown
        and the engine has them, else the kinematics only."""
        if self.show_contacts and hasattr(d, "ncon"):
            fwd_position(self.m, d)
        else:
            kinematics(self.m, d)

    def _draw_contacts(self, d) -> None:
        # forces only for a Data given by the user (after forward or step); a posed or played frame
        # has run the position stage only, and its constraint forces would be stale
        found = scene.contacts(self.m, d, forces=d is self._given) if self.show_contacts else None
        sc = self.server.scene
        for handle in (self.contact_points, self.contact_arrows):
            if handle is not None:
                handle.remove()
        self.contact_points = self.contact_arrows = None
        if found is None or len(found.pos) == 0:
            return
        self.contact_points = sc.add_point_cloud("/kinedyn/contact/points", found.pos.astype(np.float32),
                                                 colors=(230, 60, 20), point_size=0.02 * self.extent,
                                                 point_shape="circle")
        weight = float(np.sum(self.m.body_mass)) * max(float(np.linalg.norm(self.m.opt.gravity)), 1e-9)
        scale = 0.5 * self.extent / weight  # the whole weight is half the model's size long
        tips = found.pos + scale * found.force
        keep = np.linalg.norm(found.force, axis=1) > 0
        if keep.any():
            segments = np.stack([found.pos[keep], tips[keep]], axis=1).astype(np.float32)
            self.contact_arrows = sc.add_arrows("/kinedyn/contact/forces", segments, colors=(230, 60, 20),
                                                shaft_radius=0.005 * self.extent,
                                                head_radius=0.012 * self.extent,
                                                head_length=0.03 * self.extent)

    def _show_data(self, d) -> None:
        """Draw a given Data as it is; without one (or before its first kinematics), qpos0."""
        with self._lock:
            if d is not None:
                self.d.qpos[:] = d.qpos
            self._position_stage(self.d)
            fresh = d is not None and (np.any(d.geom_xmat) or self.m.ngeom == 0)
            self._draw_poses(d if fresh else self.d)

    def _show_frame(self, k: int) -> None:
        with self._lock:
            self._time_index = int(k)
            self.d.qpos[:] = self.qpos[k]
            self._position_stage(self.d)
            self._draw_poses(self.d)
            self._sync_joint_sliders()

    # ------------------------------------------------------------------ GUI

    def _build_gui(self) -> None:
        gui, m = self.server.gui, self.m
        self._syncing = False
        if self.qpos is not None:
            with gui.add_folder("Playback"):
                n = len(self.t)
                self.time_slider = gui.add_slider("frame", min=0, max=max(n - 1, 1), step=1, initial_value=0,
                                                  disabled=n == 1)
                self.time_label = gui.add_markdown(self._time_text(0))
                self.play_button = gui.add_button("Play", disabled=n == 1)
                self.pause_button = gui.add_button("Pause", visible=False)
                self.speed = gui.add_dropdown("speed", SPEEDS, initial_value="1x")
                self.loop = gui.add_checkbox("loop", True)
            self.time_slider.on_update(lambda _: self._on_time_slider())
            self.play_button.on_click(lambda _: self.play())
            self.pause_button.on_click(lambda _: self.pause())
        else:
            self.time_slider = None
        with gui.add_folder("Show"):
            self.frames_box = gui.add_checkbox("body frames", any(h.visible for h in self.body_frames))
            self.sites_box = gui.add_checkbox("sites", any(h.visible for h in self.site_handles),
                                              disabled=m.nsite == 0)
            self.contacts_box = gui.add_checkbox("contacts", self.show_contacts)
            self.floor_box = gui.add_checkbox("floor grid", True)
        self.frames_box.on_update(lambda _: self._toggle(self.body_frames, self.frames_box.value))
        self.sites_box.on_update(lambda _: self._toggle(self.site_handles, self.sites_box.value))
        self.contacts_box.on_update(lambda _: self._toggle_contacts())
        self.floor_box.on_update(lambda _: setattr(self.grid, "visible", self.floor_box.value))
        self.joint_sliders = {}
        scalar = [j for j in range(m.njnt) if m.jnt_type[j] in (JointType.HINGE, JointType.SLIDE)]
        if scalar:
            with gui.add_folder("Joints", expand_by_default=self.qpos is None):
                for j in scalar:
                    adr = int(m.jnt_qposadr[j])
                    if m.jnt_limited[j]:
                        low, high = (float(x) for x in m.jnt_range[j])
                    elif m.jnt_type[j] == JointType.HINGE:
                        low, high = -math.pi, math.pi
                    else:
                        low, high = -self.extent, self.extent
                    name = m.id2name("jnt", j) or f"joint {j}"
                    slider = gui.add_slider(name, min=low, max=high, step=(high - low) / 1000,
                                            initial_value=float(np.clip(m.qpos0[adr], low, high)))
                    slider.on_update(lambda _, j=j: self._on_joint_slider(j))
                    self.joint_sliders[j] = slider
                self.torques = gui.add_markdown("*move a joint slider for the torques that hold the pose*")

    def _time_text(self, k: int) -> str:
        return f"t = {self.t[k]:.3f} s of {self.t[-1]:.3f} s (frame {k + 1}/{len(self.t)})"

    def _toggle(self, handles, visible: bool) -> None:
        with self._lock:
            for h in handles:
                h.visible = visible
            self._draw_poses(self.d)

    def _toggle_contacts(self) -> None:
        with self._lock:
            self.show_contacts = self.contacts_box.value
            self._position_stage(self.d)
            self._draw_contacts(self.d)

    def _on_time_slider(self) -> None:
        k = int(self.time_slider.value)
        self.time_label.content = self._time_text(k)
        self._show_frame(k)

    def _sync_joint_sliders(self) -> None:
        self._syncing = True
        try:
            for j, slider in self.joint_sliders.items():
                value = float(self.d.qpos[self.m.jnt_qposadr[j]])
                slider.value = float(np.clip(value, slider.min, slider.max))
        finally:
            self._syncing = False

    def _on_joint_slider(self, j: int) -> None:
        if self._syncing:
            return
        self.pause()
        with self._lock:
            self.d.qpos[self.m.jnt_qposadr[j]] = self.joint_sliders[j].value
            self._position_stage(self.d)
            self._draw_poses(self.d)
            self.torques.content = self._torque_table()

    def _torque_table(self) -> str:
        """The generalised forces that hold the current pose: inverse dynamics at qvel = qacc = 0."""
        m = self.m
        d = Data(m)
        d.qpos[:] = self.d.qpos
        inverse(m, d)
        rows = ["| joint | torque / force |", "| --- | ---: |"]
        for j in range(m.njnt):
            adr, jtype = int(m.jnt_dofadr[j]), int(m.jnt_type[j])
            width = {JointType.FREE: 6, JointType.BALL: 3}.get(JointType(jtype), 1)
            name = m.id2name("jnt", j) or f"joint {j}"
            values = " ".join(f"{x:.3g}" for x in d.qfrc_inverse[adr:adr + width])
            rows.append(f"| {name} | {values} |")
        return "**Holding torques** (N m, N; inverse dynamics, at rest)\n\n" + "\n".join(rows)

    # ------------------------------------------------------------------ playback

    def play(self) -> None:
        """Start playing the trajectory (from the slider's frame)."""
        if self.qpos is None or len(self.t) < 2:
            return
        self._playing = True
        self._play_clock = (time.perf_counter(), float(self.t[self._time_index]))
        self.play_button.visible, self.pause_button.visible = False, True

    def pause(self) -> None:
        if self.qpos is None:
            return
        self._playing = False
        self.play_button.visible, self.pause_button.visible = True, False

    def seek(self, k: int) -> None:
        """Show frame ``k`` of the trajectory (moves the time slider, as a user would)."""
        self.time_slider.value = int(k)
        self._on_time_slider()

    def _playback_loop(self) -> None:
        while not self._stop.wait(1.0 / FRAME_RATE):
            if not self._playing:
                continue
            speed = float(self.speed.value.rstrip("x"))
            wall0, t0 = self._play_clock
            sim_t = t0 + speed * (time.perf_counter() - wall0)
            if sim_t > self.t[-1]:
                if self.loop.value:
                    self._play_clock = (time.perf_counter(), float(self.t[0]))
                    sim_t = float(self.t[0])
                else:
                    self.pause()
                    sim_t = float(self.t[-1])
            k = int(np.clip(np.searchsorted(self.t, sim_t, side="right") - 1, 0, len(self.t) - 1))
            if k != self._time_index:
                try:
                    self.seek(k)
                except Exception:  # noqa: BLE001 - a closed server while stopping
                    if self._stop.is_set():
                        return
                    raise

    # ------------------------------------------------------------------ life cycle

    def serve_forever(self) -> None:
        """Print the URL and serve until Ctrl-C (or :meth:`close` from another thread); then stop."""
        print(f"kinedyn viewer: {self.url}  (Ctrl-C to stop)", flush=True)
        try:
            while not self._stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            print("kinedyn viewer: stopped", flush=True)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the playback thread and the server (idempotent)."""
        if self._stop.is_set() and getattr(self, "_closed", False):
            return
        self._stop.set()
        self._playing = False
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)
        self.server.stop()
        self._closed = True

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def show(m, d=None, *, block: bool = True, source: str | Path | None = None, **options) -> Viewer:
    """Draw ``d`` (default: the model at qpos0) in the browser, with joint sliders to pose it.

    Prints the URL; with ``block`` (default) serves until Ctrl-C, else returns the running
    :class:`Viewer` (``viewer.close()`` stops it). ``options`` go to :class:`Viewer`.
    """
    viewer = Viewer(m, d, source=source, **options)
    if block:
        viewer.serve_forever()
    else:
        print(f"kinedyn viewer: {viewer.url}", flush=True)
    return viewer


def play(m, trajectory, time=None, *, block: bool = True, autoplay: bool = True,
         source: str | Path | None = None, **options) -> Viewer:
    """Play ``trajectory`` in the browser: ``(t, qpos)``, a ``(nframe, nq)`` qpos array (``time``, or
    frames ``m.opt.timestep`` apart), or an object with ``qpos`` and ``t``/``time`` attributes.

    A time slider, play/pause, speed and loop; the joint sliders pose the model by hand
    (pausing playback). Blocking and options as :func:`show`.
    """
    viewer = Viewer(m, trajectory=trajectory, time=time, source=source, **options)
    if autoplay:
        viewer.play()
    if block:
        viewer.serve_forever()
    else:
        print(f"kinedyn viewer: {viewer.url}", flush=True)
    return viewer


__all__ = ["Viewer", "play", "show"]
