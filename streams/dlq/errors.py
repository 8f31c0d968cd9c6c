"""The error of the DLQ tools."""

from __future__ import annotations

from streams.errors import StreamsError


class DlqError(StreamsError):
    """A dead-letter topic cannot be read or replayed (missing topic, bad selection)."""
