"""A store as a processor sees it: the partition of the record being processed.

The runtime opens one :class:`~streams.state.store.ChangelogPartition` per assigned input
partition, but a processor context holds one object per store for the whole run.
:class:`RoutedStore` is that object: each call goes to the current transaction of the
partition the runtime says is being processed (``current_partition()``), so processors
never see partitions, and the same processor code runs on the runtime and the test driver.

When given ``touched`` (the attempt's list), the first use of a transaction during an
attempt opens a savepoint on it and adds it to the list, so the attempt can roll back
every store it wrote (``streams.pipeline.execute``) without knowing which ones it used.
"""

from __future__ import annotations

from collections.abc import Callable

from streams.state.store import ChangelogPartition, ChangelogStore
from streams.state.transaction import PartitionTransaction, to_ms


class RoutedStore:
    """Implements :class:`streams.state.base.Transaction` for the current record's partition.

    Raises :class:`~streams.state.errors.StoreClosedError` when that partition is not open
    (the runtime opens every assigned partition before processing it).
    """

    __slots__ = ("_current", "_touched", "store")

    def __init__(
        self,
        store: ChangelogStore,
        current_partition: Callable[[], int],
        touched: list[PartitionTransaction] | None = None,
    ) -> None:
        self.store = store
        self._current = current_partition
        self._touched = touched

    def partition(self) -> ChangelogPartition:
        """The current record's partition of the store."""
        return self.store.partition(self._current())

    def transaction(self) -> PartitionTransaction:
        tx = self.store.partition(self._current()).transaction()
        touched = self._touched
        if touched is not None and tx.undo is None:
            tx.savepoint()
            touched.append(tx)
        return tx

    def get(
        self, key: bytes | str, default: bytes | None = None, *, now: float | None = None
    ) -> bytes | None:
        return self.transaction().get(key, default, now=now)

    def exists(self, key: bytes | str, *, now: float | None = None) -> bool:
        return self.transaction().exists(key, now=now)

    def set(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> None:
        self.transaction().set(key, value, ttl=ttl, now=now)

    def put_if_absent(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> bool:
        return self.transaction().put_if_absent(key, value, ttl=ttl, now=now)

    def delete(self, key: bytes | str) -> None:
        self.transaction().delete(key)

    def items(self, *, now: float | None = None) -> list[tuple[bytes, bytes]]:
        """Every live entry of the current partition (key, value), in no set order: a
        whole-partition scan, for a timer's sweep rather than per record."""
        part = self.partition()
        now_ms = to_ms(self.store.clock() if now is None else now)
        return [(key, entry.value) for key, entry in part.items() if entry.live(now_ms)]
