"""Every store of one running app, driven per input partition: the runtime's one handle.

The runtime calls, in this order (each blocks as said; each raises a ``StateError``):

* ``ensure_changelogs(cluster, {source_topic: partitions})`` once before subscribing: creates
  or validates every changelog topic; a wrong one raises ``ChangelogTopicError`` and
  nothing is processed.
* ``assign(topic, partition, committed_offset)`` on assignment, before processing the
  partition: opens (restores) every store fed by ``topic``. Blocks for the restores.
* processors use ``routed(store, current_partition)`` (or ``store.partition(p)``).
* at each commit: ``flush(producer, {(topic, partition): next_offset})`` for the
  partitions processed since the last commit; then the producer's ``flush()``;
  ``check_delivered()``; the offset commit (or the exactly-once transaction commit, with
  the same producer); then ``apply()``. On a failed commit/transaction that will be
  retried from the committed offsets: ``abort()`` (``rewrite_sent=True`` without a
  transaction: the changes already sent are written back).
* ``revoke(topic, partition, keep=True)`` on revoke or loss; ``close()`` at shutdown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from streams.cluster import Topics
from streams.state.base import Backend, ChangelogProducer
from streams.state.errors import StateError
from streams.state.restore import MakeConsumer, RestoreProgress
from streams.state.routed import RoutedStore
from streams.state.store import ChangelogPartition, ChangelogStore
from streams.state.transaction import Clock, PartitionTransaction

APPLY_CHUNK = 1_000
"""Committed changes written to the local stores per ``apply_some`` (a few ms at most)."""


class StateManager:
    def __init__(
        self,
        app: str,
        *,
        consumer_config: Mapping[str, Any],
        make_consumer: MakeConsumer | None = None,
        state_dir: Path | str | None = None,
        progress: RestoreProgress | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.app = app
        self._consumer_config = dict(consumer_config)
        self._make_consumer = make_consumer
        self._state_dir = state_dir
        self._progress = progress
        self._clock = clock
        self.stores: dict[str, ChangelogStore] = {}
        self._flushed: list[ChangelogPartition] = []

    def add_store(self, name: str, backend: Backend, *, source_topic: str) -> ChangelogStore:
        """Declare store ``name``, partitioned like ``source_topic``."""
        if name in self.stores:
            raise StateError(f"app {self.app!r} already has a store named {name!r}")
        store = ChangelogStore(
            self.app,
            name,
            backend,
            consumer_config=self._consumer_config,
            make_consumer=self._make_consumer,
            state_dir=self._state_dir,
            source_topic=source_topic,
            clock=self._clock,
            progress=self._progress,
        )
        self.stores[name] = store
        return store

    def _fed_by(self, topic: str) -> list[ChangelogStore]:
        return [s for s in self.stores.values() if s.source_topic == topic]

    def ensure_changelogs(self, cluster: Topics, partitions: Mapping[str, int]) -> None:
        """Create or validate each store's changelog; ``partitions`` per source topic."""
        for store in self.stores.values():
            topic = store.source_topic or ""
            if topic not in partitions:
                raise StateError(f"store {store.name!r}: no partition count for {topic!r}")
            store.ensure_changelog(cluster, partitions[topic])

    def assign(self, topic: str, partition: int, committed_offset: int | None) -> None:
        """Open every store fed by ``topic`` for ``partition`` (restoring; blocks)."""
        opened: list[ChangelogStore] = []
        try:
            for store in self._fed_by(topic):
                store.open(partition, committed_offset)
                opened.append(store)
        except BaseException:
            for store in opened:  # all of the partition's stores, or none
                store.close(partition, keep=True)
            raise

    def closed(self, keys: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
        """Those of ``keys`` (assigned input partitions) whose stores are not open: an
        ``assign`` that failed (it opens all of a partition's stores or none)."""
        return [
            (topic, partition)
            for topic, partition in keys
            if any(partition not in store.partitions for store in self._fed_by(topic))
        ]

    def revoke(self, topic: str, partition: int, *, keep: bool = True) -> None:
        for store in self._fed_by(topic):
            store.close(partition, keep=keep)

    def routed(
        self,
        name: str,
        current_partition: Callable[[], int],
        touched: list[PartitionTransaction] | None = None,
    ) -> RoutedStore:
        """Store ``name`` as processors see it (``RoutedStore``; ``touched``: the attempt's
        list of transactions it wrote, for a rollback)."""
        try:
            return RoutedStore(self.stores[name], current_partition, touched)
        except KeyError:
            raise StateError(f"app {self.app!r} has no store named {name!r}") from None

    def changed(self) -> set[tuple[str, int]]:
        """The input partitions with a store change not yet flushed."""
        return {
            (store.source_topic or "", partition)
            for store in self.stores.values()
            for partition, part in store.partitions.items()
            if part.transaction().updates
        }

    def unsent(self) -> bool:
        """Whether a store change was made since the last ``send`` or ``flush``."""
        return any(
            part.transaction().unsent
            for store in self.stores.values()
            for part in store.partitions.values()
        )

    def send(self, producer: ChangelogProducer, positions: Mapping[tuple[str, int], int]) -> int:
        """Produce the changes made since the last send of the given partitions, tagged
        with their positions now, without waiting (between checkpoints)."""
        sent = 0
        for (topic, partition), source_offset in positions.items():
            for store in self._fed_by(topic):
                part = store.partitions.get(partition)
                if part is not None:
                    sent += part.send(producer, source_offset)
        return sent

    def flush(self, producer: ChangelogProducer, positions: Mapping[tuple[str, int], int]) -> int:
        """Produce the changes of the given partitions not sent yet, tagged with their next
        offsets; return how many changes the checkpoint holds."""
        written = 0
        for (topic, partition), source_offset in positions.items():
            for store in self._fed_by(topic):
                part = store.partitions.get(partition)
                if part is None:
                    continue
                written += part.flush(producer, source_offset)
                self._flushed.append(part)
        return written

    def check_delivered(self) -> None:
        for part in self._flushed:
            part.check_delivered()

    def apply(self, *, deferred: bool = False) -> None:
        """Apply the flushed partitions' changes (``ChangelogPartition.apply``; with
        ``deferred``, ``apply_some`` writes them between records)."""
        flushed, self._flushed = self._flushed, []
        for part in flushed:
            part.apply(deferred=deferred)

    def apply_some(self, limit: int = APPLY_CHUNK) -> int:
        """Write up to ``limit`` committed changes, of every open partition, to the local
        stores (``ChangelogPartition.apply_some``); return how many. Between records: a
        checkpoint's worth at once would stop the loop for milliseconds (measured at 5k
        dedup ids a second, 10-14 ms each second in one RocksDB write)."""
        written = 0
        for store in self.stores.values():
            for part in store.partitions.values():
                if written >= limit:
                    return written
                if part.applying:
                    written += part.apply_some(limit - written)
        return written

    def abort(self, *, rewrite_sent: bool = False) -> None:
        """Drop every change not yet applied, in every open partition (``rewrite_sent``:
        the keys whose changes reached a changelog outside a transaction are written again
        with their committed values, ``ChangelogPartition.abort``)."""
        self._flushed = []
        for store in self.stores.values():
            for part in store.partitions.values():
                part.abort(rewrite_sent=rewrite_sent)

    def close(self, *, keep: bool = True) -> None:
        self.abort()
        for store in self.stores.values():
            store.close_all(keep=keep)
