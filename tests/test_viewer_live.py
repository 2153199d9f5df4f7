"""The live viewer (issue 28): the mouse pull against MuJoCo's mjv_initPerturb / mjv_applyPerturbForce,
the simulation loop (real time, controller, keyframes, recording), and the browser in Debian's
headless Chromium: Play advances the displayed time, an actuator slider moves the joint, a scripted
drag of the grab handle moves the body, ``launch_passive``'s ``sync`` shows the Data's pose, and the
ports are closed afterwards.
"""

from __future__ import annotations

import re
import socket
import struct
import time

import numpy as np
import pytest

import kinedyn as kd
from kinedyn import models
from kinedyn.viewer import live, perturb
from tests.test_viewer import CHROMIUM, CHROMIUM_FLAGS, _browser_requirements, free_port

# a free box (no gravity: it moves only when pulled) and a motor-driven arm
TOY = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="box" pos="-0.3 0 0.3">
      <freejoint/>
      <geom type="box" size="0.08 0.08 0.08" rgba="0.2 0.5 0.9 1"/>
    </body>
    <body name="arm" pos="0.3 0 0.45">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" rgba="0.9 0.4 0.2 1"/>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge" ctrlrange="-2 2"/></actuator>
  <sensor><jointpos name="angle" joint="hinge"/></sensor>
  <keyframe><key name="bent" qpos="-0.3 0 0.3 1 0 0 0 0.5" ctrl="0.25"/></keyframe>
