"""Where each partition is: the position past its last finished record, and rewinds."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

from streams.pipeline.commit import Commit
from streams.pipeline.offsets import PartitionOffsets, Partitions
from streams.pipeline.record import Record
from streams.testing.memory import MemoryCluster


class NoCommits:
    def commit(self) -> None:
        raise AssertionError("not due")

    def send_ahead(self) -> None:
        return None


class Calls:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def commit(self) -> None:
        self.calls.append("commit")

    def send_ahead(self) -> None:
        self.calls.append("send_ahead")


def test_the_commit_step_commits_on_schedule_and_sends_ahead_on_the_polls_between() -> None:
    now = [0.0]
    committer = Calls()
    commit = Commit(committer, interval_s=1.0, clock=lambda: now[0])  # type: ignore[arg-type]
    commit.poll()
    now[0] = 0.5
    commit.poll()
    now[0] = 1.0
    commit.poll()
    commit.poll()
    assert committer.calls == ["send_ahead", "send_ahead", "commit", "send_ahead"]


def test_an_idle_consumer_commits_early_only_caught_up_and_with_an_idle_interval() -> None:
    now, at_end = [0.0], [True]
    committer = Calls()
    eager = Commit(  # type: ignore[arg-type]
        committer, interval_s=1.0, clock=lambda: now[0], idle_s=0.1, at_end=lambda: at_end[0]
    )
    eager.idle()  # nothing has passed since the last commit
    now[0], at_end[0] = 0.1, False
    eager.idle()  # the prefetch ran dry in a backlog: not caught up
    at_end[0] = True
    eager.idle()  # caught up and 0.1 s since: commits, long before the interval
    now[0] = 0.15
    eager.idle()
    eager.poll()  # the interval now counts from the early commit
    now[0] = 1.05
    eager.poll()
    assert committer.calls == ["commit", "send_ahead", "send_ahead"]
    patient = Commit(Calls(), interval_s=1.0, clock=lambda: now[0])  # type: ignore[arg-type]
    now[0] = 5.0
    patient.idle()
    assert patient._committer.calls == []  # type: ignore[attr-defined]


def test_caught_up_too_soon_after_a_commit_the_loop_waits_only_until_the_early_commit() -> None:
    """The last records of a burst are readable ``idle_s`` after the last commit, not when
    the loop's wait for records (its poll timeout) runs out."""
    now, at_end = [0.0], [True]
    committer = Calls()
    commit = Commit(  # type: ignore[arg-type]
        committer, interval_s=1.0, clock=lambda: now[0], idle_s=0.1, at_end=lambda: at_end[0]
    )
    assert commit.poll_timeout(0.5) == 0.5  # nothing due
    now[0] = 0.04
    commit.idle()  # caught up 40 ms after the last commit: due at 0.1
    assert committer.calls == []
    assert commit.poll_timeout(0.5) == pytest.approx(0.06)
    assert commit.poll_timeout(0.01) == 0.01  # a shorter wait asked for stays shorter
    at_end[0] = False
    commit.idle()  # records arrived meanwhile: nothing due until caught up again
    assert commit.poll_timeout(0.5) == 0.5
    at_end[0] = True
    commit.idle()
    assert commit.poll_timeout(0.5) == pytest.approx(0.06)
    now[0] = 0.12  # the loop woke late: no negative wait
    assert commit.poll_timeout(0.5) == 0.0
    commit.idle()
    assert committer.calls == ["commit"]
    assert commit.poll_timeout(0.5) == 0.5  # committed: nothing due
    now[0], at_end[0] = 0.15, False
    commit.idle()  # records still to read: no early commit is due
    assert commit.poll_timeout(0.5) == 0.5
    at_end[0] = True
    commit.idle()  # due at 0.22, then the interval's commit comes first
    now[0] = 1.12
    commit.poll()
    assert committer.calls == ["commit", "commit"]
    assert commit.poll_timeout(0.5) == 0.5
    patient = Commit(Calls(), interval_s=1.0, clock=lambda: now[0])  # type: ignore[arg-type]
    patient.idle()
    assert patient.poll_timeout(0.5) == 0.5  # no idle_s: never early


def test_a_partition_is_at_its_end_once_read_to_its_last_fetched_offset() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("t", 3)
    producer = cluster.producer({})
    for partition in (0, 1):
        for _ in range(3):
            producer.produce("t", b"v", partition=partition)
    consumer = cluster.consumer({"group.id": "g"})
    partitions = Partitions(consumer, auto_offset_reset="earliest", timeout=1)
    partitions.assign([("t", 0), ("t", 1), ("t", 2)])  # partition 2 never written
    first, second = partitions.get(("t", 0)), partitions.get(("t", 1))
    assert first is not None and second is not None
    assert not partitions.at_end()  # nothing read yet
    first.position = second.position = 3
    assert partitions.at_end()
    second.position = 2  # one short: a transaction marker may close the partition
    assert partitions.at_end()
    second.position = 1
    assert not partitions.at_end()


def record(offset: int, offsets: PartitionOffsets | None) -> Record:
    r = Record("t", 0, offset, None, b"k", b"v", ())
    r.offsets = offsets
    return r


def test_a_partition_moves_past_each_record_that_went_through_the_chain() -> None:
    po = PartitionOffsets("t", 0, committed=5)
    commit = Commit(NoCommits(), interval_s=3600)  # type: ignore[arg-type]
    assert po.position is None and po.pending_commit() is None
    commit.submit(record(5, po))
    commit.submit(record(9, po))  # offsets may have gaps (compaction, transactions)
    assert po.position == 10 and po.pending_commit() == 10
    commit.submit(record(2, None))  # let out of a waiting room: moves nothing
    assert po.position == 10
    po.committed = 10
    assert po.pending_commit() is None


