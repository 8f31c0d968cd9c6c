"""The process's admin clients (one per cluster and configuration), and the metadata probe
of a cluster that is starting or losing nodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from streams.config import client_config

_ADMINS: dict[tuple[str, frozenset[tuple[str, str | int | float]]], AdminClient] = {}


def admin_client(
    bootstrap: str, settings: Mapping[str, str] | None = None, **config: str | int | float
) -> AdminClient:
    """One AdminClient per cluster and config for the whole process (``settings``: the
    user's client settings, ``--config``/``-X``; ``config``: the caller's).

    Admin clients are thread-safe and cheap to keep; making and dropping one per call costs
    a connection each time, and destroying one while its background queue still holds
    events has crashed the interpreter inside librdkafka's callbacks.
    """
    merged = {**config, **(settings or {})}
    key = (bootstrap, frozenset(merged.items()))
    admin = _ADMINS.get(key)
    if admin is None:
        admin = _ADMINS[key] = AdminClient(client_config(bootstrap, merged))
    return admin


def probe_metadata(bootstrap: str, timeout: float) -> Any:  # ClusterMetadata
    """The metadata of the cluster at ``bootstrap`` (brokers, topics, partitions with their
    leader, replicas and ISR), asked by a quiet client made for this one request. Raises
    confluent-kafka's ``KafkaException`` when no broker answers within ``timeout``.

    For watching a cluster come up or lose nodes: a kept client would wait out its
    reconnect backoff after each refused connection, and librdkafka would print every one.
    """
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(
        timeout=timeout
    )
