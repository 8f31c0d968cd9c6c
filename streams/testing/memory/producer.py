"""``MemoryProducer``: ``confluent_kafka.Producer``'s surface on a :class:`MemoryCluster`.

``produce`` appends the record to its partition's log at once (the offset is assigned
then) and queues its delivery report; reports are served, in produce order, only inside
``poll``, ``flush``, ``commit_transaction`` and ``abort_transaction`` (librdkafka flushes
inside the last two). The partition is the one given, else murmur2 of the key
(``streams.topology.partitioning.partition_for``, as librdkafka's ``murmur2_random`` and the
Java client), else 0 for a record without a key (librdkafka would pick one at random). A
produce to a partition the topic does not have raises ``KafkaException(_UNKNOWN_PARTITION)``,
as librdkafka does when it knows the topic. The local queue has no limit (no BufferError).

With ``transactional.id`` the producer is transactional, with librdkafka's lifecycle:
``init_transactions`` (fencing the previous producer of that id: its open transaction is
aborted and every later produce or transactional call of it raises
``KafkaException(KafkaError(_FENCED, fatal=True))``), then ``begin_transaction``,
``produce``, ``send_offsets_to_transaction``, ``commit_transaction`` or
``abort_transaction``. A call in the wrong state raises ``_STATE``; a transactional call on
a producer without ``transactional.id`` raises ``_NOT_CONFIGURED``. A failed delivery inside
a transaction makes the transaction abortable: commit then raises the delivery's error with
``txn_requires_abort()`` and only ``abort_transaction`` is allowed. ``poll``, ``flush``,
``purge`` and ``len`` keep working on a fenced producer, as librdkafka's do.

A record larger than ``message.max.bytes`` (1,000,000 by default, counted as librdkafka
does: ``streams.record_size``) is refused by ``produce`` with ``MSG_SIZE_TOO_LARGE``, as
librdkafka refuses it before sending. The cluster refuses the deliveries of records too
large for a topic (``MemoryCluster.limit_message_bytes``) or of a topic no producer may
write (``MemoryCluster.deny_writes``), one record at a time (a broker refuses the batch).

Faults for tests: ``fail_deliveries(n, error)`` (the next ``n`` records are not written and
their reports carry ``error``), ``fail_commits(*errors)`` (the next commits raise them one by
one; a fatal error leaves the producer fatal and its transaction open until another
producer of the same id initialises; ``txn_requires_abort`` leaves it abortable; any other
error leaves the transaction open, to be committed again).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin._metadata import ClusterMetadata  # public as confluent_kafka.admin's

from streams.record_size import message_max_bytes, record_size
from streams.testing.memory.records import (
    GroupMetadata,
    Transaction,
    as_bytes,
    as_headers,
    kafka_exception,
    to_message,
)
from streams.topology.partitioning import partition_for

if TYPE_CHECKING:
    from streams.testing.memory.cluster import MemoryCluster

DeliveryCallback = Callable[[KafkaError | None, Message], None]


class _State(Enum):
    INIT = "INIT"  # transactional, before init_transactions
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    ABORTABLE = "ABORTABLE_ERROR"  # the transaction failed: only abort_transaction works
    FATAL = "FATAL_ERROR"  # fenced, or a fatal commit error: the producer is unusable


class MemoryProducer:
    """Build it with ``MemoryCluster.producer(config)``; see the module docstring."""

    def __init__(self, cluster: MemoryCluster, config: Mapping[str, Any]) -> None:
        self._cluster = cluster
        tid = config.get("transactional.id")
        self.transactional_id: str | None = str(tid) if tid else None
        self._state = _State.INIT if self.transactional_id else _State.READY
        self._error: KafkaError | None = None  # what the ABORTABLE and FATAL states raise
        self._transaction: Transaction | None = None
        self._reports: deque[tuple[DeliveryCallback | None, KafkaError | None, Message]]
        self._reports = deque()
        self._delivery_failures: deque[KafkaError] = deque()
        self._commit_failures: deque[KafkaError] = deque()
        # librdkafka's delivery.report.only.error: successes are settled without a callback
        self._only_errors = str(config.get("delivery.report.only.error", "")).lower() in {
            "true",
            "1",
        }
        self._max_bytes = message_max_bytes(config)

    # -- producing -----------------------------------------------------------------------
    def produce(  # noqa: PLR0917 - confluent-kafka's positional signature
        self,
        topic: str,
        value: str | bytes | None = None,
        key: str | bytes | None = None,
        partition: int = -1,
        callback: DeliveryCallback | None = None,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        if self._state is _State.FATAL and self._error is not None:
            raise KafkaException(self._error)
        if self.transactional_id is not None and self._state is not _State.IN_TRANSACTION:
            raise kafka_exception(
                KafkaError._STATE,
                f"Producing not allowed in transactional state {self._state.value}",
            )
        count = self._cluster._ensure_topic(topic)
        key_bytes, value_bytes, pairs = as_bytes(key), as_bytes(value), as_headers(headers)
        size = record_size(key_bytes, value_bytes, pairs)
        if size > self._max_bytes:
            raise kafka_exception(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
        if partition == -1:
            partition = partition_for(key_bytes, count) if key_bytes is not None else 0
        elif not 0 <= partition < count:
            raise kafka_exception(
                KafkaError._UNKNOWN_PARTITION, f"{topic} has no partition {partition}"
            )
        timestamp_ms = timestamp or self._cluster.clock_ms()
        report = on_delivery or callback
        refusal = self._cluster._refusal(topic, size)
        if self._delivery_failures or refusal is not None:
            err = refusal if refusal is not None else self._delivery_failures.popleft()
            failed = Message(
                topic=topic,
                partition=partition,
                offset=OFFSET_INVALID,
                key=key_bytes,
                value=value_bytes,
                headers=list(pairs) or None,
                error=err,
                timestamp=(TIMESTAMP_CREATE_TIME, timestamp_ms),
            )
            self._reports.append((report, err, failed))
            if self._transaction is not None:  # librdkafka: a lost write fails the transaction
                self._state = _State.ABORTABLE
                self._error = KafkaError(err.code(), err.str(), txn_requires_abort=True)
            return
        record = self._cluster._append(
            topic,
            partition,
            key=key_bytes,
            value=value_bytes,
            headers=pairs,
            timestamp_ms=timestamp_ms,
            transaction=self._transaction,
        )
        self._reports.append((report, None, to_message(record)))

    def poll(self, timeout: float = -1) -> int:
        """Serve the delivery reports queued so far; returns how many were served."""
        count = len(self._reports)  # reports of records produced by a callback wait
        for _ in range(count):
            self._serve_one()
        return count

    def flush(self, timeout: float = -1) -> int:
        """Serve every delivery report; returns 0 (records still queued: none)."""
        while self._reports:
            self._serve_one()
        return 0

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Every record is written at produce time, so all queued reports are in flight:
        with ``in_flight`` they turn into ``_PURGE_INFLIGHT`` failures (served by the next
        poll/flush, as librdkafka does) although the records stay in the log, as a purged
        in-flight record may have been written."""
        if not in_flight:
            return
        purged = KafkaError(KafkaError._PURGE_INFLIGHT)
        for i, (report, err, msg) in enumerate(self._reports):
            if err is None:
                msg.set_error(purged)
                self._reports[i] = (report, purged, msg)

    def __len__(self) -> int:
        """Delivery reports not yet served."""
        return len(self._reports)

    def __bool__(self) -> bool:  # as confluent-kafka's: true even when nothing is queued
        return True

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        return self._cluster._metadata(topic)

    # -- transactions --------------------------------------------------------------------
    def init_transactions(self, timeout: float = -1) -> None:
        self._require(_State.INIT)
        assert self.transactional_id is not None
        previous = self._cluster._claim(self.transactional_id, self)
        if previous is not None:
            previous._fence()
        self._state = _State.READY

    def begin_transaction(self) -> None:
        self._require(_State.READY)
        self._transaction = Transaction()
        self._state = _State.IN_TRANSACTION

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None:
        """The offsets (next offsets to read; negative ones are skipped, as librdkafka
        does) become the group's committed offsets if the transaction commits."""
        self._require(_State.IN_TRANSACTION)
        if not isinstance(group_metadata, GroupMetadata):
            raise kafka_exception(
                KafkaError._INVALID_ARG,
                "group_metadata must come from MemoryConsumer.consumer_group_metadata()",
            )
        assert self._transaction is not None
        offsets = self._transaction.offsets.setdefault(group_metadata.group_id, {})
        for tp in positions:
            if tp.offset >= 0:
                offsets[(tp.topic, tp.partition)] = (tp.offset, tp.metadata)

    def commit_transaction(self, timeout: float = -1) -> None:
        self._require(_State.IN_TRANSACTION)
        self.flush()
        if self._commit_failures:
            err = self._commit_failures.popleft()
            if err.fatal():
                self._state, self._error = _State.FATAL, err
            elif err.txn_requires_abort():
                self._state, self._error = _State.ABORTABLE, err
            raise KafkaException(err)
        self._end(commit=True)

    def abort_transaction(self, timeout: float = -1) -> None:
        self._require(_State.IN_TRANSACTION, _State.ABORTABLE)
        self.flush()
        self._end(commit=False)

    # -- faults --------------------------------------------------------------------------
    def fail_deliveries(self, n: int, error: KafkaError) -> None:
        """The next ``n`` records produced are not written; their reports carry ``error``."""
        self._delivery_failures.extend([error] * n)

    def fail_commits(self, *errors: KafkaError) -> None:
        """The next ``commit_transaction`` calls raise ``KafkaException(error)``, in order."""
        self._commit_failures.extend(errors)

    # -- internals -----------------------------------------------------------------------
    def _serve_one(self) -> None:
        report, err, msg = self._reports.popleft()
        if report is not None and (err is not None or not self._only_errors):
            report(err, msg)

    def _require(self, *states: _State) -> None:
        """librdkafka's check at each transactional call: the error of a failed state,
        else ``_STATE``."""
        if self.transactional_id is None:
            raise kafka_exception(
                KafkaError._NOT_CONFIGURED,
                "The Transactional API requires transactional.id to be configured",
            )
        if self._state in states:
            return
        if self._error is not None:
            raise KafkaException(self._error)
        raise kafka_exception(
            KafkaError._STATE, f"Operation not valid in state {self._state.value}"
        )

    def _end(self, *, commit: bool) -> None:
        assert self._transaction is not None
        self._cluster._end_transaction(self._transaction, commit=commit)
        self._transaction, self._error = None, None
        self._state = _State.READY

    def _fence(self) -> None:
        """Another producer initialised this transactional.id: abort our open transaction
        (the coordinator does that) and refuse everything after."""
        if self._transaction is not None:
            self._cluster._end_transaction(self._transaction, commit=False)
            self._transaction = None
        self._state = _State.FATAL
        self._error = KafkaError(
            KafkaError._FENCED,
            "This instance has been fenced by a newer instance",
            fatal=True,
        )
