"""Async steps and records in flight at once, on the runtime with in-memory clients.

Each coroutine here waits at a gate the test opens (``Gates``), so the tests decide which
record finishes first instead of timing it: per-key order while other keys overtake, the
limit of records in flight, positions that commit only what finished in order, the memory
bound, store writes undone for one record among others in flight, and what an async
processor's context does. The broker tests run the same steps at speed
(``tests/integration/test_concurrency_broker.py``).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import factories
import pytest
from confluent_kafka import TopicPartition
from structlog.testing import capture_logs

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.pipeline.crash_guard import CrashGuard
from streams.pipeline.offsets import decode_ahead
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.state import IN_MEMORY
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.testing.memory import MemoryCluster
from streams.testing.memory.admin import MemoryClients
from streams.topology import (
    ProcessingError,
    Topology,
    TopologyBuilder,
    TopologyValidationError,
    owned,
)

T, V = "order.placed", 2
CODEC = AvroCodec(default_catalog())


def order(n: int, key: str = "k1", total: int = 100) -> Envelope:
    return factories.order(n, key, total_cents=total)


class Gates:
    """Coroutines that wait until the test opens their gate, by order id; who is waiting
    now, and the most that ever waited at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._open: set[str] = set()
        self.waiting: set[str] = set()
        self.entered: list[str] = []
        self.most = 0
        self.cancelled: list[str] = []

    async def wait(self, name: str) -> None:
        event = asyncio.Event()
        with self._lock:
            if name in self._open:
                event.set()
            self._waits.setdefault(name, []).append((asyncio.get_running_loop(), event))
            self.waiting.add(name)
            self.entered.append(name)
            self.most = max(self.most, len(self.waiting))
        try:
            await event.wait()
        except asyncio.CancelledError:
            self.cancelled.append(name)
            raise
        finally:
            with self._lock:
                self.waiting.discard(name)

    def open(self, *names: str) -> None:
        with self._lock:
            self._open.update(names)
            for name in names:
                for loop, event in self._waits.pop(name, []):
                    if not loop.is_closed():
                        loop.call_soon_threadsafe(event.set)


class Harness:
    """A runtime of ``topology`` on in-memory clients: ``write`` input, ``turn_until``."""

    def __init__(
        self,
        topology: Topology,
        *,
        partitions: int = 1,
        cluster: MemoryCluster | None = None,
        **config: Any,
    ) -> None:
        if cluster is None:
            cluster = MemoryCluster()
            for topic in topology.topics_read:
                cluster.create_topic(topic, partitions)
        self.cluster = cluster
        self._input = self.cluster.producer({})
        settings = {
            "bootstrap": "memory",
            "batch_size": 100,
            "poll_timeout_s": 0,
            "commit_interval_s": 0,
            "state_dir": IN_MEMORY,
            "shutdown_timeout_s": 0,
            **config,
        }
        self.runtime = Runtime(
            topology, RuntimeConfig(**settings), codec=CODEC, clients=MemoryClients(self.cluster)
        )
        self.runtime.start()

    def write(self, *envelopes: Envelope, partition: int = 0) -> None:
        for env in envelopes:
            value, headers = CODEC.encode(env)
            key = env.key.encode() if env.key else None
            self._input.produce("in", value, key, partition, headers=headers)
        self._input.flush()

    def turn_until(self, done: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            self.runtime.turn(0.01)

    def out(self, topic: str = "app-out") -> list[str]:
        records = self.cluster.records(topic)
        return [CODEC.decode(r.value, r.headers).data["order_id"] for r in records]

    def committed(self, partition: int = 0) -> int:
        consumer = self.cluster.consumer({"group.id": "app"})
        (tp,) = consumer.committed([TopicPartition("in", partition)])
        return int(tp.offset)


def gated(gates: Gates, **builder: Any) -> Topology:
    """in → an async map waiting at the order's gate → app-out."""

    async def call_service(env: Envelope) -> Envelope:
        await gates.wait(env.data["order_id"])
        return env

    b = TopologyBuilder("app", **builder)
    b.source("in", type=T, version=V).map(call_service).to(owned("out"), type=T, version=V)
    return b.build(default_catalog())


def test_a_key_waits_for_its_record_in_flight_while_other_keys_overtake() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=8))
    h.write(order(1, "k1"), order(2, "k1"), order(3, "k2"), order(4, "k3"))
    h.turn_until(lambda: gates.waiting == {"o-1", "o-3", "o-4"}, "three keys in flight")
    assert "o-2" not in gates.entered  # behind o-1, its key's record in flight

    gates.open("o-3", "o-4")
    h.turn_until(lambda: len(h.out()) == 2, "o-3 and o-4 written")
    assert sorted(h.out()) == ["o-3", "o-4"]
    assert h.committed() < 0  # o-1 is first in the partition: nothing commits past it

    gates.open("o-1")
    h.turn_until(lambda: "o-2" in gates.waiting, "o-2 started once o-1 finished")
    gates.open("o-2")
    h.turn_until(lambda: h.committed() == 4, "every offset committed")
    out = h.out()
    assert [o for o in out if o in ("o-1", "o-2")] == ["o-1", "o-2"]
    h.runtime.close()


