"""The third-party corpus: robot models (MJCF and URDF) from pinned PyPI wheels, and one check for each.

Every entry is a model MuJoCo 4.0 loads as published (a URDF with its ``package://`` mesh URIs
resolved, :func:`thirdparty.prepared_path`). :func:`check` loads it in MuJoCo and kinedyn and
compares, through the oracle's field registry, the compiled model, ``forward`` on a random and
on simulated states, and a short ``step`` rollout. tests/test_corpus.py asserts the outcome
against the tables below; bench/corpus.py prints it for every model.

A model kinedyn refuses is listed in :data:`REFUSED` with a fragment of its ``ModelError``; a model
that loads but differs from MuJoCo is listed in :data:`MISMATCHED` with a fragment of the first
report. An entry of either table that stops applying fails the test (the table must shrink as
kinedyn grows), so the tables always say exactly what is missing.
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from oracle import (
    ATOL,
    UNCOMPARED_STAGES,
    _sizes,
    assert_fields,
    assert_model_fields,
    live_part,
    mujoco_value,
    set_same_state,
    set_simulated_state,
    simulated_states,
)
from strategies import random_state
from thirdparty import PACKAGES, package_root, prepared_path

from kinedyn.engine.fields import DATA_FIELDS, MODEL_FIELDS


@dataclass(frozen=True)
class Entry:
    """One corpus model: ``name`` (the test id), its package (a key of thirdparty.PACKAGES), its
    path inside the unpacked wheel, and what it is. ``reference`` is "mujoco" (MuJoCo 4.0 loads it:
    everything is compared with MuJoCo), or "pinocchio" for a URDF MuJoCo refuses (a non-physical
    inertia, a mesh format it cannot read) and kinedyn loads as given: M and inverse dynamics are
    compared with Pinocchio's, and a short rollout must stay finite (:func:`check_pinocchio`)."""

    name: str
    package: str
    path: str
    kind: str
    reference: str = "mujoco"

    @property
    def format(self) -> str:
        return "URDF" if self.path.endswith(".urdf") else "MJCF"


_DMC = "dm_control/"
_GR = "gymnasium_robotics/envs/assets/"
_RS = "robosuite/models/assets/"
_MYO = "myosuite/simhive/myo_sim/"
_ERD = "cmeel.prefix/share/example-robot-data/robots/"
_MJL = "mjlab/asset_zoo/robots/"
_OA = "openarm_mujoco-2.3.0/v2/"

