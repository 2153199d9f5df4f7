"""Actuators: shortcut expansion (motor, position, ...) and compilation of the parameters.

The shortcuts are MuJoCo's ``mjs_setTo*`` (src/user/user_api.cc) as read by
``mjXReader::OneActuator`` (src/xml/xml_native_reader.cc); compilation follows
``mjCActuator::Compile`` (src/user/user_objects.cc): inheritrange, the
``*limited="auto"`` + ``autolimits`` rules, range checks and ``actdim``.

``dampratio`` is stored as MuJoCo's spec stores it, a positive ``biasprm[2]``;
``kinedyn.engine.setconst.set_const`` turns it into ``-kv`` from the
reflected inertia at qpos0 (MuJoCo does this at the end of compilation).
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.compiler import defaults as dflt
from kinedyn.engine.types import (
    NBIAS,
    NDYN,
    NGAIN,
    NPOLY,
    BiasType,
    DynType,
    GainType,
    JointType,
    TrnType,
    WrapType,
)
from kinedyn.xml.mjcf import ACTUATOR_TAGS, Node, typed_attrs

LIMITED = {"false": 0, "true": 1, "auto": 2}
# kinedyn's bound on actdim (MuJoCo's is memory): the activation arrays are allocated up front
MAX_ACTDIM = 1_000_000

# attributes every shortcut inherits from any actuator default of its class
COMMON_ATTRS = {"group", "ctrlrange", "ctrllimited", "forcelimited", "forcerange", "actlimited",
                "actrange", "gear", "cranklength", "user", "nsample", "interp", "delay", "damping",
                "armature"}

# MuJoCo 4.0 actuator attributes kinedyn does not simulate, reported (Compiler._report: ModelError
# naming the attribute, unless allow_unsupported) when they would change the dynamics. velrange and
# ffrange range a pid's vel and ff controls (compile_actuator's ctrlranges)
_UNSIMULATED: dict[str, str] = {}

# actuator_ctrlspec: the input signature, bits of mjtCtrlInput (mjtype.h). On a fixed or affine
# gain one declared input ("pos", "vel", "pressure") that does not change the simulation
INPUT_BITS = {"pos": 1, "vel": 2, "ff": 4, "voltage": 8, "none": 16, "pressure": 32}
_DECLARED_INPUTS = ("pos", "vel", "pressure")
# the signature each shortcut writes (mjs_setTo*): position "pos", velocity and intvelocity "vel",
# cylinder "pressure"; motor, damper, muscle and adhesion none
_SHORTCUT_INPUT = {"motor": 0, "position": 1, "velocity": 2, "intvelocity": 2, "damper": 0, "cylinder": 32,
                   "muscle": 0, "adhesion": 0, "pid": None, "dcmotor": None}

# <actuator interp>: actuator_history[:, 1] (mj_readCtrl's interp argument)
INTERP = {"zoh": 0, "linear": 1, "cubic": 2}
# MuJoCo's bound on nsample: the ring buffer's cursor is stored as an mjtNum, exact as a float to 2^24
MAX_NSAMPLE = 16777216

# "user": values from Python callbacks registered with Model.set_actuator_callbacks
_DYN = {"none": DynType.NONE, "integrator": DynType.INTEGRATOR, "filter": DynType.FILTER,
        "filterexact": DynType.FILTEREXACT, "muscle": DynType.MUSCLE, "pid": DynType.PID,
        "user": DynType.USER}
_GAIN = {"fixed": GainType.FIXED, "affine": GainType.AFFINE, "muscle": GainType.MUSCLE, "pid": GainType.PID,
         "user": GainType.USER}
_BIAS = {"none": BiasType.NONE, "affine": BiasType.AFFINE, "muscle": BiasType.MUSCLE, "user": BiasType.USER}
_NOT_YET = {"dcmotor": None, "so3": None}
# <dcmotor> attributes, gathered over its default classes and resolved by compile_actuator
_DCMOTOR_ATTRS = ("resistance", "motorconst", "nominal", "inductance", "thermal", "saturation", "cogging",
                  "lugre", "input", "controller")
# <pid input>: a subset of these, in this order (MuJoCo 4.0's canonical order); the default "pos vel"
_PID_INPUTS = ("pos", "vel", "ff")
_PID_DEFAULT_INPUT = INPUT_BITS["pos"] | INPUT_BITS["vel"]


def new_spec() -> dict:
    """mjs_defaultActuator: unit gain, unit gear, limits 'auto', actdim unset."""
    return dict(
        dyntype=DynType.NONE, gaintype=GainType.FIXED, biastype=BiasType.NONE,
        dynprm=[1.0] + [0.0] * (NDYN - 1), gainprm=[1.0] + [0.0] * (NGAIN - 1), biasprm=[0.0] * NBIAS,
        gear=[1.0, 0.0, 0.0, 0.0, 0.0, 0.0], ctrlrange=[0.0, 0.0], forcerange=[0.0, 0.0],
        actrange=[0.0, 0.0], lengthrange=[0.0, 0.0], velrange=[0.0, 0.0], ffrange=[0.0, 0.0],
        ctrllimited=2, forcelimited=2, actlimited=2,
        group=0, actearly=0, actdim=-1, inheritrange=0.0, cranklength=0.0, damping=[0.0] * 3, armature=0.0,
        nsample=0, interp=0, delay=0.0, input=None, input_gaintype=None,
        dcmotor=None, trntype=None, target=None, target_attr=None, refsite=None, slidersite=None)


def _partial(dst: list, values: list) -> None:
    dst[:len(values)] = values


def _enum(node: Node, attr: str, table: dict, text: str):
    if text in table:
        return table[text]
    if text in _NOT_YET:
        raise node.error(f"{attr}='{text}' is not simulated by kinedyn", attr)
    raise node.error(f"invalid keyword {text!r} in attribute '{attr}'", attr)


def _refuse(message: str, node: Node, attr: str | None = None) -> None:
    raise node.error(message, attr)


def _apply_common(spec: dict, attrs: dict, node: Node, report=_refuse) -> None:
    for attr in attrs:
        value = attrs[attr]
        active = any(value) if isinstance(value, (list, tuple)) else bool(value)
        if attr in _UNSIMULATED and active:
            report(f"actuator {_UNSIMULATED[attr]} is not simulated", node, attr)
    if "group" in attrs:
        spec["group"] = attrs["group"]
    for rng in ("ctrlrange", "forcerange", "actrange", "lengthrange", "velrange", "ffrange"):
        if rng in attrs:
            spec[rng] = list(attrs[rng])
    for lim in ("ctrllimited", "forcelimited", "actlimited"):
        if lim in attrs:
            spec[lim] = LIMITED[attrs[lim]]
    if "gear" in attrs:
        _partial(spec["gear"], attrs["gear"])
    if "damping" in attrs:  # the linear coefficient, then the polynomial's (as the joint's damping)
        spec["damping"] = list(spec["damping"])
        _partial(spec["damping"], attrs["damping"])
    if "armature" in attrs:
        spec["armature"] = attrs["armature"]
    if "cranklength" in attrs:
        spec["cranklength"] = attrs["cranklength"]
    # the control history (ring buffer) and the delay read from it
    if "nsample" in attrs:
        spec["nsample"] = attrs["nsample"]
    if "interp" in attrs:
        spec["interp"] = INTERP[attrs["interp"]]
    if "delay" in attrs:
        spec["delay"] = attrs["delay"]


def apply_shortcut(spec: dict, tag: str, attrs: dict, node: Node, explicit: bool = True,
                   reset: bool = False, report=_refuse) -> None:
    """Apply one <general>/<motor>/... element (or default) to ``spec``, as OneActuator does.

    ``explicit``: MuJoCo 4.0 lets an explicit range or inheritrange override a conflicting
    value inherited from a default. ``reset``: a shortcut default replayed for a
    ``<general>`` element clears the bias parameters it does not set (observed in 4.0).
    ``report(message, node, attr)``: called for an attribute kinedyn does not simulate.
    """
    _apply_common(spec, attrs, node, report)
    err = None
    if tag in _SHORTCUT_INPUT:
        spec["input"] = _SHORTCUT_INPUT[tag]
    if tag == "pid":
        err = _set_to_pid(spec, attrs, explicit)
    if tag == "dcmotor":
        # the motor's parameters are resolved once its classes are applied (_compile_dcmotor)
        spec["dcmotor"] = {**(spec["dcmotor"] or {}), **{k: attrs[k] for k in _DCMOTOR_ATTRS if k in attrs}}
        spec.update(dyntype=DynType.DCMOTOR, gaintype=GainType.DCMOTOR, biastype=BiasType.DCMOTOR,
                    input=INPUT_BITS["voltage"], actearly=1)
    if tag == "general":
        if "dyntype" in attrs:
            spec["dyntype"] = _enum(node, "dyntype", _DYN, attrs["dyntype"])
        if "gaintype" in attrs:
            spec["gaintype"] = _enum(node, "gaintype", _GAIN, attrs["gaintype"])
        if "biastype" in attrs:
            spec["biastype"] = _enum(node, "biastype", _BIAS, attrs["biastype"])
        for prm in ("dynprm", "gainprm", "biasprm"):
            if prm in attrs:
                _partial(spec[prm], attrs[prm])
        if "actearly" in attrs:
            spec["actearly"] = int(attrs["actearly"] == "true")
        if "actdim" in attrs:
            spec["actdim"] = attrs["actdim"]
    elif tag == "motor":
        if reset:
            spec["biasprm"] = [0.0] * NBIAS
        spec["gainprm"][0] = 1.0
        spec.update(dyntype=DynType.NONE, gaintype=GainType.FIXED, biastype=BiasType.NONE)
    elif tag in ("position", "intvelocity"):
        kp = attrs.get("kp", spec["gainprm"][0])
        kv, dampratio, timeconst = attrs.get("kv"), attrs.get("dampratio"), attrs.get("timeconst")
        inheritrange = attrs.get("inheritrange", spec["inheritrange"])
        rng = "ctrlrange" if tag == "position" else "actrange"
        if explicit and "inheritrange" in attrs and rng not in attrs:
            spec[rng] = [0.0, 0.0]
        if explicit and rng in attrs and "inheritrange" not in attrs:
            inheritrange = 0.0
        spec["gainprm"][0] = kp
        spec["biasprm"][1] = -kp
        if kv is not None and dampratio is not None:
            err = ("kv and dampratio cannot both be defined", "dampratio")
        elif kv is not None and kv < 0:
            err = ("kv cannot be negative", "kv")
        elif dampratio is not None and dampratio < 0:
            err = ("dampratio cannot be negative", "dampratio")
        elif timeconst is not None and timeconst < 0:
            err = ("timeconst cannot be negative", "timeconst")
        if reset and kv is None and dampratio is None:
            spec["biasprm"][2] = 0.0
        if kv is not None:
            spec["biasprm"][2] = -kv
        if dampratio is not None:
            # positive biasprm[2] means "damping ratio", resolved by set_const
            spec["biasprm"][2] = dampratio
        if timeconst is not None:
            spec["dynprm"][0] = timeconst
            spec["dyntype"] = DynType.NONE if timeconst == 0 else DynType.FILTEREXACT
        spec["inheritrange"] = inheritrange
        if err is None and inheritrange > 0 and (spec[rng][0] or spec[rng][1]):
            err = (f"{rng} and inheritrange cannot both be defined", "inheritrange")
        spec.update(gaintype=GainType.FIXED, biastype=BiasType.AFFINE)
        if tag == "intvelocity":
            spec["dyntype"] = DynType.INTEGRATOR
    elif tag == "velocity":
        kv = attrs.get("kv", spec["gainprm"][0])
        spec["biasprm"] = [0.0] * NBIAS
        spec["gainprm"][0] = kv
        spec["biasprm"][2] = -kv
        spec.update(dyntype=DynType.NONE, gaintype=GainType.FIXED, biastype=BiasType.AFFINE)
    elif tag == "damper":
        kv = attrs.get("kv", -spec["gainprm"][2] if spec["gaintype"] == GainType.AFFINE else 0.0)
        spec["gainprm"] = [0.0] * NGAIN
        if reset:
            spec["biasprm"] = [0.0] * NBIAS
        spec["gainprm"][2] = -kv
        spec["ctrllimited"] = 1
        spec.update(dyntype=DynType.NONE, gaintype=GainType.AFFINE, biastype=BiasType.NONE)
        if kv < 0:
            err = ("damping coefficient cannot be negative", "kv")
        elif spec["ctrlrange"][0] < 0 or spec["ctrlrange"][1] < 0:
            err = ("damper control range cannot be negative", "ctrlrange")
    elif tag == "cylinder":
        timeconst = attrs.get("timeconst", spec["dynprm"][0])
        bias = list(attrs.get("bias", spec["biasprm"][:3]))
        area = attrs.get("area", spec["gainprm"][0])
        spec["dynprm"][0] = timeconst
        spec["biasprm"][0:3] = bias
        spec["gainprm"][0] = area
        if "diameter" in attrs and attrs["diameter"] >= 0:
            spec["gainprm"][0] = math.pi / 4 * attrs["diameter"] ** 2
        spec.update(dyntype=DynType.FILTER, gaintype=GainType.FIXED, biastype=BiasType.AFFINE)
    elif tag == "muscle":
        err = _set_to_muscle(spec, attrs)
    elif tag == "adhesion":
        # mjs_setToAdhesion: fixed gain, always ctrllimited, no bias
        gain = attrs.get("gain", spec["gainprm"][0])
        spec["gainprm"][0] = gain
        spec["ctrllimited"] = 1
        spec.update(gaintype=GainType.FIXED, biastype=BiasType.NONE)
        if gain < 0:
            err = ("adhesion gain cannot be negative", "gain")
        elif spec["ctrlrange"][0] < 0 or spec["ctrlrange"][1] < 0:
            err = ("adhesion control range cannot be negative", "ctrlrange")
    if tag in ("general", "pid") and "input" in attrs:
        spec["input"] = (attrs["input"], node)
    if tag in ("general", "pid") and "input" in attrs or tag in _SHORTCUT_INPUT:
        # the gain the signature was written for: a later gaintype discards it (MuJoCo 4.0)
        spec["input_gaintype"] = spec["gaintype"]
    if err is not None:
        raise node.error(err[0], err[1])


def _input_bits(tokens: list, allowed: tuple, kind: str, where) -> int:
    """The input bits of ``tokens`` (a pid's or dcmotor's ``input``): each one of ``allowed``, once,
    in MuJoCo's canonical order; ModelError on ``where`` otherwise."""
    if any(t not in allowed for t in tokens):
        raise where.error(f"{kind} inputs are a subset of [{', '.join(allowed)}]", "input")
    order = [allowed.index(t) for t in tokens]
    if order != sorted(set(order)):
        raise where.error("inputs must be listed in canonical order [pos, vel, ff, voltage, pressure]",
                          "input")
    return sum(INPUT_BITS[t] for t in tokens)


