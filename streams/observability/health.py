"""Liveness and readiness of one runtime instance: what ``/healthz`` and ``/readyz`` answer.

The runtime's thread sets the facts (``running``, ``assigned``, ``restoring``) as plain
attributes when they change, never per record; the HTTP server's thread reads them. Other
parts add conditions of their own by registering a ``ReadinessCheck`` (the partition
stall watch does: a stalled partition makes the instance unready until it moves).

- alive (``/healthz`` 200): the loop is running: ``run()`` has started and not finished.
- ready (``/readyz`` 200): alive, the consumer has had its first assignment (possibly
  empty: an instance with nothing to do is ready), no store is being restored, and every
  registered check says ready. Otherwise 503 with the reasons, one a line.
"""

from __future__ import annotations

import threading
from typing import Protocol


class ReadinessCheck(Protocol):
    """A condition of readiness: ``unready()`` returns why the instance is not ready (one
    short line), or None when it may be. Called from the HTTP server's thread: it must only
    read what the runtime's thread writes, and return quickly."""

    def unready(self) -> str | None: ...


class Health:
    """The facts ``/healthz`` and ``/readyz`` report (see the module docstring)."""

    def __init__(self) -> None:
        self.running = False
        self.assigned = False
        self.restoring = False
        self._checks: list[ReadinessCheck] = []
        self._lock = threading.Lock()

    def register(self, check: ReadinessCheck) -> None:
        """Add a readiness condition (any thread, any time)."""
        with self._lock:
            self._checks = [*self._checks, check]

    def alive(self) -> bool:
        return self.running

    def unready(self) -> list[str]:
        """Why the instance is not ready (empty: it is)."""
        if not self.running:
            return ["not running"]
        reasons = []
        if not self.assigned:
            reasons.append("waiting for a partition assignment")
        if self.restoring:
            reasons.append("restoring stores")
        for check in self._checks:
            reason = check.unready()
            if reason is not None:
                reasons.append(reason)
        return reasons
