"""The field registry: every array of ``Model`` and ``Data``, declared once.

Each :class:`FieldSpec` gives a field's MuJoCo name, its symbolic shape (sizes
such as ``"nbody"`` are resolved against the model), its dtype, a one-line doc
and the pipeline stage that writes it. This one table drives

* allocation of ``Model`` and ``Data`` arrays,
* shape-checked assignment (``d.qpos = ...`` with a wrong shape raises),
* the field reference in the docs (``docs/fields.md`` is generated from it),
* the MuJoCo comparison tests, which walk the registry so that a new field is
  compared automatically.

Shapes are NumPy's natural ones: MuJoCo's ``xmat (nbody x 9)`` is ``(nbody, 3, 3)``
here. Spatial vectors are ordered [rotation; translation] as in MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F = np.float64
F32 = np.float32  # MuJoCo's float fields (visual parameters of cameras and lights)
I = np.int32  # noqa: E741  (short alias keeps the table readable)
B = np.uint8


@dataclass(frozen=True)
class FieldSpec:
    """One array field of Model or Data.

    Attributes:
      name: MuJoCo's field name.
      shape: tuple of size names (``"nbody"``) and ints.
      dtype: NumPy dtype.
      doc: one line: what the field holds, with its layout when not obvious.
      stage: for Data, the stage that writes it ("state" for user inputs,
        "position", "velocity", "actuation", "acceleration", "constraint", "inverse",
        "rnepost" for the post-constraint body forces of ``rne_post_constraint``, "sensor" for
        sensordata and what sensors compute on demand,
        "scratch"); for Model, "model".
      mujoco: whether MuJoCo 4.0 exposes a field of this name with these values
        (the comparison tests check exactly these).
    """

    name: str
    shape: tuple
    dtype: type
    doc: str
    stage: str = "model"
    mujoco: bool = True

    def resolve(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """Concrete shape for the given sizes."""
        return tuple(sizes[s] if isinstance(s, str) else s for s in self.shape)


def _m(name, shape, dtype, doc, mujoco=True):
    return FieldSpec(name, shape, dtype, doc, "model", mujoco)


# sizes every model carries; nC is the number of non-zeros of the tree-sparse M, neq the number of
# equality constraints, nefcmax the capacity of the constraint-row arrays (efc_*; kinedyn's, see
# engine.constraint.efc_capacity: MuJoCo sizes them dynamically in its arena)
SIZE_NAMES = ("nq", "nv", "nu", "nactuator", "nout", "na", "nbody", "njnt", "ngeom", "nsite", "ntendon",
              "nwrap", "nkey", "nC", "neq", "npair", "nexclude", "nconmax", "nefcmax", "nefcdual", "nccd",
              "nccdint", "nsensor", "nsensordata", "nmesh", "nmeshvert", "nmeshface", "nmeshgraph",
              "nmeshpoly", "nmeshpolyvert", "nmeshpolymap", "nhfield", "nhfielddata", "nmocap", "ncam",
              "nlight", "nhistory", "nflex", "nflexvert", "nflexedge", "nflexelem", "nflexelemdata",
              "nflexelemedge", "nflexstiffness", "nflexbending", "ntree", "nplastic")
# sizes whose values are kinedyn's (not compared with MuJoCo's, which sizes its arena
# dynamically): the capacities of the contact and row arrays (compiler.contacts), nefcdual the
# rows of the dual solvers' dense matrix (nefcmax for models that use PGS or noslip, else 0), and
# nccd / nccdint the convex collider's scratch
KINEDYN_SIZES = ("nconmax", "nefcmax", "nefcdual", "nccd", "nccdint")

MODEL_FIELDS: tuple[FieldSpec, ...] = (
    # default state
    _m("qpos0", ("nq",), F, "qpos at the reference configuration"),
    _m("qpos_spring", ("nq",), F, "qpos at which joint springs are at rest (springref)"),
    # bodies, in topological order: parent index < child index, body 0 is the world
    _m("body_parentid", ("nbody",), I, "id of the parent body"),
    _m("body_rootid", ("nbody",), I, "id of the root of the body's tree (child of world)"),
    _m("body_weldid", ("nbody",), I, "id of the body this body is welded to (itself if it has joints)"),
    _m("body_jntnum", ("nbody",), I, "number of joints of the body"),
    _m("body_jntadr", ("nbody",), I, "first joint of the body; -1 if none"),
    _m("body_dofnum", ("nbody",), I, "number of dofs of the body"),
    _m("body_dofadr", ("nbody",), I, "first dof of the body; -1 if none"),
    _m("body_geomnum", ("nbody",), I, "number of geoms of the body"),
    _m("body_geomadr", ("nbody",), I, "first geom of the body; -1 if none"),
    _m("body_contype", ("nbody",), I, "OR of the body's geom contypes"),
    _m("body_conaffinity", ("nbody",), I, "OR of the body's geom conaffinities"),
    _m("body_margin", ("nbody",), F, "max over the body's geoms of margin + gap"),
    _m("body_pos", ("nbody", 3), F, "position offset relative to the parent body frame"),
    _m("body_quat", ("nbody", 4), F, "orientation offset relative to the parent body frame (w, x, y, z)"),
    _m("body_ipos", ("nbody", 3), F, "centre of mass in the body frame"),
    _m("body_iquat", ("nbody", 4), F, "principal inertia frame relative to the body frame"),
    _m("body_mass", ("nbody",), F, "mass"),
    _m("body_subtreemass", ("nbody",), F, "mass of the body and all its descendants"),
    _m("body_inertia", ("nbody", 3), F, "diagonal inertia in the principal frame (body_iquat)"),
    _m("body_sameframe", ("nbody",), B, "inertial frame equals the body frame (SameFrame)"),
    _m("body_gravcomp", ("nbody",), F, "gravity compensation: fraction of the body's weight cancelled"),
    _m("body_mocapid", ("nbody",), I, "id of the body's mocap pose (Data.mocap_pos, mocap_quat); -1 if none"),
    _m("body_invweight0", ("nbody", 2), F,
       "mean inverse inertia at qpos0, [translation, rotation] (mj_setConst; scales constraint rows)"),
    # joints
    _m("jnt_type", ("njnt",), I, "joint type (JointType)"),
    _m("jnt_qposadr", ("njnt",), I, "first qpos of the joint"),
    _m("jnt_dofadr", ("njnt",), I, "first dof of the joint"),
    _m("jnt_bodyid", ("njnt",), I, "body the joint belongs to"),
    _m("jnt_group", ("njnt",), I, "group, for visualisation and selection"),
    _m("jnt_limited", ("njnt",), B, "whether the joint range is a limit"),
    _m("jnt_actfrclimited", ("njnt",), B, "whether the summed actuator force is clamped to jnt_actfrcrange"),
    _m("jnt_actgravcomp", ("njnt",), B,
       "the gravity compensation of the joint's dofs is applied by actuators (qfrc_actuator)"),
    _m("jnt_pos", ("njnt", 3), F, "anchor position in the body frame"),
    _m("jnt_axis", ("njnt", 3), F, "axis in the body frame (unit)"),
    _m("jnt_stiffness", ("njnt",), F, "spring stiffness (the linear coefficient a)"),
    _m("jnt_springyield", ("njnt",), F,
       "plastic yield of the spring: the largest displacement it holds (0: elastic)"),
    _m("jnt_plasticadr", ("njnt",), I, "address of the joint's spring reference in plastic (-1: elastic)"),
    _m("jnt_stiffnesspoly", ("njnt", 2), F,
       "higher-order stiffness coefficients [b, c]: spring force -(a x + b x^2 + c x^3)"),
    _m("jnt_actuatorid", ("njnt",), I,
       "actuator adding damping or armature to the joint: -1 none, -2 several (scan the actuators)"),
    _m("jnt_range", ("njnt", 2), F, "joint range (radians or metres)"),
    _m("jnt_actfrcrange", ("njnt", 2), F, "range of the summed actuator force on the joint"),
    _m("jnt_margin", ("njnt",), F, "the limit row is active when the distance to the limit is below this"),
    _m("jnt_solref", ("njnt", 2), F, "limit constraint solref (solreflimit)"),
    _m("jnt_solimp", ("njnt", 5), F, "limit constraint solimp (solimplimit)"),
    # dofs
    _m("dof_bodyid", ("nv",), I, "body the dof belongs to"),
    _m("dof_jntid", ("nv",), I, "joint the dof belongs to"),
    _m("dof_parentid", ("nv",), I, "parent dof in the tree; -1 at a root"),
    _m("dof_armature", ("nv",), F, "rotor inertia added to the diagonal of M"),
    _m("dof_damping", ("nv",), F, "viscous damping coefficient (the linear coefficient a)"),
    _m("dof_dampingpoly", ("nv", 2), F,
       "higher-order damping coefficients [b, c]: damper force -(a v + b v abs(v) + c v^3)"),
    _m("dof_frictionloss", ("nv",), F, "dry friction: a friction-loss constraint row per dof"),
    _m("dof_solref", ("nv", 2), F, "friction-loss constraint solref (the joint's solreffriction)"),
    _m("dof_solimp", ("nv", 5), F, "friction-loss constraint solimp (the joint's solimpfriction)"),
    _m("dof_invweight0", ("nv",), F, "inverse inertia of the dof's joint at qpos0 (mj_setConst)"),
    _m("dof_simplenum", ("nv",), I,
       "> 0 for a dof of a simple body (the consecutive simple dofs from it on): M holds only its diagonal"),
    _m("dof_M0", ("nv",), F, "M's diagonal at qpos0, armature included (mj_setM0): a simple dof's M"),
    # kinematic trees: the dof trees under the world (a tree starts at each dof without a parent);
    # the unit sleeping works on (mjModel's tree_*)
    _m("body_treeid", ("nbody",), I, "tree of the body's weld group; -1 for bodies without dofs there"),
    _m("dof_treeid", ("nv",), I, "tree the dof belongs to"),
    _m("tree_bodyadr", ("ntree",), I, "first body of the tree"),
    _m("tree_bodynum", ("ntree",), I, "number of bodies of the tree"),
    _m("tree_dofadr", ("ntree",), I, "first dof of the tree"),
    _m("tree_dofnum", ("ntree",), I, "number of dofs of the tree"),
    _m("dof_length", ("nv",), F,
       "length scale of the dof: 1 if translational, else its body's size at qpos0 (mj_setConst)"),
    _m("tree_sleep_policy", ("ntree",), I,
       "sleep policy (SleepPolicy): the root body's sleep=, else the compiler's AUTO_NEVER/AUTO_ALLOWED"),
    # tree-sparse mass matrix layout (MuJoCo 4.0 CSR: row i holds i's ancestor dofs, diagonal last)
    _m("M_rownnz", ("nv",), I, "non-zeros in row i of the lower triangle of M"),
    _m("M_rowadr", ("nv",), I, "start of row i in M and qLD"),
    _m("M_colind", ("nC",), I, "column of each non-zero of M (ascending within a row)"),
    # geoms
    _m("geom_type", ("ngeom",), I, "geom type (GeomType)"),
    _m("geom_contype", ("ngeom",), I, "contact type bits"),
    _m("geom_conaffinity", ("ngeom",), I, "contact affinity bits"),
    _m("geom_condim", ("ngeom",), I, "contact dimensionality (1, 3, 4, 6)"),
    _m("geom_bodyid", ("ngeom",), I, "body the geom belongs to"),
    _m("geom_group", ("ngeom",), I, "group"),
    _m("geom_size", ("ngeom", 3), F, "type-specific size parameters"),
    _m("geom_pos", ("ngeom", 3), F, "position in the body frame"),
    _m("geom_quat", ("ngeom", 4), F, "orientation in the body frame"),
    _m("geom_sameframe", ("ngeom",), B, "geom frame equals the body or inertial frame (SameFrame)"),
    _m("geom_friction", ("ngeom", 3), F, "sliding, torsional, rolling friction"),
    _m("geom_priority", ("ngeom",), I, "contact priority: the higher geom's parameters win"),
    _m("geom_solmix", ("ngeom",), F, "weight of this geom's solref/solimp when mixing equal priorities"),
    _m("geom_solref", ("ngeom", 2), F, "contact solref"),
    _m("geom_solimp", ("ngeom", 5), F, "contact solimp"),
    _m("geom_margin", ("ngeom",), F, "contact force is generated within this distance (summed per pair)"),
    _m("geom_gap", ("ngeom",), F, "contacts are detected (without force) up to margin + gap"),
    _m("geom_adhesion", ("ngeom",), F, "adhesive force of this geom's contacts (summed per pair)"),
    _m("geom_alpha", ("ngeom",), F, "opacity: the alpha of the geom's material if it has one, else of its "
       "rgba (mj_ray skips geoms at 0)", mujoco=False),
    _m("geom_rbound", ("ngeom",), F, "radius of the bounding sphere about the geom centre; 0 for planes"),
    _m("geom_aabb", ("ngeom", 6), F, "bounding box in the geom frame: centre, half-sizes"),
    _m("geom_fluid", ("ngeom", 12), F,
       "ellipsoid fluid model: [on, blunt drag, slender drag, angular drag, Kutta lift, Magnus lift, "
       "virtual mass (3), virtual inertia (3)]; all zero: the body's inertia box is used"),
    _m("geom_dataid", ("ngeom",), I, "mesh id of a mesh geom, hfield id of an hfield geom, else -1"),
    # meshes (compiler.mesh): vertices re-centred at the centre of mass and turned to the
    # principal axes; the convex hull graph in MuJoCo's layout and order (qhull's own)
    _m("mesh_vertadr", ("nmesh",), I, "first vertex of the mesh in mesh_vert"),
    _m("mesh_vertnum", ("nmesh",), I, "number of vertices"),
    _m("mesh_faceadr", ("nmesh",), I, "first face of the mesh in mesh_face"),
    _m("mesh_facenum", ("nmesh",), I, "number of faces"),
    _m("mesh_graphadr", ("nmesh",), I, "start of the convex hull graph in mesh_graph; -1 if none"),
    _m("mesh_vert", ("nmeshvert", 3), F, "vertex positions in the mesh frame (float32 values)"),
    _m("mesh_face", ("nmeshface", 3), I, "vertex indices of the triangles (local to the mesh)"),
    _m("mesh_graph", ("nmeshgraph",), I, "convex hulls: numvert, numface, vert_edgeadr, vert_globalid, "
       "edge_localid, face_globalid"),
    _m("mesh_extrema", ("nmesh", 27), I, "hull vertex (local id in mesh_graph) farthest along each of the "
       "27 directions (-1, 0, 1)^3, the seeds of the hill-climbing support; 0 without a hull"),
    # the hull's faces merged into polygons, in MuJoCo's (hash map) order
    _m("mesh_polyadr", ("nmesh",), I, "first polygon of the mesh"),
    _m("mesh_polynum", ("nmesh",), I, "number of hull polygons"),
    _m("mesh_polyvertadr", ("nmeshpoly",), I, "first vertex of the polygon in mesh_polyvert"),
    _m("mesh_polyvertnum", ("nmeshpoly",), I, "number of vertices of the polygon"),
    _m("mesh_polyvert", ("nmeshpolyvert",), I, "vertex ids (local to the mesh) of the polygons, in order"),
    _m("mesh_polynormal", ("nmeshpoly", 3), F, "outward unit normal of the polygon (mesh frame)"),
    _m("mesh_polymapadr", ("nmeshvert",), I, "first entry of the vertex in mesh_polymap"),
    _m("mesh_polymapnum", ("nmeshvert",), I, "number of polygons the vertex belongs to"),
    _m("mesh_polymap", ("nmeshpolymap",), I, "polygons (local to the mesh) each vertex belongs to"),
    _m("mesh_scale", ("nmesh", 3), F, "scale applied to the source vertices"),
    _m("mesh_pos", ("nmesh", 3), F, "translation applied to the source vertices (their centre of mass)"),
    _m("mesh_quat", ("nmesh", 4), F, "rotation applied to the source vertices (their principal axes)"),
    # height fields (compiler.hfield): nrow x ncol elevations in [0, 1], row-major, row 0 at
    # y = -size[1]; elevation e stands at e * size[2], the solid reaches down to -size[3]
    _m("hfield_size", ("nhfield", 4), F, "(radius_x, radius_y, elevation_z, base_z)"),
    _m("hfield_nrow", ("nhfield",), I, "number of rows (along y)"),
    _m("hfield_ncol", ("nhfield",), I, "number of columns (along x)"),
    _m("hfield_adr", ("nhfield",), I, "first elevation of the field in hfield_data"),
    _m("hfield_data", ("nhfielddata",), F, "elevations normalised to [0, 1] (float32 values)"),
    # explicit contact pairs (<contact><pair>), sorted by body-pair signature
    _m("pair_dim", ("npair",), I, "contact dimensionality"),
    _m("pair_geom1", ("npair",), I, "first geom (the one on the lower-id body)"),
    _m("pair_geom2", ("npair",), I, "second geom"),
    _m("pair_signature", ("npair",), I, "body1 << 16 + body2"),
    _m("pair_solref", ("npair", 2), F, "solref of the normal direction"),
    _m("pair_solreffriction", ("npair", 2), F, "solref of the friction directions (0 0: pair_solref)"),
    _m("pair_solimp", ("npair", 5), F, "solimp"),
    _m("pair_margin", ("npair",), F, "margin"),
    _m("pair_gap", ("npair",), F, "gap"),
    _m("pair_adhesion", ("npair",), F, "adhesive force"),
    _m("pair_friction", ("npair", 5), F, "tangent 1, tangent 2, spin, roll 1, roll 2 friction"),
    _m("exclude_signature", ("nexclude",), I, "excluded body pairs: body1 << 16 + body2, sorted"),
    # sites
    _m("site_type", ("nsite",), I, "geom type used to draw the site"),
    _m("site_bodyid", ("nsite",), I, "body the site belongs to"),
    _m("site_group", ("nsite",), I, "group"),
    _m("site_size", ("nsite", 3), F, "site size"),
    _m("site_pos", ("nsite", 3), F, "position in the body frame"),
    _m("site_quat", ("nsite", 4), F, "orientation in the body frame"),
    _m("site_sameframe", ("nsite",), B, "site frame equals the body or inertial frame (SameFrame)"),
    # tendons (fixed, and spatial through sites and pulleys); the path of tendon i is wrap_* [adr, adr + num)
    _m("tendon_adr", ("ntendon",), I, "first wrap object of the tendon's path"),
    _m("tendon_num", ("ntendon",), I, "number of wrap objects in the path"),
    _m("tendon_group", ("ntendon",), I, "group"),
    _m("tendon_limited", ("ntendon",), B, "whether the tendon length range is a limit"),
    _m("tendon_actfrclimited", ("ntendon",), B, "whether the summed actuator force is clamped"),
    _m("tendon_range", ("ntendon", 2), F, "tendon length range"),
    _m("tendon_actfrcrange", ("ntendon", 2), F, "range of the summed actuator force on the tendon"),
    _m("tendon_margin", ("ntendon",), F,
       "the limit row is active when the distance to the limit is below this"),
    _m("tendon_solref_lim", ("ntendon", 2), F, "limit constraint solref (solreflimit)"),
    _m("tendon_solimp_lim", ("ntendon", 5), F, "limit constraint solimp (solimplimit)"),
    _m("tendon_solref_fri", ("ntendon", 2), F, "friction-loss constraint solref (solreffriction)"),
    _m("tendon_solimp_fri", ("ntendon", 5), F, "friction-loss constraint solimp (solimpfriction)"),
    _m("tendon_invweight0", ("ntendon",), F, "inverse inertia of the tendon at qpos0 (mj_setConst)"),
    _m("tendon_actuatorid", ("ntendon",), I,
       "actuator adding damping or armature to the tendon: -1 none, -2 several (scan the actuators)"),
    _m("tendon_stiffness", ("ntendon",), F, "spring stiffness (the linear coefficient a)"),
    _m("tendon_springyield", ("ntendon",), F,
       "plastic yield of the spring beyond its deadband (0: elastic)"),
    _m("tendon_plasticadr", ("ntendon",), I,
       "address of the tendon's deadband pair in plastic (-1: elastic)"),
    _m("tendon_stiffnesspoly", ("ntendon", 2), F,
       "higher-order stiffness coefficients [b, c]: spring force -(a x + b x^2 + c x^3)"),
    _m("tendon_damping", ("ntendon",), F, "viscous damping coefficient (the linear coefficient a)"),
    _m("tendon_dampingpoly", ("ntendon", 2), F,
       "higher-order damping coefficients [b, c]: damper force -(a v + b v abs(v) + c v^3)"),
    _m("tendon_armature", ("ntendon",), F, "inertia of the tendon's velocity: armature ten_J'ten_J in M"),
    _m("tendon_frictionloss", ("ntendon",), F, "dry friction: a friction-loss constraint row"),
    _m("tendon_lengthspring", ("ntendon", 2), F,
       "spring rest-length deadband [low, high]; the length at qpos_spring when not given"),
    _m("tendon_length0", ("ntendon",), F, "tendon length at qpos0"),
    _m("wrap_type", ("nwrap",), I,
       "wrap object type (WrapType: JOINT on fixed paths; SITE, PULLEY, SPHERE, CYLINDER on spatial ones)"),
    _m("wrap_objid", ("nwrap",), I,
       "wrap object id (joint of a fixed tendon; site or geom of a spatial one; -1 for a pulley)"),
    _m("wrap_prm", ("nwrap",), F,
       "wrap parameter (a fixed tendon's joint coefficient; a pulley's divisor; a geom's side site or -1)"),
    # actuators (every transmission)
    _m("actuator_trntype", ("nactuator",), I, "transmission type (TrnType)"),
    _m("actuator_dyntype", ("nactuator",), I, "activation dynamics type (DynType)"),
    _m("actuator_gaintype", ("nactuator",), I, "gain type (GainType)"),
    _m("actuator_biastype", ("nactuator",), I, "bias type (BiasType)"),
    _m("actuator_trnid", ("nactuator", 2), I,
       "transmission target ids (joint/tendon/site, refsite or slider)"),
    _m("actuator_actadr", ("nactuator",), I, "first activation of the actuator; -1 if stateless"),
    _m("actuator_actnum", ("nactuator",), I, "number of activations"),
    # MuJoCo 4.0's control and force-output blocks (nu = sum of ctrlnum; one output per actuator here)
    _m("actuator_ctrladr", ("nactuator",), I, "first control of the actuator in ctrl"),
    _m("actuator_ctrlnum", ("nactuator",), I, "number of controls"),
    _m("actuator_ctrlspec", ("nactuator",), I,
       "input signature (bits of mjtCtrlInput: 1 pos, 2 vel, 4 ff, 8 voltage, 16 none, 32 pressure)"),
    _m("actuator_outadr", ("nactuator",), I, "first force output of the actuator"),
    _m("actuator_outnum", ("nactuator",), I, "number of force outputs"),
    _m("actuator_group", ("nactuator",), I, "group"),
    _m("actuator_ctrllimited", ("nu",), B, "whether ctrl is clamped to ctrlrange"),
    _m("actuator_forcelimited", ("nactuator",), B, "whether the force is clamped to forcerange"),
    _m("actuator_actlimited", ("nactuator",), B, "whether act is clamped to actrange"),
    _m("actuator_dynprm", ("nactuator", 10), F, "activation dynamics parameters"),
    _m("actuator_gainprm", ("nactuator", 10), F, "gain parameters"),
    _m("actuator_biasprm", ("nactuator", 10), F, "bias parameters"),
    _m("actuator_actearly", ("nactuator",), B, "use the next activation to compute the force"),
    _m("actuator_ctrlrange", ("nu", 2), F, "control range"),
    _m("actuator_forcerange", ("nactuator", 2), F, "force range"),
    _m("actuator_actrange", ("nactuator", 2), F, "activation range"),
    _m("actuator_gear", ("nactuator", 6), F, "transmission gear (scales length, moment and force)"),
    _m("actuator_cranklength", ("nactuator",), F, "slider-crank rod length"),
    _m("actuator_damping", ("nactuator",), F,
       "damping added to the joint or tendon target, times gear[0]^2 (the linear coefficient)"),
    _m("actuator_dampingpoly", ("nactuator", 2), F, "its higher-order coefficients, as dof_dampingpoly"),
    _m("actuator_armature", ("nactuator",), F, "armature added to the joint target, times gear[0]^2"),
    _m("actuator_acc0", ("nactuator",), F, "acceleration from a unit force at qpos0"),
    _m("actuator_length0", ("nactuator",), F, "actuator length at qpos0"),
    _m("actuator_lengthrange", ("nactuator", 2), F, "feasible range of the actuator length"),
    # control history buffers and delays (engine.history; MuJoCo 4.0's actuator nsample/interp/delay)
    _m("actuator_history", ("nactuator", 2), I,
       "history buffer: [nsample, interp (0 zoh, 1 linear, 2 cubic)]"),
    _m("actuator_historyadr", ("nactuator",), I,
       "address of the actuator's buffer in Data.history; -1: none"),
    _m("actuator_delay", ("nactuator",), F, "delay of the control in seconds; 0: ctrl is used as it is"),
    # equality constraints
    _m("eq_type", ("neq",), I, "constraint type (EqType: connect, weld, joint, tendon)"),
    _m("eq_obj1id", ("neq",), I, "first object: body or site (connect, weld), joint, tendon"),
    _m("eq_obj2id", ("neq",), I, "second object; -1 for none (joint, tendon) or the world body"),
    _m("eq_objtype", ("neq",), I, "type of both objects (ObjType: BODY or SITE for connect and weld)"),
    _m("eq_active0", ("neq",), B, "initial value of Data.eq_active"),
    _m("eq_solref", ("neq", 2), F, "constraint solref"),
    _m("eq_solimp", ("neq", 5), F, "constraint solimp"),
    _m("eq_data", ("neq", 12), F,
       "numeric data: connect [anchor1, anchor2]; weld [anchor2, anchor1, relpose quat, torquescale, "
       "relpose computed]; joint and tendon: polynomial coefficients"),
    # flexes (compiler.flexes; engine.smooth_flex): without elasticity or collisions
    _m("flex_dim", ("nflex",), I, "dimension: 1 (cable), 2 (cloth) or 3 (soft body)"),
    _m("flex_vertadr", ("nflex",), I, "first vertex of the flex"),
    _m("flex_vertnum", ("nflex",), I, "number of vertices"),
    _m("flex_edgeadr", ("nflex",), I, "first edge of the flex"),
    _m("flex_edgenum", ("nflex",), I, "number of edges"),
    _m("flex_contype", ("nflex",), I, "contact type (0: flex collisions are not built)"),
    _m("flex_conaffinity", ("nflex",), I, "contact affinity (0: flex collisions are not built)"),
    _m("flex_edgeequality", ("nflex",), I, "1 when an <equality><flex> constrains the edge lengths"),
    _m("flex_edgestiffness", ("nflex",), F, "edge spring stiffness"),
    _m("flex_edgedamping", ("nflex",), F, "edge damping"),
    _m("flex_rigid", ("nflex",), B, "all vertices in one body: no edge forces or rows"),
    _m("flex_vertbodyid", ("nflexvert",), I, "body of each vertex"),
    _m("flex_vert", ("nflexvert", 3), F, "vertex position in its body's frame (0: the body's origin)"),
    _m("flex_edge", ("nflexedge", 2), I, "the two vertices of each edge (flex-local ids)"),
    _m("flexedge_rigid", ("nflexedge",), B, "both vertices welded to one body: no force, no row"),
    _m("flexedge_length0", ("nflexedge",), F, "edge length at qpos0 (mj_setConst)"),
    _m("flexedge_invweight0", ("nflexedge",), F, "inverse inertia of the edge at qpos0 (mj_setConst)"),
    _m("flex_elemadr", ("nflex",), I, "first element of the flex"),
    _m("flex_elemnum", ("nflex",), I, "number of elements"),
    _m("flex_elemdataadr", ("nflex",), I, "first entry of the flex's elements in flex_elem"),
    _m("flex_elemedgeadr", ("nflex",), I, "first entry of the flex's elements in flex_elemedge"),
    _m("flex_elem", ("nflexelemdata",), I, "element vertex ids, dim + 1 per element (flex-local)"),
    _m("flex_elemedge", ("nflexelemedge",), I, "element edge ids, 1, 3 or 6 (dim 1, 2, 3) per element"),
    _m("flex_stiffnessadr", ("nflex",), I, "first entry of the flex in flex_stiffness; -1: not elastic"),
    _m("flex_stiffness", ("nflexstiffness",), F,
       "2-D stretch: each triangle's edge metric (upper triangle; 21 numbers per element)"),
    _m("flex_bendingadr", ("nflex",), I, "first entry of the flex in flex_bending; -1: no bending"),
    _m("flex_bending", ("nflexbending",), F,
       "2-D bending: 17 numbers per edge (4 x 4 flap matrix, curved rest)"),
    _m("flex_edgeflap", ("nflexedge", 2), I,
       "the vertices opposite each edge in its two triangles (-1: none)"),
    # sensors (compiler.sensors; computed by engine.sensor), outputs packed in sensordata
    _m("sensor_type", ("nsensor",), I, "sensor type (SensorType)"),
    _m("sensor_datatype", ("nsensor",), I, "numeric data type: 0 real, 1 positive, 2 axis, 3 quaternion"),
    _m("sensor_needstage", ("nsensor",), I, "stage that computes it: 1 position, 2 velocity, 3 acceleration"),
    _m("sensor_objtype", ("nsensor",), I, "type of the sensorized object (ObjType)"),
    _m("sensor_objid", ("nsensor",), I, "id of the sensorized object; -1 if none"),
    _m("sensor_reftype", ("nsensor",), I, "type of the reference object (ObjType)"),
    _m("sensor_refid", ("nsensor",), I, "id of the reference object; -1: the world frame"),
    _m("sensor_intprm", ("nsensor", 3), I, "integer parameters (contact: data bits, reduce, num)"),
    _m("sensor_dim", ("nsensor",), I, "number of outputs"),
    _m("sensor_adr", ("nsensor",), I, "first output in sensordata"),
    _m("sensor_cutoff", ("nsensor",), F, "outputs clamped to +-cutoff (real) or cutoff (positive); 0: none"),
    _m("sensor_noise", ("nsensor",), F, "noise standard deviation (kept, never added, as MuJoCo)"),
    _m("sensor_history", ("nsensor", 2), I, "history buffer: [nsample, interp (0 zoh, 1 linear, 2 cubic)]"),
    _m("sensor_historyadr", ("nsensor",), I, "address of the sensor's buffer in Data.history; -1: none"),
    _m("sensor_delay", ("nsensor",), F, "delay in seconds; sensordata reads the buffer at time - delay"),
    _m("sensor_interval", ("nsensor", 2), F, "[period, phase] (s): computed once a period (0: always)"),
    _m("sensor_plugin", ("nsensor",), I, "plugin instance (always -1)"),
    # keyframes
    _m("key_time", ("nkey",), F, "keyframe time"),
    _m("key_qpos", ("nkey", "nq"), F, "keyframe qpos"),
    _m("key_qvel", ("nkey", "nv"), F, "keyframe qvel"),
    _m("key_act", ("nkey", "na"), F, "keyframe act"),
    _m("key_ctrl", ("nkey", "nu"), F, "keyframe ctrl"),
    _m("key_mpos", ("nkey", "nmocap", 3), F, "keyframe mocap_pos"),
    _m("key_mquat", ("nkey", "nmocap", 4), F, "keyframe mocap_quat"),
    _m("key_plastic", ("nkey", "nplastic"), F, "keyframe plastic"),
    # cameras (mjCCamera; their world frames are computed by engine.camlight)
    _m("cam_mode", ("ncam",), I, "how the camera moves (CamLightMode: fixed, track, trackcom, targetbody, "
       "targetbodycom)"),
    _m("cam_bodyid", ("ncam",), I, "body the camera is attached to"),
    _m("cam_targetbodyid", ("ncam",), I, "body the camera looks at (targetbody* modes); -1 if none"),
    _m("cam_pos", ("ncam", 3), F, "position in the body frame"),
    _m("cam_quat", ("ncam", 4), F, "orientation in the body frame"),
    _m("cam_poscom0", ("ncam", 3), F, "world position relative to the subtree com (of the target, else the "
       "body) at qpos0"),
    _m("cam_pos0", ("ncam", 3), F, "world position relative to the body at qpos0"),
    _m("cam_mat0", ("ncam", 3, 3), F, "world orientation at qpos0"),
    _m("cam_projection", ("ncam",), I, "projection: 0 perspective, 1 orthographic"),
    _m("cam_fovy", ("ncam",), F, "vertical field of view (degrees; length for orthographic)"),
    _m("cam_ipd", ("ncam",), F, "inter-pupillary distance"),
    _m("cam_resolution", ("ncam", 2), I, "resolution in pixels [width, height]"),
    _m("cam_output", ("ncam",), I, "output types (bits of mjtCamOutBit)"),
    _m("cam_sensorsize", ("ncam", 2), F32, "sensor size (length)"),
    _m("cam_intrinsic", ("ncam", 4), F32, "[focalx, focaly, principalx, principaly] (length)"),
    # lights
    _m("light_mode", ("nlight",), I, "how the light moves (CamLightMode)"),
    _m("light_bodyid", ("nlight",), I, "body the light is attached to"),
    _m("light_targetbodyid", ("nlight",), I, "body the light points at (targetbody* modes); -1 if none"),
    _m("light_type", ("nlight",), I, "type: 0 spot, 1 directional, 2 point, 3 image"),
    _m("light_texid", ("nlight",), I, "texture id of an image light; -1 if none"),
    _m("light_castshadow", ("nlight",), B, "whether the light casts shadows"),
    _m("light_active", ("nlight",), B, "whether the light is on"),
    _m("light_pos", ("nlight", 3), F, "position in the body frame"),
    _m("light_dir", ("nlight", 3), F, "direction in the body frame (unit)"),
    _m("light_poscom0", ("nlight", 3), F, "world position relative to the subtree com at qpos0"),
    _m("light_pos0", ("nlight", 3), F, "world position relative to the body at qpos0"),
    _m("light_dir0", ("nlight", 3), F, "world direction at qpos0"),
    _m("light_bulbradius", ("nlight",), F32, "bulb radius (soft shadows)"),
    _m("light_intensity", ("nlight",), F32, "intensity (candela, physically based rendering)"),
    _m("light_range", ("nlight",), F32, "range of effectiveness"),
    _m("light_softness", ("nlight",), F32, "shadow softness"),
    _m("light_attenuation", ("nlight", 3), F32, "OpenGL attenuation (constant, linear, quadratic)"),
    _m("light_cutoff", ("nlight",), F32, "OpenGL cutoff angle of a spot light (degrees)"),
    _m("light_exponent", ("nlight",), F32, "OpenGL exponent of a spot light"),
    _m("light_ambient", ("nlight", 3), F32, "ambient rgb"),
    _m("light_diffuse", ("nlight", 3), F32, "diffuse rgb"),
    _m("light_specular", ("nlight", 3), F32, "specular rgb"),
)


def _d(name, shape, stage, doc, mujoco=True, dtype=F):
    return FieldSpec(name, shape, dtype, doc, stage, mujoco)


DATA_FIELDS: tuple[FieldSpec, ...] = (
    # state and inputs (the user writes these)
    _d("qpos", ("nq",), "state", "joint positions"),
    _d("qvel", ("nv",), "state", "joint velocities"),
    _d("act", ("na",), "state", "actuator activations"),
    _d("ctrl", ("nu",), "state", "controls"),
    _d("history", ("nhistory",), "state",
       "history buffers of the actuators, then the sensors, with nsample > 0: [user, cursor, "
       "times (nsample), values (nsample x dim)] each, at actuator_historyadr / sensor_historyadr "
       "(a ring: cursor is the newest sample; a sensor's user slot: its last computation time)"),
    _d("qfrc_applied", ("nv",), "state", "applied generalised force"),
    _d("eq_active", ("neq",), "state", "which equality constraints are enforced (from eq_active0 at reset)",
       dtype=B),
    _d("qacc_warmstart", ("nv",), "state",
       "acceleration the constraint solver starts from (step saves qacc)"),
    _d("xfrc_applied", ("nbody", 6), "state",
       "applied Cartesian force and torque at each body com, [force; torque]"),
    _d("mocap_pos", ("nmocap", 3), "state", "positions of the mocap bodies (world frame; body_pos at reset)"),
    _d("plastic", ("nplastic",), "state",
       "spring plasticity: the moved rest positions of springs with a yield (jnt_plasticadr, "
       "tendon_plasticadr); qpos_spring and tendon_lengthspring at reset, moved by step"),
    _d("mocap_quat", ("nmocap", 4), "state",
       "orientations of the mocap bodies (world frame, normalised when used; body_quat at reset)"),
    # sleeping (EnableBit.SLEEP; engine.sleep)
    _d("tree_asleep", ("ntree",), "state",
       "< 0: awake (counts up to -1 while under sleep_tolerance); >= 0: asleep, the next tree of its "
       "island's cycle", dtype=I),
    _d("tree_awake", ("ntree",), "position", "1 if the tree is awake, 0 asleep (mj_updateSleep)", dtype=I),
    _d("body_awake", ("nbody",), "position", "-1 static, 0 asleep, 1 awake (SleepState; mj_updateSleep)",
       dtype=I),
    # position stage: kinematics, com_pos, tendon, crb, factor_m, transmission
    _d("xpos", ("nbody", 3), "position", "Cartesian position of the body frame"),
    _d("xquat", ("nbody", 4), "position", "Cartesian orientation of the body frame"),
    _d("xmat", ("nbody", 3, 3), "position", "Cartesian orientation of the body frame"),
    _d("xipos", ("nbody", 3), "position", "Cartesian position of the body com"),
    _d("ximat", ("nbody", 3, 3), "position", "Cartesian orientation of the body inertia frame"),
    _d("xanchor", ("njnt", 3), "position", "Cartesian position of the joint anchor"),
    _d("xaxis", ("njnt", 3), "position", "Cartesian joint axis"),
    _d("geom_xpos", ("ngeom", 3), "position", "Cartesian geom position"),
    _d("geom_xmat", ("ngeom", 3, 3), "position", "Cartesian geom orientation"),
    _d("site_xpos", ("nsite", 3), "position", "Cartesian site position"),
    _d("site_xmat", ("nsite", 3, 3), "position", "Cartesian site orientation"),
    _d("subtree_com", ("nbody", 3), "position", "centre of mass of each subtree"),
    _d("cam_xpos", ("ncam", 3), "position", "Cartesian camera position (engine.camlight)"),
    _d("cam_xmat", ("ncam", 3, 3), "position", "Cartesian camera orientation (looks along -z, y up)"),
    _d("light_xpos", ("nlight", 3), "position", "Cartesian light position"),
    _d("light_xdir", ("nlight", 3), "position", "Cartesian light direction (unit)"),
    _d("cinert", ("nbody", 10), "position",
       "com-based body inertia and mass, [Ixx Iyy Izz Ixy Ixz Iyz, m*c, m] about subtree_com of the root"),
    _d("cdof", ("nv", 6), "position", "com-based motion axis of each dof, [rot; lin]"),
    _d("crb", ("nbody", 10), "position", "com-based composite inertia (layout of cinert)"),
    _d("M", ("nC",), "position", "joint-space inertia, tree-sparse lower triangle (M_rowadr, M_colind)"),
    _d("qLD", ("nC",), "position", "L'*D*L factorisation of M, same layout as M"),
    _d("qLDiagInv", ("nv",), "position", "1 / diag(D)"),
    _d("ten_wrapadr", ("ntendon",), "position", "start of the tendon's path points in MuJoCo's wrap_xpos",
       dtype=I),
    _d("ten_wrapnum", ("ntendon",), "position",
       "number of path points (0 for fixed tendons; sites, tangent points and pulley markers)", dtype=I),
    _d("ten_length", ("ntendon",), "position", "tendon lengths"),
    _d("wrap_xpos", ("nwrap", 2, 3), "position",
       "spatial tendon path points, two per row (point n at [n // 2, n % 2]); ten_wrapadr/num index them"),
    _d("wrap_obj", ("nwrap", 2), "position",
       "object of each path point: -1 site, geom id for a tangent point, -2 pulley", dtype=I),
    _d("ten_J", ("ntendon", "nv"), "position",
       "tendon Jacobian d length / d qvel (dense; MuJoCo stores it sparse)"),
    _d("flexvert_xpos", ("nflexvert", 3), "position", "Cartesian vertex positions"),
    _d("flexedge_length", ("nflexedge",), "position", "edge lengths"),
    _d("flexedge_J", ("nflexedge", "nv"), "position",
       "edge Jacobian d length / d qvel (dense; MuJoCo stores it sparse)", False),
    _d("actuator_length", ("nout",), "position", "actuator lengths"),
    _d("actuator_moment", ("nout", "nv"), "position", "actuator moments (dense; MuJoCo stores it sparse)"),
    # velocity stage: ten_velocity, actuator_velocity, com_vel, passive, rne
    _d("cvel", ("nbody", 6), "velocity", "com-based velocity, [rot; lin]"),
    _d("cdof_dot", ("nv", 6), "velocity", "time derivative of cdof, [rot; lin]"),
    _d("ten_velocity", ("ntendon",), "velocity", "tendon velocities: ten_J qvel"),
    _d("actuator_velocity", ("nout",), "velocity", "actuator velocities"),
    _d("flexedge_velocity", ("nflexedge",), "velocity", "edge velocities: flexedge_J qvel"),
    _d("qfrc_spring", ("nv",), "velocity", "passive spring force"),
    _d("qfrc_damper", ("nv",), "velocity", "passive damper force"),
    _d("qfrc_gravcomp", ("nv",), "velocity",
       "gravity compensation (in qfrc_passive, or in qfrc_actuator for joints with actuatorgravcomp)"),
    _d("qfrc_fluid", ("nv",), "velocity", "fluid forces (inertia-box or ellipsoid model)"),
    _d("qfrc_adhesion", ("nv",), "velocity", "passive pull of adhesive contacts along their normals"),
    _d("qfrc_passive", ("nv",), "velocity", "total passive force"),
    _d("qfrc_bias", ("nv",), "velocity", "C(qpos, qvel): Coriolis, centrifugal and gravity forces"),
    # actuation stage
    _d("act_dot", ("na",), "actuation", "time derivative of act"),
    _d("actuator_force", ("nout",), "actuation", "actuator force in actuation space"),
    _d("qfrc_actuator", ("nv",), "actuation", "actuator force in joint space"),
    # acceleration stage
    _d("qfrc_smooth", ("nv",), "acceleration",
       "net unconstrained force: passive - bias + applied + actuator"),
    _d("qacc_smooth", ("nv",), "acceleration", "unconstrained acceleration: M^-1 qfrc_smooth"),
    _d("qacc", ("nv",), "acceleration",
       "acceleration (written by forward after the constraint solver, read by inverse)"),
    # constraint stage: rows are made in the position stage (engine.constraint), their reference
    # accelerations in the velocity stage, and solved after the smooth acceleration (engine.solver).
    # The arrays hold nefcmax rows; Data shows the live part (the first d.nefc rows).
    _d("efc_counts", (6,), "constraint",
       "live counts: ne, nf, nl, nefc rows and ncon contacts (Data.ne, .nf, .nl, .nefc, .ncon), and "
       "geom pairs whose contacts found no room in the last collision", False,
       dtype=I),
    # contacts (mjContact, one row per contact; Data.contact shows the live ones as d.contact.dist, ...)
    _d("contact_dist", ("nconmax",), "position", "distance between the surfaces (negative: penetration)"),
    _d("contact_pos", ("nconmax", 3), "position", "contact position: midpoint between the surfaces"),
    _d("contact_frame", ("nconmax", 3, 3), "position", "contact frame, rows: normal (geom 0 to 1), tangents"),
    _d("contact_includemargin", ("nconmax",), "position", "force is generated when dist < includemargin"),
    _d("contact_friction", ("nconmax", 5), "position", "tangent1, tangent2, spin, roll1, roll2 friction"),
    _d("contact_solref", ("nconmax", 2), "position", "solref of the normal direction"),
    _d("contact_solreffriction", ("nconmax", 2), "position", "solref of the friction directions (0: solref)"),
    _d("contact_solimp", ("nconmax", 5), "position", "solimp"),
    _d("contact_mu", ("nconmax",), "position", "friction of the regularised cone (set with the rows)"),
    _d("contact_H", ("nconmax", 6, 6), "constraint",
       "cone Hessian (elliptic cones, Newton; set in the cone's middle zone only, as MuJoCo's, whose "
       "flat dim x dim layout differs)", False),
    _d("contact_adhesion", ("nconmax",), "position", "adhesive force along the normal"),
    _d("contact_dim", ("nconmax",), "position", "contact dimensionality: 1, 3, 4 or 6", dtype=I),
    _d("contact_geom", ("nconmax", 2), "position", "the two geoms (contact force acts from 0 on 1)", dtype=I),
    _d("contact_exclude", ("nconmax",), "position", "0 include, 1 in gap, 2 fused, 3 no dofs, 4 passive",
       dtype=I),
    _d("contact_efc_address", ("nconmax",), "position", "first constraint row of the contact; -1 if none",
       dtype=I),
    _d("efc_type", ("nefcmax",), "constraint", "row type (ConstraintType)", dtype=I),
    _d("efc_id", ("nefcmax",), "constraint", "id of the equality, dof, tendon, joint or contact of the row",
       dtype=I),
    _d("efc_J", ("nefcmax", "nv"), "constraint",
       "constraint Jacobian (dense; MuJoCo's is sparse when nv >= 60)"),
    _d("efc_pos", ("nefcmax",), "constraint", "constraint position (violation)"),
    _d("efc_margin", ("nefcmax",), "constraint", "inclusion margin"),
    _d("efc_frictionloss", ("nefcmax",), "constraint", "friction loss of friction rows; 0 otherwise"),
    _d("efc_diagA", ("nefcmax",), "constraint", "approximate diagonal of J M^-1 J', made consistent with R"),
    _d("efc_R", ("nefcmax",), "constraint", "regulariser R = (1-d)/d diagA"),
    _d("efc_D", ("nefcmax",), "constraint", "1 / R"),
    _d("efc_KBIP", ("nefcmax", 4), "constraint", "stiffness K, damping B, impedance d and its derivative"),
    _d("efc_vel", ("nefcmax",), "velocity", "constraint velocity J qvel"),
    _d("efc_aref", ("nefcmax",), "velocity", "reference acceleration -B vel - K d (pos - margin)"),
    _d("efc_b", ("nefcmax",), "constraint", "J qacc_smooth - aref"),
    _d("efc_force", ("nefcmax",), "constraint", "constraint force in constraint space"),
    _d("efc_state", ("nefcmax",), "constraint", "row state after the solver (ConstraintState)", dtype=I),
    _d("qfrc_constraint", ("nv",), "constraint", "constraint force in joint space: J' efc_force"),
    # inverse dynamics
    _d("qfrc_inverse", ("nv",), "inverse", "generalised force that produces qacc"),
    _d("solver_fwdinv", (2,), "inverse",
       "with EnableBit.FWDINV, written by step: |qfrc_constraint(forward) - qfrc_constraint(inverse)|, "
       "|qfrc_applied + J'xfrc_applied + qfrc_actuator - qfrc_inverse|"),
    # post-constraint body accelerations and forces (rne_post_constraint, mj_rnePostConstraint); MuJoCo
    # computes them on request or for acceleration-stage sensors, forward does not
    _d("cacc", ("nbody", 6), "rnepost", "com-based acceleration, [rot; lin] (world: -gravity)"),
    _d("cfrc_int", ("nbody", 6), "rnepost",
       "com-based force the parent exerts on the body (summed over the subtree), [torque; force]"),
    _d("cfrc_ext", ("nbody", 6), "rnepost",
       "com-based external force on the body: xfrc_applied, connect and weld forces, spatial tendon "
       "forces (contacts to come), [torque; force]"),
    # sensors (engine.sensor: mj_sensorPos, mj_sensorVel, mj_sensorAcc) and what they compute on demand
    _d("sensordata", ("nsensordata",), "sensor", "sensor outputs, sensor i at sensor_adr[i]"),
    _d("energy", (2,), "sensor", "potential and kinetic energy (EnableBit.ENERGY or energy sensors)"),
    _d("subtree_linvel", ("nbody", 3), "sensor", "linear velocity of each subtree's com (mj_subtreeVel)"),
    _d("subtree_angmom", ("nbody", 3), "sensor",
       "angular momentum of each subtree about its com (mj_subtreeVel)"),
    # scratch: preallocated temporaries, never compared, not part of the public contract
    _d("scratch_quat", (8, 4), "scratch", "quaternion rows for kernels", False),
    _d("scratch_vec", (8, 6), "scratch", "3- and 6-vector rows for kernels", False),
    _d("scratch_body6a", ("nbody", 6), "scratch", "per-body spatial temporary (RNE accelerations)", False),
    _d("scratch_body6b", ("nbody", 6), "scratch", "per-body spatial temporary (RNE forces)", False),
    _d("scratch_nv_a", ("nv",), "scratch", "dof temporary", False),
    _d("scratch_nv_b", ("nv",), "scratch", "dof temporary", False),
    _d("scratch_nu", ("nu",), "scratch", "clamped controls", False),
    _d("scratch_ctrl_delayed", ("nu",), "scratch",
       "controls as the actuators read them: ctrl, or the history at time - delay", False),
    _d("scratch_jac", (6, 3, "nv"), "scratch", "point/axis Jacobians for site and slider-crank transmissions",
       False),
    _d("scratch_wrap", (4, 3), "scratch", "points of one site-geom-site piece of a spatial tendon", False),
    _d("scratch_wrap_out", (7,), "scratch", "a wrap around a geom: its length and two tangent points", False),
    _d("scratch_user", (4, "nactuator"), "scratch",
       "user-type actuator values from Python callbacks: dyn, gain, bias rows; row 3 bits say which are set",
       False),
    _d("scratch_ntendon", ("ntendon",), "scratch", "summed actuator force per tendon", False),
    _d("scratch_nC", ("nC",), "scratch", "temporary with the layout of M (implicit integration)", False),
    _d("scratch_efm", (9, "nv"), "scratch",
       "the discrete integrator's metric (engine.metric): diagonal h D + h^2 K, stiffness h k, force shift, "
       "1/diag of its backbone factor, PCG vectors r, z, p, Ap, the solver's force qfrc_smooth + shift",
       False),
    _d("scratch_efm_qh", ("nC",), "scratch",
       "the discrete integrator's backbone M + diagonals and its factor", False),
    _d("scratch_efm_mhat", ("nC",), "scratch",
       "the discrete integrator's M + diagonal (the metric without its rank-1 terms), for the solvers",
       False),
    _d("scratch_efm_ts", ("ntendon",), "scratch",
       "the discrete integrator's tendon metric scales h^2 k + h b", False),
    _d("scratch_efm_as", ("nactuator",), "scratch",
       "the discrete integrator's actuator metric scales h^2 gp + h gv (0: not in the metric)", False),
    _d("scratch_free_mhat", (6, 6), "scratch", "a lone free body's 6x6 implicit system (implicitfast)",
       False),
    _d("scratch_free_mat3", (4, 3, 3), "scratch", "3x3 temporaries of a free body's gyroscopic derivative",
       False),
    _d("scratch_fluid_jac", (2, 6, "nv"), "scratch",
       "fluid velocity derivatives: one body's or geom's Jacobian in its frame, and B times it", False),
    _d("scratch_fluid_b", (6, 6), "scratch",
       "fluid velocity derivatives: d local force / d local velocity of one body or geom", False),
    _d("scratch_lu", ("nv", "nv"), "scratch",
       "the implicit integrator's M - h qDeriv and its LU factor (dense, zero outside MuJoCo's D pattern)",
       False),
    _d("scratch_rne_body", ("nbody", 2, 6), "scratch",
       "rigid-body derivatives: body accelerations and subtree forces", False),
    _d("scratch_rne_bmat", ("nbody", 6, 6), "scratch",
       "rigid-body derivatives: each subtree's composite Coriolis matrix (Carpentier-Mansard's B)", False),
    _d("scratch_rne_dof", ("nv", 10, 6), "scratch",
       "rigid-body derivatives: per-dof velocities, accelerations and projected composites", False),
    _d("scratch_qpos", ("nq",), "scratch", "qpos temporary (RK4 start state)", False),
    _d("scratch_rk_qvel", ("nv",), "scratch", "qvel temporary (RK4 start state)", False),
    _d("scratch_rk_act", ("na",), "scratch", "act temporary (RK4 start state)", False),
    _d("scratch_rk_dq", (4, "nv"), "scratch", "RK4 stage velocities", False),
    _d("scratch_rk_dv", (4, "nv"), "scratch", "RK4 stage accelerations", False),
    _d("scratch_rk_da", (4, "na"), "scratch", "RK4 stage activation rates", False),
    _d("scratch_rk_tenlen", ("ntendon",), "scratch", "ten_length at the RK4 start state", False),
    _d("scratch_rk_tenJ", ("ntendon", "nv"), "scratch", "ten_J at the RK4 start state", False),
    _d("scratch_cjac", (6, 3, "nv"), "scratch", "the Jacobians of an equality constraint's two points",
       False),
    _d("scratch_solver_nv", (10, "nv"), "scratch",
       "solver vectors: Ma, Mv, grad, Mgrad, search, CG's previous and difference vectors, a Cholesky update",
       False),
    _d("scratch_solver_efc", (3, "nefcmax"), "scratch", "solver rows: J qacc - aref, J search, Hessian D",
       False),
    _d("scratch_quad", ("nefcmax", 9), "scratch", "line-search polynomial coefficients of each row", False),
    _d("scratch_oldstate", ("nefcmax",), "scratch", "efc_state before the last step", False, dtype=I),
    _d("scratch_state_saved", ("nefcmax",), "scratch", "efc_state after the warmstart (see fwd_constraint)",
       False, dtype=I),
    _d("scratch_hessian", (2, "nv", "nv"), "scratch",
       "Cholesky factors of the Newton Hessian (lower triangle): without and with the cone terms", False),
    _d("scratch_spchol", (3, "nv", "nv"), "scratch",
       "Newton's sparse-path factor structure: H's and L's patterns, column visiting lists", False, dtype=I),
    _d("scratch_spchol_n", (4, "nv"), "scratch",
       "sparse-path factor: list lengths, elimination-tree parents, flags, a row's pattern", False, dtype=I),
    _d("scratch_cone", (2, 6, 6), "scratch", "a contact's cone Hessian and its Cholesky factor", False),
    _d("scratch_ltj", (6, "nv"), "scratch", "L' J of one contact's rows (cone updates)", False),
    _d("scratch_island_adr", (2, "nv"), "scratch",
       "per island: its first position and dof count in scratch_island_dofs", False, dtype=I),
    _d("scratch_island_dofs", ("nv",), "scratch", "dofs of each island, island by island", False, dtype=I),
    _d("scratch_dof_local", ("nv",), "scratch", "a dof's index within its island; dofs of no island",
       False, dtype=I),
    _d("scratch_local", ("nv",), "scratch", "a vector in an island's own dof numbering", False),
    _d("scratch_solver_gauss", (3,), "scratch", "the Gauss term's line-search polynomial", False),
    _d("scratch_solver_counts", (4,), "scratch",
       "line-search evaluations, iterations, cone rows, downdates since the sparse factor", False, dtype=I),
    _d("scratch_ls_points", (3, 4), "scratch", "line-search candidate points (alpha, cost, slope, curvature)",
       False),
    _d("scratch_efc_colind", ("nefcmax", "nv"), "scratch",
       "sparse Jacobian path (nv >= 60): each row's pattern, MuJoCo's efc_J_colind", False, dtype=I),
    _d("scratch_efc_rownnz", ("nefcmax",), "scratch", "sparse Jacobian path: each row's pattern size",
       False, dtype=I),
    _d("scratch_efc_Y", ("nefcmax", "nv"), "scratch",
       "whitened Jacobian Y = J M^-1/2 (MuJoCo's efc_Y, dense)", False),
    _d("scratch_body_sphere", ("nbody", 5), "scratch",
       "collision prefilter: a sphere around each body's geoms (centre, radius) and its largest margin + gap",
       False),
    _d("scratch_contact_force", (6,), "scratch", "one contact's force and torque in its frame", False),
    _d("scratch_ccd", ("nccd",), "scratch", "the convex collider's (GJK/EPA) real scratch", False),
    _d("scratch_ccd_int", ("nccdint",), "scratch", "the convex collider's integer scratch", False, dtype=I),
    _d("scratch_efc_AR", ("nefcdual", "nefcdual"), "scratch",
       "the dual solvers' matrix J M^-1 J' + diag(R) (MuJoCo's efc_AR, dense)", False),
    _d("scratch_pgs_efc", (3, "nefcmax"), "scratch",
       "PGS and noslip rows: 1/AR_ii, Nesterov's previous and extrapolated forces (or AR f)", False),
    _d("scratch_pgs_block", ("nefcmax",), "scratch", "PGS visiting order of the rows (shuffled)", False,
       dtype=I),
    _d("scratch_tree", (4, "nv"), "scratch",
       "islands: tree of each dof, union-find parent and island of each tree, island of each dof", False,
       dtype=I),
    _d("scratch_island", (5, "nv"), "scratch",
       "per island: ne, nf, nefc, first position in the row list, solver iterations", False, dtype=I),
    _d("scratch_efc_island", (2, "nefcmax"), "scratch",
       "island of each row; the rows listed island by island", False, dtype=I),
    _d("scratch_sleep", ("nbody", 7), "scratch", "sleeping bodies' xpos and xquat before kinematics", False),
    _d("scratch_sleep_trees", ("ntree",), "scratch", "trees island by island (mj_sleep's map_itree2tree)",
       False, dtype=I),
    _d("scratch_sleep_qpos", ("nq",), "scratch", "sleeping trees' qpos kept through the integration", False),
    _d("scratch_sleep_qacc", ("nv",), "scratch", "the integrator's qacc kept through mj_sleep's new forward",
       False),
    _d("scratch_nisland", (1,), "scratch", "number of constraint islands (0: islands off)", False, dtype=I),
    _d("scratch_inv_qacc", ("nv",), "scratch", "inverse's continuous-time qacc (invdiscrete)", False),
    _d("scratch_inv_nv", (3, "nv"), "scratch",
       "inverse temporaries: discrete-to-continuous force; fwdinv's expected force, saved qfrc_constraint",
       False),
    _d("scratch_inv_efc", ("nefcmax",), "scratch", "fwdinv's saved efc_force", False),
    _d("scratch_sensor_flags", (4,), "scratch",
       "sensors' lazy-evaluation flags: energy pos, energy vel, subtree vel, rne post", False, dtype=I),
    _d("scratch_sensor_match", (2, "nconmax"), "scratch",
       "contact sensors: matching contacts, sort keys and flips", False),
    _d("scratch_subtree", ("nbody", 6), "scratch", "mj_subtreeVel temporaries", False),
    _d("scratch_ray", (3, 6), "scratch", "rangefinder rays: group flags, the basis normal to a ray", False),
    _d("scratch_gd_dist", (8,), "scratch", "geom distance sensors: the collider's distances", False),
    _d("scratch_gd_pos", (8, 3), "scratch", "geom distance sensors: the collider's points", False),
    _d("scratch_gd_frame", (8, 3, 3), "scratch", "geom distance sensors: the collider's frames", False),
)

MODEL_FIELD = {f.name: f for f in MODEL_FIELDS}
DATA_FIELD = {f.name: f for f in DATA_FIELDS}


def markdown() -> str:
    """The field reference (docs/fields.md), generated from this registry."""
    lines = ["# Field reference", "",
             "Generated from `kinedyn/engine/fields.py` by "
             "`python -m kinedyn.engine.fields > docs/fields.md`;",
             "a test keeps it in sync. Shapes use the model sizes (`nbody`, `nv`, ...).",
             "`MuJoCo` says whether the tests compare the field with MuJoCo 4.0's.", ""]
    for title, table in (("Model", MODEL_FIELDS), ("Data", DATA_FIELDS)):
        lines += [f"## {title}", "", "| field | shape | stage | MuJoCo | description |",
                  "|---|---|---|---|---|"]
        for f in table:
            if f.stage == "scratch":
                continue
            shape = "(" + ", ".join(str(x) for x in f.shape) + ("," if len(f.shape) == 1 else "") + ")"
            lines.append(f"| `{f.name}` | {shape} | {f.stage} | {'yes' if f.mujoco else 'no'} | {f.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
