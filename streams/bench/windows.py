"""Section ``windows``: what a tumbling-window count costs, against dedup on the same broker.

Two ``streams run`` instances, alternating, each over the same input topic (1M placed
orders, or ``--records`` when more; ``--quick``: ``--records``; 500 keys, event times
1 ms apart so that a 1-minute window closes every 60,000 records, 4 partitions), each to
its own output, at-least-once:

* ``topology/dedup.py`` (RocksDB store, 7-day window): the baseline, a store read and a
  buffered write per record (see section ``dedup``);
* ``streams/bench/window_count.py``: a count per key per 1-minute tumbling window (grace
  10 s) in a RocksDB window store, ``emit="updates"``: a store read and write per record,
  the stream time read and written, the closed windows' entries deleted; every record
  writes one output (the order that changed the count), as dedup writes each unique
  order. Target: 0.7 of dedup's throughput.

Each runs twice (``--quick``: once), alternating, the best run of each counting (a load
spike on a shared machine then hits both sides of the ratio alike). Throughput is
records/s from the first output to the last, seen from outside through the output's end
offsets (as in section ``dedup``).

Then the window store at scale: one window-count instance over 1M orders (``--quick``:
``--records``), every key distinct and every event time in the same window, so that no
window closes and every key stays in the store; its peak RSS once every record is
processed (target < 250 MB: the store is on disk, what the process keeps per key in
memory is what grows).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from streams.bench.core import PARTITIONS, BenchContext, Row, best_of
from streams.bench.throughput import instance_rate
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes

SECTION = "windows"
DEDUP = example_path("dedup")
WINDOW_COUNT = Path(__file__).with_name("window_count.py")
TARGET = 0.7  # the window count at least 0.7 of dedup's throughput
RSS_TARGET_MB = 250
STORE_KEYS = 1_000_000  # keys in the window store of the RSS run (full bench)
RECORDS = 1_000_000  # records of the throughput runs (full bench)
KEYS = 500  # keys of the throughput input
ROUNDS = 2
CHUNK = 100_000  # envelopes built, encoded and written at a time (bounds this process)
BASE = datetime(2024, 1, 1, tzinfo=UTC)  # on a minute: the first window starts there


def _orders(n: int, *, keys: int | None, step_ms: int) -> Iterator[Envelope]:
    """``n`` placed orders, distinct ids; keyed by ``i % keys`` (None: all keys distinct);
    order ``i`` at ``BASE + i * step_ms``."""
    for i in range(n):
        key = f"c-{i if keys is None else i % keys:07d}"
        data = {"order_id": f"o-{i}", "customer_id": key, "items": [], "total_cents": i}
        env = Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=key)
        yield replace(env, time=BASE + timedelta(milliseconds=i * step_ms))


def _write(ctx: BenchContext, hint: str, orders: Iterator[Envelope]) -> str:
    """A new input topic holding ``orders``, written ``CHUNK`` at a time."""
    source = ctx.topic(hint, partitions=PARTITIONS)
    codec = AvroCodec(default_catalog())
    while chunk := [env for _, env in zip(range(CHUNK), orders, strict=False)]:
        produce_envelopes(ctx.bootstrap, source, chunk, codec, timeout=300)
    return source


def run(ctx: BenchContext) -> list[Row]:
    n = ctx.records if ctx.quick else max(ctx.records, RECORDS)
    stored = n if ctx.quick else max(n, STORE_KEYS)
    source = _write(ctx, "windows-in", _orders(n, keys=KEYS, step_ms=1))
    rounds = 1 if ctx.quick else ROUNDS
    with tempfile.TemporaryDirectory(prefix="streams-bench-windows-") as state_dir:
        args = ("--guarantee", "at_least_once", "--state-dir", state_dir)

        def rate_of(path: Path) -> Callable[[], float]:
            return lambda: instance_rate(ctx, path, source, n, *args, inputs=n).rate

        best = best_of(rounds, {path: rate_of(path) for path in (DEDUP, WINDOW_COUNT)})
        ctx.cleanup()  # the throughput input: the broker's disk before the big run
        # Same event time for all: one window, never closed; one output per record.
        big = _write(ctx, "windows-keys", _orders(stored, keys=None, step_ms=0))
        big_run = instance_rate(ctx, WINDOW_COUNT, big, stored, *args, inputs=stored)
    dedup, windows = best[DEDUP], best[WINDOW_COUNT]
    note = f"{n:,} orders, {KEYS} keys, {PARTITIONS} partitions, best of {rounds} alternating runs"
    return [
        Row(SECTION, "dedup (rocksdb), at-least-once", dedup, "rec/s", note=note),
        Row(
            SECTION,
            "window count (rocksdb), at-least-once",
            windows,
            "rec/s",
            baseline=dedup,
            target=TARGET,
            note='tumbling 60 s, grace 10 s, emit="updates": one output per record',
        ),
        Row(
            SECTION,
            f"peak RSS, window store of {stored:,} keys",
            big_run.rss,
            "MB",
            note=(f"target < {RSS_TARGET_MB} MB; rocksdb, one window; {big_run.rate:,.0f} rec/s"),
        ),
    ]
