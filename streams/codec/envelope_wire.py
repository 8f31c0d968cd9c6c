"""The envelope record (``schemas/envelope.avsc``) written by hand, byte for byte as fastavro
writes it.

The envelope schema is ours and fixed: eight metadata fields and the payload bytes. A
generic Avro writer interprets the schema for every record (about 5 µs in fastavro); this
module knows it, so writing an envelope is a join of cached and freshly encoded parts.
Payloads keep going through fastavro (their schemas are the users'). The unit tests check
the bytes against fastavro's for generated envelopes.

``envelope_value`` raises (TypeError, ValueError, OverflowError, UnicodeEncodeError) on a
field of the wrong type or range, as fastavro would; the codec turns that into an
``EncodeError`` naming the field.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from streams.envelope import Envelope

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
# zigzag varints of 0..63 are one byte: most string lengths and every union index
_SMALL = [bytes([n << 1]) for n in range(64)]
_NULL = b"\x00"  # union branch 0: null
_STRING = b"\x02"  # union branch 1: string


def long_bytes(n: int) -> bytes:
    """Avro ``long``: zigzag, then a little-endian base-128 varint."""
    if 0 <= n < 64:
        return _SMALL[n]
    if not _LONG_MIN <= n <= _LONG_MAX:
        raise OverflowError(f"{n} does not fit an Avro long")
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def string_bytes(text: str) -> bytes:
    """Avro ``string``: the UTF-8 length as a long, then the bytes. TypeError for non-str."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    raw = text.encode()
    n = len(raw)
    return (_SMALL[n] if n < 64 else long_bytes(n)) + raw


def _optional_string(text: str | None) -> bytes:
    return _NULL if text is None else _STRING + string_bytes(text)


def micros(when: datetime | int) -> int:
    """Avro ``timestamp-micros``: microseconds since the epoch; a naive datetime is UTC."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (when - _EPOCH) // _MICROSECOND
    if isinstance(when, int):  # already micros, as fastavro accepts
        return when
    raise TypeError(f"expected a datetime, got {type(when).__name__}")


def type_version_bytes(type_: str, version: int) -> bytes:
    """The envelope's ``type`` and ``version`` fields, encoded: constant per schema, so
    codecs compute them once per (type, version)."""
    if not isinstance(version, int):
        raise TypeError(f"expected int, got {type(version).__name__}")
    if not _INT_MIN <= version <= _INT_MAX:
        raise OverflowError(f"{version} does not fit an Avro int")
    return string_bytes(type_) + long_bytes(version)


def envelope_value(env: Envelope, data: bytes, type_version: bytes) -> bytes:
    """The envelope record holding payload ``data``. ``type_version``: from
    ``type_version_bytes(env.type, env.version)``."""
    key = env.key
    n = len(data)
    return b"".join(
        (
            string_bytes(env.id),
            type_version,
            long_bytes(micros(env.time)),
            string_bytes(env.source),
            _NULL if key is None else _STRING + string_bytes(key),
            _optional_string(env.correlation_id),
            _optional_string(env.causation_id),
            _SMALL[n] if n < 64 else long_bytes(n),
            data,
        )
    )
