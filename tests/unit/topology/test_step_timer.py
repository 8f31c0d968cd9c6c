"""Per-step times: a plan built with a StepTimer times each step of the records it is armed
for, without the steps it hands records to (what ``streams_step_seconds`` reports)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from factories import order

from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.state import ChangelogPartition, ChangelogStore, Checkpoint, MemoryBackend, RoutedStore
from streams.topology import TopologyBuilder, owned, session
from streams.topology.execution.plan import Plan
from streams.topology.execution.step_timer import StepTimer

T, V = "order.placed", 2


class Clock:
    """A clock the steps move: each step's own cost is known exactly."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def build(clock: Clock, timer: StepTimer | None) -> tuple[Plan, list[Envelope]]:
    def check(env: Envelope) -> Envelope:
        clock.spend(1.0)
        if env.data["total_cents"] < 0:
            raise ValueError("negative total")
        return env

    def split(env: Envelope) -> Iterator[Envelope]:
        clock.spend(2.0)
        yield env
        yield env

    b = TopologyBuilder("app")
    flow = b.source("in", type=T, version=V).map(check, name="check")
    flow.flat_map(split, name="split").to(owned("out"), type=T, version=V, name="out")
    written: list[Envelope] = []

    def emit(_topic: str, env: Envelope) -> None:
        clock.spend(4.0)
        written.append(env)

    return Plan(b.build(default_catalog()), emit, timer=timer), written


def test_an_armed_record_is_timed_per_step_without_the_steps_it_hands_on_to() -> None:
    clock = Clock()
    timer = StepTimer(clock)
    plan, written = build(clock, timer)
    timer.arm()
    plan.entries["in"](order(1))
    timer.disarm()
    # The sink is reached twice (the flat map's two envelopes); each step counts only its own.
    assert timer.take() == [("out", 4.0), ("out", 4.0), ("split", 2.0), ("check", 1.0)]
    assert len(written) == 2
    assert timer.take() == []  # taken once


def test_records_the_timer_is_not_armed_for_are_not_timed_and_run_the_same() -> None:
    clock = Clock()
    timer = StepTimer(clock)
    plan, written = build(clock, timer)
    plan.entries["in"](order(1))
    assert timer.take() == []
    assert len(written) == 2


def test_a_failing_step_keeps_its_time_and_the_next_record_is_timed_right() -> None:
    clock = Clock()
    timer = StepTimer(clock)
    plan, _written = build(clock, timer)
    timer.arm()
    with pytest.raises(Exception, match="negative total"):
        plan.entries["in"](order(-1))
    assert timer.take() == [("check", 1.0)]
    plan.entries["in"](order(2))  # nothing left over from the failed record
    assert timer.take() == [("out", 4.0), ("out", 4.0), ("split", 2.0), ("check", 1.0)]


def test_a_class_processor_is_made_and_initialised_once_for_timed_and_plain_records() -> None:
    made: list[object] = []

    class Count:
        def __init__(self) -> None:
            self.seen = 0
            made.append(self)

        def init(self, _ctx: object) -> None:
            made.append("init")

        def process(self, env: Envelope, _ctx: object) -> Envelope:
            self.seen += 1
            return env

    b = TopologyBuilder("app")
    b.source("in", type=T, version=V).process(Count, name="count").to(
        owned("out"), type=T, version=V, name="out"
    )
    timer = StepTimer(Clock())
    plan = Plan(b.build(default_catalog()), lambda *_: None, timer=timer)
    plan.entries["in"](order(1))
    timer.arm()
    plan.entries["in"](order(2))
    timer.disarm()
    plan.entries["in"](order(3))
    (count, init) = made
    assert init == "init" and isinstance(count, Count) and count.seen == 3
    assert [step for step, _ in timer.take()] == ["out", "count"]


def test_sessions_a_timed_record_opens_are_closed_by_plain_ones(tmp_path: Path) -> None:
    """Both compilations of a plan share what an aggregation keeps beside its store."""
    b = TopologyBuilder("app")
    table = (
        b.source("in", type="order.placed", version=2)
        .window(session(10))
        .count(emit="final", name="s")
    )
    table.to_stream(lambda u: u.cause).to(owned("out"), type="order.placed", version=2)
    topology = b.build(default_catalog())
    store = ChangelogStore(
        "app", "s", MemoryBackend(), consumer_config={}, state_dir=tmp_path, source_topic="in"
    )
    storage = MemoryBackend().open(store.partition_dir(0))
    opened = ChangelogPartition(store, 0, storage, Checkpoint("c", 0), None)
    store.partitions[0] = opened  # type: ignore[index]  # opened as the runtime would
    routed = RoutedStore(store, lambda: 0)
    timer = StepTimer(Clock())
    finals: list[Envelope] = []
    plan = Plan(topology, lambda _t, env: finals.append(env), {"s": routed}, timer=timer)
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def record(n: int, second: int) -> None:
        plan.entries["in"](dataclasses.replace(order(n), time=at + timedelta(seconds=second)))

    record(1, 0)  # plain: a session opens
    timer.arm()
    record(2, 100)  # timed: closes the first session, opens another
    timer.disarm()
    record(3, 200)  # plain: closes the second
    assert [e.data["total_cents"] for e in finals] == [2, 3]
