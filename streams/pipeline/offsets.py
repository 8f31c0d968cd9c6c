"""Where each partition is: the position past its last finished record, and its commit.

Records of a partition are processed one at a time, in offset order, so a partition's
progress is one number: ``position``, one past the last record that went through the whole
chain (``Commit`` moves it); a record that failed without being handled never gets there,
so nothing at or after it is committed. Writes are not tracked per record: a committer
flushes the producer and checks that no write failed before it commits positions (what
Kafka Streams does too), which costs one wait per commit instead of a Python object and a
delivery callback per record.

``Partitions`` is the one owner of the assigned partitions: the runtime's rebalance
callbacks add and remove them, ``Track`` (the chain's first step after the retry gate)
hands each record its partition's ``PartitionOffsets``, committers read and move the
committed offsets, and ``rewind_to_committed`` (an aborted transaction, a broker outage)
seeks every partition back to its committed offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaException, TopicPartition

from streams.coordinates import TP
from streams.pipeline.crash_guard import GuardedPartition
from streams.pipeline.errors import RuntimeFailure, transient, unavailable
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step

_LATEST = frozenset({"latest", "end", "largest"})


class PartitionOffsets:
    """One assigned partition: ``position`` (None until a record finished) and
    ``committed`` (the last offset committed, once known)."""

    __slots__ = ("committed", "guard", "partition", "position", "topic")

    def __init__(self, topic: str, partition: int, committed: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.position: int | None = None
        self.committed = committed
        self.guard: GuardedPartition | None = None
        """The crash guard, while it watches this partition (``streams.pipeline.crash_guard``)."""

    def pending_commit(self) -> int | None:
        """``position`` when it moved past the last commit, else None."""
        position = self.position
        return None if position is None or position == self.committed else position


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
        forget its progress: what was processed since is processed again.
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
            self._map[(topic, partition)].position = None
        return keys

    def _error(self, exc: KafkaException, doing: str) -> RuntimeFailure:
        if transient(exc.args[0]):
            return unavailable(exc, doing)
        return RuntimeFailure(f"error {doing}: {exc.args[0].str()}")


class Track(Forward):
    """Hands each record its partition's offsets. A record of a partition revoked while
    its batch was in hand is dropped: the partition's new owner reads it."""

    __slots__ = ("_partitions", "_stats")

    def __init__(self, next: Step, partitions: Partitions, stats: Any) -> None:
        super().__init__(next)
        self._partitions = partitions
        self._stats = stats

    def submit(self, record: Record) -> None:
        po = self._partitions._map.get((record.topic, record.partition))
        if po is None:
            return
        record.offsets = po
        guard = po.guard
        if guard is not None and not guard.before(record.offset, po.committed):
            po.guard = None  # nothing to watch on this partition any more
        self._stats.consumed += 1
        self.next.submit(record)
