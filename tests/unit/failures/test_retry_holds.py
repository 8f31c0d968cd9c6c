"""Due-time waits in retry tiers: which partitions to pause, resume and when to wake."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from streams.failures.headers import DUE_TIME, format_time
from streams.failures.retry_holds import Hold, RetryHolds, due_time

T0 = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)


@dataclass
class Msg:
    """The four accessors of ``confluent_kafka.Message`` the holds read."""

    t: str
    p: int
    o: int
    due: datetime | None
    extra: list[tuple[str, bytes | None]] = field(default_factory=list)

    def topic(self) -> str:
        return self.t

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o

    def headers(self) -> list[tuple[str, bytes | None]]:
        due = [] if self.due is None else [(DUE_TIME, format_time(self.due).encode())]
        return [*self.extra, *due]


def test_due_records_pass_and_a_not_due_head_holds_its_partition_only() -> None:
    holds = RetryHolds()
    batch = [
        Msg("r1", 0, 10, T0 - timedelta(seconds=1)),
        Msg("r1", 1, 20, T0 + timedelta(seconds=5)),  # not due: holds r1[1]
        Msg("r1", 0, 11, T0),
        Msg("r1", 1, 21, T0 - timedelta(seconds=9)),  # behind the hold: refetched later
        Msg("r2", 1, 5, T0 + timedelta(seconds=30)),
        Msg("r1", 0, 12, None),  # no due time: due
    ]
    sifted = holds.sift(batch, now=T0)
    assert [(m.t, m.p, m.o) for m in sifted.ready] == [("r1", 0, 10), ("r1", 0, 11), ("r1", 0, 12)]
    assert sifted.held == [
        Hold("r1", 1, 20, T0 + timedelta(seconds=5)),
        Hold("r2", 1, 5, T0 + timedelta(seconds=30)),
    ]
    # A later batch brings nothing of a held partition (prefetched leftovers are dropped).
    assert holds.sift([Msg("r1", 1, 22, None)], now=T0).ready == []


def test_holds_ripen_in_due_order_and_bound_the_poll_timeout() -> None:
    holds = RetryHolds()
    holds.sift(
        [Msg("r1", 0, 1, T0 + timedelta(seconds=5)), Msg("r2", 0, 1, T0 + timedelta(seconds=30))],
        now=T0,
    )
    assert holds.next_due() == T0 + timedelta(seconds=5)
    assert holds.poll_timeout(1.0, now=T0) == 1.0
    assert holds.poll_timeout(10.0, now=T0) == 5.0
    assert holds.due(now=T0 + timedelta(seconds=4)) == []
    assert holds.due(now=T0 + timedelta(seconds=5)) == [Hold("r1", 0, 1, T0 + timedelta(seconds=5))]
    assert holds.poll_timeout(60.0, now=T0 + timedelta(seconds=40)) == 0.0
    assert [h.topic for h in holds.due(now=T0 + timedelta(seconds=40))] == ["r2"]
    assert holds.next_due() is None
    assert holds.poll_timeout(2.5) == 2.5


def test_a_resumed_partition_passes_its_head_once_due() -> None:
    holds = RetryHolds()
    head = Msg("r1", 0, 7, T0 + timedelta(seconds=1))
    assert holds.sift([head], now=T0).ready == []
    holds.due(now=T0 + timedelta(seconds=1))
    assert holds.sift([head], now=T0 + timedelta(seconds=1)).ready == [head]


def test_revoked_partitions_forget_their_holds() -> None:
    holds = RetryHolds()
    holds.sift([Msg("r1", 0, 1, T0 + timedelta(hours=1))], now=T0)
    assert [h.offset for h in holds.forget([("r1", 0), ("r1", 9)])] == [1]
    assert holds.held == []


def test_an_unreadable_due_time_counts_as_due() -> None:
    msg = Msg("r1", 0, 1, None, extra=[(DUE_TIME, b"soon")])
    assert due_time(msg) is None
    assert RetryHolds().sift([msg], now=T0).ready == [msg]
