"""Shipping: books the shipments the Faust example (``topology/faust_shipping.py``) requests.

Reads ``shipment.requested`` v1 from ``input`` (default ``shipments``) and writes one
``shipment.booked`` v1 per request to ``<app>-booked``, following it (same correlation
id, causation id = the request's id) and keyed as it was.

    streams run topology/shipping.py --app-id shipping --set input=shipments
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned


def book(env: Envelope) -> Envelope:
    return env.follow("shipment.booked", dict(env.data))


def build(app_id: str = "shipping", input: str = "shipments") -> Topology:
    builder = TopologyBuilder(app_id, description="book requested shipments")
    requests = builder.source(input, type="shipment.requested", version=1, name="requests")
    requests.map(book, name="book").to(owned("booked"), type="shipment.booked", version=1)
    return builder.build()
