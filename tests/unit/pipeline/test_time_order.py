"""``TimeOrder``: a stream and the table it joins handed on in event-time order."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import TopicPartition

from streams.envelope import Envelope
from streams.pipeline.decode import Decode
from streams.pipeline.offsets import Partitions
from streams.pipeline.record import Record
from streams.pipeline.step import Forward
from streams.pipeline.time_order import TimeOrder

BASE = datetime(2026, 1, 1, tzinfo=UTC)


class Consumer:
    """Watermarks as set; pauses and resumes as asked."""

    def __init__(self) -> None:
        self.high: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()

    def get_watermark_offsets(self, tp: TopicPartition, **_: Any) -> tuple[int, int]:
        return 0, self.high.get((tp.topic, tp.partition), 0)

    def pause(self, parts: list[TopicPartition]) -> None:
        self.paused.update((p.topic, p.partition) for p in parts)

    def resume(self, parts: list[TopicPartition]) -> None:
        self.paused.difference_update((p.topic, p.partition) for p in parts)

    def seek(self, tp: TopicPartition) -> None:
        raise AssertionError("never rewinds")


class Sink(Forward):
    def __init__(self, partitions: Partitions) -> None:
        self.seen: list[str] = []
        self._partitions = partitions

    def submit(self, record: Record) -> None:
        self.seen.append(f"{record.topic}@{record.offset}")
        po = self._partitions.get((record.topic, record.partition))
        assert po is not None
        po.position = record.offset + 1  # what Commit does at the end of the chain

    def poll(self) -> None:
        return None


def record(topic: str, offset: int, second: int) -> Record:
    r = Record(topic, 0, offset, None, b"k", b"", [])
    env = Envelope.new("order.placed", {}, version=2, key="k")
    r.envelope = replace(env, time=BASE + timedelta(seconds=second))
    return r


def step(max_waiting: int = 100) -> tuple[TimeOrder, Sink, Consumer]:
    consumer = Consumer()
    partitions = Partitions(consumer, auto_offset_reset="earliest", timeout=1)  # type: ignore[arg-type]
    partitions.assign([("orders", 0), ("profiles", 0)])
    for po in partitions.values():
        po.committed = 0
    sink = Sink(partitions)
    order = TimeOrder(
        sink,
        sides=[(["orders"], ["profiles"])],
        decode=Decode(None, {}),  # type: ignore[arg-type]  # envelopes are in hand already
        consumer=consumer,
        partitions=partitions,
        max_waiting=max_waiting,
    )
    return order, sink, consumer


def test_records_in_hand_go_smallest_event_time_first_each_partition_in_its_order() -> None:
    order, sink, consumer = step()
    consumer.high = {("orders", 0): 3, ("profiles", 0): 2}
    for r in [record("orders", 0, 10), record("orders", 1, 30), record("orders", 2, 20)]:
        order.submit(r)
    order.submit(record("profiles", 0, 5))
    order.submit(record("profiles", 1, 25))
    order.poll()
    assert sink.seen == ["profiles@0", "orders@0", "profiles@1", "orders@1", "orders@2"]


def test_a_record_waits_while_the_other_side_has_unread_records_that_may_be_earlier() -> None:
    order, sink, consumer = step()
    consumer.high = {("orders", 0): 1, ("profiles", 0): 1}  # a profile not fetched yet
    order.submit(record("orders", 0, 60))
    order.poll()
    assert sink.seen == []  # waits
    order.submit(record("profiles", 0, 30))
    order.poll()
    assert sink.seen == ["profiles@0", "orders@0"]
    order.submit(record("orders", 1, 90))  # the profiles are all read: no wait
    consumer.high[("orders", 0)] = 2
    order.poll()
    assert sink.seen[-1] == "orders@1"


def test_a_record_read_again_replaces_what_was_in_hand_from_there() -> None:
    order, sink, consumer = step()
    consumer.high = {("orders", 0): 3, ("profiles", 0): 1}
    for r in [record("orders", 0, 60), record("orders", 1, 61), record("orders", 0, 60)]:
        order.submit(r)  # the consumer went back to 0 (a rewind)
    order.submit(record("profiles", 0, 1))
    order.poll()
    assert sink.seen == ["profiles@0", "orders@0"]


def test_a_partition_with_too_many_records_waiting_is_paused_until_half_went_on() -> None:
    order, sink, consumer = step(max_waiting=4)
    consumer.high = {("orders", 0): 10, ("profiles", 0): 1}
    for n in range(6):
        order.submit(record("orders", n, 100 + n))
    order.poll()
    assert consumer.paused == {("orders", 0)} and sink.seen == []
    order.submit(record("profiles", 0, 1))
    order.poll()
    assert consumer.paused == set() and len(sink.seen) == 7


def test_a_partition_rewound_to_its_commit_drops_what_was_in_hand_and_reads_again() -> None:
    order, sink, consumer = step(max_waiting=2)
    consumer.high = {("orders", 0): 4, ("profiles", 0): 2}
    order.submit(record("profiles", 0, 50))
    for n, second in enumerate([10, 60, 70, 80]):
        order.submit(record("orders", n, second))
    order.poll()  # orders@1 waits for the unread profile: three in hand, paused
    assert sink.seen == ["orders@0", "profiles@0"] and consumer.paused == {("orders", 0)}
    for tp in [("orders", 0), ("profiles", 0)]:
        po = order._partitions.get(tp)
        assert po is not None
        po.position = None  # a recovery rewound every partition to its commit
    order.poll()
    assert consumer.paused == set()  # what was in hand is dropped: it comes again
    for n, second in enumerate([10, 60, 70, 80]):
        order.submit(record("orders", n, second))
    order.submit(record("profiles", 0, 50))
    order.submit(record("profiles", 1, 65))
    order.poll()
    assert sink.seen[2:] == [
        "orders@0",
        "profiles@0",
        "orders@1",
        "profiles@1",
        "orders@2",
        "orders@3",
    ]
