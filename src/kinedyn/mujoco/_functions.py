"""MuJoCo's ``mj_*`` / ``mjd_*`` functions with the bindings' signatures, over kinedyn's stages.

Each takes ``MjModel``/``MjData`` and calls the native function with ``m.kd``/``d.kd`` (read from
the instance dictionary: one lookup each, no copy). Functions that fill an out-argument in
MuJoCo (``mj_jacSite(m, d, jacp, jacr, site)``, ``mj_fullM(m, d, dst)``, ...) fill it here too.
"""

from __future__ import annotations

import numpy as np

import kinedyn
from kinedyn.engine.actuation import transmission
from kinedyn.engine.camlight import camlight
from kinedyn.engine.checks import float_array
from kinedyn.engine.collision_driver import collision, contact_force
from kinedyn.engine.data import reset, reset_data_keyframe
from kinedyn.engine.fields import DATA_FIELDS
from kinedyn.engine.forward import (
    forward,
    fwd_acceleration,
    fwd_actuation,
    fwd_constraint,
    fwd_position,
    fwd_velocity,
)
from kinedyn.engine.history import read_ctrl, read_sensor
from kinedyn.engine.integrator import integrate, step
from kinedyn.engine.inverse import inverse
from kinedyn.engine.passive import passive
from kinedyn.engine.ray import ray
from kinedyn.engine.rne_post import rne_post_constraint
from kinedyn.engine.sensor import sensor_acc, sensor_pos, sensor_vel
from kinedyn.engine.smooth_inertia import crb, factor_m, full_m, mul_m, solve_m
from kinedyn.engine.smooth_kinematics import com_pos, kinematics
from kinedyn.engine.smooth_rne import com_vel, rne
from kinedyn.engine.smooth_tendon import tendon
from kinedyn.engine.smooth_tendon_armature import tendon_armature
from kinedyn.engine.support import differentiate_pos, integrate_pos, jac, jac_body, jac_body_com, jac_site

# ---- simulation -------------------------------------------------------------------------------------


def mj_step(m, d, nstep: int = 1) -> None:
    """Advance ``nstep`` steps (mj_step)."""
    step(m._kd_model, d._kd_data, nstep)


def mj_forward(m, d) -> None:
    forward(m._kd_model, d._kd_data)


def mj_inverse(m, d) -> None:
    inverse(m._kd_model, d._kd_data)


def mj_step1(m, d) -> None:
    """Position and velocity stages with their sensors, before the controls are set (mj_step1)."""
    km, kd_ = m._kd_model, d._kd_data
    fwd_position(km, kd_)
    sensor_pos(km, kd_)
    fwd_velocity(km, kd_)
    sensor_vel(km, kd_)


def mj_step2(m, d) -> None:
    """Actuation, acceleration, constraints, their sensors and the integrator (mj_step2; RK4 models
    are advanced by Euler here, as MuJoCo's mj_step2 does)."""
    km, kd_ = m._kd_model, d._kd_data
    fwd_actuation(km, kd_)
    fwd_acceleration(km, kd_)
    fwd_constraint(km, kd_)
    sensor_acc(km, kd_)
    integrate(km, kd_)


def mj_resetData(m, d) -> None:
    reset(m._kd_model, d._kd_data)


def mj_resetDataKeyframe(m, d, key: int) -> None:
    reset_data_keyframe(m._kd_model, d._kd_data, key)


def mj_rnePostConstraint(m, d) -> None:
    rne_post_constraint(m._kd_model, d._kd_data)


def _stage(native):
    def f(m, d) -> None:
        native(m._kd_model, d._kd_data)
    return f


mj_fwdPosition = _stage(fwd_position)
mj_fwdVelocity = _stage(fwd_velocity)
mj_fwdActuation = _stage(fwd_actuation)
mj_fwdAcceleration = _stage(fwd_acceleration)
mj_fwdConstraint = _stage(fwd_constraint)
mj_sensorPos = _stage(sensor_pos)
mj_sensorVel = _stage(sensor_vel)
mj_sensorAcc = _stage(sensor_acc)
mj_kinematics = _stage(kinematics)
mj_comPos = _stage(com_pos)
mj_comVel = _stage(com_vel)
mj_tendon = _stage(tendon)
mj_transmission = _stage(transmission)
mj_crb = _stage(crb)


