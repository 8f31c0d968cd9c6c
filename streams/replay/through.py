"""Reprocess a planned range through a topology under a new app id (rebuild a projection).

How: the new app id's consumer group gets the plan's start offsets committed before it
starts (the source's unplanned partitions, and the topology's other input topics, start
at their log end, so only the range is reprocessed); then the native runtime runs the
topology, dropping records at or past each partition's end (``PastTheEnd``, a step put
before the runtime's own), until the group's committed
offsets reach every end. The runtime commits an offset only after the outputs it caused
are acknowledged, so when ``replay_through`` returns, every output of the range is in
its sink topics (at-least-once, as any run of the topology).

Timing: blocks for the whole reprocessing (group join, then the records). Raises
``ReplayError`` (the topology does not read the source, the app id is in use),
``ActiveGroupError``, and the runtime's ``RuntimeFailure`` when a record fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from streams.cluster import Cluster
from streams.coordinates import TP
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step
from streams.replay.errors import ReplayError
from streams.replay.groups import require_inactive
from streams.replay.plan import ReplayPlan
from streams.runtime import Runtime, RuntimeConfig, Stats
from streams.runtime.topics import prepare_topics
from streams.topology import Topology

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class ThroughResult:
    """What a reprocessing did: records processed, outputs written, the group's commits."""

    app_id: str
    processed: int
    produced: int
    committed: dict[int, int]
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {
            "app_id": self.app_id,
            "processed": self.processed,
            "produced": self.produced,
            "committed": {str(p): o for p, o in sorted(self.committed.items())},
            "seconds": round(self.seconds, 3),
        }


class PastTheEnd(Forward):
    """The first step of the reprocessing chain: drops records at or past their
    partition's end, before they are tracked, so the group's commit stays at the end."""

    __slots__ = ("_ends",)

    def __init__(self, next: Step, ends: dict[TP, int]) -> None:
        super().__init__(next)
        self._ends = ends

    def submit(self, record: Record) -> None:
        end = self._ends.get((record.topic, record.partition))
        if end is None or record.offset < end:
            self.next.submit(record)


def start_offsets(cluster: Cluster, plan: ReplayPlan, topology: Topology) -> dict[TP, int]:
    """The offsets the new group starts from: the plan's starts; log ends elsewhere."""
    offsets: dict[TP, int] = {}
    for topic in topology.topics_read:
        tps = [(topic, p) for p in range(cluster.partition_count(topic))]
        offsets.update(cluster.list_offsets(tps, "latest", read_committed=True))
    offsets.update({(plan.topic, r.partition): r.start for r in plan.ranges})
    return offsets


def replay_through(
    cluster: Cluster,
    plan: ReplayPlan,
    topology: Topology,
    *,
    config: RuntimeConfig | None = None,
    progress: Progress | None = None,
) -> ThroughResult:
    """Run ``topology`` (already scoped to its new app id) over ``plan``'s range."""
    app_id = topology.app_id
    if plan.topic not in topology.topics_read:
        raise ReplayError(
            f"topology {app_id!r} reads {', '.join(topology.topics_read)}, not {plan.topic!r} "
            "(point it at the source with --set)"
        )
    require_inactive(cluster.describe_group(app_id))
    if cluster.committed(app_id):
        raise ReplayError(
            f"app id {app_id!r} already has committed offsets: reprocess under a new --app-id"
        )
    # Not a static member: the run ends for good, its group must empty at once.
    cfg = replace(
        config or RuntimeConfig(bootstrap=cluster.bootstrap, client=cluster.settings),
        static_membership=False,
    )
    prepare_topics(cfg.topics(cluster.admin), topology)
    cluster.alter_committed(app_id, start_offsets(cluster, plan, topology))
    ends = {(plan.topic, r.partition): r.end for r in plan.ranges if r.size > 0}
    started = time.perf_counter()
    if not ends:
        return ThroughResult(app_id, 0, 0, {r.partition: r.end for r in plan.ranges}, 0.0)
    reported = 0
    runtime: Runtime

    def tick(stats: Stats) -> None:
        nonlocal reported
        if progress is not None and stats.consumed > reported:
            progress(stats.consumed - reported)
            reported = stats.consumed
        committed = cluster.committed(app_id, list(ends))
        if all(committed.get(tp, -1) >= end for tp, end in ends.items()):
            runtime.stop()

    runtime = Runtime(topology, cfg, on_tick=tick, intake=[lambda step: PastTheEnd(step, ends)])
    runtime.run()
    committed = cluster.committed(app_id, [(plan.topic, r.partition) for r in plan.ranges])
    return ThroughResult(
        app_id,
        runtime.stats.consumed,
        runtime.stats.produced,
        {p: o for (_t, p), o in committed.items()},
        time.perf_counter() - started,
    )
