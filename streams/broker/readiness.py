"""Readiness of a broker means a metadata request succeeds, nothing less."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from streams.errors import BrokerError

# librdkafka prints every refused connection to stderr; while we wait for a broker that is
# still starting, that is expected and only noise.
_QUIET = {"log_level": 0}


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def metadata_ok(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the cluster at ``bootstrap`` answers a metadata request with a broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    try:
        meta = admin.list_topics(timeout=timeout)
    except Exception:  # KafkaException of any kind: not ready yet
        return False
    return bool(meta.brokers)


def wait_ready(
    bootstrap: str,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    poll_interval: float = 0.1,
) -> None:
    """Block until a metadata request to ``bootstrap`` succeeds.

    Raises BrokerError when ``timeout`` passes, or as soon as ``alive()`` says the process
    that should serve it has exited.
    """
    host, _, port = bootstrap.split(",", maxsplit=1)[0].rpartition(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise BrokerError("the broker process exited while starting")
        # A cheap TCP check first, then the real test: a metadata round trip.
        if port_accepts(host, int(port)) and metadata_ok(bootstrap):
            return
        time.sleep(poll_interval)
    raise BrokerError(f"no metadata from {bootstrap} within {timeout:.0f} s")
