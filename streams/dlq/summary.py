"""Which dead letters a command applies to, and what they add up to. Pure, no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.dlq.letters import DeadLetter, DlqContents
from streams.failures.headers import format_time


@dataclass(frozen=True, slots=True)
class DlqFilter:
    """Which dead letters a command applies to; an unset field matches everything.

    ``error_type`` matches the full class name or its last part (``ValueError`` matches
    ``builtins`` and ``myapp.errors.ValueError``); ``key`` the UTF-8 key exactly;
    ``since``/``until`` the failure time (inclusive); ``records`` ``(partition, offset)``.
    """

    error_type: str | None = None
    key: str | None = None
    origin_topic: str | None = None
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
        if self.origin_topic is not None and letter.origin_topic != self.origin_topic:
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
            Counter(letter.origin_topic or "<unknown>" for letter in letters).most_common()
        ),
        oldest=min(times, default=None),
        newest=max(times, default=None),
        replayed=len({mark.of for mark in marked}),
        replays=len(marked),
    )
