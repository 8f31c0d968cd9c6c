"""Where a failed record goes next: a retry tier with a due time, or the dead-letter topic.

Pure decision logic, no I/O: the record path calls ``FailureRouter.route`` when decoding or
processing a record raised, produces the returned ``Route`` (topic, key, value, headers,
timestamp) and commits the input offset once that write is acknowledged. The record's
key, value, timestamp and original headers are carried over untouched; only the error
headers (``streams.failures.headers``) are added or replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from confluent_kafka import Message

from streams.coordinates import Coordinates
from streams.failures.headers import (
    FailureInfo,
    Header,
    Headers,
    Stage,
    describe_exception,
    parse_failure_headers,
    with_failure_headers,
)
from streams.failures.policy import RetryPolicy, Verdict
from streams.failures.topics import FailureTopics
from streams.record_size import DEFAULT_MESSAGE_MAX_BYTES, record_size


class RecordLike(Protocol):
    """A record as failure routing sees it: read from Kafka (the record path's ``Record``,
    a ``FailedRecord``) or released from a waiting room (a ``ParkedRecord``).

    ``coordinates`` is where it was read; ``failure`` what its error headers say when it was
    read from a retry tier (None for a record that never failed), parsed once."""

    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Headers: ...
    @property
    def coordinates(self) -> Coordinates: ...
    @property
    def timestamp(self) -> int | None: ...
    @property
    def failure(self) -> FailureInfo | None: ...


@dataclass(slots=True)
class FailedRecord:
    """A record as read when it failed: from the input topic or from a retry tier.

    ``headers`` are the headers as read; when the record comes from a retry tier they hold
    its earlier error headers, which is how attempts and the first failure are carried
    (``failure``, parsed from them when not given). ``timestamp`` is the Kafka record
    timestamp in ms (kept on the copy), if known. Treat it as immutable.
    """

    key: bytes | None
    value: bytes | None
    headers: Headers
    coordinates: Coordinates
    timestamp: int | None = None
    failure: FailureInfo | None = None

    def __post_init__(self) -> None:
        if self.failure is None and self.headers:
            self.failure = parse_failure_headers(self.headers)

    @classmethod
    def from_message(cls, message: Message) -> FailedRecord:
        """The failed record as consumed (a ``confluent_kafka.Message`` without error)."""
        kind, ms = message.timestamp()
        return cls(
            key=message.key(),
            value=message.value(),
            # A consumed record's headers are always a list of (str, bytes | None) pairs.
            headers=cast("list[Header]", message.headers() or ()),
            coordinates=Coordinates(
                message.topic() or "", message.partition() or 0, message.offset() or 0
            ),
            timestamp=ms if kind else None,
        )


@dataclass(frozen=True, slots=True)
class Route:
    """The record to write and where: everything the producer call needs.

    ``partition`` is the partition the record was read from: retry tiers and the DLQ have
    the input's partition count, and writing to the same partition number keeps a key's
    records together (and in order) whatever partitioner the producer uses.
    """

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    timestamp: int | None
    info: FailureInfo

    @property
    def dead_letter(self) -> bool:
        return self.info.tier is None

    def produce_args(self) -> dict[str, Any]:
        """Keyword arguments for ``confluent_kafka.Producer.produce`` (add ``on_delivery``)."""
        args: dict[str, Any] = {
            "topic": self.topic,
            "key": self.key,
            "value": self.value,
            "headers": self.headers,
            "partition": self.partition,
        }
        if self.timestamp is not None:
            args["timestamp"] = self.timestamp
        return args

    @property
    def tier(self) -> int | None:
        return self.info.tier

    @property
    def due(self) -> datetime | None:
        return self.info.due


class FailureRouter:
    """Routes the failures of one app under one retry policy. Stateless, thread-safe.

    ``max_bytes``: the largest record the producer writes (its ``message.max.bytes``): a
    copy larger, with its error headers, would be refused and stop its partition, so it
    goes to the DLQ with its value cut to fit (``FailureInfo.value_cut``)."""

    def __init__(
        self, app_id: str, policy: RetryPolicy, *, max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES
    ) -> None:
        self.app_id = app_id
        self.policy = policy
        self.max_bytes = max_bytes

    def topics(self, input_topic: str) -> FailureTopics:
        """The retry tiers and DLQ this router writes to for ``input_topic``."""
        return FailureTopics.for_input(self.app_id, input_topic, self.policy)

    def route(
        self,
        record: RecordLike,
        exc: BaseException,
        *,
        stage: Stage = Stage.PROCESS,
        step: str | None = None,
        now: datetime | None = None,
        attempts: int | None = None,
    ) -> Route:
        """Decide the next destination of ``record``, which just failed with ``exc``
        (``attempts``: how many times it failed, when the record's headers cannot say:
        a share group's delivery count).

        Decoding failures (``stage=Stage.DECODE``) and errors the policy does not retry
        go to the DLQ at once; others go to tier ``min(failures, tiers)`` due after its
        delay, until ``policy.attempts`` attempts have failed, then to the DLQ. A copy over
        ``max_bytes`` goes to the DLQ, its value cut to fit (a retry needs the whole
        value). Raises ``FailureHeaderError`` only if the record carries corrupt error
        headers.
        """
        now = now or datetime.now(UTC)
        previous = record.failure
        failures = attempts if attempts is not None else (previous.attempts if previous else 0) + 1
        origin = previous.origin if previous else record.coordinates
        topics = self.topics(origin.topic)
        exception, message, stacktrace = describe_exception(exc)

        retry = (
            stage is Stage.PROCESS
            and failures < self.policy.attempts
            and self.policy.verdict(exc) is Verdict.RETRY
        )
        tier = self.policy.tier_for(failures) if retry else None
        info = FailureInfo(
            exception=exception,
            message=message,
            stacktrace=stacktrace,
            origin=origin,
            attempts=failures,
            first_failure=previous.first_failure if previous else now,
            last_failure=now,
            app_id=self.app_id,
            stage=stage,
            step=step,
            tier=tier,
            due=now + self.policy.delay_for(tier) if tier is not None else None,
        )
        value = record.value
        headers = with_failure_headers(record.headers, info)
        if record_size(record.key, value, headers) > self.max_bytes:
            info = replace(info, tier=None, due=None, value_cut=len(value or b""))
            headers = with_failure_headers(record.headers, info)
            room = self.max_bytes - record_size(record.key, None, headers)
            value = (value or b"")[: max(room, 0)]
        return Route(
            topic=topics.retry(info.tier) if info.tier is not None else topics.dlq,
            partition=record.coordinates.partition,
            key=record.key,
            value=value,
            headers=headers,
            timestamp=record.timestamp,
            info=info,
        )
