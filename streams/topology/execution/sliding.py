"""Sliding windows: the aggregate of each key's last ``size`` seconds as of each record.

A record at event time ``t`` ends a window ``(t - size, t]`` (``Window(t - size + 1,
t + 1)``) and counts in the open windows of its key that end after it, within ``size``.
A window's value is its records' single values (``first(record)``) merged, oldest first,
with the aggregation's ``merge`` (count: ``+``; reduce: its function): the step keeps each
key's recent records' single values, not one value per window, since every record makes a
window and a window's records are a range of them.

Store layout: ``k`` + 2-byte length + key -> the last window end written final (8 bytes)
and the key's records (event time, arrival number, single value); ``b""`` -> stream time.
When each key is next due (a window of it closes, or a record of it is no longer in any
window that could still change) is kept beside the store in memory, an entry per key (a
heap, as sessions have), rebuilt from the store when the partition is opened again or its
writes were undone: a window's final value is written as soon as stream time passes its
end plus grace.

Cost: a record's windows are computed from the key's records within ``size`` of it (one
decode and merge each): cheap for a moving count over minutes, costly for a dense key
over hours.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.topology.execution.calls import Run
from streams.topology.execution.store_layout import (
    Triple,
    key_prefix,
    pack_triples,
    read_stream_time,
    record_key,
    unpack_triples,
    write_stream_time,
)
from streams.topology.windows import Sliding, Update, Window

if TYPE_CHECKING:
    from streams.topology.execution.aggregate import Aggregation

_KEYS = b"k"
_LONG = struct.Struct(">q")
_NEVER = -(1 << 62)  # no window written final yet


def _read(raw: bytes | None) -> tuple[int, list[Triple]]:
    if raw is None:
        return _NEVER, []
    return _LONG.unpack_from(raw)[0], unpack_triples(raw[8:])


def _write(closed: int, records: list[Triple]) -> bytes:
    return _LONG.pack(closed) + pack_triples(records)


def _inside(records: list[Triple], end: int, size: int) -> list[bytes]:
    """The single values of the records in the window ending at ``end``, oldest first."""
    return [raw for t, _, raw in sorted(records) if end - size < t <= end]


def _next_due(closed: int, records: list[Triple], size: int, grace: int, final: bool) -> int:
    """When stream time next changes something of a key: a window of it closes (written
    final), or its oldest record leaves every window that can still change."""
    due = min(t for t, _, _ in records) + size + grace
    if final:
        due = min([due, *(t + grace + 1 for t, _, _ in records if t > closed)])
    return due


def build_sliding(agg: Aggregation, spec: Sliding) -> Run:
    store, fold, merge, updated = agg.store, agg.fold, agg.merge, agg.updated
    final = agg.spec.emit == "final"
    size, grace = spec.size_ms, spec.grace_ms

    def due(closed: int, records: list[Triple]) -> int:
        return _next_due(closed, records, size, grace, final)

    def entries(skey: bytes, value: bytes) -> list[tuple[int, bytes]]:
        if not skey.startswith(_KEYS):
            return []
        return [(due(*_read(value)), skey)]

    def visit(tx: Any, skey: bytes, stream_time: int, env: Envelope) -> int | None:
        """Write the key's windows closed by ``stream_time``, drop the records no window
        needs; returns when the key is next due (None: nothing of it is left)."""
        raw = tx.get(skey)
        if raw is None:
            return None
        closed, records = _read(raw)
        if final:
            key = record_key(skey[1:])
            ends = sorted({t for t, _, _ in records if closed < t and t + grace < stream_time})
            for end in ends:
                value = merge(_inside(records, end, size))
                updated(Update(key, value, spec.window_of(end), True, env))
                closed = end
        kept = [r for r in records if r[0] + size + grace > stream_time]
        if not kept:
            tx.delete(skey)
            return None
        tx.set(skey, _write(closed, kept))
        return due(closed, kept)

    def close(heap: list[tuple[int, bytes]], tx: Any, stream_time: int, env: Envelope) -> None:
        visited: set[bytes] = set()
        while heap and heap[0][0] <= stream_time:
            _, skey = heapq.heappop(heap)
            if skey not in visited:
                visited.add(skey)
                later = visit(tx, skey, stream_time, env)
                if later is not None:
                    heapq.heappush(heap, (later, skey))

    def sliding_step(env: Envelope) -> None:
        key = agg.key_of(env)
        time_ms = env.time_ms
        heap = agg.opened(store.partition(), entries)
        tx = store.transaction()
        stream_time = read_stream_time(tx)
        if stream_time is not None and time_ms + grace < stream_time:
            agg.too_late(env, stream_time, grace)
            return
        skey = _KEYS + key_prefix(key.encode())
        closed, records = _read(tx.get(skey))
        before = due(closed, records) if records else None
        _, raw = fold(None, env)
        records.append((time_ms, max((n for _, n, _ in records), default=-1) + 1, raw))
        tx.set(skey, _write(closed, records))
        now_due = due(closed, records)
        if before is None or now_due < before:  # else the key's entry comes sooner
            heapq.heappush(heap, (now_due, skey))
        if not final:  # its window and the later ones it is in (open: it is not late)
            for end in sorted({t for t, _, _ in records if time_ms <= t < time_ms + size}):
                value = merge(_inside(records, end, size))
                updated(Update(key, value, spec.window_of(end), False, env))
        if stream_time is None or time_ms > stream_time:
            write_stream_time(tx, time_ms)
            close(heap, tx, time_ms, env)

    return sliding_step


def sliding_key(raw: bytes) -> str | None:
    """The record key of a sliding store's entry (None: an entry of no key)."""
    return record_key(raw[1:]) if raw.startswith(_KEYS) else None


def read_sliding(
    reads: Any, spec: Sliding, merge: Callable[[list[bytes]], Any], key: str
) -> list[tuple[Window, Any]]:
    """The open windows of ``key`` in one store partition (``reads``: what ``get``s its
    entries), oldest first."""
    stream_time = read_stream_time(reads)
    closed, records = _read(reads.get(_KEYS + key_prefix(key.encode())))
    return [
        (spec.window_of(end), merge(_inside(records, end, spec.size_ms)))
        for end in sorted({t for t, _, _ in records if t > closed})
        if stream_time is None or end + spec.grace_ms >= stream_time
    ]
