# ruff: noqa: E501  (MJCF literals read better unwrapped)
"""Fuzz the MJCF reader and compiler: every input must give a Model or a ModelError.

    PYTHONPATH=src python tests/fuzz/fuzz_mjcf.py --minutes 10 [--seed N] [--timeout 60] [--no-mujoco]

Inputs are mutations of valid models (the bundled ``src/kinedyn/models/*.xml``,
the test models of ``oracle.model_paths`` and the small models in :data:`SEEDS`):
attribute values replaced by garbage (nan, inf, 1e400, empty, wrong counts, zero
quaternions, ...), attributes and elements added, removed, duplicated or renamed,
references pointed at unknown names, deep nesting, huge element counts, entity
tricks, and byte-level damage (odd bytes, BOMs, UTF-16, truncation) passed both as
``str`` to ``Model.from_xml_string`` and as a file to ``Model.from_xml_path``.

Each case runs in a worker process (Numba stays warm between cases) under a
per-case timeout and a memory limit; a case that times out, crashes the worker, raises
anything but ModelError, raises a ModelError that names an element but no line, or
compiles into a Model with nan (or inf outside a range) is a failure. Failures are minimised
(elements, then attributes, then lines removed while the failure stays the same) and
written to ``tests/fuzz/corpus/`` (replayed by ``tests/test_fuzz.py``, where a new file's
outcome, once fixed, is recorded in ``CORPUS_OUTCOME``).

With MuJoCo installed, every input kinedyn compiles is also given to
``mujoco.MjModel.from_xml_string``; a model MuJoCo rejects and kinedyn accepts is
reported as a mismatch (listed at the end, and saved as ``mismatch-*.xml``).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import random
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "corpus"

# ---- seeds --------------------------------------------------------------------------------------

SEEDS = [
    """<mujoco model="chain">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.01" gravity="0 0 -9.81" integrator="RK4"><flag contact="disable"/></option>
  <default>
    <joint damping="0.1" armature="0.01"/>
    <geom type="capsule" size="0.05 0.2" density="500"/>
    <default class="thin"><geom size="0.02 0.1"/><site size="0.01"/></default>
  </default>
  <worldbody>
    <body name="b1" pos="0 0 1" euler="0 0.3 0">
      <joint name="j1" type="hinge" axis="0 1 0" range="-1 1"/>
      <geom fromto="0 0 0 0 0 -0.4"/>
      <site name="s1" pos="0 0 -0.4"/>
      <body name="b2" pos="0 0 -0.4" quat="1 0 0 0" childclass="thin">
        <joint name="j2" type="slide" axis="1 0 0"/>
        <geom type="box" size="0.1 0.1 0.1" mass="2"/>
        <frame pos="0 0.1 0" axisangle="0 0 1 0.5">
          <site name="s2" type="sphere"/>
          <geom type="ellipsoid" size="0.05 0.06 0.07"/>
        </frame>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="t1"><joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed></tendon>
  <actuator>
    <motor name="m1" joint="j1" gear="2" ctrlrange="-1 1"/>
    <position name="p2" joint="j2" kp="10" dampratio="1"/>
    <general name="g" tendon="t1" dyntype="filter" dynprm="0.1" gainprm="3" biastype="affine"/>
  </actuator>
  <keyframe><key name="k" qpos="0.1 0.2" ctrl="0 0 0" time="1"/></keyframe>
