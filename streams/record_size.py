"""How big a record is to librdkafka, against the producer's ``message.max.bytes``.

librdkafka refuses a write at once (``MSG_SIZE_TOO_LARGE`` from ``produce``) when the
record's largest wire size is over ``message.max.bytes`` (1,000,000 bytes by default): a
fixed overhead, the key, the value, and each header's name and value with their lengths as
zigzag varints (measured on librdkafka 2.16: with a one-byte key and no header, 999,963
bytes of value fit, 999,964 do not). A dead letter is its input's bytes plus error headers,
so an input that fit may not fit as a dead letter: ``record_size`` says whether it does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RECORD_OVERHEAD = 36
"""librdkafka's ``RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD``: length, attributes, timestamp and
offset deltas, key and value lengths, header count, each at its largest varint."""

DEFAULT_MESSAGE_MAX_BYTES = 1_000_000
"""librdkafka's default ``message.max.bytes``."""


def varint_size(n: int) -> int:
    """Bytes of ``n`` as a zigzag varint (a length of -1 is a null)."""
    zigzag = (n << 1) ^ (n >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def _field_size(data: bytes | None) -> int:
    return varint_size(-1) if data is None else varint_size(len(data)) + len(data)


def headers_size(headers: Iterable[tuple[str, bytes | None]]) -> int:
    """What ``headers`` add to a record."""
    return sum(_field_size(name.encode()) + _field_size(value) for name, value in headers)


def record_size(
    key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]]
) -> int:
    """The size librdkafka checks against ``message.max.bytes`` for this record."""
    return (
        RECORD_OVERHEAD
        + (len(key) if key else 0)
        + (len(value) if value else 0)
        + headers_size(headers)
    )


def message_max_bytes(settings: Mapping[str, Any]) -> int:
    """The largest record a producer with these librdkafka ``settings`` writes."""
    return int(settings.get("message.max.bytes", DEFAULT_MESSAGE_MAX_BYTES))
