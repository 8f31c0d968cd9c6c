"""Waiting for due times in retry tiers without sleeping in the poll loop.

Records in a retry tier are in due-time order per partition (one delay per tier, appended
as they fail), so only a partition's *head* needs checking: when it is not due yet, the
partition is sought back to it and paused, and resumed at its due time. Other partitions,
other tiers and the input topic keep flowing; the poll timeout shrinks to the next due
time. This is the seek-and-pause back-off (refetching the head on resume), which stays
correct however much the client had prefetched.

``RetryHolds`` is the bookkeeping; ``hold``/``resume_due`` apply it to a confluent-kafka
``Consumer`` (the chain's retry gate, ``streams.pipeline.retry_gate``, is one user).
Nothing here sleeps; ``sift`` and ``due`` take ``now`` so tests need no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from confluent_kafka import TopicPartition

from streams.failures.headers import DUE_TIME, parse_time


class PartitionControl(Protocol):
    """What holding a partition needs of a consumer (``confluent_kafka.Consumer`` is one)."""

    def pause(self, partitions: list[TopicPartition], /) -> None: ...
    def resume(self, partitions: list[TopicPartition], /) -> None: ...
    def seek(self, partition: TopicPartition, /) -> None: ...


class RetryMessage(Protocol):
    """The part of ``confluent_kafka.Message`` the holds read."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def headers(self) -> Any: ...


M = TypeVar("M", bound=RetryMessage)


def due_time(message: RetryMessage) -> datetime | None:
    """The record's due time from its ``streams.failure.due_time`` header, if any."""
    for key, value in message.headers() or ():
        if key == DUE_TIME and value is not None:
            try:
                return parse_time(value.decode())
            except (UnicodeDecodeError, ValueError):
                return None
    return None


@dataclass(frozen=True, slots=True)
class Hold:
    """A paused retry partition: its head record at ``offset`` is due at ``due``."""

    topic: str
    partition: int
    offset: int
    due: datetime


@dataclass(slots=True)
class Sifted(Generic[M]):
    """A batch split into records to process now and partitions to seek back and pause."""

    ready: list[M] = field(default_factory=list)
    held: list[Hold] = field(default_factory=list)


class RetryHolds:
    """Which retry partitions are paused, on which record, until when."""

    def __init__(self) -> None:
        self._holds: dict[tuple[str, int], Hold] = {}

    def sift(self, batch: Iterable[M], now: datetime | None = None) -> Sifted[M]:
        """Split a consumed batch: due records in order, and new holds.

        A record without a due time is due. The first record of a partition that is not
        due becomes a hold; it and every later record of that partition in the batch are
        left out (they are fetched again after the caller seeks to the hold's offset).
        Records of partitions already held are left out too.
        """
        now = now or datetime.now(UTC)
        out: Sifted[M] = Sifted()
        for message in batch:
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if topic is None or partition is None or offset is None:
                continue
            if self.is_held(topic, partition):
                continue
            hold = self.check(topic, partition, offset, due_time(message), now)
            if hold is None:
                out.ready.append(message)
            else:
                out.held.append(hold)
        return out

    def is_held(self, topic: str, partition: int) -> bool:
        """Is the partition waiting for its head? (Its later records are fetched again.)"""
        return (topic, partition) in self._holds

    def check(
        self, topic: str, partition: int, offset: int, due: datetime | None, now: datetime
    ) -> Hold | None:
        """One record of a partition not held: None when it is due (no due time: due now),
        else the new hold of its partition on it."""
        if due is None or due <= now:
            return None
        hold = Hold(topic, partition, offset, due)
        self._holds[(topic, partition)] = hold
        return hold

    def due(self, now: datetime | None = None) -> list[Hold]:
        """Holds whose time has come, removed from here: resume these partitions."""
        now = now or datetime.now(UTC)
        ripe = [hold for hold in self._holds.values() if hold.due <= now]
        for hold in ripe:
            del self._holds[(hold.topic, hold.partition)]
        return ripe

    def next_due(self) -> datetime | None:
        """The earliest due time of a held partition."""
        return min((hold.due for hold in self._holds.values()), default=None)

    def poll_timeout(self, ceiling: float, now: datetime | None = None) -> float:
        """Seconds the poll loop may block: ``ceiling``, or less if a hold ripens sooner."""
        nxt = self.next_due()
        if nxt is None:
            return ceiling
        left = (nxt - (now or datetime.now(UTC))).total_seconds()
        return max(0.0, min(ceiling, left))

    def forget(self, partitions: Iterable[tuple[str, int]]) -> list[Hold]:
        """Drop the holds of revoked partitions (the next owner starts unpaused)."""
        return [hold for tp in partitions if (hold := self._holds.pop(tp, None)) is not None]

    @property
    def held(self) -> list[Hold]:
        """Every hold in place."""
        return list(self._holds.values())


def hold(consumer: PartitionControl, holds: Iterable[Hold]) -> None:
    """Pause each held partition and seek it back to its head record. Does not block."""
    holds = list(holds)
    if not holds:
        return
    consumer.pause([TopicPartition(h.topic, h.partition) for h in holds])
    for h in holds:
        consumer.seek(TopicPartition(h.topic, h.partition, h.offset))


def resume_due(
    consumer: PartitionControl, holds: RetryHolds, now: datetime | None = None
) -> list[Hold]:
    """Resume the partitions whose head is due; returns their holds. Does not block."""
    ripe = holds.due(now)
    if ripe:
        consumer.resume([TopicPartition(h.topic, h.partition) for h in ripe])
    return ripe
