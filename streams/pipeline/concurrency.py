"""Records in flight at once while async steps await, in order per key: ``Concurrently``.

In the chain when the topology has async steps and a concurrency above 1
(``TopologyBuilder(..., concurrency=N, ordering=...)``), right after the retry gate::

    ... → [RetryGate] → Concurrently → Track → failure policy → Produce → [Timers] → Commit

Each record it starts goes down the rest of the chain in a greenlet of its own. When an
async step awaits (through ``Suspend``, the awaiter the plan was built with), its coroutine
goes to the loop thread, the attempt is set aside (``Attempt.set_aside``) and the greenlet
hands the runtime's thread back; once the coroutine finished, ``poll`` takes the attempt
back and resumes the greenlet where it stopped. Everything but the coroutines runs on the
runtime's thread, one greenlet at a time: stores, outputs and every step see one record at
a time, as without concurrency.

- Up to ``limit`` records in flight. ``ordering="key"``: at most one per record key, so a
  key's records run one after the other in offset order (a record without a key is
  ordered with its partition); ``"partition"``: one per partition; ``"none"``: any. A record
  that may not start yet waits here. A partition whose last run died runs one record at
  a time (the crash guard's ``serial``) until the first commit past where this run
  started, which lets it go on at once (``ConcurrentCommits``); the crash guard hears of
  each record of its partition whose code runs (when it starts and when its coroutine
  returned), so it knows the record in hand.
- Positions: a partition's position moves past a record once it and every record before
  it finished (``Commit`` leaves positions to this step), so no commit passes a record
  in flight or waiting.
- Memory: a partition with ``max_held`` records here (in flight or waiting) is paused
  (``HeldBound``) until half of them finished.
- Commits go through ``ConcurrentCommits``: a commit (or a revoke) first lets the records
  in flight finish, none starting meanwhile, so the store changes and outputs it makes
  durable are exactly those of the records before its offsets (what exactly-once needs,
  and what keeps a checkpoint's stores and offsets together); store changes are not sent
  ahead while a record in flight has written some. Lost partitions, an outage's recovery
  and the end of a run drop what is still in flight: attempts undone, coroutines
  cancelled, offsets not committed (the records are read again).
- A record whose processing raises (a FAIL policy, an outage) raises from ``submit`` or
  ``poll`` as without concurrency; its partition's position stays before it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from greenlet import GreenletExit, getcurrent, greenlet

from streams.coordinates import TP
from streams.logs import get_logger
from streams.pipeline.commit import Committer, CommitterWrapper
from streams.pipeline.crash_guard import GuardedPartition
from streams.pipeline.execute import Aside, Attempt
from streams.pipeline.offsets import AHEAD_SPAN, Partitions
from streams.pipeline.pauses import ConsumerControl, HeldBound
from streams.pipeline.record import Record
from streams.pipeline.step import Forward, Step
from streams.topology.execution.async_steps import Call, LoopThread, StepLimit

T = TypeVar("T")
_log = get_logger("streams.concurrency")

_ANY = object()  # the ordering key of ``ordering="none"``: never busy
_FULL_WAIT_S = 0.1  # how long ``poll`` waits for a coroutine when no record may start
_BUSY_POLL_S = 0.005  # the consumer's wait while records are in flight
_SPAN_LIMIT = AHEAD_SPAN - 4_000  # a partition's window of offsets, with room for a batch


class _Task:
    """One record in this step: waiting, in flight (a greenlet), or finished."""

    __slots__ = (
        "aside",
        "call",
        "done",
        "glet",
        "guard",
        "key",
        "limit",
        "offset",
        "record",
        "tp",
    )

    def __init__(self, record: Record, tp: TP, key: Any, guard: GuardedPartition | None) -> None:
        self.record: Record | None = record  # let go of once finished: only its offset stays
        self.offset = record.offset
        self.tp = tp
        self.key = key
        self.guard = guard  # its partition's crash guard, told each time its code runs
        self.glet: greenlet | None = None  # while in flight
        self.call: Call | None = None  # the coroutine it awaits
        self.limit: StepLimit | None = None  # the step whose place it waits for
        self.aside: Aside | None = None  # its attempt, while set aside
        self.done = False


class _Partition:
    __slots__ = ("_full", "held", "rewinds", "serial", "unfinished")

    def __init__(self, rewinds: int, max_held: int) -> None:
        self.held: deque[_Task] = deque()  # in offset order, until every one before finished
        self.unfinished = 0  # of them: waiting or in flight
        self.serial = False  # one record at a time (the crash guard's ``serial``)
        self.rewinds = rewinds  # the partition's rewinds when its first record came
        self._full = max_held

    def __len__(self) -> int:
        """What counts against ``HeldBound``: the records not finished (a finished one
        keeps only its offset until those before it finished), or all of them once they
        span nearly what a commit's metadata can name (``AHEAD_SPAN``)."""
        if len(self.held) >= _SPAN_LIMIT:
            return max(self.unfinished, self._full)
        return self.unfinished


