"""Aggregations and windows in the TestDriver (the runtime's chain on in-memory clients)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import factories
import pytest

from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.testing.windows import window_oracle
from streams.topology import (
    Table,
    Topology,
    TopologyBuilder,
    TopologyError,
    TopologyValidationError,
    Update,
    Window,
    Windows,
    hopping,
    owned,
    session,
    sliding,
    tumbling,
)
from streams.topology.describe import describe_data, describe_text
from streams.topology.loader import load_topology
from streams.topology.partitioning import partition_for
from streams.topology.windows import AnyWindows

T, V = "order.placed", 2
BASE = datetime(2026, 1, 1, tzinfo=UTC)
BASE_MS = int(BASE.timestamp() * 1000)


def order(key: str | None, second: float, cents: int = 100) -> Envelope:
    when = BASE + timedelta(seconds=second)
    return factories.order(f"o-{key}-{second}", key or "", key=key, total_cents=cents, time=when)


def echo(update: Update) -> Envelope:
    """The update as an order envelope whose key says key, window start, value (-1: None,
    a merged session), final."""
    start = update.window.start_ms - BASE_MS if update.window else -1
    value = -1 if update.value is None else update.value
    key = f"{update.key}|{start}|{value}|{int(update.final)}"
    return update.cause.follow(T, update.cause.data, version=V, key=key)


def windowed(windows: Windows, *, emit: str = "updates", late: bool = False) -> Topology:
    b = TopologyBuilder("app")
    table = b.source("in", type=T, version=V).window(windows).count(emit=emit, name="counts")
    table.to_stream(echo).to(owned("out"), type=T, version=V)
    if late:
        table.late().to(owned("late"), type=T, version=V)
    return b.build(default_catalog())


def emitted(driver: TestDriver) -> list[tuple[str, int, int, bool]]:
    out = []
    for record in driver.records("app-out"):
        key, start, value, final = (record.key or b"").decode().split("|")
        out.append((key, int(start), int(value), final == "1"))
    return out


def shuffled_input(n: int, seed: int) -> list[tuple[str, float]]:
    """Mostly in order, some records a few seconds back, a few far back (late)."""
    rng = random.Random(seed)
    out, now = [], 0.0
    for _ in range(n):
        now += rng.uniform(0, 4)
        roll = rng.random()
        back = rng.uniform(0, 8) if roll < 0.3 else rng.uniform(30, 90) if roll < 0.4 else 0
        out.append((rng.choice("abc"), round(max(now - back, 0), 3)))
    return out


@pytest.mark.parametrize(
    "windows",
    [
        tumbling(20, grace=5),
        hopping(30, 10, grace=5),
        tumbling(10),
        session(6, grace=5),
        sliding(20, grace=5),
        sliding(10),
    ],
    ids=str,
)
def test_counts_and_late_records_equal_a_brute_force_computation(windows: AnyWindows) -> None:
    records = [
        (key, BASE + timedelta(seconds=second), None)
        for key, second in shuffled_input(300, seed=len(str(windows)))
    ]
    expected = window_oracle(records, windows)
    with TestDriver(windowed(windows, emit="final")) as driver:
        for key, when, _ in records:
            driver.pipe("in", replace(order(key, 0), time=when))
        finals = {(k, s): v for k, s, v, final in emitted(driver) if final}
        table = {(k, w.start_ms - BASE_MS): v for (k, w), v in driver.table("counts").items()}
        dead = driver.dead_letters

    def counts(found: dict[tuple[str, int], list[Any]]) -> dict[tuple[str, int], int]:
        return {(k, s - BASE_MS): len(items) for (k, s), items in found.items()}

    assert finals == counts(expected.closed) != {}  # each closed window once, all of it
    assert table == counts(expected.open)  # the open ones kept
    assert len(dead) == len(expected.late) > 0  # a late record is never dropped in silence
    assert all(r.info and r.info.exception.endswith("LateRecordError") for r in dead)
    assert [int(r.info.origin.offset) for r in dead if r.info] == expected.late


def test_updates_mode_emits_every_change_in_order() -> None:
    with TestDriver(windowed(tumbling(60, grace=10))) as driver:
        for key, second in [("a", 1), ("a", 5), ("b", 30), ("a", 61), ("a", 50), ("a", 75)]:
            driver.pipe("in", order(key, second))
        assert emitted(driver) == [
            ("a", 0, 1, False),
            ("a", 0, 2, False),
            ("b", 0, 1, False),
            ("a", 60_000, 1, False),
            ("a", 0, 3, False),  # 50 s: out of order, inside the grace
            ("a", 60_000, 2, False),  # 75 s closes [0, 60): no final value in this mode
        ]
        assert driver.table("counts") == {("a", Window(BASE_MS + 60_000, BASE_MS + 120_000)): 2}


def test_a_sliding_window_is_the_keys_last_size_seconds_as_of_each_record() -> None:
    with TestDriver(windowed(sliding(10, grace=5))) as driver:
        for key, second in [("a", 0), ("a", 4), ("b", 5), ("a", 12), ("a", 9), ("a", 30)]:
            driver.pipe("in", order(key, second))
        # (window start - BASE, count): each record's window is (t - 10 s, t].
        assert [(k, s + 10_000 - 1, v) for k, s, v, _ in emitted(driver)] == [
            ("a", 0, 1),
            ("a", 4_000, 2),
            ("b", 5_000, 1),
            ("a", 12_000, 2),  # 4 and 12: 0 slid out
            ("a", 9_000, 3),  # 9 s, out of order inside the grace: its own window (0, 4, 9)
            ("a", 12_000, 3),  # ... and the later one it falls in (4, 9, 12)
            ("a", 30_000, 1),
        ]
        # Stream time 30 s: the windows ending before 25 s closed; 30's is open.
        assert driver.table("counts") == {("a", Window(BASE_MS + 20_001, BASE_MS + 30_001)): 1}


def test_a_record_that_bridges_two_sessions_merges_them() -> None:
    with TestDriver(windowed(session(10, grace=20))) as driver:
        for second in (0, 5, 20, 24, 14):  # 14 is within 10 s of both sessions
            driver.pipe("in", order("a", second))
        assert [(s, v) for _, s, v, _ in emitted(driver)] == [
            (0, 1),
            (0, -1),  # [0, 0] grew: replaced (value None) ...
            (0, 2),  # ... by [0, 5]
            (20_000, 1),
            (20_000, -1),
            (20_000, 2),
            (0, -1),  # [0, 5] merged away ...
            (20_000, -1),  # ... and [20, 24] ...
            (0, 5),  # ... into [0, 24], all five records
        ]
        assert driver.table("counts") == {("a", Window(BASE_MS, BASE_MS + 24_000)): 5}


def test_late_records_go_to_the_late_stream_when_it_is_read() -> None:
    with TestDriver(windowed(tumbling(60), late=True)) as driver:
        for key, second in [("a", 1), ("a", 61), ("a", 59)]:
            driver.pipe("in", order(key, second))
        assert [e.time for e in driver.read("app-late")] == [BASE + timedelta(seconds=59)]
        assert driver.dead_letters == []


def test_stream_time_is_per_partition() -> None:
    """A key on another partition does not close this partition's windows."""
    topology = windowed(tumbling(60), late=True)
    with TestDriver(topology, partitions=4) as driver:
        keys = ["a", "b", "c", "d", "e"]
        by_partition: dict[int, list[str]] = {}
        for k in keys:
            by_partition.setdefault(partition_for(k.encode(), 4), []).append(k)
        first, second = (ks[0] for ks in list(by_partition.values())[:2])
        driver.pipe("in", order(first, 1))
        driver.pipe("in", order(second, 500))  # far ahead, on its own partition
        driver.pipe("in", order(first, 2))
        assert driver.read("app-late") == []
        counts = driver.table("counts")
        assert counts[first, Window(BASE_MS, BASE_MS + 60_000)] == 2


