"""Errors and warnings raised by kinedyn."""

from __future__ import annotations


class ModelError(ValueError):
    """A model that cannot be compiled: malformed, inconsistent or unsupported.

    Attributes:
      element: the XML element (tag, with its name when it has one), or None.
      attribute: the offending attribute, or None.
      line: the 1-based line in the XML source, or None.
    """

    def __init__(self, message: str, element: str | None = None,
                 attribute: str | None = None, line: int | None = None):
        self.element = element
        self.attribute = attribute
        self.line = line
        self.reason = message
        where = []
        if element:
            where.append(f"element <{element}>")
        if attribute:
            where.append(f"attribute '{attribute}'")
        if line is not None:
            where.append(f"line {line}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class UnsimulatedFeatureWarning(UserWarning):
    """The model uses a feature that changes the physics but is not simulated yet."""


class NonFiniteStateWarning(RuntimeWarning):
    """The simulation state went non-finite; the data was reset."""
