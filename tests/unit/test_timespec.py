"""The one time grammar: instants and durations as users type them, everywhere.

Positions, retry delays and ``dlq --since`` read times through ``streams.timespec``; the
last tests check each of them accepts the same forms and refuses the same mistakes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.errors import StreamsError
from streams.failures.errors import FailureHeaderError, RetryPolicyError
from streams.failures.headers import parse_failure_headers
from streams.failures.policy import RetryPolicy, parse_delay
from streams.replay.errors import PositionError
from streams.replay.positions import Ago, AtTime, parse_position
from streams.timespec import (
    LAST_MS,
    MAX_DURATION_MS,
    TimeRangeError,
    TimeSpecError,
    format_duration,
    format_instant,
    format_instant_ms,
    format_iso_duration,
    parse_ago_ms,
    parse_duration,
    parse_duration_ms,
    parse_instant,
    parse_instant_ms,
    parse_instant_or_ago,
)

S, M, H, D = 1_000, 60_000, 3_600_000, 86_400_000
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT2H", 2 * H),
        ("P1DT30M", D + 30 * M),
        ("PT1.5S", 1_500),
        ("P1D", D),
        ("pt90s", 90 * S),
        ("PT0.001S", 1),
        ("PT0S", 0),
        ("2h", 2 * H),
        ("90s", 90 * S),
        ("1h30m", 90 * M),
        ("1h 30m", 90 * M),
        ("500ms", 500),
        ("1.5s", 1_500),
        ("1d", D),
        (" 2H ", 2 * H),
        ("0.5m", 30 * S),
    ],
)
def test_every_duration_form_parses(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms
    assert parse_duration(text) == timedelta(milliseconds=ms)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5", "has no unit"),
        ("-5m", "not a duration"),
        ("2 hours", "not a duration"),
        ("P", "not a duration"),
        ("PT", "not a duration"),
        ("P1DT", "not a duration"),
        ("P1M", "no fixed length"),
        ("P1Y", "no fixed length"),
        ("", "not a duration"),
        ("1x", "not a duration"),
    ],
)
def test_a_bad_duration_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(TimeSpecError, match=message) as info:
        parse_duration_ms(text)
    assert isinstance(info.value, StreamsError)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-11-29T10:00:00Z", 1_795_946_400_000),
        ("2026-11-29T11:00:00+01:00", 1_795_946_400_000),
        ("2026-11-29T10:00:00.250Z", 1_795_946_400_250),
        ("2026-11-29 10:00:00+00:00", 1_795_946_400_000),
        ("@1795946400000", 1_795_946_400_000),
        ("@0", 0),
    ],
)
def test_every_instant_form_parses(text: str, ms: int) -> None:
    assert parse_instant_ms(text) == ms
    assert parse_instant(text).tzinfo is not None


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("2026-11-30T10:00:00", "2026-11-30T10:00:00Z"),
        ("2026-11-30", "2026-11-30T00:00:00Z"),
    ],
)
def test_a_time_without_a_zone_is_refused_with_a_hint(text: str, hint: str) -> None:
    with pytest.raises(TimeSpecError, match=r"has no zone: add Z or \+01:00") as info:
        parse_instant(text)
    assert hint in str(info.value)


@pytest.mark.parametrize("text", ["yesterday", "2026-13-40T10:00:00Z", "@-5", "@", "1795946400"])
def test_a_bad_instant_names_the_forms(text: str) -> None:
    with pytest.raises(TimeSpecError, match="not a time"):
        parse_instant(text)


def test_since_takes_an_instant_or_a_duration_ago() -> None:
    assert parse_instant_or_ago("2026-11-30T10:00:00Z", NOW) == NOW - timedelta(hours=2)
    assert parse_instant_or_ago("PT2H", NOW) == NOW - timedelta(hours=2)
    assert parse_instant_or_ago("2h", NOW) == NOW - timedelta(hours=2)
    assert parse_instant_or_ago("@1795946400000", NOW) == datetime(2026, 11, 29, 10, tzinfo=UTC)
    with pytest.raises(TimeSpecError, match="has no zone"):
        parse_instant_or_ago("2026-11-30T10:00:00", NOW)
    with pytest.raises(TimeSpecError, match="not a time or a duration"):
        parse_instant_or_ago("yesterday", NOW)


durations_ms = st.integers(min_value=0, max_value=400 * D)
# From 1970 to the year 9998: room for a zone offset either side of the instant.
instants_ms = st.integers(min_value=D, max_value=253_370_764_799_999)


@given(durations_ms)
def test_a_short_duration_reads_back_to_itself(ms: int) -> None:
    assert parse_duration_ms(format_duration(ms)) == ms
    assert parse_duration(format_duration(timedelta(milliseconds=ms))) == timedelta(milliseconds=ms)


@given(durations_ms)
def test_an_iso_duration_reads_back_to_itself(ms: int) -> None:
    text = format_iso_duration(ms)
    assert text.startswith("P")
    assert parse_duration_ms(text) == ms


@given(instants_ms)
def test_an_instant_reads_back_to_itself(ms: int) -> None:
    text = format_instant_ms(ms)
    assert text.endswith("Z")
    assert parse_instant_ms(text) == ms
    assert parse_instant_ms(f"@{ms}") == ms


@given(
    instants_ms,
    st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timedelta(minutes=m)),
)
def test_an_instant_in_any_zone_is_the_same_instant(ms: int, offset: timedelta) -> None:
    utc = parse_instant(format_instant_ms(ms))
    local = utc.astimezone(timezone(offset))
    assert parse_instant_ms(local.isoformat(timespec="milliseconds")) == ms
    assert format_instant(local) == format_instant_ms(ms)


# -- every caller speaks the same grammar, and keeps its own error class ------------------


@given(st.integers(min_value=1, max_value=400 * D), st.booleans())
def test_positions_and_retry_delays_read_the_same_durations(ms: int, iso: bool) -> None:
    text = format_iso_duration(ms) if iso else format_duration(ms)
    assert parse_position(text) == Ago(ms)
    assert parse_delay(text) == timedelta(milliseconds=ms)


@given(instants_ms)
def test_positions_read_the_same_instants(ms: int) -> None:
    assert parse_position(format_instant_ms(ms)) == AtTime(ms)


def test_retry_delays_take_iso_durations_and_stay_positive() -> None:
    assert RetryPolicy.parse("PT1S, PT30S, PT5M").describe() == "1s, 30s, 5m (4 attempts)"
    for zero in ("0s", "PT0S"):
        with pytest.raises(RetryPolicyError, match="greater than zero"):
            parse_delay(zero)
    with pytest.raises(RetryPolicyError, match="has no unit"):
        parse_delay("5")


def test_a_naive_time_is_refused_by_positions_with_their_error_class() -> None:
    with pytest.raises(PositionError, match="add Z or"):
        parse_position("2026-11-30T10:00:00")


def test_time_headers_read_what_streams_writes() -> None:
    info = parse_failure_headers(
        [
            ("__streams.errors.exception", b"ValueError"),
            ("streams.failure.last_time", b"2026-11-30T10:00:00.000Z"),
        ]
    )
    assert info is not None
    assert info.last_failure == datetime(2026, 11, 30, 10, tzinfo=UTC)


# -- out of range: one typed refusal, never an OverflowError or a negative timestamp ------

NOW_MS = 1_796_040_000_000  # NOW as epoch milliseconds


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("@99999999999999999", "after 9999-12-31T23:59:59.999Z"),
        ("@99999999999999999999", "after 9999-12-31T23:59:59.999Z"),
        ("@" + "9" * 5_000, "after 9999-12-31T23:59:59.999Z"),  # past int()'s 4300 digits
        ("@253402300800000", "after 9999-12-31T23:59:59.999Z"),
        ("9999-12-31T23:59:59-01:00", "after 9999-12-31T23:59:59.999Z"),
        ("1969-12-31T23:59:59.999Z", "before 1970-01-01T00:00:00Z"),
        ("0001-01-01T00:00:00+01:00", "before 1970-01-01T00:00:00Z"),
    ],
)
def test_an_instant_out_of_range_is_a_range_error(text: str, where: str) -> None:
    with pytest.raises(TimeRangeError, match=where) as info:
        parse_instant(text)
    assert isinstance(info.value, TimeSpecError)  # every caller's handler catches it
    assert text[:40] in str(info.value)
    assert len(str(info.value)) < 160  # one line, however long the value


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("@0", 0),
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T01:00:00+01:00", 0),
        ("@253402300799999", LAST_MS),
        ("9999-12-31T23:59:59.999Z", LAST_MS),
    ],
)
def test_the_first_and_last_instants_parse(text: str, ms: int) -> None:
    assert parse_instant_ms(text) == ms
    assert parse_instant_ms(format_instant_ms(ms)) == ms


@pytest.mark.parametrize(
    "text", ["2932898d", "PT99999999999999999999H", "999999999d", "9" * 5_000 + "s"]
)
def test_a_duration_longer_than_the_span_is_a_range_error(text: str) -> None:
    with pytest.raises(TimeRangeError):
        parse_duration_ms(text)
    with pytest.raises(TimeRangeError):
        parse_duration(text)  # never an OverflowError from timedelta


def test_the_longest_duration_parses() -> None:
    assert parse_duration_ms("2932897d") == MAX_DURATION_MS
    assert parse_duration("2932897d") == timedelta(milliseconds=MAX_DURATION_MS)


def test_a_duration_ago_reaching_before_1970_is_a_range_error() -> None:
    assert parse_ago_ms(f"{NOW_MS}ms", NOW) == NOW_MS  # back to 1970 exactly
    assert parse_instant_or_ago(f"{NOW_MS}ms", NOW) == datetime(1970, 1, 1, tzinfo=UTC)
    for text in (f"{NOW_MS + 1}ms", "99999d", "999999999d", "PT99999999999999999999H"):
        with pytest.raises(TimeRangeError, match="ago is before 1970-01-01T00:00:00Z") as info:
            parse_instant_or_ago(text, NOW)
        assert "(at most 20787d ago)" in str(info.value)
        with pytest.raises(TimeRangeError):
            parse_ago_ms(text, NOW)


@given(st.integers(min_value=0))
def test_any_epoch_ms_is_an_instant_or_a_range_error(ms: int) -> None:
    if ms <= LAST_MS:
        assert parse_instant_ms(f"@{ms}") == ms
    else:
        with pytest.raises(TimeRangeError):
            parse_instant(f"@{ms}")


@given(st.integers(min_value=0, max_value=10**30), st.sampled_from(["ms", "s", "m", "h", "d"]))
def test_any_duration_is_its_milliseconds_or_a_range_error(count: int, unit: str) -> None:
    ms = count * {"ms": 1, "s": S, "m": M, "h": H, "d": D}[unit]
    if ms <= MAX_DURATION_MS:
        assert parse_duration_ms(f"{count}{unit}") == ms
    else:
        with pytest.raises(TimeRangeError):
            parse_duration_ms(f"{count}{unit}")


@given(st.integers(min_value=0, max_value=2 * NOW_MS))
def test_any_duration_ago_lands_in_range_or_is_a_range_error(ms: int) -> None:
    text = format_duration(ms)
    if ms <= NOW_MS:
        assert parse_instant_or_ago(text, NOW) == NOW - timedelta(milliseconds=ms)
    else:
        with pytest.raises(TimeRangeError):
            parse_instant_or_ago(text, NOW)


def test_every_caller_refuses_out_of_range_with_its_own_error_class() -> None:
    for position in ("@99999999999999999", "99999d", "1900-01-01T00:00:00Z"):
        with pytest.raises(PositionError, match=r"after 9999|before 1970"):
            parse_position(position)
    with pytest.raises(RetryPolicyError, match="longer than 2932897d"):
        parse_delay("999999999d")
    # A time header out of range is unreadable error headers, not an OverflowError.
    headers = [
        ("__streams.errors.exception", b"ValueError"),
        ("streams.failure.last_time", b"@99999999999999999"),
    ]
    with pytest.raises(FailureHeaderError, match="unreadable error headers: time"):
        parse_failure_headers(headers)
