"""The envelope record (``schemas/envelope.avsc``) written and read by hand, byte for byte
as fastavro writes and reads it.

The envelope schema is ours and fixed: eight metadata fields and the payload bytes. A
generic Avro writer or reader interprets the schema for every record (about 5 µs each way
in fastavro); this module knows it, so writing an envelope is a join of cached and freshly
encoded parts, and reading it a walk over nine fields. Payloads keep going through
fastavro (their schemas are the users'). The unit tests check both directions against
fastavro for generated envelopes, and arbitrary bytes against the reader.

``envelope_value`` raises (TypeError, ValueError, OverflowError, UnicodeEncodeError) on a
field of the wrong type or range, as fastavro would; the codec turns that into an
``EncodeError`` naming the field. ``read_envelope`` raises ValueError, EOFError,
IndexError or OverflowError on bytes that are not an envelope; the codec turns that into
a ``MalformedRecordError``. Pure functions: thread-safe, never block.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

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


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos``: (value, next position). IndexError past the end."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    n = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos + 1
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    b = buf[pos]
    if b < 0x80 and not b & 1:  # the common case: a length below 64 in one byte
        n, pos = b >> 1, pos + 1
    else:
        n, pos = _read_long(buf, pos)
        if n < 0:
            raise ValueError(f"negative length {n}")
    end = pos + n
    if end > len(buf):
        raise EOFError(f"string of {n} bytes at {pos} runs past the end")
    return buf[pos:end].decode(), end


def _read_optional_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    branch = buf[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise ValueError(f"union branch byte {branch} of [null, string]")
    return _read_string(buf, pos + 1)


def read_envelope(value: bytes) -> dict[str, Any]:
    """The envelope record in ``value`` as fastavro's reader returns it (``time`` an aware
    UTC datetime, ``data`` bytes). Raises ValueError, EOFError, IndexError, OverflowError or
    UnicodeDecodeError on bytes that are not one, as a generic reader would; extra bytes
    after the record are ValueError."""
    id_, pos = _read_string(value, 0)
    type_, pos = _read_string(value, pos)
    version, pos = _read_long(value, pos)
    if not _INT_MIN <= version <= _INT_MAX:
        raise ValueError(f"version {version} does not fit an Avro int")
    when, pos = _read_long(value, pos)
    source, pos = _read_string(value, pos)
    key, pos = _read_optional_string(value, pos)
    correlation_id, pos = _read_optional_string(value, pos)
    causation_id, pos = _read_optional_string(value, pos)
    n, pos = _read_long(value, pos)
    if n < 0:
        raise ValueError(f"negative length {n}")
    end = pos + n
    if end != len(value):
        if end > len(value):
            raise EOFError(f"data of {n} bytes at {pos} runs past the end")
        raise ValueError(f"{len(value) - end} trailing byte(s)")
    return {
        "id": id_,
        "type": type_,
        "version": version,
        "time": _EPOCH + timedelta(microseconds=when),
        "source": source,
        "key": key,
        "correlation_id": correlation_id,
        "causation_id": causation_id,
        "data": value[pos:end],
    }