def mj_makeM(m, d) -> None:
    """mj_crb, then the tendons' armature (mj_makeM)."""
    crb(m._kd_model, d._kd_data)
    tendon_armature(m._kd_model, d._kd_data)


mj_factorM = _stage(factor_m)
mj_collision = _stage(collision)
mj_camlight = _stage(camlight)
mj_passive = _stage(passive)


# ---- out-arguments ----------------------------------------------------------------------------------

def _fill(out, value, name: str) -> None:
    """Write ``value`` into the caller's array ``out`` (None: not wanted), as MuJoCo's bindings do."""
    if out is None:
        return
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        raise TypeError(f"{name} must be a float64 NumPy array, got {type(out).__name__}")
    if out.size != value.size:
        raise ValueError(f"{name} must have {value.size} entries (shape {value.shape}), "
                         f"got shape {out.shape}")
    out[...] = value.reshape(out.shape)


def mj_jac(m, d, jacp, jacr, point, body: int) -> None:
    p, r = jac(m._kd_model, d._kd_data, point, body)
    _fill(jacp, p, "jacp")
    _fill(jacr, r, "jacr")


def mj_jacBody(m, d, jacp, jacr, body: int) -> None:
    p, r = jac_body(m._kd_model, d._kd_data, body)
    _fill(jacp, p, "jacp")
    _fill(jacr, r, "jacr")


def mj_jacBodyCom(m, d, jacp, jacr, body: int) -> None:
    p, r = jac_body_com(m._kd_model, d._kd_data, body)
    _fill(jacp, p, "jacp")
    _fill(jacr, r, "jacr")


def mj_jacSite(m, d, jacp, jacr, site: int) -> None:
    p, r = jac_site(m._kd_model, d._kd_data, site)
    _fill(jacp, p, "jacp")
    _fill(jacr, r, "jacr")


def mj_jacGeom(m, d, jacp, jacr, geom: int) -> None:
    """Jacobians of a geom's centre on its body (mj_jacGeom)."""
    km, kd_ = m._kd_model, d._kd_data
    if not 0 <= geom < km.ngeom:
        raise ValueError(f"mj_jacGeom: geom id {geom} out of range [0, {km.ngeom})")
    p, r = jac(km, kd_, kd_.geom_xpos[geom], int(km.geom_bodyid[geom]))
    _fill(jacp, p, "jacp")
    _fill(jacr, r, "jacr")


def mj_fullM(m, d, dst) -> None:
    _fill(dst, full_m(m._kd_model, d._kd_data), "dst")


def mj_solveM(m, d, x, y) -> None:
    _fill(x, solve_m(m._kd_model, d._kd_data, y), "x")


def mj_mulM(m, d, res, vec) -> None:
    _fill(res, mul_m(m._kd_model, d._kd_data, vec), "res")


def mj_rne(m, d, flg_acc, result) -> None:
    _fill(result, rne(m._kd_model, d._kd_data, bool(flg_acc)), "result")


def mj_contactForce(m, d, id: int, result) -> None:  # noqa: A002  (MuJoCo's argument name)
    _fill(result, contact_force(m._kd_model, d._kd_data, id), "result")


def mj_readCtrl(m, d, id: int, time: float, result, interp: int):  # noqa: A002  (MuJoCo's name)
    """Actuator ``id``'s control at ``time - delay`` from its history buffer into ``result[0]``;
    returns ``result`` (mj_readCtrl as MuJoCo 4.0's Python binding)."""
    value = read_ctrl(m._kd_model, d._kd_data, id, time, interp)
    _fill(result, np.array([value]), "result")
    return result


def mj_readSensor(m, d, id: int, time: float, result, interp: int):  # noqa: A002  (MuJoCo's name)
    """Sensor ``id``'s values at ``time - delay`` from its history buffer into ``result``; returns
    ``result`` (mj_readSensor as MuJoCo 4.0's Python binding)."""
    _fill(result, read_sensor(m._kd_model, d._kd_data, id, time, interp), "result")
    return result


def mj_ray(m, d, pnt, vec, geomgroup, flg_static, bodyexclude: int, geomid, normal=None) -> float:
    """Distance to the nearest geom along the ray; the geom's id into ``geomid[0]`` (mj_ray)."""
    dist, gid = ray(m._kd_model, d._kd_data, pnt, vec, geomgroup, bool(flg_static), int(bodyexclude), normal)
    if geomid is not None:
        geomid[0] = gid
    return dist