def input_signature(spec: dict, node: Node) -> int:
    """actuator_ctrlspec of an expanded actuator (mjCActuator::Compile's input checks).

    An ``input`` written under another gaintype than the actuator ends with is discarded; on a
    fixed or affine gain it is one declaration, "pos", "vel" or "pressure"; muscle and user
    gains take none.
    """
    value = spec["input"]
    pid = spec["gaintype"] == GainType.PID
    if value is None or spec["input_gaintype"] != spec["gaintype"]:
        return _PID_DEFAULT_INPUT if pid else 0
    if isinstance(value, int):
        return value
    text, where = value
    tokens = text.split()
    if not tokens:
        return _PID_DEFAULT_INPUT if pid else 0
    if pid:
        return _input_bits(tokens, _PID_INPUTS, "pid", where)
    if spec["gaintype"] in (GainType.MUSCLE, GainType.USER):
        raise where.error("input is not available for muscle and user gains", "input")
    if len(tokens) != 1 or tokens[0] not in _DECLARED_INPUTS:
        raise where.error("fixed and affine gains take one input, 'pos', 'vel' or 'pressure'", "input")
    return INPUT_BITS[tokens[0]]


def _set_to_pid(spec: dict, attrs: dict, explicit: bool):
    """mjs_setToPID as MuJoCo 4.0's reader calls it: gaintype pid, affine bias [0, -kp, -kv] (a
    positive biasprm[2] is a damping ratio, as for position), gainprm[0] = ki, dynprm = [imax,
    slewmax]; dyntype pid when there is a controller state (ki or slewmax), none otherwise.

    kp and kv come from a pid default (the bias), else their documented 1 and 0; ki, imax and
    slewmax only from a default with pid dynamics. ``posrange`` is the ctrlrange (the first input).
    """
    inherited = spec["dyntype"] == DynType.PID
    from_pid = spec["gaintype"] == GainType.PID
    kp = attrs.get("kp", -spec["biasprm"][1] if from_pid else 1.0)
    kv, dampratio = attrs.get("kv"), attrs.get("dampratio")
    ki = attrs.get("ki", spec["gainprm"][0] if inherited else 0.0)
    imax = attrs.get("imax", spec["dynprm"][0] if inherited else 0.0)
    slewmax = attrs.get("slewmax", spec["dynprm"][1] if inherited else 0.0)
    err = None
    if kv is not None and dampratio is not None:
        err = ("kv and dampratio cannot both be defined", "dampratio")
    elif kv is not None and kv < 0:
        err = ("kv cannot be negative", "kv")
    elif dampratio is not None and dampratio < 0:
        err = ("dampratio cannot be negative", "dampratio")
    elif slewmax < 0:
        err = ("slewmax cannot be negative", "slewmax")
    damping = spec["biasprm"][2] if from_pid else 0.0
    if kv is not None:
        damping = -kv
    if dampratio is not None:
        damping = dampratio
    if "posrange" in attrs:
        spec["ctrlrange"] = list(attrs["posrange"])
    if explicit and "inheritrange" in attrs and "ctrlrange" not in attrs and "posrange" not in attrs:
        spec["ctrlrange"] = [0.0, 0.0]
    inheritrange = attrs.get("inheritrange", spec["inheritrange"])
    if explicit and ("ctrlrange" in attrs or "posrange" in attrs) and "inheritrange" not in attrs:
        inheritrange = 0.0
    spec["inheritrange"] = inheritrange
    if err is None and inheritrange > 0 and (spec["ctrlrange"][0] or spec["ctrlrange"][1]):
        err = ("ctrlrange and inheritrange cannot both be defined", "inheritrange")
    stateful = ki != 0 or slewmax > 0
    spec["gainprm"] = [ki] + [0.0] * (NGAIN - 1)
    spec["biasprm"] = [0.0, -kp, damping] + [0.0] * (NBIAS - 3)
    spec["dynprm"] = ([imax, slewmax] if stateful else [0.0, 0.0]) + [0.0] * (NDYN - 2)
    spec.update(dyntype=DynType.PID if stateful else DynType.NONE, gaintype=GainType.PID,
                biastype=BiasType.AFFINE)
    return err


