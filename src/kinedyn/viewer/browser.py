"""The model in a web browser: :class:`Viewer`, :func:`show` and :func:`play`, built on viser.

viser (https://viser.studio, Apache-2.0, maintained by the Nerfstudio team) runs a small web
server in this process and ships a prebuilt three.js client, so the viewer needs no GPU in
Python, no window system and no network: open the printed URL (``http://127.0.0.1:8080``) in
any browser, on this machine or through an SSH tunnel. Scene updates are pushed over a
websocket; GUI controls (sliders, buttons) call back into this process.

What is drawn: every primitive geom (plane, sphere, capsule, ellipsoid, cylinder, box) as a
mesh in the model's colours (:func:`kinedyn.viewer.scene.appearance`), the floor, and on
demand the body frames, the sites, and the contacts (points, and force arrows once the engine
has ``kd.contact_force``), the centre of mass. Controls: a time slider with play/pause, speed and
loop for a trajectory; one slider per hinge and slide joint to pose the model by hand, with the
joint torques that hold the pose (inverse dynamics at zero velocity and acceleration).

Live simulation (``live=True``: :func:`show`, ``kinedyn view``): ``kd.step`` runs in this process on
the viewer's thread (:class:`kinedyn.viewer.live.Simulation`), in real time times a speed factor,
with play/pause/step/reset, a keyframe selector, the achieved real-time factor, a slider per
actuator, a controller callback, a body grabbed by a click and dragged by its handle (a
spring-damper through ``xfrc_applied``, :mod:`kinedyn.viewer.perturb`), a live plot and a
recording saved as a trajectory file or a GIF. :func:`launch_passive` is ``mujoco.viewer``'s
passive viewer: the user's loop steps, ``sync()`` draws.

viser is imported when a Viewer is made, never by ``import kinedyn``.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np

from kinedyn.engine.data import Data
from kinedyn.engine.forward import forward, fwd_position
from kinedyn.engine.inverse import inverse
from kinedyn.engine.smooth_kinematics import kinematics
from kinedyn.engine.types import GeomType, JointType
from kinedyn.viewer import perturb, scene
from kinedyn.viewer.live import History, Simulation

SPEEDS = ("0.1x", "0.25x", "0.5x", "1x", "2x", "4x")
FRAME_RATE = 30.0  # playback redraws per second (wall clock)
STATUS_RATE = 5.0  # live status text and plot updates per second
PERTURB_RGB = (240, 180, 20)


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
      frames, sites, contacts, com: show body frames, sites, contacts, the centre of mass at the start.
      title: the page's label.
      live: simulate ``d`` (a new Data if None) with ``kd.step`` on the viewer's thread, with the
        controls of MuJoCo's simulate (:func:`show`); ``controller(m, d)`` runs before each step;
        ``run`` starts playing at once.
      passive: draw the user's ``d`` on :meth:`sync` only (:func:`launch_passive`).
      environment: light the scene with viser's environment map (False: its lights only, for a
        browser without a GPU: software WebGL takes ~15 s over the map's first frame).

    ``viewer.url`` is the address; :meth:`serve_forever` blocks until Ctrl-C; :meth:`close` stops.
    """

    def __init__(self, m, d=None, *, trajectory=None, time=None, source=None, host: str = "127.0.0.1",
                 port: int = 8080, frames: bool = False, sites: bool = False, contacts: bool = True,
                 com: bool = False, title: str = "kinedyn", live: bool = False, passive: bool = False,
                 controller=None, run: bool = False, environment: bool = True):
        try:
            import viser
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError("the browser viewer needs viser: pip install 'kinedyn[viewer]'") from err
        if trajectory is not None and (live or passive):
            raise ValueError("a Viewer plays a trajectory or simulates (live, passive), not both")
        if live and passive:
            raise ValueError("live (the viewer steps) and passive (your loop steps) exclude each other")
        if passive and d is None:
            raise ValueError("a passive viewer draws your Data: give it (launch_passive(m, d))")
        if controller is not None and not callable(controller):
            raise TypeError("controller must be callable as controller(m, d), got "
                            f"{type(controller).__name__}")
        if controller is not None and not live:
            raise ValueError("a controller needs the live viewer (show(m, d, controller=f))")
        self.m = m
        self.live, self.passive = live, passive
        self.source = source
        self.sim = live_sim = Simulation(m, d if d is not None else Data(m), controller) if live else None
        self.d = live_sim.d if live_sim is not None else Data(m)
        self._lock = live_sim.lock if live_sim is not None else threading.RLock()
        self._stop = threading.Event()
        self._playing = False
        self._time_index = 0
        self._given = self.d if live_sim is not None else d
        self._pert: perturb.Perturb | None = None  # the passive viewer's grab (the live one's is sim's)
        self._pert_body_written = -1               # the body whose xfrc_applied a passive sync wrote
        self._pert_handle = None
        self._pert_drawn = ()
        if trajectory is not None:
            self.t, self.qpos = _trajectory(m, trajectory, time)
        else:
            self.t = self.qpos = None
        self.appearance = scene.appearance(m, source)
        self.server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.server.scene.set_up_direction("+z")
        if not environment:
            # no image-based lighting: a software WebGL (Chromium's SwiftShader, no GPU) spends
            # ~15 s on the environment map's first frame, with the page frozen meanwhile
            self.server.scene.configure_environment_map(hdri=None)
            self.server.scene.add_light_ambient("/kinedyn/light/ambient", intensity=1.2)
            self.server.scene.add_light_directional("/kinedyn/light/sun", intensity=2.0,
                                                     wxyz=(0.88, 0.28, -0.36, 0.0))
        self._build_scene(frames, sites, contacts, com)
        centre = self._centre
        self.server.initial_camera.look_at = centre
        self.server.initial_camera.position = centre + np.array([1.3, -1.9, 0.7]) * self.extent
        self._build_gui()
        if live or passive:
            self.server.scene.on_click()(self._on_scene_click)
        if self.qpos is not None:
            self._show_frame(0)
        elif live:
            with self._lock:
                self._draw_poses(self.d)
        else:
            self._show_data(d)
        loop = self._live_loop if live else self._playback_loop
        self._thread = threading.Thread(target=loop, name="kinedyn-viewer-loop", daemon=True)
        self._thread.start()
        if live and run:
            self.play()

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

    def _build_scene(self, frames: bool, sites: bool, contacts: bool, com: bool = False) -> None:
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
        # centre of mass: each body's (small) and the whole model's (subtree_com of the world)
        self.com_handles = [sc.add_point_cloud("/kinedyn/com/bodies", np.zeros((max(m.nbody - 1, 1), 3),
                                                                            dtype=np.float32),
                                               colors=(200, 30, 200), point_size=0.015 * extent,
                                               point_shape="diamond", visible=com),
                            sc.add_icosphere("/kinedyn/com/model", radius=0.025 * extent,
                                             color=(200, 30, 200), visible=com)]
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
            if self.com_handles[1].visible:
                if m_nbody := self.m.nbody - 1:
                    self.com_handles[0].points = d.xipos[1:].astype(np.float32).reshape(m_nbody, 3)
                self.com_handles[1].position = d.subtree_com[0]
            self._draw_contacts(d)
            self._draw_perturbation(d)

    def _position_stage(self, d) -> None:
        """Poses for drawing; the whole position stage (collision included) when contacts are shown
        and the engine has them, else the kinematics only; the whole forward pass for the live
        simulation's Data (its next step starts from a consistent state)."""
        if self.live and d is self.d:
            forward(self.m, d)
        elif self.show_contacts and hasattr(d, "ncon"):
            fwd_position(self.m, d)
        else:
            kinematics(self.m, d)

    def _draw_contacts(self, d) -> None:
        # forces only for a Data given by the user (after forward or step); a posed or played frame
        # has run the position stage only, and its constraint forces would be stale
        found = scene.contacts(self.m, d, forces=d is self._given) if self.show_contacts else None
        points = arrows = None
        if found is not None and len(found.pos):
            points = found.pos.astype(np.float32)
            weight = float(np.sum(self.m.body_mass)) * max(float(np.linalg.norm(self.m.opt.gravity)), 1e-9)
            scale = 0.5 * self.extent / weight  # the whole weight is half the model's size long
            keep = np.linalg.norm(found.force, axis=1) > 0
            if keep.any():
                tips = found.pos + scale * found.force
                arrows = np.stack([found.pos[keep], tips[keep]], axis=1).astype(np.float32)
        # made once, then moved (a live simulation redraws 30 times a second: re-creating the
        # nodes each frame would cost twice as much)
        sc = self.server.scene
        if points is None:
            if self.contact_points is not None:
                self.contact_points.visible = False
        elif self.contact_points is None:
            self.contact_points = sc.add_point_cloud("/kinedyn/contact/points", points, colors=(230, 60, 20),
                                                     point_size=0.02 * self.extent, point_shape="circle")
        else:
            self.contact_points.points = points
            self.contact_points.visible = True
        if arrows is None:
            if self.contact_arrows is not None:
                self.contact_arrows.visible = False
        elif self.contact_arrows is None:
            self.contact_arrows = sc.add_arrows("/kinedyn/contact/forces", arrows, colors=(230, 60, 20),
                                                shaft_radius=0.005 * self.extent,
                                                head_radius=0.012 * self.extent,
                                                head_length=0.03 * self.extent)
        else:
            self.contact_arrows.points = arrows
            self.contact_arrows.visible = True

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
        if self.live:
            self._build_simulation_gui()
        elif self.passive:
            with gui.add_folder("Drag"):
                self._build_perturb_gui()
        with gui.add_folder("Show"):
            self.frames_box = gui.add_checkbox("body frames", any(h.visible for h in self.body_frames))
            self.sites_box = gui.add_checkbox("sites", any(h.visible for h in self.site_handles),
                                              disabled=m.nsite == 0)
            self.contacts_box = gui.add_checkbox("contacts", self.show_contacts)
            self.com_box = gui.add_checkbox("centre of mass", self.com_handles[1].visible)
            self.floor_box = gui.add_checkbox("floor grid", True)
        self.com_box.on_update(lambda _: self._toggle(self.com_handles, self.com_box.value))
        self.frames_box.on_update(lambda _: self._toggle(self.body_frames, self.frames_box.value))
        self.sites_box.on_update(lambda _: self._toggle(self.site_handles, self.sites_box.value))
        self.contacts_box.on_update(lambda _: self._toggle_contacts())
        self.floor_box.on_update(lambda _: setattr(self.grid, "visible", self.floor_box.value))
        if self.live or self.passive:
            self._build_actuator_gui()
        if self.live:
            self._build_plot_gui()
            self._build_record_gui()
        self.joint_sliders = {}
        scalar = [j for j in range(m.njnt) if m.jnt_type[j] in (JointType.HINGE, JointType.SLIDE)]
        if scalar and not self.passive:  # a passive viewer's pose is the user's Data's
            with gui.add_folder("Joints", expand_by_default=self.qpos is None and not self.live):
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
            self._draw_poses(self._given if self.passive else self.d)

    def _toggle_contacts(self) -> None:
        with self._lock:
            self.show_contacts = self.contacts_box.value
            if self.passive:
                self._draw_contacts(self._given)
                return
            if not self.live:
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
        """Start playing the trajectory (from the slider's frame), or run the live simulation."""
        if self.live:
            self.sim.play()
            self.sim_play.visible, self.sim_pause.visible = False, True
            return
        if self.qpos is None or len(self.t) < 2:
            return
        self._playing = True
        self._play_clock = (time.perf_counter(), float(self.t[self._time_index]))
        self.play_button.visible, self.pause_button.visible = False, True

    def pause(self) -> None:
        if self.live:
            self.sim.pause()
            self.sim_play.visible, self.sim_pause.visible = True, False
            return
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

    # ------------------------------------------------------------------ live simulation

    def _build_simulation_gui(self) -> None:
        gui, m = self.server.gui, self.m
        with gui.add_folder("Simulation"):
            self.sim_status = gui.add_markdown(self._status_text())
            self.sim_play = gui.add_button("Play")
            self.sim_pause = gui.add_button("Pause", visible=False)
            self.sim_step = gui.add_button("Step")
            keys = ["qpos0"] + [m.id2name("key", k) or f"key {k}" for k in range(m.nkey)]
            self._key_labels = dict(zip(keys, [None, *range(m.nkey)], strict=True))
            # the keyframe the Data starts in, if it is one (kinedyn view --key)
            start = next((k for k in range(m.nkey) if np.array_equal(self.d.qpos, m.key_qpos[k])), None)
            self.sim_key = gui.add_dropdown("keyframe", keys, disabled=m.nkey == 0,
                                            initial_value=keys[0 if start is None else start + 1])
            self.sim_reset = gui.add_button("Reset")
            self.sim_speed = gui.add_dropdown("speed", SPEEDS, initial_value="1x")
            self._build_perturb_gui()
        self.sim_play.on_click(lambda _: self.play())
        self.sim_pause.on_click(lambda _: self.pause())
        self.sim_step.on_click(lambda _: self.single_step())
        self.sim_reset.on_click(lambda _: self.reset())
        self.sim_key.on_update(lambda _: self.reset())
        self.sim_speed.on_update(lambda _: self.sim.set_speed(float(self.sim_speed.value.rstrip("x"))))

    def _build_perturb_gui(self) -> None:
        self.perturb_text = self.server.gui.add_markdown("*click a body to grab it, then drag its handle*")
        self.release_button = self.server.gui.add_button("Release", visible=False)
        self.release_button.on_click(lambda _: self.release())

    def _status_text(self) -> str:
        sim = self.sim
        state = "running" if sim.playing else "paused"
        rtf = f"{sim.rtf:.2f}" if sim.playing and sim.rtf else "-"
        text = (f"**t = {self.d.time:.3f} s** ({state})  \nspeed {sim.speed:g}x, real-time factor {rtf}  \n"
                f"recorded {len(sim.recording)} steps")
        if sim.error is not None:
            text += f"  \n**stopped by an error:** `{type(sim.error).__name__}: {sim.error}`"
        return text

    def _build_actuator_gui(self) -> None:
        """A slider per control over its ctrlrange; [-1, 1] for an unlimited one (simulate's range)."""
        gui, m = self.server.gui, self.m
        self.ctrl_sliders = []
        if m.nu == 0:
            return
        labels = m.control_names()
        with gui.add_folder("Actuators", expand_by_default=self.live):
            for i in range(m.nu):
                if m.actuator_ctrllimited[i]:
                    low, high = (float(x) for x in m.actuator_ctrlrange[i])
                else:
                    low, high = -1.0, 1.0
                value = float(np.clip(self._control_data().ctrl[i], low, high))
                slider = gui.add_slider(labels[i], min=low, max=high,
                                        step=(high - low) / 1000 if high > low else 1.0, initial_value=value)
                slider.on_update(lambda _, i=i: self._on_ctrl_slider(i))
                self.ctrl_sliders.append(slider)
            self.zero_button = gui.add_button("Zero controls")
        self.zero_button.on_click(lambda _: self.zero_controls())

    def _control_data(self):
        """The Data the actuator sliders write: the live simulation's, or the passive viewer's user's."""
        return self._given if self.passive else self.d

    def _on_ctrl_slider(self, i: int) -> None:
        if self._syncing:
            return
        with self._lock:
            self._control_data().ctrl[i] = self.ctrl_sliders[i].value

    def zero_controls(self) -> None:
        """Every control to zero (clipped into its slider's range), as simulate's "Clear all"."""
        for slider in self.ctrl_sliders:
            slider.value = float(np.clip(0.0, slider.min, slider.max))
        with self._lock:
            self._control_data().ctrl[:] = [s.value for s in self.ctrl_sliders]

    def _sync_ctrl_sliders(self) -> None:
        self._syncing = True
        try:
            ctrl = self._control_data().ctrl
            for i, slider in enumerate(self.ctrl_sliders):
                value = float(np.clip(ctrl[i], slider.min, slider.max))
                if value != slider.value:
                    slider.value = value
        finally:
            self._syncing = False

    def _build_plot_gui(self) -> None:
        gui = self.server.gui
        self.history = History(self.m)
        with gui.add_folder("Plot", expand_by_default=False) as self.plot_folder:
            self.plot_choice = gui.add_dropdown("add signal", ["-", *self.history.available],
                                                initial_value="-")
            self.plot_window = gui.add_slider("seconds", min=1.0, max=30.0, step=1.0, initial_value=5.0)
            self.plot_clear = gui.add_button("Clear plot")
        self.plot = None
        self.plot_choice.on_update(lambda _: self._on_plot_choice())
        self.plot_window.on_update(lambda _: setattr(self.history, "window", float(self.plot_window.value)))
        self.plot_clear.on_click(lambda _: self.choose_signals([]))

    def _on_plot_choice(self) -> None:
        label = self.plot_choice.value
        if label != "-" and label not in self.history.chosen:
            self.choose_signals([*self.history.chosen, label][-6:])

    def choose_signals(self, labels) -> None:
        """Plot ``labels`` (names from :func:`kinedyn.viewer.live.signals`; an energy turns the model's
        energy flag on, as simulate's Physics > Energy)."""
        with self._lock:
            self.history.choose(labels)
            if any(self.history.available[x][0] == "energy" for x in self.history.chosen):
                self.sim.enable_energy()
                forward(self.m, self.d)
            self.history.sample(self.d)
        if self.plot is not None:
            self.plot.remove()
            self.plot = None
        if self.history.chosen:
            from viser import uplot

            t, values = self.history.arrays()
            series = (uplot.Series(label="t (s)"),
                      *(uplot.Series(label=x, stroke=c, width=1.5) for x, c in
                        zip(self.history.chosen, ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                                  "#8c564b"), strict=False)))
            with self.plot_folder:
                # x is simulated seconds, not uPlot's default of a Unix date
                self.plot = self.server.gui.add_uplot((t, *values.T), series, aspect=1.6,
                                                      scales={"x": uplot.Scale(time=False, auto=True)})

    def _update_plot(self) -> None:
        if self.plot is None:
            return
        t, values = self.history.arrays()
        if len(t):
            self.plot.data = (t, *values.T)

    def _build_record_gui(self) -> None:
        gui = self.server.gui
        with gui.add_folder("Record", expand_by_default=False):
            self.record_path = gui.add_text("file", "kinedyn-recording.npz")
            self.record_save = gui.add_button("Save trajectory (.npz, .csv)")
            self.record_gif = gui.add_button("Save GIF")
            self.record_text = gui.add_markdown("*everything since the last reset is recorded*")
        self.record_save.on_click(lambda _: self._record_action(self.save_trajectory, self.record_path.value))
        self.record_gif.on_click(lambda _: self._record_action(
            self.save_gif, str(Path(self.record_path.value).with_suffix(".gif"))))

    def _record_action(self, action, path) -> None:
        def run():
            self.record_text.content = f"*writing {path} ...*"
            try:
                written = action(path)
            except Exception as err:  # noqa: BLE001 - shown on the page: the viewer goes on
                self.record_text.content = f"**could not save:** `{err}`"
            else:
                self.record_text.content = f"saved `{written}`"
        threading.Thread(target=run, name="kinedyn-viewer-record", daemon=True).start()

    def save_trajectory(self, path) -> Path:
        """Save what was simulated since the last reset as a trajectory file (``.npz`` with time,
        qpos and ctrl; ``.csv`` time + qpos as ``kinedyn simulate`` writes): ``kinedyn view
        --trajectory`` plays it."""
        with self._lock:
            return self.sim.recording.save(path)

    def save_gif(self, path) -> Path:
        """A GIF of what was simulated since the last reset (15 frames per simulated second, the
        last 150 at most; :func:`kinedyn.viewer.render.animate`)."""
        with self._lock:
            rec = self.sim.recording
            snapshot = type(rec)(self.m)
            snapshot.rows.extend(rec.rows)
        return snapshot.save_gif(path, source=self.source)

    def single_step(self) -> None:
        """Pause and advance the live simulation by one step."""
        self.pause()
        self.sim.step_once()
        self._redraw_live()

    def reset(self) -> None:
        """Reset the live simulation to the selected keyframe (or qpos0); the sliders follow."""
        key = self._key_labels.get(self.sim_key.value)
        self.sim.reset(key)
        self._redraw_live()

    def _redraw_live(self) -> None:
        with self._lock:
            self._draw_poses(self.d)
            if self.history is not None:
                self.history.sample(self.d)
        self._sync_ctrl_sliders()
        self._sync_joint_sliders()
        self.sim_status.content = self._status_text()

    def _live_loop(self) -> None:
        """The viewer's thread: step in real time, draw ~30 times a second, refresh the status, the
        plot and the sliders ~5 times a second."""
        period = 1.0 / FRAME_RATE
        next_status = 0.0
        try:
            while not self._stop.is_set():
                start = time.perf_counter()
                stepped = self.sim.advance(budget=0.8 * period)
                with self._lock:
                    if stepped:
                        self._draw_poses(self.d)
                        self.history.sample(self.d)
                    elif self.sim.perturb is not None and self._pert_handle is not None:
                        self._draw_perturbation(self.d)  # paused: the cursor may still move
                if start >= next_status:
                    next_status = start + 1.0 / STATUS_RATE
                    self.sim_status.content = self._status_text()
                    if self.sim.error is not None and self.sim_pause.visible:
                        self.sim_play.visible, self.sim_pause.visible = True, False
                    if stepped:
                        self._update_plot()
                        self._sync_ctrl_sliders()
                        self._sync_joint_sliders()
                self._stop.wait(max(0.0, period - (time.perf_counter() - start)))
        except Exception:  # noqa: BLE001 - a closed server while stopping
            if not self._stop.is_set():
                raise

    # ------------------------------------------------------------------ perturbation

    def _current_perturb(self):
        return self.sim.perturb if self.live else self._pert

    def _on_scene_click(self, event) -> None:
        """Select the body under the cursor (a click on nothing lets go) and show its drag handle."""
        with self._lock:
            d = self.d if self.live else self._given
            body, point = perturb.select(self.m, d, event.ray_origin, event.ray_direction)
            if self.live:
                self.sim.release()
                if body > 0:
                    self.sim.perturb = perturb.init_perturb(self.m, d, body, point)
            else:
                self._release_passive()
                if body > 0:
                    self._pert = perturb.init_perturb(self.m, d, body, point)
        self._show_handle(body, point)

    def grab(self, body: int, point) -> None:
        """Grab ``body`` at world ``point`` as a click on it would (for scripts and tests)."""
        with self._lock:
            d = self.d if self.live else self._given
            pert = perturb.init_perturb(self.m, d, body, point)
            if self.live:
                self.sim.perturb = pert
            else:
                self._pert = pert
        self._show_handle(body, point)

    def _show_handle(self, body: int, point) -> None:
        if self._pert_handle is not None:
            self._pert_handle.remove()
            self._pert_handle = None
        if body <= 0:
            self.perturb_text.content = "*click a body to grab it, then drag its handle*"
            self.release_button.visible = False
            return
        name = self.m.id2name("body", body) or f"body {body}"
        self.perturb_text.content = f"grabbed **{name}**: drag the handle to pull it"
        self.release_button.visible = True
        handle = self.server.scene.add_transform_controls("/kinedyn/perturb/handle", scale=0.3 * self.extent,
                                                          disable_rotations=True, position=np.asarray(point),
                                                          depth_test=False)
        # the phases of a drag: "start" when the mouse takes the handle, "update", "end" at release
        handle.on_update(lambda event: self._drag({"start": True, "end": False}.get(event.phase)))
        self._pert_handle = handle

    def _drag(self, active) -> None:
        """The handle moved: the cursor point follows it; the pull is on while the mouse drags."""
        with self._lock:
            pert = self._current_perturb()
            if pert is None or self._pert_handle is None:
                return
            pert.refselpos = np.asarray(self._pert_handle.position, dtype=float).copy()
            if active is not None:
                pert.active = active
            if active is False:
                pert.force = np.zeros(3)
                if self.live:
                    self.d.xfrc_applied[pert.body] = 0.0

    def release(self) -> None:
        """Let go of the grabbed body."""
        with self._lock:
            if self.live:
                self.sim.release()
            else:
                self._release_passive()
        self._show_handle(-1, None)

    def _release_passive(self) -> None:
        self._pert = None

    def _draw_perturbation(self, d) -> None:
        """While dragging: the spring from the grabbed point to the cursor and the force as an arrow
        (scaled as the contact forces); when not dragging the handle rides on the grabbed point.
        The two are made once and moved after (no flicker from removing and adding them)."""
        pert = self._current_perturb()
        if pert is None or self._pert_handle is None or not pert.active:
            for handle in self._pert_drawn:
                handle.visible = False
            if pert is not None and self._pert_handle is not None:
                selpos = perturb.selection_point(d, pert)
                if not np.allclose(self._pert_handle.position, selpos, rtol=0, atol=1e-6 * self.extent):
                    self._pert_handle.position = selpos
            return
        selpos = perturb.selection_point(d, pert)
        weight = float(np.sum(self.m.body_mass)) * max(float(np.linalg.norm(self.m.opt.gravity)), 1.0)
        tip = selpos + 0.5 * self.extent / weight * pert.force
        spring = np.array([[selpos, pert.refselpos]], dtype=np.float32)
        arrow = np.array([[selpos, tip]], dtype=np.float32)
        if not self._pert_drawn:
            sc = self.server.scene
            self._pert_drawn = (
                sc.add_line_segments("/kinedyn/perturb/spring", spring, colors=PERTURB_RGB, thickness=2.0,
                                     thickness_units="screen"),
                sc.add_arrows("/kinedyn/perturb/force", arrow, colors=PERTURB_RGB,
                              shaft_radius=0.006 * self.extent, head_radius=0.015 * self.extent,
                              head_length=0.035 * self.extent))
        for handle, points in zip(self._pert_drawn, (spring, arrow), strict=True):
            handle.points = points
            handle.visible = True

    # ------------------------------------------------------------------ passive viewer (launch_passive)

    def sync(self) -> None:
        """Passive viewer: draw the user's Data as it is now (its poses, contacts, centre of mass),
        and hand the viewer's input to it: the mouse pull into ``xfrc_applied`` of the grabbed body
        (mjv_applyPerturbForce; that body's entry is zeroed once the mouse lets go), as
        ``mujoco.viewer``'s ``sync``."""
        if not self.passive:
            raise RuntimeError("sync() is for the passive viewer (kd.viewer.launch_passive)")
        if not self.is_running():
            return
        d = self._given
        with self._lock:
            if self._pert_body_written >= 0:
                d.xfrc_applied[self._pert_body_written] = 0.0
                self._pert_body_written = -1
            if self._pert is not None and self._pert.active:
                perturb.apply_perturb_force(self.m, d, self._pert)
                self._pert_body_written = self._pert.body
            self._draw_poses(d)
        self._sync_ctrl_sliders()

    def is_running(self) -> bool:
        """Whether the viewer still serves (False once closed), as ``mujoco.viewer``'s handle."""
        return not self._stop.is_set()

    def lock(self):
        """The lock the viewer's callbacks hold while they touch the Data: ``with v.lock(): ...``."""
        return self._lock

    # ------------------------------------------------------------------ life cycle

    def serve_forever(self) -> None:
        """Print the URL and serve until Ctrl-C (or :meth:`close` from another thread); then stop."""
        try:
            # the print is inside the try: a Ctrl-C sent as soon as the URL is read can land while
            # the print itself returns (seen in CI)
            print(f"kinedyn viewer: {self.url}  (Ctrl-C to stop)", flush=True)
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