def test_aggregate_keeps_catalog_typed_values_and_reduce_folds_payloads() -> None:
    b = TopologyBuilder("app")
    orders = b.source("in", type=T, version=V)

    def add(total: dict[str, Any], env: Envelope) -> dict[str, Any]:
        return {
            **total,
            "orders": total["orders"] + 1,
            "revenue_cents": total["revenue_cents"] + env.data["total_cents"],
        }

    zero = {
        "customer_id": "",
        "window_start_ms": 0,
        "window_end_ms": 0,
        "orders": 0,
        "revenue_cents": 0,
        "currency": "EUR",
    }
    totals = orders.group_by_key().aggregate(
        lambda: dict(zero), add, type="customer.revenue", version=1, name="totals"
    )
    biggest = orders.group_by_key().reduce(
        lambda best, data: best if best["total_cents"] >= data["total_cents"] else dict(data),
        type=T,
        version=V,
        name="biggest",
    )
    for table in (totals, biggest):
        table.to_stream(lambda u: None).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        for key, cents in [("a", 100), ("b", 5), ("a", 250), ("a", 50)]:
            driver.pipe("in", order(key, 0, cents))
        totals_now = driver.table("totals")
        assert {k: (v["orders"], v["revenue_cents"]) for k, v in totals_now.items()} == {
            "a": (3, 400),
            "b": (1, 5),
        }
        assert {k: v["total_cents"] for k, v in driver.table("biggest").items()} == {
            "a": 250,
            "b": 5,
        }
        assert driver.records("app-out") == []  # to_stream's None: no envelope


def test_a_value_that_does_not_fit_its_schema_fails_the_record_not_the_table() -> None:
    b = TopologyBuilder("app")
    table = (
        b.source("in", type=T, version=V)
        .group_by_key()
        .aggregate(
            dict,
            lambda acc, env: {"orders": "many"},
            type="customer.revenue",
            version=1,
            name="bad",
            on_error="dlq",
        )
    )
    table.to_stream(echo).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", order("a", 0))
        assert driver.table("bad") == {}
        assert len(driver.dead_letters) == 1
        assert driver.dead_letters[0].info and driver.dead_letters[0].info.step == "bad"


