"""The ceiling: a bare confluent-kafka producer and consumer on the same broker."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer

from streams.bench.core import BenchContext, Row

PAYLOAD_BYTES = 200
PRODUCER_CONFIG = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "acks": "all",
    "compression.type": "lz4",
}


def produce_bare(bootstrap: str, topic: str, count: int, payload: bytes) -> float:
    """Produce ``count`` keyed records and wait for every ack; return the seconds taken."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, key=str(i % 1000).encode(), value=payload)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return time.perf_counter() - start


def consume_bare(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    start: float | None = None
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        batch = consumer.consume(10_000, timeout=1.0)
        if batch and start is None:
            start = time.perf_counter()  # exclude the group join from the figure
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - (start or time.perf_counter())
    consumer.close()
    if seen < count:
        raise RuntimeError(f"bare consumer read {seen} of {count}")
    return elapsed


def run(ctx: BenchContext) -> list[Row]:
    topic = ctx.topic("bare", partitions=4)
    payload = b"x" * PAYLOAD_BYTES
    n = ctx.records
    mb = n * PAYLOAD_BYTES / 1e6
    t_prod = produce_bare(ctx.bootstrap, topic, n, payload)
    t_cons = consume_bare(ctx.bootstrap, topic, n)
    return [
        Row("bare confluent-kafka", "produce", n / t_prod, "rec/s", note=f"{mb / t_prod:.1f} MB/s"),
        Row("bare confluent-kafka", "consume", n / t_cons, "rec/s", note=f"{mb / t_cons:.1f} MB/s"),
    ]
