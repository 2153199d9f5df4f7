"""Third-party robot models (tests/corpus.py) against MuJoCo 4.0, and the fetching behind them.

Each corpus model is fetched from its pinned PyPI wheel (tests/thirdparty.py; skipped with the
reason when offline), loaded in MuJoCo and kinedyn, and compared field by field through the
oracle: the compiled model, ``forward`` on a random and on simulated states, a short rollout. A
model kinedyn refuses, or that differs, must be listed in corpus.REFUSED / corpus.MISMATCHED with
the expected message; a listed model that no longer fails fails here, so the tables stay exact.
``python -m bench.corpus`` prints the whole table (docs/corpus.md).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import zipfile
from pathlib import Path

import pytest
import thirdparty
from corpus import CORPUS, ENTRY, MISMATCHED, REFUSED, check, verdict
from thirdparty import PACKAGES, Package, Unavailable, package_root, prepared_path, require


@pytest.mark.parametrize("name", [e.name for e in CORPUS])
def test_corpus_model(name, tmp_path):
    entry = ENTRY[name]
    require(entry.package)
    problem = verdict(check(entry, tmp_path))
    assert problem is None, problem


def test_corpus_covers_the_brief():
    """At least 40 robots, MJCF and URDF, from several packages; tables name only corpus entries."""
    assert len(CORPUS) >= 40
    assert {e.format for e in CORPUS} == {"MJCF", "URDF"}
    assert len({e.package for e in CORPUS}) >= 5
    assert set(REFUSED) <= set(ENTRY) and set(MISMATCHED) <= set(ENTRY)
    assert not set(REFUSED) & set(MISMATCHED)
    for pkg in PACKAGES.values():
        assert len(pkg.sha256) == 64 and int(pkg.sha256, 16) >= 0
        assert pkg.wheel.endswith((".whl", ".tar.gz")) and pkg.version in pkg.wheel
    assert {e.reference for e in CORPUS} == {"mujoco", "pinocchio"}
    assert all(e.format == "URDF" for e in CORPUS if e.reference == "pinocchio")


# ---- fetching: a fake wheel stands in for pip (no network) --------------------------------------

def _fake_wheel(folder: Path) -> tuple[Path, str]:
    wheel = folder / "fake_robots-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("fake_robots/assets/arm.xml", "<mujoco/>")
        z.writestr("fake_robots/__init__.py", "")
        z.writestr("other/ignored.xml", "<mujoco/>")
    return wheel, hashlib.sha256(wheel.read_bytes()).hexdigest()


def _install_fake(monkeypatch, tmp_path, sha=None, log=None):
    src, digest = _fake_wheel(tmp_path)
    pkg = Package("fake-robots", "1.0", src.name, sha or digest, ("fake_robots/",))
    monkeypatch.setitem(PACKAGES, pkg.name, pkg)
    monkeypatch.setenv("KINEDYN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KINEDYN_THIRDPARTY", raising=False)

    def download(p, into):
        into.mkdir(parents=True, exist_ok=True)
        if log is not None:
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
        (into / p.wheel).write_bytes(src.read_bytes())
        got = hashlib.sha256((into / p.wheel).read_bytes()).hexdigest()
        if got != p.sha256:
            raise Unavailable(f"{p.wheel}: sha256 {got} is not the pinned {p.sha256}")
        return into / p.wheel

    monkeypatch.setattr(thirdparty, "_download", download)
    return pkg


def test_fetch_publishes_the_members_once(monkeypatch, tmp_path):
    log = tmp_path / "downloads.log"
    _install_fake(monkeypatch, tmp_path, log=log)
    root = package_root("fake-robots")
    assert root == tmp_path / "cache" / "thirdparty" / "fake-robots-1.0"
    assert (root / "fake_robots/assets/arm.xml").read_text() == "<mujoco/>"
    assert not (root / "fake_robots/__init__.py").exists() and not (root / "other").exists()
    assert package_root("fake-robots") == root
    assert log.read_text().count("\n") == 1
    assert sorted(p.name for p in root.parent.iterdir()) == [".fake-robots-1.0.lock", "fake-robots-1.0"]


def _fetch_in_child(cache: str, queue) -> None:
    os.environ["KINEDYN_CACHE_DIR"] = cache
    queue.put(str(package_root("fake-robots")))


def test_concurrent_fetches_download_once(monkeypatch, tmp_path):
    """Two processes (as two xdist workers) asking at once: one downloads, both get the same tree."""
    log = tmp_path / "downloads.log"
    _install_fake(monkeypatch, tmp_path, log=log)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_fetch_in_child, args=(str(tmp_path / "cache"), queue)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    roots = {queue.get(timeout=5) for _ in procs}
    assert roots == {str(tmp_path / "cache" / "thirdparty" / "fake-robots-1.0")}
    assert log.read_text().count("\n") == 1


def test_checksum_mismatch_is_unavailable_and_leaves_nothing(monkeypatch, tmp_path):
    _install_fake(monkeypatch, tmp_path, sha="0" * 64)
    with pytest.raises(Unavailable, match="sha256"):
        package_root("fake-robots")
    cache = tmp_path / "cache" / "thirdparty"
    assert [p.name for p in cache.iterdir()] == [".fake-robots-1.0.lock"]


def test_offline_skips_with_the_reason(monkeypatch, tmp_path):
    _install_fake(monkeypatch, tmp_path)

    def offline(p, into):
        raise Unavailable(f"pip download {p.name}=={p.version} failed (offline?): no route")

    monkeypatch.setattr(thirdparty, "_download", offline)
    with pytest.raises(pytest.skip.Exception, match="offline"):
        require("fake-robots")
    monkeypatch.setenv("KINEDYN_THIRDPARTY", "off")
    with pytest.raises(pytest.skip.Exception, match="KINEDYN_THIRDPARTY=off"):
        require("fake-robots")


def test_required_mode_fails_instead_of_skipping(monkeypatch, tmp_path):
    """``KINEDYN_THIRDPARTY=required`` (.ci/run sets it): a package that cannot be fetched fails the
    test with pip's reason, so a green CI always means the corpus ran."""
    _install_fake(monkeypatch, tmp_path)

    def offline(p, into):
        raise Unavailable(f"pip download {p.name}=={p.version} failed (offline?): no route")

    monkeypatch.setattr(thirdparty, "_download", offline)
    monkeypatch.setenv("KINEDYN_THIRDPARTY", "required")
    with pytest.raises(pytest.fail.Exception, match="offline.*KINEDYN_THIRDPARTY=required"):
        require("fake-robots")
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert "export KINEDYN_THIRDPARTY=required" in ci


