"""Which inputs get retry tiers and a waiting room: those with a node a failure in is
retried. Every input keeps its DLQ, and a failure where no tier exists reaches it."""

from __future__ import annotations

import factories
import pytest

from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.testing import TestDriver
from streams.topology import Topology, TopologyBuilder, TopologyError, Update, owned, tumbling
from streams.topology.failure_topics import failure_topics, retried_inputs
from streams.topology.validation import validate

T, V = "payment.captured", 1


def by_method(env: Envelope) -> str:
    return str(env.data["method"])


def echo(update: Update) -> Envelope:
    return update.cause


def windowed_count() -> Topology:
    """The first-hour user's app: dedup, rekey, a count per minute."""
    b = TopologyBuilder("nc1", retry="1s, 10s")
    orders = b.source("orders", type=T, version=V, name="orders")
    rekeyed = orders.dedup(ttl=3600, name="dedup").rekey(by_method, name="by-method")
    counts = rekeyed.window(tumbling(60)).count(name="counts")
    counts.to_stream(echo, name="to-counts").to(owned("counts"), type=T, version=V)
    return b.build()


def payment(n: int) -> Envelope:
    return factories.payment(f"p-{n}", f"o-{n}")


def test_a_count_over_a_repartition_topic_gets_a_dlq_and_no_retry_tier() -> None:
    (orders, repartition) = failure_topics(windowed_count())
    assert orders.all == ("nc1-orders-retry-1", "nc1-orders-retry-2", "nc1-orders-dlq")
    # the count and what its updates feed never retry: the app id is not repeated either
    assert repartition.topic == "nc1-counts-repartition"
    assert repartition.all == ("nc1-counts-repartition-dlq",)
    assert retried_inputs(windowed_count()) == ["orders"]


def test_a_step_policy_on_an_input_without_topology_retries_gives_it_tiers() -> None:
    b = TopologyBuilder("app")
    b.source("a", type=T, version=V).map(lambda e: e, retry="5s").to(owned("x"), type=T, version=V)
    b.source("b", type=T, version=V).map(lambda e: e).to(owned("y"), type=T, version=V)
    a, other = failure_topics(b.build())
    assert a.all == ("app-a-retry-1", "app-a-dlq")
    assert other.all == ("app-b-dlq",)  # undecodable records still have somewhere to go


def test_without_any_retry_policy_every_input_has_its_dlq_only() -> None:
    b = TopologyBuilder("app")
    b.source("a", type=T, version=V).to(owned("x"), type=T, version=V)
    assert [t.all for t in failure_topics(b.build())] == [("app-a-dlq",)]


def test_a_sink_and_an_aggregation_with_what_it_feeds_are_never_retried() -> None:
    topology = windowed_count()
    assert topology.retry_for("by-method") == RetryPolicy.parse("1s, 10s")
    for node in ("counts", "to-counts", *[s.name for s in topology.sinks]):
        assert topology.retry_for(node) == RetryPolicy.no_retries(), node


def test_a_failure_on_an_input_without_tiers_is_dead_lettered_at_once() -> None:
    def fail(_update: Update) -> Envelope:
        raise TimeoutError("flaky")

    b = TopologyBuilder("nc1", retry="1s, 10s")
    rekeyed = b.source("orders", type=T, version=V).rekey(by_method, name="by-method")
    rekeyed.group_by_key().count(name="counts").to_stream(fail, name="to-counts").to(
        owned("counts"), type=T, version=V
    )
    with TestDriver(b.build()) as d:
        d.pipe("orders", [payment(1), payment(2)])
        assert d.retried == [] and d.waiting_retries == 0
        assert [dead.topic for dead in d.dead_letters] == ["nc1-counts-repartition-dlq"] * 2
        assert d.dead_letters[0].info.step == "to-counts"
        # no tier, no waiting room: only the repartition topic's DLQ was made for it
        made = [t for t in d.cluster.topics() if t.startswith("nc1-counts-repartition")]
        assert sorted(made) == ["nc1-counts-repartition", "nc1-counts-repartition-dlq"]


def test_inputs_that_would_share_failure_topics_are_refused() -> None:
    b = TopologyBuilder("shop")
    b.source("orders", type=T, version=V).to(owned("x"), type=T, version=V)
    b.source("shop-orders", type=T, version=V).to(owned("y"), type=T, version=V)
    with pytest.raises(TopologyError, match="'orders' and 'shop-orders' would share"):
        b.build()
    b = TopologyBuilder("other")
    b.source("orders", type=T, version=V).to(owned("x"), type=T, version=V)
    b.source("shop-orders", type=T, version=V).to(owned("y"), type=T, version=V)
    topology = b.build()
    assert validate(topology, None) == []
    with pytest.raises(TopologyError, match="would share the retry and dead-letter topics"):
        topology.with_app_id("shop")  # streams run --app-id shop
