"""A changelog written in transactions ends with a marker that no record reaches: a
restore sees its end in the end-of-partition event, and waits for nothing more.

librdkafka's batch ``consume`` returns only with a full batch or at its timeout; a
consumer that counts the timeouts it would wait out stands in for it (the in-memory one
never waits). Restarting under exactly-once used to wait 0.5 s per changelog partition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streams.state import MemoryBackend
from streams.state.restore import restore_partition
from streams.testing.memory import MemoryCluster, MemoryConsumer

TOPIC = "app-s-changelog"


class BatchWaits(MemoryConsumer):
    """``consume`` as librdkafka's: fewer records than asked for means the timeout was
    waited out (counted in ``waited``, not slept)."""

    waited = 0.0

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        batch = super().consume(num_messages, timeout)
        if len(batch) < num_messages and timeout > 0:
            self.waited += timeout
        return batch


def transactional_changelog(records: int) -> MemoryCluster:
    """``records`` changes in one committed transaction: its marker is the last offset."""
    cluster = MemoryCluster()
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer({"transactional.id": "app-0"})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(records):
        producer.produce(TOPIC, key=f"k{i}".encode(), value=b"v", partition=0)
    producer.commit_transaction()
    return cluster


def restore_from(cluster: MemoryCluster, start: int) -> tuple[float, list[bytes], int]:
    consumer = BatchWaits(cluster, {"group.id": "restore", "enable.partition.eof": True})
    storage = MemoryBackend().open(Path("unused"))
    result = restore_partition(
        consumer,  # type: ignore[arg-type]
        storage,
        topic=TOPIC,
        partition=0,
        start_offset=start,
        end_offset=cluster.end_offset(TOPIC, 0),
        committed_offset=None,
    )
    return consumer.waited, sorted(k for k, _ in storage.items()), result.end_offset


def test_a_restore_from_the_marker_at_the_end_waits_for_nothing() -> None:
    cluster = transactional_changelog(3)
    assert cluster.end_offset(TOPIC, 0) == 4  # three records, then the marker at 3
    # A local checkpoint at the marker (what a commit under exactly-once leaves behind).
    waited, keys, end = restore_from(cluster, 3)
    assert (waited, keys, end) == (0.0, [], 4)


def test_a_restore_of_a_transactional_changelog_stops_at_its_end_at_once() -> None:
    waited, keys, end = restore_from(transactional_changelog(3), 0)
    assert (waited, keys, end) == (0.0, [b"k0", b"k1", b"k2"], 4)
