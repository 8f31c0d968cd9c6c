"""The order pipeline: validate, enrich, then route to accepted or rejected.

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``); writes
``order.accepted`` v1 to ``<app>-accepted`` and ``order.rejected`` v1 to
``<app>-rejected`` (both owned by the app, created by ``streams run``).

    streams describe topology/orders.py
    streams run topology/orders.py --app-id orders --set input=orders
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned

# Credit limits by customer tier; the tier is the last character of the customer id, so the
# example needs no lookup service and gives the same answer on every run.
LIMIT_CENTS = {"gold": 5_000_000, "silver": 1_000_000, "bronze": 200_000}


def tier_of(customer_id: str) -> str:
    last = customer_id[-1:] if customer_id else ""
    return "gold" if last in "01" else "silver" if last in "2345" else "bronze"


def validate(env: Envelope) -> Envelope:
    """Check the order's own consistency; record the first problem found (None: valid)."""
    d = env.data
    items: list[dict[str, Any]] = d["items"]
    problem: tuple[str, str] | None = None
    if not items:
        problem = ("INVALID", "no items")
    elif any(line["quantity"] <= 0 for line in items):
        problem = ("INVALID", "quantity must be positive")
    elif sum(line["quantity"] * line["unit_price_cents"] for line in items) != d["total_cents"]:
        problem = ("INVALID", "total does not match the lines")
    return env.with_data({**d, "problem": problem})


def enrich(env: Envelope) -> Envelope:
    """Add the customer's tier and credit limit; refuse orders above the limit."""
    d = env.data
    tier = tier_of(d["customer_id"])
    limit = LIMIT_CENTS[tier]
    problem = d["problem"]
    if problem is None and d["total_cents"] > limit:
        problem = ("LIMIT_EXCEEDED", f"{d['total_cents']} cents over the {tier} limit {limit}")
    return env.with_data({**d, "tier": tier, "limit_cents": limit, "problem": problem})


def is_valid(env: Envelope) -> bool:
    return env.data["problem"] is None


def to_accepted(env: Envelope) -> Envelope:
    return env.follow("order.accepted", {"order_id": env.data["order_id"], "accepted_at": env.time})


def to_rejected(env: Envelope) -> Envelope:
    reason, detail = env.data["problem"]
    return env.follow(
        "order.rejected", {"order_id": env.data["order_id"], "reason": reason, "detail": detail}
    )


def build(app_id: str = "orders", input: str = "orders") -> Topology:
    builder = TopologyBuilder(app_id, description="validate, enrich, route orders")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    routes = (
        orders.map(validate).map(enrich).branch(accepted=is_valid, default="rejected", name="route")
    )
    routes["accepted"].map(to_accepted).to(owned("accepted"), type="order.accepted", version=1)
    routes["rejected"].map(to_rejected).to(owned("rejected"), type="order.rejected", version=1)
    return builder.build()


def sample_orders(count: int, *, customers: int = 20, seed: int = 7) -> Iterator[Envelope]:
    """``count`` order.placed v2 envelopes keyed by customer, about 1 in 5 of them bad
    (wrong total, empty, or over the customer's limit). Same seed, same orders."""
    rng = random.Random(seed)
    for i in range(count):
        customer = f"c-{rng.randrange(customers):04d}"
        lines = [
            {
                "sku": f"sku-{rng.randrange(50)}",
                "quantity": rng.randint(1, 5),
                "unit_price_cents": rng.randint(100, 20_000),
            }
            for _ in range(rng.randint(1, 4))
        ]
        total = sum(line["quantity"] * line["unit_price_cents"] for line in lines)
        roll = rng.random()
        if roll < 0.08:
            total += 1  # does not add up
        elif roll < 0.12:
            lines, total = [], 0
        elif roll < 0.2:
            lines[0]["quantity"] = 500  # far over any limit
            total = sum(line["quantity"] * line["unit_price_cents"] for line in lines)
        data = {
            "order_id": f"o-{seed}-{i}",
            "customer_id": customer,
            "items": lines,
            "total_cents": total,
            "currency": "EUR",
        }
        yield Envelope.new("order.placed", data, version=2, key=customer, source="shop")
