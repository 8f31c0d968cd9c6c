"""The exactly-once checkpoint's decisions, with in-memory clients (no broker).

The broker-facing behaviour is covered by the integration tests (SIGKILL, fencing); here
the paths a broker rarely shows on demand: a commit that must be aborted rewinds every
partition to its committed offset and drops the store changes; a retriable commit is
retried; a fatal error stops everything after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.logs import get_logger
from streams.runtime.checkpoint import Checkpointer, ProducerFencedError
from streams.runtime.config import RuntimeConfig
from streams.runtime.offsets import PartitionOffsets
from streams.runtime.sink import OutputSink
from streams.state import MemoryBackend, StateManager
from streams.state.testing import RecordingProducer


class Producer(RecordingProducer):
    """A transactional producer whose commits fail as told."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.fail_commits: list[KafkaError] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def send_offsets_to_transaction(self, offsets: Any, _meta: Any, _timeout: float) -> None:
        self.calls.append("offsets " + ",".join(f"{tp.partition}@{tp.offset}" for tp in offsets))

    def commit_transaction(self, _timeout: float) -> None:
        if self.fail_commits:
            self.calls.append("commit failed")
            raise KafkaException(self.fail_commits.pop(0))
        self.calls.append("commit")

    def abort_transaction(self, _timeout: float) -> None:
        self.calls.append("abort")

    def init_transactions(self, _timeout: float) -> None:
        self.calls.append("init")


class Consumer:
    def __init__(self, committed: dict[int, int]) -> None:
        self.committed_offsets = committed
        self.seeks: list[tuple[int, int]] = []

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.committed_offsets[tp.partition])
            for tp in tps
        ]

    def seek(self, tp: TopicPartition) -> None:
        self.seeks.append((tp.partition, tp.offset))

    def consumer_group_metadata(self) -> object:
        return object()


def setup(committed: dict[int, int]) -> tuple[Checkpointer, Producer, Consumer, StateManager]:
    producer, consumer = Producer(), Consumer(committed)
    state = StateManager("app", consumer_config={})
    state.add_store("seen", MemoryBackend(), source_topic="in")
    partitions = {("in", p): PartitionOffsets("in", p) for p in committed}
    for p in committed:
        state.attach("in", p)
    checkpointer = Checkpointer(
        consumer=consumer,  # type: ignore[arg-type]
        sink=OutputSink(producer),  # type: ignore[arg-type]
        partitions=partitions,
        state=state,
        transactional_id="app-0",
        config=RuntimeConfig("unused:9092"),
        log=get_logger("test"),
    )
    checkpointer._begin()
    return checkpointer, producer, consumer, state


def process(checkpointer: Checkpointer, state: StateManager, partition: int, offset: int) -> None:
    entry = checkpointer.partitions[("in", partition)].begin(offset)
    state.stores["seen"].partition(partition).transaction().set(f"id-{offset}", b"")
    entry.release()


def test_a_commit_that_must_be_aborted_rewinds_every_partition_and_drops_store_changes() -> None:
    checkpointer, producer, consumer, state = setup({0: 10, 1: 20})
    process(checkpointer, state, 0, 10)
    process(checkpointer, state, 1, 20)
    producer.fail_commits = [KafkaError(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True)]
    checkpointer.commit(list(checkpointer.partitions.values()))

    assert producer.calls == ["begin", "offsets 0@11,1@21", "commit failed", "abort", "begin"]
    assert sorted(consumer.seeks) == [(0, 10), (1, 20)]  # read again from the committed
    assert checkpointer.aborts == 1
    fresh = checkpointer.partitions[("in", 0)]
    assert fresh.committed == 10 and fresh.in_flight == 0
    assert not state.stores["seen"].partition(0).transaction().exists("id-10")

    process(checkpointer, state, 0, 10)  # reprocessed, then committed
    checkpointer.commit(list(checkpointer.partitions.values()))
    assert producer.calls[-2:] == ["commit", "begin"]
    assert state.stores["seen"].partition(0).storage.get(b"id-10") is not None


def test_a_retriable_commit_is_retried() -> None:
    checkpointer, producer, _consumer, state = setup({0: 0})
    process(checkpointer, state, 0, 0)
    producer.fail_commits = [KafkaError(KafkaError._TIMED_OUT, retriable=True)]
    checkpointer.commit(list(checkpointer.partitions.values()))
    assert producer.calls == ["begin", "offsets 0@1", "commit failed", "commit", "begin"]
    assert checkpointer.partitions[("in", 0)].committed == 1


def test_a_fenced_producer_stops_and_nothing_commits_after() -> None:
    checkpointer, producer, _consumer, state = setup({0: 0})
    process(checkpointer, state, 0, 0)
    producer.fail_commits = [KafkaError(KafkaError._FENCED, fatal=True)]
    with pytest.raises(ProducerFencedError, match="'app-0' was fenced"):
        checkpointer.commit(list(checkpointer.partitions.values()))
    calls = len(producer.calls)
    checkpointer.commit(list(checkpointer.partitions.values()))  # the revoke on close
    checkpointer.finish(None)
    assert len(producer.calls) == calls
