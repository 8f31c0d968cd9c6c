"""``streams dlq list | show | replay`` over every kind of record a DLQ holds, no broker.

The letters are routed the way the runtime routes them (``FailureRouter``): a value that
is no envelope (no event id), a foreign record (no envelope headers), no key, a value cut
to fit the DLQ, a decoded envelope; beside them records someone else wrote, unreadable
error headers, and replay marks. The commands run in-process on that DLQ as read
(``_read`` is the only thing replaced), as tables (wide and narrow) and as JSON.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.cli import cli
from streams.cli._common import console, err_console
from streams.codec import AvroCodec
from streams.codec.errors import MalformedRecordError
from streams.coordinates import Coordinates
from streams.dlq import DeadLetter, DlqContents, ReplayMark, plan_dlq_replay
from streams.envelope import Envelope
from streams.failures import headers as h
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter
from streams.schemas import SchemaCatalog

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
DLQ = "shop-orders-dlq"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CODEC = AvroCodec(SchemaCatalog.load(SCHEMAS))


def envelope(n: int, size: int = 1) -> tuple[bytes, list[h.Header]]:
    value, headers = CODEC.encode(
        Envelope.new(
            "order.placed",
            {
                "order_id": f"o-{n}",
                "customer_id": f"c-{n}",
                "items": [
                    {"sku": f"sku-{i}", "quantity": 1, "unit_price_cents": 250} for i in range(size)
                ],
                "total_cents": 250 * size,
            },
            key=f"c-{n}",
        )
    )
    return value, list(headers)


def routed(
    offset: int,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: list[h.Header],
    stage: Stage = Stage.PROCESS,
    max_bytes: int = 1_000_000,
    exc: Exception | None = None,
) -> DeadLetter:
    """The dead letter the runtime writes for this record, as ``read_dlq`` reads it."""
    error = exc or (
        MalformedRecordError("not an envelope")
        if stage is Stage.DECODE
        else ValueError("no price list")
    )
    route = FailureRouter("shop", RetryPolicy.no_retries(), max_bytes=max_bytes).route(
        FailedRecord(key, value, headers, Coordinates("orders", offset % 3, 100 + offset)),
        error,
        stage=stage,
        now=T0 + timedelta(minutes=offset),
    )
    assert route.dead_letter
    return DeadLetter(
        topic=DLQ,
        partition=route.partition,
        offset=offset,
        timestamp=T0,
        key=route.key,
        value=route.value,
        headers=tuple(route.headers),
        failure=h.parse_failure_headers(route.headers),
    )


def undecodable(offset: int) -> DeadLetter:
    """The most common dead letter: bytes that are no envelope, so no event id."""
    return routed(
        offset,
        key=b"c-7",
        value=b"\x00\xffnot avro at all",
        headers=[("origin", b"legacy")],
        stage=Stage.DECODE,
    )


def run(contents: DlqContents, *args: str, columns: int = 200) -> Result:
    # the width set on the consoles themselves: $COLUMNS is not read where pytest runs them
    with (
        patch("streams.cli.dlq._read", return_value=contents),
        patch.object(console, "_width", columns),
        patch.object(err_console, "_width", columns),
    ):
        return CliRunner().invoke(cli, ["dlq", *args], catch_exceptions=True)


def ok(result: Result) -> Result:
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}"
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def test_the_replay_table_shows_an_undecodable_letter_in_a_dry_run() -> None:
    """Issue 49: a letter without event id crashed the table (``len(None)``)."""
    letter = undecodable(3)
    assert letter.event_id is None
    contents = DlqContents(DLQ, (letter,))
    result = ok(run(contents, "replay", DLQ))
    row = next(line for line in result.stdout.splitlines() if letter.ref in line)
    assert "c-7" in row
    assert "MalformedRecordError" in row
    assert "orders[0]" in row
    assert "dry run: nothing sent; --execute sends 1 record(s) to orders (1)" in result.stdout

    plan = plan_dlq_replay(contents)
    (item,) = plan.items
    assert item.value == b"\x00\xffnot avro at all"  # sent back as it was
    assert (item.topic, item.partition) == ("orders", 0)


def test_a_letter_without_key_or_id_shows_a_dash_not_none() -> None:
    letter = routed(4, key=None, value=b"{}", headers=[])
    result = ok(run(DlqContents(DLQ, (letter,)), "replay", DLQ))
    row = next(line for line in result.stdout.splitlines() if letter.ref in line)
    assert "None" not in row
    shown = ok(run(DlqContents(DLQ, (letter,)), "show", DLQ))
    assert f"{letter.ref}  key=-  id=-  type=-" in shown.stdout


def test_show_prints_an_undecodable_value_and_a_cut_one_for_what_they_are() -> None:
    value, headers = envelope(5, size=60)
    cut = routed(5, key=b"c-5", value=value, headers=headers, max_bytes=len(value))
    assert cut.failure is not None and cut.failure.value_cut == len(value)
    contents = DlqContents(DLQ, (undecodable(3), cut))
    text = ok(run(contents, "show", DLQ)).stdout
    assert "value    17 bytes, not an envelope: 0x00ff6e6f74206176726f20617420616c6c" in text
    assert (
        f"value    cut to fit the DLQ: {len(cut.value or b'')} of {len(value)} bytes kept" in text
    )
    assert "the whole record is at orders[2]@105" in text
    views = json.loads(ok(run(contents, "show", DLQ, "--json")).stdout)
    assert [v["error"]["value_cut"] for v in views] == [None, len(value)]


def test_show_prints_envelope_times_in_iso_8601_as_consume_does() -> None:
    value, headers = envelope(6)
    letter = routed(6, key=b"c-6", value=value, headers=headers)
    contents = DlqContents(DLQ, (letter,))
    (view,) = json.loads(ok(run(contents, "show", DLQ, "--json")).stdout)
    time = view["envelope"]["time"]
    assert "T" in time and " " not in time
    assert datetime.fromisoformat(time).tzinfo is not None
    assert f'"time": "{time}"' in ok(run(contents, "show", DLQ)).stdout


def test_a_rerun_skips_what_was_replayed_unless_asked_to_send_it_again() -> None:
    first, second = undecodable(3), undecodable(4)
    contents = DlqContents(DLQ, (first, second), (ReplayMark(first.ref, "orders", T0),))
    plan = plan_dlq_replay(contents)
    assert [item.letter.ref for item in plan.items] == [second.ref]
    assert plan.replayed == (first,)
    assert [i.letter.ref for i in plan_dlq_replay(contents, again=True).items] == [
        first.ref,
        second.ref,
    ]
    result = ok(run(contents, "replay", DLQ))
    assert "1 replayed already, not sent again (--again sends them too)" in result.stderr
    dry = json.loads(ok(run(contents, "replay", DLQ, "--json")).stdout)
    assert [r["ref"] for r in dry["replayed_already"]] == [first.ref]
    assert dry["replayed_already"][0]["to"] == ["orders"]


# -- every kind, at random ---------------------------------------------------------------


@st.composite
def letters(draw: st.DrawFn, offset: int) -> DeadLetter:
    kind = draw(st.sampled_from(["routed", "foreign", "unreadable"]))
    key = draw(st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=8).map(str.encode)))
    body = draw(st.sampled_from(["envelope", "garbage", "null", "json"]))
    headers: list[h.Header] = []
    value: bytes | None
    if body == "envelope":
        value, headers = envelope(offset, size=draw(st.integers(1, 40)))
    elif body == "garbage":
        value = draw(st.binary(max_size=64))
    elif body == "json":
        value = b'{"order_id": "o-1"}'
    else:
        value = None
    headers += draw(
        st.lists(
            st.tuples(
                st.sampled_from(["x", "origin", "ce_id"]),
                st.one_of(st.none(), st.binary(max_size=6)),
            ),
            max_size=2,
        )
    )
    if kind == "foreign":
        return DeadLetter(DLQ, offset % 3, offset, None, key, value, tuple(headers), None)
    if kind == "unreadable":
        bad = (*headers, (h.EXCEPTION, b"ValueError"), (h.LAST_TIME, b"yesterday"))
        return DeadLetter(DLQ, 0, offset, T0, key, value, bad, None, header_problem="bad time")
    stage = draw(st.sampled_from(Stage))
    cut = draw(st.booleans()) and value is not None and len(value) > 40
    return routed(
        offset,
        key=key,
        value=value,
        headers=headers,
        stage=stage,
        max_bytes=len(value or b"") if cut else 1_000_000,
    )


@st.composite
def dlqs(draw: st.DrawFn) -> DlqContents:
    count = draw(st.integers(1, 6))
    found = tuple(draw(letters(offset)) for offset in range(count))
    marked = draw(st.lists(st.sampled_from(found), max_size=3))
    marks = tuple(ReplayMark(letter.ref, "orders", T0) for letter in marked)
    return DlqContents(DLQ, found, marks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dlqs())
def test_every_command_handles_every_kind_of_letter(contents: DlqContents) -> None:
    refs = [letter.ref for letter in contents.letters]

    summary = json.loads(ok(run(contents, "list", DLQ, "--json")).stdout)
    assert summary["total"] == len(refs)
    views = json.loads(ok(run(contents, "show", DLQ, "--count", "0", "--json")).stdout)
    assert [view["ref"] for view in views] == refs

    plan: dict[str, Any] = json.loads(ok(run(contents, "replay", DLQ, "--json")).stdout)
    accounted = [
        *(r["ref"] for r in plan["records"]),
        *(r["ref"] for r in plan["skipped"]),
        *(r["ref"] for r in plan["replayed_already"]),
    ]
    assert sorted(accounted) == sorted(refs)  # every letter sent, or said why not, once
    again = json.loads(ok(run(contents, "replay", DLQ, "--again", "--json")).stdout)
    assert again["replayed_already"] == []

    replayed = {mark.of for mark in contents.marks}
    ok(run(contents, "list", DLQ))
    for columns in (200, 60):
        shown = ok(run(contents, "show", DLQ, columns=columns)).output
        assert all(ref in shown for ref in refs)  # every letter shown, its ref whole
        planned = ok(run(contents, "replay", DLQ, columns=columns)).output
        assert all(ref in planned for ref in refs if ref not in replayed)
