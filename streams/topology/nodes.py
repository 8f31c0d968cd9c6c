"""The nodes of a topology description: sources, steps and sinks, linked by parent names.

Nodes are plain data. Functions are kept as given; nothing here runs them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from streams.failures.policy import RetryPolicy
from streams.topology.names import TopicRef
from streams.topology.policy import ErrorPolicy

if TYPE_CHECKING:
    from streams.topology.specs import (
        AggregateSpec,
        DedupSpec,
        Lookup,
        TableJoinSpec,
        WindowJoinSpec,
    )

DEFAULT_OUTPUT = "out"
ANY_TYPE = "*"
"""The type of a repartition topic's sink and source: envelopes of any type pass through
unchanged (written and read as they are, at the version they carry)."""

ASYNC_KINDS = ("map", "filter", "flat_map", "peek", "process")
"""The step kinds that take an ``async def`` function."""


def is_async(fn: Any) -> bool:
    """Whether ``fn`` (a function, a callable object, a processor or its class) is called
    as a coroutine or an async generator."""
    if fn is None:
        return False
    target = getattr(fn, "process", fn)  # a processor object or class: its method
    for candidate in (target, getattr(target, "__call__", None)):  # noqa: B004
        if inspect.iscoroutinefunction(candidate) or inspect.isasyncgenfunction(candidate):
            return True
    return False


class StepKind(StrEnum):
    MAP = "map"
    FILTER = "filter"
    FLAT_MAP = "flat_map"
    PEEK = "peek"
    REKEY = "rekey"
    BRANCH = "branch"
    PROCESS = "process"
    DEDUP = "dedup"
    AGGREGATE = "aggregate"
    TO_STREAM = "to_stream"
    TABLE = "table"
    JOIN = "join"
    WINDOW_JOIN = "window_join"
    TABLE_JOIN = "table_join"
    REPLY = "reply"


@dataclass(frozen=True, slots=True)
class Edge:
    """``node``'s output ``output`` feeds the child that holds this edge."""

    node: str
    output: str = DEFAULT_OUTPUT

    def __str__(self) -> str:
        return self.node if self.output == DEFAULT_OUTPUT else f"{self.node}:{self.output}"

    @classmethod
    def parse(cls, ref: str | Edge) -> Edge:
        """``"node"`` or ``"node:output"``."""
        if isinstance(ref, Edge):
            return ref
        node, _, output = ref.partition(":")
        return cls(node, output or DEFAULT_OUTPUT)


@dataclass(frozen=True, slots=True)
class SourceNode:
    """Reads ``topic``; decodes each record as ``type``, resolved to reader ``version``;
    ``also``: more ``(type, version)`` pairs it reads the same way (a topic of several
    event types, as an event-sourced entity's). ``table``: the topic is a table's
    (``builder.table``): a record without a value is a tombstone, not a failure."""

    name: str
    topic: TopicRef
    type: str
    version: int
    outputs: tuple[str, ...] = (DEFAULT_OUTPUT,)
    parents: tuple[Edge, ...] = ()
    table: bool = False
    also: tuple[tuple[str, int], ...] = ()

    @property
    def reads(self) -> dict[str, int]:
        """Each type the source reads, with its reader version."""
        return {self.type: self.version, **dict(self.also)}

    @property
    def label(self) -> str:
        """``type@version`` of each type it reads, for people."""
        return ", ".join(f"{t}@{v}" for t, v in self.reads.items())


@dataclass(frozen=True, slots=True)
class StepNode:
    """One step. ``fn`` depends on ``kind``:

    - map: ``(Envelope) -> Envelope``; filter: ``(Envelope) -> bool``;
    - flat_map: ``(Envelope) -> Iterable[Envelope]``; peek: ``(Envelope) -> None``;
    - rekey: ``(Envelope) -> str`` (the new key);
    - process: a function ``(Envelope, ProcessorContext) -> None | Envelope | Iterable``
      or an object with such a ``process`` method (a class is instantiated once per run);
    - branch: ``predicates`` holds ``(output, predicate)`` pairs, first match wins; records
      that match none go to ``default`` when set, else are dropped like a filter's;
    - dedup: ``(Envelope) -> str | bytes`` (the id; None: the envelope id), ``dedup`` holds
      the window and the store; a second output, when declared, receives the duplicates;
    - aggregate: ``aggregate`` holds what it folds and how (``streams.topology.specs``);
      its output carries ``Update`` objects, to to_stream steps only; a windowed one has a
      second output, ``late``;
    - to_stream: ``(Update) -> Envelope | None``;
    - table: materialises a table topic's records in ``lookup.store`` (latest value of each
      key; tombstones delete); its output carries ``Update`` objects, like an aggregation's;
    - join: ``(Envelope, value) -> Envelope | None`` with the value of the record's key in
      the table ``lookup`` names (``lookup.inner``: records without one are dropped);
    - window_join: ``(left, right) -> Envelope | None`` for each pair of records of its two
      parents (left, right) with one key, ``window_join.within_ms`` apart at most;
    - table_join: ``(left value, right value) -> value`` for each change of either of its
      two parent tables (``table_join``); its output carries ``Update`` objects;
    - reply: no function and no output: each envelope is sent as the reply to the request
      being processed (``streams.topology.reply``).
    """

    name: str
    kind: StepKind
    parents: tuple[Edge, ...]
    fn: Any = None
    outputs: tuple[str, ...] = (DEFAULT_OUTPUT,)
    predicates: tuple[tuple[str, Callable[[Any], bool]], ...] = ()
    default: str | None = None
    on_error: ErrorPolicy | None = None
    retry: RetryPolicy | None = None  # overrides the topology's retry policy
    dedup: DedupSpec | None = None  # the window and store of a dedup step
    aggregate: AggregateSpec | None = None  # what an aggregation step folds, and how
    lookup: Lookup | None = None  # the table a table or join step writes or reads
    window_join: WindowJoinSpec | None = None  # a windowed join's window and store
    table_join: TableJoinSpec | None = None  # the two tables a table join reads
    concurrency: int | None = None  # an async step's own limit of records at once

    @property
    def is_async(self) -> bool:
        """Whether its function is a coroutine (or async generator) function: the step
        awaits it (``streams.topology.execution.async_steps``)."""
        return is_async(self.fn)

    def describe_fn(self) -> str:
        target = self.fn
        if target is None:
            return ""
        if isinstance(target, type):
            return target.__qualname__
        name = getattr(target, "__qualname__", None) or type(target).__qualname__
        return str(name)


@dataclass(frozen=True, slots=True)
class SinkNode:
    """Writes envelopes of ``type``@``version`` to ``topic``, keyed by the envelope's key."""

    name: str
    topic: TopicRef
    type: str
    version: int
    parents: tuple[Edge, ...]
    outputs: tuple[str, ...] = ()


Node = SourceNode | StepNode | SinkNode


def rekeyed(nodes: Mapping[str, Node], name: str, seen: set[str] | None = None) -> bool:
    """Whether a record reaching node ``name`` may have been rekeyed since its source
    (unknown nodes and cycles are validation's to report)."""
    seen = set() if seen is None else seen
    node = nodes.get(name)
    if node is None or name in seen or isinstance(node, SourceNode):
        return False
    seen.add(name)
    if isinstance(node, StepNode) and node.kind is StepKind.REKEY:
        return True
    return any(rekeyed(nodes, edge.node, seen) for edge in node.parents)
