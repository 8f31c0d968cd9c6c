"""Failure routing: retry tiers, the dead-letter topic, per-key order through retries.

- ``policy``: ``RetryPolicy`` (tiers of delays, attempts, non-retryable errors, a hook).
- ``topics``: derived names ``<app>-<topic>-retry-<n>`` / ``<app>-<topic>-dlq``, creation.
- ``headers``: the error headers (Kafka Streams KIP-1034 names plus ours), both ways.
- ``routing``: ``FailureRouter.route`` → the next destination and the record to write.
- ``waiting``: ``WaitingRoom``, the keys waiting on a retry and the records behind them.
- ``parked``: waiting-room entries as bytes, and the room kept in a state-store transaction.
- ``retry_consumer``: ``RetryGate``, due-time waits by seek and pause, no sleeping.
- ``metrics``: counters and the WARNING per dead-lettered record.
- ``handler``: ``FailureHandler``, the four calls a runtime makes (record, success,
  failure, revoke) composing all of the above.
- ``dlq``: read, summarise, show and replay a DLQ (``streams dlq``): ``plan_dlq_replay``
  and ``execute_dlq_replay`` send dead letters back to their topics (not to be confused
  with ``streams.replay``, which replays a topic from offsets).

The names below are re-exported lazily (PEP 562): ``from streams.failures import
RetryPolicy`` loads the policy module alone, not the Kafka clients of ``dlq`` or
``retry_consumer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.failures.dlq import (
        DeadLetter,
        DlqContents,
        DlqFilter,
        DlqReplayPlan,
        DlqReplayResult,
        DlqSummary,
        dlq_depth,
        execute_dlq_replay,
        plan_dlq_replay,
        read_dlq,
        summarize,
    )
    from streams.failures.errors import (
        DlqError,
        FailureHeaderError,
        FailureRoutingError,
        FailureTopicError,
        RetryPolicyError,
    )
    from streams.failures.handler import Admission, Decision, FailureHandler
    from streams.failures.headers import FailureInfo, SourcePosition, Stage
    from streams.failures.metrics import FailureMetrics
    from streams.failures.parked import ParkedRecord, TransactionWaitingStore
    from streams.failures.policy import RetryPolicy, Verdict
    from streams.failures.retry_consumer import RetryGate
    from streams.failures.routing import FailedRecord, FailureRouter, Route
    from streams.failures.topics import FailureTopics, dlq_topic, ensure_failure_topics, retry_topic
    from streams.failures.waiting import WaitingRoom
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.failures.dlq": [
                "DeadLetter",
                "DlqContents",
                "DlqFilter",
                "DlqReplayPlan",
                "DlqReplayResult",
                "DlqSummary",
                "dlq_depth",
                "execute_dlq_replay",
                "plan_dlq_replay",
                "read_dlq",
                "summarize",
            ],
            "streams.failures.errors": [
                "DlqError",
                "FailureHeaderError",
                "FailureRoutingError",
                "FailureTopicError",
                "RetryPolicyError",
            ],
            "streams.failures.handler": ["Admission", "Decision", "FailureHandler"],
            "streams.failures.headers": ["FailureInfo", "SourcePosition", "Stage"],
            "streams.failures.metrics": ["FailureMetrics"],
            "streams.failures.parked": ["ParkedRecord", "TransactionWaitingStore"],
            "streams.failures.policy": ["RetryPolicy", "Verdict"],
            "streams.failures.retry_consumer": ["RetryGate"],
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
    "DeadLetter",
    "Decision",
    "DlqContents",
    "DlqError",
    "DlqFilter",
    "DlqReplayPlan",
    "DlqReplayResult",
    "DlqSummary",
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
    "RetryGate",
    "RetryPolicy",
    "RetryPolicyError",
    "Route",
    "SourcePosition",
    "Stage",
    "TransactionWaitingStore",
    "Verdict",
    "WaitingRoom",
    "dlq_depth",
    "dlq_topic",
    "ensure_failure_topics",
    "execute_dlq_replay",
    "plan_dlq_replay",
    "read_dlq",
    "retry_topic",
    "summarize",
]
