"""``streams produce`` input: keys, rates, types, cycling, and the errors naming line and field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from streams.codec import AvroCodec
from streams.codec.jsonmap import envelope_fields
from streams.schemas.catalog import SchemaCatalog
from streams.tools.produce import (
    EnvelopeMaker,
    KeySpec,
    ProduceInputError,
    dry_run,
    parse_rate,
    parse_type_ref,
    payloads_to_send,
    raw_records,
)

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


@pytest.fixture(scope="module")
def codec() -> AvroCodec:
    return AvroCodec(SchemaCatalog.load(SCHEMAS))


def order(order_id: str, total: object = 300, customer: str = "c-1") -> str:
    return json.dumps(
        {
            "order_id": order_id,
            "customer_id": customer,
            "items": [{"sku": "a", "quantity": 2, "unit_price_cents": 150}],
            "total_cents": total,
        }
    )


def test_key_from_a_field_a_nested_field_or_a_template() -> None:
    data = {"customer_id": "c-7", "order_id": 42, "customer": {"id": "x"}, "vip": True}
    assert KeySpec.parse("customer_id").key_of(data) == "c-7"
    assert KeySpec.parse("customer.id").key_of(data) == "x"
    assert KeySpec.parse("{customer_id}-{order_id}").key_of(data) == "c-7-42"
    assert KeySpec.parse("{vip}/{customer.id}").key_of(data) == "true/x"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing", "field 'missing' is not in the payload"),
        ("customer", "field 'customer' is not a single value"),
        ("{customer_id}-{nope}", "field 'nope' is not in the payload"),
        ("none", "field 'none' is null"),
    ],
)
def test_a_key_the_payload_cannot_give_is_an_error_naming_the_field(
    spec: str, message: str
) -> None:
    data = {"customer_id": "c-7", "customer": {"id": "x"}, "none": None}
    with pytest.raises(ProduceInputError, match=message):
        KeySpec.parse(spec).key_of(data)


@pytest.mark.parametrize("bad", ["{}", "{a", "a}", "x{}y"])
def test_a_malformed_key_template_is_refused(bad: str) -> None:
    with pytest.raises(ProduceInputError, match="template"):
        KeySpec.parse(bad)


def test_rate_is_records_per_second_with_or_without_the_unit() -> None:
    assert parse_rate("100") == 100.0
    assert parse_rate("2.5/s") == 2.5
    for bad in ("0", "-3", "fast", "10/m"):
        with pytest.raises(ProduceInputError, match="records per second"):
            parse_rate(bad)


def test_type_and_version_come_from_the_catalog(codec: AvroCodec) -> None:
    assert parse_type_ref("order.placed@2", codec) == ("order.placed", 2)
    assert parse_type_ref("order.placed", codec) == ("order.placed", 2)  # the latest
    with pytest.raises(ProduceInputError, match=r"has no version 9 \(known: v1, v2\)"):
        parse_type_ref("order.placed@9", codec)
    with pytest.raises(ProduceInputError, match=r"no schemas for type 'order\.nope'"):
        parse_type_ref("order.nope@1", codec)


def test_count_stops_early_or_cycles_over_the_lines() -> None:
    lines = ['{"n": 1}\n', "\n", '{"n": 2}\n', '{"n": 3}\n']
    assert [p["n"] for _, p in payloads_to_send(lines, 2)] == [1, 2]
    cycled = list(payloads_to_send(lines, 7))
    assert [p["n"] for _, p in cycled] == [1, 2, 3, 1, 2, 3, 1]
    assert [n for n, _ in cycled][:3] == [1, 3, 4]  # line numbers skip the blank line
    assert len(list(payloads_to_send(lines, None))) == 3
    with pytest.raises(ProduceInputError, match="no records"):
        list(payloads_to_send(["\n"], 3))


def test_an_invalid_line_names_the_line_and_the_field(codec: AvroCodec) -> None:
    maker = EnvelopeMaker(codec, "order.placed", 2)
    lines = [order("o1"), order("o2"), order("o3", total="12")]
    produced = []
    with pytest.raises(ProduceInputError) as caught:
        for env in dry_run(lines, maker):
            produced.append(env)
    assert len(produced) == 2
    assert str(caught.value).startswith("line 3: field 'total_cents': expected long, got str")
    missing = json.dumps({"order_id": "o", "customer_id": "c", "items": []})
    with pytest.raises(ProduceInputError, match="line 1: field 'total_cents': missing"):
        list(dry_run([missing], maker))
    with pytest.raises(ProduceInputError, match="line 2: not JSON"):
        list(dry_run([order("o1"), "{oops"], maker))
    with pytest.raises(ProduceInputError, match="line 1: expected a JSON object, got list"):
        list(dry_run(["[1, 2]"], maker))


def test_each_record_is_a_new_envelope_with_the_options_applied(codec: AvroCodec) -> None:
    maker = EnvelopeMaker(
        codec,
        "order.placed",
        2,
        key=KeySpec.parse("customer_id"),
        source="shop",
    )
    first, second = dry_run([order("o1", customer="c-9")], maker, count=2)
    assert first.id != second.id
    assert first.key == "c-9" and first.source == "shop"
    assert first.correlation_id == first.id  # each starts its own conversation
    assert first.data["currency"] == "EUR"  # the schema's default
    shared = EnvelopeMaker(codec, "order.placed", 2, correlation_id="batch-1")
    assert {e.correlation_id for e in dry_run([order("a"), order("b")], shared)} == {"batch-1"}


def test_times_are_iso_text_both_ways(codec: AvroCodec) -> None:
    maker = EnvelopeMaker(codec, "order.accepted", 1)
    line = json.dumps({"order_id": "o1", "accepted_at": "2026-01-02T03:04:05.123456+00:00"})
    (env,) = dry_run([line], maker)
    value, headers = codec.encode(env)
    decoded = codec.decode(value, headers)
    assert decoded.data["accepted_at"] == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    shown = envelope_fields(decoded)
    assert shown["data"] == json.loads(line)  # what consume prints, produce takes back
    naive = json.dumps({"order_id": "o1", "accepted_at": "2026-01-02T03:04:05"})
    with pytest.raises(ProduceInputError, match="line 1: field 'accepted_at'"):
        list(dry_run([naive], maker))


def test_raw_lines_are_values_as_they_are_keyed_at_the_first_separator() -> None:
    lines = ["k1:a:b\n", "\n", "k2:\n", ":v3\r\n"]
    records = list(raw_records(lines, key_separator=":"))
    assert [(r.key, r.value) for r in records] == [("k1", b"a:b"), ("k2", b""), ("", b"v3")]
    # --null: an empty value is a tombstone, as kcat -Z
    (_, tombstone, _) = raw_records(lines, key_separator=":", null=True)
    assert tombstone.key == "k2" and tombstone.value is None
    keyed = list(raw_records(["x\n", "y\n"], key="same"))
    assert [(r.key, r.value) for r in keyed] == [("same", b"x"), ("same", b"y")]
    assert [r.value for r in raw_records(["x\n", "y\n"], count=3)] == [b"x", b"y", b"x"]


def test_raw_input_that_is_not_a_record_is_refused_naming_the_line() -> None:
    with pytest.raises(ProduceInputError, match=r"line 2: no key separator ':'"):
        list(raw_records(["k:v\n", "no separator\n"], key_separator=":"))
    # options that do not go together are refused before any line is read
    with pytest.raises(ProduceInputError, match="not both"):
        raw_records(iter(()), key="k", key_separator=":")
