"""Everything the runtime writes goes through ``OutputSink``: outputs today; changelog,
retry and dead-letter records later. Each write holds a token on the input record that
caused it (its ``InFlight``) until the broker acknowledges it, so offsets are committed only
after every write they caused is durable.

``send`` never blocks for long: when the producer's local queue is full it serves delivery
callbacks until there is room. Acknowledgements arrive inside ``poll``/``flush``. A write
the broker refuses (after the idempotent producer's own retries) marks its record failed,
which stops commits for that partition at that record, and ``raise_errors`` reports it
(an output that only timed out, the broker away, as ``BrokerUnavailable``: see
``streams.runtime.recovery``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from streams.runtime.errors import DeliveryError
from streams.runtime.offsets import InFlight
from streams.runtime.recovery import BrokerUnavailable, transient


class _Ack:
    """Delivery callback for one write: releases the record's token, or marks it failed."""

    __slots__ = ("entry", "sink")

    def __init__(self, sink: OutputSink, entry: InFlight) -> None:
        self.sink = sink
        self.entry = entry

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.entry.failed = True
            self.sink.errors.append(f"{msg.topic()}: {err.str()}")
            if err.fatal():  # the producer is unusable: recovery replaces it
                self.sink.fatal = True
            if not transient(err):
                self.sink.refused += 1
        else:
            self.sink.acked += 1
        self.entry.release()


class OutputSink:
    """A producer plus the bookkeeping of which input record each write belongs to."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.errors: list[str] = []
        self.refused = 0  # errors that are not an outage (they stop the runtime)
        self.fatal = False  # a delivery error said the producer is in a fatal state
        self.sent = 0
        self.acked = 0

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
        ack = _Ack(self, entry)
        hdrs: Any = headers  # the stubs want a list of str|bytes values: ours is a subset
        # partition -1 is librdkafka's "unassigned": the partitioner picks from the key
        part = -1 if partition is None else partition
        ts = timestamp or 0  # 0: librdkafka stamps the current time
        produce = self.producer.produce
        while True:
            try:
                produce(topic, value, key, part, on_delivery=ack, timestamp=ts, headers=hdrs)
                break
            except BufferError:  # local queue full: serve acks to make room
                self.producer.poll(0.05)
        self.sent += 1

    def poll(self) -> None:
        """Serve delivery callbacks that are ready; never blocks."""
        self.producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        """Wait until every write is acknowledged (or ``timeout_s``); returns how many are
        still outstanding."""
        return int(self.producer.flush(timeout_s))

    def raise_errors(self) -> None:
        """Raise DeliveryError if the broker refused any write; ``BrokerUnavailable`` when
        every failed write only timed out or lost its connection (the runtime recovers)."""
        if self.errors:
            first = self.errors[0]
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            if not self.refused:
                raise BrokerUnavailable(f"an output was not delivered: {first}{more}")
            raise DeliveryError(f"the broker refused an output: {first}{more}")
