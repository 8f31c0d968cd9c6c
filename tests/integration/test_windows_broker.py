"""Windows on the real broker: ``topology/revenue.py`` against the plain definition.

Orders of 12 customers over ten minutes of event time, some a few seconds out of order
(inside the 10 s grace), some a minute or more late, on 4 partitions. The revenue per
customer per minute that comes out must be what ``window_oracle`` computes partition by
partition: every closed window once with its whole sum, every late order on the late
topic. Then the same with a SIGKILL mid-stream and a restart: at-least-once loses no
window and never counts an order twice (a window may come out twice, with the same
value); exactly-once's read_committed output has each window once.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from runtime_thread import RuntimeThread

from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import (
    KafkaIO,
    TopicFactory,
    TopologyProcess,
    produce_envelopes,
    wait_until,
    window_oracle,
)
from streams.topology import (
    Topology,
    TopologyBuilder,
    Update,
    hopping,
    owned,
    session,
    sliding,
    tumbling,
)
from streams.topology.loader import import_file
from streams.topology.partitioning import partition_for
from streams.topology.windows import AnyWindows

ROOT = Path(__file__).resolve().parents[2]
REVENUE = ROOT / "topology" / "revenue.py"
PARTITIONS, CUSTOMERS = 4, 12
BASE = datetime(2026, 1, 1, tzinfo=UTC)
WINDOWS = tumbling(60, grace=10)  # what topology/revenue.py declares
FAST_REBALANCE = ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"]

Totals = dict[tuple[str, int], tuple[int, int]]


def orders(count: int, seed: int) -> list[Envelope]:
    """Orders 0.5 s apart in event time; 30% up to 8 s back, 5% 60-120 s back (late)."""
    rng = random.Random(seed)
    sample = import_file(ROOT / "topology" / "orders.py").sample_orders
    out = []
    for i, env in enumerate(sample(count, customers=CUSTOMERS, seed=seed)):
        roll = rng.random()
        back = rng.uniform(0, 8) if roll < 0.3 else rng.uniform(60, 120) if roll < 0.35 else 0
        out.append(replace(env, time=BASE + timedelta(seconds=max(i * 0.5 - back, 0))))
    return out


def closed_and_late(
    sent: Sequence[Envelope], windows: AnyWindows
) -> tuple[dict[tuple[str, int], list[Envelope]], set[str]]:
    """The orders of each closed window by (customer, start ms), and the late order ids,
    partition by partition as the broker holds them."""
    closed: dict[tuple[str, int], list[Envelope]] = {}
    late: set[str] = set()
    for p in range(PARTITIONS):
        mine = [e for e in sent if partition_for((e.key or "").encode(), PARTITIONS) == p]
        oracle = window_oracle([(e.key or "", e.time, e) for e in mine], windows)
        closed |= oracle.closed
        late |= {mine[i].data["order_id"] for i in oracle.late}
    return closed, late


def expected(sent: Sequence[Envelope]) -> tuple[Totals, set[str]]:
    """Revenue per customer per minute: closed windows' (orders, revenue), late order ids."""
    closed, late = closed_and_late(sent, WINDOWS)
    totals = {
        kw: (len(envs), sum(e.data["total_cents"] for e in envs)) for kw, envs in closed.items()
    }
    return totals, late


def totals(envs: Sequence[Envelope]) -> list[tuple[tuple[str, int], tuple[int, int]]]:
    return [
        (
            (e.data["customer_id"], e.data["window_start_ms"]),
            (e.data["orders"], e.data["revenue_cents"]),
        )
        for e in envs
    ]


def read_all(bootstrap: str, topic: str) -> list[Envelope]:
    """Every committed record of ``topic`` up to its end now (read_committed)."""
    codec = AvroCodec(default_catalog())
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        parts = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
        marks = {p.partition: consumer.get_watermark_offsets(p, timeout=10) for p in parts}
        ends = {p: high for p, (low, high) in marks.items() if high > low}  # empty: nothing to read
        consumer.assign(parts)
        out: list[Envelope] = []

        def done() -> bool:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error() is None:
                    out.append(codec.decode(msg.value(), msg.headers()))
            positions = consumer.position(parts)
            return all(tp.offset >= ends[tp.partition] for tp in positions if tp.partition in ends)

        wait_until(done, 60, what=f"reading {topic} to its end")
        return out
    finally:
        consumer.close()


