"""Compiled payload writers and readers are fastavro, byte for byte and value for value.

Random schemas (records, arrays, maps, enums, fixed, [null, T] unions, logical types) with
random data, the catalog's own schemas, arbitrary bytes, and data that does not fit.
"""

from __future__ import annotations

import contextlib
import itertools
import struct
from datetime import UTC, datetime
from io import BytesIO
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.codec import avro_machine
from streams.codec.compiled import (
    NO_WIDTH,
    compile_reader,
    compile_writer,
    has_widthless_items,
    program_of,
)
from streams.codec.varint import long_bytes
from streams.schemas import default_catalog
from streams.speedups import compiled, plain_copy

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "int", "logicalType": "date"},
    {"type": "string", "logicalType": "uuid"},
]
READ_ERRORS = (
    ValueError,
    EOFError,
    IndexError,
    KeyError,
    OverflowError,
    UnicodeDecodeError,
    struct.error,
)


def _schemas() -> st.SearchStrategy[Any]:
    leaves = st.sampled_from(PRIMITIVES) | st.sampled_from(LOGICAL)
    leaves |= st.builds(lambda n: {"type": "fixed", "size": n}, st.integers(0, 6))
    leaves |= st.builds(
        lambda s: {"type": "enum", "symbols": s},
        st.lists(st.sampled_from("ABCDEFGH"), min_size=1, max_size=4, unique=True),
    )

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        field = st.tuples(inner, st.booleans())
        return (
            st.builds(lambda t: {"type": "array", "items": t}, inner)
            | st.builds(lambda t: {"type": "map", "values": t}, inner)
            | st.builds(
                lambda t, first: ["null", t] if first else [t, "null"],
                inner.filter(lambda t: t != "null" and not isinstance(t, list)),
                st.booleans(),
            )
            | st.builds(lambda fs: {"type": "record", "fields": fs}, st.lists(field, max_size=4))
        )

    return st.recursive(leaves, nest, max_leaves=8).map(_named)


def _named(schema: Any) -> Any:
    """Names for the named types, and field names (unique per record)."""
    counter = itertools.count()

    def walk(s: Any) -> Any:
        if isinstance(s, list):
            return [walk(t) for t in s]
        if not isinstance(s, dict):
            return s
        s = dict(s)
        if s["type"] in ("record", "enum", "fixed"):
            s["name"] = f"T{next(counter)}"
        if s["type"] == "record":
            s["fields"] = [
                {"name": f"f{i}", "type": walk(t)} for i, (t, _) in enumerate(s["fields"])
            ]
        for key in ("items", "values"):
            if key in s:
                s[key] = walk(s[key])
        return s

    return walk(schema)


def _data(schema: Any) -> st.SearchStrategy[Any]:
    if isinstance(schema, list):
        other = next(t for t in schema if t != "null")
        return st.none() | _data(other)
    if isinstance(schema, str):
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": st.integers(-(2**31), 2**31 - 1),
            "long": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=20),
            "string": st.text(max_size=20),
        }[schema]
    kind, logical = schema["type"], schema.get("logicalType")
    if logical in ("timestamp-micros", "timestamp-millis"):
        low, high = datetime(1900, 1, 1), datetime(2200, 1, 1)
        return st.datetimes(low, high, timezones=st.just(UTC))
    if logical == "date":
        return st.dates()
    if logical == "uuid":
        return st.uuids()
    if kind == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "array":
        return st.lists(_data(schema["items"]), max_size=4)
    if kind == "map":
        return st.dictionaries(st.text(max_size=5), _data(schema["values"]), max_size=4)
    return st.fixed_dictionaries({f["name"]: _data(f["type"]) for f in schema["fields"]})


# Built once: a strategy built inside each draw is new to Hypothesis every time (validated,
# its recursion set up again), which took seven eighths of the CPU of these tests.
SCHEMAS = _schemas()


@st.composite
def schema_and_datum(draw: st.DrawFn) -> tuple[Any, Any]:
    raw = draw(SCHEMAS)
    if not (isinstance(raw, dict) and raw["type"] == "record"):
        raw = {"type": "record", "name": "Top", "fields": [{"name": "value", "type": raw}]}
    return parse_schema(raw), draw(_data(raw))


def fastavro_bytes(schema: Any, datum: Any) -> bytes:
    buf = BytesIO()
    schemaless_writer(buf, schema, datum, strict_allow_default=True)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(schema_and_datum())
