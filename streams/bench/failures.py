"""Section ``failures``: what failure routing costs, against bare confluent-kafka.

Figures, in one run on the same broker and input topic:

- a consume→produce relay with the ``FailureHandler`` calls a runtime makes per record
  (``on_record`` and ``on_success``; per-key order on), against the same relay without
  them: the cost on the path of records that do not fail;
- the same with 1 % of the records failing into a retry tier (routing and error headers
  with a traceback; per-key order off, so every run does the same work);
- ``read_dlq`` (what ``streams dlq list|show|replay`` read) against a bare consumer reading
  the same dead-letter topic.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from streams.bench.bare_client import PRODUCER_CONFIG, produce_bare
from streams.bench.core import BenchContext, Row
from streams.cluster import Topics, delete_topics
from streams.coordinates import Coordinates
from streams.dlq import read_dlq
from streams.failures.handler import Decision, FailureHandler
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter
from streams.failures.topics import FailureTopics, ensure_failure_topics

SECTION = "failures"
PAYLOAD = b"x" * 200


def _relay(
    bootstrap: str,
    source: str,
    target: str,
    count: int,
    *,
    handler: FailureHandler | None = None,
    fail_every: int = 0,
) -> float:
    """Relay ``count`` records from ``source`` to ``target``; seconds from the first batch
    to the last ack. With a handler, every ``fail_every``-th record fails (0: none)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-failures-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    consumer.subscribe([source])
    error = TimeoutError("bench failure")

    def send(**args: Any) -> None:
        while True:
            try:
                producer.produce(**args)
                return
            except BufferError:
                producer.poll(0.05)

    seen = 0
    start: float | None = None
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        batch = consumer.consume(10_000, timeout=1.0)
        if batch and start is None:
            start = time.perf_counter()
        for msg in batch:
            if msg.error() is not None:
                continue
            seen += 1
            if handler is None:
                send(topic=target, value=msg.value(), key=msg.key())
                continue
            record = FailedRecord.from_message(msg)
            admission = handler.on_record(record)
            if admission.decision is not Decision.PROCESS:
                continue
            if fail_every and seen % fail_every == 0:
                route, _ = handler.on_failure(record, error)
                send(**route.produce_args())
            else:
                send(topic=target, value=msg.value(), key=msg.key())
                handler.on_success(record)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - (start or time.perf_counter())
    consumer.close()
    if seen < count:
        raise RuntimeError(f"relay read {seen} of {count}")
    return elapsed


def _write_dead_letters(bootstrap: str, topic: str, count: int) -> None:
    """``count`` dead letters with the error headers the router writes (traceback included)."""
    try:
        raise TimeoutError("bench failure")
    except TimeoutError as exc:
        error = exc
    source = FailedRecord(b"k", PAYLOAD, [("ce_id", b"0")], Coordinates("src", 0, 0))
    route = FailureRouter("bench", RetryPolicy.no_retries()).route(source, error)
    headers: Any = route.headers
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=PAYLOAD, key=str(i % 1000).encode(), headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def _bare_read(bootstrap: str, topic: str, count: int) -> float:
    """Seconds for a bare consumer to read ``topic`` to its end as ``read_dlq`` does."""
    start = time.perf_counter()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-dlq-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in partitions}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    seen = 0
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(500, timeout=1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen < count or sum(ends.values()) != count:
        raise RuntimeError(f"bare reader read {seen} of {count}")
    return elapsed


def run(ctx: BenchContext) -> list[Row]:
    n = ctx.records
    source = ctx.topic("failures-in", partitions=4)
    target = ctx.topic("failures-out", partitions=4)
    produce_bare(ctx.bootstrap, source, n, PAYLOAD)
    app = f"bench{uuid.uuid4().hex[:6]}"
    ordered = RetryPolicy.parse("1s, 30s")
    # Unordered for the failing run: with order on, each failure would park the rest of
    # its key's records for the run (no retry is consumed here), changing the work done.
    unordered = RetryPolicy.parse("1s, 30s", ordered=False)
    tiers = FailureTopics.for_input(app, source, ordered)
    ensure_failure_topics(Topics(ctx.admin), tiers)
    try:
        bare = n / _relay(ctx.bootstrap, source, target, n)
        clean = n / _relay(ctx.bootstrap, source, target, n, handler=FailureHandler(app, ordered))
        failing = n / _relay(
            ctx.bootstrap,
            source,
            target,
            n,
            handler=FailureHandler(app, unordered),
            fail_every=100,
        )
    finally:
        delete_topics(ctx.admin, tiers.all)

    dlq = ctx.topic("failures-dlq", partitions=4)
    letters = max(n // 4, 5_000)
    _write_dead_letters(ctx.bootstrap, dlq, letters)
    t_bare = _bare_read(ctx.bootstrap, dlq, letters)
    start = time.perf_counter()
    read = len(read_dlq(ctx.bootstrap, dlq).letters)
    t_read = time.perf_counter() - start
    if read != letters:
        raise RuntimeError(f"read_dlq read {read} of {letters}")
    return [
        Row(SECTION, "relay, bare", bare, "rec/s"),
        Row(SECTION, "relay + handler, none fail", clean, "rec/s", baseline=bare),
        Row(SECTION, "relay + handler, 1% to retry", failing, "rec/s", baseline=bare),
        Row(
            SECTION,
            "read_dlq",
            letters / t_read,
            "rec/s",
            baseline=letters / t_bare,
            note="both timed whole: metadata, watermarks, assign, read to the end",
        ),
    ]
