"""Routing decisions: through the retry tiers to the DLQ, the record itself untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from streams.codec.errors import MalformedRecordError
from streams.coordinates import Coordinates
from streams.failures.headers import Stage, parse_failure_headers, strip_failure_headers
from streams.failures.policy import RetryPolicy, Verdict
from streams.failures.routing import FailedRecord, FailureRouter, Route
from streams.record_size import record_size

T0 = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
ORIGINAL_HEADERS: list[tuple[str, bytes | None]] = [
    ("ce_id", b"0193-abc"),
    ("ce_type", b"order.placed"),
    ("trace", None),
]


def first_failure() -> FailedRecord:
    return FailedRecord(
        key=b"order-7",
        value=b"\x00avro-bytes",
        headers=ORIGINAL_HEADERS,
        coordinates=Coordinates("orders", 2, 500),
        timestamp=1_700_000_000_000,
    )


def read_back(route: Route, offset: int = 0) -> FailedRecord:
    """The record as the runtime reads it from the tier it was routed to."""
    return FailedRecord(
        key=route.key,
        value=route.value,
        headers=route.headers,
        coordinates=Coordinates(route.topic, route.partition, offset),
        timestamp=route.timestamp,
    )


def test_a_first_failure_goes_to_tier_one_due_after_its_delay() -> None:
    router = FailureRouter("billing", RetryPolicy.parse("1s, 30s, 5m"))
    route = router.route(first_failure(), TimeoutError("db"), step="charge", now=T0)
    assert route.topic == "billing-orders-retry-1"
    assert route.partition == 2
    assert not route.dead_letter
    assert route.tier == 1
    assert route.due == T0 + timedelta(seconds=1)
    assert (route.key, route.value, route.timestamp) == (
        b"order-7",
        b"\x00avro-bytes",
        1_700_000_000_000,
    )
    assert route.headers[:3] == ORIGINAL_HEADERS
    assert route.info.exception == "TimeoutError"
    assert route.info.step == "charge"
    assert route.info.origin == Coordinates("orders", 2, 500)


def test_a_record_failing_every_time_walks_the_tiers_then_lands_in_the_dlq() -> None:
    router = FailureRouter("billing", RetryPolicy.parse("1s, 30s, 5m"))
    record, now, seen = first_failure(), T0, []
    for attempt in range(1, 5):
        route = router.route(record, RuntimeError(f"attempt {attempt}"), now=now)
        seen.append((route.topic, route.info.attempts, route.due and route.due - now))
        assert route.info.origin == Coordinates("orders", 2, 500)
        assert route.info.first_failure == T0
        assert route.info.last_failure == now
        assert strip_failure_headers(route.headers) == ORIGINAL_HEADERS
        record = read_back(route, offset=attempt * 10)
        now = (route.due or now) + timedelta(milliseconds=3)
    assert seen == [
        ("billing-orders-retry-1", 1, timedelta(seconds=1)),
        ("billing-orders-retry-2", 2, timedelta(seconds=30)),
        ("billing-orders-retry-3", 3, timedelta(minutes=5)),
        ("billing-orders-dlq", 4, None),
    ]
    assert route.info.message == "attempt 4"
    assert route.partition == 2
    assert route.key == b"order-7"
    assert route.value == b"\x00avro-bytes"


def test_decoding_failures_go_straight_to_the_dlq() -> None:
    router = FailureRouter("billing", RetryPolicy())
    route = router.route(
        first_failure(), MalformedRecordError("garbage"), stage=Stage.DECODE, now=T0
    )
    assert route.topic == "billing-orders-dlq"
    assert route.info.attempts == 1
    assert route.info.stage is Stage.DECODE
    # Even when a decode error surfaces during processing it is not retried.
    assert router.route(first_failure(), MalformedRecordError("x"), now=T0).dead_letter


def test_the_decode_stage_is_never_retried_whatever_the_error() -> None:
    router = FailureRouter("billing", RetryPolicy(classify=lambda _: Verdict.RETRY))
    assert router.route(first_failure(), KeyError("ce_type"), stage=Stage.DECODE).dead_letter


def test_non_retryable_errors_skip_the_tiers() -> None:
    router = FailureRouter("billing", RetryPolicy(non_retryable=(ValueError,)))
    route = router.route(first_failure(), ValueError("negative amount"), now=T0)
    assert route.topic == "billing-orders-dlq"
    assert route.info.attempts == 1


@pytest.mark.parametrize(("attempts", "tiers_used"), [(1, 0), (2, 1), (6, 5)])
def test_max_attempts_bounds_the_retries(attempts: int, tiers_used: int) -> None:
    router = FailureRouter("app", RetryPolicy.parse("1s, 2s", max_attempts=attempts))
    record, topics = first_failure(), []
    while True:
        route = router.route(record, RuntimeError(), now=T0)
        topics.append(route.topic)
        if route.dead_letter:
            break
        record = read_back(route)
    assert len(topics) == attempts
    assert topics[-1] == "app-orders-dlq"
    assert topics[:-1] == [f"app-orders-retry-{min(n, 2)}" for n in range(1, tiers_used + 1)]


def test_a_replayed_record_starts_over_with_fresh_attempts() -> None:
    router = FailureRouter("app", RetryPolicy.parse("1s"))
    dead = router.route(read_back(router.route(first_failure(), RuntimeError())), RuntimeError())
    assert dead.dead_letter
    replayed = FailedRecord(
        key=dead.key,
        value=dead.value,
        headers=[
            *strip_failure_headers(dead.headers),
            ("streams.replay.of", b"app-orders-dlq/2/0"),
        ],
        coordinates=Coordinates("orders", 2, 900),
    )
    route = router.route(replayed, RuntimeError())
    assert route.tier == 1
    assert route.info.origin.offset == 900


def test_a_route_is_ready_for_the_producer() -> None:
    route = FailureRouter("app", RetryPolicy()).route(first_failure(), RuntimeError(), now=T0)
    args = route.produce_args()
    assert args == {
        "topic": "app-orders-retry-1",
        "key": b"order-7",
        "value": b"\x00avro-bytes",
        "headers": route.headers,
        "partition": 2,
        "timestamp": 1_700_000_000_000,
    }


def test_a_copy_too_large_for_the_producer_goes_to_the_dlq_its_value_cut_to_fit() -> None:
    # A retry copy of a record just under the limit would be over it with its error
    # headers: refused, and its partition stopped. It goes to the DLQ, cut, and says so.
    big = FailedRecord(
        key=b"order-7",
        value=b"v" * 5_000,
        headers=ORIGINAL_HEADERS,
        coordinates=Coordinates("orders", 2, 500),
        timestamp=1_700_000_000_000,
    )
    router = FailureRouter("billing", RetryPolicy.parse("1s, 30s"), max_bytes=5_200)
    route = router.route(big, TimeoutError("db"), step="charge", now=T0)
    assert route.dead_letter and route.topic == "billing-orders-dlq"
    assert route.info.value_cut == 5_000
    assert route.value is not None and b"v" * len(route.value) == route.value
    assert record_size(route.key, route.value, route.headers) == 5_200  # as much as fits
    assert parse_failure_headers(route.headers) == route.info
    fits = FailureRouter("billing", RetryPolicy.parse("1s, 30s"), max_bytes=1_000_000)
    assert fits.route(big, TimeoutError("db"), now=T0).info.value_cut is None
