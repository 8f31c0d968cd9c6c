"""The hand-written envelope writer produces fastavro's bytes, and refuses what it refuses."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta, timezone
from io import BytesIO
from pathlib import Path

import pytest
from fastavro import schemaless_reader, schemaless_writer
from hypothesis import given
from hypothesis import strategies as st

from streams.codec import AvroCodec, EncodeError
from streams.codec.envelope_wire import (
    envelope_value,
    long_bytes,
    read_envelope,
    type_version_bytes,
)
from streams.envelope import Envelope, envelope_from_fields
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
CATALOG = SchemaCatalog.load(SCHEMAS)

texts = st.text() | st.text(min_size=60, max_size=300)  # one- and multi-byte lengths
times = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)


def _fastavro(env: Envelope, data: bytes) -> bytes:
    buf = BytesIO()
    record = {f: getattr(env, f) for f in ("id", "type", "version", "time", "source", "key")}
    record |= {"correlation_id": env.correlation_id, "causation_id": env.causation_id}
    schemaless_writer(buf, CATALOG.envelope, {**record, "data": data})
    return buf.getvalue()


@given(
    texts,
    texts,
    st.integers(-(2**31), 2**31 - 1),
    times,
    texts,
    st.none() | texts,
    st.none() | texts,
    st.none() | texts,
    st.binary(max_size=300),
)
def test_envelope_bytes_are_fastavros(  # noqa: PLR0917 - one per envelope field
    id_: str,
    type_: str,
    version: int,
    when: datetime,
    source: str,
    key: str | None,
    correlation_id: str | None,
    causation_id: str | None,
    data: bytes,
) -> None:
    env = envelope_from_fields(
        type_, {}, version, key, id_, when, source, correlation_id, causation_id
    )
    ours = envelope_value(env, data, type_version_bytes(type_, version))
    assert ours == _fastavro(env, data)


@given(st.integers(-(2**63), 2**63 - 1))
def test_longs_are_zigzag_varints_as_fastavro_writes_them(n: int) -> None:
    buf = BytesIO()
    schemaless_writer(buf, "long", n)
    assert long_bytes(n) == buf.getvalue()


def test_longs_out_of_range_are_refused() -> None:
    for n in (2**63, -(2**63) - 1):
        with pytest.raises(OverflowError):
            long_bytes(n)


@pytest.mark.parametrize(
    ("field", "value"),
    [("id", 5), ("source", b"shop"), ("key", 7), ("correlation_id", b"c"), ("time", "now")],
)
def test_a_field_of_the_wrong_type_is_an_encode_error_naming_it(field: str, value: object) -> None:
    codec = AvroCodec(CATALOG)
    env = Envelope.new("order.rejected", {"order_id": "o", "reason": "OTHER", "detail": None})
    with pytest.raises(EncodeError) as info:
        codec.encode(env.with_data(env.data, **{field: value}))
    assert info.value.field == field


def test_a_naive_time_is_written_as_utc() -> None:
    codec = AvroCodec(CATALOG)
    naive = datetime(2026, 5, 1, 12, 0, 0, 123456)
    env = Envelope(type="order.rejected", data={"order_id": "o", "reason": "OTHER"}, time=naive)
    value, headers = codec.encode(env)
    assert codec.decode(value, headers).time == naive.replace(tzinfo=UTC)


@given(
    texts,
    texts,
    st.integers(-(2**31), 2**31 - 1),
    times,
    texts,
    st.none() | texts,
    st.none() | texts,
    st.none() | texts,
    st.binary(max_size=300),
)
def test_envelope_records_read_as_fastavro_reads_them(  # noqa: PLR0917 - one per field
    id_: str,
    type_: str,
    version: int,
    when: datetime,
    source: str,
    key: str | None,
    correlation_id: str | None,
    causation_id: str | None,
    data: bytes,
) -> None:
    env = envelope_from_fields(
        type_, {}, version, key, id_, when, source, correlation_id, causation_id
    )
    value = _fastavro(env, data)
    assert read_envelope(value) == schemaless_reader(BytesIO(value), CATALOG.envelope, None)


@given(st.binary(max_size=200))
def test_bytes_that_are_no_envelope_raise_only_reading_errors(value: bytes) -> None:
    # UnicodeDecodeError is a ValueError; anything else escapes and fails the test
    with contextlib.suppress(ValueError, EOFError, IndexError, OverflowError):
        read_envelope(value)


def test_trailing_bytes_are_refused() -> None:
    env = Envelope.new("order.rejected", {})
    value = _fastavro(env, b"payload")
    with pytest.raises(ValueError, match="trailing"):
        read_envelope(value + b"\x00")
