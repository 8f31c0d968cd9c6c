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
propagator costs about 4 µs a record).

Most records are not sampled in production (a parent-based ratio sampler), and the SDK
would still make a span object, a context and a propagator round trip for each (~10 µs a
record). ``Tracing.unsampled`` decides before any of that, when the provider is the
OpenTelemetry SDK's with a sampler whose decision it can read (``_Shortcuts``):

- a ``traceparent`` (the canonical 55 characters ``00-<trace>-<span>-<flags>``, parsed
  by hand: ``parse_traceparent``; anything else goes through the propagator) whose
  sampled flag is off, under a ``ParentBased`` sampler that drops unsampled remote
  parents (its default): no span; the record's own trace headers go to its outputs and
  retry copies unchanged (a participant that records nothing passes the context on);
- no ``traceparent``, under a trace id ratio root (``TraceIdRatioBased``, alone or as
  ``ParentBased``'s root; ``ALWAYS_OFF``, ``ALWAYS_ON``): the trace id is drawn from the
  provider's id generator and compared with the ratio's bound, as the sampler would; a
  sampled record hands that id to the span (``_StagedIds``), an unsampled one writes
  ``00-<trace>-<span>-<flags>`` as prebuilt bytes (flags as the SDK would set them).

An unsampled record's context is still current while its steps run (a ``NonRecordingSpan``,
about 1.5 µs), so a step's own spans and outgoing calls stay in its trace, unsampled, instead
of starting traces of their own.
"""

from __future__ import annotations

import re
from contextvars import Token
from typing import Any, NamedTuple, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    NoOpTracer,
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TraceState,
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


_CANONICAL = re.compile(rb"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def parse_traceparent(value: bytes | None) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a canonical ``traceparent``: version 00, 55 characters,
    lowercase hex, neither id zero. None for anything else, valid or not: the propagator
    reads those (they are rare, and W3C's rules for them are many)."""
    match = _CANONICAL.fullmatch(value) if value is not None else None
    if match is None:
        return None
    trace_id, span_id = int(match[1], 16), int(match[2], 16)
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, int(match[3], 16)


def format_traceparent(trace_id: int, span_id: int, flags: int) -> bytes:
    """The ``traceparent`` value of a span context, as the propagator writes it."""
    return b"00-%032x-%016x-%02x" % (trace_id, span_id, flags)


class _StagedIds:
    """The SDK tracer's id generator, whose next trace id can be drawn beforehand (the
    sampling decision ``Tracing.unsampled`` made on it is then the span's)."""

    __slots__ = ("inner", "staged")

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.staged = 0

    def generate_trace_id(self) -> int:
        staged = self.staged
        if staged:
            self.staged = 0
            return staged
        return cast(int, self.inner.generate_trace_id())

    def generate_span_id(self) -> int:
        return cast(int, self.inner.generate_span_id())

    def is_trace_id_random(self) -> bool:
        return cast(bool, self.inner.is_trace_id_random())


class _Shortcuts(NamedTuple):
    """What an SDK tracer's sampler decides without a span (see the module docstring)."""

    ids: _StagedIds | None  # None: a record without traceparent takes the span path
    root_bound: int  # a new trace is sampled when its id's low 64 bits are below
    root_flags: int  # of an unsampled new trace's traceparent (the SDK's random-id bit)
    drop_unsampled: bool  # an unsampled remote parent gives an unsampled span


_ID_LIMIT = (1 << 64) - 1  # TraceIdRatioBased decides on the low 64 bits of the trace id


def _shortcuts(tracer: Tracer) -> _Shortcuts | None:
    """The decisions ``tracer`` would make that can be taken without a span, or None when
    it is not the SDK's or its sampler is one whose decision is not read here."""
    try:
        # The SDK is the application's choice, not the otel extra's: looked up, not needed.
        from opentelemetry.sdk.trace import Tracer as SdkTracer  # noqa: PLC0415
        from opentelemetry.sdk.trace import sampling  # noqa: PLC0415
    except ImportError:
        return None
    if not isinstance(tracer, SdkTracer):
        return None
    sampler, drop_unsampled = tracer.sampler, False
    root: Any = sampler
    # Exact types: a subclass may decide otherwise.
    if type(sampler) in (sampling.ParentBased, sampling.ParentBasedTraceIdRatio):
        parent_based = cast(Any, sampler)  # its samplers per case are private attributes
        root = getattr(parent_based, "_root", None)
        drop_unsampled = getattr(parent_based, "_remote_parent_not_sampled", None) is (
            sampling.ALWAYS_OFF
        )
    if type(root) is sampling.TraceIdRatioBased:
        bound: int | None = root.bound
    elif root is sampling.ALWAYS_OFF:
        bound = 0
    elif root is sampling.ALWAYS_ON:
        bound = _ID_LIMIT + 1
    else:
        bound = None
    if bound is None and not drop_unsampled:
        return None
    ids = None
    if bound is not None:
        ids = _StagedIds(tracer.id_generator)
        tracer.id_generator = cast(Any, ids)
    flags = TraceFlags.RANDOM_TRACE_ID if ids is not None and ids.is_trace_id_random() else 0
    return _Shortcuts(ids, bound or 0, flags, drop_unsampled)


class Tracing:
    """Spans through ``tracer`` and W3C headers in and out (see the module docstring)."""

    __slots__ = ("_shortcuts", "tracer")

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._shortcuts = _shortcuts(tracer)

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
    def unsampled(self, headers: Headers) -> tuple[list[tuple[str, bytes]], Token[Context]] | None:
        """When the record ``headers`` belong to is not sampled and needs no span (see the
        module docstring): the trace headers for what it causes, and the token of its
        context made current, which ``leave`` takes. None: it needs ``enter``."""
        shortcuts = self._shortcuts
        if shortcuts is None:
            return None
        value = None
        for name, v in headers:
            if name == TRACEPARENT and v is not None:
                value = v
                break
        if value is None:
            ids = shortcuts.ids
            if ids is None:
                return None
            trace_id = ids.inner.generate_trace_id()
            if trace_id & _ID_LIMIT < shortcuts.root_bound:
                ids.staged = trace_id  # sampled: the span ``enter`` starts takes this id
                return None
            span_id, flags = ids.inner.generate_span_id(), shortcuts.root_flags
            carrier = [(TRACEPARENT, format_traceparent(trace_id, span_id, flags))]
            state = None
            remote = False
        else:
            parsed = parse_traceparent(value)
            if parsed is None or not shortcuts.drop_unsampled or parsed[2] & TraceFlags.SAMPLED:
                return None
            trace_id, span_id, flags = parsed
            carrier = [(k, v) for k, v in headers if k in TRACE_HEADERS and v is not None]
            state = _trace_state(headers)
            remote = True
        span = NonRecordingSpan(SpanContext(trace_id, span_id, remote, TraceFlags(flags), state))
        return carrier, otel_context.attach(trace.set_span_in_context(span, _NEW_TRACE))

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


def _trace_state(headers: Headers) -> TraceState | None:
    """The ``tracestate`` of ``headers``, None without one (read as the propagator does)."""
    values = _GET.get(headers, TRACESTATE)
    return TraceState.from_header(values) if values else None


def _sent(topic: str, ref: str) -> dict[str, str]:
    return {
        "messaging.system": "kafka",
        "messaging.operation.type": "send",
        "messaging.destination.name": topic,
        "streams.replay.of": ref,
    }


_NEW_TRACE = Context()  # the parent of a record without trace headers: none
