"""The Avro envelope codec: round trips, version resolution, upcasters, and bad input.

Every bad input must surface as a typed ``DecodeError`` (the runtime dead-letters those
without retrying) or an ``EncodeError`` naming the field.
"""

from __future__ import annotations

import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro
import pytest

from streams.codec import (
    AvroCodec,
    Codec,
    DecodeError,
    EmptyRecordError,
    EncodeError,
    HeaderMismatchError,
    MalformedRecordError,
    MissingHeaderError,
    NoResolutionPathError,
    UnknownSchemaError,
    UnknownTypeError,
    UnknownVersionError,
    UpcastError,
    Upcasters,
    peek_type,
)
from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"

ORDER_V1 = {
    "order_id": "o-1",
    "customer_id": "c-7",
    "items": [{"sku": "tea", "quantity": 2, "unit_price_cents": 450}],
    "total_cents": 900,
}


@pytest.fixture(scope="module")
def catalog() -> SchemaCatalog:
    return SchemaCatalog.load(SCHEMAS)


@pytest.fixture
def codec(catalog: SchemaCatalog) -> AvroCodec:
    return AvroCodec(catalog)


def order(version: int = 1, **extra: Any) -> Envelope:
    return Envelope.new("order.placed", {**ORDER_V1, **extra}, version=version, key="o-1")


def replace_header(headers: list[tuple[str, bytes]], name: str, value: bytes) -> list[Any]:
    return [(k, value if k == name else v) for k, v in headers]


# -- round trip and resolution -----------------------------------------------------------


def test_avro_codec_implements_the_codec_protocol(codec: AvroCodec) -> None:
    assert isinstance(codec, Codec)


def test_round_trip_keeps_every_field(codec: AvroCodec) -> None:
    parent = order()
    env = parent.follow("order.rejected", {"order_id": "o-1", "reason": "INVALID", "detail": "x"})
    value, headers = codec.encode(env)
    assert codec.decode(value, headers) == env


def test_v1_record_read_by_v2_reader_gets_the_default(codec: AvroCodec) -> None:
    value, headers = codec.encode(order(version=1))
    env = codec.decode(value, headers, version=2)
    assert env.version == 2
    assert env.data == {**ORDER_V1, "currency": "EUR"}


def test_v2_record_read_by_v1_reader_drops_the_new_field(codec: AvroCodec) -> None:
    value, headers = codec.encode(order(version=2, currency="CHF"))
    env = codec.decode(value, headers, version=1)
    assert env.version == 1
    assert env.data == ORDER_V1


def test_without_a_reader_version_the_payload_comes_as_written(codec: AvroCodec) -> None:
    value, headers = codec.encode(order(version=2, currency="CHF"))
    env = codec.decode(value, headers)
    assert env.version == 2
    assert env.data["currency"] == "CHF"


def test_headers_carry_what_routing_needs_with_cloudevents_names(codec: AvroCodec) -> None:
    env = order().follow("order.validated", {"order_id": "o-1", "total_cents": 900})
    _, headers = codec.encode(env)
    # the rest is the value's alone: headers are what tools filter on, each one a cost
    assert headers == [
        ("ce_id", env.id.encode()),
        ("ce_type", b"order.validated"),
        ("ce_dataversion", b"1"),
    ]
    assert peek_type(headers) == ("order.validated", 1)
    assert codec.peek_type(headers) == ("order.validated", 1)


def test_peek_type_never_raises_on_odd_headers() -> None:
    assert peek_type(None) is None
    assert peek_type([]) is None
    assert peek_type([("ce_type", b"x")]) is None
    assert peek_type([("ce_type", b"x"), ("ce_dataversion", b"two")]) is None
    assert peek_type([("ce_type", b"\xff"), ("ce_dataversion", b"1")]) is None
    assert peek_type([("ce_type", None), ("ce_dataversion", b"1")]) is None


# -- upcasters ---------------------------------------------------------------------------


def _catalog_with_rename(tmp_path: Path) -> SchemaCatalog:
    """order.placed v3 renames customer_id to buyer (no alias: Avro alone cannot do it)."""
    shutil.copytree(SCHEMAS, tmp_path / "schemas")
    v2 = json.loads((SCHEMAS / "order.placed" / "v2.avsc").read_text())
    for f in v2["fields"]:
        if f["name"] == "customer_id":
            f["name"] = "buyer"
    (tmp_path / "schemas" / "order.placed" / "v3.avsc").write_text(json.dumps(v2))
    (tmp_path / "schemas" / "order.placed" / "type.json").write_text(
        '{"compatibility": "BACKWARD", "upcast": [3]}'
    )
    return SchemaCatalog.load(tmp_path / "schemas")


