"""The processing attempt inside a span: what the chain runs when tracing is on.

``build_chain`` takes ``TracedAttempt`` instead of ``Attempt`` when
``streams.observability.tracing.tracing()`` finds an OpenTelemetry SDK; otherwise this
module is never loaded and the record path has no tracing step. Per attempt:

- a CONSUMER span ``process <topic>``, child of the W3C context in the record's headers
  (a new trace when there is none), current while the plan runs (a step's own spans nest
  under it), ended when the attempt returns or raises; a record the sampler would not
  sample gets no span object at all (``Tracing.unsampled``), only its context, current
  while the plan runs and carried as below;
- success: every output carries the span's context (``traceparent``, ``tracestate``);
- failure: the span is marked failed; a retry copy of the record carries the span's
  context (``carry``), so the retry attempt is its child; a dead letter keeps the headers
  the record was read with (its ``traceparent`` too), so a replay of it stays in the trace.

Same contract as ``Attempt`` otherwise (atomic, what it returns and raises).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from streams.failures.routing import Route
from streams.pipeline.execute import Attempt
from streams.pipeline.record import Record
from streams.topology.policy import StepFailed

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from streams.codec import Codec
    from streams.coordinates import Coordinates
    from streams.observability.otel import Tracing
    from streams.pipeline.produce import Refusal
    from streams.state import StateManager
    from streams.topology.execution.async_steps import Awaiter
    from streams.topology.execution.step_timer import StepTimer
    from streams.topology.topology import Topology


class TracedAttempt(Attempt):
    """An ``Attempt`` inside a span (see the module docstring)."""

    def __init__(
        self,
        topology: Topology,
        codec: Codec,
        state: StateManager | None,
        clock: Callable[[], float],
        step_timer: StepTimer | None = None,
        *,
        awaiter: Awaiter | None = None,
        refused: dict[Coordinates, Refusal] | None = None,
        tracing: Tracing,
    ) -> None:
        super().__init__(
            topology, codec, state, clock, step_timer, awaiter=awaiter, refused=refused
        )
        self._tracing = tracing
        self._group = topology.app_id
        self._names: dict[str, str] = {}
        self._failed: list[tuple[str, bytes]] = []  # the context of the last failed attempt

    def __call__(self, record: Record) -> StepFailed | None:
        tracing = self._tracing
        quick = tracing.unsampled(record.headers)
        if quick is not None:
            carrier, token = quick
            try:
                failed = Attempt.__call__(self, record)
            finally:
                tracing.leave(token)
            self._carry(record, failed, carrier)
            return failed
        topic = record.topic
        name = self._names.get(topic)
        if name is None:
            name = self._names[topic] = f"process {topic}"
        span, ctx, token = tracing.enter(name, record.headers)
        try:
            failed = Attempt.__call__(self, record)
        except BaseException as exc:
            tracing.leave(token)
            tracing.failed(span, exc)
            span.end()
            raise
        tracing.leave(token)
        if failed is not None:
            tracing.failed(span, failed.error, failed.step)
        if failed is not None or record.outputs:
            self._carry(record, failed, tracing.carrier(ctx))
        if span.is_recording():
            _describe(span, record, self._group)
        span.end()
        return failed

    def _carry(
        self, record: Record, failed: StepFailed | None, carrier: list[tuple[str, bytes]]
    ) -> None:
        """Gives the outputs of a successful attempt the trace headers ``carrier``; keeps
        them for ``carry`` after a failed one (the failure policy routes it next)."""
        if failed is not None:
            self._failed = carrier
            return
        outputs = record.outputs
        if outputs:
            record.outputs = [(t, k, v, [*h, *carrier]) for t, k, v, h in outputs]

    def carry(self, route: Route) -> Route:
        """A retry copy carries the context of the attempt that just failed; a dead letter
        keeps the headers it was read with."""
        if route.dead_letter:
            return route
        return replace(route, headers=self._tracing.rewrite(route.headers, self._failed))


def _describe(span: Span, record: Record, group: str) -> None:
    """OpenTelemetry's messaging attributes of a recorded span, and the envelope's."""
    span.set_attributes(
        {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.destination.name": record.topic,
            "messaging.destination.partition.id": str(record.partition),
            "messaging.kafka.offset": record.offset,
            "messaging.consumer.group.name": group,
        }
    )
    env = record.envelope
    if env is not None:
        span.set_attribute("messaging.message.id", env.id)
        span.set_attribute("streams.event.type", env.type)
    if record.failure is not None:
        span.set_attribute("streams.attempt", record.failure.attempts + 1)
