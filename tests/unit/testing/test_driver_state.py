"""Stores and dedup in the DSL and the in-memory TestDriver (no broker)."""

from __future__ import annotations

import factories
import pytest

from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.state.changelog import decode_record
from streams.testing import TestDriver
from streams.topology import (
    ProcessingError,
    ProcessorContext,
    Topology,
    TopologyBuilder,
    TopologyValidationError,
    owned,
)
from streams.topology.execution.plan import Plan

T, V = "order.placed", 2
HOUR = 3600.0


def order(n: int, key: str = "k1") -> Envelope:
    return factories.order(n, key)


def dedup_topology(**kwargs: object) -> Topology:
    b = TopologyBuilder("app")
    out = b.source("in", type=T, version=V).dedup(ttl=HOUR, **kwargs)  # type: ignore[arg-type]
    if isinstance(out, dict):
        out["out"].to(owned("out"), type=T, version=V)
        out["dupes"].to(owned("dupes"), type=T, version=V)
    else:
        out.to(owned("out"), type=T, version=V)
    return b.build(default_catalog())


def test_the_same_envelope_piped_three_times_comes_out_once() -> None:
    first, other = order(1), order(2)
    with TestDriver(dedup_topology()) as driver:
        driver.pipe("in", [first, first, other, first])
        assert [e.id for e in driver.read("app-out")] == [first.id, other.id]
        assert driver.duplicates == 2


def test_an_id_is_new_again_once_its_window_has_passed() -> None:
    env = order(1)
    with TestDriver(dedup_topology()) as driver:
        driver.pipe("in", env)
        driver.advance_time(int(HOUR * 1000) - 10)
        driver.pipe("in", env)
        driver.advance_time(20)
        driver.pipe("in", env)
        assert len(driver.read("app-out")) == 2


def test_dedup_by_a_function_and_duplicates_to_an_audit_output() -> None:
    t = dedup_topology(by=lambda e: e.data["order_id"], duplicates_to="dupes")
    a, b = order(1), order(1)  # two envelopes (two ids), the same order id
    with TestDriver(t) as driver:
        driver.pipe("in", [a, b])
        assert [e.id for e in driver.read("app-out")] == [a.id]
        assert [e.id for e in driver.read("app-dupes")] == [b.id]


def test_dedup_is_per_partition_like_its_store() -> None:
    env = order(1)
    with TestDriver(dedup_topology(), partitions=2) as driver:
        driver.pipe("in", env, partition=0)
        driver.pipe("in", env, partition=1)  # a different store partition: not seen there
        assert len(driver.read("app-out")) == 2


def test_dedup_writes_its_changelog_and_a_failed_record_leaves_no_trace() -> None:
    b = TopologyBuilder("app")

    def boom(env: Envelope) -> Envelope:
        if env.data["total_cents"] == 2:
            raise ValueError("bad order")
        return env

    b.source("in", type=T, version=V).dedup(ttl=HOUR).map(boom).to(owned("out"), type=T, version=V)
    good, bad = order(1), order(2)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", good)
        with pytest.raises(ProcessingError):
            driver.pipe("in", bad)
        assert not driver.store("dedup").exists(bad.id)  # redelivered, it is processed again
        assert driver.changelog is not None
        (written,) = driver.changelog.records("app-dedup-changelog", 0)
        stored = decode_record(
            written.key, written.value, written.headers, topic="", partition=0, offset=0
        )
        assert (stored.key, stored.value) == (good.id.encode(), b"")


def test_processors_read_and_write_a_declared_store() -> None:
    b = TopologyBuilder("app")
    b.store("counts", backend="memory")

    def count(env: Envelope, ctx: ProcessorContext) -> Envelope:
        store = ctx.store("counts")
        n = int(store.get(env.key, b"0")) + 1
        store.set(env.key, str(n).encode())
        return env.with_data({**env.data, "total_cents": n})

    b.source("in", type=T, version=V).process(count).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("in", [order(1, "a"), order(2, "b"), order(3, "a")])
        assert [e.data["total_cents"] for e in driver.read("app-out")] == [1, 1, 2]
        assert driver.store("counts").get("a") == b"2"


def test_store_declarations_are_validated_at_build() -> None:
    b = TopologyBuilder("app", processing_guarantee="twice")
    b.store("bad name", backend="tape")
    b.store("orphan", source="elsewhere")
    b.source("in", type=T, version=V).to(owned("out"), type=T, version=V)
    b.source("in2", type=T, version=V).to(owned("out2"), type=T, version=V)
    with pytest.raises(TopologyValidationError) as info:
        b.build(default_catalog())
    text = str(info.value)
    assert "processing_guarantee 'twice'" in text
    assert "unknown backend 'tape'" in text
    assert "store 'bad name'" in text and "cannot tell which source topic" in text
    assert "source 'elsewhere' is not a topic the topology reads" in text


def test_a_dedup_step_without_stores_is_refused_when_compiled() -> None:
    with pytest.raises(Exception, match="has no state store"):
        Plan(dedup_topology(), lambda *_: None)


def test_describe_lists_stores_and_the_guarantee() -> None:
    b = TopologyBuilder("app", processing_guarantee="exactly_once")
    b.source("in", type=T, version=V).dedup(ttl=60).to(owned("out"), type=T, version=V)
    text = b.build(default_catalog()).describe()
    assert "dedup (rocksdb, changelog app-dedup-changelog, partitioned like in)" in text
    assert "Processing guarantee: exactly_once" in text
