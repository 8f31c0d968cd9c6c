"""The DSL of tables: aggregations (``stream.window(...)``, ``count/reduce/aggregate``), table
topics (``builder.table``), joins with them, and ``Table``.

    per_minute = orders.window(tumbling(60, grace=10)).count(emit="final", name="per-minute")
    per_minute.to_stream(lambda u: u.cause.follow("order.count", {...})).to(...)
    per_minute.late().to(owned("late-orders"), type="order.placed", version=2)

    customers = builder.table("customers", type="customer.profile", version=1)
    orders.join(customers, lambda order, customer: order.follow(...)).to(...)
    orders.join_within(payments, lambda order, payment: ..., within=300).to(...)

An aggregation groups by the record key (``rekey`` first to group by something else: the
records then travel through a repartition topic, so each key's records meet its state).
What the steps keep is declared in ``streams.topology.specs``; how they run is
``streams.topology.execution`` (``aggregate``, ``joins``, ``window_join``);
``streams.topology.windows`` says what windows, grace and late records are.
``copartition_problems`` is what ``streams run`` and the TestDriver check of a join's
topics; ``stream_table_sides`` which topics a join reads in event-time order.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.topology.errors import TopologyError
from streams.topology.names import Owned, TopicRef
from streams.topology.nodes import DEFAULT_OUTPUT, Edge, SourceNode, StepKind, StepNode
from streams.topology.policy import as_policy
from streams.topology.specs import (
    EMITS,
    LATE,
    AggregateSpec,
    Lookup,
    TableJoinSpec,
    WindowJoinSpec,
)
from streams.topology.stores import StoreSpec, store_source, upstream_sources
from streams.topology.values import PRIMITIVES
from streams.topology.windows import AnyWindows, Sessions, Sliding, Update

if TYPE_CHECKING:
    from streams.topology.builder import PolicyArg, Stream, TopologyBuilder
    from streams.topology.topology import Topology


class Table:
    """Values by key (and window): what an aggregation keeps, or a table topic
    materialised (``builder.table``). ``name``: its step and store (the TestDriver reads
    it with ``driver.table(name)``); ``lookup``: how a join reads it (None: windowed, not
    joinable)."""

    __slots__ = ("_builder", "lookup", "name", "windowed")

    def __init__(
        self, builder: TopologyBuilder, name: str, windowed: bool, lookup: Lookup | None = None
    ) -> None:
        self._builder = builder
        self.name = name
        self.windowed = windowed
        self.lookup = lookup

    def to_stream(
        self,
        fn: Callable[[Update], Envelope | None],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
    ) -> Stream:
        """A stream of the table's changes: ``fn(update)`` makes the envelope of each (None:
        none for that one). See ``Update``."""
        b = self._builder
        if not callable(fn):
            raise TopologyError(f"to_stream needs a function of an Update, got {fn!r}")
        node_name = b.unique_name(name or "to-stream")
        b.add_node(
            StepNode(
                node_name,
                StepKind.TO_STREAM,
                (Edge(self.name),),
                fn=fn,
                on_error=as_policy(on_error),
            )
        )
        return b.stream(Edge(node_name))

    def join(
        self,
        other: Table,
        fn: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
    ) -> Table:
        """A table of ``fn(value, other's value)`` for each key both tables have, changed
        whenever either changes (an inner join; a key deleted on either side is deleted
        here). Not kept in a store of its own: ``to_stream`` its changes."""
        b = self._builder
        if self.lookup is None or other.lookup is None:
            raise TopologyError("a table join reads two tables without windows")
        if not callable(fn):
            raise TopologyError(f"a table join needs a function of two values, got {fn!r}")
        node_name = b.unique_name(name or f"join-{self.name}-{other.name}")
        spec = TableJoinSpec(self.lookup, other.lookup)
        parents = (Edge(self.name), Edge(other.name))
        b.add_node(
            StepNode(
                node_name,
                StepKind.TABLE_JOIN,
                parents,
                fn=fn,
                on_error=as_policy(on_error),
                table_join=spec,
            )
        )
        return Table(b, node_name, False)

    def late(self) -> Stream:
        """The records that came after every window they belong to closed (without it, they
        go to the dead-letter topic with a ``LateRecordError``)."""
        if not self.windowed:
            raise TopologyError(f"aggregation {self.name!r} has no windows: no record is late")
        return self._builder.stream(Edge(self.name, LATE))


class Aggregations:
    """``count``, ``reduce`` and ``aggregate`` over a stream, with or without windows."""

    __slots__ = ("_builder", "_edge", "_windows")

    def __init__(self, builder: TopologyBuilder, edge: Edge, windows: AnyWindows | None) -> None:
        self._builder = builder
        self._edge = edge
        self._windows = windows

    def count(
        self,
        *,
        emit: str = "updates",
        name: str | None = None,
        backend: str = "rocksdb",
        on_error: PolicyArg = None,
    ) -> Table:
        """How many records each key (in each window) had: a ``long``."""
        return self._aggregation(
            "count", _one, _plus_one, "long", None, emit, name, backend, on_error, operator.add
        )

    def reduce(
        self,
        fn: Callable[[Any, Any], Any],
        *,
        type: str,
        version: int | None = None,
        emit: str = "updates",
        name: str | None = None,
        backend: str = "rocksdb",
        on_error: PolicyArg = None,
    ) -> Table:
        """A key's first record's ``data``, then ``fn(value, data)`` with each next one's;
        values are ``type`` (``version``: a catalog type's)."""

        def first(env: Envelope) -> Any:
            return dict(env.data)

        def add(value: Any, env: Envelope) -> Any:
            return fn(value, env.data)

        return self._aggregation(
            "reduce", first, add, type, version, emit, name, backend, on_error, fn
        )

    def aggregate(
        self,
        init: Callable[[], Any],
        fn: Callable[[Any, Envelope], Any],
        *,
        type: str,
        version: int | None = None,
        merge: Callable[[Any, Any], Any] | None = None,
        emit: str = "updates",
        name: str | None = None,
        backend: str = "rocksdb",
        on_error: PolicyArg = None,
    ) -> Table:
        """``init()`` for a key's first record, then ``fn(value, envelope)`` for each;
        values are ``type`` (a primitive, or a catalog type at ``version``). Session
        windows need ``merge(a, b)``: the value of two sessions a record bridges; sliding
        windows too: a window's value is its records' values merged."""

        def first(env: Envelope) -> Any:
            return fn(init(), env)

        if merge is None and isinstance(self._windows, Sessions | Sliding):
            raise TopologyError(f"aggregate over {self._windows.kind} windows needs merge=fn(a, b)")
        return self._aggregation(
            "aggregate", first, fn, type, version, emit, name, backend, on_error, merge
        )

    def _aggregation(  # noqa: PLR0917 - the three public methods' shared tail
        self,
        what: str,
        first: Callable[[Envelope], Any],
        add: Callable[[Any, Envelope], Any],
        type: str,
        version: int | None,
        emit: str,
        name: str | None,
        backend: str,
        on_error: PolicyArg,
        merge: Callable[[Any, Any], Any] | None,
    ) -> Table:
        windows, builder = self._windows, self._builder
        if emit not in EMITS:
            raise TopologyError(f"emit must be one of {EMITS}, got {emit!r}")
        if emit == "final" and windows is None:
            raise TopologyError('emit="final" needs windows: a table without them never closes')
        if type not in PRIMITIVES and version is None:
            raise TopologyError(
                f"value type {type!r}: give its catalog version, or use one of {sorted(PRIMITIVES)}"
            )
        node_name = builder.unique_name(name or what)
        builder.add_store(StoreSpec(node_name, backend, owner=node_name))
        spec = AggregateSpec(what, first, add, type, version, windows, emit, node_name, merge)
        outputs = (DEFAULT_OUTPUT, LATE) if windows is not None else (DEFAULT_OUTPUT,)
        builder.add_node(
            StepNode(
                node_name,
                StepKind.AGGREGATE,
                (self._edge,),
                outputs=outputs,
                on_error=as_policy(on_error),
                aggregate=spec,
            )
        )
        lookup = None if windows is not None else Lookup(node_name, type, version)
        return Table(builder, node_name, windows is not None, lookup)


def table(
    builder: TopologyBuilder,
    topic: TopicRef,
    *,
    type: str,
    version: int,
    name: str | None,
    backend: str,
) -> Table:
    """A table topic materialised: a source of it, and a table step with its store."""
    label = topic.name if isinstance(topic, Owned) else topic
    node_name = builder.unique_name(name or f"table-{label}")
    source = builder.unique_name(f"source-{label}")
    builder.add_node(SourceNode(source, topic, type, version, table=True))
    builder.add_store(StoreSpec(node_name, backend, source=topic, owner=node_name))
    lookup = Lookup(node_name, type, version)
    builder.add_node(StepNode(node_name, StepKind.TABLE, (Edge(source),), lookup=lookup))
    return Table(builder, node_name, False, lookup)


def join(
    builder: TopologyBuilder,
    parent: Edge,
    table: Table,
    fn: Callable[[Envelope, Any], Envelope | None],
    *,
    inner: bool,
    name: str | None,
    on_error: PolicyArg,
) -> Edge:
    """A join step of ``parent``'s records with ``table``'s values."""
    if table.lookup is None:
        raise TopologyError(f"table {table.name!r} has windows: a join reads a table by key")
    if not callable(fn):
        raise TopologyError(f"a join needs a function of (envelope, value), got {fn!r}")
    node_name = builder.unique_name(name or f"join-{table.name}")
    lookup = replace(table.lookup, inner=inner)
    builder.add_node(
        StepNode(
            node_name, StepKind.JOIN, (parent,), fn=fn, on_error=as_policy(on_error), lookup=lookup
        )
    )
    return Edge(node_name)


def _one(_env: Envelope) -> int:
    return 1


def _plus_one(count: int, _env: Envelope) -> int:
    return count + 1


def copartition_problems(topology: Topology, partitions: Mapping[str, int]) -> list[str]:
    """What breaks a join's co-partitioning, given each topic's partition count: the
    records a join reads and its table's must be on as many partitions (and keyed alike,
    which no count shows), so that partition *n* of both holds the same keys."""
    problems = []
    for step in topology.steps:
        if step.kind in (StepKind.WINDOW_JOIN, StepKind.TABLE_JOIN):
            problems += _two_sided_problems(topology, step, partitions)
        if step.kind is not StepKind.JOIN or step.lookup is None:
            continue
        spec = topology.stores.get(step.lookup.store)
        table_topic = store_source(topology, spec) if spec is not None else None
        if table_topic is None:
            continue
        want = partitions.get(table_topic)
        for topic in upstream_sources(topology, step.name):
            have = partitions.get(topic)
            if have is not None and want is not None and have != want:
                problems.append(
                    f"join {step.name!r} is not co-partitioned: {topic!r} has {have} "
                    f"partition(s), table topic {table_topic!r} {want}; give them the same "
                    "partition count (and key both by the table's key)"
                )
    return problems


def stream_table_sides(topology: Topology) -> list[tuple[list[str], list[str]]]:
    """For each join of a stream with a table whose topics are not the stream's (a table
    topic, or an aggregation of another topic): the stream's source topics and the
    table's (read in event-time order: ``streams.pipeline.time_order``)."""
    out = []
    for node in topology.steps:
        if node.kind is not StepKind.JOIN or node.lookup is None:
            continue
        store = topology.stores.get(node.lookup.store)
        owner = store.owner if store is not None else None
        table = upstream_sources(topology, owner) if owner else []
        stream = [t for t in upstream_sources(topology, node.name) if t not in table]
        if stream and table:
            out.append((stream, table))
    return out


def join_within(
    builder: TopologyBuilder,
    left: Edge,
    right: Edge,
    fn: Callable[..., Envelope | None],
    *,
    within: float,
    grace: float,
    name: str | None,
    backend: str,
    on_error: PolicyArg,
    left_outer: bool = False,
) -> Edge:
    """A windowed join step of ``left``'s and ``right``'s records, with its store
    (``left_outer``: ``left``'s records that met none are handed on alone)."""
    within_ms, grace_ms = round(within * 1000), round(grace * 1000)
    if within_ms <= 0 or grace_ms < 0:
        raise TopologyError(
            f"a windowed join needs within > 0 and grace >= 0, got {within}, {grace}"
        )
    if not callable(fn):
        raise TopologyError(f"a join needs a function of (left, right), got {fn!r}")
    node_name = builder.unique_name(name or "join")
    source = _source_topic(builder, left)
    builder.add_store(StoreSpec(node_name, backend, source=source, owner=node_name))
    spec = WindowJoinSpec(node_name, within_ms, grace_ms, left_outer)
    builder.add_node(
        StepNode(
            node_name,
            StepKind.WINDOW_JOIN,
            (left, right),
            fn=fn,
            on_error=as_policy(on_error),
            window_join=spec,
        )
    )
    return Edge(node_name)


def _source_topic(builder: TopologyBuilder, edge: Edge) -> TopicRef | None:
    """The first source topic upstream of ``edge`` (the store is partitioned like it)."""
    stack, seen = [edge.node], set()
    while stack:
        node = builder.node(stack.pop())
        if node is None or node.name in seen:
            continue
        seen.add(node.name)
        if isinstance(node, SourceNode):
            return node.topic
        stack.extend(e.node for e in node.parents)
    return None


def _two_sided_problems(
    topology: Topology, step: StepNode, partitions: Mapping[str, int]
) -> list[str]:
    left, right = (upstream_sources(topology, e.node) for e in step.parents)
    counts = {partitions.get(t) for t in [*left, *right]} - {None}
    if len(counts) <= 1:
        return []
    shown = ", ".join(f"{t!r} {partitions.get(t)}" for t in [*left, *right])
    return [
        f"join {step.name!r} is not co-partitioned: its topics have {shown} partition(s); "
        "give them the same partition count (and key both alike)"
    ]
