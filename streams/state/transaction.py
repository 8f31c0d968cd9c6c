"""The buffered reads and writes of one store partition between two flushes.

Writes land in a dict (key -> entry or ``None`` for a delete) and shadow the local storage
for later reads; the last write of a key wins, so a flush writes each key once. Nothing
here does I/O except the reads that fall through to the local storage.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from streams.state.base import NEVER, Entry, LocalStorage
from streams.state.errors import StateError

Clock = Callable[[], float]


def as_key(key: bytes | str) -> bytes:
    return key.encode() if isinstance(key, str) else key


def to_ms(seconds: float) -> int:
    return int(seconds * 1000)


class PartitionTransaction:
    """Implements :class:`streams.state.base.Transaction` over one :class:`LocalStorage`."""

    def __init__(self, storage: LocalStorage, clock: Clock = time.time) -> None:
        self._storage = storage
        self._clock = clock
        self.updates: dict[bytes, Entry | None] = {}
        self.frozen = False  # set by a flush until apply/abort: no writes in between

    def _now_ms(self, now: float | None) -> int:
        return to_ms(self._clock() if now is None else now)

    def _entry(self, key: bytes) -> Entry | None:
        updates = self.updates
        if key in updates:
            return updates[key]
        return self._storage.get(key)

    def get(
        self, key: bytes | str, default: bytes | None = None, *, now: float | None = None
    ) -> bytes | None:
        """The live value of ``key`` (expired entries read as absent), else ``default``."""
        entry = self._entry(as_key(key))
        if entry is None or not entry.live(self._now_ms(now)):
            return default
        return entry.value

    def exists(self, key: bytes | str, *, now: float | None = None) -> bool:
        entry = self._entry(as_key(key))
        return entry is not None and entry.live(self._now_ms(now))

    def set(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> None:
        """Write ``value``; with ``ttl`` (seconds > 0) it expires ``ttl`` after ``now``."""
        self._check_writable()
        if not isinstance(value, bytes):
            raise TypeError(f"store values are bytes, got {type(value).__name__}")
        if ttl is None:
            expires = NEVER
        elif ttl <= 0:
            raise ValueError(f"ttl must be positive seconds, got {ttl!r}")
        else:
            expires = self._now_ms(now) + max(to_ms(ttl), 1)
        self.updates[as_key(key)] = Entry(value, expires)

    def delete(self, key: bytes | str) -> None:
        self._check_writable()
        self.updates[as_key(key)] = None

    def _check_writable(self) -> None:
        if self.frozen:
            raise StateError(
                "the store partition was flushed and not yet applied: call apply() (after the "
                "input offsets are committed) or abort() before writing again"
            )

    def __len__(self) -> int:
        return len(self.updates)
