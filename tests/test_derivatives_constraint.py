"""kd.constraint_derivatives: d qfrc_constraint / d(qpos, qvel, qacc), the zones held.

Oracles, at states MuJoCo's own simulation visits (from a random initial velocity), at kinedyn's
forward qacc there:

* MuJoCo's ``mjd_inverseFD`` (forward differences of mj_inverse, transposed layout). On models whose
  only forces besides the rigid-body ones are constraints, qfrc_inverse = M qacc + bias -
  qfrc_constraint, so DfDq' - rne.dqfrc_dq = -dqfrc_dq etc., the rigid part from
  ``kd.rne_derivatives(rigid_body_only=True)`` (checked against Pinocchio in
  test_derivatives_rigid.py). MuJoCo is evaluated at eps 1e-8, 1e-7, 1e-6 (qpos) and 1e-6, 1e-5,
  1e-4 (qvel, qacc): Richardson extrapolation of neighbouring pairs removes the forward
  differences' first-order error, the disagreement of the two extrapolations estimates what is
  left, and the tolerance is 10x that estimate plus a rounding floor, column by column. A column
  whose tolerance exceeds 1e-6 of the largest entry straddles a switch and is not judged (at
  least 80% must be judged): see ``_check``.
* Central differences of kinedyn's own ``kd.inverse`` (not zone-held) at the same steps,
  judged the same way.
* For dqfrc_dq, which is analytical where derivative_constraint covers the rows: its own
  zone-held central difference (``method="fd"``).

Cases (rows present at the states used): hinge, ball and slide joint limits and a spatial tendon's
limit, dof and tendon friction loss in both linear zones, connect, weld (body and site, torquescale),
joint (polynomial) and tendon equalities; contacts plane-sphere, plane-capsule, plane-box,
sphere-sphere, sphere-capsule and capsule-capsule (crossing and parallel), box-box (face contacts:
incident corners, incident edges clipped by the reference face's sides; edge-edge), plane-cylinder
(tilted and standing), sphere-cylinder (cap, side, rim), sphere-box (face, edge, corner, centre inside),
capsule-box (contacts at the capsule's ends), frictionless
(condim 1), pyramidal (condim 4) and elliptic (condim 3 and 6) cones, with rows in the satisfied,
quadratic and (elliptic) middle-cone zones.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import kinedyn as kd

_CHAIN = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" range="-0.3 0.3" limited="true" frictionloss="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" contype="0" conaffinity="0"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" frictionloss="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" contype="0" conaffinity="0"/>
        <body name="c" pos="0.4 0 0">
          <joint name="j3" type="ball" range="0 0.2" limited="true"/>
          <geom type="box" size="0.1 0.05 0.05" pos="0.1 0 0" contype="0" conaffinity="0"/>
          <site name="s3" pos="0.2 0 0"/>
        </body>
      </body>
    </body>
    <body name="e" pos="0.6 0.3 1">
      <freejoint/>
      <geom type="sphere" size="0.1" contype="0" conaffinity="0"/>
    </body>
    <body name="f" pos="-0.3 0 0.8">
      <joint name="j4" type="slide" axis="1 0 0" range="-0.1 0.1" limited="true"/>
      <joint name="j5" type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
      <site name="sf" pos="0.05 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t1" limited="true" range="0 0.9" frictionloss="0.1">
      <site site="sf"/><site site="s3"/>
    </spatial>
    <fixed name="t2"><joint joint="j2" coef="1"/><joint joint="j5" coef="0.5"/></fixed>
  </tendon>
  <equality>
    <connect body1="e" body2="c" anchor="0 0 0"/>
    <joint joint1="j5" joint2="j4" polycoef="0 1 0.5 0 0"/>
    <tendon tendon1="t2" polycoef="0.1 0 0 0 0"/>
  </equality>
</mujoco>
"""

_DROP = """
<mujoco>
  <option timestep="0.004" cone="{cone}"/>
  <default><geom friction="0.4 0.02 0.01" condim="{condim}"/></default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.12"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="0.5 0 0.1" euler="0 80 10"><freejoint/><geom type="capsule" size="0.05 0.2"/></body>
    <body pos="-0.5 0.2 0.12" euler="5 3 20"><freejoint/><geom type="box" size="0.1 0.08 0.06"/></body>
    <body pos="0.1 0.5 0.15"><freejoint/><geom type="sphere" size="0.08"/></body>
    <body pos="0.1 0.5 0.4" euler="0 90 0"><freejoint/><geom type="capsule" size="0.06 0.1"/></body>
    <body pos="-0.2 -0.5 0.1" euler="0 90 30"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
    <body pos="-0.2 -0.45 0.25" euler="0 90 100"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
  </worldbody>
</mujoco>
"""

