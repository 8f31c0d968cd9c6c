"""``MemoryConsumer``: ``confluent_kafka.Consumer``'s surface on a :class:`MemoryCluster`.

The group has one member, this consumer. ``subscribe`` takes effect at the next
``consume``/``poll``, which assigns every partition of the subscribed topics (creating a
missing topic; a name starting with ``^`` is a regex over existing topics) and revokes those
of topics no longer subscribed. As with the cooperative protocol, ``on_assign`` and
``on_revoke`` get only the partitions that change, and run inside that ``consume``/``poll``;
as with confluent-kafka, a callback may call ``assign``/``incremental_assign`` itself, else
the partitions are (un)assigned when it returns. Partitions that appear later are assigned
at a later ``consume``/``poll``. ``on_lost`` is never called: no member ever times out.

A partition starts at the offset given to ``assign`` (>= 0, or ``OFFSET_BEGINNING`` /
``OFFSET_END``), else at the group's committed offset, else at ``auto.offset.reset``
(earliest by default); the position is resolved when the partition is assigned, and a
position past the end of the log is reset the same way when read.

``consume`` returns up to ``num_messages`` records from the assigned, unpaused partitions,
oldest first across partitions (by arrival at the cluster), and never waits; ``poll``
returns one or None. With ``isolation.level=read_committed`` (the default) aborted records
are skipped and a partition stops at its first record of an open transaction (the last
stable offset); ``read_uncommitted`` reads everything. Transaction markers take offsets
but are never returned. With ``enable.partition.eof``, a partition read to its end yields
one ``_PARTITION_EOF`` event (offset: the position) per end offset reached, and again
after a seek; it comes before records of other partitions.

``get_watermark_offsets`` returns ``(0, end)``: with read_committed the end is the last
stable offset (librdkafka asks the broker with the consumer's isolation level), with
read_uncommitted or ``cached=True`` the high watermark. ``commit`` stores offsets at once;
without offsets or message it commits the current positions; a synchronous commit of
nothing raises ``_NO_OFFSET``. ``close`` revokes a subscription's partitions through
``on_revoke``; every call after it raises ``RuntimeError``, as confluent-kafka's does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    KafkaError,
    Message,
    TopicPartition,
)
from confluent_kafka.admin._metadata import ClusterMetadata  # public as confluent_kafka.admin's

from streams.coordinates import TP
from streams.testing.memory.records import (
    GroupMetadata,
    StoredRecord,
    TxState,
    kafka_exception,
    to_message,
)

if TYPE_CHECKING:
    from streams.testing.memory.cluster import MemoryCluster

RebalanceCallback = Callable[[Any, list[TopicPartition]], None]

_EARLIEST = ("earliest", "smallest", "beginning")
_LATEST = ("latest", "largest", "end")


class _Assigned:
    """An assigned partition: where the consumer reads next, and at which position it last
    reported end-of-partition."""

    __slots__ = ("eof_at", "paused", "position")

    def __init__(self, position: int) -> None:
        self.position = position
        self.paused = False
        self.eof_at: int | None = None


class MemoryConsumer:
    """Build it with ``MemoryCluster.consumer(config)``; see the module docstring."""

    def __init__(self, cluster: MemoryCluster, config: Mapping[str, Any]) -> None:
        if not config.get("group.id"):
            raise ValueError("Failed to create consumer: group.id must be set")
        reset = str(config.get("auto.offset.reset", "earliest")).lower()
        isolation = str(config.get("isolation.level", "read_committed")).lower()
        if reset not in _EARLIEST + _LATEST:
            raise ValueError(f"auto.offset.reset: unsupported value {reset!r}")
        if isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolation.level: unsupported value {isolation!r}")
        self._cluster = cluster
        self.group_id = str(config["group.id"])
        self._reset_to_latest = reset in _LATEST
        self._read_committed = isolation == "read_committed"
        self._eof_events = str(config.get("enable.partition.eof", False)).lower() == "true"
        self._assigned: dict[TP, _Assigned] = {}
        self._subscription: list[str] | None = None  # [] after unsubscribe, until revoked
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        # set by every (un)assign call: tells a rebalance whether its callback did it
        self._assigned_in_callback = False
        self._closed = False

    # -- group membership ----------------------------------------------------------------
    def subscribe(
        self,
        topics: list[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        self._check_open()
        self._subscription = list(topics)
        self._on_assign, self._on_revoke = on_assign, on_revoke

    def unsubscribe(self) -> None:
        """The partitions are revoked at the next ``consume``/``poll`` (or ``close``)."""
        self._check_open()
        if self._subscription is not None:
            self._subscription = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self._assigned_in_callback = True
        self._assigned = {}
        self.incremental_assign(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self._assigned_in_callback = True
        for tp in partitions:
            self._cluster._ensure_topic(tp.topic)
            self._assigned[(tp.topic, tp.partition)] = _Assigned(self._start(tp))

    def unassign(self) -> None:
        self._check_open()
        self._assigned_in_callback = True
        self._assigned = {}

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self._assigned_in_callback = True
        for tp in partitions:
            self._assigned.pop((tp.topic, tp.partition), None)

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return [TopicPartition(t, p) for t, p in self._assigned]

    def consumer_group_metadata(self) -> GroupMetadata:
        self._check_open()
        return GroupMetadata(self.group_id)

    # -- reading -------------------------------------------------------------------------
    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self._check_open()
        if not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        self._rebalance()
        batch: list[Message] = []
        while len(batch) < num_messages and (msg := self._next()) is not None:
            batch.append(msg)
        return batch

    def poll(self, timeout: float = -1) -> Message | None:
        self._check_open()
        self._rebalance()
        return self._next()

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._set_paused(partitions, True)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._set_paused(partitions, False)

    def seek(self, partition: TopicPartition) -> None:
        self._check_open()
        assigned = self._assigned.get((partition.topic, partition.partition))
        if assigned is None:
            raise kafka_exception(
                KafkaError._STATE,
                f"Failed to seek to offset {partition.offset}: Local: Erroneous state",
            )
        assigned.position = self._start(partition)
        assigned.eof_at = None

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        self._check_open()
        out = []
        for tp in partitions:
            assigned = self._assigned.get((tp.topic, tp.partition))
            offset = assigned.position if assigned is not None else OFFSET_INVALID
            out.append(TopicPartition(tp.topic, tp.partition, offset))
        return out

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        self._check_open()
        log = self._log_of(partition.topic, partition.partition)
        return 0, (self._stable_end(log) if self._read_committed and not cached else len(log))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self._check_open()
        return self._cluster._metadata(topic)

    # -- offsets -------------------------------------------------------------------------
    def commit(
        self,
        *,
        message: Message | None = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition] | None:
        self._check_open()
        chosen: dict[TP, tuple[int, str | None]]
        if message is not None:
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            chosen = {(topic, partition): (offset + 1, None)}
        elif offsets is not None:
            chosen = {
                (tp.topic, tp.partition): (tp.offset, tp.metadata)
                for tp in offsets
                if tp.offset >= 0
            }
        else:
            chosen = {key: (a.position, None) for key, a in self._assigned.items()}
        if not chosen:
            if asynchronous:  # librdkafka reports it to on_commit, which we do not model
                return None
            raise kafka_exception(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored")
        self._cluster._commit_offsets(self.group_id, chosen)
        if asynchronous:
            return None
        return [
            TopicPartition(t, p, o) if m is None else TopicPartition(t, p, o, metadata=m)
            for (t, p), (o, m) in chosen.items()
        ]

    def committed(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        self._check_open()
        out = []
        for tp in partitions:
            offset = self._cluster.committed(self.group_id, tp.topic, tp.partition)
            metadata = self._cluster.committed_metadata(self.group_id, tp.topic, tp.partition)
            found = TopicPartition(
                tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset
            )
            if metadata is not None:
                found = TopicPartition(tp.topic, tp.partition, found.offset, metadata=metadata)
            out.append(found)
        return out

    def close(self) -> None:
        """Revoke a subscription's partitions (``on_revoke``), then forget everything."""
        if self._closed:
            return
        if self._subscription is not None and self._assigned and self._on_revoke is not None:
            self._on_revoke(self, [TopicPartition(t, p) for t, p in self._assigned])
        self._assigned, self._subscription = {}, None
        self._closed = True

    # -- internals -----------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def _log_of(self, topic: str, partition: int) -> list[StoredRecord]:
        """The partition's log; ``UNKNOWN_TOPIC_OR_PART`` if the cluster has no such one."""
        try:
            known = 0 <= partition < self._cluster.partition_count(topic)
        except KeyError:
            known = False
        if not known:
            raise kafka_exception(
                KafkaError.UNKNOWN_TOPIC_OR_PART, f"{topic} [{partition}]: unknown partition"
            )
        return self._cluster._log(topic, partition)

    def _stable_end(self, log: list[StoredRecord]) -> int:
        """The last stable offset: the first record of an open transaction, else the end."""
        return next((r.offset for r in log if r.state is TxState.OPEN), len(log))

    def _start(self, tp: TopicPartition) -> int:
        """Where reading starts for ``tp``'s offset (a logical one resolved)."""
        log = self._log_of(tp.topic, tp.partition)
        end = self._stable_end(log) if self._read_committed else len(log)
        if tp.offset >= 0:
            return tp.offset
        if tp.offset == OFFSET_BEGINNING:
            return 0
        if tp.offset == OFFSET_END:
            return end
        committed = self._cluster.committed(self.group_id, tp.topic, tp.partition)
        if committed is not None:
            return committed
        return end if self._reset_to_latest else 0

    def _rebalance(self) -> None:
        """Bring the assignment in line with the subscription, through the callbacks."""
        if self._subscription is None:
            return
        wanted: dict[TP, None] = {}  # ordered: partitions are assigned in this order
        for name in self._subscription:
            if name.startswith("^"):
                topics = [t for t in self._cluster.topics() if re.match(name, t)]
            else:
                self._cluster._ensure_topic(name)
                topics = [name]
            for topic in topics:
                wanted.update(
                    dict.fromkeys((topic, p) for p in range(self._cluster.partition_count(topic)))
                )
        revoked = [TopicPartition(t, p) for t, p in self._assigned if (t, p) not in wanted]
        if revoked:
            self._assigned_in_callback = False
            if self._on_revoke is not None:
                self._on_revoke(self, revoked)
            if not self._assigned_in_callback:
                self.incremental_unassign(revoked)
        added = [TopicPartition(t, p) for t, p in wanted if (t, p) not in self._assigned]
        if added:
            self._assigned_in_callback = False
            if self._on_assign is not None:
                self._on_assign(self, added)
            if not self._assigned_in_callback:
                self.incremental_assign(added)
        if not self._subscription:
            self._subscription = None  # unsubscribed, and everything is revoked

    def _next(self) -> Message | None:
        """The oldest readable record of the unpaused partitions, or an end-of-partition
        event, or None."""
        best: tuple[_Assigned, StoredRecord] | None = None
        for (topic, partition), assigned in self._assigned.items():
            if assigned.paused:
                continue
            record = self._readable(self._cluster._log(topic, partition), assigned)
            if record is None:
                if self._eof_events and assigned.eof_at != assigned.position:
                    assigned.eof_at = assigned.position
                    return Message(
                        topic=topic,
                        partition=partition,
                        offset=assigned.position,
                        error=KafkaError(KafkaError._PARTITION_EOF),
                    )
            elif best is None or record.sequence < best[1].sequence:
                best = (assigned, record)
        if best is None:
            return None
        assigned, record = best
        assigned.position = record.offset + 1
        return to_message(record)

    def _readable(self, log: list[StoredRecord], assigned: _Assigned) -> StoredRecord | None:
        """The record at the position after skipping what this isolation level never
        returns (markers; aborted records when read_committed), or None at the end."""
        if assigned.position > len(log):  # out of range, as after a seek too far
            assigned.position = len(log) if self._reset_to_latest else 0
        while assigned.position < len(log):
            record = log[assigned.position]
            skip = record.control or (self._read_committed and record.state is TxState.ABORTED)
            if not skip:
                if self._read_committed and record.state is TxState.OPEN:
                    return None
                return record
            assigned.position += 1
        return None

    def _set_paused(self, partitions: list[TopicPartition], paused: bool) -> None:
        self._check_open()
        for tp in partitions:
            assigned = self._assigned.get((tp.topic, tp.partition))
            if assigned is not None:
                assigned.paused = paused
