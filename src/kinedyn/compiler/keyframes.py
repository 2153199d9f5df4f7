"""The ``<keyframe>`` section and ``<size nkey>``: the key_* arrays (mjCKey::Compile).

Missing parts of a keyframe default to qpos0, zeros and the mocap bodies' poses; the
quaternions of ball and free joints and of mocap bodies are normalised as MuJoCo does; a
keyframe of an attached model (xml/expand.py) sets only the attached joints and actuators.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.compiler import frames as fr
from kinedyn.engine.data import plastic_reset
from kinedyn.engine.types import MINVAL, JointType
from kinedyn.xml.mjcf import Node, parse_ints, typed_attrs

# kinedyn's bound on a size that MuJoCo leaves to memory: beyond it compiling would take
# gigabytes (the arrays are allocated up front), so it is refused with a ModelError
MAX_KEYS = 100_000  # (actdim: actuators.MAX_ACTDIM)


class KeyframesMixin:
    """The Compiler's ``<keyframe>`` reader and arrays (see :class:`kinedyn.compiler.build.Compiler`)."""

    def _keyframes(self) -> None:
        """Every <key> of the <keyframe> sections, then the default keys <size nkey> adds."""
        for node in self.sections.get("keyframe", []):
            for key in node.children:
                if key.tag != "key" or key.children:
                    bad = key.children[0] if key.children else key
                    raise bad.error("Schema violation: unrecognized element")
                self.keys.append((key, typed_attrs(key)))
        # <size nkey="n">: MuJoCo pads the keyframes to n with default ones (qpos0, zeros)
        for node in self.sections.get("size", []):
            if node.children:
                raise node.children[0].error("Schema violation: unrecognized element")
            nkey = parse_ints(node, "nkey", node.attrib.get("nkey", ""))
            if len(nkey) > 1:
                raise node.error("attribute 'nkey' has too much data", "nkey")
            if nkey:
                if nkey[0] > MAX_KEYS:
                    raise node.error(f"nkey={nkey[0]}: kinedyn supports at most {MAX_KEYS} keyframes", "nkey")
                self.keys.extend((None, {}) for _ in range(nkey[0] - len(self.keys)))

    def _attached_key(self, node: Node, k: int, key_qpos, key_qvel, key_ctrl, jnt_qposadr,
                      jnt_dofadr) -> None:
        """A keyframe of an attached model (xml/expand.py): its values go to the attached joints
        and actuators; the rest keeps qpos0 / zeros (as mjs_attach places them)."""
        joints = {id(j.node): j.id for j in self.joints}
        # each actuator's first control (MuJoCo 4.0's actuator_ctrladr)
        ctrladr = np.cumsum([0] + [len(a["ctrlranges"]) for a in self.actuators])
        actuators = {id(node): int(ctrladr[i]) for i, node in enumerate(self.actuator_nodes)}
        for attr, dst, adrs in (("qpos", key_qpos, jnt_qposadr), ("qvel", key_qvel, jnt_dofadr)):
            for joint, values in node.attached_key.get(attr, []):
                if id(joint) not in joints:
                    raise node.error("keyframe of an attached model: its joint is not in the model", attr)
                adr = adrs[joints[id(joint)]]
                dst[k, adr:adr + len(values)] = values
        for actuator, value in node.attached_key.get("ctrl", []):
            if id(actuator) not in actuators:
                raise node.error("keyframe of an attached model: its actuator is not in the model", "ctrl")
            key_ctrl[k, actuators[id(actuator)]] = value

    def _keyframe_arrays(self, arr: dict, sizes: dict) -> dict[str, int]:
        """The key_* arrays into ``arr`` (after the tree's and the actuators': qpos0, the
        addresses, nu and na); their size."""
        joints = self.joints
        nq, nv, nu, na, nmocap = (sizes[k] for k in ("nq", "nv", "nu", "na", "nmocap"))
        qpos0 = arr["qpos0"]
        jnt_qposadr, jnt_dofadr = arr["jnt_qposadr"].tolist(), arr["jnt_dofadr"].tolist()
        mocap_bodies = [b for b in self.bodies if b.mocap]
        # keyframes (mjCKey::Compile): missing parts default to qpos0 / zeros
        nkey = len(self.keys)
        key_time, key_qpos = np.zeros(nkey), np.tile(qpos0, (nkey, 1)).reshape(nkey, nq)
        key_qvel, key_act, key_ctrl = np.zeros((nkey, nv)), np.zeros((nkey, na)), np.zeros((nkey, nu))
        # mocap poses default to the mocap bodies' body_pos and body_quat
        key_mpos = np.tile(np.array([b.pos for b in mocap_bodies], dtype=float).reshape(nmocap, 3),
                           (nkey, 1, 1))
        key_mquat = np.tile(np.array([b.quat for b in mocap_bodies], dtype=float).reshape(nmocap, 4),
                            (nkey, 1, 1))
        key_names = []
        # the plastic state a keyframe gives: its defaults need lengthspring, set later by set_const
        # (fill_key_plastic)
        nplastic = sizes["nplastic"]
        self.key_plastic_given = []
        for k, (node, a) in enumerate(self.keys):
            key_names.append(a.get("name", ""))
            if a.get("plastic"):
                if len(a["plastic"]) > nplastic:
                    raise node.error(f"keyframe '{a.get('name', '')}': invalid plastic size, expected "
                                     f"{nplastic}, got {len(a['plastic'])}", "plastic")
                self.key_plastic_given.append((k, list(a["plastic"])))
            key_time[k] = a.get("time", 0.0)
            for attr, dst, n in (("qpos", key_qpos, nq), ("qvel", key_qvel, nv), ("act", key_act, na),
                                 ("ctrl", key_ctrl, nu)):
                if attr in a and a[attr]:
                    # MuJoCo 4.0 pads a short vector with the defaults and refuses a long one
                    if len(a[attr]) > n:
                        raise node.error(f"keyframe '{a.get('name', '')}': invalid {attr} size, expected "
                                         f"{n}, got {len(a[attr])}", attr)
                    dst[k, :len(a[attr])] = a[attr]
            if node is not None and node.attached_key is not None:
                self._attached_key(node, k, key_qpos, key_qvel, key_ctrl, jnt_qposadr, jnt_dofadr)
            for attr, dst, width in (("mpos", key_mpos, 3), ("mquat", key_mquat, 4)):
                if attr in a and a[attr]:
                    # a short vector sets the leading mocap bodies it covers whole (the others keep
                    # their body pose); a long one is refused
                    if len(a[attr]) > width * nmocap:
                        raise node.error(f"keyframe '{a.get('name', '')}': invalid {attr} size, expected "
                                         f"{width * nmocap}, got {len(a[attr])}", attr)
                    whole = len(a[attr]) // width
                    dst[k, :whole] = np.reshape(a[attr][:whole * width], (whole, width))
        # mjuu_normvec on the keyframes' mocap quaternions (a tiny one is left as it is)
        for quats in key_mquat:
            for q in quats:
                fr.normvec(q)
        # MuJoCo normalises the quaternions of ball and free joints in keyframes (mju_normalize4)
        for j in joints:
            if j.type in (JointType.FREE, JointType.BALL):
                adr = jnt_qposadr[j.id] + (3 if j.type == JointType.FREE else 0)
                for k in range(nkey):
                    q = key_qpos[k, adr:adr + 4]
                    norm = math.sqrt(float(q @ q))
                    if norm < MINVAL:
                        key_qpos[k, adr:adr + 4] = (1.0, 0.0, 0.0, 0.0)
                    elif abs(norm - 1) > MINVAL:
                        key_qpos[k, adr:adr + 4] = q / norm
        arr.update(key_time=key_time, key_qpos=key_qpos, key_qvel=key_qvel, key_act=key_act,
                   key_ctrl=key_ctrl, key_mpos=key_mpos, key_mquat=key_mquat,
                   key_plastic=np.zeros((nkey, nplastic)))
        self.key_names = key_names
        return dict(nkey=nkey)


def fill_key_plastic(model, compiler) -> None:
    """key_plastic after set_const: each keyframe's plastic state defaults to the state at reset
    (qpos_spring, the resolved tendon_lengthspring); a short vector sets the leading entries."""
    for k in range(model.nkey):
        plastic_reset(model, model.key_plastic[k])
    for k, values in compiler.key_plastic_given:
        model.key_plastic[k, :len(values)] = values
