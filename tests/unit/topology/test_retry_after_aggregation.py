"""`retry=` where it cannot apply is refused at build, and `describe` never shows a retry
that will not happen: an aggregation and every step its updates (or late records) feed
run within the aggregation's attempt, so a failure there goes to the DLQ at once. The
way to retry such work is to write the updates to an owned topic and read them back."""

from __future__ import annotations

from collections import Counter

import factories
import pytest

from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.testing import TestDriver
from streams.topology import (
    Stream,
    Table,
    Topology,
    TopologyBuilder,
    TopologyValidationError,
    Update,
    owned,
    tumbling,
)
from streams.topology.describe import describe_data
from streams.topology.failure_topics import failure_topics

T, V = "payment.captured", 1

REFUSAL = (
    "step 'score' cannot be retried: aggregation 'per-card' feeds it, so a failure there "
    "sends the aggregation's input record to the DLQ at once (a retry would meet a later "
    "stream time, its window maybe closed); drop its retry=, or write the updates to an "
    "owned topic with .to(owned(...)) and put retry= on a step after "
    "builder.source(owned(...)), which reads them back"
)


def payment(n: int, card: str = "c-1") -> Envelope:
    return factories.payment(f"p-{n}", card, key=f"o-{n}")


def card(card_id: str) -> Envelope:
    data = {"payment_id": card_id, "order_id": card_id, "amount_cents": 0}
    return Envelope.new(T, {**data, "currency": "EUR", "method": "CARD"}, key=card_id)


def by_card(env: Envelope) -> str:
    return str(env.data["order_id"])


def the_payment(update: Update) -> Envelope:
    return update.cause


def with_card(env: Envelope, _card: object) -> Envelope:
    return env


class Score:
    """Times out on its first ``fails`` calls (a scoring service down for a while)."""

    def __init__(self, fails: int = 0) -> None:
        self.fails = fails
        self.calls: Counter[str] = Counter()

    def __call__(self, env: Envelope) -> Envelope:
        self.calls[env.data["payment_id"]] += 1
        if sum(self.calls.values()) <= self.fails:
            raise TimeoutError("scoring timed out")
        return env


def per_card(b: TopologyBuilder) -> tuple[Table, Table]:
    """Payments rekeyed by card and counted per minute; and the cards table."""
    cards = b.table("cards", type=T, version=V)
    payments = b.source("payments", type=T, version=V, name="payments")
    rekeyed = payments.rekey(by_card, name="by-card")
    return rekeyed.window(tumbling(60)).count(name="per-card"), cards


def fraud_check(
    score: Score, *, retry: str | None = None, step_retry: str | None = None
) -> TopologyBuilder:
    """The issue's topology: a count per card, joined with the card, then scored."""
    b = TopologyBuilder("fraud", retry=retry)
    counts, cards = per_card(b)
    joined = counts.to_stream(the_payment, name="updates").join(cards, with_card, name="joined")
    joined.map(score, name="score", retry=step_retry).to(owned("alerts"), type=T, version=V)
    return b


def read_back(score: Score, *, retry: str | None = None, step_retry: str | None = None) -> Topology:
    """The same, the updates written to an owned topic and read back before the join."""
    b = TopologyBuilder("fraud", retry=retry)
    counts, cards = per_card(b)
    counts.to_stream(the_payment, name="updates").to(owned("per-card-counts"), type=T, version=V)
    counted: Stream = b.source(owned("per-card-counts"), type=T, version=V, name="counted")
    joined = counted.join(cards, with_card, name="joined")
    joined.map(score, name="score", retry=step_retry).to(owned("alerts"), type=T, version=V)
    return b.build()


def test_a_step_retry_after_an_aggregation_is_refused_in_one_line_saying_what_to_do() -> None:
    with pytest.raises(TopologyValidationError) as refused:
        fraud_check(Score(), step_retry="1s, 2s").build()
    assert refused.value.problems == [REFUSAL]
    assert "\n" not in refused.value.problems[0]


def test_a_retry_on_late_records_or_a_lower_level_processor_is_refused_too() -> None:
    b = TopologyBuilder("fraud")
    counts, _ = per_card(b)
    counts.late().map(Score(), name="late-score", retry="1s").to(owned("late"), type=T, version=V)
    counts.to_stream(the_payment, name="updates")
    b.add_processor("audit", Score(), ["updates"], retry="5s")
    b.add_sink("audit-sink", owned("audit"), ["audit"], type=T, version=V)
    with pytest.raises(TopologyValidationError) as refused:
        b.build()
    assert [p.split(":")[0] for p in refused.value.problems] == [
        "step 'late-score' cannot be retried",
        "step 'audit' cannot be retried",
    ]


