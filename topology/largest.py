"""Each customer's largest order per minute, written once when the minute closes: final
values after a rekey (the worked example of ``emit="final"`` in the windows guide).

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``), keyed by anything
(here: by order id, as a checkout service writes them); rekeys each order by customer,
through a repartition topic (``streams describe`` names it), so each customer's orders
meet on one partition; keeps the largest of each customer's orders per 1-minute window of
event time in the store ``largest``; when stream time passes a window's end plus ``grace``
seconds (default 30), writes that order once to ``<app>-largest``. An order that arrives
after its window closed goes to ``<app>-late-orders``.

Why the grace: stream time is per partition of the aggregation, here a partition of the
repartition topic, which interleaves orders from every input partition. One input
partition read behind another (a slow instance, a restart) sends its orders into the
repartition topic after later ones from the others: each input partition is in order,
and yet the aggregation sees them out of order. The grace is how far behind a partition
may fall before its orders count as late.

    streams run topology/largest.py --app-id largest --set input=orders
"""

from __future__ import annotations

from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, Update, owned, tumbling

WINDOW = 60


def customer(order: Envelope) -> str:
    return str(order.data["customer_id"])


def larger(largest: dict[str, Any], order: dict[str, Any]) -> dict[str, Any]:
    """The larger of two orders (the earlier one on a tie)."""
    return order if order["total_cents"] > largest["total_cents"] else largest


def largest_order(update: Update) -> Envelope:
    """The window's largest order, once the window closed (``update.final``)."""
    return Envelope.new("order.placed", update.value, version=2, key=update.key, source="largest")


def build(
    app_id: str = "largest", input: str = "orders", grace: str = "30", backend: str = "rocksdb"
) -> Topology:
    builder = TopologyBuilder(app_id, description="each customer's largest order per minute")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    per_minute = (
        orders.rekey(customer, name="by-customer")
        .window(tumbling(WINDOW, grace=float(grace)))
        .reduce(
            larger, type="order.placed", version=2, emit="final", backend=backend, name="largest"
        )
    )
    per_minute.to_stream(largest_order, name="to-largest").to(
        owned("largest"), type="order.placed", version=2, name="largest-out"
    )
    per_minute.late().to(owned("late-orders"), type="order.placed", version=2, name="late-out")
    return builder.build()
