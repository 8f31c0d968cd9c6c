"""The executable form of a topology: each node compiled into a small closure.

The plan compiles sources and sinks itself; each step is compiled by its operator's
``build_<kind>(plan, node, outs)`` (``_STEP_BUILDERS``, one module per operator in
``streams.topology.execution``), handed the compiled nodes its outputs feed.

The record path (``streams.pipeline.execute``, which the runtime and the test driver
share) builds a ``Plan`` and feeds it one decoded envelope at a time, in offset order per
partition, after setting ``plan.current.record``. Everything runs synchronously on the
caller's thread: when ``entries[topic](envelope)`` returns, every sink the record reaches
has been handed its envelope through ``emit`` (in the order the steps produced them).
Nothing here touches Kafka.

State: ``stores`` maps each declared store name to the object processors get from
``ctx.store(name)`` (a ``streams.state.RoutedStore``: the current record's partition);
dedup steps use theirs with ``clock`` as "now".

Timing: with a ``timer`` (``streams.topology.execution.step_timer``), the nodes are
compiled a second time, each step and sink wrapped in it, into entries the timer puts in
place of ``entries`` while it is armed: a record it is not armed for runs exactly as without one.
Both compilations share what a node makes once (a class processor's instance, initialised
once with the first compilation's context; a dedup's counters).

Errors: a step whose function raises, or a sink whose envelope fails to encode
(``EncodeError`` from ``emit``), becomes ``StepFailed`` (carrying the step name and its own
policy), which propagates out of ``run`` for the executor to apply the policy. Any other
exception from ``emit`` (a broken producer) propagates unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from streams.codec.errors import EncodeError
from streams.envelope import DEFAULT_SOURCE, Envelope
from streams.state.dedup import Dedup
from streams.topology.errors import TopologyError
from streams.topology.execution.aggregate import build_aggregate, build_to_stream
from streams.topology.execution.async_steps import Awaiter, Blocking, StepLimit, sync_call
from streams.topology.execution.calls import Emit, Run, noop
from streams.topology.execution.context import Current
from streams.topology.execution.dedup import build_dedup
from streams.topology.execution.joins import build_join, build_table, build_table_join
from streams.topology.execution.process import build_process
from streams.topology.execution.replier import build_reply, replier
from streams.topology.execution.schedule import Timer
from streams.topology.execution.stateless import (
    build_branch,
    build_filter,
    build_flat_map,
    build_map,
    build_peek,
    build_rekey,
)
from streams.topology.execution.step_timer import StepTimer
from streams.topology.execution.window_join import build_window_join
from streams.topology.nodes import ANY_TYPE, SinkNode, SourceNode, StepKind, StepNode
from streams.topology.policy import StepFailed
from streams.topology.topology import Topology

if TYPE_CHECKING:
    from streams.codec import Codec
    from streams.codec.payload import Payloads


class SinkTypeError(TopologyError):
    """An envelope reached a sink declared for another type or version."""


class Plan:
    """Compiled nodes of ``topology`` for one run. ``emit(topic, envelope)`` receives
    every output. ``entries[topic]`` is the function that runs one envelope read from
    ``topic``; ``close()`` closes class processors."""

    def __init__(
        self,
        topology: Topology,
        emit: Emit,
        stores: Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        timer: StepTimer | None = None,
        payloads: Payloads | None = None,
        codec: Codec | None = None,
        awaiter: Awaiter | None = None,
    ) -> None:
        self.topology = topology
        self.codec = codec
        """The executor's codec: a windowed join keeps envelopes as it writes them."""
        self.payloads = payloads
        """The catalog's payload codec, for stores of catalog-typed values (None: the
        default catalog's)."""
        self.current = Current()
        self._emit = emit
        self._stores = dict(stores or {})
        self.clock = clock
        """Seconds since the epoch for dedup windows (the executor's processing clock)."""
        self.dedups: list[Dedup] = []
        self.timers: list[Timer] = []
        """What processors scheduled in ``init`` (``ctx.schedule``)."""
        self._compiled: dict[str, Run] = {}
        self._closers: list[Callable[[], object]] = []
        self._made: dict[str, Any] = {}  # per node, what one compilation makes for all
        self._timer: StepTimer | None = None  # set while the timed entries compile
        self._awaiter = awaiter
        if awaiter is not None:
            self._closers.append(awaiter.close)
        self._limits: dict[str, StepLimit] = {}  # async steps' own limits, by node
        self.sources: dict[str, SourceNode] = {}
        for src in topology.sources:
            self.sources[topology.topic(src.topic)] = src
        self.entries: dict[str, Run] = self._compile_entries()
        if timer is not None:
            self._compiled, self._timer = {}, timer
            timer.add(self.entries, self._compile_entries())
            self._compiled, self._timer = {}, None

    def _compile_entries(self) -> dict[str, Run]:
        return {topic: self._compile(src.name) for topic, src in self.sources.items()}

    @property
    def stores(self) -> Mapping[str, Any]:
        """The stores steps use, by name (``streams.state.RoutedStore``)."""
        return self._stores

    def store_of(self, node: StepNode, name: str | None) -> Any:
        """Store ``name``, which step ``node`` keeps or reads. Raises TopologyError when
        the plan was made without it (the runtime and the TestDriver open every store)."""
        store = self._stores.get(name) if name is not None else None
        if store is None:
            raise TopologyError(
                f"{node.kind} step {node.name!r} has no state store {name!r}: run the topology "
                "with the runtime or the TestDriver, which open its stores"
            )
        return store

    @property
    def duplicates(self) -> int:
        """Records dropped by the plan's dedup steps so far."""
        return sum(d.duplicates for d in self.dedups)

    def on_close(self, close: Callable[[], object]) -> None:
        """Call ``close()`` when the plan closes (a class processor's ``close``)."""
        self._closers.append(close)

    def close(self) -> None:
        for close in self._closers:
            close()
        self._closers.clear()

    # -- compilation ---------------------------------------------------------------------
    def _compile(self, name: str) -> Run:
        run = self._compiled.get(name)
        if run is None:
            run = self._build(name)
            if self._timer is not None and not isinstance(self.topology.nodes[name], SourceNode):
                run = self._timer.wrap(name, run)
            self._compiled[name] = run
        return run

    def _outputs(self, name: str) -> dict[str, Run]:
        return {
            out: _fan_out([self._compile(k) for k in kids])
            for out, kids in self.topology.children(name).items()
        }

    def _build(self, name: str) -> Run:
        node = self.topology.nodes[name]
        if isinstance(node, SinkNode):
            return self._sink(node)
        outs = self._outputs(name)
        if isinstance(node, SourceNode):
            return outs[node.outputs[0]]
        return _STEP_BUILDERS[node.kind](self, node, outs)

    def _sink(self, node: SinkNode) -> Run:
        topic = self.topology.topic(node.topic)
        emit = self._writer(node.name)
        want_type, want_version, name = node.type, node.version, node.name
        any_type = want_type == ANY_TYPE  # a repartition topic's: written as it is

        def sink(env: Envelope) -> None:
            if not any_type and (env.type != want_type or env.version != want_version):
                err = SinkTypeError(
                    f"sink {name!r} writes {want_type}@{want_version} to {topic!r}, "
                    f"got an envelope of {env.type}@{env.version}"
                )
                raise StepFailed(name, err, None)
            emit(topic, env)

        return sink

    def _writer(self, step: str) -> Emit:
        return _writer(self._emit, self.topology.app_id, self.current, step)

    def replier(self, step: str) -> Run:
        """What sends a reply to the request being processed, for ``step``
        (``streams.topology.execution.replier``)."""
        return replier(self.current, self._writer(step), step)

    @property
    def awaiter(self) -> Awaiter:
        """What runs the async steps' coroutines (closed with the plan): the one given,
        else (made on first use) one that waits for each on a loop thread of its own."""
        awaiter = self._awaiter
        if awaiter is None:
            awaiter = self._awaiter = Blocking()
            self._closers.append(awaiter.close)
        return awaiter

    def limit(self, node: StepNode) -> StepLimit | None:
        """The async step ``node``'s own limit of records at once (None: it has none),
        one for both compilations."""
        if node.concurrency is None:
            return None
        limit = self._limits.get(node.name)
        if limit is None:
            limit = self._limits[node.name] = StepLimit(node.name, node.concurrency)
        return limit

    def function(self, node: StepNode) -> Any:
        """``node``'s function as the step calls it: an async one compiled into a plain
        callable that awaits it (``streams.topology.execution.async_steps``)."""
        if node.is_async:
            return sync_call(node.fn, self.awaiter, self.limit(node))
        return node.fn

    def made(self, name: str, make: Callable[[], Any]) -> Any:
        """What node ``name`` needs made once whichever entries it is compiled into (a
        class processor's instance, a dedup's counters): ``make()`` the first time."""
        found = self._made.get(name)
        if found is None:
            found = self._made[name] = make()
        return found


