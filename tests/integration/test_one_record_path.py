"""The TestDriver proves the runtime: one topology, the same results in memory and on Kafka.

The orders example with dedup and a retry policy, fed the same records (duplicates, a
flaky order that recovers through a retry tier, a poison order and garbage bytes that end
in the DLQ), once through the ``TestDriver`` and once through the runtime on the broker:
the same outputs per key, the same dead letters, and the same store contents (each store's
changelog, materialised per partition), under both processing guarantees.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Message, TopicPartition
from confluent_kafka.admin import AdminClient
from runtime_thread import RuntimeThread

from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures import RetryPolicy
from streams.failures.headers import parse_failure_headers
from streams.failures.topics import FailureTopics
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.state import changelog_topic
from streams.state.changelog import decode_record
from streams.testing import TestDriver, TopicFactory, TopicReader, produce_records
from streams.testing.topics import unique_topic_name
from streams.topology import Topology, TopologyBuilder, owned
from streams.topology.loader import import_file

CODEC = AvroCodec(default_catalog())
ORDERS = import_file(example_path("orders"))
PARTITIONS = 4
GARBAGE = b"\x00 not an envelope"


class Flaky:
    """Times out once on the orders in ``flaky``; always refuses the ones in ``poison``."""

    def __init__(self, flaky: set[str], poison: set[str]) -> None:
        self.flaky, self.poison = flaky, poison
        self.tried: Counter[str] = Counter()

    def __call__(self, env: Envelope) -> Envelope:
        order = env.data["order_id"]
        self.tried[order] += 1
        if order in self.poison:
            raise ValueError(f"order {order} cannot be priced")
        if order in self.flaky and self.tried[order] == 1:
            raise TimeoutError(f"pricing timed out for {order}")
        return env


def shop(app_id: str, source: str, flaky: Flaky, guarantee: str) -> Topology:
    builder = TopologyBuilder(
        app_id, retry=RetryPolicy.parse("300ms, 300ms"), processing_guarantee=guarantee
    )
    orders = builder.source(source, type="order.placed", version=2, name="orders")
    unique = orders.dedup(ttl=3600, by=lambda e: e.data["order_id"], name="once")
    routes = (
        unique.map(flaky, name="price")
        .map(ORDERS.validate)
        .map(ORDERS.enrich)
        .branch(accepted=ORDERS.is_valid, default="rejected", name="route")
    )
    routes["accepted"].map(ORDERS.to_accepted).to(
        owned("accepted"), type="order.accepted", version=1
    )
    routes["rejected"].map(ORDERS.to_rejected).to(
        owned("rejected"), type="order.rejected", version=1
    )
    return builder.build()


Input = tuple[bytes | None, bytes, list[tuple[str, bytes]]]


def inputs() -> tuple[list[Input], set[str], set[str]]:
    """Records in the order written: 60 orders, 10 of them again, garbage in the middle;
    which orders are flaky and which poison."""
    orders = list(ORDERS.sample_orders(60, customers=8))
    again = orders[5:15]
    records: list[Input] = []
    for env in [*orders[:30], *again[:5], *orders[30:], *again[5:]]:
        value, headers = CODEC.encode(env)
        records.append(((env.key or "").encode(), value, list(headers)))
    records.insert(40, (b"c-0001", GARBAGE, []))
    ids = [e.data["order_id"] for e in orders]
    return records, {ids[3], ids[21]}, {ids[9], ids[44]}


def rows(envelopes: list[tuple[int, Envelope]]) -> dict[str, list[tuple[Any, ...]]]:
    """Per key, in order: what an output says (its id is new on each run)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for partition, e in envelopes:
        row = (partition, e.type, e.version, dict(e.data), e.causation_id, e.correlation_id)
        out.setdefault(e.key or "", []).append(row)
    return out


def letters(records: list[tuple[bytes | None, bytes | None, Any]]) -> list[tuple[Any, ...]]:
    out = []
    for key, value, headers in records:
        info = parse_failure_headers(headers)
        assert info is not None
        origin = info.origin
        out.append((key, value, info.error_type, info.attempts, info.step, info.stage, *origin[1:]))
    return sorted(out, key=repr)


