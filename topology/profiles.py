"""Each order with its customer's latest profile: a stream-table join.

Reads ``customer.profile`` v1 from the compacted topic ``customers`` (keyed by customer
id) into the table ``profiles`` (each customer's latest profile; a record without a value
deletes one), and ``order.placed`` (as v2) from ``input`` (keyed by customer id too, with
as many partitions: co-partitioned). Each order goes on as ``order.enriched`` v1 with the
tier and credit limit its customer's profile says now, to ``<app>-enriched``; an order
whose customer has no profile gets tier ``unknown`` and no credit.

    streams run topology/profiles.py --app-id pricing --set input=orders --set customers=customers
"""

from __future__ import annotations

from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned


def with_profile(order: Envelope, profile: dict[str, Any] | None) -> Envelope:
    tier = profile["tier"] if profile else "unknown"
    limit = profile["limit_cents"] if profile else 0
    data = {**order.data, "tier": tier, "limit_cents": limit}
    return order.follow("order.enriched", data, version=1)


def build(
    app_id: str = "profiles",
    input: str = "orders",
    customers: str = "customers",
    backend: str = "rocksdb",
) -> Topology:
    builder = TopologyBuilder(app_id, description="each order with its customer's profile")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    profiles = builder.table(
        customers, type="customer.profile", version=1, name="profiles", backend=backend
    )
    orders.left_join(profiles, with_profile, name="with-profile").to(
        owned("enriched"), type="order.enriched", version=1, name="enriched"
    )
    return builder.build()
