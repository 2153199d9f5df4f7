"""The documentation site: its code runs, its navigation and links resolve, mkdocs builds it strictly.

* Every ```python block of the tutorial pages runs, in order, in one namespace per page
  (a block right after an ``<!-- no-test -->`` line is skipped). The blocks of the
  "coming from" pages assert kinedyn against MuJoCo and Pinocchio, so the conventions
  they state are checked here, not just printed.
* Every page in the ``mkdocs.yml`` nav exists, except pages other work is still writing
  (``PENDING_PAGES``); every page under docs/ is in the nav; relative links between
  pages and to images resolve.
* ``mkdocs build --strict`` succeeds (with stand-ins for the pending pages, so that every
  other warning still fails the build). mkdocs is in the ``test`` extra: without it this
  test fails rather than skips.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"

# nav entries whose pages are being written elsewhere; remove a name once its page lands
PENDING_PAGES: frozenset[str] = frozenset()  # nav pages written elsewhere and not landed yet

# pages whose python blocks are executed
EXECUTED_PAGES = ["getting-started.md", "coming-from-mujoco.md", "coming-from-pinocchio.md",
                  "running-mujoco-code.md", "stages/jacobians.md", "stages/mass-matrix.md", "derivatives.md",
                  "../README.md"]

NO_TEST_MARK = "<!-- no-test -->"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NAV_ENTRY = re.compile(r"""^\s*-\s*(?:"[^"\n]*"\s*:\s*|[^:"\n]+:\s*)?([\w./-]+\.md)\s*$""", re.MULTILINE)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, source) of each ```python block not preceded by the no-test mark."""
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = text[:match.start()].rstrip().splitlines()
        if before and before[-1].strip() == NO_TEST_MARK:
            continue
        blocks.append((text.count("\n", 0, match.start()) + 1, match.group(2)))
    return blocks


def nav_pages() -> list[str]:
    """The .md paths named in the nav of mkdocs.yml, relative to docs/."""
    text = CONFIG.read_text()
    nav = text[text.index("\nnav:"):]
    return _NAV_ENTRY.findall(nav)


def strip_code(text: str) -> str:
    """The text without fenced blocks and inline code, where link syntax means nothing."""
    text = _FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def test_python_block_extraction_honours_the_no_test_mark():
    text = "a\n```python\nx = 1\n```\n<!-- no-test -->\n```python\nraise SystemExit\n```\n```sh\nls\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n")]


@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    text = (DOCS / page).read_text()
    blocks = python_blocks(text)
    assert blocks, f"{page} has no python block to run"
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    namespace: dict = {"__name__": f"docs_{Path(page).stem.replace('-', '_')}"}
    for line, source in blocks:
        # padded so that tracebacks point at the page's own line numbers
        code = compile("\n" * line + source, str(DOCS / page), "exec")
        try:
            exec(code, namespace)
        except ModuleNotFoundError as err:
            if err.name in ("mujoco", "pinocchio"):
                pytest.skip(f"{page} needs {err.name}")
            raise


def test_nav_pages_exist_or_are_pending():
    pages = nav_pages()
    assert len(pages) == len(set(pages)), "a page appears twice in the nav"
    missing = sorted(p for p in pages if not (DOCS / p).is_file())
    assert set(missing) <= PENDING_PAGES, f"nav pages missing from docs/: {set(missing) - PENDING_PAGES}"
    assert PENDING_PAGES <= set(pages), f"pending pages not in the nav: {PENDING_PAGES - set(pages)}"


def test_every_page_is_in_the_nav():
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk - set(nav_pages()) == set()


def test_relative_links_resolve():
    broken = []
    for page in DOCS.rglob("*.md"):
        for target in _LINK.findall(strip_code(page.read_text())):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # external (http:, mailto:) or within the page
            path = target.split("#", 1)[0]
            resolved = (page.parent / path).resolve()
            rel = resolved.relative_to(DOCS.resolve()).as_posix() if resolved.is_relative_to(DOCS.resolve()) \
                else None
            if not resolved.exists() and rel not in PENDING_PAGES:
                broken.append(f"{page.relative_to(DOCS)} -> {target}")
    assert broken == []


def test_mkdocs_build_strict(tmp_path):
    assert importlib.util.find_spec("mkdocs") is not None, "mkdocs is missing: pip install -e '.[test]'"
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    for page in PENDING_PAGES:
        if not (docs / page).exists():
            (docs / page).write_text(f"# {page}\n\nStand-in for a page being written.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(CONFIG.read_text())
    command = [sys.executable, "-m", "mkdocs", "build", "--strict",
               "-f", str(config), "-d", str(tmp_path / "site")]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "getting-started" / "index.html").is_file()
