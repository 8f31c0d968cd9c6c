"""Positions in a partition, as users write them, and the partitions they apply to.

A position is one of:

==================  ==========================================  =========================
form                meaning                                     Kafka's reset option
==================  ==========================================  =========================
``earliest``        the log start offset                        ``--to-earliest``
``latest``          the log end offset                          ``--to-latest``
``1234``            that offset (clamped to the log)            ``--to-offset``
``+100``, ``-100``  shifted from the group's committed offset   ``--shift-by``
``2026-11-29T10:00:00Z``, ``@1764410400000``
                    the first record at or after that time      ``--to-datetime``
                    (ISO 8601 with a zone, or epoch ms after @)
``2h``, ``30m``, ``PT2H``, ``P1DT2H``
                    that long ago: a time, resolved as above    ``--by-duration``
==================  ==========================================  =========================

Plain integers are offsets; epoch milliseconds take an ``@`` so the two never collide.
Times and durations are read by ``streams.timespec``, the grammar every command shares
(a time without a zone is refused, and so is one out of range: before 1970, after 9999,
or a duration ago reaching before 1970). Parsing is pure but for that last check, which
reads the clock, and raises ``PositionError``; resolution against a partition's state is
in ``streams.replay.resolve``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from streams.replay.errors import PositionError
from streams.timespec import (
    TimeRangeError,
    TimeSpecError,
    format_duration,
    format_instant_ms,
    looks_like_instant,
    parse_ago_ms,
    parse_instant_ms,
)


@dataclass(frozen=True, slots=True)
class Earliest:
    """The log start offset: the oldest record still in the partition."""

    def __str__(self) -> str:
        return "earliest"


@dataclass(frozen=True, slots=True)
class Latest:
    """The log end offset: just after the newest record."""

    def __str__(self) -> str:
        return "latest"


@dataclass(frozen=True, slots=True)
class AtOffset:
    """An absolute offset; out-of-range values clamp to the log like Kafka's tool."""

    offset: int

    def __str__(self) -> str:
        return str(self.offset)


@dataclass(frozen=True, slots=True)
class AtTime:
    """The first record whose timestamp is at or after ``ms`` (epoch milliseconds).
    ``text``: as the user typed it, which titles and refusals show (not compared)."""

    ms: int
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text or format_instant_ms(self.ms)


@dataclass(frozen=True, slots=True)
class Ago:
    """A time ``ms`` milliseconds before the moment of resolution. ``text``: as the user
    typed it, which titles and refusals show (not compared)."""

    ms: int
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text or format_duration(self.ms)


@dataclass(frozen=True, slots=True)
class Shift:
    """The group's committed offset moved by ``delta`` (clamped to the log)."""

    delta: int

    def __str__(self) -> str:
        return f"{self.delta:+d}"


Position = Earliest | Latest | AtOffset | AtTime | Ago | Shift


@dataclass(frozen=True, slots=True)
class PositionSpec:
    """One position for every partition (``default``), or one per listed partition."""

    default: Position | None = None
    per_partition: Mapping[int, Position] = field(default_factory=dict)

    def for_partition(self, partition: int) -> Position | None:
        return self.per_partition.get(partition, self.default)

    def __str__(self) -> str:
        if self.default is not None:
            return str(self.default)
        return ",".join(f"{p}={pos}" for p, pos in sorted(self.per_partition.items()))


@dataclass(frozen=True, slots=True)
class TopicSelection:
    """A topic, and optionally some of its partitions (``orders`` or ``orders:0,2``)."""

    topic: str
    partitions: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if self.partitions is None:
            return self.topic
        return f"{self.topic}:{','.join(map(str, self.partitions))}"


_OFFSET = re.compile(r"\d+")
_SHIFT = re.compile(r"[+-]\d+")
_NAMES: dict[str, Position] = {
    "earliest": Earliest(),
    "beginning": Earliest(),
    "latest": Latest(),
    "end": Latest(),
}


def parse_position(text: str) -> Position:
    """Parse one position (see the module docstring). Raises ``PositionError``."""
    raw = text.strip()
    named = _NAMES.get(raw.lower())
    if named is not None:
        return named
    if _OFFSET.fullmatch(raw):
        return AtOffset(int(raw))
    if _SHIFT.fullmatch(raw):
        return Shift(int(raw))
    if looks_like_instant(raw):
        try:
            return AtTime(parse_instant_ms(raw), raw)
        except TimeSpecError as exc:
            raise PositionError(str(exc)) from None
    try:
        return Ago(parse_ago_ms(raw), raw)
    except TimeRangeError as exc:  # a duration, reaching before 1970
        raise PositionError(str(exc)) from None
    except TimeSpecError:
        pass  # none of the forms: the error below lists them all
    raise PositionError(
        f"not a position: {text!r} (earliest, latest, an offset, +N/-N, an ISO time with "
        "zone, @epoch-ms, or a duration ago like 2h or PT2H)"
    )


def parse_position_spec(text: str) -> PositionSpec:
    """One position for all partitions, or ``0=100,2=earliest`` for listed partitions."""
    raw = text.strip()
    if "=" not in raw:
        return PositionSpec(default=parse_position(raw))
    per: dict[int, Position] = {}
    for item in raw.split(","):
        part, sep, pos = item.partition("=")
        if not sep or not part.strip().isdigit():
            raise PositionError(f"not a partition=position pair: {item!r} in {text!r}")
        if int(part) in per:
            raise PositionError(f"partition {int(part)} given twice in {text!r}")
        per[int(part)] = parse_position(pos)
    return PositionSpec(per_partition=per)


def parse_topic_selection(text: str) -> TopicSelection:
    """``orders`` (every partition) or ``orders:0,2`` (those partitions), like Kafka's tool."""
    topic, sep, parts = text.strip().partition(":")
    if not topic:
        raise PositionError(f"no topic name in {text!r}")
    if not sep:
        return TopicSelection(topic)
    try:
        partitions = tuple(sorted({int(p) for p in parts.split(",")}))
    except ValueError as exc:
        raise PositionError(f"bad partition list in {text!r} (expected topic:0,1,2)") from exc
    if not partitions or min(partitions) < 0:
        raise PositionError(f"bad partition list in {text!r} (expected topic:0,1,2)")
    return TopicSelection(topic, partitions)


def format_ms(ms: int) -> str:
    """An epoch-ms time as ISO 8601 UTC with milliseconds, for plans and summaries."""
    return format_instant_ms(ms)
