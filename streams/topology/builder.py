"""The DSL: ``TopologyBuilder`` and the fluent ``Stream`` it hands out.

    builder = TopologyBuilder("orders")
    placed = builder.source("orders", type="order.placed", version=2)
    routes = placed.map(enrich).branch(accepted=is_ok, default="rejected")
    routes["accepted"].map(to_accepted).to(owned("accepted"), type="order.accepted", version=1)
    routes["rejected"].map(to_rejected).to(owned("rejected"), type="order.rejected", version=1)
    topology = builder.build()     # validates; raises TopologyValidationError

State: ``placed.dedup(ttl=7 * 86400)`` drops records whose envelope id was seen within the
window; ``placed.window(tumbling(60)).count()`` (or ``.group_by_key()``, ``reduce``,
``aggregate``) keeps a table per key (``streams.topology.tables``); ``builder.store("totals")``
declares a store processors use via ``ctx.store``.
``TopologyBuilder(..., processing_guarantee="exactly_once")`` runs it in transactions;
``TopologyBuilder(..., consumption="share")`` on a share group (a work queue: stateless
steps, any worker takes any record, ``deliveries=N`` tries before the DLQ).
Steps may be ``async def``: ``TopologyBuilder(..., concurrency=64)`` keeps up to 64 records
in flight awaiting them, one at a time per key (``ordering="key"``; or ``"partition"``,
``"none"``), offsets committed for what finished in order (``streams.pipeline.concurrency``).

Every step takes ``name=`` (default: the function's name, made unique), ``on_error=``
(a policy for this step; see ``streams.topology.policy``) and ``retry=`` (this step's
``RetryPolicy`` or a delay spec like ``"1s, 30s"``, overriding the builder's ``retry=``:
with one, failed records go through retry topics to a DLQ instead of ``on_error``; refused
by ``build()`` on a step an aggregation's updates feed, which is never retried: see
``streams.topology.validation``). Nothing runs while building.
The lower-level ``add_source`` / ``add_processor`` / ``add_sink`` wire nodes by name,
like Kafka Streams' ``Topology`` API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from streams.envelope import Envelope
from streams.topology import tables
from streams.topology.errors import TopologyError, TopologyValidationError
from streams.topology.names import Owned, TopicRef, owned
from streams.topology.nodes import (
    ANY_TYPE,
    DEFAULT_OUTPUT,
    Edge,
    Node,
    SinkNode,
    SourceNode,
    StepKind,
    StepNode,
    rekeyed,
)
from streams.topology.policy import ErrorAction, ErrorPolicy, RetryArg, as_policy, as_retry
from streams.topology.specs import DedupSpec
from streams.topology.stores import StoreSpec
from streams.topology.tables import Aggregations, Table
from streams.topology.topology import (
    CONSUMPTIONS,
    Topology,
    concurrency_problems,
    share_problems,
)
from streams.topology.validation import CatalogLike, validate
from streams.topology.windows import AnyWindows, Sessions, Sliding, Windows

PolicyArg = ErrorPolicy | ErrorAction | str | None
Name = str | None
_DEFAULT_CATALOG: Any = object()  # sentinel: load streams.schemas.default_catalog()


class TopologyBuilder:
    """Collects nodes; ``build()`` checks them and returns a ``Topology``."""

    def __init__(
        self,
        app_id: str,
        *,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        description: str = "",
        processing_guarantee: str = "at_least_once",
        repartition: bool = True,
        consumption: str = "group",
        deliveries: int = 3,
        concurrency: int = 1,
        ordering: str = "key",
    ) -> None:
        if consumption not in CONSUMPTIONS:
            raise TopologyError(f"consumption must be one of {CONSUMPTIONS}, got {consumption!r}")
        self.app_id = app_id
        self.on_error = as_policy(on_error)
        self.retry = as_retry(retry)
        self.description = description
        self.processing_guarantee = processing_guarantee
        # Keyed state after a rekey reads through a repartition topic (see _repartition).
        self.repartition = repartition
        # A consumer group, or a share group (stateless steps; ``deliveries`` per record).
        self.consumption = consumption
        self.deliveries = deliveries
        # Records in flight at once awaiting async steps, and what they keep in order.
        self.concurrency = concurrency
        self.ordering = ordering
        self._nodes: dict[str, Node] = {}
        self._stores: dict[str, StoreSpec] = {}
        self._problems: list[str] = []

    # -- fluent entry point --------------------------------------------------------------
    def source(
        self,
        topic: TopicRef,
        *,
        type: str | None = None,
        version: int | None = None,
        types: Mapping[str, int] | None = None,
        name: str | None = None,
    ) -> Stream:
        """Read ``topic``; each record is decoded as ``type`` resolved to ``version``. A
        topic of several event types (an event-sourced entity's) names them all instead,
        each with its reader version: ``types={"account.opened": 1, ...}``; a record of
        any other type goes to the dead-letter topic."""
        if types is None and type is not None and version is not None:
            types = {type: version}
        elif types is None or type is not None or version is not None or not types:
            raise TopologyError(
                f"source of {_label(topic)!r}: give type= and version=, or types={{type: version}}"
            )
        (first, first_version), *more = types.items()
        node_name = self.unique_name(name or f"source-{_label(topic)}")
        self.add_node(SourceNode(node_name, topic, first, first_version, also=tuple(more)))
        return Stream(self, Edge(node_name))

    def table(
        self,
        topic: TopicRef,
        *,
        type: str,
        version: int,
        name: str | None = None,
        backend: str = "rocksdb",
    ) -> Table:
        """Materialise ``topic`` (compacted, keyed) as a table: each key's latest value (its
        payload, ``type`` as ``version``), a record without a value deletes the key. Kept
        in the changelog-backed store ``name`` (default ``table-<topic>``), partitioned
        like the topic; streams ``join`` it (co-partitioned: the same partition count,
        keyed alike)."""
        return tables.table(self, topic, type=type, version=version, name=name, backend=backend)

    # -- lower-level API: nodes wired by name (parents may be added later) -----------------
    def add_source(
        self,
        name: str,
        topic: TopicRef,
        *,
        type: str,
        version: int,
    ) -> None:
        self.add_node(SourceNode(name, topic, type, version))

    def add_processor(
        self,
        name: str,
        processor: Any,
        parents: Sequence[str | Edge],
        *,
        outputs: Sequence[str] = (DEFAULT_OUTPUT,),
        on_error: PolicyArg = None,
        retry: RetryArg = None,
    ) -> None:
        """A processor (function or object with ``process``) reading ``parents``
        (``"node"`` or ``"node:output"``) and forwarding to its declared ``outputs``."""
        if not outputs:
            raise TopologyError(f"processor {name!r} must declare at least one output")
        self.add_node(
            StepNode(
                name,
                StepKind.PROCESS,
                tuple(Edge.parse(p) for p in parents),
                fn=processor,
                outputs=tuple(outputs),
                on_error=as_policy(on_error),
                retry=as_retry(retry),
            )
        )

    def add_sink(
        self,
        name: str,
        topic: TopicRef,
        parents: Sequence[str | Edge],
        *,
        type: str,
        version: int,
    ) -> None:
        self.add_node(SinkNode(name, topic, type, version, tuple(Edge.parse(p) for p in parents)))

    def store(self, name: str, *, backend: str = "rocksdb", source: TopicRef | None = None) -> None:
        """Declare a key-value store processors reach with ``ctx.store(name)``.

        ``backend``: ``"rocksdb"`` (on disk) or ``"memory"``. ``source``: the source topic
        it is partitioned like (default: the topology's only source). Backed by the
        compacted changelog ``<app>-<name>-changelog``, which the runtime creates."""
        self.add_store(StoreSpec(name, backend, source))

    # -- for the DSL's other modules (``streams.topology.tables``): nodes and stores ------
    def add_store(self, spec: StoreSpec) -> None:
        """Declare the store ``spec`` describes (a step's own store names its ``owner``);
        a second store of one name is a problem ``build()`` reports."""
        if spec.name in self._stores:
            self._problems.append(f"two stores are named {spec.name!r}")
            return
        self._stores[spec.name] = spec

    def add_node(self, node: Node) -> None:
        """Add ``node`` as it is (its parents may be added later); a second node of one
        name is a problem ``build()`` reports."""
        if node.name in self._nodes:
            self._problems.append(f"two nodes are named {node.name!r}")
            return
        self._nodes[node.name] = node

    def unique_name(self, base: str) -> str:
        """``base``, or ``base-2``, ``base-3``... : the first no node has yet."""
        if base not in self._nodes:
            return base
        n = 2
        while f"{base}-{n}" in self._nodes:
            n += 1
        return f"{base}-{n}"

    def node(self, name: str) -> Node | None:
        """The node added as ``name`` (None: none yet)."""
        return self._nodes.get(name)

    def stream(self, edge: Edge) -> Stream:
        """The fluent ``Stream`` of ``edge``: a node's output, to add steps after it."""
        return Stream(self, edge)

    # -- build -------------------------------------------------------------------------------
    def build(self, catalog: CatalogLike | None = _DEFAULT_CATALOG) -> Topology:
        """Validate and return the topology. Raises ``TopologyValidationError`` listing every
        problem. ``catalog`` defaults to ``streams.schemas.default_catalog()``; pass None to
        skip the schema checks."""
        if catalog is _DEFAULT_CATALOG:
            from streams.schemas import default_catalog  # noqa: PLC0415 - only when needed

            catalog = default_catalog()
        self._repartition()
        topology = Topology(
            self.app_id,
            self._nodes,
            on_error=self.on_error,
            retry=self.retry,
            description=self.description,
            stores=self._stores,
            processing_guarantee=self.processing_guarantee,
            consumption=self.consumption,
            deliveries=self.deliveries,
            concurrency=self.concurrency,
            ordering=self.ordering,
        )
        problems = (
            self._problems
            + validate(topology, catalog)
            + share_problems(topology)
            + concurrency_problems(topology)
        )
        if problems:
            raise TopologyValidationError(self.app_id, problems)
        return topology

    # -- internals -----------------------------------------------------------------------
    def _repartition(self) -> None:
        """Put a repartition topic in front of each step that keeps state by key after a
        rekey, as Kafka Streams does: a store partition holds the keys of its input
        partition, and a rekeyed record is still on its old key's partition.

        The step then reads ``<app>-<step>-repartition`` (a sink writing the rekeyed
        envelopes, keyed by the new key, and a source reading them back; the runtime
        creates it with the input's partition count), so each new key's records meet its
        state, in order from the rekey on. Steps that keep state by key: dedup steps,
        aggregations, joins (a windowed join: each rekeyed side through a topic of its own),
        and processors in a topology that declares stores. Done once, at build."""
        keyed = [
            node
            for node in self._nodes.values()
            if isinstance(node, StepNode)
            and (
                node.kind in (StepKind.DEDUP, StepKind.AGGREGATE, StepKind.JOIN)
                or node.kind is StepKind.WINDOW_JOIN
                or (node.kind is StepKind.PROCESS and self._stores)
            )
            and any(rekeyed(self._nodes, edge.node) for edge in node.parents)
        ]
        for node in keyed:
            if not self.repartition:
                self._problems.append(
                    f"step {node.name!r} keeps state by key after a rekey, and repartitioning "
                    "is off: its state would be read on the old key's partition "
                    "(TopologyBuilder(repartition=True), the default, fixes it)"
                )
                continue
            parents = list(node.parents)
            at = [i for i, edge in enumerate(parents) if rekeyed(self._nodes, edge.node)]
            for n, i in enumerate(at):  # a windowed join may have both sides rekeyed
                label = node.name if n == 0 else f"{node.name}-{n + 1}"
                topic = owned(f"{label}-repartition")
                sink = self.unique_name(f"{label}-repartition-sink")
                self.add_node(SinkNode(sink, topic, ANY_TYPE, 0, (parents[i],)))
                source = self.unique_name(f"{label}-repartition-source")
                self.add_node(SourceNode(source, topic, ANY_TYPE, 0))
                parents[i] = Edge(source)
            self._nodes[node.name] = replace(node, parents=tuple(parents))

    def _step(
        self,
        kind: StepKind,
        parent: Edge,
        fn: Any,
        name: str | None,
        on_error: PolicyArg,
        *,
        retry: RetryArg = None,
        **extra: Any,
    ) -> str:
        if fn is not None and not callable(fn) and not callable(getattr(fn, "process", None)):
            raise TopologyError(f"{kind} step needs a function, got {fn!r}")
        node_name = self.unique_name(name or _fn_name(fn) or str(kind))
        self.add_node(
            StepNode(
                node_name,
                kind,
                (parent,),
                fn=fn,
                on_error=as_policy(on_error),
                retry=as_retry(retry),
                **extra,
            )
        )
        return node_name


class Stream:
    """One output of a node; each method adds a child step and returns its output."""

    __slots__ = ("_builder", "_edge")

    def __init__(self, builder: TopologyBuilder, edge: Edge) -> None:
        self._builder = builder
        self._edge = edge

    @property
    def node(self) -> str:
        """The name of the node (and ``:output``) this stream comes from."""
        return str(self._edge)

    def _then(
        self,
        kind: StepKind,
        fn: Any,
        name: str | None,
        on_error: PolicyArg,
        retry: RetryArg,
        *,
        concurrency: int | None = None,
    ) -> Stream:
        extra = {} if concurrency is None else {"concurrency": concurrency}
        return Stream(
            self._builder,
            Edge(self._builder._step(kind, self._edge, fn, name, on_error, retry=retry, **extra)),
        )

    def map(
        self,
        fn: Callable[[Envelope], Envelope] | Callable[[Envelope], Awaitable[Envelope]],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        concurrency: int | None = None,
    ) -> Stream:
        """Replace each envelope with ``fn(envelope)`` (an ``async def`` is awaited;
        ``concurrency``: at most that many records in this step at once)."""
        return self._then(StepKind.MAP, fn, name, on_error, retry, concurrency=concurrency)

    def filter(
        self,
        fn: Callable[[Envelope], bool] | Callable[[Envelope], Awaitable[bool]],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        concurrency: int | None = None,
    ) -> Stream:
        """Keep envelopes for which ``fn`` is true; drop the rest (``fn`` may be async)."""
        return self._then(StepKind.FILTER, fn, name, on_error, retry, concurrency=concurrency)

    def flat_map(
        self,
        fn: Callable[[Envelope], Iterable[Envelope]]
        | Callable[[Envelope], Awaitable[Iterable[Envelope]]]
        | Callable[[Envelope], AsyncIterator[Envelope]],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        concurrency: int | None = None,
    ) -> Stream:
        """Replace each envelope with zero or more, in the order ``fn`` yields them (``fn``
        may be async, or an async generator)."""
        return self._then(StepKind.FLAT_MAP, fn, name, on_error, retry, concurrency=concurrency)

    def peek(
        self,
        fn: Callable[[Envelope], object],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        concurrency: int | None = None,
    ) -> Stream:
        """Call ``fn`` for its side effect; pass the envelope on unchanged (``fn`` may be
        async)."""
        return self._then(StepKind.PEEK, fn, name, on_error, retry, concurrency=concurrency)

    def rekey(
        self,
        fn: Callable[[Envelope], str],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
    ) -> Stream:
        """Set each envelope's key to ``fn(envelope)``; sinks partition by the new key."""
        return self._then(StepKind.REKEY, fn, name, on_error, retry)

    def process(
        self,
        processor: Any,
        *,
        outputs: Sequence[str] | None = None,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        concurrency: int | None = None,
    ) -> Any:
        """A processor: ``fn(envelope, ctx)`` or an object with ``process(envelope, ctx)``
        (a class is instantiated once per run; ``init(ctx)`` and ``close()`` are called when
        present). It forwards with ``ctx.forward(env, to=...)``; a returned envelope (or
        iterable of them) goes to the only output. Returns a ``Stream``, or with
        ``outputs=[...]`` a ``dict`` of them by output name. An ``async`` process is
        awaited, its ``ctx`` a ``CallContext`` (``streams.topology.execution.async_steps``)."""
        outs = tuple(outputs) if outputs else (DEFAULT_OUTPUT,)
        extra = {} if concurrency is None else {"concurrency": concurrency}
        node_name = self._builder._step(
            StepKind.PROCESS,
            self._edge,
            processor,
            name,
            on_error,
            retry=retry,
            outputs=outs,
            **extra,
        )
        if outputs is None:
            return Stream(self._builder, Edge(node_name))
        return {o: Stream(self._builder, Edge(node_name, o)) for o in outs}

    def dedup(
        self,
        *,
        ttl: float,
        by: Callable[[Envelope], str | bytes] | None = None,
        duplicates_to: str | None = None,
        backend: str = "rocksdb",
        name: str | None = None,
        on_error: PolicyArg = None,
    ) -> Any:
        """Pass each record on the first time its id is seen within ``ttl`` seconds; drop
        (count, log at DEBUG) the others.

        ``by``: the id (default: the envelope id). The ids are kept in the step's own store
        (named after the step, ``backend`` as in ``store()``), so dedup holds across
        restarts and rebalances. ``duplicates_to``: the name of a second output receiving
        the duplicates (for auditing); ``dedup`` then returns ``{"out": unique,
        duplicates_to: duplicates}`` instead of the stream of unique records."""
        if ttl <= 0:
            raise TopologyError(f"dedup needs a positive ttl in seconds, got {ttl!r}")
        if duplicates_to == DEFAULT_OUTPUT:
            raise TopologyError(f"duplicates_to must not be {DEFAULT_OUTPUT!r}")
        b = self._builder
        node_name = b.unique_name(name or "dedup")
        outs = (DEFAULT_OUTPUT,) if duplicates_to is None else (DEFAULT_OUTPUT, duplicates_to)
        b.add_store(StoreSpec(node_name, backend, owner=node_name))
        b._step(
            StepKind.DEDUP,
            self._edge,
            by,
            node_name,
            on_error,
            outputs=outs,
            dedup=DedupSpec(float(ttl), node_name),
        )
        if duplicates_to is None:
            return Stream(b, Edge(node_name))
        return {o: Stream(b, Edge(node_name, o)) for o in outs}

    def join(
        self,
        table: Table,
        fn: Callable[[Envelope, Any], Envelope | None],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
    ) -> Stream:
        """``fn(envelope, value)`` for each record whose key has a value in ``table`` now
        (the others are dropped: an inner join); its envelope goes on (None: nothing)."""
        edge = tables.join(
            self._builder, self._edge, table, fn, inner=True, name=name, on_error=on_error
        )
        return Stream(self._builder, edge)

    def left_join(
        self,
        table: Table,
        fn: Callable[[Envelope, Any], Envelope | None],
        *,
        name: str | None = None,
        on_error: PolicyArg = None,
    ) -> Stream:
        """``fn(envelope, value)`` for every record, ``value`` None when its key has none in
        ``table``."""
        edge = tables.join(
            self._builder, self._edge, table, fn, inner=False, name=name, on_error=on_error
        )
        return Stream(self._builder, edge)

    def join_within(
        self,
        other: Stream,
        fn: Callable[[Envelope, Envelope], Envelope | None],
        *,
        within: float,
        grace: float = 0,
        name: str | None = None,
        backend: str = "rocksdb",
        on_error: PolicyArg = None,
    ) -> Stream:
        """``fn(left, right)`` for each pair of a record of this stream and one of ``other``
        with the same key, at most ``within`` seconds apart in event time, once, when the
        second arrives (an inner join); records up to ``grace`` seconds out of order still
        pair. Both sides wait in the step's store (see
        ``streams.topology.execution.window_join``)."""
        return self._join_within(other, fn, within, grace, name, backend, on_error, left=False)

    def left_join_within(
        self,
        other: Stream,
        fn: Callable[[Envelope, Envelope | None], Envelope | None],
        *,
        within: float,
        grace: float = 0,
        name: str | None = None,
        backend: str = "rocksdb",
        on_error: PolicyArg = None,
    ) -> Stream:
        """As ``join_within``, and ``fn(left, None)`` once for each record of this stream
        that met none of ``other``'s, when none can come any more (``other``'s stream time
        passed it by twice ``within`` plus ``grace``)."""
        return self._join_within(other, fn, within, grace, name, backend, on_error, left=True)

    def _join_within(  # noqa: PLR0917 - the two public methods' shared tail
        self,
        other: Stream,
        fn: Callable[..., Envelope | None],
        within: float,
        grace: float,
        name: str | None,
        backend: str,
        on_error: PolicyArg,
        *,
        left: bool,
    ) -> Stream:
        edge = tables.join_within(
            self._builder,
            self._edge,
            other._edge,
            fn,
            within=within,
            grace=grace,
            name=name,
            backend=backend,
            on_error=on_error,
            left_outer=left,
        )
        return Stream(self._builder, edge)

    def group_by_key(self) -> Aggregations:
        """Aggregations by record key, without windows: ``.count()``, ``.reduce(fn, ...)``,
        ``.aggregate(init, fn, ...)`` each return a ``Table`` (``streams.topology.tables``)."""
        return Aggregations(self._builder, self._edge, None)

    def window(self, windows: AnyWindows) -> Aggregations:
        """Aggregations by record key and event-time window (``tumbling(...)``,
        ``hopping(...)``, ``session(...)``, ``sliding(...)`` from ``streams.topology``),
        with its grace."""
        if not isinstance(windows, Windows | Sessions | Sliding):
            raise TopologyError(
                "window needs tumbling(...), hopping(...), session(...) or sliding(...), "
                f"got {windows!r}"
            )
        return Aggregations(self._builder, self._edge, windows)

    def branch(
        self,
        *,
        default: str | None = None,
        name: str | None = None,
        on_error: PolicyArg = None,
        retry: RetryArg = None,
        **predicates: Callable[[Envelope], bool],
    ) -> dict[str, Stream]:
        """Route each envelope to the first output whose predicate is true (predicates are
        tried in the order given), else to ``default`` when named, else drop it. Returns
        the output streams by name."""
        if not predicates:
            raise TopologyError("branch needs at least one predicate: branch(name=predicate)")
        outs = tuple(predicates) + ((default,) if default else ())
        node_name = self._builder._step(
            StepKind.BRANCH,
            self._edge,
            None,
            name or "branch",
            on_error,
            retry=retry,
            outputs=outs,
            predicates=tuple(predicates.items()),
            default=default,
        )
        return {o: Stream(self._builder, Edge(node_name, o)) for o in outs}

    def reply(self, *, name: str | None = None) -> None:
        """Send each envelope as the reply to the request being processed: to the topic its
        ``reply-to`` header names, with its correlation id (``streams.topology.reply``).
        A record that is no request goes to the dead-letter topic."""
        self._builder._step(StepKind.REPLY, self._edge, None, name, None, outputs=())

    def to(
        self,
        topic: TopicRef,
        *,
        type: str,
        version: int,
        name: str | None = None,
    ) -> None:
        """Write each envelope to ``topic`` (a name, or ``owned("x")`` for ``<app>-x``).
        Envelopes must be of ``type``@``version``: anything else fails the record."""
        b = self._builder
        node_name = b.unique_name(name or f"sink-{_label(topic)}")
        b.add_sink(node_name, topic, [self._edge], type=type, version=version)


def _fn_name(fn: Any) -> str | None:
    if fn is None:
        return None
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if not name or name == "<lambda>":
        return None
    return str(name).lower() if isinstance(fn, type) else str(name)


def _label(topic: TopicRef) -> str:
    return topic.name if isinstance(topic, Owned) else topic
