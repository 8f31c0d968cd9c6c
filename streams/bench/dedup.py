"""Section ``dedup``: what ``dedup()`` and exactly-once cost, end to end through the broker.

Four ``streams run`` instances, one after the other, each copying the same input topic
(``--records`` order events, all distinct ids, 4 partitions) to its own output:

* ``topology/mirror.py`` at-least-once: the baseline;
* ``topology/dedup.py`` at-least-once (RocksDB store, 7-day window): a store read and a
  buffered write per record, the changelog flushed at each commit, which becomes a
  synchronous checkpoint;
* both again with ``--guarantee exactly_once`` (transactions committed every
  ``commit_interval_s``, the default 1 s).

Each configuration runs twice (``--quick``: once), alternating with the others; the best
run of each counts (a load spike on a shared machine then hits every row alike).
Throughput is envelopes/s from the first output to the last, seen from outside through the
output's end offsets (as in section ``pipeline``; with exactly-once those include one
commit marker per partition and transaction, a few dozen records in all).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from streams.bench.core import (
    BenchContext,
    Row,
    best_of,
    drop_app_topics,
    stop_process,
    watch_outputs,
)
from streams.cluster import Topics
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing.produce import produce_envelopes
from streams.testing.topics import unique_topic_name
from streams.topology import load_topology

SECTION = "dedup"
MIRROR, DEDUP = example_path("mirror"), example_path("dedup")
EOS_TARGET = 0.85  # exactly-once at most 15% slower than at-least-once
PARTITIONS = 4
ROUNDS = 2


def _orders(n: int) -> list[Envelope]:
    out = []
    for i in range(n):
        key = f"c-{i % 500:04d}"
        data = {"order_id": f"o-{i}", "customer_id": key, "items": [], "total_cents": i}
        out.append(Envelope.new("order.placed", {**data, "currency": "EUR"}, version=2, key=key))
    return out


def _rate(ctx: BenchContext, path: Path, source: str, guarantee: str, state_dir: str) -> float:
    """Envelopes/s of one instance of ``path`` over the whole input."""
    app_id = unique_topic_name(f"bench-{path.stem}")
    topology = load_topology(path, app_id=app_id, params={"input": source})
    prepare_topics(Topics(ctx.admin), topology)
    outputs = topology.topics_written
    cmd = [sys.executable, "-m", "streams", "run", str(path), "--app-id", app_id]
    cmd += ["--set", f"input={source}", "--bootstrap", ctx.bootstrap, "--no-status"]
    cmd += ["--guarantee", guarantee, "--state-dir", state_dir]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seconds = watch_outputs(ctx.bootstrap, outputs, ctx.records, partitions=PARTITIONS)
    finally:
        stop_process(proc)
        drop_app_topics(ctx, app_id)
    return ctx.records / seconds


def run(ctx: BenchContext) -> list[Row]:
    n = ctx.records
    source = ctx.topic("dedup-in", partitions=PARTITIONS)
    produce_envelopes(ctx.bootstrap, source, _orders(n), AvroCodec(default_catalog()), timeout=120)
    runs = [
        (MIRROR, "at_least_once"),
        (MIRROR, "exactly_once"),
        (DEDUP, "at_least_once"),
        (DEDUP, "exactly_once"),
    ]
    rounds = 1 if ctx.quick else ROUNDS
    with tempfile.TemporaryDirectory(prefix="streams-bench-dedup-") as state_dir:

        def rate_of(path: Path, guarantee: str) -> Callable[[], float]:
            return lambda: _rate(ctx, path, source, guarantee, state_dir)

        best = best_of(rounds, {run: rate_of(*run) for run in runs})
    mirror, mirror_eos, dedup, dedup_eos = (best[r] for r in runs)
    note = f"{n:,} envelopes, {PARTITIONS} partitions, best of {rounds} alternating runs"
    return [
        Row(SECTION, "mirror, at-least-once", mirror, "env/s", note=note),
        Row(
            SECTION,
            "dedup (rocksdb), at-least-once",
            dedup,
            "env/s",
            baseline=mirror,
            note=f"dedup overhead {1 - dedup / mirror:.0%} (checkpoint at each commit)",
        ),
        Row(
            SECTION,
            "mirror, exactly-once",
            mirror_eos,
            "env/s",
            baseline=mirror,
            target=EOS_TARGET,
            note="vs mirror at-least-once; commit interval 1 s",
        ),
        Row(
            SECTION,
            "dedup (rocksdb), exactly-once",
            dedup_eos,
            "env/s",
            baseline=dedup,
            target=EOS_TARGET,
            note="vs dedup at-least-once; changelog in the transaction",
        ),
    ]
