"""The committers' decisions, on in-memory clients (no broker).

The broker-facing behaviour is covered by the integration tests (SIGKILL, fencing,
outages); here the paths a broker rarely shows on demand: an exactly-once commit that must
be aborted rewinds every partition to its committed offset and drops the store changes; a
retriable commit is retried; a fatal error stops everything after it; a checkpoint
flushes store changes whose partition has no new record, and leaves out a partition whose
write failed; recovery after an outage undoes everything since the last commit, whichever
the committer, and restores the stores of a partition whose restore the outage interrupted.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.cluster import Topics
from streams.logs import get_logger
from streams.observability.metrics import RuntimeMetrics
from streams.pipeline.commit import CommitterWrapper
from streams.pipeline.errors import BrokerUnavailable, DeliveryError
from streams.pipeline.offsets import Partitions
from streams.pipeline.produce import OutputSink
from streams.runtime.commit import (
    CheckpointCommitter,
    CommitContext,
    OffsetCommitter,
    ProducerFencedError,
    TransactionCommitter,
)
from streams.state import MemoryBackend, StateManager
from streams.state.changelog import decode_record
from streams.testing.memory import MemoryCluster, MemoryConsumer, MemoryProducer, StoredRecord
from streams.testing.memory.admin import MemoryAdmin

CHANGELOG = "app-seen-changelog"
TRANSACTION_TIMEOUT_S = 10.0


def source_offset(record: StoredRecord) -> int | None:
    """The input position a changelog record is tagged with."""
    decoded = decode_record(
        record.key, record.value, record.headers, topic=CHANGELOG, partition=0, offset=0
    )
    return decoded.source_offset


class Producer(MemoryProducer):
    """A memory producer that records its transactional calls."""

    calls: list[str]

    def begin_transaction(self) -> None:
        self.calls.append("begin")
        super().begin_transaction()

    def send_offsets_to_transaction(self, offsets: Any, meta: Any, timeout: float = -1) -> None:
        self.calls.append("offsets " + ",".join(f"{tp.partition}@{tp.offset}" for tp in offsets))
        super().send_offsets_to_transaction(offsets, meta, timeout)

    def commit_transaction(self, timeout: float = -1) -> None:
        try:
            super().commit_transaction(timeout)
        except Exception:
            self.calls.append("commit failed")
            raise
        self.calls.append("commit")

    def abort_transaction(self, timeout: float = -1) -> None:
        self.calls.append("abort")
        super().abort_transaction(timeout)


class Setup:
    """Topic ``in`` with the group's committed offsets, a ``seen`` store, a committer."""

    def __init__(self, committed: dict[int, int], *, exactly_once: bool) -> None:
        self.cluster = cluster = MemoryCluster()
        cluster.create_topic("in", len(committed))
        self.consumer: MemoryConsumer = cluster.consumer({"group.id": "app"})
        self.consumer.assign([TopicPartition("in", p, 0) for p in committed])
        self.consumer.commit(
            offsets=[TopicPartition("in", p, o) for p, o in committed.items()],
            asynchronous=False,
        )
        self.producer = self.new_producer(exactly_once)
        self.state = StateManager("app", consumer_config={}, make_consumer=cluster.consumer)
        self.state.add_store("seen", MemoryBackend(), source_topic="in")
        self.partitions = Partitions(self.consumer, auto_offset_reset="earliest", timeout=1)
        keys = [("in", p) for p in committed]
        self.partitions.assign(keys)
        self.sink = OutputSink(self.producer)
        context = CommitContext(
            self.consumer,
            Topics(MemoryAdmin(cluster)),
            self.sink,
            lambda: self.new_producer(exactly_once),  # after an outage
            self.partitions,
            1.0,
            get_logger("test"),
        )
        self.context = context
        self.committer: TransactionCommitter | CheckpointCommitter | OffsetCommitter
        self.now = 0.0  # the committer's clock (a transaction's age)
        if exactly_once:
            self.committer = TransactionCommitter(
                context,
                self.state,
                "app-0",
                transaction_timeout_s=TRANSACTION_TIMEOUT_S,
                clock=lambda: self.now,
            )
        else:
            self.committer = CheckpointCommitter(context, self.state)
        self.committer.start()
        self.committer.assigned(keys)

    def new_producer(self, exactly_once: bool) -> Producer:
        self.producer = Producer(
            self.cluster, {"transactional.id": "app-0"} if exactly_once else {}
        )
        self.producer.calls = []
        return self.producer

    def process(self, partition: int, offset: int) -> None:
        """What a record's attempt and the Commit step do: a store write, the position."""
        po = self.partitions.get(("in", partition))
        assert po is not None
        self.store(partition).set(f"id-{offset}", b"")
        po.position = offset + 1

    def store(self, partition: int) -> Any:
        return self.state.stores["seen"].partition(partition).transaction()

    def committed(self, partition: int) -> int | None:
        return self.cluster.committed("app", "in", partition)