def _writer(emit: Emit, app_id: str, current: Current, step: str) -> Emit:
    """``emit`` as ``step`` writes: each event the topology made without a source of its
    own (``Envelope.new``/``follow`` without ``source=``) gets ``app_id`` as its source,
    the producing service (docs/wire-format.md), while an envelope with the id of the
    record being processed is that event passed on, and keeps its source; an envelope
    that does not fit its schema fails ``step`` (``EncodeError``: the topology's policy
    applies), any other error (a broken producer) passes unchanged. One function for
    both: it runs for every output."""

    def write(topic: str, env: Envelope) -> None:
        if env.source == DEFAULT_SOURCE:
            read = getattr(current.record, "envelope", None)  # None for a timer
            if read is None or read.id != env.id:
                env = env.with_source(app_id)
        try:
            emit(topic, env)
        except EncodeError as exc:
            raise StepFailed(step, exc, None) from exc

    return write


def _fan_out(children: list[Run]) -> Run:
    if not children:
        return noop
    if len(children) == 1:
        return children[0]

    def fan_out(env: Envelope) -> None:
        for child in children:
            child(env)

    return fan_out


_STEP_BUILDERS: dict[StepKind, Callable[[Plan, StepNode, dict[str, Run]], Run]] = {
    StepKind.MAP: build_map,
    StepKind.FILTER: build_filter,
    StepKind.FLAT_MAP: build_flat_map,
    StepKind.PEEK: build_peek,
    StepKind.REKEY: build_rekey,
    StepKind.BRANCH: build_branch,
    StepKind.PROCESS: build_process,
    StepKind.DEDUP: build_dedup,
    StepKind.AGGREGATE: build_aggregate,
    StepKind.TO_STREAM: build_to_stream,
    StepKind.TABLE: build_table,
    StepKind.JOIN: build_join,
    StepKind.WINDOW_JOIN: build_window_join,
    StepKind.TABLE_JOIN: build_table_join,
    StepKind.REPLY: build_reply,
}