_WELD = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <body name="p" pos="0 0 1"><freejoint/>
      <geom type="box" size="0.1 0.05 0.03" contype="0" conaffinity="0"/>
      <site name="sp" pos="0.1 0 0" euler="10 0 0"/>
    </body>
    <body name="q" pos="0.3 0 1"><joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03" contype="0" conaffinity="0"/>
      <site name="sq" pos="0.2 0 0"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="p" body2="q" torquescale="0.5"/>
    <weld site1="sp" site2="sq"/>
  </equality>
</mujoco>
"""

# spheres and capsules meeting each other: sphere-sphere, sphere-capsule (the capsule's side),
# capsule-capsule across (the lines' closest points) and side by side (the parallel branch)
_TOUCH = """
<mujoco>
  <option timestep="0.004" cone="{cone}"/>
  <default><geom friction="0.4 0.02 0.01" condim="{condim}"/></default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="0.05 0.02 0.29"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="0.5 0 0.1" euler="0 90 10"><freejoint/><geom type="capsule" size="0.05 0.2"/></body>
    <body pos="0.5 0.05 0.17"><freejoint/><geom type="sphere" size="0.08"/></body>
    <body pos="-0.2 -0.5 0.1" euler="0 90 30"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
    <body pos="-0.2 -0.45 0.19" euler="0 90 100"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
    <body pos="-0.6 -0.45 0.1" euler="0 90 0"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
    <body pos="-0.45 -0.45 0.19" euler="0 90 0"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
  </worldbody>
</mujoco>
"""

# boxes on boxes on the floor: box-box face contacts (a box resting inside the face below, one
# overhanging its edge: clipped vertices on the reference face's sides) and an edge-edge contact
# (a box lying across a fixed box's top edge), next to plane-box ones
_BOXES = """
<mujoco>
  <option timestep="0.004"/>
  <default><geom friction="0.6" condim="3"/></default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.2 0.15 0.1"/></body>
    <body pos="0.02 0.01 0.29" euler="0 0 20"><freejoint/><geom type="box" size="0.1 0.1 0.09"/></body>
    <body pos="0.6 0 0.1"><freejoint/><geom type="box" size="0.2 0.15 0.1"/></body>
    <body pos="-0.6 0 0.15" euler="0 45 0"><geom type="box" size="0.1 0.3 0.1"/></body>
    <body pos="-0.6 0 0.36" euler="45 0 10"><freejoint/><geom type="box" size="0.2 0.05 0.05"/></body>
    <body pos="0.75 0.01 0.29" euler="0 0 20"><freejoint/><geom type="box" size="0.1 0.1 0.09"/></body>
  </worldbody>
</mujoco>
"""

# cylinders on the floor (tilted: the deepest rim points of both caps; standing: the near cap's
# triangle) and spheres against a cylinder's cap, side and rim
_CYLINDERS = """
<mujoco>
  <option timestep="0.004"/>
  <default><geom friction="0.6" condim="3"/></default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.12" euler="70 10 0"><freejoint/><geom type="cylinder" size="0.1 0.15"/></body>
    <body pos="0.5 0 0.17" euler="15 10 0"><freejoint/><geom type="cylinder" size="0.1 0.15"/></body>
    <body pos="-0.5 0 0.1" euler="1.2 0.5 0"><freejoint/><geom type="cylinder" size="0.1 0.1"/></body>
    <body pos="-0.5 0.02 0.29"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="0.5 0.5 0.1" euler="1.2 0.5 0"><freejoint/><geom type="cylinder" size="0.1 0.1"/></body>
    <body pos="0.645 0.5 0.12"><freejoint/><geom type="sphere" size="0.05"/></body>
    <body pos="-0.5 0.5 0.1" euler="1.2 0.5 0"><freejoint/><geom type="cylinder" size="0.1 0.1"/></body>
    <body pos="-0.37 0.5 0.233"><freejoint/><geom type="sphere" size="0.05"/></body>
  </worldbody>
