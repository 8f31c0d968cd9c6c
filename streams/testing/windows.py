"""What a windowed aggregation should produce, computed the plain way, to assert against.

    expected = window_oracle([(env.key, env.time, env) for env in sent_to_one_partition],
                             tumbling(60, grace=10))
    expected.closed     # {(key, window start ms): [records]} of every window that closed
    expected.late       # indexes of the records every window of which had closed

One partition's records, in the order the partition holds them (stream time is per
partition: split the input with ``streams.topology.partitioning.partition_for`` first). A
record counts in each of its windows that had not closed, as of the largest event time
seen before it: no state, no heap, no store, only the definition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streams.topology.windows import Windows


@dataclass
class WindowOracle:
    """``windows[(key, start_ms)]``: the records of each window, closed or not; ``late``:
    the indexes of late records; ``stream_time_ms``: the largest event time seen."""

    spec: Windows
    windows: dict[tuple[str, int], list[Any]] = field(default_factory=dict)
    late: list[int] = field(default_factory=list)
    stream_time_ms: int | None = None

    @property
    def closed(self) -> dict[tuple[str, int], list[Any]]:
        """The windows whose end plus grace the stream time reached."""
        now = self.stream_time_ms
        return {
            kw: items
            for kw, items in self.windows.items()
            if now is not None and self.spec.closes_at(kw[1]) <= now
        }

    @property
    def open(self) -> dict[tuple[str, int], list[Any]]:
        closed = self.closed
        return {kw: items for kw, items in self.windows.items() if kw not in closed}


def window_oracle(records: Iterable[tuple[str, datetime, Any]], spec: Windows) -> WindowOracle:
    """Group ``(key, event time, item)`` records of one partition by key and window."""
    oracle = WindowOracle(spec)
    size, advance = spec.size_ms, spec.advance_ms
    for i, (key, when, item) in enumerate(records):
        t = round(when.timestamp() * 1000)
        mine = [s for s in range(t - t % advance - size, t + 1, advance) if s <= t < s + size]
        seen = oracle.stream_time_ms
        still_open = [s for s in mine if seen is None or spec.closes_at(s) > seen]
        if not still_open:
            oracle.late.append(i)
        for s in still_open:
            oracle.windows.setdefault((key, s), []).append(item)
        oracle.stream_time_ms = t if seen is None else max(seen, t)
    return oracle
