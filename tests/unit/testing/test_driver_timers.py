"""Timers (``ctx.schedule``) in the TestDriver: the runtime's chain on in-memory clients."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import factories
import pytest
from structlog.testing import capture_logs

from streams.envelope import Envelope
from streams.testing import TestDriver
from streams.topology import ProcessorContext, Topology, TopologyBuilder, TopologyError, owned
from streams.topology.loader import import_file, load_topology
from streams.topology.partitioning import partition_for
from streams.topology.policy import ProcessingError

T, V = "order.placed", 2
BASE = datetime(2026, 1, 1, tzinfo=UTC)  # on the minute: timers fire on multiples
BASE_MS = int(BASE.timestamp() * 1000)


def order(key: str, second: float) -> Envelope:
    when = BASE + timedelta(seconds=second)
    return factories.order(f"o-{key}-{second}", key, total_cents=1, time=when)


def summary(key: str, text: str) -> Envelope:
    data = {"order_id": text, "customer_id": key, "items": []}
    return Envelope.new(T, {**data, "total_cents": 0, "currency": "EUR"}, version=V, key=key)


class CountThenReport:
    """Counts orders per key in a store; every minute (``time``) reports each key's count
    for the partition and forgets it."""

    def __init__(self, time: str = "stream", fail: bool = False) -> None:
        self.time, self.fail = time, fail
        self.fired: list[tuple[int, int]] = []  # (partition, stream time - BASE)

    def init(self, ctx: ProcessorContext) -> None:
        ctx.schedule(60, self.report, time=self.time)

    def process(self, env: Envelope, ctx: ProcessorContext) -> None:
        counts = ctx.store("counts")
        counts.set(env.key, str(int(counts.get(env.key) or b"0") + 1).encode())

    def report(self, now_ms: int, ctx: ProcessorContext) -> list[Envelope]:
        self.fired.append((ctx.partition, now_ms - BASE_MS))
        counts = ctx.store("counts")
        out = []
        for key, value in sorted(counts.items()):
            counts.delete(key)
            out.append(
                summary(
                    key.decode(), f"{ctx.partition}:{(now_ms - BASE_MS) // 1000}:{value.decode()}"
                )
            )
        if self.fail:
            raise RuntimeError("the report failed")
        return out


def topology(processor: Any) -> Topology:
    b = TopologyBuilder("app")
    b.store("counts", backend="memory")
    b.source("in", type=T, version=V).process(processor).to(owned("out"), type=T, version=V)
    return b.build()


def reports(d: TestDriver) -> list[str]:
    return [r.envelope.data["order_id"] for r in d.records("app-out")]


def test_a_stream_time_timer_fires_when_the_partitions_event_time_crosses_a_minute() -> None:
    proc = CountThenReport()
    with TestDriver(topology(proc), start_time_ms=0) as d:
        # The partition's first record runs it (stream time starts there), after the record.
        d.pipe("in", [order("a", 10), order("a", 20), order("b", 59)])
        assert proc.fired == [(0, 10_000)] and reports(d) == ["0:10:1"]
        d.pipe("in", order("a", 61))  # crosses 60 s: a counts, then the timer runs
        assert reports(d)[1:] == ["0:61:2", "0:61:1"]
        d.pipe("in", [order("a", 30), order("b", 119)])  # out of order, then short of 120 s
        assert proc.fired[-1] == (0, 61_000)
        d.pipe("in", order("b", 185))  # one run for two minutes crossed at once
        assert proc.fired[-1] == (0, 185_000) and reports(d)[3:] == ["0:185:1", "0:185:2"]


def test_stream_time_is_kept_per_partition() -> None:
    proc = CountThenReport()
    with TestDriver(topology(proc), partitions=2) as d:
        d.pipe("in", order("a", 5), partition=0)
        d.pipe("in", order("b", 5), partition=1)
        d.pipe("in", order("a", 65), partition=0)  # partition 1 is still at 5 s
        assert proc.fired == [(0, 5_000), (1, 5_000), (0, 65_000)]
        assert reports(d) == ["0:5:1", "1:5:1", "0:65:1"]


def test_a_wall_clock_timer_runs_for_every_owned_partition_as_the_clock_moves() -> None:
    proc = CountThenReport(time="wall")
    with TestDriver(topology(proc), partitions=2, start_time_ms=BASE_MS) as d:
        d.pipe("in", order("a", 0), partition=0)
        d.pipe("in", [order("b", 0), order("b", 1)], partition=1)
        assert proc.fired == []
        d.advance_time(59_000)  # now BASE + 59.003 s
        assert proc.fired == []
        d.advance_time(1_000)
        assert [p for p, _ in proc.fired] == [0, 1]
        assert reports(d) == ["0:60:1", "1:60:2"]
        d.advance_time(60_000)  # nothing counted since: runs, reports nothing
        assert len(proc.fired) == 4 and len(reports(d)) == 2


def test_a_failing_timer_is_undone_logged_and_runs_again() -> None:
    proc = CountThenReport(fail=True)
    with TestDriver(topology(proc)) as d:
        with capture_logs() as logs:
            d.pipe("in", [order("a", 1), order("a", 2)])
            d.pipe("in", order("a", 61))
        assert reports(d) == []  # nothing it forwarded went out
        assert d.store("counts").get("a") == b"3"  # its deletes were undone
        assert d.stats.timer_failures == 2  # the first record's run failed too
        failed = [e for e in logs if e["log_level"] == "error"]
        assert [(e["processor"], e["partition"], e["error"]) for e in failed] == [
            ("CountThenReport", 0, "RuntimeError: the report failed")
        ] * 2
        proc.fail = False
        d.pipe("in", order("a", 62))  # the partition goes on
        d.pipe("in", order("a", 121))
        assert reports(d) == ["0:121:5"]


def test_a_timer_has_a_partition_but_no_record() -> None:
    seen: list[str] = []

    class Probe:
        def init(self, ctx: ProcessorContext) -> None:
            ctx.schedule(1, self.tick)

        def process(self, env: Envelope, ctx: ProcessorContext) -> None:
            return None

        def tick(self, now_ms: int, ctx: ProcessorContext) -> None:
            with pytest.raises(TopologyError, match="without a record"):
                _ = ctx.record
            seen.append(f"partition {ctx.partition}")

    with TestDriver(topology(Probe)) as d:
        d.pipe("in", order("a", 1))
    assert seen == ["partition 0"]


def test_timers_are_scheduled_in_init_with_a_positive_interval_in_a_known_time() -> None:
    class Late:
        def process(self, env: Envelope, ctx: ProcessorContext) -> None:
            ctx.schedule(1, lambda now, c: None)

    with TestDriver(topology(Late)) as d, pytest.raises(ProcessingError, match="in init"):
        d.pipe("in", order("a", 1))  # a step that raises stops (the default policy)

    for interval, time, match in ((0, "stream", "must be positive"), (1, "event", "not 'event'")):

        class Bad:
            def init(self, ctx: ProcessorContext, i: float = interval, t: str = time) -> None:
                ctx.schedule(i, lambda now, c: None, time=t)

            def process(self, env: Envelope, ctx: ProcessorContext) -> None:
                return None

        with pytest.raises(TopologyError, match=match):
            TestDriver(topology(Bad))


def test_the_digest_example_writes_every_order_once_in_the_minute_its_timer_ran() -> None:
    topology = load_topology("topology/digest.py", app_id="d", params={"backend": "memory"})
    sample = import_file(Path("topology/orders.py")).sample_orders(300, customers=6, seed=2)
    orders = [replace(o, time=BASE + timedelta(seconds=i)) for i, o in enumerate(sample)]
    # One more order per partition an hour on: its minute's digest takes what is left.
    last = {partition_for((o.key or "").encode(), 2): o for o in orders}
    ends = [replace(o, time=BASE + timedelta(hours=1)) for o in last.values()]
    with TestDriver(topology, partitions=2) as d:
        d.pipe("orders", [*orders, *ends])
        digests = [e.data for e in d.read("d-digests")]
    assert len(digests) > 6 * 5  # a digest per customer and minute, at least
    plain: dict[str, tuple[int, int]] = {}
    for o in [*orders, *ends]:
        n, cents = plain.get(o.key or "", (0, 0))
        plain[o.key or ""] = (n + 1, cents + o.data["total_cents"])
    written: dict[str, tuple[int, int]] = {}
    previous_end: dict[str, int] = {}
    for g in digests:
        n, cents = written.get(g["customer_id"], (0, 0))
        written[g["customer_id"]] = (n + g["orders"], cents + g["revenue_cents"])
        # Each digest covers what came after the customer's previous one, up to its timer.
        assert g["window_start_ms"] > previous_end.get(g["customer_id"], -1)
        assert g["window_start_ms"] <= g["window_end_ms"]
        previous_end[g["customer_id"]] = g["window_end_ms"]
    assert written == plain
