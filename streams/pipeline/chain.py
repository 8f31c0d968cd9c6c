"""The record path assembled from a topology, once: which steps, in which order.

Head first (brackets: only when the topology needs it; ``a | b``: one or the other; the
same line as docs/architecture.md's, and a unit test checks both against what this
module assembles)::

    [intake] → [TimeOrder] → [RetryGate] → [Concurrently] → Track
      → StopSkipOrDeadLetter | RetryOrDeadLetter → Produce → [Timers] → Commit

The attempt (decode, then the plan) runs inside the failure policy.

- ``intake``: steps put first: a caller's (``streams replay --through`` drops records
  past the replayed range before they are tracked), the runtime's metrics and stall watch
  (nothing per record).
- ``TimeOrder`` first when a stream joins a table of other topics (a table topic, an
  aggregation of another topic): the two are read in event-time order.
- ``RetryGate`` only when the topology routes failures (a retry policy on it or a step).
- ``Concurrently`` only when the topology has async steps and a concurrency above 1:
  records in flight at once, each down the rest of the chain in a greenlet; positions move
  over what finished in order, and commits go through ``ConcurrentCommits``.
- the failure policy is ``RetryOrDeadLetter`` with routing, else ``StopSkipOrDeadLetter``.
- ``Timers`` only when a processor scheduled a timer in its ``init`` (``ctx.schedule``).
- the attempt is traced (a span per attempt, trace context to outputs and retries) when
  an OpenTelemetry SDK is set up (``streams.observability.tracing``).

The runtime builds it with confluent-kafka clients, the ``TestDriver`` with in-memory
ones: both run these same steps. ``build_chain`` does no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from streams.codec import Codec
from streams.failures.handler import FailureHandler
from streams.logs import Logger
from streams.observability.tracing import tracing
from streams.pipeline.commit import Commit, Committer
from streams.pipeline.concurrency import ConcurrentCommits, Concurrently
from streams.pipeline.execute import Attempt
from streams.pipeline.failure import OnSkip, RetryOrDeadLetter, StopSkipOrDeadLetter
from streams.pipeline.offsets import Partitions, Track
from streams.pipeline.pauses import ConsumerControl, Pauses
from streams.pipeline.produce import OutputSink, Produce
from streams.pipeline.retry_gate import RetryGate
from streams.pipeline.stats import Stats
from streams.pipeline.step import Step
from streams.pipeline.time_order import TimeOrder
from streams.pipeline.timers import Timers
from streams.pipeline.traced import TracedAttempt
from streams.state import StateManager
from streams.topology.execution.async_steps import Awaiter, LoopThread
from streams.topology.execution.step_timer import StepTimer
from streams.topology.failure_topics import failure_topics
from streams.topology.tables import stream_table_sides
from streams.topology.topology import Topology

Intake = Callable[[Step], Step]
"""Makes a step placed before the chain's own, given the step to hand records to."""


@dataclass(frozen=True, slots=True)
class Chain:
    """The assembled chain: ``head`` takes every consumed record; ``attempt`` runs the plan
    (its dedup counters); ``gate`` is set when routing (its poll timeout); ``topics`` is
    what the consumer subscribes to (inputs, and their retry tiers when routing);
    ``committer`` is the one the runtime calls too (with concurrency, the given one
    wrapped); ``concurrently`` is set with concurrency; ``pauses`` is who paused which
    partition (the runtime forgets the partitions that leave)."""

    head: Step
    attempt: Attempt
    gate: RetryGate | None
    topics: list[str]
    committer: Committer
    pauses: Pauses
    commit: Commit
    concurrently: Concurrently | None = None

    def idle(self) -> None:
        """The consumer has no record at hand (``Commit.idle``)."""
        self.commit.idle()

    def poll_timeout(self, ceiling: float) -> float:
        """How long the loop may wait for records: ``ceiling``, or less if a held retry
        partition ripens sooner, records are in flight, or an early commit is due."""
        ceiling = self.commit.poll_timeout(ceiling)
        if self.gate is not None:
            ceiling = self.gate.poll_timeout(ceiling)
        if self.concurrently is not None:
            ceiling = self.concurrently.poll_timeout(ceiling)
        return ceiling

    def steps(self) -> list[Step]:
        """The steps a record goes through, head first (each holds the next as ``next``;
        ``Commit``, the last, holds none)."""
        found: list[Step] = []
        step: Step | None = self.head
        while step is not None:
            found.append(step)
            step = getattr(step, "next", None)
        return found

    @property
    def held(self) -> int:
        """Records the concurrency step holds (none without it)."""
        return self.concurrently.held if self.concurrently is not None else 0

    @property
    def in_flight(self) -> int:
        """Records started and not finished (with concurrency; else none between turns)."""
        return self.concurrently.in_flight if self.concurrently is not None else 0


