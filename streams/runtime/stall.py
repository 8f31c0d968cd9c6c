"""The stall watch: a record in hand too long, or a partition that stopped moving, is reported.

A step that waits on a dead service or loops holds its partition (and, one thread per
instance, every other) while the consumer still heartbeats: nothing fails, nothing moves.
A partition can also stop on its own (fetching stops, commits stop advancing). A daemon
thread looks every few seconds at two things, both read from what the runtime's thread
keeps anyway (nothing on the record path):

- the record in hand (``Current.record``, which the attempt sets and clears): the same
  record in hand for ``limit_s`` (``--stall-warning``) gets one WARNING naming its topic,
  partition, offset and step time, and one INFO line when it finally lets go;
- each assigned partition's progress (``PartitionProgress``: its position, the offset
  past its last finished record, against its end): a partition with lag > 0 whose
  position has not moved for ``after_s`` (``--stall-after``) is *stalled*: one WARNING with
  its coordinates, its lag and the record in hand (where from, and for how long), then one
  INFO line when it moves again (or catches up, or leaves). A retry tier's partition
  paused until its head is due is waiting, not stalled.

``stalled_partitions()`` is what a metric reads; ``unready()`` makes ``/readyz`` answer
not ready while a partition is stalled (``streams.observability.health.ReadinessCheck``).
Both are safe from any thread: the watch replaces one tuple, never mutates it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from confluent_kafka import KafkaException, TopicPartition

from streams.coordinates import TP
from streams.logs import Logger
from streams.pipeline.offsets import Partitions
from streams.pipeline.step import Forward, Step
from streams.topology.execution.context import Current


class PartitionProgress(NamedTuple):
    """One assigned partition at one look: its position (None: not known yet) and end."""

    topic: str
    partition: int
    position: int | None
    end: int | None


class StalledPartition(NamedTuple):
    """A partition with lag that has not moved: where it stands, and since when."""

    topic: str
    partition: int
    offset: int  # its position: the next record to finish
    lag: int
    seconds: float  # since its position last moved


Progress = Callable[[], Iterable[PartitionProgress]]
"""What the watch asks at each look: every assigned partition's progress."""


class OffsetsAsked(Protocol):
    """What the progress of partitions needs of the consumer (a confluent-kafka one)."""

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> Any: ...


class PartitionEnds:
    """The progress of the runtime's partitions, for the watch's thread.

    Positions are read from ``Partitions`` (the position past the last finished record,
    else the committed offset, else the consumer's position); ends are the consumer's
    cached high watermarks (no request). The consumer is asked only on the runtime's
    thread, by ``refresh`` (its ``step``'s ``poll``, at most every ``every_s``):
    confluent-kafka serialises calls on one consumer, so a call from the watch's thread
    waits for the loop's ``poll`` to return (seen: tens of seconds). While the runtime's
    thread is held by a step, the last ends stay: an end only grows. ``waiting(topic,
    partition)``: a partition meant to stand still (a retry tier held until due) is left
    out."""

    def __init__(self, partitions: Partitions, consumer: OffsetsAsked, every_s: float) -> None:
        self._partitions = partitions
        self._consumer = consumer
        self._every_s = every_s
        self._next = 0.0
        self._ends: dict[TP, tuple[int | None, int]] = {}  # (consumer's position, end)
        self.waiting: Callable[[str, int], bool] | None = None

    def step(self, next: Step) -> Step:
        """The chain step that refreshes the ends (an ``Intake``: nothing per record)."""
        return _Refresh(next, self)

    def refresh(self, now: float) -> None:
        """Read the ends (and positions not known otherwise) from the consumer. Runtime
        thread only."""
        if now < self._next:
            return
        self._next = now + self._every_s
        consumer, ends = self._consumer, {}
        for po in self._partitions.values():
            tp = TopicPartition(po.topic, po.partition)
            try:
                found: int | None = None
                if po.position is None and po.committed is None:
                    found = consumer.position([tp])[0].offset
                end = consumer.get_watermark_offsets(tp, cached=True)[1]
            except (KafkaException, RuntimeError):  # closing, or not known yet
                continue
            if end is not None and end >= 0:
                ends[(po.topic, po.partition)] = (found if found and found >= 0 else None, end)
        self._ends = ends

    def __call__(self) -> list[PartitionProgress]:
        """Every assigned partition's progress (the watch's thread: no consumer call)."""
        out = []
        ends, waiting = self._ends, self.waiting
        for po in self._partitions.values():  # a copy: the runtime's thread may change it
            topic, partition = po.topic, po.partition
            if waiting is not None and waiting(topic, partition):
                continue
            known = ends.get((topic, partition))
            position = po.position if po.position is not None else po.committed
            if position is None and known is not None:
                position = known[0]
            out.append(PartitionProgress(topic, partition, position, known[1] if known else None))
        return out


