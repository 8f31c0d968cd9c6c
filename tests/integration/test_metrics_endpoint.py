"""``streams run --metrics-port``: what an operator scrapes while a topology runs.

The topology runs as ``streams run`` in a child process (as in production); the test reads
``/metrics``, ``/healthz`` and ``/readyz`` over HTTP like Prometheus and Kubernetes do.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicFactory, produce_envelopes, wait_until
from streams.testing.metrics import Samples, get, sample, scrape
from streams.testing.topics import unique_topic_name
from streams.testing.topology_process import TopologyProcess
from streams.topology.loader import import_file

TOPOLOGY = Path(__file__).resolve().parents[2] / "topology"
ORDERS = TOPOLOGY / "orders.py"
DEDUP = TOPOLOGY / "dedup.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def codec() -> AvroCodec:
    return AvroCodec(default_catalog())


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[TopologyProcess]]:
    started: list[TopologyProcess] = []
    yield started
    for proc in started:
        if proc.running:
            proc.stop()


def test_counters_match_what_was_sent_lag_drains_and_a_poison_record_is_counted(
    kafka_bootstrap: str,
    make_topic: TopicFactory,
    codec: AvroCodec,
    runs: list[TopologyProcess],
    tmp_path: Path,
) -> None:
    source = make_topic("metrics-orders", partitions=2)
    app = unique_topic_name("metrics")
    orders = list(import_file(ORDERS).sample_orders(300))
    produce_envelopes(kafka_bootstrap, source, orders, codec)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(source, b"not an envelope", key=b"poison", partition=1)
    assert producer.flush(10) == 0
    port = free_port()
    proc = TopologyProcess(
        ORDERS,
        kafka_bootstrap,
        app_id=app,
        settings={"input": source},
        args=["--metrics-port", str(port), "--state-dir", str(tmp_path / "state")],
    )
    runs.append(proc.start())

    def processed() -> Samples | None:
        proc.check()
        samples = scrape(port)
        done = sample(samples, "streams_records_consumed_total", topic=source) == len(orders) + 1
        return samples if done else None

    samples = wait_until(processed, 120, what="every record counted as consumed")
    assert sample(samples, "streams_records_consumed_total", app_id=app, topic=source) == 301
    accepted = sample(samples, "streams_records_produced_total", topic=f"{app}-accepted") or 0
    rejected = sample(samples, "streams_records_produced_total", topic=f"{app}-rejected") or 0
    assert accepted + rejected == len(orders)
    assert accepted > 0 and rejected > 0  # the sample orders include both
    assert sample(samples, "streams_records_dead_lettered_total", topic=source) == 1
    assert sample(samples, "streams_records_skipped_total", topic=source) is None
    assert sample(samples, "streams_assigned_partitions") == 2

    def lag_drained() -> bool:
        samples = scrape(port)
        lags = [sample(samples, "streams_consumer_lag_records", topic=source, partition=str(p))
                for p in (0, 1)]  # fmt: skip
        return lags == [0, 0]

    wait_until(lag_drained, 30, what="the consumer lag of both partitions at 0")

    def committed() -> Samples | None:  # the first commit comes with the commit interval
        samples = scrape(port)
        return samples if sample(samples, "streams_commit_seconds_count", kind="offsets") else None

    samples = wait_until(committed, 30, what="a commit timed")
    for p in (0, 1):
        assert sample(samples, "streams_consumer_lag_seconds", topic=source, partition=str(p)) == 0
    # A sampled record's end-to-end latency and processing time (and the commit above).
    assert (sample(samples, "streams_processing_seconds_count", topic=source) or 0) > 0
    assert (sample(samples, "streams_step_seconds_count", step="validate") or 0) > 0
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/readyz") == (200, "ready\n")
    assert proc.stop() == 0
    assert get(port, "/healthz")[0] == 0  # the port is closed with the runtime


def test_readyz_is_not_ready_while_stores_restore_and_ready_after(
    kafka_bootstrap: str,
    make_topic: TopicFactory,
    codec: AvroCodec,
    runs: list[TopologyProcess],
    tmp_path: Path,
) -> None:
    source = make_topic("metrics-restore", partitions=1)
    app = unique_topic_name("metrics-restore")
    count = 40_000  # a changelog long enough that its restore is seen from outside
    orders = import_file(ORDERS).sample_orders(count)
    produce_envelopes(kafka_bootstrap, source, orders, codec)
    settings = {"input": source, "backend": "rocksdb"}
    port = free_port()

    def run(state: str) -> TopologyProcess:
        proc = TopologyProcess(
            DEDUP,
            kafka_bootstrap,
            app_id=app,
            settings=settings,
            args=["--metrics-port", str(port), "--state-dir", str(tmp_path / state)],
        )
        runs.append(proc.start())
        return proc

    first = run("first")  # fills the store: one entry per order, written to its changelog
    wait_until(
        lambda: sample(scrape(port), "streams_records_consumed_total", topic=source) == count,
        180,
        what="the first instance to process every order",
    )
    assert first.stop() == 0

    # A second instance with empty local state restores the store from its changelog.
    answers: list[tuple[int, str]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            answers.append(get(port, "/readyz"))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    second = run("second")
    try:
        wait_until(lambda: answers and answers[-1][0] == 200, 180, what="/readyz to say ready")
    finally:
        done.set()
        watcher.join(10)
    second.check()
    restoring = [body for status, body in answers if status == 503 and "restoring" in body]
    assert restoring, f"/readyz never said it was restoring: {sorted(set(answers))[:5]}"
    first_ready = next(i for i, (status, _) in enumerate(answers) if status == 200)
    assert all(status == 200 for status, _ in answers[first_ready:])
    samples = scrape(port)
    changelog = f"{app}-dedup-changelog"
    assert sample(samples, "streams_restore_remaining_records", topic=changelog) == 0
    assert sample(samples, "streams_restore_restored_records", topic=changelog) == count
    assert (sample(samples, "streams_store_entries", store="dedup", partition="0") or 0) > 0
    assert sample(samples, "streams_ready") == 1
