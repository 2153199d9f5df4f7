"""The engine: Model, Data and the pipeline stages, one module per concern (MuJoCo's ``engine_*.c``).

=====================  ======================================================  =========================
module                 what                                                    MuJoCo
=====================  ======================================================  =========================
``types``              enumerations and flag bits                              mjmodel.h
``fields``             the registry of every Model and Data array              mjxmacro.h
``model``, ``data``    Model, Option, Data, reset                              mjModel, mjData
``handles``            the Model/Data handles kernels read                     --
``checks``             argument checks of the public functions (d.model is m)  --
``util_spatial``       quaternions, rotations, spatial algebra (kernels)       engine_util_spatial.c
``util_linalg3``       small dense 3x3 helpers                                 engine_util_blas.c
``util_muscle``        muscle gain, bias and dynamics curves                   engine_util_misc.c
``smooth_kinematics``  poses, com_pos                                          engine_core_smooth.c
``smooth_tendon``      tendon lengths, Jacobians, wrapping, velocities         engine_core_smooth.c
``smooth_inertia``     crb, factor_m, solve_m, mul_m, full_m                   engine_core_smooth.c
``smooth_rne``         com_vel, rne, bias forces                               engine_core_smooth.c
``passive``            joint and tendon springs and dampers                    engine_passive.c
``actuation``          transmission and fwd_actuation kernels                  engine_forward.c
``callbacks``          user-actuator callbacks (Python)                        mjcb_act_*
``support``            Jacobians, xfrc_applied, integrate_pos / differentiate  engine_support.c
``collision_driver``   the collision stage: filters, order, contact params    engine_collision_driver.c
``collision_primitive``  plane, sphere, capsule, cylinder colliders            engine_collision_primitive.c
``collision_box``      sphere-box, capsule-box, box-box colliders              engine_collision_box.c
``collision_convex``   plane-convex, the convex collider                       engine_collision_convex.c
``collision_gjk``      ccd: MuJoCo's native CCD, running its parts:            engine_collision_gjk.c
``collision_gjk_*``    _common (layout), _support (support functions),         engine_collision_gjk.c,
                       _distance (GJK), _epa, _multicontact                    engine_collision_convex.c
``constraint``         constraint rows, impedance, reference acceleration      engine_core_constraint.c
``island``             constraint islands for the dual solvers                 engine_island.c
``solver``             warmstart, Newton and CG (per island)                   engine_solver.c
``solver_pgs``         PGS and noslip                                          engine_solver.c
``forward``            the forward pipeline and its stages                     engine_forward.c
``derivative``         derivatives the implicit integrator needs               engine_derivative.c
``metric``             the discrete integrator's metric M + hD + h²K           engine_metric.c
``integrator``         step: Euler, implicit(fast), discrete, RK4              engine_forward.c
``inverse``            inverse dynamics                                        engine_inverse.c
``rne_post``           cacc, cfrc_int, cfrc_ext after the constraint forces    engine_core_smooth.c
``setconst``           compile-time constants that need the pipeline           engine_setconst.c
``lengthrange``        actuator length ranges by simulation                    engine_setconst.c
=====================  ======================================================  =========================

Modules import only ``kinedyn._jit``, ``kinedyn.errors`` and each other.
"""
