"""Cluster tests share one three-node cluster (``kafka_cluster``) and fail its nodes; each
test leaves it whole for the next: every node running and every partition in sync."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streams.broker import LocalCluster


@pytest.fixture(autouse=True)
def _whole_cluster_after(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "kafka_cluster" not in request.fixturenames:
        return
    cluster: LocalCluster = request.getfixturevalue("kafka_cluster")
    cluster.up()  # starts the nodes that are down, continues the paused ones
    cluster.wait_in_sync(timeout=120)
