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

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


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

    # 1. the value is the schemaless Avro of schemas/envelope.avsc
    outer = fastavro.schemaless_reader(io.BytesIO(value), avsc("envelope.avsc"), None)
    assert isinstance(outer, dict)
    assert outer["type"] == "order.placed"
    assert outer["version"] == 2
    assert outer["id"] == env.id
    assert outer["key"] == "o-9"
    assert outer["source"] == "shop"
    assert outer["time"] == env.time
    # 2. its `data` is the schemaless Avro of schemas/<type>/v<version>.avsc
    payload_schema = avsc(f"{outer['type']}/v{outer['version']}.avsc")
    assert fastavro.schemaless_reader(io.BytesIO(outer["data"]), payload_schema, None) == env.data
    # 3. headers carry what routing needs, as UTF-8 text
    text = {k: v.decode() for k, v in headers}
    assert text == {"ce_id": env.id, "ce_type": env.type, "ce_dataversion": "2"}


def test_our_codec_decodes_bytes_written_with_plain_fastavro() -> None:
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
    assert env.id == "evt-1"
    assert env.time == when
    assert env.correlation_id == "corr-1"
    assert env.data == {"order_id": "o-2", "reason": "OUT_OF_STOCK", "detail": None}
