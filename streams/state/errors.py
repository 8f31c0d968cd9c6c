"""Errors of the state layer: every one is a ``StreamsError`` with a message a user can act on."""

from __future__ import annotations

from streams.errors import StreamsError


class StateError(StreamsError):
    """A state store could not be opened, restored, written or closed. ``transient``: the
    broker's absence caused it (a node lost, leadership moving), so it is an outage the
    runtime waits out, not a failure (``streams.pipeline.errors.state_outages``)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class ChangelogTopicError(StateError):
    """A changelog topic exists but cannot back a store (raised before anything is processed)."""


class ChangelogPartitionCountError(ChangelogTopicError):
    """The changelog topic's partition count differs from the input's."""

    def __init__(self, topic: str, actual: int, expected: int) -> None:
        super().__init__(
            f"changelog topic {topic!r} has {actual} partitions but the input has {expected}: "
            "a store partition must map to exactly one changelog partition; delete the "
            "changelog topic (its state is lost) or give the input the same partition count"
        )
        self.topic = topic
        self.actual = actual
        self.expected = expected


class ChangelogCompactionError(ChangelogTopicError):
    """The changelog topic is not compacted, so old state would be deleted by retention."""

    def __init__(self, topic: str, policy: str) -> None:
        super().__init__(
            f"changelog topic {topic!r} has cleanup.policy={policy!r}; a changelog must be "
            "compacted (cleanup.policy=compact), else retention deletes live state. Fix it with "
            f"kafka-configs --alter --entity-type topics --entity-name {topic} "
            "--add-config cleanup.policy=compact"
        )
        self.topic = topic
        self.policy = policy


class CorruptChangelogError(StateError):
    """A changelog record cannot be applied; restore stops at it rather than skip it."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(
            f"corrupt changelog record at {topic}[{partition}]@{offset}: {reason}; restore "
            "stopped (nothing is skipped silently): inspect the record, then delete it "
            "with a tombstone for its key or recreate the changelog"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason


class ChangelogWriteError(StateError):
    """A changelog record was not acknowledged; the input offsets must not be committed.
    ``transient``: the write failed because the broker went away (a timed-out delivery
    while a node was lost), so it is an outage to wait out, not a refusal."""


class RestoreError(StateError):
    """The changelog could not be read to its end (broker unreachable, timeout).
    ``transient``: the broker did not answer (a node lost, leadership moving), so the
    restore is tried again once it does, not given up."""


class StoreClosedError(StateError):
    """A store partition was used after ``close`` (or before ``open``)."""
