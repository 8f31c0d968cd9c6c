"""Trace context through every hop, in the TestDriver (the runtime's own chain) with the
OpenTelemetry SDK's in-memory exporter: producer → attempt → retry attempt → output in one
trace, dead letters keep their context and a replay of them continues it, replay copies
link to their original; and without an SDK the chain has no tracing step."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import factories
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from streams.envelope import Envelope
from streams.failures.headers import EXCEPTION, header_text, strip_failure_headers
from streams.observability.otel import format_traceparent, parse_traceparent
from streams.observability.tracing import tracing
from streams.pipeline.execute import Attempt
from streams.testing import TestDriver
from streams.topology import TopologyBuilder, owned
from streams.topology.topology import Topology


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK tracer provider as the global one for this test (what a user's setup does),
    exporting to memory; the API's default (no SDK) is back after the test."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield exporter
    provider.shutdown()


payment = partial(factories.payment, source="test")


class FailsOnce:
    """Fails the first attempt of every payment, and every one of a negative amount until
    ``fixed``; with a span of its own each time."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.fixed = False

    def __call__(self, env: Envelope) -> Envelope:
        with trace.get_tracer("test").start_as_current_span("settle"):
            pid = env.data["payment_id"]
            if pid not in self.seen:
                self.seen.add(pid)
                raise TimeoutError(f"timed out on {pid}")
            if env.data["amount_cents"] < 0 and not self.fixed:
                raise ValueError("negative amount")
            return env


def topology(step: FailsOnce | None = None) -> Topology:
    builder = TopologyBuilder("pay", retry="1s")
    builder.source("payments", type="payment.captured", version=1).map(
        step or FailsOnce(), name="settle"
    ).to(owned("out"), type="payment.captured", version=1)
    return builder.build()


def produced(d: TestDriver, env: Envelope) -> Any:
    """Pipe ``env`` as a producer would: inside its own span, its context in the headers.
    Returns the producer's span."""
    with trace.get_tracer("test").start_as_current_span("send payments") as span:
        value, headers = d.codec.encode(env)
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier)
        traced = [*headers, *((k, v.encode()) for k, v in carrier.items())]
    d.pipe_raw("payments", value, traced, key=b"o-1")
    return span


def traceparent(headers: Any) -> tuple[int, int]:
    """(trace id, parent span id) of a ``traceparent`` header."""
    text = header_text(headers, "traceparent")
    assert text is not None, headers
    _version, trace_id, span_id, _flags = text.split("-")
    return int(trace_id, 16), int(span_id, 16)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_one_trace_links_the_producer_the_attempt_its_retry_and_the_output(
    spans: InMemorySpanExporter,
) -> None:
    with TestDriver(topology()) as d:
        producer = produced(d, payment("p-1"))
        (retry,) = d.retried
        d.advance_time(1_000)
        (output,) = d.records("pay-out")

    trace_id = producer.get_span_context().trace_id
    (first,) = named(spans, "process payments")
    (second,) = named(spans, "process pay-payments-retry-1")
    assert first.kind is SpanKind.CONSUMER and second.kind is SpanKind.CONSUMER
    # producer → first attempt (failed) → its retry copy → the retry attempt → the output
    assert first.parent is not None and first.parent.span_id == producer.get_span_context().span_id
    assert first.status.status_code is StatusCode.ERROR
    assert traceparent(retry.headers) == (trace_id, first.context.span_id)
    assert second.parent is not None and second.parent.span_id == first.context.span_id
    assert second.status.status_code is StatusCode.UNSET
    assert traceparent(output.headers) == (trace_id, second.context.span_id)
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {trace_id}
    # the step's own spans nest under the attempt that ran it
    settles = named(spans, "settle")
    assert [s.parent.span_id for s in settles if s.parent] == [
        first.context.span_id,
        second.context.span_id,
    ]
    attributes = second.attributes or {}
    assert attributes["messaging.destination.name"] == "pay-payments-retry-1"
    assert attributes["messaging.consumer.group.name"] == "pay"
    assert attributes["streams.attempt"] == 2
    assert attributes["messaging.message.id"] == output.envelope.id


