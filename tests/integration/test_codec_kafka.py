"""Envelopes through a real broker: bytes and headers survive Kafka and decode as promised."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import factories
import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient

from streams.codec import AvroCodec, Codec, MissingHeaderError, peek_type
from streams.codec.confluent import ConfluentAvroCodec
from streams.envelope import Envelope
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
CATALOG = SchemaCatalog.load(SCHEMAS)


def order(i: int, version: int) -> Envelope:
    tea = {"sku": "tea", "quantity": i + 1, "unit_price_cents": 450}
    return factories.order(
        i,
        f"c-{i % 3}",
        key=f"o-{i}",
        items=[tea],
        total_cents=450 * (i + 1),
        version=version,
        currency="CHF",
        source="shop",
    )


def produce(bootstrap: str, topic: str, codec: Codec, envelopes: list[Envelope]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for env in envelopes:
        value, headers = codec.encode(env)
        producer.produce(topic, key=env.key, value=value, headers=list(headers))
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int) -> list[Message]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"codec-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[Message] = []
    deadline = time.monotonic() + 60
    while len(out) < count and time.monotonic() < deadline:
        out.extend(m for m in consumer.consume(100, timeout=1.0) if m.error() is None)
    consumer.close()
    assert len(out) == count, f"read {len(out)} of {count}"
    return out


def test_mixed_versions_through_kafka_read_as_v2(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("codec-orders")
    codec = AvroCodec(CATALOG)
    sent = [order(i, version=1 + i % 2) for i in range(10)]
    produce(kafka_bootstrap, topic, codec, sent)

    got = consume(kafka_bootstrap, topic, len(sent))
    by_id = {e.id: e for e in sent}
    for msg in got:
        headers = msg.headers()
        found = peek_type(headers)  # routing information without decoding the value
        assert found is not None
        assert found[0] == "order.placed"
        env = codec.decode(msg.value(), headers, version=2)
        original = by_id[env.id]
        assert msg.key() == original.key.encode()  # type: ignore[union-attr]
        assert env.version == 2
        assert found[1] == original.version
        expected_currency = "CHF" if original.version == 2 else "EUR"
        assert env.data == {**original.data, "currency": expected_currency}
        assert (env.time, env.source, env.correlation_id) == (
            original.time,
            original.source,
            original.correlation_id,
        )


def test_a_record_without_headers_is_refused(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("codec-noheaders")
    codec = AvroCodec(CATALOG)
    value, _ = codec.encode(order(1, version=1))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    (msg,) = consume(kafka_bootstrap, topic, 1)
    assert msg.headers() is None
    with pytest.raises(MissingHeaderError):
        codec.decode(msg.value(), msg.headers())


def test_confluent_format_through_kafka(
    kafka_bootstrap: str, make_topic: Callable[..., str]
) -> None:
    topic = make_topic("codec-confluent")
    registry = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})
    codec = ConfluentAvroCodec(CATALOG, registry)
    sent = [order(i, version=1) for i in range(5)]
    produce(kafka_bootstrap, topic, codec, sent)
    got = sorted(
        (codec.decode(m.value(), m.headers()) for m in consume(kafka_bootstrap, topic, 5)),
        key=lambda e: e.id,
    )
    assert got == sorted(sent, key=lambda e: e.id)