def _compile_dcmotor(spec: dict, node: Node, report) -> None:
    """The voltage-commanded DC motor of MuJoCo 4.0 (mjs_setToDCMotor and mjCActuator::Compile, as
    the XML reference and the compiled fields give them): gainprm = [R, K], biasprm = the cogging
    [amplitude, poles, phase], dynprm zero, no state. K is sqrt(Kt Ke) of motorconst (or the one
    positive constant), or from nominal = [V, stall torque, no-load speed]: K = V / speed,
    R = K V / stall. An authored saturation replaces the forcerange with [-tau, tau], tau the
    torque or K times the current. The force is (K / R)(u - K v) + cogging(l) (engine.actuation).

    With inductance the current is a state (dynprm = [L / R, current_rate]), integrated exactly
    like filterexact's and read after the step (actearly), the force K i.

    With a pos, vel or ff input the on-board controller commands the torque kp (u_pos - l) +
    kd (u_vel - v) + ki I + u_ff (absent inputs zero) and drives the voltage (R/K) torque + K v,
    within +-Vmax; slewmax and ki add the states s (the slewed input) and I (engine.util_dcmotor).

    The thermal model and LuGre friction are built for every input (util_dcmotor): their states
    follow the controller's, and the controller's voltage uses the cold R (gainprm[0]).

    ``input="none"``: no control, the motor at 0 V (back-EMF, cogging and its states).

    Not simulated yet, reported by attribute: several inputs (ActuatorsMixin._actuators)."""
    prm = spec["dcmotor"] or {}
    # the input signature: a subset of [pos, vel, ff, voltage] in that order; "none" is empty
    tokens = prm.get("input", "voltage").split() or ["voltage"]
    if tokens == ["none"]:
        spec["input"] = INPUT_BITS["none"]
    else:
        spec["input"] = _input_bits(tokens, ("pos", "vel", "ff", "voltage"), "dcmotor", node)
    # the on-board controller [kp, ki, kd, slewmax, Imax, Vmax]: gainprm[4:8] = [kp, ki, kd, Vmax]
    controller = (list(prm.get("controller", [])) + [0.0] * 6)[:6]
    if any(controller[:3]) and not spec["input"] & (INPUT_BITS["pos"] | INPUT_BITS["vel"] | INPUT_BITS["ff"]):
        raise node.error("dcmotor controller gains require a controller input [pos, vel, ff]", "controller")
    if controller[1] < 0 or controller[3] < 0 or controller[4] < 0:
        raise node.error("dcmotor controller ki, slewmax and Imax cannot be negative", "controller")
    if controller[1] > 0 and not spec["input"] & INPUT_BITS["pos"]:
        raise node.error("dcmotor controller integrator requires the pos input", "controller")
    # saturation's current_rate limits di/dt, a state only inductance adds
    saturation = (list(prm.get("saturation", [])) + [0.0] * 3)[:3]
    given = [a for a in ("motorconst", "resistance", "nominal") if a in prm]
    if "nominal" in prm and len(given) > 1:
        report("dcmotor nominal together with motorconst or resistance is not simulated", node, "nominal")
    if "nominal" in prm:
        volt, stall, speed = (list(prm["nominal"]) + [0.0] * 3)[:3]
        if volt <= 0 or stall <= 0 or speed <= 0:
            raise node.error("DC motor: nominal voltage, stall torque and no-load speed must be positive",
                             "nominal")
        k = volt / speed
        r = k * volt / stall
    else:
        consts = list(prm.get("motorconst", [0.0]))
        if any(c < 0 for c in consts):
            raise node.error("DC motor: motor constants cannot be negative", "motorconst")
        positive = [c for c in consts if c > 0]
        k = math.sqrt(positive[0] * positive[1]) if len(positive) == 2 else (positive[0] if positive else 0.0)
        r = prm.get("resistance", 0.0)
    if k <= 0:
        raise node.error("DC motor: motor constant K must be positive", "motorconst")
    if r <= 0:
        raise node.error("DC motor: resistance must be positive", "resistance")
    spec["gainprm"] = [r, k, 0.0, 0.0, controller[0], controller[1], controller[2], controller[5]] \
        + [0.0] * (NGAIN - 8)
    spec["biasprm"] = (list(prm.get("cogging", [])) + [0.0] * NBIAS)[:NBIAS]
    # electrical dynamics: inductance = [L, timeconst L / R]; L takes precedence. One state, the
    # current, with dynprm = [L / R, current_rate]
    inductance = (list(prm.get("inductance", [])) + [0.0, 0.0])[:2]
    tau = inductance[0] / r if inductance[0] > 0 else inductance[1]
    # the thermal model [Rth, Cth, timeconst, alpha, Tref, Tambient]: any two of the first three
    # give the third (all three: C = timeconst / Rth)
    rth, cth, tct, alpha, tref, tamb = (list(prm.get("thermal", [])) + [0.0] * 6)[:6]
    if rth > 0 and tct > 0:
        cth = tct / rth
    elif cth > 0 and tct > 0 and rth <= 0:
        rth = tct / cth
    thermal = rth > 0 and cth > 0
    # LuGre friction [sigma0, sigma1, Fc, Fs, vs]: on when sigma0 > 0
    lugre = (list(prm.get("lugre", [])) + [0.0] * 5)[:5]
    # dynprm = [L / R, current_rate, Rth, Cth, Tambient, ..., slewmax (7), Imax (8)];
    # gainprm[2:4] = [alpha, Tref]
    spec["dynprm"] = [tau, saturation[2] if tau > 0 else 0.0] + [0.0] * (NDYN - 2)
    spec["dynprm"][7], spec["dynprm"][8] = controller[3], controller[4]
    if thermal:
        spec["dynprm"][2:5] = [rth, cth, tamb]
        spec["gainprm"][2:4] = [alpha, tref]
    if lugre[0] > 0:  # dynprm[5:7] = [sigma0, sigma1], biasprm[3:6] = [Fc, Fs, vs]
        spec["dynprm"][5:7] = lugre[:2]
        spec["biasprm"][3:6] = lugre[2:5]
    if "saturation" in prm:
        torque = saturation[0] if saturation[0] > 0 else k * saturation[1]
        spec["forcerange"] = [-torque, torque] if torque > 0 else [0.0, 0.0]
        spec["forcelimited"] = 1 if torque > 0 else 2
    # the states, in this order: the controller's slew and integral, the temperature, the bristle
    # deflection, the current
    spec["actdim"] = int(controller[3] > 0) + int(controller[1] > 0) + int(thermal) + int(lugre[0] > 0) \
        + int(tau > 0)