def test_rewinding_seeks_to_the_committed_offsets_and_forgets_progress() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("t", 2)
    consumer = cluster.consumer({"group.id": "g"})
    consumer.assign([TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)])
    consumer.commit(offsets=[TopicPartition("t", 0, 3)], asynchronous=False)
    partitions = Partitions(consumer, auto_offset_reset="earliest", timeout=1)
    partitions.assign([("t", 0), ("t", 1)])
    for key in (("t", 0), ("t", 1)):
        po = partitions.get(key)
        assert po is not None
        po.position = 7
    assert partitions.rewind_to_committed(exclude=[("t", 1)]) == [("t", 0)]
    first, second = partitions.get(("t", 0)), partitions.get(("t", 1))
    assert first is not None and (first.position, first.committed) == (None, 3)
    assert second is not None and second.position == 7  # excluded: untouched
    (tp,) = consumer.position([TopicPartition("t", 0)])
    assert tp.offset == 3


class Recorded:
    """A memory consumer that notes which partitions' committed offsets were read and
    how the partitions were assigned."""

    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        self.read: list[tuple[str, int]] = []
        self.assigned: list[tuple[str, list[tuple[str, int, int]]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)

    def committed(self, partitions: list[TopicPartition], timeout: float = 1) -> Any:
        self.read += [(tp.topic, tp.partition) for tp in partitions]
        return self._consumer.committed(partitions, timeout=timeout)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.append(("assign", [(p.topic, p.partition, p.offset) for p in partitions]))
        self._consumer.assign(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.append(
            ("incremental_assign", [(p.topic, p.partition, p.offset) for p in partitions])
        )
        self._consumer.incremental_assign(partitions)


@pytest.mark.parametrize("incremental", [True, False])
def test_assigned_partitions_start_at_the_committed_offsets_read_once(incremental: bool) -> None:
    """librdkafka is handed each partition's offset: it reads none itself (its own read can
    leave a partition never fetched when the coordinator moves, librdkafka #5586). One
    never committed starts at the logical beginning, which librdkafka resolves."""
    cluster = MemoryCluster()
    cluster.create_topic("t", 2)
    producer = cluster.producer({})
    for i in range(5):
        producer.produce("t", b"%d" % i, partition=0)
    setup = cluster.consumer({"group.id": "g"})
    setup.commit(offsets=[TopicPartition("t", 0, 3)], asynchronous=False)
    consumer = Recorded(cluster.consumer({"group.id": "g"}))
    partitions = Partitions(
        consumer, auto_offset_reset="earliest", timeout=1, incremental=incremental
    )
    keys = [("t", 0), ("t", 1)]
    partitions.assign(keys)
    partitions.load_committed([("t", 0)])  # as a committer restoring stores does
    partitions.start(keys)
    assert consumer.read == [("t", 0), ("t", 1)]  # each once: t[0] not read again
    call = "incremental_assign" if incremental else "assign"
    assert consumer.assigned == [(call, [("t", 0, 3), ("t", 1, OFFSET_BEGINNING)])]
    never = partitions.get(("t", 1))
    assert never is not None and never.committed is None  # as without the read
    msg = consumer.poll(0)
    assert msg is not None and (msg.partition(), msg.offset()) == (0, 3)


def test_a_partition_without_a_commit_starts_where_auto_offset_reset_says() -> None:
    """A restore needs a number: the first or next offset. The consumer is handed the
    logical beginning or end all the same, without a second read (handed the number, one
    of two instances of a new group ran 10-15% idle)."""
    cluster = MemoryCluster()
    cluster.create_topic("t", 1)
    producer = cluster.producer({})
    for i in range(4):
        producer.produce("t", b"%d" % i, partition=0)
    consumer = Recorded(cluster.consumer({"group.id": "g"}))
    latest = Partitions(consumer, auto_offset_reset="latest", timeout=1)
    earliest = Partitions(consumer, auto_offset_reset="earliest", timeout=1)
    for partitions, number, logical in ((latest, 4, OFFSET_END), (earliest, 0, OFFSET_BEGINNING)):
        consumer.read, consumer.assigned = [], []
        partitions.assign([("t", 0)])
        # read for a restore (as a committer restoring stores does): resolved to a number
        assert partitions.load_committed([("t", 0)]) == {("t", 0): number}
        partitions.start([("t", 0)])
        assert consumer.read == [("t", 0)]  # once
        assert consumer.assigned == [("incremental_assign", [("t", 0, logical)])]


def test_a_partition_committed_once_starts_at_its_committed_offset() -> None:
    """The logical offset is for a partition never committed: once a commit of this
    instance took, a later assignment starts at it."""
    cluster = MemoryCluster()
    cluster.create_topic("t", 1)
    consumer = Recorded(cluster.consumer({"group.id": "g"}))
    partitions = Partitions(consumer, auto_offset_reset="earliest", timeout=1)
    partitions.assign([("t", 0)])
    partitions.load_committed([("t", 0)])
    po = partitions.get(("t", 0))
    assert po is not None and po.from_reset
    po.committed_now(2)
    partitions.start([("t", 0)])
    assert consumer.assigned == [("incremental_assign", [("t", 0, 2)])]