class Concurrently(Forward):
    """Keeps up to ``limit`` records in flight (see the module docstring). ``control``: the
    consumer as this step pauses it; ``loop``: where the coroutines run."""

    def __init__(
        self,
        next: Step,
        *,
        limit: int,
        ordering: str,
        partitions: Partitions,
        control: ConsumerControl,
        loop: LoopThread,
        max_held: int = 1_000,
    ) -> None:
        super().__init__(next)
        self._limit = limit
        self._key: Callable[[Record], Any] = _ORDER_KEYS[ordering]
        self._partitions = partitions
        self._bound = HeldBound(control, max_held)
        self.awaiter = Suspend(self, loop)
        """The plan's awaiter: suspends a record's greenlet while its coroutine runs."""
        self.attempt: Attempt | None = None  # set by the chain once the attempt is made
        self._parts: dict[TP, _Partition] = {}
        self._keys: dict[Any, deque[_Task]] = {}  # busy keys -> their records waiting
        self._ready: deque[_Task] = deque()  # may start when a place frees
        self._flying: set[_Task] = set()
        self._current: _Task | None = None  # the task whose greenlet runs now
        self._draining = False
        self._main: greenlet | None = None
        # Filled on the loop thread as coroutines finish; read on the runtime's thread.
        self._done: deque[_Task] = deque()
        self._wake = threading.Event()

    # -- what the chain sees ---------------------------------------------------------------
    def submit(self, record: Record) -> None:
        tp = (record.topic, record.partition)
        po = self._partitions.get(tp)
        if po is None:
            return  # revoked while its batch was in hand: the new owner reads it
        part = self._parts.get(tp)
        if part is None:
            part = self._parts[tp] = _Partition(po.rewinds, self._bound.max_held)
            part.serial = po.guard is not None and po.guard.serial
        task = _Task(record, tp, tp if part.serial else self._key(record), po.guard)
        part.held.append(task)
        if po.skip and record.offset in po.skip:  # an earlier run finished it, ahead
            task.done, task.record = True, None
            self._advance(tp, part)
            return
        part.unfinished += 1
        self._admit(task)
        self._start_ready()

    def poll(self) -> None:
        self._resume_done()
        self._start_ready()
        if self._flying and len(self._flying) >= self._limit and not self._done:
            self._await_one(_FULL_WAIT_S)  # nothing may start: wait for a coroutine
            self._resume_done()
            self._start_ready()
        self._bound.apply(self._parts)
        self.next.poll()
        self._start_ready()  # what waited for a commit to drain the records in flight

    def poll_timeout(self, ceiling: float) -> float:
        """How long the loop may wait for records: not at all when a record may go on or
        start, not long while records are in flight (a finished coroutine is served on
        the next turn)."""
        if self._done or (self._ready and len(self._flying) < self._limit):
            return 0.0
        return min(ceiling, _BUSY_POLL_S) if self._flying else ceiling

    @property
    def in_flight(self) -> int:
        """Records started and not finished."""
        return len(self._flying)

    @property
    def held(self) -> int:
        """Records here: in flight, waiting to start, or finished behind one that is not."""
        return sum(len(p.held) for p in list(self._parts.values()))  # any thread: a copy

    @property
    def writing(self) -> bool:
        """Whether a record in flight has written to a store (its changes are not final)."""
        return any(t.aside is not None and t.aside.touched for t in self._flying)

    def revoked(self, partitions: Sequence[TP]) -> None:
        self.drop(partitions)
        self.next.revoked(partitions)

    def join(self, timeout: float) -> None:
        self.drain(timeout)
        self.next.join(timeout)

    # -- draining and dropping ---------------------------------------------------------------
    def drain(self, timeout: float) -> bool:
        """Let the records in flight finish, starting none (up to ``timeout`` seconds).
        True when none is left in flight."""
        self._draining = True
        try:
            deadline = time.monotonic() + timeout
            while self._flying:
                left = deadline - time.monotonic()
                if left <= 0 and not self._done:
                    return False
                self._await_one(max(left, 0.0))
                self._resume_done()
            return True
        finally:
            self._draining = False

    def mark_ahead(self) -> None:
        """Before a commit: tell each partition which of its records finished past its
        position (``PartitionOffsets.ahead``, the commit's metadata), with those an
        earlier run finished that were not read again yet."""
        for tp, part in self._parts.items():
            po = self._partitions.get(tp)
            if po is None:
                continue
            ahead = {t.offset for t in part.held if t.done}
            base = po.position if po.position is not None else po.committed
            if po.skip and base is not None:
                ahead.update(n for n in po.skip if n > base)
            po.ahead = tuple(sorted(ahead))

    def release_serial(self) -> None:
        """After a commit: partitions the crash guard no longer runs one record at a time
        take their records' own ordering keys (see ``_unserialize``)."""
        for tp, part in self._parts.items():
            if part.serial:
                po = self._partitions.get(tp)
                if po is None or po.guard is None or not po.guard.serial:
                    self._unserialize(tp)
                    part.serial = False

    def forget_rewound(self) -> None:
        """After a commit: drop what is held of partitions sought back to their committed
        offset meanwhile (an aborted transaction): the consumer reads them again."""
        rewound = [
            tp
            for tp, part in self._parts.items()
            if (po := self._partitions.get(tp)) is None or po.rewinds != part.rewinds
        ]
        if rewound:
            self.drop(rewound)

    def drop(self, partitions: Iterable[TP] | None = None) -> None:
        """Forget the records of ``partitions`` (None: all): those in flight are undone and
        their coroutines cancelled; nothing of them commits."""
        gone = None if partitions is None else set(partitions)

        def leaving(task: _Task) -> bool:
            return gone is None or task.tp in gone

        self.drop_in_flight(gone)
        self._ready = deque(t for t in self._ready if not leaving(t))
        for key, waiting in list(self._keys.items()):
            staying = deque(t for t in waiting if not leaving(t))
            owner_left = not any(t.key == key for t in (*self._flying, *self._ready))
            if owner_left:  # the record that held the key is gone: the next may go
                if staying:
                    self._ready.append(staying.popleft())
                    self._keys[key] = staying
                else:
                    del self._keys[key]
            else:
                self._keys[key] = staying
        for tp in list(self._parts) if gone is None else gone:
            self._parts.pop(tp, None)
        self._bound.release(list(self._bound.paused) if gone is None else gone)
        # What is left in ``_done`` of them is skipped: their greenlets are gone.

    def drop_in_flight(self, partitions: Iterable[TP] | None = None) -> None:
        """Undo the records of ``partitions`` (None: all) in flight and cancel their
        coroutines; they stay held, unfinished, so no commit passes them."""
        gone = None if partitions is None else set(partitions)
        for task in [t for t in self._flying if gone is None or t.tp in gone]:
            self._abandon(task)

    def _abandon(self, task: _Task) -> None:
        self._flying.discard(task)
        call, glet = task.call, task.glet
        task.glet = None
        if call is not None:
            call.cancel()
        if task.limit is not None:
            task.limit.waiting.remove(task)
            task.limit = None
        if glet is not None and not glet.dead:
            self._current = task
            try:
                glet.throw(GreenletExit)  # its attempt undoes its writes on the way out
            finally:
                self._current = None

    def _unserialize(self, tp: TP) -> None:
        """Partition ``tp`` need no longer run one record at a time: its records, held
        under the partition's key, take their own ordering keys, in offset order."""
        waiting = self._keys.pop(tp, deque())
        for task in (*self._flying, *self._ready):
            if task.key == tp:  # the one record of the partition started or ready
                task.key = self._key(task.record)  # type: ignore[arg-type] # not finished
                if task.key is not _ANY:
                    self._keys.setdefault(task.key, deque())
        for task in waiting:
            task.key = self._key(task.record)  # type: ignore[arg-type] # not finished
            self._admit(task)

    # -- running ----------------------------------------------------------------------------
    def _admit(self, task: _Task) -> None:
        key = task.key
        if key is not _ANY:
            waiting = self._keys.get(key)
            if waiting is not None:
                waiting.append(task)
                return
            self._keys[key] = deque()
        self._ready.append(task)

    def _start_ready(self) -> None:
        ready, flying, limit = self._ready, self._flying, self._limit
        while ready and len(flying) < limit and not self._draining:
            self._start(ready.popleft())

    def _start(self, task: _Task) -> None:
        if self._main is None:
            self._main = getcurrent()
        glet = greenlet(self._run)
        glet.gr_context = contextvars.copy_context()  # the log context of the loop
        task.glet = glet
        self._flying.add(task)
        self._switch(task, glet.switch, task)

    def _run(self, task: _Task) -> None:
        self.next.submit(task.record)  # type: ignore[arg-type] # not finished

    def _switch(self, task: _Task, switch: Callable[..., Any], *args: Any) -> None:
        """Run ``task``'s greenlet until it awaits or ends."""
        guard = task.guard
        if guard is not None:
            guard.before(task.offset)
        self._current = task
        try:
            switch(*args)
        except BaseException:
            self._flying.discard(task)  # it failed: it never finishes, its offset never commits
            task.glet = None
            raise
        finally:
            self._current = None
        if task.glet is not None and task.glet.dead:
            self._finished(task)

    def _finished(self, task: _Task) -> None:
        self._flying.discard(task)
        task.glet = None
        task.done, task.record = True, None
        part = self._parts.get(task.tp)
        if part is not None:
            part.unfinished -= 1
            self._advance(task.tp, part)
        key = task.key
        if key is not _ANY:
            waiting = self._keys.get(key)
            if waiting:
                self._ready.append(waiting.popleft())
            elif waiting is not None:
                del self._keys[key]

    def _advance(self, tp: TP, part: _Partition) -> None:
        """Move the partition's position past the records finished in order."""
        held, last = part.held, None
        while held and held[0].done:
            last = held.popleft()
        if last is not None:
            po = self._partitions.get(tp)
            if po is not None:
                po.position = last.offset + 1

    def _resume_done(self) -> None:
        done = self._done
        while done:
            task = done.popleft()
            glet = task.glet
            if glet is not None and not glet.dead:
                self._switch(task, glet.switch)

    def _await_one(self, timeout: float) -> None:
        """Wait until a coroutine finished (or ``timeout``)."""
        self._wake.clear()
        if not self._done:
            self._wake.wait(timeout)

    # -- what the awaiter does in a record's greenlet ----------------------------------------
    def _wake_up(self, task: _Task) -> None:
        """``task`` may go on (its coroutine finished; a place in its step freed). Any
        thread."""
        self._done.append(task)
        self._wake.set()

    def _suspend(self, task: _Task) -> None:
        """Hand the runtime's thread back until ``_wake_up(task)``, the attempt set aside."""
        attempt = self.attempt
        assert attempt is not None and self._main is not None
        task.aside = attempt.set_aside()
        try:
            self._main.switch()
        finally:
            attempt.take_back(task.aside)
            task.aside = None

    def oldest_in_flight(self) -> Record | None:
        """The record in flight with the lowest offset of its partition, first found."""
        flying = [t.record for t in self._flying if t.record is not None]
        return min(flying, key=lambda r: r.offset) if flying else None

    def current(self) -> _Task | None:
        """The task of the greenlet running now, if a record's."""
        task = self._current
        return task if task is not None and getcurrent() is task.glet else None


