"""Section ``concurrency``: records in flight at once awaiting an async step.

* IO-bound: ``topology/lookup.py`` (a 20 ms service call per order, between 10 and 30 ms,
  8 partitions, 200 customers) at concurrency 1, then 64 (one order at a time per
  customer). Target: 64 at least 40 times the throughput of 1 (1 is capped near 50
  orders/s: a call at a time).
* CPU-bound: the same with no latency (the coroutine returns at its first await, so
  the records in flight cost without saving anything). Target: 64 no slower than 1 by
  more than 5% (at least 0.95 of it).
* Memory: ``streams/bench/slow_key.py`` over 1M orders (``--quick``: ``--records``) of
  one customer whose first call never returns: the rest queue behind it. The instance's
  peak RSS once it held what it holds (the partition paused at
  ``buffered_per_partition`` records, the consumer's prefetch bounded), against its peak
  RSS over as many orders of many customers, each processed at once.

Throughput is orders/s from the first output to the last, seen through the outputs' end
offsets (as in section ``throughput``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from streams.bench.core import (
    BenchContext,
    Row,
    drop_app_topics,
    peak_rss_of,
    start_instance,
    stop_process,
    watch_outputs,
)
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.topics import unique_topic_name

SECTION = "concurrency"
LOOKUP = example_path("lookup")
SLOW_KEY = Path(__file__).with_name("slow_key.py")
PARTITIONS = 8
CUSTOMERS = 200
IO_TARGET = 40.0
CPU_TARGET = 0.95
QUEUED = 1_000_000  # orders behind the slow key (full bench)
SETTLE_S = 20  # how long the slow-key instance runs before its peak RSS is read
CHUNK = 100_000


def _orders(n: int, *, customers: int | None, start: int = 0) -> Iterator[Envelope]:
    """``n`` placed orders, ``customers`` keys (None: all of the slow key)."""
    for i in range(start, start + n):
        customer = f"c-{i % customers:04d}" if customers else "slow"
        data = {"order_id": f"o-{i}", "customer_id": customer, "items": [], "total_cents": i}
        yield Envelope.new(
            "order.placed", {**data, "currency": "EUR"}, version=2, key=customer, source="bench"
        )


def _write(ctx: BenchContext, topic: str, n: int, customers: int | None) -> None:
    codec = AvroCodec(default_catalog())
    for start in range(0, n, CHUNK):
        batch = list(_orders(min(CHUNK, n - start), customers=customers, start=start))
        produce_envelopes(ctx.bootstrap, topic, batch, codec)


def _start(
    ctx: BenchContext, path: Path, source: str, params: dict[str, str]
) -> tuple[subprocess.Popen[bytes], str, list[str]]:
    """``streams run path`` on ``source`` with ``params``; its process, app id, outputs."""
    app_id = unique_topic_name(f"bench-{path.stem}")
    settings = [arg for key, value in params.items() for arg in ("--set", f"{key}={value}")]
    proc, outputs = start_instance(ctx, path, app_id, source, *settings)
    return proc, app_id, outputs


def _rate(ctx: BenchContext, source: str, count: int, **params: str) -> float:
    """Orders/s of one ``topology/lookup.py`` instance over the first ``count`` orders."""
    proc, app_id, outputs = _start(ctx, LOOKUP, source, params)
    try:
        seconds = watch_outputs(ctx.bootstrap, outputs, count, partitions=PARTITIONS)
        return count / seconds
    finally:
        stop_process(proc)
        drop_app_topics(ctx, app_id)


def _held_rss(ctx: BenchContext, source: str, n: int, slow_s: str) -> float:
    """Peak RSS (MB) of a slow-key instance over ``source`` (``n`` orders) after
    ``SETTLE_S`` seconds, or once all its ``n`` outputs are written (``slow_s`` 0)."""
    proc, app_id, outputs = _start(ctx, SLOW_KEY, source, {"slow_s": slow_s})
    try:
        if slow_s == "0":
            watch_outputs(ctx.bootstrap, outputs, n, partitions=PARTITIONS)
        else:
            time.sleep(SETTLE_S)  # the instance reads and holds what it may meanwhile
        return peak_rss_of(proc.pid)
    finally:
        stop_process(proc)
        drop_app_topics(ctx, app_id)


def run(ctx: BenchContext) -> list[Row]:
    quick = ctx.quick
    one_count, many_count = (100, 3_000) if quick else (400, 20_000)
    source = ctx.topic("concurrency-in", partitions=PARTITIONS)
    _write(ctx, source, many_count, CUSTOMERS)
    note = f"{PARTITIONS} partitions, {CUSTOMERS} customers, 20 ms a call"
    one = _rate(ctx, source, one_count, concurrency="1")
    many = _rate(ctx, source, many_count, concurrency="64")
    cpu_one = _rate(ctx, source, many_count, concurrency="1", latency_ms="0")
    cpu_many = _rate(ctx, source, many_count, concurrency="64", latency_ms="0")
    rows = [
        Row(SECTION, "IO-bound, concurrency 1", one, "rec/s", note=note),
        Row(SECTION, "IO-bound, concurrency 64", many, "rec/s", one, IO_TARGET, note),
        Row(SECTION, "CPU-bound, concurrency 1", cpu_one, "rec/s", note="no latency"),
        Row(SECTION, "CPU-bound, concurrency 64", cpu_many, "rec/s", cpu_one, CPU_TARGET),
    ]
    queued = ctx.records if quick else max(QUEUED, ctx.records)
    slow = ctx.topic("concurrency-slow", partitions=PARTITIONS)
    _write(ctx, slow, queued, None)
    flowing = ctx.topic("concurrency-flowing", partitions=PARTITIONS)
    _write(ctx, flowing, queued, CUSTOMERS)
    held = _held_rss(ctx, slow, queued, "3600")
    processed = _held_rss(ctx, flowing, queued, "0")
    rows.append(
        Row(
            SECTION,
            "peak RSS, orders behind one slow key",
            held,
            "MB",
            note=f"{queued:,} queued; beside it the RSS over as many flowing",
        )
    )
    rows.append(Row(SECTION, "peak RSS, as many orders flowing", processed, "MB"))
    return rows
