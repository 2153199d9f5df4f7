"""Compiling the bodies' elements: each body's inertia, its geoms, joints and sites, cameras and lights.

``mjCBody::Compile`` for every body (orientation, explicit or geom-inferred inertia, the
mass and inertia bounds, free-joint alignment), ``mjCGeom::Compile`` (fromto, sizes, mesh
and height-field references, mass and inertia), ``mjCJoint::Compile`` (limits, units, axis),
``mjCSite::Compile``, ``mjCCamera::Compile`` and ``mjCLight::Compile``; ``discardvisual``;
then the geom_*, site_*, mesh_*, hfield_*, cam_* and light_* arrays.
"""

from __future__ import annotations

import math

import numpy as np

from kinedyn.compiler import actuators as act
from kinedyn.compiler import defaults as dflt
from kinedyn.compiler import frames as fr
from kinedyn.compiler import hfield as hfields
from kinedyn.compiler import inertial as inr
from kinedyn.compiler import mesh as meshes
from kinedyn.compiler.fluid import FLUIDCOEF_DEFAULT, NFLUID, geom_fluid
from kinedyn.compiler.tree import Body, Geom, Joint, Site
from kinedyn.engine.types import MINVAL, GeomType, JointType
from kinedyn.xml.mjcf import Node, parse_floats

_GEOMTYPE = {t.name.lower(): int(t) for t in GeomType}
_JOINTTYPE = {t.name.lower(): int(t) for t in JointType}
# number of size parameters each geom type uses (mjGEOMINFO)
_GEOMINFO = {GeomType.PLANE: 3, GeomType.HFIELD: 0, GeomType.SPHERE: 1, GeomType.CAPSULE: 2,
             GeomType.ELLIPSOID: 3, GeomType.CYLINDER: 2, GeomType.BOX: 3, GeomType.MESH: 0,
             GeomType.SDF: 0}
_CAMLIGHT_MODE = {"fixed": 0, "track": 1, "trackcom": 2, "targetbody": 3, "targetbodycom": 4}
_CAM_OUTPUT = dflt.CAM_OUTPUT
_LIGHT_TYPE = {"spot": 0, "directional": 1, "point": 2, "image": 3}


