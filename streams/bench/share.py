"""Section ``share``: a work queue on a share group (KIP-932), one worker, then more.

``topology/labels.py`` books shipments with a step that waits ``WORK_MS`` on its carrier
per record (an IO-bound job), run by 1, 2 and 4 ``streams run`` workers of one share group
on a topic of 2 partitions. The workers are started and subscribed before the input is
written, ten records a batch, as jobs arrive; the rate is
records/s from the first booked shipment to the last. A consumer group could keep at most
2 of them busy here, one per partition; a share group gives records to every worker.
Target: 2 workers at least 1.8 times one, and 4 more than 2.
"""

from __future__ import annotations

from datetime import UTC, datetime

from streams.bench.core import BenchContext, Row, drop_app_topics, watch_outputs
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.schemas import default_catalog
from streams.testing import TopologyProcess
from streams.testing.produce import produce_envelopes
from streams.testing.topics import unique_topic_name

SECTION = "share"
LABELS = example_path("labels")
WORK_MS = 5
PARTITIONS = 2
WORKERS = (1, 2, 4)
BATCH = 10  # records per batch of the input


def _requests(n: int) -> list[Envelope]:
    now = datetime.now(UTC)
    return [
        Envelope.new(
            "shipment.requested",
            {"order_id": f"o-{i}-x", "carrier": "dhl", "requested_at": now},  # none flaky
            key=f"o-{i}",
            source="bench",
        )
        for i in range(n)
    ]


def worker_rate(ctx: BenchContext, workers: int, count: int) -> float:
    """Records/s of ``workers`` workers of one share group over ``count`` requests."""
    source = ctx.topic(f"share-in-{workers}", partitions=PARTITIONS)
    app_id = unique_topic_name("bench-labels")
    settings = {"input": source, "work_ms": str(WORK_MS)}
    procs = [
        TopologyProcess(LABELS, ctx.bootstrap, app_id=app_id, settings=settings)
        for _ in range(workers)
    ]
    codec = AvroCodec(default_catalog())
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.wait_started()
        # A share fetch takes whole record batches (its record-limit mode, KIP-1206, is not
        # in librdkafka 2.16): one bulk write's batches would keep one worker busy while
        # the others wait. Ten records a batch, as jobs arrive.
        batches = {"batch.num.messages": BATCH}
        produce_envelopes(ctx.bootstrap, source, _requests(count), codec, config=batches)
        seconds = watch_outputs(ctx.bootstrap, [f"{app_id}-booked"], count, partitions=PARTITIONS)
        return count / seconds
    finally:
        for proc in procs:
            proc.close()
        drop_app_topics(ctx, app_id)


def run(ctx: BenchContext) -> list[Row]:
    count = 600 if ctx.quick else 3_000
    rates = {n: worker_rate(ctx, n, count) for n in WORKERS}
    one = rates[1]
    note = f"{count:,} shipments, {WORK_MS} ms of IO each, {PARTITIONS} partitions"
    rows = [Row(SECTION, "1 worker", one, "rec/s", note=note)]
    for n in WORKERS[1:]:
        target = 1.8 if n == 2 else None
        rows.append(Row(SECTION, f"{n} workers", rates[n], "rec/s", one, target, note))
    return rows