class _Refresh(Forward):
    """Refreshes ``PartitionEnds`` at each poll; records go straight to the next step."""

    __slots__ = ("_ends", "submit")

    def __init__(self, next: Step, ends: PartitionEnds) -> None:
        super().__init__(next)
        self.submit = next.submit  # type: ignore[method-assign]  # no call of ours per record
        self._ends = ends

    def poll(self) -> None:
        self._ends.refresh(time.monotonic())
        self.next.poll()


def _no_partitions() -> list[PartitionProgress]:
    return []


class StallWatch:
    """Watches the record in hand and the partitions' progress from a daemon thread
    between ``start()`` and ``stop()``. ``limit_s`` / ``after_s``: 0 turns a check off."""

    def __init__(
        self,
        current: Current,
        limit_s: float,
        log: Logger,
        *,
        after_s: float = 0.0,
        progress: Progress = _no_partitions,
    ) -> None:
        self._current = current
        self.limit_s = limit_s
        self.after_s = after_s
        self._log = log
        self._progress = progress
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: Any = None  # the record in hand at the last look
        self._since = 0.0
        self._reported = False
        self._moved: dict[TP, tuple[int | None, float]] = {}  # position, when it last moved
        self._stalled: tuple[StalledPartition, ...] = ()

    def start(self) -> None:
        if (self.limit_s <= 0 and self.after_s <= 0) or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="streams-stall-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    # -- what others read ------------------------------------------------------------------
    def stalled_partitions(self) -> tuple[StalledPartition, ...]:
        """The partitions stalled at the last look (any thread)."""
        return self._stalled

    def unready(self) -> str | None:
        """Why the instance is not ready, while a partition is stalled (any thread)."""
        stalled = self._stalled
        if not stalled:
            return None
        names = ", ".join(f"{s.topic}[{s.partition}]" for s in stalled[:5])
        more = f" and {len(stalled) - 5} more" if len(stalled) > 5 else ""
        return f"stalled partition(s): {names}{more}"

    # -- the looks -------------------------------------------------------------------------
    def look(self, now: float) -> None:
        """One look at the record in hand and the partitions (the thread's loop; tests call
        it directly)."""
        record = self._current.record
        if record is not self._seen:
            if self._reported:
                self._log.info("record let go", seconds=round(now - self._since, 1))
            self._seen, self._since, self._reported = record, now, False
        elif (
            self.limit_s > 0
            and record is not None
            and not self._reported
            and now - self._since >= self.limit_s
        ):
            self._reported = True
            meta = record.meta
            self._log.warning(
                "record in hand for long",
                topic=meta.topic,
                partition=meta.partition,
                offset=meta.offset,
                seconds=round(now - self._since, 1),
            )
        if self.after_s > 0:
            self._look_at_partitions(now)

    def _look_at_partitions(self, now: float) -> None:
        before = {(s.topic, s.partition) for s in self._stalled}
        last_moved = self._moved
        moved: dict[TP, tuple[int | None, float]] = {}
        stalled: list[StalledPartition] = []
        record = self._current.record  # not finished: its partition is not past it
        for topic, partition, finished, known_end in self._progress():
            key = (topic, partition)
            position, end = finished, known_end
            if record is not None and (record.topic, record.partition) == key:
                # Its end is past it too, even before the consumer's cached end is read
                # (a step that blocks on the first batch after an assignment).
                position = record.offset if position is None else min(position, record.offset)
                end = record.offset + 1 if end is None else max(end, record.offset + 1)
            lag = end - position if position is not None and end is not None else 0
            last = last_moved.get(key)
            if last is None or last[0] != position or lag <= 0:
                moved[key] = (position, now)
                continue
            moved[key] = last
            seconds = now - last[1]
            if position is None or seconds < self.after_s:
                continue
            stall = StalledPartition(topic, partition, position, lag, round(seconds, 1))
            stalled.append(stall)
            if key not in before:
                self._warn(stall, now)
        self._moved = moved
        self._stalled = tuple(stalled)
        for key in before - {(s.topic, s.partition) for s in stalled}:
            since = last_moved[key][1]  # a stalled partition was seen at the last look
            topic, partition = key
            how = "moving again" if key in moved else "no longer assigned"
            self._log.info(
                f"partition {how}", topic=topic, partition=partition, seconds=round(now - since, 1)
            )

    def _warn(self, stall: StalledPartition, now: float) -> None:
        record = self._current.record
        in_hand: dict[str, Any] = {"in_hand": None}
        if record is not None:
            meta = record.meta
            in_hand = {
                "in_hand": f"{meta.topic}[{meta.partition}]@{meta.offset}",
                "in_hand_s": round(now - self._since, 1) if record is self._seen else 0.0,
            }
        self._log.warning(
            "partition stalled",
            topic=stall.topic,
            partition=stall.partition,
            offset=stall.offset,
            lag=stall.lag,
            seconds=stall.seconds,
            **in_hand,
        )

    def _watch(self) -> None:
        limits = [s for s in (self.limit_s, self.after_s) if s > 0]
        interval = min(max(min(limits) / 4, 0.05), 5.0)
        while not self._stop.wait(interval):
            self.look(time.monotonic())