</mujoco>
""",
    """<mujoco>
  <worldbody>
    <body name="free" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <body name="arm" pos="0.2 0 0" xyaxes="0 1 0 -1 0 0">
        <joint name="ball" type="ball"/>
        <geom type="cylinder" size="0.03 0.1" zaxis="1 0 0"/>
        <site name="tip" pos="0 0 0.1"/>
        <body name="hand"><joint name="h" axis="1 0 0"/><inertial pos="0 0 0" mass="0.5" fullinertia="0.1 0.1 0.1 0 0 0"/></body>
      </body>
    </body>
    <site name="anchor" pos="0 0 2"/>
  </worldbody>
  <tendon>
    <spatial name="sp" width="0.01"><site site="anchor"/><site site="tip"/></spatial>
  </tendon>
  <actuator>
    <muscle name="mu" tendon="sp"/>
    <velocity joint="h" kv="2"/>
    <motor site="tip" gear="0 0 1 0 0 0"/>
  </actuator>
  <keyframe><key qpos="0 0 1 1 0 0 0 1 0 0 0 0"/></keyframe>
</mujoco>
""",
    """<mujoco>
  <option><flag contact="disable" gravity="disable"/></option>
  <default>
    <default class="a"><joint axis="1 0 0"/><default class="b"><joint axis="0 1 0" range="0 1"/></default></default>
    <position kp="5"/><intvelocity kp="3"/>
  </default>
  <worldbody>
    <body name="x" childclass="a"><joint name="ja"/><geom size="0.1"/>
      <body name="y" childclass="b"><joint name="jb"/><geom size="0.1"/></body>
    </body>
  </worldbody>
  <actuator>
    <position joint="ja" inheritrange="1" ctrlrange="-1 1"/>
    <intvelocity joint="jb" actrange="-1 1"/>
    <cylinder joint="ja" area="0.1"/>
    <damper joint="jb" kv="1" ctrlrange="0 1"/>
    <adhesion body="y" ctrlrange="0 1"/>
  </actuator>
</mujoco>
""",
    """<mujoco>
  <asset><material name="m" rgba="1 0 0 1"/></asset>
  <visual><global offwidth="64"/></visual>
  <custom><numeric name="n" data="1 2"/></custom>
  <worldbody>
    <frame pos="0 0 1" euler="0 0 30">
      <replicate count="3" offset=".5 0 0" euler="0 10 20" sep="_">
        <body name="b"><joint name="j"/><geom name="g" size=".1" material="m"/><site name="s"/></body>
      </replicate>
    </frame>
  </worldbody>
  <tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>
  <equality><connect body1="b" anchor="0 0 1"/></equality>
  <actuator><motor name="m" joint="j"/><position tendon="t" kp="2"/></actuator>
</mujoco>
""",
]


def seed_texts() -> list[str]:
    """SEEDS, the bundled models and the test models (with the optional extra corpus, oracle.model_paths)."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from oracle import model_paths

    paths = [*sorted((ROOT / "src" / "kinedyn" / "models").glob("*.xml")), *model_paths()]
    return list(SEEDS) + [p.read_text(encoding="utf-8") for p in paths]


# ---- mutations ----------------------------------------------------------------------------------

GARBAGE = ["", " ", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e308", "-1e308", "1e-320",
           "0", "-0", "-1", "1", "2", "0 0 0 0", "0 0 0", "0 0", "1 2", "1 2 3 4 5 6 7 8 9 10 11", "abc",
           "0x1p3", "1_0", "1,2", "1e", ".", "-", "+", "true", "false", "auto", "main", "world", "\u0661",
           "99999999999999999999", "-2147483649", "2147483647", "1.5", "1e-300 1e-300 1e-300",
           "1e300 1e300 1e300", "0 0 0 0 0 0", "1 1 1 1 1 1", "degree", "none", "user", "muscle", "&amp;",
           "\t\n", "nan(1)", "0 0 1 0", "-1 -1 -1", "1 0 0 1e400", "1e-16 0 0"]
TAGS = ["body", "geom", "joint", "site", "frame", "inertial", "freejoint", "default", "motor", "position",
        "general", "muscle", "fixed", "spatial", "key", "tendon", "actuator", "worldbody", "option", "flag",
        "compiler", "size", "keyframe", "camera", "light", "contact", "exclude", "pair", "equality",
        "sensor", "asset", "mesh", "plugin", "include", "replicate", "bogus", "pulley", "adhesion", "velocity"]


