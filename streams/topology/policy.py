"""What happens when a record cannot be processed: the error-policy hook.

A policy is a function ``(failure: ProcessingFailure) -> ErrorAction``, set for the whole
topology (``TopologyBuilder(on_error=...)``) and optionally per step (``on_error=`` on any
step). The step's policy wins. The record path (``streams.pipeline.failure.StopSkipOrDeadLetter``,
in the runtime and the test driver alike) asks the policy once per failed record, then:

- ``FAIL``: stop. The runtime flushes the outputs of earlier records, commits their
  offsets (never the failed record's) and exits non-zero; the test driver raises
  ``ProcessingError``. This is the default: nothing is ever dropped silently.
- ``SKIP``: count the record as skipped, log it at WARNING and move on (its offset counts
  as done). An attempt is atomic: a skipped record writes no output and no store change.
- ``DLQ``: write the record as it came in to the input's dead-letter topic
  (``<app>-<input>-dlq``, with the error headers ``streams dlq`` reads), log it at
  WARNING and move on.

Without a policy of the user's, a record that cannot be decoded (garbage, an unknown type
or version) goes to the DLQ and a step that raises stops (``default``): bad input never
stops an instance, nor stops it again at every restart, and a bug is never skipped.

With a retry policy on the topology or a step, failures are routed to retry tiers and
the dead-letter topic instead (``streams.failures``) and these policies do not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from streams.codec.errors import DecodeError
from streams.envelope import Envelope
from streams.failures.headers import Stage
from streams.failures.policy import RetryPolicy
from streams.topology.errors import TopologyError

if TYPE_CHECKING:
    from streams.topology.execution.context import RecordMeta


class ErrorAction(StrEnum):
    FAIL = "fail"
    SKIP = "skip"
    DLQ = "dlq"


@dataclass(frozen=True, slots=True)
class ProcessingFailure:
    """One record that failed: where (``step``: a node name, or ``decode``), why, and what."""

    step: str
    error: BaseException
    record: RecordMeta
    envelope: Envelope | None  # None when decoding failed


ErrorPolicy = Callable[[ProcessingFailure], ErrorAction]


def fail(_failure: ProcessingFailure) -> ErrorAction:
    """The default policy: stop processing at the first failed record."""
    return ErrorAction.FAIL


def skip(_failure: ProcessingFailure) -> ErrorAction:
    """Log and skip records that fail."""
    return ErrorAction.SKIP


def dead_letter(_failure: ProcessingFailure) -> ErrorAction:
    """Write records that fail to the dead-letter topic, and go on."""
    return ErrorAction.DLQ


def default(failure: ProcessingFailure) -> ErrorAction:
    """Without a policy of the user's: a record that cannot be decoded goes to the DLQ, a
    step that raises stops processing."""
    return ErrorAction.DLQ if isinstance(failure.error, DecodeError) else ErrorAction.FAIL


_BY_ACTION = {ErrorAction.FAIL: fail, ErrorAction.SKIP: skip, ErrorAction.DLQ: dead_letter}


def as_policy(value: ErrorPolicy | ErrorAction | str | None) -> ErrorPolicy | None:
    """Accept a policy function, an action, or its name (``"fail"``, ``"skip"``, ``"dlq"``)."""
    if value is None or callable(value):
        return value
    try:
        action = ErrorAction(value)
    except ValueError:
        raise TopologyError(
            f"unknown error policy {value!r}: use {[a.value for a in ErrorAction]} or a function"
        ) from None
    return _BY_ACTION[action]


RetryArg = RetryPolicy | str | None


def as_retry(value: RetryArg) -> RetryPolicy | None:
    """A ``RetryPolicy``, or a delay spec such as ``"1s, 30s"`` (one tier per delay).
    Raises ``RetryPolicyError`` (a StreamsError) for a bad spec."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    return RetryPolicy.parse(value)


class StepFailed(Exception):  # noqa: N818 - a signal between executor frames, not a user error
    """A step's failure: raised inside an executing plan when a step's function raised,
    then returned as a value by the attempt (``streams.pipeline.execute``), which rolls the
    record back and hands this to the failure policy. Carries where (``stage``, ``step``:
    ``decode`` when decoding failed), the error, and the failed step's own error policy
    (None: the topology's)."""

    def __init__(
        self,
        step: str,
        error: BaseException,
        policy: ErrorPolicy | None,
        stage: Stage = Stage.PROCESS,
    ) -> None:
        super().__init__(step, error)
        self.step = step
        self.error = error
        self.policy = policy
        self.stage = stage


class ProcessingError(TopologyError):
    """A record failed and its error policy said FAIL: the runtime stops with it (after
    committing the records before it), the test driver raises it."""

    def __init__(self, failure: ProcessingFailure) -> None:
        self.failure = failure
        r = failure.record
        super().__init__(
            f"step {failure.step!r} failed on {r.topic}[{r.partition}]@{r.offset}: "
            f"{type(failure.error).__name__}: {failure.error}"
        )
