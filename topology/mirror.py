"""The smallest useful topology: copy placed orders to ``<app>-mirror``, in order.

Reads ``order.placed`` (as v2) from ``input`` and writes each envelope unchanged to the
owned topic ``<app>-mirror``, keyed as it came. Per key, the mirror shows the input's
order; the runtime's integration tests use it to check ordering and delivery.

    streams run topology/mirror.py --app-id mirror --set input=orders
"""

from __future__ import annotations

from streams.topology import Topology, TopologyBuilder, owned


def build(app_id: str = "mirror", input: str = "orders") -> Topology:
    builder = TopologyBuilder(app_id, description="copy placed orders, in order")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    orders.to(owned("mirror"), type="order.placed", version=2, name="mirror")
    return builder.build()
