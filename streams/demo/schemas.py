"""The schema step of the demo: one record written as v1, read back through Kafka as v2.

Encodes an ``order.placed`` v1 envelope with the example catalog (``schemas/``, shipped
in ``streams.examples``), sends it through a 1-partition topic, decodes it as v2 (the
``currency`` field comes from v2's default) and runs the compatibility gate of
``streams schemas check`` over the catalog. Blocks on the broker for a produce and a read
(30 s at most); raises RuntimeError when the record does not come back as promised.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer

from streams.cluster import admin_client, create_topic
from streams.codec.avro import AvroCodec
from streams.demo.context import DemoContext
from streams.envelope import Envelope
from streams.examples import example_schemas
from streams.schemas import SchemaCatalog, check_catalog


def step_schemas(ctx: DemoContext) -> None:
    """Encode ``order.placed`` v1, send it through a topic, decode it as v2."""
    catalog = SchemaCatalog.load(example_schemas())
    codec = AvroCodec(catalog)
    topic = ctx.topic("orders-v1")
    create_topic(admin_client(ctx.bootstrap), topic, partitions=1)
    placed = Envelope.new(
        "order.placed",
        {
            "order_id": "o-42",
            "customer_id": "c-7",
            "items": [{"sku": "tea", "quantity": 2, "unit_price_cents": 450}],
            "total_cents": 900,
        },
        version=1,
        key="o-42",
        source="demo-shop",
    )
    value, headers = codec.encode(placed)
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all"})
    producer.produce(topic, key=placed.key, value=value, headers=list(headers))
    producer.flush(30)

    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"demo-schemas-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    msg = None
    while msg is None and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is not None:
            msg = None
    consumer.close()
    if msg is None or msg.value() is None:
        raise RuntimeError(f"demo: the order.placed record did not come back from {topic}")

    as_v2 = codec.decode(msg.value(), msg.headers(), version=2)
    if as_v2.data.get("currency") != "EUR" or as_v2.id != placed.id:
        raise RuntimeError(f"demo: v1 record read as v2 gave {as_v2.data}")
    versions = sum(len(catalog.versions(t)) for t in catalog.types())
    broken = check_catalog(catalog)
    gate = "compatible" if not broken else f"{len(broken)} incompatibilities"
    ctx.say(
        "schema evolution",
        f"an order.placed v1 record ({len(value)} B) through {topic}, read as v2: "
        f"currency={as_v2.data['currency']!r} from v2's default; "
        f"`streams schemas check`: {len(catalog.types())} types, {versions} versions, {gate}",
    )
