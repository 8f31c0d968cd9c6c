"""The stall watch: one WARNING for a record in hand too long, naming where it came from."""

from __future__ import annotations

from structlog.testing import capture_logs

from streams.logs import get_logger
from streams.pipeline.record import Record
from streams.runtime.stall import StallWatch
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
