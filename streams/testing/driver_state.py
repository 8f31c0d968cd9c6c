"""The ``TestDriver``'s state stores: in memory, no broker, a checkpoint after every record.

Every declared store runs on the memory backend whatever the topology asks for (the
driver keeps nothing on disk). A partition's stores are opened empty the first time one of
its records is piped; after each record the changes are flushed to an in-memory changelog
(``changelog``, a ``streams.state.testing.RecordingProducer``), acknowledged and applied,
as the runtime does at each commit. A record whose policy says FAIL has its changes
dropped, as the runtime never commits a failed record.
"""

from __future__ import annotations

from collections.abc import Callable

from streams.state import MemoryBackend, RoutedStore, StateManager
from streams.state.testing import RecordingProducer
from streams.state.transaction import PartitionTransaction
from streams.topology.errors import TopologyError
from streams.topology.topology import Topology


class DriverState:
    """Stores of one driver run; ``routed`` is what the plan hands to processors."""

    def __init__(
        self,
        topology: Topology,
        current_partition: Callable[[], int],
        clock: Callable[[], float],
    ) -> None:
        self.manager = StateManager(topology.app_id, consumer_config={}, clock=clock)
        for name in topology.stores:
            self.manager.add_store(name, MemoryBackend(), source_topic=topology.store_source(name))
        self.changelog = RecordingProducer()
        self.routed: dict[str, RoutedStore] = {
            name: self.manager.routed(name, current_partition) for name in topology.stores
        }
        self._open: set[tuple[str, int]] = set()

    def begin(self, topic: str, partition: int) -> None:
        """Open the partition's stores (empty) before its first record."""
        if (topic, partition) not in self._open:
            self.manager.attach(topic, partition)
            self._open.add((topic, partition))

    def commit(self, topic: str, partition: int, next_offset: int) -> None:
        """The record before ``next_offset`` is done: its changes reach the changelog."""
        self.manager.flush(self.changelog, {(topic, partition): next_offset})
        self.changelog.flush()
        self.manager.check_delivered()
        self.manager.apply()

    def abort(self) -> None:
        self.manager.abort()

    def store(self, name: str, partition: int) -> PartitionTransaction:
        try:
            store = self.manager.stores[name]
        except KeyError:
            raise TopologyError(f"the topology has no store named {name!r}") from None
        return store.partition(partition).transaction()
