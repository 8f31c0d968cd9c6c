"""Async steps with records in flight at once, on the real broker.

``topology/lookup.py`` awaits a 20 ms service call per order with 64 orders in flight, on
8 partitions and 200 customers (the record key): SIGKILLed mid-stream and restarted, it
loses no order and writes each customer's orders in the order they came in (after the
restart, from where the last commit was: a committed offset never passes an order in
flight), an order written twice with the same envelope id both times (``dedup()``
downstream drops the second). With exactly-once, two SIGKILLs leave every order exactly
once, in order, in the read_committed output. A retried order holds back its customer's
later orders and no one else's.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import factories
from confluent_kafka import Message
from runtime_thread import RuntimeThread

from streams.cluster import Topics, admin_client
from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, caught_up, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name
from streams.topology import TopologyBuilder, owned

ROOT = Path(__file__).resolve().parents[2]
LOOKUP = ROOT / "topology" / "lookup.py"
CODEC = AvroCodec(default_catalog())
TOTAL, CUSTOMERS, PARTITIONS = 4_000, 200, 8
FAST_REBALANCE = ["-Xconsumer.session.timeout.ms=6000", "-Xconsumer.heartbeat.interval.ms=1000"]


def orders(total: int = TOTAL) -> list[Envelope]:
    return factories.orders(range(total), customers=CUSTOMERS, customer="c-{:04d}")


def order_numbers(records: Sequence[Message]) -> dict[str, list[int]]:
    """Each customer's order numbers, in the order their outputs were written."""
    by_customer: dict[str, list[int]] = defaultdict(list)
    for msg in sorted(records, key=lambda m: (m.partition(), m.offset())):
        data = CODEC.decode(msg.value(), msg.headers()).data  # type: ignore[arg-type]
        by_customer[data["customer_id"]].append(int(data["order_id"][2:]))
    return by_customer


def assert_in_order(by_customer: dict[str, list[int]], *, restarts: bool) -> None:
    """Each customer's outputs follow its orders: the next one, or (after a restart) one
    it had already written, never one that skips ahead."""
    for customer, numbers in by_customer.items():
        for before, after in itertools.pairwise(numbers):
            assert after <= before + CUSTOMERS if restarts else after == before + CUSTOMERS, (
                f"{customer}: o-{after} written after o-{before}"
            )


def at_least(n: int) -> Callable[[Sequence[Message]], bool]:
    return lambda records: len(records) >= n


def every_order(total: int) -> Callable[[Sequence[Message]], bool]:
    """Whether the records read so far include each of the ``total`` orders (some may be
    there twice after a restart: a count would stop short)."""
    seen: dict[tuple[int, int], int] = {}

    def covers(records: Sequence[Message]) -> bool:
        for msg in records:
            where = (msg.partition(), msg.offset())
            if where not in seen:
                data = CODEC.decode(msg.value(), msg.headers()).data  # type: ignore[arg-type]
                seen[where] = int(data["order_id"][2:])
        return len(set(seen.values())) >= total

    return covers


class Instances:
    """``streams run topology/lookup.py`` instances, one after the other, logs kept."""

    def __init__(self, bootstrap: str, topic: str, app_id: str, tmp: Path, *args: str) -> None:
        self.cmd = [
            sys.executable, "-m", "streams", "run", str(LOOKUP), "--app-id", app_id,
            "--set", f"input={topic}", "--set", "latency_ms=20", "--concurrency", "64",
            "--bootstrap", bootstrap, "--no-status", "--state-dir", str(tmp / "state"),
            *FAST_REBALANCE, *args,
        ]  # fmt: skip
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        with open(self.tmp / f"instance-{len(self.procs)}.log", "wb") as out:
            env = {**os.environ, "STREAMS_LOG_JSON": "1"}
            proc = subprocess.Popen(self.cmd, stdout=out, stderr=out, env=env)
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "".join(p.read_text() for p in sorted(self.tmp.glob("instance-*.log")))[-5000:]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            proc.wait(60)


