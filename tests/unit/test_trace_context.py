"""Trace context through every hop, in the TestDriver (the runtime's own chain) with the
OpenTelemetry SDK's in-memory exporter: producer → attempt → retry attempt → output in one
trace, dead letters keep their context and a replay of them continues it, replay copies
link to their original; and without an SDK the chain has no tracing step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from streams.envelope import Envelope
from streams.failures.headers import EXCEPTION, header_text, strip_failure_headers
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


def payment(pid: str, amount: int = 100) -> Envelope:
    data = {
        "payment_id": pid,
        "order_id": "o-1",
        "amount_cents": amount,
        "currency": "EUR",
        "method": "CARD",
    }
    return Envelope.new("payment.captured", data, key="o-1", source="test")


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
        producer = produced(d, payment("p-2", amount=-1))  # fails for good on its retry
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
