"""The JIT layer refuses a Numba it was not written for, loudly and before compiling anything."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import pytest

from kinedyn._jit import compat


def test_installed_numba_is_in_the_tested_range_and_has_every_private_name():
    compat.check_version(numba.__version__)
    assert compat.missing_private_api() == []


@pytest.mark.parametrize("version", ["0.67.1", "0.69.0", "0.69.0rc1", "1.0.0"])
def test_untested_versions_are_refused_with_what_to_install(version):
    with pytest.raises(compat.UnsupportedNumbaError, match=r"numba >=0\.68,<0\.69.*KINEDYN_UNTESTED_NUMBA"):
        compat.check_version(version)
    compat.check_version(version, allow_untested=True)  # the opt-in


@pytest.mark.parametrize("version", ["0.68.0", "0.68.1", "0.68.2rc1"])
def test_tested_versions_pass(version):
    compat.check_version(version)


def test_unreadable_version_is_refused():
    with pytest.raises(compat.UnsupportedNumbaError, match="cannot read"):
        compat.check_version("garbage")


def test_a_moved_private_name_is_named():
    api = (("numba.core.caching", "FunctionCache._load_overload", "present"),
           ("numba.core.caching", "FunctionCache._no_such_method", "gone"),
           ("numba.no_such_module", None, "gone too"))
    assert compat.missing_private_api(api) == ["numba.core.caching.FunctionCache._no_such_method (gone)",
                                               "numba.no_such_module (gone too)"]


def test_import_fails_loudly_on_an_untested_numba():
    """The check runs when kinedyn is imported: a fake newer Numba stops the import with the message."""
    probe = textwrap.dedent("""
        import numba
        numba.__version__ = "0.99.0"
        try:
            import kinedyn
        except ImportError as err:
            print(type(err).__name__, err)
        else:
            print("imported")
    """)
    env = {k: v for k, v in os.environ.items() if k != "KINEDYN_UNTESTED_NUMBA"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True,
                         timeout=120).stdout
    assert out.startswith("UnsupportedNumbaError kinedyn needs numba >=0.68,<0.69"), out
