"""Each order enriched by a call to a customer service: an async step, many calls in flight.

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``); asks a customer service
for the customer's tier (``customer_tier``, a stand-in that answers after ``latency_ms``
on average, default 20 ms, between half and one and a half times that, as a web service
would); writes ``order.enriched`` v1 (the order plus
``tier`` and ``limit_cents``) to ``<app>-enriched``. With ``concurrency`` (default 64) that
many orders await the service at once, one at a time per customer (the record key), so a
customer's orders come out in the order they came in; offsets commit only past orders
that finished in order. At 20 ms a call, one at a time would cap an instance at 50
orders a second.

    streams run topology/lookup.py --app-id tiers --set input=orders
    streams run topology/lookup.py --app-id tiers --set input=orders --concurrency 1
"""

from __future__ import annotations

import asyncio
import zlib

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned

# Credit limits by customer tier (as in topology/enrich.py).
LIMIT_CENTS = {"gold": 5_000_000, "silver": 1_000_000, "bronze": 200_000}


async def customer_tier(customer_id: str, order_id: str, latency_s: float) -> str:
    """The customer service, standing in for an HTTP call: the tier, after ``latency_s``
    give or take a half (the same for an order each time it is asked)."""
    await asyncio.sleep(latency_s * (0.5 + zlib.crc32(order_id.encode()) % 101 / 100))
    last = customer_id[-1:]
    return "gold" if last in "01" else "silver" if last in "2345" else "bronze"


def build(
    app_id: str = "lookup",
    input: str = "orders",
    latency_ms: str = "20",
    concurrency: str = "64",
    ordering: str = "key",
) -> Topology:
    latency_s = int(latency_ms) / 1000

    async def enrich(env: Envelope) -> Envelope:
        d = env.data
        tier = await customer_tier(d["customer_id"], d["order_id"], latency_s)
        return env.follow(
            "order.enriched", {**d, "tier": tier, "limit_cents": LIMIT_CENTS[tier]}, version=1
        )

    builder = TopologyBuilder(
        app_id,
        description="each order with its customer's tier, from a service call",
        concurrency=int(concurrency),
        ordering=ordering,
    )
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    orders.map(enrich, name="enrich").to(
        owned("enriched"), type="order.enriched", version=1, name="enriched"
    )
    return builder.build()
