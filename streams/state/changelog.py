"""The changelog: record format, topic name, and creation/validation of the topic.

Every write to a store partition is also a record in partition ``p`` of the compacted topic
``<app>-<store>-changelog`` (``p`` is the input partition the store partition belongs to):

* key: the store key (bytes, as stored);
* a put: no headers; the value is a fixed 18-byte prefix, then the stored value. The
  prefix (``value_prefix``): ``VALUE_TAG`` (``ff 01``), the source offset (the input
  position whose processing made this write; -1 for none) and the expiry (epoch
  milliseconds, 0 for none), both signed 64-bit big-endian;
* a delete or an expiry: a tombstone (null value, so compaction drops the key), with the
  source offset in its one header, ``streams.source.offset`` (ASCII decimal).

Restore skips records whose source offset is past the committed input offset, so the
store is never ahead of the committed input. The tags are in the value rather than in
headers because confluent-kafka converts a record's headers on every produce call: two
headers took a changelog write from 0.66 to 0.98 µs (the prefix costs nothing
measurable), and dedup writes a changelog record for nearly every record processed.

Records of earlier versions still restore: puts whose value is the stored value alone,
with ``streams.source.offset`` and ``streams.expires.ms`` headers (and, before those,
``streams.source.topic`` and ``streams.source.partition``; the partition checked against
the changelog's). A put with neither the tag nor headers (written by another tool) is
applied as it is.
"""

from __future__ import annotations

import re
import struct
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

VALUE_TAG = b"\xff\x01"
"""How the value of a put starts (``value_prefix``): a marker, then the format's version."""
_PREFIX = struct.Struct(">2sqq")  # the tag, the source offset (-1: none), the expiry
PREFIX_SIZE = _PREFIX.size

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

    def encode(self) -> tuple[bytes | None, HeaderList]:
        """The record's value and headers as Streams writes them (see the module docstring;
        the source topic and partition, read from records of earlier versions, are not
        written)."""
        if self.value is None:
            return None, source_headers(self.source_offset)
        return value_prefix(self.source_offset, self.expires_at_ms) + self.value, []


def value_prefix(source_offset: int | None, expires_at_ms: int) -> bytes:
    """What the value of a put starts with (see the module docstring): built once for the
    records of a flush that expire in the same millisecond."""
    return _PREFIX.pack(VALUE_TAG, -1 if source_offset is None else source_offset, expires_at_ms)


def source_headers(offset: int | None) -> HeaderList:
    """A tombstone's headers (built once per flush)."""
    return [] if offset is None else [(SOURCE_OFFSET, str(offset).encode())]


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
    applied: no key, a malformed header or value prefix, or a tag for another input
    partition.
    """
    if key is None:
        raise CorruptChangelogError(topic, partition, offset, "the record has no key")
    if not headers and value is not None and value.startswith(VALUE_TAG):
        return _tagged(key, value, topic, partition, offset)
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


def _tagged(key: bytes, value: bytes, topic: str, partition: int, offset: int) -> ChangelogRecord:
    """A put written with its prefix (``value_prefix``)."""
    if len(value) < PREFIX_SIZE:
        reason = f"the value is {len(value)} bytes, shorter than its {PREFIX_SIZE}-byte prefix"
        raise CorruptChangelogError(topic, partition, offset, reason)
    _tag, source_offset, expires_at_ms = _PREFIX.unpack_from(value)
    if expires_at_ms < 0 or source_offset < -1:
        reason = f"the value's prefix holds a negative expiry or offset ({value[:PREFIX_SIZE]!r})"
        raise CorruptChangelogError(topic, partition, offset, reason)
    source = None if source_offset == -1 else source_offset
    return ChangelogRecord(key, value[PREFIX_SIZE:], expires_at_ms, None, None, source)


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
