"""Kafka headers carrying envelope metadata, with CloudEvents Kafka binding names.

Tools route and filter on these without decoding the value (``peek_type``). Streams' own
format writes the three that routing needs (``ce_id``, ``ce_type``, ``ce_dataversion``);
a format whose value is the payload alone (the Confluent one) carries every field here
(``metadata_headers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.envelope import Envelope

SPECVERSION = "ce_specversion"
ID = "ce_id"
TYPE = "ce_type"
SOURCE = "ce_source"
TIME = "ce_time"
# CloudEvents extension attributes (lower-case alphanumerics, as the spec requires).
DATAVERSION = "ce_dataversion"
CORRELATION_ID = "ce_correlationid"
CAUSATION_ID = "ce_causationid"
# The CloudEvents partitioning extension: the envelope's key.
PARTITIONKEY = "ce_partitionkey"

SPECVERSION_VALUE = b"1.0"

HeaderValue = str | bytes | None
# What confluent-kafka's Message.headers() returns (a list of pairs), or a mapping.
Headers = Sequence[tuple[str, HeaderValue]] | Mapping[str, HeaderValue]


def metadata_headers(env: Envelope) -> list[tuple[str, bytes]]:
    """Every field of ``env`` but ``data``, as headers (optional ones when set); ``time``
    in RFC 3339, UTC (a naive time is taken as UTC)."""
    when = env.time if env.time.tzinfo is not None else env.time.replace(tzinfo=UTC)
    out = [
        (SPECVERSION, SPECVERSION_VALUE),
        (ID, env.id.encode()),
        (SOURCE, env.source.encode()),
        (TYPE, env.type.encode()),
        (TIME, when.astimezone(UTC).isoformat(timespec="microseconds").encode()),
        (DATAVERSION, str(env.version).encode()),
    ]
    for name, value in (
        (PARTITIONKEY, env.key),
        (CORRELATION_ID, env.correlation_id),
        (CAUSATION_ID, env.causation_id),
    ):
        if value is not None:
            out.append((name, value.encode()))
    return out


def as_bytes(value: HeaderValue) -> bytes | None:
    """A header value as bytes (text headers are UTF-8)."""
    return value.encode() if isinstance(value, str) else value


def pairs(headers: Headers | None) -> Sequence[tuple[str, HeaderValue]]:
    if not headers:
        return ()
    if isinstance(headers, Mapping):
        return list(headers.items())
    return headers


def header_value(headers: Headers | None, name: str) -> bytes | None:
    """The first value of header ``name`` as bytes, or None. Linear: headers are a handful."""
    for k, v in pairs(headers):
        if k == name:
            return as_bytes(v)
    return None


def peek_type(headers: Headers | None) -> tuple[str, int] | None:
    """``(type, version)`` from the headers alone, without decoding the value.

    None when either header is absent or unreadable: the caller then decodes (and gets a
    typed error if the record is bad). Never raises.
    """
    type_b: HeaderValue = None
    version_b: HeaderValue = None
    for k, v in pairs(headers):
        if k == TYPE and type_b is None:
            type_b = v
        elif k == DATAVERSION and version_b is None:
            version_b = v
    if not type_b or not version_b:
        return None
    try:
        type_ = type_b if isinstance(type_b, str) else type_b.decode()
        return type_, int(version_b)
    except (UnicodeDecodeError, ValueError):
        return None
