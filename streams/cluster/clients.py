"""The process's admin clients: one per cluster and configuration."""

from __future__ import annotations

from collections.abc import Mapping

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
