"""Reading, summarising and replaying a dead-letter topic (the API behind ``streams dlq``).

``read_dlq`` reads a DLQ from its start to the end it had when the call began (bounded,
no consumer group, nothing committed) into memory: DLQs are meant to stay small. It
returns the dead letters and the replay marks. ``summarize``, ``DlqFilter`` and
``plan_dlq_replay`` are pure. ``execute_dlq_replay`` sends the planned records (original
key, value and headers, error headers removed, plus ``streams.replay.of``/``.time``),
waits for every acknowledgement, then appends one *replay mark* per record to the DLQ so
later summaries show what was replayed, where and when. Replaying twice is harmless for
topologies that deduplicate (the envelope id is unchanged). A dead letter keeps the trace
context it was read with (``traceparent``), so its replay continues the same trace (with an
OpenTelemetry SDK set up, as a child span: ``streams.observability.tracing``).

A DLQ replay sends dead letters back to their topics; it is not ``streams.replay``'s
offset replay of a topic (``ReplayPlan``/``plan_replay`` there), hence the ``Dlq`` names.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streams.codec.headers import ID, TYPE
from streams.config import client_config
from streams.failures.errors import DlqError, FailureHeaderError
from streams.failures.headers import (
    REPLAY_MARK,
    REPLAY_OF,
    REPLAY_TIME,
    REPLAY_TO,
    FailureInfo,
    Header,
    Headers,
    format_time,
    header_text,
    parse_failure_headers,
    parse_time,
    strip_failure_headers,
)
from streams.observability.tracing import tracing

Progress = Callable[[int, int], None]
"""Called as ``(done, total)`` while reading or sending."""

Decoder = Callable[[bytes | None, Headers], Any]
"""Turns a record's value and headers into something printable; raises on bad input."""

