"""Error headers on retry and dead-letter records: building them and reading them back.

The first six follow Kafka Streams' KIP-1034 (Kafka 4.2, ``ExceptionHandlerUtils``), so
tools written for Kafka Streams' DLQ read ours. The ``streams.failure.*`` ones are ours.
Every value is UTF-8 text; times are ISO-8601 UTC with milliseconds (``...T16:20:00.123Z``).
The record's own key, value and headers are never changed: error headers are appended
after the original ones, and replaced (not duplicated) when a record fails again.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from streams.coordinates import Coordinates
from streams.failures.errors import FailureHeaderError
from streams.file_modules import shown_name
from streams.timespec import format_instant, parse_instant

Header = tuple[str, bytes | None]
Headers = Sequence[Header]

# KIP-1034 names (org.apache.kafka.streams.errors.ExceptionHandlerUtils).
EXCEPTION = "__streams.errors.exception"
MESSAGE = "__streams.errors.message"
STACKTRACE = "__streams.errors.stacktrace"
TOPIC = "__streams.errors.topic"
PARTITION = "__streams.errors.partition"
OFFSET = "__streams.errors.offset"

# Ours.
ATTEMPTS = "streams.failure.attempts"
FIRST_TIME = "streams.failure.first_time"
LAST_TIME = "streams.failure.last_time"
DUE_TIME = "streams.failure.due_time"
TIER = "streams.failure.tier"
STEP = "streams.failure.step"
APP_ID = "streams.failure.app_id"
STAGE = "streams.failure.stage"
# The value's length before it was cut so the dead letter fits the producer's limit.
VALUE_CUT = "streams.failure.value_cut"

# Set by `streams dlq replay` on the records it sends back: ``<dlq>/<partition>/<offset>``.
REPLAY_OF = "streams.replay.of"
REPLAY_TIME = "streams.replay.time"
# On the marker record replay appends to the DLQ for each record it sent (the audit trail).
REPLAY_MARK = "streams.replay.mark"
REPLAY_TO = "streams.replay.to"

KIP_1034_HEADERS = (EXCEPTION, MESSAGE, STACKTRACE, TOPIC, PARTITION, OFFSET)
FAILURE_HEADERS = frozenset(
    (
        *KIP_1034_HEADERS,
        ATTEMPTS,
        FIRST_TIME,
        LAST_TIME,
        DUE_TIME,
        TIER,
        STEP,
        APP_ID,
        STAGE,
        VALUE_CUT,
    )
)

MAX_MESSAGE_CHARS = 1_000
MAX_STACKTRACE_CHARS = 8_000


class Stage(Enum):
    """Where a record failed: decoding it (never retried) or processing it."""

    DECODE = "decode"
    PROCESS = "process"


_STAGES = {stage.value: stage for stage in Stage}
_EPOCH = datetime.fromtimestamp(0, UTC)


@dataclass(frozen=True, slots=True)
class FailureInfo:
    """What the error headers say about a failed record.

    ``origin`` is the coordinates in the *input* topic, kept across retry tiers. ``due`` and
    ``tier`` are set on retry records only; ``attempts`` counts failed attempts so far.
    ``value_cut``: on a dead letter whose value was cut to fit the producer's limit, the
    value's length before (the whole record stays in its input topic, at ``origin``).
    """

    exception: str
    message: str
    stacktrace: str
    origin: Coordinates
    attempts: int
    first_failure: datetime
    last_failure: datetime
    app_id: str
    stage: Stage = Stage.PROCESS
    step: str | None = None
    tier: int | None = None
    due: datetime | None = None
    value_cut: int | None = None

    @property
    def error_type(self) -> str:
        """The exception's class name without its module (``ValueError``)."""
        return self.exception.rsplit(".", 1)[-1]


def exception_name(exc: BaseException) -> str:
    """``module.QualName`` of the exception's class; builtins without a module; a topology
    file's module by the file's stem (``orders.CheckError``)."""
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{shown_name(cls.__module__)}.{cls.__qualname__}"


def _clip_head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip_tail(text: str, limit: int) -> str:
    # The end of a Python traceback holds the innermost frame and the exception line.
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def describe_exception(exc: BaseException) -> tuple[str, str, str]:
    """``(class name, message, stack trace)``, clipped to header-friendly sizes."""
    stack = "".join(traceback.format_exception(exc))
    return (
        exception_name(exc),
        _clip_head(str(exc), MAX_MESSAGE_CHARS),
        _clip_tail(stack, MAX_STACKTRACE_CHARS),
    )


