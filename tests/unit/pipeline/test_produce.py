"""``OutputSink``: a record's outputs are queued in order, partitioned by key, with their
headers; a full local queue delays a write, never drops it; a fatal error of the producer
is raised as the client's error, or as an outage when the sink counts it as one; an output
refused for its record's sake is that record's refusal, remembered when the work is redone. On
in-memory clients (the produce calls are the ones the runtime makes to confluent-kafka)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from streams.coordinates import Coordinates
from streams.pipeline.errors import BrokerUnavailable, OutputsRefused
from streams.pipeline.produce import OutputSink, Refusal
from streams.pipeline.record import Record
from streams.testing.memory import MemoryCluster, MemoryProducer

OUTPUTS = [
    ("out", b"k1", b"v1", [("ce_id", b"1")]),
    ("out", b"k2", b"v2", [("ce_id", b"2")]),
    ("other", None, b"v3", []),
]


class QueueFullOnce(MemoryProducer):
    """A producer whose local queue is full for the first write of ``full_for``, until
    the producer is served (what librdkafka does with a full queue: ``BufferError``)."""

    def __init__(self, cluster: MemoryCluster, full_for: bytes) -> None:
        super().__init__(cluster, {})
        self.full_for = full_for
        self.full = True
        self.refused = 0

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if self.full and args and args[0] == self.full_for:
            self.refused += 1
            raise BufferError("Local: Queue full")
        super().produce(topic, *args, **kwargs)

    def poll(self, timeout: float = -1) -> int:
        self.full = False
        return super().poll(timeout)


def written(cluster: MemoryCluster) -> list[tuple[str, bytes | None, bytes | None, Any]]:
    return [
        (r.topic, r.key, r.value, list(r.headers))
        for topic in ("out", "other")
        for r in cluster.records(topic)
    ]


def test_send_all_queues_every_output_in_order_with_key_and_headers() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("out", 2)
    sink = OutputSink(MemoryProducer(cluster, {}))
    sink.send_all(OUTPUTS)
    sink.flush(1)
    assert written(cluster) == [(t, k, v, h) for t, k, v, h in OUTPUTS]
    assert sink.errors == []


def test_a_full_local_queue_delays_an_output_and_loses_none() -> None:
    cluster = MemoryCluster()
    producer = QueueFullOnce(cluster, full_for=b"v2")
    sink = OutputSink(producer)
    sink.send_all(OUTPUTS)
    sink.flush(1)
    assert producer.refused and not producer.full  # refused while full, then served
    assert written(cluster) == [(t, k, v, h) for t, k, v, h in OUTPUTS]


class FatalWhileServing(MemoryProducer):
    """A producer whose next ``poll``/``flush`` raises ``raised``: a fatal client error, or
    the SystemError confluent-kafka 2.16 raises over it when a delivery report of the same
    call runs after it (the fatal error still pending)."""

    def __init__(self, cluster: MemoryCluster, raised: BaseException) -> None:
        super().__init__(cluster, {})
        self.raised: BaseException | None = raised

    def poll(self, timeout: float = -1) -> int:
        raised, self.raised = self.raised, None
        if raised is not None:
            raise raised
        return super().poll(timeout)

    def flush(self, timeout: float = -1) -> int:
        self.poll(0)
        return super().flush(timeout)


def over_a_pending(error: KafkaException) -> SystemError:
    exc = SystemError(
        "<method 'fatal' of 'KafkaError' objects> returned a result with an exception set"
    )
    exc.__cause__ = error
    return exc


FENCED = KafkaException(KafkaError(KafkaError._FENCED, "old epoch", fatal=True))


def test_a_fatal_error_confluent_kafka_raises_as_systemerror_is_raised_as_itself() -> None:
    sink = OutputSink(FatalWhileServing(MemoryCluster(), over_a_pending(FENCED)))
    with pytest.raises(KafkaException) as raised:
        sink.flush(1)
    assert raised.value is FENCED
    other = SystemError("not the client's")
    sink = OutputSink(FatalWhileServing(MemoryCluster(), other))
    with pytest.raises(SystemError) as unrelated:
        sink.poll()
    assert unrelated.value is other


def test_a_fatal_error_the_sink_counts_as_an_outage_is_raised_as_one() -> None:
    """What an exactly-once committer makes of a write fenced in a transaction the broker
    timed out: the producer's error is an outage, and the producer is marked for
    replacement."""
    sink = OutputSink(FatalWhileServing(MemoryCluster(), over_a_pending(FENCED)))
    sink.transient = lambda err: err.code() == KafkaError._FENCED
    with pytest.raises(BrokerUnavailable, match="old epoch"):
        sink.poll()
    assert sink.fatal


class FatalOnWrite(MemoryProducer):
    """A producer in a fatal state: every write is refused at once (what confluent-kafka
    raises once librdkafka's producer has a fatal error)."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        raise FENCED


def test_a_write_refused_at_once_for_a_fatal_producer_is_an_outage_when_counted_so() -> None:
    sink = OutputSink(FatalOnWrite(MemoryCluster(), {}))
    with pytest.raises(KafkaException) as raised:
        sink.send_all(OUTPUTS)
    assert raised.value is FENCED
    sink.transient = lambda err: err.code() == KafkaError._FENCED
    with pytest.raises(BrokerUnavailable, match="old epoch"):
        sink.send_all(OUTPUTS)
    with pytest.raises(BrokerUnavailable, match="old epoch"):
        sink.send("out", None, b"v", [])
    assert sink.fatal


UNABLE = KafkaException(
    KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error")
)


class FatalPending(FatalWhileServing):
    """A producer fenced while the fatal error is not served yet: a write is refused with
    librdkafka's bare "Fatal error"; serving the producer raises the error itself."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        raise UNABLE


def test_a_write_refused_as_fatal_is_judged_by_the_error_that_made_the_producer_fatal() -> None:
    """A step that outlived the transaction timeout writes before the poll that would
    report the fencing (the CI met it under load): its error decides, not "Fatal error"."""
    sink = OutputSink(FatalPending(MemoryCluster(), over_a_pending(FENCED)))
    sink.transient = lambda err: err.code() == KafkaError._FENCED
    with pytest.raises(BrokerUnavailable, match="old epoch"):
        sink.send_all(OUTPUTS)
    assert sink.fatal
    sink = OutputSink(FatalPending(MemoryCluster(), FENCED))
    with pytest.raises(KafkaException) as raised:  # not an outage: the fencing, as it is
        sink.send("out", None, b"v", [])
    assert raised.value is FENCED
    idle = FatalPending(MemoryCluster(), FENCED)
    idle.raised = None  # nothing pending: the write's own error
    sink = OutputSink(idle)
    with pytest.raises(KafkaException) as bare:
        sink.send_all(OUTPUTS)
    assert bare.value is UNABLE


# -- outputs refused for their records' sake -------------------------------------------------
def record_at(offset: int) -> Record:
    return Record("in", 0, offset, None, b"k", b"v", [])


def test_a_refused_output_is_its_records_refusal_and_is_remembered_when_redone() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("out", 2)
    cluster.deny_writes("other")
    sink = OutputSink(MemoryProducer(cluster, {}))
    sink.send_all(OUTPUTS[:2], record_at(7))
    sink.send_all(OUTPUTS[2:], record_at(8))  # to "other": refused in its delivery report
    sink.flush(1)
    ((coordinates, topic, error, alone),) = sink.refusals
    assert (coordinates, topic, alone) == (Coordinates("in", 0, 8), "other", False)
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert sink.errors == []  # not a refusal that stops the runtime
    with pytest.raises(OutputsRefused, match=r"in\[0\]@8: other"):
        sink.raise_errors()
    sink.reset()  # the work is done again: without record 8
    assert sink.refusals == [] and list(sink.refused_records) == [Coordinates("in", 0, 8)]
    sink.forget([("in", 1)])
    assert list(sink.refused_records) == [Coordinates("in", 0, 8)]
    sink.forget([("in", 0)])  # the partition left: its next owner finds out itself
    assert sink.refused_records == {}


def test_an_output_too_large_refuses_its_record_before_any_of_its_outputs_is_sent() -> None:
    cluster = MemoryCluster()
    sink = OutputSink(MemoryProducer(cluster, {}), max_bytes=10_000)
    too_large = ("other", b"k", b"x" * 10_000, [])
    with pytest.raises(OutputsRefused):
        sink.send_all([OUTPUTS[0], too_large], record_at(3))
    sink.flush(1)
    assert cluster.records("out") == []  # the first output was not sent either
    (refusal,) = sink.refusals
    assert refusal.alone and refusal.error.code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_a_suspects_outputs_written_alone_clear_it_or_refuse_it_for_certain() -> None:
    cluster = MemoryCluster()
    cluster.deny_writes("other")
    sink = OutputSink(MemoryProducer(cluster, {}))
    for offset in (1, 2):  # both were in a refused batch
        sink.refusals.append(Refusal(Coordinates("in", 0, offset), "out", KafkaError(10), False))
    sink.reset()
    sink.send_alone(OUTPUTS[:1], record_at(1), 1)  # accepted alone: innocent
    assert list(sink.refused_records) == [Coordinates("in", 0, 2)]
    with pytest.raises(OutputsRefused):
        sink.send_alone(OUTPUTS[2:], record_at(2), 1)
    assert [r.alone for r in sink.refusals] == [True]


def test_a_purged_write_is_redone_not_a_refusal_that_stops() -> None:
    sink = OutputSink(MemoryProducer(MemoryCluster(), {}))
    sink.send_all(OUTPUTS)
    sink.producer.purge()  # what librdkafka does to the writes of a failed transaction
    sink.flush(1)
    assert sink.errors and not sink.refused
    with pytest.raises(BrokerUnavailable):
        sink.raise_errors()
