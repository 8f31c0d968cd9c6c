"""Produce and consume on the session's real broker, through the plugin's fixtures."""

from __future__ import annotations

from collections import defaultdict

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from streams.testing import TopicFactory


def test_keyed_records_come_back_in_per_key_order(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic("orders", partitions=4)
    # Idempotent: without it a retried batch may land after the next one (per-key order lost).
    settings = {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "linger.ms": 5}
    producer = Producer(settings)
    for seq in range(1000):
        producer.produce(topic, key=f"k{seq % 25}", value=str(seq).encode())
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"{topic}-reader",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    per_key: dict[str, list[int]] = defaultdict(list)
    partitions_of_key: dict[str, set[int]] = defaultdict(set)
    received = 0
    for _ in range(60):
        for msg in consumer.consume(1000, timeout=1.0):
            assert msg.error() is None
            key = msg.key().decode()
            per_key[key].append(int(msg.value()))
            partitions_of_key[key].add(msg.partition())
            received += 1
        if received >= 1000:
            break
    consumer.close()

    assert received == 1000
    assert all(len(parts) == 1 for parts in partitions_of_key.values()), (
        "a key lives on one partition"
    )
    assert all(seqs == sorted(seqs) for seqs in per_key.values()), "per-key order is kept"
    assert len({p for parts in partitions_of_key.values() for p in parts}) > 1


def test_topics_from_the_factory_are_unique_and_deleted(
    kafka_bootstrap: str, make_topic: TopicFactory, kafka_admin: AdminClient
) -> None:
    a = make_topic("same-hint")
    b = make_topic("same-hint", partitions=3, config={"cleanup.policy": "compact"})
    assert a != b
    meta = kafka_admin.list_topics(timeout=10)
    assert len(meta.topics[b].partitions) == 3
    make_topic.cleanup()
    remaining = kafka_admin.list_topics(timeout=10).topics
    assert a not in remaining and b not in remaining
