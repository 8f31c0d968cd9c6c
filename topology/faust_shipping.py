"""A Faust app in a Streams system: accepted orders in, shipment requests out.

Its agent reads the ``order.accepted`` v1 envelopes that ``topology/orders.py`` writes to
``<orders app>-accepted`` (as records generated from the schema) and sends one
``shipment.requested`` v1 envelope per order, following it (same correlation id,
causation id = the order's id, same key), to a topic that ``topology/shipping.py`` reads.
Records that are not ``order.accepted`` envelopes go to ``<app>-<input>-dlq``.

Run it with Faust's own command line (settings from the environment)::

    KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 FAUST_SHIPPING_INPUT=orders-accepted \\
    FAUST_SHIPPING_OUTPUT=shipments python topology/faust_shipping.py worker -l info

``FAUST_SHIPPING_APP_ID`` (default ``faust-shipping``) names the app (its consumer group
and its DLQ). Before the worker starts, the output topic (with the input's partition count)
and the DLQ are created when missing: the broker may not create topics on first use.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import faust

from streams.cluster import admin_client, create_topic, partition_count
from streams.faust import EnvelopeSchema, ensure_dead_letter_topic, envelope_topic, follow
from streams.schemas import default_catalog

CARRIERS = ("dhl", "ups", "postnl")


def carrier_for(key: str | None) -> str:
    """The same carrier for every order of a customer (the key): one parcel route each."""
    return CARRIERS[sum((key or "").encode()) % len(CARRIERS)]


def make_app(
    *,
    app_id: str = "faust-shipping",
    bootstrap: str = "127.0.0.1:9092",
    input: str = "orders-accepted",
    output: str = "shipments",
) -> faust.App:
    catalog = default_catalog()
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",  # aiokafka: it keeps headers (confluent:// drops them)
        store="memory://",
        web_enabled=False,
        topic_allow_declare=False,  # the topics are made beforehand (see ensure_topics)
    )
    orders = envelope_topic(app, input, EnvelopeSchema(catalog, "order.accepted", as_record=True))
    shipments_schema = EnvelopeSchema(catalog, "shipment.requested", as_record=True)
    shipments = envelope_topic(app, output, shipments_schema)
    ShipmentRequested = shipments_schema.record  # noqa: N806 - a class
    assert ShipmentRequested is not None

    @app.agent(orders)
    async def ship(stream: Any) -> AsyncIterator[Any]:
        async for order in stream:
            request = ShipmentRequested(
                order_id=order.order_id,
                carrier=carrier_for(order.envelope.key),
                requested_at=order.accepted_at,
            )
            reply = follow(order, request)
            await shipments.send(value=reply)
            yield reply

    return app


def ensure_topics(*, app_id: str, bootstrap: str, input: str, output: str) -> None:
    """Create the output topic (as many partitions as the input) and the DLQ if missing."""
    admin = admin_client(bootstrap)
    create_topic(admin, output, partition_count(admin, input), exist_ok=True)
    ensure_dead_letter_topic(bootstrap, app_id, input)


def settings_from_environment() -> dict[str, str]:
    return {
        "app_id": os.environ.get("FAUST_SHIPPING_APP_ID", "faust-shipping"),
        "bootstrap": os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
        "input": os.environ.get("FAUST_SHIPPING_INPUT", "orders-accepted"),
        "output": os.environ.get("FAUST_SHIPPING_OUTPUT", "shipments"),
    }


if __name__ == "__main__":
    settings = settings_from_environment()
    ensure_topics(**settings)
    make_app(**settings).main()
