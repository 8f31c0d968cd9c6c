"""Failure counters, and the one WARNING per dead-lettered record without its payload."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from streams.coordinates import Coordinates
from streams.failures.metrics import FailureMetrics, is_retry_record
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter
from streams.logs import configure_logging

SECRET = b"card=4111111111111111"


def failed() -> FailedRecord:
    return FailedRecord(
        key=b"customer-42",
        value=SECRET,
        headers=[("ce_id", b"evt-1"), ("ce_type", b"payment.captured")],
        coordinates=Coordinates("payments", 1, 77),
    )


def test_counters_and_a_single_warning_with_ids_but_no_payload() -> None:
    out = io.StringIO()
    configure_logging("INFO", json=True, stream=out)
    router = FailureRouter("billing", RetryPolicy.parse("1s", max_attempts=2))
    metrics = FailureMetrics()
    now = datetime(2026, 11, 29, tzinfo=UTC)
    retry = router.route(failed(), ValueError(f"bad {SECRET.decode()}"), now=now)
    metrics.routed(retry)
    again = FailedRecord(retry.key, retry.value, retry.headers, Coordinates(retry.topic, 1, 0))
    assert is_retry_record(again.headers)
    dead = router.route(again, ValueError(f"bad {SECRET.decode()}"), now=now)
    metrics.routed(dead)
    metrics.routed(dead, acked=False)  # a write that failed is not counted
    metrics.succeeded_after_failure()

    assert metrics.snapshot() == {
        "retried": 1,
        "recovered": 1,
        "dead_lettered": 1,
        "dlq_depth": {"billing-payments-dlq": 1},
        "by_error": {"ValueError": 2},
        "retried_by_topic": {"payments": 1},
        "dead_lettered_by_topic": {"payments": 1},
    }
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    warnings = [line for line in lines if line["level"] == "warning"]
    assert len(warnings) == 1
    (warning,) = warnings
    assert warning["event"] == "record dead-lettered"
    assert warning["event_id"] == "evt-1"
    assert warning["event_type"] == "payment.captured"
    assert (warning["topic"], warning["partition"], warning["offset"]) == ("payments", 1, 77)
    assert warning["attempts"] == 2
    assert "4111" not in out.getvalue()
    assert "customer-42" not in out.getvalue()


def test_a_first_time_record_is_not_a_retry() -> None:
    assert not is_retry_record([("ce_id", b"1")])
    assert not is_retry_record(None)
