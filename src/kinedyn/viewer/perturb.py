"""Dragging a body with the mouse: select it along a ray, then pull it with a spring-damper.

MuJoCo's viewers do this in three steps (``engine_vis_interact.c``), mirrored here in NumPy
on top of the engine's ``ray``, ``jac`` and ``solve_m``:

* :func:`select` -- the body under the cursor (``mjv_select``): the nearest geom along the
  click's ray (``mj_ray``, static geoms included) and the point hit; the world (body 0) is no
  selection.
* :func:`init_perturb` -- the grab (``mjv_initPerturb``): the point in the body's frame
  (``localpos``) and the *local mass* ``3 / trace(J M^-1 J^T)`` of that point (``J`` its
  translational Jacobian): the spring is scaled by it, so a light hand and a heavy torso follow
  the cursor alike.
* :func:`apply_perturb_force` -- each step (``mjv_applyPerturbForce``, translation): the force
  ``-k m_loc (p - p_ref) - sqrt(k) m_loc v_p`` at the grabbed point ``p`` (velocity ``v_p``)
  toward the cursor point ``p_ref``, with ``k`` = ``<visual><map stiffness>``, and the torque
  of that force about the body's centre of mass plus a critically damped twist about the
  displacement axis (``stiffnessrot``, the body's rotational ``invweight0``); written to
  ``d.xfrc_applied`` of the body, which the next ``step`` applies.

The Model has no ``<visual>`` fields yet, so ``k`` and ``k_rot`` are MuJoCo's defaults (100 and
500) unless the Model has them (``m.vis.map.stiffness``). MuJoCo's source writes ``sqrtf`` of
both, but its build computes the square root in double precision (the test against
``mujoco.mjv_applyPerturbForce`` agrees to the last bit only so); so does this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kinedyn.engine.ray import ray
from kinedyn.engine.smooth_inertia import solve_m
from kinedyn.engine.support import jac

STIFFNESS = 100.0      # mjVisual.map.stiffness's default
STIFFNESS_ROT = 500.0  # mjVisual.map.stiffnessrot's default
MINVAL = 1e-15         # mjMINVAL


@dataclass
class Perturb:
    """A grabbed body (mjvPerturb's translation fields): ``body``, the grabbed point in the body's
    frame ``localpos``, the cursor point ``refselpos`` (world) the spring pulls it toward, the
    point's ``localmass``, and ``active`` (the force is applied only while the mouse drags)."""

    body: int
    localpos: np.ndarray
    refselpos: np.ndarray
    localmass: float
    active: bool = False
    force: np.ndarray = field(default_factory=lambda: np.zeros(3))  # last applied force (drawn)


def _stiffness(m) -> tuple[float, float]:
    vis_map = getattr(getattr(m, "vis", None), "map", None)
    return (float(getattr(vis_map, "stiffness", STIFFNESS)),
            float(getattr(vis_map, "stiffnessrot", STIFFNESS_ROT)))


def select(m, d, origin, direction) -> tuple[int, np.ndarray | None]:
    """``(body, point)`` hit by the ray ``origin + x direction`` (x >= 0), as mjv_select; ``(-1, None)``
    when the ray misses or hits a geom of the world body. Needs the geom poses in ``d``."""
    direction = np.asarray(direction, dtype=float)
    dist, geom = ray(m, d, origin, direction)
    if geom < 0 or dist < 0:
        return -1, None
    body = int(m.geom_bodyid[geom])
    if body <= 0:
        return -1, None
    return body, np.asarray(origin, dtype=float) + dist * direction


def selection_point(d, pert: Perturb) -> np.ndarray:
    """The grabbed point in world coordinates (body frame ``localpos`` mapped by ``xpos``, ``xmat``)."""
    return d.xmat[pert.body] @ pert.localpos + d.xpos[pert.body]


def init_perturb(m, d, body: int, point) -> Perturb:
    """Grab ``body`` at world ``point`` (mjv_initPerturb's translation part).

    Needs the position stage and the factorised inertia of ``d`` (after ``forward`` or ``step``).
    The cursor point starts at the grabbed point: no force until it moves.
    """
    if not 0 < body < m.nbody:
        raise ValueError(f"body {body} cannot be grabbed (1 <= body < nbody = {m.nbody})")
    point = np.asarray(point, dtype=float).reshape(3)
    localpos = d.xmat[body].T @ (point - d.xpos[body])
    jacp, _ = jac(m, d, point, body)
    # trace(J M^-1 J^T) = sum over the three rows of J of J_i . M^-1 J_i (mj_solveM2 twice in MuJoCo)
    invmass = float(np.sum(jacp * solve_m(m, d, jacp))) if m.nv else 0.0
    localmass = 1.0 if invmass == 0 else 3.0 / max(invmass, MINVAL)
    return Perturb(body, localpos, point.copy(), localmass)


def _normalize3(v: np.ndarray) -> np.ndarray:
    """mju_normalize3: the unit vector, or (1, 0, 0) for a vector shorter than mjMINVAL."""
    norm = float(np.sqrt(v @ v))
    return v / norm if norm >= MINVAL else np.array([1.0, 0.0, 0.0])


def apply_perturb_force(m, d, pert: Perturb) -> None:
    """Write the spring-damper pull of ``pert`` into ``d.xfrc_applied[pert.body]`` (when active).

    mjv_applyPerturbForce with mjPERT_TRANSLATE. Reads the body's pose and velocity from ``d``
    (``xpos``, ``xmat``, ``xipos``, ``cvel``, ``subtree_com``: up to date after ``forward``; after
    ``step`` they are the step's start, which is what MuJoCo's viewers use too).
    """
    if not pert.active:
        return
    b = pert.body
    stiffness, stiffness_rot = _stiffness(m)
    # the body's velocity at its centre of mass, world frame (mj_objectVelocity, body, not local):
    # cvel is [rot; lin] at the subtree com of the body's tree root
    rot = d.cvel[b, :3]
    lin = d.cvel[b, 3:] + np.cross(rot, d.xipos[b] - d.subtree_com[m.body_rootid[b]])
    invweight = float(m.body_invweight0[b, 1])
    inertia = 1.0 / max(MINVAL, invweight) if invweight else 1.0
    selpos = selection_point(d, pert)
    diff = selpos - pert.refselpos
    force = -stiffness * pert.localmass * diff
    arm = selpos - d.xipos[b]
    point_vel = np.cross(rot, arm) + lin
    force = force - float(np.sqrt(stiffness)) * pert.localmass * point_vel
    torque = np.cross(arm, force)
    axis = _normalize3(diff)
    torque = torque - float(np.sqrt(stiffness_rot)) * inertia * float(axis @ rot) * axis
    d.xfrc_applied[b, :3] = force
    d.xfrc_applied[b, 3:] = torque
    pert.force = force


__all__ = ["Perturb", "apply_perturb_force", "init_perturb", "select", "selection_point"]
