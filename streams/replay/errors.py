"""Errors of replay, offset resets and lag: each a ``StreamsError`` with a one-line message
(what the cluster raises is ``streams.cluster``'s: ``ClusterError``, ``TopicNotFoundError``)."""

from __future__ import annotations

from streams.errors import StreamsError


class ReplayError(StreamsError):
    """Base class of every error of ``streams.replay``."""


class PositionError(ReplayError):
    """A position cannot be parsed or resolved (bad syntax, time in the future, no commit)."""


class RangeError(PositionError):
    """A range whose end resolves before its start."""


class UnknownGroupError(ReplayError):
    """A consumer group that the cluster does not know."""


class ActiveGroupError(ReplayError):
    """Offsets cannot be reset while the group has active members."""


class CopyError(ReplayError):
    """Some copied records were not acknowledged by the target topic."""


class PlanFileError(ReplayError):
    """A reset plan file (Kafka's CSV shape) cannot be read."""
