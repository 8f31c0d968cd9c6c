"""Topologies ``replay --through`` must rebuild whole: a join with a table, a rekey into a
window, and a chain read back through an owned topic (``shape``). Each writes one output
per order to ``<app>-out``."""

from __future__ import annotations

from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, Update, owned, tumbling


def tier(order: Envelope) -> str:
    return "gold" if order.data["customer_id"][-1:] in "01" else "other"


def with_profile(order: Envelope, profile: dict[str, Any]) -> Envelope:
    data = {**order.data, "tier": profile["tier"], "limit_cents": profile["limit_cents"]}
    return order.follow("order.enriched", data, version=1)


def no_revenue() -> dict[str, Any]:
    return {"customer_id": "", "window_start_ms": 0, "window_end_ms": 0, "orders": 0,
            "revenue_cents": 0, "currency": ""}  # fmt: skip


def add_order(total: dict[str, Any], order: Envelope) -> dict[str, Any]:
    return {**total, "orders": total["orders"] + 1, "currency": order.data["currency"],
            "revenue_cents": total["revenue_cents"] + order.data["total_cents"]}  # fmt: skip


def revenue(update: Update) -> Envelope:
    assert update.window is not None  # a windowed table's updates have one
    window = update.window
    data = {**update.value, "customer_id": update.key,
            "window_start_ms": window.start_ms, "window_end_ms": window.end_ms}  # fmt: skip
    return update.cause.follow("customer.revenue", data, version=1)


def interrupt(order: Envelope) -> Envelope:
    raise KeyboardInterrupt


def build(
    app_id: str = "through",
    input: str = "orders",
    customers: str = "customers",
    shape: str = "join",
) -> Topology:
    builder = TopologyBuilder(app_id)
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    if shape == "interrupted":  # as Ctrl-C would, at the first order
        orders.map(interrupt, name="interrupt").to(owned("out"), type="order.placed", version=2)
        return builder.build()
    if shape == "rekey-window":
        per_tier = (
            orders.rekey(tier, name="by-tier")
            .window(tumbling(3600))
            .aggregate(no_revenue, add_order, type="customer.revenue", version=1, name="per-tier")
        )
        per_tier.to_stream(revenue, name="updates").to(
            owned("out"), type="customer.revenue", version=1, name="out"
        )
        return builder.build()
    profiles = builder.table(customers, type="customer.profile", version=1, name="profiles")
    if shape == "read-back":
        orders.to(owned("staged"), type="order.placed", version=2, name="stage")
        orders = builder.source(owned("staged"), type="order.placed", version=2, name="staged")
    orders.join(profiles, with_profile, name="with-profile").to(
        owned("out"), type="order.enriched", version=1, name="out"
    )
    return builder.build()
