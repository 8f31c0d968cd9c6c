"""The stall watch: one WARNING for a record in hand too long, naming where it came from,
and one for a partition with lag that stopped moving (a metric and /readyz read it)."""

from __future__ import annotations

import threading
import time

from confluent_kafka import TopicPartition
from structlog.testing import capture_logs

from streams.logs import get_logger
from streams.pipeline.offsets import Partitions
from streams.pipeline.record import Record
from streams.pipeline.step import Forward
from streams.runtime.stall import (
    PartitionEnds,
    PartitionProgress,
    StalledPartition,
    StallWatch,
)
from streams.testing import wait_until
from streams.topology.execution.context import Current


def record(offset: int) -> Record:
    return Record("orders", 3, offset, 0, b"k", b"v", ())


def test_a_record_in_hand_past_the_limit_is_reported_once_then_its_release() -> None:
    current = Current()
    watch = StallWatch(current, limit_s=30, log=get_logger("test"))
    with capture_logs() as logs:
        current.record = record(41)
        watch.look(100.0)
        watch.look(129.0)  # not yet
        watch.look(130.0)
        watch.look(160.0)  # once
        current.record = record(42)
        watch.look(161.0)
    assert [(e["event"], e.get("offset"), e.get("seconds")) for e in logs] == [
        ("record in hand for long", 41, 30.0),
        ("record let go", None, 61.0),
    ]
    assert (logs[0]["topic"], logs[0]["partition"], logs[0]["log_level"]) == (
        "orders",
        3,
        "warning",
    )


def test_records_that_move_on_are_never_reported() -> None:
    current = Current()
    watch = StallWatch(current, limit_s=1, log=get_logger("test"))
    with capture_logs() as logs:
        for n in range(10):
            current.record = record(n)
            watch.look(float(n * 10))  # ten seconds apart, but a new record each look
        current.record = None
        watch.look(500.0)
        watch.look(900.0)  # nothing in hand: idle, not stalled
    assert logs == []


def test_the_watch_thread_reports_a_stall() -> None:
    current = Current()
    watch = StallWatch(current, limit_s=0.2, log=get_logger("test"))
    with capture_logs() as logs:
        current.record = record(7)
        watch.start()
        try:
            wait_until(lambda: any(e["event"] == "record in hand for long" for e in logs), 10)
        finally:
            watch.stop()
    assert logs[0]["offset"] == 7


# -- partitions that stop moving ------------------------------------------------------------


class Progress:
    """What the runtime reports of its partitions, set by the test between looks."""

    def __init__(self) -> None:
        self.now: list[PartitionProgress] = []

    def __call__(self) -> list[PartitionProgress]:
        return self.now


def partition_watch(after_s: float = 60) -> tuple[StallWatch, Current, Progress]:
    current, progress = Current(), Progress()
    watch = StallWatch(current, 0, get_logger("test"), after_s=after_s, progress=progress)
    return watch, current, progress


def test_a_partition_with_lag_that_does_not_move_is_stalled_until_it_moves() -> None:
    watch, current, progress = partition_watch(after_s=60)
    with capture_logs() as logs:
        current.record = record(41)  # a step blocks on orders[3]@41
        progress.now = [
            PartitionProgress("orders", 3, 41, 50),
            PartitionProgress("orders", 4, 7, 7),
        ]
        watch.look(100.0)
        watch.look(159.0)
        assert watch.stalled_partitions() == () and watch.unready() is None
        watch.look(160.0)
        watch.look(200.0)  # one WARNING per stall
        assert watch.stalled_partitions() == (StalledPartition("orders", 3, 41, 9, 100.0),)
        assert watch.unready() == "stalled partition(s): orders[3]"
        current.record = None  # the step returns: the partition moves
        progress.now = [
            PartitionProgress("orders", 3, 50, 50),
            PartitionProgress("orders", 4, 7, 7),
        ]
        watch.look(205.0)
    assert watch.stalled_partitions() == () and watch.unready() is None
    assert [e["event"] for e in logs] == ["partition stalled", "partition moving again"]
    warning = logs[0]
    assert warning["log_level"] == "warning"
    assert {k: warning[k] for k in ("topic", "partition", "offset", "lag", "seconds")} == {
        "topic": "orders",
        "partition": 3,
        "offset": 41,
        "lag": 9,
        "seconds": 60.0,
    }
    assert (warning["in_hand"], warning["in_hand_s"]) == ("orders[3]@41", 60.0)
    assert (logs[1]["partition"], logs[1]["seconds"]) == (3, 105.0)


