"""DLQ summaries, filters and replay plans, on dead letters built as the runtime builds them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from streams.codec.errors import UnknownTypeError
from streams.coordinates import Coordinates
from streams.dlq import (
    DeadLetter,
    DlqContents,
    DlqError,
    DlqFilter,
    ReplayMark,
    describe,
    plan_dlq_replay,
    summarize,
)
from streams.dlq.letters import NO_ERROR_HEADERS
from streams.failures import headers as h
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DLQ = "shop-orders-dlq"


def dead(
    offset: int, exc: Exception, key: bytes | None, minutes: int, stage: Stage = Stage.PROCESS
) -> DeadLetter:
    route = FailureRouter("shop", RetryPolicy.no_retries()).route(
        FailedRecord(
            key=key,
            value=b"v%d" % offset,
            headers=[("ce_id", b"id-%d" % offset)],
            coordinates=Coordinates("orders", offset % 2, 100 + offset),
        ),
        exc,
        stage=stage,
        now=T0 + timedelta(minutes=minutes),
    )
    return DeadLetter(
        topic=DLQ,
        partition=offset % 2,
        offset=offset,
        timestamp=None,
        key=route.key,
        value=route.value,
        headers=tuple(route.headers),
        failure=h.parse_failure_headers(route.headers),
    )


def contents() -> DlqContents:
    foreign = DeadLetter(DLQ, 0, 9, T0, b"k9", b"raw", (("x", b"1"),), None)
    return DlqContents(
        DLQ,
        (
            dead(0, ValueError("neg"), b"k1", 0),
            dead(1, ValueError("neg"), b"k2", 5),
            dead(2, UnknownTypeError("order.lost"), b"k1", 10, Stage.DECODE),
            dead(3, KeyError("sku"), None, 20),
            foreign,
        ),
        (ReplayMark(f"{DLQ}/0/0", "orders", T0), ReplayMark(f"{DLQ}/0/0", "orders", T0)),
    )


def test_the_summary_counts_per_error_and_source_and_spans_the_failures() -> None:
    summary = summarize(contents())
    assert summary.total == 5
    assert summary.by_error == {
        "ValueError": 2,
        "streams.codec.errors.UnknownTypeError": 1,
        "KeyError": 1,
        NO_ERROR_HEADERS: 1,
    }
    assert summary.by_source == {"orders": 4, "<unknown>": 1}
    assert summary.oldest == T0
    assert summary.newest == T0 + timedelta(minutes=20)
    assert (summary.replayed, summary.replays) == (1, 2)


def test_filters_by_error_type_key_time_and_position() -> None:
    c = contents()

    def offsets(f: DlqFilter) -> list[int]:
        return [d.offset for d in f.select(c.letters)]

    assert offsets(DlqFilter(error_type="ValueError")) == [0, 1]
    assert offsets(DlqFilter(error_type="UnknownTypeError")) == [2]
    assert offsets(DlqFilter(error_type="streams.codec.errors.UnknownTypeError")) == [2]
    assert offsets(DlqFilter(key="k1")) == [0, 2]
    assert offsets(DlqFilter(since=T0 + timedelta(minutes=5))) == [1, 2, 3]
    assert offsets(DlqFilter(until=T0 + timedelta(minutes=5))) == [0, 1, 9]
    assert offsets(DlqFilter(records=frozenset({(1, 3), (0, 2)}))) == [2, 3]
    assert offsets(DlqFilter(origin_topic="orders", key="k2")) == [1]


def test_a_replay_sends_the_original_record_back_home_with_a_replay_header() -> None:
    # offset 0 was replayed already (two marks): only sent again when asked
    assert [d.offset for d in plan_dlq_replay(contents(), DlqFilter(key="k1")).replayed] == [0]
    plan = plan_dlq_replay(contents(), DlqFilter(key="k1"), now=T0, again=True)
    assert [(i.topic, i.partition, i.key, i.value) for i in plan.items] == [
        ("orders", 0, b"k1", b"v0"),
        ("orders", 0, b"k1", b"v2"),
    ]
    assert plan.items[0].headers == [
        ("ce_id", b"id-0"),
        (h.REPLAY_OF, f"{DLQ}/0/0".encode()),
        (h.REPLAY_TIME, b"2026-11-29T12:00:00.000Z"),
    ]
    assert plan.by_target() == {"orders": 2}


def test_a_replay_elsewhere_lets_the_partitioner_choose_and_foreign_records_need_a_target() -> None:
    plan = plan_dlq_replay(contents())
    assert [letter.offset for letter, _ in plan.skipped] == [9]
    elsewhere = plan_dlq_replay(contents(), to="orders-fixed")
    assert {i.topic for i in elsewhere.items} == {"orders-fixed"}
    assert {i.partition for i in elsewhere.items} == {None}
    assert len(elsewhere.items) == 4  # and offset 0, replayed already
    assert [d.offset for d in elsewhere.replayed] == [0]


def test_describe_shows_error_ids_headers_and_decoding_problems() -> None:
    c = contents()

    def decoder(value: bytes | None, headers: h.Headers) -> dict[str, object]:
        if value == b"v2":
            raise UnknownTypeError("no schema for order.lost")
        return {"value": value}

    good = describe(c.letters[0], c, decoder)
    assert good["event_id"] == "id-0"
    assert good["key"] == "k1"
    assert good["error"]["exception"] == "ValueError"
    assert good["error"]["source"] == {"topic": "orders", "partition": 0, "offset": 100}
    assert good["headers"] == {"ce_id": "id-0"}
    assert good["envelope"] == {"value": b"v0"}
    assert len(good["replays"]) == 2
    bad = describe(c.letters[2], c, decoder)
    assert bad["envelope"] is None
    assert bad["decode_error"] == "UnknownTypeError: no schema for order.lost"
    assert bad["error"]["stage"] == "decode"


def test_a_topic_without_error_headers_is_no_dlq_and_an_empty_one_is_an_empty_dlq() -> None:
    foreign = [DeadLetter("orders", 0, n, T0, b"k", b"raw", (("x", b"1"),), None) for n in (0, 1)]
    with pytest.raises(DlqError) as refused:
        DlqContents("orders", tuple(foreign)).check_is_dlq()
    assert str(refused.value) == (
        "orders holds no dead letters: 2 record(s) without error headers (is it a DLQ?)"
    )
    DlqContents(DLQ, ()).check_is_dlq()  # empty: an empty DLQ
    contents().check_is_dlq()  # one foreign record among dead letters: listed, not refused
    unreadable = DeadLetter(DLQ, 0, 0, T0, b"k", b"raw", (), None, header_problem="bad time")
    DlqContents(DLQ, (unreadable,)).check_is_dlq()  # error headers, if unreadable ones
    DlqContents(DLQ, tuple(foreign), (ReplayMark(f"{DLQ}/0/0", "orders", T0),)).check_is_dlq()


def test_a_letter_whose_value_was_cut_to_fit_is_not_replayed_and_the_plan_says_where_it_is() -> (
    None
):
    letter = dead(4, ValueError("neg"), b"k4", 0)
    assert letter.failure is not None
    cut = replace(letter, failure=replace(letter.failure, value_cut=1_048_000))
    plan = plan_dlq_replay(DlqContents(DLQ, (cut,), ()), now=T0)
    assert plan.items == ()
    ((skipped, why),) = plan.skipped
    assert skipped is cut
    assert "cut to fit the DLQ" in why and "orders[0]@104" in why
