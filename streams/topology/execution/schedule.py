"""Timers: functions a processor schedules (``ctx.schedule``), run per partition.

A class processor schedules in its ``init``::

    class Sweep:
        def init(self, ctx):
            ctx.schedule(60, self.sweep, time="wall")

        def sweep(self, now_ms, ctx):  # once per input partition this instance owns
            for key, value in ctx.store("carts").items(): ...

Like Kafka Streams' punctuators, a timer runs once for each input partition the instance
owns, with that partition's stores (``ctx.store``, ``ctx.partition``); ``ctx.record``
raises (no record is being processed). What it returns or forwards goes downstream as a
processor's output does. Its store writes and outputs commit with the partition's
offsets, in the same checkpoint or transaction as the records around them.

- ``time="stream"``: when the partition's **stream time** (the largest envelope time it
  has read) crosses a multiple of the interval, once, with ``now_ms`` the stream time. A
  partition that reads nothing fires nothing: stream time stands still.
- ``time="wall"``: when the clock crosses a multiple of the interval (the TestDriver's
  clock moves with ``advance_time``), for every owned partition, ``now_ms`` that time.

Multiples of the interval since the epoch (a 60 s timer fires on the minute), so the
moments a timer fires do not depend on when the instance started. Stream time starts
again from the first record an instance reads after a restart or a rebalance, as Kafka
Streams' does; out-of-order records read after a restart may cross a multiple again that
fired before it (with at-least-once, as every effect may be repeated).

A timer that raises has its store writes undone and nothing it forwarded sent; the
error is logged and counted, and the timer runs again at its next moment: a timer has no
record to dead-letter, and a failing one must not stall its partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.topology.errors import TopologyError

TIMES = ("stream", "wall")

Fire = Callable[[int, Any], Any]
"""A timer's function: ``fn(now_ms, ctx)``, returning like a processor's ``process``."""


@dataclass(frozen=True, slots=True)
class Timer:
    """One scheduled function of processor ``node``: every ``interval_ms`` of ``time``."""

    node: str
    interval_ms: int
    time: str
    run: Callable[[int], None]
    """Runs the function with ``now_ms`` and forwards what it returns (made by
    ``ProcessorContext.schedule``)."""

    def next_after(self, now_ms: int) -> int:
        """The first multiple of the interval after ``now_ms``."""
        return (now_ms // self.interval_ms + 1) * self.interval_ms


def interval_ms(node: str, interval: float, time: str) -> int:
    """``interval`` seconds in ms, checked with the ``time`` it is counted in."""
    if time not in TIMES:
        raise TopologyError(
            f"processor {node!r}: a timer counts time 'stream' or 'wall', not {time!r}"
        )
    ms = round(interval * 1000)
    if ms <= 0:
        raise TopologyError(
            f"processor {node!r}: a timer's interval must be positive, got {interval}"
        )
    return ms


class NoRecord:
    """What a plan's ``current.record`` is while a timer runs: the partition, no record."""

    __slots__ = ("origin_partition",)

    def __init__(self, partition: int) -> None:
        self.origin_partition = partition

    @property
    def meta(self) -> Any:
        raise TopologyError("a timer runs without a record: ctx.record is not available")
