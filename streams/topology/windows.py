"""Windows by event time, and what an aggregation hands on: ``Window`` and ``Update``.

A record belongs to the windows its envelope's ``time`` falls in:

- ``tumbling(size)``: back-to-back windows of ``size`` seconds, one per record;
- ``hopping(size, advance)``: windows of ``size`` seconds starting every ``advance``
  seconds, ``size / advance`` per record (they overlap);
- ``session(gap)``: per key, records less than ``gap`` seconds apart make one session;
  a record that bridges two sessions merges them (their values with the aggregation's
  ``merge``);
- ``sliding(size)``: one window per record, the ``size`` seconds of its key up to and
  including it: ``(t - size, t]``, the key's last ``size`` seconds as of each record
  (a moving count or sum). Records of a key at the same time share a window.

Fixed windows are aligned to the epoch (a 60 s window starts on the minute),
``[start, end)``; a session's ``start`` and ``end`` are its first and last event times.

**Stream time** is the largest event time a partition has seen (kept in the aggregation's
store, so it holds across restarts and moves with the partition). A window **closes** when
stream time reaches its end plus its ``grace`` (a session: its end plus gap plus grace):
a record arriving out of order inside the grace still counts; one whose every window has
closed (sliding: whose own window has) is **late**: it goes to the
aggregation's ``late()`` stream when the topology reads it, else to the dead-letter topic
with a ``LateRecordError`` (never dropped in silence). A hopping record late for some of
its windows only counts in the open ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from streams.envelope import Envelope
from streams.topology.errors import TopologyError


class LateRecordError(Exception):
    """A record arrived after every window it belongs to closed (end + grace <= stream time)."""


class MissingKeyError(Exception):
    """A record without a key reached a step that keeps or looks values up by key (an
    aggregation, a table, a windowed join)."""


@dataclass(frozen=True, slots=True)
class Window:
    """``[start_ms, end_ms)`` in epoch milliseconds (``start``/``end``: aware datetimes)."""

    start_ms: int
    end_ms: int

    @property
    def start(self) -> datetime:
        return datetime.fromtimestamp(self.start_ms / 1000, UTC)

    @property
    def end(self) -> datetime:
        return datetime.fromtimestamp(self.end_ms / 1000, UTC)


@dataclass(frozen=True, slots=True)
class Windows:
    """How records fall into windows: ``size_ms`` long, one starting every ``advance_ms``
    (``advance_ms == size_ms``: tumbling), closing ``grace_ms`` after their end."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @property
    def kind(self) -> str:
        return "tumbling" if self.advance_ms == self.size_ms else "hopping"

    def of(self, time_ms: int) -> list[int]:
        """The start of every window holding ``time_ms``, oldest first."""
        size, advance = self.size_ms, self.advance_ms
        last = time_ms - time_ms % advance
        if advance == size:
            return [last]
        return list(range(last - size + advance, last + 1, advance))

    def closes_at(self, start_ms: int) -> int:
        """Stream time at which the window starting at ``start_ms`` closes."""
        return start_ms + self.size_ms + self.grace_ms

    def describe(self) -> str:
        size, grace = _seconds(self.size_ms), _seconds(self.grace_ms)
        if self.kind == "tumbling":
            return f"tumbling {size}, grace {grace}"
        return f"hopping {size} every {_seconds(self.advance_ms)}, grace {grace}"


@dataclass(frozen=True, slots=True)
class Sessions:
    """Sessions per key: records less than ``gap_ms`` apart belong together; a session
    closes ``gap_ms + grace_ms`` after its last record."""

    gap_ms: int
    grace_ms: int
    kind = "session"

    def closes_at(self, end_ms: int) -> int:
        """Stream time at which a session whose last record is at ``end_ms`` closes."""
        return end_ms + self.gap_ms + self.grace_ms

    def describe(self) -> str:
        return f"session gap {_seconds(self.gap_ms)}, grace {_seconds(self.grace_ms)}"


def session(gap: float, *, grace: float = 0) -> Sessions:
    """Sessions of each key: a record within ``gap`` seconds of a session joins it (two
    sessions it bridges merge); records up to ``grace`` seconds out of order still count."""
    return Sessions(_positive_ms(gap, "a session gap"), _grace_ms(grace))


@dataclass(frozen=True, slots=True)
class Sliding:
    """A window per record: the ``size_ms`` of its key up to and including it, closing
    ``grace_ms`` after its end."""

    size_ms: int
    grace_ms: int
    kind = "sliding"

    def window_of(self, time_ms: int) -> Window:
        """The window a record at ``time_ms`` ends: ``(time - size, time]``."""
        return Window(time_ms - self.size_ms + 1, time_ms + 1)

    def closes_at(self, start_ms: int) -> int:
        """Stream time at which the window starting at ``start_ms`` closes."""
        return start_ms + self.size_ms + self.grace_ms

    def describe(self) -> str:
        return f"sliding {_seconds(self.size_ms)}, grace {_seconds(self.grace_ms)}"


def sliding(size: float, *, grace: float = 0) -> Sliding:
    """A window of ``size`` seconds ending at each record (its key's last ``size`` seconds
    as of it); records up to ``grace`` seconds out of order still count."""
    return Sliding(_positive_ms(size, "a sliding window's size"), _grace_ms(grace))


AnyWindows = Windows | Sessions | Sliding


def tumbling(size: float, *, grace: float = 0) -> Windows:
    """Back-to-back windows of ``size`` seconds; records up to ``grace`` seconds out of
    order still count."""
    return hopping(size, size, grace=grace)


def hopping(size: float, advance: float, *, grace: float = 0) -> Windows:
    """Windows of ``size`` seconds, a new one every ``advance`` seconds (``size`` must be a
    multiple of it); records up to ``grace`` seconds out of order still count."""
    size_ms, advance_ms, grace_ms = _ms(size), _ms(advance), _grace_ms(grace)
    if size_ms <= 0 or advance_ms <= 0:
        raise TopologyError(f"window size and advance must be positive, got {size}, {advance}")
    if advance_ms > size_ms or size_ms % advance_ms:
        raise TopologyError(
            f"a hopping window's size ({size} s) must be a multiple of its advance ({advance} s)"
        )
    return Windows(size_ms, advance_ms, grace_ms)


@dataclass(frozen=True, slots=True)
class Update:
    """One change of an aggregation's table, handed to ``to_stream``'s function.

    ``key``: the record key it groups by; ``value``: the aggregate now (None: a session
    that was merged into a larger one, which comes in the next update); ``window``: its
    window (None for an aggregation without windows); ``final``: the window closed and
    this is its last value (``emit="final"``); ``cause``: the envelope that made the change
    (for a final value, the one whose time closed the window), to ``follow`` it."""

    key: str
    value: Any
    window: Window | None
    final: bool
    cause: Envelope


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _positive_ms(seconds: float, what: str) -> int:
    ms = _ms(seconds)
    if ms <= 0:
        raise TopologyError(f"{what} must be positive, got {seconds}")
    return ms


def _grace_ms(grace: float) -> int:
    ms = _ms(grace)
    if ms < 0:
        raise TopologyError(f"grace must not be negative, got {grace}")
    return ms


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"
