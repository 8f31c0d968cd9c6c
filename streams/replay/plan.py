"""A replay plan: the half-open offset range ``[start, end)`` to read in each partition.

``plan_replay`` asks the broker for each partition's state once (see ``lookup.py``) and
resolves the positions purely (see ``resolve.py``); nothing is read or written. Ends are
read-committed log ends, so a replay never waits on an open transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from streams.cluster import Cluster
from streams.replay.lookup import partition_states, partitions_for
from streams.replay.positions import Latest, PositionSpec, TopicSelection
from streams.replay.resolve import resolve_range


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one partition, with the log bounds they were resolved in."""

    topic: str
    partition: int
    start: int
    end: int
    log_start: int
    log_end: int

    @property
    def size(self) -> int:
        """Offsets in the range: an upper bound on records (compaction and transaction
        markers leave gaps)."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    """Where a replay reads: one ``PartitionRange`` per partition, resolved at ``now_ms``."""

    topic: str
    ranges: tuple[PartitionRange, ...]
    start: PositionSpec
    end: PositionSpec | None
    now_ms: int

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)

    def as_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "from": str(self.start),
            "to": str(self.end) if self.end is not None else "latest",
            "resolved_at_ms": self.now_ms,
            "partitions": [
                {"partition": r.partition, "start": r.start, "end": r.end, "offsets": r.size}
                for r in self.ranges
            ],
        }


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def plan_replay(
    cluster: Cluster,
    source: TopicSelection,
    start: PositionSpec,
    end: PositionSpec | None = None,
    *,
    group: str | None = None,
    at_ms: int | None = None,
    read_committed: bool = True,
) -> ReplayPlan:
    """Resolve ``start``/``end`` on every selected partition of ``source``.

    ``group`` supplies committed offsets for shifts; ``at_ms`` fixes "now" (for durations
    ago); ``read_committed`` False resolves ``latest`` to the high watermark instead of
    the last stable offset (for readers that see open transactions). Blocks on a few
    broker lookups; raises ``PositionError``/``RangeError`` for bad positions,
    ``TopicNotFoundError``, ``ClusterError``.
    """
    at = now_ms() if at_ms is None else at_ms
    partitions = partitions_for(cluster, source, start, end)
    wanted = [start.for_partition(p) for p in partitions]
    if end is not None:
        wanted += [end.for_partition(p) for p in partitions]
    states = partition_states(
        cluster, source.topic, partitions, wanted, at, group=group, read_committed=read_committed
    )
    ranges = []
    for p in partitions:
        state = states[p]
        first_pos = start.for_partition(p) or Latest()
        last_pos = None if end is None else end.for_partition(p)
        first, last = resolve_range(first_pos, last_pos, state, at, f"{source.topic}:{p}")
        ranges.append(PartitionRange(source.topic, p, first, last, state.log_start, state.log_end))
    return ReplayPlan(source.topic, tuple(ranges), start, end, at)
