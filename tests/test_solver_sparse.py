"""MuJoCo's sparse constraint path (jacobian="sparse", or "auto" and nv >= 60) against MuJoCo 4.0.

On that path MuJoCo keeps each efc_J row over its own pattern (the dofs the row can touch,
structural zeros included) and sums J v over the pattern in mju_dotSparse's order, so efc_vel,
efc_aref and efc_b round differently from the dense path's mju_dot over all dofs. A small model
forced onto the sparse path (a floating base with two legs, a connect between the feet, floor
contacts and a leg-leg pair: patterns that drop the common ancestors of a contact's bodies and
keep them for a connect) checks the patterns and those sums bit for bit, and the solution
(Newton, noslip) at the SPEC bar.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

import kinedyn as kd

XML = """
<mujoco>
  <option jacobian="sparse" noslip_iterations="4" timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="3 3 0.1"/>
    <body name="base" pos="0 0 0.32">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body pos="0.15 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.05 0 -0.15" size="0.03"/>
        <body pos="0.05 0 -0.15">
          <joint type="hinge" axis="0 1 0"/>
          <joint type="hinge" axis="1 0 0"/>
          <geom name="ga" type="capsule" fromto="0 0 0 -0.05 0 -0.15" size="0.03"/>
          <site name="t1" pos="-0.05 0 -0.15"/>
        </body>
      </body>
      <body pos="-0.15 0 0">
        <joint type="ball"/>
        <geom name="gb" type="capsule" fromto="0 0 0 0.05 0 -0.15" size="0.03"/>
        <body pos="0.05 0 -0.15">
          <joint type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.04" pos="0 0 -0.12"/>
          <site name="t2" pos="0 0 -0.12"/>
        </body>
      </body>
    </body>
  </worldbody>
  <equality><connect site1="t1" site2="t2"/></equality>
  <contact><pair geom1="ga" geom2="gb" margin="1"/></contact>
</mujoco>
"""


@pytest.fixture(scope="module")
def models():
    return kd.Model.from_xml_string(XML), mujoco.MjModel.from_xml_string(XML)


def _states(mjm, count=5):
    rng = np.random.default_rng(3)
    for _ in range(count):
        q = mjm.qpos0.copy()
        q[2] = 0.25 + 0.05 * rng.random()
        q[7:] += 0.4 * rng.standard_normal(mjm.nq - 7)
        q[3:7] = [1, 0.1 * rng.standard_normal(), 0.1 * rng.standard_normal(), 0]
        for j in range(mjm.njnt):  # unit quaternions
            if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
                a = mjm.jnt_qposadr[j] + (3 if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 0)
                q[a:a + 4] /= np.linalg.norm(q[a:a + 4])
        yield q, rng.standard_normal(mjm.nv)


def test_sparse_rows_are_mujocos_bits(models):
    m, mjm = models
    assert mujoco.mj_isSparse(mjm)
    d, mjd = kd.Data(m), mujoco.MjData(mjm)
    kinds = set()
    for qpos, qvel in _states(mjm):
        d.qpos[:], d.qvel[:] = qpos, qvel
        mjd.qpos[:], mjd.qvel[:] = qpos, qvel
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        n = mjd.nefc
        assert d.nefc == n
        kinds.update(int(t) for t in mjd.efc_type[:n])
        for i in range(n):
            adr, nnz = mjd.efc_J_rowadr[i], mjd.efc_J_rownnz[i]
            assert list(d.scratch_efc_colind[i, :d.scratch_efc_rownnz[i]]) == \
                list(mjd.efc_J_colind[adr:adr + nnz]), f"row {i}'s pattern"
        for name in ("efc_vel", "efc_aref", "efc_b"):
            np.testing.assert_array_equal(getattr(d, name), getattr(mjd, name)[:n], err_msg=name)
        for name in ("efc_force", "qacc"):
            np.testing.assert_allclose(getattr(d, name), getattr(mjd, name)[:len(getattr(d, name))],
                                       rtol=1e-9, atol=1e-12, err_msg=name)
    c = mujoco.mjtConstraint
    assert {int(c.mjCNSTR_EQUALITY), int(c.mjCNSTR_CONTACT_PYRAMIDAL)} <= kinds
