"""The ``<compiler>`` and ``<option>`` sections: compiler settings, simulation and solver options.

``<compiler>`` settings (mjs_defaultCompiler; angle units, Euler sequence, inertia from geoms,
mass bounds, ``<lengthrange>``) steer the rest of the compilation; ``<option>`` gives the
timestep, gravity, the medium, the integrator, the ``<flag>`` bits (xml_native_reader Option)
and the constraint solver's settings, which become the model's :class:`~kinedyn.engine.model.Option`.
"""

from __future__ import annotations

from kinedyn.engine.model import Option
from kinedyn.engine.types import ConeType, DisableBit, IntegratorType, JacobianType, SolverType
from kinedyn.xml.mjcf import FLAG_BITS_DISABLE, FLAG_BITS_ENABLE, Node, typed_attrs


class OptionsMixin:
    """The Compiler's ``<compiler>`` and ``<option>`` readers (see
    :class:`kinedyn.compiler.build.Compiler`)."""

    def _compiler(self, node: Node) -> None:
        a = typed_attrs(node)
        for child in node.children:
            if child.tag != "lengthrange" or child.children:
                raise (child.children[0] if child.tag == "lengthrange" else child).error(
                    "Schema violation: unrecognized element")
            self.lropt.update(typed_attrs(child))  # <lengthrange>: see setconst.set_length_range
        if a.get("coordinate", "local") != "local":
            # MuJoCo 4.0 accepts coordinate="local" (the only frame it supports) and rejects "global"
            raise node.error("global coordinates are no longer supported by MuJoCo", "coordinate")
        if "angle" in a:
            self.degree = a["angle"] == "degree"
        if "autolimits" in a:
            self.autolimits = a["autolimits"] == "true"
        if "eulerseq" in a:
            seq = a["eulerseq"]
            if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                raise node.error(f"eulerseq must be 3 characters from xyzXYZ, got {seq!r}", "eulerseq")
            self.eulerseq = seq
        if "inertiafromgeom" in a:
            self.inertiafromgeom = a["inertiafromgeom"]
        if "inertiagrouprange" in a:
            self.inertiagrouprange = tuple(a["inertiagrouprange"])
        if "fitaabb" in a:
            self.fitaabb = a["fitaabb"] == "true"
        self.boundmass = a.get("boundmass", self.boundmass)
        self.boundinertia = a.get("boundinertia", self.boundinertia)
        if "balanceinertia" in a:
            self.balanceinertia = a["balanceinertia"] == "true"
        if "fusestatic" in a:
            self.fusestatic = a["fusestatic"] == "true"
        if "alignfree" in a:
            self.alignfree = a["alignfree"] == "true"
        self.settotalmass = a.get("settotalmass", self.settotalmass)
        if "discardvisual" in a:
            self.discardvisual = a["discardvisual"] == "true"

    def _option(self, node: Node) -> None:
        a = typed_attrs(node)
        for key in ("timestep", "density", "viscosity"):
            if key in a:
                self.opt[key] = a[key]
        for key in ("gravity", "wind", "magnetic"):
            if key in a:
                self.opt[key] = list(a[key])
        if "integrator" in a:
            name = a["integrator"]
            self.opt["integrator"] = int({"Euler": IntegratorType.EULER, "RK4": IntegratorType.RK4,
                                          "implicit": IntegratorType.IMPLICIT,
                                          "implicitfast": IntegratorType.IMPLICITFAST,
                                          "discrete": IntegratorType.DISCRETE}[name])
        if not self.opt["timestep"] > 0:
            raise node.error("timestep must be positive", "timestep")
        self._solver_options(node, a)
        flags = node.find_all("flag")
        if len(flags) > 1:
            raise flags[1].error(f"Schema violation: unique element 'flag' found {len(flags)} times")
        for child in node.children:
            if child.tag != "flag" or child.children:
                raise (child.children[0] if child.tag == "flag" else child).error(
                    "Schema violation: unrecognized element")
            flags = typed_attrs(child)
            for name, value in flags.items():
                if name == "passive":
                    bits, family = int(DisableBit.SPRING | DisableBit.DAMPER), "disableflags"
                elif name in FLAG_BITS_DISABLE:
                    bits, family = 1 << FLAG_BITS_DISABLE.index(name), "disableflags"
                else:
                    bits, family = 1 << FLAG_BITS_ENABLE.index(name), "enableflags"
                on = (value == "disable") if family == "disableflags" else (value == "enable")
                if name == "sleep":  # what sleeping does not cover yet is refused on it (compiler.sleep)
                    self.sleep_flag = child
                self.opt[family] = (self.opt[family] | bits) if on else (self.opt[family] & ~bits)

    def _solver_options(self, node: Node, a: dict) -> None:
        """The constraint solver's <option> attributes (mjOption; xml_native_reader Option).

        Vectors given in part keep the rest of their current value, as MuJoCo's reader writes
        the given leading values in place. MuJoCo takes any number (negative iterations or
        tolerances included); kinedyn's Option refuses what its solver cannot use, and that
        refusal is reported here, on the attribute.
        """
        enums = {"solver": SolverType, "cone": ConeType, "jacobian": JacobianType}
        defaults = dict(Option.SOLVER_OPTIONS)
        scratch = Option()
        for key, _ in Option.SOLVER_OPTIONS:
            if key not in a:
                continue
            value = a[key]
            if key in enums:
                value = int(enums[key][value.upper()])
            elif isinstance(value, list):
                current = list(self.solver_opt.get(key, defaults[key]))
                value = value + current[len(value):]
            try:
                setattr(scratch, key, value)
            except ValueError as err:
                raise node.error(f"{err} (kinedyn's constraint solver cannot use it)", key) from None
            self.solver_opt[key] = value

    def _model_option(self) -> Option:
        """The compiled model's Option: <option>'s values, the solver settings given, and the
        general convex collider's capacity (sized by the contact compiler)."""
        o = self.opt
        opt = Option(timestep=o["timestep"], gravity=o["gravity"], integrator=o["integrator"],
                     disableflags=o["disableflags"], enableflags=o["enableflags"], wind=o["wind"],
                     density=o["density"], viscosity=o["viscosity"], magnetic=o["magnetic"],
                     **self.solver_opt)
        object.__setattr__(opt, "_ccd_capacity", self.contacts.ccd_capacity)
        return opt
