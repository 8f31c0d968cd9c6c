"""Revenue per customer per minute: a tumbling window, final results only.

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``, keyed by customer);
sums each customer's orders per 1-minute window of event time (the envelope's ``time``),
accepting orders up to ``grace`` seconds (default 10) out of order; when stream time
passes a window's end plus the grace, writes one ``customer.revenue`` v1 per customer and
window to ``<app>-revenue``. An order later than that goes to ``<app>-late-orders``. The
running sums live in the changelog-backed RocksDB store ``revenue``.

    streams run topology/revenue.py --app-id revenue --set input=orders
"""

from __future__ import annotations

from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, Update, owned, tumbling

WINDOW = 60


def no_revenue() -> dict[str, Any]:
    return {
        "customer_id": "",
        "window_start_ms": 0,
        "window_end_ms": 0,
        "orders": 0,
        "revenue_cents": 0,
        "currency": "EUR",
    }


def add_order(total: dict[str, Any], order: Envelope) -> dict[str, Any]:
    d = order.data
    return {
        **total,
        "orders": total["orders"] + 1,
        "revenue_cents": total["revenue_cents"] + d["total_cents"],
        "currency": d["currency"],
    }


def revenue(update: Update) -> Envelope:
    window = update.window
    assert window is not None  # a windowed table's updates have one
    data = {
        **update.value,
        "customer_id": update.key,
        "window_start_ms": window.start_ms,
        "window_end_ms": window.end_ms,
    }
    return Envelope.new("customer.revenue", data, key=update.key, source="revenue")


def build(
    app_id: str = "revenue", input: str = "orders", grace: str = "10", backend: str = "rocksdb"
) -> Topology:
    builder = TopologyBuilder(app_id, description="revenue per customer per minute")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    per_minute = orders.window(tumbling(WINDOW, grace=float(grace))).aggregate(
        no_revenue,
        add_order,
        type="customer.revenue",
        version=1,
        emit="final",
        backend=backend,
        name="revenue",
    )
    per_minute.to_stream(revenue, name="to-revenue").to(
        owned("revenue"), type="customer.revenue", version=1, name="revenue-out"
    )
    per_minute.late().to(owned("late-orders"), type="order.placed", version=2, name="late-out")
    return builder.build()
