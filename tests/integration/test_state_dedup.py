"""Dedup on the real broker: an id is processed once across a restart and a partition move.

Each "instance" is a ``StateManager`` driven the way the runtime drives it (assign with the
committed offset, flush at commit, wait for acks, commit, apply, revoke).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streams.cluster import Topics
from streams.state import (
    Backend,
    ChangelogPartitionCountError,
    Dedup,
    MemoryBackend,
    RocksDBBackend,
    StateManager,
)

INPUT = "orders"
WEEK = 7 * 24 * 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Instance:
    """One app instance's state, processing partition ``p`` of ``INPUT`` with dedup."""

    def __init__(
        self, app: str, bootstrap: str, backend: Backend, state_dir: Path, clock: Clock
    ) -> None:
        self.clock = clock
        self.manager = StateManager(
            app, consumer_config={"bootstrap.servers": bootstrap}, state_dir=state_dir, clock=clock
        )
        self.manager.add_store("dedup", backend, source_topic=INPUT)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        self.partition = 0
        self.dedup = Dedup(self.manager.routed("dedup", lambda: self.partition).transaction, WEEK)
        self.processed: list[str] = []

    def process(self, partition: int, offset: int, event_id: str) -> None:
        """Process one input record, then commit (offset + 1) the way the runtime does."""
        self.partition = partition
        if self.dedup.first(event_id, self.clock()):
            self.processed.append(event_id)
        self.manager.flush(self.producer, {(INPUT, partition): offset + 1})
        assert self.producer.flush(30) == 0
        self.manager.check_delivered()
        # (the runtime commits offset + 1 here)
        self.manager.apply()


def test_an_id_sent_three_times_across_a_restart_and_a_move_is_processed_once(
    kafka_bootstrap: str, kafka_admin: AdminClient, app_id: str, tmp_path: Path
) -> None:
    clock = Clock()
    a = Instance(app_id, kafka_bootstrap, RocksDBBackend(), tmp_path / "a", clock)
    a.manager.ensure_changelogs(Topics(kafka_admin), {INPUT: 2})
    a.manager.assign(INPUT, 0, committed_offset=None)
    a.process(0, offset=0, event_id="evt-1")
    a.process(0, offset=1, event_id="evt-2")
    a.manager.close(keep=True)  # instance A stops

    a2 = Instance(app_id, kafka_bootstrap, RocksDBBackend(), tmp_path / "a", clock)
    a2.manager.assign(INPUT, 0, committed_offset=2)  # the restart: local copy + empty tail
    assert a2.manager.stores["dedup"].partition(0).restore.records_read == 0  # type: ignore[union-attr]
    a2.process(0, offset=2, event_id="evt-1")  # the redelivery after the restart
    a2.manager.revoke(INPUT, 0)  # the partition moves to instance B

    b = Instance(app_id, kafka_bootstrap, MemoryBackend(), tmp_path / "b", clock)
    b.manager.assign(INPUT, 0, committed_offset=3)
    b.process(0, offset=3, event_id="evt-1")  # and once more, on the new owner
    b.process(0, offset=4, event_id="evt-3")

    assert a.processed + a2.processed + b.processed == ["evt-1", "evt-2", "evt-3"]
    assert (a2.dedup.duplicates, b.dedup.duplicates) == (1, 1)

    clock.now += WEEK  # the window has passed: the id is new again
    b.process(0, offset=5, event_id="evt-1")
    assert b.processed[-1] == "evt-1"
    b.manager.close(keep=False)


def test_a_wrong_changelog_stops_the_app_before_any_partition_opens(
    kafka_bootstrap: str, kafka_admin: AdminClient, app_id: str, tmp_path: Path
) -> None:
    first = Instance(app_id, kafka_bootstrap, MemoryBackend(), tmp_path, Clock())
    first.manager.ensure_changelogs(Topics(kafka_admin), {INPUT: 2})
    # The input was recreated with 4 partitions: the changelog no longer fits it.
    second = Instance(app_id, kafka_bootstrap, MemoryBackend(), tmp_path, Clock())
    with pytest.raises(ChangelogPartitionCountError, match="has 2 partitions but the input has 4"):
        second.manager.ensure_changelogs(Topics(kafka_admin), {INPUT: 4})
    assert second.manager.stores["dedup"].partitions == {}