def test_a_record_without_a_key_is_dead_lettered_with_the_reason() -> None:
    with TestDriver(windowed(tumbling(60))) as driver:
        driver.pipe("in", order(None, 1))
        driver.pipe("in", order("a", 2))
        [dead] = driver.dead_letters
        assert dead.info and dead.info.exception.endswith("MissingKeyError")
        assert emitted(driver) == [("a", 0, 1, False)]


def picky(update: Update) -> Envelope:
    """``echo``, failing for an update caused by a 13-cent order."""
    if update.cause.data["total_cents"] == 13:
        raise ValueError("unlucky")
    return echo(update)


def test_a_failure_after_the_aggregation_undoes_its_change() -> None:
    b = TopologyBuilder("app")
    table = b.source("in", type=T, version=V).window(tumbling(60)).count(name="counts")
    table.to_stream(picky, on_error="dlq").to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", order("b", 2, cents=13))  # counted, then its update fails: undone
        driver.pipe("in", order("b", 3))
        assert len(driver.dead_letters) == 1
        assert emitted(driver) == [("b", 0, 1, False)]


def test_a_close_undone_by_a_failure_happens_again_with_the_next_record() -> None:
    """The open windows are kept in memory beside the store: a failed attempt that closed
    windows puts them back in the store, and they must close again, not be forgotten."""
    b = TopologyBuilder("app")
    windows = tumbling(60, grace=60)
    table = b.source("in", type=T, version=V).window(windows).count(emit="final", name="c")
    table.to_stream(picky, on_error="dlq").to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", order("a", 1))
        driver.pipe("in", order("a", 61))
        driver.pipe("in", order("a", 200, cents=13))  # closes both windows, then fails
        assert emitted(driver) == []
        assert len(driver.dead_letters) == 1
        driver.pipe("in", order("a", 300))
        assert emitted(driver) == [("a", 0, 1, True), ("a", 60_000, 1, True)]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda s: s.group_by_key().count(emit="final"), 'emit="final" needs windows'),
        (lambda s: s.window(tumbling(60)).count(emit="sometimes"), "emit must be one of"),
        (lambda s: s.window(hopping(60, 25)), "must be a multiple of its advance"),
        (lambda s: s.window(tumbling(0)), "must be positive"),
        (
            lambda s: s.window(60),
            r"needs tumbling\(...\), hopping\(...\), session\(...\) or sliding",
        ),
        (
            lambda s: s.group_by_key().aggregate(dict, dict, type="revenue"),
            "give its catalog version",
        ),
        (lambda s: s.group_by_key().count().late(), "has no windows"),
        (lambda s: s.window(session(30)).aggregate(dict, dict, type="x", version=1), "merge="),
        (
            lambda s: s.window(sliding(30)).aggregate(dict, dict, type="x", version=1),
            "sliding windows needs merge=",
        ),
        (lambda s: s.window(sliding(0)), "sliding window's size must be positive"),
        (lambda s: s.window(session(0)), "gap must be positive"),
    ],
)
def test_bad_declarations_fail_at_once_with_the_reason(build: Any, message: str) -> None:
    b = TopologyBuilder("app")
    with pytest.raises(TopologyError, match=message):
        build(b.source("in", type=T, version=V))


def test_build_checks_what_reads_a_table_and_its_value_schema() -> None:
    b = TopologyBuilder("app")
    source = b.source("in", type=T, version=V)
    table: Table = source.group_by_key().aggregate(dict, dict, type="no.such", version=1, name="t")
    b.add_sink("raw", owned("raw"), [table.name], type=T, version=V)
    with pytest.raises(TopologyValidationError) as caught:
        b.build(default_catalog())
    text = str(caught.value)
    assert "use .to_stream(fn)" in text
    assert "unknown schema no.such@1" in text


def test_describe_says_what_each_aggregation_keeps_and_when_it_emits() -> None:
    topology = load_topology("topology/revenue.py", app_id="r")
    text = describe_text(topology)
    assert (
        "Processor: revenue (aggregate: aggregate as customer.revenue@1, tumbling 60 s, "
        "grace 10 s, emits final, store revenue)"
    ) in text
    b = TopologyBuilder("app")
    b.source("in", type=T, version=V).window(session(30, grace=5)).count(name="s").to_stream(
        echo
    ).to(owned("out"), type=T, version=V)
    assert "count as long, session gap 30 s, grace 5 s, emits updates" in describe_text(
        b.build(default_catalog())
    )
    b = TopologyBuilder("app")
    b.source("in", type=T, version=V).window(sliding(600, grace=30)).count(name="s").to_stream(
        echo
    ).to(owned("out"), type=T, version=V)
    sliding_topology = b.build(default_catalog())
    assert "count as long, sliding 600 s, grace 30 s, emits updates" in describe_text(
        sliding_topology
    )
    (step,) = [n for n in describe_data(sliding_topology)["nodes"] if n.get("aggregate")]
    assert step["aggregate"]["windows"] == {"kind": "sliding", "size_s": 600.0, "grace_s": 30.0}