def test_generated_schemas_write_and_read_as_fastavro(case: tuple[Any, Any]) -> None:
    schema, datum = case
    write, read = compile_writer(schema), compile_reader(schema)
    assert write is not None and read is not None
    expected = fastavro_bytes(schema, datum)
    assert write(datum) == expected
    assert read(expected) == schemaless_reader(BytesIO(expected), schema, None)


@settings(max_examples=300, deadline=None)
@given(schema_and_datum(), st.binary(max_size=40))
def test_arbitrary_bytes_read_as_fastavro_reads_them(case: tuple[Any, Any], raw: bytes) -> None:
    _same_as_fastavro(case[0], raw)


@settings(max_examples=300, deadline=None)
@given(schema_and_datum(), st.data())
def test_corrupted_records_read_as_fastavro_reads_them(
    case: tuple[Any, Any], data: st.DataObject
) -> None:
    """A valid record with one byte changed: mostly still readable, so values are compared
    on the odd corners (a boolean byte that is neither 0 nor 1, an enum or union index out
    of range, a length that runs past the end)."""
    schema, datum = case
    raw = bytearray(fastavro_bytes(schema, datum))
    if not raw:
        return
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] = data.draw(st.integers(0, 255))
    _same_as_fastavro(schema, bytes(raw))


def _same_as_fastavro(schema: Any, raw: bytes) -> None:
    read = compile_reader(schema)
    assert read is not None
    try:
        ours, error = read(raw), None
    except READ_ERRORS as e:
        ours, error = None, e
    if error is not None and has_widthless_items(schema):
        return  # fastavro could go on to a corrupt count of them, and fill memory
    buf = BytesIO(raw)
    theirs, complete = None, False
    with contextlib.suppress(Exception):
        theirs = schemaless_reader(buf, schema, None)
        complete = buf.tell() == len(raw)
    if complete and str(error).startswith("union index -"):
        return  # corrupt, though fastavro takes a negative index as Python does: from the end
    if complete:
        assert error is None
        assert repr(ours) == repr(theirs)  # repr: a NaN read is equal to itself
    else:
        assert error is not None


@pytest.mark.parametrize("items", ["null", {"type": "fixed", "name": "Empty", "size": 0}])
def test_a_corrupt_count_of_items_of_no_width_is_refused_not_read(items: Any) -> None:
    """A count of 2**62 nulls in 11 bytes would fill memory; it is refused at once."""
    schema = parse_schema(
        {
            "type": "record",
            "name": "Holder",
            "fields": [{"name": "many", "type": {"type": "array", "items": items}}],
        }
    )
    read = compile_reader(schema)
    assert read is not None and has_widthless_items(schema)
    assert read(fastavro_bytes(schema, {"many": [None if items == "null" else b""] * 3})) == {
        "many": [None if items == "null" else b""] * 3
    }
    with pytest.raises(ValueError, match=NO_WIDTH):
        read(long_bytes(2**62) + b"\x00")


def test_a_count_longer_than_the_bytes_left_is_refused_before_reading() -> None:
    schema = parse_schema(
        {
            "type": "record",
            "name": "Holder",
            "fields": [{"name": "n", "type": {"type": "array", "items": "long"}}],
        }
    )
    read = compile_reader(schema)
    assert read is not None
    with pytest.raises(EOFError):
        read(long_bytes(2**62) + b"\x02\x00")


def test_the_catalogs_schemas_all_compile_and_match() -> None:
    catalog = default_catalog()
    for (type_, version), schema in catalog.schema_map().items():
        write, read = compile_writer(schema), compile_reader(schema)
        assert write is not None and read is not None, f"{type_}@{version}"

    @settings(max_examples=100, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(catalog.schema_map())))
        schema = catalog.get(*key)
        datum = data.draw(_data(_as_written(catalog, key)))
        write, read = compile_writer(schema), compile_reader(schema)
        assert write is not None and read is not None
        expected = fastavro_bytes(schema, datum)
        assert write(datum) == expected
        assert read(expected) == schemaless_reader(BytesIO(expected), schema, None)

    check()


def _as_written(catalog: Any, key: tuple[str, int]) -> Any:
    """The schema as written in its file (names unqualified), for the data strategy."""
    return catalog.entry(*key).raw


