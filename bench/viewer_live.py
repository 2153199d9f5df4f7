"""Does the live browser viewer keep real time? ``python -m bench.viewer_live [--models biped humanoid-floor]
[--seconds 5] [--browser]``.

For each model, a live :class:`kinedyn.viewer.Viewer` (``kd.viewer.show``'s) plays at 1x for
``--seconds`` of wall clock, its thread stepping ``kd.step`` and pushing the poses ~30 times a
second. Printed: the simulated seconds per wall second over the run (1.00 = real time), the
viewer's own real-time factor (its last second), the cost of one ``kd.step`` and of one pose
update (all geoms, contacts and their force arrows) on the viewer's thread. With ``--browser``, a
headless Chromium (``/usr/bin/chromium``, software WebGL) is connected and draws every update:
the worst case on one machine, since its renderer competes for the same cores.

The humanoid is the benchmark's ``humanoid-floor`` (gymnasium's humanoid.xml, dropped on the floor).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kinedyn as kd
from kinedyn.cli.benchmark import model_source


def load(name: str):
    if name in ("biped", "arm3", "arm7", "pendulum"):
        return kd.models.load(name), str(kd.models.path(name))
    source, note = model_source(name)
    if source is None:
        raise SystemExit(note)
    return kd.Model.from_xml_string(source.xml), source.xml


def measure(name: str, seconds: float, browser) -> dict:
    from kinedyn.viewer import Viewer

    m, src = load(name)
    viewer = Viewer(m, live=True, port=8123, source=src)
    page = None
    try:
        if browser is not None:
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.goto(viewer.url)
            page.wait_for_selector("canvas", timeout=60_000)
            deadline = time.monotonic() + 30
            while not viewer.server.get_clients() and time.monotonic() < deadline:
                page.wait_for_timeout(100)
        d = viewer.d
        for _ in range(20):  # the kernels are warm before the clock starts
            viewer.sim.step_once()
        viewer.sim.reset()
        draws = []
        draw = viewer._draw_poses

        def timed_draw(data):
            t0 = time.perf_counter()
            draw(data)
            draws.append(time.perf_counter() - t0)

        viewer._draw_poses = timed_draw
        wall0, sim0 = time.perf_counter(), d.time
        viewer.play()
        time.sleep(seconds)
        rtf_viewer = viewer.sim.rtf
        viewer.pause()
        wall, sim = time.perf_counter() - wall0, d.time - sim0
        # the step alone, on the same thread as here (paused viewer)
        n = 300
        t0 = time.perf_counter()
        for _ in range(n):
            kd.step(m, d)
        per_step = (time.perf_counter() - t0) / n
    finally:
        if page is not None:
            page.close()
        viewer.close()
    return {"model": name, "dt": m.opt.timestep, "sim/wall": sim / wall, "viewer rtf": rtf_viewer,
            "step us": per_step * 1e6, "draw ms": 1e3 * float(np.median(draws)) if draws else float("nan"),
            "draws/s": len(draws) / wall}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=["biped", "humanoid-floor"])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--browser", action="store_true", help="connect a headless Chromium that draws")
    args = parser.parse_args(argv)
    rows = []
    if args.browser:
        from playwright.sync_api import sync_playwright

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
                 "--enable-unsafe-swiftshader"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=flags)
            rows = [measure(name, args.seconds, browser) for name in args.models]
            browser.close()
    else:
        rows = [measure(name, args.seconds, None) for name in args.models]
    print(f"{'model':16} {'dt':>6} {'sim/wall':>9} {'viewer rtf':>10} {'step us':>8} {'draw ms':>8} "
          f"{'draws/s':>8}")
    for r in rows:
        print(f"{r['model']:16} {r['dt']:6.4f} {r['sim/wall']:9.3f} {r['viewer rtf']:10.3f} "
              f"{r['step us']:8.1f} {r['draw ms']:8.2f} {r['draws/s']:8.1f}")


if __name__ == "__main__":
    main()
