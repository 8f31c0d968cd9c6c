"""Revenue per customer per minute (a tumbling window, final results only), and each
payment with its order (a join within a window).

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``, keyed by customer);
sums each customer's orders per 1-minute window of event time (the envelope's ``time``),
accepting orders up to ``grace`` seconds (default 10) out of order; when stream time
passes a window's end plus the grace, writes one ``customer.revenue`` v1 per customer and
window to ``<app>-revenue``. An order later than that goes to ``<app>-late-orders``. The
running sums live in the changelog-backed RocksDB store ``revenue``.

With ``payments`` (a topic of ``payment.captured`` v1 keyed by order id), each payment is
joined with its order: the orders, rekeyed by order id, reach the join through the
repartition topic ``<app>-with-order-repartition`` (created with as many partitions as
the widest input: the payments must have as many), and a payment and an order of the same
id at most an hour apart (event time) make one ``payment.enriched`` v1 (the payment with
its order's customer and total), to ``<app>-paid``, whichever of the two comes first.

    streams run topology/revenue.py --app-id revenue --set input=orders
    streams run topology/revenue.py --app-id revenue --set input=orders --set payments=payments
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


def order_id(order: Envelope) -> str:
    return str(order.data["order_id"])


def with_order(payment: Envelope, order: Envelope) -> Envelope:
    p = payment.data
    data = {
        "payment_id": p["payment_id"],
        "order_id": p["order_id"],
        "customer_id": order.data["customer_id"],
        "amount_cents": p["amount_cents"],
        "currency": p["currency"],
        "order_total_cents": order.data["total_cents"],
    }
    return payment.follow("payment.enriched", data, version=1)


def build(
    app_id: str = "revenue",
    input: str = "orders",
    grace: str = "10",
    backend: str = "rocksdb",
    payments: str = "",
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
    if payments:
        by_id = orders.rekey(order_id, name="by-order-id")  # through a repartition topic
        paid = builder.source(payments, type="payment.captured", version=1, name="payments")
        paid.join_within(
            by_id, with_order, within=3600, grace=60, name="with-order", backend=backend
        ).to(owned("paid"), type="payment.enriched", version=1, name="paid-out")
    return builder.build()
