"""The in-memory Kafka the TestDriver runs the runtime on (``streams.testing.memory``).

What a driver test relies on being the broker's behaviour: offsets and partitions, when
delivery reports arrive, the order records are read in, group offsets, rebalance
callbacks, transactions as read_committed readers see them, fencing, injected faults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from streams.testing.memory import MemoryCluster, MemoryConsumer, MemoryProducer, TxState
from streams.topology.partitioning import partition_for

NOW_MS = 1_700_000_000_000


class Reports:
    """A delivery callback that keeps what it is given."""

    def __init__(self) -> None:
        self.seen: list[tuple[KafkaError | None, Message]] = []

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        self.seen.append((err, msg))

    def offsets(self) -> list[tuple[int | None, int | None]]:
        return [(m.partition(), m.offset()) for _, m in self.seen]


def cluster(partitions: int = 1) -> MemoryCluster:
    return MemoryCluster(partitions=partitions, clock_ms=lambda: NOW_MS)


def consumer(c: MemoryCluster, group: str = "g", **config: Any) -> MemoryConsumer:
    return c.consumer({"group.id": group, **{k.replace("_", "."): v for k, v in config.items()}})


def values(batch: list[Message]) -> list[bytes | None]:
    return [m.value() for m in batch if m.error() is None]


def error_code(exc: pytest.ExceptionInfo[KafkaException]) -> int:
    return int(exc.value.args[0].code())


def transactional(c: MemoryCluster, tid: str = "app-0") -> MemoryProducer:
    producer = c.producer({"transactional.id": tid})
    producer.init_transactions(10)
    return producer


# -- producing ---------------------------------------------------------------------------
def test_keys_pick_the_partition_murmur2_does_and_offsets_count_per_partition() -> None:
    c = cluster(partitions=6)
    producer = c.producer({})
    reports = Reports()
    keys = [f"order-{i}".encode() for i in range(40)]
    for key in keys:
        producer.produce("orders", b"v", key, on_delivery=reports)
    producer.produce("orders", value=b"no key", on_delivery=reports)
    producer.produce("orders", b"forced", b"order-1", 5, on_delivery=reports)
    producer.flush()

    expected: list[tuple[int, int]] = []
    per_partition = [0] * 6
    for p in [partition_for(k, 6) for k in keys] + [0, 5]:
        expected.append((p, per_partition[p]))
        per_partition[p] += 1
    assert reports.offsets() == expected
    assert len({p for p, _ in expected}) > 1  # the keys really spread over partitions
    assert [r.offset for r in c.records("orders", 5)] == list(range(per_partition[5]))
    assert c.records("orders", 5)[-1].value == b"forced"


def test_delivery_reports_arrive_only_inside_poll_and_flush_with_offsets() -> None:
    c = cluster()
    producer = c.producer({})
    reports = Reports()
    producer.produce("t", b"a", on_delivery=reports)
    producer.produce("t", b"b", callback=reports, headers={"h": "x"})
    assert reports.seen == []
    assert len(producer) == 2
    assert [r.value for r in c.records("t")] == [b"a", b"b"]  # written at produce time

    assert producer.poll(0) == 2
    assert len(producer) == 0
    [(err_a, a), (err_b, b)] = reports.seen
    assert err_a is None and err_b is None
    assert isinstance(a, Message)
    assert (a.topic(), a.partition(), a.offset(), a.value()) == ("t", 0, 0, b"a")
    assert (b.offset(), b.headers()) == (1, [("h", b"x")])
    assert a.headers() is None  # as librdkafka reports a record without headers
    assert a.timestamp() == (TIMESTAMP_CREATE_TIME, NOW_MS)

    producer.produce("t", b"c", on_delivery=reports, timestamp=123)
    assert producer.flush(5) == 0
    assert reports.seen[-1][1].timestamp() == (TIMESTAMP_CREATE_TIME, 123)
    assert producer.poll(0) == 0


def test_a_record_for_a_partition_the_topic_lacks_is_refused_at_produce() -> None:
    c = cluster(partitions=2)
    producer = c.producer({})
    with pytest.raises(KafkaException) as exc:
        producer.produce("t", b"v", partition=2)
    assert error_code(exc) == KafkaError._UNKNOWN_PARTITION
    assert c.records("t") == [] and len(producer) == 0


def test_purged_reports_fail_but_the_records_may_be_written() -> None:
    c = cluster()
    producer = c.producer({})
    reports = Reports()
    producer.produce("t", b"a", on_delivery=reports)
    producer.purge()
    producer.flush()
    [(err, msg)] = reports.seen
    assert err is not None and err.code() == KafkaError._PURGE_INFLIGHT
    assert msg.error() == err
    assert [r.value for r in c.records("t")] == [b"a"]


# -- reading -----------------------------------------------------------------------------
def test_records_are_read_in_arrival_order_across_partitions() -> None:
    c = cluster(partitions=3)
    producer = c.producer({})
    for value, partition in [(b"a", 2), (b"b", 0), (b"c", 1), (b"d", 2)]:
        producer.produce("t", value, partition=partition)
    reader = consumer(c)
    reader.subscribe(["t"])
    polled = [reader.poll(0) for _ in range(5)]
    assert [m.value() if m else None for m in polled] == [b"a", b"b", b"c", b"d", None]
    assert [r.value for r in c.records("t")] == [b"a", b"b", b"c", b"d"]
    assert [r.value for r in c.records("t", 2)] == [b"a", b"d"]


def test_pause_resume_and_seek_move_what_is_read() -> None:
    c = cluster(partitions=2)
    producer = c.producer({})
    for value, partition in [(b"a0", 0), (b"b0", 1), (b"a1", 0), (b"b1", 1)]:
        producer.produce("t", value, partition=partition)
    reader = consumer(c)
    reader.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
    reader.pause([TopicPartition("t", 1)])
    assert values(reader.consume(10)) == [b"a0", b"a1"]
    reader.resume([TopicPartition("t", 1)])
    assert values(reader.consume(1)) == [b"b0"]
    both = [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert [tp.offset for tp in reader.position(both)] == [2, 1]
    reader.seek(TopicPartition("t", 0, 1))
    assert values(reader.consume(10)) == [b"a1", b"b1"]
    reader.seek(TopicPartition("t", 1, OFFSET_BEGINNING))
    assert values(reader.consume(10)) == [b"b0", b"b1"]
    with pytest.raises(KafkaException) as exc:
        reader.seek(TopicPartition("other", 0, 0))
    assert error_code(exc) == KafkaError._STATE


def test_a_group_resumes_from_its_committed_offsets_else_from_auto_offset_reset() -> None:
    c = cluster()
    producer = c.producer({})
    for v in (b"a", b"b", b"c"):
        producer.produce("t", v)
    first = consumer(c, "g")
    first.subscribe(["t"])
    [a] = first.consume(1)
    assert first.committed([TopicPartition("t", 0)])[0].offset == OFFSET_INVALID
    done = first.commit(message=a, asynchronous=False)
    assert [(tp.topic, tp.partition, tp.offset) for tp in done or []] == [("t", 0, 1)]
    assert c.committed("g", "t", 0) == 1
    first.close()

    second = consumer(c, "g", auto_offset_reset="latest")
    second.subscribe(["t"])
    assert values(second.consume(10)) == [b"b", b"c"]  # the committed offset wins
    second.commit(asynchronous=False)  # no offsets: the current positions
    assert c.committed("g", "t", 0) == 3

    earliest = consumer(c, "new", auto_offset_reset="smallest")  # librdkafka's alias
    earliest.subscribe(["t"])
    assert values(earliest.consume(10)) == [b"a", b"b", b"c"]
    latest = consumer(c, "other", auto_offset_reset="latest")
    latest.subscribe(["t"])
    assert latest.consume(10) == []
    producer.produce("t", b"d")
    assert values(latest.consume(10)) == [b"d"]
    with pytest.raises(KafkaException) as exc:
        consumer(c, "nothing").commit(asynchronous=False)
    assert error_code(exc) == KafkaError._NO_OFFSET


def test_explicit_assignment_starts_at_the_given_offset() -> None:
    c = cluster()
    producer = c.producer({})
    for v in (b"a", b"b", b"c"):
        producer.produce("t", v)
    consumer(c, "g").commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)
    reader = consumer(c, "g")
    reader.assign([TopicPartition("t", 0, 1)])
    assert values(reader.consume(10)) == [b"b", b"c"]
    reader.assign([TopicPartition("t", 0)])  # no offset: the group's committed one
    assert values(reader.consume(10)) == [b"c"]
    reader.assign([TopicPartition("t", 0, OFFSET_END)])
    assert reader.consume(10) == []
    assert reader.get_watermark_offsets(TopicPartition("t", 0)) == (0, 3)


def test_subscription_assigns_inside_poll_and_picks_up_new_topics_incrementally() -> None:
    c = cluster(partitions=2)
    calls: list[tuple[str, list[tuple[str, int]]]] = []

    def on_assign(_c: Any, tps: list[TopicPartition]) -> None:
        calls.append(("assign", [(tp.topic, tp.partition) for tp in tps]))

    def on_revoke(_c: Any, tps: list[TopicPartition]) -> None:
        calls.append(("revoke", [(tp.topic, tp.partition) for tp in tps]))

    reader = consumer(c)
    reader.subscribe(["a", "^b-.*"], on_assign=on_assign, on_revoke=on_revoke)
    assert calls == [] and reader.assignment() == []
    assert reader.poll(0) is None
    assert calls == [("assign", [("a", 0), ("a", 1)])]
    assert c.topics() == ["a"]  # a subscription creates a named topic, not a pattern's

    c.producer({}).produce("b-new", b"x")  # a matching topic appears later
    assert values(reader.consume(10)) == [b"x"]
    assert calls[1:] == [("assign", [("b-new", 0), ("b-new", 1)])]
    assert reader.consume(10) == [] and len(calls) == 2

    reader.subscribe(["a"], on_assign=on_assign, on_revoke=on_revoke)
    reader.poll(0)
    assert calls[2:] == [("revoke", [("b-new", 0), ("b-new", 1)])]
    reader.unsubscribe()
    assert len(reader.assignment()) == 2  # revoked at the next poll, as librdkafka does
    reader.poll(0)
    assert calls[3:] == [("revoke", [("a", 0), ("a", 1)])]
    assert reader.assignment() == []


def test_an_on_assign_callback_may_assign_from_its_own_offsets() -> None:
    c = cluster()
    producer = c.producer({})
    for v in (b"a", b"b", b"c"):
        producer.produce("t", v)

    def on_assign(consumer: Any, tps: list[TopicPartition]) -> None:
        consumer.incremental_assign([TopicPartition(tp.topic, tp.partition, 2) for tp in tps])

    reader = consumer(c)
    reader.subscribe(["t"], on_assign=on_assign)
    assert values(reader.consume(10)) == [b"c"]


def test_close_revokes_the_assignment_then_refuses_every_call() -> None:
    c = cluster(partitions=2)
    revoked: list[list[TopicPartition]] = []
    reader = consumer(c)
    reader.subscribe(["t"], on_revoke=lambda _c, tps: revoked.append(tps))
    reader.poll(0)
    reader.close()
    assert revoked == [[TopicPartition("t", 0), TopicPartition("t", 1)]]
    reader.close()  # a second close is harmless, as confluent-kafka's
    for call in (lambda: reader.poll(0), lambda: reader.consume(1), reader.assignment):
        with pytest.raises(RuntimeError, match="Consumer closed"):
            call()


def test_end_of_partition_is_reported_once_per_end_reached() -> None:
    c = cluster(partitions=2)
    reader = consumer(c, enable_partition_eof=True)
    reader.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
    events = reader.consume(10)
    assert [(m.partition(), m.offset(), e.code()) for m in events if (e := m.error())] == [
        (0, 0, KafkaError._PARTITION_EOF),
        (1, 0, KafkaError._PARTITION_EOF),
    ]
    assert reader.consume(10) == []
    c.producer({}).produce("t", b"a", partition=1)
    batch = reader.consume(10)
    assert [(m.partition(), m.offset(), m.error() is not None) for m in batch] == [
        (1, 0, False),
        (1, 1, True),
    ]
    reader.seek(TopicPartition("t", 1, 0))
    assert [(m.offset(), m.error() is not None) for m in reader.consume(10)] == [
        (0, False),
        (1, True),
    ]
    assert consumer(c).consume(10) == []  # without enable.partition.eof: no events


# -- transactions ------------------------------------------------------------------------
def test_read_committed_stops_at_open_transactions_and_never_sees_aborted_ones() -> None:
    c = cluster()
    plain = c.producer({})
    tx = transactional(c)
    reports = Reports()
    plain.produce("t", b"before")
    tx.begin_transaction()
    tx.produce("t", b"open-1", on_delivery=reports)
    tx.produce("t", b"open-2", on_delivery=reports)
    plain.produce("t", b"after")  # behind the open transaction: held back too

    committed = consumer(c, "rc")
    uncommitted = consumer(c, "ru", isolation_level="read_uncommitted")
    for reader in (committed, uncommitted):
        reader.assign([TopicPartition("t", 0)])
    assert values(committed.consume(10)) == [b"before"]
    assert values(uncommitted.consume(10)) == [b"before", b"open-1", b"open-2", b"after"]
    assert committed.get_watermark_offsets(TopicPartition("t", 0)) == (0, 1)  # stable end
    assert uncommitted.get_watermark_offsets(TopicPartition("t", 0)) == (0, 4)
    assert committed.get_watermark_offsets(TopicPartition("t", 0), cached=True) == (0, 4)
    assert [r.value for r in c.records("t")] == [b"before", b"after"]

    assert reports.seen == []
    tx.commit_transaction(10)  # serves the reports first, as librdkafka's flush in it
    assert reports.offsets() == [(0, 1), (0, 2)]
    assert values(committed.consume(10)) == [b"open-1", b"open-2", b"after"]
    tx.begin_transaction()
    tx.produce("t", b"aborted")
    tx.abort_transaction(10)
    plain.produce("t", b"last")
    assert values(committed.consume(10)) == [b"last"]
    assert values(uncommitted.consume(10)) == [b"aborted", b"last"]

    # each transaction's end took an offset (its marker), as on a broker
    assert [(r.offset, r.value, r.state) for r in c.records("t", 0, committed_only=False)] == [
        (0, b"before", TxState.COMMITTED),
        (1, b"open-1", TxState.COMMITTED),
        (2, b"open-2", TxState.COMMITTED),
        (3, b"after", TxState.COMMITTED),
        (5, b"aborted", TxState.ABORTED),
        (7, b"last", TxState.COMMITTED),
    ]
    assert c.end_offset("t", 0) == 8


def test_offsets_sent_to_a_transaction_are_committed_only_with_it() -> None:
    c = cluster()
    reader = consumer(c, "app")
    tx = transactional(c)
    tx.begin_transaction()
    tx.send_offsets_to_transaction(
        [TopicPartition("in", 0, 5)], reader.consumer_group_metadata(), 10
    )
    assert c.committed("app", "in", 0) is None
    tx.abort_transaction(10)
    assert c.committed("app", "in", 0) is None

    tx.begin_transaction()
    tx.send_offsets_to_transaction(
        [TopicPartition("in", 0, 7)], reader.consumer_group_metadata(), 10
    )
    tx.commit_transaction(10)
    assert c.committed("app", "in", 0) == 7
    assert reader.committed([TopicPartition("in", 0)])[0].offset == 7


def test_a_second_init_with_the_same_id_fences_the_first_producer() -> None:
    c = cluster()
    reports = Reports()
    old = transactional(c, "app-0")
    old.begin_transaction()
    old.produce("t", b"zombie", on_delivery=reports)
    new = transactional(c, "app-0")  # the previous instance's transaction is aborted

    assert c.records("t") == []
    assert [r.state for r in c.records("t", committed_only=False)] == [TxState.ABORTED]
    refused: list[Callable[[], None]] = [
        lambda: old.produce("t", b"more"),
        lambda: old.commit_transaction(10),
        old.begin_transaction,
    ]
    for call in refused:
        with pytest.raises(KafkaException) as exc:
            call()
        assert error_code(exc) == KafkaError._FENCED
        assert exc.value.args[0].fatal()
    assert old.flush(0) == 0 and len(reports.seen) == 1  # serving reports still works

    transactional(c, "app-1")  # another id fences nobody
    new.begin_transaction()
    new.produce("t", b"fresh")
    new.commit_transaction(10)
    assert [r.value for r in c.records("t")] == [b"fresh"]


def test_transactional_calls_in_the_wrong_state_are_refused() -> None:
    c = cluster()
    tx = c.producer({"transactional.id": "app-0"})
    with pytest.raises(KafkaException) as exc:
        tx.begin_transaction()  # before init_transactions
    assert error_code(exc) == KafkaError._STATE
    tx.init_transactions(10)
    wrong: list[Callable[[], None]] = [
        lambda: tx.produce("t", b"v"),
        lambda: tx.commit_transaction(10),
    ]
    for call in wrong:
        with pytest.raises(KafkaException) as exc:
            call()
        assert error_code(exc) == KafkaError._STATE
    with pytest.raises(KafkaException) as exc:
        c.producer({}).begin_transaction()
    assert error_code(exc) == KafkaError._NOT_CONFIGURED
    assert c.records("t") == []


# -- injected faults ---------------------------------------------------------------------
def test_injected_delivery_failures_reach_the_callback_and_write_nothing() -> None:
    c = cluster()
    producer = c.producer({})
    reports = Reports()
    timed_out = KafkaError(KafkaError._MSG_TIMED_OUT)
    producer.fail_deliveries(1, timed_out)
    producer.produce("t", b"lost", on_delivery=reports)
    producer.produce("t", b"kept", on_delivery=reports)
    producer.flush()
    [(err, lost), (ok, kept)] = reports.seen
    assert err == timed_out and lost.error() == timed_out and lost.value() == b"lost"
    assert ok is None and kept.offset() == 0
    assert [r.value for r in c.records("t")] == [b"kept"]


def test_a_failed_delivery_makes_the_transaction_abortable() -> None:
    c = cluster()
    tx = transactional(c)
    tx.begin_transaction()
    tx.fail_deliveries(1, KafkaError(KafkaError._MSG_TIMED_OUT))
    tx.produce("t", b"lost")
    with pytest.raises(KafkaException) as exc:
        tx.commit_transaction(10)
    assert error_code(exc) == KafkaError._MSG_TIMED_OUT
    assert exc.value.args[0].txn_requires_abort()
    tx.abort_transaction(10)
    tx.begin_transaction()  # usable again after the abort


def test_injected_commit_failures_raise_one_by_one() -> None:
    c = cluster()
    reader = consumer(c, "app")
    tx = transactional(c)
    retriable = KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE, retriable=True)
    fatal = KafkaError(KafkaError._FENCED, fatal=True)
    tx.fail_commits(retriable)
    tx.begin_transaction()
    tx.produce("t", b"a")
    tx.send_offsets_to_transaction([TopicPartition("in", 0, 1)], reader.consumer_group_metadata())
    with pytest.raises(KafkaException) as exc:
        tx.commit_transaction(10)
    assert exc.value.args[0] == retriable
    assert c.records("t") == [] and c.committed("app", "in", 0) is None
    tx.commit_transaction(10)  # a retriable failure leaves the transaction to retry
    assert [r.value for r in c.records("t")] == [b"a"] and c.committed("app", "in", 0) == 1

    tx.fail_commits(fatal)
    tx.begin_transaction()
    tx.produce("t", b"b")
    with pytest.raises(KafkaException):
        tx.commit_transaction(10)
    with pytest.raises(KafkaException) as exc:
        tx.abort_transaction(10)
    assert exc.value.args[0] == fatal
    successor = transactional(c)  # the open transaction ends with the next init
    assert [r.state for r in c.records("t", committed_only=False)][-1] is TxState.ABORTED
    successor.begin_transaction()


# -- the cluster -------------------------------------------------------------------------
def test_topics_are_created_explicitly_or_on_first_use() -> None:
    c = MemoryCluster(partitions=lambda topic: 4 if topic.startswith("wide") else 1)
    c.create_topic("explicit", 3)
    c.create_topic("explicit", 3)  # same count: nothing to do
    with pytest.raises(ValueError, match="exists with 3 partitions"):
        c.create_topic("explicit", 2)
    c.producer({}).produce("wide-out", b"v")
    consumer(c).assign([TopicPartition("narrow", 0)])
    assert c.topics() == ["explicit", "narrow", "wide-out"]
    assert [c.partition_count(t) for t in c.topics()] == [3, 1, 4]
    meta = c.consumer({"group.id": "g"}).list_topics()
    assert sorted(meta.topics) == c.topics() and len(meta.topics["explicit"].partitions) == 3
    assert c.producer({}).list_topics("missing").topics["missing"].error is not None
    with pytest.raises(KafkaException) as exc:
        consumer(c).get_watermark_offsets(TopicPartition("narrow", 1))
    assert error_code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART
