"""Failure routing in the ``TestDriver``: retry tiers and DLQs in memory, on the driver's clock.

The same ``FailureHandler`` as the runtime decides every route and keeps per-key order
(its waiting rooms in a dict); what the runtime writes to Kafka is kept here instead:

- ``retried``: every record written to a retry tier, in write order (``Route``s);
- ``dead_letters``: every record written to a DLQ, in write order (``Route``s);
- ``pending``: the retry records not processed yet, per tier partition.

Due times are on the driver's clock (``advance_time``): ``run_due()`` processes every
retry record whose due time has come, earliest first, each partition of a tier in order,
exactly as the runtime's retry consumer would. Nothing blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from streams.codec import Codec, DecodeError
from streams.envelope import Envelope
from streams.failures.handler import Decision, FailureHandler, RecordLike
from streams.failures.headers import Headers, Stage, parse_failure_headers
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, Route
from streams.runtime.failure_routing import OriginMessage, widest_policy
from streams.testing.driver_state import DriverState
from streams.topology.decoding import decode_source
from streams.topology.plan import Plan
from streams.topology.policy import StepFailed
from streams.topology.topology import Topology

Write = Callable[[str, Envelope], None]


class DriverRetryMessage:
    """A record in an in-memory retry tier; quacks like ``confluent_kafka.Message``."""

    __slots__ = ("_offset", "route")

    def __init__(self, route: Route, offset: int) -> None:
        self.route = route
        self._offset = offset

    def topic(self) -> str:
        return self.route.topic

    def partition(self) -> int:
        return self.route.partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        ts = self.route.timestamp
        return (0, -1) if ts is None else (1, ts)

    def key(self) -> bytes | None:
        return self.route.key

    def value(self) -> bytes | None:
        return self.route.value

    def headers(self) -> Headers:
        return self.route.headers


class DriverFailureRouting:
    """Routes the driver's failed records; ``process`` is its one entry per record."""

    def __init__(
        self,
        topology: Topology,
        plan: Plan,
        codec: Codec,
        *,
        write: Write,
        clock: Callable[[], datetime],
        state: DriverState | None = None,
    ) -> None:
        policy = topology.retry or (widest_policy(topology) or RetryPolicy()).no_retries()
        self.topology = topology
        self.handler = FailureHandler(topology.app_id, policy)
        self.plan = plan
        self.codec = codec
        self._write = write
        self._clock = clock
        self._state = state
        self.outbox: list[tuple[str, Envelope]] = []
        self.retried: list[Route] = []
        self.dead_letters: list[Route] = []
        self.pending: dict[tuple[str, int], list[DriverRetryMessage]] = {}
        self._offsets: dict[tuple[str, int], int] = {}

    def process(self, msg: Any) -> None:
        """Admit, process and route one record read from an input or a retry tier."""
        admission = self.handler.on_record(FailedRecord.from_message(msg))
        if admission.decision is not Decision.PROCESS:
            return
        record = admission.record
        while record is not None:
            record = self._attempt(record)

    def run_due(self) -> int:
        """Process every retry record due by the clock, earliest first; returns how many."""
        done = 0
        while True:
            now = self._clock()
            heads = [
                (due, tp)
                for tp, queue in self.pending.items()
                if queue and (due := queue[0].route.due) is not None and due <= now
            ]
            if not heads:
                return done
            _, tp = min(heads)
            self.process(self.pending[tp].pop(0))
            done += 1

    def _attempt(self, record: RecordLike) -> RecordLike | None:
        handler, plan = self.handler, self.plan
        if record.headers and parse_failure_headers(record.headers) is not None:
            topic, headers = handler.origin_topic(record), handler.clean_headers(record)
        else:
            topic, headers = record.position.topic, list(record.headers)
        self.outbox.clear()
        try:
            env = decode_source(self.codec, plan.sources[topic], record.value, headers)
        except DecodeError as exc:
            return self._route(record, exc, Stage.DECODE, "decode", None)
        plan.current.message = origin = OriginMessage(record, headers)
        state = self._state
        if state is not None:
            state.begin(topic, origin.partition())
        try:
            plan.entry(topic)(env)
        except StepFailed as exc:
            if state is not None:
                state.abort()  # a failed attempt changes no store
            self.outbox.clear()
            policy = self.topology.retry_for(exc.step)
            return self._route(record, exc.error, Stage.PROCESS, exc.step, policy)
        finally:
            plan.current.message = None
        if state is not None:
            state.commit(topic, origin.partition(), origin.offset() + 1)
        for out_topic, out_env in self.outbox:
            self._write(out_topic, out_env)
        self.outbox.clear()
        return handler.on_success(record)

    def _route(
        self,
        record: RecordLike,
        exc: BaseException,
        stage: Stage,
        step: str,
        policy: RetryPolicy | None,
    ) -> RecordLike | None:
        route, nxt = self.handler.on_failure(
            record, exc, stage=stage, step=step, policy=policy, now=self._clock()
        )
        if route.dead_letter:
            self.dead_letters.append(route)
            return nxt
        self.retried.append(route)
        tp = (route.topic, route.partition)
        offset = self._offsets.get(tp, 0)
        self._offsets[tp] = offset + 1
        self.pending.setdefault(tp, []).append(DriverRetryMessage(route, offset))
        return nxt


def clock_of(time_ms: Callable[[], int]) -> Callable[[], datetime]:
    """A datetime clock over the driver's millisecond clock."""
    return lambda: datetime.fromtimestamp(time_ms() / 1000, UTC)
