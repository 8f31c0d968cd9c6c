"""Which records are in flight, per partition, so commits cover only finished work.

Each tracked record gets an ``InFlight`` entry, in offset order. An entry holds one token
while its record is processed and one per write it caused; it is done when every token is
released (processing finished, every write acknowledged). ``committable()`` is the offset
to commit: one past the end of the contiguous prefix of done entries. Entries may finish in
any order (writes are acknowledged out of order across topics); the committed offset never
passes an unfinished record.

``Partitions`` is the one owner of the assigned partitions and their entries: the runtime's
rebalance callbacks add and remove partitions, ``Track`` (the chain's first step after the
retry gate) begins an entry per record, committers read and move the committed offsets,
and ``rewind_to_committed`` (an aborted transaction, a broker outage) seeks every
partition back to its committed offset and forgets its records in flight.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaException, TopicPartition

from streams.coordinates import TP
from streams.pipeline.errors import RuntimeFailure, transient, unavailable
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step

_LATEST = frozenset({"latest", "end", "largest"})


class InFlight:
    """One tracked record. ``hold()`` before work that must finish first, ``release()``
    when it has."""

    __slots__ = ("failed", "offset", "tokens")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.tokens = 1  # the processing itself
        self.failed = False

    def hold(self) -> None:
        self.tokens += 1

    def release(self) -> None:
        self.tokens -= 1

    @property
    def done(self) -> bool:
        return self.tokens == 0 and not self.failed


class PartitionOffsets:
    """The in-flight records of one partition, oldest first, and its committed offset."""

    __slots__ = ("_entries", "_next_commit", "committed", "partition", "topic")

    def __init__(self, topic: str, partition: int, committed: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self._entries: deque[InFlight] = deque()
        self._next_commit: int | None = None  # one past the finished prefix
        self.committed = committed  # the last offset committed for this partition

    def begin(self, offset: int) -> InFlight:
        """Track a newly consumed record. Offsets must increase (they do within a partition)."""
        if self._entries and offset <= self._entries[-1].offset:
            raise ValueError(f"offset {offset} after {self._entries[-1].offset}")
        entry = InFlight(offset)
        self._entries.append(entry)
        return entry

    @property
    def in_flight(self) -> int:
        """Entries not known to be done (call ``committable()`` first to drop done ones)."""
        return len(self._entries)

    def committable(self) -> int | None:
        """The offset to commit (next record to read), or None when nothing finished since
        the start. Drops finished entries from the front as it goes."""
        entries = self._entries
        while entries and entries[0].done:
            self._next_commit = entries.popleft().offset + 1
        return self._next_commit

    def pending_commit(self) -> int | None:
        """``committable()`` when it moved past the last commit, else None."""
        nxt = self.committable()
        if nxt is None or nxt == self.committed:
            return None
        return nxt

    def finished(self) -> int | None:
        """The position to commit when every tracked record is done, else None (a record
        that failed or still waits for an acknowledgement holds the whole partition)."""
        nxt = self.committable()
        return None if nxt is None or self._entries else nxt


class OffsetReader(Protocol):
    """What ``Partitions`` needs of the consumer (``confluent_kafka.Consumer`` is one)."""

    def committed(self, partitions: list[TopicPartition], timeout: float = ...) -> Any: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> Any: ...
    def seek(self, partition: TopicPartition) -> None: ...


class Partitions:
    """The assigned partitions of one instance (see the module docstring). Not thread-safe."""

    def __init__(self, consumer: OffsetReader, *, auto_offset_reset: str, timeout: float) -> None:
        self._consumer = consumer
        self._latest = auto_offset_reset in _LATEST
        self._timeout = timeout
        self._map: dict[TP, PartitionOffsets] = {}

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[TP]:
        return iter(self._map)

    def __contains__(self, tp: object) -> bool:
        return tp in self._map

    def get(self, tp: TP) -> PartitionOffsets | None:
        return self._map.get(tp)

    def values(self) -> list[PartitionOffsets]:
        return list(self._map.values())

    def of(self, keys: Iterable[TP]) -> list[PartitionOffsets]:
        """The assigned ones among ``keys``."""
        return [po for k in keys if (po := self._map.get(k)) is not None]

    def assign(self, keys: Iterable[TP]) -> None:
        for topic, partition in keys:
            self._map[(topic, partition)] = PartitionOffsets(topic, partition)

    def remove(self, keys: Iterable[TP]) -> None:
        for key in keys:
            self._map.pop(key, None)

    def load_committed(self, keys: Sequence[TP]) -> dict[TP, int]:
        """Read the committed offset of each of ``keys`` (none: where ``auto.offset.reset``
        starts a new group) and remember it. Blocks on the broker; raises
        ``BrokerUnavailable`` when it does not answer."""
        if not keys:
            return {}
        try:
            found = self._consumer.committed(
                [TopicPartition(t, p) for t, p in keys], timeout=self._timeout
            )
        except KafkaException as exc:
            raise self._error(exc, "reading the committed offsets") from exc
        out: dict[TP, int] = {}
        for tp in found:
            offset = int(tp.offset)
            if offset < 0:
                try:
                    low, high = self._consumer.get_watermark_offsets(
                        TopicPartition(tp.topic, tp.partition), timeout=self._timeout
                    )
                except KafkaException as exc:
                    raise self._error(exc, "reading watermarks") from exc
                offset = int(high if self._latest else low)
            key = (tp.topic, tp.partition)
            out[key] = offset
            po = self._map.get(key)
            if po is not None:
                po.committed = offset
        return out

    def rewind_to_committed(self, exclude: Iterable[TP] = ()) -> list[TP]:
        """Seek every assigned partition (but ``exclude``) back to its committed offset and
        forget its records in flight: what was processed since is processed again.
        Raises ``BrokerUnavailable`` (offsets unreadable) or ``RuntimeFailure``."""
        skip = set(exclude)
        keys = [k for k in self._map if k not in skip]
        for (topic, partition), offset in self.load_committed(keys).items():
            try:
                self._consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException as exc:
                raise RuntimeFailure(
                    f"cannot rewind {topic}[{partition}] to offset {offset} "
                    f"({exc.args[0].str()}); stopping so the records are read again on restart"
                ) from exc
            self._map[(topic, partition)] = PartitionOffsets(topic, partition, offset)
        return keys

    def _error(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        if transient(exc.args[0]):
            return unavailable(exc, doing)
        return RuntimeFailure(f"error {doing}: {exc.args[0].str()}")


class Track(Forward):
    """Begins each record's in-flight entry. A record of a partition revoked while its
    batch was in hand is dropped: the partition's new owner reads it."""

    __slots__ = ("_partitions", "_stats")

    def __init__(self, next: Step, partitions: Partitions, stats: Any) -> None:
        super().__init__(next)
        self._partitions = partitions
        self._stats = stats

    def submit(self, record: Record) -> None:
        po = self._partitions._map.get((record.topic, record.partition))
        if po is None:
            return
        record.entry = po.begin(record.offset)
        self._stats.consumed += 1
        self.next.submit(record)
