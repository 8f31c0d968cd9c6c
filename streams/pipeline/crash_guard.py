"""The crash guard: a record that kills the process again and again is dead-lettered.

A step that crashes the interpreter (a segfault in a C library, ``os._exit``, the OOM
killer) cannot be caught, so the failure policy never sees it: the process dies before
committing, restarts at the committed offset, meets the record again and dies again, for
ever. The guard breaks the loop with a small file per partition (``<dir>/<topic>-<p>``):

- Every run notes in it how far it may have got: ``reached``, an offset no record of the
  run reached, moved ``REACH_STEP`` ahead whenever a record gets there (one write per
  ``REACH_STEP`` records). A clean stop or revoke removes the file, so at a partition's
  first record of a run, a file says the last run on it died, and where it may have.
- If it died, the guard is *careful* on that partition: before each record runs (with
  records in flight at once, each time one's code runs: when it starts and when its
  coroutine returns) it writes the record's offset to the file (the *suspect*, what was in
  hand when the process died), until a commit passes the record the last death had in
  hand (or, unknown, every record the last run may have reached). Progress before it
  changes nothing: a death before the commit passes it counts for it.
- With records in flight at once, a careful partition also runs one record at a time
  (``serial``: the record in hand is then the one whose coroutine runs too), until the
  first commit past where the run started; commits check it, so the partition goes back
  to its concurrency at that commit.
- A suspect that was in hand at ``limit`` deaths in a row is *condemned* at the next
  start: its attempt fails with :class:`CrashLoopError`, which every policy sends to the
  DLQ (never to a retry tier), and the partition moves on.

A process killed in a coroutine of an async step (on the loop thread) once its partition
runs concurrently again dies with another record's code last run: that death counts for
that record, or for none, and the record is condemned only once a run meets it one record
at a time.

The cost: one file write per partition at the start of a run and every ``REACH_STEP``
records, and one per record (per switch, in flight) only on a partition whose last run
died, until the commit passes what it may have had in hand. Files are written without
``fsync``: the guard is for a process that dies, and the OS keeps what it wrote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from streams.failures.errors import CrashLoopError
from streams.logs import get_logger

__all__ = ["REACH_STEP", "CrashGuard", "CrashLoopError", "GuardedPartition"]

_log = get_logger("streams.crash_guard")

_WIDTH = 96
"""Bytes of every write, the JSON padded with spaces: one ``pwrite`` over the last on a file
kept open (2-5 µs; opening and writing it anew took 290 µs, and with records in flight
per-record writes then halved a careful partition's rate)."""

REACH_STEP = 1_000
"""How far past a record the file's ``reached`` is moved when a record gets to it: one write
per that many records, and after a death at most that many records past the last one in
hand are watched one by one."""


class GuardedPartition:
    """The guard of one assigned partition (``PartitionOffsets.guard``, for as long as it
    is assigned): ``before`` each record runs, ``committed`` after each commit."""

    __slots__ = (
        "_careful",
        "_deaths",
        "_fd",
        "_path",
        "_previous",
        "_reach",
        "_read_previous",
        "_serial",
        "_start",
        "_suspect",
        "_until",
        "_written",
        "condemned",
        "limit",
    )

    def __init__(self, path: Path, limit: int) -> None:
        self._path = path
        self._fd: int | None = None  # the file, open once written
        self.limit = limit
        self._start: int | None = None  # the first offset of this run
        self._previous: dict[str, int | None] | None = None  # the file of the last run
        self._read_previous = False
        self._careful = False  # the last run died: the record in hand is written
        self._serial = False  # ... and records run one at a time, until a commit
        self._until = 0  # careful until a commit passes this offset
        self._deaths = 0
        self._suspect: int | None = None
        self._written: int | None = None  # the suspect the file names now
        self._reach = 0  # the file's ``reached``: no record of this run got there
        self.condemned: int | None = None
        """The offset to dead-letter instead of processing (None: none)."""

    def before(self, offset: int) -> None:
        """The record at ``offset`` runs now (it starts, or goes on with records in flight
        at once)."""
        if offset >= self._reach or self._careful:  # else nothing to write
            self._note(offset)

    def committed(self, offset: int) -> None:
        """A commit of ``offset`` (the next offset to read) went through."""
        if self._start is None or offset <= self._start:
            return
        self._serial = False
        if self._careful and offset > self._until:
            # Past what the last death may have had in hand: no loop here, and a later
            # death is nobody's yet.
            self._careful = False
            self._written = self.condemned = None
            self._dump(None, 0)

    @property
    def serial(self) -> bool:
        """Whether the partition's records run one at a time, so that the record in hand
        is known whatever killed the process: the last run died, and this one has not
        committed past its start (read at the first record, before ``before``)."""
        return self._serial if self._start is not None else self._last_run() is not None

    def _note(self, offset: int) -> None:
        if self._start is None:
            self._first(offset)
        if offset >= self._reach:
            self._reach = offset + REACH_STEP
        elif not self._careful or offset == self._written:
            return
        if self._careful:
            # The deaths so far are the record's if it was in hand at the last one (or if
            # that one's record is unknown: the run before was not careful); another
            # record's start from none.
            same = self._suspect is None or offset == self._suspect
            self._written = offset
            self._dump(offset, self._deaths if same else 0)
        else:
            self._dump(None, 0)

    def _last_run(self) -> dict[str, int | None] | None:
        if not self._read_previous:
            self._previous, self._read_previous = self._read(), True
        return self._previous

    def _first(self, offset: int) -> None:
        self._start = offset
        previous = self._last_run()
        if previous is None:  # the last run ended well
            return
        self._careful = self._serial = True
        suspect, reached = previous.get("suspect"), previous.get("reached")
        self._suspect = suspect if isinstance(suspect, int) else None
        self._deaths = int(previous.get("deaths") or 0) + 1
        if self._suspect is not None:
            self._until = max(offset, self._suspect)
        elif isinstance(reached, int):  # the record is unknown, but not past ``reached``
            self._until = max(offset, reached - 1)
        else:
            self._until = offset
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

    def _read(self) -> dict[str, int | None] | None:
        try:
            data = json.loads(self._path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _dump(self, suspect: int | None, deaths: int) -> None:
        data = {"suspect": suspect, "deaths": deaths, "reached": self._reach}
        fd = self._fd
        if fd is None:
            fd = self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(fd, json.dumps(data).encode().ljust(_WIDTH), 0)

    def close(self) -> None:
        """Let go of the file (it stays: a partition lost, or the process ending)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def clean(self) -> None:
        """The run ended cleanly on this partition: forget it."""
        self.close()
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
        if guarded is None:
            return
        if clean:
            guarded.clean()
        else:
            guarded.close()

    def close(self) -> None:
        """A clean stop: every partition's run ended well."""
        for guarded in self._open.values():
            guarded.clean()
        self._open.clear()
