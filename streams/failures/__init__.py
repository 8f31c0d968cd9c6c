"""Failure routing: retry tiers, the dead-letter topic, per-key order through retries.

- ``policy``: ``RetryPolicy`` (tiers of delays, attempts, non-retryable errors, a hook).
- ``topics``: derived names ``<app>-<topic>-retry-<n>`` / ``<app>-<topic>-dlq``, creation.
- ``headers``: the error headers (Kafka Streams KIP-1034 names plus ours), both ways.
- ``routing``: ``FailureRouter.route`` → the next destination and the record to write.
- ``waiting``: ``WaitingRoom``, the keys waiting on a retry and the records behind them.
- ``parked``: waiting-room entries as bytes, and the room kept in a state-store transaction.
- ``retry_holds``: ``RetryHolds``, due-time waits by seek and pause, no sleeping.
- ``metrics``: counters and the WARNING per dead-lettered record.
- ``handler``: ``FailureHandler``, the four calls a runtime makes (record, success,
  failure, revoke) composing all of the above.

Routing is logic the runtime and the ``TestDriver`` share: no module here builds a Kafka
client (topics are created through the ``streams.cluster.Topics`` a caller passes in).
The tools that read and replay a DLQ (``streams dlq``) are ``streams.dlq``.

The names below are re-exported lazily (PEP 562): ``from streams.failures import
RetryPolicy`` loads the policy module alone, not confluent-kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.failures.errors import (
        FailureHeaderError,
        FailureRoutingError,
        FailureTopicError,
        RetryPolicyError,
    )
    from streams.failures.handler import Admission, Decision, FailureHandler
    from streams.failures.headers import FailureInfo, Stage
    from streams.failures.metrics import FailureMetrics
    from streams.failures.parked import ParkedRecord, TransactionWaitingStore
    from streams.failures.policy import RetryPolicy, Verdict
    from streams.failures.retry_holds import RetryHolds
    from streams.failures.routing import FailedRecord, FailureRouter, Route
    from streams.failures.topics import FailureTopics, dlq_topic, ensure_failure_topics, retry_topic
    from streams.failures.waiting import WaitingRoom
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.failures.errors": [
                "FailureHeaderError",
                "FailureRoutingError",
                "FailureTopicError",
                "RetryPolicyError",
            ],
            "streams.failures.handler": ["Admission", "Decision", "FailureHandler"],
            "streams.failures.headers": ["FailureInfo", "Stage"],
            "streams.failures.metrics": ["FailureMetrics"],
            "streams.failures.parked": ["ParkedRecord", "TransactionWaitingStore"],
            "streams.failures.policy": ["RetryPolicy", "Verdict"],
            "streams.failures.retry_holds": ["RetryHolds"],
            "streams.failures.routing": ["FailedRecord", "FailureRouter", "Route"],
            "streams.failures.topics": [
                "FailureTopics",
                "dlq_topic",
                "ensure_failure_topics",
                "retry_topic",
            ],
            "streams.failures.waiting": ["WaitingRoom"],
        },
    )

__all__ = [
    "Admission",
    "Decision",
    "FailedRecord",
    "FailureHandler",
    "FailureHeaderError",
    "FailureInfo",
    "FailureMetrics",
    "FailureRouter",
    "FailureRoutingError",
    "FailureTopicError",
    "FailureTopics",
    "ParkedRecord",
    "RetryHolds",
    "RetryPolicy",
    "RetryPolicyError",
    "Route",
    "Stage",
    "TransactionWaitingStore",
    "Verdict",
    "WaitingRoom",
    "dlq_topic",
    "ensure_failure_topics",
    "retry_topic",
]
