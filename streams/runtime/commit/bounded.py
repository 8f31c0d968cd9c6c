"""A client call that may block past its own timeout, bounded from outside.

``call_within(seconds, call, doing)`` runs ``call`` on a daemon thread and waits for it at
most ``seconds``: its result or its exception comes back as if called here; past the wait,
``BrokerUnavailable`` is raised and the thread is left to finish (or block) on its own, with
the client it holds. For the few librdkafka calls known to ignore their timeout while a
coordinator is gone; never on the record path (a thread per call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from streams.pipeline.errors import BrokerUnavailable

T = TypeVar("T")


def call_within(seconds: float, call: Callable[[], T], doing: str) -> T:
    """``call()``, or ``BrokerUnavailable`` when it has not returned within ``seconds``."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, name="streams-bounded-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise BrokerUnavailable(f"the broker did not answer while {doing} ({seconds:g} s)")
    if failure:
        raise failure[0]
    return outcome[0]