def test_no_retries_on_a_step_after_an_aggregation_builds_and_dead_letters() -> None:
    score = Score(fails=1)
    b = TopologyBuilder("fraud")
    counts, cards = per_card(b)
    counts.to_stream(the_payment, name="updates").join(cards, with_card).map(
        score, name="score", retry=RetryPolicy.no_retries()
    ).to(owned("alerts"), type=T, version=V)
    with TestDriver(b.build()) as d:  # what it asks for applies: the DLQ, not a stop
        d.pipe("cards", card("c-1"))
        d.pipe("payments", payment(1))
        assert [dead.info.step for dead in d.dead_letters] == ["score"]
        assert score.calls["p-1"] == 1 and d.retried == []


def test_steps_before_the_aggregation_keep_their_retry() -> None:
    b = TopologyBuilder("fraud")
    payments = b.source("payments", type=T, version=V, name="payments")
    checked = payments.map(Score(), name="check", retry="1s, 2s")
    counts = checked.rekey(by_card, name="by-card").window(tumbling(60)).count(name="per-card")
    counts.to_stream(the_payment, name="updates").to(owned("counts"), type=T, version=V)
    topology = b.build()
    assert topology.retry_for("check") == RetryPolicy.parse("1s, 2s")
    assert "Processor: check (map, Score, retry: 1s, 2s (3 attempts))" in topology.describe()
    by_input = {tiers.topic: tiers.all for tiers in failure_topics(topology)}
    assert by_input["payments"] == (
        "fraud-payments-retry-1",
        "fraud-payments-retry-2",
        "fraud-payments-dlq",
    )


def test_the_read_back_pattern_builds_and_its_read_back_step_is_retried() -> None:
    score = Score(fails=1)
    topology = read_back(score, step_retry="1s, 2s")
    by_input = {tiers.topic: tiers.all for tiers in failure_topics(topology)}
    assert by_input["fraud-per-card-counts"] == (
        "fraud-per-card-counts-retry-1",
        "fraud-per-card-counts-retry-2",
        "fraud-per-card-counts-dlq",
    )
    assert by_input["fraud-per-card-repartition"] == ("fraud-per-card-repartition-dlq",)
    with TestDriver(topology) as d:
        d.pipe("cards", card("c-1"))
        d.pipe("payments", payment(1))
        assert d.read("fraud-alerts") == []
        assert [r.topic for r in d.retried] == ["fraud-per-card-counts-retry-1"]
        d.advance_time(1_000)
        assert [e.data["payment_id"] for e in d.read("fraud-alerts")] == ["p-1"]
        assert d.dead_letters == [] and score.calls["p-1"] == 2


def test_describe_shows_no_topology_retry_on_what_an_aggregation_feeds() -> None:
    topology = fraud_check(Score(), retry="1s, 2s").build()
    text = topology.describe()
    assert "Processor: by-card (rekey, by_card)\n" in text
    assert "store per-card, not retried: an aggregation)\n" in text
    for step in ("updates (to_stream, the_payment", "joined (join, with_card", "score (map, Score"):
        assert f"Processor: {step}, not retried: fed by aggregation per-card)\n" in text
    assert "Failures:\n  retry: 1s, 2s (3 attempts)\n" in text
    assert "  fraud-per-card-repartition: retry tiers -; DLQ fraud-per-card-repartition-dlq\n" in (
        text
    )
    nodes = {n["name"]: n for n in describe_data(topology)["nodes"]}
    assert nodes["score"]["not_retried"] == "fed by aggregation per-card"
    assert nodes["per-card"]["not_retried"] == "an aggregation"
    assert "not_retried" not in nodes["by-card"] and "retry" not in nodes["score"]


def test_describe_of_the_read_back_shows_nothing_not_retried_after_the_read_back() -> None:
    text = read_back(Score(), retry="1s, 2s").describe()
    assert "Processor: score (map, Score)\n" in text
    assert "Processor: joined (join, with_card)\n" in text
    assert "Processor: updates (to_stream, the_payment, not retried: fed by aggregation" in text


def test_the_driver_does_what_describe_says_one_attempt_then_the_dlq() -> None:
    score = Score(fails=1)
    with TestDriver(fraud_check(score, retry="1s, 2s").build()) as d:
        d.pipe("cards", card("c-1"))
        d.pipe("payments", payment(1))
        d.advance_time(3_000)
        assert score.calls["p-1"] == 1 and d.retried == []
        (dead,) = d.dead_letters
        assert dead.topic == "fraud-per-card-repartition-dlq"  # the payment, not the update
        assert dead.info.step == "score"
        assert d.read("fraud-alerts") == []
