"""Reading a table from outside its topology: ``Runtime.query`` (interactive queries).

A table (an aggregation without windows, or a table topic materialised) is partitioned like
its input: key K is in partition ``partition_for(K)`` of the table's store, on the one
instance that owns that partition of the input. ``Tables.get(table, key)`` reads K's value
there, decoded to the table's type, or None when K has none. It reads what processors see
now: the writes of the record being processed included, as Kafka Streams' interactive
queries do under at-least-once.

It raises ``NotHereError`` (naming the topic and partition, so a caller can find the
instance that owns it: ``streams query`` does) when this instance does not own K's
partition, or holds it only while it moves; ``UnknownTableError`` for a name that is no
table, or a windowed one (read those with ``TestDriver.table``).

Thread-safety: called from any thread (the query port's server threads). Reads are single
dictionary lookups and RocksDB gets, which the runtime's thread never leaves half done;
a partition closed mid-read (a rebalance) is ``NotHereError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.codec.jsonmap import to_json
from streams.errors import StreamsError
from streams.state import StateManager
from streams.topology.aggregate import AggregateSpec, table_spec
from streams.topology.errors import TopologyError
from streams.topology.partitioning import partition_for
from streams.topology.topology import Topology
from streams.topology.values import value_codec


class QueryError(StreamsError):
    """A table cannot be read here (the base of the errors below)."""


class UnknownTableError(QueryError):
    """The topology has no table of that name without windows."""


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

    def get(self, table: str, key: str) -> Any | None:
        """The value of ``key`` in ``table``, or None when it has none."""
        try:
            spec = table_spec(self._topology, table)
        except TopologyError as exc:
            raise UnknownTableError(str(exc)) from None
        if isinstance(spec, AggregateSpec) and spec.windows is not None:
            raise UnknownTableError(f"table {table!r} has windows: a query reads one by key")
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
            value = part.transaction().get(raw)
        except Exception as exc:  # the partition closed under the read: it is moving
            raise NotHereError(table, key, topic, partition) from exc
        return None if value is None else decode(value)

    def answer(self, table: str, key: str) -> tuple[int, dict[str, Any]]:
        """``get`` as an HTTP status and a JSON body: 200 with the value; 404 for a key
        without one (``"found": false``) or an unknown table; 421 (misdirected) with the
        ``topic`` and ``partition`` when another instance owns the key."""
        try:
            value = self.get(table, key)
        except NotHereError as exc:
            return 421, {"error": str(exc), "topic": exc.topic, "partition": exc.partition}
        except UnknownTableError as exc:
            return 404, {"error": str(exc)}
        if value is None:
            return 404, {"table": table, "key": key, "found": False}
        return 200, {"table": table, "key": key, "found": True, "value": to_json(value)}


def client_id(app_id: str, endpoint: str) -> str:
    """The client id an instance advertises its query endpoint with (``host:port``): what
    every member of its group shows (``streams query`` reads it there)."""
    return f"{app_id}@{endpoint}"


def endpoint_of(client_id: str) -> str | None:
    """The query endpoint a group member's client id advertises, or None."""
    _app, at, endpoint = client_id.rpartition("@")
    return endpoint if at and ":" in endpoint else None