def _set_to_muscle(spec: dict, attrs: dict):
    """mjs_setToMuscle: MuJoCo's muscle defaults where the spec still holds the global ones.

    gainprm = [range0, range1, force, scale, lmin, lmax, vmax, fpmax, fvmax], copied into
    biasprm; dynprm = [tau_act, tau_deact, tausmooth]. ctrllimited is left alone (4.0:
    the activation dynamics clamp ctrl to [0, 1] themselves).
    """
    dyn, gain = spec["dynprm"], spec["gainprm"]
    for k, glob, muscle in ((0, 1.0, 0.01), (1, 0.0, 0.04)):
        if dyn[k] == glob:
            dyn[k] = muscle
    for k, glob, muscle in ((0, 1.0, 0.75), (1, 0.0, 1.05), (2, 0.0, -1.0), (3, 0.0, 200.0), (4, 0.0, 0.5),
                            (5, 0.0, 1.6), (6, 0.0, 1.5), (7, 0.0, 1.3), (8, 0.0, 1.2)):
        if gain[k] == glob:
            gain[k] = muscle
    tausmooth = attrs.get("tausmooth", dyn[2])
    if tausmooth < 0:
        return ("muscle tausmooth cannot be negative", "tausmooth")
    dyn[2] = tausmooth
    timeconst = attrs.get("timeconst", [-1.0, -1.0])
    rng = attrs.get("range", [-1.0, -1.0])
    for k in range(2):
        if timeconst[k] >= 0:
            dyn[k] = timeconst[k]
        if rng[k] >= 0:
            gain[k] = rng[k]
    for k, attr in ((2, "force"), (3, "scale"), (4, "lmin"), (5, "lmax"), (6, "vmax"), (7, "fpmax"),
                    (8, "fvmax")):
        if attrs.get(attr, -1.0) >= 0:
            gain[k] = attrs[attr]
    spec["biasprm"][:9] = gain[:9]
    spec.update(dyntype=DynType.MUSCLE, gaintype=GainType.MUSCLE, biastype=BiasType.MUSCLE)
    return None


