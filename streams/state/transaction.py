"""The buffered reads and writes of one store partition between two flushes.

Writes land in a dict (key -> entry or ``None`` for a delete) and shadow the local storage
for later reads; the last write of a key wins, so a flush writes each key once. Nothing
here does I/O except the reads that fall through to the local storage.

A savepoint scopes the writes of one processing attempt: after ``savepoint()``, the first
write of each key remembers what it replaced, so ``rollback()`` puts the transaction back
as it was (a failed attempt changes no store: its retry must not find, say, its own id
already marked seen by dedup); ``release()`` keeps the writes. One dict lookup per write
while a savepoint is open, nothing otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from streams.state.base import NEVER, Entry
from streams.state.errors import StateError

Clock = Callable[[], float]


class EntryReader(Protocol):
    """What a transaction reads through: a ``LocalStorage``, or one with committed changes
    in front of it (``streams.state.store``)."""

    def get(self, key: bytes) -> Entry | None: ...


def as_key(key: bytes | str) -> bytes:
    return key.encode() if isinstance(key, str) else key


def to_ms(seconds: float) -> int:
    return int(seconds * 1000)


_ABSENT = Entry(b"", -1)  # what a savepoint remembers for a key the updates did not hold


# Entries are built by the tuple constructor: a NamedTuple's own ``__new__`` is a Python
# function, a frame more per write.
_tuple_new = tuple.__new__


def _frozen() -> StateError:
    return StateError(
        "the store partition was flushed and not yet applied: call apply() (after the "
        "input offsets are committed) or abort() before writing again"
    )


class PartitionTransaction:
    """Implements :class:`streams.state.base.Transaction` over one partition's local storage."""

    def __init__(self, storage: EntryReader, clock: Clock = time.time) -> None:
        self._storage = storage
        self._clock = clock
        self.updates: dict[bytes, Entry | None] = {}
        # Keys written since their changes were last sent to the changelog (a dict: the
        # order they were written in); a rolled-back key may stay here, and is skipped.
        self.unsent: dict[bytes, None] = {}
        self.frozen = False  # set by a flush until apply/abort: no writes in between
        self.undo: dict[bytes, Entry | None] | None = None  # open savepoint: replaced values
        self.rolled_back = 0  # rollbacks that undid writes (what is derived from it is stale)

    def savepoint(self) -> None:
        """Start remembering what each write replaces (see the module docstring)."""
        self.undo = {}

    def rollback(self) -> None:
        """Undo every write since ``savepoint()``, and close it."""
        undo, self.undo = self.undo, None
        if undo:
            self.rolled_back += 1
        updates = self.updates
        for key, old in (undo or {}).items():
            if old is _ABSENT:
                updates.pop(key, None)
            else:
                updates[key] = old

    def release(self) -> None:
        """Close the savepoint, keeping its writes."""
        self.undo = None

    def _write(self, key: bytes, entry: Entry | None) -> None:
        if self.frozen:
            raise _frozen()
        undo, updates = self.undo, self.updates
        if undo is not None and key not in undo:
            undo[key] = updates.get(key, _ABSENT)
        updates[key] = entry
        self.unsent[key] = None

    def _entry(self, key: bytes) -> Entry | None:
        entry = self.updates.get(key, _ABSENT)
        return self._storage.get(key) if entry is _ABSENT else entry

    def get(
        self, key: bytes | str, default: bytes | None = None, *, now: float | None = None
    ) -> bytes | None:
        """The live value of ``key`` (expired entries read as absent), else ``default``."""
        entry = self._entry(as_key(key))
        if entry is None or not entry.live(to_ms(self._clock() if now is None else now)):
            return default
        return entry.value

    def exists(self, key: bytes | str, *, now: float | None = None) -> bool:
        entry = self._entry(as_key(key))
        return entry is not None and entry.live(to_ms(self._clock() if now is None else now))

    def set(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> None:
        """Write ``value``; with ``ttl`` (seconds > 0) it expires ``ttl`` after ``now``."""
        self._put(as_key(key), value, ttl, self._clock() if now is None else now)

    def put_if_absent(
        self, key: bytes | str, value: bytes, *, ttl: float | None = None, now: float | None = None
    ) -> bool:
        """Write ``value`` (as ``set``) unless ``key`` holds a live entry; True when it wrote.
        One read and one write for what ``exists`` then ``set`` do in two (dedup's path)."""
        raw = as_key(key)
        if now is None:
            now = self._clock()
        entry = self._entry(raw)
        if entry is not None and entry.live(to_ms(now)):
            return False
        self._put(raw, value, ttl, now)
        return True

    def _put(self, key: bytes, value: bytes, ttl: float | None, now: float) -> None:
        """Write ``value`` at ``key``, to expire ``ttl`` seconds after ``now`` (at least a
        millisecond later; None: never)."""
        if not isinstance(value, bytes):
            raise TypeError(f"store values are bytes, got {type(value).__name__}")
        if ttl is None:
            expires = NEVER
        elif ttl > 0:
            expires = to_ms(now) + max(to_ms(ttl), 1)
        else:
            raise ValueError(f"ttl must be positive seconds, got {ttl!r}")
        self._write(key, _tuple_new(Entry, (value, expires)))

    def delete(self, key: bytes | str) -> None:
        self._write(as_key(key), None)

    def __len__(self) -> int:
        return len(self.updates)
