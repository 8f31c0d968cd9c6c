"""Sending dead letters back to their topics: a plan (pure), then its execution.

``plan_dlq_replay`` decides what each selected dead letter becomes: its original key,
value and headers (error headers removed, ``streams.replay.of``/``.time`` added), sent to
the partition it came from when it goes back to its source topic. ``execute_dlq_replay``
sends the plan, waits for every acknowledgement, then appends one *replay mark* per record
to the DLQ so later summaries show what was replayed, where and when. Replaying twice is
harmless for topologies that deduplicate (the envelope id is unchanged). A dead letter
keeps the trace context it was read with (``traceparent``), so its replay continues the
same trace (with an OpenTelemetry SDK set up, as a child span:
``streams.observability.tracing``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from streams.cluster import TopicError, TopicNotFoundError, admin_client, partition_count
from streams.config import client_config
from streams.dlq.errors import DlqError
from streams.dlq.letters import DeadLetter, DlqContents
from streams.dlq.read import Progress
from streams.dlq.summary import DlqFilter
from streams.failures.headers import (
    REPLAY_MARK,
    REPLAY_OF,
    REPLAY_TIME,
    REPLAY_TO,
    Header,
    format_time,
)
from streams.observability.tracing import tracing


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
    without a known source topic is skipped unless ``to`` is given; one whose value was cut
    to fit the DLQ is skipped (its whole record is in its input, at its origin). Pure, no
    I/O.
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
        failure = letter.failure
        if failure is not None and failure.value_cut is not None:
            skipped.append(
                (
                    letter,
                    f"its value was cut to fit the DLQ (of {failure.value_cut} bytes): the "
                    f"whole record is at {failure.origin}",
                )
            )
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
    _check_targets(bootstrap, config, {item.topic for item in plan.items} | {plan.dlq}, timeout)
    producer = Producer(
        client_config(
            bootstrap, config, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
    )
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


def _check_targets(
    bootstrap: str, config: Mapping[str, Any] | None, topics: set[str], timeout: float
) -> None:
    """Refuse a replay that a missing topic would stop halfway (or auto-create)."""
    admin = admin_client(bootstrap, config)
    missing = []
    for topic in sorted(topics):
        try:
            partition_count(admin, topic, timeout)
        except TopicNotFoundError:
            missing.append(topic)
        except TopicError as exc:
            raise DlqError(str(exc)) from exc
    if missing:
        raise DlqError(f"replay target topic(s) do not exist: {', '.join(missing)}")


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
