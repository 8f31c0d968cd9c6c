"""Per-partition bookkeeping of records in flight, so commits cover only finished work.

Each consumed record gets an ``InFlight`` entry, in offset order. An entry holds one token
while its record is processed and one per output sent; it is done when every token is
released (processing finished, every output acknowledged). ``committable()`` is the offset
to commit: one past the end of the contiguous prefix of done entries. Entries may finish
in any order (outputs are acknowledged out of order across topics, and async processors
may finish keys out of order); the committed offset never passes an unfinished record.
"""

from __future__ import annotations

from collections import deque


class InFlight:
    """One consumed record. ``hold()`` before work that must finish first, ``release()``
    (or ``ack`` as a delivery callback) when it has."""

    __slots__ = ("failed", "offset", "tokens")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.tokens = 1  # the processing itself
        self.failed = False

    def hold(self) -> None:
        self.tokens += 1

    def release(self) -> None:
        self.tokens -= 1

    @property
    def done(self) -> bool:
        return self.tokens == 0 and not self.failed


class PartitionOffsets:
    """The in-flight records of one partition, oldest first. Not thread-safe: the runtime
    touches it from its one thread (delivery callbacks run inside ``poll``/``flush``)."""

    __slots__ = ("_entries", "_next_commit", "committed", "partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._entries: deque[InFlight] = deque()
        self._next_commit: int | None = None  # one past the finished prefix
        self.committed: int | None = None  # the last offset committed for this partition

    def begin(self, offset: int) -> InFlight:
        """Track a newly consumed record. Offsets must increase (they do within a partition)."""
        if self._entries and offset <= self._entries[-1].offset:
            raise ValueError(f"offset {offset} after {self._entries[-1].offset}")
        entry = InFlight(offset)
        self._entries.append(entry)
        return entry

    @property
    def in_flight(self) -> int:
        return len(self._entries)

    def committable(self) -> int | None:
        """The offset to commit (next record to read), or None when nothing finished since
        the start. Drops finished entries from the front as it goes."""
        entries = self._entries
        while entries and entries[0].done:
            self._next_commit = entries.popleft().offset + 1
        return self._next_commit

    def pending_commit(self) -> int | None:
        """``committable()`` when it moved past the last commit, else None."""
        nxt = self.committable()
        if nxt is None or nxt == self.committed:
            return None
        return nxt
