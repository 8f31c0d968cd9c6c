"""``OutputSink.send_all``: a record's outputs are queued in order, partitioned by key,
with their headers; a full local queue delays a write, never drops it. On in-memory
clients (the produce calls are the ones the runtime makes to confluent-kafka)."""

from __future__ import annotations

from typing import Any

from streams.pipeline.produce import OutputSink
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
