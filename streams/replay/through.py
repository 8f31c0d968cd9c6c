"""Reprocess a planned range through a topology under a new app id (rebuild a projection).

The new app gets what a running app has before it meets the range:

1. **Its tables filled.** The new group's commits are set before it starts: each table
   topic (``builder.table``) at its beginning, the range at its start, the source's other
   partitions and the topology's other inputs at their log end. A first run reads the
   tables to the ends they have then, holding every other record back (dropped before it
   is tracked, so those commits stay where they are), as Kafka Streams fills a table
   from its beginning. Without it an inner join of the range would meet empty tables and
   drop every record.
2. **The range, then its internal topics drained.** A second run processes the range
   (records at or past a partition's end dropped, ``Bounded``), then every record the
   range caused in the app's internal topics (repartition topics, owned topics read
   back, retry tiers) until the group's commits reach those topics' ends, taken again at
   each check until nothing more appears. A span of transaction markers (the end of an
   exactly-once writer's log) counts as processed.

The runtime commits an offset only after the outputs it caused are acknowledged, so
when ``replay_through`` returns, every output of the range is in its sink topics
(at-least-once, as any run of the topology). What the runs read and wrote is counted per
topic (``ThroughResult``). A run that ends with work left (interrupted, or the runtime
stopped) raises ``ReplayError`` naming the topics and partitions left.

The topology's other stream inputs start at their end: a join of two streams meets
only what they get from now on (reprocess the other one's range too, or copy it).

Timing: blocks for the whole reprocessing (a group join per run, then the records).
Raises ``ReplayError`` (the topology does not read the source, the app id is in use,
work left), ``ActiveGroupError``, and the runtime's ``RuntimeFailure`` when a record
fails.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace

from streams.cluster import Cluster
from streams.cluster.offsets import OffsetKind
from streams.coordinates import TP
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step
from streams.replay.errors import ReplayError
from streams.replay.groups import require_inactive
from streams.replay.plan import ReplayPlan
from streams.runtime import Runtime, RuntimeConfig, Stats
from streams.runtime.topics import prepare_topics
from streams.topology import Topology, TopologyBuilder
from streams.topology.failure_topics import failure_topics
from streams.topology.names import Owned
from streams.topology.nodes import DEFAULT_OUTPUT, SourceNode

Progress = Callable[[int], None]


@dataclass(slots=True)
class Counts:
    """Records passed to the topology per topic read, and their outputs per topic."""

    read: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ThroughResult:
    """What a reprocessing did: the range's records processed (``processed``), the table
    records read before them (``tables``), the records of internal topics the range
    caused (``internal``), the outputs per topic (``outputs``, ``produced`` in all), and
    the group's commits on the range."""

    app_id: str
    processed: int
    produced: int
    committed: dict[int, int]
    seconds: float
    outputs: dict[str, int] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)
    internal: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "app_id": self.app_id,
            "processed": self.processed,
            "produced": self.produced,
            "outputs": dict(sorted(self.outputs.items())),
            "tables": dict(sorted(self.tables.items())),
            "internal": dict(sorted(self.internal.items())),
            "committed": {str(p): o for p, o in sorted(self.committed.items())},
            "seconds": round(self.seconds, 3),
        }


class Bounded(Forward):
    """The first step of a reprocessing run: drops records at or past their partition's
    end, before they are tracked, so the group's commit stays at the end; counts the
    records it passes per topic, and their outputs per topic once they are finished
    (their partition's position past them: outputs made in a batch or by an async step
    are known only then). An at-least-once redo counts again."""

    __slots__ = ("_counts", "_ends", "_passed")

    def __init__(self, next: Step, ends: Mapping[TP, int], counts: Counts) -> None:
        super().__init__(next)
        self._ends = ends
        self._counts = counts
        self._passed: deque[Record] = deque()  # passed on, outputs not counted yet

    def submit(self, record: Record) -> None:
        end = self._ends.get((record.topic, record.partition))
        if end is not None and record.offset >= end:
            return
        read = self._counts.read
        read[record.topic] = read.get(record.topic, 0) + 1
        self._passed.append(record)
        self.next.submit(record)

    def poll(self) -> None:
        self.next.poll()
        self.count_outputs()

    def count_outputs(self) -> None:
        """Count the outputs of the records finished, oldest first."""
        passed, written = self._passed, self._counts.written
        while passed:
            record = passed[0]
            offsets = record.offsets
            if offsets is not None and (offsets.position or 0) <= record.offset:
                return
            passed.popleft()
            for output in record.outputs:
                written[output[0]] = written.get(output[0], 0) + 1