def _schema():
    from kinedyn.xml.mjcf import SCHEMA
    return SCHEMA


def _names(root: ET.Element) -> list[str]:
    out = [e.get(a) for e in root.iter() for a in ("name", "class") if e.get(a)]
    return out or ["x"]


def random_value(rng: random.Random, names: list[str]) -> str:
    r = rng.random()
    if r < 0.45:
        return rng.choice(GARBAGE)
    if r < 0.6:
        return rng.choice(names) + rng.choice(["", "", "_missing"])
    if r < 0.85:
        n = rng.choice([1, 2, 3, 4, 5, 6, 7, 10, 11])
        pick = [lambda: f"{rng.uniform(-2, 2):.3g}", lambda: f"{rng.uniform(-9.99, 9.99):.2f}e{rng.randint(-330, 330)}",
                lambda: rng.choice(["0", "1", "-1", "nan", "inf", "1e400"]), lambda: str(rng.randint(-5, 5))]
        return " ".join(rng.choice(pick)() for _ in range(n))
    return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x2FFF)])) for _ in range(rng.randint(0, 8)))


def mutate_tree(rng: random.Random, root: ET.Element) -> None:
    schema = _schema()
    elems = list(root.iter())
    parents = {c: p for p in root.iter() for c in p}
    names = _names(root)
    e = rng.choice(elems)
    op = rng.randrange(12)
    if op <= 3 and e.attrib:  # garbage value
        e.set(rng.choice(list(e.attrib)), random_value(rng, names))
    elif op == 4:  # add an attribute the schema knows for this tag (or any)
        attrs = list(schema.get(e.tag, {})) or ["pos", "size", "name", "class", "childclass", "quat"]
        e.set(rng.choice(attrs), random_value(rng, names))
    elif op == 5 and e.attrib:
        del e.attrib[rng.choice(list(e.attrib))]
    elif op == 6 and e in parents:
        parents[e].remove(e)
    elif op == 7 and e in parents:  # duplicate (duplicate names)
        import copy
        parents[e].insert(list(parents[e]).index(e), copy.deepcopy(e))
    elif op == 8:
        e.tag = rng.choice(TAGS)
    elif op == 9:  # insert a random element
        child = ET.SubElement(e, rng.choice(TAGS))
        for _ in range(rng.randint(0, 3)):
            attrs = list(schema.get(child.tag, {})) or ["name", "pos", "size"]
            child.set(rng.choice(attrs), random_value(rng, names))
    elif op == 10 and e in parents:  # move under another element (possibly a cycle-free odd spot)
        target = rng.choice(elems)
        if target is not e and e not in {p for p in _ancestors(target, parents)}:
            parents[e].remove(e)
            target.append(e)
    elif op == 11:  # class / childclass references
        attr = rng.choice(["class", "childclass"])
        e.set(attr, rng.choice(names + ["main", "nope", ""]))


def _ancestors(e, parents):
    while e in parents:
        e = parents[e]
        yield e


