"""Committing: the ``Committer`` contract and ``Commit``, the chain's last step.

A record that reaches ``Commit`` is processed: its partition's position moves past it
(``streams.pipeline.offsets``). ``Commit.poll`` asks the committer for a commit every
``interval_s`` (0: every poll), and to send ahead on the polls between; a committer
flushes the writes first and commits positions only when none failed.

A committer owns what a commit makes durable, and when. The runtime has three, one per
guarantee and state (``streams.runtime.commit``): offsets (at-least-once, no state),
checkpoint (at-least-once with stores: changelog, then offsets, then local stores) and
transaction (exactly-once: outputs, changelog and offsets in one transaction). The runtime
calls the rebalance and lifecycle methods; every method runs on the runtime's thread and
may block on the broker. ``BrokerUnavailable`` from any of them starts recovery, which
ends with ``recover()``; ``OutputsRefused`` (outputs refused for their records' sake)
has the runtime call ``rewind()``: the work since the last commit is done again, without
those records. A ``CommitterWrapper`` adds to the committer it wraps, its
``inner`` (metrics time the commits; concurrency lets the records in flight finish first).

With ``idle_s`` (the runtime sets it under exactly-once, whose outputs are readable only
once their transaction commits), ``Commit.idle`` commits early once the instance has
caught up: nothing at hand, every partition read to the end its consumer last fetched
(``at_end``), and ``idle_s`` passed since the last commit. Caught up sooner than that,
the commit is due when ``idle_s`` has passed, and ``poll_timeout`` wakes the loop for it.
Otherwise commits stay ``interval_s`` apart. What this was measured against, and the
versions it replaced: docs/guides/performance.md, "Exactly-once".
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from streams.coordinates import TP
from streams.pipeline.record import Record


class Committer(Protocol):
    """What the runtime asks of a committer (see the module docstring).

    Each committer writes ``revoked``, ``commit``, ``finish`` and ``recover``; the other
    methods do nothing by default, which is what a committer without stores or a
    transaction needs: subclass ``Committer`` to inherit them."""

    def start(self) -> None:
        """Before subscribing: create or check what commits need (changelog topics), and
        with exactly-once open the first transaction. By default: nothing to create."""
        return None

    def assigned(self, partitions: Sequence[TP]) -> None:
        """New partitions, already in ``Partitions``: restore their stores (blocks). By
        default: nothing to restore (the consumer resumes at the committed offsets)."""
        return None

    @abstractmethod
    def revoked(self, partitions: Sequence[TP]) -> None:
        """Partitions leaving: commit their finished work, then close their stores."""

    def lost(self, partitions: Sequence[TP]) -> None:
        """Partitions already someone else's: commit nothing of theirs. By default:
        nothing of theirs is held."""
        return None

    @abstractmethod
    def commit(self) -> None:
        """Commit the finished work of every partition (periodic)."""

    def send_ahead(self) -> None:
        """Between commits, on every poll: send what the next commit makes durable (store
        changes to their changelogs) without waiting for it, so the commit, which blocks
        the loop, has less to do. By default: nothing but offsets to commit."""
        return None

    @abstractmethod
    def finish(self, failure: BaseException | None) -> None:
        """At shutdown: a last commit, or with ``failure`` nothing uncommittable."""

    @abstractmethod
    def recover(self) -> None:
        """After an outage, once the broker answers: undo everything since the last commit
        and rewind every partition to its committed offset."""

    @abstractmethod
    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        """Outputs were refused for their records' sake (``OutputsRefused``), the broker
        answering: undo everything since the last commit and rewind every partition but
        ``exclude`` (leaving the instance) to its committed offset, so the work is done
        again without those records. Raises ``BrokerUnavailable`` when the broker does
        not answer (recovery undoes it then)."""

    def close(self) -> None:
        """After the consumer closed: release what is left (an open transaction is
        aborted). The stores close with the instance's state, after this. By default:
        nothing left open."""
        return None


class CommitterWrapper(Committer):
    """A committer around another, ``inner``: every method passes on to it, and so does
    every other attribute (the inner committer's own: ``phase``, ``commits``,
    ``aborts``). A wrapper overrides what it adds (``Forward`` is its twin for steps)."""

    def __init__(self, inner: Committer) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def start(self) -> None:
        self.inner.start()

    def assigned(self, partitions: Sequence[TP]) -> None:
        self.inner.assigned(partitions)

    def revoked(self, partitions: Sequence[TP]) -> None:
        self.inner.revoked(partitions)

    def lost(self, partitions: Sequence[TP]) -> None:
        self.inner.lost(partitions)

    def commit(self) -> None:
        self.inner.commit()

    def send_ahead(self) -> None:
        self.inner.send_ahead()

    def finish(self, failure: BaseException | None) -> None:
        self.inner.finish(failure)

    def recover(self) -> None:
        self.inner.recover()

    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        self.inner.rewind(exclude)

    def close(self) -> None:
        self.inner.close()


class Commit:
    """The last step: moves each record's partition past it (unless ``positions`` is
    False: records in flight at once finish out of order, and the concurrency step moves
    positions over what finished in order); commits on schedule."""

    __slots__ = (
        "_at_end",
        "_clock",
        "_committer",
        "_due",
        "_idle",
        "_interval",
        "_last",
        "submit",
    )

    def __init__(
        self,
        committer: Committer,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        positions: bool = True,
        idle_s: float | None = None,
        at_end: Callable[[], bool] = lambda: True,
    ) -> None:
        self._committer = committer
        self._interval = interval_s
        self._idle = idle_s
        self._at_end = at_end
        self._clock = clock
        self._last = clock()
        self._due: float | None = None  # when an early commit is due (caught up too soon)
        self.submit: Callable[[Record], None] = _move_position if positions else _leave_position

    def poll(self) -> None:
        now = self._clock()
        if now - self._last >= self._interval:
            self._commit(now)
        else:
            self._committer.send_ahead()

    def idle(self) -> None:
        """The consumer has no record at hand: commit now if ``idle_s`` has passed since
        the last commit and every partition is read to its end, else note when it will
        have (``poll_timeout``; see the module docstring); without ``idle_s``, nothing."""
        idle = self._idle
        if idle is None:
            return
        if not self._at_end():  # records to read: no early commit until caught up again
            self._due = None
            return
        now = self._clock()
        if now - self._last >= idle:
            self._commit(now)
        else:
            self._due = self._last + idle

    def poll_timeout(self, ceiling: float) -> float:
        """How long the loop may wait for records: ``ceiling``, or until an early commit
        is due (``idle``)."""
        due = self._due
        if due is None:
            return ceiling
        return min(ceiling, max(due - self._clock(), 0.0))

    def _commit(self, now: float) -> None:
        self._committer.commit()
        self._last = now
        self._due = None

    def revoked(self, partitions: Sequence[TP]) -> None:
        return None

    def join(self, timeout: float) -> None:
        return None

    def close(self) -> None:
        return None


def _move_position(record: Record) -> None:
    offsets = record.offsets
    if offsets is not None:
        offsets.position = record.offset + 1


def _leave_position(_record: Record) -> None:
    return None
