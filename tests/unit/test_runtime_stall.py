"""The stall watch: one WARNING for a record in hand too long, naming where it came from,
and one for a partition with lag that stopped moving (a metric and /readyz read it)."""

from __future__ import annotations

from confluent_kafka import TopicPartition
from structlog.testing import capture_logs

from streams.logs import get_logger
from streams.pipeline.offsets import Partitions
from streams.pipeline.record import Record
from streams.runtime.stall import (
    PartitionProgress,
    StalledPartition,
    StallWatch,
    partition_progress,
)
from streams.testing import wait_until
from streams.topology.context import Current


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
    """The two questions the progress asks a consumer, answered from dicts."""

    def __init__(self, positions: dict[int, int], ends: dict[int, int]) -> None:
        self.positions, self.ends = positions, ends

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions[tp.partition]) for tp in tps]

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        assert cached  # never a request from the watch's thread
        return 0, self.ends[tp.partition]


def test_progress_is_the_last_finished_record_never_past_the_one_in_hand() -> None:
    partitions = Partitions(Consumer({}, {}), auto_offset_reset="earliest", timeout=1)
    partitions.assign([("orders", p) for p in range(4)])
    finished, committed, in_hand, held = partitions.values()
    finished.position, finished.committed = 12, 10
    committed.committed = 30
    in_hand.position = 8  # records up to 7 finished; 8 is in hand
    current = Current()
    current.record = Record("orders", 2, 8, 0, b"k", b"v", ())
    consumer = Consumer({0: 99, 1: 99, 2: 99, 3: 99}, {0: 20, 1: 30, 2: 9, 3: 5})
    progress = partition_progress(
        partitions, consumer, current, lambda _topic, partition: partition == held.partition
    )
    assert progress() == [
        PartitionProgress("orders", 0, 12, 20),
        PartitionProgress("orders", 1, 30, 30),
        PartitionProgress("orders", 2, 8, 9),
    ]
    in_hand.position = None  # nothing finished yet: the consumer's position, bounded
    assert progress()[2] == PartitionProgress("orders", 2, 8, 9)


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