def format_time(value: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z``; naive datetimes are taken as UTC."""
    return format_instant(value if value.tzinfo is not None else value.replace(tzinfo=UTC))


def parse_time(text: str) -> datetime:
    """A time header (``format_time``'s form) as an aware UTC datetime; raises
    ``TimeSpecError`` (a ``ValueError``) when it is not an instant with a zone."""
    return parse_instant(text)


def failure_headers(info: FailureInfo) -> list[tuple[str, bytes]]:
    """The error headers describing ``info``, KIP-1034 ones first."""
    pairs: list[tuple[str, str]] = [
        (EXCEPTION, info.exception),
        (MESSAGE, info.message),
        (STACKTRACE, info.stacktrace),
        (TOPIC, info.origin.topic),
        (PARTITION, str(info.origin.partition)),
        (OFFSET, str(info.origin.offset)),
        (ATTEMPTS, str(info.attempts)),
        (FIRST_TIME, format_time(info.first_failure)),
        (LAST_TIME, format_time(info.last_failure)),
        (APP_ID, info.app_id),
        (STAGE, info.stage.value),
    ]
    if info.step is not None:
        pairs.append((STEP, info.step))
    if info.tier is not None:
        pairs.append((TIER, str(info.tier)))
    if info.due is not None:
        pairs.append((DUE_TIME, format_time(info.due)))
    if info.value_cut is not None:
        pairs.append((VALUE_CUT, str(info.value_cut)))
    return [(name, value.encode()) for name, value in pairs]


def strip_failure_headers(headers: Headers | None) -> list[Header]:
    """``headers`` without error headers: what the record carried before it first failed."""
    return [h for h in headers or () if h[0] not in FAILURE_HEADERS]


def with_failure_headers(headers: Headers | None, info: FailureInfo) -> list[Header]:
    """The original headers, in order, followed by ``info``'s error headers."""
    return [*strip_failure_headers(headers), *failure_headers(info)]


def header_text(headers: Headers | None, name: str) -> str | None:
    """The last value of header ``name`` as text, or None when absent or not UTF-8."""
    found: bytes | None = None
    for key, value in headers or ():
        if key == name:
            found = value
    if found is None:
        return None
    try:
        return found.decode()
    except UnicodeDecodeError:
        return None


def parse_failure_headers(headers: Headers | None) -> FailureInfo | None:
    """Read back what ``failure_headers`` wrote.

    Returns None when the record carries no ``__streams.errors.exception`` header (it never
    failed). Raises ``FailureHeaderError`` when error headers are there but unreadable.
    Headers written by Kafka Streams itself (KIP-1034 ones only) are read too: the fields
    they lack get neutral values (one attempt, the app id ``""``, times of the epoch).
    """
    values: dict[str, str] = {}
    for key, raw in headers or ():
        if key in FAILURE_HEADERS and raw is not None:
            try:
                values[key] = raw.decode()
            except UnicodeDecodeError as exc:
                raise FailureHeaderError(f"error header {key!r} is not UTF-8 text") from exc
    if EXCEPTION not in values:
        return None
    try:
        last = parse_time(values[LAST_TIME]) if LAST_TIME in values else _EPOCH
        return FailureInfo(
            exception=values[EXCEPTION],
            message=values.get(MESSAGE, ""),
            stacktrace=values.get(STACKTRACE, ""),
            origin=Coordinates(
                topic=values.get(TOPIC, ""),
                partition=int(values.get(PARTITION, "-1")),
                offset=int(values.get(OFFSET, "-1")),
            ),
            attempts=int(values.get(ATTEMPTS, "1")),
            first_failure=parse_time(values[FIRST_TIME]) if FIRST_TIME in values else last,
            last_failure=last,
            app_id=values.get(APP_ID, ""),
            stage=_STAGES[values.get(STAGE, "process")],
            step=values.get(STEP),
            tier=int(values[TIER]) if TIER in values else None,
            due=parse_time(values[DUE_TIME]) if DUE_TIME in values else None,
            value_cut=int(values[VALUE_CUT]) if VALUE_CUT in values else None,
        )
    except KeyError as exc:
        raise FailureHeaderError(f"unreadable error headers: unknown stage {exc}") from None
    except ValueError as exc:
        raise FailureHeaderError(f"unreadable error headers: {exc}") from exc
