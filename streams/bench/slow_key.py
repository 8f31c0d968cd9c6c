"""The bench's slow key: one customer whose service call never comes back in time.

Reads ``order.placed`` (as v2) from ``input``; an async step waits ``slow_s`` (default an
hour) for the customer ``slow`` and not at all for the others, then passes the order on to
``<app>-out``, with ``concurrency`` records in flight (default 64). Orders of ``slow``
queue behind its first one: what the instance holds of them is bounded
(``buffered_per_partition``), however many the topic has.

    streams run streams/bench/slow_key.py --set input=orders
"""

from __future__ import annotations

import asyncio

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned

SLOW = "slow"


def build(
    app_id: str = "slow-key", input: str = "orders", slow_s: str = "3600", concurrency: str = "64"
) -> Topology:
    wait_s = float(slow_s)

    async def call_service(env: Envelope) -> Envelope:
        if env.key == SLOW:
            await asyncio.sleep(wait_s)
        return env

    builder = TopologyBuilder(app_id, concurrency=int(concurrency))
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    orders.map(call_service).to(owned("out"), type="order.placed", version=2)
    return builder.build()
