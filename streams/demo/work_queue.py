"""The work-queue step of the demo: shipping labels booked by two workers of one share group
(``topology/labels.py``, KIP-932).

Shipment requests on a topic of one partition (a consumer group could keep one worker
busy); two share-group workers book them, a flaky one on its third delivery, and the ones
no carrier serves end in the DLQ after three deliveries. Raises RuntimeError unless every
other request is booked once and both workers booked some.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from datetime import UTC, datetime
from typing import Any, cast

from streams.codec import AvroCodec
from streams.demo.context import DemoContext
from streams.demo.running import on_thread
from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.failures.topics import dlq_topic
from streams.runtime import RuntimeConfig
from streams.runtime.share import ShareRuntime
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.wait import TopicReader, wait_until
from streams.topology.loader import import_file

WORKERS = 2


def step_work_queue(ctx: DemoContext, count: int = 300) -> None:
    """Requests on one partition -> two share-group workers book them; refusals DLQ'd."""
    # 25 ms with the carrier per shipment: seconds of work, for two workers to share
    topology, source = ctx.example(
        "labels", "labels", source="labels-in", partitions=1, work_ms="25"
    )
    now = datetime.now(UTC)
    requests = [
        Envelope.new(
            "shipment.requested",
            {
                "order_id": f"o-{n}",
                "carrier": "nowhere" if n % 100 == 7 else "dhl",
                "requested_at": now,
            },
            key=f"o-{n}",
            source="demo",
        )
        for n in range(count)
    ]
    codec = AvroCodec(default_catalog())
    refused = {e.id for e in requests if e.data["carrier"] == "nowhere"}
    flaky = sum(
        1 for e in requests if import_file(example_path("labels")).flaky(e.data["order_id"])
    )
    (booked_topic,) = topology.topics_written
    dlq = dlq_topic(topology.app_id, source)
    with tempfile.TemporaryDirectory(prefix="streams-demo-labels-") as state_dir:
        # A worker takes ten records at a time (a share fetch takes whole record batches,
        # up to this many), so the one that joins second finds work left.
        config = RuntimeConfig(
            bootstrap=ctx.bootstrap, state_dir=state_dir, consumer={"max.poll.records": "10"}
        )
        with (
            on_thread(lambda: ShareRuntime(topology, config), logging.ERROR) as first,
            on_thread(lambda: ShareRuntime(topology, config), logging.ERROR) as second,
            TopicReader(ctx.bootstrap, booked_topic) as booked,
            TopicReader(ctx.bootstrap, dlq) as dead,
        ):
            # Written once the workers run, ten records a batch, as jobs arrive.
            batches = {"batch.num.messages": 10}
            produce_envelopes(ctx.bootstrap, source, requests, codec, config=batches)

            def done() -> bool:
                booked.poll(0.2)
                dead.poll(0.2)
                return len(booked.records) + len(dead.records) >= count

            wait_until(done, 120, what="every request booked or dead-lettered")
            by_worker = [first.stats.consumed, second.stats.consumed]
            causes = Counter(
                codec.decode(m.value(), m.headers()).causation_id for m in booked.records
            )
            infos = [parse_failure_headers(cast(Any, m.headers())) for m in dead.records]
            deliveries = {info.attempts for info in infos if info is not None}
    if set(causes) != {e.id for e in requests} - refused or set(causes.values()) != {1}:
        raise RuntimeError("work-queue demo: not every request was booked exactly once")
    if len(dead.records) != len(refused) or deliveries != {topology.deliveries}:
        raise RuntimeError(f"work-queue demo: {len(dead.records)} dead letters, {deliveries}")
    if not all(by_worker):
        raise RuntimeError(f"work-queue demo: one worker took nothing ({by_worker})")
    ctx.say(
        "work queue",
        f"`streams run topology/labels.py` x{WORKERS} on a share group, one partition: "
        f"{count - len(refused)} shipments booked once each (the workers took "
        f"{by_worker[0]} and {by_worker[1]} deliveries; {flaky} flaky ones on their third); "
        f"{len(refused)} no carrier serves dead-lettered after {topology.deliveries} deliveries",
    )
