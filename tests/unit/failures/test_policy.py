"""Retry policy: delay specs, attempts and tiers, and which errors are retried."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.codec.errors import MalformedRecordError, UnknownTypeError
from streams.errors import StreamsError
from streams.failures.errors import RetryPolicyError
from streams.failures.policy import (
    RetryPolicy,
    Verdict,
    format_delay,
    parse_delay,
    parse_delays,
)


def test_a_spec_of_tiers_parses_into_delays_in_order() -> None:
    policy = RetryPolicy.parse("1s, 30s, 5m")
    assert policy.delays == (timedelta(seconds=1), timedelta(seconds=30), timedelta(minutes=5))
    assert policy.tiers == 3
    assert policy.attempts == 4  # the first attempt and one per tier
    assert policy.describe() == "1s, 30s, 5m (4 attempts)"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("500ms", timedelta(milliseconds=500)),
        ("1.5s", timedelta(seconds=1.5)),
        ("1m30s", timedelta(seconds=90)),
        (" 2H ", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
    ],
)
def test_delays_accept_units_from_milliseconds_to_days(spec: str, expected: timedelta) -> None:
    assert parse_delay(spec) == expected


@pytest.mark.parametrize("spec", ["", "5", "5x", "-1s", "0s", "s", "1s 2", "1s,,2s", "1 s x"])
def test_a_bad_delay_is_a_clear_streams_error(spec: str) -> None:
    with pytest.raises(RetryPolicyError, match="delay") as info:
        parse_delays(spec)
    assert isinstance(info.value, StreamsError)


def test_timedeltas_and_specs_mix() -> None:
    assert parse_delays(["1s", timedelta(minutes=2)]) == (
        timedelta(seconds=1),
        timedelta(minutes=2),
    )
    with pytest.raises(RetryPolicyError):
        parse_delays([timedelta(0)])


@given(st.integers(min_value=1, max_value=10 * 86_400_000))
def test_format_delay_reads_back_to_the_same_delay(ms: int) -> None:
    delay = timedelta(milliseconds=ms)
    assert parse_delay(format_delay(delay)) == delay


def test_more_attempts_than_tiers_reuse_the_last_tier() -> None:
    policy = RetryPolicy.parse("1s, 10s", max_attempts=5)
    assert policy.tiers == 2
    assert [policy.tier_for(n) for n in (1, 2, 3, 4)] == [1, 2, 2, 2]


def test_fewer_attempts_than_tiers_use_only_the_first_tiers() -> None:
    policy = RetryPolicy.parse("1s, 10s, 1m", max_attempts=2)
    assert policy.tiers == 1
    assert policy.describe() == "1s (2 attempts)"


def test_no_retries_means_one_attempt_and_no_tier_topics() -> None:
    policy = RetryPolicy.no_retries()
    assert policy.attempts == 1
    assert policy.tiers == 0
    assert policy.verdict(ValueError()) is Verdict.RETRY  # but no attempt is left


@pytest.mark.parametrize("attempts", [0, -1])
def test_attempts_below_one_are_refused(attempts: int) -> None:
    with pytest.raises(RetryPolicyError, match="max_attempts"):
        RetryPolicy.parse("1s", max_attempts=attempts)


def test_a_retrying_policy_needs_a_tier() -> None:
    with pytest.raises(RetryPolicyError, match="tier"):
        RetryPolicy.parse([], max_attempts=3)


def test_non_retryable_must_be_exception_types() -> None:
    with pytest.raises(RetryPolicyError, match="exception types"):
        RetryPolicy(non_retryable=("ValueError",))  # type: ignore[arg-type]


class TransientError(Exception):
    pass


class BadInputError(ValueError):
    pass


def test_errors_are_retried_by_default() -> None:
    assert RetryPolicy().verdict(TransientError("db down")) is Verdict.RETRY


def test_non_retryable_types_and_their_subclasses_go_to_the_dlq() -> None:
    policy = RetryPolicy(non_retryable=(ValueError,))
    assert policy.verdict(BadInputError("no amount")) is Verdict.DEAD_LETTER
    assert policy.verdict(TransientError()) is Verdict.RETRY


def test_decoding_errors_are_never_retried_whatever_the_hook_says() -> None:
    policy = RetryPolicy(classify=lambda exc: Verdict.RETRY)
    assert policy.verdict(MalformedRecordError("garbage")) is Verdict.DEAD_LETTER
    assert policy.verdict(UnknownTypeError("order.lost")) is Verdict.DEAD_LETTER


def test_the_classify_hook_decides_and_none_falls_back_to_retry() -> None:
    def classify(exc: BaseException) -> Verdict | None:
        if "permanent" in str(exc):
            return Verdict.DEAD_LETTER
        return None

    policy = RetryPolicy(classify=classify)
    assert policy.verdict(TransientError("permanent failure")) is Verdict.DEAD_LETTER
    assert policy.verdict(TransientError("timeout")) is Verdict.RETRY


def test_a_step_overrides_its_topology_policy() -> None:
    base = RetryPolicy.parse("1s, 30s, 5m", non_retryable=[KeyError])
    step = base.override(delays="10ms", max_attempts=2)
    assert step.delays == (timedelta(milliseconds=10),)
    assert step.attempts == 2
    assert step.non_retryable == (KeyError,)
    assert base.attempts == 4  # the topology's policy is unchanged
