"""Contact agreement with MuJoCo 4.0 on corpus models, collision stage only:
``python -m bench.mesh_contacts NAME ... [--states N] [--steps K] [--verbose]``.

For each model, MuJoCo simulates from qpos0 with random velocities and controls; every ``steps``
steps (``states`` times) both engines collide the same geoms: kinedyn's ``collision`` runs on
MuJoCo's own ``geom_xpos`` / ``geom_xmat`` (so kinematic round-off plays no part) and its
contacts are compared with MuJoCo's: count, geom pairs and order exact, dist, pos and frame at
1e-9 relative (1e-12 absolute floor). Prints, per model, the poses with equal contacts out of
the poses compared, the colliding geom pairs (summed over the poses) whose contacts all equal
MuJoCo's and, with --verbose, the first differing contact of each differing pose.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from corpus import ENTRY, load_mujoco  # noqa: E402


def _close(a, b):
    return np.abs(a - b) <= 1e-12 + 1e-9 * np.abs(b)


def _groups(geom):
    """{geom pair: [contact rows]} in order of first appearance."""
    out = {}
    for i, g in enumerate(geom):
        out.setdefault((int(g[0]), int(g[1])), []).append(i)
    return out


def pair_agreement(d, mjd):
    """(geom pairs whose contacts all equal MuJoCo's, in count and order, geom pairs MuJoCo
    collides)."""
    ours = _groups(d.contact.geom[:d.ncon])
    theirs = _groups([c.geom for c in mjd.contact[:mjd.ncon]])
    equal = 0
    for pair, rows in theirs.items():
        mine = ours.get(pair, [])
        if len(mine) != len(rows):
            continue
        ok = True
        for i, j in zip(mine, rows, strict=True):
            c = mjd.contact[j]
            for f in ("dist", "pos", "frame"):
                ok &= bool(np.all(_close(np.asarray(getattr(d.contact, f)[i]).ravel(),
                                         np.asarray(getattr(c, f)).ravel())))
        equal += ok
    return equal, len(theirs)


def collide_on_mujocos_poses(m, d, mjd):
    """kinedyn's collision stage on MuJoCo's geom poses."""
    import kinedyn as kd

    kd.kinematics(m, d)
    d.geom_xpos[...] = mjd.geom_xpos
    d.geom_xmat[...] = mjd.geom_xmat.reshape(d.geom_xmat.shape)
    kd.collision(m, d)


def compare(m, d, mjm, mjd):
    """None when kinedyn's contacts (after collide_on_mujocos_poses) equal MuJoCo's, else a
    one-line description of the first difference."""
    n = mjd.ncon
    if d.ncon != n:
        pairs = sorted({(int(c.geom[0]), int(c.geom[1])) for c in mjd.contact[:n]})
        return f"ncon {d.ncon} vs {n} (mujoco pairs {pairs[:6]})"
    for i in range(n):
        c = mjd.contact[i]
        g = (int(d.contact.geom[i, 0]), int(d.contact.geom[i, 1]))
        if g != (int(c.geom[0]), int(c.geom[1])):
            return f"contact {i}: geoms {g} vs {tuple(c.geom)}"
        for f in ("dist", "pos", "frame"):
            ours = np.asarray(getattr(d.contact, f)[i]).ravel()
            theirs = np.asarray(getattr(c, f)).ravel()
            if not np.all(_close(ours, theirs)):
                t = [mjm.geom_type[k] for k in g]
                return (f"contact {i} geoms {g} types {t}: {f} {ours[:3]} vs {theirs[:3]} "
                        f"(max diff {np.abs(ours - theirs).max():.2e})")
    return None


def run(name, states, steps, verbose, seed=0):
    import kinedyn as kd

    with tempfile.TemporaryDirectory() as tmp:
        path, mjm = load_mujoco(ENTRY[name], Path(tmp))
        m = kd.Model.from_xml_path(path)
    d = kd.Data(m)
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(seed)
    mjd.qvel[:] = rng.normal(scale=0.5, size=mjm.nv)
    equal = touching = pairs_equal = pairs = 0
    for k in range(states):
        mjd.ctrl[:] = rng.uniform(-1, 1, size=mjm.nu)
        for _ in range(steps):
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_forward(mjm, mjd)
        d.qpos[...] = mjd.qpos
        d.mocap_pos[...] = mjd.mocap_pos
        d.mocap_quat[...] = mjd.mocap_quat
        collide_on_mujocos_poses(m, d, mjd)
        diff = compare(m, d, mjm, mjd)
        pe, pn = pair_agreement(d, mjd)
        pairs_equal += pe
        pairs += pn
        touching += mjd.ncon > 0
        equal += diff is None
        if diff and verbose:
            print(f"  state {k}: {diff}")
    return equal, states, touching, pairs_equal, pairs


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="+")
    ap.add_argument("--states", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    for name in args.names:
        eq, n, t, pe, pn = run(name, args.states, args.steps, args.verbose)
        print(f"{name}: {eq}/{n} poses with equal contacts ({t} with contacts); {pe}/{pn} colliding "
              "geom pairs with equal contacts", flush=True)


if __name__ == "__main__":
    main()
