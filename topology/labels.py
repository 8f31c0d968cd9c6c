"""Shipping labels as a work queue: any worker books any shipment, on a share group.

Reads ``shipment.requested`` v1 from ``input`` (default ``shipments``) on a share group
(KIP-932: ``consumption="share"``): each request is independent, so any worker may take
any of them, and more workers book more per second whatever the partition count. Each is
booked with its carrier (``book``: ``work_ms`` of waiting on the carrier, default 0) and
written as ``shipment.booked`` v1 to ``<app>-booked``.

The carrier is unreliable on purpose: one order in a hundred (its id's number a multiple of
100) times out on its first two deliveries and is booked on the third, on whichever worker
gets it; a shipment for the carrier ``nowhere`` is refused every time and goes to
``<app>-<input>-dlq`` after ``deliveries`` (default 3) deliveries.

    streams run topology/labels.py --app-id labels --set input=shipments --instances 3
"""

from __future__ import annotations

import time
from collections.abc import Callable

from streams.envelope import Envelope
from streams.topology import ProcessorContext, Topology, TopologyBuilder, owned


class CarrierTimeout(Exception):  # noqa: N818 - named for what the carrier does
    """The carrier did not answer in time (worth delivering again)."""


class CarrierRefused(Exception):  # noqa: N818
    """The carrier will never book this shipment."""


def flaky(order_id: str) -> bool:
    """One order in a hundred: its number a multiple of 100."""
    number = order_id.rpartition("-")[2]
    return number.isdigit() and int(number) % 100 == 0


def book(work_ms: float) -> Callable[[Envelope, ProcessorContext], Envelope]:
    def book_label(env: Envelope, ctx: ProcessorContext) -> Envelope:
        if work_ms:
            time.sleep(work_ms / 1000)  # waiting on the carrier's API
        d = env.data
        if d["carrier"] == "nowhere":
            raise CarrierRefused(f"no carrier serves {d['order_id']}")
        if flaky(d["order_id"]) and (ctx.record.delivery_count or 1) <= 2:
            raise CarrierTimeout(f"the carrier timed out on {d['order_id']}")
        return env.follow("shipment.booked", dict(d))

    return book_label


def build(
    app_id: str = "labels", input: str = "shipments", work_ms: str = "0", deliveries: str = "3"
) -> Topology:
    builder = TopologyBuilder(
        app_id,
        description="book shipments, any worker any shipment",
        consumption="share",
        deliveries=int(deliveries),
    )
    requests = builder.source(input, type="shipment.requested", version=1, name="requests")
    requests.process(book(float(work_ms)), name="book").to(
        owned("booked"), type="shipment.booked", version=1
    )
    return builder.build()
