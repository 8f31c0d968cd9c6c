"""The earlier wire format, read by hand: the Avro envelope record in the value.

Records written before the current format (CloudEvents binary mode) hold the schemaless
Avro of ``schemas/envelope.avsc`` in their value: eight metadata fields and the payload
bytes. Decoders still read them (``read_structured``), byte for byte as fastavro's reader
would (the unit tests check it against fastavro for generated envelopes, and arbitrary
bytes against the reader); nothing writes them any more. Pure functions: thread-safe,
never block.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from streams.codec.errors import EmptyRecordError, MalformedRecordError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
# zigzag varints of 0..63 are one byte: most string lengths and every union index
_SMALL = [bytes([n << 1]) for n in range(64)]
_NULL = b"\x00"  # union branch 0: null
_STRING = b"\x02"  # union branch 1: string


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


def read_structured(value: bytes | None) -> dict[str, Any]:
    """The envelope record in ``value`` as fastavro's reader returns it (``time`` an aware
    UTC datetime, ``data`` bytes). Raises ``EmptyRecordError`` or ``MalformedRecordError``
    on bytes that are not one (extra bytes after the record included)."""
    if not value:
        raise EmptyRecordError("empty record value: not an envelope")
    try:
        return read_envelope(value)
    except Exception as exc:  # garbage: EOFError, UnicodeDecodeError, ValueError, ...
        raise MalformedRecordError(
            f"not a Streams envelope ({len(value)} bytes; {type(exc).__name__}: {exc})"
        ) from None


def read_envelope(value: bytes) -> dict[str, Any]:
    """``read_structured`` without the error translation: raises ValueError, EOFError,
    IndexError, OverflowError or UnicodeDecodeError on bytes that are not an envelope
    record, as a generic reader would; extra bytes after the record are ValueError."""
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
