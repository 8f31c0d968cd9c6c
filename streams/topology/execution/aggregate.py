"""Aggregations by key, with or without windows: what the step does with its store
(what it does is declared by ``streams.topology.specs.AggregateSpec``).

``stream.count()``, ``reduce(fn)`` and ``aggregate(init, fn)`` (on a stream, or on
``stream.window(...)``) fold the records of each key into one value, kept in a
changelog-backed store the step owns, typed (``type``: a primitive or a catalog type, see
``value_codec``). Each change goes on as an ``Update`` to the table's ``to_stream``.

Store layout (keys are bytes, as in every store):

- without windows: the record key (UTF-8) -> the encoded value;
- with tumbling or hopping windows: 8-byte window start (ms) + 2-byte length + key ->
  the encoded value, and ``b"o"`` -> the starts of the open windows: a window's entries
  are one range scan when it closes;
- with sessions: 2-byte length + key -> the key's open sessions (start, end, value each);
- with windows, ``b""`` -> the partition's stream time (8 bytes, ms), so it survives a
  restart.

A window's entries are deleted when it closes (after its final value is handed on, with
``emit="final"``). Which sessions are open is kept beside the store, per partition, in
memory (a heap by closing time: a session closes on its own), rebuilt from the entries
when the partition is opened again or when writes to it were undone
(``ChangelogPartition.generation``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from streams.envelope import Envelope
from streams.topology.execution.calls import Run
from streams.topology.execution.checks import key_of, output
from streams.topology.execution.sliding import build_sliding
from streams.topology.execution.store_layout import (
    OPEN_WINDOWS,
    RESERVED,
    key_prefix,
    pack_starts,
    pack_triples,
    read_stream_time,
    record_key,
    split_window_key,
    unpack_starts,
    unpack_triples,
    window_key,
    window_start,
    write_stream_time,
)
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.specs import LATE
from streams.topology.values import value_codec
from streams.topology.windows import (
    LateRecordError,
    Sessions,
    Sliding,
    Update,
    Window,
    Windows,
)

if TYPE_CHECKING:
    from streams.state.store import ChangelogPartition
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


@dataclass(slots=True)
class _Open:
    """The open windows of one store partition, soonest to close first."""

    generation: int
    heap: list[tuple[Any, ...]]


class Aggregation:
    """What the three kinds of aggregation step share: the key, folding values in, stream
    time, late records, and the open windows of each partition."""

    def __init__(self, plan: Plan, node: StepNode, outs: dict[str, Run]) -> None:
        spec = node.aggregate
        store = plan.store_of(node, spec.store if spec is not None else None)
        assert spec is not None  # an aggregation step always has one (builder)
        self.spec, self.store, self.name, self.policy = spec, store, node.name, node.on_error
        self.encode, self.decode = value_codec(spec.type, spec.version, plan.payloads)
        # The output carries Updates, to to_stream steps (validation sees to it).
        self.updated: Callable[[Update], None] = outs[node.outputs[0]]  # type: ignore[assignment]
        self.late = outs.get(LATE) if plan.topology.children(node.name).get(LATE) else None
        # Shared by both compilations of the plan (a timed twin, ``step_timer``): a session
        # a timed record opens is closed by a plain one.
        self._opened: WeakKeyDictionary[ChangelogPartition, _Open] = plan.made(
            node.name, WeakKeyDictionary
        )

    def key_of(self, env: Envelope) -> str:
        return key_of(env, self.name, f"aggregation {self.name!r} groups by key")

    def fold(self, value: Any, env: Envelope) -> tuple[Any, bytes]:
        """``value`` (None: none yet) with ``env`` folded in, and encoded."""
        spec = self.spec
        try:
            value = spec.first(env) if value is None else spec.add(value, env)
            return value, self.encode(value)
        except Exception as exc:
            raise StepFailed(self.name, exc, self.policy) from exc

    def merge(self, values: list[bytes]) -> Any:
        """Stored values merged, oldest first (sessions a record bridges, a sliding
        window's records)."""
        try:
            return merged(values, self.decode, self.spec.merge)
        except Exception as exc:
            raise StepFailed(self.name, exc, self.policy) from exc

    def too_late(self, env: Envelope, stream_time: int | None, grace_ms: int) -> None:
        """Hand ``env`` to the late stream, or fail it to the DLQ with the reason."""
        if self.late is not None:
            self.late(env)
            return
        err = LateRecordError(
            f"aggregation {self.name!r}: every window of the record closed (event time "
            f"{env.time.isoformat()}, grace {grace_ms / 1000:g} s, stream time "
            f"{_iso(stream_time or 0)})"
        )
        raise StepFailed(self.name, err, dead_letter)

    def opened(
        self, part: ChangelogPartition, entries: Callable[[bytes, bytes], list[tuple[Any, ...]]]
    ) -> list[tuple[Any, ...]]:
        """The heap of ``part``'s open windows, rebuilt with ``entries(key, value)`` from
        its entries when it is new to this step or its writes were undone."""
        found = self._opened.get(part)
        if found is None or found.generation != part.generation:
            heap = [
                e for k, entry in part.items() if k not in RESERVED for e in entries(k, entry.value)
            ]
            heapq.heapify(heap)
            found = self._opened[part] = _Open(part.generation, heap)
        return found.heap


def merged(
    values: list[bytes], decode: Callable[[bytes], Any], merge: Callable[[Any, Any], Any] | None
) -> Any:
    """Stored values decoded and merged, oldest first (None: no values)."""
    result = None
    for raw in values:
        value = decode(raw)
        result = value if result is None or merge is None else merge(result, value)
    return result


def build_aggregate(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    agg = Aggregation(plan, node, outs)
    windows = agg.spec.windows
    if windows is None:
        return _by_key(agg)
    if isinstance(windows, Sessions):
        return _sessions(agg, windows)
    if isinstance(windows, Sliding):
        return build_sliding(agg, windows)
    return _fixed(agg, windows)


def _by_key(agg: Aggregation) -> Run:
    store, key_of, fold, decode, updated = agg.store, agg.key_of, agg.fold, agg.decode, agg.updated

    def aggregate_step(env: Envelope) -> None:
        key = key_of(env)
        tx = store.transaction()
        old = tx.get(key)
        value, raw = fold(None if old is None else decode(old), env)
        tx.set(key, raw)
        updated(Update(key, value, None, False, env))

    return aggregate_step


def _fixed(agg: Aggregation, windows: Windows) -> Run:
    """Tumbling and hopping windows: one entry per key and window, keyed window start
    first, and the open windows' starts under ``OPEN_WINDOWS``: a window that closes is
    read with one range scan of its start, and nothing is kept per key in memory."""
    store, key_of, fold, decode, updated = agg.store, agg.key_of, agg.fold, agg.decode, agg.updated
    final = agg.spec.emit == "final"
    size, closes_at, of, grace = windows.size_ms, windows.closes_at, windows.of, windows.grace_ms

    def close(opened: list[int], stream_time: int, tx: Any, env: Envelope) -> list[int]:
        """Close the windows due at ``stream_time``; returns the starts still open."""
        part = store.partition()
        for start in [s for s in opened if closes_at(s) <= stream_time]:
            for skey, entry in part.range(window_start(start), window_start(start + 1)):
                tx.delete(skey)
                if final:
                    key, _ = split_window_key(skey)
                    updated(
                        Update(key, decode(entry.value), Window(start, start + size), True, env)
                    )
        return [s for s in opened if closes_at(s) > stream_time]

    def windowed_step(env: Envelope) -> None:
        key = key_of(env)
        time_ms = env.time_ms
        tx = store.transaction()
        stream_time = read_stream_time(tx)
        starts = of(time_ms)
        if stream_time is not None:
            starts = [s for s in starts if closes_at(s) > stream_time]
        if not starts:
            agg.too_late(env, stream_time, grace)
            return
        opened = unpack_starts(tx.get(OPEN_WINDOWS))
        if not all(s in opened for s in starts):
            opened = sorted({*opened, *starts})
            tx.set(OPEN_WINDOWS, pack_starts(opened))
        raw_key = key.encode()
        changed: list[Update] = []
        for start in starts:
            skey = window_key(start, raw_key)
            old = tx.get(skey)
            value, raw = fold(None if old is None else decode(old), env)
            tx.set(skey, raw)
            if not final:
                changed.append(Update(key, value, Window(start, start + size), False, env))
        for update in changed:
            updated(update)
        if stream_time is None or time_ms > stream_time:
            write_stream_time(tx, time_ms)
            if closes_at(opened[0]) <= time_ms:
                tx.set(OPEN_WINDOWS, pack_starts(close(opened, time_ms, tx, env)))

    return windowed_step


def _sessions(agg: Aggregation, sessions: Sessions) -> Run:
    """Session windows: one entry per key, the list of its open sessions."""
    store, key_of, fold, decode, updated = agg.store, agg.key_of, agg.fold, agg.decode, agg.updated
    final = agg.spec.emit == "final"
    gap, closes_at, grace = sessions.gap_ms, sessions.closes_at, sessions.grace_ms

    def entries(skey: bytes, value: bytes) -> list[tuple[Any, ...]]:
        return [(closes_at(end), skey, start) for start, end, _ in unpack_triples(value)]

    def close(heap: list[tuple[Any, ...]], stream_time: int, tx: Any, env: Envelope) -> None:
        while heap and heap[0][0] <= stream_time:
            due, skey, start = heapq.heappop(heap)
            kept = unpack_triples(tx.get(skey))
            ending = [s for s in kept if s[0] == start and closes_at(s[1]) == due]
            if not ending:
                continue  # merged into a later session since: it has its own entry
            kept.remove(ending[0])
            if kept:
                tx.set(skey, pack_triples(kept))
            else:
                tx.delete(skey)
            if final:
                key = record_key(skey)
                _, end, raw = ending[0]
                updated(Update(key, decode(raw), Window(start, end), True, env))

    def session_step(env: Envelope) -> None:
        key = key_of(env)
        time_ms = env.time_ms
        heap = agg.opened(store.partition(), entries)
        tx = store.transaction()
        stream_time = read_stream_time(tx)
        skey = key_prefix(key.encode())
        kept = unpack_triples(tx.get(skey))
        bridged = [s for s in kept if s[0] - gap <= time_ms <= s[1] + gap]
        start = min([time_ms, *(s[0] for s in bridged)])
        end = max([time_ms, *(s[1] for s in bridged)])
        if stream_time is not None and closes_at(end) <= stream_time:
            agg.too_late(env, stream_time, grace)
            return
        value, raw = fold(agg.merge([s[2] for s in bridged]) if bridged else None, env)
        kept = sorted([s for s in kept if s not in bridged] + [(start, end, raw)])
        tx.set(skey, pack_triples(kept))
        heapq.heappush(heap, (closes_at(end), skey, start))
        if not final:
            for old_start, old_end, _ in bridged:
                if (old_start, old_end) != (start, end):
                    updated(Update(key, None, Window(old_start, old_end), False, env))
            updated(Update(key, value, Window(start, end), False, env))
        if stream_time is None or time_ms > stream_time:
            write_stream_time(tx, time_ms)
            close(heap, time_ms, tx, env)

    return session_step


def build_to_stream(_plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = node.fn, outs[node.outputs[0]], node.name, node.on_error

    def to_stream_step(update: Any) -> None:
        try:
            env = output(fn(update), "to_stream")
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if env is not None:
            nxt(env)

    return to_stream_step
