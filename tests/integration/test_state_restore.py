"""Stores on the real broker: write through the changelog, drop local state, restore.

Each test owns a unique app id, so its changelog topics (``<app>-<store>-changelog``) are
its own; they are deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streams.cluster import Topics, delete_topics
from streams.state import (
    Backend,
    ChangelogPartition,
    ChangelogStore,
    MemoryBackend,
    RocksDBBackend,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def app_id(kafka_admin: AdminClient) -> Iterator[str]:
    app = f"state-{uuid.uuid4().hex[:10]}"
    yield app
    delete_topics(
        kafka_admin, [t for t in kafka_admin.list_topics(timeout=10).topics if t.startswith(app)]
    )


@pytest.fixture
def producer(kafka_bootstrap: str) -> Producer:
    return Producer(
        {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )


@dataclass
class Env:
    """One test's broker, app id (so its changelogs are its own), producer and disk."""

    bootstrap: str
    admin: AdminClient
    app: str
    producer: Producer
    tmp: Path

    def store(
        self, backend: Backend, where: str = "a", clock: Clock | None = None
    ) -> ChangelogStore:
        return ChangelogStore(
            self.app,
            "kv",
            backend,
            consumer_config={"bootstrap.servers": self.bootstrap},
            state_dir=self.tmp / where,
            source_topic="input",
            clock=clock or Clock(),
        )


@pytest.fixture
def env(
    kafka_bootstrap: str, kafka_admin: AdminClient, app_id: str, producer: Producer, tmp_path: Path
) -> Env:
    return Env(kafka_bootstrap, kafka_admin, app_id, producer, tmp_path)


