"""Property tests: resolution against synthetic partition states keeps Kafka's rules.

A synthetic partition is a log start offset, the timestamps of its records (one per
offset, in any order, as CreateTime allows), and maybe a committed offset. Its
offsets-for-times answers come from a model of the broker's index: the first offset whose
timestamp is at or after the time asked, else none.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from streams.replay.errors import PositionError, RangeError
from streams.replay.positions import Ago, AtOffset, AtTime, Earliest, Latest, Position, Shift
from streams.replay.resolve import (
    NO_OFFSET,
    PartitionState,
    resolve,
    resolve_range,
    timestamps_needed,
)

NOW = 1_800_000_000_000


@dataclass(frozen=True)
class Synthetic:
    log_start: int
    timestamps: tuple[int, ...]  # timestamps[i] is the record at offset log_start + i
    committed: int | None

    @property
    def log_end(self) -> int:
        return self.log_start + len(self.timestamps)

    def offset_for_time(self, ms: int) -> int:
        for i, ts in enumerate(self.timestamps):
            if ts >= ms:
                return self.log_start + i
        return NO_OFFSET

    def state(self, *positions: Position | None) -> PartitionState:
        times = timestamps_needed(positions, NOW)
        return PartitionState(
            self.log_start,
            self.log_end,
            self.committed,
            {ms: self.offset_for_time(ms) for ms in times},
        )


@st.composite
def partitions(draw: st.DrawFn, min_records: int = 0) -> Synthetic:
    log_start = draw(st.integers(0, 10_000))
    timestamps = draw(
        st.lists(st.integers(NOW - 10_000_000, NOW), min_size=min_records, max_size=40)
    )
    committed = draw(st.none() | st.integers(0, log_start + len(timestamps) + 50))
    return Synthetic(log_start, tuple(timestamps), committed)


past_times = st.integers(NOW - 12_000_000, NOW)
positions = st.one_of(
    st.just(Earliest()),
    st.just(Latest()),
    st.builds(AtOffset, st.integers(0, 20_000)),
    st.builds(AtTime, past_times),
    st.builds(Ago, st.integers(0, 12_000_000)),
    st.builds(Shift, st.integers(-20_000, 20_000)),
)


def resolves(position: Position, part: Synthetic) -> int | None:
    try:
        return resolve(position, part.state(position), NOW)
    except PositionError:
        return None


@given(partitions(), positions)
def test_every_position_lands_inside_the_log(part: Synthetic, position: Position) -> None:
    offset = resolves(position, part)
    if offset is None:  # only a shift without a commit may fail
        assert isinstance(position, Shift) and part.committed is None
        return
    assert part.log_start <= offset <= part.log_end


@given(partitions(), st.integers(0, 20_000))
def test_an_offset_clamps_to_the_log_like_kafka(part: Synthetic, offset: int) -> None:
    got = resolve(AtOffset(offset), part.state(), NOW)
    assert got == min(max(offset, part.log_start), part.log_end)


@given(partitions(), st.integers(-20_000, 20_000))
def test_a_shift_moves_the_commit_and_clamps(part: Synthetic, delta: int) -> None:
    if part.committed is None:
        with pytest.raises(PositionError, match="no committed offset"):
            resolve(Shift(delta), part.state(), NOW)
        return
    got = resolve(Shift(delta), part.state(), NOW)
    assert got == min(max(part.committed + delta, part.log_start), part.log_end)


@given(partitions(), past_times)
def test_a_time_lands_on_the_first_record_at_or_after_it(part: Synthetic, ms: int) -> None:
    got = resolve(AtTime(ms), part.state(AtTime(ms)), NOW)
    before = part.timestamps[: got - part.log_start]
    assert all(ts < ms for ts in before)
    if got < part.log_end:
        assert part.timestamps[got - part.log_start] >= ms
    else:  # no record that recent (or an empty partition): the log end, as Kafka falls back
        assert all(ts < ms for ts in part.timestamps)


@given(partitions(), past_times, past_times)
def test_later_times_never_resolve_earlier(part: Synthetic, a: int, b: int) -> None:
    early, late = sorted((a, b))
    state = part.state(AtTime(early), AtTime(late))
    assert resolve(AtTime(early), state, NOW) <= resolve(AtTime(late), state, NOW)


@given(partitions(), st.integers(0, 12_000_000))
def test_a_duration_ago_is_the_time_that_long_before_now(part: Synthetic, ms: int) -> None:
    state = part.state(Ago(ms), AtTime(NOW - ms))
    assert resolve(Ago(ms), state, NOW) == resolve(AtTime(NOW - ms), state, NOW)


@given(partitions(), positions)
def test_earliest_and_latest_bound_every_position(part: Synthetic, position: Position) -> None:
    offset = resolves(position, part)
    assume(offset is not None)
    state = part.state()
    assert resolve(Earliest(), state, NOW) <= offset <= resolve(Latest(), state, NOW)  # type: ignore[operator]


@given(st.integers(0, 10_000), st.none() | st.integers(0, 20_000), positions)
def test_an_empty_partition_resolves_everything_to_its_end(
    start: int, committed: int | None, position: Position
) -> None:
    part = Synthetic(start, (), committed)
    offset = resolves(position, part)
    assume(offset is not None)
    assert offset == start


@given(partitions(), positions, positions)
def test_a_range_is_refused_exactly_when_its_end_is_before_its_start(
    part: Synthetic, start: Position, end: Position
) -> None:
    first, last = resolves(start, part), resolves(end, part)
    assume(first is not None and last is not None)
    state = part.state(start, end)
    if last < first:  # type: ignore[operator]
        with pytest.raises(RangeError, match="is before --from"):
            resolve_range(start, end, state, NOW)
    else:
        assert resolve_range(start, end, state, NOW) == (first, last)


@given(partitions(), positions)
def test_a_range_without_end_runs_to_the_log_end(part: Synthetic, start: Position) -> None:
    first = resolves(start, part)
    assume(first is not None)
    assert resolve_range(start, None, part.state(start), NOW) == (first, part.log_end)


@given(st.integers(1, 10**9))
def test_a_time_in_the_future_is_refused(ahead: int) -> None:
    with pytest.raises(PositionError, match="in the future"):
        timestamps_needed([AtTime(NOW + ahead)], NOW)
    with pytest.raises(PositionError, match="in the future"):
        resolve(AtTime(NOW + ahead), PartitionState(0, 10), NOW)
