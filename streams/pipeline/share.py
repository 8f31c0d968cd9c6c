"""The record path on a share group (KIP-932, a work queue): the failure policy and the
last step, around the same attempt a consumer group runs.

A share group hands each record to one worker, which acknowledges it: accept (done) or
release (deliver it again, to any worker). No partition is a worker's, so nothing keeps
per-key order and nothing keeps state by key (``Topology.shared`` refuses such steps).
The chain, assembled by ``share_chain``::

    RedeliverOrDeadLetter (the attempt, then its outcome) -> Produce -> Acknowledge

- ``RedeliverOrDeadLetter``: the attempt (decode and plan, atomic: a failed one writes
  nothing). Success: accepted. A record that cannot be decoded, a step's dead-letter
  verdict (bad input) or a step whose policy says ``dlq``: to the DLQ with the error
  headers (its delivery count as the attempts), then accepted. A policy that says
  ``skip``: accepted, nothing written (counted, one WARNING). Any other failure: released
  (``record.redeliver``), delivered again while its delivery count is under
  ``deliveries``; at the ``deliveries``-th, the DLQ, then accepted. Nothing is dropped
  silently as long as the broker's own limit (``group.share.delivery.count.limit``, 5 by
  default) is above ``deliveries``: past it the broker archives the record unseen.
- ``Acknowledge``: keeps the turn's acknowledgements until the broker has every output of
  the turn (the producer flushed, its errors raised: ``BrokerUnavailable`` or
  ``DeliveryError``), then gives them to the share consumer and commits them, without
  waiting. A record is accepted only once what it wrote is durable: at-least-once; a
  worker that dies first has its records delivered again, to another.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailureRouter
from streams.logs import Logger
from streams.pipeline.errors import BrokerUnavailable, DeliveryError
from streams.pipeline.execute import Attempt, AttemptFailure
from streams.pipeline.failure import OnSkip, write_route
from streams.pipeline.produce import OutputSink, Produce
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step
from streams.topology.policy import ErrorAction, ProcessingFailure, dead_letter
from streams.topology.topology import Topology


class Acknowledgements(Protocol):
    """What ``Acknowledge`` needs of a share consumer (``confluent_kafka.ShareConsumer``)."""

    def acknowledge_offset(
        self, topic: str, partition: int, offset: int, ack_type: Any
    ) -> None: ...
    def commit_async(self) -> None: ...


class RedeliverOrDeadLetter(Forward):
    """The failure policy of a share group (see the module docstring)."""

    __slots__ = (
        "_attempt",
        "_clock",
        "_default",
        "_deliveries",
        "_log",
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
        topology: Topology,
        sink: OutputSink,
        stats: Stats,
        log: Logger,
        clock: Callable[[], float],
        on_skip: OnSkip | None = None,
    ) -> None:
        super().__init__(next)
        self._attempt = attempt
        self._on_skip = on_skip
        self._deliveries = topology.deliveries
        self._default = topology.on_error
        self._router = FailureRouter(topology.app_id, RetryPolicy.no_retries())
        self._sink = sink
        self._stats = stats
        self._log = log
        self._clock = clock

    def submit(self, record: Record) -> None:
        self._stats.consumed += 1
        failed = self._attempt(record)
        if failed is not None:
            current = self._attempt.plan.current
            current.record = record  # in hand again: the lines about its failure name it
            try:
                self._failed(record, failed)
            finally:
                current.record = None
        self.next.submit(record)

    def _failed(self, record: Record, failed: AttemptFailure) -> None:
        policy = failed.policy or self._default
        failure = ProcessingFailure(failed.step, failed.error, record.meta, record.envelope)
        action = policy(failure) if policy is not None else None
        deliveries = record.delivery_count or 1
        if action is ErrorAction.SKIP:
            self._stats.skipped += 1
            error = f"{type(failed.error).__name__}: {failed.error}"
            self._log.warning("record skipped", step=failed.step, error=error)
            if self._on_skip is not None:
                self._on_skip(failure)
            return
        bad_input = failed.stage is Stage.DECODE or failed.policy is dead_letter
        if not bad_input and action is not ErrorAction.DLQ and deliveries < self._deliveries:
            record.redeliver = True  # delivered again, maybe to another worker
            return
        now = datetime.fromtimestamp(self._clock(), UTC)
        route = self._router.route(
            record, failed.error, stage=failed.stage, step=failed.step, now=now, attempts=deliveries
        )
        write_route(self._sink, route, record, self._attempt.codec)
        self._log.warning(
            "record dead-lettered",
            dlq=route.topic,
            deliveries=deliveries,
            exception=route.info.exception,
            step=failed.step,
        )


class Acknowledge:
    """The last step: acknowledges each record once the turn's outputs are durable."""

    __slots__ = ("_accept", "_consumer", "_release", "_sink", "_turn")

    def __init__(
        self, consumer: Acknowledgements, sink: OutputSink, accept: Any, release: Any
    ) -> None:
        self._consumer = consumer
        self._sink = sink
        self._accept, self._release = accept, release  # the client's AcknowledgeType values
        self._turn: list[tuple[str, int, int, bool]] = []

    def submit(self, record: Record) -> None:
        self._turn.append((record.topic, record.partition, record.offset, record.redeliver))

    def poll(self) -> None:
        """Acknowledge the turn's records, once their outputs are acknowledged."""
        turn, self._turn = self._turn, []
        if not turn:
            return
        sink, acknowledge = self._sink, self._consumer.acknowledge_offset
        accept, release = self._accept, self._release
        sink.flush(60.0)
        try:
            sink.raise_errors()  # nothing is accepted unless every output is durable
        except (BrokerUnavailable, DeliveryError):
            for topic, partition, offset, _again in turn:  # all delivered again
                acknowledge(topic, partition, offset, release)
            self._consumer.commit_async()
            raise
        for topic, partition, offset, again in turn:
            acknowledge(topic, partition, offset, release if again else accept)
        self._consumer.commit_async()

    def revoked(self, partitions: Any) -> None:
        """A share group revokes nothing: records, not partitions, are a worker's."""

    def join(self, timeout: float) -> None:
        self.poll()

    def close(self) -> None:
        self._turn.clear()


def share_chain(
    topology: Topology,
    attempt: Attempt,
    consumer: Acknowledgements,
    *,
    sink: OutputSink,
    stats: Stats,
    log: Logger,
    clock: Callable[[], float],
    accept: Any,
    release: Any,
    on_skip: OnSkip | None = None,
) -> Step:
    """The chain of a share group's worker (see the module docstring)."""
    last = Acknowledge(consumer, sink, accept, release)
    produce = Produce(last, sink, stats)
    return RedeliverOrDeadLetter(
        produce,
        attempt,
        topology=topology,
        sink=sink,
        stats=stats,
        log=log,
        clock=clock,
        on_skip=on_skip,
    )