@pytest.fixture(params=["memory", "rocksdb"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return MemoryBackend() if request.param == "memory" else RocksDBBackend()


def checkpoint(part: ChangelogPartition, producer: Producer, source_offset: int) -> None:
    """What the runtime does at a commit: flush, wait for acks, (commit input), apply."""
    part.flush(producer, source_offset)
    assert producer.flush(30) == 0
    part.check_delivered()
    part.apply()


def write_batches(
    part: ChangelogPartition, producer: Producer, batches: int, per_batch: int
) -> None:
    for b in range(batches):
        tx = part.transaction()
        for i in range(per_batch):
            tx.set(f"key-{i}", f"batch {b} value {i}".encode(), ttl=3600 if i % 3 == 0 else None)
        tx.delete(f"key-{b}")
        checkpoint(part, producer, source_offset=(b + 1) * 100)


def test_a_store_restores_equal_contents_after_its_local_state_is_dropped(
    env: Env, backend: Backend
) -> None:
    store = env.store(backend)
    assert store.ensure_changelog(Topics(env.admin), input_partitions=2)
    part = store.open(1, committed_offset=None)
    assert part.restore is not None and part.restore.records_read == 0
    write_batches(part, env.producer, batches=4, per_batch=200)
    before = dict(part.storage.items())
    assert len(before) == 199  # each batch deletes one key; only the last one stays deleted
    store.close(1, keep=False)

    fresh = env.store(backend)
    progress: list[tuple[int, int]] = []
    fresh.progress = lambda _topic, _partition, done, total: progress.append((done, total))
    restored = fresh.open(1, committed_offset=400)
    try:
        assert dict(restored.storage.items()) == before
        assert progress[0] == (0, 800)
        assert progress[-1] == (800, 800)
        assert restored.restore is not None
        assert restored.restore.records_read == 4 * 200
        assert restored.restore.skipped == 0
        assert restored.transaction().get("key-7") == b"batch 3 value 7"
    finally:
        fresh.close_all(keep=False)


def test_entries_tagged_past_the_committed_offset_are_skipped_on_restore(
    env: Env, backend: Backend
) -> None:
    store = env.store(backend)
    store.ensure_changelog(Topics(env.admin), input_partitions=1)
    part = store.open(0, committed_offset=None)
    tx = part.transaction()
    tx.set("balance", b"10")
    tx.set("committed-only", b"yes")
    checkpoint(part, env.producer, source_offset=50)  # input committed up to 50
    # The next interval reaches the changelog, then the instance dies before committing 80.
    tx = part.transaction()
    tx.set("balance", b"99")
    tx.set("uncommitted", b"no")
    tx.delete("committed-only")
    part.flush(env.producer, source_offset=80)
    assert env.producer.flush(30) == 0
    part.abort()
    store.close(0, keep=False)

    fresh = env.store(backend)
    restored = fresh.open(0, committed_offset=50)
    try:
        tx = restored.transaction()
        assert tx.get("balance") == b"10"
        assert tx.get("committed-only") == b"yes"
        assert tx.get("uncommitted") is None
        assert restored.restore is not None
        assert (restored.restore.applied, restored.restore.skipped) == (2, 3)
    finally:
        fresh.close_all(keep=False)


def test_a_restart_restores_only_the_tail_after_the_local_checkpoint(env: Env) -> None:
    disk = env.store(RocksDBBackend(), "instance-a")
    disk.ensure_changelog(Topics(env.admin), input_partitions=1)
    part = disk.open(0, committed_offset=None)
    write_batches(part, env.producer, batches=3, per_batch=100)  # changelog offsets 0..299
    disk.close(0, keep=True)

    # Meanwhile the partition ran elsewhere and wrote 40 more records.
    other = env.store(MemoryBackend(), "instance-b")
    moved = other.open(0, committed_offset=300)
    assert moved.restore is not None and moved.restore.records_read == 300
    tx = moved.transaction()
    for i in range(40):
        tx.set(f"late-{i}", b"x")
    checkpoint(moved, env.producer, source_offset=340)
    expected = dict(moved.storage.items())
    other.close_all(keep=False)

    restarted = env.store(RocksDBBackend(), "instance-a")
    back = restarted.open(0, committed_offset=340)
    try:
        assert back.restore is not None
        assert back.restore.start_offset == 300
        assert back.restore.records_read == 40
        assert dict(back.storage.items()) == expected
    finally:
        restarted.close_all(keep=True)

    # Nothing new since: a second restart reads nothing at all.
    again = env.store(RocksDBBackend(), "instance-a")
    try:
        assert again.open(0, committed_offset=340).restore.records_read == 0  # type: ignore[union-attr]
    finally:
        again.close_all(keep=False)


def test_a_partition_kept_in_memory_on_revoke_comes_back_with_the_tail_only(env: Env) -> None:
    store = env.store(MemoryBackend())
    store.ensure_changelog(Topics(env.admin), input_partitions=1)
    write_batches(store.open(0, committed_offset=None), env.producer, batches=2, per_batch=50)
    store.close(0, keep=True)
    back = store.open(0, committed_offset=200)
    try:
        assert back.restore is not None and back.restore.records_read == 0
        assert back.transaction().get("key-10") == b"batch 1 value 10"
    finally:
        store.close_all(keep=False)


def test_local_state_ahead_of_the_committed_input_is_rebuilt_from_the_changelog(env: Env) -> None:
    store = env.store(RocksDBBackend())
    store.ensure_changelog(Topics(env.admin), input_partitions=1)
    part = store.open(0, committed_offset=None)
    part.transaction().set("k", b"old")
    checkpoint(part, env.producer, source_offset=10)
    part.transaction().set("k", b"new")
    checkpoint(part, env.producer, source_offset=20)
    store.close(0, keep=True)

    # The group's offsets were reset to 10 (say, by a replay): state must match input 10.
    reset = env.store(RocksDBBackend())
    back = reset.open(0, committed_offset=10)
    try:
        assert back.restore is not None
        assert (back.restore.start_offset, back.restore.records_read) == (0, 2)
        assert back.transaction().get("k") == b"old"
    finally:
        reset.close_all(keep=False)


def test_expiry_tombstones_survive_a_restore(env: Env, backend: Backend) -> None:
    clock = Clock()
    store = env.store(backend, clock=clock)
    store.ensure_changelog(Topics(env.admin), input_partitions=1)
    part = store.open(0, committed_offset=None)
    part.transaction().set("short", b"1", ttl=5)
    part.transaction().set("long", b"2", ttl=500)
    checkpoint(part, env.producer, source_offset=1)
    clock.now += 10
    checkpoint(part, env.producer, source_offset=2)  # nothing written but the expiry
    store.close(0, keep=False)

    fresh = env.store(backend, clock=clock)
    restored = fresh.open(0, committed_offset=2)
    try:
        assert {k for k, _ in restored.storage.items()} == {b"long"}
        assert restored.restore is not None and restored.restore.records_read == 3
    finally:
        fresh.close_all(keep=False)