</mujoco>
"""

# spheres against boxes standing on the floor: on a top face, over a top edge, over a corner, and
# sunk with the centre inside the box (pushed out through the top face); capsules on boxes: lying
# on a top face (a contact at each end) and leaning on one end
_ON_BOXES = """
<mujoco>
  <option timestep="0.004"/>
  <default><geom friction="0.6" condim="3"/></default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.099" euler="0 0 10"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    <body pos="0.02 0.01 0.245"><freejoint/><geom type="sphere" size="0.05"/></body>
    <body pos="0.5 0 0.099"><freejoint/><geom type="box" size="0.1 0.12 0.1"/></body>
    <body pos="0.625 0.01 0.222"><freejoint/><geom type="sphere" size="0.05"/></body>
    <body pos="-0.5 0 0.099"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    <body pos="-0.375 0.125 0.225"><freejoint/><geom type="sphere" size="0.05"/></body>
    <body pos="0 0.5 0.099"><freejoint/><geom type="box" size="0.15 0.1 0.1"/></body>
    <body pos="0.01 0.52 0.19"><freejoint/><geom type="sphere" size="0.05"/></body>
    <body pos="0 -0.6 0.099"><freejoint/><geom type="box" size="0.2 0.15 0.1"/></body>
    <body pos="0.01 -0.59 0.234" euler="0 90 10"><freejoint/><geom type="capsule" size="0.04 0.12"/></body>
    <body pos="0.6 -0.6 0.099" euler="0 0 5"><freejoint/><geom type="box" size="0.15 0.15 0.1"/></body>
    <body pos="0.677 -0.6 0.326" euler="0 40 0"><freejoint/><geom type="capsule" size="0.04 0.12"/></body>
  </worldbody>
</mujoco>
"""

# convex meshes come to rest on the floor: a wedge on a face (four vertex contacts) and a lopsided
# hexahedron on a face (its support vertex and the face polygon's next three)
_MESHES = """
<mujoco>
  <option timestep="0.004"/>
  <default><geom friction="0.6" condim="3"/></default>
  <asset>
    <mesh name="wedge" vertex="0 0 0  0.2 0 0  0 0.15 0  0.2 0.15 0  0 0 0.1  0 0.15 0.1"/>
    <mesh name="lump" vertex="-0.1 -0.08 -0.05  0.12 -0.07 -0.05  0.11 0.09 -0.05  -0.09 0.1 -0.05
                              -0.06 -0.05 0.06  0.07 -0.04 0.07  0.06 0.05 0.06  -0.05 0.06 0.05"/>
  </asset>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 0.07" euler="20 5 0"><freejoint/><geom type="mesh" mesh="wedge"/></body>
    <body pos="0.5 0 0.06" euler="2 1 15"><freejoint/><geom type="mesh" mesh="lump"/></body>
  </worldbody>
</mujoco>
"""

# (model text, MuJoCo steps from the random initial velocity, zones that must occur)
CASES = {
    "chain": (_CHAIN, 50, {"QUADRATIC", "LINEARNEG", "LINEARPOS"}),
    "weld": (_WELD, 30, {"QUADRATIC"}),
    "frictionless": (_DROP.format(cone="elliptic", condim=1), 40, {"QUADRATIC"}),
    "pyramidal4": (_DROP.format(cone="pyramidal", condim=4), 80, {"QUADRATIC", "SATISFIED"}),
    "elliptic3": (_DROP.format(cone="elliptic", condim=3), 60, {"QUADRATIC", "CONE"}),
    "elliptic6": (_DROP.format(cone="elliptic", condim=6), 80, {"QUADRATIC", "CONE"}),
    "touch": (_TOUCH.format(cone="elliptic", condim=3), 3, {"CONE"}),
    "boxes": (_BOXES, 5, {"QUADRATIC"}),
    "cylinders": (_CYLINDERS, 1, {"QUADRATIC"}),
    "onboxes": (_ON_BOXES, 1, {"QUADRATIC"}),
    "meshes": (_MESHES, 100, {"QUADRATIC"}),
}
# the cases whose rows G_q covers wholly analytically
ANALYTIC = {"chain", "weld", "frictionless", "pyramidal4", "elliptic3", "elliptic6", "touch", "boxes",
            "cylinders", "onboxes", "meshes"}


def _state(xml: str, nsteps: int):
    """kinedyn's model and Data at the state MuJoCo reaches, forward run there; MuJoCo's pair."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mjd.qvel[:] = np.random.default_rng(0).normal(0.0, 1.0, mjm.nv)
    for _ in range(nsteps):
        mujoco.mj_step(mjm, mjd)
    m = kd.Model.from_xml_string(xml)
    d = kd.Data(m)
    for f in ("qpos", "qvel", "qacc_warmstart"):
        getattr(d, f)[:] = getattr(mjd, f)
    kd.forward(m, d)
    return m, d, mjm, mjd


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    xml, nsteps, zones = CASES[request.param]
    m, d, mjm, mjd = _state(xml, nsteps)
    states = {kd.ConstraintState(s).name for s in d.efc_state[:d.nefc]}
    assert zones <= states, f"{request.param}: zones {states}, the case needs {zones}"
    before = {f: getattr(d, f).copy() for f in ("qfrc_constraint", "efc_force", "efc_state", "efc_aref",
                                                 "efc_J", "qfrc_bias", "xpos", "contact_pos")}
    cd = kd.constraint_derivatives(m, d)
    for f, x in before.items():  # d is left as it was
        assert np.array_equal(getattr(d, f), x), f"{request.param}: constraint_derivatives changed d.{f}"
    return request.param, m, d, mjm, mjd, cd


