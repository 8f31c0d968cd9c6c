"""Riding out a broker outage: transient client errors rewind the instance instead of
stopping it.

Contract:

- ``transient(err)`` says whether a client error is an outage or a timeout that clears when
  the broker answers again (transport failure, all brokers down, message or request timed
  out, coordinator moving, an abortable transaction error). Fencing, authorization and other
  fatal errors are not transient: the runtime still stops on them with one line.
- Where such an error meets a step that cannot finish (an output that timed out, a
  transaction that cannot be committed or aborted), ``BrokerUnavailable`` is raised; the
  runtime catches it and calls ``Recovery.recover``.
- ``recover`` blocks until the broker answers (or the runtime is asked to stop), then
  undoes the interrupted work so it is done again from the last commit: exactly-once, the
  open transaction is aborted (a producer in a fatal state is replaced and its transactions
  initialised again), store changes are dropped and every partition is rewound to its
  committed offset; at-least-once, undelivered outputs are forgotten, a fatal idempotent
  producer is replaced, and every partition is rewound to its committed offset (records
  after it are processed again: duplicates, never loss). If the broker goes away again
  meanwhile, it starts over.
- One WARNING per outage (at its first error), one INFO when processing resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from streams.runtime.errors import RuntimeFailure
from streams.runtime.offsets import PartitionOffsets

TP = tuple[str, int]

_TRANSIENT = {
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError._TIMED_OUT_QUEUE,
    KafkaError._WAIT_COORD,
    KafkaError._RESOLVE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.CONCURRENT_TRANSACTIONS,
}
FENCED = {
    KafkaError._FENCED,
    getattr(KafkaError, "PRODUCER_FENCED", -1),
    KafkaError.INVALID_PRODUCER_EPOCH,
}
# How long to wait for one metadata answer while the broker is away.
_PROBE_S = 1.0


class BrokerUnavailable(RuntimeFailure):
    """The broker went away (or timed out) in the middle of a step; the runtime recovers."""


def transient(err: KafkaError) -> bool:
    """True for errors that clear when the broker answers again (see the module doc)."""
    code = err.code()
    if code in FENCED:
        return False
    if err.txn_requires_abort():
        return True
    return code in _TRANSIENT or (err.retriable() and not err.fatal())


def unavailable(exc: KafkaException, doing: str) -> BrokerUnavailable:
    err: KafkaError = exc.args[0]
    return BrokerUnavailable(f"the broker did not answer while {doing}: {err.str()}")


class Recovery:
    """Waits out an outage and rewinds the runtime to its last commit.

    ``rewind_all`` undoes the interrupted work (``Checkpointer.recover``, or
    ``rewind_stateless`` for an at-least-once runtime without stores) and may raise
    ``BrokerUnavailable`` again.
    ``stopping`` is polled while waiting, so a stop request is served during an outage.
    """

    def __init__(
        self,
        *,
        consumer: Consumer,
        rewind_all: Callable[[], None],
        stopping: Callable[[], bool],
        log: Any,
    ) -> None:
        self.consumer = consumer
        self.rewind_all = rewind_all
        self.stopping = stopping
        self._log = log
        self._down = False

    def noticed(self, error: str) -> None:
        """A transient error was seen: WARNING once per outage."""
        if not self._down:
            self._down = True
            self._log.warning(
                "broker unavailable: undone work will be redone from the last commit",
                error=error,
            )

    def recover(self, cause: BrokerUnavailable) -> None:
        """Block until the broker answers and the work since the last commit is undone
        (see the module doc). Returns early, undoing nothing, if the runtime is stopping."""
        self.noticed(str(cause))
        started = time.monotonic()
        while not self.stopping():
            if not self._answers():
                continue
            try:
                self.rewind_all()
            except BrokerUnavailable:
                continue  # away again: wait once more
            self._down = False
            self._log.info(
                "recovered from broker outage", seconds=round(time.monotonic() - started, 1)
            )
            return

    def _answers(self) -> bool:
        try:
            self.consumer.list_topics(timeout=_PROBE_S)
        except KafkaException:
            return False
        return True


def rewind_offsets(
    consumer: Consumer, partitions: dict[TP, PartitionOffsets], *, latest: bool, timeout: float
) -> None:
    """Seek every assigned partition to its committed offset (none: leave it where
    ``auto.offset.reset`` puts a new group) and forget its records in flight.
    Raises ``BrokerUnavailable`` when the committed offsets cannot be read."""
    if not partitions:
        return
    tps = [TopicPartition(t, p) for t, p in partitions]
    try:
        found = consumer.committed(tps, timeout=timeout)
    except KafkaException as exc:
        raise unavailable(exc, "reading committed offsets") from exc
    for tp in found:
        key = (tp.topic, tp.partition)
        if key not in partitions:
            continue
        fresh = PartitionOffsets(tp.topic, tp.partition)
        offset = int(tp.offset)
        if offset >= 0:
            fresh.committed = offset
        else:  # nothing committed yet: read again from where a new group starts
            try:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=timeout
                )
            except KafkaException as exc:
                raise unavailable(exc, "reading watermarks") from exc
            offset = high if latest else low
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        partitions[key] = fresh


def replace_producer(old: Producer, make: Callable[[], Producer]) -> Producer:
    """A fresh producer instead of one in a fatal state; the old one's queue is dropped
    (its records belong to work that is redone)."""
    try:
        old.purge()
        old.flush(0)
    except (KafkaException, RuntimeError):
        pass
    return make()


def rewind_stateless(
    consumer: Consumer,
    sink: Any,
    partitions: dict[TP, PartitionOffsets],
    make_producer: Callable[[], Producer],
    *,
    latest: bool,
    timeout: float,
) -> None:
    """``recover``'s undo for an at-least-once runtime without stores: forget undelivered
    outputs (replacing the producer if it is in a fatal state) and rewind every partition
    to its committed offset. ``sink`` is the runtime's ``OutputSink``."""
    # Settle every write still queued first, so none of them fails after the rewind (which
    # would start a second recovery for the same outage).
    sink.flush(timeout)
    if sink.fatal:
        sink.producer = replace_producer(sink.producer, make_producer)
        sink.fatal = False
    sink.errors.clear()
    sink.refused = 0
    rewind_offsets(consumer, partitions, latest=latest, timeout=timeout)