CORPUS: tuple[Entry, ...] = (
    # dm_control: the control suite, the locomotion walkers, the Kinova arm and hand
    Entry("dmc-acrobot", "dm-control", _DMC + "suite/acrobot.xml", "toy"),
    Entry("dmc-ball_in_cup", "dm-control", _DMC + "suite/ball_in_cup.xml", "toy"),
    Entry("dmc-cartpole", "dm-control", _DMC + "suite/cartpole.xml", "toy"),
    Entry("dmc-cheetah", "dm-control", _DMC + "suite/cheetah.xml", "planar walker"),
    Entry("dmc-dog", "dm-control", _DMC + "suite/dog.xml", "quadruped animal"),
    Entry("dmc-finger", "dm-control", _DMC + "suite/finger.xml", "finger"),
    Entry("dmc-fish", "dm-control", _DMC + "suite/fish.xml", "swimmer (fluid)"),
    Entry("dmc-hopper", "dm-control", _DMC + "suite/hopper.xml", "planar walker"),
    Entry("dmc-humanoid", "dm-control", _DMC + "suite/humanoid.xml", "humanoid"),
    Entry("dmc-humanoid_CMU", "dm-control", _DMC + "suite/humanoid_CMU.xml", "humanoid"),
    Entry("dmc-manipulator", "dm-control", _DMC + "suite/manipulator.xml", "planar arm"),
    Entry("dmc-pendulum", "dm-control", _DMC + "suite/pendulum.xml", "toy"),
    Entry("dmc-point_mass", "dm-control", _DMC + "suite/point_mass.xml", "toy"),
    Entry("dmc-quadruped", "dm-control", _DMC + "suite/quadruped.xml", "quadruped"),
    Entry("dmc-reacher", "dm-control", _DMC + "suite/reacher.xml", "planar arm"),
    Entry("dmc-swimmer", "dm-control", _DMC + "suite/swimmer.xml", "swimmer (fluid)"),
    Entry("dmc-walker", "dm-control", _DMC + "suite/walker.xml", "planar walker"),
    Entry("dmc-rodent", "dm-control", _DMC + "locomotion/walkers/assets/rodent.xml", "quadruped animal"),
    Entry("dmc-cmu_humanoid_2020", "dm-control", _DMC + "locomotion/walkers/assets/humanoid_CMU_V2020.xml",
          "humanoid"),
    Entry("dmc-dog_v2", "dm-control", _DMC + "locomotion/walkers/assets/dog_v2/dog.xml", "quadruped animal"),
    Entry("dmc-fruitfly", "dm-control", _DMC + "locomotion/walkers/assets/fruitfly_v2/fruitfly.xml",
          "insect"),
    Entry("dmc-jumping_ball", "dm-control",
          _DMC + "locomotion/walkers/assets/jumping_ball/jumping_ball_with_head.xml", "toy"),
    Entry("dmc-ant", "dm-control", _DMC + "third_party/ant/ant.xml", "quadruped"),
    Entry("dmc-jaco_arm", "dm-control", _DMC + "third_party/kinova/jaco_arm.xml", "arm"),
    Entry("dmc-jaco_hand", "dm-control", _DMC + "third_party/kinova/jaco_hand.xml", "gripper"),
    # gymnasium-robotics: Adroit and Shadow hands, Fetch, the Franka kitchen, the MuJoCo locomotion set
    Entry("gr-adroit_door", "gymnasium-robotics", _GR + "adroit_hand/adroit_door.xml", "hand"),
    Entry("gr-adroit_relocate", "gymnasium-robotics", _GR + "adroit_hand/adroit_relocate.xml", "hand"),
    Entry("gr-shadow_reach", "gymnasium-robotics", _GR + "hand/reach.xml", "hand"),
    Entry("gr-shadow_block_touch", "gymnasium-robotics", _GR + "hand/manipulate_block_touch_sensors.xml",
          "hand"),
    Entry("gr-fetch_pick_and_place", "gymnasium-robotics", _GR + "fetch/pick_and_place.xml", "mobile arm"),
    Entry("gr-kitchen_franka", "gymnasium-robotics",
          _GR + "kitchen_franka/kitchen_assets/kitchen_env_model.xml", "arm"),
    Entry("gr-ant", "gymnasium-robotics", "gymnasium_robotics/envs/mujoco/assets/ant.xml", "quadruped"),
    Entry("gr-humanoid", "gymnasium-robotics", "gymnasium_robotics/envs/mujoco/assets/humanoid.xml",
          "humanoid"),
    Entry("gr-pusher", "gymnasium-robotics", "gymnasium_robotics/envs/mujoco/assets/pusher.xml", "arm"),
    # robosuite: arms, a humanoid, a legged base, grippers and hands; two of its pybullet URDFs
    Entry("rs-baxter", "robosuite", _RS + "robots/baxter/robot.xml", "dual arm"),
    Entry("rs-gr1", "robosuite", _RS + "robots/gr1/robot.xml", "humanoid"),
    Entry("rs-iiwa", "robosuite", _RS + "robots/iiwa/robot.xml", "arm"),
    Entry("rs-jaco", "robosuite", _RS + "robots/jaco/robot.xml", "arm"),
    Entry("rs-kinova3", "robosuite", _RS + "robots/kinova3/robot.xml", "arm"),
    Entry("rs-panda", "robosuite", _RS + "robots/panda/robot.xml", "arm"),
    Entry("rs-sawyer", "robosuite", _RS + "robots/sawyer/robot.xml", "arm"),
    Entry("rs-spot", "robosuite", _RS + "robots/spot/robot.xml", "quadruped"),
    Entry("rs-spot_arm", "robosuite", _RS + "robots/spot_arm/robot.xml", "arm"),
    Entry("rs-tiago", "robosuite", _RS + "robots/tiago/robot.xml", "mobile manipulator"),
    Entry("rs-ur5e", "robosuite", _RS + "robots/ur5e/robot.xml", "arm"),
    Entry("rs-xarm7", "robosuite", _RS + "robots/xarm7/robot.xml", "arm"),
    Entry("rs-omron_base", "robosuite", _RS + "bases/omron_mobile_base.xml", "mobile base"),
    Entry("rs-panda_gripper", "robosuite", _RS + "grippers/panda_gripper.xml", "gripper"),
    Entry("rs-rethink_gripper", "robosuite", _RS + "grippers/rethink_gripper.xml", "gripper"),
    Entry("rs-robotiq_140", "robosuite", _RS + "grippers/robotiq_gripper_140.xml", "gripper"),
    Entry("rs-robotiq_s", "robosuite", _RS + "grippers/robotiq_gripper_s.xml", "gripper"),
    Entry("rs-jaco_three_finger", "robosuite", _RS + "grippers/jaco_three_finger_gripper.xml", "gripper"),
    Entry("rs-inspire_hand", "robosuite", _RS + "grippers/inspire_right_hand.xml", "hand"),
    Entry("rs-fourier_hand", "robosuite", _RS + "grippers/fourier_right_hand.xml", "hand"),
    Entry("rs-baxter_arm_urdf", "robosuite", _RS + "bullet_data/baxter_description/urdf/baxter_arm.urdf",
          "dual arm"),
    Entry("rs-panda_urdf", "robosuite", _RS + "bullet_data/panda_description/urdf/panda_arm_hand.urdf",
          "arm"),
    # myosuite: musculoskeletal models (muscles, tendons through wrapping geometry)
    Entry("myo-muscle", "myosuite", _MYO + "basic/myomuscle.xml", "musculoskeletal"),
    Entry("myo-elbow", "myosuite", _MYO + "elbow/myoelbow_2dof6muscles.xml", "musculoskeletal"),
    Entry("myo-elbow_exo", "myosuite", _MYO + "elbow/myoelbow_1dof6muscles_1dofexo.xml", "musculoskeletal"),
    Entry("myo-finger", "myosuite", _MYO + "finger/myofinger_v0.xml", "musculoskeletal"),
    Entry("myo-motorfinger", "myosuite", _MYO + "finger/motorfinger_v0.xml", "finger"),
    Entry("myo-hand", "myosuite", _MYO + "hand/myohand.xml", "musculoskeletal"),
    Entry("myo-arm", "myosuite", _MYO + "arm/myoarm.xml", "musculoskeletal"),
    Entry("myo-legs", "myosuite", _MYO + "leg/myolegs.xml", "musculoskeletal"),
    Entry("myo-torso", "myosuite", _MYO + "torso/myotorso.xml", "musculoskeletal"),
    Entry("myo-body", "myosuite", _MYO + "body/myobody.xml", "musculoskeletal"),
    # ... and a task scene of its environments: includes from four simhive folders (myosuite 3.0 names
    # their assets from the included files' folders, tests/test_include.py)
    Entry("myo-arm_bionic_bimanual", "myosuite-envs",
          "myosuite/envs/myo/assets/arm/myoarm_bionic_bimanual.xml", "musculoskeletal + prosthetic hand"),
    # example-robot-data (Gepetto/Pinocchio): ROS URDFs
    Entry("erd-a1", "example-robot-data", _ERD + "a1_description/urdf/a1.urdf", "quadruped"),
    Entry("erd-go2", "example-robot-data", _ERD + "go2_description/urdf/go2.urdf", "quadruped"),
    Entry("erd-laikago", "example-robot-data", _ERD + "laikago_description/urdf/laikago.urdf", "quadruped"),
    Entry("erd-solo12", "example-robot-data", _ERD + "solo_description/robots/solo12.urdf", "quadruped"),
    Entry("erd-bolt", "example-robot-data", _ERD + "bolt_description/robots/bolt.urdf", "biped"),
    Entry("erd-talos", "example-robot-data", _ERD + "talos_data/robots/talos_full_v2.urdf", "humanoid"),
    Entry("erd-g1", "example-robot-data", _ERD + "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
          "humanoid"),
    Entry("erd-simple_humanoid", "example-robot-data",
          _ERD + "simple_humanoid_description/urdf/simple_humanoid_classical.urdf", "humanoid"),
    Entry("erd-centauro", "example-robot-data", _ERD + "centauro_description/urdf/centauro.urdf",
          "legged manipulator"),
    Entry("erd-alex", "example-robot-data", _ERD + "alex_description/urdf/alex_sake_hands.urdf", "humanoid"),
    Entry("erd-tiago_pro", "example-robot-data", _ERD + "tiago_pro_description/robots/tiago_pro.urdf",
          "mobile manipulator"),
    Entry("erd-panda", "example-robot-data", _ERD + "panda_description/urdf/panda.urdf", "arm"),
    Entry("erd-ur5", "example-robot-data", _ERD + "ur_description/urdf/ur5_robot.urdf", "arm"),
    Entry("erd-ur10_limited", "example-robot-data",
          _ERD + "ur_description/urdf/ur10_joint_limited_robot.urdf", "arm"),
    Entry("erd-xarm7", "example-robot-data", _ERD + "xarm_description/urdf/xarm7.urdf", "arm"),
    Entry("erd-z1", "example-robot-data", _ERD + "z1_description/urdf/z1.urdf", "arm"),
    Entry("erd-so101", "example-robot-data", _ERD + "so_arm_description/urdf/so101.urdf", "arm"),
    Entry("erd-double_pendulum", "example-robot-data",
          _ERD + "double_pendulum_description/urdf/double_pendulum_continuous.urdf", "toy"),
    Entry("erd-iris", "example-robot-data", _ERD + "iris_description/robots/iris.urdf", "aerial"),
    # ... and those MuJoCo refuses, loaded as given (Pinocchio's M and RNE): one or more per cause
    *(Entry(f"erd-{name}", "example-robot-data", _ERD + path, kind, "pinocchio") for name, path, kind in (
        ("go1", "go1_description/urdf/go1.urdf", "quadruped"),          # not positive definite
        ("b1", "b1_description/urdf/b1.urdf", "quadruped"),
        ("anymal", "anymal_b_simple_description/robots/anymal.urdf", "quadruped"),
        ("hyq", "hyq_description/robots/hyq_no_sensors.urdf", "quadruped"),
        ("finger_edu", "finger_edu_description/robots/finger_edu.urdf", "finger"),
        ("tiago", "tiago_description/robots/tiago.urdf", "mobile manipulator"),
        ("allegro", "allegro_hand_description/urdf/allegro_left_hand.urdf", "hand"),  # A + B < C
        ("anymal_c", "anymal_c_simple_description/urdf/anymal.urdf", "quadruped"),
        ("pr2", "pr2_description/urdf/pr2.urdf", "mobile manipulator"),
        ("romeo_small", "romeo_description/urdf/romeo_small.urdf", "humanoid"),
        ("human", "human_description/robots/human.urdf", "humanoid"),  # moving bodies without mass
        ("romeo", "romeo_description/urdf/romeo.urdf", "humanoid"),
        ("alex_psyonic", "alex_description/urdf/alex_psyonic_hands.urdf", "humanoid"),  # a missing mimic
        ("alex_nub", "alex_description/urdf/alex_nub_hands.urdf", "humanoid"),  # a mesh without volume
    )),
    # mjlab's asset zoo (MuJoCo Menagerie derivatives), ALOHA, the HIL-SERL Panda, airo's URDFs
    Entry("mjlab-g1", "mjlab", _MJL + "unitree_g1/xmls/g1.xml", "humanoid"),
    Entry("mjlab-go1", "mjlab", _MJL + "unitree_go1/xmls/go1.xml", "quadruped"),
    Entry("mjlab-yam", "mjlab", _MJL + "i2rt_yam/xmls/yam.xml", "arm"),
    Entry("aloha-bimanual", "gym-aloha", "gym_aloha/assets/bimanual_viperx_transfer_cube.xml", "dual arm"),
    Entry("aloha-bimanual_mocap", "gym-aloha", "gym_aloha/assets/bimanual_viperx_end_effector_insertion.xml",
          "dual arm"),
    Entry("hil-panda", "gym-hil", "gym_hil/assets/panda.xml", "arm"),
    Entry("airo-ur3e", "airo-models", "airo_models/arms/ur3e/ur3e.urdf", "arm"),
    Entry("airo-ur5e", "airo-models", "airo_models/arms/ur5e/ur5e.urdf", "arm"),
    Entry("airo-robotiq_2f_85", "airo-models", "airo_models/grippers/robotiq_2f_85/urdf/robotiq_2f_85.urdf",
          "gripper"),
    # OpenArm (Enactic): bimanual arms on a pedestal and in a work cell, attached with an empty prefix
    Entry("openarm-bottle", "openarm-mujoco", _OA + "pedestal/bottle_scene.xml", "dual arm"),
    Entry("openarm-bottle_cell", "openarm-mujoco", _OA + "cell/bottle_cell_scene.xml", "dual arm"),
)
ENTRY = {e.name: e for e in CORPUS}
assert len(ENTRY) == len(CORPUS), "duplicate corpus names"
assert all(e.package in PACKAGES for e in CORPUS)

