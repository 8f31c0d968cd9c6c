"""The failure policy: the step around each processing attempt, two ways.

Chosen once from the topology (``streams.pipeline.chain``):

- ``StopSkipOrDeadLetter``, without a retry policy: a record whose attempt fails is
  handled as its error policy says (the failed step's own ``on_error``, else the
  topology's, else ``default``: a record that cannot be decoded to the DLQ, a step error
  stops). SKIP: counted, one WARNING, then passed on with nothing written, so its offset
  commits. DLQ: the record as read goes to its input's DLQ with the error headers (the
  routing path's ``FailureRouter``, with no retries), one WARNING, then passed on: its
  offset commits with that write. FAIL: one ERROR line with the traceback, then
  ``ProcessingError`` is raised: the record is never committed (the runtime stops; the
  driver raises it).
- ``RetryOrDeadLetter``, with a retry policy on the topology or a step: every record is
  first admitted by the ``FailureHandler`` (process it, park it behind its key's record
  in a retry tier, or skip a stale copy); a failed attempt is written to its retry tier
  or the DLQ (``Route``); a record that settles releases the next record parked behind
  it, which is processed at once (its writes commit with the record that released it). Parked and
  stale records are passed on with nothing written: their offset commits once the
  waiting room's change is durable (the committer flushes stores before offsets).

Either way an attempt is atomic (``streams.pipeline.execute``): a failed one writes
nothing and changes no store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from streams.codec import Codec
from streams.coordinates import TP
from streams.failures.handler import Decision, FailureHandler
from streams.failures.headers import Stage
from streams.failures.metrics import FailureMetrics
from streams.failures.parked import ParkedRecord, TransactionWaitingStore
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailureRouter, Route
from streams.failures.waiting import waiting_store_name
from streams.logs import Logger
from streams.pipeline.execute import Attempt
from streams.pipeline.produce import OutputSink
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step
from streams.record_size import DEFAULT_MESSAGE_MAX_BYTES
from streams.state import MemoryBackend, StateManager
from streams.topology.failure_topics import retried_inputs
from streams.topology.nodes import StepKind
from streams.topology.policy import (
    ErrorAction,
    ErrorPolicy,
    ProcessingError,
    ProcessingFailure,
    StepFailed,
    dead_letter,
)
from streams.topology.policy import default as default_policy
from streams.topology.reply import error_reply, request_of
from streams.topology.topology import Topology

OnSkip = Callable[[ProcessingFailure], None]
_NO_RETRIES = RetryPolicy.no_retries()


def write_route(sink: OutputSink, route: Route, record: Record, codec: Codec) -> None:
    """Queue a failed record's copy where its route says (a retry tier or the DLQ): the
    record as read, its partition and timestamp kept, error headers added. A request
    (``streams.topology.reply``) sent to the DLQ gets an error reply too, so its requester
    hears of it at once."""
    sink.send(
        route.topic,
        key=route.key,
        value=route.value,
        headers=route.headers,
        partition=route.partition,
        timestamp=route.timestamp,
    )
    if route.dead_letter:
        request = request_of(route.headers)  # the record's own headers are the route's
        if request is not None:
            info = route.info
            env = error_reply(request, record.envelope, info, route.topic, info.last_failure)
            value, headers = codec.encode(env)
            key = env.key.encode() if env.key is not None else None
            sink.send(request.reply_to, key=key, value=value, headers=headers)


def _failure(record: Record, failed: StepFailed) -> ProcessingFailure:
    return ProcessingFailure(failed.step, failed.error, record.meta, record.envelope)


class StopSkipOrDeadLetter(Forward):
    """Applies the error policy to failed attempts (see the module docstring). ``clock``:
    seconds since the epoch, for the dead letters' failure times."""

    __slots__ = (
        "_attempt",
        "_clock",
        "_default",
        "_log",
        "_metrics",
        "_on_skip",
        "_router",
        "_sink",
        "_stats",
    )

    def __init__(
        self,
        next: Step,
        attempt: Attempt,
        *,
        default: ErrorPolicy | None,
        app_id: str,
        sink: OutputSink,
        stats: Stats,
        log: Logger,
        clock: Callable[[], float],
        on_skip: OnSkip | None = None,
    ) -> None:
        super().__init__(next)
        self._attempt = attempt
        self._default = default or default_policy
        self._router = FailureRouter(app_id, RetryPolicy.no_retries(), max_bytes=sink.max_bytes)
        self._sink = sink
        self._metrics = FailureMetrics()
        self._stats = stats
        self._log = log
        self._clock = clock
        self._on_skip = on_skip

    def submit(self, record: Record) -> None:
        failed = self._attempt(record)
        if failed is not None:
            current = self._attempt.plan.current
            current.record = record  # in hand again: the lines about its failure name it
            try:
                self._failed(record, failed)
            finally:
                current.record = None
        self.next.submit(record)

    def _decide(self, record: Record, failed: StepFailed, failure: ProcessingFailure) -> Any:
        """What to do with a failed record: the policy's action (None: nothing more, a
        subclass has dealt with it)."""
        return (failed.policy or self._default)(failure)

    def _failed(self, record: Record, failed: StepFailed) -> None:
        failure = _failure(record, failed)
        error = failed.error
        log = self._log.bind(
            topic=record.topic, partition=record.partition, offset=record.offset, step=failed.step
        )
        action = self._decide(record, failed, failure)
        if action is None:
            return
        if action is ErrorAction.SKIP:
            self._stats.skipped += 1
            log.warning("record skipped", error=f"{type(error).__name__}: {error}")
            if self._on_skip is not None:
                self._on_skip(failure)
            return
        if action is ErrorAction.DLQ:
            now = datetime.fromtimestamp(self._clock(), UTC)
            # A share group's delivery count is the attempts (the headers cannot say).
            attempts = record.delivery_count
            route = self._router.route(
                record, error, stage=failed.stage, step=failed.step, now=now, attempts=attempts
            )
            write_route(self._sink, route, record, self._attempt.codec)
            self._metrics.routed(route)  # counted and logged (one WARNING)
            self._stats.failures = self._metrics.snapshot()
            return
        log.error("record failed", exc_info=error)
        raise ProcessingError(failure) from error


