"""Which Numba this layer was written for, checked on import.

kinedyn's JIT layer relies on Numba internals (listed in :mod:`kinedyn._jit`). They move
between Numba releases, and a moved internal would not always fail loudly: the handle
field reads hard-code the layout of Numba's MemInfo, for example, and a changed layout
would read garbage. So the layer refuses a Numba outside the range it was tested with,
and, inside it, checks that every private name it uses is still there, before any
kernel is compiled. ``KINEDYN_UNTESTED_NUMBA=1`` skips the version check (at your own
risk: run the test suite on that Numba first); the private names are checked always.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

# the Numba releases this layer was tested with: [first, end) as (major, minor)
TESTED = ((0, 68), (0, 69))

# (module, attribute path or None, what for) of every private name the layer uses. With None only
# the module's presence is checked: importing it here would cost start-up time (it is imported
# when a kernel is first compiled) or, for arraymath, defeat the reason it is imported early.
PRIVATE_API = (
    ("numba.core.caching", "FunctionCache._load_overload", "cache: load code without compiler set-up"),
    ("numba.core.caching", "FunctionCache._guard_against_spurious_io_errors", "cache: Numba's own guard"),
    ("numba.core.runtime", "rtsys.initialize", "cache: start the runtime before loading cached code"),
    ("numba.experimental.structref", "_Utils", "handles: the payload of a StructRef"),
    ("numba.core.runtime._nrt_python", "meminfo_new", "handles: a handle's payload owned from Python"),
    ("numba.experimental.structref", "StructRefProxy._numba_box_", "handles: box a handle built in Python"),
    ("numba.core.extending", "_Intrinsic._register", "units: an intrinsic calling through a cell"),
    ("numba.core.dispatcher", "_FunctionCompiler._compile_core", "dispatch: link-only kernels"),
    ("numba.core.codegen", "JITCodeLibrary._finalize_final_module", "dispatch: no kernel machine code"),
    ("numba.core.caching", "IndexDataCacheFile._load_index", "bind: whether a unit is cached"),
    ("numba.core.registry", "CPUDispatcher.get_call_template", "dispatch: one version per argument type"),
    ("numba.np.arraymath", None, "cache: imported early with a placeholder BLAS module"),
)


class UnsupportedNumbaError(ImportError):
    """The installed Numba is not one kinedyn's JIT layer works with."""


def parse_version(text: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '0.68.1' or '0.69.0rc1'."""
    parts = text.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        raise UnsupportedNumbaError(f"cannot read Numba's version {text!r}") from None


def check_version(version: str, allow_untested: bool = False) -> None:
    """Raise UnsupportedNumbaError unless ``version`` is in the tested range (or untested are allowed)."""
    (lo, hi), found = TESTED, parse_version(version)
    if lo <= found < hi or allow_untested:
        return
    raise UnsupportedNumbaError(
        f"kinedyn needs numba >={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]} (its JIT layer uses Numba internals "
        f"that change between releases), but numba {version} is installed. Install a supported one "
        f"(pip install 'numba>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]}'), or set KINEDYN_UNTESTED_NUMBA=1 to try "
        "this one after running kinedyn's test suite on it.")


def missing_private_api(api=PRIVATE_API) -> list[str]:
    """The entries of ``api`` that cannot be found, as 'module.attr (what for)'."""
    missing = []
    for module, path, why in api:
        try:
            if path is None:
                if importlib.util.find_spec(module) is None:
                    raise ImportError(module)
                continue
            obj = importlib.import_module(module)
            for name in path.split("."):
                obj = getattr(obj, name)
        except (ImportError, AttributeError):
            missing.append(f"{module}{'.' + path if path else ''} ({why})")
    return missing


def check_numba() -> None:
    """The import-time check: a tested Numba, with every private name the layer uses."""
    import numba

    check_version(numba.__version__, allow_untested=os.environ.get("KINEDYN_UNTESTED_NUMBA") == "1")
    missing = missing_private_api()
    if missing:
        raise UnsupportedNumbaError(
            f"numba {numba.__version__} lacks internals kinedyn's JIT layer uses: {'; '.join(missing)}. "
            "Install a supported Numba (see pyproject.toml).")
