"""Derived names of retry and dead-letter topics."""

from __future__ import annotations

import pytest

from streams.failures.errors import FailureTopicError
from streams.failures.policy import RetryPolicy
from streams.failures.topics import FailureTopics, dlq_topic, retry_tier_of, retry_topic
from streams.failures.waiting import waiting_store_name


def test_names_follow_the_app_topic_convention() -> None:
    assert retry_topic("billing", "orders", 1) == "billing-orders-retry-1"
    assert dlq_topic("billing", "orders") == "billing-orders-dlq"
    topics = FailureTopics.for_input("billing", "orders", RetryPolicy.parse("1s, 30s, 5m"))
    assert topics.all == (
        "billing-orders-retry-1",
        "billing-orders-retry-2",
        "billing-orders-retry-3",
        "billing-orders-dlq",
    )
    assert topics.retry(2) == "billing-orders-retry-2"


def test_a_policy_without_retries_needs_only_the_dlq() -> None:
    assert FailureTopics.for_input("a", "t", RetryPolicy.no_retries()).all == ("a-t-dlq",)


def test_a_topic_the_app_owns_is_not_prefixed_again() -> None:
    # a repartition topic (or an owned output read back) already starts with the app id
    assert retry_topic("nc1", "nc1-counts-repartition", 1) == "nc1-counts-repartition-retry-1"
    assert dlq_topic("nc1", "nc1-counts-repartition") == "nc1-counts-repartition-dlq"
    assert retry_tier_of("nc1", "nc1-counts-repartition", "nc1-counts-repartition-retry-2") == 2
    assert waiting_store_name("nc1", "nc1-counts-repartition") == "counts-repartition-waiting"
    # only the whole app id followed by a dash counts: other topics keep the prefix
    assert dlq_topic("nc1", "nc1orders") == "nc1-nc1orders-dlq"
    assert dlq_topic("nc1", "nc10-orders") == "nc1-nc10-orders-dlq"
    assert waiting_store_name("nc1", "orders") == "orders-waiting"


def test_retry_tiers_are_recognised_by_name() -> None:
    assert retry_tier_of("billing", "orders", "billing-orders-retry-12") == 12
    assert retry_tier_of("billing", "orders", "billing-orders-dlq") is None
    assert retry_tier_of("billing", "orders", "billing-orders-retry-0") is None
    assert retry_tier_of("billing", "orders", "other-orders-retry-1") is None


@pytest.mark.parametrize(
    ("app", "topic"), [("my app", "orders"), ("a", "orders/eu"), ("a", "x" * 250)]
)
def test_illegal_derived_names_are_refused(app: str, topic: str) -> None:
    with pytest.raises(FailureTopicError, match="legal Kafka topic name"):
        dlq_topic(app, topic)


def test_tiers_count_from_one() -> None:
    with pytest.raises(FailureTopicError):
        retry_topic("a", "t", 0)
    with pytest.raises(FailureTopicError):
        FailureTopics.for_input("a", "t", RetryPolicy.parse("1s")).retry(2)