def expand(tag: str, attrs: dict, node: Node, class_actuators: list, report=_refuse) -> dict:
    """Spec of one actuator element after its class's defaults (MuJoCo 4.0 inheritance rule);
    ``report`` as in :func:`apply_shortcut`."""
    spec = new_spec()
    previous = "general"
    for dtag, dattrs, dnode in class_actuators:
        if tag == "general" or dtag in (tag, "general"):
            reset = tag == "general" and dtag not in ("general", previous)
            apply_shortcut(spec, dtag, dattrs, dnode, reset=reset, report=report)
            previous = dtag
        else:
            _apply_common(spec, {k: v for k, v in dattrs.items() if k in COMMON_ATTRS}, dnode, report)
            # an explicit inheritrange in a default overrides an inherited range
            if dattrs.get("inheritrange", 0) > 0:
                rng = "ctrlrange" if dtag == "position" else "actrange"
                if rng not in dattrs:
                    spec[rng] = [0.0, 0.0]
    # transmission
    targets = [(a, t) for a, t in (("joint", TrnType.JOINT), ("jointinparent", TrnType.JOINTINPARENT),
                                   ("tendon", TrnType.TENDON), ("cranksite", TrnType.SLIDERCRANK),
                                   ("site", TrnType.SITE), ("body", TrnType.BODY)) if a in attrs]
    if targets:
        attr, trn = targets[-1]
        spec.update(trntype=trn, target=attrs[attr], target_attr=attr)
    # slider-crank and refsite parameters (mjXReader::OneActuator)
    crank_attrs = "cranklength" in attrs or "slidersite" in attrs
    if crank_attrs and spec["trntype"] not in (None, TrnType.SLIDERCRANK):
        raise node.error("cranklength and slidersite can only be used in slidercrank transmission",
                         "cranklength" if "cranklength" in attrs else "slidersite")
    if "refsite" in attrs and spec["trntype"] not in (None, TrnType.SITE):
        raise node.error("refsite can only be used with site transmission", "refsite")
    spec["slidersite"] = attrs.get("slidersite")
    spec["refsite"] = attrs.get("refsite")
    apply_shortcut(spec, tag, attrs, node, explicit=True, report=report)
    return spec


def _islimited(flag: int, rng) -> bool:
    return flag == 1 or (flag == 2 and rng[0] < rng[1])


