"""Each placed order once: drop events whose envelope id was seen in the last 7 days.

Reads ``order.placed`` (as v2) from ``input`` and writes each event the first time its
envelope id is seen within ``ttl`` seconds (default 7 days) to ``<app>-unique``; the ids
seen live in the ``dedup`` store (``backend``: rocksdb or memory), backed by the compacted
changelog ``<app>-dedup-changelog``, so a restart or a rebalance does not forget them.

    streams run topology/dedup.py --app-id billing --set input=orders
    streams run topology/dedup.py --set input=orders --guarantee exactly_once
"""

from __future__ import annotations

from streams.topology import Topology, TopologyBuilder, owned

WEEK = 7 * 24 * 3600


def build(
    app_id: str = "dedup", input: str = "orders", ttl: str = str(WEEK), backend: str = "rocksdb"
) -> Topology:
    builder = TopologyBuilder(app_id, description="each placed order once per window")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    unique = orders.dedup(ttl=float(ttl), backend=backend)
    unique.to(owned("unique"), type="order.placed", version=2, name="unique")
    return builder.build()
