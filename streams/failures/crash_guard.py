"""Poison records that kill the process: found after repeated crashes, then dead-lettered.

A record whose processing crashes the interpreter (a native-library fault, the OOM
killer, a watchdog ending a step that hangs) never reaches ``except``: the process dies,
restarts at the committed offset, reads the record again and dies again. The guard breaks
that loop without costing anything while nothing crashes:

- On every assignment the runtime reports where the partition resumes (``assigned``).
  Starting again and again at the same committed offset means the process keeps dying
  before it can commit past it.
- After ``careful_after`` such starts the partition is *careful*: for each record the
  runtime calls ``before(offset)``, makes the store durable (flush its changelog and wait),
  processes the record, then calls ``after(offset)``. ``before`` counts how often that
  very record was in progress when the process died.
- A record in progress at ``max_crashes`` deaths is not processed again: ``before``
  answers ``DEAD_LETTER`` and the runtime routes it with ``PoisonRecordError`` (its error
  headers say so); the partition moves on.
- Once the committed offset moves past where the partition resumed, it is normal again
  (if the crash point lies further on, the next starts there make it careful again).

Entries live in a store (a ``streams.state`` transaction, or a dict in tests) under keys
prefixed ``crash:<topic>:``; every method is one or two small writes, never blocking.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from streams.failures.errors import PoisonRecordError
from streams.failures.policy import Verdict


class ByteStore(Protocol):
    def get(self, key: bytes, /) -> bytes | None: ...
    def set(self, key: bytes, value: bytes, /) -> None: ...
    def delete(self, key: bytes, /) -> None: ...


class DictByteStore:
    """A ``ByteStore`` over a dict (tests, and runtimes without state)."""

    def __init__(self, data: dict[bytes, bytes] | None = None) -> None:
        self.data: dict[bytes, bytes] = data if data is not None else {}

    def get(self, key: bytes, /) -> bytes | None:
        return self.data.get(key)

    def set(self, key: bytes, value: bytes, /) -> None:
        self.data[key] = value

    def delete(self, key: bytes, /) -> None:
        self.data.pop(key, None)


def _pair(raw: bytes | None) -> tuple[int, int] | None:
    if raw is None:
        return None
    first, _, second = raw.partition(b":")
    return int(first), int(second)


class CrashGuard:
    """The crash bookkeeping of one input partition (see the module docstring)."""

    def __init__(
        self,
        store: ByteStore | Callable[[], ByteStore],
        topic: str,
        *,
        careful_after: int = 2,
        max_crashes: int = 3,
    ) -> None:
        if careful_after < 1 or max_crashes < 1:
            raise ValueError("careful_after and max_crashes must be at least 1")
        self._store = store if callable(store) else (lambda: store)
        self._prefix = f"crash:{topic}:".encode()
        self.careful_after = careful_after
        self.max_crashes = max_crashes
        self.careful = False

    def _key(self, name: str) -> bytes:
        return self._prefix + name.encode()

    def assigned(self, committed: int) -> bool:
        """The partition resumes at ``committed``; returns whether it is now careful."""
        store = self._store()
        starts = _pair(store.get(self._key("starts")))
        count = starts[1] + 1 if starts is not None and starts[0] == committed else 1
        store.set(self._key("starts"), b"%d:%d" % (committed, count))
        self.careful = count > self.careful_after
        return self.careful

    def before(self, offset: int) -> Verdict:
        """In careful mode, before processing ``offset``: RETRY means "process it" (after
        making the store durable); DEAD_LETTER means "route it, do not process it" (again
        after a crash, until the committed offset passes it: a DLQ copy may repeat)."""
        if not self.careful:
            return Verdict.RETRY
        store = self._store()
        key = self._key(f"at:{offset}")
        raw = store.get(key)
        crashes = int(raw) if raw is not None else 0
        if crashes >= self.max_crashes:
            return Verdict.DEAD_LETTER
        store.set(key, b"%d" % (crashes + 1))
        return Verdict.RETRY

    def poison(self, offset: int) -> PoisonRecordError:
        """The error to route a record ``before`` refused with (its headers record it)."""
        return PoisonRecordError(offset, self.max_crashes)

    def after(self, offset: int) -> None:
        """``offset`` was processed or routed without killing the process."""
        if not self.careful:
            return
        store = self._store()
        key = self._key(f"at:{offset}")
        raw = store.get(key)
        if raw is not None and int(raw) >= self.max_crashes:
            pending = store.get(self._key("dead"))
            dead = b"%d" % offset
            store.set(self._key("dead"), pending + b"," + dead if pending else dead)
        else:
            store.delete(key)

    def committed(self, offset: int) -> None:
        """Offsets below ``offset`` are committed: forget the dead-lettered ones behind it,
        and end careful mode once past where the partition resumed."""
        if not self.careful:
            return
        store = self._store()
        pending = store.get(self._key("dead"))
        if pending:
            dead = {int(o) for o in pending.split(b",")}
            for o in sorted(d for d in dead if d < offset):
                store.delete(self._key(f"at:{o}"))
            left = sorted(d for d in dead if d >= offset)
            if left:
                store.set(self._key("dead"), b",".join(b"%d" % d for d in left))
            else:
                store.delete(self._key("dead"))
        starts = _pair(store.get(self._key("starts")))
        if starts is None or offset > starts[0]:
            store.delete(self._key("starts"))
            self.careful = False