def test_a_commit_that_must_be_aborted_rewinds_every_partition_and_drops_store_changes() -> None:
    s = Setup({0: 10, 1: 20}, exactly_once=True)
    s.process(0, 10)
    s.process(1, 20)
    s.producer.fail_commits(KafkaError(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True))
    s.committer.commit()

    assert s.producer.calls == ["begin", "offsets 0@11,1@21", "commit failed", "abort", "begin"]
    positions = s.consumer.position([TopicPartition("in", 0), TopicPartition("in", 1)])
    assert [(tp.partition, tp.offset) for tp in positions] == [(0, 10), (1, 20)]  # read again
    assert isinstance(s.committer, TransactionCommitter) and s.committer.aborts == 1
    fresh = s.partitions.get(("in", 0))
    assert fresh is not None and fresh.committed == 10 and fresh.position is None
    assert not s.store(0).exists("id-10")
    assert s.cluster.records(CHANGELOG) == []  # the aborted changelog records are invisible

    s.process(0, 10)  # reprocessed, then committed
    s.committer.commit()
    assert s.producer.calls[-2:] == ["commit", "begin"]
    assert s.store(0).exists("id-10")  # readable at once, through the committed changes
    s.committer.send_ahead()  # the next poll writes them to the local store
    assert s.state.stores["seen"].partition(0).storage.get(b"id-10") is not None
    assert s.committed(0) == 11 and [r.key for r in s.cluster.records(CHANGELOG)] == [b"id-10"]


def test_a_retriable_commit_is_retried() -> None:
    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.producer.fail_commits(KafkaError(KafkaError._TIMED_OUT, retriable=True))
    s.committer.commit()
    assert s.producer.calls == ["begin", "offsets 0@1", "commit failed", "commit", "begin"]
    committed = s.partitions.get(("in", 0))
    assert committed is not None and committed.committed == 1 and s.committed(0) == 1