class Backlog:
    """What group ``app_id`` has left before given ends: ``{tp: (committed, end)}`` of
    each partition with a record it has not committed. A span whose commit has not moved
    since the last look is read (``Cluster.records_before``): only transaction markers
    may be left there."""

    def __init__(self, cluster: Cluster, app_id: str) -> None:
        self._cluster, self._app_id = cluster, app_id
        self._seen: dict[TP, int] = {}

    def left(self, ends: Mapping[TP, int], *, look: bool = False) -> dict[TP, tuple[int, int]]:
        """``look``: read every span (a final verdict), not only those that stand still."""
        committed = self._cluster.committed(self._app_id, list(ends))
        spans = {
            tp: (committed.get(tp, 0), end)
            for tp, end in ends.items()
            if committed.get(tp, 0) < end
        }
        still = {tp: s for tp, s in spans.items() if look or self._seen.get(tp) == s[0]}
        self._seen.update({tp: start for tp, (start, _end) in spans.items()})
        held = self._cluster.records_before(still) if still else set()
        return {tp: s for tp, s in spans.items() if tp not in still or tp in held}


def _table_sources(topology: Topology) -> list[SourceNode]:
    """The sources of tables read from topics the app does not write itself."""
    return [s for s in topology.sources if s.table and not isinstance(s.topic, Owned)]


def table_topics(topology: Topology) -> list[str]:
    """The table topics the app does not write itself: read from their beginning."""
    return _unique(topology.topic(s.topic) for s in _table_sources(topology))


def tables_of(topology: Topology) -> Topology:
    """The topology's tables read from topics (``table_topics``) and nothing else: the
    same stores under the same app id, so the whole topology finds them filled."""
    builder = TopologyBuilder(topology.app_id)
    for source in _table_sources(topology):
        for step in topology.children(source.name).get(DEFAULT_OUTPUT, []):
            builder.table(
                source.topic,
                type=source.type,
                version=source.version,
                name=step,
                backend=topology.stores[step].backend,
            )
    return builder.build()


def internal_topics(topology: Topology) -> list[str]:
    """The topics the app writes and reads back: repartition topics, owned topics read
    back, and its inputs' retry tiers."""
    owned = (topology.topic(s.topic) for s in topology.sources if isinstance(s.topic, Owned))
    tiers = (tier for topics in failure_topics(topology) for tier in topics.retries)
    return _unique([*topology.repartition_topics, *owned, *tiers])


