"""Errors and warnings raised by kinedyn."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ModelError(ValueError):
    """A model that cannot be compiled: malformed, inconsistent or unsupported.

    Attributes:
      element: the XML element (tag, with its name when it has one), or None.
      attribute: the offending attribute, or None.
      line: the 1-based line in the XML source, or None.
      file: the file holding that line when it is not the main document (an ``<include>``d
        file or the file of an attached ``<model>``), or None.
    """

    def __init__(self, message: str, element: str | None = None,
                 attribute: str | None = None, line: int | None = None, file: str | None = None):
        self.element = element
        self.attribute = attribute
        self.line = line
        self.file = file
        self.reason = message
        where = []
        if element:
            where.append(f"element <{element}>")
        if attribute:
            where.append(f"attribute '{attribute}'")
        if line is not None:
            where.append(f"line {line}")
        if file:
            where.append(f"file '{file}'")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class UnsimulatedFeatureWarning(UserWarning):
    """The model uses a feature that changes the physics but is not simulated yet."""


class UnphysicalInertiaWarning(UserWarning):
    """A URDF's inertias that MuJoCo's compiler refuses (not positive definite, violating
    A + B >= C, a moving body without mass) were loaded as given, as Pinocchio reads them; the
    message names the bodies and what is unphysical (``Model.from_urdf``'s ``inertia`` option
    repairs them instead)."""


class ContactFullWarning(RuntimeWarning):
    """Contacts or their constraint rows did not fit the model's capacity (``Model.nconmax``,
    ``Model.nefcmax``) and were dropped, as MuJoCo drops them when its arena is full
    (mjWARN_CONTACTFULL). Raise the capacity with ``<size nconmax="..."/>``."""


class NonFiniteStateWarning(RuntimeWarning):
    """The simulation state went non-finite; the data was reset."""


def close_names(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'a', 'b'?"`` naming up to three of ``known`` spelled like ``name``, else ``""``.

    The tail of every "unknown name" error message, so they all read alike.
    """
    close = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.5)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


def unknown_name_hint(name: str, known: Iterable[str], when_empty: str) -> str:
    """:func:`close_names`, or when nothing is close the first ten ``known`` names, or
    ``when_empty`` (e.g. ``"; the model has none"``) when there are none."""
    known = list(known)
    if not known:
        return when_empty
    return close_names(name, known) or f"; known: {', '.join(map(repr, known[:10]))}"