def test_no_more_records_in_flight_than_the_concurrency() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=3), metrics_port=0)
    h.write(*[order(n, f"k{n}") for n in range(10)])
    h.turn_until(lambda: len(gates.waiting) == 3, "three in flight")
    for _ in range(20):
        h.runtime.turn(0)
    assert len(gates.waiting) == 3
    assert h.runtime.metrics is not None
    scraped = h.runtime.metrics.exposition()[0].decode()
    assert 'streams_records_in_flight{app_id="app"' in scraped
    assert re.search(r"streams_records_in_flight\{[^}]*\} 3\.0", scraped)
    assert re.search(r"streams_records_held\{[^}]*\} 10\.0", scraped)
    gates.open(*[f"o-{n}" for n in range(10)])
    h.turn_until(lambda: len(h.out()) == 10, "all ten written")
    assert gates.most == 3
    h.runtime.close()


def test_ordering_by_partition_runs_one_record_of_a_partition_at_a_time() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=8, ordering="partition"), partitions=2)
    h.write(order(1, "k1"), order(2, "k2"), partition=0)
    h.write(order(3, "k3"), partition=1)
    h.turn_until(lambda: gates.waiting == {"o-1", "o-3"}, "one record of each partition")
    gates.open("o-1", "o-2", "o-3")
    h.turn_until(lambda: len(h.out()) == 3, "all three written")
    assert gates.entered.index("o-2") > gates.entered.index("o-1")
    h.runtime.close()


def test_a_stop_commits_what_finished_in_order_and_the_next_run_skips_what_finished_ahead() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=8))
    h.write(order(1, "k1"), order(2, "k2"), order(3, "k1"), order(4, "k3"))
    h.turn_until(lambda: gates.waiting == {"o-1", "o-2", "o-4"}, "three keys in flight")
    gates.open("o-1", "o-4")
    h.turn_until(lambda: gates.waiting == {"o-2", "o-3"}, "o-3 started after o-1")

    h.runtime.close()  # o-2 (offset 1) and o-3 (offset 2) are in flight
    assert h.committed() == 1  # past o-1 only: o-2 and o-3 are read again
    metadata = h.cluster.committed_metadata("app", "in", 0)
    assert decode_ahead(1, metadata) == {3}  # o-4 finished ahead: the commit says so
    assert sorted(gates.cancelled) == ["o-2", "o-3"]
    assert sorted(h.out()) == ["o-1", "o-4"]

    # Stopped again with o-2 and o-3 in flight: o-4 is still named, though not read again.
    again = Harness(gated(gates, concurrency=8), cluster=h.cluster)
    again.turn_until(lambda: gates.waiting == {"o-2", "o-3"}, "o-2 and o-3 in flight again")
    again.runtime.close()
    assert decode_ahead(1, h.cluster.committed_metadata("app", "in", 0)) == {3}

    again = Harness(gated(gates, concurrency=8), cluster=h.cluster)
    gates.open("o-2", "o-3")
    again.turn_until(lambda: again.committed() == 4, "every offset committed")
    assert sorted(again.out()) == ["o-1", "o-2", "o-3", "o-4"]  # o-4 not written twice
    assert gates.entered.count("o-4") == 1
    again.runtime.close()


def test_a_partition_holding_too_many_records_is_paused_until_half_went_on() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=4), batch_size=5, buffered_per_partition=10)
    h.write(*[order(n, "k1") for n in range(40)])  # one key: one at a time
    h.turn_until(lambda: gates.waiting == {"o-0"}, "the first record in flight")
    for _ in range(20):
        h.runtime.turn(0)
    consumer = h.runtime._consumer
    (position,) = consumer.position([TopicPartition("in", 0)])
    assert position.offset <= 10 + 5  # the bound, and at most one batch past it
    gates.open(*[f"o-{n}" for n in range(40)])
    h.turn_until(lambda: len(h.out()) == 40, "all forty written")
    assert h.out() == [f"o-{n}" for n in range(40)]
    h.runtime.close()