def mj_getTotalmass(m) -> float:
    return float(m._kd_model.body_mass.sum())


def mj_copyData(dest, m, src) -> None:
    """Copy every field of ``src`` into ``dest`` (Data of the same model), as mj_copyData."""
    if dest.model is not m or src.model is not m:
        raise ValueError("mj_copyData(dest, m, src): dest and src must be MjData of this model")
    for spec in DATA_FIELDS:
        dest._kd_data._array(spec.name)[...] = src._kd_data._array(spec.name)
    dest._kd_data._time[...] = src._kd_data._time
    dest._kd_data.warning_counts[...] = src._kd_data.warning_counts


def mj_version() -> int:
    return 4000000


def mj_versionString() -> str:
    return "4.0.0"


def mj_integratePos(m, qpos, qvel, dt: float) -> None:
    integrate_pos(m._kd_model, qpos, qvel, dt)


def mj_differentiatePos(m, qvel, dt: float, qpos1, qpos2) -> None:
    _fill(qvel, differentiate_pos(m._kd_model, qpos1, qpos2, dt), "qvel")


# mjtObj value -> (Data position field, Data frame field, the object's body: a Model field or None for
# the body itself) of the objects mj_objectVelocity takes
_OBJ_FRAME = {1: ("xipos", "ximat", None), 2: ("xpos", "xmat", None),
              5: ("geom_xpos", "geom_xmat", "geom_bodyid"), 6: ("site_xpos", "site_xmat", "site_bodyid"),
              7: ("cam_xpos", "cam_xmat", "cam_bodyid")}


def mj_objectVelocity(m, d, objtype: int, objid: int, res, flg_local: int) -> None:
    """6D velocity [rotation; translation] of an object's frame (body inertial frame, body frame,
    geom, site or camera), in the world frame or, with ``flg_local``, the object's own
    (mj_objectVelocity): from the Jacobians of the frame's origin on its body."""
    where = _OBJ_FRAME.get(int(objtype))
    if where is None:
        raise ValueError(f"mj_objectVelocity: object type {int(objtype)} is not a body, xbody, geom, site "
                         "or camera")
    km, kd_ = m._kd_model, d._kd_data
    pos_field, mat_field, body_field = where
    n = len(getattr(kd_, pos_field))
    if not 0 <= objid < n:
        raise ValueError(f"mj_objectVelocity: object id {objid} out of range [0, {n})")
    body = objid if body_field is None else int(getattr(km, body_field)[objid])
    pos, mat = getattr(kd_, pos_field)[objid], getattr(kd_, mat_field)[objid]
    jacp, jacr = jac(km, kd_, pos, body)
    lin, ang = jacp @ kd_.qvel, jacr @ kd_.qvel
    if flg_local:
        lin, ang = mat.T @ lin, mat.T @ ang
    _fill(res, np.concatenate((ang, lin)), "res")


# ---- names ------------------------------------------------------------------------------------------

# mjtObj value -> the native Model's kind of named object (kinds kinedyn keeps names of)
_OBJ_KIND = {1: "body", 2: "body", 3: "jnt", 5: "geom", 6: "site", 7: "camera", 8: "light", 10: "mesh",
             17: "equality", 18: "tendon", 19: "actuator", 20: "sensor", 24: "key"}


def _kind(type_) -> str | None:
    return _OBJ_KIND.get(int(type_))


def mj_name2id(m, type: int, name: str) -> int:  # noqa: A002
    """Id of the object of mjtObj ``type`` named ``name``; -1 if there is none (as MuJoCo)."""
    kind = _kind(type)
    if kind is None:
        return -1
    try:
        return m._kd_model.name2id(kind, name)
    except KeyError:
        return -1


def mj_id2name(m, type: int, id: int) -> str | None:  # noqa: A002
    """Name of object ``id`` of mjtObj ``type``; None if it has none (as MuJoCo)."""
    kind = _kind(type)
    names = m._kd_model.names.get(kind, ()) if kind else ()
    if not 0 <= id < len(names):
        return None
    return names[id] or None


# ---- state ------------------------------------------------------------------------------------------

