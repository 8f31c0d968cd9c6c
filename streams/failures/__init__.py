"""Failure routing: retry tiers, the dead-letter topic, per-key order through retries.

- ``policy``: ``RetryPolicy`` (tiers of delays, attempts, non-retryable errors, a hook).
- ``topics``: derived names ``<app>-<topic>-retry-<n>`` / ``<app>-<topic>-dlq``, creation.
- ``headers``: the error headers (Kafka Streams KIP-1034 names plus ours), both ways.
- ``routing``: ``FailureRouter.route`` → the next destination and the record to write.
- ``waiting``: ``WaitingRoom``, the keys waiting on a retry and the records behind them.
- ``parked``: waiting-room entries as bytes, and the room kept in a state-store transaction.
- ``retry_consumer``: ``RetryGate``, due-time waits by seek and pause, no sleeping.
- ``metrics``: counters and the WARNING per dead-lettered record.
- ``crash_guard``: ``CrashGuard``, records that kill the process every time, to the DLQ.
- ``handler``: ``FailureHandler``, the four calls a runtime makes (record, success,
  failure, revoke) composing all of the above.
- ``dlq``: read, summarise, show and replay a DLQ (``streams dlq``).
"""

from streams.failures.crash_guard import CrashGuard
from streams.failures.dlq import (
    DeadLetter,
    DlqContents,
    DlqFilter,
    DlqSummary,
    ReplayPlan,
    dlq_depth,
    execute_replay,
    plan_replay,
    read_dlq,
    summarize,
)
from streams.failures.errors import (
    DlqError,
    FailureHeaderError,
    FailureRoutingError,
    FailureTopicError,
    PoisonRecordError,
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

__all__ = [
    "Admission",
    "CrashGuard",
    "DeadLetter",
    "Decision",
    "DlqContents",
    "DlqError",
    "DlqFilter",
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
    "PoisonRecordError",
    "ReplayPlan",
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
    "execute_replay",
    "plan_replay",
    "read_dlq",
    "retry_topic",
    "summarize",
]