# Models kinedyn refuses today: name -> a fragment of its ModelError (case-sensitive). Shrink it as
# kinedyn grows: an entry that loads, or fails with another message, fails tests/test_corpus.py.
REFUSED: dict[str, str] = {
    **dict.fromkeys(('dmc-jaco_arm', 'dmc-jaco_hand'),
                    '<flag nativeccd="disable"/> selects MuJoCo\'s legacy libccd collider'),
}

# Models kinedyn loads but that differ from MuJoCo: name -> the first field the first mismatch report
# names (Outcome.first_field). An entry that now matches fails tests/test_corpus.py.
# ``python -m bench.corpus --tables`` prints both tables as a run finds them. cfrc_int's
# near-zero entries (a free tree's net force) are compared with oracle.CANCEL_FLOOR
# (dmc-cmu_humanoid_2020's cfrc_ext: 0 vs -2.7e-12, a contact normal's zero x off by 1e-16 after
# five steps, times a 2e4 force). rs-baxter_arm_urdf matches bit for bit (docs/corpus.md: its qacc
# was once 1.7e-12 off relative to the field). dmc-dog and dmc-dog_v2 match since session 12
# (MuJoCo 4.0's sparse Newton: its numeric factor, J' f and refactoring rule).
MISMATCHED: dict[str, str] = {
    # romeo's grippers are moving links without mass or inertia (loaded as given, as Pinocchio reads
    # them): M is singular, Pinocchio's M and RNE match, but forward dynamics is undefined and its
    # contacts blow up (NonFiniteStateWarning; from_urdf's mass_floor and inertia_floor repair it)
    "erd-romeo": "rollout",
}

