"""Keyed state after a rekey reads through a repartition topic, as in Kafka Streams: each
new key's records meet its state on one partition, in order from the rekey on."""

from __future__ import annotations

import factories
import pytest

from streams.envelope import Envelope
from streams.testing import TestDriver
from streams.topology import Topology, TopologyBuilder, TopologyValidationError, owned


def order(n: int, customer: str, key: str) -> Envelope:
    return factories.order(n, customer, key=key)


def first_order_per_customer(**builder: bool) -> Topology:
    b = TopologyBuilder("app", **builder)
    b.source("in", type="order.placed", version=2).rekey(
        lambda e: e.data["customer_id"], name="by-customer"
    ).dedup(ttl=3600, by=lambda e: e.key or "", name="first").to(
        owned("out"), type="order.placed", version=2
    )
    return b.build()


def test_a_dedup_after_a_rekey_sees_every_record_of_the_new_key() -> None:
    topology = first_order_per_customer()
    # customer c-1's orders arrive under six original keys, spread over four partitions
    orders = [order(n, "c-1", f"k-{n}") for n in range(6)] + [order(9, "c-2", "k-9")]
    with TestDriver(topology, partitions=4) as driver:
        driver.pipe("in", orders)
        assert {r.partition for r in driver.records("in")} == {0, 1, 2, 3}
        out = driver.read("app-out")
    assert sorted((e.key, e.data["order_id"]) for e in out) == [("c-1", "o-0"), ("c-2", "o-9")]


def test_the_repartition_topic_is_owned_read_and_described_but_not_an_output() -> None:
    topology = first_order_per_customer()
    assert topology.repartition_topics == ["app-first-repartition"]
    assert topology.topics_read == ["in", "app-first-repartition"]
    assert topology.topics_written == ["app-out"]
    assert ("app-first-repartition", "repartition") in {
        (o.name, o.purpose) for o in topology.owned_topics
    }
    assert topology.store_source("first") == "app-first-repartition"
    text = topology.describe()
    assert "topic: app-first-repartition, repartition: any envelope, by its new key" in text


def test_records_of_one_new_key_keep_their_order_through_the_repartition() -> None:
    seen: list[str] = []
    b = TopologyBuilder("app")
    b.store("last", backend="memory", source=owned("note-repartition"))
    b.source("in", type="order.placed", version=2).rekey(
        lambda e: e.data["customer_id"], name="by-customer"
    ).process(lambda e, ctx: seen.append(e.data["order_id"]) or e, name="note").to(
        owned("out"), type="order.placed", version=2
    )
    topology = b.build()
    assert topology.repartition_topics == ["app-note-repartition"]  # a store is declared
    with TestDriver(topology, partitions=4) as driver:
        for n in range(20):  # one customer, twenty original keys: every input partition
            driver.pipe("in", order(n, "c-1", f"k-{n}"))
    assert seen == [f"o-{n}" for n in range(20)]


def test_keyed_state_after_a_rekey_without_repartitioning_is_refused_at_build() -> None:
    with pytest.raises(TopologyValidationError, match="keeps state by key after a rekey"):
        first_order_per_customer(repartition=False)


def test_without_a_rekey_nothing_is_repartitioned() -> None:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).dedup(ttl=60).to(
        owned("out"), type="order.placed", version=2
    )
    topology = b.build()
    assert topology.repartition_topics == [] and topology.topics_read == ["in"]