def structural_case(rng: random.Random) -> str:
    """Deep nesting, huge counts, nested defaults, entity tricks."""
    kind = rng.randrange(7)
    if kind == 0:
        n = rng.choice([100, 400, 496, 497, 498, 600, 2000, 10000])
        tag = rng.choice(["body", "frame", "mixed"])
        opens = []
        for _ in range(n):
            t = tag if tag != "mixed" else rng.choice(["body", "frame"])
            opens.append('<body><joint/><geom size=".1"/>' if t == "body" else '<frame pos="0 0 .1">')
        closes = ["</body>" if o.startswith("<body") else "</frame>" for o in reversed(opens)]
        return f'<mujoco><option><flag contact="disable"/></option><worldbody>{"".join(opens)}{"".join(closes)}</worldbody></mujoco>'
    if kind == 1:
        n = rng.choice([1000, 1000, 10000, 10000, 30000, 100000])
        if rng.random() < 0.5:
            body = '<body><joint/>' + '<geom size=".1"/>' * n + '</body>'
        else:
            body = '<body><joint/><geom size=".1"/></body>' * (n // 10)
        return f"<mujoco><worldbody>{body}</worldbody></mujoco>"
    if kind == 2:
        n = rng.choice([10, 400, 498, 499, 1000, 5000])
        return ("<mujoco>" + "".join(f'<default class="c{i}">' if i else "<default>" for i in range(n))
                + "</default>" * n + '<worldbody><body childclass="c3"><joint/><geom size=".1"/></body></worldbody></mujoco>')
    if kind == 3:  # billion laughs and friends
        ents = '<!ENTITY lol "lol">' + "".join(f'<!ENTITY lol{i + 1} "{("&lol%s;" % (i or "")) * 10}">' for i in range(9))
        return f'<?xml version="1.0"?><!DOCTYPE lolz [{ents}]><mujoco model="&lol9;"/>'
    if kind == 4:
        return rng.choice([
            '<!DOCTYPE m [<!ENTITY e SYSTEM "file:///etc/passwd">]><mujoco model="&e;"/>',
            '<!DOCTYPE m [<!ENTITY % p SYSTEM "http://127.0.0.1:1/x">%p;]><mujoco/>',
            '<!DOCTYPE mujoco><mujoco/>', '<mujoco model="&amp;&lt;&#0;"/>', '<mujoco model="&#xD800;"/>',
            '<mujoco><![CDATA[x]]></mujoco>', '<?xml version="1.1"?><mujoco/>', "<mujoco/><mujoco/>", ""])
    if kind == 5:
        n = rng.choice([10, 1000, 100000, 10 ** 8, 2 ** 31])
        return rng.choice([f'<mujoco><size nkey="{n}"/></mujoco>',
                           f'<mujoco><worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody><actuator>'
                           f'<general joint="j" dyntype="user" actdim="{n}"/></actuator></mujoco>',
                           '<mujoco><keyframe>' + '<key/>' * min(n, 200000) + '</keyframe></mujoco>'])
    n = rng.choice([100, 1000, 5000])
    return ('<mujoco><worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody><actuator>'
            + '<motor joint="j"/>' * n + '</actuator></mujoco>')


def byte_mutation(rng: random.Random, data: bytes) -> bytes:
    op = rng.randrange(8)
    b = bytearray(data)
    if op == 0 and b:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 1:
        pos = rng.randint(0, len(b))
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    elif op == 2:
        del b[rng.randint(0, len(b)):]
    elif op == 3:
        return rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf\xef\xbb\xbf"]) + data
    elif op == 4:
        enc = rng.choice(["utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252"])
        text = data.decode("utf-8", "replace")
        if rng.random() < 0.5:
            text = f'<?xml version="1.0" encoding="{rng.choice([enc, "UTF-8", "bogus", "ascii"])}"?>\n' + text
        return text.encode(enc, "replace")
    elif op == 5:
        return data.replace(b'"', b"'", rng.randint(1, 5))
    elif op == 6 and b:
        pos = rng.randrange(len(b))
        b[pos:pos] = rng.choice([b"\x00", b"\xc3", b"\xed\xa0\x80", b"<", b"&", b"]]>", b"<!--", b"\r", b"\x1b"])
    else:
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        if len(lines) > 2:
            i = rng.randrange(len(lines))
            del lines[i]
        return "\n".join(lines).encode()
    return bytes(b)


def make_case(rng: random.Random, seeds: list[str]) -> tuple[str, bytes]:
    """(how to pass it: 'string' or 'path', the input bytes)."""
    r = rng.random()
    if r < 0.08:
        return rng.choice(["string", "path"]), structural_case(rng).encode("utf-8", "surrogatepass")
    seed = rng.choice(seeds)
    root = ET.fromstring(seed)
    for _ in range(rng.choice([1, 1, 2, 3, 5, 8])):
        mutate_tree(rng, root)
    data = ET.tostring(root, encoding="unicode").encode("utf-8", "surrogatepass")
    if r < 0.3:
        data = byte_mutation(rng, data)
    return ("path" if rng.random() < 0.3 else "string"), data


# ---- running one case ---------------------------------------------------------------------------

def run_case(how: str, data: bytes, with_mujoco: bool) -> tuple[str, str, str | None]:
    """(outcome, detail, mujoco outcome or None): outcome 'model', 'error' or a failure 'FAIL:...'."""
    import traceback
    import warnings

    import numpy as np

    import kinedyn as kd
    from kinedyn.errors import ModelError

    text = data.decode("utf-8", "surrogateescape")  # odd bytes become lone surrogates in the str
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if how == "path":
                with tempfile.NamedTemporaryFile(suffix=".xml", delete=False) as f:
                    f.write(data)
                try:
                    m = kd.Model.from_xml_path(f.name)
                finally:
                    os.unlink(f.name)
            else:
                m = kd.Model.from_xml_string(text)
    except ModelError as err:
        if err.element not in (None, "worldbody") and err.line is None:
            return "FAIL:noline", str(err), None
        return "error", str(err)[:300], None
    except BaseException as err:  # noqa: BLE001 - the point of the fuzzer
        tb = traceback.extract_tb(err.__traceback__)
        where = next((f"{Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb) if "kinedyn" in fr.filename),
                     "?")
        return f"FAIL:{type(err).__name__}@{where}", f"{type(err).__name__}: {err}"[:500], None
    from kinedyn.engine.fields import MODEL_FIELDS
    for spec in MODEL_FIELDS:
        arr = getattr(m, spec.name)
        bad = np.isnan(arr) if spec.name.endswith("range") else ~np.isfinite(arr)  # ranges may be unbounded
        if arr.dtype.kind == "f" and bad.any():
            return f"FAIL:nonfinite:{spec.name}", f"{spec.name} not finite", None
    mj = None
    if with_mujoco and how == "string" and m.nbody < 5000 and m.ngeom < 5000:
        mj = "pending"
    return "model", repr(m), mj


def _worker(conn, with_mujoco: bool) -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        how, data = msg
        outcome, detail, mj = run_case(how, data, with_mujoco)
        conn.send((outcome, detail))
        if mj == "pending":
            try:
                import mujoco
                mujoco.MjModel.from_xml_string(data.decode("utf-8", "surrogateescape"))
                conn.send("ok")
            except Exception as err:  # noqa: BLE001
                conn.send("rejected: " + str(err).splitlines()[0][:200])
        else:
            conn.send(None)


class Runner:
    """A worker process with a per-case timeout; restarted after a timeout or a crash."""

    def __init__(self, timeout: float, with_mujoco: bool):
        self.timeout, self.with_mujoco = timeout, with_mujoco
        self.proc = None

    def _start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.with_mujoco), daemon=True)
        self.proc.start()

    def _kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None

    def run(self, how: str, data: bytes) -> tuple[str, str, str | None]:
        if self.proc is None:
            self._start()
        self.conn.send((how, data))
        if not self.conn.poll(self.timeout):
            self._kill()
            return f"FAIL:timeout>{self.timeout:.0f}s", "", None
        try:
            outcome, detail = self.conn.recv()
        except EOFError:
            code = self.proc.exitcode
            self._kill()
            return f"FAIL:crash({code})", "", None
        # MuJoCo's verdict (it may hang or crash on the input: not kinedyn's failure)
        if not self.conn.poll(self.timeout):
            self._kill()
            return outcome, detail, "timeout"
        try:
            mj = self.conn.recv()
        except EOFError:
            self._kill()
            mj = "crash"
        return outcome, detail, mj

    def close(self):
        if self.proc is not None:
            self.conn.send(None)
            self.proc.join(5)
            self._kill()