# the work per model: forward on one random state and on SIMULATED states MuJoCo visits
# (SIM_STEPS steps apart), then ROLLOUT steps of kd.step from the last one compared with mj_step
SIMULATED, SIM_STEPS, ROLLOUT = 2, 25, 5


@dataclass
class Outcome:
    """What :func:`check` found for one entry."""

    entry: Entry
    loads: bool = False
    error: str = ""          # kinedyn's ModelError (first line), when it refused
    stage: str = ""          # where the first mismatch is: "model", "forward (random)", ... or ""
    report: str = ""         # the first mismatch report, "" when everything matched
    max_rel: float = 0.0     # largest field-relative error over every compared field and state (_max_rel)
    warnings: list[str] = field(default_factory=list)
    sizes: str = ""          # "nq/nv/nu" as MuJoCo compiled it
    seconds: float = 0.0

    @property
    def matches(self) -> bool:
        return self.loads and not self.report

    @property
    def first_field(self) -> str:
        """The first field the mismatch report names (``"cfrc_ext"``), or its first line."""
        lines = [ln.strip() for ln in self.report.splitlines() if ln.strip()]
        body = lines[1:] if len(lines) > 1 and "differ from MuJoCo" in lines[0] else lines
        return body[0].split(":")[0] if body else ""

    def summary(self) -> str:
        """One line: the refusal, or where and in which field the first mismatch is ("" if it matches)."""
        if not self.loads:
            return self.error
        if self.report:
            detail = [ln.strip() for ln in self.report.splitlines() if ln.strip()]
            return f"{self.stage}: {detail[1] if len(detail) > 1 else detail[0]}"
        return ""