def compile_actuator(spec: dict, node: Node, autolimits: bool, joints: list, joint_ids: dict,
                     tendons: list = (), tendon_ids: dict | None = None, site_ids: dict | None = None,
                     body_ids: dict | None = None, report=_refuse) -> dict:
    """Resolve the target, inheritrange and limits of an expanded actuator (mjCActuator::Compile).

    ``tendons`` are the compiled tendon dicts (``range``), ``*_ids`` map names to ids; ``report``
    as in :func:`apply_shortcut`.
    """
    if spec["target"] is None:
        raise node.error("missing transmission target for actuator")
    if spec["gaintype"] == GainType.DCMOTOR:
        _compile_dcmotor(spec, node, report)
    site_ids = site_ids or {}
    target_id2 = -1
    trntype = spec["trntype"]
    if trntype in (TrnType.SITE, TrnType.SLIDERCRANK, TrnType.BODY):
        # ResolveReferences: refsite / slidersite first, then the target
        if trntype == TrnType.SLIDERCRANK:
            if not spec["slidersite"]:
                raise node.error("missing base site for slider-crank", "slidersite")
            target_id2 = site_ids.get(spec["slidersite"], -1)
            if target_id2 < 0:
                raise node.error(f"base site '{spec['slidersite']}' not found for actuator", "slidersite")
            if spec["cranklength"] <= 0:
                raise node.error("crank length must be positive in actuator", "cranklength")
        elif trntype == TrnType.SITE and spec["refsite"]:
            target_id2 = site_ids.get(spec["refsite"], -1)
            if target_id2 < 0:
                raise node.error(f"reference site '{spec['refsite']}' not found for actuator", "refsite")
        table = (body_ids or {}) if trntype == TrnType.BODY else site_ids
        target_id = table.get(spec["target"], -1)
        if target_id < 0:
            raise node.error(f"transmission target '{spec['target']}' not found in actuator",
                             spec["target_attr"])
        target_range, scalar = None, False
    elif trntype == TrnType.TENDON:
        tid = (tendon_ids or {}).get(spec["target"])
        if tid is None:
            raise node.error(f"unknown tendon '{spec['target']}' in actuator transmission", "tendon")
        target_id, target_range, scalar = tid, tendons[tid]["range"], True
    else:
        tid = joint_ids.get(spec["target"])
        if tid is None:
            raise node.error(f"unknown joint '{spec['target']}' in actuator transmission",
                             spec["target_attr"])
        joint = joints[tid]
        target_id, target_range = tid, joint.range
        scalar = joint.type in (JointType.HINGE, JointType.SLIDE)

    # inheritrange: position-like servos take their range from the joint's or tendon's
    pid = spec["gaintype"] == GainType.PID
    if ((spec["gaintype"] == GainType.FIXED and spec["gainprm"][0] == -spec["biasprm"][1] or pid)
            and spec["biastype"] == BiasType.AFFINE and spec["inheritrange"] > 0):
        if spec["dyntype"] in (DynType.NONE, DynType.FILTEREXACT) or pid:
            rng = "ctrlrange"
        elif spec["dyntype"] == DynType.INTEGRATOR:
            rng = "actrange"
        else:
            raise node.error("inheritrange only available for position and intvelocity actuators",
                             "inheritrange")
        if target_range is None:
            raise node.error("inheritrange can only be used with joint and tendon transmission",
                             "inheritrange")
        if not scalar:
            raise node.error("inheritrange can only be used with hinge and slide joints", "inheritrange")
        lo, hi = target_range
        if lo == hi:
            raise node.error(f"inheritrange used but target '{spec['target']}' has no range defined",
                             "inheritrange")
        mean = 0.5 * (hi + lo)
        radius = 0.5 * (hi - lo) * spec["inheritrange"]
        spec[rng] = [mean - radius, mean + radius]

    ctrlspec = input_signature(spec, node)
    # the ranges of the actuator's controls, one per control in the order of the signature
    # (mjCActuator::Compile): a pid's pos input takes the ctrlrange (posrange), its vel and ff inputs
    # velrange and ffrange; a dcmotor has one control per controller input (the ctrlrange each), or
    # one (voltage) or none (input="none"); every other actuator has one control
    inputs = [bit for bit in ("pos", "vel", "ff") if ctrlspec & INPUT_BITS[bit]]
    if pid:
        ranges_of = {"pos": "ctrlrange", "vel": "velrange", "ff": "ffrange"}
        ctrlranges = [list(spec[ranges_of[bit]]) for bit in inputs]
    elif spec["gaintype"] == GainType.DCMOTOR and inputs:
        ctrlranges = [list(spec["ctrlrange"]) for _ in inputs]
    else:
        ctrlranges = [] if ctrlspec & INPUT_BITS["none"] else [list(spec["ctrlrange"])]
    if pid and ctrlspec in (INPUT_BITS["vel"], INPUT_BITS["ff"]):
        # a lone vel or ff control: its range is the ctrlrange
        spec["ctrlrange"] = ctrlranges[0]
    ranges = [("force", spec["forcerange"]), ("act", spec["actrange"])] + [("ctrl", r) for r in ctrlranges]
    for kind, rng in ranges:
        if spec[f"{kind}limited"] == 2 and not autolimits and not (rng[0] == 0 and rng[1] == 0):
            raise node.error(f"actuator has `{kind}range` but not `{kind}limited`; set the "
                             f"autolimits=\"true\" compiler option, specify `{kind}limited` explicitly, "
                             f"or remove `{kind}range`",
                             f"{kind}range")
    out = dict(spec)
    out["ctrlspec"] = ctrlspec
    for kind, label in (("force", "force range"), ("act", "actrange")):
        limited = _islimited(spec[f"{kind}limited"], spec[f"{kind}range"])
        rng = spec[f"{kind}range"]
        if limited and rng[0] >= rng[1]:
            raise node.error(f"invalid {label} for actuator", f"{kind}range")
        out[f"{kind}limited"] = int(limited)
    out["ctrlranges"] = ctrlranges
    out["ctrllimits"] = [int(_islimited(spec["ctrllimited"], rng)) for rng in ctrlranges]
    for rng, limited in zip(ctrlranges, out["ctrllimits"], strict=True):
        if limited and rng[0] >= rng[1]:
            raise node.error("invalid control range for actuator", "ctrlrange")
    out["ctrllimited"] = out["ctrllimits"][0] if ctrlranges else 0
    if out["actlimited"] and spec["dyntype"] == DynType.NONE:
        raise node.error("actrange specified but dyntype is 'none' in actuator", "actrange")

    if spec["dyntype"] == DynType.PID and not pid:
        raise node.error("dyntype 'pid' requires gaintype 'pid'", "dyntype")
    if pid and spec["biastype"] != BiasType.AFFINE:
        raise node.error("pid requires biastype 'affine'", "biastype")
    if pid and spec["dyntype"] != DynType.PID and spec["gainprm"][0] != 0:
        raise node.error("ki (gainprm[0]) requires dyntype 'pid'", "gainprm")
    if pid and spec["dyntype"] == DynType.PID:
        if not out["ctrlspec"] & INPUT_BITS["pos"]:
            raise node.error("pid controller states require the pos input", "input")
        if spec["dynprm"][0] < 0:
            raise node.error("imax (dynprm[0]) must be non-negative",
                             "imax" if node.tag == "pid" else "dynprm")
    actdim = spec["actdim"]
    if spec["dyntype"] == DynType.PID:
        # one state per controller feature, [slew, integral] (mjs_setToPID)
        states = int(spec["dynprm"][1] > 0) + int(spec["gainprm"][0] > 0)
        if actdim < 0:
            actdim = states
        elif actdim != states and states > 0:
            raise node.error(f"actdim {actdim} of a pid actuator: its controller has {states} state(s) "
                             "(slewmax > 0, ki > 0)", "actdim")
    if pid and not ctrlspec & INPUT_BITS["pos"] and (
            trntype in (TrnType.JOINT, TrnType.JOINTINPARENT) and not scalar
            or trntype == TrnType.SITE and target_id2 >= 0 and not any(spec["gear"][:3])):
        # MuJoCo 4.0 wraps the setpoints of rotational servos (wrapSetpoint, engine.util_pid for
        # the pos input); a pid without one is not checked there
        report("a pid actuator without a pos input on a ball or free joint or a rotational site "
               "transmission is not simulated", node, spec["target_attr"])
    if actdim > MAX_ACTDIM:
        raise node.error(f"actdim {actdim}: kinedyn supports at most {MAX_ACTDIM} activations per actuator",
                         "actdim")
    if actdim > 1 and spec["dyntype"] not in (DynType.USER, DynType.PID, DynType.DCMOTOR):
        raise node.error("actdim > 1 is only allowed for dyntype 'user'", "actdim")
    if actdim == 1 and spec["dyntype"] == DynType.NONE:
        raise node.error("invalid actdim 1 in stateless actuator", "actdim")
    if actdim == 0 and spec["dyntype"] not in (DynType.NONE, DynType.DCMOTOR):
        raise node.error("invalid actdim 0 in stateful actuator", "actdim")
    if actdim < 0:
        actdim = int(spec["dyntype"] != DynType.NONE)
    out["actdim"] = actdim

    # muscle parameters (gain or bias of type muscle)
    for kind, prm in (("gain", spec["gainprm"]), ("bias", spec["biasprm"])):
        if spec[f"{kind}type"] != (GainType.MUSCLE if kind == "gain" else BiasType.MUSCLE):
            continue
        if prm[0] >= prm[1]:
            raise node.error("range[0]<range[1] required in muscle", "range")
        if prm[4] >= 1 or prm[5] <= 1:
            raise node.error("lmin<1<lmax required in muscle", "lmin" if prm[4] >= 1 else "lmax")
        if prm[3] <= 0 or prm[6] <= 0 or prm[7] <= 0 or prm[8] <= 0:
            raise node.error("positive scale, vmax, fpmax, fvmax required in muscle")
    # a damping ratio is resolved with sqrt(kp * mass) (set_const): MuJoCo 4.0 makes nan of a negative kp
    if spec["gainprm"][0] == -spec["biasprm"][1] and spec["biasprm"][2] > 0 and spec["gainprm"][0] < 0:
        raise node.error("dampratio needs a non-negative kp (gainprm[0])",
                         "kp" if node.tag in ("position", "intvelocity") else "gainprm")
    # damping and armature are reflected at a joint or tendon target (mjCActuator::Compile)
    for attr, active in (("damping", any(spec["damping"])), ("armature", bool(spec["armature"]))):
        if active and trntype not in (TrnType.JOINT, TrnType.JOINTINPARENT, TrnType.TENDON):
            raise node.error(f"{attr} requires joint or tendon transmission in actuator", attr)
    # MuJoCo 4.0 compiles an armature on a tendon that wraps a geom, then stops in its first
    # mj_forward (mj_tendonDot: "geom wrapping not supported"), so its compiler's mj_setConst fails
    if spec["armature"] and trntype == TrnType.TENDON and any(
            w in (WrapType.SPHERE, WrapType.CYLINDER) for w in tendons[target_id]["wtypes"]):
        raise node.error("engine error: geom wrapping not supported by tendon armature (an actuator's "
                         "armature on a tendon that wraps a geom)", "armature")
    # control history and delay (mjCActuator::Compile's checks)
    if spec["delay"] > 0 and spec["nsample"] <= 0:
        raise node.error("setting delay > 0 without a history buffer (nsample)", "delay")
    if spec["nsample"] > MAX_NSAMPLE:
        raise node.error(f"at most 2^24 samples in history buffer, got {spec['nsample']}", "nsample")
    if spec["nsample"] < 0:
        # MuJoCo 4.0 compiles a negative nsample into actuator_history without a buffer and then
        # writes outside its history array in mj_step: refused here (docs/deviations.md)
        raise node.error(f"nsample cannot be negative, got {spec['nsample']}", "nsample")
    out["damping"], out["dampingpoly"] = spec["damping"][0], list(spec["damping"][1:3])
    out["trnid"] = target_id
    out["trnid2"] = target_id2
    return out


