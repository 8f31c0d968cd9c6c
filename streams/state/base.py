"""The state layer's abstractions: local storage per backend, and what the runtime sees.

Two levels, as in Quix Streams' ``state/base``:

* **Backends** (``memory``, ``rocksdb``) implement :class:`Backend` and :class:`LocalStorage`:
  the local copy of one store partition, bytes to :class:`Entry`, written in atomic batches,
  with an index of entries by expiry time. They know nothing of Kafka.
* **The runtime** sees :class:`Store` (one named store of an app, partitioned like its
  input), :class:`StorePartition` (one open partition: restored, transactional, flushed
  with the changelog) and :class:`Transaction` (the buffered reads and writes of the
  current checkpoint interval). ``streams.state.store`` implements them on top of any
  backend and the changelog.

Times are integer milliseconds since the epoch (``*_ms``) inside the layer; the public
``ttl``/``now`` arguments are float seconds, like ``time.time()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

NEVER = 0
"""``Entry.expires_at_ms`` of an entry without a time to live."""


class Entry(NamedTuple):
    """A stored value and when it expires (``NEVER``, or epoch milliseconds)."""

    value: bytes
    expires_at_ms: int = NEVER

    def live(self, now_ms: int) -> bool:
        """False once the entry's time to live has passed: it reads as absent."""
        return self.expires_at_ms == NEVER or self.expires_at_ms > now_ms


Changes = Mapping[bytes, Entry | None]
"""A batch of writes: key to new entry, or ``None`` to delete the key."""


class LocalStorage(ABC):
    """The local copy of one store partition. Not thread-safe; one owner at a time.

    Every method blocks for local I/O only (no network). ``write`` is atomic: after a crash
    either the whole batch is there or none of it.
    """

    @abstractmethod
    def get(self, key: bytes) -> Entry | None:
        """The stored entry, expired or not (callers decide what expiry means)."""

    @abstractmethod
    def write(self, changes: Changes) -> None:
        """Apply ``changes`` in one atomic batch."""

    @abstractmethod
    def expired(self, now_ms: int, limit: int) -> list[bytes]:
        """Up to ``limit`` keys whose entries expired at or before ``now_ms``, oldest first.

        Does not delete them: the caller writes the deletes (and their changelog tombstones).
        """

    @abstractmethod
    def items(self) -> Iterator[tuple[bytes, Entry]]:
        """Every stored entry (expired ones included), in no promised order."""

    def range(self, low: bytes, high: bytes) -> list[tuple[bytes, Entry]]:
        """The entries whose key is in ``[low, high)``, in key order (expired ones
        included). This one scans every entry: a backend with sorted keys seeks."""
        return sorted((k, e) for k, e in self.items() if low <= k < high)

    def count(self) -> int:
        """The number of stored entries; may scan the whole store."""
        return sum(1 for _ in self.items())

    def estimated_count(self) -> int:
        """About how many entries are stored, without a scan where the backend keeps an
        estimate; safe to call from another thread (a metrics scrape)."""
        return self.count()

    def sync(self) -> None:  # noqa: B027 (a no-op is right for volatile storage)
        """Make every written batch durable before a checkpoint names it as restored."""

    @abstractmethod
    def close(self) -> None:
        """Release the storage (files stay, for a persistent backend)."""


class Backend(ABC):
    """Opens :class:`LocalStorage` for a store partition, at a directory it may use."""

    name: str
    persistent: bool
    """True when data survives ``close`` and a process restart (a checkpoint then pays)."""

    @abstractmethod
    def open(self, path: Path) -> LocalStorage:
        """Open (creating if needed) the storage kept under ``path``."""

    @abstractmethod
    def destroy(self, path: Path) -> None:
        """Delete the storage kept under ``path``; a missing one is not an error."""


DeliveryCallback = Callable[[Any, Any], None]


class ChangelogProducer(Protocol):
    """What the state layer needs of the runtime's producer (a ``confluent_kafka.Producer``).

    The runtime owns it: in at-least-once mode a plain idempotent producer, in exactly-once
    mode the transactional producer whose open transaction then carries the changelog.
    """

    def produce(  # noqa: PLR0917 - confluent-kafka's positional order (see ``_send``)
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        partition: int = ...,
        callback: DeliveryCallback | None = ...,  # as the stubs order them (see ``_send``)
        on_delivery: DeliveryCallback | None = ...,
        timestamp: int = ...,
        headers: Any = ...,
    ) -> None: ...

    def poll(self, timeout: float = ...) -> int: ...

    def __len__(self) -> int:
        """Records produced and not yet settled (acknowledged or failed)."""
        ...


class Transaction(Protocol):
    """The reads and writes of one store partition since its last flush.

    Writes are buffered in memory and visible to later reads at once; nothing reaches the
    changelog or the local storage until :meth:`StorePartition.flush` and
    :meth:`StorePartition.apply`. Keys are bytes (``str`` is UTF-8 encoded); ``ttl`` and
    ``now`` are seconds; ``now`` defaults to the store's clock (``time.time``).
    """

    def get(
        self, key: bytes | str, default: bytes | None = None, *, now: float | None = None
    ) -> bytes | None: ...

    def set(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> None: ...

    def delete(self, key: bytes | str) -> None: ...

    def exists(self, key: bytes | str, *, now: float | None = None) -> bool: ...

    def put_if_absent(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> bool: ...


class StorePartition(Protocol):
    """One partition of a store, open on this instance (see ``streams.state.store``)."""

    partition: int

    def transaction(self) -> Transaction: ...

    def send(self, producer: ChangelogProducer, source_offset: int) -> int: ...

    def flush(
        self, producer: ChangelogProducer, source_offset: int, *, now: float | None = None
    ) -> int: ...

    def check_delivered(self) -> None: ...

    def apply(self) -> None: ...

    def abort(self) -> None: ...


class Store(Protocol):
    """One named store of an app, partitioned like its input."""

    name: str
    changelog_topic: str

    def open(self, partition: int, committed_offset: int | None) -> StorePartition: ...

    def partition(self, partition: int) -> StorePartition: ...

    def close(self, partition: int, *, keep: bool) -> None: ...