def load_mujoco(entry: Entry, workdir: Path) -> tuple[Path, mujoco.MjModel]:
    """The file to load (a URDF with resolved meshes is written into ``workdir``) and MuJoCo's model."""
    path = prepared_path(package_root(entry.package) / entry.path, workdir)
    return path, mujoco.MjModel.from_xml_path(str(path))


def _max_rel(m, d, mjm, mjd, data: bool) -> float:
    """The largest error over the compared float fields, each relative to its field's largest entry
    (max |ours - mujoco| / max |mujoco|, differences under the 1e-12 floor ignored): round-off in
    a near-zero entry shows as round-off."""
    sizes = _sizes(m)
    if data:
        if (d.nefc, d.ncon) != (mjd.nefc, mjd.ncon):
            return float("inf")
        sizes["nefcmax"], sizes["nconmax"] = d.nefc, d.ncon
        specs = [s for s in DATA_FIELDS if s.mujoco and s.stage not in UNCOMPARED_STAGES]
        ours_obj, theirs_obj = d, mjd
    else:
        specs = [s for s in MODEL_FIELDS if s.mujoco]
        ours_obj, theirs_obj = m, mjm
    worst = 0.0
    for spec in specs:
        shape = spec.resolve(sizes)
        try:
            theirs = mujoco_value(theirs_obj, spec.name, shape)
        except ValueError:
            return float("inf")
        ours = np.asarray(getattr(ours_obj, spec.name))
        if data:
            ours, theirs = live_part(spec.name, ours, theirs, d, mjd)
        if ours.shape != theirs.shape:
            return float("inf")
        if ours.size == 0 or not np.issubdtype(theirs.dtype, np.floating):
            continue
        a, b = ours.astype(np.float64), theirs.astype(np.float64)
        finite = np.isfinite(a) & np.isfinite(b)
        if not np.array_equal(np.isfinite(a), np.isfinite(b)) or (a[~finite] != b[~finite]).any():
            return float("inf")
        err = float(np.abs(a[finite] - b[finite]).max(initial=0.0))
        if err > ATOL:  # below the oracle's absolute floor a difference is no error
            worst = max(worst, err / max(float(np.abs(b[finite]).max()), 1e-300))
    return worst


