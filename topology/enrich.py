"""Each order once, enriched: dedup on the order id, then the customer's tier and limit.

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``); drops an order whose
``order_id`` was seen in the last 7 days (a shop that sends an order twice: RocksDB store
``once``, changelog-backed); writes ``order.enriched`` v1 (the order plus ``tier`` and
``limit_cents``, following the placed event) to ``<app>-enriched``. The job of section
``throughput`` of ``make bench``.

    streams run topology/enrich.py --app-id pricing --set input=orders
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned

WEEK = 7 * 24 * 3600
# Credit limits by customer tier (as in topology/orders.py): the tier is the customer id's
# last character, so the example needs no lookup service.
LIMIT_CENTS = {"gold": 5_000_000, "silver": 1_000_000, "bronze": 200_000}


def tier_of(customer_id: str) -> str:
    last = customer_id[-1:]
    return "gold" if last in "01" else "silver" if last in "2345" else "bronze"


def order_id(env: Envelope) -> str:
    return str(env.data["order_id"])


def enrich(env: Envelope) -> Envelope:
    d = env.data
    tier = tier_of(d["customer_id"])
    return env.follow(
        "order.enriched", {**d, "tier": tier, "limit_cents": LIMIT_CENTS[tier]}, version=1
    )


def build(app_id: str = "enrich", input: str = "orders", backend: str = "rocksdb") -> Topology:
    builder = TopologyBuilder(app_id, description="each order once, with its customer's tier")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    unique = orders.dedup(ttl=WEEK, by=order_id, backend=backend, name="once")
    unique.map(enrich, name="enrich").to(
        owned("enriched"), type="order.enriched", version=1, name="enriched"
    )
    return builder.build()
