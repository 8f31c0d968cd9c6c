"""Per-step processing time of the records a caller picks: what each step itself costs.

A ``Plan`` built with a ``StepTimer`` wraps every compiled step and sink in it. For most
records the wrapper only reads ``armed`` (false) and calls the step: a record costs one
extra call per step, paid only when timing was asked for (the runtime's ``--metrics-port``).
For a record the caller arms the timer for, each step's time is kept *exclusive* of the
steps it hands its envelopes to (a step's compiled function calls the next one before it
returns), so a slow sink shows as the sink, not as every step before it::

    timer.armed = True
    try:
        plan.entries[topic](env)
    finally:
        timer.armed = False
    for step, seconds in timer.take(): ...

A step reached twice for one record (a fan-out, a flat map) is timed each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Run = Callable[[Any], None]


class StepTimer:
    """Times the steps of armed records (see the module docstring). Not thread-safe: the
    plan runs on one thread."""

    __slots__ = ("_clock", "_inner", "_times", "armed")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.armed = False
        self._clock = clock
        self._inner = 0.0  # seconds spent in the steps the running one called so far
        self._times: list[tuple[str, float]] = []

    def wrap(self, name: str, run: Run) -> Run:
        """``run`` (the compiled step ``name``), timed while the timer is armed."""
        clock = self._clock

        def timed(env: Any) -> None:
            if not self.armed:
                return run(env)
            outer, self._inner = self._inner, 0.0
            start = clock()
            try:
                return run(env)
            finally:
                elapsed = clock() - start
                self._times.append((name, elapsed - self._inner))
                self._inner = outer + elapsed

        return timed

    def take(self) -> list[tuple[str, float]]:
        """The (step, seconds) timed since the last call, in the order the steps ended."""
        times, self._times = self._times, []
        return times
