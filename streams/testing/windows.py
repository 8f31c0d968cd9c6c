"""What a windowed aggregation should produce, computed the plain way, to assert against.

    expected = window_oracle([(env.key, env.time, env) for env in sent_to_one_partition],
                             tumbling(60, grace=10))
    expected.closed     # {(key, window start ms): [records]} of every window that closed
    expected.late       # indexes of the records every window of which had closed

Tumbling, hopping, session and sliding windows. One partition's records, in the order the
partition holds them (stream time is per partition: split the input with
``streams.topology.partitioning.partition_for`` first). A record counts in each of its
windows that had not closed, as of the largest event time seen before it (a session
record joins, and bridges, the open sessions of its key within the gap): no state, no
heap, no store, only the definition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streams.envelope import epoch_ms
from streams.topology.windows import AnyWindows, Sessions, Sliding, Windows


@dataclass
class WindowOracle:
    """``windows[(key, start_ms)]``: the records of each window, closed or not (a
    session's start is its first record's time); ``late``: the indexes of late records;
    ``stream_time_ms``: the largest event time seen."""

    spec: AnyWindows
    windows: dict[tuple[str, int], list[Any]] = field(default_factory=dict)
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    """The end of each window (a session's: its last record's time)."""
    late: list[int] = field(default_factory=list)
    stream_time_ms: int | None = None
    times: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    """Sliding windows: each key's counted records, with their times."""

    def closes_at(self, window: tuple[str, int]) -> int:
        spec = self.spec
        if isinstance(spec, Sessions):
            return spec.closes_at(self.ends[window])
        return spec.closes_at(window[1])

    def is_closed(self, window: tuple[str, int], now: int | None) -> bool:
        return now is not None and self.closes_at(window) <= now

    @property
    def closed(self) -> dict[tuple[str, int], list[Any]]:
        """The windows whose end plus grace the stream time reached."""
        now = self.stream_time_ms
        return {kw: items for kw, items in self.windows.items() if self.is_closed(kw, now)}

    @property
    def open(self) -> dict[tuple[str, int], list[Any]]:
        closed = self.closed
        return {kw: items for kw, items in self.windows.items() if kw not in closed}


def window_oracle(records: Iterable[tuple[str, datetime, Any]], spec: AnyWindows) -> WindowOracle:
    """Group ``(key, event time, item)`` records of one partition by key and window."""
    oracle = WindowOracle(spec)
    for i, (key, when, item) in enumerate(records):
        t = epoch_ms(when)
        add = (
            _join_session
            if isinstance(spec, Sessions)
            else _slide
            if isinstance(spec, Sliding)
            else _add_to_windows
        )
        counted = add(oracle, key, t, item)
        if not counted:
            oracle.late.append(i)
        seen = oracle.stream_time_ms
        oracle.stream_time_ms = t if seen is None else max(seen, t)
    return oracle


def _add_to_windows(oracle: WindowOracle, key: str, t: int, item: Any) -> bool:
    spec, seen = oracle.spec, oracle.stream_time_ms
    assert isinstance(spec, Windows)
    size, advance = spec.size_ms, spec.advance_ms
    mine = [s for s in range(t - t % advance - size, t + 1, advance) if s <= t < s + size]
    still_open = [s for s in mine if seen is None or spec.closes_at(s) > seen]
    for s in still_open:
        oracle.windows.setdefault((key, s), []).append(item)
        oracle.ends[key, s] = s + size
    return bool(still_open)


def _join_session(oracle: WindowOracle, key: str, t: int, item: Any) -> bool:
    """The record joins (and bridges) the key's open sessions within the gap of it."""
    spec, seen = oracle.spec, oracle.stream_time_ms
    assert isinstance(spec, Sessions)
    gap = spec.gap_ms
    touching = [
        kw
        for kw in oracle.windows
        if kw[0] == key
        and not oracle.is_closed(kw, seen)
        and kw[1] - gap <= t <= oracle.ends[kw] + gap
    ]
    start = min([t, *(kw[1] for kw in touching)])
    end = max([t, *(oracle.ends[kw] for kw in touching)])
    if seen is not None and spec.closes_at(end) <= seen:
        return False
    items = [x for kw in sorted(touching, key=lambda kw: kw[1]) for x in oracle.windows.pop(kw)]
    for kw in touching:
        del oracle.ends[kw]
    oracle.windows[key, start] = [*items, item]
    oracle.ends[key, start] = end
    return True


def _slide(oracle: WindowOracle, key: str, t: int, item: Any) -> bool:
    """The record ends a window of its own, holding the key's counted records within
    ``size`` before it, and joins the key's open windows ending within ``size`` after it."""
    spec, seen = oracle.spec, oracle.stream_time_ms
    assert isinstance(spec, Sliding)
    size = spec.size_ms
    own = (key, t - size + 1)
    if oracle.is_closed(own, seen):
        return False
    times = oracle.times.setdefault(key, [])
    if own not in oracle.windows:
        oracle.windows[own] = [x for when, x in times if t - size < when <= t]
        oracle.ends[own] = t + 1
    times.append((t, item))
    for kw in oracle.windows:
        end = oracle.ends[kw] - 1
        if kw[0] == key and t <= end < t + size and not oracle.is_closed(kw, seen):
            oracle.windows[kw].append(item)
    return True
