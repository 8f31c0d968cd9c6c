"""Graceful shutdown on SIGINT/SIGTERM: the first asks the runtime to stop (finish, flush,
commit, close); a second one forces the process out at once."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

FORCED_EXIT = 130


@contextmanager
def graceful_shutdown(stop: Callable[[], None]) -> Iterator[None]:
    """Install the handlers for the duration of the block (main thread only)."""
    received: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if received:
            sys.stderr.write("\nsecond signal: exiting now, without committing\n")
            sys.stderr.flush()
            os._exit(FORCED_EXIT)
        received.append(signum)
        sys.stderr.write(
            f"\n{signal.Signals(signum).name}: finishing the records in hand, then committing "
            "(send it again to exit at once)\n"
        )
        sys.stderr.flush()
        stop()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