# mjtState bits in MuJoCo's order, with the Data field each packs; None: kinedyn keeps no such state
# (userdata; plugin), so its size is 0; history holds the actuators' and the sensors' buffers
_STATE_BITS = ((1, "time"), (2, "qpos"), (4, "qvel"), (8, "act"), (16, "history"), (32, "qacc_warmstart"),
               (64, "ctrl"), (128, "qfrc_applied"), (256, "xfrc_applied"), (512, "eq_active"),
               (1024, "mocap_pos"), (2048, "mocap_quat"), (4096, None), (8192, None), (16384, "plastic"))
_NSTATE_BITS = 1 << len(_STATE_BITS)


def _state_fields(d, sig) -> list:
    sig = int(sig)
    if not 0 <= sig < _NSTATE_BITS:
        raise ValueError(f"invalid state signature {sig} (a combination of mjtState bits, < {_NSTATE_BITS})")
    kd_ = d._kd_data
    return [kd_._time if field == "time" else getattr(kd_, field)
            for bit, field in _STATE_BITS if sig & bit and field is not None]


def mj_stateSize(m, sig: int) -> int:
    kd_model = m._kd_model
    sig = int(sig)
    if not 0 <= sig < _NSTATE_BITS:
        raise ValueError(f"invalid state signature {sig} (a combination of mjtState bits, < {_NSTATE_BITS})")
    sizes = {"time": 1, "qpos": kd_model.nq, "qvel": kd_model.nv, "act": kd_model.na,
             "history": kd_model.nhistory,
             "qacc_warmstart": kd_model.nv, "ctrl": kd_model.nu, "qfrc_applied": kd_model.nv,
             "xfrc_applied": 6 * kd_model.nbody, "eq_active": kd_model.neq, "mocap_pos": 3 * kd_model.nmocap,
             "mocap_quat": 4 * kd_model.nmocap, "plastic": kd_model.nplastic}
    return sum(sizes[field] for bit, field in _STATE_BITS if sig & bit and field is not None)


def mj_getState(m, d, state, sig: int) -> None:
    """Pack the parts of the state in ``sig`` into ``state`` (mj_getState)."""
    fields = _state_fields(d, sig)
    n = sum(a.size for a in fields)
    if not isinstance(state, np.ndarray) or state.size != n:
        raise ValueError(f"state must be a float64 array of size {n} (mj_stateSize), got {np.shape(state)}")
    flat = state.reshape(-1)
    i = 0
    for a in fields:
        flat[i:i + a.size] = a.reshape(-1)
        i += a.size


def mj_setState(m, d, state, sig: int) -> None:
    """Set the parts of the state in ``sig`` from ``state`` (mj_setState)."""
    fields = _state_fields(d, sig)
    n = sum(a.size for a in fields)
    flat = float_array(state, "state").reshape(-1)
    if flat.size != n:
        raise ValueError(f"state must have size {n} (mj_stateSize), got {flat.size}")
    i = 0
    for a in fields:
        a.reshape(-1)[...] = flat[i:i + a.size]
        i += a.size


# ---- derivatives --------------------------------------------------------------------------------------

def _derivatives(name: str):
    native = getattr(kinedyn, name, None)
    if native is None:
        raise NotImplementedError(f"kinedyn has no kd.{name} yet (finite-difference derivatives, issue 29 "
                                  "wires them once they land)")
    return native


def mjd_transitionFD(m, d, eps: float, flg_centered: bool, A, B, C, D) -> None:
    """Finite-difference transition matrices (mjd_transitionFD), through ``kd.transition_fd``."""
    result = _derivatives("transition_fd")(m._kd_model, d._kd_data, eps=eps, centered=bool(flg_centered))
    for out, value, name in zip((A, B, C, D), result, "ABCD", strict=True):
        _fill(out, np.asarray(value), name)


def mjd_inverseFD(m, d, eps: float, flg_actuation: bool, DfDq, DfDv, DfDa, DsDq, DsDv, DsDa, DmDq) -> None:
    """Finite-difference inverse-dynamics Jacobians (mjd_inverseFD), through ``kd.inverse_fd``."""
    result = _derivatives("inverse_fd")(m._kd_model, d._kd_data, eps=eps, actuation=bool(flg_actuation))
    outs = (DfDq, DfDv, DfDa, DsDq, DsDv, DsDa, DmDq)
    names = ("DfDq", "DfDv", "DfDa", "DsDq", "DsDv", "DsDa", "DmDq")
    for out, value, name in zip(outs, result, names, strict=True):
        _fill(out, np.asarray(value), name)
