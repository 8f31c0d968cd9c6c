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

An output refused for its record's sake (``streams.client_errors.refuses_record``: too
large, invalid, a topic the producer may not write) is that record's failure, not the
runtime's: each record's outputs carry it in their delivery report, and a refusal is a
``Refusal`` in ``refusals``, which ``raise_errors`` raises as ``OutputsRefused``. The
runtime then undoes the work since the last commit and does it again without the record
(``Committer.rewind``); ``reset()`` keeps what it learnt in ``refused_records``. The broker
refuses a whole batch for one bad record, so a refusal names its record for certain only
when the record's outputs were written alone (``Refusal.alone``): refused before being
sent (librdkafka checks ``message.max.bytes`` in ``produce``), or by ``Produce``, which
writes a suspect's outputs alone when the work is done again. A record refused for certain
fails its next attempt (``streams.pipeline.execute``): to the DLQ; a suspect whose outputs
are accepted alone was only in a bad record's batch.

A fatal error of the producer (fenced, say) is raised by confluent-kafka from the call that
serves its events (``poll``, ``flush``) and from every write after it; one that is an
outage is raised as ``BrokerUnavailable`` instead.

``send`` never blocks for long: when the producer's local queue is full it serves the
producer's events until there is room.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, NamedTuple, NoReturn, Protocol

from confluent_kafka import KafkaError, KafkaException

from streams.client_errors import PURGED, refuses_record, transient
from streams.coordinates import TP, Coordinates
from streams.pipeline.errors import BrokerUnavailable, DeliveryError, OutputsRefused, unavailable
from streams.pipeline.record import Output, Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step
from streams.record_size import DEFAULT_MESSAGE_MAX_BYTES, record_size