# ---- minimising and saving ----------------------------------------------------------------------

def minimise(runner: Runner, how: str, data: bytes, signature: str, budget: float = 60.0) -> bytes:
    """Remove elements, attributes, then lines while the outcome keeps ``signature``."""
    deadline = time.time() + budget

    def same(candidate: bytes) -> bool:
        return time.time() < deadline and runner.run(how, candidate)[0] == signature

    try:
        root = ET.fromstring(data.decode("utf-8"))
    except (ET.ParseError, UnicodeDecodeError, ValueError):
        root = None
    if root is not None and len(data) < 200_000:
        changed = True
        while changed and time.time() < deadline:
            changed = False
            parents = {c: p for p in root.iter() for c in p}
            for e in list(root.iter()):
                if e in parents:
                    p = parents[e]
                    i = list(p).index(e)
                    p.remove(e)
                    if same(ET.tostring(root, encoding="unicode").encode()):
                        changed = True
                        break
                    p.insert(i, e)
                for a in list(e.attrib):
                    v = e.attrib.pop(a)
                    if same(ET.tostring(root, encoding="unicode").encode()):
                        changed = True
                    else:
                        e.set(a, v)
        candidate = ET.tostring(root, encoding="unicode").encode()
        if same(candidate):
            data = candidate
    lines = data.split(b"\n")
    i = 0
    while i < len(lines) and len(lines) > 1 and time.time() < deadline:
        trial = lines[:i] + lines[i + 1:]
        if same(b"\n".join(trial)):
            lines = trial
        else:
            i += 1
    return b"\n".join(lines)


