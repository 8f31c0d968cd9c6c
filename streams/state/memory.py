"""The in-memory backend: a dict per store partition, for tests and small state.

Nothing survives the process: every open restores from the changelog, unless the store
kept the partition open in memory on revoke (``close(keep=True)``). Expiry is indexed by a
heap of ``(expires_at_ms, key)`` whose stale items (key rewritten or deleted since) are
dropped when they reach the top, so writes stay O(log n).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path

from streams.state.base import NEVER, Backend, Changes, Entry, LocalStorage


class MemoryStorage(LocalStorage):
    def __init__(self) -> None:
        self._data: dict[bytes, Entry] = {}
        self._expiry: list[tuple[int, bytes]] = []

    def get(self, key: bytes) -> Entry | None:
        return self._data.get(key)

    def write(self, changes: Changes) -> None:
        data, expiry = self._data, self._expiry
        for key, entry in changes.items():
            if entry is None:
                data.pop(key, None)
            else:
                data[key] = entry
                if entry.expires_at_ms != NEVER:
                    heapq.heappush(expiry, (entry.expires_at_ms, key))

    def expired(self, now_ms: int, limit: int) -> list[bytes]:
        data, heap = self._data, self._expiry
        due: list[tuple[int, bytes]] = []
        seen: set[bytes] = set()
        while heap and heap[0][0] <= now_ms and len(due) < limit:
            expires_at, key = heapq.heappop(heap)
            entry = data.get(key)
            if entry is None or entry.expires_at_ms != expires_at or key in seen:
                continue  # stale: the key was deleted or rewritten after this item
            seen.add(key)
            due.append((expires_at, key))
        # Still stored until the caller's deletes are applied (and they may be aborted).
        for item in due:
            heapq.heappush(heap, item)
        return [key for _, key in due]

    def items(self) -> Iterator[tuple[bytes, Entry]]:
        return iter(list(self._data.items()))

    def count(self) -> int:
        return len(self._data)

    def close(self) -> None:
        self._data = {}
        self._expiry = []


class MemoryBackend(Backend):
    """Volatile storage; ``path`` is only a name here."""

    name = "memory"
    persistent = False

    def open(self, path: Path) -> LocalStorage:
        return MemoryStorage()

    def destroy(self, path: Path) -> None:
        return None
