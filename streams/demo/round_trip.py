"""The round-trip step of the demo: plain Kafka, before any of the toolkit.

Produces 500 keyed records (20 keys) with ``acks=all`` to a 4-partition topic and reads
them all back with a new consumer group, counting per partition. Blocks up to 60 s on the
read; raises RuntimeError when fewer than 500 come back.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer

from streams.cluster import admin_client, create_topic
from streams.demo.context import DemoContext


def step_round_trip(ctx: DemoContext) -> None:
    """Produce keyed records to a 4-partition topic and read them all back."""
    count = 500
    topic = ctx.topic("round-trip")
    create_topic(admin_client(ctx.bootstrap), topic, partitions=4)
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "linger.ms": 5, "acks": "all"})
    acked: list[int] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is None:
            acked.append(1)

    for i in range(count):
        producer.produce(topic, key=f"key-{i % 20}", value=f"record {i}", on_delivery=on_delivery)
    producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"demo-{ctx.run_id}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 60
    while sum(seen.values()) < count and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=1.0):
            partition = msg.partition()
            if msg.error() is None and partition is not None:
                seen[partition] = seen.get(partition, 0) + 1
    consumer.close()
    per_partition = ", ".join(f"p{p}={n}" for p, n in sorted(seen.items()))
    ctx.say(
        "round trip",
        f"produced {len(acked)}/{count} (acks=all), "
        f"consumed {sum(seen.values())} from {topic} ({per_partition})",
    )
    if sum(seen.values()) != count:
        raise RuntimeError(f"demo read back {sum(seen.values())} of {count} records")