def test_sigkill_mid_stream_loses_no_order_and_keeps_each_customers_order(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic("lookup-in", partitions=PARTITIONS)
    app_id = unique_topic_name("lookup")
    produce_envelopes(kafka_bootstrap, topic, orders(), CODEC)
    instances = Instances(kafka_bootstrap, topic, app_id, tmp_path)
    reader = TopicReader(kafka_bootstrap, f"{app_id}-enriched")
    try:
        proc = instances.start()
        reader.wait_for(at_least(1_500), 60, what="1,500 outputs")
        assert proc.poll() is None, instances.logs()
        proc.send_signal(signal.SIGKILL)  # 64 orders in flight, some finished past others
        proc.wait()
        instances.start()
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        records = reader.wait_for(every_order(TOTAL), 60, what="every order")
    finally:
        instances.stop()
        reader.close()
    assert_in_order(order_numbers(records), restarts=True)
    ids: dict[str, set[str]] = defaultdict(set)
    for msg in records:
        env = CODEC.decode(msg.value(), msg.headers())  # type: ignore[arg-type]
        ids[env.data["order_id"]].add(env.id)
    assert [order for order, made in ids.items() if len(made) > 1] == []


def test_exactly_once_through_two_sigkills_writes_each_order_once_and_in_order(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic("lookup-eos-in", partitions=PARTITIONS)
    app_id = unique_topic_name("lookup-eos")
    produce_envelopes(kafka_bootstrap, topic, orders(), CODEC)
    instances = Instances(kafka_bootstrap, topic, app_id, tmp_path, "--guarantee", "exactly_once")
    reader = TopicReader(
        kafka_bootstrap, f"{app_id}-enriched", config={"isolation.level": "read_committed"}
    )
    try:
        proc = instances.start()
        for threshold in (1_000, 2_500):
            reader.wait_for(at_least(threshold), 60, what=f"{threshold} outputs")
            assert proc.poll() is None, instances.logs()
            proc.send_signal(signal.SIGKILL)  # a transaction open, orders in flight
            proc.wait()
            proc = instances.start()
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, topic), 90, what="caught up")
        records = reader.wait_for(at_least(TOTAL), 60, what="every order")
    finally:
        instances.stop()
        reader.close()
    by_customer = order_numbers(records)
    written = sorted(n for numbers in by_customer.values() for n in numbers)
    assert written == list(range(TOTAL))  # each exactly once
    assert_in_order(by_customer, restarts=False)


def test_a_retried_order_holds_back_its_customers_later_orders_and_nobody_elses(
    kafka_bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic("lookup-retry-in", partitions=4)
    app_id = unique_topic_name("lookup-retry")
    failed_once: set[str] = set()
    finished: list[str] = []

    async def call_service(env: Envelope) -> Envelope:
        await asyncio.sleep(0.005)
        order_id = env.data["order_id"]
        if int(order_id[2:]) % 25 == 3 and order_id not in failed_once:
            failed_once.add(order_id)  # the service is down for this order, once
            raise ConnectionError(f"the service did not answer for {order_id}")
        finished.append(order_id)
        return env

    builder = TopologyBuilder(app_id, retry="1s", concurrency=32)
    builder.source(topic, type="order.placed", version=2).map(call_service).to(
        owned("out"), type="order.placed", version=2
    )
    topology = builder.build(default_catalog())
    prepare_topics(Topics(admin_client(kafka_bootstrap)), topology)
    total = 1_000
    produce_envelopes(kafka_bootstrap, topic, orders(total), CODEC)
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap, commit_interval_s=0.5, state_dir=str(tmp_path / "state")
    )
    running = RuntimeThread(Runtime(topology, config))
    reader = TopicReader(kafka_bootstrap, f"{app_id}-out")
    try:
        records = reader.wait_for(at_least(total), 90, what="every order")
    finally:
        error = running.stop(60)
        reader.close()
    assert error is None
    assert len(failed_once) == total // 25
    by_customer = order_numbers(records)
    assert sorted(n for numbers in by_customer.values() for n in numbers) == list(range(total))
    assert_in_order(by_customer, restarts=False)
    # Others went on meanwhile: the first retried order finished after orders that came later.
    first = min(failed_once, key=lambda o: int(o[2:]))
    assert any(int(o[2:]) > int(first[2:]) for o in finished[: finished.index(first)])
