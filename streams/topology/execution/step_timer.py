"""Per-step processing time of the records a caller picks: what each step itself costs.

A ``Plan`` built with a ``StepTimer`` compiles its nodes twice: its ``entries`` as without
a timer, and a second set with every step and sink wrapped in the timer, which it hands
over (``add``). ``arm()`` puts the timed set in place of the plain one, ``disarm()`` puts
the plain one back: a record the timer is not armed for runs exactly as without a timer
(no extra call, no clock read), and arming costs a dictionary update. Each step's time is
kept *exclusive* of the steps it hands its envelopes to (a step's compiled function calls
the next one before it returns), so a slow sink shows as the sink, not as every step
before it::

    timer.arm()
    try:
        plan.entries[topic](env)
    finally:
        timer.disarm()
    for step, seconds in timer.take(): ...

A step reached twice for one record (a fan-out, a flat map) is timed each time. A class
processor that kept the context its ``init`` got and forwards through it (rather than
through the one ``process`` is given) reaches the plain next steps: their time is then
counted as the processor's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Run = Callable[[Any], None]
Entries = dict[str, Run]


class StepTimer:
    """Times the steps of armed records (see the module docstring). Not thread-safe: the
    plan runs on one thread."""

    __slots__ = ("_clock", "_inner", "_tables", "_times")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._inner = 0.0  # seconds spent in the steps the running one called so far
        self._times: list[tuple[str, float]] = []
        self._tables: list[tuple[Entries, Entries, Entries]] = []  # live, plain, timed

    def wrap(self, name: str, run: Run) -> Run:
        """``run`` (the compiled step ``name``), timed."""
        clock = self._clock

        def timed(env: Any) -> None:
            outer, self._inner = self._inner, 0.0
            start = clock()
            try:
                return run(env)
            finally:
                elapsed = clock() - start
                self._times.append((name, elapsed - self._inner))
                self._inner = outer + elapsed

        return timed

    def add(self, entries: Entries, timed: Entries) -> None:
        """A plan's ``entries`` (used in place) and their timed twins."""
        self._tables.append((entries, dict(entries), timed))

    def arm(self) -> None:
        """Time the records run from now on."""
        for live, _plain, timed in self._tables:
            live.update(timed)

    def disarm(self) -> None:
        """Run records untimed again."""
        for live, plain, _timed in self._tables:
            live.update(plain)

    def take(self) -> list[tuple[str, float]]:
        """The (step, seconds) timed since the last call, in the order the steps ended."""
        times, self._times = self._times, []
        return times
