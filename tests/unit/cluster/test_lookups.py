"""The door's topic lookups, on the in-memory admin: one lookup behind every partition
count, one error for a topic that is not there, whoever asks."""

from __future__ import annotations

import pytest

from streams.cluster import (
    Cluster,
    ClusterError,
    TopicNotFoundError,
    Topics,
    create_topic,
    partition_count,
)
from streams.errors import StreamsError
from streams.replay.errors import ReplayError
from streams.replay.lookup import select
from streams.replay.positions import TopicSelection
from streams.testing.memory.admin import MemoryAdmin
from streams.testing.memory.cluster import MemoryCluster


@pytest.fixture
def admin() -> MemoryAdmin:
    admin = MemoryAdmin(MemoryCluster())
    create_topic(admin, "orders", partitions=3, config={"cleanup.policy": "compact"})
    return admin


@pytest.fixture
def cluster(admin: MemoryAdmin) -> Cluster:
    cluster = Cluster("127.0.0.1:1", timeout=1)  # never asked: its admin is the fake one
    cluster.admin = admin
    return cluster


def test_every_holder_counts_partitions_alike(admin: MemoryAdmin, cluster: Cluster) -> None:
    assert partition_count(admin, "orders") == 3
    assert Topics(admin).partition_count("orders") == 3
    assert cluster.partition_count("orders") == 3


def test_a_missing_topic_is_one_error_with_one_message(
    admin: MemoryAdmin, cluster: Cluster
) -> None:
    asks = [
        lambda: partition_count(admin, "nowhere"),
        lambda: Topics(admin).partition_count("nowhere"),
        lambda: cluster.partition_count("nowhere"),
        lambda: cluster.topic_configs("nowhere"),
    ]
    for ask in asks:
        with pytest.raises(TopicNotFoundError, match=r"^topic 'nowhere' does not exist$"):
            ask()


def test_what_the_door_raises_is_a_cluster_error_not_a_replay_error() -> None:
    # One ``except ClusterError`` catches all of it; the CLI prints it as one line.
    assert issubclass(TopicNotFoundError, ClusterError)
    assert issubclass(ClusterError, StreamsError)
    assert not issubclass(ClusterError, ReplayError)


def test_a_topic_config_is_read_through_the_door(admin: MemoryAdmin) -> None:
    assert Topics(admin).configs("orders")["cleanup.policy"].value == "compact"


def test_a_selection_names_partitions_the_topic_has(cluster: Cluster) -> None:
    assert select(cluster, TopicSelection("orders")) == [0, 1, 2]
    assert select(cluster, TopicSelection("orders", (2, 0))) == [2, 0]
    with pytest.raises(TopicNotFoundError, match=r"has no partition 3, 7 \(it has 3: 0\.\.2\)"):
        select(cluster, TopicSelection("orders", (0, 3, 7)))
