"""The envelope record (``schemas/envelope.avsc``) written and read by hand, byte for byte
as fastavro writes and reads it.

The envelope schema is ours and fixed: eight metadata fields and the payload bytes. A
generic Avro writer or reader interprets the schema for every record (about 5 µs each way
in fastavro); this module knows it, so writing an envelope is a join of cached and freshly
encoded parts, and reading it runs a fixed program of nine fields on ``avro_machine``
(about 0.9 µs compiled). Payloads go through programs compiled from their schemas
(``streams.codec.compiled``). The unit tests check both
directions against fastavro for generated envelopes, and arbitrary bytes against the
reader.

``envelope_value`` raises (TypeError, ValueError, OverflowError, UnicodeEncodeError) on a
field of the wrong type or range, as fastavro would; the codec turns that into an
``EncodeError`` naming the field. ``read_envelope`` raises ValueError, EOFError,
IndexError or OverflowError on bytes that are not an envelope; the codec turns that into
a ``MalformedRecordError``. Pure functions: thread-safe, never block.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from streams.codec.avro_codes import T_BYTES, T_INT, T_LONG, T_RECORD, T_STRING, T_UNION
from streams.codec.avro_machine import read_values
from streams.codec.varint import INT_MAX, INT_MIN, SMALL, long_bytes
from streams.envelope import Envelope

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_NULL = b"\x00"  # union branch 0: null
_STRING = b"\x02"  # union branch 1: string


def string_bytes(text: str) -> bytes:
    """Avro ``string``: the UTF-8 length as a long, then the bytes. TypeError for non-str."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    raw = text.encode()
    n = len(raw)
    return (SMALL[n] if n < 64 else long_bytes(n)) + raw


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
    if not INT_MIN <= version <= INT_MAX:
        raise OverflowError(f"{version} does not fit an Avro int")
    return string_bytes(type_) + long_bytes(version)


def envelope_value(
    env: Envelope, data: bytes, type_version: bytes, when: int | None = None
) -> bytes:
    """The envelope record holding payload ``data``. ``type_version``: from
    ``type_version_bytes(env.type, env.version)``; ``when``: ``micros(env.time)`` if the
    caller has it already."""
    key = env.key
    n = len(data)
    return b"".join(
        (
            string_bytes(env.id),
            type_version,
            long_bytes(micros(env.time) if when is None else when),
            string_bytes(env.source),
            _NULL if key is None else _STRING + string_bytes(key),
            _optional_string(env.correlation_id),
            _optional_string(env.causation_id),
            SMALL[n] if n < 64 else long_bytes(n),
            data,
        )
    )


def read_envelope(value: bytes) -> dict[str, Any]:
    """The envelope record in ``value`` as fastavro's reader returns it (``time`` an aware
    UTC datetime, ``data`` bytes). Raises as ``read_fields`` does."""
    fields = read_fields(value)
    return dict(
        zip(
            FIELDS,
            (*fields[:3], _EPOCH + timedelta(microseconds=fields[3]), *fields[4:]),
            strict=True,
        )
    )


FIELDS = (
    "id",
    "type",
    "version",
    "time",
    "source",
    "key",
    "correlation_id",
    "causation_id",
    "data",
)

_TEXT, _OPTIONAL_TEXT = (T_STRING, None), (T_UNION, (0, (T_STRING, None)))
_ENVELOPE = (
    T_RECORD,
    [
        tuple(
            (name, node, False, None)
            for name, node in zip(
                FIELDS,
                # time as the long it is written as (micros): no datetime on the hot path
                (_TEXT, _TEXT, (T_INT, None), (T_LONG, None), _TEXT)
                + (_OPTIONAL_TEXT,) * 3
                + ((T_BYTES, None),),
                strict=True,
            )
        ),
        frozenset(FIELDS),
        len(FIELDS),
    ],
)
"""The envelope schema as a program of ``avro_machine``, which reads it."""


def read_fields(
    value: bytes,
) -> tuple[str, str, int, int, str, str | None, str | None, str | None, bytes]:
    """The envelope record's fields in schema order, ``time`` as microseconds since the
    epoch (the codec's hot path builds what it needs from them). Raises ValueError,
    EOFError, IndexError, OverflowError or UnicodeDecodeError on bytes that are not one, as
    a generic reader would; extra bytes after the record are ValueError."""
    fields: Any = read_values(_ENVELOPE, value)
    if not INT_MIN <= fields[2] <= INT_MAX:
        raise ValueError(f"version {fields[2]} does not fit an Avro int")
    return fields  # type: ignore[no-any-return]
