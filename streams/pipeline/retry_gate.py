"""The retry gate: records read from a retry tier wait for their due time, unslept.

First step of the chain when the topology routes failures. For a record of a retry tier,
its error headers are parsed once (``record.failure``; ``record.headers`` keeps the
record's own headers, what decoding and processors see); if it is not due yet, its
partition is sought back to it and paused (``streams.failures.retry_holds``) and the
record is dropped here, before it is tracked: it is read again once ``poll`` resumes the
partition at its due time. Later records of a held partition in the same batch are
dropped the same way. Records of input topics pass untouched. Never blocks;
``poll_timeout`` tells the loop how long it may wait for records before a hold ripens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from streams.coordinates import TP
from streams.failures.headers import parse_failure_headers, strip_failure_headers
from streams.failures.retry_holds import PartitionControl, RetryHolds, hold, resume_due
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step


class RetryGate(Forward):
    """Holds retry records until due (see the module docstring). ``consumer``: the
    runtime's consumer (pause, resume, seek); ``clock``: seconds since the epoch."""

    __slots__ = ("_clock", "_consumer", "_holds", "_tiers")

    def __init__(
        self,
        next: Step,
        *,
        consumer: PartitionControl,
        retry_topics: Iterable[str],
        clock: Callable[[], float],
    ) -> None:
        super().__init__(next)
        self._consumer = consumer
        self._tiers = frozenset(retry_topics)
        self._clock = clock
        self._holds = RetryHolds()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def submit(self, record: Record) -> None:
        if record.topic in self._tiers:
            holds = self._holds
            if holds.is_held(record.topic, record.partition):
                return
            failure = record.failure = parse_failure_headers(record.headers)
            if failure is not None:
                record.headers = strip_failure_headers(record.headers)
            due = failure.due if failure is not None else None
            held = holds.check(record.topic, record.partition, record.offset, due, self._now())
            if held is not None:
                hold(self._consumer, [held])
                return
        self.next.submit(record)

    def is_held(self, topic: str, partition: int) -> bool:
        """Is the retry partition paused until its head is due (waiting, not stalled)?"""
        return self._holds.is_held(topic, partition)

    def poll(self) -> None:
        resume_due(self._consumer, self._holds, self._now())
        self.next.poll()

    def poll_timeout(self, ceiling: float) -> float:
        """Seconds the loop may wait for records: ``ceiling``, or less if a hold ripens."""
        return self._holds.poll_timeout(ceiling, self._now())

    def revoked(self, partitions: Sequence[TP]) -> None:
        self._holds.forget(partitions)
        self.next.revoked(partitions)