def test_a_dead_letter_keeps_its_headers_and_its_replay_continues_the_trace(
    spans: InMemorySpanExporter,
) -> None:
    step = FailsOnce()
    with TestDriver(topology(step)) as d:
        producer = produced(d, payment("p-2", amount_cents=-1))  # fails for good on its retry
        (retry,) = d.retried
        d.advance_time(1_000)
        (dead,) = d.dead_letters
        # The dead letter is the record as read (the retry copy, its context included),
        # with the error headers.
        assert header_text(dead.headers, EXCEPTION) == "ValueError"
        assert strip_failure_headers(dead.headers) == strip_failure_headers(retry.headers)
        trace_id = producer.get_span_context().trace_id
        assert traceparent(dead.headers)[0] == trace_id

        traced = tracing()
        assert traced is not None
        replayed = traced.replayed(strip_failure_headers(dead.headers), "payments", "dlq/0/0")
        assert [h for h in replayed if h[0] == "traceparent"] != [
            h for h in dead.headers if h[0] == "traceparent"
        ]
        step.fixed = True  # the bug that dead-lettered it is fixed: replay it
        d.pipe_raw("payments", dead.value, replayed, key=dead.key)
        (output,) = d.records("pay-out")

    (replay,) = named(spans, "dlq replay payments")
    assert replay.kind is SpanKind.PRODUCER
    assert replay.parent is not None and replay.parent.span_id == traceparent(dead.headers)[1]
    assert traceparent(replayed) == (trace_id, replay.context.span_id)
    assert traceparent(output.headers)[0] == trace_id
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {trace_id}