def materialise(records: Iterator[tuple[int, bytes | None, bytes | None, Any]]) -> dict[Any, Any]:
    """A changelog as its store holds it: the last stored value of each key, per partition
    (the values alone: the source offsets and expiries they are tagged with differ between
    the driver's clock and positions and the runtime's)."""
    table: dict[tuple[int, bytes | None], bytes | None] = {}
    for partition, key, value, headers in records:
        record = decode_record(
            key, value, headers, topic="changelog", partition=partition, offset=0
        )
        table[(partition, key)] = record.value
    return {k: v for k, v in table.items() if v is not None}


def run_driver(topology: Topology, records: list[Input]) -> dict[str, Any]:
    with TestDriver(topology, partitions=PARTITIONS) as driver:
        source = topology.topics_read[0]
        for key, value, headers in records:
            driver.pipe_raw(source, value, headers, key=key)
        while driver.waiting_retries:
            driver.advance_time(1_000)
        accepted, rejected = topology.topics_written
        return {
            "outputs": {
                t: rows([(r.partition, r.envelope) for r in driver.records(t)])
                for t in (accepted, rejected)
            },
            "counts": {t: len(driver.records(t)) for t in (accepted, rejected)},
            "dead": letters([(r.key, r.value, r.headers) for r in driver.dead_letters]),
            "stores": {
                name: materialise(
                    (r.partition, r.key, r.value, r.headers)
                    for r in driver.cluster.records(changelog_topic(topology.app_id, name))
                )
                for name in _store_names(topology)
            },
        }


def _store_names(topology: Topology) -> list[str]:
    return [*topology.stores, *(f"{t}-waiting" for t in topology.topics_read)]


def read_all(bootstrap: str, topic: str) -> list[Message]:
    """Every committed record of ``topic``, to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_topic_name("reader"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p))[1] for p in meta.partitions
        }
        done = {p for p, end in ends.items() if end == 0}
        out: list[Message] = []
        while len(done) < len(ends):
            for msg in consumer.consume(500, timeout=1):
                if msg.error() is None:
                    out.append(msg)
                elif msg.partition() is not None:
                    done.add(cast(int, msg.partition()))
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_the_driver_and_the_runtime_on_kafka_agree(
    guarantee: str,
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Any,
) -> None:
    records, flaky, poison = inputs()
    source = make_topic("shop-in", partitions=PARTITIONS)
    app = unique_topic_name("parity")
    expected = run_driver(shop(app, source, Flaky(flaky, poison), guarantee), records)
    # Two poison orders, one of them twice (dedup never marks a record that failed), garbage.
    assert len(expected["dead"]) == 4
    assert all(expected["counts"].values()) and expected["stores"]["once"]
    came_out = {
        row[3]["order_id"] for t in expected["outputs"].values() for r in t.values() for row in r
    }
    assert flaky <= came_out and not poison & came_out  # recovered; dead-lettered
    assert sum(expected["counts"].values()) == len(came_out) == 60 - len(poison)  # once each

    topology = shop(app, source, Flaky(flaky, poison), guarantee)
    produce_records(kafka_bootstrap, source, records)
    prepare_topics(Topics(kafka_admin), topology)
    config = RuntimeConfig(kafka_bootstrap, commit_interval_s=0.2, state_dir=str(tmp_path))
    instance = RuntimeThread(Runtime(topology, config))
    dlq = FailureTopics.for_input(app, source, topology.retry or RetryPolicy()).dlq
    try:
        for topic, count in [*expected["counts"].items(), (dlq, len(expected["dead"]))]:
            with TopicReader(kafka_bootstrap, topic) as reader:
                reader.wait_for(lambda found, n=count: len(found) >= n, 60)
    finally:
        assert instance.stop(30) is None  # the last commit: every store change flushed

    outputs = {
        t: rows(
            [
                (m.partition() or 0, CODEC.decode(m.value(), m.headers()))
                for m in read_all(kafka_bootstrap, t)
            ]
        )
        for t in expected["outputs"]
    }
    assert outputs == expected["outputs"]
    dead = [(m.key(), m.value(), m.headers()) for m in read_all(kafka_bootstrap, dlq)]
    assert letters(dead) == expected["dead"]
    stores = {
        name: materialise(
            (m.partition() or 0, m.key(), m.value(), m.headers())
            for m in read_all(kafka_bootstrap, changelog_topic(app, name))
        )
        for name in _store_names(topology)
    }
    assert stores == expected["stores"]