def test_partitions_caught_up_idle_or_moving_are_never_stalled() -> None:
    watch, _current, progress = partition_watch(after_s=10)
    with capture_logs() as logs:
        for n in range(10):
            progress.now = [
                PartitionProgress("idle", 0, 5, 5),  # caught up: nothing to do
                PartitionProgress("busy", 0, n * 100, 5_000),  # lag, but moving
                PartitionProgress("new", 0, None, 80),  # position not known yet
            ]
            watch.look(n * 30.0)
    assert logs == [] and watch.stalled_partitions() == ()


def test_a_stalled_partition_that_leaves_is_no_longer_stalled() -> None:
    watch, _current, progress = partition_watch(after_s=10)
    with capture_logs() as logs:
        progress.now = [PartitionProgress("orders", 0, 3, 9)]
        watch.look(0.0)
        watch.look(10.0)
        assert len(watch.stalled_partitions()) == 1
        progress.now = []  # revoked
        watch.look(11.0)
    assert watch.stalled_partitions() == ()
    assert [e["event"] for e in logs] == ["partition stalled", "partition no longer assigned"]


class Consumer:
    """The two questions the progress asks a consumer, answered from dicts, on one thread."""

    def __init__(self, positions: dict[int, int], ends: dict[int, int]) -> None:
        self.positions, self.ends = positions, ends
        self.threads: set[int] = set()

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        self.threads.add(threading.get_ident())
        return [TopicPartition(tp.topic, tp.partition, self.positions[tp.partition]) for tp in tps]

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        assert cached  # never a request
        self.threads.add(threading.get_ident())
        return 0, self.ends[tp.partition]


def test_progress_is_the_last_finished_record_and_the_consumer_is_asked_on_one_thread() -> None:
    consumer = Consumer({0: 99, 1: 99, 2: 5, 3: 99}, {0: 20, 1: 30, 2: 9, 3: 5})
    partitions = Partitions(consumer, auto_offset_reset="earliest", timeout=1)
    partitions.assign([("orders", p) for p in range(4)])
    finished, committed, _unknown, held = partitions.values()
    finished.position, finished.committed = 12, 10
    committed.committed = 30
    ends = PartitionEnds(partitions, consumer, every_s=1.0)
    ends.waiting = lambda _topic, partition: partition == held.partition
    ends.step(Forward(Sink())).poll()  # the runtime's thread, at a poll
    watch_side: list[list[PartitionProgress]] = []
    thread = threading.Thread(target=lambda: watch_side.append(ends()))
    thread.start()
    thread.join()
    assert watch_side[0] == [
        PartitionProgress("orders", 0, 12, 20),
        PartitionProgress("orders", 1, 30, 30),
        PartitionProgress("orders", 2, 5, 9),  # nothing finished yet: the consumer's position
    ]
    assert consumer.threads == {threading.get_ident()}  # never from the watch's thread
    consumer.ends[0] = 25
    ends.refresh(time.monotonic())  # within every_s of the last: not asked again
    assert ends()[0].end == 20


class Sink:
    def submit(self, record: Record) -> None: ...
    def poll(self) -> None: ...


def test_a_partition_is_never_past_the_record_in_hand() -> None:
    watch, current, progress = partition_watch(after_s=10)
    current.record = record(8)  # orders[3]@8 in hand, while its partition says 12
    progress.now = [PartitionProgress("orders", 3, 12, 12)]
    watch.look(0.0)
    watch.look(10.0)
    assert watch.stalled_partitions() == (StalledPartition("orders", 3, 8, 4, 10.0),)
    # Its end not known yet (the consumer's cache is read at polls): the record is there.
    progress.now = [PartitionProgress("orders", 4, None, None)]
    current.record = Record("orders", 4, 0, 0, b"k", b"v", ())
    watch.look(20.0)
    watch.look(30.0)
    assert watch.stalled_partitions() == (StalledPartition("orders", 4, 0, 1, 10.0),)


def test_the_watch_thread_reports_a_stalled_partition() -> None:
    watch, _current, progress = partition_watch(after_s=0.2)
    progress.now = [PartitionProgress("orders", 1, 4, 6)]
    with capture_logs() as logs:
        watch.start()
        try:
            wait_until(watch.stalled_partitions, 10)
        finally:
            watch.stop()
    assert logs[0]["event"] == "partition stalled" and logs[0]["in_hand"] is None
