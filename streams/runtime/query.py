"""Reading a table from outside its topology: ``Runtime.query`` (interactive queries).

A table (an aggregation without windows, or a table topic materialised) is partitioned like
its input: key K is in partition ``partition_for(K)`` of the table's store, on the one
instance that owns that partition of the input. ``Tables.get(table, key)`` reads K's value
there, decoded to the table's type, or None when K has none. It reads what processors see
now: the writes of the record being processed included, as Kafka Streams' interactive
queries do under at-least-once.

A windowed table (an aggregation with windows) keeps K's windows in the same partition:
``Tables.get`` returns the open ones as ``(Window, value)`` pairs, oldest start first (an
empty list: K has none), those starting between ``start_from`` and ``start_to`` when given
(both included, as Kafka Streams' ``WindowStore.fetch``); closed windows are gone. The
query port answers ``{"start", "end", "value"}`` for each, times as ISO 8601 UTC.

It raises ``NotHereError`` (naming the topic and partition, so a caller can find the
instance that owns it: ``streams query`` does) when this instance does not own K's
partition, or holds it only while it moves; ``UnknownTableError`` for a name that is no
table; ``QueryError`` for window bounds on a table without windows.

Thread-safety: called from any thread (the query port's server threads). Reads are single
dictionary lookups and RocksDB gets, which the runtime's thread never leaves half done (a
key's windows are a few gets: a window closing between two is missing or shown, as one
read before or after its close would show it); a partition closed mid-read (a rebalance)
is ``NotHereError``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from streams.codec.jsonmap import to_json
from streams.envelope import epoch_ms
from streams.errors import StreamsError
from streams.state import StateManager
from streams.timespec import TimeSpecError, format_instant_ms, parse_instant
from streams.topology.errors import TopologyError
from streams.topology.execution.reads import read_windows
from streams.topology.partitioning import partition_for
from streams.topology.specs import AggregateSpec, table_spec
from streams.topology.topology import Topology
from streams.topology.values import value_codec
from streams.topology.windows import Window


class QueryError(StreamsError):
    """A table cannot be read here (the base of the errors below)."""


class UnknownTableError(QueryError):
    """The topology has no table of that name."""


class NotHereError(QueryError):
    """The key's partition is another instance's (or is moving)."""

    def __init__(self, table: str, key: str, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        super().__init__(f"{table}[{key!r}] is in partition {partition} of {topic}, not owned here")


class Tables:
    """The tables of one running topology, by name (see the module docstring).
    ``partitions(topic)`` is the partition count of an input topic."""

    def __init__(
        self,
        topology: Topology,
        state: StateManager | None,
        payloads: Any,
        partitions: Callable[[str], int],
    ) -> None:
        self._topology = topology
        self._state = state
        self._payloads = payloads
        self._partitions = partitions
        self._counts: dict[str, int] = {}

    def get(
        self,
        table: str,
        key: str,
        *,
        start_from: datetime | None = None,
        start_to: datetime | None = None,
    ) -> Any | None:
        """The value of ``key`` in ``table``, or None when it has none; of a windowed table,
        its windows as ``(Window, value)`` pairs, those starting between ``start_from`` and
        ``start_to`` (both included) when given."""
        return self._read(table, key, start_from, start_to)[1]

    def answer(
        self, table: str, key: str, bounds: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """``get`` as an HTTP status and a JSON body: 200 with the value; 404 for a key
        without one (``"found": false``) or an unknown table; 421 (misdirected) with the
        ``topic`` and ``partition`` when another instance owns the key. A windowed table:
        200 with ``windows``, a list of ``{"start", "end", "value"}``, those starting
        between the ``bounds`` ``from`` and ``to`` (instants: ``streams.timespec``); 400
        for bounds that do not parse, or on a table without windows."""
        try:
            unknown = sorted((bounds or {}).keys() - {"from", "to"})
            if unknown:
                raise QueryError(f"unknown parameters {unknown}: from and to are known")
            given = {name: parse_instant(text) for name, text in (bounds or {}).items()}
            windowed, value = self._read(table, key, given.get("from"), given.get("to"))
        except NotHereError as exc:
            return 421, {"error": str(exc), "topic": exc.topic, "partition": exc.partition}
        except UnknownTableError as exc:
            return 404, {"error": str(exc)}
        except (QueryError, TimeSpecError) as exc:
            return 400, {"error": str(exc)}
        if windowed:
            windows = [_window_json(window, v) for window, v in value]
            return 200, {"table": table, "key": key, "windows": windows}
        if value is None:
            return 404, {"table": table, "key": key, "found": False}
        return 200, {"table": table, "key": key, "found": True, "value": to_json(value)}

    def _read(
        self, table: str, key: str, start_from: datetime | None, start_to: datetime | None
    ) -> tuple[bool, Any]:
        """Whether ``table`` has windows, and what ``get`` returns."""
        try:
            spec = table_spec(self._topology, table)
        except TopologyError as exc:
            raise UnknownTableError(str(exc)) from None
        windowed = spec if isinstance(spec, AggregateSpec) and spec.windows else None
        if windowed is None and (start_from is not None or start_to is not None):
            raise QueryError(f"table {table!r} has no windows: from and to bound window starts")
        topic = self._topology.store_source(spec.store)
        count = self._counts.get(topic)
        if count is None:
            count = self._counts[topic] = self._partitions(topic)
        raw = key.encode()
        partition = partition_for(raw, count)
        store = self._state.stores.get(spec.store) if self._state is not None else None
        part = store.partitions.get(partition) if store is not None else None
        if part is None:
            raise NotHereError(table, key, topic, partition)
        _encode, decode = value_codec(spec.type, spec.version, self._payloads)
        try:
            if windowed is not None:
                found = read_windows(part.transaction(), windowed, decode, key)
            else:
                value = part.transaction().get(raw)
        except Exception as exc:  # the partition closed under the read: it is moving
            raise NotHereError(table, key, topic, partition) from exc
        if windowed is None:
            return False, None if value is None else decode(value)
        low = epoch_ms(start_from) if start_from is not None else None
        high = epoch_ms(start_to) if start_to is not None else None
        return True, [
            (window, v)
            for window, v in found
            if (low is None or window.start_ms >= low) and (high is None or window.start_ms <= high)
        ]


def _window_json(window: Window, value: Any) -> dict[str, Any]:
    start, end = format_instant_ms(window.start_ms), format_instant_ms(window.end_ms)
    return {"start": start, "end": end, "value": to_json(value)}


def client_id(app_id: str, endpoint: str) -> str:
    """The client id an instance advertises its query endpoint with (``host:port``): what
    every member of its group shows (``streams query`` reads it there)."""
    return f"{app_id}@{endpoint}"


def endpoint_of(client_id: str) -> str | None:
    """The query endpoint a group member's client id advertises, or None."""
    _app, at, endpoint = client_id.rpartition("@")
    return endpoint if at and ":" in endpoint else None
