"""Writes: the producer and its acknowledgements (``OutputSink``), and the ``Produce`` step.

Everything a runtime writes for a record goes through its ``OutputSink``: outputs, retry
and dead-letter copies. Each write holds a token on the record's in-flight entry until the
broker acknowledges it, so an offset commits only once every write it caused is durable.
(Changelog records are the committer's: it flushes them at each checkpoint.)

``send`` never blocks for long: when the producer's local queue is full it serves delivery
callbacks until there is room. Acknowledgements arrive inside ``poll``/``flush``. A write the
broker refuses (after the idempotent producer's own retries) marks its record failed, which
stops commits of that partition at that record, and ``raise_errors`` reports it: a write
that only timed out (the broker away) as ``BrokerUnavailable``, a refusal as
``DeliveryError``. After an outage, ``reset()`` forgets the undelivered writes and
``replace_producer`` swaps a producer in a fatal state for a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException

from streams.pipeline.errors import BrokerUnavailable, DeliveryError, transient
from streams.pipeline.offsets import InFlight
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step


class Producer(Protocol):
    """What the sink needs of a producer (``confluent_kafka.Producer`` is one)."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def flush(self, timeout: float = ...) -> int: ...
    def purge(self, *args: Any, **kwargs: Any) -> None: ...


class _Ack:
    """Delivery callback of one write: releases the record's token, or marks it failed."""

    __slots__ = ("entry", "sink")

    def __init__(self, sink: OutputSink, entry: InFlight) -> None:
        self.sink = sink
        self.entry = entry

    def __call__(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.entry.failed = True
            self.sink.errors.append(f"{msg.topic()}: {err.str()}")
            if err.fatal():  # the producer is unusable: recovery replaces it
                self.sink.fatal = True
            if not transient(err):
                self.sink.refused += 1
        self.entry.release()


class OutputSink:
    """A producer plus the bookkeeping of which record each write belongs to."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.errors: list[str] = []
        self.refused = 0  # errors that are not an outage (they stop the runtime)
        self.fatal = False  # a delivery error said the producer is in a fatal state

    def send(
        self,
        topic: str,
        *,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        entry: InFlight,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> None:
        """Queue one write caused by ``entry``'s record (partitioned by key unless given;
        ``timestamp`` in ms, default now: retry and DLQ copies keep the record's own)."""
        entry.hold()
        hdrs: Any = headers  # the stubs want a list of str|bytes values: ours is a subset
        # partition -1 is librdkafka's "unassigned": the partitioner picks from the key
        part = -1 if partition is None else partition
        ts = timestamp or 0  # 0: librdkafka stamps the current time
        produce = self.producer.produce
        ack = _Ack(self, entry)
        while True:
            try:
                produce(topic, value, key, part, on_delivery=ack, timestamp=ts, headers=hdrs)
                return
            except BufferError:  # local queue full: serve acks to make room
                self.producer.poll(0.05)

    def poll(self) -> None:
        """Serve delivery callbacks that are ready; never blocks."""
        self.producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        """Wait until every write is acknowledged (or ``timeout_s``); returns how many are
        still outstanding."""
        return int(self.producer.flush(timeout_s))

    def raise_errors(self) -> None:
        """Raise ``DeliveryError`` if the broker refused any write; ``BrokerUnavailable``
        when every failed write only timed out or lost its connection (the runtime recovers)."""
        if self.errors:
            first = self.errors[0]
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            if not self.refused:
                raise BrokerUnavailable(f"an output was not delivered: {first}{more}")
            raise DeliveryError(f"the broker refused an output: {first}{more}")

    def reset(self) -> None:
        """Forget failed writes: the work that made them is done again."""
        self.errors.clear()
        self.refused = 0

    def replace_producer(self, make: Callable[[], Any]) -> None:
        """A fresh producer instead of one in a fatal state (or one whose transactions
        must start over); the old one's queue is dropped (its writes are redone)."""
        try:
            self.producer.purge()
            self.producer.flush(0)
        except (KafkaException, RuntimeError):
            pass
        self.producer = make()
        self.fatal = False


class Produce(Forward):
    """Sends each record's outputs, then hands the record on (its entry waits for the acks).

    ``poll`` serves acknowledgements and raises ``BrokerUnavailable``/``DeliveryError`` for
    writes that failed; ``join`` flushes."""

    __slots__ = ("_sink", "_stats")

    def __init__(self, next: Step, sink: OutputSink, stats: Stats) -> None:
        super().__init__(next)
        self._sink = sink
        self._stats = stats

    def submit(self, record: Record) -> None:
        outputs = record.outputs
        if outputs:
            send, entry = self._sink.send, record.entry
            for topic, key, value, headers in outputs:
                send(topic, key=key, value=value, headers=headers, entry=entry)
            self._stats.produced += len(outputs)
        self.next.submit(record)

    def poll(self) -> None:
        sink = self._sink
        sink.poll()
        sink.raise_errors()
        self.next.poll()

    def join(self, timeout: float) -> None:
        self._sink.poll()
        self._sink.flush(timeout)
        self.next.join(timeout)