class Suspend:
    """The awaiter of ``Concurrently``'s records
    (``streams.topology.execution.async_steps.Awaiter``): a record's coroutine runs on the
    loop thread while its greenlet is suspended. Outside a record (a processor's ``init``,
    a timer) it waits, as ``Blocking`` does."""

    def __init__(self, step: Concurrently, loop: LoopThread) -> None:
        self._step = step
        self._loop = loop

    def __call__(self, coro: Coroutine[Any, Any, T], limit: StepLimit | None) -> T:
        step = self._step
        task = step.current()
        if task is None:
            return self._loop.run(coro)
        if limit is not None:
            while limit.running >= limit.limit:  # the step is full: wait for a place
                limit.waiting.append(task)
                task.limit = limit
                step._suspend(task)
            limit.running += 1
        try:
            call = task.call = Call(coro, lambda _call: step._wake_up(task))
            self._loop.spawn(call)
            step._suspend(task)
            result: T = call.outcome()
            return result
        finally:
            task.call = None
            if limit is not None:
                limit.running -= 1
                if limit.waiting:
                    waiter = limit.waiting.pop(0)
                    waiter.limit = None
                    step._wake_up(waiter)

    def close(self) -> None:
        self._loop.close()


class ConcurrentCommits(CommitterWrapper):
    """A committer as ``Concurrently`` needs it (see the module docstring): records in
    flight finish before a commit or a revoke (``timeout`` seconds at most: a commit that
    would wait longer is tried again on the next poll), and are dropped when partitions
    are lost, after an outage and at the end; with every commit, what finished ahead of
    each partition's position (``PartitionOffsets.ahead``). Implements
    ``streams.pipeline.commit.Committer``."""

    def __init__(
        self,
        inner: Committer,
        step: Concurrently,
        partitions: Partitions,
        *,
        timeout: float,
    ) -> None:
        super().__init__(inner)
        self._step = step
        self._partitions = partitions
        self._timeout = timeout

    def assigned(self, partitions: Sequence[TP]) -> None:
        self.inner.assigned(partitions)
        # What an earlier run finished ahead comes with the committed offsets (the stateless
        # committer leaves them to the consumer: they are read here).
        unread = [
            (po.topic, po.partition)
            for po in self._partitions.of(partitions)
            if po.committed is None
        ]
        self._partitions.load_committed(unread)

    def revoked(self, partitions: Sequence[TP]) -> None:
        step = self._step
        if not step.drain(self._timeout):
            step.drop_in_flight(partitions)  # undone before their partitions' last commit
        step.mark_ahead()
        self.inner.revoked(partitions)
        step.drop(partitions)

    def lost(self, partitions: Sequence[TP]) -> None:
        self._step.drop(partitions)
        self.inner.lost(partitions)

    def commit(self) -> None:
        step = self._step
        if not step.drain(self._timeout):
            if not self._timeout:  # no wait was asked for (the TestDriver's turns)
                return
            # A coroutine that never returns holds every commit: say which record it is.
            oldest = step.oldest_in_flight()
            _log.warning(
                "records in flight did not finish in time: commit postponed",
                seconds=self._timeout,
                in_flight=step.in_flight,
                oldest=f"{oldest.topic}[{oldest.partition}]@{oldest.offset}" if oldest else None,
            )
            return  # the next poll tries again
        step.mark_ahead()
        self.inner.commit()
        step.forget_rewound()
        step.release_serial()  # now, not at the next record: a paused partition gets none

    def send_ahead(self) -> None:
        if not self._step.writing:
            self.inner.send_ahead()

    def finish(self, failure: BaseException | None) -> None:
        step = self._step
        step.drop_in_flight()
        step.mark_ahead()
        self.inner.finish(failure)

    def recover(self) -> None:
        self._step.drop()
        self.inner.recover()

    def rewind(self, exclude: Sequence[TP] = ()) -> None:
        self._step.drop()
        self.inner.rewind(exclude)


def _by_key(record: Record) -> Any:
    key = record.key
    return key if key is not None else (record.topic, record.partition)


def _by_partition(record: Record) -> Any:
    return (record.topic, record.partition)


def _unordered(_record: Record) -> Any:
    return _ANY


_ORDER_KEYS: dict[str, Callable[[Record], Any]] = {
    "key": _by_key,
    "partition": _by_partition,
    "none": _unordered,
}