def test_a_failed_record_undoes_its_own_store_writes_only() -> None:
    gates = Gates()

    def count(env: Envelope, ctx: Any) -> Envelope:
        store = ctx.store("counts")
        key = env.key or ""
        store.set(key, str(int(store.get(key, b"0")) + 1).encode())
        return env

    async def call_service(env: Envelope) -> Envelope:
        await gates.wait(env.data["order_id"])
        if env.data["total_cents"] < 0:
            raise ValueError("the service refused it")
        return env

    b = TopologyBuilder("app", concurrency=8, on_error="skip")
    b.store("counts", backend="memory")
    (
        b.source("in", type=T, version=V)
        .process(count)
        .map(call_service)
        .to(owned("out"), type=T, version=V)
    )
    h = Harness(b.build(default_catalog()))
    h.write(order(1, "k1"), order(2, "k2", total=-1), order(3, "k3"))
    h.turn_until(lambda: len(gates.waiting) == 3, "three in flight, each having counted")
    gates.open("o-2")  # fails: its count is undone while o-1's and o-3's are pending
    h.turn_until(lambda: h.runtime.stats.skipped == 1, "o-2 skipped")
    gates.open("o-1", "o-3")
    h.turn_until(lambda: len(h.out()) == 2, "o-1 and o-3 written")
    store = h.runtime.state.stores["counts"].partition(0).transaction()  # type: ignore[union-attr]
    assert (store.get("k1"), store.get("k2"), store.get("k3")) == (b"1", None, b"1")
    h.runtime.close()


def test_an_async_processor_forwards_and_replies_once_its_coroutine_returned() -> None:
    seen: list[Any] = []

    async def enrich(env: Envelope, ctx: Any) -> Envelope:
        await asyncio.sleep(0)
        seen.append((ctx.record.offset, ctx.partition))
        ctx.forward(env.with_data({**env.data, "total_cents": 1}), to="audit")
        ctx.forward(env.with_data({**env.data, "total_cents": 2}), to="audit")
        return None  # type: ignore[return-value]

    b = TopologyBuilder("app", concurrency=4)
    outs = b.source("in", type=T, version=V).process(enrich, outputs=["audit"])
    outs["audit"].to(owned("audit"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", [order(1), order(2)])
        audit = [e.data["total_cents"] for e in driver.read("app-audit")]
    assert audit == [1, 2, 1, 2]
    assert seen == [(0, 0), (1, 0)]


def test_an_async_processor_asking_for_a_store_fails_its_record_with_why() -> None:
    async def peeking(env: Envelope, ctx: Any) -> Envelope:
        ctx.store("counts")
        return env

    b = TopologyBuilder("app", concurrency=4)
    b.store("counts", backend="memory")
    b.source("in", type=T, version=V).process(peeking).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver, pytest.raises(ProcessingError) as failed:
        driver.pipe("in", order(1))
    assert "processor 'peeking' is async" in str(failed.value.failure.error)
    assert "in a sync step before or after" in str(failed.value.failure.error)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_async_steps_compute_what_their_sync_twins_compute(concurrency: int) -> None:
    async def double(env: Envelope) -> Envelope:
        await asyncio.sleep(0)
        return env.with_data({**env.data, "total_cents": env.data["total_cents"] * 2})

    async def big(env: Envelope) -> bool:
        return bool(env.data["total_cents"] >= 100)

    async def twice(env: Envelope) -> Any:
        for n in (1, 2):
            await asyncio.sleep(0)
            yield env.with_data({**env.data, "total_cents": env.data["total_cents"] + n})

    peeked: list[str] = []

    async def note(env: Envelope) -> None:
        peeked.append(env.data["order_id"])

    b = TopologyBuilder("app", concurrency=concurrency)
    (
        b.source("in", type=T, version=V)
        .map(double)
        .filter(big)
        .flat_map(twice)
        .peek(note)
        .to(owned("out"), type=T, version=V)
    )
    with TestDriver(b.build(default_catalog()), partitions=2) as driver:
        driver.pipe("in", [order(1, "k1", 10), order(2, "k2", 50), order(3, "k1", 70)])
        out = [(e.data["order_id"], e.data["total_cents"]) for e in driver.read("app-out")]
    assert sorted(out) == [("o-2", 101), ("o-2", 102), ("o-3", 141), ("o-3", 142)]
    assert sorted(peeked) == ["o-2", "o-2", "o-3", "o-3"]


def test_a_step_limit_keeps_fewer_records_in_one_step_than_the_concurrency() -> None:
    gates = Gates()

    async def call_service(env: Envelope) -> Envelope:
        await gates.wait(env.data["order_id"])
        return env

    b = TopologyBuilder("app", concurrency=8)
    (
        b.source("in", type=T, version=V)
        .map(call_service, concurrency=2)
        .to(owned("out"), type=T, version=V)
    )
    h = Harness(b.build(default_catalog()))
    h.write(*[order(n, f"k{n}") for n in range(6)])
    h.turn_until(lambda: len(gates.waiting) == 2, "two in the step")
    for _ in range(20):
        h.runtime.turn(0)
    assert len(gates.waiting) == 2
    assert h.runtime.in_flight == 6  # the others wait for a place in the step
    gates.open(*[f"o-{n}" for n in range(6)])
    h.turn_until(lambda: len(h.out()) == 6, "all six written")
    assert gates.most == 2
    h.runtime.close()


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        (
            lambda s: s.rekey(_async_key),
            "rekey step '_async_key': its function is async, which only map, filter",
        ),
        (lambda s: s.map(_sync_map, concurrency=4), "concurrency= limits an async step"),
        (lambda s: s.map(_async_map, concurrency=0), "concurrency must be at least 1, got 0"),
    ],
)
def test_what_cannot_be_awaited_is_refused_at_build(wire: Any, problem: str) -> None:
    b = TopologyBuilder("app", concurrency=4)
    wire(b.source("in", type=T, version=V)).to(owned("out"), type=T, version=V)
    with pytest.raises(TopologyValidationError, match=problem):
        b.build(default_catalog())


