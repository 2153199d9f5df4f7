"""Third-party robot models, fetched at a pinned version from the wheels their authors publish on PyPI.

Nothing here is committed to the repository: a package's wheel (or its source archive, for a
package published only so) is downloaded once (``pip download NAME==VERSION --no-deps``), its
sha256 checked against the pin below, the members we need unpacked into the cache, and the model
paths returned from there. The cache is ``$KINEDYN_CACHE_DIR/thirdparty`` (else
``~/.cache/kinedyn/thirdparty``)::

    <cache>/<name>-<version>/            the unzipped members, published by one rename
    <cache>/<name>-<version>/.complete   written last, inside the staging directory
    <cache>/.<name>-<version>.lock       a file lock (fcntl) held while fetching

Two processes (pytest-xdist workers, a test and ``bench/corpus.py``) fetching the same package at
once serialise on the lock; the second finds the published directory and returns. A published
directory is never modified afterwards: a test that must edit a file copies it first
(:func:`prepared_path` writes URDFs with resolved mesh paths into a directory the caller owns).

Offline, or when pip fails, :func:`package_root` raises :class:`Unavailable` with pip's reason;
:func:`require` turns that into ``pytest.skip``, or into a failure with ``KINEDYN_THIRDPARTY=required``
(which .ci/run sets: CI must not pass without the corpus). ``KINEDYN_THIRDPARTY=off`` skips without
trying.

Used by tests/corpus.py (the corpus of models and its checks) and bench/corpus.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, the atomic rename still keeps the cache whole
    fcntl = None


@dataclass(frozen=True)
class Package:
    """One pinned PyPI file: the wheel (or, for a package published only as one, the source
    archive ``.tar.gz``) pip downloads, its sha256, and the member prefixes we unpack."""

    name: str
    version: str
    wheel: str
    sha256: str
    members: tuple[str, ...]  # member prefixes to extract (the models and their assets)
    part: str = ""  # a second set of members of the same file, unpacked into a cache of its own

    @property
    def label(self) -> str:
        """The key of :data:`PACKAGES` (``corpus.Entry.package``): the name, and the part if any."""
        return f"{self.name}-{self.part}" if self.part else self.name

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}" + (f"-{self.part}" if self.part else "")

    @property
    def sdist(self) -> bool:
        return self.wheel.endswith(".tar.gz")


PACKAGES: dict[str, Package] = {p.label: p for p in (
    Package("dm-control", "1.0.50", "dm_control-1.0.50-py3-none-any.whl",
            "5434e1e51ff69016867426da7df6064b18d140e4d0a628f879bbcf0e7d0a586d",
            ("dm_control/suite/", "dm_control/locomotion/walkers/assets/", "dm_control/third_party/")),
    Package("gymnasium-robotics", "1.4.2", "gymnasium_robotics-1.4.2-py3-none-any.whl",
            "a1743530431cb377e6b3b956d284bc96436fc68bac1648ef205054c178e7dc4b",
            ("gymnasium_robotics/envs/assets/", "gymnasium_robotics/envs/mujoco/assets/")),
    Package("robosuite", "1.5.2", "robosuite-1.5.2-py3-none-any.whl",
            "b9e02df55de8949739de6ba1d196d2ba59cf33c51a76efcfbe5c2f73cdcf99ce",
            ("robosuite/models/assets/robots/", "robosuite/models/assets/grippers/",
             "robosuite/models/assets/bases/", "robosuite/models/assets/bullet_data/")),
    Package("myosuite", "2.12.2", "myosuite-2.12.2-py3-none-any.whl",
            "bec0133d9d4ba0249aeccdd7de632eead4749436ffb4e5a3c44a8f9cedafd9ea",
            ("myosuite/simhive/myo_sim/",)),
    # the task scenes of myosuite's environments, which include models of several simhive folders
    Package("myosuite", "2.12.2", "myosuite-2.12.2-py3-none-any.whl",
            "bec0133d9d4ba0249aeccdd7de632eead4749436ffb4e5a3c44a8f9cedafd9ea",
            ("myosuite/envs/myo/assets/arm/", "myosuite/simhive/myo_sim/", "myosuite/simhive/YCB_sim/",
             "myosuite/simhive/MPL_sim/", "myosuite/simhive/furniture_sim/"), part="envs"),
    Package("example-robot-data", "6.0.0", "example_robot_data-6.0.0-0-py3-none-any.whl",
            "424092a8093411ac2cd4ccc0572382bfc6b5eb4833aa984ef5e671dd67cd0a6e",
            ("cmeel.prefix/share/example-robot-data/robots/",)),
    Package("mjlab", "1.6.0", "mjlab-1.6.0-py3-none-any.whl",
            "03d003854e2f44c48330c6dcf4c2253ff7641bb569747846825a21b9efa8540b",
            ("mjlab/asset_zoo/robots/",)),
    Package("gym-aloha", "0.1.5", "gym_aloha-0.1.5-py3-none-any.whl",
            "1794dd9a1146268a9b56f4a4931bcba69ca27714c2ac9ac146e471801bf0c7b3",
            ("gym_aloha/assets/",)),
    Package("gym-hil", "0.1.14", "gym_hil-0.1.14-py3-none-any.whl",
            "9a2799d47a4561e0b0bb8d37fb3d84934657240be328d13991ea06758726533d",
            ("gym_hil/assets/",)),
    Package("airo-models", "0.0.12", "airo_models-0.0.12-py3-none-any.whl",
            "e809f7a97d117454c98be3e7f2cc9593a649dc9e6ca910b7dd1cbb6fb67e6d4a",
            ("airo_models/arms/", "airo_models/grippers/")),
    # published as a source archive only: its MJCF files, unpacked without building anything
    Package("openarm-mujoco", "2.3.0", "openarm_mujoco-2.3.0.tar.gz",
            "2e32cfac261d3f4dcbb5ebfa7e2ba2d7205dd5a9655798cff13170a0cf1b5339",
            ("openarm_mujoco-2.3.0/v2/",)),
)}

COMPLETE = ".complete"
PIP_TIMEOUT = 1200  # seconds for one wheel (the largest is 150 MB)


class Unavailable(RuntimeError):
    """A pinned package could not be fetched (offline, pip failed, checksum mismatch)."""


def cache_dir() -> Path:
    """``$KINEDYN_CACHE_DIR/thirdparty``, else ``~/.cache/kinedyn/thirdparty``."""
    base = os.environ.get("KINEDYN_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "kinedyn"
    return root / "thirdparty"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a+") as f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(f, fcntl.LOCK_UN)


def _download(pkg: Package, into: Path) -> Path:
    # a source archive: only that package from source (its build requirements, which pip fetches to
    # read its metadata, may be wheels)
    kind = ["--no-binary", pkg.name] if pkg.sdist else ["--only-binary", ":all:"]
    cmd = [sys.executable, "-m", "pip", "download", f"{pkg.name}=={pkg.version}", "--no-deps", *kind,
           "--disable-pip-version-check", "--no-input", "-q", "-d", str(into)]
    try:
        run = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise Unavailable(f"pip download {pkg.name}=={pkg.version}: {err}") from err
    wheel = into / pkg.wheel
    if run.returncode != 0 or not wheel.is_file():
        lines = [ln for ln in (run.stderr + run.stdout).splitlines()
                 if ln.strip() and not ln.startswith("WARNING")]
        reason = lines[-1] if lines else f"exit status {run.returncode}, no {pkg.wheel}"
        raise Unavailable(f"pip download {pkg.name}=={pkg.version} failed (offline?): {reason}")
    digest = _sha256(wheel)
    if digest != pkg.sha256:
        raise Unavailable(f"{pkg.wheel}: sha256 {digest} is not the pinned {pkg.sha256}")
    return wheel


def _extract(pkg: Package, wheel: Path, into: Path) -> None:
    if pkg.sdist:
        with tarfile.open(wheel, "r:gz") as t:
            members = [m for m in t.getmembers() if m.name.startswith(pkg.members) and m.isfile()
                       and not m.name.endswith((".py", ".pyc"))]
            if not members:
                raise Unavailable(f"{pkg.wheel} has no member under {pkg.members}")
            t.extractall(into, members=members, filter="data")  # no links, no paths out of ``into``
        return
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith(pkg.members) and not n.endswith((".py", ".pyc"))]
        if not names:
            raise Unavailable(f"{pkg.wheel} has no member under {pkg.members}")
        for n in names:
            z.extract(n, into)


def _published(pkg: Package, dest: Path) -> bool:
    """``dest`` is complete and holds every member prefix of the pin (a pin that gained members
    since its cache was published is fetched again)."""
    return (dest / COMPLETE).is_file() and all((dest / m).exists() for m in pkg.members)


def package_root(name: str) -> Path:
    """The unpacked members of package ``name`` (a key of :data:`PACKAGES`), fetched if needed.

    Raises :class:`Unavailable` when it cannot be fetched.
    """
    pkg = PACKAGES[name]
    if os.environ.get("KINEDYN_THIRDPARTY", "").lower() in ("off", "0", "no"):
        raise Unavailable("third-party models are off (KINEDYN_THIRDPARTY=off)")
    dest = cache_dir() / pkg.key
    if _published(pkg, dest):
        return dest
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise Unavailable(f"cannot create the cache {dest.parent}: {err}") from err
    with _locked(dest.parent / f".{pkg.key}.lock"):
        if _published(pkg, dest):  # another process published it while we waited
            return dest
        staging = Path(tempfile.mkdtemp(prefix=f".{pkg.key}-", dir=dest.parent))
        try:
            wheel = _download(pkg, staging / "wheel")
            tree = staging / "tree"
            _extract(pkg, wheel, tree)
            (tree / COMPLETE).write_text(f"{pkg.wheel} sha256 {pkg.sha256}\n")
            if dest.exists():  # published for an older pin's members (or a leftover): set aside, replaced
                os.replace(dest, staging / "old")
            os.replace(tree, dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dest


def required() -> bool:
    """``KINEDYN_THIRDPARTY=required`` (set by .ci/run): a package that cannot be fetched fails the
    test instead of skipping it, so that a green run always means the corpus ran."""
    return os.environ.get("KINEDYN_THIRDPARTY", "").lower() == "required"


def require(name: str) -> Path:
    """:func:`package_root`, or ``pytest.skip`` with the reason when it cannot be fetched
    (``pytest.fail`` under :func:`required`)."""
    try:
        return package_root(name)
    except Unavailable as err:
        import pytest

        if required():
            pytest.fail(f"{err} (KINEDYN_THIRDPARTY=required: the third-party models must be fetched)",
                        pytrace=False)
        pytest.skip(str(err))


# ---- URDF mesh paths ------------------------------------------------------------------------------

_FILENAME = re.compile(r'(<mesh\b[^>]*?\bfilename\s*=\s*)(["\'])(.*?)\2', re.S)
_PACKAGE_URI = re.compile(r"package://+([^/]+)/(.*)")


def _package_dir(urdf: Path, package: str) -> Path | None:
    # ROS resolves package://NAME/ to the package's share directory: the first ancestor directory
    # called NAME, or an ancestor's NAME/ or share/NAME/ subdirectory
    for anc in urdf.parents:
        for cand in (anc, anc / package, anc / "share" / package):
            if cand.name == package and cand.is_dir():
                return cand
    return None


def resolve_mesh_paths(urdf: Path) -> str:
    """The URDF text with every ``<mesh filename>`` made an absolute path.

    ``package://NAME/rest`` becomes NAME's directory (:func:`_package_dir`) + ``rest``,
    ``file://`` is dropped, a relative path is taken from the URDF's directory. MuJoCo reads
    mesh file names literally, so this is what a MuJoCo user does to load a ROS URDF.
    """
    urdf = urdf.resolve()

    def sub(mt: re.Match) -> str:
        name = mt.group(3)
        uri = _PACKAGE_URI.match(name)
        if uri:
            pkg = _package_dir(urdf, uri.group(1))
            if pkg is not None:
                name = str(pkg / uri.group(2))
        elif name.startswith("file://"):
            name = name[len("file://"):]
        elif not os.path.isabs(name):
            name = str(urdf.parent / name)
        return f"{mt.group(1)}{mt.group(2)}{name}{mt.group(2)}"

    return _FILENAME.sub(sub, urdf.read_text())


def prepared_path(path: Path, workdir: Path) -> Path:
    """The file to load for ``path``: an MJCF as it is; a URDF rewritten by
    :func:`resolve_mesh_paths` into ``workdir`` (the cache is never written)."""
    if path.suffix.lower() != ".urdf":
        return path
    out = Path(workdir) / path.name
    out.write_text(resolve_mesh_paths(path))
    return out
