"""``MemoryCluster``: the topics, logs and consumer-group offsets the in-memory clients share.

Topics are created explicitly (``create_topic``) or on first use: a produce to an unknown
topic, a subscription or an assignment creates it with ``partitions(topic)`` partitions.
Every log starts at offset 0 and keeps every record (no retention, no compaction).
Tests read what was written with ``records`` and the groups' offsets with ``committed``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from confluent_kafka import KafkaError
from confluent_kafka.admin._metadata import (  # public as confluent_kafka.admin's
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
)

from streams.testing.memory.consumer import MemoryConsumer
from streams.testing.memory.producer import MemoryProducer
from streams.testing.memory.records import Headers, StoredRecord, Transaction, TxState
from streams.testing.memory.share import MemoryShareConsumer


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryCluster:
    """An in-memory Kafka cluster for :class:`MemoryProducer` and :class:`MemoryConsumer`.

    ``partitions`` is the partition count of implicitly created topics (a number, or a
    function of the topic name); ``clock_ms`` stamps records produced with timestamp 0.
    """

    def __init__(
        self,
        partitions: Callable[[str], int] | int = 1,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        if isinstance(partitions, int):
            count = partitions
            self._default_partitions: Callable[[str], int] = lambda _topic: count
        else:
            self._default_partitions = partitions
        self.clock_ms = clock_ms
        self._logs: dict[str, list[list[StoredRecord]]] = {}
        # group -> partition -> (committed offset, the commit's metadata)
        self._group_offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}
        self._arrivals = itertools.count()
        # transactional.id -> the producer that last initialised it (the others are fenced)
        self._owners: dict[str, MemoryProducer] = {}
        self._max_bytes: dict[str, int] = {}  # a topic's max.message.bytes, when limited
        self._denied: set[str] = set()  # topics no producer may write

    # -- clients -------------------------------------------------------------------------
    def producer(self, config: Mapping[str, Any]) -> MemoryProducer:
        """A producer on this cluster (librdkafka config keys; unknown keys are ignored)."""
        return MemoryProducer(self, config)

    def consumer(self, config: Mapping[str, Any]) -> MemoryConsumer:
        """A consumer on this cluster (librdkafka config keys; unknown keys are ignored)."""
        return MemoryConsumer(self, config)

    def share_consumer(self, config: Mapping[str, Any]) -> MemoryShareConsumer:
        """A share group's consumer on this cluster (``streams.testing.memory.share``)."""
        return MemoryShareConsumer(self, config)

    # -- topics --------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int) -> None:
        """Create ``name``; a no-op if it exists with this many partitions, else ValueError."""
        if partitions < 1:
            raise ValueError(f"topic {name!r}: a topic needs at least one partition")
        existing = self._logs.get(name)
        if existing is None:
            self._logs[name] = [[] for _ in range(partitions)]
        elif len(existing) != partitions:
            raise ValueError(
                f"topic {name!r} exists with {len(existing)} partitions, not {partitions}"
            )

    def limit_message_bytes(self, topic: str, max_bytes: int) -> None:
        """The topic takes no record larger than ``max_bytes`` (its ``max.message.bytes``,
        against ``streams.record_size.record_size``): a larger one's delivery fails with
        ``MSG_SIZE_TOO_LARGE``."""
        self._max_bytes[topic] = max_bytes

    def deny_writes(self, topic: str) -> None:
        """No producer may write ``topic``: every delivery fails with
        ``TOPIC_AUTHORIZATION_FAILED``, as a broker whose ACLs leave it out answers."""
        self._denied.add(topic)

    def topics(self) -> list[str]:
        return sorted(self._logs)

    def partition_count(self, topic: str) -> int:
        """The topic's partition count; KeyError if it does not exist."""
        return len(self._logs[topic])

    def records(
        self, topic: str, partition: int | None = None, *, committed_only: bool = True
    ) -> list[StoredRecord]:
        """The topic's records in arrival order across partitions, or one partition's in
        offset order; ``committed_only`` leaves out records of open and aborted
        transactions. An unknown topic has no records."""
        logs = self._logs.get(topic, [])
        if partition is not None:
            if not 0 <= partition < len(logs):
                raise ValueError(f"topic {topic!r} has no partition {partition}")
            logs = [logs[partition]]
        found = [
            r
            for log in logs
            for r in log
            if not r.control and (not committed_only or r.state is TxState.COMMITTED)
        ]
        return sorted(found, key=lambda r: r.sequence) if partition is None else found

    def end_offset(self, topic: str, partition: int) -> int:
        """The partition's high watermark: the offset its next record gets. Transaction
        markers take offsets, so with transactions it exceeds the number of records."""
        return len(self._logs[topic][partition])

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        """The group's committed offset for the partition (the next offset to read)."""
        found = self._group_offsets.get(group, {}).get((topic, partition))
        return found[0] if found is not None else None

    def committed_metadata(self, group: str, topic: str, partition: int) -> str | None:
        """The metadata the group's last commit of the partition carried."""
        found = self._group_offsets.get(group, {}).get((topic, partition))
        return found[1] if found is not None else None

    # -- for the clients (package-private) -----------------------------------------------
    def _log(self, topic: str, partition: int) -> list[StoredRecord]:
        return self._logs[topic][partition]

    def _refusal(self, topic: str, size: int) -> KafkaError | None:
        """Why the broker refuses a record of ``size`` bytes for ``topic``, if it does."""
        if topic in self._denied:
            return KafkaError(
                KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed"
            )
        limit = self._max_bytes.get(topic)
        if limit is not None and size > limit:
            return KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
        return None

    def _ensure_topic(self, topic: str) -> int:
        """The topic's partition count, creating the topic if it is new."""
        if topic not in self._logs:
            self.create_topic(topic, self._default_partitions(topic))
        return len(self._logs[topic])

    def _append(
        self,
        topic: str,
        partition: int,
        *,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        timestamp_ms: int,
        transaction: Transaction | None = None,
        control: bool = False,
    ) -> StoredRecord:
        log = self._logs[topic][partition]
        record = StoredRecord(
            topic,
            partition,
            len(log),
            timestamp_ms,
            key,
            value,
            headers,
            sequence=next(self._arrivals),
            transaction=transaction,
            control=control,
        )
        log.append(record)
        if transaction is not None and not control:
            transaction.partitions.add((topic, partition))
        return record

    def _end_transaction(self, transaction: Transaction, *, commit: bool) -> None:
        """Commit or abort: one control marker per partition written, then (on commit) the
        offsets sent to the transaction become their groups' committed offsets."""
        transaction.state = TxState.COMMITTED if commit else TxState.ABORTED
        now = self.clock_ms()
        for topic, partition in sorted(transaction.partitions):
            self._append(
                topic,
                partition,
                key=None,
                value=None,
                headers=[],
                timestamp_ms=now,
                transaction=transaction,
                control=True,
            )
        if commit:
            for group, offsets in transaction.offsets.items():
                self._commit_offsets(group, offsets)

    def _commit_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str | None]]
    ) -> None:
        """Commit (offset, metadata) per partition: a commit without metadata clears it."""
        self._group_offsets.setdefault(group, {}).update(offsets)

    def _claim(self, transactional_id: str, producer: MemoryProducer) -> MemoryProducer | None:
        """Make ``producer`` the owner of ``transactional_id``; the previous owner, if any."""
        previous = self._owners.get(transactional_id)
        self._owners[transactional_id] = producer
        return previous if previous is not producer else None

    def _metadata(self, topic: str | None = None) -> ClusterMetadata:
        """What ``list_topics`` returns: one broker (id 0) leading every partition; a
        requested topic that does not exist comes with UNKNOWN_TOPIC_OR_PART."""
        meta = ClusterMetadata()
        broker = BrokerMetadata()
        broker.id, broker.port = 0, 9092
        # the stubs type these as always None; the real client fills them in
        cast(Any, meta).cluster_id = "memory"
        cast(Any, broker).host = "memory"
        meta.controller_id = 0
        meta.brokers = {0: broker}
        for name in [topic] if topic is not None else self.topics():
            tm = TopicMetadata()
            tm.topic = name
            if name not in self._logs:
                tm.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            for p in range(len(self._logs.get(name, []))):
                pm = PartitionMetadata()
                pm.id, pm.leader, pm.replicas, pm.isrs = p, 0, [0], [0]
                tm.partitions[p] = pm
            meta.topics[name] = tm
        return meta
