"""The integration suite: every test talks to a real broker, the one the pytest plugin
(``streams.testing.plugin``) starts once per session (the local broker from the official
jars, unless ``--kafka`` or ``STREAMS_KAFKA`` names another; ``kafka_bootstrap``,
``kafka_admin``, ``make_topic`` for a topic of its own). Tests may run side by side on
pytest-xdist workers, so a test counts only on the topics and groups it made.

This folder is flat (no ``__init__.py``): a module imports a sibling's helpers by plain
name (``from runtime_thread import RuntimeThread``), so its module names are unique. The
shared factories are ``tests/factories.py`` (``from factories import order``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient
from test_replay_seed import Seeded, seed


@pytest.fixture
def seeded(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: Callable[..., str]
) -> Seeded:
    """The replay and offsets tests' known data (``test_replay_seed``) on a topic of four
    partitions of the test's own."""
    return seed(kafka_bootstrap, kafka_admin, make_topic(partitions=4))
