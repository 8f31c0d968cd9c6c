"""Kafka coordinates as plain values, for dict keys and sets across the package."""

from __future__ import annotations

TP = tuple[str, int]
"""A topic partition: ``(topic, partition)``."""
