"""Sending dead letters back to their topics: a plan (pure), then its execution.

``plan_dlq_replay`` decides what each selected dead letter becomes: its original key,
value and headers (error headers removed, ``streams.replay.of``/``.time`` added), sent to
the partition it came from when it goes back to its source topic. A dead letter that a
replay mark says was replayed already is left out (``again=True`` sends it too).

``execute_dlq_replay`` sends the plan and appends one *replay mark* per record to the DLQ
as soon as that record is acknowledged, never before: whatever way the command ends
(done, a send refused, Ctrl-C), every record the cluster acknowledged is marked, or the
error says which are not. So a rerun of an interrupted or failed replay sends only what
is left. Replaying twice is harmless anyway for topologies that deduplicate (the envelope
id is unchanged). A dead letter keeps the trace context it was read with
(``traceparent``), so its replay continues the same trace (with an OpenTelemetry SDK set
up, as a child span: ``streams.observability.tracing``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

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
    """The records a DLQ replay sends (``items``), the dead letters it must skip and why,
    and those it leaves out because they were replayed already (``replayed``)."""

    dlq: str
    items: tuple[DlqReplayItem, ...]
    skipped: tuple[tuple[DeadLetter, str], ...] = ()
    replayed: tuple[DeadLetter, ...] = ()

    def by_target(self) -> dict[str, int]:
        return dict(Counter(item.topic for item in self.items))


def plan_dlq_replay(
    contents: DlqContents,
    selection: DlqFilter | None = None,
    *,
    to: str | None = None,
    now: datetime | None = None,
    again: bool = False,
) -> DlqReplayPlan:
    """What a replay of the selected dead letters would send, and what it must skip.

    Each goes to ``to`` if given, else back to its source topic, and to the partition it
    came from when it returns to its source topic (where its key lived). A dead letter
    with a replay mark was replayed already: it is left out (``replayed``) unless
    ``again``. One without a known source topic is skipped unless ``to`` is given; one
    whose value was cut to fit the DLQ is skipped (its whole record is in its input, at
    its origin). Any key, value and headers are sent as they are: a value that is no
    envelope goes back as it came. Pure, no I/O.
    """
    sent_at = format_time(now or datetime.now(UTC)).encode()
    marked = {mark.of for mark in contents.marks}
    items: list[DlqReplayItem] = []
    skipped: list[tuple[DeadLetter, str]] = []
    replayed: list[DeadLetter] = []
    for letter in (selection or DlqFilter()).select(contents.letters):
        if letter.ref in marked and not again:
            replayed.append(letter)
            continue
        source = letter.origin_topic
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
    return DlqReplayPlan(contents.topic, tuple(items), tuple(skipped), tuple(replayed))


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
    """Send ``plan`` (idempotent producer, acks=all), marking each record in the DLQ once
    it is acknowledged.

    Blocks until every record and mark is acknowledged, or ``timeout`` seconds pass
    without. Raises ``DlqError`` when a target topic does not exist (before anything is
    sent), or, after the sends, when a record was not sent or not marked (one line: how
    many of each, and what a rerun does). Interrupted (Ctrl-C, an error of
    ``on_progress``), it still waits up to ``timeout`` for the records in flight and marks
    every acknowledged one before the interruption goes on.
    """
    if not plan.items:
        return DlqReplayResult(0)
    _check_targets(bootstrap, config, {item.topic for item in plan.items} | {plan.dlq}, timeout)
    producer = Producer(
        client_config(
            bootstrap, config, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
    )
    sender = _Sender(producer, plan.dlq, len(plan.items), on_progress)
    traced = tracing()  # with an SDK: each record sent in a span, child of its letter's context
    try:
        for item in plan.items:
            headers = item.headers
            if traced is not None:
                headers = traced.replayed(headers, item.topic, item.letter.ref)
            sender.send(item, headers)
        sender.settle(timeout)
    except BaseException as exc:
        sender.settle(timeout, interrupted=True)
        sender.check(timeout, interrupted=True)
        if isinstance(exc, KafkaException):  # a produce refused at once: one line, counted
            err = exc.args[0] if exc.args else None
            cause = err.str() if isinstance(err, KafkaError) else str(exc)
            raise DlqError(
                f"replay stopped: {sender.marked} of {sender.total} record(s) sent and marked "
                f"as replayed, a rerun sends the rest; {cause}"
            ) from exc
        raise
    sender.check(timeout)
    return DlqReplayResult(sender.sent, plan.by_target())


class _Sender:
    """One replay's producer: sends the records, and marks each one in the DLQ once the
    cluster acknowledged it (never before: a mark says the record is there).

    Delivery callbacks run inside ``poll``/``flush`` on this thread; they only note what
    happened, and the marks are produced between polls."""

    def __init__(
        self, producer: Producer, dlq: str, total: int, on_progress: Progress | None
    ) -> None:
        self.producer = producer
        self.dlq = dlq
        self.total = total
        self.on_progress = on_progress
        self.in_flight = 0  # records produced, neither acknowledged nor failed yet
        self.sent = 0  # records acknowledged
        self.to_mark: list[DlqReplayItem] = []  # acknowledged, mark not produced yet
        self.marked = 0  # marks acknowledged
        self.send_errors: list[str] = []
        self.mark_errors: list[str] = []

    def send(self, item: DlqReplayItem, headers: Sequence[Header]) -> None:
        def delivered(err: KafkaError | None, _msg: Message) -> None:
            self.in_flight -= 1
            if err is not None:
                self.send_errors.append(err.str())
                return
            self.sent += 1
            self.to_mark.append(item)
            if self.on_progress:
                self.on_progress(self.sent, self.total)

        extra: dict[str, Any] = {} if item.partition is None else {"partition": item.partition}
        _produce(
            self.producer,
            item.topic,
            key=item.key,
            value=item.value,
            headers=headers,
            on_delivery=delivered,
            **extra,
        )
        self.in_flight += 1
        self.producer.poll(0)
        self._mark_acknowledged()

    def _mark_acknowledged(self) -> None:
        while self.to_mark:
            item = self.to_mark[0]
            marks: list[Header] = [
                (REPLAY_MARK, item.letter.ref.encode()),
                (REPLAY_TO, item.topic.encode()),
                (REPLAY_TIME, format_time(datetime.now(UTC)).encode()),
            ]
            _produce(
                self.producer,
                self.dlq,
                key=None,
                value=None,
                headers=marks,
                on_delivery=self._mark_delivered,
            )
            del self.to_mark[0]  # only once produced: a callback's error may stop us first

    def _mark_delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self.mark_errors.append(err.str())
        else:
            self.marked += 1

    def settle(self, timeout: float, *, interrupted: bool = False) -> None:
        """Wait up to ``timeout`` for the records in flight, marking each acknowledged
        one, then for the marks. ``interrupted``: called while an interruption
        propagates; an error of a callback (``on_progress``) no longer stops it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._mark_acknowledged()
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if self.in_flight:
                    self.producer.poll(min(0.1, left))  # acknowledgements: marked above
                else:  # every record answered, its mark produced: wait for the marks
                    self.producer.flush(left)
                    break
            except Exception:
                if not interrupted:
                    raise

    def check(self, timeout: float, *, interrupted: bool = False) -> None:
        """Raise ``DlqError`` when a record was not sent or not marked, in one line: how
        many of each, and what a rerun does. Interrupted, only when a rerun would send
        records twice (that line matters more than the interruption)."""
        unmarked = self.sent - self.marked
        if interrupted and not (unmarked or self.in_flight):
            return
        problems = []
        if self.send_errors:
            problems.append(
                f"{len(self.send_errors)} record(s) not sent (first error: "
                f"{self.send_errors[0]}): a rerun sends them"
            )
        if self.in_flight:
            problems.append(
                f"{self.in_flight} record(s) not acknowledged within {timeout:.0f} s: "
                "they may have arrived, and a rerun sends them again"
            )
        if unmarked:
            why = (
                f"first error: {self.mark_errors[0]}"
                if self.mark_errors
                else f"not acknowledged within {timeout:.0f} s"
            )
            problems.append(
                f"{unmarked} record(s) sent but not marked as replayed ({why}): "
                "a rerun sends them again"
            )
        if problems:
            what = "replay interrupted" if interrupted else "replay"
            done = f"{self.marked} of {self.total} record(s) sent and marked as replayed"
            raise DlqError(f"{what}: {done}; " + "; ".join(problems))


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
