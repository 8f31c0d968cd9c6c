"""The ``Timers`` step: runs what processors scheduled (``streams.topology.execution.schedule``).

It sits between ``Produce`` and ``Commit``, so a timer's outputs and store writes join the
records' before the commit that ``Commit.poll`` makes right after it:

- ``submit``: a record moves its input partition's stream time (its envelope's time);
  each stream-time timer whose next moment it reached runs for that partition, once, and
  for the first record a partition reads after the instance took it (stream time is not
  carried over, so a moment that passed during a restart still fires).
- ``poll``: each wall-clock timer whose moment came runs for every owned input partition.

A timer runs as an attempt does (``Attempt.timer``): all of it or none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from streams.coordinates import TP
from streams.envelope import Tombstone
from streams.logs import Logger
from streams.pipeline.execute import Attempt
from streams.pipeline.produce import OutputSink
from streams.pipeline.record import Record
from streams.pipeline.stats import Stats
from streams.pipeline.step import Forward, Step
from streams.topology.execution.schedule import Timer


class Timers(Forward):
    """Runs the plan's timers (see the module docstring)."""

    def __init__(
        self,
        next: Step,
        attempt: Attempt,
        *,
        owned: Iterable[TP],
        inputs: Collection[str],
        sink: OutputSink,
        stats: Stats,
        log: Logger,
        clock: Callable[[], float],
    ) -> None:
        super().__init__(next)
        self._attempt = attempt
        self._owned = owned
        self._inputs = frozenset(inputs)
        self._sink = sink
        self._stats = stats
        self._log = log
        self._clock = clock
        timers = attempt.plan.timers
        self._stream = [t for t in timers if t.time == "stream"]
        self._wall = [t for t in timers if t.time == "wall"]
        self._stream_time: dict[int, int] = {}  # input partition -> its stream time (ms)
        self._next: dict[tuple[int, int], int] = {}  # (timer, partition) -> its next moment
        now_ms = self._now_ms()
        self._wall_next = [t.next_after(now_ms) for t in self._wall]

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def submit(self, record: Record) -> None:
        self.next.submit(record)
        env = record.envelope
        if env is None or isinstance(env, Tombstone) or not self._stream:
            return
        time_ms, partition = env.time_ms, record.origin_partition
        known = self._stream_time.get(partition)
        if known is not None and time_ms <= known:
            return
        self._stream_time[partition] = time_ms
        for i, timer in enumerate(self._stream):
            due = self._next.get((i, partition))
            if due is None or time_ms >= due:
                self._next[i, partition] = timer.next_after(time_ms)
                self._run(timer, partition, time_ms)

    def poll(self) -> None:
        if self._wall:
            now_ms = self._now_ms()
            for i, timer in enumerate(self._wall):
                if now_ms >= self._wall_next[i]:
                    self._wall_next[i] = timer.next_after(now_ms)
                    for partition in self._partitions():
                        self._run(timer, partition, now_ms)
        self.next.poll()

    def revoked(self, partitions: Sequence[TP]) -> None:
        gone = {p for topic, p in partitions if topic in self._inputs}
        for partition in gone:
            self._stream_time.pop(partition, None)
        self._next = {k: v for k, v in self._next.items() if k[1] not in gone}
        self.next.revoked(partitions)

    def _partitions(self) -> list[int]:
        return sorted({p for topic, p in self._owned if topic in self._inputs})

    def _run(self, timer: Timer, partition: int, now_ms: int) -> None:
        self._stats.timers += 1
        done = self._attempt.timer(timer, partition, now_ms)
        if isinstance(done, list):
            if done:
                self._sink.send_all(done)
                self._stats.produced += len(done)
            return
        self._stats.timer_failures += 1
        error = done.error
        self._log.error(
            "timer failed; its writes are undone and it runs again at its next moment",
            processor=timer.node,
            step=done.step,
            partition=partition,
            time_ms=now_ms,
            error=f"{type(error).__name__}: {error}",
        )