def save(kind: str, how: str, data: bytes) -> Path:
    CORPUS.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-")[:40]
    path = CORPUS / f"{slug}-{how}-{hashlib.sha1(data).hexdigest()[:10]}.xml"
    path.write_bytes(data)
    return path


# ---- main ---------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--no-mujoco", action="store_true", help="do not compare with MuJoCo")
    ap.add_argument("--no-save", action="store_true", help="do not write failures to the corpus")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    seeds = seed_texts()
    runner = Runner(args.timeout, with_mujoco=not args.no_mujoco)
    stats: dict[str, int] = {}
    failures: dict[str, Path | None] = {}
    mismatches: dict[str, Path | None] = {}
    end = time.time() + 60 * args.minutes
    n = 0
    try:
        while time.time() < end:
            how, data = make_case(rng, seeds)
            outcome, detail, mj = runner.run(how, data)
            n += 1
            stats[outcome.split(":")[0] if not outcome.startswith("FAIL") else "FAIL"] = \
                stats.get(outcome.split(":")[0] if not outcome.startswith("FAIL") else "FAIL", 0) + 1
            if outcome.startswith("FAIL") and outcome not in failures:
                print(f"[{n}] {outcome}: {detail}", flush=True)
                small = minimise(runner, how, data, outcome)
                failures[outcome] = None if args.no_save else save(outcome[5:], how, small)
                print(f"    saved {failures[outcome]} ({len(small)} bytes)", flush=True)
            elif outcome == "model" and mj and mj.startswith("rejected"):
                key = re.sub(r"'[^']*'|\d+", "_", mj)[:80]
                stats["mismatch"] = stats.get("mismatch", 0) + 1
                if key not in mismatches:
                    print(f"[{n}] kinedyn compiles what MuJoCo {mj}", flush=True)
                    mismatches[key] = None if args.no_save else save("mismatch", how, data)
            if n % 500 == 0:
                print(f"{n} cases, {stats}", flush=True)
    finally:
        runner.close()
    minutes = args.minutes
    print(f"\n{n} cases in {minutes:g} minutes (seed {args.seed}): {stats}")
    print(f"distinct failures: {len(failures)}; MuJoCo-rejects-kinedyn-accepts: {len(mismatches)}")
    for k, v in {**failures, **mismatches}.items():
        print(f"  {k}: {v}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
