"""The OpenTelemetry side of trace context (the ``otel`` extra): spans and W3C headers.

Loaded only by ``streams.observability.tracing.tracing()`` once it found the extra and an
SDK tracer provider (see that module for what flows where). ``Tracing`` holds the
``streams`` tracer; ``TracedAttempt`` is the record path's processing attempt with a span
around it, chosen instead of the plain ``Attempt`` when the chain is built, so the chain
without tracing has no tracing step at all.

Headers are W3C trace context only (``traceparent``, ``tracestate``), read and written
with opentelemetry-api's ``TraceContextTextMapPropagator`` (the global propagator is a
composite with baggage, measured 0.5 µs more per write; the issue asks for W3C). A record
whose headers have no ``traceparent`` starts a new trace (its extract is skipped: the
propagator costs about 4 µs a record). Costs with the SDK, per record on a 2-core machine
(``streams.bench.pipeline`` has the end-to-end figures): reading the record's headers
(~4 µs, which the untraced path never does), an always-on span ~12 µs, a span dropped by a
1% ratio sampler ~4 µs, writing the context ~2 µs.
"""

from __future__ import annotations

from contextvars import Token

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace import (
    Link,
    NoOpTracer,
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from streams.failures.headers import Header, Headers

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACE_HEADERS = frozenset((TRACEPARENT, TRACESTATE))

_W3C = TraceContextTextMapPropagator()


class _HeaderGetter(Getter[Headers]):
    """Reads W3C fields from Kafka headers (a list of ``(name, bytes)`` pairs)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        values = [v.decode(errors="replace") for k, v in carrier if k == key and v is not None]
        return values or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _v in carrier]


class _HeaderSetter(Setter[list[tuple[str, bytes]]]):
    def set(self, carrier: list[tuple[str, bytes]], key: str, value: str) -> None:
        carrier.append((key, value.encode()))


_GET = _HeaderGetter()
_SET = _HeaderSetter()


def without_trace(headers: Headers) -> list[Header]:
    """``headers`` without W3C trace context (to write another in its place)."""
    return [h for h in headers if h[0] not in TRACE_HEADERS]


class Tracing:
    """Spans through ``tracer`` and W3C headers in and out (see the module docstring)."""

    __slots__ = ("tracer",)

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    @classmethod
    def configured(cls) -> Tracing | None:
        """The global provider's ``streams`` tracer, or None while no SDK is set (the
        API's proxy or no-op provider, or an SDK switched off: ``OTEL_SDK_DISABLED``)."""
        provider = trace.get_tracer_provider()
        if isinstance(provider, ProxyTracerProvider | NoOpTracerProvider):
            return None
        tracer = trace.get_tracer("streams")
        if isinstance(tracer, NoOpTracer):
            return None
        return cls(tracer)

    # -- headers -----------------------------------------------------------------------------
    @staticmethod
    def extract(headers: Headers) -> Context | None:
        """The context ``headers`` carry (a remote parent), or None when they carry no
        ``traceparent`` (an unreadable one gives an empty context: a new trace)."""
        for name, _value in headers:
            if name == TRACEPARENT:
                return _W3C.extract(headers, getter=_GET)
        return None

    @staticmethod
    def carrier(ctx: Context) -> list[tuple[str, bytes]]:
        """The W3C headers of the span current in ``ctx``."""
        out: list[tuple[str, bytes]] = []
        _W3C.inject(out, ctx, _SET)
        return out

    @staticmethod
    def rewrite(headers: Headers, carrier: list[tuple[str, bytes]]) -> list[Header]:
        """``headers`` with the trace context of ``carrier`` instead of their own."""
        return [*without_trace(headers), *carrier]

    # -- the record path (``streams.pipeline.traced``) --------------------------------------
    def enter(self, name: str, headers: Headers) -> tuple[Span, Context, Token[Context]]:
        """Start a CONSUMER span ``name``, child of the context ``headers`` carry (a new
        trace when they carry none), and make it current. Returns the span, its context
        and the token ``leave`` takes."""
        parent = self.extract(headers) or _NEW_TRACE
        span = self.tracer.start_span(name, parent, SpanKind.CONSUMER)
        ctx = trace.set_span_in_context(span, parent)
        return span, ctx, otel_context.attach(ctx)

    @staticmethod
    def leave(token: Token[Context]) -> None:
        """Make the span ``enter`` made current no longer current (the caller ends it)."""
        otel_context.detach(token)

    @staticmethod
    def failed(span: Span, error: BaseException, step: str | None = None) -> None:
        """Mark ``span`` failed with ``error`` (in ``step``), when it is recorded."""
        if not span.is_recording():
            return
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        if step is not None:
            span.set_attribute("streams.failure.step", step)

    # -- tools -------------------------------------------------------------------------------
    def replayed(self, headers: Headers, topic: str, ref: str) -> list[Header]:
        """A dead letter's headers as ``streams dlq replay`` sends it to ``topic``: a span
        child of the context it carries (the same trace), written in its place."""
        parent = self.extract(headers) or Context()
        span = self.tracer.start_span(
            f"dlq replay {topic}", parent, SpanKind.PRODUCER, _sent(topic, ref)
        )
        try:
            return self.rewrite(headers, self.carrier(trace.set_span_in_context(span, parent)))
        finally:
            span.end()

    def copied(self, headers: Headers, topic: str, ref: str) -> list[Header]:
        """A record's headers as ``streams replay`` copies it into ``topic``: a new trace
        whose span links to the original's context, written in its place."""
        parent = self.extract(headers)
        origin = trace.get_current_span(parent).get_span_context() if parent else None
        links = [Link(origin)] if origin is not None and origin.is_valid else None
        span = self.tracer.start_span(
            f"replay {topic}", Context(), SpanKind.PRODUCER, _sent(topic, ref), links
        )
        try:
            return self.rewrite(headers, self.carrier(trace.set_span_in_context(span)))
        finally:
            span.end()


def _sent(topic: str, ref: str) -> dict[str, str]:
    return {
        "messaging.system": "kafka",
        "messaging.operation.type": "send",
        "messaging.destination.name": topic,
        "streams.replay.of": ref,
    }


_NEW_TRACE = Context()  # the parent of a record without trace headers: none
