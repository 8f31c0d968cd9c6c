"""A store partition between checkpoints: buffering, flush to the changelog, apply, TTL.

Runs on both backends; the changelog producer is the in-memory one (no broker here; the
integration tests do the same against Kafka).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from rich.console import Console

from streams.state import (
    NEVER,
    Backend,
    ChangelogPartition,
    ChangelogStore,
    ChangelogWriteError,
    Checkpoint,
    Dedup,
    Entry,
    MemoryBackend,
    RestoreProgressBar,
    RocksDBBackend,
    RoutedStore,
    StateError,
    StateManager,
    StoreClosedError,
)
from streams.state.changelog import ChangelogRecord, decode_record
from streams.state.checkpoint_file import read_checkpoint
from streams.testing.memory import MemoryCluster

TOPIC = "app-s-changelog"


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def changelog(cluster: MemoryCluster, partition: int = 2) -> list[ChangelogRecord]:
    """What a restore reads from the changelog's ``partition``."""
    return [
        decode_record(r.key, r.value, r.headers, topic=TOPIC, partition=partition, offset=r.offset)
        for r in cluster.records(TOPIC, partition)
    ]


@pytest.fixture(params=["memory", "rocksdb"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return MemoryBackend() if request.param == "memory" else RocksDBBackend()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cluster() -> MemoryCluster:
    """Where changelogs are written and restored from, in memory."""
    cluster = MemoryCluster()
    cluster.create_topic(TOPIC, 3)
    return cluster


@pytest.fixture
def part(backend: Backend, tmp_path: Path, clock: Clock) -> Iterator[ChangelogPartition]:
    store = ChangelogStore(
        "app",
        "s",
        backend,
        consumer_config={"bootstrap.servers": "unused:1"},
        state_dir=tmp_path,
        source_topic="orders",
        clock=clock,
    )
    storage = backend.open(store.partition_dir(2))
    opened = ChangelogPartition(store, 2, storage, Checkpoint(TOPIC, 0), None)
    yield opened
    storage.close()


def test_writes_are_buffered_and_visible_until_applied(part: ChangelogPartition) -> None:
    tx = part.transaction()
    tx.set("a", b"1")
    tx.set(b"b", b"2")
    tx.delete("b")
    assert tx.get("a") == b"1"
    assert tx.get("b") is None
    assert tx.get("b", b"default") == b"default"
    assert part.storage.get(b"a") is None  # nothing local before apply


def test_flush_writes_each_key_once_tagged_with_the_source(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    tx = part.transaction()
    tx.set("a", b"1")
    tx.set("a", b"2")
    tx.set("b", b"x")
    tx.delete("b")
    producer = cluster.producer({})
    assert part.flush(producer, source_offset=57) == 2
    records = changelog(cluster)
    assert [(r.key, r.value) for r in records] == [(b"a", b"2"), (b"b", None)]
    # tagged with the input position alone: the changelog partition is the input's
    assert [(r.source_offset, r.source_partition) for r in records] == [(57, None), (57, None)]


def test_each_changelog_record_carries_its_own_expiry(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    tx = part.transaction()
    tx.set("a", b"1", ttl=10, now=100.0)
    tx.set("b", b"2", ttl=10, now=100.0)  # expires with a
    tx.set("c", b"3", ttl=20, now=100.0)
    tx.set("d", b"4")  # never
    tx.set("e", b"5", ttl=10, now=100.0)
    part.flush(cluster.producer({}), source_offset=3)
    expiries = [r.expires_at_ms for r in changelog(cluster)]
    assert expiries == [110_000, 110_000, 120_000, NEVER, 110_000]


def test_apply_waits_for_acks_then_writes_locally(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    part.transaction().set("a", b"1")
    producer = cluster.producer({})
    part.flush(producer, source_offset=10)
    with pytest.raises(ChangelogWriteError, match="not acknowledged"):
        part.check_delivered()
    with pytest.raises(ChangelogWriteError):
        part.apply()
    producer.flush()
    part.check_delivered()
    part.apply()
    assert part.storage.get(b"a") == Entry(b"1")
    assert part.checkpoint == Checkpoint(TOPIC, 1, 10)
    assert part.transaction().get("a") == b"1"


def committed_deferred(cluster: MemoryCluster, part: ChangelogPartition, offset: int) -> None:
    """What the runtime does at a checkpoint: flush, acks, then a deferred apply."""
    producer = cluster.producer({})
    part.flush(producer, source_offset=offset)
    producer.flush()
    part.apply(deferred=True)


def test_a_deferred_apply_is_read_at_once_and_written_a_chunk_at_a_time(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    tx = part.transaction()
    for n in range(5):
        tx.set(f"k{n}", b"%d" % n)
    committed_deferred(cluster, part, 10)
    assert part.applying == 5 and part.storage.get(b"k0") is None
    assert part.checkpoint == Checkpoint(TOPIC, 0)  # moves once all are written
    tx = part.transaction()
    assert [tx.get(f"k{n}") for n in range(5)] == [b"0", b"1", b"2", b"3", b"4"]
    tx.set("k0", b"new")  # the next interval's writes shadow the committed ones
    assert part.apply_some(2) == 2 and part.applying == 3
    assert part.checkpoint == Checkpoint(TOPIC, 0)
    assert part.apply_some(10) == 3 and part.applying == 0
    assert part.apply_some(10) == 0
    assert [part.storage.get(f"k{n}".encode()) for n in (0, 4)] == [Entry(b"0"), Entry(b"4")]
    assert part.checkpoint == Checkpoint(TOPIC, 5, 10)
    assert part.transaction().get("k0") == b"new"


@pytest.mark.parametrize("then", ["flush", "abort"])
def test_committed_changes_left_unwritten_are_written_before_anything_else(
    cluster: MemoryCluster, part: ChangelogPartition, then: str
) -> None:
    part.transaction().set("a", b"1")
    committed_deferred(cluster, part, 10)
    part.transaction().set("b", b"2")
    if then == "flush":  # the next checkpoint (its expiry scan reads the storage itself)
        part.flush(cluster.producer({}), source_offset=11)
    else:  # an abort (and a close, which aborts) drops what is not committed, never what is
        part.abort()
    assert part.applying == 0 and part.storage.get(b"a") == Entry(b"1")
    assert part.checkpoint == Checkpoint(TOPIC, 1, 10)
    assert (part.transaction().get("b") is None) == (then == "abort")


def test_a_state_manager_writes_committed_changes_up_to_its_limit_per_call(
    backend: Backend, tmp_path: Path, cluster: MemoryCluster
) -> None:
    manager = StateManager(
        "app", consumer_config={}, make_consumer=cluster.consumer, state_dir=tmp_path
    )
    manager.add_store("s", backend, source_topic="orders")
    for partition in (0, 1):
        manager.assign("orders", partition, None)
        tx = manager.stores["s"].partition(partition).transaction()
        for n in range(3):
            tx.set(f"{partition}-{n}", b"")
    producer = cluster.producer({})
    manager.flush(producer, {("orders", 0): 3, ("orders", 1): 3})
    producer.flush()
    manager.apply(deferred=True)
    assert manager.apply_some(4) == 4
    assert manager.apply_some(4) == 2
    assert manager.apply_some(4) == 0
    for partition in (0, 1):
        storage = manager.stores["s"].partition(partition).storage
        assert all(storage.get(f"{partition}-{n}".encode()) for n in range(3))
    manager.close()


def test_a_failed_changelog_write_blocks_the_commit(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    part.transaction().set("a", b"1")
    producer = cluster.producer({})
    producer.fail_deliveries(1, KafkaError(KafkaError._MSG_TIMED_OUT, "injected"))
    part.flush(producer, source_offset=3)
    producer.flush()
    with pytest.raises(ChangelogWriteError, match="do not commit"):
        part.check_delivered()
    part.abort()
    assert part.transaction().get("a") is None
    assert part.storage.get(b"a") is None


@pytest.mark.parametrize(
    ("code", "outage"),
    [(KafkaError._MSG_TIMED_OUT, True), (KafkaError.TOPIC_AUTHORIZATION_FAILED, False)],
)
def test_a_changelog_write_lost_with_a_broker_is_an_outage_a_refused_one_is_not(
    cluster: MemoryCluster, part: ChangelogPartition, code: int, outage: bool
) -> None:
    """A write that timed out while a node was lost clears when the broker answers: the
    committer waits it out and redoes the interval; a refusal stops the instance."""
    part.transaction().set("a", b"1")
    producer = cluster.producer({})
    producer.fail_deliveries(1, KafkaError(code, "injected"))
    part.flush(producer, source_offset=3)
    producer.flush()
    with pytest.raises(ChangelogWriteError) as failed:
        part.check_delivered()
    assert failed.value.transient is outage


def test_no_writes_between_flush_and_apply(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    part.transaction().set("a", b"1")
    producer = cluster.producer({})
    part.flush(producer, source_offset=1)
    with pytest.raises(StateError, match="apply"):
        part.transaction().set("b", b"2")
    with pytest.raises(StateError, match="flushed twice"):
        part.flush(producer, source_offset=2)
    producer.flush()
    part.apply()
    part.transaction().set("b", b"2")


def test_changes_sent_ahead_are_tagged_then_and_the_flush_sends_only_the_rest(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    tx = part.transaction()
    tx.set("a", b"1")
    producer = cluster.producer({})
    assert part.send(producer, source_offset=5) == 1
    assert part.send(producer, source_offset=6) == 0  # nothing new
    tx.set("a", b"2")
    tx.set("b", b"x")
    assert part.flush(producer, source_offset=9) == 2  # the checkpoint's changes
    tagged = [(r.key, r.value, r.source_offset) for r in changelog(cluster)]
    assert tagged == [(b"a", b"1", 5), (b"a", b"2", 9), (b"b", b"x", 9)]
    with pytest.raises(StateError, match="sent after a flush"):
        part.send(producer, source_offset=10)
    producer.flush()
    part.apply()
    assert part.storage.get(b"a") == Entry(b"2")
    assert part.checkpoint == Checkpoint(TOPIC, 3, 9)  # three records produced


def test_a_rolled_back_write_is_not_sent_and_none_is_sent_mid_attempt(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    tx = part.transaction()
    tx.set("kept", b"1")
    tx.savepoint()
    tx.set("undone", b"2")
    producer = cluster.producer({})
    with pytest.raises(StateError, match="attempt is open"):
        part.send(producer, source_offset=1)
    tx.rollback()
    assert part.send(producer, source_offset=1) == 1
    assert [r.key for r in cluster.records(TOPIC, 2)] == [b"kept"]


def store_on(cluster: MemoryCluster) -> ChangelogStore:
    """A store whose restores read ``cluster``'s changelog."""
    return ChangelogStore(
        "app",
        "s",
        MemoryBackend(),
        consumer_config={},
        make_consumer=cluster.consumer,
        source_topic="in",
    )


def test_a_restore_skips_changes_sent_ahead_of_the_committed_offset(
    cluster: MemoryCluster,
) -> None:
    part = store_on(cluster).open(0, None)
    producer = cluster.producer({})
    part.transaction().set("k", b"at 10")
    part.send(producer, source_offset=10)
    part.transaction().set("k", b"at 20")
    part.send(producer, source_offset=20)
    producer.flush()
    # the process dies before its checkpoint; the group committed offset 10 earlier
    restored = store_on(cluster).open(0, committed_offset=10)
    assert restored.transaction().get("k") == b"at 10"


def test_entries_read_as_absent_once_their_ttl_passed(
    part: ChangelogPartition, clock: Clock
) -> None:
    tx = part.transaction()
    tx.set("k", b"v", ttl=60)
    assert tx.get("k") == b"v"
    clock.now += 59.9
    assert tx.exists("k")
    clock.now += 0.1
    assert not tx.exists("k")
    assert tx.get("k") is None
    assert tx.get("k", now=clock.now - 30) == b"v"  # an explicit "now" wins over the clock


def test_put_if_absent_writes_only_over_nothing_or_an_expired_entry(
    part: ChangelogPartition, clock: Clock
) -> None:
    tx = part.transaction()
    assert tx.put_if_absent("k", b"first", ttl=60)
    assert not tx.put_if_absent("k", b"second", ttl=60)
    assert tx.get("k") == b"first"
    clock.now += 60
    assert tx.put_if_absent("k", b"third", ttl=60)  # the first one expired
    clock.now += 59.9
    assert tx.get("k") == b"third"  # its time to live runs from its own write
    assert tx.put_if_absent("forever", b"x") and tx.get("forever", now=clock.now + 1e9) == b"x"


def test_expiry_writes_tombstones_to_the_changelog(
    cluster: MemoryCluster, part: ChangelogPartition, clock: Clock
) -> None:
    producer = cluster.producer({})
    tx = part.transaction()
    tx.set("short", b"1", ttl=10)
    tx.set("long", b"2", ttl=1_000)
    tx.set("forever", b"3")
    part.flush(producer, source_offset=5)
    producer.flush()
    part.apply()
    written = changelog(cluster)
    assert written[0].expires_at_ms == int((clock.now + 10) * 1000)
    assert written[2].expires_at_ms == NEVER

    clock.now += 11
    assert part.flush(producer, source_offset=6) == 1
    producer.flush()
    part.apply()
    tombstone = changelog(cluster)[-1]
    assert (tombstone.key, tombstone.value, tombstone.source_offset) == (b"short", None, 6)
    assert part.storage.get(b"short") is None
    assert part.storage.get(b"long") is not None
    assert part.expired_total == 1


def test_replaying_the_changelog_rebuilds_the_same_entries(
    cluster: MemoryCluster, part: ChangelogPartition, backend: Backend, tmp_path: Path
) -> None:
    producer = cluster.producer({})
    for batch in range(3):
        tx = part.transaction()
        for i in range(50):
            tx.set(f"k{i}", f"{batch}-{i}".encode(), ttl=600 if i % 2 else None)
        tx.delete(f"k{batch}")
        part.flush(producer, source_offset=batch)
        producer.flush()
        part.apply()
    replica = backend.open(tmp_path / "replica")
    try:
        for record in changelog(cluster):
            replica.write({record.key: record.entry})
        assert dict(replica.items()) == dict(part.storage.items())
    finally:
        replica.close()


@pytest.mark.parametrize("every", [0.0, 3600.0])
def test_the_disk_backend_checkpoints_at_most_every_interval_and_at_close(
    cluster: MemoryCluster, tmp_path: Path, clock: Clock, every: float
) -> None:
    store = ChangelogStore(
        "app",
        "s",
        RocksDBBackend(),
        consumer_config={},
        make_consumer=cluster.consumer,
        state_dir=tmp_path,
        clock=clock,
        durable_every_s=every,
    )
    part = store.open(0, None)
    opened = read_checkpoint(store.partition_dir(0), TOPIC)
    producer = cluster.producer({})
    for source in (100, 200):
        part.transaction().set(f"k{source}", b"v")
        part.flush(producer, source_offset=source)
        producer.flush()
        part.apply()
    on_disk = read_checkpoint(store.partition_dir(0), TOPIC)
    assert on_disk == (Checkpoint(TOPIC, 2, 200) if every == 0 else opened)
    store.close(0, keep=True)
    assert read_checkpoint(store.partition_dir(0), TOPIC) == Checkpoint(TOPIC, 2, 200)


def test_a_store_opened_on_in_memory_clients_restores_what_it_wrote(
    cluster: MemoryCluster,
) -> None:
    first = store_on(cluster)
    part = first.open(0, None)
    assert first.partition(0) is part
    part.transaction().set("k", b"v")
    producer = cluster.producer({})
    part.flush(producer, source_offset=1)
    producer.flush()
    part.apply()
    assert [r.key for r in cluster.records(TOPIC, 0)] == [b"k"]
    first.close(0, keep=False)
    with pytest.raises(StateError, match="not open"):
        first.partition(0)
    restored = store_on(cluster).open(0, committed_offset=1)
    assert restored.transaction().get("k") == b"v"
    assert restored.restore is not None and restored.restore.applied == 1


def test_the_progress_bar_accepts_restore_progress_off_a_terminal() -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    with RestoreProgressBar(console) as bar:
        bar(TOPIC, 0, 0, 100)
        bar(TOPIC, 0, 100, 100)
        bar(TOPIC, 1, 0, 0)
    assert console.file.getvalue() == ""  # type: ignore[attr-defined]


def test_a_routed_store_reads_and_writes_the_current_records_partition(
    cluster: MemoryCluster,
) -> None:
    store = ChangelogStore(
        "app", "s", MemoryBackend(), consumer_config={}, make_consumer=cluster.consumer
    )
    for p in (0, 1):
        store.open(p, None)
    current = [0]
    routed = RoutedStore(store, lambda: current[0])
    routed.set("k", b"zero")
    current[0] = 1
    assert routed.get("k") is None
    routed.set("k", b"one", ttl=60)
    assert routed.exists("k")
    dedup = Dedup(routed.transaction, ttl=60)
    assert dedup.first("evt", now=0.0)
    current[0] = 0
    assert routed.get("k") == b"zero"
    assert dedup.first("evt", now=0.0)  # ids are per partition, like the input's keys
    routed.delete("k")
    assert store.partition(0).transaction().get("k") is None
    current[0] = 2
    with pytest.raises(StoreClosedError, match="partition 2 is not open"):
        routed.get("k")


def test_a_state_manager_flushes_and_applies_the_partitions_it_is_told(
    cluster: MemoryCluster, tmp_path: Path
) -> None:
    manager = StateManager(
        "app", consumer_config={}, make_consumer=cluster.consumer, state_dir=tmp_path
    )
    manager.add_store("s", MemoryBackend(), source_topic="orders")
    manager.add_store("other", MemoryBackend(), source_topic="payments")
    for p in (0, 1):
        manager.assign("orders", p, None)
    current = [0]
    routed = manager.routed("s", lambda: current[0])
    routed.set("k", b"p0")
    current[0] = 1
    routed.set("k", b"p1")
    producer = cluster.producer({})
    assert manager.flush(producer, {("orders", 0): 7}) == 1  # partition 1 not yet due
    producer.flush()
    manager.check_delivered()
    manager.apply()
    assert manager.stores["s"].partition(0).storage.get(b"k") == Entry(b"p0")
    assert manager.stores["s"].partition(1).storage.get(b"k") is None
    manager.abort()
    assert routed.get("k") is None  # partition 1's unflushed change is dropped
    assert manager.stores["other"].partitions == {}
    with pytest.raises(StateError, match="already has a store"):
        manager.add_store("s", MemoryBackend(), source_topic="orders")
    manager.close(keep=False)


def test_a_range_reads_storage_committed_changes_and_the_transaction_in_key_order(
    cluster: MemoryCluster, part: ChangelogPartition
) -> None:
    """What a window's close reads: every entry of its key range as reads see them now."""
    tx = part.transaction()
    for key in ("w1-a", "w1-b", "w1-c", "w2-a"):
        tx.set(key, key.encode())
    committed_deferred(cluster, part, 10)
    part.apply_some(2)  # two written to the storage, two still handed over
    tx = part.transaction()
    tx.set("w1-0", b"new")
    tx.delete("w1-b")
    tx.set("w1-c", b"changed")
    found = part.range(b"w1", b"w2")
    assert [(k, e.value) for k, e in found] == [
        (b"w1-0", b"new"),
        (b"w1-a", b"w1-a"),
        (b"w1-c", b"changed"),
    ]
    assert part.range(b"w3", b"w4") == []
    assert [k for k, _ in part.storage.range(b"w1", b"w2")] == [b"w1-a", b"w1-b"]


def test_generation_moves_when_writes_are_undone(part: ChangelogPartition) -> None:
    before = part.generation
    tx = part.transaction()
    tx.savepoint()
    tx.rollback()  # nothing written: nothing derived from the entries is stale
    assert part.generation == before
    tx.savepoint()
    tx.set("a", b"1")
    tx.rollback()
    assert part.generation == before + 1
    part.abort()
    assert part.generation == before + 2


def test_an_abort_without_a_transaction_writes_back_what_was_sent_until_a_commit(
    cluster: MemoryCluster,
) -> None:
    # "seen" committed at offset 10; "gone" and "seen" changed and sent ahead, then undone
    # (outputs refused): a restore after the next commit must not bring those changes back.
    producer = cluster.producer({})
    part = store_on(cluster).open(0, None)
    part.transaction().set("seen", b"committed")
    part.flush(producer, source_offset=10)
    producer.flush()
    part.apply()
    part.transaction().set("gone", b"undone")
    part.transaction().set("seen", b"undone")
    part.send(producer, source_offset=15)
    part.abort(rewrite_sent=True)
    part.abort(rewrite_sent=True)  # undone again before anything was written back
    assert part.transaction().get("gone") is None
    assert part.transaction().get("seen") == b"committed"
    part.transaction().set("new", b"redone")
    part.flush(producer, source_offset=12)
    producer.flush()
    part.apply()
    restored = store_on(cluster).open(0, committed_offset=20)
    tx = restored.transaction()
    assert (tx.get("gone"), tx.get("seen"), tx.get("new")) == (None, b"committed", b"redone")


def test_an_abort_of_a_transaction_writes_nothing_back(cluster: MemoryCluster) -> None:
    producer = cluster.producer({})
    part = store_on(cluster).open(0, None)
    part.transaction().set("gone", b"undone")
    part.send(producer, source_offset=15)
    part.abort()  # the transaction that held the change was aborted: nothing to undo there
    assert part.transaction().updates == {}