def show(m, d=None, *, block: bool = True, source: str | Path | None = None, controller=None,
         run: bool = False, live: bool = True, **options) -> Viewer:
    """Simulate ``d`` (default: a new Data at qpos0) live in the browser, as MuJoCo's ``simulate``.

    Play/Pause/Step/Reset, a keyframe selector, the speed factor and the real-time factor achieved,
    a slider per actuator, click-and-drag perturbation, a live plot, recording. ``d`` is stepped in
    place (``kd.step`` on the viewer's thread). ``controller(m, d)``, when given, is called before
    each step (it may set ``d.ctrl``, ``d.qfrc_applied``, ...). ``run``: start playing at once.
    ``live=False`` only draws ``d`` (with joint sliders to pose a copy of it).

    Prints the URL; with ``block`` (default) serves until Ctrl-C, else returns the running
    :class:`Viewer` (``viewer.close()`` stops it). ``options`` go to :class:`Viewer`.
    """
    viewer = Viewer(m, d, source=source, live=live, controller=controller, run=run and live, **options)
    if block:
        viewer.serve_forever()
    else:
        print(f"kinedyn viewer: {viewer.url}", flush=True)
    return viewer


def launch_passive(m, d, *, source: str | Path | None = None, **options) -> Viewer:
    """A viewer that draws ``d`` when told, for a loop you write (``mujoco.viewer.launch_passive``)::

        with kd.viewer.launch_passive(m, d) as v:
            while v.is_running():
                kd.step(m, d)
                v.sync()

    ``v.sync()`` draws ``d``'s current poses and contacts and writes the mouse's pull on a grabbed
    body into ``d.xfrc_applied``; ``v.lock()`` is the lock the viewer holds while its callbacks (the
    actuator sliders, a grab) touch ``d``. Does not block; prints the URL; ``v.close()`` (or the
    ``with`` block's end) stops the server. ``options`` go to :class:`Viewer`.
    """
    viewer = Viewer(m, d, source=source, passive=True, **options)
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


__all__ = ["Viewer", "launch_passive", "play", "show"]
