"""Errors the runtime raises to its caller (``streams run`` turns them into one line)."""

from __future__ import annotations

from streams.errors import StreamsError


class RuntimeFailure(StreamsError):  # noqa: N818 - reads better than RuntimeFailureError
    """The runtime stopped because of an error; committed offsets cover only finished work."""


class RecordFailed(RuntimeFailure):
    """A record failed and its error policy said FAIL."""


class DeliveryError(RuntimeFailure):
    """The broker refused an output (after the producer's own retries)."""


class MissingTopicError(RuntimeFailure):
    """A topic the topology reads does not exist."""
