"""The keys of windowed stores: byte layouts that sort by time, and lists kept in a value.

Windowed stores (aggregations with windows, windowed joins) keep a few reserved keys
shorter than any window's: ``STREAM_TIME`` (the partition's stream time) and
``OPEN_WINDOWS`` (the starts of the open windows). A window's keys begin with its start,
stored so that byte order is time order (``window_start``): a window is one range scan.
"""

from __future__ import annotations

import struct
from typing import Any

_LONG = struct.Struct(">q")
_LENGTH = struct.Struct(">H")
STREAM_TIME = b""
OPEN_WINDOWS = b"o"
RESERVED = (STREAM_TIME, OPEN_WINDOWS)
"""Keys of a windowed store that hold no window (shorter than any that does)."""

_START = struct.Struct(">Q")
_SHIFT = 1 << 63  # window starts stored unsigned, so that byte order is time order


def window_start(start_ms: int) -> bytes:
    """A window's start as its store keys begin: a range scan finds the window."""
    return _START.pack(start_ms + _SHIFT)


def window_key(start_ms: int, key: bytes) -> bytes:
    return window_start(start_ms) + _LENGTH.pack(len(key)) + key


def split_window_key(raw: bytes) -> tuple[str, int]:
    """The record key and window start of a tumbling or hopping window's store key."""
    (start,) = _START.unpack_from(raw)
    (length,) = _LENGTH.unpack_from(raw, 8)
    return raw[10 : 10 + length].decode(), start - _SHIFT


def read_stream_time(tx: Any, key: bytes = STREAM_TIME) -> int | None:
    """The partition's stream time a windowed store keeps under ``key`` (None: no record
    yet)."""
    known = tx.get(key)
    return _LONG.unpack(known)[0] if known is not None else None


def write_stream_time(tx: Any, time_ms: int, key: bytes = STREAM_TIME) -> None:
    tx.set(key, _LONG.pack(time_ms))


def pack_starts(starts: list[int]) -> bytes:
    return b"".join(_LONG.pack(s) for s in starts)


def unpack_starts(raw: bytes | None) -> list[int]:
    return [s for (s,) in _LONG.iter_unpack(raw)] if raw else []


def key_prefix(key: bytes) -> bytes:
    """A session store key: the record key with its length (never a reserved key)."""
    return _LENGTH.pack(len(key)) + key


def record_key(raw: bytes) -> str:
    """The record key of a session store key."""
    (length,) = _LENGTH.unpack_from(raw)
    return raw[2 : 2 + length].decode()


_TRIPLE = struct.Struct(">qqI")  # two numbers, the length of the bytes that follow

Triple = tuple[int, int, bytes]
"""What a store value lists: a session (first and last event time, its encoded value), or
a buffered record of a windowed join (event time, offset, the envelope)."""


def pack_triples(items: list[Triple]) -> bytes:
    return b"".join(_TRIPLE.pack(a, b, len(v)) + v for a, b, v in items)


def unpack_triples(raw: bytes | None) -> list[Triple]:
    out: list[Triple] = []
    pos, size = 0, _TRIPLE.size
    while raw and pos < len(raw):
        start, end, length = _TRIPLE.unpack_from(raw, pos)
        pos += size
        out.append((start, end, raw[pos : pos + length]))
        pos += length
    return out
