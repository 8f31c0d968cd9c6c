"""A runtime on a background thread, for as long as a demo step needs it, without its logs.

``running(topology, config)`` starts ``Runtime.run()`` on a daemon thread and yields the
runtime; on exit it calls ``stop()`` and waits up to 60 s for the thread. While it runs,
the ``streams`` loggers are raised to ``quiet_below`` (WARNING unless told): the demo
prints its own lines (``quiet`` does that alone, for a TestDriver run). Only the public
runtime API is used (``Runtime``, ``run``, ``stop``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.instance import Instance
from streams.topology import Topology


@contextmanager
def quiet(below: int = logging.WARNING) -> Iterator[None]:
    """The ``streams`` loggers at ``below`` while the block runs."""
    logger = logging.getLogger("streams")
    level = logger.level
    logger.setLevel(below)
    try:
        yield
    finally:
        logger.setLevel(level)


def running(
    topology: Topology, config: RuntimeConfig, *, quiet_below: int = logging.WARNING
) -> AbstractContextManager[Runtime]:
    """Run ``topology`` on a thread while the block runs; stopped and joined on exit."""
    return on_thread(lambda: Runtime(topology, config), quiet_below)


R = TypeVar("R", bound=Instance)


@contextmanager
def on_thread(make: Callable[[], R], quiet_below: int = logging.WARNING) -> Iterator[R]:
    """``make()`` an ``Instance`` (a ``Runtime``, a ``ShareRuntime``) and run it on a
    thread while the block runs; stopped and joined on exit."""
    with quiet(quiet_below):
        runtime = make()
        worker = threading.Thread(target=runtime.run, name="demo-runtime", daemon=True)
        worker.start()
        try:
            yield runtime
        finally:
            runtime.stop()
            worker.join(60)
