"""Errors of failure routing."""

from __future__ import annotations

from streams.errors import StreamsError


class FailureRoutingError(StreamsError):
    """Base class of every error raised by ``streams.failures``."""


class RetryPolicyError(FailureRoutingError, ValueError):
    """A retry policy is malformed: a bad delay spec, no tiers, attempts below one."""


class FailureTopicError(FailureRoutingError):
    """A retry or dead-letter topic name is invalid, or its topic cannot be created."""


class FailureHeaderError(FailureRoutingError):
    """Error headers are present on a record but unreadable (corrupt or foreign)."""


class CrashLoopError(StreamsError):
    """The record was in hand each time the process died, the crash guard's limit of times
    in a row (``streams.pipeline.crash_guard``): dead-lettered, never retried."""


class OutputRefusedError(StreamsError):
    """The broker refused one of the record's outputs for the record's sake (too large,
    invalid, a topic the app may not write; ``streams.pipeline.produce``): the work was
    done again without the record, which is dead-lettered, never retried (it would be
    refused again)."""
