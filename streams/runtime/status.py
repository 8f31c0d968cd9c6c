"""How an instance's counters (``Stats``, kept by the record path) are shown: a live line
on a terminal, a periodic structured log line otherwise. Never per record."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from streams.logs import get_logger
from streams.pipeline.stats import Stats


def _failures_text(failures: dict[str, Any]) -> str:
    """`` | 3 retried, 1 recovered, 2 dead-lettered`` once failure routing counted any."""
    if not failures:
        return ""
    return (
        f" | {failures.get('retried', 0):,} retried, {failures.get('recovered', 0):,} "
        f"recovered, {failures.get('dead_lettered', 0):,} dead-lettered"
    )


def _partitions_text(stats: Stats) -> str:
    """``3 input partitions (12 assigned)``: the inputs' partitions, then every partition
    the instance holds when repartition topics or retry tiers add some."""
    text = f"{stats.input_partitions} input partitions"
    extra = stats.partitions != stats.input_partitions
    return f"{text} ({stats.partitions} assigned)" if extra else text


class StatusReporter:
    """Called once per loop turn; shows the stats at most every ``interval_s``.

    On a terminal: one line rewritten in place (records/s, lag). Otherwise: an INFO log
    line ``progress`` every ``log_every_s``."""

    def __init__(
        self,
        app_id: str,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        interval_s: float = 1.0,
        log_every_s: float = 30.0,
    ) -> None:
        self.app_id = app_id
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval_s = interval_s
        self.log_every_s = log_every_s
        self._last = time.monotonic()
        self._last_log = self._last
        self._last_consumed = 0
        self._log = get_logger("streams.runtime", app=app_id)

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.interval_s

    def show(self, stats: Stats) -> None:
        now = time.monotonic()
        rate = (stats.consumed - self._last_consumed) / max(now - self._last, 1e-6)
        self._last, self._last_consumed = now, stats.consumed
        lag = "?" if stats.lag is None else f"{stats.lag:,}"
        if self.live:
            line = (
                f"{self.app_id}: {_partitions_text(stats)} | {stats.consumed:,} in "
                f"({rate:,.0f}/s) | {stats.produced:,} out | lag {lag}"
                + (f" | {stats.skipped:,} skipped" if stats.skipped else "")
                + (f" | {stats.duplicates:,} duplicates" if stats.duplicates else "")
                + _failures_text(stats.failures)
            )
            self.stream.write(f"\r\x1b[2K{line}")
            self.stream.flush()
        elif now - self._last_log >= self.log_every_s:
            self._last_log = now
            self._log.info(
                "progress",
                consumed=stats.consumed,
                produced=stats.produced,
                skipped=stats.skipped,
                duplicates=stats.duplicates,
                rate=round(rate),
                lag=stats.lag,
                partitions=stats.partitions,
                input_partitions=stats.input_partitions,
                **stats.failures,
            )

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
