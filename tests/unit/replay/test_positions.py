"""Parsing positions: every form users type, and the mistakes they make."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.replay.errors import PositionError, RangeError
from streams.replay.positions import (
    Ago,
    AtOffset,
    AtTime,
    Earliest,
    Latest,
    Position,
    PositionSpec,
    Shift,
    TopicSelection,
    parse_position,
    parse_position_spec,
    parse_topic_selection,
)
from streams.replay.resolve import PartitionState, resolve, resolve_range

H = 3_600_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("earliest", Earliest()),
        ("LATEST", Latest()),
        ("0", AtOffset(0)),
        ("1234", AtOffset(1234)),
        ("+100", Shift(100)),
        ("-100", Shift(-100)),
        ("2026-11-29T10:00:00Z", AtTime(1_795_946_400_000)),
        ("2026-11-29T11:00:00+01:00", AtTime(1_795_946_400_000)),
        ("2026-11-29T10:00:00.250Z", AtTime(1_795_946_400_250)),
        ("@1795946400000", AtTime(1_795_946_400_000)),
        ("PT2H", Ago(2 * H)),
        ("P1DT2H", Ago(26 * H)),
        ("PT1.5S", Ago(1500)),
        ("2h", Ago(2 * H)),
        ("30m", Ago(30 * 60_000)),
        ("1h30m", Ago(90 * 60_000)),
        ("500ms", Ago(500)),
        ("1d", Ago(24 * H)),
    ],
)
def test_every_position_form_parses(text: str, expected: Position) -> None:
    assert parse_position(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2026-11-29T10:00:00", r"has no zone: add Z or \+01:00"),
        ("yesterday", "not a position"),
        ("12x", "not a position"),
        ("PT", "not a position"),
        ("", "not a position"),
        ("2026-13-40T10:00:00Z", "not a time"),
        ("2 hours", "not a position"),
    ],
)
def test_bad_positions_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PositionError, match=message):
        parse_position(text)


def test_per_partition_spec() -> None:
    spec = parse_position_spec("0=100,2=earliest,3=-5")
    assert spec == PositionSpec(per_partition={0: AtOffset(100), 2: Earliest(), 3: Shift(-5)})
    assert spec.for_partition(1) is None
    assert parse_position_spec("2h") == PositionSpec(default=Ago(2 * H))


@pytest.mark.parametrize("text", ["0=1,0=2", "x=1", "0=nope", "=5"])
def test_bad_per_partition_specs(text: str) -> None:
    with pytest.raises(PositionError):
        parse_position_spec(text)


def test_topic_selection_like_kafkas_tool() -> None:
    assert parse_topic_selection("orders") == TopicSelection("orders")
    assert parse_topic_selection("orders:2,0") == TopicSelection("orders", (0, 2))
    for bad in ("orders:", "orders:a", ":1", "orders:-1"):
        with pytest.raises(PositionError):
            parse_topic_selection(bad)


positions = st.one_of(
    st.just(Earliest()),
    st.just(Latest()),
    st.builds(AtOffset, st.integers(0, 2**62)),
    st.builds(AtTime, st.integers(0, 2**45)),
    st.builds(Ago, st.integers(1, 2**40)),
    st.builds(Shift, st.integers(-(2**40), 2**40).filter(bool)),
)


@given(positions)
def test_a_position_prints_as_text_that_parses_back_to_it(position: Position) -> None:
    assert parse_position(str(position)) == position


@given(st.dictionaries(st.integers(0, 50), positions, min_size=1))
def test_a_per_partition_spec_prints_back_to_itself(per: dict[int, Position]) -> None:
    spec = PositionSpec(per_partition=per)
    assert parse_position_spec(str(spec)) == spec


@pytest.mark.parametrize(
    "text", ["2h", "PT2H", "90m", "2026-11-29T10:00:00Z", "@1795946400000", "0=2h,1=earliest"]
)
def test_a_position_is_shown_as_the_user_typed_it(text: str) -> None:
    assert str(parse_position_spec(text)) == text


def test_a_refusal_names_the_positions_as_typed() -> None:
    now = 1_796_000_000_000
    nine_utc = 1_795_942_800_000  # 2026-11-29T09:00:00Z
    state = PartitionState(0, 10, by_time={now - H: 8, nine_utc: 2})
    start, end = parse_position("1h"), parse_position("2026-11-29T10:00:00+01:00")
    with pytest.raises(RangeError) as refused:
        resolve_range(start, end, state, now)
    assert str(refused.value) == (
        "--to 2026-11-29T10:00:00+01:00 (offset 2) is before --from 1h (offset 8)"
    )
    with pytest.raises(PositionError) as future:
        resolve(parse_position("@1796000000001"), state, now)
    assert str(future.value).startswith("@1796000000001 (2026-11-30T00:53:20.001Z) is in the")


def test_a_position_made_in_code_is_shown_as_a_time_or_a_duration() -> None:
    assert str(AtTime(1_795_946_400_000)) == "2026-11-29T10:00:00.000Z"
    assert str(Ago(2 * H)) == "2h"