def build_chain(
    topology: Topology,
    *,
    codec: Codec,
    state: StateManager | None,
    handler: FailureHandler | None,
    sink: OutputSink,
    partitions: Partitions,
    committer: Committer,
    consumer: ConsumerControl,
    stats: Stats,
    log: Logger,
    clock: Callable[[], float],
    commit_interval_s: float,
    commit_idle_s: float | None = None,
    on_skip: OnSkip | None = None,
    intake: Sequence[Intake] = (),
    step_timer: StepTimer | None = None,
    shutdown_timeout_s: float = 30.0,
    max_held: int = 1_000,
) -> Chain:
    """The chain for ``topology`` (see the module docstring). ``handler`` (from
    ``failure_handler``, which adds the waiting rooms to ``state``) when it routes
    failures; ``clock``: seconds since the epoch (dedup windows, retry due times);
    ``commit_idle_s``: commit early when caught up (``streams.pipeline.commit``);
    ``step_timer``: per-step times of the records it is armed for (metrics);
    ``shutdown_timeout_s``: how long a commit or a revoke waits for records in flight;
    ``max_held``: records of one partition the concurrency step holds before pausing it."""
    pauses = Pauses(consumer)
    concurrently: Concurrently | None = None
    awaiter: Awaiter | None = None
    if topology.concurrent:  # decided here, once: else the chain has no concurrency step
        concurrently = Concurrently(
            None,  # type: ignore[arg-type] # the rest of the chain, once built (below)
            limit=topology.concurrency,
            ordering=topology.ordering,
            partitions=partitions,
            control=pauses.view("concurrency"),
            loop=LoopThread(f"streams-async-{topology.app_id}"),
            max_held=max_held,
        )
        awaiter = concurrently.awaiter
        committer = ConcurrentCommits(
            committer, concurrently, partitions, timeout=shutdown_timeout_s
        )
    traced = tracing()  # decided here, once: untraced, the chain has no tracing step
    if traced is None:
        attempt = Attempt(
            topology,
            codec,
            state,
            clock,
            step_timer,
            awaiter=awaiter,
            refused=sink.refused_records,
        )
    else:
        attempt = TracedAttempt(
            topology,
            codec,
            state,
            clock,
            step_timer,
            awaiter=awaiter,
            refused=sink.refused_records,
            tracing=traced,
        )
    commit = Commit(
        committer,
        commit_interval_s,
        positions=concurrently is None,
        idle_s=commit_idle_s,
        at_end=partitions.at_end,
    )
    step: Step = commit
    if attempt.plan.timers:
        step = Timers(
            step,
            attempt,
            owned=partitions,
            inputs=topology.topics_read,
            sink=sink,
            stats=stats,
            log=log,
            clock=clock,
        )
    step = Produce(step, sink, stats, timeout_s=shutdown_timeout_s)
    topics = list(topology.topics_read)
    gate: RetryGate | None = None
    if handler is not None:
        step = RetryOrDeadLetter(
            step,
            attempt,
            handler=handler,
            sink=sink,
            topology=topology,
            stats=stats,
            clock=clock,
        )
        step = Track(step, partitions, stats)
        step = _concurrently(step, concurrently, attempt)
        tiers = [t for topics_of in failure_topics(topology) for t in topics_of.retries]
        step = gate = RetryGate(
            step, consumer=pauses.view("retry gate"), retry_topics=tiers, clock=clock
        )
        topics += tiers
    else:
        step = StopSkipOrDeadLetter(
            step,
            attempt,
            default=topology.on_error,
            app_id=topology.app_id,
            sink=sink,
            stats=stats,
            log=log,
            clock=clock,
            on_skip=on_skip,
        )
        step = Track(step, partitions, stats)
        step = _concurrently(step, concurrently, attempt)
    sides = stream_table_sides(topology)
    if sides:
        step = TimeOrder(
            step,
            sides=sides,
            decode=attempt.decode,
            consumer=pauses.view("time order"),
            partitions=partitions,
        )
    for wrap in reversed(intake):
        step = wrap(step)
    return Chain(step, attempt, gate, topics, committer, pauses, commit, concurrently)


def _concurrently(step: Step, concurrently: Concurrently | None, attempt: Attempt) -> Step:
    """``concurrently`` in front of ``step`` (the chain after it), when there is one."""
    if concurrently is None:
        return step
    concurrently.next = step
    concurrently.attempt = attempt
    return concurrently
