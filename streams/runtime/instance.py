"""One instance as ``streams run`` starts it: topics prepared, signals handled, status shown."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from streams.cluster import admin_client
from streams.pipeline.stats import Stats
from streams.runtime.config import RuntimeConfig
from streams.runtime.runner import Runtime
from streams.runtime.share import ShareRuntime
from streams.runtime.signals import graceful_shutdown
from streams.runtime.status import StatusReporter
from streams.runtime.topics import prepare_topics
from streams.topology import Topology


def run_instance(
    topology: Topology,
    config: RuntimeConfig,
    *,
    live: bool | None = None,
    on_tick: Callable[[Stats], None] | None = None,
) -> Runtime | ShareRuntime:
    """Create owned topics, then run until SIGINT/SIGTERM (graceful: finish, flush,
    commit, close; a second signal forces exit). Must be called on the main thread.
    ``on_tick(stats)`` is called with the status, on the runtime's thread, every
    ``status_interval_s``. A topology on a share group runs as a ``ShareRuntime`` worker.
    Returns the stopped runtime (its counters, for a summary).
    Raises RuntimeFailure (and MissingTopicError) like ``Runtime.run``."""
    prepare_topics(config.topics(admin_client(config.bootstrap, config.client)), topology)
    reporter = StatusReporter(topology.app_id, live=live, interval_s=config.status_interval_s)

    def tick(stats: Stats) -> None:
        reporter.show(stats)
        if on_tick is not None:
            on_tick(stats)

    runtime = runtime_for(topology, config, on_tick=tick)
    settle_heap()
    try:
        with graceful_shutdown(runtime.stop):
            runtime.run()
    finally:
        reporter.close()
    return runtime


def runtime_for(
    topology: Topology, config: RuntimeConfig, **options: Any
) -> Runtime | ShareRuntime:
    """The runtime of ``topology``: a consumer group's ``Runtime``, or a share group's
    worker (``ShareRuntime``); ``options`` are the constructor's (clients, clock, ...)."""
    if topology.consumption == "share":
        return ShareRuntime(topology, config, **options)
    return Runtime(topology, config, **options)


def settle_heap() -> None:
    """Put what start-up made (modules, schemas, the compiled codec and plan: most of the
    heap, alive until the process exits) out of the cyclic collector's reach. A full
    collection then scans only what the loop made since: measured at 5k records/s, one
    every few seconds took 30-55 ms with the start-up heap (the loop stopped meanwhile,
    the worst records' latency), a few ms without. Objects frozen here that die later are
    still freed by reference counting. Only where the process is the instance: a process
    that builds many runtimes (a test suite) would keep their cycles."""
    gc.collect()
    gc.freeze()