def test_upcaster_covers_a_step_avro_cannot_express(tmp_path: Path) -> None:
    catalog = _catalog_with_rename(tmp_path)
    upcasters = Upcasters()

    @upcasters.register("order.placed", 2)
    def buyer(data: dict[str, Any]) -> dict[str, Any]:
        data = dict(data)
        data["buyer"] = data.pop("customer_id")
        return data

    codec = AvroCodec(catalog, upcasters=upcasters)
    value, headers = codec.encode(order(version=1))
    env = codec.decode(value, headers, version=3)  # v1 -Avro-> v2 -upcaster-> v3
    assert env.data["buyer"] == "c-7"
    assert env.data["currency"] == "EUR"
    assert "customer_id" not in env.data


def test_without_the_upcaster_there_is_no_resolution_path(tmp_path: Path) -> None:
    codec = AvroCodec(_catalog_with_rename(tmp_path))
    value, headers = codec.encode(order(version=2))
    with pytest.raises(NoResolutionPathError, match=r"v3 cannot read v2 \(field 'buyer'") as info:
        codec.decode(value, headers, version=3)
    assert "register an upcaster for ('order.placed', 2)" in str(info.value)


def test_newer_writer_without_resolution_path_is_a_typed_error(tmp_path: Path) -> None:
    catalog = _catalog_with_rename(tmp_path)
    codec = AvroCodec(catalog)
    v3 = Envelope.new("order.placed", {**ORDER_V1, "buyer": "b"}, version=3)
    v3 = v3.with_data({k: v for k, v in v3.data.items() if k != "customer_id"})
    value, headers = codec.encode(v3)
    with pytest.raises(NoResolutionPathError, match="customer_id"):
        codec.decode(value, headers, version=1)


