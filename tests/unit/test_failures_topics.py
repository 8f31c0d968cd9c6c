"""Derived names of retry and dead-letter topics."""

from __future__ import annotations

import pytest

from streams.failures.errors import FailureTopicError
from streams.failures.policy import RetryPolicy
from streams.failures.topics import FailureTopics, dlq_topic, retry_tier_of, retry_topic


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
