"""The pytest plugin (entry point ``pytest11``): a real broker and unique topics.

Broker selection, first match wins:

1. ``KAFKA_BOOTSTRAP_SERVERS`` set: that cluster (nothing is started).
2. Otherwise the local broker from the official jars, on a free port with a throwaway
   data dir, started once per session and stopped at the end.

Tests that use the broker are marked ``integration`` automatically.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from streams.admin import admin_client
from streams.broker import LocalBroker, free_port
from streams.config import external_bootstrap
from streams.testing.topics import TopicFactory

_BROKER_FIXTURES = {"kafka_bootstrap", "kafka_admin", "make_topic"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real Kafka broker")
    config.addinivalue_line("markers", "container: needs Docker (testcontainers)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _BROKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address of a real Kafka broker for the whole session."""
    external = external_bootstrap()
    if external:
        yield external
        return
    broker = LocalBroker(port=free_port(), data_dir=tmp_path_factory.mktemp("kafka"))
    broker.up()
    try:
        yield broker.bootstrap
    finally:
        broker.down()


@pytest.fixture
def kafka_admin(kafka_bootstrap: str) -> AdminClient:
    return admin_client(kafka_bootstrap)


@pytest.fixture
def make_topic(kafka_admin: AdminClient, request: pytest.FixtureRequest) -> Iterator[TopicFactory]:
    """``make_topic(name=None, partitions=1, config=None) -> str``; deleted after the test."""
    factory = TopicFactory(kafka_admin, hint=request.node.name)
    try:
        yield factory
    finally:
        factory.cleanup()
