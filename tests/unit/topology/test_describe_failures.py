"""`streams describe` says where failures go: the policy, retry tiers and DLQ per input."""

from __future__ import annotations

from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.topology import TopologyBuilder, owned


def settle(env: Envelope) -> Envelope:
    return env


def test_describe_lists_the_retry_policy_and_failure_topics() -> None:
    builder = TopologyBuilder("pay", retry="1s, 30s")
    builder.source("payments", type="payment.captured", version=1).map(
        settle, retry=RetryPolicy.no_retries()
    ).to(owned("out"), type="payment.captured", version=1)
    builder.source("refunds", type="payment.captured", version=1).map(settle).to(
        owned("refunded"), type="payment.captured", version=1
    )
    text = builder.build().describe()
    assert "Processor: settle (map, retry: no retries (1 attempts))" in text
    assert "Failures:\n  retry: 1s, 30s (3 attempts)\n" in text
    # settle never retries its payments: they need a DLQ, no tier
    assert "  payments: retry tiers -; DLQ pay-payments-dlq\n" in text
    assert "  refunds: retry tiers pay-refunds-retry-1, pay-refunds-retry-2; " in text
    assert "DLQ pay-refunds-dlq" in text


def test_without_a_retry_policy_describe_names_the_dlq_undecodable_records_go_to() -> None:
    builder = TopologyBuilder("pay")
    builder.source("payments", type="payment.captured", version=1).to(
        owned("out"), type="payment.captured", version=1
    )
    text = builder.build().describe()
    assert "Failures:\n  retry: none (undecodable records and on_error='dlq' to the DLQ)\n" in text
    assert "  payments: retry tiers -; DLQ pay-payments-dlq" in text
