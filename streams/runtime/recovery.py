"""Riding out a broker outage: the work since the last commit is undone, not the instance.

Where a transient client error (``streams.client_errors.transient``: transport failure,
all brokers down, a timeout, a coordinator moving, an abortable transaction error) meets
work that cannot finish (an output that timed out, a transaction that cannot be committed
or aborted, committed offsets that cannot be read), ``BrokerUnavailable`` is raised; the
runtime's loop catches it and calls ``Recovery.recover``.

``recover`` blocks until the broker answers (or the runtime is asked to stop), then has
the committer undo the interrupted work (``Committer.recover``): undelivered writes and
store changes dropped, an open transaction aborted through a fresh producer, every
partition rewound to its committed offset; records after it are processed again
(at-least-once: duplicates, never loss; exactly-once: nothing visible twice). If the broker
goes away again meanwhile, it starts over. One WARNING per outage (at its first error),
one more every ``_REMIND_S`` while it lasts, naming what still fails (an outage that does
not end shows in the log, not as a silent instance), one INFO when processing resumes.
Fencing, authorization and other fatal errors are not outages: the runtime still stops on
them with one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from streams.client_errors import unanswered
from streams.logs import Logger
from streams.pipeline.commit import Committer
from streams.pipeline.errors import BrokerUnavailable

# How long to wait before undoing again after an undo failed (one can fail at once: no
# loop turning as fast as the client answers).
_RETRY_S = 0.5
# How often a long outage is reported again.
_REMIND_S = 30.0
_NO_ANSWER = "no answer to a metadata request"


class Recovery:
    """Waits out an outage and has the committer rewind to the last commit. ``stopping``
    is polled while waiting, so a stop request is served during an outage."""

    def __init__(
        self,
        *,
        consumer: Any,
        committer: Committer,
        stopping: Callable[[], bool],
        log: Logger,
    ) -> None:
        self._consumer = consumer
        self._committer = committer
        self._stopping = stopping
        self._log = log
        self._down = False

    def recover(self, cause: BrokerUnavailable) -> None:
        """Block until the broker answers and the work since the last commit is undone.
        Returns early, undoing nothing, if the runtime is stopping."""
        if not self._down:
            self._down = True
            self._log.warning(
                "broker unavailable: undone work will be redone from the last commit",
                error=str(cause),
            )
        started = time.monotonic()
        remind = started + _REMIND_S
        failing = _NO_ANSWER
        while not self._stopping():
            now = time.monotonic()
            if now >= remind:
                remind = now + _REMIND_S
                self._log.warning(
                    "broker still unavailable", seconds=round(now - started), error=failing
                )
            silent = unanswered(self._consumer)
            if silent is not None:
                failing = f"{_NO_ANSWER} ({silent})"
                continue
            try:
                self._committer.recover()
            except BrokerUnavailable as exc:
                failing = str(exc)  # away again, or not ready yet: wait once more
                time.sleep(_RETRY_S)
                continue
            self._down = False
            self._log.info(
                "recovered from broker outage", seconds=round(time.monotonic() - started, 1)
            )
            return

    def broker_answers(self) -> bool:
        """Whether the cluster answers a metadata request now (waits up to a second)."""
        return unanswered(self._consumer) is None