def test_ordering_none_is_refused_with_retry_topics_and_unknown_orderings_too() -> None:
    for options, problem in [
        ({"ordering": "none", "retry": "1s"}, "ordering='none' lets a key's records overtake"),
        ({"ordering": "sometimes"}, "ordering must be one of"),
        ({"concurrency": 0}, "concurrency must be at least 1"),
    ]:
        b = TopologyBuilder("app", **options)  # type: ignore[arg-type]
        b.source("in", type=T, version=V).map(_async_map).to(owned("out"), type=T, version=V)
        with pytest.raises(TopologyValidationError, match=problem):
            b.build(default_catalog())


def test_a_timer_function_cannot_be_async() -> None:
    class Digest:
        def init(self, ctx: Any) -> None:
            ctx.schedule(60, self.fire)

        async def fire(self, now_ms: int, ctx: Any) -> None:
            return None

        def process(self, env: Envelope, ctx: Any) -> None:
            return None

    b = TopologyBuilder("app")
    b.source("in", type=T, version=V).process(Digest).to(owned("out"), type=T, version=V)
    with pytest.raises(Exception, match="a timer's function runs with the partition's stores"):
        TestDriver(b.build(default_catalog()))


async def _async_key(env: Envelope) -> str:
    return env.id


async def _async_map(env: Envelope) -> Envelope:
    return env


def _sync_map(env: Envelope) -> Envelope:
    return env


def test_a_keys_records_count_in_offset_order_when_a_later_one_is_ready_first() -> None:
    gates = Gates()

    async def call_service(env: Envelope) -> Envelope:
        await gates.wait(env.data["order_id"])
        return env

    def count(env: Envelope, ctx: Any) -> Envelope:
        store, key = ctx.store("counts"), env.key or ""
        n = int(store.get(key, b"0")) + 1
        store.set(key, str(n).encode())
        return env.with_data({**env.data, "total_cents": n})

    b = TopologyBuilder("app", concurrency=8)
    b.store("counts", backend="memory")
    (
        b.source("in", type=T, version=V)
        .map(call_service)
        .process(count)
        .to(owned("out"), type=T, version=V)
    )
    h = Harness(b.build(default_catalog()))
    h.write(order(1, "k1"), order(2, "k2"), order(3, "k1"))
    gates.open("o-3", "o-2")  # o-3's answer is ready first; it still waits for o-1
    h.turn_until(lambda: len(h.out()) == 1, "o-2 written")
    gates.open("o-1")
    h.turn_until(lambda: len(h.out()) == 3, "all three written")
    records = h.cluster.records("app-out")
    counts = {
        (env := CODEC.decode(r.value, r.headers)).data["order_id"]: env.data["total_cents"]
        for r in records
    }
    assert counts == {"o-1": 1, "o-2": 1, "o-3": 2}
    h.runtime.close()