</mujoco>"""


def wait_until(condition, timeout: float, page=None, poll: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        if page is not None:
            page.wait_for_timeout(int(poll * 1000))
        else:
            time.sleep(poll)
    return True


# ---------------------------------------------------------------- the pull, against MuJoCo


def test_grab_and_pull_are_mujocos_mjv_init_perturb_and_apply_perturb_force():
    mujoco = pytest.importorskip("mujoco")
    path = str(models.path("biped"))
    m, mm = kd.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(path)
    d, md = kd.Data(m), mujoco.MjData(mm)
    rng = np.random.default_rng(7)
    qpos = m.qpos0 + 0.1 * rng.normal(size=m.nq)
    qpos[3:7] /= np.linalg.norm(qpos[3:7])
    qvel = rng.normal(size=m.nv)
    for data in (d, md):
        data.qpos[:], data.qvel[:] = qpos, qvel
    kd.forward(m, d)
    mujoco.mj_forward(mm, md)
    scn = mujoco.MjvScene(mm, 10)
    for cam in scn.camera:  # mjv_initPerturb's scale needs a camera; the local mass does not
        cam.frustum_near, cam.frustum_top, cam.frustum_bottom = 0.01, 0.01, -0.01
        cam.forward[:], cam.up[:] = [1, 0, 0], [0, 0, 1]
    for body in (1, 5, m.nbody - 1):  # the floating torso, a thigh, a foot
        point = d.xpos[body] + d.xmat[body] @ np.array([0.02, -0.01, 0.03])
        ours = perturb.init_perturb(m, d, body, point)
        pert = mujoco.MjvPerturb()
        pert.select, pert.localpos[:] = body, ours.localpos
        mujoco.mjv_initPerturb(mm, md, scn, pert)
        assert ours.localmass == pytest.approx(pert.localmass, rel=1e-9)
        assert np.allclose(ours.refselpos, pert.refselpos, rtol=0, atol=1e-12)
        ours.refselpos = point + [0.1, -0.2, 0.3]
        pert.refselpos[:] = ours.refselpos
        d.xfrc_applied[:] = md.xfrc_applied[:] = 0
        perturb.apply_perturb_force(m, d, ours)
        assert not d.xfrc_applied.any()  # not dragging: no pull
        ours.active, pert.active = True, mujoco.mjtPertBit.mjPERT_TRANSLATE
        perturb.apply_perturb_force(m, d, ours)
        mujoco.mjv_applyPerturbForce(mm, md, pert)
        assert np.abs(md.xfrc_applied[body]).max() > 1  # a real pull
        assert np.allclose(d.xfrc_applied, md.xfrc_applied, rtol=1e-9, atol=1e-12)


def test_a_pulled_simulation_steps_as_mujoco_pulled_by_its_viewer():
    mujoco = pytest.importorskip("mujoco")
    m, mm = kd.Model.from_xml_string(TOY), mujoco.MjModel.from_xml_string(TOY)
    d, md = kd.Data(m), mujoco.MjData(mm)
    sim = live.Simulation(m, d)
    mujoco.mj_forward(mm, md)
    point = d.xpos[1] + [0.0, -0.08, 0.02]
    sim.perturb = perturb.init_perturb(m, d, 1, point)
    sim.perturb.refselpos = point + [0.2, 0.0, 0.1]
    sim.perturb.active = True
    pert = mujoco.MjvPerturb()
    pert.select, pert.active = 1, mujoco.mjtPertBit.mjPERT_TRANSLATE
    pert.localpos[:], pert.refselpos[:], pert.localmass = (sim.perturb.localpos, sim.perturb.refselpos,
                                                           sim.perturb.localmass)
    for _ in range(100):
        sim.step_once()
        md.xfrc_applied[:] = 0  # simulate: clear, apply the pull, step
        mujoco.mjv_applyPerturbForce(mm, md, pert)
        mujoco.mj_step(mm, md)
    assert d.qpos[0] - (-0.3) > 0.01  # pulled toward +x
    assert np.allclose(d.qpos, md.qpos, rtol=1e-9, atol=1e-12)
    assert np.allclose(d.qvel, md.qvel, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- the simulation loop


def test_simulation_runs_in_real_time_with_a_controller_keyframes_and_a_recording(tmp_path):
    m = kd.Model.from_xml_string(TOY)
    seen = []

    def controller(m, d):
        seen.append(d.time)
        d.ctrl[0] = 1.0

    sim = live.Simulation(m, kd.Data(m), controller)
    assert sim.advance() == 0  # paused
    sim.play()
    start = time.perf_counter()
    while time.perf_counter() - start < 0.6:
        sim.advance(budget=1 / 30)
        time.sleep(1 / 60)
    wall = time.perf_counter() - start
    steps = len(sim.recording)
    # paced by the wall clock: never ahead of it (how close it keeps up is measured in
    # bench/viewer_live.py, not asserted here)
    assert 0 < sim.d.time <= wall + 1e-9
    assert sim.rtf > 0  # the achieved real-time factor is reported once playing
    assert seen == pytest.approx([k * m.opt.timestep for k in range(steps)])  # before every step
    assert sim.d.qpos[7] > 0  # the controller's torque turned the arm
    t, qpos, ctrl = sim.recording.arrays()
    assert np.allclose(np.diff(t), m.opt.timestep) and np.all(ctrl == 1.0)
    for name in ("run.npz", "run.csv"):  # the files kinedyn view --trajectory reads
        sim.recording.save(tmp_path / name)
        t_back, q_back = kd.trajectory.load(tmp_path / name, m)
        assert np.array_equal(t_back, t) and np.array_equal(q_back, qpos)
    with pytest.raises(ValueError, match="cannot save a trajectory as '.txt'"):
        sim.recording.save(tmp_path / "run.txt")
    gif = sim.recording.save_gif(tmp_path / "run.gif", fps=5, max_frames=3)
    from PIL import Image

    assert Image.open(gif).n_frames == 3
    sim.reset("bent")
    assert sim.d.time == 0 and sim.d.qpos[7] == 0.5 and sim.d.ctrl[0] == 0.25 and len(sim.recording) == 0
    sim.controller = lambda m, d: 1 / 0
    sim.play()
    sim.advance()  # anchors the clock
    time.sleep(0.02)
    sim.advance()
    assert not sim.playing and isinstance(sim.error, ZeroDivisionError)
    history = live.History(m, window=0.01)
    history.choose(["qpos hinge", "sensor angle", "ctrl motor", "energy kinetic"])
    for _ in range(10):
        kd.step(m, sim.d)
        history.sample(sim.d)
    t, values = history.arrays()
    assert values.shape == (len(t), 4) and t[-1] - t[0] <= 0.01
    assert values[-1, 0] == sim.d.qpos[7] and values[-1, 1] == sim.d.sensordata[0]
    with pytest.raises(KeyError, match="no signal 'qpos nothing'"):
        history.choose(["qpos nothing"])


# ---------------------------------------------------------------- the browser


def _project(camera, point, width: float, height: float) -> tuple[float, float]:
    """Pixel of a world point seen by a viser client's camera (OpenCV frame: x right, y down, z ahead;
    ``wxyz`` rotates camera to world; ``fov`` is vertical)."""
    w, x, y, z = camera.wxyz
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    p = rot.T @ (np.asarray(point, dtype=float) - camera.position)
    f = 0.5 * height / np.tan(0.5 * camera.fov)
    return 0.5 * width + f * p[0] / p[2], 0.5 * height + f * p[1] / p[2]


def _received_positions(frames, name: str) -> list[np.ndarray]:
    """The positions of scene node ``name`` the page received, in order: viser's SetPositionMessage,
    msgpack (``name``, then ``position`` as three float64), zstd-compressed when large."""
    import zstandard

    pattern = re.compile(re.escape(b"\xa4name" + bytes([0xa0 + len(name)]) + name.encode()) +
                         rb"\xa8position\x93\xcb(.{8})\xcb(.{8})\xcb(.{8})", re.DOTALL)
    found = []
    for received in frames:
        frame = received if isinstance(received, bytes) else received.encode()
        start = frame.find(b"\x28\xb5\x2f\xfd")  # the zstd frame magic
        payload = (frame if start < 0
                   else zstandard.ZstdDecompressor().decompressobj().decompress(frame[start:]))
        found += [np.array([struct.unpack(">d", x)[0] for x in match]) for match in pattern.findall(payload)]
    return found


def _open(browser, viewer, frames=None):
    # small: the software renderer redraws the view on every pose update and pointer move
    page = browser.new_page(viewport={"width": 720, "height": 540})
    if frames is not None:  # (a lambda: Playwright tags the handler object, which a bound builtin refuses)
        page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))  # noqa: PLW0108
    page.goto(viewer.url)
    page.wait_for_selector("canvas", timeout=30_000)
    assert wait_until(lambda: len(viewer.server.get_clients()) == 1, 30, page)
    client = next(iter(viewer.server.get_clients().values()))
    # the client reports its camera once the viewer's initial camera is applied
    assert wait_until(lambda: np.allclose(client.camera.position, viewer.server.initial_camera.position,
                                          atol=1e-3), 10, page)
    page.wait_for_timeout(1000)  # the software renderer's first frames
    return page, client


@pytest.fixture(scope="module")
def browser():
    _browser_requirements()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def toy_viewer(browser):
    from kinedyn.viewer import Viewer

    m = kd.Model.from_xml_string(TOY)
    port = free_port()
    # no environment map: Chromium's software WebGL would freeze the page ~15 s over its first frame
    viewer = Viewer(m, live=True, port=port, source=TOY, environment=False)
    page, client = _open(browser, viewer)
    yield viewer, page, client
    page.close()
    viewer.close()
    with pytest.raises(OSError):  # the port is closed afterwards
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert not viewer._thread.is_alive()


def test_play_advances_the_displayed_time_and_pause_stops_it(toy_viewer):
    viewer, page, _ = toy_viewer
    status = page.locator("p").filter(has_text="real-time factor")  # the Simulation folder's status
    assert re.search(r"t = 0\.000 s", status.inner_text())
    page.get_by_role("button", name="Play").click()

    def shown() -> float:
        return float(re.search(r"t = (\d+\.\d+) s", status.inner_text()).group(1))

    assert wait_until(lambda: shown() > 0.3, 20, page), status.inner_text()
    assert viewer.sim.playing and viewer.d.time >= shown()
    assert wait_until(lambda: "real-time factor 0." in status.inner_text()
                      or "real-time factor 1." in status.inner_text(), 10, page)
    page.get_by_role("button", name="Pause").click()
    assert wait_until(lambda: not viewer.sim.playing, 10, page)
    frozen = viewer.d.time
    page.wait_for_timeout(300)
    assert viewer.d.time == frozen


def test_an_actuator_slider_drives_the_joint(toy_viewer):
    viewer, page, _ = toy_viewer
    viewer.reset()
    assert viewer.d.ctrl[0] == 0 and viewer.d.qpos[7] == 0
    slider = page.get_by_role("slider").first  # the Actuators folder's only slider ("motor")
    slider.focus()
    slider.press("End")
    assert wait_until(lambda: viewer.d.ctrl[0] == 2.0, 10, page)
    viewer.play()
    assert wait_until(lambda: viewer.d.qpos[7] > 0.2, 20, page)  # +y torque turns the arm
    viewer.pause()
    page.get_by_role("button", name="Zero controls").click()
    assert wait_until(lambda: viewer.d.ctrl[0] == 0.0, 10, page)


def test_a_scripted_drag_pulls_the_grabbed_body(toy_viewer):
    viewer, page, client = toy_viewer
    viewer.reset()  # paused while the mouse works: the software renderer is idle, the mouse quick
    size = page.viewport_size
    box = viewer.d.xpos[1].copy()
    # click on the box: it is grabbed where the click's ray meets it
    page.mouse.click(*_project(client.camera, box, size["width"], size["height"]))
    assert wait_until(lambda: viewer.sim.perturb is not None, 10, page), "the click did not grab the box"
    assert viewer.sim.perturb.body == 1
    grabbed = viewer.sim.perturb.refselpos.copy()
    assert wait_until(lambda: viewer._pert_handle is not None, 5, page)
    page.wait_for_timeout(300)
    # drag the handle's x arrow (red) 0.25 m along +x and hold it there while the simulation runs
    reach = 0.3 * viewer.extent * 0.6
    start = _project(client.camera, grabbed + [reach, 0, 0], size["width"], size["height"])
    end = _project(client.camera, grabbed + [reach + 0.25, 0, 0], size["width"], size["height"])
    page.mouse.move(*start)
    page.mouse.down()
    for k in (1, 2):  # each move redraws in software (~0.5 s): two are enough for the drag
        page.mouse.move(start[0] + k / 2 * (end[0] - start[0]), start[1] + k / 2 * (end[1] - start[1]))
    assert wait_until(lambda: viewer.sim.perturb.active, 5, page), "the drag did not start"
    assert wait_until(lambda: viewer.sim.perturb.refselpos[0] > grabbed[0] + 0.15, 5, page), \
        "the cursor point did not follow the mouse"
    assert viewer.d.qpos[0] == box[0]  # paused: nothing moved yet
    viewer.play()
    assert wait_until(lambda: viewer.d.qpos[0] > box[0] + 0.1, 20, page, poll=0.2), viewer.d.qpos[:3]
    assert np.linalg.norm(viewer.sim.perturb.force) > 0
    page.mouse.up()
    assert wait_until(lambda: not viewer.sim.perturb.active, 5, page)
    viewer.pause()
    page.get_by_role("button", name="Release").click()
    assert wait_until(lambda: viewer.sim.perturb is None, 5, page)


def test_launch_passive_sync_shows_the_datas_pose_and_closes_its_port(browser):
    m = kd.Model.from_xml_string(TOY)
    d = kd.Data(m)
    kd.forward(m, d)
    port = free_port()
    frames = []
    with kd.viewer.launch_passive(m, d, port=port, source=TOY, environment=False) as v:
        assert v.is_running()
        page, _ = _open(browser, v, frames)
        for _ in range(3):  # the user's loop: move the Data, sync, the page gets the pose
            with v.lock():
                d.qpos[2] += 0.1
                d.qpos[7] += 0.2
                kd.forward(m, d)
            seen = len(frames)
            v.sync()
            for g in range(m.ngeom):
                assert wait_until(lambda g=g, seen=seen: any(
                    np.array_equal(p, d.geom_xpos[g])
                    for p in _received_positions(frames[seen:], f"/kinedyn/geom/{g}")),
                                  10, page), f"the page did not get geom {g}'s pose"
        page.close()
    assert not v.is_running()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
