"""Retry policy: how often and how long a failed record is retried before the DLQ.

A policy is data: tiers of delays (``"1s, 30s, 5m"``), a maximum number of attempts, the
exception types that are never retried, and an optional classify hook. The runtime asks
``policy.verdict(exc)`` for every processing error; the routing module turns the verdict
and the attempt count into a destination. Nothing here blocks or touches Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import Enum
from typing import Any

from streams.codec.errors import DecodeError
from streams.failures.errors import CrashLoopError, OutputRefusedError, RetryPolicyError
from streams.timespec import TimeSpecError, format_duration, parse_duration


class Verdict(Enum):
    """What to do with a failed record: retry it later, or dead-letter it now."""

    RETRY = "retry"
    DEAD_LETTER = "dead_letter"


Classifier = Callable[[BaseException], Verdict | None]
"""Decides for one exception; ``None`` means "no opinion", the default (retry) applies."""


def parse_delay(text: str) -> timedelta:
    """A positive duration in the shared grammar (``streams.timespec``): ``"500ms"``,
    ``"30s"``, ``"1m30s"``, ``"1.5s"``, ``"PT2H"``, ... Raises ``RetryPolicyError`` for
    anything else, and for zero (a retry tier must wait)."""
    try:
        delay = parse_duration(text)
    except TimeSpecError as exc:
        raise RetryPolicyError(f"bad retry delay: {exc}") from None
    if delay <= timedelta(0):
        raise RetryPolicyError(f"bad retry delay {text!r}: must be greater than zero")
    return delay


def parse_delays(spec: str | Iterable[str | timedelta]) -> tuple[timedelta, ...]:
    """``"1s, 30s, 5m"`` or ``["1s", timedelta(minutes=5)]`` → the tiers' delays, in order."""
    items: Iterable[str | timedelta] = spec.split(",") if isinstance(spec, str) else spec
    delays: list[timedelta] = []
    for item in items:
        if isinstance(item, timedelta):
            if item <= timedelta(0):
                raise RetryPolicyError(f"bad retry delay {item}: must be greater than zero")
            delays.append(item)
        else:
            delays.append(parse_delay(item))
    return tuple(delays)


def format_delay(delay: timedelta) -> str:
    """The shortest spec ``parse_delay`` reads back to the same delay (to the millisecond)."""
    return format_duration(delay)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Tiers of delays, a cap on attempts, and which errors are worth retrying.

    ``delays[i]`` is the delay of retry tier ``i + 1`` (topic ``<app>-<topic>-retry-<i+1>``).
    ``max_attempts`` counts every processing attempt, the first included; the default is
    one per tier plus the first, so ``"1s, 30s, 5m"`` means at most 4 attempts. With more
    attempts than tiers the last tier is used again. ``ordered`` keeps per-key order
    through retries (later records of a key wait behind a retrying one).

    Classification, first match wins: decoding errors (``streams.codec.DecodeError``), a
    record the crash guard condemned (``CrashLoopError``), a record whose output the broker
    refused for its sake (``OutputRefusedError``) and ``non_retryable`` types go to
    the DLQ; then ``classify`` (if it returns a verdict);
    otherwise the record is retried.
    """

    delays: tuple[timedelta, ...] = (
        timedelta(seconds=1),
        timedelta(seconds=30),
        timedelta(minutes=5),
    )
    max_attempts: int | None = None
    non_retryable: tuple[type[BaseException], ...] = ()
    classify: Classifier | None = field(default=None, compare=False)
    ordered: bool = True

    def __post_init__(self) -> None:
        delays = parse_delays(self.delays)
        object.__setattr__(self, "delays", delays)
        object.__setattr__(self, "non_retryable", tuple(self.non_retryable))
        if self.max_attempts is not None and self.max_attempts < 1:
            raise RetryPolicyError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not delays and self.attempts > 1:
            raise RetryPolicyError("a policy that retries needs at least one delay tier")
        for exc_type in self.non_retryable:
            if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
                raise RetryPolicyError(f"non_retryable must hold exception types, got {exc_type!r}")

    @classmethod
    def parse(
        cls,
        delays: str | Sequence[str | timedelta],
        *,
        max_attempts: int | None = None,
        non_retryable: Iterable[type[BaseException]] = (),
        classify: Classifier | None = None,
        ordered: bool = True,
    ) -> RetryPolicy:
        """A policy from a delay spec such as ``"1s, 30s, 5m"`` (or a list of delays)."""
        return cls(
            delays=parse_delays(delays),
            max_attempts=max_attempts,
            non_retryable=tuple(non_retryable),
            classify=classify,
            ordered=ordered,
        )

    @classmethod
    def no_retries(cls, **changes: Any) -> RetryPolicy:
        """Every failure goes straight to the DLQ."""
        return cls(delays=(), max_attempts=1, **changes)

    @property
    def tiers(self) -> int:
        """How many retry topics the policy needs."""
        return 0 if self.attempts == 1 else min(len(self.delays), self.attempts - 1)

    @property
    def attempts(self) -> int:
        """The maximum number of processing attempts, the first included."""
        return self.max_attempts if self.max_attempts is not None else len(self.delays) + 1

    def tier_for(self, failures: int) -> int:
        """The retry tier (1-based) a record goes to after its ``failures``-th failure."""
        return min(failures, self.tiers)

    def delay_for(self, tier: int) -> timedelta:
        """The delay of retry tier ``tier`` (1-based)."""
        if not 1 <= tier <= self.tiers:
            raise RetryPolicyError(f"no retry tier {tier}: the policy has {self.tiers}")
        return self.delays[tier - 1]

    def verdict(self, exc: BaseException) -> Verdict:
        """Retry or dead-letter ``exc``, regardless of attempts (see the class docstring)."""
        if isinstance(exc, (DecodeError, CrashLoopError, OutputRefusedError, *self.non_retryable)):
            return Verdict.DEAD_LETTER
        if self.classify is not None:
            decided = self.classify(exc)
            if decided is not None:
                return decided
        return Verdict.RETRY

    def override(self, **changes: Any) -> RetryPolicy:
        """This policy with some fields changed (a step's override of its topology's)."""
        if isinstance(changes.get("delays"), str):
            changes["delays"] = parse_delays(changes["delays"])
        return replace(self, **changes)

    def describe(self) -> str:
        """``"1s, 30s, 5m (4 attempts)"``: for logs and the CLI."""
        tiers = ", ".join(format_delay(d) for d in self.delays[: self.tiers]) or "no retries"
        return f"{tiers} ({self.attempts} attempts)"
