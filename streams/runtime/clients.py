"""Where the runtime's Kafka clients come from: one factory, injected.

The runtime never constructs a client itself: it asks its ``Clients`` for a consumer, a
producer (again, after an outage) and an admin client. ``KafkaClients`` makes
confluent-kafka ones; the ``TestDriver`` passes in-memory ones
(``streams.testing.memory``), so the driver runs the runtime's own code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from confluent_kafka import Consumer, Producer, ShareConsumer

from streams.cluster import admin_client


class Clients(Protocol):
    def consumer(self, config: dict[str, Any]) -> Any:
        """A consumer with librdkafka's ``config``."""

    def producer(self, config: dict[str, Any]) -> Any:
        """A producer with librdkafka's ``config``."""

    def admin(self) -> Any:
        """The admin client of the cluster (shared; never closed by the runtime)."""


class KafkaClients:
    """confluent-kafka clients of the cluster at ``bootstrap``."""

    def __init__(self, bootstrap: str, settings: Mapping[str, str] | None = None) -> None:
        self.bootstrap = bootstrap
        self.settings = settings  # the user's, for the admin client (the others get a config)

    def consumer(self, config: dict[str, Any]) -> Any:
        return Consumer(config)

    def producer(self, config: dict[str, Any]) -> Any:
        return Producer(config)

    def share_consumer(self, config: dict[str, Any]) -> Any:
        """A share group's consumer (``streams.runtime.share``)."""
        return ShareConsumer(config)

    def admin(self) -> Any:
        return admin_client(self.bootstrap, self.settings)
