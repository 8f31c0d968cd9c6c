"""The orders example under the TestDriver: how a user unit-tests a topology."""

from __future__ import annotations

from pathlib import Path

from streams.envelope import Envelope
from streams.testing import TestDriver
from streams.topology import load_topology
from streams.topology.loader import import_file

ORDERS = Path(__file__).resolve().parents[3] / "topology" / "orders.py"


def placed(customer: str, lines: list[tuple[int, int]], total: int | None = None) -> Envelope:
    items = [{"sku": "s", "quantity": q, "unit_price_cents": p} for q, p in lines]
    data = {
        "order_id": f"o-{customer}",
        "customer_id": customer,
        "items": items,
        "total_cents": sum(q * p for q, p in lines) if total is None else total,
        "currency": "EUR",
    }
    return Envelope.new("order.placed", data, version=2, key=customer)


def test_valid_orders_are_accepted_with_the_order_time() -> None:
    order = placed("c-0001", [(2, 500)])
    with TestDriver(load_topology(ORDERS)) as d:
        d.pipe("orders", order)
        (accepted,) = d.read("orders-accepted")
        assert d.read("orders-rejected") == []
    assert accepted.data == {"order_id": "o-c-0001", "accepted_at": order.time}
    assert (accepted.key, accepted.causation_id) == ("c-0001", order.id)
    assert accepted.correlation_id == order.correlation_id


def test_inconsistent_empty_and_over_limit_orders_are_rejected_with_the_reason() -> None:
    with TestDriver(load_topology(ORDERS)) as d:
        d.pipe("orders", placed("c-0002", [(1, 100)], total=99))
        d.pipe("orders", placed("c-0003", []))
        d.pipe("orders", placed("c-0009", [(10, 50_000)]))  # bronze: limit 200_000
        rejected = d.read("orders-rejected")
    assert [(r.data["reason"], r.data["detail"]) for r in rejected] == [
        ("INVALID", "total does not match the lines"),
        ("INVALID", "no items"),
        ("LIMIT_EXCEEDED", "500000 cents over the bronze limit 200000"),
    ]


def test_every_sample_order_is_routed_exactly_once() -> None:
    orders = list(import_file(ORDERS).sample_orders(300))
    with TestDriver(load_topology(ORDERS), partitions=4) as d:
        d.pipe("orders", orders)
        out = d.read("orders-accepted") + d.read("orders-rejected")
    assert sorted(e.data["order_id"] for e in out) == sorted(o.data["order_id"] for o in orders)
    assert 0 < len(d.records("orders-rejected")) < len(orders) // 2
