"""Aggregations by key, with or without windows: what the step does with its store.

``stream.count()``, ``reduce(fn)`` and ``aggregate(init, fn)`` (on a stream, or on
``stream.window(...)``) fold the records of each key into one value, kept in a
changelog-backed store the step owns, typed (``type``: a primitive or a catalog type, see
``value_codec``). Each change goes on as an ``Update`` to the table's ``to_stream``.

Store layout (keys are bytes, as in every store):

- without windows: the record key (UTF-8) -> the encoded value;
- with windows: 2-byte length + key + 8-byte window start (ms) -> the encoded value, and
  ``b""`` -> the partition's stream time (8 bytes, ms), so it survives a restart.

A window's entry is deleted when the window closes (after its final value is handed on,
with ``emit="final"``). Which windows are open is kept beside the store, per partition, in
memory (a heap by closing time), rebuilt from the entries when the partition is opened
again or when writes to it were undone (``ChangelogPartition.generation``).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from streams.envelope import Envelope
from streams.topology.errors import TopologyError
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.windows import LateRecordError, MissingKeyError, Update, Window, Windows

if TYPE_CHECKING:
    from streams.codec.payload import Payloads
    from streams.state.store import ChangelogPartition
    from streams.topology.nodes import StepNode
    from streams.topology.plan import Plan, Run

EMITS = ("updates", "final")
LATE = "late"
"""The output of a windowed aggregation that receives its late records, when read."""

_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")
_LENGTH = struct.Struct(">H")
STREAM_TIME = b""

Encode = Callable[[Any], bytes]
Decode = Callable[[bytes], Any]


def _bool(raw: bytes) -> bool:
    return raw == b"\x01"


PRIMITIVES: dict[str, tuple[Encode, Decode]] = {
    "long": (_LONG.pack, lambda raw: _LONG.unpack(raw)[0]),
    "double": (_DOUBLE.pack, lambda raw: _DOUBLE.unpack(raw)[0]),
    "string": (str.encode, bytes.decode),
    "boolean": (lambda v: b"\x01" if v else b"\x00", _bool),
    "bytes": (bytes, bytes),
}
"""Values a store may hold without a schema, by name."""


@dataclass(frozen=True, slots=True)
class AggregateSpec:
    """What an aggregation step does: ``first(envelope)`` makes a key's value from its
    first record, ``add(value, envelope)`` folds in each next one; values are ``type``
    (a primitive name, or a catalog type at ``version``); ``windows`` (None: one value per
    key for ever); ``emit``: ``updates`` (every change) or ``final`` (a window's value when
    it closes); ``store``: the step's store; ``what``: count, reduce or aggregate."""

    what: str
    first: Callable[[Envelope], Any]
    add: Callable[[Any, Envelope], Any]
    type: str
    version: int | None
    windows: Windows | None
    emit: str
    store: str

    def describe(self) -> str:
        value = self.type if self.version is None else f"{self.type}@{self.version}"
        window = f", {self.windows.describe()}" if self.windows is not None else ""
        return f"{self.what} as {value}{window}, emits {self.emit}"


def value_codec(
    type_: str, version: int | None, payloads: Payloads | None
) -> tuple[Encode, Decode]:
    """How values of ``type_`` are stored: a primitive's bytes, or schemaless Avro of the
    catalog's ``type_``@``version`` (its writer schema: a new version needs a new store)."""
    primitive = PRIMITIVES.get(type_)
    if primitive is not None:
        return primitive
    if version is None:
        raise TopologyError(f"value type {type_!r} is no primitive: give its catalog version")
    if payloads is None:
        from streams.codec.payload import Payloads  # noqa: PLC0415 - only for catalog types
        from streams.schemas import default_catalog  # noqa: PLC0415

        payloads = Payloads(default_catalog())
    found = payloads

    def encode(value: Any) -> bytes:
        return found.encode(type_, version, value)

    def decode(raw: bytes) -> Any:
        return found.decode(type_, version, raw, version)

    return encode, decode


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def window_key(key: bytes, start_ms: int) -> bytes:
    return _LENGTH.pack(len(key)) + key + _LONG.pack(start_ms)


def split_window_key(raw: bytes) -> tuple[str, int]:
    """The record key and window start of a windowed store key."""
    (length,) = _LENGTH.unpack_from(raw)
    return raw[2 : 2 + length].decode(), _LONG.unpack_from(raw, 2 + length)[0]


@dataclass(slots=True)
class _Open:
    """The open windows of one store partition: (closes at, store key), soonest first."""

    generation: int
    heap: list[tuple[int, bytes]]


