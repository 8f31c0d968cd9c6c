"""Gather each partition's state from the broker, for pure resolution (``resolve.py``).

One ListOffsets request per kind of answer (log start, log end, each time asked about),
covering every partition at once; the committed offsets of a group only when a shift
needs them. Blocks for at most a few ``Cluster.timeout`` periods; raises ``ReplayError``
and ``streams.cluster``'s ``ClusterError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from streams.cluster import Cluster, TopicNotFoundError
from streams.replay.errors import PositionError
from streams.replay.positions import Position, PositionSpec, Shift, TopicSelection
from streams.replay.resolve import PartitionState, timestamps_needed


def select(cluster: Cluster, selection: TopicSelection) -> list[int]:
    """The partitions a selection names, checked to exist. Raises ``TopicNotFoundError``."""
    count = cluster.partition_count(selection.topic)
    if selection.partitions is None:
        return list(range(count))
    missing = sorted(p for p in set(selection.partitions) if not 0 <= p < count)
    if missing:
        raise TopicNotFoundError(
            f"topic {selection.topic!r} has no partition {', '.join(map(str, missing))} "
            f"(it has {count}: 0..{count - 1})"
        )
    return list(selection.partitions)


def partitions_for(
    cluster: Cluster, selection: TopicSelection, *specs: PositionSpec | None
) -> list[int]:
    """The partitions a command acts on: those selected (``topic:0,2``), else those a
    per-partition position names, else all. Raises when a position names a partition the
    topic lacks, or a selected partition has no position."""
    per = [s.per_partition for s in specs if s is not None and s.per_partition]
    named = sorted(set().union(*per)) if per else None
    if selection.partitions is None and named is not None:
        selection = TopicSelection(selection.topic, tuple(named))
    partitions = select(cluster, selection)
    for spec in specs:
        if spec is None or spec.default is not None:
            continue
        missing = [p for p in partitions if p not in spec.per_partition]
        if missing:
            raise PositionError(
                f"no position for partition {', '.join(map(str, missing))} of "
                f"{selection.topic!r} in {spec}"
            )
    return partitions


def partition_states(
    cluster: Cluster,
    topic: str,
    partitions: Sequence[int],
    positions: Iterable[Position | None],
    now_ms: int,
    *,
    group: str | None = None,
    read_committed: bool = False,
) -> dict[int, PartitionState]:
    """Log start, log end, the answers for every time in ``positions`` and (when a shift
    needs it, or ``group`` is given) the group's committed offsets, per partition."""
    positions = list(positions)
    times = sorted(timestamps_needed(positions, now_ms))
    tps = [(topic, p) for p in partitions]
    starts = cluster.list_offsets(tps, "earliest", read_committed=read_committed)
    ends = cluster.list_offsets(tps, "latest", read_committed=read_committed)
    by_time = {ms: cluster.list_offsets(tps, ms, read_committed=read_committed) for ms in times}
    committed: dict[tuple[str, int], int] = {}
    if any(isinstance(p, Shift) for p in positions):
        if group is None:
            raise PositionError("a shift (+N/-N) moves a group's committed offset: give --group")
        committed = cluster.committed(group, tps)
    elif group is not None:
        committed = cluster.committed(group, tps)
    return {
        p: PartitionState(
            log_start=starts[(topic, p)],
            log_end=ends[(topic, p)],
            committed=committed.get((topic, p)),
            by_time={ms: answers[(topic, p)] for ms, answers in by_time.items()},
        )
        for p in partitions
    }