def test_a_failing_upcaster_is_a_decode_error(tmp_path: Path) -> None:
    def boom(data: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("nope")

    codec = AvroCodec(
        _catalog_with_rename(tmp_path), upcasters=Upcasters({("order.placed", 2): boom})
    )
    value, headers = codec.encode(order(version=2))
    with pytest.raises(UpcastError, match="v2->v3 failed: KeyError"):
        codec.decode(value, headers, version=3)


# -- bad input on decode -----------------------------------------------------------------


@pytest.mark.parametrize("value", [b"", None])
def test_empty_value(codec: AvroCodec, value: bytes | None) -> None:
    with pytest.raises(EmptyRecordError):
        codec.decode(value, [])


def test_truncated_bytes(codec: AvroCodec) -> None:
    value, headers = codec.encode(order())
    for cut in (1, len(value) // 2, len(value) - 1):
        with pytest.raises(MalformedRecordError):
            codec.decode(value[:cut], headers)


def test_random_bytes(codec: AvroCodec) -> None:
    with pytest.raises(MalformedRecordError, match="not a Streams envelope"):
        codec.decode(b"\x8f\x03garbage-that-is-not-avro\xff\xfe", [])


def test_valid_avro_of_another_schema(codec: AvroCodec, catalog: SchemaCatalog) -> None:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, catalog.get("order.placed", 1), ORDER_V1)
    with pytest.raises(MalformedRecordError):
        codec.decode(buf.getvalue(), [])


def _raw_envelope(catalog: SchemaCatalog, type_: str, version: int, data: bytes) -> bytes:
    buf = io.BytesIO()
    record = {
        "id": "id-1",
        "type": type_,
        "version": version,
        "time": datetime.now(UTC),
        "source": "test",
        "key": None,
        "correlation_id": None,
        "causation_id": None,
        "data": data,
    }
    fastavro.schemaless_writer(buf, catalog.envelope, record)
    return buf.getvalue()


def _headers(type_: str, version: int) -> list[tuple[str, bytes]]:
    return [("ce_id", b"id-1"), ("ce_type", type_.encode()), ("ce_dataversion", b"%d" % version)]


def test_unknown_type(codec: AvroCodec, catalog: SchemaCatalog) -> None:
    value = _raw_envelope(catalog, "order.teleported", 1, b"")
    with pytest.raises(UnknownTypeError, match=r"order\.teleported"):
        codec.decode(value, _headers("order.teleported", 1))


def test_unknown_writer_version(codec: AvroCodec, catalog: SchemaCatalog) -> None:
    value = _raw_envelope(catalog, "order.placed", 9, b"")
    with pytest.raises(UnknownVersionError, match=r"order.placed@9 \(known versions: v1, v2\)"):
        codec.decode(value, _headers("order.placed", 9))


def test_unknown_reader_version(codec: AvroCodec) -> None:
    value, headers = codec.encode(order())
    with pytest.raises(UnknownVersionError, match=r"order\.placed@7"):
        codec.decode(value, headers, version=7)


def test_payload_bytes_that_do_not_fit_the_writer_schema(
    codec: AvroCodec, catalog: SchemaCatalog
) -> None:
    value = _raw_envelope(catalog, "order.placed", 1, b"\x02a")
    with pytest.raises(MalformedRecordError, match=r"order\.placed@1 payload"):
        codec.decode(value, _headers("order.placed", 1))


def test_missing_headers(codec: AvroCodec) -> None:
    value, headers = codec.encode(order())
    with pytest.raises(MissingHeaderError, match="ce_type, ce_dataversion, ce_id"):
        codec.decode(value, None)
    partial = [(k, v) for k, v in headers if k != "ce_dataversion"]
    with pytest.raises(MissingHeaderError, match="ce_dataversion"):
        codec.decode(value, partial)


def test_headers_can_be_optional_but_are_still_checked(catalog: SchemaCatalog) -> None:
    lenient = AvroCodec(catalog, require_headers=False)
    value, headers = lenient.encode(order())
    assert lenient.decode(value, None).data == ORDER_V1
    with pytest.raises(HeaderMismatchError):
        lenient.decode(value, replace_header(headers, "ce_type", b"order.accepted"))


@pytest.mark.parametrize(
    ("name", "value"),
    [("ce_type", b"order.accepted"), ("ce_dataversion", b"2"), ("ce_id", b"someone-else")],
)
def test_headers_disagreeing_with_the_body(codec: AvroCodec, name: str, value: bytes) -> None:
    body, headers = codec.encode(order())
    with pytest.raises(HeaderMismatchError, match=f"header {name}="):
        codec.decode(body, replace_header(headers, name, value))


def test_every_decode_error_is_a_streams_error() -> None:
    for cls in (EmptyRecordError, MalformedRecordError, UnknownTypeError, HeaderMismatchError):
        assert issubclass(cls, DecodeError)
        assert issubclass(cls, StreamsError)


# -- bad input on encode -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        ({**ORDER_V1, "total_cents": "nine"}, "total_cents", "expected long, got str"),
        ({k: v for k, v in ORDER_V1.items() if k != "order_id"}, "order_id", "missing"),
        (
            {**ORDER_V1, "items": [{"sku": "tea", "quantity": "2", "unit_price_cents": 1}]},
            "items[0].quantity",
            "expected int",
        ),
        ({**ORDER_V1, "total_cent": 1}, "total_cent", "not a field of the schema"),
        ({**ORDER_V1, "total_cents": 2**70}, "total_cents", "does not fit an Avro long"),
    ],
)
def test_payload_that_does_not_fit_names_the_field(
    codec: AvroCodec, data: dict[str, Any], field: str, reason: str
) -> None:
    env = Envelope.new("order.placed", data)
    with pytest.raises(EncodeError, match=reason) as info:
        codec.encode(env)
    assert info.value.field == field
    assert f"'{field}'" in str(info.value)


def test_encode_unknown_type_or_version(codec: AvroCodec) -> None:
    with pytest.raises(UnknownSchemaError, match=r"order\.teleported"):
        codec.encode(Envelope.new("order.teleported", {}))
    with pytest.raises(UnknownSchemaError, match=r"order\.placed@5"):
        codec.encode(order(version=5))


def test_missing_field_with_a_default_takes_it(codec: AvroCodec) -> None:
    value, headers = codec.encode(order(version=2))
    assert codec.decode(value, headers).data["currency"] == "EUR"


def test_bad_envelope_metadata_names_the_field(codec: AvroCodec) -> None:
    env = Envelope(type="order.placed", data=ORDER_V1, source=7)  # type: ignore[arg-type]
    with pytest.raises(EncodeError) as info:
        codec.encode(env)
    assert info.value.field == "source"


def test_headers_as_a_mapping_or_with_text_values_are_accepted(codec: AvroCodec) -> None:
    env = order()
    value, headers = codec.encode(env)
    as_text = [(k, v.decode()) for k, v in headers]
    assert codec.decode(value, as_text) == env
    assert codec.decode(value, dict(headers)) == env
    assert peek_type(dict(as_text)) == ("order.placed", 1)
    with pytest.raises(HeaderMismatchError):
        codec.decode(value, {**dict(as_text), "ce_dataversion": "2"})
