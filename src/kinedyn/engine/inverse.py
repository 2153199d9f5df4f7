"""Inverse dynamics: the generalised force that produces a given acceleration (mj_inverse).

    qfrc_inverse = M(q) qacc + qfrc_bias - qfrc_passive

M includes the rotor inertia ``dof_armature`` on its diagonal, so armature enters
exactly as in MuJoCo's ``mj_inverse``. Without constraints, ``forward`` followed by
``inverse`` returns qfrc_applied + J^T xfrc_applied + qfrc_actuator.
"""

from __future__ import annotations

from kinedyn._jit import FastEntry, handle_entry
from kinedyn.engine.checks import check_model_data
from kinedyn.engine.forward import fwd_position_entry, fwd_velocity_entry
from kinedyn.engine.smooth_inertia import mul_m_kernel


@handle_entry
def inverse_entry(m, d):
    fwd_position_entry(m, d)
    fwd_velocity_entry(m, d)
    # qfrc_inverse = M qacc + qfrc_bias - qfrc_passive
    mul_m_kernel(d.qfrc_inverse, d.M, d.qacc, m.M_rownnz, m.M_rowadr, m.M_colind)
    for v in range(m.nv):
        d.qfrc_inverse[v] += d.qfrc_bias[v] - d.qfrc_passive[v]


_INVERSE = FastEntry(inverse_entry)


def inverse(m, d) -> None:
    """Inverse dynamics from qpos, qvel and qacc.

    Reads: qpos, qvel, qacc. Writes: qfrc_inverse and every position and velocity
    field. Mirrors mj_inverse with the constraint solver off.
    """
    check_model_data(m, d, "inverse")
    _INVERSE.call(m._handle, d._handle)
