"""Share groups (work queues): which topologies may run on one, and what the chain does
with each record: accept it once its outputs are durable, release it for another delivery,
or dead-letter it after ``deliveries`` (or at once, for bad input)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.logs import get_logger
from streams.pipeline.execute import Attempt
from streams.pipeline.produce import OutputSink
from streams.pipeline.record import Record
from streams.pipeline.share import share_chain
from streams.pipeline.stats import Stats
from streams.schemas import default_catalog
from streams.testing.memory import MemoryCluster
from streams.topology import (
    ProcessorContext,
    Topology,
    TopologyBuilder,
    TopologyValidationError,
    load_topology,
)

CODEC = AvroCodec(default_catalog())
ACCEPT, RELEASE = "accept", "release"


def shipment(order: str, carrier: str = "dhl") -> Envelope:
    data = {"order_id": order, "carrier": carrier, "requested_at": datetime.now(UTC)}
    return Envelope.new("shipment.requested", data, key=order)


class Acks:
    """A share consumer's acknowledgements, as the chain hands them over."""

    def __init__(self) -> None:
        self.given: dict[int, str] = {}
        self.commits = 0

    def acknowledge_offset(self, topic: str, partition: int, offset: int, ack_type: Any) -> None:
        self.given[offset] = ack_type

    def commit_async(self) -> None:
        self.commits += 1


class Worker:
    """``topology``'s share chain on an in-memory producer, fed records by hand."""

    def __init__(self, topology: Topology) -> None:
        self.cluster = MemoryCluster()
        self.acks = Acks()
        self.stats = Stats()
        attempt = Attempt(topology, CODEC, None, lambda: 1_000.0)
        self.head = share_chain(
            topology,
            attempt,
            self.acks,
            sink=OutputSink(self.cluster.producer({})),
            stats=self.stats,
            log=get_logger("test"),
            clock=lambda: 1_000.0,
            accept=ACCEPT,
            release=RELEASE,
        )
        self.offset = 0

    def deliver(self, value: bytes | None, delivery: int = 1, offset: int | None = None) -> str:
        at = self.offset if offset is None else offset
        self.offset = max(self.offset, at + 1)
        record = Record("shipments", 0, at, None, b"k", value, [])
        record.delivery_count = delivery
        self.head.submit(record)
        self.head.poll()
        return self.acks.given[at]

    def written(self, topic: str) -> list[Any]:
        return self.cluster.records(topic)


def flaky_topology(**options: Any) -> Topology:
    def book(env: Envelope, ctx: ProcessorContext) -> Envelope:
        if env.data["carrier"] == "nowhere":
            raise RuntimeError("no carrier")
        return env.follow("shipment.booked", dict(env.data))

    b = TopologyBuilder("labels", consumption="share", **options)
    b.source("shipments", type="shipment.requested", version=1).process(book, name="book").to(
        "booked", type="shipment.booked", version=1
    )
    return b.build()


def test_a_record_is_accepted_once_its_output_is_written() -> None:
    w = Worker(flaky_topology())
    assert w.deliver(CODEC.encode(shipment("o-1"))[0]) == ACCEPT
    assert len(w.written("booked")) == 1
    assert w.acks.commits == 1


def test_a_failing_record_is_released_until_its_last_delivery_then_dead_lettered() -> None:
    w = Worker(flaky_topology(deliveries=3))
    value = CODEC.encode(shipment("o-2", carrier="nowhere"))[0]
    assert [w.deliver(value, delivery=n, offset=0) for n in (1, 2)] == [RELEASE, RELEASE]
    assert w.written("labels-shipments-dlq") == []
    assert w.deliver(value, delivery=3, offset=0) == ACCEPT
    (dead,) = w.written("labels-shipments-dlq")
    info = parse_failure_headers(dead.headers)
    assert (info.error_type, info.attempts, info.step) == ("RuntimeError", 3, "book")
    assert dead.value == value  # the record as read
    assert w.written("booked") == []


def test_bad_input_is_dead_lettered_at_its_first_delivery() -> None:
    w = Worker(flaky_topology())
    assert w.deliver(b"\x00garbage") == ACCEPT
    (dead,) = w.written("labels-shipments-dlq")
    assert parse_failure_headers(dead.headers).stage.value == "decode"


def test_a_skip_policy_accepts_the_record_and_writes_nothing() -> None:
    w = Worker(flaky_topology(on_error="skip"))
    assert w.deliver(CODEC.encode(shipment("o-3", carrier="nowhere"))[0]) == ACCEPT
    assert w.written("booked") == [] and w.written("labels-shipments-dlq") == []
    assert w.stats.skipped == 1


def test_a_share_group_takes_stateless_topologies_only() -> None:
    b = TopologyBuilder("x", consumption="share", processing_guarantee="exactly_once", retry="1s")
    b.source("orders", type="order.placed", version=2).dedup(ttl=60).to(
        "out", type="order.placed", version=2
    )
    with pytest.raises(TopologyValidationError) as raised:
        b.build()
    problems = "\n".join(raised.value.problems)
    assert "share groups run stateless topologies only: 'dedup' keep(s) state by key" in problems
    assert "exactly-once needs consumption='group'" in problems
    assert "retry by delivering a record again (deliveries=N)" in problems


def test_streams_run_share_turns_a_stateless_topology_into_a_share_group_one() -> None:
    orders = load_topology(example_path("orders"))
    shared = orders.shared(deliveries=5)
    assert (shared.consumption, shared.deliveries) == ("share", 5)
    assert orders.consumption == "group"
    with pytest.raises(TopologyValidationError, match="keep\\(s\\) state by key"):
        load_topology(example_path("enrich")).shared()
