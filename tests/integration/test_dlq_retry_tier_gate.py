"""A retry tier on a real consumer: a record that is not due pauses only its partition.

The gate is driven with an explicit ``now``, so the test never waits for a due time: it
checks that a held partition yields nothing (the record after the head included) while
another partition keeps flowing, and that after ``resume_due`` the head is fetched again
and processed once, followed by the rest, in offset order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from confluent_kafka import Consumer, Message, Producer, TopicPartition

from streams.failures.headers import DUE_TIME, format_time
from streams.failures.retry_holds import Hold, RetryHolds, hold, resume_due
from streams.testing.topics import TopicFactory


def produce(bootstrap: str, topic: str, rows: list[tuple[int, str, datetime]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition, value, due in rows:
        producer.produce(
            topic,
            value=value.encode(),
            partition=partition,
            headers=[(DUE_TIME, format_time(due).encode())],
        )
    assert producer.flush(30) == 0


def test_a_record_not_due_holds_its_partition_and_no_other(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    tier = make_topic("app-orders-retry-1", partitions=2)
    now = datetime.now(UTC)
    later = now + timedelta(hours=1)
    produce(
        kafka_bootstrap,
        tier,
        [
            (0, "p0-a", now - timedelta(seconds=5)),
            (0, "p0-b", later),  # not due: holds partition 0
            (0, "p0-c", now - timedelta(seconds=5)),  # due, but behind the head
            (1, "p1-a", now - timedelta(seconds=5)),
            (1, "p1-b", now - timedelta(seconds=1)),
        ],
    )
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"gate-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(tier, 0, 0), TopicPartition(tier, 1, 0)])
    holds = RetryHolds()
    processed: list[Message] = []

    def run_until(done: Callable[[], bool], at: datetime, polls: int = 60) -> None:
        for _ in range(polls):
            if done():
                return
            sifted = holds.sift(consumer.consume(100, timeout=0.5), now=at)
            hold(consumer, sifted.held)
            processed.extend(m for m in sifted.ready if m.error() is None)
        raise AssertionError(f"condition not met; processed {values()}")

    def values() -> list[str]:
        return [(m.value() or b"").decode() for m in processed]

    try:
        run_until(lambda: {"p0-a", "p1-a", "p1-b"} <= set(values()) and bool(holds.held), now)
        due = later.replace(microsecond=later.microsecond // 1000 * 1000)  # ms on the wire
        assert holds.held == [Hold(tier, 0, 1, due)]
        # Partition 1 keeps flowing while partition 0 waits.
        produce(kafka_bootstrap, tier, [(1, "p1-c", now), (1, "p1-d", now)])
        run_until(lambda: "p1-d" in values(), now)
        for _ in range(3):  # a few more polls: nothing of partition 0 slips through
            sifted = holds.sift(consumer.consume(100, timeout=0.2), now=now)
            processed.extend(m for m in sifted.ready if m.error() is None)
        assert "p0-b" not in values()
        assert "p0-c" not in values()
        assert holds.poll_timeout(0.5, now=now) == 0.5

        # The due time comes: the partition resumes and its head is fetched again.
        assert [h.partition for h in resume_due(consumer, holds, now=later)] == [0]
        run_until(lambda: "p0-c" in values(), later)
    finally:
        consumer.close()

    by_partition = {
        p: [(m.value() or b"").decode() for m in processed if m.partition() == p] for p in (0, 1)
    }
    assert by_partition == {0: ["p0-a", "p0-b", "p0-c"], 1: ["p1-a", "p1-b", "p1-c", "p1-d"]}
    assert values().index("p1-d") < values().index("p0-b")
