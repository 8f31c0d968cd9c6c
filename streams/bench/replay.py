"""Replay copy rate against a bare confluent-kafka copy loop, on the same source.

Both copy every record of a 4-partition topic (keys, values, headers) into a fresh
topic and count only when the last copy is acknowledged. The bare loop is the ceiling:
assign, consume batches, produce, flush, with the same producer settings and nothing
else (no plan, no filter, no replay header).
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from streams.bench.bare_client import PAYLOAD_BYTES, produce_bare
from streams.bench.core import BenchContext, Row, best_of
from streams.cluster import Cluster
from streams.config import bounded_prefetch
from streams.replay import parse_position_spec, plan_replay, replay
from streams.replay.positions import TopicSelection

ROUNDS = 3
PRODUCER = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "partitioner": "murmur2_random",
    "delivery.report.only.error": True,  # as replay: no Python call per successful ack
}


def bare_copy(bootstrap: str, source: str, target: str, count: int) -> float:
    """Copy ``count`` records with plain clients; the seconds until the last ack."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,  # the same fetch settings as the replay's consumer
            **bounded_prefetch(65_536),
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    start = time.perf_counter()
    consumer.assign([TopicPartition(source, p, OFFSET_BEGINNING) for p in range(4)])
    seen = 0
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        for msg in consumer.consume(2000, timeout=0.2):
            if msg.error() is not None:
                continue
            seen += 1
            while True:
                try:
                    producer.produce(
                        target, key=msg.key(), value=msg.value(), headers=msg.headers()
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen < count or left:
        raise RuntimeError(f"bare copy moved {seen} of {count} ({left} unacknowledged)")
    return elapsed


def run(ctx: BenchContext) -> list[Row]:
    n = ctx.records
    source = ctx.topic("replay-src", partitions=4)
    produce_bare(ctx.bootstrap, source, n, b"x" * PAYLOAD_BYTES)
    cluster = Cluster(ctx.bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("earliest"))

    def bare() -> float:
        return n / bare_copy(ctx.bootstrap, source, ctx.topic("replay-bare", partitions=4), n)

    def ours() -> float:
        target = ctx.topic("replay-dst", partitions=4)
        start = time.perf_counter()
        planned = plan_replay(cluster, TopicSelection(source), parse_position_spec("earliest"))
        result = replay(cluster, planned, target)
        if result.copied != n:
            raise RuntimeError(f"replay copied {result.copied} of {n}")
        return n / (time.perf_counter() - start)

    # Alternated, best of each: neither side pays alone for a cold start.
    best = best_of(ROUNDS, {"bare": bare, "ours": ours})

    dry_start = time.perf_counter()
    replay(cluster, plan, None, dry_run=True)
    t_dry = time.perf_counter() - dry_start
    return [
        Row("replay", "copy (plan + copy + acks)", best["ours"], "rec/s", baseline=best["bare"],
            note=f"{n:,} records, best of {ROUNDS} each"),
        Row("replay", "dry run (read and count)", n / t_dry, "rec/s"),
    ]  # fmt: skip