def test_source_archive_members_are_unpacked_safely(monkeypatch, tmp_path):
    """A package published only as a source archive (openarm-mujoco): its members under the pinned
    prefixes are unpacked, Python files, links and paths leaving the cache are not."""
    import io
    import tarfile

    src = tmp_path / "fake_robots-1.0.tar.gz"
    with tarfile.open(src, "w:gz") as t:
        for name, data in (("fake_robots-1.0/models/arm.xml", b"<mujoco/>"),
                           ("fake_robots-1.0/models/setup.py", b""), ("fake_robots-1.0/other.xml", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("fake_robots-1.0/models/evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    pkg = Package("fake-robots", "1.0", src.name, digest, ("fake_robots-1.0/models/",))
    assert pkg.sdist and pkg.key == "fake-robots-1.0"
    monkeypatch.setitem(PACKAGES, pkg.name, pkg)
    monkeypatch.setenv("KINEDYN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KINEDYN_THIRDPARTY", raising=False)

    def download(p, into):
        into.mkdir(parents=True, exist_ok=True)
        (into / p.wheel).write_bytes(src.read_bytes())
        return into / p.wheel

    monkeypatch.setattr(thirdparty, "_download", download)
    root = package_root("fake-robots")
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())
    assert files == [".complete", "fake_robots-1.0/models/arm.xml"]


def test_urdf_mesh_paths_are_resolved_into_a_copy(tmp_path):
    share = tmp_path / "share" / "my_robot"
    (share / "meshes").mkdir(parents=True)
    (share / "urdf").mkdir()
    urdf = share / "urdf" / "r.urdf"
    text = ('<robot name="r"><link name="a"><collision><geometry>'
            '<mesh filename="package://my_robot/meshes/a.stl"/></geometry></collision>'
            '<visual><geometry><mesh scale="1 1 1" filename="../meshes/b.stl"/></geometry></visual>'
            "<collision><geometry><mesh filename='file:///abs/c.stl'/></geometry></collision>"
            '</link></robot>')
    urdf.write_text(text)
    work = tmp_path / "work"
    work.mkdir()
    out = prepared_path(urdf, work)
    assert out.parent == work and urdf.read_text() == text
    got = out.read_text()
    assert f'filename="{share}/meshes/a.stl"' in got
    assert f'filename="{share}/urdf/../meshes/b.stl"' in got
    assert "filename='/abs/c.stl'" in got
    mjcf = tmp_path / "m.xml"
    mjcf.write_text("<mujoco/>")
    assert prepared_path(mjcf, work) == mjcf
