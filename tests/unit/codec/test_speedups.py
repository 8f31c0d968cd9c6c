"""The compiled codec modules do exactly what the plain Python they are compiled from does:
same bytes, same values, same errors (whether they are in use: ``test_speedups``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import speedups
from streams.codec import avro_machine, envelope_wire, varint
from streams.envelope import envelope_from_fields


def _plain(module: ModuleType) -> ModuleType:
    copy = speedups.plain_copy(module)
    assert not speedups.compiled(copy)
    return copy


COMPILED_MODULES = (varint, envelope_wire, avro_machine)
PLAIN_VARINT, PLAIN_WIRE = _plain(varint), _plain(envelope_wire)
needs_compiled = pytest.mark.skipif(
    not all(speedups.compiled(m) for m in COMPILED_MODULES),
    reason="the compiled codec modules are not in use (not built here, or STREAMS_PURE_PYTHON)",
)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc)


@needs_compiled
@given(st.integers(-(2**64), 2**64))
def test_longs_both_ways_as_plain(n: int) -> None:
    for name in ("long_bytes", "int_bytes"):
        assert _outcome(getattr(varint, name), n) == _outcome(getattr(PLAIN_VARINT, name), n)


@needs_compiled
@given(st.binary(max_size=12), st.integers(0, 12))
def test_varints_read_as_plain(raw: bytes, at: int) -> None:
    assert _outcome(varint.read_long, raw, at) == _outcome(PLAIN_VARINT.read_long, raw, at)


texts = st.text() | st.text(min_size=60, max_size=300)
times = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-3))]),
)


@needs_compiled
@settings(max_examples=200)
@given(
    texts,
    texts,
    st.integers(-(2**32), 2**32),
    times,
    texts,
    st.none() | texts,
    st.none() | texts,
    st.binary(max_size=300),
    st.data(),
)
def test_envelopes_written_and_read_as_plain(  # noqa: PLR0917 - one per envelope field
    id_: str,
    type_: str,
    version: int,
    when: datetime,
    source: str,
    key: str | None,
    correlation_id: str | None,
    data: bytes,
    draw: st.DataObject,
) -> None:
    env = envelope_from_fields(type_, {}, version, key, id_, when, source, correlation_id, id_)
    tv = _outcome(envelope_wire.type_version_bytes, type_, version)
    assert tv == _outcome(PLAIN_WIRE.type_version_bytes, type_, version)
    if not isinstance(tv, bytes):
        return
    value = envelope_wire.envelope_value(env, data, tv)
    assert value == PLAIN_WIRE.envelope_value(env, data, tv)
    assert envelope_wire.micros(when) == PLAIN_WIRE.micros(when)
    # the bytes as written, cut short, or with one byte changed
    raw = bytearray(value)
    cut = draw.draw(st.integers(0, len(raw)))
    at, byte = draw.draw(st.integers(0, len(raw) - 1)), draw.draw(st.integers(0, 255))
    changed = bytearray(raw)
    changed[at] = byte
    for candidate in (bytes(raw), bytes(raw[:cut]), bytes(changed)):
        ours = _outcome(envelope_wire.read_envelope, candidate)
        assert ours == _outcome(PLAIN_WIRE.read_envelope, candidate)
        assert _outcome(envelope_wire.read_fields, candidate) == _outcome(
            PLAIN_WIRE.read_fields, candidate
        )


@needs_compiled
@given(st.binary(max_size=80))
def test_arbitrary_bytes_read_as_plain(raw: bytes) -> None:
    assert _outcome(envelope_wire.read_fields, raw) == _outcome(PLAIN_WIRE.read_fields, raw)


class _Text(str):
    pass


class _Number(int):
    pass


@needs_compiled
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("long_bytes", (5.0,)),  # not an int: refused, never written as 5
        ("long_bytes", (True,)),
        ("long_bytes", (_Number(300),)),
        ("read_long", (bytearray(b"\x02"), 0)),
        ("string_bytes", (_Text("an id"),)),
        ("type_version_bytes", (_Text("order.placed"), _Number(2))),
        ("read_fields", (bytearray(b"\x00"),)),
    ],
)
def test_values_of_other_types_are_taken_or_refused_as_plain(
    name: str, args: tuple[Any, ...]
) -> None:
    """Compiled from the same source, with the annotations left as annotations: a float
    where an int belongs is refused, a str subclass or a bytearray taken, as in Python."""
    module = varint if hasattr(varint, name) else envelope_wire
    plain = PLAIN_VARINT if module is varint else PLAIN_WIRE
    assert repr(_outcome(getattr(module, name), *args)) == repr(
        _outcome(getattr(plain, name), *args)
    )