def _fd_inverse(m, d, eps):
    """Central differences of kd.inverse's qfrc_constraint (rows: force) in qpos, qvel, qacc."""
    w = kd.Data(m)
    nv = m.nv

    def qc(qpos, qvel, qacc):
        w.qpos[:], w.qvel[:], w.qacc[:] = qpos, qvel, qacc
        kd.inverse(m, w)
        return w.qfrc_constraint.copy()

    out = np.zeros((3, nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        qp, qm = d.qpos.copy(), d.qpos.copy()
        kd.integrate_pos(m, qp, e, 1.0)
        kd.integrate_pos(m, qm, e, -1.0)
        out[0, :, k] = qc(qp, d.qvel, d.qacc) - qc(qm, d.qvel, d.qacc)
        out[1, :, k] = qc(d.qpos, d.qvel + e, d.qacc) - qc(d.qpos, d.qvel - e, d.qacc)
        out[2, :, k] = qc(d.qpos, d.qvel, d.qacc + e) - qc(d.qpos, d.qvel, d.qacc - e)
    return out / (2 * eps)


def _mujoco_constraint_part(m, d, mjm, mjd, eps):
    """-(mjd_inverseFD's DfD* transposed minus the rigid-body derivatives): MuJoCo's derivatives of
    qfrc_constraint at d's state and qacc, by forward differences."""
    mjd.qpos[:], mjd.qvel[:], mjd.qacc[:] = d.qpos, d.qvel, d.qacc
    mujoco.mj_forward(mjm, mjd)
    mjd.qacc[:] = d.qacc
    nv, ns = mjm.nv, mjm.nsensordata
    out = [np.zeros((nv, nv)) for _ in range(3)] + [np.zeros((nv, ns)) for _ in range(3)]
    mujoco.mjd_inverseFD(mjm, mjd, eps, 0, *out, np.zeros((nv, mjm.nC)))
    w = kd.Data(m)
    w.qpos[:], w.qvel[:], w.qacc[:] = d.qpos, d.qvel, d.qacc
    rigid = kd.rne_derivatives(m, w, rigid_body_only=True)
    return np.array([r - f.T for f, r in zip(out[:3], rigid, strict=True)])


def _force_scale(m, d):
    """The size of the forces a difference subtracts (qfrc_inverse's terms): its rounding error."""
    w = kd.Data(m)
    w.qpos[:], w.qvel[:], w.qacc[:] = d.qpos, d.qvel, d.qacc
    kd.inverse(m, w)
    return max(np.abs(w.qfrc_inverse).max(), np.abs(w.qfrc_bias).max(), np.abs(w.qfrc_constraint).max())


def _check(name, ours, diffs, h, order, fscale, what, blocks, cap=1e-6, judged=0.8):
    """ours against differences ``diffs`` at steps h, 10 h, 100 h (``order`` 1: forward, 2: central),
    column by column (one input each): each neighbouring pair is Richardson-extrapolated, and the two
    extrapolations' disagreement estimates the error of the finer one. The tolerance is 10x that,
    plus the rounding of a difference of forces of size ``fscale`` at step h, plus 5e-8 of the
    largest entry (what constraint_derivatives' own central differences in qpos, step 1e-7, were
    seen to reach on these stiff contacts: ~2e-8). A column
    whose tolerance exceeds ``cap`` of the largest entry straddles a switch (a zone or contact
    changing within 100 h) and cannot judge; at least ``judged`` of the columns must be judged."""
    labels = ("dq", "dv", "dqacc")
    r = 10.0**order - 1
    for k in blocks:
        fine, mid, coarse = (x[k] for x in diffs)
        scale = max(np.abs(fine).max(), 1e-12)
        best = fine + (fine - mid) / r
        other = mid + (mid - coarse) / r
        tol = (10 * np.abs(best - other).max(axis=0) / (10.0 ** (order + 1) - 1) + 1e-14 * fscale / h
               + 5e-8 * scale)
        ok = tol <= cap * scale
        assert ok.mean() >= judged, (f"{name} {labels[k]}: {what} too noisy to judge in {np.sum(~ok)} of "
                                     f"{ok.size} columns (worst {tol.max() / scale:.2g})")
        err = np.abs(ours[k] - best).max(axis=0)
        bad = ok & (err > tol)
        assert not bad.any(), (f"{name} {labels[k]}: columns {np.flatnonzero(bad)} off by "
                               f"{(err[bad] / scale).max():.3g} of the largest entry from {what}, "
                               f"tolerance {(tol[bad] / scale).min():.3g}")


# the steps of the differences: small in qpos, where the stiff contacts' impedance curves within
# ~1e-3; larger in qvel and qacc, where the force is piecewise quadratic and rounding dominates
_STEPS_Q = (1e-8, 1e-7, 1e-6)
_STEPS_VA = (1e-6, 1e-5, 1e-4)


def _judge(name, ours, diff, order, fscale, what):
    """_check on (dq) with the small steps, (dv, dqacc) with the large ones."""
    small = [diff(eps) for eps in _STEPS_Q]
    large = [diff(eps) for eps in _STEPS_VA]
    _check(name, ours, small, _STEPS_Q[0], order, fscale, what, blocks=(0,))
    _check(name, ours, large, _STEPS_VA[0], order, fscale, what, blocks=(1, 2))


def test_against_mujoco_inverse_fd(case):
    name, m, d, mjm, mjd, cd = case
    _judge(name, np.array(cd), lambda eps: _mujoco_constraint_part(m, d, mjm, mjd, eps), 1,
           _force_scale(m, d), "MuJoCo's mjd_inverseFD")


def test_against_own_inverse(case):
    name, m, d, _, _, cd = case
    _judge(name, np.array(cd), lambda eps: _fd_inverse(m, d, eps), 2, _force_scale(m, d), "kd.inverse")


def test_exact_parts(case):
    """dqfrc_dqacc = -J' C J: symmetric, negative semi-definite (C: D >= 0 on quadratic rows, the
    cone Hessian of a convex cost)."""
    name, m, d, _, _, cd = case
    h = -cd.dqfrc_dqacc
    assert np.allclose(h, h.T, rtol=0, atol=1e-12 * np.abs(h).max())
    assert np.linalg.eigvalsh(h).min() >= -1e-9 * np.abs(h).max()


def test_refusals():
    m = kd.Model.from_xml_string(CASES["chain"][0])
    d = kd.Data(m)
    kd.forward(m, d)
    with pytest.raises(ValueError, match="eps"):
        kd.constraint_derivatives(m, d, eps=0.0)
    with pytest.raises(ValueError, match="method"):
        kd.constraint_derivatives(m, d, method="exact")
    with pytest.raises(TypeError):
        kd.constraint_derivatives(m, d, eps="1e-6")
    with pytest.raises(ValueError):
        kd.constraint_derivatives(m, kd.Data(kd.Model.from_xml_string(CASES["chain"][0])))
    m.opt.enableflags = m.opt.enableflags | kd.EnableBit.INVDISCRETE
    with pytest.raises(ValueError, match="invdiscrete"):
        kd.constraint_derivatives(m, d)


def _box_box_kinds(m, d):
    """The kinds of box-box contacts at d: edge-edge, or a face contact's vertex held by an incident
    corner, an incident edge on a reference side line, or a reference corner (the contact axis is
    the collider's own choice, the held features counted as derivative_collision does)."""
    from kinedyn.engine.collision_box import box_box_axis, box_box_centres

    xm = d.geom_xmat.reshape(-1, 3, 3)
    kinds = set()
    for c in range(d.ncon):
        g1, g2 = (int(g) for g in d.contact_geom[c])
        if m.geom_type[g1] != kd.GeomType.BOX or m.geom_type[g2] != kd.GeomType.BOX:
            continue
        code = box_box_axis(xm, m.geom_size, g1, g2, *box_box_centres(d.geom_xpos, xm, g1, g2), 1e10)
        if code >= 6:
            kinds.add("edge")
            continue
        ref, ax = (g1, code) if code < 3 else (g2, code - 3)
        inc = g2 if ref == g1 else g1
        out = np.sign(d.contact_frame[c, 0] @ xm[ref][:, ax]) * (1 if ref == g1 else -1) * xm[ref][:, ax]
        p = d.contact_pos[c] + out * d.contact_dist[c] / 2
        tol = 1e-9 * (m.geom_size[g1].sum() + m.geom_size[g2].sum())
        held = np.abs(np.abs(xm[inc].T @ (p - d.geom_xpos[inc])) - m.geom_size[inc]) <= tol
        kinds.add({3: "corner", 2: "edge on side", 1: "reference corner"}[int(held.sum())])
    return kinds


def test_analytical_position_derivative(case):
    """G_q analytical (derivative_collision's contact geometry, the rows' own q-dependence) against
    its central difference (method="fd", step 1e-7: seen to agree to ~2e-8 of the largest entry
    on these stiff contacts); where every row is covered, no difference is taken at all (the
    result does not depend on eps)."""
    name, m, d, _, _, cd = case
    fd = kd.constraint_derivatives(m, d, method="fd")
    scale = np.abs(fd.dqfrc_dq).max()
    err = np.abs(cd.dqfrc_dq - fd.dqfrc_dq).max() / scale
    assert err < 2e-7, f"{name}: analytical G_q off its central difference by {err:.3g} of the largest entry"
    assert np.array_equal(cd.dqfrc_dv, fd.dqfrc_dv) and np.array_equal(cd.dqfrc_dqacc, fd.dqfrc_dqacc)
    other = kd.constraint_derivatives(m, d, eps=3e-6).dqfrc_dq
    assert np.array_equal(other, cd.dqfrc_dq) == (name in ANALYTIC), (
        f"{name}: G_q {'uses' if name in ANALYTIC else 'does not use'} differences")
    pairs = {tuple(sorted(int(m.geom_type[g]) for g in pair)) for pair in d.contact_geom[:d.ncon]}
    if name == "touch":
        assert {(2, 2), (2, 3), (3, 3)} <= pairs, pairs
    if name == "boxes":
        assert {(0, 6), (6, 6)} <= pairs, pairs
        assert _box_box_kinds(m, d) == {"edge", "corner", "edge on side", "reference corner"}
    if name == "cylinders":
        assert {(0, 5), (2, 5)} <= pairs, pairs
        # the sphere-cylinder cases: cap (normal along the axis), side (across it) and rim
        kinds = set()
        for c in range(d.ncon):
            g1, g2 = d.contact_geom[c]
            if m.geom_type[g1] == 2:
                along = abs(d.contact_frame[c, 0] @ d.geom_xmat[g2].reshape(3, 3)[:, 2])
                kinds.add("cap" if along > 1 - 1e-9 else "side" if along < 1e-9 else "rim")
        assert kinds == {"cap", "side", "rim"}, kinds
    if name == "meshes":
        assert {(0, 7)} == pairs, pairs
        assert d.ncon == 8, d.ncon  # four vertices of each on the floor
    if name == "onboxes":
        assert {(0, 6), (2, 6), (3, 6)} <= pairs, pairs
        # the box region of each sphere's centre: how many of its box coordinates lie beyond the
        # half-sizes (0: inside, 1: over a face, 2: an edge, 3: a corner)
        kinds = set()
        for c in range(d.ncon):
            g1, g2 = d.contact_geom[c]
            if m.geom_type[g1] == 2:
                loc = d.geom_xmat[g2].reshape(3, 3).T @ (d.geom_xpos[g1] - d.geom_xpos[g2])
                kinds.add(("inside", "face", "edge", "corner")[int(np.sum(np.abs(loc) > m.geom_size[g2]))])
        assert kinds == {"inside", "face", "edge", "corner"}, kinds
        # capsule-box: the three contacts at the capsules' ends (the lying one's two, the leaning one's)
        # (the contact is r + dist/2 from the sphere's centre, at an end of the segment)
        ends = 0
        for c in range(d.ncon):
            g1, g2 = d.contact_geom[c]
            if m.geom_type[g1] == 3:
                r, half = m.geom_size[g1, :2]
                p = d.contact_pos[c] - d.geom_xpos[g1]
                axis = d.geom_xmat[g1][:, 2]
                gap = min(np.linalg.norm(p - s * half * axis) for s in (1, -1))
                assert abs(gap - r - d.contact_dist[c] / 2) < 1e-9, gap
                ends += 1
        assert ends == 3, ends
