"""Table topics and joins in the TestDriver (the runtime's chain on in-memory clients)."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import factories
import pytest

from streams.envelope import Envelope
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.topology import (
    TopologyBuilder,
    TopologyError,
    TopologyValidationError,
    Update,
    owned,
    tumbling,
)
from streams.topology.describe import describe_text
from streams.topology.loader import load_topology

T, V = "order.placed", 2
START = datetime(2026, 1, 1, tzinfo=UTC)


def order(n: int, customer: str) -> Envelope:
    return factories.order(f"o{n}", customer, total_cents=n)


def profile(customer: str, tier: str, limit: int = 100) -> Envelope:
    data = {"customer_id": customer, "name": customer.upper(), "tier": tier, "limit_cents": limit}
    return Envelope.new("customer.profile", data, key=customer)


def tiers(driver: TestDriver, topic: str) -> list[tuple[str, str]]:
    return [(e.data["order_id"], e.data["tier"]) for e in driver.read(topic)]


def test_each_order_sees_its_customers_latest_profile_and_a_tombstone_deletes_it() -> None:
    topology = load_topology("topology/profiles.py", app_id="p", params={"backend": "memory"})
    with TestDriver(topology) as driver:
        driver.pipe("orders", order(1, "a"))
        driver.pipe("customers", profile("a", "gold"))
        driver.pipe("customers", profile("b", "bronze"))
        driver.pipe("orders", order(2, "a"))
        driver.pipe("customers", profile("a", "silver", 500))
        driver.pipe("orders", order(3, "a"))
        assert driver.table("profiles")["a"]["limit_cents"] == 500
        driver.pipe_raw("customers", None, key=b"a")  # the customer was deleted
        driver.pipe("orders", order(4, "a"))
        driver.pipe("orders", order(5, "b"))
        assert tiers(driver, "p-enriched") == [
            ("o1", "unknown"),
            ("o2", "gold"),
            ("o3", "silver"),
            ("o4", "unknown"),
            ("o5", "bronze"),
        ]
        assert set(driver.table("profiles")) == {"b"}
        assert driver.dead_letters == []  # a tombstone is no failure


def joined(inner: bool) -> TopologyBuilder:
    b = TopologyBuilder("app")
    orders = b.source("orders", type=T, version=V)
    profiles = b.table("customers", type="customer.profile", version=1, name="profiles")

    def tag(env: Envelope, value: Any) -> Envelope:
        data = {**env.data, "tier": value["tier"] if value else "none", "limit_cents": 0}
        return env.follow("order.enriched", data, version=1)

    (orders.join if inner else orders.left_join)(profiles, tag).to(
        owned("out"), type="order.enriched", version=1
    )
    return b


def test_an_inner_join_passes_only_records_whose_key_has_a_value() -> None:
    with TestDriver(joined(inner=True).build(default_catalog())) as driver:
        driver.pipe("customers", profile("a", "gold"))
        driver.pipe("orders", order(1, "a"))
        driver.pipe("orders", order(2, "z"))
        assert tiers(driver, "app-out") == [("o1", "gold")]


def test_a_stream_joins_an_aggregations_table_too() -> None:
    b = TopologyBuilder("app")
    orders = b.source("orders", type=T, version=V)
    counts = orders.group_by_key().count(name="orders-so-far")
    counts.to_stream(lambda u: None).to(owned("unused"), type=T, version=V)
    payments = b.source("payments", type=T, version=V)

    def with_count(env: Envelope, n: int | None) -> Envelope:
        data = {**env.data, "tier": f"{n or 0} orders", "limit_cents": 0}
        return env.follow("order.enriched", data, version=1)

    payments.left_join(counts, with_count).to(owned("out"), type="order.enriched", version=1)
    with TestDriver(b.build(default_catalog())) as driver:
        for n in range(3):
            driver.pipe("orders", order(n, "a"))
        driver.pipe("payments", order(10, "a"))
        driver.pipe("payments", order(11, "b"))
        assert tiers(driver, "app-out") == [("o10", "3 orders"), ("o11", "0 orders")]


def test_a_join_that_fails_follows_its_error_policy() -> None:
    b = TopologyBuilder("app")
    profiles = b.table("customers", type="customer.profile", version=1, name="profiles")
    b.source("orders", type=T, version=V).left_join(
        profiles, lambda env, value: "not an envelope", on_error="dlq"
    ).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("orders", order(1, "a"))
        [dead] = driver.dead_letters
        assert dead.info and "must return an Envelope" in dead.info.message


def test_a_join_of_topics_with_different_partition_counts_is_refused() -> None:
    topology = joined(inner=False).build(default_catalog())
    with pytest.raises(TopologyError, match=r"'orders' has 2 partition.*'customers' 3"):
        TestDriver(topology, partitions={"orders": 2, "customers": 3})


def test_a_rekeyed_stream_reaches_the_join_through_a_repartition_topic() -> None:
    b = TopologyBuilder("app")
    profiles = b.table("customers", type="customer.profile", version=1, name="profiles")
    orders = b.source("orders", type=T, version=V).rekey(lambda e: e.data["customer_id"])
    orders.left_join(profiles, lambda env, value: env, name="j").to(owned("out"), type=T, version=V)
    topology = b.build(default_catalog())
    assert "app-j-repartition" in topology.topics_read
    text = describe_text(topology)
    assert "Processor: profiles (table" in text and "Processor: j (join" in text


def test_bad_table_declarations_are_refused_with_the_reason() -> None:
    b = TopologyBuilder("app")
    windowed = b.source("orders", type=T, version=V).window(tumbling(60)).count()
    with pytest.raises(TopologyError, match="has windows"):
        b.source("more", type=T, version=V).join(windowed, lambda e, v: e)
    b = TopologyBuilder("app")
    b.table("customers", type="customer.profile", version=1, name="profiles")
    b.add_sink("copy", owned("copy"), ["source-customers"], type="customer.profile", version=1)
    with pytest.raises(TopologyValidationError, match="is read by its table step only"):
        b.build(default_catalog())


def pairs_topology(within: float = 10, grace: float = 0, *, left: bool = False) -> TopologyBuilder:
    b = TopologyBuilder("app")
    orders = b.source("orders", type=T, version=V)
    payments = b.source("payments", type=T, version=V)

    def paired(order: Envelope, payment: Envelope | None) -> Envelope:
        other = payment.data["order_id"] if payment is not None else "-"
        key = f"{order.data['order_id']}|{other}"
        return order.follow(T, order.data, version=V, key=key)

    join = orders.left_join_within if left else orders.join_within
    join(payments, paired, within=within, grace=grace, name="pairs").to(
        owned("out"), type=T, version=V
    )
    return b


def at(env: Envelope, second: float) -> Envelope:
    return dataclasses.replace(env, time=START + timedelta(seconds=second))


def test_a_windowed_join_pairs_records_of_one_key_within_the_window_once() -> None:
    rng = random.Random(3)
    sent: list[tuple[str, str, str, float]] = []  # topic, id, key, second
    now = 0.0
    for n in range(200):
        now += rng.uniform(0, 3)
        sent.append((rng.choice(["orders", "payments"]), f"{n}", rng.choice("ab"), now))
    with TestDriver(pairs_topology(within=10).build(default_catalog())) as driver:
        for topic, n, key, second in sent:
            env = at(order(0, key), second)
            driver.pipe(topic, dataclasses.replace(env, data={**env.data, "order_id": n}))
        got = sorted((r.key or b"").decode() for r in driver.records("app-out"))
    want = sorted(
        f"{o[1]}|{p[1]}"
        for o in sent
        if o[0] == "orders"
        for p in sent
        if p[0] == "payments" and p[2] == o[2] and abs(p[3] - o[3]) <= 10
    )
    assert got == want and len(want) > 50


def test_a_left_windowed_join_hands_on_each_left_record_that_met_nothing_once() -> None:
    rng = random.Random(5)
    sent: list[tuple[str, str, str, float]] = []  # topic, id, key, second
    now = 0.0
    for n in range(200):
        now += rng.uniform(0, 4)
        sent.append((rng.choice(["orders", "payments"]), f"{n}", rng.choice("ab"), now))
    # Then a payment of another key an hour on: every order's window is over.
    sent.append(("payments", "end", "z", now + 3600))
    with TestDriver(pairs_topology(within=5, left=True).build(default_catalog())) as driver:
        for topic, n, key, second in sent:
            env = at(order(0, key), second)
            driver.pipe(topic, dataclasses.replace(env, data={**env.data, "order_id": n}))
        got = sorted((r.key or b"").decode() for r in driver.records("app-out"))
    pairs = [
        (o[1], p[1])
        for o in sent
        if o[0] == "orders"
        for p in sent
        if p[0] == "payments" and p[2] == o[2] and abs(p[3] - o[3]) <= 5
    ]
    met = {o for o, _ in pairs}
    alone = [o[1] for o in sent if o[0] == "orders" and o[1] not in met]
    want = sorted([f"{o}|{p}" for o, p in pairs] + [f"{o}|-" for o in alone])
    assert got == want and len(alone) > 10 and len(pairs) > 10
    assert "left join, within 5 s" in describe_text(
        pairs_topology(5, left=True).build(default_catalog())
    )


def test_a_record_too_late_to_meet_anything_is_dead_lettered_and_the_store_forgets() -> None:
    with TestDriver(pairs_topology(within=10, grace=5).build(default_catalog())) as driver:
        driver.pipe("orders", at(order(1, "a"), 0))
        driver.pipe("payments", at(order(2, "a"), 12))  # 12 s apart: no pair
        driver.pipe("payments", at(order(3, "a"), 8))  # out of order, in the window
        assert [(r.key or b"").decode() for r in driver.records("app-out")] == ["o1|o3"]
        driver.pipe("orders", at(order(4, "b"), 100))  # the orders' stream time moves on
        driver.pipe("orders", at(order(5, "a"), 70))  # 70 + 10 + 5 <= 100: late
        [dead] = driver.dead_letters
        assert dead.info and dead.info.exception.endswith("LateRecordError")
        state = driver._runtime.state  # what the store holds: only what can still pair
        assert state is not None
        part = state.stores["pairs"].partitions[0]

        def kept() -> list[bytes]:
            return [k for k, _ in part.items() if k[:1] in (b"l", b"r")]

        # Payments wait for the orders' stream time, orders for the payments': the topics
        # are read side by side, and payments may still come for order 1.
        assert kept() == [b"l\x00\x01a", b"l\x00\x01b"]
        driver.pipe("payments", at(order(6, "b"), 100))
        assert kept() == [b"l\x00\x01b", b"r\x00\x01b"]


def test_windowed_joins_need_two_co_partitioned_streams_of_other_topics() -> None:
    topology = pairs_topology().build(default_catalog())
    with pytest.raises(TopologyError, match="not co-partitioned"):
        TestDriver(topology, partitions={"orders": 2, "payments": 3})
    b = TopologyBuilder("app")
    orders = b.source("orders", type=T, version=V)
    orders.join_within(orders.filter(bool), lambda a, _b: a, within=5).to(
        owned("out"), type=T, version=V
    )
    with pytest.raises(TopologyError, match="on both sides"):
        TestDriver(b.build(default_catalog()))


def test_rekeyed_sides_of_a_windowed_join_meet_through_repartition_topics() -> None:
    """Orders keyed by customer, payments by payment id: both rekeyed by order id, each
    through a repartition topic of its own, meet partition by partition."""
    b = TopologyBuilder("app")
    orders = b.source("orders", type=T, version=V).rekey(lambda e: e.data["order_id"])
    payments = b.source("payments", type=T, version=V).rekey(lambda e: e.data["order_id"])
    orders.join_within(payments, lambda o, p: p, within=60, name="paid").to(
        owned("out"), type=T, version=V
    )
    topology = b.build(default_catalog())
    assert sorted(topology.repartition_topics) == ["app-paid-2-repartition", "app-paid-repartition"]
    with TestDriver(topology, partitions=3) as driver:
        for n in range(12):
            placed = at(order(n, f"c{n % 4}"), n)
            paid = dataclasses.replace(placed, key=f"p{n}")  # keyed by payment
            driver.pipe("orders", placed)
            if n % 3:
                driver.pipe("payments", at(paid, n + 30))
        got = sorted(e.data["order_id"] for e in driver.read("app-out"))
    assert got == sorted(f"o{n}" for n in range(12) if n % 3)


def test_a_table_join_changes_with_either_table_and_forgets_deleted_keys() -> None:
    b = TopologyBuilder("app")
    profiles = b.table("customers", type="customer.profile", version=1, name="profiles")
    counts = b.source("orders", type=T, version=V).group_by_key().count(name="counts")
    joined = profiles.join(counts, lambda p, n: f"{p['tier']}:{n}", name="tier-and-count")

    def out(update: Update) -> Envelope:
        key = f"{update.key}|{update.value}"
        return Envelope.new(T, order(0, update.key).data, version=V, key=key)

    joined.to_stream(out).to(owned("out"), type=T, version=V)
    with TestDriver(b.build(default_catalog())) as driver:
        driver.pipe("orders", order(1, "a"))  # no profile yet: nothing joined
        driver.pipe("customers", profile("a", "gold"))
        driver.pipe("orders", order(2, "a"))
        driver.pipe("customers", profile("a", "silver"))
        driver.pipe_raw("customers", None, key=b"a")
        driver.pipe("orders", order(3, "a"))  # deleted: nothing joined
        assert [(r.key or b"").decode() for r in driver.records("app-out")] == [
            "a|gold:1",
            "a|gold:2",
            "a|silver:2",
            "a|None",
        ]


def payment(n: int, order_id: str, cents: int) -> Envelope:
    return factories.payment(f"p{n}", order_id, cents)


def test_revenue_joins_each_payment_with_its_order_within_an_hour_whichever_comes_first() -> None:
    topology = load_topology(
        "topology/revenue.py", app_id="r", params={"backend": "memory", "payments": "payments"}
    )
    rng = random.Random(8)
    orders = [at(order(n, f"c{n % 3}"), n * 60) for n in range(40)]
    sent = []
    for n, o in enumerate(orders):
        for k in range(rng.choice([0, 1, 2])):  # none, one or two payments per order
            delay = rng.choice([-120, 30, 1800, 3500, 3700, 7200])  # some before, some too late
            sent.append(at(payment(n * 10 + k, o.data["order_id"], n), n * 60 + delay))
    events = sorted(
        [("orders", o) for o in orders] + [("payments", p) for p in sent], key=lambda e: e[1].time
    )
    with TestDriver(topology, partitions=2) as driver:
        for topic, env in events:
            driver.pipe(topic, env)
        got = sorted(
            (e.data["payment_id"], e.data["customer_id"], e.data["order_total_cents"])
            for e in driver.read("r-paid")
        )
        assert driver.dead_letters == []
    by_id = {o.data["order_id"]: o for o in orders}
    want = sorted(
        (p.data["payment_id"], o.data["customer_id"], o.data["total_cents"])
        for p in sent
        for o in [by_id[p.data["order_id"]]]
        if abs((p.time - o.time).total_seconds()) <= 3600
    )
    assert got == want and 10 < len(want) < len(sent)
