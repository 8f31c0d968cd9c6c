"""The record path assembled from a topology, once: which steps, in which order.

::

    [intake] → [TimeOrder] → [WaitForDue] → Track → failure policy → Produce → [Timers] → Commit
                              (routing)             (Attempt: decode → plan)
                                                    StopSkipOrDeadLetter | RetryOrDeadLetter

- ``intake``: steps a caller puts first (``streams replay --through`` drops records past
  the replayed range before they are tracked).
- ``TimeOrder`` first when a stream joins a table of other topics (a table topic, an
  aggregation of another topic): the two are read in event-time order.
- ``WaitForDue`` only when the topology routes failures (a retry policy on it or a step).
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
from streams.pipeline.execute import Attempt
from streams.pipeline.failure import (
    OnSkip,
    RetryOrDeadLetter,
    StopSkipOrDeadLetter,
    failure_topics,
)
from streams.pipeline.gate import WaitForDue
from streams.pipeline.offsets import Partitions, Track
from streams.pipeline.produce import OutputSink, Produce
from streams.pipeline.stats import Stats
from streams.pipeline.step import Step
from streams.pipeline.time_order import OrderControl, TimeOrder
from streams.pipeline.timers import Timers
from streams.pipeline.traced import TracedAttempt
from streams.state import StateManager
from streams.topology.joins import stream_table_sides
from streams.topology.step_timer import StepTimer
from streams.topology.topology import Topology

Intake = Callable[[Step], Step]
"""Makes a step placed before the chain's own, given the step to hand records to."""


@dataclass(frozen=True, slots=True)
class Chain:
    """The assembled chain: ``head`` takes every consumed record; ``attempt`` runs the plan
    (its dedup counters); ``gate`` is set when routing (its poll timeout); ``topics`` is
    what the consumer subscribes to (inputs, and their retry tiers when routing)."""

    head: Step
    attempt: Attempt
    gate: WaitForDue | None
    topics: list[str]

    def poll_timeout(self, ceiling: float) -> float:
        """How long the loop may wait for records: ``ceiling``, or less if a held retry
        partition ripens sooner."""
        return self.gate.poll_timeout(ceiling) if self.gate is not None else ceiling


def build_chain(
    topology: Topology,
    *,
    codec: Codec,
    state: StateManager | None,
    handler: FailureHandler | None,
    sink: OutputSink,
    partitions: Partitions,
    committer: Committer,
    consumer: OrderControl,
    stats: Stats,
    log: Logger,
    clock: Callable[[], float],
    commit_interval_s: float,
    on_skip: OnSkip | None = None,
    intake: Sequence[Intake] = (),
    step_timer: StepTimer | None = None,
) -> Chain:
    """The chain for ``topology`` (see the module docstring). ``handler`` (from
    ``failure_handler``, which adds the waiting rooms to ``state``) when it routes
    failures; ``clock``: seconds since the epoch (dedup windows, retry due times);
    ``step_timer``: per-step times of the records it is armed for (metrics)."""
    traced = tracing()  # decided here, once: untraced, the chain has no tracing step
    if traced is None:
        attempt = Attempt(topology, codec, state, clock, step_timer)
    else:
        attempt = TracedAttempt(topology, codec, state, clock, step_timer, tracing=traced)
    step: Step = Commit(committer, commit_interval_s)
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
    step = Produce(step, sink, stats)
    topics = list(topology.topics_read)
    gate: WaitForDue | None = None
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
        tiers = [t for topics_of in failure_topics(topology) for t in topics_of.retries]
        step = gate = WaitForDue(step, consumer=consumer, retry_topics=tiers, clock=clock)
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
    sides = stream_table_sides(topology)
    if sides:
        step = TimeOrder(
            step, sides=sides, decode=attempt.decode, consumer=consumer, partitions=partitions
        )
    for wrap in reversed(intake):
        step = wrap(step)
    return Chain(step, attempt, gate, topics)
