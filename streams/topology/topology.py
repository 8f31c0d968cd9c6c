"""A built, validated topology: a description of what to run, separate from running it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from streams.failures.policy import RetryPolicy
from streams.state.changelog import changelog_topic
from streams.topology.errors import TopologyError, TopologyValidationError
from streams.topology.failure_topics import shared_stems
from streams.topology.names import Owned, TopicRef, check_app_id, resolve_topic
from streams.topology.nodes import (
    ANY_TYPE,
    ASYNC_KINDS,
    Node,
    SinkNode,
    SourceNode,
    StepKind,
    StepNode,
    is_async,
)
from streams.topology.policy import ErrorPolicy
from streams.topology.stores import StoreSpec, store_source

CONSUMPTIONS = ("group", "share")
ORDERINGS = ("key", "partition", "none")
"""What records in flight at once keep, with ``concurrency`` above 1: one at a time per key
(the default), per partition, or nothing (any record may overtake any other)."""
# What keeps state by key, which a share group cannot give one worker: any takes any record.
_STATEFUL = (
    StepKind.DEDUP,
    StepKind.AGGREGATE,
    StepKind.TABLE,
    StepKind.JOIN,
    StepKind.WINDOW_JOIN,
    StepKind.TABLE_JOIN,
)

REPARTITION_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(7 * 24 * 3600 * 1000)}
"""A repartition topic's records are read back within seconds; retention cleans them up,
and a week of it covers an app stopped for days (a record deleted unread would be lost)."""


@dataclass(frozen=True, slots=True)
class OwnedTopic:
    """A topic the app owns and creates when missing; ``purpose`` says what it holds."""

    name: str
    purpose: str  # "output" or "repartition"
    config: Mapping[str, str]


class Topology:
    """What ``TopologyBuilder.build()`` returns: nodes in build order, by name.

    Immutable by convention; ``with_app_id`` gives a copy for another app id (owned topic
    names follow it). Run it with ``streams run``, the runtime or the ``TestDriver``.
    """

    def __init__(
        self,
        app_id: str,
        nodes: Mapping[str, Node],
        *,
        on_error: ErrorPolicy | None = None,
        retry: RetryPolicy | None = None,
        description: str = "",
        stores: Mapping[str, StoreSpec] | None = None,
        processing_guarantee: str = "at_least_once",
        consumption: str = "group",
        deliveries: int = 3,
        concurrency: int = 1,
        ordering: str = "key",
    ) -> None:
        self.app_id = app_id
        self.nodes: dict[str, Node] = dict(nodes)
        self.on_error = on_error
        # Failure routing (retry tiers, DLQ) when set; else failures follow ``on_error``.
        self.retry = retry
        self.description = description
        # Declared state stores by name (``streams.topology.stores``).
        self.stores: dict[str, StoreSpec] = dict(stores or {})
        # ``at_least_once`` (default) or ``exactly_once`` (transactions).
        self.processing_guarantee = processing_guarantee
        # ``group`` (a consumer group: partitions, per-key order) or ``share`` (a share
        # group, KIP-932: any worker takes any record; ``deliveries`` before the DLQ).
        self.consumption = consumption
        self.deliveries = deliveries
        # How many records an instance has in flight at once, awaiting async steps, and
        # what they keep in order (``ORDERINGS``): ``streams.pipeline.concurrency``.
        self.concurrency = concurrency
        self.ordering = ordering
        children: dict[str, dict[str, list[str]]] = {
            name: {out: [] for out in node.outputs} for name, node in self.nodes.items()
        }
        for name, node in self.nodes.items():
            for edge in node.parents:
                children.setdefault(edge.node, {}).setdefault(edge.output, []).append(name)
        self._children = children

    def with_app_id(self, app_id: str) -> Topology:
        """The same topology under another app id (group id and owned topic names change).
        Raises TopologyError for an app id that cannot name a group and topics."""
        problem = check_app_id(app_id)
        if problem:
            raise TopologyError(problem)
        copy = self._copy(app_id, self.consumption, self.deliveries)
        problems = shared_stems(app_id, copy.topics_read)
        if problems:
            raise TopologyError("; ".join(problems))
        return copy

    def shared(self, deliveries: int | None = None) -> Topology:
        """The same topology run on a share group (``streams run --share``). Raises
        TopologyValidationError when it keeps state or needs what share groups lack."""
        copy = self._copy(self.app_id, "share", deliveries or self.deliveries)
        problems = share_problems(copy)
        if problems:
            raise TopologyValidationError(self.app_id, problems)
        return copy

    def _copy(self, app_id: str, consumption: str, deliveries: int) -> Topology:
        return Topology(
            app_id,
            self.nodes,
            on_error=self.on_error,
            retry=self.retry,
            description=self.description,
            stores=self.stores,
            processing_guarantee=self.processing_guarantee,
            consumption=consumption,
            deliveries=deliveries,
            concurrency=self.concurrency,
            ordering=self.ordering,
        )

    def with_concurrency(self, concurrency: int, ordering: str | None = None) -> Topology:
        """The same topology with ``concurrency`` records in flight at once (and another
        ``ordering``): what ``streams run --concurrency`` runs. Raises
        TopologyValidationError for values it cannot run with."""
        copy = self._copy(self.app_id, self.consumption, self.deliveries)
        copy.concurrency = concurrency
        copy.ordering = ordering or self.ordering
        problems = concurrency_problems(copy)
        if problems:
            raise TopologyValidationError(self.app_id, problems)
        return copy

    @property
    def async_steps(self) -> list[str]:
        """The steps whose function is async (awaited:
        ``streams.topology.execution.async_steps``)."""
        return [s.name for s in self.steps if s.is_async]

    @property
    def concurrent(self) -> bool:
        """Whether an instance keeps several records in flight: async steps to await, and
        a concurrency above 1."""
        return self.concurrency > 1 and bool(self.async_steps)

    def retry_for(self, step: str | None) -> RetryPolicy | None:
        """The retry policy for a failure in ``step``: its own, else the topology's; none
        for a node a retry cannot help (``never_retried``)."""
        node = self.nodes.get(step) if step else None
        if node is None:
            return self.retry
        if node.name in self.never_retried:
            return RetryPolicy.no_retries()
        return (node.retry if isinstance(node, StepNode) else None) or self.retry

    @cached_property
    def never_retried(self) -> frozenset[str]:
        """The nodes whose failures go to the DLQ at once, whatever the policy: sinks (an
        envelope of the wrong type, or one its schema cannot encode, fails the same way
        again) and aggregations with every node their updates feed (``to_stream`` and
        after: they run within the aggregation's attempt, and a retry would meet another
        state: stream time moved on, the record's window may have closed)."""
        found = {n.name for n in self.sinks}
        return frozenset(found | self._fed_by_aggregation.keys())

    def fed_by_aggregation(self, step: str) -> str | None:
        """The aggregation step ``step`` is, or the first (in node order) whose updates or
        late records reach it through steps: such a step runs within that aggregation's
        attempt, and is never retried (``never_retried``). None for any other node."""
        return self._fed_by_aggregation.get(step)

    @cached_property
    def _fed_by_aggregation(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for step in self.steps:
            if step.kind is StepKind.AGGREGATE:
                for name in (step.name, *sorted(self.downstream(step.name))):
                    if isinstance(self.nodes.get(name), StepNode):
                        found.setdefault(name, step.name)
        return found

    def input_retry(self, topic: str) -> RetryPolicy | None:
        """The retry policy with the most tiers among the nodes records of input ``topic``
        go through (up to the topics they are written to), or None when none of them is
        retried (``retry_for``): such an input needs no retry tiers and no waiting room.
        Its DLQ it keeps (``streams.topology.failure_topics``)."""
        reached = {
            name
            for source in self.sources
            if self.topic(source.topic) == topic
            for name in self.downstream(source.name)
        }
        policies = [p for p in map(self.retry_for, sorted(reached)) if p and p.tiers]
        return max(policies, key=lambda p: p.tiers) if policies else None

    def downstream(self, start: str) -> set[str]:
        """Every node records from ``start`` reach, through steps (not through topics)."""
        seen: set[str] = set()
        todo = [start]
        while todo:
            for kids in self.children(todo.pop()).values():
                fresh = [k for k in kids if k not in seen]
                seen.update(fresh)
                todo += fresh
        return seen

    @property
    def retry_policies(self) -> list[RetryPolicy]:
        """Every retry policy in use (the topology's first): retry topics cover them all."""
        found = [self.retry] if self.retry is not None else []
        found += [n.retry for n in self.steps if n.retry is not None]
        return found

    def children(self, node: str) -> dict[str, list[str]]:
        """``{output: [child node names]}`` of ``node``, outputs in declaration order."""
        return self._children.get(node, {})

    @property
    def sources(self) -> list[SourceNode]:
        return [n for n in self.nodes.values() if isinstance(n, SourceNode)]

    @property
    def sinks(self) -> list[SinkNode]:
        return [n for n in self.nodes.values() if isinstance(n, SinkNode)]

    @property
    def steps(self) -> list[StepNode]:
        return [n for n in self.nodes.values() if isinstance(n, StepNode)]

    def topic(self, ref: TopicRef) -> str:
        """The concrete name of a topic reference under this app id."""
        return resolve_topic(ref, self.app_id)

    def source_for(self, topic: str) -> SourceNode:
        for s in self.sources:
            if self.topic(s.topic) == topic:
                return s
        raise KeyError(topic)

    @property
    def topics_read(self) -> list[str]:
        return _unique(self.topic(s.topic) for s in self.sources)

    @property
    def topics_written(self) -> list[str]:
        """The output topics (not the repartition topics the topology reads back)."""
        return _unique(self.topic(s.topic) for s in self.sinks if s.type != ANY_TYPE)

    @property
    def repartition_topics(self) -> list[str]:
        """``<app>-<step>-repartition`` of each step that keeps state after a rekey."""
        return _unique(self.topic(s.topic) for s in self.sinks if s.type == ANY_TYPE)

    @property
    def owned_topics(self) -> list[OwnedTopic]:
        """Topics this app owns (named from its app id): created by the runtime if missing."""
        seen: dict[str, OwnedTopic] = {}
        for sink in self.sinks:
            if isinstance(sink.topic, Owned):
                name = self.topic(sink.topic)
                if sink.type == ANY_TYPE:
                    seen.setdefault(name, OwnedTopic(name, "repartition", REPARTITION_CONFIG))
                else:
                    seen.setdefault(name, OwnedTopic(name, "output", {}))
        return list(seen.values())

    @property
    def changelog_topics(self) -> dict[str, str]:
        """``{store name: <app>-<store>-changelog}``; the runtime creates and checks them."""
        return {name: changelog_topic(self.app_id, name) for name in self.stores}

    def store_source(self, name: str) -> str:
        """The source topic store ``name`` is partitioned like (validated at build)."""
        topic = store_source(self, self.stores[name])
        if topic is None:
            raise TopologyError(f"store {name!r}: no single source topic feeds it")
        return topic

    def describe(self, format: str = "text") -> str:
        """Text like Kafka Streams' ``Topology.describe()``, or a Mermaid flowchart."""
        # describe imports this module: import on use
        from streams.topology.describe import describe_mermaid, describe_text  # noqa: PLC0415

        if format == "mermaid":
            return describe_mermaid(self)
        return describe_text(self)

    def __repr__(self) -> str:
        return f"Topology(app_id={self.app_id!r}, nodes={list(self.nodes)})"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def share_problems(topology: Topology) -> list[str]:
    """Why ``topology`` cannot run on a share group (KIP-932), if it cannot: records are
    handed to any worker, one at a time, and acknowledged, so there is no partition to
    keep state or order by key, no offset to commit in a transaction, and a failed record
    is delivered again rather than sent to a retry topic."""
    if topology.consumption != "share":
        return []
    problems = []
    stateful = [s.name for s in topology.steps if s.kind in _STATEFUL]
    if stateful or topology.stores:
        names = ", ".join(repr(n) for n in stateful or topology.stores)
        problems.append(
            f"share groups run stateless topologies only: {names} keep(s) state by key, and "
            "a share group hands a key's records to any worker (use consumption='group')"
        )
    if topology.processing_guarantee == "exactly_once":
        problems.append(
            "share groups acknowledge records, they commit no offsets: exactly-once needs "
            "consumption='group'"
        )
    if topology.retry_policies:
        problems.append(
            "share groups retry by delivering a record again (deliveries=N), not through "
            "retry topics: drop retry="
        )
    if topology.deliveries < 1:
        problems.append(f"deliveries must be at least 1, got {topology.deliveries}")
    return problems


def concurrency_problems(topology: Topology) -> list[str]:
    """What is wrong with the topology's async steps and concurrency settings, if anything:
    async functions where a step cannot await them, limits below 1, an ordering that would
    let a key's records overtake each other through retries, or a share group."""
    problems = []
    if topology.concurrency < 1:
        problems.append(f"concurrency must be at least 1, got {topology.concurrency}")
    if topology.ordering not in ORDERINGS:
        problems.append(f"ordering must be one of {ORDERINGS}, got {topology.ordering!r}")
    elif topology.ordering == "none" and topology.retry_policies:
        problems.append(
            "ordering='none' lets a key's records overtake each other, which retry topics "
            "exist to prevent: use ordering='key' (or drop retry=)"
        )
    for step in topology.steps:
        functions = [step.fn, *(pred for _, pred in step.predicates)]
        if step.kind not in ASYNC_KINDS and any(is_async(fn) for fn in functions):
            problems.append(
                f"{step.kind} step {step.name!r}: its function is async, which only "
                f"{', '.join(ASYNC_KINDS)} steps await"
            )
        if step.concurrency is not None:
            if step.concurrency < 1:
                problems.append(
                    f"step {step.name!r}: concurrency must be at least 1, got {step.concurrency}"
                )
            elif not step.is_async:
                problems.append(
                    f"step {step.name!r}: concurrency= limits an async step; {step.describe_fn()} "
                    "is not async"
                )
    if topology.consumption == "share" and topology.concurrent:
        problems.append(
            "a share group worker takes one record at a time: run more workers instead of "
            "concurrency > 1"
        )
    return problems
