"""Share groups (work queues) in the TestDriver, which runs a share group's worker on an
in-memory share consumer: which topologies may run on one, and what happens to each record
(accepted once its outputs are written, released for another delivery, or dead-lettered
after ``deliveries``, at once for bad input)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.testing import TestDriver
from streams.topology import (
    ProcessorContext,
    TopologyBuilder,
    TopologyValidationError,
    load_topology,
)


def shipment(order: str, carrier: str = "dhl") -> Envelope:
    data = {"order_id": order, "carrier": carrier, "requested_at": datetime.now(UTC)}
    return Envelope.new("shipment.requested", data, key=order)


def labels(**params: str) -> TestDriver:
    """``topology/labels.py`` on the driver: a share group's worker, in memory."""
    return TestDriver(load_topology(example_path("labels"), params={"input": "in", **params}))


def booked(d: TestDriver) -> list[str]:
    return [e.data["order_id"] for e in d.read("labels-booked")]


def test_each_request_is_booked_once_a_flaky_one_on_its_third_delivery() -> None:
    with labels() as d:
        d.pipe("in", [shipment("o-1"), shipment("o-100"), shipment("o-2")])
        # o-100 timed out on deliveries 1 and 2 (released), and was booked on the third
        assert sorted(booked(d)) == ["o-1", "o-100", "o-2"]
        assert d.dead_letters == []


def test_a_record_that_always_fails_is_dead_lettered_after_its_deliveries() -> None:
    with labels(deliveries="4") as d:
        refused = shipment("o-3", carrier="nowhere")
        d.pipe("in", refused)
        (dead,) = d.dead_letters
        info = parse_failure_headers(dead.headers)
        assert (info.error_type, info.attempts, info.step) == ("CarrierRefused", 4, "book")
        assert dead.value == d.codec.encode(refused)[0]  # the record as read
        assert booked(d) == []


def test_bad_input_is_dead_lettered_at_its_first_delivery() -> None:
    with labels() as d:
        d.pipe_raw("in", b"\x00garbage")
        (dead,) = d.dead_letters
        info = parse_failure_headers(dead.headers)
        assert (info.stage.value, info.attempts) == ("decode", 1)


def test_a_skip_policy_accepts_the_record_and_writes_nothing() -> None:
    def book(env: Envelope, ctx: ProcessorContext) -> Envelope:
        raise RuntimeError(f"not today (delivery {ctx.record.delivery_count})")

    b = TopologyBuilder("labels", consumption="share", on_error="skip")
    b.source("in", type="shipment.requested", version=1).process(book, name="book").to(
        "out", type="shipment.booked", version=1
    )
    with TestDriver(b.build()) as d:
        d.pipe("in", shipment("o-4"))
        assert d.read("out") == [] and d.dead_letters == []
        (skipped,) = d.skipped
        assert str(skipped.error) == "not today (delivery 1)"


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
