"""One instance of a topology: what every kind is (``Instance``), and one as ``streams run``
starts it: topics prepared, signals handled, status shown."""

from __future__ import annotations

import gc
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from streams.pipeline.stats import Stats
from streams.runtime.config import RuntimeConfig
from streams.runtime.runner import Runtime
from streams.runtime.share import ShareRuntime
from streams.runtime.signals import graceful_shutdown
from streams.runtime.status import StatusReporter
from streams.state import StateManager
from streams.topology import Topology
from streams.topology.execution.plan import Plan


class Instance(Protocol):
    """One instance of a topology, whatever group it consumes in: a consumer group's
    ``Runtime`` or a share group's worker (``ShareRuntime``), as ``runtime_for`` picks.
    What ``streams run``, the ``TestDriver`` and the demo do with either: run it until
    stopped (``run``, ``stop``), or turn by turn (``start``, ``turn``, ``close``), and read
    its counters, plan, stores and tables."""

    topology: Topology
    config: RuntimeConfig
    stats: Stats

    @property
    def state(self) -> StateManager | None:
        """Its stores (None without any: a share worker never has any)."""

    @property
    def plan(self) -> Plan:
        """The compiled topology its chain runs."""

    @property
    def duplicates(self) -> int:
        """Records its topology's dedup steps dropped so far."""

    @property
    def in_flight(self) -> int:
        """Records a turn started and left unfinished: those awaiting async steps with
        concurrency on. An instance that finishes each record within its turn (a share
        worker) has none between turns: the ``TestDriver`` turns until none is."""

    def run(self) -> None:
        """Start, turn until ``stop``, close. Raises ``RuntimeFailure``."""

    def stop(self) -> None:
        """Ask ``run`` to finish (any thread, signal handlers)."""

    def start(self) -> None:
        """What comes before the first turn (topics, the group)."""

    def turn(self, wait: float | None = None) -> int:
        """One turn of the loop; returns how many records it took."""

    def close(self, failure: BaseException | None = None) -> None:
        """Finish what is done and leave the group; ``failure``: what stopped it."""

    def query(
        self,
        table: str,
        key: str,
        *,
        start_from: datetime | None = None,
        start_to: datetime | None = None,
    ) -> Any | None:
        """The value of ``key`` in ``table``; a windowed table's windows of it
        (``streams.runtime.query``)."""


def run_instance(
    topology: Topology,
    config: RuntimeConfig,
    *,
    live: bool | None = None,
    on_tick: Callable[[Stats], None] | None = None,
) -> Instance:
    """Run until SIGINT/SIGTERM (graceful: finish, flush, commit, close; a second signal
    forces exit). Nothing is created on the cluster before every option was checked (the
    runtime's construction) and the ports bound (``run``): its ``start`` creates the
    owned topics. Must be called on the main thread.
    ``on_tick(stats)`` is called with the status, on the runtime's thread, every
    ``status_interval_s``. A topology on a share group runs as a ``ShareRuntime`` worker.
    Returns the stopped runtime (its counters, for a summary).
    Raises RuntimeFailure (and MissingTopicError) like ``Runtime.run``."""
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


def runtime_for(topology: Topology, config: RuntimeConfig, **options: Any) -> Instance:
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
