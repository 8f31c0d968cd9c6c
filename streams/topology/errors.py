"""Errors a topology can raise: while it is built, loaded, or run."""

from __future__ import annotations

from collections.abc import Sequence

from streams.errors import StreamsError


class TopologyError(StreamsError):
    """Base class: a topology is malformed or was used wrongly."""


class TopologyValidationError(TopologyError):
    """``build()`` found problems; ``problems`` lists each, one clear sentence apiece."""

    def __init__(self, app_id: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"topology {app_id!r} is invalid ({len(self.problems)} problem(s)):\n{lines}"
        )


class TopologyLoadError(TopologyError):
    """A topology file could not be imported or does not expose a topology."""
