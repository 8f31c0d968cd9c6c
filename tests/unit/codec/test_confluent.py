"""The Confluent wire format codec, against confluent-kafka's in-memory mock registry.

``SchemaRegistryClient.new_client({"url": "mock://..."})`` is confluent-kafka's own mock
(same client API, no HTTP). A real registry is not available on these machines.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import given
from hypothesis import strategies as st

from streams.codec import (
    BadHeaderError,
    Codec,
    DecodeError,
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
    RegistryError,
    UnknownSchemaIdError,
)
from streams.codec.confluent import ConfluentAvroCodec
from streams.envelope import Envelope
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
CATALOG = SchemaCatalog.load(SCHEMAS)
ORDER = {
    "order_id": "o-1",
    "customer_id": "c-7",
    "items": [{"sku": "tea", "quantity": 2, "unit_price_cents": 450}],
    "total_cents": 900,
}


def mock_registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


@pytest.fixture
def registry() -> SchemaRegistryClient:
    return mock_registry()


@pytest.fixture
def codec(registry: SchemaRegistryClient) -> ConfluentAvroCodec:
    return ConfluentAvroCodec(CATALOG, registry)


def test_it_is_a_codec(codec: ConfluentAvroCodec) -> None:
    assert isinstance(codec, Codec)


def test_round_trip_and_framing(codec: ConfluentAvroCodec) -> None:
    env = Envelope.new("order.placed", ORDER, key="o-1", source="shop")
    value, headers = codec.encode(env)
    assert value[0] == 0
    assert int.from_bytes(value[1:5], "big") == codec.schema_id("order.placed", 1)
    assert dict(headers)["ce_partitionkey"] == b"o-1"
    assert codec.decode(value, headers) == env


def test_every_metadata_field_survives_the_round_trip(codec: ConfluentAvroCodec) -> None:
    """The headers are the only copy of the metadata in this format."""
    cause = Envelope.new("order.placed", ORDER, key="o-1", source="shop")
    env = cause.follow(
        "order.validated", {"order_id": "o-1", "total_cents": 900, "currency": "EUR"}
    )
    assert env.correlation_id and env.causation_id
    value, headers = codec.encode(env)
    assert codec.decode(value, headers) == env


def test_confluents_own_deserializer_reads_our_values(
    codec: ConfluentAvroCodec, registry: SchemaRegistryClient
) -> None:
    value, _ = codec.encode(Envelope.new("order.placed", {**ORDER, "currency": "CHF"}, version=2))
    ctx = SerializationContext("orders", MessageField.VALUE)
    assert AvroDeserializer(registry)(value, ctx) == {**ORDER, "currency": "CHF"}


def test_versions_get_their_own_ids_and_resolve(codec: ConfluentAvroCodec) -> None:
    assert codec.schema_id("order.placed", 1) != codec.schema_id("order.placed", 2)
    value, headers = codec.encode(Envelope.new("order.placed", ORDER))
    assert codec.decode(value, headers, version=2).data == {**ORDER, "currency": "EUR"}
    value, headers = codec.encode(
        Envelope.new("order.placed", {**ORDER, "currency": "X"}, version=2)
    )
    assert codec.decode(value, headers, version=1).data == ORDER


def test_another_codec_instance_on_the_same_registry_decodes(
    codec: ConfluentAvroCodec, registry: SchemaRegistryClient
) -> None:
    value, headers = codec.encode(Envelope.new("order.placed", ORDER))
    reader = ConfluentAvroCodec(CATALOG, registry, auto_register=False)
    assert reader.decode(value, headers).data == ORDER


def test_a_naive_time_is_taken_as_utc(codec: ConfluentAvroCodec) -> None:
    naive = datetime(2026, 5, 1, 12, 0, 0, 123456)
    env = Envelope(type="order.placed", data=ORDER, time=naive)
    value, headers = codec.encode(env)
    assert codec.decode(value, headers).time == naive.replace(tzinfo=UTC)


def test_bad_input(codec: ConfluentAvroCodec) -> None:
    value, headers = codec.encode(Envelope.new("order.placed", ORDER))
    with pytest.raises(EmptyRecordError):
        codec.decode(b"", headers)
    with pytest.raises(MalformedRecordError, match="magic byte"):
        codec.decode(b"\x01" + value[1:], headers)
    with pytest.raises(MalformedRecordError):
        codec.decode(value[:3], headers)
    with pytest.raises(MalformedRecordError):
        codec.decode(value[:-2], headers)
    with pytest.raises(UnknownSchemaIdError, match="schema id 999"):
        codec.decode(b"\x00" + (999).to_bytes(4, "big") + value[5:], headers)
    with pytest.raises(MissingHeaderError, match="ce_time"):
        codec.decode(value, [(k, v) for k, v in headers if k != "ce_time"])
    with pytest.raises(HeaderMismatchError, match="ce_type"):
        codec.decode(value, [(k, b"order.accepted" if k == "ce_type" else v) for k, v in headers])
    with pytest.raises(BadHeaderError, match="ce_time"):
        codec.decode(value, [(k, b"yesterday" if k == "ce_time" else v) for k, v in headers])


def test_payload_errors_name_the_field(codec: ConfluentAvroCodec) -> None:
    with pytest.raises(EncodeError) as info:
        codec.encode(Envelope.new("order.placed", {**ORDER, "total_cents": "a lot"}))
    assert info.value.field == "total_cents"


def test_an_unreachable_registry_is_not_a_decode_error() -> None:
    # Port 9 on loopback: nothing listens, the connection is refused at once.
    dead = SchemaRegistryClient({"url": "http://127.0.0.1:9", "max.retries": 0})
    codec = ConfluentAvroCodec(CATALOG, dead)
    with pytest.raises(RegistryError) as info:
        codec.encode(Envelope.new("order.placed", ORDER))
    assert not isinstance(info.value, DecodeError)


HEADERS_OK: list[Any] = []


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_decode_errors(value: bytes) -> None:
    codec = _SHARED
    if not HEADERS_OK:
        HEADERS_OK.extend(codec.encode(Envelope.new("order.placed", ORDER))[1])
    with contextlib.suppress(DecodeError):
        codec.decode(value, HEADERS_OK)
    with contextlib.suppress(DecodeError):
        codec.decode(b"\x00\x00\x00\x00\x01" + value, HEADERS_OK)


_SHARED = ConfluentAvroCodec(CATALOG, mock_registry())