def test_a_commit_timed_out_while_the_cluster_is_silent_is_an_outage_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not tried again: each try would wait out its whole timeout with the broker away."""
    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.producer.fail_commits(KafkaError(KafkaError._TIMED_OUT, retriable=True))

    def silent(*_args: Any, **_kwargs: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    monkeypatch.setattr(s.consumer, "list_topics", silent)
    with pytest.raises(BrokerUnavailable, match="committing a transaction"):
        s.committer.commit()
    assert s.producer.calls == ["begin", "offsets 0@1", "commit failed"]
    monkeypatch.undo()  # the broker is back
    assert_redone_by_a_new_producer(s)


def test_a_fenced_producer_stops_and_nothing_commits_after() -> None:
    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.producer.fail_commits(KafkaError(KafkaError._FENCED, fatal=True))
    with pytest.raises(ProducerFencedError, match="'app-0' was fenced"):
        s.committer.commit()
    calls = len(s.producer.calls)
    s.committer.commit()  # the revoke on close
    s.committer.finish(None)
    assert len(s.producer.calls) == calls
    assert s.committed(0) == 0


def assert_redone_by_a_new_producer(s: Setup) -> None:
    """After an outage met in partition 0's first record: recovery's new producer redoes
    the work from the last commit."""
    old = s.producer
    s.committer.recover()
    assert s.producer is not old and s.sink.producer is s.producer
    assert s.committed(0) == 0
    s.process(0, 0)  # processed again, from the committed offset
    s.committer.commit()
    assert s.committed(0) == 1


def test_fenced_after_the_transaction_timeout_is_an_outage_and_a_new_producer_goes_on() -> None:
    """The broker aborts a transaction open past ``transaction.timeout.ms`` (a commit that
    waited out its coordinator's move) and bumps the epoch: librdkafka says fenced, but no
    other instance took over. Recovery's new producer redoes the work from the last
    commit; fenced any sooner still stops the instance (the test above)."""
    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.now = TRANSACTION_TIMEOUT_S  # the commit below ends a transaction this old
    s.producer.fail_commits(KafkaError(KafkaError._FENCED, fatal=True))
    with pytest.raises(BrokerUnavailable, match="the broker timed out"):
        s.committer.commit()
    assert_redone_by_a_new_producer(s)


def test_a_write_fenced_after_the_transaction_timeout_is_an_outage_sooner_a_refusal() -> None:
    """A step that blocked past ``transaction.timeout.ms``: the broker aborted the
    transaction, and the next write of the old producer is fenced. That is an outage
    (recovery's new producer redoes the work); a write fenced any sooner is a refusal,
    which stops the instance."""
    fenced = KafkaError(KafkaError._FENCED, fatal=True)
    s = Setup({0: 0}, exactly_once=True)
    s.producer.fail_deliveries(1, fenced)
    s.sink.send("out", None, b"v", [])
    s.sink.poll()
    with pytest.raises(DeliveryError, match="refused"):
        s.sink.raise_errors()

    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.now = TRANSACTION_TIMEOUT_S  # the open transaction is this old when the write fails
    s.producer.fail_deliveries(1, fenced)
    s.sink.send("out", None, b"v", [])
    s.sink.poll()
    with pytest.raises(BrokerUnavailable, match="not delivered"):
        s.sink.raise_errors()
    assert_redone_by_a_new_producer(s)


def test_a_checkpoint_flushes_store_changes_of_a_partition_without_new_records() -> None:
    # A record of a retry tier writes the stores of its input partition, whose own
    # position does not move: its changes still go with this checkpoint.
    s = Setup({0: 5}, exactly_once=False)
    s.store(0).set("wait:k", b"room")
    s.committer.commit()
    (written,) = s.cluster.records(CHANGELOG)
    assert written.key == b"wait:k" and s.committed(0) == 5
    s.committer.send_ahead()  # the next poll writes the committed change locally
    assert s.state.stores["seen"].partition(0).storage.get(b"wait:k") is not None


def test_a_checkpoint_commits_nothing_while_a_write_failed() -> None:
    s = Setup({0: 0, 1: 0}, exactly_once=False)
    s.process(0, 0)
    s.process(1, 0)
    s.producer.fail_deliveries(1, KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    s.sink.send("out", key=b"k", value=b"v", headers=[])
    with pytest.raises(DeliveryError, match="refused an output"):
        s.committer.commit()
    assert s.committed(0) == 0 and s.committed(1) == 0
    # The store changes went out with the outputs (one wait for both), tagged past the
    # committed offsets: a restore skips them, as it does any uncommitted checkpoint's.
    tags = [source_offset(r) for r in s.cluster.records(CHANGELOG)]
    assert tags == [1, 1]


def test_store_changes_are_sent_ahead_between_checkpoints_tagged_with_their_position() -> None:
    s = Setup({0: 0}, exactly_once=False)
    s.process(0, 0)
    s.committer.send_ahead()  # a poll between commits
    (ahead,) = s.cluster.records(CHANGELOG)
    assert ahead.key == b"id-0" and source_offset(ahead) == 1
    assert s.committed(0) == 0  # sent, not committed
    s.process(0, 1)
    s.committer.commit()
    assert [r.key for r in s.cluster.records(CHANGELOG)] == [b"id-0", b"id-1"]
    assert s.committed(0) == 2
    s.committer.send_ahead()  # the next poll writes the committed changes locally
    assert s.state.stores["seen"].partition(0).storage.get(b"id-0") is not None


def test_exactly_once_sends_ahead_into_the_open_transaction() -> None:
    s = Setup({0: 0}, exactly_once=True)
    s.process(0, 0)
    s.committer.send_ahead()
    assert s.cluster.records(CHANGELOG) == []  # in the transaction: not visible yet
    s.producer.fail_commits(KafkaError(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True))
    s.committer.commit()
    assert s.cluster.records(CHANGELOG) == []  # aborted with it
    s.process(0, 0)
    s.committer.send_ahead()
    s.committer.commit()
    assert [r.key for r in s.cluster.records(CHANGELOG)] == [b"id-0"] and s.committed(0) == 1


@pytest.mark.parametrize("kind", ["offsets", "checkpoint", "transaction"])
def test_recovery_after_an_outage_undoes_everything_since_the_last_commit(kind: str) -> None:
    s = Setup({0: 10, 1: 20}, exactly_once=kind == "transaction")
    if kind == "offsets":
        s.committer = OffsetCommitter(s.context)
    s.process(0, 10)
    s.committer.commit()
    s.process(0, 11)
    s.process(1, 20)
    s.committer.send_ahead()

    s.committer.recover()
    positions = s.consumer.position([TopicPartition("in", 0), TopicPartition("in", 1)])
    assert [(tp.partition, tp.offset) for tp in positions] == [(0, 11), (1, 20)]  # read again
    rewound = s.partitions.get(("in", 0))
    assert rewound is not None and rewound.committed == 11 and rewound.position is None
    if kind != "offsets":  # the store changes since the commit are dropped
        assert s.store(0).exists("id-10")
        assert not s.store(0).exists("id-11") and not s.store(1).exists("id-20")

    s.process(0, 11)  # processed again, then committed as if the outage never was
    s.committer.commit()
    assert s.committed(0) == 12 and s.committed(1) == 20


class Unanswered(MemoryConsumer):
    """A restore consumer whose changelog offsets time out (its leader's node lost)."""

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))


@pytest.mark.parametrize("exactly_once", [False, True])
def test_a_restore_the_broker_does_not_answer_is_done_by_the_recovery(exactly_once: bool) -> None:
    s = Setup({0: 10, 1: 20}, exactly_once=exactly_once)
    s.process(1, 20)
    s.committer.commit()  # id-20 is in partition 1's changelog
    s.state.revoke("in", 1, keep=False)  # partition 1 leaves, its local state with it
    s.partitions.remove([("in", 1)])
    store = s.state.stores["seen"]
    store.timeout = 0.2
    store.make_consumer = lambda config: Unanswered(s.cluster, config)

    s.partitions.assign([("in", 1)])  # back, while the broker does not answer
    with pytest.raises(BrokerUnavailable, match=r"app-seen-changelog\[1\]"):
        s.committer.assigned([("in", 1)])
    assert s.state.closed([("in", 0), ("in", 1)]) == [("in", 1)]  # no record of it processed

    store.make_consumer = s.cluster.consumer  # the broker answers again
    s.committer.recover()
    assert s.state.closed([("in", 0), ("in", 1)]) == []
    assert s.store(1).exists("id-20")  # restored from the changelog, as if nothing happened
    s.process(1, 21)
    s.committer.commit()
    assert s.committed(1) == 22


def test_a_wrapped_committer_is_called_and_read_through_every_wrapper() -> None:
    # The runtime's committer is wrapped (metrics time it, concurrency wraps that): each
    # call reaches the transaction, and its abort count reaches the metrics.
    s = Setup({0: 10}, exactly_once=True)
    metrics = RuntimeMetrics("app")
    committer = CommitterWrapper(metrics.timed(s.committer))
    s.process(0, 10)
    s.producer.fail_commits(KafkaError(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True))
    committer.commit()
    assert committer.aborts == 1
    timed = metrics.registry.get_sample_value(
        "streams_commit_seconds_count", {"app_id": "app", "kind": "transaction"}
    )
    assert timed == 1
