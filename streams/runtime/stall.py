"""The stall watch: a record in hand for too long is reported, with where it came from.

A step that waits on a dead service or loops holds its partition (and, one thread per
instance, every other) while the consumer still heartbeats: nothing fails, nothing moves.
A thread looks at the record in hand (``Current.record``, which the attempt sets and
clears) every few seconds; the same record in hand for ``limit_s`` gets one WARNING naming
its topic, partition, offset and step time, and one INFO line when it finally lets go.
Nothing on the record path: the watch only reads a reference the attempt sets anyway.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from streams.logs import Logger
from streams.topology.context import Current


class StallWatch:
    """Watches ``current`` from a daemon thread between ``start()`` and ``stop()``."""

    def __init__(self, current: Current, limit_s: float, log: Logger) -> None:
        self._current = current
        self.limit_s = limit_s
        self._log = log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: Any = None  # the record in hand at the last look
        self._since = 0.0
        self._reported = False

    def start(self) -> None:
        if self.limit_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._watch, name="streams-stall-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def look(self, now: float) -> None:
        """One look at the record in hand (the thread's loop; tests call it directly)."""
        record = self._current.record
        if record is not self._seen:
            if self._reported:
                self._log.info("record let go", seconds=round(now - self._since, 1))
            self._seen, self._since, self._reported = record, now, False
            return
        if record is not None and not self._reported and now - self._since >= self.limit_s:
            self._reported = True
            meta = record.meta
            self._log.warning(
                "record in hand for long",
                topic=meta.topic,
                partition=meta.partition,
                offset=meta.offset,
                seconds=round(now - self._since, 1),
            )

    def _watch(self) -> None:
        interval = min(max(self.limit_s / 4, 0.05), 5.0)
        while not self._stop.wait(interval):
            self.look(time.monotonic())
