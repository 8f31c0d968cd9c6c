"""Resolve positions to offsets against a partition's state: pure, no broker.

The rules are Kafka's own (``kafka-consumer-groups --reset-offsets``, class
``GroupOffsetsResetter``), so a plan made here matches that tool offset for offset:

* ``earliest`` is the log start offset, ``latest`` the log end offset.
* An offset, or a committed offset shifted by N, is clamped to ``[log start, log end]``.
* A shift needs a committed offset; without one it is an error (Kafka refuses too).
* A time resolves to the broker's offsets-for-times answer (the first record whose
  timestamp is at or after it); when no record is that recent, or the partition is
  empty, to the log end offset. A duration ago is the time ``now - duration``.

Where we are stricter than Kafka: a time in the future is an error (Kafka would quietly
answer the log end), and so is a range whose end resolves before its start.

The broker's answers come in a ``PartitionState``, gathered beforehand by
``streams.replay.lookup``; ``timestamps_needed`` says which times to ask it about.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streams.replay.errors import PositionError, RangeError
from streams.replay.positions import (
    Ago,
    AtOffset,
    AtTime,
    Earliest,
    Latest,
    Position,
    Shift,
    format_ms,
)

NO_OFFSET = -1  # the broker's answer to offsets-for-times when no record is that recent


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What resolution needs to know about one partition, at one moment.

    ``by_time`` maps each time asked about (epoch ms) to the broker's offsets-for-times
    answer (``NO_OFFSET`` when no record has a timestamp at or after it).
    """

    log_start: int
    log_end: int
    committed: int | None = None
    by_time: Mapping[int, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.log_end <= self.log_start


def clamp(offset: int, state: PartitionState) -> int:
    """``offset`` moved into ``[log start, log end]``, as Kafka's ``checkOffsetsRange``."""
    if offset > state.log_end:
        return state.log_end
    if offset < state.log_start:
        return state.log_start
    return offset


def time_of(position: Position, now_ms: int) -> int | None:
    """The epoch ms a time-based position stands for at ``now_ms`` (None otherwise)."""
    if isinstance(position, AtTime):
        return position.ms
    if isinstance(position, Ago):
        return now_ms - position.ms
    return None


def _in_the_future(position: Position, ms: int, now_ms: int) -> PositionError:
    """The refusal of a time after ``now_ms``: as the user typed it, then as UTC."""
    shown = str(position)
    at = "" if shown == format_ms(ms) else f" ({format_ms(ms)})"
    return PositionError(f"{shown}{at} is in the future (now is {format_ms(now_ms)})")


def timestamps_needed(positions: Iterable[Position | None], now_ms: int) -> set[int]:
    """The times to ask the broker's offsets-for-times about. Raises on a future time."""
    needed: set[int] = set()
    for position in positions:
        if position is None:
            continue
        ms = time_of(position, now_ms)
        if ms is None:
            continue
        if ms > now_ms:
            raise _in_the_future(position, ms, now_ms)
        needed.add(ms)
    return needed


def resolve(position: Position, state: PartitionState, now_ms: int, where: str = "") -> int:
    """The offset ``position`` stands for in a partition in ``state`` at ``now_ms``.

    Pure. Raises ``PositionError`` for a shift without a committed offset, a time in the
    future, or a time ``state`` holds no broker answer for. ``where`` names the partition
    in messages.
    """
    at = f" on {where}" if where else ""
    if isinstance(position, Earliest):
        return state.log_start
    if isinstance(position, Latest):
        return state.log_end
    if isinstance(position, AtOffset):
        return clamp(position.offset, state)
    if isinstance(position, Shift):
        if state.committed is None:
            raise PositionError(
                f"cannot shift by {position}{at}: the group has no committed offset"
            )
        return clamp(state.committed + position.delta, state)
    ms = time_of(position, now_ms)
    assert ms is not None  # every other position form is handled above
    if ms > now_ms:
        raise _in_the_future(position, ms, now_ms)
    try:
        answer = state.by_time[ms]
    except KeyError:
        raise PositionError(f"no offsets-for-times answer for {format_ms(ms)}{at}") from None
    return state.log_end if answer == NO_OFFSET else answer


def resolve_range(
    start: Position,
    end: Position | None,
    state: PartitionState,
    now_ms: int,
    where: str = "",
) -> tuple[int, int]:
    """``(first offset, end offset)`` of a half-open range; no ``end`` means the log end.

    Raises ``RangeError`` when the end resolves before the start (an empty range is fine).
    """
    first = resolve(start, state, now_ms, where)
    last = state.log_end if end is None else resolve(end, state, now_ms, where)
    if last < first:
        at = f" on {where}" if where else ""
        raise RangeError(
            f"--to {end} (offset {last}) is before --from {start} (offset {first}){at}"
        )
    return first, last
