"""A digest of each customer's orders, written every minute by a timer.

Reads ``order.placed`` (as v2) from ``input`` (default ``orders``, keyed by customer). A
processor adds each order to its customer's running total in the store ``totals``; a
timer (``ctx.schedule``) runs when the partition's event time crosses a minute (``time``:
``stream``, the default) or the clock does (``wall``), writes one ``customer.revenue`` v1
per customer with what it ordered since the last digest (``window_start_ms``: its first
order's time; ``window_end_ms``: the timer's) to ``<app>-digests``, and empties the store.
The timer's writes and deletes commit with the partition's offsets: with exactly-once,
every order is in exactly one committed digest.

    streams run topology/digest.py --app-id digest --set input=orders
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.topology import ProcessorContext, Topology, TopologyBuilder, owned

EVERY = 60  # seconds


class Digest:
    """Totals per customer in the store, as ``orders,cents,first_ms,currency``."""

    def __init__(self, time: str = "stream") -> None:
        self.time = time

    def init(self, ctx: ProcessorContext) -> None:
        ctx.schedule(EVERY, self.write, time=self.time)

    def process(self, order: Envelope, ctx: ProcessorContext) -> None:
        totals, key, d = ctx.store("totals"), order.key or "", order.data
        raw = totals.get(key)
        orders, cents, first = (0, 0, order.time_ms) if raw is None else _parse(raw)
        totals.set(key, f"{orders + 1},{cents + d['total_cents']},{first},{d['currency']}".encode())

    def write(self, now_ms: int, ctx: ProcessorContext) -> list[Envelope]:
        totals, out = ctx.store("totals"), []
        for key, raw in sorted(totals.items()):
            orders, cents, first = _parse(raw)
            customer = key.decode()
            data = {
                "customer_id": customer,
                "window_start_ms": first,
                "window_end_ms": now_ms,
                "orders": orders,
                "revenue_cents": cents,
                "currency": raw.decode().rsplit(",", 1)[1],
            }
            out.append(Envelope.new("customer.revenue", data, key=customer, source="digest"))
            totals.delete(key)
        return out


def _parse(raw: bytes) -> tuple[int, int, int]:
    orders, cents, first, _currency = raw.decode().split(",")
    return int(orders), int(cents), int(first)


def build(
    app_id: str = "digest", input: str = "orders", time: str = "stream", backend: str = "rocksdb"
) -> Topology:
    builder = TopologyBuilder(app_id, description="each customer's orders, every minute")
    builder.store("totals", backend=backend)
    orders = builder.source(input, type="order.placed", version=2, name="orders")
    orders.process(Digest(time), name="digest").to(
        owned("digests"), type="customer.revenue", version=1, name="digests-out"
    )
    return builder.build()