class Producer(Protocol):
    """What the sink needs of a producer (``confluent_kafka.Producer`` is one)."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def flush(self, timeout: float = ...) -> int: ...
    def purge(self, *args: Any, **kwargs: Any) -> None: ...
    def __len__(self) -> int: ...


class Refusal(NamedTuple):
    """An output refused for its record's sake: where the record was read, the output's
    topic, the error, and whether the record's outputs were written alone (the refusal is
    the record's for certain; otherwise it may be a bad record's in the same batch)."""

    record: Coordinates
    topic: str
    error: KafkaError
    alone: bool

    def __str__(self) -> str:
        return f"{self.record}: {self.topic}: {self.error.str()}"


class OutputSink:
    """A producer plus the failures of its writes."""

    def __init__(self, producer: Producer, *, max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES) -> None:
        self.producer = producer
        self.max_bytes = max_bytes
        """The largest record the producer writes (its ``message.max.bytes``)."""
        # Outputs with a value longer than this are measured (headers rarely pass 64 kB).
        self._near_limit = max_bytes - 65_536
        self.errors: list[str] = []
        self.refused = 0  # errors that are not an outage (they stop the runtime)
        self.fatal = False  # a delivery error said the producer is in a fatal state
        self.transient: Callable[[KafkaError], bool] = transient
        """Whether a failed write is an outage (recovered) rather than a refusal."""
        self.refusals: list[Refusal] = []
        """Outputs refused for their records' sake since the last ``reset``."""
        self.refused_records: dict[Coordinates, Refusal] = {}
        """The records whose outputs were refused before the work was done again (kept by
        ``reset``, dropped by ``forget``); always the same dict, read by the attempt."""
        self._on_delivery = self._delivered  # one bound method for every write
        self._on_output = self._delivered_output

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:  # a client that reports successes too
            return
        self.errors.append(f"{msg.topic()}: {err.str()}")
        if err.fatal():  # the producer is unusable: recovery replaces it
            self.fatal = True
        if not self.transient(err) and err.code() not in PURGED:
            self.refused += 1

    def _delivered_output(
        self, topic: str, partition: int, offset: int, err: KafkaError | None, msg: Any
    ) -> None:
        """The delivery report of one of the outputs of the record at ``topic[partition]``
        ``offset``."""
        if err is None:
            return
        if refuses_record(err):
            where = Coordinates(topic, partition, offset)
            self.refusals.append(Refusal(where, msg.topic(), err, False))
        else:
            self._delivered(err, msg)

    def _serve(self, timeout_s: float, *, flush: bool = False, served: bool = False) -> int:
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
            self._raise_client_error(exc, served=served)

    def _raise_client_error(self, exc: KafkaException, *, served: bool = False) -> NoReturn:
        """Raise a producer's error (from serving it, or from a write refused at once: a
        producer in a fatal state refuses every write) as an outage when ``transient``
        says it is one, else as it is."""
        err: KafkaError = exc.args[0]
        if err.code() == KafkaError._FATAL and not served:
            # A write refused by a producer in a fatal state says only that ("Local: Fatal
            # error"); serving the producer raises the error that put it there (fenced in
            # a transaction the broker timed out, say: an outage).
            self._serve(0, served=True)
        if self.transient(err):
            if err.fatal():  # as a delivery report saying so: recovery replaces it
                self.fatal = True
            raise unavailable(exc, "writing outputs") from exc
        if self.refusals and err.code() == KafkaError._STATE:
            # A transaction with a refused output takes no write until it ends (librdkafka
            # answers _STATE): the work is done again without the refused record.
            raise OutputsRefused(self.refusals) from exc
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
        # partition -1 is librdkafka's "unassigned": the partitioner picks from the key
        part = -1 if partition is None else partition
        ts = timestamp or 0  # 0: librdkafka stamps the current time
        self._write(topic, key, value, headers, part, ts, self._on_delivery)

    def _write(  # noqa: PLR0917 - the producer's own order
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        partition: int,
        timestamp: int,
        on_delivery: Callable[[KafkaError | None, Any], None],
    ) -> None:
        """One ``produce`` call, served until the local queue has room; a client error
        raised as ``_raise_client_error`` says."""
        hdrs: Any = headers  # the stubs want a list of str|bytes values: ours is a subset
        produce = self.producer.produce
        while True:
            try:
                # Positional: confluent-kafka parses keyword arguments at about 0.5 µs a
                # call (three headers: 0.85 µs a write, against 1.38 with keywords). The
                # 5th and 6th are ``on_delivery`` and its alias ``callback``, in the C
                # order (the type stubs swap them): both carry it, so either order holds.
                produce(topic, value, key, partition, on_delivery, on_delivery, timestamp, hdrs)
                return
            except BufferError:  # local queue full: serve the producer to make room
                self._serve(0.05)
            except KafkaException as exc:
                self._raise_client_error(exc)

    def send_all(self, outputs: Sequence[Output], record: Record | None = None) -> None:
        """Queue what a plan wrote for ``record`` (a timer's outputs have none): as
        ``send``, each partitioned by key and stamped now, in one call for all (this runs
        per record). ``record``'s delivery reports name it (its outputs' refusals are its
        own). An output too large for the producer is a ``Refusal`` before any output of
        the record is sent, as is one librdkafka refuses at once: ``OutputsRefused`` is
        raised then, before another record is processed (at-least-once keeps what is
        written: the record's other outputs, or later records' outputs that counted it)."""
        if record is None:
            on_delivery = self._on_delivery
        else:
            # A small object per record: the report of a refused output names its record.
            # Its coordinates, not the record: a record held until its outputs are
            # acknowledged (its message, envelope and outputs) lived long enough for the
            # garbage collector to promote and walk it, 40% more time in every stage.
            on_delivery = partial(self._on_output, record.topic, record.partition, record.offset)
            near = self._near_limit
            for topic, key, value, headers in outputs:
                if len(value) > near and record_size(key, value, headers) > self.max_bytes:
                    self.refusals.append(Refusal(record.coordinates, topic, _too_large(), True))
                    raise OutputsRefused(self.refusals)
        produce = self.producer.produce
        for topic, key, value, headers in outputs:
            try:
                produce(topic, value, key, -1, on_delivery, on_delivery, 0, headers)  # as in send
            except BufferError:  # local queue full: ``_write`` serves the producer until room
                try:
                    self._write(topic, key, value, headers, -1, 0, on_delivery)
                except KafkaException as exc:
                    if not self._refused_now(exc, record, topic):
                        raise
                    raise OutputsRefused(self.refusals) from exc
            except KafkaException as exc:
                if not self._refused_now(exc, record, topic):
                    self._raise_client_error(exc)
                raise OutputsRefused(self.refusals) from exc

    def _refused_now(self, exc: KafkaException, record: Record | None, topic: str) -> bool:
        """Whether ``exc``, raised by ``produce`` for one of ``record``'s outputs, refuses
        the record (noted as a ``Refusal``, for certain: the client refused it alone)."""
        err: KafkaError = exc.args[0]
        if record is None or not refuses_record(err):
            return False
        self.refusals.append(Refusal(record.coordinates, topic, err, True))
        return True

    def send_alone(self, outputs: Sequence[Output], record: Record, timeout_s: float) -> None:
        """Write a record's outputs alone, so that a refusal is the record's for certain:
        every write queued before them acknowledged first, and theirs before anything
        else is queued. Refused, they are a certain ``Refusal`` and ``OutputsRefused`` is
        raised; accepted, the record is no longer in ``refused_records``. Blocks up to
        ``timeout_s`` twice; ``BrokerUnavailable`` when the writes are still outstanding."""
        self._settle(timeout_s)
        self.send_all(outputs, record)
        self._settle(timeout_s)
        coordinates = record.coordinates
        if any(r.record == coordinates for r in self.refusals):
            self.refusals = [
                r._replace(alone=True) if r.record == coordinates else r for r in self.refusals
            ]
            raise OutputsRefused(self.refusals)
        self.refused_records.pop(coordinates, None)

    def _settle(self, timeout_s: float) -> None:
        left = self.flush(timeout_s)
        if left:
            raise BrokerUnavailable(f"{left} write(s) not acknowledged within {timeout_s:g} s")

    def poll(self) -> None:
        """Serve the producer's events that are ready; never blocks."""
        self._serve(0)

    def flush(self, timeout_s: float) -> int:
        """Wait until every write is acknowledged or failed (or ``timeout_s``); returns how
        many are still outstanding."""
        return self._serve(timeout_s, flush=True)

    def raise_errors(self) -> None:
        """Raise ``DeliveryError`` if the broker refused any write but for a record's sake;
        else ``OutputsRefused`` when outputs were refused for their records' sake (the
        runtime does the work again without them, and with it the writes that failed
        otherwise: purged, timed out); else ``BrokerUnavailable`` when every failed write
        only timed out, lost its connection or was purged (the runtime recovers)."""
        errors = self.errors
        if errors and self.refused:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise DeliveryError(f"the broker refused an output: {errors[0]}{more}")
        if self.refusals:
            raise OutputsRefused(self.refusals)
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise BrokerUnavailable(f"an output was not delivered: {errors[0]}{more}")

    def reset(self) -> None:
        """Forget failed writes: the work that made them is done again, without the
        records whose outputs were refused (remembered in ``refused_records``: one refused
        for certain stays so)."""
        self.errors.clear()
        self.refused = 0
        known = self.refused_records
        for refusal in self.refusals:
            before = known.get(refusal.record)
            if before is None or (refusal.alone and not before.alone):
                known[refusal.record] = refusal
        self.refusals = []

    def forget(self, partitions: Iterable[TP]) -> None:
        """The partitions left this instance: their records' refusals are their next
        owner's to find."""
        gone = set(partitions)
        for coordinates in [c for c in self.refused_records if (c.topic, c.partition) in gone]:
            del self.refused_records[coordinates]

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


def _too_large() -> KafkaError:
    """librdkafka's error for a record over ``message.max.bytes``, raised by ``produce``."""
    return KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")


class Produce(Forward):
    """Sends each record's outputs (a suspect's alone: ``OutputSink.send_alone``), then
    hands the record on.

    ``poll`` serves acknowledgements and raises ``BrokerUnavailable``/``DeliveryError``/
    ``OutputsRefused`` for writes that failed; ``join`` flushes."""

    __slots__ = ("_sink", "_stats", "_timeout")

    def __init__(
        self, next: Step, sink: OutputSink, stats: Stats, *, timeout_s: float = 30.0
    ) -> None:
        super().__init__(next)
        self._sink = sink
        self._stats = stats
        self._timeout = timeout_s  # how long writing a suspect's outputs alone may wait

    def submit(self, record: Record) -> None:
        outputs = record.outputs
        if outputs:
            sink = self._sink
            if sink.refused_records and record.coordinates in sink.refused_records:
                # in a bad record's batch when the work was done before: written alone now
                sink.send_alone(outputs, record, self._timeout)
            else:
                sink.send_all(outputs, record)
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
