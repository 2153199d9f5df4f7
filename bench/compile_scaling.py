"""How model compilation grows with the number of bodies, kinedyn against MuJoCo.

    python -m bench.compile_scaling [--n 100 1000 3000 10000] [--repeat K] [--no-mujoco] [--profile N]

Generated models (:func:`forest_xml`): a forest of small binary trees of ``n`` bodies in all,
each tree on a free joint, every other body on a hinge, slide or ball joint, one or two
geoms per body (all colliding with each other and with a floor), a few sites, fixed and
spatial tendons, connect/weld/joint equalities, actuators, explicit pairs and excludes.
The trees are shallow (depth <= 6), so the mass matrix has O(n) non-zeros and a compiler
that is linear in the model's size is linear in ``n``; MuJoCo's is.

For each ``n`` prints the wall time of ``kd.Model.from_xml_string`` and of
``mujoco.MjModel.from_xml_string`` (the smallest of ``--repeat`` runs; the kernels are
compiled by a warm-up load first), of ``kd.Data(m)`` and of the first ``kd.forward``.
The peak resident memory of the process so far is printed too (sizes run in the order given).
``--profile N`` runs kinedyn's compile of the size-N model under cProfile and prints the
top entries by cumulative time. Not a timed test: see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time
import xml.etree.ElementTree as ET

DEFAULT_N = (100, 1000, 3000, 10000)
TREE_SIZE = 40  # bodies per tree: binary, so depth 6
_AXES = ("0 1 0", "1 0 0", "0 0 1")
_SHAPES = (("capsule", "0.02 0.04"), ("sphere", "0.03"), ("box", "0.02 0.03 0.015"),
           ("cylinder", "0.02 0.03"), ("ellipsoid", "0.02 0.03 0.025"))


def _grid(local: int) -> tuple[float, float]:
    """Where body ``local`` of a tree sits seen from above: a 7-wide grid 0.12 apart, so that no
    two geoms of a tree touch at qpos0."""
    return (local % 7) * 0.12, (local // 7) * 0.12


def forest_xml(n: int, tree_size: int = TREE_SIZE, seed: int = 0, nconmax: int | None = 200,
               masks: bool = False) -> str:
    """MJCF of a forest of ``n`` bodies (see the module docstring); deterministic in ``seed``.

    ``nconmax``: the ``<size nconmax>`` given (None: none, so that kinedyn sizes the contact
    arrays from the pairs that can collide). ``masks``: vary contype/conaffinity across geoms
    (some geoms collide only with some others, some with none)."""
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    import random

    rng = random.Random(seed)
    root = ET.Element("mujoco", model=f"forest{n}")
    ET.SubElement(root, "option", timestep="0.002")
    if nconmax is not None:
        ET.SubElement(root, "size", nconmax=str(nconmax))
    default = ET.SubElement(root, "default")
    ET.SubElement(default, "geom", friction="0.8 0.01 0.001", solref="0.01 1")
    ET.SubElement(default, "joint", damping="0.05", armature="0.001")
    world = ET.SubElement(root, "worldbody")
    ET.SubElement(world, "geom", name="floor", type="plane", size="0 0 1")
    if masks:  # a static body: its geoms and the floor's are both dof-less
        static = ET.SubElement(world, "body", name="static", pos="-2 -2 0.5")
        ET.SubElement(static, "geom", type="box", size="0.1 0.1 0.1")
    bodies: dict[int, ET.Element] = {}
    joints: list[str] = []
    sites: list[tuple[int, str]] = []  # (tree, site name)
    side = max(1, int(round((n / tree_size) ** 0.5)))
    for k in range(n):
        tree, local = divmod(k, tree_size)
        if local == 0:
            x, y = (tree % side) * 1.0, (tree // side) * 1.0
            body = ET.SubElement(world, "body", name=f"b{k}", pos=f"{x} {y} 1")
            ET.SubElement(body, "freejoint", name=f"free{k}")
        else:
            parent_local = (local + 1) // 2 - 1
            parent = bodies[tree * tree_size + parent_local]
            (x0, y0), (x1, y1) = _grid(parent_local), _grid(local)
            attrs = dict(name=f"b{k}", pos=f"{x1 - x0:.2f} {y1 - y0:.2f} -0.1")
            if 2 * local + 1 >= tree_size:  # a leaf: its frame may turn without moving others
                r = [rng.random() for _ in range(3)]
                attrs["quat"] = f"{1 + 0.2 * r[0]:.4f} {0.2 * r[1]:.4f} 0 {0.1 * r[2]:.4f}"
            body = ET.SubElement(parent, "body", **attrs)
            kind = ("hinge", "hinge", "slide", "ball", None)[k % 5]
            if kind is not None:
                attrs = dict(name=f"j{k}", type=kind)
                if kind != "ball":
                    attrs.update(axis=_AXES[k % 3], range="-1 1", limited="true")
                ET.SubElement(body, "joint", **attrs)
                if kind in ("hinge", "slide"):
                    joints.append(f"j{k}")
        shape, size = _SHAPES[k % len(_SHAPES)]
        mass, qx, qy = 0.1 + 0.05 * rng.random(), 0.3 * rng.random(), 0.3 * rng.random()
        ET.SubElement(body, "geom", name=f"g{k}", type=shape, size=size, mass=f"{mass:.4f}",
                      quat=f"1 {qx:.4f} {qy:.4f} 0")
        if masks and k % 4:
            geom = body[-1]
            geom.set("contype", str(1 << (k % 3)))
            geom.set("conaffinity", str((k % 5) & 3))
        if k % 3 == 0:
            ET.SubElement(body, "geom", type="sphere", size="0.01", pos="0.02 0 0", condim="4")
        if k % 7 == 1:
            name = f"s{k}"
            ET.SubElement(body, "site", name=name, pos="0 0 -0.02")
            sites.append((tree, name))
        bodies[k] = body

    # a few tendons, equalities, actuators, pairs and excludes (constant in number)
    tendon = ET.SubElement(root, "tendon")
    for i in range(0, min(len(joints) - 1, 8), 2):
        fixed = ET.SubElement(tendon, "fixed", name=f"tf{i}", stiffness="1")
        ET.SubElement(fixed, "joint", joint=joints[i], coef="1")
        ET.SubElement(fixed, "joint", joint=joints[i + 1], coef="-0.5")
    same_tree = [(a, b) for (ta, a), (tb, b) in zip(sites, sites[1:], strict=False) if ta == tb]
    for i, (a, b) in enumerate(same_tree[:3]):
        spatial = ET.SubElement(tendon, "spatial", name=f"ts{i}", limited="true", range="0 1")
        ET.SubElement(spatial, "site", site=a)
        ET.SubElement(spatial, "site", site=b)
    equality = ET.SubElement(root, "equality")
    ntree = (n + tree_size - 1) // tree_size
    for t in range(min(ntree - 1, 3)):
        ET.SubElement(equality, "connect", body1=f"b{t * tree_size}", body2=f"b{(t + 1) * tree_size}",
                      anchor="0 0 0.1")
    ET.SubElement(equality, "weld", body1=f"b{n - 1}", body2=f"b{n // 2}")
    if len(joints) >= 2:
        ET.SubElement(equality, "joint", joint1=joints[0], joint2=joints[-1], polycoef="0 1 0 0 0")
    actuator = ET.SubElement(root, "actuator")
    for i, j in enumerate(joints[:6]):
        if i % 2:
            ET.SubElement(actuator, "position", joint=j, kp="10", dampratio="1")
        else:
            ET.SubElement(actuator, "motor", joint=j, gear="2")
    contact = ET.SubElement(root, "contact")
    if n > 3:
        ET.SubElement(contact, "pair", geom1="floor", geom2=f"g{n - 1}", condim="6")
        ET.SubElement(contact, "pair", geom1=f"g{n - 2}", geom2="g0", friction="0.5 0.5 0.01 0.001 0.001")
        ET.SubElement(contact, "exclude", body1="b1", body2="b3")
        ET.SubElement(contact, "exclude", body1=f"b{n - 2}", body2=f"b{n - 1}")
        ET.SubElement(contact, "exclude", body1="world", body2=f"b{n // 3}")
        if masks:  # b4 has no joint: welded to b1, whose pairs with it are out already
            ET.SubElement(contact, "exclude", body1="b1", body2="b4")
            ET.SubElement(contact, "exclude", body1="static", body2="b0")
    return ET.tostring(root, encoding="unicode")


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(n: int, repeat: int = 1, mujoco: bool = True) -> dict[str, float]:
    """Seconds for kinedyn's compile, Data, first forward and (if ``mujoco``) MuJoCo's compile."""
    import kinedyn as kd

    xml = forest_xml(n)
    row: dict[str, float] = {"n": n}
    row["kinedyn"], m = _best(lambda: kd.Model.from_xml_string(xml), repeat)
    row["data"], d = _best(lambda: kd.Data(m), 1)
    t0 = time.perf_counter()
    kd.forward(m, d)
    row["forward"] = time.perf_counter() - t0
    row["ngeom"], row["nv"] = m.ngeom, m.nv
    row["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    if mujoco:
        import mujoco as mj

        row["mujoco"], _ = _best(lambda: mj.MjModel.from_xml_string(xml), repeat)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_N), help="numbers of bodies")
    parser.add_argument("--repeat", type=int, default=1, help="compiles per library and n (the best is kept)")
    parser.add_argument("--no-mujoco", action="store_true", help="time kinedyn only")
    parser.add_argument("--profile", type=int, metavar="N",
                        help="cProfile kinedyn's compile of the size-N model")
    parser.add_argument("--top", type=int, default=25, help="profile entries printed")
    args = parser.parse_args(argv)

    import kinedyn as kd

    m = kd.Model.from_xml_string(forest_xml(20))  # warm-up: compiles/loads the kernels
    kd.forward(m, kd.Data(m))
    if args.profile:
        xml = forest_xml(args.profile)
        profiler = cProfile.Profile()
        profiler.enable()
        kd.Model.from_xml_string(xml)
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(args.top)
        return 0
    print(f"{'bodies':>7} {'ngeom':>6} {'nv':>6} {'kinedyn s':>10} {'mujoco s':>9} {'ratio':>6} "
          f"{'Data s':>7} {'forward s':>9} {'peak MB':>8}")
    for n in args.n:
        row = measure(n, args.repeat, not args.no_mujoco)
        mj_s = row.get("mujoco")
        ratio = f"{row['kinedyn'] / mj_s:6.1f}" if mj_s else "     -"
        mj_txt = f"{mj_s:9.3f}" if mj_s else "        -"
        print(f"{n:7d} {row['ngeom']:6d} {row['nv']:6d} {row['kinedyn']:10.3f} {mj_txt} {ratio} "
              f"{row['data']:7.3f} {row['forward']:9.3f} {row['peak_mb']:8.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