@pytest.mark.parametrize(
    "bad",
    [
        {"order_id": "o", "customer_id": "c", "items": [], "total_cents": "9"},
        {"order_id": 5, "customer_id": "c", "items": [], "total_cents": 9},
        {"order_id": "o", "customer_id": "c", "items": [{"sku": "s"}], "total_cents": 9},
        {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 2**70},
        {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 9, "extra": 1},
        {"customer_id": "c", "items": [], "total_cents": 9},
        ["not", "a", "record"],
    ],
)
def test_data_that_does_not_fit_is_refused_like_fastavro(bad: Any) -> None:
    schema = default_catalog().get("order.placed", 2)
    write = compile_writer(schema)
    assert write is not None
    with pytest.raises(Exception):  # noqa: B017 - any error: the codec locates the field
        fastavro_bytes(schema, bad)
    with pytest.raises((TypeError, ValueError, KeyError, AttributeError, OverflowError)):
        write(bad)


ENRICHED = {
    "order_id": "o",
    "customer_id": "c",
    "items": [{"sku": "s", "quantity": 1, "unit_price_cents": 100}],
    "total_cents": 100,
    "currency": "EUR",
    "tier": "gold",
    "limit_cents": 5,
}


@pytest.mark.parametrize(
    ("type_", "version", "bad"),
    [
        # every field required: as many keys as fields, one misspelt
        ("order.enriched", 1, {k if k != "tier" else "teir": v for k, v in ENRICHED.items()}),
        ("order.enriched", 1, {**ENRICHED, "extra": 1}),
        ("order.enriched", 1, {**ENRICHED, "items": [{"sku": "s", "qty": 1, "unit_price": 1}]}),
        # a field with a default: left out, and a misspelt one in its place
        ("order.placed", 2, {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 9,
                             "currecny": "EUR"}),
    ],
)  # fmt: skip
def test_a_field_the_schema_lacks_never_vanishes(type_: str, version: int, bad: Any) -> None:
    write = compile_writer(default_catalog().get(type_, version))
    assert write is not None
    with pytest.raises((TypeError, ValueError, KeyError)):
        write(bad)


def test_a_missing_field_takes_its_default() -> None:
    schema = default_catalog().get("order.placed", 2)
    write = compile_writer(schema)
    assert write is not None
    datum = {"order_id": "o", "customer_id": "c", "items": [], "total_cents": 9}
    assert write(datum) == fastavro_bytes(schema, datum)


def test_unions_of_more_than_null_and_one_type_are_left_to_fastavro() -> None:
    schema = parse_schema(
        {"type": "record", "name": "R", "fields": [{"name": "v", "type": ["int", "string"]}]}
    )
    assert compile_writer(schema) is None and compile_reader(schema) is None


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("boolean", b"\x02"),  # neither 0 nor 1: fastavro reads True
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, b"\x01"),  # index -1
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, b"\x08"),  # out of range
        (["null", "long"], b"\x04\x02"),  # union index 2
        ("string", b"\x08ab"),  # runs past the end
        ({"type": "array", "items": "int"}, b"\x03\x04\x02\x04\x00"),  # a sized block
        ("long", b"\xff" * 11),  # a varint too long
    ],
)
def test_odd_bytes_read_as_fastavro_reads_them(field: Any, raw: bytes) -> None:
    schema = parse_schema({"type": "record", "name": "R", "fields": [{"name": "v", "type": field}]})
    _same_as_fastavro(schema, raw)


PLAIN_MACHINE = plain_copy(avro_machine)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return repr(fn(*args))  # repr: a NaN read is equal to itself
    except Exception as exc:
        return type(exc)


@pytest.mark.skipif(not compiled(avro_machine), reason="avro_machine is not compiled here")
@settings(max_examples=300, deadline=None)
@given(schema_and_datum(), st.data())
def test_the_compiled_machine_does_what_the_plain_one_does(
    case: tuple[Any, Any], data: st.DataObject
) -> None:
    """Programs run by the Cython copy of ``avro_machine`` (C types for positions and
    varints) and by the plain module: same bytes, same values, same errors."""
    schema, datum = case
    program = program_of(schema)
    raw = avro_machine.write(program, datum)
    assert PLAIN_MACHINE.write(program, datum) == raw
    changed = bytearray(raw)
    if changed:
        changed[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    for candidate in (raw, bytes(changed), cut, data.draw(st.binary(max_size=40))):
        assert _outcome(avro_machine.read, program, candidate) == _outcome(
            PLAIN_MACHINE.read, program, candidate
        )
    wrong = data.draw(st.none() | st.integers() | st.floats() | st.text() | st.binary())
    datum_with_wrong = {**datum, "value": wrong} if "value" in datum else wrong
    assert _outcome(avro_machine.write, program, datum_with_wrong) == _outcome(
        PLAIN_MACHINE.write, program, datum_with_wrong
    )
