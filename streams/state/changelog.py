"""The changelog: record format, topic name, and creation/validation of the topic.

Every write to a store partition is also a record in partition ``p`` of the compacted topic
``<app>-<store>-changelog`` (``p`` is the input partition the store partition belongs to):

* key: the store key (bytes, as stored);
* value: the stored value, or null (a tombstone) for a delete or an expiry;
* headers, all values ASCII/UTF-8:
  ``streams.source.offset``: the input position whose processing made this write (the
  input partition is the changelog's partition); restore skips records tagged past the
  committed input offset, so the store is never ahead of the committed input;
  ``streams.expires.ms``: present when the entry has a time to live: the epoch
  milliseconds at which it expires.
  ``streams.source.topic`` and ``streams.source.partition`` are read (the partition
  checked against the changelog's), no longer written: every header costs about a
  microsecond a record to produce, and these two only repeated what the topic says.

Records without source headers (written by another tool) are always applied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams.cluster import TopicError, TopicNotFoundError, Topics
from streams.state.base import NEVER, Entry
from streams.state.errors import (
    ChangelogCompactionError,
    ChangelogPartitionCountError,
    ChangelogTopicError,
    CorruptChangelogError,
    StateError,
)

SOURCE_TOPIC = "streams.source.topic"
SOURCE_PARTITION = "streams.source.partition"
SOURCE_OFFSET = "streams.source.offset"
EXPIRES_AT = "streams.expires.ms"

CHANGELOG_CONFIG = {"cleanup.policy": "compact"}
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def changelog_topic(app: str, store: str) -> str:
    """``<app>-<store>-changelog``; both parts must be legal in a Kafka topic name."""
    for what, part in (("app id", app), ("store name", store)):
        if not _LEGAL.match(part):
            raise StateError(f"{what} {part!r} may only use letters, digits, '.', '_' and '-'")
    return f"{app}-{store}-changelog"


HeaderList = list[tuple[str, str | bytes | None]]
"""Headers as written (the type confluent-kafka's ``produce`` takes)."""

Headers = Sequence[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None]


@dataclass(frozen=True, slots=True)
class ChangelogRecord:
    """One decoded changelog record. ``value is None`` is a tombstone."""

    key: bytes
    value: bytes | None
    expires_at_ms: int = NEVER
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None

    @property
    def entry(self) -> Entry | None:
        """What the record makes of its key in the store: an entry, or ``None`` (deleted)."""
        return None if self.value is None else Entry(self.value, self.expires_at_ms)

    def headers(self) -> HeaderList:
        """The record's headers (the source topic and partition only when it has them, as
        records of earlier versions did)."""
        headers: HeaderList = []
        if self.source_topic is not None:
            headers.append((SOURCE_TOPIC, self.source_topic.encode()))
        if self.source_partition is not None:
            headers.append((SOURCE_PARTITION, str(self.source_partition).encode()))
        return record_headers([*headers, *source_headers(self.source_offset)], self.expires_at_ms)


def source_headers(offset: int | None) -> HeaderList:
    """The headers shared by every record of one flush (built once per flush)."""
    return [] if offset is None else [(SOURCE_OFFSET, str(offset).encode())]


def record_headers(shared: HeaderList, expires_at_ms: int) -> HeaderList:
    if expires_at_ms == NEVER:
        return shared
    return [*shared, (EXPIRES_AT, str(expires_at_ms).encode())]


def _int_header(name: str, raw: str | bytes | None) -> int:
    try:
        return int(raw)  # type: ignore[arg-type]  # None raises TypeError, caught below
    except (TypeError, ValueError):
        raise ValueError(f"header {name} is {raw!r}, not a decimal integer") from None


def decode_record(
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None,
    *,
    topic: str,
    partition: int,
    offset: int,
) -> ChangelogRecord:
    """Decode one record read from ``topic[partition]@offset``.

    Raises :class:`CorruptChangelogError` (naming the offset) for a record that cannot be
    applied: no key, a malformed header, or a tag for another input partition.
    """
    if key is None:
        raise CorruptChangelogError(topic, partition, offset, "the record has no key")
    expires_at_ms = NEVER
    src_topic: str | None = None
    src_partition: int | None = None
    src_offset: int | None = None
    try:
        pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
        for name, raw in pairs:
            if name == SOURCE_OFFSET:
                src_offset = _int_header(name, raw)
            elif name == EXPIRES_AT:
                expires_at_ms = _int_header(name, raw)
                if expires_at_ms < 0:
                    raise ValueError(f"header {name} is negative")
            elif name == SOURCE_PARTITION:
                src_partition = _int_header(name, raw)
            elif name == SOURCE_TOPIC:
                src_topic = raw if isinstance(raw, str) else (raw or b"").decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptChangelogError(topic, partition, offset, str(exc)) from exc
    if src_partition is not None and src_partition != partition:
        raise CorruptChangelogError(
            topic,
            partition,
            offset,
            f"tagged with input partition {src_partition}, but changelog partition {partition} "
            f"belongs to input partition {partition}",
        )
    return ChangelogRecord(key, value, expires_at_ms, src_topic, src_partition, src_offset)


def ensure_changelog_topic(
    cluster: Topics, topic: str, partitions: int, *, create: bool = True
) -> bool:
    """Make sure ``topic`` can back a store whose input has ``partitions`` partitions.

    Creates it (compacted, ``partitions`` partitions, ``cluster``'s replication factor)
    when missing and ``create``; returns True when it created it. Blocks on the admin API
    (up to ``cluster.timeout`` per request).
    Raises :class:`ChangelogPartitionCountError` or :class:`ChangelogCompactionError` for
    an existing topic that does not fit, :class:`ChangelogTopicError` when it is missing and
    ``create`` is false or the broker cannot be asked.
    """
    try:
        if create and cluster.ensure(topic, partitions, CHANGELOG_CONFIG):
            return True  # made as it must be (and the next broker asked may not know it yet)
        actual = cluster.partition_count(topic)
        if actual != partitions:
            raise ChangelogPartitionCountError(topic, actual, partitions)
        entry = cluster.configs(topic).get("cleanup.policy")
    except TopicNotFoundError as exc:
        raise ChangelogTopicError(f"changelog topic {topic!r} does not exist") from exc
    except TopicError as exc:
        raise ChangelogTopicError(str(exc)) from exc
    policy = str(entry.value) if entry is not None and entry.value is not None else "delete"
    if "compact" not in {p.strip() for p in policy.split(",")}:
        raise ChangelogCompactionError(topic, policy)
    return False