class RetryOrDeadLetter(Forward):
    """Routes failed attempts to retry tiers and the DLQ, in order per key (see the module
    docstring). ``clock``: seconds since the epoch, for due times."""

    __slots__ = ("_attempt", "_clock", "_handler", "_sink", "_stats", "_topology")

    def __init__(
        self,
        next: Step,
        attempt: Attempt,
        *,
        handler: FailureHandler,
        sink: OutputSink,
        topology: Topology,
        stats: Stats,
        clock: Callable[[], float],
    ) -> None:
        super().__init__(next)
        self._attempt = attempt
        self._handler = handler
        self._sink = sink
        self._topology = topology
        self._stats = stats
        self._clock = clock

    def submit(self, record: Record) -> None:
        admission = self._handler.on_record(record)
        if admission.decision is not Decision.PROCESS:
            self.next.submit(record)
            return
        head = admission.record
        current: Record | None = record
        if isinstance(head, ParkedRecord):
            # After a crash: its key's head, let out of the room but never finished, is
            # processed in this copy's place.
            self.next.submit(record)
            current = Record.released(head)
        while current is not None:
            current = self._process(current)

    def _process(self, record: Record) -> Record | None:
        """One attempt and its outcome; returns the next record of its key, if released."""
        handler = self._handler
        failed = self._attempt(record)
        if failed is None:
            released = handler.on_success(record)
            if record.failure is not None:  # counted as recovered
                self._stats.failures = handler.metrics.snapshot()
        else:
            policy = None
            if failed.policy is dead_letter:  # bad input (a step said so): never retried
                policy = _NO_RETRIES
            elif failed.stage is Stage.PROCESS:
                policy = self._topology.retry_for(failed.step)
            now = datetime.fromtimestamp(self._clock(), UTC)
            current = self._attempt.plan.current
            current.record = record  # in hand again: the lines about its failure name it
            try:
                route, released = handler.on_failure(
                    record,
                    failed.error,
                    stage=failed.stage,
                    step=failed.step,
                    policy=policy,
                    now=now,
                )
            finally:
                current.record = None
            write_route(self._sink, self._attempt.carry(route), record, self._attempt.codec)
            self._stats.failures = handler.metrics.snapshot()
        self.next.submit(record)
        return Record.released(released) if released is not None else None

    def revoked(self, partitions: Sequence[TP]) -> None:
        self._handler.revoked(partitions)
        self.next.revoked(partitions)


# -- assembly: what failure routing needs before the chain is built ----------------------
def widest_policy(topology: Topology) -> RetryPolicy | None:
    """The policy with the most retry tiers among the topology's and its steps' (the
    topics created and read must cover every step's tiers), or None when routing is off."""
    policies = topology.retry_policies
    return max(policies, key=lambda p: p.tiers) if policies else None


def failure_handler(
    topology: Topology, state: StateManager | None, *, max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES
) -> FailureHandler | None:
    """The handler of a topology that routes failures (None for one that does not), with
    a waiting room for each input that has retry tiers (``retried_inputs``), kept as a
    store of ``state`` (``<app>-<input>-waiting``, memory backend, changelog-backed like
    any store: restored on assignment, made durable at each commit). ``max_bytes``: the
    producer's limit (``FailureRouter``)."""
    widest = widest_policy(topology)
    if widest is None or state is None:
        return None
    retried = retried_inputs(topology)
    stores = {
        topic: state.add_store(
            waiting_store_name(topology.app_id, topic), MemoryBackend(), source_topic=topic
        )
        for topic in retried
    }

    def room_store(topic: str, partition: int) -> TransactionWaitingStore:
        store = stores[topic]
        return TransactionWaitingStore(lambda: store.partition(partition).transaction())

    policy = topology.retry or widest.no_retries()
    return FailureHandler(
        topology.app_id, policy, store_for=room_store, retried=retried, max_bytes=max_bytes
    )


def needs_range_assignor(topology: Topology) -> bool:
    """Whether co-located partitions need the range assignor (the client's or, with
    KIP-848, the broker's: ``streams.runtime.config.group_membership``), so partition *n*
    of an input and of its retry tiers land on the same instance (its waiting room is
    there), and so do partition *n* of a stream and of the table it joins."""
    kinds = (StepKind.JOIN, StepKind.WINDOW_JOIN, StepKind.TABLE_JOIN)
    joins = any(step.kind in kinds for step in topology.steps)
    return bool(topology.retry_policies) or joins
