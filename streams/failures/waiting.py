"""Per-key order through retries: who waits behind a record that is being retried.

While a key has a record in a retry tier (its *head*), later records of that key are
*parked* behind it instead of being processed. When the head settles (it succeeded, or it
went to the DLQ), the parked records are *released* one at a time, in arrival order: each
released record becomes the new head until it settles in turn, so a released record that
fails again keeps every later record of its key behind it.

The runtime keeps one ``WaitingRoom`` per input partition (keys never change partition)
and drives it with four calls, all O(1) apart from the copy of one key's entry:

- ``admit(key, item)`` for every new input record: True means "process it now"; False
  means it was parked.
- ``failed(key, item)`` after ``item`` was written to a retry tier: it heads its key.
- ``settled(key)`` after the head succeeded or was dead-lettered: returns the next record
  to process (still heading the key) or None (the key is free again).
- ``is_blocked(key)`` / ``head(key)``: to check that a due retry record is its key's head.

State lives in a ``WaitingStore`` given by the caller: a dict by default, or a store
transaction (``streams.failures.parked.TransactionWaitingStore``). Entries are immutable
and every change is a single ``store[key] = entry`` or ``del store[key]``, so a
changelog-backed store sees each change as one write and the room survives restarts and
rebalances. Records without a key (``None``) have no per-key order: they are never parked.
Nothing here blocks or raises on valid use; ``settled`` on a free key raises ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from streams.failures.topics import topic_stem

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)
T = TypeVar("T")


def waiting_store_name(app_id: str, topic: str) -> str:
    """The store holding the waiting rooms of ``topic``'s partitions (its changelog is
    ``<app>-<topic>-waiting-changelog``, the app id once: ``topic_stem``)."""
    return f"{topic_stem(app_id, topic)}-waiting"


@dataclass(frozen=True, slots=True)
class WaitingEntry(Generic[T]):
    """One blocked key: the record it waits for (``head``) and those parked behind it."""

    head: T
    parked: tuple[T, ...] = ()


class WaitingStore(Protocol[K_contra, T]):
    """Where the room keeps its entries: a dict, or a store transaction (``parked``)."""

    def get(self, key: K_contra, /) -> WaitingEntry[T] | None: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __setitem__(self, key: K_contra, entry: WaitingEntry[T], /) -> None: ...
    def __delitem__(self, key: K_contra, /) -> None: ...


class WaitingRoom(Generic[K, T]):
    """The keys waiting on a retry, and the records parked behind each, in order."""

    def __init__(self, store: WaitingStore[K, T] | None = None) -> None:
        self._store: WaitingStore[K, T] = store if store is not None else {}

    def is_blocked(self, key: K | None) -> bool:
        return key is not None and key in self._store

    def head(self, key: K) -> T | None:
        """The record its key waits for (in a retry tier, or released and in hand)."""
        entry = self._store.get(key)
        return entry.head if entry is not None else None

    def parked(self, key: K) -> tuple[T, ...]:
        entry = self._store.get(key)
        return entry.parked if entry is not None else ()

    def admit(self, key: K | None, item: T) -> bool:
        """A new record of ``key``: True to process it now, False if parked behind a retry."""
        if key is None:
            return True
        entry = self._store.get(key)
        if entry is None:
            return True
        self._store[key] = WaitingEntry(entry.head, (*entry.parked, item))
        return False

    def failed(self, key: K | None, item: T) -> None:
        """``item`` went to a retry tier: it now heads ``key`` (parked records stay behind)."""
        if key is None:
            return
        entry = self._store.get(key)
        self._store[key] = WaitingEntry(item, entry.parked if entry is not None else ())

    def settled(self, key: K | None) -> T | None:
        """The head of ``key`` succeeded or was dead-lettered: release the next record.

        Returns the next parked record, which now heads the key: process it, then call
        ``settled`` again on success or DLQ, or ``failed`` if it goes to a retry tier.
        Returns None when nothing was parked: the key is free. Raises ``KeyError`` if
        ``key`` was not blocked.
        """
        if key is None:
            return None
        entry = self._store.get(key)
        if entry is None:
            raise KeyError(key)
        if not entry.parked:
            del self._store[key]
            return None
        released, *rest = entry.parked
        self._store[key] = WaitingEntry(released, tuple(rest))
        return released

    def _listed(self) -> Mapping[K, WaitingEntry[T]]:
        if not isinstance(self._store, Mapping):
            raise TypeError("this waiting room's store does not list its keys")
        return self._store

    def keys(self) -> Iterator[K]:
        """The blocked keys (only when the store is a mapping, such as a dict)."""
        return iter(self._listed())

    def __len__(self) -> int:
        """How many keys are blocked (only when the store is a mapping)."""
        return len(self._listed())

    def waiting(self) -> int:
        """How many records are parked over every key (only when the store is a mapping)."""
        return sum(len(entry.parked) for entry in self._listed().values())