class ElementsMixin:
    """The Compiler's body, geom, joint, site, camera and light compilation (see
    :class:`kinedyn.compiler.build.Compiler`)."""

    def _compile_body(self, body: Body) -> None:
        """mjCBody::Compile for one body (world included)."""
        if body.node is not None:
            a = body.attrs
            self._single_orientation(body.node, a)
            quat, err = fr.resolve_orientation(a, self.degree, self.eulerseq)
            if err:
                raise body.error(f"error '{err}' in frame alternative")
            body.quat = quat or [1.0, 0.0, 0.0, 0.0]
            fr.normvec(body.quat)
            body.pos = list(a.get("pos", [0.0, 0.0, 0.0]))
            if body.mocap and (body.parent.id != 0 or body.joints):
                raise body.error(f"mocap body '{body.name}' is not a fixed child of world", "mocap")

        explicit = body.inertial is not None
        ipos_defined = False
        if explicit:
            inode, ia, _ = body.inertial
            self._single_orientation(inode, ia)
            if "fullinertia" in ia:
                frame = None
                if inode.inertia_frame:  # URDF: fullinertia given in the origin's frame
                    frame, _ = fr.resolve_orientation(ia, self.degree, self.eulerseq)
                elif any(k in ia for k in fr.ORIENTATION_ATTRS):
                    raise inode.error("fullinertia and inertial orientation cannot both be specified",
                                      "fullinertia")
                if "diaginertia" in ia:
                    raise inode.error("fullinertia and diagonal inertia cannot both be specified",
                                      "fullinertia")
                lenient = self.inertia_policy != "refuse"
                res = inr.full_inertia(ia["fullinertia"], frame, lenient=lenient)
                if res is not None and self.inertia_policy == "nearest_pd":
                    res = nearest_pd(res[0]), res[1]
                if res is None or res[0][2] < 1e-14:
                    self._unphysical(body, "inertia not positive definite", inode.error(
                        "error 'inertia must have positive eigenvalues' in fullinertia", "fullinertia"))
                body.inertia, body.iquat = res
            else:
                body.inertia = list(ia.get("diaginertia", [0.0, 0.0, 0.0]))
                iquat, err = fr.resolve_orientation(ia, self.degree, self.eulerseq)
                if err:
                    raise inode.error(f"error '{err}' in inertia alternative")
                body.iquat = iquat or [1.0, 0.0, 0.0, 0.0]
                fr.normvec(body.iquat)
            body.ipos = list(ia["pos"])
            body.mass = ia["mass"]
            ipos_defined = True

        for geom in body.geoms:
            infer = (body.id > 0 and (not explicit or self.inertiafromgeom == "true")
                     and self.inertiagrouprange[0] <= geom.attrs["group"] <= self.inertiagrouprange[1])
            self._compile_geom(geom, body, infer)

        if body.id > 0 and (self.inertiafromgeom == "true"
                            or (not ipos_defined and self.inertiafromgeom == "auto")):
            # InertiaFromGeom
            sel = [g for g in body.geoms
                   if self.inertiagrouprange[0] <= g.attrs["group"] <= self.inertiagrouprange[1]
                   and g.mass > fr.EPS]
            if sel:
                res = inr.combine([(g.mass, g.pos, g.quat, g.inertia) for g in sel])
                if res is None:
                    raise body.error("error 'inertia must have positive eigenvalues' in alternative for "
                                     "principal axes")
                body.mass, body.ipos, body.iquat, body.inertia = res
                ipos_defined = True

        if not ipos_defined:
            # no inertial frame: MuJoCo copies the body frame (pos and quat) into it
            body.ipos = list(body.pos)
            body.iquat = list(body.quat)

        if body.id > 0:
            # (a zero bound would turn a negative value loaded as given into 0: as given, no bound)
            as_given = self.inertia_policy != "refuse"
            if not as_given or max(self.boundmass, self.mass_floor) > 0:
                body.mass = max(body.mass, self.boundmass, self.mass_floor)
            bound = max(self.boundinertia, self.inertia_floor)
            if not as_given or bound > 0:
                body.inertia = [max(i, bound) for i in body.inertia]
            if self.inertia_policy == "nearest_pd" and explicit:
                body.inertia = nearest_pd(body.inertia)
            if body.mass < 0 or min(body.inertia) < 0:
                self._unphysical(body, "negative mass" if body.mass < 0 else "negative principal inertia",
                                 body.inertial[0].error("mass and inertia cannot be negative", "mass")
                                 if explicit else body.error("mass and inertia cannot be negative"))
            i0, i1, i2 = body.inertia
            if i0 + i1 < i2 or i0 + i2 < i1 or i1 + i2 < i0:
                if self.balanceinertia or self.inertia_policy == "balance":
                    body.inertia = [(i0 + i1 + i2) / 3.0] * 3
                else:
                    self._unphysical(
                        body, f"principal inertia {i0:.3g} {i1:.3g} {i2:.3g} violates A + B >= C",
                        body.error("inertia must satisfy A + B >= C; use 'balanceinertia' to fix"))

        if body.frame is not None:
            body.pos, body.quat = fr.frame_accum(body.frame.pos, body.frame.quat, body.pos, body.quat)

        # free-joint alignment: a lone free body's frame moves onto its inertial frame, and what it
        # holds moves the other way (mjCBody::Compile with freejoint align, or compiler alignfree)
        body.align_inverse = None
        if len(body.joints) == 1 and body.joints[0].attrs["type"] == "free" and not body.children:
            align = body.joints[0].attrs.get("align", "auto")
            if align == "true" or (align == "auto" and self.alignfree):
                body.pos, body.quat = fr.frame_accum(body.pos, body.quat, body.ipos, body.iquat)
                inverse = fr.frame_invert(body.ipos, body.iquat)
                body.ipos, body.iquat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
                for geom in body.geoms:
                    geom.pos, geom.quat = fr.frame_accum(*inverse, geom.pos, geom.quat)
                body.align_inverse = inverse

        nfree = sum(j.attrs["type"] == "free" for j in body.joints)
        if nfree and (len(body.joints) > 1):
            raise body.error("free joint can only appear by itself")
        if nfree and body.parent is not None and body.parent.id != 0 and not self.fusestatic:
            raise body.error("free joint can only be used on top level")  # fuse_static checks it later
        body.dofnum = 0
        hasball = False
        for joint in body.joints:
            self._compile_joint(joint)
            body.dofnum += JointType(joint.type).nv
            if joint.type in (JointType.BALL, JointType.HINGE) and hasball:
                raise body.error(f"ball followed by rotation in body '{body.name}'")
            hasball = hasball or joint.type == JointType.BALL
        if body.dofnum > 6:
            raise body.error(f"more than 6 dofs in body '{body.name}'")
        for site in body.sites:
            self._compile_site(site)
            if body.align_inverse is not None:
                site.pos, site.quat = fr.frame_accum(*body.align_inverse, site.pos, site.quat)

    def _discard_visual_geoms(self) -> None:
        """``discardvisual``: drop the geoms that neither collide (contype = conaffinity = 0) nor are
        named by a contact pair, a spatial tendon, a sensor or a custom tuple, after the bodies'
        masses were computed with them (mjCModel::IndexAssets with discard)."""
        referenced = set()
        for section in ("contact", "tendon", "sensor", "custom"):
            for node in self.sections.get(section, []):
                todo = list(node.children)
                while todo:
                    child = todo.pop()
                    todo.extend(child.children)
                    a = child.attrib
                    referenced.update(a[k] for k in ("geom1", "geom2") if k in a)
                    if child.tag == "geom" and "geom" in a:  # a spatial tendon's wrapping geom
                        referenced.add(a["geom"])
                    if a.get("objtype") == "geom" and "objname" in a:
                        referenced.add(a["objname"])
                    if a.get("reftype") == "geom" and "refname" in a:
                        referenced.add(a["refname"])
        lo, hi = self.inertiagrouprange
        for b in self.bodies:
            kept = [g for g in b.geoms if g.attrs["contype"] or g.attrs["conaffinity"]
                    or g.attrs.get("name", "") in referenced and g.attrs.get("name", "")]
            if self.inertiafromgeom == "true" and b.id > 0 and any(
                    g not in kept and lo <= g.attrs["group"] <= hi and g.mass > fr.EPS for g in b.geoms):
                raise b.error("discarding visual geoms would change the inertia of this body, which "
                              "inertiafromgeom 'true' infers from its geoms; with inertiafromgeom 'auto' it "
                              "is kept as an explicit inertial")
            b.geoms = kept
        self.geoms = [g for b in self.bodies for g in b.geoms]
        for i, g in enumerate(self.geoms):
            g.id = i

    def _camlight_arrays(self) -> dict:
        """The cam_* and light_* arrays (CopyObjects); the qpos0 frames (cam_pos0, ...) by setconst."""
        cams, lights = self.cameras, self.lights
        ncam, nlight = len(cams), len(lights)
        znear = 0.01  # <visual><map znear>: the intrinsic focal lengths without a sensor size
        for node in self.sections.get("visual", []):
            for child in node.children:
                if child.tag == "map" and "znear" in child.attrib:
                    znear = float(parse_floats(child, "znear", child.attrib["znear"])[0])
        out = {}
        out["cam_mode"] = np.array([_CAMLIGHT_MODE[c.attrs.get("mode", "fixed")] for c in cams],
                                   dtype=np.int32)
        out["cam_bodyid"] = np.array([c.body.id for c in cams], dtype=np.int32)
        out["cam_targetbodyid"] = np.array([c.target.id if c.target else -1 for c in cams], dtype=np.int32)
        out["cam_pos"] = np.array([c.pos for c in cams], dtype=float).reshape(ncam, 3)
        out["cam_quat"] = np.array([c.quat for c in cams], dtype=float).reshape(ncam, 4)
        for key in ("cam_poscom0", "cam_pos0"):
            out[key] = np.zeros((ncam, 3))
        out["cam_mat0"] = np.zeros((ncam, 3, 3))
        out["cam_projection"] = np.array([c.attrs.get("projection", "perspective") == "orthographic"
                                          for c in cams], dtype=np.int32)
        out["cam_ipd"] = np.array([c.attrs.get("ipd", 0.068) for c in cams], dtype=float)
        out["cam_resolution"] = np.array([c.attrs.get("resolution", [1, 1]) for c in cams],
                                         dtype=np.int32).reshape(ncam, 2)
        out["cam_output"] = np.array([sum(_CAM_OUTPUT.get(w, 0) for w in c.attrs.get("output", "rgb").split())
                                      for c in cams], dtype=np.int32)
        fovy, sensorsize, intrinsic = [], [], []
        for c in cams:
            a = c.attrs
            f32 = np.float32
            sensor = [f32(x) for x in a.get("sensorsize", [0.0, 0.0])]
            fov = a.get("fovy", 45.0)
            if sensor[0] > 0 and sensor[1] > 0:
                res = a.get("resolution", [1, 1])
                density = [f32(res[0]) / sensor[0], f32(res[1]) / sensor[1]]
                given = {k: [f32(x) for x in a.get(k, [0.0, 0.0])]
                         for k in ("focal", "focalpixel", "principal", "principalpixel")}
                intr = [given["focalpixel"][i] / density[i] if given["focalpixel"][i] else given["focal"][i]
                        for i in range(2)]
                intr += [given["principalpixel"][i] / density[i] if given["principalpixel"][i]
                         else given["principal"][i] for i in range(2)]
                # std::atan2 of two floats is the float overload
                fov = float(np.arctan2(sensor[1] / f32(2), intr[1])) * 360.0 / math.pi
            else:
                intr = [f32(znear), f32(znear), f32(0.0), f32(0.0)]
            fovy.append(fov)
            sensorsize.append(sensor)
            intrinsic.append(intr)
        out["cam_fovy"] = np.array(fovy, dtype=float)
        out["cam_sensorsize"] = np.array(sensorsize, dtype=np.float32).reshape(ncam, 2)
        out["cam_intrinsic"] = np.array(intrinsic, dtype=np.float32).reshape(ncam, 4)

        def lcol(key, default, width=None, dtype=np.float32):
            v = np.array([li.attrs.get(key, default) for li in lights], dtype=dtype)
            return v.reshape(nlight, width) if width else v.reshape(nlight)

        out["light_mode"] = np.array([_CAMLIGHT_MODE[li.attrs.get("mode", "fixed")] for li in lights],
                                     dtype=np.int32)
        out["light_bodyid"] = np.array([li.body.id for li in lights], dtype=np.int32)
        out["light_targetbodyid"] = np.array([li.target.id if li.target else -1 for li in lights],
                                             dtype=np.int32)
        types = []
        for li in lights:
            a = li.attrs  # type overrides the legacy directional (dflt.merge keeps the latest given)
            if "type" in a:
                types.append(_LIGHT_TYPE[a["type"]])
            else:
                types.append(1 if a.get("directional") == "true" else 0)
        out["light_type"] = np.array(types, dtype=np.int32)
        out["light_texid"] = np.full(nlight, -1, dtype=np.int32)
        out["light_castshadow"] = np.array([li.attrs.get("castshadow", "true") == "true" for li in lights],
                                           dtype=np.uint8)
        out["light_active"] = np.array([li.attrs.get("active", "true") == "true" for li in lights],
                                       dtype=np.uint8)
        out["light_pos"] = np.array([li.pos for li in lights], dtype=float).reshape(nlight, 3)
        out["light_dir"] = np.array([li.quat for li in lights], dtype=float).reshape(nlight, 3)
        for key in ("light_poscom0", "light_pos0", "light_dir0"):
            out[key] = np.zeros((nlight, 3))
        out["light_bulbradius"] = lcol("bulbradius", 0.02)
        out["light_intensity"] = lcol("intensity", 0.0)
        out["light_range"] = lcol("range", 10.0)
        out["light_softness"] = lcol("softness", 0.2)
        out["light_attenuation"] = lcol("attenuation", [1.0, 0.0, 0.0], 3)
        out["light_cutoff"] = lcol("cutoff", 45.0)
        out["light_exponent"] = lcol("exponent", 10.0)
        out["light_ambient"] = lcol("ambient", [0.0, 0.0, 0.0], 3)
        out["light_diffuse"] = lcol("diffuse", [0.7, 0.7, 0.7], 3)
        out["light_specular"] = lcol("specular", [0.3, 0.3, 0.3], 3)
        return out

    def _compile_camlights(self) -> None:
        """mjCCamera::Compile and mjCLight::Compile: frames, target bodies, checks."""
        bodies = {b.name: b for b in self.bodies if b.name}
        bodies["world"] = self.world

        def target(item, kind):
            name = item.attrs.get("target")
            if name is None:
                return None
            if name not in bodies:
                raise item.node.error(f"unknown target body in {kind}", "target")
            return bodies[name]

        for cam in self.cameras:
            a, node = cam.attrs, cam.node
            self._single_orientation(node, a)
            quat, err = fr.resolve_orientation(a, self.degree, self.eulerseq)
            if err:
                raise node.error(f"orientation specification error '{err}' in camera")
            pos, quat = list(a.get("pos", [0.0, 0.0, 0.0])), quat or [1.0, 0.0, 0.0, 0.0]
            if cam.frame is not None:
                pos, quat = fr.frame_accum(cam.frame.pos, cam.frame.quat, pos, quat)
            fr.normvec(quat)
            if cam.body.align_inverse is not None:
                pos, quat = fr.frame_accum(*cam.body.align_inverse, pos, quat)
            cam.pos, cam.quat = pos, quat
            cam.target = target(cam, "camera")
            if a.get("fovy", 45.0) >= 180:
                raise node.error("fovy too large in camera", "fovy")
            intrinsic_given = any(any(a.get(k, (0.0, 0.0))) for k in
                                  ("focal", "focalpixel", "principal", "principalpixel"))
            sensor = a.get("sensorsize", [0.0, 0.0])
            has_sensor = sensor[0] > 0 and sensor[1] > 0
            if intrinsic_given and not has_sensor:
                raise node.error("focal/principal require sensorsize in camera", "sensorsize")
            res = a.get("resolution", [1, 1])
            if has_sensor and (res[0] <= 0 or res[1] <= 0):
                raise node.error("sensorsize requires positive resolution in camera", "resolution")
        for light in self.lights:
            a, node = light.attrs, light.node
            pos, direction = list(a.get("pos", [0.0, 0.0, 0.0])), list(a.get("dir", [0.0, 0.0, -1.0]))
            if light.frame is not None:
                pos, _ = fr.frame_accum(light.frame.pos, light.frame.quat, pos, [1.0, 0.0, 0.0, 0.0])
                direction = fr.rot_vec_quat(direction, light.frame.quat)
            if fr.normvec(direction) < fr.EPS:
                raise node.error("zero direction in light", "dir")
            if not 0 <= a.get("softness", 0.2) <= 1:
                raise node.error("light softness must be in [0, 1]", "softness")
            if a.get("texture"):  # texture="" is none, as in MuJoCo
                raise node.error("light textures are not supported (kinedyn reads no texture assets)",
                                 "texture")
            if light.body.align_inverse is not None:
                pos, _ = fr.frame_accum(*light.body.align_inverse, pos, [1.0, 0.0, 0.0, 0.0])
                direction = fr.rot_vec_quat(direction, light.body.align_inverse[1])
            light.pos, light.quat = pos, direction
            light.target = target(light, "light")

    def _compile_geom(self, geom: Geom, body: Body, infer: bool) -> None:
        """mjCGeom::Compile: pose (fromto or orientation), size checks, mass and inertia."""
        a, node = geom.attrs, geom.node
        gtype = _GEOMTYPE[a["type"]]
        geom.type = gtype
        if gtype == GeomType.SDF:
            raise node.error("sdf geoms are not supported yet (SDF assets)", "type")
        geom.mesh = self._geom_mesh(geom, gtype)
        geom.hfield = self._geom_hfield(geom, gtype)
        if a["condim"] not in (1, 3, 4, 6):
            raise node.error("invalid condim in geom", "condim")
        # planes only in bodies without dofs: static, or welded to a mocap body
        if gtype == GeomType.PLANE and body.weldid != 0 and not self.bodies[body.weldid].mocap:
            raise node.error("plane only allowed in static bodies", "type")
        self._single_orientation(node, a)
        size = list(a["size"])
        quat = list(a.get("quat", [1.0, 0.0, 0.0, 0.0]))
        fr.normvec(quat)
        pos = list(a["pos"])
        pos, quat = self._fromto_or_orientation(node, a, "geom", gtype, pos, quat, size)
        if geom.mesh is not None and gtype != GeomType.MESH:
            pos, quat, size = meshes.fit_primitive(geom.mesh.processed, gtype, self.fitaabb,
                                                   a.get("fitscale", 1.0), pos, quat)
            geom.mesh = None
        if geom.hfield is None:
            _check_size(node, gtype, size)
        else:  # mjCGeom::Compile: the field's sizes (mass and inertia are a box's of this size)
            size, geom.aabb, geom.rbound = hfields.geom_size_aabb_rbound(geom.hfield.size)
        shell = a["shellinertia"] == "true"
        volume, inertia = inr.geom_volume, inr.geom_inertia
        if geom.mesh is not None:
            pos, quat, size, geom.aabb = meshes.geom_from_mesh(geom.mesh.processed, pos, quat)
            pm = geom.mesh.processed
            volume = lambda *_: pm.volume  # noqa: E731  (mjCGeom::GetVolume of a mesh)
            inertia = lambda _t, _s, mass, _sh: meshes.mesh_inertia(pm, mass)  # noqa: E731
        if infer:
            if "mass" in a:
                if a["mass"] == 0:
                    geom.mass = 0.0
                else:
                    vol = volume(gtype, size, shell)
                    if vol > fr.EPS:
                        geom.mass = a["mass"]
                        geom.inertia = inertia(gtype, size, geom.mass, shell)
                        if a["mass"] < 0:
                            raise node.error("mass, inertia or density are negative in geom", "mass")
            else:
                density = a["density"]
                if density < 0:
                    raise node.error("mass, inertia or density are negative in geom", "density")
                if density != 0:
                    geom.mass = density * volume(gtype, size, shell)
                    geom.inertia = inertia(gtype, size, geom.mass, shell)
            if geom.mass < 0 or min(geom.inertia) < 0:
                raise node.error("mass, inertia or density are negative in geom", "mass")
        if geom.frame is not None:
            pos, quat = fr.frame_accum(geom.frame.pos, geom.frame.quat, pos, quat)
        geom.pos, geom.quat, geom.size = pos, quat, size

    def _geom_hfield(self, geom: Geom, gtype: int) -> hfields.HFieldAsset | None:
        """The height field an hfield geom references (mjCGeom::Compile's hfield checks)."""
        a, node = geom.attrs, geom.node
        if (gtype == GeomType.HFIELD) != ("hfield" in a):
            raise node.error("hfield geom must have valid hfieldid (an hfield geom names an <hfield> "
                             "asset, and only hfield geoms do)", "hfield" if "hfield" in a else "type")
        if "hfield" not in a:
            return None
        found = next((h for h in self.hfields if h.name == a["hfield"]), None)
        if found is None:
            raise node.error(f"hfield '{a['hfield']}' not found (no <asset><hfield> of that name)", "hfield")
        return found

    def _geom_mesh(self, geom: Geom, gtype: int) -> meshes.MeshAsset | None:
        """The mesh asset a geom references (mjCGeom::Compile's mesh checks); None for primitives."""
        a, node = geom.attrs, geom.node
        if "mesh" not in a:
            if gtype == GeomType.MESH:
                raise node.error("mesh geom must have valid meshid (no 'mesh' attribute)", "mesh")
            return None
        found = next((m for m in self.meshes if m.name == a["mesh"]), None)
        if found is None:
            raise node.error(f"mesh '{a['mesh']}' not found (no <asset><mesh> of that name)", "mesh")
        if "fromto" in a:
            raise node.error("fromto cannot be used with mesh geom", "fromto")
        if gtype in (GeomType.PLANE, GeomType.HFIELD):
            raise node.error(f"invalid geom type in fitting mesh {found.name}", "type")
        if gtype != GeomType.MESH:
            return found  # a primitive fitted to the mesh (_compile_geom); it keeps no reference
        if a["shellinertia"] == "true":
            raise node.error("for mesh geoms, inertia should be specified in the mesh asset", "shellinertia")
        found.geoms.append(geom)
        return found

    def _geom_alpha(self) -> np.ndarray:
        """geom_alpha: the alpha of each geom's material (its rgba, else its class's, else 1) or,
        without one, of the geom's rgba (engine.ray skips geoms at 0, as mj_ray)."""
        materials = {}
        for section in self.sections.get("asset", []):
            for node in section.children:
                if node.tag == "material":
                    rgba = node.attrib.get("rgba")
                    if rgba is None:
                        cls = self.classes.get(node.attrib.get("class", "main"))
                        rgba = cls.material_rgba if cls is not None else None
                    materials[node.attrib.get("name", "")] = rgba
        alpha = []
        for g in self.geoms:
            name = g.attrs.get("material")
            if name:
                rgba = materials.get(name)
                alpha.append(float(rgba.split()[3]) if rgba else 1.0)
            else:
                alpha.append(float(g.attrs.get("rgba", [0.5, 0.5, 0.5, 1.0])[3]))
        return np.array(alpha, dtype=float).reshape(len(self.geoms))

    def _mesh_arrays(self) -> tuple[dict, dict]:
        """mesh_* arrays and geom_dataid. A mesh keeps its convex hull (mesh_graph) when a mesh
        geom that can collide (contype, conaffinity or an explicit pair) uses it, its inertia
        is "convex" (mjCModel::TryCompile's SetNeedHull), or it has no faces (they are the hull's)."""
        in_pair = {p[k] for p in self.contacts.pairs for k in ("geom1", "geom2")}
        for mesh in self.meshes:
            mesh.needhull = mesh.attrs["inertia"] == "convex" or mesh.processed.faceless or any(
                g.attrs["contype"] or g.attrs["conaffinity"] or g.id in in_pair for g in mesh.geoms)
        dataid = [g.mesh.id if g.mesh is not None else g.hfield.id if g.hfield is not None else -1
                  for g in self.geoms]
        arr, sizes = meshes.mesh_arrays(self.meshes, dataid)
        harr, hsizes = hfields.hfield_arrays(self.hfields)
        arr.update(harr)
        sizes.update(hsizes)
        return arr, sizes

    def _fromto_or_orientation(self, node: Node, a: dict, kind: str, gtype: int, pos: list, quat: list,
                               size: list) -> tuple[list, list]:
        """(pos, quat) of a geom or site (``kind``) from ``fromto`` (which also sets size[1], and
        for ellipsoids and boxes moves it to size[2]), else quat from the alternative orientation
        attributes, if any (mjCGeom::Compile, mjCSite::Compile)."""
        if "fromto" in a:
            if gtype not in (GeomType.CAPSULE, GeomType.CYLINDER, GeomType.ELLIPSOID, GeomType.BOX):
                raise node.error(f"fromto requires capsule, cylinder, box or ellipsoid in {kind}", "fromto")
            if pos[0] or pos[1] or pos[2]:
                raise node.error(f"both pos and fromto defined in {kind}", "fromto")
            res = fr.fromto_frame(a["fromto"])
            if res is None:
                raise node.error(f"fromto points too close in {kind}", "fromto")
            pos, quat, size[1] = res
            if gtype in (GeomType.ELLIPSOID, GeomType.BOX):
                size[2], size[1] = size[1], size[0]
        else:
            q, err = fr.resolve_orientation({k: v for k, v in a.items() if k != "quat"},
                                            self.degree, self.eulerseq)
            if err:
                raise node.error(f"orientation specification error '{err}' in {kind}")
            if q is not None:
                quat = q
        return pos, quat

    def _compile_site(self, site: Site) -> None:
        """mjCSite::Compile."""
        a, node = site.attrs, site.node
        stype = _GEOMTYPE[a["type"]]
        site.type = stype
        if stype in (GeomType.MESH, GeomType.HFIELD, GeomType.PLANE, GeomType.SDF):
            raise node.error("meshes, hfields and planes not allowed in site", "type")
        self._single_orientation(node, a)
        size = list(a["size"])
        pos = list(a["pos"])
        quat = list(a.get("quat", [1.0, 0.0, 0.0, 0.0]))
        pos, quat = self._fromto_or_orientation(node, a, "site", stype, pos, quat, size)
        if site.frame is not None:
            pos, quat = fr.frame_accum(site.frame.pos, site.frame.quat, pos, quat)
        fr.normvec(quat)
        _check_size(node, stype, size)
        site.pos, site.quat, site.size = pos, quat, size

    def _compile_joint(self, joint: Joint) -> None:
        """mjCJoint::Compile: limits (autolimits, degrees), axis, pos, ref/springref units."""
        a, node = joint.attrs, joint.node
        jtype = _JOINTTYPE[a["type"]]
        joint.type = jtype
        springdamper = list(a["springdamper"])
        if (springdamper[0] or springdamper[1]) and min(springdamper) <= 0:
            raise node.error("when defined, springdamper values must be positive in joint", "springdamper")
        # spring plasticity (mjCJoint::Compile): a yield is an angle for hinge and ball joints
        springyield = a.get("springyield") or 0.0
        if springyield < 0:
            raise node.error("springyield cannot be negative in joint", "springyield")
        if springyield and jtype == JointType.FREE:
            raise node.error("springyield should not be defined in free joint", "springyield")
        if springyield and self.degree and jtype in (JointType.HINGE, JointType.BALL):
            springyield *= math.pi / 180.0
        rng = list(a["range"])
        limited = act.LIMITED[a["limited"]]
        if jtype == JointType.FREE:
            if limited == 1:
                raise node.error("limits should not be defined in free joint", "limited")
            limited = 0
        elif limited == 2 and not self.autolimits and not (rng[0] == 0 and rng[1] == 0):
            raise node.error("joint has `range` but not `limited`; set the autolimits=\"true\" compiler "
                             "option, specify `limited` explicitly (\"true\" or \"false\"), or remove the "
                             "`range` attribute", "range")
        is_limited = limited == 1 or (limited == 2 and rng[0] < rng[1])
        if is_limited:
            if rng[0] >= rng[1] and jtype != JointType.BALL:
                raise node.error("range[0] should be smaller than range[1] in joint", "range")
            if rng[0] and jtype == JointType.BALL:
                raise node.error("range[0] should be 0 in ball joint", "range")
            if self.degree and jtype in (JointType.HINGE, JointType.BALL):
                rng = [r * math.pi / 180.0 if r else r for r in rng]
        frc = list(a["actuatorfrcrange"])
        frclimited = act.LIMITED[a["actuatorfrclimited"]]
        if jtype in (JointType.FREE, JointType.BALL):
            frclimited = 0
        elif frclimited == 2 and not self.autolimits and not (frc[0] == 0 and frc[1] == 0):
            raise node.error("joint has `actuatorfrcrange` but not `actuatorfrclimited`; set the "
                             "autolimits=\"true\" compiler option or specify `actuatorfrclimited`",
                             "actuatorfrcrange")
        is_frclimited = frclimited == 1 or (frclimited == 2 and frc[0] < frc[1])
        if is_frclimited and frc[0] >= frc[1]:
            raise node.error("actfrcrange[0] should be smaller than actfrcrange[1] in joint",
                             "actuatorfrcrange")
        if jtype in (JointType.FREE, JointType.BALL):
            axis = [0.0, 0.0, 1.0]
        else:
            axis = list(a["axis"])
            if joint.frame is not None:
                axis = fr.rot_vec_quat(axis, joint.frame.quat)
        if fr.normvec(axis) < fr.EPS:
            raise node.error("axis too small in joint", "axis")
        if jtype == JointType.FREE:
            pos = [0.0, 0.0, 0.0]
        else:
            pos = list(a["pos"])
            if joint.frame is not None:
                pos, _ = fr.frame_accum(joint.frame.pos, joint.frame.quat, pos, [1.0, 0.0, 0.0, 0.0])
        ref, springref = a["ref"], a["springref"]
        if jtype == JointType.HINGE and self.degree:
            ref *= math.pi / 180.0
            springref *= math.pi / 180.0
        joint.range = rng
        joint.compiled = dict(limited=int(is_limited), actfrclimited=int(is_frclimited), range=rng,
                              actfrcrange=frc, axis=axis, pos=pos, ref=ref, springref=springref,
                              group=a["group"], stiffness=a["stiffness"][0], damping=a["damping"][0],
                              springyield=springyield,
                              stiffnesspoly=list(a["stiffness"][1:3]), dampingpoly=list(a["damping"][1:3]),
                              armature=a["armature"], frictionloss=a["frictionloss"], margin=a["margin"],
                              solref=list(a["solreflimit"]), solimp=list(a["solimplimit"]),
                              solreffriction=list(a["solreffriction"]),
                              solimpfriction=list(a["solimpfriction"]),
                              actgravcomp=int(a["actuatorgravcomp"] == "true"), springdamper=springdamper)

    def _check_moving_masses(self) -> None:
        # valid: the body, or a body welded to it through jointless children, has mass and inertia;
        # children come after their parent in self.bodies, so one backward sweep settles it
        valid = [False] * len(self.bodies)
        for b in reversed(self.bodies[1:]):
            valid[b.id] = (b.mass >= MINVAL and min(b.inertia) >= MINVAL) or any(
                valid[c.id] for c in b.children if not c.joints)
        for b in self.bodies[1:]:
            if b.joints and not valid[b.id]:
                self._unphysical(b, "moving body without mass or inertia (below mjMINVAL)",
                                 b.error("mass and inertia of moving bodies must be larger than mjMINVAL"))

    def _geom_site_arrays(self, arr: dict) -> dict[str, int]:
        """The geom_*, mesh_*, hfield_* and site_* arrays and the *_sameframe flags into ``arr``
        (after the tree's: the frames are compared with the bodies'); their sizes."""
        geoms, sites = self.geoms, self.sites
        ngeom, nsite = len(geoms), len(sites)
        # geoms and sites
        arr["geom_type"] = np.array([g.type for g in geoms], dtype=np.int32)
        for key, attr in (("geom_contype", "contype"), ("geom_conaffinity", "conaffinity"),
                          ("geom_condim", "condim"), ("geom_group", "group")):
            arr[key] = np.array([g.attrs[attr] for g in geoms], dtype=np.int32)
        arr["geom_bodyid"] = np.array([g.body.id for g in geoms], dtype=np.int32)
        arr["geom_size"] = np.array([g.size for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_alpha"] = self._geom_alpha()
        mesh_arr, mesh_sizes = self._mesh_arrays()
        arr.update(mesh_arr)
        arr["geom_pos"] = np.array([g.pos for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_quat"] = np.array([g.quat for g in geoms], dtype=float).reshape(ngeom, 4)
        arr["geom_friction"] = np.array([g.attrs["friction"] for g in geoms], dtype=float).reshape(ngeom, 3)
        arr["geom_fluid"] = np.array([geom_fluid(g.type, g.size, g.attrs["fluidshape"] == "ellipsoid",
                                                 _fluidcoef(g.attrs)) for g in geoms],
                                     dtype=float).reshape(ngeom, NFLUID)
        arr["site_type"] = np.array([s.type for s in sites], dtype=np.int32)
        arr["site_bodyid"] = np.array([s.body.id for s in sites], dtype=np.int32)
        arr["site_group"] = np.array([s.attrs["group"] for s in sites], dtype=np.int32)
        arr["site_size"] = np.array([s.size for s in sites], dtype=float).reshape(nsite, 3)
        arr["site_pos"] = np.array([s.pos for s in sites], dtype=float).reshape(nsite, 3)
        arr["site_quat"] = np.array([s.quat for s in sites], dtype=float).reshape(nsite, 4)
        # frames that coincide with their body's frame or inertial frame are copied by kinematics
        arr["body_sameframe"] = fr.same_frame(arr["body_ipos"], arr["body_iquat"], None, None)
        for kind in ("geom", "site"):
            owner = arr[f"{kind}_bodyid"]
            arr[f"{kind}_sameframe"] = fr.same_frame(arr[f"{kind}_pos"], arr[f"{kind}_quat"],
                                                  arr["body_ipos"][owner], arr["body_iquat"][owner])
        return dict(ngeom=ngeom, nsite=nsite, **mesh_sizes)


def _fluidcoef(attrs: dict) -> list[float]:
    """The geom's fluidcoef: the values given, then the defaults of the rest."""
    coef = list(FLUIDCOEF_DEFAULT)
    given = attrs.get("fluidcoef", [])
    coef[:len(given)] = given
    return coef


def _check_size(node: Node, gtype: int, size: list) -> None:
    """checksize(): the size parameters a type uses must be positive."""
    if gtype == GeomType.PLANE:
        if size[2] <= 0:
            raise node.error("plane size(3) must be positive", "size")
        return
    for i in range(_GEOMINFO[GeomType(gtype)]):
        if size[i] <= 0:
            raise node.error(f"size {i} must be positive in {node.tag}", "size")


# principal moments under this fraction of a body's largest are raised to it by inertia="nearest_pd"
PD_FLOOR = 1e-6


def nearest_pd(inertia: list[float]) -> list[float]:
    """The principal moments of the positive-definite inertia nearest (Frobenius norm, the same
    principal axes) to one that is not (a moment under 1e-14, MuJoCo's test): each moment under
    ``PD_FLOOR`` times the largest magnitude (MINVAL at least) raised to it, the others left as they
    are; a positive-definite one is unchanged. A + B >= C is not enforced ("balance" does that)."""
    if min(inertia) >= 1e-14:  # MuJoCo's test of a positive-definite fullinertia
        return list(inertia)
    floor = max(PD_FLOOR * max(abs(i) for i in inertia), MINVAL)
    return [max(i, floor) for i in inertia]
