"""An instance's signals. SIGINT/SIGTERM shut down gracefully: the first asks the runtime
to stop (finish, flush, commit, close); a second one forces the process out at once.
SIGUSR1 prints every thread's stack to stderr and carries on (the instance's ``jstack``:
what a stuck instance is waiting in, e.g. a client call that does not return)."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

FORCED_EXIT = 130
STACK_DUMP = signal.SIGUSR1


@contextmanager
def graceful_shutdown(stop: Callable[[], None]) -> Iterator[None]:
    """Install the handlers (stop, forced exit, stack dump) for the duration of the block
    (main thread only)."""
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
    faulthandler.register(STACK_DUMP, all_threads=True)
    try:
        yield
    finally:
        faulthandler.unregister(STACK_DUMP)
        for s, h in previous.items():
            signal.signal(s, h)