NO_ERROR_HEADERS = "<no error headers>"
BAD_ERROR_HEADERS = "<unreadable error headers>"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record of a DLQ: the original record plus what its error headers say.

    ``failure`` is None when the record has no error headers (someone else wrote it) or
    unreadable ones (``header_problem`` says why); such records are listed, never hidden.
    """

    topic: str
    partition: int
    offset: int
    timestamp: datetime | None
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    failure: FailureInfo | None
    header_problem: str | None = None

    @property
    def ref(self) -> str:
        """``<dlq>/<partition>/<offset>``: how replay marks and replayed records name it."""
        return f"{self.topic}/{self.partition}/{self.offset}"

    @property
    def error_type(self) -> str:
        if self.failure is not None:
            return self.failure.exception
        return BAD_ERROR_HEADERS if self.header_problem else NO_ERROR_HEADERS

    @property
    def source_topic(self) -> str | None:
        return self.failure.origin.topic or None if self.failure is not None else None

    @property
    def failed_at(self) -> datetime | None:
        """When it was dead-lettered: the last failure time, else the record timestamp."""
        return self.failure.last_failure if self.failure is not None else self.timestamp

    @property
    def event_id(self) -> str | None:
        return header_text(self.headers, ID)

    @property
    def event_type(self) -> str | None:
        return header_text(self.headers, TYPE)

    @property
    def original_headers(self) -> list[Header]:
        return strip_failure_headers(self.headers)

    @property
    def key_text(self) -> str | None:
        return _text(self.key)


@dataclass(frozen=True, slots=True)
class ReplayMark:
    """A record of one replay: ``of`` (a dead letter's ref) sent to ``to`` at ``time``."""

    of: str
    to: str
    time: datetime


@dataclass(frozen=True, slots=True)
class DlqContents:
    topic: str
    letters: tuple[DeadLetter, ...]
    marks: tuple[ReplayMark, ...] = ()

    def replays_of(self, letter: DeadLetter) -> list[ReplayMark]:
        return [mark for mark in self.marks if mark.of == letter.ref]


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "0x" + data.hex()


def _timestamp(message: Message) -> datetime | None:
    kind, ms = message.timestamp()
    return datetime.fromtimestamp(ms / 1000, UTC) if kind and ms >= 0 else None


def to_dead_letter(message: Message) -> DeadLetter | ReplayMark:
    """Turn one consumed DLQ record into a dead letter, or a replay mark."""
    # A consumed record's headers are always a list of (str, bytes | None) pairs.
    headers: tuple[Header, ...] = tuple(cast("list[Header]", message.headers() or []))
    mark_of = header_text(headers, REPLAY_MARK)
    if mark_of is not None:
        sent = header_text(headers, REPLAY_TIME)
        return ReplayMark(
            of=mark_of,
            to=header_text(headers, REPLAY_TO) or "",
            time=parse_time(sent) if sent else datetime.fromtimestamp(0, UTC),
        )
    problem = None
    try:
        failure = parse_failure_headers(headers)
    except FailureHeaderError as exc:
        failure, problem = None, str(exc)
    return DeadLetter(
        topic=message.topic() or "",
        partition=message.partition() or 0,
        offset=message.offset() or 0,
        timestamp=_timestamp(message),
        key=message.key(),
        value=message.value(),
        headers=headers,
        failure=failure,
        header_problem=problem,
    )


def read_dlq(
    bootstrap: str,
    topic: str,
    *,
    timeout: float = 30.0,
    on_progress: Progress | None = None,
    config: Mapping[str, Any] | None = None,
) -> DlqContents:
    """Read ``topic`` from its start to the end it had when the call began.

    Blocks until done. Raises ``DlqError`` when the topic does not exist, or when no
    record arrives for ``timeout`` seconds while some are still expected.
    """
    consumer = Consumer(
        client_config(
            bootstrap,
            config,
            **{
                "group.id": f"streams-dlq-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )
    try:
        return _read(consumer, topic, timeout, on_progress)
    except KafkaException as exc:
        raise DlqError(f"cannot read {topic!r}: {exc}") from exc
    finally:
        consumer.close()


def _read(
    consumer: Consumer, topic: str, timeout: float, on_progress: Progress | None
) -> DlqContents:
    metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if metadata is None or metadata.error is not None:
        raise DlqError(f"no topic {topic!r} (is the app id or topic name right?)")
    ends: dict[int, int] = {}
    starts: dict[int, int] = {}
    for partition in sorted(metadata.partitions):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout)
        if high > low:
            starts[partition], ends[partition] = low, high
    total = sum(ends[p] - starts[p] for p in ends)
    letters: list[DeadLetter] = []
    marks: list[ReplayMark] = []
    done = 0
    if on_progress:
        on_progress(0, total)
    if not ends:
        return DlqContents(topic, ())
    consumer.assign([TopicPartition(topic, p, starts[p]) for p in ends])
    last_progress = time.monotonic()
    while ends:
        batch = consumer.consume(500, timeout=min(1.0, timeout))
        for message in batch:
            partition = message.partition()
            if partition not in ends:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    del ends[partition]
                    continue
                raise DlqError(f"cannot read {topic!r}: {error.str()}")
            offset = message.offset()
            if offset is None or offset >= ends[partition]:
                del ends[partition]
                continue
            item = to_dead_letter(message)
            if isinstance(item, ReplayMark):
                marks.append(item)
            else:
                letters.append(item)
            done += 1
            if offset >= ends[partition] - 1:
                del ends[partition]
        if batch:
            last_progress = time.monotonic()
            if on_progress:
                on_progress(min(done, total), total)
        elif time.monotonic() - last_progress > timeout:
            raise DlqError(f"reading {topic!r} stalled: no record for {timeout:.0f} s")
    letters.sort(key=lambda d: (d.partition, d.offset))
    return DlqContents(topic, tuple(letters), tuple(marks))


def dlq_depth(
    bootstrap: str,
    topic: str,
    *,
    timeout: float = 10.0,
    config: Mapping[str, Any] | None = None,
) -> int:
    """Records in ``topic`` now (end minus start offsets, replay marks included): the
    gauge for monitoring, read from watermarks without consuming. Raises ``DlqError``."""
    consumer = Consumer(client_config(bootstrap, config, **{"group.id": "streams-dlq-depth"}))
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise DlqError(f"no topic {topic!r} (is the app id or topic name right?)")
        depth = 0
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout)
            depth += max(high - low, 0)
        return depth
    except KafkaException as exc:
        raise DlqError(f"cannot measure {topic!r}: {exc}") from exc
    finally:
        consumer.close()


@dataclass(frozen=True, slots=True)
class DlqFilter:
    """Which dead letters a command applies to; an unset field matches everything.

    ``error_type`` matches the full class name or its last part (``ValueError`` matches
    ``builtins`` and ``myapp.errors.ValueError``); ``key`` the UTF-8 key exactly;
    ``since``/``until`` the failure time (inclusive); ``records`` ``(partition, offset)``.
    """

    error_type: str | None = None
    key: str | None = None
    source_topic: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    records: frozenset[tuple[int, int]] | None = None

    def matches(self, letter: DeadLetter) -> bool:
        if self.error_type is not None and self.error_type not in (
            letter.error_type,
            letter.error_type.rsplit(".", 1)[-1],
        ):
            return False
        if self.key is not None and letter.key_text != self.key:
            return False
        if self.source_topic is not None and letter.source_topic != self.source_topic:
            return False
        if self.records is not None and (letter.partition, letter.offset) not in self.records:
            return False
        if self.since is not None or self.until is not None:
            at = letter.failed_at
            if at is None:
                return False
            if self.since is not None and at < self.since:
                return False
            if self.until is not None and at > self.until:
                return False
        return True

    def select(self, letters: Iterable[DeadLetter]) -> list[DeadLetter]:
        return [letter for letter in letters if self.matches(letter)]


@dataclass(frozen=True, slots=True)
class DlqSummary:
    """Counts per error type and per source topic, the time span, and what was replayed."""

    topic: str
    total: int
    by_error: dict[str, int]
    by_source: dict[str, int]
    oldest: datetime | None
    newest: datetime | None
    replayed: int
    replays: int

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "total": self.total,
            "by_error": self.by_error,
            "by_source": self.by_source,
            "oldest": format_time(self.oldest) if self.oldest else None,
            "newest": format_time(self.newest) if self.newest else None,
            "replayed": self.replayed,
            "replays": self.replays,
        }


def summarize(contents: DlqContents, selection: DlqFilter | None = None) -> DlqSummary:
    """Summarise the (selected) dead letters. ``replayed`` counts distinct dead letters
    replayed at least once; ``replays`` every replay mark of those."""
    letters = (selection or DlqFilter()).select(contents.letters)
    refs = {letter.ref for letter in letters}
    times = [t for letter in letters if (t := letter.failed_at) is not None]
    marked = [mark for mark in contents.marks if mark.of in refs]
    return DlqSummary(
        topic=contents.topic,
        total=len(letters),
        by_error=dict(Counter(letter.error_type for letter in letters).most_common()),
        by_source=dict(
            Counter(letter.source_topic or "<unknown>" for letter in letters).most_common()
        ),
        oldest=min(times, default=None),
        newest=max(times, default=None),
        replayed=len({mark.of for mark in marked}),
        replays=len(marked),
    )


@dataclass(frozen=True, slots=True)
class DlqReplayItem:
    """One dead letter and the record that replaying it sends."""

    letter: DeadLetter
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: list[Header]


@dataclass(frozen=True, slots=True)
class DlqReplayPlan:
    """The records a DLQ replay sends (``items``) and the dead letters it must skip, why."""

    dlq: str
    items: tuple[DlqReplayItem, ...]
    skipped: tuple[tuple[DeadLetter, str], ...] = ()

    def by_target(self) -> dict[str, int]:
        return dict(Counter(item.topic for item in self.items))


def plan_dlq_replay(
    contents: DlqContents,
    selection: DlqFilter | None = None,
    *,
    to: str | None = None,
    now: datetime | None = None,
) -> DlqReplayPlan:
    """What a replay of the selected dead letters would send, and what it must skip.

    Each goes to ``to`` if given, else back to its source topic, and to the partition it
    came from when it returns to its source topic (where its key lived). A dead letter
    without a known source topic is skipped unless ``to`` is given. Pure, no I/O.
    """
    sent_at = format_time(now or datetime.now(UTC)).encode()
    items: list[DlqReplayItem] = []
    skipped: list[tuple[DeadLetter, str]] = []
    for letter in (selection or DlqFilter()).select(contents.letters):
        source = letter.source_topic
        target = to or source
        if target is None:
            skipped.append((letter, "no source topic in its headers: give --to"))
            continue
        back_home = letter.failure is not None and target == source
        items.append(
            DlqReplayItem(
                letter=letter,
                topic=target,
                partition=letter.failure.origin.partition
                if back_home and letter.failure is not None
                else None,
                key=letter.key,
                value=letter.value,
                headers=[
                    *letter.original_headers,
                    (REPLAY_OF, letter.ref.encode()),
                    (REPLAY_TIME, sent_at),
                ],
            )
        )
    return DlqReplayPlan(contents.topic, tuple(items), tuple(skipped))


@dataclass(frozen=True, slots=True)
class DlqReplayResult:
    """How many records a DLQ replay sent, per target topic."""

    sent: int
    by_target: dict[str, int] = field(default_factory=dict)


def execute_dlq_replay(
    bootstrap: str,
    plan: DlqReplayPlan,
    *,
    timeout: float = 30.0,
    on_progress: Progress | None = None,
    config: Mapping[str, Any] | None = None,
) -> DlqReplayResult:
    """Send ``plan`` (idempotent producer, acks=all) and then its replay marks.

    Blocks until every record is acknowledged. Raises ``DlqError`` when a target topic
    does not exist (before anything is sent) or a send fails; marks are written only for
    a fully acknowledged replay.
    """
    if not plan.items:
        return DlqReplayResult(0)
    producer = Producer(
        client_config(
            bootstrap, config, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
    )
    _check_targets(producer, {item.topic for item in plan.items} | {plan.dlq}, timeout)
    errors: list[str] = []
    acked = 0
    total = len(plan.items)

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        nonlocal acked
        if err is not None:
            errors.append(err.str())
            return
        acked += 1
        if on_progress:
            on_progress(acked, total)

    traced = tracing()  # with an SDK: each record sent in a span, child of its letter's context
    for item in plan.items:
        extra: dict[str, Any] = {} if item.partition is None else {"partition": item.partition}
        headers = item.headers
        if traced is not None:
            headers = traced.replayed(headers, item.topic, item.letter.ref)
        _produce(
            producer,
            item.topic,
            key=item.key,
            value=item.value,
            headers=headers,
            on_delivery=delivered,
            **extra,
        )
    _flush(producer, timeout, errors, "replay")
    now = format_time(datetime.now(UTC)).encode()
    for item in plan.items:
        marks: list[Header] = [
            (REPLAY_MARK, item.letter.ref.encode()),
            (REPLAY_TO, item.topic.encode()),
            (REPLAY_TIME, now),
        ]
        _produce(
            producer,
            plan.dlq,
            key=None,
            value=None,
            headers=marks,
            on_delivery=_collect(errors),
        )
    _flush(producer, timeout, errors, "replay marks")
    return DlqReplayResult(acked, plan.by_target())


def _collect(errors: list[str]) -> Callable[[KafkaError | None, Message], None]:
    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err.str())

    return delivered


def _produce(
    producer: Producer,
    topic: str,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
    on_delivery: Callable[[KafkaError | None, Message], None],
    **extra: Any,
) -> None:
    while True:
        try:
            producer.produce(
                topic, value=value, key=key, headers=list(headers), on_delivery=on_delivery, **extra
            )
            break
        except BufferError:
            producer.poll(0.1)  # local queue full: let deliveries drain, then retry
    producer.poll(0)


def _flush(producer: Producer, timeout: float, errors: list[str], what: str) -> None:
    left = producer.flush(timeout)
    if left:
        raise DlqError(f"{what}: {left} record(s) not acknowledged within {timeout:.0f} s")
    if errors:
        raise DlqError(f"{what}: {len(errors)} record(s) failed, first error: {errors[0]}")


def _check_targets(producer: Producer, topics: set[str], timeout: float) -> None:
    existing = producer.list_topics(timeout=timeout).topics
    missing = sorted(t for t in topics if t not in existing or existing[t].error is not None)
    if missing:
        raise DlqError(f"replay target topic(s) do not exist: {', '.join(missing)}")


def describe(
    letter: DeadLetter, contents: DlqContents | None = None, decode: Decoder | None = None
) -> dict[str, Any]:
    """A JSON-able view of one dead letter: position, ids, error, headers, decoded body."""
    failure = letter.failure
    view: dict[str, Any] = {
        "ref": letter.ref,
        "partition": letter.partition,
        "offset": letter.offset,
        "timestamp": format_time(letter.timestamp) if letter.timestamp else None,
        "key": letter.key_text,
        "event_id": letter.event_id,
        "event_type": letter.event_type,
        "error": None
        if failure is None
        else {
            "exception": failure.exception,
            "message": failure.message,
            "stage": failure.stage.value,
            "step": failure.step,
            "attempts": failure.attempts,
            "first_failure": format_time(failure.first_failure),
            "last_failure": format_time(failure.last_failure),
            "app_id": failure.app_id,
            "source": {
                "topic": failure.origin.topic,
                "partition": failure.origin.partition,
                "offset": failure.origin.offset,
            },
            "stacktrace": failure.stacktrace,
        },
        "header_problem": letter.header_problem,
        "headers": {name: _text(value) for name, value in letter.original_headers},
        "value_size": None if letter.value is None else len(letter.value),
    }
    if decode is not None:
        try:
            view["envelope"] = decode(letter.value, letter.original_headers)
            view["decode_error"] = None
        except Exception as exc:  # any decoder failure is shown, not raised: it's a DLQ
            view["envelope"] = None
            view["decode_error"] = f"{type(exc).__name__}: {exc}"
    if contents is not None:
        view["replays"] = [
            {"to": mark.to, "time": format_time(mark.time)} for mark in contents.replays_of(letter)
        ]
    return view