def test_revenue_per_minute_equals_the_plain_computation(
    kafka_bootstrap: str, make_topic: TopicFactory, kafka_io: KafkaIO, app_id: str
) -> None:
    source = make_topic("revenue-in", partitions=PARTITIONS)
    sent = orders(1_200, seed=3)
    closed, late = expected(sent)
    assert len(closed) > 100 and len(late) > 20  # the input exercises what it should
    with TopologyProcess(REVENUE, kafka_bootstrap, app_id=app_id, settings={"input": source}):
        kafka_io.produce(source, sent)
        out = kafka_io.wait_for_envelopes(f"{app_id}-revenue", len(closed), timeout=120)
        late_out = kafka_io.wait_for_envelopes(f"{app_id}-late-orders", len(late), timeout=60)
    assert dict(totals(out)) == closed
    assert len(out) == len(closed)
    assert {e.data["order_id"] for e in late_out} == late


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_sigkill_mid_window_loses_no_window_and_counts_no_order_twice(  # noqa: PLR0917
    guarantee: str,
    kafka_bootstrap: str,
    make_topic: TopicFactory,
    kafka_io: KafkaIO,
    app_id: str,
    tmp_path: Path,
) -> None:
    source = make_topic("revenue-in", partitions=PARTITIONS)
    sent = orders(1_600, seed=5)
    closed, _ = expected(sent)
    first_half, second_half = sent[:800], sent[800:]
    codec = AvroCodec(default_catalog())
    args = ["--guarantee", guarantee, "--state-dir", str(tmp_path / "state"), *FAST_REBALANCE]

    def instance() -> TopologyProcess:
        return TopologyProcess(
            REVENUE, kafka_bootstrap, app_id=app_id, settings={"input": source}, args=args
        )

    crashed = instance().start()
    try:
        produce_envelopes(kafka_bootstrap, source, first_half, codec)
        kafka_io.wait_for_envelopes(f"{app_id}-revenue", 20, timeout=120)  # mid-stream
    finally:
        crashed.kill()
    produce_envelopes(kafka_bootstrap, source, second_half, codec)
    with instance():
        kafka_io.wait_for(
            f"{app_id}-revenue",
            lambda records: len(records) >= len(closed),
            timeout=120,
            what=f"{len(closed)} windows",
        )

        def every_window() -> list[tuple[tuple[str, int], tuple[int, int]]] | None:
            found = totals(read_all(kafka_bootstrap, f"{app_id}-revenue"))
            return found if {kw for kw, _ in found} == set(closed) else None

        seen = wait_until(every_window, 120, what="every closed window")
    for window, value in seen:
        assert value == closed[window], window  # never an order counted twice or lost
    if guarantee == "exactly_once":
        assert len(seen) == len(closed)  # each window once in read_committed output


def counts_topology(app_id: str, source: str, windows: AnyWindows) -> Topology:
    """Orders counted per customer and window, final values as customer.revenue."""

    def as_revenue(update: Update) -> Envelope:
        assert update.window is not None
        data = {
            "customer_id": update.key,
            "window_start_ms": update.window.start_ms,
            "window_end_ms": update.window.end_ms,
            "orders": update.value,
            "revenue_cents": 0,
            "currency": "EUR",
        }
        return Envelope.new("customer.revenue", data, key=update.key)

    b = TopologyBuilder(app_id)
    table = (
        b.source(source, type="order.placed", version=2)
        .window(windows)
        .count(emit="final", name="counts")
    )
    table.to_stream(as_revenue).to(owned("counts"), type="customer.revenue", version=1)
    table.late().to(owned("late"), type="order.placed", version=2)
    return b.build(default_catalog())


@pytest.mark.parametrize(
    "windows", [hopping(30, 10, grace=5), session(4, grace=5), sliding(20, grace=5)], ids=str
)
def test_hopping_session_and_sliding_counts_equal_the_plain_computation(  # noqa: PLR0917
    windows: AnyWindows,
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    make_topic: TopicFactory,
    kafka_io: KafkaIO,
    app_id: str,
    tmp_path: Path,
) -> None:
    source = make_topic("counts-in", partitions=PARTITIONS)
    sent = orders(1_200, seed=7)
    windows_closed, late = closed_and_late(sent, windows)
    closed = {kw: len(envs) for kw, envs in windows_closed.items()}
    assert len(closed) > 100 and late
    topology = counts_topology(app_id, source, windows)
    prepare_topics(Topics(kafka_admin), topology)  # what `streams run` does first
    runtime = Runtime(topology, RuntimeConfig(bootstrap=kafka_bootstrap, state_dir=str(tmp_path)))
    instance = RuntimeThread(runtime)
    try:
        kafka_io.produce(source, sent)
        out = kafka_io.wait_for_envelopes(f"{app_id}-counts", len(closed), timeout=120)
        late_out = kafka_io.wait_for_envelopes(f"{app_id}-late", len(late), timeout=60)
    finally:
        assert instance.stop(30) is None
    found = {(e.data["customer_id"], e.data["window_start_ms"]): e.data["orders"] for e in out}
    assert found == closed
    assert len(out) == len(closed)
    assert {e.data["order_id"] for e in late_out} == late
