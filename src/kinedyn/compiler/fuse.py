"""``fusestatic``: jointless bodies fused into their parents (mjCModel::FuseStatic, mjs_fuseStatic).

MuJoCo's URDF reader turns this on by default (URDF links joined by fixed joints are
separate links). A body without joints is removed and its parent takes over:

* its mass and inertia are added to the parent's, about their common centre of mass, and
  re-diagonalised (mjCBody::AccumulateInertia) -- unless the parent is the world, which
  has no inertia;
* its geoms, sites, cameras and lights move to the parent, their poses composed with the body's pose,
  appended after the parent's own;
* its child bodies take its place in the parent's list of children, their poses composed
  with the body's.

Bodies are visited parents first (the compiled order), so chains of fixed links collapse
into their first moving ancestor. The per-body compilation (inertia from geoms, joint
and geom poses) has already run; the tree is renumbered afterwards.

Bodies are kept, as MuJoCo keeps them, when they have joints, are mocap bodies, are named by
another element (an equality, a pair, a sensor, ...), have mass in a fluid (their own fluid
forces would be lost), or compensate gravity by another fraction than their parent body (gravcomp:
fused, their compensation would change; into the world, which does not move, they are fused).
"""

from __future__ import annotations

from kinedyn.compiler import frames as fr
from kinedyn.compiler import inertial as inr
from kinedyn.engine.types import MINVAL, JointType


def fuse_static(compiler) -> None:
    """Fuse the jointless bodies of ``compiler`` (a build.Compiler after body compilation)."""
    if compiler.inertiafromgeom == "true" and (compiler.boundmass > 0 or compiler.boundinertia > 0
                                              or compiler.balanceinertia):
        # MuJoCo keeps the bodies whose inertia the bounds adjusted; kinedyn does not track that yet
        raise compiler.root.error("fusestatic with inertiafromgeom=\"true\" and boundmass, boundinertia or "
                                  "balanceinertia is not supported yet")
    fluid = compiler.opt["density"] > 0 or compiler.opt["viscosity"] > 0
    referenced = _referenced_names(compiler)
    world = compiler.world
    for body in list(compiler.bodies[1:]):
        if (body.joints or body.mocap or (fluid and body.mass > 0)
                or (body.name and body.name in referenced)
                or (body.parent is not world and _gravcomp(body) != _gravcomp(body.parent))):
            continue
        par = body.parent
        if par is not world and body.mass >= MINVAL:
            _accumulate_inertia(compiler, par, body)
        for child in body.children:
            child.pos, child.quat = fr.frame_accum(body.pos, body.quat, child.pos, child.quat)
            child.parent = par
        at = par.children.index(body)
        par.children[at:at + 1] = body.children
        body.children = []
        for items, owned in ((body.geoms, par.geoms), (body.sites, par.sites), (body.cameras, par.cameras)):
            for item in items:
                item.pos, item.quat = fr.frame_accum(body.pos, body.quat, item.pos, item.quat)
                item.body = par
                owned.append(item)
            items.clear()
        for light in body.lights:  # a light's direction turns with the body; its quat is a direction
            light.body = par
            light.pos, _ = fr.frame_accum(body.pos, body.quat, light.pos, [1.0, 0.0, 0.0, 0.0])
            light.quat = fr.rot_vec_quat(light.quat, body.quat)
            par.lights.append(light)
        body.lights.clear()
    for items in (compiler.geoms, compiler.joints, compiler.sites, compiler.cameras, compiler.lights):
        items.clear()
    compiler._number_tree()
    for body in compiler.bodies[1:]:
        if body.parent.id != 0 and any(j.type == JointType.FREE for j in body.joints):
            raise body.error("free joint can only be used on top level")


def _gravcomp(body) -> float:
    return body.attrs.get("gravcomp", 0.0) if body.node is not None else 0.0


def _referenced_names(compiler) -> set[str]:
    """Body names that other elements refer to (equalities, pairs, excludes, sensors, ...): MuJoCo
    keeps those bodies."""
    referenced = set()
    todo = [n for tag, nodes in compiler.sections.items() if tag != "default" for n in nodes]
    while todo:
        node = todo.pop()
        todo.extend(node.children)
        referenced.update(v for k, v in node.attrib.items()
                          if k in ("body1", "body2", "body", "target", "objname", "refname"))
    return referenced


def _accumulate_inertia(compiler, par, body) -> None:
    """Add ``body``'s mass and inertia (in ``par``'s frame) to ``par`` (mjCBody::AccumulateInertia)."""
    ipos, iquat = fr.frame_accum(body.pos, body.quat, body.ipos, body.iquat)
    mass = par.mass + body.mass
    if mass < MINVAL:
        par.mass, par.inertia = 0.0, [0.0, 0.0, 0.0]
        par.ipos, par.iquat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
        return
    com = [(par.mass * par.ipos[k] + body.mass * ipos[k]) / mass for k in range(3)]
    # each body's inertia about the common centre summed first, then the two sums added (4.0's
    # association, read off libmujoco.so.4.0.0; InertiaFromGeom's running sum rounds otherwise)
    parts = [inr.about(m, pos, quat, inertia, com) for m, pos, quat, inertia in
             ((par.mass, par.ipos, par.iquat, par.inertia), (body.mass, ipos, iquat, body.inertia))]
    res = inr.full_inertia([a + b for a, b in zip(*parts, strict=True)], lenient=True)
    if res[0][2] < 1e-14:
        compiler._unphysical(par, "fused inertia not positive definite", body.error(
            "error 'inertia must have positive eigenvalues' in fusing static body inertias"))
    par.mass, par.ipos, par.iquat, par.inertia = mass, com, res[1], res[0]
