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

import base64
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

from streams.client_errors import transient
from streams.coordinates import TP
from streams.pipeline.crash_guard import GuardedPartition
from streams.pipeline.errors import RuntimeFailure, unavailable
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step

_LATEST = frozenset({"latest", "end", "largest"})


class PartitionOffsets:
    """One assigned partition: ``position`` (None until a record finished) and
    ``committed`` (the last offset committed, once known).

    With records in flight at once (``streams.pipeline.concurrency``) some finish past the
    position, ahead of one that has not: ``ahead`` names them, the concurrency step sets it
    before each commit, and the commit carries it in its metadata (``encode_ahead``). What
    an earlier run's commit said finished ahead of it is ``skip`` (read with the committed
    offset): those records are not processed again."""

    __slots__ = (
        "ahead",
        "committed",
        "committed_ahead",
        "from_reset",
        "guard",
        "partition",
        "position",
        "rewinds",
        "skip",
        "topic",
    )

    def __init__(self, topic: str, partition: int, committed: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.position: int | None = None
        self.committed = committed
        # ``committed`` is where ``auto.offset.reset`` starts: the group never committed
        # this partition (``Partitions.load_committed`` resolved it for a restore).
        self.from_reset = False
        self.guard: GuardedPartition | None = None
        """The crash guard's, when it is on (``streams.pipeline.crash_guard``)."""
        self.ahead: tuple[int, ...] = ()
        self.committed_ahead: tuple[int, ...] = ()
        self.skip: frozenset[int] = frozenset()
        self.rewinds = 0  # times it was sought back to its committed offset

    def finished(self) -> int | None:
        """The offset a commit covers: the position, or with none yet but records finished
        ahead, the committed offset (a commit of what finished ahead); else None."""
        position = self.position
        if position is None and self.ahead:
            return self.committed
        return position

    def pending_commit(self) -> int | None:
        """``finished()`` when it (or what finished ahead of it) moved since the last
        commit, else None."""
        position = self.finished()
        if position is None or (position == self.committed and self.ahead == self.committed_ahead):
            return None
        return position

    def commit_offset(self, offset: int) -> TopicPartition:
        """What a commit of ``offset`` sends: with the offsets that finished ahead of it in
        its metadata."""
        ahead = self.ahead
        if not ahead:
            return TopicPartition(self.topic, self.partition, offset)
        return TopicPartition(
            self.topic, self.partition, offset, metadata=encode_ahead(offset, ahead)
        )

    def committed_now(self, offset: int) -> None:
        """``offset`` (from ``commit_offset``) was committed."""
        self.committed = offset
        self.from_reset = False
        self.committed_ahead = self.ahead
        if self.guard is not None:
            self.guard.committed(offset)


AHEAD_MARK = "streams-ahead:1:"
"""How a commit's metadata starts when it names offsets finished past the committed one."""


AHEAD_SPAN = 24_000
"""Offsets past the committed one that commit metadata can name: Kafka keeps up to 4,096
characters of it (``offset.metadata.max.bytes``), a bit per offset in base64 fits 24,000.
A partition holds ``buffered_per_partition`` records (and a batch) at most, far fewer;
one finished further ahead is left out (processed again after a restart)."""


def encode_ahead(offset: int, ahead: Iterable[int]) -> str:
    """Commit metadata naming the offsets in ``ahead`` (all past ``offset``, up to
    ``AHEAD_SPAN`` past it): a bit per offset from ``offset + 1`` on, little-endian, in
    base64 after ``AHEAD_MARK``."""
    bits = 0
    for n in ahead:
        if n <= offset:
            raise ValueError(f"offset {n} is not past the committed offset {offset}")
        if n - offset <= AHEAD_SPAN:
            bits |= 1 << (n - offset - 1)
    raw = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    return AHEAD_MARK + base64.b64encode(raw).decode()


def decode_ahead(offset: int, metadata: str | None) -> frozenset[int]:
    """The offsets ``encode_ahead`` named (none for metadata it did not write)."""
    if not metadata or not metadata.startswith(AHEAD_MARK):
        return frozenset()
    try:
        bits = int.from_bytes(base64.b64decode(metadata[len(AHEAD_MARK) :]), "little")
    except ValueError:
        return frozenset()
    found, n = [], offset + 1
    while bits:
        if bits & 1:
            found.append(n)
        bits >>= 1
        n += 1
    return frozenset(found)


class OffsetReader(Protocol):
    """What ``Partitions`` needs of the consumer (``confluent_kafka.Consumer`` is one)."""

    def committed(self, partitions: list[TopicPartition], timeout: float = ...) -> Any: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> Any: ...
    def seek(self, partition: TopicPartition) -> None: ...
    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...


class Partitions:
    """The assigned partitions of one instance (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        consumer: OffsetReader,
        *,
        auto_offset_reset: str,
        timeout: float,
        incremental: bool = True,
    ) -> None:
        self._consumer = consumer
        self._latest = auto_offset_reset in _LATEST
        self._timeout = timeout
        self._incremental = incremental  # the group's assign call (``incremental_rebalances``)
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

    def at_end(self) -> bool:
        """Whether every partition is read to its end as last fetched (no request made):
        the instance has caught up. One offset short counts as the end (a transaction's
        marker after its last record). An end not fetched yet is not the end; a partition
        with nothing read or committed is read from its start."""
        ends = self._consumer.get_watermark_offsets
        for (topic, partition), po in self._map.items():
            low, high = ends(TopicPartition(topic, partition), cached=True)
            done = po.position if po.position is not None else po.committed
            if high < 0 or high - (low if done is None else done) > 1:
                return False
        return True

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
        out: dict[TP, int] = {}
        for tp in self._read_committed(keys):
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
            self._remember(key, offset, getattr(tp, "metadata", None), from_reset=tp.offset < 0)
        return out

    def start(self, keys: Sequence[TP]) -> None:
        """Have the consumer fetch ``keys`` (just assigned: called in the rebalance
        callback) from their committed offsets, read here (now, unless a committer read
        them for its restore), rather than let librdkafka read them again: its own read,
        answered NOT_COORDINATOR while the group's coordinator moves to another node,
        leaves the partitions assigned and never fetched, with no error after the first
        (librdkafka #5586). A partition never committed starts at librdkafka's logical
        beginning or end (``auto.offset.reset``), which it resolves without that read, even
        when a restore resolved it to a number already (handed that number instead, one of
        two instances of a new group on two cores ran 10-15% idle; librdkafka's reason
        unknown).
        Blocks on the broker; raises ``BrokerUnavailable``."""
        for tp in self._read_committed([k for k in keys if self._map[k].committed is None]):
            if tp.offset >= 0:
                self._remember(
                    (tp.topic, tp.partition), int(tp.offset), getattr(tp, "metadata", None)
                )
        reset = OFFSET_END if self._latest else OFFSET_BEGINNING
        start = []
        for topic, partition in keys:
            po = self._map[(topic, partition)]
            committed = po.committed
            start.append(
                TopicPartition(
                    topic, partition, reset if committed is None or po.from_reset else committed
                )
            )
        if self._incremental:
            self._consumer.incremental_assign(start)
        else:  # an eager group's callback is handed its whole assignment
            self._consumer.assign(start)

    def _read_committed(self, keys: Sequence[TP]) -> list[TopicPartition]:
        """The group's committed offsets of ``keys`` as the broker holds them (negative:
        none). Raises ``BrokerUnavailable`` when it does not answer."""
        if not keys:
            return []
        try:
            found: list[TopicPartition] = self._consumer.committed(
                [TopicPartition(t, p) for t, p in keys], timeout=self._timeout
            )
        except KafkaException as exc:
            raise self._error(exc, "reading the committed offsets") from exc
        return found

    def _remember(
        self, key: TP, offset: int, metadata: str | None, *, from_reset: bool = False
    ) -> None:
        po = self._map.get(key)
        if po is not None:
            po.committed = offset
            po.from_reset = from_reset
            skip = decode_ahead(offset, metadata)
            po.skip, po.committed_ahead = skip, tuple(sorted(skip))

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
            po = self._map[(topic, partition)]
            po.position = None
            po.ahead = ()
            po.rewinds += 1
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
        if po.skip and record.offset in po.skip:  # an earlier run finished it, ahead
            po.position = record.offset + 1  # one at a time: every record before it finished
            return
        record.offsets = po
        guard = po.guard
        if guard is not None:
            guard.before(record.offset)
        self._stats.consumed += 1
        self.next.submit(record)
