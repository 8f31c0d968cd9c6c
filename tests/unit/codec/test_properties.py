"""Property tests: round trips for generated envelopes, and no foreign exception on any bytes."""

from __future__ import annotations

import contextlib
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.codec import AvroCodec, DecodeError
from streams.codec.varint import read_long
from streams.envelope import Envelope
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
CODEC = AvroCodec(SchemaCatalog.load(SCHEMAS))

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

order_lines = st.fixed_dictionaries(
    {"sku": st.text(), "quantity": INT32, "unit_price_cents": INT64}
)
orders_v1 = st.fixed_dictionaries(
    {
        "order_id": st.text(),
        "customer_id": st.text(),
        "items": st.lists(order_lines, max_size=5),
        "total_cents": INT64,
    }
)
orders_v2 = orders_v1.flatmap(
    lambda d: st.builds(lambda c: {**d, "currency": c}, st.text(max_size=3))
)
rejections = st.fixed_dictionaries(
    {
        "order_id": st.text(),
        "reason": st.sampled_from(["OUT_OF_STOCK", "LIMIT_EXCEEDED", "INVALID", "OTHER"]),
        "detail": st.none() | st.text(),
    }
)
times = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
payloads = st.one_of(
    st.tuples(st.just("order.placed"), st.just(1), orders_v1),
    st.tuples(st.just("order.placed"), st.just(2), orders_v2),
    st.tuples(st.just("order.rejected"), st.just(1), rejections),
)


@st.composite
def envelopes(draw: st.DrawFn) -> Envelope:
    type_, version, data = draw(payloads)
    return Envelope(
        type=type_,
        data=data,
        version=version,
        key=draw(st.none() | st.text()),
        id=draw(st.text(min_size=1)),
        time=draw(times),
        source=draw(st.text()),
        correlation_id=draw(st.none() | st.text()),
        causation_id=draw(st.none() | st.text()),
    )


@given(envelopes())
def test_encode_then_decode_is_the_identity(env: Envelope) -> None:
    value, headers = CODEC.encode(env)
    assert CODEC.decode(value, headers) == env
    assert CODEC.peek_type(headers) == (env.type, env.version)


@given(orders_v1)
def test_v1_payloads_read_as_v2_and_back(data: dict[str, Any]) -> None:
    value, headers = CODEC.encode(Envelope.new("order.placed", data, version=1))
    as_v2 = CODEC.decode(value, headers, version=2)
    assert as_v2.data == {**data, "currency": "EUR"}
    value2, headers2 = CODEC.encode(as_v2)
    assert CODEC.decode(value2, headers2, version=1).data == data


headers_st = st.none() | st.lists(
    st.tuples(
        st.sampled_from(["ce_id", "ce_type", "ce_dataversion", "ce_time", "x"]),
        st.none() | st.binary(max_size=20),
    ),
    max_size=6,
)


@given(st.binary(max_size=300), headers_st, st.none() | st.integers(-3, 5))
def test_arbitrary_bytes_only_ever_raise_decode_errors(
    value: bytes, headers: list[tuple[str, bytes | None]] | None, version: int | None
) -> None:
    with contextlib.suppress(DecodeError):
        CODEC.decode(value, headers, version=version)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(envelopes(), st.data())
def test_corrupted_records_only_ever_raise_decode_errors(
    env: Envelope, data: st.DataObject
) -> None:
    value, headers = CODEC.encode(env)
    position = data.draw(st.integers(0, len(value) - 1))
    byte = data.draw(st.integers(0, 255))
    corrupted = value[:position] + bytes([byte]) + value[position + 1 :]
    cut = data.draw(st.integers(0, len(corrupted)))
    for candidate in (corrupted, corrupted[:cut]):
        with contextlib.suppress(DecodeError):
            CODEC.decode(candidate, headers, version=data.draw(st.sampled_from([None, 1, 2])))


def test_far_future_and_past_times_survive() -> None:
    for when in (datetime(1970, 1, 1, tzinfo=UTC), datetime.now(UTC) + timedelta(days=36500)):
        env = Envelope(
            type="order.accepted", data={"order_id": "o", "accepted_at": when}, time=when
        )
        value, headers = CODEC.encode(env)
        assert CODEC.decode(value, headers) == env


# -- every type in the catalog, payloads generated from its own schema ---------------------

_PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": INT32,
    "long": INT64,
    "float": st.floats(allow_nan=False, width=32),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=20),
}


def from_schema(schema: Any, names: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that fit a fastavro-parsed schema (the subset of Avro our .avsc files use)."""
    if isinstance(schema, str):
        return _PRIMITIVES[schema] if schema in _PRIMITIVES else from_schema(names[schema], names)
    if isinstance(schema, list):
        return st.one_of([from_schema(branch, names) for branch in schema])
    kind = schema["type"]
    if schema.get("logicalType") == "timestamp-micros":
        return times
    if kind == "record":
        names[schema["name"]] = schema
        return st.fixed_dictionaries(
            {f["name"]: from_schema(f["type"], names) for f in schema["fields"]}
        )
    if kind == "array":
        return st.lists(from_schema(schema["items"], names), max_size=3)
    if kind == "map":
        return st.dictionaries(
            st.text(max_size=5), from_schema(schema["values"], names), max_size=3
        )
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    return from_schema(kind, names)


CATALOG = SchemaCatalog.load(SCHEMAS)
EVERY_VERSION = [(t, v) for t in CATALOG.types() for v in CATALOG.versions(t)]


@st.composite
def any_catalog_envelope(draw: st.DrawFn) -> Envelope:
    type_, version = draw(st.sampled_from(EVERY_VERSION))
    data = draw(from_schema(CATALOG.get(type_, version), {}))
    return Envelope.new(type_, data, version=version, key=draw(st.none() | st.text()))


@given(any_catalog_envelope())
def test_every_schema_in_the_catalog_round_trips(env: Envelope) -> None:
    value, headers = CODEC.encode(env)
    assert CODEC.decode(value, headers) == env
    mode = CATALOG.compatibility(env.type)
    if mode.backward and mode.forward and mode.transitive:  # FULL_TRANSITIVE: all read all
        for version in CATALOG.versions(env.type):
            assert CODEC.decode(value, headers, version=version).version == version


@given(st.lists(st.integers(0x80, 0xFF), max_size=9), st.integers(0, 0x7F))
def test_a_long_of_up_to_ten_bytes_reads_as_fastavro_reads_it(
    continued: list[int], last: int
) -> None:
    """Bits a tenth byte carries past the 64 of a long are dropped by both (a corrupt
    record reads the same, and never as a value out of a long's range)."""
    raw = bytes([*continued, last])
    value, end = read_long(raw, 0)
    assert (value, end) == (fastavro.schemaless_reader(io.BytesIO(raw), "long", None), len(raw))
    assert -(2**63) <= value < 2**63
