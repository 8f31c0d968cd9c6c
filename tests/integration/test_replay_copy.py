"""``replay`` copies exactly the planned records, with their keys and headers, and a dry
run writes nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from test_replay_seed import MIN, Seeded

from streams.cluster import Cluster, TopicNotFoundError
from streams.replay import CopyError, ReplayError, plan_replay
from streams.replay.copy import REPLAY_HEADER, replay
from streams.replay.filters import RecordFilter
from streams.replay.positions import TopicSelection, format_ms, parse_position_spec

Record = tuple[int, bytes | None, bytes | None, dict[str, bytes | None]]


def read_all(bootstrap: str, topic: str) -> list[Record]:
    """Every record of ``topic``: (partition, key, value, headers), in partition order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-all"})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in parts}
    want = {p: hi for p, (lo, hi) in ends.items() if hi > lo}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in want])
    out: list[Record] = []
    deadline = time.monotonic() + 30
    while want:
        assert time.monotonic() < deadline, f"{topic}: still waiting for {want}"
        for msg in consumer.consume(500, timeout=0.5):
            assert msg.error() is None, msg.error()
            out.append((msg.partition(), msg.key(), msg.value(), dict(msg.headers() or [])))
            if msg.offset() + 1 >= want.get(msg.partition(), 0):
                want.pop(msg.partition(), None)
    consumer.close()
    return sorted(out, key=lambda r: (r[0], r[3].get(REPLAY_HEADER) or b""))


def test_replay_copies_exactly_the_range_keeping_partitions_keys_and_headers(
    kafka_bootstrap: str, seeded: Seeded, make_topic: Callable[..., str]
) -> None:
    cluster = Cluster(kafka_bootstrap)
    target = make_topic("target", partitions=4)
    start = parse_position_spec(format_ms(seeded.t0 + 25 * MIN))
    end = parse_position_spec(format_ms(seeded.t0 + 55 * MIN))
    plan = plan_replay(cluster, TopicSelection(seeded.topic), start, end)
    result = replay(cluster, plan, target, keep_partition=True)

    expected = {0: range(3, 6), 1: range(0, 3), 2: range(0, 0), 3: range(5, 11)}
    assert {p.partition: p.copied for p in result.partitions} == {
        p: len(r) for p, r in expected.items()
    }
    copies = read_all(kafka_bootstrap, target)
    assert len(copies) == result.copied == 12
    want = sorted(
        (p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), f"{seeded.topic}/{p}/{i}".encode())
        for p, offsets in expected.items()
        for i in offsets
    )
    got = sorted((p, key, value, headers[REPLAY_HEADER]) for p, key, value, headers in copies)
    assert got == want
    assert all(h["trace"] == b"t" and h["ce_type"] in (b"order.placed", b"order.shipped")
               for *_, h in copies)  # fmt: skip


def test_filters_by_envelope_type_and_key(
    kafka_bootstrap: str, seeded: Seeded, make_topic: Callable[..., str]
) -> None:
    cluster = Cluster(kafka_bootstrap)
    target = make_topic("target", partitions=2)
    plan = plan_replay(cluster, TopicSelection(seeded.topic), parse_position_spec("earliest"))
    by_type = replay(cluster, plan, target, record_filter=RecordFilter.of(types=["order.placed"]))
    # even indexes are order.placed: p0 5 of 10, p1 3 of 5, p3 offsets 4..18 even: 8 of 17
    assert by_type.read == 32 and by_type.copied == 16
    copies = read_all(kafka_bootstrap, target)
    assert len(copies) == 16 and {h["ce_type"] for *_, h in copies} == {b"order.placed"}

    keyed = replay(
        cluster, plan, None, dry_run=True, record_filter=RecordFilter.of(keys=["k0-1", "k3-7"])
    )
    assert keyed.copied == 2


def test_dry_run_counts_per_partition_and_writes_nothing(
    kafka_bootstrap: str, seeded: Seeded, make_topic: Callable[..., str]
) -> None:
    cluster = Cluster(kafka_bootstrap)
    target = make_topic("target", partitions=4)
    plan = plan_replay(cluster, TopicSelection(seeded.topic), parse_position_spec("4"))
    result = replay(cluster, plan, target, dry_run=True)
    assert {p.partition: p.copied for p in result.partitions} == {0: 6, 1: 1, 2: 0, 3: 16}
    assert read_all(kafka_bootstrap, target) == []


def test_replay_into_its_source_is_refused_unless_forced(
    kafka_bootstrap: str, seeded: Seeded, make_topic: Callable[..., str]
) -> None:
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(cluster, TopicSelection(seeded.topic, (1,)), parse_position_spec("3"))
    with pytest.raises(ReplayError, match="into itself"):
        replay(cluster, plan, seeded.topic)
    with pytest.raises(TopicNotFoundError, match=r"target topic .* does not exist"):
        replay(cluster, plan, seeded.topic + "-missing")
    small = make_topic("small", partitions=1)
    with pytest.raises(ReplayError, match="needs 2 partitions"):
        replay(cluster, plan, small, keep_partition=True)
    assert read_all(kafka_bootstrap, small) == []
    result = replay(cluster, plan, seeded.topic, force=True, keep_partition=True)
    assert result.copied == 2
    assert len([r for r in read_all(kafka_bootstrap, seeded.topic) if r[0] == 1]) == 7


def test_a_copy_the_target_refuses_fails_the_replay(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    source = make_topic("big", partitions=1)
    target = make_topic("tiny", partitions=1, config={"max.message.bytes": "200"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(source, key=b"k", value=os.urandom(5000))  # random: lz4 cannot shrink it
    assert producer.flush(10) == 0
    cluster = Cluster(kafka_bootstrap)
    plan = plan_replay(cluster, TopicSelection(source), parse_position_spec("0"))
    with pytest.raises(CopyError, match="not acknowledged"):
        replay(cluster, plan, target)


def java_partition(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record: murmur2, made positive, modulo."""
    m, length = 0x5BD1E995, len(key)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(key[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[length - length % 4 :]
    if tail:
        for shift, byte in reversed(list(enumerate(tail))):
            h ^= byte << (8 * shift)
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def test_copies_go_where_a_java_producer_puts_their_key_and_can_keep_timestamps(
    kafka_bootstrap: str, seeded: Seeded, make_topic: Callable[..., str]
) -> None:
    cluster = Cluster(kafka_bootstrap)
    target = make_topic("target", partitions=3)
    plan = plan_replay(cluster, TopicSelection(seeded.topic), parse_position_spec("earliest"))
    assert replay(cluster, plan, target, keep_timestamps=True).copied == 32
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "check"})
    consumer.assign([TopicPartition(target, p, OFFSET_BEGINNING) for p in range(3)])
    original = {key: ts for recs in seeded.records.values() for _o, ts, key, _t in recs}
    seen: dict[bytes, tuple[int, int, bytes]] = {}
    deadline = time.monotonic() + 30
    while len(seen) < 32:
        assert time.monotonic() < deadline, f"read {len(seen)} of 32 copies"
        for msg in consumer.consume(100, timeout=0.5):
            headers = dict(msg.headers() or [])
            seen[msg.key()] = (msg.partition(), msg.timestamp()[1],
                               headers["streams.replay.original_timestamp"])  # fmt: skip
    consumer.close()
    for key, (partition, ts, header) in seen.items():
        assert partition == java_partition(key, 3)
        assert ts == original[key] and header == str(original[key]).encode()
