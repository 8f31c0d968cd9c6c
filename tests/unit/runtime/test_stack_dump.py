"""An instance's signals: SIGUSR1 prints every thread's stack and the instance carries on."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from streams.runtime.signals import STACK_DUMP, graceful_shutdown


def test_sigusr1_prints_every_threads_stack_and_stops_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    stops: list[bool] = []
    release = threading.Event()
    waiting = threading.Thread(target=release.wait, name="a-client-call")
    waiting.start()
    before = signal.getsignal(signal.SIGINT)  # pytest's, or SIG_IGN in an xdist worker
    try:
        with graceful_shutdown(lambda: stops.append(True)):
            os.kill(os.getpid(), STACK_DUMP)
    finally:
        release.set()
        waiting.join()
    err = capfd.readouterr().err
    assert "test_sigusr1_prints_every_threads_stack_and_stops_nothing" in err  # this thread
    assert "in wait" in err  # and the other one, where it waits
    assert stops == []
    assert signal.getsignal(signal.SIGINT) == before  # handlers restored