class ActuatorsMixin:
    """The Compiler's ``<actuator>`` reader and arrays (see :class:`kinedyn.compiler.build.Compiler`)."""

    def _actuators(self, section: Node) -> None:
        if section.attrib:
            raise section.error("Schema violation: unrecognized attribute", next(iter(section.attrib)))
        joint_ids = {j.attrs["name"]: j.id for j in self.joints if j.attrs.get("name")}
        tendon_ids = {t["name"]: i for i, t in enumerate(self.tendons) if t["name"]}
        site_ids = {s.attrs["name"]: s.id for s in self.sites if s.attrs.get("name")}
        body_ids = {b.name: b.id for b in self.bodies if b.id and b.name}
        body_ids.setdefault("world", 0)
        for node in section.children:
            tag = node.tag
            if tag == "orientation":
                self._report(f"<{tag}> actuators are not simulated (left out of the model)", node)
                continue
            if tag == "plugin":
                raise node.error("actuator plugins are not supported")
            if tag not in ACTUATOR_TAGS:
                raise node.error("Schema violation: unrecognized element")
            if node.children:
                raise node.children[0].error("Schema violation: unrecognized element")
            attrs = typed_attrs(node)
            cls = self.classes["main"]
            if "class" in attrs:
                cls = dflt.lookup(self.classes, node, "class", attrs["class"])
            spec = expand(tag, attrs, node, cls.actuators, self._report)
            compiled = compile_actuator(spec, node, self.autolimits, self.joints, joint_ids, self.tendons,
                                        tendon_ids, site_ids, body_ids, self._report)
            ctrlnum = len(compiled["ctrlranges"])
            buffered = compiled["delay"] > 0 or compiled["nsample"] > 0
            if ctrlnum == 0 and buffered:
                raise node.error("history and delay require an input",
                                 "delay" if compiled["delay"] > 0 else "nsample")
            if ctrlnum > 1 and buffered:
                # MuJoCo 4.0 buffers every control of the block but reads back only the first
                self._report(f"<{tag}> actuators with several controls are not simulated with a delay "
                             "or history buffer (left out of the model)", node,
                             "delay" if compiled["delay"] > 0 else "nsample")
                continue
            self.actuators.append(compiled)
            self.actuator_nodes.append(node)
            self.actuator_names.append(attrs.get("name", ""))
        # names are unique across all <actuator> sections
        seen = set()
        for name, node in zip(self.actuator_names, self.actuator_nodes, strict=True):
            if name and name in seen:
                raise node.error(f"repeated name '{name}' in actuator", "name")
            seen.add(name)

    def _actuator_arrays(self, arr: dict, sizes: dict) -> dict[str, int]:
        """The actuator_* arrays, and the joint's and tendon's actuator ids, into ``arr`` (after
        the tree's and the tendons': njnt, ntendon); their sizes."""
        nu, njnt, ntendon = len(self.actuators), sizes["njnt"], sizes["ntendon"]
        # actuators
        acts = self.actuators
        actadr, adr = [], 0
        for a in acts:
            actadr.append(adr if a["actdim"] else -1)
            adr += a["actdim"]

        def acol(key, width=None, dtype=float):
            v = np.array([a[key] for a in acts], dtype=dtype)
            return v.reshape(nu, width) if width else v.reshape(nu)

        arr["actuator_trntype"] = acol("trntype", dtype=np.int32)
        arr["actuator_dyntype"] = acol("dyntype", dtype=np.int32)
        arr["actuator_gaintype"] = acol("gaintype", dtype=np.int32)
        arr["actuator_biastype"] = acol("biastype", dtype=np.int32)
        arr["actuator_trnid"] = np.array([[a["trnid"], a["trnid2"]] for a in acts],
                                         dtype=np.int32).reshape(nu, 2)
        arr["actuator_actadr"] = np.array(actadr, dtype=np.int32)
        arr["actuator_actnum"] = acol("actdim", dtype=np.int32)
        # MuJoCo 4.0's control and output blocks: each actuator's controls, one after the other in
        # ctrl (nu = their sum: a pid has one per input, a dcmotor with input="none" none), and one
        # force output per actuator (multi-output actuators are refused), so nout == nactuator
        ctrlnum = np.array([len(a["ctrlranges"]) for a in acts], dtype=np.int32)
        arr["actuator_ctrladr"] = (np.cumsum(ctrlnum) - ctrlnum).astype(np.int32)
        arr["actuator_ctrlnum"] = ctrlnum
        arr["actuator_ctrlspec"] = acol("ctrlspec", dtype=np.int32)
        arr["actuator_outadr"] = np.arange(nu, dtype=np.int32)
        arr["actuator_outnum"] = np.ones(nu, dtype=np.int32)
        arr["actuator_group"] = acol("group", dtype=np.int32)
        for key in ("forcelimited", "actlimited", "actearly"):
            arr[f"actuator_{key}"] = acol(key, dtype=np.uint8)
        arr["actuator_dynprm"] = acol("dynprm", 10)
        arr["actuator_gainprm"] = acol("gainprm", 10)
        arr["actuator_biasprm"] = acol("biasprm", 10)
        # per control (nu rows)
        arr["actuator_ctrllimited"] = np.array([f for a in acts for f in a["ctrllimits"]], dtype=np.uint8)
        arr["actuator_ctrlrange"] = np.array([r for a in acts for r in a["ctrlranges"]],
                                             dtype=float).reshape(-1, 2)
        arr["actuator_forcerange"] = acol("forcerange", 2)
        arr["actuator_actrange"] = acol("actrange", 2)
        arr["actuator_gear"] = acol("gear", 6)
        arr["actuator_cranklength"] = acol("cranklength")
        arr["actuator_damping"] = acol("damping")
        arr["actuator_dampingpoly"] = acol("dampingpoly", NPOLY)
        arr["actuator_armature"] = acol("armature")
        # the joint or tendon each actuator's damping and armature go to (mj_actuatorDamping reads
        # them there): the actuator's id, or -2 when several actuators add to the same target
        arr["jnt_actuatorid"] = np.full(njnt, -1, dtype=np.int32)
        arr["tendon_actuatorid"] = np.full(ntendon, -1, dtype=np.int32)
        for i, a in enumerate(acts):
            if not (a["damping"] or any(a["dampingpoly"]) or a["armature"]):
                continue
            target = arr["tendon_actuatorid"] if a["trntype"] == TrnType.TENDON else arr["jnt_actuatorid"]
            target[a["trnid"]] = i if target[a["trnid"]] == -1 else -2
        arr["actuator_acc0"] = np.zeros(nu)
        arr["actuator_length0"] = np.zeros(nu)
        arr["actuator_lengthrange"] = acol("lengthrange", 2)
        # history buffers [user, cursor, times (nsample), values (nsample)], one after the other
        arr["actuator_history"] = np.array([[a["nsample"], a["interp"]] for a in acts],
                                           dtype=np.int32).reshape(nu, 2)
        arr["actuator_historyadr"] = np.full(nu, -1, dtype=np.int32)
        nhistory = 0
        for i, a in enumerate(acts):
            if a["nsample"] > 0:
                arr["actuator_historyadr"][i] = nhistory
                nhistory += 2 + 2 * a["nsample"]
        arr["actuator_delay"] = acol("delay")  # the timestep is positive (options.py): buffers can start
        return dict(nu=int(ctrlnum.sum()), nactuator=nu, nout=nu, na=sum(a["actdim"] for a in self.actuators),
                    nhistory=nhistory)
