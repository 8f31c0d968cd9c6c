"""Writes: the producer and its delivery errors (``OutputSink``), and the ``Produce`` step.

Everything a runtime writes for a record goes through its ``OutputSink``: outputs, retry
and dead-letter copies. (Changelog records are the committer's: it writes them at each
checkpoint, through the same producer.)

Delivery reports come back for failures only (``delivery.report.only.error``, set by the
runtime's producer config): a write costs no Python per acknowledgement. A committer
flushes the producer before it commits (``flush`` returns how many writes are still
outstanding) and commits nothing while a write failed: ``raise_errors`` reports the
failures, a write that only timed out (the broker away) as ``BrokerUnavailable``, a
refusal as ``DeliveryError``. After an outage, ``reset()`` forgets the failed writes and
``replace_producer`` swaps a producer in a fatal state for a new one. What counts as an
outage is ``OutputSink.transient`` (``streams.client_errors.transient``; an exactly-once
committer adds the fencing of a transaction the broker timed out).

A fatal error of the producer (fenced, say) is raised by confluent-kafka from the call that
serves its events (``poll``, ``flush``) and from every write after it; one that is an
outage is raised as ``BrokerUnavailable`` instead.

``send`` never blocks for long: when the producer's local queue is full it serves the
producer's events until there is room.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Protocol

from confluent_kafka import KafkaError, KafkaException

from streams.client_errors import transient
from streams.pipeline.errors import BrokerUnavailable, DeliveryError, unavailable
from streams.pipeline.record import Output, Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step


class Producer(Protocol):
    """What the sink needs of a producer (``confluent_kafka.Producer`` is one)."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def flush(self, timeout: float = ...) -> int: ...
    def purge(self, *args: Any, **kwargs: Any) -> None: ...
    def __len__(self) -> int: ...


class OutputSink:
    """A producer plus the failures of its writes."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.errors: list[str] = []
        self.refused = 0  # errors that are not an outage (they stop the runtime)
        self.fatal = False  # a delivery error said the producer is in a fatal state
        self.transient: Callable[[KafkaError], bool] = transient
        """Whether a failed write is an outage (recovered) rather than a refusal."""
        self._on_delivery = self._delivered  # one bound method for every write

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:  # a client that reports successes too
            return
        self.errors.append(f"{msg.topic()}: {err.str()}")
        if err.fatal():  # the producer is unusable: recovery replaces it
            self.fatal = True
        if not self.transient(err):
            self.refused += 1

    def _serve(self, timeout_s: float, *, flush: bool = False) -> int:
        """The producer's ``poll`` (or ``flush``), its fatal error raised as an outage when
        ``transient`` says it is one."""
        producer = self.producer
        try:
            try:
                return int(producer.flush(timeout_s) if flush else producer.poll(timeout_s))
            except SystemError as exc:
                # confluent-kafka (2.16) leaves a fatal error pending while it goes on with
                # the delivery reports of the same call: the first report makes Python
                # raise SystemError over it. The client's error is the one to handle.
                if isinstance(exc.__cause__, KafkaException):
                    raise exc.__cause__ from None
                raise
        except KafkaException as exc:
            self._raise_client_error(exc)

    def _raise_client_error(self, exc: KafkaException) -> NoReturn:
        """Raise a producer's error (from serving it, or from a write refused at once: a
        producer in a fatal state refuses every write) as an outage when ``transient``
        says it is one, else as it is."""
        err: KafkaError = exc.args[0]
        if self.transient(err):
            if err.fatal():  # as a delivery report saying so: recovery replaces it
                self.fatal = True
            raise unavailable(exc, "writing outputs") from exc
        raise exc

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> None:
        """Queue one write (partitioned by key unless given; ``timestamp`` in ms, default
        now: retry and DLQ copies keep the record's own)."""
        hdrs: Any = headers  # the stubs want a list of str|bytes values: ours is a subset
        # partition -1 is librdkafka's "unassigned": the partitioner picks from the key
        part = -1 if partition is None else partition
        ts = timestamp or 0  # 0: librdkafka stamps the current time
        produce = self.producer.produce
        on_delivery = self._on_delivery
        while True:
            try:
                # Positional: confluent-kafka parses keyword arguments at about 0.5 µs a
                # call (three headers: 0.85 µs a write, against 1.38 with keywords). The
                # 5th and 6th are ``on_delivery`` and its alias ``callback``, in the C
                # order (the type stubs swap them): both carry it, so either order holds.
                produce(topic, value, key, part, on_delivery, on_delivery, ts, hdrs)
                return
            except BufferError:  # local queue full: serve the producer to make room
                self._serve(0.05)
            except KafkaException as exc:
                self._raise_client_error(exc)

    def send_all(self, outputs: Sequence[Output]) -> None:
        """Queue what a plan wrote (a record's outputs, a timer's): as ``send``, each
        partitioned by key and stamped now, in one call for all (this runs per record)."""
        produce, on_delivery = self.producer.produce, self._on_delivery
        for topic, key, value, headers in outputs:
            try:
                produce(topic, value, key, -1, on_delivery, on_delivery, 0, headers)  # as in send
            except BufferError:  # local queue full: ``send`` serves the producer until room
                self.send(topic, key, value, headers)
            except KafkaException as exc:
                self._raise_client_error(exc)

    def poll(self) -> None:
        """Serve the producer's events that are ready; never blocks."""
        self._serve(0)

    def flush(self, timeout_s: float) -> int:
        """Wait until every write is acknowledged or failed (or ``timeout_s``); returns how
        many are still outstanding."""
        return self._serve(timeout_s, flush=True)

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
        except (KafkaException, RuntimeError, SystemError):  # SystemError: see ``_serve``
            pass
        self.producer = make()
        self.fatal = False


class Produce(Forward):
    """Sends each record's outputs, then hands the record on.

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
            self._sink.send_all(outputs)
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
