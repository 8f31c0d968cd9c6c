"""The failure-routing step of ``make demo``: records through retry tiers into a DLQ.

Until the runtime routes failures itself, the step does what the runtime will: it reads
records from an input topic, decodes and "processes" them, and routes each failure with
``FailureRouter`` to its retry tier or DLQ; then it summarises the DLQ and plans a replay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from confluent_kafka import Consumer, Producer

from streams.admin import admin_client, create_topic
from streams.codec import AvroCodec, DecodeError
from streams.envelope import Envelope
from streams.failures.dlq import plan_replay, read_dlq, summarize
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter, Route
from streams.failures.topics import FailureTopics, ensure_failure_topics
from streams.schemas import default_catalog

if TYPE_CHECKING:
    from streams.demo import DemoContext


def _write(producer: Producer, route: Route) -> None:
    producer.produce(**route.produce_args())


def step_failures(ctx: DemoContext) -> None:
    """A garbage record and a record whose processor always times out end in the DLQ."""
    codec = AvroCodec(default_catalog())
    source = ctx.topic("payments")
    admin = admin_client(ctx.bootstrap)
    create_topic(admin, source, partitions=2)
    app_id = "shop"
    policy = RetryPolicy.parse("1s, 30s")
    topics = FailureTopics.for_input(app_id, source, policy)
    ctx.topics.extend(topics.all)
    ensure_failure_topics(admin, topics)

    producer = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all"})
    ok = Envelope.new(
        "payment.captured",
        {
            "payment_id": "p-1",
            "order_id": "o-1",
            "amount_cents": 999,
            "currency": "EUR",
            "method": "CARD",
        },
        key="o-1",
    )
    value, headers = codec.encode(ok)
    producer.produce(source, key=b"o-1", value=value, headers=list(headers), partition=0)
    producer.produce(source, key=b"o-2", value=b"\x07not an envelope", partition=0)
    producer.flush(30)

    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"demo-{ctx.run_id}-{app_id}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([source])
    router = FailureRouter(app_id, policy)
    tiers: list[str] = []
    seen = 0
    for _ in range(60):  # ~30 s at most
        for message in consumer.consume(10, timeout=0.5):
            if message.error() is not None:
                continue
            seen += 1
            record = FailedRecord.from_message(message)
            try:
                codec.decode(message.value(), record.headers)
            except DecodeError as exc:
                _write(producer, router.route(record, exc, stage=Stage.DECODE))
                continue
            route = router.route(record, TimeoutError("card network timed out"), step="capture")
            while not route.dead_letter:  # the retry tiers, each attempt timing out again
                tiers.append(f"retry-{route.tier}")
                _write(producer, route)
                record = FailedRecord(route.key, route.value, route.headers, record.position)
                route = router.route(record, TimeoutError("card network timed out"))
            _write(producer, route)
        if seen >= 2:
            break
    consumer.close()
    producer.flush(30)

    contents = read_dlq(ctx.bootstrap, topics.dlq)
    summary = summarize(contents)
    errors = ", ".join(f"{name.rsplit('.', 1)[-1]} {n}" for name, n in summary.by_error.items())
    plan = plan_replay(contents)
    ctx.say(
        "failures",
        f"garbage bytes went straight to the DLQ; a record timing out every time went "
        f"through {' and '.join(tiers)} to it: {topics.dlq} holds {summary.total} ({errors})",
    )
    ctx.console.print(
        f"   `streams dlq replay {topics.dlq}` would send {len(plan.items)} back to "
        f"{source} (dry run; --execute sends)",
        highlight=False,
    )
