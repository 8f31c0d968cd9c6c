"""Waiting-room entries as bytes, so a changelog-backed store can hold them.

A ``ParkedRecord`` is everything needed to process a record later without reading it
again: its key, value, headers, timestamp and where it was read. A ``WaitingEntry`` of
them is stored under the record key, as one value: a format byte (1) and Avro
(schemaless, fastavro). ``TransactionWaitingStore`` plugs a ``streams.state``
transaction under a ``WaitingRoom``: every room change becomes one ``set`` or ``delete``,
which the store writes to its changelog at its next flush, so the waiting keys and their
parked records survive restarts and rebalances with the rest of the state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any, Protocol

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from streams.coordinates import Coordinates
from streams.failures.errors import FailureRoutingError
from streams.failures.headers import FailureInfo, Header, parse_failure_headers
from streams.failures.waiting import WaitingEntry

FORMAT = 1

_RECORD = {
    "type": "record",
    "name": "ParkedRecord",
    "fields": [
        {"name": "topic", "type": "string"},
        {"name": "partition", "type": "int"},
        {"name": "offset", "type": "long"},
        {"name": "timestamp", "type": ["null", "long"]},
        {"name": "key", "type": ["null", "bytes"]},
        {"name": "value", "type": ["null", "bytes"]},
        {
            "name": "headers",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Header",
                    "fields": [
                        {"name": "name", "type": "string"},
                        {"name": "value", "type": ["null", "bytes"]},
                    ],
                },
            },
        },
    ],
}
_SCHEMA = parse_schema(
    {
        "type": "record",
        "name": "WaitingEntry",
        "namespace": "streams.failures",
        "fields": [
            {"name": "head", "type": _RECORD},
            {"name": "parked", "type": {"type": "array", "items": "ParkedRecord"}},
        ],
    }
)


class CorruptWaitingEntryError(FailureRoutingError):
    """A stored waiting-room entry cannot be read (unknown format or bad bytes)."""


@dataclass(frozen=True, slots=True)
class ParkedRecord:
    """A record kept in the waiting room: enough to process it later as if just read.

    ``coordinates`` is its input coordinates; ``headers`` hold error headers when it failed
    before (a key's head that went to a retry tier), and ``failure`` says what they say
    (parsed from them when not given; never stored separately)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    coordinates: Coordinates
    timestamp: int | None = None
    failure: FailureInfo | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.failure is None and self.headers:
            object.__setattr__(self, "failure", parse_failure_headers(self.headers))


def _record_out(record: ParkedRecord) -> dict[str, Any]:
    return {
        "topic": record.coordinates.topic,
        "partition": record.coordinates.partition,
        "offset": record.coordinates.offset,
        "timestamp": record.timestamp,
        "key": record.key,
        "value": record.value,
        "headers": [{"name": name, "value": value} for name, value in record.headers],
    }


def _record_in(data: dict[str, Any]) -> ParkedRecord:
    return ParkedRecord(
        key=data["key"],
        value=data["value"],
        headers=tuple((h["name"], h["value"]) for h in data["headers"]),
        coordinates=Coordinates(data["topic"], data["partition"], data["offset"]),
        timestamp=data["timestamp"],
    )


def encode_entry(entry: WaitingEntry[ParkedRecord]) -> bytes:
    buf = BytesIO()
    buf.write(bytes([FORMAT]))
    schemaless_writer(
        buf,
        _SCHEMA,
        {"head": _record_out(entry.head), "parked": [_record_out(r) for r in entry.parked]},
    )
    return buf.getvalue()


def decode_entry(data: bytes) -> WaitingEntry[ParkedRecord]:
    """Raises ``CorruptWaitingEntryError`` for bytes ``encode_entry`` did not write."""
    if not data or data[0] != FORMAT:
        found = data[0] if data else "nothing"
        raise CorruptWaitingEntryError(f"waiting entry format {found}, expected {FORMAT}")
    buf = BytesIO(data)
    buf.seek(1)
    try:
        raw: Any = schemaless_reader(buf, _SCHEMA, None)
    except Exception as exc:  # truncated or foreign bytes: EOFError, ValueError, ...
        raise CorruptWaitingEntryError(f"unreadable waiting entry: {exc}") from exc
    if buf.tell() != len(data):
        raise CorruptWaitingEntryError("unreadable waiting entry: trailing bytes")
    return WaitingEntry(_record_in(raw["head"]), tuple(_record_in(r) for r in raw["parked"]))


class Transaction(Protocol):
    """The part of ``streams.state.Transaction`` the waiting room uses."""

    def get(self, key: bytes | str, default: bytes | None = None) -> bytes | None: ...
    def set(self, key: bytes | str, value: bytes) -> None: ...
    def delete(self, key: bytes | str) -> None: ...
    def exists(self, key: bytes | str) -> bool: ...


class TransactionWaitingStore:
    """A ``WaitingStore`` over a store partition's current transaction.

    ``transaction`` returns the transaction to use now (``partition.transaction``): the
    store hands out a new one after each flush. Keys are the record keys, prefixed with
    ``prefix`` so the room can share a store with other state. Not a full mapping: the
    room's ``keys()``/``len()`` are not available over it.
    """

    def __init__(self, transaction: Callable[[], Transaction], prefix: bytes = b"wait:") -> None:
        self._transaction = transaction
        self._prefix = prefix

    def get(self, key: bytes) -> WaitingEntry[ParkedRecord] | None:
        raw = self._transaction().get(self._prefix + key)
        return None if raw is None else decode_entry(raw)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self._transaction().exists(self._prefix + key)

    def __setitem__(self, key: bytes, entry: WaitingEntry[ParkedRecord]) -> None:
        self._transaction().set(self._prefix + key, encode_entry(entry))

    def __delitem__(self, key: bytes) -> None:
        self._transaction().delete(self._prefix + key)