def build_aggregate(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    spec = node.aggregate
    store = plan.stores.get(spec.store) if spec is not None else None
    if spec is None or store is None:
        raise TopologyError(
            f"aggregation {node.name!r} has no state store: run the topology with the "
            "runtime or the TestDriver, which open its store"
        )
    encode, decode = value_codec(spec.type, spec.version, plan.payloads)
    first, add = spec.first, spec.add
    # The output carries Updates, to to_stream steps (validation sees to it).
    updated: Callable[[Update], None] = outs[node.outputs[0]]  # type: ignore[assignment]
    name, policy = node.name, node.on_error

    def fold(raw: bytes | None, env: Envelope) -> tuple[Any, bytes]:
        try:
            value = first(env) if raw is None else add(decode(raw), env)
            return value, encode(value)
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc

    def key_of(env: Envelope) -> str:
        key = env.key
        if key is None:
            err = MissingKeyError(f"aggregation {name!r} groups by key: the record has none")
            raise StepFailed(name, err, dead_letter)
        return key

    windows = spec.windows
    if windows is None:

        def aggregate_step(env: Envelope) -> None:
            key = key_of(env)
            tx = store.transaction()
            value, raw = fold(tx.get(key), env)
            tx.set(key, raw)
            updated(Update(key, value, None, False, env))

        return aggregate_step

    late_read = bool(plan.topology.children(node.name).get(LATE))
    late = outs.get(LATE)
    final = spec.emit == "final"
    size, closes_at, of = windows.size_ms, windows.closes_at, windows.of
    opened: WeakKeyDictionary[ChangelogPartition, _Open] = WeakKeyDictionary()

    def open_windows(part: ChangelogPartition) -> list[tuple[int, bytes]]:
        found = opened.get(part)
        if found is None or found.generation != part.generation:
            heap = [
                (closes_at(split_window_key(k)[1]), k) for k, _ in part.items() if k != STREAM_TIME
            ]
            heapq.heapify(heap)
            found = opened[part] = _Open(part.generation, heap)
        return found.heap

    def close(heap: list[tuple[int, bytes]], stream_time: int, tx: Any, env: Envelope) -> None:
        while heap and heap[0][0] <= stream_time:
            _, skey = heapq.heappop(heap)
            raw = tx.get(skey)
            if raw is None:
                continue
            tx.delete(skey)
            if final:
                key, start = split_window_key(skey)
                updated(Update(key, decode(raw), Window(start, start + size), True, env))

    def windowed_step(env: Envelope) -> None:
        key = key_of(env)
        time_ms = int(env.time.timestamp() * 1000)
        heap = open_windows(store.partition())
        tx = store.transaction()
        known = tx.get(STREAM_TIME)
        stream_time = _LONG.unpack(known)[0] if known is not None else None
        starts = of(time_ms)
        if stream_time is not None:
            starts = [s for s in starts if closes_at(s) > stream_time]
        if not starts:
            if late_read and late is not None:
                late(env)
                return
            err = LateRecordError(
                f"aggregation {name!r}: every window of the record closed (event time "
                f"{env.time.isoformat()}, grace {windows.grace_ms / 1000:g} s, stream time "
                f"{_iso(stream_time or 0)})"
            )
            raise StepFailed(name, err, dead_letter)
        raw_key = key.encode()
        changed: list[Update] = []
        for start in starts:
            skey = window_key(raw_key, start)
            old = tx.get(skey)
            value, raw = fold(old, env)
            tx.set(skey, raw)
            if old is None:
                heapq.heappush(heap, (closes_at(start), skey))
            if not final:
                changed.append(Update(key, value, Window(start, start + size), False, env))
        for update in changed:
            updated(update)
        if stream_time is None or time_ms > stream_time:
            tx.set(STREAM_TIME, _LONG.pack(time_ms))
            close(heap, time_ms, tx, env)

    return windowed_step


def build_to_stream(_plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    fn, nxt, name, policy = node.fn, outs[node.outputs[0]], node.name, node.on_error

    def to_stream_step(update: Any) -> None:
        try:
            env = fn(update)
            if env is not None and not isinstance(env, Envelope):
                raise TypeError(
                    f"to_stream's function must return an Envelope or None, got {env!r}"
                )
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if env is not None:
            nxt(env)

    return to_stream_step


def read_table(
    part: ChangelogPartition, spec: AggregateSpec, payloads: Payloads | None
) -> dict[Any, Any]:
    """The values of one store partition of an aggregation: by key, or with windows by
    ``(key, Window)``."""
    _, decode = value_codec(spec.type, spec.version, payloads)
    out: dict[Any, Any] = {}
    windows = spec.windows
    for raw_key, entry in part.items():
        if windows is None:
            out[raw_key.decode()] = decode(entry.value)
        elif raw_key != STREAM_TIME:
            key, start = split_window_key(raw_key)
            out[key, Window(start, start + windows.size_ms)] = decode(entry.value)
    return out
