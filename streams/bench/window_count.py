"""The bench's window count: placed orders per key per minute, each change passed on.

Reads ``order.placed`` (as v2) from ``input`` and counts each record key's orders per
1-minute tumbling window of event time (the envelope's ``time``; ``grace`` 10 s), in the
changelog-backed store ``per-minute`` (``backend``: rocksdb or memory). With
``emit="updates"`` (the default) every count that changes writes one envelope to
``<app>-counts``, so the output has as many records as the input (the bench watches its
end offsets, as for ``topology/dedup.py``); with ``emit="final"`` one per key and window
when the window closes. The envelope written is the one that caused the change, passed on
as it came (what dedup writes too): the bench measures the window store, not a payload.

    streams run streams/bench/window_count.py --set input=orders
    streams run streams/bench/window_count.py --set input=orders --set emit=final
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, Update, owned, tumbling

WINDOW_S = 60
GRACE_S = 10


def passed_on(update: Update) -> Envelope:
    """The envelope that changed the count (for a final value, the one that closed it)."""
    return update.cause


def build(
    app_id: str = "window-count",
    input: str = "orders",
    emit: str = "updates",
    backend: str = "rocksdb",
) -> Topology:
    builder = TopologyBuilder(app_id, description="placed orders per key per minute")
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    per_minute = orders.window(tumbling(WINDOW_S, grace=GRACE_S)).count(
        emit=emit, backend=backend, name="per-minute"
    )
    per_minute.to_stream(passed_on, name="to-counts").to(
        owned("counts"), type="order.placed", version=2, name="counts-out"
    )
    return builder.build()