def start_offsets(cluster: Cluster, plan: ReplayPlan, topology: Topology) -> dict[TP, int]:
    """The offsets the new group starts from: the plan's starts, the tables' beginnings,
    log ends elsewhere."""
    offsets: dict[TP, int] = {}
    tables = set(table_topics(topology))
    for topic in topology.topics_read:
        tps = [(topic, p) for p in range(cluster.partition_count(topic))]
        at: OffsetKind = "earliest" if topic in tables else "latest"
        offsets.update(cluster.list_offsets(tps, at, read_committed=True))
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
    # Not a static member: each run ends for good, its group must empty at once.
    cfg = replace(
        config or RuntimeConfig(bootstrap=cluster.bootstrap, client=cluster.settings),
        static_membership=False,
    )
    prepare_topics(cfg.topics(cluster.admin), topology)
    starts = start_offsets(cluster, plan, topology)
    cluster.alter_committed(app_id, starts)
    ends = {(plan.topic, r.partition): r.end for r in plan.ranges if r.size > 0}
    started = time.perf_counter()
    if not ends:
        return ThroughResult(app_id, 0, 0, {r.partition: r.end for r in plan.ranges}, 0.0)
    backlog = Backlog(cluster, app_id)
    tables = _table_ends(cluster, topology, starts)
    table_counts, counts = Counts(), Counts()
    if tables:
        _run(tables_of(topology), cfg, tables, table_counts, lambda: backlog.left(tables))
    internal = _Internal(cluster, internal_topics(topology))
    reported = 0

    def left(look: bool = False) -> dict[TP, tuple[int, int]]:
        nonlocal reported
        if progress is not None and counts.read.get(plan.topic, 0) > reported:
            progress(counts.read[plan.topic] - reported)
            reported = counts.read[plan.topic]
        return backlog.left(ends, look=look) or backlog.left(internal.ends(), look=look)

    produced = _run(topology, cfg, ends, counts, left)
    unfinished = left(look=True)
    if unfinished:
        raise ReplayError(_unfinished(app_id, unfinished))
    committed = cluster.committed(app_id, [(plan.topic, r.partition) for r in plan.ranges])
    return ThroughResult(
        app_id,
        counts.read.get(plan.topic, 0),
        produced,
        {p: o for (_t, p), o in committed.items()},
        time.perf_counter() - started,
        outputs=dict(Counter(table_counts.written) + Counter(counts.written)),
        tables=table_counts.read,
        internal={t: n for t, n in counts.read.items() if t != plan.topic},
    )


def _run(
    topology: Topology,
    config: RuntimeConfig,
    ends: Mapping[TP, int],
    counts: Counts,
    left: Callable[[], Mapping[TP, object]],
) -> int:
    """Run the topology with records past ``ends`` dropped until ``left()`` is empty
    (asked at each status tick, on the runtime's thread), or until interrupted; the
    outputs it produced."""
    runtime: Runtime

    def tick(_stats: Stats) -> None:
        if not left():
            runtime.stop()

    bounded: list[Bounded] = []

    def intake(step: Step) -> Step:
        bounded.append(Bounded(step, ends, counts))
        return bounded[-1]

    runtime = Runtime(topology, config, on_tick=tick, intake=[intake])
    with suppress(KeyboardInterrupt):  # closed by run; the caller says what is left
        runtime.run()
    for step in bounded:
        step.count_outputs()  # the last ones, finished as the run closed
    return runtime.stats.produced


class _Internal:
    """The ends of the app's internal topics, taken anew at each look (the range's
    records write to them while it runs); their partition counts asked once."""

    def __init__(self, cluster: Cluster, topics: list[str]) -> None:
        self._cluster, self._topics = cluster, topics
        self._partitions: list[TP] | None = None

    def ends(self) -> dict[TP, int]:
        if self._partitions is None:
            existing = self._cluster.topics()
            self._partitions = [
                (t, p)
                for t in self._topics
                if t in existing
                for p in range(self._cluster.partition_count(t))
            ]
        return self._cluster.list_offsets(self._partitions, "latest", read_committed=True)


def _table_ends(cluster: Cluster, topology: Topology, starts: Mapping[TP, int]) -> dict[TP, int]:
    """The ends the tables are read to before the range: each table partition with
    records, at its (read committed) log end now."""
    tables = set(table_topics(topology))
    tps = [tp for tp in starts if tp[0] in tables]
    ends = cluster.list_offsets(tps, "latest", read_committed=True)
    return {tp: end for tp, end in ends.items() if end > starts[tp]}


def _unfinished(app_id: str, left: Mapping[TP, tuple[int, int]]) -> str:
    by_topic: dict[str, list[str]] = {}
    for (topic, partition), (committed, end) in sorted(left.items()):
        by_topic.setdefault(topic, []).append(f"{partition} at {committed} of {end}")
    where = "; ".join(f"{t} (partition {', '.join(ps)})" for t, ps in by_topic.items())
    return (
        f"reprocessing as app id {app_id!r} stopped with records left: {where}; "
        "its outputs so far stay written: reprocess again under a new --app-id"
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
