"""Compiling big models: a 2000-body forest equals MuJoCo's model, and the contact pair count the
compiler makes without visiting every geom pair equals the count of a geom-by-geom scan.

No timing here: ``python -m bench.compile_scaling`` measures the compile times (docs/benchmarks.md).
"""

from __future__ import annotations

import mujoco
import pytest
from oracle import assert_model_fields, gym_model_path, model_paths

import kinedyn as kd
from bench.compile_scaling import forest_xml
from kinedyn.compiler import contacts
from kinedyn.compiler.contacts import _MAXCON, ContactCompiler, _rows_per_contact


def test_forest_of_2000_bodies_matches_mujoco():
    """Every model field of a forest of 2000 bodies (2668 geoms, free, hinge, slide and ball joints,
    tendons, equalities, actuators, pairs, excludes) equals MuJoCo's; body_invweight0 and
    dof_invweight0 come from solves restricted to each body's dof chain."""
    xml = forest_xml(2000)
    m = kd.Model.from_xml_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert (m.nbody, m.ngeom, m.nv, m.ntendon, m.neq) == (mjm.nbody, mjm.ngeom, mjm.nv, mjm.ntendon, mjm.neq)
    assert m.nbody == 2001 and m.ntendon > 3 and m.neq > 3 and m.npair == 2
    assert_model_fields(m, mjm)


def _scan_by_pairs(cc: ContactCompiler) -> tuple[int, int, int, dict]:
    """(ncon, nrow, widest, {type pair: first (geom1, geom2)}) over every pair of geoms, one at a time."""
    c = cc.c
    ncon = nrow = 0
    widest = 1
    types: dict = {}
    for p in cc.pairs:
        g1, g2 = c.geoms[p["geom1"]], c.geoms[p["geom2"]]
        key = (min(g1.type, g2.type), max(g1.type, g2.type))
        types.setdefault(key, (g1, g2))
        ncon += _MAXCON[key]
        nrow += _MAXCON[key] * _rows_per_contact(p["dim"])
        widest = max(widest, _rows_per_contact(p["dim"]))
    excluded = {s for s, _ in cc.excludes}
    # geoms in the order of their (body, contype, conaffinity, type, condim) groups: the first pair of a
    # type pair in that order is the one an error names
    order = sorted((g for g in c.geoms if g.attrs["contype"] or g.attrs["conaffinity"]),
                   key=lambda g: (g.body.id, g.attrs["contype"], g.attrs["conaffinity"], g.type,
                                  g.attrs["condim"]))
    for i, g in enumerate(order):
        for h in order[i + 1:]:
            wg, wh = c.bodies[g.body.id].weldid, c.bodies[h.body.id].weldid
            if wg == wh or (c.bodies[wg].dofnum == 0 and c.bodies[wh].dofnum == 0):
                continue
            ga, ha = g.attrs, h.attrs
            if not (ga["contype"] & ha["conaffinity"] or ha["contype"] & ga["conaffinity"]):
                continue
            b1, b2 = sorted((g.body.id, h.body.id))
            if (b1 << 16) + b2 in excluded:
                continue
            key = (min(g.type, h.type), max(g.type, h.type))
            types.setdefault(key, (g, h))
            rows = _rows_per_contact(max(g.attrs["condim"], h.attrs["condim"]))
            ncon += _MAXCON[key]
            nrow += _MAXCON[key] * rows
            widest = max(widest, rows)
    return ncon, nrow, widest, types


def _compilers(xml_or_path, monkeypatch) -> ContactCompiler:
    seen: list[ContactCompiler] = []
    arrays = ContactCompiler.arrays

    def spy(self, arr):
        seen.append(self)
        return arrays(self, arr)

    monkeypatch.setattr(ContactCompiler, "arrays", spy)
    if isinstance(xml_or_path, str):
        kd.Model.from_xml_string(xml_or_path)
    else:
        kd.Model.from_xml_path(xml_or_path)
    monkeypatch.setattr(ContactCompiler, "arrays", arrays)
    return seen[-1]


MODELS = ["forest", "humanoid", "ant", *(p.stem for p in model_paths())]


def test_pair_count_equals_a_geom_by_geom_scan(monkeypatch):
    """The static contact bound (nconmax before its cap, the row count, the widest contact) and the type
    pairs present equal those of a scan of every geom pair, on a forest with mixed bitmasks, excludes
    (one inside a weld group) and dof-less bodies, on gymnasium models and on the test models; an
    unsupported type pair names the first pair of geoms the scan meets."""
    checked = 0
    for name in MODELS:
        if name == "forest":
            source = forest_xml(150, tree_size=20, nconmax=None, masks=True)
        elif name in ("humanoid", "ant"):
            source = gym_model_path(name)
        else:
            source = next(p for p in model_paths() if p.stem == name)
        cc = _compilers(source, monkeypatch)
        scan = cc._pair_scan()
        ncon, nrow, widest, types = _scan_by_pairs(cc)
        assert (scan["ncon"], scan["nrow"], scan["widest"]) == (ncon, nrow, widest), name
        assert set(scan["types"]) == set(types), name
        if name == "forest":
            assert ncon > 10 * contacts.NCONMAX_CAP  # big enough for the cap to apply
        for key in set(types) - contacts.NOT_COLLIDED:
            supported = set(types) - {key}
            with pytest.raises(kd.ModelError, match="are not supported yet") as err:
                cc.check_colliders(supported)
            g1, g2 = types[key]
            assert err.value.line == g2.node.line, (name, key)
            assert f"at line {g1.node.line})" in str(err.value), (name, key)
        checked += bool(types)
    assert checked > 10
