"""The records of a dead-letter topic as read: dead letters and replay marks.

A DLQ holds two kinds of record: the dead letters the runtime wrote (the original key,
value and headers plus the error headers), and the *replay marks* a DLQ replay appends,
one per dead letter it sent back. ``to_dead_letter`` tells them apart on reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from confluent_kafka import Message

from streams.codec.headers import ID, TYPE
from streams.dlq.errors import DlqError
from streams.failures.errors import FailureHeaderError
from streams.failures.headers import (
    REPLAY_MARK,
    REPLAY_TIME,
    REPLAY_TO,
    FailureInfo,
    Header,
    header_text,
    parse_failure_headers,
    parse_time,
    strip_failure_headers,
)

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
    def origin_topic(self) -> str | None:
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
        return printable(self.key)


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

    def check_is_dlq(self) -> None:
        """Raise ``DlqError`` when the topic is no dead-letter topic: it holds records, and
        none carries error headers (readable or not) nor is a replay mark. An empty topic
        is an empty DLQ."""
        if self.marks or not self.letters:
            return
        if any(letter.failure or letter.header_problem for letter in self.letters):
            return
        raise DlqError(
            f"{self.topic} holds no dead letters: {len(self.letters)} record(s) without "
            "error headers (is it a DLQ?)"
        )


def printable(data: bytes | None) -> str | None:
    """Bytes as UTF-8 text, else as ``0x<hex>``: keys and header values are shown, not
    decoded, and a DLQ may hold anything."""
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