def check_pinocchio(entry: Entry, workdir: Path) -> Outcome:
    """A URDF MuJoCo refuses (``Entry.reference == "pinocchio"``): kinedyn loads it as given (its
    warnings recorded), its M and inverse dynamics are compared with Pinocchio's on two random
    states (pinocchio_ref, 1e-9), and ROLLOUT steps from qpos0 must stay finite. A model MuJoCo
    loads is reported (its reference is MuJoCo)."""
    from pinocchio_ref import assert_matches_pinocchio, pinocchio_ready

    import kinedyn as kd

    out = Outcome(entry)
    start = time.perf_counter()
    path = prepared_path(package_root(entry.package) / entry.path, workdir)
    try:
        mujoco.MjModel.from_xml_path(str(path))
    except ValueError:
        pass
    else:
        out.stage, out.report = "reference", "MuJoCo 4.0 loads it: list it with reference 'mujoco'"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = kd.Model.from_xml_path(path)
        out.warnings = [str(w.message).splitlines()[0] for w in caught]
    except Exception as err:  # noqa: BLE001 - a refusal or a crash: reported, never matching
        text = str(err).strip().splitlines()
        out.error = f"{type(err).__name__}: {text[0] if text else ''}"
        out.seconds = time.perf_counter() - start
        return out
    out.loads = True
    out.sizes = f"{m.nq}/{m.nv}/{m.nu}"
    try:
        out.max_rel = assert_matches_pinocchio(m, pinocchio_ready(path), nstate=2, seed=len(entry.name))
    except AssertionError as err:
        if not out.report:
            what = "qfrc_inverse" if "inverse dynamics" in str(err) else "M"
            out.stage, out.report = "pinocchio", f"{what}: differs from Pinocchio's: {str(err).strip()}"
        out.max_rel = float("inf")
    d = kd.Data(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(ROLLOUT):
            kd.step(m, d)
            if caught and not out.report:  # NonFiniteStateWarning: the state went non-finite and was reset
                out.stage = f"{ROLLOUT}-step rollout"
                out.report = f"rollout: step {k + 1}: {str(caught[0].message).splitlines()[0]}"
    out.seconds = time.perf_counter() - start
    return out


def check(entry: Entry, workdir: Path) -> Outcome:
    """Load ``entry`` in MuJoCo and kinedyn and compare them; never raises for a kinedyn mismatch.

    Raises :class:`thirdparty.Unavailable` when the package cannot be fetched, and MuJoCo's
    ValueError when MuJoCo refuses the model (the corpus only lists models MuJoCo loads, but for
    the URDFs whose reference is Pinocchio: :func:`check_pinocchio`).
    """
    import kinedyn as kd

    if entry.reference == "pinocchio":
        return check_pinocchio(entry, workdir)
    out = Outcome(entry)
    start = time.perf_counter()
    path, mjm = load_mujoco(entry, workdir)
    out.sizes = f"{mjm.nq}/{mjm.nv}/{mjm.nu}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = kd.Model.from_xml_path(path)
        out.warnings = [str(w.message).splitlines()[0] for w in caught]
    except kd.ModelError as err:
        out.error = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        out.seconds = time.perf_counter() - start
        return out
    except Exception as err:  # a crash, not a refusal: reported (and never matching a REFUSED fragment)
        text = str(err).strip().splitlines()
        out.error = f"crash: {type(err).__name__}: {text[0] if text else ''}"
        out.seconds = time.perf_counter() - start
        return out
    out.loads = True
    mjd = mujoco.MjData(mjm)
    d = kd.Data(m)

    def attempt(stage: str, compare, data: bool = True) -> None:
        try:
            compare()
        except AssertionError as err:
            if not out.report:
                out.stage, out.report = stage, str(err)
        out.max_rel = max(out.max_rel, _max_rel(m, d, mjm, mjd, data))

    attempt("model", lambda: assert_model_fields(m, mjm), data=False)
    rng = np.random.default_rng(sum(map(ord, entry.name)))
    qpos, qvel, ctrl, act = random_state(rng, mjm)

    def forward():
        kd.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        post()
        assert_fields(m, d, mjm, mjd)

    def post():  # MuJoCo runs mj_rnePostConstraint only on demand: both, for cacc, cfrc_int, cfrc_ext
        kd.rne_post_constraint(m, d)
        mujoco.mj_rnePostConstraint(mjm, mjd)

    try:
        set_same_state(m, d, mjm, mjd, qpos, qvel, ctrl, act)
        attempt("forward (random state)", forward)
        states = simulated_states(mjm, mjd, count=SIMULATED, steps=SIM_STEPS, seed=len(entry.name))
        for k, state in enumerate(states):
            set_simulated_state(d, mjd, state)
            attempt(f"forward (simulated state {k})", forward)

        def rollout():
            for _ in range(ROLLOUT):
                kd.step(m, d)
                mujoco.mj_step(mjm, mjd)
            post()
            assert_fields(m, d, mjm, mjd, names=("qpos", "qvel", "act"))
            assert_fields(m, d, mjm, mjd)

        set_simulated_state(d, mjd, states[-1])
        attempt(f"{ROLLOUT}-step rollout", rollout)
    except Exception as err:  # kinedyn raised while computing: a defect, reported as a mismatch
        if not out.report:
            out.stage, out.report = "exception", f"{type(err).__name__}: {err}"
        out.max_rel = float("inf")
    out.seconds = time.perf_counter() - start
    return out


def refusal_fragment(error: str) -> str:
    """The part of a ModelError that names the cause: up to where it says where (the first
    parenthesis naming a line), without advice after it (the table's fragment)."""
    where = re.search(r" \([^()]*\bline \d+[^()]*\)", error)
    return (error[:where.start()] if where else error).split(": add <")[0].strip()


def verdict(out: Outcome) -> str | None:
    """None when ``out`` is what the tables expect; else what is wrong (tests/test_corpus.py's message)."""
    name = out.entry.name
    if name in REFUSED:
        if out.loads:
            now = "and matches MuJoCo" if out.matches else f"but differs: {out.summary()}"
            return f"{name} now loads {now}: remove it from REFUSED in tests/corpus.py"
        if REFUSED[name] not in out.error:
            return f"{name} is refused for another reason: {out.error!r}; REFUSED expects {REFUSED[name]!r}"
        return None
    if not out.loads:
        return f"kinedyn refuses {name}: {out.error}"
    if name in MISMATCHED:
        if out.matches:
            return f"{name} now matches MuJoCo: remove it from MISMATCHED in tests/corpus.py"
        if out.first_field != MISMATCHED[name]:
            return (f"{name} differs in another field first: {out.summary()}; "
                    f"MISMATCHED expects {MISMATCHED[name]!r}")
        return None
    if out.report:
        reference = "Pinocchio" if out.entry.reference == "pinocchio" else "MuJoCo"
        return f"{name} differs from {reference} at {out.stage}:\n{out.report}"
    return None
