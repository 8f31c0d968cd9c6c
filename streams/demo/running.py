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
from collections.abc import Iterator
from contextlib import contextmanager

from streams.runtime import Runtime, RuntimeConfig
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


@contextmanager
def running(
    topology: Topology, config: RuntimeConfig, *, quiet_below: int = logging.WARNING
) -> Iterator[Runtime]:
    """Run ``topology`` on a thread while the block runs; stopped and joined on exit."""
    with quiet(quiet_below):
        runtime = Runtime(topology, config)
        worker = threading.Thread(target=runtime.run, name="demo-runtime", daemon=True)
        worker.start()
        try:
            yield runtime
        finally:
            runtime.stop()
            worker.join(60)
