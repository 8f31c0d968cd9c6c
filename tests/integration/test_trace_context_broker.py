"""Trace context on a real broker, with the OpenTelemetry SDK's in-memory exporter: a
producer's span, the topology's attempt, its retry and the final output in one trace; a
dead letter keeps its context and ``dlq replay`` continues that trace into the output."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import Message
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from test_failure_routing import CODEC, Running, payment

from streams.dlq import execute_dlq_replay, plan_dlq_replay, read_dlq
from streams.envelope import Envelope
from streams.failures.headers import header_text
from streams.testing import TopicFactory, TopicReader, produce_records
from streams.testing.topics import unique_topic_name
from streams.topology import TopologyBuilder, owned


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK tracer provider as the global one for this test, exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield exporter
    provider.shutdown()


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    assert [r.stop() for r in started] == [None] * len(started), "an instance failed"


def traceparent(msg: Message) -> tuple[int, int]:
    text = header_text(cast(Any, msg.headers()), "traceparent")
    assert text is not None, msg.headers()
    _version, trace_id, span_id, _flags = text.split("-")
    return int(trace_id, 16), int(span_id, 16)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_one_trace_from_the_producer_through_a_retry_the_dlq_and_its_replay(
    kafka_bootstrap: str,
    make_topic: TopicFactory,
    running: list[Running],
    spans: InMemorySpanExporter,
) -> None:
    source = make_topic("pay-in", partitions=1)
    app = unique_topic_name("traced")
    seen: set[str] = set()
    fixed = False

    def settle(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        if pid not in seen:  # every first attempt fails: a retry
            seen.add(pid)
            raise TimeoutError(f"timed out on {pid}")
        if env.data["amount_cents"] < 0 and not fixed:
            raise ValueError("negative amount")
        return env

    builder = TopologyBuilder(app, retry="1s")
    builder.source(source, type="payment.captured", version=1).map(settle).to(
        owned("out"), type="payment.captured", version=1
    )
    running.append(Running(builder.build(), kafka_bootstrap))

    producers = {}
    records = []
    for env in (payment("ok", "k1"), payment("bad", "k2", -1)):
        with trace.get_tracer("test").start_as_current_span(f"send {env.id}") as span:
            value, headers = CODEC.encode(env)
            carrier: dict[str, str] = {}
            TraceContextTextMapPropagator().inject(carrier)
        producers[env.data["payment_id"]] = span.get_span_context()
        records.append((env.key, value, [*headers, *((k, v.encode()) for k, v in carrier.items())]))
    produce_records(kafka_bootstrap, source, records)

    dlq = f"{app}-{source}-dlq"
    with TopicReader(kafka_bootstrap, dlq) as reader:
        (dead,) = reader.wait_for(lambda rs: len(rs) >= 1, 60, what="the dead letter")
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        (ok,) = reader.wait_for(lambda rs: len(rs) >= 1, 60, what="the output")

    # producer → attempt (failed) → retry attempt → output, one trace
    ok_trace = producers["ok"].trace_id
    attempts = [s for s in spans.get_finished_spans() if s.context.trace_id == ok_trace]
    (first,) = [s for s in attempts if s.name == f"process {source}"]
    (second,) = [s for s in attempts if s.name == f"process {app}-{source}-retry-1"]
    assert first.parent is not None and first.parent.span_id == producers["ok"].span_id
    assert second.parent is not None and second.parent.span_id == first.context.span_id
    assert traceparent(ok) == (ok_trace, second.context.span_id)

    # the dead letter keeps the context it was read with: the bad record's trace
    bad_trace = producers["bad"].trace_id
    assert traceparent(dead)[0] == bad_trace
    fixed = True
    contents = read_dlq(kafka_bootstrap, dlq, timeout=30)
    result = execute_dlq_replay(kafka_bootstrap, plan_dlq_replay(contents), timeout=30)
    assert result.sent == 1
    with TopicReader(kafka_bootstrap, f"{app}-out") as reader:
        replayed = reader.wait_for(lambda rs: len(rs) >= 2, 60, what="the replayed output")[1]
    (replay,) = named(spans, f"dlq replay {source}")
    assert replay.parent is not None and replay.parent.span_id == traceparent(dead)[1]
    assert replay.context.trace_id == bad_trace
    (again,) = [
        s
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == replay.context.span_id
    ]
    assert again.name == f"process {source}"
    assert traceparent(replayed) == (bad_trace, again.context.span_id)
