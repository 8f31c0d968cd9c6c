"""Reading a table's store from outside its step: what the TestDriver's ``table`` and the
interactive queries (``streams.runtime.query``) show.

A few gets per key, never a write: ``read_table`` reads a whole store partition,
``read_windows`` one key's open windows (closed windows are gone from the store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.topology.execution.aggregate import merged
from streams.topology.execution.sliding import read_sliding, sliding_key
from streams.topology.execution.store_layout import (
    OPEN_WINDOWS,
    RESERVED,
    key_prefix,
    record_key,
    split_window_key,
    unpack_starts,
    unpack_triples,
    window_key,
)
from streams.topology.specs import AggregateSpec, Lookup
from streams.topology.values import value_codec
from streams.topology.windows import AnyWindows, Sessions, Sliding, Window

if TYPE_CHECKING:
    from streams.codec.payload import Payloads
    from streams.state.store import ChangelogPartition


def read_table(
    part: ChangelogPartition, spec: AggregateSpec | Lookup, payloads: Payloads | None
) -> dict[Any, Any]:
    """The values of one store partition of a table: by key, or with windows by
    ``(key, Window)`` (each key's as ``read_windows`` reads them)."""
    _, decode = value_codec(spec.type, spec.version, payloads)
    windows = spec.windows if isinstance(spec, AggregateSpec) else None
    if windows is None:
        return {raw_key.decode(): decode(entry.value) for raw_key, entry in part.items()}
    assert isinstance(spec, AggregateSpec)  # only aggregations have windows
    keys = {_record_key(raw_key, windows) for raw_key, _ in part.items() if raw_key not in RESERVED}
    reads = part.transaction()
    return {
        (key, window): value
        for key in sorted(k for k in keys if k is not None)
        for window, value in read_windows(reads, spec, decode, key)
    }


def read_windows(
    reads: Any, spec: AggregateSpec, decode: Callable[[bytes], Any], key: str
) -> list[tuple[Window, Any]]:
    """The open windows of ``key`` and their values in one store partition of a windowed
    aggregation (``reads``: what ``get``s its entries, e.g. its transaction), oldest start
    first; closed windows are gone. A few gets, never a scan: the open windows' starts,
    then the key's entry in each (tumbling, hopping), or the key's one entry (sessions,
    sliding)."""
    windows, raw_key = spec.windows, key.encode()
    if isinstance(windows, Sliding):
        merge = spec.merge
        assert merge is not None  # sliding aggregations have one (builder)
        return read_sliding(reads, windows, lambda values: merged(values, decode, merge), key)
    if isinstance(windows, Sessions):
        sessions = unpack_triples(reads.get(key_prefix(raw_key)))
        return [(Window(start, end), decode(raw)) for start, end, raw in sessions]
    assert windows is not None  # a windowed aggregation
    found = []
    for start in unpack_starts(reads.get(OPEN_WINDOWS)):
        raw = reads.get(window_key(start, raw_key))
        if raw is not None:
            found.append((Window(start, start + windows.size_ms), decode(raw)))
    return found


def _record_key(raw: bytes, windows: AnyWindows) -> str | None:
    """The record key of a windowed store's entry (None: an entry of no key)."""
    if isinstance(windows, Sliding):
        return sliding_key(raw)
    if isinstance(windows, Sessions):
        return record_key(raw)
    return split_window_key(raw)[0]
