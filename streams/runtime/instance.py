"""One instance as ``streams run`` starts it: topics prepared, signals handled, status shown."""

from __future__ import annotations

from streams.admin import admin_client
from streams.runtime.config import RuntimeConfig
from streams.runtime.runner import Runtime
from streams.runtime.signals import graceful_shutdown
from streams.runtime.status import StatusReporter
from streams.runtime.topics import prepare_topics
from streams.topology import Topology


def run_instance(topology: Topology, config: RuntimeConfig, *, live: bool | None = None) -> Runtime:
    """Create owned topics, then run until SIGINT/SIGTERM (graceful: finish, flush,
    commit, close; a second signal forces exit). Must be called on the main thread.
    Returns the stopped runtime (its counters, for a summary). Raises RuntimeFailure (and
    MissingTopicError) like ``Runtime.run``."""
    prepare_topics(admin_client(config.bootstrap, config.client), topology)
    reporter = StatusReporter(topology.app_id, live=live, interval_s=config.status_interval_s)
    runtime = Runtime(topology, config, on_tick=reporter.show)
    try:
        with graceful_shutdown(runtime.stop):
            runtime.run()
    finally:
        reporter.close()
    return runtime