def test_an_undecodable_record_is_dead_lettered_with_the_context_it_came_with(
    spans: InMemorySpanExporter,
) -> None:
    carrier = [("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
    with TestDriver(topology()) as d:
        d.pipe_raw("payments", b"\x00garbage", [("x", b"1"), *carrier], key=b"k")
        (dead,) = d.dead_letters
    assert strip_failure_headers(dead.headers) == [("x", b"1"), *carrier]
    (attempt,) = named(spans, "process payments")
    assert attempt.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert attempt.status.status_code is StatusCode.ERROR


def test_a_replay_copy_starts_a_new_trace_linked_to_its_original(
    spans: InMemorySpanExporter,
) -> None:
    original = ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    traced = tracing()
    assert traced is not None
    copy = traced.copied([("ce_id", b"e1"), original], "orders-copy", "orders/0/7")
    assert copy[0] == ("ce_id", b"e1") and original not in copy
    (span,) = named(spans, "replay orders-copy")
    assert span.parent is None and span.kind is SpanKind.PRODUCER
    assert traceparent(copy) == (span.context.trace_id, span.context.span_id)
    (link,) = span.links
    assert (link.context.trace_id, link.context.span_id) == (
        0x0AF7651916CD43DD8448EB211C80319C,
        0xB7AD6B7169203331,
    )
    assert (span.attributes or {})["streams.replay.of"] == "orders/0/7"


def test_records_without_trace_context_start_their_own_trace(
    spans: InMemorySpanExporter,
) -> None:
    builder = TopologyBuilder("plain")
    builder.source("payments", type="payment.captured", version=1).to(
        owned("out"), type="payment.captured", version=1
    )
    with TestDriver(builder.build()) as d:
        d.pipe("payments", [payment("a"), payment("b")])
        outputs = d.records("plain-out")
    attempts = named(spans, "process payments")
    assert len(attempts) == 2 and all(s.parent is None for s in attempts)
    assert len({s.context.trace_id for s in attempts}) == 2
    assert [traceparent(o.headers) for o in outputs] == [
        (s.context.trace_id, s.context.span_id) for s in attempts
    ]


def test_without_an_sdk_the_chain_has_no_tracing_step_and_headers_pass_untouched() -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert tracing() is None
    carrier = [("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
    with TestDriver(topology()) as d:
        assert type(d._runtime._chain.attempt) is Attempt  # decided when the chain was built
        value, headers = d.codec.encode(payment("p-3"))
        d.pipe_raw("payments", value, [*headers, *carrier], key=b"o-1")
        (retry,) = d.retried
        d.advance_time(1_000)
        (output,) = d.records("pay-out")
    assert strip_failure_headers(retry.headers)[-1:] == carrier  # as read, nothing added
    assert header_text(output.headers, "traceparent") is None


# -- records the sampler would not sample: no span object, the context carried as is -------


def sampled_at(
    monkeypatch: pytest.MonkeyPatch, rate: float, ids: IdGenerator | None = None
) -> InMemorySpanExporter:
    """A parent-based ratio sampler (the common production setting) as the global one."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(rate)), id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    return exporter


class EveryThirdSampled(RandomIdGenerator):
    """Trace ids 1, 2, 3... in the high 64 bits; the low 64 bits (what the ratio sampler
    reads) below a 0.5 bound for every third id only."""

    def __init__(self) -> None:
        self.drawn = 0

    def generate_trace_id(self) -> int:
        self.drawn += 1
        return self.drawn << 64 | (0 if self.drawn % 3 == 0 else 1 << 63)


def test_an_unsampled_parent_gives_no_span_and_its_context_goes_on_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = sampled_at(monkeypatch, 1.0)  # a root would be sampled; this parent is not
    parent = [
        ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
        ("tracestate", b"vendor=1"),
    ]
    current: list[Any] = []

    def settle(env: Envelope) -> Envelope:
        current.append(trace.get_current_span().get_span_context())
        with trace.get_tracer("test").start_as_current_span("settle"):
            if len(current) == 1:
                raise TimeoutError("first attempt")
            return env

    builder = TopologyBuilder("pay", retry="1s")
    builder.source("payments", type="payment.captured", version=1).map(settle).to(
        owned("out"), type="payment.captured", version=1
    )
    with TestDriver(builder.build()) as d:
        value, headers = d.codec.encode(payment("p-4"))
        d.pipe_raw("payments", value, [*headers, *parent], key=b"o-1")
        (retry,) = d.retried
        d.advance_time(1_000)
        (output,) = d.records("pay-out")
    assert exporter.get_finished_spans() == ()  # not the attempts, nor the step's spans
    assert [h for h in strip_failure_headers(retry.headers) if h[0] in TRACE] == parent
    assert [h for h in output.headers if h[0] in TRACE] == parent
    # while the steps ran, the record's context was current: their spans stay in its trace
    assert [(c.trace_id, c.span_id, c.trace_flags.sampled) for c in current] == [
        (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, False)
    ] * 2
    assert current[0].trace_state.get("vendor") == "1"


def test_a_new_trace_is_sampled_by_its_id_as_the_sdk_would_and_carried_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rate, ids = 0.5, EveryThirdSampled()
    exporter = sampled_at(monkeypatch, rate, ids)
    builder = TopologyBuilder("plain")
    builder.source("payments", type="payment.captured", version=1).to(
        owned("out"), type="payment.captured", version=1
    )
    with TestDriver(builder.build()) as d:
        d.pipe("payments", [payment(f"p{i}") for i in range(200)])
        outputs = d.records("plain-out")
    spans = {s.context.trace_id: s for s in exporter.get_finished_spans()}
    bound = TraceIdRatioBased(rate).bound
    traces = set()
    for output in outputs:
        text = header_text(output.headers, "traceparent")
        assert text is not None
        _v, trace_id, span_id, flags = text.split("-")
        tid, fl = int(trace_id, 16), int(flags, 16)
        traces.add(tid)
        sampled = tid & ((1 << 64) - 1) < bound  # TraceIdRatioBased's rule
        assert bool(fl & 0x01) is sampled
        assert (tid in spans) is sampled
        assert fl & 0x02  # the SDK's random trace id bit, as on its own unsampled spans
        if sampled:
            assert spans[tid].context.span_id == int(span_id, 16) and spans[tid].parent is None
    # one trace id drawn per record, the sampler's decision on it taken once
    assert ids.drawn == 200 and len(traces) == 200
    assert set(spans) == {i << 64 for i in range(3, 201, 3)}


TRACE = ("traceparent", "tracestate")
_W3C = TraceContextTextMapPropagator()


@settings(max_examples=300, deadline=None)
@given(
    trace_id=st.integers(1, (1 << 128) - 1),
    span_id=st.integers(1, (1 << 64) - 1),
    flags=st.integers(0, 255),
)
def test_the_traceparent_written_by_hand_is_the_propagators(
    trace_id: int, span_id: int, flags: int
) -> None:
    span = NonRecordingSpan(SpanContext(trace_id, span_id, False, TraceFlags(flags)))
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, trace.set_span_in_context(span))
    assert format_traceparent(trace_id, span_id, flags) == carrier["traceparent"].encode()
    assert parse_traceparent(carrier["traceparent"].encode()) == (trace_id, span_id, flags)


_HEX = "0123456789abcdefABCDEF"
_VALUES = st.one_of(
    st.binary(max_size=70),
    st.from_regex(
        rb"\A[ \t]?(00|01|ff|0g)-[0-9a-fA-F]{31,33}-[0-9a-f]{15,17}-[0-9a-f]{2}(-x)?\n?\Z"
    ),
    st.builds(
        lambda t, s, f: f"00-{t}-{s}-{f}".encode(),
        st.text(_HEX, min_size=32, max_size=32) | st.just("0" * 32),
        st.text(_HEX, min_size=16, max_size=16) | st.just("0" * 16),
        st.text(_HEX, min_size=2, max_size=2),
    ),
)


@settings(max_examples=500, deadline=None)
@given(value=_VALUES)
def test_the_traceparent_read_by_hand_agrees_with_the_propagator(value: bytes) -> None:
    ctx = _W3C.extract({"traceparent": value.decode(errors="replace")})
    theirs = trace.get_current_span(ctx).get_span_context()
    ours = parse_traceparent(value)
    if ours is not None:  # what is read by hand is what the propagator reads
        assert (theirs.trace_id, theirs.span_id, int(theirs.trace_flags)) == ours
    elif len(value) == 55 and value.startswith(b"00-"):  # and no canonical one is left out
        assert not theirs.is_valid