def test_dedup_drops_a_duplicate_that_waited_behind_its_original() -> None:
    async def call_service(env: Envelope) -> Envelope:
        await asyncio.sleep(0)
        return env

    b = TopologyBuilder("app", concurrency=8)
    once = b.source("in", type=T, version=V).dedup(ttl=3600, backend="memory")
    once.map(call_service).to(owned("out"), type=T, version=V)
    first = order(1, "k1")
    with TestDriver(b.build(default_catalog()), partitions=2) as driver:
        driver.pipe("in", [first, order(2, "k2"), first, order(3, "k1"), first])
        out = [e.data["order_id"] for e in driver.read("app-out")]
        duplicates = driver.duplicates
    assert sorted(out) == ["o-1", "o-2", "o-3"]
    assert duplicates == 2


def test_a_stop_finishes_the_record_in_hand_not_the_rest_of_its_batch() -> None:
    holder: list[Runtime] = []

    async def call_service(env: Envelope) -> Envelope:
        if env.data["order_id"] == "o-2":
            holder[0].stop()  # SIGTERM while a batch of slow records is in hand
        return env

    b = TopologyBuilder("app")  # one record at a time: a batch takes its records' time
    b.source("in", type=T, version=V).map(call_service).to(owned("out"), type=T, version=V)
    h = Harness(b.build(default_catalog()))
    holder.append(h.runtime)
    h.write(*[order(n, f"k{n}") for n in range(10)])
    h.runtime.turn(0)
    assert h.runtime.stats.consumed == 3  # o-0, o-1, o-2: then the loop let go
    h.runtime.close()
    assert h.committed() == 3  # the others are read again by whoever comes next


def test_a_coroutine_that_never_returns_postpones_commits_and_says_which_record() -> None:
    gates = Gates()
    h = Harness(gated(gates, concurrency=8), shutdown_timeout_s=0.05)  # how long commits wait
    h.write(order(1, "k1"), order(2, "k2"))
    gates.open("o-2")
    with capture_logs() as logs:
        h.turn_until(lambda: len(h.out()) == 1, "o-2 written")
        h.runtime.turn(0)
    postponed = [e for e in logs if e["event"].startswith("records in flight did not finish")]
    assert postponed and postponed[-1]["oldest"] == "in[0]@0"
    assert postponed[-1]["log_level"] == "warning"
    assert h.committed() < 0  # o-1 holds the partition's commit, o-2 is named ahead of it
    gates.open("o-1")
    h.turn_until(lambda: h.committed() == 2, "both committed")
    h.runtime.close()


def test_a_partition_whose_last_run_died_goes_on_concurrently_at_the_commit_past_its_start(
    tmp_path: Path,
) -> None:
    # What a run that died with its first record in hand leaves behind (no clean stop).
    CrashGuard(tmp_path / "app" / "crash-guard").partition("in", 0).before(0)
    gates = Gates()
    h = Harness(
        gated(gates, concurrency=8),
        state_dir=str(tmp_path),
        batch_size=5,
        buffered_per_partition=10,
        shutdown_timeout_s=0.05,  # how long a commit waits for the records in flight
    )
    h.write(*[order(n, f"k{n}") for n in range(40)])  # forty keys: eight at a time, usually
    h.turn_until(lambda: gates.waiting == {"o-0"}, "the first record in flight")
    for _ in range(20):
        h.runtime.turn(0)
    assert gates.waiting == {"o-0"}  # one at a time: the crash guard knows what is in hand
    (position,) = h.runtime._consumer.position([TopicPartition("in", 0)])
    assert position.offset <= 10 + 5  # paused at its bound: no record comes in any more

    # o-0 and o-1 finish, a commit passes the run's start: eight in flight at once, though
    # the partition, paused, hands over no new record.
    gates.open("o-0", "o-1")
    h.turn_until(lambda: len(gates.waiting) == 8, "eight records in flight")
    assert h.committed() >= 1 and gates.waiting == {f"o-{n}" for n in range(2, 10)}
    gates.open(*[f"o-{n}" for n in range(40)])
    h.turn_until(lambda: len(h.out()) == 40, "all forty written")
    h.runtime.close()
    assert not (tmp_path / "app" / "crash-guard" / "in-0").exists()  # a clean stop
