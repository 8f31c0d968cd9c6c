"""The crash guard: a record that kills the process again and again is dead-lettered.

A step that crashes the interpreter (a segfault in a C library, ``os._exit``, the OOM
killer) cannot be caught, so the failure policy never sees it: the process dies before
committing, restarts at the committed offset, meets the record again and dies again, for
ever. The guard breaks the loop with a small file per partition (``<dir>/<topic>-<p>``):

- When a partition's first record of a run arrives, the file says whether the last run
  on it ended cleanly (no file: it did; a clean stop or revoke removes it). If it died,
  the guard is *careful* on that partition: before each record it writes the record's
  offset to the file (the *suspect*, what was in hand when the process died), until the
  run commits past where it started.
- A suspect that was in hand at ``limit`` deaths in a row is *condemned* at the next
  start: its attempt fails with :class:`CrashLoopError`, which every policy sends to the
  DLQ (never to a retry tier), and the partition moves on.

The cost: one file write per partition at the start of a run, and one per record only on a
partition whose last run died, until it commits. Files are written without ``fsync``: the
guard is for a process that dies, and the OS keeps what it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

from streams.failures.errors import CrashLoopError
from streams.logs import get_logger

__all__ = ["CrashGuard", "CrashLoopError", "GuardedPartition"]

_log = get_logger("streams.crash_guard")


class GuardedPartition:
    """The guard of one assigned partition (``PartitionOffsets.guard``) until it knows the
    partition is safe; ``Track`` calls ``before`` for each of its records."""

    __slots__ = (
        "_careful",
        "_deaths",
        "_path",
        "_previous",
        "_read_previous",
        "_start",
        "_suspect",
        "condemned",
        "limit",
    )

    def __init__(self, path: Path, limit: int) -> None:
        self._path = path
        self.limit = limit
        self._start: int | None = None  # the first offset of this run
        self._previous: dict[str, int | None] | None = None  # the file of the last run
        self._read_previous = False
        self._careful = False
        self._deaths = 0
        self._suspect: int | None = None
        self.condemned: int | None = None
        """The offset to dead-letter instead of processing (None: none)."""

    def before(self, offset: int, committed: int | None) -> bool:
        """Called before the record at ``offset`` is processed (``committed``: the
        partition's committed offset now). False once the partition needs no more guarding
        in this run (the caller drops the guard)."""
        if self._start is None:
            self._first(offset)
            if not self._careful:
                return False
        elif committed is not None and committed > max(self._start, self.condemned or 0):
            # This run committed past where it started (and past the record it condemned,
            # if any): no loop here, and a later death is nobody's yet.
            self._dump({"suspect": None, "deaths": 0})
            return False
        self._write(offset)
        return True

    @property
    def careful(self) -> bool:
        """Whether the last run on this partition died, so that records are watched one
        at a time (what ``before`` decides at the first record; read once)."""
        return self._careful if self._start is not None else self._last_run() is not None

    def _last_run(self) -> dict[str, int | None] | None:
        if not self._read_previous:
            self._previous, self._read_previous = self._read(), True
        return self._previous

    def _first(self, offset: int) -> None:
        self._start = offset
        previous = self._last_run()
        if previous is not None:  # the last run on this partition died
            self._careful = True
            suspect = previous.get("suspect")
            self._suspect = suspect if isinstance(suspect, int) else None
            self._deaths = int(previous.get("deaths") or 0) + 1
            if self._suspect is not None and self._deaths >= self.limit:
                self.condemned = self._suspect
                _log.error(
                    "record condemned: the process died with it in hand, in a row",
                    path=str(self._path),
                    offset=self._suspect,
                    deaths=self._deaths,
                )
            elif self._suspect is not None:
                _log.warning(
                    "the last run died with a record in hand",
                    path=str(self._path),
                    offset=self._suspect,
                    deaths=self._deaths,
                )
        if not self._careful:
            self._dump({"suspect": None, "deaths": 0})  # a death from now on is noticed

    def _write(self, offset: int) -> None:
        # The deaths so far are the record's if it was in hand at the last one (or if that
        # one's record is unknown: the run before was not careful); another record's start
        # from none.
        same = self._suspect is None or offset == self._suspect
        self._dump({"suspect": offset, "deaths": self._deaths if same else 0})

    def _read(self) -> dict[str, int | None] | None:
        try:
            data = json.loads(self._path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _dump(self, data: dict[str, int | None]) -> None:
        self._path.write_text(json.dumps(data))

    def clean(self) -> None:
        """The run ended cleanly on this partition: forget it."""
        self._path.unlink(missing_ok=True)


class CrashGuard:
    """Hands out the ``GuardedPartition`` of each partition an instance is assigned;
    ``directory`` holds their files. ``limit``: deaths in a row before a record is
    condemned."""

    def __init__(self, directory: Path, limit: int = 3) -> None:
        if limit < 1:
            raise ValueError(f"the crash limit must be at least 1, got {limit}")
        self.directory = directory
        self.limit = limit
        self._open: dict[tuple[str, int], GuardedPartition] = {}

    def partition(self, topic: str, partition: int) -> GuardedPartition:
        self.directory.mkdir(parents=True, exist_ok=True)
        guarded = GuardedPartition(self.directory / f"{topic}-{partition}", self.limit)
        self._open[(topic, partition)] = guarded
        return guarded

    def released(self, topic: str, partition: int, *, clean: bool = True) -> None:
        """A partition revoked (``clean``: after its commit) or lost (its file stays)."""
        guarded = self._open.pop((topic, partition), None)
        if guarded is not None and clean:
            guarded.clean()

    def close(self) -> None:
        """A clean stop: every partition's run ended well."""
        for guarded in self._open.values():
            guarded.clean()
        self._open.clear()
