"""Readiness of a broker means a metadata request succeeds, nothing less; of a cluster,
that the metadata lists every broker it should have."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Collection

from streams.cluster import probe_metadata
from streams.errors import BrokerError


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def broker_ids(bootstrap: str, timeout: float = 2.0) -> set[int] | None:
    """The ids of the brokers the cluster at ``bootstrap`` lists in its metadata (fenced
    brokers are left out by Kafka), or None when no metadata request succeeds."""
    try:
        meta = probe_metadata(bootstrap, timeout)
    except Exception:  # KafkaException of any kind: not ready yet
        return None
    return {int(broker_id) for broker_id in meta.brokers}


def metadata_ok(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the cluster at ``bootstrap`` answers a metadata request with a broker."""
    return bool(broker_ids(bootstrap, timeout))


def wait_ready(
    bootstrap: str,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    poll_interval: float = 0.1,
    brokers: Collection[int] = (),
) -> None:
    """Block until a metadata request to ``bootstrap`` succeeds and lists every id in
    ``brokers`` (any broker when empty).

    Raises BrokerError when ``timeout`` passes, or as soon as ``alive()`` says a process
    that should serve it has exited.
    """
    addresses = [a.rpartition(":") for a in bootstrap.split(",")]
    wanted = set(brokers)
    deadline = time.monotonic() + timeout
    seen: set[int] | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise BrokerError("the broker process exited while starting")
        # A cheap TCP check first, then the real test: a metadata round trip.
        if any(port_accepts(host, int(port)) for host, _, port in addresses):
            seen = broker_ids(bootstrap)
            if seen and wanted <= seen:
                return
        time.sleep(poll_interval)
    if wanted and seen is not None:
        missing = ", ".join(str(b) for b in sorted(wanted - seen))
        raise BrokerError(
            f"the metadata of {bootstrap} lacks broker(s) {missing} after {timeout:.0f} s"
        )
    raise BrokerError(f"no metadata from {bootstrap} within {timeout:.0f} s")
