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
from typing import Any, Protocol

from streams.failures.headers import Stage
from streams.logs import Logger
from streams.pipeline.errors import BrokerUnavailable, DeliveryError, OutputsRefused
from streams.pipeline.execute import Attempt
from streams.pipeline.failure import OnSkip, StopSkipOrDeadLetter
from streams.pipeline.produce import OutputSink, Produce
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Step
from streams.topology.policy import ErrorAction, ProcessingFailure, StepFailed, dead_letter
from streams.topology.topology import Topology


class Acknowledgements(Protocol):
    """What ``Acknowledge`` needs of a share consumer (``confluent_kafka.ShareConsumer``)."""

    def acknowledge_offset(
        self, topic: str, partition: int, offset: int, ack_type: Any
    ) -> None: ...
    def commit_async(self) -> None: ...


class RedeliverOrDeadLetter(StopSkipOrDeadLetter):
    """The failure policy of a share group (see the module docstring): the consumer
    group's, but a failure its policy would stop for is delivered again, and sent to the
    DLQ at its last delivery."""

    __slots__ = ("_deliveries",)

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
        super().__init__(
            next,
            attempt,
            default=topology.on_error or _redeliver,
            app_id=topology.app_id,
            sink=sink,
            stats=stats,
            log=log,
            clock=clock,
            on_skip=on_skip,
        )
        self._deliveries = topology.deliveries

    def submit(self, record: Record) -> None:
        self._stats.consumed += 1  # no Track before it: a share group has no partitions
        super().submit(record)

    def _decide(self, record: Record, failed: StepFailed, failure: ProcessingFailure) -> Any:
        if failed.stage is Stage.DECODE or failed.policy is dead_letter:
            return ErrorAction.DLQ  # bad input: no delivery makes it right
        action = super()._decide(record, failed, failure)
        if action is not ErrorAction.FAIL:
            return action
        if (record.delivery_count or 1) < self._deliveries:
            record.redeliver = True  # delivered again, maybe to another worker
            return None
        return ErrorAction.DLQ


def _redeliver(_failure: ProcessingFailure) -> ErrorAction:
    """A share group's default policy: a failed record is tried again (FAIL: not skipped,
    not dead-lettered before its last delivery)."""
    return ErrorAction.FAIL


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
        except (BrokerUnavailable, DeliveryError, OutputsRefused):
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
