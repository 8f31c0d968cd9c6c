"""Kafka coordinates as plain values, for dict keys and sets across the package."""

from __future__ import annotations

from typing import NamedTuple

TP = tuple[str, int]
"""A topic partition: ``(topic, partition)``."""


class Coordinates(NamedTuple):
    """Where a record is: its topic, partition and offset (a failure's ``origin`` is the
    coordinates of the input record, kept across retry tiers).

    A named tuple: made once per failed record, so it must be cheap."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"
