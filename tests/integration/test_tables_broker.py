"""A stream-table join on the real broker: ``topology/profiles.py``.

Customer profiles go to a compacted topic; once the app has read them, orders come in and
each leaves with its customer's tier. Profiles change (and one is deleted with a
tombstone); the orders after that see the new values. A join of topics that are not
co-partitioned is refused before the first poll, in one line.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import streams
from confluent_kafka.admin import AdminClient
from factories import order
from runtime_thread import RuntimeThread

from streams.cluster import Topics, create_topic
from streams.envelope import Envelope
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.topics import prepare_topics
from streams.schemas import default_catalog
from streams.testing import (
    KafkaIO,
    TopicFactory,
    TopologyProcess,
    caught_up,
    produce_records,
    wait_until,
)
from streams.topology import TopologyBuilder, owned
from streams.topology.partitioning import partition_for

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "topology" / "profiles.py"
PARTITIONS = 3
CUSTOMERS = [f"c-{n}" for n in range(12)]


def profile(customer: str, tier: str) -> Envelope:
    data = {"customer_id": customer, "name": customer.upper(), "tier": tier, "limit_cents": 1}
    return Envelope.new("customer.profile", data, key=customer)


def tiers(envs: Sequence[Envelope]) -> dict[str, str]:
    return {e.data["order_id"]: e.data["tier"] for e in envs}


def test_each_order_leaves_with_its_customers_latest_profile(
    kafka_bootstrap: str, kafka_admin: AdminClient, kafka_io: KafkaIO, app_id: str
) -> None:
    orders, customers = f"{app_id}-in-orders", f"{app_id}-in-customers"
    create_topic(kafka_admin, orders, partitions=PARTITIONS)
    create_topic(
        kafka_admin, customers, partitions=PARTITIONS, config={"cleanup.policy": "compact"}
    )
    settings = {"input": orders, "customers": customers}
    with TopologyProcess(PROFILES, kafka_bootstrap, app_id=app_id, settings=settings):
        kafka_io.produce(customers, [profile(c, "gold") for c in CUSTOMERS])
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, customers), 60, what="profiles")
        first = kafka_io.produce(orders, [order(n, c) for n, c in enumerate(CUSTOMERS)])
        out = kafka_io.wait_for_envelopes(f"{app_id}-enriched", len(first))
        assert set(tiers(out).values()) == {"gold"}

        kafka_io.produce(customers, [profile(c, "silver") for c in CUSTOMERS[:6]])
        produce_records(kafka_bootstrap, customers, [(b"c-11", None, None)])  # deleted
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, customers), 60, what="changes")
        later = [order(100 + n, c) for n, c in enumerate(CUSTOMERS)]
        kafka_io.produce(orders, later)
        out = kafka_io.wait_for_envelopes(f"{app_id}-enriched", len(first) + len(later))
    seen = tiers(out)
    assert [seen[f"o-{100 + n}"] for n in range(12)] == ["silver"] * 6 + ["gold"] * 5 + ["unknown"]
    by_id = {o.id: o for o in later}  # each output follows its order
    assert sorted(e.causation_id or "" for e in out if e.causation_id in by_id) == sorted(by_id)


def test_a_join_of_topics_that_are_not_co_partitioned_is_refused_in_one_line(
    kafka_bootstrap: str, make_topic: TopicFactory
) -> None:
    orders = make_topic("orders", partitions=3)
    customers = make_topic("customers", partitions=2)
    settings = ["--set", f"input={orders}", "--set", f"customers={customers}"]
    result = streams("run", str(PROFILES), *settings, "--no-status", bootstrap=kafka_bootstrap)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not co-partitioned" in errors[0], result.stderr
    assert f"{orders!r} has 3 partition(s), table topic {customers!r} 2" in errors[0]
    assert "Traceback" not in result.stderr


def test_a_new_instance_restores_the_table_and_joins_as_the_last_one_did(
    kafka_bootstrap: str, kafka_admin: AdminClient, kafka_io: KafkaIO, app_id: str, tmp_path: Path
) -> None:
    """The table is a store: a new machine (no local state) restores it from its changelog;
    the profiles topic, read and committed already, is not read again."""
    orders, customers = f"{app_id}-in-orders", f"{app_id}-in-customers"
    create_topic(kafka_admin, orders, partitions=PARTITIONS)
    create_topic(
        kafka_admin, customers, partitions=PARTITIONS, config={"cleanup.policy": "compact"}
    )
    settings = {"input": orders, "customers": customers}

    def instance(state: str) -> TopologyProcess:
        args = ["--state-dir", str(tmp_path / state)]
        return TopologyProcess(
            PROFILES, kafka_bootstrap, app_id=app_id, settings=settings, args=args
        )

    with instance("first"):
        kafka_io.produce(customers, [profile(c, "gold") for c in CUSTOMERS[:6]])
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, customers), 60, what="profiles")
    with instance("second") as second:
        second.wait_started(assigned=True)
        kafka_io.produce(orders, [order(n, c) for n, c in enumerate(CUSTOMERS)])
        out = kafka_io.wait_for_envelopes(f"{app_id}-enriched", len(CUSTOMERS))
        restored = second.output()
    assert [tiers(out)[f"o-{n}"] for n in range(12)] == ["gold"] * 6 + ["unknown"] * 6
    assert "restored store partition" in restored


@pytest.mark.parametrize("left", [False, True], ids=["inner", "left"])
def test_a_five_minute_windowed_join_matches_a_brute_force_join(  # noqa: PLR0917
    left: bool,
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    kafka_io: KafkaIO,
    app_id: str,
    tmp_path: Path,
) -> None:
    """Orders and payments of 20 customers over an hour of event time, a few minutes out
    of order at most (inside the grace): the pairs out are every (order, payment) pair of
    one customer at most 5 minutes apart, each once; with a left join, also each order
    that met no payment, once (after a payment hours later in each partition)."""
    rng = random.Random(9)
    orders_topic, payments_topic = f"{app_id}-in-orders", f"{app_id}-in-payments"
    for topic in (orders_topic, payments_topic):
        create_topic(kafka_admin, topic, partitions=PARTITIONS)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    sent: dict[str, list[Envelope]] = {orders_topic: [], payments_topic: []}
    for n in range(600):
        when = start + timedelta(seconds=n * 6 - rng.uniform(0, 120))
        env = dataclasses.replace(order(n, rng.choice(CUSTOMERS)), time=when)
        sent[rng.choice([orders_topic, payments_topic])].append(env)

    def paired(order: Envelope, payment: Envelope | None) -> Envelope:
        pair = f"{order.data['order_id']}|{payment.data['order_id'] if payment else '-'}"
        return order.follow("order.placed", order.data, version=2, key=pair)

    b = TopologyBuilder(app_id)
    orders = b.source(orders_topic, type="order.placed", version=2)
    payments = b.source(payments_topic, type="order.placed", version=2)
    join = orders.left_join_within if left else orders.join_within
    join(payments, paired, within=300, grace=180, name="pairs").to(
        owned("pairs"), type="order.placed", version=2
    )
    topology = b.build(default_catalog())
    prepare_topics(Topics(kafka_admin), topology)
    want = sorted(
        f"{o.data['order_id']}|{p.data['order_id']}"
        for o in sent[orders_topic]
        for p in sent[payments_topic]
        if o.key == p.key and abs((o.time - p.time).total_seconds()) <= 300
    )
    if left:
        met = {pair.split("|")[0] for pair in want}
        want = sorted(
            want
            + [
                f"{o.data['order_id']}|-"
                for o in sent[orders_topic]
                if o.data["order_id"] not in met
            ]
        )
    by_partition = {partition_for(c.encode(), PARTITIONS): c for c in CUSTOMERS}
    later = [  # hours on, in each partition: every order's window is over
        dataclasses.replace(order(1000 + p, c), time=start + timedelta(hours=3))
        for p, c in sorted(by_partition.items())
    ]
    config = RuntimeConfig(bootstrap=kafka_bootstrap, state_dir=str(tmp_path))
    instance = RuntimeThread(Runtime(topology, config))
    try:
        kafka_io.produce(orders_topic, sent[orders_topic])
        kafka_io.produce(payments_topic, sent[payments_topic])
        if left:
            # Hours later in processing too: read before the last orders, a payment hours
            # on would make them late (a side may run ahead of the other).
            wait_until(lambda: caught_up(kafka_bootstrap, app_id, orders_topic), 60, what="read")
            kafka_io.produce(payments_topic, later)
        out = kafka_io.wait_for_records(f"{app_id}-pairs", len(want), timeout=120)
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, payments_topic), 60, what="read")
        wait_until(lambda: caught_up(kafka_bootstrap, app_id, orders_topic), 60, what="read")
    finally:
        assert instance.stop(30) is None
    out = kafka_io.wait_for_records(f"{app_id}-pairs", len(want))
    assert sorted((m.key() or b"").decode() for m in out) == want


def test_a_replayed_history_joins_each_order_with_the_profile_of_its_time(
    kafka_bootstrap: str, kafka_admin: AdminClient, kafka_io: KafkaIO, app_id: str
) -> None:
    """Two hours of profile changes and of orders, both topics written in full before the
    app starts (a first start on history, a replay): the two are fetched side by side, one
    ahead of the other, yet each order sees its customer's tier as it was at the order's
    time, not the one the topic ends with."""
    orders, customers = f"{app_id}-in-orders", f"{app_id}-in-customers"
    create_topic(kafka_admin, orders, partitions=PARTITIONS)
    create_topic(
        kafka_admin, customers, partitions=PARTITIONS, config={"cleanup.policy": "compact"}
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    names = ["bronze", "silver", "gold", "platinum"]
    changes = [  # each customer's tier changes every ten minutes (one second past)
        dataclasses.replace(
            profile(c, names[(k + i) % 4]), time=start + timedelta(minutes=10 * k, seconds=1)
        )
        for k in range(12)
        for i, c in enumerate(CUSTOMERS)
    ]
    sent = [  # an order per customer every 30 s
        dataclasses.replace(order(n * 100 + i, c), time=start + timedelta(seconds=30 * n))
        for n in range(1, 240)
        for i, c in enumerate(CUSTOMERS)
    ]
    kafka_io.produce(customers, changes)
    kafka_io.produce(orders, sent)

    def tier_at(customer: str, when: datetime) -> str:
        mine = [p for p in changes if p.key == customer and p.time <= when]
        return mine[-1].data["tier"]

    settings = {"input": orders, "customers": customers}
    with TopologyProcess(PROFILES, kafka_bootstrap, app_id=app_id, settings=settings):
        out = kafka_io.wait_for_envelopes(f"{app_id}-enriched", len(sent), timeout=120)
    want = {o.data["order_id"]: tier_at(o.key or "", o.time) for o in sent}
    seen = tiers(out)
    wrong = [k for k in want if seen.get(k) != want[k]]
    assert wrong == [], f"{len(wrong)} of {len(want)} orders saw another tier, e.g. {wrong[:3]}"
