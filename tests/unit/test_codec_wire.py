"""The wire format as the README documents it, exercised with plain fastavro and the files.

Nothing here decodes through Streams: this is what a client in another codebase does.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def avsc(relative: str) -> Any:
    return fastavro.parse_schema(json.loads((SCHEMAS / relative).read_text()))


def test_plain_fastavro_decodes_our_bytes() -> None:
    codec = AvroCodec(SchemaCatalog.load(SCHEMAS))
    env = Envelope.new(
        "order.placed",
        {
            "order_id": "o-9",
            "customer_id": "c-1",
            "items": [{"sku": "jam", "quantity": 1, "unit_price_cents": 399}],
            "total_cents": 399,
            "currency": "GBP",
        },
        version=2,
        key="o-9",
        source="shop",
    )
    value, headers = codec.encode(env)
    text = {k: v.decode() for k, v in headers}

    # 1. the headers are the metadata, CloudEvents binary mode, UTF-8 text
    assert text["ce_specversion"] == "1.0"
    assert text["content-type"] == "application/avro"
    assert (text["ce_id"], text["ce_type"], text["ce_dataversion"]) == (env.id, env.type, "2")
    assert (text["ce_source"], text["ce_partitionkey"]) == ("shop", "o-9")
    assert text["ce_correlationid"] == env.correlation_id and "ce_causationid" not in text
    assert text["ce_dataschema"] == "schemas/order.placed/v2.avsc"
    assert datetime.fromisoformat(text["ce_time"]) == env.time
    # 2. the value is the schemaless Avro of schemas/<ce_type>/v<ce_dataversion>.avsc
    schema = avsc(f"{text['ce_type']}/v{text['ce_dataversion']}.avsc")
    assert fastavro.schemaless_reader(io.BytesIO(value), schema, None) == env.data


def test_our_codec_decodes_a_record_written_with_plain_fastavro() -> None:
    payload = io.BytesIO()
    fastavro.schemaless_writer(
        payload,
        avsc("order.rejected/v1.avsc"),
        {"order_id": "o-2", "reason": "OUT_OF_STOCK", "detail": None},
    )
    headers = [
        ("ce_specversion", b"1.0"),
        ("ce_id", b"evt-1"),
        ("ce_source", b"another-service"),
        ("ce_type", b"order.rejected"),
        ("ce_time", b"2026-01-02T03:04:05.678901Z"),
        ("content-type", b"application/avro"),
        ("ce_dataversion", b"1"),
        ("ce_partitionkey", b"o-2"),
        ("ce_correlationid", b"corr-1"),
    ]
    env = AvroCodec(SchemaCatalog.load(SCHEMAS)).decode(payload.getvalue(), headers)
    assert (env.id, env.source, env.key) == ("evt-1", "another-service", "o-2")
    assert env.time == datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert (env.correlation_id, env.causation_id) == ("corr-1", None)
    assert env.data == {"order_id": "o-2", "reason": "OUT_OF_STOCK", "detail": None}


def test_records_of_the_earlier_format_are_read_too() -> None:
    """The value holding schemas/envelope.avsc (the format before binary mode)."""
    payload = io.BytesIO()
    fastavro.schemaless_writer(
        payload,
        avsc("order.rejected/v1.avsc"),
        {"order_id": "o-2", "reason": "OUT_OF_STOCK", "detail": None},
    )
    value = io.BytesIO()
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    fastavro.schemaless_writer(
        value,
        avsc("envelope.avsc"),
        {
            "id": "evt-1",
            "type": "order.rejected",
            "version": 1,
            "time": when,
            "source": "another-service",
            "key": "o-2",
            "correlation_id": "corr-1",
            "causation_id": None,
            "data": payload.getvalue(),
        },
    )
    headers = [("ce_id", b"evt-1"), ("ce_type", b"order.rejected"), ("ce_dataversion", b"1")]
    env = AvroCodec(SchemaCatalog.load(SCHEMAS)).decode(value.getvalue(), headers)
    assert (env.id, env.time, env.key) == ("evt-1", when, "o-2")
    assert env.correlation_id == "corr-1"
    assert env.data == {"order_id": "o-2", "reason": "OUT_OF_STOCK", "detail": None}
