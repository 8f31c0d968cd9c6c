"""Bench section ``state``: restore time and the memory a process needs to hold a store.

A changelog of N dedup-shaped entries (26-byte ids, empty values, a 7-day TTL, source
tags: what ``dedup()`` writes) is produced once. Then, each in a fresh subprocess so peak
RSS belongs to one backend only:

* ``bare``: a plain confluent-kafka consumer reads the changelog to its end (the ceiling
  for a restore, and the RSS floor of a Python process with librdkafka);
* ``memory`` / ``rocksdb``: a full restore of the store;
* ``rocksdb`` again after N/100 more records: the restart restores only the tail from its
  local checkpoint (the figure shows how many records it read).

Then, in this process, the dedup cost: ``--records`` records (each id twice) through
``Dedup.first`` on each backend, with the changelog flushed, acked and applied every
10,000 records as the runtime does at a commit.

N is 1,000,000 (``--quick``: 50,000). Run as ``python -m streams.bench.state --worker ...``
the module is that subprocess.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from confluent_kafka import KafkaError, Producer, TopicPartition

from streams.bench.core import BenchContext, Row, drop_app_topics
from streams.cluster import Topics
from streams.state import (
    Backend,
    ChangelogStore,
    Dedup,
    MemoryBackend,
    RocksDBBackend,
    StateManager,
    ensure_changelog_topic,
)
from streams.state.changelog import ChangelogRecord, changelog_topic
from streams.state.restore import restore_consumer

FULL_ENTRIES = 1_000_000
QUICK_ENTRIES = 50_000
STORE = "dedup"
WEEK_MS = 7 * 24 * 3600 * 1000
RSS_TARGET_MB = 200.0


def _produce_entries(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000, "acks": "all"}
    )
    expires = int(time.time() * 1000) + WEEK_MS
    for i in range(first, first + count):
        key = f"{i:026d}".encode()
        value, headers = ChangelogRecord(key, b"", expires, source_offset=i + 1).encode()
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=0, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("changelog records were not all delivered")


def _worker(mode: str, bootstrap: str, app: str, state_dir: str, committed: int) -> dict[str, Any]:
    """One measurement in this (fresh) process; returns the figures as a dict."""
    started = time.perf_counter()
    if mode == "bare":
        records = _consume_bare(bootstrap, changelog_topic(app, STORE))
        read, entries = records, 0
    else:
        backend = MemoryBackend() if mode == "memory" else RocksDBBackend()
        store = ChangelogStore(
            app,
            STORE,
            backend,
            consumer_config={"bootstrap.servers": bootstrap},
            state_dir=state_dir,
        )
        part = store.open(0, committed_offset=committed)
        assert part.restore is not None
        read = part.restore.records_read
        entries = part.storage.count() if mode == "memory" else part.restore.applied
        store.close_all(keep=True)
    seconds = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "read": read, "entries": entries, "rss_mb": rss_mb}


def _consume_bare(bootstrap: str, topic: str) -> int:
    # The same client settings a restore uses, so the difference is the store's work.
    consumer = restore_consumer({"bootstrap.servers": bootstrap})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = 0
    done = False
    while not done:
        for msg in consumer.consume(10_000, timeout=0.5):
            err = msg.error()
            if err is None:
                read += 1
            elif err.code() == KafkaError._PARTITION_EOF:
                done = True
    consumer.close()
    return read


def _dedup_rate(ctx: BenchContext, app: str, backend: Backend, state_dir: str) -> float:
    """Records/s through ``Dedup.first`` for ``ctx.records`` records (every id twice), with
    the changelog flushed, acked and applied every 10,000 records, as the runtime would."""
    manager = StateManager(
        app, consumer_config={"bootstrap.servers": ctx.bootstrap}, state_dir=state_dir
    )
    manager.add_store(STORE, backend, source_topic="orders")
    manager.ensure_changelogs(Topics(ctx.admin), {"orders": 1})
    manager.assign("orders", 0, committed_offset=None)
    producer = Producer(
        {"bootstrap.servers": ctx.bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    dedup = Dedup(manager.routed(STORE, lambda: 0).transaction, ttl=WEEK_MS / 1000)
    n = ctx.records
    ids = [f"{i // 2:026d}" for i in range(n)]
    now = time.time()
    started = time.perf_counter()
    for start in range(0, n, 10_000):
        first = dedup.first
        for event_id in ids[start : start + 10_000]:
            first(event_id, now)
        manager.flush(producer, {("orders", 0): start + 10_000})
        producer.flush(60)
        manager.check_delivered()
        manager.apply()
    seconds = time.perf_counter() - started
    manager.close(keep=False)
    if dedup.duplicates != n // 2:
        raise RuntimeError(f"dedup bench: {dedup.duplicates} duplicates of {n // 2}")
    return n / seconds


def _measure(mode: str, bootstrap: str, app: str, state_dir: str, committed: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.bench.state",
            "--worker",
            mode,
            "--bootstrap",
            bootstrap,
            "--app",
            app,
            "--state-dir",
            state_dir,
            "--committed",
            str(committed),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(ctx: BenchContext) -> list[Row]:
    n = QUICK_ENTRIES if ctx.quick else FULL_ENTRIES
    tail = n // 100
    app = f"bench-{uuid.uuid4().hex[:8]}"
    topic = changelog_topic(app, STORE)
    ensure_changelog_topic(Topics(ctx.admin), topic, partitions=1)
    try:
        _produce_entries(ctx.bootstrap, topic, 0, n)
        with tempfile.TemporaryDirectory(prefix="streams-bench-state-") as state_dir:
            bare = _measure("bare", ctx.bootstrap, app, state_dir, n)
            memory = _measure("memory", ctx.bootstrap, app, state_dir, n)
            disk = _measure("rocksdb", ctx.bootstrap, app, state_dir, n)
            _produce_entries(ctx.bootstrap, topic, n, tail)
            again = _measure("rocksdb", ctx.bootstrap, app, state_dir, n + tail)
        with tempfile.TemporaryDirectory(prefix="streams-bench-dedup-") as state_dir:
            dedup_memory = _dedup_rate(ctx, f"{app}-m", MemoryBackend(), state_dir)
            dedup_disk = _dedup_rate(ctx, f"{app}-r", RocksDBBackend(), state_dir)
    finally:
        drop_app_topics(ctx, app)
    label = f"{n:,} entries"
    base_rate = bare["read"] / bare["seconds"]
    return [
        Row(
            "state",
            f"changelog read, bare consumer ({label})",
            base_rate,
            "rec/s",
            note=f"{bare['seconds']:.1f} s, RSS {bare['rss_mb']:.0f} MB",
        ),
        Row(
            "state",
            "full restore, memory backend",
            memory["read"] / memory["seconds"],
            "rec/s",
            baseline=base_rate,
            note=f"{memory['seconds']:.1f} s",
        ),
        Row(
            "state",
            "full restore, rocksdb backend",
            disk["read"] / disk["seconds"],
            "rec/s",
            baseline=base_rate,
            note=f"{disk['seconds']:.1f} s",
        ),
        Row(
            "state",
            f"restart from checkpoint, rocksdb (+{tail:,} new)",
            again["seconds"],
            "s",
            note=f"read {again['read']:,} records, not {n + tail:,}",
        ),
        Row(
            "state",
            f"peak RSS holding {label}, memory",
            memory["rss_mb"],
            "MB",
            baseline=bare["rss_mb"],
            note="baseline: bare consumer process",
        ),
        Row(
            "state",
            f"peak RSS holding {label}, rocksdb",
            disk["rss_mb"],
            "MB",
            baseline=bare["rss_mb"],
            note=f"target < {RSS_TARGET_MB:.0f} MB",
        ),
        *(
            Row(
                "state",
                f"dedup, {name} ({ctx.records:,} records, half duplicates)",
                rate,
                "rec/s",
                note=f"{1e6 / rate:.1f} us/record incl. changelog",
            )
            for name, rate in (("memory", dedup_memory), ("rocksdb", dedup_disk))
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="streams.bench.state")
    parser.add_argument("--worker", choices=["bare", "memory", "rocksdb"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--committed", type=int, required=True)
    args = parser.parse_args()
    from streams.logs import configure_logging  # noqa: PLC0415 (only the worker logs)

    configure_logging("WARNING", json=True, stream=sys.stderr)
    print(
        json.dumps(_worker(args.worker, args.bootstrap, args.app, args.state_dir, args.committed))
    )


if __name__ == "__main__":
    main()
