"""Compatibility modes a type can declare, with Confluent Schema Registry's names."""

from __future__ import annotations

from enum import StrEnum


class CompatibilityMode(StrEnum):
    """Which versions a new version must be able to exchange data with.

    BACKWARD: the new version reads data written with the previous one (consumers upgrade
    first). FORWARD: the previous version reads data written with the new one (producers
    upgrade first). FULL: both. ``_TRANSITIVE``: against every earlier version, not just the
    previous. NONE: no check.
    """

    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"

    @property
    def backward(self) -> bool:
        return self in {self.BACKWARD, self.BACKWARD_TRANSITIVE, self.FULL, self.FULL_TRANSITIVE}

    @property
    def forward(self) -> bool:
        return self in {self.FORWARD, self.FORWARD_TRANSITIVE, self.FULL, self.FULL_TRANSITIVE}

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")


DEFAULT_MODE = CompatibilityMode.BACKWARD
